#!/usr/bin/env bash
# A fleet under etcd's roles (docs/fleet.md, "etcd roles"): one etcd member with
# authentication on, its roles and users made by the shipped
# deploy/examples/etcd-roles.sh. Each node's user may write only its own
# registration: node1's is refused another node's, an assignment and the planner
# key (etcdctl exits non-zero and the key is unchanged), while the planner role's
# user writes assignments. Then drfd nodes run as those users: node2 with the
# planner role, node1 with [fleet] planner = no, node3 left at planner = yes
# without the role (etcd refuses its campaign: it says so and goes on as a plain
# node). All register, node2 plans, node1 and node3 put their assignments in
# force (their cgroups' knobs); drfctl fleet submit as the submitter's user
# writes a task, as the viewer's it is refused and writes nothing.
# shellcheck disable=SC2317 # the conditions are called through wait_until and check
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup
etcd_pid=
trap '[ -n "$etcd_pid" ] && kill "$etcd_pid" 2>/dev/null; cleanup' EXIT
ip link set lo up

diagram <<'DIAGRAM'
etcd (127.0.0.1:23379, auth on; roles by deploy/examples/etcd-roles.sh --planner node2 node1 node2 node3)
 |- drfd node1  cpu 2, memory 1G    user drfd-node-node1, [fleet] planner = no
 |- drfd node2  cpu 1, memory 512M  user drfd-node-node2 (+ drfd-planner)
 '- drfd node3  cpu 2, memory 1G    user drfd-node-node3, planner = yes (default) but no role
expect: as drfd-node-node1, etcdctl put nodes/node1 -> 0; nodes/node2, assign/node1,
        planner -> refused, keys unchanged; as drfd-node-node2, put assign/x -> 0;
        all three registered, node2 plans, node1 campaigns "no", node3 "refused" and
        registered; web (0.5 cpu, 128M) x 8 placed, node1's and node3's cgroups have
        their share's memory.max; drfctl fleet submit as drfd-submit -> 0 and
        taskids/ID written, as drfd-viewer -> non-zero, taskids/ID absent
DIAGRAM

if ! command -v etcd >/dev/null; then
	result FAIL etcd-installed "etcd is not installed (deploy/install-deps.sh installs etcd-server)"
	exit 0
fi
EP=http://127.0.0.1:23379
etcd --name r1 --data-dir "$work/etcd" --listen-client-urls "$EP" --advertise-client-urls "$EP" \
	--listen-peer-urls http://127.0.0.1:23380 --initial-advertise-peer-urls http://127.0.0.1:23380 \
	--initial-cluster r1=http://127.0.0.1:23380 --bcrypt-cost 4 >"$work/etcd.log" 2>&1 &
etcd_pid=$!
healthy() { ETCDCTL_API=3 etcdctl --endpoints "$EP" endpoint health >/dev/null 2>&1; }
t=$(wait_until 60 healthy)
check roles-etcd-up "[ '$t' != timeout ]" "etcd healthy after $t s"

# The roles and users, by the script an operator runs (auth turned on by it; that
# it is idempotent, and the whole table of permissions, tests/cli/test_etcd_roles.sh
# checks on the host: each etcdctl costs about a second here).
pw=$work/pw
"$DRF_TOP/deploy/examples/etcd-roles.sh" --endpoints "$EP" --enable-auth --password-dir "$pw" \
	--planner node2 node1 node2 node3 >"$work/roles.out" 2>&1
rc=$?
check roles-script "[ $rc -eq 0 ] && [ -s '$pw/drfd-node-node1' ] && [ -s '$pw/root' ]" \
	"etcd-roles.sh exit $rc: $(tr '\n' ' ' <"$work/roles.out" | tail -c 300)"

asuser() { # USER etcdctl-args...: etcdctl as USER (its password from the script's file)
	local u=$1
	shift
	ETCDCTL_API=3 ETCDCTL_USER="$u:$(cat "$pw/$u")" etcdctl --endpoints "$EP" --dial-timeout 10s "$@"
}
value() { asuser root get "$1" --print-value-only 2>/dev/null; } # KEY: its value, "" if absent

# node1's user: its own registration, nothing of another's or of the planner's.
asuser drfd-node-node1 put /drfd/nodes/node1 probe >/dev/null 2>&1
own=$?
own_v=$(value /drfd/nodes/node1)
asuser drfd-node-node1 del /drfd/nodes/node1 >/dev/null 2>&1
asuser drfd-node-node1 put /drfd/nodes/node2 forged >"$work/forge1.err" 2>&1
other=$?
asuser drfd-node-node1 put /drfd/assign/node1 forged >/dev/null 2>&1
assign=$?
asuser drfd-node-node1 put /drfd/planner node1 >/dev/null 2>&1
planner=$?
asuser drfd-node-node1 put /drfd/tenants/web forged >/dev/null 2>&1
tenants=$?
# etcdctl's exit 1 is etcd's refusal (2 would be a connection that failed).
check roles-node-own-only "[ $own -eq 0 ] && [ '$own_v' = probe ] && [ $other -eq 1 ] && [ -z \"\$(value /drfd/nodes/node2)\" ] && [ $assign -eq 1 ] && [ -z \"\$(value /drfd/assign/node1)\" ] && [ $planner -eq 1 ] && [ -z \"\$(value /drfd/planner)\" ] && [ $tenants -eq 1 ] && [ -z \"\$(value /drfd/tenants/web)\" ]" \
	"as drfd-node-node1: put nodes/node1 exit $own ('$own_v'); nodes/node2 exit $other ($(head -c 100 "$work/forge1.err")), assign/node1 exit $assign, planner exit $planner, tenants/web exit $tenants"

# The planner role's user writes assignments.
asuser drfd-node-node2 put /drfd/assign/probe x >/dev/null 2>&1
prc=$?
pv=$(value /drfd/assign/probe)
asuser drfd-node-node2 del /drfd/assign/probe >/dev/null 2>&1
check roles-planner-writes "[ $prc -eq 0 ] && [ '$pv' = x ] && [ -z \"\$(value /drfd/assign/probe)\" ]" \
	"as drfd-node-node2 (drfd-planner): put assign/probe exit $prc ('$pv'), deleted again"

node_conf() { # NAME CPU MEMORY [FLEET-LINE]
	mkdir -p "$work/$1"
	cat >"$work/$1.conf" <<CONF
[agent]
cgroup-root = $CG/roles-$1
mode = limit
interval = 500ms
state-dir = $work/$1/state
status-socket = $work/$1/drfd.sock
[capacity]
cpu = $2
memory = $3
[fleet]
endpoints = $EP
node = $1
lease-ttl = 3s
user = drfd-node-$1
password-file = $pw/drfd-node-$1
${4:-}
CONF
}
start_node() { # NAME
	mkdir -p "$CG/roles-$1"
	"$DRFD" -c "$work/$1.conf" --foreground 2>>"$work/$1.log" &
	for _ in $(seq 100); do [ -S "$work/$1/drfd.sock" ] && return 0; sleep 0.2; done
	result FAIL "roles-node-$1-starts" "drfd $1 did not start: $(tail -3 "$work/$1.log")"
	exit 0
}
node_conf node1 2 1G "planner = no"
node_conf node2 1 512M
node_conf node3 2 1G
for n in node1 node2 node3; do start_node $n; done

printf '[tenant web]\ntask-cpu = 0.5\ntask-memory = 128M\ntasks = 8\n' >"$work/fleet.conf"
"$DRFCTL" fleet apply -f "$work/fleet.conf" --endpoints "$EP" --user drfd-admin \
	--password-file "$pw/drfd-admin" >"$work/apply.out" 2>&1
rc=$?
check roles-apply-as-admin "[ $rc -eq 0 ]" "drfctl fleet apply as drfd-admin: exit $rc $(head -c 200 "$work/apply.out")"

pyserve "DRFCTL = '$DRFCTL'; WORK = '$work'; EP = '$EP'; PW = '$pw'; CG = '$CG'"'
import json, subprocess
def node(n, key):
    s = json.loads(subprocess.run([DRFCTL, "status", "-c", WORK + "/" + n + ".conf", "--json"],
                                  capture_output=True, text=True).stdout)
    return s["fleet"][key]
def fleet():
    return json.loads(subprocess.run([DRFCTL, "fleet", "status", "--endpoints", EP, "--json",
                                      "--user", "drfd-viewer", "--password-file", PW + "/drfd-viewer"],
                                     capture_output=True, text=True, check=True).stdout)
def answer(q, *a):
    if q == "node":   # a[1] of node a[0] status fleet
        return node(a[0], a[1])
    if q == "tasks":  # tasks of web assigned to node a[0], as etcd has it
        for n in fleet()["nodes"]:
            if n["name"] == a[0] and n["assignment"]:
                return int(sum(t["tasks"] for t in n["assignment"]["tenants"]))
        return 0
    if q == "taskid":  # whether a task with id a[0] is in the fleet
        return any(t["id"] == a[0] for t in fleet()["tasks"])
    if q == "settled":  # every node registered, node2 the planner as each knows it, its
        # assignment in force, the 8 tasks placed, memory.max of web on node1 and node3 as placed
        placed = {n["name"]: int(sum(t["tasks"] for t in n["assignment"]["tenants"]))
                  for n in fleet()["nodes"] if n["assignment"]}
        if sum(placed.values()) != 8:
            return False
        for n in ("node1", "node2", "node3"):
            s = json.loads(subprocess.run([DRFCTL, "status", "-c", WORK + "/" + n + ".conf", "--json"],
                                          capture_output=True, text=True).stdout)["fleet"]
            if not s["registered"] or s["planner_name"] != "node2" or \
               s["in_force_revision"] is None or s["in_force_revision"] != s["assignment_revision"]:
                return False
        for n in ("node1", "node3"):
            k = placed.get(n, 0)
            try:
                mem = open(CG + "/roles-" + n + "/web/memory.max").read().strip()
            except FileNotFoundError:
                mem = None
            if (k == 0 and mem is not None) or (k and mem != str(k * 134217728)):
                return False
        return True
'
mem_is() { # NODE TASKS: web's memory.max there is TASKS x 128M (absent when 0)
	if [ "$2" = 0 ]; then [ ! -e "$CG/roles-$1/web" ]; else [ "$(cat "$CG/roles-$1/web/memory.max" 2>/dev/null)" = $(($2 * 134217728)) ]; fi
}
settled() { [ "$(ask settled)" = True ]; }
# One question a poll (3 drfctl status and 1 fleet status): each drfctl costs a
# good part of a second here.
t=$(wait_until 120 settled)
c1=$(ask node node1 campaigns)
c3=$(ask node node3 campaigns)
r3=$(ask node node3 campaign_refused)
t1=$(ask tasks node1)
t3=$(ask tasks node3)
check roles-fleet-runs "[ '$t' != timeout ] && [ '$c1' = no ] && [ '$c3' = refused ] && [ \$(( $t1 + $t3 )) -ge 1 ] && mem_is node1 $t1 && mem_is node3 $t3 && [ \"\$(value /drfd/planner)\" = node2 ]" \
	"after $t s: planner $(value /drfd/planner); node1 campaigns '$c1' with $t1 tasks (memory.max $(cat "$CG/roles-node1/web/memory.max" 2>/dev/null)); node3 campaigns '$c3' ($r3) with $t3 tasks (memory.max $(cat "$CG/roles-node3/web/memory.max" 2>/dev/null)); node2 $(ask tasks node2)"

# drfctl fleet submit: the submitter's user writes the task; the viewer's is refused.
"$DRFCTL" fleet submit web --endpoints "$EP" --user drfd-submit --password-file "$pw/drfd-submit" \
	--task-key roles-ok -- true >"$work/submit1.out" 2>&1
s1=$?
"$DRFCTL" fleet submit web --endpoints "$EP" --user drfd-viewer --password-file "$pw/drfd-viewer" \
	--task-key roles-refused -- true >"$work/submit2.out" 2>&1
s2=$?
check roles-submit "[ $s1 -eq 0 ] && [ -n \"\$(value /drfd/taskids/roles-ok)\" ] && [ \"\$(ask taskid roles-ok)\" = True ] && [ $s2 -ne 0 ] && [ -z \"\$(value /drfd/taskids/roles-refused)\" ] && [ \"\$(ask taskid roles-refused)\" = False ]" \
	"as drfd-submit: exit $s1, taskids/roles-ok '$(value /drfd/taskids/roles-ok)'; as drfd-viewer: exit $s2 ($(head -c 150 "$work/submit2.out" | tr '\n' ' ')), taskids/roles-refused '$(value /drfd/taskids/roles-refused)'"
exit 0
