/* SPDX-License-Identifier: MIT */
/*
 * drfd's state across restarts: the tenant cgroups it manages under its root
 * (tenants of the plan in force, and orphans: departed tenants whose cgroups
 * still hold processes). After a restart, an entry that is no longer in the
 * config is handled as a reload handles a departed tenant. One small text file
 * per cgroup-root under state-dir, replaced atomically (write, fsync, rename):
 *
 *   drfd-state 1
 *   root /sys/fs/cgroup/drf.slice
 *   tenant NAME CGROUP
 *   orphan NAME CGROUP
 *   netclass NAME MINOR     (the tenant's HTB class minor, hex: stable across restarts)
 *   netdev IFNAME -         (the device drfd shapes: cleaned up if the config drops it)
 */
#ifndef DRF_STATEFILE_H
#define DRF_STATEFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "reconcile.h"
#include "shaper.h"

struct drf_state_entry {
	char *name;
	char *cgroup;        /* "-" for a netclass line */
	unsigned net_minor;  /* a netclass line's minor; 0 for tenant and orphan lines */
	bool netdev;         /* a netdev line: name is the device */
};

/*
 * Reads the entries of a state file written for root. -ENOENT if there is none;
 * lines that do not parse or name another root are skipped (counted in
 * *ret_skipped). Free with drf_state_free().
 */
int drf_state_load(const char *path, const char *root, struct drf_state_entry **ret,
		   size_t *ret_n, size_t *ret_skipped);
void drf_state_free(struct drf_state_entry *e, size_t n);

/*
 * Writes the reconciler's tenants and orphans, and the shaper's class minors
 * (net may be NULL), creating state-dir if needed. Both this and the load
 * open the file beneath the state dir, checked as statedir.h says.
 */
int drf_state_save(const char *path, const char *root, const struct drf_reconciler *rc,
		   const struct drf_shaper *net);

#endif
