#!/usr/bin/env bash
# drfctl's help, version, and status without a daemon, on the host that runs
# the tests. status against a running drfd is tested in the VM (tests/vm).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
drfctl=${DRFCTL:?set DRFCTL to the drfctl binary}
drfd=${DRFD:?set DRFD to the drfd binary}
pass=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { failed=$((failed + 1)); echo "FAIL $1"; cat "$tmp/out" "$tmp/err" 2>/dev/null; }
ex=$top/deploy/examples/drfd.conf

for cmd in plan status exec submit tasks cancel help; do
	"$drfctl" help "$cmd" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	"$drfctl" "$cmd" --help >"$tmp/out2" 2>&1
	rc2=$?
	[ "$cmd" = help ] && rc2=0 && cp "$tmp/out" "$tmp/out2"
	if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && head -1 "$tmp/out" | grep -q "^usage: drfctl $cmd" &&
		cmp -s "$tmp/out" "$tmp/out2"; then
		ok "drfctl help $cmd and drfctl $cmd --help print the same help"
	else
		ko "drfctl help $cmd (exit $rc, $rc2)"
	fi
done
# The overview (drfctl help, drfctl --help) lists every command, not one.
"$drfctl" help >"$tmp/out" 2>"$tmp/err"
rc=$?
"$drfctl" --help >"$tmp/out2" 2>&1
rc2=$?
n=$(grep -cE '^  drfctl (plan|status|exec|net-reset|help) ' "$tmp/out")
if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && [ "$n" -eq 5 ] && cmp -s "$tmp/out" "$tmp/out2"; then
	ok "drfctl help and drfctl --help list all 5 commands"
else
	ko "drfctl help lists $n of 5 commands (exit $rc, $rc2)"
fi
"$drfctl" help bogus >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 64 ]; then ok "drfctl help of an unknown command exits 64"; else ko "help bogus exit $rc"; fi

"$drfctl" --version >"$tmp/out" 2>"$tmp/err"
rc=$?
"$drfd" --version >"$tmp/out2" 2>&1
rc2=$?
if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && grep -Eq '^drfctl [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out" &&
	grep -Eq '^drfd [0-9]+\.[0-9]+\.[0-9]+$' "$tmp/out2"; then
	ok "--version: $(cat "$tmp/out"), $(cat "$tmp/out2")"
else
	ko "--version (exit $rc, $rc2)"
fi

# No daemon: status says so and falls back to cgroupfs, marked as such.
sock=$tmp/none.sock
"$drfctl" status -c "$ex" --socket "$sock" --json >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
	# This host cannot enforce: status says so as drfd does, and creates nothing.
	if [ $rc -eq 1 ] && grep -q "cannot enforce on this host" "$tmp/err" &&
		[ ! -e /sys/fs/cgroup/drf.slice ]; then
		ok "status without a daemon on a host without cgroup v2: exit 1, says why"
	else
		ko "status without a daemon on a host without cgroup v2 (exit $rc)"
	fi
else
	if python3 -c "import json,sys; sys.exit(json.load(open('$tmp/out'))['source'] != 'cgroupfs')"; then
		ok "status without a daemon: source cgroupfs (exit $rc)"
	else
		ko "status without a daemon (exit $rc)"
	fi
fi


# The task queue's commands: usage errors (64) before asking drfd, and no drfd (1).
tq() { # WANT-EXIT NAME ARGS...
	local want=$1 name=$2 rc
	shift 2
	"$drfctl" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq "$want" ] && { [ "$want" -eq 0 ] || [ -s "$tmp/err" ]; }; then
		ok "$name: exit $rc"
	else
		ko "$name: exit $rc, expected $want"
	fi
}
tq 64 "drfctl submit without a tenant" submit --socket "$sock"
tq 64 "drfctl submit without a command" submit --socket "$sock" A --cpu 1 --
tq 64 "drfctl submit --cpu x" submit --socket "$sock" A --cpu x -- true
tq 64 "drfctl submit --memory -1G" submit --socket "$sock" A --memory -1G -- true
tq 64 "drfctl submit --key with a space" submit --socket "$sock" --key "a b" A -- true
tq 64 "drfctl submit --key empty" submit --socket "$sock" --key "" A -- true
tq 64 "drfctl cancel without an id" cancel --socket "$sock"
tq 64 "drfctl cancel abc" cancel --socket "$sock" abc
tq 64 "drfctl tasks with an argument" tasks --socket "$sock" extra
tq 1 "drfctl submit with no drfd" submit --socket "$sock" A --cpu 0.5 -- true
# Over drfd's request limit (65536 bytes): refused here, before asking (no drfd needed).
tq 2 "drfctl submit of a 70,000-byte command" submit --socket "$sock" A -- sh -c \
	"$(head -c 70000 /dev/zero | tr '\0' x)"
tq 1 "drfctl tasks with no drfd" tasks --socket "$sock"
tq 1 "drfctl cancel with no drfd" cancel --socket "$sock" 1

echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
