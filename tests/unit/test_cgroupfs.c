// SPDX-License-Identifier: MIT
/*
 * cgroupfs and the reconciler against a fake cgroup tree in a mkdtemp()
 * directory. The fake is an ops table over the real one that behaves like the
 * kernel where the code depends on it: mkdir creates the interface files,
 * cgroup.subtree_control applies "+x -y", memory limits round down to pages.
 * Failures are injected with the recording ops.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "desired.h"
#include "fakecg.h"
#include "knobs.h"
#include "reconcile.h"
#include "testlib.h"

#define PAGE FAKECG_PAGE

static char dir[64], root[128];

#define put fakecg_put

static struct cgfs_ops ops;

static int setup(void **state)
{
	(void)state;
	ops = fakecg_ops;
	return fakecg_setup(dir, sizeof(dir), root, sizeof(root));
}

static int teardown(void **state)
{
	(void)state;
	return fakecg_teardown(dir);
}

static void sub(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", root, rel);
}

static char *slurp(const char *rel)
{
	static char buf[512];
	char path[512];
	FILE *f;
	size_t n;

	sub(path, sizeof(path), rel);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return buf;
}

static void test_paths_stay_beneath_root(void **state)
{
	struct cgfs fs;
	char buf[64], target[256];

	(void)state;
	/* The real ops: their openat2(RESOLVE_BENEATH) is what is under test. */
	assert_int_equal(cgfs_open(&fs, root, false, &cgfs_real_ops, NULL), 0);
	assert_int_equal(cgfs_read(&fs, "../x", "cpu.weight", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(cgfs_read(&fs, "/etc", "passwd", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(cgfs_read(&fs, "", "../cpu.weight", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(cgfs_write(&fs, "a//b", "cpu.weight", "1"), -EINVAL);
	/* A symlink out of the root is not followed (RESOLVE_BENEATH/NO_SYMLINKS). */
	snprintf(target, sizeof(target), "%s/outside", dir);
	assert_int_equal(mkdir(target, 0755), 0);
	assert_int_equal(put(AT_FDCWD, strcat(target, "/cpu.weight"), "7\n"), 0);
	snprintf(target, sizeof(target), "%s/outside", dir);
	{
		char link[256];

		sub(link, sizeof(link), "evil");
		assert_int_equal(symlink(target, link), 0);
	}
	assert_true(cgfs_read(&fs, "evil", "cpu.weight", buf, sizeof(buf)) < 0);
	assert_true(cgfs_write(&fs, "evil", "cpu.weight", "9") < 0);
	assert_string_equal(slurp("../outside/cpu.weight"), "7");
	cgfs_close(&fs);
}

static void test_subtree_and_remove(void **state)
{
	struct cgfs fs;
	unsigned bits;

	(void)state;
	assert_int_equal(cgfs_open(&fs, root, false, &ops, NULL), 0);
	assert_int_equal(cgfs_write(&fs, "", "cgroup.subtree_control", "+pids"), 0);
	/* enables cpu and memory; leaves pids, which it does not manage, alone */
	assert_int_equal(cgfs_set_subtree(&fs, "", CGFS_CPU | CGFS_MEMORY, CGFS_CPU | CGFS_MEMORY | CGFS_IO), 1);
	assert_int_equal(cgfs_subtree_control(&fs, "", &bits), 0);
	assert_int_equal(bits, CGFS_CPU | CGFS_MEMORY | CGFS_PIDS);
	assert_int_equal(cgfs_set_subtree(&fs, "", CGFS_CPU | CGFS_MEMORY, CGFS_CPU | CGFS_MEMORY | CGFS_IO), 0);
	assert_int_equal(cgfs_set_subtree(&fs, "", CGFS_CPU, CGFS_CPU | CGFS_MEMORY), 1);
	assert_int_equal(cgfs_subtree_control(&fs, "", &bits), 0);
	assert_int_equal(bits, CGFS_CPU | CGFS_PIDS);

	/* A populated cgroup is never removed; an empty one is. */
	assert_int_equal(cgfs_mkdir_p(&fs, "t/u"), 0);
	assert_int_equal(put(fs.rootfd, "t/u/cgroup.events", "populated 1\n"), 0);
	assert_int_equal(cgfs_remove(&fs, "t/u"), -EBUSY);
	assert_non_null(slurp("t/u/cgroup.type"));
	cgfs_close(&fs);
}

/* A config with two tenants, share mode: cpu 4, memory 1G. */
static void load_enforced(struct drf_enforced *e, const char *extra)
{
	char path[256], text[1024], err[512];

	snprintf(path, sizeof(path), "%s/drfd.conf", dir);
	snprintf(text, sizeof(text),
		 "[agent]\ncgroup-root = %s\n%s[capacity]\ncpu = 4\nmemory = 1G\n"
		 "[tenant a]\ncpu = 3\nmemory = 256M\n[tenant b]\ncgroup = team/b\nweight = 2\n"
		 "memory = 100M\n",
		 root, extra);
	assert_int_equal(t_write_file(path, text), 0);
	if (drf_enforced_load(e, path, NULL, err, sizeof(err)) < 0) {
		print_error("%s\n", err);
		fail();
	}
}

static void test_reconcile_writes_only_changes(void **state)
{
	struct drf_enforced e;
	struct drf_reconciler rc;
	struct drf_reconcile_stats st;
	struct cgfs fs;

	(void)state;
	load_enforced(&e, "");
	assert_int_equal(cgfs_open(&fs, root, false, &ops, NULL), 0);
	assert_int_equal(drf_reconciler_init(&rc, &fs, NULL, NULL, false), 0);
	assert_int_equal(drf_reconcile(&rc, &e.cfg, e.knobs, &st), 0);
	assert_int_equal(st.errors, 0);
	assert_int_equal(st.created, 3); /* a, team, team/b */
	assert_true(st.writes > 0);
	assert_string_equal(slurp("cgroup.subtree_control"), "cpu memory");
	assert_string_equal(slurp("team/cgroup.subtree_control"), "cpu memory");
	for (int j = 0; j < DRF_NKNOBS; j++) {
		char rel[64];

		if (!e.knobs[1].set[j])
			continue;
		snprintf(rel, sizeof(rel), "team/b/%s", drf_knob_file(j, NULL));
		assert_true(drf_knob_matches(j, e.knobs[1].val[j], slurp(rel), NULL, PAGE));
	}
	/* memory.max of 100M is page-aligned; b's low is rounded by the kernel */
	assert_string_equal(slurp("team/b/memory.max"), "104857600");

	/* Second pass: nothing to do, even where the kernel rounded. */
	assert_int_equal(drf_reconcile(&rc, &e.cfg, e.knobs, &st), 0);
	assert_int_equal(st.writes, 0);
	assert_int_equal(st.created, 0);
	assert_int_equal(st.foreign, 0);

	/* Someone else changes a knob: noticed, counted and put back. */
	assert_int_equal(put(fs.rootfd, "a/cpu.weight", "42\n"), 0);
	assert_int_equal(drf_reconcile(&rc, &e.cfg, e.knobs, &st), 0);
	assert_int_equal(st.foreign, 1);
	assert_int_equal(st.writes, 1);
	assert_string_equal(slurp("a/cpu.weight"), e.knobs[0].val[DRF_KNOB_CPU_WEIGHT]);

	drf_reconciler_free(&rc);
	cgfs_close(&fs);
	drf_enforced_free(&e);
}

/* A failing write on one tenant is counted and does not stop the others. */
static void test_reconcile_failure_injection(void **state)
{
	static const int errs[] = { EBUSY, EACCES, ENOSPC, EIO };
	struct drf_enforced e;

	(void)state;
	load_enforced(&e, "");
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		struct cgfs_recorder rec = { .inner = &ops, .pass_changes = true, .root = root,
					     .fail_path = "a/cpu.weight", .fail_errno = errs[i] };
		struct drf_reconciler rc;
		struct drf_reconcile_stats st;
		struct cgfs fs;
		char *log = NULL;
		size_t loglen = 0;
		FILE *lf = open_memstream(&log, &loglen);

		assert_int_equal(put(AT_FDCWD, root, "") < 0, 1); /* root is a directory */
		assert_int_equal(cgfs_open(&fs, root, false, &cgfs_recording_ops, &rec), 0);
		assert_int_equal(drf_reconciler_init(&rc, &fs, NULL, lf, false), 0);
		assert_int_equal(drf_reconcile(&rc, &e.cfg, e.knobs, &st), 0);
		assert_int_equal(st.errors, 1);
		fflush(lf);
		assert_non_null(strstr(log, "a/cpu.weight"));
		assert_non_null(strstr(log, strerror(errs[i])));
		/* b was reconciled all the same */
		assert_true(drf_knob_matches(DRF_KNOB_MEMORY_MAX, e.knobs[1].val[DRF_KNOB_MEMORY_MAX],
					     slurp("team/b/memory.max"), NULL, PAGE));
		drf_reconciler_free(&rc);
		cgfs_close(&fs);
		fclose(lf);
		free(log);
	}
	drf_enforced_free(&e);
}

/* Dry run: every change recorded, nothing changed. */
static void test_dry_run_changes_nothing(void **state)
{
	struct cgfs_recorder rec = { .inner = &ops, .pass_changes = false, .root = root };
	struct drf_enforced e;
	struct drf_reconciler rc;
	struct drf_reconcile_stats st;
	struct cgfs fs;
	char *out = NULL;
	size_t len = 0;

	(void)state;
	rec.out = open_memstream(&out, &len);
	load_enforced(&e, "");
	assert_int_equal(cgfs_open(&fs, root, false, &cgfs_recording_ops, &rec), 0);
	assert_int_equal(drf_reconciler_init(&rc, &fs, NULL, NULL, false), 0);
	assert_int_equal(drf_reconcile(&rc, &e.cfg, e.knobs, &st), 0);
	fflush(rec.out);
	assert_non_null(strstr(out, "mkdir "));
	assert_non_null(strstr(out, "/team/b/memory.max 104857600"));
	assert_true(rec.changes > 5);
	assert_null(slurp("a/cgroup.type")); /* not created */
	assert_string_equal(slurp("cgroup.subtree_control"), "");
	drf_reconciler_free(&rc);
	cgfs_close(&fs);
	fclose(rec.out);
	free(out);
	drf_enforced_free(&e);
}

/*
 * memory.max below usage: memory.high goes down first, memory.max waits until
 * usage is under it (here the caller's thread does it: async off).
 */
static void test_memory_tightening(void **state)
{
	struct drf_enforced e;
	struct drf_reconciler rc;
	struct drf_reconcile_stats st;
	struct cgfs fs;

	(void)state;
	load_enforced(&e, "mode = limit\n");
	assert_int_equal(cgfs_open(&fs, root, false, &ops, NULL), 0);
	assert_int_equal(drf_reconciler_init(&rc, &fs, NULL, NULL, false), 0);
	/* create the tree, then let b use 300M, far above its limit-mode cap */
	assert_int_equal(drf_reconcile(&rc, &e.cfg, e.knobs, &st), 0);
	assert_int_equal(put(fs.rootfd, "team/b/memory.max", "max\n"), 0);
	assert_int_equal(put(fs.rootfd, "team/b/memory.high", "max\n"), 0);
	assert_int_equal(put(fs.rootfd, "team/b/memory.current", "314572800\n"), 0);
	assert_int_equal(drf_reconcile(&rc, &e.cfg, e.knobs, &st), 0);
	assert_int_equal(st.pending, 1);
	assert_true(drf_knob_matches(DRF_KNOB_MEMORY_MAX, e.knobs[1].val[DRF_KNOB_MEMORY_MAX],
				     slurp("team/b/memory.high"), NULL, PAGE));
	assert_string_equal(slurp("team/b/memory.max"), "max");
	/* still above: still waiting, memory.max untouched */
	assert_int_equal(drf_reconcile(&rc, &e.cfg, e.knobs, &st), 0);
	assert_int_equal(st.pending, 1);
	assert_string_equal(slurp("team/b/memory.max"), "max");
	/* usage drops under the target: memory.max now, memory.high as planned */
	assert_int_equal(put(fs.rootfd, "team/b/memory.current", "1048576\n"), 0);
	assert_int_equal(drf_reconcile(&rc, &e.cfg, e.knobs, &st), 0);
	assert_int_equal(st.pending, 0);
	assert_true(drf_knob_matches(DRF_KNOB_MEMORY_MAX, e.knobs[1].val[DRF_KNOB_MEMORY_MAX],
				     slurp("team/b/memory.max"), NULL, PAGE));
	assert_true(drf_knob_matches(DRF_KNOB_MEMORY_HIGH, e.knobs[1].val[DRF_KNOB_MEMORY_HIGH],
				     slurp("team/b/memory.high"), NULL, PAGE));
	drf_reconciler_free(&rc);
	cgfs_close(&fs);
	drf_enforced_free(&e);
}

/* Removing a tenant from the config removes its cgroup only if it is empty. */
static void test_removed_tenants(void **state)
{
	struct drf_enforced e, e2;
	struct drf_reconciler rc;
	struct drf_reconcile_stats st;
	struct cgfs fs;
	char path[256], text[512], err[256];

	(void)state;
	load_enforced(&e, "");
	assert_int_equal(cgfs_open(&fs, root, false, &ops, NULL), 0);
	assert_int_equal(drf_reconciler_init(&rc, &fs, NULL, NULL, false), 0);
	assert_int_equal(drf_reconcile(&rc, &e.cfg, e.knobs, &st), 0);
	assert_int_equal(put(fs.rootfd, "a/cgroup.events", "populated 1\n"), 0);
	snprintf(path, sizeof(path), "%s/drfd.conf", dir);
	snprintf(text, sizeof(text), "[agent]\ncgroup-root = %s\n[capacity]\ncpu = 4\n[tenant c]\n",
		 root);
	assert_int_equal(t_write_file(path, text), 0);
	assert_int_equal(drf_enforced_load(&e2, path, NULL, err, sizeof(err)), 0);
	drf_reconcile_removed(&rc, &e.cfg, &e2.cfg);
	assert_non_null(slurp("a/cgroup.type"));   /* holds processes: kept */
	assert_null(slurp("team/b/cgroup.type"));  /* empty: removed */
	drf_reconciler_free(&rc);
	cgfs_close(&fs);
	drf_enforced_free(&e);
	drf_enforced_free(&e2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_paths_stay_beneath_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subtree_and_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconcile_writes_only_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconcile_failure_injection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_changes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_tightening, setup, teardown),
		cmocka_unit_test_setup_teardown(test_removed_tenants, setup, teardown),
	};

	return cmocka_run_group_tests_name("cgroupfs", tests, NULL, NULL);
}
