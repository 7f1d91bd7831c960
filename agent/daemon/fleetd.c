// SPDX-License-Identifier: MIT
/*
 * drfd as a fleet node ([fleet] in drfd.conf): the etcd client and the node
 * (agent/fleet) on drfd's loop; each assignment the node hands over becomes
 * the tenants in force (drfd_assign), and the node's state goes to status
 * and metrics. See fleetd.h.
 */
#include "fleetd.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "fleet.h"
#include "log.h"
#include "tasks.h"
#include "vec.h"

/* How often the node's timers are looked at: keepalives and retries are due in seconds. */
#define FLEET_TICK_USEC (200 * 1000ULL)
/*
 * How long a fleet task of a tenant this node does not have waits for an
 * assignment that brings it: drfctl placed it by an assignment the node's
 * own watch may deliver after the task's.
 */
#define FLEET_TASK_TENANT_WAIT_USEC (10 * 1000000ULL)
/*
 * A burst of fleet tasks is queued a few at a time: at most so many submits
 * (each writes and syncs its files) and so long a step, the next step soon
 * after, so that no turn of the loop grows with the burst.
 */
#define FLEET_QUEUE_STEP_MAX DRFD_FLEET_QUEUE_STEP_MAX
#define FLEET_QUEUE_STEP_USEC (20 * 1000ULL)
#define FLEET_QUEUE_NEXT_USEC (5 * 1000ULL)

static void pending_free(struct drfd *d)
{
	for (size_t i = 0; i < d->fleet_pending_n; i++)
		free(d->fleet_pending[i].cgroup);
	free(d->fleet_pending);
	d->fleet_pending = NULL;
	d->fleet_pending_n = 0;
}

/* The assignment waiting: put in force from the loop, not from inside the node's callback. */
static int apply_pending(sd_event_source *s, void *userdata)
{
	struct drfd *d = userdata;
	int r;

	(void)s;
	d->fleet_defer = sd_event_source_unref(d->fleet_defer);
	r = drfd_assign(d, d->fleet_pending, d->fleet_pending_n, d->fleet_pending_source);
	if (r < 0)
		drf_log(d->log, LOG_ERR, "fleet: %s refused, the one before stays in force: %s",
			d->fleet_pending_source, d->reload_error);
	else
		drf_log(d->log, LOG_NOTICE, "fleet: %s in force: %zu tenants",
			d->fleet_pending_source, d->fleet_pending_n);
	/* The node keeps (in the state dir) only what is in force, and offers a refused one again. */
	drf_fleet_node_applied(d->fleet, d->fleet_pending_rev, r < 0 ? r : 0,
			       r < 0 ? d->reload_error : NULL);
	pending_free(d);
	return 0;
}

/*
 * An assignment's tenants, each a bounded demand of what DRFH gave it on this
 * node; NULL without memory (never the tenant's own name in a cgroup's place).
 */
static struct drf_tenant *assignment_tenants(const struct drfd *d,
					     const struct drf_fleet_assignment *a)
{
	struct drf_tenant *t = calloc(a->n + 1, sizeof(*t));

	if (!t)
		return NULL;
	for (size_t i = 0; i < a->n; i++) {
		const struct drf_fleet_share *s = &a->tenants[i];

		snprintf(t[i].name, sizeof(t[i].name), "%s", s->name);
		t[i].cgroup = s->cgroup ? strdup(s->cgroup) : NULL;
		if (s->cgroup && !t[i].cgroup) {
			for (size_t j = 0; j < i; j++)
				free(t[j].cgroup);
			free(t);
			return NULL;
		}
		t[i].weight = s->weight;
		/* A bounded demand of what it was given here, on each resource this node has. */
		for (int res = 0; res < DRF_NRES; res++) {
			if (!(d->decl.cfg.capacity[res] > 0))
				continue;
			t[i].vec[res] = s->alloc[res];
			t[i].declared[res] = true;
		}
	}
	return t;
}

int drfd_fleet_preload(struct drfd *d)
{
	const struct drf_config *c = &d->decl.cfg;
	struct drf_fleet_assignment a = { 0 };
	struct drf_declared n = { 0 };
	struct drf_tenant *t;
	char err[1024];
	int r;

	if (!d->fleet || !c->state_dir ||
	    drf_fleet_assignment_load(c->state_dir, d->fleet_node,
				      c->fleet.prefix ? c->fleet.prefix : DRF_FLEET_DEFAULT_PREFIX,
				      &a) < 0)
		return 0; /* none; or the node says why when it starts */
	t = assignment_tenants(d, &a);
	if (!t) {
		drf_fleet_assignment_clear(&a);
		return -ENOMEM;
	}
	snprintf(d->assigned_source, sizeof(d->assigned_source),
		 "fleet assignment of revision %lld (the state dir's)", (long long)a.revision);
	r = drf_declared_load_assigned(&n, d->config_path, d->env->host, t, a.n,
				       d->assigned_source, err, sizeof(err));
	if (r == 0) {
		drf_declared_free(&d->decl);
		d->decl = n;
		d->assigned = t;
		d->n_assigned = a.n;
	} else {
		/* The node offers it again once started, and the refusal is said then. */
		for (size_t i = 0; i < a.n; i++)
			free(t[i].cgroup);
		free(t);
		d->assigned_source[0] = '\0';
	}
	drf_fleet_assignment_clear(&a);
	return r == -ENOMEM ? r : 0;
}

/* A new assignment: its tenants, each with what DRFH gave it on this node, to put in force. */
static void on_assignment(void *userdata, const struct drf_fleet_assignment *a)
{
	struct drfd *d = userdata;
	struct drf_tenant *t = assignment_tenants(d, a);

	if (!t) {
		drf_log(d->log, LOG_ERR, "fleet: out of memory for an assignment");
		drf_fleet_node_applied(d->fleet, a->revision, -ENOMEM, "out of memory");
		return;
	}
	pending_free(d); /* a newer one replaces one not yet in force */
	d->fleet_pending = t;
	d->fleet_pending_n = a->n;
	d->fleet_pending_rev = a->revision;
	snprintf(d->fleet_pending_source, sizeof(d->fleet_pending_source),
		 "fleet assignment of revision %lld (planner %s)", (long long)a->revision,
		 a->planner[0] ? a->planner : "?");
	if (!d->fleet_defer &&
	    sd_event_add_defer(d->event, &d->fleet_defer, apply_pending, d) < 0)
		apply_pending(NULL, d);
}

/* A fleet task handed over: its task (until queued), its local id, the state etcd has. */
struct drfd_fleet_task {
	struct drf_fleet_task t;
	bool queued;                  /* in the local queue: local is its id */
	uint64_t local;
	uint64_t since;               /* handed over (monotonic usec) */
	struct drf_fleet_task_state last; /* as written (or read) */
};

static void fleet_task_drop(struct drfd *d, size_t i)
{
	drf_fleet_task_clear(&d->fleet_tasks[i].t);
	d->fleet_tasks[i] = d->fleet_tasks[--d->fleet_tasks_n];
}

static void fleet_tasks_free(struct drfd *d)
{
	while (d->fleet_tasks_n)
		fleet_task_drop(d, d->fleet_tasks_n - 1);
	free(d->fleet_tasks);
	d->fleet_tasks = NULL;
	d->fleet_tasks_cap = 0;
}

static int copy_task(struct drf_fleet_task *dst, const struct drf_fleet_task *src)
{
	*dst = *src;
	dst->argv = calloc(src->argc + 1, sizeof(*dst->argv));
	dst->argc = 0;
	dst->by = dst->key = NULL;
	if (!dst->argv)
		return -ENOMEM;
	for (size_t i = 0; i < src->argc; i++) {
		dst->argv[i] = strdup(src->argv[i]);
		if (!dst->argv[i])
			return -ENOMEM;
		dst->argc++;
	}
	return 0;
}

/* The node hands over a task: kept, to be queued from the next tick (not from its callback). */
static void on_task(void *userdata, const struct drf_fleet_task *t,
		    const struct drf_fleet_task_state *s)
{
	struct drfd *d = userdata;
	struct drfd_fleet_task *ft;

	for (size_t i = 0; i < d->fleet_tasks_n; i++)
		if (strcmp(d->fleet_tasks[i].t.id, t->id) == 0)
			return; /* under way already */
	if (DRF_VEC_GROW(d->fleet_tasks, &d->fleet_tasks_cap, d->fleet_tasks_n + 1) < 0) {
		drf_log(d->log, LOG_ERR, "fleet: out of memory for task %s", t->id);
		return;
	}
	ft = &d->fleet_tasks[d->fleet_tasks_n];
	memset(ft, 0, sizeof(*ft));
	if (copy_task(&ft->t, t) < 0) {
		drf_fleet_task_clear(&ft->t);
		drf_log(d->log, LOG_ERR, "fleet: out of memory for task %s", t->id);
		return;
	}
	ft->last = *s;
	ft->since = drf_mono_usec(d->env->clock);
	d->fleet_tasks_n++;
	drf_log(d->log, LOG_INFO, "fleet: task %s of tenant '%s' handed over (%zu words)", t->id,
		t->tenant, t->argc);
}

static int64_t unix_now(const struct drfd *d)
{
	return (int64_t)(drf_real_usec(d->env->clock) / DRF_USEC_PER_SEC);
}

static bool has_tenant(const struct drf_config *c, const char *name)
{
	for (size_t i = 0; i < c->n_tenants; i++)
		if (strcmp(c->tenants[i].name, name) == 0)
			return true;
	return false;
}

/*
 * Queues ft in the local queue as task-user: its state (queued, or
 * refused/failed and why). false when it waits (its tenant, or room in the
 * local queue: the caps on queued tasks hold fleet tasks back, never refuse
 * them).
 */
static bool fleet_task_queue(struct drfd *d, struct drfd_fleet_task *ft,
			     struct drf_fleet_task_state *st)
{
	const struct drf_fleet_member *m = &d->decl.cfg.fleet;
	struct drf_task_req req = { 0 };
	char key[DRF_TENANT_NAME_MAX + 8], err[DRF_FLEET_TASK_WHY_MAX];
	uint64_t id = 0;
	int r;

	if (!m->task_user) {
		st->st = DRF_FLEET_TASK_REFUSED;
		snprintf(st->why, sizeof(st->why), "this node runs no fleet tasks ([fleet] "
			 "task-user is not set)");
		return true;
	}
	if (!d->tasks) {
		st->st = DRF_FLEET_TASK_REFUSED;
		snprintf(st->why, sizeof(st->why), "the task queue is off on this node (it needs a "
			 "state-dir)");
		return true;
	}
	if ((!has_tenant(&d->decl.cfg, ft->t.tenant) &&
	     drf_mono_usec(d->env->clock) - ft->since < FLEET_TASK_TENANT_WAIT_USEC) ||
	    !drf_tasks_room(d->tasks, m->task_uid)) {
		*st = ft->last; /* no change: asked again at the next step */
		return false;
	}
	snprintf(key, sizeof(key), "fleet:%s", ft->t.id);
	snprintf(req.tenant, sizeof(req.tenant), "%s", ft->t.tenant);
	for (int k = 0; k < DRF_NRES; k++) {
		req.vec[k] = ft->t.vec[k];
		req.given[k] = true;
	}
	/* Whom it runs as is this node's word, never the value's. */
	req.uid = m->task_uid;
	req.gid = m->task_gid;
	req.groups = m->task_groups;
	req.ngroups = m->task_ngroups;
	req.key = key;
	req.cwd = m->task_home;
	req.argv = ft->t.argv;
	req.argc = ft->t.argc;
	r = drf_tasks_submit(d->tasks, &d->decl.cfg, d->decl.problem.capacity, &req, &id, err,
			     sizeof(err));
	if (r == 0 || r == DRF_TASKS_KNOWN) {
		ft->queued = true;
		ft->local = id;
		st->st = DRF_FLEET_TASK_QUEUED;
		st->task = id;
		/* Its end is kept until the fleet is told of it. */
		drf_tasks_hold(d->tasks, id, true);
		drf_log(d->log, LOG_NOTICE, "fleet: task %s of tenant '%s' is local task %" PRIu64
			"%s", ft->t.id, ft->t.tenant, id, r == 0 ? "" : " (queued before)");
		return true;
	}
	st->st = r == DRF_TASKS_REFUSED ? DRF_FLEET_TASK_REFUSED : DRF_FLEET_TASK_FAILED;
	snprintf(st->why, sizeof(st->why), "%s", err);
	return true;
}

/* The local task's state as a fleet task's. */
static void local_state(const struct drfd *d, const struct drfd_fleet_task *ft,
			struct drf_fleet_task_state *st)
{
	const struct drf_task *t = d->tasks ? drf_tasks_find(d->tasks, ft->local) : NULL;

	st->task = ft->local;
	if (!t) {
		st->st = DRF_FLEET_TASK_FAILED;
		snprintf(st->why, sizeof(st->why), "local task %" PRIu64 " is gone from the "
			 "node's queue", ft->local);
		return;
	}
	switch (t->state) {
	case DRF_TASK_QUEUED:
	case DRF_TASK_STARTING:
		st->st = DRF_FLEET_TASK_QUEUED;
		return;
	case DRF_TASK_RUNNING:
		st->st = DRF_FLEET_TASK_RUNNING;
		return;
	case DRF_TASK_DONE:
		break;
	}
	if (strcmp(t->result, "exited") == 0 && t->exit_code >= 0) {
		st->st = DRF_FLEET_TASK_EXITED;
		st->code = t->exit_code;
		return;
	}
	st->st = DRF_FLEET_TASK_FAILED;
	if (t->signal > 0)
		snprintf(st->why, sizeof(st->why), "%s (signal %d)", t->result, t->signal);
	else
		snprintf(st->why, sizeof(st->why), "%s%s%.400s", t->result, t->error ? ": " : "",
			 t->error ? t->error : "");
}

void drfd_fleet_tasks_step(struct drfd *d)
{
	uint64_t t0 = drf_mono_usec(d->env->clock);
	bool queued = false, room = true;
	int submits = 0;

	if (!d->fleet)
		return;
	d->fleet_more = false;
	for (size_t i = 0; i < d->fleet_tasks_n;) {
		struct drfd_fleet_task *ft = &d->fleet_tasks[i];
		struct drf_fleet_task_state st = { 0 };

		if (!ft->queued) {
			/*
			 * An assignment about to be put in force first: it may bring
			 * the tenant. And a step's submits bounded: the rest soon.
			 */
			if (d->fleet_defer || !room) {
				i++;
				continue;
			}
			if (submits >= FLEET_QUEUE_STEP_MAX ||
			    drf_mono_usec(d->env->clock) - t0 >= FLEET_QUEUE_STEP_USEC) {
				d->fleet_more = true;
				i++;
				continue;
			}
			/* The local queue full: the rest wait for tasks to end, not refused. */
			if (fleet_task_queue(d, ft, &st))
				submits++; /* a wait for the tenant or for room costs nothing */
			else if (has_tenant(&d->decl.cfg, ft->t.tenant))
				room = false;
			queued = queued || ft->queued;
		} else {
			local_state(d, ft, &st);
		}
		if (!drf_fleet_task_state_same(&st, &ft->last)) {
			st.at = unix_now(d);
			if (st.st == DRF_FLEET_TASK_REFUSED || st.st == DRF_FLEET_TASK_FAILED)
				drf_log(d->log, LOG_WARNING, "fleet: task %s of tenant '%s': %s: %s",
					ft->t.id, ft->t.tenant, drf_fleet_task_st_name(st.st),
					st.why);
			/* Kept by the node until written (retried from its tick). */
			if (drf_fleet_node_task_state(d->fleet, ft->t.id, &st) < 0) {
				i++;
				continue;
			}
			ft->last = st;
		}
		if (drf_fleet_task_st_final(ft->last.st)) {
			if (ft->queued && d->tasks)
				drf_tasks_hold(d->tasks, ft->local, false);
			fleet_task_drop(d, i);
			continue;
		}
		i++;
	}
	/* Started now if it fits, not at the next tick. */
	if (queued)
		drfd_settle(d);
}

static int on_fleet_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct drfd *d = userdata;

	drf_fleet_node_tick(d->fleet);
	drfd_fleet_tasks_step(d);
	/* A burst being queued: its next step soon, the loop served in between. */
	if (d->fleet_more && sd_event_now(d->event, CLOCK_MONOTONIC, &usec) >= 0)
		usec += FLEET_QUEUE_NEXT_USEC;
	else
		usec += FLEET_TICK_USEC;
	sd_event_source_set_time(s, usec);
	return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

/* The node's name: [fleet] node, or the host's name up to its first dot. */
static int node_name(const struct drf_config *c, char *buf, size_t len)
{
	struct utsname u;
	char *dot;

	if (c->fleet.node) {
		snprintf(buf, len, "%s", c->fleet.node);
		return 0;
	}
	if (uname(&u) < 0)
		return -errno;
	snprintf(buf, len, "%s", u.nodename);
	dot = strchr(buf, '.');
	if (dot)
		*dot = '\0';
	return drf_name_valid(buf) ? 0 : -EINVAL;
}

int drfd_fleet_open(struct drfd *d, char *err, size_t len)
{
	const struct drf_config *c = &d->decl.cfg;
	char password[512] = "";
	struct etcd *e = NULL;
	struct etcd_config ec = {
		.endpoints = c->fleet.endpoints, .cacert = c->fleet.ca_file,
		.cert = c->fleet.cert_file, .key = c->fleet.key_file, .user = c->fleet.user,
		.log = d->log,
	};
	struct drf_fleet_node_config nc = {
		.prefix = c->fleet.prefix, .ttl = (int64_t)(c->fleet.lease_ttl_us / 1000000),
		.grace = (int64_t)(c->fleet.grace_us / 1000000),
		.state_dir = c->state_dir, .plain = c->fleet.plain, .clock = d->env->clock,
		.log = d->log,
		.on_assignment = on_assignment, .on_task = on_task, .userdata = d,
	};
	int r;

	if (!c->fleet.on)
		return 0;
	r = node_name(c, d->fleet_node, sizeof(d->fleet_node));
	if (r < 0) {
		snprintf(err, len, "%s: [fleet]: the host's name '%s' is not a node name; set node",
			 d->config_path, d->fleet_node);
		return -EINVAL;
	}
	if (c->fleet.password_file) {
		r = etcd_read_password(c->fleet.password_file, password, sizeof(password));
		if (r < 0) {
			snprintf(err, len, "%s: [fleet] password-file = '%s': %s", d->config_path,
				 c->fleet.password_file,
				 r == -E2BIG ? "longer than 511 bytes" : strerror(-r));
			return r;
		}
		ec.password = password;
	}
	r = d->env->etcd_open ? d->env->etcd_open(d->env->etcd_ctx, &ec, d->event, &e, err, len)
			      : etcd_open(&ec, d->event, &e, err, len);
	explicit_bzero(password, sizeof(password));
	if (r < 0)
		return r;
	nc.node = d->fleet_node;
	memcpy(nc.capacity, c->capacity, sizeof(nc.capacity));
	d->fleet_status = calloc(1, sizeof(*d->fleet_status));
	if (!d->fleet_status) {
		etcd_close(e);
		return -ENOMEM;
	}
	r = drf_fleet_node_new(&nc, e, &d->fleet, err, len);
	if (r < 0) {
		etcd_close(e);
		return r;
	}
	return 0;
}

int drfd_fleet_start(struct drfd *d)
{
	int r;

	if (!d->fleet)
		return 0;
	r = sd_event_add_time_relative(d->event, &d->fleet_timer, CLOCK_MONOTONIC,
				       FLEET_TICK_USEC, 10 * 1000, on_fleet_timer, d);
	if (r < 0)
		return r;
	return drf_fleet_node_start(d->fleet);
}

void drfd_fleet_reloaded(struct drfd *d)
{
	int r;

	if (!d->fleet)
		return;
	r = drf_fleet_node_set_host(d->fleet, d->decl.cfg.capacity, NULL, 0);
	if (r < 0)
		drf_log(d->log, LOG_ERR, "fleet: cannot register the new capacity: %s",
			strerror(-r));
}

void drfd_fleet_free(struct drfd *d)
{
	d->fleet_timer = sd_event_source_unref(d->fleet_timer);
	d->fleet_defer = sd_event_source_unref(d->fleet_defer);
	pending_free(d);
	fleet_tasks_free(d);
	drf_fleet_node_free(d->fleet);
	d->fleet = NULL;
	free(d->fleet_status);
	d->fleet_status = NULL;
}

/* The node's state for status and metrics (on false without [fleet]): the view's fleet. */
static void fleet_view(const struct drfd *d, struct drf_view *v)
{
	struct drf_view_fleet *ret = &v->fleet;
	struct drf_fleet_status *st = d->fleet_status;

	memset(ret, 0, sizeof(*ret));
	if (!d->fleet || !st)
		return;
	drf_fleet_node_status(d->fleet, st);
	*ret = (struct drf_view_fleet){
		.on = true, .node = d->fleet_node, .reachable = st->reachable,
		.since = st->since_usec, .last_error = st->last_error,
		.registered = st->registered, .planner = st->planner,
		.planner_name = st->planner_name, .has_assignment = st->has_assignment,
		.from_file = st->assignment_from_file,
		.assignment_revision = st->assignment_revision,
		.in_force_revision = st->applied_revision, .refused = st->refused,
		.refused_why = st->refused_why, .nodes = st->nodes,
		.tenants = st->tenants, .plans = st->plans, .keys_written = st->keys_written,
		.fenced = st->fenced, .resyncs = st->resyncs,
		.planner_vacant = st->planner_vacant, .planner_vacant_why = st->planner_vacant_why,
		.takeovers = st->takeovers, .silent_nodes = st->silent_nodes,
		.plain = st->plain, .campaign_refused = st->campaign_refused,
		.campaign_refused_why = st->campaign_refused_why,
	};
}

const struct drfd_feature drfd_fleet_feature = {
	.name = "fleet",
	.reloaded = drfd_fleet_reloaded,
	.view = fleet_view,
	.free = drfd_fleet_free,
};
