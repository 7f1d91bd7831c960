#!/usr/bin/env bash
# The DRF task queue on Debian's kernel, E1 scaled to the VM: capacity 0.9 cpu
# and 18 x 16M ("9 and 18 units"), A's tasks (0.1 cpu, 64M) = (1, 4) units, B's
# (0.3, 16M) = (3, 1). A blocker task holds everything while both queues fill;
# once it is cancelled, one tick starts tasks in DRF order. Then restarts of
# drfd (SIGTERM, SIGKILL, and a task ending while drfd is down), an OOM kill in
# the task's own cgroup, refusals at submit, an exit status with output, and a
# task submitted by an unprivileged user running as that user with exactly the
# groups it had (none, or a --groups list), no fd of drfd's in the command, task files 0600, an idempotent
# resubmit by key (across a restart), the cap of 256 unfinished tasks of one
# user (root exempt), what a user sees of root's tasks (no command line, no
# key), a state dir someone else could write refused at start (exit 8), an
# exit status kept while the disk is full, and the output cap (task-output-max)
# set by a reload.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup
# bpffs, as on a host: drfd loads its usage probes, whose map fds a task must not get.
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf

diagram <<'DIAGRAM'
drf.slice (share mode; cpu 0.9, memory 288M)      drfd --foreground, tick 500ms
 |- A   task-1..  A/task-ID: cpu.max 10000 100000, memory.max 64M   (1, 4 units)
 |- B   task-..   B/task-ID: cpu.max 30000 100000, memory.max 16M   (3, 1 units)
 '- C   the blocker (0.9, 288M) until cancelled
expect: with both queues full, A runs 3 and B 2 (Algorithm 1); restarts (SIGTERM,
        SIGKILL) lose nothing, re-adopt the running and record exits that happened
        while drfd was down; a task over its memory.max is oom-killed; bad submits
        exit 2 and change nothing; a task runs as its submitter
DIAGRAM

conf=$work/drfd.conf
sock=$work/drfd.sock
cat >"$conf" <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
interval = 500ms
status-socket = $sock
status-group = nogroup
state-dir = $work/state
[capacity]
cpu = 0.9
memory = 288M
[tenant A]
task-cpu = 0.1
task-memory = 64M
tasks = unlimited
[tenant B]
task-cpu = 0.3
task-memory = 16M
tasks = unlimited
access = *
[tenant C]
cpu = 0.9
memory = 288M
access = nobody
CONF
chmod 0755 "$work"

drfd_pid=
start_drfd() {
	"$DRFD" -c "$conf" --foreground 2>>"$work/drfd.log" &
	drfd_pid=$!
	for _ in $(seq 100); do
		"$DRFCTL" tasks -c "$conf" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}
stop_drfd() { # SIGNAL
	kill -s "$1" "$drfd_pid"
	wait "$drfd_pid" 2>/dev/null
}
tasks_json() { "$DRFCTL" tasks -c "$conf" --json >"$1" 2>/dev/null; }
# field FILE EXPR: a Python expression over the JSON as j (and t, the tasks by
# id), printed; fails, printing nothing, if it cannot be evaluated.
pyserve '
import json
def answer(path, expr):
    j = json.load(open(path))
    return eval(expr, {"j": j, "t": {x["id"]: x for x in j["tasks"]}})
'
field() { ask "$1" "$2"; }
# populated task cgroups of a tenant, from cgroupfs
cg_running() { grep -l "populated 1" "$CG"/drf.slice/"$1"/task-*/cgroup.events 2>/dev/null | wc -l; }
# waits until EXPR over the tasks JSON is True, asking up to $2 x 4 times, every
# 0.25 s: one python for the whole wait (a python start costs about a second
# under TCG)
wait_for() {
	$PY - "$DRFCTL" "$conf" "$1" "$2" <<'PY'
import json, subprocess, sys, time
drfctl, conf, expr, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) * 4
for _ in range(n):
    r = subprocess.run([drfctl, "tasks", "-c", conf, "--json"], capture_output=True, text=True)
    try:  # as the shell's poll did: an answer that is not JSON, or lacks a key, is not yet
        j = json.loads(r.stdout)
        t = {x["id"]: x for x in j["tasks"]}
        if r.returncode == 0 and eval(expr) is True:
            sys.exit(0)
    except (ValueError, KeyError, IndexError, TypeError):
        pass
    time.sleep(0.25)
sys.exit(1)
PY
}

if ! start_drfd; then
	result FAIL tasks-daemon "drfd did not start: $(tail -3 "$work/drfd.log")"
	exit 0
fi

# The blocker, then both queues full.
blocker=$("$DRFCTL" submit -c "$conf" C --cpu 0.9 --memory 288M -- sleep 600)
for _ in $(seq 8); do
	"$DRFCTL" submit -c "$conf" A -- sleep 40 >/dev/null
	"$DRFCTL" submit -c "$conf" B -- sleep 40 >/dev/null
done
tasks_json "$work/q0.json"
check tasks-queued-behind-blocker \
	"[ \"$(field "$work/q0.json" '(j["tenants"]["A"]["queued"], j["tenants"]["B"]["queued"], j["tenants"]["C"]["running"])')\" = '(8, 8, 1)' ]" \
	"A, B queued and C running: $(field "$work/q0.json" '(j["tenants"]["A"]["queued"], j["tenants"]["B"]["queued"], j["tenants"]["C"]["running"])')"
"$DRFCTL" cancel -c "$conf" "$blocker"
wait_for 'j["tenants"]["A"]["running"] + j["tenants"]["B"]["running"] >= 5' 10
t0=$EPOCHSECONDS
ok=0 samples=""
for s in 1 2 3 4 5; do
	tasks_json "$work/r$s.json"
	rr=$(field "$work/r$s.json" '"%d:%d" % (j["tenants"]["A"]["running"], j["tenants"]["B"]["running"])')
	cr="$(cg_running A):$(cg_running B)"
	samples="$samples A:B=$rr (cgroups $cr)"
	[ "$rr" = 3:2 ] && [ "$cr" = 3:2 ] && ok=$((ok + 1))
	sleep 0.5
done
check tasks-e1-a3-b2 "[ $ok -eq 5 ]" "running while both queues are full:$samples"
"$DRFCTL" tasks -c "$conf" >"$R/t_tasks-e1.txt" 2>&1
blk=$(field "$work/r1.json" 't['"$blocker"']["result"]')
check tasks-cancel-running "[ '$blk' = cancelled ]" "the blocker: $blk"
a1=$(field "$work/r1.json" '[x["id"] for x in j["tasks"] if x["tenant"] == "A" and x["state"] == "running"][0]')
lim="$(cat "$CG/drf.slice/A/task-$a1/cpu.max") / $(cat "$CG/drf.slice/A/task-$a1/memory.max")"
check tasks-limits-at-vector "[ '$lim' = '10000 100000 / 67108864' ]" "A/task-$a1: cpu.max / memory.max = $lim"
running1=$(field "$work/r1.json" 'sorted(x["id"] for x in j["tasks"] if x["state"] == "running")')

# SIGTERM: the running tasks go on; a new drfd re-adopts them.
stop_drfd TERM
alive="$(cg_running A):$(cg_running B)"
start_drfd
tasks_json "$work/t1.json"
r=$(field "$work/t1.json" 'sorted(x["id"] for x in j["tasks"] if x["state"] == "running")')
ad=$(field "$work/t1.json" 'all(x["readopted"] for x in j["tasks"] if x["state"] == "running")')
nq=$(field "$work/t1.json" 'len([x for x in j["tasks"] if x["state"] == "queued"])')
check tasks-restart-sigterm "[ '$r' = '$running1' ] && [ $ad = True ] && [ $nq = 11 ] && [ $alive = 3:2 ]" \
	"while drfd was stopped: A:B cgroups running $alive; after: running $r (before $running1), re-adopted $ad, queued $nq"

# SIGKILL, and the first wave ends while drfd is down.
stop_drfd KILL
while [ $((EPOCHSECONDS - t0)) -lt 70 ] && [ "$(cg_running A)$(cg_running B)" != 00 ]; do sleep 0.5; done
left="$(cg_running A):$(cg_running B)"
start_drfd
wait_for 'j["tenants"]["A"]["running"] + j["tenants"]["B"]["running"] >= 5' 10
tasks_json "$work/k1.json"
ends=$(field "$work/k1.json" 'sorted(set((t[i]["result"], t[i]["exit_code"]) for i in '"$running1"'))')
ra=$(field "$work/k1.json" 'j["tenants"]["A"]["running"]')
rb=$(field "$work/k1.json" 'j["tenants"]["B"]["running"]')
nq=$(field "$work/k1.json" 'len([x for x in j["tasks"] if x["state"] == "queued"])')
check tasks-restart-sigkill-exits-recorded "[ \"$ends\" = \"[('exited', 0)]\" ] && [ $ra = 3 ] && [ $rb = 2 ] && [ $nq = 6 ]" \
	"first wave ended while drfd was down (cgroups left $left): recorded $ends; then A:B running $ra:$rb, queued $nq"

# Drain what is left.
for id in $(field "$work/k1.json" '" ".join(str(x["id"]) for x in j["tasks"] if x["state"] != "finished")'); do
	"$DRFCTL" cancel -c "$conf" "$id" >/dev/null 2>&1
done
wait_for 'j["tenants"]["A"]["running"] + j["tenants"]["B"]["running"] == 0' 10

# OOM: 16M, allocates 64M.
oom=$("$DRFCTL" submit -c "$conf" A --memory 16M -- $PY -c 'b = b"x" * (64 << 20); print(len(b))')
wait_for 't['"$oom"']["state"] == "finished"' 60
tasks_json "$work/o.json"
o=$(field "$work/o.json" '(t['"$oom"']["result"], t['"$oom"']["signal"], t['"$oom"']["use"]["oom_kills"])')
"$DRFCTL" tasks -c "$conf" | grep -E "^ID|^$oom " >"$R/t_tasks-oom.txt" 2>&1
check tasks-oom-killed "[ \"$(field "$work/o.json" 't['"$oom"']["result"]')\" = oom-killed ]" \
	"(result, signal, memory.events oom_kill) = $o"

# The command holds no fd of drfd's or its supervisor's (drfd's socket, cgroup
# and bpf map fds): 0, 1 and 2 only. With the probes' pins removed first, drfd
# loads them afresh (the path that once dup()ed their map fds without close-on-exec).
stop_drfd TERM
rm -rf /sys/fs/bpf/drfd-probes
start_drfd
# shellcheck disable=SC2016 # expanded by the task's sh
fds=$("$DRFCTL" submit -c "$conf" B -- sh -c 'i=3; while [ $i -lt 1024 ]; do [ -e /proc/$$/fd/$i ] && echo "$i -> $(readlink /proc/$$/fd/$i)"; i=$((i + 1)); done; true')
wait_for 't['"$fds"']["state"] == "finished"' 30
tasks_json "$work/fd.json"
d=$(field "$work/fd.json" 't['"$fds"']["dir"]')
e=$(field "$work/fd.json" '(t['"$fds"']["result"], t['"$fds"']["exit_code"])')
check tasks-no-fds-of-drfd "[ \"$e\" = \"('exited', 0)\" ] && [ -f $d/stdout ] && [ ! -s $d/stdout ]" \
	"(result, exit) $e; the command's fds past 2: '$(tr '\n' ' ' <"$d/stdout")'"

# The output cap, set by a reload (tasks started after it get it): 64K. A command writing
# 1M to stdout and 300K to stderr (far more than a pipe holds) exits 0, not blocked on its
# pipes; each file holds its first 64K exactly, then the mark; drfctl tasks --json has the
# bytes dropped, drfctl status --json counts the task.
sed -i 's|^interval = 500ms$|interval = 500ms\ntask-output-max = 64K|' "$conf"
kill -HUP "$drfd_pid"
# status_json FILE: drfctl status --json, under "s" (field's j["tasks"] is a list of tasks)
status_json() {
	printf '{"tasks": [], "s": %s}' "$("$DRFCTL" status -c "$conf" --json 2>/dev/null)" >"$1"
}
for _ in $(seq 20); do
	status_json "$work/s0.json"
	[ "$(field "$work/s0.json" 'j["s"]["tasks"]["output_max"]')" = 65536 ] && break
	sleep 0.25
done
# shellcheck disable=SC2016 # expanded by the task's sh
capped=$("$DRFCTL" submit -c "$conf" B -- sh -c 'head -c 1048576 /dev/zero | tr "\0" x; head -c 307200 /dev/zero | tr "\0" y >&2; exit 0')
wait_for 't['"$capped"']["state"] == "finished"' 60
tasks_json "$work/cap0.json"
status_json "$work/s1.json"
"$DRFCTL" tasks -c "$conf" | grep -A2 -E "^$capped " >"$R/t_tasks-output-capped.txt" 2>&1
d=$(field "$work/cap0.json" 't['"$capped"']["dir"]')
e=$(field "$work/cap0.json" '(t['"$capped"']["result"], t['"$capped"']["exit_code"])')
o=$(field "$work/cap0.json" '(t['"$capped"']["output"]["max"], t['"$capped"']["output"]["stdout_dropped"], t['"$capped"']["output"]["stderr_dropped"], t['"$capped"']["output"]["truncated"])')
n=$(field "$work/s1.json" 'j["s"]["tasks"]["output_truncated_total"]')
printf '\n[drfd: output truncated at 65536 bytes]\n' >"$work/mark"
ml=$(wc -c <"$work/mark")
sizes="$(stat -c %s "$d/stdout") $(stat -c %s "$d/stderr")"
heads="$(head -c 65536 "$d/stdout" | tr -d x | wc -c) $(head -c 65536 "$d/stderr" | tr -d y | wc -c)"
marks=$(tail -c +65537 "$d/stdout" | cmp -s - "$work/mark" && tail -c +65537 "$d/stderr" | cmp -s - "$work/mark" && echo both)
owner="$(stat -c '%a %u' "$d/stdout") $(stat -c '%a %u' "$d/stderr")"
check tasks-output-capped "[ \"$e\" = \"('exited', 0)\" ] && [ '$sizes' = '$((65536 + ml)) $((65536 + ml))' ] && [ '$heads' = '0 0' ] && [ '$marks' = both ] && [ \"$o\" = '(65536, 983040, 241664, True)' ] && [ '$n' = 1 ] && [ '$owner' = '600 0 600 0' ]" \
	"(result, exit) $e; file sizes $sizes (cap + mark of $ml: $((65536 + ml))); other bytes in the first 64K: $heads; mark at the end: ${marks:-no}; (max, stdout dropped, stderr dropped, truncated) $o; status output_truncated_total $n; modes and owners $owner"

# Exit status and output.
ex=$("$DRFCTL" submit -c "$conf" B -- sh -c 'echo hello; echo oops >&2; exit 3')
wait_for 't['"$ex"']["state"] == "finished"' 30
tasks_json "$work/e.json"
d=$(field "$work/e.json" 't['"$ex"']["dir"]')
e=$(field "$work/e.json" '(t['"$ex"']["result"], t['"$ex"']["exit_code"])')
check tasks-exit-and-output "[ \"$e\" = \"('exited', 3)\" ] && [ \"\$(cat $d/stdout)\" = hello ] && [ \"\$(cat $d/stderr)\" = oops ]" \
	"$e, stdout '$(cat "$d/stdout")', stderr '$(cat "$d/stderr")'"

# Refusals: exit 2, nothing queued.
n0=$(field "$work/e.json" 'len(j["tasks"])')
"$DRFCTL" submit -c "$conf" nosuch -- true 2>"$work/ref1"; c1=$?
"$DRFCTL" submit -c "$conf" A --cpu 2 -- true 2>"$work/ref2"; c2=$?
"$DRFCTL" submit -c "$conf" A --memory 1G -- true 2>"$work/ref3"; c3=$?
tasks_json "$work/n.json"
n1=$(field "$work/n.json" 'len(j["tasks"])')
check tasks-refused-at-submit "[ $c1 = 2 ] && [ $c2 = 2 ] && [ $c3 = 2 ] && [ $n0 = $n1 ]" \
	"exit codes $c1 $c2 $c3, tasks $n0 -> $n1; $(head -c 150 "$work/ref2")"

# Task files: root's 0600, the directories 0711, the output the submitter's 0600.
d=$(field "$work/e.json" 't['"$ex"']["dir"]')
modes=$(cd "$d" && stat -c '%n=%a' task started pid exit result stdout stderr | tr '\n' ' ')
dmodes="$(stat -c %a "$d") $(stat -c %a "$(dirname "$d")")"
check tasks-files-0600 "[ '$modes' = 'task=600 started=600 pid=600 exit=600 result=600 stdout=600 stderr=600 ' ] && [ '$dmodes' = '711 711' ] && [ \"\$(stat -c %a $(dirname "$d")/next-id)\" = 600 ]" \
	"task $ex: $modes; its directory and the queue's: $dmodes"

# An unprivileged submitter (a member of status-group) runs as itself, never as root,
# with exactly the groups its connection had: the same `id` as run directly under setpriv.
# As postgres is in ssl-cert on the red team's host, nobody is in a group of its own here
# (an /etc/group bound over the real one for the test): a group it dropped must stay dropped.
cp /etc/group "$work/group"
echo "drftest:x:4241:nobody" >>"$work/group"
mount --bind "$work/group" /etc/group
sub_id() { # NAME SETPRIV-ARGS...: submits `id` under setpriv, compares with `id` run directly
	local name=$1 want u got uid
	shift
	want=$(cd / && setpriv "$@" id)
	u=$(cd / && setpriv "$@" "$DRFCTL" submit -c "$conf" B -- id 2>"$work/uerr")
	if [ -z "$u" ]; then
		result FAIL "$name" "submit under setpriv $* failed: $(cat "$work/uerr")"
		return
	fi
	wait_for 't['"$u"']["state"] == "finished"' 30
	tasks_json "$work/u.json"
	d=$(field "$work/u.json" 't['"$u"']["dir"]')
	got=$(cat "$d/stdout")
	uid=$(field "$work/u.json" '(t['"$u"']["uid"], t['"$u"']["groups"])')
	check "$name" "[ \"$got\" = \"$want\" ]" "setpriv $*: the task's id '$got', directly '$want'; recorded (uid, groups) $uid"
}
sub_id tasks-run-as-submitter --reuid=65534 --regid=65534 --clear-groups
check tasks-cleared-groups-stay-cleared "grep -q 'groups=65534(nogroup)\$' $d/stdout" "$(cat "$d/stdout")"
sub_id tasks-exact-group-list --reuid=65534 --regid=65534 --groups=65534,4242,4243
umount /etc/group

# Idempotent submit: the same key by the same user is the same task, run once, also
# after a restart; another user's key is another task.
k1=$("$DRFCTL" submit -c "$conf" --key retry-1 B -- sh -c "echo ran >>$work/runs")
k2=$("$DRFCTL" submit -c "$conf" --key retry-1 B -- sh -c "echo ran >>$work/runs"); c2=$?
wait_for 't['"$k1"']["state"] == "finished"' 30
stop_drfd TERM
start_drfd
k3=$("$DRFCTL" submit -c "$conf" --key retry-1 B -- sh -c "echo ran >>$work/runs"); c3=$?
k4=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$DRFCTL" submit -c "$conf" --key retry-1 B -- true)
sleep 2
tasks_json "$work/k.json"
nk=$(field "$work/k.json" 'len([x for x in j["tasks"] if x["key"] == "retry-1"])')
check tasks-idempotent-key "[ '$k1' = '$k2' ] && [ '$k1' = '$k3' ] && [ $c2 = 0 ] && [ $c3 = 0 ] && [ -n '$k4' ] && [ '$k4' != '$k1' ] && [ \"\$(cat $work/runs)\" = ran ] && [ $nk = 2 ]" \
	"ids: first $k1, again $k2 (exit $c2), after a restart $k3 (exit $c3), uid 65534's $k4; runs: $(wc -l <"$work/runs"); tasks with the key: $nk"

# Another user's command line reaches root's terminal and drfd's log only escaped: a
# task of uid 65534 whose words hold an OSC sequence (it would set the terminal's title)
# and a CSI clear-screen. drfctl tasks and drfd's log hold no ESC, BEL or C1 byte.
x=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$DRFCTL" submit -c "$conf" B -- \
	printf '%s' "$(printf 'a\033]0;owned\007b')" "$(printf 'c\033[2J\302\233d')")
wait_for 't['"$x"']["state"] == "finished"' 30
"$DRFCTL" tasks -c "$conf" >"$work/tasks.txt" 2>&1
raw=$(LC_ALL=C grep -c $'[\x07\x1b\x9b]' "$work/tasks.txt" "$work/drfd.log" | awk -F: '{ s += $2 } END { print s }')
esc=$(grep -c 'a\\x1b\]0;owned\\x07b' "$work/tasks.txt")
check tasks-controls-escaped "[ -n '$x' ] && [ $raw = 0 ] && [ $esc = 1 ]" \
	"task $x: lines with a raw ESC, BEL or CSI in drfctl tasks and drfd's log: $raw; its command shown escaped: $esc"

# The cap on one user's unfinished tasks: behind root's blocker (whose command line and key
# must stay root's), uid 65534 queues 256 tasks (straight on the socket: 256 drfctl runs are
# slow under TCG); its 257th submit is refused, exit 2, nothing queued; root's is taken.
# as_nobody CMD...: CMD as uid 65534 with no supplementary group (status-group is its gid)
as_nobody() { (cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$@"); }
# ask.py SOCKET REQUEST...: sends each REQUEST on a connection of its own; prints the ok count
cat >"$work/ask.py" <<'PY'
import socket, sys
ok = 0
for req in sys.argv[2:]:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(req.encode() + b"\n")
    a = b""
    while True:
        c = s.recv(4096)
        if not c:
            break
        a += c
    s.close()
    ok += a.startswith(b"drfd-task 1 ok")
print(ok)
PY
chmod 0644 "$work/ask.py"
blk2=$("$DRFCTL" submit -c "$conf" --key root-key-7 C --cpu 0.9 --memory 288M -- \
	sh -c 'sleep 600' ROOT-ARG-7)
wait_for 't['"$blk2"']["state"] == "running"' 10
# (no process substitution: the VM has no /dev/fd)
reqs=()
for _ in $(seq 256); do reqs+=("task-submit B / 0 0 0 0 0 0 0 true"); done
nok=$(as_nobody $PY "$work/ask.py" "$sock" "${reqs[@]}")
as_nobody "$DRFCTL" submit -c "$conf" B -- true >/dev/null 2>"$work/cap.err"; c257=$?
"$DRFCTL" submit -c "$conf" B -- true >"$work/cap.root" 2>&1; croot=$?
tasks_json "$work/cap.json"
mine=$(field "$work/cap.json" 'len([x for x in j["tasks"] if x["uid"] == 65534 and x["state"] != "finished"])')
check tasks-cap-per-uid "[ '$nok' = 256 ] && [ $c257 = 2 ] && [ $mine = 256 ] && [ $croot = 0 ]" \
	"uid 65534: $nok of 256 submits taken, the 257th exit $c257 ($(head -c 120 "$work/cap.err")), its unfinished tasks $mine; root's submit exit $croot"

# What uid 65534 sees of root's task: its id, state and vector, not its command or key.
as_nobody "$DRFCTL" tasks -c "$conf" >"$work/view.txt" 2>&1
as_nobody "$DRFCTL" tasks -c "$conf" --json >"$work/view.json" 2>&1
"$DRFCTL" tasks -c "$conf" >"$work/view-root.txt" 2>&1
hidden=$(field "$work/view.json" '(t['"$blk2"']["state"], t['"$blk2"']["command"], t['"$blk2"']["key"], t['"$blk2"']["vector"]["cpu"])')
own=$(field "$work/view.json" '[x["command"] for x in j["tasks"] if x["uid"] == 65534][-1]')
leak=$(grep -c -e ROOT-ARG-7 -e root-key-7 "$work/view.txt" "$work/view.json" | awk -F: '{ s += $2 } END { print s }')
rootsees=$(grep -c ROOT-ARG-7 "$work/view-root.txt")
check tasks-others-command-hidden "[ \"$hidden\" = \"('running', None, None, 0.9)\" ] && [ \"$own\" = \"['true']\" ] && [ $leak = 0 ] && [ $rootsees = 1 ]" \
	"root's task $blk2 as uid 65534 sees it (state, command, key, cpu): $hidden; its own: $own; lines naming root's argument or key in its view: $leak; in root's: $rootsees"

# Access (drfd.conf(5)): A is root's alone, C's access names nobody (a member: not an
# admin). nobody's submit to A, exec into A and cancel of root's task in C are refused
# (exit 2), nothing queued, root's task running on.
n0=$(field "$work/cap.json" 'len(j["tasks"])')
as_nobody "$DRFCTL" submit -c "$conf" A -- true >/dev/null 2>"$work/acc.submit"; ca=$?
as_nobody "$DRFCTL" exec -c "$conf" A -- true 2>"$work/acc.exec"; cx=$?
as_nobody "$DRFCTL" cancel -c "$conf" "$blk2" 2>"$work/acc.cancel"; cc=$?
tasks_json "$work/acc.json"
n1=$(field "$work/acc.json" 'len(j["tasks"])')
st=$(field "$work/acc.json" 't['"$blk2"']["state"]')
check tasks-access-refused "[ $ca = 2 ] && [ $cx = 2 ] && [ $cc = 2 ] && [ $n0 = $n1 ] && [ \"$st\" = running ]" \
	"uid 65534: submit to A exit $ca ($(head -c 300 "$work/acc.submit")), exec into A exit $cx, cancel of root's $blk2 in C exit $cc ($(head -c 200 "$work/acc.cancel")); tasks $n0 -> $n1; $blk2 $st"

# Cancel what is left (queued first, so that nothing starts), then the blocker.
reqs=()
for id in $(field "$work/cap.json" '" ".join(str(x["id"]) for x in j["tasks"] if x["state"] == "queued")'); do
	reqs+=("task-cancel $id")
done
$PY "$work/ask.py" "$sock" "${reqs[@]}" >/dev/null
"$DRFCTL" cancel -c "$conf" "$blk2"
wait_for 'j["tenants"]["A"]["running"] + j["tenants"]["B"]["running"] + j["tenants"]["C"]["running"] == 0 and not [x for x in j["tasks"] if x["state"] == "queued"]' 60

# Finished task cgroups are gone; the tenants can take drfctl exec again.
left=$(find "$CG/drf.slice" -maxdepth 2 -name 'task-*' | wc -l)
"$DRFCTL" exec -c "$conf" A -- true; xc=$?
check tasks-cgroups-removed "[ $left = 0 ] && [ $xc = 0 ]" "task cgroups left: $left; drfctl exec into A afterwards: exit $xc"
# A member's drfctl exec: drfd moves it (it cannot write cgroup.procs itself).
cg=$(as_nobody "$DRFCTL" exec -c "$conf" C -- cat /proc/self/cgroup 2>"$work/acc.exec2"); cm=$?
check tasks-access-member-exec "[ $cm = 0 ] && [ \"$cg\" = 0::/drf.slice/C ]" \
	"uid 65534's drfctl exec into C: exit $cm, in '$cg' $(head -c 200 "$work/acc.exec2")"
# A reload that removes B while its task runs: the task goes on (B's cgroup is an orphan
# with it), its end is recorded, then the orphan goes.
dep=$("$DRFCTL" submit -c "$conf" B -- sleep 300)
wait_for 't['"$dep"']["state"] == "running"' 10
sed -i '/^\[tenant B\]/,/^tasks = unlimited/d' "$conf"
kill -HUP "$drfd_pid"
sleep 3
tasks_json "$work/d1.json"
st=$(field "$work/d1.json" 't['"$dep"']["state"]')
pop=$(grep -c "populated 1" "$CG/drf.slice/B/task-$dep/cgroup.events" 2>/dev/null)
"$DRFCTL" cancel -c "$conf" "$dep"
wait_for 't['"$dep"']["state"] == "finished"' 10
tasks_json "$work/d2.json"
res=$(field "$work/d2.json" 't['"$dep"']["result"]')
for _ in $(seq 20); do [ -d "$CG/drf.slice/B" ] || break; sleep 0.5; done
check tasks-departed-tenant "[ $st = running ] && [ $pop = 1 ] && [ $res = cancelled ] && [ ! -d $CG/drf.slice/B ]" \
	"after B left the config: task $st, its cgroup populated $pop; cancelled: $res; B's cgroup then $([ -d "$CG/drf.slice/B" ] && echo kept || echo removed)"

stop_drfd TERM

# A state dir someone else could write: drfd refuses to start (exit 8) and touches nothing.
unsafe() { # NAME: drfd on a config whose state-dir is $work/bad, as it is
	sed -e "s|^state-dir = .*|state-dir = $work/bad|" \
		-e "s|^status-socket = .*|status-socket = $work/bad.sock|" \
		-e "s|^cgroup-root = .*|cgroup-root = /sys/fs/cgroup/drf-unsafe.slice|" "$conf" >"$work/bad.conf"
	timeout 20 "$DRFD" -c "$work/bad.conf" --foreground 2>>"$work/drfd.log"
	local rc=$? left
	left=$(find "$work/bad" -mindepth 1 | wc -l)
	check "$1" "[ $rc = 8 ] && [ $left = 0 ] && [ ! -e /sys/fs/cgroup/drf-unsafe.slice ] && [ ! -e $work/bad.sock ]" \
		"$(stat -c '%U %a' "$work/bad"): drfd exit $rc; entries created under it: $left; its cgroup-root $([ -e /sys/fs/cgroup/drf-unsafe.slice ] && echo created || echo untouched)"
}
mkdir "$work/bad"
chown 65534:65534 "$work/bad"
unsafe tasks-statedir-foreign-owner-refused
chown 0:0 "$work/bad"
chmod 0777 "$work/bad"
unsafe tasks-statedir-world-writable-refused

# The disk is full when a task ends: its supervisor cannot write the exit file. The task
# stays running (its supervisor retries, in its cgroup) and, once there is room, is
# recorded as it ended: exited 7, not lost.
mkdir "$work/full"
mount -t tmpfs -o size=1m,mode=0755 tmpfs "$work/full"
sed "s|^state-dir = .*|state-dir = $work/full/state|" "$conf" >"$work/full.conf"
conf=$work/full.conf
start_drfd
full=$("$DRFCTL" submit -c "$conf" A -- sh -c 'sleep 3; exit 7')
wait_for 't['"$full"']["state"] == "running"' 10
dd if=/dev/zero of="$work/full/fill" bs=4k 2>/dev/null
sleep 6
tasks_json "$work/f1.json"
held=$(field "$work/f1.json" 't['"$full"']["state"]')
fdir=$(field "$work/f1.json" 't['"$full"']["dir"]')
noexit=$([ -e "$fdir/exit" ] && echo written || echo missing)
rm -f "$work/full/fill"
wait_for 't['"$full"']["state"] == "finished"' 60
tasks_json "$work/f2.json"
fe=$(field "$work/f2.json" '(t['"$full"']["result"], t['"$full"']["exit_code"])')
check tasks-exit-kept-disk-full "[ $held = running ] && [ $noexit = missing ] && [ \"$fe\" = \"('exited', 7)\" ]" \
	"while full, 3 s after the command ended: $held, exit file $noexit; once room was made: $fe"
stop_drfd TERM
umount "$work/full"
cp "$work/drfd.log" "$R/t_tasks-drfd.log" 2>/dev/null
exit 0
