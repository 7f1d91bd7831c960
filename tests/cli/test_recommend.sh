#!/usr/bin/env bash
# drfctl recommend on a recorded history (fixtures/history-recommend.tsv with
# fixtures/recommend.conf): the percentiles, over-provisioning and suggestions
# worked out by hand in the fixture's comments; windows, one tenant, a history
# split by rotation, torn and bad lines; exit codes: 1 no or bad history,
# 2 config error or unknown tenant, 64 usage error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
drfctl=${DRFCTL:?set DRFCTL to the drfctl binary}
fix=$here/fixtures
conf=$fix/recommend.conf
hist=$fix/history-recommend.tsv
check=$here/check_recommend.py
pass=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { failed=$((failed + 1)); echo "FAIL $1"; }

# expect NAME STATUS CMD...: runs CMD, compares its exit status
expect() {
	local name=$1 want=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	if [ "$got" -eq "$want" ]; then ok "$name"; else ko "$name (exit $got, expected $want)"; cat "$tmp/err"; fi
}

# checks NAME ARGS...: the last output against check_recommend.py
checks() {
	local name=$1
	shift
	if python3 "$check" "$@" <"$tmp/out" 2>"$tmp/cerr"; then ok "$name"; else ko "$name"; cat "$tmp/cerr"; fi
}

M=1048576
G=1073741824
# 2.9G, 3.6G as the config reads them
g29=$(python3 -c "print(repr(2.9 * $G))")
g36=$(python3 -c "print(repr(3.6 * $G))")

expect "recommend --json runs" 0 "$drfctl" recommend -c "$conf" --history "$hist" --json
checks "web: p50, p95, peak, over, suggested (hand-computed)" \
	.records=40 .step_s=60 .window_s=604800 .from=1763856060 .to=1763857200 .skipped_lines=0 \
	web.samples=20 web.advice=true web.model='"demand"' \
	web.cpu.declared=4 web.cpu.p50=1.25 web.cpu.p95=2.5 web.cpu.peak=3.5 web.cpu.over=0.375 \
	web.cpu.suggested=3 \
	web.memory.declared=$((8 * G)) web.memory.p50=$((1600 * M)) web.memory.p95=$((2176 * M)) \
	web.memory.peak=$((2368 * M)) web.memory.over=0.734375 web.memory.suggested="$g29" \
	web.snippet='"[tenant web]\nweight = 2\ncpu = 3\nmemory = 2.9G\n"'
checks "batch (tasks): percentiles, suggested tasks" \
	batch.model='"tasks"' batch.samples=12 batch.cpu.declared=4 batch.cpu.p50=2 \
	batch.cpu.p95=3.5 batch.cpu.over=0.125 batch.cpu.suggested=4.2 \
	batch.memory.declared=$((8 * G)) batch.memory.p50=$((3 * G)) batch.memory.p95=$((3 * G)) \
	batch.memory.peak=$((7 * G / 2)) batch.memory.over=0.625 batch.memory.suggested="$g36" \
	batch.tasks=5 \
	batch.snippet='"[tenant batch]\ntask-cpu = 1\ntask-memory = 2G\ntasks = 5\n"'
checks "too little history: no advice; no history; not in the config" \
	short.samples=5 short.advice=false short.cpu.p50=0.25 short.cpu.p95=0.5 \
	short.cpu.suggested=null short.snippet=null short.memory.declared=$((16 * G)) \
	short.memory.declared_explicitly=false \
	idle.samples=0 idle.advice=false idle.cpu.p50=null idle.cpu.suggested=null \
	idle.snippet=null '!ghost' '~ghost=3'

expect "--window 10m" 0 "$drfctl" recommend -c "$conf" --history "$hist" --window 10m --json
# the window: times after 1763857200 - 600, the newest record minus 10 minutes
checks "--window 10m: the last 10 minutes only" \
	.window_s=600 .from=$((1763857200 - 600 + 1)) web.samples=10 web.cpu.p50=1.75 web.cpu.p95=3.5 \
	web.cpu.suggested=4.2 batch.samples=10 batch.cpu.p50=2 batch.cpu.p95=3.5 '~ghost=null'
expect "--window all" 0 "$drfctl" recommend -c "$conf" --history "$hist" --window all --json
checks "--window all: every record" .window_s=null web.samples=20 '~ghost=3'

expect "one tenant" 0 "$drfctl" recommend -c "$conf" --history "$hist" web --json
checks "one tenant: only it" web.cpu.p95=2.5 '!batch' '!short' '~ghost=null'

expect "text output" 0 "$drfctl" recommend -c "$conf" --history "$hist"
if grep -qx 'memory = 2.9G' "$tmp/out" && grep -qx 'tasks = 5' "$tmp/out" &&
	grep -Eq '^  cpu +4 +1\.250 +2\.500 +3\.500 +38% +3$' "$tmp/out"; then
	ok "text output: the table and the snippets"
else
	ko "text output"; cat "$tmp/out"
fi

# The snippet is a tenants.d section the config takes: web's replaces web's.
mkdir -p "$tmp/conf/tenants.d"
sed '/^\[tenant web\]/,/^$/d' "$conf" >"$tmp/conf/drfd.conf"
"$drfctl" recommend -c "$conf" --history "$hist" web --json |
	python3 -c 'import json,sys; sys.stdout.write(json.load(sys.stdin)["tenants"][0]["snippet"])' \
		>"$tmp/conf/tenants.d/web.conf"
expect "the snippet loads as a tenants.d file" 0 "$drfctl" plan -c "$tmp/conf/drfd.conf" --json
if python3 -c 'import json,sys; d=json.load(sys.stdin); t={t["name"]:t for t in d["tenants"]}; sys.exit(0 if t["web"]["demand"]["cpu"]==3 else 1)' <"$tmp/out"; then
	ok "the snippet's demand is in force in the plan"
else
	ko "the snippet's demand is in force in the plan"; cat "$tmp/out"
fi

# A history split by rotation (FILE.1 then FILE) reads as the whole.
head -n 2 "$hist" >"$tmp/rot"
grep -v '^#' "$hist" | sed -n '2,20p' >"$tmp/rot.1.body"
{ head -n 1 "$hist"; cat "$tmp/rot.1.body"; } >"$tmp/rot.1"
grep -v '^#' "$hist" | sed -n '21,$p' >>"$tmp/rot"
expect "rotated history" 0 "$drfctl" recommend -c "$conf" --history "$tmp/rot" --json
checks "rotated history: the same figures" .records=40 web.cpu.p50=1.25 web.cpu.p95=2.5 \
	web.memory.p95=$((2176 * M)) batch.tasks=5 '~ghost=3'

# A torn last line is skipped; so is a line that does not parse.
cp "$hist" "$tmp/torn"
printf '1763857260\tweb\t9' >>"$tmp/torn"
expect "torn last line" 0 "$drfctl" recommend -c "$conf" --history "$tmp/torn" --json
checks "torn last line: skipped, the rest as before" .skipped_lines=1 .torn_lines=1 .records=40 \
	web.samples=20 web.cpu.peak=3.5
{ head -n 30 "$hist"; printf '1763856100\tweb\tx\t1\t-\t-\t-\t-\t1\t1\n'; sed -n '31,$p' "$hist"; } \
	>"$tmp/badline"
expect "a line that does not parse" 0 "$drfctl" recommend -c "$conf" --history "$tmp/badline" --json
checks "a bad line: skipped" .skipped_lines=1 .torn_lines=0 .records=40 web.cpu.p50=1.25
if grep -q "badline:31:" "$tmp/err"; then ok "the bad line is named FILE:LINE"; else ko "bad line FILE:LINE"; cat "$tmp/err"; fi

# The history drfd keeps under state-dir, named after the cgroup-root.
mkdir -p "$tmp/state"
sed "s|^state-dir = .*|state-dir = $tmp/state|" "$conf" >"$tmp/state.conf"
expect "no history: exit 1" 1 "$drfctl" recommend -c "$tmp/state.conf"
if grep -q "$tmp/state/sys-fs-cgroup-drf.slice.history" "$tmp/err"; then
	ok "no history: the path it looked at is named"
else
	ko "no history: the path"; cat "$tmp/err"
fi
cp "$hist" "$tmp/state/sys-fs-cgroup-drf.slice.history"
expect "history under state-dir" 0 "$drfctl" recommend -c "$tmp/state.conf" --json
checks "history under state-dir: read" .records=40 web.cpu.p95=2.5

# Errors
printf 'hello\n' >"$tmp/notours"
expect "not a history file: exit 1" 1 "$drfctl" recommend -c "$conf" --history "$tmp/notours"
{ printf 'drfd-history\t2\tstep\t60\n'; sed 1d "$hist"; } >"$tmp/v2"
expect "a newer version: exit 1" 1 "$drfctl" recommend -c "$conf" --history "$tmp/v2"
expect "a directory: exit 1" 1 "$drfctl" recommend -c "$conf" --history "$tmp"
expect "missing --history file: exit 1" 1 "$drfctl" recommend -c "$conf" --history "$tmp/none"
expect "unknown tenant: exit 2" 2 "$drfctl" recommend -c "$conf" --history "$hist" nosuch
expect "config error: exit 2" 2 "$drfctl" recommend -c "$fix/bad.conf" --history "$hist"
expect "bad window: exit 64" 64 "$drfctl" recommend -c "$conf" --history "$hist" --window 5x
expect "empty window: exit 64" 64 "$drfctl" recommend -c "$conf" --history "$hist" --window 0d
expect "two tenants: exit 64" 64 "$drfctl" recommend -c "$conf" --history "$hist" web batch
expect "unknown option: exit 64" 64 "$drfctl" recommend --nosuch
expect "--help" 0 "$drfctl" recommend --help

echo "test_recommend: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
