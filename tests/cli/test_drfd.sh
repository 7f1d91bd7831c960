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
# A start that fails after drfd made its cgroup-root (here a net-device that
# does not exist: exit 7) removes that root; a root that was there before stays.
# Needs root and a cgroup2 mount (any: a network-only config needs no controller).
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ "$(id -u)" -eq 0 ] && [ -n "$mnt" ]; then
	cgroot=$mnt/drfundo$$
	cat >"$tmp/net.conf" <<CONF
[agent]
cgroup-root = $cgroot
state-dir = $tmp/state
status-socket = $tmp/drfd.sock
[capacity]
net-device = drfnosuch$$
net-rate = 100mbit
[tenant a]
net-rate = 10mbit
CONF
	"$drfd" -c "$tmp/net.conf" --foreground >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 7 ] && [ ! -e "$cgroot" ]; then
		ok "a failed start removes the cgroup-root it made (exit 7)"
	else
		ko "a failed start removes the cgroup-root it made (exit $rc; $(ls -d "$cgroot" 2>&1))"
	fi
	mkdir "$cgroot"
	"$drfd" -c "$tmp/net.conf" --foreground >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 7 ] && [ -d "$cgroot" ]; then
		ok "a failed start keeps a cgroup-root that was there before (exit 7)"
	else
		ko "a failed start keeps a cgroup-root that was there before (exit $rc)"
	fi
	rmdir "$cgroot" 2>/dev/null
elif [ "${CI:-}" = true ]; then
	ko "a failed start removes the cgroup-root it made: needs root and a cgroup2 mount, which CI must have"
else
	echo "SKIP a failed start removes the cgroup-root it made: needs root and a cgroup2 mount"
fi

echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
