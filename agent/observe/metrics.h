/* SPDX-License-Identifier: MIT */
/*
 * Prometheus metrics: the text exposition format, for node-exporter's textfile
 * collector ([agent] metrics-file, written atomically each tick), for the HTTP
 * endpoint ([agent] metrics-listen, agent/daemon/httpd.c: the same text, rendered
 * once a tick) and for the status socket's `metrics` request (drfctl top reads it).
 */
#ifndef DRF_METRICS_H
#define DRF_METRICS_H

#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

#include "config.h"
#include "log.h"
#include "view.h"

/*
 * The first line of the metrics-file (a comment to the exposition format): drfd
 * replaces or removes only a file that starts with it, or the one it wrote.
 */
#define DRFD_METRICS_MARK "# drfd metrics-file: written by drfd each tick, removed when it stops\n"

/*
 * The metrics of the daemon's state at that detail (config.h: the daemon's
 * families and, per tenant, basic's or all); 0 or -errno (out's).
 */
int drf_metrics_render(const struct drf_view *v, enum drf_metrics_detail detail, FILE *out);

/*
 * The same, into *ret (malloc'ed, not NUL-terminated: *ret_len bytes), as the
 * metrics-file and the HTTP endpoint serve it. 0 or -errno.
 */
int drf_metrics_render_text(const struct drf_view *v, enum drf_metrics_detail detail,
			    char **ret, size_t *ret_len);

/* The metrics-file drfd writes: what it wrote last, and the failure it said last. */
struct drf_metrics_file {
	const struct drf_logger *log;
	char last_failure[PATH_MAX + 256];      /* "" while writing works */
	char last_written[PATH_MAX];            /* "" before the first */
	dev_t written_dev;
	ino_t written_ino;
};

void drf_metrics_file_init(struct drf_metrics_file *m, const struct drf_logger *log);
/*
 * Each tick: replaces the file at path with v's metrics at that detail (path
 * NULL: none, and one written before is removed). 0 or -errno; a failure is
 * said once.
 */
int drf_metrics_write(struct drf_metrics_file *m, const char *path,
		      enum drf_metrics_detail detail, const struct drf_view *v);
/*
 * The same with the metrics rendered already (drf_metrics_render_text): text
 * and len, or, when the rendering failed, render_err (-errno), which is said
 * as a failure to write path.
 */
int drf_metrics_write_text(struct drf_metrics_file *m, const char *path, const char *text,
			   size_t len, int render_err);
/* At exit: removes the metrics-file drfd wrote (alerts see drfd_up absent). */
void drf_metrics_stop(struct drf_metrics_file *m);

#endif
