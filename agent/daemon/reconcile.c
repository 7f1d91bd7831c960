// SPDX-License-Identifier: MIT
#include "reconcile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEM_QUEUE 64

struct drf_tenant_state {
	char *cgroup;
	bool written[DRF_NKNOBS];
	char last[DRF_NKNOBS][DRF_KNOB_LEN];
	bool tightening; /* memory.high lowered; memory.max waits for usage to drop */
	char target[DRF_KNOB_LEN];
};

struct mem_job {
	char cgroup[512];
	char high[DRF_KNOB_LEN];
};

/* One thread that does the memory.high writes the kernel may take long over. */
struct drf_mem_worker {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv, idle;
	struct mem_job q[MEM_QUEUE];
	size_t head, len;
	bool busy, stop;
	const struct cgfs *fs;
	FILE *log;
};

static void *worker_main(void *arg)
{
	struct drf_mem_worker *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct mem_job job;
		int r;

		while (!w->stop && w->len == 0)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->len == 0)
			break;
		job = w->q[w->head];
		w->head = (w->head + 1) % MEM_QUEUE;
		w->len--;
		w->busy = true;
		pthread_mutex_unlock(&w->mu);
		r = cgfs_write(w->fs, job.cgroup, "memory.high", job.high);
		if (r < 0 && w->log)
			fprintf(w->log, "drfd: cannot write '%s' to '%s/%s/memory.high': %s\n", job.high,
				w->fs->root, job.cgroup, strerror(-r));
		pthread_mutex_lock(&w->mu);
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
	w->log = rc->log;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	pthread_cond_init(&w->idle, NULL);
	r = pthread_create(&w->thread, NULL, worker_main, w);
	if (r) {
		free(w);
		return -r;
	}
	rc->worker = w;
	return 0;
}

static bool worker_post(struct drf_mem_worker *w, const char *cg, const char *high)
{
	bool ok = false;

	pthread_mutex_lock(&w->mu);
	if (w->len < MEM_QUEUE) {
		struct mem_job *j = &w->q[(w->head + w->len) % MEM_QUEUE];

		snprintf(j->cgroup, sizeof(j->cgroup), "%s", cg);
		snprintf(j->high, sizeof(j->high), "%s", high);
		w->len++;
		ok = true;
		pthread_cond_signal(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return ok;
}

void drf_reconciler_drain(struct drf_reconciler *rc)
{
	struct drf_mem_worker *w = rc->worker;

	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	while (w->len > 0 || w->busy)
		pthread_cond_wait(&w->idle, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

int drf_reconciler_init(struct drf_reconciler *rc, const struct cgfs *fs,
			const struct drf_io_target *io, FILE *log, bool async_memory)
{
	memset(rc, 0, sizeof(*rc));
	rc->fs = fs;
	rc->io = io;
	rc->log = log;
	rc->async_memory = async_memory;
	rc->page_size = (unsigned long)sysconf(_SC_PAGESIZE);
	return async_memory ? worker_start(rc) : 0;
}

void drf_reconciler_free(struct drf_reconciler *rc)
{
	struct drf_mem_worker *w = rc->worker;

	if (w) {
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thread, NULL);
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		pthread_cond_destroy(&w->idle);
		free(w);
	}
	for (size_t i = 0; i < rc->n_state; i++)
		free(rc->state[i].cgroup);
	free(rc->state);
	memset(rc, 0, sizeof(*rc));
}

static void __attribute__((format(printf, 2, 3))) say(struct drf_reconciler *rc, const char *fmt,
						      ...)
{
	va_list ap;

	if (!rc->log)
		return;
	va_start(ap, fmt);
	vfprintf(rc->log, fmt, ap);
	va_end(ap);
	fputc('\n', rc->log);
}

/* The state of each tenant of c, carried over by cgroup path from the last pass. */
static int sync_state(struct drf_reconciler *rc, const struct drf_config *c)
{
	struct drf_tenant_state *ns = calloc(c->n_tenants + 1, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < c->n_tenants; i++) {
		const char *cg = c->tenants[i].cgroup;
		size_t j;

		for (j = 0; j < rc->n_state; j++)
			if (rc->state[j].cgroup && strcmp(rc->state[j].cgroup, cg) == 0)
				break;
		if (j < rc->n_state) {
			ns[i] = rc->state[j];
			rc->state[j].cgroup = NULL;
		} else {
			ns[i].cgroup = strdup(cg);
			if (!ns[i].cgroup) {
				for (size_t k = 0; k < i; k++)
					free(ns[k].cgroup);
				free(ns);
				return -ENOMEM;
			}
		}
	}
	for (size_t j = 0; j < rc->n_state; j++)
		free(rc->state[j].cgroup);
	free(rc->state);
	rc->state = ns;
	rc->n_state = c->n_tenants;
	return 0;
}

/* mkdir the tenant's path, with the controllers enabled in each ancestor. */
static int ensure_cgroup(struct drf_reconciler *rc, const char *cg, unsigned ctrls,
			 struct drf_reconcile_stats *st)
{
	char path[4096];
	size_t n = strlen(cg);

	if (n >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, cg, n + 1);
	for (size_t i = 0; i <= n; i++) {
		char buf[8];
		int r;

		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		r = (int)cgfs_read(rc->fs, path, "cgroup.type", buf, sizeof(buf));
		if (r == -ENOENT) {
			r = cgfs_mkdir_p(rc->fs, path);
			if (r < 0) {
				say(rc, "drfd: cannot create cgroup '%s/%s': %s", rc->fs->root, path,
				    strerror(-r));
				return r;
			}
			say(rc, "drfd: created cgroup '%s/%s'", rc->fs->root, path);
			st->created++;
		}
		if (i < n) {
			/* An inner node of a nested tenant path passes the controllers on. */
			r = cgfs_set_subtree(rc->fs, path, ctrls, CGFS_CPU | CGFS_MEMORY | CGFS_IO);
			if (r < 0) {
				say(rc, "drfd: cannot enable controllers in '%s/%s': %s",
				    rc->fs->root, path, strerror(-r));
				return r;
			}
			path[i] = '/';
		}
	}
	return 0;
}

static unsigned long long parse_bytes(const char *s)
{
	return strcmp(s, "max") == 0 ? ~0ULL : strtoull(s, NULL, 10);
}

static void set_knob(struct drf_reconciler *rc, const char *name, struct drf_tenant_state *ts,
		     enum drf_knob k, const char *want, struct drf_reconcile_stats *st)
{
	const char *file = drf_knob_file(k, rc->io);
	char have[512];
	ssize_t n = cgfs_read(rc->fs, ts->cgroup, file, have, sizeof(have));
	int r;

	if (n >= 0 && drf_knob_matches(k, want, have, rc->io, rc->page_size)) {
		ts->written[k] = true;
		snprintf(ts->last[k], DRF_KNOB_LEN, "%s", want);
		return;
	}
	if (n >= 0 && ts->written[k] && !drf_knob_matches(k, ts->last[k], have, rc->io, rc->page_size)) {
		st->foreign++;
		say(rc, "drfd: tenant '%s': %s was changed by someone else to '%s'; restoring '%s'",
		    name, file, have, want);
	}
	r = cgfs_write(rc->fs, ts->cgroup, file, want);
	if (r < 0) {
		st->errors++;
		say(rc, "drfd: cannot write '%s' to '%s/%s/%s': %s", want, rc->fs->root, ts->cgroup,
		    file, strerror(-r));
		return;
	}
	st->writes++;
	ts->written[k] = true;
	snprintf(ts->last[k], DRF_KNOB_LEN, "%s", want);
	say(rc, "drfd: tenant '%s': %s %s -> %s", name, file, n >= 0 ? have : "(unread)", want);
}

/*
 * memory.max below current usage: the kernel would reclaim, then OOM-kill,
 * inside the write. Lower memory.high first, on the worker; write memory.max
 * on a later pass, once usage is under it.
 */
static bool memory_tightening(struct drf_reconciler *rc, const char *name,
			      struct drf_tenant_state *ts, const struct drf_knobs *k,
			      struct drf_reconcile_stats *st)
{
	const char *want = k->val[DRF_KNOB_MEMORY_MAX];
	char cur[64];
	unsigned long long usage, target = parse_bytes(want);

	if (!k->set[DRF_KNOB_MEMORY_MAX] || target == ~0ULL)
		return (ts->tightening = false);
	if (cgfs_read(rc->fs, ts->cgroup, "memory.current", cur, sizeof(cur)) < 0)
		return (ts->tightening = false);
	usage = strtoull(cur, NULL, 10);
	if (ts->tightening && strcmp(ts->target, want) != 0)
		ts->tightening = false; /* a new target: start over */
	if (usage <= target) {
		if (ts->tightening)
			say(rc, "drfd: tenant '%s': memory usage %llu is under %s now", name, usage,
			    want);
		ts->tightening = false;
		return false;
	}
	st->pending++;
	if (ts->tightening)
		return true;
	ts->tightening = true;
	snprintf(ts->target, sizeof(ts->target), "%s", want);
	say(rc, "drfd: tenant '%s': memory.max %s is below usage %llu: lowering memory.high "
		"first, memory.max once usage is under it", name, want, usage);
	if (rc->worker) {
		if (!worker_post(rc->worker, ts->cgroup, want)) {
			st->errors++;
			say(rc, "drfd: tenant '%s': memory queue full; will retry", name);
			ts->tightening = false;
		}
	} else {
		int r = cgfs_write(rc->fs, ts->cgroup, "memory.high", want);

		if (r < 0) {
			st->errors++;
			say(rc, "drfd: cannot write '%s' to '%s/%s/memory.high': %s", want,
			    rc->fs->root, ts->cgroup, strerror(-r));
		}
	}
	return true;
}

/*
 * memory.max before memory.high: whether limits rise or fall (above usage),
 * high then never sits above max on the way.
 */
static const enum drf_knob write_order[] = {
	DRF_KNOB_CPU_WEIGHT, DRF_KNOB_CPU_MAX, DRF_KNOB_MEMORY_LOW, DRF_KNOB_MEMORY_MAX,
	DRF_KNOB_MEMORY_HIGH, DRF_KNOB_IO_WEIGHT, DRF_KNOB_IO_MAX,
};

int drf_reconcile(struct drf_reconciler *rc, const struct drf_config *c,
		  const struct drf_knobs *k, struct drf_reconcile_stats *ret)
{
	struct drf_reconcile_stats st = { 0 };
	unsigned ctrls = drf_knobs_controllers(c);
	int r;

	r = sync_state(rc, c);
	if (r < 0)
		return r;
	r = cgfs_set_subtree(rc->fs, "", ctrls, CGFS_CPU | CGFS_MEMORY | CGFS_IO);
	if (r < 0) {
		say(rc, "drfd: cannot enable controllers in '%s': %s", rc->fs->root, strerror(-r));
		return r;
	}
	if (r > 0)
		st.writes++;
	for (size_t i = 0; i < c->n_tenants; i++) {
		struct drf_tenant_state *ts = &rc->state[i];
		const char *name = c->tenants[i].name;
		bool hold_memory;

		if (ensure_cgroup(rc, ts->cgroup, ctrls, &st) < 0) {
			st.errors++;
			continue;
		}
		hold_memory = memory_tightening(rc, name, ts, &k[i], &st);
		for (size_t o = 0; o < sizeof(write_order) / sizeof(write_order[0]); o++) {
			enum drf_knob j = write_order[o];

			if (!k[i].set[j])
				continue;
			/* While tightening, memory.high holds the target and memory.max waits. */
			if (hold_memory && (j == DRF_KNOB_MEMORY_MAX || j == DRF_KNOB_MEMORY_HIGH))
				continue;
			set_knob(rc, name, ts, j, k[i].val[j], &st);
		}
	}
	if (ret)
		*ret = st;
	return 0;
}

void drf_reconcile_removed(struct drf_reconciler *rc, const struct drf_config *old_cfg,
			   const struct drf_config *new_cfg)
{
	for (size_t i = 0; i < old_cfg->n_tenants; i++) {
		const struct drf_tenant *t = &old_cfg->tenants[i];
		bool kept = false;
		int r;

		for (size_t j = 0; j < new_cfg->n_tenants && !kept; j++)
			kept = strcmp(new_cfg->tenants[j].cgroup, t->cgroup) == 0;
		if (kept)
			continue;
		r = cgfs_remove(rc->fs, t->cgroup);
		if (r == -EBUSY)
			say(rc, "drfd: tenant '%s' is gone from the config but '%s/%s' still holds "
				"processes; leaving it and its limits in place", t->name, rc->fs->root,
			    t->cgroup);
		else if (r < 0 && r != -ENOENT)
			say(rc, "drfd: cannot remove '%s/%s': %s", rc->fs->root, t->cgroup,
			    strerror(-r));
		else if (r == 0)
			say(rc, "drfd: tenant '%s' is gone from the config; removed '%s/%s'", t->name,
			    rc->fs->root, t->cgroup);
	}
}
