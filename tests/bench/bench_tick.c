// SPDX-License-Identifier: MIT
/*
 * The cost of drfd's steady state and of a reload, measured on the daemon
 * itself (drfd_tick(), drfd_reload(): tests/lib/fakedrfd.h) over a fake
 * cgroup tree in tmpfs that has every file the kernel shows a tenant (so that
 * the usage sampling reads what it reads on a real host).
 *
 *   bench_tick N [MODE]              one steady tick (nothing to write: the
 *                                    knobs hold, the use does not change),
 *                                    usage sampling included, against a bare
 *                                    read of every knob once, interleaved;
 *                                    and the bytes of one metrics render as
 *                                    the metrics-file has it (metrics-detail
 *                                    = basic, its default), and in full (the
 *                                    socket's, and metrics-detail = full)
 *   bench_tick N MODE tick ROUNDS    ROUNDS steady ticks only (strace -c)
 *   bench_tick N MODE none ROUNDS    the setup only (what strace subtracts)
 *   bench_tick N MODE metrics [DETAIL]  prints one metrics render: basic (the
 *                                    default) or full
 *   bench_tick N reload ROUNDS       reload latency against the config load
 *                                    and libinih's bare parse, interleaved
 *
 * MODE: declared (the default: demand = declared, no metrics-file) or
 * observed (demand = observed, an io device, a metrics-file: every file the
 * sampling reads each tick). Medians of interleaved rounds; no target is
 * asserted: the targets are printed beside the figures.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ini.h>

#include "benchlib.h"
#include "fakecg.h"
#include "fakedrfd.h"
#include "metrics.h"

/* As drfd does: the files it may hold open, malloc's thresholds (drfd_tune_process()). */
static size_t held_files;

/* N tenants with demands of different sizes, limit mode (every knob a number). */
static char *tenants(int n, int changed, bool io)
{
	size_t len = (size_t)n * 96 + 512, off = 0;
	char *t = malloc(len);

	if (!t)
		return NULL;
	off += (size_t)snprintf(t, len, "[capacity]\ncpu = 100000\nmemory = 100T\n%s",
				io ? "io-device = 8:0\nio-read-bps = 100G\n" : "");
	for (int i = 0; i < n; i++)
		off += (size_t)snprintf(t + off, len - off, "[tenant t%d]\nweight = %d\ncpu = %d\n"
					"memory = %dG\n", i, 1 + i % 5,
					i == changed ? 9 : 1 + i % 7, 1 + i % 13);
	return t;
}

/*
 * What the kernel shows each tenant that the fake tree's mkdir does not make:
 * counters that do not move from tick to tick (a steady state).
 */
static int kernel_files(struct fakedrfd *f)
{
	static const char *const files[][2] = {
		{ "cpu.stat", "usage_usec 1000\nuser_usec 600\nsystem_usec 400\n"
			      "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n" },
		{ "memory.current", "1048576\n" },
		{ "memory.stat", "anon 524288\nfile 524288\nkernel 0\nsock 0\nshmem 0\n"
				 "active_anon 524288\ninactive_anon 0\nactive_file 0\n"
				 "inactive_file 524288\n" },
		{ "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n" },
		{ "io.stat", "8:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n" },
		{ "cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
				  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" },
		{ "memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
				     "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" },
		{ "io.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
				 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" },
	};

	for (size_t i = 0; i < f->d.decl.cfg.n_tenants; i++)
		for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++)
			if (fakedrfd_put(f, f->d.decl.cfg.tenants[i].cgroup, files[k][0],
					 files[k][1]) < 0)
				return -1;
	return 0;
}

/* Reads every knob the plan in force sets, once: the yardstick. */
static unsigned bare_loop(struct fakedrfd *f)
{
	const struct drf_plan *p = &f->d.plan;
	unsigned reads = 0;
	char buf[512];

	for (size_t i = 0; i < f->d.decl.cfg.n_tenants; i++)
		for (int k = 0; k < DRF_NKNOBS; k++)
			if (p->knobs[i].set[k] &&
			    cgfs_read(&f->fs, f->d.decl.cfg.tenants[i].cgroup,
				      drf_knob_file(k, f->d.has_io ? &f->d.io : NULL), buf,
				      sizeof(buf)) >= 0)
				reads++;
	return reads;
}

/* A steady tick: one interval later, the verifying round of the config. */
static int tick(struct fakedrfd *f)
{
	size_t before = f->rec.changes;

	fakedrfd_advance(f, f->d.decl.cfg.interval_us);
	if (getenv("BENCH_DEBUG"))
		f->rec.out = stderr;
	drfd_tick(&f->d, f->d.verify);
	if (getenv("BENCH_DEBUG") && (f->d.last.errors || f->rec.changes != before))
		fprintf(stderr, "tick: errors %zu, changes %zu\n", (size_t)f->d.last.errors,
			f->rec.changes - before);
	return f->d.last.errors || f->rec.changes != before ? -1 : 0;
}

/* The daemon over n tenants, started and settled. */
static int daemon_up(struct fakedrfd *f, int n, bool observed)
{
	char agent[512], *t = tenants(n, -1, observed);
	int r;

	if (!t)
		return -ENOMEM;
	if (observed)
		snprintf(agent, sizeof(agent), "mode = limit\ndemand = observed\n"
						"metrics-file = /dev/shm/drf-bench-tick-%d.prom\n",
			 (int)getpid());
	else
		snprintf(agent, sizeof(agent), "mode = limit\n");
	r = fakedrfd_setup(f, agent, t);
	f->env.held_files = held_files;
	free(t);
	if (r == 0 && observed) {
		/* An io device, as its io.stat lines name it: 8:0, weights through BFQ. */
		f->d.has_io = true;
		f->d.io = (struct drf_io_target){ .major = 8, .minor = 0,
						  .weights = DRF_IO_WEIGHTS_BFQ };
	}
	if (r == 0)
		r = fakedrfd_start(f);
	if (r == 0)
		r = kernel_files(f);
	/*
	 * The first samples take the counters in and observed demand moves to
	 * the use in its steps; then nothing changes: up to 100 intervals.
	 */
	for (int k = 0, quiet = 0; r == 0 && quiet < 3; k++) {
		size_t before = f->rec.changes;

		if (k == 100)
			return -EAGAIN;
		fakedrfd_advance(f, f->d.decl.cfg.interval_us);
		drfd_tick(&f->d, SIZE_MAX);
		quiet = f->rec.changes == before && !f->d.last.errors ? quiet + 1 : 0;
	}
	return r;
}

static size_t metrics_bytes(struct fakedrfd *f, enum drf_metrics_detail detail)
{
	struct drf_view v;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return 0;
	drfd_view(&f->d, &v);
	drf_metrics_render(&v, detail, m);
	fclose(m);
	free(buf);
	return len;
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
 * A reload as the daemon does it (load, allocate, plan, diff against the plan
 * in force, write what changed) against loading the same config alone and
 * against libinih's bare parse, alternating two configs that differ in one
 * tenant's cpu demand, in limit mode with room for every demand, so that one
 * knob changes: the reload's p50 and p99, and the ratios of the medians.
 */
static int reload_bench(int n, int rounds)
{
	char *a = tenants(n, -1, false), *b = tenants(n, n / 2, false), err[512];
	double *t_reload = calloc((size_t)rounds, sizeof(double));
	double *t_parse = calloc((size_t)rounds, sizeof(double));
	double *t_load = calloc((size_t)rounds, sizeof(double));
	struct fakedrfd f;

	if (!a || !b || !t_reload || !t_parse || !t_load ||
	    fakedrfd_setup(&f, "mode = limit\n", a) < 0) {
		fprintf(stderr, "bench_tick: reload setup failed\n");
		return 1;
	}
	f.env.held_files = held_files;
	if (fakedrfd_start(&f) < 0) {
		fprintf(stderr, "bench_tick: the daemon did not start\n");
		return 1;
	}
	for (int i = 0; i < rounds; i++) {
		struct drf_config c;
		size_t before = f.rec.changes;
		double t0;

		if (fakedrfd_write(&f, "mode = limit\n", i % 2 ? a : b) < 0) {
			fprintf(stderr, "bench_tick: cannot write the config\n");
			return 1;
		}
		t0 = bench_now_us();
		if (drfd_reload(&f.d) < 0 || f.rec.changes == before) {
			fprintf(stderr, "bench_tick: reload failed: %s\n", f.d.reload_error);
			return 1;
		}
		t_reload[i] = bench_now_us() - t0;
		t0 = bench_now_us();
		if (ini_parse(f.conf, noop_handler, NULL) != 0) {
			fprintf(stderr, "bench_tick: libinih cannot parse %s\n", f.conf);
			return 1;
		}
		t_parse[i] = bench_now_us() - t0;
		t0 = bench_now_us();
		if (drf_config_load(f.conf, &drf_host_real, &c, err, sizeof(err)) < 0) {
			fprintf(stderr, "bench_tick: %s\n", err);
			return 1;
		}
		t_load[i] = bench_now_us() - t0;
		drf_config_free(&c);
	}
	{
		double p99, p50, mp, ml;

		qsort(t_reload, (size_t)rounds, sizeof(double), bench_cmp_double);
		p50 = bench_median(t_reload, rounds);
		p99 = t_reload[(int)((rounds - 1) * 0.99)];
		mp = bench_median(t_parse, rounds);
		ml = bench_median(t_load, rounds);
		printf("tenants %d, %d reloads: drfd_reload() to the changed knobs p50 %.1f ms, p99 "
		       "%.1f ms (target p99 < 100 ms at 1,000); inih alone %.1f ms, config load "
		       "%.1f ms; reload/inih %.2f, reload/load %.2f (target <= 2 at 10,000)\n", n,
		       rounds, p50 / 1000, p99 / 1000, mp / 1000, ml / 1000, p50 / mp, p50 / ml);
	}
	fakedrfd_teardown(&f);
	free(a);
	free(b);
	free(t_reload);
	free(t_parse);
	free(t_load);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000, rounds = 31;
	const char *mode = argc > 2 ? argv[2] : "declared", *only = argc > 3 ? argv[3] : NULL;
	bool observed = strcmp(mode, "observed") == 0, full = false;
	double *t_tick, *t_bare;
	struct fakedrfd f;

	held_files = drfd_tune_process();
	if (strcmp(mode, "reload") == 0)
		return reload_bench(n, argc > 3 ? atoi(argv[3]) : 21);
	if (only && strcmp(only, "metrics") == 0 && argc > 4)
		full = strcmp(argv[4], "full") == 0;
	else if (argc > 4)
		rounds = atoi(argv[4]);
	if (n < 1 || rounds < 1 || (!observed && strcmp(mode, "declared") != 0) ||
	    (only && strcmp(only, "metrics") == 0 && argc > 4 && !full &&
	     strcmp(argv[4], "basic") != 0)) {
		fprintf(stderr, "usage: bench_tick N [declared|observed [tick|none ROUNDS]]\n"
				"       bench_tick N declared|observed metrics [basic|full]\n"
				"       bench_tick N reload [ROUNDS]\n");
		return 64;
	}
	if (daemon_up(&f, n, observed) < 0 || tick(&f) < 0) {
		fprintf(stderr, "bench_tick: the daemon did not settle\n");
		return 1;
	}
	if (only && strcmp(only, "metrics") == 0) {
		struct drf_view v;

		drfd_view(&f.d, &v);
		drf_metrics_render(&v, full ? DRF_METRICS_FULL : DRF_METRICS_BASIC, stdout);
		fakedrfd_teardown(&f);
		return 0;
	}
	t_tick = calloc((size_t)rounds, sizeof(double));
	t_bare = calloc((size_t)rounds, sizeof(double));
	for (int i = 0; only && strcmp(only, "none") != 0 && i < rounds; i++)
		if (tick(&f) < 0) {
			fprintf(stderr, "bench_tick: a steady tick wrote or failed\n");
			return 1;
		}
	for (int i = 0; !only && i < rounds; i++) {
		double t0 = bench_now_us();

		if (tick(&f) < 0) {
			fprintf(stderr, "bench_tick: a steady tick wrote or failed\n");
			return 1;
		}
		t_tick[i] = bench_now_us() - t0;
		t0 = bench_now_us();
		bare_loop(&f);
		t_bare[i] = bench_now_us() - t0;
	}
	if (!only) {
		double mt = bench_median(t_tick, rounds), mb = bench_median(t_bare, rounds);
		size_t mbytes = metrics_bytes(&f, DRF_METRICS_BASIC);
		size_t fbytes = metrics_bytes(&f, DRF_METRICS_FULL);

		printf("tenants %d (%s), %d rounds: steady tick (%zu read back) %.0f us, bare read "
		       "of every knob %.0f us, tick/bare %.3f; one metrics render %zu bytes, %.0f "
		       "per tenant (target < 1 MB at 1,000)\n", n, mode, rounds, f.d.verify, mt, mb,
		       mt / mb, mbytes, (double)mbytes / n);
		printf("tenants %d (%s): one full metrics render (the socket's, metrics-detail = "
		       "full) %zu bytes, %.0f per tenant\n", n, mode, fbytes, (double)fbytes / n);
	}
	if (observed) {
		char p[128];

		snprintf(p, sizeof(p), "/dev/shm/drf-bench-tick-%d.prom", (int)getpid());
		unlink(p);
	}
	fakedrfd_teardown(&f);
	free(t_tick);
	free(t_bare);
	return 0;
}
