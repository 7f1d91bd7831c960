#!/usr/bin/env bash
# The usage probes' cost on this host's kernel, in one run: a context-switch
# heavy load (`perf bench sched pipe`: two tasks passing a token through a
# pipe) inside a tenant cgroup, with the probes attached and without them,
# alternated ROUNDS times so that both see the same machine:
#   - the slowdown: median usecs/op with the probes over median without
#     (run-time statistics off: they cost two clock reads per program run);
#   - the cost per event, from the kernel's BPF run-time statistics
#     (kernel.bpf_stats_enabled), in one more run with the probes: run_time_ns
#     / run_cnt of each program.
# Both tasks are pinned to CPU 0, so that every op is two context switches on
# one CPU. In a tenant, the load is the worst case: every event is attributed
# (a task entry, a counter update); in a cgroup outside cgroup-root it shows
# what the probes cost the rest of the host (they stop at the root check).
#   BENCH_PROBE=... tests/bench/probe_bench.sh [ROUNDS [LOOPS]]
set -u
bin=${BENCH_PROBE:?set BENCH_PROBE to the bench_probe binary}
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

# usecs per op of one perf bench run, its tasks in cgroup CG.
pipe() { # CG
	sh -c "echo \$\$ >$1/cgroup.procs && exec taskset -c 0 perf bench sched pipe -l $loops" 2>/dev/null |
		awk '/usecs\/op/ { print $1 }'
}

# with_probes FILE [FILE-OUTSIDE]: runs with the probes attached, in the tenant
# (and outside cgroup-root); usecs/op into the files; the statistics kept.
with_probes() {
	local ready hold_pid in out
	coproc HOLD { "$bin" "$pins" "$root" "$level" "$root/t"; }
	# shellcheck disable=SC2153 # coproc sets HOLD_PID
	hold_pid=$HOLD_PID
	exec {out}<&"${HOLD[0]}" {in}>&"${HOLD[1]}"
	read -r ready <&"$out"
	if [ "$ready" != ready ]; then
		echo "FAIL probe_bench: the probes did not attach"
		exit 1
	fi
	pipe "$root/t" >>"$1"
	[ $# -gt 1 ] && pipe "$outside" >>"$2"
	exec {in}>&-
	eval "exec ${HOLD[1]}>&-"
	cat <&"$out" >"$work/stats"
	exec {out}<&-
	wait "$hold_pid"
}
for r in $(seq "$rounds"); do
	pipe "$root/t" >>"$work/off"
	with_probes "$work/on" "$work/on_out"
	echo "round $r: without the probes $(tail -1 "$work/off") usecs/op; with them, in a tenant" \
		"$(tail -1 "$work/on"), in no tenant $(tail -1 "$work/on_out")"
done
sysctl -qw kernel.bpf_stats_enabled=1
with_probes "$work/stats_run"
python3 - "$work" "$loops" <<'PY'
import statistics, sys
work, loops = sys.argv[1], int(sys.argv[2])
off = [float(x) for x in open(f"{work}/off")]
on = [float(x) for x in open(f"{work}/on")]
cnt, ns, events = {}, {}, 0
for line in open(f"{work}/stats"):
    f = line.split()
    if f[0] == "prog":
        cnt[f[1]] = cnt.get(f[1], 0) + int(f[3])
        ns[f[1]] = ns.get(f[1], 0) + int(f[5])
    elif f[0] == "tenant":
        events += int(f[4])
on_out = [float(x) for x in open(f"{work}/on_out")]
mo, mn, mx = statistics.median(off), statistics.median(on), statistics.median(on_out)
print(f"taskset -c 0 perf bench sched pipe -l {loops}, {len(off)} rounds each, medians: "
      f"without the probes {mo:.3f} usecs/op; with them, tasks in a tenant {mn:.3f} "
      f"(slowdown {100 * (mn / mo - 1):+.2f}%), tasks in no tenant {mx:.3f} "
      f"(slowdown {100 * (mx / mo - 1):+.2f}%)")
tc, tn = sum(cnt.values()), sum(ns.values())
for p in sorted(cnt):
    if cnt[p]:
        print(f"  {p}: {cnt[p]} runs, {ns[p] / cnt[p]:.1f} ns/run")
print(f"  all programs (one more run, statistics on): {tc} runs, "
      f"{tn / tc if tc else float('nan'):.1f} ns/event; {tc / loops:.2f} events/op; "
      f"tenant waits counted: {events}")
PY
