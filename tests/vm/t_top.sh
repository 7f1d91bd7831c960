#!/usr/bin/env bash
# drfctl top on a real kernel, against a drfd daemon with two tenants: zeta runs
# a busy loop (drfctl exec), alpha idles. Both get the same allocation, so the
# default order, dominant share of use (largest first), puts zeta first, and the
# name order puts alpha first. Batch mode (-b -n 2) is read as text; the live
# view runs under tmux (send-keys, capture-pane). Its exit status is written by
# the pane's shell: under TCG, tmux's own #{pane_dead_status} sometimes stays
# empty, the child not reaped until some later event.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
# tmux needs pseudo-terminals, and a terminal type for itself.
mkdir -p /dev/pts
mountpoint -q /dev/pts || mount -t devpts -o ptmxmode=0666 devpts /dev/pts
export TERM=xterm-256color

diagram <<'DIAGRAM'
drf.slice (share mode; cpu 2, memory 1G; interval 1s)   drfd as a daemon
 |- alpha  idle
 '- zeta   busy loop on vCPU 0
expect: no drfd: drfctl top exits 1, prints nothing on stdout, something on stderr;
        drfctl top -b -n 2: exit 0, two frames, the second lists zeta then alpha
        (dominant share of use); under tmux: both listed, zeta first; `t` puts
        alpha first (tenant name); `q` ends it with status 0; -n 2 ends by itself
DIAGRAM

conf=$work/drfd.conf
sock=$work/drfd.sock
cat >"$conf" <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
interval = 1s
status-socket = $sock
state-dir = $work/state
[capacity]
cpu = 2
memory = 1G
[tenant alpha]
[tenant zeta]
CONF

# The tenants of a frame, in the order shown: the first word of each line after
# the TENANT heading, up to the first blank line.
rows() { # FILE
	awk '$1 == "TENANT" {on = 1; next} on && NF == 0 {exit} on {printf "%s ", $1}' "$1"
}
# Runs COMMAND every 0.2 s until it succeeds, up to 30 s; 1 if it never does.
wait_for() { # COMMAND [ARG...]
	for _ in $(seq 150); do "$@" && return 0; sleep 0.2; done
	return 1
}

# No daemon yet: exit 1, nothing on stdout, the reason on stderr.
"$DRFCTL" top -c "$conf" -b -n 1 >"$work/none.out" 2>"$work/none.err"
rc=$?
check top-no-daemon "[ $rc -eq 1 ] && [ ! -s $work/none.out ] && [ -s $work/none.err ]" \
	"exit $rc, stdout $(wc -c <"$work/none.out") bytes, stderr: $(head -c 200 "$work/none.err")"

run_drfd top-daemon "$conf" "$sock"
busy "$conf" zeta 0
# Several ticks: use needs two samples, and the loop must have run through one.
sleep 5

# Batch: two frames, a blank line between them.
"$DRFCTL" top -c "$conf" -b -n 2 >"$work/batch.txt" 2>"$work/batch.err"
rc=$?
cp "$work/batch.txt" "$R/top-batch.txt"
frames=$($PY -c "import sys; print(len(open(sys.argv[1]).read().strip('\n').split('\n\n')))" \
	"$work/batch.txt")
$PY -c "import sys; print(open(sys.argv[1]).read().strip('\n').split('\n\n')[-1])" \
	"$work/batch.txt" >"$work/frame2.txt"
order=$(rows "$work/frame2.txt")
check top-batch "[ $rc -eq 0 ] && [ \"$frames\" = 2 ] && [ \"$order\" = 'zeta alpha ' ]" \
	"exit $rc, $frames frames, the second lists: $order(stderr: $(head -c 200 "$work/batch.err"))"

# The live view under tmux; remain-on-exit keeps the pane after top ends.
echo 'set-option -g remain-on-exit on' >"$work/tmux.conf"
tmx() { tmux -L drftop -f "$work/tmux.conf" "$@"; }
# Is the screen of window 0 (kept in screen.txt) listing the tenants in this order?
# shellcheck disable=SC2317 # called through wait_for
screen_order_is() { # "NAME NAME "
	tmx capture-pane -p -t top:0 >"$work/screen.txt" && [ "$(rows "$work/screen.txt")" = "$1" ]
}
# Has the pane of WINDOW ended, its shell having written top's exit status?
# shellcheck disable=SC2317 # called through wait_for
exited() { # WINDOW
	[ -s "$work/top$1.rc" ] && [ "$(tmx display-message -p -t "top:$1" '#{pane_dead}')" = 1 ]
}
# top's exit status and the pane's state, for the checks.
ended() { # WINDOW
	echo "exit status $(cat "$work/top$1.rc" 2>/dev/null), pane dead" \
		"$(tmx display-message -p -t "top:$1" '#{pane_dead}')"
}
tmx new-session -d -s top -x 160 -y 40 "$DRFCTL top -c $conf; echo \$? >$work/top0.rc"
wait_for screen_order_is 'zeta alpha '
cp "$work/screen.txt" "$R/top-screen.txt"
check top-live-shows-both "[ \"$(rows "$work/screen.txt")\" = 'zeta alpha ' ]" \
	"rows on the screen: $(rows "$work/screen.txt")(dominant share of use)"

tmx send-keys -t top:0 t
wait_for screen_order_is 'alpha zeta '
check top-key-t-sorts-by-name "[ \"$(rows "$work/screen.txt")\" = 'alpha zeta ' ]" \
	"after t: $(rows "$work/screen.txt")"

# drfctl top, the child of the pane's shell.
pid=$(pgrep -x -P "$(tmx display-message -p -t top:0 '#{pane_pid}')" drfctl)
tmx send-keys -t top:0 q
wait_for exited 0
check top-key-q-quits "[ \"\$(cat $work/top0.rc)\" = 0 ] && [ -n '$pid' ] && ! kill -0 ${pid:-0} 2>/dev/null" \
	"$(ended 0); process ${pid:-none} $(kill -0 "${pid:-0}" 2>/dev/null && echo runs || echo gone)"

# -n without -b: the live view ends by itself after N refreshes.
tmx new-window -t top:1 "$DRFCTL top -c $conf -n 2 -d 0.5; echo \$? >$work/top1.rc"
wait_for exited 1
check top-n-ends-live-view "[ \"\$(cat $work/top1.rc)\" = 0 ]" "$(ended 1)"
tmx kill-server
exit 0
