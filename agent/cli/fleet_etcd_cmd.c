// SPDX-License-Identifier: MIT
/*
 * drfctl fleet apply and status: the fleet's tenants put in etcd, and what
 * etcd holds of the fleet (fleet.h): the nodes alive with their capacity,
 * the tenants with their global dominant shares and placements, each node's
 * assignment and its revision, the planner. One etcd client (etcd.h) on an
 * sd-event loop of the command's own, waited on with a deadline.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-event.h>

#include "cli.h"
#include "fleet.h"
#include "json.h"

/* The whole command's time: a call's own timeout is etcd.h's (5 s). */
#define DEADLINE_USEC (20 * DRF_USEC_PER_SEC)

struct etcd_opts {
	const char *endpoints, *prefix, *cacert, *cert, *key, *user, *password_file;
};

enum {
	OPT_ENDPOINTS = 0x100,
	OPT_PREFIX,
	OPT_CACERT,
	OPT_CERT,
	OPT_KEY,
	OPT_USER,
	OPT_PASSWORD_FILE,
	OPT_JSON,
};

#define ETCD_LONGOPTS                                                                            \
	{ "endpoints", required_argument, NULL, OPT_ENDPOINTS },                                 \
	{ "prefix", required_argument, NULL, OPT_PREFIX },                                       \
	{ "cacert", required_argument, NULL, OPT_CACERT },                                       \
	{ "cert", required_argument, NULL, OPT_CERT },                                           \
	{ "key", required_argument, NULL, OPT_KEY },                                             \
	{ "user", required_argument, NULL, OPT_USER },                                           \
	{ "password-file", required_argument, NULL, OPT_PASSWORD_FILE }

/* An option of the etcd client's: true when opt was one. */
static bool etcd_opt(int opt, struct etcd_opts *o)
{
	switch (opt) {
	case OPT_ENDPOINTS:
		o->endpoints = optarg;
		return true;
	case OPT_PREFIX:
		o->prefix = optarg;
		return true;
	case OPT_CACERT:
		o->cacert = optarg;
		return true;
	case OPT_CERT:
		o->cert = optarg;
		return true;
	case OPT_KEY:
		o->key = optarg;
		return true;
	case OPT_USER:
		o->user = optarg;
		return true;
	case OPT_PASSWORD_FILE:
		o->password_file = optarg;
		return true;
	default:
		return false;
	}
}

/* The loop and the client: 0, or an exit status with the reason said. */
static int connect_etcd(const char *cmd, const struct etcd_opts *o, sd_event **ret_ev,
			struct etcd **ret_e)
{
	struct etcd_config c = { .endpoints = o->endpoints, .cacert = o->cacert, .cert = o->cert,
				 .key = o->key, .user = o->user };
	struct drf_fleet_keys k;
	char err[512], password[512];
	sd_event *ev = NULL;
	int r;

	if (!o->endpoints) {
		fprintf(stderr, "drfctl fleet %s: which etcd? --endpoints URL[,URL...]\n", cmd);
		return DRFCTL_EXIT_USAGE;
	}
	if (drf_fleet_keys_init(&k, o->prefix) < 0) {
		fprintf(stderr, "drfctl fleet %s: --prefix '%s': expected 1-%d bytes beginning and "
			"ending with '/'\n", cmd, o->prefix, DRF_FLEET_PREFIX_MAX);
		return DRFCTL_EXIT_USAGE;
	}
	/* A file, not the command line, which every user of the host can read in /proc. */
	if (o->password_file) {
		r = etcd_read_password(o->password_file, password, sizeof(password));
		if (r < 0) {
			fprintf(stderr, "drfctl fleet %s: --password-file '%s': %s\n", cmd,
				o->password_file, r == -E2BIG ? "longer than 511 bytes" : strerror(-r));
			return DRFCTL_EXIT_USAGE;
		}
		c.password = password;
	}
	r = sd_event_new(&ev);
	if (r < 0) {
		explicit_bzero(password, sizeof(password));
		fprintf(stderr, "drfctl fleet %s: %s\n", cmd, strerror(-r));
		return EXIT_FAILURE;
	}
	r = etcd_open(&c, ev, ret_e, err, sizeof(err));
	explicit_bzero(password, sizeof(password));
	if (r < 0) {
		fprintf(stderr, "drfctl fleet %s: %s\n", cmd, r == -EINVAL ? err : strerror(-r));
		sd_event_unref(ev);
		return r == -EINVAL ? DRFCTL_EXIT_USAGE : EXIT_FAILURE;
	}
	*ret_ev = ev;
	return 0;
}

/* drfctl fleet apply. */

struct apply_wait {
	bool done;
	int err;
	char msg[512];
	struct drf_fleet_apply_result r;
};

static void apply_cb(void *userdata, int err, const char *msg,
		     const struct drf_fleet_apply_result *r)
{
	struct apply_wait *w = userdata;

	w->done = true;
	w->err = err;
	if (err)
		snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : strerror(-err));
	else
		w->r = *r;
}

int drfctl_fleet_apply(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		ETCD_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct etcd_opts o = { .prefix = DRF_FLEET_DEFAULT_PREFIX };
	struct apply_wait w = { 0 };
	const char *path = NULL;
	struct drf_fleet fleet;
	struct etcd *e = NULL;
	sd_event *ev = NULL;
	uint64_t end;
	char err[1024];
	int opt, r, ret;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "f:h", opts, NULL)) != -1) {
		if (etcd_opt(opt, &o))
			continue;
		switch (opt) {
		case 'f':
			path = optarg;
			break;
		case 'h':
			drfctl_help(stdout, "fleet");
			return EXIT_SUCCESS;
		default:
			drfctl_help(stderr, "fleet");
			return DRFCTL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "drfctl fleet apply: unexpected argument '%s'\n", argv[optind]);
		return DRFCTL_EXIT_USAGE;
	}
	if (!path) {
		fputs("drfctl fleet apply: which fleet? -f FLEET.conf\n", stderr);
		return DRFCTL_EXIT_USAGE;
	}
	if (drf_fleet_load_tenants(path, &fleet, err, sizeof(err)) < 0) {
		fprintf(stderr, "drfctl: %s\n", err);
		return DRFCTL_EXIT_CONFIG;
	}
	ret = connect_etcd("apply", &o, &ev, &e);
	if (ret) {
		drf_fleet_free(&fleet);
		return ret;
	}
	if (fleet.n_servers)
		fprintf(stderr, "drfctl fleet apply: note: the %zu [server] sections of %s are not "
			"applied: the fleet's servers are the drfd nodes that register\n",
			fleet.n_servers, path);
	r = drf_fleet_apply(e, o.prefix, fleet.cfg.tenants, fleet.cfg.n_tenants, apply_cb, &w);
	if (r < 0) {
		w.done = true;
		w.err = r;
		snprintf(w.msg, sizeof(w.msg), "%s", strerror(-r));
	}
	end = drf_mono_usec(&drf_clock_system) + DEADLINE_USEC;
	while (!w.done) {
		uint64_t t = drf_mono_usec(&drf_clock_system);

		if (t >= end) {
			w.err = -ETIMEDOUT;
			snprintf(w.msg, sizeof(w.msg), "no answer within %llu s",
				 DEADLINE_USEC / DRF_USEC_PER_SEC);
			break;
		}
		r = sd_event_run(ev, end - t);
		if (r < 0) {
			w.err = r;
			snprintf(w.msg, sizeof(w.msg), "%s", strerror(-r));
			break;
		}
	}
	etcd_close(e); /* a call still pending ends here (its callback sees -ECANCELED) */
	sd_event_unref(ev);
	if (w.err) {
		fprintf(stderr, "drfctl fleet apply: %s\n", w.msg);
		ret = EXIT_FAILURE;
	} else {
		printf("%zu tenants put, %zu deleted, %zu unchanged under %stenants/ "
		       "(revision %lld)\n", w.r.put, w.r.deleted, w.r.unchanged, o.prefix,
		       (long long)w.r.revision);
		ret = EXIT_SUCCESS;
	}
	drf_fleet_free(&fleet);
	return ret;
}

/* drfctl fleet status. */

struct status_wait {
	int err;
	char msg[512];
	struct drf_fleet_view v;
};

static void view_cb(void *userdata, int err, const char *msg, struct drf_fleet_view *v)
{
	struct status_wait *w = userdata;

	w->err = err;
	if (err) {
		snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : strerror(-err));
		return;
	}
	/* Taken whole (fleet.h allows it). */
	w->v = *v;
	memset(v, 0, sizeof(*v));
}

/* What the assignments of the nodes alive give each tenant. */
struct tenant_sum {
	double alloc[DRF_NRES];
	double tasks;
};

static void sums(const struct drf_fleet_view *v, double pool[DRF_NRES], struct tenant_sum *s)
{
	memset(pool, 0, DRF_NRES * sizeof(*pool));
	for (size_t k = 0; k < v->n_nodes; k++)
		for (int r = 0; r < DRF_NRES; r++)
			pool[r] += v->nodes[k].capacity[r];
	for (size_t a = 0; a < v->n_assigns; a++) {
		if (drf_fleet_view_node(v, v->assigns[a].node) < 0)
			continue;
		for (size_t j = 0; j < v->assigns[a].a.n; j++) {
			const struct drf_fleet_share *sh = &v->assigns[a].a.tenants[j];

			for (size_t i = 0; i < v->n_tenants; i++) {
				if (strcmp(v->tenants[i].t.name, sh->name) != 0)
					continue;
				s[i].tasks += sh->tasks;
				for (int r = 0; r < DRF_NRES; r++)
					s[i].alloc[r] += sh->alloc[r];
			}
		}
	}
}

/* The global dominant share: the largest share of the pool the tenant holds. */
static double gds(const double pool[DRF_NRES], const struct tenant_sum *s)
{
	double g = 0;

	for (int r = 0; r < DRF_NRES; r++)
		if (pool[r] > 0 && s->alloc[r] / pool[r] > g)
			g = s->alloc[r] / pool[r];
	return g;
}

static void res_json(json_object *o, const char *key, const double *v, const bool *declared)
{
	json_object *x = drf_json_set_object(o, key);

	for (int r = 0; r < DRF_NRES; r++)
		if (declared ? declared[r] : v[r] > 0)
			drf_json_set_num(x, drf_res_name((enum drf_res)r), v[r]);
}

static const char *planner_name(const struct drf_fleet_view *v)
{
	return drf_name_valid(v->planner) ? v->planner : "(not a node's name)";
}

static int status_json(const struct drf_fleet_view *v)
{
	json_object *doc = drf_json_object(), *arr;
	struct tenant_sum *s = calloc(v->n_tenants + 1, sizeof(*s));
	double pool[DRF_NRES];
	int r;

	if (!s) {
		json_object_put(doc);
		return -ENOMEM;
	}
	sums(v, pool, s);
	drf_json_set_int(doc, "revision", v->revision);
	if (v->planner_revision) {
		json_object *p = drf_json_set_object(doc, "planner");

		drf_json_set_str(p, "name", planner_name(v));
		drf_json_set_int(p, "token", v->planner_revision);
	} else {
		drf_json_set_null(doc, "planner");
	}
	arr = drf_json_set_array(doc, "nodes");
	/* The nodes alive, then those gone whose assignment is still there. */
	for (size_t k = 0; k < v->n_nodes + v->n_assigns; k++) {
		const struct drf_fleet_nodeinfo *nd = k < v->n_nodes ? &v->nodes[k] : NULL;
		const char *name = nd ? nd->name : v->assigns[k - v->n_nodes].node;
		ssize_t a = drf_fleet_view_assign(v, name);
		json_object *o, *l;

		if (!nd && drf_fleet_view_node(v, name) >= 0)
			continue;
		o = drf_json_append_object(arr);
		drf_json_set_str(o, "name", name);
		drf_json_set_bool(o, "alive", nd != NULL);
		if (nd) {
			res_json(o, "capacity", nd->capacity, NULL);
			l = drf_json_set_object(o, "labels");
			for (size_t i = 0; i < nd->n_labels; i++)
				drf_json_set_str(l, nd->labels[i].key, nd->labels[i].value);
		}
		if (a < 0) {
			drf_json_set_null(o, "assignment");
			continue;
		}
		{
			const struct drf_fleet_assignment *as = &v->assigns[a].a;
			json_object *x = drf_json_set_object(o, "assignment"), *t;

			drf_json_set_int(x, "revision", as->revision);
			drf_json_set_str(x, "planner", as->planner);
			t = drf_json_set_array(x, "tenants");
			for (size_t j = 0; j < as->n; j++) {
				json_object *y = drf_json_append_object(t);

				drf_json_set_str(y, "name", as->tenants[j].name);
				drf_json_set_str(y, "cgroup", as->tenants[j].cgroup);
				drf_json_set_num(y, "weight", as->tenants[j].weight);
				drf_json_set_num(y, "tasks", as->tenants[j].tasks);
				res_json(y, "alloc", as->tenants[j].alloc, NULL);
			}
		}
	}
	arr = drf_json_set_array(doc, "tenants");
	for (size_t i = 0; i < v->n_tenants; i++) {
		const struct drf_tenant *t = &v->tenants[i].t;
		json_object *o = drf_json_append_object(arr), *pl;

		drf_json_set_str(o, "name", t->name);
		drf_json_set_str(o, "cgroup", t->cgroup);
		drf_json_set_num(o, "weight", t->weight);
		if (t->task_model) {
			if (isinf(t->tasks))
				drf_json_set_str(o, "tasks", "unlimited");
			else
				drf_json_set_num(o, "tasks", t->tasks);
			res_json(o, "task", t->vec, t->declared);
		} else {
			res_json(o, "demand", t->vec, t->declared);
		}
		drf_json_set_num(o, "global_dominant_share", gds(pool, &s[i]));
		drf_json_set_num(o, "tasks_placed", s[i].tasks);
		pl = drf_json_set_object(o, "placement");
		for (size_t a = 0; a < v->n_assigns; a++) {
			if (drf_fleet_view_node(v, v->assigns[a].node) < 0)
				continue;
			for (size_t j = 0; j < v->assigns[a].a.n; j++)
				if (strcmp(v->assigns[a].a.tenants[j].name, t->name) == 0)
					drf_json_set_num(pl, v->assigns[a].node,
							 v->assigns[a].a.tenants[j].tasks);
		}
	}
	drf_json_set_u64(doc, "invalid_values", v->n_invalid);
	r = drf_json_print(stdout, doc);
	json_object_put(doc);
	free(s);
	return r;
}

static void quantities(const double *v, const bool *declared)
{
	char buf[64];
	bool any = false;

	for (int r = 0; r < DRF_NRES; r++) {
		if (!(declared ? declared[r] : v[r] > 0))
			continue;
		printf("%s%s %s", any ? " " : "", drf_res_name((enum drf_res)r),
		       drf_format_quantity(v[r], drf_res_unit((enum drf_res)r), buf, sizeof(buf)));
		any = true;
	}
	if (!any)
		printf("-");
}

static int status_text(const struct drf_fleet_view *v)
{
	struct tenant_sum *s = calloc(v->n_tenants + 1, sizeof(*s));
	double pool[DRF_NRES];

	if (!s)
		return -ENOMEM;
	sums(v, pool, s);
	if (v->planner_revision)
		printf("planner: %s (token %lld)\n", planner_name(v),
		       (long long)v->planner_revision);
	else
		printf("planner: none\n");
	printf("revision: %lld\n\n%-20s %-6s %-10s %s\n", (long long)v->revision, "NODE", "ALIVE",
	       "ASSIGNED", "CAPACITY / TENANTS (tasks)");
	for (size_t k = 0; k < v->n_nodes + v->n_assigns; k++) {
		const struct drf_fleet_nodeinfo *nd = k < v->n_nodes ? &v->nodes[k] : NULL;
		const char *name = nd ? nd->name : v->assigns[k - v->n_nodes].node;
		ssize_t a = drf_fleet_view_assign(v, name);
		char rev[32] = "-";

		if (!nd && drf_fleet_view_node(v, name) >= 0)
			continue;
		if (a >= 0)
			snprintf(rev, sizeof(rev), "%lld", (long long)v->assigns[a].a.revision);
		printf("%-20s %-6s %-10s ", name, nd ? "yes" : "no", rev);
		if (nd)
			quantities(nd->capacity, NULL);
		printf("\n");
		if (a < 0)
			continue;
		printf("%39s", "");
		for (size_t j = 0; j < v->assigns[a].a.n; j++)
			printf("%s%s:%g", j ? " " : "", v->assigns[a].a.tenants[j].name,
			       v->assigns[a].a.tenants[j].tasks);
		printf("%s\n", v->assigns[a].a.n ? "" : "(none)");
	}
	printf("\n%-20s %7s %10s %10s %s\n", "TENANT", "WEIGHT", "TASKS", "GLOBAL-DS", "SHAPE");
	for (size_t i = 0; i < v->n_tenants; i++) {
		const struct drf_tenant *t = &v->tenants[i].t;
		char tasks[48];

		if (!t->task_model)
			snprintf(tasks, sizeof(tasks), "%g", s[i].tasks);
		else if (isinf(t->tasks))
			snprintf(tasks, sizeof(tasks), "%g/inf", s[i].tasks);
		else
			snprintf(tasks, sizeof(tasks), "%g/%g", s[i].tasks, t->tasks);
		printf("%-20s %7g %10s %10.4f %s ", t->name, t->weight, tasks, gds(pool, &s[i]),
		       t->task_model ? "task" : "demand");
		quantities(t->vec, t->declared);
		printf("\n");
	}
	if (v->n_invalid)
		printf("\n%zu values passed over; the first: %s\n", v->n_invalid, v->invalid);
	free(s);
	return 0;
}

int drfctl_fleet_status(int argc, char **argv)
{
	static const struct option opts[] = {
		ETCD_LONGOPTS,
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct etcd_opts o = { .prefix = DRF_FLEET_DEFAULT_PREFIX };
	struct status_wait w = { 0 };
	struct etcd *e = NULL;
	sd_event *ev = NULL;
	bool json = false;
	uint64_t id = 0;
	int opt, r, ret;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (etcd_opt(opt, &o))
			continue;
		switch (opt) {
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			drfctl_help(stdout, "fleet");
			return EXIT_SUCCESS;
		default:
			drfctl_help(stderr, "fleet");
			return DRFCTL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "drfctl fleet status: unexpected argument '%s'\n", argv[optind]);
		return DRFCTL_EXIT_USAGE;
	}
	ret = connect_etcd("status", &o, &ev, &e);
	if (ret)
		return ret;
	r = drf_fleet_read(e, o.prefix, view_cb, &w, &id);
	if (r == 0)
		r = etcd_wait(e, id, DEADLINE_USEC);
	if (r == 0 && w.err) {
		fprintf(stderr, "drfctl fleet status: %s\n", w.msg);
		r = w.err;
	} else if (r < 0) {
		fprintf(stderr, "drfctl fleet status: %s\n", r == -ETIMEDOUT ? "no answer in time"
										: strerror(-r));
	}
	/* A call still pending ends here. */
	etcd_close(e);
	sd_event_unref(ev);
	if (r < 0) {
		drf_fleet_view_clear(&w.v);
		return EXIT_FAILURE;
	}
	r = json ? status_json(&w.v) : status_text(&w.v);
	drf_fleet_view_clear(&w.v);
	if (r < 0) {
		fprintf(stderr, "drfctl fleet status: %s\n", strerror(-r));
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}
