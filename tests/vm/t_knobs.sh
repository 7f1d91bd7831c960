#!/usr/bin/env bash
# The knob values in cgroupfs equal the mapping of an allocation, in share and
# in limit mode, for three tenants with a nested cgroup path; drfctl status
# agrees, and flags a knob someone else changed.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup
modprobe virtio_blk
sleep 1
dev=$(cat /sys/block/vda/dev)

diagram <<'DIAGRAM'
/sys/fs/cgroup/drf.slice            capacity: cpu 2, memory 1G, vda read 40M/s write 20M/s
 |- web        weight 2, demand cpu 1, memory 256M, read 10M/s
 |- batch      tasks of (cpu 0.5, memory 128M, write 4M/s), unlimited
 '- data/db    demand cpu 0.5, memory 512M, write 8M/s (data: an inner node, weights from db's)
expect: every knob = mapping(drfctl plan --json), share mode, then limit mode
DIAGRAM

conf=$work/drfd.conf
write_conf() { # MODE
	cat >"$conf" <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
mode = $1
[capacity]
cpu = 2
memory = 1G
io-device = /dev/vda
io-read-bps = 40M
io-write-bps = 20M
[tenant web]
weight = 2
cpu = 1
memory = 256M
io-read-bps = 10M
[tenant batch]
task-cpu = 0.5
task-memory = 128M
task-io-write-bps = 4M
[tenant db]
cgroup = data/db
cpu = 0.5
memory = 512M
io-write-bps = 8M
CONF
}

# Compares every knob with the mapping; prints a summary, fails on a difference.
compare() { # MODE
	local mode=$1 bad=0 f want have cg n lines
	"$DRFCTL" plan -c "$conf" --json >"$work/plan.json"
	$PY "$here/expect_knobs.py" "$mode" "$dev" web:memory=268435456 db:memory=536870912 \
		db:cgroup=data/db \
		<"$work/plan.json" >"$work/expect"
	while read -r cg f want; do
		# the file's lines joined by spaces, read by the shell itself (no process per knob)
		lines=()
		mapfile -t lines <"$CG/drf.slice/$cg/$f"
		have="${lines[*]}"
		have=${have%"${have##*[! ]}"}
		if [ "$have" != "$want" ]; then
			echo "  $cg $f: cgroupfs has '$have', the mapping says '$want'" >>"$work/diffs"
			bad=$((bad + 1))
		fi
	done <"$work/expect"
	n=$(wc -l <"$work/expect")
	echo "compared $n knobs, $bad differ" >"$work/summary"
	[ "$bad" -eq 0 ] && [ "$n" -ge 18 ]
}

write_conf share
"$DRFD" -c "$conf" --once 2>"$work/log1"
rc=$?
compare share
ok=$?
check knobs-share "[ $rc -eq 0 ] && [ $ok -eq 0 ]" "drfd --once exit $rc; $(cat "$work/summary")"
"$DRFCTL" status -c "$conf" >"$work/status" 2>&1
rc=$?
check status-agrees "[ $rc -eq 0 ]" "drfctl status exit $rc after drfd --once"

# Someone else changes a knob: status flags it and exits 3; drfd puts it back.
echo 1234 >"$CG/drf.slice/web/cpu.weight"
"$DRFCTL" status -c "$conf" --json >"$work/status2" 2>/dev/null
rc=$?
state=$($PY -c "
import json, sys
s = json.load(open(sys.argv[1]))
t = [x for x in s['tenants'] if x['name'] == 'web'][0]
k = [k for k in t['knobs'] if k['file'] == 'cpu.weight'][0]
print(s['source'], k['actual'], k['state'])" "$work/status2")
check status-flags-drift "[ $rc -eq 3 ] && [ \"$state\" = 'cgroupfs 1234 mismatch' ]" \
	"drfctl status exit $rc; web cpu.weight (source, actual, state): $state"
"$DRFD" -c "$conf" --once 2>"$work/log2"
compare share
ok=$?
check drfd-restores "[ $ok -eq 0 ]" \
	"web/cpu.weight back to $(cat "$CG/drf.slice/web/cpu.weight"); $(cat "$work/summary")"

# Idempotent: a second pass has nothing to write (a dry run lists no write).
"$DRFD" -c "$conf" --once 2>"$work/log3"
rc=$?
pending=$("$DRFD" -c "$conf" --dry-run 2>/dev/null | grep -c '^write ')
check no-duplicate-writes "[ $rc -eq 0 ] && [ $pending -eq 0 ]" \
	"drfd --once exit $rc, then a dry run has $pending writes to make"

write_conf limit
"$DRFD" -c "$conf" --once 2>"$work/log4"
rc=$?
compare limit
ok=$?
check knobs-limit "[ $rc -eq 0 ] && [ $ok -eq 0 ]" "drfd --once exit $rc; $(cat "$work/summary")"
"$DRFCTL" status -c "$conf" >"$work/status3" 2>&1
rc=$?
check status-agrees-limit "[ $rc -eq 0 ]" "drfctl status exit $rc in limit mode"

cat "$work/diffs" 2>/dev/null
for f in "$work"/log*; do sed "s/^/  $(basename "$f"): /" "$f"; done
exit 0
