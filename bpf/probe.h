/* SPDX-License-Identifier: MIT */
/*
 * Types shared by the usage probes (probe.bpf.c) and drfd: the maps' keys and
 * values. Only __u32/__u64 and fixed arrays.
 *
 * The counter maps are keyed by the tenant's cgroup id (the inode number of
 * its cgroup directory). drfd inserts a zeroed entry per tenant; the programs
 * only add to entries that exist, and attribute an event to the tenant whose
 * cgroup is the shallowest ancestor of the task's (or, for block IO, of the
 * cgroup the kernel charges the request to) that has an entry.
 */
#ifndef DRF_BPF_PROBE_H
#define DRF_BPF_PROBE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* The maps' layout; a pinned map of another version is replaced. */
#define DRF_PROBE_ABI 3
/* Tenants the counter maps hold (preallocated; the CPU map per CPU). */
#define DRF_PROBE_MAX_TENANTS 4096
/* Tasks of tenants the probes keep a record of at once (their run-queue wait across CPUs). */
#define DRF_PROBE_MAX_TASKS 65536
/* How deep below cgroup-root a tenant's cgroup may be for the probes to find it. */
#define DRF_PROBE_MAX_DEPTH 8
/* log2 buckets of microseconds: bucket b holds [2^(b-1), 2^b) us, bucket 0 under 1 us. */
#define DRF_PROBE_HIST 24

/* drf_probe_cfg (an array of one): what drfd tells the programs. */
struct drf_probe_cfg {
	__u32 abi;        /* DRF_PROBE_ABI of the drfd that wrote it */
	__u32 root_level; /* the level of cgroup-root in the cgroup2 hierarchy */
	__u64 root_id;    /* cgroup-root's cgroup id; 0: the programs count nothing */
	__u32 io_dev;     /* the kernel's dev_t (major << 20 | minor) of io-device; 0: every disk */
	__u32 gen;        /* bumped when tenants come or go: the tasks' cached tenants expire */
	__u32 code;       /* a hash of the programs' object: a drfd adopts only its own code */
	__u32 pad;
};

/* drf_probe_cpu (per CPU): the scheduler's events of a tenant. */
struct drf_probe_cpu {
	__u64 oncpu_ns;   /* run time, as the scheduler accounts it (se.sum_exec_runtime) */
	__u64 runq_ns;    /* runnable, waiting for a CPU: from queued (woken, preempted) to on */
	__u64 runq_count;
	__u64 runq_hist[DRF_PROBE_HIST];
};

/* drf_probe_io: the block requests of a tenant (atomic adds). */
struct drf_probe_io {
	__u64 rbytes, wbytes; /* bytes of read and write requests issued to the device */
	__u64 rreqs, wreqs;
	__u64 lat_ns;         /* issue to completion, summed over completed requests */
	__u64 done;
	__u64 lat_hist[DRF_PROBE_HIST];
};

#endif
