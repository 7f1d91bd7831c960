#!/usr/bin/env bash
# Network shaping on Debian's kernel: tests/net/net.sh (iperf3 between two
# network namespaces, drfd shaping one side) in the VM, at a fifth of the host
# test's rates, for the emulated CPU.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
vm_setup
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
modprobe -q veth
modprobe -q sch_htb
modprobe -q sch_fq_codel
modprobe -q bridge

diagram <<'DIAGRAM'
netns A (drfd, va) <--veth--> netns B (iperf3 servers), 198.18.7.1 <-> 198.18.7.2
/sys/fs/cgroup/drfnetPID/{a,b,c}   tenants, their iperf3 clients via drfctl exec
expect (rates x 0.2): limit mode goodput = rate x 1448/1514 within 3%; share mode
splits 1:2:3 within 5%, an idle tenant's share is taken within 2 s; the default
class carries traffic of no tenant; a restart adopts the qdisc, classes and pinned
programs; the ingress policer holds a tenant near its rate; ticks on a tree as
planned write nothing (fq_codel's times read back in the kernel's units)
DIAGRAM

NET_RESULTS=$R/results.txt NET_TIMES=$R/times.txt NET_KEEP=$R NET_HOST_VCPU=$HOST_VCPU DRFD=$DRFD DRFCTL=$DRFCTL "$DRF_TOP/tests/net/net.sh" 0.2 \
	limit2 share steady default restart counters ingress rootgone bridge devchange foreign >"$R/net.log" 2>&1
exit 0
