// SPDX-License-Identifier: MIT
/*
 * cgroupfs and the reconciler against a fake cgroup tree in a mkdtemp()
 * directory (tests/lib/fakecg.c: an ops table over the real one that behaves
 * like the kernel where the code depends on it). Failures are injected with
 * the recording ops, on every operation the reconciler uses.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "statedir.h"
#include "fakedrfd.h"
#include "fakecg.h"
#include "hostcheck.h"
#include "knobs.h"
#include "lock.h"
#include "reconcile.h"
#include "statefile.h"
#include "testlib.h"

#define PAGE FAKECG_PAGE
#define ALL SIZE_MAX
#define put fakecg_put

static char dir[64], root[128];
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

/*
 * A directory bind-mounted over a tenant's cgroup is another mount: not
 * followed (RESOLVE_NO_XDEV). Needs a mount namespace of its own (root).
 */
static void test_bind_mount_not_followed(void **state)
{
	char outside[256], inside[256], buf[64];
	struct cgfs fs;

	(void)state;
	t_needs_root("a mount namespace of its own");
	if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
		fail_msg("no mount namespace, as root: %s", strerror(errno));
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	assert_int_equal(mkdir(outside, 0755), 0);
	assert_int_equal(put(AT_FDCWD, strcat(outside, "/cpu.weight"), "7\n"), 0);
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	sub(inside, sizeof(inside), "a");
	assert_int_equal(mkdir(inside, 0755), 0);
	assert_int_equal(mount(outside, inside, "none", MS_BIND, NULL), 0);
	assert_int_equal(cgfs_open(&fs, root, false, &cgfs_real_ops, NULL), 0);
	assert_int_equal(cgfs_write(&fs, "a", "cpu.weight", "9"), -EXDEV);
	assert_int_equal(cgfs_read(&fs, "a", "cpu.weight", buf, sizeof(buf)), -EXDEV);
	cgfs_close(&fs);
	assert_int_equal(umount(inside), 0);
	assert_string_equal(slurp("../outside/cpu.weight"), "7");
}

static int count_child(void *data, const char *name)
{
	(void)name;
	(*(int *)data)++;
	return 0;
}

/*
 * Child cgroups (the real listing: the fake tree is directories), and the
 * processes of a subtree: every level counted, the walk bounded (past the
 * bound a lower bound, said), a symbolic link not followed, a backend that
 * lists none, a listing that fails.
 */
static void test_nprocs_tree(void **state)
{
	struct cgfs_recorder rec = { .inner = &ops, .pass_changes = true };
	struct cgfs_tree_procs p;
	struct cgfs fs, rfs;
	char outside[256];
	int n = 0;

	(void)state;
	ops.children = cgfs_real_ops.children;
	assert_int_equal(cgfs_open(&fs, root, false, &ops, NULL), 0);
	assert_int_equal(cgfs_mkdir_p(&fs, "t/a/x"), 0);
	assert_int_equal(cgfs_mkdir_p(&fs, "t/b"), 0);
	assert_int_equal(put(fs.rootfd, "t/cgroup.procs", "1\n"), 0);
	assert_int_equal(put(fs.rootfd, "t/a/cgroup.procs", "2\n3\n"), 0);
	assert_int_equal(put(fs.rootfd, "t/a/x/cgroup.procs", "4\n"), 0);
	assert_int_equal(put(fs.rootfd, "t/b/cgroup.procs", "5\n"), 0);
	/* A directory outside the root, linked from inside: not a child. */
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	assert_int_equal(mkdir(outside, 0755), 0);
	assert_int_equal(symlinkat(outside, fs.rootfd, "t/link"), 0);
	assert_int_equal(cgfs_children(&fs, "t", count_child, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(cgfs_nprocs(&fs, "t"), 1);
	assert_int_equal(cgfs_nprocs_tree(&fs, "t", CGFS_TREE_MAX, &p), 0);
	assert_int_equal(p.procs, 5);
	assert_int_equal(p.cgroups, 4);
	assert_false(p.capped);
	/* Bounded: two cgroups read, the count a lower bound. */
	assert_int_equal(cgfs_nprocs_tree(&fs, "t", 2, &p), 0);
	assert_int_equal(p.cgroups, 2);
	assert_true(p.capped);
	assert_true(p.procs == 2 || p.procs == 3);
	assert_int_equal(cgfs_nprocs_tree(&fs, "t", 0, &p), 0);
	assert_int_equal(p.cgroups, 1);
	assert_int_equal(p.procs, 1);
	assert_true(p.capped);
	/* A leaf: whole at a bound of one. */
	assert_int_equal(cgfs_nprocs_tree(&fs, "t/b", 1, &p), 0);
	assert_int_equal(p.procs, 1);
	assert_false(p.capped);
	assert_int_equal(cgfs_nprocs_tree(&fs, "nope", CGFS_TREE_MAX, &p), -ENOENT);
	/* The recorder passes the listing on, and fails it on demand: t/a's children unknown. */
	assert_int_equal(cgfs_open(&rfs, root, false, &cgfs_recording_ops, &rec), 0);
	assert_int_equal(cgfs_nprocs_tree(&rfs, "t", CGFS_TREE_MAX, &p), 0);
	assert_int_equal(p.procs, 5);
	rec.fault = (struct drf_fault){ .err = EACCES, .ops = CGFS_OP_CHILDREN, .path = "t/a" };
	assert_int_equal(cgfs_nprocs_tree(&rfs, "t", CGFS_TREE_MAX, &p), 0);
	assert_int_equal(p.procs, 4);
	assert_true(p.capped);
	assert_int_equal(rec.fault.hits, 1);
	/* The others are still listed: t/b's child counted though t/a's are not. */
	assert_int_equal(cgfs_mkdir_p(&fs, "t/b/y"), 0);
	assert_int_equal(put(fs.rootfd, "t/b/y/cgroup.procs", "6\n"), 0);
	assert_int_equal(cgfs_nprocs_tree(&rfs, "t", CGFS_TREE_MAX, &p), 0);
	assert_int_equal(p.procs, 5);
	assert_true(p.capped);
	assert_int_equal(rec.fault.hits, 2);
	assert_int_equal(rec.changes, 0);
	cgfs_close(&rfs);
	/* Ops that list no children: the cgroup alone, not said to be capped. */
	ops.children = NULL;
	assert_int_equal(cgfs_nprocs_tree(&fs, "t", CGFS_TREE_MAX, &p), 0);
	assert_int_equal(p.procs, 1);
	assert_false(p.capped);
	assert_int_equal(cgfs_children(&fs, "t", count_child, &n), 0);
	assert_int_equal(n, 2);
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
	assert_int_equal(cgfs_set_subtree(&fs, "", CGFS_CPU, CGFS_CPU | CGFS_MEMORY), 1);
	assert_int_equal(cgfs_subtree_control(&fs, "", &bits), 0);
	assert_int_equal(bits, CGFS_CPU | CGFS_PIDS);

	/* A populated cgroup is never removed; an empty one is. */
	assert_int_equal(cgfs_mkdir_p(&fs, "t/u"), 0);
	assert_int_equal(put(fs.rootfd, "t/u/cgroup.events", "populated 1\n"), 0);
	assert_int_equal(cgfs_remove(&fs, "t/u"), -EBUSY);
	assert_non_null(slurp("t/u/cgroup.type"));
	assert_int_equal(put(fs.rootfd, "t/u/cgroup.events", "populated 0\n"), 0);
	assert_int_equal(cgfs_remove(&fs, "t/u"), 0);
	assert_null(slurp("t/u/cgroup.type"));
	cgfs_close(&fs);
}

/* Writes the config; tenants a (cpu 3, memory 256M) and team/b (weight 2, memory 100M). */
static void write_conf(const char *agent, const char *capacity, const char *tenants)
{
	char path[256], text[2048];

	snprintf(path, sizeof(path), "%s/drfd.conf", dir);
	snprintf(text, sizeof(text), "[agent]\ncgroup-root = %s\n%s[capacity]\n%s%s", root, agent,
		 capacity, tenants);
	assert_int_equal(t_write_file(path, text), 0);
}

#define TWO_TENANTS \
	"[tenant a]\ncpu = 3\nmemory = 256M\n[tenant b]\ncgroup = team/b\nweight = 2\n" \
	"memory = 100M\n"

static void load(struct fakeplan *e, const struct drf_io_target *io)
{
	char path[256], err[512];

	snprintf(path, sizeof(path), "%s/drfd.conf", dir);
	if (fakeplan_load(e, path, io, err, sizeof(err)) < 0) {
		print_error("%s\n", err);
		fail();
	}
}

static void load_two(struct fakeplan *e, const char *agent)
{
	write_conf(agent, "cpu = 4\nmemory = 1G\n", TWO_TENANTS);
	load(e, NULL);
}

/* Every knob of every tenant holds what the plan wants. */
static bool converged(const struct fakeplan *e, const struct drf_io_target *io)
{
	for (size_t i = 0; i < e->decl.cfg.n_tenants; i++)
		for (int k = 0; k < DRF_NKNOBS; k++) {
			char rel[256];
			const char *have;

			if (!e->plan.knobs[i].set[k])
				continue;
			snprintf(rel, sizeof(rel), "%s/%s", e->decl.cfg.tenants[i].cgroup,
				 drf_knob_file(k, io));
			have = slurp(rel);
			if (!have || !drf_knob_matches(k, e->plan.knobs[i].val[k], have, io, PAGE)) {
				print_message("not converged: %s is '%s', want '%s'\n", rel,
					      have ? have : "(missing)", e->plan.knobs[i].val[k]);
				return false;
			}
		}
	return true;
}

struct fixture {
	struct fakeplan e;
	struct drf_reconciler rc;
	struct cgfs fs;
	struct cgfs_recorder rec;
	struct drf_reconcile_stats st;
};

/* A reconciler over the fake tree, through a recorder that can inject faults. */
static void fixture_open(struct fixture *f, const struct drf_io_target *io, bool async)
{
	f->rec = (struct cgfs_recorder){ .inner = &ops, .pass_changes = true, .root = root };
	assert_int_equal(cgfs_open(&f->fs, root, false, &cgfs_recording_ops, &f->rec), 0);
	assert_int_equal(drf_reconciler_init(&f->rc, &f->fs, io, NULL, async, PAGE), 0);
	assert_int_equal(drf_reconciler_set(&f->rc, &f->e.plan), 0);
}

static void fixture_close(struct fixture *f)
{
	drf_reconciler_free(&f->rc);
	cgfs_close(&f->fs);
	fakeplan_free(&f->e);
}

static void tick(struct fixture *f, size_t verify)
{
	assert_int_equal(drf_reconcile_tick(&f->rc, verify, &f->st), 0);
}

/*
 * [group NAME] through the reconciler: the H-DRF paper's example (GPUs played
 * by memory). The group's cgroup n2 is made with its tenants below it, and its
 * knobs come from its allocation: every core (the largest cpu.weight beside
 * n1, which has none) and 5G of memory.low.
 */
static void test_reconcile_groups(void **state)
{
	struct fixture f;

	(void)state;
	write_conf("", "cpu = 10\nmemory = 10G\n",
		   "[tenant n1]\ntask-memory = 1G\n[group n2]\n"
		   "[tenant n21]\ngroup = n2\ntask-cpu = 1\n"
		   "[tenant n22]\ngroup = n2\ntask-memory = 1G\n");
	load(&f.e, NULL);
	fixture_open(&f, NULL, false);
	tick(&f, ALL);
	assert_int_equal(f.st.errors, 0);
	assert_int_equal(f.st.created, 4); /* n1, n2, n2/n21, n2/n22 */
	assert_true(converged(&f.e, NULL));
	assert_string_equal(slurp("n2/cgroup.subtree_control"), "cpu memory");
	assert_string_equal(slurp("n2/cpu.weight"), "10000");
	assert_string_equal(slurp("n1/cpu.weight"), "1");
	assert_string_equal(slurp("n2/memory.low"), "5368709120");
	assert_string_equal(slurp("n1/memory.low"), "5368709120");
	assert_string_equal(slurp("n2/n21/cpu.weight"), "10000");
	assert_string_equal(slurp("n2/n22/memory.low"), "5368709120");
	/* The root's protection covers its children's: n1's and n2's. */
	assert_string_equal(slurp("memory.low"), "10737418240");
	fixture_close(&f);
}

/* A host whose cgroups' protection is a table; -ENOENT past it (the root cgroup). */
static const struct {
	const char *path;
	unsigned long long low, min;
	int err;
} prot_table[] = {
	{ "/sys/fs/cgroup/outer", 1ULL << 30, 0, 0 },
	{ "/sys/fs/cgroup/outer/mid", 0, 64 << 20, 0 },
	{ "/sys/fs/cgroup/outer/mid/low", 32 << 20, 0, 0 },
	{ "/sys/fs/cgroup/bad", 0, 0, -EACCES },
};

static int table_protection(void *ctx, const char *path, unsigned long long *low,
			    unsigned long long *min)
{
	(void)ctx;
	for (size_t i = 0; i < sizeof(prot_table) / sizeof(prot_table[0]); i++)
		if (strcmp(prot_table[i].path, path) == 0) {
			*low = prot_table[i].low;
			*min = prot_table[i].min;
			return prot_table[i].err;
		}
	return -ENOENT;
}

/*
 * The ancestor that caps drfd's root's protection: the one with the least
 * (memory.low or memory.min, the larger), if below what the root protects;
 * none under the root cgroup, or with nothing to protect; a read that fails,
 * said with its path.
 */
static void test_protection_cap(void **state)
{
	struct drf_host_ops h = { .cgroup_protection = table_protection };
	struct drf_prot_cap c;

	(void)state;
	drf_protection_cap(&h, "/sys/fs/cgroup/outer/mid/low/drf", 100 << 20, &c);
	assert_true(c.capped);
	assert_string_equal(c.ancestor, "/sys/fs/cgroup/outer/mid/low");
	assert_true(c.low == 32 << 20 && c.need == 100 << 20);
	/* mid's memory.min counts as protection: 64M, the least below 80M. */
	drf_protection_cap(&h, "/sys/fs/cgroup/outer/mid/drf", 80 << 20, &c);
	assert_true(c.capped);
	assert_string_equal(c.ancestor, "/sys/fs/cgroup/outer/mid");
	assert_true(c.min == 64 << 20);
	drf_protection_cap(&h, "/sys/fs/cgroup/outer/mid/drf", 64 << 20, &c);
	assert_false(c.capped);
	/* A child of the root cgroup: its own memory.low is its protection. */
	drf_protection_cap(&h, "/sys/fs/cgroup/drf.slice", 1ULL << 40, &c);
	assert_false(c.capped);
	assert_int_equal(c.err, 0);
	drf_protection_cap(&h, "/sys/fs/cgroup/outer/mid/low/drf", 0, &c);
	assert_false(c.capped);
	drf_protection_cap(&h, "/sys/fs/cgroup/bad/drf", 1, &c);
	assert_false(c.capped);
	assert_int_equal(c.err, -EACCES);
	assert_string_equal(c.err_path, "/sys/fs/cgroup/bad");
	h.cgroup_protection = NULL;
	drf_protection_cap(&h, "/sys/fs/cgroup/outer/mid/low/drf", 100 << 20, &c);
	assert_false(c.capped);
}

static void test_reconcile_writes_only_changes(void **state)
{
	struct fixture f;

	(void)state;
	load_two(&f.e, "");
	fixture_open(&f, NULL, false);
	tick(&f, ALL);
	assert_int_equal(f.st.errors, 0);
	assert_int_equal(f.st.created, 3); /* a, team, team/b */
	assert_true(f.st.writes > 0);
	assert_string_equal(slurp("cgroup.subtree_control"), "cpu memory");
	assert_string_equal(slurp("team/cgroup.subtree_control"), "cpu memory");
	assert_true(converged(&f.e, NULL));
	/* memory.max of 100M is page-aligned; b's low is rounded by the kernel */
	assert_string_equal(slurp("team/b/memory.max"), "104857600");

	/* Second pass, every knob read back: nothing to do, even where the kernel rounded. */
	f.rec.changes = 0;
	tick(&f, ALL);
	assert_int_equal(f.st.writes + f.st.created + f.st.foreign + f.st.errors, 0);
	assert_int_equal(f.rec.changes, 0);
	assert_int_equal(f.st.verified, 4); /* a, team/b, the inner node team and the root */

	/* Someone else changes a knob: noticed, counted and put back. */
	assert_int_equal(put(f.fs.rootfd, "a/cpu.weight", "42\n"), 0);
	tick(&f, ALL);
	assert_int_equal(f.st.foreign, 1);
	assert_int_equal(f.st.writes, 1);
	assert_string_equal(slurp("a/cpu.weight"), f.e.plan.knobs[0].val[DRF_KNOB_CPU_WEIGHT]);
	/* And the root's memory.low, as a tenant's knob. */
	assert_int_equal(put(f.fs.rootfd, "memory.low", "0\n"), 0);
	tick(&f, ALL);
	assert_int_equal(f.st.foreign, 1);
	assert_int_equal(f.st.writes, 1);
	assert_true(strtoull(slurp("memory.low"), NULL, 10) ==
		    strtoull(f.e.plan.root->val[DRF_KNOB_MEMORY_LOW], NULL, 10) / FAKECG_PAGE * FAKECG_PAGE);
	assert_true(strtoull(slurp("memory.low"), NULL, 10) > 0);
	fixture_close(&f);
}

/* A steady tick with no verification reads and writes nothing at all. */
static void test_steady_tick_touches_nothing(void **state)
{
	struct fixture f;

	(void)state;
	load_two(&f.e, "");
	fixture_open(&f, NULL, false);
	tick(&f, ALL);
	assert_int_equal(put(f.fs.rootfd, "a/cpu.weight", "42\n"), 0);
	f.rec.fault.path = "cpu.weight"; /* any read of it would now fail */
	f.rec.fault.err = EIO;
	f.rec.fault.ops = CGFS_OP_READ;
	f.rec.changes = 0;
	tick(&f, 0);
	assert_int_equal(f.rec.fault.hits, 0);
	assert_int_equal(f.rec.changes, 0);
	/* the foreign value is still there: found only when a's turn comes */
	assert_string_equal(slurp("a/cpu.weight"), "42");
	fixture_close(&f);
}

/*
 * Round robin: with one tenant verified per tick, a foreign change on any
 * tenant is repaired within n ticks (the documented bound: verify-period).
 */
static void test_verify_round_robin_bound(void **state)
{
	struct fixture f;
	int repaired_at = -1;

	(void)state;
	write_conf("", "cpu = 4\n", "[tenant a]\n[tenant b]\n[tenant c]\n[tenant d]\n");
	load(&f.e, NULL);
	fixture_open(&f, NULL, false);
	tick(&f, ALL);
	assert_int_equal(put(f.fs.rootfd, "c/cpu.weight", "42\n"), 0);
	for (int i = 0; i < 4 && repaired_at < 0; i++) {
		tick(&f, 1);
		assert_int_equal(f.st.verified, 1);
		if (strcmp(slurp("c/cpu.weight"), f.e.plan.knobs[2].val[DRF_KNOB_CPU_WEIGHT]) == 0)
			repaired_at = i;
	}
	assert_true(repaired_at >= 0);
	assert_int_equal(drf_verify_per_tick(1000, 1000000, 30000000), 34);
	assert_int_equal(drf_verify_per_tick(1000, 1000000, 1000000), 1000);
	assert_int_equal(drf_verify_per_tick(3, 1000000, 30000000), 1);
	assert_int_equal(drf_verify_per_tick(0, 1000000, 30000000), 0);
	fixture_close(&f);
}

/* A reload writes a changed tenant at once, without a verifying pass. */
static void test_reload_writes_at_once(void **state)
{
	struct fixture f;
	struct fakeplan e2;

	(void)state;
	load_two(&f.e, "");
	fixture_open(&f, NULL, false);
	tick(&f, ALL);
	/* b's memory demand falls; cpu, not memory, decides the allocation: a keeps its values */
	write_conf("", "cpu = 4\nmemory = 1G\n",
		   "[tenant a]\ncpu = 3\nmemory = 256M\n[tenant b]\ncgroup = team/b\nweight = 2\n"
		   "memory = 90M\n");
	load(&e2, NULL);
	for (int k = 0; k < DRF_NKNOBS; k++) {
		assert_int_equal(e2.plan.knobs[0].set[k], f.e.plan.knobs[0].set[k]);
		assert_string_equal(e2.plan.knobs[0].val[k], f.e.plan.knobs[0].val[k]);
	}
	assert_int_equal(drf_reconciler_set(&f.rc, &e2.plan), 0);
	fakeplan_free(&f.e);
	f.e = e2;
	f.rec.fault.path = "a/cpu.weight"; /* a is unchanged: not even read */
	f.rec.fault.err = EIO;
	f.rec.fault.ops = CGFS_OP_READ | CGFS_OP_WRITE;
	tick(&f, 0);
	assert_int_equal(f.rec.fault.hits, 0);
	assert_true(f.st.writes > 0);
	assert_int_equal(f.st.errors, 0);
	assert_true(converged(&f.e, NULL));
	fixture_close(&f);
}

struct fault {
	const char *what;     /* for messages */
	const char *path;     /* suffix */
	unsigned ops;
	int err;
	bool short_write;
};

/* Nothing recorded outside the root, and nothing beside it in the temp dir. */
static void assert_only_under_root(const char *log)
{
	char prefix[160];
	const char *l = log;

	snprintf(prefix, sizeof(prefix), "%s/", root);
	while (l && *l) {
		const char *sp = strchr(l, ' ');

		assert_non_null(sp);
		if (strncmp(sp + 1, prefix, strlen(prefix)) != 0) {
			print_error("change outside the root: %.*s\n", (int)strcspn(l, "\n"), l);
			fail();
		}
		l = strchr(l, '\n');
		if (l)
			l++;
	}
}

/*
 * Every cgroupfs operation the reconciler uses, failing with each errno: the
 * tick reports it, and once the fault clears the next ticks converge.
 */
static void test_fault_matrix(void **state)
{
	static const struct fault faults[] = {
		{ "mkdir of a tenant", "a", CGFS_OP_MKDIR, 0, false },
		{ "mkdir of an inner node", "team", CGFS_OP_MKDIR, 0, false },
		{ "read of cgroup.type", "b/cgroup.type", CGFS_OP_READ, 0, false },
		{ "root subtree_control write", "cgroup.subtree_control", CGFS_OP_WRITE, 0, false },
		{ "cpu.weight read", "a/cpu.weight", CGFS_OP_READ, 0, false },
		{ "cpu.weight write", "a/cpu.weight", CGFS_OP_WRITE, 0, false },
		{ "cpu.max read", "team/b/cpu.max", CGFS_OP_READ, 0, false },
		{ "cpu.max write", "team/b/cpu.max", CGFS_OP_WRITE, 0, false },
		{ "memory.low read", "a/memory.low", CGFS_OP_READ, 0, false },
		{ "memory.low write", "a/memory.low", CGFS_OP_WRITE, 0, false },
		{ "memory.high read", "team/b/memory.high", CGFS_OP_READ, 0, false },
		{ "memory.high write", "team/b/memory.high", CGFS_OP_WRITE, 0, false },
		{ "memory.max read", "team/b/memory.max", CGFS_OP_READ, 0, false },
		{ "memory.max write", "team/b/memory.max", CGFS_OP_WRITE, 0, false },
		{ "cpu.weight short write", "a/cpu.weight", CGFS_OP_WRITE, 0, true },
		{ "memory.max short write", "team/b/memory.max", CGFS_OP_WRITE, 0, true },
	};
	static const int errs[] = { EBUSY, EINVAL, ENOENT, EACCES, ENOSPC, EINTR };

	(void)state;
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		size_t nerr = faults[i].short_write ? 1 : sizeof(errs) / sizeof(errs[0]);

		for (size_t j = 0; j < nerr; j++) {
			struct fixture f;
			char *log = NULL;
			size_t loglen = 0;

			fakecg_teardown(dir);
			assert_int_equal(fakecg_setup(dir, sizeof(dir), root, sizeof(root)), 0);
			load_two(&f.e, "mode = limit\n");
			fixture_open(&f, NULL, false);
			f.rec.out = open_memstream(&log, &loglen);
			/* Faults on reads need a tree to read: make it first. */
			if (strchr(faults[i].path, '.') && !strstr(faults[i].path, "cgroup."))
				tick(&f, ALL);
			/*
			 * A knob changed by someone else, so that a verify must write it
			 * (a memory value more than a page away: within one, the kernel
			 * holds the same limit).
			 */
			if (strstr(faults[i].path, ".") && !strstr(faults[i].path, "cgroup.") &&
			    slurp(faults[i].path))
				put(f.fs.rootfd, faults[i].path,
				    strstr(faults[i].path, "memory.") ? "28672\n" : "1\n");
			f.rec.fault.path = faults[i].path;
			f.rec.fault.ops = faults[i].ops;
			f.rec.fault.err = errs[j];
			f.rec.fail_short = faults[i].short_write;
			tick(&f, ALL);
			/* ENOENT on cgroup.type is how absence reads: mkdir is tried, no error. */
			if (errs[j] == ENOENT && strstr(faults[i].path, "cgroup.type"))
				f.st.errors = f.rec.fault.hits > 0;
			if (f.rec.fault.hits == 0 || f.st.errors == 0) {
				print_error("%s, %s: fault reached %zu times, %u errors reported\n",
					    faults[i].what, strerror(errs[j]), f.rec.fault.hits,
					    f.st.errors);
				fail();
			}
			/* The fault clears: retried without waiting for a verify round. */
			f.rec.fault = (struct drf_fault){ 0 };
			tick(&f, 0);
			tick(&f, 0);
			if (!converged(&f.e, NULL) || f.st.errors || f.st.retrying) {
				print_error("%s, %s: no convergence after the fault cleared (%u errors, "
					    "%u retrying)\n", faults[i].what, strerror(errs[j]),
					    f.st.errors, f.st.retrying);
				fail();
			}
			/* and a full verify finds nothing left to do */
			tick(&f, ALL);
			assert_int_equal(f.st.writes + f.st.errors, 0);
			fflush(f.rec.out);
			assert_only_under_root(log);
			fclose(f.rec.out);
			free(log);
			fixture_close(&f);
		}
	}
}

/* Removal: rmdir failing, and cgroup.events unreadable; orphans removed once it clears. */
static void test_fault_on_removal(void **state)
{
	static const struct fault faults[] = {
		{ "rmdir", "team/b", CGFS_OP_RMDIR, 0, false },
		{ "cgroup.events read", "team/b/cgroup.events", CGFS_OP_READ, 0, false },
	};
	static const int errs[] = { EBUSY, EINVAL, EACCES, ENOSPC, EINTR };

	(void)state;
	for (size_t i = 0; i < 2; i++)
		for (size_t j = 0; j < sizeof(errs) / sizeof(errs[0]); j++) {
			struct fixture f;
			struct fakeplan e2;

			fakecg_teardown(dir);
			assert_int_equal(fakecg_setup(dir, sizeof(dir), root, sizeof(root)), 0);
			load_two(&f.e, "");
			fixture_open(&f, NULL, false);
			tick(&f, ALL);
			write_conf("", "cpu = 4\nmemory = 1G\n", "[tenant a]\ncpu = 3\n");
			load(&e2, NULL);
			f.rec.fault.path = faults[i].path;
			f.rec.fault.ops = faults[i].ops;
			f.rec.fault.err = errs[j];
			assert_int_equal(drf_reconciler_set(&f.rc, &e2.plan), 0);
			fakeplan_free(&f.e);
			f.e = e2;
			/* The departed are removed by the pass after, not by the new plan. */
			assert_int_equal(f.rec.fault.hits, 0);
			tick(&f, 0);
			assert_true(f.rec.fault.hits > 0);
			/* kept, reported: b, and the inner node team that holds it */
			assert_int_equal(f.rc.n_orphans, 2);
			assert_non_null(slurp("team/b/cgroup.type"));
			f.rec.fault = (struct drf_fault){ 0 };
			tick(&f, 0);
			assert_int_equal(f.st.removed, 2);
			assert_int_equal(f.rc.n_orphans, 0);
			assert_null(slurp("team/cgroup.type"));
			assert_null(slurp("team/b/cgroup.type"));
			fixture_close(&f);
		}
}

/* One failed subtree_control write does not stop the rest of the pass. */
static void test_subtree_failure_pass_goes_on(void **state)
{
	struct fixture f;

	(void)state;
	load_two(&f.e, "");
	fixture_open(&f, NULL, false);
	tick(&f, ALL);
	/* the root stops passing memory (someone wrote -memory) and cannot be fixed */
	assert_int_equal(put(f.fs.rootfd, "cgroup.subtree_control", "cpu\n"), 0);
	assert_int_equal(put(f.fs.rootfd, "a/cpu.weight", "42\n"), 0);
	f.rec.fault.path = "cgroup.subtree_control";
	f.rec.fault.ops = CGFS_OP_WRITE;
	f.rec.fault.err = EBUSY;
	tick(&f, ALL);
	assert_true(f.st.errors >= 1);
	assert_true(f.rc.root_failed & CGFS_MEMORY);
	/* a's foreign cpu.weight was repaired all the same */
	assert_string_equal(slurp("a/cpu.weight"), f.e.plan.knobs[0].val[DRF_KNOB_CPU_WEIGHT]);
	f.rec.fault = (struct drf_fault){ 0 };
	tick(&f, 0);
	assert_string_equal(slurp("cgroup.subtree_control"), "cpu memory");
	assert_int_equal(f.rc.root_failed, 0);
	fixture_close(&f);
}

/* A tenant's cgroup removed by someone else is recreated, and said so. */
static void test_recreated(void **state)
{
	struct fixture f;

	(void)state;
	load_two(&f.e, "");
	fixture_open(&f, NULL, false);
	tick(&f, ALL);
	assert_int_equal(ops.rmdir(NULL, f.fs.rootfd, "a"), 0);
	tick(&f, ALL);
	assert_int_equal(f.st.recreated, 1);
	assert_int_equal(f.st.created, 0);
	assert_int_equal(f.st.foreign, 0);
	assert_true(converged(&f.e, NULL));
	fixture_close(&f);
}

/* Dry run: every change recorded, nothing changed. */
static void test_dry_run_changes_nothing(void **state)
{
	struct cgfs_recorder rec = { .inner = &ops, .pass_changes = false, .root = root };
	struct fakeplan e;
	struct drf_reconciler rc;
	struct drf_reconcile_stats st;
	struct cgfs fs;
	char *out = NULL;
	size_t len = 0;

	(void)state;
	rec.out = open_memstream(&out, &len);
	load_two(&e, "");
	assert_int_equal(cgfs_open(&fs, root, false, &cgfs_recording_ops, &rec), 0);
	assert_int_equal(drf_reconciler_init(&rc, &fs, NULL, NULL, false, PAGE), 0);
	assert_int_equal(drf_reconciler_set(&rc, &e.plan), 0);
	assert_int_equal(drf_reconcile_tick(&rc, ALL, &st), 0);
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
	fakeplan_free(&e);
}

/*
 * memory.max below usage: memory.high goes down first, memory.max waits until
 * usage is under it. async: on the worker thread (run under ThreadSanitizer by
 * make check-tsan), with its write failing once: counted and retried.
 */
static void memory_tightening(bool async)
{
	struct fixture f;

	load_two(&f.e, "mode = limit\n");
	fixture_open(&f, NULL, async);
	/* create the tree, then let b use 300M, far above its limit-mode cap */
	tick(&f, ALL);
	assert_int_equal(put(f.fs.rootfd, "team/b/memory.max", "max\n"), 0);
	assert_int_equal(put(f.fs.rootfd, "team/b/memory.high", "max\n"), 0);
	assert_int_equal(put(f.fs.rootfd, "team/b/memory.current", "314572800\n"), 0);
	if (async) {
		f.rec.fault.path = "team/b/memory.high";
		f.rec.fault.ops = CGFS_OP_WRITE;
		f.rec.fault.err = EBUSY;
	}
	tick(&f, ALL);
	assert_int_equal(f.st.pending, 1);
	if (async) {
		/* the worker's failure reaches the next tick: counted, and posted again */
		drf_reconciler_drain(&f.rc);
		assert_int_equal(f.rc.worker_failures, 1);
		assert_true(f.rec.fault.hits > 0);
		assert_string_equal(slurp("team/b/memory.high"), "max");
		f.rec.fault = (struct drf_fault){ 0 };
		tick(&f, 0);
		assert_int_equal(f.st.pending, 1);
		drf_reconciler_drain(&f.rc);
	}
	assert_true(drf_knob_matches(DRF_KNOB_MEMORY_MAX, f.e.plan.knobs[1].val[DRF_KNOB_MEMORY_MAX],
				     slurp("team/b/memory.high"), NULL, PAGE));
	assert_string_equal(slurp("team/b/memory.max"), "max");
	/* still above: still waiting, memory.max untouched */
	tick(&f, ALL);
	assert_int_equal(f.st.pending, 1);
	assert_string_equal(slurp("team/b/memory.max"), "max");
	/* usage drops under the target: memory.max now, memory.high as planned */
	assert_int_equal(put(f.fs.rootfd, "team/b/memory.current", "1048576\n"), 0);
	tick(&f, 0);
	assert_int_equal(f.st.pending, 0);
	assert_true(converged(&f.e, NULL));
	tick(&f, ALL);
	assert_int_equal(f.st.writes + f.st.errors, 0);
	fixture_close(&f);
}

static void test_memory_tightening(void **state)
{
	(void)state;
	memory_tightening(false);
}

static void test_memory_tightening_async(void **state)
{
	(void)state;
	memory_tightening(true);
}

/* Removing a tenant removes its cgroup only if empty; an orphan goes once empty. */
static void test_removed_tenants_and_orphans(void **state)
{
	struct fixture f;
	struct fakeplan e2;

	(void)state;
	load_two(&f.e, "");
	fixture_open(&f, NULL, false);
	tick(&f, ALL);
	drf_reconciler_membership_changed(&f.rc);
	assert_int_equal(put(f.fs.rootfd, "a/cgroup.events", "populated 1\n"), 0);
	write_conf("", "cpu = 4\n", "[tenant c]\n");
	load(&e2, NULL);
	assert_int_equal(drf_reconciler_set(&f.rc, &e2.plan), 0);
	fakeplan_free(&f.e);
	f.e = e2;
	assert_true(drf_reconciler_membership_changed(&f.rc));
	/* The departed are removed by the pass after, not by the new plan. */
	assert_non_null(slurp("team/b/cgroup.type"));
	tick(&f, 0);
	assert_true(drf_reconciler_membership_changed(&f.rc));
	assert_non_null(slurp("a/cgroup.type"));   /* holds processes: kept */
	assert_null(slurp("team/b/cgroup.type"));  /* empty: removed */
	assert_int_equal(f.rc.n_orphans, 1);
	assert_string_equal(f.rc.orphans[0].cgroup, "a");
	tick(&f, 0);
	assert_int_equal(f.rc.n_orphans, 1);
	assert_int_equal(put(f.fs.rootfd, "a/cgroup.events", "populated 0\n"), 0);
	tick(&f, 0);
	assert_int_equal(f.st.removed, 1);
	assert_int_equal(f.rc.n_orphans, 0);
	assert_null(slurp("a/cgroup.type"));
	fixture_close(&f);
}

/* io.max: every field drfd owns, a foreign riops cleared; io weights' device lines. */
/*
 * Nested tenant paths: cgroup v2 divides among siblings, so weights are
 * proportional within each sibling group and the inner node team gets its
 * tenants' sum. Tree and expected values:
 *
 *   root                cpu 6
 *    |- db              cpu 3, memory 256M     cpu.weight 10000 (3 of the root's 3 max)
 *    '- team            (inner: 2 + 1 = 3)     cpu.weight 10000, memory.low 150M
 *        |- web         cpu 2, memory 100M     cpu.weight 10000
 *        '- api         cpu 1, memory 50M      cpu.weight 5000
 *
 * web's share of the cpu is 1/2 * 2/3 = 2/6, api's 1/2 * 1/3 = 1/6: their
 * allocations. With team left at the default weight 100, web would get about
 * 1/101 of it.
 */
static void test_nested_weights(void **state)
{
	struct fixture f;
	struct fakeplan e2;

	(void)state;
	write_conf("", "cpu = 6\nmemory = 1G\n",
		   "[tenant db]\ncpu = 3\nmemory = 256M\n"
		   "[tenant web]\ncgroup = team/web\ncpu = 2\nmemory = 100M\n"
		   "[tenant api]\ncgroup = team/api\ncpu = 1\nmemory = 50M\n");
	load(&f.e, NULL);
	assert_int_equal(f.e.plan.n_inner, 1);
	assert_string_equal(f.e.plan.inner[0].cgroup, "team");
	fixture_open(&f, NULL, false);
	tick(&f, ALL);
	assert_int_equal(f.st.errors, 0);
	assert_string_equal(slurp("db/cpu.weight"), "10000");
	assert_string_equal(slurp("team/cpu.weight"), "10000");
	assert_string_equal(slurp("team/web/cpu.weight"), "10000");
	assert_string_equal(slurp("team/api/cpu.weight"), "5000");
	assert_string_equal(slurp("team/memory.low"), "157286400");
	assert_string_equal(slurp("team/memory.max"), "max");
	assert_string_equal(slurp("team/cgroup.subtree_control"), "cpu memory");
	assert_true(converged(&f.e, NULL));

	/* Someone else changes the inner node: found and put back like a tenant's knob. */
	assert_int_equal(put(f.fs.rootfd, "team/cpu.weight", "100\n"), 0);
	tick(&f, ALL);
	assert_int_equal(f.st.foreign, 1);
	assert_string_equal(slurp("team/cpu.weight"), "10000");

	/* web moves to the top; api leaves: team is above no tenant and goes. */
	write_conf("", "cpu = 6\nmemory = 1G\n",
		   "[tenant db]\ncpu = 3\nmemory = 256M\n"
		   "[tenant web]\ncpu = 2\nmemory = 100M\n");
	load(&e2, NULL);
	assert_int_equal(e2.plan.n_inner, 0);
	assert_int_equal(drf_reconciler_set(&f.rc, &e2.plan), 0);
	fakeplan_free(&f.e);
	f.e = e2;
	tick(&f, ALL);
	assert_int_equal(f.st.errors, 0);
	assert_null(slurp("team/cgroup.type"));
	assert_int_equal(f.rc.n_orphans, 0);
	/* flat again: weights among all tenants, db's 3 against web's 2 */
	assert_string_equal(slurp("db/cpu.weight"), "10000");
	assert_string_equal(slurp("web/cpu.weight"), "6667");
	assert_true(converged(&f.e, NULL));
	fixture_close(&f);
}

static void test_io_fields(void **state)
{
	const struct drf_io_target bfq = { .major = 8, .minor = 0, .weights = DRF_IO_WEIGHTS_BFQ };
	struct fixture f;

	(void)state;
	write_conf("", "cpu = 4\nio-device = 8:0\nio-read-bps = 100M\nio-write-bps = 100M\n",
		   "[tenant a]\nio-read-bps = 10M\n[tenant b]\n");
	load(&f.e, &bfq);
	fixture_open(&f, &bfq, false);
	tick(&f, ALL);
	assert_true(converged(&f.e, &bfq));
	assert_string_equal(slurp("a/io.max"), "8:0 rbps=10485760 wbps=max riops=max wiops=max");
	/* someone limits a's read iops and gives it a device weight of its own */
	assert_int_equal(put(f.fs.rootfd, "a/io.max",
			     "8:0 rbps=10485760 wbps=max riops=100 wiops=max\n"), 0);
	assert_int_equal(put(f.fs.rootfd, "a/io.bfq.weight", "default 1000\n8:0 5\n"), 0);
	tick(&f, ALL);
	assert_int_equal(f.st.foreign, 2);
	assert_string_equal(slurp("a/io.max"), "8:0 rbps=10485760 wbps=max riops=max wiops=max");
	assert_null(strstr(slurp("a/io.bfq.weight"), "8:0"));
	tick(&f, ALL);
	assert_int_equal(f.st.writes, 0);
	fixture_close(&f);
}

/* The limits a plan's knobs set, read back from their values (io.max: by key, whole). */
static void test_knob_limits(void **state)
{
	struct drf_knobs k;
	double lim[DRF_NRES];

	(void)state;
	memset(&k, 0, sizeof(k));
	k.set[DRF_KNOB_CPU_MAX] = k.set[DRF_KNOB_MEMORY_MAX] = k.set[DRF_KNOB_IO_MAX] = true;
	snprintf(k.val[DRF_KNOB_CPU_MAX], DRF_KNOB_LEN, "50000 100000");
	snprintf(k.val[DRF_KNOB_MEMORY_MAX], DRF_KNOB_LEN, "max");
	snprintf(k.val[DRF_KNOB_IO_MAX], DRF_KNOB_LEN,
		 "8:0 rbps=10485760 wbps=max riops=max wiops=max");
	drf_knobs_limits(&k, lim);
	assert_true(lim[DRF_RES_CPU] == 0.5);
	assert_true(isinf(lim[DRF_RES_MEMORY]));
	assert_true(lim[DRF_RES_IO_READ] == 10485760);
	assert_true(isinf(lim[DRF_RES_IO_WRITE]));
	assert_true(isinf(lim[DRF_RES_NET]));
	snprintf(k.val[DRF_KNOB_MEMORY_MAX], DRF_KNOB_LEN, "1073741824");
	/* The last key of the line, and a key that only ends like one (xrbps) is not it. */
	snprintf(k.val[DRF_KNOB_IO_MAX], DRF_KNOB_LEN,
		 "8:16 xrbps=5 riops=max wiops=max wbps=2048");
	drf_knobs_limits(&k, lim);
	assert_true(lim[DRF_RES_MEMORY] == 1073741824);
	assert_true(isinf(lim[DRF_RES_IO_READ]));
	assert_true(lim[DRF_RES_IO_WRITE] == 2048);
}

/*
 * io.max read back: our device's line only (8:1 is not 8:16), every field
 * compared, a field or a line that is not there is max.
 */
static void test_io_max_matches(void **state)
{
	const struct drf_io_target io = { .major = 8, .minor = 1, .weights = DRF_IO_WEIGHTS_BFQ };
	const char *want = "8:1 rbps=1000 wbps=max riops=max wiops=max";

	(void)state;
	assert_true(drf_knob_matches(DRF_KNOB_IO_MAX, want,
				     "8:16 rbps=5 wbps=5\n"
				     "8:1 rbps=1000 wbps=max riops=max wiops=max", &io, 4096));
	assert_true(drf_knob_matches(DRF_KNOB_IO_MAX, want, "8:1 rbps=1000", &io, 4096));
	assert_false(drf_knob_matches(DRF_KNOB_IO_MAX, want, "8:16 rbps=1000", &io, 4096));
	assert_false(drf_knob_matches(DRF_KNOB_IO_MAX, want, "8:1 rbps=1000 riops=7", &io, 4096));
	assert_false(drf_knob_matches(DRF_KNOB_IO_MAX, want, "8:1 xrbps=1000", &io, 4096));
	assert_true(drf_knob_matches(DRF_KNOB_IO_MAX, "8:1 rbps=max", "", &io, 4096));
	assert_false(drf_knob_matches(DRF_KNOB_IO_MAX, want, want, NULL, 4096));
}

/*
 * A foreign device weight is dropped before "default N" is written, not after:
 * BFQ drops a device's weight by setting the group to the weight in effect
 * (bfq_io_set_device_weight()), which for a tenant that did IO meanwhile is
 * the foreign one; after "default N" that would put it back, with the file
 * showing only "default N" (t_ioweight: B/A 1.0 instead of 3).
 */
static void test_io_weight_device_reset_first(void **state)
{
	const struct drf_io_target bfq = { .major = 8, .minor = 0, .weights = DRF_IO_WEIGHTS_BFQ };
	struct fixture f;
	char *out = NULL, *reset, *dflt;
	size_t len = 0;

	(void)state;
	write_conf("", "io-device = 8:0\nio-read-bps = 100M\n", "[tenant a]\n[tenant b]\nweight = 3\n");
	load(&f.e, &bfq);
	fixture_open(&f, &bfq, false);
	tick(&f, ALL);
	assert_string_equal(slurp("a/io.bfq.weight"), "default 333");
	assert_int_equal(put(f.fs.rootfd, "a/io.bfq.weight", "default 333\n8:0 1000\n"), 0);
	f.rec.out = open_memstream(&out, &len);
	tick(&f, ALL);
	fclose(f.rec.out);
	f.rec.out = NULL;
	assert_int_equal(f.st.foreign, 1);
	reset = strstr(out, "/a/io.bfq.weight 8:0 default\n");
	dflt = strstr(out, "/a/io.bfq.weight default 333\n");
	assert_non_null(reset);
	assert_non_null(dflt);
	assert_true(reset < dflt);
	assert_string_equal(slurp("a/io.bfq.weight"), "default 333");
	free(out);
	fixture_close(&f);
}

/* Zero means "needs none" in both modes: no zero caps; a cpu cap past the kernel's range. */
static void test_zero_demand_and_cpu_clamp(void **state)
{
	const struct drf_io_target none = { .major = 8, .minor = 0, .weights = DRF_IO_WEIGHTS_BFQ };
	struct fakeplan e;

	(void)state;
	write_conf("", "cpu = 4\nmemory = 1G\nio-device = 8:0\nio-write-bps = 100M\n",
		   "[tenant a]\ncpu = 1\nmemory = 0\nio-write-bps = 0\n[tenant b]\n");
	load(&e, &none);
	assert_string_equal(e.plan.knobs[0].val[DRF_KNOB_MEMORY_MAX], "max");
	assert_string_equal(e.plan.knobs[0].val[DRF_KNOB_MEMORY_LOW], "0");
	assert_string_equal(e.plan.knobs[0].val[DRF_KNOB_IO_MAX], "8:0 rbps=max wbps=max riops=max "
							      "wiops=max");
	assert_true(drf_knobs_uncapped(&e.decl.cfg, &e.plan.problem, 0, &none) & (1u << DRF_RES_MEMORY));
	fakeplan_free(&e);

	write_conf("mode = limit\n", "cpu = 400000000\n", "[tenant a]\n[tenant b]\ncpu = 1\n");
	load(&e, NULL);
	/* 2e8 cores x 100ms is past max_cfs_runtime: the kernel would say EINVAL */
	assert_string_equal(e.plan.knobs[0].val[DRF_KNOB_CPU_MAX], "max 100000");
	assert_string_equal(e.plan.knobs[1].val[DRF_KNOB_CPU_MAX], "100000 100000");
	fakeplan_free(&e);
}

/* State file: escaped name, round trip, and a restart that forgets departed tenants. */
static void test_state_file(void **state)
{
	struct drf_state_entry *ent;
	size_t n, skipped;
	char path[512], sdir[256];
	struct fixture f, g;

	(void)state;
	assert_int_equal(drf_statedir_path("/var/lib/drfd", "/sys/fs/cgroup/a-b%/drf.slice", ".state",
					   path, sizeof(path)), 0);
	assert_string_equal(path, "/var/lib/drfd/sys-fs-cgroup-a%2db%25-drf.slice.state");
	snprintf(sdir, sizeof(sdir), "%s/state/sub", dir);
	assert_int_equal(drf_statedir_path(sdir, root, ".state", path, sizeof(path)), 0);

	load_two(&f.e, "");
	fixture_open(&f, NULL, false);
	tick(&f, ALL);
	assert_int_equal(drf_state_save(path, root, &f.rc, NULL), 0);
	assert_int_equal(drf_state_load(path, root, &ent, &n, &skipped), 0);
	assert_int_equal(n, 2);
	assert_int_equal(skipped, 0);
	assert_string_equal(ent[1].name, "b");
	assert_string_equal(ent[1].cgroup, "team/b");
	drf_state_free(ent, n);
	/* written for another root: nothing of it is ours */
	assert_int_equal(drf_state_load(path, "/elsewhere", &ent, &n, &skipped), 0);
	assert_int_equal(n, 0);
	drf_state_free(ent, n);
	fixture_close(&f);

	/* drfd restarts with b gone from the config, a still busy and c new */
	assert_int_equal(put(AT_FDCWD, strcat(strcpy(sdir, root), "/team/b/cgroup.events"),
			     "populated 1\n"), 0);
	write_conf("", "cpu = 4\n", "[tenant c]\n");
	load(&g.e, NULL);
	fixture_open(&g, NULL, false);
	assert_int_equal(drf_state_load(path, root, &ent, &n, &skipped), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(drf_reconciler_forget(&g.rc, ent[i].name, ent[i].cgroup), 0);
	drf_state_free(ent, n);
	tick(&g, 0);
	assert_null(slurp("a/cgroup.type"));         /* empty: removed */
	assert_non_null(slurp("team/b/cgroup.type")); /* busy: kept, an orphan */
	assert_int_equal(g.rc.n_orphans, 2);          /* and team, which holds it */
	assert_int_equal(drf_state_save(path, root, &g.rc, NULL), 0);
	assert_int_equal(drf_state_load(path, root, &ent, &n, &skipped), 0);
	assert_int_equal(n, 3); /* tenant c, orphans b and team */
	drf_state_free(ent, n);
	fixture_close(&g);
}

/* A state file of many entries (past the first allocation) is read whole, in order. */
static void test_state_file_many_entries(void **state)
{
	struct drf_state_entry *ent;
	size_t n, skipped, at;
	char path[512], sdir[256], text[8192];

	(void)state;
	snprintf(sdir, sizeof(sdir), "%s/state", dir);
	assert_int_equal(mkdir(sdir, 0755), 0);
	assert_int_equal(drf_statedir_path(sdir, root, ".state", path, sizeof(path)), 0);
	at = (size_t)snprintf(text, sizeof(text), "drfd-state 1\nroot %s\n", root);
	for (int k = 0; k < 100; k++)
		at += (size_t)snprintf(text + at, sizeof(text) - at, "tenant t%d g/t%d\n", k, k);
	at += (size_t)snprintf(text + at, sizeof(text) - at, "netclass t99 b1ed\n");
	assert_true(at < sizeof(text));
	assert_int_equal(t_write_file(path, text), 0);
	assert_int_equal(drf_state_load(path, root, &ent, &n, &skipped), 0);
	assert_int_equal(n, 101);
	assert_int_equal(skipped, 0);
	for (int k = 0; k < 100; k++) {
		char name[8], cg[16];

		snprintf(name, sizeof(name), "t%d", k);
		snprintf(cg, sizeof(cg), "g/t%d", k);
		assert_string_equal(ent[k].name, name);
		assert_string_equal(ent[k].cgroup, cg);
		assert_int_equal(ent[k].net_minor, 0);
	}
	assert_string_equal(ent[100].name, "t99");
	assert_int_equal(ent[100].net_minor, 0xb1ed);
	drf_state_free(ent, n);
}

/* In a child process, the root's lock: 0 taken, 1 refused naming WANT, 2 otherwise. */
static int lock_in_child(const char *run, pid_t want)
{
	pid_t pid = fork(), holder = -1;
	int st, fd, r;

	assert_true(pid >= 0);
	if (pid == 0) {
		fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = drf_lock_root(fd, run, &holder);
		_exit(r >= 0 ? 0 : r == -EWOULDBLOCK && holder == want ? 1 : 2);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * One drfd per root: a second drfd is refused, naming the holder's pid; the
 * lock goes with its holder, and its children do not keep it (a task's
 * supervisor, cloned into a throttled tenant, outlived drfd with a flock).
 */
static void test_lock(void **state)
{
	int a = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd, p[2], st;
	pid_t holder = -1, h;
	char run[160];

	(void)state;
	assert_true(a >= 0);
	snprintf(run, sizeof(run), "%s/run", dir);
	fd = drf_lock_root(a, run, &holder);
	assert_true(fd >= 0);
	assert_int_equal(lock_in_child(run, getpid()), 1);
	close(fd);
	assert_int_equal(lock_in_child(run, 0), 0);

	/* H takes it and forks C, which lives on after H exits. */
	assert_int_equal(pipe(p), 0);
	h = fork();
	assert_true(h >= 0);
	if (h == 0) {
		char c;

		if (drf_lock_root(a, run, &holder) < 0)
			_exit(3);
		if (fork() == 0) {
			close(p[1]);
			_exit(read(p[0], &c, 1) == 0 ? 0 : 4);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(h, &st, 0), h);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(lock_in_child(run, 0), 0); /* C still waits on the pipe */
	close(p[0]);
	close(p[1]); /* C exits */

	/* The device's lock: the same rules, its file under run too. */
	fd = drf_lock_device("lo", run, &holder);
	assert_true(fd >= 0);
	h = fork();
	assert_true(h >= 0);
	if (h == 0) {
		pid_t other = -1;
		int r = drf_lock_device("lo", run, &other);

		_exit(r == -EWOULDBLOCK && other == getppid() ? 0 : 1);
	}
	assert_int_equal(waitpid(h, &st, 0), h);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fd);
	fd = drf_lock_device("lo", run, &holder);
	assert_true(fd >= 0);
	close(fd);

	close(a);
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

/*
 * A file held open: read again without another open, its new content each
 * time; a cgroup removed fails the next read with -ENODEV and closes it; a
 * cgroup made again is read afresh through a new open.
 */
static void test_read_held(void **state)
{
	struct cgfs fs;
	char buf[64];
	int fd = -1, base;

	(void)state;
	assert_int_equal(cgfs_open(&fs, root, false, &ops, NULL), 0);
	assert_int_equal(cgfs_mkdir_p(&fs, "a"), 0);
	base = open_fds();
	assert_int_equal(put(fs.rootfd, "a/cpu.stat", "usage_usec 1\n"), 0);
	assert_int_equal(cgfs_read_held(&fs, &fd, "a", "cpu.stat", buf, sizeof(buf)), 12);
	assert_string_equal(buf, "usage_usec 1");
	assert_true(fd >= 0);
	assert_int_equal(open_fds(), base + 1);
	assert_int_equal(put(fs.rootfd, "a/cpu.stat", "usage_usec 22\n"), 0);
	assert_int_equal(cgfs_read_held(&fs, &fd, "a", "cpu.stat", buf, sizeof(buf)), 13);
	assert_string_equal(buf, "usage_usec 22");
	assert_int_equal(open_fds(), base + 1);
	/* Removed (by anyone): -ENODEV, and nothing left open. */
	assert_int_equal(fakecg_remove(fs.rootfd, "a"), 0);
	assert_int_equal(cgfs_read_held(&fs, &fd, "a", "cpu.stat", buf, sizeof(buf)), -ENODEV);
	assert_int_equal(fd, -1);
	assert_int_equal(open_fds(), base);
	assert_int_equal(cgfs_read_held(&fs, &fd, "a", "cpu.stat", buf, sizeof(buf)), -ENOENT);
	/* Made again: opened anew. */
	assert_int_equal(cgfs_mkdir_p(&fs, "a"), 0);
	assert_int_equal(put(fs.rootfd, "a/cpu.stat", "usage_usec 3\n"), 0);
	assert_int_equal(cgfs_read_held(&fs, &fd, "a", "cpu.stat", buf, sizeof(buf)), 12);
	assert_string_equal(buf, "usage_usec 3");
	cgfs_release(&fs, &fd);
	assert_int_equal(fd, -1);
	assert_int_equal(open_fds(), base);
	/* Bad paths as cgfs_read: nothing opened. */
	assert_int_equal(cgfs_read_held(&fs, &fd, "../x", "cpu.stat", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(fd, -1);
	cgfs_close(&fs);
}

/* Out of fds: read by path instead (CGFS_FD_UNHELD), never a file given up. */
static void test_read_held_out_of_fds(void **state)
{
	struct rlimit old, low;
	struct cgfs fs;
	char buf[64];
	int fd = -1, fill[64], n = 0;

	(void)state;
	assert_int_equal(cgfs_open(&fs, root, false, &ops, NULL), 0);
	assert_int_equal(cgfs_mkdir_p(&fs, "a"), 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = (struct rlimit){ .rlim_cur = (rlim_t)open_fds() + 8, .rlim_max = old.rlim_max };
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 64 && (fill[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	assert_int_equal(errno, EMFILE);
	assert_int_equal(cgfs_read_held(&fs, &fd, "a", "cpu.weight", buf, sizeof(buf)), -EMFILE);
	assert_int_equal(fd, CGFS_FD_UNHELD);
	while (n)
		close(fill[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	/* From now on by path: open, read, close, each time. */
	assert_int_equal(cgfs_read_held(&fs, &fd, "a", "cpu.weight", buf, sizeof(buf)), 3);
	assert_string_equal(buf, "100");
	assert_int_equal(fd, CGFS_FD_UNHELD);
	cgfs_release(&fs, &fd);
	cgfs_close(&fs);
}

/* The recorder: faults on held reads by path; without inner ops nothing can be held. */
static void test_read_held_recorded(void **state)
{
	struct cgfs_recorder rec = { .inner = &ops, .pass_changes = true };
	struct cgfs fs, virt;
	char buf[64];
	int fd = -1;

	(void)state;
	assert_int_equal(cgfs_open(&fs, root, false, &cgfs_recording_ops, &rec), 0);
	assert_int_equal(cgfs_mkdir_p(&fs, "a"), 0);
	assert_int_equal(cgfs_read_held(&fs, &fd, "a", "cpu.weight", buf, sizeof(buf)), 3);
	rec.fault = (struct drf_fault){ .err = EIO, .ops = CGFS_OP_READ, .path = "a/cpu.weight" };
	assert_int_equal(cgfs_read_held(&fs, &fd, "a", "cpu.weight", buf, sizeof(buf)), -EIO);
	assert_int_equal(rec.fault.hits, 1);
	assert_int_equal(fd, -1);
	rec.fault = (struct drf_fault){ 0 };
	assert_int_equal(cgfs_read_held(&fs, &fd, "a", "cpu.weight", buf, sizeof(buf)), 3);
	cgfs_release(&fs, &fd);
	cgfs_close(&fs);
	/* A dry run over a root that does not exist: nothing to read, no watch. */
	rec.inner = NULL;
	assert_int_equal(cgfs_open_virtual(&virt, root, &cgfs_recording_ops, &rec), 0);
	assert_int_equal(cgfs_read_held(&virt, &fd, "a", "cpu.weight", buf, sizeof(buf)),
			 -ENOENT);
	assert_int_equal(fd, -1);
	assert_true(cgfs_watch_init(&virt) < 0);
	cgfs_close(&virt);
}

/*
 * Watches: a change of a watched file is told once (its watch descriptor),
 * nothing else is; a file whose cgroup goes is no longer told.
 */
static void test_watch(void **state)
{
	struct cgfs fs;
	int wfd, wa, wb, wds[4];

	(void)state;
	assert_int_equal(cgfs_open(&fs, root, false, &ops, NULL), 0);
	assert_int_equal(cgfs_mkdir_p(&fs, "a"), 0);
	assert_int_equal(cgfs_mkdir_p(&fs, "b"), 0);
	wfd = cgfs_watch_init(&fs);
	assert_true(wfd >= 0);
	wa = cgfs_watch(&fs, wfd, "a", "memory.events");
	wb = cgfs_watch(&fs, wfd, "b", "memory.events");
	assert_true(wa >= 0 && wb >= 0 && wa != wb);
	assert_int_equal(cgfs_watch(&fs, wfd, "c", "memory.events"), -ENOENT);
	assert_int_equal(cgfs_watch(&fs, wfd, "../a", "memory.events"), -EINVAL);
	assert_int_equal(cgfs_watch_read(&fs, wfd, wds, 4), 0);
	assert_int_equal(put(fs.rootfd, "b/memory.events", "max 1\n"), 0);
	assert_int_equal(cgfs_watch_read(&fs, wfd, wds, 4), 1);
	assert_int_equal(wds[0], wb);
	assert_int_equal(cgfs_watch_read(&fs, wfd, wds, 4), 0);
	/* More changes than room: -1, anything may have changed. */
	assert_int_equal(put(fs.rootfd, "a/memory.events", "max 1\n"), 0);
	assert_int_equal(put(fs.rootfd, "b/memory.events", "max 2\n"), 0);
	assert_int_equal(cgfs_watch_read(&fs, wfd, wds, 1), 1);
	assert_int_equal(wds[0], -1);
	cgfs_unwatch(&fs, wfd, wa);
	assert_int_equal(put(fs.rootfd, "a/memory.events", "max 2\n"), 0);
	assert_int_equal(cgfs_watch_read(&fs, wfd, wds, 4), 0);
	cgfs_watch_close(&fs, wfd);
	cgfs_close(&fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_paths_stay_beneath_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconcile_groups, setup, teardown),
		cmocka_unit_test(test_protection_cap),
		cmocka_unit_test_setup_teardown(test_read_held_out_of_fds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_held_recorded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_mount_not_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subtree_and_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nprocs_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reconcile_writes_only_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steady_tick_touches_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_verify_round_robin_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_writes_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fault_matrix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fault_on_removal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subtree_failure_pass_goes_on, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recreated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_changes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_tightening, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_tightening_async, setup, teardown),
		cmocka_unit_test_setup_teardown(test_removed_tenants_and_orphans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nested_weights, setup, teardown),
		cmocka_unit_test_setup_teardown(test_io_fields, setup, teardown),
		cmocka_unit_test(test_knob_limits),
		cmocka_unit_test(test_io_max_matches),
		cmocka_unit_test_setup_teardown(test_io_weight_device_reset_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_demand_and_cpu_clamp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_file_many_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
	};

	return cmocka_run_group_tests_name("cgroupfs", tests, NULL, NULL);
}
