// SPDX-License-Identifier: MIT
/*
 * The primitives of agent/lib: FNV-1a (against its published values and the
 * HTB class minors drfd keeps across restarts), the growable array, the hash
 * index, the keyed cgroup files, fault injection and the recorders' lines, and
 * the file helpers (whole writes and reads, the atomic replace with its
 * failures injected, mkdir -p); and the BPF loaders' drf_map_keys().
 * fsync(2) is this program's own (below): it fails when a test says so.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"
#include "fileio.h"
#include "hash.h"
#include "htb.h"
#include "index.h"
#include "keyfile.h"
#include "pins.h"
#include "record.h"
#include "testlib.h"
#include "vec.h"

/* ---- fsync, failing on demand ---- */

/* The fsync(2) call, counted from 1, that fails with fsync_errno; 0: none fails. */
static int fsync_fail_call;
static int fsync_errno;
static int fsync_calls;

/*
 * Replaces libc's for the whole program, fileio.c's calls included: the
 * failures of a disk cannot be had otherwise.
 */
int fsync(int fd)
{
	if (fsync_fail_call && ++fsync_calls == fsync_fail_call) {
		errno = fsync_errno;
		return -1;
	}
	return (int)syscall(SYS_fsync, fd);
}

static void fsync_fails(int call, int err)
{
	fsync_fail_call = call;
	fsync_errno = err;
	fsync_calls = 0;
}

/* ---- hash ---- */

static void test_hash_known_values(void **state)
{
	(void)state;
	/* FNV-1a's published values (the offset bases for nothing). */
	assert_int_equal(drf_hash32_str(""), 0x811c9dc5u);
	assert_int_equal(drf_hash32_str("a"), 0xe40c292cu);
	assert_int_equal(drf_hash32_str("foobar"), 0xbf9cf968u);
	assert_true(drf_hash_str("") == 0xcbf29ce484222325ULL);
	assert_true(drf_hash_str("a") == 0xaf63dc4c8601ec8cULL);
	assert_true(drf_hash_str("foobar") == 0x85944171f73967e8ULL);
	/* Bytes and strings agree; a NUL inside the bytes counts. */
	assert_true(drf_hash_bytes("foobar", 6) == drf_hash_str("foobar"));
	assert_int_equal(drf_hash32_bytes("foobar", 6), drf_hash32_str("foobar"));
	assert_true(drf_hash_bytes("", 0) == drf_hash_str(""));
	assert_true(drf_hash_bytes("a\0b", 3) != drf_hash_str("a"));
	assert_true(drf_hash32_bytes("a\0b", 3) != drf_hash32_str("a"));
	/* Bytes above 0x7f are taken unsigned. */
	assert_int_equal(drf_hash32_str("\xff"), (0x811c9dc5u ^ 0xffu) * 16777619u);
}

/*
 * The class minors derive from the 32-bit hash of the tenant's name and are
 * kept across restarts: these values (computed apart, in python3, as in
 * test_shaper.c) must never change.
 */
static void test_hash_htb_minors_kept(void **state)
{
	static const struct {
		const char *name;
		uint16_t minor;
	} kept[] = {
		{ "a", 0x4f07 }, { "foobar", 0xb3b1 }, { "team/a", 0xf81c }, { "", 0x314a },
		{ "ang", 0xb1ed }, { "bxa", 0xb1ed }, { "bwkx", 0xb1ee },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		assert_int_equal(drf_htb_minor_hint(kept[i].name), kept[i].minor);
		assert_int_equal(drf_htb_minor_hint(kept[i].name),
				 DRF_HTB_FIRST_TENANT + drf_hash32_str(kept[i].name) %
				 DRF_HTB_MAX_TENANTS);
	}
}

/* ---- vec ---- */

struct pt {
	int x, y;
};

static void test_vec_grows_and_keeps(void **state)
{
	struct pt *v = NULL, *before;
	size_t cap = 0, n = 0;

	(void)state;
	/* Nothing needed: nothing allocated. */
	assert_int_equal(DRF_VEC_GROW(v, &cap, 0), 0);
	assert_null(v);
	assert_int_equal(cap, 0);
	/* The first: DRF_VEC_MIN, then doubling, the contents kept. */
	for (int i = 0; i < 1000; i++) {
		size_t old = cap;

		assert_int_equal(DRF_VEC_GROW(v, &cap, n + 1), 0);
		assert_true(cap >= n + 1);
		if (old == 0)
			assert_int_equal(cap, DRF_VEC_MIN);
		else if (cap != old)
			assert_int_equal(cap, 2 * old);
		v[n++] = (struct pt){ i, -i };
	}
	assert_int_equal(cap, 1024);
	for (int i = 0; i < 1000; i++)
		assert_true(v[i].x == i && v[i].y == -i);
	/* Enough already: the array does not move. */
	before = v;
	assert_int_equal(DRF_VEC_GROW(v, &cap, 1024), 0);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 1024);
	/* Much more at once: doubled until it is enough. */
	assert_int_equal(DRF_VEC_GROW(v, &cap, 5000), 0);
	assert_int_equal(cap, 8192);
	assert_true(v[999].x == 999);
	free(v);
}

static void test_vec_first_need_above_min(void **state)
{
	char *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(DRF_VEC_GROW(v, &cap, DRF_VEC_MIN + 1), 0);
	assert_int_equal(cap, 2 * DRF_VEC_MIN);
	memset(v, 'x', cap);
	free(v);
}

static void test_vec_overflow_leaves_array(void **state)
{
	struct pt *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(DRF_VEC_GROW(v, &cap, 3), 0);
	v[2] = (struct pt){ 7, 8 };
	/* A size that overflows size_t: -ENOMEM, the array and its capacity as they were. */
	assert_int_equal(DRF_VEC_GROW(v, &cap, SIZE_MAX), -ENOMEM);
	assert_int_equal(DRF_VEC_GROW(v, &cap, SIZE_MAX / sizeof(*v) + 1), -ENOMEM);
	assert_int_equal(DRF_VEC_GROW(v, &cap, SIZE_MAX / 2 + 2), -ENOMEM);
	assert_int_equal(cap, DRF_VEC_MIN);
	assert_true(v[2].x == 7 && v[2].y == 8);
	assert_int_equal(drf_vec_grow(&v, &cap, 100, 0), -EINVAL);
	assert_int_equal(cap, DRF_VEC_MIN);
	free(v);
}

/* ---- index ---- */

struct named {
	const char *name;
	uint64_t id;
};

static const void *key_name(const void *ctx, size_t i, size_t *ret_len)
{
	const struct named *v = ctx;

	*ret_len = strlen(v[i].name);
	return v[i].name;
}

static const void *key_id(const void *ctx, size_t i, size_t *ret_len)
{
	const struct named *v = ctx;

	*ret_len = sizeof(v[i].id);
	return &v[i].id;
}

static void test_index_empty(void **state)
{
	struct drf_index ix;
	struct named v[1] = { { "a", 1 } };

	(void)state;
	drf_index_init(&ix, key_name, v);
	assert_int_equal(drf_index_find_str(&ix, "a"), -1);
	assert_int_equal(drf_index_find_str(&ix, ""), -1);
	assert_int_equal(drf_index_build(&ix, 0), 0);
	assert_int_equal(drf_index_find_str(&ix, "a"), -1);
	assert_int_equal(ix.n, 0);
	drf_index_free(&ix);
	drf_index_free(&ix);
	assert_int_equal(drf_index_find_str(&ix, "a"), -1);
}

static void test_index_build_find(void **state)
{
	struct named v[] = { { "ab", 0 }, { "abc", 0 }, { "a", 0 }, { "", 0 }, { "b/a", 0 },
			     { "ab", 0 } };
	struct drf_index ix;

	(void)state;
	drf_index_init(&ix, key_name, v);
	assert_int_equal(drf_index_build(&ix, 6), 0);
	assert_true(ix.cap > 2 * ix.n);
	/* A key that is a prefix of another is its own key. */
	assert_int_equal(drf_index_find_str(&ix, "abc"), 1);
	assert_int_equal(drf_index_find_str(&ix, "a"), 2);
	assert_int_equal(drf_index_find_str(&ix, ""), 3);
	assert_int_equal(drf_index_find_str(&ix, "b/a"), 4);
	/* Equal keys: the first. */
	assert_int_equal(drf_index_find_str(&ix, "ab"), 0);
	assert_int_equal(drf_index_find_str(&ix, "abcd"), -1);
	assert_int_equal(drf_index_find_str(&ix, "b"), -1);
	/* Bytes: a slice of a longer string. */
	assert_int_equal(drf_index_find(&ix, "abcdef", 3), 1);
	assert_int_equal(drf_index_find(&ix, "b/a/c", 3), 4);
	/* Built again over fewer: the rest is gone. */
	assert_int_equal(drf_index_build(&ix, 2), 0);
	assert_int_equal(ix.n, 2);
	assert_int_equal(drf_index_find_str(&ix, "abc"), 1);
	assert_int_equal(drf_index_find_str(&ix, "a"), -1);
	drf_index_free(&ix);
}

/*
 * Keys that all land in one slot of the first table, the last one at its end:
 * the run wraps around to slot 0 and every key is still found.
 */
static void test_index_collisions(void **state)
{
	static char names[8][16];
	struct named v[8];
	struct drf_index ix;
	size_t n = 0;

	(void)state;
	for (unsigned k = 0; n < 6; k++) {
		snprintf(names[n], sizeof(names[n]), "k%u", k);
		if ((drf_hash_str(names[n]) & 15) == 15) {
			v[n] = (struct named){ names[n], 0 };
			n++;
		}
	}
	drf_index_init(&ix, key_name, v);
	assert_int_equal(drf_index_build(&ix, n), 0);
	assert_int_equal(ix.cap, 16);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(drf_index_find_str(&ix, v[i].name), (ssize_t)i);
	/* A missing key of the same slot walks the whole run and stops at its end. */
	for (unsigned k = 1000;; k++) {
		char miss[16];

		snprintf(miss, sizeof(miss), "k%u", k);
		if ((drf_hash_str(miss) & 15) != 15)
			continue;
		assert_int_equal(drf_index_find_str(&ix, miss), -1);
		break;
	}
	drf_index_free(&ix);
}

/*
 * A key that is a prefix of another in the same run of slots: the index tells
 * them apart by length, both ways, whichever came first.
 */
static void test_index_prefix_collision(void **state)
{
	char shorter[16], longer[24];
	struct named v[2];
	struct drf_index ix;
	bool made = false;

	(void)state;
	for (unsigned k = 0; !made && k < 100000; k++) {
		snprintf(shorter, sizeof(shorter), "p%u", k);
		for (char x = 'a'; !made && x <= 'z'; x++) {
			snprintf(longer, sizeof(longer), "%s%c", shorter, x);
			made = (drf_hash_str(shorter) & 15) == (drf_hash_str(longer) & 15);
		}
	}
	assert_true(made);
	for (int order = 0; order < 2; order++) {
		v[order] = (struct named){ longer, 0 };
		v[1 - order] = (struct named){ shorter, 0 };
		drf_index_init(&ix, key_name, v);
		assert_int_equal(drf_index_build(&ix, 2), 0);
		assert_int_equal(ix.cap, 16);
		assert_int_equal(drf_index_find_str(&ix, longer), order);
		assert_int_equal(drf_index_find_str(&ix, shorter), 1 - order);
		drf_index_free(&ix);
		drf_index_init(&ix, key_name, v);
		assert_int_equal(drf_index_add(&ix, 0, NULL), 0);
		assert_int_equal(drf_index_add(&ix, 1, NULL), 0);
		assert_int_equal(drf_index_find_str(&ix, longer), order);
		assert_int_equal(drf_index_find_str(&ix, shorter), 1 - order);
		drf_index_free(&ix);
	}
}

/* A growing array indexed as it grows: positions added in any order, and duplicates refused. */
struct grow {
	struct named *v;
	size_t n, cap;
	char (*names)[12];
};

static const void *key_grow(const void *ctx, size_t i, size_t *ret_len)
{
	const struct grow *g = ctx;

	*ret_len = strlen(g->v[i].name);
	return g->v[i].name;
}

static void test_index_add_grows(void **state)
{
	struct grow g = { 0 };
	struct drf_index ix;
	size_t dup = 12345;
	size_t n = 3000;

	(void)state;
	g.names = calloc(n, sizeof(*g.names));
	assert_non_null(g.names);
	/* The array moves as it grows: the index reaches it through g. */
	drf_index_init(&ix, key_grow, &g);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(DRF_VEC_GROW(g.v, &g.cap, g.n + 1), 0);
		snprintf(g.names[i], sizeof(g.names[i]), "t%zu", i);
		g.v[g.n] = (struct named){ g.names[i], i };
		assert_int_equal(drf_index_add(&ix, g.n, NULL), 0);
		g.n++;
		assert_true(ix.cap > 2 * ix.n);
	}
	assert_int_equal(ix.n, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(drf_index_find_str(&ix, g.names[i]), (ssize_t)i);
	/* A duplicate: -EEXIST, the first's position, nothing added. */
	assert_int_equal(DRF_VEC_GROW(g.v, &g.cap, g.n + 1), 0);
	g.v[g.n] = (struct named){ g.names[1234], 0 };
	assert_int_equal(drf_index_add(&ix, g.n, &dup), -EEXIST);
	assert_int_equal(dup, 1234);
	assert_int_equal(drf_index_add(&ix, g.n, NULL), -EEXIST);
	assert_int_equal(ix.n, n);
	drf_index_free(&ix);
	free(g.v);
	free(g.names);
}

static void test_index_add_any_order(void **state)
{
	struct named v[40];
	char names[40][8];
	struct drf_index ix;

	(void)state;
	for (size_t i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "n%zu", i);
		v[i] = (struct named){ names[i], i };
	}
	/* Odd positions only, last first: a table grown twice keeps them all. */
	drf_index_init(&ix, key_name, v);
	for (size_t i = 40; i-- > 0;)
		if (i % 2)
			assert_int_equal(drf_index_add(&ix, i, NULL), 0);
	assert_int_equal(ix.n, 20);
	for (size_t i = 0; i < 40; i++)
		assert_int_equal(drf_index_find_str(&ix, names[i]), i % 2 ? (ssize_t)i : -1);
	drf_index_free(&ix);
}

static void test_index_u64_keys(void **state)
{
	struct named v[100];
	struct drf_index ix;
	uint64_t miss = 7;

	(void)state;
	for (size_t i = 0; i < 100; i++)
		v[i] = (struct named){ "", (uint64_t)(i + 1) * 0x100000000ULL };
	drf_index_init(&ix, key_id, v);
	assert_int_equal(drf_index_build(&ix, 100), 0);
	for (size_t i = 0; i < 100; i++)
		assert_int_equal(drf_index_find(&ix, &v[i].id, sizeof(v[i].id)), (ssize_t)i);
	assert_int_equal(drf_index_find(&ix, &miss, sizeof(miss)), -1);
	drf_index_free(&ix);
}

/* ---- keyed files ---- */

static const char cpu_stat[] = "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n"
			       "nr_periods 10\nnr_throttled 2\nthrottled_usec 5000";

static void test_kv_flat(void **state)
{
	static const char mem_stat[] = "anon 4096\nfile 8192\nkernel 0\nfile_mapped 100\n"
				       "inactive_file 1024\nanon_thp 0\n";
	uint64_t v = 42;
	size_t len;
	const char *p;

	(void)state;
	assert_int_equal(drf_kv_u64(cpu_stat, "usage_usec", &v), 0);
	assert_int_equal(v, 123456);
	/* The last line has no newline (cgfs_read trims it). */
	assert_int_equal(drf_kv_u64(cpu_stat, "throttled_usec", &v), 0);
	assert_int_equal(v, 5000);
	assert_true(drf_kv_double(cpu_stat, "nr_throttled") == 2);
	/* Whole keys only: a prefix of a key, or a key inside a line, is not it. */
	assert_true(drf_kv_double(mem_stat, "file") == 8192);
	assert_true(drf_kv_double(mem_stat, "anon") == 4096);
	assert_true(drf_kv_double(mem_stat, "inactive_file") == 1024);
	assert_true(isnan(drf_kv_double(mem_stat, "fil")));
	assert_true(isnan(drf_kv_double(mem_stat, "_file")));
	assert_true(isnan(drf_kv_double(cpu_stat, "usec")));
	assert_true(isnan(drf_kv_double(cpu_stat, "123456")));
	/* Missing: -ENOENT, NAN, *ret untouched. */
	v = 42;
	assert_int_equal(drf_kv_u64(cpu_stat, "nr_bursts", &v), -ENOENT);
	assert_int_equal(drf_kv_u64("", "a", &v), -ENOENT);
	assert_int_equal(drf_kv_u64(cpu_stat, "", &v), -ENOENT);
	assert_int_equal(v, 42);
	assert_true(isnan(drf_kv_double("", "a")));
	/* The first line of a key; the value runs to the end of its line. */
	p = drf_kv_find("a 1\nb two words\na 2\n", "b", &len);
	assert_non_null(p);
	assert_int_equal(len, 9);
	assert_memory_equal(p, "two words", 9);
	assert_true(drf_kv_double("a 1\na 2", "a") == 1);
	/* cgroup.events: "populated 1" and "populated 10" are not the same. */
	assert_int_equal(drf_kv_u64("populated 10\nfrozen 0", "populated", &v), 0);
	assert_int_equal(v, 10);
	assert_null(drf_kv_find("populated", "populated", &len));
	p = drf_kv_find("populated \nfrozen 0", "populated", &len);
	assert_non_null(p);
	assert_int_equal(len, 0);
}

static void test_kv_numbers(void **state)
{
	uint64_t v = 42;

	(void)state;
	assert_int_equal(drf_kv_u64("x 18446744073709551615", "x", &v), 0);
	assert_true(v == UINT64_MAX);
	v = 42;
	assert_int_equal(drf_kv_u64("x 18446744073709551616", "x", &v), -ERANGE);
	assert_int_equal(drf_kv_u64("x 99999999999999999999", "x", &v), -ERANGE);
	assert_int_equal(drf_kv_u64("x -1", "x", &v), -EINVAL);
	assert_int_equal(drf_kv_u64("x +1", "x", &v), -EINVAL);
	assert_int_equal(drf_kv_u64("x 1.5", "x", &v), -EINVAL);
	assert_int_equal(drf_kv_u64("x 12abc", "x", &v), -EINVAL);
	assert_int_equal(drf_kv_u64("x ", "x", &v), -EINVAL);
	assert_int_equal(drf_kv_u64("x  1", "x", &v), -EINVAL);
	assert_int_equal(drf_kv_u64("x max", "x", &v), -EINVAL);
	assert_int_equal(v, 42);
	assert_int_equal(drf_kv_u64("x 0", "x", &v), 0);
	assert_int_equal(v, 0);
	assert_true(drf_kv_double("x 1.5", "x") == 1.5);
	assert_true(drf_kv_double("x 0.00\n", "x") == 0);
	assert_true(drf_kv_double("x 18446744073709551616", "x") == 18446744073709551616.0);
	assert_true(isnan(drf_kv_double("x 1.5abc", "x")));
	assert_true(isnan(drf_kv_double("x abc", "x")));
	assert_true(isnan(drf_kv_double("x ", "x")));
	assert_true(isnan(drf_kv_double("x  1", "x")));
	/* A value too long to be a number is none; the next line is never read into it. */
	assert_true(isnan(drf_kv_double("x 1111111111111111111111111111111111111111111111111111111"
					"111111111", "x")));
	assert_true(drf_kv_double("x 1\n2", "x") == 1);
}

static void test_kv_nested(void **state)
{
	static const char psi[] = "some avg10=0.00 avg60=1.50 avg300=0.00 total=12345\n"
				  "full avg10=0.00 avg60=0.00 avg300=0.00 total=678";
	static const char io[] = "8:16 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n"
				 "8:0 rbytes=100 wbytes=200 rios=30 wios=40 dbytes=0 dios=0\n";
	const char *l, *pos = io, *some;
	size_t len, n;
	uint64_t v = 42;
	double sum = 0;

	(void)state;
	some = drf_kv_find(psi, "some", &len);
	assert_non_null(some);
	assert_true(drf_kv_field_double(some, len, "total") == 12345);
	assert_true(drf_kv_field_double(some, len, "avg60") == 1.5);
	some = drf_kv_find(psi, "full", &len);
	assert_int_equal(drf_kv_field_u64(some, len, "total", &v), 0);
	assert_int_equal(v, 678);
	/* Bounded by len: what follows is not read into the value. */
	some = drf_kv_find(psi, "some", &len);
	assert_true(drf_kv_field_double(some, len - 1, "total") == 1234);
	assert_true(isnan(drf_kv_field_double(some, len - 11, "total")));
	/* io.stat, line by line: whole words only ("ios" is not "rios"). */
	while ((l = drf_kv_next_line(&pos, &len))) {
		assert_int_equal(drf_kv_field_u64(l, len, "ios", &v), -ENOENT);
		assert_int_equal(drf_kv_field_u64(l, len, "bytes", &v), -ENOENT);
		assert_int_equal(drf_kv_field_u64(l, len, "", &v), -ENOENT);
		sum += drf_kv_field_double(l, len, "rbytes");
		assert_non_null(drf_kv_field(l, len, "dios", &n));
		assert_int_equal(n, 1);
	}
	assert_true(sum == 101);
	/* The first word is a word too; double spaces make an empty word, no more. */
	assert_true(drf_kv_field_double("a=1  b=2", 8, "b") == 2);
	assert_true(drf_kv_field_double("a=1  b=2", 8, "a") == 1);
	assert_true(isnan(drf_kv_field_double("a=1 b=", 6, "b")));
	assert_true(isnan(drf_kv_field_double("", 0, "a")));
	assert_int_equal(drf_kv_field_u64("a=x", 3, "a", &v), -EINVAL);
}

static void test_kv_lines(void **state)
{
	const char *pos = "a\n\nb", *l;
	size_t len;

	(void)state;
	l = drf_kv_next_line(&pos, &len);
	assert_true(l && len == 1 && l[0] == 'a');
	l = drf_kv_next_line(&pos, &len);
	assert_true(l && len == 0);
	l = drf_kv_next_line(&pos, &len);
	assert_true(l && len == 1 && l[0] == 'b');
	assert_null(drf_kv_next_line(&pos, &len));
	assert_null(drf_kv_next_line(&pos, &len));
	pos = "x 1\n";
	assert_non_null(drf_kv_next_line(&pos, &len));
	assert_null(drf_kv_next_line(&pos, &len));
	pos = "";
	assert_null(drf_kv_next_line(&pos, &len));
}

static void test_kv_scan(void **state)
{
	double use = 1, thr = 1, bursts = 1, dup = 1;
	struct drf_kv_want want[] = {
		{ "usage_usec", &use },
		{ "throttled_usec", &thr },
		{ "nr_bursts", &bursts },
		{ "usage_usec", &dup },
	};
	static const char io[] = "8:0 rbytes=100 wbytes=200 rios=30 wios=40 dbytes=0 dios=0";
	double rb, wb, ri, wi;
	struct drf_kv_want io_want[] = {
		{ "rbytes", &rb }, { "wbytes", &wb }, { "rios", &ri }, { "wios", &wi },
	};

	(void)state;
	/* Found, missing (NAN), and a key asked twice: the first takes it. */
	assert_int_equal(drf_kv_scan(cpu_stat, want, 4), 2);
	assert_true(use == 123456 && thr == 5000);
	assert_true(isnan(bursts) && isnan(dup));
	assert_int_equal(drf_kv_scan("", want, 2), 0);
	assert_true(isnan(use) && isnan(thr));
	/* A key on two lines: the first line's value, as drf_kv_find() has it. */
	assert_int_equal(drf_kv_scan("usage_usec 1\nusage_usec 2", want, 4), 1);
	assert_true(use == 1 && isnan(thr));
	assert_int_equal(drf_kv_scan_fields("rbytes=5 rbytes=6", 17, io_want, 4), 1);
	assert_true(rb == 5 && isnan(wb));
	assert_int_equal(drf_kv_scan_fields(io, strlen(io), io_want, 4), 4);
	assert_true(rb == 100 && wb == 200 && ri == 30 && wi == 40);
	assert_int_equal(drf_kv_scan_fields(io, 14, io_want, 4), 1);
	assert_true(rb == 100 && isnan(wb) && isnan(ri) && isnan(wi));
}

/* More keys than one pass takes: the rest in further passes, every one found. */
static void test_kv_scan_many(void **state)
{
	char buf[2048], keys[70][8];
	double got[70];
	struct drf_kv_want want[70];
	size_t at = 0;

	(void)state;
	for (int i = 0; i < 70; i++) {
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "k%d %d\n", 69 - i, 69 - i);
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		want[i] = (struct drf_kv_want){ keys[i], &got[i] };
	}
	assert_int_equal(drf_kv_scan(buf, want, 70), 70);
	for (int i = 0; i < 70; i++)
		assert_true(got[i] == i);
	keys[69][1] = 'x';
	assert_int_equal(drf_kv_scan(buf, want, 70), 69);
	assert_true(isnan(got[69]));
}

/* ---- fault ---- */

static void test_fault_rules(void **state)
{
	struct drf_fault f = { 0 };

	(void)state;
	/* No errno: no fault, whatever else is set. */
	f.ops = 1;
	f.path = "x";
	assert_int_equal(drf_fault_inject(&f, 1, 0, "x"), 0);
	assert_int_equal(f.hits, 0);
	/* Every operation on every path. */
	f = (struct drf_fault){ .err = EIO };
	assert_int_equal(drf_fault_inject(&f, 1, 0, NULL), -EIO);
	assert_int_equal(drf_fault_inject(&f, 4, 9, "a/b"), -EIO);
	assert_int_equal(f.hits, 2);
	/* The operations named only. */
	f = (struct drf_fault){ .err = EBUSY, .ops = 2 | 8 };
	assert_int_equal(drf_fault_inject(&f, 1, 0, NULL), 0);
	assert_int_equal(drf_fault_inject(&f, 8, 0, NULL), -EBUSY);
	assert_int_equal(f.hits, 1);
	/* The id named only. */
	f = (struct drf_fault){ .err = EPERM, .id = 77 };
	assert_int_equal(drf_fault_inject(&f, 1, 76, NULL), 0);
	assert_int_equal(drf_fault_inject(&f, 1, 0, NULL), 0);
	assert_int_equal(drf_fault_inject(&f, 1, 77, NULL), -EPERM);
	/* Paths ending in the one named; an operation without a path never. */
	f = (struct drf_fault){ .err = ENOSPC, .path = "a/cpu.max" };
	assert_int_equal(drf_fault_inject(&f, 1, 0, "team/a/cpu.max"), -ENOSPC);
	assert_int_equal(drf_fault_inject(&f, 1, 0, "a/cpu.max"), -ENOSPC);
	assert_int_equal(drf_fault_inject(&f, 1, 0, "cpu.max"), 0);
	assert_int_equal(drf_fault_inject(&f, 1, 0, "a/cpu.max.effective"), 0);
	assert_int_equal(drf_fault_inject(&f, 1, 0, NULL), 0);
	assert_int_equal(f.hits, 2);
	/* Cleared: nothing more. */
	f.err = 0;
	assert_int_equal(drf_fault_inject(&f, 1, 0, "a/cpu.max"), 0);
	assert_int_equal(f.hits, 2);
}

/* ---- a recorder's line ---- */

static void test_record_lines(void **state)
{
	char *text = NULL;
	size_t len = 0, changes = 0;
	FILE *out;

	(void)state;
	/* Without a stream: counted only. */
	drf_record(NULL, &changes, "mkdir %s", "a");
	assert_int_equal(changes, 1);
	out = open_memstream(&text, &len);
	assert_non_null(out);
	drf_record(out, &changes, "write %s/%s %d", "r", "cpu.weight", 100);
	drf_record(out, &changes, "%s", "");
	assert_int_equal(fclose(out), 0);
	assert_int_equal(changes, 3);
	assert_string_equal(text, "write r/cpu.weight 100\n\n");
	free(text);
}

/* ---- a BPF map's keys (bpf/pins.c, for both loaders) ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_map_keys(void **state)
{
	uint64_t *keys = NULL, one = 1;
	size_t n = 99;
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "drf_test_keys", sizeof(uint64_t),
				sizeof(uint64_t), 4096, NULL);

	(void)state;
	if (fd < 0) {
		int e = errno;

		t_needs_root("a BPF map");
		fail_msg("no BPF map, as root: %s", strerror(e));
	}
	/* Empty. */
	assert_int_equal(drf_map_keys(fd, &keys, &n), 0);
	assert_int_equal(n, 0);
	free(keys);
	/* Many more than one growth of the array holds. */
	for (uint64_t k = 1; k <= 3000; k++) {
		uint64_t key = k * 0x10001;

		assert_int_equal(bpf_map_update_elem(fd, &key, &one, BPF_NOEXIST), 0);
	}
	assert_int_equal(drf_map_keys(fd, &keys, &n), 0);
	assert_int_equal(n, 3000);
	qsort(keys, n, sizeof(*keys), cmp_u64);
	for (size_t i = 0; i < n; i++)
		assert_true(keys[i] == (i + 1) * 0x10001);
	free(keys);
	close(fd);
	keys = NULL;
	assert_true(drf_map_keys(fd, &keys, &n) < 0);
	assert_null(keys);
}

/* ---- files ---- */

struct tmp {
	char dir[64];
	int fd;
};

static int setup_tmp(void **state)
{
	struct tmp *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	snprintf(t->dir, sizeof(t->dir), "/tmp/drf-lib-XXXXXX");
	if (!mkdtemp(t->dir))
		return -1;
	t->fd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = t;
	fsync_fails(0, 0);
	return t->fd < 0 ? -1 : 0;
}

static int teardown_tmp(void **state)
{
	struct tmp *t = *state;
	char cmd[128];

	fsync_fails(0, 0);
	close(t->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	if (system(cmd) != 0)
		return -1;
	free(t);
	return 0;
}

/* The file rel under t, whole, in buf (NUL-terminated); its length or -errno. */
static ssize_t slurp(const struct tmp *t, const char *rel, char *buf, size_t len)
{
	int fd = openat(t->fd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = drf_read_full(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

static mode_t mode_at(const struct tmp *t, const char *rel)
{
	struct stat st;

	if (fstatat(t->fd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return (mode_t)-1;
	return st.st_mode;
}

static bool exists_at(const struct tmp *t, const char *rel)
{
	return mode_at(t, rel) != (mode_t)-1;
}

static void test_write_read_full(void **state)
{
	struct tmp *t = *state;
	char big[200000], back[200001];
	int p[2], status;
	ssize_t n;
	int fd;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	/* A file: all of it, and a read that asks for more ends at the end. */
	fd = openat(t->fd, "f", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(drf_write_all(fd, big, sizeof(big)), 0);
	assert_int_equal(drf_write_all(fd, big, 0), 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	n = drf_read_full(fd, back, sizeof(back));
	assert_int_equal(n, sizeof(big));
	assert_memory_equal(back, big, sizeof(big));
	assert_int_equal(drf_read_full(fd, back, sizeof(back)), 0);
	assert_int_equal(drf_read_full(fd, back, 0), 0);
	close(fd);
	/* A pipe hands a large read over in parts: read whole all the same. */
	assert_int_equal(pipe(p), 0);
	if (fork() == 0) {
		close(p[0]);
		for (size_t off = 0; off < sizeof(big); off += 1000) {
			if (drf_write_all(p[1], big + off, 1000) < 0)
				_exit(1);
			usleep(100);
		}
		_exit(0);
	}
	close(p[1]);
	n = drf_read_full(p[0], back, sizeof(back));
	assert_int_equal(n, sizeof(big));
	assert_memory_equal(back, big, sizeof(big));
	close(p[0]);
	assert_true(wait(&status) > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Errors: -errno. */
	assert_int_equal(drf_write_all(-1, "x", 1), -EBADF);
	assert_int_equal(drf_read_full(-1, back, 1), -EBADF);
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(drf_write_all(p[1], "x", 1), -EPIPE);
	close(p[1]);
}

/*
 * A short write: RLIMIT_FSIZE lets write(2) put part of the buffer and then
 * fails the rest with EFBIG. drf_write_all() goes on after the part and
 * reports the failure.
 */
static void test_write_all_short(void **state)
{
	struct tmp *t = *state;
	struct rlimit old, lim;
	char buf[64];
	int fd;

	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	fd = openat(t->fd, "short", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	lim = (struct rlimit){ .rlim_cur = 10, .rlim_max = old.rlim_max };
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(drf_write_all(fd, "0123456789abcdefghij", 20), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	close(fd);
	assert_int_equal(slurp(t, "short", buf, sizeof(buf)), 10);
	assert_string_equal(buf, "0123456789");
}

static void test_replace_at(void **state)
{
	struct tmp *t = *state;
	mode_t um = umask(077);
	char buf[64];
	int sub;

	/* New, then replaced: exactly the mode asked, whatever the umask; no temporary left. */
	assert_int_equal(drf_replace_at(t->fd, "state", "one\n", 4, 0644), 0);
	assert_int_equal(slurp(t, "state", buf, sizeof(buf)), 4);
	assert_string_equal(buf, "one\n");
	assert_int_equal(mode_at(t, "state") & 07777, 0644);
	assert_int_equal(drf_replace_at(t->fd, "state", "two", 3, 0600), 0);
	assert_int_equal(slurp(t, "state", buf, sizeof(buf)), 3);
	assert_string_equal(buf, "two");
	assert_int_equal(mode_at(t, "state") & 07777, 0600);
	assert_false(exists_at(t, ".state.tmp"));
	/* Empty. */
	assert_int_equal(drf_replace_at(t->fd, "empty", "", 0, 0600), 0);
	assert_int_equal(slurp(t, "empty", buf, sizeof(buf)), 0);
	/* Under a directory of dirfd's. */
	assert_int_equal(mkdirat(t->fd, "d", 0700), 0);
	assert_int_equal(drf_replace_at(t->fd, "d/x", "x", 1, 0600), 0);
	assert_int_equal(slurp(t, "d/x", buf, sizeof(buf)), 1);
	/* A temporary file a crash left, or a symlink planted there: removed, never followed. */
	assert_int_equal(symlinkat("d/x", t->fd, ".state.tmp"), 0);
	assert_int_equal(drf_replace_at(t->fd, "state", "three", 5, 0600), 0);
	assert_int_equal(slurp(t, "state", buf, sizeof(buf)), 5);
	assert_int_equal(slurp(t, "d/x", buf, sizeof(buf)), 1);
	assert_false(exists_at(t, ".state.tmp"));
	/* A symlink at the path itself is replaced, never followed. */
	assert_int_equal(symlinkat("d/x", t->fd, "link"), 0);
	assert_int_equal(drf_replace_at(t->fd, "link", "four", 4, 0600), 0);
	assert_true(S_ISREG(mode_at(t, "link")));
	assert_int_equal(slurp(t, "d/x", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "x");
	/* Nothing outside dirfd: "..", absolute paths, a directory symlinked away. */
	sub = openat(t->fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(sub >= 0);
	assert_true(drf_replace_at(sub, "../escaped", "x", 1, 0600) < 0);
	assert_false(exists_at(t, "escaped"));
	assert_true(drf_replace_at(sub, "/tmp/escaped", "x", 1, 0600) < 0);
	assert_int_equal(symlinkat("..", sub, "up"), 0);
	assert_true(drf_replace_at(sub, "up/escaped", "x", 1, 0600) < 0);
	assert_false(exists_at(t, "escaped"));
	close(sub);
	/* Paths that name no file. */
	assert_int_equal(drf_replace_at(t->fd, "d/", "x", 1, 0600), -EINVAL);
	assert_int_equal(drf_replace_at(t->fd, "missing/x", "x", 1, 0600), -ENOENT);
	umask(um);
}

static void test_replace_at_failures(void **state)
{
	struct tmp *t = *state;
	struct rlimit old, lim;
	char buf[64], name[300];

	assert_int_equal(drf_replace_at(t->fd, "f", "old", 3, 0600), 0);
	/* A short write, then EFBIG: the file as it was, no temporary left. */
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	lim = (struct rlimit){ .rlim_cur = 2, .rlim_max = old.rlim_max };
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(drf_replace_at(t->fd, "f", "newer", 5, 0600), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(slurp(t, "f", buf, sizeof(buf)), 3);
	assert_string_equal(buf, "old");
	assert_false(exists_at(t, ".f.tmp"));
	/* The file's fsync fails: the same. */
	fsync_fails(1, EIO);
	assert_int_equal(drf_replace_at(t->fd, "f", "newer", 5, 0600), -EIO);
	assert_int_equal(fsync_calls, 1);
	assert_int_equal(slurp(t, "f", buf, sizeof(buf)), 3);
	assert_false(exists_at(t, ".f.tmp"));
	/* The directory's fsync fails: said, with the file replaced (the rename was made). */
	fsync_fails(2, ENOSPC);
	assert_int_equal(drf_replace_at(t->fd, "f", "newer", 5, 0600), -ENOSPC);
	assert_int_equal(fsync_calls, 2);
	assert_int_equal(slurp(t, "f", buf, sizeof(buf)), 5);
	assert_false(exists_at(t, ".f.tmp"));
	/* Both fsync'ed when nothing fails: the file's, then the directory's. */
	fsync_fails(3, EIO);
	assert_int_equal(drf_replace_at(t->fd, "f", "last", 4, 0600), 0);
	assert_int_equal(fsync_calls, 2);
	fsync_fails(0, 0);
	/* The rename fails (a directory with a file in it is there): the temporary goes. */
	assert_int_equal(mkdirat(t->fd, "busy", 0700), 0);
	assert_int_equal(drf_replace_at(t->fd, "busy/in", "x", 1, 0600), 0);
	assert_true(drf_replace_at(t->fd, "busy", "x", 1, 0600) < 0);
	assert_true(S_ISDIR(mode_at(t, "busy")));
	assert_false(exists_at(t, ".busy.tmp"));
	/* A name whose temporary name is too long. */
	memset(name, 'n', NAME_MAX);
	name[NAME_MAX] = '\0';
	assert_int_equal(drf_replace_at(t->fd, name, "x", 1, 0600), -ENAMETOOLONG);
}

static void test_replace_path(void **state)
{
	struct tmp *t = *state;
	char path[128], buf[64], link[128];
	struct stat st, now;
	int cwd;

	/* Absolute, with the identity of what it wrote. */
	snprintf(path, sizeof(path), "%s/m.prom", t->dir);
	assert_int_equal(drf_replace(path, "up 1\n", 5, 0644, &st), 0);
	assert_int_equal(lstat(path, &now), 0);
	assert_true(st.st_dev == now.st_dev && st.st_ino == now.st_ino);
	assert_int_equal(now.st_mode & 07777, 0644);
	assert_int_equal(slurp(t, "m.prom", buf, sizeof(buf)), 5);
	assert_int_equal(drf_replace(path, "up 0\n", 5, 0644, NULL), 0);
	assert_int_equal(lstat(path, &now), 0);
	assert_true(st.st_ino != now.st_ino);
	assert_false(exists_at(t, ".m.prom.tmp"));
	/* Its directory through a symlink, as an administrator may name it. */
	assert_int_equal(mkdirat(t->fd, "real", 0755), 0);
	assert_int_equal(symlinkat("real", t->fd, "alias"), 0);
	snprintf(link, sizeof(link), "%s/alias/m.prom", t->dir);
	assert_int_equal(drf_replace(link, "x", 1, 0644, NULL), 0);
	assert_int_equal(slurp(t, "real/m.prom", buf, sizeof(buf)), 1);
	/* Relative to the working directory. */
	cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(cwd >= 0);
	assert_int_equal(fchdir(t->fd), 0);
	assert_int_equal(drf_replace("rel", "r", 1, 0600, NULL), 0);
	assert_int_equal(drf_replace("real/rel", "rr", 2, 0600, NULL), 0);
	assert_int_equal(fchdir(cwd), 0);
	close(cwd);
	assert_int_equal(slurp(t, "rel", buf, sizeof(buf)), 1);
	assert_int_equal(slurp(t, "real/rel", buf, sizeof(buf)), 2);
	/* No file named, no directory. */
	assert_int_equal(drf_replace("", "x", 1, 0600, NULL), -EINVAL);
	snprintf(path, sizeof(path), "%s/", t->dir);
	assert_int_equal(drf_replace(path, "x", 1, 0600, NULL), -EINVAL);
	snprintf(path, sizeof(path), "%s/none/f", t->dir);
	assert_int_equal(drf_replace(path, "x", 1, 0600, NULL), -ENOENT);
	/* A failed fsync leaves the file as it was, and ret_st as it was. */
	snprintf(path, sizeof(path), "%s/m.prom", t->dir);
	memset(&st, 0x5a, sizeof(st));
	fsync_fails(1, EIO);
	assert_int_equal(drf_replace(path, "up 2\n", 5, 0644, &st), -EIO);
	fsync_fails(2, EIO);
	assert_int_equal(drf_replace(path, "up 3\n", 5, 0644, &st), -EIO);
	fsync_fails(0, 0);
	assert_true(st.st_ino == (ino_t)0x5a5a5a5a5a5a5a5aULL);
	assert_int_equal(drf_replace(path, "up 0\n", 5, 0644, NULL), 0);
	assert_int_equal(slurp(t, "m.prom", buf, sizeof(buf)), 5);
	assert_string_equal(buf, "up 0\n");
}

static void test_open_parent_beneath(void **state)
{
	struct tmp *t = *state;
	const char *name = "untouched";
	struct stat a, b;
	int fd;

	assert_int_equal(mkdirat(t->fd, "p", 0700), 0);
	assert_int_equal(mkdirat(t->fd, "p/q", 0700), 0);
	fd = drf_open_parent_beneath(t->fd, "p/q/file", &name);
	assert_true(fd >= 0);
	assert_string_equal(name, "file");
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstatat(t->fd, "p/q", &b, 0), 0);
	assert_true(a.st_ino == b.st_ino);
	close(fd);
	/* One component: dirfd itself, as a new fd. */
	fd = drf_open_parent_beneath(t->fd, "file", &name);
	assert_true(fd >= 0 && fd != t->fd);
	assert_string_equal(name, "file");
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstat(t->fd, &b), 0);
	assert_true(a.st_ino == b.st_ino);
	close(fd);
	/* Failures leave *ret_name alone. */
	name = "untouched";
	assert_int_equal(drf_open_parent_beneath(t->fd, "p/", &name), -EINVAL);
	assert_int_equal(drf_open_parent_beneath(t->fd, "none/file", &name), -ENOENT);
	assert_true(drf_open_parent_beneath(t->fd, "../file", &name) < 0);
	assert_int_equal(symlinkat("p", t->fd, "s"), 0);
	assert_true(drf_open_parent_beneath(t->fd, "s/file", &name) < 0);
	assert_string_equal(name, "untouched");
}

struct seen {
	char list[512];
	int calls, fail_at;
};

static int see(void *ctx, const char *prefix)
{
	struct seen *s = ctx;
	size_t n = strlen(s->list);

	snprintf(s->list + n, sizeof(s->list) - n, "%s[%s]", n ? " " : "", prefix);
	return ++s->calls == s->fail_at ? -EXDEV : 0;
}

static void prefixes_are(const char *path, const char *want)
{
	struct seen s = { .fail_at = 0 };

	assert_int_equal(drf_path_prefixes(path, see, &s), 0);
	assert_string_equal(s.list, want);
}

static void test_path_prefixes(void **state)
{
	char longp[PATH_MAX + 1];
	struct seen s = { .fail_at = 2 };

	(void)state;
	prefixes_are("a/b/c", "[a] [a/b] [a/b/c]");
	prefixes_are("/a/b", "[/a] [/a/b]");
	prefixes_are("a", "[a]");
	prefixes_are("a//b/", "[a] [a//b]");
	prefixes_are("//a", "[//a]");
	prefixes_are("/", "");
	prefixes_are("", "");
	/* Stops at the first failure, with it. */
	assert_int_equal(drf_path_prefixes("a/b/c", see, &s), -EXDEV);
	assert_string_equal(s.list, "[a] [a/b]");
	memset(longp, 'a', PATH_MAX);
	longp[PATH_MAX] = '\0';
	s = (struct seen){ .fail_at = 0 };
	assert_int_equal(drf_path_prefixes(longp, see, &s), -ENAMETOOLONG);
	assert_int_equal(s.calls, 0);
}

static void test_mkdir_p(void **state)
{
	struct tmp *t = *state;
	mode_t um = umask(022);
	char path[128];
	int fd;

	assert_int_equal(drf_mkdir_p_at(t->fd, "a/b/c", 0700), 0);
	assert_true(S_ISDIR(mode_at(t, "a/b/c")));
	assert_int_equal(mode_at(t, "a/b") & 07777, 0700);
	/* Again, and a part of it: what exists is left alone. */
	assert_int_equal(fchmodat(t->fd, "a/b", 0750, 0), 0);
	assert_int_equal(drf_mkdir_p_at(t->fd, "a/b/c", 0700), 0);
	assert_int_equal(drf_mkdir_p_at(t->fd, "a/b", 0700), 0);
	assert_int_equal(mode_at(t, "a/b") & 07777, 0750);
	/* Absolute, with the mode less the umask. */
	snprintf(path, sizeof(path), "%s/x//y/", t->dir);
	assert_int_equal(drf_mkdir_p_at(AT_FDCWD, path, 0777), 0);
	assert_int_equal(mode_at(t, "x/y") & 07777, 0755);
	/* A file in the way. */
	fd = openat(t->fd, "file", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(drf_mkdir_p_at(t->fd, "file/sub", 0700), -ENOTDIR);
	assert_int_equal(drf_mkdir_p_at(-1, "rel", 0700), -EBADF);
	umask(um);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_known_values),
		cmocka_unit_test(test_hash_htb_minors_kept),
		cmocka_unit_test(test_vec_grows_and_keeps),
		cmocka_unit_test(test_vec_first_need_above_min),
		cmocka_unit_test(test_vec_overflow_leaves_array),
		cmocka_unit_test(test_index_empty),
		cmocka_unit_test(test_index_build_find),
		cmocka_unit_test(test_index_collisions),
		cmocka_unit_test(test_index_prefix_collision),
		cmocka_unit_test(test_index_add_grows),
		cmocka_unit_test(test_index_add_any_order),
		cmocka_unit_test(test_index_u64_keys),
		cmocka_unit_test(test_kv_flat),
		cmocka_unit_test(test_kv_numbers),
		cmocka_unit_test(test_kv_nested),
		cmocka_unit_test(test_kv_lines),
		cmocka_unit_test(test_kv_scan),
		cmocka_unit_test(test_kv_scan_many),
		cmocka_unit_test(test_fault_rules),
		cmocka_unit_test(test_record_lines),
		cmocka_unit_test(test_map_keys),
		cmocka_unit_test_setup_teardown(test_write_read_full, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_write_all_short, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_replace_at, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_replace_at_failures, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_replace_path, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_open_parent_beneath, setup_tmp, teardown_tmp),
		cmocka_unit_test(test_path_prefixes),
		cmocka_unit_test_setup_teardown(test_mkdir_p, setup_tmp, teardown_tmp),
	};

	return cmocka_run_group_tests_name("lib", tests, NULL, NULL);
}
