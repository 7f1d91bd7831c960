#!/usr/bin/env bash
# Memory on a real kernel. A tenant allocating past its memory.max is OOM-killed
# inside its own cgroup while another tenant keeps running with its memory
# untouched. Then, with drfd running, B's limit is reloaded below B's usage:
# drfd lowers memory.high first and writes memory.max only once usage is under.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup

diagram <<'DIAGRAM'
drf.slice (cpu 2, memory 1G, share mode)
 |- A  demand memory 64M  -> memory.max 64M;  allocates 200M  -> OOM-killed in A
 '- B  demand memory 256M -> memory.max 256M; holds 100M      -> keeps running, keeps 100M
then B's demand is reloaded to 64M while B holds 100M:
 expect memory.high = 64M at once, memory.max unchanged until B frees its memory,
 then memory.max = 64M and memory.high back to max
DIAGRAM

conf=$work/drfd.conf
write_conf() { # B's memory demand
	cat >"$conf" <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
interval = 200ms
[capacity]
cpu = 2
memory = 1G
[tenant A]
cpu = 1
memory = 64M
[tenant B]
cpu = 1
memory = $1
CONF
}
write_conf 256M
"$DRFD" -c "$conf" --foreground 2>"$work/drfd.log" &
drfd_pid=$!
for _ in $(seq 50); do [ -d "$CG/drf.slice/B" ] && break; sleep 0.2; done

# B holds 100M of touched anonymous memory until told to stop.
rm -f "$work/b_ready" "$work/b_stop"
"$DRFCTL" exec -c "$conf" B -- $PY -c "
import os, time
s = b'1' * (100 << 20)
open('$work/b_ready', 'w').close()
while not os.path.exists('$work/b_stop'):
    time.sleep(0.1)
" &
b_pid=$!
for _ in $(seq 100); do [ -e "$work/b_ready" ] && break; sleep 0.2; done
b_before=$(cat "$CG/drf.slice/B/memory.current")

"$DRFCTL" exec -c "$conf" A -- $PY -c "s = b'1' * (200 << 20); print('A survived')" \
	>"$work/a.out" 2>&1
a_rc=$?
sleep 1
a_ooms=$(awk '$1 == "oom_kill" {print $2}' "$CG/drf.slice/A/memory.events")
b_ooms=$(awk '$1 == "oom_kill" {print $2}' "$CG/drf.slice/B/memory.events")
b_after=$(cat "$CG/drf.slice/B/memory.current")
check oom-in-own-cgroup "[ $a_rc -eq 137 ] && [ ${a_ooms:-0} -ge 1 ]" \
	"A exit $a_rc (137 = SIGKILL), A oom_kill $a_ooms, A memory.max $(cat $CG/drf.slice/A/memory.max)"
check other-tenant-untouched "kill -0 $b_pid && [ ${b_ooms:-0} -eq 0 ] && [ $b_after -ge $((100 << 20)) ]" \
	"B alive, B oom_kill ${b_ooms:-0}, B memory.current $b_before before, $b_after after"

# Tighten B below its usage.
write_conf 64M
kill -HUP $drfd_pid
for _ in $(seq 50); do
	[ "$(cat $CG/drf.slice/B/memory.high)" = $((64 << 20)) ] && break
	sleep 0.2
done
sleep 1
high=$(cat "$CG/drf.slice/B/memory.high") max=$(cat "$CG/drf.slice/B/memory.max")
check tighten-high-first "[ $high = $((64 << 20)) ] && [ $max = $((256 << 20)) ] && kill -0 $b_pid" \
	"B using $(cat $CG/drf.slice/B/memory.current): memory.high $high, memory.max $max, B alive"
touch "$work/b_stop"
wait $b_pid
for _ in $(seq 50); do
	[ "$(cat $CG/drf.slice/B/memory.max)" = $((64 << 20)) ] && break
	sleep 0.2
done
sleep 0.5
high=$(cat "$CG/drf.slice/B/memory.high") max=$(cat "$CG/drf.slice/B/memory.max")
check tighten-max-after-usage-drops "[ $max = $((64 << 20)) ] && [ $high = max ]" \
	"after B freed its memory: memory.max $max, memory.high $high"
kill -TERM $drfd_pid
wait $drfd_pid
sed 's/^/  drfd: /' "$work/drfd.log"
exit 0
