#!/usr/bin/env bash
# Helpers for the tests that run inside the VM (sourced by tests/vm/t_*.sh).
# DRF_BUILD and DRF_TOP come from the kernel command line (see init).
# shellcheck disable=SC2034 # the variables are for the scripts that source this
set -u
R=${DRF_RESULTS:-/mnt/results} # tests/vm/seq.sh: one folder per test
HOST_VCPU=/mnt/results/host-vcpu # tests/vm/boot.sh: vm_vcpu_waits (premise.sh: host_vcpu)
DRFD=$DRF_BUILD/drfd
DRFCTL=$DRF_BUILD/drfctl
PY=/usr/bin/python3
CG=/sys/fs/cgroup
work=$(mktemp -d)
# sleep as a shell builtin (Debian's bash-builtins, which deploy/install-deps.sh
# installs): the tests poll every 0.1 s, and a fork and exec cost about 45 ms
# under TCG.
[ -r /usr/lib/bash/sleep ] && enable -f /usr/lib/bash/sleep sleep

# Mounts cgroup2 and lets the root pass every controller down: the admin's part,
# done once per boot; drfd itself writes only inside its cgroup-root.
vm_setup() {
	mountpoint -q $CG || mount -t cgroup2 none $CG
	echo "+cpu +memory +io +pids" >$CG/cgroup.subtree_control
}

# when the test started, in microseconds (no fork: bash's EPOCHREALTIME)
T0_US=${EPOCHREALTIME/./}

# seconds since the test started, to a tenth, as "NAME 12.3" in $R/times.txt:
# tests/vm/run.sh prints them beside the results, so that a log tells where the
# time went
stamp() { # NAME
	local d=$(((${EPOCHREALTIME/./} - T0_US) / 100000))
	echo "$1 $((d / 10)).$((d % 10))" >>"$R/times.txt"
}

result() { # STATUS NAME DETAIL...
	local st=$1 name=$2
	shift 2
	echo "$st $name: $*" | tee -a "$R/results.txt"
	stamp "$name"
}

# check NAME COND-COMMAND DETAIL: PASS if the command succeeds.
check() {
	local name=$1 detail=$3
	if eval "$2"; then result PASS "$name" "$detail"; else result FAIL "$name" "$detail"; fi
}

# A line in the results that is neither PASS nor FAIL (a window discarded).
premise_note() { echo "$*" | tee -a "$R/results.txt"; }
# shellcheck source=tests/lib/premise.sh
. "$DRF_TOP/tests/lib/premise.sh"

diagram() { cat >>"$R/diagram.txt"; }

# usage_usec of a cgroup (relative to $CG).
cpu_usec() { # read by the shell: no process
	local k v
	while read -r k v; do [ "$k" = usage_usec ] && { echo "$v"; return; }; done <"$CG/$1/cpu.stat"
}

# A process that burns cpu until killed, inside a tenant (via drfctl exec),
# pinned to the given cpus.
busy() { # CONF TENANT CPUS
	"$DRFCTL" exec -c "$1" "$2" -- taskset -c "$3" sh -c 'while :; do :; done' &
}

# calc EXPR [FORMAT]: awk's value of EXPR, printed to three places (or FORMAT);
# holds EXPR: awk's truth of EXPR as an exit status. For figures in a window's
# premise: awk costs a fork, a python about a second under TCG.
calc() { awk "BEGIN { printf \"${2:-%.3f}\\n\", $1 }"; }
holds() { awk "BEGIN { exit !($1) }"; }

# Relative difference of $1 from $2 within $3 (fraction)? Prints the figure.
within() {
	$PY - "$1" "$2" "$3" <<'PY'
import sys
got, want, tol = map(float, sys.argv[1:])
d = abs(got - want) / want
print(f"{got:.4f} vs {want:.4f} ({d * 100:.2f}% off, limit {tol * 100:.0f}%)")
sys.exit(0 if d <= tol else 1)
PY
}

# pyserve CODE: one python, for the whole test, that answers its questions (a
# python start costs about a second under TCG); CODE defines answer(ARG...).
# ask ARG...: asks it; prints str(answer(ARG...)), or prints nothing and fails
# if that raised. A question is a line of the arguments separated by TABs, an
# answer "0TEXT" or "1", ended by a NUL (TEXT may hold newlines). Start it from
# the test's top level: a coproc started in a subshell ends with it.
pyserve() {
	coproc PYSERVE {
		$PY -c "$1"'
import sys
for line in sys.stdin:
    try:
        out = "0" + str(answer(*line.rstrip("\n").split("\t")))
    except Exception:
        out = "1"
    sys.stdout.write(out + "\0")
    sys.stdout.flush()
'
	}
}
ask() {
	local r IFS=$'\t'
	printf '%s\n' "$*" >&"${PYSERVE[1]}"
	IFS= read -r -d '' r <&"${PYSERVE[0]}"
	[ "${r:0:1}" = 0 ] || return 1
	printf '%s\n' "${r:1}"
}

# poll_for SECONDS COMMAND...: polls every 0.2 s until COMMAND succeeds.
poll_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

# wait_until SECONDS CMD...: runs CMD every 0.1 s until it succeeds; prints the
# seconds that took (two decimals), or "timeout" (and returns 1) after SECONDS.
# Plain shell arithmetic: a python per poll costs a tenth of a second under TCG.
wait_until() {
	local limit=$(($1 * 1000000)) start=${EPOCHREALTIME/./} now
	shift
	while :; do
		if "$@"; then
			now=$((${EPOCHREALTIME/./} - start))
			printf '%d.%02d\n' $((now / 1000000)) $((now % 1000000 / 10000))
			return 0
		fi
		now=${EPOCHREALTIME/./}
		if [ $((now - start)) -gt "$limit" ]; then
			echo timeout
			return 1
		fi
		sleep 0.1
	done
}

# within2 GOT WANT: the integer GOT (a knob's figure; not "max" or empty) is WANT within 2%.
within2() {
	[ -n "$1" ] && [ "$1" != max ] && [ $(($1 * 100)) -ge $(($2 * 98)) ] && [ $(($1 * 100)) -le $(($2 * 102)) ]
}

# drfd_ticks CONF SOCK: drfd's tick counter, read from its status socket.
# The bounds on how fast allocations follow demand are counted in drfd's own
# ticks, read just before the change and just after its effect was seen, so
# that a slow or loaded machine (longer ticks) does not fail them.
drfd_ticks() { # read by the shell: "ticks" is a key of the top object alone
	local j
	j=$("$DRFCTL" status -c "$1" --socket "$2" --json 2>/dev/null) &&
		[[ $j =~ \"ticks\":\ *([0-9]+) ]] && echo "${BASH_REMATCH[1]}"
}

# run_drfd NAME CONF SOCK: drfd on CONF in the background (pid in drfd_pid,
# log in $work/drfd.log) until its status socket SOCK is there; if it never
# comes, FAIL NAME with the log's last lines, and the test ends.
run_drfd() {
	"$DRFD" -c "$2" --foreground 2>>"$work/drfd.log" &
	drfd_pid=$!
	for _ in $(seq 100); do [ -S "$3" ] && return 0; sleep 0.2; done
	result FAIL "$1" "drfd did not start: $(tail -3 "$work/drfd.log")"
	exit 0
}

cleanup() {
	pkill -f 'while :; do :; done' 2>/dev/null
	pkill -x drfd 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# protect_measure NAME ROOT EXEC T... : memory protection from the root down,
# measured as the kernel's selftests measure it (test_memcontrol.c's
# test_memcg_low: page cache of known size in each cgroup, then reclaim).
# Each tenant T (its cgroup ROOT/T, entered with `EXEC T -- CMD`) reads a file
# of 1.25 x its memory.low into its page cache, a sibling of ROOT outside
# drfd's tree reads 64M; then the host's root cgroup is asked to reclaim less
# than all of that which nothing protects (memory.reclaim: global reclaim's
# rules, each top-level cgroup's protection its own memory.low, a child's
# bounded by its parent's). PASS NAME if every tenant keeps 90% of its
# memory.low and the sibling loses half its cache or more. The same run with
# ROOT's memory.low at 0 (drfd stopped first: CONTROL_STOP, a command) must
# not pass: the premise that the measure tells protection from none.
# The disk (/dev/vda) holds the files: ext4, mounted at $work/disk.
protect_fill() { # ROOT EXEC T...: fills; prints "T:low:current ... sib:current"
	local root=$1 exec=$2 t low mb line=''
	shift 2
	sync
	echo 3 >/proc/sys/vm/drop_caches
	for t in "$@"; do
		low=$(cat "$root/$t/memory.low")
		mb=$((low * 5 / 4 >> 20))
		[ -f "$work/disk/$t.$mb" ] ||
			dd if=/dev/zero of="$work/disk/$t.$mb" bs=1M count=$mb status=none
	done
	[ -f "$work/disk/sib" ] || dd if=/dev/zero of="$work/disk/sib" bs=1M count=64 status=none
	sync
	echo 3 >/proc/sys/vm/drop_caches
	for t in "$@"; do
		low=$(cat "$root/$t/memory.low")
		mb=$((low * 5 / 4 >> 20))
		$exec "$t" -- cat "$work/disk/$t.$mb" >/dev/null
		line+="$t:$low:$(cat "$root/$t/memory.current") "
	done
	mkdir -p "$CG/drfsib"
	sh -c "echo \$\$ >$CG/drfsib/cgroup.procs && exec cat $work/disk/sib" >/dev/null
	echo "${line}sib:$(cat "$CG/drfsib/memory.current")"
}

# protect_verdict ROOT BEFORE T...: reclaims 72M from the host's root; prints
# "ok" or "short", then each cgroup's "T low before->after".
protect_verdict() {
	local root=$1 before=$2 t low cur ok=ok sib0 sib1 detail=''
	shift 2
	echo 72M >"$CG/memory.reclaim" 2>/dev/null
	for t in "$@"; do
		low=$(cat "$root/$t/memory.low")
		cur=$(cat "$root/$t/memory.current")
		[ $((cur * 10)) -ge $((low * 9)) ] || ok=short
		detail+="$t low $((low >> 10))K $(($(echo "$before" | tr ' ' '\n' | sed -n "s/^$t:[0-9]*://p") >> 10))K->$((cur >> 10))K; "
	done
	sib0=$(echo "$before" | tr ' ' '\n' | sed -n 's/^sib://p')
	sib1=$(cat "$CG/drfsib/memory.current")
	[ $((sib1 * 2)) -le "$sib0" ] || ok=short
	echo "$ok ${detail}sibling $((sib0 >> 10))K->$((sib1 >> 10))K"
}

protect_measure() { # NAME ROOT EXEC CONTROL_STOP T...
	local name=$1 root=$2 exec=$3 stop=$4 before v premise='' lows='' sum=0 t try
	shift 4
	mkdir -p "$work/disk"
	modprobe virtio_blk 2>/dev/null
	modprobe ext4 2>/dev/null
	for _ in $(seq 50); do [ -b /dev/vda ] && break; sleep 0.1; done
	mountpoint -q "$work/disk" || { /sbin/mkfs.ext4 -q -F -O ^has_journal -m 0 /dev/vda >"$work/mkfs.log" 2>&1 &&
		mount -t ext4 /dev/vda "$work/disk" 2>>"$work/mkfs.log"; } ||
		{ result FAIL "$name" "cannot mkfs and mount /dev/vda: $(tail -3 "$work/mkfs.log")"; return; }
	for t in "$@"; do
		sum=$((sum + $(cat "$root/$t/memory.low")))
		lows+="$t $(cat "$root/$t/memory.low") "
	done
	# The premise of the measure: filled past each memory.low, the sibling's 64M in.
	for try in 1 2; do
		before=$(protect_fill "$root" "$exec" "$@")
		premise=$($PY -c "
import sys
ok = True
for f in sys.argv[1].split():
    n, *v = f.split(':')
    if n == 'sib': ok = ok and int(v[0]) >= 60 << 20
    else: ok = ok and int(v[1]) >= int(v[0]) * 6 // 5
print('ok' if ok else 'not filled: ' + sys.argv[1])" "$before")
		[ "$premise" = ok ] && break
	done
	if [ "$premise" != ok ]; then
		result FAIL "$name" "premise: $premise"
		return
	fi
	v=$(protect_verdict "$root" "$before" "$@")
	check "$name" "[ '${v%% *}' = ok ] && [ $(cat "$root/memory.low") -ge $((sum / 4096 * 4096)) ]" \
		"root memory.low $(cat "$root/memory.low") (tenants' sum $sum: $lows); after 72M reclaimed from the host's root: ${v#* }"
	# The control: the root unprotected, the same measure does not hold.
	$stop
	echo 0 >"$root/memory.low"
	before=$(protect_fill "$root" "$exec" "$@")
	v=$(protect_verdict "$root" "$before" "$@")
	check "$name-control" "[ '${v%% *}' = short ]" \
		"root memory.low 0 (by hand, drfd stopped): ${v#* }"
	rmdir "$CG/drfsib" 2>/dev/null
}
