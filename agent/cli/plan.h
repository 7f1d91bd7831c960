/* SPDX-License-Identifier: MIT */
/* Rendering of allocations for `drfctl plan`: aligned table, JSON, comparison. */
#ifndef DRF_PLAN_H
#define DRF_PLAN_H

#include <stdbool.h>
#include <stdio.h>

#include "alloc.h"
#include "config.h"

struct drf_plan {
	const struct drf_config *cfg;
	const struct drf_problem *problem;
	const struct drf_result *result;
	enum drf_policy policy;
	bool discrete;
};

/*
 * The table; a bounded tenant's undeclared resources (a demand for the whole
 * capacity) are marked '*', with a footnote. Returns 0, -ENOMEM, or -EIO if
 * the stream failed.
 */
int drf_plan_print_table(FILE *out, const struct drf_plan *plan);

/*
 * {"policy": ..., "capacity": {...}, "unallocated": {...}, "tenants": [...]}: see
 * the README for the schema. Numbers print as the shortest decimal that reads
 * back as the same double. Returns 0, or -EIO if the stream failed.
 */
int drf_plan_print_json(FILE *out, const struct drf_plan *plan);

/* The three policies side by side. Returns 0 or a negative errno. */
int drf_plan_print_compare(FILE *out, const struct drf_config *cfg,
			   const struct drf_problem *problem);

/* Shortest "%.*g" of v that strtod() reads back exactly. */
char *drf_format_double(double v, char *buf, size_t len);

/* JSON output shared by drfctl and drfd: a string with its escapes; a number as
 * the shortest text that reads back the same, null when not finite. */
void drf_json_str(FILE *f, const char *s);
void drf_json_num(FILE *f, double v);

#endif
