#!/usr/bin/env bash
# drfd on the host that runs the tests: usage and config errors, a dry run,
# and, on a host without cgroup v2 (like the machines this project is built on),
# exit 3 with the reason. Enforcement itself is tested in the VM (tests/vm).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
drfd=${DRFD:?set DRFD to the drfd binary}
pass=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { failed=$((failed + 1)); echo "FAIL $1"; cat "$tmp/out" "$tmp/err"; }
ex=$top/deploy/examples/drfd.conf

"$drfd" --bogus >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 64 ]; then ok "unknown option exits 64"; else ko "unknown option exits 64 (exit $rc)"; fi

"$drfd" -c "$here/fixtures/bad.conf" --once >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "bad.conf:4: weight = '0'" "$tmp/err"; then
	ok "config error exits 2 with FILE:LINE"
else
	ko "config error exits 2 with FILE:LINE (exit $rc)"
fi

# A config that cannot be read is a config error too, as for drfctl plan.
"$drfd" -c "$tmp/no-such.conf" --once >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ]; then ok "a missing config exits 2"; else ko "a missing config exits 2 (exit $rc)"; fi

"$drfd" -c "$ex" --dry-run >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "^write /sys/fs/cgroup/drf.slice/A/cpu.weight 5000$" "$tmp/out" &&
	grep -q "^write /sys/fs/cgroup/drf.slice/B/cpu.weight 10000$" "$tmp/out"; then
	ok "dry run prints the writes (A cpu.weight 5000, B 10000)"
else
	ko "dry run prints the writes (exit $rc)"
fi

if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
	"$drfd" -c "$ex" --once >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 3 ] && grep -q "is not on a cgroup v2 mount" "$tmp/err" &&
		grep -q "systemd.unified_cgroup_hierarchy=1" "$tmp/err"; then
		ok "no cgroup v2 here: exit 3 saying why and what to do"
	else
		ko "no cgroup v2 here: exit 3 (exit $rc)"
	fi
	if [ ! -e /sys/fs/cgroup/drf.slice ]; then
		ok "nothing created on a host it cannot enforce"
	else
		ko "nothing created on a host it cannot enforce"
	fi
else
	echo "SKIP exit 3 on a host without cgroup v2: this host has cgroup v2 (covered in tests/vm)"
fi
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
