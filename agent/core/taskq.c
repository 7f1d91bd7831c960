// SPDX-License-Identifier: MIT
#include "taskq.h"

#include <math.h>

/* Relative slack of a fit: 9 tasks of 0.1 fit in 0.9 whatever the rounding. */
#define TQ_EPS 1e-9

bool drf_tq_fits(const double capacity[DRF_NRES], const double free[DRF_NRES],
		 const double vec[DRF_NRES])
{
	for (int r = 0; r < DRF_NRES; r++) {
		if (!(capacity[r] > 0))
			continue;
		if (vec[r] > free[r] + capacity[r] * TQ_EPS)
			return false;
	}
	return true;
}

double drf_tq_share(const double capacity[DRF_NRES], const struct drf_tq_tenant *t,
		    double *ret_plain)
{
	double s = 0;

	for (int r = 0; r < DRF_NRES; r++)
		if (capacity[r] > 0 && t->held[r] / capacity[r] > s)
			s = t->held[r] / capacity[r];
	if (ret_plain)
		*ret_plain = s;
	return s / t->weight;
}

ssize_t drf_tq_pick(const double capacity[DRF_NRES], const double free[DRF_NRES],
		    const struct drf_tq_tenant *t, size_t n)
{
	ssize_t best = -1;
	double best_w = 0, best_p = 0;

	for (size_t i = 0; i < n; i++) {
		double w, p;

		if (!t[i].next || !drf_tq_fits(capacity, free, t[i].next))
			continue;
		w = drf_tq_share(capacity, &t[i], &p);
		if (best < 0 || w < best_w || (w == best_w && p < best_p)) {
			best = (ssize_t)i;
			best_w = w;
			best_p = p;
		}
	}
	return best;
}

const char *drf_tq_refuse(const double capacity[DRF_NRES], const double vec[DRF_NRES],
			  int *ret_res)
{
	bool any = false;

	for (int r = 0; r < DRF_NRES; r++) {
		*ret_res = r;
		if (!isfinite(vec[r]) || vec[r] < 0)
			return "is not a finite, non-negative quantity";
		if (!(vec[r] > 0))
			continue;
		if (!(capacity[r] > 0))
			return "is not shared by this drfd (its capacity is 0)";
		if (vec[r] > capacity[r] * (1 + TQ_EPS))
			return "is more than the whole capacity";
		any = true;
	}
	*ret_res = -1;
	if (!any)
		return "needs none of the shared resources: give it cpu or memory (or io), "
		       "else any number of them would fit";
	return NULL;
}
