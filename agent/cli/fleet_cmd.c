// SPDX-License-Identifier: MIT
/*
 * drfctl fleet: DRFH over a fleet of servers (fleetplan.h). `fleet plan` is
 * offline, from a fleet file: the divisible DRFH by default, whole tasks by
 * Best-Fit with --discrete (--first-fit for First-Fit), and with --compare DRFH
 * beside per-server DRF and slots on the same fleet. `fleet apply` and `fleet
 * status` talk to etcd (fleet_etcd_cmd.c).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fleetplan.h"
#include "json.h"

struct fleet_ctx {
	struct drf_fleet fleet;
	struct drfh_problem p;
	struct drfh_server_spec *specs;
	struct drf_demand *demands;
	struct drf_fleet_names names;
};

static int load(const char *path, struct fleet_ctx *c)
{
	char err[1024];
	int r;

	memset(c, 0, sizeof(*c));
	r = drf_fleet_load(path, &c->fleet, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "drfctl: %s\n", err);
		return DRFCTL_EXIT_CONFIG;
	}
	r = drf_fleet_problem(&c->fleet, &c->p, &c->specs, &c->demands);
	if (r == 0)
		r = drf_fleet_names_init(&c->fleet, &c->names);
	if (r < 0) {
		fprintf(stderr, "drfctl fleet: %s\n", strerror(-r));
		return EXIT_FAILURE;
	}
	return 0;
}

static void unload(struct fleet_ctx *c)
{
	drf_fleet_names_free(&c->names);
	free(c->specs);
	free(c->demands);
	drf_fleet_free(&c->fleet);
}

static json_object *res_object(json_object *parent, const char *key, const double *v,
			       const double *pool)
{
	json_object *o = drf_json_set_object(parent, key);

	for (int r = 0; r < DRF_NRES; r++)
		if (pool[r] > 0)
			drf_json_set_num(o, drf_res_name(r), v[r]);
	return o;
}

/* A tenant's tasks on each server: whole tasks, or its group's split evenly. */
static void placement_json(const struct fleet_ctx *c, const struct drfh_result *r, size_t i,
			   json_object *o)
{
	char name[DRF_SERVER_NAME_MAX + 1];

	for (size_t k = 0; k < r->nplaces; k++) {
		const struct drfh_place *pl = &r->places[k];

		if (pl->tenant != i)
			continue;
		if (!r->by_group) {
			drf_fleet_server_name(&c->fleet, &c->names, pl->where, name, sizeof(name));
			drf_json_set_num(o, name, pl->tasks);
			continue;
		}
		for (size_t s = 0; s < c->names.n; s++) {
			if (drf_fleet_server_group(&c->fleet, &c->names, r, s) != pl->where)
				continue;
			drf_fleet_server_name(&c->fleet, &c->names, s, name, sizeof(name));
			drf_json_set_num(o, name, pl->tasks / (double)r->groups[pl->where].count);
		}
	}
}

static int plan_json(const struct fleet_ctx *c, enum drf_fleet_form form,
		     const struct drfh_result *r)
{
	const double *pool = c->fleet.cfg.capacity;
	json_object *doc = drf_json_object(), *arr;
	char name[DRF_SERVER_NAME_MAX + 1];
	int err;

	drf_json_set_str(doc, "form", drf_fleet_form_name(form));
	arr = drf_json_set_array(doc, "servers");
	for (size_t s = 0; s < c->names.n; s++) {
		json_object *o = drf_json_append_object(arr);
		size_t spec = 0;

		while (spec + 1 < c->names.nspecs && c->names.spec_start[spec + 1] <= s)
			spec++;
		drf_fleet_server_name(&c->fleet, &c->names, s, name, sizeof(name));
		drf_json_set_str(o, "name", name);
		res_object(o, "capacity", c->fleet.servers[spec].capacity, pool);
	}
	arr = drf_json_set_array(doc, "tenants");
	for (size_t i = 0; i < c->p.n; i++) {
		json_object *o = drf_json_append_object(arr);

		drf_json_set_str(o, "name", c->fleet.cfg.tenants[i].name);
		drf_json_set_num(o, "weight", c->demands[i].weight);
		drf_json_set_num(o, "global_dominant_share", r->tenants[i].gds);
		drf_json_set_num(o, "tasks_total", r->tenants[i].units);
		placement_json(c, r, i, drf_json_set_object(o, "placement"));
		res_object(o, "alloc", r->tenants[i].alloc, pool);
	}
	res_object(doc, "utilization", r->utilization, pool);
	err = drf_json_print(stdout, doc);
	json_object_put(doc);
	return err < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

static void plan_text(const struct fleet_ctx *c, enum drf_fleet_form form,
		      const struct drfh_result *r)
{
	const double *pool = c->fleet.cfg.capacity;
	char buf[64];

	printf("fleet: %zu servers in %zu shapes; pool", c->names.n, r->ngroups ? r->ngroups
										 : c->fleet.n_servers);
	for (int res = 0; res < DRF_NRES; res++)
		if (pool[res] > 0)
			printf(" %s %s", drf_res_name(res),
			       drf_format_quantity(pool[res], drf_res_unit(res), buf, sizeof(buf)));
	printf("\nform: %s\n\n%-20s %7s %10s %12s %8s\n", drf_fleet_form_name(form), "TENANT",
	       "WEIGHT", "GLOBAL-DS", "TASKS", "SERVERS");
	for (size_t i = 0; i < c->p.n; i++) {
		size_t servers = 0;

		for (size_t k = 0; k < r->nplaces; k++)
			if (r->places[k].tenant == i)
				servers += r->by_group ? r->groups[r->places[k].where].count : 1;
		printf("%-20s %7g %10.4f %12.6g %8zu\n", c->fleet.cfg.tenants[i].name,
		       c->demands[i].weight, r->tenants[i].gds, r->tenants[i].units, servers);
	}
	printf("\nutilization:");
	for (int res = 0; res < DRF_NRES; res++)
		if (pool[res] > 0)
			printf(" %s %.1f%%", drf_res_name(res), 100 * r->utilization[res]);
	printf("\n");
}

/* Whether tenant i has its whole demand (within rounding): capped, not starved. */
static bool served(const struct fleet_ctx *c, const struct drfh_result *r, size_t i)
{
	return r->tenants[i].units >= c->demands[i].max_units * (1 - 1e-9);
}

/*
 * The least weighted global dominant share of the tenants that need something
 * and are not fully served (what DRFH raises: a tenant capped by its demand
 * would say nothing of fairness); of all of them when every one is served.
 */
static double least(const struct fleet_ctx *c, const struct drfh_result *r)
{
	double m = INFINITY, all = INFINITY;

	for (size_t i = 0; i < c->p.n; i++) {
		if (r->tenants[i].dominant_res < 0)
			continue;
		all = fmin(all, r->tenants[i].gds / c->demands[i].weight);
		if (!served(c, r, i))
			m = fmin(m, r->tenants[i].gds / c->demands[i].weight);
	}
	return isinf(m) ? all : m;
}

static int compare(const struct fleet_ctx *c, bool json)
{
	struct drfh_result r[DRF_FLEET_NFORMS];
	const double *pool = c->fleet.cfg.capacity;
	double tasks[DRF_FLEET_NFORMS] = { 0 };
	json_object *doc = NULL, *forms = NULL;
	int ret = EXIT_SUCCESS;

	for (int f = 0; f < DRF_FLEET_NFORMS; f++) {
		int err = drf_fleet_plan(&c->fleet, &c->p, (enum drf_fleet_form)f, &r[f]);

		if (err < 0) {
			fprintf(stderr, "drfctl fleet plan: %s: %s\n",
				drf_fleet_form_name((enum drf_fleet_form)f), strerror(-err));
			for (int g = 0; g < f; g++)
				drfh_result_free(&r[g]);
			return EXIT_FAILURE;
		}
		for (size_t i = 0; i < c->p.n; i++)
			tasks[f] += r[f].tenants[i].units;
	}
	if (json) {
		doc = drf_json_object();
		forms = drf_json_set_object(doc, "forms");
	} else {
		printf("%-16s %8s %11s %12s", "FORM", "JAIN", "LEAST-SHARE", "TASKS");
		for (int res = 0; res < DRF_NRES; res++)
			if (pool[res] > 0)
				printf(" %11s", drf_res_name(res));
		printf("\n");
	}
	for (int f = 0; f < DRF_FLEET_NFORMS; f++) {
		const char *name = drf_fleet_form_name((enum drf_fleet_form)f);

		if (json) {
			json_object *o = drf_json_set_object(forms, name), *t;

			drf_json_set_num(o, "jain", drfh_jain(&c->p, &r[f]));
			drf_json_set_num(o, "least_weighted_gds", least(c, &r[f]));
			drf_json_set_num(o, "tasks", tasks[f]);
			res_object(o, "utilization", r[f].utilization, pool);
			t = drf_json_set_object(o, "global_dominant_share");
			for (size_t i = 0; i < c->p.n; i++)
				drf_json_set_num(t, c->fleet.cfg.tenants[i].name, r[f].tenants[i].gds);
			t = drf_json_set_object(o, "demand_served");
			for (size_t i = 0; i < c->p.n; i++)
				drf_json_set_bool(t, c->fleet.cfg.tenants[i].name, served(c, &r[f], i));
			continue;
		}
		printf("%-16s %8.4f %11.4f %12.6g", name, drfh_jain(&c->p, &r[f]), least(c, &r[f]),
		       tasks[f]);
		for (int res = 0; res < DRF_NRES; res++)
			if (pool[res] > 0)
				printf(" %10.1f%%", 100 * r[f].utilization[res]);
		printf("\n");
	}
	if (json) {
		double d = least(c, &r[DRF_FLEET_DIVISIBLE]);

		drf_json_set_num(doc, "best_fit_gap",
				 d > 0 ? 1 - least(c, &r[DRF_FLEET_BEST_FIT]) / d : 0);
		ret = drf_json_print(stdout, doc) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
		json_object_put(doc);
	} else {
		double d = least(c, &r[DRF_FLEET_DIVISIBLE]);
		bool any_served = false;

		fputs("\nJAIN: Jain's index over the tenants' weighted global dominant shares (1 = "
		      "equal); read it\n  with TASKS: a form that places fewer tasks can look more "
		      "equal (slots leaves capacity idle).\nLEAST-SHARE: the least weighted global "
		      "dominant share of a tenant not fully served: what\n  DRFH raises (a tenant "
		      "capped by its demand says nothing of fairness).\nTASKS: tasks placed; drfh "
		      "is the divisible bound, a tenant's tasks split over servers\n  where that "
		      "helps, which best-fit and first-fit place whole. cpu, memory, ...: the "
		      "pool used.\n", stdout);
		printf("\nglobal dominant share per tenant:\n%-20s", "TENANT");
		for (int f = 0; f < DRF_FLEET_NFORMS; f++)
			printf(" %15s", drf_fleet_form_name((enum drf_fleet_form)f));
		printf("\n");
		for (size_t i = 0; i < c->p.n; i++) {
			printf("%-20s", c->fleet.cfg.tenants[i].name);
			for (int f = 0; f < DRF_FLEET_NFORMS; f++) {
				bool all = served(c, &r[f], i);

				printf(" %14.4f%s", r[f].tenants[i].gds, all ? "*" : " ");
				any_served = any_served || all;
			}
			printf("\n");
		}
		if (any_served)
			printf("* its whole demand served\n");
		if (d > 0)
			printf("\nBest-Fit's least weighted share is %.1f%% below the divisible "
			       "DRFH's on this fleet\n",
			       100 * (1 - least(c, &r[DRF_FLEET_BEST_FIT]) / d));
	}
	for (int f = 0; f < DRF_FLEET_NFORMS; f++)
		drfh_result_free(&r[f]);
	return ret;
}

static int fleet_plan(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "compare", no_argument, NULL, 'C' },
		{ "discrete", no_argument, NULL, 'd' },
		{ "first-fit", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL;
	bool json = false, cmp = false, discrete = false, first = false;
	struct fleet_ctx c;
	struct drfh_result r;
	enum drf_fleet_form form;
	int opt, ret;

	optind = 1;
	while ((opt = drfctl_getopt(argc, argv, "c:h", opts, "fleet plan")) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'C':
			cmp = true;
			break;
		case 'd':
			discrete = true;
			break;
		case 'F':
			first = discrete = true;
			break;
		case 'h':
			drfctl_help(stdout, "fleet");
			return EXIT_SUCCESS;
		default:
			return DRFCTL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "drfctl fleet plan: unexpected argument '%s'\n", argv[optind]);
		return DRFCTL_EXIT_USAGE;
	}
	if (!path) {
		fputs("drfctl fleet plan: which fleet? -c FLEET.conf\n", stderr);
		return DRFCTL_EXIT_USAGE;
	}
	if (cmp && discrete) {
		fputs("drfctl fleet plan: --compare shows every form; it does not combine with "
		      "--discrete or --first-fit\n", stderr);
		return DRFCTL_EXIT_USAGE;
	}
	ret = load(path, &c);
	if (ret)
		return ret;
	if (cmp) {
		ret = compare(&c, json);
		unload(&c);
		return ret;
	}
	form = !discrete ? DRF_FLEET_DIVISIBLE : first ? DRF_FLEET_FIRST_FIT : DRF_FLEET_BEST_FIT;
	ret = drf_fleet_plan(&c.fleet, &c.p, form, &r);
	if (ret < 0) {
		fprintf(stderr, "drfctl fleet plan: %s\n", strerror(-ret));
		unload(&c);
		return EXIT_FAILURE;
	}
	if (json) {
		ret = plan_json(&c, form, &r);
	} else {
		plan_text(&c, form, &r);
		ret = EXIT_SUCCESS;
	}
	drfh_result_free(&r);
	unload(&c);
	return ret;
}

int drfctl_fleet(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		drfctl_help(argc < 2 ? stderr : stdout, "fleet");
		return argc < 2 ? DRFCTL_EXIT_USAGE : EXIT_SUCCESS;
	}
	if (strcmp(argv[1], "plan") == 0)
		return fleet_plan(argc - 1, argv + 1);
	if (strcmp(argv[1], "apply") == 0)
		return drfctl_fleet_apply(argc - 1, argv + 1);
	if (strcmp(argv[1], "status") == 0)
		return drfctl_fleet_status(argc - 1, argv + 1);
	if (strcmp(argv[1], "submit") == 0)
		return drfctl_fleet_submit(argc - 1, argv + 1);
	fprintf(stderr, "drfctl fleet: unknown command '%s' (plan, apply, status, submit)\n",
		argv[1]);
	return DRFCTL_EXIT_USAGE;
}
