// SPDX-License-Identifier: MIT
/*
 * Random garbage configs never crash the parser (run it under SANITIZER=address
 * to catch what does not crash outright). Three kinds of input, 10,000 each:
 * random bytes; lines built from the config's own vocabulary in random order;
 * a valid config with random byte and line mutations. Whatever the outcome, a
 * failure must say where ("FILE:" first), and a success must give a problem the
 * engine accepts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "fakecg.h"
#include "testlib.h"

#define ROUNDS 10000

static char dir[64], path[128], tdir[128], tpath[160];

static const char *const words[] = {
	"[agent]", "[capacity]", "[tenant a]", "[tenant b]", "[tenant ", "]", "[", "cpu", "memory",
	"io-read-bps", "io-write-bps", "net-rate", "net-device", "io-device", "task-cpu",
	"task-memory", "task-net-rate", "tasks", "weight", "cgroup", "mode", "policy", "interval",
	"cgroup-root", "tenants-dir", "memory-reserve", "=", ":", " ", ";", "#", "\t", "\r", "auto",
	"unlimited", "share", "limit", "drf", "asset", "per-resource", "1", "0", "-1", "4.5", "18G",
	"1K", "100mbit", "8:0", "/dev/sda", "eth0", "lo", "..", "/", "a/b", "cpu.max", "1e9",
	"999999999999999999999", "\xef\xbb\xbf", "\xff", "250ms", "2s", "[group g]", "[group a]",
	"[group ", "group", "g",
};

static const char valid[] =
	"[agent]\ncgroup-root = /sys/fs/cgroup/x\ninterval = 1s\nmode = limit\n"
	"[capacity]\ncpu = 8\nmemory = 16G\nio-device = 8:0\nio-read-bps = 100M\n"
	"net-device = eth0\nnet-rate = auto\n"
	"[tenant a]\nweight = 2\ncpu = 2\nmemory = 4G\n"
	"[tenant b]\ntask-cpu = 1\ntask-memory = 1G\ntasks = 4\ngroup = g\n"
	"[group g]\nweight = 3\n";


static void write_bytes(const char *p, const char *buf, size_t n)
{
	FILE *f = fopen(p, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* Loads path and checks the outcome is well-formed; returns 1 if it loaded. */
static int load_and_check(void)
{
	struct drf_config c;
	char err[1024];
	int r = drf_config_load(path, &t_fake_host, &c, err, sizeof(err));

	if (r < 0) {
		assert_true(strlen(err) > 0);
		assert_true(strncmp(err, dir, strlen(dir)) == 0);
		return 0;
	}
	{
		struct drf_problem p;
		struct drf_demand *d;
		struct drf_result res;

		assert_int_equal(drf_config_problem(&c, &p, &d), 0);
		assert_int_equal(drf_allocate(&p, c.policy, &res), 0);
		drf_result_free(&res);
		if (c.n_groups > 0) {
			struct drf_hproblem hp;
			struct drf_hresult hr;
			struct drf_hgroup *hg;
			size_t *par;

			assert_int_equal(drf_config_hproblem(&c, &p, &hp, &hg, &par), 0);
			assert_int_equal(drf_hdrf_allocate(&hp, &hr), 0);
			drf_hresult_free(&hr);
			free(hg);
			free(par);
		}
		free(d);
	}
	drf_config_free(&c);
	return 1;
}

static void test_random_bytes(void **state)
{
	struct rng g = { 1 };
	char buf[600];
	int loaded = 0;

	(void)state;
	for (int k = 0; k < ROUNDS; k++) {
		size_t n = (size_t)rng_int(&g, 0, (int)sizeof(buf));

		for (size_t i = 0; i < n; i++)
			buf[i] = (char)rng_next(&g);
		write_bytes(path, buf, n);
		loaded += load_and_check();
	}
	print_message("random bytes: %d of %d loaded\n", loaded, ROUNDS);
}

static void test_vocabulary(void **state)
{
	struct rng g = { 2 };
	char buf[2048];
	int loaded = 0;
	const int nw = (int)(sizeof(words) / sizeof(words[0]));

	(void)state;
	for (int k = 0; k < ROUNDS; k++) {
		size_t n = 0;
		int lines = rng_int(&g, 0, 30);

		/* A plausible start, so that deeper paths are reached. */
		n += (size_t)snprintf(buf, sizeof(buf), "[capacity]\ncpu = 4\n");
		for (int l = 0; l < lines && n < sizeof(buf) - 200; l++) {
			int toks = rng_int(&g, 1, 5);

			for (int t = 0; t < toks; t++) {
				const char *w = words[rng_int(&g, 0, nw - 1)];

				n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", w,
						      rng_unit(&g) < 0.5 ? " " : "");
			}
			buf[n++] = '\n';
		}
		write_bytes(path, buf, n);
		loaded += load_and_check();
	}
	print_message("vocabulary: %d of %d loaded\n", loaded, ROUNDS);
}

static void test_mutations(void **state)
{
	struct rng g = { 3 };
	char buf[4096];
	int loaded = 0;

	(void)state;
	for (int k = 0; k < ROUNDS; k++) {
		size_t n = sizeof(valid) - 1;
		int muts = rng_int(&g, 1, 6);

		memcpy(buf, valid, n);
		for (int m = 0; m < muts; m++) {
			size_t at = n ? (size_t)rng_int(&g, 0, (int)n - 1) : 0;
			double z = rng_unit(&g);

			if (z < 0.3 && n > 0) { /* flip a byte */
				buf[at] = (char)rng_next(&g);
			} else if (z < 0.5 && n > 0) { /* delete a run */
				size_t len = (size_t)rng_int(&g, 1, 20);

				if (at + len > n)
					len = n - at;
				memmove(buf + at, buf + at + len, n - at - len);
				n -= len;
			} else if (z < 0.8 && n + 64 < sizeof(buf)) { /* insert a word */
				const char *w = words[rng_int(&g, 0, (int)(sizeof(words) /
									 sizeof(words[0])) - 1)];
				size_t len = strlen(w);

				memmove(buf + at + len, buf + at, n - at);
				memcpy(buf + at, w, len);
				n += len;
			} else if (n + 300 < sizeof(buf)) { /* a very long run */
				size_t len = (size_t)rng_int(&g, 150, 290);

				memmove(buf + at + len, buf + at, n - at);
				memset(buf + at, 'x', len);
				n += len;
			}
		}
		write_bytes(path, buf, n);
		/* Sometimes a tenants file too, mutated the same way. */
		if (k % 4 == 0)
			write_bytes(tpath, buf, n);
		else
			unlink(tpath);
		loaded += load_and_check();
	}
	print_message("mutations: %d of %d loaded\n", loaded, ROUNDS);
	/* The unmutated config loads: the checks above are not vacuous. */
	write_bytes(path, valid, sizeof(valid) - 1);
	unlink(tpath);
	assert_int_equal(load_and_check(), 1);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/drf-fuzz-XXXXXX", fakecg_tmpdir());
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/drfd.conf", dir);
	snprintf(tdir, sizeof(tdir), "%s/tenants.d", dir);
	snprintf(tpath, sizeof(tpath), "%s/t.conf", tdir);
	return mkdir(tdir, 0755);
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_bytes),
		cmocka_unit_test(test_vocabulary),
		cmocka_unit_test(test_mutations),
	};

	return cmocka_run_group_tests_name("fuzz_config", tests, setup, teardown);
}
