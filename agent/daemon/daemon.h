/* SPDX-License-Identifier: MIT */
/*
 * The running daemon: the plan in force, the reconciler, and the event loop
 * (sd-event) with its sources: SIGHUP, SIGTERM and SIGINT, the tick timer, and
 * the status socket. Each tick: reconcile -> sample -> (observed demand)
 * re-allocate and write what changed -> one log line.
 */
#ifndef DRF_DAEMON_H
#define DRF_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "cgroupfs.h"
#include "desired.h"
#include "online.h"
#include "reconcile.h"
#include "shaper.h"
#include "usage.h"

struct drfd_history;
struct drfd_listener;

struct drfd {
	const struct drf_logger *log;
	const char *config_path;
	bool dry_run;
	struct drf_enforced plan;       /* in force */
	struct drf_io_target io;
	bool has_io;
	char *root;                     /* the resolved cgroup-root */
	struct cgfs *fs;
	struct drf_reconciler rc;
	char state_path[4096];          /* "" when there is no state file */
	size_t verify;                  /* tenants read back per tick */
	sd_event *event;
	sd_event_source *timer;
	sd_event_source *listen_src;
	int listen_fd;
	char *socket_path;              /* the socket drfd bound, to unlink at exit */
	struct drfd_listener *listener; /* its connections and limits (status.c) */
	uint64_t started;               /* CLOCK_REALTIME, usec */
	uint64_t last_tick;             /* CLOCK_REALTIME, usec; 0 before the first */
	uint64_t ticks;                 /* drfd_tick()s since start (one per interval, at
	                                 * start and at each reload), whatever the passes */
	uint64_t reloads, reloads_refused;
	struct drf_reconcile_stats last;
	bool has_net;                   /* the config shares the network: the shaper runs */
	struct drf_shaper net;          /* set up by main(), with its ops */
	struct drf_shaper_stats net_last;
	struct drf_usage use;           /* measurements, against the plan in force */
	struct drf_online online;       /* observed demand: the effective plan (online.h) */
	struct drfd_history *history;   /* usage history for `drfctl recommend` (histfile.c) */
	struct drf_tasks *tasks;        /* the task queue (tasks.h); NULL when off */
	int state_err;                  /* the last save of the state file failed: -errno; else 0 */
	char status_text[256];          /* last STATUS= sent to systemd */
	int exit_code;
};

/*
 * Sets up the reconciler on fs for the loaded plan, takes over the state file
 * (cgroups of departed tenants become orphans or are removed), and runs the
 * first tick, reading every knob back. Returns 0 or -errno; the first tick's
 * failures are in *ret.
 */
int drfd_start(struct drfd *d, struct drf_reconcile_stats *ret);

/*
 * One tick: reconcile, sample, re-allocate on observed demand, history, metrics,
 * and the state file when the tenants changed or its last save failed. verify:
 * tenants read back (SIZE_MAX: all).
 */
void drfd_tick(struct drfd *d, size_t verify);

/* The event loop until SIGTERM/SIGINT; returns the exit code. */
int drfd_run(struct drfd *d);

void drfd_free(struct drfd *d);

/*
 * Serves the status socket at path (see status.c); 0 or -errno with why:
 * -EADDRINUSE when another drfd serves it, -EEXIST when something other than a
 * socket is there (left untouched).
 */
int drfd_listen(struct drfd *d, const char *path, const char *group, char *why, size_t len);

/* Closes the status socket and its connections; removes the socket if it is still drfd's. */
void drfd_unlisten(struct drfd *d);

/* Renders the status: text for people or JSON; returns the count of problems. */
int drfd_status_render(const struct drfd *d, bool json, FILE *out);

/* What the daemon logs of a plan when it starts or reloads. */
void drfd_log_plan(const struct drf_logger *log, const struct drf_enforced *s,
		   const struct drf_io_target *io);

#endif
