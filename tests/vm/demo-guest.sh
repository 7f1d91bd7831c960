#!/usr/bin/env bash
# The demo inside the VM (deploy/demo.sh boots it): mount cgroup v2 as a host
# administrator would, then the same demo as on a cgroup v2 host.
mount -t cgroup2 none /sys/fs/cgroup
echo "+cpu +memory +io" >/sys/fs/cgroup/cgroup.subtree_control
# bpffs, as systemd mounts it on a host: drfd's usage probes pin their links there
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
echo "[in the VM: Linux $(uname -r), cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)]"
echo
exec "$DRF_TOP/deploy/demo-run.sh" "$DRF_BUILD"
