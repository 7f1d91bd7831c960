#!/usr/bin/env bash
# drfd's host check on a real kernel: each problem has its own exit code and a
# message saying what to do, and nothing is written when it fails.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup

diagram <<'DIAGRAM'
/sys/fs/cgroup
 |- noctl/             subtree_control empty   cgroup-root noctl/drf   -> exit 3, names the echo to run
 |- drf.slice/         io-device /dev/nope                             -> exit 4
 '- busy.slice/        holds a process, is cgroup-root                 -> exit 5
expect: each exit code and message; no cgroup created under a failed root
DIAGRAM

conf=$work/drfd.conf
write_conf() { # ROOT EXTRA-CAPACITY
	cat >"$conf" <<CONF
[agent]
cgroup-root = $1
[capacity]
cpu = 2
memory = 1G
$2
[tenant A]
CONF
}

mkdir -p $CG/noctl
write_conf $CG/noctl/drf ""
"$DRFD" -c "$conf" --once 2>"$work/e3"
rc=$?
check exit-3-controllers-not-passed \
	"[ $rc -eq 3 ] && grep -q \"echo '+cpu +memory' > $CG/noctl/cgroup.subtree_control\" $work/e3 && [ ! -e $CG/noctl/drf ]" \
	"exit $rc: $(cut -c1-160 "$work/e3")"

write_conf $CG/drf.slice "io-device = /dev/nope
io-read-bps = 10M"
"$DRFD" -c "$conf" --once 2>"$work/e4"
rc=$?
check exit-4-io-device-missing "[ $rc -eq 4 ] && grep -q \"io-device '/dev/nope'\" $work/e4" \
	"exit $rc: $(cut -c1-160 "$work/e4")"

mkdir -p $CG/busy.slice
sleep 600 &
echo $! >$CG/busy.slice/cgroup.procs
write_conf $CG/busy.slice ""
"$DRFD" -c "$conf" --once 2>"$work/e5"
rc=$?
check exit-5-root-holds-processes "[ $rc -eq 5 ] && grep -q 'holds 1 processes' $work/e5 && [ ! -e $CG/busy.slice/A ]" \
	"exit $rc: $(cut -c1-160 "$work/e5")"
exit 0
