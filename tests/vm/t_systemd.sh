#!/usr/bin/env bash
# vm-mode: systemd
# drfd as an operator installs it: the guest boots Debian's systemd as PID 1,
# installs the .deb that `make deb` built with dpkg -i, and drives the units
# with systemctl. The tenants are systemd slices (cgroup-root = auto), which a
# service joins with Slice=; they must outlive restarts, upgrades and stops of
# drfd with their limits.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
# The test runs as a unit; drfd started by hand must not think systemd runs it.
unset INVOCATION_ID JOURNAL_STREAM NOTIFY_SOCKET

TROOT=/sys/fs/cgroup/drf.slice
conf=/etc/drfd/tenants.d/test.conf
deb=''
for f in "$DRF_TOP"/.output/deb/drfd_*.deb; do [ -f "$f" ] && deb=$f; done

diagram <<'DIAGRAM'
systemd (PID 1, cgroup v2)             dpkg -i drfd_*.deb: /etc/drfd/drfd.conf as shipped
 |- system.slice/drfd.service          drfd alone (Type=notify, 4 capabilities, cgroupfs read-only)
 '- drf.slice                          cgroup-root = auto: drfd sets its slices' properties over D-Bus
     |- drf-web.slice    weight 2, cpu 1, memory 256M   webapp.service (Slice=, User=nobody);
     |                                                   a `sleep` via drfctl exec (a scope);
     |                                                   podman containers (--cgroup-parent)
     '- drf-batch.slice  weight 1, cpu 2, memory 128M   empty
expect: knobs = mapping(drfctl plan --json), written by systemd; webapp runs as nobody in web's
        slice with systemd's accounting, and stopping it leaves no process; a podman container's
        libpod-ID.scope and conmon's are in web's slice, one allocating 300M is OOM-killed there
        (exit 137, the slice's oom_kill and drfd's count rise, podman's OOMKilled false), and a
        reload that sets MemoryMax=192M leaves the other running in its scope; the sleep keeps its cgroup and limits across
        systemctl restart/stop/start and a package upgrade; reload applies a change (exit 0); a
        bad reload is refused at priority 3 and systemctl reload fails, as it does for an
        io-device added (needs a restart), the reason in status; a second drfd exits 6; a tenant removed while drfd
        is stopped loses its empty cgroup; a busy one is kept as an orphan; a task
        submitted by uid 65534 runs as it in drf-web.slice/drf-task-N.service with its
        cpu.max/memory.max, is cancelled leaving nothing, and outlives systemctl restart drfd;
        drf.slice's MemoryLow is its slices' sum, and under reclaim from the root cgroup
        slices a, b, c keep their memory.low (tests/vm/t_protect.sh's measure)
DIAGRAM

# "FILE=VALUE ..." of a tenant's knobs, to compare across restarts.
knobs_of() {
	local f
	for f in cpu.weight cpu.max memory.low memory.high memory.max; do
		printf '%s=%s ' "$f" "$(cat "$TROOT/drf-$1.slice/$f" 2>/dev/null)"
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
poll_for 30 systemctl -q is-active drfd.service
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
poll_for 20 test -f "$TROOT/drf-batch.slice/memory.max"
compare_plan() { # NAME: every knob of every tenant against the plan's mapping
	local bad=0 t f want have
	"$DRFCTL" plan --json >"$work/plan.json" 2>"$work/plan.err"
	$PY "$here/expect_knobs.py" share - web:memory=268435456 batch:memory=134217728 \
		<"$work/plan.json" >"$work/expect"
	while read -r t f want; do
		have=$(cat "$TROOT/drf-$t.slice/$f" 2>/dev/null)
		[ "$have" = "$want" ] || { bad=$((bad + 1)); echo "    $t/$f: '$have', want '$want'"; }
	done <"$work/expect"
	check "$1" "[ $bad -eq 0 ] && [ -s $work/expect ]" \
		"$(wc -l <"$work/expect") knobs under $TROOT, $bad differ"
}
# shellcheck disable=SC2317 # called through poll_for
settled() { "$DRFCTL" status >/dev/null 2>&1; }
poll_for 20 settled
compare_plan knobs-after-reload

# 2b. A service joins a tenant with Slice= and runs as its own user, with systemd's
# accounting; stopping it ends every process it started; the knobs stay the plan's.
cat >/etc/systemd/system/webapp.service <<'UNIT'
[Service]
Slice=drf-web.slice
User=nobody
ExecStart=/bin/sh -c 'sleep 3001 & sleep 3002 & exec sleep 3003'
UNIT
systemctl daemon-reload
systemctl start webapp.service
poll_for 10 systemctl -q is-active webapp.service
wpid=$(systemctl show -p MainPID --value webapp.service)
wcg=$(cat "/proc/$wpid/cgroup" 2>/dev/null)
wuid=$(awk '$1 == "Uid:" {print $2}' "/proc/$wpid/status" 2>/dev/null)
tasks=$(systemctl show -p TasksCurrent --value webapp.service)
mem=$(systemctl show -p MemoryCurrent --value webapp.service)
check service-in-tenant-slice "[ '$wcg' = 0::/drf.slice/drf-web.slice/webapp.service ] && [ '$wuid' = 65534 ] && [ '$tasks' = 3 ] && [ '$mem' -gt 0 ] 2>/dev/null" \
	"webapp's cgroup '$wcg', uid $wuid, systemd's TasksCurrent $tasks, MemoryCurrent $mem"
compare_plan knobs-with-a-service-in-the-slice
systemctl stop webapp.service
left=$(pgrep -u nobody -c -x sleep)
check service-stop-leaves-nothing "[ '$left' = 0 ] && [ ! -d $TROOT/drf-web.slice/webapp.service ]" \
	"after systemctl stop: $left sleeps of nobody left, its cgroup $([ -d "$TROOT/drf-web.slice/webapp.service" ] && echo kept || echo gone)"
rm -f /etc/systemd/system/webapp.service
systemctl daemon-reload

# 2c. Containers in a tenant (docs/containers.md). podman, with systemd's cgroup
# manager, puts a container run with --cgroup-parent=drf-web.slice in a scope of
# the slice, libpod-ID.scope, and its conmon in libpod-conmon-ID.scope beside it:
# web's MemoryMax= holds them together. A container that allocates past it is
# OOM-killed in the slice: exit 137, the slice's memory.events counts the kill, and
# so does drfd. podman's OOMKilled stays false: conmon reads the "oom" line of the
# container's own memory.events, and the kernel counts an oom in the cgroup whose
# limit was hit (the slice) and its ancestors, the kill in the victim's cgroup and
# its ancestors. A reload that sets the slice's MemoryMax= anew, and drfd's ticks,
# leave the container's scope alone. The image is Debian's static busybox,
# imported from a tar: no registry, no network (--network none), its storage
# under /run.
pm_dir=/run/drftest-podman
pm() {
	podman --root "$pm_dir/root" --runroot "$pm_dir/run" --tmpdir "$pm_dir/tmp" \
		--storage-driver vfs --cgroup-manager systemd --events-backend none "$@"
}
ev() { awk -v k="$1" '$1 == k {print $2}' "$TROOT/drf-web.slice/memory.events" 2>/dev/null; }
# shellcheck disable=SC2317 # called through poll_for
web_max_is() { [ "$(cat "$TROOT/drf-web.slice/memory.max" 2>/dev/null)" = "$1" ]; }
# shellcheck disable=SC2317 # called through poll_for
no_libpod_in_web() { [ -z "$(find "$TROOT/drf-web.slice" -mindepth 1 -maxdepth 1 -name 'libpod*')" ]; }
ticks() { # drfd's tick counter, from its status
	local j
	j=$("$DRFCTL" status --json 2>/dev/null) && [[ $j =~ \"ticks\":\ *([0-9]+) ]] && echo "${BASH_REMATCH[1]}"
}
# shellcheck disable=SC2317 # called through poll_for
ticks_past() { local n; n=$(ticks) && [ "$n" -ge "$1" ]; }
web_py() { # EXPR over tenant web's object in drfctl status --json, as t
	status_json
	jq_py "[t for t in s['tenants'] if t['name'] == 'web'][0]$1"
}
# shellcheck disable=SC2317 # called through poll_for
web_oom_kills_are() { [ "$(web_py "['use']['counters']['memory_events_oom_kill']" | cut -d. -f1)" = "$1" ]; }
podman_in_tenant() {
	local rc cid cpid mpid ccg mcg scope cin sslice mmax pmax smax k0 k1 o0 o1 got kd t0 ccg2
	mkdir -p "$pm_dir/tmp" "$pm_dir/box/bin" "$pm_dir/box/dev" "$pm_dir/box/etc" \
		"$pm_dir/box/proc" "$pm_dir/box/sys" "$pm_dir/box/tmp"
	cp /bin/busybox "$pm_dir/box/bin/"
	for a in sh sleep dd; do ln -s busybox "$pm_dir/box/bin/$a"; done
	tar -C "$pm_dir/box" -cf "$pm_dir/box.tar" .
	pm import "$pm_dir/box.tar" localhost/drfbox >"$work/pm-import.log" 2>&1
	rc=$?
	check container-image-imported "[ $rc -eq 0 ]" \
		"podman import of a static busybox's tar ($(du -k "$pm_dir/box.tar" | cut -f1) KiB): exit $rc $(tail -n 1 "$work/pm-import.log")"
	[ $rc -eq 0 ] || return

	# A container in the tenant: its process and its conmon in web's slice.
	pm run -d --name webbox --network none --cgroup-parent=drf-web.slice localhost/drfbox \
		/bin/sleep 3100 >"$work/pm-run.log" 2>&1
	rc=$?
	read -r cid cpid mpid < <(pm inspect --format '{{.Id}} {{.State.Pid}} {{.State.ConmonPid}}' webbox 2>/dev/null)
	scope=libpod-$cid.scope
	ccg=$(cat "/proc/$cpid/cgroup" 2>/dev/null)
	mcg=$(cat "/proc/$mpid/cgroup" 2>/dev/null)
	case $ccg in "0::/drf.slice/drf-web.slice/$scope" | "0::/drf.slice/drf-web.slice/$scope/"*) cin=yes ;; *) cin=no ;; esac
	sslice=$(systemctl show -P Slice "$scope" 2>/dev/null)
	check container-in-tenant "[ $rc -eq 0 ] && [ -n '$cid' ] && [ $cin = yes ] && [ '$sslice' = drf-web.slice ] && [ '$mcg' = 0::/drf.slice/drf-web.slice/libpod-conmon-$cid.scope ]" \
		"podman run -d --cgroup-parent=drf-web.slice: exit $rc $(head -c 200 "$work/pm-run.log" | tr '\n' ' '); its sleep (pid $cpid) in '$ccg', unit $scope with Slice=$sslice; conmon (pid $mpid) in '$mcg'"
	[ $rc -eq 0 ] && [ $cin = yes ] || return
	mmax=$(cat "$TROOT/drf-web.slice/memory.max")
	pmax=$(systemctl show -P MemoryMax drf-web.slice)
	smax=$(cat "$TROOT/drf-web.slice/$scope/memory.max" 2>/dev/null)
	got=$(web_py "['usage']['processes']")
	check container-held-by-tenant-memory-max "[ '$mmax' = 268435456 ] && [ '$pmax' = 268435456 ] && [ '$smax' = max ] && [ '$got' -ge 2 ] 2>/dev/null" \
		"drf-web.slice memory.max $mmax, MemoryMax=$pmax (web's memory = 256M); the container's scope memory.max $smax; drfd counts $got processes in web"

	# Past the tenant's memory.max: dd's 300M buffer, in a second container.
	k0=$(ev oom_kill) o0=$(ev oom)
	pm run --name webhog --network none --cgroup-parent=drf-web.slice localhost/drfbox \
		/bin/dd if=/dev/zero of=/dev/null bs=300M count=1 >"$work/pm-hog.log" 2>&1
	rc=$?
	k1=$(ev oom_kill) o1=$(ev oom)
	got=$(pm inspect --format '{{.State.OOMKilled}} {{.State.ExitCode}}' webhog 2>/dev/null)
	check container-oom-killed-in-tenant "[ $rc -eq 137 ] && [ '${got#* }' = 137 ] && [ '$k1' -gt '$k0' ] && [ '$o1' -gt '$o0' ]" \
		"podman run of dd bs=300M in drf-web.slice: exit $rc, inspect's ExitCode ${got#* }; the slice's memory.events oom_kill $k0 -> $k1, oom $o0 -> $o1"
	check container-oom-not-the-containers "[ '${got% *}' = false ]" \
		"podman inspect's OOMKilled: ${got% *} (conmon reads the oom line of the container's scope; the oom was the slice's)"
	kd=$(wait_until 15 web_oom_kills_are "$k1")
	check container-oom-counted-by-drfd "[ '$kd' != timeout ]" \
		"drfctl status --json: web's use.counters.memory_events_oom_kill $(web_py "['use']['counters']['memory_events_oom_kill']") (the slice's $k1), within $kd s"
	ccg2=$(cat "/proc/$cpid/cgroup" 2>/dev/null)
	check container-oom-spares-sibling "[ '$ccg2' = '$ccg' ]" \
		"the sleeping container (pid $cpid) after the kill: '$ccg2'"

	# A reload that changes web's MemoryMax= (256M -> 192M), then ticks: the
	# container's scope stays, and so does the container in it.
	sed -i 's/^memory = 256M$/memory = 192M/' "$conf"
	systemctl reload drfd.service
	rc=$?
	poll_for 20 web_max_is 201326592
	t0=$(ticks)
	poll_for 30 ticks_past $((t0 + 3))
	mmax=$(cat "$TROOT/drf-web.slice/memory.max")
	ccg2=$(cat "/proc/$cpid/cgroup" 2>/dev/null)
	got=$(pm inspect --format '{{.State.Status}}' webbox 2>/dev/null)
	check container-kept-across-reload "[ $rc -eq 0 ] && [ $mmax = 201326592 ] && [ '$ccg2' = '$ccg' ] && systemctl -q is-active $scope && [ '$got' = running ]" \
		"systemctl reload with web's memory 192M: exit $rc, memory.max $mmax; $(($(ticks) - t0)) ticks later the sleep (pid $cpid) in '$ccg2', $scope $(systemctl is-active "$scope"), podman says '$got'"

	pm rm -a -f -t 0 >"$work/pm-rm.log" 2>&1
	rc=$?
	poll_for 20 no_libpod_in_web
	got=$(find "$TROOT/drf-web.slice" -mindepth 1 -maxdepth 1 -name 'libpod*' | wc -l)
	check container-removed-leaves-nothing "[ $rc -eq 0 ] && [ $got -eq 0 ] && ! kill -0 $cpid 2>/dev/null && [ -d $TROOT/drf-web.slice ]" \
		"podman rm -a -f: exit $rc; libpod cgroups left in web's slice: $got; sleep $(kill -0 "$cpid" 2>/dev/null && echo alive || echo gone); the slice $([ -d "$TROOT/drf-web.slice" ] && echo kept || echo gone)"
}
if command -v podman >/dev/null; then
	podman_in_tenant
	rm -rf "$pm_dir"
	sed -i 's/^memory = 192M$/memory = 256M/' "$conf"
	systemctl reload drfd.service
	poll_for 20 web_max_is 268435456
else
	result FAIL podman-present "podman is missing (deploy/install-deps.sh installs it): no container ran in a tenant"
fi

# 3. A process in a tenant survives restarts, stops and an upgrade of drfd.
"$DRFCTL" exec web -- sleep 3000 &
sleep_pid=$!
in_web() { [ "$(cat "/proc/$sleep_pid/cgroup" 2>/dev/null)" = "0::/drf.slice/drf-web.slice/drf-exec-$sleep_pid.scope" ]; }
poll_for 10 in_web
before=$(knobs_of web)
check exec-in-tenant "in_web" "sleep $sleep_pid: $(cat "/proc/$sleep_pid/cgroup")"

old=$(systemctl show -p MainPID --value drfd.service)
systemctl restart drfd.service
rc=$?
poll_for 30 systemctl -q is-active drfd.service
new=$(systemctl show -p MainPID --value drfd.service)
check restart-keeps-tenant "[ $rc -eq 0 ] && [ $new != $old ] && in_web && [ '$(knobs_of web)' = '$before' ]" \
	"restart exit $rc, drfd $old -> $new; sleep in web: $(in_web && echo yes || echo no); knobs kept: $([ "$(knobs_of web)" = "$before" ] && echo yes || echo no)"

systemctl stop drfd.service
check stop-leaves-limits "! systemctl -q is-active drfd.service && in_web && [ '$(knobs_of web)' = '$before' ]" \
	"drfd $(systemctl is-active drfd.service); sleep in web, knobs: $(knobs_of web)"
systemctl start drfd.service
poll_for 30 systemctl -q is-active drfd.service

tenants_since=$(systemctl show -p ActiveEnterTimestampMonotonic --value drfd-tenants.service)
dpkg -i "$deb" >"$work/dpkg2.log" 2>&1
rc=$?
poll_for 30 systemctl -q is-active drfd.service
tenants_now=$(systemctl show -p ActiveEnterTimestampMonotonic --value drfd-tenants.service)
check upgrade-keeps-tenant "[ $rc -eq 0 ] && in_web && [ '$(knobs_of web)' = '$before' ] && [ $tenants_since = $tenants_now ]" \
	"dpkg -i again exit $rc; drfd-tenants.service not restarted: $([ "$tenants_since" = "$tenants_now" ] && echo yes || echo no); sleep in web with its knobs: $(in_web && [ "$(knobs_of web)" = "$before" ] && echo yes || echo no)"

# 3b. The task queue under the unit: a submitter of uid 65534 (status-group lets it reach
# the socket) has its task run as itself in a transient service in the tenant's slice,
# with the task's limits; a cancel ends it and leaves nothing; a task outlives
# systemctl restart drfd, re-adopted, and its end is recorded.
sed -i 's/^\[agent\]$/[agent]\nstatus-group = nogroup/' /etc/drfd/drfd.conf
# web's access names nobody; batch is root's alone (drfd.conf(5), access).
sed -i 's/^\[tenant web\]$/[tenant web]\naccess = nobody/' "$conf"
systemctl restart drfd.service
poll_for 30 systemctl -q is-active drfd.service
poll_for 20 settled
as_nobody() { (cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$@"); }
task_py() { # ID EXPR: EXPR over task ID's object in drfctl tasks --json, as x
	"$DRFCTL" tasks --json 2>/dev/null |
		$PY -c "import json,sys; x={t['id']: t for t in json.load(sys.stdin)['tasks']}[$1]; print($2)" 2>/dev/null ||
		echo "?"
}
# shellcheck disable=SC2317 # called through poll_for
task_is() { [ "$(task_py "$1" "$2")" = True ]; }
# shellcheck disable=SC2317 # called through poll_for
pid_of() { pgrep -u 65534 -f "^$1\$" | head -1 | grep .; }
t1=$(as_nobody "$DRFCTL" submit web --cpu 0.5 --memory 64M -- sleep 3005 2>"$work/submit1.err")
poll_for 30 pid_of 'sleep 3005' >/dev/null
tp=$(pid_of 'sleep 3005')
tcg=$(cat "/proc/$tp/cgroup" 2>/dev/null)
tuid=$(awk '$1 == "Uid:" {print $2, $3, $4, $5}' "/proc/$tp/status" 2>/dev/null)
svc=$TROOT/drf-web.slice/drf-task-$t1.service
tlim="$(cat "$svc/cpu.max" 2>/dev/null) / $(cat "$svc/memory.max" 2>/dev/null) / $(cat "$svc/memory.swap.max" 2>/dev/null)"
check task-runs-as-submitter-in-service "[ -n '$t1' ] && [ '$tcg' = 0::/drf.slice/drf-web.slice/drf-task-$t1.service ] && [ '$tuid' = '65534 65534 65534 65534' ] && [ '$tlim' = '50000 100000 / 67108864 / 0' ]" \
	"task '$t1' ($(head -c 200 "$work/submit1.err")): sleep $tp in '$tcg', uids $tuid; cpu.max / memory.max / memory.swap.max: $tlim"
# Access under the unit: nobody's submit to and exec into batch are refused (exit 2,
# nothing queued); its exec into web, a member, is moved there by drfd (a scope in web's
# slice, started over D-Bus: the user cannot write cgroup.procs, nor start it itself).
n0=$("$DRFCTL" tasks --json 2>/dev/null | $PY -c 'import json,sys; print(len(json.load(sys.stdin)["tasks"]))')
as_nobody "$DRFCTL" submit batch -- true >/dev/null 2>"$work/acc.submit"; ca=$?
as_nobody "$DRFCTL" exec batch -- true 2>"$work/acc.exec"; cx=$?
n1=$("$DRFCTL" tasks --json 2>/dev/null | $PY -c 'import json,sys; print(len(json.load(sys.stdin)["tasks"]))')
ecg=$(as_nobody "$DRFCTL" exec web -- cat /proc/self/cgroup 2>"$work/acc.exec2"); cm=$?
case $ecg in 0::/drf.slice/drf-web.slice/drf-exec-*.scope) ein=yes ;; *) ein=no ;; esac
check access-under-unit "[ $ca = 2 ] && [ $cx = 2 ] && [ '$n0' = '$n1' ] && [ $cm = 0 ] && [ $ein = yes ]" \
	"uid 65534: submit to batch exit $ca ($(head -c 300 "$work/acc.submit")), exec into batch exit $cx ($(head -c 200 "$work/acc.exec")); tasks $n0 -> $n1; exec into web exit $cm, in '$ecg' $(head -c 200 "$work/acc.exec2")"
rs=$(stat -c '%F %a %U' /run/drfd/drfd-root.sock 2>&1)
as_nobody "$PY" -c 'import socket; socket.socket(socket.AF_UNIX).connect("/run/drfd/drfd-root.sock")' 2>/dev/null; cu=$?
check root-socket-under-unit "[ \"$rs\" = 'socket 600 root' ] && [ $cu != 0 ]" \
	"root's socket: '$rs'; a connect by uid 65534: exit $cu"
as_nobody "$DRFCTL" cancel "$t1" >"$work/cancel.out" 2>&1
rc=$?
poll_for 20 task_is "$t1" 'x["state"] == "finished"'
res=$(task_py "$t1" 'x["result"]')
poll_for 10 test ! -d "$svc"
left=$(pgrep -u 65534 -c -f '^sleep 3005$')
check task-cancel-leaves-nothing "[ $rc -eq 0 ] && [ '$res' = cancelled ] && [ '$left' = 0 ] && [ ! -d $svc ] && ! systemctl -q is-active drf-task-$t1.service" \
	"cancel by its submitter: exit $rc; result '$res'; processes left $left; its service $(systemctl is-active drf-task-"$t1".service), cgroup $([ -d "$svc" ] && echo kept || echo gone)"
rm -f /run/drftest-go
t2=$(as_nobody "$DRFCTL" submit web --cpu 0.5 --memory 64M -- sh -c 'while [ ! -e /run/drftest-go ]; do sleep 0.2; done; echo done; exit 7')
poll_for 30 task_is "$t2" 'x["state"] == "running"'
svc2=drf-task-$t2.service
sup=$(systemctl show -p MainPID --value "$svc2")
old=$(systemctl show -p MainPID --value drfd.service)
systemctl restart drfd.service
rc=$?
poll_for 30 systemctl -q is-active drfd.service
poll_for 20 settled
new=$(systemctl show -p MainPID --value drfd.service)
sup2=$(systemctl show -p MainPID --value "$svc2")
st2=$(task_py "$t2" 'x["state"]')
touch /run/drftest-go
poll_for 30 task_is "$t2" 'x["state"] == "finished"'
end2=$(task_py "$t2" '(x["result"], x["exit_code"])')
d2=$(task_py "$t2" 'x["dir"]')
poll_for 10 test ! -d "$TROOT/drf-web.slice/$svc2"
check task-survives-restart "[ $rc -eq 0 ] && [ $new != $old ] && [ '$sup' -gt 0 ] && [ '$sup' = '$sup2' ] && [ '$st2' = running ] && [ \"$end2\" = \"('exited', 7)\" ] && [ \"\$(cat $d2/stdout)\" = done ] && [ ! -d $TROOT/drf-web.slice/$svc2 ]" \
	"restart exit $rc, drfd $old -> $new; the task's supervisor $sup -> $sup2, state after restart '$st2'; ended $end2, stdout '$(cat "$d2/stdout" 2>/dev/null)'; its service $(systemctl is-active "$svc2")"
rm -f /run/drftest-go
journalctl -u 'drf-task-*.service' -o short-monotonic --no-pager >"$R/t_systemd-task-units.txt" 2>&1

# 4. A reload applies a change; systemctl reload says it is in force (ExecReload=drfctl reload).
sed -i 's/^cpu = 2$/cpu = 0.5/' "$conf"
systemctl reload drfd.service
rc=$?
status_json
check reload-exit-0 "[ $rc -eq 0 ] && [ \"\$(jq_py 's[\"last_reload\"][\"successful\"]')\" = True ]" \
	"systemctl reload of a good config: exit $rc; status last_reload $(jq_py 's["last_reload"]')"
sleep 1
poll_for 20 settled
compare_plan knobs-after-change
w_web=$(cat "$TROOT/drf-web.slice/cpu.weight") w_batch=$(cat "$TROOT/drf-batch.slice/cpu.weight")
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
check bad-reload-error-priority "[ $n3 -ge 1 ] && [ $refused -ge 1 ] && [ -d $TROOT/drf-web.slice ]" \
	"$n3 journal entries at priority 3, reloads_refused $refused"
reason=$(jq_py 's["last_reload"]["reason"]')
check bad-reload-fails "[ $rc -ne 0 ] && [[ \"\$reason\" == *zz-bad.conf:* ]] && [ -d $TROOT/drf-web.slice ]" \
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
poll_for 10 test -d "$TROOT/drf-idle.slice"
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
poll_for 30 systemctl -q is-active drfd.service
# shellcheck disable=SC2317 # called through poll_for
net_ok() { [ "$(jq_py 's["net"]["qdisc"] + " " + s["net"]["programs"]')" = "ok attached" ] || { status_json; false; }; }
status_json
poll_for 20 net_ok
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
# An unchanged minute with shaping on: no netlink change (tc monitor) and no line at info or above.
since=$(date '+%Y-%m-%d %H:%M:%S')
sleep 1
timeout 60 tc monitor >"$work/tc-monitor.txt" 2>&1
nmon=$(grep -c . "$work/tc-monitor.txt")
ninfo=$(journalctl -u drfd.service --since "$since" -p info -o cat --no-pager | grep -c .)
check steady-minute-quiet "[ $nmon -eq 0 ] && [ $ninfo -eq 0 ] && net_ok" \
	"over 60 s of unchanged ticks: $nmon tc monitor events, $ninfo journal lines at info or above"
sed -i '/^net-device = drfv0$/d; /^net-rate = auto$/d' /etc/drfd/drfd.conf
systemctl stop drfd.service
drfctl net-reset >/dev/null 2>&1
systemctl start drfd.service
poll_for 30 systemctl -q is-active drfd.service

# 7. Tenants removed while drfd is stopped: the empty one's cgroup goes, the busy one
# is kept as an orphan with its limits.
systemctl stop drfd.service
: >"$conf"
systemctl start drfd.service
poll_for 30 systemctl -q is-active drfd.service
poll_for 10 test ! -d "$TROOT/drf-batch.slice"
status_json
orph=$(jq_py '",".join(o["name"] for o in s["orphans"])')
check restart-removes-empty "[ ! -d $TROOT/drf-batch.slice ] && ! systemctl -q is-active drf-batch.slice" \
	"batch's slice $([ -d "$TROOT/drf-batch.slice" ] && echo kept || echo removed), $(systemctl is-active drf-batch.slice)"
check restart-keeps-busy-orphan "[ '$orph' = web ] && in_web && [ '$(knobs_of web)' = '$before' ]" \
	"orphans: '$orph'; sleep still in web with its knobs: $(in_web && echo yes || echo no)"

kill "$sleep_pid" 2>/dev/null
poll_for 15 test ! -d "$TROOT/drf-web.slice"
check orphan-removed-when-empty "[ ! -d $TROOT/drf-web.slice ]" "web's slice $([ -d "$TROOT/drf-web.slice" ] && echo kept || echo removed) once its process ended"
# 7c. Memory protection from drf.slice down, measured as tests/vm/t_protect.sh
# measures it under cgroupfs: drf.slice's MemoryLow is the tenants' sum.
sed -i 's/^memory = auto$/memory = 96M/' /etc/drfd/drfd.conf
cat >"$conf" <<'CONF'
[tenant a]
cpu = 0.1
memory = 200M
[tenant b]
weight = 2
cpu = 0.1
memory = 200M
[tenant c]
cpu = 0.1
memory = 200M
CONF
systemctl reload drfd.service
poll_for 20 test -f "$TROOT/drf-c.slice/memory.low"
# shellcheck disable=SC2317 # called by poll_for, by name
root_low_set() { [ "$(cat "$TROOT/memory.low")" -gt 0 ] 2>/dev/null; }
poll_for 20 root_low_set
# shellcheck disable=SC2317 # called by protect_measure, by name
sliced_exec() { local t=${1#drf-}; shift; "$DRFCTL" exec "${t%.slice}" "$@"; }
prop=$(systemctl show -P MemoryLow drf.slice)
low=$(cat "$TROOT/memory.low")
check drf-slice-memorylow "[ $low -gt 0 ] && [ \$(($prop / 4096 * 4096)) = $low ]" \
	"drf.slice MemoryLow=$prop, memory.low $low"
protect_measure slices-keep-allocation "$TROOT" sliced_exec "systemctl stop drfd.service" \
	drf-a.slice drf-b.slice drf-c.slice
systemctl start drfd.service
poll_for 30 systemctl -q is-active drfd.service
: >"$conf"
sed -i 's/^memory = 96M$/memory = auto/' /etc/drfd/drfd.conf
systemctl reload drfd.service
poll_for 15 test ! -d "$TROOT/drf-a.slice"
mountpoint -q "$work/disk" && umount "$work/disk"
journalctl -u drfd.service -o short-monotonic --no-pager >"$R/drfd-journal.txt" 2>&1

# 7b. metrics-listen under the unit's IPAddressAllow=localhost: a loopback scrape gets through.
sed -i 's/^\[agent\]$/[agent]\nmetrics-listen = 127.0.0.1:9477/' /etc/drfd/drfd.conf
systemctl reload drfd.service
rc=$?
$PY -c 'import urllib.request as u; r = u.urlopen("http://127.0.0.1:9477/metrics", timeout=10); print(r.status); print(r.read().decode())' >"$work/scrape.txt" 2>&1
code=$(head -n 1 "$work/scrape.txt")
up=$(grep -c '^drfd_up 1$' "$work/scrape.txt")
check metrics-listen-under-the-unit "[ $rc -eq 0 ] && [ '$code' = 200 ] && [ $up -eq 1 ]" \
	"systemctl reload with metrics-listen = 127.0.0.1:9477: exit $rc; GET /metrics: '$code', drfd_up 1 lines: $up"

# 8. Removal: remove says what keeps running; purge leaves no qdisc, pin, slice or state.
sed -i 's/^\[capacity\]$/[capacity]\nnet-device = drfv0\nnet-rate = auto/' /etc/drfd/drfd.conf
printf '[tenant web]\ncpu = 1\n' >"$conf"
systemctl restart drfd.service
poll_for 30 systemctl -q is-active drfd.service
status_json
poll_for 20 net_ok
systemd-run --quiet --unit=webjob --slice=drf-web.slice sleep 3000
poll_for 10 systemctl -q is-active webjob.service
q_before=$(tc qdisc show dev drfv0 | grep -c 'htb d7f:')
pins_before=$(find /sys/fs/bpf -maxdepth 1 -name 'drfd*' | wc -l)
dpkg -r drfd >"$work/remove.log" 2>&1
rc_r=$?
said=$(grep -c '^drfd: 1 process(es) in the tenants' "$work/remove.log")
job=$(systemctl is-active webjob.service)
check remove-says-what-runs-on "[ $rc_r -eq 0 ] && [ $said -eq 1 ] && [ $job = active ]" \
	"dpkg -r exit $rc_r; prerm's count of drf.slice's processes said: $said; webjob $job"
dpkg --purge drfd >"$work/purge.log" 2>&1
rc_p=$?
q=$(tc qdisc show | grep -c 'htb d7f:')
pins=$(find /sys/fs/bpf -maxdepth 1 -name 'drfd*' | wc -l)
check purge-leaves-nothing "[ $rc_p -eq 0 ] && [ $q_before -eq 1 ] && [ $pins_before -ge 1 ] && [ $q -eq 0 ] && [ $pins -eq 0 ] && [ ! -d /sys/fs/cgroup/drf.slice ] && [ ! -e /var/lib/drfd ] && ! systemctl -q is-active webjob.service" \
	"purge exit $rc_p; htb d7f: qdiscs $q_before -> $q, bpffs drfd* $pins_before -> $pins, drf.slice $([ -d /sys/fs/cgroup/drf.slice ] && echo kept || echo gone), /var/lib/drfd $([ -e /var/lib/drfd ] && echo kept || echo gone), webjob $(systemctl is-active webjob.service)"
exit 0
