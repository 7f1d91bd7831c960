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
 *   bench_tick N loop [ROUNDS]       a reload from 0 to N tenants under drfd's
 *                                    event loop (taken in steps): each turn
 *                                    timed, the longest printed, for the
 *                                    cgroupfs backend over the fake tree (the
 *                                    yardstick) and for slices over a fake
 *                                    systemd whose answers the loop reads
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
#include "slice.h"

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

/*
 * A systemd whose answers come as the real one's do, read by the loop: a
 * submit waits in a queue, and a defer source of the loop answers every one
 * waiting (a start makes its slice's cgroup in the fake tree, as systemd's
 * job does, its time not counted in drfd's turn; properties are taken as
 * given).
 */
struct lazysd {
	struct fakedrfd *f;
	sd_event_source *answer;
	struct lazycall {
		bool start;
		char unit[256];
		void (*fn)(void *data, int err);
		void *data;
	} *q;
	size_t n, cap, calls;
	double systemd_us;       /* of the turn just served: systemd's part, not drfd's */
};

static int lazy_answer(sd_event_source *s, void *userdata)
{
	struct lazysd *l = userdata;
	size_t n = l->n;

	(void)s;
	l->n = 0;
	for (size_t i = 0; i < n; i++) {
		double t0 = bench_now_us();
		int r = l->q[i].start ? fakecg_ops.mkdir(NULL, l->f->fs.rootfd, l->q[i].unit) : 0;

		l->systemd_us += bench_now_us() - t0;
		l->q[i].fn(l->q[i].data, r == -EEXIST ? 0 : r);
	}
	return 0;
}

static int lazy_submit(void *ctx, bool start, const char *unit, const struct cgfs_prop *p,
		       size_t n, void (*fn)(void *data, int err), void *data)
{
	struct lazysd *l = ctx;

	(void)p;
	(void)n;
	if (l->n >= l->cap)
		return -EAGAIN;
	l->q[l->n] = (struct lazycall){ .start = start, .fn = fn, .data = data };
	snprintf(l->q[l->n].unit, sizeof(l->q[0].unit), "%s", unit);
	l->n++;
	l->calls++;
	return sd_event_source_set_enabled(l->answer, SD_EVENT_ONESHOT);
}

static int lazy_none(void *ctx, const char *unit)
{
	(void)ctx;
	(void)unit;
	return 0;
}

static int lazy_call(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n)
{
	(void)ctx;
	(void)unit;
	(void)p;
	(void)n;
	return 0;
}

static int lazy_kill(void *ctx, const char *unit, int sig)
{
	(void)ctx;
	(void)unit;
	(void)sig;
	return 0;
}

static const struct cgfs_bus_ops lazysd_ops = {
	.name = "lazy systemd", .start = lazy_call, .set = lazy_call, .stop = lazy_none,
	.busy = lazy_none, .kill = lazy_kill, .submit = lazy_submit,
};

static int yes(void *ctx)
{
	(void)ctx;
	return 1;
}

/* The config with cgroup-root = auto (on a host whose init is systemd: slices). */
static int conf_auto(struct fakedrfd *f, const char *text)
{
	FILE *fp = fopen(f->conf, "w");

	if (!fp)
		return -errno;
	fprintf(fp, "[agent]\ncgroup-root = auto\nstate-dir = %s\n%s", f->statedir, text);
	return fclose(fp) == 0 ? 0 : -errno;
}

struct loop_run {
	double total_us, longest_us, reload_us;
	unsigned turns;
	size_t calls;
};

/*
 * A reload from 0 to n tenants under the loop: the reload's own turn, then
 * each turn until the pass has ended, timed. slices: cgroup-root = auto over
 * the lazy systemd.
 */
static int loop_reload(int n, bool slices, struct loop_run *ret)
{
	static struct drf_host_ops host;
	static struct cgfs_slice sl;
	struct lazysd lsd = { 0 };
	struct fakedrfd f;
	char *t = tenants(n, -1, false);
	double t0;
	int r;

	/* Share mode, as shipped: the knobs a systemd host gets. */
	r = t ? fakedrfd_setup(&f, "", "[capacity]\ncpu = 100000\nmemory = 100T\n") : -ENOMEM;
	if (r == 0 && slices)
		r = conf_auto(&f, "[capacity]\ncpu = 100000\nmemory = 100T\n");
	if (r == 0 && slices) {
		char err[512];

		host = drf_host_real;
		host.systemd = yes;
		f.env.host = &host;
		lsd.f = &f;
		lsd.cap = CGFS_BUS_INFLIGHT_MAX;
		lsd.q = calloc(lsd.cap, sizeof(*lsd.q));
		sl = (struct cgfs_slice){ .fs = &cgfs_recording_ops, .fs_ctx = &f.rec,
					  .bus = &lazysd_ops, .bus_ctx = &lsd };
		drf_declared_free(&f.d.decl);
		cgfs_close(&f.fs);
		r = lsd.q ? 0 : -ENOMEM;
		if (r == 0)
			r = drf_declared_load(&f.d.decl, f.conf, &host, err, sizeof(err));
		if (r == 0)
			r = cgfs_open(&f.fs, f.root, false, &cgfs_slice_ops, &sl);
		if (r == 0)
			f.rec.root = f.fs.root;
	}
	if (r == 0)
		r = sd_event_new(&f.d.event);
	if (r == 0 && slices)
		r = sd_event_add_defer(f.d.event, &lsd.answer, lazy_answer, &lsd);
	if (r == 0 && slices)
		r = sd_event_source_set_enabled(lsd.answer, SD_EVENT_OFF);
	f.env.clock = &drf_clock_system;
	if (r == 0)
		r = fakedrfd_start(&f);
	if (r == 0)
		r = slices ? conf_auto(&f, t) : fakedrfd_write(&f, "", t);
	free(t);
	if (r < 0) {
		fprintf(stderr, "bench_tick: loop setup failed: %s\n", strerror(-r));
		return r;
	}
	*ret = (struct loop_run){ 0 };
	t0 = bench_now_us();
	r = drfd_reload(&f.d);
	ret->reload_us = bench_now_us() - t0;
	ret->longest_us = ret->reload_us;
	ret->turns = 1;
	while (r == 0 && drf_reconcile_busy(&f.d.rc)) {
		double t1;

		r = sd_event_prepare(f.d.event);
		if (r == 0)
			r = sd_event_wait(f.d.event, 1000000);
		if (r <= 0) {
			r = r < 0 ? r : -ETIMEDOUT;
			break;
		}
		lsd.systemd_us = 0;
		t1 = bench_now_us();
		r = sd_event_dispatch(f.d.event);
		/* systemd makes the cgroups in its own process, not in drfd's turn. */
		t1 = bench_now_us() - t1 - lsd.systemd_us;
		r = r < 0 ? r : 0;
		ret->turns++;
		if (t1 > ret->longest_us)
			ret->longest_us = t1;
	}
	ret->total_us = bench_now_us() - t0;
	ret->calls = lsd.calls;
	if (r == 0 && (f.d.decl.cfg.n_tenants != (size_t)n || f.d.last.errors)) {
		fprintf(stderr, "bench_tick: the reload did not land: %zu tenants, %u errors\n",
			f.d.decl.cfg.n_tenants, f.d.last.errors);
		r = -EIO;
	}
	lsd.answer = sd_event_source_disable_unref(lsd.answer);
	fakedrfd_teardown(&f);
	free(lsd.q);
	return r;
}

/* Rounds of both, interleaved: the medians of the whole and of the longest turn. */
static int loop_bench(int n, int rounds)
{
	double *cg_total = calloc((size_t)rounds, sizeof(double));
	double *cg_long = calloc((size_t)rounds, sizeof(double));
	double *sl_total = calloc((size_t)rounds, sizeof(double));
	double *sl_long = calloc((size_t)rounds, sizeof(double));
	double cg_max = 0, sl_max = 0;
	struct loop_run cg, sl = { 0 };

	if (!cg_total || !cg_long || !sl_total || !sl_long)
		return 1;
	for (int i = 0; i < rounds; i++) {
		if (loop_reload(n, false, &cg) < 0 || loop_reload(n, true, &sl) < 0)
			return 1;
		cg_total[i] = cg.total_us;
		cg_long[i] = cg.longest_us;
		sl_total[i] = sl.total_us;
		sl_long[i] = sl.longest_us;
		cg_max = cg.longest_us > cg_max ? cg.longest_us : cg_max;
		sl_max = sl.longest_us > sl_max ? sl.longest_us : sl_max;
	}
	printf("tenants %d, a reload from 0 under drfd's loop, %d rounds each, interleaved (medians; "
	       "target: no turn over 100 ms):\n"
	       "  cgroupfs (fake tree, the yardstick): %.0f ms in %u turns, the longest turn %.1f ms "
	       "(max %.1f; the reload's own %.1f)\n"
	       "  slices (a systemd that answers through the loop): %.0f ms in %u turns, %zu calls, "
	       "the longest turn %.1f ms (max %.1f; the reload's own %.1f)\n"
	       "  slices/cgroupfs: whole %.2f, longest turn %.2f\n",
	       n, rounds, bench_median(cg_total, rounds) / 1000, cg.turns,
	       bench_median(cg_long, rounds) / 1000, cg_max / 1000, cg.reload_us / 1000,
	       bench_median(sl_total, rounds) / 1000, sl.turns, sl.calls,
	       bench_median(sl_long, rounds) / 1000, sl_max / 1000, sl.reload_us / 1000,
	       bench_median(sl_total, rounds) / bench_median(cg_total, rounds),
	       bench_median(sl_long, rounds) / bench_median(cg_long, rounds));
	free(cg_total);
	free(cg_long);
	free(sl_total);
	free(sl_long);
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
	if (strcmp(mode, "loop") == 0)
		return loop_bench(n, argc > 3 ? atoi(argv[3]) : 5);
	if (only && strcmp(only, "metrics") == 0 && argc > 4)
		full = strcmp(argv[4], "full") == 0;
	else if (argc > 4)
		rounds = atoi(argv[4]);
	if (n < 1 || rounds < 1 || (!observed && strcmp(mode, "declared") != 0) ||
	    (only && strcmp(only, "metrics") == 0 && argc > 4 && !full &&
	     strcmp(argv[4], "basic") != 0)) {
		fprintf(stderr, "usage: bench_tick N [declared|observed [tick|none ROUNDS]]\n"
				"       bench_tick N declared|observed metrics [basic|full]\n"
				"       bench_tick N reload [ROUNDS]\n"
				"       bench_tick N loop [ROUNDS]\n");
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
