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
 *   "task-exec TENANT"   moves the peer's process (SO_PEERCRED's pid, drfctl
 *        exec itself, of the peer's uid) into TENANT's cgroup: `drfctl exec`
 *        of a user other than root, who cannot write cgroup.procs
 *   "tasks text" or "tasks json"   as the peer may see them (drf_tasks_render)
 *
 * Who may do what in a tenant is the config's access and admins (access.h):
 * submit and exec need a member, a cancel of another's task an admin; a
 * refusal names who asked, what, and the rule that said no.
 *
 * Answers: "drfd-task 1 ok [ID]\n" BODY, or "drfd-task 1 refused\n" or
 * "drfd-task 1 failed\n" and a line saying why; a submit's BODY is "queued",
 * or "known" when its key named a task already there. Who asks is the peer's
 * SO_PEERCRED and SO_PEERGROUPS, as the kernel recorded them when it connected:
 * a task runs with exactly that uid, gid and those groups, never as drfd's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

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

static const struct drf_tenant *tenant_named(const struct drf_config *c, const char *name)
{
	for (size_t i = 0; i < c->n_tenants; i++)
		if (strcmp(c->tenants[i].name, name) == 0)
			return &c->tenants[i];
	return NULL;
}

/* Who asks on fd, as the kernel recorded it: 0, or -errno. *groups to free(). */
static int who_asks(int fd, struct drf_access_who *w, gid_t **groups)
{
	size_t n = 0;
	int r = drf_peer_creds(fd, &w->uid, &w->gid, groups, &n);

	w->groups = *groups;
	w->ngroups = n;
	return r;
}

/* A refusal of what w asked in tenant t: who, what, and the rule. */
static int refuse_access(struct drfd *d, char **out, size_t *out_len,
			 const struct drf_access_who *w, const char *what,
			 const struct drf_tenant *t, const char *rule)
{
	char err[3072];

	snprintf(err, sizeof(err), "uid %u (gid %u and %zu groups) may not %s tenant '%s': "
		 "no access or admins entry of it names that user or one of its groups (%s)",
		 (unsigned)w->uid, (unsigned)w->gid, w->ngroups, what, t->name, rule);
	drf_log(d->log, LOG_NOTICE, "status socket: refused: %s", err);
	return say(out, out_len, "refused", err);
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
	{
		struct drf_access_who who = { req.uid, req.gid, groups, req.ngroups };
		const struct drf_tenant *t = tenant_named(&d->decl.cfg, req.tenant);
		char rule[2048];

		if (t && drf_config_access(&d->decl.cfg, t, &who, rule, sizeof(rule)) ==
			 DRF_ACCESS_NONE) {
			r = refuse_access(d, out, out_len, &who, "submit to", t, rule);
			free(groups);
			return r;
		}
	}
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

/* "task-cancel ID": its submitter, root, or an admin of its tenant. */
static int cancel(struct drfd *d, int fd, const char *arg, char **out, size_t *out_len)
{
	struct drf_access_who who;
	const struct drf_task *t;
	gid_t *groups = NULL;
	char err[3072], rule[2048], what[128];
	uid_t as;
	char *end;
	uint64_t id = strtoull(arg, &end, 10);
	int r;

	if (*end || end == arg)
		return say(out, out_len, "refused", "malformed task id");
	if (who_asks(fd, &who, &groups) < 0)
		return say(out, out_len, "failed", "cannot tell who asks (SO_PEERCRED, "
			   "SO_PEERGROUPS)");
	as = who.uid;
	t = drf_tasks_find(d->tasks, id);
	if (t && who.uid != 0 && who.uid != t->uid) {
		const struct drf_tenant *tn = tenant_named(&d->decl.cfg, t->tenant);

		if (tn && drf_config_access(&d->decl.cfg, tn, &who, rule, sizeof(rule)) ==
			  DRF_ACCESS_ADMIN) {
			as = 0; /* an admin of its tenant cancels as root would */
		} else {
			snprintf(what, sizeof(what), "cancel task %" PRIu64 " of uid %u in", id,
				 (unsigned)t->uid);
			if (!tn) {
				snprintf(err, sizeof(err), "uid %u may not %s tenant '%s': the tenant "
					 "is no longer in the config, and only its submitter or root may",
					 (unsigned)who.uid, what, t->tenant);
				r = say(out, out_len, "refused", err);
			} else if (drf_config_access(&d->decl.cfg, tn, &who, NULL, 0) ==
				   DRF_ACCESS_MEMBER) {
				/* A member, not an admin: the rule is the tenant's lists. */
				drf_config_access_rules(&d->decl.cfg, tn, rule, sizeof(rule));
				snprintf(err, sizeof(err), "uid %u may not %s tenant '%s': a member "
					 "cancels its own tasks, another's takes an admin of the "
					 "tenant (%s)", (unsigned)who.uid, what, tn->name, rule);
				drf_log(d->log, LOG_NOTICE, "status socket: refused: %s", err);
				r = say(out, out_len, "refused", err);
			} else {
				r = refuse_access(d, out, out_len, &who, what, tn, rule);
			}
			free(groups);
			return r;
		}
	}
	free(groups);
	r = drf_tasks_cancel(d->tasks, id, as, err, sizeof(err));
	if (r != 0)
		return say(out, out_len, r == DRF_TASKS_REFUSED ? "refused" : "failed", err);
	return say(out, out_len, "ok", "cancelled");
}

/*
 * pid's real and effective uid, from /proc: 0, or -errno (-ESRCH: gone).
 */
static int proc_uids(pid_t pid, uid_t *ruid, uid_t *euid)
{
	char path[64], buf[4096], *u;
	ssize_t n;
	unsigned a, b;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	u = strstr(buf, "\nUid:");
	if (!u || sscanf(u + 5, "%u %u", &a, &b) != 2)
		return -EPROTO;
	*ruid = a;
	*euid = b;
	return 0;
}

/*
 * "task-exec TENANT": the asking process into TENANT's cgroup. That is the
 * process that connected (SO_PEERCRED) and that sent the request itself (the
 * kernel's stamp on it, sender): a connection handed to another process, or
 * kept past the end of the one that made it, moves nothing. It is held by a
 * pidfd from then on, its uids checked where /proc shows them (not under the
 * unit's ProtectProc=invisible, where the stamp's uid, checked by the kernel
 * at the send, is the check), and moved only if still alive after: a pid is
 * not reused while its process lives.
 */
static int exec_into(struct drfd *d, int fd, int sender, const char *name, char **out,
		     size_t *out_len)
{
	const struct drf_tenant *t = tenant_named(&d->decl.cfg, name);
	struct drf_access_who who;
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	gid_t *groups = NULL;
	char rule[2048], err[3072], pid[32];
	uid_t ruid = 0, euid = 0;
	int pidfd, r;

	if (!t) {
		snprintf(err, sizeof(err), "no tenant '%s' in the config in force", name);
		return say(out, out_len, "refused", err);
	}
	if (who_asks(fd, &who, &groups) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
		free(groups);
		return say(out, out_len, "failed", "cannot tell who asks (SO_PEERCRED, "
			   "SO_PEERGROUPS)");
	}
	if (drf_config_access(&d->decl.cfg, t, &who, rule, sizeof(rule)) == DRF_ACCESS_NONE) {
		r = refuse_access(d, out, out_len, &who, "exec into", t, rule);
		free(groups);
		return r;
	}
	free(groups);
	if (sender <= 0 || sender != cr.pid) {
		snprintf(err, sizeof(err), "the request was not sent by the process that "
			 "connected (pid %d, sent by %d): nothing moved", (int)cr.pid, sender);
		return say(out, out_len, "refused", err);
	}
	pidfd = (int)syscall(SYS_pidfd_open, cr.pid, 0);
	if (pidfd < 0)
		return say(out, out_len, "refused", "the asking process is gone");
	r = proc_uids(cr.pid, &ruid, &euid);
	if (r == 0 && (ruid != cr.uid || euid != cr.uid)) {
		close(pidfd);
		snprintf(err, sizeof(err), "process %d is no longer uid %u's: not moved",
			 (int)cr.pid, (unsigned)cr.uid);
		return say(out, out_len, "refused", err);
	}
	/* Hidden (hidepid) is no answer either way: the stamp stands. */
	snprintf(pid, sizeof(pid), "%d", (int)cr.pid);
	r = cgfs_write(d->fs, t->cgroup, "cgroup.procs", pid);
	/* Still the process checked: alive (EPERM: alive, but drfd may not signal it). */
	if (r == 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0 && errno == ESRCH)
		r = -ESRCH;
	close(pidfd);
	if (r < 0) {
		snprintf(err, sizeof(err), "cannot move process %d into '%s/%s': %s", (int)cr.pid,
			 d->root, t->cgroup, strerror(-r));
		return say(out, out_len, "failed", err);
	}
	drf_log(d->log, LOG_INFO, "uid %u's process %d moved into tenant %s (drfctl exec)",
		(unsigned)cr.uid, (int)cr.pid, t->name);
	return say(out, out_len, "ok", "moved");
}

int drfd_tasks_answer(struct drfd *d, int fd, int sender, const char *req, char **out,
		      size_t *out_len)
{
	char *line, *body = NULL;
	size_t blen = 0;
	int r;
	FILE *f;

	if (strncmp(req, "task-", 5) != 0 && strcmp(req, "tasks text") != 0 &&
	    strcmp(req, "tasks json") != 0)
		return 0;
	if (strncmp(req, "task-exec ", 10) == 0)
		return exec_into(d, fd, sender, req + 10, out, out_len);
	if (!d->tasks)
		return say(out, out_len, "failed", "the task queue is off in this drfd: it needs a "
			   "state-dir (and no --dry-run); see drfd's log");
	if (strncmp(req, "tasks ", 6) == 0) {
		struct drf_access_who who;
		gid_t *groups = NULL;

		/* Who asks decides what of others' tasks it sees: the kernel's word only. */
		if (who_asks(fd, &who, &groups) < 0)
			return say(out, out_len, "failed", "cannot tell who asks (SO_PEERCRED, "
				   "SO_PEERGROUPS)");
		f = open_memstream(&body, &blen);
		if (!f) {
			free(groups);
			return -ENOMEM;
		}
		fputs("drfd-task 1 ok\n", f);
		drf_tasks_render(d->tasks, &d->decl.cfg, strcmp(req, "tasks json") == 0, &who, f);
		free(groups);
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
		r = cancel(d, fd, line + 12, out, out_len);
	} else {
		r = say(out, out_len, "refused", "unknown task request");
	}
	free(line);
	return r;
}

const struct drfd_feature drfd_tasks_feature = {
	.name = "tasks",
	.started = drfd_tasks_start,
	.free = drfd_tasks_free,
};
