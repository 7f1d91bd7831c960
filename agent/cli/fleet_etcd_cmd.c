// SPDX-License-Identifier: MIT
/*
 * drfctl fleet apply, status and submit: the fleet's tenants put in etcd,
 * what etcd holds of the fleet (fleet.h): the nodes alive with their
 * capacity, the tenants with their global dominant shares and placements,
 * each node's assignment and its revision, the planner, the fleet tasks and
 * their states; and a task placed on a node by Best-Fit (drf_fleet_place_task)
 * for its task queue. One etcd client (etcd.h) on an sd-event loop of the
 * command's own, waited on with a deadline.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

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
	OPT_TASK_KEY,
	OPT_RES, /* OPT_RES + enum drf_res: --cpu, --memory, ... */
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

#define RETRY_USEC (500 * DRF_USEC_PER_MSEC)

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
	while ((opt = drfctl_getopt(argc, argv, "f:h", opts, "fleet apply")) != -1) {
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
	end = drf_mono_usec(&drf_clock_system) + DEADLINE_USEC;
	/*
	 * -EAGAIN: etcd is electing a leader ("no leader", "leader changed": gRPC
	 * code 14); -ETIMEDOUT: no member answered a call in its time (a read on
	 * members without a leader waits for one: a member just killed was the
	 * leader). The write may or may not have been made; the whole apply reads
	 * again and writes only what differs, so it is tried again every half
	 * second until the deadline.
	 */
	for (;;) {
		w = (struct apply_wait){ 0 };
		r = drf_fleet_apply(e, o.prefix, fleet.cfg.tenants, fleet.cfg.n_tenants, apply_cb,
				    &w);
		if (r < 0) {
			w.done = true;
			w.err = r;
			snprintf(w.msg, sizeof(w.msg), "%s", strerror(-r));
		}
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
		if ((w.err != -EAGAIN && w.err != -ETIMEDOUT) ||
		    drf_mono_usec(&drf_clock_system) + RETRY_USEC >= end)
			break;
		fprintf(stderr, "drfctl fleet apply: %s; trying again\n", w.msg);
		usleep(RETRY_USEC);
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
			drf_json_set_num(x, drf_res_name((enum drf_res)r),
					 drf_res_shown((enum drf_res)r, v[r]));
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
	arr = drf_json_set_array(doc, "tasks");
	for (size_t i = 0; i < v->n_tasks; i++) {
		const struct drf_fleet_task_entry *te = &v->tasks[i];
		json_object *o = drf_json_append_object(arr), *a;

		drf_json_set_str(o, "id", te->t.id);
		drf_json_set_str(o, "node", te->t.node);
		drf_json_set_str(o, "tenant", te->t.tenant);
		drf_json_set_str(o, "state", te->s.st == DRF_FLEET_TASK_NONE
						     ? "submitted" : drf_fleet_task_st_name(te->s.st));
		if (te->s.st == DRF_FLEET_TASK_EXITED)
			drf_json_set_int(o, "code", te->s.code);
		else
			drf_json_set_null(o, "code");
		if (te->s.st == DRF_FLEET_TASK_FAILED || te->s.st == DRF_FLEET_TASK_REFUSED)
			drf_json_set_str(o, "why", te->s.why);
		else
			drf_json_set_null(o, "why");
		if (te->s.task)
			drf_json_set_u64(o, "local_task", te->s.task);
		else
			drf_json_set_null(o, "local_task");
		res_json(o, "task", te->t.vec, NULL);
		a = drf_json_set_array(o, "argv");
		for (size_t k = 0; k < te->t.argc; k++)
			drf_json_append_str(a, te->t.argv[k]);
		drf_json_set_int(o, "submitted", te->t.submitted);
		drf_json_set_str(o, "by", te->t.by);
		drf_json_set_str(o, "key", te->t.key);
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
	if (v->n_tasks)
		printf("\n%-24s %-20s %-20s %s\n", "TASK", "NODE", "TENANT", "STATE");
	for (size_t i = 0; i < v->n_tasks; i++) {
		const struct drf_fleet_task_entry *te = &v->tasks[i];

		printf("%-24s %-20s %-20s ", te->t.id, te->t.node, te->t.tenant);
		switch (te->s.st) {
		case DRF_FLEET_TASK_NONE:
			printf("submitted (not yet taken by the node)\n");
			break;
		case DRF_FLEET_TASK_EXITED:
			printf("exited %d\n", te->s.code);
			break;
		case DRF_FLEET_TASK_FAILED:
		case DRF_FLEET_TASK_REFUSED:
			printf("%s: ", drf_fleet_task_st_name(te->s.st));
			drfctl_print_text(stdout, te->s.why);
			printf("\n");
			break;
		default:
			printf("%s\n", drf_fleet_task_st_name(te->s.st));
		}
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
	while ((opt = drfctl_getopt(argc, argv, "h", opts, "fleet status")) != -1) {
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
	r = drf_fleet_read_tasks(e, o.prefix, view_cb, &w, &id);
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

/* drfctl fleet submit. */

struct submit_wait {
	bool done;
	int err;
	char msg[512];
	bool placed;
	char node[DRF_TENANT_NAME_MAX + 1];
	int64_t revision;
};

static void submit_cb(void *userdata, int err, const char *msg, bool placed, const char *node,
		      int64_t revision)
{
	struct submit_wait *w = userdata;

	w->done = true;
	w->err = err;
	if (err) {
		snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : strerror(-err));
		return;
	}
	w->placed = placed;
	snprintf(w->node, sizeof(w->node), "%s", node ? node : "");
	w->revision = revision;
}

/* Runs the loop until *done, or the deadline (-ETIMEDOUT): 0 or -errno with why in msg. */
static int wait_done(sd_event *ev, const bool *done, char *msg, size_t len)
{
	uint64_t end = drf_mono_usec(&drf_clock_system) + DEADLINE_USEC;

	while (!*done) {
		uint64_t t = drf_mono_usec(&drf_clock_system);
		int r;

		if (t >= end) {
			snprintf(msg, len, "no answer within %llu s", DEADLINE_USEC / DRF_USEC_PER_SEC);
			return -ETIMEDOUT;
		}
		r = sd_event_run(ev, end - t);
		if (r < 0) {
			snprintf(msg, len, "%s", strerror(-r));
			return r;
		}
	}
	return 0;
}

/* A new task's ID: the time (sorting as it) and 64 random bits. */
static int new_id(char *buf, size_t len)
{
	uint64_t rnd;

	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -errno ? -errno : -EIO;
	snprintf(buf, len, "%lld-%016" PRIx64,
		 (long long)(drf_real_usec(&drf_clock_system) / DRF_USEC_PER_SEC), rnd);
	return 0;
}

static void submit_print(const struct drf_fleet_task *t, bool json, bool placed, bool waits,
			 int64_t revision)
{
	if (json) {
		json_object *doc = drf_json_object();

		drf_json_set_str(doc, "id", t->id);
		drf_json_set_str(doc, "node", t->node);
		drf_json_set_str(doc, "tenant", t->tenant);
		res_json(doc, "task", t->vec, NULL);
		drf_json_set_bool(doc, "placed", placed);
		drf_json_set_bool(doc, "waits", waits);
		drf_json_set_int(doc, "revision", revision);
		drf_json_print(stdout, doc);
		json_object_put(doc);
		return;
	}
	if (!placed) {
		printf("task %s was placed on node %s before (the same --task-key): nothing "
		       "written\n", t->id, t->node);
		return;
	}
	printf("task %s placed on node %s (tenant %s, task ", t->id, t->node, t->tenant);
	quantities(t->vec, NULL);
	printf(")%s\n", waits ? "; no node has room for it now: it waits in that node's queue"
			      : "");
}

static const struct option submit_opts[] = {
	ETCD_LONGOPTS,
	{ "cpu", required_argument, NULL, OPT_RES + DRF_RES_CPU },
	{ "memory", required_argument, NULL, OPT_RES + DRF_RES_MEMORY },
	{ "io-read-bps", required_argument, NULL, OPT_RES + DRF_RES_IO_READ },
	{ "io-write-bps", required_argument, NULL, OPT_RES + DRF_RES_IO_WRITE },
	{ "net-rate", required_argument, NULL, OPT_RES + DRF_RES_NET },
	{ "task-key", required_argument, NULL, OPT_TASK_KEY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct submit_args {
	struct etcd_opts o;
	const char *task_key;
	double vec[DRF_NRES];
	bool given[DRF_NRES];
	bool json;
};

/* Options up to the first word; -1 to go on, else the exit code. */
static int submit_options(int argc, char **argv, struct submit_args *a)
{
	int opt;

	while ((opt = drfctl_getopt(argc, argv, "+h", submit_opts, "fleet submit")) != -1) {
		int res = opt - OPT_RES;
		const char *why = NULL;

		if (etcd_opt(opt, &a->o))
			continue;
		if (opt == OPT_JSON) {
			a->json = true;
		} else if (opt == OPT_TASK_KEY) {
			if (!drf_name_valid(optarg)) {
				fprintf(stderr, "drfctl fleet submit: --task-key '%s': 1-%d characters "
					"of [A-Za-z0-9_.-] not starting with '.' (it is the task's ID)\n",
					optarg, DRF_TENANT_NAME_MAX);
				return DRFCTL_EXIT_USAGE;
			}
			a->task_key = optarg;
		} else if (opt == 'h') {
			drfctl_help(stdout, "fleet");
			return EXIT_SUCCESS;
		} else if (res >= 0 && res < DRF_NRES) {
			if (drf_parse_quantity(optarg, drf_res_unit(res), &a->vec[res], &why) < 0) {
				fprintf(stderr, "drfctl fleet submit: --%s '%s': %s\n",
					drf_res_name(res), optarg, why);
				return DRFCTL_EXIT_USAGE;
			}
			a->given[res] = true;
		} else {
			return DRFCTL_EXIT_USAGE;
		}
	}
	return -1;
}

/* Who submits, for people: the etcd user, else the local user's name (or uid). */
static char *submitter(const struct etcd_opts *o)
{
	struct passwd *pw;
	char buf[32];

	if (o->user)
		return strdup(o->user);
	pw = getpwuid(getuid());
	if (pw && pw->pw_name)
		return strdup(pw->pw_name);
	snprintf(buf, sizeof(buf), "uid %u", (unsigned)getuid());
	return strdup(buf);
}

/*
 * The task's vector: the tenant's task shape, with what the command line
 * gives instead; a demand tenant has no shape, so the command line says it.
 * EXIT_SUCCESS, or DRFCTL_EXIT_CONFIG with why said.
 */
static int task_vector(const struct drf_fleet_view *v, const char *tenant,
		       const struct submit_args *a, double vec[DRF_NRES])
{
	const struct drf_tenant *t = NULL;
	bool any = false;

	for (size_t i = 0; i < v->n_tenants; i++)
		if (strcmp(v->tenants[i].t.name, tenant) == 0)
			t = &v->tenants[i].t;
	if (!t) {
		fprintf(stderr, "drfctl fleet submit: refused: no tenant '%s' in the fleet under "
			"%stenants/ (drfctl fleet apply)\n", tenant, a->o.prefix);
		return DRFCTL_EXIT_CONFIG;
	}
	for (int r = 0; r < DRF_NRES; r++) {
		vec[r] = a->given[r] ? a->vec[r] : t->task_model && t->declared[r] ? t->vec[r] : 0;
		any = any || vec[r] > 0;
	}
	if (!any) {
		fprintf(stderr, "drfctl fleet submit: refused: tenant '%s': the task needs nothing%s\n",
			tenant, t->task_model ? "" : " (a demand tenant has no task shape: give --cpu, "
			"--memory, ...)");
		return DRFCTL_EXIT_CONFIG;
	}
	return EXIT_SUCCESS;
}

int drfctl_fleet_submit(int argc, char **argv)
{
	struct submit_args a = { .o = { .prefix = DRF_FLEET_DEFAULT_PREFIX } };
	struct drf_fleet_task t = { 0 };
	struct status_wait w = { 0 };
	struct submit_wait sw = { 0 };
	struct etcd *e = NULL;
	sd_event *ev = NULL;
	const char *tenant;
	char err[512];
	bool waits = false;
	size_t node;
	uint64_t id = 0;
	int i, r, ret;

	/* Options before TENANT, then after it, up to "--" or CMD. */
	optind = 1;
	ret = submit_options(argc, argv, &a);
	if (ret >= 0)
		return ret;
	if (optind >= argc) {
		fputs("drfctl fleet submit: which tenant? usage: drfctl fleet submit TENANT "
		      "--endpoints URL [options] -- CMD [ARG...]\n", stderr);
		return DRFCTL_EXIT_USAGE;
	}
	tenant = argv[optind++];
	ret = submit_options(argc, argv, &a);
	if (ret >= 0)
		return ret;
	i = optind;
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc) {
		fputs("drfctl fleet submit: no command; usage: drfctl fleet submit TENANT "
		      "--endpoints URL [options] -- CMD [ARG...]\n", stderr);
		return DRFCTL_EXIT_USAGE;
	}
	if (!drf_name_valid(tenant)) {
		fprintf(stderr, "drfctl fleet submit: tenant '%s': not a tenant's name\n", tenant);
		return DRFCTL_EXIT_USAGE;
	}
	if (argc - i > DRF_FLEET_TASK_ARGS_MAX) {
		fprintf(stderr, "drfctl fleet submit: %d words: at most %d\n", argc - i,
			DRF_FLEET_TASK_ARGS_MAX);
		return DRFCTL_EXIT_USAGE;
	}
	ret = connect_etcd("submit", &a.o, &ev, &e);
	if (ret)
		return ret;
	r = drf_fleet_read_tasks(e, a.o.prefix, view_cb, &w, &id);
	if (r == 0)
		r = etcd_wait(e, id, DEADLINE_USEC);
	if (r == 0 && w.err) {
		fprintf(stderr, "drfctl fleet submit: reading the fleet: %s\n", w.msg);
		ret = EXIT_FAILURE;
		goto out;
	} else if (r < 0) {
		fprintf(stderr, "drfctl fleet submit: reading the fleet: %s\n",
			r == -ETIMEDOUT ? "no answer in time" : strerror(-r));
		ret = EXIT_FAILURE;
		goto out;
	}
	snprintf(t.tenant, sizeof(t.tenant), "%s", tenant);
	/* A retry of a keyed submit: where it went, with nothing written. */
	if (a.task_key) {
		for (size_t k = 0; k < w.v.n_tasks; k++) {
			if (strcmp(w.v.tasks[k].t.id, a.task_key) != 0)
				continue;
			snprintf(t.id, sizeof(t.id), "%s", a.task_key);
			snprintf(t.node, sizeof(t.node), "%s", w.v.tasks[k].t.node);
			snprintf(t.tenant, sizeof(t.tenant), "%s", w.v.tasks[k].t.tenant);
			memcpy(t.vec, w.v.tasks[k].t.vec, sizeof(t.vec));
			submit_print(&t, a.json, false, false, w.v.revision);
			ret = EXIT_SUCCESS;
			goto out;
		}
	}
	ret = task_vector(&w.v, tenant, &a, t.vec);
	if (ret)
		goto out;
	r = drf_fleet_place_task(&w.v, tenant, t.vec, &node, &waits, err, sizeof(err));
	if (r == -EBUSY) {
		/* Nothing written: a retry later is safe, with or without --task-key. */
		fprintf(stderr, "drfctl fleet submit: busy: %s\n", err);
		ret = DRFCTL_EXIT_TEMPFAIL;
		goto out;
	}
	if (r < 0) {
		fprintf(stderr, "drfctl fleet submit: refused: %s\n", err);
		ret = DRFCTL_EXIT_CONFIG;
		goto out;
	}
	snprintf(t.node, sizeof(t.node), "%s", w.v.nodes[node].name);
	if (a.task_key)
		snprintf(t.id, sizeof(t.id), "%s", a.task_key);
	else if ((r = new_id(t.id, sizeof(t.id))) < 0) {
		fprintf(stderr, "drfctl fleet submit: cannot make an ID: %s\n", strerror(-r));
		ret = EXIT_FAILURE;
		goto out;
	}
	t.argv = argv + i;
	t.argc = (size_t)(argc - i);
	t.submitted = (int64_t)(drf_real_usec(&drf_clock_system) / DRF_USEC_PER_SEC);
	t.by = submitter(&a.o);
	t.key = (char *)a.task_key;
	r = drf_fleet_submit(e, a.o.prefix, &t, submit_cb, &sw);
	if (r == 0)
		r = wait_done(ev, &sw.done, sw.msg, sizeof(sw.msg));
	else
		snprintf(sw.msg, sizeof(sw.msg), "%s", strerror(-r));
	if (r == 0 && sw.err)
		r = sw.err;
	free(t.by);
	t.argv = NULL;
	t.argc = 0;
	t.by = t.key = NULL;
	if (r < 0) {
		/* A txn without an answer may have been done: a retry with --task-key says. */
		fprintf(stderr, "drfctl fleet submit: writing %stasks/%s/%s: %s%s\n", a.o.prefix,
			t.node, t.id, sw.msg, a.task_key ? "" : " (it may be written all the same; "
			"--task-key makes a retry safe)");
		ret = EXIT_FAILURE;
		goto out;
	}
	if (!sw.placed) {
		snprintf(t.node, sizeof(t.node), "%s", sw.node);
		waits = false;
	}
	submit_print(&t, a.json, sw.placed, waits, sw.revision);
	ret = EXIT_SUCCESS;
out:
	/* A call still pending ends here. */
	etcd_close(e);
	sd_event_unref(ev);
	drf_fleet_view_clear(&w.v);
	return ret;
}
