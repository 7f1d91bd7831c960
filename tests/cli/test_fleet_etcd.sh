#!/usr/bin/env bash
# drfctl fleet apply and status against a real etcd (Debian's etcd-server 3.4)
# on 127.0.0.1 only (free ports, a data directory of the test's own):
#   - apply puts a fleet file's tenants under P/tenants/ as JSON, says nothing
#     new when applied again (etcd's revision stays), deletes the tenants no
#     longer in the file, takes a file of tenants alone, and --prefix;
#   - status --json reads what nodes and a planner wrote (put here with
#     etcdctl, as drfd's fleet mode writes them): the planner and its token,
#     nodes alive or gone, each assignment's revision, each tenant's placement
#     and global dominant share;
#   - the exit codes: 2 for a broken fleet file, 64 for usage, 1 when etcd
#     cannot be reached;
#   - with etcd's auth on: a user and its --password-file, a wrong password
#     and no user refused (exit 1), a password file that is not there (64).
# etcd and etcdctl must be installed (deploy/install-deps.sh): without them
# this test fails, it does not skip. etcd and the directory go on any exit.
#   DRFCTL=.output/cc/drfctl tests/cli/test_fleet_etcd.sh
set -u
DRFCTL=${DRFCTL:?set DRFCTL to the drfctl binary}
etcd_test=test_fleet_etcd
# shellcheck source=tests/cli/etcd_lib.sh
. "$(dirname "$0")/etcd_lib.sh"
etcd_need etcd etcdctl python3
# check NAME CMD...: CMD's exit status 0 is a pass.
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else ko "$name"; fi
}

# etcd's client and peer ports, and one nothing listens on.
read -r p_client p_peer p_closed < <(free_ports 3)
ep=http://127.0.0.1:$p_client
etcd --name drfd-fleet --data-dir "$work/data" \
	--listen-client-urls "$ep" --advertise-client-urls "$ep" \
	--listen-peer-urls "http://127.0.0.1:$p_peer" \
	--initial-advertise-peer-urls "http://127.0.0.1:$p_peer" \
	--initial-cluster "drfd-fleet=http://127.0.0.1:$p_peer" \
	--bcrypt-cost 4 --logger zap --log-outputs stderr --log-level warn >"$work/etcd.log" 2>&1 &
etcd_pid=$!
ctl() { etcdctl --endpoints "$ep" --dial-timeout 2s "$@"; }
up=0
for _ in $(seq 100); do
	if ctl endpoint health >/dev/null 2>&1; then
		up=1
		break
	fi
	kill -0 "$etcd_pid" 2>/dev/null || break
	sleep 0.1
done
if [ $up -eq 1 ]; then ok "etcd up on 127.0.0.1:$p_client"
else
	ko "etcd up on 127.0.0.1:$p_client"
	tail -n 20 "$work/etcd.log"
	exit 1
fi
# field NAME ETCDCTL-ARGS...: one field of etcdctl's --write-out=fields (no python: fast).
field() {
	local name=$1
	shift
	ctl "$@" --write-out=fields | sed -nE "s/^\"$name\" : ([0-9]+)\$/\1/p" | head -n 1
}
revision() { field Revision endpoint status; }

cat >"$work/fleet.conf" <<'EOF'
[server big]
cpu = 32
memory = 64G
count = 2

[tenant web]
weight = 2
task-cpu = 2
task-memory = 1G
tasks = 10

[tenant batch]
task-cpu = 4
task-memory = 8G
tasks = unlimited
cgroup = jobs/batch

[tenant db]
cpu = 4
memory = 16G
EOF

# apply: the three tenants as JSON under /drfd/tenants/.
"$DRFCTL" fleet apply -f "$work/fleet.conf" --endpoints "$ep" >"$work/apply.out" 2>"$work/apply.err"
check "fleet apply: exit 0" [ $? -eq 0 ]
ctl get --prefix /drfd/tenants/ --write-out=json >"$work/tenants.json"
check "fleet apply: the tenants' values" python3 - "$work/tenants.json" <<'PY'
import base64, json, sys
kvs = json.load(open(sys.argv[1]))["kvs"]
t = {base64.b64decode(kv["key"]).decode(): json.loads(base64.b64decode(kv["value"])) for kv in kvs}
assert set(t) == {"/drfd/tenants/web", "/drfd/tenants/batch", "/drfd/tenants/db"}, t
assert t["/drfd/tenants/web"] == {"weight": 2, "cgroup": "web", "tasks": 10,
                                   "task": {"cpu": 2, "memory": 1 << 30}}, t
assert t["/drfd/tenants/batch"] == {"weight": 1, "cgroup": "jobs/batch", "tasks": "unlimited",
                                     "task": {"cpu": 4, "memory": 8 << 30}}, t
assert t["/drfd/tenants/db"] == {"weight": 1, "cgroup": "db",
                                  "demand": {"cpu": 4, "memory": 16 << 30}}, t
PY

# Again: nothing changes, so nothing is written.
rev=$(revision)
"$DRFCTL" fleet apply -f "$work/fleet.conf" --endpoints "$ep" >/dev/null 2>&1
check "fleet apply again: exit 0" [ $? -eq 0 ]
check "fleet apply again: etcd's revision stays ($rev)" [ "$(revision)" = "$rev" ]

# A file of tenants alone, without db and with web changed: db deleted, web put, in one revision.
cat >"$work/tenants.conf" <<'EOF'
[tenant web]
weight = 3
task-cpu = 2
task-memory = 1G
tasks = 10

[tenant batch]
task-cpu = 4
task-memory = 8G
tasks = unlimited
cgroup = jobs/batch
EOF
"$DRFCTL" fleet apply -f "$work/tenants.conf" --endpoints "$ep" >/dev/null 2>&1
check "fleet apply of tenants alone: exit 0" [ $? -eq 0 ]
check "fleet apply: one txn, one revision" [ "$(revision)" = "$((rev + 1))" ]
check "fleet apply: db deleted" [ -z "$(ctl get /drfd/tenants/db --print-value-only)" ]
web=$(ctl get /drfd/tenants/web --print-value-only)
check "fleet apply: web's weight 3" [ "${web#'{"weight":3,'}" != "$web" ]

# --prefix.
"$DRFCTL" fleet apply -f "$work/fleet.conf" --endpoints "$ep" --prefix /other/ >/dev/null 2>&1
check "fleet apply --prefix /other/: its own keys" [ "$(ctl get --prefix /other/tenants/ --keys-only | grep -c .)" = 3 ]

# What the nodes and the planner write, as drfd's fleet mode writes them.
lease=$(ctl lease grant 60 | sed -nE 's/^lease ([0-9a-f]+) granted.*/\1/p')
ctl put --lease="$lease" /drfd/nodes/n1 '{"capacity":{"cpu":8,"memory":17179869184},"labels":{"zone":"eu-1"}}' >/dev/null
ctl put --lease="$lease" /drfd/nodes/n2 '{"capacity":{"cpu":8,"memory":17179869184}}' >/dev/null
ctl put --lease="$lease" /drfd/planner n1 >/dev/null
planner_rev=$(field CreateRevision get /drfd/planner)
ctl put /drfd/assign/n1 '{"revision":7,"planner":"n1","tenants":[{"name":"web","cgroup":"web","weight":3,"tasks":2,"alloc":{"cpu":4,"memory":2147483648}}]}' >/dev/null
ctl put /drfd/assign/n2 '{"revision":7,"planner":"n1","tenants":[{"name":"batch","cgroup":"jobs/batch","weight":1,"tasks":1,"alloc":{"cpu":4,"memory":8589934592}},{"name":"web","cgroup":"web","weight":3,"tasks":1,"alloc":{"cpu":2,"memory":1073741824}}]}' >/dev/null
ctl put /drfd/assign/gone '{"revision":3,"planner":"n1","tenants":[]}' >/dev/null
"$DRFCTL" fleet status --endpoints "$ep" --json >"$work/status.json" 2>"$work/status.err"
check "fleet status --json: exit 0" [ $? -eq 0 ]
check "fleet status --json: planner, nodes, assignments, shares" python3 - "$work/status.json" "$planner_rev" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["planner"] == {"name": "n1", "token": int(sys.argv[2])}, d["planner"]
nodes = {n["name"]: n for n in d["nodes"]}
assert set(nodes) == {"n1", "n2", "gone"}, nodes
assert nodes["n1"]["alive"] and nodes["n2"]["alive"] and not nodes["gone"]["alive"], nodes
assert nodes["n1"]["capacity"] == {"cpu": 8, "memory": 16 << 30}, nodes["n1"]
assert nodes["n1"]["labels"] == {"zone": "eu-1"}, nodes["n1"]
assert nodes["n1"]["assignment"]["revision"] == 7, nodes["n1"]
assert nodes["gone"]["assignment"]["revision"] == 3, nodes["gone"]
t = {x["name"]: x for x in d["tenants"]}
assert set(t) == {"web", "batch"}, t
assert t["web"]["placement"] == {"n1": 2, "n2": 1}, t["web"]
assert t["web"]["tasks_placed"] == 3 and t["web"]["tasks"] == 10, t["web"]
# web holds 6 of 16 cores, 3G of 32G: its dominant share of the pool is cpu's.
assert abs(t["web"]["global_dominant_share"] - 6 / 16) < 1e-12, t["web"]
assert abs(t["batch"]["global_dominant_share"] - 0.25) < 1e-12, t["batch"]
assert t["batch"]["tasks"] == "unlimited", t["batch"]
assert d["invalid_values"] == 0, d
PY
"$DRFCTL" fleet status --endpoints "$ep" >"$work/status.txt" 2>&1
check "fleet status: exit 0" [ $? -eq 0 ]
# A value that does not decode is counted, not fatal.
ctl put /drfd/tenants/broken '{"weight": -1}' >/dev/null
"$DRFCTL" fleet status --endpoints "$ep" --json >"$work/status2.json" 2>&1
check "fleet status with a broken tenant: exit 0, counted" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["invalid_values"] == 1 and len(d["tenants"]) == 2, d' "$work/status2.json"
# apply removes what is not a tenant of the file, broken or not.
"$DRFCTL" fleet apply -f "$work/tenants.conf" --endpoints "$ep" >/dev/null 2>&1
check "fleet apply: the broken value deleted" [ -z "$(ctl get /drfd/tenants/broken --print-value-only)" ]

# fleet submit: Best-Fit over the nodes alive whose assignment gives the tenant room. web's task
# is (2 cores, 1G) of a pool of (16, 32G), (0.8, 0.2) as a direction; n1 and n2 are (8, 16G),
# (0.5, 0.5): H = 0.6 on both, the tie to n1. n1 then has (6, 15G) left, H 0.711: n2 next
# (H 0.6, room for one task of web's there). n2's room is then gone: n1 (room for one more).
# Then neither has room: the one with the least H among those that could hold it (n2, waits).
submit_node() { # submit_node OUT ARGS...: the node of drfctl fleet submit --json, or "exit N".
	local out=$1 rc
	shift
	"$DRFCTL" fleet submit --endpoints "$ep" --json "$@" >"$out" 2>"$out.err"
	rc=$?
	if [ $rc -ne 0 ]; then echo "exit $rc"; return; fi
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["node"], "waits" if d["waits"] else "now")' "$out"
}
ntasks() { ctl get --prefix /drfd/tasks/ --keys-only | grep -c .; }
check "fleet submit web: n1 (a tie of H, by node order)" [ "$(submit_node "$work/s1" web -- /bin/true)" = "n1 now" ]
check "fleet submit web: n2 (the least H)" [ "$(submit_node "$work/s2" web -- /bin/true)" = "n2 now" ]
check "fleet submit web: n1 (the only room left)" [ "$(submit_node "$work/s3" web -- /bin/true)" = "n1 now" ]
check "fleet submit web: n2, waiting (no room now; the least H)" [ "$(submit_node "$work/s4" web -- /bin/true)" = "n2 waits" ]
check "fleet submit: the task's value" python3 - "$work/s1" <<PY
import base64, json, subprocess, sys
d = json.load(open(sys.argv[1]))
out = subprocess.run(["etcdctl", "--endpoints", "$ep", "get", "/drfd/tasks/n1/" + d["id"],
                      "--write-out=json"], capture_output=True, check=True).stdout
v = json.loads(base64.b64decode(json.loads(out)["kvs"][0]["value"]))
assert v["tenant"] == "web" and v["argv"] == ["/bin/true"], v
assert v["task"] == {"cpu": 2, "memory": 1 << 30}, v
assert "key" not in v and isinstance(v["submitted"], int) and v["by"], v
ids = subprocess.run(["etcdctl", "--endpoints", "$ep", "get", "/drfd/taskids/" + d["id"],
                      "--print-value-only"], capture_output=True, check=True).stdout
assert ids.decode().strip() == "n1", ids
PY
# The first task ended (as its node writes it): its room on n1 is free again.
ctl put "/drfd/taskstate/n1/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/s1")" \
	'{"state":"exited","code":0,"task":1,"at":1}' >/dev/null
check "fleet submit web after one ended: n1, room now" [ "$(submit_node "$work/s5" web -- /bin/true)" = "n1 now" ]
# --cpu/--memory instead of the tenant's shape.
r6=$(submit_node "$work/s6" web --cpu 1 --memory 512M -- sleep 1)
check "fleet submit web --cpu 1 --memory 512M: placed ($r6)" [ "${r6#exit}" = "$r6" ]
check "fleet submit --cpu 1 --memory 512M: the vector given" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["task"] == {"cpu": 1, "memory": 512 << 20}, d' "$work/s6"
# Refusals: nothing written (etcd's revision stays).
rev=$(revision)
n=$(ntasks)
check "fleet submit to an unknown tenant: exit 2" [ "$(submit_node "$work/r1" nope -- /bin/true)" = "exit 2" ]
check "fleet submit of a task larger than every share: exit 2" [ "$(submit_node "$work/r2" web --cpu 5 -- /bin/true)" = "exit 2" ]
check "fleet submit refused: the tenant, the task, why" grep -q "tenant 'web': the task is larger than its share on each of the 2 nodes" "$work/r2.err"
check "fleet submit refused: etcd's revision stays" [ "$(revision)" = "$rev" ]
check "fleet submit refused: no task written" [ "$(ntasks)" = "$n" ]
ctl put /drfd/tenants/lonely '{"weight":1,"task":{"cpu":1}}' >/dev/null
rev=$(revision)
check "fleet submit for a tenant assigned nowhere: exit 2" [ "$(submit_node "$work/r3" lonely -- /bin/true)" = "exit 2" ]
check "fleet submit for a tenant assigned nowhere: nothing written" [ "$(revision)" = "$rev" ]
check "fleet submit for a tenant assigned nowhere: says so" grep -q "no node alive has an assignment for it" "$work/r3.err"
ctl del /drfd/tenants/lonely >/dev/null
# --task-key: the task's ID; a retry writes nothing and answers where it went.
first=$(submit_node "$work/k1" web --task-key job-1 -- /bin/echo once)
rev=$(revision)
second=$(submit_node "$work/k2" web --task-key job-1 -- /bin/echo once)
check "fleet submit --task-key: placed ($first)" grep -qxE 'n[12] waits' <<<"$first"
check "fleet submit --task-key again: the same node, nothing written" [ "${second% *}" = "${first% *}" ]
check "fleet submit --task-key again: etcd's revision stays" [ "$(revision)" = "$rev" ]
check "fleet submit --task-key again: one task job-1" [ "$(ctl get --prefix /drfd/tasks/ --keys-only | grep -c '/job-1$')" = 1 ]
check "fleet submit --task-key again: placed false" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["placed"] is False and d["id"] == "job-1", d' "$work/k2"
"$DRFCTL" fleet submit web --endpoints "$ep" --task-key 'bad key' -- /bin/true >/dev/null 2>&1
check "fleet submit --task-key that is not a name: exit 64" [ $? -eq 64 ]
"$DRFCTL" fleet submit web --endpoints "$ep" >/dev/null 2>&1
check "fleet submit without a command: exit 64" [ $? -eq 64 ]
# status shows the tasks and their states.
"$DRFCTL" fleet status --endpoints "$ep" --json >"$work/status3.json" 2>&1
check "fleet status --json: the tasks, their nodes and states" python3 - "$work/status3.json" "$work/s1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
first = json.load(open(sys.argv[2]))["id"]
t = {x["id"]: x for x in d["tasks"]}
assert len(t) == 7, t
assert t[first]["node"] == "n1" and t[first]["state"] == "exited" and t[first]["code"] == 0, t[first]
assert t["job-1"]["state"] == "submitted" and t["job-1"]["key"] == "job-1", t["job-1"]
assert t["job-1"]["argv"] == ["/bin/echo", "once"], t["job-1"]
PY
"$DRFCTL" fleet status --endpoints "$ep" >"$work/status3.txt" 2>&1
check "fleet status: a line per task" [ "$(grep -cE '^[0-9a-z-]+ +n[12] +web +(submitted|exited 0)' "$work/status3.txt")" = 7 ]

# Exit codes.
printf '[tenant x]\nweight = 0\n' >"$work/bad.conf"
"$DRFCTL" fleet apply -f "$work/bad.conf" --endpoints "$ep" >/dev/null 2>&1
check "fleet apply of a broken file: exit 2" [ $? -eq 2 ]
"$DRFCTL" fleet apply -f "$work/fleet.conf" >/dev/null 2>&1
check "fleet apply without --endpoints: exit 64" [ $? -eq 64 ]
"$DRFCTL" fleet status --endpoints "$ep" --prefix nope >/dev/null 2>&1
check "fleet status --prefix without '/': exit 64" [ $? -eq 64 ]
"$DRFCTL" fleet status --endpoints "ftp://127.0.0.1:1" >/dev/null 2>&1
check "fleet status --endpoints ftp://: exit 64" [ $? -eq 64 ]
"$DRFCTL" fleet status --endpoints "http://127.0.0.1:$p_closed" >/dev/null 2>&1
check "fleet status with etcd unreachable: exit 1" [ $? -eq 1 ]
"$DRFCTL" fleet apply -f "$work/fleet.conf" --endpoints "http://127.0.0.1:$p_closed" >/dev/null 2>&1
check "fleet apply with etcd unreachable: exit 1" [ $? -eq 1 ]
"$DRFCTL" fleet nothing >/dev/null 2>&1
check "fleet with an unknown subcommand: exit 64" [ $? -eq 64 ]

# etcd's users: the password from a file (its first line), never the command
# line. Last: with auth on, etcdctl above would need a user too.
printf 'fleet-pw\n' >"$work/pw"
printf 'wrong\n' >"$work/pw-wrong"
ctl user add root:root-pw >/dev/null && ctl user grant-role root root >/dev/null &&
	ctl role add fleet >/dev/null &&
	ctl role grant-permission fleet readwrite /drfd/ --prefix=true >/dev/null &&
	ctl user add fleet:fleet-pw >/dev/null && ctl user grant-role fleet fleet >/dev/null &&
	ctl auth enable >/dev/null 2>&1
check "etcd auth enabled, user fleet on /drfd/" [ $? -eq 0 ]
"$DRFCTL" fleet status --endpoints "$ep" --user fleet --password-file "$work/pw" --json >"$work/auth.json" 2>"$work/auth.err"
check "fleet status as fleet with its password file: exit 0, the same planner" \
	python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["planner"]["name"] != "n1")' "$work/auth.json"
"$DRFCTL" fleet status --endpoints "$ep" --user fleet --password-file "$work/pw-wrong" >/dev/null 2>&1
check "fleet status with a wrong password: exit 1" [ $? -eq 1 ]
"$DRFCTL" fleet status --endpoints "$ep" >/dev/null 2>&1
check "fleet status without a user, auth on: exit 1" [ $? -eq 1 ]
"$DRFCTL" fleet status --endpoints "$ep" --user fleet --password-file "$work/none" >/dev/null 2>&1
check "fleet status with no such password file: exit 64" [ $? -eq 64 ]

end=$(date +%s.%N)
echo "test_fleet_etcd: $pass passed, $failed failed ($(awk "BEGIN { printf \"%.1f\", $end - $start }") s)"
[ "$failed" -eq 0 ]
