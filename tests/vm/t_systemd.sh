#!/usr/bin/env bash
# vm-mode: systemd
# drfd as an operator installs it: the guest boots Debian's systemd as PID 1,
# installs the .deb that `make deb` built with dpkg -i, and drives the units
# with systemctl. Tenants must outlive restarts, upgrades and stops of drfd
# with their limits.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
# The test runs as a unit; drfd started by hand must not think systemd runs it.
unset INVOCATION_ID JOURNAL_STREAM NOTIFY_SOCKET

TROOT=/sys/fs/cgroup/system.slice/drfd-tenants.service
conf=/etc/drfd/tenants.d/test.conf
deb=''
for f in "$DRF_TOP"/.output/deb/drfd_*.deb; do [ -f "$f" ] && deb=$f; done

diagram <<'DIAGRAM'
systemd (PID 1, cgroup v2)             dpkg -i drfd_*.deb: /etc/drfd/drfd.conf as shipped
 |- system.slice/drfd.service          drfd alone (Type=notify, 4 capabilities)
 '- system.slice/drfd-tenants.service  Delegate=yes, no process of its own: drfd's cgroup-root
     |- web     weight 2, cpu 1, memory 256M     runs `sleep` via drfctl exec
     '- batch   weight 1, cpu 2, memory 128M     empty
expect: knobs = mapping(drfctl plan --json); the sleep keeps its cgroup and limits across
        systemctl restart/stop/start and a package upgrade; reload applies a change (exit 0); a
        bad reload is refused at priority 3 and systemctl reload fails, as it does for an
        io-device added (needs a restart), the reason in status; a second drfd exits 6; a tenant removed while drfd
        is stopped loses its empty cgroup; a busy one is kept as an orphan
DIAGRAM

# wait_for SECONDS COMMAND...: polls every 0.2 s until COMMAND succeeds.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

# "FILE=VALUE ..." of a tenant's knobs, to compare across restarts.
knobs_of() {
	local f
	for f in cpu.weight cpu.max memory.low memory.high memory.max; do
		printf '%s=%s ' "$f" "$(cat "$TROOT/$1/$f" 2>/dev/null)"
	done
}

status_json() { "$DRFCTL" status --json >"$work/status.json" 2>"$work/status.err"; }
jq_py() { # EXPR: evaluates a Python expression over the status JSON as `s`
	$PY -c "import json,sys; s=json.load(open('$work/status.json')); print($1)" 2>/dev/null ||
		echo "?"
}

if [ -z "$deb" ]; then
	result FAIL deb-present "no .output/deb/drfd_*.deb: make deb builds it (make check-vm does)"
	exit 0
fi
# The installed drfctl, not the build's.
DRFCTL=/usr/bin/drfctl

# 1. Install: the units are enabled and started, the shipped config idles.
dpkg -i "$deb" >"$work/dpkg.log" 2>&1
rc=$?
check dpkg-install "[ $rc -eq 0 ]" "dpkg -i $(basename "$deb") exit $rc"
[ $rc -eq 0 ] || { sed 's/^/    /' "$work/dpkg.log"; exit 0; }
en=$(systemctl is-enabled drfd.service drfd-tenants.service | tr '\n' ' ')
check units-enabled "[ '$en' = 'enabled enabled ' ]" "is-enabled: $en"
wait_for 30 systemctl -q is-active drfd.service
act=$(systemctl is-active drfd.service)
st=$(systemctl show -p StatusText --value drfd.service)
check unit-active-with-status "[ $act = active ] && [ -n '$st' ]" "drfd $act, STATUS='$st'"
status_json
rc=$?
src=$(jq_py 's["source"]') root=$(jq_py 's["cgroup_root"]') nt=$(jq_py 'len(s["tenants"])')
check shipped-config-idles "[ $rc -eq 0 ] && [ $src = daemon ] && [ $root = $TROOT ] && [ $nt = 0 ]" \
	"status exit $rc, source $src, root $root, $nt tenants"
pid=$(systemctl show -p MainPID --value drfd.service)
caps=$(awk '$1 == "CapEff:" {print $2}' "/proc/$pid/status")
# CAP_CHOWN (0), CAP_NET_ADMIN (12), CAP_PERFMON (38), CAP_BPF (39)
check capabilities "[ '$caps' = 000000c000001001 ]" "drfd's CapEff $caps (CAP_CHOWN, CAP_NET_ADMIN, CAP_PERFMON, CAP_BPF)"

# 2. Tenants through a reload: knobs = mapping of the plan.
cat >"$conf" <<'CONF'
[tenant web]
weight = 2
cpu = 1
memory = 256M
[tenant batch]
cpu = 2
memory = 128M
CONF
systemctl reload drfd.service
wait_for 20 test -f "$TROOT/batch/memory.max"
compare_plan() { # NAME: every knob of every tenant against the plan's mapping
	local bad=0 t f want have
	"$DRFCTL" plan --json >"$work/plan.json" 2>"$work/plan.err"
	$PY "$here/expect_knobs.py" share - web:memory=268435456 batch:memory=134217728 \
		<"$work/plan.json" >"$work/expect"
	while read -r t f want; do
		have=$(cat "$TROOT/$t/$f" 2>/dev/null)
		[ "$have" = "$want" ] || { bad=$((bad + 1)); echo "    $t/$f: '$have', want '$want'"; }
	done <"$work/expect"
	check "$1" "[ $bad -eq 0 ] && [ -s $work/expect ]" \
		"$(wc -l <"$work/expect") knobs under $TROOT, $bad differ"
}
# shellcheck disable=SC2317 # called through wait_for
settled() { "$DRFCTL" status >/dev/null 2>&1; }
wait_for 20 settled
compare_plan knobs-after-reload

# 3. A process in a tenant survives restarts, stops and an upgrade of drfd.
"$DRFCTL" exec web -- sleep 3000 &
sleep_pid=$!
wait_for 10 grep -qx "$sleep_pid" "$TROOT/web/cgroup.procs"
before=$(knobs_of web)
in_web() { [ "$(cat "/proc/$sleep_pid/cgroup" 2>/dev/null)" = "0::/system.slice/drfd-tenants.service/web" ]; }
check exec-in-tenant "in_web" "sleep $sleep_pid: $(cat "/proc/$sleep_pid/cgroup")"

old=$(systemctl show -p MainPID --value drfd.service)
systemctl restart drfd.service
rc=$?
wait_for 30 systemctl -q is-active drfd.service
new=$(systemctl show -p MainPID --value drfd.service)
check restart-keeps-tenant "[ $rc -eq 0 ] && [ $new != $old ] && in_web && [ '$(knobs_of web)' = '$before' ]" \
	"restart exit $rc, drfd $old -> $new; sleep in web: $(in_web && echo yes || echo no); knobs kept: $([ "$(knobs_of web)" = "$before" ] && echo yes || echo no)"

systemctl stop drfd.service
check stop-leaves-limits "! systemctl -q is-active drfd.service && in_web && [ '$(knobs_of web)' = '$before' ]" \
	"drfd $(systemctl is-active drfd.service); sleep in web, knobs: $(knobs_of web)"
systemctl start drfd.service
wait_for 30 systemctl -q is-active drfd.service

tenants_since=$(systemctl show -p ActiveEnterTimestampMonotonic --value drfd-tenants.service)
dpkg -i "$deb" >"$work/dpkg2.log" 2>&1
rc=$?
wait_for 30 systemctl -q is-active drfd.service
tenants_now=$(systemctl show -p ActiveEnterTimestampMonotonic --value drfd-tenants.service)
check upgrade-keeps-tenant "[ $rc -eq 0 ] && in_web && [ '$(knobs_of web)' = '$before' ] && [ $tenants_since = $tenants_now ]" \
	"dpkg -i again exit $rc; drfd-tenants.service not restarted: $([ "$tenants_since" = "$tenants_now" ] && echo yes || echo no); sleep in web with its knobs: $(in_web && [ "$(knobs_of web)" = "$before" ] && echo yes || echo no)"

# 4. A reload applies a change; systemctl reload says it is in force (ExecReload=drfctl reload).
sed -i 's/^cpu = 2$/cpu = 0.5/' "$conf"
systemctl reload drfd.service
rc=$?
status_json
check reload-exit-0 "[ $rc -eq 0 ] && [ \"\$(jq_py 's[\"last_reload\"][\"successful\"]')\" = True ]" \
	"systemctl reload of a good config: exit $rc; status last_reload $(jq_py 's["last_reload"]')"
sleep 1
wait_for 20 settled
compare_plan knobs-after-change
w_web=$(cat "$TROOT/web/cpu.weight") w_batch=$(cat "$TROOT/batch/cpu.weight")
check reload-changed-weight "[ $w_batch -lt 10000 ]" "cpu.weight web $w_web, batch $w_batch after batch's cpu 2 -> 0.5"

# 5. A bad config is refused at priority 3, the one in force stays; a zero demand warns at 4.
since=$(date '+%Y-%m-%d %H:%M:%S')
sleep 1
printf '[tenant bad]\nweight = 0\n' >/etc/drfd/tenants.d/zz-bad.conf
systemctl reload drfd.service
rc=$?
sleep 2
rm -f /etc/drfd/tenants.d/zz-bad.conf
n3=$(journalctl -u drfd.service --since "$since" -p err..err -o cat --no-pager | wc -l)
status_json
refused=$(jq_py 's["reloads_refused"]')
check bad-reload-error-priority "[ $n3 -ge 1 ] && [ $refused -ge 1 ] && [ -d $TROOT/web ]" \
	"$n3 journal entries at priority 3, reloads_refused $refused"
reason=$(jq_py 's["last_reload"]["reason"]')
check bad-reload-fails "[ $rc -ne 0 ] && [[ \"\$reason\" == *zz-bad.conf:* ]] && [ -d $TROOT/web ]" \
	"systemctl reload of a bad config: exit $rc; status reason '$reason'"

# 5b. A change that needs a restart (an io-device added) fails systemctl reload, and says
# why in status; the reason is in the journal too (drfctl's stderr); a good config again is in force.
cp /etc/drfd/drfd.conf "$work/drfd.conf.orig"
sed -i 's/^\[capacity\]$/[capacity]\nio-device = 8:0\nio-read-bps = 10M/' /etc/drfd/drfd.conf
since=$(date '+%Y-%m-%d %H:%M:%S')
sleep 1
systemctl reload drfd.service 2>"$work/reload.err"
rc=$?
status_json
reason=$(jq_py 's["last_reload"]["reason"]')
ok_now=$(jq_py 's["last_reload"]["successful"]')
journal=$(journalctl -u drfd.service --since "$since" -o cat --no-pager | grep -c "io-device added ('8:0').*needs a restart")
check restart-reload-fails "[ $rc -ne 0 ] && [ '$ok_now' = False ] && [[ \"\$reason\" == *\"io-device added ('8:0')\"*\"needs a restart\"* ]] && [ $journal -ge 1 ]" \
	"systemctl reload with an io-device added: exit $rc; status successful $ok_now, reason '$reason'; $journal journal lines name it"
"$DRFCTL" status >"$work/status.txt" 2>&1
check restart-reload-status-text "grep -q 'last reload.*REFUSED.*io-device added' $work/status.txt" \
	"drfctl status: $(grep 'REFUSED' "$work/status.txt")"
"$DRFCTL" plan >"$work/plan.txt" 2>&1
check plan-needs-restart "grep -q \"io-device added ('8:0'): needs a restart\" $work/plan.txt" \
	"drfctl plan: $(grep -A1 'against the running' "$work/plan.txt" | tr '\n' ' ')"
cp "$work/drfd.conf.orig" /etc/drfd/drfd.conf
systemctl reload drfd.service
rc=$?
status_json
check good-reload-after-refusal "[ $rc -eq 0 ] && [ \"\$(jq_py 's[\"last_reload\"][\"successful\"]')\" = True ] && systemctl -q is-active drfd.service" \
	"systemctl reload of the config as shipped again: exit $rc; drfd $(systemctl is-active drfd.service)"
printf '[tenant idle]\nmemory = 0\ncpu = 0.1\n' >/etc/drfd/tenants.d/zz-idle.conf
since=$(date '+%Y-%m-%d %H:%M:%S')
sleep 1
systemctl reload drfd.service
wait_for 10 test -d "$TROOT/idle"
n4=$(journalctl -u drfd.service --since "$since" -p warning..warning -o cat --no-pager | wc -l)
check zero-demand-warning-priority "[ $n4 -ge 1 ]" "$n4 journal entries at priority 4"
rm -f /etc/drfd/tenants.d/zz-idle.conf
systemctl reload drfd.service

# 6. A second drfd on the same root is refused.
systemd-run --wait --quiet --unit=drfd-second /usr/sbin/drfd --foreground >/dev/null 2>&1
rc=$?
check second-drfd-refused "[ $rc -eq 6 ] && systemctl -q is-active drfd.service" \
	"systemd-run drfd: exit $rc; the first drfd $(systemctl is-active drfd.service)"
systemctl reset-failed drfd-second.service 2>/dev/null

# 6b. The network under the unit's sandbox: capabilities, bpffs, the bpf system call.
ip link add drfv0 type veth peer name drfv1 && ip link set drfv0 up && ip link set drfv1 up
# net-rate = auto: the link speed through ethtool, under the unit's address families.
sed -i 's/^\[capacity\]$/[capacity]\nnet-device = drfv0\nnet-rate = auto/' /etc/drfd/drfd.conf
systemctl restart drfd.service
wait_for 30 systemctl -q is-active drfd.service
# shellcheck disable=SC2317 # called through wait_for
net_ok() { [ "$(jq_py 's["net"]["qdisc"] + " " + s["net"]["programs"]')" = "ok attached" ] || { status_json; false; }; }
status_json
wait_for 20 net_ok
q=$(tc qdisc show dev drfv0 | awk '{print $2, $3; exit}')
progs=$(bpftool cgroup show "$TROOT" 2>/dev/null | grep -c drf_net_)
pid=$(systemctl show -p MainPID --value drfd.service)
caps=$(awk '$1 == "CapEff:" {print $2}' "/proc/$pid/status")
check network-under-the-unit "[ '$q' = 'htb d7f:' ] && [ $progs -eq 2 ] && [ '$(jq_py 's["net"]["qdisc"]')' = ok ]" \
	"drfv0 root qdisc '$q', programs at the tenants' cgroup: $progs, status net: $(jq_py 's["net"]["qdisc"] + "/" + s["net"]["programs"]'), CapEff $caps"
# The usage probes load and attach with the unit's capabilities and sandbox.
nlinks=$(find /sys/fs/bpf/drfd-probes -mindepth 2 -name '*_link' 2>/dev/null | wc -l)
check probes-under-the-unit "[ '$(jq_py 's["usage"]["probes"]')' = True ] && [ $nlinks -eq 6 ]" \
	"usage.probes $(jq_py 's["usage"]["probes"]') ($(jq_py 's["usage"]["probes_why"]')), $nlinks links pinned"
sed -i '/^net-device = drfv0$/d; /^net-rate = auto$/d' /etc/drfd/drfd.conf
systemctl stop drfd.service
drfctl net-reset >/dev/null 2>&1
systemctl start drfd.service
wait_for 30 systemctl -q is-active drfd.service

# 7. Tenants removed while drfd is stopped: the empty one's cgroup goes, the busy one
# is kept as an orphan with its limits.
systemctl stop drfd.service
: >"$conf"
systemctl start drfd.service
wait_for 30 systemctl -q is-active drfd.service
wait_for 10 test ! -d "$TROOT/batch"
status_json
orph=$(jq_py '",".join(o["name"] for o in s["orphans"])')
check restart-removes-empty "[ ! -d $TROOT/batch ]" \
	"batch's cgroup $([ -d "$TROOT/batch" ] && echo kept || echo removed)"
check restart-keeps-busy-orphan "[ '$orph' = web ] && in_web && [ '$(knobs_of web)' = '$before' ]" \
	"orphans: '$orph'; sleep still in web with its knobs: $(in_web && echo yes || echo no)"

kill "$sleep_pid" 2>/dev/null
wait_for 15 test ! -d "$TROOT/web"
check orphan-removed-when-empty "[ ! -d $TROOT/web ]" "web's cgroup $([ -d "$TROOT/web" ] && echo kept || echo removed) once its process ended"
journalctl -u drfd.service -o short-monotonic --no-pager >"$R/drfd-journal.txt" 2>&1
exit 0
