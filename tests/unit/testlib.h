/* SPDX-License-Identifier: MIT */
/* Helpers shared by the cmocka tests: tolerant comparisons that say why, and a
 * seeded random generator so that every random instance can be replayed. */
#ifndef DRF_TESTLIB_H
#define DRF_TESTLIB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "alloc.h"

/* Fails the test, printing actual, expected and the allowed difference. */
void t_assert_close_at(double actual, double expected, double rel, double abs_tol,
		       const char *what, const char *file, int line);
#define assert_close(actual, expected, rel, what) \
	t_assert_close_at((actual), (expected), (rel), 0, (what), __FILE__, __LINE__)

/* Fails unless actual <= limit * (1 + rel) + abs_tol, printing both. */
void t_assert_le_at(double actual, double limit, double rel, double abs_tol, const char *what,
		    const char *file, int line);
#define assert_le_tol(actual, limit, rel, abs_tol, what) \
	t_assert_le_at((actual), (limit), (rel), (abs_tol), (what), __FILE__, __LINE__)

/* A tenant of tasks of (cpu, mem) with weight w, at most tasks of them (INFINITY: any). */
struct drf_demand t_task(double w, double cpu, double mem, double tasks);
/* A problem of n such tenants on cpu cores and mem bytes. */
struct drf_problem t_problem(double cpu, double mem, const struct drf_demand *d, size_t n);

/* splitmix64: small, fast, and the same stream on every machine. */
struct rng {
	uint64_t s;
};
uint64_t rng_next(struct rng *r);
double rng_unit(struct rng *r);                 /* [0, 1) */
double rng_range(struct rng *r, double lo, double hi);
double rng_log(struct rng *r, double lo, double hi); /* log-uniform */
int rng_int(struct rng *r, int lo, int hi);     /* [lo, hi] */

/*
 * A host for `auto` capacities: 8 online CPUs, MemTotal 16G, eth0 at 10 gbit
 * (other devices: -ENOENT).
 */
struct drf_host_ops;
extern const struct drf_host_ops t_fake_host;

/* Writes path with the given contents; returns 0 or -errno. */
int t_write_file(const char *path, const char *text);

/*
 * A test that needs root (why: what for), run by someone else, as a package
 * build's tests are: skipped, saying so on stderr ("SKIP test: needs root
 * (why)") and in cmocka's list of skipped tests. Run by root it returns, and
 * the test runs: nothing it needs is then a reason to skip.
 */
void t_needs_root_at(const char *test, const char *why);
#define t_needs_root(why) t_needs_root_at(__func__, (why))

#endif
