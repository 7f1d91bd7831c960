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
	# VM_NICE: the niceness of this QEMU, for a VM that shares the CPUs and must yield them
	[ -n "${VM_NICE:-}" ] && pre=(nice -n "$VM_NICE")
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
	"${pre[@]}" timeout "$limit" qemu-system-x86_64 -accel tcg -m 2048 -smp 2 -nographic -no-reboot \
		-kernel "/boot/vmlinuz-$VM_KV" -initrd "$VM_INITRD" \
		-append "console=ttyS0 quiet panic=-1 no_timer_check $extra drf.mode=$mode drf.script=$script drf.build=$build drf.top=$vm_top" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$res,mount_tag=results,security_model=none" \
		-drive "file=$disk,if=virtio,format=raw$drive" >"$res/serial.log" 2>&1
}
