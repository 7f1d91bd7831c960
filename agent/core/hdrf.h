/* SPDX-License-Identifier: MIT */
/*
 * Hierarchical DRF (H-DRF; Bhattacharya et al., "Hierarchical Scheduling for
 * Diverse Datacenter Workloads", SoCC 2013): the tenants are the leaves of a
 * tree of weighted groups. Pure: no I/O, no logging, no globals.
 *
 * Progressive filling over the tree: at every node, the children that still
 * grow are filled so that their weighted dominant shares stay equal (the
 * lowest is filled first); a group's dominant share is that of the sum of
 * its leaves' allocations, counted over the resources that are not yet used
 * up. A leaf stops at its cap (max_units) or when a resource it needs is used
 * up; a group stops when all its leaves have. Not per-level DRF: counting a
 * used-up resource in a group's share would hold the whole group back for a
 * resource none of its growing leaves can get (docs/design.md, "Hierarchical
 * DRF").
 *
 * With every leaf a child of the root this is weighted DRF, drf_allocate()'s
 * answer.
 */
#ifndef DRF_HDRF_H
#define DRF_HDRF_H

#include <stddef.h>

#include "alloc.h"

/* parent of a node that hangs from the root */
#define DRF_HROOT ((size_t)-1)

struct drf_hgroup {
	double weight; /* > 0 */
	size_t parent; /* index into groups[], or DRF_HROOT */
};

struct drf_hproblem {
	struct drf_problem base;         /* capacities, and the leaves' demands */
	size_t n_groups;
	const struct drf_hgroup *groups;
	const size_t *leaf_parent;       /* base.n entries: a group's index or DRF_HROOT */
};

struct drf_hresult {
	struct drf_result leaves;        /* as drf_allocate()'s, one share per demand */
	/*
	 * Per group: alloc, the sum over its leaves; dominant_share and
	 * dominant_res of that sum over all resources (used-up or not; the first
	 * resource with a capacity if the sum is 0); units 0;
	 * limited_by DRF_LIMIT_DEMAND if every leaf below is at its cap, else a
	 * used-up resource that stopped one of them.
	 */
	size_t n_groups;
	struct drf_share *groups;
};

/*
 * Divisible H-DRF by exact event-driven progressive filling: between events
 * every allocation grows linearly, and an event is a resource used up, a leaf
 * at its cap, a group's dominant resource changing, or a child catching up
 * with its siblings' level. O((n + g) * m) per event; at most a few events
 * per node and resource.
 * Returns 0, -EINVAL (what drf_allocate() refuses, a parent index out of
 * range, a cycle among the groups, a non-positive group weight), -ENOMEM, or
 * -ELOOP if the filling did not finish within its bound on events (a bug;
 * never seen). ret is filled only on success; drf_hresult_free().
 */
int drf_hdrf_allocate(const struct drf_hproblem *p, struct drf_hresult *ret);

/*
 * Whole tasks: the leaf that gets the next copy of its shape, given units[i]
 * copies held by each leaf. From the root down, the non-blocked child with the
 * lowest weighted dominant share (over the resources not used up) is taken,
 * ties to the earlier group, then the earlier leaf; groups come before leaves
 * among siblings. A leaf is blocked when it is at its cap or its next copy
 * does not fit in what is left; a resource counts as used up when no leaf
 * below its cap could fit its next copy's need of it. Returns the leaf's index,
 * -ENOSPC if no copy fits, -EINVAL or -ENOMEM.
 */
long drf_hdrf_pick(const struct drf_hproblem *p, const double *units);

/*
 * The discrete variant: drf_hdrf_pick() one copy at a time from nothing,
 * until nothing fits. -E2BIG beyond DRF_DISCRETE_MAX_TASKS copies.
 */
int drf_hdrf_allocate_discrete(const struct drf_hproblem *p, struct drf_hresult *ret);

void drf_hresult_free(struct drf_hresult *r);

#endif
