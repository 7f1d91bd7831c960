// SPDX-License-Identifier: MIT
#include "desired.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int drf_enforced_load(struct drf_enforced *ret, const char *path, const struct drf_io_target *io,
		      char *err, size_t len)
{
	struct drf_enforced n = { 0 };
	int r;

	r = drf_config_load(path, &drf_host_real, &n.cfg, err, len);
	if (r < 0)
		return r;
	r = drf_config_problem(&n.cfg, &n.problem, &n.demands);
	if (r == 0)
		r = drf_allocate(&n.problem, n.cfg.policy, &n.result);
	if (r == 0) {
		n.knobs = calloc(n.cfg.n_tenants + 1, sizeof(*n.knobs));
		r = n.knobs ? 0 : -ENOMEM;
	}
	if (r < 0) {
		snprintf(err, len, "%s: cannot compute the allocation: %s", path, strerror(-r));
		drf_result_free(&n.result);
		free(n.demands);
		drf_config_free(&n.cfg);
		return r == -EINVAL ? -EIO : r;
	}
	n.loaded = true;
	r = drf_enforced_map(&n, io);
	if (r < 0) {
		snprintf(err, len, "%s: cannot map the allocation to knobs: %s", path, strerror(-r));
		drf_enforced_free(&n);
		return r;
	}
	*ret = n;
	return 0;
}

int drf_enforced_map(struct drf_enforced *e, const struct drf_io_target *io)
{
	struct drf_inner *inner = NULL;
	size_t n_inner = 0;
	int r;

	r = drf_knobs_compute(&e->cfg, &e->problem, &e->result, io, e->knobs, &inner, &n_inner);
	if (r < 0)
		return r;
	drf_inner_free(e->inner, e->n_inner);
	e->inner = inner;
	e->n_inner = n_inner;
	return 0;
}

void drf_enforced_free(struct drf_enforced *e)
{
	if (!e->loaded)
		return;
	free(e->knobs);
	drf_inner_free(e->inner, e->n_inner);
	e->inner = NULL;
	e->n_inner = 0;
	drf_result_free(&e->result);
	free(e->demands);
	drf_config_free(&e->cfg);
	e->loaded = false;
}
