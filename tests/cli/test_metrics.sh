#!/usr/bin/env bash
# drfd's Prometheus metrics from a real drfd on the host that runs the tests:
# drfd in the foreground with two tenants, busy (a busy loop, through drfctl
# exec) and idle, and metrics-file set. The host's cgroup v2 may offer no
# controller at all (a hybrid host, like the machines this project is built
# on), so the config shares only the network, of a veth pair in a network
# namespace of the test's own, which needs none; every cgroup v2 has cpu.stat,
# so the tenants' CPU counters are the kernel's figures all the same.
# tests/vm/t_metrics.sh does the same on a kernel with every controller.
#
# Checks: the file appears, 0644; it is replaced whole (every read of it, in a
# loop over a few ticks, is complete; its inode changes); `promtool check
# metrics` passes it, and the socket's `metrics` answer; the busy tenant's CPU
# counter grows and trails cpu.stat by at most a second, the idle one's stays
# under 0.05 s;
# the allocation in bytes per second; node-exporter's textfile collector on
# loopback serves it with node_textfile_scrape_error 0; no temporary file is
# left; a metrics-file in a directory that does not exist is said once and
# drfd keeps running; a reload that sets it writes it, one that drops it
# removes the file; drfctl reload's exit status is the reload's verdict (0 in
# force, 2 refused with the reason on stderr: an io-device added needs a
# restart; 1 for a user other than root, whom the socket turns away), and
# status, the metrics and drfctl plan (against the running drfd) say it. The
# file has metrics-detail = basic's families (the default), the socket's
# answer all of them; a reload to full is written from the next tick on.
# metrics-listen (on the namespace's loopback): GET /metrics answers 200 with
# the exposition's content type, passes promtool, and is the metrics-file's
# text of the same tick (but for its first line); 404 and 405; a reload moves
# it to [::1]; 2,000 connections held open from 250 addresses do not stop the
# ticks nor a scrape meanwhile, and a scrape gets through within a second once
# they go; 32 slowloris connections are shut at the 10 s deadline, a scrape
# served meanwhile; a real Prometheus scrapes it (up 1,
# drfd_up 1 from its query API); an address in use: drfd exits 9 and leaves
# no cgroup-root.
#   DRFD=... DRFCTL=... tests/cli/test_metrics.sh
# promtool, prometheus and node-exporter: deploy/install-deps.sh unpacks them into
# /opt/drfd-test-tools/bin (DRF_TEST_TOOLS), else from PATH.
set -u
drfd=${DRFD:?set DRFD to the drfd binary}
drfctl=${DRFCTL:?set DRFCTL to the drfctl binary}
tools=${DRF_TEST_TOOLS:-/opt/drfd-test-tools/bin}
pass=0 failed=0
ok() { pass=$((pass + 1)); echo "PASS $1: $2"; }
ko() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
check() { if eval "$2"; then ok "$1" "$3"; else ko "$1" "$3"; fi; }
skip_all() {
	echo "SKIP metrics on the host: $1"
	if [ "${CI:-}" = true ]; then
		echo "FAIL metrics on the host: CI must run this test"
		echo "0 passed, 1 failed"
		exit 1
	fi
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
}

[ "$(id -u)" -eq 0 ] || skip_all "needs root (a network namespace, cgroups, BPF)"
promtool=$(PATH=$tools:$PATH command -v promtool) ||
	skip_all "no promtool (deploy/install-deps.sh unpacks it into $tools)"
exporter=$(PATH=$tools:$PATH command -v prometheus-node-exporter node_exporter | head -1)
[ -n "$exporter" ] || skip_all "no prometheus-node-exporter (deploy/install-deps.sh unpacks it)"
prometheus=$(PATH=$tools:$PATH command -v prometheus) ||
	skip_all "no prometheus (deploy/install-deps.sh unpacks it into $tools)"
for c in ip nsenter python3 curl; do
	command -v $c >/dev/null || skip_all "$c is missing (deploy/install-deps.sh installs it)"
done

# The alerting rules the package ships (deploy/prometheus/drfd-alerts.yml):
# promtool takes them, their unit test (tests/prometheus/drfd-alerts.test.yml:
# each alert fires on its fault and not on the healthy series) passes, and every
# drfd_* name they use is a family drfd emits.
top=$(cd "$(dirname "$0")/../.." && pwd)
rules=$top/deploy/prometheus/drfd-alerts.yml
out=$("$promtool" check rules "$rules" 2>&1)
check alert-rules-check "[ $? -eq 0 ]" "promtool check rules: $(echo "$out" | tail -1 | tr -s ' ')"
out=$(cd "$top/tests/prometheus" && "$promtool" test rules drfd-alerts.test.yml 2>&1)
check alert-rules-test "[ $? -eq 0 ]" "promtool test rules: $(echo "$out" | grep -E 'SUCCESS|FAILED' | tail -1 | tr -s ' ')"
used=$(grep -v '^ *#' "$rules" | grep -oE 'drfd_[a-z_]+' | sort -u)
stray=$(for m in $used; do grep -q "\"$m\"" "$top/agent/observe/metrics.c" || echo "$m"; done | tr '\n' ' ')
check alert-rules-names "[ -n '$used' ] && [ -z '$stray' ]" \
	"$(echo "$used" | wc -l) drfd_* names in the rules; not emitted by drfd: [${stray% }]"
# bpffs, mounted as drfd-tenants.service does where nothing has yet.
# shellcheck source=tests/lib/bpffs.sh
. "$(dirname "$0")/../lib/bpffs.sh"
ensure_bpffs || skip_all "$bpffs_why"
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$mnt" ] || skip_all "no cgroup2 mount"

id=$$
ns=drfm$id dev=dm$id
root=$mnt/drfmetrics$id
work=$(mktemp -d)
tf=$work/textfile
mkdir "$tf"
drfd_pid='' busy_pid='' exp_pid='' prom_pid='' flood_pid=''

stop() { # PID
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
# The processes in a tenant's cgroup: this test's.
kill_tenant() { # TENANT
	[ -f "$root/$1/cgroup.procs" ] && xargs -r kill -9 <"$root/$1/cgroup.procs" 2>/dev/null
}
listing() { find "$tf" -mindepth 1 -printf '%f '; }
cleanup() {
	stop "$flood_pid"
	stop "$prom_pid"
	stop "$busy_pid"
	stop "$exp_pid"
	stop "$drfd_pid"
	kill_tenant busy
	kill_tenant idle
	sleep 0.2
	[ -f "$work/drfd.conf" ] && nsenter --net="/run/netns/$ns" "$drfctl" net-reset \
		-c "$work/drfd.conf" >/dev/null 2>&1
	ip netns del "$ns" 2>/dev/null
	for d in "$root"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
	rmdir "$root" 2>/dev/null
	# drfd's usage probes stay for a restart to adopt: this root is gone, so they go too.
	probes=${root#/}
	rm -rf "/sys/fs/bpf/drfd-probes/${probes//\//-}"
	if [ -n "${METRICS_KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

if ! { ip netns add "$ns" && ip -n "$ns" link add "$dev" type veth peer name "p$dev" &&
	ip -n "$ns" link set "$dev" up && ip -n "$ns" link set "p$dev" up &&
	ip -n "$ns" link set lo up; }; then
	skip_all "cannot make a network namespace with a veth pair"
fi

write_conf() { # METRICS-FILE-LINE [CAPACITY-LINES]
	cat >"$work/drfd.conf" <<CONF
[agent]
cgroup-root = $root
state-dir = $work/state
status-socket = $work/drfd.sock
interval = 200ms
$1
[capacity]
net-device = $dev
net-rate = 100mbit
${2:-}
[tenant busy]
[tenant idle]
CONF
}

start_drfd() {
	nsenter --net="/run/netns/$ns" "$drfd" -c "$work/drfd.conf" --foreground \
		>>"$work/drfd.log" 2>&1 &
	drfd_pid=$!
	local _
	for _ in $(seq 100); do
		kill -0 "$drfd_pid" 2>/dev/null || return 1
		[ -S "$work/drfd.sock" ] && return 0
		sleep 0.1
	done
	return 1
}

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

wait_for() { # SHELL-CONDITION, up to 10 s
	local _
	for _ in $(seq 100); do eval "$1" && return 0; sleep 0.1; done
	return 1
}

write_conf "metrics-file = $tf/drfd.prom"
start_drfd || skip_all "drfd does not run here: $(tail -3 "$work/drfd.log")"

wait_for "[ -f $tf/drfd.prom ]"
check file-appears "[ \"\$(stat -c %a $tf/drfd.prom 2>/dev/null)\" = 644 ]" \
	"$tf/drfd.prom, mode $(stat -c %a "$tf/drfd.prom" 2>/dev/null)"

"$drfctl" exec -c "$work/drfd.conf" busy -- sh -c 'while :; do :; done' &
busy_pid=$!
sleep 1

# Read it over and over for 2 s (10 ticks): every read is whole, and the file
# is a new one now and then (renamed over), never rewritten in place.
python3 - "$tf/drfd.prom" >"$work/atomic.out" <<'PY'
import os, sys, time
path = sys.argv[1]
families = None
reads = bad = 0
inodes = set()
end = time.time() + 2
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
    time.sleep(0.002)
print(reads, bad, len(inodes), families)
PY
read -r reads bad inodes families <"$work/atomic.out"
check replaced-whole "[ ${bad:-1} -eq 0 ] && [ ${inodes:-0} -ge 3 ] && [ ${reads:-0} -ge 50 ]" \
	"$reads reads over 2 s: $bad incomplete; $inodes files (inodes) seen; $((families + 1)) families"

"$promtool" check metrics <"$tf/drfd.prom" >"$work/promtool.out" 2>&1
rc=$?
check promtool-file "[ $rc -eq 0 ]" "promtool check metrics: exit $rc $(head -c 300 "$work/promtool.out")"

python3 - "$work/drfd.sock" >"$work/sock.out" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b"metrics\n")
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
sys.stdout.write(data.decode())
PY
tail -n +2 "$work/sock.out" >"$work/sock.prom"
"$promtool" check metrics <"$work/sock.prom" >"$work/promtool2.out" 2>&1
rc=$?
up=$(value "$work/sock.prom" drfd_up)
check promtool-socket "[ $rc -eq 0 ] && [ \"\$(head -1 $work/sock.out)\" = 'drfd-metrics 1' ] && [ '$up' = 1 ]" \
	"the socket's 'metrics' answer: '$(head -1 "$work/sock.out")', drfd_up ${up:-none}, promtool exit $rc $(head -c 300 "$work/promtool2.out")"

# metrics-detail = basic, the default: the file has basic's families, not the
# others; the socket's answer is full whatever the config (drfctl top reads it).
families() { grep -c "^# TYPE $2 " "$1"; }
check detail-basic "[ $(families "$tf/drfd.prom" drfd_allocation_bytes_per_second) = 1 ] && [ $(families "$tf/drfd.prom" drfd_declared_demand_bytes_per_second) = 0 ] && [ $(families "$work/sock.prom" drfd_declared_demand_bytes_per_second) = 1 ]" \
	"$(grep -c '^# TYPE ' "$tf/drfd.prom") families in the file, $(grep -c '^# TYPE ' "$work/sock.prom") in the socket's answer"

# Kernel figures: the busy tenant's CPU counter grows (2 s of a busy loop) and
# trails the kernel's own cpu.stat by at most a tick or so; the idle one's is 0.
prom=$tf/drfd.prom
b0=$(value "$prom" drfd_cpu_usage_seconds_total 'tenant="busy"')
t0=$(date +%s.%N)
sleep 2
b1=$(value "$prom" drfd_cpu_usage_seconds_total 'tenant="busy"')
k1=$(awk '$1 == "usage_usec" { printf "%.6f", $2 / 1e6 }' "$root/busy/cpu.stat")
t1=$(date +%s.%N)
i1=$(value "$prom" drfd_cpu_usage_seconds_total 'tenant="idle"')
rate=$(awk -v a="${b0:-0}" -v b="${b1:-0}" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.3f", (b - a) / (t1 - t0) }')
check cpu-figures "awk -v r=$rate -v b='${b1:-x}' -v k='${k1:-0}' -v i='${i1:-x}' 'BEGIN {
	exit !(r > 0.1 && b != \"x\" && b <= k + 0.001 && k - b < 1 && i != \"x\" && i < 0.05) }'" \
	"busy used $rate cores over 2 s (counter ${b0:-none} -> ${b1:-none} s; cpu.stat then ${k1:-none} s), idle ${i1:-none} s in all"
alloc=$(value "$prom" drfd_allocation_bytes_per_second 'tenant="busy",resource="net-egress"')
cap=$(value "$prom" drfd_capacity_bytes_per_second 'resource="net-egress"')
check bytes-per-second "[ '$alloc' = 6250000 ] && [ '$cap' = 12500000 ]" \
	"busy's net-egress allocation $alloc bytes/s of $cap: half of 100mbit"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$exporter" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$tf" >"$work/exporter.log" 2>&1 &
exp_pid=$!
scrape=$work/scrape.txt
wait_for "curl -sf http://127.0.0.1:$port/metrics >$scrape"
stop "$exp_pid"
exp_pid=''
scrape_err=$(value "$scrape" node_textfile_scrape_error)
up=$(value "$scrape" drfd_up)
cpu=$(value "$scrape" drfd_cpu_usage_seconds_total 'tenant="busy"')
check node-exporter "[ '$up' = 1 ] && [ '$scrape_err' = 0 ] && [ -n '$cpu' ]" \
	"scraped 127.0.0.1:$port: drfd_up ${up:-none}, node_textfile_scrape_error ${scrape_err:-none}, busy's cpu ${cpu:-none} s, $(grep -c '^drfd_' "$scrape") drfd samples"

stop "$busy_pid"
busy_pid=''
kill_tenant busy
stop "$drfd_pid"
drfd_pid=''
# Stopped, drfd removes its file (a stale one would say drfd_up 1), and no temporary file is left.
check stop-removes-file "[ -z \"\$(listing)\" ]" "left in the directory: '$(listing)'"

# Failures are said once and drfd goes on; reloads write and remove the file.
rm -f "$tf/drfd.prom"
: >"$work/drfd.log"
write_conf "metrics-file = $work/none/drfd.prom"
if start_drfd; then
	sleep 1.5
	n=$(grep -c "cannot write metrics-file '$work/none/drfd.prom'" "$work/drfd.log")
	check failure-said-once "[ $n -eq 1 ] && kill -0 $drfd_pid" \
		"over 7 ticks: said $n times; drfd still running"
	write_conf "metrics-file = $tf/drfd.prom"
	kill -HUP "$drfd_pid"
	wait_for "[ -f $tf/drfd.prom ]"
	check reload-writes "[ -f $tf/drfd.prom ] && grep -q 'metrics-file .* is written again' $work/drfd.log" \
		"after SIGHUP with metrics-file = $tf/drfd.prom"
	write_conf "metrics-file = $tf/drfd.prom
metrics-detail = full"
	kill -HUP "$drfd_pid"
	wait_for "grep -q '^# TYPE drfd_declared_demand_bytes_per_second ' $tf/drfd.prom"
	check reload-detail "grep -q '^# TYPE drfd_declared_demand_bytes_per_second gauge' $tf/drfd.prom && kill -0 $drfd_pid" \
		"after SIGHUP with metrics-detail = full: $(grep -c '^# TYPE ' "$tf/drfd.prom") families in the file"
	write_conf ""
	kill -HUP "$drfd_pid"
	wait_for "[ ! -e $tf/drfd.prom ]"
	check reload-removes "[ ! -e $tf/drfd.prom ] && kill -0 $drfd_pid" \
		"after SIGHUP without metrics-file: '$(listing)'"

	# drfctl reload: the verdict is its exit status, with the reason on stderr;
	# status and metrics keep the last one; drfctl plan says what needs a restart.
	reload() { "$drfctl" reload -c "$work/drfd.conf" >"$work/reload.out" 2>"$work/reload.err"; }
	field() { # PYTHON-EXPRESSION of the status s
		"$drfctl" status --json -c "$work/drfd.conf" 2>/dev/null |
			python3 -c 'import json,sys; s=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
	}
	ask_metrics() { # the socket's metrics, without their first line, into sock.prom
		python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"metrics\n")
sys.stdout.write(b"".join(iter(lambda: s.recv(65536), b"")).decode())' "$work/drfd.sock" |
			tail -n +2 >"$work/sock.prom"
	}
	write_conf "verify-period = 20s"
	reload
	rc=$?
	check reload-ok "[ $rc -eq 0 ] && grep -q '^reloaded ' $work/reload.out && [ \"\$(field 's[\"last_reload\"][\"successful\"]')\" = True ]" \
		"drfctl reload of a good config: exit $rc, '$(cat "$work/reload.out")'"
	write_conf "verify-period = 20s" "io-device = 7:0
io-read-bps = 10M"
	reload
	rc=$?
	reason=$(field 's["last_reload"]["reason"]')
	check reload-refused "[ $rc -eq 2 ] && grep -q \"io-device added ('7:0').*needs a restart\" $work/reload.err && [[ \"\$reason\" == *\"io-device added ('7:0')\"* ]] && [ \"\$(field 's[\"last_reload\"][\"successful\"]')\" = False ]" \
		"drfctl reload with an io-device added: exit $rc, stderr '$(cat "$work/reload.err")', status reason '$reason'"
	"$drfctl" status -c "$work/drfd.conf" >"$work/status.txt" 2>&1
	check reload-refused-text "grep -q 'last reload.*REFUSED.*io-device added' $work/status.txt" \
		"drfctl status says why the last reload was refused"
	ask_metrics
	check reload-metric-0 "[ \"\$(value $work/sock.prom drfd_config_last_reload_successful)\" = 0 ] && $promtool check metrics <$work/sock.prom >/dev/null 2>&1" \
		"metrics: drfd_config_last_reload_successful $(value "$work/sock.prom" drfd_config_last_reload_successful), promtool passes them"
	"$drfctl" plan -c "$work/drfd.conf" >"$work/plan.out" 2>&1
	rc=$?
	check plan-needs-restart "[ $rc -eq 0 ] && grep -q \"against the running drfd (pid $drfd_pid)\" $work/plan.out && grep -q \"io-device added ('7:0'): needs a restart\" $work/plan.out" \
		"drfctl plan against the running drfd: exit $rc, '$(grep -A2 'against the running' "$work/plan.out" | tr '\n' ' ')'"
	"$drfctl" plan --json -c "$work/drfd.conf" >"$work/plan.json" 2>&1
	check plan-json-running "python3 $(dirname "$0")/check_json.py <$work/plan.json && python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[\"running\"]; sys.exit(not (r[\"pid\"] == $drfd_pid and [(c[\"key\"], c[\"in_force\"], c[\"new\"], c[\"needs_restart\"]) for c in r[\"start_only_changes\"]] == [(\"io-device\", None, \"7:0\", True)]))' $work/plan.json" \
		"drfctl plan --json: running.start_only_changes names io-device"
	# Asked by someone other than root: the socket (0600) turns them away, drfd reloads nothing.
	n0=$(field 's["reloads"] + s["reloads_refused"]')
	setpriv --reuid=65534 --regid=65534 --clear-groups "$drfctl" reload --socket "$work/drfd.sock" \
		>/dev/null 2>"$work/reload.err"
	rc=$?
	check reload-not-root "[ $rc -eq 1 ] && [ \"\$(field 's[\"reloads\"] + s[\"reloads_refused\"]')\" = $n0 ]" \
		"drfctl reload as uid 65534: exit $rc, '$(cat "$work/reload.err")'"
	write_conf "verify-period = 20s"
	reload
	rc=$?
	ask_metrics
	check reload-ok-again "[ $rc -eq 0 ] && [ \"\$(value $work/sock.prom drfd_config_last_reload_successful)\" = 1 ] && [ -n \"\$(value $work/sock.prom drfd_config_last_reload_success_timestamp_seconds)\" ]" \
		"a good config again: exit $rc, successful $(value "$work/sock.prom" drfd_config_last_reload_successful)"
	"$drfctl" plan -c "$work/drfd.conf" >"$work/plan.out" 2>&1
	check plan-no-restart "grep -q 'no start-only key differs' $work/plan.out" \
		"drfctl plan of the config in force: nothing needs a restart"
	stop "$drfd_pid"
	drfd_pid=
else
	ko failure-said-once "drfd did not start: $(tail -3 "$work/drfd.log")"
fi

# metrics-listen, on the namespace's own loopback (nothing else reaches it).
inns() { nsenter --net="/run/netns/$ns" "$@"; }
free_port() {
	inns python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
hport=$(free_port)
rm -f "$tf/drfd.prom"
: >"$work/drfd.log"
write_conf "metrics-file = $tf/drfd.prom
metrics-listen = 127.0.0.1:$hport"
if start_drfd; then
	wait_for "[ -f $tf/drfd.prom ]"
	code=$(inns curl -s -o "$work/http.prom" -D "$work/http.head" -w '%{http_code}' \
		"http://127.0.0.1:$hport/metrics")
	ctype=$(tr -d '\r' <"$work/http.head" | awk -F': ' 'tolower($1) == "content-type" { print $2 }')
	"$promtool" check metrics <"$work/http.prom" >"$work/promtool3.out" 2>&1
	rc=$?
	check http-scrape "[ '$code' = 200 ] && [ '$ctype' = 'text/plain; version=0.0.4; charset=utf-8' ] && [ $rc -eq 0 ] && [ '$(value "$work/http.prom" drfd_up)' = 1 ]" \
		"GET http://127.0.0.1:$hport/metrics: $code, Content-Type '$ctype', promtool exit $rc $(head -c 300 "$work/promtool3.out")"
	# The same tick's text as the file: the file read before and after the scrape, and
	# compared when it did not change in between (the ticks are 200 ms apart).
	same=0 differ=0
	for _ in $(seq 20); do
		tail -n +2 "$tf/drfd.prom" >"$work/before"
		inns curl -s -o "$work/http2.prom" "http://127.0.0.1:$hport/metrics"
		tail -n +2 "$tf/drfd.prom" >"$work/after"
		cmp -s "$work/before" "$work/after" || continue
		if cmp -s "$work/before" "$work/http2.prom"; then same=$((same + 1)); else differ=$((differ + 1)); fi
	done
	fam_file=$(grep '^# TYPE ' "$tf/drfd.prom" | sort | md5sum)
	fam_http=$(grep '^# TYPE ' "$work/http2.prom" | sort | md5sum)
	check http-same-as-file "[ $same -ge 1 ] && [ $differ -eq 0 ] && [ '$fam_file' = '$fam_http' ]" \
		"of 20 scrapes, $same while the file stayed the same tick: byte for byte the file's text ($differ differed); $(grep -c '^# TYPE ' "$work/http2.prom") families, the file's"
	# gzip for a scraper that asks: the same tick's text, gunzip'ed by curl.
	gsame=0 gdiffer=0
	for _ in $(seq 20); do
		tail -n +2 "$tf/drfd.prom" >"$work/before"
		inns curl -s -H 'Accept-Encoding: gzip' -D "$work/gz.head" -o "$work/http.gz" \
			"http://127.0.0.1:$hport/metrics"
		tail -n +2 "$tf/drfd.prom" >"$work/after"
		cmp -s "$work/before" "$work/after" || continue
		if gzip -dc <"$work/http.gz" | cmp -s "$work/before" -; then
			gsame=$((gsame + 1))
		else
			gdiffer=$((gdiffer + 1))
		fi
	done
	genc=$(tr -d '\r' <"$work/gz.head" | awk -F': ' 'tolower($1) == "content-encoding" { print $2 }')
	check http-gzip "[ $gsame -ge 1 ] && [ $gdiffer -eq 0 ] && [ '$genc' = gzip ]" \
		"Accept-Encoding: gzip: Content-Encoding '$genc'; of 20 scrapes, $gsame gunzip to the file's text of their tick ($gdiffer did not); $(stat -c %s "$work/http.gz") bytes for $(stat -c %s "$work/after")"
	c404=$(inns curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$hport/")
	c405=$(inns curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$hport/metrics")
	chead=$(inns curl -s -o /dev/null -w '%{http_code}' -I "http://127.0.0.1:$hport/metrics")
	check http-codes "[ '$c404' = 404 ] && [ '$c405' = 405 ] && [ '$chead' = 200 ]" \
		"GET / $c404, POST /metrics $c405, HEAD /metrics $chead"

	# A flood: 2,000 connections held open, sending nothing, from 250 addresses of the
	# namespace's loopback (8 each: the per-address cap), as one user can. The ticks go
	# on; a scrape from 127.0.0.1 meanwhile is served (the oldest held ones are shut
	# for it); once the flood goes, a scrape is served within a second.
	inns python3 - "$hport" 2000 >"$work/flood.out" 2>&1 <<'PY' &
import resource, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
held = []
for i in range(int(sys.argv[2])):
    s = socket.socket()
    s.setblocking(False)
    s.bind(("127.0.%d.%d" % (1 + i // 2000, 1 + (i // 8) % 250), 0))
    try:
        s.connect(("127.0.0.1", int(sys.argv[1])))
    except BlockingIOError:
        pass
    held.append(s)
print("holding", len(held), flush=True)
time.sleep(600)
PY
	flood_pid=$!
	wait_for "grep -q holding $work/flood.out"
	t0=$(value "$tf/drfd.prom" drfd_ticks_total)
	during=$(inns curl -s -o /dev/null --max-time 5 -w '%{http_code}' "http://127.0.0.1:$hport/metrics")
	wait_for "[ \$(value $tf/drfd.prom drfd_ticks_total) -ge $((${t0:-0} + 10)) ]"
	t1=$(value "$tf/drfd.prom" drfd_ticks_total)
	stop "$flood_pid"
	flood_pid=''
	gone=$EPOCHREALTIME
	after=$(inns curl -s -o /dev/null --max-time 1 -w '%{http_code}' "http://127.0.0.1:$hport/metrics")
	took=$(awk -v a="$gone" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
	check http-flood "[ \"\${t1:-0}\" -ge $((${t0:-0} + 10)) ] && [ '$during' = 200 ] && [ '$after' = 200 ] && kill -0 $drfd_pid" \
		"$(cat "$work/flood.out") connections held: ticks ${t0:-none} -> ${t1:-none}; a scrape during it: $during; once they went, a scrape: $after after $took s (1 s allowed)"

	# A slowloris: 32 connections from 32 addresses, each sending a header line every
	# 2 s and never ending its request. A scrape meanwhile is served; each is shut at
	# the deadline of an exchange, 10 s from its start (drfd(8)): not before, and within
	# 1.5 s after (the loop's turn, the client's look every 0.25 s).
	inns python3 - "$hport" >"$work/slow.out" 2>&1 <<'PY' &
import socket, sys, time
conns = []
for i in range(32):
    s = socket.socket()
    s.bind(("127.0.2.%d" % (1 + i), 0))
    s.connect(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: drfd\r\n")
    conns.append([s, time.monotonic(), None])
print("sending", len(conns), flush=True)
# A header line every 2 s; whether drfd shut it, every 0.25 s; 30 s at most.
n = 0
late = 0.0  # the most this loop woke after its 0.25 s: how late it may see a shut
while any(c[2] is None for c in conns) and n < 120:
    t = time.monotonic()
    time.sleep(0.25)
    late = max(late, time.monotonic() - t - 0.25)
    n += 1
    for c in conns:
        if c[2] is not None:
            continue
        try:
            if n % 8 == 0:
                c[0].sendall(b"X-Slow-%d: yes\r\n" % n)
            c[0].setblocking(False)
            try:
                if c[0].recv(1) == b"":
                    c[2] = time.monotonic() - c[1]
            except BlockingIOError:
                pass
            c[0].setblocking(True)
        except OSError:
            c[2] = time.monotonic() - c[1]
shut = [c[2] for c in conns if c[2] is not None]
print("shut", len(shut), "min %.2f max %.2f late %.2f" % (min(shut), max(shut), late) if shut else "", flush=True)
PY
	slow_pid=$!
	wait_for "grep -q sending $work/slow.out"
	during=$(inns curl -s -o /dev/null --max-time 5 -w '%{http_code}' "http://127.0.0.1:$hport/metrics")
	wait "$slow_pid"
	read -r _ nshut _ smin _ smax _ slate < <(grep '^shut' "$work/slow.out")
	check http-slowloris "[ '$during' = 200 ] && [ '${nshut:-0}' = 32 ] && awk 'BEGIN { exit !(${smin:-0} >= 9.9 && ${smax:-99} <= 11.25 + ${slate:-99}) }'" \
		"32 connections sending a header line every 2 s: a scrape meanwhile: $during; shut by drfd: ${nshut:-0} of 32, after ${smin:-?}-${smax:-?} s (the deadline 10 s from the connection, 1 s for drfd's turn, the client's look every 0.25 s and its lateness ${slate:-?} s)"

	# A real Prometheus scrapes it, every second; its query API says up and drfd_up.
	pport=$(free_port)
	mkdir -p "$work/prometheus"
	cat >"$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: drfd
    static_configs:
      - targets: ['127.0.0.1:$hport']
YML
	inns "$prometheus" --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus" \
		--web.listen-address="127.0.0.1:$pport" >"$work/prometheus.log" 2>&1 &
	prom_pid=$!
	q() { inns curl -sG --data-urlencode "query=$1" "http://127.0.0.1:$pport/api/v1/query"; }
	got() { q "$1" | python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null; }
	for _ in $(seq 300); do
		[ "$(got 'up{job="drfd"}')" = 1 ] && [ "$(got 'drfd_up{job="drfd"}')" = 1 ] && break
		sleep 0.1
	done
	pup=$(got 'up{job="drfd"}') pdrfd=$(got 'drfd_up{job="drfd"}')
	palloc=$(got 'drfd_allocation_bytes_per_second{job="drfd",tenant="busy",resource="net-egress"}')
	check prometheus-scrape "[ '$pup' = 1 ] && [ '$pdrfd' = 1 ] && [ '$palloc' = 6250000 ]" \
		"Prometheus $("$prometheus" --version 2>&1 | awk 'NR == 1 { print $3 }') scraping 127.0.0.1:$hport: up ${pup:-none}, drfd_up ${pdrfd:-none}, busy's net-egress allocation ${palloc:-none}"
	stop "$prom_pid"
	prom_pid=''

	# A reload moves it to IPv6 loopback; the old address no longer answers.
	write_conf "metrics-file = $tf/drfd.prom
metrics-listen = [::1]:$hport"
	kill -HUP "$drfd_pid"
	wait_for "inns curl -sfg -o /dev/null 'http://[::1]:$hport/metrics'"
	c6=$(inns curl -sg -o /dev/null -w '%{http_code}' "http://[::1]:$hport/metrics")
	c4=$(inns curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$hport/metrics")
	check http-reload-ipv6 "[ '$c6' = 200 ] && [ '$c4' = 000 ] && kill -0 $drfd_pid" \
		"after SIGHUP with metrics-listen = [::1]:$hport: [::1] $c6, 127.0.0.1 $c4 (000: refused)"
	stop "$drfd_pid"
	drfd_pid=''
else
	ko http-scrape "drfd did not start: $(tail -3 "$work/drfd.log")"
fi

# An address in use: drfd does not start (exit 9), and leaves nothing behind.
inns python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); print("bound", flush=True); time.sleep(600)' \
	"$hport" >"$work/holder.out" 2>&1 &
flood_pid=$!
wait_for "grep -q bound $work/holder.out"
write_conf "metrics-listen = 127.0.0.1:$hport"
# (bounded: a drfd that started after all would run until killed)
inns timeout 60 "$drfd" -c "$work/drfd.conf" --foreground >"$work/inuse.log" 2>&1
rc=$?
stop "$flood_pid"
flood_pid=''
check http-in-use "[ $rc -eq 9 ] && ! grep -q ' tick 1: ' $work/inuse.log && grep -q 'metrics-listen = 127.0.0.1:$hport' $work/inuse.log" \
	"port held by another process: exit $rc, $(grep -c ' tick 1: ' "$work/inuse.log") ticks: $(grep -m1 metrics-listen "$work/inuse.log")"

echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
