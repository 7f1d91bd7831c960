/* SPDX-License-Identifier: MIT */
/*
 * Online DRF in the daemon: with `[agent] demand = observed`, every tick sets
 * each tenant's effective demand from its measurements (agent/core/demand.h),
 * re-runs the allocation on the effective demands, and hands the knobs to the
 * reconcile backends (cgroup knobs, HTB classes, the ingress policer). The
 * declared plan (d->plan) stays what `drfctl plan` shows; the effective one is
 * in force.
 */
#ifndef DRF_ONLINE_H
#define DRF_ONLINE_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"
#include "desired.h"

struct drfd;

struct drf_online {
	/* cfg: a shallow copy of d->plan.cfg (not owned); the rest owned here. */
	struct drf_enforced eff;
	size_t cap;                     /* entries of eff.demands and eff.knobs */
	struct drf_engine engine;
	bool engine_ready;
	bool active;                    /* eff is in force */
	uint64_t steps;                 /* online steps taken */
	uint64_t replans;               /* times the effective plan changed */
	uint64_t last_replan_step;
	bool save_failed;               /* said once */
};

/* The plan in force: the effective one with observed demand, else the declared. */
const struct drf_enforced *drfd_in_force(const struct drfd *d);

/*
 * After the usage sample of a tick: updates the effective demands and, if any
 * changed, re-allocates and sets the reconciler and the shaper to the new
 * knobs. Returns true if the plan in force changed (the caller then applies
 * it), false otherwise or with declared demand.
 */
bool drfd_online_step(struct drfd *d);

/*
 * After a reload (or at start): the effective plan for the plan in d->plan,
 * from the effective demands kept by name; sets the reconciler and shaper to
 * it. With declared demand, switches back to the declared plan. 0 or -errno
 * (then the declared plan is in force).
 */
int drfd_online_plan(struct drfd *d);

/*
 * The effective demands across restarts: STATE_DIR/ROOT.demand beside the state
 * file, rewritten (temporary file and rename) whenever the effective plan
 * changes and at a clean stop. At start, drfd_online_restore() takes back the
 * demands of the tenants still in the config (clamped to their declared ones)
 * and puts the effective plan in force before the first tick writes anything:
 * a restart does not move the knobs back to the declared plan. A missing or
 * unreadable file means the declared demands, as before the first tick.
 */
void drfd_online_save(struct drfd *d);
void drfd_online_restore(struct drfd *d);

void drfd_online_free(struct drf_online *o);

#endif
