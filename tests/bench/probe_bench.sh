#!/usr/bin/env bash
# The usage probes' cost on this host's kernel, in one run: a context-switch
# heavy load (`perf bench sched pipe`: two tasks passing a token through a
# pipe) inside a tenant cgroup, with the probes attached and without them,
# alternated ROUNDS times so that both see the same machine:
#   - the slowdown: median usecs/op with the probes over median without
#     (run-time statistics off: they cost two clock reads per program run),
#     in wall-clock time and in CPU time (perf stat's task-clock of the two
#     tasks: on a machine others use, the time CPU 0 gives their tasks is not
#     in it, the probes' programs are); the median of each round's own ratio
#     as well, which a machine whose speed drifts over the run disturbs less;
#   - the cost per event and per op, from the kernel's BPF run-time
#     statistics (kernel.bpf_stats_enabled), in one more run with the probes:
#     run_time_ns / run_cnt of each program, and all programs' time over the
#     ops (the time the statistics see; the clock reads they add are in it);
#     and the same for a yardstick, programs that do nothing on the same
#     tracepoints (tests/bench/yardstick.bpf.c), whose figure is what any
#     program costs there as the statistics see it: the probes' own work is
#     what they cost beyond it.
# Both tasks are pinned to CPU 0, so that every op is two context switches on
# one CPU. In a tenant, the load is the worst case: every event is attributed
# (a task entry, a counter update); in a cgroup outside cgroup-root it shows
# what the probes cost the rest of the host (they stop at the root check).
# With BENCH_PROBE_BASE (another build's bench_probe, say main's), its probes
# run in the same rounds too, after this build's, and are reported the same
# way: before and after, side by side, from one run.
#   BENCH_PROBE=... [BENCH_PROBE_BASE=...] tests/bench/probe_bench.sh [ROUNDS [LOOPS]]
set -u
bin=${BENCH_PROBE:?set BENCH_PROBE to the bench_probe binary}
base=${BENCH_PROBE_BASE:-}
rounds=${1:-5}
loops=${2:-200000}
if [ "$(id -u)" -ne 0 ] || ! command -v perf >/dev/null ||
	[ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" != bpf_fs ]; then
	echo "SKIP probe_bench: needs root, perf (linux-perf) and bpffs at /sys/fs/bpf"
	exit 0
fi
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
root=$mnt/drfpbench$$ outside=$mnt/drfpbench$$-out pins=/sys/fs/bpf/drfd-bench$$ work=$(mktemp -d)
rel=${root#"$mnt"}
level=$(echo "$rel" | tr -cd / | wc -c)
stats_was=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
cleanup() {
	rmdir "$root/t" "$root" "$outside" 2>/dev/null
	rm -rf "$pins" "$work"
	sysctl -qw kernel.bpf_stats_enabled="$stats_was" 2>/dev/null
}
trap cleanup EXIT
mkdir -p "$root/t" "$outside"
sysctl -qw kernel.bpf_stats_enabled=0

# One perf bench run, its tasks in cgroup CG: "WALL CPU", usecs per op of
# wall-clock time (what perf bench prints) and of CPU time (task-clock).
pipe() { # CG
	sh -c "echo \$\$ >$1/cgroup.procs && exec perf stat -x, -o $work/clock -e task-clock \
		taskset -c 0 perf bench sched pipe -l $loops" 2>/dev/null |
		awk -v loops="$loops" -v clock="$work/clock" '/usecs\/op/ { w = $1 }
			END {
				while ((getline l <clock) > 0)
					if (l ~ /task-clock/) { split(l, f, ","); c = f[1] }
				printf "%s %.6f\n", w, c * 1000 / loops
			}'
}

# with_probes BIN STATS FILE [FILE-OUTSIDE]: runs with BIN's probes attached,
# in the tenant (and outside cgroup-root); usecs/op into the files; BIN's
# statistics into STATS.
with_probes() {
	local ready hold_pid in out b=$1 stats=$2
	shift 2
	coproc HOLD { "$b" ${mode:+"$mode"} "$pins" "$root" "$level" "$root/t"; }
	# shellcheck disable=SC2153 # coproc sets HOLD_PID
	hold_pid=$HOLD_PID
	exec {out}<&"${HOLD[0]}" {in}>&"${HOLD[1]}"
	read -r ready <&"$out"
	if [ "$ready" != ready ]; then
		echo "FAIL probe_bench: the probes ($b) did not attach"
		exit 1
	fi
	pipe "$root/t" >>"$1"
	[ $# -gt 1 ] && pipe "$outside" >>"$2"
	exec {in}>&-
	eval "exec ${HOLD[1]}>&-"
	cat <&"$out" >"$stats"
	exec {out}<&-
	wait "$hold_pid"
}
for r in $(seq "$rounds"); do
	pipe "$root/t" >>"$work/off"
	with_probes "$bin" "$work/stats" "$work/on" "$work/on_out"
	line="round $r (usecs/op, wall-clock and CPU time): without the probes"
	line="$line $(tail -1 "$work/off"); with them, in a tenant $(tail -1 "$work/on"),"
	line="$line in no tenant $(tail -1 "$work/on_out")"
	if [ -n "$base" ]; then
		with_probes "$base" "$work/stats" "$work/base_on" "$work/base_on_out"
		line="$line; base's, in a tenant $(tail -1 "$work/base_on"), in no tenant"
		line="$line $(tail -1 "$work/base_on_out")"
	fi
	echo "$line"
done
sysctl -qw kernel.bpf_stats_enabled=1
with_probes "$bin" "$work/stats" "$work/stats_run"
[ -n "$base" ] && with_probes "$base" "$work/base_stats" "$work/base_stats_run"
mode=--empty with_probes "$bin" "$work/empty_stats" "$work/empty_run"
python3 - "$work" "$loops" "$base" <<'PY'
import statistics, sys
work, loops, base = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def nums(name, col):
    return [float(x.split()[col]) for x in open(f"{work}/{name}")]
def slowdown(name, col):
    off, v = nums("off", col), nums(name, col)
    mo, m = statistics.median(off), statistics.median(v)
    paired = statistics.median(a / b for a, b in zip(v, off))
    return f"{m:.3f} (slowdown {100 * (m / mo - 1):+.2f}%, per round {100 * (paired - 1):+.2f}%)"
def slowdowns(on, out):
    for col, what in ((0, "wall-clock"), (1, "CPU time")):
        print(f"  {what}: tasks in a tenant {slowdown(on, col)}, "
              f"tasks in no tenant {slowdown(out, col)}")
def empty():  # the yardstick's ns per run
    c = n = 0
    for line in open(f"{work}/empty_stats"):
        f = line.split()
        if f[0] == "prog":
            c, n = c + int(f[3]), n + int(f[5])
    return n / c if c else float("nan")
yard = empty()
def stats(name):
    cnt, ns, events = {}, {}, 0
    for line in open(f"{work}/{name}"):
        f = line.split()
        if f[0] == "prog":
            cnt[f[1]] = cnt.get(f[1], 0) + int(f[3])
            ns[f[1]] = ns.get(f[1], 0) + int(f[5])
        elif f[0] == "tenant":
            events += int(f[4])
    tc, tn = sum(cnt.values()), sum(ns.values())
    for p in sorted(cnt):
        if cnt[p]:
            print(f"  {p}: {cnt[p]} runs, {ns[p] / cnt[p]:.1f} ns/run")
    per = tn / tc if tc else float("nan")
    print(f"  all programs (one more run, statistics on): {tc} runs, "
          f"{per:.1f} ns/event; {tc / loops:.2f} events/op, "
          f"{tn / loops:.1f} ns/op; tenant waits counted: {events}")
    print(f"  beyond the yardstick (programs that do nothing on sched_switch and "
          f"hrtimer_expire_entry, {yard:.1f} ns/run in one more run): {per - yard:.1f} ns/event")
print(f"taskset -c 0 perf bench sched pipe -l {loops}, {len(nums('off', 0))} rounds each, medians: "
      f"without the probes {statistics.median(nums('off', 0)):.3f} usecs/op wall-clock, "
      f"{statistics.median(nums('off', 1)):.3f} CPU time; with them:")
slowdowns("on", "on_out")
stats("stats")
if base:
    print(f"base ({base}):")
    slowdowns("base_on", "base_on_out")
    stats("base_stats")
PY
