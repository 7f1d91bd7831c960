/* SPDX-License-Identifier: MIT */
/* The status of the running daemon, as `drfctl status` shows it. */
#ifndef DRF_STATUS_H
#define DRF_STATUS_H

#include <stdbool.h>
#include <stdio.h>

#include "view.h"

/*
 * Renders v's status: text for people, or JSON. 0 with the count of problems
 * in *ret_problems, or -errno (out of memory, out's error) with nothing or
 * part of it written.
 */
int drf_status_render(const struct drf_view *v, bool json, FILE *out, int *ret_problems);

struct json_object;
/* "beta" and "lambda" in o when cfg's policy is fds or gfj (the defaults filled in). */
void drf_status_family_json(struct json_object *o, const struct drf_config *cfg);

#endif
