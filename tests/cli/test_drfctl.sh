#!/usr/bin/env bash
# drfctl's help, version, and status without a daemon, on the host that runs
# the tests; status against a fake drfd's canned answers (whole, cut short,
# failed, asked again). status against a running drfd is tested in the VM
# (tests/vm).
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
# No config at the default path (a checkout's first try): exit 2, and the
# error says how to name one. Where the default exists (drfd installed), root
# hides its folder under a tmpfs in a mount namespace of its own.
def=$("$drfctl" help plan | sed -n 's/.*main config file (default \([^)]*\)).*/\1/p' | head -1)
if [ ! -e "$def" ]; then
	"$drfctl" plan >"$tmp/out" 2>"$tmp/err"
	rc=$?
elif [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
	# shellcheck disable=SC2016 # the inner shell expands them
	unshare -m sh -c 'mount -t tmpfs none "$(dirname "$1")" && exec "$0" plan' "$drfctl" "$def" \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
else
	rc=skip
fi
if [ "$rc" = skip ]; then
	echo "SKIP drfctl plan without a config: $def exists and only root can hide it"
elif [ "$rc" = 2 ] && grep -q -- "-c FILE" "$tmp/err"; then
	ok "drfctl plan with no $def: exit 2, naming -c FILE"
else
	ko "drfctl plan with no $def: exit $rc"
fi
# Typos: one line, exit 64, naming the nearest command or option; options
# before the command (-c FILE) are the command's.
one_line() { # NAME WANT ARGS...: exit 64 and one line on stderr that names WANT
	local name=$1 want=$2 rc
	shift 2
	"$drfctl" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 64 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF -- "'$want'" "$tmp/err" &&
		[ ! -s "$tmp/out" ]; then
		ok "$name: exit 64, one line naming '$want'"
	else
		ko "$name: exit $rc, $(wc -l <"$tmp/err") lines"
	fi
}
one_line "drfctl plna" plan plna
one_line "drfctl plan --jsn" --json plan --jsn -c "$ex"
one_line "drfctl plan --bogus" --bogus plan --bogus -c "$ex"
one_line "drfctl plan -c (no value)" -c plan -c
one_line "drfctl fleet plan --comapre" --compare fleet plan --comapre -c "$top/deploy/examples/fleet.conf"
one_line "drfctl status --sokcet" --socket status --sokcet x
"$drfctl" plan -c "$ex" >"$tmp/want" 2>&1
for args in "-c $ex plan" "--config $ex plan" "--config=$ex plan" "-c$ex plan"; do
	# shellcheck disable=SC2086 # the words are the arguments
	"$drfctl" $args >"$tmp/out" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/want"; then
		ok "drfctl ${args/$ex/FILE}: the same as drfctl plan -c FILE"
	else
		ko "drfctl ${args/$ex/FILE}: exit $rc"
	fi
done
one_line "drfctl -x plan" -x -x plan
"$drfctl" fleet plan -c "$top/deploy/examples/fleet.conf" >"$tmp/want" 2>&1
"$drfctl" -c "$top/deploy/examples/fleet.conf" fleet plan >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/want"; then
	ok "drfctl -c FLEET fleet plan: the same as drfctl fleet plan -c FLEET"
else
	ko "drfctl -c FLEET fleet plan: exit $rc"
fi
# Within 100 columns: every help, and the comparisons on the examples.
wide=
for c in "" plan fleet reload status exec net-reset top recommend submit tasks cancel help; do
	# shellcheck disable=SC2086 # "" is the overview
	w=$("$drfctl" help $c | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
	[ "$w" -le 100 ] || wide="$wide help${c:+ $c}:$w"
done
w=$("$drfctl" plan --compare -c "$top/deploy/examples/ten-tenants/drfd.conf" | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
[ "$w" -gt 0 ] && [ "$w" -le 100 ] || wide="$wide plan-compare:$w"
w=$("$drfctl" fleet plan --compare -c "$top/deploy/examples/fleet.conf" | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
[ "$w" -gt 0 ] && [ "$w" -le 100 ] || wide="$wide fleet-plan-compare:$w"
if [ -z "$wide" ]; then
	ok "every help and the examples' --compare within 100 columns"
else
	ko "wider than 100 columns (or empty):$wide"
fi
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
# No daemon, a tenant the config does not have: said before cgroupfs is read.
"$drfctl" status -c "$ex" --socket "$sock" nosuch >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && grep -qF "'nosuch'" "$tmp/err"; then
	ok "status of an unknown tenant without a daemon: exit 1, says so"
else
	ko "status nosuch without a daemon (exit $rc)"
fi

# drfctl status against a drfd that answers what the test says (a fake on a
# socket of its own, one canned answer a connection): only a whole status
# (drfd-status 2, the body, the end line) is printed; one cut before its end
# line, one that ends in an error, or an older drfd's prints nothing on stdout
# and exits 1; a status whose plan changed while it was sent is asked again (3
# more times at most); an unknown tenant is said.
fake=$tmp/fake.sock
# serve ANSWER-FILE...: a fake drfd in the background that answers the files in
# turn, a connection each, and writes the requests it got to $tmp/requests.
serve() {
	rm -f "$fake" "$tmp/requests"
	python3 - "$fake" "$tmp/requests" "$@" <<'PY' &
import os, socket, sys
path, log, answers = sys.argv[1], sys.argv[2], sys.argv[3:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(4)
s.settimeout(20)
with open(log, "w") as out:
    for a in answers:
        try:
            c, _ = s.accept()
        except socket.timeout:
            break
        req = b""
        while not req.endswith(b"\n"):
            d = c.recv(4096)
            if not d:
                break
            req += d
        out.write(req.decode(errors="replace"))
        out.flush()
        with open(a, "rb") as f:
            data = f.read()
        # A slow drfd's status: in three parts, 6 s apart (12 s in all, longer than
        # drfctl's 10 s for a part).
        parts = [data[:len(data) // 3], data[len(data) // 3:2 * len(data) // 3],
                 data[2 * len(data) // 3:]] if a.endswith(".slow") else [data]
        for i, part in enumerate(parts):
            if i:
                import time
                time.sleep(6)
            c.sendall(part)
        c.close()
PY
	server=$!
	for _ in $(seq 100); do [ -S "$fake" ] && return; sleep 0.05; done
}
# ended: the fake is done (all its answers taken, or given up on).
ended() {
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
}
body='{"source":"daemon","pid":1,"tenants":[{"name":"a","usage":{"processes":2}}]}'
printf 'drfd-status 2\n%s\ndrfd-status-end problems=0\n' "$body" >"$tmp/whole"
printf 'drfd-status 2\n%s\ndrfd-status-end problems=2\n' "$body" >"$tmp/problems"
printf 'drfd-status 2\n%s' "${body:0:40}" >"$tmp/cut"
printf 'drfd-status 2\n%s\ndrfd-status-end error=changed\n' "${body:0:40}" >"$tmp/changed"
printf 'drfd-status 2\n%s\ndrfd-status-end error=enomem\n' "${body:0:40}" >"$tmp/failed"
printf 'drfd-status 2 error=no-such-tenant\n' >"$tmp/nosuch"
printf 'drfd-status 1 problems=0\n%s\n' "$body" >"$tmp/old"
: >"$tmp/empty"
# st NAME WANT-EXIT WANT-STDOUT-FILE|- WANT-REQUESTS STDERR-HAS ANSWER... -- ARGS...:
# STDERR-HAS is a string stderr must hold (the facts, not the wording), "" none.
st() {
	local name=$1 want=$2 out=$3 nreq=$4 pat=$5 rc got
	local -a answers=()
	shift 5
	while [ "$1" != -- ]; do answers+=("$tmp/$1"); shift; done
	shift
	serve "${answers[@]}"
	"$drfctl" status --socket "$fake" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	ended
	got=$(grep -c . "$tmp/requests" 2>/dev/null)
	if [ $rc -eq "$want" ] && [ "$got" = "$nreq" ] &&
		{ [ -z "$pat" ] || grep -qF -- "$pat" "$tmp/err"; } &&
		{ { [ "$out" = - ] && [ ! -s "$tmp/out" ]; } ||
			{ [ "$out" != - ] && cmp -s "$tmp/out" "$out"; }; }; then
		ok "$name: exit $rc, $got requests"
	else
		ko "$name: exit $rc (expected $want), $got requests (expected $nreq)"
	fi
}
echo "$body" >"$tmp/body"
st "status whole" 0 "$tmp/body" 1 "" whole -- --json
st "status whole with problems" 3 "$tmp/body" 1 "" problems -- --json
# A host too busy to send it all within drfctl's 10 s: each part within them is enough.
cp "$tmp/whole" "$tmp/whole.slow"
st "status in parts over 12 s, each within 10 s: whole" 0 "$tmp/body" 1 "" whole.slow -- --json
# Named: the socket, and how many bytes came (14 + 40).
st "status cut before its end line: nothing shown" 1 - 1 "$fake" cut -- --json
if grep -qw 54 "$tmp/err"; then ok "the cut answer's bytes said"; else ko "no byte count said"; fi
st "status ending in an error: nothing shown" 1 - 1 "enomem" failed -- --json
st "status closed before its first line: nothing shown" 1 - 1 "$fake" empty -- --json
st "status whose plan changed twice: asked again" 0 "$tmp/body" 3 "" changed changed whole -- --json
st "status whose plan changed 4 times: nothing shown" 1 - 4 "" \
	changed changed changed changed whole -- --json
st "status of an unknown tenant" 1 - 1 "'nosuch'" nosuch -- nosuch
st "status of an older drfd: nothing shown" 1 - 1 "" old -- --json
serve "$tmp/nosuch"
"$drfctl" status --socket "$fake" --json web >"$tmp/out" 2>"$tmp/err"
ended
if [ "$(cat "$tmp/requests")" = "status json web" ]; then
	ok "drfctl status --json TENANT asks 'status json TENANT'"
else
	ko "drfctl status --json TENANT asked '$(cat "$tmp/requests")'"
fi
"$drfctl" status --socket "$fake" 'a b' >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 64 ] && [ ! -s "$tmp/out" ]; then
	ok "status of a name no tenant can have: exit 64"
else
	ko "status 'a b': exit $rc"
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
