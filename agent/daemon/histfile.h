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

#include "history.h"

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

struct drfd;

/*
 * The daemon's hook, once per tick after the usage sample: adds the tick's use
 * of every tenant to the step, and at the end of a step appends the step's
 * records. Nothing without a state file or in a dry run.
 */
void drfd_history_tick(struct drfd *d);
void drfd_history_free(struct drfd *d);

#endif
