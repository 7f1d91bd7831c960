#!/usr/bin/env bash
# Builds the initramfs of the test VM (see tests/vm/boot.sh): a static
# busybox, the modules needed to reach the host's root over virtio-9p and to put
# an overlay on it, and an /init that does that and runs the test script named
# on the kernel command line.
#   mkinitramfs.sh OUT.cpio.gz KERNEL_VERSION
set -euo pipefail
out=$1
kv=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work"/{bin,modules,proc,sys,dev,lower,upper,newroot}
cp /bin/busybox "$work/bin/busybox"
ln -s busybox "$work/bin/sh"
# Dependency order, as `modprobe --show-depends` prints it; 9pnet_virtio is the
# transport, which 9p itself does not depend on.
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci \
	netfs fscache 9pnet 9pnet_virtio 9p overlay; do
	f=$(modprobe --show-depends -S "$kv" "$m" | awk '$1 == "insmod" {print $2}' | tail -n 1)
	[ -n "$f" ] || { echo "mkinitramfs: module $m not found for $kv" >&2; exit 1; }
	cp "$f" "$work/modules/"
	basename "$f" >>"$work/modules/order"
done
cp "$here/init" "$work/init"
chmod +x "$work/init"
(cd "$work" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp"
mv "$out.tmp" "$out"
