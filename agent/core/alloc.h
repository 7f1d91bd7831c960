/* SPDX-License-Identifier: MIT */
/*
 * The allocation engine: a pure function of (capacities, demands). No I/O, no
 * logging, no globals. docs/design.md, "Policies", says what each computes.
 *
 * Every tenant's demand is a shape vector and a bound on how many copies of it
 * the tenant can use:
 *   - a bounded demand ("up to 4 cores and 8G") is shape = the demand, max_units = 1;
 *   - the papers' task model is shape = one task, max_units = the task count, or
 *     INFINITY for "unlimited".
 * A Leontief allocation is units * shape, with 0 <= units <= max_units.
 */
#ifndef DRF_ALLOC_H
#define DRF_ALLOC_H

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

/*
 * Divisible allocation under the given policy, by exact event-driven progressive
 * filling (DRF, asset) or per-resource water-filling, O(n log n + n*m); FDS, GFJ
 * and CEEI by the convex programs of fairfam.h, O(n m^2) per Newton step.
 * Returns 0, -EINVAL for a malformed problem (non-positive weight, negative or
 * non-finite entries, an unlimited demand with no participating resource), or
 * -ENOMEM; for FDS and GFJ also -EDOM (parameters drf_family_check() refuses)
 * and -ERANGE (the solver gave up: fairfam.h). ret is filled only on success; free
 * it with drf_result_free().
 */
int drf_allocate(const struct drf_problem *p, enum drf_policy policy, struct drf_result *ret);

/*
 * The discrete variant (Ghodsi et al., Algorithm 1, with skipping): repeatedly
 * give one whole copy of its shape to the tenant with the lowest weighted dominant
 * share whose next copy still fits; a tenant whose next copy no longer fits is
 * skipped from then on (capacity only shrinks, so it would never fit again); stop
 * when nothing fits. Ties go to the lower share, then to the earlier tenant.
 * Returns -E2BIG if it would hand out more than DRF_DISCRETE_MAX_TASKS copies.
 */
int drf_allocate_discrete(const struct drf_problem *p, struct drf_result *ret);

void drf_result_free(struct drf_result *r);

/*
 * The engine for repeated allocations (the daemon, every tick): it keeps its
 * scratch memory and its result's shares between calls, so a call of the same
 * size allocates nothing. The result drf_engine_allocate() returns points into
 * the engine: valid until its next call or drf_engine_free(), and never passed
 * to drf_result_free(). Results are bit-identical to drf_allocate()'s. (FDS, GFJ
 * and CEEI still allocate their solver's memory on each call.)
 */
struct drf_engine {
	void *buf;                 /* scratch */
	size_t cap;
	struct drf_share *shares;  /* the result's */
	size_t shares_cap;
	struct drf_result result;
};

int drf_engine_init(struct drf_engine *e);
/* As drf_allocate(); on failure the engine stays usable. */
int drf_engine_allocate(struct drf_engine *e, const struct drf_problem *p, enum drf_policy policy,
			struct drf_result *ret);
void drf_engine_free(struct drf_engine *e);

/* "drf", "asset", "per-resource", "fds", "gfj", "ceei" */
const char *drf_policy_name(enum drf_policy p);
int drf_policy_from_name(const char *name);

/*
 * Dominant share of a demand's shape (max_r shape_r / capacity_r over
 * participating resources), and the resource attaining it (-1 if none).
 */
double drf_shape_dominant(const struct drf_problem *p, const struct drf_demand *d, int *ret_res);

/*
 * Quality of an allocation, for comparing policies. Each tenant is credited with
 * the usable part of its allocation, units * shape.
 */
struct drf_metrics {
	double jain;                  /* Jain's index over weighted dominant shares */
	double utilization[DRF_NRES]; /* usable allocation / capacity */
	double allocated[DRF_NRES];   /* allocation handed out / capacity */
	size_t si_violations;         /* tenants below min(full demand, w_i / sum w) */
};

void drf_metrics_compute(const struct drf_problem *p, const struct drf_result *r,
			 struct drf_metrics *ret);

#endif
