// SPDX-License-Identifier: MIT
#include "problem.h"

#include <stdlib.h>
#include <string.h>

const char *drf_policy_name(enum drf_policy p)
{
	switch (p) {
	case DRF_POLICY_DRF:
		return "drf";
	case DRF_POLICY_ASSET:
		return "asset";
	case DRF_POLICY_PER_RESOURCE:
		return "per-resource";
	case DRF_POLICY_FDS:
		return "fds";
	case DRF_POLICY_GFJ:
		return "gfj";
	case DRF_POLICY_CEEI:
		return "ceei";
	case DRF_NPOLICY:
		break;
	}
	return "?";
}

int drf_policy_from_name(const char *name)
{
	for (int p = 0; p < DRF_NPOLICY; p++)
		if (strcmp(name, drf_policy_name(p)) == 0)
			return p;
	return -1;
}

void drf_result_free(struct drf_result *r)
{
	if (!r)
		return;
	free(r->shares);
	r->shares = NULL;
	r->n = 0;
}

double drf_shape_dominant(const struct drf_problem *p, const struct drf_demand *d, int *ret_res)
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
