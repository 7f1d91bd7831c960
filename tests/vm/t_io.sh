#!/usr/bin/env bash
# Disk IO on a real kernel: a dd with direct IO inside a tenant on a virtio disk
# is held to the tenant's io.max (its allocation, limit mode) within 10%, for
# writes and for reads. The disk's unthrottled speed is measured first, so that
# a slow disk cannot pass for a throttled one.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup
modprobe virtio_blk
for _ in $(seq 50); do [ -b /dev/vda ] && break; sleep 0.1; done
MB=24

diagram <<'DIAGRAM'
drf.slice (limit mode; vda: read 8M/s, write 8M/s; cpu 2)
 |- A  demand read 4M/s, write 4M/s -> io.max rbps=wbps=4194304; dd, direct IO
 '- B  demand read 2M/s, write 2M/s
expect: A's dd runs at 4 MiB/s within 10% (A's io.stat bytes over 8 s), writing
        and reading; the same dd outside any limit runs much faster
DIAGRAM

conf=$work/drfd.conf
cat >"$conf" <<'CONF'
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
mode = limit
[capacity]
cpu = 2
io-device = /dev/vda
io-read-bps = 8M
io-write-bps = 8M
[tenant A]
cpu = 1
io-read-bps = 4M
io-write-bps = 4M
[tenant B]
cpu = 1
io-read-bps = 2M
io-write-bps = 2M
CONF

# MiB/s of a dd command, timed here (dd's own figure counts in different units).
rate() { # DD-ARGS...
	local t0 t1
	t0=$(date +%s.%N)
	"$@" status=none || return 1
	t1=$(date +%s.%N)
	$PY -c "print($MB / ($t1 - $t0))"
}
# io.stat bytes (rbytes or wbytes) of tenant A on vda.
io_bytes() { # rbytes|wbytes
	awk -v dev="$dev" -v key="$1" '$1 == dev {for (i = 2; i <= NF; i++) {split($i, kv, "="); if (kv[1] == key) print kv[2]}}' \
		"$CG/drf.slice/A/io.stat"
}
# A dd that runs on inside A; its rate is A's io.stat bytes over WINDOW seconds
# once it is under way, so that starting processes under TCG does not count.
held_rate() { # rbytes|wbytes DD-ARGS...
	local key=$1 b0 b1 t0 t1 pid
	shift
	"$DRFCTL" exec -c "$conf" A -- "$@" status=none &
	pid=$!
	sleep 2
	b0=$(io_bytes "$key") t0=$(date +%s.%N)
	sleep $WINDOW
	b1=$(io_bytes "$key") t1=$(date +%s.%N)
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	$PY -c "print(($b1 - $b0) / 1048576 / ($t1 - $t0))"
}
dev=$(cat /sys/block/vda/dev)
WINDOW=8

raw_w=$(rate dd if=/dev/zero of=/dev/vda bs=1M count=$MB oflag=direct)
raw_r=$(rate dd if=/dev/vda of=/dev/null bs=1M count=$MB iflag=direct)
if ! "$DRFD" -c "$conf" --once 2>"$work/drfd.log"; then
	result FAIL io-limit "drfd --once failed: $(tail -2 "$work/drfd.log")"
	exit 0
fi
w=$(held_rate wbytes dd if=/dev/zero of=/dev/vda bs=256K count=100000 oflag=direct)
r=$(held_rate rbytes dd if=/dev/vda of=/dev/null bs=256K count=100000 iflag=direct)
lw=$(within "$w" 4 0.10)
okw=$?
lr=$(within "$r" 4 0.10)
okr=$?
io_max=$(cat $CG/drf.slice/A/io.max)
check io-write-held "[ $okw -eq 0 ]" "A wrote at $lw MiB/s (io.max '$io_max'; unthrottled $(printf %.1f "$raw_w") MiB/s)"
check io-read-held "[ $okr -eq 0 ]" "A read at $lr MiB/s (unthrottled $(printf %.1f "$raw_r") MiB/s)"
check io-disk-faster-than-limit "$PY -c 'import sys; sys.exit(0 if min($raw_w, $raw_r) > 8 else 1)'" \
	"unthrottled write $(printf %.1f "$raw_w"), read $(printf %.1f "$raw_r") MiB/s: over twice the limit"
exit 0
