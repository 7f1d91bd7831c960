// SPDX-License-Identifier: MIT
/*
 * Memory over reloads: 1,000 reloads of a 200-tenant config, alternating two
 * plans, through what the daemon's reload does (load, set, tick). RSS must not
 * grow once warmed up; leaks are what ASan (make SANITIZER=address check) and
 * valgrind (make valgrind) report at exit. Under ASan, freed memory sits in its
 * quarantine, and valgrind has an allocator of its own, so the RSS bound is
 * checked only without them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakedrfd.h"
#include "fakecg.h"
#include "reconcile.h"
#include "testlib.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static char dir[64], root[128];

static long rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void write_conf(const char *path, int weight)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fprintf(f, "[agent]\ncgroup-root = %s\n[capacity]\ncpu = 64\nmemory = 64G\n", root);
	for (int i = 0; i < 200; i++)
		fprintf(f, "[tenant t%d]\nweight = %d\ncpu = %d\nmemory = %dG\n", i,
			1 + (i + weight) % 9, 1 + i % 7, 1 + i % 5);
	assert_int_equal(fclose(f), 0);
}

static void test_reloads_keep_rss_flat(void **state)
{
	char a[256], b[256], err[512];
	struct drf_reconciler rc;
	struct fakeplan e = { 0 };
	struct cgfs fs;
	long warm = 0, end;
	int n = getenv("DRF_RELOADS") ? atoi(getenv("DRF_RELOADS")) : 1000;

	(void)state;
	assert_int_equal(fakecg_setup(dir, sizeof(dir), root, sizeof(root)), 0);
	snprintf(a, sizeof(a), "%s/a.conf", dir);
	snprintf(b, sizeof(b), "%s/b.conf", dir);
	write_conf(a, 0);
	write_conf(b, 4);
	assert_int_equal(cgfs_open(&fs, root, false, &fakecg_ops, NULL), 0);
	assert_int_equal(drf_reconciler_init(&rc, &fs, NULL, NULL, false, FAKECG_PAGE), 0);
	for (int i = 0; i < n; i++) {
		struct fakeplan next;
		struct drf_reconcile_stats st;

		assert_int_equal(fakeplan_load(&next, i % 2 ? b : a, NULL, err, sizeof(err)), 0);
		assert_int_equal(drf_reconciler_set(&rc, &next.plan), 0);
		fakeplan_free(&e);
		e = next;
		assert_int_equal(drf_reconcile_tick(&rc, 0, &st), 0);
		assert_int_equal(st.errors, 0);
		if (i == n / 10)
			warm = rss_kib();
	}
	end = rss_kib();
	print_message("RSS after %d reloads: %ld KiB; after %d: %ld KiB\n", n / 10, warm, n, end);
#ifndef UNDER_ASAN
	/*
	 * Flat: no more than 1 MiB over the warmed-up figure, whatever n is.
	 * Under valgrind (DRF_RSS_CHECK=0) RSS is valgrind's; it checks leaks.
	 */
	if (!getenv("DRF_RSS_CHECK") || strcmp(getenv("DRF_RSS_CHECK"), "0") != 0)
		assert_true(end - warm <= 1024);
#endif
	drf_reconciler_free(&rc);
	cgfs_close(&fs);
	fakeplan_free(&e);
	fakecg_teardown(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reloads_keep_rss_flat),
	};

	return cmocka_run_group_tests_name("reload memory", tests, NULL, NULL);
}
