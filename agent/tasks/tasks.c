// SPDX-License-Identifier: MIT
/*
 * The task queue's state, persistence and scheduling; see tasks.h. The
 * supervisor and the real spawn ops are in taskrun.c, the pick in
 * agent/core/taskq.c.
 */
#include "tasks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "json.h"
#include "keyfile.h"
#include "statedir.h"
#include "taskq.h"
#include "text.h"
#include "vec.h"

#define FILE_MAX (1 << 20)

int drf_tasks_dir(const char *state_path, char *ret, size_t len)
{
	size_t n = strlen(state_path);

	if (n > 6 && strcmp(state_path + n - 6, ".state") == 0)
		n -= 6;
	if ((size_t)snprintf(ret, len, "%.*s.tasks", (int)n, state_path) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static const char *const state_names[] = {
	[DRF_TASK_QUEUED] = "queued",
	[DRF_TASK_STARTING] = "starting",
	[DRF_TASK_RUNNING] = "running",
	[DRF_TASK_DONE] = "finished",
};

/* ---- files ---- */

/* Replaces ID/NAME (root's, 0600); NAME alone for the queue's own files. */
static int put(const struct drf_tasks *q, uint64_t id, const char *name, const char *text)
{
	char p[128];

	if (id)
		snprintf(p, sizeof(p), "%" PRIu64 "/%s", id, name);
	else
		snprintf(p, sizeof(p), "%s", name);
	return drf_replace_at(q->dfd, p, text, strlen(text), DRF_PRIVATE_FILE_MODE);
}

/*
 * The whole small file NAME under the directory fd dfd, NUL-terminated
 * (free()), or NULL with errno: only a regular file of drfd's own.
 */
static char *read_small(int dfd, const char *name)
{
	char *buf = NULL;
	ssize_t r = drf_at_read(dfd, name, FILE_MAX, true, &buf);

	if (r < 0) {
		errno = (int)-r;
		return NULL;
	}
	return buf;
}

/* ID/NAME of the queue. */
static char *get(const struct drf_tasks *q, uint64_t id, const char *name)
{
	char p[128];

	snprintf(p, sizeof(p), "%" PRIu64 "/%s", id, name);
	return read_small(q->dfd, p);
}

static bool exists(int dfd, const char *name)
{
	int fd = drf_at_open(dfd, name, O_PATH, 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int drf_peer_creds(int fd, uid_t *uid, gid_t *gid, gid_t **groups, size_t *ngroups)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr), gl;
	size_t cap = 64;
	gid_t *g = NULL;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
		return -errno;
	for (;;) {
		gid_t *ng = realloc(g, cap * sizeof(*g));

		if (!ng) {
			free(g);
			return -ENOMEM;
		}
		g = ng;
		gl = (socklen_t)(cap * sizeof(*g));
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &gl) == 0)
			break;
		/* ERANGE: gl says how much room the list needs. */
		if (errno != ERANGE || gl / sizeof(*g) <= cap ||
		    gl / sizeof(*g) > DRF_TASK_GROUPS_MAX) {
			int e = errno == ERANGE ? E2BIG : errno;

			free(g);
			return -e;
		}
		cap = gl / sizeof(*g);
	}
	*uid = cr.uid;
	*gid = cr.gid;
	*groups = g;
	*ngroups = gl / sizeof(*g);
	return 0;
}

/*
 * The value of "key VALUE" in text, copied into buf; NULL if absent or longer
 * than buf holds: a value cut short is another value, never taken.
 */
static const char *kv(const char *text, const char *key, char *buf, size_t len)
{
	size_t n;
	const char *v = drf_kv_find(text, key, &n);

	if (!v || n >= len)
		return NULL;
	memcpy(buf, v, n);
	buf[n] = '\0';
	return buf;
}

/* The value of "key VALUE" in text, whole, in *ret (free()): 0, -ENOENT or -ENOMEM. */
static int kv_dup(const char *text, const char *key, char **ret)
{
	size_t n;
	const char *v = drf_kv_find(text, key, &n);

	if (!v)
		return -ENOENT;
	*ret = strndup(v, n);
	return *ret ? 0 : -ENOMEM;
}

/*
 * "key N" with N a plain decimal number below `below`: no sign, no space,
 * nothing after it. A uid read as strtod reads it would make "x" root.
 */
static int kv_id(const char *text, const char *key, unsigned long long below,
		 unsigned long long *ret)
{
	char b[32], *end;
	unsigned long long v;

	if (!kv(text, key, b, sizeof(b)) || b[0] < '0' || b[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(b, &end, 10);
	if (errno || *end || v >= below)
		return -EINVAL;
	*ret = v;
	return 0;
}

static double kv_num(const char *text, const char *key, double dflt)
{
	char b[64];

	return kv(text, key, b, sizeof(b)) ? strtod(b, NULL) : dflt;
}

static void task_dir(const struct drf_tasks *q, uint64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%" PRIu64, q->dir, id);
}

void drf_task_clear(struct drf_task *t)
{
	free(t->cgroup);
	free(t->groups);
	free(t->key);
	free(t->cwd);
	for (size_t i = 0; i < t->argc; i++)
		free(t->argv[i]);
	free(t->argv);
	free(t->error);
	memset(t, 0, sizeof(*t));
}

char *drf_tasks_text(const struct drf_task *t)
{
	char *buf = NULL, *e;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fprintf(f, "drfd-task 1\nid %" PRIu64 "\ntenant %s\ncgroup %s\nuid %u\ngid %u\n"
		   "submitted %" PRIu64 "\n", t->id, t->tenant, t->cgroup, (unsigned)t->uid,
		(unsigned)t->gid, t->submitted);
	/* The groups line always, "-" for none: a missing one is a task file of before. */
	fputs("groups ", f);
	for (size_t i = 0; i < t->ngroups; i++)
		fprintf(f, "%s%u", i ? "," : "", (unsigned)t->groups[i]);
	fputs(t->ngroups ? "\n" : "-\n", f);
	if (t->key) {
		e = drf_proto_escape(t->key);
		if (!e) {
			fclose(f);
			free(buf);
			return NULL;
		}
		fprintf(f, "key %s\n", e);
		free(e);
	}
	for (int r = 0; r < DRF_NRES; r++)
		fprintf(f, "%s %.17g\n", drf_res_name(r), t->vec[r]);
	e = drf_proto_escape(t->cwd);
	fprintf(f, "cwd %s\n", e ? e : "/");
	free(e);
	for (size_t i = 0; i < t->argc; i++) {
		e = drf_proto_escape(t->argv[i]);
		if (!e) {
			fclose(f);
			free(buf);
			return NULL;
		}
		fprintf(f, "arg %s\n", e);
		free(e);
	}
	/* Set when it starts (not in the task file of its submit): its supervisor's cap. */
	if (t->output_max)
		fprintf(f, "output-max %" PRIu64 "\n", t->output_max);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* "G1,G2,..." or "-" into t->groups; -EINVAL for anything else. */
static int parse_groups(struct drf_task *t, const char *s)
{
	size_t n = 1;

	if (strcmp(s, "-") == 0)
		return 0;
	for (const char *p = s; *p; p++)
		n += *p == ',';
	if (n > DRF_TASK_GROUPS_MAX)
		return -EINVAL;
	t->groups = calloc(n, sizeof(*t->groups));
	if (!t->groups)
		return -ENOMEM;
	for (const char *p = s; t->ngroups < n; p++) {
		char *end;
		unsigned long g;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		g = strtoul(p, &end, 10);
		if ((*end != ',' && *end != '\0') || g >= (gid_t)-1)
			return -EINVAL;
		t->groups[t->ngroups++] = (gid_t)g;
		p = end;
		if (!*end)
			break;
	}
	return t->ngroups == n ? 0 : -EINVAL;
}

/* A working directory drfd takes: absolute, and shorter than PATH_MAX (chdir's limit). */
static bool cwd_valid(const char *cwd)
{
	return cwd[0] == '/' && strnlen(cwd, PATH_MAX) < PATH_MAX;
}

/* Parses a task file into t (the id is the directory's). */
static int task_parse(struct drf_task *t, uint64_t id, char *text)
{
	unsigned long long v;
	size_t argv_cap = 0, n_;
	char *s;
	int r;

	memset(t, 0, sizeof(*t));
	t->id = id;
	t->exit_code = t->signal = -1;
	t->dropped[0] = t->dropped[1] = -1;
	if (strncmp(text, "drfd-task 1\n", 12) != 0 || !kv(text, "tenant", t->tenant,
							   sizeof(t->tenant)))
		return -EINVAL;
	r = kv_dup(text, "cgroup", &t->cgroup);
	if (r < 0)
		return r == -ENOMEM ? r : -EINVAL;
	if (cgfs_path_problem(t->cgroup))
		return -EINVAL;
	/* Whom it runs as: exactly a number, or the file is refused (never root by default). */
	if (kv_id(text, "uid", (uid_t)-1, &v) < 0)
		return -EINVAL;
	t->uid = (uid_t)v;
	if (kv_id(text, "gid", (gid_t)-1, &v) < 0)
		return -EINVAL;
	t->gid = (gid_t)v;
	/* No groups line (a task file of before they were recorded): no groups. */
	r = kv_dup(text, "groups", &s);
	if (r == -ENOMEM)
		return r;
	if (r == 0) {
		r = parse_groups(t, s);
		free(s);
		if (r < 0)
			return r;
	}
	r = kv_dup(text, "key", &s);
	if (r == -ENOMEM)
		return r;
	if (r == 0) {
		if (drf_proto_unescape(s) < 0 || !drf_proto_key_valid(s)) {
			free(s);
			return -EINVAL;
		}
		t->key = s;
	}
	t->submitted = (uint64_t)kv_num(text, "submitted", 0);
	for (int k = 0; k < DRF_NRES; k++)
		t->vec[k] = kv_num(text, drf_res_name(k), 0);
	/* The cwd whole (up to 3 x PATH_MAX escaped), never cut to another directory. */
	r = kv_dup(text, "cwd", &t->cwd);
	if (r < 0)
		return r == -ENOMEM ? r : -EINVAL;
	if (drf_proto_unescape(t->cwd) < 0 || !cwd_valid(t->cwd))
		return -EINVAL;
	for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t n = strcspn(l, "\n");
		char *a;

		if (strncmp(l, "arg ", 4) != 0)
			continue;
		a = strndup(l + 4, n - 4);
		/* Room for it and the NULL that ends argv. */
		if (!a || DRF_VEC_GROW(t->argv, &argv_cap, t->argc + 2) < 0 ||
		    drf_proto_unescape(a) < 0) {
			free(a);
			return -EINVAL;
		}
		t->argv[t->argc++] = a;
		t->argv[t->argc] = NULL;
	}
	if (t->argc == 0)
		return -EINVAL;
	/* No line (a task file, or a supervisor's text of a drfd without caps): no cap. */
	if (drf_kv_find(text, "output-max", &n_) && kv_id(text, "output-max", UINT64_MAX, &v) == 0)
		t->output_max = v;
	return 0;
}

int drf_tasks_parse_file(struct drf_task *t, char *text)
{
	return task_parse(t, (uint64_t)kv_num(text, "id", 0), text);
}

/*
 * The output's cap and the bytes dropped of each stream, as an exit or result
 * file says them; what it does not say (as a plain number) stays as it was.
 */
static void parse_output(struct drf_task *t, const char *text)
{
	static const char *const keys[2] = { "stdout_dropped", "stderr_dropped" };
	unsigned long long v;

	for (int k = 0; k < 2; k++)
		if (kv_id(text, keys[k], INT64_MAX, &v) == 0)
			t->dropped[k] = (int64_t)v;
	if (kv_id(text, "output_max", UINT64_MAX, &v) == 0)
		t->output_max = v;
}

static void parse_result(struct drf_task *t, const char *text)
{
	char *e;

	if (!kv(text, "result", t->result, sizeof(t->result)))
		snprintf(t->result, sizeof(t->result), "lost");
	t->exit_code = (int)kv_num(text, "exit", -1);
	t->signal = (int)kv_num(text, "signal", -1);
	t->started = (uint64_t)kv_num(text, "started", 0);
	t->ended = (uint64_t)kv_num(text, "ended", 0);
	t->cpu_usec = kv_num(text, "cpu_usec", NAN);
	t->memory_peak = kv_num(text, "memory_peak", NAN);
	t->oom_kills = kv_num(text, "oom_kills", NAN);
	t->utime_us = kv_num(text, "utime_us", NAN);
	t->stime_us = kv_num(text, "stime_us", NAN);
	t->maxrss_kb = kv_num(text, "maxrss_kb", NAN);
	parse_output(t, text);
	if (kv_dup(text, "error", &e) == 0) {
		if (drf_proto_unescape(e) == 0)
			t->error = e;
		else
			free(e);
	}
}

static int cmp_task(const void *a, const void *b)
{
	const struct drf_task *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Finished tasks (indexes into q's tasks) by uid, the newest first. */
static int cmp_uid_newest(const void *a, const void *b, void *q)
{
	const struct drf_task *x = &((struct drf_tasks *)q)->t[*(const size_t *)a];
	const struct drf_task *y = &((struct drf_tasks *)q)->t[*(const size_t *)b];

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	return x->id > y->id ? -1 : x->id < y->id;
}

/*
 * Keeps the newest q->history finished tasks of each uid: another user's
 * submits never push a user's results, output or keys out. And no more than
 * q->history_all in all: the uids that hold the most keep their newest down to
 * the highest level at which every uid's (at most that many) fit.
 */
static void trim_history(struct drf_tasks *q)
{
	size_t done = 0, *idx, out = 0, level = q->history, kept;
	bool *drop;

	/* A held task is kept, and counts for no one's history. */
	for (size_t i = 0; i < q->n; i++)
		done += q->t[i].state == DRF_TASK_DONE && !q->t[i].held;
	if (done <= q->history && done <= q->history_all)
		return;
	idx = calloc(done, sizeof(*idx));
	drop = calloc(q->n, sizeof(*drop));
	if (!idx || !drop) {
		/* Kept until a tick with the memory to sort them. */
		free(idx);
		free(drop);
		return;
	}
	done = 0;
	for (size_t i = 0; i < q->n; i++)
		if (q->t[i].state == DRF_TASK_DONE && !q->t[i].held)
			idx[done++] = i;
	qsort_r(idx, done, sizeof(*idx), cmp_uid_newest, q);
	/* Each uid's run in idx is newest first: a level keeps the first `level` of each. */
	for (;;) {
		kept = 0;
		for (size_t k = 0, run = 0; k < done; k++) {
			run = k && q->t[idx[k]].uid == q->t[idx[k - 1]].uid ? run + 1 : 0;
			kept += run < level;
		}
		if (kept <= q->history_all || level == 0)
			break;
		level--;
	}
	for (size_t k = 0, run = 0; k < done; k++) {
		run = k && q->t[idx[k]].uid == q->t[idx[k - 1]].uid ? run + 1 : 0;
		drop[idx[k]] = run >= level;
	}
	for (size_t i = 0; i < q->n; i++) {
		char name[32];

		if (!drop[i]) {
			q->t[out++] = q->t[i];
			continue;
		}
		snprintf(name, sizeof(name), "%" PRIu64, q->t[i].id);
		drf_at_remove(q->dfd, name);
		drf_task_clear(&q->t[i]);
	}
	q->n = out;
	free(idx);
	free(drop);
}

static int populated(const struct drf_tasks *q, const char *cg)
{
	char buf[256];
	uint64_t v;
	ssize_t n = cgfs_read(q->fs, cg, "cgroup.events", buf, sizeof(buf));

	if (n == -ENOENT)
		return 0;
	if (n < 0)
		return (int)n;
	return drf_kv_u64(buf, "populated", &v) == 0 && v;
}

/*
 * Loads the task of the directory NAME (an id): not at all unless the
 * directory and its task file are drfd's own (root's, not writable by others,
 * no symlink), for the uid it runs as is read from there. 1 loaded, 0 left alone.
 */
static int load_task(struct drf_tasks *q, const char *name, uint64_t id)
{
	struct drf_task *t;
	char *text;
	int dfd, r;

	dfd = drf_at_dir(q->dfd, name, DRF_PRIVATE_DIR_MODE, false);
	if (dfd < 0) {
		drf_log(q->log, LOG_ERR, "task %s: '%s/%s' is not a directory of drfd's own (%s: a "
					 "symlink, someone else's, or writable by others); left "
					 "alone", name, q->dir, name, strerror(-dfd));
		return 0;
	}
	text = read_small(dfd, "task");
	if (!text || DRF_VEC_GROW(q->t, &q->cap, q->n + 1) < 0) {
		drf_log(q->log, LOG_ERR, "task %s: cannot read '%s/%s/task': %s (a file of drfd's "
					 "own, root's and 0600, is needed); left alone",
			name, q->dir, name, strerror(text ? ENOMEM : errno));
		free(text);
		close(dfd);
		return 0;
	}
	t = &q->t[q->n];
	r = task_parse(t, id, text);
	free(text);
	if (r < 0) {
		drf_log(q->log, LOG_ERR, "task %s: '%s/%s/task' does not parse; left alone",
			name, q->dir, name);
		drf_task_clear(t);
		close(dfd);
		return 0;
	}
	q->n++;
	text = read_small(dfd, "result");
	if (text) {
		t->state = DRF_TASK_DONE;
		parse_result(t, text);
		free(text);
		close(dfd);
		return 1;
	}
	t->cancel = exists(dfd, "cancel");
	text = read_small(dfd, "started");
	if (text) {
		t->started = (uint64_t)kv_num(text, "started", 0);
		free(text);
	}
	/*
	 * Started; or started just before drfd stopped, before it wrote
	 * `started`: its supervisor's files or its cgroup tell. Never twice.
	 */
	if (t->started || exists(dfd, "pid") || exists(dfd, "exit") ||
	    populated(q, t->cgroup) > 0) {
		t->state = DRF_TASK_RUNNING;
		t->readopted = true;
		if (!t->started)
			t->started = drf_real_usec(q->clock);
	} else {
		t->state = DRF_TASK_QUEUED;
	}
	close(dfd);
	return 1;
}

int drf_tasks_init(struct drf_tasks *q, const char *dir, const struct cgfs *fs,
		   const struct drf_spawn_ops *ops, void *ctx, const struct drf_clock *clock,
		   const struct drf_logger *log, char *err, size_t len)
{
	char why[1024];
	const char *name;
	struct dirent *de;
	char *text;
	DIR *dd;
	int sfd, fd, r;

	memset(q, 0, sizeof(*q));
	q->dfd = -1;
	q->fs = fs;
	q->ops = ops;
	q->ctx = ctx;
	q->clock = clock;
	q->log = log;
	q->history = DRF_TASKS_HISTORY;
	q->history_all = DRF_TASKS_HISTORY_ALL;
	q->next_id = 1;
	if ((size_t)snprintf(q->dir, sizeof(q->dir), "%s", dir) >= sizeof(q->dir)) {
		snprintf(err, len, "task directory '%s': path too long", dir);
		return -ENAMETOOLONG;
	}
	/* Its parent is state-dir: checked (again) on the fds that are used. */
	sfd = drf_statedir_open_parent(dir, true, &name, why, sizeof(why));
	if (sfd < 0) {
		snprintf(err, len, "%s", why);
		return sfd;
	}
	q->dfd = drf_at_dir(sfd, name, DRF_PRIVATE_DIR_MODE, true);
	close(sfd);
	if (q->dfd < 0) {
		r = q->dfd;
		snprintf(err, len, "the task directory '%s': %s%s", dir, strerror(-r),
			 r == -EPERM ? " (it must be root's and writable by root alone)" : "");
		return r;
	}
	text = read_small(q->dfd, "next-id");
	if (text) {
		q->next_id = strtoull(text, NULL, 10);
		free(text);
		if (q->next_id == 0)
			q->next_id = 1;
	}
	fd = fcntl(q->dfd, F_DUPFD_CLOEXEC, 0);
	dd = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dd) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, len, "cannot read the task directory '%s': %s", dir, strerror(-r));
		close(q->dfd);
		q->dfd = -1;
		return r;
	}
	while ((de = readdir(dd))) {
		char *end;
		uint64_t id;

		errno = 0;
		id = strtoull(de->d_name, &end, 10);
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end || errno ||
		    id == UINT64_MAX) {
			/* A submit that did not finish: ID.new. */
			if (strstr(de->d_name, ".new"))
				drf_at_remove(q->dfd, de->d_name);
			continue;
		}
		/*
		 * Past every id there, loaded or left alone: a new task's directory is
		 * renamed to its id, which must be free even when next-id was lost.
		 */
		if (id >= q->next_id)
			q->next_id = id + 1;
		load_task(q, de->d_name, id);
	}
	closedir(dd);
	if (q->n)
		qsort(q->t, q->n, sizeof(q->t[0]), cmp_task);
	return 0;
}

void drf_tasks_free(struct drf_tasks *q)
{
	for (size_t i = 0; i < q->n; i++)
		drf_task_clear(&q->t[i]);
	free(q->t);
	q->t = NULL;
	q->n = q->cap = 0;
	free(q->plan);
	q->plan = NULL;
	q->plan_cap = 0;
	if (q->dfd >= 0)
		close(q->dfd);
	q->dfd = -1;
}

static const struct drf_tenant *find_tenant(const struct drf_config *c, const char *name)
{
	for (size_t i = 0; i < c->n_tenants; i++)
		if (strcmp(c->tenants[i].name, name) == 0)
			return &c->tenants[i];
	return NULL;
}

static ssize_t find_task(const struct drf_tasks *q, uint64_t id)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->t[i].id == id)
			return (ssize_t)i;
	return -1;
}

/* Over DRF_TASKS_MAX, or uid's DRF_TASKS_MAX_UID (root is held to the first only)? Why in err. */
static bool over_cap(const struct drf_tasks *q, uid_t uid, char *err, size_t len)
{
	size_t all = 0, mine = 0;

	for (size_t i = 0; i < q->n; i++) {
		if (q->t[i].state == DRF_TASK_DONE)
			continue;
		all++;
		mine += q->t[i].uid == uid;
	}
	if (all >= DRF_TASKS_MAX) {
		snprintf(err, len, "drfd holds %zu tasks queued or running, the most it takes "
			 "(%d); submit again once some have ended", all, DRF_TASKS_MAX);
		return true;
	}
	if (uid != 0 && mine >= DRF_TASKS_MAX_UID) {
		snprintf(err, len, "uid %u has %zu tasks queued or running, the most drfd takes of "
			 "one user (%d); submit again once some have ended, or cancel some",
			 (unsigned)uid, mine, DRF_TASKS_MAX_UID);
		return true;
	}
	return false;
}

bool drf_tasks_room(const struct drf_tasks *q, uid_t uid)
{
	char why[256];

	return !over_cap(q, uid, why, sizeof(why));
}

const struct drf_task *drf_tasks_find(const struct drf_tasks *q, uint64_t id)
{
	size_t lo = 0, hi = q->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (q->t[mid].id == id)
			return &q->t[mid];
		if (q->t[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int drf_tasks_hold(struct drf_tasks *q, uint64_t id, bool held)
{
	struct drf_task *t = (struct drf_task *)drf_tasks_find(q, id);

	if (!t)
		return -ENOENT;
	t->held = held;
	return 0;
}

int drf_tasks_submit(struct drf_tasks *q, const struct drf_config *c,
		     const double capacity[DRF_NRES], const struct drf_task_req *req,
		     uint64_t *ret_id, char *err, size_t len)
{
	const struct drf_tenant *tn = find_tenant(c, req->tenant);
	struct drf_task t = { 0 };
	char tmp[64], fin[32], idbuf[32], cg[4096], q1[32], q2[32], *text;
	const char *why;
	int res, r, procs, tfd;

	/* A retry of a submit whose answer was lost: the task it queued, whatever else it asks. */
	if (req->key) {
		if (!drf_proto_key_valid(req->key)) {
			snprintf(err, len, "the key must be 1 to %d printable characters without "
				 "spaces", DRF_TASK_KEY_MAX);
			return DRF_TASKS_REFUSED;
		}
		for (size_t i = 0; i < q->n; i++) {
			if (q->t[i].key && q->t[i].uid == req->uid &&
			    strcmp(q->t[i].key, req->key) == 0) {
				*ret_id = q->t[i].id;
				return DRF_TASKS_KNOWN;
			}
		}
	}
	if (!tn) {
		snprintf(err, len, "no tenant '%s' in %s", req->tenant, c->path);
		return DRF_TASKS_REFUSED;
	}
	if (req->argc == 0) {
		snprintf(err, len, "no command");
		return DRF_TASKS_REFUSED;
	}
	/* A task run elsewhere than asked would be another task: refused, never "/" instead. */
	if (!req->cwd || !cwd_valid(req->cwd)) {
		snprintf(err, len, "the working directory must be an absolute path shorter than %d "
			 "bytes", PATH_MAX);
		return DRF_TASKS_REFUSED;
	}
	if (over_cap(q, req->uid, err, len))
		return DRF_TASKS_REFUSED;
	for (int k = 0; k < DRF_NRES; k++)
		t.vec[k] = req->given[k] ? req->vec[k] : tn->task_model ? tn->vec[k] : 0;
	why = drf_tq_refuse(capacity, t.vec, &res);
	if (why && res >= 0) {
		drf_format_quantity(t.vec[res], drf_res_unit(res), q1, sizeof(q1));
		drf_format_quantity(capacity[res], drf_res_unit(res), q2, sizeof(q2));
		snprintf(err, len, "tenant '%s': the task's %s = %s %s (capacity %s in %s)",
			 tn->name, drf_res_name(res), q1, why, q2, c->path);
		return DRF_TASKS_REFUSED;
	}
	if (why) {
		snprintf(err, len, "tenant '%s': the task %s%s", tn->name, why,
			 tn->task_model ? "" : " (the tenant has no task-* keys to take them from)");
		return DRF_TASKS_REFUSED;
	}
	/* cgroup v2: a cgroup that enables controllers for children holds no processes. */
	procs = cgfs_nprocs(q->fs, tn->cgroup);
	if (procs > 0) {
		snprintf(err, len, "tenant '%s': its cgroup '%s/%s' holds %d processes of its own "
			 "(drfctl exec?); tasks run in child cgroups with their own limits, and "
			 "cgroup v2 lets a cgroup with such children hold no processes: run those "
			 "as tasks too, or wait until they end", tn->name, q->fs->root, tn->cgroup,
			 procs);
		return DRF_TASKS_REFUSED;
	}
	if ((size_t)snprintf(cg, sizeof(cg), q->units ? "%s/drf-task-%" PRIu64 ".service"
						      : "%s/task-%" PRIu64,
			     tn->cgroup, q->next_id) >= sizeof(cg)) {
		snprintf(err, len, "tenant '%s': cgroup path too long", tn->name);
		return DRF_TASKS_REFUSED;
	}
	if (DRF_VEC_GROW(q->t, &q->cap, q->n + 1) < 0) {
		snprintf(err, len, "out of memory");
		return DRF_TASKS_FAILED;
	}
	t.id = q->next_id;
	snprintf(t.tenant, sizeof(t.tenant), "%s", tn->name);
	t.uid = req->uid;
	t.gid = req->gid;
	if (req->ngroups > DRF_TASK_GROUPS_MAX) {
		snprintf(err, len, "too many groups");
		return DRF_TASKS_REFUSED;
	}
	if (req->ngroups) {
		t.groups = calloc(req->ngroups, sizeof(*t.groups));
		if (!t.groups)
			goto nomem;
		memcpy(t.groups, req->groups, req->ngroups * sizeof(*t.groups));
		t.ngroups = req->ngroups;
	}
	if (req->key && !(t.key = strdup(req->key)))
		goto nomem;
	t.submitted = drf_real_usec(q->clock);
	t.exit_code = t.signal = -1;
	t.dropped[0] = t.dropped[1] = -1;
	t.cgroup = strdup(cg);
	t.cwd = strdup(req->cwd);
	t.argv = calloc(req->argc + 1, sizeof(*t.argv));
	if (!t.cgroup || !t.cwd || !t.argv)
		goto nomem;
	for (size_t i = 0; i < req->argc; i++) {
		t.argv[i] = strdup(req->argv[i]);
		if (!t.argv[i])
			goto nomem;
		t.argc++;
	}
	text = drf_tasks_text(&t);
	if (!text)
		goto nomem;
	snprintf(tmp, sizeof(tmp), "%" PRIu64 ".new", t.id);
	snprintf(fin, sizeof(fin), "%" PRIu64, t.id);
	snprintf(idbuf, sizeof(idbuf), "%" PRIu64 "\n", t.id + 1);
	drf_at_remove(q->dfd, tmp);
	tfd = drf_at_dir(q->dfd, tmp, DRF_PRIVATE_DIR_MODE, true);
	r = tfd < 0 ? tfd : drf_replace_at(tfd, "task", text, strlen(text), DRF_PRIVATE_FILE_MODE);
	if (tfd >= 0)
		close(tfd);
	if (r == 0)
		r = put(q, 0, "next-id", idbuf);
	if (r == 0 && renameat(q->dfd, tmp, q->dfd, fin) < 0) {
		r = -errno;
		/* Taken by something drfd did not load: the next submit takes the next id. */
		if (r == -ENOTEMPTY || r == -EEXIST || r == -ENOTDIR || r == -EISDIR)
			q->next_id++;
	}
	if (r == 0 && fsync(q->dfd) < 0)
		r = -errno;
	free(text);
	if (r < 0) {
		drf_at_remove(q->dfd, tmp);
		snprintf(err, len, "cannot write task %" PRIu64 " to '%s/%s': %s", t.id, q->dir,
			 tmp, strerror(-r));
		drf_task_clear(&t);
		return DRF_TASKS_FAILED;
	}
	q->next_id++;
	t.state = DRF_TASK_QUEUED;
	q->t[q->n++] = t;
	*ret_id = t.id;
	drf_log(q->log, LOG_INFO, "task %" PRIu64 " queued for tenant '%s' by uid %u: %s",
		t.id, t.tenant, (unsigned)t.uid, t.argv[0]);
	return 0;
nomem:
	drf_task_clear(&t);
	snprintf(err, len, "out of memory");
	return DRF_TASKS_FAILED;
}

/*
 * Records the end of t: its result file, then drfd's memory. Returns 0, or the
 * -errno of the result file's write; then t is recorded in memory all the same
 * (a running task that has ended: a restarted drfd finds its exit file again),
 * unless only_if_written (a queued task: a restarted drfd would run it).
 */
static int finish(struct drf_tasks *q, struct drf_task *t, const char *result, const char *error,
		  bool only_if_written)
{
	char dir[4352], *buf = NULL, *e = NULL;
	uint64_t ended = t->ended ? t->ended : drf_real_usec(q->clock);
	size_t blen = 0;
	FILE *f;
	int r;

	task_dir(q, t->id, dir, sizeof(dir));
	f = open_memstream(&buf, &blen);
	if (f) {
		fprintf(f, "result %s\nexit %d\nsignal %d\nstarted %" PRIu64 "\nended %" PRIu64 "\n",
			result, t->exit_code, t->signal, t->started, ended);
		fprintf(f, "cpu_usec %.17g\nmemory_peak %.17g\noom_kills %.17g\nutime_us %.17g\n"
			   "stime_us %.17g\nmaxrss_kb %.17g\n", t->cpu_usec, t->memory_peak,
			t->oom_kills, t->utime_us, t->stime_us, t->maxrss_kb);
		if (t->output_max)
			fprintf(f, "output_max %" PRIu64 "\n", t->output_max);
		for (int k = 0; k < 2; k++)
			if (t->dropped[k] >= 0)
				fprintf(f, "%s_dropped %" PRId64 "\n", k ? "stderr" : "stdout",
					t->dropped[k]);
		if (error && (e = drf_proto_escape(error)))
			fprintf(f, "error %s\n", e);
		free(e);
		if (fclose(f) != 0) {
			free(buf);
			buf = NULL;
		}
	}
	r = buf ? put(q, t->id, "result", buf) : -ENOMEM;
	free(buf);
	if (r < 0 && only_if_written) {
		drf_log(q->log, LOG_ERR, "task %" PRIu64 ": cannot write '%s/result': %s; it "
					 "stays %s",
			t->id, dir, strerror(-r), state_names[t->state]);
		return r;
	}
	if (r < 0)
		drf_log(q->log, LOG_ERR, "task %" PRIu64 ": cannot write '%s/result': %s; after a "
					 "restart it will be found %s again",
			t->id, dir, strerror(-r), t->started ? "ended" : "queued");
	if (t->state != DRF_TASK_QUEUED)
		q->generation++;
	snprintf(t->result, sizeof(t->result), "%s", result);
	t->ended = ended;
	free(t->error);
	t->error = error ? strdup(error) : NULL;
	t->state = DRF_TASK_DONE;
	q->finished_total++;
	if (t->dropped[0] > 0 || t->dropped[1] > 0)
		q->truncated_total++;
	drf_log(q->log, LOG_INFO, "task %" PRIu64 " of tenant '%s': %s%s%s",
		t->id, t->tenant, result, error ? ": " : "", error ? error : "");
	return r;
}

int drf_tasks_cancel(struct drf_tasks *q, uint64_t id, uid_t who, char *err, size_t len)
{
	ssize_t i = find_task(q, id);
	struct drf_task *t;
	char dir[4352];
	bool was;
	int r;

	if (i < 0) {
		snprintf(err, len, "no task %" PRIu64, id);
		return DRF_TASKS_REFUSED;
	}
	t = &q->t[i];
	if (who != 0 && who != t->uid) {
		snprintf(err, len, "task %" PRIu64 " is uid %u's; only it or root can cancel it", id,
			 (unsigned)t->uid);
		return DRF_TASKS_REFUSED;
	}
	if (t->state == DRF_TASK_DONE) {
		snprintf(err, len, "task %" PRIu64 " has ended (%s)", id, t->result);
		return DRF_TASKS_REFUSED;
	}
	task_dir(q, t->id, dir, sizeof(dir));
	if (t->state == DRF_TASK_QUEUED || t->state == DRF_TASK_STARTING) {
		r = finish(q, t, "cancelled", NULL, true);
		if (r < 0) {
			snprintf(err, len, "cannot write '%s/result': %s; task %" PRIu64 " stays "
				 "queued", dir, strerror(-r), id);
			return DRF_TASKS_FAILED;
		}
		trim_history(q);
		return 0;
	}
	was = t->cancel;
	t->cancel = true;
	r = cgfs_write(q->fs, t->cgroup, "cgroup.kill", "1");
	if (r < 0) {
		t->cancel = was;
		snprintf(err, len, "cannot write '1' to '%s/%s/cgroup.kill': %s", q->fs->root,
			 t->cgroup, strerror(-r));
		return DRF_TASKS_FAILED;
	}
	/*
	 * Killed: recorded `cancelled` when its cgroup empties, from memory. The file
	 * only carries that across a restart, so a full disk does not stop a cancel.
	 */
	r = put(q, t->id, "cancel", "cancel\n");
	if (r < 0)
		drf_log(q->log, LOG_WARNING, "task %" PRIu64 ": killed, but cannot write "
					     "'%s/cancel': %s; a drfd restarted before its end is "
					     "recorded records how it was killed instead of "
					     "`cancelled`", id, dir, strerror(-r));
	return 0;
}

/* A running task whose cgroup is empty: read how it ended, record it, free it. */
static void reap_task(struct drf_tasks *q, struct drf_task *t)
{
	char dir[4352], buf[1024], why[PATH_MAX + 1024];
	const char *result;
	char *text, *e;
	double v;

	task_dir(q, t->id, dir, sizeof(dir));
	/* What the cgroup's files do not say (or not as a number) is left as it was. */
	if (cgfs_read(q->fs, t->cgroup, "cpu.stat", buf, sizeof(buf)) > 0 &&
	    !isnan(v = drf_kv_double(buf, "usage_usec")))
		t->cpu_usec = v;
	if (cgfs_read(q->fs, t->cgroup, "memory.peak", buf, sizeof(buf)) > 0)
		t->memory_peak = strtod(buf, NULL);
	if (cgfs_read(q->fs, t->cgroup, "memory.events", buf, sizeof(buf)) > 0 &&
	    !isnan(v = drf_kv_double(buf, "oom_kill")))
		t->oom_kills = v;
	text = get(q, t->id, "exit");
	why[0] = '\0';
	if (text) {
		t->exit_code = (int)kv_num(text, "exit", -1);
		t->signal = (int)kv_num(text, "signal", -1);
		t->utime_us = kv_num(text, "utime_us", NAN);
		t->stime_us = kv_num(text, "stime_us", NAN);
		t->maxrss_kb = kv_num(text, "maxrss_kb", NAN);
		t->ended = (uint64_t)kv_num(text, "ended", 0);
		parse_output(t, text);
		/* Whole: it names the cwd, up to PATH_MAX (taskrun.c). */
		if (kv_dup(text, "error", &e) == 0) {
			if (drf_proto_unescape(e) == 0)
				snprintf(why, sizeof(why), "%s", e);
			free(e);
		}
		free(text);
	}
	if (t->cancel)
		result = "cancelled";
	else if (why[0])
		result = "failed";
	else if (text && t->signal == 9 && t->oom_kills > 0)
		result = "oom-killed";
	else if (text && t->signal > 0)
		result = "killed";
	else if (text)
		result = "exited";
	else {
		result = "lost";
		snprintf(why, sizeof(why), "its cgroup '%s/%s' is empty and its supervisor wrote "
			 "no exit status (killed from outside?)", q->fs->root, t->cgroup);
		if (t->oom_kills > 0)
			result = "oom-killed";
	}
	/* Its cgroup goes with the next plan, which no longer has it (planner.h). */
	finish(q, t, result, why[0] ? why : NULL, false);
}

unsigned drf_tasks_reap(struct drf_tasks *q)
{
	unsigned ended = 0;

	for (size_t i = 0; i < q->n; i++) {
		struct drf_task *t = &q->t[i];

		if (t->state != DRF_TASK_RUNNING)
			continue;
		if (populated(q, t->cgroup) != 0)
			continue;
		/* Empty: its supervisor has exited; collect it if it is drfd's child. */
		if (t->pid > 0)
			q->ops->reap(q->ctx, t->pid);
		t->pid = 0;
		reap_task(q, t);
		ended++;
	}
	trim_history(q);
	return ended;
}

unsigned drf_tasks_pick(struct drf_tasks *q, const struct drf_config *c,
			const double capacity[DRF_NRES])
{
	struct drf_tq_tenant *tt;
	size_t *head;
	double free_[DRF_NRES];
	unsigned picked = 0;

	tt = calloc(c->n_tenants + 1, sizeof(*tt));
	head = calloc(c->n_tenants + 1, sizeof(*head));
	if (!tt || !head) {
		free(tt);
		free(head);
		return 0;
	}
	memcpy(free_, capacity, sizeof(free_));
	for (size_t i = 0; i < c->n_tenants; i++)
		tt[i].weight = c->tenants[i].weight;
	/* What running and starting tasks hold, their tenant in the config or not. */
	for (size_t i = 0; i < q->n; i++) {
		const struct drf_task *t = &q->t[i];

		if (t->state != DRF_TASK_RUNNING && t->state != DRF_TASK_STARTING)
			continue;
		for (int r = 0; r < DRF_NRES; r++)
			free_[r] -= t->vec[r];
		for (size_t k = 0; k < c->n_tenants; k++)
			if (strcmp(c->tenants[k].name, t->tenant) == 0)
				for (int r = 0; r < DRF_NRES; r++)
					tt[k].held[r] += t->vec[r];
	}
	/* A bounded number a pass: a burst starts over several, the loop served between. */
	q->pick_more = false;
	for (;;) {
		ssize_t pick;
		struct drf_task *t;

		/* Each tenant's next task: its oldest queued one (FIFO within a tenant). */
		for (size_t k = 0; k < c->n_tenants; k++) {
			tt[k].next = NULL;
			for (size_t i = 0; i < q->n; i++) {
				if (q->t[i].state == DRF_TASK_QUEUED &&
				    strcmp(q->t[i].tenant, c->tenants[k].name) == 0) {
					tt[k].next = q->t[i].vec;
					head[k] = i;
					break;
				}
			}
		}
		pick = drf_tq_pick(capacity, free_, tt, c->n_tenants);
		if (pick < 0)
			break;
		if (picked == DRF_TASKS_PICK_STEP) {
			q->pick_more = true; /* one more fits: the next pass */
			break;
		}
		t = &q->t[head[pick]];
		t->state = DRF_TASK_STARTING;
		q->generation++;
		picked++;
		for (int r = 0; r < DRF_NRES; r++) {
			free_[r] -= t->vec[r];
			tt[pick].held[r] += t->vec[r];
		}
	}
	free(tt);
	free(head);
	return picked;
}

int drf_tasks_plan(struct drf_tasks *q, const struct drf_plan_task **ret, size_t *ret_n)
{
	size_t n = 0;

	for (size_t i = 0; i < q->n; i++)
		n += q->t[i].state == DRF_TASK_RUNNING || q->t[i].state == DRF_TASK_STARTING;
	if (DRF_VEC_GROW(q->plan, &q->plan_cap, n) < 0)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < q->n; i++) {
		const struct drf_task *t = &q->t[i];

		if (t->state != DRF_TASK_RUNNING && t->state != DRF_TASK_STARTING)
			continue;
		q->plan[n].cgroup = t->cgroup;
		memcpy(q->plan[n].vec, t->vec, sizeof(t->vec));
		n++;
	}
	*ret = q->plan;
	*ret_n = n;
	return 0;
}

/* Starts t, whose cgroup holds its limits (or is made with them): its supervisor there. */
static int start_task(struct drf_tasks *q, struct drf_task *t, const struct drf_knobs *limits)
{
	char why[1024], dir[4352], text[128];
	pid_t pid = 0;
	int r, dfd;

	task_dir(q, t->id, dir, sizeof(dir));
	/* The supervisor gets its directory as an fd: it resolves no path of its own. */
	snprintf(text, sizeof(text), "%" PRIu64, t->id);
	dfd = drf_at_dir(q->dfd, text, DRF_PRIVATE_DIR_MODE, false);
	/* The cap in force now: a reload's new one holds for the tasks started after it. */
	t->output_max = q->output_max;
	r = dfd < 0 ? dfd : q->ops->spawn(q->ctx, q->fs, t->cgroup, t, limits, dfd, dir, &pid);
	if (dfd >= 0)
		close(dfd);
	if (r < 0) {
		snprintf(why, sizeof(why), "cannot start its supervisor in '%s/%s': %s",
			 q->fs->root, t->cgroup, strerror(-r));
		finish(q, t, "failed", why, false);
		return r;
	}
	t->pid = pid;
	t->started = drf_real_usec(q->clock);
	t->state = DRF_TASK_RUNNING;
	q->started_total++;
	snprintf(text, sizeof(text), "started %" PRIu64 "\n", t->started);
	r = put(q, t->id, "started", text);
	if (r < 0)
		drf_log(q->log, LOG_ERR, "task %" PRIu64 ": cannot write '%s/started': %s; a "
					 "restarted drfd finds it by its cgroup",
			t->id, dir, strerror(-r));
	drf_log(q->log, LOG_INFO, "task %" PRIu64 " of tenant '%s' started in '%s/%s'", t->id,
		t->tenant, q->fs->root, t->cgroup);
	return 0;
}

unsigned drf_tasks_launch(struct drf_tasks *q,
			  int (*ready)(void *ctx, const char *cg, const struct drf_knobs **limits,
				       char *why, size_t len),
			  void *ctx)
{
	uint64_t t0 = drf_mono_usec(q->clock);
	unsigned started = 0;

	q->launch_more = false;
	for (size_t i = 0; i < q->n; i++) {
		struct drf_task *t = &q->t[i];
		const struct drf_knobs *limits = NULL;
		char why[1024];
		int r;

		if (t->state != DRF_TASK_STARTING)
			continue;
		/* Each start forks and syncs: past the step's time, the rest at the next pass. */
		if (started && drf_mono_usec(q->clock) - t0 >= DRF_TASKS_LAUNCH_USEC) {
			q->launch_more = true;
			break;
		}
		r = ready(ctx, t->cgroup, &limits, why, sizeof(why));
		if (r == 0)
			continue; /* its cgroup is not there yet: the next tick */
		if (r < 0)
			finish(q, t, "failed", why, false);
		else if (start_task(q, t, limits) == 0)
			started++;
	}
	trim_history(q);
	return started;
}

/*
 * What viewer sees of t: 2 all of it (root, its submitter, an admin of its
 * tenant), 1 no more than the DRF order is made of (a member of its tenant:
 * tasks.h; a command line or a cwd may hold what its user shows nobody, a
 * token, a customer's name, as with ps's hidepid=2), 0 nothing (a tenant the
 * viewer may not act in, or one no longer in the config).
 */
static int sight(const struct drf_config *c, const struct drf_task *t,
		 const struct drf_access_who *viewer)
{
	const struct drf_tenant *tn;

	if (viewer->uid == 0 || viewer->uid == t->uid)
		return 2;
	tn = find_tenant(c, t->tenant);
	if (!tn)
		return 0;
	switch (drf_config_access(c, tn, viewer, NULL, 0)) {
	case DRF_ACCESS_ADMIN:
		return 2;
	case DRF_ACCESS_MEMBER:
		return 1;
	default:
		return 0;
	}
}

/* How many of a task's words `drfctl tasks` shows: those within DRF_TASKS_SHOWN_MAX bytes. */
static size_t shown_words(const struct drf_task *t)
{
	size_t bytes = 0, a;

	for (a = 0; a < t->argc; a++) {
		bytes += strlen(t->argv[a]);
		if (bytes > DRF_TASKS_SHOWN_MAX)
			break;
	}
	return a;
}

static void render_json(const struct drf_tasks *q, const struct drf_config *c,
			const struct drf_access_who *viewer, FILE *f)
{
	json_object *o = drf_json_object(), *tasks = drf_json_set_array(o, "tasks"), *x;
	char dir[4352];
	int err;

	for (size_t i = 0; i < q->n; i++) {
		const struct drf_task *t = &q->t[i];
		int seen = sight(c, t, viewer);
		bool all = seen == 2, done = t->state == DRF_TASK_DONE;
		json_object *to;

		if (!seen)
			continue;
		to = drf_json_append_object(tasks);
		task_dir(q, t->id, dir, sizeof(dir));
		drf_json_set_u64(to, "id", t->id);
		drf_json_set_str(to, "tenant", t->tenant);
		drf_json_set_str(to, "state", state_names[t->state]);
		drf_json_set_u64(to, "uid", t->uid);
		drf_json_set_u64(to, "gid", t->gid);
		if (all) {
			x = drf_json_set_array(to, "groups");
			for (size_t g = 0; g < t->ngroups; g++)
				drf_json_append_u64(x, t->groups[g]);
		} else {
			drf_json_set_null(to, "groups");
		}
		drf_json_set_str(to, "key", all ? t->key : NULL);
		drf_json_set_str(to, "cgroup", t->cgroup);
		drf_json_set_str(to, "dir", dir);
		x = drf_json_set_object(to, "vector");
		for (int r = 0; r < DRF_NRES; r++)
			if (t->vec[r] > 0)
				drf_json_set_num(x, drf_res_name(r), t->vec[r]);
		if (all) {
			size_t n = shown_words(t);

			x = drf_json_set_array(to, "command");
			for (size_t a = 0; a < n; a++)
				drf_json_append_str(x, t->argv[a]);
			drf_json_set_bool(to, "command_cut", n < t->argc);
		} else {
			drf_json_set_null(to, "command");
			drf_json_set_null(to, "command_cut");
		}
		drf_json_set_u64(to, "submitted_us", t->submitted);
		drf_json_set_u64(to, "started_us", t->started);
		drf_json_set_u64(to, "ended_us", t->ended);
		drf_json_set_bool(to, "readopted", t->readopted);
		drf_json_set_str(to, "result", done ? t->result : NULL);
		if (done && t->exit_code >= 0)
			drf_json_set_int(to, "exit_code", t->exit_code);
		else
			drf_json_set_null(to, "exit_code");
		if (done && t->signal > 0)
			drf_json_set_int(to, "signal", t->signal);
		else
			drf_json_set_null(to, "signal");
		drf_json_set_str(to, "error", all ? t->error : NULL);
		if (done) {
			x = drf_json_set_object(to, "use");
			drf_json_set_num(x, "cpu_usec", t->cpu_usec);
			drf_json_set_num(x, "memory_peak", t->memory_peak);
			drf_json_set_num(x, "oom_kills", t->oom_kills);
			drf_json_set_num(x, "utime_us", t->utime_us);
			drf_json_set_num(x, "stime_us", t->stime_us);
			drf_json_set_num(x, "maxrss_kb", t->maxrss_kb);
		}
		/*
		 * Its output's cap and what was dropped of it (null: none, or unknown),
		 * as its output's files: for root and its submitter.
		 */
		if (!all) {
			drf_json_set_null(to, "output");
			continue;
		}
		x = drf_json_set_object(to, "output");
		if (t->output_max)
			drf_json_set_u64(x, "max", t->output_max);
		else
			drf_json_set_null(x, "max");
		for (int k = 0; k < 2; k++) {
			const char *name = k ? "stderr_dropped" : "stdout_dropped";

			if (done && t->dropped[k] >= 0)
				drf_json_set_u64(x, name, (uint64_t)t->dropped[k]);
			else
				drf_json_set_null(x, name);
		}
		drf_json_set_bool(x, "truncated", done && (t->dropped[0] > 0 || t->dropped[1] > 0));
	}
	x = drf_json_set_object(o, "tenants");
	for (size_t k = 0; k < c->n_tenants; k++) {
		unsigned nq = 0, nr = 0, nd = 0;
		json_object *te;

		if (viewer->uid != 0 &&
		    drf_config_access(c, &c->tenants[k], viewer, NULL, 0) == DRF_ACCESS_NONE)
			continue;
		for (size_t i = 0; i < q->n; i++) {
			if (strcmp(q->t[i].tenant, c->tenants[k].name) != 0)
				continue;
			nq += q->t[i].state == DRF_TASK_QUEUED;
			nr += q->t[i].state == DRF_TASK_RUNNING;
			nd += q->t[i].state == DRF_TASK_DONE;
		}
		te = drf_json_set_object(x, c->tenants[k].name);
		drf_json_set_u64(te, "queued", nq);
		drf_json_set_u64(te, "running", nr);
		drf_json_set_u64(te, "finished", nd);
	}
	drf_json_set_u64(o, "started_total", q->started_total);
	drf_json_set_u64(o, "finished_total", q->finished_total);
	drf_json_set_u64(o, "output_truncated_total", q->truncated_total);
	/*
	 * Out of memory, the listing is empty (drf_tasks_render() has no way to
	 * say more): `drfctl tasks --json` prints nothing a parser takes, never a
	 * listing with parts missing.
	 */
	err = drf_json_print(f, o);
	if (err < 0)
		drf_log(q->log, LOG_ERR, "cannot write the task listing as JSON: %s",
			strerror(-err));
	json_object_put(o);
}

/* s with its control characters escaped (text.h), newline included. */
static void put_escaped(FILE *f, const char *s)
{
	size_t n = strlen(s);
	char small[256], *e = DRF_ESCAPED_SIZE(n) <= sizeof(small) ? small
							   : malloc(DRF_ESCAPED_SIZE(n));

	if (!e) {
		fputs("?", f);
		return;
	}
	fputs(drf_escape_controls(s, e, DRF_ESCAPED_SIZE(n)), f);
	if (e != small)
		free(e);
}

void drf_tasks_render(const struct drf_tasks *q, const struct drf_config *c, bool json,
		      const struct drf_access_who *viewer, FILE *f)
{
	if (json) {
		render_json(q, c, viewer, f);
		return;
	}
	if (q->n == 0) {
		fprintf(f, "no tasks (drfctl submit TENANT -- CMD queues one); directory %s\n",
			q->dir);
		return;
	}
	fprintf(f, "%-6s %-12s %-9s %-6s %-8s %-8s %-12s %s\n", "ID", "TENANT", "STATE", "UID",
		"CPU", "MEMORY", "RESULT", "COMMAND");
	for (size_t i = 0; i < q->n; i++) {
		const struct drf_task *t = &q->t[i];
		char cpu[32], mem[32], res[48] = "-";
		int seen = sight(c, t, viewer);
		size_t shown;

		if (!seen)
			continue;
		drf_format_quantity(t->vec[DRF_RES_CPU], DRF_UNIT_CORES, cpu, sizeof(cpu));
		drf_format_quantity(t->vec[DRF_RES_MEMORY], DRF_UNIT_BYTES, mem, sizeof(mem));
		if (t->state == DRF_TASK_DONE) {
			if (strcmp(t->result, "exited") == 0)
				snprintf(res, sizeof(res), "exited %d", t->exit_code);
			else if (strcmp(t->result, "killed") == 0)
				snprintf(res, sizeof(res), "signal %d", t->signal);
			else
				snprintf(res, sizeof(res), "%s", t->result);
		}
		fprintf(f, "%-6" PRIu64 " %-12s %-9s %-6u %-8s %-8s %-12s", t->id, t->tenant,
			state_names[t->state], (unsigned)t->uid, cpu, mem, res);
		if (seen < 2) {
			fputs(" -\n", f);
			continue;
		}
		/* One row a task: a word's newline or escape sequence is shown, not obeyed. */
		shown = shown_words(t);
		for (size_t a = 0; a < shown && a < 8; a++) {
			fputc(' ', f);
			put_escaped(f, t->argv[a]);
		}
		fputs(t->argc > 8 || shown < t->argc ? " ...\n" : "\n", f);
		if (t->error) {
			fputs("       ", f);
			put_escaped(f, t->error);
			fputc('\n', f);
		}
		if (t->dropped[0] > 0 || t->dropped[1] > 0)
			fprintf(f, "       output truncated at %" PRIu64 " bytes: %" PRId64 " bytes of "
				   "stdout and %" PRId64 " of stderr dropped\n", t->output_max,
				t->dropped[0] > 0 ? t->dropped[0] : 0,
				t->dropped[1] > 0 ? t->dropped[1] : 0);
	}
	fprintf(f, "output: %s/ID/stdout and stderr\n", q->dir);
}
