/* SPDX-License-Identifier: MIT */
/*
 * The keys drfd reads only when it starts, and what a reload does when one of
 * them changed: the one set of rules the daemon's reload (agent/daemon) and
 * `drfctl plan` (against the running drfd's status) both apply.
 *
 *   cgroup-root             needs a restart (the root is opened and locked at start)
 *   io-device               needs a restart when the new config sets io knobs on
 *                           another device than the one in force (or on one
 *                           while none is); dropping the io capacities is a reload
 *   net-device, network     needs a restart: network capacities added or removed,
 *   capacities              or another net-device (the shaper is set up at start)
 *   state-dir               needs a restart (the state file, task queue, effective
 *                           demands and usage history live there)
 *   status-socket           needs a restart (drfd listens on it; drfctl reads the
 *                           config to find it)
 *   status-group            needs a restart (who may ask drfd: access is not
 *                           changed behind the administrator's back)
 *   net-replace-qdisc       ignored, said at warning: it is read when drfd installs
 *                           its root qdisc at start, and nothing a reload does
 *                           reads it
 *   [fleet], and each of    need a restart: [fleet] added or removed (the node's
 *   its keys                tenants come from etcd or from the config), or any of
 *                           its keys changed (the etcd client, the node's name,
 *                           lease, credentials and whether it campaigns for the
 *                           planner's role are set up at start)
 *
 * Every other key takes effect at the reload. Pure: no I/O.
 */
#ifndef DRF_STARTKEYS_H
#define DRF_STARTKEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* The start-only keys of a config, as written ("auto" for cgroup-root = auto). */
struct drf_start_keys {
	const char *cgroup_root;
	const char *io_device;     /* NULL: no io knobs (no io capacity) */
	const char *net_device;    /* NULL: the network is not shaped (no network capacity) */
	const char *state_dir;     /* NULL: none */
	const char *status_socket;
	const char *status_group;  /* NULL: root only */
	bool net_replace_qdisc;
	/* [fleet]: NULL when the config has none, else "yes"; its keys NULL where unset */
	const char *fleet;
	const char *fleet_endpoints, *fleet_prefix, *fleet_node, *fleet_ca_file, *fleet_cert_file,
		*fleet_key_file, *fleet_user, *fleet_password_file;
	const char *fleet_planner; /* "yes" or "no"; NULL without [fleet] */
	char fleet_lease_ttl[24]; /* "10s"; "" without [fleet] */
	char fleet_grace[24];     /* "50s"; "" without [fleet] */
};

/* c's start-only keys; the strings point into c. */
void drf_start_keys_of(const struct drf_config *c, struct drf_start_keys *ret);

/* A copy that owns its strings (drf_start_keys_free); 0 or -ENOMEM (ret all NULL). */
int drf_start_keys_dup(const struct drf_start_keys *k, struct drf_start_keys *ret);
void drf_start_keys_free(struct drf_start_keys *k);

/* One start-only key that differs between the keys in force and a new config's. */
struct drf_start_change {
	const char *key;        /* "cgroup-root", "io-device", "net-device", ... */
	const char *was, *now;  /* as written; NULL: unset */
	bool restart;           /* true: needs a restart, a reload is refused; false: ignored */
};

#define DRF_START_KEYS_MAX 18

/*
 * The start-only keys that differ from in force (old) to n, in the order of
 * the table above; up to DRF_START_KEYS_MAX into ret (which point into old and
 * n). Returns how many.
 */
size_t drf_start_keys_diff(const struct drf_start_keys *old, const struct drf_start_keys *n,
			   struct drf_start_change *ret);

/*
 * One change in words: "io-device added ('8:0')", "cgroup-root changed from
 * '/a' to '/b'", "network capacities removed (net-device 'eth0')", ...
 */
void drf_start_change_text(const struct drf_start_change *c, char *buf, size_t len);

#endif
