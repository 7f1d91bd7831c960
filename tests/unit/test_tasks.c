// SPDX-License-Identifier: MIT
/*
 * The task queue's daemon side (agent/tasks/tasks.c) over a fake cgroup tree
 * and a recording spawn: E1 scaled (A 3 running, B 2), limits written, how a
 * task ends (exited, oom-killed, lost, cancelled), a restart that re-adopts,
 * refusals that change nothing, and injected cgroup failures. Then the
 * hardening: the submitter's exact groups captured (SO_PEERGROUPS), recorded
 * and handed to the supervisor from memory; task files 0600; an unsafe state
 * dir refused; a swapped or foreign task directory not followed; the real
 * supervisor setting exactly those groups and keeping the exit status through
 * failed writes of its exit file; idempotent keys. Then the review of that:
 * caps on unfinished tasks, cancels on a full disk, the history per uid, the
 * cwd (whole, refused when relative, failing the task when gone), next_id past
 * a directory left alone, strict uid and gid, signals reset for the command.
 * Runs as root.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json_tokener.h>

#include "statedir.h"

#include "fakecg.h"
#include "planner.h"
#include "reconcile.h"
#include "tasks.h"
#include "testlib.h"

#define M (1024.0 * 1024)

struct fake_spawn {
	const struct cgfs *fs;
	int spawned;
	int fail; /* -errno for the next spawn */
	uint64_t now;
	/* What the last spawn was handed: the credentials, and the text for the supervisor. */
	uid_t uid;
	gid_t gid;
	gid_t groups[8];
	size_t ngroups;
	char *text;
};

static int fake_spawn(void *ctx, const struct cgfs *fs, const char *cg, const struct drf_task *t,
		      const struct drf_knobs *limits, int dirfd, const char *dir, pid_t *ret)
{
	struct fake_spawn *f = ctx;
	char p[4096];

	(void)dir;
	/* The plan's limits of its cgroup, which the reconciler wrote already. */
	assert_non_null(limits);
	assert_true(drf_at_owned(dirfd, true) == 0);
	f->uid = t->uid;
	f->gid = t->gid;
	f->ngroups = t->ngroups;
	assert_true(t->ngroups <= 8);
	if (t->ngroups)
		memcpy(f->groups, t->groups, t->ngroups * sizeof(gid_t));
	free(f->text);
	f->text = drf_tasks_text(t);
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

static uint64_t fake_now(void *ctx, clockid_t id)
{
	(void)id;
	return ((struct fake_spawn *)ctx)->now += 1000;
}

static const struct drf_spawn_ops fake_ops = {
	.spawn = fake_spawn,
	.reap = fake_reap,
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
	struct drf_clock clock;
	struct drf_tasks q;
	struct drf_config cfg;
	struct drf_tenant ten[2];
	double cap[DRF_NRES];
	/* The daemon's side: the declared plan of cfg, the planner and the reconciler. */
	struct drf_declared decl;
	struct drf_engine eng;
	struct drf_plan plan;
	struct drf_reconciler rc;
};

static int ready(void *ctx, const char *cg, const struct drf_knobs **limits, char *why,
		 size_t len)
{
	*limits = drf_reconciler_want(ctx, cg);
	return drf_reconciler_ready(ctx, cg, why, len);
}

/* The plan with the queue's starting and running tasks, put in force, and written. */
static void apply(struct fx *f)
{
	struct drf_plan_input in = { .decl = &f->decl };
	struct drf_reconcile_stats st;
	struct drf_plan p;

	assert_int_equal(drf_tasks_plan(&f->q, &in.tasks, &in.n_tasks), 0);
	assert_int_equal(drf_plan_build(&in, &f->eng, &p), 0);
	assert_int_equal(drf_reconciler_set(&f->rc, &p), 0);
	drf_plan_free(&f->plan);
	f->plan = p;
	drf_reconcile_tick(&f->rc, 0, &st);
}

/*
 * What the daemon's tick does for the queue (daemon.c): tasks that ended are
 * recorded, queued ones picked in DRF order, the plan put in force (the tasks'
 * cgroups with their limits), and the picked ones started once their cgroups
 * are ready; those that cannot leave the plan. Returns the number started.
 */
/*
 * drfd's passes until no task is picked: each picks at most
 * DRF_TASKS_PICK_STEP (checked here); the tasks started in all.
 */
static unsigned tick(struct fx *f)
{
	uint64_t gen;
	unsigned started = 0, picked;
	int passes = 0;
	bool starting;

	do {
		drf_tasks_reap(&f->q);
		picked = drf_tasks_pick(&f->q, &f->cfg, f->cap);
		assert_true(picked <= DRF_TASKS_PICK_STEP);
		apply(f);
		gen = f->q.generation;
		started += drf_tasks_launch(&f->q, ready, &f->rc);
		if (f->q.generation != gen)
			apply(f);
		assert_true(++passes < 1000);
		starting = false;
		for (size_t i = 0; i < f->q.n; i++)
			starting = starting || f->q.t[i].state == DRF_TASK_STARTING;
	} while (picked == DRF_TASKS_PICK_STEP || (starting && started));
	return started;
}

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
		t->declared[DRF_RES_CPU] = t->declared[DRF_RES_MEMORY] = true;
		t->tasks = INFINITY;
	}
	f->cfg.path = (char *)"test.conf";
	f->cfg.tenants = f->ten;
	f->cfg.n_tenants = 2;
	memcpy(f->cfg.capacity, f->cap, sizeof(f->cap));
	f->decl.cfg = f->cfg;
	assert_int_equal(drf_config_problem(&f->cfg, &f->decl.problem, &f->decl.demands), 0);
	assert_int_equal(drf_allocate(&f->decl.problem, DRF_POLICY_DRF, &f->decl.result), 0);
	assert_int_equal(drf_engine_init(&f->eng), 0);
	assert_int_equal(drf_reconciler_init(&f->rc, &f->fs, NULL, NULL, false, FAKECG_PAGE), 0);
	f->clock = (struct drf_clock){ .now = fake_now, .ctx = &f->sp };
	f->sp.fs = &f->fs;
	snprintf(f->qdir, sizeof(f->qdir), "%s/state/x.tasks", f->dir);
	assert_int_equal(drf_tasks_init(&f->q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), 0);
	return f;
}

static void fx_free(struct fx *f)
{
	drf_reconciler_free(&f->rc);
	drf_plan_free(&f->plan);
	drf_engine_free(&f->eng);
	drf_result_free(&f->decl.result);
	free(f->decl.demands);
	free(f->sp.text);
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
	assert_int_equal(tick(f), 5);
	assert_int_equal(count(f, "A", DRF_TASK_RUNNING), 3);
	assert_int_equal(count(f, "B", DRF_TASK_RUNNING), 2);
	assert_int_equal(f->sp.spawned, 5);
	/* A steady tick starts nothing more. */
	assert_int_equal(tick(f), 0);
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
	assert_int_equal(tick(f), 1);
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
	tick(f);
	a = first_running(f, "A");
	end(f, a, "exit -1\nsignal 9\n", "oom 3\noom_kill 1\n");
	b = first_running(f, "B");
	end(f, b, NULL, NULL); /* the supervisor killed from outside */
	tick(f);
	assert_string_equal(task(f, a)->result, "oom-killed");
	assert_int_equal(task(f, a)->signal, 9);
	assert_true(task(f, a)->oom_kills == 1);
	assert_string_equal(task(f, b)->result, "lost");
	assert_non_null(task(f, b)->error);
	/* exec failure */
	c = first_running(f, "B");
	end(f, c, "exit 127\nsignal -1\nerror cannot%20run\n", NULL);
	tick(f);
	assert_string_equal(task(f, c)->result, "failed");
	assert_string_equal(task(f, c)->error, "cannot run");
	assert_int_equal(count(f, "A", DRF_TASK_RUNNING), 3);
	assert_int_equal(count(f, "B", DRF_TASK_RUNNING), 2);
	fx_free(f);
}

/*
 * What a reaped task used, from its cgroup's keyed files: a key is read whole,
 * never as the tail of a longer one; a file without the key, or with a value
 * that is no number, leaves what the task had.
 */
static void test_reap_whole_keys(void **state)
{
	struct fx *f = fx_new();
	char p[4400];
	uint64_t a, b;

	(void)state;
	fill(f);
	tick(f);
	a = first_running(f, "A");
	snprintf(p, sizeof(p), "%s/cpu.stat", task(f, a)->cgroup);
	assert_int_equal(fakecg_put(f->fs.rootfd, p, "throttled_usage_usec 99\nusage_usec 1234\n"
				    "user_usec 1000\n"), 0);
	end(f, a, "exit -1\nsignal 9\n", "oom 3\noom_group_kill 4\noom_kill 2\n");
	b = first_running(f, "B");
	snprintf(p, sizeof(p), "%s/cpu.stat", task(f, b)->cgroup);
	assert_int_equal(fakecg_put(f->fs.rootfd, p, "user_usec 1000\nusage_usec lots\n"), 0);
	task(f, b)->cpu_usec = 77;
	task(f, b)->oom_kills = 5;
	end(f, b, "exit 0\nsignal -1\n", "oom 1\noom_group_kill 1\n");
	tick(f);
	assert_int_equal(task(f, a)->state, DRF_TASK_DONE);
	assert_true(task(f, a)->cpu_usec == 1234);
	assert_true(task(f, a)->oom_kills == 2);
	assert_string_equal(task(f, a)->result, "oom-killed");
	assert_int_equal(task(f, b)->state, DRF_TASK_DONE);
	assert_true(task(f, b)->cpu_usec == 77);
	assert_true(task(f, b)->oom_kills == 5);
	fx_free(f);
}

static void test_cancel(void **state)
{
	struct fx *f = fx_new();
	char err[256], buf[64];
	uint64_t run, queued = 0;

	(void)state;
	fill(f);
	tick(f);
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
	tick(f);
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
	tick(f);
	for (size_t i = 0; i < f->q.n; i++)
		if (f->q.t[i].state == DRF_TASK_RUNNING)
			ids[k++] = f->q.t[i].id;
	assert_int_equal(k, 5);
	/* drfd stops; one task ends meanwhile. */
	drf_tasks_free(&f->q);
	assert_int_equal(drf_tasks_init(&f->q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), 0);
	assert_int_equal(f->q.n, 20);
	assert_int_equal(count(f, "A", DRF_TASK_RUNNING), 3);
	assert_int_equal(count(f, "B", DRF_TASK_RUNNING), 2);
	assert_int_equal(count(f, "A", DRF_TASK_QUEUED), 7);
	for (int i = 0; i < 5; i++)
		assert_true(task(f, ids[i])->readopted);
	end(f, ids[0], "exit 3\nsignal -1\n", NULL);
	assert_int_equal(tick(f), 1);
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
	assert_int_equal(drf_tasks_init(&f->q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), 0);
	assert_int_equal(task(f, ids[1])->state, DRF_TASK_RUNNING);
	tick(f);
	assert_string_equal(task(f, ids[1])->result, "exited");
	/* And once more: the finished ones stay finished. */
	drf_tasks_free(&f->q);
	assert_int_equal(drf_tasks_init(&f->q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), 0);
	assert_string_equal(task(f, ids[0])->result, "exited");
	assert_string_equal(task(f, ids[1])->result, "exited");
	assert_int_equal(count(f, "A", DRF_TASK_RUNNING) + count(f, "B", DRF_TASK_RUNNING), 5);
	fx_free(f);
}

/*
 * A task's command of many words, read back from its task file by a new drfd
 * (argv grown past its first allocation) and by drf_tasks_parse_file() (the
 * supervisor's): every word, in order, and the NULL after the last.
 */
#define WORDS 100
static void test_many_words_read_back(void **state)
{
	struct fx *f = fx_new();
	char *argv[WORDS + 1], words[WORDS][8], err[1024], p[4400], *text;
	struct drf_task_req req = { .uid = 1000, .gid = 1000, .cwd = "/tmp", .argv = argv,
				    .argc = WORDS, .tenant = "A" };
	struct drf_task t;
	uint64_t id;
	FILE *o;

	(void)state;
	for (int k = 0; k < WORDS; k++) {
		snprintf(words[k], sizeof(words[k]), "w%d", k);
		argv[k] = words[k];
	}
	argv[WORDS] = NULL;
	assert_int_equal(drf_tasks_submit(&f->q, &f->cfg, f->cap, &req, &id, err, sizeof(err)),
			 0);
	drf_tasks_free(&f->q);
	assert_int_equal(drf_tasks_init(&f->q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), 0);
	assert_int_equal(task(f, id)->argc, WORDS);
	for (int k = 0; k < WORDS; k++)
		assert_string_equal(task(f, id)->argv[k], words[k]);
	assert_null(task(f, id)->argv[WORDS]);
	/* The supervisor's reading of the same file. */
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/task", f->qdir, id);
	text = calloc(1, 65536);
	assert_non_null(text);
	o = fopen(p, "r");
	assert_non_null(o);
	assert_true(fread(text, 1, 65535, o) > 0);
	fclose(o);
	assert_int_equal(drf_tasks_parse_file(&t, text), 0);
	assert_int_equal(t.argc, WORDS);
	assert_string_equal(t.argv[WORDS - 1], words[WORDS - 1]);
	assert_null(t.argv[WORDS]);
	drf_task_clear(&t);
	free(text);
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
	f->rec.fault.path = "task-1";
	f->rec.fault.err = ENOSPC;
	f->rec.fault.ops = CGFS_OP_MKDIR;
	assert_int_equal(tick(f), 0);
	assert_true(f->rec.fault.hits > 0);
	assert_string_equal(task(f, id)->result, "failed");
	assert_non_null(strstr(task(f, id)->error, "No space left"));
	/* memory.max cannot be written: failed, its cgroup removed. */
	assert_int_equal(submit(f, "B", -1, -1, &id), 0);
	f->rec.fault.path = "memory.max";
	f->rec.fault.err = EINVAL;
	f->rec.fault.ops = CGFS_OP_WRITE;
	f->rec.fault.hits = 0;
	tick(f);
	assert_true(f->rec.fault.hits > 0);
	assert_string_equal(task(f, id)->result, "failed");
	assert_non_null(strstr(task(f, id)->error, "memory.max"));
	f->rec.fault = (struct drf_fault){ 0 };
	/* The spawn fails. */
	assert_int_equal(submit(f, "B", -1, -1, &id), 0);
	f->sp.fail = -EAGAIN;
	tick(f);
	assert_string_equal(task(f, id)->result, "failed");
	/* Then it works: all 3 failures freed what they held. */
	assert_int_equal(submit(f, "B", -1, -1, &id), 0);
	assert_int_equal(submit(f, "B", -1, -1, NULL), 0);
	assert_int_equal(submit(f, "B", -1, -1, NULL), 0);
	assert_int_equal(tick(f), 3);
	fx_free(f);
}

static void test_escape(void **state)
{
	const char *cases[] = { "", "a b", "100%", "tab\there", "new\nline", "plain" };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *e = drf_proto_escape(cases[i]);

		assert_non_null(e);
		assert_null(strpbrk(e, " \t\n"));
		assert_int_equal(drf_proto_unescape(e), 0);
		assert_string_equal(e, cases[i]);
		free(e);
	}
	{
		char bad[] = "x%4";
		char nul[] = "x%00";

		assert_int_equal(drf_proto_unescape(bad), -EINVAL);
		assert_int_equal(drf_proto_unescape(nul), -EINVAL);
	}
}

/* ---- hardening ---- */

static int submit_as(struct fx *f, uid_t uid, const char *key, const gid_t *groups, size_t n,
		     uint64_t *id)
{
	char *argv[] = { "sleep", "60", NULL };
	struct drf_task_req req = { .uid = uid, .gid = uid, .groups = groups, .ngroups = n,
				    .key = key, .cwd = "/tmp", .argv = argv, .argc = 2 };
	char err[1024];

	snprintf(req.tenant, sizeof(req.tenant), "B");
	return drf_tasks_submit(&f->q, &f->cfg, f->cap, &req, id, err, sizeof(err));
}

static void reload(struct fx *f)
{
	char err[512];

	drf_tasks_free(&f->q);
	assert_int_equal(drf_tasks_init(&f->q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), 0);
}

static char *slurp(const char *path)
{
	static char buf[8192];
	FILE *o = fopen(path, "r");
	size_t n;

	if (!o)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, o);
	buf[n] = '\0';
	fclose(o);
	return buf;
}

static mode_t mode_at(const char *dir, const char *rel)
{
	char p[4600];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	if (lstat(p, &st) < 0)
		return (mode_t)-1;
	return st.st_mode & 07777;
}

/* The groups of the socket's peer, however many (ERANGE grows the buffer). */
static void test_peer_groups_captured(void **state)
{
	t_needs_root("setgroups");
	gid_t saved[256], many[300], *got = NULL;
	int n = getgroups(256, saved), sv[2];
	size_t ng = 0;
	uid_t uid;
	gid_t gid;

	(void)state;
	assert_true(n >= 0);
	for (int i = 0; i < 300; i++)
		many[i] = (gid_t)(5000 + i);
	/* The kernel records the creator's credentials for both ends of a socketpair. */
	assert_int_equal(setgroups(300, many), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(setgroups((size_t)n, saved), 0);
	assert_int_equal(drf_peer_creds(sv[0], &uid, &gid, &got, &ng), 0);
	assert_int_equal(uid, getuid());
	assert_int_equal(gid, getgid());
	assert_int_equal(ng, 300);
	for (int i = 0; i < 300; i++)
		assert_int_equal(got[i], 5000 + i);
	free(got);
	close(sv[0]);
	close(sv[1]);
	/* None at all. */
	assert_int_equal(setgroups(0, NULL), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(setgroups((size_t)n, saved), 0);
	assert_int_equal(drf_peer_creds(sv[0], &uid, &gid, &got, &ng), 0);
	assert_int_equal(ng, 0);
	free(got);
	close(sv[0]);
	close(sv[1]);
}

/* Recorded in drfd's task file, kept across a restart, handed to the supervisor as they are. */
static void test_groups_recorded(void **state)
{
	struct fx *f = fx_new();
	const gid_t groups[] = { 65534, 103 };
	char p[4400], *text;
	uint64_t id;

	(void)state;
	assert_int_equal(submit_as(f, 65534, NULL, groups, 2, &id), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/task", f->qdir, id);
	text = slurp(p);
	assert_non_null(text);
	assert_non_null(strstr(text, "\ngroups 65534,103\n"));
	reload(f);
	assert_int_equal(task(f, id)->ngroups, 2);
	assert_int_equal(task(f, id)->groups[1], 103);
	assert_int_equal(tick(f), 1);
	assert_int_equal(f->sp.uid, 65534);
	assert_int_equal(f->sp.gid, 65534);
	assert_int_equal(f->sp.ngroups, 2);
	assert_int_equal(f->sp.groups[0], 65534);
	assert_int_equal(f->sp.groups[1], 103);
	/* No groups at all: recorded as none, not looked up. */
	assert_int_equal(submit_as(f, 1000, NULL, NULL, 0, &id), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/task", f->qdir, id);
	assert_non_null(strstr(slurp(p), "\ngroups -\n"));
	/* A task file of before groups were recorded (no groups line): no groups. */
	{
		char *nl, old[8192];

		snprintf(old, sizeof(old), "%s", slurp(p));
		nl = strstr(old, "groups -\n");
		memmove(nl, nl + 9, strlen(nl + 9) + 1);
		assert_int_equal(t_write_file(p, old), 0);
	}
	reload(f);
	assert_int_equal(task(f, id)->ngroups, 0);
	assert_int_equal(task(f, id)->uid, 1000);
	fx_free(f);
}

/* Every file drfd writes for a task is 0600, its directories 0711, whatever the umask. */
static void test_file_modes(void **state)
{
	mode_t old = umask(0);
	struct fx *f = fx_new();
	char rel[64];
	uint64_t a, b;

	(void)state;
	assert_int_equal(submit_as(f, 1000, NULL, NULL, 0, &a), 0);
	assert_int_equal(submit_as(f, 1000, NULL, NULL, 0, &b), 0);
	tick(f);
	assert_int_equal(task(f, a)->state, DRF_TASK_RUNNING);
	assert_int_equal(task(f, b)->state, DRF_TASK_RUNNING);
	assert_int_equal(drf_tasks_cancel(&f->q, b, 1000, rel, sizeof(rel)), 0);
	end(f, a, "exit 0\nsignal -1\n", NULL);
	tick(f);
	umask(old);
	assert_int_equal(mode_at(f->qdir, ""), 0711);
	assert_int_equal(mode_at(f->qdir, "next-id"), 0600);
	snprintf(rel, sizeof(rel), "%" PRIu64, a);
	assert_int_equal(mode_at(f->qdir, rel), 0711);
	for (const char *const *n = (const char *const[]){ "task", "started", "result", NULL }; *n;
	     n++) {
		snprintf(rel, sizeof(rel), "%" PRIu64 "/%s", a, *n);
		assert_int_equal(mode_at(f->qdir, rel), 0600);
	}
	snprintf(rel, sizeof(rel), "%" PRIu64 "/cancel", b);
	assert_int_equal(mode_at(f->qdir, rel), 0600);
	fx_free(f);
}

/* A state dir (or an ancestor) others could write, someone else's, or a symlink: refused. */
static void test_unsafe_state_dir_refused(void **state)
{
	t_needs_root("it chowns the state dir to another user");
	struct fx *f = fx_new();
	char sdir[4200], link[4200], err[1024];
	struct drf_tasks q;

	(void)state;
	drf_tasks_free(&f->q);
	snprintf(sdir, sizeof(sdir), "%s/state", f->dir);
	assert_int_equal(chmod(sdir, 0777), 0);
	assert_int_equal(drf_tasks_init(&q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), -EPERM);
	assert_int_equal(chmod(sdir, 0775), 0);
	assert_int_equal(drf_tasks_init(&q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), -EPERM);
	assert_int_equal(chmod(sdir, 0755), 0);
	assert_int_equal(chown(sdir, 1000, 1000), 0);
	assert_int_equal(drf_tasks_init(&q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), -EPERM);
	assert_int_equal(chown(sdir, 0, 0), 0);
	/* An ancestor others can write (not sticky). */
	assert_int_equal(chmod(f->dir, 0777), 0);
	assert_int_equal(drf_tasks_init(&q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), -EPERM);
	assert_int_equal(chmod(f->dir, 0700), 0);
	/* The tasks dir itself someone else's. */
	assert_int_equal(chown(f->qdir, 1000, 1000), 0);
	assert_true(drf_tasks_init(&q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
				   NULL, err, sizeof(err)) < 0);
	assert_int_equal(chown(f->qdir, 0, 0), 0);
	/* A symlink on the path. */
	snprintf(link, sizeof(link), "%s/link", f->dir);
	assert_int_equal(symlink(sdir, link), 0);
	snprintf(link, sizeof(link), "%s/link/x.tasks", f->dir);
	assert_int_equal(drf_tasks_init(&q, link, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), -ELOOP);
	/* And back to safe: it works. */
	assert_int_equal(drf_tasks_init(&f->q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), 0);
	fx_free(f);
}

/*
 * A task directory swapped for a symlink to one whose task file says uid 0, a
 * task file or directory of someone else's: not loaded, never run. And a task
 * runs as drfd's memory says, whatever its file says by then.
 */
static void test_swapped_task_dir_not_followed(void **state)
{
	t_needs_root("it chowns task files to another user");
	struct fx *f = fx_new();
	char p[4400], q[4400], *text;
	uint64_t id[4];

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(submit_as(f, 1000, NULL, NULL, 0, &id[i]), 0);
	/* 1: moved aside, edited to uid 0, and a symlink in its place. */
	snprintf(p, sizeof(p), "%s/%" PRIu64, f->qdir, id[0]);
	snprintf(q, sizeof(q), "%s/evil", f->dir);
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(symlink(q, p), 0);
	snprintf(q, sizeof(q), "%s/evil/task", f->dir);
	text = slurp(q);
	assert_non_null(text);
	{
		char *u = strstr(text, "\nuid 1000\n");

		assert_non_null(u);
		memcpy(u, "\nuid 0000\n", 10);
	}
	assert_int_equal(t_write_file(q, text), 0);
	/* 2: its task file someone else's. 3: its directory someone else's. */
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/task", f->qdir, id[1]);
	assert_int_equal(chown(p, 1000, 1000), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64, f->qdir, id[2]);
	assert_int_equal(chown(p, 1000, 1000), 0);
	reload(f);
	assert_int_equal(f->q.n, 1);
	assert_int_equal(f->q.t[0].id, id[3]);
	/* 4: its file says uid 0 after it was loaded: it runs as 1000 all the same. */
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/task", f->qdir, id[3]);
	text = slurp(p);
	{
		char *u = strstr(text, "\nuid 1000\n");

		assert_non_null(u);
		memcpy(u, "\nuid 0000\n", 10);
	}
	assert_int_equal(t_write_file(p, text), 0);
	assert_int_equal(tick(f), 1);
	assert_int_equal(f->sp.spawned, 1);
	assert_int_equal(f->sp.uid, 1000);
	assert_non_null(strstr(f->sp.text, "\nuid 1000\n"));
	fx_free(f);
}

/* A supervisor's io that fails the first `fails` writes of its exit file (a full disk). */
struct flaky {
	int fails, failed;
	unsigned slept[8];
	int nsleeps;
};

static int flaky_write(void *ctx, int dirfd, const char *name, const char *text)
{
	struct flaky *k = ctx;

	if (strcmp(name, "exit") == 0 && k->failed < k->fails) {
		k->failed++;
		return -ENOSPC;
	}
	return drf_super_real_io.write(NULL, dirfd, name, text);
}

static void flaky_sleep(void *ctx, unsigned ms)
{
	struct flaky *k = ctx;

	if (k->nsleeps < 8)
		k->slept[k->nsleeps] = ms;
	k->nsleeps++;
}

/*
 * The real supervisor, in a child, on task id of the queue (its directory fd
 * and its text in a pipe, as real_spawn hands them). Returns its exit status.
 */
static int supervise_as(struct fx *f, uint64_t id, struct flaky *k, bool unit, rlim_t fsize)
{
	struct drf_super_io io = { .write = flaky_write, .sleep_ms = flaky_sleep, .ctx = k };
	char name[32], *text = drf_tasks_text(task(f, id));
	int dfd, p[2], status;
	pid_t pid;

	assert_non_null(text);
	snprintf(name, sizeof(name), "%" PRIu64, id);
	dfd = drf_at_dir(f->q.dfd, name, DRF_PRIVATE_DIR_MODE, false);
	assert_true(dfd >= 0);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], text, strlen(text)), (ssize_t)strlen(text));
	close(p[1]);
	free(text);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* A file size limit: the output's writes fail past it (EFBIG), as on a full disk. */
		if (fsize != RLIM_INFINITY &&
		    setrlimit(RLIMIT_FSIZE, &(struct rlimit){ fsize, fsize }) < 0)
			_exit(99);
		_exit(drf_task_supervise_fds(dfd, p[0], f->qdir, &io, unit));
	}
	close(p[0]);
	close(dfd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int supervise(struct fx *f, uint64_t id, struct flaky *k)
{
	return supervise_as(f, id, k, false, RLIM_INFINITY);
}

/* Submits argv (argc words) as uid in cwd to B and starts it. */
static uint64_t submit_argv(struct fx *f, uid_t uid, const gid_t *groups, size_t n,
			    const char *cwd, char **argv, size_t argc)
{
	struct drf_task_req req = { .uid = uid, .gid = uid, .groups = groups, .ngroups = n,
				    .cwd = cwd, .argv = argv, .argc = argc };
	char err[1024];
	uint64_t id;

	snprintf(req.tenant, sizeof(req.tenant), "B");
	assert_int_equal(drf_tasks_submit(&f->q, &f->cfg, f->cap, &req, &id, err, sizeof(err)), 0);
	assert_int_equal(tick(f), 1);
	return id;
}

static uint64_t submit_cmd(struct fx *f, uid_t uid, const gid_t *groups, size_t n,
			   const char *script)
{
	char *argv[] = { "sh", "-c", (char *)script, NULL };

	return submit_argv(f, uid, groups, n, "/", argv, 3);
}

/* Exactly the groups drfd handed over, not the user's from /etc/group; not the file's uid. */
static void test_supervisor_sets_exact_groups(void **state)
{
	t_needs_root("the supervisor sets the task's groups and uid");
	struct fx *f = fx_new();
	const gid_t groups[] = { 65534, 4242, 4243 };
	struct flaky k = { 0 };
	char p[4400], *text;
	struct stat st;
	uint64_t id;

	(void)state;
	id = submit_cmd(f, 65534, groups, 3, "id -u; id -G");
	/* A task file that says root by now: the supervisor does not read it. */
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/task", f->qdir, id);
	text = slurp(p);
	{
		char *u = strstr(text, "\nuid 65534\n");

		assert_non_null(u);
		memcpy(u, "\nuid 00000\n", 11);
	}
	assert_int_equal(t_write_file(p, text), 0);
	assert_int_equal(supervise(f, id, &k), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/stdout", f->qdir, id);
	assert_string_equal(slurp(p), "65534\n65534 4242 4243\n");
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, 65534);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/exit", f->qdir, id);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* No groups: none, not nobody's from /etc/group. */
	id = submit_cmd(f, 65534, NULL, 0, "id -G");
	assert_int_equal(supervise(f, id, &k), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/stdout", f->qdir, id);
	assert_string_equal(slurp(p), "65534\n");
	fx_free(f);
}

/* The exit file cannot be written three times (ENOSPC): retried with back-off, exit 7 kept. */
static void test_exit_kept_when_write_fails(void **state)
{
	t_needs_root("the supervisor sets the task's groups and uid");
	struct fx *f = fx_new();
	struct flaky *k = mmap(NULL, sizeof(*k), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			       -1, 0);
	uint64_t id;

	(void)state;
	assert_true(k != MAP_FAILED);
	memset(k, 0, sizeof(*k));
	k->fails = 3;
	id = submit_cmd(f, 65534, NULL, 0, "echo out; exit 7");
	assert_int_equal(supervise(f, id, k), 0);
	assert_int_equal(k->failed, 3);
	assert_int_equal(k->nsleeps, 3);
	assert_int_equal(k->slept[0], 100);
	assert_int_equal(k->slept[1], 200);
	assert_int_equal(k->slept[2], 400);
	/* Then its cgroup empties (the supervisor exits only once it has written it). */
	end(f, id, NULL, NULL);
	tick(f);
	assert_int_equal(task(f, id)->state, DRF_TASK_DONE);
	assert_string_equal(task(f, id)->result, "exited");
	assert_int_equal(task(f, id)->exit_code, 7);
	assert_null(task(f, id)->error);
	munmap(k, sizeof(*k));
	fx_free(f);
}

/* Same uid, same key: the same task; another uid: another; after a restart too. */
static void test_idempotent_key(void **state)
{
	struct fx *f = fx_new();
	uint64_t a, b, c, d;
	char p[4400];

	(void)state;
	assert_int_equal(submit_as(f, 1000, "job-42", NULL, 0, &a), 0);
	assert_int_equal(submit_as(f, 1000, "job-42", NULL, 0, &b), DRF_TASKS_KNOWN);
	assert_int_equal(b, a);
	assert_int_equal(f->q.n, 1);
	assert_int_equal(f->q.next_id, a + 1);
	assert_int_equal(submit_as(f, 1001, "job-42", NULL, 0, &c), 0);
	assert_true(c != a);
	assert_int_equal(submit_as(f, 1000, "job-43", NULL, 0, &d), 0);
	assert_true(d != a && d != c);
	assert_int_equal(submit_as(f, 1000, "bad key", NULL, 0, &d), DRF_TASKS_REFUSED);
	assert_int_equal(f->q.n, 3);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/task", f->qdir, a);
	assert_non_null(strstr(slurp(p), "\nkey job-42\n"));
	/* Known while running, after a restart, and once finished (kept in the history). */
	tick(f);
	assert_int_equal(task(f, a)->state, DRF_TASK_RUNNING);
	reload(f);
	assert_int_equal(submit_as(f, 1000, "job-42", NULL, 0, &b), DRF_TASKS_KNOWN);
	assert_int_equal(b, a);
	assert_int_equal(submit_as(f, 1001, "job-42", NULL, 0, &b), DRF_TASKS_KNOWN);
	assert_int_equal(b, c);
	end(f, a, "exit 0\nsignal -1\n", NULL);
	tick(f);
	assert_int_equal(task(f, a)->state, DRF_TASK_DONE);
	reload(f);
	assert_int_equal(submit_as(f, 1000, "job-42", NULL, 0, &b), DRF_TASKS_KNOWN);
	assert_int_equal(b, a);
	assert_int_equal(f->q.n, 3);
	/* Forgotten with the task once the history drops it: then it is a new submit. */
	f->q.history = 0;
	tick(f);
	assert_int_equal(submit_as(f, 1000, "job-42", NULL, 0, &b), 0);
	assert_true(b > d);
	fx_free(f);
}


/* ---- the review of the hardening ---- */

/* A task of uid with a vector so small that the capacity holds any number of them. */
static int submit_tiny_key(struct fx *f, uid_t uid, const char *key, uint64_t *id, char *err,
			   size_t len)
{
	char *argv[] = { "true", NULL };
	struct drf_task_req req = { .uid = uid, .gid = uid, .cwd = "/", .argv = argv, .argc = 1,
				    .key = key };
	uint64_t dummy;

	snprintf(req.tenant, sizeof(req.tenant), "A");
	req.vec[DRF_RES_CPU] = 1e-12;
	req.given[DRF_RES_CPU] = true;
	req.given[DRF_RES_MEMORY] = true;
	return drf_tasks_submit(&f->q, &f->cfg, f->cap, &req, id ? id : &dummy, err, len);
}

static int submit_tiny(struct fx *f, uid_t uid, uint64_t *id, char *err, size_t len)
{
	return submit_tiny_key(f, uid, NULL, id, err, len);
}

static bool dir_exists(struct fx *f, uint64_t id)
{
	char p[4400];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%" PRIu64, f->qdir, id);
	return stat(p, &st) == 0;
}

/*
 * DRF_TASKS_MAX_UID unfinished tasks of a uid, queued or running, then its next
 * submit is refused, changing nothing; another uid's and root's are taken; a
 * task that ends makes room. DRF_TASKS_MAX of all uids: then root is refused too.
 */
static void test_caps(void **state)
{
	struct fx *f = fx_new();
	char err[1024];
	uint64_t id, next, keyed, again;
	size_t n;
	unsigned k = 0;

	(void)state;
	assert_int_equal(submit_tiny_key(f, 1000, "cap-1", &keyed, err, sizeof(err)), 0);
	for (int i = 1; i < DRF_TASKS_MAX_UID; i++)
		assert_int_equal(submit_tiny(f, 1000, NULL, err, sizeof(err)), 0);
	n = f->q.n;
	next = f->q.next_id;
	assert_int_equal(submit_tiny(f, 1000, NULL, err, sizeof(err)), DRF_TASKS_REFUSED);
	assert_non_null(strstr(err, "256"));
	assert_int_equal(f->q.n, n);
	assert_int_equal(f->q.next_id, next);
	assert_false(dir_exists(f, next));
	/* Running counts too: all of them start (the vector is tiny), still refused. */
	assert_int_equal(tick(f), DRF_TASKS_MAX_UID);
	assert_int_equal(submit_tiny(f, 1000, NULL, err, sizeof(err)), DRF_TASKS_REFUSED);
	/* One ends: room for one. */
	end(f, task(f, 2)->id, "exit 0\nsignal -1\n", NULL);
	tick(f);
	assert_int_equal(submit_tiny(f, 1000, NULL, err, sizeof(err)), 0);
	assert_int_equal(submit_tiny(f, 1000, NULL, err, sizeof(err)), DRF_TASKS_REFUSED);
	/* Another user is not held to 1000's count; root to no uid's. */
	assert_int_equal(submit_tiny(f, 1001, NULL, err, sizeof(err)), 0);
	for (int i = 0; i < DRF_TASKS_MAX_UID + 44; i++)
		assert_int_equal(submit_tiny(f, 0, NULL, err, sizeof(err)), 0);
	/* Up to DRF_TASKS_MAX of all: then everyone is refused, root included. */
	n = 0;
	for (size_t i = 0; i < f->q.n; i++)
		n += f->q.t[i].state != DRF_TASK_DONE;
	for (; n < DRF_TASKS_MAX; n++, k++)
		assert_int_equal(submit_tiny(f, 2000 + k / DRF_TASKS_MAX_UID, &id, err,
					     sizeof(err)), 0);
	next = f->q.next_id;
	assert_int_equal(submit_tiny(f, 0, NULL, err, sizeof(err)), DRF_TASKS_REFUSED);
	assert_non_null(strstr(err, "4096"));
	assert_int_equal(submit_tiny(f, 3000, NULL, err, sizeof(err)), DRF_TASKS_REFUSED);
	assert_int_equal(f->q.next_id, next);
	/* A keyed retry of a task it knows is no new task: answered, cap or not. */
	assert_int_equal(submit_tiny_key(f, 1000, "cap-1", &again, err, sizeof(err)),
			 DRF_TASKS_KNOWN);
	assert_int_equal(again, keyed);
	fx_free(f);
}

/*
 * The disk is full (the cancel and result files cannot be written): a running
 * task is killed all the same and recorded cancelled; a queued one stays
 * queued, answered failed, also after a restart, until its result is written.
 */
static void test_cancel_disk_full(void **state)
{
	struct fx *f = fx_new();
	char err[512], buf[64], p[4400];
	uint64_t run, queued;

	(void)state;
	assert_int_equal(submit_as(f, 1000, NULL, NULL, 0, &run), 0);
	assert_int_equal(tick(f), 1);
	assert_int_equal(submit(f, "A", 0.9, -1, &queued), 0);
	tick(f);
	assert_int_equal(task(f, queued)->state, DRF_TASK_QUEUED);
	/* A directory in the way of the temporary files: every write of them fails. */
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/.cancel.tmp", f->qdir, run);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/.result.tmp", f->qdir, queued);
	assert_int_equal(mkdir(p, 0700), 0);
	/* Queued: answered failed, and queued it stays, also for a restarted drfd. */
	assert_int_equal(drf_tasks_cancel(&f->q, queued, 1000, err, sizeof(err)),
			 DRF_TASKS_FAILED);
	assert_non_null(strstr(err, "result"));
	assert_int_equal(task(f, queued)->state, DRF_TASK_QUEUED);
	reload(f);
	assert_int_equal(task(f, queued)->state, DRF_TASK_QUEUED);
	/* Room again: cancelled, for good. */
	assert_int_equal(rmdir(p), 0);
	assert_int_equal(drf_tasks_cancel(&f->q, queued, 1000, err, sizeof(err)), 0);
	/* Running: killed without its cancel file, recorded cancelled from memory. */
	assert_int_equal(drf_tasks_cancel(&f->q, run, 1000, err, sizeof(err)), 0);
	assert_true(cgfs_read(&f->fs, task(f, run)->cgroup, "cgroup.kill", buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "1");
	end(f, run, "exit -1\nsignal 9\n", NULL);
	tick(f);
	assert_string_equal(task(f, run)->result, "cancelled");
	reload(f);
	assert_string_equal(task(f, run)->result, "cancelled");
	assert_int_equal(task(f, queued)->state, DRF_TASK_DONE);
	assert_string_equal(task(f, queued)->result, "cancelled");
	fx_free(f);
}

/* Another uid's finished tasks do not push a uid's out: its directory and key stay. */
static void test_history_per_uid(void **state)
{
	struct fx *f = fx_new();
	char err[256];
	uint64_t a, b[5], again;
	unsigned done = 0;

	(void)state;
	f->q.history = 3;
	assert_int_equal(submit_as(f, 1000, "mine-1", NULL, 0, &a), 0);
	assert_int_equal(drf_tasks_cancel(&f->q, a, 1000, err, sizeof(err)), 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(submit_as(f, 1001, NULL, NULL, 0, &b[i]), 0);
		assert_int_equal(drf_tasks_cancel(&f->q, b[i], 1001, err, sizeof(err)), 0);
	}
	tick(f);
	assert_int_equal(task(f, a)->state, DRF_TASK_DONE);
	assert_true(dir_exists(f, a));
	for (size_t i = 0; i < f->q.n; i++)
		done += f->q.t[i].uid == 1001;
	assert_int_equal(done, 3);
	/* 1001's newest 3 are kept, its 2 oldest gone with their directories. */
	assert_false(dir_exists(f, b[0]));
	assert_false(dir_exists(f, b[1]));
	assert_true(dir_exists(f, b[4]));
	assert_int_equal(submit_as(f, 1000, "mine-1", NULL, 0, &again), DRF_TASKS_KNOWN);
	assert_int_equal(again, a);
	fx_free(f);
}

/*
 * A held task (a fleet task whose end the fleet has not been told) is kept
 * past the history, and counts for no one's; released, the next trim drops
 * it. drf_tasks_find finds each by id; drf_tasks_room says when a uid's cap
 * is reached.
 */
static void test_history_held(void **state)
{
	struct fx *f = fx_new();
	char err[256];
	uint64_t held, b[4];

	(void)state;
	f->q.history = 2;
	assert_int_equal(submit_as(f, 1001, NULL, NULL, 0, &held), 0);
	assert_int_equal(drf_tasks_hold(&f->q, held, true), 0);
	assert_int_equal(drf_tasks_hold(&f->q, held + 100, true), -ENOENT);
	assert_int_equal(drf_tasks_cancel(&f->q, held, 1001, err, sizeof(err)), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(submit_as(f, 1001, NULL, NULL, 0, &b[i]), 0);
		assert_int_equal(drf_tasks_cancel(&f->q, b[i], 1001, err, sizeof(err)), 0);
	}
	tick(f);
	/* The held one, the oldest, kept; of the rest the newest 2. */
	assert_non_null(drf_tasks_find(&f->q, held));
	assert_true(dir_exists(f, held));
	assert_null(drf_tasks_find(&f->q, b[0]));
	assert_null(drf_tasks_find(&f->q, b[1]));
	assert_non_null(drf_tasks_find(&f->q, b[3]));
	assert_int_equal(drf_tasks_find(&f->q, b[3])->id, b[3]);
	/* Released: gone at the next trim (one more finished task makes one). */
	assert_int_equal(drf_tasks_hold(&f->q, held, false), 0);
	assert_int_equal(submit_as(f, 1001, NULL, NULL, 0, &b[0]), 0);
	assert_int_equal(drf_tasks_cancel(&f->q, b[0], 1001, err, sizeof(err)), 0);
	tick(f);
	assert_null(drf_tasks_find(&f->q, held));
	/* Room: none once a uid holds DRF_TASKS_MAX_UID queued or running. */
	for (int i = 0; i < DRF_TASKS_MAX_UID; i++) {
		assert_true(drf_tasks_room(&f->q, 1002));
		assert_int_equal(submit_as(f, 1002, NULL, NULL, 0, &b[1]), 0);
	}
	assert_false(drf_tasks_room(&f->q, 1002));
	assert_true(drf_tasks_room(&f->q, 1003));
	fx_free(f);
}

/*
 * Many uids (one user's subordinate uids): no more than history_all finished
 * tasks in all; the uid holding the most gives up its oldest first, and a uid
 * with few keeps them.
 */
static void test_history_overall(void **state)
{
	struct fx *f = fx_new();
	char err[256];
	uint64_t id, few;
	unsigned per[4] = { 0 };

	(void)state;
	f->q.history = 5;
	f->q.history_all = 8;
	assert_int_equal(submit_as(f, 1000, NULL, NULL, 0, &few), 0);
	assert_int_equal(drf_tasks_cancel(&f->q, few, 1000, err, sizeof(err)), 0);
	for (uid_t u = 1001; u <= 1003; u++)
		for (int i = 0; i < 5; i++) {
			assert_int_equal(submit_as(f, u, NULL, NULL, 0, &id), 0);
			assert_int_equal(drf_tasks_cancel(&f->q, id, u, err, sizeof(err)), 0);
		}
	tick(f);
	/*
	 * 1 + 3 x 5 = 16 finished, trimmed as each finishes: never over 8, uid
	 * 1000's one kept, and the three others cut to 2 or 3 each.
	 */
	for (size_t i = 0; i < f->q.n; i++) {
		assert_int_equal(f->q.t[i].state, DRF_TASK_DONE);
		per[f->q.t[i].uid - 1000]++;
	}
	assert_true(f->q.n <= 8);
	assert_int_equal(per[0], 1);
	for (int u = 1; u <= 3; u++)
		assert_true(per[u] >= 2 && per[u] <= 3);
	assert_true(dir_exists(f, few));
	/* The newest of each: the last one submitted is kept, the first of 1001 gone. */
	assert_true(dir_exists(f, id));
	assert_false(dir_exists(f, few + 1));
	fx_free(f);
}

/* A cwd that is not absolute, or PATH_MAX long: refused; a long one is kept whole. */
static void test_cwd_at_submit(void **state)
{
	struct fx *f = fx_new();
	char *argv[] = { "true", NULL }, *cwd = malloc(PATH_MAX + 1), err[1024];
	struct drf_task_req req = { .uid = 1000, .gid = 1000, .argv = argv, .argc = 1 };
	uint64_t id;

	(void)state;
	assert_non_null(cwd);
	snprintf(req.tenant, sizeof(req.tenant), "B");
	req.cwd = "tmp";
	assert_int_equal(drf_tasks_submit(&f->q, &f->cfg, f->cap, &req, &id, err, sizeof(err)),
			 DRF_TASKS_REFUSED);
	req.cwd = "";
	assert_int_equal(drf_tasks_submit(&f->q, &f->cfg, f->cap, &req, &id, err, sizeof(err)),
			 DRF_TASKS_REFUSED);
	/* PATH_MAX bytes and its NUL: more than chdir takes. */
	memset(cwd, ' ', PATH_MAX);
	cwd[0] = '/';
	cwd[PATH_MAX] = '\0';
	req.cwd = cwd;
	assert_int_equal(drf_tasks_submit(&f->q, &f->cfg, f->cap, &req, &id, err, sizeof(err)),
			 DRF_TASKS_REFUSED);
	assert_int_equal(f->q.n, 0);
	/* One shorter: taken, and 3 x 4095 bytes escaped in its file come back whole. */
	cwd[PATH_MAX - 1] = '\0';
	assert_int_equal(drf_tasks_submit(&f->q, &f->cfg, f->cap, &req, &id, err, sizeof(err)), 0);
	reload(f);
	assert_int_equal(f->q.n, 1);
	assert_string_equal(task(f, id)->cwd, cwd);
	free(cwd);
	fx_free(f);
}

/*
 * text as drf_json_print() writes it: one JSON document, strictly parsed (its
 * bytes UTF-8), then a newline and nothing else. Fails the test otherwise.
 */
static json_object *parse_doc(const char *text)
{
	size_t n = strlen(text);
	struct json_tokener *tok = json_tokener_new();
	json_object *o;

	assert_non_null(tok);
	assert_true(n > 0 && text[n - 1] == '\n');
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, text, (int)(n - 1));
	if (json_tokener_get_error(tok) != json_tokener_success)
		fail_msg("not JSON (%s): %s", json_tokener_error_desc(json_tokener_get_error(tok)),
			 text);
	assert_int_equal(json_tokener_get_parse_end(tok), n - 1);
	json_tokener_free(tok);
	assert_non_null(o);
	return o;
}

/* The member key of o, which must be there (it may be null). */
static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(o, key, &v))
		fail_msg("no \"%s\" in %s", key, json_object_to_json_string(o));
	return v;
}

/* Whether a is a JSON array of exactly the n strings of want. */
static bool is_words(json_object *a, const char *const *want, size_t n)
{
	if (!json_object_is_type(a, json_type_array) || json_object_array_length(a) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		json_object *w = json_object_array_get_idx(a, i);

		if (!json_object_is_type(w, json_type_string) ||
		    strcmp(json_object_get_string(w), want[i]) != 0)
			return false;
	}
	return true;
}

/* A listing as uid sees it (JSON or text), in a buffer to free. */
static char *listing(struct fx *f, bool json, uid_t uid, size_t *len)
{
	struct drf_access_who who = { uid, uid, NULL, 0 };
	char *buf = NULL;
	FILE *m = open_memstream(&buf, len);

	assert_non_null(m);
	drf_tasks_render(&f->q, &f->cfg, json, &who, m);
	assert_int_equal(fclose(m), 0);
	return buf;
}

/*
 * A listing shows at most DRF_TASKS_SHOWN_MAX bytes of a task's command (the
 * words that fit), so that large requests cannot make it huge; the JSON says so.
 */
static void test_listing_command_capped(void **state)
{
	struct fx *f = fx_new();
	char *big = malloc(3000), *argv[] = { "sh", "-c", big, "tail-word", NULL }, err[1024];
	char *small[] = { "echo", "short", NULL };
	struct drf_task_req req = { .uid = 1000, .gid = 1000, .cwd = "/tmp", .argv = argv,
				    .argc = 4 };
	uint64_t id;
	size_t len;
	char *out;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', 2999);
	big[2999] = '\0';
	snprintf(req.tenant, sizeof(req.tenant), "B");
	assert_int_equal(drf_tasks_submit(&f->q, &f->cfg, f->cap, &req, &id, err, sizeof(err)), 0);
	req.argv = small;
	req.argc = 2;
	assert_int_equal(drf_tasks_submit(&f->q, &f->cfg, f->cap, &req, &id, err, sizeof(err)), 0);
	for (int json = 0; json < 2; json++) {
		out = listing(f, json, 1000, &len);
		/* The big word and the one after it are not shown; the short task is whole. */
		assert_null(strstr(out, "xxxxxxxxxxxxxxxx"));
		assert_null(strstr(out, "tail-word"));
		assert_non_null(strstr(out, "short"));
		assert_true(len < 2 * DRF_TASKS_SHOWN_MAX);
		if (json) {
			static const char *const cut[] = { "sh", "-c" };
			static const char *const whole[] = { "echo", "short" };
			json_object *doc = parse_doc(out), *tasks = member(doc, "tasks"), *t, *v;

			assert_int_equal(json_object_array_length(tasks), 2);
			t = json_object_array_get_idx(tasks, 0);
			assert_true(is_words(member(t, "command"), cut, 2));
			v = member(t, "command_cut");
			assert_true(json_object_is_type(v, json_type_boolean));
			assert_true(json_object_get_boolean(v));
			t = json_object_array_get_idx(tasks, 1);
			assert_true(is_words(member(t, "command"), whole, 2));
			v = member(t, "command_cut");
			assert_true(json_object_is_type(v, json_type_boolean));
			assert_false(json_object_get_boolean(v));
			json_object_put(doc);
		} else {
			assert_non_null(strstr(out, " sh -c ...\n"));
			assert_non_null(strstr(out, " echo short\n"));
		}
		free(out);
	}
	/* The task itself holds every word: only the listing is cut. */
	assert_int_equal(f->q.t[0].argc, 4);
	assert_string_equal(f->q.t[0].argv[2], big);
	free(big);
	fx_free(f);
}

/* The numeric directory of a task left alone, with next-id lost: the next id is past it. */
static void test_next_id_past_left_alone(void **state)
{
	t_needs_root("it chowns a task directory to another user");
	struct fx *f = fx_new();
	char p[4400];
	uint64_t id[3], n;

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_int_equal(submit_as(f, 1000, NULL, NULL, 0, &id[i]), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64, f->qdir, id[2]);
	assert_int_equal(chown(p, 1000, 1000), 0);
	snprintf(p, sizeof(p), "%s/next-id", f->qdir);
	assert_int_equal(unlink(p), 0);
	reload(f);
	assert_int_equal(f->q.n, 2);
	assert_int_equal(submit_as(f, 1000, NULL, NULL, 0, &n), 0);
	assert_true(n > id[2]);
	fx_free(f);
}

/* A uid or gid that is not a plain number: the task file is refused, never run as root. */
static void test_uid_strict(void **state)
{
	static const char *const bad[] = { "uid abc", "uid -1", "uid 1000x", "uid 4294967295",
					   "uid ", "gid abc", "uid 1e3" };
	struct fx *f = fx_new();
	char p[4400], text[8192], *u;
	uint64_t id;

	(void)state;
	assert_int_equal(submit_as(f, 1000, NULL, NULL, 0, &id), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/task", f->qdir, id);
	snprintf(text, sizeof(text), "%s", slurp(p));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char edited[8300];
		const char *what = bad[i][0] == 'u' ? "\nuid 1000\n" : "\ngid 1000\n";

		u = strstr(text, what);
		assert_non_null(u);
		snprintf(edited, sizeof(edited), "%.*s\n%s%s", (int)(u - text), text, bad[i],
			 u + strlen(what) - 1);
		assert_int_equal(t_write_file(p, edited), 0);
		reload(f);
		if (f->q.n != 0)
			fail_msg("a task file with '%s' was loaded (uid %u)", bad[i],
				 (unsigned)f->q.t[0].uid);
	}
	assert_int_equal(t_write_file(p, text), 0);
	reload(f);
	assert_int_equal(f->q.n, 1);
	assert_int_equal(task(f, id)->uid, 1000);
	fx_free(f);
}

/* A cwd that is gone when the task starts: failed with why, not run in "/". */
static void test_cwd_gone_fails(void **state)
{
	t_needs_root("the supervisor sets the task's groups and uid");
	struct fx *f = fx_new();
	char *argv[] = { "pwd", NULL }, p[4400];
	const char *gone = "/nonexistent/drf-test-cwd";
	struct flaky k = { 0 };
	uint64_t id;

	(void)state;
	id = submit_argv(f, 65534, NULL, 0, gone, argv, 1);
	assert_int_equal(supervise(f, id, &k), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/stdout", f->qdir, id);
	assert_string_equal(slurp(p), "");
	end(f, id, NULL, NULL);
	tick(f);
	assert_string_equal(task(f, id)->result, "failed");
	assert_non_null(task(f, id)->error);
	assert_non_null(strstr(task(f, id)->error, gone));
	assert_non_null(strstr(task(f, id)->error, "No such file"));
	fx_free(f);
}

/*
 * The command gets no signal ignored or blocked: the supervisor ignores SIGHUP
 * and SIGINT, which exec would hand on.
 */
static void test_command_signals_default(void **state)
{
	t_needs_root("the supervisor sets the task's groups and uid");
	struct fx *f = fx_new();
	char *argv[] = { "grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL }, p[4400];
	unsigned long long blk, ign;
	struct flaky k = { 0 };
	uint64_t id;

	(void)state;
	/* Even what the test's own parent ignores (a shell's background job: SIGINT). */
	signal(SIGQUIT, SIG_IGN);
	id = submit_argv(f, 65534, NULL, 0, "/", argv, 4);
	assert_int_equal(supervise(f, id, &k), 0);
	signal(SIGQUIT, SIG_DFL);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/stdout", f->qdir, id);
	assert_int_equal(sscanf(slurp(p), "SigBlk: %llx SigIgn: %llx", &blk, &ign), 2);
	assert_true(blk == 0);
	/*
	 * But 32 and 33, glibc's own (NPTL's): signal() cannot change them, glibc sets
	 * them up itself where it uses them, and GNU make hands them on ignored.
	 */
	if ((ign & ~(3ULL << 31)) != 0)
		fail_msg("the command ignores signals %llx", ign);
	fx_free(f);
}

/* The whole file p, with its length (it may hold NULs): free(). */
static char *slurp_n(const char *p, size_t *len)
{
	FILE *o = fopen(p, "r");
	char *buf;
	long n;

	assert_non_null(o);
	assert_int_equal(fseek(o, 0, SEEK_END), 0);
	n = ftell(o);
	assert_true(n >= 0);
	rewind(o);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, o), (size_t)n);
	buf[n] = '\0';
	fclose(o);
	*len = (size_t)n;
	return buf;
}

/* Byte i of what the test's commands write: the alphabet over and over. */
#define ABC(i) ((char)('A' + (i) % 26))
/* A command writing n such bytes to stdout and m to stderr (awk: no shell quoting games). */
static uint64_t submit_abc(struct fx *f, unsigned n, unsigned m, const char *then)
{
	char script[512];

	snprintf(script, sizeof(script),
		 "awk 'BEGIN { for (i = 0; i < %u; i++) printf \"%%c\", 65 + i %% 26; "
		 "for (i = 0; i < %u; i++) printf \"%%c\", 65 + i %% 26 > \"/dev/stderr\" }'; %s",
		 n, m, then);
	return submit_cmd(f, 65534, NULL, 0, script);
}

/* File NAME of task id: exactly the first cap of ABC bytes, then the mark, when cut. */
static void assert_abc(struct fx *f, uint64_t id, const char *name, unsigned kept, bool mark)
{
	char p[4400], want[96];
	size_t len, m = 0;
	char *got;
	struct stat st;

	snprintf(p, sizeof(p), "%s/%" PRIu64 "/%s", f->qdir, id, name);
	got = slurp_n(p, &len);
	if (mark)
		m = (size_t)snprintf(want, sizeof(want), DRF_TASK_MARK, (unsigned long long)kept);
	assert_int_equal(len, kept + m);
	for (unsigned i = 0; i < kept; i++)
		if (got[i] != ABC(i))
			fail_msg("%s: byte %u is %#x, not %c", name, i, (unsigned char)got[i], ABC(i));
	if (mark)
		assert_memory_equal(got + kept, want, m);
	free(got);
	/* The submitter's, 0600, as without a cap. */
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_mode & 07777, 0600);
}

/*
 * The cap: a command writing 3x the cap on stdout and 2x on stderr leaves
 * files of the cap and the mark, holding the first cap bytes exactly; the
 * command exits as it would (7), the bytes dropped are in the exit file, in
 * the task and its result file, counted once, and read back by a restarted
 * drfd; the listing shows them.
 */
static void test_output_capped(void **state)
{
	t_needs_root("the supervisor sets the task's groups and uid");
	struct drf_access_entry anyone = { DRF_ACCESS_ANY, 0, (char *)"*" };
	struct fx *f = fx_new();
	struct flaky k = { 0 };
	char p[4400], err[256], *text, *body = NULL;
	size_t blen = 0;
	uint64_t id;

	(void)state;
	f->q.output_max = 100000;
	id = submit_abc(f, 300000, 200000, "exit 7");
	assert_int_equal(task(f, id)->output_max, 100000);
	assert_int_equal(supervise(f, id, &k), 0);
	assert_abc(f, id, "stdout", 100000, true);
	assert_abc(f, id, "stderr", 100000, true);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/exit", f->qdir, id);
	text = slurp(p);
	assert_non_null(strstr(text, "\nstdout_dropped 200000\n"));
	assert_non_null(strstr(text, "\nstderr_dropped 100000\n"));
	assert_non_null(strstr(text, "\noutput_max 100000\n"));
	end(f, id, NULL, NULL);
	tick(f);
	assert_string_equal(task(f, id)->result, "exited");
	assert_int_equal(task(f, id)->exit_code, 7);
	assert_int_equal(task(f, id)->dropped[0], 200000);
	assert_int_equal(task(f, id)->dropped[1], 100000);
	assert_int_equal(f->q.truncated_total, 1);
	/* Another tick counts it no more. */
	tick(f);
	assert_int_equal(f->q.truncated_total, 1);
	body = listing(f, true, 0, &blen);
	{
		json_object *j = json_tokener_parse(body), *ts, *t0, *out, *v;

		assert_non_null(j);
		assert_true(json_object_object_get_ex(j, "tasks", &ts));
		t0 = json_object_array_get_idx(ts, 0);
		assert_true(json_object_object_get_ex(t0, "output", &out));
		assert_true(json_object_object_get_ex(out, "stdout_dropped", &v));
		assert_int_equal(json_object_get_int64(v), 200000);
		assert_true(json_object_object_get_ex(out, "stderr_dropped", &v));
		assert_int_equal(json_object_get_int64(v), 100000);
		assert_true(json_object_object_get_ex(out, "max", &v));
		assert_int_equal(json_object_get_int64(v), 100000);
		assert_true(json_object_object_get_ex(out, "truncated", &v));
		assert_true(json_object_get_boolean(v));
		assert_true(json_object_object_get_ex(j, "output_truncated_total", &v));
		assert_int_equal(json_object_get_int64(v), 1);
		/*
		 * Another uid, a member of every tenant, sees none of it, as of the
		 * files: they are the submitter's.
		 */
		json_object_put(j);
		free(body);
		for (int i = 0; i < 2; i++)
			f->ten[i].access = (struct drf_acl){ .e = &anyone, .n = 1,
							     .file = "test.conf", .line = 1 };
		body = listing(f, true, 1000, &blen);
		j = json_tokener_parse(body);
		assert_non_null(j);
		assert_true(json_object_object_get_ex(j, "tasks", &ts));
		t0 = json_object_array_get_idx(ts, 0);
		assert_true(json_object_object_get_ex(t0, "output", &out));
		assert_null(out);
		json_object_put(j);
		free(body);
	}
	/* A restarted drfd reads them back from the result file. */
	drf_tasks_free(&f->q);
	assert_int_equal(drf_tasks_init(&f->q, f->qdir, &f->fs, &fake_ops, &f->sp, &f->clock,
					NULL, err, sizeof(err)), 0);
	assert_int_equal(task(f, id)->dropped[0], 200000);
	assert_int_equal(task(f, id)->dropped[1], 100000);
	assert_int_equal(task(f, id)->output_max, 100000);
	/* Counted at the end it records, not at a load. */
	assert_int_equal(f->q.truncated_total, 0);
	fx_free(f);
}

/*
 * Under the cap, and exactly at it: the output byte for byte, no mark, 0
 * dropped, not counted; the command's fds are 0, 1 and 2 only (ls's own
 * directory is 3).
 */
static void test_output_under_cap_untouched(void **state)
{
	t_needs_root("the supervisor sets the task's groups and uid");
	struct fx *f = fx_new();
	struct flaky k = { 0 };
	char p[4400];
	uint64_t id;

	(void)state;
	f->q.output_max = 70000;
	/* More than a pipe holds at once, in many writes. */
	id = submit_abc(f, 70000, 69999, "exit 0");
	assert_int_equal(supervise(f, id, &k), 0);
	assert_abc(f, id, "stdout", 70000, false);
	assert_abc(f, id, "stderr", 69999, false);
	end(f, id, NULL, NULL);
	tick(f);
	assert_string_equal(task(f, id)->result, "exited");
	assert_int_equal(task(f, id)->dropped[0], 0);
	assert_int_equal(task(f, id)->dropped[1], 0);
	assert_int_equal(f->q.truncated_total, 0);
	id = submit_cmd(f, 65534, NULL, 0, "ls /proc/self/fd");
	assert_int_equal(supervise(f, id, &k), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/stdout", f->qdir, id);
	assert_string_equal(slurp(p), "0\n1\n2\n3\n");
	/* No cap (unlimited): no count either, and the files as before. */
	f->q.output_max = 0;
	id = submit_abc(f, 300000, 0, "exit 0");
	assert_int_equal(supervise(f, id, &k), 0);
	assert_abc(f, id, "stdout", 300000, false);
	end(f, id, NULL, NULL);
	tick(f);
	assert_int_equal(task(f, id)->dropped[0], -1);
	assert_int_equal(task(f, id)->output_max, 0);
	assert_int_equal(f->q.truncated_total, 0);
	fx_free(f);
}

/*
 * A process the command left in the background with its stdout: as drfd runs
 * it (clone3), what it writes after the command exited is kept (the cgroup
 * stays populated by it as before); as systemd runs it, the supervisor ends
 * with the command, not with the background process (which systemd kills then).
 */
static void test_output_background_writer(void **state)
{
	t_needs_root("the supervisor sets the task's groups and uid");
	struct fx *f = fx_new();
	struct flaky k = { 0 };
	char p[4400], *text;
	long bg;
	uint64_t id;

	(void)state;
	f->q.output_max = 1000;
	/* It writes once the command (the shell, $$) has exited: no sleep decides the order. */
	id = submit_cmd(f, 65534, NULL, 0,
			"(while kill -0 $$ 2>/dev/null; do sleep 0.05; done; echo late) & echo early");
	assert_int_equal(supervise(f, id, &k), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/stdout", f->qdir, id);
	assert_string_equal(slurp(p), "early\nlate\n");
	/* As a unit: a background process holding stdout and never ending. */
	id = submit_cmd(f, 65534, NULL, 0, "sleep 1000 & echo $!; exit 5");
	assert_int_equal(supervise_as(f, id, &k, true, RLIM_INFINITY), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/stdout", f->qdir, id);
	text = slurp(p);
	bg = strtol(text, NULL, 10);
	assert_true(bg > 1);
	assert_int_equal(kill((pid_t)bg, SIGKILL), 0);
	snprintf(p, sizeof(p), "%s/%" PRIu64 "/exit", f->qdir, id);
	text = slurp(p);
	assert_non_null(strstr(text, "exit 5\n"));
	assert_non_null(strstr(text, "\nstdout_dropped 0\n"));
	fx_free(f);
}

/*
 * Writes that fail (a file size limit here, EFBIG, as ENOSPC on a full disk):
 * the file keeps what was written (a partial write included), the mark cannot
 * be added, the rest is dropped and counted; the task still ends as its
 * command did, and the supervisor writes its exit file.
 */
static void test_output_write_fails(void **state)
{
	t_needs_root("the supervisor sets the task's groups and uid");
	struct fx *f = fx_new();
	struct flaky k = { 0 };
	uint64_t id;

	(void)state;
	f->q.output_max = 100000;
	id = submit_abc(f, 50000, 0, "exit 3");
	assert_int_equal(supervise_as(f, id, &k, false, 1000), 0);
	assert_abc(f, id, "stdout", 1000, false);
	end(f, id, NULL, NULL);
	tick(f);
	assert_string_equal(task(f, id)->result, "exited");
	assert_int_equal(task(f, id)->exit_code, 3);
	assert_int_equal(task(f, id)->dropped[0], 49000);
	assert_int_equal(task(f, id)->dropped[1], 0);
	assert_int_equal(f->q.truncated_total, 1);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_e1_scaled),
		cmocka_unit_test(test_endings),
		cmocka_unit_test(test_reap_whole_keys),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_restart_readopts),
		cmocka_unit_test(test_many_words_read_back),
		cmocka_unit_test(test_refusals_change_nothing),
		cmocka_unit_test(test_failures_injected),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_peer_groups_captured),
		cmocka_unit_test(test_groups_recorded),
		cmocka_unit_test(test_file_modes),
		cmocka_unit_test(test_unsafe_state_dir_refused),
		cmocka_unit_test(test_swapped_task_dir_not_followed),
		cmocka_unit_test(test_supervisor_sets_exact_groups),
		cmocka_unit_test(test_exit_kept_when_write_fails),
		cmocka_unit_test(test_idempotent_key),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_cancel_disk_full),
		cmocka_unit_test(test_history_per_uid),
		cmocka_unit_test(test_history_overall),
		cmocka_unit_test(test_history_held),
		cmocka_unit_test(test_listing_command_capped),
		cmocka_unit_test(test_cwd_at_submit),
		cmocka_unit_test(test_next_id_past_left_alone),
		cmocka_unit_test(test_uid_strict),
		cmocka_unit_test(test_cwd_gone_fails),
		cmocka_unit_test(test_command_signals_default),
		cmocka_unit_test(test_output_capped),
		cmocka_unit_test(test_output_under_cap_untouched),
		cmocka_unit_test(test_output_background_writer),
		cmocka_unit_test(test_output_write_fails),
	};

	return cmocka_run_group_tests_name("tasks", tests, NULL, NULL);
}
