#!/usr/bin/env bash
# System calls of one steady tick against one bare read of every knob, per
# tenant, counted with strace -c over ROUNDS rounds of each (the setup's own
# calls, counted in a run that does neither, are subtracted).
#   tests/bench/tick_syscalls.sh BENCH_TICK [N] [ROUNDS]
set -euo pipefail
bin=$1 n=${2:-1000} rounds=${3:-20}
command -v strace >/dev/null || { echo "tick_syscalls: SKIP: strace is not installed"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # KIND -> total system calls of the run
	strace -f -c -o "$tmp/$1" "$bin" "$n" "$1" "$rounds" >/dev/null
	awk '$NF == "total" {print $4}' "$tmp/$1"
}
none=$(count none)
tick=$(count tick)
bare=$(count bare)
awk -v n="$n" -v r="$rounds" -v z="$none" -v t="$tick" -v b="$bare" 'BEGIN {
	ts = (t - z) / r / n; bs = (b - z) / r / n
	printf "tenants %d, %d rounds: system calls per tenant: steady tick %.2f, bare read of every knob %.2f, tick/bare %.3f (target <= 0.3)\n", n, r, ts, bs, ts / bs
}'
