#!/usr/bin/env bash
# The usage history from a real drfd on this host (slow: two minutes, so not
# part of `make check`; run it by hand as root):
#   DRFD=.output/cc/drfd DRFCTL=.output/cc/drfctl tests/cli/test_history_live.sh
# drfd runs in the foreground with two tenants, busy (a busy loop, through
# drfctl exec) and idle, sharing only the network of a veth pair in a network
# namespace of the test's own (as tests/cli/test_metrics.sh: a host's cgroup v2
# may offer no controller; every cgroup v2 has cpu.stat). After two full
# minutes: the history file under state-dir has the header and one line per
# tenant per minute; busy's cpu mean is near 1 core and idle's near 0; drfctl
# recommend reads it (records and samples). Then drfd restarts and appends to
# the same file.
set -u
drfd=${DRFD:?set DRFD to the drfd binary}
drfctl=${DRFCTL:?set DRFCTL to the drfctl binary}
pass=0 failed=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { failed=$((failed + 1)); echo "FAIL $1"; }
check() { if eval "$2"; then ok "$1"; else ko "$1"; fi; }
skip_all() { echo "SKIP history on the host: $1"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }

[ "$(id -u)" -eq 0 ] || skip_all "needs root (a network namespace, cgroups)"
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$mnt" ] || skip_all "no cgroup2 mount"
id=$$
ns=drfh$id dev=dh$id
root=$mnt/drfhistory$id
work=$(mktemp -d)
drfd_pid='' busy_pid=''

stop() { [ -n "$1" ] || return 0; kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
cleanup() {
	stop "$busy_pid"
	stop "$drfd_pid"
	for t in busy idle; do
		[ -f "$root/$t/cgroup.procs" ] && xargs -r kill -9 <"$root/$t/cgroup.procs" 2>/dev/null
	done
	sleep 0.2
	nsenter --net="/run/netns/$ns" "$drfctl" net-reset -c "$work/drfd.conf" >/dev/null 2>&1
	ip netns del "$ns" 2>/dev/null
	for d in "$root"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
	rmdir "$root" 2>/dev/null
	probes=${root#/}
	rm -rf "/sys/fs/bpf/drfd-probes/${probes//\//-}"
	if [ -n "${HISTORY_KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

if ! { ip netns add "$ns" && ip -n "$ns" link add "$dev" type veth peer name "p$dev" &&
	ip -n "$ns" link set "$dev" up && ip -n "$ns" link set "p$dev" up; }; then
	skip_all "cannot make a network namespace with a veth pair"
fi
cat >"$work/drfd.conf" <<CONF
[agent]
cgroup-root = $root
state-dir = $work/state
status-socket = $work/drfd.sock
interval = 1s
[capacity]
net-device = $dev
net-rate = 100mbit
[tenant busy]
[tenant idle]
CONF
start_drfd() {
	nsenter --net="/run/netns/$ns" "$drfd" -c "$work/drfd.conf" --foreground \
		>>"$work/drfd.log" 2>&1 &
	drfd_pid=$!
	local _
	for _ in $(seq 100); do
		kill -0 "$drfd_pid" 2>/dev/null || return 1
		[ -S "$work/drfd.sock" ] && return 0
		sleep 0.1
	done
	return 1
}
start_drfd || skip_all "drfd does not run here: $(tail -3 "$work/drfd.log")"
"$drfctl" exec -c "$work/drfd.conf" busy -- sh -c 'while :; do :; done' &
busy_pid=$!
t0=$(date +%s.%N)

hist=$work/state/$(printf '%s' "${root#/}" | sed 's/%/%25/g; s/-/%2d/g; s|/|-|g').history
# Two full minutes after the first whole one has started.
sleep $((120 + 60 - $(date +%s) % 60 + 2))
check "history file at $hist" "[ -s '$hist' ]"
check "header" "[ \"\$(head -n 1 '$hist')\" = \"\$(printf 'drfd-history\t1\tstep\t60')\" ]"
nb=$(awk -F'\t' '$2 == "busy"' "$hist" | wc -l)
ni=$(awk -F'\t' '$2 == "idle"' "$hist" | wc -l)
check "one line per tenant a minute (busy $nb, idle $ni)" "[ $nb -ge 2 ] && [ $nb -le 4 ] && [ $ni -eq $nb ]"
# The full minutes (not the first, partial one) against what the kernel counted
# for busy since it started (cpu.stat): the same cores within 0.15 (the host may
# be shared: the busy loop need not get a whole core).
used=$(awk '$1 == "usage_usec" { print $2 }' "$root/busy/cpu.stat")
avg=$(awk -v u="$used" -v t0="$t0" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.3f", u / 1e6 / (t1 - t0) }')
bcpu=$(awk -F'\t' '$2 == "busy" && n++ { s += $3; k++ } END { printf "%.3f", s / k }' "$hist")
icpu=$(awk -F'\t' '$2 == "idle" { if ($3 > m) m = $3 } END { print m + 0 }' "$hist")
check "busy's cpu over the full minutes ($bcpu) as cpu.stat's ($avg); idle's under 0.05 ($icpu)" \
	"awk -v b='$bcpu' -v a='$avg' -v i='$icpu' 'BEGIN { d = b - a; exit !(a > 0.2 && d < 0.15 && d > -0.15 && i < 0.05) }'"
"$drfctl" recommend -c "$work/drfd.conf" --json >"$work/reco.json" 2>"$work/reco.err"
rc=$?
check "drfctl recommend finds and reads it (exit $rc)" "[ $rc -eq 0 ]"
check "recommend: the records and samples" \
	"python3 -c 'import json,sys; d=json.load(open(\"$work/reco.json\")); t={x[\"name\"]: x for x in d[\"tenants\"]}; sys.exit(0 if d[\"records\"] == $nb + $ni and t[\"busy\"][\"samples\"] == $nb else 1)'"
cat "$work/reco.err"

# A restart continues the same file.
stop "$drfd_pid"
lines=$(wc -l <"$hist")
start_drfd || ko "drfd restarts"
sleep $((60 - $(date +%s) % 60 + 62))
check "after a restart: appended to ($lines lines, then $(wc -l <"$hist"))" \
	"[ \$(wc -l <'$hist') -gt $lines ] && [ \"\$(head -n 1 '$hist')\" = \"\$(printf 'drfd-history\t1\tstep\t60')\" ]"
grep -i "usage history" "$work/drfd.log"

echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
