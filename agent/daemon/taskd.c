// SPDX-License-Identifier: MIT
/*
 * The task queue in the daemon: set up at start, a step each tick, and the
 * status socket's task requests. The requests, one line of words escaped as
 * drf_proto_escape() does:
 *
 *   "task-submit TENANT CWD GIVEN V0 .. V5 ARG..."   GIVEN: hex bits of the
 *        resources given (in enum drf_res order), V: their values
 *   "task-submit-key KEY TENANT CWD GIVEN V0 .. V5 ARG..."   the same, idempotent:
 *        a task of the same uid with KEY is answered with its id, not queued
 *        again (a drfd without keys refuses the request rather than run it twice)
 *   "task-cancel ID"
 *   "tasks text" or "tasks json"   as the peer's uid may see them (drf_tasks_render)
 *
 * Answers: "drfd-task 1 ok [ID]\n" BODY, or "drfd-task 1 refused\n" or
 * "drfd-task 1 failed\n" and a line saying why; a submit's BODY is "queued",
 * or "known" when its key named a task already there. Who asks is the peer's
 * SO_PEERCRED and SO_PEERGROUPS, as the kernel recorded them when it connected:
 * a task runs with exactly that uid, gid and those groups, never as drfd's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "daemon.h"
#include "log.h"
#include "taskd.h"
#include "tasks.h"

void drfd_tasks_start(struct drfd *d)
{
	char dir[4096], err[1024];
	struct drf_tasks *q;

	if (d->dry_run || !d->env->spawn)
		return;
	if (!d->state_path[0] || drf_tasks_dir(d->state_path, dir, sizeof(dir)) < 0) {
		drf_log(d->log, LOG_NOTICE, "no state-dir: the task queue (drfctl submit) is off");
		return;
	}
	q = calloc(1, sizeof(*q));
	if (!q || drf_tasks_init(q, dir, d->fs, d->env->spawn, d->env->spawn_ctx, d->env->clock,
				 d->log, err, sizeof(err)) < 0) {
		drf_log(d->log, LOG_ERR, "the task queue is off: %s", q ? err : "out of memory");
		if (q)
			drf_tasks_free(q);
		free(q);
		return;
	}
	/* On slices, a task's cgroup is its service's, which the spawn starts (tasks.h). */
	q->units = d->decl.cfg.slices;
	d->tasks = q;
	for (size_t i = 0; i < q->n; i++)
		if (q->t[i].readopted)
			drf_log(d->log, LOG_NOTICE, "task %" PRIu64 " of tenant '%s' was running "
						    "in '%s/%s' when drfd stopped: re-adopted (if "
						    "it has ended since, its end is recorded now)",
				q->t[i].id, q->t[i].tenant, d->root, q->t[i].cgroup);
}

void drfd_tasks_free(struct drfd *d)
{
	if (!d->tasks)
		return;
	drf_tasks_free(d->tasks);
	free(d->tasks);
	d->tasks = NULL;
}

static int say(char **out, size_t *out_len, const char *what, const char *text)
{
	int n = asprintf(out, "drfd-task 1 %s\n%s\n", what, text);

	if (n < 0)
		return -ENOMEM;
	*out_len = (size_t)n;
	return 1;
}

/* A submit of the n escaped words w (unescaped here, in place). */
static int submit_words(struct drfd *d, int fd, char **w, size_t n, bool keyed, char **out,
			size_t *out_len)
{
	struct drf_task_req req = { 0 };
	char err[2048], ok[64];
	gid_t *groups = NULL;
	unsigned long given;
	uint64_t id;
	int r;

	if (n < (keyed ? 11u : 10u))
		return say(out, out_len, "refused", "malformed request");
	for (size_t i = 0; i < n; i++)
		if (drf_proto_unescape(w[i]) < 0)
			return say(out, out_len, "refused", "malformed request");
	if (keyed) {
		req.key = w[0];
		w++;
		n--;
	}
	if (strlen(w[0]) >= sizeof(req.tenant))
		return say(out, out_len, "refused", "tenant name too long");
	snprintf(req.tenant, sizeof(req.tenant), "%s", w[0]);
	req.cwd = w[1];
	given = strtoul(w[2], NULL, 16);
	for (int k = 0; k < DRF_NRES; k++) {
		char *end;

		req.given[k] = given & (1ul << k);
		req.vec[k] = strtod(w[3 + k], &end);
		if (*end)
			return say(out, out_len, "refused", "malformed quantity");
	}
	req.argv = w + 3 + DRF_NRES;
	req.argc = n - 3 - DRF_NRES;
	/* Exactly the credentials of the connection: never looked up by name. */
	r = drf_peer_creds(fd, &req.uid, &req.gid, &groups, &req.ngroups);
	if (r < 0) {
		snprintf(err, sizeof(err), "cannot tell who asks (SO_PEERCRED, SO_PEERGROUPS): %s",
			 strerror(-r));
		return say(out, out_len, "failed", err);
	}
	req.groups = groups;
	r = drf_tasks_submit(d->tasks, &d->decl.cfg, d->decl.problem.capacity, &req, &id, err,
			     sizeof(err));
	free(groups);
	if (r == DRF_TASKS_REFUSED)
		return say(out, out_len, "refused", err);
	if (r != 0 && r != DRF_TASKS_KNOWN)
		return say(out, out_len, "failed", err);
	/* Started now if it fits, not at the next tick. */
	if (r == 0)
		drfd_settle(d);
	snprintf(ok, sizeof(ok), "ok %" PRIu64, id);
	return say(out, out_len, ok, r == 0 ? "queued" : "known");
}

/*
 * Splits line into escaped words, in place, into *ret (free()): as many as it
 * holds (a request of DRF_REQ_MAX bytes holds up to 32768), none cut off.
 */
static ssize_t words(char *line, char ***ret)
{
	size_t n = 1, k = 0;
	char **w;

	for (const char *p = line; *p; p++)
		n += *p == ' ';
	w = calloc(n, sizeof(*w));
	if (!w)
		return -ENOMEM;
	for (char *p = strtok(line, " "); p && k < n; p = strtok(NULL, " "))
		w[k++] = p;
	*ret = w;
	return (ssize_t)k;
}

static int submit(struct drfd *d, int fd, char *args, bool keyed, char **out, size_t *out_len)
{
	char **ws = NULL;
	ssize_t k;
	int r;

	k = words(args, &ws);
	if (k < 0)
		return (int)k;
	r = submit_words(d, fd, ws, (size_t)k, keyed, out, out_len);
	free(ws);
	return r;
}

int drfd_tasks_answer(struct drfd *d, int fd, const char *req, char **out, size_t *out_len)
{
	char *line, err[1024], *body = NULL;
	size_t blen = 0;
	int r;
	FILE *f;

	if (strncmp(req, "task-", 5) != 0 && strcmp(req, "tasks text") != 0 &&
	    strcmp(req, "tasks json") != 0)
		return 0;
	if (!d->tasks)
		return say(out, out_len, "failed", "the task queue is off in this drfd: it needs a "
			   "state-dir (and no --dry-run); see drfd's log");
	if (strncmp(req, "tasks ", 6) == 0) {
		struct ucred cr;
		socklen_t cl = sizeof(cr);

		/* Who asks decides what of others' tasks it sees: the kernel's word only. */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
			return say(out, out_len, "failed", "cannot tell who asks (SO_PEERCRED)");
		f = open_memstream(&body, &blen);
		if (!f)
			return -ENOMEM;
		fputs("drfd-task 1 ok\n", f);
		drf_tasks_render(d->tasks, &d->decl.cfg, strcmp(req, "tasks json") == 0, cr.uid, f);
		if (fclose(f) != 0) {
			free(body);
			return -ENOMEM;
		}
		*out = body;
		*out_len = blen;
		return 1;
	}
	line = strdup(req);
	if (!line)
		return -ENOMEM;
	if (strncmp(line, "task-submit ", 12) == 0) {
		r = submit(d, fd, line + 12, false, out, out_len);
	} else if (strncmp(line, "task-submit-key ", 16) == 0) {
		r = submit(d, fd, line + 16, true, out, out_len);
	} else if (strncmp(line, "task-cancel ", 12) == 0) {
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		char *end;
		uint64_t id = strtoull(line + 12, &end, 10);

		if (*end || end == line + 12)
			r = say(out, out_len, "refused", "malformed task id");
		else if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
			r = say(out, out_len, "failed", "cannot tell who asks (SO_PEERCRED)");
		else if ((r = drf_tasks_cancel(d->tasks, id, cr.uid, err, sizeof(err))) != 0)
			r = say(out, out_len, r == DRF_TASKS_REFUSED ? "refused" : "failed", err);
		else
			r = say(out, out_len, "ok", "cancelled");
	} else {
		r = say(out, out_len, "refused", "unknown task request");
	}
	free(line);
	return r;
}
