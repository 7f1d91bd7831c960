// SPDX-License-Identifier: MIT
/*
 * DRFH (agent/core/drfh.c) against exact answers: the seed's example worked by
 * hand, and on seeded random fleets a reference written here with GLPK that
 * shares nothing with the engine: one variable per server (not per group of
 * identical ones), tasks (not shares) as the unknowns, and a tenant frozen only
 * when an LP of its own says it cannot grow (not by duals). Then the properties
 * the papers prove for the divisible form (Pareto efficiency, envy-freeness,
 * the weak sharing incentive), one server against alloc.c's DRF, and the
 * placements' feasibility. DRFH_SEED=N replays from another base seed.
 */
#include <errno.h>
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drfh.h"
#include "testlib.h"

static uint64_t base_seed = 20261126;
static bool debug;

#define MAXS 6
#define MAXN 32 /* gen() draws up to 7 tenants; gen_capped() more */

struct fleet {
	uint64_t seed;
	size_t nspecs, n;
	struct drfh_server_spec specs[MAXS];
	struct drf_demand dem[MAXN];
	int m; /* resources used: cpu, memory, then io-read-bps */
};

static struct drfh_problem prob(const struct fleet *f)
{
	return (struct drfh_problem){ .nspecs = f->nspecs, .specs = f->specs, .n = f->n,
				      .demands = f->dem };
}

/* A random fleet: servers of random shapes (some missing a resource), tenants of random tasks. */
static void gen(struct fleet *f, uint64_t seed, bool equal_weights, bool unlimited)
{
	struct rng g = { seed };

	memset(f, 0, sizeof(*f));
	f->seed = seed;
	f->m = rng_int(&g, 2, 3);
	f->nspecs = (size_t)rng_int(&g, 1, MAXS);
	f->n = (size_t)rng_int(&g, 1, 7);
	for (size_t s = 0; s < f->nspecs; s++) {
		f->specs[s].count = (size_t)rng_int(&g, 1, 3);
		/* a server may lack a resource, but not the first: every resource has a pool */
		for (int r = 0; r < f->m; r++)
			f->specs[s].capacity[r] =
				s > 0 && rng_int(&g, 0, 9) == 0 ? 0 : rng_range(&g, 1, 16);
	}
	for (size_t i = 0; i < f->n; i++) {
		struct drf_demand *d = &f->dem[i];

		d->weight = equal_weights ? 1 : rng_int(&g, 1, 4);
		for (int r = 0; r < f->m; r++)
			d->shape[r] = rng_int(&g, 0, 5) == 0 ? 0 : rng_range(&g, 0.05, 3);
		if (d->shape[0] == 0 && d->shape[1] == 0)
			d->shape[0] = 0.5;
		d->max_units = unlimited || rng_int(&g, 0, 2) == 0 ? INFINITY : rng_int(&g, 1, 20);
	}
}

static double dom_of(const double pool[DRF_NRES], const struct drf_demand *d)
{
	double best = 0;

	for (int r = 0; r < DRF_NRES; r++)
		if (pool[r] > 0)
			best = fmax(best, d->shape[r] / pool[r]);
	return best;
}

/*
 * The reference LP over servers one by one: x_il tasks of i on server l (a
 * column only where the server has everything the task needs). level: the row
 * bounds G_i >= lo_i (lo_i = w_i t for growing tenants, with t a column), cap.
 */
struct ref {
	glp_prob *lp;
	int ns, tcol;
	int *xcol; /* i * ns + l */
};

static void ref_build(const struct fleet *f, struct ref *R, const double *fixed, const bool *grow,
		      int obj_tenant)
{
	double pool[DRF_NRES];
	struct drfh_problem p = prob(f);
	int ind[64], ns = 0, col = 0, row;
	double val[64];

	drfh_pool(&p, pool);
	for (size_t s = 0; s < f->nspecs; s++)
		ns += (int)f->specs[s].count;
	R->ns = ns;
	R->lp = glp_create_prob();
	R->xcol = calloc((size_t)ns * f->n, sizeof(int));
	glp_set_obj_dir(R->lp, GLP_MAX);
	/* rows: capacity (l, r) for r < m; then per tenant its G row, then its cap row */
	glp_add_rows(R->lp, ns * f->m + 2 * (int)f->n);
	row = 1;
	for (size_t s = 0, l = 0; s < f->nspecs; s++)
		for (size_t k = 0; k < f->specs[s].count; k++, l++)
			for (int r = 0; r < f->m; r++)
				glp_set_row_bnds(R->lp, row++, GLP_UP, 0, f->specs[s].capacity[r]);
	for (size_t i = 0; i < f->n; i++) {
		int grow_row = ns * f->m + 2 * (int)i + 1, cap_row = grow_row + 1;

		if (fixed && !grow[i])
			glp_set_row_bnds(R->lp, grow_row, GLP_LO, fixed[i] - 1e-9, 0);
		else
			glp_set_row_bnds(R->lp, grow_row, GLP_LO, 0, 0);
		if (isinf(f->dem[i].max_units))
			glp_set_row_bnds(R->lp, cap_row, GLP_FR, 0, 0);
		else
			glp_set_row_bnds(R->lp, cap_row, GLP_UP, 0, f->dem[i].max_units);
	}
	for (size_t i = 0; i < f->n; i++)
		for (size_t s = 0, l = 0; s < f->nspecs; s++)
			for (size_t k = 0; k < f->specs[s].count; k++, l++) {
				bool ok = true;

				for (int r = 0; r < f->m; r++)
					ok = ok && !(f->dem[i].shape[r] > 0 &&
						     !(f->specs[s].capacity[r] > 0));
				if (ok)
					R->xcol[i * (size_t)ns + l] = ++col;
			}
	glp_add_cols(R->lp, col + 1);
	R->tcol = col + 1;
	for (size_t i = 0; i < f->n; i++) {
		double d = dom_of(pool, &f->dem[i]);

		for (int l = 0; l < ns; l++) {
			int c = R->xcol[i * (size_t)ns + (size_t)l], n = 0;

			if (!c)
				continue;
			for (int r = 0; r < f->m; r++)
				if (f->dem[i].shape[r] > 0) {
					ind[++n] = l * f->m + r + 1;
					val[n] = f->dem[i].shape[r];
				}
			ind[++n] = ns * f->m + 2 * (int)i + 1; /* G row: d_i x */
			val[n] = d;
			ind[++n] = ns * f->m + 2 * (int)i + 2; /* cap row: x */
			val[n] = 1;
			glp_set_mat_col(R->lp, c, n, ind, val);
			glp_set_col_bnds(R->lp, c, GLP_LO, 0, 0);
			if ((int)i == obj_tenant)
				glp_set_obj_coef(R->lp, c, d);
		}
	}
	/* t: in the G rows of growing tenants with -w_i (G_i - w_i t >= 0) */
	{
		int n = 0;

		for (size_t i = 0; i < f->n; i++)
			if (!fixed || grow[i]) {
				ind[++n] = ns * f->m + 2 * (int)i + 1;
				val[n] = -f->dem[i].weight;
			}
		glp_set_mat_col(R->lp, R->tcol, n, ind, val);
		glp_set_col_bnds(R->lp, R->tcol, GLP_LO, 0, 0);
		if (obj_tenant < 0)
			glp_set_obj_coef(R->lp, R->tcol, 1);
	}
}

/* The optimum, or -1 if the LP is infeasible. */
static double ref_try(struct ref *R)
{
	glp_smcp parm;

	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	assert_int_equal(glp_simplex(R->lp, &parm), 0);
	if (glp_get_status(R->lp) == GLP_NOFEAS)
		return -1;
	assert_int_equal(glp_get_status(R->lp), GLP_OPT);
	return glp_get_obj_val(R->lp);
}

static double ref_solve(struct ref *R)
{
	glp_smcp parm;

	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	assert_int_equal(glp_simplex(R->lp, &parm), 0);
	assert_int_equal(glp_get_status(R->lp), GLP_OPT);
	return glp_get_obj_val(R->lp);
}

static void ref_free(struct ref *R)
{
	glp_delete_prob(R->lp);
	free(R->xcol);
}

/* The weighted max-min G, by the book: raise t, then test each growing tenant alone. */
static void ref_maxmin(const struct fleet *f, double *G)
{
	bool grow[MAXN];
	size_t left = 0;
	double pool[DRF_NRES];
	struct drfh_problem p = prob(f);

	drfh_pool(&p, pool);
	for (size_t i = 0; i < f->n; i++) {
		grow[i] = dom_of(pool, &f->dem[i]) > 0;
		G[i] = 0;
		left += grow[i];
	}
	while (left > 0) {
		struct ref R;
		double t;
		size_t froze = 0;

		ref_build(f, &R, G, grow, -1);
		t = ref_solve(&R);
		ref_free(&R);
		for (size_t i = 0; i < f->n; i++) {
			double best;

			if (!grow[i])
				continue;
			/*
			 * max G_i with every growing tenant at w t, the frozen at theirs;
			 * t a little lower, and lower again if that is infeasible: the
			 * solver's t may pass the true one by up to its tolerance (1e-7
			 * relative), and so may the frozen G it was taken from
			 */
			for (double cut = 1e-9;; cut *= 10) {
				ref_build(f, &R, G, grow, (int)i);
				glp_set_col_bnds(R.lp, R.tcol, GLP_FX, t * (1 - cut), t * (1 - cut));
				best = ref_try(&R);
				ref_free(&R);
				if (best >= 0)
					break;
				assert_true(cut < 1e-7);
			}
			if (best <= f->dem[i].weight * t * (1 + 1e-7) + 1e-9) {
				/*
				 * Not above its count: the LP's t may pass the count's level
				 * by the solver's tolerance, and the next LPs hold G_i at
				 * least there.
				 */
				G[i] = fmin(f->dem[i].weight * t,
					    dom_of(pool, &f->dem[i]) * f->dem[i].max_units);
				grow[i] = false;
				froze++;
			}
		}
		assert_true(froze > 0);
		left -= froze;
	}
}

/* The most G_i can reach with every other tenant kept at least at G*_j. */
static double ref_best_alone(const struct fleet *f, const double *G, size_t i)
{
	bool grow[MAXN] = { 0 };
	double fixed[MAXN], best;
	struct ref R;

	for (size_t j = 0; j < f->n; j++)
		fixed[j] = j == i ? 0 : G[j];
	ref_build(f, &R, fixed, grow, (int)i);
	glp_set_col_bnds(R.lp, R.tcol, GLP_FX, 0, 0);
	best = ref_solve(&R);
	ref_free(&R);
	return best;
}

static void test_seed_example(void **state)
{
	/* Servers (1 CPU, 14 GB) and (8 CPU, 4 GB); tasks (1 CPU, 4 GB) and (3 CPU, 1 GB). */
	struct drfh_server_spec sv[2] = { { .capacity = { 1, 14 }, .count = 1 },
					  { .capacity = { 8, 4 }, .count = 1 } };
	struct drf_demand d[2] = { { .weight = 1, .shape = { 1, 4 }, .max_units = INFINITY },
				   { .weight = 1, .shape = { 3, 1 }, .max_units = INFINITY } };
	struct drfh_problem p = { .nspecs = 2, .specs = sv, .n = 2, .demands = d };
	struct drfh_result r;

	(void)state;
	assert_int_equal(drfh_allocate(&p, &r), 0);
	assert_close(r.tenants[0].gds, 8.0 / 21, 1e-7, "user 1's global dominant share");
	assert_close(r.tenants[1].gds, 8.0 / 21, 1e-7, "user 2's global dominant share");
	/* 8/21 of 18 GB is 48/7 GB: 12/7 tasks of user 1; 8/21 of 9 CPUs: 8/7 tasks of user 2 */
	assert_close(r.tenants[0].units, 12.0 / 7, 1e-7, "user 1's tasks");
	assert_close(r.tenants[1].units, 8.0 / 7, 1e-7, "user 2's tasks");
	assert_int_equal(r.tenants[0].dominant_res, DRF_RES_MEMORY);
	assert_int_equal(r.tenants[1].dominant_res, DRF_RES_CPU);
	drfh_result_free(&r);

	/*
	 * Whole tasks, Best-Fit, worked by hand: user 1's task goes to server 1
	 * (H 0.417 against 0.933); user 2's to server 2, leaving (5, 3); user 1's
	 * next fits nowhere (server 1 has no CPU left, server 2 3 GB): it stops;
	 * user 2 places one more, leaving (2, 2), and stops.
	 */
	assert_int_equal(drfh_place(&p, DRFH_BEST_FIT, &r), 0);
	assert_close(r.tenants[0].units, 1, 0, "user 1's whole tasks");
	assert_close(r.tenants[1].units, 2, 0, "user 2's whole tasks");
	assert_int_equal(r.nplaces, 2);
	assert_int_equal(r.places[0].tenant, 0);
	assert_int_equal(r.places[0].where, 0);
	assert_int_equal(r.places[1].tenant, 1);
	assert_int_equal(r.places[1].where, 1);
	assert_close(r.places[1].tasks, 2, 0, "user 2 on server 2");
	drfh_result_free(&r);

	/* First-Fit puts user 1's first task on server 1 too (it fits there first). */
	assert_int_equal(drfh_place(&p, DRFH_FIRST_FIT, &r), 0);
	assert_int_equal(r.places[0].where, 0);
	drfh_result_free(&r);
}

/* Best-Fit over a fleet where the shape decides: memory-heavy tasks go to memory-heavy servers. */
static void test_best_fit_matches_shapes(void **state)
{
	struct drfh_server_spec sv[2] = { { .capacity = { 16, 16 }, .count = 2 },   /* cpu-heavy */
					  { .capacity = { 4, 64 }, .count = 2 } };  /* memory */
	struct drf_demand d[2] = { { .weight = 1, .shape = { 1, 8 }, .max_units = 8 },
				   { .weight = 1, .shape = { 4, 2 }, .max_units = 8 } };
	struct drfh_problem p = { .nspecs = 2, .specs = sv, .n = 2, .demands = d };
	struct drfh_result bf, ff;

	(void)state;
	assert_int_equal(drfh_place(&p, DRFH_BEST_FIT, &bf), 0);
	assert_int_equal(drfh_place(&p, DRFH_FIRST_FIT, &ff), 0);
	for (size_t k = 0; k < bf.nplaces; k++)
		if (bf.places[k].tenant == 0)
			assert_true(bf.places[k].where >= 2); /* memory-heavy servers only */
	assert_close(bf.tenants[0].units, 8, 0, "Best-Fit places all of tenant 0");
	assert_close(bf.tenants[1].units, 8, 0, "and all of tenant 1");
	/* First-Fit fills the cpu servers with both, and runs out of room sooner. */
	assert_true(ff.tenants[0].units + ff.tenants[1].units <=
		    bf.tenants[0].units + bf.tenants[1].units);
	drfh_result_free(&bf);
	drfh_result_free(&ff);
}

static int nrounds(void)
{
	const char *e = getenv("DRFH_N");

	return e ? atoi(e) : 300;
}

/* The engine against the reference, and the properties, on random fleets. */
static void test_random_against_reference(void **state)
{
	int n = nrounds();

	(void)state;
	for (int k = 0; k < n; k++) {
		struct fleet f;
		struct drfh_problem p;
		struct drfh_result r;
		double G[MAXN];

		gen(&f, base_seed * 1000003 + (uint64_t)k, false, false);
		p = prob(&f);
		assert_int_equal(drfh_allocate(&p, &r), 0);
		ref_maxmin(&f, G);
		for (size_t i = 0; i < f.n; i++) {
			if (fabs(r.tenants[i].gds - G[i]) > 1e-6 * fmax(1, G[i])) {
				print_error("seed %llu: tenant %zu: G %.12g, the reference %.12g\n",
					    (unsigned long long)f.seed, i, r.tenants[i].gds, G[i]);
				fail();
			}
			/* Pareto: nobody gains without someone losing. */
			if (r.tenants[i].units < f.dem[i].max_units * (1 - 1e-9)) {
				double best = ref_best_alone(&f, G, i);

				if (best > G[i] + 1e-6) {
					print_error("seed %llu: tenant %zu could reach G %.12g > %.12g "
						    "with nobody worse off\n",
						    (unsigned long long)f.seed, i, best, G[i]);
					fail();
				}
			}
		}
		drfh_result_free(&r);
	}
}

/*
 * Many tenants, most with a few tasks and their own weights: rounds where many
 * counts are reached before the servers stop the level, and where they tie.
 */
static void gen_capped(struct fleet *f, uint64_t seed)
{
	struct rng g = { seed ^ 0x5bd1e995u };

	gen(f, seed, false, false);
	f->n = (size_t)rng_int(&g, 8, MAXN);
	for (size_t i = 0; i < f->n; i++) {
		struct drf_demand *d = &f->dem[i];

		memset(d, 0, sizeof(*d));
		d->weight = rng_int(&g, 1, 4);
		for (int r = 0; r < f->m; r++)
			d->shape[r] = rng_int(&g, 0, 5) == 0 ? 0 : rng_range(&g, 0.05, 1.5);
		if (d->shape[0] == 0 && d->shape[1] == 0)
			d->shape[0] = 0.5;
		/* counts in small integers: tenants of one weight and shape reach theirs together */
		d->max_units = rng_int(&g, 0, 6) == 0 ? INFINITY : rng_int(&g, 1, 8);
		if (i > 0 && rng_int(&g, 0, 4) == 0) {
			memcpy(d->shape, f->dem[i - 1].shape, sizeof(d->shape));
			d->weight = f->dem[i - 1].weight;
		}
	}
}

/* The search over how many counts a round passes (drfh.c), against the reference. */
static void test_capped_against_reference(void **state)
{
	int n = nrounds() / 5 + 1;

	(void)state;
	for (int k = 0; k < n; k++) {
		struct fleet f;
		struct drfh_problem p;
		struct drfh_result r;
		double G[MAXN];
		size_t capped = 0;

		gen_capped(&f, base_seed * 40503 + (uint64_t)k);
		p = prob(&f);
		assert_int_equal(drfh_allocate(&p, &r), 0);
		ref_maxmin(&f, G);
		for (size_t i = 0; i < f.n; i++) {
			capped += r.tenants[i].limited_by == DRF_LIMIT_DEMAND;
			if (fabs(r.tenants[i].gds - G[i]) > 1e-6 * fmax(1, G[i])) {
				print_error("seed %llu: tenant %zu: G %.12g, the reference %.12g\n",
					    (unsigned long long)f.seed, i, r.tenants[i].gds, G[i]);
				fail();
			}
		}
		if (debug)
			print_message("seed %llu: %zu tenants, %zu at their counts, %llu LPs\n",
				      (unsigned long long)f.seed, f.n, capped,
				      (unsigned long long)r.rounds);
		drfh_result_free(&r);
	}
}

/*
 * Tenants whose tasks point few ways: each a multiple (1-3) of one of three
 * shapes, of its own weight and count, so that the engine's one row per
 * direction holds tenants of every kind. Against the reference (a row per
 * tenant, a column per tenant and server), and the places: every group within
 * its capacity, every tenant's places adding up to its tasks.
 */
static void test_shared_directions_against_reference(void **state)
{
	int n = nrounds() / 5 + 1;

	(void)state;
	for (int k = 0; k < n; k++) {
		struct rng g = { base_seed * 7919 + (uint64_t)k };
		struct fleet f;
		struct drfh_problem p;
		struct drfh_result r;
		double G[MAXN], base[3][DRF_NRES] = { { 0 } };
		double used[MAXS][DRF_NRES] = { { 0 } }, tasks[MAXN] = { 0 };

		gen(&f, base_seed * 7919 + (uint64_t)k, false, false);
		f.n = (size_t)rng_int(&g, 6, MAXN);
		for (int b = 0; b < 3; b++)
			for (int res = 0; res < f.m; res++)
				base[b][res] = res > 0 && rng_int(&g, 0, 4) == 0 ? 0
										  : rng_range(&g, 0.05, 0.8);
		for (size_t i = 0; i < f.n; i++) {
			struct drf_demand *d = &f.dem[i];
			int b = rng_int(&g, 0, 2), mult = rng_int(&g, 1, 3);

			memset(d, 0, sizeof(*d));
			d->weight = rng_int(&g, 1, 4);
			for (int res = 0; res < f.m; res++)
				d->shape[res] = mult * base[b][res];
			d->max_units = rng_int(&g, 0, 3) == 0 ? INFINITY : rng_int(&g, 1, 12);
		}
		p = prob(&f);
		assert_int_equal(drfh_allocate(&p, &r), 0);
		ref_maxmin(&f, G);
		for (size_t i = 0; i < f.n; i++)
			if (fabs(r.tenants[i].gds - G[i]) > 1e-6 * fmax(1, G[i])) {
				print_error("seed %llu: tenant %zu: G %.12g, the reference %.12g\n",
					    (unsigned long long)f.seed, i, r.tenants[i].gds, G[i]);
				fail();
			}
		assert_true(r.by_group);
		for (size_t q = 0; q < r.nplaces; q++) {
			const struct drfh_place *pl = &r.places[q];

			assert_true(pl->where < r.ngroups && pl->tenant < f.n && pl->tasks > 0);
			if (q > 0)
				assert_true(r.places[q - 1].tenant < pl->tenant ||
					    (r.places[q - 1].tenant == pl->tenant &&
					     r.places[q - 1].where < pl->where));
			tasks[pl->tenant] += pl->tasks;
			for (int res = 0; res < f.m; res++)
				used[pl->where][res] += pl->tasks * f.dem[pl->tenant].shape[res];
		}
		for (size_t q = 0; q < r.ngroups; q++)
			for (int res = 0; res < f.m; res++)
				assert_le_tol(used[q][res],
					      r.groups[q].capacity[res] * (double)r.groups[q].count,
					      1e-7, 1e-9, "a group's use");
		for (size_t i = 0; i < f.n; i++)
			assert_close(tasks[i], r.tenants[i].units, 1e-7, "places add up");
		drfh_result_free(&r);
	}
}

/* Tasks tenant i could run with an allocation of (group g -> resource vector). */
static double tasks_from(const struct drfh_result *r, const struct fleet *f, size_t j, size_t i)
{
	double tasks = 0;

	for (size_t k = 0; k < r->nplaces; k++) {
		const struct drfh_place *pl = &r->places[k];
		double t = INFINITY;

		if (pl->tenant != j)
			continue;
		for (int res = 0; res < f->m; res++)
			if (f->dem[i].shape[res] > 0)
				t = fmin(t, pl->tasks * f->dem[j].shape[res] / f->dem[i].shape[res]);
		tasks += t;
	}
	return tasks;
}

static void test_envy_free_and_weak_sharing_incentive(void **state)
{
	int n = nrounds();

	(void)state;
	for (int k = 0; k < n; k++) {
		struct fleet f;
		struct drfh_problem p;
		struct drfh_result r;
		double pool[DRF_NRES], min_g = INFINITY, min_even = INFINITY, wsum = 0;

		gen(&f, base_seed * 7919 + (uint64_t)k, true, k % 2 == 0);
		p = prob(&f);
		drfh_pool(&p, pool);
		assert_int_equal(drfh_allocate(&p, &r), 0);
		/* Envy-free: no tenant short of its cap runs more tasks with another's allocation. */
		for (size_t i = 0; i < f.n; i++) {
			if (!(r.tenants[i].units < f.dem[i].max_units * (1 - 1e-9)))
				continue;
			for (size_t j = 0; j < f.n; j++) {
				double other = tasks_from(&r, &f, j, i);

				if (j != i && other > r.tenants[i].units * (1 + 1e-6) + 1e-9) {
					print_error("seed %llu: tenant %zu envies %zu: %.12g > %.12g "
						    "tasks\n", (unsigned long long)f.seed, i, j, other,
						    r.tenants[i].units);
					fail();
				}
			}
		}
		/*
		 * The weak sharing incentive: split every server evenly (by weight) and
		 * let each tenant run what fits in its part; the least-served tenant under
		 * DRFH does at least as well as the least-served there. (The strong form,
		 * every tenant as well as in its own part, does not hold for DRFH.)
		 */
		for (size_t i = 0; i < f.n; i++)
			wsum += f.dem[i].weight;
		for (size_t i = 0; i < f.n; i++) {
			double d = dom_of(pool, &f.dem[i]), tasks = 0;

			if (!(d > 0))
				continue;
			for (size_t s = 0; s < f.nspecs; s++) {
				double t = INFINITY;

				for (int res = 0; res < f.m; res++)
					if (f.dem[i].shape[res] > 0)
						t = fmin(t, f.specs[s].capacity[res] * f.dem[i].weight /
								    wsum / f.dem[i].shape[res]);
				tasks += t * (double)f.specs[s].count;
			}
			tasks = fmin(tasks, f.dem[i].max_units);
			min_even = fmin(min_even, tasks * d / f.dem[i].weight);
			min_g = fmin(min_g, r.tenants[i].gds / f.dem[i].weight);
		}
		if (isfinite(min_even) && min_g < min_even * (1 - 1e-6) - 1e-12) {
			print_error("seed %llu: least weighted G %.12g under DRFH < %.12g when every "
				    "server is split evenly\n", (unsigned long long)f.seed, min_g,
				    min_even);
			fail();
		}
		drfh_result_free(&r);
	}
}

/* One server: DRFH is DRF, divisible (alloc.c) and whole tasks (Ghodsi's Algorithm 1). */
static void test_one_server_is_drf(void **state)
{
	int n = nrounds();

	(void)state;
	for (int k = 0; k < n; k++) {
		struct fleet f;
		struct drfh_problem p;
		struct drf_problem q = { 0 };
		struct drfh_result r, rp;
		struct drf_result d, dd;

		gen(&f, base_seed * 31 + (uint64_t)k, false, false);
		f.nspecs = 1;
		f.specs[0].count = 1;
		for (int res = 0; res < f.m; res++)
			f.specs[0].capacity[res] = fmax(f.specs[0].capacity[res], 1);
		p = prob(&f);
		memcpy(q.capacity, f.specs[0].capacity, sizeof(q.capacity));
		q.n = f.n;
		q.demands = f.dem;
		assert_int_equal(drfh_allocate(&p, &r), 0);
		assert_int_equal(drf_allocate(&q, DRF_POLICY_DRF, &d), 0);
		assert_int_equal(drfh_place(&p, DRFH_BEST_FIT, &rp), 0);
		assert_int_equal(drf_allocate_discrete(&q, &dd), 0);
		for (size_t i = 0; i < f.n; i++) {
			if (fabs(r.tenants[i].gds - d.shares[i].dominant_share) >
			    1e-6 * fmax(1, d.shares[i].dominant_share)) {
				print_error("seed %llu: tenant %zu: DRFH %.12g, DRF %.12g\n",
					    (unsigned long long)f.seed, i, r.tenants[i].gds,
					    d.shares[i].dominant_share);
				fail();
			}
			if (rp.tenants[i].units != dd.shares[i].units) {
				print_error("seed %llu: tenant %zu: Best-Fit %g tasks, DRF %g\n",
					    (unsigned long long)f.seed, i, rp.tenants[i].units,
					    dd.shares[i].units);
				fail();
			}
		}
		drfh_result_free(&r);
		drfh_result_free(&rp);
		drf_result_free(&d);
		drf_result_free(&dd);
	}
}

/* k servers as one spec of count k, or as k specs: the same answer; and they group. */
static void test_identical_servers_group(void **state)
{
	struct fleet f;
	struct drfh_problem p;
	struct drfh_result a, b;
	struct fleet g;

	(void)state;
	gen(&f, base_seed + 5, false, false);
	f.nspecs = 2;
	f.specs[0].count = 3;
	f.specs[1].count = 2;
	memcpy(f.specs[1].capacity, (double[DRF_NRES]){ 5, 7, 2 }, sizeof(f.specs[1].capacity));
	memcpy(f.specs[0].capacity, (double[DRF_NRES]){ 9, 3, 4 }, sizeof(f.specs[0].capacity));
	g = f;
	g.nspecs = 5;
	for (size_t s = 0; s < 5; s++) {
		memcpy(g.specs[s].capacity, f.specs[s == 1 || s == 3 ? 1 : 0].capacity,
		       sizeof(g.specs[s].capacity));
		g.specs[s].count = 1;
	}
	p = prob(&f);
	assert_int_equal(drfh_allocate(&p, &a), 0);
	p = prob(&g);
	assert_int_equal(drfh_allocate(&p, &b), 0);
	assert_int_equal(a.ngroups, 2);
	assert_int_equal(b.ngroups, 2);
	assert_int_equal(b.groups[0].count, 3);
	assert_int_equal(b.groups[0].first, 0);
	assert_int_equal(b.groups[1].first, 1);
	for (size_t i = 0; i < f.n; i++)
		assert_close(a.tenants[i].gds, b.tenants[i].gds, 1e-7, "G, grouped or not");
	drfh_result_free(&a);
	drfh_result_free(&b);
}

/* Every whole-task form: no server over capacity, no tenant over its tasks, places add up. */
static void check_places(const struct fleet *f, const struct drfh_result *r)
{
	double used[MAXS * 3][DRF_NRES] = { { 0 } }, cap[MAXS * 3][DRF_NRES], tasks[MAXN] = { 0 };
	size_t ns = 0;

	for (size_t s = 0; s < f->nspecs; s++)
		for (size_t k = 0; k < f->specs[s].count; k++)
			memcpy(cap[ns++], f->specs[s].capacity, sizeof(cap[0]));
	assert_int_equal(r->nservers, ns);
	for (size_t k = 0; k < r->nplaces; k++) {
		const struct drfh_place *pl = &r->places[k];

		assert_true(pl->where < ns);
		assert_true(pl->tasks == floor(pl->tasks) && pl->tasks >= 1);
		tasks[pl->tenant] += pl->tasks;
		for (int res = 0; res < f->m; res++)
			used[pl->where][res] += pl->tasks * f->dem[pl->tenant].shape[res];
		if (k > 0)
			assert_true(r->places[k - 1].tenant < pl->tenant ||
				    (r->places[k - 1].tenant == pl->tenant &&
				     r->places[k - 1].where < pl->where));
	}
	for (size_t l = 0; l < ns; l++)
		for (int res = 0; res < f->m; res++)
			assert_le_tol(used[l][res], cap[l][res], 1e-9, 1e-9, "server use");
	for (size_t i = 0; i < f->n; i++) {
		double pool[DRF_NRES];
		struct drfh_problem p = prob(f);

		drfh_pool(&p, pool);
		if (dom_of(pool, &f->dem[i]) > 0)
			assert_close(tasks[i], r->tenants[i].units, 0, "places add up");
		assert_true(r->tenants[i].units <= f->dem[i].max_units);
	}
}

static void test_whole_tasks_feasible(void **state)
{
	int n = nrounds();
	double slot[DRF_NRES] = { 1, 2, 1 };
	double gap_sum = 0;
	int gaps = 0;

	(void)state;
	for (int k = 0; k < n; k++) {
		struct fleet f;
		struct drfh_problem p;
		struct drfh_result div, r;
		double lmin = INFINITY, dmin = INFINITY;

		gen(&f, base_seed * 17 + (uint64_t)k, false, false);
		p = prob(&f);
		assert_int_equal(drfh_allocate(&p, &div), 0);
		for (int form = 0; form < 4; form++) {
			int err = form == 0   ? drfh_place(&p, DRFH_BEST_FIT, &r)
				  : form == 1 ? drfh_place(&p, DRFH_FIRST_FIT, &r)
				  : form == 2 ? drfh_per_server_drf(&p, &r)
					      : drfh_slots(&p, slot, &r);

			assert_int_equal(err, 0);
			if (debug)
				print_message("form %d\n", form);
			check_places(&f, &r);
			/* No whole-task form lifts the least-served above the divisible max-min. */
			lmin = INFINITY;
			dmin = INFINITY;
			for (size_t i = 0; i < f.n; i++) {
				lmin = fmin(lmin, r.tenants[i].gds / f.dem[i].weight);
				dmin = fmin(dmin, div.tenants[i].gds / f.dem[i].weight);
			}
			assert_le_tol(lmin, dmin, 1e-7, 1e-12, "whole tasks' least weighted G");
			if (form == 0 && dmin > 0) {
				gap_sum += 1 - lmin / dmin;
				gaps++;
			}
			drfh_result_free(&r);
		}
		drfh_result_free(&div);
	}
	/* Reported, not asserted: these fleets' tasks are large against their servers. */
	print_message("Best-Fit's least weighted G is %.1f%% below the divisible one on average "
		      "over %d random fleets of 1-18 servers (1-16 of each resource) with tasks "
		      "of 0.05-3 of each: large tasks\n", 100 * gap_sum / gaps, gaps);
}

/*
 * Best-Fit's tie: two servers whose capacities point the same way (the second
 * f times the first) are at the same H from any task; the earlier wins, whatever
 * the rounding of the two directions (it went to the later one in 58 of 468
 * such pairs when H was compared exactly).
 */
static void test_best_fit_ties(void **state)
{
	struct rng g = { base_seed * 107 };
	int wrong = 0, cases = 0;

	(void)state;
	for (int k = 0; k < 500; k++) {
		struct fleet f;
		struct drfh_problem p;
		struct drfh_result r;
		double fct = rng_range(&g, 0.3, 3.7);

		memset(&f, 0, sizeof(f));
		f.m = 2;
		f.nspecs = 2;
		f.n = 1;
		f.specs[0].count = f.specs[1].count = 1;
		f.specs[0].capacity[0] = rng_range(&g, 1, 16);
		f.specs[0].capacity[1] = rng_range(&g, 1, 16);
		f.specs[1].capacity[0] = f.specs[0].capacity[0] * fct;
		f.specs[1].capacity[1] = f.specs[0].capacity[1] * fct;
		f.dem[0].weight = 1;
		f.dem[0].max_units = 1;
		f.dem[0].shape[0] = rng_range(&g, 0.01, 0.25);
		f.dem[0].shape[1] = rng_range(&g, 0.01, 0.25);
		p = prob(&f);
		assert_int_equal(drfh_place(&p, DRFH_BEST_FIT, &r), 0);
		assert_int_equal(r.nplaces, 1);
		cases++;
		wrong += r.places[0].where != 0;
		drfh_result_free(&r);
	}
	print_message("Best-Fit ties between proportional servers: %d of %d to the later one\n",
		      wrong, cases);
	assert_int_equal(wrong, 0);
}

/* Re-planning from the plan in force keeps what still fits and moves little. */
static void test_place_from_keeps(void **state)
{
	int n = nrounds();

	(void)state;
	for (int k = 0; k < n; k++) {
		struct fleet f;
		struct drfh_problem p;
		struct drfh_result a, b;

		gen(&f, base_seed * 101 + (uint64_t)k, false, false);
		p = prob(&f);
		assert_int_equal(drfh_place(&p, DRFH_BEST_FIT, &a), 0);
		/* From its own result: nothing new, the same places. */
		assert_int_equal(drfh_place_from(&p, DRFH_BEST_FIT, a.places, a.nplaces, &b), 0);
		assert_int_equal(b.rounds, 0);
		assert_int_equal(b.nplaces, a.nplaces);
		assert_memory_equal(b.places, a.places, a.nplaces * sizeof(*a.places));
		drfh_result_free(&b);
		/* The first spec's servers halve: elsewhere every task stays where it was. */
		for (int r = 0; r < f.m; r++)
			f.specs[0].capacity[r] /= 2;
		p = prob(&f);
		assert_int_equal(drfh_place_from(&p, DRFH_BEST_FIT, a.places, a.nplaces, &b), 0);
		check_places(&f, &b);
		for (size_t j = 0; j < a.nplaces; j++) {
			const struct drfh_place *pa = &a.places[j];
			double kept = 0;

			if (pa->where < f.specs[0].count)
				continue;
			for (size_t q = 0; q < b.nplaces; q++)
				if (b.places[q].tenant == pa->tenant && b.places[q].where == pa->where)
					kept = b.places[q].tasks;
			assert_true(kept >= pa->tasks);
		}
		drfh_result_free(&b);
		drfh_result_free(&a);
	}
	/*
	 * A count in force of any size (it comes from etcd): kept as far as the
	 * server holds it, at once (one task at a time, 1e300 never ended).
	 */
	for (int k = 0; k < 20; k++) {
		struct fleet f;
		struct drfh_problem p;
		struct drfh_result b;
		struct drfh_place huge[2] = { { .tenant = 0, .where = 0, .tasks = 1e300 },
					      { .tenant = 1, .where = 0, .tasks = 1e17 } };

		gen(&f, base_seed * 103 + (uint64_t)k, false, false);
		p = prob(&f);
		assert_int_equal(drfh_place_from(&p, DRFH_BEST_FIT, huge, p.n > 1 ? 2 : 1, &b), 0);
		check_places(&f, &b);
		drfh_result_free(&b);
	}
}

/*
 * Best-Fit by the book: each task scans every server, computing H exactly as the
 * engine does (directions as fractions of the pool summing to 1, H the sum of
 * |a_r - b_r| in resource order), the least H winning, ties the earlier server.
 * counts: tasks per tenant and server, n x ns.
 */
static void brute_best_fit(const struct drfh_problem *p, size_t ns, double *units, double *counts)
{
	double pool[DRF_NRES], (*rem)[DRF_NRES] = calloc(ns, sizeof(*rem));
	double *key = calloc(p->n, sizeof(*key)), *dom = calloc(p->n, sizeof(*dom));
	bool *placing = calloc(p->n, sizeof(*placing));
	int res[DRF_NRES], m = 0;

	drfh_pool(p, pool);
	for (int r = 0; r < DRF_NRES; r++)
		if (pool[r] > 0)
			res[m++] = r;
	for (size_t s = 0, l = 0; s < p->nspecs; s++)
		for (size_t k = 0; k < p->specs[s].count; k++, l++)
			for (int r = 0; r < DRF_NRES; r++)
				rem[l][r] = pool[r] > 0 ? p->specs[s].capacity[r] : 0;
	for (size_t i = 0; i < p->n; i++) {
		dom[i] = dom_of(pool, &p->demands[i]);
		placing[i] = dom[i] > 0;
		units[i] = placing[i] ? 0 : p->demands[i].max_units;
	}
	memset(counts, 0, p->n * ns * sizeof(*counts));
	for (;;) {
		const struct drf_demand *d;
		double a[DRF_NRES] = { 0 }, sum = 0, best_h = INFINITY;
		size_t i = p->n, best = ns;

		for (size_t j = 0; j < p->n; j++)
			if (placing[j] && (i == p->n || key[j] < key[i]))
				i = j;
		if (i == p->n)
			break;
		d = &p->demands[i];
		if (units[i] >= d->max_units) {
			placing[i] = false;
			continue;
		}
		for (int k = 0; k < m; k++)
			sum += d->shape[res[k]] / pool[res[k]];
		for (int k = 0; k < m; k++)
			a[res[k]] = d->shape[res[k]] / pool[res[k]] / sum;
		for (size_t l = 0; l < ns; l++) {
			double dir[DRF_NRES] = { 0 }, s = 0, h = 0;
			bool fit = true;

			for (int k = 0; k < m; k++)
				fit = fit && !(d->shape[res[k]] > 0 &&
					       rem[l][res[k]] < d->shape[res[k]] - 1e-12 * pool[res[k]]);
			if (!fit)
				continue;
			for (int k = 0; k < m; k++)
				s += rem[l][res[k]] / pool[res[k]];
			for (int k = 0; k < m; k++)
				dir[res[k]] = s > 0 ? rem[l][res[k]] / pool[res[k]] / s : 0;
			for (int k = 0; k < m; k++)
				h += fabs(a[res[k]] - dir[res[k]]);
			/* within 1e-12 a tie (the engine's H_EPS): the earlier server keeps it */
			if (h < best_h - 1e-12) {
				best_h = h;
				best = l;
			}
		}
		if (best == ns) {
			placing[i] = false;
			continue;
		}
		for (int k = 0; k < m; k++) {
			double *v = &rem[best][res[k]];

			if (d->shape[res[k]] > 0) {
				*v -= d->shape[res[k]];
				if (*v < 1e-12 * pool[res[k]])
					*v = 0;
			}
		}
		units[i] += 1;
		counts[i * ns + best] += 1;
		key[i] = units[i] * dom[i] / d->weight;
	}
	free(rem);
	free(key);
	free(dom);
	free(placing);
}

/*
 * Best-Fit's search (classes of servers, bucketed by direction) against the scan
 * of every server, task by task, on random fleets with many servers: shapes on
 * a grid of quarters, so that remaining capacities meet and H ties.
 */
static void test_best_fit_against_scan(void **state)
{
	int n = nrounds() / 3 + 1;

	(void)state;
	for (int k = 0; k < n; k++) {
		struct rng g = { base_seed * 65537 + (uint64_t)k };
		struct drfh_server_spec specs[8] = { 0 };
		struct drf_demand dem[24] = { 0 };
		struct drfh_problem p = { .specs = specs, .demands = dem };
		struct drfh_result r;
		double units[24], *counts, *got;
		int m = rng_int(&g, 2, 3);
		size_t ns = 0;

		p.nspecs = (size_t)rng_int(&g, 1, 8);
		p.n = (size_t)rng_int(&g, 1, 24);
		for (size_t s = 0; s < p.nspecs; s++) {
			double scale = rng_int(&g, 1, 4);

			specs[s].count = (size_t)rng_int(&g, 1, 30);
			ns += specs[s].count;
			for (int res = 0; res < m; res++)
				specs[s].capacity[res] =
					s > 0 && rng_int(&g, 0, 9) == 0 ? 0
									: scale * rng_int(&g, 4, 32) / 4;
		}
		for (size_t i = 0; i < p.n; i++) {
			dem[i].weight = rng_int(&g, 1, 4);
			for (int res = 0; res < m; res++)
				dem[i].shape[res] = rng_int(&g, 0, 5) == 0 ? 0 : rng_int(&g, 1, 12) / 4.0;
			if (dem[i].shape[0] == 0 && dem[i].shape[1] == 0)
				dem[i].shape[1] = 0.25;
			dem[i].max_units = rng_int(&g, 0, 2) == 0 ? INFINITY : rng_int(&g, 1, 60);
		}
		counts = calloc(p.n * ns, sizeof(*counts));
		got = calloc(p.n * ns, sizeof(*got));
		brute_best_fit(&p, ns, units, counts);
		assert_int_equal(drfh_place(&p, DRFH_BEST_FIT, &r), 0);
		for (size_t q = 0; q < r.nplaces; q++)
			got[r.places[q].tenant * ns + r.places[q].where] = r.places[q].tasks;
		for (size_t i = 0; i < p.n; i++) {
			if (r.tenants[i].units != units[i]) {
				print_error("fleet %d of seed %llu: tenant %zu: Best-Fit %g tasks, "
					    "the scan %g\n", k, (unsigned long long)base_seed, i,
					    r.tenants[i].units, units[i]);
				fail();
			}
			for (size_t l = 0; l < ns; l++)
				if (got[i * ns + l] != counts[i * ns + l]) {
					print_error("fleet %d of seed %llu: tenant %zu on server "
						    "%zu: Best-Fit %g tasks, the scan %g\n", k,
						    (unsigned long long)base_seed, i, l,
						    got[i * ns + l], counts[i * ns + l]);
					fail();
				}
		}
		drfh_result_free(&r);
		free(counts);
		free(got);
	}
}

/*
 * The runs' bulk against the scan: few servers, each of room for hundreds of
 * tasks, and tenants with large counts, so that a turn places many tasks at
 * once (found by a threshold of H, not one at a time). Shapes and capacities
 * on a grid of quarters: the bulk's c - k s is the scan's k subtractions. The
 * same tasks per tenant and server, for less work than tasks.
 */
static void test_runs_against_scan(void **state)
{
	int n = nrounds() / 3 + 1;
	uint64_t work = 0, tasks = 0;

	(void)state;
	for (int k = 0; k < n; k++) {
		struct rng g = { base_seed * 7919 + (uint64_t)k };
		struct drfh_server_spec specs[4] = { 0 };
		struct drf_demand dem[5] = { 0 };
		struct drfh_problem p = { .specs = specs, .demands = dem };
		struct drfh_result r;
		double units[5], *counts;
		int m = rng_int(&g, 2, 3);
		size_t ns = 0;

		p.nspecs = (size_t)rng_int(&g, 1, 4);
		p.n = (size_t)rng_int(&g, 1, 5);
		for (size_t s = 0; s < p.nspecs; s++) {
			specs[s].count = (size_t)rng_int(&g, 1, 3);
			ns += specs[s].count;
			for (int res = 0; res < m; res++)
				specs[s].capacity[res] = rng_int(&g, 64, 1024) / 4.0;
		}
		for (size_t i = 0; i < p.n; i++) {
			dem[i].weight = rng_int(&g, 1, 4);
			for (int res = 0; res < m; res++)
				dem[i].shape[res] = rng_int(&g, 0, 3) == 0 ? 0 : rng_int(&g, 1, 8) / 4.0;
			if (dem[i].shape[0] == 0 && dem[i].shape[1] == 0)
				dem[i].shape[0] = 0.25;
			/* one tenant alone for long: the others' counts run out */
			dem[i].max_units = i == 0 ? INFINITY : rng_int(&g, 1, 400);
		}
		counts = calloc(p.n * ns, sizeof(*counts));
		brute_best_fit(&p, ns, units, counts);
		assert_int_equal(drfh_place(&p, DRFH_BEST_FIT, &r), 0);
		for (size_t i = 0; i < p.n; i++) {
			double got[12] = { 0 };

			assert_true(r.tenants[i].units == units[i]);
			for (size_t q = 0; q < r.nplaces; q++)
				if (r.places[q].tenant == i)
					got[r.places[q].where] = r.places[q].tasks;
			for (size_t l = 0; l < ns; l++)
				if (got[l] != counts[i * ns + l]) {
					print_error("fleet %d of seed %llu: tenant %zu on server %zu: "
						    "Best-Fit %g tasks, the scan %g\n", k,
						    (unsigned long long)base_seed, i, l, got[l],
						    counts[i * ns + l]);
					fail();
				}
		}
		work += r.work;
		tasks += r.rounds;
		drfh_result_free(&r);
		free(counts);
	}
	print_message("Best-Fit in runs: %llu tasks for %llu steps of work\n",
		      (unsigned long long)tasks, (unsigned long long)work);
	/* tenants of counts rise together with the unlimited one: their turns are a task each */
	assert_true(work < 4 * tasks);
}

/*
 * Issue 29's fleet: three nodes, two tenants of cpu and memory, and an
 * unlimited tenant whose task is about 1e-8 of the pool's net-rate (2.6 bit/s
 * of 250 Mbit/s): ~1e8 tasks, which one at a time took 9 s. Its tasks are
 * net-rate alone, which no one else needs: it gets every task each node's
 * net-rate holds, as the scan says (the scan on the same fleet with tasks
 * 100 times larger: the same tasks per server for the others, and for it
 * every task that fits). The work does not grow with its tasks.
 */
static void tiny_fleet(struct drfh_server_spec sv[3], struct drf_demand d[3], double tiny)
{
	static const double cap[3][3] = { { 8, 16, 100e6 }, { 16, 32, 100e6 }, { 4, 8, 50e6 } };

	memset(sv, 0, 3 * sizeof(*sv));
	memset(d, 0, 3 * sizeof(*d));
	for (int s = 0; s < 3; s++) {
		sv[s].count = 1;
		sv[s].capacity[DRF_RES_CPU] = cap[s][0];
		sv[s].capacity[DRF_RES_MEMORY] = cap[s][1] * 1073741824.0;
		sv[s].capacity[DRF_RES_NET] = cap[s][2];
	}
	d[0] = (struct drf_demand){ .weight = 1, .max_units = 6 };
	d[0].shape[DRF_RES_CPU] = 1;
	d[0].shape[DRF_RES_MEMORY] = 1073741824.0;
	d[1] = (struct drf_demand){ .weight = 1, .max_units = INFINITY };
	d[1].shape[DRF_RES_CPU] = 2;
	d[1].shape[DRF_RES_MEMORY] = 2 * 1073741824.0;
	d[2] = (struct drf_demand){ .weight = 1, .max_units = INFINITY };
	d[2].shape[DRF_RES_NET] = tiny;
}

static void test_tiny_tasks_bounded(void **state)
{
	struct drfh_server_spec sv[3];
	struct drf_demand d[3];
	struct drfh_problem p = { .nspecs = 3, .specs = sv, .n = 3, .demands = d };
	struct drfh_result r;
	double units[3], counts[9];
	uint64_t work[3];
	static const double tiny[3] = { 260, 26, 2.6 };

	(void)state;
	for (int k = 0; k < 3; k++) {
		double want = 0;

		tiny_fleet(sv, d, tiny[k]);
		assert_int_equal(drfh_place(&p, DRFH_BEST_FIT, &r), 0);
		for (int s = 0; s < 3; s++)
			want += floor(sv[s].capacity[DRF_RES_NET] / tiny[k]);
		assert_true(r.tenants[2].units == want);
		if (k < 2) { /* the scan: 1e6 tasks and fewer */
			brute_best_fit(&p, 3, units, counts);
			for (size_t q = 0; q < r.nplaces; q++)
				assert_true(r.places[q].tasks ==
					    counts[r.places[q].tenant * 3 + r.places[q].where]);
			for (int i = 0; i < 3; i++)
				assert_true(r.tenants[i].units == units[i]);
		}
		work[k] = r.work;
		print_message("tiny task %g bit/s: %g tasks, %llu steps of work\n", tiny[k],
			      r.tenants[2].units, (unsigned long long)r.work);
		drfh_result_free(&r);
		/* a turn per task of the others, and a count's search in each of its */
		assert_true(work[k] <= 5000);
	}
	assert_true(work[2] <= 2 * work[0]); /* 100 times the tasks: the searches' bits */
	/* First-Fit too: a server's room is a division */
	assert_int_equal(drfh_place(&p, DRFH_FIRST_FIT, &r), 0);
	assert_true(r.work <= 100);
	drfh_result_free(&r);
}

/*
 * A node that says it has 1e15 bytes of memory (or 1e16), and two tenants of
 * memory alone whose shares rise together: one task each a turn, ~1e6 and
 * ~1e7 turns one at a time. Past DRFH_EXACT_TURNS the turns grow with what a
 * tenant holds: the work stays ~1e5 however large the node, and the shares are
 * the scan's within 1/DRFH_RUN_FRACTION (drfh.h).
 */
static void test_huge_server_bounded(void **state)
{
	uint64_t work[2];

	(void)state;
	for (int k = 0; k < 2; k++) {
		struct drfh_server_spec sv[3] = { 0 };
		struct drf_demand d[4] = { 0 };
		struct drfh_problem p = { .nspecs = 3, .specs = sv, .n = 4, .demands = d };
		struct drfh_result r;
		double units[4], *counts = calloc(12, sizeof(*counts));

		for (int s = 0; s < 3; s++) {
			sv[s].count = 1;
			sv[s].capacity[DRF_RES_CPU] = 16;
			sv[s].capacity[DRF_RES_MEMORY] = 64 * 1073741824.0;
		}
		sv[2].capacity[DRF_RES_MEMORY] = k ? 1e16 : 1e15;
		for (int i = 0; i < 4; i++) {
			d[i].weight = 1;
			d[i].max_units = INFINITY;
			d[i].shape[DRF_RES_MEMORY] = (i + 1) * 1073741824.0;
			d[i].shape[DRF_RES_CPU] = i < 2 ? 1 : 0;
		}
		assert_int_equal(drfh_place(&p, DRFH_BEST_FIT, &r), 0);
		brute_best_fit(&p, 3, units, counts);
		for (int i = 0; i < 4; i++) {
			print_message("node of %g bytes: tenant %d: %g tasks, the scan %g\n",
				      sv[2].capacity[DRF_RES_MEMORY], i, r.tenants[i].units, units[i]);
			assert_le_tol(fabs(r.tenants[i].units - units[i]),
				      units[i] / DRFH_RUN_FRACTION + 1, 0, 0, "tasks");
		}
		work[k] = r.work;
		print_message("%llu tasks for %llu steps of work\n", (unsigned long long)r.rounds,
			      (unsigned long long)r.work);
		/* DRFH_EXACT_TURNS turns, then O(DRFH_RUN_FRACTION x log tasks) a tenant */
		assert_true(r.work < 400000);
		drfh_result_free(&r);
		free(counts);
	}
	assert_true(work[1] < 2 * work[0]); /* ten times the tasks */
}

/*
 * Planning rounds as the fleet's planner runs them: the target toward the
 * placement in force (drfh_place_toward), then a round of at most max_moves
 * tasks stopped (drfh_converge), until no more is needed. The rounds taken;
 * *prev (n entries) becomes the last placement. Each round's churn is checked
 * against its bound.
 */
static int plan_rounds(const struct drfh_problem *p, struct drfh_place **prev, size_t *n,
		       double max_moves, int limit)
{
	int rounds = 0;

	for (;;) {
		struct drfh_result t, r;
		double moved;
		bool more;

		assert_int_equal(drfh_place_toward(p, *prev, *n, NULL, &t), 0);
		assert_int_equal(drfh_converge(p, *prev, *n, &t, max_moves, &r, &moved, &more), 0);
		assert_true(moved <= max_moves);
		free(*prev);
		*prev = malloc((r.nplaces + 1) * sizeof(**prev));
		memcpy(*prev, r.places, r.nplaces * sizeof(**prev));
		*n = r.nplaces;
		drfh_result_free(&t);
		drfh_result_free(&r);
		rounds++;
		if (!more || rounds >= limit)
			return rounds;
	}
}

static double tasks_of(const struct drfh_place *pl, size_t n, uint32_t tenant)
{
	double t = 0;

	for (size_t k = 0; k < n; k++)
		t += pl[k].tenant == tenant ? pl[k].tasks : 0;
	return t;
}

/*
 * Issue 29: a tenant added to a fleet already full. Continued from the plan
 * in force (drfh_place_from) it never gets a task; planned in rounds toward
 * the counts from scratch it gets them, with at most 4 tasks stopped a round.
 */
static void test_converge_late_tenant(void **state)
{
	struct drfh_server_spec sv[3] = { { .capacity = { 8, 16 }, .count = 1 },
					  { .capacity = { 16, 16 }, .count = 1 },
					  { .capacity = { 8, 32 }, .count = 1 } };
	struct drf_demand d[2] = { { .weight = 1, .shape = { 1, 1 }, .max_units = INFINITY },
				   { .weight = 1, .shape = { 2, 2 }, .max_units = 5 } };
	struct drfh_problem p1 = { .nspecs = 3, .specs = sv, .n = 1, .demands = d };
	struct drfh_problem p2 = { .nspecs = 3, .specs = sv, .n = 2, .demands = d };
	struct drfh_result full, scratch, r;
	struct drfh_place *pl;
	size_t n;
	int rounds;

	(void)state;
	assert_int_equal(drfh_place(&p1, DRFH_BEST_FIT, &full), 0); /* batch alone: all of it */
	assert_int_equal(drfh_place(&p2, DRFH_BEST_FIT, &scratch), 0);
	assert_true(scratch.tenants[1].units == 5);
	/* as before: continued from the plan in force, late gets nothing */
	assert_int_equal(drfh_place_from(&p2, DRFH_BEST_FIT, full.places, full.nplaces, &r), 0);
	assert_true(r.tenants[1].units == 0);
	drfh_result_free(&r);
	n = full.nplaces;
	pl = malloc((n + 1) * sizeof(*pl));
	memcpy(pl, full.places, n * sizeof(*pl));
	rounds = plan_rounds(&p2, &pl, &n, 4, 100);
	print_message("late tenant into a full fleet: %g tasks after %d rounds (from scratch %g)\n",
		      tasks_of(pl, n, 1), rounds, scratch.tenants[1].units);
	assert_true(tasks_of(pl, n, 1) == scratch.tenants[1].units);
	assert_true(tasks_of(pl, n, 0) == scratch.tenants[0].units);
	/* 10 tasks over the target, 4 a round */
	assert_true(rounds <= 4);
	/* converged: the next round moves nothing */
	assert_int_equal(plan_rounds(&p2, &pl, &n, 4, 100), 1);
	free(pl);
	drfh_result_free(&full);
	drfh_result_free(&scratch);
}

/*
 * A tenant that displaces another for a while (a heavy weight), then leaves:
 * the displaced one gets its tasks back (continued from the plan in force, it
 * stayed displaced). And a placement at DRFH already moves nothing.
 */
static void test_converge_displaced_returns(void **state)
{
	struct drfh_server_spec sv[2] = { { .capacity = { 8, 16 }, .count = 2 },
					  { .capacity = { 4, 8 }, .count = 1 } };
	/* web; batch, of memory; a heavy tenant of cpu, whose room fits no web task */
	struct drf_demand d[3] = { { .weight = 1, .shape = { 1, 2 }, .max_units = 6 },
				   { .weight = 1, .shape = { 0.25, 2 }, .max_units = INFINITY },
				   { .weight = 20, .shape = { 1, 0.25 }, .max_units = INFINITY } };
	struct drfh_problem p2 = { .nspecs = 2, .specs = sv, .n = 2, .demands = d };
	struct drfh_problem p3 = { .nspecs = 2, .specs = sv, .n = 3, .demands = d };
	struct drfh_result a, t, r;
	struct drfh_place *pl;
	size_t n, w;
	double moved, web;
	bool more;
	int rounds;

	(void)state;
	assert_int_equal(drfh_place(&p2, DRFH_BEST_FIT, &a), 0);
	assert_true(a.tenants[0].units == 6);
	/* at DRFH already: the same target, nothing moved, no more rounds */
	assert_int_equal(drfh_place_toward(&p2, a.places, a.nplaces, NULL, &t), 0);
	assert_int_equal(drfh_converge(&p2, a.places, a.nplaces, &t, 0, &r, &moved, &more), 0);
	assert_true(moved == 0 && !more);
	assert_int_equal(r.nplaces, a.nplaces);
	assert_memory_equal(r.places, a.places, a.nplaces * sizeof(*a.places));
	drfh_result_free(&t);
	drfh_result_free(&r);
	/* the heavy tenant comes */
	n = a.nplaces;
	pl = malloc((n + 1) * sizeof(*pl));
	memcpy(pl, a.places, n * sizeof(*pl));
	rounds = plan_rounds(&p3, &pl, &n, 3, 100);
	web = tasks_of(pl, n, 0);
	print_message("heavy tenant: web %g tasks after %d rounds\n", web, rounds);
	assert_true(web < 6);
	/* it leaves: its places go; web back to 6 in rounds */
	for (size_t k = w = 0; k < n; k++)
		if (pl[k].tenant != 2)
			pl[w++] = pl[k];
	n = w;
	rounds = plan_rounds(&p2, &pl, &n, 3, 100);
	print_message("heavy tenant gone: web %g tasks after %d rounds\n", tasks_of(pl, n, 0),
		      rounds);
	assert_true(tasks_of(pl, n, 0) == 6);
	assert_true(rounds <= 10);
	/*
	 * Issue 29's case: web displaced to one task while batch took the memory
	 * (a placement the old planner kept, continuing from it: web's task fits
	 * nowhere). In rounds, batch gives up what is past its fair count.
	 */
	free(pl);
	n = 4;
	pl = malloc(4 * sizeof(*pl));
	pl[0] = (struct drfh_place){ .tenant = 0, .where = 0, .tasks = 1 };
	pl[1] = (struct drfh_place){ .tenant = 1, .where = 0, .tasks = 7 };
	pl[2] = (struct drfh_place){ .tenant = 1, .where = 1, .tasks = 8 };
	pl[3] = (struct drfh_place){ .tenant = 1, .where = 2, .tasks = 4 };
	assert_int_equal(drfh_place_from(&p2, DRFH_BEST_FIT, pl, n, &r), 0);
	print_message("displaced, continued from the plan in force: web %g tasks\n",
		      r.tenants[0].units);
	assert_true(r.tenants[0].units == 1);
	drfh_result_free(&r);
	rounds = plan_rounds(&p2, &pl, &n, 3, 100);
	print_message("displaced, in rounds of 3 tasks stopped: web %g tasks after %d rounds\n",
		      tasks_of(pl, n, 0), rounds);
	assert_true(tasks_of(pl, n, 0) == 6);
	assert_true(rounds <= 10);
	free(pl);
	drfh_result_free(&a);
}

/* The capacity bounds: at the bound is a server, past it is not; negative and NaN neither. */
static void test_capacity_bounds(void **state)
{
	double cap[DRF_NRES] = { 0 };
	int r = -1;

	(void)state;
	for (int k = 0; k < DRF_NRES; k++)
		cap[k] = drfh_capacity_max(k);
	assert_int_equal(drfh_capacity_check(cap, &r), 0);
	assert_true(drfh_capacity_max(DRF_RES_CPU) == 65536);
	assert_true(drfh_capacity_max(DRF_RES_MEMORY) == 0x1p52);
	for (int k = 0; k < DRF_NRES; k++) {
		double keep = cap[k];

		cap[k] = nextafter(keep, INFINITY);
		assert_int_equal(drfh_capacity_check(cap, &r), -ERANGE);
		assert_int_equal(r, k);
		cap[k] = 1e15 > keep ? 1e15 : 1e18; /* issue 29's liar */
		assert_int_equal(drfh_capacity_check(cap, NULL), -ERANGE);
		cap[k] = -1;
		assert_int_equal(drfh_capacity_check(cap, NULL), -ERANGE);
		cap[k] = NAN;
		assert_int_equal(drfh_capacity_check(cap, NULL), -ERANGE);
		cap[k] = keep;
	}
}

static void test_rejects_malformed(void **state)
{
	struct drfh_server_spec sv = { .capacity = { 4, 4 }, .count = 1 };
	struct drf_demand d = { .weight = 1, .shape = { 1, 1 }, .max_units = INFINITY };
	struct drfh_problem p = { .nspecs = 1, .specs = &sv, .n = 1, .demands = &d };
	struct drfh_result r;

	(void)state;
	d.weight = 0;
	assert_int_equal(drfh_allocate(&p, &r), -EINVAL);
	assert_int_equal(drfh_place(&p, DRFH_BEST_FIT, &r), -EINVAL);
	d.weight = 1;
	d.shape[0] = d.shape[1] = 0;
	assert_int_equal(drfh_allocate(&p, &r), -EINVAL); /* unlimited, needing nothing */
	d.shape[0] = 1;
	sv.count = 0;
	assert_int_equal(drfh_allocate(&p, &r), -EINVAL);
	sv.count = 1;
	sv.capacity[1] = NAN;
	assert_int_equal(drfh_per_server_drf(&p, &r), -EINVAL);
	sv.capacity[1] = 4;
	assert_int_equal(drfh_slots(&p, (double[DRF_NRES]){ 1, 0 }, &r), -EINVAL);
}

int main(void)
{
	const char *s = getenv("DRFH_SEED");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_example),
		cmocka_unit_test(test_best_fit_matches_shapes),
		cmocka_unit_test(test_random_against_reference),
		cmocka_unit_test(test_capped_against_reference),
		cmocka_unit_test(test_shared_directions_against_reference),
		cmocka_unit_test(test_envy_free_and_weak_sharing_incentive),
		cmocka_unit_test(test_one_server_is_drf),
		cmocka_unit_test(test_identical_servers_group),
		cmocka_unit_test(test_whole_tasks_feasible),
		cmocka_unit_test(test_place_from_keeps),
		cmocka_unit_test(test_best_fit_ties),
		cmocka_unit_test(test_best_fit_against_scan),
		cmocka_unit_test(test_runs_against_scan),
		cmocka_unit_test(test_tiny_tasks_bounded),
		cmocka_unit_test(test_huge_server_bounded),
		cmocka_unit_test(test_converge_late_tenant),
		cmocka_unit_test(test_converge_displaced_returns),
		cmocka_unit_test(test_capacity_bounds),
		cmocka_unit_test(test_rejects_malformed),
	};

	debug = getenv("DRFH_DEBUG") != NULL;
	if (s)
		base_seed = strtoull(s, NULL, 10);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
