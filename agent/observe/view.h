/* SPDX-License-Identifier: MIT */
/*
 * What a report of the running daemon reads (the status, the metrics): the
 * plan in force and what each part holds of it, and the daemon's counters,
 * all read-only. The daemon fills one in when a report is asked for; the
 * reports see nothing else of it.
 */
#ifndef DRF_VIEW_H
#define DRF_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "cgroupfs.h"
#include "hostcheck.h"
#include "online.h"
#include "planner.h"
#include "reconcile.h"
#include "shaper.h"
#include "startkeys.h"
#include "usage.h"

/* The status socket's counters. */
struct drf_sock_stats {
	unsigned conns, root_conns;     /* open now */
	uint64_t accepted;              /* served: under the caps */
	uint64_t refused;               /* over a cap: closed at once */
	uint64_t refuse_pauses;         /* accepting paused for refusing too many */
	uint64_t dropped;               /* idle or slow past a deadline */
	uint64_t too_long;              /* requests over DRF_REQ_MAX, refused */
	uint64_t backoffs;              /* accept failed for want of fds (or memory) */
	bool listening;                 /* the listener's event source is on */
};

/* The HTTP metrics endpoint's counters (metrics-listen); on false: none. */
struct drf_http_stats {
	bool on;
	unsigned conns;                 /* open now */
	uint64_t ok, not_found, not_allowed, unavailable; /* answered 200, 404, 405, 503 */
	uint64_t past_deadline;         /* shut at a deadline (headers, answer read) */
	uint64_t evicted;               /* shut to make room for a new connection */
};

/*
 * A fleet node's ([fleet] in drfd.conf) view of its fleet, copied by the
 * daemon from agent/fleet's status: this layer knows nothing of etcd.
 */
struct drf_view_fleet {
	bool on;
	const char *node;             /* this node's name */
	bool reachable;               /* etcd answers */
	uint64_t since;               /* CLOCK_REALTIME usec: reachable's last change */
	const char *last_error;       /* "" or NULL: none */
	bool registered;              /* its capacity is in etcd under its lease */
	bool planner;                 /* this node plans the fleet */
	const char *planner_name;     /* "" or NULL: none known */
	bool has_assignment;
	bool from_file;               /* the state dir's, not yet confirmed by etcd */
	int64_t assignment_revision;  /* etcd's latest for this node */
	int64_t in_force_revision;    /* the one in force here; 0: none */
	bool refused;                 /* assignment_revision refused (offered again) */
	const char *refused_why;
	size_t nodes, tenants;        /* as the planner: its last plan's */
	uint64_t plans, keys_written, fenced, resyncs;
	bool planner_vacant;          /* the planner key names no live node */
	const char *planner_vacant_why;
	uint64_t takeovers;           /* vacant planner keys this node deleted */
	size_t silent_nodes;          /* as the planner: nodes gone silent, kept in their grace */
	bool plain;                   /* it does not campaign ([fleet] planner = no) */
	bool campaign_refused;        /* etcd refused its campaign: permission denied */
	const char *campaign_refused_why;
};

/* The task queue's figures (agent/tasks/tasks.h); on false: no queue. */
struct drf_view_tasks {
	bool on;
	uint64_t started_total, finished_total; /* since start */
	uint64_t truncated_total;     /* of the ends recorded since start: output dropped */
	uint64_t output_max;          /* task-output-max in force; 0: no cap */
};

/*
 * The event loop's turns (agent/daemon/loop.c): a turn is one event source
 * served (a tick, a step of enforcement, a status answer, a bus reply...);
 * the watchdog, the lease and the sockets wait for the turn in progress.
 */
struct drf_loop_stats {
	uint64_t turns;                 /* served since start */
	uint64_t slow;                  /* of them longer than DRF_LOOP_SLOW_US */
	uint64_t max_us;                /* the longest of the last minute (or since start) */
	const char *max_what;           /* what it served: "tick", "reload", "status", ... */
	uint64_t max_ever_us;           /* the longest since start */
	const char *max_ever_what;
};
#define DRF_LOOP_SLOW_US 100000

struct drf_view {
	const char *config_path;
	const char *root;                       /* the resolved cgroup-root */
	int pid;
	const struct drf_declared *decl;        /* the config in force */
	const struct drf_plan *plan;            /* the plan in force */
	const struct drf_reconciler *rc;
	const struct drf_reconcile_stats *last; /* the last tick's */
	const struct cgfs *fs;                  /* what the status reads live */
	const struct drf_shaper *net;           /* NULL: the network is not shaped */
	const struct drf_usage *use;
	const struct drf_online *online;
	const char *state_path;                 /* "": no state file */
	int state_err;                          /* its last save failed: -errno; 0 */
	uint64_t started, last_tick, now;       /* CLOCK_REALTIME, usec; last_tick 0: none */
	uint64_t ticks, reloads, reloads_refused;
	/* The last reload: its verdict, when (0: none since start), why it was refused. */
	bool reload_ok;
	uint64_t reload_at, reload_ok_at;       /* reload_ok_at: the last success, or the start */
	const char *reload_error;               /* "" or NULL unless refused */
	const struct drf_start_keys *start;     /* the start-only keys in force; NULL: unknown */
	struct drf_sock_stats sock;
	struct drf_http_stats http;
	struct drf_loop_stats loop;
	struct drf_view_fleet fleet;            /* on false: not a fleet node */
	struct drf_view_tasks tasks;            /* on false: no task queue */
	struct drf_prot_cap prot;               /* an ancestor of the root that caps protection */
};

#endif
