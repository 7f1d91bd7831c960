// SPDX-License-Identifier: MIT
/*
 * The fleet as etcd holds it (see fleet.h): its keys, its read at one
 * revision, the plan of a view, and `drfctl fleet apply`'s txn.
 */
#include "fleet.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleetplan.h"
#include "text.h"

/* How often apply reads and tries again when someone wrote in between. */
#define APPLY_TRIES 5

int drf_fleet_keys_init(struct drf_fleet_keys *k, const char *prefix)
{
	size_t n = prefix ? strlen(prefix) : 0;

	if (n == 0 || n > DRF_FLEET_PREFIX_MAX || prefix[0] != '/' || prefix[n - 1] != '/')
		return -EINVAL;
	memset(k, 0, sizeof(*k));
	memcpy(k->prefix, prefix, n);
	snprintf(k->nodes, sizeof(k->nodes), "%snodes/", prefix);
	snprintf(k->tenants, sizeof(k->tenants), "%stenants/", prefix);
	snprintf(k->assign, sizeof(k->assign), "%sassign/", prefix);
	snprintf(k->planner, sizeof(k->planner), "%splanner", prefix);
	snprintf(k->tasks, sizeof(k->tasks), "%stasks/", prefix);
	snprintf(k->taskids, sizeof(k->taskids), "%staskids/", prefix);
	snprintf(k->taskstate, sizeof(k->taskstate), "%staskstate/", prefix);
	return 0;
}

int drf_fleet_key(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s%s", dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The name of key under dir, or NULL if it is not one of a name alone. */
static const char *name_under(const struct etcd_kv *kv, const char *dir)
{
	size_t n = strlen(dir);
	const char *name = kv->key + n;

	if (kv->key_len <= n || strncmp(kv->key, dir, n) != 0 || strlen(kv->key) != kv->key_len ||
	    !drf_name_valid(name))
		return NULL;
	return name;
}

void drf_fleet_view_clear(struct drf_fleet_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n_nodes; i++)
		drf_fleet_nodeinfo_clear(&v->nodes[i]);
	for (size_t i = 0; i < v->n_tenants; i++)
		drf_fleet_tenant_clear(&v->tenants[i].t);
	for (size_t i = 0; i < v->n_assigns; i++)
		drf_fleet_assignment_clear(&v->assigns[i].a);
	for (size_t i = 0; i < v->n_tasks; i++)
		drf_fleet_task_clear(&v->tasks[i].t);
	free(v->tasks);
	free(v->nodes);
	free(v->tenants);
	free(v->assigns);
	memset(v, 0, sizeof(*v));
}

static void invalid(struct drf_fleet_view *v, const struct etcd_kv *kv, const char *why)
{
	char key[128], w[128];

	/* Keys (and values, which the why may quote) are anyone's bytes: for logs and terminals. */
	if (v->n_invalid++ == 0)
		snprintf(v->invalid, sizeof(v->invalid), "%s: %s",
			 drf_escape_controls(kv->key, key, sizeof(key)),
			 drf_escape_controls(why, w, sizeof(w)));
}

static int cmp_node(const void *a, const void *b)
{
	return strcmp(((const struct drf_fleet_nodeinfo *)a)->name,
		      ((const struct drf_fleet_nodeinfo *)b)->name);
}

static int cmp_tenant(const void *a, const void *b)
{
	return strcmp(((const struct drf_fleet_tenant_entry *)a)->t.name,
		      ((const struct drf_fleet_tenant_entry *)b)->t.name);
}

static int cmp_assign(const void *a, const void *b)
{
	return strcmp(((const struct drf_fleet_assign_entry *)a)->node,
		      ((const struct drf_fleet_assign_entry *)b)->node);
}

/* Whether cgroup paths a and b are one, or one holds the other. */
static bool cgroups_overlap(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b), n = na < nb ? na : nb;

	return strncmp(a, b, n) == 0 && (na == nb || (na < nb ? b : a)[n] == '/');
}

/*
 * The tenants no node could take together with the others, or that no plan
 * could place, passed over as values that do not decode are (each by name,
 * the later one of two):
 *  - a cgroup that is another tenant's, or holds or is held by it: every node
 *    would refuse an assignment with both, as it refuses such a config;
 *  - a task so small against the fleet's pool (under 1/DRF_DISCRETE_MAX_TASKS
 *    of it in every resource it needs) and so many of them that whole-task
 *    placement would run to its task limit and fail the whole plan;
 *  - a bounded demand that no single node could hold (placed whole, it would
 *    get nothing, silently): one that leaves a resource out asks for the
 *    whole pool of it.
 */
static void tenants_check(struct drf_fleet_view *v)
{
	double pool[DRF_NRES] = { 0 };
	size_t kept = 0;

	for (size_t k = 0; k < v->n_nodes; k++)
		for (int r = 0; r < DRF_NRES; r++)
			if (drfh_capacity_check(v->nodes[k].capacity, NULL) == 0)
				pool[r] += v->nodes[k].capacity[r];
	for (size_t i = 0; i < v->n_tenants; i++) {
		struct drf_tenant *t = &v->tenants[i].t;
		const char *why = NULL, *other = NULL;
		char buf[256];

		for (size_t j = 0; j < kept && !why; j++)
			if (cgroups_overlap(t->cgroup, v->tenants[j].t.cgroup)) {
				why = "cgroup overlaps";
				other = v->tenants[j].t.name;
			}
		if (!why && !t->task_model) {
			bool fits = false;

			for (size_t k = 0; k < v->n_nodes && !fits; k++) {
				if (drfh_capacity_check(v->nodes[k].capacity, NULL) != 0)
					continue; /* left out of the plan */
				fits = true;
				for (int r = 0; r < DRF_NRES && fits; r++) {
					double want = t->declared[r] ? t->vec[r] : pool[r];

					fits = !(pool[r] > 0) ||
					       want <= v->nodes[k].capacity[r] * (1 + 1e-9);
				}
			}
			if (!fits)
				why = "demand fits no node";
		}
		if (!why && t->task_model && t->tasks > DRF_DISCRETE_MAX_TASKS) {
			double dom = 0;

			for (int r = 0; r < DRF_NRES; r++)
				if (pool[r] > 0 && t->declared[r] && t->vec[r] > 0)
					dom = fmax(dom, t->vec[r] / pool[r]);
			if (dom > 0 && dom < 1 / DRF_DISCRETE_MAX_TASKS)
				why = "task too small";
		}
		if (!why) {
			if (kept != i)
				v->tenants[kept] = v->tenants[i];
			kept++;
			continue;
		}
		if (other)
			snprintf(buf, sizeof(buf), "tenant '%s': cgroup '%.64s' overlaps tenant '%s''s",
				 t->name, t->cgroup, other);
		else if (!t->task_model)
			snprintf(buf, sizeof(buf), "tenant '%s': its demand fits no single node (a "
				 "resource it does not list asks for the whole pool): list each, or "
				 "give it a task shape", t->name);
		else
			snprintf(buf, sizeof(buf), "tenant '%s': its task is under 1/%.0f of the "
				 "fleet's pool in every resource, with no count to bound it: more tasks "
				 "than a plan places", t->name, DRF_DISCRETE_MAX_TASKS);
		if (v->n_invalid++ == 0)
			snprintf(v->invalid, sizeof(v->invalid), "%s", buf);
		drf_fleet_tenant_clear(t);
	}
	v->n_tenants = kept;
}

/*
 * A node whose capacity is past sane hardware (drfh.h's DRFH_CAP_*_MAX): kept
 * in the view (it is alive), left out of the plan by drf_fleet_compute(), and
 * said here: a node that registers 1e15 cores makes every task a speck.
 */
static void nodes_check(struct drf_fleet_view *v)
{
	for (size_t k = 0; k < v->n_nodes; k++) {
		int r;

		if (drfh_capacity_check(v->nodes[k].capacity, &r) == 0)
			continue;
		if (v->n_invalid++ == 0)
			snprintf(v->invalid, sizeof(v->invalid), "node '%s': %s %g is past the %g a "
				 "node may have: left out of the plan", v->nodes[k].name,
				 drf_res_name(r), v->nodes[k].capacity[r], drfh_capacity_max(r));
	}
}

static int cmp_task(const void *a, const void *b)
{
	const struct drf_fleet_task *x = &((const struct drf_fleet_task_entry *)a)->t;
	const struct drf_fleet_task *y = &((const struct drf_fleet_task_entry *)b)->t;
	int c = strcmp(x->node, y->node);

	return c ? c : strcmp(x->id, y->id);
}

/* NODE and ID of dir + NODE/ID, into node and id: false if the key is not one. */
static bool node_id_under(const struct etcd_kv *kv, const char *dir, char *node, char *id)
{
	size_t n = strlen(dir);
	const char *rest = kv->key + n, *slash;

	if (kv->key_len <= n || strncmp(kv->key, dir, n) != 0 || strlen(kv->key) != kv->key_len)
		return false;
	slash = strchr(rest, '/');
	if (!slash || (size_t)(slash - rest) > DRF_TENANT_NAME_MAX ||
	    strlen(slash + 1) > DRF_TENANT_NAME_MAX)
		return false;
	memcpy(node, rest, (size_t)(slash - rest));
	node[slash - rest] = '\0';
	strcpy(id, slash + 1);
	return drf_name_valid(node) && drf_name_valid(id);
}

/* The tasks (resps[4]) with their states (resps[5]), into v. */
static int decode_tasks(const struct drf_fleet_keys *k, const struct etcd_resp *tasks,
			const struct etcd_resp *states, struct drf_fleet_view *v)
{
	char node[DRF_TENANT_NAME_MAX + 1], id[DRF_TENANT_NAME_MAX + 1], why[256];
	int r = 0;

	v->tasks = calloc(tasks->n_kvs + 1, sizeof(*v->tasks));
	if (!v->tasks)
		return -ENOMEM;
	for (size_t i = 0; i < tasks->n_kvs && r == 0; i++) {
		const struct etcd_kv *kv = &tasks->kvs[i];
		struct drf_fleet_task_entry *e = &v->tasks[v->n_tasks];

		if (!node_id_under(kv, k->tasks, node, id)) {
			invalid(v, kv, "not NODE/ID");
			continue;
		}
		r = drf_fleet_task_parse(node, id, kv->value, kv->value_len, &e->t, why,
					 sizeof(why));
		if (r == -EBADMSG || r == -EINVAL) {
			invalid(v, kv, why);
			r = 0;
			continue;
		}
		if (r == 0) {
			e->mod_revision = kv->mod_revision;
			v->n_tasks++;
		}
	}
	if (r < 0)
		return r;
	qsort(v->tasks, v->n_tasks, sizeof(*v->tasks), cmp_task);
	for (size_t i = 0; i < states->n_kvs; i++) {
		const struct etcd_kv *kv = &states->kvs[i];
		struct drf_fleet_task_entry key, *hit;
		struct drf_fleet_task_state st;

		if (!node_id_under(kv, k->taskstate, node, id)) {
			invalid(v, kv, "not NODE/ID");
			continue;
		}
		memset(&key, 0, sizeof(key));
		memcpy(key.t.node, node, sizeof(node));
		memcpy(key.t.id, id, sizeof(id));
		hit = bsearch(&key, v->tasks, v->n_tasks, sizeof(*v->tasks), cmp_task);
		/* A state without its task (deleted by hand): nothing to show it with. */
		if (!hit)
			continue;
		r = drf_fleet_task_state_parse(kv->value, kv->value_len, &st, why, sizeof(why));
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			invalid(v, kv, why);
			continue;
		}
		hit->s = st;
	}
	return 0;
}

int drf_fleet_view_decode(const struct drf_fleet_keys *k, const struct etcd_txn_resp *t,
			  struct drf_fleet_view *ret)
{
	struct drf_fleet_view v = { .revision = t->revision };
	const struct etcd_resp *nodes, *tenants, *assigns, *planner;
	char why[256];
	int r = 0;

	if (!t->succeeded || (t->n_resps != 4 && t->n_resps != 6))
		return -EBADMSG;
	nodes = &t->resps[0];
	tenants = &t->resps[1];
	assigns = &t->resps[2];
	planner = &t->resps[3];
	v.nodes = calloc(nodes->n_kvs + 1, sizeof(*v.nodes));
	v.tenants = calloc(tenants->n_kvs + 1, sizeof(*v.tenants));
	v.assigns = calloc(assigns->n_kvs + 1, sizeof(*v.assigns));
	if (!v.nodes || !v.tenants || !v.assigns) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nodes->n_kvs && r == 0; i++) {
		const struct etcd_kv *kv = &nodes->kvs[i];
		const char *name = name_under(kv, k->nodes);

		if (!name) {
			invalid(&v, kv, "not a node's name");
			continue;
		}
		r = drf_fleet_node_parse(name, kv->value, kv->value_len, &v.nodes[v.n_nodes], why,
					 sizeof(why));
		if (r == -EBADMSG || r == -EINVAL) {
			invalid(&v, kv, why);
			r = 0;
			continue;
		}
		if (r == 0) {
			v.nodes[v.n_nodes].lease = kv->lease;
			v.nodes[v.n_nodes++].mod_revision = kv->mod_revision;
		}
	}
	for (size_t i = 0; i < tenants->n_kvs && r == 0; i++) {
		const struct etcd_kv *kv = &tenants->kvs[i];
		const char *name = name_under(kv, k->tenants);

		if (!name) {
			invalid(&v, kv, "not a tenant's name");
			continue;
		}
		r = drf_fleet_tenant_parse(name, kv->value, kv->value_len,
					   &v.tenants[v.n_tenants].t, why, sizeof(why));
		if (r == -EBADMSG || r == -EINVAL) {
			invalid(&v, kv, why);
			r = 0;
			continue;
		}
		if (r == 0)
			v.tenants[v.n_tenants++].mod_revision = kv->mod_revision;
	}
	for (size_t i = 0; i < assigns->n_kvs && r == 0; i++) {
		const struct etcd_kv *kv = &assigns->kvs[i];
		const char *name = name_under(kv, k->assign);
		struct drf_fleet_assign_entry *e = &v.assigns[v.n_assigns];

		if (!name) {
			invalid(&v, kv, "not a node's name");
			continue;
		}
		r = drf_fleet_assignment_parse(kv->value, kv->value_len, &e->a, why, sizeof(why));
		if (r == -EBADMSG || r == -EINVAL) {
			invalid(&v, kv, why);
			r = 0;
			continue;
		}
		if (r == 0) {
			snprintf(e->node, sizeof(e->node), "%s", name);
			e->mod_revision = kv->mod_revision;
			v.n_assigns++;
		}
	}
	if (r == 0 && planner->n_kvs) {
		const struct etcd_kv *kv = &planner->kvs[0];

		/* A name, or none: the value goes to logs, status and terminals. */
		if (kv->value_len < sizeof(v.planner) && strlen(kv->value) == kv->value_len &&
		    drf_name_valid(kv->value)) {
			snprintf(v.planner, sizeof(v.planner), "%s", kv->value);
			v.planner_revision = kv->create_revision;
			v.planner_lease = kv->lease;
		} else {
			invalid(&v, kv, "not a node's name");
		}
	}
	if (r == 0 && t->n_resps == 6)
		r = decode_tasks(k, &t->resps[4], &t->resps[5], &v);
out:
	if (r < 0) {
		drf_fleet_view_clear(&v);
		return r;
	}
	/* etcd sorts by bytes: the same order for these names, but the lookups rely on it. */
	qsort(v.nodes, v.n_nodes, sizeof(*v.nodes), cmp_node);
	qsort(v.tenants, v.n_tenants, sizeof(*v.tenants), cmp_tenant);
	qsort(v.assigns, v.n_assigns, sizeof(*v.assigns), cmp_assign);
	nodes_check(&v);
	tenants_check(&v);
	*ret = v;
	return 0;
}

ssize_t drf_fleet_view_node(const struct drf_fleet_view *v, const char *name)
{
	struct drf_fleet_nodeinfo key;
	const struct drf_fleet_nodeinfo *hit;

	snprintf(key.name, sizeof(key.name), "%s", name);
	hit = bsearch(&key, v->nodes, v->n_nodes, sizeof(*v->nodes), cmp_node);
	return hit ? hit - v->nodes : -1;
}

ssize_t drf_fleet_view_assign(const struct drf_fleet_view *v, const char *node)
{
	struct drf_fleet_assign_entry key;
	const struct drf_fleet_assign_entry *hit;

	snprintf(key.node, sizeof(key.node), "%s", node);
	hit = bsearch(&key, v->assigns, v->n_assigns, sizeof(*v->assigns), cmp_assign);
	return hit ? hit - v->assigns : -1;
}

/* The read. */

struct read_ctx {
	struct drf_fleet_keys k;
	drf_fleet_view_cb cb;
	void *userdata;
};

static void read_done(void *userdata, int err, const char *msg, const struct etcd_txn_resp *t)
{
	struct read_ctx *c = userdata;
	struct drf_fleet_view v;

	if (!err) {
		err = drf_fleet_view_decode(&c->k, t, &v);
		msg = err ? "the fleet's keys: cannot decode etcd's answer" : NULL;
	}
	if (err) {
		c->cb(c->userdata, err, msg, NULL);
	} else {
		c->cb(c->userdata, 0, NULL, &v);
		drf_fleet_view_clear(&v);
	}
	free(c);
}

static int fleet_read(struct etcd *e, const char *prefix, bool tasks, drf_fleet_view_cb cb,
		      void *userdata, uint64_t *ret_id)
{
	struct read_ctx *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	r = drf_fleet_keys_init(&c->k, prefix);
	if (r == 0) {
		struct etcd_req q[6] = {
			{ .type = ETCD_RANGE, .key = c->k.nodes, .prefix = true },
			{ .type = ETCD_RANGE, .key = c->k.tenants, .prefix = true },
			{ .type = ETCD_RANGE, .key = c->k.assign, .prefix = true },
			{ .type = ETCD_RANGE, .key = c->k.planner },
			{ .type = ETCD_RANGE, .key = c->k.tasks, .prefix = true },
			{ .type = ETCD_RANGE, .key = c->k.taskstate, .prefix = true },
		};

		c->cb = cb;
		c->userdata = userdata;
		/*
		 * A txn's requests all see one revision: the nodes and tenants planned
		 * together; the tasks for drfctl fleet submit's placement and status.
		 */
		r = etcd_txn(e, &(struct etcd_txn){ .success = q, .n_success = tasks ? 6 : 4 },
			     read_done, c, ret_id);
	}
	if (r < 0)
		free(c);
	return r;
}

int drf_fleet_read(struct etcd *e, const char *prefix, drf_fleet_view_cb cb, void *userdata,
		   uint64_t *ret_id)
{
	return fleet_read(e, prefix, false, cb, userdata, ret_id);
}

int drf_fleet_read_tasks(struct etcd *e, const char *prefix, drf_fleet_view_cb cb,
			 void *userdata, uint64_t *ret_id)
{
	return fleet_read(e, prefix, true, cb, userdata, ret_id);
}

/* The plan. */

void drf_fleet_assignments_free(struct drf_fleet_assignment *a, size_t n)
{
	for (size_t i = 0; a && i < n; i++)
		drf_fleet_assignment_clear(&a[i]);
	free(a);
}

static int cmp_place(const void *a, const void *b)
{
	const struct drfh_place *x = a, *y = b;

	if (x->tenant != y->tenant)
		return x->tenant < y->tenant ? -1 : 1;
	return x->where < y->where ? -1 : x->where > y->where;
}

/* The index of name among n tenants sorted by name, or -1. */
static ssize_t tenant_index(const struct drf_tenant *t, size_t n, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(t[mid].name, name);

		if (c == 0)
			return (ssize_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int drf_fleet_compute_more(const struct drf_fleet_view *v, const char *planner,
			   struct drf_fleet_assignment **ret, bool *ret_more);

int drf_fleet_compute(const struct drf_fleet_view *v, const char *planner,
		      struct drf_fleet_assignment **ret)
{
	return drf_fleet_compute_more(v, planner, ret, NULL);
}

/*
 * The plan, one round at a time (drfh_converge): the target is DRFH Best-Fit
 * from scratch, but for the nodes that are in the view without a lease (a
 * silent node the planner keeps in its grace, fleet.c's keep_silent), whose
 * placement in force stays and the target is continued from; the round moves
 * the placement in force toward the target, at most a quarter of the tasks
 * (drfh.h). *ret_more (NULL: not asked): the round is short of the target,
 * plan again (the next round starts from the assignments this one wrote).
 */
int drf_fleet_compute_more(const struct drf_fleet_view *v, const char *planner,
			   struct drf_fleet_assignment **ret, bool *ret_more)
{
	struct drfh_result target = { 0 };
	bool have_target = false, more = false;
	bool *pinned = NULL;
	size_t nn = v->n_nodes, ns = 0, nt = 0, np = 0, nprev_cap = 0;
	struct drf_fleet_assignment *out = calloc(nn + 1, sizeof(*out));
	size_t *server_of = calloc(nn + 1, sizeof(*server_of));
	size_t *node_of = calloc(nn + 1, sizeof(*node_of));
	size_t *count = calloc(nn + 1, sizeof(*count));
	struct drf_server *servers = calloc(nn + 1, sizeof(*servers));
	struct drf_tenant *tens = calloc(v->n_tenants + 1, sizeof(*tens));
	struct drfh_server_spec *specs = NULL;
	struct drf_demand *dem = NULL;
	struct drfh_place *prev = NULL;
	struct drfh_result res = { 0 };
	struct drfh_problem p;
	struct drf_fleet fl;
	double pool[DRF_NRES] = { 0 };
	bool planned = false;
	int r = 0;

	if (!out || !server_of || !node_of || !count || !servers || !tens) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < nn; k++) {
		const struct drf_fleet_nodeinfo *nd = &v->nodes[k];
		bool any = false;

		out[k].revision = v->revision;
		snprintf(out[k].planner, sizeof(out[k].planner), "%s", planner);
		memcpy(out[k].capacity, nd->capacity, sizeof(out[k].capacity));
		server_of[k] = SIZE_MAX;
		for (int res_i = 0; res_i < DRF_NRES; res_i++)
			any = any || nd->capacity[res_i] > 0;
		/* Past sane hardware (drfh.h): no part in the plan (the view's decode says why). */
		if (!any || drfh_capacity_check(nd->capacity, NULL) != 0)
			continue;
		snprintf(servers[ns].name, sizeof(servers[ns].name), "%s", nd->name);
		memcpy(servers[ns].capacity, nd->capacity, sizeof(servers[ns].capacity));
		servers[ns].count = 1;
		for (int res_i = 0; res_i < DRF_NRES; res_i++)
			pool[res_i] += nd->capacity[res_i];
		server_of[k] = ns;
		node_of[ns++] = k;
	}
	for (size_t i = 0; i < v->n_tenants; i++) {
		const struct drf_tenant *t = &v->tenants[i].t;
		bool any = false;

		/* A task that needs nothing the pool has could never be placed (nor counted). */
		for (int res_i = 0; res_i < DRF_NRES; res_i++)
			any = any || (pool[res_i] > 0 && (!t->task_model || (t->declared[res_i] &&
									    t->vec[res_i] > 0)));
		if (any)
			tens[nt++] = *t;
	}
	if (ns == 0 || nt == 0)
		goto done;
	memset(&fl, 0, sizeof(fl));
	memcpy(fl.cfg.capacity, pool, sizeof(pool));
	fl.cfg.tenants = tens;
	fl.cfg.n_tenants = nt;
	fl.servers = servers;
	fl.n_servers = ns;
	/* The problem drfctl fleet plan makes of a fleet file with these servers and tenants. */
	r = drf_fleet_problem(&fl, &p, &specs, &dem);
	if (r < 0)
		goto out;
	/* The placement in force: the assignments of the nodes and tenants still here. */
	for (size_t a = 0; a < v->n_assigns && r == 0; a++) {
		const struct drf_fleet_assign_entry *e = &v->assigns[a];
		ssize_t k = drf_fleet_view_node(v, e->node);

		if (k < 0 || server_of[k] == SIZE_MAX)
			continue;
		for (size_t j = 0; j < e->a.n; j++) {
			const struct drf_fleet_share *s = &e->a.tenants[j];
			ssize_t i = tenant_index(tens, nt, s->name);

			if (i < 0 || !isfinite(s->tasks) || s->tasks < 1)
				continue;
			if (np == nprev_cap) {
				size_t cap = nprev_cap ? 2 * nprev_cap : 64;
				struct drfh_place *q = realloc(prev, cap * sizeof(*q));

				if (!q) {
					r = -ENOMEM;
					break;
				}
				prev = q;
				nprev_cap = cap;
			}
			prev[np++] = (struct drfh_place){ .tenant = (uint32_t)i,
							  .where = (uint32_t)server_of[k],
							  .tasks = floor(s->tasks) };
		}
	}
	if (r < 0)
		goto out;
	if (np)
		qsort(prev, np, sizeof(*prev), cmp_place);
	/*
	 * The tasks of nodes not read from etcd (no revision: a silent node in
	 * its grace, put in the view by fleet.c) stay where they are.
	 */
	pinned = calloc(ns + 1, sizeof(*pinned));
	if (!pinned) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < ns; k++)
		pinned[k] = v->nodes[node_of[k]].mod_revision == 0;
	r = drfh_place_toward(&p, prev, np, pinned, &target);
	if (r == -EINVAL && np) /* a placement in force it cannot continue from: from scratch */
		r = drfh_place(&p, DRFH_BEST_FIT, &target);
	if (r < 0)
		goto out;
	have_target = true;
	r = drfh_converge(&p, prev, np, &target, 0, &res, NULL, &more);
	if (r == -EINVAL) /* a placement in force out of range: the target at once */
		r = drfh_converge(&p, NULL, 0, &target, INFINITY, &res, NULL, &more);
	if (r < 0)
		goto out;
	planned = true;
	for (size_t k = 0; k < res.nplaces; k++)
		count[node_of[res.places[k].where]]++;
	for (size_t k = 0; k < nn; k++) {
		out[k].tenants = calloc(count[k] + 1, sizeof(*out[k].tenants));
		if (!out[k].tenants) {
			r = -ENOMEM;
			goto out;
		}
	}
	/* places are by tenant (by name), then server: each node's list comes out by name */
	for (size_t k = 0; k < res.nplaces; k++) {
		const struct drfh_place *pl = &res.places[k];
		struct drf_fleet_assignment *a = &out[node_of[pl->where]];
		struct drf_fleet_share *s = &a->tenants[a->n];
		const struct drf_tenant *t = &tens[pl->tenant];

		snprintf(s->name, sizeof(s->name), "%s", t->name);
		s->cgroup = strdup(t->cgroup ? t->cgroup : t->name);
		if (!s->cgroup) {
			r = -ENOMEM;
			goto out;
		}
		a->n++;
		s->weight = dem[pl->tenant].weight;
		s->tasks = pl->tasks;
		for (int res_i = 0; res_i < DRF_NRES; res_i++)
			s->alloc[res_i] =
				pool[res_i] > 0 ? pl->tasks * dem[pl->tenant].shape[res_i] : 0;
	}
done:
	for (size_t k = 0; k < nn; k++) {
		if (!out[k].tenants)
			out[k].tenants = calloc(1, sizeof(*out[k].tenants));
		if (!out[k].tenants) {
			r = -ENOMEM;
			goto out;
		}
	}
out:
	if (planned)
		drfh_result_free(&res);
	if (have_target)
		drfh_result_free(&target);
	free(pinned);
	free(prev);
	free(specs);
	free(dem);
	free(servers);
	free(tens);
	free(count);
	free(node_of);
	free(server_of);
	if (r < 0) {
		drf_fleet_assignments_free(out, nn);
		return r;
	}
	*ret = out;
	if (ret_more)
		*ret_more = more;
	return 0;
}

/* drfctl fleet apply. */

struct apply_ctx {
	struct etcd *e;
	struct drf_fleet_keys k;
	size_t n;
	char **names;  /* sorted */
	char **values; /* names[i]'s */
	int tries;
	struct drf_fleet_apply_result res;
	drf_fleet_apply_cb cb;
	void *userdata;
};

static void apply_free(struct apply_ctx *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->names[i]);
		free(c->values[i]);
	}
	free(c->names);
	free(c->values);
	free(c);
}

static void apply_done(struct apply_ctx *c, int err, const char *msg)
{
	c->cb(c->userdata, err, msg, err ? NULL : &c->res);
	apply_free(c);
}

static int apply_read(struct apply_ctx *c);

static void apply_txn_cb(void *userdata, int err, const char *msg, const struct etcd_txn_resp *t)
{
	struct apply_ctx *c = userdata;

	if (err) {
		apply_done(c, err, msg);
		return;
	}
	if (!t->succeeded) {
		/* Someone wrote a tenant between our read and our txn: again, from a new read. */
		err = ++c->tries < APPLY_TRIES ? apply_read(c) : -EAGAIN;
		if (err < 0)
			apply_done(c, err, "the tenants changed under every try");
		return;
	}
	c->res.revision = t->revision;
	apply_done(c, 0, NULL);
}

static ssize_t name_index(char *const *names, size_t n, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int cmp = strcmp(names[mid], name);

		if (cmp == 0)
			return (ssize_t)mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static void apply_range_cb(void *userdata, int err, const char *msg, const struct etcd_resp *r)
{
	struct apply_ctx *c = userdata;
	size_t nmax = c->n + (r ? r->n_kvs : 0), n = 0;
	struct etcd_req *ops = NULL;
	struct etcd_cmp *cmp = NULL;
	char **keys = NULL;
	bool *seen = NULL;
	char text[160];
	uint64_t id;

	if (err) {
		apply_done(c, err, msg);
		return;
	}
	ops = calloc(nmax + 1, sizeof(*ops));
	cmp = calloc(nmax + 1, sizeof(*cmp));
	keys = calloc(nmax + 1, sizeof(*keys));
	seen = calloc(c->n + 1, sizeof(*seen));
	if (!ops || !cmp || !keys || !seen) {
		err = -ENOMEM;
		goto out;
	}
	memset(&c->res, 0, sizeof(c->res));
	c->res.revision = r->revision;
	for (size_t i = 0; i < r->n_kvs; i++) {
		const struct etcd_kv *kv = &r->kvs[i];
		const char *name = name_under(kv, c->k.tenants);
		ssize_t j = name ? name_index(c->names, c->n, name) : -1;

		if (j >= 0) {
			seen[j] = true;
			if (kv->value_len == strlen(c->values[j]) &&
			    memcmp(kv->value, c->values[j], kv->value_len) == 0) {
				c->res.unchanged++;
				continue;
			}
			ops[n] = (struct etcd_req){ .type = ETCD_PUT, .key = kv->key,
						    .value = c->values[j],
						    .value_len = strlen(c->values[j]) };
			c->res.put++;
		} else {
			/* Not in the file, or not a tenant's key at all: it goes. */
			ops[n] = (struct etcd_req){ .type = ETCD_DELETE, .key = kv->key };
			c->res.deleted++;
		}
		cmp[n++] = (struct etcd_cmp){ .key = kv->key, .target = ETCD_CMP_MOD,
					      .result = ETCD_CMP_EQUAL, .n = kv->mod_revision };
	}
	for (size_t j = 0; j < c->n; j++) {
		if (seen[j])
			continue;
		err = -ENOMEM;
		if (asprintf(&keys[n], "%s%s", c->k.tenants, c->names[j]) < 0) {
			keys[n] = NULL;
			goto out;
		}
		err = 0;
		ops[n] = (struct etcd_req){ .type = ETCD_PUT, .key = keys[n], .value = c->values[j],
					    .value_len = strlen(c->values[j]) };
		cmp[n] = (struct etcd_cmp){ .key = keys[n], .target = ETCD_CMP_CREATE,
					    .result = ETCD_CMP_EQUAL, .n = 0 };
		n++;
		c->res.put++;
	}
	if (n == 0)
		goto out; /* nothing to change */
	if (n > ETCD_TXN_MAX) {
		err = -E2BIG;
		snprintf(text, sizeof(text), "%zu tenant changes in one txn: more than etcd's "
			 "--max-txn-ops (%d)", n, ETCD_TXN_MAX);
		msg = text;
		goto out;
	}
	err = etcd_txn(c->e, &(struct etcd_txn){ .cmp = cmp, .n_cmp = n, .success = ops,
						 .n_success = n },
		       apply_txn_cb, c, &id);
	msg = "cannot send the txn";
out:
	for (size_t i = 0; keys && i < nmax; i++)
		free(keys[i]);
	free(keys);
	free(ops);
	free(cmp);
	free(seen);
	if (err < 0)
		apply_done(c, err, msg ? msg : strerror(-err));
	else if (n == 0)
		apply_done(c, 0, NULL);
}

static int apply_read(struct apply_ctx *c)
{
	uint64_t id;

	return etcd_range(c->e, &(struct etcd_req){ .key = c->k.tenants, .prefix = true },
			  apply_range_cb, c, &id);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int drf_fleet_apply(struct etcd *e, const char *prefix, const struct drf_tenant *t, size_t n,
		    drf_fleet_apply_cb cb, void *userdata)
{
	struct apply_ctx *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->e = e;
	c->cb = cb;
	c->userdata = userdata;
	r = drf_fleet_keys_init(&c->k, prefix);
	if (r < 0) {
		free(c);
		return r;
	}
	c->names = calloc(n + 1, sizeof(*c->names));
	c->values = calloc(n + 1, sizeof(*c->values));
	if (!c->names || !c->values) {
		apply_free(c);
		return -ENOMEM;
	}
	/* Names first (sorted), then each one's value, found again by name. */
	for (size_t i = 0; i < n; i++) {
		if (!drf_name_valid(t[i].name)) {
			c->n = i;
			apply_free(c);
			return -EINVAL;
		}
		c->names[i] = strdup(t[i].name);
		c->n = i + 1;
		if (!c->names[i]) {
			apply_free(c);
			return -ENOMEM;
		}
	}
	qsort(c->names, n, sizeof(*c->names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		ssize_t j = name_index(c->names, n, t[i].name);

		if (c->values[j]) { /* a tenant twice */
			apply_free(c);
			return -EINVAL;
		}
		r = drf_fleet_tenant_value(&t[i], &c->values[j]);
		if (r < 0) {
			apply_free(c);
			return r;
		}
	}
	r = apply_read(c);
	if (r < 0)
		apply_free(c);
	return r;
}
