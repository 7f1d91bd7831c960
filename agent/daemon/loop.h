/* SPDX-License-Identifier: MIT */
/*
 * drfd's event loop, turn by turn: sd-event serves one event source a turn
 * (sd_event_dispatch), and the watchdog, the fleet's lease keepalive and the
 * sockets wait for the turn in progress. Each turn is timed on the injected
 * clock; the longest of the last minute, and what it served, are kept for
 * status and metrics, so that "no turn does unbounded work" is a figure.
 *
 * What a turn served is the label the handler it ran set with
 * drfd_loop_doing() ("tick", "reload", "enforce", "status", ...); a source
 * that sets none (sd-bus's, libcurl's, libmicrohttpd's) is "other".
 */
#ifndef DRF_LOOP_H
#define DRF_LOOP_H

#include <stdint.h>
#include <systemd/sd-event.h>

#include "clock.h"
#include "log.h"
#include "view.h"

/* The last minute, in buckets of 10 s. */
#define DRFD_LOOP_BUCKETS 6
#define DRFD_LOOP_BUCKET_US (10 * DRF_USEC_PER_SEC)

/* A turn this long is logged (at most one line per DRFD_LOOP_LOG_US, with a count). */
#define DRFD_LOOP_LOG_TURN_US (1000 * 1000ULL)
#define DRFD_LOOP_LOG_US (60 * DRF_USEC_PER_SEC)

struct drfd_loop {
	const struct drf_clock *clock;
	const struct drf_logger *log;
	uint64_t logged_at, unlogged;          /* the last slow turn logged; those since */
	uint64_t turns, slow;
	uint64_t max_ever_us;
	const char *max_ever_what;
	uint64_t bucket_max[DRFD_LOOP_BUCKETS];
	const char *bucket_what[DRFD_LOOP_BUCKETS];
	uint64_t bucket_of[DRFD_LOOP_BUCKETS]; /* which 10 s the slot holds (+1; 0: none) */
	const char *doing;                     /* the turn in progress */
};

void drfd_loop_init(struct drfd_loop *l, const struct drf_clock *clock,
		    const struct drf_logger *log);

/* What the turn in progress serves: a string that outlives the loop. */
static inline void drfd_loop_doing(struct drfd_loop *l, const char *what)
{
	l->doing = what;
}

/* A turn of dur_us that ended at now_us (CLOCK_MONOTONIC) served what. */
void drfd_loop_note(struct drfd_loop *l, uint64_t now_us, uint64_t dur_us, const char *what);

/* The figures as of now_us. */
void drfd_loop_stats(const struct drfd_loop *l, uint64_t now_us, struct drf_loop_stats *ret);

/* Runs e until it exits, timing each turn: sd_event_loop()'s return. */
int drfd_loop_run(struct drfd_loop *l, sd_event *e);

#endif
