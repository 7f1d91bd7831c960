// SPDX-License-Identifier: MIT
/*
 * drfd's usage probes: what each tenant really uses of CPU and block IO,
 * measured where the kernel accounts it, attributed to the tenant whose cgroup
 * is the shallowest ancestor of the task's (block IO: of the cgroup the
 * request is charged to) with an entry in the counter maps. BTF tracepoints
 * (tp_btf: typed arguments, no trampoline), so they load on kernels without
 * fentry. Every map is preallocated: the scheduler's tracepoints run under
 * the run-queue lock, where allocating memory (which may wake kswapd) could
 * deadlock.
 *
 * - sched_stat_runtime: the run time the scheduler adds to a task
 *   (update_curr()), which is what cpu.stat's usage_usec sums;
 * - sched_wakeup, sched_wakeup_new, sched_switch: run-queue wait, from the
 *   moment a task becomes runnable (woken, or preempted while still
 *   runnable) to the moment it runs, in sum and as a log2 histogram;
 * - block_rq_issue, block_rq_complete: bytes read and written as they
 *   complete, requests and issue-to-completion latency once done. A request's cgroup is its first bio's
 *   (bio->bi_blkg), the one io.stat charges: for writeback, the cgroup that
 *   dirtied the pages.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "probe.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct drf_probe_cfg);
} drf_probe_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, DRF_PROBE_MAX_TENANTS);
	__type(key, __u64);
	__type(value, struct drf_probe_cpu);
} drf_probe_cpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DRF_PROBE_MAX_TENANTS);
	__type(key, __u64);
	__type(value, struct drf_probe_io);
} drf_probe_io SEC(".maps");

/*
 * Per task of a tenant, by pid (thread id): its tenant, as found for its
 * cgroup under drfd's generation of the tenant set, and since when it is
 * runnable. Entries go when their task exits; a full map loses figures,
 * nothing else. Not pinned: a restart finds the tenants again.
 */
struct task_entry {
	__u64 cgroup;   /* the id of the cgroup the tenant was found for */
	__u64 tenant;   /* 0: none (the task left its tenant) */
	__u64 runnable; /* since when it waits for a CPU (ns); 0: it does not */
	__u32 gen;      /* drf_probe_cfg.gen it was found under */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DRF_PROBE_MAX_TASKS);
	__type(key, __u32);
	__type(value, struct task_entry);
} tasks SEC(".maps");

/* Requests in flight, by address. */
struct rq_start {
	__u64 ts;
	__u64 tenant;
	__u32 op;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct rq_start);
} inflight SEC(".maps");

static __always_inline struct drf_probe_cfg *probe_config(void)
{
	__u32 zero = 0;
	struct drf_probe_cfg *c = bpf_map_lookup_elem(&drf_probe_cfg, &zero);

	return c && c->root_id ? c : 0;
}

/*
 * The id of cg's ancestor at level lvl (lvl <= cg's level). cgroup->ancestors[]
 * came with Linux 6.0; on older kernels the programs do not load, and drfd
 * measures from cgroup files alone (it says so). A fallback in the same
 * program is no way out: the compiler may hoist the other branch's CO-RE
 * access, which then fails to relocate on a reachable path.
 */
static __always_inline __u64 ancestor_id(struct cgroup *cg, __u32 lvl)
{
	struct cgroup *a = 0;

	bpf_probe_read_kernel(&a, sizeof(a), &cg->ancestors[lvl]);
	return a ? BPF_CORE_READ(a, kn, id) : 0;
}

/*
 * The tenant of cgroup cg: the cgroup id of its shallowest ancestor below
 * cgroup-root that has an entry in map; 0 if none.
 */
static __always_inline __u64 tenant_of(struct cgroup *cg, const struct drf_probe_cfg *c, void *map)
{
	__u32 level, root = c->root_level;

	if (!cg)
		return 0;
	level = (__u32)BPF_CORE_READ(cg, level);
	if (level <= root || root > 4096 || ancestor_id(cg, root) != c->root_id)
		return 0;
	for (__u32 d = 1; d <= DRF_PROBE_MAX_DEPTH; d++) {
		__u64 id;

		if (root + d > level)
			return 0;
		id = ancestor_id(cg, root + d);
		if (id && bpf_map_lookup_elem(map, &id))
			return id;
	}
	return 0;
}

#define PF_EXITING 0x00000004

/*
 * The entry of task p if it belongs to a tenant (kept up to date), else NULL.
 * An exiting task without an entry gets none (its last events fall through).
 */
static __always_inline struct task_entry *task_of(struct task_struct *p, const struct drf_probe_cfg *c)
{
	struct cgroup *cg = p->cgroups->dfl_cgrp;
	__u32 pid = (__u32)p->pid;
	__u64 id = cg->kn->id, t;
	struct task_entry *e = bpf_map_lookup_elem(&tasks, &pid);

	if (e) {
		if (e->cgroup != id || e->gen != c->gen) {
			/* Moved, or the tenants changed: found again, in place. */
			e->tenant = tenant_of(cg, c, &drf_probe_cpu);
			e->cgroup = id;
			e->gen = c->gen;
			e->runnable = 0;
		}
		return e->tenant ? e : 0;
	}
	t = tenant_of(cg, c, &drf_probe_cpu);
	/* An exiting task (PF_EXITING) is not added: nothing would delete its entry. */
	if (!t || (p->flags & PF_EXITING))
		return 0;
	{
		struct task_entry n = { .cgroup = id, .tenant = t, .gen = c->gen };

		bpf_map_update_elem(&tasks, &pid, &n, BPF_NOEXIST);
	}
	return bpf_map_lookup_elem(&tasks, &pid);
}

static __always_inline unsigned bucket(__u64 ns)
{
	__u64 us = ns / 1000;
	unsigned b = 0;

	for (int i = 0; i < DRF_PROBE_HIST - 1; i++) {
		if (!us)
			break;
		us >>= 1;
		b++;
	}
	/* Bounded for the verifier as well. */
	return b < DRF_PROBE_HIST ? b : DRF_PROBE_HIST - 1;
}

SEC("tp_btf/sched_stat_runtime")
int BPF_PROG(drf_runtime, struct task_struct *p, __u64 runtime)
{
	const struct drf_probe_cfg *c = probe_config();
	struct drf_probe_cpu *v;
	struct task_entry *e;

	if (!c)
		return 0;
	e = task_of(p, c);
	if (!e)
		return 0;
	v = bpf_map_lookup_elem(&drf_probe_cpu, &e->tenant);
	if (v)
		v->oncpu_ns += runtime;
	return 0;
}

static __always_inline void runnable_now(struct task_struct *p)
{
	const struct drf_probe_cfg *c = probe_config();
	struct task_entry *e;

	if (!c)
		return;
	e = task_of(p, c);
	if (e)
		e->runnable = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(drf_wakeup, struct task_struct *p)
{
	runnable_now(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(drf_wakeup_new, struct task_struct *p)
{
	runnable_now(p);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(drf_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct drf_probe_cpu *v;
	struct task_entry *e;
	__u64 now, delta;
	__u32 pid;

	/*
	 * Preempted, or switched out still runnable (TASK_RUNNING): it stays on the
	 * run queue, waiting from now on.
	 */
	if (preempt || prev->__state == 0)
		runnable_now(prev);
	pid = (__u32)next->pid;
	e = bpf_map_lookup_elem(&tasks, &pid);
	if (!e || !e->runnable)
		return 0;
	now = bpf_ktime_get_ns();
	delta = now > e->runnable ? now - e->runnable : 0;
	e->runnable = 0;
	v = bpf_map_lookup_elem(&drf_probe_cpu, &e->tenant);
	if (v) {
		v->runq_ns += delta;
		v->runq_count++;
		v->runq_hist[bucket(delta)]++;
	}
	return 0;
}

/*
 * The task is gone for good (its last reference dropped, after its last
 * event): its entry goes. sched_process_exit would be too early, the task
 * still runs and would be added again.
 */
SEC("tp_btf/sched_process_free")
int BPF_PROG(drf_free, struct task_struct *p)
{
	__u32 pid = (__u32)p->pid;

	bpf_map_delete_elem(&tasks, &pid);
	return 0;
}

/* REQ_OP_READ, REQ_OP_WRITE: the low 8 bits of cmd_flags. */
#define OP_READ 0
#define OP_WRITE 1

SEC("tp_btf/block_rq_issue")
int BPF_PROG(drf_rq_issue, struct request *rq)
{
	const struct drf_probe_cfg *c = probe_config();
	struct rq_start s;
	__u64 key = (__u64)rq;
	__u32 op;

	if (!c)
		return 0;
	op = BPF_CORE_READ(rq, cmd_flags) & 0xff;
	if (op != OP_READ && op != OP_WRITE)
		return 0;
	if (c->io_dev && bpf_core_field_exists(((struct request_queue *)0)->disk)) {
		struct gendisk *disk = BPF_CORE_READ(rq, q, disk);
		__u32 dev;

		if (!disk)
			return 0;
		dev = ((__u32)BPF_CORE_READ(disk, major) << 20) | (__u32)BPF_CORE_READ(disk, first_minor);
		if (dev != c->io_dev)
			return 0;
	}
	s.tenant = tenant_of(BPF_CORE_READ(rq, bio, bi_blkg, blkcg, css.cgroup), c, &drf_probe_io);
	if (!s.tenant)
		return 0;
	/* Issued again after a requeue: the same entry, a new start. */
	s.ts = bpf_ktime_get_ns();
	s.op = op;
	s.pad = 0;
	bpf_map_update_elem(&inflight, &key, &s, BPF_ANY);
	return 0;
}

/*
 * Bytes as they complete (a request may complete in parts); the request and
 * its latency once its last part is done.
 */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(drf_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns(), delta;
	struct drf_probe_io *v;
	struct rq_start *s;
	bool last;

	s = bpf_map_lookup_elem(&inflight, &key);
	if (!s)
		return 0;
	last = nr_bytes >= BPF_CORE_READ(rq, __data_len);
	v = bpf_map_lookup_elem(&drf_probe_io, &s->tenant);
	if (v) {
		if (s->op == OP_READ)
			__sync_fetch_and_add(&v->rbytes, nr_bytes);
		else
			__sync_fetch_and_add(&v->wbytes, nr_bytes);
	}
	if (!last)
		return 0;
	delta = now > s->ts ? now - s->ts : 0;
	if (v) {
		if (s->op == OP_READ)
			__sync_fetch_and_add(&v->rreqs, 1);
		else
			__sync_fetch_and_add(&v->wreqs, 1);
		__sync_fetch_and_add(&v->lat_ns, delta);
		__sync_fetch_and_add(&v->done, 1);
		__sync_fetch_and_add(&v->lat_hist[bucket(delta)], 1);
	}
	bpf_map_delete_elem(&inflight, &key);
	return 0;
}
