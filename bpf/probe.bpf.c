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
 * The scheduler's events are the hot path (a context switch costs a few
 * microseconds), so the CPU figures are read from what the kernel keeps per
 * task anyway, at one event per context switch:
 * - sched_switch: the run time of the task leaving the CPU since it came on
 *   (se.sum_exec_runtime, which is what cpu.stat's usage_usec sums, RT tasks
 *   included), and the run-queue wait that ends for the task coming on: from
 *   the moment the kernel queued it (woken, or preempted while still
 *   runnable) to now, as the scheduler is about to add it to
 *   sched_info.run_delay (CONFIG_SCHED_INFO), in sum and as a log2 histogram;
 * - hrtimer_expire_entry (hard timers: the tick among them): the run time of
 *   a task that stays on its CPU;
 * - sched_migrate_task: a waiting task that moves to another CPU's run queue
 *   takes its record along (see tasks below);
 * - sched_process_free: a task's record goes;
 * - block_rq_issue, block_rq_complete: bytes read and written as they
 *   complete, requests and issue-to-completion latency once done. A request's
 *   cgroup is its first bio's (bio->bi_blkg), the one io.stat charges: for
 *   writeback, the cgroup that dirtied the pages.
 * The kernel needs CONFIG_SCHED_INFO (sched_info's fields) and
 * CONFIG_FAIR_GROUP_SCHED (se.cfs_rq, the way to the run queue's clock), as
 * distributions build it: without them the programs do not load (CO-RE), and
 * drfd measures from the cgroup files alone, as on kernels before 6.0.
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
#define TASK_ON_RQ_MIGRATING 2

/*
 * A task's record: the kernel's run-queue wait total (sched_info.run_delay)
 * and run count (pcount) after its last arrival on a CPU. A wait that a
 * migration interrupts is added to run_delay in parts, one per run queue; the
 * difference of the totals is the whole wait, the last part alone is not.
 */
struct task_rec {
	__u64 task;      /* the task_struct's address */
	__u32 pid;       /* with the address: the task, should the address be reused */
	__u32 pad;
	__u64 run_delay;
	__u64 pcount;
};

/*
 * Per CPU: the task on the CPU (as it came on), its tenant, and counts of that
 * tenant not yet added to drf_probe_cpu. A CPU runs the same tenant for long
 * stretches, and adding to a local sum costs no hash lookup: the sum goes to
 * the tenant's counters when the CPU switches to a task of another tenant or
 * of none (idle too), when the tenant set changes, and once it holds
 * FLUSH_NS of run time, so that what drfd reads is that late at most per CPU,
 * and nothing is lost.
 *
 * cache: the tenants of the cgroups whose tasks ran here lately,
 * direct-mapped by cgroup id (ids are never reused: an entry is right until
 * drfd's generation of the tenant set changes). A task's tenant is found from
 * its cgroup each time it comes on a CPU, so that a task that moved is
 * counted for its new cgroup from then on (one that moves while it runs, from
 * the next tick).
 *
 * recs: the records of the tenants' tasks that came on this CPU lately,
 * direct-mapped by pid. A task mostly comes back to the CPU it left, and
 * finds its record here; the records of tasks that move while they wait, or
 * that lose their slot, go to the tasks map.
 */
#define FLUSH_NS 4000000ULL
#define CG_CACHE 32
#define RECS 32

struct cg_slot {
	__u64 cgroup; /* cgroup id */
	__u64 tenant; /* its tenant; 0: none (outside cgroup-root, or in no tenant) */
	__u32 gen;    /* drf_probe_cfg.gen it was found under */
	__u32 pad;
};

struct cpu_state {
	__u64 task;   /* the task on the CPU (its address); 0: not known */
	__u64 cset;   /* its css_set (its cgroups) when it came on */
	__u64 sum_at; /* its se.sum_exec_runtime, as far as counted */
	__u64 tenant; /* its tenant, whose counts c holds; 0: none */
	__u32 gen;    /* drf_probe_cfg.gen the tenant was found under */
	__u32 pad;
	struct drf_probe_cpu c;
	struct cg_slot cache[CG_CACHE];
	struct task_rec recs[RECS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_state);
} cpu_state SEC(".maps");

/*
 * Per task of a tenant, by the address of its task_struct: its record, as of
 * when it last left a CPU's recs. Added when a task first comes on a CPU in a
 * tenant, gone when the task is freed. A wait interrupted by a migration
 * counts its last part only when the record is not where the next CPU looks:
 * the map was full, or the task was woken onto another CPU than the one it
 * last ran on (its record stays in that one's recs) and then moved again
 * while it waited. Not pinned: a restart starts afresh.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DRF_PROBE_MAX_TASKS);
	__type(key, __u64);
	__type(value, struct task_rec);
} tasks SEC(".maps");

/* The generation of the tenant set, read once by a program (see task_tenant()). */
static __always_inline __u32 config_gen(const struct drf_probe_cfg *c)
{
	return *(const volatile __u32 *)&c->gen;
}

static __always_inline struct cpu_state *this_cpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_state, &zero);
}

static __always_inline struct task_rec *rec_slot(struct cpu_state *st, __u32 pid)
{
	return &st->recs[(pid * 0x9e3779b1U) >> 27]; /* 32 slots: the top 5 bits */
}

/* Record r goes to its task's entry, unless the entry holds a later one. */
static __always_inline void rec_save(const struct task_rec *r)
{
	__u64 key = r->task;
	struct task_rec *e = bpf_map_lookup_elem(&tasks, &key);

	if (e && e->pid == r->pid && e->pcount < r->pcount) {
		e->run_delay = r->run_delay;
		e->pcount = r->pcount;
	}
}

/*
 * The tenant of task p's cgroup, through the cache, under generation gen: the
 * program's one reading of c->gen, made before any lookup in the tenant maps
 * (drfd changes the entries, then the generation), so that a miss racing with
 * a new tenant is cached under the old generation, and found again.
 */
static __always_inline __u64 task_tenant(struct cpu_state *st, struct task_struct *p,
					 const struct drf_probe_cfg *c, __u32 gen)
{
	struct cgroup *cg = p->cgroups->dfl_cgrp;
	__u64 id = cg->kn->id;
	struct cg_slot *s = &st->cache[id & (CG_CACHE - 1)];

	if (s->cgroup != id || s->gen != gen) {
		s->tenant = tenant_of(cg, c, &drf_probe_cpu);
		s->cgroup = id;
		s->gen = gen;
	}
	return s->tenant;
}

/* The pending counts go to their tenant's counters, if it still has them. */
static __noinline void flush(struct cpu_state *st)
{
	struct drf_probe_cpu *v;

	if (!st->c.oncpu_ns && !st->c.runq_count)
		return;
	v = bpf_map_lookup_elem(&drf_probe_cpu, &st->tenant);
	if (v) {
		v->oncpu_ns += st->c.oncpu_ns;
		v->runq_ns += st->c.runq_ns;
		v->runq_count += st->c.runq_count;
		for (int i = 0; i < DRF_PROBE_HIST; i++)
			v->runq_hist[i] += st->c.runq_hist[i];
	}
	__builtin_memset(&st->c, 0, sizeof(st->c));
}

/* The run time of task p, on the CPU, since last counted goes to its tenant. */
static __always_inline void count_run(struct cpu_state *st, struct task_struct *p)
{
	__u64 sum = p->se.sum_exec_runtime;

	if (st->tenant && sum > st->sum_at)
		st->c.oncpu_ns += sum - st->sum_at;
	st->sum_at = sum;
}

/* Task p comes on the CPU (or is found on it), of tenant t under generation gen. */
static __always_inline void arrive(struct cpu_state *st, struct task_struct *p, __u64 t, __u32 gen)
{
	if (st->tenant != t || st->gen != gen)
		flush(st);
	st->task = (__u64)p;
	st->cset = (__u64)p->cgroups;
	st->sum_at = p->se.sum_exec_runtime;
	st->tenant = t;
	st->gen = gen;
}

/*
 * The whole wait of task p that ends now, whose last part is last: p's record
 * (here, or in its entry) tells what it waited before, in other run queues.
 * The record becomes this CPU's.
 */
static __always_inline __u64 whole_wait(struct cpu_state *st, struct task_struct *p, __u64 last)
{
	__u64 key = (__u64)p, rd = p->sched_info.run_delay + last, pc = p->sched_info.pcount;
	__u32 pid = (__u32)p->pid;
	struct task_rec *r = rec_slot(st, pid), *e;
	__u64 wait = last;

	if (r->task == key && r->pid == pid && r->pcount == pc) {
		/* Came back to this CPU since it left it: the usual case. */
		if (rd >= r->run_delay)
			wait = rd - r->run_delay;
	} else {
		e = bpf_map_lookup_elem(&tasks, &key);
		if (e) {
			if (e->pid == pid && e->pcount == pc && rd >= e->run_delay)
				wait = rd - e->run_delay;
		} else if (!(p->flags & PF_EXITING)) {
			/* First seen (an exiting task is about to go: the room is for others). */
			struct task_rec n = { .task = key, .pid = pid };

			bpf_map_update_elem(&tasks, &key, &n, BPF_NOEXIST);
		}
		if (r->task && r->task != key)
			rec_save(r); /* the slot's task gives it up */
	}
	r->task = key;
	r->pid = pid;
	r->run_delay = rd;
	r->pcount = pc + 1;
	return wait;
}

/* The histogram's bucket of a wait or latency of ns: the bit length of its microseconds. */
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

SEC("tp_btf/sched_switch")
int BPF_PROG(drf_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	const struct drf_probe_cfg *c = probe_config();
	struct cpu_state *st = this_cpu();
	__u64 t, queued, now, wait;
	__u32 gen;

	if (!st)
		return 0;
	if (!c) {
		/* Counting off: no task is followed (when on again, found anew). */
		st->task = 0;
		return 0;
	}
	gen = config_gen(c);
	if (st->task == (__u64)prev)
		count_run(st, prev);
	/*
	 * next's tenant: prev's if they share their cgroups (prev holds its
	 * css_set, which cannot have been freed and made again meanwhile), else
	 * found from its cgroup.
	 */
	if (st->task == (__u64)prev && st->gen == gen && st->cset == (__u64)prev->cgroups &&
	    next->cgroups == prev->cgroups)
		t = st->tenant;
	else
		t = task_tenant(st, next, c, gen);
	arrive(st, next, t, gen);
	if (!t)
		return 0;
	/*
	 * The last part of next's wait: since its run queue's clock when it was
	 * queued, to that clock now. Not queued (last_queued 0): no wait, and
	 * the kernel counts no run either.
	 */
	queued = next->sched_info.last_queued;
	if (!queued)
		return 0;
	now = next->se.cfs_rq->rq->clock;
	wait = whole_wait(st, next, now > queued ? now - queued : 0);
	st->c.runq_ns += wait;
	st->c.runq_count++;
	st->c.runq_hist[bucket(wait)]++;
	if (st->c.oncpu_ns >= FLUSH_NS)
		flush(st);
	return 0;
}

/*
 * A hard timer expires (the tick among them), interrupting the task on the
 * CPU: its run time so far is counted, and flushed once there is FLUSH_NS of
 * it. Soft timers are left out: they run with interrupts on, and could be
 * interrupted halfway by this very program.
 */
SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(drf_tick, struct hrtimer *timer)
{
	struct task_struct *p = bpf_get_current_task_btf();
	const struct drf_probe_cfg *c;
	struct cpu_state *st;
	__u32 gen;

	if (timer->is_soft)
		return 0;
	st = this_cpu();
	if (!st)
		return 0;
	if (st->task == (__u64)p) {
		count_run(st, p);
		if (st->c.oncpu_ns < FLUSH_NS && st->cset == (__u64)p->cgroups)
			return 0;
	}
	c = probe_config();
	if (!c)
		return 0;
	gen = config_gen(c);
	if (st->task == (__u64)p && st->cset == (__u64)p->cgroups && st->gen == gen)
		flush(st);
	else /* not known yet (just attached), moved, or the tenant set changed: found again */
		arrive(st, p, task_tenant(st, p, c, gen), gen);
	return 0;
}

/*
 * A queued task moves to another CPU's run queue (the one it leaves is
 * locked): its record, in the recs of the CPU it leaves, goes to its entry,
 * where the other CPU finds it. A sleeping task that moves as it wakes has no
 * wait begun: it needs no record.
 */
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(drf_migrate, struct task_struct *p, int dest)
{
	__u32 zero = 0, pid;
	struct cpu_state *st;
	struct task_rec *r;

	if (p->on_rq != TASK_ON_RQ_MIGRATING)
		return 0;
	/* The CPU it leaves: wake_cpu follows its CPU (__set_task_cpu()). */
	st = bpf_map_lookup_percpu_elem(&cpu_state, &zero, p->wake_cpu);
	if (!st)
		return 0;
	pid = (__u32)p->pid;
	r = rec_slot(st, pid);
	if (r->task == (__u64)p && r->pid == pid && r->pcount == p->sched_info.pcount)
		rec_save(r);
	return 0;
}

/*
 * The task is gone for good (its last reference dropped, after its last
 * event): its entry goes. A record of it left in a CPU's recs no longer
 * matches anything (address and pid).
 */
SEC("tp_btf/sched_process_free")
int BPF_PROG(drf_free, struct task_struct *p)
{
	__u64 key = (__u64)p;

	bpf_map_delete_elem(&tasks, &key);
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
