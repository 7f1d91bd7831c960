// SPDX-License-Identifier: MIT
/*
 * Hierarchical DRF. See hdrf.h for the contract, docs/design.md for the policy.
 *
 * The filling runs on normalized resources (capacity 1). Between events it is
 * linear in a parameter tau, and each step works out, for the state in hand:
 *   - which nodes are blocked (every leaf below at its cap or needing a used-up
 *     resource), and each node's dominant share ds over the resources not used
 *     up, and its level ds / weight;
 *   - at each node, which children take part: those at the lowest level among
 *     the node's unblocked children (the others wait until it reaches them);
 *   - bottom-up, for each node, Q: the rate at which its allocation grows per
 *     unit of its own parameter (a leaf's: its dominant share; a group's: its
 *     children's common level), and sigma: the rate of its dominant share,
 *     the largest Q_r over the resources tied at its dominant share;
 *   - top-down from the root (parameter tau), each node's parameter rate, and
 *     so each leaf's rate of copies.
 * A group with sigma 0 is "free": growing it does not raise its dominant
 * share (its dominant resource is held by leaves that no longer grow), so in
 * progressive filling it stays the lowest of its siblings and takes all their
 * parent's growth until a growing resource catches up with its dominant one.
 * Its parent then grows only its free children.
 * The step ends at the first event: a resource used up, a leaf at its cap, a
 * resource of a group overtaking its dominant one, or a waiting child reached.
 */
#include "hdrf.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Relative slack for "used up", "at its cap" and "fits", as alloc.c's. */
#define FIT_EPS 1e-12
/* Relative slack for two levels or two shares being equal. */
#define TIE_EPS 1e-10

static bool tied(double a, double b)
{
	return fabs(a - b) <= TIE_EPS * fmax(fabs(a), fabs(b));
}

/*
 * The tree: node 0 the root, 1..g the groups, then the leaves; each node's
 * children in CSR form (groups before leaves, each in index order), and an
 * order with parents before children.
 */
struct htree {
	size_t g, n, nn;         /* groups, leaves, nodes */
	size_t *parent;          /* node's parent node (the root's: 0, unused) */
	size_t *cstart, *child;  /* children of v: child[cstart[v] .. cstart[v + 1]) */
	size_t *order;           /* preorder */
	double *w;               /* node weights (the root's 1) */
	double (*u)[DRF_NRES];   /* per leaf: shape / capacity, 0 where not participating */
	double *delta;           /* per leaf: max_r u_r */
	double *cap;             /* per leaf: max_units */
	unsigned *need;          /* per leaf: bit r if u_r > 0 */
	unsigned part;           /* bit r if resource r participates */
};

static void htree_free(struct htree *t)
{
	free(t->parent);
	free(t->cstart);
	free(t->child);
	free(t->order);
	free(t->w);
	free(t->u);
	free(t->delta);
	free(t->cap);
	free(t->need);
	memset(t, 0, sizeof(*t));
}

static int htree_build(struct htree *t, const struct drf_hproblem *hp)
{
	const struct drf_problem *p = &hp->base;
	size_t g = hp->n_groups, n = p->n, nn, pos = 0, top = 0;
	int err = -ENOMEM;

	memset(t, 0, sizeof(*t));
	for (int r = 0; r < DRF_NRES; r++) {
		if (!(p->capacity[r] >= 0) || !isfinite(p->capacity[r]))
			return -EINVAL;
		if (p->capacity[r] > 0)
			t->part |= 1u << r;
	}
	if ((n && (!p->demands || !hp->leaf_parent)) || (g && !hp->groups))
		return -EINVAL;
	if (g > SIZE_MAX / 4 - n - 2)
		return -EINVAL;
	nn = 1 + g + n;
	t->g = g;
	t->n = n;
	t->nn = nn;
	t->parent = calloc(nn, sizeof(*t->parent));
	t->cstart = calloc(nn + 1, sizeof(*t->cstart));
	t->child = calloc(nn, sizeof(*t->child));
	t->order = calloc(nn, sizeof(*t->order));
	t->w = calloc(nn, sizeof(*t->w));
	t->u = calloc(n + 1, sizeof(*t->u));
	t->delta = calloc(n + 1, sizeof(*t->delta));
	t->cap = calloc(n + 1, sizeof(*t->cap));
	t->need = calloc(n + 1, sizeof(*t->need));
	if (!t->parent || !t->cstart || !t->child || !t->order || !t->w || !t->u || !t->delta ||
	    !t->cap || !t->need)
		goto fail;
	err = -EINVAL;
	t->w[0] = 1;
	for (size_t k = 0; k < g; k++) {
		const struct drf_hgroup *gr = &hp->groups[k];

		if (!(gr->weight > 0) || !isfinite(gr->weight))
			goto fail;
		if (gr->parent != DRF_HROOT && gr->parent >= g)
			goto fail;
		t->w[1 + k] = gr->weight;
		t->parent[1 + k] = gr->parent == DRF_HROOT ? 0 : 1 + gr->parent;
	}
	for (size_t i = 0; i < n; i++) {
		const struct drf_demand *d = &p->demands[i];
		size_t lp = hp->leaf_parent[i];
		bool needs = false;

		if (!(d->weight > 0) || !isfinite(d->weight))
			goto fail;
		if (!(d->max_units > 0) || isnan(d->max_units))
			goto fail;
		if (lp != DRF_HROOT && lp >= g)
			goto fail;
		for (int r = 0; r < DRF_NRES; r++) {
			double c = p->capacity[r], v = d->shape[r];

			if (!(c > 0))
				continue;
			if (!(v >= 0) || !isfinite(v))
				goto fail;
			t->u[i][r] = v / c;
			if (v > 0) {
				needs = true;
				t->need[i] |= 1u << r;
				t->delta[i] = fmax(t->delta[i], t->u[i][r]);
			}
		}
		/* An unlimited demand that needs nothing would take infinitely many copies. */
		if (!needs && isinf(d->max_units))
			goto fail;
		t->cap[i] = d->max_units;
		t->w[1 + g + i] = d->weight;
		t->parent[1 + g + i] = lp == DRF_HROOT ? 0 : 1 + lp;
	}
	/* A cycle: some group's chain of parents does not reach the root in g steps. */
	for (size_t k = 0; k < g; k++) {
		size_t v = 1 + k, steps = 0;

		while (v != 0 && steps <= g) {
			v = t->parent[v];
			steps++;
		}
		if (v != 0)
			goto fail;
	}
	/* Children, counted and placed in index order: groups, then leaves. */
	for (size_t v = 1; v < nn; v++)
		t->cstart[t->parent[v] + 1]++;
	for (size_t v = 0; v < nn; v++)
		t->cstart[v + 1] += t->cstart[v];
	{
		size_t *fill = t->order; /* borrowed as the fill pointers */

		memcpy(fill, t->cstart, nn * sizeof(*fill));
		for (size_t v = 1; v < nn; v++)
			t->child[fill[t->parent[v]]++] = v;
	}
	/* Parents before children: breadth-first, queued in order[] itself. */
	t->order[pos++] = 0;
	while (top < pos) {
		size_t v = t->order[top++];

		for (size_t k = t->cstart[v]; k < t->cstart[v + 1]; k++)
			t->order[pos++] = t->child[k];
	}
	if (pos != nn)
		goto fail; /* unreachable after the cycle check, kept as a guard */
	return 0;
fail:
	htree_free(t);
	return err;
}

static bool is_leaf(const struct htree *t, size_t v)
{
	return v > t->g;
}

/* Per-node working state of the filling. */
struct hstate {
	double (*alloc)[DRF_NRES]; /* normalized allocation of each node */
	double (*q)[DRF_NRES];     /* allocation rate per unit of the node's parameter */
	double (*arate)[DRF_NRES]; /* allocation rate per unit of tau */
	double *ds, *lvl, *minl, *sigma, *rho;
	bool *blocked, *part, *freeg, *anyfree;
	double *x, *xrate;         /* per leaf: copies, and their rate */
	bool *frozen;
	int *lim;
};

static void hstate_free(struct hstate *s)
{
	free(s->alloc);
	free(s->q);
	free(s->arate);
	free(s->ds);
	free(s->lvl);
	free(s->minl);
	free(s->sigma);
	free(s->rho);
	free(s->blocked);
	free(s->part);
	free(s->freeg);
	free(s->anyfree);
	free(s->x);
	free(s->xrate);
	free(s->frozen);
	free(s->lim);
}

static int hstate_init(struct hstate *s, const struct htree *t)
{
	size_t nn = t->nn, n = t->n + 1;

	memset(s, 0, sizeof(*s));
	s->alloc = calloc(nn, sizeof(*s->alloc));
	s->q = calloc(nn, sizeof(*s->q));
	s->arate = calloc(nn, sizeof(*s->arate));
	s->ds = calloc(nn, sizeof(double));
	s->lvl = calloc(nn, sizeof(double));
	s->minl = calloc(nn, sizeof(double));
	s->sigma = calloc(nn, sizeof(double));
	s->rho = calloc(nn, sizeof(double));
	s->blocked = calloc(nn, sizeof(bool));
	s->part = calloc(nn, sizeof(bool));
	s->freeg = calloc(nn, sizeof(bool));
	s->anyfree = calloc(nn, sizeof(bool));
	s->x = calloc(n, sizeof(double));
	s->xrate = calloc(n, sizeof(double));
	s->frozen = calloc(n, sizeof(bool));
	s->lim = calloc(n, sizeof(int));
	if (!s->alloc || !s->q || !s->arate || !s->ds || !s->lvl || !s->minl || !s->sigma ||
	    !s->rho || !s->blocked || !s->part || !s->freeg || !s->anyfree || !s->x || !s->xrate ||
	    !s->frozen || !s->lim) {
		hstate_free(s);
		return -ENOMEM;
	}
	return 0;
}

/* Each node's normalized allocation, from the leaves' copies. */
static void sum_alloc(const struct htree *t, struct hstate *s, const double *x)
{
	memset(s->alloc, 0, t->nn * sizeof(*s->alloc));
	for (size_t i = 0; i < t->n; i++)
		for (int r = 0; r < DRF_NRES; r++)
			s->alloc[1 + t->g + i][r] = x[i] * t->u[i][r];
	for (size_t k = t->nn; k-- > 1;) {
		size_t v = t->order[k];

		for (int r = 0; r < DRF_NRES; r++)
			s->alloc[t->parent[v]][r] += s->alloc[v][r];
	}
}

/* Dominant share of each node over the resources in `count`, and its level. */
static void shares(const struct htree *t, struct hstate *s, unsigned count)
{
	for (size_t v = 0; v < t->nn; v++) {
		double ds = 0;

		for (int r = 0; r < DRF_NRES; r++)
			if (count & (1u << r))
				ds = fmax(ds, s->alloc[v][r]);
		s->ds[v] = ds;
		s->lvl[v] = ds / t->w[v];
	}
}

/* The filling's state advanced to its end; 0 or -ELOOP. */
static int fill(const struct htree *t, struct hstate *s)
{
	size_t g = t->g, n = t->n, nn = t->nn;
	unsigned sat = 0;
	/* Events: at most m used up, n caps, and per node a few joins and overtakings a phase. */
	size_t max_steps = 64 * (nn + DRF_NRES) * (DRF_NRES + 2) + 1000;

	for (size_t i = 0; i < n; i++) {
		s->lim[i] = DRF_LIMIT_DEMAND;
		/* A bounded demand that needs nothing is met at once. */
		if (!t->need[i]) {
			s->x[i] = t->cap[i];
			s->frozen[i] = true;
		}
	}
	for (size_t step = 0;; step++) {
		unsigned count;
		double tau = INFINITY;

		if (step > max_steps)
			return -ELOOP;
		sum_alloc(t, s, s->x);
		for (int r = 0; r < DRF_NRES; r++)
			if ((t->part & (1u << r)) && s->alloc[0][r] >= 1 - FIT_EPS)
				sat |= 1u << r;
		for (size_t i = 0; i < n; i++) {
			if (s->frozen[i])
				continue;
			if (s->x[i] >= t->cap[i] * (1 - FIT_EPS)) {
				s->x[i] = t->cap[i];
				s->frozen[i] = true;
				s->lim[i] = DRF_LIMIT_DEMAND;
			} else if (t->need[i] & sat) {
				s->frozen[i] = true;
				s->lim[i] = __builtin_ctz(t->need[i] & sat);
			}
		}
		/* Blocked: bottom-up (children after parents in order[]). */
		for (size_t v = 0; v < nn; v++)
			s->blocked[v] = is_leaf(t, v) ? s->frozen[v - 1 - g] : true;
		for (size_t k = nn; k-- > 1;) {
			size_t v = t->order[k];

			if (!s->blocked[v])
				s->blocked[t->parent[v]] = false;
		}
		if (s->blocked[0])
			return 0;
		count = t->part & ~sat;
		shares(t, s, count);
		/* Who takes part: the unblocked children at their parent's lowest level. */
		for (size_t v = 0; v <= g; v++) {
			double lo = INFINITY;

			for (size_t k = t->cstart[v]; k < t->cstart[v + 1]; k++)
				if (!s->blocked[t->child[k]])
					lo = fmin(lo, s->lvl[t->child[k]]);
			s->minl[v] = lo;
			for (size_t k = t->cstart[v]; k < t->cstart[v + 1]; k++) {
				size_t c = t->child[k];

				s->part[c] = !s->blocked[c] &&
					     (s->lvl[c] <= lo || tied(s->lvl[c], lo));
			}
		}
		/* Bottom-up: q, sigma and whether a group is free. */
		for (size_t k = nn; k-- > 0;) {
			size_t v = t->order[k];

			if (s->blocked[v])
				continue;
			if (is_leaf(t, v)) {
				size_t i = v - 1 - g;

				for (int r = 0; r < DRF_NRES; r++)
					s->q[v][r] = t->u[i][r] / t->delta[i];
				s->sigma[v] = 1;
				s->freeg[v] = false;
				continue;
			}
			s->anyfree[v] = false;
			for (size_t j = t->cstart[v]; j < t->cstart[v + 1]; j++)
				if (s->part[t->child[j]] && s->freeg[t->child[j]])
					s->anyfree[v] = true;
			memset(s->q[v], 0, sizeof(s->q[v]));
			for (size_t j = t->cstart[v]; j < t->cstart[v + 1]; j++) {
				size_t c = t->child[j];
				double coef;

				if (!s->part[c] || (s->anyfree[v] && !s->freeg[c]))
					continue;
				coef = s->freeg[c] ? 1 : t->w[c] / s->sigma[c];
				for (int r = 0; r < DRF_NRES; r++)
					s->q[v][r] += coef * s->q[c][r];
			}
			s->sigma[v] = 0;
			for (int r = 0; r < DRF_NRES; r++)
				if ((count & (1u << r)) &&
				    (s->alloc[v][r] >= s->ds[v] || tied(s->alloc[v][r], s->ds[v])))
					s->sigma[v] = fmax(s->sigma[v], s->q[v][r]);
			s->freeg[v] = !(s->sigma[v] > 0);
		}
		/* Top-down: each node's parameter rate per unit of tau, each leaf's copies'. */
		memset(s->rho, 0, nn * sizeof(*s->rho));
		memset(s->xrate, 0, (n + 1) * sizeof(*s->xrate));
		s->rho[0] = 1;
		for (size_t k = 0; k < nn; k++) {
			size_t v = t->order[k];

			if (is_leaf(t, v) || s->blocked[v] || !(s->rho[v] > 0))
				continue;
			for (size_t j = t->cstart[v]; j < t->cstart[v + 1]; j++) {
				size_t c = t->child[j];
				double d;

				if (!s->part[c] || (s->anyfree[v] && !s->freeg[c]))
					continue;
				if (s->freeg[c]) {
					s->rho[c] = s->rho[v];
					continue;
				}
				d = t->w[c] * s->rho[v]; /* the child's dominant share's rate */
				if (is_leaf(t, c)) {
					s->rho[c] = d;
					s->xrate[c - 1 - g] = d / t->delta[c - 1 - g];
				} else {
					s->rho[c] = d / s->sigma[c];
				}
			}
		}
		memset(s->arate, 0, nn * sizeof(*s->arate));
		for (size_t i = 0; i < n; i++)
			for (int r = 0; r < DRF_NRES; r++)
				s->arate[1 + g + i][r] = s->xrate[i] * t->u[i][r];
		for (size_t k = nn; k-- > 1;) {
			size_t v = t->order[k];

			for (int r = 0; r < DRF_NRES; r++)
				s->arate[t->parent[v]][r] += s->arate[v][r];
		}
		/* The first event. */
		for (int r = 0; r < DRF_NRES; r++)
			if ((count & (1u << r)) && s->arate[0][r] > 0)
				tau = fmin(tau, (1 - s->alloc[0][r]) / s->arate[0][r]);
		for (size_t i = 0; i < n; i++)
			if (s->xrate[i] > 0 && isfinite(t->cap[i]))
				tau = fmin(tau, (t->cap[i] - s->x[i]) / s->xrate[i]);
		for (size_t v = 1; v <= g; v++) {
			double dsrate;

			if (s->blocked[v] || !(s->rho[v] > 0))
				continue;
			dsrate = s->freeg[v] ? 0 : s->sigma[v] * s->rho[v];
			for (int r = 0; r < DRF_NRES; r++) {
				double gap = s->ds[v] - s->alloc[v][r];

				if (!(count & (1u << r)) || !(gap > 0) || tied(s->alloc[v][r], s->ds[v]))
					continue;
				if (s->arate[v][r] > dsrate)
					tau = fmin(tau, gap / (s->arate[v][r] - dsrate));
			}
		}
		for (size_t v = 0; v <= g; v++) {
			if (s->blocked[v] || !(s->rho[v] > 0) || s->anyfree[v])
				continue;
			for (size_t j = t->cstart[v]; j < t->cstart[v + 1]; j++) {
				size_t c = t->child[j];

				if (!s->blocked[c] && !s->part[c])
					tau = fmin(tau, (s->lvl[c] - s->minl[v]) / s->rho[v]);
			}
		}
		if (!isfinite(tau))
			return -ELOOP; /* something grows, so something must stop it */
		tau = fmax(tau, 0);
		for (size_t i = 0; i < n; i++)
			if (s->xrate[i] > 0)
				s->x[i] = fmin(t->cap[i], s->x[i] + tau * s->xrate[i]);
	}
}

/*
 * dominant_share and dominant_res of a share's alloc over all participating
 * resources; with nothing allocated, the shape's dominant resource (a leaf's)
 * or the first resource with a capacity (a group's).
 */
static void finish_share(const struct drf_problem *p, const double *shape, struct drf_share *sh)
{
	double best = 0, best_u = 0;
	int best_r = -1, shape_r = -1;

	for (int r = 0; r < DRF_NRES; r++) {
		double v;

		if (!(p->capacity[r] > 0))
			continue;
		v = sh->alloc[r] / p->capacity[r];
		if (v > best) {
			best = v;
			best_r = r;
		}
		if (shape_r < 0 || (shape && shape[r] / p->capacity[r] > best_u)) {
			best_u = shape ? shape[r] / p->capacity[r] : 0;
			shape_r = r;
		}
	}
	sh->dominant_share = best;
	sh->dominant_res = best_r >= 0 ? best_r : shape_r;
}

static int make_result(const struct drf_hproblem *hp, const struct htree *t, const double *x,
		       const int *lim, struct drf_hresult *ret)
{
	const struct drf_problem *p = &hp->base;
	struct drf_hresult res = { .n_groups = t->g };
	double used[DRF_NRES] = { 0 };

	res.leaves.n = t->n;
	res.leaves.shares = calloc(t->n + 1, sizeof(struct drf_share));
	res.groups = calloc(t->g + 1, sizeof(struct drf_share));
	if (!res.leaves.shares || !res.groups) {
		free(res.leaves.shares);
		free(res.groups);
		return -ENOMEM;
	}
	for (size_t k = 0; k < t->g; k++)
		res.groups[k].limited_by = DRF_LIMIT_DEMAND;
	for (size_t i = 0; i < t->n; i++) {
		struct drf_share *sh = &res.leaves.shares[i];
		const struct drf_demand *d = &p->demands[i];

		sh->units = x[i];
		for (int r = 0; r < DRF_NRES; r++) {
			sh->alloc[r] = p->capacity[r] > 0 ? x[i] * d->shape[r] : 0;
			used[r] += sh->alloc[r];
		}
		sh->limited_by = lim[i];
		finish_share(p, d->shape, sh);
		for (size_t v = t->parent[1 + t->g + i]; v != 0; v = t->parent[v]) {
			struct drf_share *gs = &res.groups[v - 1];

			for (int r = 0; r < DRF_NRES; r++)
				gs->alloc[r] += sh->alloc[r];
			if (gs->limited_by == DRF_LIMIT_DEMAND)
				gs->limited_by = lim[i];
		}
	}
	for (size_t k = 0; k < t->g; k++)
		finish_share(p, NULL, &res.groups[k]);
	for (int r = 0; r < DRF_NRES; r++)
		res.leaves.unallocated[r] =
			p->capacity[r] > 0 ? fmax(0, p->capacity[r] - used[r]) : 0;
	*ret = res;
	return 0;
}

int drf_hdrf_allocate(const struct drf_hproblem *hp, struct drf_hresult *ret)
{
	struct htree t;
	struct hstate s;
	int err = htree_build(&t, hp);

	if (err < 0)
		return err;
	err = hstate_init(&s, &t);
	if (err == 0) {
		err = fill(&t, &s);
		if (err == 0)
			err = make_result(hp, &t, s.x, s.lim, ret);
		hstate_free(&s);
	}
	htree_free(&t);
	return err;
}

/* The pick on a built tree; s's alloc, ds, lvl and blocked are scratch. */
static long pick(const struct htree *t, struct hstate *s, const double *units)
{
	size_t g = t->g, nn = t->nn;
	unsigned count = 0;
	double left[DRF_NRES];
	size_t v = 0;

	sum_alloc(t, s, units);
	for (int r = 0; r < DRF_NRES; r++)
		left[r] = 1 - s->alloc[0][r];
	/* Blocked leaves, and the resources some leaf below its cap could still take. */
	for (size_t i = 0; i < t->n; i++) {
		bool below = units[i] + 1 <= t->cap[i] * (1 + FIT_EPS), fits = below;

		for (int r = 0; r < DRF_NRES; r++) {
			bool f = t->u[i][r] <= left[r] + FIT_EPS;

			if (!(t->part & (1u << r)) || !(t->u[i][r] > 0))
				continue;
			fits = fits && f;
			if (below && f)
				count |= 1u << r;
		}
		s->blocked[1 + g + i] = !fits;
	}
	for (size_t w = 0; w <= g; w++)
		s->blocked[w] = true;
	for (size_t k = nn; k-- > 1;) {
		size_t c = t->order[k];

		if (!s->blocked[c])
			s->blocked[t->parent[c]] = false;
	}
	if (s->blocked[0])
		return -ENOSPC;
	shares(t, s, count);
	while (!is_leaf(t, v)) {
		size_t best = 0;
		bool found = false;

		for (size_t k = t->cstart[v]; k < t->cstart[v + 1]; k++) {
			size_t c = t->child[k];

			if (s->blocked[c])
				continue;
			if (!found || s->lvl[c] < s->lvl[best]) {
				best = c;
				found = true;
			}
		}
		if (!found)
			return -ENOSPC; /* not reached: an unblocked node has an unblocked child */
		v = best;
	}
	return (long)(v - 1 - g);
}

long drf_hdrf_pick(const struct drf_hproblem *hp, const double *units)
{
	struct htree t;
	struct hstate s;
	long r = htree_build(&t, hp);

	if (r < 0)
		return r;
	r = hstate_init(&s, &t);
	if (r == 0) {
		r = pick(&t, &s, units);
		hstate_free(&s);
	}
	htree_free(&t);
	return r;
}

int drf_hdrf_allocate_discrete(const struct drf_hproblem *hp, struct drf_hresult *ret)
{
	struct htree t;
	struct hstate s;
	double given = 0;
	int err = htree_build(&t, hp);

	if (err < 0)
		return err;
	err = hstate_init(&s, &t);
	if (err < 0) {
		htree_free(&t);
		return err;
	}
	for (;;) {
		long i = pick(&t, &s, s.x);

		if (i < 0)
			break;
		if (++given > DRF_DISCRETE_MAX_TASKS) {
			err = -E2BIG;
			break;
		}
		s.x[i] += 1;
	}
	if (err == 0) {
		/* What stopped each leaf: its cap, or the first resource its next copy lacks. */
		sum_alloc(&t, &s, s.x);
		for (size_t i = 0; i < t.n; i++) {
			s.lim[i] = DRF_LIMIT_DEMAND;
			if (s.x[i] + 1 <= t.cap[i] * (1 + FIT_EPS))
				for (int r = 0; r < DRF_NRES; r++)
					if (t.u[i][r] > 1 - s.alloc[0][r] + FIT_EPS) {
						s.lim[i] = r;
						break;
					}
		}
		err = make_result(hp, &t, s.x, s.lim, ret);
	}
	hstate_free(&s);
	htree_free(&t);
	return err;
}

void drf_hresult_free(struct drf_hresult *r)
{
	if (!r)
		return;
	drf_result_free(&r->leaves);
	free(r->groups);
	r->groups = NULL;
	r->n_groups = 0;
}
