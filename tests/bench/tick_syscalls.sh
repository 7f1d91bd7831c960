#!/usr/bin/env bash
# System calls per tenant of one steady tick of drfd (usage sampling included),
# counted with strace -c over ROUNDS ticks, for each MODE of bench_tick
# (declared; observed, with an io device and a metrics-file); the setup's own
# calls, counted in a run that does no tick, are subtracted.
#   tests/bench/tick_syscalls.sh BENCH_TICK [N] [ROUNDS]
set -euo pipefail
bin=$1 n=${2:-1000} rounds=${3:-20}
command -v strace >/dev/null || { echo "tick_syscalls: SKIP: strace is not installed"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # MODE KIND -> total system calls of the run
	strace -f -c -o "$tmp/$1-$2" "$bin" "$n" "$1" "$2" "$rounds" >/dev/null
	awk '$NF == "total" {print $4}' "$tmp/$1-$2"
}
for mode in declared observed; do
	none=$(count "$mode" none)
	tick=$(count "$mode" tick)
	awk -v n="$n" -v r="$rounds" -v z="$none" -v t="$tick" -v m="$mode" 'BEGIN {
		printf "tenants %d (%s), %d ticks: system calls per tenant of a steady tick %.2f (target <= 8)\n", n, m, r, (t - z) / r / n
	}'
	# What they are, per tenant and tick, most first (the setup's subtracted).
	awk -v n="$n" -v r="$rounds" 'NF >= 5 && $NF != "total" && $NF != "syscall" {
			c[$NF] += (FILENAME ~ /-tick$/ ? $4 : -$4)
		}
		END {
			for (k in c) if (c[k] / r / n >= 0.005) printf "%.2f %s\n", c[k] / r / n, k
		}' "$tmp/$mode-tick" "$tmp/$mode-none" | sort -rn | awk '{printf "    %s %s", $2, $1} END {print ""}'
done
