// SPDX-License-Identifier: MIT
/*
 * The metrics endpoint (see httpd.h): libmicrohttpd in its external epoll
 * mode, driven by two sd-event sources, and the start, reload and stop of it.
 *
 *   GET or HEAD /metrics   200, the latest rendering, text/plain; version=0.0.4
 *                          (503 before the first, which the first tick makes);
 *                          gzip'ed for a client whose Accept-Encoding takes gzip
 *   another method         405, Allow: GET, HEAD
 *   another path           404
 */
#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "daemon.h"

/* Below the tick and the signals, as the status socket (listener.c). */
#define HTTP_PRIORITY (SD_EVENT_PRIORITY_NORMAL + 10)
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A connection libmicrohttpd holds: its socket context points here. */
struct hconn {
	struct MHD_Connection *c;
	int fd;
	uint64_t seq;    /* the order it came in: the oldest is shut first */
	uint64_t since;  /* its exchange's start: the connection's, the last answer's end, or
			  * its request's headers */
	bool answered;   /* its request came whole and was answered */
	bool shut;       /* shut by drfd: libmicrohttpd closes it on its next turn */
};

struct drfd_httpd {
	struct MHD_Daemon *mhd;
	sd_event_source *io, *timer, *sweep;
	const struct drf_logger *log;
	uint64_t deadline_usec;
	unsigned keep;
	struct hconn conns[DRFD_HTTP_CONN_MAX];
	unsigned n_conns, n_shut;        /* held; of them, shut and not closed yet */
	uint64_t seq;
	/* The answers, kept from one request to the next: libmicrohttpd counts a
	 * response's users, and frees it when the last one is done with it. */
	struct MHD_Response *metrics;   /* NULL before the first rendering */
	const char *text;               /* its text (the response owns it), and length */
	size_t text_len;
	struct MHD_Response *metrics_gz; /* the same gzip'ed, made at the first scrape that asks */
	struct MHD_Response *not_found, *not_allowed, *unavailable;
	struct drfd_http_stats st;
};

static int real_listen(void *ctx, const struct drf_listen_addr *a)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	int fd, r, one = 1;

	(void)ctx;
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(a->port);
		memcpy(&s6->sin6_addr, a->addr, 16);
		sl = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(a->port);
		memcpy(&s4->sin_addr, a->addr, 4);
		sl = sizeof(*s4);
	}
	fd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A restart binds again while the old connections are in TIME_WAIT. [::] is
	 * IPv6 alone: 0.0.0.0 is written for IPv4. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (a->family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, DRFD_HTTP_BACKLOG) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

const struct drfd_http_ops drfd_http_real_ops = { .listen = real_listen };

void drfd_listen_addr_format(const struct drf_listen_addr *a, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	inet_ntop(a->family, a->addr, host, sizeof(host));
	snprintf(buf, len, a->family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, (unsigned)a->port);
}

bool drfd_listen_addr_equal(const struct drf_listen_addr *a, const struct drf_listen_addr *b)
{
	return a->family == b->family && a->port == b->port &&
	       memcmp(a->addr, b->addr, a->family == AF_INET6 ? 16 : 4) == 0;
}

/* The clock now, not the loop's iteration's (a tick may have run since it woke). */
static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * DRF_USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

/* Shuts k's socket: libmicrohttpd sees the end on its next turn, and closes it. */
static void shut(struct drfd_httpd *h, struct hconn *k)
{
	if (k->shut)
		return;
	shutdown(k->fd, SHUT_RDWR);
	k->shut = true;
	h->n_shut++;
}

static struct hconn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(c,
								    MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return i ? i->socket_context : NULL;
}

/*
 * A connection starts: it is kept; past DRFD_HTTP_CONN_KEEP live ones, the
 * oldest one still sending its request (or idle between requests) is shut
 * for it, else the oldest one being answered. It closes: it is let go.
 */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct drfd_httpd *h = cls;
	struct hconn *k = *socket_context, *oldest = NULL;
	const union MHD_ConnectionInfo *i;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (k) {
			h->n_shut -= k->shut;
			*k = (struct hconn){ 0 };
			h->n_conns--;
		}
		return;
	}
	for (size_t j = 0; j < DRFD_HTTP_CONN_MAX && !k; j++)
		if (!h->conns[j].c)
			k = &h->conns[j];
	i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!k || !i)
		return; /* cannot be: libmicrohttpd holds at most DRFD_HTTP_CONN_MAX */
	*k = (struct hconn){ .c = c, .fd = i->connect_fd, .seq = ++h->seq, .since = now_usec() };
	*socket_context = k;
	if (++h->n_conns - h->n_shut <= h->keep)
		return;
	for (size_t j = 0; j < DRFD_HTTP_CONN_MAX; j++) {
		struct hconn *o = &h->conns[j];

		if (!o->c || o == k || o->shut)
			continue;
		/* Unanswered before answered, then the oldest. */
		if (!oldest || (!o->answered && oldest->answered) ||
		    (o->answered == oldest->answered && o->seq < oldest->seq))
			oldest = o;
	}
	if (oldest) {
		shut(h, oldest);
		h->st.evicted++;
	}
}

/* A request ended (answered, or the connection gone): the next one's exchange starts now. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct hconn *k = conn_of(c);

	(void)cls;
	(void)con_cls;
	(void)toe;
	if (k) {
		k->since = now_usec();
		k->answered = false;
	}
}

/* The q of an Accept-Encoding entry (from its ';' on, up to end): 1 without one, 0 for q=0. */
static double entry_q(const char *semi, const char *end)
{
	const char *q;

	if (!semi)
		return 1;
	q = semi + 1 + strspn(semi + 1, " \t");
	if (end - q < 2 || strncasecmp(q, "q=", 2) != 0)
		return 1;
	return strtod(q + 2, NULL);
}

/*
 * Whether Accept-Encoding takes gzip: an entry gzip with a q above 0, or
 * none for gzip and * with a q above 0 ("gzip;q=0" refuses it whatever *
 * says; "*;q=0, gzip" takes it).
 */
static bool takes_gzip(const char *ae)
{
	double gzip_q = -1, star_q = -1;

	while (ae && *ae) {
		const char *end, *semi;
		size_t n;

		ae += strspn(ae, " \t,");
		if (!*ae)
			break;
		end = ae + strcspn(ae, ",");
		n = strcspn(ae, " \t,;");
		semi = memchr(ae, ';', (size_t)(end - ae));
		if (n == 4 && strncasecmp(ae, "gzip", 4) == 0)
			gzip_q = entry_q(semi, end);
		else if (n == 1 && *ae == '*')
			star_q = entry_q(semi, end);
		ae = end;
	}
	return gzip_q >= 0 ? gzip_q > 0 : star_q > 0;
}

/*
 * The latest rendering gzip'ed (deflate's fastest level: a tenth of the
 * bytes of 1,000 tenants' text, in a few milliseconds), made once a
 * rendering at the first scrape that takes it; NULL when it cannot be made
 * (the plain text is served).
 */
static struct MHD_Response *metrics_gz(struct drfd_httpd *h)
{
	z_stream z = { 0 };
	struct MHD_Response *r;
	size_t cap;
	char *out, *shrunk;

	if (h->metrics_gz || !h->metrics)
		return h->metrics_gz;
	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	cap = deflateBound(&z, h->text_len);
	out = malloc(cap);
	z.next_in = (Bytef *)h->text;
	z.avail_in = (uInt)h->text_len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)cap;
	if (!out || h->text_len > UINT32_MAX || deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(out);
		return NULL;
	}
	deflateEnd(&z);
	/* deflateBound() is about the text's size: keep what the gzip holds */
	shrunk = realloc(out, z.total_out ? z.total_out : 1);
	if (shrunk)
		out = shrunk;
	r = MHD_create_response_from_buffer(z.total_out, out, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(out);
		return NULL;
	}
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE) != MHD_YES ||
	    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip") != MHD_YES ||
	    MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding") != MHD_YES) {
		MHD_destroy_response(r);
		return NULL;
	}
	h->metrics_gz = r;
	return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct drfd_httpd *h = cls;
	struct MHD_Response *resp;
	unsigned status;

	struct hconn *k = conn_of(c);
	static char seen;

	(void)version;
	(void)upload_data;
	/*
	 * The first call comes with the headers: answered only on the next (the
	 * request read whole). An answer queued on the first call makes
	 * libmicrohttpd close the connection after it, so that a kept-alive
	 * connection and pipelined requests got one answer, then the end.
	 */
	if (!*con_cls) {
		/* A request whose headers came: its answer gets a deadline of its own. */
		if (k)
			k->since = now_usec();
		/* An error is answered at once (libmicrohttpd closes after it): no body is read for it. */
		if (strcmp(url, "/metrics") == 0 && (strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
						     strcmp(method, MHD_HTTP_METHOD_HEAD) == 0)) {
			*con_cls = &seen;
			return MHD_YES;
		}
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a body is read and dropped */
		return MHD_YES;
	}
	if (k)
		k->answered = true;
	if (strcmp(url, "/metrics") != 0) {
		status = MHD_HTTP_NOT_FOUND;
		resp = h->not_found;
		h->st.not_found++;
	} else if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
		   strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		resp = h->not_allowed;
		h->st.not_allowed++;
	} else if (!h->metrics) {
		status = MHD_HTTP_SERVICE_UNAVAILABLE;
		resp = h->unavailable;
		h->st.unavailable++;
	} else {
		status = MHD_HTTP_OK;
		resp = h->metrics;
		if (takes_gzip(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							   MHD_HTTP_HEADER_ACCEPT_ENCODING)) &&
		    metrics_gz(h)) {
			resp = h->metrics_gz;
			h->st.gzip++;
		}
		h->st.ok++;
	}
	/* For HEAD, libmicrohttpd sends the headers alone. */
	return MHD_queue_response(c, status, resp);
}

/*
 * The timer at libmicrohttpd's next deadline (0: work is waiting), or off
 * without one; at once if the turn closed connections: libmicrohttpd takes
 * its listening socket back into its epoll set at the start of a turn, once
 * below its cap, and nothing else would wake it for that turn. The sweep at
 * the earliest exchange's deadline, while there are connections.
 */
static void arm(struct drfd_httpd *h, unsigned conns_before)
{
	MHD_UNSIGNED_LONG_LONG ms;
	uint64_t now = now_usec(), first = UINT64_MAX;

	if (h->n_conns < conns_before) {
		sd_event_source_set_time(h->timer, now);
		sd_event_source_set_enabled(h->timer, SD_EVENT_ONESHOT);
	} else if (MHD_get_timeout(h->mhd, &ms) == MHD_YES) {
		sd_event_source_set_time(h->timer, now + (uint64_t)ms * 1000);
		sd_event_source_set_enabled(h->timer, SD_EVENT_ONESHOT);
	} else {
		sd_event_source_set_enabled(h->timer, SD_EVENT_OFF);
	}
	for (size_t j = 0; j < DRFD_HTTP_CONN_MAX; j++)
		if (h->conns[j].c && !h->conns[j].shut && h->conns[j].since < first)
			first = h->conns[j].since;
	if (first == UINT64_MAX) {
		sd_event_source_set_enabled(h->sweep, SD_EVENT_OFF);
		return;
	}
	sd_event_source_set_time(h->sweep, first + h->deadline_usec);
	sd_event_source_set_enabled(h->sweep, SD_EVENT_ONESHOT);
}

static void run(struct drfd_httpd *h)
{
	unsigned before = h->n_conns;

	MHD_run(h->mhd);
	arm(h, before);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	(void)s;
	(void)fd;
	(void)revents;
	run(userdata);
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	run(userdata);
	return 0;
}

/* Exchanges past their deadline: shut (a slowloris, a reader that never reads). */
static int on_sweep(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct drfd_httpd *h = userdata;
	uint64_t now = now_usec();

	(void)s;
	(void)usec;
	for (size_t j = 0; j < DRFD_HTTP_CONN_MAX; j++) {
		struct hconn *k = &h->conns[j];

		if (k->c && !k->shut && now >= k->since + h->deadline_usec) {
			shut(h, k);
			h->st.past_deadline++;
		}
	}
	run(h);
	return 0;
}

static struct MHD_Response *fixed(const char *text, const char *allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text,
								 MHD_RESPMEM_PERSISTENT);

	if (r && (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
					  "text/plain; charset=utf-8") != MHD_YES ||
		  (allow && MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow) != MHD_YES))) {
		MHD_destroy_response(r);
		r = NULL;
	}
	return r;
}

int drfd_httpd_start(sd_event *e, int fd, const struct drf_logger *log,
		     const struct drfd_http_limits *lim, struct drfd_httpd **ret)
{
	struct drfd_httpd *h = calloc(1, sizeof(*h));
	const union MHD_DaemonInfo *info;
	int mfd, r = -ENOMEM;

	if (!h) {
		close(fd);
		return -ENOMEM;
	}
	h->log = log;
	h->deadline_usec = lim && lim->deadline_usec ? lim->deadline_usec
						     : DRFD_HTTP_DEADLINE_S * DRF_USEC_PER_SEC;
	h->keep = lim && lim->keep ? lim->keep : DRFD_HTTP_CONN_KEEP;
	h->not_found = fixed("drfd serves /metrics alone\n", NULL);
	h->not_allowed = fixed("drfd's /metrics answers GET and HEAD\n", "GET, HEAD");
	h->unavailable = fixed("drfd has not rendered its metrics yet\n", NULL);
	if (!h->not_found || !h->not_allowed || !h->unavailable)
		goto fail;
	/*
	 * libmicrohttpd gets a copy of the socket: whether it closes the one it
	 * was given when it fails to start differs between its versions, and
	 * drfd closes its own either way.
	 */
	mfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (mfd < 0) {
		r = -errno;
		goto fail;
	}
	/* No MHD_USE_ERROR_LOG: a flood would fill the journal with refusals. */
	h->mhd = MHD_start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, on_request, h,
				  MHD_OPTION_LISTEN_SOCKET, (MHD_socket)mfd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)DRFD_HTTP_CONN_MAX,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)DRFD_HTTP_CONN_PER_IP,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)DRFD_HTTP_TIMEOUT_S,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)DRFD_HTTP_CONN_MEMORY,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				  MHD_OPTION_END);
	if (!h->mhd) {
		r = -EIO;
		goto fail;
	}
	close(fd);
	fd = -1;
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		r = -EIO;
		goto fail;
	}
	r = sd_event_add_io(e, &h->io, info->epoll_fd, EPOLLIN, on_io, h);
	if (r >= 0)
		r = sd_event_add_time(e, &h->timer, CLOCK_MONOTONIC, 0, 1, on_timer, h);
	if (r >= 0)
		r = sd_event_add_time(e, &h->sweep, CLOCK_MONOTONIC, 0, DRF_USEC_PER_MSEC, on_sweep, h);
	if (r >= 0)
		r = sd_event_source_set_priority(h->io, HTTP_PRIORITY);
	if (r >= 0)
		r = sd_event_source_set_priority(h->timer, HTTP_PRIORITY);
	if (r >= 0)
		r = sd_event_source_set_priority(h->sweep, HTTP_PRIORITY);
	if (r < 0)
		goto fail;
	arm(h, 0);
	*ret = h;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	drfd_httpd_free(h);
	return r;
}

void drfd_httpd_publish(struct drfd_httpd *h, char *text, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);

	if (!r || MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE) != MHD_YES ||
	    MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding") != MHD_YES) {
		/* Out of memory: scrapes get the rendering before, which is better than none. */
		if (r)
			MHD_destroy_response(r);
		else
			free(text);
		return;
	}
	/* Scrapes under way hold the old one until they are done with it. */
	if (h->metrics)
		MHD_destroy_response(h->metrics);
	if (h->metrics_gz)
		MHD_destroy_response(h->metrics_gz);
	h->metrics = r;
	h->metrics_gz = NULL;
	h->text = text;
	h->text_len = len;
}

void drfd_httpd_stats(const struct drfd_httpd *h, struct drfd_http_stats *ret)
{
	*ret = h ? h->st : (struct drfd_http_stats){ 0 };
	if (h)
		ret->connections = h->n_conns;
}

void drfd_httpd_free(struct drfd_httpd *h)
{
	if (!h)
		return;
	sd_event_source_disable_unref(h->io);
	sd_event_source_disable_unref(h->timer);
	sd_event_source_disable_unref(h->sweep);
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	if (h->metrics)
		MHD_destroy_response(h->metrics);
	if (h->metrics_gz)
		MHD_destroy_response(h->metrics_gz);
	if (h->not_found)
		MHD_destroy_response(h->not_found);
	if (h->not_allowed)
		MHD_destroy_response(h->not_allowed);
	if (h->unavailable)
		MHD_destroy_response(h->unavailable);
	free(h);
}

/* The latest rendering of from goes over to to, which serves it until the next tick's. */
static void hand_over(struct drfd_httpd *from, struct drfd_httpd *to)
{
	if (!from || !to || !from->metrics)
		return;
	if (to->metrics)
		MHD_destroy_response(to->metrics);
	if (to->metrics_gz)
		MHD_destroy_response(to->metrics_gz);
	to->metrics = from->metrics;
	to->metrics_gz = from->metrics_gz;
	to->text = from->text;
	to->text_len = from->text_len;
	from->metrics = from->metrics_gz = NULL;
}

/* Listens on a and serves there: 0, or -errno with why naming the key and the address. */
static int open_at(struct drfd *d, const struct drf_listen_addr *a, struct drfd_httpd **ret,
		   char *why, size_t len)
{
	char addr[64];
	int fd, r;

	drfd_listen_addr_format(a, addr, sizeof(addr));
	fd = d->env->http->listen(d->env->http_ctx, a);
	if (fd < 0) {
		snprintf(why, len, "metrics-listen = %s: cannot listen there: %s%s", addr,
			 strerror(-fd),
			 fd == -EADDRINUSE ? " (another process listens on that port)"
			 : fd == -EADDRNOTAVAIL ? " (no interface of this host has that address)"
			 : fd == -EAFNOSUPPORT || fd == -EPERM || fd == -EACCES
				 ? " (under systemd, RestrictAddressFamilies= of drfd.service must "
				   "allow it: drfd(8), METRICS)" : "");
		return fd;
	}
	r = drfd_httpd_start(d->event, fd, d->log, d->env->http_limits, ret);
	if (r < 0)
		snprintf(why, len, "metrics-listen = %s: cannot serve HTTP there: %s", addr,
			 strerror(-r));
	return r;
}

int drfd_http_listen(struct drfd *d, char *why, size_t len)
{
	const struct drf_config *c = &d->decl.cfg;
	char addr[64];
	int r;

	if (!c->metrics_listen || !d->env->http)
		return 0;
	r = open_at(d, &c->metrics_addr, &d->http, why, len);
	if (r < 0)
		return r;
	d->http_addr = c->metrics_addr;
	drfd_listen_addr_format(&d->http_addr, addr, sizeof(addr));
	drf_log(d->log, LOG_INFO, "metrics-listen: serving http://%s/metrics", addr);
	return 0;
}

/* The endpoint of before a reload, bound again after it was closed to free its port. */
static void restore(struct drfd *d, struct drfd_httpd *latest)
{
	char why[512];

	if (open_at(d, &d->http_addr, &d->http, why, sizeof(why)) == 0) {
		hand_over(latest, d->http);
	} else {
		d->http = NULL;
		drf_log(d->log, LOG_ERR, "%s; the metrics endpoint is off until a reload or a "
					 "restart brings it back", why);
	}
}

int drfd_http_stage(struct drfd *d, const struct drf_config *n, struct drfd_http_stage *st,
		    char *why, size_t len)
{
	bool want = n->metrics_listen && d->env->http;
	int r;

	*st = (struct drfd_http_stage){ 0 };
	if (!want && !d->http)
		return 0;
	if (want && d->http && drfd_listen_addr_equal(&n->metrics_addr, &d->http_addr))
		return 0;
	st->changed = true;
	if (!want)
		return 0;
	st->addr = n->metrics_addr;
	r = open_at(d, &st->addr, &st->h, why, len);
	/* The same port on another address of the same family, say 127.0.0.1 to
	 * 0.0.0.0: the old socket holds it until it is closed. */
	if (r == -EADDRINUSE && d->http && d->http_addr.port == st->addr.port) {
		/* Its connections go, and its socket; its rendering is kept (st->latest). */
		st->latest = d->http;
		d->http = NULL;
		MHD_stop_daemon(st->latest->mhd);
		st->latest->mhd = NULL;
		st->latest->io = sd_event_source_disable_unref(st->latest->io);
		st->latest->timer = sd_event_source_disable_unref(st->latest->timer);
		st->latest->sweep = sd_event_source_disable_unref(st->latest->sweep);
		st->released = true;
		r = open_at(d, &st->addr, &st->h, why, len);
		if (r < 0) {
			restore(d, st->latest);
			drfd_httpd_free(st->latest);
			st->latest = NULL;
			st->released = false;
		}
	}
	if (r < 0) {
		st->changed = false;
		st->h = NULL;
		return r;
	}
	return 0;
}

void drfd_http_commit(struct drfd *d, struct drfd_http_stage *st)
{
	char addr[64];

	if (!st->changed)
		return;
	hand_over(st->released ? st->latest : d->http, st->h);
	drfd_httpd_free(st->released ? st->latest : d->http);
	d->http = st->h;
	if (d->http) {
		d->http_addr = st->addr;
		drfd_listen_addr_format(&d->http_addr, addr, sizeof(addr));
		drf_log(d->log, LOG_NOTICE, "metrics-listen: serving http://%s/metrics", addr);
	} else {
		drf_log(d->log, LOG_NOTICE, "metrics-listen removed: the metrics endpoint is closed");
	}
	*st = (struct drfd_http_stage){ 0 };
}

void drfd_http_unstage(struct drfd *d, struct drfd_http_stage *st)
{
	if (!st->changed)
		return;
	drfd_httpd_free(st->h);
	if (st->released) {
		restore(d, st->latest);
		drfd_httpd_free(st->latest);
	}
	*st = (struct drfd_http_stage){ 0 };
}
