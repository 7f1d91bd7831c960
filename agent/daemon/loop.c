// SPDX-License-Identifier: MIT
/* drfd's event loop, turn by turn (see loop.h). */
#include "loop.h"

#include <string.h>

void drfd_loop_init(struct drfd_loop *l, const struct drf_clock *clock,
		    const struct drf_logger *log)
{
	memset(l, 0, sizeof(*l));
	l->clock = clock;
	l->log = log;
}

/* A turn of a second or more is said: the watchdog and the sockets waited that long. */
static void log_slow(struct drfd_loop *l, uint64_t now_us, uint64_t dur_us, const char *what)
{
	if (l->logged_at && now_us - l->logged_at < DRFD_LOOP_LOG_US) {
		l->unlogged++;
		return;
	}
	drf_log(l->log, LOG_WARNING, "a turn of the event loop took %.1f s (%s); the watchdog "
				     "and the sockets waited meanwhile (%llu more such turns since "
				     "the last said)", (double)dur_us / 1e6, what,
		(unsigned long long)l->unlogged);
	l->logged_at = now_us;
	l->unlogged = 0;
}

void drfd_loop_note(struct drfd_loop *l, uint64_t now_us, uint64_t dur_us, const char *what)
{
	uint64_t b = now_us / DRFD_LOOP_BUCKET_US + 1;
	size_t i = (size_t)(b % DRFD_LOOP_BUCKETS);

	l->turns++;
	if (dur_us > DRF_LOOP_SLOW_US)
		l->slow++;
	if (dur_us >= DRFD_LOOP_LOG_TURN_US)
		log_slow(l, now_us, dur_us, what);
	if (dur_us > l->max_ever_us || !l->max_ever_what) {
		l->max_ever_us = dur_us;
		l->max_ever_what = what;
	}
	if (l->bucket_of[i] != b) {
		l->bucket_of[i] = b;
		l->bucket_max[i] = 0;
		l->bucket_what[i] = NULL;
	}
	if (dur_us > l->bucket_max[i] || !l->bucket_what[i]) {
		l->bucket_max[i] = dur_us;
		l->bucket_what[i] = what;
	}
}

void drfd_loop_stats(const struct drfd_loop *l, uint64_t now_us, struct drf_loop_stats *ret)
{
	uint64_t b = now_us / DRFD_LOOP_BUCKET_US + 1;

	*ret = (struct drf_loop_stats){
		.turns = l->turns, .slow = l->slow, .max_ever_us = l->max_ever_us,
		.max_ever_what = l->max_ever_what,
	};
	for (size_t i = 0; i < DRFD_LOOP_BUCKETS; i++) {
		/* The buckets of the last minute: this one and the five before. */
		if (!l->bucket_of[i] || l->bucket_of[i] + DRFD_LOOP_BUCKETS <= b ||
		    l->bucket_of[i] > b || !l->bucket_what[i])
			continue;
		if (!ret->max_what || l->bucket_max[i] > ret->max_us) {
			ret->max_us = l->bucket_max[i];
			ret->max_what = l->bucket_what[i];
		}
	}
}

int drfd_loop_run(struct drfd_loop *l, sd_event *e)
{
	int code = 0;

	for (;;) {
		uint64_t start, end;
		int r;

		if (sd_event_get_state(e) == SD_EVENT_FINISHED)
			break;
		/* As sd_event_run(): the watchdog is served in sd_event_wait(). */
		r = sd_event_prepare(e);
		if (r == 0)
			r = sd_event_wait(e, UINT64_MAX);
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		l->doing = "other";
		start = drf_mono_usec(l->clock);
		r = sd_event_dispatch(e);
		end = drf_mono_usec(l->clock);
		drfd_loop_note(l, end, end >= start ? end - start : 0, l->doing);
		if (r < 0)
			return r;
	}
	return sd_event_get_exit_code(e, &code) < 0 ? 0 : code;
}
