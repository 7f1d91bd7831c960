#!/usr/bin/env bash
# Reload on a real kernel: SIGHUP with a changed weight changes the knobs; with
# a broken file keeps the old ones (and says FILE:LINE); a knob someone else
# changes is noticed and put back; a removed tenant's cgroup that still holds
# processes is left with its limits; SIGTERM exits and leaves the limits.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup

diagram <<'DIAGRAM'
drf.slice (share mode, cpu 2, memory 1G, interval 200ms), drfd running
 |- A                                   a broken file on SIGHUP: knobs unchanged
 |- B  weight 1 -> 3 on SIGHUP          expect cpu.weight = mapping of the new plan
 '- C  removed from the config while it holds a process: left in place
DIAGRAM

conf=$work/drfd.conf
write_conf() { # B's weight, then extra text
	cat >"$conf" <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
interval = 200ms
verify-period = 1s
[capacity]
cpu = 2
memory = 1G
[tenant A]
task-cpu = 0.5
task-memory = 64M
[tenant B]
weight = $1
task-cpu = 0.25
task-memory = 256M
$2
CONF
}
# cpu.weight the mapping gives tenant $1 under the current config
want_weight() {
	"$DRFCTL" plan -c "$conf" --json | $PY -c "
import json, sys
t = json.load(sys.stdin)['tenants']
m = max(x['alloc']['cpu'] for x in t)
a = [x['alloc']['cpu'] for x in t if x['name'] == '$1'][0]
print(max(1, min(10000, int(a / m * 10000 + 0.5))))"
}
# A field of the running drfd's status (drfctl status --json), by a Python expression on s.
status() {
	"$DRFCTL" status -c "$conf" --json 2>/dev/null | $PY -c "import json, sys
s = json.load(sys.stdin)
print($1)"
}
wait_for() { # FILE VALUE
	for _ in $(seq 50); do [ "$(cat "$1")" = "$2" ] && return 0; sleep 0.1; done
	return 1
}

write_conf 1 "[tenant C]
task-cpu = 0.25"
"$DRFD" -c "$conf" --foreground 2>"$work/drfd.log" &
pid=$!
wait_for "$CG/drf.slice/C/cpu.weight" "$(want_weight C)"
"$DRFCTL" exec -c "$conf" C -- sleep 600 &
# It must be in C before the config is rewritten under it.
for _ in $(seq 50); do [ -s "$CG/drf.slice/C/cgroup.procs" ] && break; sleep 0.1; done

# Reload with a changed weight.
before=$(cat $CG/drf.slice/B/cpu.weight)
write_conf 3 ""
want=$(want_weight B)
kill -HUP $pid
wait_for "$CG/drf.slice/B/cpu.weight" "$want"
check reload-changes-knobs "[ \"\$(cat $CG/drf.slice/B/cpu.weight)\" = $want ] && [ $want != $before ]" \
	"B cpu.weight $before -> $(cat $CG/drf.slice/B/cpu.weight) (mapping of the new plan: $want)"
orphans=$(status "[o['name'] for o in s['orphans']]")
check removed-tenant-with-processes-kept \
	"[ -d $CG/drf.slice/C ] && [ \"$orphans\" = \"['C']\" ]" \
	"C's cgroup still there with cpu.weight $(cat $CG/drf.slice/C/cpu.weight) and $(wc -l <$CG/drf.slice/C/cgroup.procs) process; drfctl status lists orphans $orphans"

# A knob changed behind drfd's back is noticed and put back within verify-period (1s).
f0=$(status "s['foreign_total']")
echo 777 >$CG/drf.slice/B/cpu.weight
wait_for "$CG/drf.slice/B/cpu.weight" "$(want_weight B)"
f1=$(status "s['foreign_total']")
check foreign-change-restored \
	"[ \"\$(cat $CG/drf.slice/B/cpu.weight)\" = $(want_weight B) ] && [ $((f1 - f0)) -eq 1 ]" \
	"B cpu.weight back to $(cat $CG/drf.slice/B/cpu.weight); foreign changes counted by drfd: $f0 -> $f1"

# Reload with a broken file: refused, old knobs stay, drfd keeps running.
snap=$(cat $CG/drf.slice/*/cpu.weight | tr '\n' ' ')
write_conf banana ""
kill -HUP $pid
sleep 1
after=$(cat $CG/drf.slice/*/cpu.weight | tr '\n' ' ')
refused=$(status "s['reloads_refused']")
check reload-broken-keeps-old \
	"kill -0 $pid && [ \"$snap\" = \"$after\" ] && [ \"$refused\" = 1 ]" \
	"cpu.weights before '$snap', after '$after'; reloads refused: $refused"

# SIGTERM: exit 0, limits stay.
kill -TERM $pid
wait $pid
rc=$?
sleep 0.5
check sigterm-leaves-limits "[ $rc -eq 0 ] && [ \"\$(cat $CG/drf.slice/*/cpu.weight | tr '\n' ' ')\" = \"$after\" ]" \
	"drfd exit $rc; cpu.weights after exit: $(cat $CG/drf.slice/*/cpu.weight | tr '\n' ' ')"
sed 's/^/  drfd: /' "$work/drfd.log"
exit 0
