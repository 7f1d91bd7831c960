#!/usr/bin/env bash
# Memory protection from the root down (cgroupfs backend; tests/vm/t_systemd.sh
# measures the same under systemd's slices). The kernel bounds a cgroup's
# effective memory.low by its parent's, so drfd sets its root's memory.low to
# the tenants' sum: under reclaim from the host's root, each tenant keeps its
# allocation and the cache nothing protects goes first. With the root's
# memory.low at 0, the same measure does not hold (the control).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup

diagram <<'DIAGRAM'
/sys/fs/cgroup
 |- drf.slice            drfd's root: memory.low = A + B + C
 |   |- A  weight 1, memory demand 200M  -> memory.low 24M; reads 30M of page cache
 |   |- B  weight 2, memory demand 200M  -> memory.low 48M; reads 60M
 |   '- C  weight 1, memory demand 200M  -> memory.low 24M; reads 30M
 '- drfsib               no protection;  reads 64M
then 72M reclaimed from the root cgroup (memory.reclaim):
 expect A, B, C each >= 90% of its memory.low; drfsib down to half or less
 control (drfd stopped, drf.slice's memory.low set to 0 by hand): not so
then drfd's root in /sys/fs/cgroup/drfouter/drf, drfouter's memory.low 0:
 expect drfctl status: each tenant's protection does not hold, capped by drfouter (exit not 0);
 drfouter's memory.low max: holds
DIAGRAM

conf=$work/drfd.conf
sock=$work/drfd.sock
cat >"$conf" <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
interval = 200ms
status-socket = $sock
[capacity]
cpu = 2
memory = 96M
[tenant A]
cpu = 0.1
memory = 200M
[tenant B]
weight = 2
cpu = 0.1
memory = 200M
[tenant C]
cpu = 0.1
memory = 200M
CONF
run_drfd drfd-starts "$conf" "$sock"
poll_for 20 test "$(cat $CG/drf.slice/memory.low 2>/dev/null)" != 0
stop_drfd() { kill -TERM "$drfd_pid" 2>/dev/null && wait "$drfd_pid"; }
protect_measure tenants-keep-allocation "$CG/drf.slice" "$DRFCTL exec -c $conf" stop_drfd A B C
stop_drfd

# An ancestor drfd does not own caps the protection: status says so per tenant.
mkdir -p "$CG/drfouter"
echo "+cpu +memory" >"$CG/drfouter/cgroup.subtree_control"
sed -i 's|^cgroup-root = .*|cgroup-root = /sys/fs/cgroup/drfouter/drf|' "$conf"
run_drfd drfd-nested-starts "$conf" "$sock"
poll_for 20 test "$(cat $CG/drfouter/drf/memory.low 2>/dev/null)" != 0
capped() { # prints each tenant's capped_by, "-" for none
	"$DRFCTL" status -c "$conf" --json >"$work/st.json" 2>/dev/null
	$PY -c "import json; s = json.load(open('$work/st.json'))
print(' '.join(t.get('memory_protection', {}).get('capped_by', '-') for t in s['tenants']))"
}
"$DRFCTL" status -c "$conf" >"$work/st.txt" 2>&1
st_rc=$?
c1=$(capped)
check status-names-capping-ancestor "[ '$c1' = '$CG/drfouter $CG/drfouter $CG/drfouter' ] && [ $st_rc -ne 0 ] && grep -q 'memory protection DOES NOT HOLD: ancestor $CG/drfouter has memory.low' $work/st.txt" \
	"drfouter memory.low 0, drf's $(cat $CG/drfouter/drf/memory.low): capped_by per tenant '$c1', drfctl status exit $st_rc"
echo max >"$CG/drfouter/memory.low"
c2=$(capped)
check status-protection-holds "[ '$c2' = '- - -' ]" \
	"drfouter memory.low max: capped_by per tenant '$c2'"
stop_drfd
sed 's/^/  drfd: /' "$work/drfd.log"
exit 0
