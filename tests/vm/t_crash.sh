#!/usr/bin/env bash
# Crash on a real kernel: drfd (daemonized) is killed with SIGKILL mid-run; the
# limits hold while it is down; a restart converges to the same tree with no
# errors and no duplicate work. Then a kill in the middle of a first pass over a
# changed config, and a restart that finishes the job.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup

diagram <<'DIAGRAM'
drf.slice (limit mode, cpu 2, memory 1G)
 |- A  tasks (0.5 cpu, 64M)      two busy loops, cpu.max one core
 |- B  tasks (0.25 cpu, 256M)
 '- C  weight 2, demand cpu 0.5, memory 128M
kill -9 drfd -> every knob unchanged while it is down, A still throttled at its cap
restart      -> 0 written, 0 created, 0 errors; drfctl status: all ok
DIAGRAM

conf=$work/drfd.conf
write_conf() { # C's weight
	cat >"$conf" <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
mode = limit
interval = 200ms
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
weight = $1
cpu = 0.5
memory = 128M
CONF
}
snapshot() {
	for f in cpu.max memory.max memory.high; do
		for t in A B C; do printf '%s/%s=%s ' $t $f "$(cat $CG/drf.slice/$t/$f)"; done
	done
}

write_conf 2
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

"$DRFD" -c "$conf" --once 2>"$work/drfd2.log"
rc=$?
"$DRFCTL" status -c "$conf" >"$work/status" 2>&1
src=$?
check restart-converges-no-duplicate-work \
	"[ $rc -eq 0 ] && grep -q ' 0 written, 0 created, .* 0 errors' $work/drfd2.log && [ $src -eq 0 ] && [ \"\$(snapshot)\" = \"$before\" ]" \
	"restart exit $rc: $(grep reconciled "$work/drfd2.log" | sed 's/drfd: //'); status exit $src"

# Killed in the middle of applying a changed config: the restart finishes it.
write_conf 7
"$DRFD" -c "$conf" --foreground 2>"$work/drfd3.log" &
p3=$!
sleep 0.05
kill -9 $p3
wait $p3 2>/dev/null
"$DRFD" -c "$conf" --once 2>"$work/drfd4.log"
rc=$?
"$DRFCTL" status -c "$conf" >"$work/status2" 2>&1
src=$?
check crash-mid-pass-then-converges "[ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q ' 0 errors' $work/drfd4.log" \
	"after kill -9 0.05 s into a pass: restart exit $rc ($(grep reconciled "$work/drfd4.log" | sed 's/drfd: //')), status exit $src"
"$DRFD" -c "$conf" --once 2>"$work/drfd5.log"
check then-idempotent "grep -q ' 0 written, 0 created, .* 0 errors' $work/drfd5.log" \
	"$(grep reconciled "$work/drfd5.log" | sed 's/drfd: //')"
for f in "$work"/drfd*.log; do sed "s/^/  $(basename "$f"): /" "$f"; done
exit 0
