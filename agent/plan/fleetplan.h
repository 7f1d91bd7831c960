/* SPDX-License-Identifier: MIT */
/*
 * The fleet's plan: a fleet file (config.h, drf_fleet_load) as a DRFH problem
 * (agent/core/drfh.h), and the forms that solve it: DRFH divisible (the
 * default), DRFH's whole tasks by Best-Fit or First-Fit, and the seed's
 * comparisons, per-server DRF and slots. Pure: no I/O.
 */
#ifndef DRF_FLEETPLAN_H
#define DRF_FLEETPLAN_H

#include <stddef.h>

#include "config.h"
#include "drfh.h"

enum drf_fleet_form {
	DRF_FLEET_DIVISIBLE,
	DRF_FLEET_BEST_FIT,
	DRF_FLEET_FIRST_FIT,
	DRF_FLEET_PER_SERVER_DRF,
	DRF_FLEET_SLOTS,
	DRF_FLEET_NFORMS,
};

/* "drfh", "drfh-best-fit", "drfh-first-fit", "per-server-drf", "slots" */
const char *drf_fleet_form_name(enum drf_fleet_form f);

/* The problem; specs and demands are allocated for the caller (free both). */
int drf_fleet_problem(const struct drf_fleet *f, struct drfh_problem *ret,
		      struct drfh_server_spec **ret_specs, struct drf_demand **ret_demands);

/*
 * The slot of the slots form: [fleet]'s slot-RES where set; else one core and
 * the pool's share of every other resource per core (with no cpu in the pool,
 * a server's average).
 */
void drf_fleet_slot(const struct drf_fleet *f, double slot[DRF_NRES]);

int drf_fleet_plan(const struct drf_fleet *f, const struct drfh_problem *p,
		   enum drf_fleet_form form, struct drfh_result *ret);

/*
 * Server names, by index (in the fleet's order). For a divisible result, each
 * server's tasks are its group's split evenly: drf_fleet_server_group() says
 * which group a server is in.
 */
struct drf_fleet_names {
	size_t n;
	size_t *spec_start; /* index of each section's first server, n_servers + 1 */
	size_t nspecs;
};
int drf_fleet_names_init(const struct drf_fleet *f, struct drf_fleet_names *ret);
void drf_fleet_names_free(struct drf_fleet_names *nm);
void drf_fleet_server_name(const struct drf_fleet *f, const struct drf_fleet_names *nm,
			   size_t server, char *buf, size_t len);
/* The group of a server in a divisible result. */
size_t drf_fleet_server_group(const struct drf_fleet *f, const struct drf_fleet_names *nm,
			      const struct drfh_result *r, size_t server);

#endif
