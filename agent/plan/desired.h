/* SPDX-License-Identifier: MIT */
/*
 * The desired state a config describes: the config, its allocation problem, the
 * allocation under its policy, and the knob values that enforce it. What drfd
 * enforces and what `drfctl status` compares with when no daemon answers.
 */
#ifndef DRF_DESIRED_H
#define DRF_DESIRED_H

#include <stdbool.h>
#include <stddef.h>

#include "alloc.h"
#include "config.h"
#include "knobs.h"

struct drf_enforced {
	struct drf_config cfg;
	struct drf_problem problem;
	struct drf_demand *demands;
	struct drf_result result;
	struct drf_knobs *knobs;        /* per tenant */
	struct drf_inner *inner;        /* inner nodes of nested tenant paths, parents first */
	size_t n_inner;
	bool loaded;
};

/*
 * Loads the config at path, allocates under its policy and maps the result to
 * knobs for io (NULL: no io target known). On failure writes why into err and
 * leaves ret untouched; returns -EINVAL for a config error, other -errno else.
 */
int drf_enforced_load(struct drf_enforced *ret, const char *path, const struct drf_io_target *io,
		      char *err, size_t len);
void drf_enforced_free(struct drf_enforced *e);

/*
 * (Re)maps the allocation of a loaded e to knobs for io, e.g. once the io
 * device's scheduler is known. Returns 0 or -ENOMEM (e keeps its old knobs).
 */
int drf_enforced_map(struct drf_enforced *e, const struct drf_io_target *io);

#endif
