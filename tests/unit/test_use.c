// SPDX-License-Identifier: MIT
/*
 * Usage against allocation: the pure arithmetic (agent/core/use.c) and the
 * daemon's sampling (agent/daemon/usage.c) over a fake cgroup tree and the
 * probes' recorder, with failures injected.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "fakecg.h"
#include "fakedrfd.h"
#include "testlib.h"
#include "use.h"

#define SEC 1000000ull

static struct drf_sample at(uint64_t t_us)
{
	struct drf_sample s = { .t_us = t_us };

	for (int c = 0; c < DRF_NCTR; c++)
		s.c[c] = NAN;
	return s;
}

static void fresh(struct drf_tenant_use *u)
{
	memset(u, 0, sizeof(*u));
	for (int g = 0; g < DRF_NGAUGE; g++)
		u->gauge[g] = NAN;
	for (int r = 0; r < DRF_NRES; r++)
		u->limit[r] = INFINITY;
}

static void test_rates_tick_and_minute(void **state)
{
	struct drf_tenant_use u;
	struct drf_sample s;

	(void)state;
	fresh(&u);
	/* 0.5 cores by cpu.stat for 30 s, then 1.5 cores for 1 s. */
	for (int i = 0; i <= 30; i++) {
		s = at((uint64_t)(i + 1) * SEC);
		s.c[DRF_CTR_CPU_USEC] = i * 500000.0;
		drf_use_push(&u, &s, false);
	}
	assert_true(fabs(u.use_tick[DRF_RES_CPU] - 0.5) < 1e-9);
	s = at(32 * SEC);
	s.c[DRF_CTR_CPU_USEC] = 30 * 500000.0 + 1500000.0;
	drf_use_push(&u, &s, false);
	assert_true(fabs(u.use_tick[DRF_RES_CPU] - 1.5) < 1e-9);
	/* The minute: from the ring's oldest sample (t = 1 s, kept 5 s apart). */
	assert_true(u.window_min_s > 25 && u.window_min_s <= 31);
	assert_true(u.use_min[DRF_RES_CPU] > 0.5 && u.use_min[DRF_RES_CPU] < 0.6);
	/* Unknown counters stay unknown. */
	assert_true(isnan(u.use_tick[DRF_RES_IO_READ]));
	assert_true(isnan(u.rate_tick[DRF_CTR_RUNQ_NS]));
}

static void test_minute_window_slides(void **state)
{
	struct drf_tenant_use u;
	struct drf_sample s;

	(void)state;
	fresh(&u);
	/* 2 minutes at 1 core, then the window covers at most 65 s. */
	for (int i = 0; i <= 120; i++) {
		s = at((uint64_t)(i + 1) * SEC);
		s.c[DRF_CTR_CPU_USEC] = i * 1e6;
		drf_use_push(&u, &s, false);
	}
	assert_true(u.window_min_s >= 55 && u.window_min_s <= 65);
	assert_true(fabs(u.use_min[DRF_RES_CPU] - 1.0) < 1e-9);
}

static void test_probes_preferred(void **state)
{
	struct drf_tenant_use u;
	struct drf_sample s = at(SEC);

	(void)state;
	fresh(&u);
	s.c[DRF_CTR_CPU_USEC] = 0;
	s.c[DRF_CTR_ONCPU_NS] = 0;
	s.c[DRF_CTR_IO_WBYTES] = 0;
	s.c[DRF_CTR_PROBE_WBYTES] = 0;
	drf_use_push(&u, &s, true);
	s = at(3 * SEC);
	s.c[DRF_CTR_CPU_USEC] = 2e6;         /* 1 core */
	s.c[DRF_CTR_ONCPU_NS] = 3e9;         /* 1.5 cores */
	s.c[DRF_CTR_IO_WBYTES] = 2e6;
	s.c[DRF_CTR_PROBE_WBYTES] = 4e6;
	s.c[DRF_CTR_RUNQ_NS] = 1e9;
	drf_use_push(&u, &s, true);
	/* Both known: the kernel's files. */
	assert_true(fabs(u.use_tick[DRF_RES_CPU] - 1.0) < 1e-9);
	assert_true(fabs(u.use_tick[DRF_RES_IO_WRITE] - 1e6) < 1e-6);
	/* RUNQ_NS had no earlier value: no rate, no pressure. */
	assert_true(isnan(u.pressure[DRF_PRESSURE_RUNQ]));
	/* No cpu.stat (no cpu controller): the probe stands in, if it counts. */
	fresh(&u);
	s = at(SEC);
	s.c[DRF_CTR_ONCPU_NS] = 0;
	drf_use_push(&u, &s, true);
	s = at(3 * SEC);
	s.c[DRF_CTR_ONCPU_NS] = 3e9;
	drf_use_push(&u, &s, true);
	assert_true(fabs(u.use_tick[DRF_RES_CPU] - 1.5) < 1e-9);
	fresh(&u);
	s = at(SEC);
	s.c[DRF_CTR_ONCPU_NS] = 0;
	drf_use_push(&u, &s, false);
	s = at(3 * SEC);
	s.c[DRF_CTR_ONCPU_NS] = 3e9;
	drf_use_push(&u, &s, false);
	assert_true(isnan(u.use_tick[DRF_RES_CPU]));
}

static void test_recreated_restarts_history(void **state)
{
	struct drf_tenant_use u;
	struct drf_sample s = at(SEC);

	(void)state;
	fresh(&u);
	s.c[DRF_CTR_CPU_USEC] = 9e6;
	drf_use_push(&u, &s, false);
	s = at(2 * SEC);
	s.c[DRF_CTR_CPU_USEC] = 1e5; /* went back: a new cgroup */
	drf_use_push(&u, &s, false);
	assert_true(isnan(u.use_tick[DRF_RES_CPU]));
	assert_int_equal(u.ring_n, 1);
	s = at(3 * SEC);
	s.c[DRF_CTR_CPU_USEC] = 6e5;
	drf_use_push(&u, &s, false);
	assert_true(fabs(u.use_tick[DRF_RES_CPU] - 0.5) < 1e-9);
}

static void test_assess_not_holding(void **state)
{
	const double cap[DRF_NRES] = { [DRF_RES_CPU] = 4, [DRF_RES_MEMORY] = 8e9,
				       [DRF_RES_NET] = 1e9 };
	struct drf_tenant_use u;

	(void)state;
	fresh(&u);
	u.alloc[DRF_RES_CPU] = 1;
	u.alloc[DRF_RES_MEMORY] = 4e9;
	u.limit[DRF_RES_CPU] = 1;
	u.limit[DRF_RES_MEMORY] = 4e9;
	u.window_min_s = 30;
	u.use_tick[DRF_RES_CPU] = u.use_min[DRF_RES_CPU] = 1.04; /* within 5% */
	u.use_tick[DRF_RES_MEMORY] = u.gauge[DRF_GAUGE_MEM_CURRENT] = 2e9;
	u.use_tick[DRF_RES_NET] = u.use_min[DRF_RES_NET] = 5e8; /* no limit */
	drf_use_assess(&u, cap);
	assert_int_equal(u.not_holding, 0);
	/* Dominant allocation: memory 0.5; dominant use: net 0.5 over memory 0.25. */
	assert_int_equal(u.dominant_alloc_res, DRF_RES_MEMORY);
	assert_true(fabs(u.dominant_alloc - 0.5) < 1e-12);
	assert_int_equal(u.dominant_use_res, DRF_RES_NET);
	assert_true(fabs(u.gap[DRF_RES_CPU] - -0.04) < 1e-12);
	u.use_min[DRF_RES_CPU] = 1.2;
	u.use_tick[DRF_RES_CPU] = 1.3;
	u.gauge[DRF_GAUGE_MEM_CURRENT] = 4e9 + 8192;
	drf_use_assess(&u, cap);
	assert_int_equal(u.not_holding, (1u << DRF_RES_CPU) | (1u << DRF_RES_MEMORY));
	/* A limit just lowered: the minute still holds the use from before, the tick not. */
	u.use_tick[DRF_RES_CPU] = 0.1;
	drf_use_assess(&u, cap);
	assert_int_equal(u.not_holding, 1u << DRF_RES_MEMORY);
	u.use_tick[DRF_RES_CPU] = 1.3;
	drf_use_assess(&u, cap);
	assert_int_equal(u.not_holding, (1u << DRF_RES_CPU) | (1u << DRF_RES_MEMORY));
	/* Seconds only: no verdict on cpu; memory over memory.max counts at once. */
	u.window_min_s = 2;
	u.use_tick[DRF_RES_CPU] = 1.5;
	drf_use_assess(&u, cap);
	assert_int_equal(u.not_holding, 1u << DRF_RES_MEMORY);
	u.gauge[DRF_GAUGE_MEM_CURRENT] = 1e9;
	drf_use_assess(&u, cap);
	assert_int_equal(u.not_holding, 0);
}

static void test_jain_and_hist(void **state)
{
	const double eq[] = { 0.3, 0.3, 0.3 }, one[] = { 1, 0 }, zero[] = { 0, 0 };

	(void)state;
	assert_true(fabs(drf_jain_index(eq, 3) - 1) < 1e-12);
	assert_true(fabs(drf_jain_index(one, 2) - 0.5) < 1e-12);
	assert_true(isnan(drf_jain_index(zero, 2)));
	assert_true(isnan(drf_jain_index(NULL, 0)));
	assert_int_equal(drf_hist_bucket(0), 0);
	assert_int_equal(drf_hist_bucket(999), 0);
	assert_int_equal(drf_hist_bucket(1000), 1);
	assert_int_equal(drf_hist_bucket(1999), 1);
	assert_int_equal(drf_hist_bucket(2000), 2);
	assert_int_equal(drf_hist_bucket(~0ull), DRF_HIST_BUCKETS - 1);
	/* Bucket b holds waits under its upper bound. */
	for (unsigned b = 0; b + 1 < DRF_HIST_BUCKETS; b++) {
		uint64_t ns = (uint64_t)(drf_hist_upper_s(b) * 1e9);

		assert_int_equal(drf_hist_bucket(ns - 1), b);
		assert_int_equal(drf_hist_bucket(ns), b + 1);
	}
	assert_true(isinf(drf_hist_upper_s(DRF_HIST_BUCKETS - 1)));
}

/* The daemon's sampling over a fake tree and the probes' recorder. */
static char dir[64], root[128], conf[256];
static struct cgfs fs;
static struct fakeplan pl;
static struct drf_usage use;
static struct drf_probe_recorder *rec;

/* One sample at t, against the plan in force. */
static void sample(uint64_t t)
{
	struct drf_usage_in in = { .cfg = &pl.decl.cfg, .plan = &pl.plan, .now_us = t };

	drf_usage_sample(&use, &in);
}

/* The tenants of the config loaded last, their history carried over by name. */
static void rekey(void)
{
	struct drf_usage_tenants st;

	assert_int_equal(drf_usage_stage(&use, &pl.decl.cfg, &st), 0);
	drf_usage_commit(&use, &st);
}

static void put(const char *cg, const char *file, const char *val)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", cg, file);
	assert_int_equal(fakecg_put(fs.rootfd, p, val), 0);
}

static int setup_daemon(void **state)
{
	char err[512];
	FILE *f;

	(void)state;
	assert_int_equal(fakecg_setup(dir, sizeof(dir), root, sizeof(root)), 0);
	snprintf(conf, sizeof(conf), "%s/drfd.conf", dir);
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f, "[agent]\ncgroup-root = %s\nmode = limit\n[capacity]\ncpu = 4\nmemory = 8G\n"
		   "[tenant a]\ncpu = 1\nmemory = 1G\n[tenant b]\ncpu = 2\nmemory = 1G\n", root);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(cgfs_open(&fs, root, false, &fakecg_ops, NULL), 0);
	assert_int_equal(fakeplan_load(&pl, conf, NULL, err, sizeof(err)), 0);
	drf_usage_init(&use, &fs, NULL);
	assert_int_equal(cgfs_mkdir_p(&fs, "a"), 0);
	assert_int_equal(cgfs_mkdir_p(&fs, "b"), 0);
	rec = calloc(1, sizeof(*rec));
	assert_non_null(rec);
	rekey();
	return 0;
}

static int teardown_daemon(void **state)
{
	(void)state;
	drf_usage_free(&use);
	fakeplan_free(&pl);
	cgfs_close(&fs);
	free(rec);
	fakecg_teardown(dir);
	return 0;
}

static size_t rec_index(uint64_t cgid)
{
	for (size_t i = 0; i < rec->n; i++)
		if (rec->key[i] == cgid)
			return i;
	fail_msg("no probe entry for %llu", (unsigned long long)cgid);
	return 0;
}

static void test_sample_with_probes(void **state)
{
	uint64_t ida, idb;
	size_t ia;

	(void)state;
	drf_usage_start_probes(&use, &drf_probe_recording_ops, rec, "/sys/fs/bpf/drfd-probes/x", 1, 1);
	assert_true(use.probes);
	assert_int_equal(cgfs_id(&fs, "a", &ida), 0);
	assert_int_equal(cgfs_id(&fs, "b", &idb), 0);
	put("a", "cpu.stat", "usage_usec 1000000\nuser_usec 0\nsystem_usec 0\n"
			     "nr_throttled 0\nthrottled_usec 0\n");
	put("a", "memory.current", "104857600\n");
	sample(9 * SEC);
	/* Entries added at the first tick are read from the next. */
	sample(10 * SEC);
	/* Each tenant got its entries, the probes their root. */
	assert_int_equal(rec->n, 2);
	ia = rec_index(ida);
	(void)rec_index(idb);
	assert_int_equal(rec->cfg.root_level, 1);
	assert_true(rec->cfg.root_id != 0);
	/* One second on: 0.8 cores by the probe, 0.75 by cpu.stat (which counts); 5 throttled periods. */
	rec->cpu[ia].oncpu_ns += 800000000;
	rec->cpu[ia].runq_ns += 250000000;
	rec->cpu[ia].runq_hist[3] = 7;
	put("a", "cpu.stat", "usage_usec 1750000\nuser_usec 0\nsystem_usec 0\n"
			     "nr_throttled 5\nthrottled_usec 100\n");
	sample(11 * SEC);
	assert_true(fabs(use.t[0].use_tick[DRF_RES_CPU] - 0.75) < 1e-9);
	assert_true(fabs(use.t[0].rate_tick[DRF_CTR_ONCPU_NS] - 0.8e9) < 1);
	assert_true(fabs(use.t[0].use_tick[DRF_RES_MEMORY] - 104857600) < 1);
	assert_true(fabs(use.t[0].pressure[DRF_PRESSURE_RUNQ] - 0.25) < 1e-9);
	assert_true(fabs(use.t[0].pressure[DRF_PRESSURE_CPU_THROTTLED] - 0.5) < 1e-9);
	assert_int_equal(use.t[0].runq_hist[3], 7);
	/* limit mode: cpu.max 1 core for a, 2 for b; memory.max 1G. */
	assert_true(fabs(use.t[0].limit[DRF_RES_CPU] - 1) < 1e-9);
	assert_true(fabs(use.t[1].limit[DRF_RES_CPU] - 2) < 1e-9);
	assert_true(fabs(use.t[0].limit[DRF_RES_MEMORY] - 1073741824.0) < 1);
	assert_int_equal(use.t[0].not_holding, 0);
	/* Weighted dominant shares of allocation: a 0.25 (cpu), b 0.5 (cpu). */
	assert_true(fabs(use.jain_alloc - 0.9) < 1e-9);
	/* Over its cpu.max (1.5 cores of 1) for 20 s: flagged, over the minute. */
	for (int i = 12; i <= 31; i++) {
		char st[128];

		snprintf(st, sizeof(st), "usage_usec %llu\nnr_throttled 5\nthrottled_usec 100\n",
			 1750000ull + (unsigned long long)(i - 11) * 1500000ull);
		put("a", "cpu.stat", st);
		rec->cpu[ia].oncpu_ns += 1500000000;
		sample((uint64_t)i * SEC);
		if (i == 12)
			assert_int_equal(use.t[0].not_holding, 0); /* one tick is no proof */
	}
	assert_true(use.t[0].window_min_s >= 20);
	assert_int_equal(use.t[0].not_holding, 1u << DRF_RES_CPU);
	assert_int_equal(use.t[1].not_holding, 0);
}

static void test_sample_probe_failures(void **state)
{
	(void)state;
	/* Attaching fails: the daemon measures from cgroup files, and says why. */
	rec->fault.err = EPERM;
	rec->fault.ops = DRF_PROBE_OP_ATTACH;
	drf_usage_start_probes(&use, &drf_probe_recording_ops, rec, "/sys/fs/bpf/drfd-probes/x", 1, 1);
	assert_false(use.probes);
	assert_true(strstr(use.probes_why, strerror(EPERM)) != NULL);
	put("a", "cpu.stat", "usage_usec 0\nnr_throttled 0\nthrottled_usec 0\n");
	sample(10 * SEC);
	put("a", "cpu.stat", "usage_usec 500000\nnr_throttled 0\nthrottled_usec 0\n");
	sample(11 * SEC);
	assert_true(fabs(use.t[0].use_tick[DRF_RES_CPU] - 0.5) < 1e-9);
	assert_int_equal(rec->n, 0);
	assert_int_equal(rec->changes, 0);

	/* Attached, but adding entries and reading fail: retried each tick. */
	rec->fault.err = 0;
	drf_usage_start_probes(&use, &drf_probe_recording_ops, rec, "/sys/fs/bpf/drfd-probes/x", 1, 1);
	assert_true(use.probes);
	rec->fault.err = ENOMEM;
	rec->fault.ops = DRF_PROBE_OP_ADD | DRF_PROBE_OP_READ;
	put("a", "cpu.stat", "usage_usec 1500000\nnr_throttled 0\nthrottled_usec 0\n");
	sample(12 * SEC);
	assert_int_equal(rec->n, 0);
	/* cpu.stat still measures. */
	assert_true(fabs(use.t[0].use_tick[DRF_RES_CPU] - 1.0) < 1e-9);
	rec->fault.err = 0;
	sample(13 * SEC);
	assert_int_equal(rec->n, 2);
}

static void test_reload_keeps_history_and_sweeps(void **state)
{
	char err[512];
	FILE *f;
	uint64_t ida;

	(void)state;
	uint32_t gen;

	drf_usage_start_probes(&use, &drf_probe_recording_ops, rec, "/sys/fs/bpf/drfd-probes/x", 1, 1);
	put("a", "cpu.stat", "usage_usec 0\n");
	sample(10 * SEC);
	put("a", "cpu.stat", "usage_usec 1000000\n");
	sample(11 * SEC);
	assert_int_equal(rec->n, 2);
	gen = rec->cfg.gen;
	/* b leaves, c comes; a keeps its history (and its probe entry). */
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f, "[agent]\ncgroup-root = %s\n[capacity]\ncpu = 4\n[tenant c]\ncpu = 1\n"
		   "[tenant a]\ncpu = 1\n", root);
	assert_int_equal(fclose(f), 0);
	fakeplan_free(&pl);
	assert_int_equal(fakeplan_load(&pl, conf, NULL, err, sizeof(err)), 0);
	assert_int_equal(cgfs_mkdir_p(&fs, "c"), 0);
	rekey();
	put("a", "cpu.stat", "usage_usec 3000000\n");
	sample(12 * SEC);
	assert_string_equal(use.name[1], "a");
	assert_true(fabs(use.t[1].use_tick[DRF_RES_CPU] - 2.0) < 1e-9);
	/* b's entry went; a's and c's are there; the tasks' cached tenants expired. */
	assert_int_equal(rec->n, 2);
	assert_int_equal(cgfs_id(&fs, "a", &ida), 0);
	(void)rec_index(ida);
	assert_int_equal(cgfs_id(&fs, "c", &ida), 0);
	(void)rec_index(ida);
	assert_int_not_equal(rec->cfg.gen, gen);
	gen = rec->cfg.gen;
	sample(13 * SEC);
	assert_int_equal(rec->cfg.gen, gen); /* nothing changed: the same generation */
}

static void test_recreated_cgroup(void **state)
{
	uint64_t old, now;
	uint32_t gen;

	(void)state;
	drf_usage_start_probes(&use, &drf_probe_recording_ops, rec, "/sys/fs/bpf/drfd-probes/x", 1, 1);
	put("a", "cpu.stat", "usage_usec 5000000\n");
	sample(10 * SEC);
	sample(11 * SEC);
	assert_int_equal(cgfs_id(&fs, "a", &old), 0);
	gen = rec->cfg.gen;
	/* Removed and made again between two ticks, busier than before: another cgroup. */
	/* (made beside it and renamed: a file system may hand a freed inode number out again) */
	assert_int_equal(cgfs_mkdir_p(&fs, "a2"), 0);
	assert_int_equal(cgfs_remove(&fs, "a"), 0);
	assert_int_equal(renameat(fs.rootfd, "a2", fs.rootfd, "a"), 0);
	assert_int_equal(cgfs_id(&fs, "a", &now), 0);
	assert_true(now != old);
	put("a", "cpu.stat", "usage_usec 9000000\n");
	sample(12 * SEC);
	/* No rate across two cgroups; the new one's entry in, the old one's out. */
	assert_true(isnan(use.t[0].use_tick[DRF_RES_CPU]));
	assert_int_equal(use.cgid[0], now);
	(void)rec_index(now);
	for (size_t i = 0; i < rec->n; i++)
		assert_true(rec->key[i] != old);
	assert_int_not_equal(rec->cfg.gen, gen);
	put("a", "cpu.stat", "usage_usec 9500000\n");
	sample(13 * SEC);
	assert_true(fabs(use.t[0].use_tick[DRF_RES_CPU] - 0.5) < 1e-9);
}

/* Open fds of this process. */
static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the listing's own */
}

static void sample_psi(uint64_t t, bool pressure)
{
	struct drf_usage_in in = { .cfg = &pl.decl.cfg, .plan = &pl.plan, .now_us = t,
				   .pressure = pressure };

	drf_usage_sample(&use, &in);
}

/*
 * The files a sample reads stay open, and only those: cpu.stat,
 * memory.current, memory.stat and memory.events a tenant (and one inotify fd),
 * the pressure files while they are asked for; a tenant's go with it at a
 * reload, all of them with the measurements.
 */
static void test_files_held(void **state)
{
	const char *psi = "some avg10=0.00 avg60=0.00 avg300=0.00 total=100000\n"
			  "full avg10=0.00 avg60=0.00 avg300=0.00 total=50000\n";
	char err[512];
	int base;
	FILE *f;

	(void)state;
	drf_usage_free(&use);
	drf_usage_init(&use, &fs, NULL);
	base = open_fds();
	rekey();
	sample_psi(10 * SEC, false);
	sample_psi(11 * SEC, false);
	assert_int_equal(open_fds(), base + 2 * 4 + 1);
	assert_true(isnan(use.t[0].pressure[DRF_PRESSURE_CPU_SOME]));
	/* Asked for: read, held; the rate from the second sample on. */
	put("a", "cpu.pressure", psi);
	sample_psi(12 * SEC, true);
	assert_int_equal(open_fds(), base + 2 * 7 + 1);
	put("a", "cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=600000\n"
				 "full avg10=0.00 avg60=0.00 avg300=0.00 total=50000\n");
	sample_psi(13 * SEC, true);
	assert_true(fabs(use.t[0].pressure[DRF_PRESSURE_CPU_SOME] - 0.5) < 1e-9);
	/* No longer asked for: not read (and its rate gone). */
	sample_psi(14 * SEC, false);
	assert_true(isnan(use.t[0].pressure[DRF_PRESSURE_CPU_SOME]));
	/* b leaves: its files close. */
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f, "[agent]\ncgroup-root = %s\nmode = limit\n[capacity]\ncpu = 4\nmemory = 8G\n"
		   "[tenant a]\ncpu = 1\nmemory = 1G\n", root);
	assert_int_equal(fclose(f), 0);
	fakeplan_free(&pl);
	assert_int_equal(fakeplan_load(&pl, conf, NULL, err, sizeof(err)), 0);
	rekey();
	assert_int_equal(open_fds(), base + 7 + 1);
	sample_psi(15 * SEC, false);
	assert_int_equal(open_fds(), base + 7 + 1);
	drf_usage_free(&use);
	assert_int_equal(open_fds(), base);
	/* A budget of 3 files: the others read by path, each time. */
	drf_usage_init(&use, &fs, NULL);
	use.max_held = 3;
	rekey();
	sample_psi(16 * SEC, true);
	sample_psi(17 * SEC, true);
	assert_int_equal(use.held, 3);
	assert_int_equal(open_fds(), base + 3 + 1);
	/* Measured all the same: b's files are all read by path. */
	assert_false(isnan(use.t[1].gauge[DRF_GAUGE_MEM_CURRENT]));
	assert_false(isnan(use.t[1].now.c[DRF_CTR_CPU_USEC]));
	drf_usage_free(&use);
	assert_int_equal(open_fds(), base);
	drf_usage_init(&use, &fs, NULL);
}

/*
 * memory.events is read when inotify says it changed, not each tick: a fault
 * on its reads is reached only then; without watches (their fault) it is
 * read each tick.
 */
static void test_memory_events_on_change(void **state)
{
	struct cgfs_recorder r = { .inner = &fakecg_ops, .pass_changes = true };
	struct cgfs rfs;

	(void)state;
	assert_int_equal(cgfs_open(&rfs, root, false, &cgfs_recording_ops, &r), 0);
	drf_usage_free(&use);
	drf_usage_init(&use, &rfs, NULL);
	rekey();
	put("a", "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 1\n");
	sample(10 * SEC);
	assert_true(use.t[0].now.c[DRF_CTR_MEM_EVENTS_OOM_KILL] == 1);
	/* Steady: memory.events not read (the fault is never reached), its counts kept. */
	r.fault = (struct drf_fault){ .err = EIO, .ops = CGFS_OP_READ, .path = "a/memory.events" };
	sample(11 * SEC);
	sample(12 * SEC);
	assert_int_equal(r.fault.hits, 0);
	assert_true(use.t[0].now.c[DRF_CTR_MEM_EVENTS_OOM_KILL] == 1);
	/* Changed: read at the next sample (here failing: the count is not known). */
	put("a", "memory.events", "low 0\nhigh 0\nmax 2\noom 1\noom_kill 2\n");
	sample(13 * SEC);
	assert_int_equal(r.fault.hits, 1);
	assert_true(isnan(use.t[0].now.c[DRF_CTR_MEM_EVENTS_OOM_KILL]));
	r.fault = (struct drf_fault){ 0 };
	sample(14 * SEC);
	assert_true(use.t[0].now.c[DRF_CTR_MEM_EVENTS_OOM_KILL] == 2);
	assert_true(use.t[0].now.c[DRF_CTR_MEM_EVENTS_MAX] == 2);
	drf_usage_free(&use);
	/* No inotify: read every tick. */
	r.fault = (struct drf_fault){ .err = ENOSYS, .ops = CGFS_OP_WATCH };
	drf_usage_init(&use, &rfs, NULL);
	rekey();
	sample(20 * SEC);
	r.fault = (struct drf_fault){ .err = EIO, .ops = CGFS_OP_READ, .path = "a/memory.events" };
	sample(21 * SEC);
	sample(22 * SEC);
	assert_int_equal(r.fault.hits, 2);
	drf_usage_free(&use);
	cgfs_close(&rfs);
	drf_usage_init(&use, &fs, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rates_tick_and_minute),
		cmocka_unit_test(test_minute_window_slides),
		cmocka_unit_test(test_probes_preferred),
		cmocka_unit_test(test_recreated_restarts_history),
		cmocka_unit_test(test_assess_not_holding),
		cmocka_unit_test(test_jain_and_hist),
		cmocka_unit_test_setup_teardown(test_sample_with_probes, setup_daemon, teardown_daemon),
		cmocka_unit_test_setup_teardown(test_sample_probe_failures, setup_daemon,
						teardown_daemon),
		cmocka_unit_test_setup_teardown(test_reload_keeps_history_and_sweeps, setup_daemon,
						teardown_daemon),
		cmocka_unit_test_setup_teardown(test_recreated_cgroup, setup_daemon, teardown_daemon),
		cmocka_unit_test_setup_teardown(test_files_held, setup_daemon, teardown_daemon),
		cmocka_unit_test_setup_teardown(test_memory_events_on_change, setup_daemon,
						teardown_daemon),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
