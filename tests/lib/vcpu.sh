#!/usr/bin/env bash
# Sourced by tests/lib/premise.sh, tests/vm/seq.sh (in the guest) and
# tests/vm/run.sh (on the host): what a VM's vCPU threads did on the host, read
# from the lines tests/vm/boot.sh's vm_vcpu_waits writes four times a second,
# "NS WAIT0 WAIT1" (host-vcpu: how long each vCPU thread has waited for a host
# CPU) and "NS RUN0 RUN1" (host-vcpu-run: how long each has run on one).

# vcpu_seconds FROM TO: the seconds the vCPU threads ran on the host between two
# host-vcpu-run lines (FROM "boot": since the boot); "?" without FROM or TO (a
# test whose first line was not there yet is not charged the whole boot).
vcpu_seconds() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(b, y, " "); if (a == "boot") a = ""; else if (a == "") n = 0
		if (n < 2 || (a != "" && split(a, x, " ") != n)) { print "?"; exit }
		for (i = 2; i <= n; i++) s += y[i] - x[i]
		printf "%d\n", s / 1e9 + 0.5 }'
}

# In the VM, HOST_VCPU names the file in which the host writes its vCPUs'
# waits: tests/vm/lib.sh sets it, tests/net/net.sh takes it from NET_HOST_VCPU.
# host_vcpu: the host's line of $HOST_VCPU (tests/vm/boot.sh:
# vm_vcpu_waits), "NS WAIT0 WAIT1": its clock and how long each vCPU's thread
# has waited for a host CPU, in nanoseconds; empty when there is none.
host_vcpu() {
	local l=""
	[ -n "${HOST_VCPU:-}" ] && [ -r "$HOST_VCPU" ] && read -r l <"$HOST_VCPU"
	echo "$l"
}
# host_waits FROM TO: between two host_vcpu lines, the largest share of the
# time any vCPU waited for the host ("0.012"); "unknown" without both lines.
# Under TCG that time is charged, in the guest, to whatever ran on the vCPU:
# a window in which the host kept a vCPU waiting did not measure the guest.
host_waits() {
	if [ -z "$1" ] || [ -z "$2" ]; then echo unknown; return; fi
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, x, " "); split(b, y, " "); m = 0
		if (y[1] <= x[1]) { print "unknown"; exit }
		for (i = 2; i <= n; i++) if ((y[i] - x[i]) / (y[1] - x[1]) > m) m = (y[i] - x[i]) / (y[1] - x[1])
		printf "%.3f\n", m }'
}
# host_premise FROM TO [RESULT]: appends to premise when the host kept a vCPU
# waiting over 10% of the window, or when that is not known; sets host_detail
# to the figure either way. With RESULT (a window's exit status, 0 when every
# figure it decides was within bounds), for a result that the host's waits can
# only push towards failing (a lower bound on a rate or pace, an upper bound on
# a CPU share the waits are charged to, an answer's latency): a window that
# passed despite the waits stands, one that failed with them is discarded.
# The bound is measured: in t_cpu's windows on a loaded host, those with waits
# up to 0.107 read within 0.5% of the plan, those from 0.17 up 5.6-11% off (the
# guest charges the waits to whatever ran, in bursts its scheduler does not
# even out within the window).
# shellcheck disable=SC2034 # host_detail is the caller's, for its detail
host_premise() {
	local w
	w=$(host_waits "$1" "$2")
	host_detail="host kept a vCPU waiting $w of the window"
	host_judge "$w" "${3:-}"
}
# host_judge WAITS [RESULT]: host_premise's rule for waits already measured
# (tests/net/net.sh measures them over its samples' window).
host_judge() {
	if [ -n "${2:-}" ] && [ "$2" = 0 ]; then
		return 0
	elif [ "$1" = unknown ]; then
		premise="${premise:+$premise; }the host's vCPU waits are not known (no ${HOST_VCPU:-file of them})"
	elif ! awk -v w="$1" 'BEGIN { exit !(w <= 0.10) }'; then
		premise="${premise:+$premise; }the host kept a vCPU waiting $1 of the window (over 0.10)"
	fi
}
