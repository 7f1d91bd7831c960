/* SPDX-License-Identifier: MIT */
/*
 * Reconciliation: make the tenant tree in cgroupfs hold the knob values of a
 * plan. Creates missing tenant cgroups, enables the needed controllers along
 * each tenant's path (only below the agent's root), reads every knob back and
 * writes only what differs, and says when a value it wrote was changed by
 * someone else. Lowering a memory limit below current usage is done in two steps
 * off the caller's thread: memory.high first (the kernel reclaims inside that
 * write), memory.max only once usage is under it.
 */
#ifndef DRF_RECONCILE_H
#define DRF_RECONCILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "cgroupfs.h"
#include "config.h"
#include "knobs.h"

struct drf_tenant_state; /* per tenant: what was written, pending tightening */
struct drf_mem_worker;

struct drf_reconciler {
	const struct cgfs *fs;
	const struct drf_io_target *io; /* NULL without io */
	FILE *log;                      /* one line per change; NULL: silent */
	bool async_memory;              /* tighten memory on a worker thread */
	unsigned long page_size;        /* memory limits round down to it */
	struct drf_tenant_state *state;
	size_t n_state;
	struct drf_mem_worker *worker;
};

struct drf_reconcile_stats {
	unsigned writes;    /* knob values written */
	unsigned created;   /* cgroups created */
	unsigned foreign;   /* values found changed by someone else */
	unsigned pending;   /* memory limits waiting for usage to drop */
	unsigned errors;    /* failed operations (each logged) */
};

int drf_reconciler_init(struct drf_reconciler *rc, const struct cgfs *fs,
			const struct drf_io_target *io, FILE *log, bool async_memory);
void drf_reconciler_free(struct drf_reconciler *rc);

/*
 * One pass over every tenant of c with the knob values k (c->n_tenants). Errors
 * on one tenant do not stop the others; they are counted and logged. Returns 0,
 * or -errno if the root itself could not be set up.
 */
int drf_reconcile(struct drf_reconciler *rc, const struct drf_config *c,
		  const struct drf_knobs *k, struct drf_reconcile_stats *ret);

/*
 * After a reload: removes the cgroups of tenants in old but not in new if they
 * hold no processes, and says so for those it must leave (limits left in place).
 */
void drf_reconcile_removed(struct drf_reconciler *rc, const struct drf_config *old_cfg,
			   const struct drf_config *new_cfg);

/* Waits for queued memory writes (tests, shutdown). */
void drf_reconciler_drain(struct drf_reconciler *rc);

#endif
