// SPDX-License-Identifier: MIT
/* The keyed files of cgroup v2 (see keyfile.h). */
#include "keyfile.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The longest value taken as a number: a uint64_t has 20 digits, a double fewer that matter. */
#define NUM_MAX 63

const char *drf_kv_next_line(const char **pos, size_t *ret_len)
{
	const char *l = *pos, *nl;

	if (!l || !*l)
		return NULL;
	nl = strchr(l, '\n');
	*ret_len = nl ? (size_t)(nl - l) : strlen(l);
	*pos = nl ? nl + 1 : l + *ret_len;
	return l;
}

/* Whether the line (len bytes) has key as its first word, followed by sep. */
static bool keyed(const char *line, size_t len, const char *key, size_t klen, char sep)
{
	return klen < len && line[klen] == sep && memcmp(line, key, klen) == 0;
}

const char *drf_kv_find(const char *buf, const char *key, size_t *ret_len)
{
	size_t klen = strlen(key), len;
	const char *l;

	if (!klen)
		return NULL;
	while ((l = drf_kv_next_line(&buf, &len)))
		if (keyed(l, len, key, klen, ' ')) {
			*ret_len = len - klen - 1;
			return l + klen + 1;
		}
	return NULL;
}

const char *drf_kv_field(const char *line, size_t len, const char *key, size_t *ret_len)
{
	size_t klen = strlen(key);

	if (!klen)
		return NULL;
	for (size_t at = 0; at < len;) {
		size_t w = at;

		while (w < len && line[w] != ' ')
			w++;
		/* The word line[at .. w). */
		if (keyed(line + at, w - at, key, klen, '=')) {
			*ret_len = w - at - klen - 1;
			return line + at + klen + 1;
		}
		at = w + 1;
	}
	return NULL;
}

/* The len bytes at v as a whole uint64_t: 0, -EINVAL or -ERANGE. */
static int parse_u64(const char *v, size_t len, uint64_t *ret)
{
	uint64_t x = 0;

	if (!len)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned)(v[i] - '0');

		if (d > 9)
			return -EINVAL;
		if (x > (UINT64_MAX - d) / 10)
			return -ERANGE;
		x = x * 10 + d;
	}
	*ret = x;
	return 0;
}

/* The len bytes at v as a whole double; NAN if they are not one. */
static double parse_double(const char *v, size_t len)
{
	char b[NUM_MAX + 1], *end;
	double x;

	/* Copied: the value is followed by more of the buffer, which strtod() must not read. */
	if (!len || len > NUM_MAX || isspace((unsigned char)v[0]))
		return NAN;
	memcpy(b, v, len);
	b[len] = '\0';
	x = strtod(b, &end);
	return *end ? NAN : x;
}

int drf_kv_u64(const char *buf, const char *key, uint64_t *ret)
{
	size_t len;
	const char *v = drf_kv_find(buf, key, &len);

	return v ? parse_u64(v, len, ret) : -ENOENT;
}

double drf_kv_double(const char *buf, const char *key)
{
	size_t len;
	const char *v = drf_kv_find(buf, key, &len);

	return v ? parse_double(v, len) : NAN;
}

int drf_kv_field_u64(const char *line, size_t len, const char *key, uint64_t *ret)
{
	size_t n;
	const char *v = drf_kv_field(line, len, key, &n);

	return v ? parse_u64(v, n, ret) : -ENOENT;
}

double drf_kv_field_double(const char *line, size_t len, const char *key)
{
	size_t n;
	const char *v = drf_kv_field(line, len, key, &n);

	return v ? parse_double(v, n) : NAN;
}

/*
 * Gives the word (len bytes at w, split at sep) to the first wanted key it
 * matches, unless an earlier word gave it its value (found[k]): 1 if it took it.
 */
static size_t take(const char *w, size_t len, char sep, const struct drf_kv_want *want,
		   size_t n, bool *found)
{
	for (size_t k = 0; k < n; k++) {
		size_t klen = strlen(want[k].key);

		if (!klen || !keyed(w, len, want[k].key, klen, sep))
			continue;
		if (found[k])
			return 0;
		*want[k].ret = parse_double(w + klen + 1, len - klen - 1);
		found[k] = true;
		return 1;
	}
	return 0;
}

/* Up to this many keys a pass; more are found by further passes. */
#define SCAN_MAX 32

size_t drf_kv_scan(const char *buf, const struct drf_kv_want *want, size_t n)
{
	bool found[SCAN_MAX] = { false };
	size_t got = 0, m = n < SCAN_MAX ? n : SCAN_MAX, len;
	const char *l, *p = buf;

	for (size_t k = 0; k < m; k++)
		*want[k].ret = NAN;
	while (got < m && (l = drf_kv_next_line(&p, &len)))
		got += take(l, len, ' ', want, m, found);
	return n > m ? got + drf_kv_scan(buf, want + m, n - m) : got;
}

size_t drf_kv_scan_fields(const char *line, size_t len, const struct drf_kv_want *want,
			  size_t n)
{
	bool found[SCAN_MAX] = { false };
	size_t got = 0, m = n < SCAN_MAX ? n : SCAN_MAX;

	for (size_t k = 0; k < m; k++)
		*want[k].ret = NAN;
	for (size_t at = 0; got < m && at < len;) {
		size_t w = at;

		while (w < len && line[w] != ' ')
			w++;
		got += take(line + at, w - at, '=', want, m, found);
		at = w + 1;
	}
	return n > m ? got + drf_kv_scan_fields(line, len, want + m, n - m) : got;
}
