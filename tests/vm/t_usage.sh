#!/usr/bin/env bash
# The usage probes against the kernel's own counters, on Debian's kernel: drfd
# runs as a daemon; each figure is the difference of two `drfctl status --json`
# snapshots, in which the daemon sampled the probe's counter and the cgroup
# file at the same tick.
# shellcheck disable=SC2317 # the window functions are called by measure (tests/lib/premise.sh)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
modprobe virtio_blk
for _ in $(seq 50); do [ -b /dev/vda ] && break; sleep 0.1; done

diagram <<'DIAGRAM'
drf.slice (share mode; cpu 2, memory 1G, vda read/write 100M/s)   drfd --foreground
 |- A   busy loops, dd (direct, buffered through ext4 + sync)
 '- B   busy loops
expect: on-CPU time (se.sum_exec_runtime) = cpu.stat usage_usec within 2%;
        IO bytes (block_rq_issue) = io.stat within 5%, direct and buffered writes,
        direct reads; run-queue wait of A and B high when both loop on CPU 0
        (over 0.3 s/s), low when each has its own CPU (under 0.1 s/s: the guest's
        own processes and a busy host's TCG make 0.03-0.05); a restart (SIGTERM, SIGKILL) adopts
        the pinned probes: the counts go on, one set of pins; exited tasks leave
        no entries; a recreated cgroup is counted again
DIAGRAM

conf=$work/drfd.conf
sock=$work/drfd.sock
cat >"$conf" <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
interval = 1s
status-socket = $sock
state-dir = $work/state
[capacity]
cpu = 2
memory = 1G
io-device = /dev/vda
io-read-bps = 100M
io-write-bps = 100M
[tenant A]
cpu = 1
memory = 256M
[tenant B]
cpu = 1
memory = 256M
CONF

run_drfd usage-daemon "$conf" "$sock"
sleep 2

# snap FILE: the daemon's status, as JSON.
snap() { "$DRFCTL" status -c "$conf" --socket "$sock" --json >"$1" 2>/dev/null; }
# Waits for the next tick, so that a snapshot sees what just happened.
next_tick() { sleep 1.3; }
# delta A B TENANT COUNTER: B's counter minus A's; fails, printing nothing, if
# either snapshot lacks the tenant or the counter.
pyserve '
import json
def answer(a, b, tenant, ctr):
    def get(path):
        for t in json.load(open(path))["tenants"]:
            if t["name"] == tenant:
                return t["use"]["counters"][ctr]
        raise KeyError(tenant)
    if tenant == "-":  # a top-level figure: last_tick, the seconds of the tick that sampled
        return json.load(open(b))[ctr] - json.load(open(a))[ctr]
    va, vb = get(a), get(b)
    return "nan" if va is None or vb is None else vb - va
'
delta() { ask "$@"; }
# agree GOT WANT TOL: GOT within TOL (fraction) of WANT, and WANT is not 0.
agree() {
	$PY - "$1" "$2" "$3" <<'PY'
import sys
got, want, tol = map(float, sys.argv[1:])
d = abs(got - want) / want if want > 0 else float("inf")
print(f"{got:.0f} vs {want:.0f} ({d * 100:.3f}% apart, limit {tol * 100:.0f}%)")
sys.exit(0 if d <= tol else 1)
PY
}

probes=$(snap "$work/s" && $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["usage"]["probes"], d["usage"]["probes_why"])' "$work/s")
check usage-probes-attached "[ \"\${probes%% *}\" = True ]" "usage.probes: $probes"

# CPU: A loops alone on CPU 0, B on CPU 1; then both on CPU 0. Each window is
# between two of the daemon's ticks: its length is the ticks' last_tick apart,
# not the sleep. The premise of both windows: the host kept neither vCPU
# waiting over 2% of it (premise.sh: host_premise; a vCPU the host holds back makes
# the guest's tasks wait for it, which the probe would count as run-queue
# wait). Of the shared window also: both loops ran on CPU 0 throughout (each
# used at least a third of the window) and CPU 0 did not idle (at most 5%).
cpu_idle() { awk -v c="cpu$1" '$1 == c {print $5; exit}' /proc/stat; }
own_window() {
	local h0 h1 win
	busy "$conf" A 0
	busy "$conf" B 1
	sleep 2
	snap "$work/c0"
	h0=$(host_vcpu)
	sleep 8
	snap "$work/c1"
	h1=$(host_vcpu)
	pkill -f 'while :; do :; done'
	sleep 0.5
	win=$(delta "$work/c0" "$work/c1" - last_tick)
	own_a=$(calc "$(delta "$work/c0" "$work/c1" A runq_wait_ns) / 1e9 / $win" %.4f)
	own_b=$(calc "$(delta "$work/c0" "$work/c1" B runq_wait_ns) / 1e9 / $win" %.4f)
	host_premise "$h0" "$h1"
	holds "$own_a < 0.1 && $own_b < 0.1"
	verdict=$?
	detail="each on its own CPU: A waits $(printf %.4f "$own_a"), B $(printf %.4f "$own_b") s/s over the daemon's window of $(printf %.2f "$win") s; $host_detail"
}
shared_window() {
	local a0 b0 i0 t0 a1 b1 i1 t1 h0 h1 ua ub idle win
	busy "$conf" A 0
	busy "$conf" B 0
	sleep 2
	snap "$work/c2"
	a0=$(cpu_usec drf.slice/A) b0=$(cpu_usec drf.slice/B) i0=$(cpu_idle 0) t0=${EPOCHREALTIME/./} h0=$(host_vcpu)
	sleep 8
	snap "$work/c3"
	a1=$(cpu_usec drf.slice/A) b1=$(cpu_usec drf.slice/B) i1=$(cpu_idle 0) t1=${EPOCHREALTIME/./} h1=$(host_vcpu)
	pkill -f 'while :; do :; done'
	sleep 0.5
	win=$(delta "$work/c2" "$work/c3" - last_tick)
	shr_a=$(calc "$(delta "$work/c2" "$work/c3" A runq_wait_ns) / 1e9 / $win")
	shr_b=$(calc "$(delta "$work/c2" "$work/c3" B runq_wait_ns) / 1e9 / $win")
	ua=$(calc "($a1 - $a0) / ($t1 - $t0)")
	ub=$(calc "($b1 - $b0) / ($t1 - $t0)")
	idle=$(calc "($i1 - $i0) * 1e6 / $(getconf CLK_TCK) / ($t1 - $t0)")
	holds "$ua >= 1 / 3 && $ub >= 1 / 3 && $idle <= 0.05" ||
		premise="A used $ua and B $ub of CPU 0 (each should have at least 1/3), CPU 0 idle $idle (at most 0.05)"
	host_premise "$h0" "$h1"
	holds "$shr_a > 0.3 && $shr_b > 0.3"
	verdict=$?
	detail="both on CPU 0: A waits $(printf %.3f "$shr_a"), B $(printf %.3f "$shr_b") s/s over the daemon's window of $(printf %.2f "$win") s; A used $ua, B $ub of CPU 0, idle $idle; $host_detail"
}
measure runq-wait-low-when-own-cpu 3 own_window
measure runq-wait-rises-when-shared 3 shared_window

# The probes' on-CPU time against cpu.stat, in the last windows measured.
for t in A B; do
	bpf=$(delta "$work/c0" "$work/c1" $t oncpu_ns)
	cg=$(delta "$work/c0" "$work/c1" $t cpu_usage_usec)
	fig=$(agree "$($PY -c "print($bpf / 1000)")" "$cg" 0.02)
	check "oncpu-agrees-$t" "[ $? -eq 0 ]" "$t on-CPU: probe usec vs cpu.stat usage_usec: $fig"
done
fig=$(agree "$($PY -c "print($(delta "$work/c2" "$work/c3" A oncpu_ns) / 1000)")" \
	"$(delta "$work/c2" "$work/c3" A cpu_usage_usec)" 0.02)
check oncpu-agrees-shared-cpu "[ $? -eq 0 ]" "A sharing CPU 0 with B: $fig"

# IO: direct writes and reads on the raw disk, then buffered writes through ext4.
io_check() { # NAME PROBE-COUNTER IOSTAT-COUNTER COMMAND...
	local name=$1 pc=$2 ic=$3 b i fig
	shift 3
	snap "$work/i0"
	"$DRFCTL" exec -c "$conf" A -- "$@" >/dev/null 2>&1
	next_tick
	next_tick
	snap "$work/i1"
	b=$(delta "$work/i0" "$work/i1" A "$pc")
	i=$(delta "$work/i0" "$work/i1" A "$ic")
	fig=$(agree "$b" "$i" 0.05)
	check "$name" "[ $? -eq 0 ]" "A's bytes: probe vs io.stat: $fig"
}
io_check io-direct-write-agrees io_wbytes io_stat_wbytes \
	dd if=/dev/zero of=/dev/vda bs=1M count=48 oflag=direct status=none
io_check io-direct-read-agrees io_rbytes io_stat_rbytes \
	dd if=/dev/vda of=/dev/null bs=1M count=48 iflag=direct status=none
mkdir -p /mnt/d
modprobe -q ext4
if mkfs.ext4 -q -F /dev/vda >"$work/mkfs.log" 2>&1 && mount /dev/vda /mnt/d 2>>"$work/mkfs.log"; then
	io_check io-buffered-write-agrees io_wbytes io_stat_wbytes \
		sh -c 'dd if=/dev/zero of=/mnt/d/f bs=1M count=48 status=none && sync'
	umount /mnt/d
else
	result FAIL io-buffered-write-agrees "cannot make or mount ext4 on /dev/vda: $(tail -2 "$work/mkfs.log")"
fi

# Exited tasks leave no entry behind in the probes' task map.
task_entries() { bpftool -j map dump name tasks 2>/dev/null | $PY -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo -1; }
base=$(task_entries)
# shellcheck disable=SC2016 # expanded by the tenant's shell
# Forked, not executed: as many tasks, without an exec each (about 45 ms under TCG).
"$DRFCTL" exec -c "$conf" A -- sh -c 'i=0; while [ $i -lt 1000 ]; do (:); i=$((i + 1)); done'
sleep 1.5
after=$(task_entries)
check tasks-map-no-leak "[ $base -ge 0 ] && [ $after -le \$((base + 20)) ]" \
	"task entries before $base, after 1000 processes ran and exited in A: $after"

# A tenant's cgroup removed and made again (by drfd) is found again: the new cgroup is counted.
rmdir "$CG/drf.slice/A"
for _ in $(seq 50); do [ -d "$CG/drf.slice/A" ] && break; sleep 0.2; done
sleep 2.5
busy "$conf" A 0
sleep 2
snap "$work/g0"
sleep 6
snap "$work/g1"
pkill -f 'while :; do :; done'
fig=$(agree "$($PY -c "print($(delta "$work/g0" "$work/g1" A oncpu_ns) / 1000)")" \
	"$(delta "$work/g0" "$work/g1" A cpu_usage_usec)" 0.02)
check oncpu-agrees-recreated-cgroup "[ $? -eq 0 ]" "A's cgroup recreated: $fig"

# A restart (SIGTERM, then SIGKILL) adopts the pinned probes: counting goes on, one set of pins.
busy "$conf" A 0
restart() { # SIGNAL
	kill -s "$1" "$drfd_pid"
	wait "$drfd_pid" 2>/dev/null
	rm -f "$sock"
	"$DRFD" -c "$conf" --foreground 2>>"$work/drfd.log" &
	drfd_pid=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.2; done
	sleep 2.5
}
for sig in TERM KILL; do
	snap "$work/r0"
	restart $sig
	snap "$work/r1"
	pins=$(find /sys/fs/bpf/drfd-probes -mindepth 2 -printf '%f\n' | sort | tr '\n' ' ')
	npins=$(find /sys/fs/bpf/drfd-probes -mindepth 2 | wc -l)
	adopted=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["usage"]["probes_adopted"])' "$work/r1")
	d=$(delta "$work/r0" "$work/r1" A oncpu_ns)
	dc=$(delta "$work/r0" "$work/r1" A cpu_usage_usec)
	check "restart-$sig-keeps-counting" \
		"[ '$adopted' = True ] && [ $npins -eq 9 ] && $PY -c 'import sys; sys.exit(0 if $d > 0 and abs($d / 1000 - $dc) <= 0.02 * $dc else 1)'" \
		"adopted $adopted; A's on-CPU across the restart $($PY -c "print(round($d / 1e6))") ms, cpu.stat $($PY -c "print(round($dc / 1e3))") ms; pins ($npins): $pins"
done
pkill -f 'while :; do :; done'

kill "$drfd_pid"
wait "$drfd_pid" 2>/dev/null
exit 0
