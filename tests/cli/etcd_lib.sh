#!/bin/bash
# SPDX-License-Identifier: MIT
# What the tests against a real etcd share (sourced by test_etcd.sh and
# test_fleet_etcd.sh, after setting etcd_test to the test's name): their
# tallies, the commands they need (missing ones fail the test: CI installs
# them), a work directory on a tmpfs when there is one (etcd syncs its WAL),
# removed with etcd on any exit, and free ports of 127.0.0.1.
# shellcheck disable=SC2034 # pass, failed and start are the sourcing test's
pass=0 failed=0
: "${etcd_test:?set etcd_test before sourcing etcd_lib.sh}"
ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { failed=$((failed + 1)); echo "FAIL $1"; }

# etcd_need CMD...: each is installed, or the test fails here.
etcd_need() {
	local c
	for c in "$@"; do
		if ! command -v "$c" >/dev/null; then
			echo "FAIL $etcd_test: $c is missing (deploy/install-deps.sh installs it)"
			echo "0 passed, 1 failed"
			exit 1
		fi
	done
}

base=/dev/shm
[ -d $base ] && [ -w $base ] || base=${TMPDIR:-/tmp}
work=$(mktemp -d "$base/drfd-$etcd_test.XXXXXX")
etcd_pid=''
etcd_cleanup() {
	if [ -n "$etcd_pid" ]; then
		kill "$etcd_pid" 2>/dev/null
		wait "$etcd_pid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap etcd_cleanup EXIT
trap 'exit 1' INT TERM HUP
# shellcheck disable=SC2034
start=$(date +%s.%N)

# free_ports N: N ports of 127.0.0.1 free now (held together, so that they
# differ), below the kernel's ephemeral range: a port the kernel picks for a
# bind to 0 is in that range, and any outgoing connection (another test's,
# etcd's own) may take it before etcd listens on it (seen: "bind: address
# already in use" for the second member of a cluster).
free_ports() {
	python3 -c '
import random, socket, sys
lo, hi = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
# below the range, or above it where the range starts low (a tuned host)
pool = range(10000, lo) if lo > 10100 else range(hi + 1, 65536)
s = []
for _ in range(10000):
    if len(s) == int(sys.argv[1]):
        break
    x = socket.socket()
    try:
        x.bind(("127.0.0.1", random.choice(pool)))
        s.append(x)
    except OSError:
        x.close()
else:
    sys.exit("free_ports: no free port outside the ephemeral range")
print(*[x.getsockname()[1] for x in s])' "$1"
}
