#!/usr/bin/env bash
# vm-mode: systemd
# A probe, not a regression test (its name does not start with t_, so
# `tests/vm/run.sh BUILD` does not run it; `tests/vm/run.sh BUILD probe_hardening`
# does): which sandboxing options and capabilities drfd.service really needs.
# It installs .output/probe/drfd.deb (a copy of a `make deb` build, so a
# concurrent rebuild does not change it under the probe), then, for each
# variant, adds one drop-in to the shipped unit, restarts drfd and checks that
# it works fully: active, `drfctl status` from the daemon exits 0, the socket
# has the status-group and a member of that group can ask, a reload applies a
# weight change. PASS probe-NAME: drfd works with it; FAIL probe-NAME: it
# breaks drfd, with the error seen. A variant that breaks only status-group is
# tried again without it (NAME-nogroup).
# Details per variant: $R/probe-detail.txt; `systemd-analyze security`:
# $R/security.txt (the shipped unit) and $R/security-combined.txt (with every
# candidate that passed).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
# The probe runs as a unit; the drfctl it runs must not think systemd runs it.
unset INVOCATION_ID JOURNAL_STREAM NOTIFY_SOCKET

deb=$DRF_TOP/.output/probe/drfd.deb
DRFCTL=/usr/bin/drfctl
TROOT=/sys/fs/cgroup/system.slice/drfd-tenants.service
main=/etc/drfd/drfd.conf
tconf=/etc/drfd/tenants.d/probe.conf
dropdir=/etc/systemd/system/drfd.service.d
drop=$dropdir/probe.conf
detail=$R/probe-detail.txt
# boot.sh kills the VM at 900 s; past this many seconds of the probe, the
# remaining variants are skipped so the summary still gets written.
BUDGET=${PROBE_BUDGET:-720}
# Drop-in lines of every candidate that passed: the combined variant.
combined=()

diagram <<'DIAGRAM'
probe: systemd (PID 1), dpkg -i .output/probe/drfd.deb, tenants a (weight 2, cpu 2, memory 256M)
and b (cpu 2, memory 128M), status-group = adm. Per variant: one drop-in on top of the shipped
drfd.service, restart; PASS = active, drfctl status (daemon) exit 0, socket group adm, a member
of adm can ask, a reload changes b's cpu.weight. FAIL = the option breaks drfd (a finding).
DIAGRAM

sc() { timeout 30 systemctl "$@"; }
note() { echo "$*" >>"$detail"; }

# wait_for SECONDS COMMAND...: polls every 0.2 s until COMMAND succeeds.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

# write_conf GROUP MEM IO: /etc/drfd/drfd.conf from the packaged one, with
# status-group = adm (GROUP=group), memory = 1G instead of auto (MEM=fixed),
# io-device = IO and io rates (IO=none: no io).
write_conf() {
	cp "$work/drfd.conf.orig" "$main"
	[ "$1" = group ] && sed -i '/^\[agent\]$/a status-group = adm' "$main"
	[ "$2" = fixed ] && sed -i 's/^memory = auto$/memory = 1G/' "$main"
	if [ "$3" != none ]; then
		sed -i -e "s|^;io-device = .*|io-device = $3|" -e 's/^;io-read-bps = .*/io-read-bps = 100M/' \
			-e 's/^;io-write-bps = .*/io-write-bps = 100M/' "$main"
	fi
}

write_tenants() { # WEIGHT-OF-a
	cat >"$tconf" <<CONF
[tenant a]
weight = $1
cpu = 2
memory = 256M
[tenant b]
cpu = 2
memory = 128M
CONF
}

journal_lines() { journalctl -u drfd.service -o cat --no-pager 2>/dev/null | wc -l; }
# The last N lines the journal got for drfd.service since line FROM, on one line.
journal_since() { # FROM N
	journalctl --sync 2>/dev/null
	journalctl -u drfd.service -o cat --no-pager 2>/dev/null | tail -n +"$(($1 + 1))" |
		tail -n "$2" | tr '\n' '|' | sed 's/|$//; s/|/ | /g'
}

status_source() { # ARGS...: "RC SOURCE" of drfctl status --json ARGS
	local rc src
	"$@" >"$work/status.json" 2>"$work/status.err"
	rc=$?
	src=$($PY -c "import json; print(json.load(open('$work/status.json'))['source'])" 2>/dev/null)
	echo "$rc ${src:-none}"
}
# shellcheck disable=SC2317 # called through wait_for
daemon_ok() { [ "$(status_source "$DRFCTL" status --json)" = "0 daemon" ]; }
bw() { cat "$TROOT/b/cpu.weight" 2>/dev/null || echo none; }
# shellcheck disable=SC2317 # called through wait_for
bw_changed() { [ "$(bw)" != "$1" ] && [ "$(bw)" != none ]; }

# probe NAME GROUP MEM IO [DROP-IN LINE...]: one variant; sets $outcome to
# pass, group (only the status-group part broke) or fail.
probe() {
	local name=$1 grp=$2 mem=$3 io=$4 n0 rc act st src sock want member bw0 bw1 pid why='' err
	local t0=$SECONDS
	shift 4
	outcome=fail
	if [ $SECONDS -ge "$BUDGET" ]; then
		result SKIP "probe-$name" "out of time (past ${BUDGET}s of the VM's 900s)"
		outcome=skip
		return
	fi
	sc stop drfd.service 2>/dev/null
	sc reset-failed drfd.service 2>/dev/null
	write_conf "$grp" "$mem" "$io"
	write_tenants 2
	if [ $# -gt 0 ]; then
		printf '[Service]\n' >"$drop"
		printf '%s\n' "$@" >>"$drop"
	else
		rm -f "$drop"
	fi
	sc daemon-reload
	n0=$(journal_lines)
	sc restart drfd.service 2>"$work/restart.err"
	rc=$?
	act=$(sc is-active drfd.service)
	{
		echo "=== $name (${grp}, memory ${mem}, io ${io}): $*"
		echo "restart exit $rc: $(tr '\n' ' ' <"$work/restart.err")"
	} >>"$detail"
	if [ $rc -ne 0 ] || [ "$act" != active ]; then
		sleep 1
		err=$(journal_since "$n0" 6)
		note "journal: $err"
		note "$(systemctl show drfd.service -p Result -p ExecMainCode -p ExecMainStatus | tr '\n' ' ')"
		result FAIL "probe-$name" "does not start (restart exit $rc, $act; $(systemctl show -p ExecMainStatus --value drfd.service | sed 's/^/exit status /')): $err"
		sc stop drfd.service 2>/dev/null
		rm -f "$drop"
		return
	fi
	pid=$(systemctl show -p MainPID --value drfd.service)
	note "drfd $pid: $(grep -E '^(Uid|Gid|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' "/proc/$pid/status" | tr -s '\t\n' '  ')uid_map: $(tr -s ' \n' ' ' <"/proc/$pid/uid_map")"
	wait_for 20 daemon_ok
	read -r st src < <(status_source "$DRFCTL" status --json)
	sock=$(stat -c %G /run/drfd/drfd.sock 2>/dev/null || echo none)
	want=root member=n/a
	if [ "$grp" = group ]; then
		want=adm
		member=$(status_source setpriv --reuid=65534 --regid=65534 --groups=4 --inh-caps=-all \
			"$DRFCTL" status --json)
	fi
	# A reload applies a weight change: b's cpu.weight follows a's weight.
	bw0=$(bw)
	write_tenants 1
	sc reload drfd.service
	wait_for 15 bw_changed "$bw0"
	bw1=$(bw)
	wait_for 10 daemon_ok
	note "status exit $st source $src; socket group $sock (want $want); member of adm: $member; b cpu.weight $bw0 -> $bw1; $((SECONDS - t0)) s"
	# Without its socket drfd still works (drfctl status reads cgroupfs): that
	# and the socket's group are the status-group part.
	[ "$st" = 0 ] || why="$why drfctl status exit $st ($src);"
	[ "$bw1" != "$bw0" ] && [ "$bw1" != none ] || why="$why reload did not apply (b cpu.weight $bw0 -> $bw1);"
	[ -n "$why" ] || outcome=group
	[ "$src" = daemon ] || why="$why drfctl status answered from $src, not the daemon;"
	[ "$sock" = "$want" ] || why="$why socket group $sock, want $want;"
	[ "$grp" != group ] || [ "$member" = "0 daemon" ] || why="$why an adm member's status: exit/source $member;"
	if [ -z "$why" ]; then
		outcome=pass
		result PASS "probe-$name" "active, status 0 (daemon), socket group $sock, reload applied (b cpu.weight $bw0 -> $bw1)"
	else
		err=$(journal_since "$n0" 40 | tr '|' '\n' | grep -iE 'status-socket|error|fail|cannot|denied|not permitted' |
			tail -n 3 | tr '\n' '|' | sed 's/|$//; s/|/ | /g')
		note "journal: $err"
		result FAIL "probe-$name" "${why# } journal: ${err:-nothing}"
	fi
	rm -f "$drop"
}

# candidate NAME GROUP MEM IO LINE...: a variant that, if drfd works with it,
# joins the combined one. One that fails with status-group is tried again
# without, to tell whether status-group is what it breaks.
candidate() {
	local name=$1 grp=$2 mem=$3 io=$4
	probe "$@"
	shift 4
	if [ "$outcome" = pass ]; then
		combined+=("$@")
	elif [ "$outcome" != skip ] && [ "$grp" = group ]; then
		probe "$name-nogroup" nogroup "$mem" "$io" "$@"
	fi
}

# A second drfd, started beside the running one with PROPS: exit 6, and does its
# message name the first one's pid (read from /proc/locks)?
second_drfd() { # NAME PROP...
	local name=$1 rc msg
	shift
	timeout 60 systemd-run --wait --quiet --unit="drfd-second-$name" "$@" \
		/usr/sbin/drfd --foreground >/dev/null 2>&1
	rc=$?
	journalctl --sync 2>/dev/null
	msg=$(journalctl -u "drfd-second-$name" -o cat --no-pager | grep -m1 'another drfd')
	sc reset-failed "drfd-second-$name" 2>/dev/null
	if [ $rc -eq 6 ] && [[ $msg == *"(pid "* ]]; then
		result PASS "probe-second-$name" "exit 6: $msg"
	else
		result FAIL "probe-second-$name" "exit $rc: ${msg:-no message}"
	fi
}

security() { # FILE
	COLUMNS=200 timeout 60 systemd-analyze security drfd.service --no-pager >"$1" 2>&1
	echo "NOTE $(basename "$1"): $(grep -m1 'Overall exposure' "$1")" | tee -a "$R/results.txt"
}

if [ ! -f "$deb" ]; then
	result FAIL probe-deb "no $deb: copy .output/deb/drfd_*_amd64.deb there"
	exit 0
fi
dpkg -i "$deb" >"$work/dpkg.log" 2>&1
rc=$?
check probe-dpkg-install "[ $rc -eq 0 ]" "dpkg -i $deb exit $rc"
[ $rc -eq 0 ] || { sed 's/^/    /' "$work/dpkg.log"; exit 0; }
cp "$main" "$work/drfd.conf.orig"
: >"$detail"
mkdir -p "$dropdir"
# Not hardening: a start that hangs fails in 20 s instead of 90.
printf '[Service]\nTimeoutStartSec=20s\nTimeoutStopSec=10s\n' >"$dropdir/00-probe-timeout.conf"
sc daemon-reload
security "$R/security.txt"

# The shipped unit, and the capability bounding set.
probe baseline group auto none
probe baseline-nogroup nogroup auto none
candidate capbset-empty group auto none 'CapabilityBoundingSet='
probe securebits-noroot group auto none 'SecureBits=noroot noroot-locked'
probe securebits-noroot-ambient group auto none 'SecureBits=noroot noroot-locked' \
	'AmbientCapabilities=CAP_CHOWN'

# Filesystem and kernel views.
candidate protect-kernel-tunables group auto none 'ProtectKernelTunables=yes'
probe protect-control-groups group auto none 'ProtectControlGroups=yes'
candidate protect-control-groups-rw-tenants group auto none 'ProtectControlGroups=yes' \
	"ReadWritePaths=$TROOT"
probe readonly-cgroupfs group auto none 'ReadOnlyPaths=/sys/fs/cgroup'
candidate private-devices group auto none 'PrivateDevices=yes'
candidate device-policy-closed group auto none 'DevicePolicy=closed'
candidate private-network group auto none 'PrivateNetwork=yes'
candidate private-users group auto none 'PrivateUsers=yes'
candidate protect-proc-invisible group auto none 'ProtectProc=invisible'
probe proc-subset-pid group auto none 'ProcSubset=pid'
probe proc-subset-pid-memory-1G group fixed none 'ProcSubset=pid'
candidate private-mounts group auto none 'PrivateMounts=yes'
candidate private-ipc group auto none 'PrivateIPC=yes'
candidate remove-ipc group auto none 'RemoveIPC=yes'
candidate umask-0077 group auto none 'UMask=0077'
candidate keyring-private group auto none 'KeyringMode=private'

# System calls and socket families.
candidate syscall-no-privileged-resources group auto none 'SystemCallFilter=~@privileged @resources'
candidate syscall-no-resources group auto none 'SystemCallFilter=~@resources'
probe syscall-no-privileged-eperm group auto none 'SystemCallFilter=~@privileged' \
	'SystemCallErrorNumber=EPERM'
candidate syscall-errno-eperm group auto none 'SystemCallErrorNumber=EPERM'
candidate af-unix-only group auto none 'RestrictAddressFamilies=' 'RestrictAddressFamilies=AF_UNIX'

# /proc/locks names the holder of the root's lock: hidden by ProcSubset=pid?
sc stop drfd.service
sc reset-failed drfd.service
write_conf group auto none
write_tenants 2
rm -f "$drop"
sc daemon-reload
sc restart drfd.service
if wait_for 20 daemon_ok; then
	second_drfd plain
	second_drfd procsubset -p ProcSubset=pid
fi
sc stop drfd.service

# io: io-device by path needs /dev in drfd's view; by MAJ:MIN only /sys.
if [ -e /sys/block/vda/dev ] && grep -qw io "$TROOT/cgroup.controllers" 2>/dev/null; then
	majmin=$(cat /sys/block/vda/dev)
	probe io-path group auto /dev/vda
	probe io-path-private-devices group auto /dev/vda 'PrivateDevices=yes'
	probe io-majmin-private-devices group auto "$majmin" 'PrivateDevices=yes'
	probe io-path-device-policy-closed group auto /dev/vda 'DevicePolicy=closed'
else
	result SKIP probe-io "no /dev/vda or no io controller in $TROOT ($(cat "$TROOT/cgroup.controllers" 2>/dev/null))"
fi

# Everything that passed, together, with the shipped CAP_CHOWN.
note "combined: ${combined[*]}"
probe combined group auto none "${combined[@]}"
printf '[Service]\n' >"$drop"
printf '%s\n' "${combined[@]}" >>"$drop"
sc daemon-reload
security "$R/security-combined.txt"
rm -f "$drop"
sc daemon-reload

# Another user than root: last, since systemd moves and chowns the state directory.
probe dynamic-user group auto none 'DynamicUser=yes'
probe user-nobody group auto none 'User=nobody'
probe baseline-again group auto none

sc stop drfd.service
journalctl -u drfd.service -o short-monotonic --no-pager >"$R/drfd-journal.txt" 2>&1
note "probe took $SECONDS s"
exit 0
