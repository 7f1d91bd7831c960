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

/* The six policies side by side, as tables or JSON. Returns 0 or a negative errno. */
int drf_plan_print_compare(FILE *out, const struct drf_config *cfg,
			   const struct drf_problem *problem, bool json);

/*
 * The fairness-efficiency trade-off of a problem: FDS and GFJ (or only policy,
 * when it is one of them) on the alpha-fair line, lambda = (1 - beta) / beta,
 * for beta from 0.25 to 100, then DRF (FDS's limit); then off the line: at beta
 * 2, 5 and 20, lambda from the line down by 0 to 4 (more weight on efficiency).
 */
struct drf_tradeoff_row {
	int policy;          /* DRF_POLICY_FDS, _GFJ, or _DRF (beta INFINITY) */
	double beta, lambda;
	bool off_sweep;      /* of the sweep of lambda (its first row is on the line) */
	bool gave_up;        /* the solver gave up: met is zero */
	struct drf_metrics met;
};

struct drf_tradeoff {
	struct drf_tradeoff_row *rows;
	size_t n, cap;
	int ids[DRF_NRES], m; /* the resources with a capacity */
};

/* Returns 0, or a negative errno (-ENOMEM). */
int drf_tradeoff_sweep(const struct drf_problem *problem, int policy, struct drf_tradeoff *ret);
void drf_tradeoff_free(struct drf_tradeoff *t);
/* The mean over the resources of row's usable utilization: its efficiency. */
double drf_tradeoff_mean_used(const struct drf_tradeoff *t, const struct drf_tradeoff_row *row);

/*
 * The sweep as two text tables, each row Jain's index and each resource's usable
 * utilization. Returns 0 or a negative errno.
 */
int drf_plan_print_tradeoff(FILE *out, const struct drf_config *cfg,
			    const struct drf_tradeoff *sweep);

/*
 * The sweep as JSON: {"config": PATH, "rows": [{"policy", "beta", "lambda" (null
 * for drf), "lambda_sweep", "gave_up", "jain", "used": {RES: fraction},
 * "mean_used"}]} (the last three null where the solver gave up). Returns 0 or a
 * negative errno.
 */
int drf_plan_print_tradeoff_json(FILE *out, const struct drf_config *cfg,
				 const struct drf_tradeoff *sweep);

/*
 * The sweep drawn by gnuplot as an SVG picture at path (written whole, or not at
 * all): on the left Jain's index and each resource's utilization against beta,
 * on the right the frontier, Jain's index against the mean utilization. Returns
 * 0 or a negative errno with err saying why (-ENOENT: no gnuplot).
 */
int drf_plan_plot_tradeoff(const char *path, const struct drf_config *cfg,
			   const struct drf_tradeoff *sweep, char *err, size_t errlen);

#endif
