/* SPDX-License-Identifier: MIT */
/*
 * The running daemon: a thin loop over one planner (planner.h).
 *
 *   reload:  config -> declared plan; with the measurements and the task queue
 *            -> the plan in force, handed to each backend once, or refused
 *            whole (nothing changes)
 *   tick:    reconcile -> sample -> observed demand -> when an input of the
 *            plan changed, the plan again, handed to each backend once -> the
 *            history, the metrics, the state file, one log line
 *
 * Every side effect goes through the ops of one environment (struct
 * drfd_env), built in main(): the real system, or recording fakes (a dry run,
 * the unit tests).
 */
#ifndef DRF_DAEMON_H
#define DRF_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "cgroupfs.h"
#include "clock.h"
#include "histfile.h"
#include "host.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "netbpf.h"
#include "online.h"
#include "planner.h"
#include "probebpf.h"
#include "reconcile.h"
#include "shaper.h"
#include "startkeys.h"
#include "tasks.h"
#include "tc.h"
#include "usage.h"
#include "view.h"

struct drfd_listener;
struct drfd_httpd;
struct drfd_http_ops;
struct drfd;

/*
 * A feature drfd carries beside its loop (the fleet, the task queue, the
 * sockets): its hooks, which daemon.c calls at its moments, each feature's in
 * the order they were added (featureset.c adds them all); a hook may be NULL.
 * daemon.c knows no feature by name: a feature calls the daemon, never the
 * other way round.
 */
struct drfd_feature {
	const char *name;
	void (*started)(struct drfd *d);      /* the state restored, before the first pass */
	void (*reloaded)(struct drfd *d);     /* a reload put its config in force */
	void (*view)(const struct drfd *d, struct drf_view *ret); /* its part of the reports */
	void (*free)(struct drfd *d);         /* at exit, first, while the loop is whole */
};
#define DRFD_FEATURES_MAX 8

/* Every side effect of the daemon, as ops: built once in main(). */
struct etcd;
struct etcd_config;
struct sd_event;

struct drfd_env {
	const struct drf_logger *log;
	const struct drf_clock *clock;
	const struct drf_host_ops *host;        /* `auto` capacities */
	/* Whether the host passes c's controllers down to root (hostcheck.h). */
	int (*check_cgroup)(const struct drf_config *c, const char *root, char *err, size_t len);
	struct cgfs *fs;                        /* cgroup-root */
	const struct drf_tc_ops *tc;            /* NULL: no netlink */
	void *tc_ctx;
	const struct drf_netbpf_ops *netbpf;
	void *netbpf_ctx;
	const struct drf_probe_ops *probe;      /* NULL: no usage probes */
	void *probe_ctx;
	const char *probe_pin_dir;              /* where the probes are pinned */
	const char *probes_why;                 /* without probes: why, or NULL */
	uint32_t root_level;                    /* cgroup-root's level in its hierarchy */
	size_t held_files;                      /* counter files the measurements may hold open */
	const struct drfd_http_ops *http;       /* NULL: no metrics endpoint (httpd.h) */
	void *http_ctx;
	const struct drfd_http_limits *http_limits; /* NULL: httpd.h's (tests change them) */
	const struct drf_spawn_ops *spawn;      /* NULL: no task queue */
	void *spawn_ctx;
	/* The fleet's etcd client ([fleet]): as etcd_open() (etcd.h); NULL: etcd_open itself. */
	int (*etcd_open)(void *ctx, const struct etcd_config *c, struct sd_event *event,
			 struct etcd **ret, char *err, size_t len);
	void *etcd_ctx;
	bool dry_run;
};

struct drf_fleet_node;
struct drf_fleet_status;
struct drfd_fleet_task;

struct drfd {
	const struct drfd_env *env;
	const struct drf_logger *log;   /* env->log */
	struct cgfs *fs;                /* env->fs */
	const char *config_path;
	bool dry_run;
	struct drf_declared decl;       /* the config in force, and its declared plan */
	struct drf_plan plan;           /* the plan in force */
	struct drf_engine engine;       /* the planner's allocation memory */
	bool replan;                    /* an input of the plan changed since it was built */
	uint64_t planned_tasks;         /* the task queue's generation the plan holds */
	uint64_t plans;                 /* plans put in force */
	struct drf_io_target io;
	bool has_io;
	char *root;                     /* the resolved cgroup-root */
	struct drf_reconciler rc;
	char state_path[4096];          /* "" when there is no state file */
	size_t verify;                  /* tenants read back per tick */
	sd_event *event;
	struct drfd_loop loop;          /* its turns, timed (loop.h) */
	sd_event_source *timer;
	sd_event_source *enforce_src;   /* the next step of the reconciler's pass (a defer) */
	bool repass;                     /* after this pass, another (tasks left to pick, start) */
	sd_event_source *sample_src;    /* the next step of the tick's sample (a defer) */
	size_t pass_verify;             /* the tenants that pass reads back */
	struct drfd_settled *settled;   /* what waits for the pass to end (drfd_when_settled) */
	const struct drfd_feature *features[DRFD_FEATURES_MAX]; /* drfd_add_feature() */
	size_t n_features;
	sd_event_source *listen_src;
	int listen_fd;
	char *socket_path;              /* the socket drfd bound, to unlink at exit */
	struct drfd_listener *listener; /* its connections and limits (listener.c) */
	struct drfd_listener *root_listener; /* root's own socket beside it (proto.h) */
	uint64_t started;               /* CLOCK_REALTIME, usec */
	uint64_t last_tick;             /* CLOCK_REALTIME, usec; 0 before the first */
	uint64_t asked_until_us;        /* CLOCK_MONOTONIC: a status or metrics was asked for
					 * lately; the pressure files are read until then */
	uint64_t ticks;                 /* drfd_tick()s since start (one per interval, at
	                                 * start and at each reload), whatever the passes */
	uint64_t reloads, reloads_refused;
	char reload_error[1024];        /* why the last reload was refused; "" */
	bool reload_ok;                 /* the last reload (or the start) put its config in force */
	uint64_t reload_at;             /* CLOCK_REALTIME, usec, of the last reload; 0: none yet */
	uint64_t reload_ok_at;          /* of the last one that succeeded, or the start */
	struct drf_start_keys start;    /* the start-only keys in force (startkeys.h), owned */
	struct drf_reconcile_stats last;
	bool has_net;                   /* the config shares the network: the shaper runs */
	struct drf_shaper net;          /* set up by main(), with its ops */
	struct drf_shaper_stats net_last;
	struct drf_usage use;           /* measurements, against the plan in force */
	struct drf_online online;       /* observed demand: the effective demands (online.h) */
	struct drf_history history;     /* usage history for `drfctl recommend` (histfile.c) */
	struct drf_metrics_file metrics; /* [agent] metrics-file (metrics.c) */
	struct drfd_httpd *http;        /* [agent] metrics-listen (httpd.c); NULL: none */
	struct drf_listen_addr http_addr; /* where it listens */
	struct drf_tasks *tasks;        /* the task queue (tasks.h); NULL when off */
	int state_err;                  /* the last save of the state file failed: -errno; else 0 */
	char status_text[256];          /* last STATUS= sent to systemd */
	int exit_code;
	/* a fleet node ([fleet] in drfd.conf): its tenants are the fleet's assignment */
	bool fleet_mode;                /* set at start; a reload cannot change it */
	struct drf_tenant *assigned;    /* the assignment in force, owned (cgroup strings too) */
	size_t n_assigned;
	char assigned_source[128];      /* "fleet assignment of revision N" */
	struct drf_fleet_node *fleet;   /* fleetd.c; NULL: not a fleet node */
	struct drf_fleet_status *fleet_status; /* the view's copy (status, metrics) */
	sd_event_source *fleet_timer, *fleet_defer;
	char fleet_node[65];            /* this node's name */
	struct drf_tenant *fleet_pending; /* an assignment to put in force from the loop */
	size_t fleet_pending_n;
	int64_t fleet_pending_rev; /* its revision, for the node's verdict */
	char fleet_pending_source[128];
	struct drfd_fleet_task *fleet_tasks; /* fleet tasks handed over, until final (fleetd.c) */
	size_t fleet_tasks_n, fleet_tasks_cap;
	bool fleet_more;                     /* handed over, not yet queued: the next step soon */
};

/*
 * Takes d->decl (loaded by the caller) into force: the reconciler on
 * env->fs, the state file (cgroups of departed tenants become orphans or are
 * removed), the task queue, the plan, and the first tick, reading every knob
 * back. Returns 0 or -errno; the first tick's failures are in *ret.
 */
int drfd_start(struct drfd *d, struct drf_reconcile_stats *ret);

/*
 * Reload: the config at d->config_path again. A config that does not load, or
 * changes a start-only key that needs a restart (startkeys.h), or whose plan a
 * backend cannot take, is refused with why in d->reload_error and changes
 * nothing: -errno. Else the new plan is in force and written at once (a tick
 * with no verifying round): 0; a start-only key the reload ignores is logged at
 * warning. Either way the verdict and its time are kept for status and metrics.
 */
int drfd_reload(struct drfd *d);

/*
 * A fleet node's new assignment: its tenants (copied) become the tenants in
 * force, as a reload with them would (same checks; refused, the assignment in
 * force stays, with why in d->reload_error). source names it in errors and
 * status. 0 or -errno.
 */
int drfd_assign(struct drfd *d, const struct drf_tenant *tenants, size_t n, const char *source);
void drfd_assigned_free(struct drfd *d);

/*
 * A reload asked for (SIGHUP, or `drfctl reload` over the socket): systemd is
 * told RELOADING=1, then READY=1 whatever the verdict; drfd_reload()'s return.
 */
int drfd_reload_asked(struct drfd *d);

/*
 * One tick: reconcile, sample, re-plan when an input changed, history,
 * metrics, and the state file when the cgroups changed or its last save
 * failed. verify: tenants read back (SIZE_MAX: all). With an event loop the
 * pass and the sample are taken in steps, a turn each (the rest of the tick
 * follows the sample's last step, and sets the next tick an interval later);
 * without one, all at once.
 */
void drfd_tick(struct drfd *d, size_t verify);

/*
 * Asks the plan to be built again and put in force now (a task submitted):
 * the queue's pick, the plan, the backends' writes, the tasks' start.
 */
void drfd_settle(struct drfd *d);

/*
 * The backends' writes are a pass of the reconciler taken a step per turn of
 * the event loop (reconcile.h), so that the watchdog, the sockets and the
 * fleet's lease are served while a reload of 1,000 tenants lands. fn(d, data)
 * runs once the pass in progress has ended (its writes made, or failed and
 * retried from the next tick), at once when none is: a reload's answer,
 * READY=1. 0 or -ENOMEM. drfd_settled_cancel() drops the waits with data.
 */
struct drfd_settled;
int drfd_when_settled(struct drfd *d, void (*fn)(struct drfd *d, void *data), void *data);
/* The config in force's demands no capacity meets (drf_config_impossible), at warning. */
void drfd_log_impossible(struct drfd *d);
void drfd_settled_cancel(struct drfd *d, void *data);
/* The pass in progress run to its end, the loop run meanwhile (a dry run, --once). */
void drfd_finish_pass(struct drfd *d);

/*
 * What drfd sets for its process before it starts: the soft limit on open
 * files raised to the hard one, and malloc's thresholds for the tables a
 * reload builds (see daemon.c). Returns how many files the measurements may
 * hold open (drfd_env.held_files).
 */
size_t drfd_tune_process(void);

/* The event loop until SIGTERM/SIGINT; returns the exit code. */
int drfd_run(struct drfd *d);

void drfd_free(struct drfd *d);

/*
 * Serves the status socket at path (see listener.c); 0 or -errno with why:
 * -EADDRINUSE when another drfd serves it, -EEXIST when something other than a
 * socket is there (left untouched).
 */
int drfd_listen(struct drfd *d, const char *path, const char *group, char *why, size_t len);

/*
 * Serves root's own socket beside the status socket (drf_proto_root_socket()),
 * 0600, for root alone: the others' connections never keep root out of it.
 */
int drfd_listen_root(struct drfd *d, const char *status_socket, char *why, size_t len);

/* Closes the sockets and their connections; removes each socket if it is still drfd's. */
void drfd_unlisten(struct drfd *d);

/* Adds f's hooks (at most DRFD_FEATURES_MAX, before drfd_start()): 0, or -E2BIG. */
int drfd_add_feature(struct drfd *d, const struct drfd_feature *f);

/* What the reports (status, metrics) see of d: filled in when one is asked for. */
void drfd_view(const struct drfd *d, struct drf_view *ret);

/*
 * A status or metrics was asked for: the measurements the reports show and
 * nothing else needs (the pressure files, unless observed demand or a
 * metrics-file reads them anyway) are read for DRFD_ASKED_US from now on, so
 * that a watcher (drfctl top, a scrape) sees them from its second look.
 */
#define DRFD_ASKED_US (300 * DRF_USEC_PER_SEC)
void drfd_asked(struct drfd *d);

/* What the daemon logs of a plan when it starts or reloads: a line a tenant up to this many. */
#define DRFD_LOG_TENANTS 64
void drfd_log_plan(const struct drf_logger *log, const struct drf_plan *p,
		   const struct drf_io_target *io);

#endif
