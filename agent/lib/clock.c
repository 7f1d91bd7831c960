// SPDX-License-Identifier: MIT
#include "clock.h"

static uint64_t system_now(void *ctx, clockid_t id)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * DRF_USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

const struct drf_clock drf_clock_system = { .now = system_now, .ctx = 0 };

uint64_t drf_fake_clock_now(void *ctx, clockid_t id)
{
	const struct drf_fake_clock *c = ctx;

	return id == CLOCK_REALTIME ? c->real : c->mono;
}
