#!/usr/bin/env bash
# The demo's body, on a host (or in the VM) with cgroup v2: runs drfd on the
# example tenants, starts a busy loop in each on the same CPU, and shows what
# drfctl status reads back and how the CPU was shared.
#   demo-run.sh BUILD_DIR
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
conf=$top/deploy/examples/drfd.conf
cg=$(sed -n 's/^cgroup-root *= *//p' "$conf")
cg=${cg:-/sys/fs/cgroup/drf.slice}

echo "== drfd -c $conf"
if ! pid=$("$build/drfd" -c "$conf"); then
	echo "demo: drfd did not start (see above)"
	exit 1
fi
echo "   drfd is enforcing (pid $pid)"
echo
echo "== a busy loop in each tenant, both on CPU 0, for 8 seconds"
loops=()
for t in A B; do
	"$build/drfctl" exec -c "$conf" "$t" -- taskset -c 0 sh -c 'while :; do :; done' &
	loops+=($!)
done
sleep 2
a0=$(awk '$1 == "usage_usec" {print $2}' "$cg/A/cpu.stat")
b0=$(awk '$1 == "usage_usec" {print $2}' "$cg/B/cpu.stat")
sleep 6
a1=$(awk '$1 == "usage_usec" {print $2}' "$cg/A/cpu.stat")
b1=$(awk '$1 == "usage_usec" {print $2}' "$cg/B/cpu.stat")
echo
echo "== drfctl status -c $conf"
"$build/drfctl" status -c "$conf"
echo
a=$(((a1 - a0) / 1000))
b=$(((b1 - b0) / 1000))
echo "== CPU 0 over 6 s: A ran ${a} ms, B ${b} ms: B/A = $(awk "BEGIN {printf \"%.2f\", $b / $a}")"
echo "   DRF gives A 3 cores and B 6 (E1), so cpu.weight is 5000 and 10000: B/A should be 2.00"
echo
echo "== what the kernel holds for each tenant (share mode: guarantees, not caps)"
for t in A B; do
	printf '   %s: cpu.weight %s, memory.low %s bytes (protected from reclaim), memory.max %s\n' "$t" \
		"$(cat "$cg/$t/cpu.weight")" "$(cat "$cg/$t/memory.low")" "$(cat "$cg/$t/memory.max")"
done
echo "   DRF gives A 12G and B 2G of the 18G: the memory each keeps under pressure"
kill "${loops[@]}" 2>/dev/null
wait 2>/dev/null
kill -TERM "$pid"
echo
echo "drfd stopped; the limits stay in place in $cg until drfd runs again or the"
echo "cgroups are removed (rmdir $cg/A $cg/B $cg)."
