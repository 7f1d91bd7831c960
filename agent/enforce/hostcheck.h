/* SPDX-License-Identifier: MIT */
/*
 * What drfd checks of the host before it touches anything: that cgroup-root is
 * on a cgroup v2 mount that offers the needed controllers, and that the io
 * device exists and which io weight its scheduler honours. Messages say what is
 * missing and what to do.
 */
#ifndef DRF_HOSTCHECK_H
#define DRF_HOSTCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "host.h"
#include "knobs.h"

/*
 * Checks cgroup v2 at root (the resolved cgroup-root) and the controllers c
 * needs. Returns 0, or a negative errno with the reason in err: -EMEDIUMTYPE if
 * the root's parent is not on cgroup v2,
 * -ENOTSUP if controllers are missing, -ENOTDIR if the root exists but is not a
 * cgroup (something else is mounted there), another -errno if it cannot tell.
 */
int drf_check_cgroup(const struct drf_config *c, const char *root, char *err, size_t len);

/*
 * Resolves io-device to MAJ:MIN and finds whether BFQ or io.cost will honour
 * io weights. cgroup_mount is the cgroup2 mount (for io.cost.qos). Returns 0,
 * or -ENODEV (or another -errno) with the reason in err.
 */
int drf_check_io_device(const struct drf_config *c, const char *cgroup_mount,
			struct drf_io_target *ret, char *err, size_t len);

/* The cgroup2 mount that holds path, from /proc/self/mounts; 0 or -ENOENT. */
int drf_cgroup2_mount_of(const char *path, char *ret, size_t len);

/*
 * `cgroup-root = auto`: under systemd (c->slices, config.h) drf.slice's
 * cgroup on the cgroup2 mount, where systemd puts the tenants' slices;
 * otherwise the default root c->cgroup_root. Writes the path into ret;
 * ret_how says which rule applied, for the log. Returns 0, -ENOENT (no
 * cgroup2 mount) or -ENAMETOOLONG.
 */
int drf_resolve_auto_root(const struct drf_config *c, char *ret, size_t len, const char **ret_how);

/* An ancestor of drfd's root that bounds the memory protection its tenants get. */
struct drf_prot_cap {
	bool capped;                   /* one's protection is below need */
	char ancestor[512];            /* the one with the least */
	unsigned long long low, min;   /* its memory.low and memory.min */
	unsigned long long need;       /* what drfd's root protects (its memory.low) */
	int err;                       /* -errno of a read that failed (the walk stopped); 0 */
	char err_path[512];
};

/*
 * The kernel bounds a cgroup's effective memory.low (and memory.min) by its
 * parent's, up to the root cgroup, whose children's are their own: walks the
 * ancestors of root (an absolute path) below the root cgroup, through host's
 * cgroup_protection, and names the one whose protection (the larger of its
 * memory.low and memory.min) is the least, if that is below need. Nothing is
 * found without cgroup_protection, or with need 0.
 */
void drf_protection_cap(const struct drf_host_ops *host, const char *root, unsigned long long need,
			struct drf_prot_cap *ret);

/* 0 if fd is a directory on a cgroup2 filesystem, else -EMEDIUMTYPE or -errno. */
int drf_check_cgroup2_fd(int fd);

#endif
