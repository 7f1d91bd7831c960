// SPDX-License-Identifier: MIT
/*
 * Fleet tasks (see fleet.h): where `drfctl fleet submit` places one, by
 * DRFH's Best-Fit over the fleet as read, and the txn that puts it there
 * once.
 */
#include "fleet.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* A quantity that fits where what is left is short of it by rounding only. */
#define FIT_EPS 1e-9

static bool ended(const struct drf_fleet_task_state *s)
{
	return drf_fleet_task_st_final(s->st);
}

/* The tenant's share in the assignment of node (alive), or NULL. */
static const struct drf_fleet_share *share_on(const struct drf_fleet_view *v, const char *node,
					      const char *tenant)
{
	ssize_t a = drf_fleet_view_assign(v, node);

	if (a < 0)
		return NULL;
	for (size_t j = 0; j < v->assigns[a].a.n; j++)
		if (strcmp(v->assigns[a].a.tenants[j].name, tenant) == 0)
			return &v->assigns[a].a.tenants[j];
	return NULL;
}

/* Whether need fits in have on every resource. */
static bool fits(const double need[DRF_NRES], const double have[DRF_NRES],
		 const double pool[DRF_NRES])
{
	for (int r = 0; r < DRF_NRES; r++)
		if (need[r] > 0 && need[r] > have[r] + FIT_EPS * (pool[r] > 0 ? pool[r] : 1))
			return false;
	return true;
}

/* drfh.h's H of a task d on what is left c, both as fractions of the pool. */
static double best_fit_h(const double d[DRF_NRES], const double c[DRF_NRES],
			 const double pool[DRF_NRES])
{
	double dn[DRF_NRES] = { 0 }, cn[DRF_NRES] = { 0 }, ds = 0, cs = 0, h = 0;

	for (int r = 0; r < DRF_NRES; r++) {
		if (!(pool[r] > 0))
			continue;
		dn[r] = d[r] / pool[r];
		cn[r] = c[r] > 0 ? c[r] / pool[r] : 0;
		ds += dn[r];
		cs += cn[r];
	}
	for (int r = 0; r < DRF_NRES; r++)
		h += fabs((ds > 0 ? dn[r] / ds : 0) - (cs > 0 ? cn[r] / cs : 0));
	return h;
}

int drf_fleet_place_task(const struct drf_fleet_view *v, const char *tenant,
			 const double task[DRF_NRES], size_t *ret, bool *ret_waits, char *err,
			 size_t errlen)
{
	double pool[DRF_NRES] = { 0 };
	size_t best[2] = { SIZE_MAX, SIZE_MAX }; /* with room now; ever */
	double best_h[2] = { INFINITY, INFINITY };
	size_t assigned = 0, busy = 0, busy_most = 0;
	const char *busy_node = NULL;
	bool any = false;
	size_t i = 0;

	for (int r = 0; r < DRF_NRES; r++)
		any = any || task[r] > 0;
	if (!any) {
		snprintf(err, errlen, "tenant '%s': the task needs nothing (give --cpu, --memory, "
			 "...)", tenant);
		return -EINVAL;
	}
	{
		bool known = false;

		for (size_t k = 0; k < v->n_tenants; k++)
			known = known || strcmp(v->tenants[k].t.name, tenant) == 0;
		if (!known) {
			snprintf(err, errlen, "no tenant '%s' in the fleet (drfctl fleet apply)",
				 tenant);
			return -ENOENT;
		}
	}
	if (v->n_nodes == 0) {
		snprintf(err, errlen, "tenant '%s': no node is alive (none registered)", tenant);
		return -ESRCH;
	}
	for (size_t k = 0; k < v->n_nodes; k++)
		for (int r = 0; r < DRF_NRES; r++)
			pool[r] += v->nodes[k].capacity[r];
	/* v->tasks are by node, then id; v->nodes by name: one pass over both. */
	for (size_t k = 0; k < v->n_nodes; k++) {
		const struct drf_fleet_nodeinfo *nd = &v->nodes[k];
		const struct drf_fleet_share *sh = share_on(v, nd->name, tenant);
		double left[DRF_NRES], room[DRF_NRES], h;
		size_t backlog = 0;

		memcpy(left, nd->capacity, sizeof(left));
		if (sh)
			memcpy(room, sh->alloc, sizeof(room));
		while (i < v->n_tasks && strcmp(v->tasks[i].t.node, nd->name) < 0)
			i++;
		for (; i < v->n_tasks && strcmp(v->tasks[i].t.node, nd->name) == 0; i++) {
			const struct drf_fleet_task_entry *te = &v->tasks[i];

			if (ended(&te->s))
				continue;
			backlog += te->s.st == DRF_FLEET_TASK_NONE;
			for (int r = 0; r < DRF_NRES; r++) {
				left[r] -= te->t.vec[r];
				if (sh && strcmp(te->t.tenant, tenant) == 0)
					room[r] -= te->t.vec[r];
			}
		}
		if (!sh)
			continue;
		assigned++;
		if (!fits(task, sh->alloc, pool))
			continue;
		/* Back-pressure: a node that has not taken in its tasks yet gets no more. */
		if (backlog >= DRF_FLEET_NODE_BACKLOG_MAX) {
			busy++;
			if (backlog > busy_most) {
				busy_most = backlog;
				busy_node = nd->name;
			}
			continue;
		}
		h = best_fit_h(task, left, pool);
		/*
		 * Less by more than rounding (drfh.c's H_EPS): ties go to the earlier
		 * node, also between nodes whose capacities point the same way.
		 */
		for (int w = 0; w < 2; w++) {
			if (w == 0 && !fits(task, room, pool))
				continue;
			if (h < best_h[w] - 1e-12) {
				best_h[w] = h;
				best[w] = k;
			}
		}
	}
	if (best[0] != SIZE_MAX || best[1] != SIZE_MAX) {
		*ret_waits = best[0] == SIZE_MAX;
		*ret = *ret_waits ? best[1] : best[0];
		return 0;
	}
	if (busy) {
		snprintf(err, errlen, "tenant '%s': the %zu node%s that could take the task %s "
			 "not taken in their tasks yet (%s: %zu, the most a node is given); try again "
			 "shortly", tenant, busy, busy == 1 ? "" : "s", busy == 1 ? "has" : "have",
			 busy_node, busy_most);
		return -EBUSY;
	}
	if (assigned == 0)
		snprintf(err, errlen, "tenant '%s': no node alive has an assignment for it (is a "
			 "planner running? does the tenant get anything?)", tenant);
	else
		snprintf(err, errlen, "tenant '%s': the task is larger than its share on each of "
			 "the %zu nodes it is assigned", tenant, assigned);
	return -ENOSPC;
}

/* The submit's txn. */

struct submit_ctx {
	char node[DRF_TENANT_NAME_MAX + 1];
	drf_fleet_submit_cb cb;
	void *userdata;
};

static void submit_done(void *userdata, int err, const char *msg, const struct etcd_txn_resp *t)
{
	struct submit_ctx *c = userdata;
	char node[DRF_TENANT_NAME_MAX + 1] = "";

	if (err) {
		c->cb(c->userdata, err, msg, false, NULL, 0);
	} else if (t->succeeded) {
		c->cb(c->userdata, 0, NULL, true, c->node, t->revision);
	} else {
		/* The ID is placed already: where (the failure branch's read). */
		if (t->n_resps == 1 && t->resps[0].n_kvs == 1)
			snprintf(node, sizeof(node), "%.*s",
				 (int)(t->resps[0].kvs[0].value_len < DRF_TENANT_NAME_MAX
					       ? t->resps[0].kvs[0].value_len
					       : DRF_TENANT_NAME_MAX),
				 t->resps[0].kvs[0].value);
		c->cb(c->userdata, 0, NULL, false, node, t->revision);
	}
	free(c);
}

int drf_fleet_submit(struct etcd *e, const char *prefix, const struct drf_fleet_task *t,
		     drf_fleet_submit_cb cb, void *userdata)
{
	char task_key[DRF_FLEET_PREFIX_MAX + 2 * DRF_TENANT_NAME_MAX + 24];
	char id_key[DRF_FLEET_PREFIX_MAX + DRF_TENANT_NAME_MAX + 24];
	struct drf_fleet_keys k;
	struct submit_ctx *c;
	char *value = NULL;
	uint64_t call;
	int r;

	if (drf_fleet_keys_init(&k, prefix) < 0 || !drf_name_valid(t->node) ||
	    !drf_name_valid(t->id))
		return -EINVAL;
	snprintf(task_key, sizeof(task_key), "%s%s/%s", k.tasks, t->node, t->id);
	snprintf(id_key, sizeof(id_key), "%s%s", k.taskids, t->id);
	r = drf_fleet_task_value(t, &value);
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c) {
		free(value);
		return -ENOMEM;
	}
	snprintf(c->node, sizeof(c->node), "%s", t->node);
	c->cb = cb;
	c->userdata = userdata;
	{
		struct etcd_cmp absent = { .key = id_key, .target = ETCD_CMP_CREATE,
					   .result = ETCD_CMP_EQUAL, .n = 0 };
		struct etcd_req put[2] = {
			{ .type = ETCD_PUT, .key = id_key, .value = t->node,
			  .value_len = strlen(t->node) },
			{ .type = ETCD_PUT, .key = task_key, .value = value,
			  .value_len = strlen(value) },
		};
		struct etcd_req read = { .type = ETCD_RANGE, .key = id_key };

		r = etcd_txn(e, &(struct etcd_txn){ .cmp = &absent, .n_cmp = 1, .success = put,
						     .n_success = 2, .failure = &read,
						     .n_failure = 1 },
			     submit_done, c, &call);
	}
	free(value);
	if (r < 0)
		free(c);
	return r;
}
