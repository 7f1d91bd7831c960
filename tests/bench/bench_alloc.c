// SPDX-License-Identifier: MIT
/*
 * Allocation time for 1k, 10k and 100k tenants x 5 resources: divisible DRF, the
 * discrete variant, and qsort() of n doubles as a yardstick, interleaved in one
 * process (one run of each per round) so that they see the same machine load.
 * Prints the median per kind and the ratios of the medians. No target is
 * asserted here; the targets are printed beside the figures.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"

static uint64_t rng_state = 42;

static double unit(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int cmp_time(const void *a, const void *b)
{
	return cmp_double(a, b);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_time);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
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

static void bench(size_t n, int rounds)
{
	struct drf_demand *d = calloc(n, sizeof(*d));
	double *keys = malloc(n * sizeof(*keys)), *work = malloc(n * sizeof(*work));
	double *t_drf = malloc((size_t)rounds * sizeof(double));
	double *t_dis = malloc((size_t)rounds * sizeof(double));
	double *t_qs = malloc((size_t)rounds * sizeof(double));
	double m_drf, m_dis, m_qs, tasks = 0;
	struct drf_problem p;

	if (!d || !keys || !work || !t_drf || !t_dis || !t_qs) {
		fprintf(stderr, "bench: out of memory\n");
		exit(1);
	}
	make_problem(&p, d, n);
	for (size_t i = 0; i < n; i++)
		keys[i] = unit();
	for (int k = 0; k < rounds; k++) {
		struct drf_result r;
		double t0;

		t0 = now_us();
		if (drf_allocate(&p, DRF_POLICY_DRF, &r) < 0) {
			fprintf(stderr, "bench: drf_allocate failed\n");
			exit(1);
		}
		t_drf[k] = now_us() - t0;
		drf_result_free(&r);

		t0 = now_us();
		if (drf_allocate_discrete(&p, &r) < 0) {
			fprintf(stderr, "bench: drf_allocate_discrete failed\n");
			exit(1);
		}
		t_dis[k] = now_us() - t0;
		if (k == 0)
			for (size_t i = 0; i < n; i++)
				tasks += r.shares[i].units;
		drf_result_free(&r);

		memcpy(work, keys, n * sizeof(*work));
		t0 = now_us();
		qsort(work, n, sizeof(*work), cmp_double);
		t_qs[k] = now_us() - t0;
	}
	m_drf = median(t_drf, rounds);
	m_dis = median(t_dis, rounds);
	m_qs = median(t_qs, rounds);
	printf("%7zu x 5  %6d  %10.1f  %10.1f  %10.1f  %9.2f  %9.2f  %10.0f\n", n, rounds, m_drf,
	       m_dis, m_qs, m_drf / m_qs, m_dis / m_qs, tasks);
	if (n == 10000)
		printf("           target for 10k x 5: drf < 1000 us (%s), drf/qsort < 5 (%s)\n",
		       m_drf < 1000 ? "met" : "MISSED", m_drf / m_qs < 5 ? "met" : "MISSED");
	free(d);
	free(keys);
	free(work);
	free(t_drf);
	free(t_dis);
	free(t_qs);
}

int main(void)
{
	printf("median microseconds per run, interleaved rounds in one process\n");
	printf("%-11s  %6s  %10s  %10s  %10s  %9s  %9s  %10s\n", "tenants", "rounds", "drf",
	       "discrete", "qsort(n)", "drf/qsort", "disc/qsort", "tasks");
	bench(1000, 301);
	bench(10000, 101);
	bench(100000, 21);
	return 0;
}
