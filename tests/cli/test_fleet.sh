#!/bin/bash
# SPDX-License-Identifier: MIT
# drfctl fleet plan: the seed's DRFH example in JSON and text, whole tasks by
# Best-Fit worked by hand, the comparison, the fleet file's rules (servers made
# by count, resources a server lacks, a demand tenant's unlisted resource) and
# its errors, each with its exit code and FILE:LINE.
set -u
DRFCTL=${DRFCTL:?set DRFCTL to the drfctl binary}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

cat >"$dir/seed.conf" <<'CONF'
# The seed's example: servers (1 CPU, 14 GB) and (8 CPU, 4 GB).
[server s1]
cpu = 1
memory = 14G

[server s2]
cpu = 8
memory = 4G

[tenant user1]
task-cpu = 1
task-memory = 4G
tasks = unlimited

[tenant user2]
task-cpu = 3
task-memory = 1G
tasks = unlimited
CONF

# 1. Divisible DRFH: 8/21 each; the placements add up to the tasks; no server over capacity.
if "$DRFCTL" fleet plan -c "$dir/seed.conf" --json >"$dir/seed.json" &&
	python3 - "$dir/seed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["form"] == "drfh", d["form"]
caps = {s["name"]: s["capacity"] for s in d["servers"]}
assert set(caps) == {"s1", "s2"}, caps
use = {n: {"cpu": 0.0, "memory": 0.0} for n in caps}
task = {"user1": (1, 4 << 30), "user2": (3, 1 << 30)}
for t in d["tenants"]:
    assert abs(t["global_dominant_share"] - 8 / 21) < 1e-9, t
    assert abs(sum(t["placement"].values()) - t["tasks_total"]) < 1e-9, t
    for s, k in t["placement"].items():
        use[s]["cpu"] += k * task[t["name"]][0]
        use[s]["memory"] += k * task[t["name"]][1]
for s in caps:
    for r in ("cpu", "memory"):
        assert use[s][r] <= caps[s][r] * (1 + 1e-9), (s, r, use[s][r], caps[s][r])
assert abs(d["utilization"]["memory"] - 8 / 18) < 1e-9, d["utilization"]
PY
then pass "seed example: global dominant shares 8/21 and 8/21, placements within each server"
else fail "seed example (divisible DRFH)"; fi

# 2. Whole tasks by Best-Fit, by hand: user1 one task on s1, user2 two on s2.
if "$DRFCTL" fleet plan -c "$dir/seed.conf" --json --discrete >"$dir/bf.json" &&
	python3 - "$dir/bf.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in d["tenants"]}
assert d["form"] == "drfh-best-fit"
assert t["user1"]["placement"] == {"s1": 1}, t["user1"]
assert t["user2"]["placement"] == {"s2": 2}, t["user2"]
PY
then pass "Best-Fit by hand: user1 {s1: 1}, user2 {s2: 2}"
else fail "Best-Fit placement"; fi

# 3. The comparison: five forms; DRFH the fairest (Jain 1 here), per-server DRF starves user2.
if "$DRFCTL" fleet plan -c "$dir/seed.conf" --compare --json >"$dir/cmp.json" &&
	python3 - "$dir/cmp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["forms"]
assert set(f) == {"drfh", "drfh-best-fit", "drfh-first-fit", "per-server-drf", "slots"}, f
assert abs(f["drfh"]["jain"] - 1) < 1e-9
assert f["per-server-drf"]["global_dominant_share"]["user2"] == 0
assert abs(d["best_fit_gap"] - (1 - (2 / 9) / (8 / 21))) < 1e-9, d["best_fit_gap"]
PY
then pass "compare: 5 forms, DRFH Jain 1, per-server DRF leaves user2 nothing, Best-Fit gap 41.7%"
else fail "compare"; fi
"$DRFCTL" fleet plan -c "$dir/seed.conf" --compare >"$dir/cmp.txt"
rc=$?
if [ $rc -eq 0 ] && grep -q '^per-server-drf' "$dir/cmp.txt"; then pass "compare as text: exit 0"
else fail "compare as text: exit $rc"; fi
# The example fleet: web and analytics get their whole demand; the least share
# is of a tenant not fully served (analytics' 0.0108 said nothing of fairness).
if "$DRFCTL" fleet plan -c "$(dirname "$0")/../../deploy/examples/fleet.conf" --compare --json >"$dir/ex.json" &&
	python3 - "$dir/ex.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
w = {"cache": 1, "batch": 1, "web": 2, "analytics": 1}
ok = True
for name, f in d["forms"].items():
    open_ = [t for t, s in f["demand_served"].items() if not s]
    want = min(f["global_dominant_share"][t] / w[t] for t in open_) if open_ else None
    ok = ok and f["demand_served"]["analytics"] and want is not None \
        and abs(f["least_weighted_gds"] - want) < 1e-9
sys.exit(0 if ok else 1)
PY
then pass "compare: each form's least share is of the tenants not fully served (analytics is)"
else fail "compare: least share of the tenants not fully served"; fi

# 4. count = N makes NAME-1 .. NAME-N; a server without memory takes no memory task;
#    a demand tenant's unlisted memory is the whole pool.
cat >"$dir/count.conf" <<'CONF'
[server big]
cpu = 16
memory = 64G
count = 3

[server cpuonly]
cpu = 32

[tenant mem]
task-cpu = 1
task-memory = 8G
tasks = 100

[tenant cpu]
cpu = 8
CONF
if "$DRFCTL" fleet plan -c "$dir/count.conf" --json >"$dir/count.json" &&
	python3 - "$dir/count.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = [s["name"] for s in d["servers"]]
assert names == ["big-1", "big-2", "big-3", "cpuonly"], names
assert d["servers"][3]["capacity"] == {"cpu": 32, "memory": 0}, d["servers"][3]
t = {x["name"]: x for x in d["tenants"]}
assert "cpuonly" not in t["mem"]["placement"], t["mem"]["placement"]
# 'cpu' demands 8 cores and (unlisted) the whole pool's memory: its dominant resource is
# memory, so it gets the same global dominant share as 'mem' or all of its demand.
assert t["cpu"]["tasks_total"] <= 1 + 1e-9
assert t["cpu"]["alloc"]["memory"] > 0, t["cpu"]
PY
then pass "count = 3 makes big-1..big-3; cpuonly has memory 0 and no memory task; demand's unlisted memory is the pool"
else fail "count, missing resources, demand tenants"; fi

# 5. Errors: exit 2 and FILE:LINE; no -c: 64.
check_err() { # name, expected text, config
	printf '%s\n' "$3" >"$dir/bad.conf"
	out=$("$DRFCTL" fleet plan -c "$dir/bad.conf" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -eq 2 ] && [[ $out == *"bad.conf:"*"$2"* ]]; then pass "error $1: exit 2, $out"
	else fail "error $1: exit $rc, '$out'"; fi
}
check_err "[agent]" "unknown section [agent]" $'[agent]\nmode = share'
check_err "duplicate server" "duplicate server 'a'" $'[server a]\ncpu = 1\n[server a]\ncpu = 2'
check_err "count collision" "makes 'a-2'" $'[server a]\ncpu = 1\ncount = 2\n[server a-2]\ncpu = 1'
check_err "no capacity" "has no capacity" $'[server a]\ncount = 2'
check_err "bad count" "count = '0'" $'[server a]\ncpu = 1\ncount = 0'
check_err "no servers" "no servers" $'[tenant t]\ncpu = 1'
check_err "group in a fleet" "4: tenant 't': group = belongs in a host's drfd.conf" \
	$'[server a]\ncpu = 1\n[tenant t]\ngroup = g\ncpu = 1'
check_err "[group] in a fleet" "unknown section [group g]" $'[server a]\ncpu = 1\n[group g]'

"$DRFCTL" fleet plan >/dev/null 2>&1
rc=$?
if [ $rc -eq 64 ]; then pass "no -c: exit 64"; else fail "no -c: exit $rc"; fi

# 6. The shipped example plans, whole and divisible, in every form.
example=$(dirname "$0")/../../deploy/examples/fleet.conf
if "$DRFCTL" fleet plan -c "$example" --compare --json >"$dir/ex.json" &&
	python3 - "$dir/ex.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["forms"]) == 5 and all(f["tasks"] > 0 for f in d["forms"].values()), d
PY
then pass "the example fleet (deploy/examples/fleet.conf) plans in all 5 forms"
else fail "the example fleet"; fi

[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
