/* SPDX-License-Identifier: MIT */
/*
 * The keyed files of cgroup v2, parsed from a buffer the caller read (pure: no
 * I/O), one way for every reader of them:
 *
 *   flat    "KEY VALUE" lines: cpu.stat, memory.stat, memory.events, cgroup.events
 *   nested  "WORD KEY=VALUE KEY=VALUE ..." lines: io.stat ("8:0 rbytes=1 wbytes=2
 *           ..."), the PSI files ("some avg10=0.00 avg60=0.00 avg300=0.00 total=12")
 *
 * A key matches whole: at the start of a line followed by a space (flat), or a
 * word of the line followed by '=' (nested), so that "file" never reads
 * "file_mapped" and "ios" never reads "rios". Values are numbers: a uint64_t
 * (decimal digits and nothing else: -ENOENT missing, -EINVAL not a number,
 * -ERANGE too large) or a double (NAN missing or not a number). Buffers are
 * NUL-terminated; a line ends at '\n' or the NUL.
 */
#ifndef DRF_KEYFILE_H
#define DRF_KEYFILE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The line at *pos, and its length without the newline in *ret_len; *pos moves
 * to the next one. NULL at the end of the buffer (an empty last line is none).
 */
const char *drf_kv_next_line(const char **pos, size_t *ret_len);

/*
 * Flat: the value of the first line "KEY VALUE" in buf, its length (to the end
 * of the line) in *ret_len; NULL if no line has that key (or key is empty).
 */
const char *drf_kv_find(const char *buf, const char *key, size_t *ret_len);

/* The same value as a number: 0, -ENOENT, -EINVAL or -ERANGE; *ret only set on 0. */
int drf_kv_u64(const char *buf, const char *key, uint64_t *ret);
double drf_kv_double(const char *buf, const char *key);

/*
 * Nested: the value of the word "KEY=VALUE" in the len bytes at line, its
 * length (to the next space or the end) in *ret_len; NULL if none.
 */
const char *drf_kv_field(const char *line, size_t len, const char *key, size_t *ret_len);
int drf_kv_field_u64(const char *line, size_t len, const char *key, uint64_t *ret);
double drf_kv_field_double(const char *line, size_t len, const char *key);

/* A key to fill in one pass, and where its value goes. */
struct drf_kv_want {
	const char *key;
	double *ret;
};

/*
 * One pass over buf (flat) for n keys at once: each *want[k].ret is set, to the
 * value of the first line with its key, or NAN (a key wanted twice: the second
 * is NAN). How many were found.
 */
size_t drf_kv_scan(const char *buf, const struct drf_kv_want *want, size_t n);

/* The same for the words of one nested line (the len bytes at line). */
size_t drf_kv_scan_fields(const char *line, size_t len, const struct drf_kv_want *want,
			  size_t n);

#endif
