// SPDX-License-Identifier: MIT
#include "planview.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fairfam.h"
#include "json.h"
#include "text.h"
#include "vec.h"

#define CELL 96
#define MAX_COLS (6 + DRF_NRES)

/* A table of strings, printed with columns padded to their widest cell. */
struct table {
	size_t rows, cols, cap; /* cap: of cells, rows x cols */
	char (*cells)[CELL];
};

static char *cell(struct table *t, size_t row, size_t col)
{
	return t->cells[row * t->cols + col];
}

static char *table_row(struct table *t)
{
	if (DRF_VEC_GROW(t->cells, &t->cap, (t->rows + 1) * t->cols) < 0)
		return NULL;
	memset(t->cells[t->rows * t->cols], 0, t->cols * CELL);
	return t->cells[t->rows++ * t->cols];
}

static void table_print(FILE *out, const struct table *t, const char *indent)
{
	size_t width[MAX_COLS] = { 0 };

	for (size_t r = 0; r < t->rows; r++)
		for (size_t c = 0; c < t->cols; c++) {
			size_t n = strlen(t->cells[r * t->cols + c]);

			if (n > width[c])
				width[c] = n;
		}
	for (size_t r = 0; r < t->rows; r++) {
		size_t last = t->cols;

		/* No padding after the last non-empty cell. */
		while (last > 1 && !t->cells[r * t->cols + last - 1][0])
			last--;
		fputs(indent, out);
		for (size_t c = 0; c < last; c++) {
			const char *s = t->cells[r * t->cols + c];

			if (c + 1 == last)
				fprintf(out, "%s\n", s);
			else
				fprintf(out, "%-*s  ", (int)width[c], s);
		}
	}
}

static void fmt_res(double v, int r, char *buf, size_t len)
{
	drf_format_quantity(v, drf_res_unit(r), buf, len);
	if (r == DRF_RES_IO_READ || r == DRF_RES_IO_WRITE)
		strncat(buf, "/s", len - strlen(buf) - 1);
}

static void fmt_units(const struct drf_tenant *t, const struct drf_share *s, bool discrete,
		      char *buf, size_t len)
{
	/* a count a solver gives as 11.99996 is 12, as an exact policy's is (the three places shown) */
	double whole = round(s->units);

	if (!t->task_model)
		snprintf(buf, len, "%.1f%%", 100 * s->units);
	else if (discrete || fabs(s->units - whole) < 5e-4)
		snprintf(buf, len, "%.0f task%s", whole, whole == 1 ? "" : "s");
	else
		snprintf(buf, len, "%.3f tasks", s->units);
}

static const char *limit_name(int limited_by)
{
	return limited_by == DRF_LIMIT_DEMAND ? "demand" : drf_res_name(limited_by);
}

/* Undeclared by a bounded tenant: it counts as a demand for the whole capacity. */
static bool undeclared(const struct drf_tenant *t, int r)
{
	return !t->task_model && !t->declared[r];
}

/*
 * The groups' table: each group's allocation (the sum of its tenants'), its
 * dominant share over every resource, and its parent group ("-": the root).
 */
static int print_groups(FILE *out, const struct drf_plan *pl, const int *res, int m)
{
	const struct drf_config *cfg = pl->cfg;
	struct table t = { .cols = (size_t)(5 + m) };
	size_t c = 0;

	if (!table_row(&t))
		return -ENOMEM;
	snprintf(cell(&t, 0, c++), CELL, "GROUP");
	snprintf(cell(&t, 0, c++), CELL, "IN");
	snprintf(cell(&t, 0, c++), CELL, "WEIGHT");
	for (int k = 0; k < m; k++)
		snprintf(cell(&t, 0, c++), CELL, "%s", drf_res_name(res[k]));
	snprintf(cell(&t, 0, c++), CELL, "DOMINANT");
	snprintf(cell(&t, 0, c++), CELL, "LIMITED-BY");
	for (size_t g = 0; g < cfg->n_groups; g++) {
		const struct drf_group *gr = &cfg->groups[g];
		const struct drf_share *s = &pl->groups[g];
		char w[32];

		if (!table_row(&t)) {
			free(t.cells);
			return -ENOMEM;
		}
		c = 0;
		snprintf(cell(&t, t.rows - 1, c++), CELL, "%s", gr->name);
		snprintf(cell(&t, t.rows - 1, c++), CELL, "%s",
			 gr->parent ? cfg->groups[gr->parent - 1].name : "-");
		snprintf(cell(&t, t.rows - 1, c++), CELL, "%s", drf_format_double(gr->weight, w, 32));
		for (int k = 0; k < m; k++)
			fmt_res(s->alloc[res[k]], res[k], cell(&t, t.rows - 1, c++), CELL);
		snprintf(cell(&t, t.rows - 1, c++), CELL, "%s %.3f", drf_res_name(s->dominant_res),
			 s->dominant_share);
		snprintf(cell(&t, t.rows - 1, c++), CELL, "%s", limit_name(s->limited_by));
	}
	fputc('\n', out);
	table_print(out, &t, "");
	free(t.cells);
	return 0;
}

/* "drf", or "fds(beta=2,lambda=-0.5)" for the families with parameters. */
static const char *policy_label(int pol, const struct drf_problem *p, char *buf, size_t len)
{
	return drf_policy_label(pol, &p->family, buf, len);
}

int drf_plan_print_table(FILE *out, const struct drf_plan *pl)
{
	const struct drf_problem *p = pl->problem;
	struct table t = { .cols = 0 };
	int res[DRF_NRES], m = 0, err = -ENOMEM;
	bool marked = false;
	char lab[CELL];
	char *row;
	size_t c;

	for (int r = 0; r < DRF_NRES; r++)
		if (p->capacity[r] > 0)
			res[m++] = r;
	t.cols = (size_t)(5 + m + (pl->groups != NULL));

	fprintf(out, "policy %s%s%s, mode %s: %s\n", policy_label(pl->policy, p, lab, sizeof(lab)),
		pl->groups ? " (hierarchical, by [group])" : "",
		pl->discrete ? " (discrete tasks)" : "", drf_mode_name(pl->cfg->mode),
		pl->cfg->path);
	fputs("capacity:", out);
	for (int k = 0; k < m; k++) {
		char b[CELL];

		fmt_res(p->capacity[res[k]], res[k], b, sizeof(b));
		fprintf(out, " %s %s", drf_res_name(res[k]), b);
	}
	fputs("\n\n", out);

	if (!(row = table_row(&t)))
		goto out;
	c = 0;
	snprintf(cell(&t, 0, c++), CELL, "TENANT");
	if (pl->groups)
		snprintf(cell(&t, 0, c++), CELL, "GROUP");
	snprintf(cell(&t, 0, c++), CELL, "WEIGHT");
	for (int k = 0; k < m; k++)
		snprintf(cell(&t, 0, c++), CELL, "%s", drf_res_name(res[k]));
	snprintf(cell(&t, 0, c++), CELL, "MET");
	snprintf(cell(&t, 0, c++), CELL, "DOMINANT");
	snprintf(cell(&t, 0, c++), CELL, "LIMITED-BY");
	for (size_t i = 0; i < p->n; i++) {
		const struct drf_share *s = &pl->result->shares[i];
		const struct drf_tenant *ten = &pl->cfg->tenants[i];
		char w[32];

		if (!table_row(&t))
			goto out;
		c = 0;
		snprintf(cell(&t, t.rows - 1, c++), CELL, "%s", ten->name);
		if (pl->groups)
			snprintf(cell(&t, t.rows - 1, c++), CELL, "%s",
				 ten->group ? pl->cfg->groups[ten->group - 1].name : "-");
		snprintf(cell(&t, t.rows - 1, c++), CELL, "%s", drf_format_double(ten->weight, w, 32));
		for (int k = 0; k < m; k++) {
			char *cl = cell(&t, t.rows - 1, c++);

			fmt_res(s->alloc[res[k]], res[k], cl, CELL);
			if (undeclared(ten, res[k])) {
				strncat(cl, "*", CELL - strlen(cl) - 1);
				marked = true;
			}
		}
		fmt_units(ten, s, pl->discrete, cell(&t, t.rows - 1, c++), CELL);
		snprintf(cell(&t, t.rows - 1, c++), CELL, "%s %.3f", drf_res_name(s->dominant_res),
			 s->dominant_share);
		snprintf(cell(&t, t.rows - 1, c++), CELL, "%s", limit_name(s->limited_by));
	}
	if (!table_row(&t))
		goto out;
	c = 0;
	snprintf(cell(&t, t.rows - 1, c++), CELL, "(unallocated)");
	c += 1 + (pl->groups != NULL);
	for (int k = 0; k < m; k++)
		fmt_res(pl->result->unallocated[res[k]], res[k], cell(&t, t.rows - 1, c++), CELL);
	table_print(out, &t, "");
	if (pl->groups && print_groups(out, pl, res, m) < 0)
		goto out;
	if (p->n == 0)
		fputs("\nno tenants yet: add [tenant NAME] sections, or *.conf files to the tenants "
		      "directory\n", out);
	if (marked)
		fputs("\n* not declared by the tenant: counts as a demand for the whole capacity\n",
		      out);
	/* what the numbers become in the kernel (drfd.conf(5), KNOB MAPPING) */
	if (p->n > 0 && pl->cfg->mode == DRF_MODE_SHARE)
		fputs("\nshare mode: each allocation is a guarantee, not a cap: cpu.weight in "
		      "proportion to it,\nmemory.low = it, memory.max = the demand; what a tenant "
		      "leaves idle, others use\n(drfd --dry-run shows every knob)\n", out);
	else if (p->n > 0)
		fputs("\nlimit mode: each allocation is a cap: cpu.max, memory.high and "
		      "memory.max, io.max;\nwhat a tenant leaves idle stays idle "
		      "(drfd --dry-run shows every knob)\n", out);
	err = ferror(out) ? -EIO : 0;
out:
	free(t.cells);
	return err;
}

/* {RES: number} of the resources with a capacity; null where is_null says so. */
static void json_res_object(json_object *o, const char *key, const struct drf_problem *p,
			    const double *v, const bool *is_null)
{
	json_object *x = drf_json_set_object(o, key);

	for (int r = 0; r < DRF_NRES; r++) {
		if (!(p->capacity[r] > 0))
			continue;
		if (is_null && is_null[r])
			drf_json_set_null(x, drf_res_name(r));
		else
			drf_json_set_num(x, drf_res_name(r), drf_res_shown(r, v[r]));
	}
}

int drf_plan_print_json(FILE *out, const struct drf_plan *pl)
{
	const struct drf_problem *p = pl->problem;
	json_object *o = drf_json_object(), *tenants;
	int err;

	drf_json_set_str(o, "policy", drf_policy_name(pl->policy));
	if (pl->policy == DRF_POLICY_FDS || pl->policy == DRF_POLICY_GFJ) {
		double beta, lambda;

		drf_family_of(p, &beta, &lambda);
		json_object_object_add(o, "beta", json_object_new_double(beta));
		json_object_object_add(o, "lambda", json_object_new_double(lambda));
	}
	json_res_object(o, "capacity", p, p->capacity, NULL);
	json_res_object(o, "unallocated", p, pl->result->unallocated, NULL);
	tenants = drf_json_set_array(o, "tenants");
	for (size_t i = 0; i < p->n; i++) {
		const struct drf_demand *d = &p->demands[i];
		const struct drf_share *s = &pl->result->shares[i];
		const struct drf_tenant *t = &pl->cfg->tenants[i];
		json_object *to = drf_json_append_object(tenants), *decl;
		double demand[DRF_NRES];
		bool unbounded[DRF_NRES];

		for (int r = 0; r < DRF_NRES; r++) {
			unbounded[r] = isinf(d->max_units) && d->shape[r] > 0;
			demand[r] = d->shape[r] > 0 ? d->shape[r] * d->max_units : 0;
		}
		drf_json_set_str(to, "name", t->name);
		if (pl->groups) {
			if (t->group)
				drf_json_set_str(to, "group", pl->cfg->groups[t->group - 1].name);
			else
				drf_json_set_null(to, "group");
		}
		drf_json_set_num(to, "weight", t->weight);
		json_res_object(to, "demand", p, demand, unbounded);
		json_res_object(to, "alloc", p, s->alloc, NULL);
		if (t->task_model)
			drf_json_set_num(to, "tasks", s->units);
		drf_json_set_str(to, "dominant_resource", drf_res_name(s->dominant_res));
		drf_json_set_num(to, "dominant_share", s->dominant_share);
		decl = drf_json_set_object(to, "declared");
		for (int r = 0; r < DRF_NRES; r++)
			if (p->capacity[r] > 0)
				drf_json_set_bool(decl, drf_res_name(r), !undeclared(t, r));
		drf_json_set_str(to, "limited_by", limit_name(s->limited_by));
	}
	if (pl->groups) {
		json_object *groups = drf_json_set_array(o, "groups");

		for (size_t g = 0; g < pl->cfg->n_groups; g++) {
			const struct drf_group *gr = &pl->cfg->groups[g];
			const struct drf_share *s = &pl->groups[g];
			json_object *go = drf_json_append_object(groups);

			drf_json_set_str(go, "name", gr->name);
			if (gr->parent)
				drf_json_set_str(go, "group", pl->cfg->groups[gr->parent - 1].name);
			else
				drf_json_set_null(go, "group");
			drf_json_set_num(go, "weight", gr->weight);
			drf_json_set_str(go, "cgroup", gr->cgroup);
			json_res_object(go, "alloc", p, s->alloc, NULL);
			drf_json_set_str(go, "dominant_resource", drf_res_name(s->dominant_res));
			drf_json_set_num(go, "dominant_share", s->dominant_share);
			drf_json_set_str(go, "limited_by", limit_name(s->limited_by));
		}
	}
	err = pl->running ? drfctl_plan_json_running(o, pl->running) : 0;
	if (err == 0)
		err = drf_json_print(out, o);
	json_object_put(o);
	if (err == 0 && ferror(out))
		err = -EIO;
	return err;
}

/*
 * --compare --json: {"policies": [{"policy", "label", "gave_up", "jain",
 * "si_violations", "used": {RES}, "handed_out": {RES}}], "tenants": [{"name",
 * "served": {POLICY: tasks or the share of the demand met}, "dominant":
 * {POLICY: the dominant share of it}}]}; a policy whose solver gave up has
 * null figures.
 */
static int print_compare_json(FILE *out, const struct drf_config *cfg, const struct drf_problem *p,
			      const struct drf_result *res, const struct drf_metrics *met,
			      const bool *gave_up)
{
	json_object *o = drf_json_object(), *pols = drf_json_set_array(o, "policies");
	json_object *tens = drf_json_set_array(o, "tenants");
	char lab[CELL];
	int err;

	drf_json_set_str(o, "config", cfg->path);
	for (int pol = 0; pol < DRF_NPOLICY; pol++) {
		json_object *x = drf_json_append_object(pols), *u, *h;

		drf_json_set_str(x, "policy", drf_policy_name(pol));
		drf_json_set_str(x, "label", policy_label(pol, p, lab, sizeof(lab)));
		drf_json_set_bool(x, "gave_up", gave_up[pol]);
		if (gave_up[pol]) {
			drf_json_set_null(x, "jain");
			drf_json_set_null(x, "si_violations");
			continue;
		}
		drf_json_set_num(x, "jain", met[pol].jain);
		drf_json_set_num(x, "si_violations", (double)met[pol].si_violations);
		u = drf_json_set_object(x, "used");
		h = drf_json_set_object(x, "handed_out");
		for (int r = 0; r < DRF_NRES; r++) {
			if (!(p->capacity[r] > 0))
				continue;
			drf_json_set_num(u, drf_res_name(r), met[pol].utilization[r]);
			drf_json_set_num(h, drf_res_name(r), met[pol].allocated[r]);
		}
	}
	for (size_t i = 0; i < p->n; i++) {
		json_object *x = drf_json_append_object(tens), *sv, *dm;

		drf_json_set_str(x, "name", cfg->tenants[i].name);
		sv = drf_json_set_object(x, "served");
		dm = drf_json_set_object(x, "dominant");
		for (int pol = 0; pol < DRF_NPOLICY; pol++) {
			const struct drf_share *s = &res[pol].shares[i];

			if (gave_up[pol]) {
				drf_json_set_null(sv, drf_policy_name(pol));
				drf_json_set_null(dm, drf_policy_name(pol));
				continue;
			}
			drf_json_set_num(sv, drf_policy_name(pol), s->units);
			drf_json_set_num(dm, drf_policy_name(pol),
					 s->units * drf_shape_dominant(p, &p->demands[i], NULL));
		}
	}
	err = drf_json_print(out, o);
	json_object_put(o);
	if (err == 0 && ferror(out))
		err = -EIO;
	return err;
}

int drf_plan_print_compare(FILE *out, const struct drf_config *cfg,
			   const struct drf_problem *p, bool json)
{
	struct drf_result res[DRF_NPOLICY] = { 0 };
	struct drf_metrics met[DRF_NPOLICY];
	struct table t = { .cols = 0 };
	int ids[DRF_NRES], m = 0, err = 0;
	bool gave_up[DRF_NPOLICY] = { false }, any_gave_up = false;
	char lab[CELL];

	for (int r = 0; r < DRF_NRES; r++)
		if (p->capacity[r] > 0)
			ids[m++] = r;
	for (int pol = 0; pol < DRF_NPOLICY; pol++) {
		err = drf_allocate(p, pol, &res[pol]);
		/* The convex policies' solver may give up (fairfam.h): the row says so. */
		if (err == -ERANGE) {
			gave_up[pol] = any_gave_up = true;
			err = 0;
			continue;
		}
		if (err < 0)
			goto out;
		drf_metrics_compute(p, &res[pol], &met[pol]);
	}
	if (json) {
		err = print_compare_json(out, cfg, p, res, met, gave_up);
		goto out;
	}
	fprintf(out, "policies compared on %s\n\n", cfg->path);

	/* Per policy: fairness, sharing incentive, usable utilization per resource. */
	t.cols = (size_t)(3 + m);
	if (!table_row(&t)) {
		err = -ENOMEM;
		goto out;
	}
	snprintf(cell(&t, 0, 0), CELL, "POLICY");
	snprintf(cell(&t, 0, 1), CELL, "JAIN");
	snprintf(cell(&t, 0, 2), CELL, "SI-VIOLATIONS");
	for (int k = 0; k < m; k++)
		snprintf(cell(&t, 0, 3 + (size_t)k), CELL, "%s-used", drf_res_name(ids[k]));
	for (int pol = 0; pol < DRF_NPOLICY; pol++) {
		size_t row = t.rows;

		if (!table_row(&t)) {
			err = -ENOMEM;
			goto out;
		}
		snprintf(cell(&t, row, 0), CELL, "%s", policy_label(pol, p, lab, sizeof(lab)));
		if (gave_up[pol]) {
			snprintf(cell(&t, row, 1), CELL, "-");
			snprintf(cell(&t, row, 2), CELL, "solver gave up");
			for (int k = 0; k < m; k++)
				snprintf(cell(&t, row, 3 + (size_t)k), CELL, "-");
			continue;
		}
		snprintf(cell(&t, row, 1), CELL, "%.3f", met[pol].jain);
		snprintf(cell(&t, row, 2), CELL, "%zu", met[pol].si_violations);
		for (int k = 0; k < m; k++) {
			int r = ids[k];
			double used = 100 * met[pol].utilization[r];
			double given = 100 * met[pol].allocated[r];

			if (given > used + 0.05)
				snprintf(cell(&t, row, 3 + (size_t)k), CELL,
					 "%.1f%% (%.1f%% handed out)", used, given);
			else
				snprintf(cell(&t, row, 3 + (size_t)k), CELL, "%.1f%%", used);
		}
	}
	table_print(out, &t, "");
	fputs("\nJAIN: Jain's index over weighted dominant shares of usable allocations (1 = equal).\n"
	      "SI-VIOLATIONS: tenants getting less than their weighted slice of every resource.\n"
	      "-used: share of capacity that tenants can use (allocations in their demand's shape).\n",
	      out);
	if (any_gave_up)
		fputs("solver gave up: lambda far off (1 - beta) / beta can be beyond the FDS/GFJ "
		      "solver; see drfd.conf(5).\n", out);
	fputc('\n', out);

	/*
	 * Per tenant, two tables (each within 100 columns for six policies):
	 * what each policy serves (tasks, or the share of the demand met), and
	 * the dominant share of that usable allocation. The columns are the
	 * policies of the table above, named without their parameters.
	 */
	for (int what = 0; what < 2; what++) {
		free(t.cells);
		t = (struct table){ .cols = 1 + DRF_NPOLICY };
		if (!table_row(&t)) {
			err = -ENOMEM;
			goto out;
		}
		fputs(what == 0 ? "SERVED: tasks, or the share of the demand met\n"
				: "\nDOMINANT: the dominant share of what is served\n", out);
		snprintf(cell(&t, 0, 0), CELL, "TENANT");
		for (int pol = 0; pol < DRF_NPOLICY; pol++)
			snprintf(cell(&t, 0, 1 + (size_t)pol), CELL, "%s", drf_policy_name(pol));
		for (size_t i = 0; i < p->n; i++) {
			size_t row = t.rows;

			if (!table_row(&t)) {
				err = -ENOMEM;
				goto out;
			}
			snprintf(cell(&t, row, 0), CELL, "%s", cfg->tenants[i].name);
			for (int pol = 0; pol < DRF_NPOLICY; pol++) {
				const struct drf_share *s = &res[pol].shares[i];
				char *c = cell(&t, row, 1 + (size_t)pol);

				if (gave_up[pol])
					snprintf(c, CELL, "-");
				else if (what == 0)
					fmt_units(&cfg->tenants[i], s, false, c, CELL);
				else
					snprintf(c, CELL, "%.3f", s->units *
						 drf_shape_dominant(p, &p->demands[i], NULL));
			}
		}
		table_print(out, &t, "");
	}
out:
	free(t.cells);
	for (int pol = 0; pol < DRF_NPOLICY; pol++)
		drf_result_free(&res[pol]);
	return err;
}

/* The sweep's betas on the alpha-fair line, and off it (lambda below the line). */
static const double line_betas[] = { 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 20, 50, 100 };
static const double off_betas[] = { 2, 5, 20 };
static const double off_steps[] = { 0, 0.1, 0.25, 0.5, 1, 2, 4 };

static int sweep_row(struct drf_tradeoff *t, struct drf_problem *p, int policy, double beta,
		     double lambda, bool off_sweep)
{
	struct drf_tradeoff_row *row;
	struct drf_result res;
	int err;

	if (DRF_VEC_GROW(t->rows, &t->cap, t->n + 1) < 0)
		return -ENOMEM;
	row = &t->rows[t->n];
	*row = (struct drf_tradeoff_row){ .policy = policy, .beta = beta, .lambda = lambda,
					  .off_sweep = off_sweep };
	if (policy != DRF_POLICY_DRF)
		p->family = (struct drf_family){ beta, lambda };
	err = drf_allocate(p, (enum drf_policy)policy, &res);
	if (err == -ERANGE) {
		row->gave_up = true;
	} else if (err < 0) {
		return err;
	} else {
		drf_metrics_compute(p, &res, &row->met);
		drf_result_free(&res);
	}
	t->n++;
	return 0;
}

int drf_tradeoff_sweep(const struct drf_problem *problem, int policy, struct drf_tradeoff *ret)
{
	const int pols[] = { DRF_POLICY_FDS, DRF_POLICY_GFJ };
	struct drf_problem p = *problem;
	struct drf_tradeoff t = { 0 };
	int err = 0;

	for (int r = 0; r < DRF_NRES; r++)
		if (p.capacity[r] > 0)
			t.ids[t.m++] = r;
	for (size_t q = 0; q < 2 && err == 0; q++) {
		if (policy >= 0 && pols[q] != policy)
			continue;
		for (size_t b = 0; b < sizeof(line_betas) / sizeof(line_betas[0]) && err == 0; b++)
			err = sweep_row(&t, &p, pols[q], line_betas[b],
					drf_family_alpha_lambda(line_betas[b]), false);
	}
	if (err == 0)
		err = sweep_row(&t, &p, DRF_POLICY_DRF, INFINITY, -1, false);
	/* Off the line: for beta > 1 a lambda below (1 - beta) / beta weighs efficiency more. */
	for (size_t q = 0; q < 2 && err == 0; q++) {
		if (policy >= 0 && pols[q] != policy)
			continue;
		for (size_t b = 0; b < sizeof(off_betas) / sizeof(off_betas[0]) && err == 0; b++)
			for (size_t k = 0; k < sizeof(off_steps) / sizeof(off_steps[0]) && err == 0; k++)
				err = sweep_row(&t, &p, pols[q], off_betas[b],
						drf_family_alpha_lambda(off_betas[b]) - off_steps[k],
						true);
	}
	if (err < 0) {
		drf_tradeoff_free(&t);
		return err;
	}
	*ret = t;
	return 0;
}

void drf_tradeoff_free(struct drf_tradeoff *t)
{
	free(t->rows);
	*t = (struct drf_tradeoff){ 0 };
}

double drf_tradeoff_mean_used(const struct drf_tradeoff *t, const struct drf_tradeoff_row *row)
{
	double sum = 0;

	for (int k = 0; k < t->m; k++)
		sum += row->met.utilization[t->ids[k]];
	return t->m ? sum / t->m : 0;
}

/* One table of the sweep's rows: on the alpha-fair line (off false), or off it. */
static int tradeoff_table(FILE *out, const struct drf_tradeoff *sw, bool off)
{
	struct table t = { .cols = (size_t)(4 + sw->m) };

	if (!table_row(&t))
		return -ENOMEM;
	snprintf(cell(&t, 0, 0), CELL, "POLICY");
	snprintf(cell(&t, 0, 1), CELL, "BETA");
	snprintf(cell(&t, 0, 2), CELL, "LAMBDA");
	snprintf(cell(&t, 0, 3), CELL, "JAIN");
	for (int k = 0; k < sw->m; k++)
		snprintf(cell(&t, 0, 4 + (size_t)k), CELL, "%s-used", drf_res_name(sw->ids[k]));
	for (size_t i = 0; i < sw->n; i++) {
		const struct drf_tradeoff_row *r = &sw->rows[i];
		size_t row = t.rows;

		if (r->off_sweep != off)
			continue;
		if (!table_row(&t)) {
			free(t.cells);
			return -ENOMEM;
		}
		snprintf(cell(&t, row, 0), CELL, "%s", drf_policy_name(r->policy));
		if (r->policy == DRF_POLICY_DRF) {
			snprintf(cell(&t, row, 1), CELL, "inf");
			snprintf(cell(&t, row, 2), CELL, "-1");
		} else {
			snprintf(cell(&t, row, 1), CELL, "%g", r->beta);
			snprintf(cell(&t, row, 2), CELL, "%.10g", r->lambda);
		}
		if (r->gave_up) {
			snprintf(cell(&t, row, 3), CELL, "solver gave up");
			for (int k = 0; k < sw->m; k++)
				snprintf(cell(&t, row, 4 + (size_t)k), CELL, "-");
			continue;
		}
		snprintf(cell(&t, row, 3), CELL, "%.3f", r->met.jain);
		for (int k = 0; k < sw->m; k++)
			snprintf(cell(&t, row, 4 + (size_t)k), CELL, "%.1f%%",
				 100 * r->met.utilization[sw->ids[k]]);
	}
	table_print(out, &t, "");
	free(t.cells);
	return 0;
}

int drf_plan_print_tradeoff(FILE *out, const struct drf_config *cfg,
			    const struct drf_tradeoff *sw)
{
	bool gave_up = false;
	int err;

	for (size_t i = 0; i < sw->n; i++)
		gave_up |= sw->rows[i].gave_up;
	fprintf(out, "fairness against efficiency on %s, lambda = (1 - beta) / beta\n\n", cfg->path);
	err = tradeoff_table(out, sw, false);
	if (err < 0)
		return err;
	fputs("\nJAIN: Jain's index over weighted dominant shares (1 = equal); -used: share of\n"
	      "capacity that tenants can use. As beta grows FDS tends to DRF (the last row) and\n"
	      "GFJ to equal task counts.\n\n"
	      "lambda below (1 - beta) / beta: more weight on efficiency, at beta 2, 5 and 20\n\n",
	      out);
	err = tradeoff_table(out, sw, true);
	if (err < 0)
		return err;
	if (gave_up)
		fputs("\nsolver gave up: lambda far off (1 - beta) / beta can be beyond the FDS/GFJ "
		      "solver; see drfd.conf(5).\n"
		      "  drfd refuses such a pair in a config; pick a row that has figures.\n", out);
	fputs("\nWhich to choose: drf (the default): no tenant gains by lying about its demand,\n"
	      "and each gets at least its weighted slice; fds to trade fairness for utilization\n"
	      "on one dial, beta (the first table), or more utilization at a beta with a lower\n"
	      "lambda (the second); gfj when equal task counts matter more than equal shares;\n"
	      "ceei (plan --compare) for an envy-free market of equal budgets, which a tenant\n"
	      "can game. drfd.conf(5), FAIRNESS AND EFFICIENCY, works an example.\n", out);
	return ferror(out) ? -EIO : 0;
}

int drf_plan_print_tradeoff_json(FILE *out, const struct drf_config *cfg,
				 const struct drf_tradeoff *sw)
{
	json_object *o = drf_json_object(), *rows;
	int err;

	drf_json_set_str(o, "config", cfg->path);
	rows = drf_json_set_array(o, "rows");
	for (size_t i = 0; i < sw->n; i++) {
		const struct drf_tradeoff_row *r = &sw->rows[i];
		json_object *ro = drf_json_append_object(rows), *used;

		drf_json_set_str(ro, "policy", drf_policy_name(r->policy));
		if (r->policy == DRF_POLICY_DRF) {
			drf_json_set_null(ro, "beta");
			drf_json_set_null(ro, "lambda");
		} else {
			drf_json_set_num(ro, "beta", r->beta);
			drf_json_set_num(ro, "lambda", r->lambda);
		}
		drf_json_set_bool(ro, "lambda_sweep", r->off_sweep);
		drf_json_set_bool(ro, "gave_up", r->gave_up);
		if (r->gave_up) {
			drf_json_set_null(ro, "jain");
			drf_json_set_null(ro, "used");
			drf_json_set_null(ro, "mean_used");
			continue;
		}
		drf_json_set_num(ro, "jain", r->met.jain);
		used = drf_json_set_object(ro, "used");
		for (int k = 0; k < sw->m; k++)
			drf_json_set_num(used, drf_res_name(sw->ids[k]),
					 r->met.utilization[sw->ids[k]]);
		drf_json_set_num(ro, "mean_used", drf_tradeoff_mean_used(sw, r));
	}
	err = drf_json_print(out, o);
	json_object_put(o);
	if (err == 0 && ferror(out))
		err = -EIO;
	return err;
}
