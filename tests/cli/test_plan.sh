#!/usr/bin/env bash
# drfctl plan end to end: the example config gives E1, --json matches the schema,
# config errors exit 2 with FILE:LINE, usage errors exit 64.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
drfctl=${DRFCTL:?set DRFCTL to the drfctl binary}
fix=$here/fixtures
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

G=1073741824
ex=$top/deploy/examples/drfd.conf

expect "example plan runs" 0 "$drfctl" plan -c "$ex"
if grep -Eq '^A +1 +3 +12G +3 tasks +memory 0\.667 +cpu$' "$tmp/out" &&
	grep -Eq '^B +1 +6 +2G +2 tasks +cpu 0\.667 +cpu$' "$tmp/out" &&
	grep -Eq '^\(unallocated\) +0 +4G$' "$tmp/out"; then
	ok "example table shows E1 (A 3 tasks, B 2 tasks, 4G left)"
else
	ko "example table shows E1"; cat "$tmp/out"
fi

# Demands no capacity meets: planned (exit 0) with a warning at each key's
# FILE:LINE; --strict makes them errors (exit 2); the example has none.
[ -s "$tmp/err" ] && ko "the example plans with something on stderr: $(head -2 "$tmp/err")"
printf '[agent]\n[capacity]\ncpu = 16\nmemory = 64G\n[tenant a]\ntask-cpu = 64\ntask-memory = 1G\ntasks = 3\n[tenant b]\ncpu = 64\nmemory = 1T\n[tenant c]\ncpu = 2\n' \
	>"$tmp/imp.conf"
expect "impossible demands: planned, exit 0" 0 "$drfctl" plan -c "$tmp/imp.conf"
lines=$(grep -oE "^drfctl: warning: $tmp/imp.conf:[0-9]+: tenant '[a-z]'" "$tmp/err" | sed -E 's/.*:([0-9]+): tenant .(.)./\2:\1/' | tr '\n' ' ')
if [ "$lines" = "a:6 b:10 b:11 " ]; then
	ok "impossible demands: a warning at a's task-cpu (line 6) and b's cpu and memory (10, 11), none for c"
else
	ko "impossible demands: warnings at [$lines], want [a:6 b:10 b:11 ]"; cat "$tmp/err"
fi
expect "impossible demands with --strict: exit 2" 2 "$drfctl" plan -c "$tmp/imp.conf" --strict
[ -s "$tmp/out" ] && ko "--strict refused the config and still printed a plan"
expect "the example with --strict: exit 0" 0 "$drfctl" plan -c "$ex" --strict

# Bytes are whole in JSON (an allocation of 5000111180.4 bytes is 5000111180),
# written in full (not 5.00011118e+09); cores keep their fractions.
expect "ten tenants --json runs" 0 "$drfctl" plan -c "$top/deploy/examples/ten-tenants/drfd.conf" --json
if python3 - "$tmp/out" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
d = json.loads(text)
mem = [d["unallocated"]["memory"]] + [t["alloc"]["memory"] for t in d["tenants"]]
cpu = [t["alloc"]["cpu"] for t in d["tenants"]]
sys.exit(0 if all(isinstance(m, int) for m in mem) and "e+" not in text
         and any(isinstance(c, float) for c in cpu) else 1)
PY
then
	ok "--json: memory in whole bytes, written in full; cpu with its fractions"
else
	ko "--json: fractional or exponent bytes"; head -c 400 "$tmp/out"
fi

# A tenant whose whole demand is met is limited by its demand, whatever the
# policy: a solver's 11.999999999999998 of 12 tasks too (fds and gfj said cpu).
bad=
for pol in drf asset fds gfj ceei; do
	"$drfctl" plan -c "$top/deploy/examples/ten-tenants/drfd.conf" --policy $pol --json >"$tmp/pol.json" 2>/dev/null
	bad="$bad$(python3 - "$tmp/pol.json" "$pol" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
met = [t for t in d["tenants"] if t["demand"]["cpu"] is not None
       and t["alloc"]["cpu"] >= t["demand"]["cpu"] * (1 - 1e-9)]
wrong = [t["name"] for t in met if t["limited_by"] != "demand"]
print(" %s:%s" % (sys.argv[2], ",".join(wrong)) if wrong or not met else "", end="")
PY
)"
done
if [ -z "$bad" ]; then
	ok "a tenant with its whole demand met says LIMITED-BY demand under every policy"
else
	ko "a tenant with its demand met is limited by something else (or none met):$bad"
fi

# --compare --json: the six policies, and each tenant's served tasks under drf
# as plan --json says.
"$drfctl" plan -c "$top/deploy/examples/ten-tenants/drfd.conf" --json >"$tmp/drf.json" 2>/dev/null
expect "--compare --json runs" 0 "$drfctl" plan -c "$top/deploy/examples/ten-tenants/drfd.conf" --compare --json
if python3 - "$tmp/out" "$tmp/drf.json" <<'PY'
import json, sys
c, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
pols = [p["policy"] for p in c["policies"]]
served = {t["name"]: t["served"]["drf"] for t in c["tenants"]}
ok = (pols == ["drf", "asset", "per-resource", "fds", "gfj", "ceei"]
      and all(0 < p["jain"] <= 1 for p in c["policies"] if not p["gave_up"])
      and all(abs(served[t["name"]] - t["tasks"]) < 1e-9 for t in d["tenants"])
      and len(served) == len(d["tenants"]))
sys.exit(0 if ok else 1)
PY
then
	ok "--compare --json: six policies; drf's served tasks as plan --json's"
else
	ko "--compare --json"; head -c 600 "$tmp/out"
fi

expect "example --json runs" 0 "$drfctl" plan -c "$ex" --json
if python3 "$here/check_json.py" .policy=drf .capacity.cpu=9 .capacity.memory=$((18 * G)) \
	.unallocated.cpu=0 .unallocated.memory=$((4 * G)) \
	A.tasks=3 A.alloc.cpu=3 A.alloc.memory=$((12 * G)) A.demand.cpu=null \
	A.dominant_resource=memory A.limited_by=cpu B.tasks=2 B.alloc.cpu=6 \
	B.dominant_share=0.6666666666666666 <"$tmp/out"; then
	ok "example --json matches the schema and E1"
else
	ko "example --json matches the schema and E1"; cat "$tmp/out"
fi

expect "example --discrete --json runs" 0 "$drfctl" plan -c "$ex" --discrete --json
if python3 "$here/check_json.py" A.tasks=3 B.tasks=2 <"$tmp/out"; then
	ok "discrete E1: 3 and 2 whole tasks"
else
	ko "discrete E1"; cat "$tmp/out"
fi

expect "E2 asset --json" 0 "$drfctl" plan -c "$fix/e2.conf" --policy asset --json
if python3 "$here/check_json.py" .policy=asset U1.tasks=12 U2.tasks=8 .unallocated.cpu=8 \
	<"$tmp/out"; then ok "E2 asset: 12 and 8 tasks, 8 cpu idle"; else ko "E2 asset"; cat "$tmp/out"; fi

expect "E2 drf --json" 0 "$drfctl" plan -c "$fix/e2.conf" --json
if python3 "$here/check_json.py" U1.tasks=14 U2.tasks=7 U1.dominant_share=0.5 <"$tmp/out"; then
	ok "E2 drf: 14 and 7 tasks"
else
	ko "E2 drf"; cat "$tmp/out"
fi

expect "E3 --json" 0 "$drfctl" plan -c "$fix/e3.conf" --json
if python3 "$here/check_json.py" A.alloc.cpu=2 A.alloc.memory=$((8 * G)) A.limited_by=demand \
	A.demand.cpu=2 B.alloc.cpu=7 B.tasks=2.3333333333333335 B.limited_by=cpu <"$tmp/out" &&
	python3 -c 'import json,sys; sys.exit("tasks" in json.load(sys.stdin)["tenants"][0])' <"$tmp/out"; then
	ok "E3: A served in full (no tasks key), B 7/3 tasks"
else
	ko "E3"; cat "$tmp/out"
fi

expect "--compare runs" 0 "$drfctl" plan -c "$fix/e2.conf" --compare
if grep -Eq '^asset +[0-9.]+ +1 ' "$tmp/out" && grep -Eq '^drf +1\.000 +0 ' "$tmp/out"; then
	ok "--compare: asset has 1 sharing-incentive violation, drf none"
else
	ko "--compare"; cat "$tmp/out"
fi

# FDS, GFJ, CEEI (drfd.conf(5), "Policies"): E1's closed forms, and their errors.
expect "E1 fds --json" 0 "$drfctl" plan -c "$fix/e1-fds.conf" --json
if python3 "$here/check_json.py" .policy=fds .beta=3 A.tasks~3.478394 B.tasks~1.840535 \
	<"$tmp/out"; then
	ok "E1 fds beta 3: B 6 / (2 + 2^(1/3)) tasks, A 9 - 3 B"
else
	ko "E1 fds"; cat "$tmp/out"
fi
# drfd.conf(5)'s worked example (FAIRNESS AND EFFICIENCY) is what drfctl prints.
conf5=$top/deploy/man/drfd.conf.5.scd
"$drfctl" plan -c "$fix/e1-fds.conf" >"$tmp/out" 2>&1
b=$(sed -nE 's/^B +1 +[0-9.]+ +[0-9.]+G +([0-9.]+) tasks .*/\1/p' "$tmp/out")
a=$(sed -nE 's/^A +1 +[0-9.]+ +[0-9.]+G +([0-9.]+) tasks .*/\1/p' "$tmp/out")
"$drfctl" plan -c "$ex" --policy ceei >"$tmp/out2" 2>&1
ca=$(sed -nE 's/^A +1 +[0-9.]+ +[0-9.]+G +([0-9.]+) tasks .*/\1/p' "$tmp/out2")
cb=$(sed -nE 's/^B +1 +[0-9.]+ +[0-9.]+G +([0-9.]+) tasks .*/\1/p' "$tmp/out2")
if [ -n "$b" ] && [ -n "$ca" ] && tr '\n' ' ' <"$conf5" | tr -s ' \t' ' ' |
	grep -qF "B 6 / (2 + 2^(1/3)) = $b tasks and A 9 - 3 x $b = $a" &&
	tr '\n' ' ' <"$conf5" | tr -s ' \t' ' ' | grep -qF "A 45/11 = $ca and B 18/11 = $cb"; then
	ok "drfd.conf(5)'s fds and ceei example matches drfctl plan ($a/$b, $ca/$cb)"
else
	ko "drfd.conf(5)'s example: drfctl says fds A $a B $b, ceei A $ca B $cb"
fi
expect "E1 --policy gfj --beta 2" 0 "$drfctl" plan -c "$ex" --policy gfj --beta 2 --json
if python3 "$here/check_json.py" .policy=gfj .beta=2 .lambda=-0.5 A.tasks~3.294229 \
	B.tasks~1.901924 <"$tmp/out"; then
	ok "E1 gfj beta 2: B 9 / (3 + 3^(1/2)) tasks"
else
	ko "E1 gfj"; cat "$tmp/out"
fi
expect "E1 --policy ceei" 0 "$drfctl" plan -c "$ex" --policy ceei --json
if python3 "$here/check_json.py" .policy=ceei A.tasks~4.090909 B.tasks~1.636364 \
	.unallocated.cpu~0 <"$tmp/out"; then
	ok "E1 ceei: the vertex (45/11, 18/11), both resources used up"
else
	ko "E1 ceei"; cat "$tmp/out"
fi
expect "--compare lists fds, gfj, ceei" 0 "$drfctl" plan -c "$ex" --compare --beta 3
if grep -Eq '^fds\(beta=3,lambda=-0.666667\) +[0-9.]+ +0 ' "$tmp/out" &&
	grep -Eq '^gfj\(beta=3,lambda=-0.666667\) ' "$tmp/out" &&
	grep -Eq '^ceei +0\.941 +0 +100\.0% +100\.0%$' "$tmp/out"; then
	ok "--compare shows fds and gfj with their beta, ceei using all of E1"
else
	ko "--compare with the families"; cat "$tmp/out"
fi
expect "--tradeoff runs" 0 "$drfctl" plan -c "$ex" --tradeoff
# E1: FDS at beta 1 is CEEI's vertex (all memory used); at beta 100 near DRF's 77.8%.
if grep -Eq '^fds +1 +0 +0\.941 +100\.0% +100\.0%$' "$tmp/out" &&
	grep -Eq '^fds +100 +-0\.99 +1\.000 +100\.0% +78\.1%$' "$tmp/out" &&
	grep -Eq '^gfj +3 +-0\.6666666667 +1\.000 ' "$tmp/out" &&
	grep -Eq '^drf +inf +-1 +1\.000 +100\.0% +77\.8%$' "$tmp/out" &&
	grep -q "78.1% at beta 100 (DRF: 77.8%)" "$top/deploy/man/drfctl.8.scd"; then
	ok "--tradeoff on E1: fds from the vertex at beta 1 to near DRF at 100, as drfctl(8) says"
else
	ko "--tradeoff on E1"; cat "$tmp/out"
fi
expect "--tradeoff --policy gfj runs" 0 "$drfctl" plan -c "$ex" --tradeoff --policy gfj
if ! grep -q '^fds ' "$tmp/out" && grep -q '^gfj ' "$tmp/out"; then
	ok "--tradeoff --policy gfj shows gfj (and drf) only"
else
	ko "--tradeoff --policy gfj"; cat "$tmp/out"
fi
# --svg says where it wrote the picture (text: the last line; --json: stderr).
rm -f "$tmp/said.svg"
expect "--tradeoff --svg exits 0" 0 "$drfctl" plan -c "$ex" --tradeoff --svg "$tmp/said.svg"
if [ -s "$tmp/said.svg" ] && tail -1 "$tmp/out" | grep -qF "$tmp/said.svg"; then
	ok "--tradeoff --svg FILE: FILE written, and its name the output's last line"
else
	ko "--tradeoff --svg: $(tail -1 "$tmp/out")"
fi

# The picture: gnuplot's SVG holds the sweep's numbers (check_svg.py maps every
# point mark back to its row), for E1, for ten tenants, and for all six resources
# (a dash each: gnuplot's numbered ones repeat after five).
cat >"$tmp/six.conf" <<'CONF'
[capacity]
cpu = 8
memory = 16G
io-device = 8:0
io-read-bps = 200M
io-write-bps = 100M
net-device = lo
net-rate = 1gbit
net-ingress-rate = 1gbit
[tenant a]
cpu = 4
memory = 2G
io-read-bps = 50M
net-rate = 100mbit
[tenant b]
cpu = 1
memory = 8G
io-write-bps = 80M
net-ingress-rate = 600mbit
[tenant c]
cpu = 2
memory = 4G
io-read-bps = 150M
io-write-bps = 20M
net-rate = 700mbit
CONF
for n in drfd ten-tenants six; do
	c=$ex
	[ $n = ten-tenants ] && c=$top/deploy/examples/ten-tenants/drfd.conf
	[ $n = six ] && c=$tmp/six.conf
	rm -f "$tmp/$n.svg"
	expect "--tradeoff --json --svg $n exits 0" 0 "$drfctl" plan -c "$c" --tradeoff --json --svg "$tmp/$n.svg"
	if cp "$tmp/out" "$tmp/$n.json" && python3 "$here/check_svg.py" "$tmp/$n.svg" "$tmp/$n.json" >"$tmp/chk" 2>&1; then
		ok "the picture of $n is its sweep: $(tr '\n' ' ' <"$tmp/chk")"
	else
		ko "the picture of $n"; cat "$tmp/chk"
	fi
done
# ... and the README's pictures are those drfctl draws now (redrawn with
# `drfctl plan -c deploy/examples/drfd.conf --tradeoff --svg docs/tradeoff-drfd.svg`, and
# ten-tenants/drfd.conf into docs/tradeoff-ten-tenants.svg).
for n in drfd ten-tenants; do
	if [ -f "$top/docs/tradeoff-$n.svg" ] &&
		python3 "$here/check_svg.py" "$top/docs/tradeoff-$n.svg" "$tmp/$n.json" >"$tmp/chk" 2>&1; then
		ok "docs/tradeoff-$n.svg is the sweep drfctl makes now"
	else
		ko "docs/tradeoff-$n.svg is stale or missing: redraw it"; cat "$tmp/chk"
	fi
done
# The README's reading of the ten tenants' picture is the sweep's.
if python3 - "$tmp/ten-tenants.json" "$top/README.md" >"$tmp/chk" 2>&1 <<'PY'; then
import json, re, sys
rows = json.load(open(sys.argv[1]))["rows"]
readme = re.sub(r"\s+", " ", open(sys.argv[2]).read())
line = lambda pol: [r for r in rows if r["policy"] == pol and not r["lambda_sweep"]]
fds, gfj, drf = line("fds"), line("gfj"), line("drf")[0]
top = max(gfj, key=lambda r: r["jain"])
off = [r for r in rows if r["policy"] == "fds" and r["lambda_sweep"] and r["beta"] == 20]
# the first row of the sweep at its most memory
off = [off[0], next(r for r in off if r["used"]["memory"] >= max(x["used"]["memory"] for x in off) - 1e-9)]
pct = lambda v: f"{100 * v:.1f}%".replace("100.0%", "100%")
want = [f"rises from {fds[0]['jain']:.3f} to DRF's {drf['jain']:.3f}",
        f"memory use falls from {pct(fds[0]['used']['memory'])} to "
        f"{pct(fds[-1]['used']['memory'])} (DRF: {pct(drf['used']['memory'])})",
        f"peaks at {top['jain']:.3f} (beta {top['beta']:g}) and falls to {gfj[-1]['jain']:.3f}",
        f"FDS buys back memory, {pct(off[0]['used']['memory'])} to {pct(off[-1]['used']['memory'])}, "
        f"for Jain's index {off[0]['jain']:.3f} to {off[-1]['jain']:.3f}"]
missing = [w for w in want if w not in readme]
print("; ".join(missing) if missing else "every figure")
sys.exit(1 if missing else 0)
PY
	ok "the README's figures of the ten tenants are the sweep's: $(cat "$tmp/chk")"
else
	ko "the README's figures of the ten tenants: not found: $(cat "$tmp/chk")"
fi
if python3 "$here/check_svg.py" "$tmp/drfd.svg" "$tmp/ten-tenants.json" >"$tmp/chk" 2>&1; then
	ko "check_svg.py takes E1's picture for ten tenants' sweep"
else
	ok "check_svg.py tells E1's picture from ten tenants' sweep"
fi
# A gnuplot that fails leaves the file as it was; no gnuplot at all writes none.
mkdir -p "$tmp/badgp" "$tmp/nogp"
printf '#!/bin/sh\ncat >/dev/null\necho "gnuplot: broken" >&2\nexit 3\n' >"$tmp/badgp/gnuplot"
chmod +x "$tmp/badgp/gnuplot"
echo keep >"$tmp/keep.svg"
expect "--svg with a failing gnuplot exits 1" 1 env PATH="$tmp/badgp:$PATH" "$drfctl" plan -c "$ex" --tradeoff --svg "$tmp/keep.svg"
if [ "$(cat "$tmp/keep.svg")" = keep ] && [ -z "$(find "$tmp" -maxdepth 1 -name 'keep.svg.tmp*')" ] &&
	grep -q "gnuplot failed (exit 3)" "$tmp/err"; then
	ok "a failing gnuplot: the file kept, no temporary left, the exit said"
else
	ko "a failing gnuplot"; cat "$tmp/err"; ls "$tmp"
fi
expect "--svg without gnuplot exits 1" 1 env PATH="$tmp/nogp" "$drfctl" plan -c "$ex" --tradeoff --svg "$tmp/none.svg"
if [ ! -e "$tmp/none.svg" ] && grep -q "gnuplot is not installed" "$tmp/err"; then
	ok "no gnuplot: no file, and the package named"
else
	ko "no gnuplot"; cat "$tmp/err"
fi
# A gnuplot that exits 0 with nothing written, one that hangs past its minute is
# not tried (a minute); a target that is not a regular file is refused whole.
printf '#!/bin/sh\ncat >/dev/null\nexit 0\n' >"$tmp/badgp/gnuplot"
expect "--svg with a gnuplot that writes nothing exits 1" 1 env PATH="$tmp/badgp:$PATH" "$drfctl" plan -c "$ex" --tradeoff --svg "$tmp/keep.svg"
if [ "$(cat "$tmp/keep.svg")" = keep ] && grep -q "without a whole SVG" "$tmp/err"; then
	ok "gnuplot's exit 0 without a picture: the file kept"
else
	ko "gnuplot's exit 0 without a picture"; cat "$tmp/err"
fi
ln -s keep.svg "$tmp/link.svg"
expect "--svg onto a symlink exits 1" 1 "$drfctl" plan -c "$ex" --tradeoff --svg "$tmp/link.svg"
if [ -L "$tmp/link.svg" ] && [ "$(cat "$tmp/keep.svg")" = keep ]; then
	ok "--svg onto a symlink: the link and its target kept"
else
	ko "--svg onto a symlink"; ls -l "$tmp"
fi
# With stdin closed, the temporary file must not become gnuplot's stdin or stdout.
rm -f "$tmp/closed.svg"
"$drfctl" plan -c "$ex" --tradeoff --svg "$tmp/closed.svg" <&- >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && grep -q '</svg>' "$tmp/closed.svg"; then
	ok "--svg with stdin closed: a whole picture"
else
	ko "--svg with stdin closed: exit $rc"; cat "$tmp/err"
fi
expect "--svg into a missing directory exits 1" 1 "$drfctl" plan -c "$ex" --tradeoff --svg "$tmp/no/such/dir.svg"
expect "--svg without --tradeoff exits 64" 64 "$drfctl" plan -c "$ex" --svg "$tmp/x.svg"
expect "--tradeoff --policy drf exits 64" 64 "$drfctl" plan -c "$ex" --tradeoff --policy drf
expect "refused lambda exits 64" 64 "$drfctl" plan -c "$ex" --policy fds --beta 3 --lambda 0
if grep -q "with beta above 1, lambda above (1 - beta) / beta" "$tmp/err"; then
	ok "refused --lambda says why"
else
	ko "refused --lambda says why"; cat "$tmp/err"
fi
expect "--beta with --policy drf exits 64" 64 "$drfctl" plan -c "$ex" --policy drf --beta 2
expect "--beta on a drf config exits 64" 64 "$drfctl" plan -c "$ex" --beta 2
expect "--beta not a number exits 64" 64 "$drfctl" plan -c "$ex" --policy fds --beta 1e3
expect "--discrete with fds exits 64" 64 "$drfctl" plan -c "$ex" --policy fds --discrete
expect "refused lambda in drfd.conf exits 2" 2 "$drfctl" plan -c "$fix/bad-lambda.conf"
if grep -q "bad-lambda.conf:5: lambda = 0.5 with beta = 2: with beta above 1" "$tmp/err"; then
	ok "refused lambda in drfd.conf names FILE:LINE and why"
else
	ko "refused lambda in drfd.conf"; cat "$tmp/err"
fi

expect "config error exits 2" 2 "$drfctl" plan -c "$fix/bad.conf"
if grep -q "bad.conf:4: weight = '0': out of range" "$tmp/err"; then
	ok "config error names FILE:LINE"
else
	ko "config error names FILE:LINE"; cat "$tmp/err"
fi
expect "missing config exits 2" 2 "$drfctl" plan -c "$tmp/nope.conf"
expect "--discrete with a bounded tenant exits 2" 2 "$drfctl" plan -c "$fix/e3.conf" --discrete
expect "unknown policy exits 64" 64 "$drfctl" plan -c "$ex" --policy fifo
expect "unknown command exits 64" 64 "$drfctl" frobnicate
expect "--compare --policy drf exits 64" 64 "$drfctl" plan -c "$ex" --compare --policy drf

# Undeclared resources are marked, in the table and in the JSON.
expect "undeclared plan runs" 0 "$drfctl" plan -c "$fix/undeclared.conf"
if grep -Eq '^m +1 +3\.200\* +819\.2M ' "$tmp/out" && grep -Eq '^c +1 +0\.800 +6\.400G\* ' "$tmp/out" &&
	grep -q '^\* not declared' "$tmp/out"; then
	ok "undeclared resources are marked with * and a footnote"
else
	ko "undeclared resources are marked"
	cat "$tmp/out"
fi
"$drfctl" plan -c "$fix/undeclared.conf" --json >"$tmp/out"
if python3 "$here/check_json.py" m.declared.cpu=False m.declared.memory=True c.declared.cpu=True \
	c.declared.memory=False <"$tmp/out"; then
	ok "--json says which resources each tenant declared"
else
	ko "--json declared"
fi
# No tenants: a valid config, an empty plan.
expect "a config without tenants plans" 0 "$drfctl" plan -c "$fix/no-tenants.conf"
"$drfctl" plan -c "$fix/no-tenants.conf" --json >"$tmp/out"
if python3 "$here/check_json.py" .capacity.cpu=4 <"$tmp/out" &&
	python3 -c "import json,sys; sys.exit(json.load(open('$tmp/out'))['tenants'] != [])"; then
	ok "no tenants: --json has an empty tenants list"
else
	ko "no tenants --json"
fi
# Lottery scheduling's currencies as [group]s (deploy/examples/lottery): Ann's
# threads A 5, B 3, C 7 tickets in her currency worth Bob's 10: A 5, B 3, C 7
# cores, Bob's job 15; before Ann printed 5 tickets for C (weight 2), A 7.5,
# B 4.5, C 3, and Bob's job 15 still: inflation inside a currency stays there.
lot=$top/deploy/examples/lottery/drfd.conf
sed 's/^weight = 7$/weight = 2/' "$lot" >"$tmp/lottery-before.conf"
"$drfctl" plan -c "$lot" --json >"$tmp/lot.json" 2>"$tmp/err"
"$drfctl" plan -c "$tmp/lottery-before.conf" --json >"$tmp/lot0.json" 2>>"$tmp/err"
if python3 - "$tmp/lot.json" "$tmp/lot0.json" <<'PY'
import json, sys
def cores(f):
    return {t["name"]: t["alloc"]["cpu"] for t in json.load(open(f))["tenants"]}
after, before = cores(sys.argv[1]), cores(sys.argv[2])
want_after = {"A": 5, "B": 3, "C": 7, "bobs-job": 15}
want_before = {"A": 7.5, "B": 4.5, "C": 3, "bobs-job": 15}
sys.exit(0 if all(abs(after[k] - v) < 1e-9 for k, v in want_after.items())
         and all(abs(before[k] - v) < 1e-9 for k, v in want_before.items()) else 1)
PY
then
	ok "lottery currencies: A 5, B 3, C 7, Bob 15 cores; before C's new tickets 7.5, 4.5, 3 and Bob 15"
else
	ko "lottery currencies"; cat "$tmp/err" "$tmp/lot.json"
fi

# Groups: the H-DRF example of drfd.conf(5), its table as the page prints it.
expect "hdrf plan runs" 0 "$drfctl" plan -c "$fix/hdrf.conf"
man5=$top/deploy/man/drfd.conf.5.scd
sed -n '/^\$ drfctl plan$/,/^```$/p' "$man5" | sed -n '/hierarchical/,/^```$/p' | grep -v '^```$' |
	tail -n +4 >"$tmp/man.rows"
tail -n +4 "$tmp/out" >"$tmp/got.rows"
if [ -s "$tmp/man.rows" ] && diff "$tmp/man.rows" "$tmp/got.rows" >"$tmp/diff"; then
	ok "hdrf: the table is drfd.conf(5)'s worked example (n1 5G, n21 10 cores, n22 5G)"
else
	ko "hdrf: the table differs from drfd.conf(5)'s worked example"; cat "$tmp/diff" "$tmp/out"
fi
expect "hdrf --json runs" 0 "$drfctl" plan -c "$fix/hdrf.conf" --json
if python3 "$here/check_json.py" n1.alloc.memory=$((5 * G)) n21.alloc.cpu=10 \
	n22.alloc.memory=$((5 * G)) n21.group=n2 n1.group=null @n2.alloc.cpu=10 \
	@n2.alloc.memory=$((5 * G)) @n2.dominant_share=1 @n2.cgroup=n2 @n2.group=null <"$tmp/out"; then
	ok "hdrf --json: the groups and the tenants' groups"
else
	ko "hdrf --json"; cat "$tmp/out"
fi
expect "hdrf --discrete --json runs" 0 "$drfctl" plan -c "$fix/hdrf.conf" --discrete --json
if python3 "$here/check_json.py" n1.tasks=5 n21.tasks=10 n22.tasks=5 <"$tmp/out"; then
	ok "hdrf --discrete: 5, 10 and 5 whole tasks"
else
	ko "hdrf --discrete"; cat "$tmp/out"
fi
expect "hdrf --compare refused" 64 "$drfctl" plan -c "$fix/hdrf.conf" --compare
expect "hdrf --policy asset refused" 64 "$drfctl" plan -c "$fix/hdrf.conf" --policy asset
printf '[capacity]\ncpu = 4\n[tenant a]\ngroup = nowhere\n' >"$tmp/nogroup.conf"
expect "an unknown group is a config error" 2 "$drfctl" plan -c "$tmp/nogroup.conf"
if grep -q "nogroup.conf:4: tenant 'a': group = 'nowhere': there is no \[group nowhere\]" "$tmp/err"; then
	ok "an unknown group names FILE:LINE"
else
	ko "an unknown group names FILE:LINE"; cat "$tmp/err"
fi
# A stream that fails: exit 1, not a cut table with exit 0.
expect "a full stdout exits 1" 1 sh -c "\"$drfctl\" plan -c \"$ex\" >/dev/full"
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
