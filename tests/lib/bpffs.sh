#!/usr/bin/env bash
# Sourced by the tests that need bpffs at /sys/fs/bpf (drfd pins its network
# programs and probes there). A fresh Debian machine has the directory but
# nothing mounted on it; on a host drfd-tenants.service mounts it at boot. The
# tests do the same, as the unit does, so that they run on a fresh machine.
# ensure_bpffs: 0 when bpffs is there (mounted now if need be), else 1 with
# why in $bpffs_why.
# shellcheck disable=SC2034 # bpffs_why is for the script that sources this
ensure_bpffs() {
	bpffs_why=
	[ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" = bpf_fs ] && return 0
	if ! mount -t bpf -o mode=0700 bpf /sys/fs/bpf 2>/dev/null; then
		bpffs_why="no bpffs at /sys/fs/bpf, and it cannot be mounted there"
		return 1
	fi
	[ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" = bpf_fs ] && return 0
	bpffs_why="bpffs mounted at /sys/fs/bpf does not show there"
	return 1
}
