/* SPDX-License-Identifier: MIT */
/*
 * What drfd checks of the host before it touches anything: that cgroup-root is
 * on a cgroup v2 mount that offers the needed controllers, and that the io
 * device exists and which io weight its scheduler honours. Messages say what is
 * missing and what to do.
 */
#ifndef DRF_HOSTCHECK_H
#define DRF_HOSTCHECK_H

#include <stddef.h>

#include "config.h"
#include "knobs.h"

/* drfd's exit codes, one per kind of problem. */
enum drf_exit {
	DRF_EXIT_OK = 0,
	DRF_EXIT_FAILURE = 1,
	DRF_EXIT_CONFIG = 2,  /* the config is invalid */
	DRF_EXIT_CGROUP = 3,  /* no usable cgroup v2 (v1/hybrid host, missing controllers) */
	DRF_EXIT_DEVICE = 4,  /* io-device or net-device missing */
	DRF_EXIT_ROOT = 5,    /* cgroup-root cannot be created, written, or holds processes */
	DRF_EXIT_USAGE = 64,
};

/*
 * Checks cgroup v2 and the controllers c needs. Returns DRF_EXIT_OK or
 * DRF_EXIT_CGROUP with the reason in err.
 */
int drf_check_cgroup(const struct drf_config *c, char *err, size_t len);

/*
 * Resolves io-device to MAJ:MIN and finds whether BFQ or io.cost will honour
 * io weights. cgroup_mount is the cgroup2 mount (for io.cost.qos). Returns
 * DRF_EXIT_OK or DRF_EXIT_DEVICE with the reason in err.
 */
int drf_check_io_device(const struct drf_config *c, const char *cgroup_mount,
			struct drf_io_target *ret, char *err, size_t len);

/* The cgroup2 mount that holds path, from /proc/self/mounts; 0 or -ENOENT. */
int drf_cgroup2_mount_of(const char *path, char *ret, size_t len);

#endif
