#!/usr/bin/env bash
# deploy/examples/etcd-roles.sh against a real etcd (Debian's etcd-server 3.4) on
# 127.0.0.1 only (free ports, a data directory of the test's own):
#   - it turns auth on and makes the roles and users of nodes a, b (b the planner),
#     and run again it exits 0 and leaves every role's permissions as they were;
#   - the permissions, as etcdctl run as each user finds them: node a writes its
#     registration and its tasks' states, and is refused (etcdctl exit 1, the key
#     unchanged) another node's, an assignment, the planner key, the tenants and
#     the tasks; node b (the planner role) writes the planner key and assignments;
#     drfd-submit writes tasks and task ids, not tenants or assignments;
#     drfd-admin writes tenants, not tasks; drfd-viewer reads and writes nothing;
#   - what it refuses: no node, no --planner, a --planner that is not a node,
#     a node name drfd would not take (exit 1, nothing made).
# etcd and etcdctl must be installed (deploy/install-deps.sh): without them this
# test fails, it does not skip.
#   tests/cli/test_etcd_roles.sh
set -u
etcd_test=test_etcd_roles
# shellcheck source=tests/cli/etcd_lib.sh
. "$(dirname "$0")/etcd_lib.sh"
etcd_need etcd etcdctl python3
script=$(cd "$(dirname "$0")/../.." && pwd)/deploy/examples/etcd-roles.sh
check() { # NAME CMD...: CMD's exit status 0 is a pass
	local name=$1
	shift
	if "$@"; then ok "$name"; else ko "$name"; fi
}

read -r p_client p_peer < <(free_ports 2)
ep=http://127.0.0.1:$p_client
etcd --name drfd-roles --data-dir "$work/data" \
	--listen-client-urls "$ep" --advertise-client-urls "$ep" \
	--listen-peer-urls "http://127.0.0.1:$p_peer" \
	--initial-advertise-peer-urls "http://127.0.0.1:$p_peer" \
	--initial-cluster "drfd-roles=http://127.0.0.1:$p_peer" \
	--bcrypt-cost 4 --logger zap --log-outputs stderr --log-level warn >"$work/etcd.log" 2>&1 &
etcd_pid=$!
up=0
for _ in $(seq 100); do
	if etcdctl --endpoints "$ep" --dial-timeout 2s endpoint health >/dev/null 2>&1; then
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

pw=$work/pw
# Refused before anything is made: etcd's auth stays off, no user is made.
"$script" --endpoints "$ep" --password-dir "$pw" --enable-auth a b >/dev/null 2>&1
r1=$?
"$script" --endpoints "$ep" --password-dir "$pw" --enable-auth --planner c a b >/dev/null 2>&1
r2=$?
"$script" --endpoints "$ep" --password-dir "$pw" --enable-auth --planner a a .b >/dev/null 2>&1
r3=$?
"$script" --endpoints "$ep" --password-dir "$pw" --enable-auth --planner a >/dev/null 2>&1
r4=$?
check "refused: no --planner, a planner not a node, a bad name, no node (exit 1 each, auth still off)" \
	eval "[ '$r1 $r2 $r3 $r4' = '1 1 1 1' ] && [ -z \"\$(etcdctl --endpoints '$ep' user list 2>/dev/null)\" ]"

"$script" --endpoints "$ep" --password-dir "$pw" --enable-auth --planner b a b >"$work/run1.out" 2>&1
check "etcd-roles.sh makes the roles and users, auth on (exit 0)" [ $? -eq 0 ]
cat "$work/run1.out"
rootctl() { ETCDCTL_USER="root:$(cat "$pw/root")" etcdctl --endpoints "$ep" --dial-timeout 5s "$@"; }
roles_now() {
	local r
	for r in $(rootctl role list); do echo "== $r"; rootctl role get "$r"; done
	for r in $(rootctl user list); do echo "== $r"; rootctl user get "$r"; done
}
roles_now >"$work/roles1"
check "auth is on: etcdctl without a user is refused" \
	eval "[ -s '$work/roles1' ] && ! etcdctl --endpoints '$ep' get /drfd/x >/dev/null 2>&1"
"$script" --endpoints "$ep" --password-dir "$pw" --planner b a b >"$work/run2.out" 2>&1
r=$?
roles_now >"$work/roles2"
check "run again: exit 0, every role and user as it was" eval "[ $r -eq 0 ] && cmp -s '$work/roles1' '$work/roles2'"
[ $r -eq 0 ] || cat "$work/run2.out"

asuser() { # USER etcdctl-args...
	local u=$1
	shift
	ETCDCTL_USER="$u:$(cat "$pw/$u")" etcdctl --endpoints "$ep" --dial-timeout 5s "$@"
}
value() { rootctl get "$1" --print-value-only 2>/dev/null; }
may() { # USER KEY: USER's put of KEY succeeds and the key holds it
	asuser "$1" put "$2" "by-$1" >/dev/null 2>&1 && [ "$(value "$2")" = "by-$1" ]
}
refused() { # USER KEY: USER's put of KEY exits 1 and the key is as it was
	local before
	before=$(value "$2")
	asuser "$1" put "$2" "by-$1" >/dev/null 2>&1
	[ $? -eq 1 ] && [ "$(value "$2")" = "$before" ]
}
n=drfd-node-a
check "node a writes nodes/a" may $n /drfd/nodes/a
check "node a writes taskstate/a/t1" may $n /drfd/taskstate/a/t1
for k in /drfd/nodes/b /drfd/assign/a /drfd/planner /drfd/tenants/web /drfd/tasks/a/t1 \
	/drfd/taskids/t1 /drfd/taskstate/b/t1; do
	check "node a is refused $k" refused $n "$k"
done
check "node a reads assign/a and the planner key" \
	eval "asuser $n get /drfd/assign/a >/dev/null && asuser $n get /drfd/planner >/dev/null"
check "node a is refused a read of assign/b" eval "! asuser $n get /drfd/assign/b >/dev/null 2>&1"
check "node b (planner role) writes the planner key" may drfd-node-b /drfd/planner
check "node b (planner role) writes assign/a" may drfd-node-b /drfd/assign/a
check "node b is refused nodes/a" refused drfd-node-b /drfd/nodes/a
check "drfd-submit writes tasks/a/t1 and taskids/t1" eval "may drfd-submit /drfd/tasks/a/t1 && may drfd-submit /drfd/taskids/t1"
check "drfd-submit is refused tenants/web and assign/a" eval "refused drfd-submit /drfd/tenants/web && refused drfd-submit /drfd/assign/a"
check "drfd-admin writes tenants/web" may drfd-admin /drfd/tenants/web
check "drfd-admin is refused tasks/a/t2" refused drfd-admin /drfd/tasks/a/t2
check "drfd-viewer reads the prefix" eval "[ \"\$(asuser drfd-viewer get /drfd/ --prefix --keys-only | grep -c .)\" -ge 5 ]"
check "drfd-viewer is refused tenants/web" refused drfd-viewer /drfd/tenants/web

end=$(date +%s.%N)
echo "test_etcd_roles: $pass passed, $failed failed ($(awk "BEGIN { printf \"%.1f\", $end - $start }") s)"
[ "$failed" -eq 0 ]
