/* SPDX-License-Identifier: MIT */
/*
 * Online DRF: with `[agent] demand = observed`, every tick sets each tenant's
 * effective demand from its measurements (agent/core/demand.h). The effective
 * demands are an input of the planner (planner.h): when one changes, the
 * daemon builds the plan again and puts it in force. The declared plan stays
 * what `drfctl plan` shows.
 */
#ifndef DRF_ONLINE_H
#define DRF_ONLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "planner.h"
#include "usage.h"
#include "use.h"

struct drf_online {
	const struct drf_logger *log;
	char path[4200];                /* the effective demands' file; "": none */
	bool dry_run;                   /* written nowhere */
	double (*eff)[DRF_NRES];        /* the planner's input, per tenant */
	size_t cap;
	uint64_t steps;                 /* online steps taken */
	uint64_t replans;               /* times the effective demands changed the plan */
	uint64_t last_replan_step;
	bool save_failed;               /* said once */
};

/* path: where the effective demands are kept across restarts ("" or NULL: nowhere). */
void drf_online_init(struct drf_online *o, const char *path, bool dry_run,
		     const struct drf_logger *log);

/*
 * After the usage sample of a tick: updates the effective demand of each of
 * u's tenants (decl's, allocated plan). Returns true if one changed (the plan
 * is then built again).
 */
bool drf_online_step(struct drf_online *o, struct drf_usage *u, const struct drf_declared *decl,
		     const struct drf_plan *plan);

/*
 * The effective demands of decl's n tenants, whose measurements are t (in
 * decl's order): a tenant's effective demand once it has one, else its
 * declared demand; each at most its declared demand and the capacity. NULL
 * without observed demand in decl, or out of memory (then the declared
 * demands are planned, and said).
 */
const double (*drf_online_effective(struct drf_online *o, const struct drf_declared *decl,
				    const struct drf_tenant_use *t))[DRF_NRES];

/*
 * The effective demands across restarts: the file at path (STATE_DIR/ROOT.demand
 * beside the state file), rewritten (temporary file and rename) whenever the
 * effective plan changes and at a clean stop. At start, drf_online_restore()
 * takes back the demands of the tenants still in the config (clamped to their
 * declared ones) before the first plan is built: a restart does not move the
 * knobs back to the declared plan. A missing or unreadable file means the
 * declared demands, as before the first tick. drf_online_off(): observed demand
 * switched off by a reload: the effective demands are forgotten and the file
 * removed.
 */
void drf_online_save(struct drf_online *o, const struct drf_usage *u,
		     const struct drf_declared *decl);
void drf_online_restore(struct drf_online *o, struct drf_usage *u,
			const struct drf_declared *decl);
void drf_online_off(struct drf_online *o, struct drf_usage *u);

void drf_online_free(struct drf_online *o);

#endif
