#!/usr/bin/env bash
# Real-kernel tests: boots Debian's kernel under QEMU (TCG), with
# the host's root read-only over 9p (so the guest runs this very build), and
# reads PASS/FAIL/SKIP lines back from a writable 9p export. See
# tests/README.md.
#   tests/vm/run.sh BUILD_DIR [TEST...]     (TEST: t_NAME, default all)
# On a host that cannot boot the VM every test is a loud SKIP, except under
# CI=true, where that is a failure: CI must run these tests.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR [TEST...]}" && pwd)
shift
out=$top/.output/vm
mkdir -p "$out"

tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
	for f in "$here"/t_*.sh; do tests+=("$(basename "$f" .sh)"); done
fi

cannot() {
	echo "SKIP: the real-kernel VM tests cannot run here: $1" >&2
	echo "SKIP: ${#tests[@]} VM tests (${tests[*]}) did not run" >&2
	if [ "${CI:-}" = true ]; then
		echo "FAIL: CI must run the VM tests" >&2
		echo "0 passed, ${#tests[@]} failed"
		exit 1
	fi
	echo "0 passed, 0 failed, ${#tests[@]} skipped"
	exit 0
}

# shellcheck source=tests/vm/boot.sh
. "$here/boot.sh"
vm_prepare "$out" || cannot "$VM_WHY"

# A test with a line "# vm-mode: systemd" or "# vm-drive: ..." boots alone; the
# others share one boot (tests/vm/seq.sh runs them in turn and puts the guest
# back as a boot left it between two): each boot costs about 15 s under TCG.
alone() { grep -qE '^# vm-(mode: systemd|drive: )' "$here/$1.sh"; }

fresh_disk() { rm -f "$1" && truncate -s 256M "$1"; }

# A guest kernel that locked up (seen once in t_net, under TCG) is said loudly,
# its log kept; the tests it left without a result run once more, alone.
locked_up() { grep -qE 'soft lockup|detected stalls' "$1/serial.log" 2>/dev/null; }

# boot_alone TEST: TEST in a boot of its own, results in $out/results/TEST.
boot_alone() {
	local t=$1 res=$out/results/$1 disk=$out/$1.img start qrc
	rm -rf "$res"
	mkdir -p "$res"
	fresh_disk "$disk"
	start=$(date +%s)
	vm_boot "$here/$t.sh" "$res" "$build" "$disk" "${VM_LIMIT:-900}"
	qrc=$?
	if [ ! -f "$res/results.txt" ] && locked_up "$res"; then
		echo "RETRY $t: the guest kernel locked up before any result (qemu exit $qrc); its log is in $res.hung:"
		grep -E 'soft lockup|detected stalls' "$res/serial.log" | head -n 4 | sed 's/^/    /'
		rm -rf "$res.hung"
		mv "$res" "$res.hung"
		mkdir -p "$res"
		fresh_disk "$disk"
		start=$(date +%s)
		vm_boot "$here/$t.sh" "$res" "$build" "$disk" "${VM_LIMIT:-900}"
		qrc=$?
	fi
	rm -f "$disk"
	echo "$qrc" >"$res/qemu-exit"
	echo $(($(date +%s) - start)) >"$res/seconds"
	boot_seconds "$res" >"$res/host-cpu"
}

# boot_seconds RES: the seconds a whole boot's vCPU threads ran on the host's
# CPUs (the line boot.sh's vm_vcpu_waits wrote last), or "?".
# shellcheck source=tests/lib/vcpu.sh
. "$here/../lib/vcpu.sh"
boot_seconds() { vcpu_seconds boot "$(cat "$1/host-vcpu-run" 2>/dev/null)"; }

shared=()
for t in "${tests[@]}"; do alone "$t" || shared+=("$t"); done
# Each VM measures, and takes the host's CPUs for itself: it runs under
# VM_NICE=-19, in a session and an autogroup of its own at that niceness
# (boot.sh), so that a build or a CPU hog at the usual priority gets about 1% of
# what it asks while the VM runs (autogroup weights: 71755 at -19, 1024 at 0);
# what a busy host still takes, the tests' premises notice (host_premise in
# tests/lib/vcpu.sh). The VMs boot one after another: on two cores a second
# VM's vCPUs take what the first one's measurements need. (CI, with systemd's
# VM beside the shared boot: a loop's use read while the host held its vCPU
# back 10% of the window; with t_scale beside it, t_cpu's hierarchical split
# 13% off; the VM that yielded, starved, took 1-6 s a loop turn and failed
# steady-minute-quiet. A test that drives a throttled disk, t_ioweight, whose
# guest mostly waits for that disk, read BFQ's split 12% off beside the shared
# boot's busy loops even a notch above them, -20 to -19; our guess: BFQ idles
# 8 ms for a reader's next request, and a vCPU that wakes late loses the reader
# its turn.) First the tests that drive a disk (vm-drive), then the shared
# boot, the systemd-mode tests, and a test marked "# vm-order: last" (t_scale).
drive=() sysd=() after=()
for t in "${tests[@]}"; do
	if grep -q '^# vm-order: last' "$here/$t.sh"; then
		after+=("$t")
	elif grep -q '^# vm-drive: ' "$here/$t.sh"; then
		drive+=("$t")
	elif alone "$t"; then
		sysd+=("$t")
	fi
done
for t in "${drive[@]}"; do VM_NICE=-19 boot_alone "$t"; done
if [ ${#shared[@]} -gt 0 ]; then
	grp=$out/results/shared-boot disk=$out/shared-boot.img
	rm -rf "$grp"
	mkdir -p "$grp"
	for t in "${shared[@]}"; do rm -rf "$out/results/$t"; done
	fresh_disk "$disk"
	start=$(date +%s)
	VM_NICE=-19 vm_boot "$here/seq.sh" "$grp" "$build" "$disk" $((900 * ${#shared[@]} + 300)) \
		"drf.tests=$(IFS=,; echo "${shared[*]}")" &
	qpid=$!
	# The guest stops a test after 900 s; a guest that ends none for longer
	# (its kernel locked up) is stopped, and what it left is said below.
	ended=0 last=$(date +%s)
	while kill -0 "$qpid" 2>/dev/null; do
		sleep 5
		n=$(find "$grp" -mindepth 2 -maxdepth 2 -name exit-status | wc -l)
		[ "$n" -ne "$ended" ] && ended=$n last=$(date +%s)
		if [ $(($(date +%s) - last)) -gt 1020 ]; then
			echo "STOP: no test ended in the shared boot for 1020 s: qemu stopped"
			pkill -TERM -P "$qpid"
			break
		fi
	done
	wait "$qpid"
	qrc=$?
	rm -f "$disk"
	echo "=== one boot for ${#shared[@]} tests: $(($(date +%s) - start)) s, its vCPUs $(boot_seconds "$grp") s on the host's CPUs (qemu exit $qrc)"
	hung=$(locked_up "$grp" && echo yes)
	[ -n "$hung" ] && { echo "the guest kernel locked up in the shared boot; its log is in $grp:"; \
		grep -E 'soft lockup|detected stalls' "$grp/serial.log" | head -n 4 | sed 's/^/    /'; }
	for t in "${shared[@]}"; do
		if [ -d "$grp/$t" ]; then
			mv "$grp/$t" "$out/results/$t"
		else
			mkdir -p "$out/results/$t"
		fi
		res=$out/results/$t
		echo "$qrc" >"$res/qemu-exit"
		if [ ! -f "$res/exit-status" ] && [ -n "$hung" ]; then
			echo "RETRY $t: it did not end in the shared boot, which locked up"
			boot_alone "$t"
		fi
	done
fi
for t in "${sysd[@]}" "${after[@]}"; do VM_NICE=-19 VM_LIMIT=1800 boot_alone "$t"; done

pass=0 failed=0 skipped=0 discarded=0
for t in "${tests[@]}"; do
	res=$out/results/$t
	echo "=== $t ($(cat "$res/seconds" 2>/dev/null || echo ?) s in the VM, its vCPUs $(cat "$res/host-cpu" 2>/dev/null || echo ?) s on the host's CPUs)"
	[ -f "$res/diagram.txt" ] && sed 's/^/    /' "$res/diagram.txt"
	if [ ! -f "$res/results.txt" ]; then
		echo "FAIL $t: the VM produced no results (qemu exit $(cat "$res/qemu-exit" 2>/dev/null)); its console:"
		tail -n 30 "$res/console.log" "$res/serial.log" 2>/dev/null | sed 's/^/    /'
		if ! alone "$t"; then
			echo "    the shared boot's console:"
			tail -n 30 "$grp/console.log" "$grp/serial.log" 2>/dev/null | sed 's/^/    /'
		fi
		failed=$((failed + 1))
		continue
	fi
	while IFS= read -r line; do
		echo "$line"
		case $line in
		PASS*) pass=$((pass + 1)) ;;
		FAIL*) failed=$((failed + 1)) ;;
		SKIP*) skipped=$((skipped + 1)) ;;
		DISCARD*) discarded=$((discarded + 1)) ;;
		esac
	done <"$res/results.txt"
	[ -s "$res/times.txt" ] && echo "    seconds at each result: $(awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }' "$res/times.txt")"
	if [ "$(cat "$res/exit-status" 2>/dev/null)" != 0 ]; then
		echo "FAIL $t: the test script did not finish cleanly; its console:"
		tail -n 30 "$res/console.log" | sed 's/^/    /'
		failed=$((failed + 1))
	fi
done
if [ "$skipped" -gt 0 ] && [ "${CI:-}" = true ]; then
	echo "FAIL: $skipped VM tests skipped inside the VM; CI must run them all"
	failed=$((failed + skipped))
fi
# A window whose premise failed was measured again (tests/lib/premise.sh): said, not counted.
[ "$discarded" -eq 0 ] || echo "$discarded measuring windows discarded, their premise not held (DISCARD lines above)"
echo "$pass passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
