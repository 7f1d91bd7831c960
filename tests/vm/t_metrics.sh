#!/usr/bin/env bash
# drfd's Prometheus metrics on a real kernel: drfd runs with two tenants, one
# burning a vCPU through drfctl exec, and metrics-file set. The file appears,
# 0644, and is replaced whole each tick; `promtool check metrics` passes it;
# node-exporter's textfile collector, on loopback, serves it without a scrape
# error, and in that scrape the busy tenant's measured cpu use over the tick
# is above 0.5 cores and the idle one's below 0.1 (the kernel's figures).
# promtool and node-exporter are the host's (deploy/install-deps.sh unpacks
# them into /opt/drfd-test-tools/bin; the VM mounts the host's root).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup
ip link set lo up
tools=/opt/drfd-test-tools/bin
tf=$work/textfile
mkdir -p "$tf"
exp_pid=''
trap '[ -n "$exp_pid" ] && kill "$exp_pid" 2>/dev/null; cleanup' EXIT

diagram <<'DIAGRAM'
drf.slice (share mode, cpu 2, memory 1G, interval 500ms, metrics-file textfile/drfd.prom, full)
 |- busy  cpu 1, a busy loop on vCPU 0
 '- idle  cpu 1, nothing
node-exporter --collector.disable-defaults --collector.textfile on 127.0.0.1:PORT
expect: the file replaced whole each tick; promtool check metrics exit 0; the scrape has
        drfd_up 1, node_textfile_scrape_error 0, busy's drfd_use_cores{resource="cpu",window="tick"}
        above 0.5 and idle's below 0.1
DIAGRAM

promtool=$(PATH=$tools:$PATH command -v promtool)
exporter=$(PATH=$tools:$PATH command -v prometheus-node-exporter node_exporter | head -1)
if [ -z "$promtool" ] || [ -z "$exporter" ]; then
	result FAIL metrics-tools "no promtool or prometheus-node-exporter in $tools or PATH: run deploy/install-deps.sh on the host"
	exit 0
fi

conf=$work/drfd.conf
cat >"$conf" <<CONF
[agent]
cgroup-root = /sys/fs/cgroup/drf.slice
interval = 500ms
metrics-file = $tf/drfd.prom
# the tick's use, which basic (the default) leaves out
metrics-detail = full
[capacity]
cpu = 2
memory = 1G
[tenant busy]
cpu = 1
[tenant idle]
cpu = 1
CONF

# The value of sample NAME with exactly the labels LABELS ('k="v",k="v"', in
# any order: node-exporter sorts them), or "".
value() { # FILE NAME [LABELS]
	awk -v name="$2" -v labels="${3:-}" '
	BEGIN { nw = labels == "" ? 0 : split(labels, want, ",") }
	/^#/ { next }
	{
		head = substr($0, 1, length($0) - length($NF) - 1)
		b = index(head, "{")
		nm = b ? substr(head, 1, b - 1) : head
		if (nm != name) next
		n = b ? split(substr(head, b + 1, length(head) - b - 1), got, ",") : 0
		if (n != nw) next
		for (i = 1; i <= nw; i++) {
			found = 0
			for (j = 1; j <= n; j++) if (got[j] == want[i]) found = 1
			if (!found) next
		}
		print $NF
		exit
	}' "$1"
}
wait_for() { # SHELL-CONDITION, up to 20 s
	local _
	for _ in $(seq 200); do eval "$1" && return 0; sleep 0.1; done
	return 1
}

pid=$("$DRFD" -c "$conf" 2>"$work/drfd.log")
rc=$?
if [ $rc -ne 0 ] || ! kill -0 "${pid:-0}" 2>/dev/null; then
	result FAIL metrics-drfd-starts "drfd exit $rc: $(tail -3 "$work/drfd.log")"
	exit 0
fi
wait_for "[ -f $tf/drfd.prom ]"
check metrics-file-appears "[ \"\$(stat -c %a $tf/drfd.prom 2>/dev/null)\" = 644 ]" \
	"$tf/drfd.prom, mode $(stat -c %a "$tf/drfd.prom" 2>/dev/null)"

busy "$conf" busy 0
sleep 3

# Read over and over for 3 s (6 ticks): every read whole, the file a new one
# (renamed over it) now and then, never rewritten in place.
$PY - "$tf/drfd.prom" >"$work/atomic.out" <<'PY'
import os, sys, time
path = sys.argv[1]
families = None
reads = bad = 0
inodes = set()
end = time.time() + 3
while time.time() < end:
    with open(path, "rb") as f:
        inodes.add(os.fstat(f.fileno()).st_ino)
        text = f.read().decode()
    reads += 1
    n = text.count("\n# TYPE ")
    if families is None:
        families = n
    # the mark drfd replaces its own file by (metrics.h), then the first family
    if not (text.startswith("# drfd metrics-file: written by drfd each tick, removed when it stops\n# HELP drfd_up ") and text.endswith("\n") and n == families):
        bad += 1
    time.sleep(0.005)
print(reads, bad, len(inodes), families)
PY
read -r reads bad inodes families <"$work/atomic.out"
check metrics-replaced-whole "[ ${bad:-1} -eq 0 ] && [ ${inodes:-0} -ge 3 ] && [ ${reads:-0} -ge 20 ]" \
	"$reads reads over 3 s: $bad incomplete; $inodes files (inodes) seen; $((families + 1)) families"

cp "$tf/drfd.prom" "$R/drfd.prom"
"$promtool" check metrics <"$tf/drfd.prom" >"$work/promtool.out" 2>&1
rc=$?
check metrics-promtool "[ $rc -eq 0 ]" \
	"promtool check metrics: exit $rc, $(wc -l <"$tf/drfd.prom") lines $(head -c 300 "$work/promtool.out")"

port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$exporter" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$tf" >"$work/exporter.log" 2>&1 &
exp_pid=$!
scrape=$work/scrape.txt
wait_for "curl -sf http://127.0.0.1:$port/metrics >$scrape"
kill "$exp_pid" 2>/dev/null
wait "$exp_pid" 2>/dev/null
exp_pid=''
cp "$scrape" "$R/scrape.txt"
busy_use=$(value "$scrape" drfd_use_cores 'tenant="busy",resource="cpu",window="tick"')
idle_use=$(value "$scrape" drfd_use_cores 'tenant="idle",resource="cpu",window="tick"')
scrape_err=$(value "$scrape" node_textfile_scrape_error)
up=$(value "$scrape" drfd_up)
check metrics-node-exporter "[ '$up' = 1 ] && [ '$scrape_err' = 0 ]" \
	"scraped 127.0.0.1:$port: drfd_up ${up:-none}, node_textfile_scrape_error ${scrape_err:-none}, $(grep -c '^drfd_' "$scrape") drfd samples"
check metrics-cpu-use "$PY -c 'import sys; sys.exit(0 if float(\"${busy_use:-nan}\") > 0.5 and float(\"${idle_use:-nan}\") < 0.1 else 1)'" \
	"in the scrape: busy used ${busy_use:-none} cores over the tick, idle ${idle_use:-none}; allocations $(value "$scrape" drfd_allocation_cores 'tenant="busy",resource="cpu"') and $(value "$scrape" drfd_allocation_cores 'tenant="idle",resource="cpu"') of $(value "$scrape" drfd_capacity_cores 'resource="cpu"'); busy's use over the minute $(value "$scrape" drfd_use_cores 'tenant="busy",resource="cpu",window="1m"'); probes up $(value "$scrape" drfd_probes_up)"

pkill -f 'while :; do :; done'
kill "$pid"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
left=$(find "$tf" -mindepth 1 -printf '%f ')
# Stopped, drfd removes its file (a stale one would say drfd_up 1), and no temporary file is left.
check metrics-removed-at-stop "[ -z '$left' ]" "left in the directory: '$left'"
exit 0
