// SPDX-License-Identifier: MIT
#include "reconcile.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "slice.h"
#include "vec.h"

#define MEM_QUEUE 64
#define KNOB_BIT(k) (1u << (k))
#define MEMORY_BITS (KNOB_BIT(DRF_KNOB_MEMORY_HIGH) | KNOB_BIT(DRF_KNOB_MEMORY_MAX))
#define MANAGED_CTRLS (CGFS_CPU | CGFS_MEMORY | CGFS_IO)

_Static_assert((unsigned)DRF_CTRL_CPU == (unsigned)CGFS_CPU &&
		       (unsigned)DRF_CTRL_MEMORY == (unsigned)CGFS_MEMORY &&
		       (unsigned)DRF_CTRL_IO == (unsigned)CGFS_IO,
	       "the plan's controller bits are cgroupfs's");

/*
 * An apply's outcome, noted by the backend for the next step (struct
 * cgfs_done): made before the apply is sent, so that noting it cannot fail.
 */
struct drf_applied {
	struct drf_applied *next;
	struct drf_reconciler *rc;
	int err;
	char cgroup[];
};

/* seen[k] = v; v may be another field of t, hence no snprintf. */
static void set_seen(struct drf_tenant_rt *t, enum drf_knob k, const char *v)
{
	size_t n = strnlen(v, DRF_KNOB_LEN - 1);

	memmove(t->seen[k], v, n);
	t->seen[k][n] = '\0';
}

/* What a message calls a node: a tenant, an inner node of nested tenant paths, a task's. */
static const char *const kind_names[] = {
	[DRF_NODE_TENANT] = "tenant",
	[DRF_NODE_INNER] = "inner cgroup",
	[DRF_NODE_ROOT] = "root cgroup",
	[DRF_NODE_TASK] = "task cgroup",
};
#define KIND(t) (kind_names[(t)->kind])

/* The hash index (index.h): cgroup path -> position in the tenant array ctx. */
static const void *key_cgroup(const void *ctx, size_t i, size_t *ret_len)
{
	const struct drf_tenant_rt *t = ctx;

	*ret_len = strlen(t[i].cgroup);
	return t[i].cgroup;
}

static ssize_t index_find(const struct drf_index *ix, const char *cgroup)
{
	return ix->key ? drf_index_find_str(ix, cgroup) : -1;
}

ssize_t drf_reconciler_find(const struct drf_reconciler *rc, const char *cgroup)
{
	return index_find(&rc->index, cgroup);
}

/*
 * The worker: one thread for the memory.high writes the kernel may take long
 * over (it reclaims inside the write). Results go back to the tick through a
 * list the tick drains, so that a failure is counted and retried like any.
 */
struct mem_job {
	char *cgroup;
	char high[DRF_KNOB_LEN];
	int result;
};

struct drf_mem_worker {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv, idle;
	struct mem_job q[MEM_QUEUE];
	size_t head, len;
	struct mem_job done[MEM_QUEUE];
	size_t n_done;
	bool busy, stop;
	const struct cgfs *fs;
};

static void *worker_main(void *arg)
{
	struct drf_mem_worker *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct mem_job job;

		while (!w->stop && (w->len == 0 || w->n_done + w->len > MEM_QUEUE))
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->len == 0)
			break;
		job = w->q[w->head];
		w->head = (w->head + 1) % MEM_QUEUE;
		w->len--;
		w->busy = true;
		pthread_mutex_unlock(&w->mu);
		job.result = cgfs_write(w->fs, job.cgroup, "memory.high", job.high);
		pthread_mutex_lock(&w->mu);
		w->done[w->n_done++] = job;
		w->busy = false;
		if (w->len == 0)
			pthread_cond_broadcast(&w->idle);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static int worker_start(struct drf_reconciler *rc)
{
	struct drf_mem_worker *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return -ENOMEM;
	w->fs = rc->fs;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	pthread_cond_init(&w->idle, NULL);
	r = pthread_create(&w->thread, NULL, worker_main, w);
	if (r) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		pthread_cond_destroy(&w->idle);
		free(w);
		return -r;
	}
	rc->worker = w;
	return 0;
}

/* Queues a memory.high write; -EAGAIN if the queue is full, -ENOMEM. */
static int worker_post(struct drf_mem_worker *w, const char *cg, const char *high)
{
	int r = -EAGAIN;

	pthread_mutex_lock(&w->mu);
	/* Room for the job and, later, its result. */
	if (w->len + w->n_done < MEM_QUEUE) {
		struct mem_job *j = &w->q[(w->head + w->len) % MEM_QUEUE];

		j->cgroup = strdup(cg);
		if (j->cgroup) {
			snprintf(j->high, sizeof(j->high), "%s", high);
			j->result = 0;
			w->len++;
			r = 0;
			pthread_cond_signal(&w->cv);
		} else {
			r = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&w->mu);
	return r;
}

static void mem_result(struct drf_reconciler *rc, const struct mem_job *job,
		       struct drf_reconcile_stats *st)
{
	ssize_t i = index_find(&rc->index, job->cgroup);
	struct drf_tenant_rt *t;
	const int k = DRF_KNOB_MEMORY_HIGH;

	if (i < 0)
		return; /* the tenant left the plan meanwhile */
	t = &rc->t[i];
	t->job_queued = false;
	if (job->result == 0) {
		set_seen(t, k, job->high);
		t->known |= KNOB_BIT(k);
		return;
	}
	/* Counted like a synchronous failure; the next tick starts over. */
	st->errors++;
	rc->worker_failures++;
	t->tightening = false;
	t->failed |= KNOB_BIT(k);
	t->known &= ~KNOB_BIT(k);
	if (t->err[k] != -job->result)
		drf_log(&rc->log, LOG_ERR, "cannot write '%s' to '%s/%s/memory.high': %s; will "
					   "retry",
			job->high, rc->fs->root, job->cgroup, strerror(-job->result));
	t->err[k] = -job->result;
}

/* Takes the worker's results; with wait, first lets it finish its queue. */
static void worker_collect(struct drf_reconciler *rc, bool wait, struct drf_reconcile_stats *st)
{
	struct drf_mem_worker *w = rc->worker;
	struct mem_job done[MEM_QUEUE];
	size_t n;

	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	while (wait && (w->len > 0 || w->busy))
		pthread_cond_wait(&w->idle, &w->mu);
	n = w->n_done;
	memcpy(done, w->done, n * sizeof(*done));
	w->n_done = 0;
	pthread_cond_signal(&w->cv); /* room for results again */
	pthread_mutex_unlock(&w->mu);
	for (size_t i = 0; i < n; i++) {
		mem_result(rc, &done[i], st);
		free(done[i].cgroup);
	}
}

void drf_reconciler_drain(struct drf_reconciler *rc)
{
	struct drf_reconcile_stats st = { 0 };

	worker_collect(rc, true, &st);
	rc->total_errors += st.errors;
}

static void worker_stop(struct drf_mem_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	for (size_t i = 0; i < w->len; i++)
		free(w->q[(w->head + i) % MEM_QUEUE].cgroup);
	for (size_t i = 0; i < w->n_done; i++)
		free(w->done[i].cgroup);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	pthread_cond_destroy(&w->idle);
	free(w);
}

int drf_reconciler_init(struct drf_reconciler *rc, const struct cgfs *fs,
			const struct drf_io_target *io, const struct drf_logger *log,
			bool async_memory, unsigned long page_size)
{
	memset(rc, 0, sizeof(*rc));
	rc->fs = fs;
	rc->io = io;
	if (log)
		rc->log = *log;
	rc->async_memory = async_memory;
	rc->page_size = page_size;
	rc->step_nodes = DRF_RECONCILE_STEP_NODES;
	rc->step_usec = DRF_RECONCILE_STEP_USEC;
	return async_memory ? worker_start(rc) : 0;
}

static void tenant_free(struct drf_tenant_rt *t)
{
	free(t->name);
	free(t->cgroup);
}

void drf_reconciler_free(struct drf_reconciler *rc)
{
	worker_stop(rc->worker);
	for (size_t i = 0; i < rc->n + rc->n_inner + rc->n_task; i++)
		tenant_free(&rc->t[i]);
	free(rc->t);
	drf_index_free(&rc->index);
	for (size_t i = 0; i < rc->n_orphans; i++) {
		free(rc->orphans[i].name);
		free(rc->orphans[i].cgroup);
	}
	free(rc->orphans);
	while (rc->applied) {
		struct drf_applied *a = rc->applied;

		rc->applied = a->next;
		free(a);
	}
	memset(rc, 0, sizeof(*rc));
}

static ssize_t orphan_find(const struct drf_reconciler *rc, const char *cgroup)
{
	for (size_t i = 0; i < rc->n_orphans; i++)
		if (strcmp(rc->orphans[i].cgroup, cgroup) == 0)
			return (ssize_t)i;
	return -1;
}

/* Orphan i gone; the others keep their order (children before their parents). */
static void orphan_drop(struct drf_reconciler *rc, size_t i)
{
	free(rc->orphans[i].name);
	free(rc->orphans[i].cgroup);
	memmove(&rc->orphans[i], &rc->orphans[i + 1],
		(rc->n_orphans - i - 1) * sizeof(rc->orphans[0]));
	rc->n_orphans--;
	if (rc->orphan_pos > i)
		rc->orphan_pos--;
	rc->membership_changed = true;
}

/*
 * A cgroup that is no longer in the plan: an orphan, which the pass removes
 * if empty (try_remove), else keeps with its limits (a task's is removed
 * only once its task has ended, so it is empty). name and cgroup are copied.
 */
static int retire(struct drf_reconciler *rc, const char *name, const char *cgroup,
		  enum drf_node_kind kind)
{
	struct drf_orphan *no;

	if (DRF_VEC_GROW(rc->orphans, &rc->cap_orphans, rc->n_orphans + 1) < 0)
		return -ENOMEM;
	no = &rc->orphans[rc->n_orphans];
	*no = (struct drf_orphan){ .name = strdup(name), .cgroup = strdup(cgroup), .kind = kind };
	if (!no->name || !no->cgroup) {
		free(no->name);
		free(no->cgroup);
		return -ENOMEM;
	}
	rc->n_orphans++;
	rc->membership_changed = true;
	return 0;
}

/* Whether any node of t[0 .. n) is a task's cgroup right below cgroup cg. */
static bool has_task_below(const struct drf_tenant_rt *t, size_t n, const char *cg)
{
	size_t len = strlen(cg);

	for (size_t i = 0; i < n; i++)
		if (t[i].kind == DRF_NODE_TASK && strncmp(t[i].cgroup, cg, len) == 0 &&
		    t[i].cgroup[len] == '/' && !strchr(t[i].cgroup + len + 1, '/'))
			return true;
	return false;
}

/*
 * Orphan i's cgroup removed if it is empty: 1 if it is gone (dropped), 0 if
 * it stays (said the first time, or when the failure changes).
 */
static int try_remove(struct drf_reconciler *rc, size_t i, struct drf_reconcile_stats *st)
{
	struct drf_orphan *o = &rc->orphans[i];
	const char *root = rc->fs->root;
	int r;

	/* Its apply still under way: removed once its outcome came (take_applied). */
	if (o->applying)
		return 0;
	r = cgfs_remove(rc->fs, o->cgroup);

	if (r == 0 && o->tried)
		drf_log(&rc->log, LOG_NOTICE, "orphan '%s/%s' of departed tenant '%s' is empty "
					      "now; removed it", root, o->cgroup, o->name);
	else if (r == 0 && o->kind == DRF_NODE_INNER)
		drf_log(&rc->log, LOG_NOTICE, "'%s/%s' is above no tenant any more; removed it",
			root, o->cgroup);
	else if (r == 0 && o->kind == DRF_NODE_TASK)
		drf_log(&rc->log, LOG_DEBUG, "removed task cgroup '%s/%s'", root, o->cgroup);
	else if (r == 0)
		drf_log(&rc->log, LOG_NOTICE, "tenant '%s' is gone from the config; removed '%s/%s'",
			o->name, root, o->cgroup);
	if (r == 0 && o->tried)
		st->removed++;
	/*
	 * Its tenant's last task gone: the tenant's cgroup may hold processes
	 * again. Not a slice's: it holds none, and what it passes down is systemd's.
	 */
	if (r == 0 && o->kind == DRF_NODE_TASK && !rc->tasks_by_spawn) {
		char *slash = strrchr(o->cgroup, '/');

		if (slash) {
			*slash = '\0';
			if (!has_task_below(rc->t, rc->n + rc->n_inner + rc->n_task, o->cgroup) &&
			    cgfs_set_subtree(rc->fs, o->cgroup, 0, MANAGED_CTRLS) < 0)
				drf_log(&rc->log, LOG_DEBUG, "controllers stay enabled in '%s/%s'",
					root, o->cgroup);
		}
	}
	if (r == 0 || r == -ENOENT) {
		orphan_drop(rc, i);
		return 1;
	}
	if (o->tried && o->err == r)
		return 0;
	if (r == -EBUSY && o->kind != DRF_NODE_TENANT)
		drf_log(&rc->log, LOG_NOTICE, "'%s/%s' is in the plan no more, but still holds "
					      "processes or cgroups; removing it once it is empty",
			root, o->cgroup);
	else if (r == -EBUSY)
		drf_log(&rc->log, LOG_WARNING, "tenant '%s' is gone from the config but '%s/%s' "
					       "still holds processes%s; leaving it and its limits "
					       "in place until it is empty",
			o->name, root, o->cgroup,
			rc->by_systemd ? " or an active unit (stopping the slice would stop it)" : "");
	else
		drf_log(&rc->log, LOG_ERR, "cannot remove '%s/%s' of departed %s '%s': %s; will "
					   "retry", root, o->cgroup, kind_names[o->kind], o->name,
			strerror(-r));
	o->tried = true;
	o->err = r;
	return 0;
}

int drf_reconciler_forget(struct drf_reconciler *rc, const char *name, const char *cgroup)
{
	char path[4096];
	char *slash;
	int r;

	if (index_find(&rc->index, cgroup) >= 0 || orphan_find(rc, cgroup) >= 0)
		return 0;
	r = retire(rc, name, cgroup, DRF_NODE_TENANT);
	if (r < 0 || strlen(cgroup) >= sizeof(path))
		return r;
	/* The inner nodes of its path that the plan does not use, deepest first. */
	snprintf(path, sizeof(path), "%s", cgroup);
	while ((slash = strrchr(path, '/'))) {
		*slash = '\0';
		if (index_find(&rc->index, path) >= 0 || orphan_find(rc, path) >= 0)
			break;
		r = retire(rc, path, path, DRF_NODE_INNER);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Node i of plan p: tenants, drfd's root (whose name is root), inner nodes, tasks' cgroups. */
struct plan_node {
	enum drf_node_kind kind;
	const char *cgroup, *name;
	const struct drf_knobs *want;
};

static struct plan_node plan_node(const struct drf_plan *p, size_t i, const char *root)
{
	const struct drf_config *c = &p->decl->cfg;
	size_t n = c->n_tenants;
	const struct drf_cg_knobs *x;

	if (i < n)
		return (struct plan_node){ DRF_NODE_TENANT, c->tenants[i].cgroup, c->tenants[i].name,
					   &p->knobs[i] };
	if (i == n) {
		static const struct drf_knobs none;

		return (struct plan_node){ DRF_NODE_ROOT, "", root, p->root ? p->root : &none };
	}
	if (i <= n + p->n_inner) {
		x = &p->inner[i - n - 1];
		return (struct plan_node){ DRF_NODE_INNER, x->cgroup, x->cgroup, &x->knobs };
	}
	x = &p->task[i - n - 1 - p->n_inner];
	return (struct plan_node){ DRF_NODE_TASK, x->cgroup, x->cgroup, &x->knobs };
}

void drf_reconciler_unstage(struct drf_reconciler_stage *st)
{
	for (size_t j = 0; st->t && j < st->total; j++) {
		free(st->t[j].name);
		free(st->t[j].cgroup);
	}
	free(st->t);
	drf_index_free(&st->index);
	free(st->kept);
	free(st->want);
	memset(st, 0, sizeof(*st));
}

/* Whether p's nodes are those in force, in the same order: then their wants only, in st. */
static bool stage_same(const struct drf_reconciler *rc, const struct drf_plan *p,
		       struct drf_reconciler_stage *st)
{
	if (st->n != rc->n || st->n_inner != rc->n_inner || st->n_task != rc->n_task)
		return false;
	st->want = malloc((st->total + 1) * sizeof(*st->want));
	if (!st->want)
		return false;
	for (size_t i = 0; i < st->total; i++) {
		struct plan_node x = plan_node(p, i, rc->fs->root);

		if (rc->t[i].kind != x.kind || strcmp(rc->t[i].cgroup, x.cgroup) != 0 ||
		    strcmp(rc->t[i].name, x.name) != 0) {
			free(st->want);
			st->want = NULL;
			return false;
		}
		st->want[i] = x.want;
	}
	return true;
}

int drf_reconciler_stage(struct drf_reconciler *rc, const struct drf_plan *p,
			 struct drf_reconciler_stage *ret)
{
	const struct drf_config *c = &p->decl->cfg;
	size_t old = rc->n + rc->n_inner + rc->n_task;
	struct drf_reconciler_stage st = {
		.n = c->n_tenants, .n_inner = 1 + p->n_inner, .n_task = p->n_task,
		.total = c->n_tenants + 1 + p->n_inner + p->n_task, .ctrls = drf_knobs_controllers(c),
	};
	int r = -ENOMEM;

	if (stage_same(rc, p, &st)) {
		*ret = st;
		return 0;
	}
	st.t = calloc(st.total + 1, sizeof(*st.t));
	st.kept = calloc(old + 1, sizeof(*st.kept));
	if (!st.t || !st.kept)
		goto fail;
	for (size_t i = 0; i < st.total; i++) {
		struct plan_node x = plan_node(p, i, rc->fs->root);
		ssize_t o = index_find(&rc->index, x.cgroup);

		/* Carried over with what was observed (not yet: the commit takes it). */
		st.t[i].name = strdup(x.name);
		st.t[i].cgroup = strdup(x.cgroup);
		if (!st.t[i].name || !st.t[i].cgroup)
			goto fail;
		st.t[i].kind = x.kind;
		st.t[i].want = x.want;
		/* The root is there: drfd opened it. */
		st.t[i].exists = st.t[i].seen_once = x.kind == DRF_NODE_ROOT;
		st.t[i].from = o >= 0 && !st.kept[o] ? (size_t)o + 1 : 0;
		if (o >= 0)
			st.kept[o] = true;
	}
	drf_index_init(&st.index, key_cgroup, st.t);
	r = drf_index_build(&st.index, st.total);
	if (r < 0)
		goto fail;
	*ret = st;
	return 0;
fail:
	drf_reconciler_unstage(&st);
	return r;
}

void drf_reconciler_commit(struct drf_reconciler *rc, struct drf_reconciler_stage *st)
{
	size_t old = rc->n + rc->n_inner + rc->n_task;

	if (st->want) {
		for (size_t i = 0; i < st->total; i++)
			rc->t[i].want = st->want[i];
		rc->ctrls = st->ctrls;
		rc->root_checked = false;
		drf_reconciler_unstage(st);
		return;
	}

	/* What was observed of each node that stays, under its new name and wants. */
	for (size_t i = 0; i < st->total; i++) {
		struct drf_tenant_rt *t = &st->t[i], *o;
		char *name = t->name, *cgroup = t->cgroup;
		const struct drf_knobs *want = t->want;
		enum drf_node_kind kind = t->kind;

		if (!t->from)
			continue;
		o = &rc->t[t->from - 1];
		*t = *o;
		free(t->name);
		free(t->cgroup);
		t->name = name;
		t->cgroup = cgroup;
		t->kind = kind;
		t->want = want;
		t->from = 0;
		o->name = o->cgroup = NULL;
	}
	/*
	 * Departed nodes: the tasks' cgroups first (below their tenants), then the
	 * tenants, then the inner nodes no tenant needs, deepest (last) first, so
	 * that a parent is tried once its children are gone.
	 */
	for (size_t k = 0; k < old; k++) {
		size_t x = k < rc->n_task ? old - 1 - k
			   : k < rc->n_task + rc->n ? k - rc->n_task
						   : rc->n + (old - 1 - k);
		struct drf_tenant_rt *t = &rc->t[x];
		int r;

		if (st->kept[x]) {
			tenant_free(t);
			continue;
		}
		r = retire(rc, t->name, t->cgroup, t->kind);
		if (r < 0)
			drf_log(&rc->log, LOG_ERR, "cannot track departed %s '%s': %s",
				kind_names[t->kind], t->name, strerror(-r));
		/*
		 * Its apply under way (a slice being started): the orphan waits for
		 * its outcome before it is removed, or the slice would be made after.
		 */
		if (t->applying && r == 0)
			rc->orphans[rc->n_orphans - 1].applying = true;
		else if (t->applying)
			rc->applying--;
		tenant_free(t);
	}
	/* A node that comes back is no orphan any more (an apply of it under way stays its). */
	for (size_t i = 0; rc->n_orphans && i < st->total; i++) {
		ssize_t orph = orphan_find(rc, st->t[i].cgroup);

		if (orph < 0)
			continue;
		if (rc->orphans[orph].applying && !st->t[i].applying)
			st->t[i].applying = true;
		else if (rc->orphans[orph].applying)
			rc->applying--;
		orphan_drop(rc, (size_t)orph);
	}
	if (rc->n != st->n || rc->n_inner != st->n_inner || rc->n_task != st->n_task)
		rc->membership_changed = true;
	free(rc->t);
	drf_index_free(&rc->index);
	rc->t = st->t;
	rc->n = st->n;
	rc->n_inner = st->n_inner;
	rc->n_task = st->n_task;
	rc->index = st->index;
	rc->ctrls = st->ctrls;
	rc->root_checked = false;
	if (rc->cursor >= st->total)
		rc->cursor = 0;
	/* A pass in progress goes on over the new nodes, from the first. */
	rc->pass_pos = 0;
	rc->orphan_pos = 0;
	free(st->kept);
	memset(st, 0, sizeof(*st));
}

int drf_reconciler_set(struct drf_reconciler *rc, const struct drf_plan *p)
{
	struct drf_reconciler_stage st;
	int r = drf_reconciler_stage(rc, p, &st);

	if (r == 0)
		drf_reconciler_commit(rc, &st);
	return r;
}

bool drf_reconciler_membership_changed(struct drf_reconciler *rc)
{
	bool c = rc->membership_changed;

	rc->membership_changed = false;
	return c;
}

size_t drf_verify_per_tick(size_t n, uint64_t interval_us, uint64_t period_us)
{
	double ticks = (double)period_us / (double)interval_us;
	size_t v;

	if (n == 0)
		return 0;
	if (!(ticks > 1))
		return n;
	v = (size_t)((double)n / (ticks > 1e9 ? 1e9 : (double)(size_t)ticks) + 0.999999);
	return v < 1 ? 1 : v > n ? n : v;
}

/* Why a controller cannot be enabled (or disabled) in a cgroup, for the message. */
static void subtree_cause(const struct drf_reconciler *rc, const char *cg, unsigned bit,
			  bool enable, int err, char *buf, size_t len)
{
	unsigned offered = 0;
	int nprocs;

	if (enable && err == -ENOENT && cgfs_controllers(rc->fs, cg, &offered) == 0 &&
	    !(offered & bit)) {
		snprintf(buf, len, "its parent no longer passes '%s' down (not in %s%s%s"
			 "cgroup.controllers)", cgfs_ctrl_name(bit), cg[0] ? cg : "", cg[0] ? "/" : "",
			 "");
		return;
	}
	if (err == -EBUSY && enable && (nprocs = cgfs_nprocs(rc->fs, cg)) > 0) {
		snprintf(buf, len, "it holds %d process%s, and cgroup v2 lets no cgroup with "
			 "processes pass controllers down", nprocs, nprocs == 1 ? "" : "es");
		return;
	}
	if (err == -EBUSY && !enable) {
		snprintf(buf, len, "a cgroup below it still enables '%s' in its own "
			 "cgroup.subtree_control", cgfs_ctrl_name(bit));
		return;
	}
	snprintf(buf, len, "%s", strerror(-err));
}

/*
 * Makes cg pass exactly the plan's controllers down, one controller per write
 * so that one refusal does not block the others. Returns the bits that failed.
 */
static unsigned set_subtree(struct drf_reconciler *rc, const char *cg, int *errs,
			    struct drf_reconcile_stats *st)
{
	unsigned have = 0, failed = 0;
	int r;

	/* systemd's to decide from its units' properties (a knob set enables its controller). */
	if (rc->by_systemd)
		return 0;
	r = cgfs_subtree_control(rc->fs, cg, &have);

	/* Unreadable as missing: nothing enabled; a dry run of an absent tree gets "+x". */
	if (r < 0 && r != -ENOENT)
		return MANAGED_CTRLS & rc->ctrls;
	for (int i = 0; i < CGFS_NCTRL; i++) {
		unsigned bit = 1u << i;
		bool want = rc->ctrls & bit;
		char cmd[16], why[256];

		if (!(MANAGED_CTRLS & bit) || want == !!(have & bit))
			continue;
		snprintf(cmd, sizeof(cmd), "%c%s", want ? '+' : '-', cgfs_ctrl_name(bit));
		r = cgfs_write(rc->fs, cg, "cgroup.subtree_control", cmd);
		if (r == 0) {
			st->writes++;
			if (errs)
				errs[i] = 0;
			continue;
		}
		failed |= bit;
		st->errors++;
		if (errs && errs[i] == r)
			continue; /* said already */
		if (errs)
			errs[i] = r;
		subtree_cause(rc, cg, bit, want, r, why, sizeof(why));
		drf_log(&rc->log, LOG_ERR, "cannot write '%s' to '%s%s%s/cgroup.subtree_control': "
					   "%s", cmd, rc->fs->root, cg[0] ? "/" : "", cg, why);
	}
	return failed;
}

/*
 * mkdir the tenant's path, with the controllers enabled in each inner node:
 * 1 if it made the node's own cgroup, 0 if that was there, or -errno.
 */
static int ensure_cgroup(struct drf_reconciler *rc, struct drf_tenant_rt *t,
			 struct drf_reconcile_stats *st)
{
	char path[4096];
	size_t n = strlen(t->cgroup);
	bool made = false;

	if (n >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, t->cgroup, n + 1);
	for (size_t i = 0; i <= n; i++) {
		char buf[8];
		int r;

		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		r = (int)cgfs_read(rc->fs, path, "cgroup.type", buf, sizeof(buf));
		if (r == -ENOENT) {
			r = cgfs_mkdir_p(rc->fs, path);
			if (r < 0)
				return r;
			made = i == n;
			if (!made)
				st->created++;
		} else if (r < 0) {
			return r;
		}
		if (i < n || t->kind == DRF_NODE_INNER) {
			/*
			 * An inner node of a nested tenant path passes the controllers
			 * on, and so does a tenant's cgroup to its tasks': a task's
			 * cgroup below one that cannot (it holds processes of its
			 * own) would hold no limits, so it is not made.
			 */
			int errs[CGFS_NCTRL] = { 0 };
			unsigned failed = set_subtree(rc, path, t->kind == DRF_NODE_TASK ? errs : NULL,
						      st);

			if (failed && t->kind == DRF_NODE_TASK)
				return errs[__builtin_ctz(failed)];
			if (i < n)
				path[i] = '/';
		}
	}
	if (made) {
		if (t->seen_once) {
			st->recreated++;
			drf_log(&rc->log, LOG_WARNING, "%s '%s': '%s/%s' had been removed by "
						       "someone else; recreated it",
				KIND(t), t->name, rc->fs->root, t->cgroup);
		} else {
			/* Said with its knobs, in one line (write_changes). */
			st->created++;
		}
		/* A new cgroup holds the kernel's defaults, not what drfd saw before. */
		t->known = 0;
	}
	t->exists = true;
	t->seen_once = true;
	return made;
}

static unsigned long long parse_bytes(const char *s)
{
	return strcmp(s, "max") == 0 ? ~0ULL : strtoull(s, NULL, 10);
}

/* A failed read or write of knob k: counted every tick, said once, retried. */
static void knob_failed(struct drf_reconciler *rc, struct drf_tenant_rt *t, enum drf_knob k,
			bool write, int err, struct drf_reconcile_stats *st)
{
	const char *file = drf_knob_file(k, rc->io);
	char what[DRF_KNOB_LEN + 32];

	st->errors++;
	t->failed |= KNOB_BIT(k);
	t->known &= ~KNOB_BIT(k);
	if (t->err[k] == -err)
		return; /* each failure is said once, not every tick */
	t->err[k] = -err;
	if (write)
		snprintf(what, sizeof(what), "write '%s' to", t->want->val[k]);
	else
		snprintf(what, sizeof(what), "read");
	if (err == -ENOENT)
		drf_log(&rc->log, LOG_ERR, "cannot %s '%s/%s/%s': the file is missing, so the "
					   "controller is not enabled for this cgroup (its "
					   "parent's cgroup.subtree_control lacks it); will retry",
			what, rc->fs->root, t->cgroup, file);
	else
		drf_log(&rc->log, LOG_ERR, "cannot %s '%s/%s/%s': %s; will retry",
			what, rc->fs->root, t->cgroup, file, strerror(-err));
}

/* The device line "MAJ:MIN ..." of our io device in content, if any. */
static bool has_device_line(const char *content, const struct drf_io_target *io)
{
	char dev[32];
	size_t n;

	if (!io)
		return false;
	n = (size_t)snprintf(dev, sizeof(dev), "%u:%u ", io->major, io->minor);
	for (const char *l = content; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, dev, n) == 0)
			return true;
	return false;
}

/* seen[k] = v as the kernel holds it once written (memory in whole pages). */
static void set_seen_written(const struct drf_reconciler *rc, struct drf_tenant_rt *t,
			     enum drf_knob k, const char *v)
{
	char form[DRF_KNOB_LEN];

	drf_knob_kernel_form(k, v, rc->page_size, form, sizeof(form));
	set_seen(t, k, form);
}

/* Knob k of t holds what was wanted: its failure, if any, is over. */
static void knob_holds(struct drf_reconciler *rc, struct drf_tenant_rt *t, enum drf_knob k,
		       const char *file, bool written)
{
	if (t->err[k])
		drf_log(&rc->log, LOG_NOTICE, "%s '%s': %s %s after %s", KIND(t), t->name, file,
			written ? "written" : "holds its value again", strerror(t->err[k]));
	t->err[k] = 0;
	t->failed &= ~KNOB_BIT(k);
	t->known |= KNOB_BIT(k);
}

/*
 * memory.max below current usage: the kernel would reclaim, then OOM-kill,
 * inside the write. Lower memory.high first, on the worker; write memory.max
 * on a later tick, once usage is under it. Returns true while memory.max and
 * memory.high must wait.
 */
static bool memory_gate(struct drf_reconciler *rc, struct drf_tenant_rt *t,
			struct drf_reconcile_stats *st)
{
	const char *want = t->want->val[DRF_KNOB_MEMORY_MAX];
	unsigned long long usage, target = parse_bytes(want);
	char cur[64];
	int r;

	if (target == ~0ULL) {
		t->tightening = false;
		return false;
	}
	if (t->tightening && strcmp(t->target, want) != 0)
		t->tightening = false; /* a new target: start over */
	if (cgfs_read(rc->fs, t->cgroup, "memory.current", cur, sizeof(cur)) < 0) {
		t->tightening = false;
		return false;
	}
	usage = strtoull(cur, NULL, 10);
	if (usage <= target) {
		if (t->tightening)
			drf_log(&rc->log, LOG_INFO, "tenant '%s': memory usage %llu is under %s "
						    "now", t->name, usage, want);
		t->tightening = false;
		return false;
	}
	st->pending++;
	if (t->tightening)
		return true;
	t->tightening = true;
	snprintf(t->target, sizeof(t->target), "%s", want);
	drf_log(&rc->log, LOG_NOTICE, "tenant '%s': memory.max %s is below usage %llu: lowering "
				      "memory.high first, memory.max once usage is under it",
		t->name, want, usage);
	if (rc->worker) {
		r = worker_post(rc->worker, t->cgroup, want);
		if (r < 0) {
			knob_failed(rc, t, DRF_KNOB_MEMORY_HIGH, true, r, st);
			t->tightening = false;
		} else {
			t->job_queued = true;
		}
		return true;
	}
	r = cgfs_write(rc->fs, t->cgroup, "memory.high", want);
	if (r < 0) {
		knob_failed(rc, t, DRF_KNOB_MEMORY_HIGH, true, r, st);
		t->tightening = false;
	} else {
		set_seen(t, DRF_KNOB_MEMORY_HIGH, want);
		t->known |= KNOB_BIT(DRF_KNOB_MEMORY_HIGH);
	}
	return true;
}

/*
 * memory.max before memory.high: whether limits rise or fall (above usage),
 * high then never sits above max on the way.
 */
static const enum drf_knob write_order[] = {
	DRF_KNOB_CPU_WEIGHT, DRF_KNOB_CPU_MAX, DRF_KNOB_MEMORY_LOW, DRF_KNOB_MEMORY_MAX,
	DRF_KNOB_MEMORY_SWAP_MAX, DRF_KNOB_MEMORY_HIGH, DRF_KNOB_IO_WEIGHT, DRF_KNOB_IO_MAX,
};

/* What was last read back or written of k is what is wanted, as the kernel holds it. */
static bool in_sync(const struct drf_reconciler *rc, const struct drf_tenant_rt *t,
		    enum drf_knob k)
{
	return (t->known & KNOB_BIT(k)) && !(t->failed & KNOB_BIT(k)) &&
	       (strcmp(t->seen[k], t->want->val[k]) == 0 ||
		drf_knob_matches(k, t->want->val[k], t->seen[k], rc->io, rc->page_size));
}

/* Whether a tick has anything to do for t without verifying it. */
static bool needs_work(const struct drf_reconciler *rc, const struct drf_tenant_rt *t)
{
	if (!t->exists || t->failed || t->tightening)
		return true;
	for (int k = 0; k < DRF_NKNOBS; k++)
		if (t->want->set[k] && !in_sync(rc, t, k))
			return true;
	return false;
}

static int cgroup_gone(struct drf_reconciler *rc, struct drf_tenant_rt *t)
{
	char buf[8];

	return cgfs_read(rc->fs, t->cgroup, "cgroup.type", buf, sizeof(buf)) == -ENOENT;
}

/*
 * The changes a node needs, in write order: its knobs, and before io.weight,
 * when a line for our device overrides "default N", that line dropped.
 */
struct changes {
	struct cgfs_change ch[DRF_NKNOBS + 1];
	enum drf_knob knob[DRF_NKNOBS + 1];
	char have[DRF_NKNOBS + 1][DRF_KNOB_LEN]; /* what it held: for the log; "" unread */
	char reset[48];
	size_t n;
	unsigned bits;
};

static void add_change(struct changes *c, const struct drf_reconciler *rc,
		       const struct drf_tenant_rt *t, enum drf_knob k, const char *have)
{
	const char *file = drf_knob_file(k, rc->io);

	if (k == DRF_KNOB_IO_WEIGHT && have && has_device_line(have, rc->io)) {
		/*
		 * A per-device weight overrides "default N" for our device: drop
		 * it, and before "default N". BFQ drops a device's weight by
		 * setting the group to the weight it has in effect, which would
		 * be the old device weight again after "default N"
		 * (bfq_io_set_device_weight()); "default N" then sets every
		 * device without a weight of its own to N.
		 */
		snprintf(c->reset, sizeof(c->reset), "%u:%u default", rc->io->major,
			 rc->io->minor);
		c->ch[c->n] = (struct cgfs_change){ .file = file, .val = c->reset };
		c->knob[c->n] = k;
		c->have[c->n][0] = '\0';
		c->n++;
	}
	c->ch[c->n] = (struct cgfs_change){ .file = file, .val = t->want->val[k] };
	c->knob[c->n] = k;
	snprintf(c->have[c->n], sizeof(c->have[c->n]), "%s", have ? have : "");
	c->n++;
	c->bits |= KNOB_BIT(k);
}

/* "cpu.weight 100 -> 200, memory.low (unread) -> 1G": the changes, for one log line. */
static void changes_text(const struct changes *c, bool fresh, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < c->n && o < len; i++) {
		/* A device line dropped before io.weight is said with it. */
		if (i + 1 < c->n && c->knob[i + 1] == c->knob[i])
			continue;
		if (fresh)
			o += (size_t)snprintf(buf + o, len - o, "%s%s %s", i ? ", " : "",
					      c->ch[i].file, c->ch[i].val);
		else
			o += (size_t)snprintf(buf + o, len - o, "%s%s %s -> %s", i ? ", " : "",
					      c->ch[i].file, c->have[i][0] ? c->have[i]
								       : "(unread)",
					      c->ch[i].val);
	}
}

/* The changes made one write at a time: each knob's outcome its own. */
static void write_changes(struct drf_reconciler *rc, struct drf_tenant_rt *t,
			  const struct changes *c, bool fresh, struct drf_reconcile_stats *st)
{
	struct changes done = { 0 };
	char text[1024];

	for (size_t i = 0; i < c->n; i++) {
		enum drf_knob k = c->knob[i];
		int r = cgfs_write(rc->fs, t->cgroup, c->ch[i].file, c->ch[i].val);

		if (r < 0) {
			/* The device line not dropped: "default N" is not tried either. */
			if (i + 1 < c->n && c->knob[i + 1] == k)
				i++;
			knob_failed(rc, t, k, true, r, st);
			continue;
		}
		if (i + 1 < c->n && c->knob[i + 1] == k)
			continue;
		st->writes++;
		knob_holds(rc, t, k, c->ch[i].file, true);
		set_seen_written(rc, t, k, c->ch[i].val);
		done.ch[done.n] = c->ch[i];
		done.knob[done.n] = k;
		memcpy(done.have[done.n], c->have[i], sizeof(done.have[0]));
		done.n++;
	}
	if (!done.n)
		return;
	/* One line a node: a new tenant's knobs are said with its creation. */
	changes_text(&done, fresh, text, sizeof(text));
	if (fresh)
		drf_log(&rc->log, LOG_INFO, "%s '%s': created '%s/%s' with %s", KIND(t), t->name,
			rc->fs->root, t->cgroup, text);
	else
		drf_log(&rc->log, LOG_INFO, "%s '%s': %s", KIND(t), t->name, text);
}

static void on_applied(void *data, const char *cg, int err)
{
	struct drf_applied *a = data;
	struct drf_reconciler *rc = a->rc;

	(void)cg;
	a->err = err;
	a->next = rc->applied;
	rc->applied = a;
	if (rc->wake)
		rc->wake(rc->wake_ctx);
}

/* The outcome of node t's apply: a failure is each of its knobs', retried like a write's. */
static void applied(struct drf_reconciler *rc, struct drf_tenant_rt *t, int err,
		    struct drf_reconcile_stats *st)
{
	bool create = t->apply_create;
	unsigned bits = t->apply_bits;

	t->applying = false;
	t->apply_create = false;
	t->apply_bits = 0;
	rc->applying--;
	if (err == 0) {
		for (int k = 0; k < DRF_NKNOBS; k++)
			if (bits & KNOB_BIT(k))
				knob_holds(rc, t, (enum drf_knob)k, drf_knob_file((enum drf_knob)k,
										  rc->io), true);
		if (create) {
			t->cg_err = 0;
			t->seen_once = true;
		}
		return;
	}
	if (create) {
		st->errors++;
		if (t->cg_err != -err)
			drf_log(&rc->log, LOG_ERR, "cannot create cgroup '%s/%s' of %s '%s': %s; will "
						   "retry", rc->fs->root, t->cgroup, KIND(t), t->name,
				strerror(-err));
		t->cg_err = -err;
		t->exists = false;
		t->known = 0;
		return;
	}
	for (int k = 0; k < DRF_NKNOBS; k++)
		if (bits & KNOB_BIT(k))
			knob_failed(rc, t, (enum drf_knob)k, true, err, st);
}

/* The node at position o of the pass's order: inner nodes (parents first), tenants, tasks'. */
static size_t pass_node(const struct drf_reconciler *rc, size_t o)
{
	return o < rc->n_inner ? rc->n + o : o < rc->n_inner + rc->n ? o - rc->n_inner : o;
}

/* Node i's position in the pass's order (pass_node's inverse). */
static size_t pass_order(const struct drf_reconciler *rc, size_t i)
{
	return i < rc->n ? rc->n_inner + i : i < rc->n + rc->n_inner ? i - rc->n : i;
}

/* Takes the outcomes that came since the last step, oldest first. */
static void take_applied(struct drf_reconciler *rc, struct drf_reconcile_stats *st)
{
	struct drf_applied *a = rc->applied, *rev = NULL;

	rc->applied = NULL;
	while (a) {
		struct drf_applied *next = a->next;

		a->next = rev;
		rev = a;
		a = next;
	}
	while (rev) {
		struct drf_applied *next = rev->next;
		ssize_t i = index_find(&rc->index, rev->cgroup);

		if (i >= 0 && rc->t[i].applying) {
			applied(rc, &rc->t[i], rev->err, st);
			/*
			 * Its wants changed while it was under way (a reload): worked
			 * on in this pass still, if it went by meanwhile.
			 */
			if (rev->err == 0 && rc->pass_on && needs_work(rc, &rc->t[i]) &&
			    rc->pass_pos > pass_order(rc, (size_t)i))
				rc->pass_pos = pass_order(rc, (size_t)i);
		} else if (i < 0) {
			/* A node that left meanwhile: its orphan may be removed now. */
			ssize_t o = orphan_find(rc, rev->cgroup);

			if (o >= 0 && rc->orphans[o].applying) {
				rc->orphans[o].applying = false;
				rc->applying--;
				/* Tried in this pass still, if it went by meanwhile. */
				if (rc->orphan_pos > (size_t)o)
					rc->orphan_pos = (size_t)o;
			}
		}
		free(rev);
		rev = next;
	}
}

/*
 * The changes sent as one apply: the node is under way until its outcome,
 * what it will hold taken as seen meanwhile (a failure undoes that).
 * -EAGAIN: the backend takes no more now; the node is worked on again later.
 */
static int send_changes(struct drf_reconciler *rc, struct drf_tenant_rt *t,
			const struct changes *c, bool create, struct drf_reconcile_stats *st)
{
	size_t len = strlen(t->cgroup);
	struct drf_applied *a = malloc(sizeof(*a) + len + 1);
	const struct cgfs_done done = { .fn = on_applied, .data = a };
	char text[1024];
	int r;

	if (!a)
		return -EAGAIN; /* worked on again at the next step */
	a->rc = rc;
	memcpy(a->cgroup, t->cgroup, len + 1);
	/* Under way before the call: a backend may give the outcome from within it. */
	t->applying = true;
	t->apply_create = create;
	t->apply_bits = c->bits;
	rc->applying++;
	for (size_t i = 0; i < c->n; i++)
		if (!(i + 1 < c->n && c->knob[i + 1] == c->knob[i]))
			set_seen_written(rc, t, c->knob[i], c->ch[i].val);
	t->known |= c->bits;
	r = cgfs_apply(rc->fs, t->cgroup, create, c->ch, c->n, &done);
	if (r < 0) {
		free(a);
		t->applying = false;
		t->apply_create = false;
		t->apply_bits = 0;
		rc->applying--;
		t->known &= ~c->bits;
		if (r == -EAGAIN)
			return r;
		if (create) {
			st->errors++;
			if (t->cg_err != -r)
				drf_log(&rc->log, LOG_ERR, "cannot create cgroup '%s/%s' of %s '%s': "
							   "%s; will retry", rc->fs->root, t->cgroup,
					KIND(t), t->name, strerror(-r));
			t->cg_err = -r;
			return 0;
		}
		for (size_t i = 0; i < c->n; i++)
			knob_failed(rc, t, c->knob[i], true, r, st);
		return 0;
	}
	st->applies++;
	st->writes += (unsigned)__builtin_popcount(c->bits);
	if (create) {
		st->created++;
		t->exists = true;
	}
	changes_text(c, create, text, sizeof(text));
	if (create)
		drf_log(&rc->log, LOG_INFO, "%s '%s': creating '%s/%s' with %s", KIND(t), t->name,
			rc->fs->root, t->cgroup, text);
	else if (c->n)
		drf_log(&rc->log, LOG_INFO, "%s '%s': %s", KIND(t), t->name, text);
	return 0;
}

/*
 * Whether val is what a new cgroup's knob k holds (cgroup v2's defaults, and
 * systemd's for a unit that sets nothing): no limit, weight 100, no protection.
 */
static bool kernel_default(enum drf_knob k, const char *val)
{
	switch (k) {
	case DRF_KNOB_CPU_WEIGHT:
		return strcmp(val, "100") == 0;
	case DRF_KNOB_CPU_MAX:
		return strcmp(val, "max 100000") == 0;
	case DRF_KNOB_MEMORY_LOW:
		return strcmp(val, "0") == 0;
	case DRF_KNOB_MEMORY_HIGH:
	case DRF_KNOB_MEMORY_MAX:
	case DRF_KNOB_MEMORY_SWAP_MAX:
		return strcmp(val, "max") == 0;
	case DRF_KNOB_IO_WEIGHT:
	case DRF_KNOB_IO_MAX:
	case DRF_NKNOBS:
		break;
	}
	return false;
}


/*
 * The setting an operator types (systemctl set-property, a unit file) for a
 * D-Bus property: they differ for the CPU quota only.
 */
static const char *setting_of(const char *prop)
{
	if (strcmp(prop, "CPUQuotaPerSecUSec") == 0)
		return "CPUQuota";
	if (strcmp(prop, "CPUQuotaPeriodUSec") == 0)
		return "CPUQuotaPeriodSec";
	return prop;
}

/*
 * A knob someone else changed, said at warning: under systemd, with the unit's
 * property that holds it (drf-web.slice's CPUWeight=: systemctl set-property
 * on a tenant's slice is put back, and the operator should hear which).
 */
static void foreign_log(struct drf_reconciler *rc, const struct drf_tenant_rt *t, const char *file,
			const char *have, const char *want)
{
	struct cgfs_prop props[4];
	char unit[128] = "", via[256] = "";
	int n = rc->by_systemd ? cgfs_slice_props(file, want, props, 4) : -1;

	if (n > 0 && cgfs_slice_unit(t->cgroup, unit, sizeof(unit)) == 0) {
		size_t o = (size_t)snprintf(via, sizeof(via), " (%s's", unit);

		for (int i = 0; i < n && o < sizeof(via); i++)
			o += (size_t)snprintf(via + o, sizeof(via) - o, "%s %s=", i ? "," : "",
					      setting_of(props[i].name));
		if (o < sizeof(via))
			snprintf(via + o, sizeof(via) - o, ", as systemctl set-property sets)");
	}
	drf_log(&rc->log, LOG_WARNING, "%s '%s': %s%s was changed by someone else to '%s'; "
				       "restoring '%s'", KIND(t), t->name, file, via, have, want);
}

/*
 * What node t needs, into c: each knob set and not as wanted (read back first
 * when verifying or unknown), memory.max and memory.high held while usage is
 * above the new memory.max (memory_gate). Returns 1 if the cgroup vanished
 * under us (made again by the caller), else 0.
 */
static int collect(struct drf_reconciler *rc, struct drf_tenant_rt *t, bool verify, bool made,
		   bool create, struct changes *c, struct drf_reconcile_stats *st)
{
	bool hold = false;

	for (size_t o = 0; o < sizeof(write_order) / sizeof(write_order[0]); o++) {
		enum drf_knob k = write_order[o];
		const char *file = drf_knob_file(k, rc->io);
		char have[512];
		ssize_t n;

		if (!t->want->set[k])
			continue;
		if (hold && (KNOB_BIT(k) & MEMORY_BITS))
			continue;
		if (create && kernel_default(k, t->want->val[k])) {
			/* What a new cgroup holds already: not asked of systemd. */
			set_seen(t, k, t->want->val[k]);
			t->known |= KNOB_BIT(k);
			continue;
		}
		if (create) {
			add_change(c, rc, t, k, NULL);
			continue;
		}
		if (!verify && in_sync(rc, t, k) && !(k == DRF_KNOB_MEMORY_MAX && t->tightening))
			continue;
		n = -1;
		if (verify || !(t->known & KNOB_BIT(k))) {
			n = cgfs_read(rc->fs, t->cgroup, file, have, sizeof(have));
			if (n == -ENOENT && t->kind != DRF_NODE_ROOT && cgroup_gone(rc, t)) {
				/*
				 * Removed under us: make it again. Just made and still
				 * gone is a dry run's tree: write without reading.
				 */
				if (made) {
					add_change(c, rc, t, k, NULL);
					continue;
				}
				return 1;
			}
			/*
			 * systemd makes a knob's file once a property needs its
			 * controller: with slices, a missing file is set, which
			 * makes it.
			 */
			/*
			 * The root's file missing: its parent passes no memory down
			 * (the write then fails, said and retried), or a dry run's
			 * empty tree: written without reading.
			 */
			if (n == -ENOENT && (rc->by_systemd || t->kind == DRF_NODE_ROOT)) {
				add_change(c, rc, t, k, NULL);
				continue;
			}
			if (n < 0) {
				knob_failed(rc, t, k, false, (int)n, st);
				continue;
			}
			if (drf_knob_matches(k, t->want->val[k], have, rc->io, rc->page_size) &&
			    !(k == DRF_KNOB_IO_WEIGHT && has_device_line(have, rc->io))) {
				set_seen_written(rc, t, k, t->want->val[k]);
				knob_holds(rc, t, k, file, false);
				if (k == DRF_KNOB_MEMORY_MAX)
					t->tightening = false;
				continue;
			}
			if ((t->known & KNOB_BIT(k)) &&
			    (!drf_knob_matches(k, t->seen[k], have, rc->io, rc->page_size) ||
			     (k == DRF_KNOB_IO_WEIGHT && has_device_line(have, rc->io)))) {
				st->foreign++;
				rc->total_foreign++;
				foreign_log(rc, t, file, have, t->want->val[k]);
			}
			/* What the file holds now, so that a held write is not forgotten. */
			set_seen(t, k, have);
			t->known |= KNOB_BIT(k);
		}
		if (k == DRF_KNOB_MEMORY_MAX && memory_gate(rc, t, st)) {
			hold = true;
			continue;
		}
		add_change(c, rc, t, k, n >= 0 ? have : t->known & KNOB_BIT(k) ? t->seen[k] : NULL);
	}
	return 0;
}

/*
 * One node's work: its cgroup made if missing, its knobs read back if
 * verify, what differs written (or sent as one apply). -EAGAIN: the backend
 * takes no more applies now (nothing was done to t); else 0.
 */
static int process(struct drf_reconciler *rc, struct drf_tenant_rt *t, bool verify,
		   struct drf_reconcile_stats *st)
{
	bool made = false, fresh = false, create = false, async = cgfs_async(rc->fs);
	struct changes c = { 0 };
	int r;

	if (!t->exists && t->kind == DRF_NODE_TASK && rc->tasks_by_spawn) {
		/* Its unit starts with its limits and its command: only looked for here. */
		if (cgroup_gone(rc, t))
			return 0;
		t->exists = t->seen_once = true;
		verify = true;
	}
	if (!t->exists && async) {
		/*
		 * Made by its apply, with its knobs: its parents are nodes of the
		 * plan before it, whose applies went first.
		 */
		create = cgroup_gone(rc, t);
		if (create && t->seen_once) {
			st->recreated++;
			drf_log(&rc->log, LOG_WARNING, "%s '%s': '%s/%s' had been removed by "
						       "someone else; making it again",
				KIND(t), t->name, rc->fs->root, t->cgroup);
		}
		t->known = 0;
		if (!create) {
			t->exists = t->seen_once = true;
			verify = true;
		}
	} else if (!t->exists) {
		made = true;
		r = ensure_cgroup(rc, t, st);
		fresh = r > 0;
		if (r < 0) {
			st->errors++;
			if (t->cg_err != -r)
				drf_log(&rc->log, LOG_ERR, "cannot create cgroup '%s/%s' of %s "
							   "'%s': %s; will retry",
					rc->fs->root, t->cgroup, KIND(t), t->name, strerror(-r));
			t->cg_err = -r;
			return 0;
		}
		t->cg_err = 0;
		verify = true; /* first look at it (after a restart): read before writing */
	}
	if (collect(rc, t, verify, made, create, &c, st)) {
		t->exists = false;
		t->known = 0;
		return process(rc, t, true, st);
	}
	if (async && (c.n || create)) {
		r = send_changes(rc, t, &c, create, st);
		if (r < 0)
			return r;
	} else if (c.n) {
		write_changes(rc, t, &c, fresh, st);
	} else if (fresh) {
		drf_log(&rc->log, LOG_INFO, "%s '%s': created '%s/%s'", KIND(t), t->name,
			rc->fs->root, t->cgroup);
	}
	if (verify) {
		t->verified_tick = rc->ticks;
		st->verified++;
	}
	return 0;
}

static void check_root(struct drf_reconciler *rc, struct drf_reconcile_stats *st)
{
	rc->root_failed = set_subtree(rc, "", rc->root_err, st);
	rc->root_checked = true;
}

void drf_reconcile_begin(struct drf_reconciler *rc, size_t verify)
{
	size_t total = rc->n + rc->n_inner + rc->n_task;

	bool was_on = rc->pass_on;

	if (!rc->pass_on)
		rc->pass_st = (struct drf_reconcile_stats){ 0 };
	rc->pass_on = true;
	rc->pass_pos = 0;
	rc->orphan_pos = 0;
	if (verify > total)
		verify = total;
	/* A pass started over without a window of its own (a new plan) keeps the tick's. */
	if (!was_on || verify) {
		rc->pass_start = rc->cursor;
		rc->pass_end = rc->cursor + verify;
		if (total)
			rc->cursor = rc->pass_end % total;
	}
	/* The root's controllers: at start, while failing, and once per verify round. */
	if (!rc->root_checked || rc->root_failed || rc->pass_start == 0)
		check_root(rc, &rc->pass_st);
}

/* The end of a pass: its figures. */
static void pass_end(struct drf_reconciler *rc, struct drf_reconcile_stats *ret)
{
	struct drf_reconcile_stats *st = &rc->pass_st;
	size_t total = rc->n + rc->n_inner + rc->n_task;

	st->retrying = 0;
	for (size_t i = 0; i < total; i++)
		st->retrying += (unsigned)__builtin_popcount(rc->t[i].failed) + (rc->t[i].cg_err != 0);
	rc->ticks++;
	rc->total_writes += st->writes;
	rc->total_applies += st->applies;
	rc->total_errors += st->errors;
	rc->pass_on = false;
	if (ret)
		*ret = *st;
}

enum drf_pass drf_reconcile_step(struct drf_reconciler *rc, struct drf_reconcile_stats *ret)
{
	struct drf_reconcile_stats *st = &rc->pass_st;
	size_t total = rc->n + rc->n_inner + rc->n_task, worked = 0;
	uint64_t t0 = rc->clock && rc->step_usec ? drf_mono_usec(rc->clock) : 0;

	if (!rc->pass_on)
		drf_reconcile_begin(rc, 0);
	st->steps++;
	worker_collect(rc, false, st);
	take_applied(rc, st);
	while (rc->pass_pos < total) {
		size_t o = rc->pass_pos, i = pass_node(rc, o);
		struct drf_tenant_rt *t = &rc->t[i];
		bool v = (i >= rc->pass_start && i < rc->pass_end) ||
			 (rc->pass_end > total && i < rc->pass_end - total);

		if (worked >= rc->step_nodes ||
		    (t0 && worked && drf_mono_usec(rc->clock) - t0 >= rc->step_usec))
			return DRF_PASS_MORE;
		/* Its memory.high write is with the worker, or its apply under way. */
		if (!t->job_queued && !t->applying && (v || needs_work(rc, t))) {
			if (process(rc, t, v, st) == -EAGAIN)
				return DRF_PASS_WAITING;
			worked++;
		}
		rc->pass_pos++;
	}
	/* Departed nodes' cgroups, removed if empty, in the order they left. */
	while (rc->orphan_pos < rc->n_orphans) {
		if (worked >= rc->step_nodes ||
		    (t0 && worked && drf_mono_usec(rc->clock) - t0 >= rc->step_usec))
			return DRF_PASS_MORE;
		worked++;
		if (!try_remove(rc, rc->orphan_pos, st))
			rc->orphan_pos++;
	}
	if (rc->applying)
		return DRF_PASS_WAITING;
	pass_end(rc, ret);
	return DRF_PASS_DONE;
}

int drf_reconcile_tick(struct drf_reconciler *rc, size_t verify, struct drf_reconcile_stats *ret)
{
	size_t nodes = rc->step_nodes;
	uint64_t usec = rc->step_usec;

	rc->step_nodes = SIZE_MAX;
	rc->step_usec = 0;
	drf_reconcile_begin(rc, verify);
	while (drf_reconcile_step(rc, ret) != DRF_PASS_DONE) {
		/* Applies that complete later: a caller with a loop steps instead. */
		if (rc->applying && !rc->applied) {
			if (ret)
				*ret = rc->pass_st;
			break;
		}
	}
	rc->step_nodes = nodes;
	rc->step_usec = usec;
	return 0;
}

int drf_reconciler_ready(const struct drf_reconciler *rc, const char *cg, char *why, size_t len)
{
	ssize_t i = index_find(&rc->index, cg);
	const struct drf_tenant_rt *t;

	if (i < 0) {
		snprintf(why, len, "'%s/%s' is not in the plan", rc->fs->root, cg);
		return -ENOENT;
	}
	t = &rc->t[i];
	if (t->cg_err) {
		snprintf(why, len, "cannot create cgroup '%s/%s': %s", rc->fs->root, cg,
			 strerror(t->cg_err));
		return -t->cg_err;
	}
	for (int k = 0; k < DRF_NKNOBS; k++)
		if (t->want->set[k] && (t->failed & KNOB_BIT(k))) {
			snprintf(why, len, "cannot write '%s' to '%s/%s/%s': %s", t->want->val[k],
				 rc->fs->root, cg, drf_knob_file((enum drf_knob)k, rc->io),
				 strerror(t->err[k]));
			return -t->err[k];
		}
	/* Not started yet: its unit is started with its limits (drf_reconciler_want). */
	if (!t->exists && t->kind == DRF_NODE_TASK && rc->tasks_by_spawn)
		return 1;
	if (t->applying)
		return 0;
	return t->exists && !needs_work(rc, t) ? 1 : 0;
}

const struct drf_knobs *drf_reconciler_want(const struct drf_reconciler *rc, const char *cg)
{
	ssize_t i = index_find(&rc->index, cg);

	return i < 0 ? NULL : rc->t[i].want;
}
