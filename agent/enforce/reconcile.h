/* SPDX-License-Identifier: MIT */
/*
 * Reconciliation of the cgroup backend: desired state -> observed state -> diff.
 *
 * The desired state is a plan's knob values per tenant (drf_reconciler_set).
 * The observed state is what drfd last read back or wrote, per knob. A tick
 * (drf_reconcile_tick) writes at once every knob whose desired value differs
 * from the observed one, retries every write that failed, and re-reads a slice
 * of the tenants (round robin) so that a value someone else changed is found
 * and put back within a bounded time: with `verify` tenants a tick out of n,
 * every knob is read back at least once every ceil(n / verify) ticks. A steady
 * tick therefore reads a fraction of the knobs and writes nothing.
 *
 * Tenants are matched across plans by cgroup path through a hash index built
 * when the plan is set, so a reload and a tick are O(n).
 *
 * A tick's work is a pass over the nodes, taken in steps
 * (drf_reconcile_begin(), drf_reconcile_step()) so that an event loop serves
 * its other sources between two: a step works on at most step_nodes nodes and
 * for at most step_usec (a tick that finds nothing to do is one step). What
 * is compared is the kernel's form of a value (memory in whole pages), so a
 * wanted value that moves within a page costs no write.
 *
 * With a backend whose changes complete later (cgfs_async(): systemd's slices,
 * one D-Bus call per cgroup whose reply the loop reads), a node's changes go
 * out as one apply, many nodes' at once; a node is left alone while its apply
 * is under way, and its outcome, noted when it comes (struct cgfs_done), is
 * taken at the next step: a failure is counted, said once and retried like a
 * failed write. A pass ends once every node was seen and no apply is under
 * way; wake is called when an outcome comes, so that the loop steps again.
 *
 * Lowering memory.max below current usage is done in two steps off the
 * caller's thread: memory.high first (the kernel reclaims inside that write),
 * memory.max only once usage is under it. A failure of that asynchronous write
 * is counted and retried like any other.
 *
 * A tenant that leaves the plan becomes an orphan, whose cgroup the pass
 * removes (in its steps, after the plan's nodes) if no process is left in it;
 * otherwise it is kept with its limits, reported, and removed by a later pass
 * once empty.
 */
#ifndef DRF_RECONCILE_H
#define DRF_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroupfs.h"
#include "clock.h"
#include "config.h"
#include "index.h"
#include "knobs.h"
#include "log.h"
#include "planner.h"

/* What a cgroup of the plan is to drfd. */
enum drf_node_kind {
	DRF_NODE_TENANT,
	DRF_NODE_INNER,                        /* an inner node of nested tenant paths */
	DRF_NODE_ROOT,                         /* drfd's root ("" relative to itself) */
	DRF_NODE_TASK,                         /* a task's, below its tenant's */
};

struct drf_tenant_rt {
	char *name;                            /* an inner node's or a task's is its cgroup */
	enum drf_node_kind kind;
	char *cgroup;                          /* relative to the root */
	const struct drf_knobs *want;          /* desired: the plan in force's (not copied) */
	char seen[DRF_NKNOBS][DRF_KNOB_LEN];   /* observed: last read back or written */
	unsigned known;                        /* bits: seen[k] is valid */
	unsigned failed;                       /* bits: the last write failed; retried */
	int err[DRF_NKNOBS];                   /* that failure's errno; 0 */
	int cg_err;                            /* errno of creating the cgroup; 0 */
	bool exists;                           /* the cgroup was there at the last look */
	bool seen_once;                        /* it existed at some point: a new mkdir recreates */
	bool tightening;                       /* memory.high lowered, memory.max waits */
	bool job_queued;                       /* a memory.high write is with the worker */
	char target[DRF_KNOB_LEN];             /* the memory.max being waited for */
	uint64_t verified_tick;                /* the last tick that read every knob back */
	size_t from;                           /* staged: 1 + its index in the plan in force; 0 */
	bool applying;                         /* an apply of its changes is under way */
	bool apply_create;                     /* ... which makes its cgroup */
	unsigned apply_bits;                   /* ... of these knobs */
};

struct drf_orphan {
	char *name;
	char *cgroup;
	enum drf_node_kind kind;
	bool tried;                     /* removal tried: it held processes (or failed) */
	bool applying;                  /* its node's apply was under way when it left */
	int err;                        /* the last try's -errno */
};

struct drf_reconcile_stats {
	unsigned writes;    /* knob values written */
	unsigned created;   /* cgroups created */
	unsigned recreated; /* tenant cgroups that had vanished, created again */
	unsigned foreign;   /* values found changed by someone else */
	unsigned pending;   /* memory limits waiting for usage to drop */
	unsigned errors;    /* failed operations this tick (each logged once) */
	unsigned retrying;  /* knobs whose write failed and will be retried */
	unsigned verified;  /* tenants whose every knob was read back */
	unsigned removed;   /* orphans removed now that they are empty */
	unsigned applies;   /* applies sent (one per node whose knobs change; cgfs_async) */
	unsigned steps;     /* steps the pass took */
};

struct drf_mem_worker;
struct drf_applied;

/* A pass's budget per step: drf_reconciler_init()'s, which its caller may change. */
#define DRF_RECONCILE_STEP_NODES 256
#define DRF_RECONCILE_STEP_USEC (20 * 1000)

struct drf_reconciler {
	const struct cgfs *fs;
	const struct drf_io_target *io; /* NULL without io */
	struct drf_logger log;
	bool async_memory;              /* tighten memory on a worker thread */
	bool by_systemd;                /* slices: systemd enables the controllers its units'
					 * properties need (no cgroup.subtree_control write),
					 * so setting a knob makes its missing file */
	/*
	 * Slices: a task's cgroup is its unit's, which the task queue's spawn
	 * starts with the task's limits (drf_reconciler_want) and its command at
	 * once; a missing one is not made here, and is ready to be started. Once
	 * there, its knobs are verified and put back like any other's.
	 */
	bool tasks_by_spawn;
	unsigned long page_size;        /* memory limits round down to it */
	unsigned ctrls;                 /* controllers the plan needs */
	struct drf_tenant_rt *t;        /* the plan's tenants (config order), inner nodes, tasks */
	size_t n;                       /* tenants: t[0 .. n) */
	size_t n_inner;                 /* inner nodes: t[n .. n + n_inner), parents first: the
					 * root first (its memory.low covers the tenants') */
	size_t n_task;                  /* tasks' cgroups: after the inner nodes */
	struct drf_index index;         /* cgroup -> t[] */
	struct drf_orphan *orphans;
	size_t n_orphans, cap_orphans;
	size_t orphan_pos;              /* the pass's next orphan to try to remove */
	size_t cursor;                  /* next tenant to verify */
	uint64_t ticks;
	unsigned root_failed;           /* controllers the root could not pass down */
	int root_err[CGFS_NCTRL];
	bool root_checked;
	bool membership_changed;        /* tenants or orphans changed since last asked */
	struct drf_mem_worker *worker;
	/* totals since start */
	uint64_t total_writes, total_errors, total_foreign, worker_failures;
	uint64_t total_applies;         /* applies sent (cgfs_async: a D-Bus call each) */
	/* the pass in progress (drf_reconcile_begin, drf_reconcile_step) */
	const struct drf_clock *clock;  /* for step_usec; NULL: no time limit */
	size_t step_nodes;              /* nodes a step works on at most */
	uint64_t step_usec;             /* a step stops after this long (0: no limit) */
	bool pass_on;
	size_t pass_pos;                /* next node, in the pass's order */
	size_t pass_start, pass_end;    /* the nodes read back (verified) in this pass */
	struct drf_reconcile_stats pass_st; /* what the pass counted so far */
	size_t applying;                /* nodes whose apply is under way */
	struct drf_applied *applied;    /* outcomes that came, not yet taken (newest first) */
	void (*wake)(void *ctx);        /* an outcome came: step again */
	void *wake_ctx;
};


int drf_reconciler_init(struct drf_reconciler *rc, const struct cgfs *fs,
			const struct drf_io_target *io, const struct drf_logger *log,
			bool async_memory, unsigned long page_size);
void drf_reconciler_free(struct drf_reconciler *rc);

/* A plan made ready to take over: everything that can fail is done. */
struct drf_reconciler_stage {
	struct drf_tenant_rt *t;
	size_t n, n_inner, n_task, total;
	struct drf_index index;
	bool *kept;                     /* per node in force: it stays */
	unsigned ctrls;
	/*
	 * The same nodes as in force, in the same order (the usual reload: some
	 * knobs change): only their wants, and t, index and kept are not made.
	 */
	const struct drf_knobs **want;
};

/*
 * Makes the cgroups of plan p, and their knob values, the desired state, in
 * two steps so that a caller with more than one backend to set changes none
 * or all: drf_reconciler_stage() does what can fail (0 or -ENOMEM, and
 * nothing changes), drf_reconciler_commit() cannot fail; a stage not
 * committed is dropped with drf_reconciler_unstage(). Nodes are carried over
 * by cgroup path with what was observed of them; one whose values changed is
 * written by the next tick without waiting for its turn to be verified. Those
 * of the previous plan that are not in this one become orphans, removed by
 * the next pass if empty; once a tenant's last task cgroup is removed, the
 * tenant's cgroup stops passing controllers down, so that it may hold
 * processes again (drfctl exec).
 */
int drf_reconciler_stage(struct drf_reconciler *rc, const struct drf_plan *p,
			 struct drf_reconciler_stage *ret);
void drf_reconciler_commit(struct drf_reconciler *rc, struct drf_reconciler_stage *st);
void drf_reconciler_unstage(struct drf_reconciler_stage *st);
/* Both steps at once: 0, or -ENOMEM and the previous plan stays. */
int drf_reconciler_set(struct drf_reconciler *rc, const struct drf_plan *p);

/*
 * Whether the cgroup cg of the plan holds what drfd wants: 1 (created, every
 * knob written or read back as wanted), 0 (not yet: no tick since it was
 * set), or -errno with why when creating it or writing a knob failed.
 */
int drf_reconciler_ready(const struct drf_reconciler *rc, const char *cg, char *why, size_t len);

/* The knob values wanted of the plan's cgroup cg, or NULL if it is not in the plan. */
const struct drf_knobs *drf_reconciler_want(const struct drf_reconciler *rc, const char *cg);

/*
 * A cgroup that drfd managed before (from its state file) and that is not in
 * the plan: an orphan, removed by the next pass if empty, otherwise kept; so
 * are the inner nodes of its path that the plan does not use. Ignored if it
 * is a tenant of the plan or already an orphan.
 */
int drf_reconciler_forget(struct drf_reconciler *rc, const char *name, const char *cgroup);

/*
 * A pass: writes what differs, retries what failed, reads back `verify`
 * tenants (SIZE_MAX: all), removes orphans that became empty.
 * drf_reconcile_begin() starts one (a pass in progress starts over from its
 * first node, with what it counted so far); drf_reconcile_step() goes on with
 * it for at most the step's budget and returns DRF_PASS_MORE (step again),
 * DRF_PASS_WAITING (only applies under way are left: wake says when to step
 * again), or DRF_PASS_DONE with the pass's figures in *ret (the failures are
 * in ret and the tenants' state). A new plan (drf_reconciler_commit) starts
 * the pass in progress over from its first node.
 */
enum drf_pass { DRF_PASS_DONE, DRF_PASS_MORE, DRF_PASS_WAITING };
void drf_reconcile_begin(struct drf_reconciler *rc, size_t verify);
enum drf_pass drf_reconcile_step(struct drf_reconciler *rc, struct drf_reconcile_stats *ret);
/* Whether a pass is in progress. */
static inline bool drf_reconcile_busy(const struct drf_reconciler *rc)
{
	return rc->pass_on;
}
/*
 * A whole pass at once (tests, dry runs; with cgfs_async ops, only those
 * whose applies complete within apply): 0, the failures in ret.
 */
int drf_reconcile_tick(struct drf_reconciler *rc, size_t verify, struct drf_reconcile_stats *ret);

/* Tenants to verify per tick so that each is read back at least once per period. */
size_t drf_verify_per_tick(size_t n, uint64_t interval_us, uint64_t period_us);

/* Whether the tenants or orphans changed since the last call (for the state file). */
bool drf_reconciler_membership_changed(struct drf_reconciler *rc);

/* Waits for queued memory writes and takes their results (tests, shutdown). */
void drf_reconciler_drain(struct drf_reconciler *rc);

/* Index of the tenant (or, at n and above, the inner node) with this cgroup, or -1. */
ssize_t drf_reconciler_find(const struct drf_reconciler *rc, const char *cgroup);

#endif
