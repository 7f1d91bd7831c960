#!/usr/bin/env bash
# Crash on a real kernel. drfd (daemonized) is killed with SIGKILL: the limits
# hold while it is down, and a restart converges with nothing left to write.
# Then a kill that provably lands in the middle of a first pass over a config
# whose knobs all differ: some tenants already show the new values and some the
# old ones; the restart finishes the job.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup

nt=600
diagram <<DIAGRAM
drf.slice (limit mode, cpu 2, memory 1G)
 |- A  tasks (0.5 cpu, 64M)      two busy loops, cpu.max one core
 |- B  tasks (0.25 cpu, 256M)
 '- C  weight 2, demand cpu 0.5, memory 128M
kill -9 drfd -> every knob unchanged while it is down, A still throttled at its cap
restart      -> drfd --dry-run then has nothing to write; drfctl status exit 0
then $nt tenants t0..t$((nt - 1)) under wide.slice, weights all changed at once:
kill -9 mid-pass -> some tenants new, some old (shown); restart -> all new, idempotent
DIAGRAM

conf=$work/drfd.conf
cat >"$conf" <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
mode = limit
interval = 200ms
status-socket = /run/drfd/crash.sock
[capacity]
cpu = 2
memory = 1G
[tenant A]
task-cpu = 0.5
task-memory = 64M
[tenant B]
task-cpu = 0.25
task-memory = 256M
[tenant C]
weight = 2
cpu = 0.5
memory = 128M
CONF
snapshot() {
	local f t v
	for f in cpu.max memory.max memory.high; do
		for t in A B C; do v=; read -r v <"$CG/drf.slice/$t/$f"; printf '%s/%s=%s ' $t $f "$v"; done
	done
}
# Lines a dry run would write: none once the tree holds the plan.
pending_writes() { "$DRFD" -c "$1" --dry-run 2>/dev/null | grep -c '^write '; }

pid=$("$DRFD" -c "$conf" 2>"$work/drfd1.log")
rc=$?
check daemon-starts "[ $rc -eq 0 ] && kill -0 ${pid:-0}" "drfd exit $rc after forking pid ${pid:-none}"
# Only A runs: its two loops would take both vCPUs without its cap of one core.
busy "$conf" A 0-1
busy "$conf" A 0-1
sleep 1
before=$(snapshot)
kill -9 "$pid"
n0=$(awk '$1 == "nr_throttled" {print $2}' $CG/drf.slice/A/cpu.stat)
sleep 3
n1=$(awk '$1 == "nr_throttled" {print $2}' $CG/drf.slice/A/cpu.stat)
during=$(snapshot)
# Held: the knobs are unchanged and the kernel keeps throttling A at its cap
# (its two loops would use 2 cores without it). t_cpu measures caps' precision.
check limits-held-while-down "[ \"$before\" = \"$during\" ] && [ $((n1 - n0)) -gt 10 ]" \
	"knobs unchanged 3 s after kill -9; A throttled $((n1 - n0)) times in those 3 s at cpu.max $(cat $CG/drf.slice/A/cpu.max)"

pending=$(pending_writes "$conf")
"$DRFD" -c "$conf" --once 2>"$work/drfd2.log"
rc=$?
"$DRFCTL" status -c "$conf" >"$work/status" 2>&1
src=$?
check restart-converges-no-duplicate-work \
	"[ $rc -eq 0 ] && [ $pending -eq 0 ] && [ $src -eq 0 ] && [ \"\$(snapshot)\" = \"$before\" ]" \
	"after kill -9 a dry run has $pending writes to make; restart exit $rc; status exit $src; knobs as before"
pkill -f 'while :; do :; done'

# n tenants; every weight changes between the two configs, so every cpu.weight does.
wide() { # CONF FIRST-WEIGHT
	{
		printf '[agent]\ncgroup-root = /sys/fs/cgroup/wide.slice\nstatus-socket = /run/drfd/wide.sock\n'
		printf '[capacity]\ncpu = 2\nmemory = 1G\n'
		for i in $(seq 0 $((nt - 1))); do
			printf '[tenant t%d]\nweight = %d\ncpu = 0.5\nmemory = 64M\n' "$i" $(($2 + i % 50))
		done
	} >"$1"
}
wide "$work/old.conf" 1
wide "$work/new.conf" 100
"$DRFD" -c "$work/old.conf" --once 2>"$work/old.log"
weights() { # CONF: "TENANT cpu.weight" as the mapping gives them
	"$DRFCTL" plan -c "$1" --json | $PY -c "
import json, sys
t = json.load(sys.stdin)['tenants']
m = max(x['alloc']['cpu'] for x in t)
for x in t:
    print(x['name'], max(1, min(10000, int(x['alloc']['cpu'] / m * 10000 + 0.5))))"
}
# Only the tenants whose cpu.weight differs between the two plans count.
weights "$work/old.conf" | sort >"$work/w.old"
weights "$work/new.conf" | sort >"$work/w.new"
join "$work/w.old" "$work/w.new" | awk '$2 != $3 {print $1, $3}' >"$work/want"
n=$(wc -l <"$work/want")
# Tenants whose cpu.weight already holds the new plan's value.
count_new() {
	local c=0 t w v
	while read -r t w; do
		v=
		read -r v <"$CG/wide.slice/$t/cpu.weight" # no process per file: there are hundreds
		[ "$v" = "$w" ] && c=$((c + 1))
	done <"$work/want"
	echo $c
}
old_new=$(count_new)
# Kill it mid-pass: as soon as one of eight tenants spread over the list shows its
# new weight (whatever order the pass takes, one of them comes early), not after a
# fixed delay: drfd's start under TCG on a busy host varies by more than a pass.
awk -v n="$n" -v cg="$CG" 'NR % int(n / 8 + 1) == 1 {print cg "/wide.slice/" $1 "/cpu.weight", $2}' "$work/want" >"$work/sample"
mapfile -t sample <"$work/sample" # (no /dev/fd in the VM for a process substitution)
partial=0 tries=0 after=none
while [ $tries -lt 5 ]; do
	tries=$((tries + 1))
	"$DRFD" -c "$work/old.conf" --once 2>/dev/null
	"$DRFD" -c "$work/new.conf" --foreground 2>"$work/new.log" &
	p=$!
	start=${EPOCHREALTIME/./}
	seen=0
	while [ $seen -eq 0 ] && [ $((${EPOCHREALTIME/./} - start)) -lt 60000000 ] && kill -0 $p 2>/dev/null; do
		for fw in "${sample[@]}"; do
			v=
			read -r v <"${fw% *}"
			if [ "$v" = "${fw##* }" ]; then seen=1; break; fi
		done
	done
	kill -9 $p
	now=${EPOCHREALTIME/./}
	wait $p 2>/dev/null
	after=$(((now - start) / 1000))ms
	got=$(count_new)
	if [ "$got" -gt 0 ] && [ "$got" -lt "$n" ]; then
		partial=$got
		break
	fi
done
check kill-lands-mid-pass "[ $old_new -eq 0 ] && [ $partial -gt 0 ] && [ $partial -lt $n ]" \
	"before: $old_new of $n tenants had the new weights; killed $after after the start, at the first new weight seen (try $tries): $partial of $n new, $((n - partial)) old"
"$DRFD" -c "$work/new.conf" --once 2>"$work/new2.log"
rc=$?
"$DRFCTL" status -c "$work/new.conf" --json >"$work/status2.json" 2>/dev/null
src=$?
check crash-mid-pass-then-converges "[ $rc -eq 0 ] && [ $src -eq 0 ] && [ \$(count_new) -eq $n ]" \
	"restart exit $rc: $(count_new) of $n tenants new; status exit $src"
pending=$(pending_writes "$work/new.conf")
check then-idempotent "[ $pending -eq 0 ]" "a dry run now has $pending writes to make"
for f in "$work"/drfd*.log; do sed "s/^/  $(basename "$f"): /" "$f"; done
exit 0
