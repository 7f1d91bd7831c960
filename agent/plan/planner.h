/* SPDX-License-Identifier: MIT */
/*
 * The planner: the one place where drfd decides what is in force.
 *
 *   (config, measurements, task queue) -> plan in force
 *
 * A config is loaded once per (re)load into what it declares: its tenants,
 * their declared demands and the declared allocation (what `drfctl plan`
 * shows). The plan in force is built from that, the effective demands when
 * demand = observed (agent/core/demand.h: measured use, at most the declared
 * demand), and the tasks the queue runs: the allocation, every cgroup's knob
 * values (tenants, the inner nodes of nested paths, the tasks' cgroups), the
 * limits those knobs set, and the network's HTB plan. Pure: no I/O.
 *
 * The daemon builds a plan whenever one of its inputs changed, and hands it
 * to each backend (the cgroup reconciler, the network shaper) once; a backend
 * works out what differs from what it holds and writes only that.
 */
#ifndef DRF_PLANNER_H
#define DRF_PLANNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "config.h"
#include "htb.h"
#include "knobs.h"

/* What a config declares, and the allocation of its declared demands. */
struct drf_declared {
	struct drf_config cfg;
	struct drf_problem problem;
	struct drf_demand *demands;     /* n_tenants */
	struct drf_result result;       /* the declared allocation */
	bool loaded;
	/* With [group] sections: the tree (hdrf.h) and each group's declared allocation. */
	struct drf_hgroup *hgroups;
	size_t *hparents;
	struct drf_share *groups;       /* cfg.n_groups; NULL without groups */
};

/*
 * Loads the config at path (host: what `auto` capacities read) and allocates
 * its declared demands under its policy. On failure writes why into err
 * ("FILE:LINE: ..." for a config error), leaves ret untouched and returns
 * -EINVAL for a config error, another -errno else.
 */
int drf_declared_load(struct drf_declared *ret, const char *path, const struct drf_host_ops *host,
		      char *err, size_t len);
/*
 * A fleet node's: the config at path (with [fleet]) and the tenants of the
 * fleet's assignment (drf_config_load_assigned); assigned NULL: the config's
 * own tenants, as drf_declared_load().
 */
int drf_declared_load_assigned(struct drf_declared *ret, const char *path,
			       const struct drf_host_ops *host, const struct drf_tenant *assigned,
			       size_t n_assigned, const char *source, char *err, size_t len);
void drf_declared_free(struct drf_declared *d);

/* A task the queue runs, or starts now: its own cgroup, limits at its vector. */
struct drf_plan_task {
	const char *cgroup;             /* relative to the root, below its tenant's */
	double vec[DRF_NRES];
};

struct drf_plan_input {
	const struct drf_declared *decl;
	const struct drf_io_target *io; /* NULL without io */
	/*
	 * demand = observed: each tenant's effective demand (in resource units,
	 * at most its declared one); NULL: the declared demands.
	 */
	const double (*effective)[DRF_NRES];
	const struct drf_plan_task *tasks;
	size_t n_tasks;
};

/* The network's share of a plan: what the shaper makes its classes and policers from. */
struct drf_net_plan {
	struct drf_htb_plan htb;        /* the mode and the capacities, bits/s */
	struct drf_htb_tenant *t;       /* per tenant */
	uint64_t link_rate;             /* net-link-rate, bits/s; 0: the device's speed */
	bool replace_foreign;           /* net-replace-qdisc */
};

struct drf_plan {
	const struct drf_declared *decl; /* the config it is made of: not owned */
	bool effective;                  /* on effective demands (else the declared) */
	struct drf_problem problem;      /* the demands allocated */
	struct drf_demand *demands;
	struct drf_result result;        /* the allocation in force */
	struct drf_share *groups;        /* per group, hierarchical DRF's; NULL without groups */
	struct drf_knobs *knobs;         /* per tenant */
	double (*limit)[DRF_NRES];       /* per tenant: the hard limits its knobs set */
	struct drf_knobs *root;          /* drfd's root cgroup's (drf_knobs_root) */
	struct drf_cg_knobs *inner;      /* inner nodes of nested paths, parents first */
	size_t n_inner;
	struct drf_cg_knobs *task;       /* the tasks' cgroups, in the queue's order */
	size_t n_task;
	struct drf_net_plan net;
	bool built;
};

/*
 * Builds the plan for in. eng is the allocation engine whose memory is reused
 * from call to call (the plan copies what it keeps). 0, -EINVAL (a malformed
 * effective demand), -ENOSPC (more tenants than HTB classes when the network
 * is shared), or -ENOMEM; ret is untouched on failure.
 */
int drf_plan_build(const struct drf_plan_input *in, struct drf_engine *eng, struct drf_plan *ret);
void drf_plan_free(struct drf_plan *p);

#endif
