/* SPDX-License-Identifier: MIT */
/*
 * Prometheus metrics: the text exposition format, for node-exporter's textfile
 * collector ([agent] metrics-file, written atomically each tick) and for the
 * status socket's `metrics` request (drfctl top reads it).
 */
#ifndef DRF_METRICS_H
#define DRF_METRICS_H

#include <stdio.h>

struct drfd;

/*
 * The first line of the metrics-file (a comment to the exposition format): drfd
 * replaces or removes only a file that starts with it, or the one it wrote.
 */
#define DRFD_METRICS_MARK "# drfd metrics-file: written by drfd each tick, removed when it stops\n"

/* The metrics of the daemon's state; 0 or -errno (out's). */
int drfd_metrics_render(const struct drfd *d, FILE *out);

/* Each tick: writes metrics-file if the config names one. 0 or -errno. */
int drfd_metrics_tick(struct drfd *d);

/* At exit: removes the metrics-file drfd wrote (alerts see drfd_up absent). */
void drfd_metrics_stop(struct drfd *d);

#endif
