#!/usr/bin/env bash
# The status socket under a connection flood (issue 16): two users of the
# socket's group (uids 65534 and 65533) hold about 1,000 connections each
# against a drfd at the usual soft limit of 1,024 open files. Over 20 s the
# ticks keep their pace, the metrics file keeps being written, root's drfctl
# status and submit are served, drfd's open files stay bounded, and drfd uses
# under 10% of a core. Then a raw 70,000-byte task-submit is refused whole and
# queues nothing.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup

diagram <<'DIAGRAM'
drf.slice (cpu 1, memory 256M)     drfd --foreground, tick 500ms, soft limit 1,024 files
 '- A   task-cpu 0.1, task-memory 16M (root's drfctl submit during the flood)
status socket 0660 root:nogroup <- uid 65534: ~1,000 connections, re-opened as drfd drops them
                                <- uid 65533: ~1,000 connections, the same
                                <- root: drfctl status every 2 s, drfctl submit once
expect: drfd holds at most 16 per user (64 + 16 for root in all) and closes the rest at
        once; ticks at the pace of the 5 s before the flood; metrics-file rewritten;
        root served; drfd's cpu under 10% of a core over the 20 s
DIAGRAM

conf=$work/drfd.conf
sock=$work/drfd.sock
prom=$work/drfd.prom
cat >"$conf" <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
interval = 500ms
status-socket = $sock
status-group = nogroup
state-dir = $work/state
metrics-file = $prom
[capacity]
cpu = 1
memory = 256M
[tenant A]
task-cpu = 0.1
task-memory = 16M
tasks = unlimited
CONF
chmod 0755 "$work"

# A user holding N connections for S seconds: the ones drfd closes (refused at
# once, or dropped at the request deadline) are opened again every half second.
cat >"$work/flood.py" <<'PY'
import json, resource, select, socket, sys, time

path, want, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held, opened, failed, closed = [], 0, 0, 0
end = time.monotonic() + secs
while time.monotonic() < end:
    p = select.poll()
    for s in held:
        p.register(s, select.POLLIN)
    gone = {fd for fd, ev in p.poll(0)}
    keep = []
    for s in held:
        if s.fileno() in gone:
            s.close()
            closed += 1
        else:
            keep.append(s)
    held = keep
    while len(held) < want and time.monotonic() < end:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(0.5)
        try:
            s.connect(path)
            held.append(s)
            opened += 1
        except OSError:
            s.close()
            failed += 1
    time.sleep(0.5)
print(json.dumps({"opened": opened, "connect_failures": failed, "closed_by_drfd": closed,
                  "holding_at_end": len(held), "fd_limit": hard}))
PY
chmod 0644 "$work/flood.py"

# The usual soft limit; the flooders raise their own to the hard one.
ulimit -Sn 1024
run_drfd flood-daemon "$conf" "$sock"
limit=$(awk '/^Max open files/ {print $4}' /proc/$drfd_pid/limits)

status_json() { "$DRFCTL" status -c "$conf" --json 2>/dev/null; }
# jget FILE EXPR: a Python expression over the JSON in FILE as s.
jget() { $PY -c "import json, sys; s = json.load(open(sys.argv[1])); print($2)" "$1"; }
cpu_ticks() { awk '{print $14 + $15}' /proc/$drfd_pid/stat; }
ms() { date +%s%3N; }
metric() { awk -v m="$1" '$1 == m {print $2}' "$prom"; }

# 5 s before the flood: the pace of the ticks, and drfd's cpu at rest.
status_json >"$work/s0.json"
c0=$(cpu_ticks)
sleep 5
status_json >"$work/s1.json"
c1=$(cpu_ticks)
base_ticks=$(($(jget "$work/s1.json" 's["ticks"]') - $(jget "$work/s0.json" 's["ticks"]')))
hz=$(getconf CLK_TCK)

flooders=""
for u in 65534 65533; do
	setpriv --reuid=$u --regid=65534 --clear-groups $PY "$work/flood.py" "$sock" 1000 28 \
		>"$work/flood-$u.out" 2>&1 &
	flooders="$flooders $!"
done
sleep 3

# 20 s of flood: root asks every 2 s; one submit half way.
status_json >"$work/f0.json"
f0=$(cpu_ticks)
m0=$(stat -c %Y "$prom")
mt0=$(metric drfd_ticks_total)
t0=$(ms)
lat="" fails=0 maxfd=0 maxconn=0 rewrites=0 last_m=$m0 sub_rc=none sub_ms=0
for i in $(seq 10); do
	a=$(ms)
	status_json >"$work/f$i.json"
	rc=$?
	b=$(ms)
	lat="$lat $((b - a))"
	src=$(jget "$work/f$i.json" 's["source"]' 2>/dev/null)
	{ [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]; } && [ "$src" = daemon ] || fails=$((fails + 1))
	conn=$(jget "$work/f$i.json" 's["socket"]["connections"]' 2>/dev/null || echo 999)
	[ "$conn" -gt "$maxconn" ] && maxconn=$conn
	nfd=$(find /proc/$drfd_pid/fd -mindepth 1 | wc -l)
	[ "$nfd" -gt "$maxfd" ] && maxfd=$nfd
	if [ "$i" -eq 5 ]; then
		a=$(ms)
		id=$("$DRFCTL" submit -c "$conf" A -- true 2>"$work/submit.err")
		sub_rc=$?
		sub_ms=$(($(ms) - a))
	fi
	m=$(stat -c %Y "$prom")
	[ "$m" -gt "$last_m" ] && rewrites=$((rewrites + 1))
	last_m=$m
	while [ $(($(ms) - t0)) -lt $((i * 2000)) ]; do sleep 0.1; done
done
f1=$(cpu_ticks)
t1=$(ms)
status_json >"$work/f11.json"
mt1=$(metric drfd_ticks_total)
secs=$(((t1 - t0) / 1000))
flood_ticks=$(($(jget "$work/f11.json" 's["ticks"]') - $(jget "$work/f0.json" 's["ticks"]')))
cpu_pct=$($PY -c "print(f'{100 * ($f1 - $f0) / $hz / (($t1 - $t0) / 1000):.1f}')")
rest_pct=$($PY -c "print(f'{100 * ($c1 - $c0) / $hz / 5:.1f}')")
sock_stats=$(jget "$work/f11.json" 's["socket"]')
# shellcheck disable=SC2086 # two pids
wait $flooders
flood="$(cat "$work/flood-65534.out") / $(cat "$work/flood-65533.out")"

check flood-ticks-keep-pace \
	"[ $((flood_ticks * 5 * 10)) -ge $((base_ticks * secs * 8)) ]" \
	"$flood_ticks ticks in ${secs} s of flood against $base_ticks in 5 s before it (at least 80% of that pace)"
check flood-metrics-written \
	"[ $rewrites -ge 9 ] && [ \$($PY -c 'print(int(float(\"${mt1:-0}\") > float(\"${mt0:-0}\")))') = 1 ]" \
	"metrics-file rewritten in $rewrites of 10 two-second windows; drfd_ticks_total $mt0 -> $mt1"
check flood-root-status-served "[ $fails -eq 0 ]" \
	"root's drfctl status: $((10 - fails)) of 10 answered by the daemon; latency ms:$lat"
check flood-root-submit-served "[ $sub_rc -eq 0 ] && [ -n \"$id\" ]" \
	"root's drfctl submit: exit $sub_rc, task ${id:-none}, ${sub_ms} ms $(head -c 200 "$work/submit.err")"
check flood-cpu-under-10pct "[ \$($PY -c 'print(int($cpu_pct < 10))') = 1 ]" \
	"drfd used $cpu_pct% of a core over ${secs} s of flood ($((f1 - f0)) ticks of 1/$hz s; $rest_pct% at rest)"
check flood-fds-bounded "[ $maxconn -le 80 ] && [ $maxfd -lt $((limit / 4)) ]" \
	"drfd held at most $maxconn connections and $maxfd open files (soft limit $limit); socket: $sock_stats; flooders: $flood"

# A raw task-submit of 70,000 bytes: refused whole, nothing queued.
"$DRFCTL" tasks -c "$conf" --json >"$work/t0.json"
n0=$(jget "$work/t0.json" 'len(s["tasks"])')
ans=$($PY - "$sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
head = b"task-submit A /tmp 0 0 0 0 0 0 0 sh -c "
s.sendall(head + b"x" * (70000 - len(head)) + b"\n")
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
print(out.decode().split("\n")[0])
PY
)
"$DRFCTL" tasks -c "$conf" --json >"$work/t1.json"
n1=$(jget "$work/t1.json" 'len(s["tasks"])')
check flood-long-submit-refused "[ \"$ans\" = 'drfd-task 1 refused' ] && [ $n0 = $n1 ]" \
	"70,000-byte task-submit answered '$ans'; tasks $n0 -> $n1"

kill -TERM "$drfd_pid"
wait "$drfd_pid" 2>/dev/null
cp "$work/drfd.log" "$R/t_flood-drfd.log" 2>/dev/null
exit 0
