// SPDX-License-Identifier: MIT
/*
 * The usage history: record format and parsing, torn and bad lines, nearest-rank
 * percentiles, suggestions and their rounding (agent/core/history.c); the file
 * drfd appends to, its rotation and restarts, and the daemon's hook
 * (agent/daemon/histfile.c), in a temporary directory.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "histfile.h"
#include "statedir.h"
#include "history.h"
#include "testlib.h"

#define M 1048576.0
#define G 1073741824.0

static const char *const HEAD = "drfd-history\t1\tstep\t60\n";

static double nan_use[DRF_NRES] = { NAN, NAN, NAN, NAN, NAN, NAN };

static void test_format_parse_round_trip(void **state)
{
	struct drf_hist_acc a;
	struct drf_hist h;
	double use1[DRF_NRES] = { 0.5, 2 * G, 1000, NAN, 8e6, NAN };
	double use2[DRF_NRES] = { 1.5, 3 * G, 3000, NAN, 4e6, NAN };
	char buf[4096], line[DRF_HIST_LINE_MAX];
	const struct drf_hist_series *s;
	const char *why = NULL;
	int n;

	(void)state;
	drf_hist_acc_reset(&a);
	assert_false(drf_hist_acc_any(&a));
	drf_hist_acc_add(&a, use1, 2 * G, 1 * G);
	drf_hist_acc_add(&a, use2, 3.5 * G, 1.5 * G);
	assert_true(drf_hist_acc_any(&a));
	n = drf_hist_format_rec(line, sizeof(line), 1763856060, "web", &a);
	assert_true(n > 0);
	/* 2.5G, 3.5G, 1.5G to 4 digits */
	assert_string_equal(line, "1763856060\tweb\t1\t2.684e+09\t2000\t-\t6e+06\t-\t3.758e+09\t"
				  "1.611e+09\n");
	assert_int_equal(drf_hist_format_rec(line, sizeof(line), 1, "../x", &a), -EINVAL);
	assert_int_equal(drf_hist_format_rec(line, 20, 1, "web", &a), -ENOSPC);

	n = drf_hist_format_header(buf, sizeof(buf), 60);
	assert_true(n > 0);
	assert_memory_equal(buf, HEAD, strlen(HEAD));
	drf_hist_format_rec(buf + n, sizeof(buf) - (size_t)n, 1763856060, "web", &a);
	drf_hist_init(&h);
	assert_int_equal(drf_hist_feed(&h, buf, strlen(buf), &why), 0);
	assert_int_equal(h.records, 1);
	assert_int_equal(h.skipped, 0);
	assert_int_equal(h.step_s, 60);
	s = drf_hist_find(&h, "web");
	assert_non_null(s);
	assert_int_equal(s->n, 1);
	assert_int_equal(s->t[0], 1763856060);
	assert_close(s->v[0][DRF_RES_CPU], 1, 1e-12, "cpu mean");
	assert_close(s->v[0][DRF_RES_MEMORY], 2.5 * G, 5e-4, "memory mean, 4 digits");
	assert_close(s->v[0][DRF_RES_IO_READ], 2000, 1e-12, "io-read mean");
	assert_true(isnan(s->v[0][DRF_RES_IO_WRITE]));
	assert_close(s->v[0][DRF_HIST_MEM_PEAK], 3.5 * G, 5e-4, "memory peak");
	assert_close(s->v[0][DRF_HIST_WS_PEAK], 1.5 * G, 5e-4, "working-set peak");
	assert_null(drf_hist_find(&h, "db"));
	drf_hist_free(&h);
}

static void test_torn_and_bad_lines(void **state)
{
	const char *text = "drfd-history\t1\tstep\t60\n"
			   "# comment\n"
			   "60\ta\t1\t-\t-\t-\t-\t-\t-\t-\n"
			   "120\ta\t-1\t-\t-\t-\t-\t-\t-\t-\n"      /* negative: line 4 */
			   "180\ta\t2\t-\t-\t-\t-\t-\t-\n"          /* 9 columns */
			   "x\ta\t2\t-\t-\t-\t-\t-\t-\t-\n"         /* no time */
			   "240\t.a\t2\t-\t-\t-\t-\t-\t-\t-\n"      /* not a name */
			   "300\ta\t3\t-\t-\t-\t-\t-\t-\t-\n"
			   "\n"
			   "360\ta\t4\t-\t-";                     /* torn */
	const char *why = NULL;
	struct drf_hist h;

	(void)state;
	drf_hist_init(&h);
	assert_int_equal(drf_hist_feed(&h, text, strlen(text), &why), 0);
	assert_int_equal(h.records, 2);
	assert_int_equal(h.skipped, 5);
	assert_int_equal(h.torn, 1);
	assert_int_equal(h.first_bad_line, 4);
	assert_int_equal(h.t_min, 60);
	assert_int_equal(h.t_max, 300);
	assert_close(drf_hist_find(&h, "a")->v[1][DRF_RES_CPU], 3, 0, "second record");
	drf_hist_free(&h);

	/* not a history, or a newer one: refused; empty: nothing */
	drf_hist_init(&h);
	assert_int_equal(drf_hist_feed(&h, "hello\n", 6, &why), -EINVAL);
	assert_int_equal(drf_hist_feed(&h, "drfd-history\t2\tstep\t60\n", 23, &why), -EPROTO);
	assert_int_equal(drf_hist_feed(&h, "drfd-history\t1\tstep\t0\n", 22, &why), -EINVAL);
	assert_int_equal(drf_hist_feed(&h, "drfd-history\t1\tstep\t60", 22, &why), -EINVAL);
	assert_int_equal(drf_hist_feed(&h, "", 0, &why), 0);
	assert_int_equal(h.records, 0);
	drf_hist_free(&h);
}

static void test_percentiles_nearest_rank(void **state)
{
	double x[20];

	(void)state;
	for (int i = 0; i < 20; i++)
		x[i] = i + 1; /* 1..20 */
	/* rank ceil(p/100 * n) */
	assert_close(drf_percentile_nearest_rank(x, 20, 50), 10, 0, "p50 of 1..20: rank 10");
	assert_close(drf_percentile_nearest_rank(x, 20, 95), 19, 0, "p95 of 1..20: rank 19");
	assert_close(drf_percentile_nearest_rank(x, 20, 96), 20, 0, "p96 of 1..20: rank 19.2 -> 20");
	assert_close(drf_percentile_nearest_rank(x, 20, 100), 20, 0, "p100: the largest");
	assert_close(drf_percentile_nearest_rank(x, 20, 1), 1, 0, "p1: rank 0.2 -> 1");
	assert_close(drf_percentile_nearest_rank(x, 10, 95), 10, 0, "p95 of 1..10: rank 9.5 -> 10");
	assert_close(drf_percentile_nearest_rank(x, 10, 90), 9, 0, "p90 of 1..10: rank 9");
	assert_close(drf_percentile_nearest_rank(x, 10, 50), 5, 0, "p50 of 1..10: rank 5");
	assert_close(drf_percentile_nearest_rank(x, 1, 50), 1, 0, "one value");
	assert_true(isnan(drf_percentile_nearest_rank(x, 0, 50)));
	assert_true(isnan(drf_percentile_nearest_rank(x, 20, 0)));
}

static void test_reco_compute(void **state)
{
	/* unsorted on purpose: cpu 5 4 3 2 1 10 9 8 7 6 at t 60..600; memory peaks */
	const char *text = "drfd-history\t1\tstep\t60\n"
			   "60\tt\t5\t100\t-\t-\t-\t-\t150\t90\n"
			   "120\tt\t4\t200\t-\t-\t-\t-\t250\t80\n"
			   "180\tt\t3\t300\t-\t-\t-\t-\t350\t700\n"
			   "240\tt\t2\t400\t-\t-\t-\t-\t450\t70\n"
			   "300\tt\t1\t500\t-\t-\t-\t-\t550\t60\n"
			   "360\tt\t10\t600\t-\t-\t-\t-\t650\t50\n"
			   "420\tt\t9\t700\t-\t-\t-\t-\t750\t40\n"
			   "480\tt\t8\t800\t-\t-\t-\t-\t850\t30\n"
			   "540\tt\t7\t900\t-\t-\t-\t-\t950\t20\n"
			   "600\tt\t6\t1000\t-\t-\t-\t-\t1050\t10\n";
	const char *why = NULL;
	struct drf_reco x;
	struct drf_hist h;
	const struct drf_hist_series *s;

	(void)state;
	drf_hist_init(&h);
	assert_int_equal(drf_hist_feed(&h, text, strlen(text), &why), 0);
	s = drf_hist_find(&h, "t");
	assert_int_equal(drf_reco_compute(s, INT64_MIN, DRF_RES_CPU, 20, 16, &x), 0);
	assert_int_equal(x.n, 10);
	assert_close(x.p50, 5, 0, "p50 of 1..10");
	assert_close(x.p95, 10, 0, "p95 of 1..10: rank 10");
	assert_close(x.peak, 10, 0, "peak");
	assert_close(x.over, 0.5, 1e-12, "(20 - 10) / 20");
	assert_close(x.suggested, 12, 1e-12, "10 * 1.2");
	/* capacity 11: at most the capacity */
	drf_reco_compute(s, INT64_MIN, DRF_RES_CPU, 20, 11, &x);
	assert_close(x.suggested, 11, 0, "capped at the capacity");
	/* from 360: cpu 10 9 8 7 6 */
	drf_reco_compute(s, 360, DRF_RES_CPU, 4, 16, &x);
	assert_int_equal(x.n, 5);
	assert_close(x.p50, 8, 0, "p50 of 6..10: rank 3");
	assert_close(x.over, -1.5, 1e-12, "under-provisioned: (4 - 10) / 4");
	/* memory: p95 1000, peak from memory-peak 1050, working set 700 below 1200 */
	drf_reco_compute(s, INT64_MIN, DRF_RES_MEMORY, INFINITY, 0, &x);
	assert_close(x.p95, 1000, 0, "memory p95");
	assert_close(x.peak, 1050, 0, "memory peak: the largest memory-peak");
	assert_close(x.ws_peak, 700, 0, "working-set peak");
	assert_true(isnan(x.over));
	assert_close(x.suggested, 1228.8, 1e-12, "1000 * 1.2 = 1200 bytes, up to 2 digits of K: 1.2K");
	/* not measured at all */
	drf_reco_compute(s, INT64_MIN, DRF_RES_NET, 1e9, 1e9, &x);
	assert_int_equal(x.n, 0);
	assert_true(isnan(x.p50) && isnan(x.suggested));
	drf_hist_free(&h);
}

static void test_rounding(void **state)
{
	char b[32];

	(void)state;
	assert_close(drf_reco_round(DRF_RES_CPU, 0.37), 0.4, 1e-12, "cpu 0.37 -> 0.4");
	assert_close(drf_reco_round(DRF_RES_CPU, 0.3), 0.3, 1e-12, "cpu 0.3 stays");
	assert_close(drf_reco_round(DRF_RES_CPU, 4.2), 4.2, 1e-12, "cpu 4.2 stays");
	assert_close(drf_reco_round(DRF_RES_CPU, 12.01), 12.1, 1e-12, "cpu 12.01 -> 12.1");
	assert_close(drf_reco_round(DRF_RES_MEMORY, 1.37 * G), 1.4 * G, 1e-12, "1.37G -> 1.4G");
	assert_close(drf_reco_round(DRF_RES_MEMORY, 1.4 * G), 1.4 * G, 1e-12, "1.4G stays");
	assert_close(drf_reco_round(DRF_RES_MEMORY, 123 * M), 130 * M, 1e-12, "123M -> 130M");
	assert_close(drf_reco_round(DRF_RES_MEMORY, 12.3 * M), 13 * M, 1e-12, "12.3M -> 13M");
	assert_close(drf_reco_round(DRF_RES_MEMORY, 1000), 1000, 1e-12, "1000 bytes stay");
	assert_close(drf_reco_round(DRF_RES_NET, 87.3e6), 88e6, 1e-12, "87.3mbit -> 88mbit");
	assert_close(drf_reco_round(DRF_RES_IO_READ, 2.01 * G), 2.1 * G, 1e-12, "2.01G -> 2.1G");
	assert_close(drf_reco_round(DRF_RES_CPU, 0), 0, 0, "0 stays 0");
	/* memory: at least the peak working set */
	assert_close(drf_reco_suggest(DRF_RES_MEMORY, 1 * G, 2.83 * G, 16 * G), 2.9 * G, 1e-12,
		     "the working set wins");
	assert_close(drf_reco_suggest(DRF_RES_MEMORY, 3 * G, 2 * G, 16 * G), 3.6 * G, 1e-12,
		     "3G * 1.2");
	assert_close(drf_reco_suggest(DRF_RES_CPU, 7.5, NAN, 8), 8, 0, "9 capped at 8");
	assert_string_equal(drf_reco_format(DRF_RES_CPU, 0.4, b, sizeof(b)), "0.4");
	assert_string_equal(drf_reco_format(DRF_RES_CPU, 3, b, sizeof(b)), "3");
	assert_string_equal(drf_reco_format(DRF_RES_MEMORY, 1.4 * G, b, sizeof(b)), "1.4G");
	assert_string_equal(drf_reco_format(DRF_RES_MEMORY, 130 * M, b, sizeof(b)), "130M");
	assert_string_equal(drf_reco_format(DRF_RES_NET, 88e6, b, sizeof(b)), "88mbit");
	assert_string_equal(drf_reco_format(DRF_RES_NET, 2e12, b, sizeof(b)), "2000gbit");
	assert_string_equal(drf_reco_format(DRF_RES_IO_WRITE, 0, b, sizeof(b)), "0");
}

static void test_window(void **state)
{
	const char *why;
	int64_t w;

	(void)state;
	assert_int_equal(drf_parse_window_s("7d", &w, &why), 0);
	assert_int_equal(w, 604800);
	assert_int_equal(drf_parse_window_s("36h", &w, &why), 0);
	assert_int_equal(w, 129600);
	assert_int_equal(drf_parse_window_s("10m", &w, &why), 0);
	assert_int_equal(w, 600);
	assert_int_equal(drf_parse_window_s("90s", &w, &why), 0);
	assert_int_equal(w, 90);
	assert_int_equal(drf_parse_window_s("0d", &w, &why), -ERANGE);
	assert_int_equal(drf_parse_window_s("10", &w, &why), -EINVAL);
	assert_int_equal(drf_parse_window_s("5x", &w, &why), -EINVAL);
	assert_int_equal(drf_parse_window_s("1.5d", &w, &why), -EINVAL);
	assert_int_equal(drf_parse_window_s("-1d", &w, &why), -EINVAL);
	assert_int_equal(drf_parse_window_s("d", &w, &why), -EINVAL);
}

/* The contents of path.1 then path, fed to h. */
static void read_back(const char *path, struct drf_hist *h)
{
	char p[4200], *buf;
	const char *why = NULL;

	drf_hist_init(h);
	for (int i = 0; i < 2; i++) {
		FILE *f;
		long n;

		snprintf(p, sizeof(p), i == 0 ? "%s.1" : "%s", path);
		f = fopen(p, "r");
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		n = ftell(f);
		rewind(f);
		buf = malloc((size_t)n + 1);
		assert_non_null(buf);
		assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
		fclose(f);
		assert_int_equal(drf_hist_feed(h, buf, (size_t)n, &why), 0);
		free(buf);
	}
}

static off_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : 0;
}

static void test_file_rotation_bounded(void **state)
{
	char dir[] = "/tmp/drf-hist-XXXXXX", path[256], old[264], line[DRF_HIST_LINE_MAX];
	struct drf_history_file f;
	struct drf_hist_acc a;
	struct drf_hist h;
	double use[DRF_NRES] = { 1, NAN, NAN, NAN, NAN, NAN };
	const uint64_t cap = 4096;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sub/r.history", dir);
	snprintf(old, sizeof(old), "%s.1", path);
	assert_int_equal(drf_history_open(&f, path, 60, cap), 0);
	for (int k = 1; k <= 500; k++) {
		int n;

		drf_hist_acc_reset(&a);
		use[0] = k;
		drf_hist_acc_add(&a, use, NAN, NAN);
		n = drf_hist_format_rec(line, sizeof(line), 60 * k, "tenant-with-a-long-name", &a);
		assert_int_equal(drf_history_append(&f, line, (size_t)n), 0);
		/* bounded at every step */
		assert_true((uint64_t)(size_of(path) + size_of(old)) <= cap);
	}
	drf_history_close(&f);
	read_back(path, &h);
	/* the newest are kept, the oldest dropped, in order */
	assert_int_equal(h.skipped, 0);
	assert_int_equal(h.t_max, 60 * 500);
	assert_true(h.records > 40 && h.records < 500);
	{
		const struct drf_hist_series *s = drf_hist_find(&h, "tenant-with-a-long-name");

		for (size_t i = 0; i < s->n; i++)
			assert_int_equal(s->t[i], 60 * (int64_t)(500 - s->n + 1 + i));
	}
	drf_hist_free(&h);
	unlink(path);
	unlink(old);
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	rmdir(dir);
}

/*
 * The history is 0644 whatever drfd's umask (the unit's is 0077): `drfctl
 * recommend` reads it as any user. One an older drfd made 0600 is opened up.
 */
static void test_file_mode_under_umask(void **state)
{
	char dir[] = "/tmp/drf-hist-XXXXXX", path[256], old[264];
	struct drf_history_file f;
	mode_t um;
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/r.history", dir);
	snprintf(old, sizeof(old), "%s.1", path);
	um = umask(077);
	assert_int_equal(drf_history_open(&f, path, 60, 4096), 0);
	drf_history_close(&f);
	umask(um);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(chmod(path, 0600), 0);
	um = umask(077);
	assert_int_equal(drf_history_open(&f, path, 60, 4096), 0);
	drf_history_close(&f);
	/* A file of another step is rotated: the new one is 0644 too. */
	assert_int_equal(drf_history_open(&f, path, 30, 4096), 0);
	drf_history_close(&f);
	umask(um);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(stat(old, &st), 0);
	unlink(path);
	unlink(old);
	rmdir(dir);
}

static void test_file_restart_and_torn_tail(void **state)
{
	char dir[] = "/tmp/drf-hist-XXXXXX", path[256], old[264], line[DRF_HIST_LINE_MAX];
	struct drf_history_file f;
	struct drf_hist_acc a;
	struct drf_hist h;
	double use[DRF_NRES] = { 0.5, NAN, NAN, NAN, NAN, NAN };
	FILE *fp;
	int n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/r.history", dir);
	snprintf(old, sizeof(old), "%s.1", path);
	drf_hist_acc_reset(&a);
	drf_hist_acc_add(&a, use, NAN, NAN);
	assert_int_equal(drf_history_open(&f, path, 60, DRF_HIST_CAP_BYTES), 0);
	n = drf_hist_format_rec(line, sizeof(line), 60, "a", &a);
	assert_int_equal(drf_history_append(&f, line, (size_t)n), 0);
	drf_history_close(&f);
	/* drfd died in mid-write */
	fp = fopen(path, "a");
	fputs("120\ta\t0.", fp);
	fclose(fp);
	/* the next drfd continues the same file: the torn line is ended, the rest kept */
	assert_int_equal(drf_history_open(&f, path, 60, DRF_HIST_CAP_BYTES), 0);
	n = drf_hist_format_rec(line, sizeof(line), 180, "a", &a);
	assert_int_equal(drf_history_append(&f, line, (size_t)n), 0);
	drf_history_close(&f);
	read_back(path, &h);
	assert_int_equal(h.records, 2);
	assert_int_equal(h.skipped, 1);
	assert_int_equal(h.torn, 0);
	assert_int_equal(h.t_min, 60);
	assert_int_equal(h.t_max, 180);
	assert_int_equal(size_of(old), 0);
	drf_hist_free(&h);

	/* a file that is not a history is moved aside, not appended to */
	fp = fopen(path, "w");
	fputs("hello\n", fp);
	fclose(fp);
	assert_int_equal(drf_history_open(&f, path, 60, DRF_HIST_CAP_BYTES), 0);
	drf_history_close(&f);
	assert_int_equal(size_of(old), 6);
	assert_int_equal(size_of(path), (off_t)strlen(HEAD) + (off_t)strlen(
		"# time\ttenant\tcpu\tmemory\tio-read-bps\tio-write-bps\tnet-rate\tnet-ingress-rate"
		"\tmemory-peak\tworking-set-peak\n"));
	unlink(path);
	unlink(old);
	rmdir(dir);
}

/* The daemon's hook: ticks of a minute and more make one record per tenant per step. */
static void test_daemon_hook(void **state)
{
	char dir[] = "/tmp/drf-hist-XXXXXX", path[4096];
	struct drf_tenant_use t[2];
	char *names[2] = { "web", "db" };
	struct drf_usage u = { 0 };
	struct drf_history hd;
	struct drf_hist h;
	const struct drf_hist_series *s;

	(void)state;
	assert_non_null(mkdtemp(dir));
	memset(t, 0, sizeof(t));
	assert_int_equal(drf_statedir_path(dir, "/sys/fs/cgroup/drf.slice", ".history", path,
					   sizeof(path)), 0);
	assert_non_null(strstr(path, "/sys-fs-cgroup-drf.slice.history"));
	drf_history_init(&hd, path, NULL);
	u.n = 2;
	u.t = t;
	u.name = names;
	/* 1763856000 is a multiple of 60: ticks at +0 .. +150 s make steps 0, 1 and 2 */
	for (int s_ = 0; s_ <= 150; s_++) {
		for (int i = 0; i < 2; i++) {
			memcpy(t[i].use_tick, nan_use, sizeof(nan_use));
			t[i].use_tick[DRF_RES_CPU] = i == 0 ? (s_ < 60 ? 1 : 3) : 0.25;
			t[i].gauge[DRF_GAUGE_MEM_CURRENT] = 1000 + s_;
			t[i].use_tick[DRF_RES_MEMORY] = 1000 + s_; /* as use.c has it */
			t[i].gauge[DRF_GAUGE_MEM_WORKING_SET] = 500;
		}
		drf_history_tick(&hd, &u, (uint64_t)(1763856000 + s_) * 1000000);
	}
	drf_history_free(&hd);
	read_back(path, &h);
	assert_int_equal(h.records, 4); /* two full steps of two tenants; the third is not over */
	s = drf_hist_find(&h, "web");
	assert_int_equal(s->n, 2);
	assert_int_equal(s->t[0], 1763856060);
	assert_int_equal(s->t[1], 1763856120);
	assert_close(s->v[0][DRF_RES_CPU], 1, 0, "first minute: 1 core");
	assert_close(s->v[1][DRF_RES_CPU], 3, 0, "second minute: 3 cores");
	assert_close(s->v[1][DRF_HIST_MEM_PEAK], 1119, 0, "memory.current peak of 60..119");
	assert_close(s->v[1][DRF_RES_MEMORY], 1090, 0, "memory.current mean of 60..119, 1089.5 to 4 digits");
	assert_true(isnan(s->v[1][DRF_RES_NET]));
	assert_close(drf_hist_find(&h, "db")->v[0][DRF_RES_CPU], 0.25, 0, "db");
	drf_hist_free(&h);
	unlink(path);

	/* kept nowhere (a dry run, no state dir): nothing written */
	drf_history_init(&hd, NULL, NULL);
	drf_history_tick(&hd, &u, (uint64_t)1763860000 * 1000000);
	drf_history_tick(&hd, &u, (uint64_t)1763860120 * 1000000);
	drf_history_free(&hd);
	assert_int_equal(rmdir(dir), 0);
}

/*
 * The daemon's hook over many tenants (its accumulators grown past their first
 * allocation), listed in another order at each tick: each tenant's own record.
 */
#define HOOK_MANY 40
static void test_daemon_hook_many_tenants(void **state)
{
	char dir[] = "/tmp/drf-hist-XXXXXX", path[4096], names[HOOK_MANY][8];
	struct drf_tenant_use t[HOOK_MANY];
	char *name[HOOK_MANY];
	struct drf_usage u = { .n = HOOK_MANY, .t = t, .name = name };
	struct drf_history hd;
	struct drf_hist h;

	(void)state;
	assert_non_null(mkdtemp(dir));
	memset(t, 0, sizeof(t));
	assert_int_equal(drf_statedir_path(dir, "/sys/fs/cgroup/drf.slice", ".history", path,
					   sizeof(path)), 0);
	drf_history_init(&hd, path, NULL);
	for (int s_ = 0; s_ <= 60; s_++) {
		for (int i = 0; i < HOOK_MANY; i++) {
			/* Tenant k at place i: the order turns by one each tick. */
			int k = (i + s_) % HOOK_MANY;

			snprintf(names[i], sizeof(names[i]), "t%d", k);
			name[i] = names[i];
			memcpy(t[i].use_tick, nan_use, sizeof(nan_use));
			t[i].use_tick[DRF_RES_CPU] = k;
			t[i].use_tick[DRF_RES_MEMORY] = 1000;
			t[i].gauge[DRF_GAUGE_MEM_CURRENT] = 1000;
		}
		drf_history_tick(&hd, &u, (uint64_t)(1763856000 + s_) * 1000000);
	}
	drf_history_free(&hd);
	read_back(path, &h);
	assert_int_equal(h.records, HOOK_MANY);
	for (int k = 0; k < HOOK_MANY; k++) {
		char want[8];
		const struct drf_hist_series *s;

		snprintf(want, sizeof(want), "t%d", k);
		s = drf_hist_find(&h, want);
		assert_non_null(s);
		assert_int_equal(s->n, 1);
		assert_close(s->v[0][DRF_RES_CPU], k, 0, "each tenant's own cpu");
	}
	drf_hist_free(&h);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_parse_round_trip),
		cmocka_unit_test(test_torn_and_bad_lines),
		cmocka_unit_test(test_percentiles_nearest_rank),
		cmocka_unit_test(test_reco_compute),
		cmocka_unit_test(test_rounding),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_file_rotation_bounded),
		cmocka_unit_test(test_file_restart_and_torn_tail),
		cmocka_unit_test(test_file_mode_under_umask),
		cmocka_unit_test(test_daemon_hook),
		cmocka_unit_test(test_daemon_hook_many_tenants),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
