// SPDX-License-Identifier: MIT
/*
 * The cost of drfd's steady state: one tick over N tenants whose knobs already
 * hold their values (nothing to write), against a bare loop that reads every
 * knob of every tenant once through the same cgroupfs layer, on a fake cgroup
 * tree in tmpfs. Interleaved in one process, one of each per round, so both
 * see the same machine. Prints median microseconds and their ratio.
 *
 *   bench_tick [N]                 both, interleaved (default N = 1000)
 *   bench_tick N tick|bare ROUNDS  one kind only, for counting its system calls
 *                                  under strace -c (see the Makefile's bench)
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cgroupfs.h"
#include "config.h"
#include "desired.h"
#include "fakecg.h"
#include "reconcile.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* N tenants with demands of different sizes, limit mode (every knob a number). */
static int write_config(const char *dir, const char *root, int n, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/drfd.conf", dir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "[agent]\ncgroup-root = %s\nmode = limit\n[capacity]\ncpu = 64\nmemory = 256G\n",
		root);
	for (int i = 0; i < n; i++)
		fprintf(f, "[tenant t%d]\ncpu = %d\nmemory = %dG\n", i, 1 + i % 7, 1 + i % 13);
	return fclose(f) == 0 ? 0 : -errno;
}

/* Reads every knob the plan sets, once: the yardstick. */
static unsigned bare_loop(const struct cgfs *fs, const struct drf_enforced *e)
{
	unsigned reads = 0;
	char buf[512];

	for (size_t i = 0; i < e->cfg.n_tenants; i++)
		for (int k = 0; k < DRF_NKNOBS; k++)
			if (e->knobs[i].set[k] &&
			    cgfs_read(fs, e->cfg.tenants[i].cgroup, drf_knob_file(k, NULL), buf,
				      sizeof(buf)) >= 0)
				reads++;
	return reads;
}

static int tick(struct drf_reconciler *rc, const struct drf_enforced *e)
{
	struct drf_reconcile_stats st;
	int r = drf_reconcile(rc, &e->cfg, e->knobs, &st);

	return r < 0 ? r : (int)(st.errors + st.writes);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000, rounds = 31;
	const char *only = argc > 2 ? argv[2] : NULL;
	char dir[64], root[128], path[256], err[512];
	struct drf_reconciler rc;
	struct drf_enforced e;
	struct cgfs fs;
	double *t_tick, *t_bare;
	int r;

	if (argc > 3)
		rounds = atoi(argv[3]);
	if (n < 1 || rounds < 1) {
		fprintf(stderr, "usage: bench_tick [N [tick|bare ROUNDS]]\n");
		return 64;
	}
	if (fakecg_setup(dir, sizeof(dir), root, sizeof(root)) < 0 ||
	    write_config(dir, root, n, path, sizeof(path)) < 0) {
		perror("bench_tick: setup");
		return 1;
	}
	if (drf_enforced_load(&e, path, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_tick: %s\n", err);
		return 1;
	}
	if (cgfs_open(&fs, root, false, &fakecg_ops, NULL) < 0 ||
	    drf_reconciler_init(&rc, &fs, NULL, NULL, false) < 0) {
		fprintf(stderr, "bench_tick: cannot open the fake tree\n");
		return 1;
	}
	/* The first pass creates the tree and writes every knob; then it is steady. */
	r = tick(&rc, &e);
	if (r < 0 || (r = tick(&rc, &e)) != 0) {
		fprintf(stderr, "bench_tick: the tree did not settle (%d)\n", r);
		return 1;
	}
	t_tick = calloc((size_t)rounds, sizeof(double));
	t_bare = calloc((size_t)rounds, sizeof(double));
	for (int i = 0; i < rounds; i++) {
		double t0;

		if (!only || strcmp(only, "tick") == 0) {
			t0 = now_us();
			r = tick(&rc, &e);
			t_tick[i] = now_us() - t0;
			if (r != 0) {
				fprintf(stderr, "bench_tick: a steady tick wrote or failed (%d)\n", r);
				return 1;
			}
		}
		if (!only || strcmp(only, "bare") == 0) {
			t0 = now_us();
			bare_loop(&fs, &e);
			t_bare[i] = now_us() - t0;
		}
	}
	if (!only) {
		double mt = median(t_tick, rounds), mb = median(t_bare, rounds);

		printf("tenants %d, %d rounds: steady tick %.0f us, bare read of every knob %.0f us, "
		       "tick/bare %.3f\n", n, rounds, mt, mb, mt / mb);
	}
	drf_reconciler_free(&rc);
	cgfs_close(&fs);
	drf_enforced_free(&e);
	fakecg_teardown(dir);
	free(t_tick);
	free(t_bare);
	return 0;
}
