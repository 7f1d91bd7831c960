/* SPDX-License-Identifier: MIT */
/*
 * The usage history drfd keeps for `drfctl recommend` (agent/core/history.h has
 * the format): STATE_DIR/ROOT-ESCAPED.history, one line per tenant each step.
 *
 * Bounded: the file is appended to until it would pass half the cap; then it
 * becomes FILE.1 (replacing the one before) and a new FILE starts. The two
 * together stay under the cap and hold the newest history; readers read FILE.1
 * then FILE. Appending is one write(2) per step, and rotating one rename(2): no
 * step ever rewrites the history. After a restart drfd appends to the same file;
 * a line torn by a crash is ended with a newline first, so that only that line is
 * lost (readers skip it).
 */
#ifndef DRF_HISTFILE_H
#define DRF_HISTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "history.h"
#include "log.h"
#include "usage.h"

struct drf_history_file {
	char path[4096];
	char old[4104];     /* path.1 */
	int fd;             /* -1: not open */
	int dfd;            /* its directory, the state dir (statedir.h); -1: not open */
	uint64_t size;      /* bytes in path */
	uint64_t cap;       /* path and path.1 together stay under this */
	unsigned step_s;
};

/*
 * Opens path for appending, creating it (and its directory, root's) with a
 * header if needed; a file with another header is rotated away first. The
 * directory is checked and the file opened beneath it as statedir.h says. 0 or
 * -errno; f->fd is -1 on failure.
 */
int drf_history_open(struct drf_history_file *f, const char *path, unsigned step_s,
		     uint64_t cap);

/* Appends buf (whole lines), rotating first if the file would pass cap / 2. */
int drf_history_append(struct drf_history_file *f, const char *buf, size_t len);

void drf_history_close(struct drf_history_file *f);

/* The daemon's side: the step being accumulated, per tenant by name. */
struct drf_history {
	const struct drf_logger *log;
	struct drf_history_file f;
	bool on;                        /* a path to keep it at */
	bool open, failing;
	int64_t step;                   /* floor(t / step_s) of the step accumulated; -1: none */
	size_t n, name_cap, acc_cap;
	char (*name)[DRF_HIST_NAME_MAX + 1];
	struct drf_hist_acc *acc;
};

/* The history at path (NULL or "": kept nowhere). */
void drf_history_init(struct drf_history *h, const char *path, const struct drf_logger *log);
/*
 * Once per tick after the usage sample, at now_us (CLOCK_REALTIME): adds the
 * tick's use of every tenant of u to the step, and at the end of a step
 * appends the step's records.
 */
void drf_history_tick(struct drf_history *h, const struct drf_usage *u, uint64_t now_us);
void drf_history_free(struct drf_history *h);

#endif
