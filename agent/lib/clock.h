/* SPDX-License-Identifier: MIT */
/*
 * drfd's one clock and one unit of time: microseconds in a uint64_t, from an
 * injected clock (the running system's, or a test's that it sets by hand).
 * CLOCK_MONOTONIC measures intervals (rates, ticks, deadlines);
 * CLOCK_REALTIME stamps what people and files read (status, history, tasks).
 */
#ifndef DRF_CLOCK_H
#define DRF_CLOCK_H

#include <stdint.h>
#include <time.h>

#define DRF_USEC_PER_SEC 1000000ULL
#define DRF_USEC_PER_MSEC 1000ULL

struct drf_clock {
	uint64_t (*now)(void *ctx, clockid_t id); /* usec */
	void *ctx;
};

/* clock_gettime(). */
extern const struct drf_clock drf_clock_system;

static inline uint64_t drf_mono_usec(const struct drf_clock *c)
{
	return c->now(c->ctx, CLOCK_MONOTONIC);
}

static inline uint64_t drf_real_usec(const struct drf_clock *c)
{
	return c->now(c->ctx, CLOCK_REALTIME);
}

/* A clock a test moves: both readings are what it holds. */
struct drf_fake_clock {
	uint64_t mono, real;
};
uint64_t drf_fake_clock_now(void *ctx, clockid_t id);

#endif
