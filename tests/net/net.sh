#!/usr/bin/env bash
# drfd shaping real traffic, measured with iperf3, between two network
# namespaces this script creates (addresses from 198.18.0.0/15) and removes:
#
#   netns A (drfd's: net-device va)  <--veth-->  netns B (iperf3 servers)
#     va: htb d7f: -> d7f:1 link -> d7f:2 tenants -> d7f:M per tenant
#                                -> d7f:ffff traffic of no tenant
#     tenants' iperf3 clients run in their cgroups (drfctl exec), classified
#     by drfd's cgroup_skb program at cgroup-root
#
# Runs on the host (make check-net) and in the VM (tests/vm/t_net.sh).
#   DRFD=... DRFCTL=... tests/net/net.sh [SCALE [TEST...]]
# SCALE multiplies every rate (the VM's emulated CPU needs lower ones); TEST is
# limit2, limit3, share, steady, default, restart, counters, ingress, rootgone,
# bridge, devchange, foreign (default: all).
# Results: PASS/FAIL/SKIP lines on stdout, also appended to $NET_RESULTS.
# Goodput is what iperf3 received: TCP payload, 1448 bytes of every 1514-byte
# frame that HTB counts (Ethernet 14 + IP 20 + TCP with timestamps 32), so a
# class at rate R gives a goodput of R x 1448/1514.
set -u
# sleep as a shell builtin where Debian's bash-builtins is installed: no exec per poll.
[ -r /usr/lib/bash/sleep ] && enable -f /usr/lib/bash/sleep sleep
drfd=${DRFD:?set DRFD to the drfd binary}
drfctl=${DRFCTL:?set DRFCTL to the drfctl binary}
scale=${1:-1}
shift
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(limit2 limit3 share steady default restart counters ingress rootgone bridge
	devchange foreign)
results=${NET_RESULTS:-/dev/null}
pass=0 failed=0
GOODPUT=$(awk 'BEGIN { printf "%.6f", 1448 / 1514 }')

# NET_TIMES: a file for "NAME SECONDS" at each result, seconds since the start
times=${NET_TIMES:-/dev/null}
t0_us=${EPOCHREALTIME/./}
say() { echo "$*" | tee -a "$results"; }
stamp() {
	local d=$(((${EPOCHREALTIME/./} - t0_us) / 100000))
	echo "$1 $((d / 10)).$((d % 10))" >>"$times"
}
ok() { pass=$((pass + 1)); say "PASS $1: $2"; stamp "$1"; }
ko() { failed=$((failed + 1)); say "FAIL $1: $2"; stamp "$1"; }
check() { if eval "$2"; then ok "$1" "$3"; else ko "$1" "$3"; fi; }
premise_note() { say "$*"; }
# shellcheck source=tests/lib/premise.sh
. "$(dirname "$0")/../lib/premise.sh"

skip_all() {
	say "SKIP net: $1"
	if [ "${CI:-}" = true ]; then
		say "FAIL net: CI must run the network tests"
		exit 1
	fi
	exit 0
}

[ "$(id -u)" -eq 0 ] || skip_all "needs root (network namespaces, tc, BPF)"
for c in iperf3 ip tc nsenter python3; do
	command -v "$c" >/dev/null || skip_all "$c is missing (deploy/install-deps.sh installs it)"
done
# bpffs, mounted as drfd-tenants.service does where nothing has yet.
# shellcheck source=tests/lib/bpffs.sh
. "$(dirname "$0")/../lib/bpffs.sh"
ensure_bpffs || skip_all "$bpffs_why"
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$mnt" ] || skip_all "no cgroup2 mount"

id=$$
nsA=drfA$id nsB=drfB$id
root=$mnt/drfnet$id
# drfd's pin directory for that root: '/' as '-', '.' and '-' escaped (none here)
pins=${root#/}
pins=/sys/fs/bpf/drfd/${pins//\//-}
work=$(mktemp -d)
addrA=198.18.7.1 addrB=198.18.7.2
drfd_pid=''

stop_drfd() {
	[ -n "$drfd_pid" ] || return 0
	kill "$drfd_pid" 2>/dev/null
	wait "$drfd_pid" 2>/dev/null
	drfd_pid=''
}

cleanup() {
	stop_drfd
	ip netns pids "$nsA" 2>/dev/null | xargs -r kill 2>/dev/null
	ip netns pids "$nsB" 2>/dev/null | xargs -r kill 2>/dev/null
	sleep 0.2
	[ -f "$work/drfd.conf" ] && inA "$drfctl" net-reset -c "$work/drfd.conf" >/dev/null 2>&1
	ip netns del "$nsA" 2>/dev/null
	ip netns del "$nsB" 2>/dev/null
	for d in "$root"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
	rmdir "$root" 2>/dev/null
	# drfd's usage probes stay for a restart to adopt: this root is gone, so they go too.
	rm -rf "${pins/\/drfd\///drfd-probes/}"
	if [ -n "${NET_KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# In netns A without remounting /sys (ip netns exec would): cgroupfs and bpffs stay.
inA() { nsenter --net="/run/netns/$nsA" "$@"; }

if ! { ip netns add "$nsA" && ip netns add "$nsB" &&
	ip link add va netns "$nsA" type veth peer name vb netns "$nsB" &&
	ip -n "$nsA" addr add $addrA/24 dev va && ip -n "$nsB" addr add $addrB/24 dev vb &&
	ip -n "$nsA" link set va up && ip -n "$nsB" link set vb up &&
	ip -n "$nsA" link set lo up && ip -n "$nsB" link set lo up; }; then
	skip_all "cannot make network namespaces and a veth pair"
fi
# ECN for the ingress policer's flows, both ways.
ip netns exec "$nsA" sysctl -qw net.ipv4.tcp_ecn=1
ip netns exec "$nsB" sysctl -qw net.ipv4.tcp_ecn=1
for p in 5201 5202 5203 5204 5205; do
	ip netns exec "$nsB" iperf3 -s -p $p -D -I "$work/srv$p.pid" >/dev/null 2>&1
done
sleep 0.5

mbit() { awk -v r="$1" -v s="$scale" 'BEGIN { printf "%dkbit", r * s * 1000 }'; }

# write_conf MODE EXTRA-CAPACITY TENANTS...: TENANTS as "name key=value,..."
write_conf() {
	local mode=$1 cap=$2 t name kv
	shift 2
	{
		printf '[agent]\ncgroup-root = %s\nmode = %s\nstate-dir = %s/state\n' "$root" "$mode" "$work"
		printf 'status-socket = %s/drfd.sock\ninterval = 500ms\n%s' "$work" "${AGENT_EXTRA:-}"
		printf '[capacity]\nnet-device = va\n%b\n' "$cap"
		for t in "$@"; do
			name=${t%% *}
			printf '[tenant %s]\n' "$name"
			kv=${t#* }
			[ "$kv" = "$t" ] || echo "$kv" | tr ',' '\n'
		done
	} >"$work/drfd.conf"
}

start_drfd() {
	# Not through inA: a function in the background is a subshell, whose pid is not drfd's.
	nsenter --net="/run/netns/$nsA" "$drfd" -c "$work/drfd.conf" --foreground \
		>>"$work/drfd.log" 2>&1 &
	drfd_pid=$!
	local _
	for _ in $(seq 50); do
		kill -0 "$drfd_pid" 2>/dev/null || return 1
		# From the daemon, not the fallback that reads cgroupfs ("source" is a key of
		# the top object alone; read by the shell, not a python a poll).
		[[ $("$drfctl" status -c "$work/drfd.conf" --json 2>/dev/null) =~ \"source\":\ *\"daemon\" ]] &&
			return 0
		sleep 0.2
	done
	return 1
}

status_py() { # EXPR over the status JSON as s
	"$drfctl" status -c "$work/drfd.conf" --json >"$work/st.json" 2>/dev/null
	python3 -c "import json; s = json.load(open('$work/st.json')); print($1)" 2>/dev/null || echo "?"
}

# client TENANT PORT SECONDS [iperf3 args]: iperf3 in the tenant (background), JSON in work/
client() {
	local t=$1 port=$2 secs=$3
	shift 3
	inA "$drfctl" exec -c "$work/drfd.conf" "$t" -- iperf3 -c $addrB -p "$port" -t "$secs" \
		-i 0.5 -J "$@" >"$work/$t.$port.json" 2>"$work/$t.$port.err" &
}

# goodput (Mbit/s) over the whole run, as the receiver counted it: bytes over the
# test's seconds, free of the clients' per-interval timing (noisy in a VM)
received() { # FILE
	python3 -c "import json; d = json.load(open('$1')); print('%.3f' % (d['end']['sum_received']['bits_per_second'] / 1e6))" 2>/dev/null || echo 0
}

# goodput (Mbit/s) of a client's JSON over the intervals starting in [FROM, TO):
# their bytes over their seconds (intervals are not all equally long)
mean() { # FILE FROM TO
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
lo, hi = float(sys.argv[2]), float(sys.argv[3])
v = [i["sum"] for i in d.get("intervals", []) if lo <= i["sum"]["start"] < hi]
secs = sum(x["seconds"] for x in v)
print("%.3f" % (sum(x["bytes"] for x in v) * 8 / secs / 1e6 if secs else 0))
PY
}

within() { # GOT WANT TOLERANCE(fraction)
	awk -v g="$1" -v w="$2" -v t="$3" 'BEGIN { exit !(w > 0 && (g - w < 0 ? w - g : g - w) <= t * w) }'
}

alloc_of() { # TENANT: its net-rate allocation in Mbit/s, from drfctl plan --json
	"$drfctl" plan -c "$work/drfd.conf" --json |
		python3 -c "import json,sys; p=json.load(sys.stdin); print([t['alloc']['net-rate'] for t in p['tenants'] if t['name']=='$1'][0]/1e6)"
}

# limit mode, N tenants at once: each one's goodput within 3% of its rate x 1448/1514.
limit_test() { # NAME TENANTS...
	local name=$1 t port=5201 want got detail='' bad=0
	shift
	write_conf limit "net-rate = $(mbit 100)\nnet-link-rate = $(mbit 100)" "$@"
	start_drfd || { ko "$name" "drfd did not start: $(tail -3 "$work/drfd.log")"; return; }
	for t in "$@"; do
		client "${t%% *}" $port 10
		port=$((port + 1))
	done
	wait_clients
	tc -n "$nsA" -s qdisc show dev va >"$work/qdisc.$name"
	port=5201
	for t in "$@"; do
		t=${t%% *}
		want=$(awk -v a="$(alloc_of "$t")" -v g="$GOODPUT" 'BEGIN { printf "%.3f", a * g }')
		got=$(received "$work/$t.$port.json")
		within "$got" "$want" 0.03 || bad=$((bad + 1))
		detail="$detail $t $got/$want Mbit/s;"
		port=$((port + 1))
	done
	stop_drfd
	check "$name" "[ $bad -eq 0 ]" "goodput/expected within 3%:$detail"
	[ $bad -eq 0 ] || { tail -5 "$work/drfd.log"; cat "$work/qdisc.$name"; }
}

wait_clients() {
	local j
	for j in $(jobs -p); do
		[ "$j" = "$drfd_pid" ] || wait "$j" 2>/dev/null
	done
}

test_limit2() {
	limit_test limit-two-tenants "a net-rate=$(mbit 30)" "b net-rate=$(mbit 60)"
}

test_limit3() {
	limit_test limit-three-tenants "a net-rate=$(mbit 20)" "b net-rate=$(mbit 30)" \
		"c net-rate=$(mbit 40)"
}

# share mode, weights 1:2:3, all backlogged: split 1:2:3 within 5%; c goes idle,
# a and b take the link (1:2) within 2 s; c comes back, 1:2:3 again within 2 s.
# iperf3 makes the load; the split is measured in the tenants' classes' byte
# counters (tc -s class), sampled every quarter second at the same instants for
# all three, which the clients' own clocks are not. The windows after c stops
# (5 s) and after it starts again begin 2 s after its class's counter says so (a
# client starts one to three seconds late under TCG, and so stops late).
class_bytes() { # prints "MINOR BYTES" for every class
	tc -n "$nsA" -s class show dev va |
		awk '$1 == "class" { id = $3 } $1 == "Sent" { split(id, h, ":"); print h[2], $2 }'
}

# appends "TIME SPREAD MINOR BYTES" for every class to FILE, every quarter
# second, until the clock reads END (microseconds): TIME is halfway between the
# clock read before tc and after it, SPREAD the time tc took (a sample that took
# more than twice the median is left out: in a busy VM, tc may wait a few tenths)
sample_classes() { # FILE END
	local t1 t2
	while t1=${EPOCHREALTIME/./} && [ "$t1" -lt "$2" ]; do
		class_bytes >"$1.one"
		t2=${EPOCHREALTIME/./}
		sed "s/^/$(((t1 + t2) / 2)) $((t2 - t1)) /" "$1.one" >>"$1"
		sleep 0.25
	done
}

test_share() {
	local r t0 again
	write_conf share "net-rate = $(mbit 90)\nnet-link-rate = $(mbit 100)" "a weight=1" \
		"b weight=2" "c weight=3"
	start_drfd || { ko share "drfd did not start: $(tail -3 "$work/drfd.log")"; return; }
	"$drfctl" status -c "$work/drfd.conf" --json |
		python3 -c "import json,sys; [print(t['name'], t['net']['class'].split(':')[1]) for t in json.load(sys.stdin)['tenants']]" \
			>"$work/minors"
	t0=${EPOCHREALTIME/./}
	: >"$work/cls"
	sample_classes "$work/cls" $((t0 + 31000000)) &
	# Four streams each, to keep every class backlogged. c's first client
	# runs 12 s; its second starts 7 s after the first ended.
	client a 5201 31 -P 4
	client b 5202 31 -P 4
	client c 5203 12 -P 4
	wait $!
	sleep 7
	again=${EPOCHREALTIME/./}
	client c 5204 8 -P 4
	wait_clients
	stop_drfd
	r=$(python3 - "$work" "$t0" "$scale" "$again" <<'PY'
import sys
w, t0, scale = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
again = (int(sys.argv[4]) - t0) / 1e6  # seconds at which c's second client started
minor = dict(l.split() for l in open(w + "/minors"))
rows = [l.split() for l in open(w + "/cls")]
spreads = sorted(int(r[1]) for r in rows)
slow = 2 * spreads[len(spreads) // 2]
snaps = {}  # seconds since t0 -> {minor: bytes}, of the samples tc took under twice its median to read
for t, spread, m, b in rows:
    if int(spread) <= slow:
        snaps.setdefault((int(t) - t0) / 1e6, {})[m] = int(b)
times = sorted(t for t in snaps if all(m in snaps[t] for m in minor.values()))
def rates(lo, hi):  # Mbit/s on the wire per tenant, first sample at or after lo to last at or before hi
    t1 = min(t for t in times if t >= lo)
    t2 = max(t for t in times if t <= hi)
    return {n: (snaps[t2][m] - snaps[t1][m]) * 8 / (t2 - t1) / 1e6 for n, m in minor.items()}
def split(r, names):
    tot = sum(r[n] for n in names)
    return [r[n] / tot if tot else 0 for n in names]
def near(got, want, tol=0.05):
    return all(abs(g - e) <= tol * e for g, e in zip(got, want))
c = minor["c"]
def moved(i):  # bytes c's class sent between sample i-1 and i
    return snaps[times[i]][c] - snaps[times[i - 1]][c]
link = 100 * scale
r1 = rates(3, 11)
s1 = split(r1, "abc")
# c stopped at the first sample after which its class sent under 2% of its
# backlogged rate, and started again at the first sample after its second
# client started at which it sent more than that
quiet = r1["c"] * 1e6 / 8 * 0.25 * 0.02
stop = next((times[i - 1] for i in range(1, len(times))
             if 11 < times[i] < again and moved(i) < quiet), None)
back = next((times[i - 1] for i in range(1, len(times))
             if times[i - 1] >= again and moved(i) > quiet), None)
ok2 = ok3 = 0
d2 = d3 = "c did not stop after 11 s" if stop is None else ""
if stop is not None:
    if stop + 2 + 3 > again:
        d2 = "c stopped at %.1f s, too late for 3 s of window before %.1f s" % (stop, again)
    else:
        r2 = rates(stop + 2, again)
        s2 = split(r2, "ab")
        ok2 = int(r2["a"] + r2["b"] >= 0.95 * link and near(s2, (1/3, 2/3)))
        d2 = ("c idle from %.1f s, %.1f-%.1f s: a %.1f + b %.1f = %.1f of the link's %.1f Mbit/s, "
              "split %.3f:%.3f (want 1/3:2/3)"
              % (stop, stop + 2, again, r2["a"], r2["b"], r2["a"] + r2["b"], link, *s2))
    # c's second client runs 8 s: the window ends 6 s after it came back
    end = min(times[-1], 30, (back or 0) + 6)
    if back is None:
        d3 = "c did not start again after %.1f s" % again
    elif back + 2 + 3 > end:
        d3 = "c started again at %.1f s, too late for 3 s of window before %.1f s" % (back, end)
    else:
        s3 = split(rates(back + 2, end), "abc")
        ok3 = int(near(s3, (1/6, 2/6, 3/6)))
        d3 = ("c back at %.1f s, %.1f-%.1f s: split %.3f:%.3f:%.3f"
              % (back, back + 2, end, *s3))
print(int(near(s1, (1/6, 2/6, 3/6))), ok2, ok3,
      "all backlogged, 3-11 s: a %.1f b %.1f c %.1f Mbit/s, split %.3f:%.3f:%.3f (want 1/6:2/6:3/6,"
      " %d samples, tc's median read %.0f ms);"
      % (r1["a"], r1["b"], r1["c"], *s1, len(times), slow / 2e3), d2 + ";", d3)
PY
)
	read -r s1 s2 s3 detail <<<"$r"
	check share-split "[ '$s1' = 1 ]" "${detail%%;*}"
	detail=${detail#*; }
	check share-idle-borrowed "[ '$s2' = 1 ]" "${detail%%;*}"
	check share-resume "[ '$s3' = 1 ]" "${detail#*; }"
}

# Ticks that find the tree as planned write nothing. Rates not scaled: at 500
# and 7 mbit/s fq_codel's CoDel times (5000 and 100000 us; 112347 and 449390
# us) are not whole multiples of the kernel's 1024 ns, and read back 1 us
# less, which is no reason to replace a leaf.
test_steady() {
	local w0 w1 fq
	write_conf limit "net-rate = 1gbit\nnet-link-rate = 1gbit" "a net-rate=500mbit" \
		"b net-rate=7mbit"
	start_drfd || { ko steady-no-tc-writes "drfd did not start: $(tail -3 "$work/drfd.log")"; return; }
	sleep 1
	w0=$(status_py "s['net']['writes_total']")
	sleep 2
	w1=$(status_py "s['net']['writes_total']")
	fq=$(status_py "s['net']['fq_codel']")
	stop_drfd
	check steady-no-tc-writes "[ '$w0' != '?' ] && [ '$w0' = '$w1' ]" \
		"drfd's tc writes over 2 s (4 ticks) of a tree as planned: $w0 -> $w1 (fq_codel leaves: $fq)"
}

# Traffic of a process in no tenant goes to the default class, counted to no tenant.
test_default() {
	local before after tb ta
	write_conf limit "net-rate = $(mbit 50)\nnet-link-rate = $(mbit 100)" "a net-rate=$(mbit 20)"
	start_drfd || { ko default-class "drfd did not start"; return; }
	before=$(tc -n "$nsA" -s class show dev va classid d7f:ffff | awk '/Sent/ {print $2}')
	tb=$(status_py "s['tenants'][0]['net']['egress']['bytes']")
	inA iperf3 -c $addrB -p 5205 -t 2 -J >"$work/none.json" 2>&1
	sleep 1
	after=$(tc -n "$nsA" -s class show dev va classid d7f:ffff | awk '/Sent/ {print $2}')
	ta=$(status_py "s['tenants'][0]['net']['egress']['bytes']")
	stop_drfd
	check default-class "[ $((after - before)) -gt 1000000 ] && [ '$ta' = '$tb' ]" \
		"d7f:ffff sent $((after - before)) bytes more; tenant a's counted bytes $tb -> $ta"
}

# One tree, one attachment, one set of pins: tc's root qdiscs and htb classes on
# va, the programs at the root, the entries of drfd's pin directory.
inventory() {
	echo "roots $(tc -n "$nsA" qdisc show dev va | grep -c ' root ')"
	tc -n "$nsA" class show dev va | grep '^class htb' | awk '{print $3, $5}' | sort
	echo "programs $(bpftool cgroup show "$root" 2>/dev/null | grep -c drf_net_)"
	find "$pins" -mindepth 1 -printf '%f\n' 2>/dev/null | sort
}

# A restart adopts drfd's own qdisc, classes and pinned programs: no duplicate,
# and the tenant's traffic keeps its class throughout: none of it falls into
# the default class while drfd is down or starting, and the receiver counts the
# class's goodput over the whole run. A reload and a kill -9 leave the same
# single tree, attachment and pins.
test_restart() {
	local inv1 inv2 inv3 inv4 d0 d1 got want
	write_conf limit "net-rate = $(mbit 50)\nnet-link-rate = $(mbit 100)" "a net-rate=$(mbit 20)"
	start_drfd || { ko restart-adopts "drfd did not start"; return; }
	inv1=$(inventory)
	client a 5201 10
	sleep 3
	d0=$(tc -n "$nsA" -s class show dev va classid d7f:ffff | awk '/Sent/ {print $2}')
	stop_drfd
	start_drfd || { ko restart-adopts "drfd did not restart: $(tail -3 "$work/drfd.log")"; return; }
	wait_clients
	d1=$(tc -n "$nsA" -s class show dev va classid d7f:ffff | awk '/Sent/ {print $2}')
	inv2=$(inventory)
	got=$(received "$work/a.5201.json")
	want=$(awk -v r="$(mbit 20)" -v g="$GOODPUT" 'BEGIN { printf "%.3f", r / 1000 * g }')
	check restart-adopts "[ \"\$inv1\" = \"\$inv2\" ] && [ $((d1 - d0)) -lt 65536 ] && within $got $want 0.03" \
		"one tree, attachment and pins after the restart: $([ "$inv1" = "$inv2" ] && echo yes || echo no) ($(echo "$inv2" | tr '\n' ' ')); default class sent $((d1 - d0)) bytes through the restart; goodput $got/$want Mbit/s"
	kill -HUP "$drfd_pid"
	sleep 1.5
	inv3=$(inventory)
	kill -9 "$drfd_pid"
	wait "$drfd_pid" 2>/dev/null
	drfd_pid=''
	start_drfd || { ko reload-kill9-adopt "drfd did not start after kill -9"; return; }
	inv4=$(inventory)
	stop_drfd
	check reload-kill9-adopt "[ \"\$inv1\" = \"\$inv3\" ] && [ \"\$inv1\" = \"\$inv4\" ]" \
		"after a reload: $([ "$inv1" = "$inv3" ] && echo same || echo DIFFERENT); after kill -9 and a start: $([ "$inv1" = "$inv4" ] && echo same || echo DIFFERENT)"
}

# What the egress program counts agrees with what HTB counts, per tenant.
test_counters() {
	local r
	write_conf limit "net-rate = $(mbit 100)\nnet-link-rate = $(mbit 100)" "a net-rate=$(mbit 30)" \
		"b net-rate=$(mbit 60)"
	start_drfd || { ko counters-agree "drfd did not start"; return; }
	client a 5201 5
	client b 5202 5 -P 2
	wait_clients
	sleep 1.2
	r=$(status_py "' '.join('%s %d %d' % (t['name'], t['net']['egress']['bytes'], t['net']['egress']['class_bytes']) for t in s['tenants'])")
	stop_drfd
	r=$(python3 - "$r" <<'PY'
import sys
a = sys.argv[1].split()
ok, out = 1, []
for i in range(0, len(a), 3):
    n, bpf, htb = a[i], int(a[i + 1]), int(a[i + 2])
    d = abs(bpf - htb) / htb if htb else 1
    ok &= d <= 0.01 and htb > 1000000
    out.append("%s: program %d, class %d bytes (%.3f%% apart)" % (n, bpf, htb, d * 100))
print(ok, "; ".join(out))
PY
)
	check counters-agree "[ '${r%% *}' = 1 ]" "${r#* }"
}

# The ingress policer: a tenant receiving bulk TCP over its net-ingress-rate is
# held within 10% of it (its goodput: rate x 1448/1514), with and without ECN;
# another tenant's ingress is untouched.
test_ingress() {
	local ecn noecn b lo acts acts1 want
	write_conf limit "net-ingress-rate = $(mbit 100)" "a net-ingress-rate=$(mbit 10)" "b"
	start_drfd || { ko ingress-policer "drfd did not start: $(tail -3 "$work/drfd.log")"; return; }
	ip netns exec "$nsA" sysctl -qw net.ipv4.tcp_ecn=1
	client a 5201 8 -R
	wait_clients
	# From 2 s on: the bucket starts full, and at low rates its burst (at least four
	# 64 KiB GRO packets) would weigh in the whole run's mean.
	ecn=$(mean "$work/a.5201.json" 2 8)
	acts1=$(status_py "'%d marked, %d dropped' % (s['tenants'][0]['net']['ingress']['marked'], s['tenants'][0]['net']['ingress']['dropped'])")
	ip netns exec "$nsA" sysctl -qw net.ipv4.tcp_ecn=0
	client a 5202 8 -R
	wait_clients
	noecn=$(mean "$work/a.5202.json" 2 8)
	ip netns exec "$nsA" sysctl -qw net.ipv4.tcp_ecn=1
	client b 5203 4 -R
	wait_clients
	b=$(received "$work/b.5203.json")
	# a's traffic on another device (loopback) is none of the policer's business.
	ip netns exec "$nsA" iperf3 -s -1 -D -B 127.0.0.1 -p 5206 >/dev/null 2>&1
	sleep 0.3
	inA "$drfctl" exec -c "$work/drfd.conf" a -- iperf3 -c 127.0.0.1 -p 5206 -t 2 -R -J \
		>"$work/a.lo.json" 2>/dev/null
	lo=$(received "$work/a.lo.json")
	acts=$(status_py "'%d marked, %d dropped' % (s['tenants'][0]['net']['ingress']['marked'], s['tenants'][0]['net']['ingress']['dropped'])")
	stop_drfd
	want=$(awk -v r="$(mbit 10)" -v g="$GOODPUT" 'BEGIN { printf "%.3f", r / 1000 * g }')
	check ingress-policer "within $ecn $want 0.1 && within $noecn $want 0.1 && awk -v b=$b -v l=$lo -v w=$want 'BEGIN { exit !(b > 3 * w && l > 3 * w) }'" \
		"a, policed at $(mbit 10) (goodput $want Mbit/s), received $ecn Mbit/s (from 2 s on) with ECN ($acts1) and $noecn without (then $acts in all); b, not policed, $b Mbit/s; a over loopback (not net-device) $lo Mbit/s"
}

# cgroup-root removed and made again while drfd is down (under systemd: a restart
# of drfd-tenants.service): the pinned links hold the old cgroup, severed; drfd
# attaches anew, and the tenant's traffic is classified again.
test_rootgone() {
	local progs d0 d1 got want
	write_conf limit "net-rate = $(mbit 50)\nnet-link-rate = $(mbit 100)" "a net-rate=$(mbit 20)"
	start_drfd || { ko root-recreated "drfd did not start"; return; }
	stop_drfd
	rmdir "$root/a" "$root"
	start_drfd || { ko root-recreated "drfd did not start: $(tail -3 "$work/drfd.log")"; return; }
	progs=$(bpftool cgroup show "$root" 2>/dev/null | grep -c drf_net_)
	d0=$(tc -n "$nsA" -s class show dev va classid d7f:ffff | awk '/Sent/ {print $2}')
	client a 5201 4
	wait_clients
	d1=$(tc -n "$nsA" -s class show dev va classid d7f:ffff | awk '/Sent/ {print $2}')
	got=$(received "$work/a.5201.json")
	want=$(awk -v r="$(mbit 20)" -v g="$GOODPUT" 'BEGIN { printf "%.3f", r / 1000 * g }')
	stop_drfd
	check root-recreated "[ $progs -eq 2 ] && [ $((d1 - d0)) -lt 65536 ] && within $got $want 0.05" \
		"programs at the new root: $progs; default class sent $((d1 - d0)) bytes; a's goodput $got/$want Mbit/s"
}

# net-device a port of a bridge that holds the address: the sockets' packets name
# the bridge (the device with the address), and are still classified and policed.
test_bridge() {
	local got want in_want in_got
	if ! { ip -n "$nsA" link add br0 type bridge && ip -n "$nsA" addr del $addrA/24 dev va &&
		ip -n "$nsA" link set va master br0 && ip -n "$nsA" addr add $addrA/24 dev br0 &&
		ip -n "$nsA" link set br0 up; }; then
		ko bridge-port "cannot make a bridge"
		return
	fi
	sleep 1
	write_conf limit "net-rate = $(mbit 50)\nnet-link-rate = $(mbit 100)\nnet-ingress-rate = $(mbit 100)" \
		"a net-rate=$(mbit 20),net-ingress-rate=$(mbit 10)"
	if start_drfd; then
		client a 5201 6
		wait_clients
		client a 5202 6 -R
		wait_clients
		got=$(received "$work/a.5201.json")
		in_got=$(mean "$work/a.5202.json" 2 6)
		stop_drfd
	fi
	inA "$drfctl" net-reset -c "$work/drfd.conf" >/dev/null 2>&1
	ip -n "$nsA" link del br0
	ip -n "$nsA" addr add $addrA/24 dev va
	ip -n "$nsA" link set va up
	sleep 1
	want=$(awk -v r="$(mbit 20)" -v g="$GOODPUT" 'BEGIN { printf "%.3f", r / 1000 * g }')
	in_want=$(awk -v r="$(mbit 10)" -v g="$GOODPUT" 'BEGIN { printf "%.3f", r / 1000 * g }')
	check bridge-port "within ${got:-0} $want 0.03 && within ${in_got:-0} $in_want 0.1" \
		"va a port of br0 (the address on br0): a sent ${got:-?}/$want Mbit/s, received ${in_got:-?}/$in_want"
}

# The device changes while drfd is down: at its start drfd removes its qdisc and
# programs from the old one (the state file names it) and shapes the new one.
test_devchange() {
	local old new
	# A second veth pair inside netns A: the host's kernel may have no dummy device.
	if ! { ip -n "$nsA" link add vd type veth peer name ve && ip -n "$nsA" link set vd up &&
		ip -n "$nsA" link set ve up; }; then
		ko device-change "cannot add a second device"
		return
	fi
	write_conf limit "net-rate = $(mbit 50)" "a net-rate=$(mbit 20)"
	start_drfd || { ko device-change "drfd did not start"; return; }
	stop_drfd
	sed -i 's/^net-device = va$/net-device = vd/' "$work/drfd.conf"
	start_drfd || { ko device-change "drfd did not start on vd: $(tail -3 "$work/drfd.log")"; return; }
	old=$(tc -n "$nsA" qdisc show dev va | awk '{print $2, $3; exit}')
	new=$(tc -n "$nsA" qdisc show dev vd | awk '{print $2, $3; exit}')
	stop_drfd
	inA "$drfctl" net-reset -c "$work/drfd.conf" >/dev/null 2>&1
	sed -i 's/^net-device = vd$/net-device = va/' "$work/drfd.conf"
	ip -n "$nsA" link del vd
	check device-change "[ '$old' != 'htb d7f:' ] && [ '$new' = 'htb d7f:' ]" \
		"after net-device va -> vd across a restart: va's root qdisc '$old', vd's '$new'"
}

# A root qdisc drfd did not install: exit 7 and left alone, unless net-replace-qdisc;
# drfctl net-reset then removes drfd's, and its pinned programs.
test_foreign() {
	local rc q
	# Someone else's: an htb of another handle (the host's kernel may have no other qdisc).
	tc -n "$nsA" qdisc add dev va root handle 1: htb || { ko foreign-qdisc-refused "cannot add one"; return; }
	write_conf limit "net-rate = $(mbit 50)" "a net-rate=$(mbit 20)"
	inA "$drfd" -c "$work/drfd.conf" --once >>"$work/drfd.log" 2>&1
	rc=$?
	q=$(tc -n "$nsA" qdisc show dev va | awk '$4 == "root" || $3 == "root" {print $2, $3}' | head -1)
	check foreign-qdisc-refused "[ $rc -eq 7 ] && [ '$q' = 'htb 1:' ]" "drfd --once exit $rc; root qdisc now '$q'"
	AGENT_EXTRA='net-replace-qdisc = yes
' write_conf limit "net-rate = $(mbit 50)" "a net-rate=$(mbit 20)"
	start_drfd
	q=$(tc -n "$nsA" qdisc show dev va | awk '{print $2, $3; exit}')
	stop_drfd
	inA "$drfctl" net-reset -c "$work/drfd.conf" >/dev/null 2>&1
	rc=$?
	local after
	after=$(tc -n "$nsA" qdisc show dev va | awk '{print $2, $3; exit}')
	check foreign-qdisc-replaced "[ '$q' = 'htb d7f:' ]" "with net-replace-qdisc = yes the root qdisc is '$q'"
	check net-reset "[ $rc -eq 0 ] && [ '$after' != 'htb d7f:' ] && [ ! -e '$pins' ]" \
		"drfctl net-reset exit $rc; root qdisc after it '$after'; $pins $([ -e "$pins" ] && echo remains || echo removed)"
}

for t in "${tests[@]}"; do
	"test_$t"
	# Between tests: nothing of drfd's left on the device or in bpffs.
	inA "$drfctl" net-reset -c "$work/drfd.conf" >/dev/null 2>&1
	AGENT_EXTRA=''
done
say "net: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
