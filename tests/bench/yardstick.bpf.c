// SPDX-License-Identifier: MIT
/*
 * The yardstick of the usage probes' cost per event (tests/bench/probe_bench.sh):
 * programs that do nothing, on the probes' two hot tracepoints. What the
 * kernel's run-time statistics count for them (the call into the program
 * and the statistics' own two clock reads) is in every program's figure;
 * what the probes cost beyond it is their own work.
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(drf_empty_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(drf_empty_tick, struct hrtimer *timer)
{
	return 0;
}
