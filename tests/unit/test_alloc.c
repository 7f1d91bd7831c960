// SPDX-License-Identifier: MIT
/*
 * The worked examples (E1-E5; docs/design.md has the policies), exactly, and the engine's
 * edge cases.
 * Expected numbers are written beside each test, derived by hand in the comment.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define G (1024.0 * 1024 * 1024)
#define EXACT 1e-12

/*
 * E1: 9 cpu, 18G; A task (1, 4G), B task (3, 1G), unlimited, equal weights.
 * s = 2/3: A 3 tasks (3 cpu, 12G), B 2 tasks (6 cpu, 2G); cpu used up, 4G left.
 */
static void test_e1_drf(void **state)
{
	struct drf_demand d[] = { t_task(1, 1, 4 * G, INFINITY), t_task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = t_problem(9, 18 * G, d, 2);
	struct drf_result r;

	(void)state;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_DRF, &r), 0);
	assert_close(r.shares[0].units, 3, EXACT, "A tasks");
	assert_close(r.shares[1].units, 2, EXACT, "B tasks");
	assert_close(r.shares[0].alloc[DRF_RES_CPU], 3, EXACT, "A cpu");
	assert_close(r.shares[0].alloc[DRF_RES_MEMORY], 12 * G, EXACT, "A memory");
	assert_close(r.shares[1].alloc[DRF_RES_CPU], 6, EXACT, "B cpu");
	assert_close(r.shares[1].alloc[DRF_RES_MEMORY], 2 * G, EXACT, "B memory");
	assert_close(r.shares[0].dominant_share, 2.0 / 3, EXACT, "A dominant share");
	assert_close(r.shares[1].dominant_share, 2.0 / 3, EXACT, "B dominant share");
	assert_int_equal(r.shares[0].dominant_res, DRF_RES_MEMORY);
	assert_int_equal(r.shares[1].dominant_res, DRF_RES_CPU);
	assert_int_equal(r.shares[0].limited_by, DRF_RES_CPU);
	assert_int_equal(r.shares[1].limited_by, DRF_RES_CPU);
	assert_close(r.unallocated[DRF_RES_CPU], 0, 0, "cpu left");
	assert_close(r.unallocated[DRF_RES_MEMORY], 4 * G, EXACT, "memory left");
	drf_result_free(&r);
}

static void test_e1_discrete(void **state)
{
	struct drf_demand d[] = { t_task(1, 1, 4 * G, INFINITY), t_task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = t_problem(9, 18 * G, d, 2);
	struct drf_result r;

	(void)state;
	assert_int_equal(drf_allocate_discrete(&p, &r), 0);
	assert_true(r.shares[0].units == 3);
	assert_true(r.shares[1].units == 2);
	assert_close(r.unallocated[DRF_RES_MEMORY], 4 * G, EXACT, "memory left");
	drf_result_free(&r);
}

/*
 * E2: 28 cpu, 56G; U1 task (1, 2G), U2 task (1, 4G), unlimited.
 * DRF: dominant shares x1/28 = 2*x2/28, memory 2 x1 + 4 x2 = 56 -> 14 and 7.
 * Asset: 2/28 x1 = 3/28 x2, memory 2 x1 + 4 x2 = 56 -> 12 and 8, 8 cpu idle, and
 * U1 holds 12/28 < 1/2 of both resources: a sharing-incentive violation.
 */
static void test_e2(void **state)
{
	struct drf_demand d[] = { t_task(1, 1, 2 * G, INFINITY), t_task(1, 1, 4 * G, INFINITY) };
	struct drf_problem p = t_problem(28, 56 * G, d, 2);
	struct drf_result r;
	struct drf_metrics m;

	(void)state;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_DRF, &r), 0);
	assert_close(r.shares[0].units, 14, EXACT, "U1 tasks (drf)");
	assert_close(r.shares[1].units, 7, EXACT, "U2 tasks (drf)");
	assert_close(r.shares[0].dominant_share, 0.5, EXACT, "U1 share (drf)");
	assert_close(r.shares[1].dominant_share, 0.5, EXACT, "U2 share (drf)");
	drf_metrics_compute(&p, &r, &m);
	assert_int_equal(m.si_violations, 0);
	drf_result_free(&r);

	assert_int_equal(drf_allocate(&p, DRF_POLICY_ASSET, &r), 0);
	assert_close(r.shares[0].units, 12, EXACT, "U1 tasks (asset)");
	assert_close(r.shares[1].units, 8, EXACT, "U2 tasks (asset)");
	assert_close(r.unallocated[DRF_RES_CPU], 8, EXACT, "idle cpu (asset)");
	assert_close(r.unallocated[DRF_RES_MEMORY], 0, 0, "memory left (asset)");
	assert_true(r.shares[0].alloc[DRF_RES_CPU] < 14);
	assert_true(r.shares[0].alloc[DRF_RES_MEMORY] < 28 * G);
	drf_metrics_compute(&p, &r, &m);
	assert_int_equal(m.si_violations, 1);
	drf_result_free(&r);

	assert_int_equal(drf_allocate_discrete(&p, &r), 0);
	assert_true(r.shares[0].units == 14);
	assert_true(r.shares[1].units == 7);
	drf_result_free(&r);
}

/*
 * E3: 9 cpu, 18G; A bounded (2 cpu, 8G), B task (3, 1G) unlimited.
 * A's dominant share of its demand is 8/18 = 4/9; at s = 4/9 B has 4/3 tasks
 * (4 cpu) and nothing is used up, so A is served in full; B goes on until cpu runs
 * out: 2 + 3 x = 9 -> x = 7/3 tasks, 7 cpu and 7/3 G.
 */
static void test_e3(void **state)
{
	struct drf_demand d[] = { t_task(1, 2, 8 * G, 1), t_task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = t_problem(9, 18 * G, d, 2);
	struct drf_result r;

	(void)state;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_DRF, &r), 0);
	assert_close(r.shares[0].units, 1, EXACT, "A fraction met");
	assert_int_equal(r.shares[0].limited_by, DRF_LIMIT_DEMAND);
	assert_close(r.shares[0].dominant_share, 4.0 / 9, EXACT, "A dominant share");
	assert_close(r.shares[1].units, 7.0 / 3, EXACT, "B tasks");
	assert_close(r.shares[1].alloc[DRF_RES_CPU], 7, EXACT, "B cpu");
	assert_close(r.shares[1].alloc[DRF_RES_MEMORY], 7.0 / 3 * G, EXACT, "B memory");
	assert_int_equal(r.shares[1].limited_by, DRF_RES_CPU);
	assert_close(r.unallocated[DRF_RES_CPU], 0, 0, "cpu left");
	drf_result_free(&r);
}

static struct drf_problem single(double cap, struct drf_demand *d, const double *dem,
				 const double *w, size_t n)
{
	struct drf_problem p = { .n = n, .demands = d };

	p.capacity[DRF_RES_CPU] = cap;
	for (size_t i = 0; i < n; i++) {
		memset(&d[i], 0, sizeof(d[i]));
		d[i].weight = w[i];
		d[i].shape[DRF_RES_CPU] = isinf(dem[i]) ? 1 : dem[i];
		d[i].max_units = isinf(dem[i]) ? INFINITY : 1;
	}
	return p;
}

static void check_single(const double *dem, const double *w, const double *want, size_t n)
{
	struct drf_demand d[3];
	struct drf_problem p = single(10, d, dem, w, n);

	for (int pol = 0; pol < DRF_NPOLICY; pol++) {
		struct drf_result r;

		/* GFJ is fair on task counts, not amounts: one resource does not make it max-min. */
		if (pol == DRF_POLICY_GFJ)
			continue;
		assert_int_equal(drf_allocate(&p, pol, &r), 0);
		for (size_t i = 0; i < n; i++)
			assert_close(r.shares[i].alloc[DRF_RES_CPU], want[i], EXACT,
				     drf_policy_name(pol));
		drf_result_free(&r);
	}
}

/* E4: C = 10, demands 8, 6, 2, equal weights -> 4, 4, 2 (f = 4), every policy. */
static void test_e4(void **state)
{
	(void)state;
	check_single((double[]){ 8, 6, 2 }, (double[]){ 1, 1, 1 }, (double[]){ 4, 4, 2 }, 3);
}

/* E5: C = 10, demands 8, 6, 2, weights 3, 1, 1 -> 6, 2, 2 (f = 2). */
static void test_e5(void **state)
{
	(void)state;
	check_single((double[]){ 8, 6, 2 }, (double[]){ 3, 1, 1 }, (double[]){ 6, 2, 2 }, 3);
}

/* Unbounded demands with weights 1 and 2 -> 1/3 and 2/3 of C. */
static void test_weighted_unbounded(void **state)
{
	(void)state;
	check_single((double[]){ INFINITY, INFINITY }, (double[]){ 1, 2 },
		     (double[]){ 10.0 / 3, 20.0 / 3 }, 2);
}

/* Per-resource max-min on E1: each gets 4.5 cpu and 9G; usable A 2.25, B 1.5 tasks. */
static void test_per_resource_e1(void **state)
{
	struct drf_demand d[] = { t_task(1, 1, 4 * G, INFINITY), t_task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = t_problem(9, 18 * G, d, 2);
	struct drf_result r;
	struct drf_metrics m;

	(void)state;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_PER_RESOURCE, &r), 0);
	assert_close(r.shares[0].alloc[DRF_RES_CPU], 4.5, EXACT, "A cpu");
	assert_close(r.shares[0].alloc[DRF_RES_MEMORY], 9 * G, EXACT, "A memory");
	assert_close(r.shares[0].units, 2.25, EXACT, "A usable tasks");
	assert_close(r.shares[1].units, 1.5, EXACT, "B usable tasks");
	assert_int_equal(r.shares[0].limited_by, DRF_RES_MEMORY);
	assert_int_equal(r.shares[1].limited_by, DRF_RES_CPU);
	drf_metrics_compute(&p, &r, &m);
	/* Handed out in full, but only 2.25 + 4.5 = 6.75 of 9 cpu is usable. */
	assert_close(m.allocated[DRF_RES_CPU], 1, EXACT, "cpu handed out");
	assert_close(m.utilization[DRF_RES_CPU], 0.75, EXACT, "cpu usable");
	drf_result_free(&r);
}

/* A tenant that needs nothing shared is served at once and takes nothing. */
static void test_zero_demand(void **state)
{
	struct drf_demand d[] = { t_task(1, 0, 0, 1), t_task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = t_problem(9, 18 * G, d, 2);
	struct drf_result r;

	(void)state;
	for (int pol = 0; pol < DRF_NPOLICY; pol++) {
		assert_int_equal(drf_allocate(&p, pol, &r), 0);
		assert_close(r.shares[0].units, 1, EXACT, "zero demand met");
		assert_int_equal(r.shares[0].limited_by, DRF_LIMIT_DEMAND);
		assert_close(r.shares[1].units, 3, EXACT, "B gets all cpu");
		drf_result_free(&r);
	}
}

/* A resource with capacity 0 takes no part, whatever the demands say of it. */
static void test_nonparticipating(void **state)
{
	struct drf_demand d[] = { t_task(1, 1, 4 * G, INFINITY), t_task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = t_problem(9, 0, d, 2);
	struct drf_result r;

	(void)state;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_DRF, &r), 0);
	/* cpu only: A 1/9 per task, B 3/9: equal shares 1/2 -> A 4.5, B 1.5 tasks. */
	assert_close(r.shares[0].units, 4.5, EXACT, "A tasks");
	assert_close(r.shares[1].units, 1.5, EXACT, "B tasks");
	assert_true(r.shares[0].alloc[DRF_RES_MEMORY] == 0);
	assert_int_equal(r.shares[0].dominant_res, DRF_RES_CPU);
	drf_result_free(&r);
}

static void test_invalid(void **state)
{
	struct drf_demand d[] = { t_task(1, 1, 4 * G, INFINITY) };
	struct drf_problem p = t_problem(9, 18 * G, d, 1);
	struct drf_result r;

	(void)state;
	d[0].weight = 0;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_DRF, &r), -EINVAL);
	d[0].weight = NAN;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_DRF, &r), -EINVAL);
	d[0].weight = 1;
	d[0].shape[DRF_RES_CPU] = -1;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_DRF, &r), -EINVAL);
	d[0].shape[DRF_RES_CPU] = INFINITY;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_ASSET, &r), -EINVAL);
	/* unlimited tasks that need nothing shared */
	d[0].shape[DRF_RES_CPU] = 0;
	d[0].shape[DRF_RES_MEMORY] = 0;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_DRF, &r), -EINVAL);
	assert_int_equal(drf_allocate_discrete(&p, &r), -EINVAL);
	d[0].shape[DRF_RES_CPU] = 1;
	d[0].max_units = 0;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_DRF, &r), -EINVAL);
	d[0].max_units = 1;
	p.capacity[DRF_RES_CPU] = -1;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_DRF, &r), -EINVAL);
	p.capacity[DRF_RES_CPU] = 9;
	assert_int_equal(drf_allocate(&p, DRF_NPOLICY, &r), -EINVAL);
}

/* The discrete variant refuses to hand out absurd numbers of tasks. */
static void test_discrete_too_many(void **state)
{
	struct drf_demand d[] = { t_task(1, 1e-9, 0, INFINITY) };
	struct drf_problem p = t_problem(9, 18 * G, d, 1);
	struct drf_result r;

	(void)state;
	assert_int_equal(drf_allocate_discrete(&p, &r), -E2BIG);
}

/*
 * Ties go to the lower share, then to config order; a tenant whose next task no
 * longer fits is skipped while the others go on. A's tasks take 3 cpu, B's 1 cpu,
 * equal weights, shares in units of 1/C.
 */
static void check_discrete_cpu(double cap, double want_a, double want_b)
{
	struct drf_demand d[] = { t_task(1, 3, 0, INFINITY), t_task(1, 1, 0, INFINITY) };
	struct drf_problem p = t_problem(cap, 0, d, 2);
	struct drf_result r;

	assert_int_equal(drf_allocate_discrete(&p, &r), 0);
	assert_close(r.shares[0].units, want_a, 0, "A tasks");
	assert_close(r.shares[1].units, want_b, 0, "B tasks");
	assert_int_equal(r.shares[0].limited_by, DRF_RES_CPU);
	assert_int_equal(r.shares[1].limited_by, DRF_RES_CPU);
	drf_result_free(&r);
}

static void test_discrete_ties_and_skip(void **state)
{
	(void)state;
	/* C = 4: tie at 0 -> A (3); B (1/4, used 4); nothing else fits. */
	check_discrete_cpu(4, 1, 1);
	/*
	 * C = 7: A (3/7, used 3); B 1/7, 2/7, 3/7 (used 6); tie at 3/7 -> A, whose
	 * next task needs 3 > 1 free: skipped; B takes the last cpu (4/7). Stopping at
	 * the first misfit, as Algorithm 1 is printed, would leave B at 3.
	 */
	check_discrete_cpu(7, 1, 4);
	/*
	 * C = 9: A (3/9); B 1/9..3/9 (used 6); tie at 3/9 -> A first: fits (used 9).
	 * Had the tie gone to B it would end A 1, B 6.
	 */
	check_discrete_cpu(9, 2, 3);
}

/* Bounded task counts stop a tenant at its demand. */
static void test_task_count_cap(void **state)
{
	struct drf_demand d[] = { t_task(1, 1, 4 * G, 2), t_task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = t_problem(9, 18 * G, d, 2);
	struct drf_result r;

	(void)state;
	/* A is capped at 2 tasks (share 4/9 < 2/3); B then takes the rest of cpu: 7/3. */
	assert_int_equal(drf_allocate(&p, DRF_POLICY_DRF, &r), 0);
	assert_close(r.shares[0].units, 2, EXACT, "A tasks");
	assert_int_equal(r.shares[0].limited_by, DRF_LIMIT_DEMAND);
	assert_close(r.shares[1].units, 7.0 / 3, EXACT, "B tasks");
	drf_result_free(&r);
	assert_int_equal(drf_allocate_discrete(&p, &r), 0);
	assert_true(r.shares[0].units == 2);
	assert_int_equal(r.shares[0].limited_by, DRF_LIMIT_DEMAND);
	assert_true(r.shares[1].units == 2);
	drf_result_free(&r);
}

/*
 * Ties go to the cap: 10 cpu; A a bounded demand of 5 cpu, B unlimited tasks of
 * 1 cpu, equal weights. A's demand is met at s = 1/2, exactly when cpu runs out
 * (A 5 cpu, B 5 tasks): A is met, not stopped by cpu.
 */
static void test_tie_goes_to_cap(void **state)
{
	struct drf_demand d[] = { t_task(1, 5, 0, 1), t_task(1, 1, 0, INFINITY) };
	struct drf_problem p = t_problem(10, 0, d, 2);
	struct drf_result r;

	(void)state;
	for (int pol = 0; pol < DRF_POLICY_PER_RESOURCE; pol++) {
		assert_int_equal(drf_allocate(&p, pol, &r), 0);
		assert_close(r.shares[0].units, 1, EXACT, "A met");
		assert_int_equal(r.shares[0].limited_by, DRF_LIMIT_DEMAND);
		assert_close(r.shares[1].units, 5, EXACT, "B tasks");
		assert_int_equal(r.shares[1].limited_by, DRF_RES_CPU);
		assert_close(r.unallocated[DRF_RES_CPU], 0, 0, "cpu left");
		drf_result_free(&r);
	}
}

/*
 * A weight so small that a tenant's growth per resource rounds to 0 (asset: the
 * smallest double over two equal shares of memory and io-read, which no one
 * else needs): no resource would ever run out for it. The engine stops it where
 * it is (the old one read past its list of caps and crashed); the answer is
 * feasible and the other tenant is unaffected.
 */
static void test_weight_underflow(void **state)
{
	struct drf_demand d[] = { t_task(0x1p-1074, 0, 1, INFINITY), t_task(1, 1, 0, INFINITY) };
	struct drf_problem p = t_problem(10, 10, d, 2);
	struct drf_result r;

	(void)state;
	d[0].shape[DRF_RES_IO_READ] = 1;
	p.capacity[DRF_RES_IO_READ] = 10;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_ASSET, &r), 0);
	assert_true(r.shares[0].units >= 0 && r.shares[0].units <= 10);
	assert_close(r.shares[1].units, 10, EXACT, "B takes the cpu");
	drf_result_free(&r);
}

/*
 * The engine, reused across problems that grow and shrink in n and m under all
 * three policies, gives bit-identical results to fresh drf_allocate() calls;
 * a malformed problem is refused and leaves it usable.
 */
static void test_engine_reuse(void **state)
{
	static const size_t sizes[] = { 5, 300, 1, 2000, 40, 0, 700, 3 };
	struct drf_demand *d = calloc(2000, sizeof(*d));
	struct rng g = { 7 };
	struct drf_engine e;

	(void)state;
	assert_non_null(d);
	assert_int_equal(drf_engine_init(&e), 0);
	for (size_t round = 0; round < 3 * sizeof(sizes) / sizeof(sizes[0]); round++) {
		size_t n = sizes[round % (sizeof(sizes) / sizeof(sizes[0]))];
		struct drf_problem p = { .n = n, .demands = d };
		int m = 1 + (int)(round % DRF_NRES);

		for (int r = 0; r < DRF_NRES; r++)
			p.capacity[r] = r < m ? rng_log(&g, 1, 1e12) : 0;
		for (size_t i = 0; i < n; i++) {
			d[i].weight = rng_log(&g, 0.1, 100);
			d[i].max_units = rng_unit(&g) < 0.5 ? 1 : INFINITY;
			for (int r = 0; r < DRF_NRES; r++)
				d[i].shape[r] = rng_unit(&g) < 0.2 ? 0 : rng_log(&g, 1e-3, 1) *
							 (p.capacity[r] > 0 ? p.capacity[r] : 1);
			d[i].shape[round % DRF_NRES % m] += 1; /* needs something shared */
		}
		for (int pol = 0; pol < DRF_NPOLICY; pol++) {
			struct drf_result fresh, reused;

			assert_int_equal(drf_allocate(&p, pol, &fresh), 0);
			assert_int_equal(drf_engine_allocate(&e, &p, pol, &reused), 0);
			assert_int_equal(reused.n, n);
			assert_memory_equal(fresh.unallocated, reused.unallocated,
					    sizeof(fresh.unallocated));
			if (n)
				assert_memory_equal(fresh.shares, reused.shares,
						    n * sizeof(*fresh.shares));
			drf_result_free(&fresh);
		}
		if (n) {
			struct drf_result r;
			double w = d[0].weight;

			d[0].weight = -1;
			assert_int_equal(drf_engine_allocate(&e, &p, DRF_POLICY_DRF, &r), -EINVAL);
			d[0].weight = w;
		}
	}
	drf_engine_free(&e);
	free(d);
}

/*
 * The reference: the engine as it was before the bucketed filling (commit
 * ef3cfd1), kept whole here to check the new one against: one event at a time,
 * caps in radix-sorted order, per-resource lists of the tenants that need each
 * resource, and per-resource water-filling as it still is.
 */
static inline double ref_max2(double a, double b)
{
	return a > b ? a : b;
}

static inline double ref_min2(double a, double b)
{
	return a < b ? a : b;
}

/* Relative slack for "this resource is used up" and "this copy still fits". */
#define REF_FIT_EPS 1e-12

static void *ref_scratch(size_t size, void **own)
{
	return *own = malloc(size + 1);
}

/* Carves size bytes, 16-aligned, off *at. */
static void *ref_carve(char **at, size_t size)
{
	void *p = *at;

	*at += (size + 15) & ~(size_t)15;
	return p;
}

/* Participating resources, in index order. */
struct ref_resset {
	int m;
	int res[DRF_NRES];
};

static int ref_validate(const struct drf_problem *p, struct ref_resset *rs)
{
	rs->m = 0;
	for (int r = 0; r < DRF_NRES; r++) {
		double c = p->capacity[r];

		if (!(c >= 0) || !isfinite(c))
			return -EINVAL;
		if (c > 0)
			rs->res[rs->m++] = r;
	}
	if (p->n > 0 && !p->demands)
		return -EINVAL;
	if (p->n > UINT32_MAX)
		return -EINVAL;
	for (size_t i = 0; i < p->n; i++) {
		const struct drf_demand *d = &p->demands[i];
		bool needs = false;

		if (!(d->weight > 0) || !isfinite(d->weight))
			return -EINVAL;
		if (!(d->max_units > 0) || isnan(d->max_units))
			return -EINVAL;
		for (int k = 0; k < rs->m; k++) {
			double v = d->shape[rs->res[k]];

			if (!(v >= 0) || !isfinite(v))
				return -EINVAL;
			if (v > 0)
				needs = true;
		}
		/* An unlimited demand that needs nothing would take infinitely many copies. */
		if (!needs && isinf(d->max_units))
			return -EINVAL;
	}
	return 0;
}


static double ref_shape_dominant(const struct drf_problem *p, const struct drf_demand *d,
				 int *ret_res)
{
	double best = 0;
	int best_r = -1;

	for (int r = 0; r < DRF_NRES; r++) {
		double u;

		if (!(p->capacity[r] > 0))
			continue;
		u = d->shape[r] / p->capacity[r];
		if (best_r < 0 || u > best) {
			best = u;
			best_r = r;
		}
	}
	if (ret_res)
		*ret_res = best_r;
	return best;
}

/* Sets dominant_share and dominant_res of a share from its allocation. */
static void ref_finish_share(const struct drf_problem *p, const struct drf_demand *d,
			 struct drf_share *s)
{
	double best = 0;
	int best_r = -1;

	for (int r = 0; r < DRF_NRES; r++) {
		double v;

		if (!(p->capacity[r] > 0))
			continue;
		v = s->alloc[r] / p->capacity[r];
		if (v > best) {
			best = v;
			best_r = r;
		}
	}
	if (best_r < 0)
		ref_shape_dominant(p, d, &best_r);
	s->dominant_share = best;
	s->dominant_res = best_r;
}

static void ref_finish_result(const struct drf_problem *p, struct drf_result *out)
{
	double used[DRF_NRES] = { 0 };

	for (size_t i = 0; i < out->n; i++) {
		for (int r = 0; r < DRF_NRES; r++)
			used[r] += out->shares[i].alloc[r];
		ref_finish_share(p, &p->demands[i], &out->shares[i]);
	}
	for (int r = 0; r < DRF_NRES; r++)
		out->unallocated[r] =
			p->capacity[r] > 0 ? ref_max2(0, p->capacity[r] - used[r]) : 0;
}

/*
 * Stable LSD radix sort of (key, index) pairs by key. The keys are non-negative
 * doubles (or +inf), whose IEEE-754 bit patterns sort like the unsigned integers
 * they spell, so 11-bit digits take 6 passes, skipping digits all keys share.
 * Stability keeps equal keys in config order.
 */

struct ref_sortkey {
	uint64_t bits;
	uint32_t idx;
};

#define ref_RADIX_BITS 11
#define ref_RADIX_SIZE (1u << ref_RADIX_BITS)

static struct ref_sortkey *ref_radix_sort(struct ref_sortkey *a, struct ref_sortkey *tmp, size_t n)
{
	_Static_assert(sizeof(double) == sizeof(uint64_t), "IEEE-754 doubles");
	size_t count[ref_RADIX_SIZE];

	for (unsigned shift = 0; shift < 64; shift += ref_RADIX_BITS) {
		size_t sum = 0;
		struct ref_sortkey *t;

		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(a[i].bits >> shift) & (ref_RADIX_SIZE - 1)]++;
		if (n == 0 || count[(a[0].bits >> shift) & (ref_RADIX_SIZE - 1)] == n)
			continue;
		for (size_t d = 0; d < ref_RADIX_SIZE; d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[(a[i].bits >> shift) & (ref_RADIX_SIZE - 1)]++] = a[i];
		t = a;
		a = tmp;
		tmp = t;
	}
	return a;
}

static uint64_t ref_key_bits(double v)
{
	uint64_t b;

	memcpy(&b, &v, sizeof(b));
	return b;
}


struct ref_filler {
	const struct drf_problem *p;
	struct drf_share *shares;
	struct ref_resset rs;
	size_t n, active;
	double *delta;    /* per tenant: the metric equalized (dominant or summed share) */
	double *coef;     /* n x m, row-major: w_i * u_ir / delta_i */
	bool *frozen;
	uint32_t *list;   /* per resource (CSR): tenants with u_ir > 0 */
	uint32_t list_start[DRF_NRES + 1];
	double used[DRF_NRES];    /* F_r: use by frozen tenants */
	double slope[DRF_NRES];   /* K_r: sum of coef over active tenants */
	double removed[DRF_NRES]; /* coef taken out of K_r since it was last summed */
	size_t nactive[DRF_NRES];      /* active tenants needing r */
	bool saturated[DRF_NRES];
};

static void ref_resum_slope(struct ref_filler *f, int k)
{
	double s = 0;

	for (uint32_t j = f->list_start[k]; j < f->list_start[k + 1]; j++)
		if (!f->frozen[f->list[j]])
			s += f->coef[(size_t)f->list[j] * f->rs.m + k];
	f->slope[k] = s;
	f->removed[k] = 0;
}

static void ref_freeze(struct ref_filler *f, size_t i, double level, int limited_by)
{
	const struct drf_demand *d = &f->p->demands[i];
	struct drf_share *s = &f->shares[i];
	int m = f->rs.m;

	f->frozen[i] = true;
	f->active--;
	if (limited_by == DRF_LIMIT_DEMAND)
		s->units = d->max_units;
	else
		s->units = ref_min2(d->max_units, d->weight * level / f->delta[i]);
	s->limited_by = limited_by;
	for (int k = 0; k < m; k++) {
		int r = f->rs.res[k];
		double c = f->coef[i * m + k];

		s->alloc[r] = s->units * d->shape[r];
		if (c <= 0)
			continue;
		f->used[k] += c * level;
		if (--f->nactive[k] == 0) {
			f->slope[k] = 0;
			f->removed[k] = 0;
			continue;
		}
		f->slope[k] -= c;
		f->removed[k] += c;
		/*
		 * Taking large terms out of a sum leaves their rounding error (2^-53 of
		 * them) behind; once the remainder is 2^-16 of what was removed, that error
		 * could reach 2^-37 of it, so add the remainder up afresh.
		 */
		if (f->slope[k] < f->removed[k] * 0x1p-16)
			ref_resum_slope(f, k);
	}
}

static int ref_fill(const struct drf_problem *p, const struct ref_resset *rs,
		    enum drf_policy policy,
		struct drf_result *out)
{
	struct ref_filler f = { .p = p, .shares = out->shares, .n = p->n, .rs = *rs };
	struct ref_sortkey *keys, *tmp, *sorted;
	size_t ncap = 0, next = 0, nnz = 0, um = (size_t)rs->m;
	int m = rs->m;
	double level = 0;
	void *own;
	char *at = ref_scratch(16 * 6 + f.n * (sizeof(*f.delta) + um * sizeof(*f.coef) +
					       sizeof(*f.frozen) + 2 * sizeof(*keys) +
					       um * sizeof(*f.list)), &own);

	if (!at)
		return -ENOMEM;
	f.delta = ref_carve(&at, f.n * sizeof(*f.delta));
	f.coef = ref_carve(&at, f.n * um * sizeof(*f.coef));
	f.frozen = ref_carve(&at, f.n * sizeof(*f.frozen));
	keys = ref_carve(&at, f.n * sizeof(*keys));
	tmp = ref_carve(&at, f.n * sizeof(*tmp));
	f.list = ref_carve(&at, f.n * um * sizeof(*f.list));
	memset(f.frozen, 0, f.n * sizeof(*f.frozen));

	for (size_t i = 0; i < f.n; i++) {
		const struct drf_demand *d = &p->demands[i];
		double delta = 0;

		for (int k = 0; k < m; k++) {
			int r = f.rs.res[k];
			double u = d->shape[r] / p->capacity[r];

			f.coef[i * m + k] = u; /* scaled below, once delta is known */
			if (policy == DRF_POLICY_ASSET)
				delta += u;
			else
				delta = ref_max2(delta, u);
		}
		f.delta[i] = delta;
		if (delta == 0) {
			/* Needs nothing that is shared: fully served at once. */
			memset(&out->shares[i], 0, sizeof(out->shares[i]));
			out->shares[i].units = d->max_units;
			out->shares[i].limited_by = DRF_LIMIT_DEMAND;
			f.frozen[i] = true;
			for (int k = 0; k < m; k++)
				f.coef[i * m + k] = 0;
			continue;
		}
		f.active++;
		for (int k = 0; k < m; k++) {
			double c = d->weight * (f.coef[i * m + k] / delta);

			f.coef[i * m + k] = c;
			if (c > 0) {
				f.slope[k] += c;
				f.nactive[k]++;
			}
		}
		if (isfinite(d->max_units)) {
			keys[ncap].bits = ref_key_bits(d->max_units * delta / d->weight);
			keys[ncap].idx = (uint32_t)i;
			ncap++;
		}
	}
	/* Per-resource lists of the tenants that need each resource (CSR). */
	for (int k = 0; k < m; k++) {
		f.list_start[k] = (uint32_t)nnz;
		nnz += f.nactive[k];
	}
	f.list_start[m] = (uint32_t)nnz;
	{
		uint32_t fillpos[DRF_NRES];

		memcpy(fillpos, f.list_start, sizeof(fillpos));
		for (size_t i = 0; i < f.n; i++)
			for (int k = 0; k < m; k++)
				if (f.coef[i * m + k] > 0)
					f.list[fillpos[k]++] = (uint32_t)i;
	}
	sorted = ref_radix_sort(keys, tmp, ncap);

	while (f.active > 0) {
		double cap_level = INFINITY, sat_level = INFINITY;
		int sat_k = -1;

		while (next < ncap && f.frozen[sorted[next].idx])
			next++;
		if (next < ncap)
			memcpy(&cap_level, &sorted[next].bits, sizeof(cap_level));
		for (int k = 0; k < m; k++) {
			double l;

			if (f.saturated[k] || f.nactive[k] == 0)
				continue;
			l = (1.0 - f.used[k]) / f.slope[k];
			if (l < level)
				l = level; /* already full, up to rounding */
			if (l < sat_level) {
				sat_level = l;
				sat_k = k;
			}
		}
		if (cap_level <= sat_level) {
			/* Ties go to the cap: that tenant is served in full. */
			level = cap_level;
			ref_freeze(&f, sorted[next].idx, level, DRF_LIMIT_DEMAND);
			next++;
			continue;
		}
		/* Every active tenant has a resource it needs, so sat_k >= 0 here. */
		level = sat_level;
		f.saturated[sat_k] = true;
		for (uint32_t j = f.list_start[sat_k]; j < f.list_start[sat_k + 1]; j++)
			if (!f.frozen[f.list[j]])
				ref_freeze(&f, f.list[j], level, f.rs.res[sat_k]);
	}
	free(own);
	return 0;
}

/*
 * Weighted max-min water-filling of each resource on its own. A tenant's demand
 * on r is max_units * shape_r (infinite for unlimited tasks).
 */

static int ref_water_fill(const struct drf_problem *p, const struct ref_resset *prs,
		      struct drf_result *out)
{
	struct ref_sortkey *keys, *tmp, *sorted;
	const struct ref_resset rs = *prs;
	double *suffix_w;
	void *own;
	char *at = ref_scratch(16 * 3 + p->n * 2 * sizeof(*keys) +
				       (p->n + 1) * sizeof(*suffix_w), &own);

	if (!at)
		return -ENOMEM;
	keys = ref_carve(&at, p->n * sizeof(*keys));
	tmp = ref_carve(&at, p->n * sizeof(*tmp));
	suffix_w = ref_carve(&at, (p->n + 1) * sizeof(*suffix_w));

	for (int k = 0; k < rs.m; k++) {
		int r = rs.res[k];
		double left = p->capacity[r];
		size_t cnt = 0;

		for (size_t i = 0; i < p->n; i++) {
			const struct drf_demand *d = &p->demands[i];

			if (d->shape[r] > 0) {
				keys[cnt].bits =
					ref_key_bits(d->shape[r] * d->max_units / d->weight);
				keys[cnt].idx = (uint32_t)i;
				cnt++;
			}
		}
		sorted = ref_radix_sort(keys, tmp, cnt);
		/* Summed from the back so that no weight is ever subtracted. */
		suffix_w[cnt] = 0;
		for (size_t j = cnt; j-- > 0;)
			suffix_w[j] = suffix_w[j + 1] + p->demands[sorted[j].idx].weight;
		for (size_t j = 0; j < cnt; j++) {
			const struct drf_demand *d = &p->demands[sorted[j].idx];
			double fair = left / suffix_w[j], want;

			memcpy(&want, &sorted[j].bits, sizeof(want));
			if (want <= fair) {
				double a = d->shape[r] * d->max_units;

				out->shares[sorted[j].idx].alloc[r] = a;
				left = ref_max2(0, left - a);
				continue;
			}
			for (; j < cnt; j++)
				out->shares[sorted[j].idx].alloc[r] =
					p->demands[sorted[j].idx].weight * fair;
		}
	}
	/* The usable part: as many copies of the shape as every resource allows. */
	for (size_t i = 0; i < p->n; i++) {
		const struct drf_demand *d = &p->demands[i];
		struct drf_share *s = &out->shares[i];
		double units = d->max_units;
		int lim = DRF_LIMIT_DEMAND;

		for (int k = 0; k < rs.m; k++) {
			int r = rs.res[k];
			double u;

			if (d->shape[r] <= 0)
				continue;
			u = s->alloc[r] / d->shape[r];
			if (u < units * (1 - REF_FIT_EPS)) {
				units = u;
				lim = r;
			}
		}
		s->units = ref_min2(units, d->max_units);
		s->limited_by = lim;
	}
	free(own);
	return 0;
}

static int ref_allocate(const struct drf_problem *p, enum drf_policy policy, struct drf_result *ret)
{
	struct drf_result out = { .n = p->n };
	struct ref_resset rs;
	int err = ref_validate(p, &rs);

	if (err < 0)
		return err;
	out.shares = calloc(p->n + 1, sizeof(*out.shares));
	assert_non_null(out.shares);
	if (policy == DRF_POLICY_PER_RESOURCE)
		err = ref_water_fill(p, &rs, &out);
	else
		err = ref_fill(p, &rs, policy, &out);
	assert_int_equal(err, 0);
	ref_finish_result(p, &out);
	*ret = out;
	return 0;
}

/*
 * Random instances for the comparison: any subset of the resources; equal or
 * widely spread weights; bounded demands, counted and unlimited tasks; zero and
 * -0 entries; NaN, inf and junk on resources that take no part; shapes in
 * proportion to the capacities (resources used up at the same level); groups of
 * identical tenants (equal cap levels); sizes up to 20000, so that buckets hold
 * many tenants and a bucket taken one by one is radix-sorted.
 */
static void cmp_gen(struct rng *g, struct drf_problem *p, struct drf_demand *d, size_t nmax)
{
	size_t n = (size_t)rng_int(g, 1, (int)nmax);
	int m = rng_int(g, 1, DRF_NRES), chosen = 0;
	bool equal_w = rng_unit(g) < 0.3, proportional = rng_unit(g) < 0.15;
	double groups = rng_unit(g) < 0.2 ? rng_log(g, 1, 50) : 0;

	memset(p, 0, sizeof(*p));
	while (chosen < m) {
		int r = rng_int(g, 0, DRF_NRES - 1);

		if (p->capacity[r] > 0)
			continue;
		p->capacity[r] = rng_unit(g) < 0.2 ? 1 : rng_log(g, 0.5, 1e13);
		chosen++;
	}
	for (size_t i = 0; i < n; i++) {
		double kind = rng_unit(g), scale = rng_log(g, 1e-7, 0.5);
		bool any = false;

		if (groups > 0 && i > 0 && rng_unit(g) < 1 - 1 / groups) {
			d[i] = d[rng_int(g, 0, (int)i - 1)];
			continue;
		}
		d[i].weight = equal_w ? 1 : rng_log(g, 0.01, 1e4);
		for (int r = 0; r < DRF_NRES; r++) {
			double c = p->capacity[r], z = rng_unit(g);

			if (c == 0) {
				static const double junk[] = { NAN, INFINITY, -1, 0, 1e300 };

				d[i].shape[r] = junk[rng_int(g, 0, 4)];
				continue;
			}
			if (proportional)
				d[i].shape[r] = z < 0.1 ? 0 : c * scale;
			else if (kind < 0.4)
				d[i].shape[r] =
					z < 0.15 ? 0 : z < 0.2 ? -0.0 : c * rng_log(g, 1e-6, 3);
			else
				d[i].shape[r] = z < 0.2 ? 0 : c * rng_log(g, 1e-7, 0.5);
			any = any || d[i].shape[r] > 0;
		}
		if (kind < 0.4)
			d[i].max_units = rng_unit(g) < 0.9 ? 1 : rng_log(g, 0.1, 10);
		else
			d[i].max_units = kind < 0.7 ? INFINITY : floor(rng_log(g, 1, 5000));
		if (!any && isinf(d[i].max_units))
			d[i].max_units = 1;
	}
	p->n = n;
	p->demands = d;
}

/* Within rel of the reference, or abs_tol of it. */
static bool cmp_close(double got, double want, double rel, double abs_tol)
{
	return got == want || fabs(got - want) <= fmax(fabs(want) * rel, abs_tol);
}

/* Used up in the reference's answer (to rounding). */
static bool cmp_full(const struct drf_problem *p, const struct drf_result *want, int r)
{
	return r >= 0 && want->unallocated[r] <= p->capacity[r] * 1e-9;
}

/*
 * Tenant i's limited_by or dominant_res differs from the reference's: only
 * where both are right, to rounding.
 */
static void cmp_check_tie(const struct drf_problem *p, int pol, const struct drf_result *want,
			  size_t i, const struct drf_share *a, const struct drf_share *b)
{
	const struct drf_demand *d = &p->demands[i];

	if (a->limited_by != b->limited_by) {
		bool at_cap = cmp_close(a->units, d->max_units, 1e-9, 0);
		bool ok = pol != DRF_POLICY_PER_RESOURCE &&
			  (a->limited_by == DRF_LIMIT_DEMAND || cmp_full(p, want, a->limited_by)) &&
			  (b->limited_by != DRF_LIMIT_DEMAND || at_cap) &&
			  (a->limited_by != DRF_LIMIT_DEMAND || at_cap);

		if (!ok)
			fail_msg("tenant %zu, policy %d: limited by %d, the reference says %d "
				 "(units %.17g of %.17g)", i, pol, a->limited_by, b->limited_by,
				 a->units, d->max_units);
	}
	if (a->dominant_res != b->dominant_res) {
		int x = a->dominant_res, y = b->dominant_res;

		/* Both resources hold the same share of the tenant's allocation. */
		if (x < 0 || y < 0 ||
		    !cmp_close(a->alloc[x] / p->capacity[x], a->alloc[y] / p->capacity[y], 1e-12,
			       0))
			fail_msg("tenant %zu, policy %d: dominant resource %d, the reference "
				 "says %d", i, pol, x, y);
	}
}

/*
 * The tolerance: 1e-10 of a resource's capacity, on every allocation, on the
 * unallocated capacity and (as a share) on the dominant share and on the units.
 * The reference's own rounding reaches 6e-11 on these instances: it leaves that
 * much of a used-up resource unallocated where the engine leaves 1e-15 or
 * nothing (its slopes are summed afresh at 2^-16 of what was taken out of them,
 * and rounding of up to 2^-37 of that stays). Relative to a tenant's own
 * allocation the difference can be larger: the last tenants to share a resource
 * split what the others left, and the rounding of the others' use lands on
 * their part.
 */
#define CMP_TOL 1e-10

static double cmp_worst_share, cmp_worst_rel, cmp_worst_unalloc;

static void cmp_tenant(const struct drf_problem *p, int k, int pol, size_t i,
		       const struct drf_share *a, const struct drf_share *b)
{
	/* Units as a share: units * the tenant's dominant share per unit. */
	double per_unit = 0, du;

	for (int r = 0; r < DRF_NRES; r++)
		if (p->capacity[r] > 0)
			per_unit = fmax(per_unit, p->demands[i].shape[r] / p->capacity[r]);
	du = fabs(a->units - b->units) * per_unit;
	if (isnan(du) || !(a->units == b->units || du <= CMP_TOL) ||
	    !(fabs(a->dominant_share - b->dominant_share) <= CMP_TOL))
		fail_msg("instance %d policy %d tenant %zu: units %.17g share %.17g, want %.17g "
			 "and %.17g", k, pol, i, a->units, a->dominant_share, b->units,
			 b->dominant_share);
	if (a->units != b->units) {
		cmp_worst_share = fmax(cmp_worst_share, du);
		cmp_worst_rel = fmax(cmp_worst_rel, fabs(a->units - b->units) / b->units);
	}
	for (int r = 0; r < DRF_NRES; r++)
		if (!cmp_close(a->alloc[r], b->alloc[r], 0, p->capacity[r] * CMP_TOL))
			fail_msg("instance %d policy %d tenant %zu: alloc[%d] %.17g, want %.17g", k,
				 pol, i, r, a->alloc[r], b->alloc[r]);
}

static size_t cmp_tenants, cmp_ties;

/* One instance under one policy: the engine's answer against the reference's. */
static void cmp_instance(struct drf_engine *e, const struct drf_problem *p, int k, int pol)
{
	struct drf_result want, got, fresh;
	size_t n = p->n;

	assert_int_equal(ref_allocate(p, pol, &want), 0);
	assert_int_equal(drf_engine_allocate(e, p, pol, &got), 0);
	/* drf_allocate() is bit-identical to the engine. */
	assert_int_equal(drf_allocate(p, pol, &fresh), 0);
	assert_memory_equal(fresh.shares, got.shares, n * sizeof(*got.shares));
	assert_memory_equal(fresh.unallocated, got.unallocated, sizeof(got.unallocated));
	drf_result_free(&fresh);
	if (pol == DRF_POLICY_PER_RESOURCE) {
		assert_memory_equal(want.shares, got.shares, n * sizeof(*got.shares));
		assert_memory_equal(want.unallocated, got.unallocated, sizeof(got.unallocated));
	}
	for (int r = 0; r < DRF_NRES; r++) {
		double diff = fabs(got.unallocated[r] - want.unallocated[r]);

		if (!(diff <= p->capacity[r] * CMP_TOL))
			fail_msg("instance %d policy %d: unallocated[%d] %.17g, want %.17g", k, pol,
				 r, got.unallocated[r], want.unallocated[r]);
		if (p->capacity[r] > 0)
			cmp_worst_unalloc = fmax(cmp_worst_unalloc, diff / p->capacity[r]);
	}
	for (size_t i = 0; i < n; i++) {
		const struct drf_share *a = &got.shares[i], *b = &want.shares[i];

		cmp_tenants++;
		cmp_tenant(p, k, pol, i, a, b);
		if (a->limited_by == b->limited_by && a->dominant_res == b->dominant_res)
			continue;
		cmp_ties++;
		cmp_check_tie(p, pol, &want, i, a, b);
	}
	drf_result_free(&want);
}

/*
 * The engine against the reference on random instances, every policy, within
 * CMP_TOL; the same limited_by and dominant_res but where two events tie to
 * rounding (the same allocation either way): a resource running out at a
 * tenant's cap level, two resources running out at the same level, two
 * resources dominant alike. Per-resource water-filling is the same code as
 * before, so its answers are bit-identical. Prints the largest differences.
 */
static void test_matches_reference(void **state)
{
	struct drf_demand *d = calloc(20000, sizeof(*d));
	struct rng g = { 20260517 };
	struct drf_engine e;

	(void)state;
	assert_non_null(d);
	assert_int_equal(drf_engine_init(&e), 0);
	for (int k = 0; k < 3000; k++) {
		/* Mostly small and middling, every 50th up to 3000, every 200th up to 20000. */
		size_t nmax = k % 200 == 0 ? 20000 : k % 50 == 0 ? 3000 : k % 3 == 0 ? 8 :
			      k % 3 == 1 ? 60 : 400;
		struct drf_problem p;

		cmp_gen(&g, &p, d, nmax);
		/* The reference knows the three filling policies; fairfam's are test_fairfam's. */
		for (int pol = 0; pol <= DRF_POLICY_PER_RESOURCE; pol++)
			cmp_instance(&e, &p, k, pol);
	}
	print_message("engine vs reference: %zu tenants; largest difference in units %.2e as a "
		      "share (%.2e relative), in unallocated capacity %.2e of it; %zu ties named "
		      "otherwise\n", cmp_tenants, cmp_worst_share, cmp_worst_rel,
		      cmp_worst_unalloc, cmp_ties);
	drf_engine_free(&e);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_e1_drf),
		cmocka_unit_test(test_e1_discrete),
		cmocka_unit_test(test_e2),
		cmocka_unit_test(test_e3),
		cmocka_unit_test(test_e4),
		cmocka_unit_test(test_e5),
		cmocka_unit_test(test_weighted_unbounded),
		cmocka_unit_test(test_per_resource_e1),
		cmocka_unit_test(test_zero_demand),
		cmocka_unit_test(test_nonparticipating),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_discrete_too_many),
		cmocka_unit_test(test_discrete_ties_and_skip),
		cmocka_unit_test(test_task_count_cap),
		cmocka_unit_test(test_tie_goes_to_cap),
		cmocka_unit_test(test_weight_underflow),
		cmocka_unit_test(test_engine_reuse),
		cmocka_unit_test(test_matches_reference),
	};

	return cmocka_run_group_tests_name("alloc", tests, NULL, NULL);
}
