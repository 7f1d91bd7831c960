// SPDX-License-Identifier: MIT
/* The fleet's plan. See fleetplan.h. */
#include "fleetplan.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *drf_fleet_form_name(enum drf_fleet_form f)
{
	static const char *const names[DRF_FLEET_NFORMS] = {
		"drfh", "drfh-best-fit", "drfh-first-fit", "per-server-drf", "slots",
	};

	return (unsigned)f < DRF_FLEET_NFORMS ? names[f] : "?";
}

int drf_fleet_problem(const struct drf_fleet *f, struct drfh_problem *ret,
		      struct drfh_server_spec **ret_specs, struct drf_demand **ret_demands)
{
	struct drfh_server_spec *specs = calloc(f->n_servers + 1, sizeof(*specs));
	struct drf_problem one;
	struct drf_demand *d = NULL;
	int err;

	if (!specs)
		return -ENOMEM;
	err = drf_config_problem(&f->cfg, &one, &d);
	if (err < 0) {
		free(specs);
		return err;
	}
	for (size_t s = 0; s < f->n_servers; s++) {
		memcpy(specs[s].capacity, f->servers[s].capacity, sizeof(specs[s].capacity));
		specs[s].count = f->servers[s].count;
	}
	*ret = (struct drfh_problem){ .nspecs = f->n_servers, .specs = specs,
				      .n = f->cfg.n_tenants, .demands = d };
	*ret_specs = specs;
	*ret_demands = d;
	return 0;
}

void drf_fleet_slot(const struct drf_fleet *f, double slot[DRF_NRES])
{
	const double *pool = f->cfg.capacity;
	size_t ns = 0;

	for (size_t s = 0; s < f->n_servers; s++)
		ns += f->servers[s].count;
	for (int r = 0; r < DRF_NRES; r++) {
		if (f->slot[r] > 0)
			slot[r] = f->slot[r];
		else if (!(pool[r] > 0))
			slot[r] = 0;
		else if (pool[DRF_RES_CPU] > 0)
			slot[r] = r == DRF_RES_CPU ? 1 : pool[r] / pool[DRF_RES_CPU];
		else
			slot[r] = pool[r] / (double)(ns ? ns : 1);
	}
}

int drf_fleet_plan(const struct drf_fleet *f, const struct drfh_problem *p,
		   enum drf_fleet_form form, struct drfh_result *ret)
{
	double slot[DRF_NRES];

	switch (form) {
	case DRF_FLEET_DIVISIBLE:
		return drfh_allocate(p, ret);
	case DRF_FLEET_BEST_FIT:
		return drfh_place(p, DRFH_BEST_FIT, ret);
	case DRF_FLEET_FIRST_FIT:
		return drfh_place(p, DRFH_FIRST_FIT, ret);
	case DRF_FLEET_PER_SERVER_DRF:
		return drfh_per_server_drf(p, ret);
	case DRF_FLEET_SLOTS:
		drf_fleet_slot(f, slot);
		return drfh_slots(p, slot, ret);
	case DRF_FLEET_NFORMS:
		break;
	}
	return -EINVAL;
}

int drf_fleet_names_init(const struct drf_fleet *f, struct drf_fleet_names *ret)
{
	size_t at = 0;

	ret->nspecs = f->n_servers;
	ret->spec_start = malloc((f->n_servers + 1) * sizeof(*ret->spec_start));
	if (!ret->spec_start)
		return -ENOMEM;
	for (size_t s = 0; s < f->n_servers; s++) {
		ret->spec_start[s] = at;
		at += f->servers[s].count;
	}
	ret->spec_start[f->n_servers] = at;
	ret->n = at;
	return 0;
}

void drf_fleet_names_free(struct drf_fleet_names *nm)
{
	free(nm->spec_start);
	nm->spec_start = NULL;
}

/* The section holding a server: the last whose start is at most it. */
static size_t spec_of(const struct drf_fleet_names *nm, size_t server)
{
	size_t lo = 0, hi = nm->nspecs;

	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (nm->spec_start[mid] <= server)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void drf_fleet_server_name(const struct drf_fleet *f, const struct drf_fleet_names *nm,
			   size_t server, char *buf, size_t len)
{
	size_t s = spec_of(nm, server);

	drf_server_name(&f->servers[s], server - nm->spec_start[s] + 1, buf, len);
}

size_t drf_fleet_server_group(const struct drf_fleet *f, const struct drf_fleet_names *nm,
			      const struct drfh_result *r, size_t server)
{
	const double *cap = f->servers[spec_of(nm, server)].capacity;

	for (size_t g = 0; g < r->ngroups; g++)
		if (memcmp(r->groups[g].capacity, cap, sizeof(r->groups[g].capacity)) == 0)
			return g;
	return SIZE_MAX;
}
