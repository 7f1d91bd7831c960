// SPDX-License-Identifier: MIT
/*
 * Allocation time for 1k, 10k and 100k tenants x 5 resources: divisible DRF with
 * a reused engine (the daemon's case) and with fresh calls, the discrete
 * variant, and a radix sort of n fresh doubles as a yardstick, interleaved in one
 * process (one run of each per round) so that they see the same machine load.
 * Prints the median per kind and the ratios of the medians. No target is
 * asserted here; the targets are printed beside the figures. Then the convex
 * policies (fds and gfj at beta 2 on the alpha-fair line, ceei) against DRF on
 * the same problems, fresh calls.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "benchlib.h"
#include "alloc.h"

static uint64_t rng_state = 42;

static double unit(void)
{
	return bench_unit(&rng_state);
}

/*
 * n tenants over 5 resources: 40% bounded demands, 40% unlimited tasks, 20%
 * counted tasks, weights 0.1..100, some zero entries. Task sizes are set so that
 * the discrete variant hands out about 10 tasks per tenant.
 */
static void make_problem(struct drf_problem *p, struct drf_demand *d, size_t n)
{
	static const double caps[DRF_NRES] = { 64, 256.0 * (1 << 30), 2e9, 1e9, 10e9 };

	memcpy(p->capacity, caps, sizeof(caps));
	for (size_t i = 0; i < n; i++) {
		double kind = unit(), delta = 0;

		d[i].weight = exp(unit() * log(1000)) / 10;
		for (int r = 0; r < DRF_NRES; r++) {
			d[i].shape[r] = unit() < 0.15 ? 0 : caps[r] * exp(unit() * log(1e3)) / 1e3;
			delta = fmax(delta, d[i].shape[r] / caps[r]);
		}
		if (delta == 0) {
			d[i].shape[0] = 1;
			delta = 1 / caps[0];
		}
		/* one task (or the bounded demand) is ~1/(10 n) of its dominant resource */
		for (int r = 0; r < DRF_NRES; r++)
			d[i].shape[r] *= 1 / (10.0 * (double)n * delta) * (0.5 + unit());
		if (kind < 0.4) {
			for (int r = 0; r < DRF_NRES; r++)
				d[i].shape[r] *= 10; /* a bounded demand of ~10 tasks' worth */
			d[i].max_units = 1;
		} else {
			d[i].max_units = kind < 0.8 ? INFINITY : floor(1 + unit() * 30);
		}
	}
	p->n = n;
	p->demands = d;
}

/*
 * The yardstick: an LSD radix sort (11 bits a pass) of n doubles by their
 * IEEE-754 bit patterns mapped to unsigned order, on a fresh copy of unsorted
 * input each round, so that it pays for touching its memory as the engine does.
 */
static void radix_sort_doubles(double *a, double *tmp, size_t n)
{
	static size_t count[1 << 11];
	uint64_t *x = (uint64_t *)(void *)a, *y = (uint64_t *)(void *)tmp;

	for (size_t i = 0; i < n; i++) {
		uint64_t b;

		memcpy(&b, &a[i], sizeof(b));
		/* negative: flip all bits; positive: flip the sign bit */
		x[i] = b ^ ((b >> 63) ? ~0ULL : 1ULL << 63);
	}
	for (unsigned shift = 0; shift < 64; shift += 11) {
		size_t sum = 0;
		uint64_t *t;

		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(x[i] >> shift) & 2047]++;
		for (size_t d = 0; d < 2048; d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			y[count[(x[i] >> shift) & 2047]++] = x[i];
		t = x;
		x = y;
		y = t;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t b = x[i] ^ ((x[i] >> 63) ? 1ULL << 63 : ~0ULL);

		memcpy(&a[i], &b, sizeof(b));
	}
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static void bench(size_t n, int rounds)
{
	struct drf_demand *d = calloc(n, sizeof(*d));
	double *keys = malloc(n * sizeof(*keys)), *work = malloc(n * sizeof(*work));
	double *tmp = malloc(n * sizeof(*tmp));
	double *t_eng = malloc((size_t)rounds * sizeof(double));
	double *t_drf = malloc((size_t)rounds * sizeof(double));
	double *t_dis = malloc((size_t)rounds * sizeof(double));
	double *t_rx = malloc((size_t)rounds * sizeof(double));
	double m_eng, m_drf, m_dis, m_rx, tasks = 0;
	long flt_eng = 0, flt_drf = 0;
	struct drf_engine eng;
	struct drf_problem p = { 0 }; /* 5 resources: the sixth, net-ingress, capacity 0 */

	if (!d || !keys || !work || !tmp || !t_eng || !t_drf || !t_dis || !t_rx) {
		fprintf(stderr, "bench: out of memory\n");
		exit(1);
	}
	drf_engine_init(&eng);
	make_problem(&p, d, n);
	for (size_t i = 0; i < n; i++)
		keys[i] = unit();
	for (int k = 0; k < rounds; k++) {
		struct drf_result r;
		double t0;
		long f0;

		f0 = minflt();
		t0 = bench_now_us();
		if (drf_engine_allocate(&eng, &p, DRF_POLICY_DRF, &r) < 0) {
			fprintf(stderr, "bench: drf_engine_allocate failed\n");
			exit(1);
		}
		t_eng[k] = bench_now_us() - t0;
		flt_eng += minflt() - f0;

		f0 = minflt();
		t0 = bench_now_us();
		if (drf_allocate(&p, DRF_POLICY_DRF, &r) < 0) {
			fprintf(stderr, "bench: drf_allocate failed\n");
			exit(1);
		}
		t_drf[k] = bench_now_us() - t0;
		flt_drf += minflt() - f0;
		drf_result_free(&r);

		t0 = bench_now_us();
		if (drf_allocate_discrete(&p, &r) < 0) {
			fprintf(stderr, "bench: drf_allocate_discrete failed\n");
			exit(1);
		}
		t_dis[k] = bench_now_us() - t0;
		if (k == 0)
			for (size_t i = 0; i < n; i++)
				tasks += r.shares[i].units;
		drf_result_free(&r);

		memcpy(work, keys, n * sizeof(*work));
		t0 = bench_now_us();
		radix_sort_doubles(work, tmp, n);
		t_rx[k] = bench_now_us() - t0;
		if (k == 0)
			for (size_t i = 1; i < n; i++)
				if (work[i - 1] > work[i]) {
					fprintf(stderr, "bench: the radix sort does not sort\n");
					exit(1);
				}
	}
	m_eng = bench_median(t_eng, rounds);
	m_drf = bench_median(t_drf, rounds);
	m_dis = bench_median(t_dis, rounds);
	m_rx = bench_median(t_rx, rounds);
	printf("%7zu x 5  %6d  %9.1f  %9.1f  %10.1f  %9.1f  %8.2f  %8.2f  %7.1f  %7.1f\n", n,
	       rounds, m_eng, m_drf, m_dis, m_rx, m_eng / m_rx, m_drf / m_rx,
	       (double)flt_eng / rounds, (double)flt_drf / rounds);
	if (n == 10000)
		printf("           target for 10k x 5: engine <= 5 x radix sort of 10k fresh doubles "
		       "(%s)\n", m_eng / m_rx <= 5 ? "met" : "MISSED");
	(void)tasks;
	drf_engine_free(&eng);
	free(d);
	free(keys);
	free(work);
	free(tmp);
	free(t_eng);
	free(t_drf);
	free(t_dis);
	free(t_rx);
}

/* Median microseconds of fresh calls of each policy on one problem of n tenants. */
static void bench_convex(size_t n, int rounds)
{
	static const enum drf_policy pols[] = { DRF_POLICY_DRF, DRF_POLICY_FDS, DRF_POLICY_GFJ,
						DRF_POLICY_CEEI };
	struct drf_demand *d = calloc(n, sizeof(*d));
	double *t = malloc((size_t)rounds * sizeof(double));
	struct drf_problem p = { 0 };

	if (!d || !t) {
		fprintf(stderr, "bench: out of memory\n");
		exit(1);
	}
	make_problem(&p, d, n);
	printf("%7zu x 5  %6d", n, rounds);
	for (size_t k = 0; k < sizeof(pols) / sizeof(pols[0]); k++) {
		for (int j = 0; j < rounds; j++) {
			struct drf_result r;
			double t0 = bench_now_us();

			if (drf_allocate(&p, pols[k], &r) < 0) {
				fprintf(stderr, "bench: %s failed\n", drf_policy_name(pols[k]));
				exit(1);
			}
			t[j] = bench_now_us() - t0;
			drf_result_free(&r);
		}
		printf("  %10.1f", bench_median(t, rounds));
	}
	printf("\n");
	free(d);
	free(t);
}

int main(void)
{
	printf("median microseconds per run, interleaved rounds in one process; faults: minor page "
	       "faults per call\n");
	printf("%-11s  %6s  %9s  %9s  %10s  %9s  %8s  %8s  %7s  %7s\n", "tenants", "rounds",
	       "engine", "fresh", "discrete", "radix(n)", "eng/rdx", "frsh/rdx", "flt-eng",
	       "flt-frsh");
	bench(1000, 301);
	bench(10000, 101);
	bench(100000, 21);
	printf("\nconvex policies, median microseconds per fresh call\n");
	printf("%-11s  %6s  %10s  %10s  %10s  %10s\n", "tenants", "rounds", "drf", "fds(2)",
	       "gfj(2)", "ceei");
	bench_convex(1000, 21);
	bench_convex(10000, 5);
	return 0;
}
