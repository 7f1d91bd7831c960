/* SPDX-License-Identifier: MIT */
/* JSON output shared by drfd and drfctl, and the shortest text of a double. */
#ifndef DRF_JSON_H
#define DRF_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Shortest "%.*g" of v that strtod() reads back exactly. */
char *drf_format_double(double v, char *buf, size_t len);

/*
 * A string with its escapes; a number as the shortest text that reads back the
 * same, null when not finite.
 */
void drf_json_str(FILE *f, const char *s);
void drf_json_num(FILE *f, double v);

#endif
