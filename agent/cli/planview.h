/* SPDX-License-Identifier: MIT */
/* Rendering of allocations for `drfctl plan`: aligned table, JSON, comparison. */
#ifndef DRF_PLANVIEW_H
#define DRF_PLANVIEW_H

#include <stdbool.h>
#include <stdio.h>

#include "alloc.h"
#include "config.h"

struct drfctl_running;

struct drf_plan {
	const struct drf_config *cfg;
	const struct drf_problem *problem;
	const struct drf_result *result;
	enum drf_policy policy;
	bool discrete;
	const struct drfctl_running *running; /* against the running drfd; NULL: none answered */
	const struct drf_share *groups;       /* cfg->n_groups, hierarchical DRF's; NULL: none */
};

/*
 * The table; a bounded tenant's undeclared resources (a demand for the whole
 * capacity) are marked '*', with a footnote. Returns 0, -ENOMEM, or -EIO if
 * the stream failed.
 */
int drf_plan_print_table(FILE *out, const struct drf_plan *plan);

/*
 * {"policy": ..., "capacity": {...}, "unallocated": {...}, "tenants": [...]}, and
 * "running" when a drfd answered (cli.h): see drfctl(8), PLAN JSON, for the schema. Numbers print as the shortest decimal that reads
 * back as the same double. Returns 0, or -EIO if the stream failed.
 */
int drf_plan_print_json(FILE *out, const struct drf_plan *plan);

/* The six policies side by side. Returns 0 or a negative errno. */
int drf_plan_print_compare(FILE *out, const struct drf_config *cfg,
			   const struct drf_problem *problem);

/*
 * The fairness-efficiency trade-off as a text table: FDS and GFJ (or only
 * policy, when it is one of them) on the alpha-fair line for a sweep of beta,
 * each row Jain's index and each resource's usable utilization, then DRF (FDS's
 * limit) for reference. Returns 0 or a negative errno.
 */
int drf_plan_print_tradeoff(FILE *out, const struct drf_config *cfg,
			    const struct drf_problem *problem, int policy);

#endif
