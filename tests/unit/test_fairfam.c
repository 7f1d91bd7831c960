// SPDX-License-Identifier: MIT
/*
 * FDS, GFJ and CEEI (fairfam.h) on hand-solved instances: the seed's example
 * x + 3y <= 9, 4x + y <= 18 (E1: A's task (1 cpu, 4G), B's (3 cpu, 1G)) in closed
 * form, E2 and E3 for CEEI, the families' limits, the refused parameters, and
 * a profitable lie under CEEI. The random-instance properties are in test_props.c.
 *
 * E1's Pareto frontier: x + 3y = 9 for x <= 45/11 (cpu used up), 4x + y = 18 for
 * x >= 45/11 (memory), meeting at the vertex V = (45/11, 18/11) where both are.
 * Dominant shares per task: A 4/18 = 2/9 (memory), B 3/9 = 1/3 (cpu).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fairfam.h"
#include "testlib.h"

#define G (1024.0 * 1024 * 1024)
#define EXACT 1e-12

/* E1 under a policy: A's and B's task counts. */
static void e1(enum drf_policy pol, double beta, double lambda, double *x, double *y)
{
	struct drf_demand d[] = { t_task(1, 1, 4 * G, INFINITY), t_task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = t_problem(9, 18 * G, d, 2);
	struct drf_result r;

	p.family = (struct drf_family){ beta, lambda };
	assert_int_equal(drf_allocate(&p, pol, &r), 0);
	*x = r.shares[0].units;
	*y = r.shares[1].units;
	drf_result_free(&r);
}

/*
 * On the alpha-fair line (lambda = (1 - beta) / beta) FDS maximizes
 * sum_i gamma_i^(1-beta) / (1 - beta), gamma_A = 2x/9, gamma_B = y/3. On the cpu
 * segment x = 9 - 3y, so gamma_A = 2 - 2y/3 and the first-order condition
 * -(2/3) gamma_A^-beta + (1/3) gamma_B^-beta = 0 gives gamma_A = 2^(1/beta) gamma_B,
 * i.e. y = 6 / (2 + 2^(1/beta)), x = 9 - 3y. That point is on the segment while
 * y >= 18/11, i.e. 2^(1/beta) <= 5/3, beta >= 1 / log2(5/3) = 1.357; below, the
 * optimum is the vertex V (the memory segment's own stationary point lies beyond V).
 * GFJ likewise with gamma = (x, y): (x / y)^beta = 3, y = 9 / (3 + 3^(1/beta)),
 * on the segment for 3^(1/beta) <= 5/2, beta >= 1.199. CEEI (max log x + log y)
 * has its cpu-segment stationary point at x = 4.5 > 45/11 and its memory-segment
 * one at x = 2.25 < 45/11, so it is V; so are FDS and GFJ at beta = 1.
 */
static void test_e1_closed_forms(void **state)
{
	const double fb[] = { 1.5, 2, 3, 10, 100 }, gb[] = { 1.2, 2, 2.7095, 10, 100 };
	const double vb[] = { 0.5, 1, 1.2 };
	double x, y;

	(void)state;
	for (size_t k = 0; k < sizeof(fb) / sizeof(fb[0]); k++) {
		double b = fb[k], wy = 6 / (2 + pow(2, 1 / b));

		e1(DRF_POLICY_FDS, b, drf_family_alpha_lambda(b), &x, &y);
		assert_close(y, wy, EXACT, "FDS y = 6 / (2 + 2^(1/beta))");
		assert_close(x, 9 - 3 * wy, EXACT, "FDS x = 9 - 3y");
	}
	for (size_t k = 0; k < sizeof(gb) / sizeof(gb[0]); k++) {
		double b = gb[k], wy = 9 / (3 + pow(3, 1 / b));

		e1(DRF_POLICY_GFJ, b, drf_family_alpha_lambda(b), &x, &y);
		assert_close(y, wy, EXACT, "GFJ y = 9 / (3 + 3^(1/beta))");
		assert_close(x, 9 - 3 * wy, EXACT, "GFJ x = 9 - 3y");
	}
	for (size_t k = 0; k < sizeof(vb) / sizeof(vb[0]); k++) {
		e1(DRF_POLICY_FDS, vb[k], drf_family_alpha_lambda(vb[k]), &x, &y);
		assert_close(x, 45.0 / 11, EXACT, "FDS below beta 1.357: the vertex");
		assert_close(y, 18.0 / 11, EXACT, "FDS below beta 1.357: the vertex");
	}
	e1(DRF_POLICY_GFJ, 1, 0, &x, &y);
	assert_close(x, 45.0 / 11, EXACT, "GFJ at beta 1: the vertex");
	e1(DRF_POLICY_CEEI, 0, 0, &x, &y);
	assert_close(x, 45.0 / 11, EXACT, "CEEI: the vertex");
	assert_close(y, 18.0 / 11, EXACT, "CEEI: the vertex");
	/* GFJ at beta = ln 3 / ln 1.5 = 2.7095 lands on DRF's (3, 2) (the seed's "2.6"). */
	e1(DRF_POLICY_GFJ, log(3) / log(1.5), drf_family_alpha_lambda(log(3) / log(1.5)), &x, &y);
	assert_close(x, 3, 1e-12, "GFJ at beta = ln 3 / ln 1.5 is DRF");
	assert_close(y, 2, 1e-12, "GFJ at beta = ln 3 / ln 1.5 is DRF");
}

/* f on E1 from its definition, for the reference search below. */
static double e1_f(enum drf_policy pol, double beta, double lambda, double x, double y)
{
	double ga = pol == DRF_POLICY_FDS ? 2 * x / 9 : x, gb = pol == DRF_POLICY_FDS ? y / 3 : y;
	double a = pow(ga, 1 - beta) + pow(gb, 1 - beta), s = ga + gb;

	return (beta < 1 ? 1 : -1) * pow(a, 1 / beta) * pow(s, lambda - (1 - beta) / beta);
}

/* Golden-section search of f along one segment of the frontier, y in [lo, hi]. */
static double golden(enum drf_policy pol, double beta, double lambda, double lo, double hi,
		     double *ret_y)
{
	const double r = (sqrt(5) - 1) / 2;

	for (int k = 0; k < 200; k++) {
		double a = hi - r * (hi - lo), b = lo + r * (hi - lo);
		double xa = fmin(9 - 3 * a, (18 - a) / 4), xb = fmin(9 - 3 * b, (18 - b) / 4);

		if (e1_f(pol, beta, lambda, xa, a) < e1_f(pol, beta, lambda, xb, b))
			lo = a;
		else
			hi = b;
	}
	*ret_y = (lo + hi) / 2;
	return e1_f(pol, beta, lambda, fmin(9 - 3 * *ret_y, (18 - *ret_y) / 4), *ret_y);
}

/*
 * Off the alpha-fair line there is no closed form: the reference maximizes f
 * straight from its definition along each segment of the frontier (where a
 * Pareto-efficient optimum lies; f is quasi-concave there, so unimodal).
 */
static void test_e1_off_line(void **state)
{
	const struct {
		enum drf_policy pol;
		double beta, lambda;
	} c[] = {
		{ DRF_POLICY_FDS, 3, -1 },   { DRF_POLICY_FDS, 2, -0.6 }, { DRF_POLICY_FDS, 0.5, 1.5 },
		{ DRF_POLICY_FDS, 5, -0.9 }, { DRF_POLICY_GFJ, 3, -1 },   { DRF_POLICY_GFJ, 2, -0.6 },
		{ DRF_POLICY_GFJ, 0.5, 2 },  { DRF_POLICY_GFJ, 1.5, -0.5 },
	};

	(void)state;
	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		double x, y, y1, y2, f1, f2, wy;

		e1(c[k].pol, c[k].beta, c[k].lambda, &x, &y);
		f1 = golden(c[k].pol, c[k].beta, c[k].lambda, 1e-9, 18.0 / 11, &y1);
		f2 = golden(c[k].pol, c[k].beta, c[k].lambda, 18.0 / 11, 3 - 1e-9, &y2);
		wy = f1 > f2 ? y1 : y2;
		assert_close(y, wy, 1e-7, "off the line: y as the frontier search finds it");
		assert_close(x, fmin(9 - 3 * wy, (18 - wy) / 4), 1e-7, "off the line: x");
	}
}

/* Largest relative difference in task counts between two allocations. */
static double gap(const struct drf_result *a, const struct drf_result *b, size_t n)
{
	double worst = 0;

	for (size_t i = 0; i < n; i++)
		worst = fmax(worst, fabs(a->shares[i].units - b->shares[i].units) /
					    b->shares[i].units);
	return worst;
}

/*
 * The limits: as beta grows on the alpha-fair line FDS tends to weighted DRF and
 * GFJ to weighted equal task counts (DRF with weights w_i * delta_i: its level
 * gives x_i = w_i s); at beta = 1, lambda = 0 both are proportional fairness,
 * CEEI's sum_i w_i log x_i. Three tenants, three resources, unequal weights.
 */
static void test_limits(void **state)
{
	struct drf_demand d[3] = {
		t_task(1, 1, 4 * G, INFINITY), t_task(2, 3, 1 * G, INFINITY), t_task(1, 2, 2 * G, INFINITY)
	};
	struct drf_demand dj[3];
	struct drf_problem p = t_problem(20, 40 * G, d, 3), pj;
	struct drf_result drf, eq, r, pf;
	const double betas[] = { 2, 10, 100 };
	double prev_f = INFINITY, prev_g = INFINITY;

	(void)state;
	d[0].shape[DRF_RES_IO_READ] = 10e6;
	d[2].shape[DRF_RES_IO_READ] = 30e6;
	p.capacity[DRF_RES_IO_READ] = 200e6;
	memcpy(dj, d, sizeof(d));
	for (int i = 0; i < 3; i++)
		dj[i].weight = d[i].weight * drf_shape_dominant(&p, &d[i], NULL);
	pj = p;
	pj.demands = dj;
	assert_int_equal(drf_allocate(&p, DRF_POLICY_DRF, &drf), 0);
	assert_int_equal(drf_allocate(&pj, DRF_POLICY_DRF, &eq), 0);
	assert_close(eq.shares[0].units / d[0].weight, eq.shares[1].units / d[1].weight, 1e-12,
		     "the reference gives equal weighted task counts");
	for (size_t k = 0; k < 3; k++) {
		double gf, gg;

		p.family = (struct drf_family){ betas[k], drf_family_alpha_lambda(betas[k]) };
		assert_int_equal(drf_allocate(&p, DRF_POLICY_FDS, &r), 0);
		gf = gap(&r, &drf, 3);
		drf_result_free(&r);
		assert_int_equal(drf_allocate(&p, DRF_POLICY_GFJ, &r), 0);
		gg = gap(&r, &eq, 3);
		drf_result_free(&r);
		print_message("beta %g: FDS within %.2e of DRF, GFJ within %.2e of equal tasks\n",
			      betas[k], gf, gg);
		assert_true(gf < prev_f && gg < prev_g);
		prev_f = gf;
		prev_g = gg;
	}
	assert_le_tol(prev_f, 0.02, 0, 0, "FDS at beta 100 within 2% of DRF");
	assert_le_tol(prev_g, 0.02, 0, 0, "GFJ at beta 100 within 2% of equal tasks");
	assert_int_equal(drf_allocate(&p, DRF_POLICY_CEEI, &pf), 0);
	p.family = (struct drf_family){ 1, 0 };
	assert_int_equal(drf_allocate(&p, DRF_POLICY_FDS, &r), 0);
	assert_le_tol(gap(&r, &pf, 3), 1e-10, 0, 0, "FDS at beta 1 is proportional fairness");
	drf_result_free(&r);
	assert_int_equal(drf_allocate(&p, DRF_POLICY_GFJ, &r), 0);
	assert_le_tol(gap(&r, &pf, 3), 1e-10, 0, 0, "GFJ at beta 1 is proportional fairness");
	drf_result_free(&r);
	drf_result_free(&pf);
	drf_result_free(&drf);
	drf_result_free(&eq);
}

/* The parameters whose optimum need not be Pareto-efficient, refused with a reason. */
static void test_refusals(void **state)
{
	const struct {
		double beta, lambda;
		int want;
	} c[] = {
		{ 2, -0.5, 0 },     { 2, -0.7, 0 },   { 2, -0.4, -EDOM }, { 0.5, 1, 0 },
		{ 0.5, 2, 0 },      { 0.5, 0.9, -EDOM }, { 1, 0, 0 },     { 1, 0.1, -EDOM },
		{ 1, -0.1, -EDOM }, { 0, 0, -EDOM },  { -1, 0, -EDOM },  { 101, -1, -EDOM },
		{ 100, -0.99, 0 },  { NAN, 0, -EDOM }, { 2, NAN, -EDOM }, { 2, INFINITY, -EDOM },
	};
	struct drf_demand d[] = { t_task(1, 1, 4 * G, INFINITY), t_task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = t_problem(9, 18 * G, d, 2);

	(void)state;
	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		const char *why = NULL;
		struct drf_result r;
		int err = drf_family_check(c[k].beta, c[k].lambda, &why);

		assert_int_equal(err, c[k].want);
		assert_true((err == 0) == (why == NULL));
		p.family = (struct drf_family){ c[k].beta, c[k].lambda };
		if (c[k].beta == 0)
			continue; /* beta 0 in a problem means the defaults */
		err = drf_allocate(&p, DRF_POLICY_FDS, &r);
		assert_int_equal(err, c[k].want);
		if (err == 0)
			drf_result_free(&r);
	}
	/* Within the slack of the line counts as on it. */
	assert_int_equal(drf_family_check(3, -2.0 / 3 + 5e-10, NULL), 0);
}

/*
 * CEEI for E2 and E3, by hand. E2 (28 cpu, 56G; U1 (1, 2G), U2 (1, 4G)): the
 * stationary point of log x + log y on the memory line 2x + 4y = 56 is x = 14,
 * y = 7 and uses 21 cpu: that is the optimum, DRF's answer. E3 (9 cpu, 18G; A
 * bounded (2, 8G), B task (3, 1G)): on the cpu line 2a + 3b = 9 the stationary
 * point a = 2.25 is past A's demand, so A gets all of it and B 7/3 tasks (18 - 8
 * - 7/3 G of memory stay free): DRF's answer again.
 */
static void test_ceei_e2_e3(void **state)
{
	struct drf_demand e2[] = { t_task(1, 1, 2 * G, INFINITY), t_task(1, 1, 4 * G, INFINITY) };
	struct drf_demand e3[] = { t_task(1, 2, 8 * G, 1), t_task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p2 = t_problem(28, 56 * G, e2, 2), p3 = t_problem(9, 18 * G, e3, 2);
	struct drf_result r;

	(void)state;
	assert_int_equal(drf_allocate(&p2, DRF_POLICY_CEEI, &r), 0);
	assert_close(r.shares[0].units, 14, EXACT, "E2 U1 tasks");
	assert_close(r.shares[1].units, 7, EXACT, "E2 U2 tasks");
	assert_int_equal(r.shares[0].limited_by, DRF_RES_MEMORY);
	assert_close(r.unallocated[DRF_RES_CPU], 7, EXACT, "E2 cpu left");
	drf_result_free(&r);
	assert_int_equal(drf_allocate(&p3, DRF_POLICY_CEEI, &r), 0);
	assert_close(r.shares[0].units, 1, EXACT, "E3 A's whole demand");
	assert_int_equal(r.shares[0].limited_by, DRF_LIMIT_DEMAND);
	assert_close(r.shares[1].units, 7.0 / 3, EXACT, "E3 B 7/3 tasks");
	assert_close(r.shares[1].alloc[DRF_RES_CPU], 7, EXACT, "E3 B 7 cpu");
	assert_int_equal(r.shares[1].limited_by, DRF_RES_CPU);
	drf_result_free(&r);
}

/*
 * CEEI is not strategy-proof. Truthful, A gets the vertex, 45/11 = 4.0909 tasks.
 * Reporting a task of (3 cpu, 11G) instead, the program max log x + log y over
 * 3x + 3y <= 9, 11x + y <= 18 has x = y = 1.5 (both used up exactly): A is
 * handed 4.5 cpu and 16.5G, which run min(4.5 / 1, 16.5 / 4) = 4.125 of its
 * real tasks. More than the truth gets.
 */
static void test_ceei_profitable_lie(void **state)
{
	struct drf_demand d[] = { t_task(1, 3, 11 * G, INFINITY), t_task(1, 3, 1 * G, INFINITY) };
	struct drf_problem p = t_problem(9, 18 * G, d, 2);
	struct drf_result r;
	double x, y, useful;

	(void)state;
	e1(DRF_POLICY_CEEI, 0, 0, &x, &y);
	assert_close(x, 45.0 / 11, EXACT, "truthful A");
	assert_int_equal(drf_allocate(&p, DRF_POLICY_CEEI, &r), 0);
	assert_close(r.shares[0].alloc[DRF_RES_CPU], 4.5, EXACT, "the liar's cpu");
	assert_close(r.shares[0].alloc[DRF_RES_MEMORY], 16.5 * G, EXACT, "the liar's memory");
	useful = fmin(r.shares[0].alloc[DRF_RES_CPU] / 1,
		      r.shares[0].alloc[DRF_RES_MEMORY] / (4 * G));
	assert_close(useful, 4.125, EXACT, "real tasks the lie serves");
	assert_true(useful > x * (1 + 1e-6));
	drf_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_e1_closed_forms),
		cmocka_unit_test(test_e1_off_line),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_ceei_e2_e3),
		cmocka_unit_test(test_ceei_profitable_lie),
	};

	return cmocka_run_group_tests_name("fairfam", tests, NULL, NULL);
}
