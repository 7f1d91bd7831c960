#!/usr/bin/env bash
# ExecStart of the VM's test unit in systemd mode (written by
# tests/vm/systemd-prepare.sh): runs the test script named by drf.script= with
# its output and exit status in the results folder, as tests/vm/init does in the
# default mode, then powers the VM off.
R=/mnt/results
/bin/bash "${DRF_SCRIPT:?}" >$R/console.log 2>&1
echo "$?" >$R/exit-status
# What systemd thought of the boot, for a test that failed.
systemctl list-units --failed --no-pager >$R/failed-units.txt 2>&1
journalctl -b --no-pager >$R/journal.txt 2>&1
sync
systemctl poweroff --no-block
