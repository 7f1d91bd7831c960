// SPDX-License-Identifier: MIT
/*
 * DRFH over heterogeneous servers. See drfh.h for the contract.
 *
 * Units: every resource is measured as a fraction of the pool, so a tenant's
 * normalized task u_i has u_ir = shape_ir / pool_r and its dominant share per
 * task is d_i = max_r u_ir. The divisible form's variables are in dominant-share
 * units too: y_ig, the global dominant share tenant i holds on group g, so that
 * G_i = sum_g y_ig and the task count is G_i / d_i. Everything in the LPs is then
 * of order 1, whatever the fleet's size or the units of its resources.
 */
#include "drfh.h"

#include <errno.h>
#include <glpk.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Relative slack for "this task still fits". */
#define FIT_EPS 1e-12
/*
 * H (in [0, 2]) values this close are a tie, which the earlier server wins:
 * two servers whose remaining capacities point the same way are at the same
 * H mathematically, but their directions round apart.
 */
#define H_EPS 1e-12
/* A level row's dual below this is taken for zero (legitimate ones are >= ~1/n). */
#define DUAL_EPS 1e-9

void drfh_result_free(struct drfh_result *r)
{
	if (!r)
		return;
	free(r->tenants);
	free(r->groups);
	free(r->places);
	memset(r, 0, sizeof(*r));
}

void drfh_pool(const struct drfh_problem *p, double pool[DRF_NRES])
{
	for (int r = 0; r < DRF_NRES; r++)
		pool[r] = 0;
	for (size_t s = 0; s < p->nspecs; s++)
		for (int r = 0; r < DRF_NRES; r++)
			pool[r] += p->specs[s].capacity[r] * (double)p->specs[s].count;
}

double drfh_capacity_max(int r)
{
	switch (r) {
	case DRF_RES_CPU:
		return DRFH_CAP_CPU_MAX;
	case DRF_RES_MEMORY:
		return DRFH_CAP_MEMORY_MAX;
	case DRF_RES_IO_READ:
	case DRF_RES_IO_WRITE:
		return DRFH_CAP_IO_MAX;
	default:
		return DRFH_CAP_NET_MAX;
	}
}

int drfh_capacity_check(const double cap[DRF_NRES], int *ret_res)
{
	for (int r = 0; r < DRF_NRES; r++)
		if (!(cap[r] >= 0 && cap[r] <= drfh_capacity_max(r))) {
			if (ret_res)
				*ret_res = r;
			return -ERANGE;
		}
	return 0;
}

/* The checks of drf_allocate, against the pool, and the servers'. */
static int validate(const struct drfh_problem *p, double pool[DRF_NRES], size_t *ret_nservers)
{
	size_t ns = 0;

	if ((p->nspecs && !p->specs) || (p->n && !p->demands) || p->n > UINT32_MAX)
		return -EINVAL;
	for (size_t s = 0; s < p->nspecs; s++) {
		const struct drfh_server_spec *sp = &p->specs[s];

		if (sp->count < 1 || sp->count > UINT32_MAX - ns)
			return -EINVAL;
		ns += sp->count;
		for (int r = 0; r < DRF_NRES; r++)
			if (!(sp->capacity[r] >= 0) || !isfinite(sp->capacity[r]))
				return -EINVAL;
	}
	drfh_pool(p, pool);
	for (int r = 0; r < DRF_NRES; r++)
		if (!isfinite(pool[r]))
			return -EINVAL;
	for (size_t i = 0; i < p->n; i++) {
		const struct drf_demand *d = &p->demands[i];
		bool needs = false;

		if (!(d->weight > 0) || !isfinite(d->weight))
			return -EINVAL;
		if (!(d->max_units > 0) || isnan(d->max_units))
			return -EINVAL;
		for (int r = 0; r < DRF_NRES; r++) {
			if (!(pool[r] > 0))
				continue;
			if (!(d->shape[r] >= 0) || !isfinite(d->shape[r]))
				return -EINVAL;
			needs = needs || d->shape[r] > 0;
		}
		if (!needs && isinf(d->max_units))
			return -EINVAL;
	}
	*ret_nservers = ns;
	return 0;
}

/* A tenant's normalized task and its dominant share per task (0: needs nothing). */
static double normalize(const double pool[DRF_NRES], const struct drf_demand *d,
			double u[DRF_NRES], int *ret_res)
{
	double best = 0;
	int best_r = -1;

	for (int r = 0; r < DRF_NRES; r++) {
		u[r] = pool[r] > 0 ? d->shape[r] / pool[r] : 0;
		if (pool[r] > 0 && (best_r < 0 || u[r] > best)) {
			best = u[r];
			best_r = r;
		}
	}
	*ret_res = best > 0 ? best_r : -1;
	return best;
}

/* The result's tenants, groups and the server count; places are the caller's. */
static int result_init(const struct drfh_problem *p, const double pool[DRF_NRES], size_t nservers,
		       struct drfh_result *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->pool, pool, sizeof(out->pool));
	out->n = p->n;
	out->nservers = nservers;
	out->tenants = calloc(p->n + 1, sizeof(*out->tenants));
	if (!out->tenants)
		return -ENOMEM;
	return 0;
}

static int cmp_spec(const void *a, const void *b, void *ctx)
{
	const struct drfh_server_spec *specs = ctx;
	const size_t *x = a, *y = b;
	int c = memcmp(specs[*x].capacity, specs[*y].capacity, sizeof(specs[*x].capacity));

	if (c)
		return c;
	return *x < *y ? -1 : *x > *y;
}

/* Groups of identical servers, in the order of their first server. */
static int make_groups(const struct drfh_problem *p, struct drfh_result *out)
{
	size_t *order = malloc((p->nspecs + 1) * sizeof(*order));
	size_t *first = malloc((p->nspecs + 1) * sizeof(*first));
	size_t *gid = malloc((p->nspecs + 1) * sizeof(*gid));
	size_t ng = 0, at = 0;
	int err = -ENOMEM;

	if (!order || !first || !gid)
		goto out;
	for (size_t s = 0; s < p->nspecs; s++) {
		order[s] = s;
		first[s] = at;
		at += p->specs[s].count;
	}
	qsort_r(order, p->nspecs, sizeof(*order), cmp_spec, (void *)p->specs);
	/* gid[spec] = the spec that leads its group (the earliest of equal ones) */
	for (size_t k = 0; k < p->nspecs; k++) {
		size_t s = order[k];

		if (k > 0 && memcmp(p->specs[s].capacity, p->specs[order[k - 1]].capacity,
				    sizeof(p->specs[s].capacity)) == 0)
			gid[s] = gid[order[k - 1]];
		else
			gid[s] = s;
	}
	out->groups = calloc(p->nspecs + 1, sizeof(*out->groups));
	if (!out->groups)
		goto out;
	/* In spec order, a leader opens its group: groups come in order of first server. */
	for (size_t s = 0; s < p->nspecs; s++) {
		if (gid[s] == s) {
			struct drfh_group *g = &out->groups[ng];

			memcpy(g->capacity, p->specs[s].capacity, sizeof(g->capacity));
			g->first = first[s];
			g->count = 0;
			first[s] = ng++; /* reused: the leader's group index */
		}
	}
	for (size_t s = 0; s < p->nspecs; s++)
		out->groups[first[gid[s]]].count += p->specs[s].count;
	out->ngroups = ng;
	err = 0;
out:
	free(order);
	free(first);
	free(gid);
	return err;
}

static void finish(const struct drfh_problem *p, struct drfh_result *out)
{
	double used[DRF_NRES] = { 0 };

	for (size_t i = 0; i < p->n; i++) {
		const struct drf_demand *d = &p->demands[i];
		struct drfh_tenant *t = &out->tenants[i];
		double u[DRF_NRES], dom = normalize(out->pool, d, u, &t->dominant_res);

		for (int r = 0; r < DRF_NRES; r++) {
			t->alloc[r] = out->pool[r] > 0 ? t->units * d->shape[r] : 0;
			used[r] += t->alloc[r];
		}
		t->gds = t->units * dom;
		t->limited_by = t->units >= d->max_units * (1 - 1e-9) ? DRF_LIMIT_DEMAND
								     : DRFH_LIMIT_CAPACITY;
	}
	for (int r = 0; r < DRF_NRES; r++)
		out->utilization[r] = out->pool[r] > 0 ? fmin(1, used[r] / out->pool[r]) : 0;
}

double drfh_jain(const struct drfh_problem *p, const struct drfh_result *r)
{
	double s = 0, s2 = 0;
	size_t n = 0;

	for (size_t i = 0; i < p->n; i++) {
		double u[DRF_NRES], x;
		int res;

		if (!(normalize(r->pool, &p->demands[i], u, &res) > 0))
			continue;
		x = r->tenants[i].gds / p->demands[i].weight;
		s += x;
		s2 += x * x;
		n++;
	}
	return s2 > 0 ? s * s / ((double)n * s2) : 1;
}

/* ---- the divisible form ---- */

/* Indexes (uint32_t) by a key per index (ctx), then by index. */
static int cmp_by_key(const void *a, const void *b, void *ctx)
{
	const double *sort_key = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (sort_key[x] != sort_key[y])
		return sort_key[x] < sort_key[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * Directions. What a tenant's tasks take of each group depends only on the
 * direction of its task, u_i / d_i (its task per unit of dominant share), and
 * on its total G_i: tenants whose tasks point the same way are one to the
 * servers, whatever their counts and weights. So the LP has one row per
 * direction D,
 *
 *   sum_g y_Dg  >=  F_D + W_D t,
 *
 * where F_D is what D's frozen (and pinned) tenants hold and W_D the sum of its
 * growing tenants' weights, and one column y_Dg per direction and group: the
 * global dominant share D holds on g. A tenant's own G_i is w_i t while it
 * grows (more never helps the servers), its count or the level it froze at
 * after. The LP's size follows the task shapes and the server shapes, not the
 * tenants: 10,000 tenants of 100 shapes are 100 rows.
 *
 * Columns on demand. Most y_Dg are 0 in an optimum (a basic one has at most
 * one per row), so the LP starts with each direction's best group, and after
 * each optimum adds, for each direction, the column of best reduced cost
 *   -(sigma_D + sum_k pi_gk u_Dk)
 * (sigma: the direction rows' duals, pi: the capacity rows'), if positive:
 * that is the simplex's own pricing, over the columns not in the LP. With
 * none left to add, the optimum is the optimum over every column. An LP found
 * infeasible with the columns it has (a pinned count, below) is tried with an
 * artificial s_D >= 0 per direction row, minimizing sum s_D and adding columns
 * the same way: infeasible only if that minimum stays above 0.
 */
#define PRICE_EPS 1e-12
#define INFEAS_EPS 1e-9

/*
 * Cap events in bulk. Most rounds of progressive filling end with a tenant
 * reaching its cap (its task count), not with the servers stopping the level.
 * Take the capped tenants still growing, sorted by the level c_1 <= c_2 <= ...
 * at which each reaches its cap (c_i = cap_i / w_i), and let t* be the level at
 * which the servers stop the filling: the largest t at which
 *
 *   F(t):  G_i >= min(cap_i, w_i t)  and  G_i <= cap_i  for the growing,
 *          the frozen at their values, every group's capacity held,
 *
 * is feasible (F(t) only tightens as t grows, so its t form an interval). The
 * tenants with c_i <= t* reach their caps first; the round after them is decided
 * at t* by duals as before. LP_j pins the j lowest-cap tenants at their caps
 * (in F_D) and maximizes t over the others (in W_D), with t <= c_{j+1} (the
 * others' caps); P(j) says its optimum T_j >= c_j (P(0) holds; an infeasible
 * LP_j fails). Then P(j) holds iff c_j <= t*:
 *  - if c_j <= t*, at t = min(c_{j+1}, t*) >= c_j the constraints of F(t) are
 *    those of LP_j (min(cap_i, w_i t) is cap_i for i <= j, w_i t for i > j; and
 *    G_i = cap_i when G_i >= cap_i >= G_i), and F(t) is feasible: T_j >= c_j;
 *  - if T_j >= c_j, LP_j's solution at t = c_j satisfies F(c_j) (G_i = cap_i for
 *    i <= j, G_i >= w_i c_j >= min(cap_i, w_i c_j) for i > j): c_j <= t*.
 * So P is monotone in j, and k = max{j : P(j)} is found by galloping then
 * bisecting, a few LPs however many caps lie below t*. Two shortcuts, both from
 * the same facts: a true P(j) with T_j < c_{j+1} gives k = j (LP_j's T is
 * min(c_{j+1}, t*)), and T_j >= c_{j+1} gives P(j+1); any feasible LP_j gives
 * t* >= T_j (its solution satisfies F(T_j) as it is), so every c_i <= T_j has
 * P(i). LP_k itself is F near t*: its optimum is t* (or t's bound, with nobody
 * left growing), and the direction rows' duals freeze as before: a direction
 * row's dual is each of its growing tenants' level-row dual in the LP with a
 * row per tenant (they share their link rows' duals: the same columns price
 * the same), so a direction is held whole or not at all.
 * Comparisons of levels allow LEVEL_REL, far inside the solver's own tolerance.
 */
#define LEVEL_REL 1e-9

struct dlp {
	glp_prob *lp;
	glp_smcp parm;
	size_t na, nd, ng;
	int m;
	int row_dir0, col_t, col_s0;
	const double *gcap; /* g * m + k: group g's capacity of res[k], of the pool */
	const double *dvec; /* D * m + k: direction D's task per dominant share */
	int *ycol;          /* D * ng + g: its column, 0 none yet, -1 cannot fit */
	double *pi;         /* the capacity rows' duals (scratch) */
	const uint32_t *dir; /* active tenant -> its direction */
	const double *w;     /* weight / the largest */
	const double *cap;   /* per active tenant, in G units; INFINITY: no cap */
	const double *reach; /* the level t at which it reaches its cap: cap / w */
	const bool *growing;
	const double *fixed; /* not growing: its G */
	bool *pinned;
	double *W, *F;       /* per direction (scratch) */
	int *ind;
	double *val;
	uint32_t *order;     /* the capped tenants still growing, by reach */
	size_t nc;
	size_t npinned;      /* order[0 .. npinned) pinned at their caps */
	double tbound;
	uint64_t *rounds;
	size_t ncols;
};

/* Adds y_Dg to the LP: its column, or -ENOMEM. */
static int dlp_add_col(struct dlp *L, size_t D, size_t g)
{
	int col = glp_add_cols(L->lp, 1), n = 0;

	for (int k = 0; k < L->m; k++) {
		if (!(L->dvec[D * (size_t)L->m + (size_t)k] > 0))
			continue;
		L->ind[++n] = (int)(g * (size_t)L->m) + k + 1;
		L->val[n] = L->dvec[D * (size_t)L->m + (size_t)k];
	}
	L->ind[++n] = L->row_dir0 + (int)D;
	L->val[n] = 1;
	glp_set_mat_col(L->lp, col, n, L->ind, L->val);
	glp_set_col_bnds(L->lp, col, GLP_LO, 0, 0);
	L->ycol[D * L->ng + g] = col;
	L->ncols++;
	return col;
}

/*
 * For each direction, its PRICE_COLS columns of best positive reduced cost:
 * how many were added. (One a direction took rounds of the simplex by the
 * hundred; every one, on a fleet of all different shapes, an LP of every
 * column from the start, half again as slow.)
 */
#define PRICE_COLS 16

static size_t dlp_price(struct dlp *L)
{
	size_t added = 0;

	for (size_t g = 0; g < L->ng; g++)
		for (int k = 0; k < L->m; k++)
			L->pi[g * (size_t)L->m + (size_t)k] =
				glp_get_row_dual(L->lp, (int)(g * (size_t)L->m) + k + 1);
	for (size_t D = 0; D < L->nd; D++) {
		double sigma = glp_get_row_dual(L->lp, L->row_dir0 + (int)D);
		double rcs[PRICE_COLS];
		size_t gs[PRICE_COLS];
		int n = 0;

		for (size_t g = 0; g < L->ng; g++) {
			double rc = -sigma;
			int at;

			if (L->ycol[D * L->ng + g])
				continue;
			for (int k = 0; k < L->m; k++)
				rc -= L->pi[g * (size_t)L->m + (size_t)k] *
				      L->dvec[D * (size_t)L->m + (size_t)k];
			if (!(rc > PRICE_EPS) || (n == PRICE_COLS && rc <= rcs[n - 1]))
				continue;
			/* Into the best, kept in decreasing order. */
			at = n < PRICE_COLS ? n++ : n - 1;
			for (; at > 0 && rcs[at - 1] < rc; at--) {
				rcs[at] = rcs[at - 1];
				gs[at] = gs[at - 1];
			}
			rcs[at] = rc;
			gs[at] = g;
		}
		for (int q = 0; q < n; q++)
			dlp_add_col(L, D, gs[q]);
		added += (size_t)n;
	}
	return added;
}

/* The LP in force solved, with the columns it needs: GLP_OPT, GLP_NOFEAS, or -EDOM. */
static int dlp_simplex(struct dlp *L)
{
	for (;;) {
		int st;

		st = glp_simplex(L->lp, &L->parm);
		/*
		 * A basis that the changes made singular (t basic, its column
		 * changed by a freeze): GLPK's standard one instead (every row's
		 * slack; its crash basis would print).
		 */
		if (st == GLP_EBADB || st == GLP_ESING || st == GLP_ECOND || st == GLP_EFAIL) {
			glp_std_basis(L->lp);
			st = glp_simplex(L->lp, &L->parm);
		}
		if (st != 0)
			return -EDOM;
		st = glp_get_status(L->lp);
		if (st != GLP_OPT)
			return st == GLP_NOFEAS ? GLP_NOFEAS : -EDOM;
		if (dlp_price(L) == 0)
			return GLP_OPT;
	}
}

/* Phase one over every column: whether the LP in force is feasible (1, 0), or -EDOM. */
static int dlp_feasible(struct dlp *L)
{
	double short_by;
	int st;

	glp_set_obj_coef(L->lp, L->col_t, 0);
	for (size_t D = 0; D < L->nd; D++) {
		glp_set_col_bnds(L->lp, L->col_s0 + (int)D, GLP_LO, 0, 0);
		glp_set_obj_coef(L->lp, L->col_s0 + (int)D, -1);
	}
	st = dlp_simplex(L);
	short_by = -glp_get_obj_val(L->lp);
	glp_set_obj_coef(L->lp, L->col_t, 1);
	for (size_t D = 0; D < L->nd; D++) {
		glp_set_col_bnds(L->lp, L->col_s0 + (int)D, GLP_FX, 0, 0);
		glp_set_obj_coef(L->lp, L->col_s0 + (int)D, 0);
	}
	if (st != GLP_OPT)
		return -EDOM; /* s_D = F_D, y = 0, t = 0 is feasible: it cannot be infeasible */
	return short_by <= INFEAS_EPS;
}

/* LP_j in force: the pins, the direction rows and t's column and bound. */
static void dlp_set(struct dlp *L, size_t j)
{
	int n = 0;
	double ub;

	for (; L->npinned < j; L->npinned++)
		L->pinned[L->order[L->npinned]] = true;
	while (L->npinned > j)
		L->pinned[L->order[--L->npinned]] = false;
	for (size_t D = 0; D < L->nd; D++)
		L->W[D] = L->F[D] = 0;
	for (size_t a = 0; a < L->na; a++) {
		size_t D = L->dir[a];

		if (!L->growing[a])
			L->F[D] += L->fixed[a];
		else if (L->pinned[a])
			L->F[D] += L->cap[a];
		else
			L->W[D] += L->w[a];
	}
	for (size_t D = 0; D < L->nd; D++) {
		glp_set_row_bnds(L->lp, L->row_dir0 + (int)D, GLP_LO, L->F[D], 0);
		if (L->W[D] > 0) {
			L->ind[++n] = L->row_dir0 + (int)D;
			L->val[n] = -L->W[D];
		}
	}
	glp_set_mat_col(L->lp, L->col_t, n, L->ind, L->val);
	ub = j < L->nc ? fmin(L->tbound, L->reach[L->order[j]]) : L->tbound;
	if (ub > 0)
		glp_set_col_bnds(L->lp, L->col_t, GLP_DB, 0, ub);
	else
		glp_set_col_bnds(L->lp, L->col_t, GLP_FX, 0, 0);
}

/* LP_j: 1 if P(j), 0 if not, -EDOM; its optimum t (-INFINITY: infeasible). */
static int dlp_probe(struct dlp *L, size_t j, double *ret_t)
{
	int st;

	dlp_set(L, j);
	(*L->rounds)++;
	st = dlp_simplex(L);
	if (st == GLP_NOFEAS) {
		st = dlp_feasible(L);
		if (st < 0)
			return st;
		if (!st) {
			if (j == 0)
				return -EDOM; /* LP_0 holds the last optimum: it cannot be infeasible */
			*ret_t = -INFINITY;
			return 0;
		}
		st = dlp_simplex(L);
	}
	if (st != GLP_OPT)
		return -EDOM;
	*ret_t = glp_get_col_prim(L->lp, L->col_t);
	return j == 0 || *ret_t >= L->reach[L->order[j - 1]] * (1 - LEVEL_REL);
}

/*
 * k, the caps reached below t*, with LP_k the optimum in force, or -EDOM.
 * Invariant: P(lo) holds, P(hi) does not (hi = nc + 1: not known yet), lo < hi;
 * each probe returns, lowers hi or raises lo, so it ends.
 */
static long dlp_search(struct dlp *L)
{
	size_t lo = 0, hi = L->nc + 1, step = 0;

	for (;;) {
		size_t j;
		double t;
		int ok;

		if (hi - lo <= 1)
			j = lo;
		else if (hi > L->nc) {
			j = lo + step < L->nc ? lo + step : L->nc;
			step = step ? 2 * step : 1;
		} else {
			j = lo + (hi - lo) / 2;
		}
		ok = dlp_probe(L, j, &t);
		if (ok < 0)
			return ok;
		if (ok) {
			if (j == L->nc || j + 1 >= hi ||
			    t < L->reach[L->order[j]] * (1 - LEVEL_REL))
				return (long)j;
			lo = j + 1;
		} else {
			size_t cnt = 0;

			while (cnt < j && L->reach[L->order[cnt]] * (1 - LEVEL_REL) <= t)
				cnt++;
			hi = j;
			if (lo >= j || cnt > lo)
				lo = cnt;
		}
	}
}

/* Active tenants by direction key (ctx: nres keys per tenant), then index. */
struct dir_key {
	const int64_t *key;
	int m;
};

static int cmp_dir(const void *a, const void *b, void *ctx)
{
	const struct dir_key *dk = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = memcmp(&dk->key[x * (size_t)dk->m], &dk->key[y * (size_t)dk->m],
		       (size_t)dk->m * sizeof(*dk->key));

	if (c)
		return c;
	return x < y ? -1 : x > y;
}

static int cmp_place(const void *a, const void *b)
{
	const struct drfh_place *x = a, *y = b;

	if (x->tenant != y->tenant)
		return x->tenant < y->tenant ? -1 : 1;
	return x->where < y->where ? -1 : x->where > y->where;
}

/*
 * The places from the last optimum: each direction's y_Dg handed to its
 * tenants in turn, group after group, so that a tenant spans as few groups as
 * its share needs (the LP decides only each direction's totals).
 */
static int dlp_places(const struct dlp *L, const uint32_t *bydir, const size_t *dstart,
		      const size_t *act, const double *dom, struct drfh_result *out)
{
	out->places = calloc(L->na + L->ncols + 1, sizeof(*out->places));
	if (!out->places)
		return -ENOMEM;
	for (size_t D = 0; D < L->nd; D++) {
		size_t next = 0, cur = L->ng; /* the group being handed out, and the one after */
		double left_g = 0;

		for (size_t q = dstart[D]; q < dstart[D + 1]; q++) {
			uint32_t a = bydir[q];
			double need = L->fixed[a];

			while (need > 0) {
				struct drfh_place *last = out->nplaces ? &out->places[out->nplaces - 1] : NULL;
				double take;

				while (!(left_g > 0) && next < L->ng) {
					int col = L->ycol[D * L->ng + next];

					if (col > 0 && glp_get_col_prim(L->lp, col) > 0) {
						cur = next;
						left_g = glp_get_col_prim(L->lp, col);
					}
					next++;
				}
				if (!(left_g > 0)) {
					/* The optimum's y short by rounding: the last group takes it. */
					if (cur == L->ng)
						break;
					left_g = need;
				}
				take = fmin(need, left_g);
				if (last && last->tenant == (uint32_t)act[a] && last->where == (uint32_t)cur)
					last->tasks += take / dom[act[a]];
				else
					out->places[out->nplaces++] = (struct drfh_place){
						.tenant = (uint32_t)act[a],
						.where = (uint32_t)cur,
						.tasks = take / dom[act[a]],
					};
				need -= take;
				left_g -= take;
			}
		}
	}
	qsort(out->places, out->nplaces, sizeof(*out->places), cmp_place);
	return 0;
}

int drfh_allocate(const struct drfh_problem *p, struct drfh_result *ret)
{
	struct drfh_result out;
	struct dlp L = { 0 };
	double pool[DRF_NRES], wmax = 0, wmin = INFINITY;
	int res[DRF_NRES], m = 0;
	size_t nservers, na = 0, nd = 0;
	size_t *act = NULL;      /* active tenant a -> tenant index */
	double *u = NULL, *dom = NULL;
	int64_t *key = NULL;     /* a * m + k: its direction, rounded to 2^-40 */
	uint32_t *bydir = NULL;  /* active tenants by direction */
	size_t *dstart = NULL;   /* direction D's tenants: bydir[dstart[D] .. dstart[D + 1]) */
	uint32_t *dir = NULL;
	double *gcap = NULL, *dvec = NULL, *w = NULL, *cap = NULL, *reach = NULL;
	double *fixed = NULL, *W = NULL, *F = NULL, *pi = NULL, *val = NULL;
	bool *growing = NULL, *pinned = NULL;
	int *ycol = NULL, *ind = NULL;
	uint32_t *order = NULL;
	int err;

	err = validate(p, pool, &nservers);
	if (err < 0)
		return err;
	err = result_init(p, pool, nservers, &out);
	if (err < 0)
		return err;
	err = make_groups(p, &out);
	if (err < 0)
		goto fail;
	out.by_group = true;
	for (int r = 0; r < DRF_NRES; r++)
		if (pool[r] > 0)
			res[m++] = r;

	const size_t ng = out.ngroups;

	act = malloc((p->n + 1) * sizeof(*act));
	u = malloc((p->n + 1) * DRF_NRES * sizeof(*u));
	dom = malloc((p->n + 1) * sizeof(*dom));
	if (!act || !u || !dom) {
		err = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < p->n; i++) {
		int dr;

		dom[i] = normalize(pool, &p->demands[i], &u[i * DRF_NRES], &dr);
		if (dom[i] > 0) {
			act[na++] = i;
			wmax = fmax(wmax, p->demands[i].weight);
			wmin = fmin(wmin, p->demands[i].weight);
		} else {
			out.tenants[i].units = p->demands[i].max_units; /* needs nothing: all of it */
		}
	}
	if (na == 0)
		goto done;

	/* Directions: the active tenants sorted by their task's direction, rounded. */
	key = malloc((na * (size_t)m + 1) * sizeof(*key));
	bydir = malloc((na + 1) * sizeof(*bydir));
	dstart = malloc((na + 2) * sizeof(*dstart));
	dir = malloc((na + 1) * sizeof(*dir));
	dvec = malloc((na * (size_t)m + 1) * sizeof(*dvec));
	if (!key || !bydir || !dstart || !dir || !dvec) {
		err = -ENOMEM;
		goto fail;
	}
	for (size_t a = 0; a < na; a++) {
		const double *ua = &u[act[a] * DRF_NRES];

		for (int k = 0; k < m; k++)
			key[a * (size_t)m + (size_t)k] = llround(ldexp(ua[res[k]] / dom[act[a]], 40));
		bydir[a] = (uint32_t)a;
	}
	qsort_r(bydir, na, sizeof(*bydir), cmp_dir, &(struct dir_key){ .key = key, .m = m });
	for (size_t q = 0; q < na; q++) {
		uint32_t a = bydir[q];

		if (q == 0 || memcmp(&key[a * (size_t)m], &key[bydir[q - 1] * (size_t)m],
				     (size_t)m * sizeof(*key)) != 0) {
			const double *ua = &u[act[a] * DRF_NRES];

			dstart[nd] = q;
			for (int k = 0; k < m; k++)
				dvec[nd * (size_t)m + (size_t)k] = ua[res[k]] / dom[act[a]];
			nd++;
		}
		dir[a] = (uint32_t)(nd - 1);
	}
	dstart[nd] = na;

	gcap = malloc((ng * (size_t)m + 1) * sizeof(*gcap));
	pi = malloc((ng * (size_t)m + 1) * sizeof(*pi));
	ycol = calloc(nd * ng + 1, sizeof(*ycol));
	ind = malloc((nd + (size_t)m + 2) * sizeof(*ind));
	val = malloc((nd + (size_t)m + 2) * sizeof(*val));
	w = malloc((na + 1) * sizeof(*w));
	cap = malloc((na + 1) * sizeof(*cap));
	reach = malloc((na + 1) * sizeof(*reach));
	fixed = calloc(na + 1, sizeof(*fixed));
	growing = calloc(na + 1, sizeof(*growing));
	pinned = calloc(na + 1, sizeof(*pinned));
	order = malloc((na + 1) * sizeof(*order));
	W = malloc((nd + 1) * sizeof(*W));
	F = malloc((nd + 1) * sizeof(*F));
	if (!gcap || !pi || !ycol || !ind || !val || !w || !cap || !reach || !fixed ||
	    !growing || !pinned || !order || !W || !F) {
		err = -ENOMEM;
		goto fail;
	}
	for (size_t g = 0; g < ng; g++)
		for (int k = 0; k < m; k++)
			gcap[g * (size_t)m + (size_t)k] = out.groups[g].capacity[res[k]] *
							  (double)out.groups[g].count / pool[res[k]];
	/* A group lacking a resource a direction's task needs can hold none of it. */
	for (size_t D = 0; D < nd; D++)
		for (size_t g = 0; g < ng; g++)
			for (int k = 0; k < m; k++)
				if (dvec[D * (size_t)m + (size_t)k] > 0 &&
				    !(out.groups[g].capacity[res[k]] > 0))
					ycol[D * ng + g] = -1;

	/*
	 * Rows: 1 .. ng*m the groups' capacities (g, r); then a row per direction.
	 * Columns: t, the artificial s_D (fixed at 0 but in phase one), then the
	 * y_Dg the pricing brings in: first, each direction's best group (the one
	 * that holds the most of its tasks).
	 */
	L = (struct dlp){ .na = na, .nd = nd, .ng = ng, .m = m, .gcap = gcap, .dvec = dvec,
			  .ycol = ycol, .pi = pi, .dir = dir, .w = w, .cap = cap, .reach = reach,
			  .growing = growing, .fixed = fixed, .pinned = pinned, .W = W, .F = F,
			  .ind = ind, .val = val, .order = order, .rounds = &out.rounds };
	L.lp = glp_create_prob();
	glp_set_obj_dir(L.lp, GLP_MAX);
	const int caprows = (int)(ng * (size_t)m);

	L.row_dir0 = caprows + 1;
	glp_add_rows(L.lp, caprows + (int)nd);
	for (int r = 1; r <= caprows; r++)
		glp_set_row_bnds(L.lp, r, GLP_UP, 0, gcap[r - 1]);
	L.col_t = glp_add_cols(L.lp, 1 + (int)nd);
	L.col_s0 = L.col_t + 1;
	glp_set_obj_coef(L.lp, L.col_t, 1);
	for (size_t D = 0; D < nd; D++) {
		ind[1] = L.row_dir0 + (int)D;
		val[1] = 1;
		glp_set_mat_col(L.lp, L.col_s0 + (int)D, 1, ind, val);
		glp_set_col_bnds(L.lp, L.col_s0 + (int)D, GLP_FX, 0, 0);
	}
	/*
	 * The first basis: the capacity rows' slacks, and per direction its first
	 * column (its row nonbasic at its bound); t at 0. Row by row it is
	 * triangular with unit diagonal, and feasible: everything 0. From it t
	 * rises with every direction at once.
	 */
	for (int r = 1; r <= caprows; r++)
		glp_set_row_stat(L.lp, r, GLP_BS);
	for (size_t D = 0; D < nd; D++) {
		double most = -1;
		size_t best = ng;

		for (size_t g = 0; g < ng; g++) {
			double tasks = INFINITY;

			if (ycol[D * ng + g] < 0)
				continue;
			for (int k = 0; k < m; k++)
				if (dvec[D * (size_t)m + (size_t)k] > 0)
					tasks = fmin(tasks, gcap[g * (size_t)m + (size_t)k] /
								    dvec[D * (size_t)m + (size_t)k]);
			if (tasks > most) {
				most = tasks;
				best = g;
			}
		}
		/* A direction no group can hold keeps its row basic (its tenants get 0). */
		if (best < ng)
			glp_set_col_stat(L.lp, dlp_add_col(&L, D, best), GLP_BS);
		glp_set_row_stat(L.lp, L.row_dir0 + (int)D, best < ng ? GLP_NL : GLP_BS);
	}

	double tmax = wmax / wmin;
	size_t left = na;

	for (size_t a = 0; a < na; a++) {
		growing[a] = true;
		w[a] = p->demands[act[a]].weight / wmax;
		cap[a] = p->demands[act[a]].max_units * dom[act[a]];
		reach[a] = cap[a] / w[a];
		if (isfinite(reach[a]))
			tmax = fmax(tmax, reach[a]);
	}
	/*
	 * t's bound, so that LP_j stays bounded with every growing tenant pinned:
	 * above every reach, and above any level a growing tenant can have (G <= 1,
	 * its dominant resource at most the pool's, so t <= wmax / w).
	 */
	L.tbound = 2 * tmax + 1;
	glp_init_smcp(&L.parm);
	L.parm.msg_lev = GLP_MSG_OFF;
	L.parm.presolve = GLP_OFF;
	L.parm.meth = GLP_PRIMAL;
	while (left > 0) {
		size_t froze, best = nd;
		double best_dual = 0, t;
		long k;

		L.nc = 0;
		for (size_t a = 0; a < na; a++) {
			pinned[a] = false;
			if (growing[a] && isfinite(reach[a]))
				order[L.nc++] = (uint32_t)a;
		}
		L.npinned = 0;
		qsort_r(order, L.nc, sizeof(*order), cmp_by_key, reach);
		k = dlp_search(&L);
		if (k < 0) {
			err = (int)k;
			goto fail;
		}
		t = fmax(0, glp_get_col_prim(L.lp, L.col_t));
		/* Those that reached their caps: frozen there. */
		for (size_t q = 0; q < (size_t)k; q++) {
			growing[order[q]] = false;
			fixed[order[q]] = cap[order[q]];
		}
		left -= (size_t)k;
		froze = (size_t)k;
		/*
		 * Then the directions whose row has a nonzero dual, whole; if none has
		 * (a degenerate optimum), the one with the largest.
		 */
		for (size_t D = 0; D < nd; D++) {
			double dual;

			if (!(W[D] > 0))
				continue;
			dual = fabs(glp_get_row_dual(L.lp, L.row_dir0 + (int)D));
			if (dual > best_dual) {
				best_dual = dual;
				best = D;
			}
			W[D] = dual > DUAL_EPS ? -1 : 0; /* -1: freezes */
		}
		if (froze == 0 && best < nd && W[best] == 0)
			W[best] = -1;
		for (size_t a = 0; a < na; a++) {
			if (!growing[a] || pinned[a] || W[dir[a]] >= 0)
				continue;
			growing[a] = false;
			fixed[a] = w[a] * t;
			left--;
			froze++;
		}
		if (froze == 0) {
			/* No dual at all: t is not bounded by anyone, which cannot be. */
			err = -EDOM;
			goto fail;
		}
	}

	/* Tasks from the frozen G; places from the last optimum. */
	for (size_t a = 0; a < na; a++) {
		size_t i = act[a];

		out.tenants[i].units = fmin(p->demands[i].max_units, fixed[a] / dom[i]);
	}
	err = dlp_places(&L, bydir, dstart, act, dom, &out);
	if (err < 0)
		goto fail;
done:
	finish(p, &out);
	*ret = out;
	err = 0;
	goto out;
fail:
	drfh_result_free(&out);
out:
	if (L.lp)
		glp_delete_prob(L.lp);
	free(act);
	free(u);
	free(dom);
	free(key);
	free(bydir);
	free(dstart);
	free(dir);
	free(gcap);
	free(dvec);
	free(w);
	free(cap);
	free(reach);
	free(fixed);
	free(W);
	free(F);
	free(pi);
	free(val);
	free(growing);
	free(pinned);
	free(ycol);
	free(ind);
	free(order);
	return err;
}

/* ---- whole tasks ---- */

/* Tenants by weighted global dominant share, then index: a binary min-heap. */
struct theap {
	uint32_t *h;
	size_t n;
	const double *key; /* per tenant */
};

static bool tless(const struct theap *q, uint32_t a, uint32_t b)
{
	return q->key[a] < q->key[b] || (q->key[a] == q->key[b] && a < b);
}

static void theap_down(struct theap *q, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, s = i;
		uint32_t t;

		if (l < q->n && tless(q, q->h[l], q->h[s]))
			s = l;
		if (r < q->n && tless(q, q->h[r], q->h[s]))
			s = r;
		if (s == i)
			return;
		t = q->h[i];
		q->h[i] = q->h[s];
		q->h[s] = t;
		i = s;
	}
}

static void theap_build(struct theap *q)
{
	for (size_t i = q->n / 2; i-- > 0;)
		theap_down(q, i);
}

/* Drops the top. */
static void theap_pop(struct theap *q)
{
	q->h[0] = q->h[--q->n];
	theap_down(q, 0);
}

/* Server indexes: a min-heap, for the earliest of a class. */
struct sheap {
	uint32_t *h;
	uint32_t n, cap;
};

static int sheap_push(struct sheap *q, uint32_t v)
{
	size_t i;

	if (q->n == q->cap) {
		uint32_t cap = q->cap ? 2 * q->cap : 4;
		uint32_t *h = realloc(q->h, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		q->h = h;
		q->cap = cap;
	}
	i = q->n++;
	while (i > 0 && q->h[(i - 1) / 2] > v) {
		q->h[i] = q->h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	q->h[i] = v;
	return 0;
}

static uint32_t sheap_pop(struct sheap *q)
{
	uint32_t top = q->h[0], v = q->h[--q->n];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, s = l;

		if (l >= q->n)
			break;
		if (r < q->n && q->h[r] < q->h[l])
			s = r;
		if (q->h[s] >= v)
			break;
		q->h[i] = q->h[s];
		i = s;
	}
	if (q->n)
		q->h[i] = v;
	return top;
}

/*
 * Servers with the same remaining capacity are one class: which of them takes a
 * task depends only on that (and, among them, on order), so Best-Fit searches
 * classes. Live classes (holding a server that fits some tenant's task) are kept
 * in buckets by their direction's first coordinate b_0: since both directions
 * sum to 1, H = sum_r |a_r - b_r| >= |a_0 - b_0| + |sum_{r>0} (a_r - b_r)| =
 * 2 |a_0 - b_0|, so the search goes out from a_0's bucket and stops on each
 * side at the first bucket whose bound exceeds the best H found (for two
 * resources the bound is exact).
 *
 * Most buckets near a_0 hold nothing the task fits: a max tree over the buckets
 * (per resource, the most any class in them has left) leads the search to the
 * next bucket on each side that may fit, past the rest. Its values only need to
 * be upper bounds (a class fits only where every ancestor's value is at least
 * its own): a class leaving a bucket leaves them as they were, and a bucket the
 * search reads through is set exact again.
 */

struct cls {
	double rem[DRF_NRES];
	double dir[DRF_NRES]; /* rem as fractions of the pool, summing to 1 */
	struct sheap servers;
	uint32_t bucket;
	uint32_t pos;         /* in its bucket, or UINT32_MAX if not live */
	uint32_t next_free;   /* unused: the next unused class */
	bool dead;            /* fits no tenant's task: never live again */
	bool checked;
	bool used;            /* in the table; unused slots keep their heap's buffer */
};

struct bucket {
	uint32_t *v;
	uint32_t n, cap;
};

/* fmax without its NaN cases (none here), which compilers inline. */
static inline double max2(double a, double b)
{
	return a > b ? a : b;
}

/*
 * A max tree over n leaves (a power of two), m values each: every node holds,
 * per value, the most any leaf below it holds, so a search for a leaf holding
 * at least need skips the subtrees that cannot. Leaves start at -inf (hold
 * nothing). Best-Fit keeps one over its direction buckets, First-Fit one over
 * the servers.
 */
struct maxtree {
	double *mx; /* node i's value k at i * m + k; leaf j is node n + j */
	size_t n;
	int m;
};

static int maxtree_init(struct maxtree *t, size_t n, int m)
{
	t->n = n;
	t->m = m;
	t->mx = malloc(2 * n * (size_t)m * sizeof(*t->mx) + 1);
	if (!t->mx)
		return -ENOMEM;
	for (size_t k = 0; k < 2 * n * (size_t)m; k++)
		t->mx[k] = -INFINITY;
	return 0;
}

/* Every inner node from its children, once the leaves are written in t->mx. */
static void maxtree_build(struct maxtree *t)
{
	for (size_t i = t->n; i-- > 1;)
		for (int k = 0; k < t->m; k++)
			t->mx[i * t->m + k] =
				max2(t->mx[2 * i * t->m + k], t->mx[(2 * i + 1) * t->m + k]);
}

/* Sets leaf j's values to v (m of them, exact) and its ancestors' from their children. */
static void maxtree_set(struct maxtree *t, size_t j, const double *v)
{
	size_t i = t->n + j;

	memcpy(&t->mx[i * t->m], v, (size_t)t->m * sizeof(*v));
	for (i /= 2; i >= 1; i /= 2)
		for (int k = 0; k < t->m; k++)
			t->mx[i * t->m + k] =
				max2(t->mx[2 * i * t->m + k], t->mx[(2 * i + 1) * t->m + k]);
}

/* Raises leaf j's values to hold v too (an upper bound: its ancestors follow). */
static void maxtree_raise(struct maxtree *t, size_t j, const double *v)
{
	for (size_t i = t->n + j; i >= 1; i /= 2) {
		bool up = false;

		for (int k = 0; k < t->m; k++)
			if (v[k] > t->mx[i * t->m + k]) {
				t->mx[i * t->m + k] = v[k];
				up = true;
			}
		if (!up)
			return;
	}
}

static bool maxtree_holds(const struct maxtree *t, size_t i, const double *need)
{
	for (int k = 0; k < t->m; k++)
		if (t->mx[i * t->m + k] < need[k])
			return false;
	return true;
}

/*
 * The first leaf >= p that holds need, or -1: up from p's leaf to the next
 * subtree on the right that holds, then down into it, left first. A node that
 * holds may have no leaf that does (its maxima from different leaves): then on
 * to the next subtree on the right of it.
 */
static long maxtree_next(const struct maxtree *t, size_t p, const double *need)
{
	size_t i = t->n + p;

	for (;;) {
		if (maxtree_holds(t, i, need)) {
			if (i >= t->n)
				return (long)(i - t->n);
			i = 2 * i;
			continue;
		}
		while (i & 1) { /* a right child: its parent is done */
			if (i == 1)
				return -1;
			i /= 2;
		}
		i++;
	}
}

/* The last leaf <= p that holds need, or -1: the same, mirrored. */
static long maxtree_prev(const struct maxtree *t, size_t p, const double *need)
{
	size_t i = t->n + p;

	for (;;) {
		if (maxtree_holds(t, i, need)) {
			if (i >= t->n)
				return (long)(i - t->n);
			i = 2 * i + 1;
			continue;
		}
		while (!(i & 1)) /* a left child: its parent is done */
			i /= 2;
		if (i == 1)
			return -1;
		i--;
	}
}

struct classes {
	struct cls *c;
	size_t n, cap;
	size_t nfree;     /* unused classes, from free (UINT32_MAX: none) */
	uint32_t free;
	uint32_t *table;  /* open addressing: class index + 1, 0 empty */
	size_t tcap;      /* power of two */
	struct bucket *b;
	uint32_t nb;      /* buckets, a power of two */
	struct maxtree tree; /* over the buckets: the most each resource a class there has left */
	size_t nlive;     /* classes in the buckets */
	const double *pool;
	const int *res;
	int m;
};

static uint64_t vec_hash(const double *v, const int *res, int m)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL;

	for (int k = 0; k < m; k++) {
		uint64_t b;

		memcpy(&b, &v[res[k]], sizeof(b));
		h = (h ^ b) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	/*
	 * murmur3's finalizer: capacities are round numbers, their doubles' low
	 * bits zero, and the table indexes by the low bits of the hash.
	 */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

static bool vec_eq(const double *a, const double *b, const int *res, int m)
{
	for (int k = 0; k < m; k++)
		if (a[res[k]] != b[res[k]])
			return false;
	return true;
}

static int table_grow(struct classes *cs)
{
	size_t tcap = cs->tcap ? 2 * cs->tcap : 64;
	uint32_t *t = calloc(tcap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < cs->n; i++) {
		size_t at = vec_hash(cs->c[i].rem, cs->res, cs->m) & (tcap - 1);

		if (!cs->c[i].used)
			continue;
		while (t[at])
			at = (at + 1) & (tcap - 1);
		t[at] = (uint32_t)i + 1;
	}
	free(cs->table);
	cs->table = t;
	cs->tcap = tcap;
	return 0;
}

/* Buckets about as many as servers, at least 64 and at most 65,536. */
static int classes_init(struct classes *cs, size_t nservers)
{
	cs->nb = 64;
	while (cs->nb < nservers && cs->nb < 65536)
		cs->nb *= 2;
	cs->b = calloc(cs->nb, sizeof(*cs->b));
	if (!cs->b)
		return -ENOMEM;
	return maxtree_init(&cs->tree, cs->nb, cs->m);
}

static uint32_t bucket_of(const struct classes *cs, double b0)
{
	double x = b0 * cs->nb; /* exact: nb is a power of two */

	return x >= cs->nb - 1 ? cs->nb - 1 : x > 0 ? (uint32_t)x : 0;
}


/* Linear probing's deletion: later entries of the run move back over the hole. */
static void table_del(struct classes *cs, size_t ci)
{
	size_t mask = cs->tcap - 1, at = vec_hash(cs->c[ci].rem, cs->res, cs->m) & mask, j;

	while (cs->table[at] != ci + 1)
		at = (at + 1) & mask;
	for (j = at;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!cs->table[j])
			break;
		home = vec_hash(cs->c[cs->table[j] - 1].rem, cs->res, cs->m) & mask;
		/* it may fill the hole if the hole lies between its home and j */
		if (((j - home) & mask) >= ((j - at) & mask)) {
			cs->table[at] = cs->table[j];
			at = j;
		}
	}
	cs->table[at] = 0;
}

static void live_drop(struct classes *cs, size_t ci);

/*
 * A class whose last server left: out of the search and the table, its slot
 * free for the next new class (a remaining capacity seen again is a new class,
 * checked again against the tenants then placing: the same answer or dead).
 */
static void class_release(struct classes *cs, size_t ci)
{
	live_drop(cs, ci);
	table_del(cs, ci);
	cs->c[ci].used = false;
	cs->c[ci].next_free = cs->free;
	cs->free = (uint32_t)ci;
	cs->nfree++;
}

static int live_add(struct classes *cs, size_t ci)
{
	struct cls *c = &cs->c[ci];
	struct bucket *b = &cs->b[c->bucket];

	if (c->pos != UINT32_MAX || c->dead)
		return 0;
	if (b->n == b->cap) {
		uint32_t cap = b->cap ? 2 * b->cap : 16;
		uint32_t *v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	c->pos = b->n;
	b->v[b->n++] = (uint32_t)ci;
	cs->nlive++;
	{
		double v[DRF_NRES];

		for (int k = 0; k < cs->m; k++)
			v[k] = c->rem[cs->res[k]];
		maxtree_raise(&cs->tree, c->bucket, v);
	}
	return 0;
}

static void live_drop(struct classes *cs, size_t ci)
{
	struct cls *c = &cs->c[ci];
	struct bucket *b = &cs->b[c->bucket];
	uint32_t last;

	if (c->pos == UINT32_MAX)
		return;
	last = b->v[--b->n];
	b->v[c->pos] = last;
	cs->c[last].pos = c->pos;
	c->pos = UINT32_MAX;
	cs->nlive--;
}

/* The class of a remaining vector, made if new; -ENOMEM. */
static long class_of(struct classes *cs, const double rem[DRF_NRES])
{
	size_t at, ci;
	struct cls *c;
	struct sheap keep = { 0 };
	double sum = 0;

	if ((cs->n - cs->nfree + 1) * 2 > cs->tcap && table_grow(cs) < 0)
		return -ENOMEM;
	at = vec_hash(rem, cs->res, cs->m) & (cs->tcap - 1);
	while (cs->table[at]) {
		size_t old = cs->table[at] - 1;

		if (vec_eq(cs->c[old].rem, rem, cs->res, cs->m))
			return (long)old;
		at = (at + 1) & (cs->tcap - 1);
	}
	if (cs->nfree) {
		ci = cs->free;
		cs->free = cs->c[ci].next_free;
		cs->nfree--;
		keep = cs->c[ci].servers; /* empty; its buffer serves again */
	} else {
		if (cs->n == cs->cap) {
			size_t cap = cs->cap ? 2 * cs->cap : 64;
			struct cls *n = realloc(cs->c, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			cs->c = n;
			cs->cap = cap;
		}
		ci = cs->n++;
	}
	c = &cs->c[ci];
	memset(c, 0, sizeof(*c));
	c->servers = keep;
	c->used = true;
	memcpy(c->rem, rem, sizeof(c->rem));
	for (int k = 0; k < cs->m; k++)
		sum += rem[cs->res[k]] / cs->pool[cs->res[k]];
	for (int k = 0; k < cs->m; k++)
		c->dir[cs->res[k]] = sum > 0 ? rem[cs->res[k]] / cs->pool[cs->res[k]] / sum : 0;
	c->pos = UINT32_MAX;
	c->bucket = bucket_of(cs, c->dir[cs->res[0]]);
	cs->table[at] = (uint32_t)ci + 1;
	return (long)ci;
}

static int class_add_server(struct classes *cs, size_t ci, uint32_t server)
{
	int err = sheap_push(&cs->c[ci].servers, server);

	return err < 0 ? err : live_add(cs, ci);
}

static void classes_free(struct classes *cs)
{
	for (size_t i = 0; i < cs->n; i++)
		free(cs->c[i].servers.h);
	free(cs->c);
	free(cs->table);
	for (uint32_t b = 0; cs->b && b < cs->nb; b++)
		free(cs->b[b].v);
	free(cs->b);
	free(cs->tree.mx);
}

static bool fits(const double *rem, const double *shape, const double *pool, const int *res, int m)
{
	for (int k = 0; k < m; k++) {
		int r = res[k];

		if (shape[r] > 0 && rem[r] < shape[r] - FIT_EPS * pool[r])
			return false;
	}
	return true;
}

/* Appends (tenant, where) or adds to the last entry if it is the same. */
struct placelist {
	struct drfh_place *v;
	size_t n, cap;
};

static int place_add(struct placelist *pl, uint32_t tenant, uint32_t where, double tasks)
{
	if (pl->n && pl->v[pl->n - 1].tenant == tenant && pl->v[pl->n - 1].where == where) {
		pl->v[pl->n - 1].tasks += tasks;
		return 0;
	}
	if (pl->n == pl->cap) {
		size_t cap = pl->cap ? 2 * pl->cap : 256;
		struct drfh_place *v = realloc(pl->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		pl->v = v;
		pl->cap = cap;
	}
	pl->v[pl->n++] = (struct drfh_place){ .tenant = tenant, .where = where, .tasks = tasks };
	return 0;
}

/*
 * Stable counting sort of from[0 .. n) into to by key (tenant or where), keys
 * below nkeys; cnt holds nkeys + 1.
 */
static void places_count_sort(const struct drfh_place *from, struct drfh_place *to, size_t n,
			      bool by_tenant, size_t nkeys, size_t *cnt)
{
	memset(cnt, 0, (nkeys + 1) * sizeof(*cnt));
	for (size_t i = 0; i < n; i++)
		cnt[(by_tenant ? from[i].tenant : from[i].where) + 1]++;
	for (size_t k = 1; k <= nkeys; k++)
		cnt[k] += cnt[k - 1];
	for (size_t i = 0; i < n; i++)
		to[cnt[by_tenant ? from[i].tenant : from[i].where]++] = from[i];
}

/*
 * Sorts and merges the list into the result: by server, then stably by tenant,
 * two counting passes (a list in placing order holds a task an entry; the
 * servers are as many as they are). If memory for them is short, qsort.
 */
static void places_finish(struct placelist *pl, struct drfh_result *out)
{
	size_t w = 0, nkeys = out->nservers > out->n ? out->nservers : out->n;
	struct drfh_place *tmp = pl->n ? malloc(pl->n * sizeof(*tmp)) : NULL;
	size_t *cnt = pl->n ? malloc((nkeys + 1) * sizeof(*cnt)) : NULL;

	if (tmp && cnt) {
		places_count_sort(pl->v, tmp, pl->n, false, out->nservers, cnt);
		places_count_sort(tmp, pl->v, pl->n, true, out->n, cnt);
	} else if (pl->n) {
		qsort(pl->v, pl->n, sizeof(*pl->v), cmp_place);
	}
	free(tmp);
	free(cnt);
	for (size_t i = 0; i < pl->n; i++) {
		if (w && pl->v[w - 1].tenant == pl->v[i].tenant &&
		    pl->v[w - 1].where == pl->v[i].where)
			pl->v[w - 1].tasks += pl->v[i].tasks;
		else
			pl->v[w++] = pl->v[i];
	}
	out->places = pl->v;
	out->nplaces = w;
	pl->v = NULL;
}

/* What the discrete forms share: validation, the result, the tenants' shapes. */
struct disc {
	double pool[DRF_NRES];
	int res[DRF_NRES], m;
	size_t nservers;
	double *u;   /* normalized shapes, DRF_NRES per tenant */
	double *dom; /* dominant share per task */
	double *key; /* weighted share, for the turn order */
	struct theap q;
	struct placelist pl;
	double *rem; /* the placing forms: each server's remaining capacity, m per server */
};

static int disc_init(const struct drfh_problem *p, struct disc *d, struct drfh_result *out)
{
	int err;

	memset(d, 0, sizeof(*d));
	memset(out, 0, sizeof(*out));
	err = validate(p, d->pool, &d->nservers);
	if (err < 0)
		return err;
	err = result_init(p, d->pool, d->nservers, out);
	if (err < 0)
		return err;
	for (int r = 0; r < DRF_NRES; r++)
		if (d->pool[r] > 0)
			d->res[d->m++] = r;
	d->u = malloc((p->n + 1) * DRF_NRES * sizeof(*d->u));
	d->dom = malloc((p->n + 1) * sizeof(*d->dom));
	d->key = calloc(p->n + 1, sizeof(*d->key));
	d->q.h = malloc((p->n + 1) * sizeof(*d->q.h));
	d->q.key = d->key;
	if (!d->u || !d->dom || !d->key || !d->q.h)
		return -ENOMEM;
	for (size_t i = 0; i < p->n; i++) {
		int dr;

		d->dom[i] = normalize(d->pool, &p->demands[i], &d->u[i * DRF_NRES], &dr);
		if (d->dom[i] > 0)
			d->q.h[d->q.n++] = (uint32_t)i;
		else
			out->tenants[i].units = p->demands[i].max_units;
	}
	theap_build(&d->q);
	return 0;
}

static void disc_free(struct disc *d)
{
	free(d->u);
	free(d->dom);
	free(d->key);
	free(d->q.h);
	free(d->pl.v);
	free(d->rem);
}

/* Ends a discrete form: the places, the totals. */
static int disc_finish(const struct drfh_problem *p, struct disc *d, struct drfh_result *out,
		       int err)
{
	if (err == 0) {
		places_finish(&d->pl, out);
		finish(p, out);
	} else {
		drfh_result_free(out);
	}
	disc_free(d);
	return err;
}

/*
 * Each server's remaining capacity, after the placement in force (prev) where it
 * still holds: a tenant's tasks beyond its count leave its last servers, and a
 * server that no longer has room sheds tasks, the last tenant's first, until it
 * does. What stays is the result's start; the turn order starts from it.
 */
static int keep_prev(const struct drfh_problem *p, struct disc *d, struct drfh_result *out,
		     const struct drfh_place *prev, size_t nprev)
{
	double *left = NULL;
	size_t server = 0;
	int err = 0;

	d->rem = malloc((d->nservers + 1) * (size_t)d->m * sizeof(*d->rem));
	if (!d->rem)
		return -ENOMEM;
	for (size_t s = 0; s < p->nspecs; s++)
		for (size_t c = 0; c < p->specs[s].count; c++, server++)
			for (int k = 0; k < d->m; k++)
				d->rem[server * d->m + k] = p->specs[s].capacity[d->res[k]];
	if (nprev == 0)
		return 0;
	struct drfh_place *keep = malloc(nprev * sizeof(*keep));

	left = malloc((p->n + 1) * sizeof(*left));
	if (!keep || !left) {
		free(keep);
		free(left);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n; i++)
		left[i] = d->dom[i] > 0 ? p->demands[i].max_units : 0;
	/* prev is sorted by tenant, then server: the first servers keep a tenant's tasks */
	for (size_t k = 0; k < nprev; k++) {
		keep[k] = prev[k];
		if (prev[k].tenant >= p->n || prev[k].where >= d->nservers ||
		    !(prev[k].tasks >= 0) || prev[k].tasks != floor(prev[k].tasks)) {
			err = -EINVAL;
			goto out;
		}
		keep[k].tasks = fmin(keep[k].tasks, left[keep[k].tenant]);
		/*
		 * No more than the server could hold of it alone: a count from
		 * outside (an etcd value) may be anything, and what follows
		 * sheds tasks by the thousand, not one at a time.
		 */
		for (int j = 0; j < d->m; j++) {
			double sh = p->demands[keep[k].tenant].shape[d->res[j]];

			if (sh > 0)
				keep[k].tasks = fmin(keep[k].tasks,
						     floor((d->rem[keep[k].where * d->m + j] +
							    FIT_EPS * d->pool[d->res[j]]) / sh));
		}
		keep[k].tasks = fmax(keep[k].tasks, 0);
		left[keep[k].tenant] -= keep[k].tasks;
		for (int j = 0; j < d->m; j++)
			d->rem[keep[k].where * d->m + j] -=
				keep[k].tasks * p->demands[keep[k].tenant].shape[d->res[j]];
	}
	/*
	 * Over capacity: the last tenants' tasks leave, as many of each as the
	 * most overdrawn resource needs (at most all of them).
	 */
	for (size_t k = nprev; k-- > 0;) {
		double *rem = &d->rem[keep[k].where * d->m];
		const double *shape = p->demands[keep[k].tenant].shape;
		double shed = 0;

		for (int j = 0; j < d->m; j++) {
			double over = -rem[j] - FIT_EPS * d->pool[d->res[j]];

			if (over > 0 && shape[d->res[j]] > 0)
				shed = fmax(shed, ceil(over / shape[d->res[j]]));
		}
		shed = fmin(shed, keep[k].tasks);
		if (shed <= 0)
			continue;
		keep[k].tasks -= shed;
		for (int j = 0; j < d->m; j++)
			rem[j] += shed * shape[d->res[j]];
	}
	for (size_t k = 0; k < nprev && err == 0; k++) {
		uint32_t i = keep[k].tenant;

		for (int j = 0; j < d->m; j++)
			if (d->rem[keep[k].where * d->m + j] < FIT_EPS * d->pool[d->res[j]])
				d->rem[keep[k].where * d->m + j] = 0;
		if (keep[k].tasks <= 0)
			continue;
		err = place_add(&d->pl, i, keep[k].where, keep[k].tasks);
		out->tenants[i].units += keep[k].tasks;
		d->key[i] = out->tenants[i].units * d->dom[i] / p->demands[i].weight;
	}
	theap_build(&d->q);
out:
	free(keep);
	free(left);
	return err;
}

/*
 * Whether a remaining capacity fits some task of a tenant still placing: tested
 * once per class, smallest tasks first, so that servers nothing fits leave the
 * search for good (capacity only shrinks, and tenants only stop).
 */
static bool fits_anyone(const struct drfh_problem *p, const struct disc *d, const uint32_t *by_size,
			const bool *placing, const double *rem)
{
	for (size_t k = 0; k < p->n; k++) {
		uint32_t i = by_size[k];

		if (placing[i] && fits(rem, p->demands[i].shape, d->pool, d->res, d->m))
			return true;
	}
	return false;
}

/* The distance from a_0 to bucket b's values of b_0. */
static double bucket_dist(const struct classes *cs, long b, double a0)
{
	double lo = (double)b / cs->nb, hi = (double)(b + 1) / cs->nb;

	return a0 < lo ? lo - a0 : a0 > hi ? a0 - hi : 0;
}

/*
 * The best class for a task of direction a (Best-Fit), or SIZE_MAX: the least H,
 * ties to the earliest server. The buckets that may fit are read nearest first,
 * until the next on each side is too far to hold an H as small as the best.
 */
static size_t best_class(struct classes *cs, const double *shape, const double a[DRF_NRES])
{
	const int r0 = cs->res[0];
	double best_h = INFINITY, a0 = a[r0], need[DRF_NRES];
	uint32_t best_server = UINT32_MAX, kb = bucket_of(cs, a0);
	size_t best = SIZE_MAX;
	long left, right;

	for (int k = 0; k < cs->m; k++)
		need[k] = shape[cs->res[k]] > 0 ? shape[cs->res[k]] - FIT_EPS * cs->pool[cs->res[k]]
						: -INFINITY;
	left = maxtree_prev(&cs->tree, kb, need);
	right = kb + 1 < cs->nb ? maxtree_next(&cs->tree, kb + 1, need) : -1;
	for (;;) {
		double dl = left >= 0 ? bucket_dist(cs, left, a0) : INFINITY;
		double dr = right >= 0 ? bucket_dist(cs, right, a0) : INFINITY;
		double mx[DRF_NRES];
		bool go_left = dl <= dr;
		long b = go_left ? left : right;
		struct bucket *bk;

		/* the buckets further out are further still */
		if (b < 0 || 2 * (go_left ? dl : dr) - 1e-12 > best_h + H_EPS)
			break;
		bk = &cs->b[b];
		for (int k = 0; k < cs->m; k++)
			mx[k] = -INFINITY;
		for (uint32_t k = 0; k < bk->n; k++) {
			const struct cls *c = &cs->c[bk->v[k]];
			uint32_t top = c->servers.h[0];
			double h = 0;

			for (int j = 0; j < cs->m; j++)
				mx[j] = max2(mx[j], c->rem[cs->res[j]]);
			if (!fits(c->rem, shape, cs->pool, cs->res, cs->m))
				continue;
			for (int j = 0; j < cs->m; j++)
				h += fabs(a[cs->res[j]] - c->dir[cs->res[j]]);
			if (h < best_h - H_EPS || (h <= best_h + H_EPS && top < best_server)) {
				best_h = h;
				best_server = top;
				best = bk->v[k];
			}
		}
		maxtree_set(&cs->tree, (size_t)b, mx); /* exact again: classes may have left it */
		if (go_left)
			left = b > 0 ? maxtree_prev(&cs->tree, (size_t)b - 1, need) : -1;
		else
			right = b + 1 < (long)cs->nb ? maxtree_next(&cs->tree, (size_t)b + 1, need) : -1;
	}
	return best;
}

/*
 * How many tasks of shape fit in rem, one at a time as the placing forms take
 * them (a task fits while rem >= shape - FIT_EPS of the pool); INFINITY for a
 * task under FIT_EPS of the pool in every resource it needs (it always fits).
 */
static double fit_count(const double *rem, const double *shape, const double *pool, const int *res,
			int m)
{
	double n = INFINITY;

	for (int k = 0; k < m; k++) {
		int r = res[k];
		double eps = FIT_EPS * pool[r], c;

		if (!(shape[r] > eps))
			continue;
		c = floor((rem[r] + eps) / shape[r]);
		if (c < 0)
			c = 0;
		/* the division's rounding: the c-th fits and the next does not, exactly */
		if (c < 0x1p52) {
			while (c > 0 && rem[r] - (c - 1) * shape[r] < shape[r] - eps)
				c--;
			while (rem[r] - c * shape[r] >= shape[r] - eps)
				c++;
		}
		n = fmin(n, c);
	}
	return n;
}

/* rem less t tasks of shape, as t steps leave it (a crumb under FIT_EPS of the pool is 0). */
static void take_tasks(double rem[DRF_NRES], const double *shape, double t, const double *pool)
{
	for (int r = 0; r < DRF_NRES; r++) {
		if (!(pool[r] > 0) || !(shape[r] > 0))
			continue;
		rem[r] -= t * shape[r];
		if (rem[r] < FIT_EPS * pool[r])
			rem[r] = 0;
	}
}

/*
 * The run of tenant i at the top of the turn order: how many tasks it places
 * one at a time before another tenant's turn, its share then reaching the
 * next lowest's (the smaller child of the heap's root; INFINITY if none).
 * Keys as the loop computes them, (units + t) * dom / weight, so the count is
 * exact: t = 0 is i's turn (it is the top), and so is each t whose key is
 * still below the next's (or equal, i being the earlier).
 */
static double run_count(const struct disc *d, const struct drfh_problem *p, double units,
			uint32_t i)
{
	const struct theap *q = &d->q;
	double w = p->demands[i].weight, dom = d->dom[i], k2, t;
	uint32_t j;

	if (q->n < 2)
		return INFINITY;
	j = q->h[1];
	if (q->n > 2 && tless(q, q->h[2], j))
		j = q->h[2];
	k2 = d->key[j];
	t = floor(k2 * w / dom - units);
	if (!(t < 0x1p52))
		return INFINITY;
	if (t < 0)
		t = 0;
#define TURN(x) ((units + (x)) * dom / w < k2 || ((units + (x)) * dom / w == k2 && i < j))
	while (t > 0 && !TURN(t - 1))
		t--;
	while (TURN(t))
		t++;
#undef TURN
	return t > 1 ? t : 1;
}

/*
 * t tasks of tenant i on the first server of class ci (the earliest): it
 * leaves the class for the class of what it has left. One task is Best-Fit's
 * step; more, a run's share of that server.
 */
static int move_server(const struct drfh_problem *p, struct disc *d, struct classes *cs,
		       const uint32_t *by_size, const bool *placing, size_t ci, uint32_t i,
		       double t)
{
	double rem[DRF_NRES];
	uint32_t s = sheap_pop(&cs->c[ci].servers);
	long nc;

	memcpy(rem, cs->c[ci].rem, sizeof(rem));
	take_tasks(rem, p->demands[i].shape, t, d->pool);
	if (cs->c[ci].servers.n == 0)
		class_release(cs, ci);
	nc = class_of(cs, rem);
	if (nc < 0)
		return (int)nc;
	if (!cs->c[nc].checked) {
		cs->c[nc].checked = true;
		cs->c[nc].dead = !fits_anyone(p, d, by_size, placing, rem);
	}
	if (class_add_server(cs, (size_t)nc, s) < 0 || place_add(&d->pl, i, s, t) < 0)
		return -ENOMEM;
	return 0;
}

/* A class a run may use: its H for the tenant's task, R, the tasks each server fits. */
struct runcls {
	uint32_t ci, cnt;
	double h0, r, f;
	double take;                /* per server */
	double take_rem[DRF_NRES];  /* what each then has left */
	size_t first;               /* its servers' place in the bulk's list */
};

/* Tasks a server of class c places of a run under H threshold th: l < F with H_0 R / (R - l U) < th. */
static double below(const struct runcls *c, double th, double u)
{
	double n;

	if (c->h0 == 0)
		return th > 0 ? c->f : 0;
	if (!(th > c->h0))
		return 0;
	n = ceil((c->r - c->h0 * c->r / th) / u);
	return n < 0 ? 0 : fmin(n, c->f);
}

/* A server at H 0 and its class, sorted by server. */
struct zserver {
	uint32_t server, ci;
};

static int cmp_zserver(const void *a, const void *b)
{
	uint32_t x = ((const struct zserver *)a)->server, y = ((const struct zserver *)b)->server;

	return x < y ? -1 : x > y;
}

/*
 * The bulk of a run of tenant i of k tasks (direction a, |u|_1 = u): 0 and
 * what it placed in *ret (0: nothing safely, the caller steps), or -ENOMEM,
 * -E2BIG. Every server's H for the tenant rises with each task it takes
 * (H_l = H_0 R / (R - l U): the remaining direction moves straight away from
 * a), so the k tasks one at a time would take, on each server, the tasks whose
 * H lies under the k-th least of all. Servers at H 0 (their remaining
 * capacity points the task's way: it stays 0) go first, in server order, each
 * until full, as the ties of one at a time do. The others: the threshold by
 * bisection, and each server takes its tasks under it but one (the search
 * one task at a time decides the last ones, with its ties).
 */
static int bulk_best_fit(const struct drfh_problem *p, struct disc *d, struct classes *cs,
			 const uint32_t *by_size, const bool *placing, uint32_t i, double k,
			 const double a[DRF_NRES], double u, struct drfh_result *out, double *ret)
{
	const double *shape = p->demands[i].shape;
	struct runcls *rc = malloc((cs->nlive + 1) * sizeof(*rc));
	struct zserver *zs = NULL;
	uint32_t *srv = NULL;
	size_t nrc = 0, nz = 0;
	double zero = 0, rest = 0, placed = 0;
	int err = 0;

	*ret = 0;
	if (!rc)
		return -ENOMEM;
	for (uint32_t b = 0; b < cs->nb; b++)
		for (uint32_t x = 0; x < cs->b[b].n; x++) {
			const struct cls *c = &cs->c[cs->b[b].v[x]];
			struct runcls *e = &rc[nrc];

			out->work++;
			if (!fits(c->rem, shape, cs->pool, cs->res, cs->m))
				continue;
			e->ci = cs->b[b].v[x];
			e->cnt = c->servers.n;
			e->f = fit_count(c->rem, shape, cs->pool, cs->res, cs->m);
			e->h0 = 0;
			e->r = 0;
			e->take = 0;
			if (isinf(e->f) && isinf(k)) {
				err = -E2BIG; /* a task under FIT_EPS of the pool, and no count */
				goto out;
			}
			for (int j = 0; j < cs->m; j++) {
				e->h0 += fabs(a[cs->res[j]] - c->dir[cs->res[j]]);
				e->r += c->rem[cs->res[j]] / cs->pool[cs->res[j]];
			}
			if (e->h0 == 0) {
				zero += e->f * e->cnt;
				nz += e->cnt;
			} else {
				rest += e->f * e->cnt;
			}
			nrc++;
		}
	if (zero >= k) {
		/* The servers at H 0, in order, each until full, until k. */
		zs = malloc((nz + 1) * sizeof(*zs));
		if (!zs) {
			err = -ENOMEM;
			goto out;
		}
		nz = 0;
		for (size_t c = 0; c < nrc; c++)
			for (uint32_t x = 0; rc[c].h0 == 0 && x < rc[c].cnt; x++)
				zs[nz++] = (struct zserver){ .server = cs->c[rc[c].ci].servers.h[x],
							     .ci = rc[c].ci };
		qsort(zs, nz, sizeof(*zs), cmp_zserver);
		/*
		 * Each is its class's first server when its turn comes: a server
		 * filled fits the task no more, so it joins none of these classes
		 * (only the last, partly filled, may).
		 */
		for (size_t z = 0; z < nz && placed < k; z++) {
			double t = fmin(k - placed, fit_count(cs->c[zs[z].ci].rem, shape, cs->pool,
							      cs->res, cs->m));

			if (!(out->rounds + placed + t <= DRF_DISCRETE_MAX_TASKS)) {
				err = -E2BIG;
				goto out;
			}
			out->work++;
			err = move_server(p, d, cs, by_size, placing, zs[z].ci, i, t);
			if (err < 0)
				goto out;
			placed += t;
		}
		*ret = placed;
		goto out;
	}
	/* Every server at H 0 full; the others under the threshold, but one each. */
	{
		double kk = k - zero, lo = 0, hi = 2.5, th;

		if (rest <= kk) {
			lo = hi;
		} else {
			for (int it = 0; it < 64; it++) {
				double mid = (lo + hi) / 2, n = 0;

				for (size_t c = 0; c < nrc; c++)
					if (rc[c].h0 > 0)
						n += below(&rc[c], mid, u) * rc[c].cnt;
				out->work += nrc;
				if (n <= kk)
					lo = mid;
				else
					hi = mid;
				if (n == kk || hi - lo <= 1e-15 * hi)
					break; /* the run's count exactly, or as close as doubles go */
			}
		}
		th = lo * (1 - 1e-9) - 4 * H_EPS;
		for (size_t c = 0; c < nrc; c++) {
			rc[c].take = rc[c].h0 == 0 ? rc[c].f : fmax(0, below(&rc[c], th, u) - 1);
			placed += rc[c].take * rc[c].cnt;
		}
	}
	if (!(placed > 0))
		goto out;
	if (!(out->rounds + placed <= DRF_DISCRETE_MAX_TASKS)) {
		err = -E2BIG;
		goto out;
	}
	/*
	 * All the classes' servers leave first, then go to their new classes: a
	 * new one may be a class of the run not yet moved.
	 */
	srv = malloc((d->nservers + 1) * sizeof(*srv));
	if (!srv) {
		err = -ENOMEM;
		goto out;
	}
	{
		size_t at = 0;

		for (size_t c = 0; c < nrc; c++) {
			struct cls *cl = &cs->c[rc[c].ci];
			double rem[DRF_NRES];

			if (!(rc[c].take > 0))
				continue;
			memcpy(rem, cl->rem, sizeof(rem));
			take_tasks(rem, shape, rc[c].take, d->pool);
			memcpy(rc[c].take_rem, rem, sizeof(rem));
			rc[c].first = at;
			while (cl->servers.n)
				srv[at++] = sheap_pop(&cl->servers);
			class_release(cs, rc[c].ci);
		}
		for (size_t c = 0; c < nrc && err == 0; c++) {
			long nc;

			if (!(rc[c].take > 0))
				continue;
			nc = class_of(cs, rc[c].take_rem);
			if (nc < 0) {
				err = (int)nc;
				break;
			}
			if (!cs->c[nc].checked) {
				cs->c[nc].checked = true;
				cs->c[nc].dead = !fits_anyone(p, d, by_size, placing, rc[c].take_rem);
			}
			for (uint32_t x = 0; x < rc[c].cnt && err == 0; x++) {
				uint32_t s = srv[rc[c].first + x];

				out->work++;
				if (class_add_server(cs, (size_t)nc, s) < 0 ||
				    place_add(&d->pl, i, s, rc[c].take) < 0)
					err = -ENOMEM;
			}
		}
	}
	if (err == 0)
		*ret = placed;
out:
	free(rc);
	free(zs);
	free(srv);
	return err;
}

/* Below this many tasks left in a run, or twice the live classes, a run goes one task at a time. */
#define RUN_BULK_MIN 16

/*
 * Tenant i's run of k tasks (k may be INFINITY) by Best-Fit, as one task at a
 * time: 0 and the tasks placed in *ret (fewer than k: its task fits nowhere
 * now, and never will), or an error.
 */
static int run_best_fit(const struct drfh_problem *p, struct disc *d, struct classes *cs,
			const uint32_t *by_size, const bool *placing, uint32_t i, double k,
			struct drfh_result *out, double *ret)
{
	const struct drf_demand *dm = &p->demands[i];
	const double *ui = &d->u[(size_t)i * DRF_NRES];
	double a[DRF_NRES] = { 0 }, sum = 0, placed = 0;
	bool bulk = true;
	int err = 0;

	for (int k2 = 0; k2 < d->m; k2++)
		sum += ui[d->res[k2]];
	for (int k2 = 0; k2 < d->m; k2++)
		a[d->res[k2]] = ui[d->res[k2]] / sum;
	while (placed < k && err == 0) {
		size_t best;

		if (bulk && k - placed >= RUN_BULK_MIN && k - placed > 2.0 * (double)cs->nlive) {
			double got;

			err = bulk_best_fit(p, d, cs, by_size, placing, i, k - placed, a, sum, out,
					    &got);
			placed += got;
			/* nothing safe in bulk: what is left is about one task per server */
			bulk = got > 0;
			continue;
		}
		out->work++;
		best = best_class(cs, dm->shape, a);
		if (best == SIZE_MAX)
			break; /* fits nowhere */
		if (out->rounds + placed >= DRF_DISCRETE_MAX_TASKS) {
			err = -E2BIG;
			break;
		}
		err = move_server(p, d, cs, by_size, placing, best, i, 1);
		placed += 1;
	}
	*ret = placed;
	return err;
}

/*
 * The turn's run: what the tenant places one at a time before another's turn,
 * at most what it has left; past DRFH_EXACT_TURNS turns, at least
 * 1/DRFH_RUN_FRACTION of what it holds (drfh.h).
 */
static double turn_count(const struct drfh_problem *p, const struct disc *d,
			 const struct drfh_result *out, uint32_t i, uint64_t turns)
{
	double units = out->tenants[i].units, k = run_count(d, p, units, i);

	if (turns > DRFH_EXACT_TURNS)
		k = fmax(k, ceil(units / DRFH_RUN_FRACTION));
	return fmin(k, p->demands[i].max_units - units);
}

static int place_best_fit(const struct drfh_problem *p, struct disc *d, struct drfh_result *out)
{
	struct classes cs = { .pool = d->pool, .res = d->res, .m = d->m, .free = UINT32_MAX };
	uint32_t *by_size = malloc((p->n + 1) * sizeof(*by_size)), server = 0;
	bool *placing = calloc(p->n + 1, sizeof(*placing));
	uint64_t turns = 0;
	int err = 0;

	if (!by_size || !placing) {
		err = -ENOMEM;
		goto out;
	}
	err = classes_init(&cs, d->nservers);
	if (err < 0)
		goto out;
	for (size_t i = 0; i < p->n; i++) {
		by_size[i] = (uint32_t)i;
		placing[i] = d->dom[i] > 0;
	}
	qsort_r(by_size, p->n, sizeof(*by_size), cmp_by_key, d->dom);
	for (; server < d->nservers && err == 0; server++) {
		double rem[DRF_NRES] = { 0 };
		long ci;

		for (int k = 0; k < d->m; k++)
			rem[d->res[k]] = d->rem[server * d->m + k];
		ci = class_of(&cs, rem);
		if (ci < 0) {
			err = (int)ci;
			break;
		}
		if (!cs.c[ci].checked) {
			cs.c[ci].checked = true;
			cs.c[ci].dead = !fits_anyone(p, d, by_size, placing, rem);
		}
		err = class_add_server(&cs, (size_t)ci, server);
	}
	while (err == 0 && d->q.n > 0) {
		uint32_t i = d->q.h[0];
		double k, placed;

		out->work++;
		if (out->tenants[i].units >= p->demands[i].max_units) {
			placing[i] = false;
			theap_pop(&d->q);
			continue;
		}
		k = turn_count(p, d, out, i, ++turns);
		err = run_best_fit(p, d, &cs, by_size, placing, i, k, out, &placed);
		if (err < 0)
			break;
		out->tenants[i].units += placed;
		out->rounds += (uint64_t)placed;
		d->key[i] = out->tenants[i].units * d->dom[i] / p->demands[i].weight;
		if (placed < k) {
			placing[i] = false; /* fits nowhere: it stops */
			theap_pop(&d->q);
			continue;
		}
		theap_down(&d->q, 0);
	}
out:
	classes_free(&cs);
	free(by_size);
	free(placing);
	return err;
}

/*
 * First-Fit: the servers' remaining capacities in a max tree; the first server
 * that fits is its first leaf that holds the task. A run fills the first server
 * as far as it goes (as its tasks one at a time would), then the next.
 */
static int place_first_fit(const struct drfh_problem *p, struct disc *d, struct drfh_result *out)
{
	struct maxtree t;
	size_t leaves = 1;
	uint64_t turns = 0;
	int err = 0;

	while (leaves < d->nservers)
		leaves *= 2;
	if (maxtree_init(&t, leaves, d->m) < 0)
		return -ENOMEM;
	for (size_t server = 0; server < d->nservers; server++)
		memcpy(&t.mx[(leaves + server) * d->m], &d->rem[server * d->m],
		       (size_t)d->m * sizeof(*t.mx));
	maxtree_build(&t);
	while (d->q.n > 0 && err == 0) {
		uint32_t i = d->q.h[0];
		const struct drf_demand *dm = &p->demands[i];
		double need[DRF_NRES], k, placed = 0;

		out->work++;
		if (out->tenants[i].units >= dm->max_units) {
			theap_pop(&d->q);
			continue;
		}
		k = turn_count(p, d, out, i, ++turns);
		for (int j = 0; j < d->m; j++)
			need[j] = dm->shape[d->res[j]] > 0
					  ? dm->shape[d->res[j]] - FIT_EPS * d->pool[d->res[j]]
					  : -INFINITY;
		while (placed < k) {
			double v[DRF_NRES] = { 0 }, n;
			long s = maxtree_next(&t, 0, need);

			out->work++;
			if (s < 0)
				break;
			for (int j = 0; j < d->m; j++)
				v[d->res[j]] = t.mx[(leaves + (size_t)s) * d->m + j];
			n = fmin(k - placed, fit_count(v, dm->shape, d->pool, d->res, d->m));
			if (!(out->rounds + placed + n <= DRF_DISCRETE_MAX_TASKS)) {
				err = -E2BIG;
				break;
			}
			take_tasks(v, dm->shape, n, d->pool);
			{
				double leaf[DRF_NRES];

				for (int j = 0; j < d->m; j++)
					leaf[j] = v[d->res[j]];
				maxtree_set(&t, (size_t)s, leaf);
			}
			if (place_add(&d->pl, i, (uint32_t)s, n) < 0) {
				err = -ENOMEM;
				break;
			}
			placed += n;
		}
		out->tenants[i].units += placed;
		out->rounds += (uint64_t)placed;
		d->key[i] = out->tenants[i].units * d->dom[i] / dm->weight;
		if (placed < k)
			theap_pop(&d->q);
		else
			theap_down(&d->q, 0);
	}
	free(t.mx);
	return err;
}

int drfh_place_from(const struct drfh_problem *p, enum drfh_fit fit, const struct drfh_place *prev,
		    size_t nprev, struct drfh_result *out)
{
	struct disc d;
	int err;

	err = disc_init(p, &d, out);
	if (err == 0)
		err = keep_prev(p, &d, out, prev, nprev);
	if (err == 0)
		err = fit == DRFH_FIRST_FIT ? place_first_fit(p, &d, out) : place_best_fit(p, &d, out);
	return disc_finish(p, &d, out, err);
}

int drfh_place(const struct drfh_problem *p, enum drfh_fit fit, struct drfh_result *out)
{
	return drfh_place_from(p, fit, NULL, 0, out);
}

/* ---- converging ---- */

static int cmp_place_tw(const void *a, const void *b)
{
	const struct drfh_place *x = a, *y = b;

	if (x->tenant != y->tenant)
		return x->tenant < y->tenant ? -1 : 1;
	return x->where < y->where ? -1 : x->where > y->where;
}

int drfh_place_toward(const struct drfh_problem *p, const struct drfh_place *prev, size_t nprev,
		      const bool *pinned, struct drfh_result *ret)
{
	struct drfh_place *keep = malloc((nprev + 1) * sizeof(*keep));
	struct drfh_result scratch;
	double *left = NULL;
	size_t nkeep = 0;
	int err;

	size_t ns = 0;

	if (!keep)
		return -ENOMEM;
	for (size_t s = 0; s < p->nspecs; s++)
		ns += p->specs[s].count;
	for (size_t k = 0; k < nprev; k++) {
		if (prev[k].tenant >= p->n || prev[k].where >= ns || !(prev[k].tasks >= 0)) {
			free(keep);
			return -EINVAL;
		}
		if (pinned && pinned[prev[k].where])
			keep[nkeep++] = prev[k];
	}
	qsort(keep, nkeep, sizeof(*keep), cmp_place_tw);
	/* From scratch (the pinned servers' tasks where they are): the fair counts. */
	err = drfh_place_from(p, DRFH_BEST_FIT, keep, nkeep, &scratch);
	if (err < 0) {
		free(keep);
		return err;
	}
	left = malloc((p->n + 1) * sizeof(*left));
	if (!left) {
		drfh_result_free(&scratch);
		free(keep);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n; i++)
		left[i] = scratch.tenants[i].units;
	for (size_t k = 0; k < nkeep; k++)
		left[keep[k].tenant] -= keep[k].tasks;
	/* The others, each tenant's up to its count, its first servers first. */
	for (size_t k = 0; k < nprev; k++) {
		const struct drfh_place *q = &prev[k];

		if (pinned && pinned[q->where])
			continue;
		keep[nkeep] = *q;
		keep[nkeep].tasks = fmax(0, fmin(q->tasks, left[q->tenant]));
		left[q->tenant] -= keep[nkeep].tasks;
		nkeep += keep[nkeep].tasks > 0;
	}
	drfh_result_free(&scratch);
	free(left);
	if (err == 0) {
		qsort(keep, nkeep, sizeof(*keep), cmp_place_tw);
		err = drfh_place_from(p, DRFH_BEST_FIT, keep, nkeep, ret);
	}
	free(keep);
	return err;
}

int drfh_converge(const struct drfh_problem *p, const struct drfh_place *prev, size_t nprev,
		  const struct drfh_result *target, double max_moves, struct drfh_result *ret,
		  double *ret_moves, bool *ret_more)
{
	struct drfh_result out;
	struct drfh_place *pv = NULL, *mg = NULL;
	double pool[DRF_NRES], *cap = NULL, *left = NULL, *pending = NULL;
	double total_p = 0, total_t = 0, budget, moves = 0;
	size_t nservers, nm = 0, a = 0, b = 0;
	bool more = false;
	int err;

	err = validate(p, pool, &nservers);
	if (err < 0)
		return err;
	if (target->by_group || target->nservers != nservers || target->n != p->n)
		return -EINVAL;
	err = result_init(p, pool, nservers, &out);
	if (err < 0)
		return err;
	pv = malloc((nprev + 1) * sizeof(*pv));
	mg = malloc((nprev + target->nplaces + 1) * sizeof(*mg) * 2);
	cap = malloc((nservers + 1) * DRF_NRES * sizeof(*cap));
	left = malloc((p->n + 1) * sizeof(*left));
	pending = calloc(nservers + 1, sizeof(*pending));
	if (!pv || !mg || !cap || !left || !pending) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t s = 0, l = 0; s < p->nspecs; s++)
		for (size_t c = 0; c < p->specs[s].count; c++, l++)
			memcpy(&cap[l * DRF_NRES], p->specs[s].capacity, sizeof(p->specs[s].capacity));
	for (size_t i = 0; i < p->n; i++) {
		double u[DRF_NRES];
		int dr;

		left[i] = normalize(pool, &p->demands[i], u, &dr) > 0 ? p->demands[i].max_units : 0;
	}
	/*
	 * The placement in force, as much of it as can exist: no more of a tenant
	 * than its count, nor on a server than the server holds of it alone (a
	 * count from outside may be anything). What is past that is no task.
	 */
	if (nprev)
		memcpy(pv, prev, nprev * sizeof(*pv));
	qsort(pv, nprev, sizeof(*pv), cmp_place_tw);
	for (size_t k = 0; k < nprev; k++) {
		const double *sh;

		if (pv[k].tenant >= p->n || pv[k].where >= nservers || !(pv[k].tasks >= 0) ||
		    pv[k].tasks != floor(pv[k].tasks)) {
			err = -EINVAL;
			goto out;
		}
		sh = p->demands[pv[k].tenant].shape;
		pv[k].tasks = fmin(pv[k].tasks, left[pv[k].tenant]);
		for (int r = 0; r < DRF_NRES; r++)
			if (pool[r] > 0 && sh[r] > 0)
				pv[k].tasks = fmin(pv[k].tasks,
						   floor((cap[pv[k].where * DRF_NRES + r] +
							  FIT_EPS * pool[r]) / sh[r]));
		left[pv[k].tenant] -= pv[k].tasks;
		total_p += pv[k].tasks;
	}
	for (size_t k = 0; k < target->nplaces; k++)
		total_t += target->places[k].tasks;
	budget = max_moves > 0 ? max_moves
			       : fmax(DRFH_CONVERGE_MIN, ceil(fmax(total_p, total_t) /
							      DRFH_CONVERGE_PART));
	/* Both lists by tenant, then server: merged, a (tenant, server) an entry. */
	while (a < nprev || b < target->nplaces) {
		int c = a == nprev		 ? 1
			: b == target->nplaces ? -1
					       : cmp_place_tw(&pv[a], &target->places[b]);
		struct drfh_place *e = &mg[nm];

		if (c < 0) {
			*e = pv[a++];
			e[1].tasks = 0;
		} else if (c > 0) {
			*e = target->places[b++];
			e[1].tasks = e->tasks;
			e->tasks = 0;
		} else {
			*e = pv[a++];
			e[1].tasks = target->places[b++].tasks;
		}
		if (e->tasks > 0 || e[1].tasks > 0)
			nm += 2; /* mg[2j]: in force; mg[2j + 1].tasks: the target's */
	}
	/* Removals first, as far as the budget goes; what stays over is pending on its server. */
	for (size_t j = 0; j < nm; j += 2) {
		double over = mg[j].tasks - mg[j + 1].tasks, r;

		if (!(over > 0))
			continue;
		r = fmin(over, budget);
		mg[j].tasks -= r;
		budget -= r;
		moves += r;
		pending[mg[j].where] += over - r;
	}
	/*
	 * Then the target's tasks that are missing, on servers with nothing
	 * pending: tasks started, not moved (their room is free), so no budget.
	 */
	for (size_t j = 0; j < nm; j += 2) {
		double under = mg[j + 1].tasks - mg[j].tasks;

		if (under > 0 && !(pending[mg[j].where] > 0))
			mg[j].tasks += under;
	}
	out.places = calloc(nm / 2 + 1, sizeof(*out.places));
	if (!out.places) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t j = 0; j < nm; j += 2) {
		more = more || mg[j].tasks != mg[j + 1].tasks;
		if (!(mg[j].tasks > 0))
			continue;
		out.places[out.nplaces++] = mg[j];
		out.tenants[mg[j].tenant].units += mg[j].tasks;
	}
	for (size_t i = 0; i < p->n; i++) {
		double u[DRF_NRES];
		int dr;

		if (!(normalize(pool, &p->demands[i], u, &dr) > 0))
			out.tenants[i].units = p->demands[i].max_units;
	}
	out.rounds = (uint64_t)moves;
	finish(p, &out);
out:
	free(pv);
	free(mg);
	free(cap);
	free(left);
	free(pending);
	if (err < 0) {
		drfh_result_free(&out);
		return err;
	}
	*ret = out;
	if (ret_moves)
		*ret_moves = moves;
	if (ret_more)
		*ret_more = more;
	return 0;
}

int drfh_per_server_drf(const struct drfh_problem *p, struct drfh_result *out)
{
	struct drf_demand *dem = NULL;
	uint32_t *map = NULL, server = 0;
	struct disc d;
	int err;

	err = disc_init(p, &d, out);
	if (err == 0) {
		dem = malloc((p->n + 1) * sizeof(*dem));
		map = malloc((p->n + 1) * sizeof(*map));
		if (!dem || !map)
			err = -ENOMEM;
	}
	for (size_t s = 0; s < p->nspecs && err == 0; s++) {
		const double *cap = p->specs[s].capacity;

		for (size_t k = 0; k < p->specs[s].count && err == 0; k++, server++) {
			struct drf_problem sp = { .demands = dem };
			struct drf_result rr;
			bool any = false;

			memcpy(sp.capacity, cap, sizeof(sp.capacity));
			for (int r = 0; r < DRF_NRES; r++)
				any = any || cap[r] > 0;
			if (!any)
				continue;
			for (size_t i = 0; i < p->n; i++) {
				const struct drf_demand *dm = &p->demands[i];
				bool can = d.dom[i] > 0 && out->tenants[i].units < dm->max_units;

				/* A task needing what this server lacks cannot run here. */
				for (int r = 0; r < DRF_NRES && can; r++)
					can = !(d.pool[r] > 0 && dm->shape[r] > 0 && !(cap[r] > 0));
				if (!can)
					continue;
				dem[sp.n] = *dm;
				for (int r = 0; r < DRF_NRES; r++)
					if (!(d.pool[r] > 0))
						dem[sp.n].shape[r] = 0;
				dem[sp.n].max_units = dm->max_units - out->tenants[i].units;
				map[sp.n++] = (uint32_t)i;
			}
			if (sp.n == 0)
				continue;
			err = drf_allocate_discrete(&sp, &rr);
			if (err < 0)
				break;
			for (size_t j = 0; j < sp.n && err == 0; j++) {
				double t = rr.shares[j].units;

				if (!(t > 0))
					continue;
				out->tenants[map[j]].units += t;
				out->rounds += (uint64_t)t;
				err = place_add(&d.pl, map[j], server, t);
			}
			drf_result_free(&rr);
		}
	}
	free(dem);
	free(map);
	return disc_finish(p, &d, out, err);
}

int drfh_slots(const struct drfh_problem *p, const double slot[DRF_NRES], struct drfh_result *out)
{
	struct maxtree st = { 0 }; /* free slots per server */
	double *need = NULL, *held = NULL;
	uint32_t server = 0;
	struct disc d;
	int err;

	err = disc_init(p, &d, out);
	for (int r = 0; r < DRF_NRES && err == 0; r++)
		if (!(slot[r] >= 0) || !isfinite(slot[r]) || (d.pool[r] > 0 && !(slot[r] > 0)))
			err = -EINVAL; /* a slot must say how much of each resource it holds */
	if (err == 0) {
		size_t leaves = 1;

		while (leaves < d.nservers)
			leaves *= 2;
		need = calloc(p->n + 1, sizeof(*need));
		held = calloc(p->n + 1, sizeof(*held));
		if (maxtree_init(&st, leaves, 1) < 0 || !need || !held)
			err = -ENOMEM;
	}
	for (size_t s = 0; s < p->nspecs && err == 0; s++) {
		double n = INFINITY;

		for (int k = 0; k < d.m; k++)
			n = fmin(n, floor(p->specs[s].capacity[d.res[k]] / slot[d.res[k]] + 1e-9));
		for (size_t k = 0; k < p->specs[s].count; k++)
			st.mx[st.n + server++] = n;
	}
	if (err == 0)
		maxtree_build(&st);
	for (size_t i = 0; i < p->n && err == 0; i++) {
		double k = 0;

		for (int j = 0; j < d.m; j++)
			k = fmax(k, ceil(p->demands[i].shape[d.res[j]] / slot[d.res[j]] - 1e-9));
		need[i] = fmax(1, k);
	}
	while (err == 0 && d.q.n > 0) {
		uint32_t i = d.q.h[0];
		double left;
		long s;

		if (out->tenants[i].units >= p->demands[i].max_units) {
			theap_pop(&d.q);
			continue;
		}
		s = maxtree_next(&st, 0, &need[i]);
		if (s < 0) {
			theap_pop(&d.q);
			continue;
		}
		if (out->rounds >= DRF_DISCRETE_MAX_TASKS) {
			err = -E2BIG;
			break;
		}
		left = st.mx[st.n + (size_t)s] - need[i];
		maxtree_set(&st, (size_t)s, &left);
		err = place_add(&d.pl, i, (uint32_t)s, 1);
		out->tenants[i].units += 1;
		out->rounds++;
		held[i] += need[i];
		d.key[i] = held[i] / p->demands[i].weight;
		theap_down(&d.q, 0);
	}
	free(st.mx);
	free(need);
	free(held);
	return disc_finish(p, &d, out, err);
}
