#!/usr/bin/env bash
# Real-kernel tests: boots Debian's kernel under QEMU (TCG) once per test, with
# the host's root read-only over 9p (so the guest runs this very build), and
# reads PASS/FAIL/SKIP lines back from a writable 9p export. See
# the README (tests/vm).
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

pass=0 failed=0 skipped=0
for t in "${tests[@]}"; do
	res=$out/results/$t
	rm -rf "$res"
	mkdir -p "$res"
	disk=$out/$t.img
	rm -f "$disk"
	truncate -s 256M "$disk"
	start=$(date +%s)
	vm_boot "$here/$t.sh" "$res" "$build" "$disk"
	qrc=$?
	# A guest kernel that locked up before the test wrote any result (seen once
	# in t_net, under TCG): said loudly, its log kept, and the test run once more.
	if [ ! -f "$res/results.txt" ] && grep -qE 'soft lockup|detected stalls' "$res/serial.log" 2>/dev/null; then
		echo "RETRY $t: the guest kernel locked up before any result (qemu exit $qrc); its log is in $res.hung:"
		grep -E 'soft lockup|detected stalls' "$res/serial.log" | head -n 4 | sed 's/^/    /'
		rm -rf "$res.hung"
		mv "$res" "$res.hung"
		mkdir -p "$res"
		rm -f "$disk"
		truncate -s 256M "$disk"
		start=$(date +%s)
		vm_boot "$here/$t.sh" "$res" "$build" "$disk"
		qrc=$?
	fi
	rm -f "$disk"
	echo "=== $t ($(($(date +%s) - start)) s in the VM)"
	[ -f "$res/diagram.txt" ] && sed 's/^/    /' "$res/diagram.txt"
	if [ ! -f "$res/results.txt" ]; then
		echo "FAIL $t: the VM produced no results (qemu exit $qrc); its console:"
		tail -n 30 "$res/console.log" "$res/serial.log" 2>/dev/null | sed 's/^/    /'
		failed=$((failed + 1))
		continue
	fi
	while IFS= read -r line; do
		echo "$line"
		case $line in
		PASS*) pass=$((pass + 1)) ;;
		FAIL*) failed=$((failed + 1)) ;;
		SKIP*) skipped=$((skipped + 1)) ;;
		esac
	done <"$res/results.txt"
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
echo "$pass passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
