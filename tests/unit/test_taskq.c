// SPDX-License-Identifier: MIT
/*
 * The task queue's pick (agent/core/taskq.c): Algorithm 1 with skipping on E1,
 * ties, refusals, and the same counts as drf_allocate_discrete() on random
 * instances with long queues of identical tasks.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "taskq.h"
#include "testlib.h"

#define G (1024.0 * 1024 * 1024)

/* Starts tasks until nothing fits; counts[i] is tenant i's running tasks. */
static void fill(const double cap[DRF_NRES], struct drf_tq_tenant *t, size_t n,
		 const double *queued, double *counts)
{
	double free[DRF_NRES];
	ssize_t i;

	memcpy(free, cap, sizeof(free));
	for (size_t k = 0; k < n; k++)
		counts[k] = 0;
	for (int step = 0; step < 100000; step++) {
		for (size_t k = 0; k < n; k++)
			if (queued && counts[k] >= queued[k])
				t[k].next = NULL;
		i = drf_tq_pick(cap, free, t, n);
		if (i < 0)
			return;
		for (int r = 0; r < DRF_NRES; r++) {
			t[i].held[r] += t[i].next[r];
			free[r] -= t[i].next[r];
		}
		counts[i]++;
	}
	fail_msg("the pick never stopped");
}

static void test_e1(void **state)
{
	double cap[DRF_NRES] = { [DRF_RES_CPU] = 9, [DRF_RES_MEMORY] = 18 * G };
	double a[DRF_NRES] = { [DRF_RES_CPU] = 1, [DRF_RES_MEMORY] = 4 * G };
	double b[DRF_NRES] = { [DRF_RES_CPU] = 3, [DRF_RES_MEMORY] = 1 * G };
	struct drf_tq_tenant t[2] = { { .weight = 1, .next = a }, { .weight = 1, .next = b } };
	double counts[2];

	(void)state;
	fill(cap, t, 2, NULL, counts);
	assert_int_equal((int)counts[0], 3);
	assert_int_equal((int)counts[1], 2);
	/* Scaled as the VM test runs it: 0.9 cores, 18 x 16M; (0.1, 64M) and (0.3, 16M). */
	cap[DRF_RES_CPU] = 0.9;
	cap[DRF_RES_MEMORY] = 18 * 16.0 * 1024 * 1024;
	a[DRF_RES_CPU] = 0.1;
	a[DRF_RES_MEMORY] = 64.0 * 1024 * 1024;
	b[DRF_RES_CPU] = 0.3;
	b[DRF_RES_MEMORY] = 16.0 * 1024 * 1024;
	memset(t, 0, sizeof(t));
	t[0] = (struct drf_tq_tenant){ .weight = 1, .next = a };
	t[1] = (struct drf_tq_tenant){ .weight = 1, .next = b };
	fill(cap, t, 2, NULL, counts);
	assert_int_equal((int)counts[0], 3);
	assert_int_equal((int)counts[1], 2);
	/* 3 tasks of 0.1 in 0.3 cores: 0.3 - 0.1 - 0.1 rounds below 0.1; the 3rd still fits. */
	memset(t, 0, sizeof(t));
	cap[DRF_RES_CPU] = 0.3;
	a[DRF_RES_MEMORY] = 0;
	t[0] = (struct drf_tq_tenant){ .weight = 1, .next = a };
	fill(cap, t, 1, NULL, counts);
	assert_int_equal((int)counts[0], 3);
}

/* When one of A's tasks ends, the freed room goes to A again (its share is lowest). */
static void test_e1_refill(void **state)
{
	double cap[DRF_NRES] = { [DRF_RES_CPU] = 9, [DRF_RES_MEMORY] = 18 };
	double a[DRF_NRES] = { [DRF_RES_CPU] = 1, [DRF_RES_MEMORY] = 4 };
	double b[DRF_NRES] = { [DRF_RES_CPU] = 3, [DRF_RES_MEMORY] = 1 };
	struct drf_tq_tenant t[2] = {
		{ .weight = 1, .held = { 2, 8 }, .next = a },
		{ .weight = 1, .held = { 6, 2 }, .next = b },
	};
	double free[DRF_NRES] = { 1, 8 };

	(void)state;
	/* A holds 8/18 = 0.44 < B's 6/9 = 0.67: A's next fits and goes first. */
	assert_int_equal(drf_tq_pick(cap, free, t, 2), 0);
	/* Skipping: B lowest but its task does not fit, A's does. */
	t[0].held[0] = 2;
	t[0].held[1] = 16;
	t[1].held[0] = 3;
	t[1].held[1] = 1;
	free[0] = 4;
	free[1] = 1;
	assert_int_equal(drf_tq_pick(cap, free, t, 2), 1);
	free[0] = 2;
	assert_int_equal(drf_tq_pick(cap, free, t, 2), -1);
}

static void test_ties_and_weights(void **state)
{
	double cap[DRF_NRES] = { [DRF_RES_CPU] = 10, [DRF_RES_MEMORY] = 10 };
	double v[DRF_NRES] = { [DRF_RES_CPU] = 1, [DRF_RES_MEMORY] = 1 };
	struct drf_tq_tenant t[3] = {
		{ .weight = 2, .held = { 4, 0 }, .next = v }, /* weighted 0.2, plain 0.4 */
		{ .weight = 1, .held = { 2, 0 }, .next = v }, /* weighted 0.2, plain 0.2 */
		{ .weight = 1, .held = { 2, 0 }, .next = v }, /* the same: config order */
	};
	double free[DRF_NRES] = { 2, 10 };

	(void)state;
	assert_int_equal(drf_tq_pick(cap, free, t, 3), 1);
	t[1].next = NULL;
	assert_int_equal(drf_tq_pick(cap, free, t, 3), 2);
	t[2].next = NULL;
	assert_int_equal(drf_tq_pick(cap, free, t, 3), 0);
	t[0].next = NULL;
	assert_int_equal(drf_tq_pick(cap, free, t, 3), -1);
}

static void test_refuse(void **state)
{
	double cap[DRF_NRES] = { [DRF_RES_CPU] = 0.9, [DRF_RES_MEMORY] = 288 };
	double v[DRF_NRES] = { 0 };
	int res;

	(void)state;
	v[DRF_RES_CPU] = 0.3;
	assert_null(drf_tq_refuse(cap, v, &res));
	v[DRF_RES_CPU] = 0.9; /* exactly the capacity */
	assert_null(drf_tq_refuse(cap, v, &res));
	v[DRF_RES_CPU] = 1;
	assert_non_null(drf_tq_refuse(cap, v, &res));
	assert_int_equal(res, DRF_RES_CPU);
	v[DRF_RES_CPU] = 0.1;
	v[DRF_RES_IO_READ] = 1000; /* not shared */
	assert_non_null(drf_tq_refuse(cap, v, &res));
	assert_int_equal(res, DRF_RES_IO_READ);
	memset(v, 0, sizeof(v));
	assert_non_null(drf_tq_refuse(cap, v, &res));
	v[DRF_RES_MEMORY] = NAN;
	assert_non_null(drf_tq_refuse(cap, v, &res));
	assert_int_equal(res, DRF_RES_MEMORY);
}

/* Random instances: identical tasks, unlimited queues: the same counts as Algorithm 1. */
static void test_random_vs_discrete(void **state)
{
	struct rng g = { 0x7a5c };

	(void)state;
	for (int iter = 0; iter < 2000; iter++) {
		size_t n = (size_t)rng_int(&g, 1, 6);
		struct drf_demand d[6];
		struct drf_tq_tenant t[6];
		double cap[DRF_NRES] = { 0 }, counts[6], queued[6];
		struct drf_problem p = { .n = n, .demands = d };
		struct drf_result res;
		bool bounded = rng_int(&g, 0, 1);

		for (int r = 0; r < DRF_NRES; r++)
			if (r < 3 || rng_int(&g, 0, 1))
				cap[r] = rng_range(&g, 1, 100);
		memcpy(p.capacity, cap, sizeof(cap));
		memset(t, 0, sizeof(t));
		for (size_t i = 0; i < n; i++) {
			memset(&d[i], 0, sizeof(d[i]));
			d[i].weight = rng_int(&g, 0, 2) ? 1 : rng_range(&g, 0.5, 3);
			for (int r = 0; r < DRF_NRES; r++)
				if (cap[r] > 0 && rng_int(&g, 0, 3))
					d[i].shape[r] = cap[r] * rng_log(&g, 0.005, 0.5);
			d[i].shape[DRF_RES_CPU] = cap[DRF_RES_CPU] * rng_log(&g, 0.005, 0.5);
			queued[i] = bounded ? rng_int(&g, 1, 40) : INFINITY;
			d[i].max_units = queued[i];
			t[i].weight = d[i].weight;
			t[i].next = d[i].shape;
		}
		assert_int_equal(drf_allocate_discrete(&p, &res), 0);
		fill(cap, t, n, queued, counts);
		for (size_t i = 0; i < n; i++) {
			if (counts[i] != res.shares[i].units)
				fail_msg("instance %d tenant %zu: %g tasks started, Algorithm 1 "
					 "gives %g", iter, i, counts[i], res.shares[i].units);
		}
		drf_result_free(&res);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_e1),
		cmocka_unit_test(test_e1_refill),
		cmocka_unit_test(test_ties_and_weights),
		cmocka_unit_test(test_refuse),
		cmocka_unit_test(test_random_vs_discrete),
	};

	return cmocka_run_group_tests_name("taskq", tests, NULL, NULL);
}
