// SPDX-License-Identifier: MIT
/*
 * The Prometheus metrics of a daemon built by hand: a plan of two tenants
 * loaded from a config, and measurements (d->use) filled in by the test. The
 * exact sample lines of a few families, base units (the network in bytes),
 * cumulative histogram buckets ending with +Inf equal to _count, NAN left
 * out, escaped label values, the text format's grouping (HELP and TYPE before
 * each family, its samples together), and the metrics-file: written whole
 * with mode 0644, no temporary file left behind, failures reported.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fakedrfd.h"
#include "metrics.h"
#include "view.h"
#include "testlib.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/drf-metrics-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void nan_fill(double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = NAN;
}

/* What the metrics are rendered from: the parts of a daemon a view points at. */
struct mdaemon {
	struct fakeplan pl;
	struct drf_usage use;
	struct drf_online online;
	struct drf_reconciler rc;
	struct drf_reconcile_stats last;
	struct drf_metrics_file mf;
	struct drf_view v;
	char *metrics_file;
	enum drf_metrics_detail detail;  /* of metrics_file */
};

static const struct drf_view *view(struct mdaemon *d)
{
	d->v.decl = &d->pl.decl;
	d->v.plan = &d->pl.plan;
	d->v.use = &d->use;
	d->v.online = &d->online;
	d->v.rc = &d->rc;
	d->v.last = &d->last;
	d->v.state_path = "";
	return &d->v;
}

/* A daemon with the plan of two tenants, a and b, and nothing measured yet (NAN). */
static void make_daemon(struct mdaemon *d)
{
	char path[128], err[512];

	snprintf(path, sizeof(path), "%s/drfd.conf", dir);
	assert_int_equal(t_write_file(path, "[agent]\ncgroup-root = /sys/fs/cgroup/m.slice\n"
					    "[capacity]\ncpu = 4\nmemory = 8G\nnet-device = eth0\n"
					    "net-rate = 800mbit\n"
					    "[tenant a]\ncpu = 1.5\nmemory = 2G\nnet-rate = 100mbit\n"
					    "[tenant b]\nweight = 2\n"), 0);
	*d = (struct mdaemon){ .metrics_file = NULL, .detail = DRF_METRICS_BASIC };
	if (fakeplan_load(&d->pl, path, NULL, err, sizeof(err)) < 0) {
		print_error("%s\n", err);
		fail();
	}
	drf_metrics_file_init(&d->mf, NULL);
	d->use.n = 2;
	d->use.t = calloc(2, sizeof(*d->use.t));
	assert_non_null(d->use.t);
	for (size_t i = 0; i < 2; i++) {
		struct drf_tenant_use *u = &d->use.t[i];

		nan_fill(u->declared, DRF_NRES);
		nan_fill(u->alloc, DRF_NRES);
		nan_fill(u->limit, DRF_NRES);
		nan_fill(u->gauge, DRF_NGAUGE);
		nan_fill(u->now.c, DRF_NCTR);
		nan_fill(u->use_tick, DRF_NRES);
		nan_fill(u->use_min, DRF_NRES);
		nan_fill(u->gap, DRF_NRES);
		nan_fill(u->pressure, DRF_NPRESSURE);
		u->dominant_alloc = NAN;
		u->dominant_use = NAN;
	}
	d->use.jain_alloc = NAN;
	d->use.jain_use = NAN;
}

/* Tenant a: a few figures of every kind. */
static void measure(struct mdaemon *d)
{
	struct drf_tenant_use *a = &d->use.t[0], *b = &d->use.t[1];

	d->v.last_tick = 1700000000500000ull;
	d->v.ticks = 42;
	d->use.probes = true;
	d->use.jain_alloc = 0.96;
	d->use.no_effect = 1u << DRF_RES_MEMORY;
	a->declared[DRF_RES_CPU] = 1.5;
	a->declared[DRF_RES_MEMORY] = 2147483648.0;
	a->declared[DRF_RES_NET] = 100e6;
	a->alloc[DRF_RES_CPU] = 1.5;
	a->alloc[DRF_RES_MEMORY] = 2147483648.0;
	a->alloc[DRF_RES_NET] = 100e6;
	a->limit[DRF_RES_CPU] = INFINITY;
	a->limit[DRF_RES_NET] = 100e6;
	a->use_tick[DRF_RES_CPU] = 0.75;
	a->use_tick[DRF_RES_NET] = 8e6;
	a->use_min[DRF_RES_NET] = 4e6;
	a->gap[DRF_RES_CPU] = 0.75;
	a->not_holding = 1u << DRF_RES_NET;
	a->dominant_alloc = 0.375;
	a->now.c[DRF_CTR_CPU_USEC] = 1234567;
	a->now.c[DRF_CTR_RUNQ_NS] = 2.5e9;
	a->now.c[DRF_CTR_MEM_EVENTS_OOM_KILL] = 3;
	a->now.c[DRF_CTR_NET_TX_BYTES] = 1e6;
	a->now.c[DRF_CTR_PSI_MEMORY_FULL_USEC] = 500000;
	a->gauge[DRF_GAUGE_MEM_CURRENT] = 1048576;
	a->runq_hist[0] = 3;
	a->runq_hist[2] = 5;
	a->runq_hist[DRF_HIST_BUCKETS - 1] = 1;
	a->io_lat_hist[4] = 7; /* no _sum known: no histogram */
	a->pressure[DRF_PRESSURE_RUNQ] = 0.25;
	b->declared[DRF_RES_CPU] = INFINITY;
	b->alloc[DRF_RES_CPU] = 2.5;
	b->use_tick[DRF_RES_CPU] = 0;
	b->use_min[DRF_RES_CPU] = 0.125;
}

static char *render(struct mdaemon *d, enum drf_metrics_detail detail)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(drf_metrics_render(view(d), detail, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void free_daemon(struct mdaemon *d)
{
	free(d->use.t);
	free(d->metrics_file);
	fakeplan_free(&d->pl);
}

/* The daemon's tick writes its metrics-file: the file of the config in force. */
static int tick(struct mdaemon *d)
{
	return drf_metrics_write(&d->mf, d->metrics_file, d->detail, view(d));
}

/* The file at path starts with want. */
static bool file_starts(const char *path, const char *want)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strncmp(buf, want, strlen(want)) == 0;
}

/* The text has this line, whole. */
#define assert_line(text, line) assert_line_at(text, line, true, __FILE__, __LINE__)
/* The text has no line starting with this. */
#define refute_prefix(text, prefix) assert_line_at(text, prefix, false, __FILE__, __LINE__)

static void assert_line_at(const char *text, const char *want, bool whole, const char *file,
			   int line)
{
	size_t n = strlen(want);

	for (const char *p = text; *p; p = strchr(p, '\n') + 1) {
		if (strncmp(p, want, n) == 0 && (!whole || p[n] == '\n')) {
			if (whole)
				return;
			print_error("%s:%d: unexpected line '%.*s'\n", file, line,
				    (int)strcspn(p, "\n"), p);
			fail();
		}
		if (!strchr(p, '\n'))
			break;
	}
	if (whole) {
		fprintf(stderr, "%s\n", text);
		print_error("%s:%d: no line '%s' in the text above\n", file, line, want);
		fail();
	}
}

/*
 * One unit a family (Prometheus's naming): a sample with a resource label
 * whose family is a quantity, not a ratio or a flag, ends in that
 * resource's unit; drfd 0.3's mixed families (legacy, their HELP says
 * Deprecated) are let through by test_legacy_names.
 */
static bool allow_legacy;

static void check_unit(const char *fam, const char *line)
{
	static const struct {
		const char *res, *unit;
	} u[] = {
		{ "cpu", "_cores" }, { "memory", "_bytes" }, { "io-read", "_bytes_per_second" },
		{ "io-write", "_bytes_per_second" }, { "net-egress", "_bytes_per_second" },
		{ "net-ingress", "_bytes_per_second" },
	};
	const char *r = strstr(line, "resource=\"");
	size_t n = strlen(fam);

	if (!r || strstr(fam, "_ratio") || strstr(fam, "not_holding") ||
	    strstr(fam, "no_effect") || strstr(fam, "_seconds_total"))
		return;
	r += 10;
	for (size_t k = 0; k < sizeof(u) / sizeof(u[0]); k++) {
		size_t m = strlen(u[k].unit);

		if (strncmp(r, u[k].res, strlen(u[k].res)) || r[strlen(u[k].res)] != '"')
			continue;
		if (n > m && strcmp(fam + n - m, u[k].unit) == 0 &&
		    (strcmp(u[k].unit, "_bytes") || n < 17 ||
		     strcmp(fam + n - 17, "_bytes_per_second")))
			return;
		if (allow_legacy)
			return;
		fail_msg("%s: resource %s in a family not named for its unit (%s)", line, u[k].res,
			 u[k].unit);
	}
	fail_msg("%s: a resource label of no known resource", line);
}

/*
 * OpenMetrics names a counter's family without _total: that name must be no
 * other family's (a histogram X and a counter X_total collide).
 */
static void check_openmetrics_name(const char *fam, const char *seen)
{
	char key[140];

	snprintf(key, sizeof(key), " %.*s ", (int)(strlen(fam) - 6), fam);
	if (strstr(seen, key))
		fail_msg("counter %s and family %.*s are one name in OpenMetrics", fam,
			 (int)(strlen(fam) - 6), fam);
}

/*
 * The text format's grammar as Prometheus reads it: every family's # HELP,
 * then # TYPE, then its samples, each family once; a sample's name is the
 * family's, or for a histogram the family's with _bucket, _sum or _count.
 */
static void check_grouping(const char *text)
{
	char fam[128] = "", type[16] = "", seen[8192] = " ";
	int lineno = 0;

	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		char l[512];

		assert_true(n < sizeof(l));
		memcpy(l, p, n);
		l[n] = '\0';
		p += n + (p[n] == '\n');
		lineno++;
		if (strncmp(l, "# HELP ", 7) == 0) {
			char key[140];

			assert_int_equal(sscanf(l + 7, "%127s", fam), 1);
			snprintf(key, sizeof(key), " %s ", fam);
			if (strstr(seen, key)) {
				print_error("line %d: family %s appears twice\n", lineno, fam);
				fail();
			}
			assert_true(strlen(seen) + strlen(key) < sizeof(seen));
			strcat(seen, key + 1);
			snprintf(key, sizeof(key), " %s_total ", fam);
			if (strstr(seen, key))
				fail_msg("counter %s_total and family %s are one name in OpenMetrics",
					 fam, fam);
			type[0] = '\0';
			continue;
		}
		if (strncmp(l, "# TYPE ", 7) == 0) {
			char name[128];

			assert_int_equal(sscanf(l + 7, "%127s %15s", name, type), 2);
			assert_string_equal(name, fam);
			assert_true(strcmp(type, "gauge") == 0 || strcmp(type, "counter") == 0 ||
				    strcmp(type, "histogram") == 0);
			continue;
		}
		{
			size_t k = strcspn(l, "{ ");
			const char *suffix = l + strlen(fam);

			if (!type[0] || strncmp(l, fam, strlen(fam)) != 0) {
				print_error("line %d: '%s' outside its family (in %s)\n", lineno, l,
					    fam);
				fail();
			}
			if (k != strlen(fam) &&
			    !(strcmp(type, "histogram") == 0 &&
			      (strncmp(suffix, "_bucket{", 8) == 0 || strncmp(suffix, "_sum", 4) == 0 ||
			       strncmp(suffix, "_count", 6) == 0))) {
				print_error("line %d: '%s' is not a sample of %s\n", lineno, l, fam);
				fail();
			}
			if (strcmp(type, "counter") == 0 && strcmp(fam + strlen(fam) - 6, "_total"))
				fail_msg("counter %s does not end in _total", fam);
			check_unit(fam, l);
			if (strcmp(type, "counter") == 0)
				check_openmetrics_name(fam, seen);
		}
	}
}

static void test_render(void **state)
{
	struct mdaemon d;
	char *m, line[160];

	(void)state;
	make_daemon(&d);
	measure(&d);
	m = render(&d, DRF_METRICS_FULL);
	check_grouping(m);
	/* the daemon */
	assert_line(m, "# HELP drfd_up Whether drfd runs (1).");
	assert_line(m, "# TYPE drfd_up gauge");
	assert_line(m, "drfd_up 1");
	assert_line(m, "drfd_last_tick_timestamp_seconds 1700000000.5");
	assert_line(m, "# TYPE drfd_ticks_total counter");
	assert_line(m, "drfd_ticks_total 42");
	assert_line(m, "drfd_probes_up 1");
	assert_line(m, "drfd_jain_index{of=\"allocation\"} 0.96");
	refute_prefix(m, "drfd_jain_index{of=\"use\"}");
	assert_line(m, "drfd_capacity_cores{resource=\"cpu\"} 4");
	assert_line(m, "drfd_capacity_bytes{resource=\"memory\"} 8589934592");
	assert_line(m, "drfd_capacity_bytes_per_second{resource=\"net-egress\"} 100000000");
	/* resources without a capacity take no part, and have no samples */
	refute_prefix(m, "drfd_capacity_bytes_per_second{resource=\"io-read\"}");
	refute_prefix(m, "drfd_allocation_bytes_per_second{tenant=\"a\",resource=\"net-ingress\"}");
	assert_line(m, "drfd_knob_no_effect{resource=\"memory\"} 1");
	assert_line(m, "drfd_knob_no_effect{resource=\"cpu\"} 0");
	/* per tenant and resource, in base units: the network in bytes per second */
	assert_line(m, "drfd_declared_demand_cores{tenant=\"a\",resource=\"cpu\"} 1.5");
	assert_line(m, "drfd_declared_demand_cores{tenant=\"b\",resource=\"cpu\"} +Inf");
	assert_line(m, "drfd_allocation_cores{tenant=\"a\",resource=\"cpu\"} 1.5");
	assert_line(m, "drfd_allocation_bytes{tenant=\"a\",resource=\"memory\"} 2147483648");
	assert_line(m, "drfd_allocation_bytes_per_second{tenant=\"a\",resource=\"net-egress\"} 12500000");
	assert_line(m, "drfd_allocation_cores{tenant=\"b\",resource=\"cpu\"} 2.5");
	assert_line(m, "drfd_limit_cores{tenant=\"a\",resource=\"cpu\"} +Inf");
	assert_line(m, "drfd_limit_bytes_per_second{tenant=\"a\",resource=\"net-egress\"} 12500000");
	refute_prefix(m, "drfd_limit_bytes{tenant=\"a\",resource=\"memory\"}");
	assert_line(m, "drfd_use_cores{tenant=\"a\",resource=\"cpu\",window=\"tick\"} 0.75");
	refute_prefix(m, "drfd_use_cores{tenant=\"a\",resource=\"cpu\",window=\"1m\"}");
	assert_line(m, "drfd_use_bytes_per_second{tenant=\"a\",resource=\"net-egress\",window=\"tick\"} 1000000");
	assert_line(m, "drfd_use_bytes_per_second{tenant=\"a\",resource=\"net-egress\",window=\"1m\"} 500000");
	assert_line(m, "drfd_use_cores{tenant=\"b\",resource=\"cpu\",window=\"tick\"} 0");
	assert_line(m, "drfd_use_cores{tenant=\"b\",resource=\"cpu\",window=\"1m\"} 0.125");
	assert_line(m, "drfd_use_gap_cores{tenant=\"a\",resource=\"cpu\"} 0.75");
	assert_line(m, "drfd_enforcement_not_holding{tenant=\"a\",resource=\"net-egress\"} 1");
	assert_line(m, "drfd_enforcement_not_holding{tenant=\"a\",resource=\"cpu\"} 0");
	assert_line(m, "drfd_allocation_ratio{tenant=\"a\",resource=\"cpu\"} 0.375");
	assert_line(m, "drfd_allocation_ratio{tenant=\"a\",resource=\"memory\"} 0.25");
	assert_line(m, "drfd_use_ratio{tenant=\"a\",resource=\"net-egress\"} 0.01");
	assert_line(m, "drfd_use_ratio{tenant=\"a\",resource=\"cpu\"} 0.1875");
	/* per tenant */
	assert_line(m, "drfd_tenant_weight{tenant=\"a\"} 1");
	assert_line(m, "drfd_tenant_weight{tenant=\"b\"} 2");
	assert_line(m, "drfd_dominant_share_ratio{tenant=\"a\",of=\"allocation\"} 0.375");
	refute_prefix(m, "drfd_dominant_share_ratio{tenant=\"a\",of=\"use\"}");
	assert_line(m, "# TYPE drfd_cpu_usage_seconds_total counter");
	assert_line(m, "drfd_cpu_usage_seconds_total{tenant=\"a\"} 1.234567");
	refute_prefix(m, "drfd_cpu_usage_seconds_total{tenant=\"b\"}");
	assert_line(m, "drfd_memory_current_bytes{tenant=\"a\"} 1048576");
	assert_line(m, "drfd_memory_events_total{tenant=\"a\",event=\"oom_kill\"} 3");
	refute_prefix(m, "drfd_memory_events_total{tenant=\"a\",event=\"high\"}");
	assert_line(m, "drfd_network_transmit_bytes_total{tenant=\"a\"} 1000000");
	snprintf(line, sizeof(line), "drfd_pressure_ratio{tenant=\"a\",signal=\"%s\"} 0.25",
		 drf_pressure_name(DRF_PRESSURE_RUNQ));
	assert_line(m, line);
	assert_line(m, "drfd_pressure_stalled_seconds_total{tenant=\"a\",controller=\"memory\","
		       "kind=\"full\"} 0.5");
	/* a histogram: buckets cumulative, the last +Inf, equal to _count */
	assert_line(m, "# TYPE drfd_cpu_runqueue_wait_seconds histogram");
	assert_line(m, "drfd_cpu_runqueue_wait_seconds_bucket{tenant=\"a\",le=\"1e-06\"} 3");
	assert_line(m, "drfd_cpu_runqueue_wait_seconds_bucket{tenant=\"a\",le=\"2e-06\"} 3");
	assert_line(m, "drfd_cpu_runqueue_wait_seconds_bucket{tenant=\"a\",le=\"4e-06\"} 8");
	assert_line(m, "drfd_cpu_runqueue_wait_seconds_bucket{tenant=\"a\",le=\"4.194304\"} 8");
	assert_line(m, "drfd_cpu_runqueue_wait_seconds_bucket{tenant=\"a\",le=\"+Inf\"} 9");
	assert_line(m, "drfd_cpu_runqueue_wait_seconds_sum{tenant=\"a\"} 2.5");
	assert_line(m, "drfd_cpu_runqueue_wait_seconds_count{tenant=\"a\"} 9");
	/* b has no probe figures, and a's IO latency no _sum: no histogram */
	refute_prefix(m, "drfd_cpu_runqueue_wait_seconds_bucket{tenant=\"b\"");
	refute_prefix(m, "drfd_io_request_seconds_bucket");
	/* a family without samples has no # HELP or # TYPE either */
	refute_prefix(m, "# TYPE drfd_io_request_seconds ");
	refute_prefix(m, "# HELP drfd_io_request_seconds ");
	/* the run-queue counter's figure is the histogram's _sum (OpenMetrics: one name) */
	refute_prefix(m, "drfd_cpu_runqueue_wait_seconds_total");
	/* no NaN anywhere */
	assert_null(strstr(m, " NaN\n"));
	assert_null(strstr(m, " nan\n"));
	assert_null(strstr(m, " -nan\n"));
	free(m);
	free_daemon(&d);
}

/* The families of a text, in order, from their # TYPE lines: " name name ... ". */
static void families(const char *text, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (const char *p = strstr(text, "# TYPE "); p; p = strstr(p + 1, "\n# TYPE ")) {
		const char *name = strstr(p, "# TYPE ") + 7;
		int r = snprintf(out + off, len - off, " %.*s", (int)strcspn(name, " "), name);

		assert_true(r > 0 && (size_t)r < len - off);
		off += (size_t)r;
	}
}

/* The daemon's families, at either detail (no state-dir: no drfd_state_saved). */
#define DAEMON_FAMILIES " drfd_up drfd_last_tick_timestamp_seconds drfd_ticks_total" \
	" drfd_loop_turn_max_seconds drfd_loop_turns_total drfd_loop_slow_turns_total" \
	" drfd_config_last_reload_successful drfd_probes_up drfd_write_errors_total" \
	" drfd_writes_retrying drfd_jain_index drfd_effective_plan_changes_total" \
	" drfd_capacity_cores drfd_capacity_bytes drfd_capacity_bytes_per_second" \
	" drfd_knob_no_effect"

/*
 * metrics-detail: basic has the daemon's families and the per-tenant ones of
 * dashboards and alerts, no other (not even their # HELP and # TYPE), and
 * only the minute's use; full has every family. Each line of basic is in
 * full as it is: the same series, the same values.
 */
static void test_detail(void **state)
{
	struct mdaemon d;
	char *basic, *full, fam[4096];

	(void)state;
	make_daemon(&d);
	measure(&d);
	/* b over its limit on a resource that takes no part: not counted */
	d.use.t[1].not_holding = 1u << DRF_RES_IO_READ;
	basic = render(&d, DRF_METRICS_BASIC);
	full = render(&d, DRF_METRICS_FULL);
	check_grouping(basic);
	check_grouping(full);
	families(basic, fam, sizeof(fam));
	assert_string_equal(fam, DAEMON_FAMILIES " drfd_allocation_cores drfd_allocation_bytes"
			    " drfd_allocation_bytes_per_second drfd_use_cores"
			    " drfd_use_bytes_per_second drfd_tenant_weight"
			    " drfd_enforcement_not_holding_resources"
			    " drfd_cpu_usage_seconds_total drfd_memory_current_bytes");
	families(full, fam, sizeof(fam));
	/*
	 * One unit a family; no family without a sample (no io capacity: no io
	 * counters; nothing received, no probe's on-CPU time: none of theirs).
	 */
	assert_string_equal(fam, DAEMON_FAMILIES " drfd_declared_demand_cores"
			    " drfd_declared_demand_bytes drfd_declared_demand_bytes_per_second"
			    " drfd_effective_demand_cores drfd_effective_demand_bytes"
			    " drfd_effective_demand_bytes_per_second drfd_allocation_cores"
			    " drfd_allocation_bytes drfd_allocation_bytes_per_second"
			    " drfd_limit_cores drfd_limit_bytes_per_second drfd_use_cores"
			    " drfd_use_bytes_per_second drfd_use_gap_cores"
			    " drfd_enforcement_not_holding drfd_allocation_ratio drfd_use_ratio"
			    " drfd_tenant_weight drfd_dominant_share_ratio"
			    " drfd_enforcement_not_holding_resources drfd_cpu_usage_seconds_total"
			    " drfd_cpu_runqueue_wait_seconds drfd_memory_current_bytes"
			    " drfd_memory_events_total drfd_network_transmit_bytes_total"
			    " drfd_pressure_ratio drfd_pressure_stalled_seconds_total");
	/* basic's samples */
	assert_line(basic, "drfd_up 1");
	assert_line(basic, "drfd_capacity_bytes_per_second{resource=\"net-egress\"} 100000000");
	assert_line(basic, "drfd_allocation_bytes_per_second{tenant=\"a\",resource=\"net-egress\"} 12500000");
	assert_line(basic, "drfd_allocation_cores{tenant=\"b\",resource=\"cpu\"} 2.5");
	assert_line(basic, "drfd_use_bytes_per_second{tenant=\"a\",resource=\"net-egress\",window=\"1m\"} 500000");
	assert_line(basic, "drfd_use_cores{tenant=\"b\",resource=\"cpu\",window=\"1m\"} 0.125");
	refute_prefix(basic, "drfd_use_cores{tenant=\"a\",resource=\"cpu\",window=\"tick\"}");
	refute_prefix(basic, "drfd_use_cores{tenant=\"b\",resource=\"cpu\",window=\"tick\"}");
	assert_line(basic, "drfd_tenant_weight{tenant=\"b\"} 2");
	refute_prefix(basic, "drfd_dominant_share_ratio");
	assert_line(full, "drfd_dominant_share_ratio{tenant=\"a\",of=\"allocation\"} 0.375");
	assert_line(basic, "drfd_enforcement_not_holding_resources{tenant=\"a\"} 1");
	assert_line(basic, "drfd_enforcement_not_holding_resources{tenant=\"b\"} 0");
	assert_line(basic, "drfd_cpu_usage_seconds_total{tenant=\"a\"} 1.234567");
	assert_line(basic, "drfd_memory_current_bytes{tenant=\"a\"} 1048576");
	assert_null(strstr(basic, "window=\"tick\""));
	assert_null(strstr(basic, "_bucket{"));
	assert_null(strstr(basic, "drfd_pressure"));
	/* full has the tick too, and the count beside which resources */
	assert_line(full, "drfd_use_cores{tenant=\"a\",resource=\"cpu\",window=\"tick\"} 0.75");
	assert_line(full, "drfd_enforcement_not_holding_resources{tenant=\"a\"} 1");
	assert_line(full, "drfd_enforcement_not_holding{tenant=\"a\",resource=\"net-egress\"} 1");
	/* basic within full, line by line */
	for (const char *p = basic; *p; p += strcspn(p, "\n") + 1) {
		char line[512];

		snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
		assert_line(full, line);
	}
	free(basic);
	free(full);
	/* two resources not holding: 2 */
	d.use.t[0].not_holding |= 1u << DRF_RES_CPU;
	basic = render(&d, DRF_METRICS_BASIC);
	assert_line(basic, "drfd_enforcement_not_holding_resources{tenant=\"a\"} 2");
	free(basic);
	free_daemon(&d);
}

/* Every bucket's count is at least the one before, and the +Inf one is _count. */
static void test_histogram_cumulative(void **state)
{
	struct mdaemon d;
	char *m, want[160];
	double prev = -1;
	int buckets = 0;
	uint64_t total = 0;

	(void)state;
	make_daemon(&d);
	for (unsigned b = 0; b < DRF_HIST_BUCKETS; b++) {
		d.use.t[1].io_lat_hist[b] = (b * 7919) % 13;
		total += (b * 7919) % 13;
	}
	d.use.t[1].now.c[DRF_CTR_PROBE_LAT_NS] = 123e6;
	/* io's families are there once io takes part */
	m = render(&d, DRF_METRICS_FULL);
	assert_null(strstr(m, "drfd_io_request_seconds"));
	free(m);
	d.pl.decl.problem.capacity[DRF_RES_IO_READ] = 100e6;
	m = render(&d, DRF_METRICS_FULL);
	check_grouping(m);
	for (const char *p = strstr(m, "drfd_io_request_seconds_bucket{tenant=\"b\""); p;
	     p = strstr(p + 1, "drfd_io_request_seconds_bucket{tenant=\"b\"")) {
		double v = strtod(strchr(p, '}') + 2, NULL);

		assert_true(v >= prev);
		prev = v;
		buckets++;
	}
	assert_int_equal(buckets, DRF_HIST_BUCKETS);
	snprintf(want, sizeof(want), "drfd_io_request_seconds_bucket{tenant=\"b\",le=\"+Inf\"} %llu",
		 (unsigned long long)total);
	assert_line(m, want);
	snprintf(want, sizeof(want), "drfd_io_request_seconds_count{tenant=\"b\"} %llu",
		 (unsigned long long)total);
	assert_line(m, want);
	assert_line(m, "drfd_io_request_seconds_sum{tenant=\"b\"} 0.123");
	free(m);
	free_daemon(&d);
}

/*
 * metrics-legacy-names = yes: drfd 0.3's names beside the new ones, the same
 * figures (a dashboard of 0.3 keeps working for a release); no: none of them.
 */
static void test_legacy_names(void **state)
{
	struct mdaemon d;
	char *m;

	(void)state;
	make_daemon(&d);
	measure(&d);
	m = render(&d, DRF_METRICS_FULL);
	refute_prefix(m, "drfd_allocation{");
	refute_prefix(m, "drfd_capacity{");
	refute_prefix(m, "drfd_cpu_runqueue_wait_seconds_total");
	free(m);
	d.pl.decl.cfg.metrics_legacy_names = true;
	m = render(&d, DRF_METRICS_FULL);
	assert_line(m, "drfd_allocation_cores{tenant=\"a\",resource=\"cpu\"} 1.5");
	assert_line(m, "drfd_allocation{tenant=\"a\",resource=\"cpu\"} 1.5");
	assert_line(m, "drfd_allocation{tenant=\"a\",resource=\"memory\"} 2147483648");
	assert_line(m, "drfd_capacity{resource=\"net-egress\"} 100000000");
	assert_line(m, "drfd_use{tenant=\"a\",resource=\"cpu\",window=\"tick\"} 0.75");
	assert_line(m, "# TYPE drfd_cpu_runqueue_wait_seconds_total counter");
	assert_line(m, "drfd_cpu_runqueue_wait_seconds_total{tenant=\"a\"} 2.5");
	assert_line(m, "drfd_pressure_stalled_seconds_total{tenant=\"a\",controller=\"memory\","
		       "resource=\"memory\",kind=\"full\"} 0.5");
	free(m);
	/* basic: its two families of mixed units, nothing of full's */
	m = render(&d, DRF_METRICS_BASIC);
	assert_line(m, "drfd_allocation{tenant=\"b\",resource=\"cpu\"} 2.5");
	assert_line(m, "drfd_use{tenant=\"b\",resource=\"cpu\",window=\"1m\"} 0.125");
	refute_prefix(m, "drfd_declared_demand{");
	refute_prefix(m, "drfd_cpu_runqueue_wait_seconds_total");
	allow_legacy = true;
	check_grouping(m);
	allow_legacy = false;
	free(m);
	free_daemon(&d);
}

/* Label values escape backslash, double quote and newline. */
static void test_escaping(void **state)
{
	struct mdaemon d;
	char *m;

	(void)state;
	make_daemon(&d);
	d.use.t[0].alloc[DRF_RES_CPU] = 1;
	snprintf(d.pl.decl.cfg.tenants[0].name, sizeof(d.pl.decl.cfg.tenants[0].name), "x\"y\\z\nw");
	m = render(&d, DRF_METRICS_FULL);
	assert_line(m, "drfd_allocation_cores{tenant=\"x\\\"y\\\\z\\nw\",resource=\"cpu\"} 1");
	assert_line(m, "drfd_tenant_weight{tenant=\"x\\\"y\\\\z\\nw\"} 1");
	free(m);
	free_daemon(&d);
}

/*
 * Nothing measured yet (no use entries): the families of use-derived figures
 * have no samples, and so no # HELP or # TYPE either; the config's are there.
 */
static void test_before_first_sample(void **state)
{
	struct mdaemon d;
	char *m;

	(void)state;
	make_daemon(&d);
	free(d.use.t);
	d.use.t = NULL;
	d.use.n = 0;
	for (int k = 0; k < 2; k++) {
		m = render(&d, k ? DRF_METRICS_BASIC : DRF_METRICS_FULL);
		check_grouping(m);
		assert_line(m, "drfd_up 1");
		refute_prefix(m, "drfd_last_tick_timestamp_seconds ");
		refute_prefix(m, "# TYPE drfd_allocation_cores ");
		refute_prefix(m, "drfd_allocation_cores{");
		refute_prefix(m, "# TYPE drfd_enforcement_not_holding_resources ");
		refute_prefix(m, "drfd_enforcement_not_holding_resources{");
		assert_line(m, "# TYPE drfd_tenant_weight gauge");
		assert_line(m, "drfd_tenant_weight{tenant=\"b\"} 2");
		free(m);
	}
	free_daemon(&d);
}

/*
 * What basic costs: 1,000 tenants (t0 to t999) sharing all six resources,
 * with values as a host has them (the plan's allocations, use that is no
 * round number: every digit of a double), about 1,105 bytes a tenant since
 * the names carry their unit (drfd_allocation_bytes_per_second: 945 before).
 * The bound, 1.2 MB a render, leaves room for about one more line a tenant,
 * not for one more family per resource; the HTTP endpoint gzips it. Full,
 * with every figure known (the probes' too), is eight times basic.
 */
static void test_basic_size(void **state)
{
	enum { N = 1000 };
	struct mdaemon d;
	size_t off, len = (size_t)N * 128 + 1024, basic, full;
	char path[128], err[512], *conf = malloc(len), *m;
	struct drf_io_target io = { .major = 8, .minor = 0, .weights = DRF_IO_WEIGHTS_BFQ };

	(void)state;
	assert_non_null(conf);
	off = (size_t)snprintf(conf, len, "[capacity]\ncpu = 64\nmemory = 256G\nio-device = 8:0\n"
				"io-read-bps = 2G\nio-write-bps = 1G\nnet-device = eth0\n"
				"net-rate = 10gbit\nnet-ingress-rate = 10gbit\n");
	for (int i = 0; i < N; i++)
		off += (size_t)snprintf(conf + off, len - off, "[tenant t%d]\nweight = %d\ncpu = %d\n"
					"memory = %dG\nio-read-bps = %dM\n", i, 1 + i % 5, 1 + i % 7,
					1 + i % 13, 10 + i % 17);
	snprintf(path, sizeof(path), "%s/drfd.conf", dir);
	assert_int_equal(t_write_file(path, conf), 0);
	free(conf);
	d = (struct mdaemon){ .detail = DRF_METRICS_BASIC };
	if (fakeplan_load(&d.pl, path, &io, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	d.use.n = N;
	d.use.t = calloc(N, sizeof(*d.use.t));
	assert_non_null(d.use.t);
	for (size_t i = 0; i < N; i++) {
		struct drf_tenant_use *u = &d.use.t[i];
		const double *cap = d.pl.decl.problem.capacity;

		u->dominant_alloc = u->dominant_use = 0;
		for (int r = 0; r < DRF_NRES; r++) {
			u->alloc[r] = d.pl.plan.result.shares[i].alloc[r];
			u->use_min[r] = u->alloc[r] * ((double)((i * 37 + r * 11) % 100) + 0.5) / 100.3;
			u->dominant_alloc = fmax(u->dominant_alloc, u->alloc[r] / cap[r]);
			u->dominant_use = fmax(u->dominant_use, u->use_min[r] / cap[r]);
		}
		u->not_holding = i % 10 ? 0 : 1u << DRF_RES_CPU;
		u->now.c[DRF_CTR_CPU_USEC] = 1e6 * (double)i + 123457;
		u->gauge[DRF_GAUGE_MEM_CURRENT] = 4096.0 * (double)(i * 7919 % 262144);
	}
	m = render(&d, DRF_METRICS_BASIC);
	basic = strlen(m);
	free(m);
	m = render(&d, DRF_METRICS_FULL);
	full = strlen(m);
	free(m);
	if (basic >= 1200 * N || full < 8 * basic)
		fail_msg("basic %zu bytes, full %zu", basic, full);
	print_message("1000 tenants, six resources: basic %zu bytes, full %zu\n", basic, full);
	free_daemon(&d);
}

/* The names in dir, but . and .., joined with spaces. */
static void list_dir(const char *path, char *out, size_t len)
{
	DIR *dp = opendir(path);
	struct dirent *e;

	assert_non_null(dp);
	out[0] = '\0';
	while ((e = readdir(dp)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			snprintf(out + strlen(out), len - strlen(out), "%s ", e->d_name);
	closedir(dp);
}

/* The file at path is the mark, then d's metrics at that detail, whole. */
static void assert_file_is(const char *path, struct mdaemon *d, enum drf_metrics_detail detail)
{
	char *m = render(d, detail), *got;
	FILE *f = fopen(path, "r");
	long n;

	assert_non_null(f);
	got = calloc(1, strlen(DRFD_METRICS_MARK) + strlen(m) + 2);
	assert_non_null(got);
	n = (long)fread(got, 1, strlen(DRFD_METRICS_MARK) + strlen(m) + 1, f);
	fclose(f);
	assert_int_equal(n, (long)(strlen(DRFD_METRICS_MARK) + strlen(m)));
	assert_memory_equal(got, DRFD_METRICS_MARK, strlen(DRFD_METRICS_MARK));
	assert_string_equal(got + strlen(DRFD_METRICS_MARK), m);
	free(got);
	free(m);
}

static void test_metrics_file(void **state)
{
	struct mdaemon d;
	char path[128], names[512];
	struct stat st;

	(void)state;
	make_daemon(&d);
	measure(&d);
	snprintf(path, sizeof(path), "%s/out", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	/* unset: no file */
	assert_int_equal(tick(&d), 0);
	list_dir(path, names, sizeof(names));
	assert_string_equal(names, "");
	/*
	 * set: the file, whole, 0644 whatever the umask, nothing else beside it;
	 * a temporary file a killed drfd left is removed, other files are not
	 */
	snprintf(path, sizeof(path), "%s/out/.drfd.prom.a1B2c3", dir);
	assert_int_equal(t_write_file(path, DRFD_METRICS_MARK "half a metri"), 0);
	snprintf(path, sizeof(path), "%s/out/.drfd.prom.b1B2c3", dir);
	assert_int_equal(t_write_file(path, ""), 0);
	snprintf(path, sizeof(path), "%s/out/.drfd.prom.keep", dir);
	assert_int_equal(t_write_file(path, "not ours"), 0);
	snprintf(path, sizeof(path), "%s/out/.drfd.prom.keep12", dir);
	assert_int_equal(t_write_file(path, "not ours either"), 0);
	/* a FIFO of the temporaries' shape is not even opened (it would block) */
	snprintf(path, sizeof(path), "%s/out/.drfd.prom.fifo12", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/out/drfd.prom", dir);
	d.metrics_file = strdup(path);
	umask(077);
	assert_int_equal(tick(&d), 0);
	umask(022);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_file_is(path, &d, DRF_METRICS_BASIC);
	/* files of the temporaries' shape that drfd did not write stay */
	snprintf(path, sizeof(path), "%s/out/.drfd.prom.keep", dir);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/out/.drfd.prom.keep12", dir);
	assert_true(file_starts(path, "not ours either"));
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/out/.drfd.prom.fifo12", dir);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/out", dir);
	list_dir(path, names, sizeof(names));
	assert_string_equal(names, "drfd.prom ");
	/* replaced, not rewritten in place: a new inode each tick */
	{
		ino_t before = st.st_ino;

		assert_int_equal(tick(&d), 0);
		assert_int_equal(stat(d.metrics_file, &st), 0);
		assert_true(st.st_ino != before);
	}
	/* a reload changed metrics-detail: the next tick writes that, and back */
	d.detail = DRF_METRICS_FULL;
	assert_int_equal(tick(&d), 0);
	assert_file_is(d.metrics_file, &d, DRF_METRICS_FULL);
	d.detail = DRF_METRICS_BASIC;
	assert_int_equal(tick(&d), 0);
	assert_file_is(d.metrics_file, &d, DRF_METRICS_BASIC);
	/*
	 * A reload moved it into a directory that does not exist: an error, and
	 * nothing created; the former file is removed (it would go on saying drfd_up 1).
	 */
	free(d.metrics_file);
	snprintf(path, sizeof(path), "%s/none/drfd.prom", dir);
	d.metrics_file = strdup(path);
	assert_int_equal(tick(&d), -ENOENT);
	assert_int_equal(tick(&d), -ENOENT); /* logged once, still failing */
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/out", dir);
	list_dir(path, names, sizeof(names));
	assert_string_equal(names, "");
	/* the path is a directory: the rename fails, and the temporary file is removed */
	free(d.metrics_file);
	snprintf(path, sizeof(path), "%s/out/dir.prom", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	d.metrics_file = strdup(path);
	assert_true(tick(&d) < 0);
	snprintf(path, sizeof(path), "%s/out", dir);
	list_dir(path, names, sizeof(names));
	assert_string_equal(names, "dir.prom ");
	/* writing works again */
	free(d.metrics_file);
	snprintf(path, sizeof(path), "%s/out/drfd.prom", dir);
	d.metrics_file = strdup(path);
	assert_int_equal(tick(&d), 0);
	/* a reload that drops metrics-file removes the file drfd wrote */
	free(d.metrics_file);
	d.metrics_file = NULL;
	assert_int_equal(tick(&d), 0);
	assert_int_equal(access(path, F_OK), -1);
	/*
	 * a file an earlier drfd wrote (it starts with the mark, or with the first
	 * family for a drfd of before the mark) is replaced
	 */
	assert_int_equal(t_write_file(path, DRFD_METRICS_MARK "drfd_up 1\n"), 0);
	d.metrics_file = strdup(path);
	assert_int_equal(tick(&d), 0);
	assert_true(file_starts(path, DRFD_METRICS_MARK "# HELP drfd_up "));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(t_write_file(path, "# HELP drfd_up Whether drfd runs (1).\n"
					    "# TYPE drfd_up gauge\ndrfd_up 1\n"), 0);
	assert_int_equal(tick(&d), 0);
	assert_true(file_starts(path, DRFD_METRICS_MARK "# HELP drfd_up "));
	/*
	 * Someone else's file put there while drfd runs: not replaced, and not
	 * removed when drfd stops; writing resumes once it is gone.
	 */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(t_write_file(path, "precious\n"), 0);
	assert_int_equal(tick(&d), -EEXIST);
	assert_true(file_starts(path, "precious\n"));
	drf_metrics_stop(&d.mf);
	assert_true(file_starts(path, "precious\n"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(tick(&d), 0);
	assert_true(file_starts(path, DRFD_METRICS_MARK));
	/* replaced by someone else after drfd wrote it: a stop leaves it */
	{
		char other[160];

		snprintf(other, sizeof(other), "%s/out/other", dir);
		assert_int_equal(t_write_file(other, "theirs\n"), 0);
		assert_int_equal(rename(other, path), 0);
	}
	drf_metrics_stop(&d.mf);
	assert_true(file_starts(path, "theirs\n"));
	assert_int_equal(unlink(path), 0);
	free(d.metrics_file);
	/* a symlink or a directory at the path: left alone, and no file made through it */
	snprintf(path, sizeof(path), "%s/out/link.prom", dir);
	assert_int_equal(symlink("/etc/hostname", path), 0);
	d.metrics_file = strdup(path);
	assert_int_equal(tick(&d), -EEXIST);
	{
		struct stat ls;

		assert_int_equal(lstat(path, &ls), 0);
		assert_true(S_ISLNK(ls.st_mode));
	}
	drf_metrics_stop(&d.mf);
	assert_int_equal(unlink(path), 0);
	free(d.metrics_file);
	d.metrics_file = NULL;
	free_daemon(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_render, setup, teardown),
		cmocka_unit_test_setup_teardown(test_detail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_histogram_cumulative, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escaping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_before_first_sample, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_basic_size, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
