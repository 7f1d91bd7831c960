#!/usr/bin/env bash
# Runs several VM tests in one boot (tests/vm/run.sh names them in drf.tests=,
# comma-separated): each test's output, exit status and time go to
# /mnt/results/TEST/ (console.log, exit-status, seconds), its results there too
# (lib.sh's R, from DRF_RESULTS). Between two tests the guest is put back as a
# boot left it: every process the test left is killed, every cgroup removed,
# every mount it made (cgroup2, bpffs, ext4 on the disk, binds) undone, network
# namespaces and loopback's qdiscs deleted, drfd's runtime and state folders
# emptied, the page cache dropped. A test that hangs is stopped after
# DRF_TEST_TIMEOUT seconds (default 900) and the next one runs.
set -u
IFS=, read -r -a tests <<<"${DRF_TESTS:?}"
top=${DRF_TOP:?}
limit=${DRF_TEST_TIMEOUT:-900}

# The mounts of a fresh boot: the first base lines of the mount table (a mount
# is added at its end, so those after them are the tests', over a boot's path or
# not).
base=$(wc -l </proc/self/mounts)

# unmount_test_mounts [KEEP]: the tests' mounts, the last made first, but KEEP.
unmount_test_mounts() {
	local m
	for m in $(awk -v n="$base" 'NR > n {print $2}' /proc/self/mounts | tac); do
		m=$(printf '%b' "$m") # /proc/mounts writes a space as \040
		[ "$m" = "${1:-}" ] && continue
		umount -l "$m" 2>/dev/null || echo "seq: cannot unmount $m" >&2
	done
}

# Kills every process but the kernel's threads, PID 1 and this script.
kill_all() {
	local p pid ppid rest round
	for round in 1 2 3 4 5 6 7 8 9 10; do
		local left=0
		for p in /proc/[0-9]*; do
			pid=${p#/proc/}
			[ "$pid" = 1 ] || [ "$pid" = 2 ] || [ "$pid" = $$ ] && continue
			read -r _ rest <"$p/stat" 2>/dev/null || continue
			# stat's fields after "(comm)": state, ppid
			rest=${rest##*) }
			ppid=${rest#* }
			ppid=${ppid%% *}
			[ "$ppid" = 2 ] && continue
			[ "${rest%% *}" = Z ] && continue
			kill -9 "$pid" 2>/dev/null && left=$((left + 1))
		done
		[ "$left" -eq 0 ] && return 0
		[ "$round" -lt 10 ] && sleep 0.2
	done
	echo "seq: processes left after 10 rounds of SIGKILL" >&2
}

reset_guest() {
	local left
	kill_all
	# the mounts the test made but cgroup2 (a mount over a cgroup keeps it),
	# then the cgroups, deepest first (a killed task leaves its cgroup at
	# once), then cgroup2
	unmount_test_mounts /sys/fs/cgroup
	for _ in $(seq 50); do
		mountpoint -q /sys/fs/cgroup || break
		find /sys/fs/cgroup -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
		left=$(find /sys/fs/cgroup -mindepth 1 -type d | head -n 3)
		[ -z "$left" ] && break
		sleep 0.2
	done
	[ -n "${left:-}" ] && echo "seq: cgroups left for the next test: $left" >&2
	unmount_test_mounts
	ip -all netns delete 2>/dev/null
	tc qdisc del dev lo root 2>/dev/null
	tc qdisc del dev lo clsact 2>/dev/null
	tc qdisc del dev lo ingress 2>/dev/null
	rm -rf /run/drfd /run/drfd.* /var/lib/drfd /var/tmp/outside
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# vcpu_seconds: what a test's vCPUs cost the host
# shellcheck source=tests/lib/vcpu.sh
. "$top/tests/lib/vcpu.sh"

for t in "${tests[@]}"; do
	res=/mnt/results/$t
	mkdir -p "$res"
	echo "seq: $t"
	start=$(cut -d' ' -f1 /proc/uptime)
	run0=$(cat /mnt/results/host-vcpu-run 2>/dev/null)
	DRF_RESULTS=$res DRF_SCRIPT=$top/tests/vm/$t.sh \
		timeout -k 10 "$limit" /bin/bash "$top/tests/vm/$t.sh" >"$res/console.log" 2>&1
	echo "$?" >"$res/exit-status"
	end=$(cut -d' ' -f1 /proc/uptime)
	awk -v a="$start" -v b="$end" 'BEGIN { printf "%d\n", b - a + 0.5 }' >"$res/seconds"
	# what its vCPUs cost the host's CPUs, in seconds (boot.sh: vm_vcpu_waits)
	vcpu_seconds "$run0" "$(cat /mnt/results/host-vcpu-run 2>/dev/null)" >"$res/host-cpu"
	reset_guest
done
sync
