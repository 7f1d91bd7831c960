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

/* The connection, made again in a child after fork() or after systemd closed it (daemon-reexec). */
struct bus {
	sd_bus *b;
	pid_t pid;
	int fd;          /* b's socket: a child closes the parent's */
	sd_event *event; /* where it is read between calls (cgfs_bus_attach) */
};

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
	c->b = b;
	c->pid = getpid();
	c->fd = sd_bus_get_fd(b);
	return 0;
}

/* Lets go of the connection: a child closes the parent's socket, and leaves the rest. */
static void drop(struct bus *c)
{
	if (!c->b)
		return;
	if (c->pid == getpid()) {
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
	drop(c);
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

const struct cgfs_bus_ops cgfs_bus_real_ops = {
	.name = "systemd",
	.start = real_start,
	.set = real_set,
	.stop = real_stop,
	.busy = real_busy,
	.kill = real_kill,
};
