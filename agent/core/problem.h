/* SPDX-License-Identifier: MIT */
/*
 * The allocation problem and its answer, as every policy sees them: the
 * tenants' demands (a shape and how many copies of it they can use), the
 * capacities, the policies' names, and the result, a share per tenant. The
 * engine (alloc.h) and the convex families (fairfam.h) both solve it; this
 * knows neither.
 *
 * Every tenant's demand is a shape vector and a bound on how many copies of it
 * the tenant can use:
 *   - a bounded demand ("up to 4 cores and 8G") is shape = the demand, max_units = 1;
 *   - the papers' task model is shape = one task, max_units = the task count, or
 *     INFINITY for "unlimited".
 * A Leontief allocation is units * shape, with 0 <= units <= max_units.
 */
#ifndef DRF_PROBLEM_H
#define DRF_PROBLEM_H

#include <stddef.h>

#include "res.h"

enum drf_policy {
	DRF_POLICY_DRF,          /* weighted dominant resource fairness */
	DRF_POLICY_ASSET,        /* equalize the weighted sum of shares */
	DRF_POLICY_PER_RESOURCE, /* weighted max-min on each resource on its own */
	DRF_POLICY_FDS,          /* fairness on dominant shares, beta and lambda (fairfam.h) */
	DRF_POLICY_GFJ,          /* generalized fairness on jobs, beta and lambda (fairfam.h) */
	DRF_POLICY_CEEI,         /* competitive equilibrium from (weighted) equal incomes */
	DRF_NPOLICY,
};

/* limited_by value for a tenant whose demand is fully met. */
#define DRF_LIMIT_DEMAND (-1)

/* Upper bound on tasks the discrete variant hands out before giving up (-E2BIG). */
#define DRF_DISCRETE_MAX_TASKS 100000000.0

struct drf_demand {
	double weight;          /* > 0 */
	double shape[DRF_NRES]; /* >= 0; entries of non-participating resources are ignored */
	double max_units;       /* > 0, or INFINITY */
};

/* The FDS and GFJ families' parameters; fairfam.h says which are accepted. */
struct drf_family {
	double beta;
	double lambda;
};

struct drf_problem {
	double capacity[DRF_NRES]; /* a resource with capacity 0 takes no part */
	size_t n;
	const struct drf_demand *demands;
	struct drf_family family;  /* FDS and GFJ; beta = 0: fairfam.h's defaults */
};

struct drf_share {
	double alloc[DRF_NRES]; /* 0 on non-participating resources */
	/*
	 * Copies of the shape the allocation serves: the fraction of a bounded demand
	 * that is met, or the number of tasks. For per-resource max-min, whose
	 * allocation need not have the demand's shape, the usable part:
	 * min_r alloc_r / shape_r.
	 */
	double units;
	double dominant_share; /* max_r alloc_r / capacity_r */
	int dominant_res;      /* the r attaining it (the demand's, if nothing is allocated) */
	int limited_by;        /* DRF_LIMIT_DEMAND or the used-up resource that stopped it */
};

struct drf_result {
	size_t n;
	struct drf_share *shares;  /* n entries, in the order of the demands */
	double unallocated[DRF_NRES];
};

void drf_result_free(struct drf_result *r);

/* "drf", "asset", "per-resource", "fds", "gfj", "ceei" */
const char *drf_policy_name(enum drf_policy p);
int drf_policy_from_name(const char *name);

/*
 * Dominant share of a demand's shape (max_r shape_r / capacity_r over
 * participating resources), and the resource attaining it (-1 if none).
 */
double drf_shape_dominant(const struct drf_problem *p, const struct drf_demand *d, int *ret_res);

#endif
