/* SPDX-License-Identifier: MIT */
/*
 * [agent] metrics-listen: Prometheus's `GET /metrics` over HTTP, beside the
 * metrics-file, served by libmicrohttpd from drfd's event loop (httpd.c). Only
 * httpd.c includes libmicrohttpd's header.
 *
 * The text is rendered once a tick (daemon.c), the very text the metrics-file
 * gets but for the file's first line (DRFD_METRICS_MARK); a scrape is served
 * the latest rendering and never renders. libmicrohttpd runs without a thread
 * of its own (MHD_USE_EPOLL, driven by MHD_run from an sd-event source on its
 * epoll fd and a timer at MHD_get_timeout), so the rendering is handed over
 * on the loop's one thread, with no lock.
 *
 * A flood of scrapers can neither stop enforcement nor keep a scraper out:
 * the endpoint's sources run below the tick's priority, as the status
 * socket's do; libmicrohttpd caps connections overall and per client address,
 * closes one idle for DRFD_HTTP_TIMEOUT_S and caps a request's memory. What
 * it has no option for, httpd.c adds: a request's headers within
 * DRFD_HTTP_DEADLINE_S of the connection's start (or of the answer before),
 * and its answer within as long of them, or the connection is shut (a
 * slowloris that sends a header line now and then, a reader that never
 * reads); past DRFD_HTTP_CONN_KEEP live connections, a new one shuts the
 * oldest that has not sent its request whole, else the oldest being answered
 * (so that held connections from many addresses cannot keep a scraper out);
 * and libmicrohttpd is run again at once after a
 * turn that closed connections, which is when it listens again after its cap
 * (without that, a flood that reached the cap and went left nothing to wake
 * it: the endpoint stayed deaf until a restart).
 */
#ifndef DRF_HTTPD_H
#define DRF_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "log.h"

/*
 * Connections at once (libmicrohttpd's cap); live ones past which a new one
 * shuts the oldest (see above); and of one client address (Prometheus holds
 * one per target).
 */
#define DRFD_HTTP_CONN_MAX 64
#define DRFD_HTTP_CONN_KEEP 48
#define DRFD_HTTP_CONN_PER_IP 8
/* A connection idle this long (no request, or its answer not read) is closed. */
#define DRFD_HTTP_TIMEOUT_S 10
/* A request's headers within this of the connection's start (or the answer before); its answer, of them. */
#define DRFD_HTTP_DEADLINE_S 10
/* A connection's memory for its request line and headers (and what it reads of a body). */
#define DRFD_HTTP_CONN_MEMORY 16384
#define DRFD_HTTP_BACKLOG 128

/* An exchange's deadline and the connections kept before one is shut for a new one (0: the above). */
struct drfd_http_limits {
	uint64_t deadline_usec;
	unsigned keep;
};

/* The endpoint's side effect on the host: its listening socket. */
struct drfd_http_ops {
	/* A listening TCP socket on a, non-blocking and close-on-exec: its fd, or -errno. */
	int (*listen)(void *ctx, const struct drf_listen_addr *a);
};
/* socket, SO_REUSEADDR, IPV6_V6ONLY for IPv6, bind, listen. */
extern const struct drfd_http_ops drfd_http_real_ops;

/* a as an operator writes it: 127.0.0.1:9100, [::1]:9100. len: at least 64. */
void drfd_listen_addr_format(const struct drf_listen_addr *a, char *buf, size_t len);
bool drfd_listen_addr_equal(const struct drf_listen_addr *a, const struct drf_listen_addr *b);

struct drfd_httpd;

/* Serves /metrics on the listening socket fd (taken: closed on failure too) from e. 0 or -errno. */
int drfd_httpd_start(sd_event *e, int fd, const struct drf_logger *log,
		     const struct drfd_http_limits *lim, struct drfd_httpd **ret);
/*
 * text (malloc'ed, len bytes, taken whatever happens) is what a scrape gets
 * from now on; scrapes under way finish with the text they started with.
 */
void drfd_httpd_publish(struct drfd_httpd *h, char *text, size_t len);
/* Closes the socket and every connection. NULL: nothing. */
void drfd_httpd_free(struct drfd_httpd *h);

/* What the endpoint answered since it started (each status code counted). */
struct drfd_http_stats {
	unsigned long long ok, not_found, not_allowed, unavailable;
	unsigned long long gzip;          /* of ok, answered gzip'ed */
	unsigned long long past_deadline; /* connections shut at the deadline */
	unsigned long long evicted;       /* shut for a new one, past DRFD_HTTP_CONN_KEEP */
	unsigned connections;             /* open now */
};
void drfd_httpd_stats(const struct drfd_httpd *h, struct drfd_http_stats *ret);

struct drfd;
/*
 * At start: listens on d->decl.cfg's metrics-listen, if set, through
 * d->env->http (none: no endpoint). 0, or -errno with why naming the key and
 * the address (drfd then refuses to start).
 */
int drfd_http_listen(struct drfd *d, char *why, size_t len);

/*
 * A reload's metrics-listen, staged before the plan is put in force: a
 * changed address is bound (when the new address takes the port the old one
 * holds, the old one is closed first, and bound again if the new one fails),
 * and the reload refused, with the old endpoint kept, if it cannot be.
 * Commit puts the staged endpoint in force (and closes the old one), which
 * serves the old one's latest rendering until the next tick; unstage
 * restores the old one.
 */
struct drfd_http_stage {
	bool changed;                   /* the endpoint changes: commit or unstage */
	struct drfd_httpd *h;           /* the new one; NULL: none (metrics-listen removed) */
	struct drf_listen_addr addr;
	bool released;                  /* the old one is closed already: */
	struct drfd_httpd *latest;      /* what is left of it, its rendering */
};
int drfd_http_stage(struct drfd *d, const struct drf_config *n, struct drfd_http_stage *st,
		    char *why, size_t len);
void drfd_http_commit(struct drfd *d, struct drfd_http_stage *st);
void drfd_http_unstage(struct drfd *d, struct drfd_http_stage *st);

#endif
