// SPDX-License-Identifier: MIT
/*
 * The worked examples (E1-E5 of the README's policies), exactly, and the engine's
 * edge cases.
 * Expected numbers are written beside each test, derived by hand in the comment.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define G (1024.0 * 1024 * 1024)
#define EXACT 1e-12

static struct drf_demand task(double w, double cpu, double mem, double tasks)
{
	struct drf_demand d = { .weight = w, .max_units = tasks };

	d.shape[DRF_RES_CPU] = cpu;
	d.shape[DRF_RES_MEMORY] = mem;
	return d;
}

static struct drf_problem problem(double cpu, double mem, const struct drf_demand *d, size_t n)
{
	struct drf_problem p = { .n = n, .demands = d };

	p.capacity[DRF_RES_CPU] = cpu;
	p.capacity[DRF_RES_MEMORY] = mem;
	return p;
}

/*
 * E1: 9 cpu, 18G; A task (1, 4G), B task (3, 1G), unlimited, equal weights.
 * s = 2/3: A 3 tasks (3 cpu, 12G), B 2 tasks (6 cpu, 2G); cpu used up, 4G left.
 */
static void test_e1_drf(void **state)
{
	struct drf_demand d[] = { task(1, 1, 4 * G, INFINITY), task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = problem(9, 18 * G, d, 2);
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
	struct drf_demand d[] = { task(1, 1, 4 * G, INFINITY), task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = problem(9, 18 * G, d, 2);
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
	struct drf_demand d[] = { task(1, 1, 2 * G, INFINITY), task(1, 1, 4 * G, INFINITY) };
	struct drf_problem p = problem(28, 56 * G, d, 2);
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
	struct drf_demand d[] = { task(1, 2, 8 * G, 1), task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = problem(9, 18 * G, d, 2);
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
	struct drf_demand d[] = { task(1, 1, 4 * G, INFINITY), task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = problem(9, 18 * G, d, 2);
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
	struct drf_demand d[] = { task(1, 0, 0, 1), task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = problem(9, 18 * G, d, 2);
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
	struct drf_demand d[] = { task(1, 1, 4 * G, INFINITY), task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = problem(9, 0, d, 2);
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
	struct drf_demand d[] = { task(1, 1, 4 * G, INFINITY) };
	struct drf_problem p = problem(9, 18 * G, d, 1);
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
	struct drf_demand d[] = { task(1, 1e-9, 0, INFINITY) };
	struct drf_problem p = problem(9, 18 * G, d, 1);
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
	struct drf_demand d[] = { task(1, 3, 0, INFINITY), task(1, 1, 0, INFINITY) };
	struct drf_problem p = problem(cap, 0, d, 2);
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
	struct drf_demand d[] = { task(1, 1, 4 * G, 2), task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = problem(9, 18 * G, d, 2);
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
		cmocka_unit_test(test_engine_reuse),
	};

	return cmocka_run_group_tests_name("alloc", tests, NULL, NULL);
}
