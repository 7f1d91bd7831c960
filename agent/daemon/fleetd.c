// SPDX-License-Identifier: MIT
/*
 * drfd as a fleet node ([fleet] in drfd.conf): the etcd client and the node
 * (agent/fleet) on drfd's loop; each assignment the node hands over becomes
 * the tenants in force (drfd_assign), and the node's state goes to status
 * and metrics. See fleetd.h.
 */
#include "fleetd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "fleet.h"
#include "log.h"

/* How often the node's timers are looked at: keepalives and retries are due in seconds. */
#define FLEET_TICK_USEC (200 * 1000ULL)

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
	pending_free(d);
	return 0;
}

/* A new assignment: its tenants, each with what DRFH gave it on this node, to put in force. */
static void on_assignment(void *userdata, const struct drf_fleet_assignment *a)
{
	struct drfd *d = userdata;
	struct drf_tenant *t = calloc(a->n + 1, sizeof(*t));

	if (!t) {
		drf_log(d->log, LOG_ERR, "fleet: out of memory for an assignment");
		return;
	}
	for (size_t i = 0; i < a->n; i++) {
		const struct drf_fleet_share *s = &a->tenants[i];

		snprintf(t[i].name, sizeof(t[i].name), "%s", s->name);
		t[i].cgroup = s->cgroup ? strdup(s->cgroup) : NULL;
		if (s->cgroup && !t[i].cgroup) {
			/* Not the tenant's own name in its place: the assignment waits for the next. */
			for (size_t j = 0; j < i; j++)
				free(t[j].cgroup);
			free(t);
			drf_log(d->log, LOG_ERR, "fleet: out of memory for an assignment");
			return;
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
	pending_free(d); /* a newer one replaces one not yet in force */
	d->fleet_pending = t;
	d->fleet_pending_n = a->n;
	snprintf(d->fleet_pending_source, sizeof(d->fleet_pending_source),
		 "fleet assignment of revision %lld (planner %s)", (long long)a->revision,
		 a->planner[0] ? a->planner : "?");
	if (!d->fleet_defer &&
	    sd_event_add_defer(d->event, &d->fleet_defer, apply_pending, d) < 0)
		apply_pending(NULL, d);
}

static int on_fleet_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct drfd *d = userdata;

	drf_fleet_node_tick(d->fleet);
	sd_event_source_set_time(s, usec + FLEET_TICK_USEC);
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
		.state_dir = c->state_dir, .clock = d->env->clock, .log = d->log,
		.on_assignment = on_assignment, .userdata = d,
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
	r = etcd_open(&ec, d->event, &e, err, len);
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

void drfd_fleet_free(struct drfd *d)
{
	d->fleet_timer = sd_event_source_unref(d->fleet_timer);
	d->fleet_defer = sd_event_source_unref(d->fleet_defer);
	pending_free(d);
	drf_fleet_node_free(d->fleet);
	d->fleet = NULL;
	free(d->fleet_status);
	d->fleet_status = NULL;
}

void drfd_fleet_view(const struct drfd *d, struct drf_view_fleet *ret)
{
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
		.assignment_revision = st->assignment_revision, .nodes = st->nodes,
		.tenants = st->tenants, .plans = st->plans, .keys_written = st->keys_written,
		.fenced = st->fenced, .resyncs = st->resyncs,
	};
}
