/* SPDX-License-Identifier: MIT */
/*
 * A small, strict parser of the Prometheus text exposition format (0.0.4), for
 * reading drfd's `metrics` answer (drfctl top). Each line is a comment (`#` as
 * its first non-blank character: HELP and TYPE too, all ignored), a blank line,
 * or a sample:
 *
 *   name [ "{" [ label="value" { "," label="value" } [","] ] "}" ] value [ timestamp ]
 *
 * name [a-zA-Z_:][a-zA-Z0-9_:]*, label [a-zA-Z_][a-zA-Z0-9_]*; a label value
 * is UTF-8 with the escapes \\, \" and \n and no other; the value is a decimal
 * float ("1", "-2.5", "1e-3") or NaN, +Inf, -Inf or Inf, in any case (as Go's
 * ParseFloat takes them; hex floats are refused); the timestamp is an integer
 * of milliseconds. Blanks and tabs may separate tokens. Anything else, a label given
 * twice, or text whose last line does not end in '\n' (an answer cut short),
 * is refused. Pure: no I/O.
 */
#ifndef DRF_EXPO_H
#define DRF_EXPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct expo_label {
	char *name;
	char *value;            /* unescaped */
};

struct expo_sample {
	char *name;
	struct expo_label *labels;
	size_t n_labels;
	double value;
	bool has_timestamp;
	int64_t timestamp_ms;
};

struct expo {
	struct expo_sample *samples;
	size_t n;
};

/*
 * Parses one line (len bytes, without its '\n') into *ret (free with
 * expo_sample_free). Returns 1 for a sample, 0 for a comment or blank line
 * (*ret untouched), -EINVAL for a malformed line (*ret_why, if not NULL,
 * points at a static phrase saying what is wrong), -ENOMEM.
 */
int expo_parse_line(const char *line, size_t len, struct expo_sample *ret, const char **ret_why);

/*
 * Parses a whole exposition (len bytes) into *ret (free with expo_free). On
 * -EINVAL nothing is kept, and *ret_line (1-based) and *ret_why say where and
 * what, when not NULL.
 */
int expo_parse(const char *text, size_t len, struct expo *ret, size_t *ret_line,
	       const char **ret_why);

void expo_sample_free(struct expo_sample *s);
void expo_free(struct expo *e);

/* The value of label name of s, or NULL when s has no such label. */
const char *expo_label(const struct expo_sample *s, const char *name);

/*
 * The first sample named name whose labels include every pair of the
 * NULL-terminated list of label names and values (it may have others), or NULL.
 */
const struct expo_sample *expo_find(const struct expo *e, const char *name, ...)
	__attribute__((sentinel));

#endif
