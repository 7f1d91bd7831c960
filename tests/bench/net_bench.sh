#!/usr/bin/env bash
# The network programs' cost, and what drfd's shaping costs a flow that HTB does
# not limit, on one veth pair between two network namespaces made here
# (198.18.9.0/24), in one run:
#   - the classifier's cost per packet, from the kernel's BPF run-time
#     statistics (kernel.bpf_stats_enabled): run_time_ns / run_cnt of the
#     egress and ingress programs while a tenant sends and receives;
#   - iperf3 throughput of one TCP flow without drfd (the device's default
#     qdisc) and through drfd (the flow in a tenant: classified, counted, in an
#     HTB class whose rate is far above what the pair carries), alternated
#     ROUNDS times so that both see the same machine.
#   DRFD=... DRFCTL=... tests/bench/net_bench.sh [ROUNDS [SECONDS]]
set -u
drfd=${DRFD:?set DRFD}
drfctl=${DRFCTL:?set DRFCTL}
rounds=${1:-3}
secs=${2:-4}
if [ "$(id -u)" -ne 0 ] || ! command -v iperf3 >/dev/null ||
	[ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" != bpf_fs ]; then
	echo "SKIP net_bench: needs root, iperf3 and bpffs at /sys/fs/bpf"
	exit 0
fi
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
id=$$
nsA=drfbA$id nsB=drfbB$id root=$mnt/drfbench$id work=$(mktemp -d)
drfd_pid=''
cleanup() {
	[ -n "$drfd_pid" ] && kill "$drfd_pid" 2>/dev/null && wait "$drfd_pid" 2>/dev/null
	nsenter --net="/run/netns/$nsA" "$drfctl" net-reset -c "$work/drfd.conf" >/dev/null 2>&1
	ip netns pids "$nsB" 2>/dev/null | xargs -r kill 2>/dev/null
	ip netns del "$nsA" 2>/dev/null
	ip netns del "$nsB" 2>/dev/null
	rmdir "$root/t" "$root" 2>/dev/null
	probes=${root#/}
	rm -rf "/sys/fs/bpf/drfd-probes/${probes//\//-}"
	sysctl -qw kernel.bpf_stats_enabled="$stats_was" 2>/dev/null
	rm -rf "$work"
}
stats_was=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
trap cleanup EXIT
if ! { ip netns add "$nsA" && ip netns add "$nsB" &&
	ip link add va netns "$nsA" type veth peer name vb netns "$nsB" &&
	ip -n "$nsA" addr add 198.18.9.1/24 dev va && ip -n "$nsB" addr add 198.18.9.2/24 dev vb &&
	ip -n "$nsA" link set va up && ip -n "$nsB" link set vb up; }; then
	echo "SKIP net_bench: cannot make network namespaces"
	exit 0
fi
ip netns exec "$nsB" iperf3 -s -D -p 5301 >/dev/null 2>&1
sleep 0.5
cat >"$work/drfd.conf" <<CONF
[agent]
cgroup-root = $root
mode = share
state-dir = $work/state
status-socket = $work/drfd.sock
[capacity]
net-device = va
net-rate = 100gbit
net-link-rate = 100gbit
net-ingress-rate = 100gbit
[tenant t]
CONF

# bits/s of one flow for SECONDS: in tenant t (drfctl exec) or outside drfd.
flow() { # in|out
	local cmd=(iperf3 -c 198.18.9.2 -p 5301 -t "$secs" -J)
	if [ "$1" = in ]; then
		nsenter --net="/run/netns/$nsA" "$drfctl" exec -c "$work/drfd.conf" t -- "${cmd[@]}"
	else
		nsenter --net="/run/netns/$nsA" "${cmd[@]}"
	fi | python3 -c "import json,sys; print(json.load(sys.stdin)['end']['sum_received']['bits_per_second'])"
}

start() {
	nsenter --net="/run/netns/$nsA" "$drfd" -c "$work/drfd.conf" --foreground >>"$work/log" 2>&1 &
	drfd_pid=$!
	for _ in $(seq 50); do
		[ -d "$root/t" ] && tc -n "$nsA" qdisc show dev va | grep -q 'htb d7f:' && return 0
		sleep 0.2
	done
	return 1
}
stop() {
	kill "$drfd_pid"
	wait "$drfd_pid" 2>/dev/null
	drfd_pid=''
	nsenter --net="/run/netns/$nsA" "$drfctl" net-reset -c "$work/drfd.conf" >/dev/null 2>&1
}

echo "command: tests/bench/net_bench.sh $rounds $secs (veth pair, one TCP flow, ${secs} s each)"
outs=() ins=()
for _ in $(seq "$rounds"); do
	outs+=("$(flow out)")
	start || { echo "drfd did not start: $(tail -3 "$work/log")"; exit 1; }
	ins+=("$(flow in)")
	stop
done
sysctl -qw kernel.bpf_stats_enabled=1
start || exit 1
# The flow both ways: data out (egress program), then data in (-R: ingress program).
nsenter --net="/run/netns/$nsA" "$drfctl" exec -c "$work/drfd.conf" t -- \
	iperf3 -c 198.18.9.2 -p 5301 -t "$secs" >/dev/null
nsenter --net="/run/netns/$nsA" "$drfctl" exec -c "$work/drfd.conf" t -- \
	iperf3 -c 198.18.9.2 -p 5301 -t "$secs" -R >/dev/null
cost=$(bpftool prog show -j | python3 -c "
import json, sys
for p in json.load(sys.stdin):
    if p.get('name') in ('drf_net_egress', 'drf_net_ingress') and p.get('run_cnt'):
        print('%s: %d runs, %.1f ns per packet' % (p['name'], p['run_cnt'], p['run_time_ns'] / p['run_cnt']))")
stop
python3 - "${outs[*]}" "${ins[*]}" <<'PY'
import sys, statistics as st
out = [float(x) / 1e9 for x in sys.argv[1].split()]
inn = [float(x) / 1e9 for x in sys.argv[2].split()]
print("without drfd: %s Gbit/s (median %.2f)" % (" ".join("%.2f" % x for x in out), st.median(out)))
print("through drfd: %s Gbit/s (median %.2f)" % (" ".join("%.2f" % x for x in inn), st.median(inn)))
print("through/without: %.3f (medians, rounds alternated)" % (st.median(inn) / st.median(out)))
PY
echo "$cost"
