/* SPDX-License-Identifier: MIT */
/*
 * The allocation engine: a pure function of the problem (problem.h:
 * capacities, demands, a policy). No I/O, no logging, no globals.
 * docs/design.md, "Policies", says what each computes.
 */
#ifndef DRF_ALLOC_H
#define DRF_ALLOC_H

#include <stddef.h>

#include "problem.h"
#include "res.h"

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
