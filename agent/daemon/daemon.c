// SPDX-License-Identifier: MIT
#include "daemon.h"
#include "metrics.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "histfile.h"
#include "hostcheck.h"
#include "lock.h"
#include "log.h"
#include "netbpf.h"
#include "netcheck.h"
#include "pins.h"
#include "statedir.h"
#include "statefile.h"
#include "tasks.h"
#include "tc_nl.h"

static uint64_t now_realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t now_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* One line per tenant: what it gets. */
void drfd_log_plan(const struct drf_logger *log, const struct drf_enforced *s,
		   const struct drf_io_target *io)
{
	const struct drf_config *c = &s->cfg;

	if (c->n_tenants == 0)
		drf_log(log, LOG_NOTICE, "%s defines no tenants: idling until a reload brings some",
			c->path);
	for (size_t i = 0; i < c->n_tenants; i++) {
		const struct drf_share *sh = &s->result.shares[i];
		char line[512] = "", q[32];

		for (int r = 0; r < DRF_NRES; r++) {
			if (!(s->problem.capacity[r] > 0))
				continue;
			drf_format_quantity(sh->alloc[r], drf_res_unit(r), q, sizeof(q));
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s=%s",
				 drf_res_name(r), q);
		}
		drf_log(log, LOG_INFO, "plan: tenant '%s':%s dominant %s %.3f, limited by %s",
			c->tenants[i].name, line, drf_res_name(sh->dominant_res), sh->dominant_share,
			sh->limited_by == DRF_LIMIT_DEMAND ? "demand"
							   : drf_res_name(sh->limited_by));
	}
	/* Never silent about what is not enforced. */
	if (io && (drf_knobs_controllers(c) & DRF_CTRL_IO) && c->mode == DRF_MODE_SHARE &&
	    io->weights == DRF_IO_WEIGHTS_NONE)
		drf_log(log, LOG_NOTICE, "io: device %u:%u has neither BFQ nor io.cost enabled, so "
					 "io weights would have no effect; share mode sets io.max "
					 "at each tenant's io allocation instead",
			io->major, io->minor);
	for (size_t i = 0; i < c->n_tenants; i++) {
		unsigned u = drf_knobs_uncapped(c, &s->problem, i, io);

		for (int r = 0; r < DRF_NRES; r++)
			if (u & (1u << r))
				drf_log(log, LOG_WARNING, "tenant '%s' needs no %s (its demand is "
							  "0), so it gets no guarantee and no cap "
							  "on it: a zero cap would stop it",
					c->tenants[i].name, drf_res_name(r));
	}
}

/*
 * Saves the state file; a failure is kept in d->state_err (status and metrics
 * show it), said once, and the save retried each tick until it succeeds: a
 * restart must know every cgroup drfd made.
 */
static void save_state(struct drfd *d)
{
	int r;

	if (!d->state_path[0] || d->dry_run)
		return;
	r = drf_state_save(d->state_path, d->root, &d->rc, d->has_net ? &d->net : NULL);
	if (r < 0 && r != d->state_err)
		drf_log(d->log, LOG_ERR, "cannot write the state file '%s': %s; retried each tick "
					 "(until it is saved, a restart would not clean up tenants "
					 "removed meanwhile)", d->state_path, strerror(-r));
	else if (r == 0 && d->state_err)
		drf_log(d->log, LOG_NOTICE, "the state file '%s' is saved again", d->state_path);
	d->state_err = r < 0 ? r : 0;
}

static void notify_status(struct drfd *d)
{
	const struct drf_reconcile_stats *st = &d->last;
	unsigned retrying = st->retrying + (d->has_net ? d->net_last.retrying : 0);
	char text[256];

	if (d->plan.cfg.n_tenants == 0)
		snprintf(text, sizeof(text), "idle: no tenants in %s", d->config_path);
	else if (retrying)
		snprintf(text, sizeof(text), "enforcing %zu tenants; %u writes failing, retried "
			 "each tick", d->plan.cfg.n_tenants, retrying);
	else
		snprintf(text, sizeof(text), "enforcing %zu tenants%s", d->plan.cfg.n_tenants,
			 d->rc.n_orphans ? "; orphans kept (see drfctl status)" : "");
	if (d->state_err)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "; the state file is "
			 "not saved (retried each tick)");
	/* One sd_notify per change, not per tick. */
	if (strcmp(text, d->status_text) == 0)
		return;
	snprintf(d->status_text, sizeof(d->status_text), "%s", text);
	sd_notifyf(0, "STATUS=%s", text);
}

/*
 * One tick: reconcile the plan in force (cgroup knobs, the task queue, the
 * network), sample every tenant (cgroup files, BPF maps), and with observed
 * demand re-allocate on the effective demands and write what changed at once;
 * then the history, the metrics and one log line.
 */
void drfd_tick(struct drfd *d, size_t verify)
{
	struct drf_reconcile_stats st;
	bool busy;

	d->ticks++;
	drf_reconcile_tick(&d->rc, verify, &st);
	d->last = st;
	drfd_tasks_tick(d);
	/* The network after the cgroups: its map entries need the tenants' cgroups. */
	if (d->has_net)
		drf_shaper_tick(&d->net, now_monotonic_ns(), verify, &d->net_last);
	d->last_tick = now_realtime();
	drfd_usage_sample(d, now_monotonic_ns());
	/* Observed demand: a changed effective plan is written in this same tick. */
	if (drfd_online_step(d)) {
		struct drf_reconcile_stats again;

		drf_reconcile_tick(&d->rc, 0, &again);
		st.writes += again.writes;
		st.errors += again.errors;
		st.retrying = again.retrying;
		st.pending = again.pending;
		d->last = st;
		if (d->has_net) {
			struct drf_shaper_stats n = d->net_last;

			drf_shaper_tick(&d->net, now_monotonic_ns(), 0, &d->net_last);
			d->net_last.writes += n.writes;
			d->net_last.errors += n.errors;
		}
	}
	drfd_history_tick(d);
	drfd_metrics_tick(d);
	if (drf_reconciler_membership_changed(&d->rc) || d->state_err)
		save_state(d);
	busy = st.writes || st.created || st.recreated || st.foreign || st.errors || st.removed ||
	       (d->has_net && (d->net_last.writes || d->net_last.errors));
	drf_log(d->log, busy ? LOG_INFO : LOG_DEBUG,
		"tick %llu: %zu tenants, %u verified, %u written, %u created, %u recreated, "
		"%u changed by others, %u waiting for memory to drop, %u errors, %u retrying, "
		"%zu orphans", (unsigned long long)d->ticks, d->rc.n, st.verified, st.writes,
		st.created, st.recreated, st.foreign, st.pending, st.errors, st.retrying,
		d->rc.n_orphans);
	if (d->has_net && (d->net_last.writes || d->net_last.errors))
		drf_log(d->log, LOG_INFO, "tick %llu: network on %s: %u written, %u errors, %u "
					  "retrying",
			(unsigned long long)d->ticks, d->net.ifname, d->net_last.writes,
			d->net_last.errors, d->net_last.retrying);
	notify_status(d);
}

/*
 * A device drfd shaped before the restart and no longer does (the config lost
 * its network capacities, or names another device): its qdisc and the pinned
 * programs would go on shaping and policing the tenants. Removed, as drfctl
 * net-reset would.
 */
static void stale_net(struct drfd *d, const char *ifname)
{
	struct drf_netbpf bpf = { 0 };
	struct drf_shaper s;
	struct drf_tc_nl nl;
	char mount[4096] = "", pin[256];
	uint32_t level;
	int r;

	pid_t holder = 0;
	int lock;

	if (d->dry_run) {
		printf("net-reset %s (no longer shaped)\n", ifname);
		return;
	}
	/* Another drfd may shape it now: then its qdisc is that one's, and stays. */
	lock = drf_lock_device(ifname, &holder);
	drf_cgroup2_mount_of(d->root, mount, sizeof(mount));
	r = drf_pin_paths(d->root, mount[0] ? mount : "/sys/fs/cgroup", &level, pin, sizeof(pin));
	if (r == 0)
		r = drf_tc_nl_open(&nl);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "cannot remove drfd's qdisc and programs from '%s', no "
					 "longer shaped: %s (with drfd stopped, drfctl net-reset "
					 "--device %s does it)", ifname, strerror(-r), ifname);
		if (lock >= 0)
			close(lock);
		return;
	}
	r = drf_shaper_init(&s, ifname, &drf_tc_nl_ops, &nl, &drf_netbpf_real_ops, &bpf, d->fs, pin,
			    level, NULL);
	if (r == 0)
		r = lock >= 0 ? drf_shaper_reset(&s) : drf_shaper_unpin(&s);
	if (lock >= 0)
		close(lock);
	else if (r == 0)
		drf_log(d->log, LOG_NOTICE, "'%s' is no longer shaped by this drfd, and another "
					    "(pid %d) shapes it now: its qdisc stays; removed this "
					    "root's programs", ifname, (int)holder);
	if (r < 0)
		drf_log(d->log, LOG_ERR, "cannot remove drfd's qdisc and programs from '%s', no "
					 "longer shaped: %s (with drfd stopped, drfctl net-reset "
					 "--device %s does it)", ifname, strerror(-r), ifname);
	else if (lock >= 0)
		drf_log(d->log, LOG_NOTICE, "'%s' is no longer shaped: removed drfd's qdisc and "
					    "programs", ifname);
	drf_shaper_free(&s);
	drf_tc_nl_close(&nl);
}

int drfd_start(struct drfd *d, struct drf_reconcile_stats *ret)
{
	struct drf_state_entry *e = NULL;
	size_t n = 0, skipped = 0;
	int r;

	d->started = now_realtime();
	d->listen_fd = -1;
	r = drf_reconciler_init(&d->rc, d->fs, d->has_io ? &d->io : NULL, d->log,
				!d->dry_run, (unsigned long)sysconf(_SC_PAGESIZE));
	if (r < 0)
		return r;
	r = drf_reconciler_set(&d->rc, &d->plan.cfg, d->plan.knobs, d->plan.inner, d->plan.n_inner);
	if (r < 0)
		return r;
	d->verify = drf_verify_per_tick(d->rc.n + d->rc.n_inner, d->plan.cfg.interval_ms,
					d->plan.cfg.verify_period_ms);
	if (d->plan.cfg.state_dir &&
	    drf_statedir_path(d->plan.cfg.state_dir, d->root, ".state", d->state_path,
			      sizeof(d->state_path)) < 0) {
		drf_log(d->log, LOG_ERR, "state-dir '%s': path too long; running without a state "
					 "file", d->plan.cfg.state_dir);
		d->state_path[0] = '\0';
	}
	/* Cgroups of tenants that left the config while drfd was down. */
	if (d->state_path[0]) {
		r = drf_state_load(d->state_path, d->root, &e, &n, &skipped);
		if (r < 0 && r != -ENOENT)
			drf_log(d->log, LOG_ERR, "cannot read the state file '%s': %s; tenants "
						 "removed from the config while drfd was down will "
						 "not be cleaned up", d->state_path, strerror(-r));
		if (skipped)
			drf_log(d->log, LOG_WARNING, "state file '%s': ignored %zu lines that do "
						     "not parse", d->state_path, skipped);
		for (size_t i = 0; i < n; i++) {
			if (e[i].netdev) {
				/* The device shaped before: no longer, or another one now. */
				if (!d->has_net || strcmp(e[i].name, d->net.ifname) != 0)
					stale_net(d, e[i].name);
				continue;
			}
			if (e[i].net_minor) {
				/* A tenant's class minor: the same class after the restart. */
				if (d->has_net)
					drf_shaper_remember(&d->net, e[i].name, (uint16_t)e[i].net_minor);
				continue;
			}
			if (drf_reconciler_forget(&d->rc, e[i].name, e[i].cgroup) < 0)
				drf_log(d->log, LOG_ERR, "cannot track departed tenant '%s': out "
							 "of memory", e[i].name);
		}
		drf_state_free(e, n);
	}
	if (d->has_net) {
		r = drf_shaper_set(&d->net, &d->plan, d->plan.cfg.net_replace_qdisc);
		if (r < 0)
			return r;
	}
	/* Observed demand: the effective plan of before the restart, before any write. */
	if (d->plan.cfg.observed) {
		drfd_online_restore(d);
		drfd_online_plan(d);
	}
	drfd_tasks_start(d);
	drfd_tick(d, SIZE_MAX);
	drf_reconciler_membership_changed(&d->rc);
	save_state(d);
	if (ret)
		*ret = d->last;
	return 0;
}

/* Reload on SIGHUP: a bad config is refused and the one in force stays. */
static void reload(struct drfd *d)
{
	struct drf_enforced n = { 0 };
	char err[2048];
	int r;

	sd_notify(0, "RELOADING=1");
	r = drf_enforced_load(&n, d->config_path, d->has_io ? &d->io : NULL, err, sizeof(err));
	if (r == 0 && strcmp(n.cfg.cgroup_root, d->plan.cfg.cgroup_root) != 0) {
		snprintf(err, sizeof(err), "%s: cgroup-root changed from '%s' to '%s'; that needs a "
			 "restart", d->config_path, d->plan.cfg.cgroup_root, n.cfg.cgroup_root);
		r = -EINVAL;
	}
	/* A reload may add a resource whose controller the host does not pass down. */
	if (r == 0) {
		char *saved = n.cfg.cgroup_root;

		n.cfg.cgroup_root = d->root;
		if (drf_check_cgroup(&n.cfg, err, sizeof(err)) < 0)
			r = -EINVAL;
		n.cfg.cgroup_root = saved;
	}
	if (r == 0 && (drf_knobs_controllers(&n.cfg) & DRF_CTRL_IO) &&
	    (!d->has_io || !n.cfg.io_device || !d->plan.cfg.io_device ||
	     strcmp(n.cfg.io_device, d->plan.cfg.io_device) != 0)) {
		snprintf(err, sizeof(err), "%s: io-device changed; that needs a restart",
			 d->config_path);
		r = -EINVAL;
	}
	/* The shaper is set up at start for one device: a change of either needs a restart. */
	if (r == 0) {
		bool net = n.cfg.capacity[DRF_RES_NET] > 0 || n.cfg.capacity[DRF_RES_NET_IN] > 0;

		if (net != d->has_net || (net && strcmp(n.cfg.net_device, d->net.ifname) != 0)) {
			snprintf(err, sizeof(err), "%s: %s; that needs a restart", d->config_path,
				 net != d->has_net ? (net ? "network capacities added"
							  : "network capacities removed")
						   : "net-device changed");
			r = -EINVAL;
		}
	}
	if (r == 0 && d->has_net) {
		r = drf_shaper_set(&d->net, &n, n.cfg.net_replace_qdisc);
		if (r < 0)
			snprintf(err, sizeof(err), "%s", r == -ENOSPC ? "more tenants than HTB class "
				 "ids (65519)" : "out of memory");
	}
	if (r == 0 && drf_reconciler_set(&d->rc, &n.cfg, n.knobs, n.inner, n.n_inner) < 0) {
		snprintf(err, sizeof(err), "out of memory");
		r = -ENOMEM;
	}
	if (r < 0) {
		/* The shaper may have taken the refused plan: the one in force again. */
		if (d->has_net && n.loaded)
			drf_shaper_set(&d->net, drfd_in_force(d), d->plan.cfg.net_replace_qdisc);
		if (n.loaded)
			drf_enforced_free(&n);
		d->reloads_refused++;
		drf_log(d->log, LOG_ERR, "reload refused, keeping the configuration in force: %s",
			err);
		sd_notify(0, "READY=1");
		return;
	}
	drf_log(d->log, LOG_NOTICE, "reloaded %s: %zu tenants", d->config_path, n.cfg.n_tenants);
	drfd_log_plan(d->log, &n, d->has_io ? &d->io : NULL);
	drf_enforced_free(&d->plan);
	d->plan = n;
	d->reloads++;
	if (drfd_usage_plan(d) < 0)
		drf_log(d->log, LOG_WARNING, "out of memory for the usage of the reloaded tenants; "
					     "usage is shown from the next tick that has memory");
	/* Observed demand: the effective plan for the new tenants, before any write. */
	drfd_online_plan(d);
	d->verify = drf_verify_per_tick(d->rc.n + d->rc.n_inner, d->plan.cfg.interval_ms,
					d->plan.cfg.verify_period_ms);
	/* The changed tenants now, not after a verifying round. */
	drfd_tick(d, 0);
	sd_notify(0, "READY=1");
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct drfd *d = userdata;

	(void)usec;
	drfd_tick(d, d->verify);
	sd_event_source_set_time_relative(s, (uint64_t)(d->plan.cfg.interval_ms * 1000));
	return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct drfd *d = userdata;

	(void)s;
	if (si->ssi_signo == SIGHUP) {
		reload(d);
		return 0;
	}
	drf_log(d->log, LOG_NOTICE, "%s: exiting; the limits stay in place",
		strsignal((int)si->ssi_signo));
	drfd_online_save(d);
	drfd_metrics_stop(d);
	sd_notify(0, "STOPPING=1");
	return sd_event_exit(d->event, 0);
}

int drfd_run(struct drfd *d)
{
	static const int sigs[] = { SIGHUP, SIGTERM, SIGINT };
	int r;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		r = sd_event_add_signal(d->event, NULL, sigs[i], on_signal, d);
		if (r < 0) {
			drf_log(d->log, LOG_ERR, "cannot watch %s: %s",
				strsignal(sigs[i]), strerror(-r));
			return 1;
		}
	}
	r = sd_event_add_time_relative(d->event, &d->timer, CLOCK_MONOTONIC,
				       (uint64_t)(d->plan.cfg.interval_ms * 1000), 0, on_timer, d);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "cannot set up the tick timer: %s", strerror(-r));
		return 1;
	}
	/* With WatchdogSec= in the unit, systemd restarts a drfd that stops ticking. */
	sd_event_set_watchdog(d->event, true);
	r = sd_event_loop(d->event);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "event loop failed: %s", strerror(-r));
		return 1;
	}
	return d->exit_code;
}

void drfd_free(struct drfd *d)
{
	drfd_tasks_free(d);
	drf_reconciler_free(&d->rc);
	drfd_usage_free(&d->use);
	drfd_online_free(&d->online);
	drfd_history_free(d);
	if (d->has_net)
		drf_shaper_free(&d->net);
	d->timer = sd_event_source_unref(d->timer);
	drfd_unlisten(d);
	d->event = sd_event_unref(d->event);
	drf_enforced_free(&d->plan);
	free(d->root);
}
