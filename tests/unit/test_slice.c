// SPDX-License-Identifier: MIT
/*
 * The tenants as systemd slices (cgroupfs/slice.h): unit names as
 * systemd-escape makes them, cgroup files as unit properties, and drfd over a
 * fake systemd that writes the cgroup files from the properties as systemd's
 * cgroup.c does (its formulas written here from systemd.resource-control(5),
 * not taken from drfd): the knobs land as the plan says, a steady tick calls
 * systemd for nothing, a value changed behind systemd's back is put back
 * through it, and a failed call is retried.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakecg.h"
#include "fakedrfd.h"
#include "host.h"
#include "log.h"
#include "slice.h"
#include "testlib.h"
#include "unitname.h"

static void path_is(const char *in, const char *want)
{
	char out[4096];
	int n = drf_slice_path(in, out, sizeof(out));

	assert_int_equal(n, (int)strlen(want));
	assert_string_equal(out, want);
}

static void test_names(void **state)
{
	char out[600], long_name[300];

	(void)state;
	path_is("web", "drf-web.slice");
	path_is("a/b", "drf-a.slice/drf-a-b.slice");
	path_is("a/b/c", "drf-a.slice/drf-a-b.slice/drf-a-b-c.slice");
	/* '-' separates levels in a slice's name: a '-' of the name is escaped. */
	path_is("my-app", "drf-my\\x2dapp.slice");
	path_is(".hidden", "drf-\\x2ehidden.slice");
	path_is("v1.2_x:y", "drf-v1.2_x:y.slice");
	path_is("caf\xc3\xa9", "drf-caf\\xc3\\xa9.slice");
	assert_int_equal(drf_slice_path("", out, sizeof(out)), -EINVAL);
	assert_int_equal(drf_slice_path("a//b", out, sizeof(out)), -EINVAL);
	assert_int_equal(drf_slice_path("a/", out, sizeof(out)), -EINVAL);
	assert_int_equal(drf_slice_path("web", out, 13), -ENAMETOOLONG);
	/* systemd's longest unit name is 255 bytes. */
	memset(long_name, 'x', 245);
	long_name[245] = '\0';
	assert_int_equal(drf_slice_path(long_name, out, sizeof(out)), 255);
	long_name[245] = 'x';
	long_name[246] = '\0';
	assert_int_equal(drf_slice_path(long_name, out, sizeof(out)), -ENAMETOOLONG);
}

static void test_units_of_paths(void **state)
{
	char u[300];

	(void)state;
	assert_int_equal(cgfs_slice_unit("", u, sizeof(u)), 0);
	assert_string_equal(u, "drf.slice");
	assert_int_equal(cgfs_slice_unit("drf-web.slice", u, sizeof(u)), 0);
	assert_string_equal(u, "drf-web.slice");
	assert_int_equal(cgfs_slice_unit("drf-a.slice/drf-a-b.slice", u, sizeof(u)), 0);
	assert_string_equal(u, "drf-a-b.slice");
	/* Anything systemd would not put where the path says, or not drfd's: refused. */
	assert_int_equal(cgfs_slice_unit("drf-a.slice/drf-b.slice", u, sizeof(u)), -EPERM);
	assert_int_equal(cgfs_slice_unit("drf-a-b.slice", u, sizeof(u)), -EPERM);
	assert_int_equal(cgfs_slice_unit("system.slice", u, sizeof(u)), -EPERM);
	assert_int_equal(cgfs_slice_unit("web", u, sizeof(u)), -EPERM);
	assert_int_equal(cgfs_slice_unit("drf-web.slice/task-1", u, sizeof(u)), -EPERM);
	assert_int_equal(cgfs_slice_unit("drf-web.service", u, sizeof(u)), -EPERM);
}

/* systemd's cgroup.c, from its documented ranges: IOWeight to BFQ's weight. */
static uint64_t sd_bfq_weight(uint64_t w)
{
	return w <= 100 ? 100 - (100 - w) * 99 / 99 : 100 + (w - 100) * 900 / 9900;
}

/* systemd's cpu.max quota from CPUQuotaPerSecUSec and the period (at least 1 ms). */
static uint64_t sd_quota(uint64_t per_sec, uint64_t period)
{
	uint64_t q = per_sec * period / 1000000;

	return q < 1000 ? 1000 : q;
}

static void test_props(void **state)
{
	struct cgfs_prop p[CGFS_PROPS_MAX];
	char s[400];

	(void)state;
	assert_int_equal(cgfs_slice_props("cpu.weight", "250", p, CGFS_PROPS_MAX), 1);
	assert_string_equal(p[0].name, "CPUWeight");
	assert_int_equal(p[0].type, CGFS_PROP_U64);
	assert_int_equal(p[0].u, 250);
	assert_int_equal(cgfs_slice_props("cpu.max", "max 100000", p, CGFS_PROPS_MAX), 2);
	assert_string_equal(p[0].name, "CPUQuotaPerSecUSec");
	assert_true(p[0].u == CGFS_PROP_INFINITY);
	assert_string_equal(p[1].name, "CPUQuotaPeriodUSec");
	assert_int_equal(p[1].u, 100000);
	assert_int_equal(cgfs_slice_props("memory.high", "max", p, CGFS_PROPS_MAX), 1);
	assert_string_equal(p[0].name, "MemoryHigh");
	assert_true(p[0].u == CGFS_PROP_INFINITY);
	assert_int_equal(cgfs_slice_props("memory.low", "268435456", p, CGFS_PROPS_MAX), 1);
	assert_string_equal(p[0].name, "MemoryLow");
	assert_int_equal(p[0].u, 268435456);
	assert_int_equal(cgfs_slice_props("memory.swap.max", "0", p, CGFS_PROPS_MAX), 1);
	assert_string_equal(p[0].name, "MemorySwapMax");
	assert_int_equal(cgfs_slice_props("io.weight", "default 800", p, CGFS_PROPS_MAX), 1);
	assert_string_equal(p[0].name, "IOWeight");
	assert_int_equal(p[0].u, 800);
	assert_int_equal(cgfs_slice_props("io.bfq.weight", "8:16 50", p, CGFS_PROPS_MAX), 1);
	assert_string_equal(p[0].name, "IODeviceWeight");
	assert_string_equal(p[0].s, "/dev/block/8:16");
	assert_int_equal(p[0].u, 50);
	/* The reset of a device's own weight: the whole list, emptied. */
	assert_int_equal(cgfs_slice_props("io.bfq.weight", "8:16 default", p, CGFS_PROPS_MAX), 1);
	assert_string_equal(p[0].name, "IODeviceWeight");
	assert_int_equal(p[0].type, CGFS_PROP_DEV_NONE);
	assert_int_equal(cgfs_slice_props("io.max", "8:0 rbps=1048576 wbps=max riops=max wiops=max",
					  p, CGFS_PROPS_MAX), 4);
	assert_string_equal(p[0].name, "IOReadBandwidthMax");
	assert_string_equal(p[0].s, "/dev/block/8:0");
	assert_int_equal(p[0].u, 1048576);
	assert_string_equal(p[1].name, "IOWriteBandwidthMax");
	assert_true(p[1].u == CGFS_PROP_INFINITY);
	assert_string_equal(p[3].name, "IOWriteIOPSMax");
	cgfs_prop_format(&p[1], s, sizeof(s));
	assert_string_equal(s, "IOWriteBandwidthMax=/dev/block/8:0 infinity");
	assert_int_equal(cgfs_slice_props("cgroup.subtree_control", "+cpu -io +memory", p,
					  CGFS_PROPS_MAX), 3);
	assert_string_equal(p[0].name, "CPUAccounting");
	assert_int_equal(p[0].u, 1);
	assert_string_equal(p[1].name, "IOAccounting");
	assert_int_equal(p[1].u, 0);
	assert_string_equal(p[2].name, "MemoryAccounting");
	/* What no property sets, and values that do not parse. */
	assert_int_equal(cgfs_slice_props("cgroup.kill", "1", p, CGFS_PROPS_MAX), -EOPNOTSUPP);
	assert_int_equal(cgfs_slice_props("cgroup.subtree_control", "+rdma", p, CGFS_PROPS_MAX),
			 -EOPNOTSUPP);
	assert_int_equal(cgfs_slice_props("cpu.weight", "0", p, CGFS_PROPS_MAX), -EINVAL);
	assert_int_equal(cgfs_slice_props("cpu.weight", "10001", p, CGFS_PROPS_MAX), -EINVAL);
	assert_int_equal(cgfs_slice_props("cpu.weight", "12x", p, CGFS_PROPS_MAX), -EINVAL);
	assert_int_equal(cgfs_slice_props("cpu.max", "50000", p, CGFS_PROPS_MAX), -EINVAL);
	assert_int_equal(cgfs_slice_props("memory.max", "-1", p, CGFS_PROPS_MAX), -EINVAL);
	assert_int_equal(cgfs_slice_props("memory.max", "99999999999999999999999", p,
					  CGFS_PROPS_MAX), -EINVAL);
	assert_int_equal(cgfs_slice_props("io.max", "8:0 rbps=1 bogus=2", p, CGFS_PROPS_MAX),
			 -EINVAL);
	assert_int_equal(cgfs_slice_props("io.bfq.weight", "default 1001", p, CGFS_PROPS_MAX),
			 -EINVAL);
}

/* Every quota and BFQ weight drfd writes comes back from systemd as written. */
static void test_props_round_trip(void **state)
{
	static const uint64_t periods[] = { 1000, 30000, 100000, 333333, 1000000 };
	struct cgfs_prop p[CGFS_PROPS_MAX];
	char v[64];

	(void)state;
	for (uint64_t b = 1; b <= 1000; b++) {
		snprintf(v, sizeof(v), "default %" PRIu64, b);
		assert_int_equal(cgfs_slice_props("io.bfq.weight", v, p, CGFS_PROPS_MAX), 1);
		if (sd_bfq_weight(p[0].u) != b)
			fail_msg("BFQ weight %" PRIu64 ": IOWeight %" PRIu64 " comes back as %" PRIu64,
				 b, p[0].u, sd_bfq_weight(p[0].u));
	}
	for (size_t i = 0; i < sizeof(periods) / sizeof(periods[0]); i++)
		for (uint64_t q = 1000; q <= 64 * periods[i]; q += 1 + q / 97) {
			snprintf(v, sizeof(v), "%" PRIu64 " %" PRIu64, q, periods[i]);
			assert_int_equal(cgfs_slice_props("cpu.max", v, p, CGFS_PROPS_MAX), 2);
			if (sd_quota(p[0].u, p[1].u) != q)
				fail_msg("cpu.max '%s' comes back as quota %" PRIu64, v,
					 sd_quota(p[0].u, p[1].u));
		}
}

/*
 * A fake systemd: slices made as cgroups of the fake tree, where their names
 * put them; properties written into their files as systemd does.
 */
struct fakesd {
	int rootfd;
	uint64_t per_sec, period; /* of the unit last set */
	size_t starts, sets, stops, exists;
	const char *busy_unit; /* a slice with an active unit in it (a service between restarts) */
};

static int unit_path(const char *unit, char *path, size_t len)
{
	size_t o = 0, n = strlen(unit) - strlen(".slice");

	if (strcmp(unit, "drf.slice") == 0) {
		path[0] = '\0';
		return 0;
	}
	/* drf-a-b.slice: drf-a.slice/drf-a-b.slice */
	for (size_t i = 4; i <= n; i++) {
		if (i < n && unit[i] != '-')
			continue;
		o += (size_t)snprintf(path + o, len - o, "%s%.*s.slice", o ? "/" : "", (int)i, unit);
	}
	return 0;
}

static int sd_start(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n)
{
	struct fakesd *sd = ctx;
	char path[1024];
	int r;

	(void)p;
	(void)n;
	sd->starts++;
	if (strstr(unit, ".scope"))
		return 0;
	unit_path(unit, path, sizeof(path));
	if (!path[0]) {
		sd->exists++;
		return -EEXIST;
	}
	r = fakecg_ops.mkdir(NULL, sd->rootfd, path);
	if (r == -EEXIST)
		sd->exists++;
	if (r == 0) {
		/* No cpu controller until a property needs it (memory's is on by default). */
		char f[1100];

		snprintf(f, sizeof(f), "%s/cpu.weight", path);
		assert_int_equal(unlinkat(sd->rootfd, f, 0), 0);
		snprintf(f, sizeof(f), "%s/cpu.max", path);
		assert_int_equal(unlinkat(sd->rootfd, f, 0), 0);
	}
	return r;
}

static void put(struct fakesd *sd, const char *path, const char *file, const char *val)
{
	char p[1200];

	snprintf(p, sizeof(p), "%s%s%s", path, path[0] ? "/" : "", file);
	assert_int_equal(fakecg_ops.write(NULL, sd->rootfd, p, val), 0);
}

/*
 * A unit that sets a controller's property (or its accounting) has systemd
 * enable that controller in every ancestor's cgroup.subtree_control.
 */
static void enable_above(struct fakesd *sd, const char *path, const char *prop)
{
	const char *ctrl = strncmp(prop, "CPU", 3) == 0	     ? "+cpu"
			   : strncmp(prop, "Memory", 6) == 0 ? "+memory"
			   : strncmp(prop, "IO", 2) == 0     ? "+io"
			   : strncmp(prop, "Tasks", 5) == 0  ? "+pids"
							     : NULL;
	char up[1024];
	char *slash;

	if (!ctrl || !path[0])
		return;
	snprintf(up, sizeof(up), "%s", path);
	do {
		slash = strrchr(up, '/');
		if (slash)
			*slash = '\0';
		else
			up[0] = '\0';
		put(sd, up, "cgroup.subtree_control", ctrl);
	} while (up[0]);
}

static int sd_set(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n)
{
	struct fakesd *sd = ctx;
	char path[1024], v[64];

	sd->sets++;
	unit_path(unit, path, sizeof(path));
	for (size_t i = 0; i < n; i++) {
		char f[1100];

		/* A CPU property enables the cpu controller: its files appear. */
		snprintf(f, sizeof(f), "%s/cpu.weight", path);
		if (strncmp(p[i].name, "CPU", 3) == 0 && faccessat(sd->rootfd, f, F_OK, 0) < 0) {
			assert_int_equal(fakecg_put(sd->rootfd, f, "100\n"), 0);
			snprintf(f, sizeof(f), "%s/cpu.max", path);
			assert_int_equal(fakecg_put(sd->rootfd, f, "max 100000\n"), 0);
		}
	}
	for (size_t i = 0; i < n; i++) {
		const char *file = NULL;

		if (strcmp(p[i].name, "CPUWeight") == 0) {
			snprintf(v, sizeof(v), "%" PRIu64, p[i].u);
			file = "cpu.weight";
		} else if (strcmp(p[i].name, "CPUQuotaPerSecUSec") == 0) {
			sd->per_sec = p[i].u;
		} else if (strcmp(p[i].name, "CPUQuotaPeriodUSec") == 0) {
			sd->period = p[i].u;
			if (sd->per_sec == UINT64_MAX)
				snprintf(v, sizeof(v), "max %" PRIu64, sd->period);
			else
				snprintf(v, sizeof(v), "%" PRIu64 " %" PRIu64,
					 sd_quota(sd->per_sec, sd->period), sd->period);
			file = "cpu.max";
		} else if (strncmp(p[i].name, "Memory", 6) == 0 && p[i].type == CGFS_PROP_U64) {
			static const char *const f[][2] = { { "MemoryLow", "memory.low" },
							    { "MemoryHigh", "memory.high" },
							    { "MemoryMax", "memory.max" },
							    { "MemorySwapMax", "memory.swap.max" } };

			for (size_t k = 0; k < 4; k++)
				if (strcmp(p[i].name, f[k][0]) == 0)
					file = f[k][1];
			if (p[i].u == UINT64_MAX)
				snprintf(v, sizeof(v), "max");
			else
				snprintf(v, sizeof(v), "%" PRIu64, p[i].u);
		}
		if (file)
			put(sd, path, file, v);
		enable_above(sd, path, p[i].name);
	}
	return 0;
}

static int sd_stop(void *ctx, const char *unit)
{
	struct fakesd *sd = ctx;
	char path[1024];

	sd->stops++;
	unit_path(unit, path, sizeof(path));
	return fakecg_ops.rmdir(NULL, sd->rootfd, path);
}

static int sd_busy(void *ctx, const char *unit)
{
	struct fakesd *sd = ctx;

	return sd->busy_unit && strcmp(unit, sd->busy_unit) == 0;
}

static const struct cgfs_bus_ops fakesd_ops = { "fake systemd", sd_start, sd_set, sd_stop,
						sd_busy };

static int yes(void *ctx)
{
	(void)ctx;
	return 1;
}

/* drfd over the slice ops, the bus recorder and the fake systemd. */
struct sliced {
	struct fakedrfd f;
	struct drf_host_ops host;
	struct fakesd sd;
	struct cgfs_bus_recorder bus;
	struct cgfs_slice ops;
};

static const char *tenants = "[capacity]\ncpu = 4\nmemory = 4G\n"
			     "[tenant web]\nweight = 2\ncpu = 1\nmemory = 1G\n"
			     "[tenant my-batch]\ncpu = 2\nmemory = 512M\n"
			     "[tenant api]\ncgroup = team/api\ncpu = 1\nmemory = 256M\n";

static void sliced_setup_with(struct sliced *s, const char *agent, const char *text)
{
	char conf[1024], err[1024];

	assert_int_equal(fakedrfd_setup(&s->f, "", text), 0);
	/* cgroup-root = auto, on a host whose init is systemd. */
	snprintf(conf, sizeof(conf), "[agent]\ncgroup-root = auto\nstate-dir = %s\n%s%s",
		 s->f.statedir, agent, text);
	assert_int_equal(t_write_file(s->f.conf, conf), 0);
	s->host = t_fake_host;
	s->host.systemd = yes;
	s->f.env.host = &s->host;
	if (getenv("T_LOG")) {
		static struct drf_stderr_sink sink;
		static struct drf_logger lg;

		lg = drf_log_stderr(&sink, LOG_DEBUG);
		s->f.env.log = &lg;
	}
	drf_declared_free(&s->f.d.decl);
	if (drf_declared_load(&s->f.d.decl, s->f.conf, &s->host, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	assert_true(s->f.d.decl.cfg.slices);
	cgfs_close(&s->f.fs);
	s->sd = (struct fakesd){ 0 };
	s->bus = (struct cgfs_bus_recorder){ .inner = &fakesd_ops, .inner_ctx = &s->sd };
	s->ops = (struct cgfs_slice){ .fs = &cgfs_recording_ops, .fs_ctx = &s->f.rec,
				      .bus = &cgfs_bus_recording_ops, .bus_ctx = &s->bus };
	assert_int_equal(cgfs_open(&s->f.fs, s->f.root, false, &cgfs_slice_ops, &s->ops), 0);
	s->sd.rootfd = s->f.fs.rootfd;
	s->f.rec.root = s->f.fs.root;
}

static void sliced_setup(struct sliced *s)
{
	sliced_setup_with(s, "", tenants);
}

static void sliced_tick(struct sliced *s, size_t verify)
{
	fakedrfd_advance(&s->f, s->f.d.decl.cfg.interval_us);
	drfd_tick(&s->f.d, verify);
}

/* Every knob of the plan, as read back from the files systemd wrote. */
static void assert_knobs_as_planned(struct sliced *s)
{
	const struct drf_plan *p = &s->f.d.plan;

	for (size_t i = 0; i < s->f.d.decl.cfg.n_tenants; i++)
		for (int k = 0; k < DRF_NKNOBS; k++) {
			const char *cg = s->f.d.decl.cfg.tenants[i].cgroup;
			const char *file = drf_knob_file((enum drf_knob)k, NULL);
			char want[DRF_KNOB_LEN];

			if (!p->knobs[i].set[k])
				continue;
			snprintf(want, sizeof(want), "%s", p->knobs[i].val[k]);
			if (strncmp(file, "memory.", 7) == 0 && strcmp(want, "max") != 0)
				snprintf(want, sizeof(want), "%llu",
					 strtoull(p->knobs[i].val[k], NULL, 10) / FAKECG_PAGE *
						 FAKECG_PAGE);
			if (strcmp(fakedrfd_get(&s->f, cg, file), want) != 0)
				fail_msg("%s/%s: '%s', planned '%s'", cg, file,
					 fakedrfd_get(&s->f, cg, file), want);
		}
}

static void test_daemon_on_slices(void **state)
{
	struct sliced s;
	size_t sets, calls, changes;

	(void)state;
	sliced_setup(&s);
	/* The config's paths are slices': escaped, nested one slice a level. */
	assert_string_equal(s.f.d.decl.cfg.tenants[0].cgroup, "drf-web.slice");
	assert_string_equal(s.f.d.decl.cfg.tenants[1].cgroup, "drf-my\\x2dbatch.slice");
	assert_string_equal(s.f.d.decl.cfg.tenants[2].cgroup, "drf-team.slice/drf-team-api.slice");
	assert_int_equal(fakedrfd_start(&s.f), 0);
	/* Each slice started through systemd (team's found there for api), no file written. */
	assert_int_equal(s.sd.starts - s.sd.exists, 4);
	assert_true(s.sd.sets > 0);
	assert_int_equal(s.f.rec.changes, 0);
	assert_knobs_as_planned(&s);

	/* Steady: nothing more asked of systemd, whatever is read back. */
	sets = s.sd.sets;
	calls = s.bus.calls;
	for (int i = 0; i < 5; i++)
		sliced_tick(&s, SIZE_MAX);
	assert_int_equal(s.sd.sets, sets);
	assert_int_equal(s.bus.calls, calls);

	/* Someone writes the file behind systemd's back: put back, through systemd. */
	assert_int_equal(fakecg_put(s.f.fs.rootfd, "drf-web.slice/cpu.weight", "7\n"), 0);
	changes = s.f.rec.changes;
	sliced_tick(&s, SIZE_MAX);
	assert_int_equal(s.sd.sets, sets + 1);
	assert_int_equal(s.f.rec.changes, changes);
	assert_knobs_as_planned(&s);

	/* A call systemd refuses is retried, and lands once systemd takes it. */
	assert_int_equal(fakecg_put(s.f.fs.rootfd, "drf-web.slice/memory.low", "0\n"), 0);
	s.bus.fault = (struct drf_fault){ .err = EIO, .ops = CGFS_BUS_SET };
	sliced_tick(&s, SIZE_MAX);
	assert_true(s.bus.fault.hits >= 1);
	assert_string_equal(fakedrfd_get(&s.f, "drf-web.slice", "memory.low"), "0");
	s.bus.fault = (struct drf_fault){ 0 };
	sliced_tick(&s, SIZE_MAX);
	assert_knobs_as_planned(&s);
	fakedrfd_teardown(&s.f);
}

/*
 * systemd keeps CPUQuota= in its unit files in whole percent: after a
 * daemon-reload it writes cpu.max from that. A limit mode quota under slices
 * is a whole percent already, so the reload changes nothing drfd must mend.
 */
static void test_limit_quota_survives_daemon_reload(void **state)
{
	struct sliced s;
	size_t sets;

	(void)state;
	/* Shares of 3.3 cores: quotas that are not whole percents unless made so. */
	sliced_setup_with(&s, "mode = limit\n",
			  "[capacity]\ncpu = 3.3\nmemory = 4G\n"
			  "[tenant web]\nweight = 3\ncpu = 3\nmemory = 1G\n"
			  "[tenant batch]\ncpu = 3\nmemory = 512M\n");
	assert_int_equal(fakedrfd_start(&s.f), 0);
	assert_knobs_as_planned(&s);
	sets = s.sd.sets;
	for (size_t i = 0; i < s.f.d.decl.cfg.n_tenants; i++) {
		const char *cg = s.f.d.decl.cfg.tenants[i].cgroup;
		unsigned long long q, period;
		char f[1100], v[64];

		assert_int_equal(sscanf(fakedrfd_get(&s.f, cg, "cpu.max"), "%llu %llu", &q, &period),
				 2);
		/* As systemd: the per-second quota it was given, truncated to whole percent. */
		snprintf(v, sizeof(v), "%llu %llu\n",
			 (unsigned long long)sd_quota((q * 1000000 + period - 1) / period / 10000 *
							      10000, period), period);
		snprintf(f, sizeof(f), "%s/cpu.max", cg);
		assert_int_equal(fakecg_put(s.f.fs.rootfd, f, v), 0);
	}
	sliced_tick(&s, SIZE_MAX);
	assert_int_equal(s.sd.sets, sets);
	assert_knobs_as_planned(&s);
	fakedrfd_teardown(&s.f);
}

static void test_remove_and_exec(void **state)
{
	struct sliced s;
	char cfg[512];

	(void)state;
	sliced_setup(&s);
	assert_int_equal(fakedrfd_start(&s.f), 0);
	/* A process moved into a tenant: a scope in its slice. */
	s.bus.out = tmpfile();
	assert_non_null(s.bus.out);
	assert_int_equal(cgfs_write(&s.f.fs, "drf-web.slice", "cgroup.procs", "4242"), 0);
	rewind(s.bus.out);
	assert_non_null(fgets(cfg, sizeof(cfg), s.bus.out));
	assert_string_equal(cfg, "systemd start drf-exec-4242.scope PIDs=4242 Slice=drf-web.slice "
				 "Description=drfctl exec in drf-web.slice\n");
	fclose(s.bus.out);
	s.bus.out = NULL;
	/* A busy tenant that leaves stays (not stopped: stopping kills); an idle one goes. */
	assert_int_equal(fakecg_put(s.f.fs.rootfd, "drf-web.slice/cgroup.events", "populated 1\n"),
			 0);
	snprintf(cfg, sizeof(cfg), "[agent]\ncgroup-root = auto\nstate-dir = %s\n"
		 "[capacity]\ncpu = 4\nmemory = 4G\n", s.f.statedir);
	assert_int_equal(t_write_file(s.f.conf, cfg), 0);
	/* my-batch's slice holds a unit between restarts: no process, but stopping would stop it. */
	s.sd.busy_unit = "drf-my\\x2dbatch.slice";
	assert_int_equal(drfd_reload(&s.f.d), 0);
	sliced_tick(&s, SIZE_MAX);
	/* drf-team-api, then drf-team (emptied): two stops; web and my-batch kept. */
	assert_int_equal(s.sd.stops, 2);
	assert_int_equal(fakedrfd_get(&s.f, "drf-web.slice", "cpu.weight")[0] != '\0', 1);
	assert_int_equal(fakedrfd_get(&s.f, "drf-my\\x2dbatch.slice", "cpu.weight")[0] != '\0', 1);
	assert_int_equal(fakedrfd_get(&s.f, "drf-team.slice/drf-team-api.slice", "cpu.weight")[0],
			 '\0');
	/* Once the unit is gone, a later tick stops the slice. */
	s.sd.busy_unit = NULL;
	sliced_tick(&s, SIZE_MAX);
	assert_int_equal(s.sd.stops, 3);
	assert_int_equal(fakedrfd_get(&s.f, "drf-my\\x2dbatch.slice", "cpu.weight")[0], '\0');
	fakedrfd_teardown(&s.f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_units_of_paths),
		cmocka_unit_test(test_props),
		cmocka_unit_test(test_props_round_trip),
		cmocka_unit_test(test_daemon_on_slices),
		cmocka_unit_test(test_limit_quota_survives_daemon_reload),
		cmocka_unit_test(test_remove_and_exec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
