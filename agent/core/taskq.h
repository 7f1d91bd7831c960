/* SPDX-License-Identifier: MIT */
/*
 * The DRF task queue's choice of the next task to start (Ghodsi et al.,
 * Algorithm 1, with skipping), on the tasks a node really runs. Pure: no I/O.
 *
 * Each tenant holds the sum of its running tasks' vectors and has a next task
 * (the head of its queue) or none. The next task to start is the one of the
 * tenant with the lowest weighted dominant share (max_r held_r / capacity_r,
 * divided by its weight) whose next task fits in what is free; a tenant whose
 * next task does not fit is skipped. Ties go to the lower unweighted dominant
 * share, then to the earlier tenant (config order). Resources with capacity 0
 * take no part.
 */
#ifndef DRF_TASKQ_H
#define DRF_TASKQ_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "res.h"

struct drf_tq_tenant {
	double weight;           /* > 0 */
	double held[DRF_NRES];   /* what its running tasks hold */
	const double *next;      /* its next queued task's vector, or NULL */
};

/* Whether vec fits in free (capacity participates in the test; a relative slack of 1e-9). */
bool drf_tq_fits(const double capacity[DRF_NRES], const double free[DRF_NRES],
		 const double vec[DRF_NRES]);

/* Weighted dominant share of held; the unweighted one in *ret_plain if not NULL. */
double drf_tq_share(const double capacity[DRF_NRES], const struct drf_tq_tenant *t,
		    double *ret_plain);

/* The tenant whose next task starts now, or -1 when no next task fits. */
ssize_t drf_tq_pick(const double capacity[DRF_NRES], const double free[DRF_NRES],
		    const struct drf_tq_tenant *t, size_t n);

/*
 * Why a task cannot be queued at all, or NULL: a resource it needs that the
 * node does not share (capacity 0), or more of one than the capacity. *ret_res
 * is the resource concerned.
 */
const char *drf_tq_refuse(const double capacity[DRF_NRES], const double vec[DRF_NRES],
			  int *ret_res);

#endif
