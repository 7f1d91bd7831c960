// SPDX-License-Identifier: MIT
/*
 * The cost of drfd's steady state: one tick over N tenants whose knobs already
 * hold their values (nothing to write), at the defaults (interval 1s,
 * verify-period 30s: each tick reads back ceil(N / 30) tenants), against a bare
 * loop that reads every knob of every tenant once through the same cgroupfs
 * layer, on a fake cgroup tree in tmpfs. Interleaved in one process, one of each per round, so both
 * see the same machine. Prints median microseconds and their ratio.
 *
 *   bench_tick [N]                 both, interleaved (default N = 1000)
 *   bench_tick N tick|bare ROUNDS  one kind only, for counting its system calls
 *                                  under strace -c (see the Makefile's bench)
 *   bench_tick N reload [ROUNDS]   reload latency and cost against parsing alone
 */
#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cgroupfs.h"
#include "config.h"
#include "fakedrfd.h"
#include "fakecg.h"
#include "reconcile.h"

#include <ini.h>

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
static unsigned bare_loop(const struct cgfs *fs, const struct fakeplan *e)
{
	unsigned reads = 0;
	char buf[512];

	for (size_t i = 0; i < e->decl.cfg.n_tenants; i++)
		for (int k = 0; k < DRF_NKNOBS; k++)
			if (e->plan.knobs[i].set[k] &&
			    cgfs_read(fs, e->decl.cfg.tenants[i].cgroup, drf_knob_file(k, NULL), buf,
				      sizeof(buf)) >= 0)
				reads++;
	return reads;
}

/* Tenants read back per tick at the defaults: interval 1s, verify-period 30s. */
static size_t verify;

static int tick(struct drf_reconciler *rc, const struct fakeplan *e)
{
	struct drf_reconcile_stats st;
	int r;

	(void)e;
	r = drf_reconcile_tick(rc, verify, &st);
	return r < 0 ? r : (int)(st.errors + st.writes);
}

static int noop_handler(void *user, const char *section, const char *name, const char *value)
{
	(void)user;
	(void)section;
	(void)name;
	(void)value;
	return 1;
}

/*
 * A reload as the daemon does it (load, allocate, map to knobs, diff against
 * the plan in force, write what changed) against parsing the same file alone,
 * alternating two configs that differ in one tenant's cpu demand, in limit mode
 * with room for every demand, so that one knob changes: the reload's p50
 * and p99, and the ratio of the medians. For N tenants on the same fake tree.
 */
static int reload_bench(int n, int rounds)
{
	char dir[64], root[128], a[256], b[256], err[512];
	double *t_reload = calloc((size_t)rounds, sizeof(double));
	double *t_parse = calloc((size_t)rounds, sizeof(double));
	double *t_load = calloc((size_t)rounds, sizeof(double));
	struct fakeplan e;
	struct drf_reconciler rc;
	struct drf_reconcile_stats st;
	struct cgfs fs;
	FILE *f;

	if (!t_reload || !t_parse || !t_load || fakecg_setup(dir, sizeof(dir), root, sizeof(root)) < 0)
		return 1;
	snprintf(a, sizeof(a), "%s/a.conf", dir);
	snprintf(b, sizeof(b), "%s/b.conf", dir);
	for (int k = 0; k < 2; k++) {
		f = fopen(k ? b : a, "w");
		if (!f)
			return 1;
		/* Room for every demand: one tenant's change moves only its own knobs. */
		fprintf(f, "[agent]\ncgroup-root = %s\nmode = limit\n[capacity]\ncpu = 100000\n"
			   "memory = 100T\n", root);
		for (int i = 0; i < n; i++)
			fprintf(f, "[tenant t%d]\nweight = %d\ncpu = %d\nmemory = %dG\n", i,
				1 + i % 5, i == n / 2 && k ? 9 : 1 + i % 7, 1 + i % 13);
		fclose(f);
	}
	if (fakeplan_load(&e, a, NULL, err, sizeof(err)) < 0 ||
	    cgfs_open(&fs, root, false, &fakecg_ops, NULL) < 0 ||
	    drf_reconciler_init(&rc, &fs, NULL, NULL, false, FAKECG_PAGE) < 0 ||
	    drf_reconciler_set(&rc, &e.plan) < 0 ||
	    drf_reconcile_tick(&rc, SIZE_MAX, &st) < 0) {
		fprintf(stderr, "bench_tick: reload setup: %s\n", err);
		return 1;
	}
	for (int i = 0; i < rounds; i++) {
		struct fakeplan next;
		double t0 = now_us();

		if (fakeplan_load(&next, i % 2 ? a : b, NULL, err, sizeof(err)) < 0 ||
		    drf_reconciler_set(&rc, &next.plan) < 0 ||
		    drf_reconcile_tick(&rc, 0, &st) < 0 || st.errors) {
			fprintf(stderr, "bench_tick: reload failed: %s\n", err);
			return 1;
		}
		t_reload[i] = now_us() - t0;
		fakeplan_free(&e);
		e = next;
		t0 = now_us();
		if (ini_parse(i % 2 ? a : b, noop_handler, NULL) != 0)
			return 1;
		t_parse[i] = now_us() - t0;
		{
			struct drf_config c;

			t0 = now_us();
			if (drf_config_load(i % 2 ? a : b, &drf_host_real, &c, err, sizeof(err)) < 0)
				return 1;
			t_load[i] = now_us() - t0;
			drf_config_free(&c);
		}
	}
	{
		double p99, p50, mp, ml;

		qsort(t_reload, (size_t)rounds, sizeof(double), cmp_double);
		p50 = median(t_reload, rounds);
		p99 = t_reload[(int)((rounds - 1) * 0.99)];
		mp = median(t_parse, rounds);
		ml = median(t_load, rounds);
		printf("tenants %d, %d reloads: reload to the changed knobs p50 %.1f ms, p99 %.1f ms "
		       "(target p99 < 100 ms at 1,000); inih alone %.1f ms, config load %.1f ms; "
		       "reload/inih %.2f, reload/load %.2f (target <= 2 at 10,000)\n", n, rounds,
		       p50 / 1000, p99 / 1000, mp / 1000, ml / 1000, p50 / mp, p50 / ml);
	}
	drf_reconciler_free(&rc);
	cgfs_close(&fs);
	fakeplan_free(&e);
	fakecg_teardown(dir);
	free(t_reload);
	free(t_parse);
	free(t_load);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000, rounds = 31;
	const char *only = argc > 2 ? argv[2] : NULL;
	char dir[64], root[128], path[256], err[512];
	struct drf_reconciler rc;
	struct fakeplan e;
	struct cgfs fs;
	double *t_tick, *t_bare;
	int r;

	if (only && strcmp(only, "reload") == 0)
		return reload_bench(n, argc > 3 ? atoi(argv[3]) : 21);
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
	if (fakeplan_load(&e, path, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_tick: %s\n", err);
		return 1;
	}
	verify = drf_verify_per_tick((size_t)n, 1000000, 30000000);
	if (cgfs_open(&fs, root, false, &fakecg_ops, NULL) < 0 ||
	    drf_reconciler_init(&rc, &fs, NULL, NULL, false, FAKECG_PAGE) < 0 ||
	    drf_reconciler_set(&rc, &e.plan) < 0) {
		fprintf(stderr, "bench_tick: cannot open the fake tree\n");
		return 1;
	}
	/* The first pass creates the tree and writes every knob; then it is steady. */
	verify = SIZE_MAX;
	r = tick(&rc, &e);
	verify = drf_verify_per_tick((size_t)n, 1000000, 30000000);
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

		printf("tenants %d, %d rounds: steady tick (%zu tenants read back) %.0f us, bare read "
		       "of every knob %.0f us, tick/bare %.3f\n", n, rounds, verify, mt, mb, mt / mb);
	}
	drf_reconciler_free(&rc);
	cgfs_close(&fs);
	fakeplan_free(&e);
	fakecg_teardown(dir);
	free(t_tick);
	free(t_bare);
	return 0;
}
