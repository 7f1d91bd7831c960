// SPDX-License-Identifier: MIT
/*
 * The task queue's daemon side (agent/daemon/tasks.c) over a fake cgroup tree
 * and a recording spawn: E1 scaled (A 3 running, B 2), limits written, how a
 * task ends (exited, oom-killed, lost, cancelled), a restart that re-adopts,
 * refusals that change nothing, and injected cgroup failures.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fakecg.h"
#include "tasks.h"
#include "testlib.h"

#define M (1024.0 * 1024)

struct fake_spawn {
	const struct cgfs *fs;
	int spawned;
	int fail; /* -errno for the next spawn */
	uint64_t now;
};

static int fake_spawn(void *ctx, const struct cgfs *fs, const char *cg, const struct drf_task *t,
		      int dirfd, const char *dir, pid_t *ret)
{
	struct fake_spawn *f = ctx;
	char p[4096];

	(void)dir;
	(void)dirfd;
	(void)t;
	if (f->fail) {
		int r = f->fail;

		f->fail = 0;
		return r;
	}
	/* What the kernel would show once the supervisor runs in cg. */
	snprintf(p, sizeof(p), "%s/cgroup.events", cg);
	assert_int_equal(fakecg_put(fs->rootfd, p, "populated 1\n"), 0);
	snprintf(p, sizeof(p), "%s/cgroup.kill", cg);
	assert_int_equal(fakecg_put(fs->rootfd, p, ""), 0);
	snprintf(p, sizeof(p), "%s/memory.events", cg);
	assert_int_equal(fakecg_put(fs->rootfd, p, "oom 0\noom_kill 0\n"), 0);
	f->spawned++;
	*ret = 0;
	return 0;
}

static void fake_reap(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
}

static uint64_t fake_now(void *ctx)
{
	return ((struct fake_spawn *)ctx)->now += 1000;
}

static const struct drf_spawn_ops fake_ops = {
	.spawn = fake_spawn,
	.reap = fake_reap,
	.now = fake_now,
};

/* The fake tree's rmdir, also removing the files the fake spawn added (as cgroupfs would). */
static struct cgfs_ops tree_ops;

static int tree_rmdir(void *ctx, int dirfd, const char *path)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/cgroup.kill", path);
	unlinkat(dirfd, p, 0);
	snprintf(p, sizeof(p), "%s/memory.events", path);
	unlinkat(dirfd, p, 0);
	return fakecg_ops.rmdir(ctx, dirfd, path);
}

struct fx {
	char dir[4096], root[4096], qdir[4200];
	struct cgfs fs;
	struct cgfs_recorder rec;
	struct fake_spawn sp;
	struct drf_tasks q;
	struct drf_config cfg;
	struct drf_tenant ten[2];
	double cap[DRF_NRES];
};

static struct fx *fx_new(void)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[512];

	assert_non_null(f);
	assert_int_equal(fakecg_setup(f->dir, sizeof(f->dir), f->root, sizeof(f->root)), 0);
	tree_ops = fakecg_ops;
	tree_ops.rmdir = tree_rmdir;
	f->rec = (struct cgfs_recorder){ .inner = &tree_ops, .pass_changes = true };
	assert_int_equal(cgfs_open(&f->fs, f->root, false, &cgfs_recording_ops, &f->rec), 0);
	f->rec.root = f->fs.root;
	assert_int_equal(cgfs_mkdir_p(&f->fs, "A"), 0);
	assert_int_equal(cgfs_mkdir_p(&f->fs, "B"), 0);
	f->cap[DRF_RES_CPU] = 0.9;
	f->cap[DRF_RES_MEMORY] = 18 * 16 * M;
	for (int i = 0; i < 2; i++) {
		struct drf_tenant *t = &f->ten[i];

		snprintf(t->name, sizeof(t->name), "%s", i ? "B" : "A");
		t->cgroup = (char *)(i ? "B" : "A");
		t->weight = 1;
		t->task_model = true;
		t->vec[DRF_RES_CPU] = i ? 0.3 : 0.1;
		t->vec[DRF_RES_MEMORY] = i ? 16 * M : 64 * M;
		t->tasks = INFINITY;
	}
	f->cfg.path = (char *)"test.conf";
	f->cfg.tenants = f->ten;
	f->cfg.n_tenants = 2;
	f->sp.fs = &f->fs;
	snprintf(f->qdir, sizeof(f->qdir), "%s/state/x.tasks", f->dir);
	assert_int_equal(drf_tasks_init(&f->q, f->qdir, &f->fs, &fake_ops, &f->sp, err,
					sizeof(err)), 0);
	return f;
}

static void fx_free(struct fx *f)
{
	drf_tasks_free(&f->q);
	cgfs_close(&f->fs);
	fakecg_teardown(f->dir);
	free(f);
}

static int submit(struct fx *f, const char *tenant, double cpu, double mem, uint64_t *id)
{
	char *argv[] = { "sleep", "60", NULL };
	struct drf_task_req req = { .uid = 1000, .gid = 1000, .cwd = "/tmp", .argv = argv,
				    .argc = 2 };
	char err[1024];
	uint64_t dummy;

	snprintf(req.tenant, sizeof(req.tenant), "%s", tenant);
	if (cpu >= 0) {
		req.vec[DRF_RES_CPU] = cpu;
		req.given[DRF_RES_CPU] = true;
	}
	if (mem >= 0) {
		req.vec[DRF_RES_MEMORY] = mem;
		req.given[DRF_RES_MEMORY] = true;
	}
	return drf_tasks_submit(&f->q, &f->cfg, f->cap, &req, id ? id : &dummy, err, sizeof(err));
}

static unsigned count(const struct fx *f, const char *tenant, enum drf_task_state st)
{
	unsigned n = 0;

	for (size_t i = 0; i < f->q.n; i++)
		n += f->q.t[i].state == st && strcmp(f->q.t[i].tenant, tenant) == 0;
	return n;
}

static struct drf_task *task(struct fx *f, uint64_t id)
{
	for (size_t i = 0; i < f->q.n; i++)
		if (f->q.t[i].id == id)
			return &f->q.t[i];
	fail_msg("no task %" PRIu64, id);
	return NULL;
}

/* The supervisor's part: the command ended; the cgroup is empty. */
static void end(struct fx *f, uint64_t id, const char *exit_text, const char *events)
{
	struct drf_task *t = task(f, id);
	char p[4400];
	FILE *o;

	if (exit_text) {
		snprintf(p, sizeof(p), "%s/%" PRIu64 "/exit", f->qdir, id);
		o = fopen(p, "w");
		assert_non_null(o);
		fputs(exit_text, o);
		fclose(o);
	}
	if (events) {
		snprintf(p, sizeof(p), "%s/memory.events", t->cgroup);
		assert_int_equal(fakecg_put(f->fs.rootfd, p, events), 0);
	}
	snprintf(p, sizeof(p), "%s/cgroup.events", t->cgroup);
	assert_int_equal(fakecg_put(f->fs.rootfd, p, "populated 0\n"), 0);
}

static uint64_t first_running(struct fx *f, const char *tenant)
{
	for (size_t i = 0; i < f->q.n; i++)
		if (f->q.t[i].state == DRF_TASK_RUNNING && strcmp(f->q.t[i].tenant, tenant) == 0)
			return f->q.t[i].id;
	fail_msg("no running task of %s", tenant);
	return 0;
}

static void fill(struct fx *f)
{
	for (int i = 0; i < 10; i++) {
		assert_int_equal(submit(f, "A", -1, -1, NULL), 0);
		assert_int_equal(submit(f, "B", -1, -1, NULL), 0);
	}
}

static void test_e1_scaled(void **state)
{
	struct fx *f = fx_new();
	char buf[256];
	uint64_t a;

	(void)state;
	fill(f);
	assert_int_equal(drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL), 5);
	assert_int_equal(count(f, "A", DRF_TASK_RUNNING), 3);
	assert_int_equal(count(f, "B", DRF_TASK_RUNNING), 2);
	assert_int_equal(f->sp.spawned, 5);
	/* A steady tick starts nothing more. */
	assert_int_equal(drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL), 0);
	/* Limits at the vector; controllers passed down by the tenant. */
	a = first_running(f, "A");
	snprintf(buf, sizeof(buf), "A/task-%" PRIu64, a);
	assert_string_equal(task(f, a)->cgroup, buf);
	assert_true(cgfs_read(&f->fs, buf, "cpu.max", buf + 100, 100) > 0);
	assert_string_equal(buf + 100, "10000 100000");
	assert_true(cgfs_read(&f->fs, task(f, a)->cgroup, "memory.max", buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "67108864");
	assert_true(cgfs_read(&f->fs, "A", "cgroup.subtree_control", buf, sizeof(buf)) >= 0);
	assert_non_null(strstr(buf, "cpu"));
	assert_non_null(strstr(buf, "memory"));
	/* One of A's ends: A (the lowest share) gets the room again, not B. */
	end(f, a, "exit 0\nsignal -1\nutime_us 5\nstime_us 6\nmaxrss_kb 700\nended 9\n", NULL);
	assert_int_equal(drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL), 1);
	assert_int_equal(task(f, a)->state, DRF_TASK_DONE);
	assert_string_equal(task(f, a)->result, "exited");
	assert_int_equal(task(f, a)->exit_code, 0);
	assert_true(task(f, a)->maxrss_kb == 700);
	assert_int_equal(count(f, "A", DRF_TASK_RUNNING), 3);
	assert_int_equal(count(f, "B", DRF_TASK_RUNNING), 2);
	assert_int_equal(count(f, "A", DRF_TASK_QUEUED), 6);
	/* Its cgroup is gone. */
	snprintf(buf, sizeof(buf), "A/task-%" PRIu64, a);
	assert_int_equal(cgfs_read(&f->fs, buf, "cgroup.events", buf + 100, 100), -ENOENT);
	fx_free(f);
}

static void test_endings(void **state)
{
	struct fx *f = fx_new();
	uint64_t a, b, c;

	(void)state;
	fill(f);
	drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL);
	a = first_running(f, "A");
	end(f, a, "exit -1\nsignal 9\n", "oom 3\noom_kill 1\n");
	b = first_running(f, "B");
	end(f, b, NULL, NULL); /* the supervisor killed from outside */
	drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL);
	assert_string_equal(task(f, a)->result, "oom-killed");
	assert_int_equal(task(f, a)->signal, 9);
	assert_true(task(f, a)->oom_kills == 1);
	assert_string_equal(task(f, b)->result, "lost");
	assert_non_null(task(f, b)->error);
	/* exec failure */
	c = first_running(f, "B");
	end(f, c, "exit 127\nsignal -1\nerror cannot%20run\n", NULL);
	drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL);
	assert_string_equal(task(f, c)->result, "failed");
	assert_string_equal(task(f, c)->error, "cannot run");
	assert_int_equal(count(f, "A", DRF_TASK_RUNNING), 3);
	assert_int_equal(count(f, "B", DRF_TASK_RUNNING), 2);
	fx_free(f);
}

static void test_cancel(void **state)
{
	struct fx *f = fx_new();
	char err[256], buf[64];
	uint64_t run, queued = 0;

	(void)state;
	fill(f);
	drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL);
	for (size_t i = 0; i < f->q.n && !queued; i++)
		if (f->q.t[i].state == DRF_TASK_QUEUED)
			queued = f->q.t[i].id;
	/* Not the submitter's: refused. */
	assert_int_equal(drf_tasks_cancel(&f->q, queued, 1001, err, sizeof(err)), DRF_TASKS_REFUSED);
	assert_int_equal(task(f, queued)->state, DRF_TASK_QUEUED);
	assert_int_equal(drf_tasks_cancel(&f->q, queued, 1000, err, sizeof(err)), 0);
	assert_string_equal(task(f, queued)->result, "cancelled");
	assert_int_equal(drf_tasks_cancel(&f->q, 9999, 0, err, sizeof(err)), DRF_TASKS_REFUSED);
	run = first_running(f, "B");
	assert_int_equal(drf_tasks_cancel(&f->q, run, 0, err, sizeof(err)), 0);
	assert_true(cgfs_read(&f->fs, task(f, run)->cgroup, "cgroup.kill", buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "1");
	end(f, run, NULL, NULL);
	drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL);
	assert_string_equal(task(f, run)->result, "cancelled");
	fx_free(f);
}

static void test_restart_readopts(void **state)
{
	struct fx *f = fx_new();
	char err[256];
	uint64_t ids[5];
	int k = 0;

	(void)state;
	fill(f);
	drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL);
	for (size_t i = 0; i < f->q.n; i++)
		if (f->q.t[i].state == DRF_TASK_RUNNING)
			ids[k++] = f->q.t[i].id;
	assert_int_equal(k, 5);
	/* drfd stops; one task ends meanwhile. */
	drf_tasks_free(&f->q);
	assert_int_equal(drf_tasks_init(&f->q, f->qdir, &f->fs, &fake_ops, &f->sp, err,
					sizeof(err)), 0);
	assert_int_equal(f->q.n, 20);
	assert_int_equal(count(f, "A", DRF_TASK_RUNNING), 3);
	assert_int_equal(count(f, "B", DRF_TASK_RUNNING), 2);
	assert_int_equal(count(f, "A", DRF_TASK_QUEUED), 7);
	for (int i = 0; i < 5; i++)
		assert_true(task(f, ids[i])->readopted);
	end(f, ids[0], "exit 3\nsignal -1\n", NULL);
	assert_int_equal(drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL), 1);
	assert_string_equal(task(f, ids[0])->result, "exited");
	assert_int_equal(task(f, ids[0])->exit_code, 3);
	/* New ids go on after the old ones. */
	{
		uint64_t id;

		assert_int_equal(submit(f, "A", -1, -1, &id), 0);
		assert_int_equal(id, 21);
	}
	/*
	 * A task whose supervisor ran but whose `started` was never written (drfd
	 * died in between) and which has ended: recorded as ended, not run again.
	 */
	{
		char p[4400];

		snprintf(p, sizeof(p), "%s/%" PRIu64 "/started", f->qdir, ids[1]);
		assert_int_equal(unlink(p), 0);
		end(f, ids[1], "exit 0\nsignal -1\n", NULL);
	}
	drf_tasks_free(&f->q);
	assert_int_equal(drf_tasks_init(&f->q, f->qdir, &f->fs, &fake_ops, &f->sp, err,
					sizeof(err)), 0);
	assert_int_equal(task(f, ids[1])->state, DRF_TASK_RUNNING);
	drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL);
	assert_string_equal(task(f, ids[1])->result, "exited");
	/* And once more: the finished ones stay finished. */
	drf_tasks_free(&f->q);
	assert_int_equal(drf_tasks_init(&f->q, f->qdir, &f->fs, &fake_ops, &f->sp, err,
					sizeof(err)), 0);
	assert_string_equal(task(f, ids[0])->result, "exited");
	assert_string_equal(task(f, ids[1])->result, "exited");
	assert_int_equal(count(f, "A", DRF_TASK_RUNNING) + count(f, "B", DRF_TASK_RUNNING), 5);
	fx_free(f);
}

static void test_refusals_change_nothing(void **state)
{
	struct fx *f = fx_new();
	char p[4400];
	struct stat st;

	(void)state;
	assert_int_equal(submit(f, "C", 0.1, -1, NULL), DRF_TASKS_REFUSED);
	assert_int_equal(submit(f, "A", 1.0, -1, NULL), DRF_TASKS_REFUSED);    /* > 0.9 cores */
	assert_int_equal(submit(f, "A", -1, 300 * M, NULL), DRF_TASKS_REFUSED); /* > 288M */
	assert_int_equal(submit(f, "A", 0, 0, NULL), DRF_TASKS_REFUSED);       /* nothing */
	/* A tenant cgroup with processes of its own (cgroup v2). */
	assert_int_equal(fakecg_put(f->fs.rootfd, "B/cgroup.procs", "4242\n"), 0);
	assert_int_equal(submit(f, "B", -1, -1, NULL), DRF_TASKS_REFUSED);
	assert_int_equal(f->q.n, 0);
	assert_int_equal(f->q.next_id, 1);
	snprintf(p, sizeof(p), "%s/1", f->qdir);
	assert_int_equal(stat(p, &st), -1);
	assert_int_equal(f->rec.changes, 2); /* the two tenant mkdirs of the fixture */
	fx_free(f);
}

static void test_failures_injected(void **state)
{
	struct fx *f = fx_new();
	uint64_t id;

	(void)state;
	/* mkdir of the task cgroup fails: the task fails, nothing is held. */
	assert_int_equal(submit(f, "B", -1, -1, &id), 0);
	f->rec.fail_path = "task-1";
	f->rec.fail_errno = ENOSPC;
	f->rec.fail_ops = CGFS_OP_MKDIR;
	assert_int_equal(drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL), 0);
	assert_true(f->rec.faults > 0);
	assert_string_equal(task(f, id)->result, "failed");
	assert_non_null(strstr(task(f, id)->error, "No space left"));
	/* memory.max cannot be written: failed, its cgroup removed. */
	assert_int_equal(submit(f, "B", -1, -1, &id), 0);
	f->rec.fail_path = "memory.max";
	f->rec.fail_errno = EINVAL;
	f->rec.fail_ops = CGFS_OP_WRITE;
	f->rec.faults = 0;
	drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL);
	assert_true(f->rec.faults > 0);
	assert_string_equal(task(f, id)->result, "failed");
	assert_non_null(strstr(task(f, id)->error, "memory.max"));
	f->rec.fail_path = NULL;
	/* The spawn fails. */
	assert_int_equal(submit(f, "B", -1, -1, &id), 0);
	f->sp.fail = -EAGAIN;
	drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL);
	assert_string_equal(task(f, id)->result, "failed");
	/* Then it works: all 3 failures freed what they held. */
	assert_int_equal(submit(f, "B", -1, -1, &id), 0);
	assert_int_equal(submit(f, "B", -1, -1, NULL), 0);
	assert_int_equal(submit(f, "B", -1, -1, NULL), 0);
	assert_int_equal(drf_tasks_tick(&f->q, &f->cfg, f->cap, NULL), 3);
	fx_free(f);
}

static void test_escape(void **state)
{
	const char *cases[] = { "", "a b", "100%", "tab\there", "new\nline", "plain" };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *e = drf_tasks_escape(cases[i]);

		assert_non_null(e);
		assert_null(strpbrk(e, " \t\n"));
		assert_int_equal(drf_tasks_unescape(e), 0);
		assert_string_equal(e, cases[i]);
		free(e);
	}
	{
		char bad[] = "x%4";
		char nul[] = "x%00";

		assert_int_equal(drf_tasks_unescape(bad), -EINVAL);
		assert_int_equal(drf_tasks_unescape(nul), -EINVAL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_e1_scaled),
		cmocka_unit_test(test_endings),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_restart_readopts),
		cmocka_unit_test(test_refusals_change_nothing),
		cmocka_unit_test(test_failures_injected),
		cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests_name("tasks", tests, NULL, NULL);
}
