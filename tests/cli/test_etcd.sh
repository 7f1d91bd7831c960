#!/usr/bin/env bash
# The etcd client of fleet mode (agent/fleet/etcd.h) against a real etcd, as
# Debian 12 ships it (etcd-server 3.4): the conformance suite that
# tests/unit/test_etcd.c runs over the fake, run again by the same binary
# over etcd, which the fake must not drift from. One etcd on 127.0.0.1 only
# (free ports, a data directory of the test's own, a plain and a TLS client
# listener), and the suite three times:
#   - plain HTTP, with the transport's tests: every endpoint refused
#     (-ECONNREFUSED, naming the endpoint), failover from a dead endpoint,
#     and from one that takes connections and never answers (a stopped
#     member: a listener of the test binary's, first in the list);
#   - HTTPS with client certificates (a CA, etcd's certificate and a
#     client's, made here by openssl; etcd with --client-cert-auth): then
#     without a client certificate, or trusting another CA, calls fail,
#     naming the endpoint;
#   - etcd's authentication on (root, and a user whose role is readwrite on
#     the suite's prefix /t/): the user's calls carry a token; a key outside
#     the role, a wrong password, no user at all are -EACCES; a token etcd let
#     expire (--auth-token-ttl 1) is renewed once and the calls go through;
#     and a lease of TTL 2 s left to expire, for real: its key deleted, its
#     watcher told;
#   - a cluster of two members (elections in 0.5 s), one stopped by the
#     test: a watch on the other, which lost its leader, is cancelled by etcd
#     and ends as a broken stream, and resumes once a leader is back; and
#     `drfctl fleet apply` (with DRFCTL) while the cluster has no leader: it
#     says so, tries again every half second, and is done once a leader is back.
# etcd and etcdctl must be installed (deploy/install-deps.sh): without them
# this test fails, it does not skip. etcd and the directory go on any exit.
#   TEST_ETCD=.output/cc/tests/test_etcd DRFCTL=.output/cc/drfctl tests/cli/test_etcd.sh
# TEST_ETCD_RUNNER runs the binary under something, e.g.
#   TEST_ETCD_RUNNER="valgrind -q --error-exitcode=99 --leak-check=full"
set -u
bin=${TEST_ETCD:?set TEST_ETCD to the test_etcd binary}
drfctl=${DRFCTL:?set DRFCTL to the drfctl binary}
read -r -a runner <<<"${TEST_ETCD_RUNNER:-}"
etcd_test=test_etcd
# shellcheck source=tests/cli/etcd_lib.sh
. "$(dirname "$0")/etcd_lib.sh"
etcd_need etcd etcdctl openssl python3

read -r p_http p_https p_peer < <(free_ports 3)

# The certificates: a CA; etcd's for 127.0.0.1, which etcd's gateway also
# presents as a client to etcd's own gRPC port (so it has both uses); a
# client's.
certs() {
	local n
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$work/ca.key" -out "$work/ca.crt" -subj /CN=drfd-test-ca -days 1 || return 1
	printf '%s\n' 'subjectAltName=IP:127.0.0.1' 'extendedKeyUsage=serverAuth,clientAuth' \
		>"$work/server.ext"
	printf '%s\n' 'extendedKeyUsage=clientAuth' >"$work/client.ext"
	for n in server client; do
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$work/$n.key" -out "$work/$n.csr" -subj "/CN=drfd-test-$n" &&
			openssl x509 -req -in "$work/$n.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
				-CAcreateserial -out "$work/$n.crt" -days 1 -extfile "$work/$n.ext" ||
			return 1
	done
}
if certs >"$work/openssl.log" 2>&1; then ok "openssl made a CA, etcd's and a client's certificates"
else
	ko "openssl made a CA, etcd's and a client's certificates"
	tail -n 5 "$work/openssl.log"
	exit 1
fi

http=http://127.0.0.1:$p_http
https=https://127.0.0.1:$p_https
# --auth-token-ttl 1: a token idle for a second goes (the renewal test);
# --bcrypt-cost 4: passwords checked fast (the least bcrypt allows).
etcd --name drfd-test --data-dir "$work/data" \
	--listen-client-urls "$http,$https" --advertise-client-urls "$http" \
	--listen-peer-urls "http://127.0.0.1:$p_peer" \
	--initial-advertise-peer-urls "http://127.0.0.1:$p_peer" \
	--initial-cluster "drfd-test=http://127.0.0.1:$p_peer" \
	--cert-file "$work/server.crt" --key-file "$work/server.key" \
	--client-cert-auth --trusted-ca-file "$work/ca.crt" \
	--auth-token simple --auth-token-ttl 1 --bcrypt-cost 4 \
	--logger zap --log-outputs stderr --log-level warn >"$work/etcd.log" 2>&1 &
etcd_pid=$!

ctl() { etcdctl --endpoints "$http" --dial-timeout 2s "$@"; }
up=0
for _ in $(seq 100); do
	if ctl endpoint health >/dev/null 2>&1; then
		up=1
		break
	fi
	kill -0 "$etcd_pid" 2>/dev/null || break
	sleep 0.1
done
if [ $up -eq 1 ]; then ok "etcd $(etcd --version | sed -n 's/^etcd Version: //p') up on 127.0.0.1"
else
	ko "etcd up on 127.0.0.1"
	tail -n 20 "$work/etcd.log"
	exit 1
fi

# run NAME ARGS...: the suite binary; its exit status is the number of tests failed.
run() {
	local name=$1
	shift
	if "${runner[@]}" "$bin" "$@" >"$work/run.log" 2>&1; then
		ok "$name: $(grep -c '^\[       OK \]' "$work/run.log") tests"
	else
		ko "$name"
		grep -vE '^\[ RUN|^\[       OK' "$work/run.log" | head -n 40
	fi
}

run "conformance and transport over HTTP" --endpoints "$http"
run "conformance over HTTPS with a client certificate" --endpoints "$https" \
	--cacert "$work/ca.crt" --cert "$work/client.crt" --key "$work/client.key"

auth_setup() {
	ctl user add root:root-pw &&
		ctl role add fleet &&
		ctl role grant-permission fleet --prefix=true readwrite /t/ &&
		ctl user add drfd:drfd-pw &&
		ctl user grant-role drfd fleet &&
		ctl auth enable
}
if auth_setup >"$work/auth.log" 2>&1; then ok "etcd's authentication on, user drfd on /t/"
else
	ko "etcd's authentication on, user drfd on /t/"
	tail -n 5 "$work/auth.log"
fi
run "conformance with a user and token; refusals; token renewal; a lease expiring" \
	--endpoints "$http" --user drfd --password drfd-pw --denied /denied/key --token-ttl 1 \
	--lease-expiry
# etcd's own client agrees: the user cannot touch what is outside its role.
if ctl --user drfd:drfd-pw get /denied/key 2>&1 | grep -q 'permission denied'; then
	ok "etcdctl as drfd outside /t/: permission denied"
else
	ko "etcdctl as drfd outside /t/: permission denied"
fi

# Two members of a cluster of their own; the test stops the second (SIGSTOP)
# and lets it go on. On any exit both go (let go on first), then etcd_cleanup.
read -r c1 p1 c2 p2 < <(free_ports 4)
pair_pids=()
pair_cleanup() {
	local p
	for p in "${pair_pids[@]}"; do
		kill -CONT "$p" 2>/dev/null
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	etcd_cleanup
}
trap pair_cleanup EXIT
pair="m1=http://127.0.0.1:$p1,m2=http://127.0.0.1:$p2"
for m in "m1 $c1 $p1" "m2 $c2 $p2"; do
	read -r name cport pport <<<"$m"
	etcd --name "$name" --data-dir "$work/$name" \
		--listen-client-urls "http://127.0.0.1:$cport" \
		--advertise-client-urls "http://127.0.0.1:$cport" \
		--listen-peer-urls "http://127.0.0.1:$pport" \
		--initial-advertise-peer-urls "http://127.0.0.1:$pport" \
		--initial-cluster "$pair" --heartbeat-interval 50 --election-timeout 500 \
		--logger zap --log-outputs stderr --log-level error >"$work/$name.log" 2>&1 &
	pair_pids+=($!)
done
up=0
for _ in $(seq 100); do
	if etcdctl --endpoints "http://127.0.0.1:$c1,http://127.0.0.1:$c2" --dial-timeout 2s \
		endpoint health >/dev/null 2>&1; then
		up=1
		break
	fi
	sleep 0.1
done
if [ $up -eq 1 ]; then
	run "a watch on a member that lost its leader" \
		--endpoints "http://127.0.0.1:$c1,http://127.0.0.1:$c2" --no-leader "${pair_pids[1]}"
	# An apply during an election: m2 stopped, m1 alone has no leader until m2
	# goes on 3 s later. The apply must not give up meanwhile.
	printf '[tenant web]\ntask-cpu = 1\ntask-memory = 1G\ntasks = 2\n' >"$work/fleet.conf"
	kill -STOP "${pair_pids[1]}"
	sleep 1.5
	(sleep 3; kill -CONT "${pair_pids[1]}") &
	cont=$!
	"$drfctl" fleet apply -f "$work/fleet.conf" --endpoints "http://127.0.0.1:$c1" \
		>"$work/apply.out" 2>"$work/apply.err"
	rc=$?
	wait "$cont"
	got=$(etcdctl --endpoints "http://127.0.0.1:$c1,http://127.0.0.1:$c2" get --print-value-only \
		/drfd/tenants/web 2>/dev/null)
	if [ $rc -eq 0 ] && grep -q "gRPC code 14); trying again" "$work/apply.err" && [ -n "$got" ]; then
		ok "fleet apply while the cluster has no leader: tried again, exit 0 once it has one"
	else
		ko "fleet apply without a leader: exit $rc, web ${got:-absent}: $(cat "$work/apply.err")"
	fi
else
	ko "a cluster of two members up"
	tail -n 5 "$work/m1.log" "$work/m2.log"
fi

end=$(date +%s.%N)
echo "test_etcd: $pass passed, $failed failed ($(awk "BEGIN { printf \"%.1f\", $end - $start }") s)"
[ "$failed" -eq 0 ]
