// SPDX-License-Identifier: MIT
/* The running daemon: a thin loop over one planner (see daemon.h). */
#include "daemon.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "hostcheck.h"
#include "httpd.h"
#include "lock.h"
#include "pins.h"
#include "statedir.h"
#include "statefile.h"

/* One line per tenant: what it gets. */
void drfd_log_plan(const struct drf_logger *log, const struct drf_plan *p,
		   const struct drf_io_target *io)
{
	const struct drf_config *c = &p->decl->cfg;

	if (c->n_tenants == 0)
		drf_log(log, LOG_NOTICE, "%s defines no tenants: idling until a reload brings some",
			c->path);
	/* A line a tenant up to DRFD_LOG_TENANTS; past that, drfctl status says it (a
	 * reload of 10,000 tenants would write 10,000 lines to the journal). */
	if (c->n_tenants > DRFD_LOG_TENANTS)
		drf_log(log, LOG_INFO, "plan: %zu tenants (a line each up to %d: drfctl status "
				       "and plan show them all)", c->n_tenants, DRFD_LOG_TENANTS);
	for (size_t i = 0; i < c->n_tenants && c->n_tenants <= DRFD_LOG_TENANTS; i++) {
		const struct drf_share *sh = &p->result.shares[i];
		char line[512] = "", q[32];

		for (int r = 0; r < DRF_NRES; r++) {
			if (!(p->problem.capacity[r] > 0))
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
		unsigned u = drf_knobs_uncapped(c, &p->problem, i, io);

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
	size_t n = d->decl.cfg.n_tenants;
	char text[256];

	if (n == 0)
		snprintf(text, sizeof(text), "idle: no tenants in %s", d->config_path);
	else if (retrying)
		snprintf(text, sizeof(text), "enforcing %zu tenants; %u writes failing, retried "
			 "each tick", n, retrying);
	else
		snprintf(text, sizeof(text), "enforcing %zu tenants%s", n,
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

/* The plan of decl, whose tenants' measurements are t: the declared config, the effective
 * demands and the task queue. */
static int build(struct drfd *d, const struct drf_declared *decl, const struct drf_tenant_use *t,
		 struct drf_plan *ret)
{
	struct drf_plan_input in = { .decl = decl, .io = d->has_io ? &d->io : NULL };
	int r;

	if (d->tasks) {
		r = drf_tasks_plan(d->tasks, &in.tasks, &in.n_tasks);
		if (r < 0)
			return r;
	}
	in.effective = drf_online_effective(&d->online, decl, t);
	return drf_plan_build(&in, &d->engine, ret);
}

/*
 * Hands plan p to every backend, all or none: the reconciler's stage (what can
 * fail), the shaper, then the reconciler's commit (which cannot). 0, or -errno
 * and nothing changed.
 */
static int apply(struct drfd *d, const struct drf_plan *p)
{
	struct drf_reconciler_stage st;
	int r = drf_reconciler_stage(&d->rc, p, &st);

	if (r < 0)
		return r;
	if (d->has_net) {
		r = drf_shaper_set(&d->net, p);
		if (r < 0) {
			drf_reconciler_unstage(&st);
			return r;
		}
	}
	drf_reconciler_commit(&d->rc, &st);
	return 0;
}

/* p, handed to the backends, takes the place of the plan in force. */
static void install(struct drfd *d, struct drf_plan *p)
{
	drf_plan_free(&d->plan);
	d->plan = *p;
	d->plan.decl = &d->decl;
	memset(p, 0, sizeof(*p));
	d->plans++;
	d->planned_tasks = d->tasks ? d->tasks->generation : 0;
	d->replan = false;
}

/*
 * The plan again when one of its inputs changed since it was built (the
 * effective demands, the tasks), put in force. On failure the plan in force
 * stays, said once, and the next tick tries again.
 */
static void replan(struct drfd *d)
{
	struct drf_plan p;
	int r;

	if (!d->replan && (!d->tasks || d->tasks->generation == d->planned_tasks))
		return;
	r = build(d, &d->decl, d->use.n == d->decl.cfg.n_tenants ? d->use.t : NULL, &p);
	if (r == 0) {
		r = apply(d, &p);
		if (r < 0)
			drf_plan_free(&p);
	}
	if (r < 0) {
		if (!d->replan)
			drf_log(d->log, LOG_ERR, "cannot put the new plan in force: %s; the plan in "
						 "force stays, tried again each tick", strerror(-r));
		d->replan = true;
		return;
	}
	install(d, &p);
	if (d->decl.cfg.observed)
		drf_online_save(&d->online, &d->use, &d->decl);
}

/*
 * The tenants' counter files stay open from tick to tick (up to 8 a tenant;
 * see usage.h): the soft limit on open files goes up to the hard one (the
 * event loop is epoll, never select), and the measurements may hold all but
 * DRFD_FILES_RESERVED of it (the socket's clients, tasks, maps, state files
 * keep theirs). Files past that are read by path.
 *
 * A reload builds the plan and the reconciler's tables anew, megabytes at
 * 10,000 tenants: glibc would map each afresh and unmap it when freed, and
 * each reload fault every page in again (half its time at 10,000 tenants).
 * Allocations up to DRFD_MMAP_MAX come from the heap, which keeps up to
 * DRFD_TRIM_MAX of free memory for the next reload.
 */
#define DRFD_FILES_RESERVED 1024
#define DRFD_MMAP_MAX (32 << 20)
#define DRFD_TRIM_MAX (256 << 20)

size_t drfd_tune_process(void)
{
	struct rlimit rl;

	mallopt(M_MMAP_THRESHOLD, DRFD_MMAP_MAX);
	mallopt(M_TRIM_THRESHOLD, DRFD_TRIM_MAX);
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t hard = rl.rlim_max;

		rl.rlim_cur = hard;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && getrlimit(RLIMIT_NOFILE, &rl) < 0)
			return 0;
	}
	if (rl.rlim_cur == RLIM_INFINITY)
		return SIZE_MAX;
	return rl.rlim_cur > 2 * DRFD_FILES_RESERVED ? (size_t)rl.rlim_cur - DRFD_FILES_RESERVED
						     : 0;
}

/* The measurements of every tenant, against the plan in force. */
/* What the sample reads, as of now. */
static void sample_in(const struct drfd *d, struct drf_usage_in *in)
{
	*in = (struct drf_usage_in){
		.cfg = &d->decl.cfg, .plan = &d->plan, .io = d->has_io ? &d->io : NULL,
		.net = d->has_net ? &d->net : NULL, .now_us = drf_mono_usec(d->env->clock),
	};
	/* PSI: for observed demand, the metrics-file or endpoint, and a status or metrics asked
	 * for lately. */
	in->pressure = d->decl.cfg.observed || d->decl.cfg.metrics_file || d->http ||
		       in->now_us < d->asked_until_us;
}

/*
 * The tick's sample, for DRFD_SAMPLE_USEC at most a turn, DRFD_SAMPLE_TENANTS
 * tenants at a time: true once it is whole. Without an event loop, all at once.
 */
#define DRFD_SAMPLE_TENANTS 16
#define DRFD_SAMPLE_USEC (20 * 1000)
static bool sample_step(struct drfd *d)
{
	uint64_t t0 = drf_mono_usec(d->env->clock);
	struct drf_usage_in in;

	do {
		sample_in(d, &in);
		if (drf_usage_sample_step(&d->use, &in, DRFD_SAMPLE_TENANTS) == 0)
			return true;
	} while (!d->event || in.now_us - t0 < DRFD_SAMPLE_USEC);
	sd_event_source_set_enabled(d->sample_src, SD_EVENT_ONESHOT);
	return false;
}

void drfd_asked(struct drfd *d)
{
	d->asked_until_us = drf_mono_usec(d->env->clock) + DRFD_ASKED_US;
}

void drfd_view(const struct drfd *d, struct drf_view *ret)
{
	*ret = (struct drf_view){
		.config_path = d->config_path, .root = d->root, .pid = (int)getpid(),
		.decl = &d->decl, .plan = &d->plan, .rc = &d->rc, .last = &d->last, .fs = d->fs,
		.net = d->has_net ? &d->net : NULL, .use = &d->use, .online = &d->online,
		.state_path = d->state_path, .state_err = d->state_err, .started = d->started,
		.last_tick = d->last_tick, .now = drf_real_usec(d->env->clock), .ticks = d->ticks,
		.reloads = d->reloads, .reloads_refused = d->reloads_refused,
		.reload_ok = d->reload_ok, .reload_at = d->reload_at, .reload_ok_at = d->reload_ok_at,
		.reload_error = d->reload_error, .start = &d->start,
	};
	if (d->http) {
		struct drfd_http_stats h;

		drfd_httpd_stats(d->http, &h);
		ret->http = (struct drf_http_stats){
			.on = true, .conns = h.connections, .ok = h.ok, .not_found = h.not_found,
			.not_allowed = h.not_allowed, .unavailable = h.unavailable,
			.past_deadline = h.past_deadline, .evicted = h.evicted,
		};
	}
	drfd_loop_stats(&d->loop, drf_mono_usec(d->env->clock), &ret->loop);
	for (size_t i = 0; i < d->n_features; i++)
		if (d->features[i]->view)
			d->features[i]->view(d, ret);
	if (d->tasks)
		ret->tasks = (struct drf_view_tasks){
			.on = true, .started_total = d->tasks->started_total,
			.finished_total = d->tasks->finished_total,
			.truncated_total = d->tasks->truncated_total,
			.output_max = d->decl.cfg.task_output_max,
		};
	/* The root's ancestors: a few reads, as many as it is deep. */
	if (d->plan.root && d->plan.root->set[DRF_KNOB_MEMORY_LOW]) {
		const char *low = d->plan.root->val[DRF_KNOB_MEMORY_LOW];

		drf_protection_cap(d->env->host, d->root,
				   strcmp(low, "max") == 0 ? ULLONG_MAX : strtoull(low, NULL, 10),
				   &ret->prot);
	}
}

static int task_ready(void *ctx, const char *cg, const struct drf_knobs **limits, char *why,
		      size_t len)
{
	*limits = drf_reconciler_want(ctx, cg);
	return drf_reconciler_ready(ctx, cg, why, len);
}

/* Work that waits for the pass in progress to end (drfd_when_settled). */
struct drfd_settled {
	struct drfd_settled *next;
	void (*fn)(struct drfd *d, void *data);
	void *data;
};

/* The next step of the pass, a turn of its own when the loop runs. */
static void step_later(struct drfd *d)
{
	if (d->enforce_src)
		sd_event_source_set_enabled(d->enforce_src, SD_EVENT_ONESHOT);
}

static void pass_done(struct drfd *d, const struct drf_reconcile_stats *st);
static void enforce(struct drfd *d, size_t verify);

/*
 * A step of the pass in progress. Without an event loop (tests, a dry run)
 * the pass goes on to its end at once: nothing else would step it.
 */
static void enforce_step(struct drfd *d)
{
	struct drf_reconcile_stats st;

	for (;;) {
		switch (drf_reconcile_step(&d->rc, &st)) {
		case DRF_PASS_DONE:
			pass_done(d, &st);
			return;
		case DRF_PASS_MORE:
			if (!d->event)
				continue;
			step_later(d);
			return;
		case DRF_PASS_WAITING:
			/*
			 * An outcome wakes the loop (reconciler_wake); one that came
			 * already is taken here. Without a loop none would come later.
			 */
			if (d->rc.applied)
				continue;
			return;
		}
	}
}

static void reconciler_wake(void *ctx)
{
	step_later(ctx);
}

static int on_enforce(sd_event_source *s, void *userdata)
{
	struct drfd *d = userdata;

	(void)s;
	drfd_loop_doing(&d->loop, "enforce");
	if (drf_reconcile_busy(&d->rc))
		enforce_step(d);
	else if (d->repass) {
		/* Tasks left to pick or start by the pass that ended: another, its own turn. */
		d->repass = false;
		enforce(d, 0);
	}
	return 0;
}

/*
 * The backends' part of a tick, or of a new plan: the queue's tasks that
 * ended and those that start now, the plan again if an input changed, and a
 * pass of the reconciler over it (reading back `verify` tenants), stepped
 * until its end; then (pass_done) the network, and the tasks whose cgroups
 * are ready.
 */
static void enforce(struct drfd *d, size_t verify)
{
	if (d->tasks) {
		drf_tasks_reap(d->tasks);
		drf_tasks_pick(d->tasks, &d->decl.cfg, d->decl.problem.capacity);
	}
	replan(d);
	if (!drf_reconcile_busy(&d->rc))
		d->pass_verify = 0;
	if (verify > d->pass_verify)
		d->pass_verify = verify;
	drf_reconcile_begin(&d->rc, verify);
	enforce_step(d);
}

/* The end of a pass: the network, the tasks, and what waited for it. */
static void pass_done(struct drfd *d, const struct drf_reconcile_stats *st)
{
	struct drfd_settled *w;
	uint64_t now = drf_mono_usec(d->env->clock);
	size_t waiting = 0;
	bool busy;

	/* The network after the cgroups: its map entries need the tenants' cgroups. */
	if (d->has_net)
		drf_shaper_tick(&d->net, now, d->pass_verify, &d->net_last);
	d->last = *st;
	if (d->tasks) {
		/* The config's in force: a reload's cap holds for the tasks started after it. */
		d->tasks->output_max = d->decl.cfg.task_output_max;
		drf_tasks_launch(d->tasks, task_ready, &d->rc);
		/* Tasks that could not start leave the plan now, with their cgroups: a pass more. */
		if (d->tasks->generation != d->planned_tasks) {
			replan(d);
			d->pass_verify = 0;
			drf_reconcile_begin(&d->rc, 0);
			enforce_step(d);
			return;
		}
	}
	busy = st->writes || st->created || st->recreated || st->foreign || st->errors ||
	       st->removed || (d->has_net && (d->net_last.writes || d->net_last.errors));
	drf_log(d->log, busy ? LOG_INFO : LOG_DEBUG,
		"tick %llu: %zu tenants, %u verified, %u written, %u created, %u recreated, "
		"%u changed by others, %u waiting for memory to drop, %u errors, %u retrying, "
		"%zu orphans; %u step%s", (unsigned long long)d->ticks, d->rc.n, st->verified,
		st->writes, st->created, st->recreated, st->foreign, st->pending, st->errors,
		st->retrying, d->rc.n_orphans, st->steps, st->steps == 1 ? "" : "s");
	if (d->has_net && (d->net_last.writes || d->net_last.errors))
		drf_log(d->log, LOG_INFO, "tick %llu: network on %s: %u written, %u errors, %u "
					  "retrying",
			(unsigned long long)d->ticks, d->net.ifname, d->net_last.writes,
			d->net_last.errors, d->net_last.retrying);
	notify_status(d);
	/*
	 * A burst of tasks: this pass picked or started only its share of them
	 * (tasks.h): the next pass at once, in a turn of its own (with a loop).
	 */
	if (d->tasks && d->event && (d->tasks->pick_more || d->tasks->launch_more)) {
		d->repass = true;
		step_later(d);
	}
	/*
	 * What waited for this pass, one at a time off the list (a waiter may
	 * cancel another); one that adds a waiter adds it for the next pass.
	 */
	for (w = d->settled; w; w = w->next)
		waiting++;
	while (waiting-- > 0 && (w = d->settled)) {
		d->settled = w->next;
		w->fn(d, w->data);
		free(w);
	}
}

int drfd_when_settled(struct drfd *d, void (*fn)(struct drfd *d, void *data), void *data)
{
	struct drfd_settled *w, **end = &d->settled;

	if (!drf_reconcile_busy(&d->rc)) {
		fn(d, data);
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fn = fn;
	w->data = data;
	while (*end)
		end = &(*end)->next;
	*end = w;
	return 0;
}

void drfd_settled_cancel(struct drfd *d, void *data)
{
	for (struct drfd_settled **p = &d->settled; *p;) {
		struct drfd_settled *w = *p;

		if (w->data == data) {
			*p = w->next;
			free(w);
			continue;
		}
		p = &w->next;
	}
}

void drfd_settle(struct drfd *d)
{
	enforce(d, 0);
}

void drfd_finish_pass(struct drfd *d)
{
	while (drf_reconcile_busy(&d->rc) && d->event && sd_event_run(d->event, UINT64_MAX) >= 0)
		;
	/* No loop to wait on, or a broken one: whatever is left, at once. */
	if (drf_reconcile_busy(&d->rc)) {
		struct drf_reconcile_stats st;

		drf_reconcile_tick(&d->rc, 0, &st);
		pass_done(d, &st);
	}
}

/*
 * The metrics, rendered once: the metrics-file, and the HTTP endpoint's text
 * from now on. Without either, a file written before is removed.
 */
static void publish_metrics(struct drfd *d)
{
	const struct drf_config *c = &d->decl.cfg;
	struct drf_view v;
	char *text = NULL;
	size_t len = 0;
	int r = 0;

	if (c->metrics_file || d->http) {
		drfd_view(d, &v);
		r = drf_metrics_render_text(&v, c->metrics_detail, &text, &len);
	}
	drf_metrics_write_text(&d->metrics, c->metrics_file, text, len, r);
	if (d->http && r == 0) {
		drfd_httpd_publish(d->http, text, len);
		text = NULL;
	}
	free(text);
}

/*
 * The rest of a tick, once its sample is whole: observed demand's step (and
 * a plan of its own if an effective demand changed), the history, the
 * metrics, the state file, and the next tick an interval from now.
 */
static void tick_end(struct drfd *d)
{
	if (drf_online_step(&d->online, &d->use, &d->decl, &d->plan)) {
		d->replan = true;
		enforce(d, 0);
	}
	drf_history_tick(&d->history, &d->use, d->last_tick);
	if (!d->dry_run)
		publish_metrics(d);
	if (drf_reconciler_membership_changed(&d->rc) || d->state_err)
		save_state(d);
	notify_status(d);
	if (d->timer && sd_event_source_set_time_relative(d->timer, d->decl.cfg.interval_us) >= 0)
		sd_event_source_set_enabled(d->timer, SD_EVENT_ONESHOT);
}

/*
 * One tick: enforce the plan in force (cgroup knobs, the task queue, the
 * network: a pass of the reconciler, pass_done), sample every tenant (cgroup
 * files, BPF maps) in steps, then tick_end. The pass's log line is the tick's.
 */
void drfd_tick(struct drfd *d, size_t verify)
{
	struct drf_usage_in in;

	d->ticks++;
	enforce(d, verify);
	d->last_tick = drf_real_usec(d->env->clock);
	sample_in(d, &in);
	drf_usage_sample_begin(&d->use, &in);
	if (sample_step(d))
		tick_end(d);
}

static int on_sample(sd_event_source *s, void *userdata)
{
	struct drfd *d = userdata;

	(void)s;
	drfd_loop_doing(&d->loop, "tick");
	if (sample_step(d))
		tick_end(d);
	return 0;
}

/*
 * A device drfd shaped before the restart and no longer does (the config lost
 * its network capacities, or names another device): its qdisc and the pinned
 * programs would go on shaping and policing the tenants. Removed, as drfctl
 * net-reset would.
 */
static void stale_net(struct drfd *d, const char *ifname)
{
	const struct drfd_env *env = d->env;
	char mount[4096] = "", pin[256];
	struct drf_shaper s;
	pid_t holder = 0;
	uint32_t level;
	int r, lock;

	if (d->dry_run) {
		printf("net-reset %s (no longer shaped)\n", ifname);
		return;
	}
	/* Another drfd may shape it now: then its qdisc is that one's, and stays. */
	lock = drf_lock_device(ifname, DRF_LOCK_DIR, &holder);
	drf_cgroup2_mount_of(d->root, mount, sizeof(mount));
	r = drf_pin_paths(d->root, mount[0] ? mount : "/sys/fs/cgroup", &level, pin, sizeof(pin));
	if (r == 0 && !env->tc)
		r = -ENOTCONN;
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "cannot remove drfd's qdisc and programs from '%s', no "
					 "longer shaped: %s (with drfd stopped, drfctl net-reset "
					 "--device %s does it)", ifname, strerror(-r), ifname);
		if (lock >= 0)
			close(lock);
		return;
	}
	r = drf_shaper_init(&s, ifname, env->tc, env->tc_ctx, env->netbpf, env->netbpf_ctx, d->fs,
			    pin, level, NULL);
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
}

/* STATE_DIR/ROOT-ESCAPED and suffix, beside the state file; NULL without one. */
static const char *beside_state(const struct drfd *d, const char *suffix, char *buf, size_t len)
{
	if (!d->state_path[0] ||
	    drf_statedir_path(d->decl.cfg.state_dir, d->root, suffix, buf, len) < 0)
		return NULL;
	return buf;
}

int drfd_start(struct drfd *d, struct drf_reconcile_stats *ret)
{
	const struct drf_config *c = &d->decl.cfg;
	struct drf_usage_tenants use;
	struct drf_state_entry *e = NULL;
	struct drf_start_keys keys;
	char path[4200];
	size_t n = 0, skipped = 0;
	struct drf_plan p;
	int r;

	d->log = d->env->log;
	d->fs = d->env->fs;
	d->dry_run = d->env->dry_run;
	d->started = drf_real_usec(d->env->clock);
	d->listen_fd = -1;
	drfd_loop_init(&d->loop, d->env->clock, d->env->log);
	/* What drfd sets up once, from the config it starts with: a reload compares with it. */
	drf_start_keys_of(c, &keys);
	if (!d->has_io)
		keys.io_device = NULL;
	keys.net_device = d->has_net ? d->net.ifname : NULL;
	drf_start_keys_free(&d->start);
	r = drf_start_keys_dup(&keys, &d->start);
	if (r < 0)
		return r;
	d->reload_ok = true;
	d->reload_ok_at = d->started;
	r = drf_engine_init(&d->engine);
	if (r < 0)
		return r;
	/* Slices: no memory worker thread, as the bus is used from this thread only. */
	r = drf_reconciler_init(&d->rc, d->fs, d->has_io ? &d->io : NULL, d->log,
				!d->dry_run && !d->decl.cfg.slices,
				(unsigned long)sysconf(_SC_PAGESIZE));
	if (r < 0)
		return r;
	d->rc.by_systemd = d->decl.cfg.slices;
	d->rc.tasks_by_spawn = d->decl.cfg.slices;
	d->rc.clock = d->env->clock;
	d->rc.wake = reconciler_wake;
	d->rc.wake_ctx = d;
	/* Below the sockets' priority: they are served between two steps. */
	if (d->event &&
	    ((r = sd_event_add_defer(d->event, &d->enforce_src, on_enforce, d)) < 0 ||
	     (r = sd_event_source_set_priority(d->enforce_src,
					       SD_EVENT_PRIORITY_NORMAL + 20)) < 0 ||
	     (r = sd_event_source_set_enabled(d->enforce_src, SD_EVENT_OFF)) < 0 ||
	     (r = sd_event_source_set_description(d->enforce_src, "enforce")) < 0 ||
	     (r = sd_event_add_defer(d->event, &d->sample_src, on_sample, d)) < 0 ||
	     (r = sd_event_source_set_priority(d->sample_src, SD_EVENT_PRIORITY_NORMAL + 20)) < 0 ||
	     (r = sd_event_source_set_enabled(d->sample_src, SD_EVENT_OFF)) < 0 ||
	     (r = sd_event_source_set_description(d->sample_src, "sample")) < 0))
		return r;
	if (c->state_dir &&
	    drf_statedir_path(c->state_dir, d->root, ".state", d->state_path,
			      sizeof(d->state_path)) < 0) {
		drf_log(d->log, LOG_ERR, "state-dir '%s': path too long; running without a state "
					 "file", c->state_dir);
		d->state_path[0] = '\0';
	}
	drf_usage_init(&d->use, d->fs, d->log);
	d->use.max_held = d->env->held_files;
	r = drf_usage_stage(&d->use, c, &use);
	if (r < 0)
		return r;
	drf_usage_commit(&d->use, &use);
	if (!d->env->probe && d->env->probes_why)
		snprintf(d->use.probes_why, sizeof(d->use.probes_why), "%s", d->env->probes_why);
	if (d->env->probe)
		drf_usage_start_probes(&d->use, d->env->probe, d->env->probe_ctx,
				       d->env->probe_pin_dir, d->env->root_level,
				       (uint32_t)(drf_real_usec(d->env->clock) / 1000));
	/* Beside the state file: the effective demands, and the usage history (not in a dry run). */
	drf_online_init(&d->online, beside_state(d, ".demand", path, sizeof(path)), d->dry_run,
			d->log);
	drf_history_init(&d->history, d->dry_run ? NULL : beside_state(d, ".history", path,
									sizeof(path)), d->log);
	drf_metrics_file_init(&d->metrics, d->log);
	/* Observed demand: the effective demands of before the restart, before any write. */
	if (c->observed)
		drf_online_restore(&d->online, &d->use, &d->decl);
	for (size_t i = 0; i < d->n_features; i++)
		if (d->features[i]->started)
			d->features[i]->started(d);
	/* What drfd managed before: departed tenants, the device it shaped, class minors. */
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
			if (e[i].netdev && (!d->has_net || strcmp(e[i].name, d->net.ifname) != 0))
				stale_net(d, e[i].name); /* shaped before: no longer, or another */
			else if (e[i].net_minor && d->has_net)
				/* A tenant's class minor: the same class after the restart. */
				drf_shaper_remember(&d->net, e[i].name, (uint16_t)e[i].net_minor);
		}
	}
	r = build(d, &d->decl, d->use.t, &p);
	if (r == 0) {
		r = apply(d, &p);
		if (r < 0)
			drf_plan_free(&p);
	}
	if (r < 0) {
		drf_state_free(e, n);
		return r;
	}
	install(d, &p);
	/* Cgroups of tenants that left the config while drfd was down. */
	for (size_t i = 0; i < n; i++)
		if (!e[i].netdev && !e[i].net_minor &&
		    drf_reconciler_forget(&d->rc, e[i].name, e[i].cgroup) < 0)
			drf_log(d->log, LOG_ERR, "cannot track departed tenant '%s': out of memory",
				e[i].name);
	drf_state_free(e, n);
	d->verify = drf_verify_per_tick(d->rc.n + d->rc.n_inner, c->interval_us,
					c->verify_period_us);
	drfd_tick(d, SIZE_MAX);
	drf_reconciler_membership_changed(&d->rc);
	save_state(d);
	if (ret)
		*ret = d->last;
	return 0;
}

/* Appends to buf (of len) what fmt says, as much as fits. */
static void appendf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void appendf(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strnlen(buf, len);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

/*
 * What of a reloaded config needs a restart (startkeys.h, against the keys in
 * force since the start), or a controller the host does not pass down; 0, or
 * -EINVAL with why.
 */
static int needs_restart(const struct drfd *d, const struct drf_config *n, char *err,
			 size_t len)
{
	struct drf_start_change ch[DRF_START_KEYS_MAX];
	struct drf_start_keys k;
	size_t nch, restart = 0;
	char what[1024];

	drf_start_keys_of(n, &k);
	nch = drf_start_keys_diff(&d->start, &k, ch);
	snprintf(err, len, "%s: ", d->config_path);
	for (size_t i = 0; i < nch; i++) {
		if (!ch[i].restart)
			continue;
		drf_start_change_text(&ch[i], what, sizeof(what));
		appendf(err, len, "%s%s", restart++ ? "; " : "", what);
	}
	if (restart) {
		appendf(err, len, "; %s a restart (systemctl restart drfd)",
			restart == 1 ? "that needs" : "those need");
		return -EINVAL;
	}
	err[0] = '\0';
	/* A reload may add a resource whose controller the host does not pass down. */
	if (d->env->check_cgroup && d->env->check_cgroup(n, d->root, err, len) < 0)
		return -EINVAL;
	return 0;
}

struct impossible_ctx {
	const struct drf_logger *log;
	size_t n;
};

#define IMPOSSIBLE_LOGGED 10 /* a config of thousands of them is said in a few lines */

static void impossible_note(void *ctx, const char *file, int line, const char *what)
{
	struct impossible_ctx *c = ctx;

	if (c->n++ < IMPOSSIBLE_LOGGED)
		drf_log(c->log, LOG_WARNING, "%s:%d: %s", file, line, what);
}

void drfd_log_impossible(struct drfd *d)
{
	struct impossible_ctx c = { .log = d->log };
	size_t n = drf_config_impossible(&d->decl.cfg, impossible_note, &c);

	if (n > IMPOSSIBLE_LOGGED)
		drf_log(d->log, LOG_WARNING, "%zu more demands no capacity meets "
			"(drfctl plan lists them all)", n - IMPOSSIBLE_LOGGED);
}

/* The start-only keys the reload in force changed and ignores: said at warning. */
static void log_ignored(const struct drfd *d)
{
	struct drf_start_change ch[DRF_START_KEYS_MAX];
	struct drf_start_keys k;
	size_t nch;
	char what[1024];

	drf_start_keys_of(&d->decl.cfg, &k);
	nch = drf_start_keys_diff(&d->start, &k, ch);
	for (size_t i = 0; i < nch; i++) {
		if (ch[i].restart)
			continue;
		drf_start_change_text(&ch[i], what, sizeof(what));
		drf_log(d->log, LOG_WARNING, "%s: %s: %s is read only at start, so this reload "
					     "ignores it (a restart applies it)", d->config_path, what,
			ch[i].key);
	}
}

/* The verdict of a reload, for status and metrics. */
static void verdict(struct drfd *d, bool ok)
{
	d->reload_at = drf_real_usec(d->env->clock);
	d->reload_ok = ok;
	if (ok)
		d->reload_ok_at = d->reload_at;
}

int drfd_reload(struct drfd *d)
{
	struct drf_declared n = { 0 };
	struct drf_usage_tenants use = { 0 };
	struct drf_plan p = { 0 };
	struct drfd_http_stage http = { 0 };
	char *err = d->reload_error;
	size_t len = sizeof(d->reload_error);
	bool was_observed = d->decl.cfg.observed;
	int r;

	if (d->fleet_mode)
		r = drf_declared_load_assigned(&n, d->config_path, d->env->host, d->assigned,
					       d->n_assigned, d->assigned_source, err, len);
	else
		r = drf_declared_load(&n, d->config_path, d->env->host, err, len);
	if (r == 0 && n.cfg.fleet.on != d->fleet_mode) {
		snprintf(err, len, "%s: [fleet] %s; that needs a restart", d->config_path,
			 d->fleet_mode ? "removed" : "added");
		drf_declared_free(&n);
		r = -EINVAL;
	}
	if (r == 0)
		r = needs_restart(d, &n.cfg, err, len);
	/* The measurements of the new tenants, by name: the effective demands' history. */
	if (r == 0 && (r = drf_usage_stage(&d->use, &n.cfg, &use)) < 0)
		snprintf(err, len, "out of memory");
	if (r == 0 && (r = build(d, &n, use.t, &p)) < 0)
		snprintf(err, len, "%s: cannot plan: %s", d->config_path,
			 r == -ENOSPC ? "more tenants than HTB class ids (65519)" : strerror(-r));
	/* The endpoint last but for the plan: a failure to bind refuses the reload whole. */
	if (r == 0)
		r = drfd_http_stage(d, &n.cfg, &http, err, len);
	if (r == 0 && (r = apply(d, &p)) < 0) {
		snprintf(err, len, "%s: cannot put the plan in force: %s", d->config_path,
			 r == -ENOSPC ? "more tenants than HTB class ids (65519)" : strerror(-r));
		drfd_http_unstage(d, &http);
	}
	if (r < 0) {
		drf_plan_free(&p);
		drf_usage_unstage(&use);
		drf_declared_free(&n);
		d->reloads_refused++;
		verdict(d, false);
		drf_log_lines(d->log, LOG_ERR, "reload refused, keeping the configuration in force: ",
			      err);
		return r;
	}
	/* In force: the new config, its plan, its tenants' measurements. */
	err[0] = '\0';
	drf_declared_free(&d->decl);
	d->decl = n;
	install(d, &p);
	drf_usage_commit(&d->use, &use);
	drfd_http_commit(d, &http);
	if (was_observed && !d->decl.cfg.observed)
		drf_online_off(&d->online, &d->use);
	d->reloads++;
	verdict(d, true);
	drf_log(d->log, LOG_NOTICE, "reloaded %s: %zu tenants", d->config_path,
		d->decl.cfg.n_tenants);
	log_ignored(d);
	drfd_log_impossible(d);
	for (size_t i = 0; i < d->n_features; i++)
		if (d->features[i]->reloaded)
			d->features[i]->reloaded(d);
	drfd_log_plan(d->log, &d->plan, d->has_io ? &d->io : NULL);
	d->verify = drf_verify_per_tick(d->rc.n + d->rc.n_inner, d->decl.cfg.interval_us,
					d->decl.cfg.verify_period_us);
	/*
	 * The changed knobs now, not after a verifying round; the measurements,
	 * history and metrics at the next tick (they would cost the reload as
	 * much again as all the rest at 10,000 tenants).
	 */
	drfd_settle(d);
	if (drf_reconciler_membership_changed(&d->rc) || d->state_err)
		save_state(d);
	return 0;
}

static void tenants_free(struct drf_tenant *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(t[i].cgroup);
	free(t);
}

void drfd_assigned_free(struct drfd *d)
{
	tenants_free(d->assigned, d->n_assigned);
	d->assigned = NULL;
	d->n_assigned = 0;
}

int drfd_assign(struct drfd *d, const struct drf_tenant *tenants, size_t n, const char *source)
{
	struct drf_tenant *was = d->assigned, *t = calloc(n + 1, sizeof(*t));
	size_t was_n = d->n_assigned;
	char was_source[sizeof(d->assigned_source)];
	int r;

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		t[i] = tenants[i];
		t[i].file = NULL;
		t[i].cgroup = tenants[i].cgroup ? strdup(tenants[i].cgroup) : NULL;
		if (tenants[i].cgroup && !t[i].cgroup) {
			tenants_free(t, i);
			return -ENOMEM;
		}
	}
	memcpy(was_source, d->assigned_source, sizeof(was_source));
	d->assigned = t;
	d->n_assigned = n;
	snprintf(d->assigned_source, sizeof(d->assigned_source), "%s", source);
	r = drfd_reload(d);
	if (r < 0) {
		/* Refused: the assignment in force stays. */
		tenants_free(t, n);
		d->assigned = was;
		d->n_assigned = was_n;
		memcpy(d->assigned_source, was_source, sizeof(was_source));
		return r;
	}
	tenants_free(was, was_n);
	return 0;
}

static void reloaded_ready(struct drfd *d, void *data)
{
	(void)d;
	(void)data;
	sd_notify(0, "READY=1");
}

int drfd_reload_asked(struct drfd *d)
{
	int r;

	sd_notify(0, "RELOADING=1");
	r = drfd_reload(d);
	/* Reloading until the new plan's writes are made (or failed, to be retried). */
	if (drfd_when_settled(d, reloaded_ready, NULL) < 0)
		sd_notify(0, "READY=1");
	return r;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct drfd *d = userdata;

	(void)s;
	(void)usec;
	drfd_loop_doing(&d->loop, "tick");
	/* The next tick is set when this one's sample is whole (tick_end). */
	drfd_tick(d, d->verify);
	return 0;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct drfd *d = userdata;

	(void)s;
	if (si->ssi_signo == SIGHUP) {
		drfd_loop_doing(&d->loop, "reload");
		drfd_reload_asked(d);
		return 0;
	}
	drf_log(d->log, LOG_NOTICE, "%s: exiting; the limits stay in place",
		strsignal((int)si->ssi_signo));
	drf_online_save(&d->online, &d->use, &d->decl);
	drf_metrics_stop(&d->metrics);
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
			drf_log(d->log, LOG_ERR, "cannot watch %s: %s", strsignal(sigs[i]),
				strerror(-r));
			return 1;
		}
	}
	r = sd_event_add_time_relative(d->event, &d->timer, CLOCK_MONOTONIC,
				       d->decl.cfg.interval_us, 0, on_timer, d);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "cannot set up the tick timer: %s", strerror(-r));
		return 1;
	}
	/* With WatchdogSec= in the unit, systemd restarts a drfd that stops ticking. */
	sd_event_set_watchdog(d->event, true);
	r = drfd_loop_run(&d->loop, d->event);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "event loop failed: %s", strerror(-r));
		return 1;
	}
	return d->exit_code;
}

int drfd_add_feature(struct drfd *d, const struct drfd_feature *f)
{
	if (d->n_features >= DRFD_FEATURES_MAX)
		return -E2BIG;
	d->features[d->n_features++] = f;
	return 0;
}

void drfd_free(struct drfd *d)
{
	/* The features first (the fleet's etcd calls end while the loop is whole). */
	for (size_t i = 0; i < d->n_features; i++)
		if (d->features[i]->free)
			d->features[i]->free(d);
	while (d->settled) {
		struct drfd_settled *w = d->settled;

		d->settled = w->next;
		free(w);
	}
	d->enforce_src = sd_event_source_disable_unref(d->enforce_src);
	d->sample_src = sd_event_source_disable_unref(d->sample_src);
	drf_reconciler_free(&d->rc);
	drf_usage_free(&d->use);
	drf_online_free(&d->online);
	drf_history_free(&d->history);
	if (d->has_net)
		drf_shaper_free(&d->net);
	d->timer = sd_event_source_unref(d->timer);
	drfd_httpd_free(d->http);
	d->http = NULL;
	d->event = sd_event_unref(d->event);
	drf_plan_free(&d->plan);
	drf_engine_free(&d->engine);
	drf_declared_free(&d->decl);
	drf_start_keys_free(&d->start);
	free(d->root);
	drfd_assigned_free(d);
}
