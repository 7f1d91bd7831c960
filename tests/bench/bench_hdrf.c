// SPDX-License-Identifier: MIT
/*
 * Hierarchical DRF's time (agent/core/hdrf.c) for 100, 1000 and 5000 tenants x
 * 5 resources in two levels of groups (sqrt(n) groups of about sqrt(n)
 * tenants, the groups in a few top groups), against flat DRF
 * (drf_allocate()) on the same tenants, run alternately in one process so that
 * both see the same machine load. Prints the median of each and their ratio.
 * No target is asserted.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchlib.h"
#include "hdrf.h"

static uint64_t rng_state = 7;

static double unit(void)
{
	return bench_unit(&rng_state);
}

static int bench(size_t n, int rounds)
{
	size_t ng = (size_t)ceil(sqrt((double)n)), top = ng / 4 + 1;
	struct drf_demand *d = calloc(n, sizeof(*d));
	struct drf_hgroup *g = calloc(ng + top, sizeof(*g));
	size_t *par = calloc(n, sizeof(*par));
	double *th = calloc((size_t)rounds, sizeof(double)), *tf = calloc((size_t)rounds, sizeof(double));
	struct drf_hproblem hp = { 0 };
	int err = 0;

	if (!d || !g || !par || !th || !tf) {
		err = -1;
		goto out;
	}
	for (int r = 0; r < 5; r++)
		hp.base.capacity[r] = 100 + 900 * unit();
	/* top groups first (at the root), then the groups of tenants inside them */
	for (size_t k = 0; k < top; k++)
		g[k] = (struct drf_hgroup){ .weight = 0.5 + 4 * unit(), .parent = DRF_HROOT };
	for (size_t k = top; k < top + ng; k++)
		g[k] = (struct drf_hgroup){ .weight = 0.5 + 4 * unit(),
					    .parent = (size_t)(unit() * (double)top) };
	for (size_t i = 0; i < n; i++) {
		double kind = unit();

		d[i].weight = 0.1 + 10 * unit();
		for (int r = 0; r < 5; r++)
			d[i].shape[r] = unit() < 0.2 ? 0 : hp.base.capacity[r] * unit() / (double)n;
		d[i].shape[(int)(unit() * 5)] = hp.base.capacity[0] / (double)n;
		d[i].max_units = kind < 0.4 ? 1 : kind < 0.8 ? INFINITY : 1 + floor(20 * unit());
		par[i] = top + (size_t)(unit() * (double)ng);
	}
	hp.base.n = n;
	hp.base.demands = d;
	hp.n_groups = ng + top;
	hp.groups = g;
	hp.leaf_parent = par;
	for (int k = 0; k < rounds; k++) {
		struct drf_hresult hr;
		struct drf_result fr;
		double t0 = bench_now_us();

		if (drf_hdrf_allocate(&hp, &hr) < 0) {
			err = -1;
			goto out;
		}
		th[k] = bench_now_us() - t0;
		drf_hresult_free(&hr);
		t0 = bench_now_us();
		if (drf_allocate(&hp.base, DRF_POLICY_DRF, &fr) < 0) {
			err = -1;
			goto out;
		}
		tf[k] = bench_now_us() - t0;
		drf_result_free(&fr);
	}
	{
		double mh = bench_median(th, rounds), mf = bench_median(tf, rounds);

		printf("%6zu tenants in %4zu groups: H-DRF %10.1f us, flat DRF %8.1f us (x%.0f), "
		       "median of %d\n", n, ng + top, mh, mf, mf > 0 ? mh / mf : 0, rounds);
	}
out:
	free(d);
	free(g);
	free(par);
	free(th);
	free(tf);
	return err;
}

int main(void)
{
	if (bench(100, 51) < 0 || bench(1000, 11) < 0 || bench(5000, 3) < 0) {
		fputs("bench_hdrf: an allocation failed\n", stderr);
		return 1;
	}
	return 0;
}
