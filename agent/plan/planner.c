// SPDX-License-Identifier: MIT
/* The planner (see planner.h). */
#include "planner.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Hierarchical DRF over the config's groups (their tree, made at load, in d)
 * for the problem p: the tenants' shares and the groups'.
 */
static int hier_allocate(const struct drf_declared *d, const struct drf_problem *p,
			 struct drf_result *ret, struct drf_share **ret_groups)
{
	struct drf_hproblem hp = { .base = *p, .n_groups = d->cfg.n_groups, .groups = d->hgroups,
				    .leaf_parent = d->hparents };
	struct drf_hresult res;
	int r = drf_hdrf_allocate(&hp, &res);

	if (r < 0)
		return r;
	*ret = res.leaves;
	*ret_groups = res.groups;
	return 0;
}

int drf_declared_load(struct drf_declared *ret, const char *path, const struct drf_host_ops *host,
		      char *err, size_t len)
{
	return drf_declared_load_assigned(ret, path, host, NULL, 0, NULL, err, len);
}

int drf_declared_load_assigned(struct drf_declared *ret, const char *path,
			       const struct drf_host_ops *host, const struct drf_tenant *assigned,
			       size_t n_assigned, const char *source, char *err, size_t len)
{
	struct drf_declared n = { 0 };
	int r;

	r = drf_config_load_assigned(path, host, assigned, n_assigned, source, &n.cfg, err, len);
	if (r < 0)
		return r;
	r = drf_config_problem(&n.cfg, &n.problem, &n.demands);
	if (r == 0 && n.cfg.n_groups > 0) {
		struct drf_hproblem hp;

		r = drf_config_hproblem(&n.cfg, &n.problem, &hp, &n.hgroups, &n.hparents);
		if (r == 0)
			r = hier_allocate(&n, &n.problem, &n.result, &n.groups);
	} else if (r == 0) {
		r = drf_allocate(&n.problem, n.cfg.policy, &n.result);
	}
	if (r < 0) {
		snprintf(err, len, "%s: cannot compute the allocation: %s", path, strerror(-r));
		drf_result_free(&n.result);
		free(n.groups);
		free(n.hgroups);
		free(n.hparents);
		free(n.demands);
		drf_config_free(&n.cfg);
		return r == -EINVAL ? -EIO : r;
	}
	n.loaded = true;
	*ret = n;
	return 0;
}

void drf_declared_free(struct drf_declared *d)
{
	if (!d->loaded)
		return;
	drf_result_free(&d->result);
	free(d->groups);
	free(d->hgroups);
	free(d->hparents);
	free(d->demands);
	drf_config_free(&d->cfg);
	memset(d, 0, sizeof(*d));
}

void drf_plan_free(struct drf_plan *p)
{
	if (!p->built)
		return;
	free(p->demands);
	drf_result_free(&p->result);
	free(p->groups);
	free(p->knobs);
	free(p->root);
	free(p->limit);
	drf_cg_knobs_free(p->inner, p->n_inner);
	drf_cg_knobs_free(p->task, p->n_task);
	free(p->net.t);
	memset(p, 0, sizeof(*p));
}

/* The result's shares, copied out of the engine (its result lives until its next call). */
static int keep_result(const struct drf_result *from, struct drf_result *ret)
{
	struct drf_share *s = malloc((from->n + 1) * sizeof(*s));

	if (!s)
		return -ENOMEM;
	memcpy(s, from->shares, from->n * sizeof(*s));
	*ret = *from;
	ret->shares = s;
	return 0;
}

int drf_plan_build(const struct drf_plan_input *in, struct drf_engine *eng, struct drf_plan *ret)
{
	const struct drf_declared *d = in->decl;
	const struct drf_config *c = &d->cfg;
	size_t n = c->n_tenants;
	struct drf_plan p = { .decl = d, .effective = in->effective != NULL, .built = true };
	bool net = d->problem.capacity[DRF_RES_NET] > 0 || d->problem.capacity[DRF_RES_NET_IN] > 0;
	struct drf_result res;
	int r = -ENOMEM;

	if (net && n > DRF_HTB_MAX_TENANTS)
		return -ENOSPC;
	p.demands = malloc((n + 1) * sizeof(*p.demands));
	p.knobs = malloc((n + 1) * sizeof(*p.knobs)); /* filled by drf_knobs_compute() */
	p.limit = calloc(n + 1, sizeof(*p.limit));
	p.root = calloc(1, sizeof(*p.root));
	p.task = calloc(in->n_tasks + 1, sizeof(*p.task));
	p.net.t = calloc(n + 1, sizeof(*p.net.t));
	if (!p.demands || !p.knobs || !p.limit || !p.root || !p.task || !p.net.t)
		goto fail;
	memcpy(p.demands, d->demands, n * sizeof(*p.demands));
	p.problem = d->problem;
	p.problem.demands = p.demands;
	if (p.effective) {
		/* One copy of its effective demand: the share of it the allocation serves. */
		for (size_t i = 0; i < n; i++) {
			p.demands[i].max_units = 1;
			memcpy(p.demands[i].shape, in->effective[i], sizeof(p.demands[i].shape));
		}
		if (c->n_groups > 0) {
			r = hier_allocate(d, &p.problem, &p.result, &p.groups);
		} else {
			r = drf_engine_allocate(eng, &p.problem, c->policy, &res);
			if (r == 0)
				r = keep_result(&res, &p.result);
		}
	} else {
		r = keep_result(&d->result, &p.result);
		if (r == 0 && d->groups) {
			p.groups = malloc((c->n_groups + 1) * sizeof(*p.groups));
			if (p.groups)
				memcpy(p.groups, d->groups, c->n_groups * sizeof(*p.groups));
			else
				r = -ENOMEM;
		}
	}
	if (r < 0)
		goto fail;
	r = drf_knobs_compute(c, &p.problem, &p.result, in->io, p.knobs, &p.inner, &p.n_inner);
	if (r < 0)
		goto fail;
	for (size_t i = 0; i < n && p.effective && c->mode == DRF_MODE_LIMIT; i++) {
		/*
		 * memory.max stays at least the declared allocation, so that a
		 * tenant growing back into its share is reclaimed and pushed to
		 * rise, never OOM-killed below it; memory.high at least the
		 * effective demand, so that a tenant scaled down by another
		 * resource is not reclaimed below what it uses.
		 */
		drf_knobs_memory_at_least(&p.knobs[i], DRF_KNOB_MEMORY_MAX,
					  d->result.shares[i].alloc[DRF_RES_MEMORY]);
		drf_knobs_memory_at_least(&p.knobs[i], DRF_KNOB_MEMORY_HIGH,
					  p.demands[i].shape[DRF_RES_MEMORY]);
	}
	drf_knobs_root(c, p.knobs, n, p.root);
	for (size_t i = 0; i < n; i++) {
		drf_knobs_limits(&p.knobs[i], p.limit[i]);
		drf_htb_inputs(c, &p.problem, &p.result, i, &p.net.t[i]);
	}
	for (size_t i = 0; i < in->n_tasks; i++) {
		p.task[i].cgroup = strdup(in->tasks[i].cgroup);
		if (!p.task[i].cgroup) {
			r = -ENOMEM;
			goto fail;
		}
		p.n_task++;
		drf_knobs_task(in->tasks[i].vec, in->io, &p.task[i].knobs);
	}
	p.net.htb = (struct drf_htb_plan){
		.limit = c->mode == DRF_MODE_LIMIT,
		.eg_cap = p.problem.capacity[DRF_RES_NET],
		.in_cap = p.problem.capacity[DRF_RES_NET_IN],
	};
	p.net.link_rate = c->net_link_rate > 0 ? (uint64_t)c->net_link_rate : 0;
	p.net.replace_foreign = c->net_replace_qdisc;
	*ret = p;
	return 0;
fail:
	drf_plan_free(&p);
	return r;
}
