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
# NET_KEEP: a folder for the share scenario's samples and classes (the VM's results)
# NET_HOST_VCPU: the file of the host's vCPU waits, in the VM (measure.py's host_waits)
HOST_VCPU=${NET_HOST_VCPU:-}
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

# The measuring tests' analyses, written to $work/measure.py at the start:
# python3 measure.py limit|share ARGS... (below). Samples are the lines of
# sample_classes: "TIME SPREAD MINOR BYTES OVERLIMITS QUEUED".
#
# A class was backlogged over the interval between two consecutive samples if
# packets were queued in it at the second one or, in limit mode only, its
# overlimits grew between them: HTB counts one each time a class reaches its
# ceil and must wait, which a class held at its rate (rate = ceil) does tens of
# times a second while its queue is a packet or two (and may read empty); in
# share mode a backlogged class waits for its parent, not its ceil, and its
# overlimits stay still, while a bursty sender's (iperf3 -b) grow: no evidence
# there, the queue alone is (a backlogged class holds 4-11 packets). A
# tenant was backlogged throughout a window if it was over every interval of
# the window, and no interval in it is longer than GAP seconds: a sample every
# quarter second plus tc's time (about 0.3 s on the host, 0.6 s in the VM), so
# that an idle spell of the sender's of a few tenths goes unseen only if it
# falls between two samples, and a sender idle a tenth of the time shows an
# empty queue at some sample of 30 with a probability of 1 - 0.9^30 = 96%.
cat >"$work/measure.py" <<'PY'
import json, sys

GAP = 1.5  # s: the longest interval over which a class's backlog is inferred

def load(path, t0, minors):
    """[(seconds since t0, tc's time in us, {minor: (bytes, overlimits, queued)})], only samples with every minor"""
    by = {}
    for l in open(path):
        f = l.split()
        if len(f) == 6:
            by.setdefault((int(f[0]), int(f[1])), {})[f[2]] = tuple(int(x) for x in f[3:])
    return [((t - t0) / 1e6, sp, c) for (t, sp), c in sorted(by.items()) if all(m in c for m in minors)]

def ts(xs):
    return ", ".join("%.1f" % x for x in xs[:4]) + (", ..." if len(xs) > 4 else "")

def unbacklogged(samples, lo, hi, names, minor, over=True):
    """what contradicts 'every tenant of names was backlogged throughout lo-hi s' (empty: nothing);
    over: overlimits count as evidence (limit mode's, not share mode's)"""
    s = [x for x in samples if lo <= x[0] <= hi]
    if len(s) < 2:
        return ["fewer than two samples in %.1f-%.1f s" % (lo, hi)]
    out = []
    gaps = [s[i - 1][0] for i in range(1, len(s)) if s[i][0] - s[i - 1][0] > GAP]
    if gaps:
        out.append("%d intervals over %.1f s without a sample (from %s s; longest %.1f s)"
                   % (len(gaps), GAP, ts(gaps), max(s[i][0] - s[i - 1][0] for i in range(1, len(s)))))
    for n in names:
        m = minor[n]
        idle = [s[i - 1][0] for i in range(1, len(s))
                if s[i][2][m][2] == 0 and not (over and s[i][2][m][1] > s[i - 1][2][m][1])]
        if idle:
            out.append("%s not backlogged in %d of %d intervals of %.1f-%.1f s (from %s s: queue empty%s)"
                       % (n, len(idle), len(s) - 1, s[0][0], s[-1][0], ts(idle), ", no overlimits" if over else ""))
    return out

# In the VM, the sampler also keeps the host's line of its vCPUs' waits
# (w/cls.host: "TIME NS WAIT0 WAIT1", tests/vm/boot.sh's vm_vcpu_waits): a
# vCPU the host keeps waiting holds HTB's dequeue back, and a class loses the
# tokens beyond its burst: a rate or a sum falls, a split bends. The premise is
# one-sided (tests/lib/premise.sh: host_premise): a window that passed despite the
# waits stands (its figures were within bounds), one that failed while the
# host kept a vCPU waiting over HOST_LIMIT of it is discarded.
HOST_LIMIT = 0.10

def host_waits(w, t0, lo, hi):
    """the largest share of lo-hi s any vCPU waited for the host: a float, None on
    the host (no w/cls.host), "unknown" when no two lines cover the window"""
    try:
        rows = [[int(x) for x in l.split()] for l in open(w + "/cls.host")]
    except OSError:
        return None
    rows = [((r[0] - t0) / 1e6, r[1], r[2:]) for r in rows if len(r) >= 3]
    a = [r for r in rows if r[0] <= lo]
    b = [r for r in rows if r[0] >= hi]
    if not a or not b or b[0][1] <= a[-1][1]:
        return "unknown"
    a, b = a[-1], b[0]
    return max((y - x) / (b[1] - a[1]) for x, y in zip(a[2], b[2]))

def host_premise(w, t0, lo, hi, ok):
    """(what discards a window that failed, the figure for its detail)"""
    h = host_waits(w, t0, lo, hi)
    if h is None:
        return [], ""
    if h == "unknown":
        return ([] if ok else ["the host's vCPU waits over %.1f-%.1f s are not known" % (lo, hi)]), "host waits unknown"
    return ([] if ok or h <= HOST_LIMIT else ["the host kept a vCPU waiting %.3f of the window (over %.2f)" % (h, HOST_LIMIT)],
            "host kept a vCPU waiting %.3f of it" % h)

def limit(w, t0, tenants):
    """limit mode: each tenant's class backlogged (at its ceil) from its transfer's first
    interval to its last, the transfer as long as its receiver's count says"""
    minor = dict(l.split() for l in open(w + "/minors"))
    samples = load(w + "/cls", int(t0), [minor[n] for n, _ in tenants])
    out, info = [], []
    for n, js in tenants:
        try:
            rs = json.load(open(js))["end"]["sum_received"]["seconds"]
        except Exception:
            out.append("%s's iperf3 reported no result" % n)
            continue
        m = minor[n]
        # the transfer: the intervals in which its class sent more than 16 full frames
        act = [i for i in range(1, len(samples)) if samples[i][2][m][0] - samples[i - 1][2][m][0] > 16 * 1514]
        if not act:
            out.append("%s's class sent nothing" % n)
            continue
        lo, hi = samples[act[0] - 1][0], samples[act[-1]][0]
        info.append("%s's class sent %.1f-%.1f s, its receiver counted %.2f s" % (n, lo, hi, rs))
        if hi - lo < 0.9 * rs:
            out.append("%s's class sent for %.1f s, its receiver counted %.2f s" % (n, hi - lo, rs))
        # the first and last intervals are the transfer's start and end: those inside
        out += [x if x.startswith(n + " ") else "%s's transfer: %s" % (n, x)
                for x in unbacklogged(samples, samples[act[0]][0], samples[act[-1] - 1][0], [n], minor)]
    print("; ".join(out))
    print("; ".join(info) + " (%d samples)" % len(samples))
    # the third line: the host's waits over the whole run, for the shell's
    # one-sided premise (limit_host), empty on the host
    h = host_waits(w, int(t0), samples[0][0], samples[-1][0]) if samples else "unknown"
    print("" if h is None else h if h == "unknown" else "%.3f" % h)

def share(w, t0, scale, again, lo1, hi1):
    """share mode, 1:2:3: one line per window, "PREMISE<tab>OK<tab>DETAIL": all backlogged
    in lo1-hi1 s; c idle (from 2 s after it stopped to `again`, when its second client
    started), a and b backlogged; c back (from 2 s after, 3 s at least), all backlogged.
    again 0: the first window only."""
    t0, scale, again, lo1, hi1 = int(t0), float(scale), float(again), float(lo1), float(hi1)
    minor = dict(l.split() for l in open(w + "/minors"))
    samples = load(w + "/cls", t0, minor.values())
    spreads = sorted(s[1] for s in samples)
    slow = 2 * spreads[len(spreads) // 2] if spreads else 0
    # the rates from the samples tc took under twice its median to read (a busy
    # VM's tc may wait a few tenths, and the instant is then uncertain); the
    # premise from all of them
    fast = [s for s in samples if s[1] <= slow]
    snaps = {s[0]: {m: v[0] for m, v in s[2].items()} for s in fast}
    times = [s[0] for s in fast]
    link = 100 * scale
    def rates(lo, hi):  # (t1, t2, {tenant: Mbit/s on the wire}) from the first sample at or after lo to the last at or before hi
        t1 = min((t for t in times if t >= lo), default=None)
        t2 = max((t for t in times if t <= hi), default=None)
        if t1 is None or t2 is None or t2 <= t1:
            return lo, hi, None
        return t1, t2, {n: (snaps[t2][m] - snaps[t1][m]) * 8 / (t2 - t1) / 1e6 for n, m in minor.items()}
    def split(r, names):
        tot = sum(r[n] for n in names)
        return [r[n] / tot if tot else 0 for n in names]
    def near(got, want, tol=0.05):
        return all(abs(g - e) <= tol * e for g, e in zip(got, want))
    c = minor["c"]
    # c's class quiet in an interval: under 2% of its share of the link (3/6)
    def quiet(i):
        return (snaps[times[i]][c] - snaps[times[i - 1]][c]) * 8 / (times[i] - times[i - 1]) / 1e6 < 0.02 * link / 2
    def line(premise, ok, detail, lo=None, hi=None):
        if lo is not None:
            p, h = host_premise(w, t0, lo, hi, ok)
            premise, detail = premise + p, detail + ("; " + h if h else "")
        print("%s\t%d\t%s" % ("; ".join(premise), ok, detail))

    t1, t2, r1 = rates(lo1, hi1)
    if r1 is None:
        line(["no samples in %.1f-%.1f s" % (lo1, hi1)], 0, "")
    else:
        s1 = split(r1, "abc")
        line(unbacklogged(samples, t1, t2, "abc", minor, False), near(s1, (1/6, 2/6, 3/6)),
             "all backlogged, %.1f-%.1f s: a %.1f b %.1f c %.1f Mbit/s, split %.3f:%.3f:%.3f (want 1/6:2/6:3/6,"
             " %d samples, tc's median read %.0f ms)" % (t1, t2, r1["a"], r1["b"], r1["c"], *s1, len(samples), slow / 2e3),
             t1, t2)
    if again == 0:
        return
    # c stopped at the first sample after which its class was quiet, and started
    # again at the first sample after its second client started after which it was not
    stop = next((times[i - 1] for i in range(1, len(times)) if hi1 < times[i] < again and quiet(i)), None)
    back = next((times[i - 1] for i in range(1, len(times)) if times[i - 1] >= again and not quiet(i)), None)
    def idle_window():  # the second window's line
        if stop is None:
            line(["c's class did not go quiet after %.1f s (its first client ran 12 s)" % hi1], 0, "")
        elif stop + 2 + 3 > again:
            line(["c stopped at %.1f s, too late for 3 s of window before %.1f s" % (stop, again)], 0, "")
        else:
            t1, t2, r2 = rates(stop + 2, again)
            if r2 is None:
                return line(["no samples in %.1f-%.1f s" % (stop + 2, again)], 0, "")
            p = unbacklogged(samples, t1, t2, "ab", minor, False)
            loud = [times[i - 1] for i in range(1, len(times)) if t1 < times[i] <= t2 and not quiet(i)]
            if loud:
                p.append("c not idle in %d intervals (from %s s)" % (len(loud), ts(loud)))
            s2 = split(r2, "ab")
            line(p, r2["a"] + r2["b"] >= 0.95 * link and near(s2, (1/3, 2/3)),
                 "c idle from %.1f s, %.1f-%.1f s: a %.1f + b %.1f = %.1f of the link's %.1f Mbit/s, "
                 "split %.3f:%.3f (want 1/3:2/3)" % (stop, t1, t2, r2["a"], r2["b"], r2["a"] + r2["b"], link, *s2), t1, t2)
    idle_window()
    # c's second client runs 8 s: the window ends 6 s after it came back, or
    # when a or b stopped (their clients run 31 s, from when they started)
    ab = [minor["a"], minor["b"]]
    abstop = next((times[i - 1] for i in range(1, len(times)) if times[i - 1] >= again and any(
        (snaps[times[i]][m] - snaps[times[i - 1]][m]) * 8 / (times[i] - times[i - 1]) / 1e6 < 0.02 * link / 6
        for m in ab)), times[-1])
    end = min(times[-1], abstop, (back or 0) + 6)
    if back is None:
        line(["c's class did not send again after %.1f s (its second client started then)" % again], 0, "")
    elif back + 2 + 3 > end:
        line(["c started again at %.1f s, too late for 3 s of window before %.1f s (a or b stopped at %.1f s)"
              % (back, end, abstop)], 0, "")
    else:
        t1, t2, r3 = rates(back + 2, end)
        if r3 is None:
            return line(["no samples in %.1f-%.1f s" % (back + 2, end)], 0, "")
        s3 = split(r3, "abc")
        line(unbacklogged(samples, t1, t2, "abc", minor, False), near(s3, (1/6, 2/6, 3/6)),
             "c back at %.1f s, %.1f-%.1f s: a %.1f b %.1f c %.1f Mbit/s, split %.3f:%.3f:%.3f"
             % (back, t1, t2, r3["a"], r3["b"], r3["c"], *s3), t1, t2)

if sys.argv[1] == "limit":
    a = sys.argv[4:]
    limit(sys.argv[2], sys.argv[3], list(zip(a[::2], a[1::2])))
else:
    share(*sys.argv[2:8])
PY

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
	cpids+=($!)
}
cpids=()

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

# analyse MODE ARGS...: measure.py's lines; if it fails, lines whose premise
# says so (a window is never passed by an analysis that did not run)
analyse() {
	local l
	if ! python3 "$work/measure.py" "$@" >"$work/analysis" 2>"$work/analysis.err"; then
		l="the analysis failed: $(tail -1 "$work/analysis.err")"
		if [ "$1" = limit ]; then echo "$l"; echo; else printf '%s\t0\t\n' "$l" "$l" "$l"; fi
		return
	fi
	cat "$work/analysis"
}

# The tenants' class minors (from drfd's status) in work/minors: "NAME MINOR" lines.
tenant_minors() {
	"$drfctl" status -c "$work/drfd.conf" --json |
		python3 -c "import json,sys; [print(t['name'], t['net']['class'].split(':')[1]) for t in json.load(sys.stdin)['tenants']]" \
			>"$work/minors"
}

# start_sampling / stop_sampling: tc's class counters every quarter second in
# work/cls (sample_classes, below) while a test's load runs. With "low", the
# sampler runs at nice 19: where the goodput is the receiver's count and the
# samples are only the premise's evidence (limit mode), the sampler's tc and
# sed (forks of about 0.1 s each in the VM) must not take the CPU from the
# senders and receivers it watches (at nice 0, a VM run read both tenants of
# limit-two-tenants 3.4-3.8% under their rates, their classes backlogged).
start_sampling() { # START (microseconds, the clock t0 of the analysis) [low]
	: >"$work/cls"
	rm -f "$work/cls.stop"
	if [ "${2:-}" = low ]; then
		(renice -n 19 "$BASHPID" >/dev/null && sample_classes "$work/cls" $(($1 + 60000000))) &
	else
		sample_classes "$work/cls" $(($1 + 60000000)) &
	fi
	sampler=$!
}
stop_sampling() {
	sleep 0.5 # a sample after the load's end
	: >"$work/cls.stop"
	wait "$sampler"
}

# limit mode, N tenants at once: each one's goodput within 3% of its rate x 1448/1514.
# The premise, checked in the same window: each one's class was backlogged
# (measure.py's limit) from its transfer's first interval to its last, and the
# transfer lasted as long as the receiver's count (goodput is its bytes over
# its seconds, measured by iperf3's clock).
limit_test() { # NAME TENANTS...
	local name=$1
	shift
	measure "$name" 3 limit_window "$name" "$@"
}

limit_window() { # NAME TENANTS...
	local name=$1 t port=5201 want got bad=0 t0 args=() info='' hw=''
	shift
	write_conf limit "net-rate = $(mbit 100)\nnet-link-rate = $(mbit 100)" "$@"
	start_drfd || { detail="drfd did not start: $(tail -3 "$work/drfd.log")"; return; }
	tenant_minors
	t0=${EPOCHREALTIME/./}
	start_sampling "$t0" low
	cpids=()
	for t in "$@"; do
		client "${t%% *}" $port 10
		args+=("${t%% *}" "$work/${t%% *}.$port.json")
		port=$((port + 1))
	done
	wait "${cpids[@]}"
	stop_sampling
	tc -n "$nsA" -s qdisc show dev va >"$work/qdisc.$name"
	analyse limit "$work" "$t0" "${args[@]}" >"$work/premise"
	{ read -r premise; read -r info; read -r hw; } <"$work/premise"
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
	verdict=$bad
	limit_host "$hw"
	detail="goodput/expected within 3%:$detail premise: $info${hw:+; host waits $hw}"
	[ $bad -eq 0 ] || [ -n "$premise" ] || { tail -5 "$work/drfd.log"; cat "$work/qdisc.$name"; }
}

# limit_host WAITS [RATE]: after verdict, with measure.py limit's third line
# (empty on the host): a window whose rate check failed (RATE, else verdict)
# while the host kept a vCPU waiting over 0.10 of it, or with its waits
# unknown, is discarded (premise.sh: host_judge); a check the waits cannot
# touch (a tree, a count of bytes) is never discarded for them.
limit_host() {
	[ -z "$1" ] || host_judge "$1" "${2:-$verdict}"
}
# host_run FROM TO: host_waits between two host_vcpu lines, in the VM; empty
# on the host. host_max A B: the larger of two such figures.
host_run() { [ -z "$HOST_VCPU" ] || host_waits "$1" "$2"; }
host_max() {
	if [ -z "$1" ] || [ -z "$2" ]; then echo "$1$2"
	elif [ "$1" = unknown ] || [ "$2" = unknown ]; then echo unknown
	else awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; fi
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
# Each window's premise is checked in its own samples (measure.py's share):
# all three backlogged in every interval of the first and third, a and b in the
# second and c's class quiet in all of its intervals, c's stop and restart seen
# in its class's counter; a window's length is its samples' clock's. A window
# whose premise failed is measured again in a new run of the whole scenario
# (31 s): at most 3 runs, the first window whose premise held decides each check.
class_bytes() { # prints "MINOR BYTES OVERLIMITS QUEUED-PACKETS" for every class
	tc -n "$nsA" -s class show dev va | awk '
		$1 == "class" { split($3, h, ":"); m = h[2] }
		$1 == "Sent" { b = $2; o = 0; for (i = 1; i < NF; i++) if ($i == "overlimits") o = $(i + 1) }
		$1 == "backlog" && m != "" { q = $3; sub(/p$/, "", q); print m, b, o, q; m = "" }'
}

# appends "TIME SPREAD MINOR BYTES OVERLIMITS QUEUED" for every class to FILE,
# every quarter second, until the clock reads END (microseconds) or FILE.stop
# exists: TIME is halfway between the clock read before tc and after it, SPREAD
# the time tc took (a sample that took more than twice the median is left out
# of rates: in a busy VM, tc may wait a few tenths)
# In the VM ($HOST_VCPU), also "TIME NS WAIT0 WAIT1" to FILE.host: the host's
# line of its vCPUs' waits (measure.py's host_waits).
sample_classes() { # FILE END
	local t1 t2 h
	: >"$1.host"
	[ -n "$HOST_VCPU" ] || rm -f "$1.host"
	while t1=${EPOCHREALTIME/./} && [ "$t1" -lt "$2" ] && [ ! -e "$1.stop" ]; do
		class_bytes >"$1.one"
		t2=${EPOCHREALTIME/./}
		sed "s/^/$(((t1 + t2) / 2)) $((t2 - t1)) /" "$1.one" >>"$1"
		[ -n "$HOST_VCPU" ] && read -r h <"$HOST_VCPU" && echo "$(((t1 + t2) / 2)) $h" >>"$1.host"
		sleep 0.25
	done
}

# iperf3 -b for one of four streams of TENANT (weight W of 6) at 30% of its
# share: its sender cannot keep its class backlogged.
throttle() { # W
	awk -v s="$scale" -v w="$1" 'BEGIN { printf "%dk", 100 * s * w / 6 * 0.3 / 4 * 1000 }'
}

start_share() {
	write_conf share "net-rate = $(mbit 90)\nnet-link-rate = $(mbit 100)" "a weight=1" \
		"b weight=2" "c weight=3"
	start_drfd && tenant_minors
}

# One run of the scenario; its three windows' "PREMISE<tab>OK<tab>DETAIL" in
# share_res[RUN * 3 + WINDOW]. NET_THROTTLE_FIRST=a, b or c throttles that
# tenant's (first) client in the first run.
share_scenario() { # RUN
	local run=$1 t0 again l w=0 thr_a=() thr_b=() thr_c=()
	if [ "$run" = 1 ]; then
		case ${NET_THROTTLE_FIRST:-} in
		a) thr_a=(-b "$(throttle 1)") ;;
		b) thr_b=(-b "$(throttle 2)") ;;
		c) thr_c=(-b "$(throttle 3)") ;;
		esac
	fi
	if ! start_share; then
		l=$(printf '\t0\tdrfd did not start: %s' "$(tail -3 "$work/drfd.log" | tr '\n\t' '  ')")
		share_res[run * 3]=$l share_res[run * 3 + 1]=$l share_res[run * 3 + 2]=$l
		return
	fi
	t0=${EPOCHREALTIME/./}
	start_sampling "$t0"
	cpids=()
	# Four streams each, to keep every class backlogged. c's first client
	# runs 12 s; its second starts 7 s after the first ended.
	client a 5201 31 -P 4 "${thr_a[@]}"
	client b 5202 31 -P 4 "${thr_b[@]}"
	client c 5203 12 -P 4 "${thr_c[@]}"
	wait $!
	sleep 7
	again=${EPOCHREALTIME/./}
	client c 5204 8 -P 4
	wait "${cpids[@]}"
	stop_sampling
	[ -n "${NET_KEEP:-}" ] && { tc -n "$nsA" -d class show dev va >"$NET_KEEP/share-run$run.classes"
		cp "$work/cls" "$NET_KEEP/share-run$run.cls"; cp "$work/minors" "$NET_KEEP/share-run$run.minors"
		[ ! -e "$work/cls.host" ] || cp "$work/cls.host" "$NET_KEEP/share-run$run.cls.host"; }
	stop_drfd
	analyse share "$work" "$t0" "$scale" "$(((again - t0) / 1000))e-3" 3 11 >"$work/premise"
	while IFS= read -r l; do
		share_res[run * 3 + w]=$l
		w=$((w + 1))
	done <"$work/premise"
}

# measure's FUNC for the share checks: window WINDOW of the scenario's next
# run, the scenario run again when no run is left.
share_window() { # WINDOW
	local l
	share_i=$((share_i + 1))
	[ "$share_runs" -ge "$share_i" ] || { share_runs=$share_i; share_scenario "$share_i"; }
	l=${share_res[share_i * 3 + $1]:-$'no result\t0\t'}
	premise=${l%%$'\t'*}
	l=${l#*$'\t'}
	[ "${l%%$'\t'*}" = 1 ] && verdict=0
	detail=${l#*$'\t'}
}

# The premise check can fail: c's sender throttled to 30% of its share, in a
# 10 s run; the first window's premise (all backlogged) must name c, and the
# window be discarded, neither passed nor failed.
share_throttled() {
	local t0 l p named=no
	start_share || { ko share-premise-throttled-discarded "drfd did not start"; return; }
	t0=${EPOCHREALTIME/./}
	start_sampling "$t0"
	cpids=()
	client a 5201 10 -P 4
	client b 5202 10 -P 4
	client c 5203 10 -P 4 -b "$(throttle 3)"
	wait "${cpids[@]}"
	stop_sampling
	stop_drfd
	l=$(analyse share "$work" "$t0" "$scale" 0 3 9)
	p=${l%%$'\t'*}
	l=${l#*$'\t'}
	# discarded because of c: the premise names c as not backlogged
	[[ $p =~ (^|; )c\ not\ backlogged ]] && named=yes
	check share-premise-throttled-discarded "[ $named = yes ]" \
		"c sent at most $(throttle 3)bit/s per stream (4): $([ -n "$p" ] && echo "window discarded: $p" || echo "premise HELD (the check cannot fail)"); measured: ${l#*$'\t'} (would have $([ "${l%%$'\t'*}" = 1 ] && echo passed || echo failed))"
}

test_share() {
	share_throttled
	share_runs=0 share_res=()
	share_i=0
	measure share-split 3 share_window 0
	share_i=0
	measure share-idle-borrowed 3 share_window 1
	share_i=0
	measure share-resume 3 share_window 2
}

# drfd's tick count, from its status (read by the shell: no python a poll); -1 if none
ticks() {
	[[ $("$drfctl" status -c "$work/drfd.conf" --json 2>/dev/null) =~ \"ticks\":\ *([0-9]+) ]] &&
		echo "${BASH_REMATCH[1]}" || echo -1
}

# waits until drfd has counted N more ticks than FROM, 10 s at most; prints the count
wait_ticks() { # FROM N
	local k _
	for _ in $(seq 50); do
		k=$(ticks)
		[ "$k" -ge $(($1 + $2)) ] && break
		sleep 0.2
	done
	echo "$k"
}

# sent FILE: bytes a client's iperf3 sent (its JSON), 0 if it reported none
sent() {
	python3 -c "import json; print(json.load(open('$1'))['end']['sum_sent']['bytes'])" 2>/dev/null || echo 0
}

# Ticks that find the tree as planned write nothing. Rates not scaled: at 500
# and 7 mbit/s fq_codel's CoDel times (5000 and 100000 us; 112347 and 449390
# us) are not whole multiples of the kernel's 1024 ns, and read back 1 us
# less, which is no reason to replace a leaf. The premise: the window is 4
# ticks of drfd's, counted in its status, not assumed from a sleep.
test_steady() {
	write_conf limit "net-rate = 1gbit\nnet-link-rate = 1gbit" "a net-rate=500mbit" \
		"b net-rate=7mbit"
	start_drfd || { ko steady-no-tc-writes "drfd did not start: $(tail -3 "$work/drfd.log")"; return; }
	sleep 1
	measure steady-no-tc-writes 3 steady_window
	stop_drfd
}

steady_window() {
	local w0 w1 k0 k1 fq
	k0=$(ticks)
	w0=$(status_py "s['net']['writes_total']")
	k1=$(wait_ticks "$k0" 4)
	w1=$(status_py "s['net']['writes_total']")
	fq=$(status_py "s['net']['fq_codel']")
	[ "$k0" -ge 0 ] && [ "$k1" -ge $((k0 + 4)) ] ||
		premise="drfd counted $k0 -> $k1 ticks in 10 s, not the window's 4"
	[ "$w0" != '?' ] && [ "$w0" = "$w1" ] && verdict=0
	detail="drfd's tc writes over $((k1 - k0)) ticks ($k0 -> $k1) of a tree as planned: $w0 -> $w1 (fq_codel leaves: $fq)"
}

# Traffic of a process in no tenant goes to the default class, counted to no
# tenant. The premise: the load ran (its iperf3 sent 1.2 MB or more), and the
# tenant's count was read at least two ticks after it ended.
test_default() {
	write_conf limit "net-rate = $(mbit 50)\nnet-link-rate = $(mbit 100)" "a net-rate=$(mbit 20)"
	start_drfd || { ko default-class "drfd did not start"; return; }
	measure default-class 3 default_window
	stop_drfd
}

default_window() {
	local before after tb ta k0 k1 s
	before=$(tc -n "$nsA" -s class show dev va classid d7f:ffff | awk '/Sent/ {print $2}')
	tb=$(status_py "s['tenants'][0]['net']['egress']['bytes']")
	inA iperf3 -c $addrB -p 5205 -t 2 -J >"$work/none.json" 2>&1
	k0=$(ticks)
	k1=$(wait_ticks "$k0" 2)
	after=$(tc -n "$nsA" -s class show dev va classid d7f:ffff | awk '/Sent/ {print $2}')
	ta=$(status_py "s['tenants'][0]['net']['egress']['bytes']")
	s=$(sent "$work/none.json")
	[ "$s" -ge 1200000 ] || premise="the iperf3 of no tenant sent $s bytes, under 1.2 MB"
	[ "$k1" -ge $((k0 + 2)) ] || premise="$premise${premise:+; }drfd counted $k0 -> $k1 ticks after the load, not 2"
	[ $((after - before)) -gt 1000000 ] && [ "$ta" = "$tb" ] && verdict=0
	detail="the iperf3 of no tenant sent $s bytes; d7f:ffff sent $((after - before)) bytes more; tenant a's counted bytes $tb -> $ta (ticks after the load: $((k1 - k0)))"
}

# One tree, one attachment, one set of pins: tc's root qdiscs and htb classes on
# va, the programs at the root, the entries of drfd's pin directory.
inventory() {
	echo "roots $(tc -n "$nsA" qdisc show dev va | grep -c ' root ')"
	tc -n "$nsA" class show dev va | grep '^class htb' | awk '{print $3, $5}' | sort
	echo "programs $(bpftool cgroup show "$root" 2>/dev/null | grep -c drf_net_)"
	find "$pins" -mindepth 1 -printf '%f\n' 2>/dev/null | sort
}

# sampled_client TENANT PORT SECONDS [iperf3 args]: one client with its class
# sampled; sets premise (measure.py's limit: backlogged throughout its
# transfer, which lasted as long as its receiver counted), sinfo and hw (the
# host's waits over it, measure.py limit's third line).
sampled_client() {
	local t=$1 port=$2 t0
	shift 2
	t0=${EPOCHREALTIME/./}
	start_sampling "$t0" low
	cpids=()
	client "$t" "$port" "$@"
	wait "${cpids[@]}"
	stop_sampling
	analyse limit "$work" "$t0" "$t" "$work/$t.$port.json" >"$work/premise"
	{ read -r premise; read -r sinfo; read -r hw; } <"$work/premise"
}

# A restart adopts drfd's own qdisc, classes and pinned programs: no duplicate,
# and the tenant's traffic keeps its class throughout: none of it falls into
# the default class while drfd is down or starting, and the receiver counts the
# class's goodput over the whole run (the premise: its class backlogged
# throughout, measure.py's limit, the restart included). A reload and a kill -9
# leave the same single tree, attachment and pins.
test_restart() {
	local inv1 inv3 inv4
	measure restart-adopts 3 restart_window
	[ -n "$drfd_pid" ] || return
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

restart_window() { # sets inv1 (test_restart's), the inventory before the restart
	local inv2 d0 d1 got want t0 sinfo='' hw='' rate
	stop_drfd
	write_conf limit "net-rate = $(mbit 50)\nnet-link-rate = $(mbit 100)" "a net-rate=$(mbit 20)"
	start_drfd || { detail="drfd did not start"; return; }
	inv1=$(inventory)
	tenant_minors
	t0=${EPOCHREALTIME/./}
	start_sampling "$t0" low
	cpids=()
	client a 5201 10
	sleep 3
	d0=$(tc -n "$nsA" -s class show dev va classid d7f:ffff | awk '/Sent/ {print $2}')
	stop_drfd
	start_drfd || { detail="drfd did not restart: $(tail -3 "$work/drfd.log")"; stop_sampling; return; }
	wait "${cpids[@]}"
	stop_sampling
	analyse limit "$work" "$t0" a "$work/a.5201.json" >"$work/premise"
	{ read -r premise; read -r sinfo; read -r hw; } <"$work/premise"
	d1=$(tc -n "$nsA" -s class show dev va classid d7f:ffff | awk '/Sent/ {print $2}')
	inv2=$(inventory)
	got=$(received "$work/a.5201.json")
	want=$(awk -v r="$(mbit 20)" -v g="$GOODPUT" 'BEGIN { printf "%.3f", r / 1000 * g }')
	rate=1
	within "$got" "$want" 0.03 >/dev/null && rate=0
	[ "$inv1" = "$inv2" ] && [ $((d1 - d0)) -lt 65536 ] && [ $rate = 0 ] && verdict=0
	# the tree and the default class's bytes are not the host's to spoil
	[ "$inv1" = "$inv2" ] && [ $((d1 - d0)) -lt 65536 ] && limit_host "$hw" "$rate"
	detail="one tree, attachment and pins after the restart: $([ "$inv1" = "$inv2" ] && echo yes || echo no) ($(echo "$inv2" | tr '\n' ' ')); default class sent $((d1 - d0)) bytes through the restart; goodput $got/$want Mbit/s; premise: $sinfo${hw:+; host waits $hw}"
}

# What the egress program counts agrees with what HTB counts, per tenant. The
# premise: the load ran (each iperf3 sent 2 MB or more) and the counters were
# read two ticks after it ended, none of it in flight between the two.
test_counters() {
	write_conf limit "net-rate = $(mbit 100)\nnet-link-rate = $(mbit 100)" "a net-rate=$(mbit 30)" \
		"b net-rate=$(mbit 60)"
	start_drfd || { ko counters-agree "drfd did not start"; return; }
	measure counters-agree 3 counters_window
	stop_drfd
}

counters_window() {
	local r k0 k1 sa sb
	cpids=()
	client a 5201 5
	client b 5202 5 -P 2
	wait "${cpids[@]}"
	k0=$(ticks)
	k1=$(wait_ticks "$k0" 2)
	r=$(status_py "' '.join('%s %d %d' % (t['name'], t['net']['egress']['bytes'], t['net']['egress']['class_bytes']) for t in s['tenants'])")
	sa=$(sent "$work/a.5201.json") sb=$(sent "$work/b.5202.json")
	[ "$sa" -ge 2000000 ] && [ "$sb" -ge 2000000 ] || premise="the load did not run: a's iperf3 sent $sa bytes, b's $sb"
	[ "$k1" -ge $((k0 + 2)) ] || premise="$premise${premise:+; }drfd counted $k0 -> $k1 ticks after the load, not 2"
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
	[ "${r%% *}" = 1 ] && verdict=0
	detail="${r#* } (iperf3 sent: a $sa, b $sb bytes; ticks after the load: $((k1 - k0)))"
}

# The ingress policer: a tenant receiving bulk TCP over its net-ingress-rate is
# held within 10% of it (its goodput: rate x 1448/1514), with and without ECN;
# another tenant's ingress is untouched. The premise: the sender offered more
# than the rate in each policed run (the policer marked or dropped packets in
# it: counted by run, its counters in drfd's status), each policed mean is over
# 5 s or more of the receiver's intervals, and the unpoliced runs ran (a result).
test_ingress() {
	write_conf limit "net-ingress-rate = $(mbit 100)" "a net-ingress-rate=$(mbit 10)" "b"
	start_drfd || { ko ingress-policer "drfd did not start: $(tail -3 "$work/drfd.log")"; return; }
	measure ingress-policer 3 ingress_window
	stop_drfd
}

acts_sum() { status_py "s['tenants'][0]['net']['ingress']['marked'] + s['tenants'][0]['net']['ingress']['dropped']"; }

# mean_secs FILE FROM TO: the seconds of a client's intervals starting in [FROM, TO)
mean_secs() {
	python3 -c "import json, sys; print('%.2f' % sum(i['sum']['seconds'] for i in json.load(open('$1')).get('intervals', []) if $2 <= i['sum']['start'] < $3))" 2>/dev/null || echo 0
}

ingress_window() {
	local ecn noecn b lo acts acts1 want n0 n1 n2 s1 s2 h0 h1 hw
	ip netns exec "$nsA" sysctl -qw net.ipv4.tcp_ecn=1
	n0=$(acts_sum) h0=$(host_vcpu)
	client a 5201 8 -R
	wait_clients
	# From 2 s on: the bucket starts full, and at low rates its burst (at least four
	# 64 KiB GRO packets) would weigh in the whole run's mean.
	ecn=$(mean "$work/a.5201.json" 2 8)
	s1=$(mean_secs "$work/a.5201.json" 2 8)
	acts1=$(status_py "'%d marked, %d dropped' % (s['tenants'][0]['net']['ingress']['marked'], s['tenants'][0]['net']['ingress']['dropped'])")
	n1=$(acts_sum)
	ip netns exec "$nsA" sysctl -qw net.ipv4.tcp_ecn=0
	client a 5202 8 -R
	wait_clients
	noecn=$(mean "$work/a.5202.json" 2 8)
	s2=$(mean_secs "$work/a.5202.json" 2 8)
	n2=$(acts_sum) h1=$(host_vcpu)
	hw=$(host_run "$h0" "$h1")
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
	want=$(awk -v r="$(mbit 10)" -v g="$GOODPUT" 'BEGIN { printf "%.3f", r / 1000 * g }')
	local p=()
	[[ $n0 =~ ^[0-9]+$ && $n1 =~ ^[0-9]+$ && $n2 =~ ^[0-9]+$ ]] || p+=("drfd's status gave no policer counts ($n0, $n1, $n2)")
	[[ $n0 =~ ^[0-9]+$ && $n1 =~ ^[0-9]+$ ]] && [ "$n1" -le "$n0" ] && p+=("the policer acted on none of the ECN run's packets: its sender offered no more than the rate")
	[[ $n1 =~ ^[0-9]+$ && $n2 =~ ^[0-9]+$ ]] && [ "$n2" -le "$n1" ] && p+=("the policer acted on none of the run without ECN's packets")
	awk -v a="$s1" -v b="$s2" 'BEGIN { exit !(a < 5 || b < 5) }' && p+=("the means from 2 s on cover $s1 and $s2 s of the receiver's intervals, not 5")
	[ "$b" != 0 ] && [ "$lo" != 0 ] || p+=("b's run or the loopback run gave no result")
	premise=$(IFS=';'; echo "${p[*]}")
	within "$ecn" "$want" 0.1 && within "$noecn" "$want" 0.1 &&
		awk -v b="$b" -v l="$lo" -v w="$want" 'BEGIN { exit !(b > 3 * w && l > 3 * w) }' && verdict=0
	limit_host "$hw"
	detail="${hw:+host waits $hw over the policed runs; }a, policed at $(mbit 10) (goodput $want Mbit/s), received $ecn Mbit/s (from 2 s on, $s1 s) with ECN ($acts1) and $noecn ($s2 s) without (then $acts in all); b, not policed, $b Mbit/s; a over loopback (not net-device) $lo Mbit/s"
}

# cgroup-root removed and made again while drfd is down (under systemd: a restart
# of drfd-tenants.service): the pinned links hold the old cgroup, severed; drfd
# attaches anew, and the tenant's traffic is classified again (the goodput's
# premise: its class backlogged throughout, measure.py's limit).
test_rootgone() {
	local progs
	write_conf limit "net-rate = $(mbit 50)\nnet-link-rate = $(mbit 100)" "a net-rate=$(mbit 20)"
	start_drfd || { ko root-recreated "drfd did not start"; return; }
	stop_drfd
	rmdir "$root/a" "$root"
	start_drfd || { ko root-recreated "drfd did not start: $(tail -3 "$work/drfd.log")"; return; }
	progs=$(bpftool cgroup show "$root" 2>/dev/null | grep -c drf_net_)
	tenant_minors
	measure root-recreated 3 rootgone_window
	stop_drfd
}

rootgone_window() {
	local d0 d1 got want sinfo='' hw='' rate
	d0=$(tc -n "$nsA" -s class show dev va classid d7f:ffff | awk '/Sent/ {print $2}')
	sampled_client a 5201 4
	d1=$(tc -n "$nsA" -s class show dev va classid d7f:ffff | awk '/Sent/ {print $2}')
	got=$(received "$work/a.5201.json")
	want=$(awk -v r="$(mbit 20)" -v g="$GOODPUT" 'BEGIN { printf "%.3f", r / 1000 * g }')
	rate=1
	within "$got" "$want" 0.05 >/dev/null && rate=0
	[ "$progs" -eq 2 ] && [ $((d1 - d0)) -lt 65536 ] && [ $rate = 0 ] && verdict=0
	[ "$progs" -eq 2 ] && [ $((d1 - d0)) -lt 65536 ] && limit_host "$hw" "$rate"
	detail="programs at the new root: $progs; default class sent $((d1 - d0)) bytes; a's goodput $got/$want Mbit/s; premise: $sinfo${hw:+; host waits $hw}"
}

# net-device a port of a bridge that holds the address: the sockets' packets name
# the bridge (the device with the address), and are still classified and policed.
# The premises: a's class backlogged throughout its sending run (measure.py's
# limit), the policer acting in its receiving run and the mean over 3 s or more.
test_bridge() {
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
		tenant_minors
		measure bridge-port 3 bridge_window
		stop_drfd
	else
		ko bridge-port "drfd did not start: $(tail -3 "$work/drfd.log")"
	fi
	inA "$drfctl" net-reset -c "$work/drfd.conf" >/dev/null 2>&1
	ip -n "$nsA" link del br0
	ip -n "$nsA" addr add $addrA/24 dev va
	ip -n "$nsA" link set va up
	sleep 1
}

bridge_window() {
	local got want in_want in_got sinfo='' hw='' n0 n1 s h0 h1
	sampled_client a 5201 6
	n0=$(acts_sum) h0=$(host_vcpu)
	client a 5202 6 -R
	wait_clients
	n1=$(acts_sum) h1=$(host_vcpu)
	hw=$(host_max "$hw" "$(host_run "$h0" "$h1")")
	got=$(received "$work/a.5201.json")
	in_got=$(mean "$work/a.5202.json" 2 6)
	s=$(mean_secs "$work/a.5202.json" 2 6)
	[[ $n0 =~ ^[0-9]+$ && $n1 =~ ^[0-9]+$ ]] && [ "$n1" -gt "$n0" ] ||
		premise="$premise${premise:+; }the policer acted on none of the receiving run's packets ($n0 -> $n1)"
	awk -v a="$s" 'BEGIN { exit !(a < 3) }' &&
		premise="$premise${premise:+; }the receiving run's mean from 2 s on covers $s s, not 3"
	want=$(awk -v r="$(mbit 20)" -v g="$GOODPUT" 'BEGIN { printf "%.3f", r / 1000 * g }')
	in_want=$(awk -v r="$(mbit 10)" -v g="$GOODPUT" 'BEGIN { printf "%.3f", r / 1000 * g }')
	within "${got:-0}" "$want" 0.03 && within "${in_got:-0}" "$in_want" 0.1 && verdict=0
	limit_host "$hw"
	detail="va a port of br0 (the address on br0): a sent ${got:-?}/$want Mbit/s, received ${in_got:-?}/$in_want (from 2 s on, $s s; policer's marks and drops $n0 -> $n1); premise: $sinfo${hw:+; host waits $hw (both runs)}"
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
