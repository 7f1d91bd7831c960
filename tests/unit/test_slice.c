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
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fakecg.h"
#include "fakedrfd.h"
#include "host.h"
#include "log.h"
#include "proto.h"
#include "slice.h"
#include "taskd.h"
#include "tasks.h"
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
	/* A task's service right below a tenant's slice, and nowhere else. */
	assert_int_equal(cgfs_slice_unit("drf-web.slice/drf-task-12.service", u, sizeof(u)), 0);
	assert_string_equal(u, "drf-task-12.service");
	assert_int_equal(cgfs_slice_unit("drf-a.slice/drf-a-b.slice/drf-task-1.service", u,
					 sizeof(u)), 0);
	assert_int_equal(cgfs_slice_unit("drf-task-1.service", u, sizeof(u)), -EPERM);
	assert_int_equal(cgfs_slice_unit("drf-web.slice/drf-task-x.service", u, sizeof(u)), -EPERM);
	assert_int_equal(cgfs_slice_unit("drf-web.slice/drf-task-.service", u, sizeof(u)), -EPERM);
	assert_int_equal(cgfs_slice_unit("drf-web.slice/sshd.service", u, sizeof(u)), -EPERM);
	assert_int_equal(cgfs_slice_unit("drf-web.slice/drf-task-1.service/x", u, sizeof(u)),
			 -EPERM);
	assert_int_equal(cgfs_slice_unit("drf-b.slice/drf-task-1.service", u, sizeof(u)), 0);
	assert_int_equal(cgfs_slice_unit("drf-a.slice/drf-b.slice/drf-task-1.service", u,
					 sizeof(u)), -EPERM);
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
/* A task's service the fake started: where its cgroup is, and the fds it was handed. */
struct fakesvc {
	char unit[64], path[512], exec[1024];
	int in, out, err;
};

struct fakesd {
	int rootfd;
	uint64_t per_sec, period; /* of the unit last set */
	size_t starts, sets, stops, exists, kills;
	struct fakesvc svc[8];
	size_t n_svc;
	const char *busy_unit; /* a slice with an active unit in it (a service between restarts) */
};

static struct fakesvc *svc_of(struct fakesd *sd, const char *unit)
{
	for (size_t i = 0; i < sd->n_svc; i++)
		if (strcmp(sd->svc[i].unit, unit) == 0)
			return &sd->svc[i];
	return NULL;
}

/* A service's cgroup is gone once it ended: systemd collects it (CollectMode). */
static void svc_gone(struct fakesd *sd, struct fakesvc *v)
{
	assert_int_equal(fakecg_remove(sd->rootfd, v->path), 0);
	close(v->in);
	close(v->out);
	close(v->err);
	*v = sd->svc[--sd->n_svc];
}

static int unit_path(struct fakesd *sd, const char *unit, char *path, size_t len)
{
	size_t o = 0, n = strlen(unit) - strlen(".slice");
	struct fakesvc *v = svc_of(sd, unit);

	if (v) {
		snprintf(path, len, "%s", v->path);
		return 0;
	}
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

static void set_props(struct fakesd *sd, const char *unit, const struct cgfs_prop *p, size_t n);
static int sd_set(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n);

/*
 * A task's service: its cgroup made in its Slice= with its properties as
 * systemd writes them, its stdio fds duplicated, its command running.
 */
static int start_service(struct fakesd *sd, const char *unit, const struct cgfs_prop *p, size_t n)
{
	struct fakesvc *v;
	char slice[400], f[1200];
	int r;

	if (svc_of(sd, unit))
		return -EEXIST;
	assert_true(sd->n_svc < sizeof(sd->svc) / sizeof(sd->svc[0]));
	v = &sd->svc[sd->n_svc];
	*v = (struct fakesvc){ .in = -1, .out = -1, .err = -1 };
	snprintf(v->unit, sizeof(v->unit), "%s", unit);
	for (size_t i = 0; i < n; i++) {
		int *fd = strcmp(p[i].name, "StandardInputFileDescriptor") == 0    ? &v->in
			  : strcmp(p[i].name, "StandardOutputFileDescriptor") == 0 ? &v->out
			  : strcmp(p[i].name, "StandardErrorFileDescriptor") == 0  ? &v->err
										   : NULL;

		if (fd) {
			assert_int_equal(p[i].type, CGFS_PROP_FD);
			*fd = fcntl((int)p[i].u, F_DUPFD_CLOEXEC, 3);
			assert_true(*fd >= 0);
		}
		if (strcmp(p[i].name, "Slice") == 0)
			unit_path(sd, p[i].s, slice, sizeof(slice));
		if (strcmp(p[i].name, "ExecStart") == 0)
			cgfs_prop_format(&p[i], v->exec, sizeof(v->exec));
	}
	snprintf(v->path, sizeof(v->path), "%s/%.64s", slice, unit);
	r = fakecg_ops.mkdir(NULL, sd->rootfd, v->path);
	if (r < 0)
		return r;
	sd->n_svc++;
	sd_set(sd, unit, p, n);
	sd->sets--;
	snprintf(f, sizeof(f), "%s/cgroup.events", v->path);
	assert_int_equal(fakecg_put(sd->rootfd, f, "populated 1\n"), 0);
	return 0;
}

static int sd_start(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n)
{
	struct fakesd *sd = ctx;
	char path[1024];
	int r;

	sd->starts++;
	if (strstr(unit, ".scope"))
		return 0;
	if (strstr(unit, ".service"))
		return start_service(sd, unit, p, n);
	unit_path(sd, unit, path, sizeof(path));
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
		/* A transient unit starts with the properties it was given. */
		set_props(sd, unit, p, n);
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

/* The unit's properties, written to its cgroup's files as systemd's cgroup.c does. */
static void set_props(struct fakesd *sd, const char *unit, const struct cgfs_prop *p, size_t n)
{
	char path[1024], v[64];

	unit_path(sd, unit, path, sizeof(path));
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
}

static int sd_set(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n)
{
	struct fakesd *sd = ctx;

	sd->sets++;
	set_props(sd, unit, p, n);
	return 0;
}

static int sd_stop(void *ctx, const char *unit)
{
	struct fakesd *sd = ctx;
	char path[1024];

	sd->stops++;
	if (svc_of(sd, unit)) {
		svc_gone(sd, svc_of(sd, unit));
		return 0;
	}
	if (strstr(unit, ".service"))
		return -ENOENT; /* NoSuchUnit */
	unit_path(sd, unit, path, sizeof(path));
	return fakecg_ops.rmdir(NULL, sd->rootfd, path);
}

static int sd_busy(void *ctx, const char *unit)
{
	struct fakesd *sd = ctx;

	return sd->busy_unit && strcmp(unit, sd->busy_unit) == 0;
}


/* Every process of the unit killed: a service ends, and is collected. */
static int sd_kill(void *ctx, const char *unit, int sig)
{
	struct fakesd *sd = ctx;
	struct fakesvc *v = svc_of(sd, unit);

	sd->kills++;
	if (!v)
		return -ENOENT;
	assert_int_equal(sig, SIGKILL);
	svc_gone(sd, v);
	return 0;
}

static const struct cgfs_bus_ops fakesd_ops = {
	.name = "fake systemd", .start = sd_start, .set = sd_set, .stop = sd_stop,
	.busy = sd_busy, .kill = sd_kill,
};

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

/* web's tasks: any user's (access.h); the others are root's alone. */
static const char *tenants = "[capacity]\ncpu = 4\nmemory = 4G\n"
			     "[tenant web]\nweight = 2\ncpu = 1\nmemory = 1G\naccess = *\n"
			     "[tenant my-batch]\ncpu = 2\nmemory = 512M\n"
			     "[tenant api]\ncgroup = team/api\ncpu = 1\nmemory = 256M\n";

/* The config: cgroup-root = auto, with agent's keys and text's sections. */
static void sliced_write(struct sliced *s, const char *agent, const char *text)
{
	FILE *fp = fopen(s->f.conf, "w");

	assert_non_null(fp);
	fprintf(fp, "[agent]\ncgroup-root = auto\nstate-dir = %s\n%s%s", s->f.statedir, agent,
		text);
	assert_int_equal(fclose(fp), 0);
}

static void sliced_setup_with(struct sliced *s, const char *agent, const char *text)
{
	char err[1024];

	assert_int_equal(fakedrfd_setup(&s->f, "", text), 0);
	/* cgroup-root = auto, on a host whose init is systemd. */
	sliced_write(s, agent, text);
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

/* Knob k of cgroup cg ("": the root) is val, as the kernel holds it. */
static void assert_knob(struct sliced *s, const char *cg, enum drf_knob k, const char *val)
{
	const char *file = drf_knob_file(k, NULL);
	char want[DRF_KNOB_LEN];

	snprintf(want, sizeof(want), "%s", val);
	if (strncmp(file, "memory.", 7) == 0 && strcmp(want, "max") != 0)
		snprintf(want, sizeof(want), "%llu",
			 strtoull(val, NULL, 10) / FAKECG_PAGE * FAKECG_PAGE);
	if (strcmp(fakedrfd_get(&s->f, cg, file), want) != 0)
		fail_msg("%s/%s: '%s', planned '%s'", cg, file, fakedrfd_get(&s->f, cg, file), want);
}

/* Every knob of the plan, as read back from the files systemd wrote: the tenants', the root's. */
static void assert_knobs_as_planned(struct sliced *s)
{
	const struct drf_plan *p = &s->f.d.plan;
	double low = 0;

	for (size_t i = 0; i < s->f.d.decl.cfg.n_tenants; i++)
		for (int k = 0; k < DRF_NKNOBS; k++)
			if (p->knobs[i].set[k])
				assert_knob(s, s->f.d.decl.cfg.tenants[i].cgroup, (enum drf_knob)k,
					    p->knobs[i].val[k]);
	for (size_t i = 0; i < s->f.d.decl.cfg.n_tenants; i++)
		low += strtod(p->knobs[i].val[DRF_KNOB_MEMORY_LOW], NULL);
	assert_true(strtod(p->root->val[DRF_KNOB_MEMORY_LOW], NULL) == low);
	assert_knob(s, "", DRF_KNOB_MEMORY_LOW, p->root->val[DRF_KNOB_MEMORY_LOW]);
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
	/*
	 * Each slice started through systemd with its knobs, one call a slice (team's
	 * first, for api), drf.slice's MemoryLow set (the tenants' sum), no property
	 * set after, no file written.
	 */
	assert_int_equal(s.sd.starts, 4);
	assert_int_equal(s.sd.exists, 0);
	assert_int_equal(s.sd.sets, 1);
	assert_int_equal(s.bus.calls, 5);
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

/*
 * A bus whose answers come when the test gives them (as the real one's come
 * when the loop reads them): submits wait in a queue of at most cap; the
 * calls are made on the fake systemd when answered.
 */
struct lazycall {
	bool start;
	char unit[256];
	struct cgfs_prop p[2 * CGFS_PROPS_MAX];
	size_t n;
	void (*fn)(void *data, int err);
	void *data;
};

struct lazybus {
	struct fakesd *sd;
	struct lazycall *q;
	size_t n, cap, most, submits, props;
	size_t starts, sets;
};

static struct lazybus *lazy_of(void *ctx)
{
	return ctx;
}

static int lazy_start(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n)
{
	return sd_start(lazy_of(ctx)->sd, unit, p, n);
}

static int lazy_set(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n)
{
	return sd_set(lazy_of(ctx)->sd, unit, p, n);
}

static int lazy_stop(void *ctx, const char *unit)
{
	return sd_stop(lazy_of(ctx)->sd, unit);
}

static int lazy_busy(void *ctx, const char *unit)
{
	return sd_busy(lazy_of(ctx)->sd, unit);
}

static int lazy_kill(void *ctx, const char *unit, int sig)
{
	return sd_kill(lazy_of(ctx)->sd, unit, sig);
}

static int lazy_submit(void *ctx, bool start, const char *unit, const struct cgfs_prop *p,
		       size_t n, void (*fn)(void *data, int err), void *data)
{
	struct lazybus *b = ctx;
	struct lazycall *c;

	if (b->n >= b->cap)
		return -EAGAIN;
	assert_true(n <= 2 * CGFS_PROPS_MAX);
	c = &b->q[b->n++];
	*c = (struct lazycall){ .start = start, .n = n, .fn = fn, .data = data };
	snprintf(c->unit, sizeof(c->unit), "%s", unit);
	memcpy(c->p, p, n * sizeof(*p));
	b->most = b->n > b->most ? b->n : b->most;
	b->submits++;
	b->props += n;
	b->starts += start;
	b->sets += !start;
	return 0;
}

static const struct cgfs_bus_ops lazybus_ops = {
	.name = "lazy", .start = lazy_start, .set = lazy_set, .stop = lazy_stop,
	.busy = lazy_busy, .kill = lazy_kill, .submit = lazy_submit,
};

/* The calls waiting, made on the fake systemd and answered (err: refused, nothing made). */
static void lazy_answer(struct lazybus *b, int err)
{
	size_t n = b->n;
	struct lazycall *q = malloc((n + 1) * sizeof(*q));

	assert_non_null(q);
	memcpy(q, b->q, n * sizeof(*q));
	b->n = 0;
	for (size_t i = 0; i < n; i++) {
		int r = err;

		if (!r && q[i].start)
			r = sd_start(b->sd, q[i].unit, q[i].p, q[i].n);
		else if (!r)
			r = sd_set(b->sd, q[i].unit, q[i].p, q[i].n);
		q[i].fn(q[i].data, r);
	}
	free(q);
}

/* The loop run until nothing is ready: every step the answers made ready. */
static size_t run_loop(sd_event *ev)
{
	size_t turns = 0;

	while (sd_event_run(ev, 0) > 0)
		turns++;
	return turns;
}

/*
 * N tenants with weights and demands of different sizes, more than the host
 * has of either resource, as a 2-core, 2G host with 1,000 tenants sees them:
 * a weight changed moves every tenant's allocation, by a few hundred bytes.
 */
static char *many_tenants(int n, int heavy_weight)
{
	size_t len = (size_t)n * 80 + 256, off = 0;
	char *t = malloc(len);

	assert_non_null(t);
	off += (size_t)snprintf(t, len, "[capacity]\ncpu = 2\nmemory = 2G\n");
	for (int i = 0; i < n; i++)
		off += (size_t)snprintf(t + off, len - off,
					"[tenant t%d]\nweight = %d\ncpu = 0.%d\nmemory = %dM\n", i,
					i == 7 ? heavy_weight : 1 + i % 5, 1 + i % 7, 1 + i % 13);
	return t;
}

/*
 * 1,000 tenants through a bus that answers later: each slice is one start
 * with its knobs, at most the bus's cap under way, each step bounded (the
 * loop serves its other sources between two); the pass ends, and a waiter
 * runs, only once every answer came; a refused start is retried at the next
 * tick. A reload that changes one tenant's weight costs one call, for that
 * tenant: the others' memory moves within a page, their weights not at all.
 */
static int settled_count;
static void count_settled(struct drfd *d, void *data)
{
	(void)d;
	(void)data;
	settled_count++;
}

static void test_slices_at_scale(void **state)
{
	enum { N = 1000, CAP = 64 };
	struct sliced s;
	struct lazybus lb = { 0 };
	char *text = many_tenants(N, 3);
	size_t answers = 0, turns = 0, starts, calls;
	sd_event *ev;

	(void)state;
	sliced_setup_with(&s, "", text);
	free(text);
	lb.sd = &s.sd;
	lb.cap = CAP;
	lb.q = calloc(CAP, sizeof(*lb.q));
	assert_non_null(lb.q);
	s.bus.inner = &lazybus_ops;
	s.bus.inner_ctx = &lb;
	assert_int_equal(sd_event_new(&ev), 0);
	s.f.d.event = ev;
	assert_int_equal(fakedrfd_start(&s.f), 0);
	/* The first step filled the bus and waits: nothing started yet, not settled. */
	assert_int_equal(lb.n, CAP);
	assert_true(drf_reconcile_busy(&s.f.d.rc));
	settled_count = 0;
	assert_int_equal(drfd_when_settled(&s.f.d, count_settled, NULL), 0);
	/* The first 10 answers refused: those tenants are retried at the next tick. */
	while (drf_reconcile_busy(&s.f.d.rc)) {
		size_t before = lb.submits;

		assert_true(lb.n > 0);
		lazy_answer(&lb, answers++ == 0 ? -EIO : 0);
		turns += run_loop(ev);
		/* A step works on at most step_nodes nodes, and the bus takes at most CAP. */
		assert_true(lb.submits - before <= s.f.d.rc.step_nodes);
		assert_true(lb.most <= CAP);
	}
	assert_int_equal(settled_count, 1);
	assert_int_equal(lb.starts, N);
	assert_int_equal(lb.sets, 1); /* drf.slice's MemoryLow */
	assert_true(s.f.d.last.errors >= 1);
	assert_true(s.f.d.last.retrying >= 1);
	/* Each answered batch was taken in a turn or a few: many turns, each bounded. */
	assert_true(turns >= N / CAP);
	/* The next tick starts the refused ones again; then every knob is as planned. */
	starts = lb.starts;
	sliced_tick(&s, 0);
	while (drf_reconcile_busy(&s.f.d.rc)) {
		lazy_answer(&lb, 0);
		run_loop(ev);
	}
	/* The first batch refused: drf.slice's set and CAP - 1 starts. */
	assert_int_equal(lb.starts - starts, CAP - 1);
	assert_int_equal(lb.sets, 2);
	assert_int_equal(s.f.d.last.retrying, 0);
	/* The calls, as status counts them: one a node, and the refused ones again. */
	assert_int_equal(s.f.d.rc.total_applies, 1 + N + CAP);
	assert_knobs_as_planned(&s);

	/* Steady: no call. */
	calls = lb.submits;
	sliced_tick(&s, SIZE_MAX);
	while (drf_reconcile_busy(&s.f.d.rc) || lb.n) {
		lazy_answer(&lb, 0);
		run_loop(ev);
	}
	assert_int_equal(lb.submits, calls);
	if (geteuid() != 0) {
		fakedrfd_teardown(&s.f);
		free(lb.q);
		t_needs_root("the reload over the socket below, which drfd runs for root alone; "
			     "the 1,000 slices' start and steady ticks above passed");
	}

	/*
	 * One weight changed, reloaded over the socket as systemctl reload does:
	 * the answer comes once the write is made, not before.
	 */
	text = many_tenants(N, 4);
	sliced_write(&s, "", text);
	free(text);
	calls = lb.submits;
	starts = lb.props;
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		char why[256], answer[512] = "";
		ssize_t got = 0, r;
		int fd;

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", s.f.dir);
		if (drfd_listen(&s.f.d, sa.sun_path, NULL, why, sizeof(why)) < 0)
			fail_msg("drfd_listen: %s", why);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		assert_true(fd >= 0);
		assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(write(fd, "reload\n", 7), 7);
		/* As `printf reload | socat` does: the client's side shut, the answer awaited. */
		assert_int_equal(shutdown(fd, SHUT_WR), 0);
		run_loop(ev);
		/* In force, its calls under way (the tenant's, drf.slice's): no answer yet. */
		assert_int_equal(s.f.d.reloads, 1);
		assert_true(drf_reconcile_busy(&s.f.d.rc));
		assert_int_equal(lb.n, 2);
		assert_int_equal(read(fd, answer, sizeof(answer)), -1);
		assert_int_equal(errno, EAGAIN);
		lazy_answer(&lb, 0);
		run_loop(ev);
		while ((r = read(fd, answer + got, sizeof(answer) - 1 - (size_t)got)) > 0)
			got += r;
		answer[got] = '\0';
		assert_false(drf_reconcile_busy(&s.f.d.rc));
		assert_true(strncmp(answer, "drfd-reload 1 ok\n", 17) == 0);
		assert_null(strstr(answer, "still being written"));
		close(fd);
	}
	/*
	 * The one tenant's call: its cpu.weight, and its memory.low (its share
	 * moved); drf.slice's: its MemoryLow, the tenants' sum, moved with it.
	 */
	assert_int_equal(lb.submits - calls, 2);
	assert_int_equal(lb.props - starts, 3);
	assert_knobs_as_planned(&s);
	fakedrfd_teardown(&s.f);
	free(lb.q);
}

/*
 * A tenant that leaves while its slice is being started: its slice is made
 * after it left (systemd answers later), and removed then, not left behind.
 */
static void test_leave_while_starting(void **state)
{
	struct sliced s;
	struct lazybus lb = { 0 };
	sd_event *ev;

	(void)state;
	sliced_setup(&s);
	lb.sd = &s.sd;
	lb.cap = 16;
	lb.q = calloc(lb.cap, sizeof(*lb.q));
	assert_non_null(lb.q);
	s.bus.inner = &lazybus_ops;
	s.bus.inner_ctx = &lb;
	assert_int_equal(sd_event_new(&ev), 0);
	s.f.d.event = ev;
	assert_int_equal(fakedrfd_start(&s.f), 0);
	assert_int_equal(lb.n, 5); /* drf.slice's set, drf-team.slice, web, my-batch, team-api */
	/* web leaves before systemd answered. */
	sliced_write(&s, "", "[capacity]\ncpu = 4\nmemory = 4G\n"
			     "[tenant my-batch]\ncpu = 2\nmemory = 512M\n"
			     "[tenant api]\ncgroup = team/api\ncpu = 1\nmemory = 256M\n");
	assert_int_equal(drfd_reload(&s.f.d), 0);
	run_loop(ev);
	assert_true(drf_reconcile_busy(&s.f.d.rc));
	lazy_answer(&lb, 0);
	run_loop(ev);
	/*
	 * drf.slice's set was under way at the reload: its new MemoryLow (web's
	 * share gone) is sent once it is answered, in the same pass.
	 */
	assert_true(drf_reconcile_busy(&s.f.d.rc));
	assert_int_equal(lb.n, 1);
	assert_false(lb.q[0].start);
	assert_string_equal(lb.q[0].unit, "drf.slice");
	lazy_answer(&lb, 0);
	run_loop(ev);
	assert_false(drf_reconcile_busy(&s.f.d.rc));
	/* Made by its late start, then stopped: nothing of web is left. */
	assert_string_equal(fakedrfd_get(&s.f, "drf-web.slice", "cgroup.type"), "");
	assert_int_equal(s.f.d.rc.n_orphans, 0);
	assert_true(s.sd.stops >= 1);
	assert_knobs_as_planned(&s);
	fakedrfd_teardown(&s.f);
	free(lb.q);
}

/* A clock that moves a millisecond each time it is read, as a slow host's would. */
static uint64_t ticking_now(void *ctx, clockid_t id)
{
	struct drf_fake_clock *c = ctx;

	c->mono += 1000;
	c->real += 1000;
	return id == CLOCK_MONOTONIC ? c->mono : c->real;
}

/*
 * A tick of 1,000 tenants under the loop is taken in steps: its sample spans
 * several turns, each of them bounded, the loop free between two; the rest of
 * the tick (the history, the state file, the next tick's timer) follows the
 * last step, once; every tenant was sampled.
 */
static void test_tick_in_steps(void **state)
{
	enum { N = 1000 };
	struct fakedrfd f;
	char *text = many_tenants(N, 3);
	uint64_t samples, begun;
	size_t turns = 0;
	sd_event *ev;

	(void)state;
	assert_int_equal(fakedrfd_setup(&f, "", text), 0);
	free(text);
	assert_int_equal(sd_event_new(&ev), 0);
	f.d.event = ev;
	assert_int_equal(fakedrfd_start(&f), 0);
	while (drf_reconcile_busy(&f.d.rc) || f.d.use.sampling)
		assert_true(sd_event_run(ev, 0) > 0);
	f.clock.now = ticking_now;
	samples = f.d.use.samples;
	begun = f.now.mono;
	drfd_tick(&f.d, 0);
	/* The first turn sampled part of the tenants: the rest waits for the loop. */
	assert_true(f.d.use.sampling);
	assert_true(f.d.use.pos > 0 && f.d.use.pos < N);
	assert_int_equal(f.d.use.samples, samples);
	while (f.d.use.sampling) {
		size_t before = f.d.use.pos;

		assert_true(sd_event_run(ev, 0) > 0);
		turns++;
		/* A turn's part: at most what 20 ms of this clock's reads allow. */
		assert_true(f.d.use.pos - before <= 20 * 16 || !f.d.use.sampling);
	}
	assert_true(turns >= 2);
	assert_int_equal(f.d.use.samples, samples + 1);
	/* Each tenant's newest sample is this tick's, stamped at its own step. */
	for (size_t i = 0; i < N; i++)
		assert_true(f.d.use.t[i].now.t_us > begun);
	f.clock.now = drf_fake_clock_now;
	fakedrfd_teardown(&f);
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

/* drfd's answer to req from a client of effective uid euid (SO_PEERCRED). */
static char *ask(struct sliced *s, uid_t euid, const char *req)
{
	char *out = NULL;
	size_t len = 0;
	int sv[2];
	gid_t saved[256];
	int ng = getgroups(256, saved);

	/* As a user with no supplementary group, its gid its uid. */
	assert_true(ng >= 0);
	assert_int_equal(setgroups(0, NULL), 0);
	assert_int_equal(setegid(euid), 0);
	assert_int_equal(seteuid(euid), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(seteuid(0), 0);
	assert_int_equal(setegid(0), 0);
	assert_int_equal(setgroups((size_t)ng, saved), 0);
	assert_int_equal(drfd_tasks_answer(&s->f.d, sv[0], 0, req, &out, &len), 1);
	close(sv[0]);
	close(sv[1]);
	return out;
}

/* A submit to web with --cpu 0.5 --memory 256M, as drfctl sends it; the id drfd answers. */
static uint64_t submit_web(struct sliced *s, uid_t euid, const char *script)
{
	char req[1024], *e = drf_proto_escape(script), *a;
	uint64_t id;

	assert_non_null(e);
	snprintf(req, sizeof(req), "task-submit web /tmp 3 0.5 268435456 0 0 0 0 sh -c %s", e);
	free(e);
	a = ask(s, euid, req);
	if (sscanf(a, "drfd-task 1 ok %" SCNu64, &id) != 1)
		fail_msg("submit answered: %s", a);
	free(a);
	return id;
}

static const struct drf_task *task_of(struct sliced *s, uint64_t id)
{
	for (size_t i = 0; i < s->f.d.tasks->n; i++)
		if (s->f.d.tasks->t[i].id == id)
			return &s->f.d.tasks->t[i];
	fail_msg("no task %" PRIu64, id);
	return NULL;
}

/*
 * The service's command as systemd runs it: the real supervisor, its stdin
 * and stdout the fds drfd handed to systemd. Its exit code.
 */
static int run_service(struct fakesvc *v)
{
	static const char head[] = "ExecStart=/usr/sbin/drfd --task-supervisor-stdio ";
	int status;
	pid_t pid;

	assert_int_equal(strncmp(v->exec, head, sizeof(head) - 1), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (dup2(v->in, 0) < 0 || dup2(v->out, 1) < 0)
			_exit(120);
		/* As systemd starts a service: nothing open past 0, 1 and 2. */
		close_range(3, ~0U, 0);
		_exit(drf_task_supervise_stdio(v->exec + sizeof(head) - 1));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_tasks_on_slices(void **state)
{
	t_needs_root("it asks drfd as other users: seteuid, setgroups");
	struct sliced s;
	struct drf_spawn_units units = { .exe = "/usr/sbin/drfd", .errfd = STDERR_FILENO };
	struct fakesvc *v;
	const struct drf_task *t;
	char path[4400], buf[256], *a;
	size_t sets, calls, made;
	uint64_t id, id2, id3;

	(void)state;
	sliced_setup(&s);
	units.bus = &cgfs_bus_recording_ops;
	units.bus_ctx = &s.bus;
	s.f.env.spawn = &drf_spawn_unit_ops;
	s.f.env.spawn_ctx = &units;
	assert_int_equal(fakedrfd_start(&s.f), 0);
	assert_non_null(s.f.d.tasks);

	/* Submitted by uid 65534: started at once as a service in web's slice. */
	id = submit_web(&s, 65534, "id -u; id -g; exit 3");
	t = task_of(&s, id);
	assert_int_equal(t->state, DRF_TASK_RUNNING);
	snprintf(path, sizeof(path), "drf-web.slice/drf-task-%" PRIu64 ".service", id);
	assert_string_equal(t->cgroup, path);
	assert_int_equal(s.sd.n_svc, 1);
	v = &s.sd.svc[0];
	assert_string_equal(v->path, path);
	/* Started with its limits: they are in its cgroup from its first instant. */
	assert_string_equal(fakedrfd_get(&s.f, path, "cpu.max"), "50000 100000");
	assert_string_equal(fakedrfd_get(&s.f, path, "memory.max"), "268435456");
	assert_string_equal(fakedrfd_get(&s.f, path, "memory.swap.max"), "0");
	/* Its stdin: the task's text from drfd's memory, whom to run as included. */
	{
		ssize_t n = read(v->in, buf, sizeof(buf) - 1);
		struct drf_task parsed = { 0 };
		char *text;

		assert_true(n > 0);
		buf[n] = '\0';
		assert_int_equal(lseek(v->in, 0, SEEK_CUR) < 0, 1); /* a pipe */
		text = drf_tasks_text(t);
		assert_non_null(text);
		assert_int_equal(strncmp(text, buf, (size_t)n), 0);
		/* Put back what was read, for the supervisor below: a new pipe with all of it. */
		{
			int p[2];
			size_t len = strlen(text);

			assert_int_equal(pipe(p), 0);
			assert_int_equal(write(p[1], text, len), (ssize_t)len);
			close(p[1]);
			close(v->in);
			v->in = p[0];
		}
		assert_int_equal(drf_tasks_parse_file(&parsed, text), 0);
		assert_int_equal(parsed.uid, 65534);
		drf_task_clear(&parsed);
		free(text);
	}
	/* No cgroup made or written by drfd: systemd made it. */
	assert_int_equal(s.f.rec.changes, 0);

	/* Steady: nothing asked of systemd, the service's knobs read back as planned. */
	sets = s.sd.sets;
	calls = s.bus.calls;
	for (int i = 0; i < 3; i++)
		sliced_tick(&s, SIZE_MAX);
	assert_int_equal(s.bus.calls, calls);
	/* Changed behind systemd's back: put back as the service's property. */
	assert_int_equal(fakedrfd_put(&s.f, path, "memory.max", "max"), 0);
	sliced_tick(&s, SIZE_MAX);
	assert_int_equal(s.sd.sets, sets + 1);
	assert_string_equal(fakedrfd_get(&s.f, path, "memory.max"), "268435456");

	/* It runs: the real supervisor, as systemd would start it, as uid 65534. */
	assert_int_equal(run_service(v), 0);
	svc_gone(&s.sd, v);
	sliced_tick(&s, SIZE_MAX);
	t = task_of(&s, id);
	assert_int_equal(t->state, DRF_TASK_DONE);
	assert_string_equal(t->result, "exited");
	assert_int_equal(t->exit_code, 3);
	{
		char out[4400];
		FILE *o;

		snprintf(out, sizeof(out), "%s/%" PRIu64 "/stdout", s.f.d.tasks->dir, id);
		o = fopen(out, "r");
		assert_non_null(o);
		assert_non_null(fgets(buf, sizeof(buf), o));
		assert_string_equal(buf, "65534\n");
		assert_non_null(fgets(buf, sizeof(buf), o));
		assert_string_equal(buf, "65534\n");
		fclose(o);
	}

	/* Cancelled: every process of its service killed through systemd. */
	id2 = submit_web(&s, 65534, "sleep 600");
	assert_int_equal(s.sd.n_svc, 1);
	a = ask(&s, 1000, "task-cancel 2");
	assert_int_equal(strncmp(a, "drfd-task 1 refused", 19), 0); /* not uid 1000's */
	free(a);
	assert_int_equal(s.sd.kills, 0);
	a = ask(&s, 65534, "task-cancel 2");
	assert_int_equal(strncmp(a, "drfd-task 1 ok", 14), 0);
	free(a);
	assert_int_equal(s.sd.kills, 1);
	assert_int_equal(s.sd.n_svc, 0);
	sliced_tick(&s, SIZE_MAX);
	t = task_of(&s, id2);
	assert_int_equal(t->state, DRF_TASK_DONE);
	assert_string_equal(t->result, "cancelled");

	/* A restart re-adopts a running one: neither started again nor stopped. */
	id3 = submit_web(&s, 65534, "sleep 600");
	assert_int_equal(s.sd.n_svc, 1);
	made = s.sd.starts - s.sd.exists;
	assert_int_equal(fakedrfd_restart(&s.f), 0);
	t = task_of(&s, id3);
	assert_int_equal(t->state, DRF_TASK_RUNNING);
	assert_true(t->readopted);
	for (int i = 0; i < 3; i++)
		sliced_tick(&s, SIZE_MAX);
	assert_int_equal(s.sd.n_svc, 1);
	assert_int_equal(s.sd.kills, 1);
	assert_int_equal(s.sd.stops, 0);
	/* The restart started nothing new: its slices were there, and so was the task. */
	assert_int_equal(s.sd.starts - s.sd.exists, made);
	/* It ends with drfd restarted: its end recorded. */
	v = &s.sd.svc[0];
	snprintf(path, sizeof(path), "%s/%" PRIu64 "/exit", s.f.d.tasks->dir, id3);
	assert_int_equal(t_write_file(path, "exit 0\nsignal -1\n"), 0);
	svc_gone(&s.sd, v);
	sliced_tick(&s, SIZE_MAX);
	t = task_of(&s, id3);
	assert_string_equal(t->result, "exited");
	assert_int_equal(t->exit_code, 0);
	fakedrfd_teardown(&s.f);
}

/* A task's service fails to start: the task fails, nothing runs, nothing is left. */
static void test_task_unit_fails(void **state)
{
	t_needs_root("it asks drfd as other users: seteuid, setgroups");
	struct sliced s;
	struct drf_spawn_units units = { .exe = "/usr/sbin/drfd", .errfd = STDERR_FILENO };
	const struct drf_task *t;
	uint64_t id;

	(void)state;
	sliced_setup(&s);
	units.bus = &cgfs_bus_recording_ops;
	units.bus_ctx = &s.bus;
	s.f.env.spawn = &drf_spawn_unit_ops;
	s.f.env.spawn_ctx = &units;
	assert_int_equal(fakedrfd_start(&s.f), 0);
	s.bus.fault = (struct drf_fault){ .err = EIO, .ops = CGFS_BUS_START, .path = ".service" };
	id = submit_web(&s, 65534, "true");
	t = task_of(&s, id);
	assert_int_equal(t->state, DRF_TASK_DONE);
	assert_string_equal(t->result, "failed");
	assert_int_equal(s.sd.n_svc, 0);
	s.bus.fault = (struct drf_fault){ 0 };
	/* The next one runs. */
	id = submit_web(&s, 65534, "true");
	assert_int_equal(task_of(&s, id)->state, DRF_TASK_RUNNING);
	assert_int_equal(s.sd.n_svc, 1);
	svc_gone(&s.sd, &s.sd.svc[0]);
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
		cmocka_unit_test(test_slices_at_scale),
		cmocka_unit_test(test_tick_in_steps),
		cmocka_unit_test(test_leave_while_starting),
		cmocka_unit_test(test_remove_and_exec),
		cmocka_unit_test(test_tasks_on_slices),
		cmocka_unit_test(test_task_unit_fails),
	};
	struct rlimit rl;

	/* 1,000 tenants' cgroups are open at once (test_slices_at_scale): more files
	 * than a login's soft limit (1,024); raised to the hard limit, as drfd raises
	 * its own at start (drfd_tune_process). */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			perror("test_slice: setrlimit RLIMIT_NOFILE");
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
