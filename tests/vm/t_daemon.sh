#!/usr/bin/env bash
# The daemon as a service on a real kernel, and what a hostile user tried:
# one drfd per root; state across restarts (a tenant removed while drfd was
# down is removed when empty, else kept as an orphan); status from the daemon;
# SIGPIPE on stderr; a FIFO as config; a bind mount inside the root; a failed
# subtree_control write that must not stop the pass; a foreign riops in io.max;
# zero demands; a cpu cap past the kernel's range; a recreated cgroup.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup
modprobe virtio_blk
sleep 1
dev=$(cat /sys/block/vda/dev)

diagram <<'DIAGRAM'
drf.slice (share mode, cpu 2, memory 1G, vda, interval 200ms, verify-period 1s)
 |- A   cpu 1, memory 0 (needs none: no guarantee, no cap), io-write 0
 |- B   weight 2, with a process in it (sleep)
 '- C   removed while drfd is down: removed if empty
second drfd on the same root -> exit 6 naming the first's pid
restart without B -> B kept (a process) and listed as an orphan, gone once empty
DIAGRAM

conf=$work/drfd.conf
write_conf() { # TENANTS... from A B C
	{
		cat <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
interval = 200ms
verify-period = 1s
[capacity]
cpu = 2
memory = 1G
io-device = $dev
io-write-bps = 40M
CONF
		for t in "$@"; do
			case $t in
			A) printf '[tenant A]\ncpu = 1\nmemory = 0\nio-write-bps = 0\n' ;;
			B) printf '[tenant B]\nweight = 2\n' ;;
			C) printf '[tenant C]\ncpu = 0.5\n' ;;
			esac
		done
	} >"$conf"
}
status() { # PYTHON-EXPRESSION on s, the running drfd's status
	"$DRFCTL" status -c "$conf" --json 2>/dev/null | $PY -c "import json, sys
s = json.load(sys.stdin)
print($1)"
}
wait_until() { # SHELL-CONDITION, up to 10 s
	for _ in $(seq 100); do eval "$1" && return 0; sleep 0.1; done
	return 1
}

write_conf A B C
pid=$("$DRFD" -c "$conf" 2>"$work/drfd1.log")
rc=$?
check starts "[ $rc -eq 0 ] && kill -0 ${pid:-0}" "drfd exit $rc, pid ${pid:-none}"

# Zero demands: no zero caps. A can use memory and write.
check zero-demand-no-zero-caps \
	"[ \"\$(cat $CG/drf.slice/A/memory.max)\" = max ] && ! grep -q 'wbps=' $CG/drf.slice/A/io.max" \
	"A memory.max $(cat $CG/drf.slice/A/memory.max), io.max '$(cat $CG/drf.slice/A/io.max)'"
# shellcheck disable=SC2016 # the inner shell expands it
"$DRFCTL" exec -c "$conf" A -- sh -c 'x=$(head -c 8000000 /dev/zero | tr "\0" a); echo ${#x}' \
	>"$work/zero.out" 2>&1
rc=$?
check zero-demand-tenant-runs "[ $rc -eq 0 ] && [ \"\$(cat $work/zero.out)\" = 8000000 ]" \
	"a process in A held 8 MB: exit $rc, printed $(cat "$work/zero.out")"

# One drfd per root.
"$DRFD" -c "$conf" --foreground 2>"$work/second.log" &
p2=$!
wait $p2
rc=$?
check second-instance-refused "[ $rc -eq 6 ] && grep -q \"pid $pid\" $work/second.log && kill -0 $pid" \
	"second drfd exit $rc; the first (pid $pid) still runs"

# Status from the daemon.
src=$(status "s['source'], s['pid'], len(s['tenants'])")
check status-from-daemon "[ \"$src\" = \"daemon $pid 3\" ]" "drfctl status --json: $src"

# A foreign riops in A's io.max is cleared within verify-period.
echo "$dev riops=100" >$CG/drf.slice/A/io.max
wait_until "! grep -q 'riops=100' $CG/drf.slice/A/io.max"
check foreign-riops-cleared "! grep -q 'riops=100' $CG/drf.slice/A/io.max" \
	"A io.max now '$(cat $CG/drf.slice/A/io.max)'"

# C's cgroup removed by someone else: recreated, with its knobs.
w=$(cat $CG/drf.slice/C/cpu.weight)
rmdir $CG/drf.slice/C
wait_until "[ -f $CG/drf.slice/C/cpu.weight ] && [ \"\$(cat $CG/drf.slice/C/cpu.weight)\" = $w ]"
check recreated "[ \"\$(cat $CG/drf.slice/C/cpu.weight 2>/dev/null)\" = $w ]" \
	"C recreated with cpu.weight $(cat $CG/drf.slice/C/cpu.weight 2>/dev/null)"

# State across restarts: stop, drop B (busy) and C (empty) from the config, start.
"$DRFCTL" exec -c "$conf" B -- sleep 600 &
wait_until "[ -s $CG/drf.slice/B/cgroup.procs ]"
bmax=$(cat $CG/drf.slice/B/cpu.weight)
kill -TERM "$pid"
wait_until "! kill -0 $pid 2>/dev/null"
write_conf A
pid=$("$DRFD" -c "$conf" 2>"$work/drfd2.log")
orph=$(status "[o['name'] for o in s['orphans']]")
check restart-removes-departed-empty "[ ! -d $CG/drf.slice/C ]" "C's cgroup after the restart: $(ls -d $CG/drf.slice/C 2>&1)"
check restart-keeps-departed-busy \
	"[ -d $CG/drf.slice/B ] && [ \"\$(cat $CG/drf.slice/B/cpu.weight)\" = $bmax ] && [ \"$orph\" = \"['B']\" ]" \
	"B kept with cpu.weight $(cat $CG/drf.slice/B/cpu.weight); orphans in status: $orph"
pkill -f 'sleep 600'
wait_until "[ ! -d $CG/drf.slice/B ]"
orph=$(status "len(s['orphans'])")
check orphan-removed-once-empty "[ ! -d $CG/drf.slice/B ] && [ \"$orph\" = 0 ]" \
	"B's cgroup gone after its process ended; orphans now $orph"

# A failed subtree_control write does not stop the pass: A enables memory below
# itself, so the root cannot stop passing memory when the config drops it.
mkdir $CG/drf.slice/A/inner
echo +memory >$CG/drf.slice/A/cgroup.subtree_control
sed -i '/^memory = 1G$/d; /^memory = 0$/d' "$conf"
echo 4321 >$CG/drf.slice/A/cpu.weight
kill -HUP "$pid"
wait_until "[ \"\$(cat $CG/drf.slice/A/cpu.weight)\" != 4321 ]"
"$DRFCTL" status -c "$conf" >/dev/null 2>&1
src=$?
retrying=$(status "s['errors']['retrying'], s['errors']['total'] > 0")
check subtree-failure-pass-goes-on \
	"[ \"\$(cat $CG/drf.slice/A/cpu.weight)\" != 4321 ] && grep -q memory $CG/drf.slice/cgroup.subtree_control && [ $src -eq 3 ]" \
	"A's foreign cpu.weight repaired to $(cat $CG/drf.slice/A/cpu.weight) while the root still passes '$(cat $CG/drf.slice/cgroup.subtree_control)'; status exit $src; (retrying, errors seen) $retrying"
rmdir $CG/drf.slice/A/inner
echo -memory >$CG/drf.slice/A/cgroup.subtree_control
wait_until "! grep -q memory $CG/drf.slice/cgroup.subtree_control"
check subtree-converges-after "! grep -q memory $CG/drf.slice/cgroup.subtree_control" \
	"root now passes '$(cat $CG/drf.slice/cgroup.subtree_control)'"

# SIGPIPE: drfd's stderr is a pipe whose reader is gone; a reload makes it log.
kill -TERM "$pid"
wait_until "! kill -0 $pid 2>/dev/null"
write_conf A
mkfifo "$work/logpipe"
(exec 3<"$work/logpipe"; exec 3<&-) &
"$DRFD" -c "$conf" --foreground 2>"$work/logpipe" &
p3=$!
# SIGHUP only once drfd blocks it (it is then queued for its loop): before, it would kill.
# shellcheck disable=SC2016 # expanded by wait_until's eval, each time
wait_until 'b=$(sed -n "s/^SigBlk:[[:space:]]*//p" /proc/'"$p3"'/status 2>/dev/null); [ -n "$b" ] && (( 0x$b & 1 ))'
kill -HUP $p3
sleep 1
kill -0 $p3
alive=$?
kill -TERM $p3 2>/dev/null
wait $p3
rc=$?
check sigpipe-does-not-kill "[ $alive -eq 0 ] && [ $rc -eq 0 ]" \
	"drfd with a closed log pipe: alive after logging $([ $alive -eq 0 ] && echo yes || echo no), exit $rc after SIGTERM (141 would be SIGPIPE)"
"$DRFD" -c "$conf" | true
rc=${PIPESTATUS[0]}
pid=$(status "s['pid']" 2>/dev/null)
check daemonize-closed-stdout "[ $rc -eq 0 ] && [ -n \"$pid\" ] && kill -0 $pid" \
	"drfd | true: exit $rc, daemon pid ${pid:-none} running"
kill -TERM "$pid" 2>/dev/null
wait_until "! kill -0 $pid 2>/dev/null"

# A FIFO as the config, and as a tenants file: an error at once, not a hang.
mkfifo "$work/fifo.conf"
timeout -k 2 10 "$DRFD" -c "$work/fifo.conf" --once 2>"$work/fifo.log"
rc1=$?
mkdir -p "$work/tenants.d"
mkfifo "$work/tenants.d/x.conf"
timeout -k 2 10 "$DRFD" -c "$conf" --once 2>"$work/fifo2.log"
rc2=$?
check fifo-config-refused "[ $rc1 -eq 2 ] && [ $rc2 -eq 2 ]" \
	"FIFO as config: exit $rc1; FIFO in tenants.d: exit $rc2 (124 would be a hang)"
rm -f "$work/tenants.d/x.conf"

# A bind mount over a tenant's cgroup is not followed: nothing is written there.
mkdir -p /var/tmp/outside
touch /var/tmp/outside/cpu.weight
mkdir -p $CG/drf.slice/A
mount --bind /var/tmp/outside $CG/drf.slice/A
"$DRFD" -c "$conf" --once 2>"$work/bind.log"
rc=$?
listing=$(find /var/tmp/outside -mindepth 1 -printf '%f ')
check bind-mount-not-followed "[ $rc -ne 0 ] && [ \"$listing\" = 'cpu.weight ' ] && [ ! -s /var/tmp/outside/cpu.weight ]" \
	"drfd --once exit $rc (errors: the cgroup is not cgroupfs); the bind-mounted directory holds: $listing"
umount $CG/drf.slice/A

# A root that is not cgroupfs at all.
mkdir -p $CG/drf.slice/tmpfsroot
mount -t tmpfs none $CG/drf.slice/tmpfsroot
sed 's|^cgroup-root = .*|cgroup-root = /sys/fs/cgroup/drf.slice/tmpfsroot|' "$conf" >"$work/tmpfs.conf"
"$DRFD" -c "$work/tmpfs.conf" --once 2>"$work/tmpfs.log"
rc=$?
check root-not-cgroupfs "[ $rc -eq 5 ] && [ -z \"\$(find $CG/drf.slice/tmpfsroot -mindepth 1)\" ]" \
	"drfd on a tmpfs root: exit $rc; it holds: $(find $CG/drf.slice/tmpfsroot -mindepth 1 -printf '%f ')"
umount $CG/drf.slice/tmpfsroot

# A cpu cap past the kernel's range is no cap, not an EINVAL every pass.
cat >"$work/huge.conf" <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/huge.slice
mode = limit
[capacity]
cpu = 400000000
[tenant H]
CONF
"$DRFD" -c "$work/huge.conf" --once 2>"$work/huge.log"
rc=$?
check cpu-cap-past-kernel-range "[ $rc -eq 0 ] && [ \"\$(cat $CG/huge.slice/H/cpu.max)\" = 'max 100000' ]" \
	"drfd --once exit $rc; H cpu.max '$(cat $CG/huge.slice/H/cpu.max)'"

for f in "$work"/*.log; do sed "s/^/  $(basename "$f"): /" "$f"; done
exit 0
