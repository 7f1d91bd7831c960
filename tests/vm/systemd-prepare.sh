#!/bin/sh
# Run by the VM's /init (tests/vm/init) in systemd mode, before it hands PID 1
# over to Debian's systemd: makes the overlay root NEWROOT boot quickly and run
# the test script as a unit. Runs under the initramfs's busybox sh.
#   systemd-prepare.sh NEWROOT     (the DRF_* variables of the command line set)
set -eu
root=${1:?usage: systemd-prepare.sh NEWROOT}
etc=$root/etc/systemd/system

# An empty machine-id: systemd makes up a transient one for this boot. An empty
# fstab: the host's entries mean nothing in the VM, and waiting for them is slow.
: >"$root/etc/machine-id"
: >"$root/etc/fstab"

# The host image comes from a container build whose policy-rc.d forbids
# starting services; a real host has none, and a package's postinst starts its
# units there.
rm -f "$root/usr/sbin/policy-rc.d"

# What the test script gets on the kernel command line (drf.NAME=VALUE).
env | grep '^DRF_' >"$root/etc/drf-vm.env"

# Units the host image enables that a test VM does not need, and those that are
# slow over 9p (systemd-tmpfiles-setup walks the whole tree) or wait for a login.
# podman's package enables its API service and two podman runs at boot; the
# tests run podman themselves, with storage of their own.
masks="systemd-tmpfiles-setup.service systemd-tmpfiles-clean.timer tmp.mount
serial-getty@ttyS0.service getty@tty1.service console-getty.service
systemd-firstboot.service systemd-timesyncd.service systemd-pstore.service
e2scrub_reap.service e2scrub_all.timer fstrim.timer man-db.timer apt-daily.timer
apt-daily-upgrade.timer dpkg-db-backup.timer logrotate.timer
postgresql.service docker.service docker.socket containerd.service ssh.service
cron.service rsyslog.service exim4.service networking.service
systemd-networkd.service NetworkManager.service ModemManager.service
unattended-upgrades.service etcd.service redis-server.service nginx.service memcached.service
podman.service podman.socket podman-restart.service podman-auto-update.service
podman-auto-update.timer"
mkdir -p "$etc/multi-user.target.wants"
for u in $masks; do
	rm -f "$etc/$u"
	ln -s /dev/null "$etc/$u"
done

# The test: a oneshot unit, its output in the results folder, then power off.
cat >"$etc/drf-vm-test.service" <<UNIT
[Unit]
Description=drfd VM test ($DRF_SCRIPT)
After=multi-user.target

[Service]
Type=oneshot
EnvironmentFile=/etc/drf-vm.env
Environment=HOME=/root
ExecStart=/bin/bash $DRF_TOP/tests/vm/systemd-run.sh
TimeoutStartSec=infinity
StandardOutput=journal+console
StandardError=journal+console
UNIT
ln -s ../drf-vm-test.service "$etc/multi-user.target.wants/drf-vm-test.service"
