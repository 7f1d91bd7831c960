// SPDX-License-Identifier: MIT
#include "testlib.h"

#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * One test, or some, by name: DRF_TEST_FILTER (make check-unit FILTER=...) is
 * cmocka's pattern (* and ? as wildcards) over the names of the tests a binary
 * runs; set before main(), so every test binary takes it.
 */
__attribute__((constructor)) static void t_filter(void)
{
	const char *f = getenv("DRF_TEST_FILTER");

	if (f && *f)
		cmocka_set_test_filter(f);
}

void t_assert_close_at(double actual, double expected, double rel, double abs_tol,
		       const char *what, const char *file, int line)
{
	double limit = fmax(fabs(expected) * rel, abs_tol);

	if (actual == expected || fabs(actual - expected) <= limit)
		return;
	print_error("%s: actual %.17g, expected %.17g, |diff| %.3g > limit %.3g\n", what, actual,
		    expected, fabs(actual - expected), limit);
	_fail(file, line);
}

void t_assert_le_at(double actual, double limit, double rel, double abs_tol, const char *what,
		    const char *file, int line)
{
	double allowed = limit + fabs(limit) * rel + abs_tol;

	if (actual <= allowed)
		return;
	print_error("%s: actual %.17g exceeds limit %.17g (allowed up to %.17g)\n", what, actual,
		    limit, allowed);
	_fail(file, line);
}

uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1p-53;
}

double rng_range(struct rng *r, double lo, double hi)
{
	return lo + (hi - lo) * rng_unit(r);
}

double rng_log(struct rng *r, double lo, double hi)
{
	return exp(rng_range(r, log(lo), log(hi)));
}

int rng_int(struct rng *r, int lo, int hi)
{
	return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

int t_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	size_t n = strlen(text);

	if (!f)
		return -errno;
	if (fwrite(text, 1, n, f) != n) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) == 0 ? 0 : -errno;
}

void t_needs_root_at(const char *test, const char *why)
{
	if (geteuid() == 0)
		return;
	fprintf(stderr, "SKIP %s: needs root (%s)\n", test, why);
	skip();
}

static int fake_cpus(void *ctx, double *ret)
{
	(void)ctx;
	*ret = 8;
	return 0;
}

static int fake_mem(void *ctx, double *ret)
{
	(void)ctx;
	*ret = 16.0 * 1024 * 1024 * 1024;
	return 0;
}

static int fake_speed(void *ctx, const char *dev, double *ret)
{
	(void)ctx;
	if (strcmp(dev, "eth0") != 0)
		return -ENOENT;
	*ret = 10e9;
	return 0;
}

/* Users: alice (1000, groups 1000 and 27, home /home/alice), nohome (1001, no home), root. */
static int fake_user(void *ctx, const char *name, struct drf_host_user *ret)
{
	static const struct {
		const char *name, *home;
		uid_t uid;
	} users[] = { { "alice", "/home/alice", 1000 }, { "nohome", "", 1001 }, { "root", "/root", 0 } };

	(void)ctx;
	for (size_t i = 0; i < sizeof(users) / sizeof(*users); i++) {
		if (strcmp(users[i].name, name) != 0)
			continue;
		memset(ret, 0, sizeof(*ret));
		ret->uid = users[i].uid;
		ret->gid = users[i].uid;
		ret->groups = calloc(2, sizeof(*ret->groups));
		ret->home = strdup(users[i].home);
		if (!ret->groups || !ret->home) {
			/* not drf_host_user_clear(): the core tests link no host.c */
			free(ret->groups);
			free(ret->home);
			return -ENOMEM;
		}
		ret->groups[0] = users[i].uid;
		ret->groups[1] = 27;
		ret->ngroups = 2;
		return 0;
	}
	return -ENOENT;
}

/* Groups: eng (2000), ops (2001), sudo (27). */
static int fake_group(void *ctx, const char *name, gid_t *ret)
{
	static const struct {
		const char *name;
		gid_t gid;
	} groups[] = { { "eng", 2000 }, { "ops", 2001 }, { "sudo", 27 } };

	(void)ctx;
	for (size_t i = 0; i < sizeof(groups) / sizeof(*groups); i++) {
		if (strcmp(groups[i].name, name) == 0) {
			*ret = groups[i].gid;
			return 0;
		}
	}
	return -ENOENT;
}

const struct drf_host_ops t_fake_host = { fake_cpus, fake_mem,  fake_speed, NULL, NULL,
					  fake_user, fake_group, NULL };

struct drf_demand t_task(double w, double cpu, double mem, double tasks)
{
	struct drf_demand d = { .weight = w, .max_units = tasks };

	d.shape[DRF_RES_CPU] = cpu;
	d.shape[DRF_RES_MEMORY] = mem;
	return d;
}

struct drf_problem t_problem(double cpu, double mem, const struct drf_demand *d, size_t n)
{
	struct drf_problem p = { .n = n, .demands = d };

	p.capacity[DRF_RES_CPU] = cpu;
	p.capacity[DRF_RES_MEMORY] = mem;
	return p;
}
