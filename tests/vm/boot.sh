#!/usr/bin/env bash
# shellcheck disable=SC2034 # VM_WHY and VM_KV are for the scripts that source this
# Booting the test VM (Debian's kernel under QEMU TCG), shared by tests/vm/run.sh and
# deploy/demo.sh. Source it, then:
#   vm_prepare OUTDIR       finds the kernel, builds the initramfs; 1 + VM_WHY if it cannot
#   vm_boot SCRIPT RESULTS BUILD DISK [SECONDS [EXTRA]]
#                           boots, runs SCRIPT in the guest with RESULTS as /mnt/results,
#                           for at most SECONDS (default 900); EXTRA: more words for the
#                           kernel's command line (drf.tests=... for tests/vm/seq.sh);
#                           a script with a line "# vm-mode: systemd" runs under
#                           Debian's systemd as PID 1 (see init), the others in a chroot;
#                           a line "# vm-drive: OPTS" adds OPTS to DISK's -drive (e.g.
#                           throttling.bps-total=N: a disk slower than the emulated CPU)
vm_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vm_top=$(cd "$vm_here/../.." && pwd)
VM_KV='' VM_INITRD='' VM_WHY=''

vm_prepare() {
	local out=$1 d v
	command -v qemu-system-x86_64 >/dev/null ||
		{ VM_WHY="qemu-system-x86_64 is missing (deploy/install-deps.sh installs it)"; return 1; }
	for d in /lib/modules/*-amd64; do
		v=$(basename "$d")
		[ -r "/boot/vmlinuz-$v" ] && VM_KV=$v
	done
	[ -n "$VM_KV" ] ||
		{ VM_WHY="no Debian kernel (/boot/vmlinuz-*-amd64 and its modules; install linux-image-amd64)"; return 1; }
	[ -x /bin/busybox ] || { VM_WHY="/bin/busybox is missing (install busybox-static)"; return 1; }
	mkdir -p "$out"
	VM_INITRD=$out/initramfs-$VM_KV.gz
	if [ ! -s "$VM_INITRD" ] || [ "$vm_here/init" -nt "$VM_INITRD" ] ||
		[ "$vm_here/mkinitramfs.sh" -nt "$VM_INITRD" ]; then
		"$vm_here/mkinitramfs.sh" "$VM_INITRD" "$VM_KV" ||
			{ VM_WHY="building the initramfs failed"; return 1; }
	fi
}

vm_boot() {
	local script=$1 res=$2 build=$3 disk=$4 limit=${5:-900} extra=${6:-} mode=chroot drive
	local -a pre=()
	# VM_NICE: the niceness of this QEMU, for a VM that shares the CPUs and must
	# yield them (10), or that measures and must have them (below 0). Where the
	# kernel groups processes by session (autogroup: sched_autogroup_enabled),
	# niceness counts only within a session, and a CPU hog started in another
	# session gets as much as all of this one: a QEMU below 0 runs in a session of
	# its own whose autogroup gets the same niceness (as root; vm_autogroup).
	if [ -n "${VM_NICE:-}" ]; then
		pre=(nice -n "$VM_NICE")
		[ "$VM_NICE" -lt 0 ] && pre+=(setsid -w)
	fi
	rm -f "$res/qemu.pid"
	drive=$(sed -n 's/^# vm-drive: \([^ ]*\)$/,\1/p' "$script" | head -n 1)
	if grep -q '^# vm-mode: systemd$' "$script"; then
		mode=systemd
		# Pure cgroup v2, as on a Debian 12 host booted with it.
		extra="$extra systemd.unified_cgroup_hierarchy=1 systemd.show_status=0"
	fi
	# Generous: TCG emulates every instruction, and tests run 10 s windows.
	# no_timer_check: a guest whose vCPUs the host starves at boot (nice 10 beside
	# busy CPUs) panicked "IO-APIC + timer doesn't work!"; the timer works, the
	# check's wait was too short for a starved vCPU (the kernel's advice for VMs).
	# debug-threads: QEMU names its vCPU threads ("CPU 0/TCG"), for vm_vcpu_waits.
	"${pre[@]}" timeout "$limit" qemu-system-x86_64 -accel tcg -m 2048 -smp 2 -nographic -no-reboot \
		-name drf-test,debug-threads=on -pidfile "$res/qemu.pid" \
		-kernel "/boot/vmlinuz-$VM_KV" -initrd "$VM_INITRD" \
		-append "console=ttyS0 quiet panic=-1 no_timer_check $extra drf.mode=$mode drf.script=$script drf.build=$build drf.top=$vm_top" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$res,mount_tag=results,security_model=none" \
		-drive "file=$disk,if=virtio,format=raw$drive" >"$res/serial.log" 2>&1 &
	local vm=$! rc
	[ -n "${VM_NICE:-}" ] && [ "$VM_NICE" -lt 0 ] && vm_autogroup "$vm" "$res/qemu.pid" "$VM_NICE"
	vm_vcpu_waits "$vm" "$res/qemu.pid" "$res/host-vcpu" &
	local writer=$!
	wait "$vm"
	rc=$?
	wait "$writer" # its own writer only: run.sh's other boots may still be running
	return $rc
}

# vm_autogroup PID PIDFILE NICE: once QEMU has written PIDFILE (PID, what
# started it, still running), gives its autogroup NICE; says so when it cannot.
vm_autogroup() {
	local q=""
	for _ in $(seq 100); do
		[ -s "$2" ] && read -r q <"$2" && break
		kill -0 "$1" 2>/dev/null || return
		sleep 0.1
	done
	[ -w "/proc/$q/autogroup" ] || return 0 # no autogroups: niceness is enough
	echo "$3" >"/proc/$q/autogroup" 2>/dev/null ||
		echo "vm: cannot give QEMU's autogroup niceness $3 (not root?): a busy host will take its CPUs" >&2
}

# vm_vcpu_waits PID PIDFILE FILE: while PID (timeout, nice) runs, writes into FILE every
# quarter second "NS WAIT0 WAIT1": the host's clock and, for each vCPU thread
# of its QEMU ("CPU N/TCG"; QEMU's PIDFILE), the nanoseconds it has waited for a host CPU
# (/proc/TID/schedstat's run_delay). Under TCG the guest's clock is the
# host's: time the host keeps a vCPU from running is charged, in the guest, to
# whatever ran there, and no guest counter shows it. The tests read FILE at
# /mnt/results/host-vcpu to check that their windows had the CPUs they
# measured (tests/lib/premise.sh: host_waits). Beside it, FILE-run: "NS RUN0 RUN1", the
# nanoseconds each vCPU thread has run on a host CPU (schedstat's first field),
# what the guest's work cost the host (tests/vm/seq.sh: host-cpu per test).
vm_vcpu_waits() {
	local pid=$1 pidfile=$2 file=$3 q="" t c line w r n
	local -a d=() u=()
	while kill -0 "$pid" 2>/dev/null; do
		[ -n "$q" ] || { [ -s "$pidfile" ] && read -r q <"$pidfile"; }
		line=""
		if [ -n "$q" ]; then
			for t in /proc/"$q"/task/*; do
				read -r c <"$t/comm" 2>/dev/null || continue
				case $c in
				"CPU "*"/TCG")
					read -r r w _ <"$t/schedstat" 2>/dev/null || continue
					n=${c//[^0-9]/} d[n]=$w u[n]=$r
					;;
				esac
			done
			[ ${#d[@]} -gt 0 ] && line="${EPOCHREALTIME/./}000 ${d[*]}"
		fi
		if [ -n "$line" ]; then
			echo "$line" >"$file.new" && mv -f "$file.new" "$file"
			echo "${line%% *} ${u[*]}" >"$file-run.new" && mv -f "$file-run.new" "$file-run"
		fi
		sleep 0.25
	done
}
