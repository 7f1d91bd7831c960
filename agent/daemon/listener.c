// SPDX-License-Identifier: MIT
/*
 * The status socket. A client connects, sends one request line and reads the
 * answer until the daemon closes the connection:
 *
 *   "status text\n" or "status json\n"  ->  "drfd-status 2\n" BODY TRAILER
 *   "status text NAME\n", "status json NAME\n"  ->  the same of tenant NAME only (the
 *        head and its paragraph or object), or "drfd-status 2 error=no-such-tenant\n"
 *   "root\n"                             ->  the cgroup-root in force, one line
 *   "metrics\n"                          ->  "drfd-metrics 1\n" and the metrics
 *   "reload\n"                           ->  "drfd-reload 1 VERDICT\n" and a line: the
 *        config reloaded, as SIGHUP does; VERDICT "ok" (in force), "refused" (the
 *        reason: drfd_reload()'s), or "denied" (the peer is not root: SO_PEERCRED)
 *   "task-..." and "tasks ..."           ->  taskd.c
 *
 * A status is sent in parts (status.h): the next part is rendered only once the
 * socket has taken the last one, at a later turn of the loop, so that a turn
 * renders one part (DRF_STATUS_PART tenants at most) and the loop serves
 * everything else in between; the deadline to take the answer is a part's.
 * Its TRAILER is the line "drfd-status-end problems=N\n"; a status that fails
 * after its first part ends with "drfd-status-end error=REASON\n" instead (on
 * a line of its own): "changed" when the plan in force changed between two
 * parts (a reload, a new plan), which would mix two plans; "enomem", "eio" or
 * "failed" when a part cannot be rendered. An answer without a trailer was cut
 * short: a client takes it for an error, never for the status. Refusals have
 * no body: "drfd-status 2 error=REASON\n" (busy, request-too-long,
 * malformed-request, unknown-request, no-such-tenant, or the first part's
 * failure).
 *
 * Connections are non-blocking and served from the event loop below the tick's
 * priority, so clients cannot stall the ticks. The limits are in listener.h:
 * connections per user and overall (root always gets in), deadlines for the
 * request and the answer, the request's length (a longer one is refused whole),
 * and a back-off when accept runs out of file descriptors. The socket is 0600
 * (root), or 0660 with status-group; drfd replaces only a socket nobody
 * serves, and removes at exit only the socket it bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "fileio.h"
#include "json.h"
#include "metrics.h"
#include "log.h"
#include "listener.h"
#include "status.h"
#include "taskd.h"
#include "tasks.h"

/* Connections taken per wakeup of the listener; the loop's other sources run in between. */
#define ACCEPT_BATCH 64
/*
 * Short: while refusals are paced (listener.h), a client that connects waits
 * behind at most this many others, so root gets in within a pause or two.
 * Others wait in connect() for room, which costs drfd nothing.
 */
#define LISTEN_BACKLOG 16
/* Below the tick and the signals: when both are ready, those go first. */
#define SOCK_PRIORITY (SD_EVENT_PRIORITY_NORMAL + 10)
/* Refusals over the caps are logged at most this often, counted. */
#define REFUSED_LOG_USEC (10 * 1000000ULL)

struct conn;

struct drfd_listener {
	struct drfd *d;
	int fd;
	sd_event_source *src;           /* accepting */
	char *path;                     /* the socket it bound */
	bool root_only;                 /* root's own socket: nobody else is served */
	sd_event_source *retry;         /* turns the listener back on after a back-off */
	uint64_t backoff_usec;          /* the next back-off */
	bool backing_off;               /* since accept last failed */
	dev_t dev;                      /* the socket file drfd bound */
	ino_t ino;
	struct conn *conns;
	struct drf_sock_stats st;
	uint64_t refused_logged, refused_log_at;
	uint64_t refuse_window_at;      /* CLOCK_MONOTONIC usec */
	unsigned refuse_in_window;
};

struct conn {
	struct drfd_listener *l;
	struct conn *prev, *next;
	int fd;
	uid_t uid;
	sd_event_source *io, *timeout;
	struct drfd_req req;
	char *out;
	size_t out_len, out_off;
	bool reloading;                 /* a reload's answer waits for its writes */
	struct status_stream *status;   /* a status in parts: the next follows the last sent */
};

/* A status answered in parts (see the top of this file). */
struct status_stream {
	struct drf_status_cursor cur;
	uint64_t plans, reloads;        /* the daemon's at the first part: another plan ends it */
	unsigned parts;                 /* rendered so far */
	bool last_nl;                   /* what was rendered so far ends with a newline */
	bool done;                      /* its last part (or its error) is rendered */
};

static void conn_free(struct conn *c)
{
	struct drfd_listener *l = c->l;

	if (c->prev)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	l->st.conns--;
	if (c->uid == 0)
		l->st.root_conns--;
	if (c->reloading)
		drfd_settled_cancel(l->d, c);
	sd_event_source_disable_unref(c->io);
	sd_event_source_disable_unref(c->timeout);
	close(c->fd);
	drfd_req_free(&c->req);
	free(c->out);
	free(c->status);
	free(c);
}

int drfd_req_feed(struct drfd_req *r, const char *data, size_t n)
{
	const char *nl;
	size_t take, keep;

	if (r->done)
		return 1;
	if (n == 0) {
		r->done = true;
		return 1;
	}
	nl = memchr(data, '\n', n);
	take = nl ? (size_t)(nl - data) : n;
	/* Past the limit only counted, for the refusal: never kept, never run. */
	r->seen = r->seen > SIZE_MAX - take ? SIZE_MAX : r->seen + take;
	keep = DRF_REQ_MAX - r->len < take ? DRF_REQ_MAX - r->len : take;
	if (keep && r->len + keep + 1 > r->cap) {
		size_t nc = r->cap ? r->cap : 256;
		char *nb;

		while (nc < r->len + keep + 1)
			nc *= 2;
		if (nc > DRF_REQ_MAX + 1)
			nc = DRF_REQ_MAX + 1;
		nb = realloc(r->buf, nc);
		if (!nb)
			return -ENOMEM;
		r->buf = nb;
		r->cap = nc;
	}
	if (keep) {
		memcpy(r->buf + r->len, data, keep);
		r->len += keep;
		r->buf[r->len] = '\0';
	}
	r->done = nl != NULL;
	return r->done;
}

void drfd_req_free(struct drfd_req *r)
{
	free(r->buf);
	*r = (struct drfd_req){ 0 };
}

static int reply(char **out, size_t *out_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int reply(char **out, size_t *out_len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(out, fmt, ap);
	va_end(ap);
	if (n < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	*out_len = (size_t)n;
	return 0;
}

/*
 * "reload": root's only, by the peer's credentials as the kernel recorded them
 * at connect (a member of status-group may read the status, not change what
 * is enforced). The reload runs now, in the loop; the answer is its verdict.
 */
static int answer_reload(struct drfd *d, int fd, char **out, size_t *out_len)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
		return reply(out, out_len, "drfd-reload 1 denied\ncannot tell who asks "
			     "(SO_PEERCRED): %s\n", strerror(errno));
	drfd_loop_doing(&d->loop, "reload");
	if (cr.uid != 0) {
		drf_log(d->log, LOG_WARNING, "status socket: a reload asked by uid %u (pid %d) is "
					     "refused: only root may reload drfd", (unsigned)cr.uid,
			(int)cr.pid);
		return reply(out, out_len, "drfd-reload 1 denied\nonly root may reload drfd (the "
			     "request came from uid %u)\n", (unsigned)cr.uid);
	}
	if (drfd_reload_asked(d) < 0)
		return reply(out, out_len, "drfd-reload 1 refused\n%s\n", d->reload_error);
	/* Answered once the writes are made (conn_answer waits for the pass). */
	if (drf_reconcile_busy(&d->rc))
		return 1;
	return drfd_reload_answer(d, true, out, out_len);
}

int drfd_reload_answer(const struct drfd *d, bool done, char **out, size_t *out_len)
{
	return reply(out, out_len, "drfd-reload 1 ok\nreloaded %s: %zu tenants in force%s\n",
		     d->config_path, d->decl.cfg.n_tenants,
		     done ? "" : "; their knobs are still being written (drfctl status shows "
				 "each)");
}

/* The word of a status that failed: after the first line, or after the trailer's. */
static const char *status_error(int r)
{
	switch (r) {
	case -ENOENT:
		return "no-such-tenant";
	case -ESTALE:
		return "changed";
	case -ENOMEM:
		return "enomem";
	case -EIO:
		return "eio";
	}
	return "failed";
}

/*
 * The next part of st into *out (malloc'ed): the first one after the answer's
 * first line, the last one followed by the trailer; a failure as its error
 * (the answer's first line, or its error trailer), and st done. 0 or -ENOMEM.
 */
static int status_part(struct drfd *d, struct status_stream *st, char **out, size_t *out_len)
{
	bool first = st->parts++ == 0;
	struct drf_view v;
	char *body = NULL;
	size_t blen = 0;
	FILE *f = NULL;
	int r;

	drfd_loop_doing(&d->loop, "status");
	/* Another plan in force since the first part: its parts and these would not match. */
	if (!first && (d->plans != st->plans || d->reloads != st->reloads))
		r = -ESTALE;
	else
		r = (f = open_memstream(&body, &blen)) ? 0 : -ENOMEM;
	if (f) {
		if (first)
			fputs("drfd-status 2\n", f);
		drfd_view(d, &v);
		r = drf_status_next(&st->cur, &v, f);
		if (r == 0)
			fprintf(f, "drfd-status-end problems=%d\n", st->cur.problems);
		if (fclose(f) != 0 && r >= 0)
			r = -ENOMEM;
	}
	if (r >= 0) {
		st->done = r == 0;
		st->last_nl = blen && body[blen - 1] == '\n';
		*out = body;
		*out_len = blen;
		return 0;
	}
	free(body);
	st->done = true;
	/* Never part of a status: the client is told, and so is the log, unless it asked amiss. */
	if (r != -ENOENT && r != -ESTALE)
		drf_log(d->log, LOG_ERR, "cannot render the status: %s", strerror(-r));
	if (first)
		return reply(out, out_len, "drfd-status 2 error=%s\n", status_error(r));
	/* The trailer on a line of its own, whatever the part before ended with. */
	return reply(out, out_len, "%sdrfd-status-end error=%s\n", st->last_nl ? "" : "\n",
		     status_error(r));
}

/*
 * "status text|json [NAME]": its first part into *out, and the status to go
 * on with in *stream (NULL once it is whole); without stream, the whole answer
 * at once (tests, the fuzz target).
 */
static int answer_status(struct drfd *d, bool json, const char *name, char **out,
			 size_t *out_len, struct status_stream **stream)
{
	struct status_stream *st = calloc(1, sizeof(*st));
	char *all = NULL, *part;
	size_t all_len = 0, part_len;
	FILE *f;
	int r;

	if (!st)
		return -ENOMEM;
	drfd_asked(d);
	drf_status_begin(&st->cur, json, name);
	st->plans = d->plans;
	st->reloads = d->reloads;
	r = status_part(d, st, out, out_len);
	if (r < 0 || st->done || stream) {
		if (r == 0 && !st->done)
			*stream = st;
		else
			free(st);
		return r;
	}
	f = open_memstream(&all, &all_len);
	r = f ? 0 : -ENOMEM;
	if (f)
		fwrite(*out, 1, *out_len, f);
	while (r == 0 && !st->done && (r = status_part(d, st, &part, &part_len)) == 0) {
		fwrite(part, 1, part_len, f);
		free(part);
	}
	if (f && fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	free(st);
	free(*out);
	*out = NULL;
	if (r < 0) {
		free(all);
		return r;
	}
	*out = all;
	*out_len = all_len;
	return 0;
}

/*
 * "status text", "status json", each with a tenant's name or not: 1 with the
 * format and the name (NULL: none) pointing into req, 0 for any other line.
 */
static int status_request(const char *req, bool *json, const char **name)
{
	const char *fmt;

	if (strncmp(req, "status ", 7) != 0)
		return 0;
	fmt = req + 7;
	if (strncmp(fmt, "text", 4) != 0 && strncmp(fmt, "json", 4) != 0)
		return 0;
	*json = fmt[0] == 'j';
	*name = NULL;
	if (fmt[4] == '\0')
		return 1;
	if (fmt[4] != ' ' || !fmt[5] || strchr(fmt + 5, ' '))
		return 0;
	*name = fmt + 5;
	return 1;
}

/* The answer to one request line (NUL-terminated, without its newline). */
static int dispatch(struct drfd *d, int fd, int sender, const char *req, char **out,
		    size_t *out_len, struct status_stream **stream)
{
	struct drf_view v;
	const char *name;
	char *body = NULL;
	size_t blen = 0;
	bool json;
	FILE *f;
	int n;

	n = drfd_tasks_answer(d, fd, sender, req, out, out_len);
	if (n != 0)
		return n < 0 ? n : 0;
	if (strcmp(req, "root") == 0)
		return reply(out, out_len, "%s\n", d->root);
	if (strcmp(req, "reload") == 0)
		return answer_reload(d, fd, out, out_len);
	if (strcmp(req, "metrics") == 0) {
		drfd_asked(d);
		f = open_memstream(&body, &blen);
		if (!f)
			return -ENOMEM;
		fputs("drfd-metrics 1\n", f);
		drfd_view(d, &v);
		/* Asked for, not scraped each tick: full, whatever metrics-detail (drfctl top). */
		drf_metrics_render(&v, DRF_METRICS_FULL, f);
		if (fclose(f) != 0) {
			free(body);
			return -ENOMEM;
		}
		*out = body;
		*out_len = blen;
		return 0;
	}
	if (!status_request(req, &json, &name))
		return reply(out, out_len, "drfd-status 2 error=unknown-request\n");
	return answer_status(d, json, name, out, out_len, stream);
}

/* drfd_req_answer(), and the status to go on with (a stream NULL: answered whole). */
static int answer(struct drfd *d, int fd, const struct drfd_req *r, char **out, size_t *out_len,
		  struct status_stream **stream)
{
	const char *line = r->buf ? r->buf : "";
	/* Task requests are answered in their own format, refusals included. */
	bool task = strncmp(line, "task", 4) == 0;
	char *req;
	int n;

	*out = NULL;
	*out_len = 0;
	if (r->seen > DRF_REQ_MAX && task)
		return reply(out, out_len, "drfd-task 1 refused\nrequest too long: %zu bytes, the "
			     "limit is %d\n", r->seen, DRF_REQ_MAX);
	if (r->seen > DRF_REQ_MAX)
		return reply(out, out_len, "drfd-status 2 error=request-too-long\n");
	/* A NUL would end the request early: what follows it would be dropped, not run. */
	if (memchr(line, '\0', r->len) && task)
		return reply(out, out_len, "drfd-task 1 refused\nmalformed request: it holds a "
			     "NUL byte\n");
	if (memchr(line, '\0', r->len))
		return reply(out, out_len, "drfd-status 2 error=malformed-request\n");
	req = strndup(line, r->len);
	if (!req)
		return -ENOMEM;
	/* "\r\n" from a terminal or socat ends the line too. */
	if (r->len && req[r->len - 1] == '\r')
		req[r->len - 1] = '\0';
	n = dispatch(d, fd, r->sender, req, out, out_len, stream);
	free(req);
	return n;
}

int drfd_req_answer(struct drfd *d, int fd, const struct drfd_req *r, char **out,
		    size_t *out_len)
{
	return answer(d, fd, r, out, out_len, NULL);
}

/*
 * Sends what the socket takes now. Done or failed: closed; but a part of a
 * status, whose next part is rendered at the next turn that finds room.
 */
static void conn_send(struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (sd_event_source_set_io_events(c->io, EPOLLOUT) < 0)
				break;
			return;
		}
		if (n <= 0)
			break;
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out_len && c->status) {
		free(c->out);
		c->out = NULL;
		c->out_len = c->out_off = 0;
		if (sd_event_source_set_io_events(c->io, EPOLLOUT) >= 0)
			return;
	}
	conn_free(c);
}

/* The deadline for the answer in c->out to be taken. */
static int send_deadline(struct conn *c)
{
	int r = sd_event_source_set_time_relative(c->timeout, DRFD_SEND_TIMEOUT_USEC);

	return r < 0 ? r : sd_event_source_set_enabled(c->timeout, SD_EVENT_ONESHOT);
}

/*
 * The next part of c's status, now that the last one is sent, with a deadline
 * of its own: a client that keeps reading is never cut off, one that stops is
 * dropped a deadline after.
 */
static int conn_next_part(struct conn *c)
{
	int r = status_part(c->l->d, c->status, &c->out, &c->out_len);

	if (r < 0)
		return r;
	c->out_off = 0;
	if (c->status->done) {
		free(c->status);
		c->status = NULL;
	}
	return send_deadline(c);
}

/* The reload's writes are made (or it waited long enough): its answer, sent. */
static void reload_done(struct conn *c, bool done)
{
	c->reloading = false;
	if (drfd_reload_answer(c->l->d, done, &c->out, &c->out_len) < 0 || send_deadline(c) < 0) {
		conn_free(c);
		return;
	}
	conn_send(c);
}

static void reload_settled(struct drfd *d, void *data)
{
	(void)d;
	reload_done(data, true);
}

/* The request is complete: the answer, and the deadline to send it. */
static void conn_answer(struct conn *c)
{
	struct drfd_listener *l = c->l;
	int r = answer(l->d, c->fd, &c->req, &c->out, &c->out_len, &c->status);

	if (c->req.seen > DRF_REQ_MAX)
		l->st.too_long++;
	drfd_req_free(&c->req);
	/*
	 * A reload in force: answered when its writes are made, or at the wait's
	 * end. Nothing more is read meanwhile (a client may have shut its side);
	 * a hang-up still ends the wait (EPOLLHUP comes whatever the events).
	 */
	if (r == 1) {
		c->reloading = true;
		sd_event_source_set_io_events(c->io, 0);
		if (sd_event_source_set_time_relative(c->timeout, DRFD_RELOAD_WAIT_USEC) < 0 ||
		    sd_event_source_set_enabled(c->timeout, SD_EVENT_ONESHOT) < 0 ||
		    drfd_when_settled(l->d, reload_settled, c) < 0)
			reload_done(c, false);
		return;
	}
	if (r < 0 || !c->out || send_deadline(c) < 0) {
		conn_free(c);
		return;
	}
	conn_send(c);
}

/*
 * read() of fd, noting in r which process sent what was read: the kernel
 * stamps each part with its sender (SO_PASSCRED on the listener, inherited),
 * and a read never joins parts of two senders.
 */
static ssize_t read_stamped(int fd, char *buf, size_t len, struct drfd_req *r)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(struct ucred))];
	} cm;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &cm,
			    .msg_controllen = sizeof(cm) };
	ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);

	if (n <= 0)
		return n;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		struct ucred uc;

		/* File descriptors a client passed (none is asked for): closed, never kept. */
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
			size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < k; i++) {
				int x;

				memcpy(&x, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
				close(x);
			}
			continue;
		}
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_CREDENTIALS ||
		    h->cmsg_len < CMSG_LEN(sizeof(uc)))
			continue;
		memcpy(&uc, CMSG_DATA(h), sizeof(uc));
		if (r->sender == 0)
			r->sender = uc.pid;
		else if (r->sender != uc.pid)
			r->sender = -1;
	}
	return n;
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct conn *c = userdata;
	char chunk[8192];
	ssize_t n;
	int r;

	(void)s;
	drfd_loop_doing(&c->l->d->loop, "socket");
	if (c->out || c->status) {
		if (!(revents & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return 0;
		/* Between two parts of a status: the next one, unless the client is gone. */
		if (!c->out && ((revents & (EPOLLERR | EPOLLHUP)) || conn_next_part(c) < 0)) {
			conn_free(c);
			return 0;
		}
		conn_send(c);
		return 0;
	}
	if (!(revents & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		return 0;
	/* One read per wakeup: a client that streams cannot keep the loop to itself. */
	n = read_stamped(fd, chunk, sizeof(chunk), &c->req);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	/* Waiting for a reload's writes: only a hang-up counts (the reload stays in force). */
	if (c->reloading) {
		if (n < 0 || (revents & (EPOLLHUP | EPOLLERR)))
			conn_free(c);
		return 0;
	}
	/* A client that hangs up without asking gets nothing. */
	if (n < 0 || (n == 0 && c->req.seen == 0)) {
		conn_free(c);
		return 0;
	}
	r = drfd_req_feed(&c->req, chunk, (size_t)n);
	if (r < 0)
		conn_free(c);
	else if (r > 0)
		conn_answer(c);
	return 0;
}

static int on_conn_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct conn *c = userdata;

	(void)s;
	(void)usec;
	if (c->reloading) {
		drfd_settled_cancel(c->l->d, c);
		reload_done(c, false);
		return 0;
	}
	c->l->st.dropped++;
	conn_free(c);
	return 0;
}

/*
 * Under the caps (listener.h)? Root may go past the overall one, by its own
 * slots. Root's own socket serves root alone, DRFD_CONN_MAX at once.
 */
static bool admit(const struct drfd_listener *l, uid_t uid)
{
	unsigned mine = 0;

	if (l->root_only)
		return uid == 0 && l->st.conns < DRFD_CONN_MAX;
	if (uid == 0)
		return l->st.conns < DRFD_CONN_MAX + DRFD_CONN_ROOT;
	if (l->st.conns - l->st.root_conns >= DRFD_CONN_MAX)
		return false;
	for (const struct conn *c = l->conns; c; c = c->next)
		mine += c->uid == uid;
	return mine < DRFD_CONN_MAX_UID;
}

/*
 * Closes a connection over a cap. Returns how long accepting should pause,
 * in usec: 0 unless that was too many refusals for now.
 */
static uint64_t refuse(struct drfd_listener *l, int cfd, uid_t uid)
{
	static const char busy[] = "drfd-status 2 error=busy\n";
	static const char denied[] = "drfd-status 2 error=denied\n";
	bool d = l->root_only && uid != 0;
	uint64_t now = 0;

	/* Best effort: the socket is new, so its buffer has room for one line. */
	if (send(cfd, d ? denied : busy, d ? sizeof(denied) - 1 : sizeof(busy) - 1,
		 MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* closed below either way */
	}
	close(cfd);
	l->st.refused++;
	sd_event_now(l->d->event, CLOCK_MONOTONIC, &now);
	if (!l->refused_log_at || now - l->refused_log_at >= REFUSED_LOG_USEC) {
		drf_log(l->d->log, LOG_WARNING, "status socket: refused %llu connections over the "
						"limits (%d per user, %d in all; root always gets "
						"in), the last of uid %d",
			(unsigned long long)(l->st.refused - l->refused_logged), DRFD_CONN_MAX_UID,
			DRFD_CONN_MAX, (int)uid);
		l->refused_logged = l->st.refused;
		l->refused_log_at = now;
	}
	if (now - l->refuse_window_at >= DRFD_REFUSE_WINDOW_USEC) {
		l->refuse_window_at = now;
		l->refuse_in_window = 0;
	}
	if (++l->refuse_in_window < DRFD_REFUSE_MAX)
		return 0;
	l->st.refuse_pauses++;
	return l->refuse_window_at + DRFD_REFUSE_WINDOW_USEC - now;
}

static void conn_new(struct drfd_listener *l, int cfd, uid_t uid)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c) {
		close(cfd);
		return;
	}
	c->l = l;
	c->fd = cfd;
	c->uid = uid;
	c->next = l->conns;
	if (l->conns)
		l->conns->prev = c;
	l->conns = c;
	l->st.conns++;
	l->st.accepted++;
	if (uid == 0)
		l->st.root_conns++;
	if (sd_event_add_io(l->d->event, &c->io, cfd, EPOLLIN, on_conn_io, c) < 0 ||
	    sd_event_source_set_priority(c->io, SOCK_PRIORITY) < 0 ||
	    sd_event_add_time_relative(l->d->event, &c->timeout, CLOCK_MONOTONIC,
				       DRFD_REQ_TIMEOUT_USEC, 0, on_conn_timeout, c) < 0 ||
	    sd_event_source_set_priority(c->timeout, SOCK_PRIORITY) < 0)
		conn_free(c);
}

/* The listener off for usec; the retry timer turns it back on. */
static void pause_accepting(struct drfd_listener *l, uint64_t usec)
{
	sd_event_source_set_enabled(l->src, SD_EVENT_OFF);
	/* The timer was made with the listener: arming it cannot run out of memory. */
	if (sd_event_source_set_time_relative(l->retry, usec) < 0 ||
	    sd_event_source_set_enabled(l->retry, SD_EVENT_ONESHOT) < 0)
		sd_event_source_set_enabled(l->src, SD_EVENT_ON);
}

/*
 * accept failed for want of file descriptors (or memory): the pending
 * connection stays in the backlog, so a listener left on would wake the loop at
 * once, again and again. Off for a while instead, twice as long each time.
 */
static void back_off(struct drfd_listener *l, int err)
{
	uint64_t delay = l->backoff_usec;

	l->st.backoffs++;
	if (!l->backing_off)
		drf_log(l->d->log, LOG_WARNING, "status socket: cannot accept a connection: %s; "
						"retrying in %llu ms, then less often (up to once "
						"a second) while it fails",
			strerror(-err), (unsigned long long)(delay / 1000));
	l->backing_off = true;
	l->backoff_usec = delay * 2 > DRFD_BACKOFF_MAX_USEC ? DRFD_BACKOFF_MAX_USEC : delay * 2;
	pause_accepting(l, delay);
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct drfd_listener *l = userdata;

	(void)s;
	(void)usec;
	sd_event_source_set_enabled(l->src, SD_EVENT_ON);
	return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct drfd_listener *l = userdata;

	(void)s;
	(void)revents;
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		uid_t uid;

		if (cfd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (cfd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (cfd < 0) {
			/* EMFILE, ENFILE, ENOBUFS, ENOMEM, or one that would repeat as well */
			back_off(l, -errno);
			return 0;
		}
		if (l->backing_off)
			drf_log(l->d->log, LOG_NOTICE, "status socket: accepting connections "
						       "again");
		l->backing_off = false;
		l->backoff_usec = DRFD_BACKOFF_MIN_USEC;
		/* Who connects, now: the caps are per user. Unknown is a user, never root. */
		uid = getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 ? cr.uid : (uid_t)-1;
		if (admit(l, uid)) {
			conn_new(l, cfd, uid);
		} else {
			uint64_t pause = refuse(l, cfd, uid);

			if (pause) {
				pause_accepting(l, pause);
				return 0;
			}
		}
	}
	return 0;
}

static const char *file_kind(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFLNK:
		return "a symbolic link";
	case S_IFIFO:
		return "a FIFO";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	}
	return "not a socket";
}

static int not_a_socket(const char *path, const struct stat *st, char *why, size_t len)
{
	snprintf(why, len, "status-socket '%s' is %s, not a socket: drfd replaces only a socket "
		 "that nobody serves, and leaves this alone; remove it or set another "
		 "status-socket", path, file_kind(st->st_mode));
	return -EEXIST;
}

/*
 * bind found path taken. A socket that nobody serves (its drfd died) is removed,
 * if it is still the one looked at; anything else is left as it is.
 */
static int take_stale(const char *path, const struct sockaddr_un *sa, char *why, size_t len)
{
	struct stat st, again;
	int probe, r;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0; /* gone meanwhile */
		r = -errno;
		snprintf(why, len, "cannot look at status-socket '%s': %s", path, strerror(-r));
		return r;
	}
	if (!S_ISSOCK(st.st_mode))
		return not_a_socket(path, &st, why, len);
	/* Non-blocking: a live drfd with a full backlog says EAGAIN instead of making us wait. */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (probe < 0) {
		r = -errno;
		snprintf(why, len, "cannot create a socket: %s", strerror(-r));
		return r;
	}
	r = connect(probe, (const struct sockaddr *)sa, sizeof(*sa)) == 0 ? 0 : -errno;
	close(probe);
	if (r == 0 || r == -EAGAIN) {
		snprintf(why, len, "status-socket '%s' is served by another drfd; give each drfd "
			 "its own status-socket", path);
		return -EADDRINUSE;
	}
	if (r != -ECONNREFUSED) {
		snprintf(why, len, "cannot tell whether status-socket '%s' is in use: %s; left as "
			 "it is", path, strerror(-r));
		return r;
	}
	if (lstat(path, &again) < 0 || again.st_dev != st.st_dev || again.st_ino != st.st_ino) {
		snprintf(why, len, "status-socket '%s' changed while drfd looked at it; left as "
			 "it is", path);
		return -EAGAIN;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		r = -errno;
		snprintf(why, len, "cannot remove the stale status-socket '%s': %s", path,
			 strerror(-r));
		return r;
	}
	return 0;
}

/* Is path still the socket l bound? */
static bool still_ours(const struct drfd_listener *l, const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == l->dev &&
	       st.st_ino == l->ino;
}

/* Binds and serves path: the status socket (root_only false) or root's own. */
static int listen_at(struct drfd *d, const char *path, const char *group, bool root_only,
		     struct drfd_listener **ret, char *why, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)], *slash;
	struct drfd_listener *l;
	struct stat st;
	mode_t mode = 0600;
	gid_t gid = 0;
	int r;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, len, "status-socket '%s' is too long for a socket path", path);
		return -ENAMETOOLONG;
	}
	if (group) {
		struct group *g = getgrnam(group);

		if (!g) {
			snprintf(why, len, "status-group '%s': no such group", group);
			return -ENOENT;
		}
		gid = g->gr_gid;
		mode = 0660;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* Anything but a socket at the path is someone's file: refused, untouched. */
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
		return not_a_socket(path, &st, why, len);
	/* Its directory, as the administrator named it (symlinks followed): mkdir -p. */
	memcpy(dir, path, strlen(path) + 1);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	r = slash ? drf_mkdir_p_at(AT_FDCWD, dir, 0755) : 0;
	if (r < 0) {
		snprintf(why, len, "cannot create the directory of status-socket '%s': %s", path,
			 strerror(-r));
		return r;
	}
	l = calloc(1, sizeof(*l));
	if (!l || !(l->path = strdup(path))) {
		free(l);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	l->d = d;
	l->root_only = root_only;
	l->backoff_usec = DRFD_BACKOFF_MIN_USEC;
	l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		r = -errno;
		snprintf(why, len, "cannot create a socket: %s", strerror(-r));
		free(l->path);
		free(l);
		return r;
	}
	if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EADDRINUSE)
			goto fail;
		r = take_stale(path, &sa, why, len);
		if (r < 0) {
			close(l->fd);
			free(l->path);
			free(l);
			return r;
		}
		if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			goto fail;
	}
	/* What drfd made, so that it removes that and nothing else. */
	if (lstat(path, &st) < 0)
		goto fail;
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	/* Each request stamped with the process that sent it (read_stamped()). */
	if (setsockopt(l->fd, SOL_SOCKET, SO_PASSCRED, &(int){ 1 }, sizeof(int)) < 0 ||
	    chmod(path, mode) < 0 || (group && lchown(path, (uid_t)-1, gid) < 0) ||
	    listen(l->fd, LISTEN_BACKLOG) < 0)
		goto fail_bound;
	r = sd_event_add_io(d->event, &l->src, l->fd, EPOLLIN, on_accept, l);
	if (r >= 0)
		r = sd_event_source_set_priority(l->src, SOCK_PRIORITY);
	if (r >= 0)
		r = sd_event_add_time_relative(d->event, &l->retry, CLOCK_MONOTONIC,
					       DRFD_BACKOFF_MIN_USEC, 0, on_retry, l);
	if (r >= 0)
		r = sd_event_source_set_enabled(l->retry, SD_EVENT_OFF);
	if (r < 0) {
		snprintf(why, len, "cannot watch status-socket '%s': %s", path, strerror(-r));
		sd_event_source_disable_unref(l->src);
		sd_event_source_disable_unref(l->retry);
		if (still_ours(l, path))
			unlink(path);
		close(l->fd);
		free(l->path);
		free(l);
		return r;
	}
	*ret = l;
	return 0;
fail_bound:
	r = -errno;
	if (still_ours(l, path))
		unlink(path);
	errno = -r;
fail:
	r = -errno;
	close(l->fd);
	free(l->path);
	free(l);
	snprintf(why, len, "cannot serve status-socket '%s': %s", path, strerror(-r));
	return r;
}

int drfd_listen(struct drfd *d, const char *path, const char *group, char *why, size_t len)
{
	struct drfd_listener *l;
	int r = listen_at(d, path, group, false, &l, why, len);

	if (r < 0)
		return r;
	d->socket_path = strdup(path);
	if (!d->socket_path) {
		snprintf(why, len, "out of memory");
		d->listener = l;
		drfd_unlisten(d);
		return -ENOMEM;
	}
	d->listener = l;
	d->listen_src = l->src;
	d->listen_fd = l->fd;
	return 0;
}

int drfd_listen_root(struct drfd *d, const char *status_socket, char *why, size_t len)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];

	if (drf_proto_root_socket(status_socket, path, sizeof(path)) < 0) {
		snprintf(why, len, "root's socket beside status-socket '%s' is too long for a "
			 "socket path", status_socket);
		return -ENAMETOOLONG;
	}
	return listen_at(d, path, NULL, true, &d->root_listener, why, len);
}

/* Closes l and its connections; removes its socket if it is still drfd's. */
static void unlisten(struct drfd *d, struct drfd_listener *l)
{
	struct stat st;

	sd_event_source_disable_unref(l->src);
	while (l->conns)
		conn_free(l->conns);
	sd_event_source_disable_unref(l->retry);
	close(l->fd);
	/* Only the socket drfd bound: whatever someone put there since is theirs. */
	if (still_ours(l, l->path))
		unlink(l->path);
	else if (lstat(l->path, &st) == 0)
		drf_log(d->log, LOG_NOTICE, "status-socket '%s' is no longer the socket drfd made: "
					    "left in place", l->path);
	free(l->path);
	free(l);
}

void drfd_unlisten(struct drfd *d)
{
	if (d->root_listener)
		unlisten(d, d->root_listener);
	d->root_listener = NULL;
	d->listen_src = NULL;
	d->listen_fd = -1;
	free(d->socket_path);
	d->socket_path = NULL;
	if (d->listener)
		unlisten(d, d->listener);
	d->listener = NULL;
}

void drfd_sock_stats(const struct drfd *d, struct drf_sock_stats *ret)
{
	const struct drfd_listener *l = d->listener;
	int on = SD_EVENT_OFF;

	*ret = (struct drf_sock_stats){ 0 };
	if (!l)
		return;
	*ret = l->st;
	ret->listening = l->src && sd_event_source_get_enabled(l->src, &on) >= 0 &&
			 on != SD_EVENT_OFF;
}

static void sockets_view(const struct drfd *d, struct drf_view *ret)
{
	drfd_sock_stats(d, &ret->sock);
}

const struct drfd_feature drfd_sockets_feature = {
	.name = "sockets",
	.view = sockets_view,
	.free = drfd_unlisten,
};
