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

# write_conf GROUP MEM CAP: /etc/drfd/drfd.conf from the packaged one, with
# status-group = adm (GROUP=group), memory = 1G instead of auto (MEM=fixed),
# and the lines of CAP (separated by ";", "-" for none) added to [capacity].
write_conf() {
	local l
	cp "$work/drfd.conf.orig" "$main"
	[ "$1" = group ] && sed -i '/^\[agent\]$/a status-group = adm' "$main"
	[ "$2" = fixed ] && sed -i 's/^memory = auto$/memory = 1G/' "$main"
	if [ "$3" != - ]; then
		IFS=';' read -ra l <<<"$3"
		printf '%s\n' "${l[@]}" >"$work/cap.lines"
		sed -i "/^\[capacity\]\$/r $work/cap.lines" "$main"
	fi
	grep -q '^\[capacity\]$' "$main" || note "write_conf: no [capacity] in $main"
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
# The last N lines the journal got for drfd.service since line FROM that say
# what went wrong (not systemd's Starting/Failed to start, nor drfd's tick
# lines), on one line.
journal_since() { # FROM N
	journalctl --sync 2>/dev/null
	journalctl -u drfd.service -o cat --no-pager 2>/dev/null | tail -n +"$(($1 + 1))" |
		grep -vE '^(Starting|Started|Stopping|Stopped|Reloading|Reloaded|Failed to start) |^tick |^plan: |^tenant |Failed with result|Scheduled restart' |
		grep -iE 'error|cannot|denied|not permitted|fail|exited|killed|no such|invalid|migrat|apparently|not safe' |
		tail -n "$2" | tr '\n' '|' | sed 's/|$//; s/|/ | /g'
}

status_source() { # ARGS...: "RC SOURCE" of drfctl status --json ARGS
	local rc src
	"$@" >"$work/status.json" 2>"$work/status.err"
	rc=$?
	src=$($PY -c "import json; print(json.load(open('$work/status.json'))['source'])" 2>/dev/null)
	echo "$rc ${src:-none}"
}
# shellcheck disable=SC2317 # called through poll_for
daemon_ok() { [ "$(status_source "$DRFCTL" status --json)" = "0 daemon" ]; }
bw() { cat "$TROOT/b/cpu.weight" 2>/dev/null || echo none; }
# shellcheck disable=SC2317 # called through poll_for
bw_changed() { [ "$(bw)" != "$1" ] && [ "$(bw)" != none ]; }

# probe NAME GROUP MEM CAP [DROP-IN LINE...]: one variant (see write_conf);
# sets $outcome to pass, group (only the status-group part broke), fail or skip.
probe() {
	local name=$1 grp=$2 mem=$3 cap=$4 n0 rc act st src sock want member bw0 bw1 pid why='' err
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
	write_conf "$grp" "$mem" "$cap"
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
		echo "=== $name (${grp}, memory ${mem}, capacity ${cap}): $*"
		echo "restart exit $rc: $(tr '\n' ' ' <"$work/restart.err")"
	} >>"$detail"
	if [ $rc -ne 0 ] || [ "$act" != active ]; then
		sleep 1
		err=$(journal_since "$n0" 4)
		note "journal: $err"
		note "$(systemctl show drfd.service -p Result -p ExecMainCode -p ExecMainStatus | tr '\n' ' ')"
		result FAIL "probe-$name" "does not start (restart exit $rc, $act; $(systemctl show -p ExecMainStatus --value drfd.service | sed 's/^/exit status /')): $err"
		sc stop drfd.service 2>/dev/null
		rm -f "$drop"
		return
	fi
	pid=$(systemctl show -p MainPID --value drfd.service)
	note "drfd $pid: $(grep -E '^(Uid|Gid|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' "/proc/$pid/status" | tr -s '\t\n' '  ')uid_map: $(tr -s ' \n' ' ' <"/proc/$pid/uid_map")"
	# drfd serves its socket before READY=1: no socket now, none at all.
	[ -S /run/drfd/drfd.sock ] && poll_for 20 daemon_ok
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
	poll_for 15 bw_changed "$bw0"
	bw1=$(bw)
	[ "$src" = daemon ] && poll_for 10 daemon_ok
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
		err=$(journal_since "$n0" 3)
		note "journal: $err"
		result FAIL "probe-$name" "${why# } journal: ${err:-nothing}"
	fi
	rm -f "$drop"
}

# candidate NAME GROUP MEM CAP LINE...: a variant that, if drfd works with it,
# joins the combined one. One that fails with status-group is tried again
# without, to tell whether status-group is what it breaks.
candidate() {
	local name=$1 grp=$2 mem=$3 cap=$4
	probe "$@"
	shift 4
	if [ "$outcome" = pass ]; then
		combined+=("$@")
	elif [ "$outcome" != skip ] && [ "$grp" = group ]; then
		probe "$name-nogroup" nogroup "$mem" "$cap" "$@"
	fi
}

# A second drfd, started beside the running one with PROPS: exit 6, and does its
# message name the first one's pid (F_GETLK on the lock file)?
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
		result FAIL "probe-second-$name" "exit $rc: ${msg:-no message} ($(journalctl -u "drfd-second-$name" -o cat --no-pager | grep -m1 'error'))"
	fi
}

# The directories systemd made for drfd, and what a DynamicUser= start left.
dirs() {
	stat -c '%N %U:%G %F' /run/drfd /run/private/drfd /var/lib/drfd /var/lib/private/drfd 2>&1 |
		tr '\n' ';'
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
probe baseline group auto -
probe baseline-nogroup nogroup auto -
candidate capbset-empty group auto - 'CapabilityBoundingSet='
# chown(2) to a group of one's own needs no CAP_CHOWN: the group as a supplementary one.
probe capbset-empty-supplementary-adm group auto - 'CapabilityBoundingSet=' 'SupplementaryGroups=adm'
probe securebits-noroot group auto - 'SecureBits=noroot noroot-locked'
probe securebits-noroot-ambient group auto - 'SecureBits=noroot noroot-locked' \
	'AmbientCapabilities=CAP_CHOWN'

# Filesystem and kernel views.
candidate protect-kernel-tunables group auto - 'ProtectKernelTunables=yes'
probe protect-control-groups group auto - 'ProtectControlGroups=yes'
candidate protect-control-groups-rw-tenants group auto - 'ProtectControlGroups=yes' \
	"ReadWritePaths=$TROOT"
probe readonly-cgroupfs group auto - 'ReadOnlyPaths=/sys/fs/cgroup'
candidate private-devices group auto - 'PrivateDevices=yes'
candidate device-policy-closed group auto - 'DevicePolicy=closed'
candidate private-network group auto - 'PrivateNetwork=yes'
candidate private-users group auto - 'PrivateUsers=yes'
candidate protect-proc-invisible group auto - 'ProtectProc=invisible'
probe proc-subset-pid group auto - 'ProcSubset=pid'
probe proc-subset-pid-memory-1G group fixed - 'ProcSubset=pid'
candidate private-mounts group auto - 'PrivateMounts=yes'
candidate private-ipc group auto - 'PrivateIPC=yes'
candidate remove-ipc group auto - 'RemoveIPC=yes'
candidate umask-0077 group auto - 'UMask=0077'
candidate keyring-private group auto - 'KeyringMode=private'

# System calls and socket families.
candidate syscall-no-privileged-resources group auto - 'SystemCallFilter=~@privileged @resources'
candidate syscall-no-privileged-resources-but-chown group auto - \
	'SystemCallFilter=~@privileged @resources' 'SystemCallFilter=@chown'
candidate syscall-no-resources group auto - 'SystemCallFilter=~@resources'
probe syscall-no-privileged-eperm group auto - 'SystemCallFilter=~@privileged' \
	'SystemCallErrorNumber=EPERM'
candidate syscall-errno-eperm group auto - 'SystemCallErrorNumber=EPERM'
candidate af-unix-only group auto - 'RestrictAddressFamilies=' 'RestrictAddressFamilies=AF_UNIX'

# The refusal names the holder of the root's lock: still under ProcSubset=pid?
# (memory = 1G: memory = auto cannot start under ProcSubset=pid.)
sc stop drfd.service
sc reset-failed drfd.service
write_conf group fixed -
write_tenants 2
rm -f "$drop"
sc daemon-reload
sc restart drfd.service
if poll_for 20 daemon_ok; then
	second_drfd plain
	second_drfd procsubset -p ProcSubset=pid
fi
sc stop drfd.service

# io: io-device by path needs /dev in drfd's view; by MAJ:MIN only /sys.
if [ -e /sys/block/vda/dev ] && grep -qw io "$TROOT/cgroup.controllers" 2>/dev/null; then
	rates='io-read-bps = 100M;io-write-bps = 100M'
	majmin=$(cat /sys/block/vda/dev)
	probe io-path group auto "io-device = /dev/vda;$rates"
	probe io-path-private-devices group auto "io-device = /dev/vda;$rates" 'PrivateDevices=yes'
	probe io-majmin-private-devices group auto "io-device = $majmin;$rates" 'PrivateDevices=yes'
	probe io-path-device-policy-closed group auto "io-device = /dev/vda;$rates" 'DevicePolicy=closed'
else
	result SKIP probe-io "no /dev/vda or no io controller in $TROOT ($(cat "$TROOT/cgroup.controllers" 2>/dev/null))"
fi

# net-rate = auto reads /sys/class/net/DEV/speed (drfd allocates net, does not enforce it yet).
has_speed() { [ "$(cat "/sys/class/net/$1/speed" 2>/dev/null || echo -1)" -gt 0 ]; }
nic=''
for d in /sys/class/net/*; do
	[ "${d##*/}" != lo ] && nic=${d##*/} && break
done
# A link that is down has no speed: the VM brings up no network.
if [ -n "$nic" ] && ! has_speed "$nic"; then
	ip link set "$nic" up 2>/dev/null
	poll_for 5 has_speed "$nic"
fi
if [ -n "$nic" ] && has_speed "$nic"; then
	probe net-auto group auto "net-device = $nic;net-rate = auto"
	[ "$outcome" = pass ] && probe net-auto-private-network group auto "net-device = $nic;net-rate = auto" \
		'PrivateNetwork=yes'
else
	result SKIP probe-net "no network interface with a link speed in the VM ('$nic')"
fi

# Everything that passed, together, with the shipped CAP_CHOWN.
note "combined: ${combined[*]}"
probe combined group auto - "${combined[@]}"
printf '[Service]\n' >"$drop"
printf '%s\n' "${combined[@]}" >>"$drop"
sc daemon-reload
security "$R/security-combined.txt"

# What the report recommends adding to the shipped unit; with io-device by
# path, which PrivateDevices=yes would hide.
recommended=('ProtectKernelTunables=yes' 'ProtectControlGroups=yes'
	"ReadWritePaths=-$TROOT" 'DevicePolicy=closed' 'PrivateNetwork=yes'
	'ProtectProc=invisible' 'PrivateIPC=yes' 'UMask=0077'
	'SystemCallFilter=~@privileged @resources' 'SystemCallFilter=@chown'
	'SystemCallErrorNumber=EPERM' 'RestrictAddressFamilies=' 'RestrictAddressFamilies=AF_UNIX')
if [ -n "${rates:-}" ]; then
	probe recommended group auto "io-device = /dev/vda;$rates" "${recommended[@]}"
else
	probe recommended group auto - "${recommended[@]}"
fi
# Its lock on the root, taken through the ReadWritePaths= bind mount, still
# keeps out a drfd started outside its namespace.
[ "$outcome" = pass ] && second_drfd beside-recommended
printf '[Service]\n' >"$drop"
printf '%s\n' "${recommended[@]}" >>"$drop"
sc daemon-reload
security "$R/security-recommended.txt"
rm -f "$drop"
sc daemon-reload

# Another user than root: last, since systemd moves and chowns the state directory.
probe dynamic-user group auto - 'DynamicUser=yes'
sc stop drfd.service
note "after dynamic-user: $(dirs)"
# With RuntimeDirectoryPreserve=restart, DynamicUser= makes /run/drfd a link to
# /run/private/drfd; gone with the failed unit, its dangling link stays, and no
# start of drfd without DynamicUser= gets past RUNTIME_DIRECTORY until reboot.
if [ -L /run/drfd ] && [ ! -e /run/drfd ]; then
	probe after-dynamic-user group auto -
	rm -f /run/drfd
fi
probe user-nobody group auto - 'User=nobody'
sc stop drfd.service
note "after user-nobody: $(dirs)"
probe baseline-again group auto -
note "after baseline-again: $(dirs)"

sc stop drfd.service
journalctl -u drfd.service -o short-monotonic --no-pager >"$R/drfd-journal.txt" 2>&1
note "probe took $SECONDS s"
exit 0
