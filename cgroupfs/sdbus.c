// SPDX-License-Identifier: MIT
/*
 * The real bus of the slice ops (slice.h): systemd's manager over sd-bus. A
 * unit started or stopped is waited for until its job is done, so that its
 * cgroup is there (or gone) when the call returns, as after a mkdir(2).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "slice.h"

#define DEST "org.freedesktop.systemd1"
#define PATH "/org/freedesktop/systemd1"
#define MANAGER "org.freedesktop.systemd1.Manager"
/* A slice's start or stop job is quick; one stuck this long is a failure. */
#define JOB_TIMEOUT_USEC (30ULL * 1000000)
/* systemd's longest unit name is 255 bytes. */
#define DRF_SUBMIT_UNIT_MAX 256

/* The connection, made again in a child after fork() or after systemd closed it (daemon-reexec). */
struct pending;

struct bus {
	sd_bus *b;
	pid_t pid;
	int fd;          /* b's socket: a child closes the parent's */
	sd_event *event; /* where it is read between calls (cgfs_bus_attach) */
	/* submits under way (submit below), oldest first */
	struct pending *head, *tail;
	size_t inflight;
	sd_bus_slot *jobs;          /* JobRemoved, for the submits' jobs */
	sd_event_source *deadline;  /* the jobs waited for too long */
};

static int on_submit_job(sd_bus_message *m, void *data, sd_bus_error *err);
static void fail_pending(struct bus *c, int err);
static void pending_free(struct bus *c, struct pending *p);

static int connect_bus(struct bus *c)
{
	sd_bus *b = NULL;
	int r = -ENOENT;

	/* As root, systemd's own socket: no dbus-daemon needed, as systemctl does. */
	if (geteuid() == 0 && access("/run/systemd/private", F_OK) == 0) {
		r = sd_bus_new(&b);
		if (r >= 0)
			r = sd_bus_set_address(b, "unix:path=/run/systemd/private");
		if (r >= 0)
			r = sd_bus_start(b);
		if (r < 0)
			b = sd_bus_unref(b);
	}
	if (!b) {
		r = sd_bus_open_system(&b);
		if (r < 0)
			return r;
	}
	/* Read between calls too: systemd sends every unit's signals on its private socket. */
	if (c->event && (r = sd_bus_attach_event(b, c->event, SD_EVENT_PRIORITY_NORMAL)) < 0) {
		sd_bus_flush_close_unref(b);
		return r;
	}
	/* The jobs of the submits' starts end with JobRemoved, read by the loop. */
	if (c->event && (r = sd_bus_match_signal(b, &c->jobs, DEST, PATH, MANAGER, "JobRemoved",
						 on_submit_job, c)) < 0) {
		sd_bus_flush_close_unref(b);
		return r;
	}
	c->b = b;
	c->pid = getpid();
	c->fd = sd_bus_get_fd(b);
	return 0;
}

/*
 * Lets go of the connection: a child closes the parent's socket, and leaves
 * the rest. The parent's submits under way end with -ECONNRESET (their
 * answers would come on the connection let go).
 */
static void drop(struct bus *c)
{
	if (!c->b)
		return;
	if (c->pid == getpid()) {
		c->jobs = sd_bus_slot_unref(c->jobs);
		fail_pending(c, -ECONNRESET);
		sd_bus_detach_event(c->b);
		sd_bus_flush_close_unref(c->b);
	} else if (c->fd >= 0) {
		close(c->fd);
	}
	c->b = NULL;
}

static int get_bus(struct bus *c, sd_bus **ret)
{
	/* The parent's connection is not the child's to use. */
	if (c->b && (c->pid != getpid() || sd_bus_is_open(c->b) <= 0))
		drop(c);
	if (!c->b) {
		int r = connect_bus(c);

		if (r < 0)
			return r;
	}
	*ret = c->b;
	return 0;
}

/* A call that failed because the connection went: worth one more on a new one. */
static bool lost(struct bus *c, int r)
{
	if (r != -ECONNRESET && r != -ENOTCONN && r != -EPIPE && r != -ECHILD && r != -ENOBUFS)
		return false;
	drop(c);
	return true;
}

int cgfs_bus_open(void **ret)
{
	struct bus *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->fd = -1;
	r = connect_bus(c);
	if (r < 0) {
		free(c);
		return r;
	}
	*ret = c;
	return 0;
}

void cgfs_bus_close(void *bus)
{
	struct bus *c = bus;

	if (!c)
		return;
	/* Whoever submitted is gone by now: its submits end unanswered. */
	while (c->head)
		pending_free(c, c->head);
	drop(c);
	c->deadline = sd_event_source_disable_unref(c->deadline);
	sd_event_unref(c->event);
	free(c);
}

int cgfs_bus_attach(void *bus, struct sd_event *event)
{
	struct bus *c = bus;
	sd_bus *b;

	if (!c)
		return 0;
	sd_event_unref(c->event);
	c->event = sd_event_ref(event);
	/* Connected before (a fork since, maybe): attached by connecting again. */
	drop(c);
	return get_bus(c, &b);
}

/* ExecStart and the like: a(sasb), one (path, argv, ignore-failure = false). */
static int append_exec(sd_bus_message *m, const struct cgfs_prop *p)
{
	int r = sd_bus_message_open_container(m, 'r', "sv");

	if (r >= 0)
		r = sd_bus_message_append(m, "s", p->name);
	if (r >= 0)
		r = sd_bus_message_open_container(m, 'v', "a(sasb)");
	if (r >= 0)
		r = sd_bus_message_open_container(m, 'a', "(sasb)");
	if (r >= 0)
		r = sd_bus_message_open_container(m, 'r', "sasb");
	if (r >= 0)
		r = sd_bus_message_append(m, "s", p->s);
	if (r >= 0)
		r = sd_bus_message_append_strv(m, (char **)p->argv);
	if (r >= 0)
		r = sd_bus_message_append(m, "b", 0);
	for (int i = 0; r >= 0 && i < 4; i++)
		r = sd_bus_message_close_container(m);
	return r;
}

static int append_prop(sd_bus_message *m, const struct cgfs_prop *p)
{
	switch (p->type) {
	case CGFS_PROP_U64:
		return sd_bus_message_append(m, "(sv)", p->name, "t", p->u);
	case CGFS_PROP_BOOL:
		return sd_bus_message_append(m, "(sv)", p->name, "b", (int)!!p->u);
	case CGFS_PROP_STR:
		return sd_bus_message_append(m, "(sv)", p->name, "s", p->s);
	case CGFS_PROP_DEV_U64:
		return sd_bus_message_append(m, "(sv)", p->name, "a(st)", 1, p->s, p->u);
	case CGFS_PROP_DEV_NONE:
		return sd_bus_message_append(m, "(sv)", p->name, "a(st)", 0);
	case CGFS_PROP_PID:
		return sd_bus_message_append(m, "(sv)", p->name, "au", 1, (uint32_t)p->u);
	case CGFS_PROP_FD:
		return sd_bus_message_append(m, "(sv)", p->name, "h", (int)p->u);
	case CGFS_PROP_EXEC:
		return append_exec(m, p);
	}
	return -EINVAL;
}

static int append_props(sd_bus_message *m, const struct cgfs_prop *p, size_t n)
{
	int r = sd_bus_message_open_container(m, 'a', "(sv)");

	for (size_t i = 0; r >= 0 && i < n; i++)
		r = append_prop(m, &p[i]);
	return r < 0 ? r : sd_bus_message_close_container(m);
}

/* A job being waited for: JobRemoved(id, path, unit, result) names it. */
struct job_wait {
	char *path;     /* NULL until the call's reply names it */
	char **removed; /* paths removed before that: kept to match */
	size_t n_removed;
	int result;     /* 1: done; -errno: failed; 0: pending */
};

static int job_result(const char *result)
{
	return strcmp(result, "done") == 0 || strcmp(result, "skipped") == 0 ? 1 : -EIO;
}

static int on_job_removed(sd_bus_message *m, void *data, sd_bus_error *err)
{
	struct job_wait *w = data;
	const char *path, *unit, *result;
	uint32_t id;
	char **grown;

	(void)err;
	if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
		return 0;
	if (w->path) {
		if (strcmp(path, w->path) == 0)
			w->result = job_result(result);
		return 0;
	}
	/* Removed before the reply was read: remembered with its result. */
	grown = realloc(w->removed, (w->n_removed + 1) * sizeof(*grown));
	if (!grown)
		return 0;
	w->removed = grown;
	if (asprintf(&w->removed[w->n_removed], "%d%s", job_result(result) > 0, path) >= 0)
		w->n_removed++;
	return 0;
}

static int wait_job(sd_bus *b, struct job_wait *w, const char *path)
{
	struct timespec ts;
	uint64_t end, now;
	int r = 0;

	w->path = strdup(path);
	if (!w->path)
		return -ENOMEM;
	for (size_t i = 0; i < w->n_removed; i++)
		if (strcmp(w->removed[i] + 1, path) == 0)
			w->result = w->removed[i][0] == '1' ? 1 : -EIO;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000 + JOB_TIMEOUT_USEC;
	while (w->result == 0) {
		r = sd_bus_process(b, NULL);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
		if (now >= end)
			return -ETIMEDOUT;
		r = sd_bus_wait(b, end - now);
		if (r < 0)
			return r;
	}
	return w->result > 0 ? 0 : w->result;
}

static void job_wait_free(struct job_wait *w)
{
	free(w->path);
	for (size_t i = 0; i < w->n_removed; i++)
		free(w->removed[i]);
	free(w->removed);
}

/* A manager method that returns a job, and the wait for that job. */
static int call_job(sd_bus *b, sd_bus_message *m, sd_bus_error *error)
{
	struct job_wait w = { 0 };
	sd_bus_slot *slot = NULL;
	sd_bus_message *reply = NULL;
	const char *job;
	int r;

	r = sd_bus_match_signal(b, &slot, DEST, PATH, MANAGER, "JobRemoved", on_job_removed, &w);
	if (r >= 0)
		r = sd_bus_call(b, m, 0, error, &reply);
	if (r >= 0)
		r = sd_bus_message_read(reply, "o", &job);
	if (r >= 0)
		r = wait_job(b, &w, job);
	sd_bus_message_unref(reply);
	sd_bus_slot_unref(slot);
	job_wait_free(&w);
	return r;
}

static int unit_job(sd_bus *b, const char *method, const char *unit)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL;
	int r;

	r = sd_bus_message_new_method_call(b, &m, DEST, PATH, MANAGER, method);
	if (r >= 0)
		r = sd_bus_message_append(m, "ss", unit, "fail");
	if (r >= 0)
		r = call_job(b, m, &error);
	if (r < 0 && sd_bus_error_is_set(&error) && sd_bus_error_get_errno(&error))
		r = -sd_bus_error_get_errno(&error);
	sd_bus_error_free(&error);
	sd_bus_message_unref(m);
	return r;
}

static int start_on(sd_bus *b, const char *unit, const struct cgfs_prop *p, size_t n)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL;
	bool exists;
	int r;

	r = sd_bus_message_new_method_call(b, &m, DEST, PATH, MANAGER, "StartTransientUnit");
	if (r >= 0)
		r = sd_bus_message_append(m, "ss", unit, "fail");
	if (r >= 0)
		r = append_props(m, p, n);
	if (r >= 0)
		r = sd_bus_message_append(m, "a(sa(sv))", 0);
	if (r >= 0)
		r = call_job(b, m, &error);
	exists = sd_bus_error_has_name(&error, "org.freedesktop.systemd1.UnitExists");
	if (r < 0 && !exists && sd_bus_error_is_set(&error) && sd_bus_error_get_errno(&error))
		r = -sd_bus_error_get_errno(&error);
	sd_bus_error_free(&error);
	sd_bus_message_unref(m);
	if (!exists)
		return r;
	/* A service or scope of that name is someone else's (or done): not started again. */
	if (strlen(unit) < strlen(".slice") ||
	    strcmp(unit + strlen(unit) - strlen(".slice"), ".slice") != 0)
		return -EEXIST;
	/* Loaded already (a unit with Slice= made it, or drfd before a restart): started. */
	r = unit_job(b, "StartUnit", unit);
	return r < 0 ? r : -EEXIST;
}

static int set_on(sd_bus *b, const char *unit, const struct cgfs_prop *p, size_t n)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL;
	int r;

	r = sd_bus_message_new_method_call(b, &m, DEST, PATH, MANAGER, "SetUnitProperties");
	if (r >= 0)
		r = sd_bus_message_append(m, "sb", unit, 1);
	if (r >= 0)
		r = append_props(m, p, n);
	if (r >= 0)
		r = sd_bus_call(b, m, 0, &error, NULL);
	if (r < 0 && sd_bus_error_is_set(&error) && sd_bus_error_get_errno(&error))
		r = -sd_bus_error_get_errno(&error);
	sd_bus_error_free(&error);
	sd_bus_message_unref(m);
	return r < 0 ? r : 0;
}

static int real_start(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n)
{
	sd_bus *b;
	int r = get_bus(ctx, &b);

	if (r == 0)
		r = start_on(b, unit, p, n);
	if (lost(ctx, r) && (r = get_bus(ctx, &b)) == 0)
		r = start_on(b, unit, p, n);
	return r;
}

static int real_set(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n)
{
	sd_bus *b;
	int r = get_bus(ctx, &b);

	if (r == 0)
		r = set_on(b, unit, p, n);
	if (lost(ctx, r) && (r = get_bus(ctx, &b)) == 0)
		r = set_on(b, unit, p, n);
	return r;
}

static int real_stop(void *ctx, const char *unit)
{
	sd_bus *b;
	int r = get_bus(ctx, &b);

	if (r == 0)
		r = unit_job(b, "StopUnit", unit);
	if (lost(ctx, r) && (r = get_bus(ctx, &b)) == 0)
		r = unit_job(b, "StopUnit", unit);
	return r;
}

/* The object path of a loaded unit: 0, -ENOENT if it is not loaded. */
static int unit_object(sd_bus *b, const char *unit, char **ret)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	const char *path;
	int r;

	r = sd_bus_call_method(b, DEST, PATH, MANAGER, "GetUnit", &error, &reply, "s", unit);
	if (r < 0 && sd_bus_error_has_name(&error, "org.freedesktop.systemd1.NoSuchUnit"))
		r = -ENOENT;
	else if (r < 0 && sd_bus_error_is_set(&error) && sd_bus_error_get_errno(&error))
		r = -sd_bus_error_get_errno(&error);
	if (r >= 0)
		r = sd_bus_message_read(reply, "o", &path);
	if (r >= 0)
		*ret = strdup(path);
	if (r >= 0 && !*ret)
		r = -ENOMEM;
	sd_bus_error_free(&error);
	sd_bus_message_unref(reply);
	return r < 0 ? r : 0;
}

static bool drfd_slice(const char *unit)
{
	size_t n = strlen(unit);

	return strncmp(unit, "drf-", 4) == 0 && n > 6 && strcmp(unit + n - 6, ".slice") == 0;
}

static int busy_on(sd_bus *b, const char *unit)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	char *path = NULL, **members = NULL;
	int r, n = 0;

	r = unit_object(b, unit, &path);
	if (r == -ENOENT)
		return 0;
	if (r >= 0)
		r = sd_bus_get_property_strv(b, DEST, path, "org.freedesktop.systemd1.Unit",
					     "SliceOf", &error, &members);
	for (char **m = members; r >= 0 && m && *m; m++) {
		char *mpath = NULL, *state = NULL;
		int e;

		if (drfd_slice(*m))
			continue;
		e = unit_object(b, *m, &mpath);
		if (e == 0)
			e = sd_bus_get_property_string(b, DEST, mpath,
						       "org.freedesktop.systemd1.Unit",
						       "ActiveState", NULL, &state);
		/* Unknown is busy: a unit is never stopped on a guess. */
		if (e < 0 || (strcmp(state, "inactive") != 0 && strcmp(state, "failed") != 0))
			n++;
		free(state);
		free(mpath);
	}
	if (r < 0 && sd_bus_error_is_set(&error) && sd_bus_error_get_errno(&error))
		r = -sd_bus_error_get_errno(&error);
	for (char **m = members; m && *m; m++)
		free(*m);
	free(members);
	free(path);
	sd_bus_error_free(&error);
	return r < 0 ? r : n;
}

static int real_busy(void *ctx, const char *unit)
{
	sd_bus *b;
	int r = get_bus(ctx, &b);

	if (r == 0)
		r = busy_on(b, unit);
	if (lost(ctx, r) && (r = get_bus(ctx, &b)) == 0)
		r = busy_on(b, unit);
	return r;
}

static int kill_on(sd_bus *b, const char *unit, int sig)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	int r = sd_bus_call_method(b, DEST, PATH, MANAGER, "KillUnit", &error, NULL, "ssi", unit,
				   "all", sig);

	if (r < 0 && sd_bus_error_is_set(&error) && sd_bus_error_get_errno(&error))
		r = -sd_bus_error_get_errno(&error);
	sd_bus_error_free(&error);
	return r < 0 ? r : 0;
}

static int real_kill(void *ctx, const char *unit, int sig)
{
	sd_bus *b;
	int r = get_bus(ctx, &b);

	if (r == 0)
		r = kill_on(b, unit, sig);
	if (lost(ctx, r) && (r = get_bus(ctx, &b)) == 0)
		r = kill_on(b, unit, sig);
	return r;
}

/*
 * Submits: many calls under way on the one connection, their answers read by
 * the event loop. A start is StartTransientUnit, then its job waited for
 * (JobRemoved, matched once per connection); a slice loaded already
 * (UnitExists) gets SetUnitProperties, then StartUnit and its job. systemd
 * answers the calls of one connection in the order they were sent.
 */
enum pending_step { P_START, P_SET, P_EXISTS_SET, P_EXISTS_START, P_JOB };

struct pending {
	struct bus *c;
	struct pending *prev, *next;
	enum pending_step step;
	void (*fn)(void *data, int err);
	void *data;
	char unit[DRF_SUBMIT_UNIT_MAX];
	struct cgfs_prop *props;    /* a start's, for a slice loaded already */
	size_t n;
	char *job;                  /* P_JOB: the job's object path */
	uint64_t until;             /* P_JOB: CLOCK_MONOTONIC usec */
};

static void pending_free(struct bus *c, struct pending *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else
		c->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		c->tail = p->prev;
	c->inflight--;
	free(p->props);
	free(p->job);
	free(p);
}

/* p's outcome to its submitter; p is gone after. */
static void finish(struct bus *c, struct pending *p, int err)
{
	void (*fn)(void *data, int err) = p->fn;
	void *data = p->data;

	pending_free(c, p);
	fn(data, err);
}

static void fail_pending(struct bus *c, int err)
{
	while (c->head)
		finish(c, c->head, err);
}

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int send_step(struct bus *c, struct pending *p);

/* A call's error as -errno; UnitExists as -EEXIST. */
static int reply_error(sd_bus_message *m)
{
	const sd_bus_error *e = sd_bus_message_get_error(m);
	int r;

	if (sd_bus_error_has_name(e, "org.freedesktop.systemd1.UnitExists"))
		return -EEXIST;
	r = sd_bus_message_get_errno(m);
	return r > 0 ? -r : -EIO;
}

/* The jobs waited for past their time end with -ETIMEDOUT; the timer set for the next. */
static int on_deadline(sd_event_source *s, uint64_t usec, void *data)
{
	struct bus *c = data;
	uint64_t next = 0, now = now_usec();

	(void)s;
	(void)usec;
	for (struct pending *p = c->head, *n; p; p = n) {
		n = p->next;
		if (p->step != P_JOB)
			continue;
		if (p->until <= now) {
			finish(c, p, -ETIMEDOUT);
			continue;
		}
		if (!next || p->until < next)
			next = p->until;
	}
	if (next && c->deadline && sd_event_source_set_time(c->deadline, next) >= 0)
		sd_event_source_set_enabled(c->deadline, SD_EVENT_ONESHOT);
	return 0;
}

/* p now waits for its job, until JOB_TIMEOUT_USEC from now. */
static void wait_for_job(struct bus *c, struct pending *p, const char *job)
{
	int r;

	p->job = strdup(job);
	if (!p->job) {
		finish(c, p, -ENOMEM);
		return;
	}
	p->step = P_JOB;
	p->until = now_usec() + JOB_TIMEOUT_USEC;
	if (!c->deadline) {
		r = sd_event_add_time(c->event, &c->deadline, CLOCK_MONOTONIC, p->until, 0,
				      on_deadline, c);
		if (r < 0) {
			finish(c, p, r);
			return;
		}
	}
	/* The earliest deadline is the oldest job's; a later one is found when it fires. */
	if (sd_event_source_get_enabled(c->deadline, &r) >= 0 && r == SD_EVENT_OFF &&
	    sd_event_source_set_time(c->deadline, p->until) >= 0)
		sd_event_source_set_enabled(c->deadline, SD_EVENT_ONESHOT);
}

static int on_submit_reply(sd_bus_message *m, void *data, sd_bus_error *err)
{
	struct pending *p = data;
	struct bus *c = p->c;
	const char *job;
	int r;

	(void)err;
	if (sd_bus_message_is_method_error(m, NULL)) {
		r = reply_error(m);
		if (r == -EEXIST && p->step == P_START && p->props) {
			/* A slice loaded already: given its properties, then started. */
			p->step = P_EXISTS_SET;
			r = send_step(c, p);
			if (r < 0)
				finish(c, p, r);
			return 0;
		}
		finish(c, p, r);
		return 0;
	}
	switch (p->step) {
	case P_SET:
		finish(c, p, 0);
		return 0;
	case P_EXISTS_SET:
		p->step = P_EXISTS_START;
		r = send_step(c, p);
		if (r < 0)
			finish(c, p, r);
		return 0;
	case P_START:
	case P_EXISTS_START:
		if (sd_bus_message_read(m, "o", &job) < 0) {
			finish(c, p, -EBADMSG);
			return 0;
		}
		wait_for_job(c, p, job);
		return 0;
	case P_JOB:
		break;
	}
	return 0;
}

static int on_submit_job(sd_bus_message *m, void *data, sd_bus_error *err)
{
	struct bus *c = data;
	const char *path, *unit, *result;
	uint32_t id;

	(void)err;
	if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
		return 0;
	for (struct pending *p = c->head; p; p = p->next)
		if (p->step == P_JOB && strcmp(p->job, path) == 0) {
			finish(c, p, job_result(result) > 0 ? 0 : -EIO);
			break;
		}
	return 0;
}

/* The call of p's step, sent; its answer to on_submit_reply. */
static int send_step(struct bus *c, struct pending *p)
{
	static const char *const method[] = {
		[P_START] = "StartTransientUnit", [P_SET] = "SetUnitProperties",
		[P_EXISTS_SET] = "SetUnitProperties", [P_EXISTS_START] = "StartUnit",
	};
	sd_bus_message *m = NULL;
	int r;

	r = sd_bus_message_new_method_call(c->b, &m, DEST, PATH, MANAGER, method[p->step]);
	switch (p->step) {
	case P_START:
		if (r >= 0)
			r = sd_bus_message_append(m, "ss", p->unit, "fail");
		if (r >= 0)
			r = append_props(m, p->props, p->n);
		if (r >= 0)
			r = sd_bus_message_append(m, "a(sa(sv))", 0);
		break;
	case P_SET:
	case P_EXISTS_SET:
		if (r >= 0)
			r = sd_bus_message_append(m, "sb", p->unit, 1);
		if (r >= 0)
			r = append_props(m, p->props, p->n);
		break;
	case P_EXISTS_START:
		if (r >= 0)
			r = sd_bus_message_append(m, "ss", p->unit, "fail");
		break;
	case P_JOB:
		r = -EINVAL;
		break;
	}
	if (r >= 0)
		r = sd_bus_call_async(c->b, NULL, m, on_submit_reply, p, JOB_TIMEOUT_USEC);
	sd_bus_message_unref(m);
	return r;
}

static int real_submit(void *ctx, bool start, const char *unit, const struct cgfs_prop *p,
		       size_t n, void (*fn)(void *data, int err), void *data)
{
	struct bus *c = ctx;
	struct pending *q;
	sd_bus *b;
	int r;

	/* Without a loop to read the answers, the call is made and waited for. */
	if (!c->event) {
		r = start ? real_start(ctx, unit, p, n) : real_set(ctx, unit, p, n);
		if (r == -EEXIST && start)
			r = real_set(ctx, unit, p, n);
		fn(data, r);
		return 0;
	}
	if (c->inflight >= CGFS_BUS_INFLIGHT_MAX)
		return -EAGAIN;
	if (strlen(unit) >= DRF_SUBMIT_UNIT_MAX)
		return -ENAMETOOLONG;
	r = get_bus(c, &b);
	if (r < 0)
		return r;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->props = malloc((n + 1) * sizeof(*p));
	if (!q->props) {
		free(q);
		return -ENOMEM;
	}
	memcpy(q->props, p, n * sizeof(*p));
	q->n = n;
	q->c = c;
	q->fn = fn;
	q->data = data;
	q->step = start ? P_START : P_SET;
	memcpy(q->unit, unit, strlen(unit) + 1);
	q->prev = c->tail;
	if (c->tail)
		c->tail->next = q;
	else
		c->head = q;
	c->tail = q;
	c->inflight++;
	r = send_step(c, q);
	if (r < 0) {
		pending_free(c, q);
		/* The connection went: nothing of this call was sent; the next one connects again. */
		lost(c, r);
		return r;
	}
	return 0;
}

const struct cgfs_bus_ops cgfs_bus_real_ops = {
	.name = "systemd",
	.start = real_start,
	.set = real_set,
	.stop = real_stop,
	.busy = real_busy,
	.kill = real_kill,
	.submit = real_submit,
};
