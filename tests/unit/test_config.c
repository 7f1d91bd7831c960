// SPDX-License-Identifier: MIT
/*
 * Config loading: every error path with its FILE:LINE, and what valid files mean.
 * Each test writes its files into a fresh mkdtemp() directory.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "planner.h"
#include "startkeys.h"
#include "clock.h"
#include "testlib.h"

#define G (1024.0 * 1024 * 1024)

static char dir[64];
static char main_path[128];
static char err[1024];

static int failing_cpus(void *ctx, double *ret)
{
	(void)ctx;
	(void)ret;
	return -EIO;
}


static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/drf-config-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(main_path, sizeof(main_path), "%s/drfd.conf", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_tenant_file(const char *name, const char *text)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/tenants.d", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/tenants.d/%s", dir, name);
	assert_int_equal(t_write_file(path, text), 0);
}

static int load_with(const char *text, const struct drf_host_ops *host, struct drf_config *c)
{
	assert_int_equal(t_write_file(main_path, text), 0);
	return drf_config_load(main_path, host, c, err, sizeof(err));
}


/*
 * Loading fails, and the message starts with "<where>:<line>: " and contains
 * `phrase`. where is the main file unless a tenants file name is given.
 */
static void expect_error_in(const char *text, const char *where, int line, const char *phrase)
{
	struct drf_config c;
	char prefix[256];
	int r = load_with(text, &t_fake_host, &c);

	if (r == 0) {
		drf_config_free(&c);
		print_error("config loaded, expected an error containing '%s'\n", phrase);
		fail();
	}
	if (line > 0)
		snprintf(prefix, sizeof(prefix), "%s:%d: ", where, line);
	else
		snprintf(prefix, sizeof(prefix), "%s: ", where);
	if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, phrase)) {
		print_error("error '%s'\nexpected to start with '%s' and contain '%s'\n", err, prefix,
			    phrase);
		fail();
	}
}

static void expect_error(const char *text, int line, const char *phrase)
{
	expect_error_in(text, main_path, line, phrase);
}

/* The lines of err, each "MAIN:LINE: ...": their LINEs into lines; how many. */
static int error_lines(int *lines, int max)
{
	char prefix[160];
	const char *l = err;
	int n = 0;

	snprintf(prefix, sizeof(prefix), "%s:", main_path);
	while (*l && n < max) {
		/* the last line may say that more were left out */
		if (strcmp(l, DRF_CONFIG_MORE_ERRORS) == 0)
			break;
		assert_int_equal(strncmp(l, prefix, strlen(prefix)), 0);
		lines[n++] = atoi(l + strlen(prefix));
		l += strcspn(l, "\n");
		l += *l == '\n';
	}
	return n;
}

/*
 * A file's independent errors are all said, a line each, in the file's order;
 * a section's error ends the reading (what follows it would be misread); ten
 * at most.
 */
static void test_many_errors(void **state)
{
	struct drf_config c;
	char text[2048];
	int lines[16], n;
	size_t off;

	(void)state;
	assert_int_not_equal(load_with("[agent]\nintervl = 1s\n[capacity]\ncpu = 4\nmemory = 8GB\n"
				       "[tenant a]\ncpu = 150%\nweight = 0\nbogus\n[tenant b]\n"
				       "memory = 1X\nmemory = 2X\n",
				       &t_fake_host, &c), 0);
	n = error_lines(lines, 16);
	assert_int_equal(n, 7);
	assert_int_equal(lines[0], 2);  /* unknown key */
	assert_int_equal(lines[1], 5);  /* 8GB */
	assert_int_equal(lines[2], 7);  /* 150% */
	assert_int_equal(lines[3], 8);  /* weight 0 */
	assert_int_equal(lines[4], 9);  /* no '=' */
	assert_int_equal(lines[5], 11); /* 1X */
	assert_int_equal(lines[6], 12); /* set twice */
	assert_non_null(strstr(err, "did you mean '8G'"));
	assert_null(strstr(err, DRF_CONFIG_MORE_ERRORS));

	/* a section's error: nothing after it is said */
	assert_int_not_equal(load_with("[capacity]\ncpu = 4\nmemory = 8G\n[tenant a]\ncpu = x\n"
				       "[tenant .bad]\ncpu = y\n[tenant c]\ncpu = z\n",
				       &t_fake_host, &c), 0);
	n = error_lines(lines, 16);
	assert_int_equal(n, 2);
	assert_int_equal(lines[0], 5);
	assert_int_equal(lines[1], 6);

	/* at most ten */
	off = (size_t)snprintf(text, sizeof(text), "[capacity]\ncpu = 4\nmemory = 8G\n");
	for (int i = 0; i < 14; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "[tenant t%d]\ncpu = bad\n", i);
	assert_int_not_equal(load_with(text, &t_fake_host, &c), 0);
	assert_int_equal(error_lines(lines, 16), 10);
	assert_int_equal(lines[9], 23);
	assert_non_null(strstr(err, "\n" DRF_CONFIG_MORE_ERRORS));
	/* exactly ten: none left out, none said to be */
	off = (size_t)snprintf(text, sizeof(text), "[capacity]\ncpu = 4\nmemory = 8G\n");
	for (int i = 0; i < 10; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "[tenant t%d]\ncpu = bad\n", i);
	assert_int_not_equal(load_with(text, &t_fake_host, &c), 0);
	assert_int_equal(error_lines(lines, 16), 10);
	assert_null(strstr(err, DRF_CONFIG_MORE_ERRORS));

	/* long errors past err's 1 KiB: whole lines, then the line that says so */
	off = (size_t)snprintf(text, sizeof(text), "[capacity]\ncpu = 4\nmemory = 8G\n[agent]\n");
	for (int i = 0; i < 8; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%c%0150d = 1\n", 'a' + i, 0);
	assert_int_not_equal(load_with(text, &t_fake_host, &c), 0);
	n = error_lines(lines, 16);
	assert_true(n >= 2 && n < 8);
	assert_int_equal(lines[n - 1], 5 + n - 1);
	assert_non_null(strstr(err, "\n" DRF_CONFIG_MORE_ERRORS));
	assert_true(strlen(err) < sizeof(err));

	/* a first error that fills the text alone: cut, and the marker still after it */
	assert_int_not_equal(load_with("[agent]\nintervl = 1s\nbogus = 1\n", &t_fake_host, &c), 0);
	{
		char small[200];

		assert_int_not_equal(drf_config_load(main_path, &t_fake_host, &c, small,
						     sizeof(small)), 0);
		assert_non_null(strstr(small, "\n" DRF_CONFIG_MORE_ERRORS));
		assert_true(strlen(small) < sizeof(small));
	}
}

/* drfd.conf's [fleet]: a fleet node; its tenants come from the fleet's assignment. */
static void test_fleet_member(void **state)
{
	struct drf_config c;
	struct drf_tenant a[2] = { { .name = "web", .weight = 2 }, { .name = "db", .weight = 1 } };

	(void)state;
	assert_int_equal(load_with("[capacity]\ncpu = 4\nmemory = 8G\n[fleet]\n"
				   "endpoints = http://127.0.0.1:2379,https://[::1]:2379\n",
				   &t_fake_host, &c), 0);
	assert_true(c.fleet.on);
	assert_string_equal(c.fleet.prefix, "/drfd/");
	assert_int_equal(c.fleet.lease_ttl_us, 10 * DRF_USEC_PER_SEC);
	assert_int_equal(c.fleet.grace_us, 50 * DRF_USEC_PER_SEC);
	assert_null(c.fleet.node);
	assert_false(c.fleet.plain); /* planner = yes by default: it campaigns */
	assert_int_equal(c.n_tenants, 0);
	drf_config_free(&c);

	/* planner = no: a plain node (its etcd user has no planner role); yes as the default. */
	assert_int_equal(load_with("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\n"
				   "planner = no\n", &t_fake_host, &c), 0);
	assert_true(c.fleet.plain);
	drf_config_free(&c);
	assert_int_equal(load_with("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\n"
				   "planner = yes\n", &t_fake_host, &c), 0);
	assert_false(c.fleet.plain);
	drf_config_free(&c);
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\nplanner = maybe\n", 5,
		     "planner = 'maybe': expected 'yes' or 'no'");
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\nplanner = no\n"
		     "planner = yes\n", 6, "planner");

	expect_error("[capacity]\ncpu = 4\n[fleet]\nprefix = /x/\n", 3, "needs endpoints");
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = 127.0.0.1:2379\n", 4,
		     "expected http:// or https://");
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\nprefix = drfd\n", 5,
		     "begins and ends with '/'");
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\nlease-ttl = 1s\n", 5,
		     "from 2s");
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\ngrace = 0.5s\n", 5,
		     "from 1s");
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\nlease-ttl = 20s\n"
		     "grace = 10s\n", 3, "shorter than lease-ttl");
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\n"
		     "cert-file = /etc/c.pem\n", 3, "needs both");
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\nzone = x\n", 5,
		     "unknown key 'zone' in [fleet]");
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\n[tenant t]\ncpu = 1\n",
		     5, "come from the fleet");

	/* task-user: looked up at load, never root; its uid, gid, groups and home kept. */
	assert_int_equal(load_with("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\n"
				   "task-user = alice\n", &t_fake_host, &c), 0);
	assert_string_equal(c.fleet.task_user, "alice");
	assert_int_equal(c.fleet.task_uid, 1000);
	assert_int_equal(c.fleet.task_gid, 1000);
	assert_int_equal(c.fleet.task_ngroups, 2);
	assert_int_equal(c.fleet.task_groups[1], 27);
	assert_string_equal(c.fleet.task_home, "/home/alice");
	drf_config_free(&c);
	assert_int_equal(load_with("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\n"
				   "task-user = nohome\n", &t_fake_host, &c), 0);
	assert_string_equal(c.fleet.task_home, "/");
	drf_config_free(&c);
	assert_int_equal(load_with("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\n",
				   &t_fake_host, &c), 0);
	assert_null(c.fleet.task_user);
	drf_config_free(&c);
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\ntask-user = root\n", 5,
		     "uid 0");
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\n\ntask-user = bob\n", 6,
		     "task-user = 'bob': no such user");
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\ntask-user = alice\n"
		     "task-user = alice\n", 6, "task-user");
	expect_error("[capacity]\ncpu = 4\n[fleet]\nendpoints = http://a\ntask-user =\n", 5,
		     "empty value");

	/* The assignment's tenants, checked as a config's own: */
	assert_int_equal(t_write_file(main_path, "[capacity]\ncpu = 4\nmemory = 8G\n[fleet]\n"
				      "endpoints = http://a\n"), 0);
	a[0].vec[DRF_RES_CPU] = 1.5;
	a[0].declared[DRF_RES_CPU] = true;
	a[1].vec[DRF_RES_MEMORY] = 1 << 30;
	a[1].declared[DRF_RES_MEMORY] = true;
	assert_int_equal(drf_config_load_assigned(main_path, &t_fake_host, a, 2, "revision 7", &c,
						  err, sizeof(err)), 0);
	assert_int_equal(c.n_tenants, 2);
	assert_string_equal(c.tenants[0].cgroup, "web");
	assert_true(c.tenants[0].vec[DRF_RES_CPU] == 1.5);
	assert_true(c.tenants[1].weight == 1);
	assert_string_equal(c.tenants[1].file, "revision 7");
	drf_config_free(&c);
	/* overlapping cgroups are refused as in a config */
	a[1].cgroup = "web/inner";
	assert_int_equal(drf_config_load_assigned(main_path, &t_fake_host, a, 2, "revision 8", &c,
						  err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "must not overlap"));
	a[1].cgroup = NULL;
	/* a config without [fleet] takes no assignment */
	assert_int_equal(t_write_file(main_path, "[capacity]\ncpu = 4\n"), 0);
	assert_int_equal(drf_config_load_assigned(main_path, &t_fake_host, a, 2, "revision 9", &c,
						  err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a fleet node"));
}

static void test_valid_full(void **state)
{
	struct drf_config c;
	struct drf_problem p;
	struct drf_demand *d;

	(void)state;
	write_tenant_file("b.conf", "# team B\n[tenant B]\ntask-cpu = 3\ntask-memory = 1G\n"
				    "tasks = 5\n");
	write_tenant_file("c.conf", "[tenant C]\n"); /* empty section: a tenant all the same */
	write_tenant_file(".hidden.conf", "garbage that must not be read\n");
	write_tenant_file("notes.txt", "garbage that must not be read\n");
	assert_int_equal(load_with("; drfd\n"
				   "[agent]\n"
				   "cgroup-root = /sys/fs/cgroup/test.slice\n"
				   "interval = 250ms\n"
				   "mode = limit\n"
				   "policy = asset\n"
				   "\n"
				   "[capacity]\n"
				   "cpu = auto\n"
				   "memory = auto\n"
				   "memory-reserve = 2G\n"
				   "io-device = 8:0\n"
				   "io-read-bps = 100M\n"
				   "io-write-bps = 50M ; inline comment\n"
				   "net-device = eth0\n"
				   "net-rate = auto\n"
				   "[tenant A]\n"
				   "weight = 2.5\n"
				   "cgroup = team-a/web\n"
				   "cpu = 2\n"
				   "memory: 4G\n",
				   &t_fake_host, &c),
			 0);
	assert_string_equal(c.cgroup_root, "/sys/fs/cgroup/test.slice");
	assert_int_equal(c.interval_us, 250000);
	assert_int_equal(c.mode, DRF_MODE_LIMIT);
	assert_int_equal(c.policy, DRF_POLICY_ASSET);
	assert_close(c.capacity[DRF_RES_CPU], 8, 0, "cpu auto");
	assert_close(c.capacity[DRF_RES_MEMORY], 14 * G, 0, "memory auto - reserve");
	assert_close(c.capacity[DRF_RES_IO_READ], 100 * 1048576.0, 0, "io read");
	assert_close(c.capacity[DRF_RES_IO_WRITE], 50 * 1048576.0, 0, "io write");
	assert_close(c.capacity[DRF_RES_NET], 10e9, 0, "net auto");
	assert_string_equal(c.io_device, "8:0");
	assert_string_equal(c.net_device, "eth0");
	assert_int_equal(c.n_tenants, 3);
	assert_string_equal(c.tenants[0].name, "A");
	assert_string_equal(c.tenants[0].cgroup, "team-a/web");
	assert_close(c.tenants[0].weight, 2.5, 0, "weight");
	assert_false(c.tenants[0].task_model);
	assert_string_equal(c.tenants[1].name, "B");
	assert_true(c.tenants[1].task_model);
	assert_close(c.tenants[1].tasks, 5, 0, "tasks");
	assert_int_equal(c.tenants[1].line, 2);
	assert_non_null(strstr(c.tenants[1].file, "tenants.d/b.conf"));
	assert_string_equal(c.tenants[2].name, "C");
	assert_string_equal(c.tenants[2].cgroup, "C");
	assert_close(c.tenants[2].weight, 1, 0, "default weight");

	assert_int_equal(drf_config_problem(&c, &p, &d), 0);
	/* A declared cpu and memory; the rest of its demand is the whole capacity. */
	assert_close(d[0].shape[DRF_RES_CPU], 2, 0, "A cpu");
	assert_close(d[0].shape[DRF_RES_IO_READ], 100 * 1048576.0, 0, "A io undeclared");
	assert_close(d[0].max_units, 1, 0, "bounded");
	/* B's undeclared task entries are 0. */
	assert_close(d[1].shape[DRF_RES_IO_READ], 0, 0, "B io undeclared");
	assert_close(d[1].max_units, 5, 0, "B tasks");
	/* C declared nothing: it wants everything. */
	for (int r = 0; r < DRF_NRES; r++)
		assert_close(d[2].shape[r], c.capacity[r], 0, "C undeclared");
	free(d);
	drf_config_free(&c);
}

static void test_defaults(void **state)
{
	struct drf_config c;

	(void)state;
	assert_int_equal(load_with("[capacity]\ncpu = 4\n[tenant a]\n", &t_fake_host, &c), 0);
	assert_string_equal(c.cgroup_root, "/sys/fs/cgroup/drf.slice");
	assert_int_equal(c.interval_us, 1000000);
	assert_int_equal(c.mode, DRF_MODE_SHARE);
	assert_int_equal(c.policy, DRF_POLICY_DRF);
	assert_non_null(strstr(c.tenants_dir, "/tenants.d"));
	assert_true(isinf(c.tenants[0].tasks));
	assert_close(c.capacity[DRF_RES_MEMORY], 0, 0, "memory takes no part");
	assert_false(c.observed);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\ndemand = observed\n[capacity]\ncpu = 4\n[tenant a]\n",
				   &t_fake_host, &c), 0);
	assert_true(c.observed);
	drf_config_free(&c);
	expect_error("[agent]\ndemand = measured\n[capacity]\ncpu = 4\n", 2,
		     "expected 'declared' or 'observed'");
}

static void test_tenants_dir(void **state)
{
	struct drf_config c;
	char sub[200];

	(void)state;
	snprintf(sub, sizeof(sub), "%s/teams", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(sub, sizeof(sub), "%s/teams/x.conf", dir);
	assert_int_equal(t_write_file(sub, "[tenant x]\ncpu = 1\n"), 0);
	assert_int_equal(load_with("[agent]\ntenants-dir = teams\n[capacity]\ncpu = 4\n", &t_fake_host,
				   &c),
			 0);
	assert_int_equal(c.n_tenants, 1);
	assert_string_equal(c.tenants[0].name, "x");
	drf_config_free(&c);
	expect_error("[agent]\ntenants-dir = nowhere\n[capacity]\ncpu = 4\n[tenant a]\n", 2,
		     "No such file or directory");
}

static void test_sections(void **state)
{
	(void)state;
	expect_error("[capacity]\ncpu = 4\n[bogus]\n", 3, "unknown section [bogus]");
	expect_error("cpu = 4\n[capacity]\n", 1, "outside any section");
	expect_error("[capacity]\ncpu = 4\n[capacity]\n", 3, "appears twice (first at line 1)");
	expect_error("[agent]\n[agent]\n", 2, "appears twice");
	expect_error("[capacity\ncpu = 4\n", 1, "without ']'");
	expect_error("[capacity] junk\ncpu = 4\n", 1, "text after");
	expect_error("[capacity]\ncpu = 4\n[tenant]\n", 3, "unknown section [tenant]");
	expect_error("[capacity]\ncpu = 4\njust some words\n", 3, "expected 'key = value'");
	expect_error("[agent]\nmode = share\n[tenant a]\n", 0, "no resource has a capacity");
}

static void test_unknown_keys(void **state)
{
	(void)state;
	expect_error("[agent]\ncolour = blue\n", 2, "unknown key 'colour' in [agent]");
	expect_error("[capacity]\ngpu = 1\n", 2, "unknown key 'gpu' in [capacity]");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ntask-gpu = 1\n", 4,
		     "unknown key 'task-gpu' in [tenant a]");
	expect_error("[capacity]\ncpu = 4\ncpu = 5\n", 3, "set twice in this section (first at "
							   "line 2)");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\nweight = 1\nweight = 2\n", 5, "set twice");
	expect_error("[capacity]\ncpu =\n", 2, "empty value");
}

static void test_numbers(void **state)
{
	(void)state;
	expect_error("[capacity]\ncpu = four\n", 2, "not a decimal number");
	expect_error("[capacity]\ncpu = 4x\n", 2, "unknown unit");
	expect_error("[capacity]\ncpu = -4\n", 2, "negative number");
	expect_error("[capacity]\ncpu = 0\n", 2, "must be positive");
	expect_error("[capacity]\ncpu = 1e3\n", 2, "unknown unit");
	expect_error("[capacity]\nmemory = 4Q\n", 2, "bytes take K, M, G or T");
	expect_error("[capacity]\nmemory = 4 G\n", 2, "unknown unit");
	expect_error("[capacity]\nmemory = 4g\n", 2, "unknown unit");
	expect_error("[capacity]\nmemory = .G\n", 2, "not a number");
	expect_error("[capacity]\nnet-device = eth0\nnet-rate = 100mbps\n", 3, "tc's kbps/mbps");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\nmemory = -1G\n", 4, "negative number");
	expect_error("[capacity]\ncpu = 99999999999999999999999\n", 2, "too large");
	expect_error("[agent]\ninterval = 5m\n", 2, "durations take ms or s");
	expect_error("[agent]\ninterval = 1ms\n", 2, "between 10ms and 3600s");
	expect_error("[agent]\ninterval = soon\n", 2, "not a duration");
	expect_error("[agent]\nmode = hard\n", 2, "expected 'share' or 'limit'");
	expect_error("[agent]\npolicy = fifo\n", 2, "expected 'drf', 'asset', 'per-resource', 'fds'");
	expect_error("[agent]\ncgroup-root = drf.slice\n", 2, "absolute path");
	expect_error("[agent]\ncgroup-root = /sys/fs/cgroup/../x\n", 2, "absolute path");
}

/*
 * policy = fds / gfj / ceei, with beta and lambda: defaults, the alpha-fair
 * lambda, and the refusals at the key's line.
 */
static void test_family_keys(void **state)
{
	struct drf_config c;
	struct drf_problem p;
	struct drf_demand *d;

	(void)state;
	assert_int_equal(load_with("[agent]\npolicy = fds\n[capacity]\ncpu = 4\n", &t_fake_host, &c),
			 0);
	assert_int_equal(c.policy, DRF_POLICY_FDS);
	assert_true(c.family.beta == 2 && c.family.lambda == -0.5);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\npolicy = gfj\nbeta = 0.5\nlambda = 3\n"
				   "[capacity]\ncpu = 4\n", &t_fake_host, &c), 0);
	assert_int_equal(c.policy, DRF_POLICY_GFJ);
	assert_true(c.family.beta == 0.5 && c.family.lambda == 3);
	assert_int_equal(drf_config_problem(&c, &p, &d), 0);
	assert_true(p.family.beta == 0.5 && p.family.lambda == 3);
	free(d);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\nbeta = 4\npolicy = fds\n[capacity]\ncpu = 4\n",
				   &t_fake_host, &c), 0);
	assert_true(c.family.beta == 4 && c.family.lambda == -0.75);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\npolicy = ceei\n[capacity]\ncpu = 4\n", &t_fake_host,
				   &c), 0);
	assert_int_equal(c.policy, DRF_POLICY_CEEI);
	assert_true(c.family.beta == 0);
	drf_config_free(&c);
	expect_error("[agent]\npolicy = fds\nbeta = 3\nlambda = 0\n", 4,
		     "lambda = 0 with beta = 3: with beta above 1, lambda above (1 - beta) / beta");
	expect_error("[agent]\npolicy = gfj\nbeta = 0.5\nlambda = 0.5\n", 4,
		     "with beta below 1, lambda below (1 - beta) / beta");
	expect_error("[agent]\npolicy = fds\nbeta = 1\nlambda = -0.5\n", 4,
		     "at beta = 1 only lambda = 0");
	expect_error("[agent]\npolicy = fds\nbeta = 0\n", 3, "beta = 0: beta must be above 0");
	expect_error("[agent]\npolicy = fds\nbeta = 250\n", 3, "at most 100");
	expect_error("[agent]\npolicy = drf\nbeta = 2\n", 3,
		     "beta applies to policy fds and gfj only; policy is 'drf'");
	expect_error("[agent]\nlambda = -1\npolicy = ceei\n", 2,
		     "lambda applies to policy fds and gfj only; policy is 'ceei'");
	expect_error("[agent]\npolicy = fds\nbeta = two\n", 3, "beta = 'two': expected a decimal");
	expect_error("[agent]\npolicy = fds\nlambda = 1e3\n", 3, "expected a decimal number");
	expect_error("[agent]\npolicy = fds\nbeta = -2\n", 3, "beta must be above 0");
	expect_error("[agent]\npolicy = fds\nbeta = 2\nbeta = 3\n", 4, "set twice");
}

static void test_weights_and_tasks(void **state)
{
	(void)state;
	expect_error("[capacity]\ncpu = 4\n[tenant a]\nweight = 0\n", 4, "out of range");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\nweight = 10001\n", 4, "out of range");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\nweight = -1\n", 4, "negative");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ntask-cpu = 1\ntasks = 0\n", 5, "whole number");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ntask-cpu = 1\ntasks = 1.5\n", 5,
		     "whole number");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ntask-cpu = 1\ntasks = lots\n", 5,
		     "not a decimal number");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ntasks = 3\n", 4, "needs none of the resources");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ntask-memory = 1G\n", 3,
		     "needs none of the resources");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ntask-cpu = 0\n", 3,
		     "needs none of the resources");
}

static void test_mixed_models(void **state)
{
	(void)state;
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncpu = 1\ntask-memory = 1G\n", 5,
		     "mixes a demand with a task shape ('cpu' at line 4)");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ntask-cpu = 1\nmemory = 1G\n", 5,
		     "mixes a demand with a task shape ('task-cpu' at line 4)");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ntasks = 2\ncpu = 1\n", 5,
		     "mixes a demand with a task shape ('tasks' at line 4)");
}

static void test_names(void **state)
{
	char text[512];

	(void)state;
	expect_error("[capacity]\ncpu = 4\n[tenant a b]\n", 3, "is not 1-64 characters");
	expect_error("[capacity]\ncpu = 4\n[tenant .hidden]\n", 3, "not starting with '.'");
	expect_error("[capacity]\ncpu = 4\n[tenant caf\xc3\xa9]\n", 3, "is not 1-64 characters");
	snprintf(text, sizeof(text), "[capacity]\ncpu = 4\n[tenant %065d]\n", 0);
	expect_error(text, 3, "is not 1-64 characters");
	snprintf(text, sizeof(text), "[capacity]\ncpu = 4\n[tenant %064d]\n", 0);
	{
		struct drf_config c;

		assert_int_equal(load_with(text, &t_fake_host, &c), 0);
		drf_config_free(&c);
	}
	expect_error("[capacity]\ncpu = 4\n[tenant a]\n[tenant a]\n", 4,
		     "duplicate tenant 'a' (first defined at");
}

static void test_duplicate_across_files(void **state)
{
	char where[256];

	(void)state;
	write_tenant_file("dup.conf", "\n[tenant a]\n");
	snprintf(where, sizeof(where), "%s/tenants.d/dup.conf", dir);
	expect_error_in("[capacity]\ncpu = 4\n[tenant a]\n", where, 2,
			"duplicate tenant 'a' (first defined at ");
	assert_non_null(strstr(err, "drfd.conf:3)"));
}

static void test_tenants_file_sections(void **state)
{
	char where[256];

	(void)state;
	write_tenant_file("bad.conf", "[tenant x]\n[capacity]\ncpu = 4\n");
	snprintf(where, sizeof(where), "%s/tenants.d/bad.conf", dir);
	expect_error_in("[capacity]\ncpu = 4\n", where, 2, "belongs in the main config file");
}

static void test_cgroup_paths(void **state)
{
	(void)state;
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncgroup = /abs\n", 4, "is absolute");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncgroup = x/../y\n", 4, "'.' or '..'");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncgroup = ..\n", 4, "'.' or '..'");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncgroup = x/cpu.max\n", 4,
		     "names a cgroup control file");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncgroup = cgroup.procs\n", 4,
		     "names a cgroup control file");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncgroup = a//b\n", 4, "empty component");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncgroup = a/\n", 4, "empty component");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncgroup = a b\n", 4, "a character other");
	/* The tenant name is the default cgroup, and must not name a control file. */
	expect_error("[capacity]\ncpu = 4\n[tenant memory.high]\n", 3, "set 'cgroup' to another");
	/* Overlapping tenant cgroups, reported at the later tenant's cgroup key. */
	expect_error("[capacity]\ncpu = 4\n[tenant a]\n[tenant b]\ncgroup = a/b\n", 5,
		     "cgroup 'a/b' is inside cgroup 'a' of tenant 'a'");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncgroup = x\n[tenant b]\ncgroup = x\n", 6,
		     "is the same as cgroup 'x'");
	/* With a network capacity, the programs find tenants at most 8 levels down. */
	expect_error("[capacity]\nnet-device = eth0\nnet-rate = 1gbit\n[tenant a]\n"
		     "cgroup = 1/2/3/4/5/6/7/8/9\n", 5, "is 9 levels below cgroup-root");
	{
		struct drf_config c;

		assert_int_equal(load_with("[capacity]\nnet-device = eth0\nnet-rate = 1gbit\n"
					   "[tenant a]\ncgroup = 1/2/3/4/5/6/7/8\n",
					   &t_fake_host, &c),
				 0);
		drf_config_free(&c);
		assert_int_equal(load_with("[capacity]\ncpu = 4\n[tenant a]\n"
					   "cgroup = 1/2/3/4/5/6/7/8/9\n", &t_fake_host, &c),
				 0);
		drf_config_free(&c);
	}
	{
		struct drf_config c;

		/* "a-x" sorts between "a" and "a/b" in plain byte order: no overlap there. */
		assert_int_equal(load_with("[capacity]\ncpu = 4\n[tenant a]\n[tenant a-x]\n"
					   "[tenant c]\ncgroup = a.b/c\n",
					   &t_fake_host, &c),
				 0);
		drf_config_free(&c);
	}
}

static void test_lines(void **state)
{
	char text[600];

	(void)state;
	/* inih's buffer holds 200 bytes: 198 characters, a newline and a NUL; 199 fail. */
	snprintf(text, sizeof(text), "[capacity]\ncpu = 4\n[tenant a]\ncgroup = %0*d\n", 190, 0);
	expect_error(text, 4, "longer than 198 characters");
	snprintf(text, sizeof(text), "[capacity]\ncpu = 4\n[tenant a]\n; %0*d\n", 196, 0);
	{
		struct drf_config c;

		assert_int_equal(load_with(text, &t_fake_host, &c), 0); /* 198: fits */
		drf_config_free(&c);
	}
	expect_error("[capacity]\ncpu = 4\n  memory = 4G\n", 3, "indented line");
	expect_error("[capacity]\ncpu = 4\n\tmemory = 4G\n", 3, "indented line");
	{
		struct drf_config c;

		/* Indented comments and blank lines with spaces are fine; so is CRLF. */
		assert_int_equal(load_with("[capacity]\r\ncpu = 4\r\n   ; note\r\n  \r\n[tenant a]\r\n",
					   &t_fake_host, &c),
				 0);
		assert_close(c.capacity[DRF_RES_CPU], 4, 0, "cpu with CRLF");
		drf_config_free(&c);
	}
	assert_int_equal(t_write_file(main_path, "[capacity]\ncpu = 4\n"), 0);
	{
		FILE *f = fopen(main_path, "a");
		struct drf_config c;

		assert_non_null(f);
		fwrite("[tenant a]\nweight = 1\0\n", 1, 23, f);
		fclose(f);
		assert_int_not_equal(drf_config_load(main_path, &t_fake_host, &c, err, sizeof(err)), 0);
		assert_non_null(strstr(err, ":4: contains a NUL byte"));
	}
}

static void test_capacity_dependencies(void **state)
{
	struct drf_host_ops bad = t_fake_host;

	(void)state;
	expect_error("[capacity]\nio-read-bps = 10M\n[tenant a]\n", 2, "needs io-device");
	expect_error("[capacity]\nnet-rate = 1gbit\n[tenant a]\n", 2, "needs net-device");
	expect_error("[capacity]\nnet-rate = auto\n[tenant a]\n", 2, "net-rate = auto needs");
	expect_error("[capacity]\nnet-device = wlan9\nnet-rate = auto\n[tenant a]\n", 3,
		     "cannot read the link speed of 'wlan9'");
	expect_error("[capacity]\nio-device = sda\n", 2, "block device path or MAJ:MIN");
	expect_error("[capacity]\nio-device = 8:\n", 2, "block device path or MAJ:MIN");
	expect_error("[capacity]\nnet-device = a/b\n", 2, "not a network interface");
	expect_error("[capacity]\nmemory = auto\nmemory-reserve = 32G\n[tenant a]\n", 3,
		     "leaves nothing of MemTotal");
	bad.online_cpus = failing_cpus;
	{
		struct drf_config c;

		assert_int_not_equal(load_with("[capacity]\ncpu = auto\n[tenant a]\n", &bad, &c), 0);
		assert_non_null(strstr(err, "drfd.conf:2: cpu = auto: cannot count online CPUs"));
	}
}

static void test_missing_file(void **state)
{
	struct drf_config c;
	char path[200];

	(void)state;
	snprintf(path, sizeof(path), "%s/absent.conf", dir);
	assert_int_equal(drf_config_load(path, &t_fake_host, &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "absent.conf: cannot open: No such file or directory"));
	/* a directory is not a config file */
	assert_int_equal(drf_config_load(dir, &t_fake_host, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a regular file"));
}

/* A config without tenants is valid: drfd idles until a reload brings some. */
static void test_no_tenants(void **state)
{
	struct drf_config c;

	(void)state;
	assert_int_equal(load_with("[capacity]\ncpu = 4\n", &t_fake_host, &c), 0);
	assert_int_equal(c.n_tenants, 0);
	drf_config_free(&c);
}

/* The [agent] keys of the service: defaults, values, and their errors. */
static void test_agent_service_keys(void **state)
{
	struct drf_config c;

	(void)state;
	assert_int_equal(load_with("[capacity]\ncpu = 4\n", &t_fake_host, &c), 0);
	assert_true(c.cgroup_root_auto);
	assert_string_equal(c.cgroup_root, "/sys/fs/cgroup/drf.slice");
	assert_string_equal(c.state_dir, "/var/lib/drfd");
	assert_string_equal(c.status_socket, "/run/drfd/drfd.sock");
	assert_null(c.status_group);
	assert_int_equal(c.verify_period_us, 30000000);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\ncgroup-root = /sys/fs/cgroup/x\nstate-dir = /srv/s\n"
				   "status-socket = /run/x.sock\nstatus-group = drf-ops\n"
				   "verify-period = 5s\ninterval = 500ms\n[capacity]\ncpu = 4\n",
				   &t_fake_host, &c), 0);
	assert_false(c.cgroup_root_auto);
	assert_string_equal(c.cgroup_root, "/sys/fs/cgroup/x");
	assert_string_equal(c.state_dir, "/srv/s");
	assert_string_equal(c.status_socket, "/run/x.sock");
	assert_string_equal(c.status_group, "drf-ops");
	assert_int_equal(c.verify_period_us, 5000000);
	drf_config_free(&c);
	/* an interval past the default verify-period raises it */
	assert_int_equal(load_with("[agent]\ninterval = 60s\n[capacity]\ncpu = 4\n", &t_fake_host,
				   &c), 0);
	assert_int_equal(c.verify_period_us, 60000000);
	drf_config_free(&c);
	expect_error("[agent]\nverify-period = 2s\ninterval = 5s\n[capacity]\ncpu = 4\n", 2,
		     "shorter than interval");
	expect_error("[agent]\nverify-period = 100ms\n[capacity]\ncpu = 4\n", 2, "between 1s");
	expect_error("[agent]\nstate-dir = var/lib\n[capacity]\ncpu = 4\n", 2, "absolute");
	expect_error("[agent]\nstatus-socket = /run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\n[capacity]\n"
		     "cpu = 4\n", 2, "107 bytes");
	expect_error("[agent]\nstatus-group = 9lives\n[capacity]\ncpu = 4\n", 2, "group name");
	/* a cgroup-root that names a control file, or the filesystem's root */
	expect_error("[agent]\ncgroup-root = /sys/fs/cgroup/x/cpu.max\n[capacity]\ncpu = 4\n", 2,
		     "control file");
	expect_error("[agent]\ncgroup-root = /sys/fs/cgroup/memory.high\n[capacity]\ncpu = 4\n",
		     2, "control file");
	expect_error("[agent]\ncgroup-root = /\n[capacity]\ncpu = 4\n", 2, "root of the");
}

/*
 * [agent] task-output-max: 64M by default; a size in bytes (K, M, G, T), or
 * unlimited (0 in the config: no cap); 0, a fraction of a byte, over 1T, a
 * negative or unitless-garbage value refused at its line.
 */
static void test_task_output_max(void **state)
{
	struct drf_config c;

	(void)state;
	assert_int_equal(load_with("[capacity]\ncpu = 4\n", &t_fake_host, &c), 0);
	assert_int_equal(c.task_output_max, 64ULL << 20);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\ntask-output-max = 1.5K\n[capacity]\ncpu = 4\n",
				   &t_fake_host, &c), 0);
	assert_int_equal(c.task_output_max, 1536);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\ntask-output-max = 1T\n[capacity]\ncpu = 4\n",
				   &t_fake_host, &c), 0);
	assert_int_equal(c.task_output_max, 1ULL << 40);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\ntask-output-max = 1\n[capacity]\ncpu = 4\n",
				   &t_fake_host, &c), 0);
	assert_int_equal(c.task_output_max, 1);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\ntask-output-max = unlimited\n[capacity]\ncpu = 4\n",
				   &t_fake_host, &c), 0);
	assert_int_equal(c.task_output_max, 0);
	drf_config_free(&c);
	expect_error("[agent]\nmode = share\ntask-output-max = 0\n[capacity]\ncpu = 4\n", 3,
		     "task-output-max = '0'");
	expect_error("[agent]\ntask-output-max = 0.5\n[capacity]\ncpu = 4\n", 2,
		     "task-output-max = '0.5'");
	expect_error("[agent]\ntask-output-max = 2T\n[capacity]\ncpu = 4\n", 2,
		     "task-output-max = '2T'");
	expect_error("[agent]\ntask-output-max = -1M\n[capacity]\ncpu = 4\n", 2,
		     "task-output-max = '-1M'");
	expect_error("[agent]\ntask-output-max = 64MB\n[capacity]\ncpu = 4\n", 2,
		     "task-output-max = '64MB'");
	expect_error("[agent]\ntask-output-max = none\n[capacity]\ncpu = 4\n", 2,
		     "task-output-max = 'none'");
	expect_error("[agent]\ntask-output-max = 1M\ntask-output-max = 2M\n[capacity]\ncpu = 4\n",
		     3, "task-output-max");
}

/* [agent] metrics-file: unset by default; an absolute file path, or FILE:LINE. */
static void test_metrics_file(void **state)
{
	struct drf_config c;

	(void)state;
	assert_int_equal(load_with("[capacity]\ncpu = 4\n", &t_fake_host, &c), 0);
	assert_null(c.metrics_file);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\nmetrics-file = /var/lib/prometheus/node-exporter/"
				   "drfd.prom\n[capacity]\ncpu = 4\n", &t_fake_host, &c), 0);
	assert_string_equal(c.metrics_file, "/var/lib/prometheus/node-exporter/drfd.prom");
	drf_config_free(&c);
	expect_error("[agent]\nmetrics-file = drfd.prom\n[capacity]\ncpu = 4\n", 2,
		     "metrics-file = 'drfd.prom': must be the absolute path of a file");
	expect_error("; x\n[agent]\nmetrics-file = /var/lib/../drfd.prom\n", 3, "absolute path");
	expect_error("[agent]\nmetrics-file = /var/lib/node-exporter/\n", 2, "of a file");
	expect_error("[agent]\nmetrics-file = /\n", 2, "of a file");
	expect_error("[agent]\nmetrics-file = /a.prom\nmetrics-file = /b.prom\n", 3, "set twice");
	expect_error("[agent]\nmetrics-file =\n", 2, "empty value");
}

/* Whether ADDR:PORT parses to family, the address text and port. */
static void expect_listen(const char *text, int family, const char *addr, unsigned port)
{
	struct drf_listen_addr a;
	const char *why = NULL;
	unsigned char want[16] = { 0 };

	assert_int_equal(drf_parse_listen(text, &a, &why), 0);
	assert_int_equal(a.family, family);
	assert_int_equal(inet_pton(family, addr, want), 1);
	assert_memory_equal(a.addr, want, family == AF_INET6 ? 16 : 4);
	assert_int_equal(a.port, port);
}

/*
 * [agent] metrics-listen: unset by default; IPv4:PORT, [IPv6]:PORT or
 * localhost:PORT (127.0.0.1), else FILE:LINE and what is wrong.
 */
static void test_metrics_listen(void **state)
{
	static const char *const bad[] = {
		"9100", ":9100", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
		"127.0.0.1:-1", "127.0.0.1:+9100", "127.0.0.1:9100x", "127.0.0.1: 9100",
		"127.0.0.1:99999999999999999999", "1.2.3:9100", "256.1.1.1:9100",
		"example.com:9100", "localhost6:9100", "::1:9100", "[::1]", "[::1]9100", "[::1:9100",
		"[127.0.0.1]:9100", "[localhost]:9100", "[fe80::1%eth0]:9100", "*:9100",
	};
	struct drf_listen_addr a;
	struct drf_config c;
	const char *why;

	(void)state;
	expect_listen("127.0.0.1:9100", AF_INET, "127.0.0.1", 9100);
	expect_listen("0.0.0.0:1", AF_INET, "0.0.0.0", 1);
	expect_listen("198.18.0.1:65535", AF_INET, "198.18.0.1", 65535);
	expect_listen("localhost:9100", AF_INET, "127.0.0.1", 9100);
	expect_listen("[::1]:9100", AF_INET6, "::1", 9100);
	expect_listen("[::]:9100", AF_INET6, "::", 9100);
	expect_listen("[2001:db8::7]:8080", AF_INET6, "2001:db8::7", 8080);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		if (drf_parse_listen(bad[i], &a, &why) != -EINVAL || !why) {
			print_error("'%s' parsed, or without a reason\n", bad[i]);
			fail();
		}
	}

	assert_int_equal(load_with("[capacity]\ncpu = 4\n", &t_fake_host, &c), 0);
	assert_null(c.metrics_listen);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\nmetrics-listen = [::1]:9188\n[capacity]\ncpu = 4\n",
				   &t_fake_host, &c), 0);
	assert_string_equal(c.metrics_listen, "[::1]:9188");
	assert_int_equal(c.metrics_addr.family, AF_INET6);
	assert_int_equal(c.metrics_addr.port, 9188);
	drf_config_free(&c);
	expect_error("[agent]\nmetrics-listen = 9100\n[capacity]\ncpu = 4\n", 2,
		     "metrics-listen = '9100': expected ADDR:PORT");
	expect_error("; x\n[agent]\nmetrics-listen = 127.0.0.1:0\n", 3,
		     "metrics-listen = '127.0.0.1:0': the port must be a number from 1 to 65535");
	expect_error("[agent]\nmetrics-listen = prometheus.example:9100\n", 2,
		     "not an IP address");
	expect_error("[agent]\nmetrics-listen = ::1:9100\n", 2, "in brackets");
	expect_error("[agent]\nmetrics-listen = 127.0.0.1:9100\nmetrics-listen = [::1]:9100\n",
		     3, "set twice");
	expect_error("[agent]\nmetrics-listen =\n", 2, "empty value");
	expect_error("[capacity]\ncpu = 4\nmetrics-listen = 127.0.0.1:9100\n", 3,
		     "unknown key 'metrics-listen' in [capacity]");
}

/* [agent] metrics-detail: basic by default, basic or full, else FILE:LINE and what is allowed. */
static void test_metrics_detail(void **state)
{
	struct drf_config c;

	(void)state;
	assert_int_equal(load_with("[capacity]\ncpu = 4\n", &t_fake_host, &c), 0);
	assert_int_equal(c.metrics_detail, DRF_METRICS_BASIC);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\nmetrics-detail = full\n[capacity]\ncpu = 4\n",
				   &t_fake_host, &c), 0);
	assert_int_equal(c.metrics_detail, DRF_METRICS_FULL);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\nmetrics-detail = basic\n[capacity]\ncpu = 4\n",
				   &t_fake_host, &c), 0);
	assert_int_equal(c.metrics_detail, DRF_METRICS_BASIC);
	drf_config_free(&c);
	/* metrics-legacy-names: no by default, yes or no */
	assert_int_equal(load_with("[capacity]\ncpu = 4\n", &t_fake_host, &c), 0);
	assert_false(c.metrics_legacy_names);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\nmetrics-legacy-names = yes\n[capacity]\ncpu = 4\n",
				   &t_fake_host, &c), 0);
	assert_true(c.metrics_legacy_names);
	drf_config_free(&c);
	assert_int_equal(load_with("[agent]\nmetrics-legacy-names = no\n[capacity]\ncpu = 4\n",
				   &t_fake_host, &c), 0);
	assert_false(c.metrics_legacy_names);
	drf_config_free(&c);
	expect_error("[agent]\nmetrics-legacy-names = true\n", 2,
		     "metrics-legacy-names = 'true': expected 'yes' or 'no'");
	expect_error("[agent]\nmetrics-detail = verbose\n[capacity]\ncpu = 4\n", 2,
		     "metrics-detail = 'verbose': expected 'basic' or 'full'");
	expect_error("; x\n[agent]\nmetrics-file = /a.prom\nmetrics-detail = Full\n", 4,
		     "metrics-detail = 'Full': expected 'basic' or 'full'");
	expect_error("[agent]\nmetrics-detail = full\nmetrics-detail = basic\n", 3, "set twice");
	expect_error("[agent]\nmetrics-detail =\n", 2, "empty value");
	expect_error("[capacity]\ncpu = 4\nmetrics-detail = full\n", 3,
		     "unknown key 'metrics-detail' in [capacity]");
	/* a misspelt key: the list of known ones names it */
	expect_error("[agent]\nmetrics_detail = full\n", 2,
		     "metrics-detail, metrics-listen, metrics-legacy-names, demand, beta, lambda, "
		     "access, admins, task-output-max)");
}

/* What a new user tripped over: the messages name the real problem. */
static void test_messages(void **state)
{
	(void)state;
	expect_error("[capacity]\ncpu = 4\n[tenant a]\nweight = 70%\n", 4, "plain number");
	expect_error("[capacity]\ncpu = 4 # four cores\n", 2, "comment only at the start");
	/* the whole key name, not cut at 15 characters */
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncpu = 1\ntask-io-write-bps = 1M\n", 5,
		     "'task-io-write-bps'");
	expect_error("[capacity]\ncpu = 4\nio-device = 8:0\nio-write-bps = 10M\n[tenant a]\n"
		     "task-io-write-bps = 1M\nio-write-bps = 1M\n", 7, "'task-io-write-bps' at");
}

/* A FIFO is not read: refused at once, as the main file or in tenants.d. */
static void test_fifo_refused(void **state)
{
	struct drf_config c;
	char path[256];

	(void)state;
	alarm(10); /* a regression would hang in open(): fail instead */
	snprintf(path, sizeof(path), "%s/fifo.conf", dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(drf_config_load(path, &t_fake_host, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a regular file"));
	snprintf(path, sizeof(path), "%s/tenants.d", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/tenants.d/x.conf", dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(load_with("[capacity]\ncpu = 4\n", &t_fake_host, &c), -EINVAL);
	assert_non_null(strstr(err, "x.conf: not a regular file"));
	alarm(0);
}

/* Many tenants load, and a duplicate among them is still found (hashed names). */
static void test_many_tenants(void **state)
{
	struct drf_config c;
	size_t len = 0, cap = 1 << 20;
	char *text = malloc(cap);

	(void)state;
	assert_non_null(text);
	len += (size_t)snprintf(text + len, cap - len, "[capacity]\ncpu = 4\n");
	for (int i = 0; i < 5000; i++)
		len += (size_t)snprintf(text + len, cap - len, "[tenant t%d]\n", i);
	assert_int_equal(load_with(text, &t_fake_host, &c), 0);
	assert_int_equal(c.n_tenants, 5000);
	assert_string_equal(c.tenants[4999].name, "t4999");
	drf_config_free(&c);
	snprintf(text + len, cap - len, "[tenant t1234]\n");
	expect_error(text, 5003, "duplicate tenant 't1234' (first defined at");
	free(text);
}

/* The parsed numbers mean what the units say. */
static void test_units_in_context(void **state)
{
	struct drf_config c;

	(void)state;
	assert_int_equal(load_with("[capacity]\ncpu = 1.5\nmemory = 1536M\nio-device = /dev/vda\n"
				   "io-read-bps = 2K\nnet-device = veth0\nnet-rate = 2.5gbit\n"
				   "[tenant a]\nnet-rate = 100mbit\nio-read-bps = 512\n",
				   &t_fake_host, &c),
			 0);
	assert_close(c.capacity[DRF_RES_CPU], 1.5, 0, "cpu");
	assert_close(c.capacity[DRF_RES_MEMORY], 1.5 * G, 0, "memory");
	assert_close(c.capacity[DRF_RES_IO_READ], 2048, 0, "io");
	assert_close(c.capacity[DRF_RES_NET], 2.5e9, 0, "net");
	assert_close(c.tenants[0].vec[DRF_RES_NET], 1e8, 0, "tenant net");
	assert_close(c.tenants[0].vec[DRF_RES_IO_READ], 512, 0, "tenant io");
	drf_config_free(&c);
}

/* No control character of the config reaches the error (a terminal, the journal). */
static void assert_no_controls(void)
{
	for (const unsigned char *p = (const unsigned char *)err; *p; p++)
		if (*p < 0x20 || *p == 0x7f || *p == 0x9b) {
			print_error("control byte 0x%02x in: %s\n", *p, err);
			fail();
		}
}

static void test_controls_escaped(void **state)
{
	struct drf_config c;

	(void)state;
	/* an ESC sequence in a tenant's name, a bell in a value, a CSI in a key */
	assert_int_not_equal(load_with("[capacity]\ncpu = 4\n[tenant a\x1b[2Jb]\ncpu = 1\n",
				       &t_fake_host, &c), 0);
	assert_no_controls();
	assert_non_null(strstr(err, "a\\x1b[2Jb"));
	assert_int_not_equal(load_with("[capacity]\ncpu = 4\x07\n", &t_fake_host, &c), 0);
	assert_no_controls();
	assert_non_null(strstr(err, "4\\x07"));
	assert_int_not_equal(load_with("[capacity]\nc\xc2\x9bpu = 4\n", &t_fake_host, &c), 0);
	assert_no_controls();
	/* a tenants.d file whose name holds an ESC */
	write_tenant_file("bad\x1b]0;x\x07.conf", "[tenant t]\ncpu = x\n");
	assert_int_not_equal(load_with("[agent]\ntenants-dir = tenants.d\n[capacity]\ncpu = 4\n",
				       &t_fake_host, &c), 0);
	assert_no_controls();
	assert_non_null(strstr(err, "bad\\x1b]0;x\\x07.conf"));
}

/*
 * The start-only keys' rules (startkeys.h), as the reload and drfctl plan
 * apply them: dropping the io knobs is a reload, io on another device or on
 * one while none is needs a restart; the network added, removed or moved needs
 * one; net-replace-qdisc is ignored; every other key is no change at all.
 */
static void test_start_keys_rules(void **state)
{
	struct drf_start_keys a = { .cgroup_root = "/sys/fs/cgroup/drf", .io_device = "8:0",
				    .net_device = "eth0", .state_dir = "/var/lib/drfd",
				    .status_socket = "/run/drfd/drfd.sock" };
	struct drf_start_keys b = a, cp;
	struct drf_start_change ch[DRF_START_KEYS_MAX];
	char text[256];

	(void)state;
	assert_int_equal(drf_start_keys_diff(&a, &b, ch), 0);
	b.io_device = NULL;
	assert_int_equal(drf_start_keys_diff(&a, &b, ch), 0);
	b.io_device = "8:16";
	assert_int_equal(drf_start_keys_diff(&a, &b, ch), 1);
	assert_string_equal(ch[0].key, "io-device");
	assert_true(ch[0].restart);
	drf_start_change_text(&ch[0], text, sizeof(text));
	assert_string_equal(text, "io-device changed from '8:0' to '8:16'");
	a.io_device = NULL;
	assert_int_equal(drf_start_keys_diff(&a, &b, ch), 1);
	drf_start_change_text(&ch[0], text, sizeof(text));
	assert_string_equal(text, "io-device added ('8:16')");
	b = a;
	b.net_device = NULL;
	assert_int_equal(drf_start_keys_diff(&a, &b, ch), 1);
	drf_start_change_text(&ch[0], text, sizeof(text));
	assert_string_equal(text, "network capacities removed (net-device 'eth0')");
	assert_int_equal(drf_start_keys_diff(&b, &a, ch), 1);
	drf_start_change_text(&ch[0], text, sizeof(text));
	assert_string_equal(text, "network capacities added (net-device 'eth0')");
	b = a;
	b.net_replace_qdisc = true;
	b.status_group = "adm";
	assert_int_equal(drf_start_keys_diff(&a, &b, ch), 2);
	assert_string_equal(ch[0].key, "status-group");
	assert_true(ch[0].restart);
	assert_string_equal(ch[1].key, "net-replace-qdisc");
	assert_false(ch[1].restart);
	assert_string_equal(ch[1].was, "no");
	assert_string_equal(ch[1].now, "yes");
	/* A copy owns its strings: the same keys. */
	assert_int_equal(drf_start_keys_dup(&b, &cp), 0);
	assert_ptr_not_equal(cp.cgroup_root, b.cgroup_root);
	assert_int_equal(drf_start_keys_diff(&b, &cp, ch), 0);
	drf_start_keys_free(&cp);

	/* [fleet]: the section added or removed is one change, whatever its keys. */
	b = a;
	b.fleet = "yes";
	b.fleet_endpoints = "http://127.0.0.1:2379";
	snprintf(b.fleet_lease_ttl, sizeof(b.fleet_lease_ttl), "10s");
	assert_int_equal(drf_start_keys_diff(&a, &b, ch), 1);
	assert_string_equal(ch[0].key, "[fleet]");
	assert_true(ch[0].restart);
	drf_start_change_text(&ch[0], text, sizeof(text));
	assert_string_equal(text, "[fleet] added (this drfd would become a fleet node)");
	assert_int_equal(drf_start_keys_diff(&b, &a, ch), 1);
	drf_start_change_text(&ch[0], text, sizeof(text));
	assert_string_equal(text, "[fleet] removed (this drfd would leave its fleet)");
	/* Each of its keys needs a restart: the client, lease and name are set up at start. */
	a = b;
	b.fleet_endpoints = "http://127.0.0.1:2479";
	snprintf(b.fleet_lease_ttl, sizeof(b.fleet_lease_ttl), "3s");
	b.fleet_password_file = "/etc/drfd/etcd.pw";
	a.fleet_planner = "yes";
	b.fleet_planner = "no";
	assert_int_equal(drf_start_keys_diff(&a, &b, ch), 4);
	assert_string_equal(ch[0].key, "[fleet] endpoints");
	assert_string_equal(ch[1].key, "[fleet] lease-ttl");
	assert_string_equal(ch[2].key, "[fleet] password-file");
	assert_string_equal(ch[3].key, "[fleet] planner");
	for (int i = 0; i < 4; i++)
		assert_true(ch[i].restart);
	drf_start_change_text(&ch[3], text, sizeof(text));
	assert_string_equal(text, "[fleet] planner changed from 'yes' to 'no'");
	drf_start_change_text(&ch[1], text, sizeof(text));
	assert_string_equal(text, "[fleet] lease-ttl changed from '10s' to '3s'");
	drf_start_change_text(&ch[2], text, sizeof(text));
	assert_string_equal(text, "[fleet] password-file added ('/etc/drfd/etcd.pw')");
	assert_int_equal(drf_start_keys_dup(&b, &cp), 0);
	assert_ptr_not_equal(cp.fleet_endpoints, b.fleet_endpoints);
	assert_int_equal(drf_start_keys_diff(&b, &cp, ch), 0);
	drf_start_keys_free(&cp);
}

#define GROUPS_BASE "[capacity]\ncpu = 10\nmemory = 10G\n"

/* [group NAME]: what each mistake says, and where. */
static void test_groups_refused(void **state)
{
	(void)state;
	expect_error(GROUPS_BASE "[tenant a]\ncpu = 1\ngroup = team\n", 6,
		     "tenant 'a': group = 'team': there is no [group team]");
	expect_error(GROUPS_BASE "[group x]\ngroup = y\n[group y]\ngroup = x\n[tenant a]\n"
				 "group = x\n", 5, "makes a cycle");
	expect_error(GROUPS_BASE "[group x]\ngroup = x\n[tenant a]\ngroup = x\n", 5,
		     "group 'x': group = 'x' makes a cycle");
	expect_error(GROUPS_BASE "[group x]\nweight = 2\n[tenant a]\n", 4,
		     "group 'x' has no tenants");
	/* a group with only an empty group inside is empty too */
	expect_error(GROUPS_BASE "[group x]\n[group y]\ngroup = x\n[tenant a]\n", 4,
		     "group 'x' has no tenants");
	expect_error(GROUPS_BASE "[tenant a]\ngroup = a\n[group a]\n", 6,
		     "group 'a' has the name of tenant 'a'");
	expect_error(GROUPS_BASE "[group x]\n[group x]\n", 5, "duplicate group 'x' (first defined at");
	expect_error(GROUPS_BASE "[group x]\ncolour = red\n", 5, "unknown key 'colour' in [group x]");
	expect_error(GROUPS_BASE "[group x]\nweight = 0\n", 5, "out of range");
	expect_error(GROUPS_BASE "[group x]\ncgroup = /abs\n", 5, "is absolute");
	expect_error(GROUPS_BASE "[group x]\nweight = 1\nweight = 2\n", 6, "set twice");
	expect_error(GROUPS_BASE "[group .x]\n", 4, "group name '.x' is not");
	expect_error("[agent]\npolicy = asset\n" GROUPS_BASE "[group x]\n[tenant a]\ngroup = x\n", 6,
		     "needs policy = drf (policy is 'asset')");
	/* a tenant's path and a group's may not overlap either */
	expect_error(GROUPS_BASE "[tenant t]\ncgroup = team\n[group x]\ncgroup = team\n[tenant a]\n"
				 "group = x\n", 9, "is inside cgroup 'team' of tenant 't'");
	/* in a tenants file, the tenants file's line */
	write_tenant_file("a.conf", "[tenant a]\ncpu = 1\ngroup = nope\n");
	{
		char where[256];

		snprintf(where, sizeof(where), "%s/tenants.d/a.conf", dir);
		expect_error_in(GROUPS_BASE, where, 3, "there is no [group nope]");
	}
}

/* Groups nest; their members' cgroups are below theirs; flat configs are as before. */
static void test_groups_valid(void **state)
{
	struct drf_config c;

	(void)state;
	assert_int_equal(load_with(GROUPS_BASE "[group org]\nweight = 3\ncgroup = o\n"
					       "[group team]\ngroup = org\n"
					       "[tenant web]\ngroup = team\ntask-cpu = 1\n"
					       "[tenant db]\ngroup = org\ncgroup = data/db\ntask-memory = 1G\n"
					       "[tenant solo]\ncpu = 1\n",
				 &t_fake_host, &c),
			 0);
	assert_int_equal(c.n_groups, 2);
	assert_string_equal(c.groups[0].name, "org");
	assert_close(c.groups[0].weight, 3, 0, "org weight");
	assert_int_equal(c.groups[0].parent, 0);
	assert_int_equal(c.groups[1].parent, 1);
	assert_close(c.groups[1].weight, 1, 0, "team's default weight");
	assert_string_equal(c.groups[0].cgroup, "o");
	assert_string_equal(c.groups[1].cgroup, "o/team");
	assert_string_equal(c.tenants[0].cgroup, "o/team/web");
	assert_int_equal(c.tenants[0].group, 2);
	assert_string_equal(c.tenants[1].cgroup, "o/data/db");
	assert_int_equal(c.tenants[1].group, 1);
	assert_string_equal(c.tenants[2].cgroup, "solo");
	assert_int_equal(c.tenants[2].group, 0);
	drf_config_free(&c);
	assert_int_equal(load_with(GROUPS_BASE "[tenant solo]\ncpu = 1\n", &t_fake_host, &c), 0);
	assert_int_equal(c.n_groups, 0);
	assert_null(c.groups);
	drf_config_free(&c);
}

/*
 * The root's knobs: in share mode its memory.low the sum of the tenants' (and
 * so of what an inner node covers: team's memory.low is counted once, by its
 * tenants'); in limit mode 0, as theirs; without memory capacity, none.
 */
/*
 * access and admins (access.h): names looked up by the host (alice 1000, group
 * eng 2000), numbers taken as ids, '*' anyone; a tenant's role is the
 * strongest of its own lists, its groups' and [agent]'s; nothing set: root's
 * alone. A name that is not there, or an empty list, is an error at its line.
 */
static void test_access(void **state)
{
	struct drf_config c;
	const struct drf_tenant *web, *db, *solo;
	const gid_t eng[] = { 2000 };
	struct drf_access_who alice = { 1000, 1000, NULL, 0 }, bob = { 1002, 1002, NULL, 0 },
			      carol = { 1003, 1003, eng, 1 }, root = { 0, 0, NULL, 0 };
	char rule[2048];

	(void)state;
	assert_int_equal(load_with("[agent]\nadmins = 1003\n[capacity]\ncpu = 4\nmemory = 4G\n"
				   "[group prod]\naccess = @eng\n"
				   "[tenant web]\ngroup = prod\ncpu = 1\naccess = alice, 1002\n"
				   "[tenant db]\ncpu = 1\n[tenant solo]\ncpu = 1\n",
				   &t_fake_host, &c), 0);
	web = &c.tenants[0];
	db = &c.tenants[1];
	solo = &c.tenants[2];
	assert_int_equal(web->access.n, 2);
	assert_int_equal(web->access.e[0].id, 1000);
	assert_int_equal(web->access.e[1].id, 1002);
	assert_int_equal(c.groups[0].access.e[0].kind, DRF_ACCESS_GROUP);
	assert_int_equal(c.groups[0].access.e[0].id, 2000);
	/* web: alice and bob by its own list; carol by [agent]'s admins (and prod's group). */
	assert_int_equal(drf_config_access(&c, web, &alice, rule, sizeof(rule)), DRF_ACCESS_MEMBER);
	assert_non_null(strstr(rule, "access 'alice 1002' of tenant web at "));
	assert_int_equal(drf_config_access(&c, web, &bob, rule, sizeof(rule)), DRF_ACCESS_MEMBER);
	assert_int_equal(drf_config_access(&c, web, &carol, rule, sizeof(rule)), DRF_ACCESS_ADMIN);
	assert_non_null(strstr(rule, "admins '1003' of [agent] at "));
	/* The group's list reaches web, not db (no group). */
	carol.uid = 1004;
	assert_int_equal(drf_config_access(&c, web, &carol, rule, sizeof(rule)), DRF_ACCESS_MEMBER);
	assert_non_null(strstr(rule, "access '@eng' of group prod"));
	assert_int_equal(drf_config_access(&c, db, &carol, rule, sizeof(rule)), DRF_ACCESS_NONE);
	/* A refusal's rule names every list there is. */
	assert_non_null(strstr(rule, "admins '1003' of [agent]"));
	assert_int_equal(drf_config_access(&c, solo, &alice, rule, sizeof(rule)), DRF_ACCESS_NONE);
	assert_int_equal(drf_config_access(&c, solo, &root, rule, sizeof(rule)), DRF_ACCESS_ADMIN);
	assert_true(drf_config_access_rules(&c, web, rule, sizeof(rule)));
	drf_config_free(&c);
	/* Nothing set anywhere: root's alone. */
	assert_int_equal(load_with("[capacity]\ncpu = 4\n[tenant a]\ncpu = 1\n", &t_fake_host, &c),
			 0);
	assert_false(drf_config_access_rules(&c, &c.tenants[0], rule, sizeof(rule)));
	assert_int_equal(drf_config_access(&c, &c.tenants[0], &alice, rule, sizeof(rule)),
			 DRF_ACCESS_NONE);
	assert_non_null(strstr(rule, "root's alone"));
	drf_config_free(&c);
	/* '*': anyone who reaches the socket. */
	assert_int_equal(load_with("[capacity]\ncpu = 4\n[tenant a]\ncpu = 1\naccess = *\n",
				   &t_fake_host, &c), 0);
	assert_int_equal(drf_config_access(&c, &c.tenants[0], &bob, rule, sizeof(rule)),
			 DRF_ACCESS_MEMBER);
	drf_config_free(&c);
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncpu = 1\naccess = alise\n", 5,
		     "access = 'alise': 'alise': no such user");
	expect_error("[capacity]\ncpu = 4\n[group g]\nadmins = @nogroup\n[tenant a]\ncpu = 1\n"
		     "group = g\n", 4, "no such group");
	expect_error("[agent]\naccess = ,\n[capacity]\ncpu = 4\n", 2, "no users or groups");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncpu = 1\naccess = @\n", 5, "after '@'");
	expect_error("[capacity]\ncpu = 4\n[tenant a]\ncpu = 1\naccess = 1\naccess = 2\n", 6,
		     "access");
}

static void test_root_protection(void **state)
{
	static const char *const modes[] = { "share", "limit" };
	struct drf_declared d;
	struct drf_engine eng;
	struct drf_plan p;
	struct drf_plan_input in = { .decl = &d };
	char text[512];

	(void)state;
	drf_engine_init(&eng);
	for (int m = 0; m < 2; m++) {
		double sum = 0;

		snprintf(text, sizeof(text), "[agent]\nmode = %s\n[capacity]\ncpu = 4\nmemory = 4G\n"
			 "[tenant a]\ntask-cpu = 1\ntask-memory = 1G\ntasks = 1\n"
			 "[tenant b]\ncgroup = team/b\ntask-cpu = 1\ntask-memory = 768M\ntasks = 1\n"
			 "[tenant c]\ncgroup = team/c\ntask-cpu = 1\ntask-memory = 256M\ntasks = 1\n",
			 modes[m]);
		assert_int_equal(t_write_file(main_path, text), 0);
		assert_int_equal(drf_declared_load(&d, main_path, &t_fake_host, err, sizeof(err)), 0);
		assert_int_equal(drf_plan_build(&in, &eng, &p), 0);
		for (size_t i = 0; i < 3; i++)
			sum += strtod(p.knobs[i].val[DRF_KNOB_MEMORY_LOW], NULL);
		assert_true(p.root->set[DRF_KNOB_MEMORY_LOW]);
		if (m == 0)
			assert_true(sum == 2 * G);
		else
			assert_true(sum == 0);
		assert_true(strtod(p.root->val[DRF_KNOB_MEMORY_LOW], NULL) == sum);
		/* The memory.low and nothing else: the root's weights are the host's. */
		for (int k = 0; k < DRF_NKNOBS; k++)
			assert_int_equal(p.root->set[k], k == DRF_KNOB_MEMORY_LOW);
		drf_plan_free(&p);
		drf_declared_free(&d);
	}
	assert_int_equal(t_write_file(main_path, "[capacity]\ncpu = 4\n[tenant a]\ntask-cpu = 1\n"), 0);
	assert_int_equal(drf_declared_load(&d, main_path, &t_fake_host, err, sizeof(err)), 0);
	assert_int_equal(drf_plan_build(&in, &eng, &p), 0);
	for (int k = 0; k < DRF_NKNOBS; k++)
		assert_false(p.root->set[k]);
	drf_plan_free(&p);
	drf_declared_free(&d);
	drf_engine_free(&eng);
}

/*
 * The planner with groups: the paper's counterexample (GPUs played by
 * memory) allocated by H-DRF, and the group's cgroup an inner node whose
 * knobs come from the group's allocation: memory.low its 5G, cpu.weight the
 * largest among its siblings (it holds every CPU).
 */
static void test_groups_plan(void **state)
{
	struct drf_declared d;
	struct drf_engine eng;
	struct drf_plan p;
	struct drf_plan_input in = { .decl = &d };
	bool found = false;

	(void)state;
	assert_int_equal(t_write_file(main_path, GROUPS_BASE "[tenant n1]\ntask-memory = 1G\n"
							    "[group n2]\n"
							    "[tenant n21]\ngroup = n2\ntask-cpu = 1\n"
							    "[tenant n22]\ngroup = n2\ntask-memory = 1G\n"),
			 0);
	assert_int_equal(drf_declared_load(&d, main_path, &t_fake_host, err, sizeof(err)), 0);
	assert_non_null(d.groups);
	assert_close(d.result.shares[0].alloc[DRF_RES_MEMORY], 5 * G, 1e-9, "n1 memory");
	assert_close(d.result.shares[1].alloc[DRF_RES_CPU], 10, 1e-9, "n21 cpu");
	assert_close(d.result.shares[2].alloc[DRF_RES_MEMORY], 5 * G, 1e-9, "n22 memory");
	assert_close(d.groups[0].alloc[DRF_RES_CPU], 10, 1e-9, "n2 cpu");
	assert_close(d.groups[0].dominant_share, 1, 1e-9, "n2 dominant share");
	drf_engine_init(&eng);
	assert_int_equal(drf_plan_build(&in, &eng, &p), 0);
	assert_non_null(p.groups);
	for (size_t k = 0; k < p.n_inner; k++) {
		const struct drf_knobs *kn = &p.inner[k].knobs;

		if (strcmp(p.inner[k].cgroup, "n2") != 0)
			continue;
		found = true;
		assert_string_equal(kn->val[DRF_KNOB_MEMORY_LOW], "5368709120");
		assert_string_equal(kn->val[DRF_KNOB_CPU_WEIGHT], "10000");
	}
	assert_true(found);
	/* observed demand: the same tree, on the effective demands */
	{
		double eff[3][DRF_NRES] = { { 0 } };

		eff[0][DRF_RES_MEMORY] = 8 * G;
		eff[1][DRF_RES_CPU] = 2;
		eff[2][DRF_RES_MEMORY] = 8 * G;
		in.effective = (const double (*)[DRF_NRES])eff;
		drf_plan_free(&p);
		assert_int_equal(drf_plan_build(&in, &eng, &p), 0);
		assert_close(p.result.shares[0].alloc[DRF_RES_MEMORY], 5 * G, 1e-9, "n1 memory");
		assert_close(p.result.shares[1].alloc[DRF_RES_CPU], 2, 1e-9, "n21 cpu (its demand)");
		assert_close(p.groups[0].alloc[DRF_RES_MEMORY], 5 * G, 1e-9, "n2 memory");
	}
	drf_plan_free(&p);
	drf_engine_free(&eng);
	drf_declared_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_valid_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tenants_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_numbers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_family_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_weights_and_tasks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mixed_models, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_across_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tenants_file_sections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cgroup_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_capacity_dependencies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_units_in_context, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_tenants, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_service_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task_output_max, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_detail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_listen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_tenants, setup, teardown),
		cmocka_unit_test_setup_teardown(test_controls_escaped, setup, teardown),
		cmocka_unit_test(test_start_keys_rules),
		cmocka_unit_test_setup_teardown(test_fleet_member, setup, teardown),
		cmocka_unit_test_setup_teardown(test_groups_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_groups_valid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_groups_plan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_protection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_access, setup, teardown),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
