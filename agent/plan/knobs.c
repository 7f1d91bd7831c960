// SPDX-License-Identifier: MIT
#include "knobs.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "index.h"
#include "keyfile.h"

#define DRF_STR_(x) #x
#define DRF_STR(x) DRF_STR_(x)

static const char *const knob_files[DRF_NKNOBS] = {
	[DRF_KNOB_CPU_WEIGHT] = "cpu.weight",
	[DRF_KNOB_CPU_MAX] = "cpu.max",
	[DRF_KNOB_MEMORY_LOW] = "memory.low",
	[DRF_KNOB_MEMORY_HIGH] = "memory.high",
	[DRF_KNOB_MEMORY_MAX] = "memory.max",
	[DRF_KNOB_IO_WEIGHT] = "io.weight",
	[DRF_KNOB_IO_MAX] = "io.max",
	[DRF_KNOB_MEMORY_SWAP_MAX] = "memory.swap.max",
};

const char *drf_knob_file(enum drf_knob k, const struct drf_io_target *io)
{
	if (k == DRF_KNOB_IO_WEIGHT && io && io->weights == DRF_IO_WEIGHTS_BFQ)
		return "io.bfq.weight";
	return knob_files[k];
}

unsigned drf_knobs_controllers(const struct drf_config *c)
{
	unsigned m = 0;

	if (c->capacity[DRF_RES_CPU] > 0)
		m |= DRF_CTRL_CPU;
	if (c->capacity[DRF_RES_MEMORY] > 0)
		m |= DRF_CTRL_MEMORY;
	if (c->capacity[DRF_RES_IO_READ] > 0 || c->capacity[DRF_RES_IO_WRITE] > 0)
		m |= DRF_CTRL_IO;
	return m;
}

/* v scaled so that vmax maps to hi; at least 1. */
static long scale_weight(double v, double vmax, long hi)
{
	long w;

	if (!(vmax > 0))
		return 100; /* nothing allocated: the default of cpu.weight, io.weight and BFQ */
	w = lround(v / vmax * (double)hi);
	return w < 1 ? 1 : w > hi ? hi : w;
}

static void set(struct drf_knobs *k, enum drf_knob which, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set(struct drf_knobs *k, enum drf_knob which, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(k->val[which], DRF_KNOB_LEN, fmt, ap);
	va_end(ap);
	k->set[which] = true;
}

/*
 * A whole number in decimal, with what follows; printf's "%.0f" of a double
 * costs more than the rest of the mapping together at 10,000 tenants.
 */
static void fmt_whole(char *buf, size_t len, double v, const char *tail)
{
	char tmp[24];
	size_t n = 0, t = strlen(tail);
	unsigned long long u;

	if (!(v >= 0 && v < 1e19)) {
		snprintf(buf, len, "%.0f%s", v, tail);
		return;
	}
	u = (unsigned long long)v;
	do
		tmp[n++] = (char)('0' + u % 10);
	while ((u /= 10) && n < sizeof(tmp));
	if (n + t + 1 > len) {
		snprintf(buf, len, "%.0f%s", v, tail);
		return;
	}
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	memcpy(buf + n, tail, t + 1);
}

static void bytes_or_max(char *buf, size_t len, double v)
{
	if (isinf(v))
		snprintf(buf, len, "max");
	else
		fmt_whole(buf, len, floor(v), "");
}

void drf_knobs_memory_at_least(struct drf_knobs *k, enum drf_knob which, double bytes)
{
	const char *v = k->val[which], *max = k->val[DRF_KNOB_MEMORY_MAX];

	if (!k->set[which] || strcmp(v, "max") == 0 || !(strtod(v, NULL) < bytes))
		return;
	if (which == DRF_KNOB_MEMORY_HIGH && strcmp(max, "max") != 0)
		bytes = fmin(bytes, strtod(max, NULL));
	bytes_or_max(k->val[which], DRF_KNOB_LEN, bytes);
}

/*
 * The declared total demand of r as a cap: bounded demand, or tasks x task;
 * INFINITY if none, and for a declared 0 (the tenant needs none of r: a zero
 * cap would stop it rather than express that).
 */
double drf_knobs_declared(const struct drf_config *c, size_t i, int r)
{
	const struct drf_tenant *t = &c->tenants[i];

	if (!t->declared[r] || !(t->vec[r] > 0))
		return INFINITY;
	if (!t->task_model)
		return t->vec[r];
	return t->vec[r] > 0 ? t->vec[r] * t->tasks : INFINITY;
}

unsigned drf_knobs_uncapped(const struct drf_config *c, const struct drf_problem *p, size_t i,
			    const struct drf_io_target *io)
{
	unsigned bits = 0, capped = 0;

	/* Where a hard cap at the allocation is written at all. */
	if (c->mode == DRF_MODE_LIMIT)
		capped = (1u << DRF_RES_CPU) | (1u << DRF_RES_MEMORY) | (1u << DRF_RES_IO_READ) |
			 (1u << DRF_RES_IO_WRITE);
	else if (io && io->weights == DRF_IO_WEIGHTS_NONE)
		capped = (1u << DRF_RES_IO_READ) | (1u << DRF_RES_IO_WRITE);
	for (int r = 0; r < DRF_NRES; r++) {
		if (!(p->capacity[r] > 0))
			continue;
		if ((capped & (1u << r)) && !(p->demands[i].shape[r] > 0))
			bits |= 1u << r;
		/* share mode caps at the declared demand: a declared 0 is no cap either */
		if (c->mode == DRF_MODE_SHARE && r != DRF_RES_NET && c->tenants[i].declared[r] &&
		    !(c->tenants[i].vec[r] > 0))
			bits |= 1u << r;
	}
	return bits;
}

/* An io allocation's share: the larger of its read and write shares. */
static double io_share_of(const struct drf_problem *p, double rd, double wr)
{
	double v = 0;

	if (p->capacity[DRF_RES_IO_READ] > 0)
		v = fmax(v, rd / p->capacity[DRF_RES_IO_READ]);
	if (p->capacity[DRF_RES_IO_WRITE] > 0)
		v = fmax(v, wr / p->capacity[DRF_RES_IO_WRITE]);
	return v;
}

static double io_share(const struct drf_problem *p, const struct drf_share *s)
{
	return io_share_of(p, s->alloc[DRF_RES_IO_READ], s->alloc[DRF_RES_IO_WRITE]);
}

/* "rbps=N|max wbps=N|max" for an allocation or demand vector. */
static void io_limits(char *buf, size_t len, const struct drf_io_target *io, double rd, double wr)
{
	char r[32], w[32];

	/* blk-throttle takes only bps values above 1 (tg_set_limit(): "val > 1"). */
	if (isinf(rd))
		snprintf(r, sizeof(r), "max");
	else
		fmt_whole(r, sizeof(r), fmax(2, round(rd)), "");
	if (isinf(wr))
		snprintf(w, sizeof(w), "max");
	else
		fmt_whole(w, sizeof(w), fmax(2, round(wr)), "");
	/* riops and wiops are not drfd's to limit: written as max so a foreign one is cleared. */
	snprintf(buf, len, "%u:%u rbps=%s wbps=%s riops=max wiops=max", io->major, io->minor, r, w);
}

/*
 * A limit mode cpu.max: quota (at least the kernel's 1 ms) and period, or max
 * above its largest. whole_percent (slices): a multiple of 1% of the period,
 * rounded down, because systemd keeps CPUQuota= in its unit files in whole
 * percent, and a daemon-reload would otherwise write a lower quota back.
 */
static void cpu_cap(struct drf_knobs *k, double cores, bool whole_percent)
{
	double quota = fmax(1000, round(cores * DRF_CPU_PERIOD_US));

	if (whole_percent && quota <= DRF_CPU_MAX_QUOTA_US)
		quota = fmax(DRF_CPU_PERIOD_US / 100,
			     floor(quota / (DRF_CPU_PERIOD_US / 100)) * (DRF_CPU_PERIOD_US / 100));

	/*
	 * The kernel's quota lies in [1ms, max_cfs_runtime] (tg_set_cfs_bandwidth():
	 * EINVAL outside); a cap above the largest quota caps nothing.
	 */
	if (isinf(cores) || quota > DRF_CPU_MAX_QUOTA_US)
		set(k, DRF_KNOB_CPU_MAX, "max %d", DRF_CPU_PERIOD_US);
	else
		fmt_whole(k->val[DRF_KNOB_CPU_MAX], DRF_KNOB_LEN, quota,
			  " " DRF_STR(DRF_CPU_PERIOD_US));
	k->set[DRF_KNOB_CPU_MAX] = true;
}

/*
 * Nested tenant paths ("team/web"): cgroup v2 divides among siblings only, so
 * weights are proportional to the allocation of each node's whole subtree
 * among its siblings, and an inner node (a path component that is no tenant)
 * gets the sum of its tenants' allocations. A flat config, where every tenant
 * is a sibling of every other, needs none of this.
 */
struct tree_node {
	const char *path;
	size_t len;
	size_t parent;           /* index + 1 of the parent node; 0: a child of the root */
	double cpu, mem, rd, wr; /* the allocation of the subtree */
};

struct tree {
	struct tree_node *v;     /* v[i] is tenant i for i < n_tenants, then inner nodes */
	size_t n, n_tenants;
	struct drf_index ix;     /* path -> node */
	double *gcpu, *gio;      /* per group (parent index + 1): the largest cpu, io share */
};

/* The key of node i in the tree's index: its path (a tenant's, or a prefix of one). */
static const void *node_key(const void *ctx, size_t i, size_t *ret_len)
{
	const struct tree *t = ctx;

	*ret_len = t->v[i].len;
	return t->v[i].path;
}

/* The node of path[0..len), added (an inner node) if new; its index, or -ENOMEM. */
static ssize_t tree_node_of(struct tree *t, const char *path, size_t len)
{
	size_t found;
	int r;

	/* A candidate in the next free place, which the index reads its key from. */
	t->v[t->n] = (struct tree_node){ .path = path, .len = len };
	r = drf_index_add(&t->ix, t->n, &found);
	if (r == -EEXIST)
		return (ssize_t)found;
	if (r < 0)
		return r;
	return (ssize_t)t->n++;
}

static void tree_free(struct tree *t)
{
	free(t->v);
	drf_index_free(&t->ix);
	free(t->gcpu);
	free(t->gio);
}

/* The tree of the tenants' paths with subtree allocations and group maxima. */
static int tree_build(struct tree *t, const struct drf_config *c, const struct drf_problem *p,
		      const struct drf_result *res)
{
	size_t most = 0;

	*t = (struct tree){ .n_tenants = p->n };
	drf_index_init(&t->ix, node_key, t);
	for (size_t i = 0; i < p->n; i++) {
		most++;
		for (const char *q = c->tenants[i].cgroup; *q; q++)
			most += *q == '/';
	}
	t->v = calloc(most + 1, sizeof(*t->v));
	if (!t->v)
		goto nomem;
	/* Tenants first, at their own indexes: a tenant is never inside another. */
	for (size_t i = 0; i < p->n; i++)
		if (tree_node_of(t, c->tenants[i].cgroup, strlen(c->tenants[i].cgroup)) !=
		    (ssize_t)i)
			goto nomem; /* -ENOMEM, or duplicate paths (not in a valid config) */
	/* Inner nodes, parents before children (prefixes shortest first). */
	for (size_t i = 0; i < p->n; i++) {
		const char *path = c->tenants[i].cgroup;
		const struct drf_share *s = &res->shares[i];
		size_t parent = 0;

		for (const char *q = strchr(path, '/'); q; q = strchr(q + 1, '/')) {
			ssize_t x = tree_node_of(t, path, (size_t)(q - path));

			if (x < 0)
				goto nomem;
			t->v[x].parent = parent;
			parent = (size_t)x + 1;
		}
		t->v[i].parent = parent;
		/* The tenant's allocation counts for it and for every inner node above it. */
		for (size_t x = i + 1; x; x = t->v[x - 1].parent) {
			t->v[x - 1].cpu += s->alloc[DRF_RES_CPU];
			t->v[x - 1].mem += s->alloc[DRF_RES_MEMORY];
			t->v[x - 1].rd += s->alloc[DRF_RES_IO_READ];
			t->v[x - 1].wr += s->alloc[DRF_RES_IO_WRITE];
		}
	}
	t->gcpu = calloc(t->n + 1, sizeof(*t->gcpu));
	t->gio = calloc(t->n + 1, sizeof(*t->gio));
	if (!t->gcpu || !t->gio)
		goto nomem;
	for (size_t x = 0; x < t->n; x++) {
		size_t g = t->v[x].parent;

		t->gcpu[g] = fmax(t->gcpu[g], t->v[x].cpu);
		t->gio[g] = fmax(t->gio[g], io_share_of(p, t->v[x].rd, t->v[x].wr));
	}
	return 0;
nomem:
	tree_free(t);
	return -ENOMEM;
}

/* The knobs of an inner node: weights from its subtree, no caps of its own. */
static void inner_knobs(const struct drf_config *c, const struct drf_problem *p,
			const struct tree *t, size_t x, const struct drf_io_target *io,
			struct drf_knobs *k)
{
	const struct tree_node *v = &t->v[x];
	unsigned ctrls = drf_knobs_controllers(c);
	bool limit = c->mode == DRF_MODE_LIMIT;

	memset(k, 0, sizeof(*k));
	if (ctrls & DRF_CTRL_CPU) {
		if (limit)
			set(k, DRF_KNOB_CPU_WEIGHT, "100");
		else
			set(k, DRF_KNOB_CPU_WEIGHT, "%ld", scale_weight(v->cpu, t->gcpu[v->parent], 10000));
		set(k, DRF_KNOB_CPU_MAX, "max %d", DRF_CPU_PERIOD_US);
	}
	if (ctrls & DRF_CTRL_MEMORY) {
		/* Without memory_recursiveprot a child is protected up to its parent's low. */
		if (limit)
			set(k, DRF_KNOB_MEMORY_LOW, "0");
		else
			bytes_or_max(k->val[DRF_KNOB_MEMORY_LOW], DRF_KNOB_LEN, v->mem);
		k->set[DRF_KNOB_MEMORY_LOW] = true;
		set(k, DRF_KNOB_MEMORY_HIGH, "max");
		set(k, DRF_KNOB_MEMORY_MAX, "max");
	}
	if ((ctrls & DRF_CTRL_IO) && io) {
		if (io->weights != DRF_IO_WEIGHTS_NONE) {
			long hi = io->weights == DRF_IO_WEIGHTS_BFQ ? 1000 : 10000;

			if (limit)
				set(k, DRF_KNOB_IO_WEIGHT, "default 100");
			else
				set(k, DRF_KNOB_IO_WEIGHT, "default %ld",
				    scale_weight(io_share_of(p, v->rd, v->wr), t->gio[v->parent], hi));
		}
		io_limits(k->val[DRF_KNOB_IO_MAX], DRF_KNOB_LEN, io, INFINITY, INFINITY);
		k->set[DRF_KNOB_IO_MAX] = true;
	}
}

void drf_knobs_root(const struct drf_config *c, const struct drf_knobs *t, size_t n,
		    struct drf_knobs *ret)
{
	double low = 0;

	memset(ret, 0, sizeof(*ret));
	if (!(drf_knobs_controllers(c) & DRF_CTRL_MEMORY))
		return;
	for (size_t i = 0; i < n; i++)
		if (t[i].set[DRF_KNOB_MEMORY_LOW])
			low += strcmp(t[i].val[DRF_KNOB_MEMORY_LOW], "max") == 0
				       ? INFINITY
				       : strtod(t[i].val[DRF_KNOB_MEMORY_LOW], NULL);
	bytes_or_max(ret->val[DRF_KNOB_MEMORY_LOW], DRF_KNOB_LEN, low);
	ret->set[DRF_KNOB_MEMORY_LOW] = true;
}

void drf_cg_knobs_free(struct drf_cg_knobs *in, size_t n)
{
	for (size_t i = 0; in && i < n; i++)
		free(in[i].cgroup);
	free(in);
}

int drf_knobs_compute(const struct drf_config *c, const struct drf_problem *p,
		      const struct drf_result *res, const struct drf_io_target *io,
		      struct drf_knobs *ret, struct drf_cg_knobs **ret_inner, size_t *ret_n_inner)
{
	unsigned ctrls = drf_knobs_controllers(c);
	double cpu_max = 0, io_max = 0;
	bool limit = c->mode == DRF_MODE_LIMIT, nested = false;
	struct drf_cg_knobs *inner = NULL;
	struct tree t = { 0 };
	size_t n_inner = 0;

	for (size_t i = 0; i < p->n; i++) {
		cpu_max = fmax(cpu_max, res->shares[i].alloc[DRF_RES_CPU]);
		io_max = fmax(io_max, io_share(p, &res->shares[i]));
		nested = nested || strchr(c->tenants[i].cgroup, '/');
	}
	if (nested) {
		if (tree_build(&t, c, p, res) < 0)
			return -ENOMEM;
		n_inner = t.n - t.n_tenants;
		inner = calloc(n_inner + 1, sizeof(*inner));
		if (!inner) {
			tree_free(&t);
			return -ENOMEM;
		}
		for (size_t x = 0; x < n_inner; x++) {
			const struct tree_node *v = &t.v[t.n_tenants + x];

			inner[x].cgroup = strndup(v->path, v->len);
			if (!inner[x].cgroup) {
				drf_cg_knobs_free(inner, n_inner);
				tree_free(&t);
				return -ENOMEM;
			}
			inner_knobs(c, p, &t, t.n_tenants + x, io, &inner[x].knobs);
		}
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct drf_share *s = &res->shares[i];
		struct drf_knobs *k = &ret[i];
		unsigned uncapped = drf_knobs_uncapped(c, p, i, io);

		/* Weights among siblings: with nesting, the tenant's group's largest. */
		if (nested) {
			cpu_max = t.gcpu[t.v[i].parent];
			io_max = t.gio[t.v[i].parent];
		}
		/* Unset, empty (not the whole 1 KB cleared: 10 MB a plan at 10,000 tenants). */
		for (int j = 0; j < DRF_NKNOBS; j++) {
			k->set[j] = false;
			k->val[j][0] = '\0';
		}
		if (ctrls & DRF_CTRL_CPU) {
			double a = s->alloc[DRF_RES_CPU];

			if (limit) {
				set(k, DRF_KNOB_CPU_WEIGHT, "100");
				cpu_cap(k, uncapped & (1u << DRF_RES_CPU) ? INFINITY : a, c->slices);
			} else {
				fmt_whole(k->val[DRF_KNOB_CPU_WEIGHT], DRF_KNOB_LEN,
					  (double)scale_weight(a, cpu_max, 10000), "");
				k->set[DRF_KNOB_CPU_WEIGHT] = true;
				set(k, DRF_KNOB_CPU_MAX, "max %d", DRF_CPU_PERIOD_US);
			}
		}
		if (ctrls & DRF_CTRL_MEMORY) {
			double a = s->alloc[DRF_RES_MEMORY];

			k->set[DRF_KNOB_MEMORY_LOW] = k->set[DRF_KNOB_MEMORY_HIGH] =
				k->set[DRF_KNOB_MEMORY_MAX] = true;
			if (limit && !(uncapped & (1u << DRF_RES_MEMORY))) {
				snprintf(k->val[DRF_KNOB_MEMORY_LOW], DRF_KNOB_LEN, "0");
				bytes_or_max(k->val[DRF_KNOB_MEMORY_HIGH], DRF_KNOB_LEN, a);
				bytes_or_max(k->val[DRF_KNOB_MEMORY_MAX], DRF_KNOB_LEN, a);
			} else if (limit) {
				snprintf(k->val[DRF_KNOB_MEMORY_LOW], DRF_KNOB_LEN, "0");
				snprintf(k->val[DRF_KNOB_MEMORY_HIGH], DRF_KNOB_LEN, "max");
				snprintf(k->val[DRF_KNOB_MEMORY_MAX], DRF_KNOB_LEN, "max");
			} else {
				bytes_or_max(k->val[DRF_KNOB_MEMORY_LOW], DRF_KNOB_LEN, a);
				snprintf(k->val[DRF_KNOB_MEMORY_HIGH], DRF_KNOB_LEN, "max");
				bytes_or_max(k->val[DRF_KNOB_MEMORY_MAX], DRF_KNOB_LEN,
					     drf_knobs_declared(c, i, DRF_RES_MEMORY));
			}
		}
		if ((ctrls & DRF_CTRL_IO) && io) {
			double rd = p->capacity[DRF_RES_IO_READ] > 0 ? s->alloc[DRF_RES_IO_READ]
								      : INFINITY;
			double wr = p->capacity[DRF_RES_IO_WRITE] > 0 ? s->alloc[DRF_RES_IO_WRITE]
								       : INFINITY;
			if (uncapped & (1u << DRF_RES_IO_READ))
				rd = INFINITY;
			if (uncapped & (1u << DRF_RES_IO_WRITE))
				wr = INFINITY;
			if (!limit && io->weights != DRF_IO_WEIGHTS_NONE) {
				long hi = io->weights == DRF_IO_WEIGHTS_BFQ ? 1000 : 10000;

				set(k, DRF_KNOB_IO_WEIGHT, "default %ld", scale_weight(io_share(p, s), io_max, hi));
				io_limits(k->val[DRF_KNOB_IO_MAX], DRF_KNOB_LEN, io,
					  drf_knobs_declared(c, i, DRF_RES_IO_READ),
					  drf_knobs_declared(c, i, DRF_RES_IO_WRITE));
			} else {
				/* Both BFQ's and io.cost's default weight is 100. */
				if (io->weights != DRF_IO_WEIGHTS_NONE)
					set(k, DRF_KNOB_IO_WEIGHT, "default 100");
				io_limits(k->val[DRF_KNOB_IO_MAX], DRF_KNOB_LEN, io, rd, wr);
			}
			k->set[DRF_KNOB_IO_MAX] = true;
		}
	}
	tree_free(&t);
	if (ret_inner) {
		*ret_inner = inner;
		*ret_n_inner = n_inner;
	} else {
		drf_cg_knobs_free(inner, n_inner);
	}
	return 0;
}

void drf_knobs_task(const double vec[DRF_NRES], const struct drf_io_target *io,
		    struct drf_knobs *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (vec[DRF_RES_CPU] > 0)
		cpu_cap(ret, vec[DRF_RES_CPU], false);
	if (vec[DRF_RES_MEMORY] > 0) {
		bytes_or_max(ret->val[DRF_KNOB_MEMORY_MAX], DRF_KNOB_LEN, vec[DRF_RES_MEMORY]);
		ret->set[DRF_KNOB_MEMORY_MAX] = true;
		/* Without swap, a task over its memory is OOM-killed rather than swapped out. */
		set(ret, DRF_KNOB_MEMORY_SWAP_MAX, "0");
	}
	if (io && (vec[DRF_RES_IO_READ] > 0 || vec[DRF_RES_IO_WRITE] > 0)) {
		io_limits(ret->val[DRF_KNOB_IO_MAX], DRF_KNOB_LEN, io,
			  vec[DRF_RES_IO_READ] > 0 ? vec[DRF_RES_IO_READ] : INFINITY,
			  vec[DRF_RES_IO_WRITE] > 0 ? vec[DRF_RES_IO_WRITE] : INFINITY);
		ret->set[DRF_KNOB_IO_MAX] = true;
	}
}

/* The number of key= in an io.max value, or INFINITY ("max", or no such key). */
static double io_field(const char *v, const char *key)
{
	double x = drf_kv_field_double(v, strlen(v), key);

	return isnan(x) ? INFINITY : x;
}

void drf_knobs_limits(const struct drf_knobs *k, double ret[DRF_NRES])
{
	double q, p;

	for (int r = 0; r < DRF_NRES; r++)
		ret[r] = INFINITY;
	if (k->set[DRF_KNOB_CPU_MAX] && sscanf(k->val[DRF_KNOB_CPU_MAX], "%lf %lf", &q, &p) == 2 &&
	    p > 0)
		ret[DRF_RES_CPU] = q / p;
	if (k->set[DRF_KNOB_MEMORY_MAX] && strcmp(k->val[DRF_KNOB_MEMORY_MAX], "max") != 0)
		ret[DRF_RES_MEMORY] = strtod(k->val[DRF_KNOB_MEMORY_MAX], NULL);
	if (k->set[DRF_KNOB_IO_MAX]) {
		ret[DRF_RES_IO_READ] = io_field(k->val[DRF_KNOB_IO_MAX], "rbps");
		ret[DRF_RES_IO_WRITE] = io_field(k->val[DRF_KNOB_IO_MAX], "wbps");
	}
}

static bool memory_matches(const char *want, const char *have, unsigned long page)
{
	unsigned long long w, h;
	char *end;

	if (strcmp(want, "max") == 0 || strcmp(have, "max") == 0)
		return strcmp(want, have) == 0;
	w = strtoull(want, &end, 10);
	if (*end)
		return false;
	h = strtoull(have, &end, 10);
	if (*end)
		return false;
	/*
	 * The kernel keeps memory limits in pages, rounding down; a value within
	 * a page of another is the same limit for any use (and a plan that moves
	 * by less, as 1,000 tenants' do when one weight changes, costs no write).
	 */
	return h == w || (page && (h > w ? h - w : w - h) < page);
}

void drf_knob_kernel_form(enum drf_knob k, const char *val, unsigned long page_size, char *out,
			  size_t len)
{
	unsigned long long v;
	char *end;

	if ((k == DRF_KNOB_MEMORY_LOW || k == DRF_KNOB_MEMORY_HIGH || k == DRF_KNOB_MEMORY_MAX ||
	     k == DRF_KNOB_MEMORY_SWAP_MAX) && page_size && strcmp(val, "max") != 0) {
		v = strtoull(val, &end, 10);
		if (!*end && end != val) {
			snprintf(out, len, "%llu", v / page_size * page_size);
			return;
		}
	}
	if (out != val)
		snprintf(out, len, "%s", val);
}

/* The value of key= for device MAJ:MIN in io.max content; "max" if no line or no key. */
static void io_max_value(const char *content, const char *dev, const char *key, char *out,
			 size_t len)
{
	size_t n;
	const char *fields = drf_kv_find(content, dev, &n);
	const char *v = fields ? drf_kv_field(fields, n, key, &n) : NULL;

	if (v)
		snprintf(out, len, "%.*s", (int)n, v);
	else
		snprintf(out, len, "max");
}

bool drf_knob_matches(enum drf_knob k, const char *want, const char *have,
		      const struct drf_io_target *io, unsigned long page_size)
{
	switch (k) {
	case DRF_KNOB_MEMORY_LOW:
	case DRF_KNOB_MEMORY_HIGH:
	case DRF_KNOB_MEMORY_MAX:
	case DRF_KNOB_MEMORY_SWAP_MAX:
		return memory_matches(want, have, page_size);
	case DRF_KNOB_IO_MAX: {
		char dev[32], wantv[32], havev[32];
		static const char *const keys[] = { "rbps", "wbps", "riops", "wiops" };

		if (!io)
			return false;
		snprintf(dev, sizeof(dev), "%u:%u", io->major, io->minor);
		/* Every field of our device's line; a field absent from want is max. */
		for (int i = 0; i < 4; i++) {
			io_max_value(want, dev, keys[i], wantv, sizeof(wantv));
			io_max_value(have, dev, keys[i], havev, sizeof(havev));
			if (strcmp(wantv, havev) != 0)
				return false;
		}
		return true;
	}
	case DRF_KNOB_IO_WEIGHT: {
		/* "default N" is the first line of the file. */
		size_t n = strcspn(have, "\n");

		return strlen(want) == n && strncmp(want, have, n) == 0;
	}
	case DRF_KNOB_CPU_WEIGHT:
	case DRF_KNOB_CPU_MAX:
	case DRF_NKNOBS:
		break;
	}
	return strcmp(want, have) == 0;
}
