// SPDX-License-Identifier: MIT
/*
 * The etcd client (see etcd.h): the calls every implementation shares, and
 * the real one over etcd's JSON gateway.
 *
 * The real one: each call is one HTTP POST, a curl easy handle in one multi
 * handle, which the sd-event loop drives (CURLMOPT_SOCKETFUNCTION: an io
 * source per socket curl names; CURLMOPT_TIMERFUNCTION: one time source).
 * curl's callbacks only gather bytes (a watch's are parsed as they come);
 * what is done is queued, and the queue is delivered by a defer source, so
 * that a user's callback never runs within curl (where it could not remove a
 * handle, as a cancel does) nor within the call that started it.
 *
 * A call goes to the current endpoint; one that cannot be reached (refused,
 * no such host, no connection within its share of the timeout) or answers
 * gRPC Unavailable makes the next endpoint the current one, and the call is
 * sent there, until every endpoint was tried once: those are the errors that
 * say etcd did nothing with the request. A member that takes the connection
 * and then never answers (stopped, overloaded) is left too: after a call
 * timed out there, the calls that follow go to the next endpoint; and a call
 * that is safe to send twice (see resendable()) gets only its share of the
 * time on each endpoint, and goes on to the next within its own timeout. A
 * watch that has had no answer within its share goes on the same way.
 * Watches ask for a member with a leader (require-leader metadata): etcd
 * cancels them on a member that lost it, and they end as broken streams.
 * With a user, calls wait for a token
 * (one authenticate for all of them) and carry it in the Authorization
 * header; a call whose token etcd refuses (expired: --auth-token-ttl) waits
 * for a new one and is sent again, once.
 */
#include "etcd.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <curl/curl.h>
#include <systemd/sd-event.h>

#include "clock.h"
#include "etcdjson.h"
#include "fileio.h"

/* The most a single answer may hold (a watch's stream is not bounded). */
#define ANSWER_MAX (64u << 20)

/* The shared part: checks, then the ops. */

struct etcd *etcd_new(const struct etcd_ops *ops, void *ctx, struct sd_event *event)
{
	struct etcd *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ops = ops;
	e->ctx = ctx;
	e->event = sd_event_ref(event);
	return e;
}

void etcd_close(struct etcd *e)
{
	if (!e)
		return;
	if (e->ops->close)
		e->ops->close(e->ctx);
	sd_event_unref(e->event);
	free(e);
}

/* Whether etcd would take req (with its type) as well formed. */
static bool req_ok(const struct etcd_req *q)
{
	if (!q->key || (etcd_single_key(q->range_end, q->prefix, q->from_key) && !*q->key))
		return false;
	if (q->type == ETCD_PUT && (!etcd_single_key(q->range_end, q->prefix, q->from_key) ||
				    (q->value_len && !q->value) || q->lease < 0))
		return false;
	return q->revision >= 0 && q->limit >= 0 && (unsigned)q->type <= ETCD_DELETE;
}

static int kv_call(struct etcd *e, const struct etcd_req *req, enum etcd_req_type type,
		   etcd_kv_cb cb, void *userdata, uint64_t *ret_id)
{
	struct etcd_req q = *req;
	uint64_t id;
	int r;

	q.type = type;
	if (!cb || !req_ok(&q))
		return -EINVAL;
	r = e->ops->kv(e->ctx, &q, cb, userdata, &id);
	if (r == 0 && ret_id)
		*ret_id = id;
	return r;
}

int etcd_range(struct etcd *e, const struct etcd_req *req, etcd_kv_cb cb, void *userdata,
	       uint64_t *ret_id)
{
	return kv_call(e, req, ETCD_RANGE, cb, userdata, ret_id);
}

int etcd_put(struct etcd *e, const struct etcd_req *req, etcd_kv_cb cb, void *userdata,
	     uint64_t *ret_id)
{
	return kv_call(e, req, ETCD_PUT, cb, userdata, ret_id);
}

int etcd_delete(struct etcd *e, const struct etcd_req *req, etcd_kv_cb cb, void *userdata,
		uint64_t *ret_id)
{
	return kv_call(e, req, ETCD_DELETE, cb, userdata, ret_id);
}

static bool ops_ok(const struct etcd_req *q, size_t n)
{
	if (n > ETCD_TXN_MAX || (n && !q))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!req_ok(&q[i]))
			return false;
	return true;
}

int etcd_txn(struct etcd *e, const struct etcd_txn *t, etcd_txn_cb cb, void *userdata,
	     uint64_t *ret_id)
{
	uint64_t id;
	int r;

	if (!cb || !t || (t->n_cmp && !t->cmp) || t->n_cmp > ETCD_TXN_MAX ||
	    !ops_ok(t->success, t->n_success) || !ops_ok(t->failure, t->n_failure))
		return -EINVAL;
	for (size_t i = 0; i < t->n_cmp; i++) {
		const struct etcd_cmp *c = &t->cmp[i];

		if (!c->key || !*c->key || (unsigned)c->target > ETCD_CMP_LEASE ||
		    (unsigned)c->result > ETCD_CMP_NOT_EQUAL || (c->value_len && !c->value))
			return -EINVAL;
	}
	r = e->ops->txn(e->ctx, t, cb, userdata, &id);
	if (r == 0 && ret_id)
		*ret_id = id;
	return r;
}

int etcd_compact(struct etcd *e, int64_t revision, etcd_kv_cb cb, void *userdata,
		 uint64_t *ret_id)
{
	uint64_t id;
	int r;

	if (!cb || revision <= 0)
		return -EINVAL;
	r = e->ops->compact(e->ctx, revision, cb, userdata, &id);
	if (r == 0 && ret_id)
		*ret_id = id;
	return r;
}

int etcd_lease_grant(struct etcd *e, int64_t ttl, int64_t id, etcd_lease_cb cb, void *userdata,
		     uint64_t *ret_id)
{
	uint64_t cid;
	int r;

	if (!cb || ttl <= 0 || id < 0)
		return -EINVAL;
	r = e->ops->lease_grant(e->ctx, ttl, id, cb, userdata, &cid);
	if (r == 0 && ret_id)
		*ret_id = cid;
	return r;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, etcd_lease_cb cb, void *userdata,
			 uint64_t *ret_id)
{
	uint64_t cid;
	int r;

	if (!cb || id <= 0)
		return -EINVAL;
	r = e->ops->lease_keepalive(e->ctx, id, cb, userdata, &cid);
	if (r == 0 && ret_id)
		*ret_id = cid;
	return r;
}

int etcd_lease_revoke(struct etcd *e, int64_t id, etcd_lease_cb cb, void *userdata,
		      uint64_t *ret_id)
{
	uint64_t cid;
	int r;

	if (!cb || id <= 0)
		return -EINVAL;
	r = e->ops->lease_revoke(e->ctx, id, cb, userdata, &cid);
	if (r == 0 && ret_id)
		*ret_id = cid;
	return r;
}

int etcd_watch(struct etcd *e, const struct etcd_watch_req *w, etcd_watch_cb cb, void *userdata,
	       uint64_t *ret_id)
{
	uint64_t id;
	int r;

	if (!cb || !w || !w->key || w->start_revision < 0 ||
	    (etcd_single_key(w->range_end, w->prefix, w->from_key) && !*w->key))
		return -EINVAL;
	r = e->ops->watch(e->ctx, w, cb, userdata, &id);
	if (r == 0 && ret_id)
		*ret_id = id;
	return r;
}

int etcd_cancel(struct etcd *e, uint64_t id)
{
	return e->ops->cancel(e->ctx, id);
}

bool etcd_pending(struct etcd *e, uint64_t id)
{
	return e->ops->pending(e->ctx, id);
}

void etcd_get_stats(struct etcd *e, struct etcd_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (e->ops->stats)
		e->ops->stats(e->ctx, ret);
}

int etcd_wait(struct etcd *e, uint64_t id, uint64_t timeout_usec)
{
	uint64_t deadline = drf_mono_usec(&drf_clock_system) + timeout_usec;

	while (etcd_pending(e, id)) {
		uint64_t now = drf_mono_usec(&drf_clock_system);
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = sd_event_run(e->event, deadline - now);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The real client. */

enum kind {
	K_KV,
	K_TXN,
	K_COMPACT,
	K_GRANT,
	K_KEEPALIVE,
	K_REVOKE,
	K_WATCH,
	K_AUTH, /* the client's own: a token */
};

struct client;

struct call {
	struct client *c;
	struct call *prev, *next; /* c->calls: every call whose callback is still to run */
	struct call *ready_next;  /* c->ready: to deliver */
	unsigned refs;
	uint64_t id;
	enum kind kind;
	enum etcd_req_type type; /* K_KV */
	int64_t lease;           /* K_REVOKE, K_KEEPALIVE: the lease asked about; K_GRANT: its id */
	uint64_t timeout_usec;   /* its whole time; 0: the client's */
	const char *path;
	char *body;
	CURL *easy;
	struct curl_slist *headers;
	char errbuf[CURL_ERROR_SIZE];
	/* The attempt under way */
	size_t endpoint;
	unsigned tries;           /* endpoints given up on for this call */
	char *token;              /* the token it carries */
	char *buf;                /* the answer (not a watch's) */
	size_t len, cap;
	struct etcd_stream stream; /* a watch's answer as it comes */
	bool got_answer;          /* a watch: an object came */
	bool ended;               /* a watch: etcd ended it (its END is queued) */
	bool token_refused;       /* a watch: refused for its token before any event */
	bool no_leader;           /* a watch: refused by a member without a leader, at once */
	bool unavailable;         /* a member said it has no leader (gRPC 14): kept across endpoints */
	bool slow;                /* a member took the request and did not answer in time: kept too */
	sd_event_source *first;   /* a watch: its share of the timeout for a first answer */
	int feed_err;             /* the answer could not be kept, or did not parse */
	/* State */
	bool linked, in_multi, waiting_auth, ready, done, reauthed;
	uint64_t deadline;        /* not a watch */
	int err;                  /* done: the result */
	char *msg;
	json_object *answer;      /* done, err 0: the answer */
	struct etcd_watch_msg *msgs; /* a watch: what is to be delivered, in order */
	size_t n_msgs, first_msg, cap_msgs;
	union {
		etcd_kv_cb kv;
		etcd_txn_cb txn;
		etcd_lease_cb lease;
		etcd_watch_cb watch;
	} cb;
	void *userdata;
};

struct sock {
	struct sock *next;
	curl_socket_t fd;
	sd_event_source *src;
};

struct client {
	unsigned refs;
	sd_event *event;
	CURLM *multi;
	sd_event_source *timer, *deliver;
	struct sock *socks;
	char **endpoints;
	size_t n_endpoints, cur;
	char *cacert, *cert, *key, *user, *password;
	uint64_t timeout_usec;
	const struct drf_logger *log;
	char *token;
	struct call *auth; /* the authenticate under way */
	struct call *calls, *calls_tail;
	struct call *ready, *ready_tail;
	uint64_t next_id;
	/*
	 * The TTLs of the leases this client granted or renewed (the latest
	 * first), so that a keepalive gets at most a third of its lease's TTL:
	 * one that waits longer may leave too little time to renew it elsewhere.
	 */
	struct lease_ttl {
		int64_t id, ttl;
	} ttls[16];
	size_t n_ttls;
	bool closing;
	bool global; /* curl_global_init done */
	struct etcd_stats stats;
};

static uint64_t now_usec(void)
{
	return drf_mono_usec(&drf_clock_system);
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, f);
	n = vasprintf(&s, f, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

static const char *endpoint_of(const struct call *k)
{
	return k->c->endpoints[k->endpoint];
}

static void free_msgs(struct call *k)
{
	for (size_t i = k->first_msg; i < k->n_msgs; i++)
		etcd_watch_msg_clear(&k->msgs[i]);
	free(k->msgs);
	k->msgs = NULL;
	k->n_msgs = k->first_msg = k->cap_msgs = 0;
}

static void call_free(struct call *k)
{
	sd_event_source_disable_unref(k->first);
	if (k->easy) {
		if (k->in_multi)
			curl_multi_remove_handle(k->c->multi, k->easy);
		curl_easy_cleanup(k->easy);
	}
	curl_slist_free_all(k->headers);
	etcd_stream_free(&k->stream);
	json_object_put(k->answer);
	free_msgs(k);
	/* An authenticate's body holds the password. */
	if (k->kind == K_AUTH && k->body)
		explicit_bzero(k->body, strlen(k->body));
	free(k->body);
	free(k->token);
	free(k->buf);
	free(k->msg);
	free(k);
}

static void call_unref(struct call *k)
{
	if (k && --k->refs == 0)
		call_free(k);
}

static void unready(struct client *c, struct call *k)
{
	struct call **p = &c->ready;

	if (!k->ready)
		return;
	c->ready_tail = NULL;
	while (*p) {
		if (*p == k) {
			*p = k->ready_next;
			if (!*p)
				break;
		}
		c->ready_tail = *p;
		p = &(*p)->ready_next;
	}
	k->ready = false;
	k->ready_next = NULL;
}

static void make_ready(struct client *c, struct call *k)
{
	if (k->ready || !k->linked)
		return;
	k->ready = true;
	k->ready_next = NULL;
	if (c->ready_tail)
		c->ready_tail->ready_next = k;
	else
		c->ready = k;
	c->ready_tail = k;
	sd_event_source_set_enabled(c->deliver, SD_EVENT_ONESHOT);
}

/* Out of the list of pending calls (its callback will not run again); drops the list's ref. */
static void unlink_call(struct client *c, struct call *k)
{
	if (!k->linked)
		return;
	unready(c, k);
	if (k->in_multi) {
		curl_multi_remove_handle(c->multi, k->easy);
		k->in_multi = false;
	}
	k->first = sd_event_source_disable_unref(k->first);
	if (k->prev)
		k->prev->next = k->next;
	else
		c->calls = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		c->calls_tail = k->prev;
	k->prev = k->next = NULL;
	k->linked = false;
	call_unref(k);
}

static struct call *find_call(struct client *c, uint64_t id)
{
	for (struct call *k = c->calls; k; k = k->next)
		if (k->id == id)
			return k;
	return NULL;
}

/*
 * A call that has its result: err (0, or why it failed) and msg (taken). A
 * watch's error is delivered after what it has queued.
 */
static void call_done(struct client *c, struct call *k, int err, char *msg)
{
	k->done = true;
	k->err = err;
	free(k->msg);
	k->msg = msg;
	make_ready(c, k);
}

static void auth_done(struct client *c, struct call *a, int err, char *msg);

/* The errno of a curl error. */
static int curl_errno(CURLcode res)
{
	switch (res) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_USE_SSL_FAILED:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
		return -EPROTO;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		return -ECONNRESET;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
		return -EINVAL;
	default:
		return -EIO;
	}
}

/* Whether the request did not reach an etcd that could take it (another endpoint may). */
static bool unreached(struct call *k, CURLcode res)
{
	curl_off_t sent = 0;

	if (res == CURLE_COULDNT_CONNECT || res == CURLE_COULDNT_RESOLVE_HOST)
		return true;
	if (res != CURLE_OPERATION_TIMEDOUT)
		return false;
	/*
	 * A timeout before the request could be sent (no connection, or a TLS
	 * handshake that never ended): that endpoint is away, and did nothing.
	 */
	curl_easy_getinfo(k->easy, CURLINFO_PRETRANSFER_TIME_T, &sent);
	return sent == 0;
}

/*
 * Whether k may be sent again after it went to a member that did not answer
 * (which may have done it all the same): a read; a keepalive (renewing twice
 * is renewing); an authenticate (one more token); a grant of a lease whose
 * id etcd picks (one granted unseen holds no key, and expires by its TTL).
 * Not a write, a compaction, a revoke or a grant of a given id: done twice,
 * their second answer would say what the first did was not so (a txn's
 * comparisons failing on its own write, -ENOENT, -EEXIST).
 */
static bool resendable(const struct call *k)
{
	switch (k->kind) {
	case K_KV:
		return k->type == ETCD_RANGE;
	case K_KEEPALIVE:
	case K_AUTH:
	case K_WATCH:
		return true;
	case K_GRANT:
		return k->lease == 0;
	default:
		return false;
	}
}

/*
 * k's endpoint took its request and did not answer in time: the calls that
 * follow go to the next one (unless another call moved them already).
 */
static void leave_endpoint(struct client *c, struct call *k)
{
	if (c->n_endpoints < 2 || c->cur != k->endpoint || c->closing)
		return;
	c->cur = (k->endpoint + 1) % c->n_endpoints;
	c->stats.failovers++;
	drf_log(c->log, LOG_DEBUG, "etcd: %s did not answer, the next calls go to %s",
		endpoint_of(k), c->endpoints[c->cur]);
}

/* The time an attempt of k may take, of the left it has. */
static uint64_t attempt_usec(const struct client *c, const struct call *k, uint64_t left)
{
	uint64_t share = left / (c->n_endpoints - k->tries);

	/* Too short a share would fail on a member that is merely slow. */
	if (!resendable(k) || share < 250 * DRF_USEC_PER_MSEC)
		return left;
	return share;
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *userdata);
static int on_first_timeout(sd_event_source *s, uint64_t usec, void *userdata);

static int set_headers(struct client *c, struct call *k)
{
	struct curl_slist *h = NULL, *n;
	char *auth = NULL;

	curl_slist_free_all(k->headers);
	k->headers = NULL;
	free(k->token);
	k->token = NULL;
	h = curl_slist_append(NULL, "Content-Type: application/json");
	/* No "Expect: 100-continue" round trip before a larger body. */
	n = h ? curl_slist_append(h, "Expect:") : NULL;
	/*
	 * The gateway passes Grpc-Metadata-* headers on as gRPC metadata:
	 * hasleader=true makes etcd refuse the watch on a member without a
	 * leader, and cancel it when its member loses the leader, rather than
	 * leave it silent on the minority side of a partition.
	 */
	if (n && k->kind == K_WATCH)
		n = curl_slist_append(n, "Grpc-Metadata-hasleader: true");
	if (n && k->kind != K_AUTH && c->token) {
		k->token = strdup(c->token);
		auth = fmt("Authorization: %s", c->token);
		n = k->token && auth ? curl_slist_append(n, auth) : NULL;
		free(auth);
	}
	if (!n) {
		curl_slist_free_all(h);
		return -ENOMEM;
	}
	k->headers = n;
	return 0;
}

/* Sends k (again) to its endpoint: 0, or -errno (it was not sent). */
static int start(struct client *c, struct call *k)
{
	uint64_t now = now_usec(), left;
	char *url;
	CURLcode e = CURLE_OK;
	int r;

	k->waiting_auth = false;
	if (k->kind != K_WATCH && now >= k->deadline)
		return -ETIMEDOUT;
	left = k->kind == K_WATCH ? c->timeout_usec : k->deadline - now;
	if (!k->easy) {
		k->easy = curl_easy_init();
		if (!k->easy)
			return -ENOMEM;
	}
	r = set_headers(c, k);
	if (r < 0)
		return r;
	url = fmt("%s%s", c->endpoints[k->endpoint], k->path);
	if (!url)
		return -ENOMEM;
	k->len = 0;
	k->got_answer = k->ended = k->token_refused = k->no_leader = false;
	k->feed_err = 0;
	k->errbuf[0] = 0;
	etcd_stream_free(&k->stream);
	free_msgs(k);
	unready(c, k);

	uint64_t attempt = attempt_usec(c, k, left);

	/* Each endpoint not yet tried gets its share of what is left to connect. */
	uint64_t connect = left / (c->n_endpoints - k->tries);
	if (connect < 500 * DRF_USEC_PER_MSEC)
		connect = left;

	e |= curl_easy_setopt(k->easy, CURLOPT_URL, url);
	e |= curl_easy_setopt(k->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	e |= curl_easy_setopt(k->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	e |= curl_easy_setopt(k->easy, CURLOPT_POST, 1L);
	e |= curl_easy_setopt(k->easy, CURLOPT_POSTFIELDS, k->body);
	e |= curl_easy_setopt(k->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(k->body));
	e |= curl_easy_setopt(k->easy, CURLOPT_HTTPHEADER, k->headers);
	e |= curl_easy_setopt(k->easy, CURLOPT_WRITEFUNCTION, on_data);
	e |= curl_easy_setopt(k->easy, CURLOPT_WRITEDATA, k);
	e |= curl_easy_setopt(k->easy, CURLOPT_PRIVATE, k);
	e |= curl_easy_setopt(k->easy, CURLOPT_ERRORBUFFER, k->errbuf);
	e |= curl_easy_setopt(k->easy, CURLOPT_NOSIGNAL, 1L);
	e |= curl_easy_setopt(k->easy, CURLOPT_CONNECTTIMEOUT_MS,
			      (long)(connect / DRF_USEC_PER_MSEC + 1));
	/* A watch has no end; the rest, their attempt's time (see attempt_usec()). */
	e |= curl_easy_setopt(k->easy, CURLOPT_TIMEOUT_MS,
			      k->kind == K_WATCH ? 0L : (long)(attempt / DRF_USEC_PER_MSEC + 1));
	if (k->kind == K_WATCH) {
		/* A stream may be quiet for hours: the kernel's probes find a peer gone. */
		e |= curl_easy_setopt(k->easy, CURLOPT_TCP_KEEPALIVE, 1L);
		e |= curl_easy_setopt(k->easy, CURLOPT_TCP_KEEPIDLE, 30L);
		e |= curl_easy_setopt(k->easy, CURLOPT_TCP_KEEPINTVL, 10L);
	}
	if (c->cacert)
		e |= curl_easy_setopt(k->easy, CURLOPT_CAINFO, c->cacert);
	if (c->cert)
		e |= curl_easy_setopt(k->easy, CURLOPT_SSLCERT, c->cert);
	if (c->key)
		e |= curl_easy_setopt(k->easy, CURLOPT_SSLKEY, c->key);
	free(url);
	if (e != CURLE_OK)
		return -ENOMEM;
	if (k->kind == K_WATCH) {
		/* A stream has no end, but its first answer (created) comes at once. */
		uint64_t at = now + attempt_usec(c, k, c->timeout_usec);

		if (k->first)
			r = sd_event_source_set_time(k->first, at);
		else
			r = sd_event_add_time(c->event, &k->first, CLOCK_MONOTONIC, at,
					      DRF_USEC_PER_MSEC, on_first_timeout, k);
		if (r >= 0)
			r = sd_event_source_set_enabled(k->first, SD_EVENT_ONESHOT);
		if (r < 0)
			return r;
	}
	if (curl_multi_add_handle(c->multi, k->easy) != CURLM_OK)
		return -ENOMEM;
	k->in_multi = true;
	return 0;
}

/* Sends k to the next endpoint if it has one not tried: true if it went. */
static bool failover(struct client *c, struct call *k)
{
	size_t next = (k->endpoint + 1) % c->n_endpoints;
	int r;

	if (k->tries + 1 >= c->n_endpoints || c->closing)
		return false;
	drf_log(c->log, LOG_DEBUG, "etcd: %s unreachable (%s), trying %s", endpoint_of(k),
		k->errbuf[0] ? k->errbuf : "no answer", c->endpoints[next]);
	k->tries++;
	c->stats.failovers++;
	if (c->cur == k->endpoint)
		c->cur = next;
	k->endpoint = next;
	r = start(c, k);
	if (r < 0) {
		call_done(c, k, r, fmt("%s: %s", endpoint_of(k), strerror(-r)));
		if (k->kind == K_AUTH)
			auth_done(c, k, r, NULL);
	}
	return true;
}

static int start_auth(struct client *c);

/* k waits for a token (a new one if the one it had was refused). */
static void wait_token(struct client *c, struct call *k)
{
	int r;

	k->waiting_auth = true;
	if (c->auth)
		return;
	r = start_auth(c);
	if (r < 0)
		auth_done(c, NULL, r, fmt("etcd: cannot authenticate: %s", strerror(-r)));
}

/* k was refused for its token: once, it gets a new one and goes again. */
static bool retry_token(struct client *c, struct call *k)
{
	int r;

	if (!c->user || k->reauthed || k->kind == K_AUTH || c->closing)
		return false;
	k->reauthed = true;
	/* A watch's END that said so is not delivered: the watch goes again. */
	free_msgs(k);
	unready(c, k);
	drf_log(c->log, LOG_DEBUG, "etcd: %s refused the token, authenticating again",
		endpoint_of(k));
	if (c->token && k->token && strcmp(c->token, k->token) == 0) {
		free(c->token);
		c->token = NULL;
	}
	if (c->token) {
		/* Renewed since k left: k goes with the new one. */
		r = start(c, k);
		if (r < 0)
			call_done(c, k, r, fmt("%s: %s", endpoint_of(k), strerror(-r)));
		return true;
	}
	wait_token(c, k);
	return true;
}

static char *curl_msg(struct call *k, CURLcode res)
{
	const char *what = k->errbuf[0] ? k->errbuf : curl_easy_strerror(res);

	if (k->tries)
		return fmt("%s: %s (and %u other endpoint%s%s)", endpoint_of(k), what, k->tries,
			   k->tries > 1 ? "s" : "",
			   k->slow ? ", one of which took the request and did not answer in time" : "");
	return fmt("%s: %s", endpoint_of(k), what);
}

static int first_object(void *ctx, json_object *o)
{
	json_object **ret = ctx;

	if (!*ret)
		*ret = o;
	else
		json_object_put(o);
	return 0;
}

/* A call's transfer ended (not a watch's): what it says. */
static void unary_finished(struct client *c, struct call *k, CURLcode res)
{
	struct etcd_stream s = { 0 };
	json_object *o = NULL;
	long status = 0;
	const char *text;
	int code, r;

	if (res != CURLE_OK) {
		bool away = unreached(k, res);

		if (away && failover(c, k))
			return;
		if (res == CURLE_OPERATION_TIMEDOUT) {
			/* It took the request and did not answer: sent elsewhere if it may be. */
			k->slow |= !away;
			if (resendable(k) && now_usec() < k->deadline && failover(c, k))
				return;
			leave_endpoint(c, k);
		}
		r = curl_errno(res);
		if (res == CURLE_WRITE_ERROR && k->feed_err)
			r = k->feed_err;
		/*
		 * The last endpoint away, but another had no leader: the cluster is
		 * electing. Or another took the request and did not answer (a
		 * linearizable read waits for a leader): that is the call's fate.
		 */
		if (away && k->unavailable)
			r = -EAGAIN;
		else if (away && k->slow)
			r = -ETIMEDOUT;
		call_done(c, k, r, curl_msg(k, res));
		goto auth;
	}
	curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &status);
	r = etcd_stream_feed(&s, k->buf ? k->buf : "", k->len, first_object, &o);
	etcd_stream_free(&s);
	if (r < 0 || !o) {
		json_object_put(o);
		r = status == 404 ? -EOPNOTSUPP : status == 200 ? -EBADMSG : -EPROTO;
		call_done(c, k, r,
			  fmt("%s: HTTP %ld, an answer that is not etcd's gateway's (%s%s)",
			      endpoint_of(k), status, k->path, status == 404 ? " not found" : ""));
		goto auth;
	}
	if (etcd_json_error(o, &code, &text)) {
		if (code == 16 && retry_token(c, k)) {
			json_object_put(o);
			return;
		}
		if (code == 14)
			k->unavailable = true;
		if (code == 14 && failover(c, k)) {
			json_object_put(o);
			return;
		}
		call_done(c, k, etcd_errno(code, text),
			  fmt("%s: %s (gRPC code %d)", endpoint_of(k), text, code));
		json_object_put(o);
		goto auth;
	}
	if (status != 200) {
		json_object_put(o);
		call_done(c, k, -EPROTO, fmt("%s: HTTP %ld", endpoint_of(k), status));
		goto auth;
	}
	json_object_put(k->answer);
	k->answer = o;
	call_done(c, k, 0, NULL);
auth:
	if (k->kind == K_AUTH)
		auth_done(c, k, k->err, NULL);
}

/* A watch's transfer ended: its END, unless etcd sent one. */
static void watch_finished(struct client *c, struct call *k, CURLcode res)
{
	long status = 0;

	if (k->token_refused && retry_token(c, k))
		return;
	if (k->no_leader) {
		/* Nothing was delivered: another member may have a leader. */
		free_msgs(k);
		unready(c, k);
		snprintf(k->errbuf, sizeof(k->errbuf), "etcdserver: no leader");
		if (failover(c, k))
			return;
		leave_endpoint(c, k);
		call_done(c, k, -EAGAIN, fmt("%s: etcdserver: no leader", endpoint_of(k)));
		return;
	}
	if (k->ended)
		return; /* what etcd said is queued; the transfer was stopped after it */
	if (!k->got_answer && unreached(k, res) && failover(c, k))
		return;
	curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &status);
	if (k->feed_err)
		call_done(c, k, k->feed_err,
			  fmt("%s: the watch's stream is not etcd's gateway's (HTTP %ld)",
			      endpoint_of(k), status));
	else if (!k->got_answer && res != CURLE_OK)
		call_done(c, k, curl_errno(res), curl_msg(k, res));
	else if (!k->got_answer && status == 404)
		call_done(c, k, -EOPNOTSUPP, fmt("%s: HTTP 404 (%s not found)", endpoint_of(k),
						 k->path));
	else
		call_done(c, k, -ECONNRESET,
			  fmt("%s: the watch's stream ended: %s", endpoint_of(k),
			      res == CURLE_OK ? "closed by etcd"
			      : k->errbuf[0]  ? k->errbuf
					      : curl_easy_strerror(res)));
}

/* Every transfer curl finished. No user code runs here. */
static void check_done(struct client *c)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(c->multi, &left))) {
		struct call *k = NULL;
		CURLcode res = m->data.result;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&k);
		/* m is curl's, and gone once the handle is removed. */
		curl_multi_remove_handle(c->multi, k->easy);
		k->in_multi = false;
		if (k->kind == K_WATCH)
			watch_finished(c, k, res);
		else
			unary_finished(c, k, res);
	}
}

/*
 * A watch had no answer within its share of the timeout: its member took the
 * request and is silent (stopped, overloaded). Nothing was delivered, so it
 * goes to the next endpoint, or ends with -ETIMEDOUT.
 */
static int on_first_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct call *k = userdata;
	struct client *c = k->c;

	(void)s;
	(void)usec;
	if (k->got_answer || !k->in_multi)
		return 0;
	curl_multi_remove_handle(c->multi, k->easy);
	k->in_multi = false;
	snprintf(k->errbuf, sizeof(k->errbuf), "no answer within %llu ms",
		 (unsigned long long)(attempt_usec(c, k, c->timeout_usec) / DRF_USEC_PER_MSEC));
	if (failover(c, k))
		return 0;
	leave_endpoint(c, k);
	call_done(c, k, -ETIMEDOUT, curl_msg(k, CURLE_OPERATION_TIMEDOUT));
	return 0;
}

/* Bytes of an answer. A watch's are parsed as they come. */
static int watch_object(void *ctx, json_object *o)
{
	struct call *k = ctx;
	struct etcd_watch_msg m;
	bool first = !k->got_answer;
	int r = etcd_json_watch_msg(o, &m);

	json_object_put(o);
	if (r < 0)
		return r;
	k->got_answer = true;
	k->first = sd_event_source_disable_unref(k->first);
	if (m.kind == ETCD_WATCH_NOTHING) {
		etcd_watch_msg_clear(&m);
		return 0;
	}
	if (m.kind == ETCD_WATCH_END) {
		bool events = false;

		for (size_t i = k->first_msg; i < k->n_msgs; i++)
			events = events || k->msgs[i].kind == ETCD_WATCH_EVENTS;
		k->ended = true;
		/*
		 * Refused for its token before any event: sent again with a new
		 * one (watch_finished); its END is delivered if it cannot be.
		 */
		k->token_refused = m.code == 16 && !events;
		if (m.code == 14 && first) {
			/* Refused at once (its member has no leader): watch_finished goes on. */
			k->no_leader = true;
			etcd_watch_msg_clear(&m);
			return -ECANCELED;
		}
		if (m.code == 14) {
			/*
			 * Cancelled for its member having lost the leader: a broken
			 * stream (watch again from the last revision seen + 1), and
			 * the calls that follow go to another member.
			 */
			m.err = -ECONNRESET;
			leave_endpoint(k->c, k);
		}
		char *msg = fmt("%s: %s", endpoint_of(k), m.msg);

		if (msg) {
			free(m.msg);
			m.msg = msg;
		}
	}
	if (k->n_msgs == k->cap_msgs) {
		size_t cap = k->cap_msgs ? 2 * k->cap_msgs : 4;
		struct etcd_watch_msg *p = realloc(k->msgs, cap * sizeof(*p));

		if (!p) {
			etcd_watch_msg_clear(&m);
			return -ENOMEM;
		}
		k->msgs = p;
		k->cap_msgs = cap;
	}
	k->msgs[k->n_msgs++] = m;
	make_ready(k->c, k);
	/* After an END, nothing more: the transfer stops here. */
	return m.kind == ETCD_WATCH_END ? -ECANCELED : 0;
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *userdata)
{
	struct call *k = userdata;
	size_t n = size * nmemb;

	if (k->kind == K_WATCH) {
		int r = etcd_stream_feed(&k->stream, p, n, watch_object, k);

		if (r == -ECANCELED)
			return 0; /* stops the transfer: CURLE_WRITE_ERROR */
		if (r < 0) {
			k->feed_err = r;
			return 0;
		}
		return n;
	}
	if (k->len + n >= ANSWER_MAX) {
		k->feed_err = -EFBIG;
		return 0;
	}
	if (k->len + n > k->cap) {
		size_t cap = k->cap ? k->cap : 4096;
		char *b;

		while (cap < k->len + n)
			cap *= 2;
		b = realloc(k->buf, cap);
		if (!b) {
			k->feed_err = -ENOMEM;
			return 0;
		}
		k->buf = b;
		k->cap = cap;
	}
	memcpy(k->buf + k->len, p, n);
	k->len += n;
	return n;
}

/* The loop's side of curl. */

static struct sock **find_sock(struct client *c, curl_socket_t fd)
{
	struct sock **p = &c->socks;

	while (*p && (*p)->fd != fd)
		p = &(*p)->next;
	return p;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct client *c = userdata;
	int flags = 0, running;

	(void)s;
	if (revents & EPOLLIN)
		flags |= CURL_CSELECT_IN;
	if (revents & EPOLLOUT)
		flags |= CURL_CSELECT_OUT;
	if (revents & (EPOLLERR | EPOLLHUP))
		flags |= CURL_CSELECT_ERR;
	curl_multi_socket_action(c->multi, fd, flags, &running);
	check_done(c);
	return 0;
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct client *c = userp;
	struct sock **p = find_sock(c, fd), *s = *p;
	uint32_t ev = 0;

	(void)easy;
	(void)socketp;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			*p = s->next;
			sd_event_source_disable_unref(s->src);
			free(s);
		}
		return 0;
	}
	if (what & CURL_POLL_IN)
		ev |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev |= EPOLLOUT;
	/* A socket closed without a REMOVE left epoll: its source is made anew. */
	if (s && sd_event_source_set_io_events(s->src, ev) >= 0 &&
	    sd_event_source_set_enabled(s->src, SD_EVENT_ON) >= 0)
		return 0;
	if (s) {
		*p = s->next;
		sd_event_source_disable_unref(s->src);
		free(s);
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	s->fd = fd;
	if (sd_event_add_io(c->event, &s->src, fd, ev, on_io, c) < 0) {
		free(s);
		return -1;
	}
	s->next = c->socks;
	c->socks = s;
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct client *c = userdata;
	int running;

	(void)s;
	(void)usec;
	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(c);
	return 0;
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct client *c = userp;
	uint64_t now;

	(void)multi;
	if (timeout_ms < 0)
		return sd_event_source_set_enabled(c->timer, SD_EVENT_OFF) < 0 ? -1 : 0;
	sd_event_now(c->event, CLOCK_MONOTONIC, &now);
	now += (uint64_t)timeout_ms * DRF_USEC_PER_MSEC;
	if (sd_event_source_set_time(c->timer, now) < 0 ||
	    sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT) < 0)
		return -1;
	return 0;
}

/* Authentication. */

static int start_auth(struct client *c)
{
	struct call *a = calloc(1, sizeof(*a));
	int r;

	if (!a)
		return -ENOMEM;
	a->c = c;
	a->refs = 1;
	a->kind = K_AUTH;
	a->path = "/v3/auth/authenticate";
	a->endpoint = c->cur;
	a->deadline = now_usec() + c->timeout_usec;
	r = etcd_json_auth_req(c->user, c->password, &a->body);
	if (r == 0)
		r = start(c, a);
	if (r < 0) {
		call_free(a);
		return r;
	}
	c->auth = a;
	c->stats.authentications++;
	drf_log(c->log, LOG_DEBUG, "etcd: authenticating as '%s' at %s", c->user, endpoint_of(a));
	return 0;
}

/*
 * The token came (a, err 0), or none will (err): the calls that wait for it
 * go, or fail with err and msg (taken; NULL: a's).
 */
static void auth_done(struct client *c, struct call *a, int err, char *msg)
{
	char *token = NULL;

	if (a && a == c->auth)
		c->auth = NULL;
	if (err == 0 && a) {
		err = etcd_json_auth_resp(a->answer, &token);
		if (err < 0)
			msg = fmt("%s: the authenticate answer holds no token", endpoint_of(a));
	}
	if (err == 0) {
		free(c->token);
		c->token = token;
	} else if (!msg && a && a->msg) {
		msg = fmt("%s (as user '%s')", a->msg, c->user);
	}
	for (struct call *k = c->calls, *next; k; k = next) {
		next = k->next;
		if (!k->waiting_auth)
			continue;
		k->waiting_auth = false;
		/* To the endpoint that gave the token, not to one it left. */
		if (!k->tries)
			k->endpoint = c->cur;
		int r = err ? err : start(c, k);

		if (r < 0 && msg)
			call_done(c, k, r, strdup(msg));
		else if (r < 0)
			call_done(c, k, r, fmt("etcd: cannot authenticate: %s", strerror(-r)));
	}
	free(msg);
	if (a)
		call_free(a);
}

/* The TTLs of leases (c->ttls). */

static struct lease_ttl *find_ttl(struct client *c, int64_t id)
{
	for (size_t i = 0; i < c->n_ttls; i++)
		if (c->ttls[i].id == id)
			return &c->ttls[i];
	return NULL;
}

static void forget_ttl(struct client *c, int64_t id)
{
	struct lease_ttl *t = find_ttl(c, id);

	if (t) {
		memmove(t, t + 1, (size_t)(c->ttls + c->n_ttls - (t + 1)) * sizeof(*t));
		c->n_ttls--;
	}
}

/* Lease id has ttl seconds: kept first (the oldest goes when the table is full). */
static void note_ttl(struct client *c, int64_t id, int64_t ttl)
{
	const size_t max = sizeof(c->ttls) / sizeof(c->ttls[0]);

	forget_ttl(c, id);
	if (ttl <= 0)
		return;
	if (c->n_ttls == max)
		c->n_ttls--;
	memmove(c->ttls + 1, c->ttls, c->n_ttls * sizeof(c->ttls[0]));
	c->ttls[0] = (struct lease_ttl){ .id = id, .ttl = ttl };
	c->n_ttls++;
}

/*
 * A keepalive's time: a third of its lease's TTL at most, as a holder renews
 * a third of the way in; one that waited the whole call timeout (5 s) on a
 * member that does not answer would outlive a lease of 2 or 3 s, while no
 * other renewal goes. A lease this client did not grant: the client's.
 */
static uint64_t keepalive_usec(struct client *c, int64_t id)
{
	const struct lease_ttl *t = find_ttl(c, id);
	uint64_t third;

	if (!t)
		return c->timeout_usec;
	third = (uint64_t)t->ttl * DRF_USEC_PER_SEC / 3;
	return third < c->timeout_usec ? third : c->timeout_usec;
}

/* Delivery: the callbacks, from the loop. */

/* Why k failed, for its callback: never NULL. */
static const char *why(const struct call *k, const char *bad, int err)
{
	return bad ? bad : k->msg ? k->msg : strerror(-err);
}

static void deliver_unary(struct client *c, struct call *k)
{
	int err = k->err;
	char *bad = NULL;

	switch (k->kind) {
	case K_KV:
	case K_COMPACT: {
		struct etcd_resp r = { 0 };
		enum etcd_req_type t = k->kind == K_KV ? k->type : ETCD_PUT;

		if (!err && (err = etcd_json_kv_resp(k->answer, t, &r)) < 0)
			bad = fmt("%s: an answer that does not decode", endpoint_of(k));
		if (k->kind == K_COMPACT)
			r.type = ETCD_PUT;
		k->cb.kv(k->userdata, err, err ? why(k, bad, err) : NULL, err ? NULL : &r);
		etcd_resp_clear(&r);
		break;
	}
	case K_TXN: {
		struct etcd_txn_resp t = { 0 };

		if (!err && (err = etcd_json_txn_resp(k->answer, &t)) < 0)
			bad = fmt("%s: an answer that does not decode", endpoint_of(k));
		k->cb.txn(k->userdata, err, err ? why(k, bad, err) : NULL, err ? NULL : &t);
		etcd_txn_resp_clear(&t);
		break;
	}
	case K_GRANT:
	case K_KEEPALIVE:
	case K_REVOKE: {
		struct etcd_lease l = { 0 };

		if (!err && (err = etcd_json_lease_resp(k->answer, &l)) < 0)
			bad = fmt("%s: an answer that does not decode", endpoint_of(k));
		if (!err && k->kind != K_GRANT)
			l.id = k->lease;
		if (!err && k->kind != K_REVOKE)
			note_ttl(c, l.id, l.ttl);
		else if (err == -ENOENT || (!err && k->kind == K_REVOKE))
			forget_ttl(c, k->lease);
		if (!err && k->kind == K_KEEPALIVE && l.ttl <= 0) {
			err = -ENOENT;
			bad = fmt("%s: lease %" PRId64 " not found (expired or revoked)",
				  endpoint_of(k), k->lease);
		}
		k->cb.lease(k->userdata, err, err ? why(k, bad, err) : NULL, err ? NULL : &l);
		break;
	}
	case K_WATCH:
	case K_AUTH:
		break;
	}
	free(bad);
}

/* Delivers what k has; k is held by the caller. */
static void deliver(struct client *c, struct call *k)
{
	if (k->kind != K_WATCH) {
		if (!k->done)
			return;
		/* Out of the pending list first: its callback may wait for it, or cancel it. */
		k->refs++;
		unlink_call(c, k);
		deliver_unary(c, k);
		call_unref(k);
		return;
	}
	while (k->linked && k->first_msg < k->n_msgs) {
		struct etcd_watch_msg m = k->msgs[k->first_msg++];

		if (m.kind == ETCD_WATCH_END) {
			unlink_call(c, k);
			k->cb.watch(k->userdata, m.err ? m.err : -ECONNRESET,
				    m.msg ? m.msg : strerror(-(m.err ? m.err : ECONNRESET)),
				    m.err == -ESTALE ? &m.resp : NULL);
		} else {
			k->cb.watch(k->userdata, 0, NULL, &m.resp);
		}
		etcd_watch_msg_clear(&m);
	}
	if (k->first_msg == k->n_msgs)
		k->first_msg = k->n_msgs = 0;
	if (k->linked && k->done) {
		int err = k->err ? k->err : -ECONNRESET;

		unlink_call(c, k);
		k->cb.watch(k->userdata, err, k->msg ? k->msg : strerror(-err), NULL);
	}
}

static void client_unref(struct client *c);

static int on_deliver(sd_event_source *s, void *userdata)
{
	struct client *c = userdata;
	struct call *k;

	(void)s;
	c->refs++;
	while (!c->closing && (k = c->ready)) {
		c->ready = k->ready_next;
		if (!c->ready)
			c->ready_tail = NULL;
		k->ready = false;
		k->ready_next = NULL;
		k->refs++;
		deliver(c, k);
		call_unref(k);
	}
	client_unref(c);
	return 0;
}

/* The ops. */

static int submit(struct client *c, struct call *k, uint64_t *ret_id)
{
	int r;

	if (c->closing) {
		call_free(k);
		return -ESHUTDOWN;
	}
	k->c = c;
	k->refs = 1;
	k->id = ++c->next_id;
	k->endpoint = c->cur;
	k->deadline = now_usec() + (k->timeout_usec ? k->timeout_usec : c->timeout_usec);
	k->linked = true;
	k->prev = c->calls_tail;
	if (c->calls_tail)
		c->calls_tail->next = k;
	else
		c->calls = k;
	c->calls_tail = k;
	if (c->user && !c->token) {
		wait_token(c, k);
	} else {
		r = start(c, k);
		if (r < 0) {
			unlink_call(c, k);
			return r;
		}
	}
	c->stats.calls++;
	*ret_id = k->id;
	return 0;
}

static struct call *new_call(enum kind kind, const char *path, void *userdata)
{
	struct call *k = calloc(1, sizeof(*k));

	if (k) {
		k->kind = kind;
		k->path = path;
		k->userdata = userdata;
	}
	return k;
}

static int real_kv(void *ctx, const struct etcd_req *req, etcd_kv_cb cb, void *userdata,
		   uint64_t *ret_id)
{
	struct call *k = new_call(K_KV, etcd_path_of(req->type), userdata);
	int r;

	if (!k)
		return -ENOMEM;
	k->type = req->type;
	k->cb.kv = cb;
	r = etcd_json_kv_req(req, &k->body);
	if (r < 0) {
		call_free(k);
		return r;
	}
	return submit(ctx, k, ret_id);
}

static int real_txn(void *ctx, const struct etcd_txn *t, etcd_txn_cb cb, void *userdata,
		    uint64_t *ret_id)
{
	struct call *k = new_call(K_TXN, "/v3/kv/txn", userdata);
	int r;

	if (!k)
		return -ENOMEM;
	k->cb.txn = cb;
	r = etcd_json_txn_req(t, &k->body);
	if (r < 0) {
		call_free(k);
		return r;
	}
	return submit(ctx, k, ret_id);
}

static int real_compact(void *ctx, int64_t revision, etcd_kv_cb cb, void *userdata,
			uint64_t *ret_id)
{
	struct call *k = new_call(K_COMPACT, "/v3/kv/compaction", userdata);
	int r;

	if (!k)
		return -ENOMEM;
	k->cb.kv = cb;
	r = etcd_json_compact_req(revision, &k->body);
	if (r < 0) {
		call_free(k);
		return r;
	}
	return submit(ctx, k, ret_id);
}

static int lease_call(void *ctx, enum kind kind, const char *path, int64_t ttl, int64_t id,
		      etcd_lease_cb cb, void *userdata, uint64_t *ret_id)
{
	struct call *k = new_call(kind, path, userdata);
	int r;

	if (!k)
		return -ENOMEM;
	k->cb.lease = cb;
	k->lease = id;
	if (kind == K_KEEPALIVE)
		k->timeout_usec = keepalive_usec(ctx, id);
	r = etcd_json_lease_req(ttl, id, &k->body);
	if (r < 0) {
		call_free(k);
		return r;
	}
	return submit(ctx, k, ret_id);
}

static int real_grant(void *ctx, int64_t ttl, int64_t id, etcd_lease_cb cb, void *userdata,
		      uint64_t *ret_id)
{
	return lease_call(ctx, K_GRANT, "/v3/lease/grant", ttl, id, cb, userdata, ret_id);
}

/*
 * LeaseKeepAlive is a stream both ways; through the gateway, a body of one
 * request is one answer, and the stream ends with the body.
 */
static int real_keepalive(void *ctx, int64_t id, etcd_lease_cb cb, void *userdata,
			  uint64_t *ret_id)
{
	return lease_call(ctx, K_KEEPALIVE, "/v3/lease/keepalive", -1, id, cb, userdata, ret_id);
}

static int real_revoke(void *ctx, int64_t id, etcd_lease_cb cb, void *userdata,
		       uint64_t *ret_id)
{
	return lease_call(ctx, K_REVOKE, "/v3/lease/revoke", -1, id, cb, userdata, ret_id);
}

/*
 * One watch, one POST: the gateway reads create_request from the body and
 * streams the answers while the connection lasts; closing it cancels.
 */
static int real_watch(void *ctx, const struct etcd_watch_req *w, etcd_watch_cb cb,
		      void *userdata, uint64_t *ret_id)
{
	struct call *k = new_call(K_WATCH, "/v3/watch", userdata);
	int r;

	if (!k)
		return -ENOMEM;
	k->cb.watch = cb;
	r = etcd_json_watch_req(w, &k->body);
	if (r < 0) {
		call_free(k);
		return r;
	}
	return submit(ctx, k, ret_id);
}

static int real_cancel(void *ctx, uint64_t id)
{
	struct client *c = ctx;
	struct call *k = find_call(c, id);

	if (!k)
		return -ENOENT;
	unlink_call(c, k);
	return 0;
}

static bool real_pending(void *ctx, uint64_t id)
{
	return find_call(ctx, id) != NULL;
}

static void real_stats(void *ctx, struct etcd_stats *ret)
{
	const struct client *c = ctx;

	*ret = c->stats;
}

static void client_destroy(struct client *c)
{
	while (c->calls)
		unlink_call(c, c->calls);
	if (c->auth)
		call_free(c->auth);
	if (c->multi)
		curl_multi_cleanup(c->multi);
	while (c->socks) {
		struct sock *s = c->socks;

		c->socks = s->next;
		sd_event_source_disable_unref(s->src);
		free(s);
	}
	sd_event_source_disable_unref(c->timer);
	sd_event_source_disable_unref(c->deliver);
	sd_event_unref(c->event);
	for (size_t i = 0; i < c->n_endpoints; i++)
		free(c->endpoints[i]);
	free(c->endpoints);
	free(c->cacert);
	free(c->cert);
	free(c->key);
	free(c->user);
	if (c->password)
		explicit_bzero(c->password, strlen(c->password));
	free(c->password);
	free(c->token);
	if (c->global)
		curl_global_cleanup();
	free(c);
}

static void client_unref(struct client *c)
{
	if (--c->refs == 0)
		client_destroy(c);
}

static void real_close(void *ctx)
{
	struct client *c = ctx;
	struct call *k;

	if (c->closing)
		return;
	c->closing = true;
	/* Each callback once, with -ECANCELED; what they call now fails with -ESHUTDOWN. */
	while ((k = c->calls)) {
		k->refs++;
		unlink_call(c, k);
		switch (k->kind) {
		case K_KV:
		case K_COMPACT:
			k->cb.kv(k->userdata, -ECANCELED, "etcd: closed", NULL);
			break;
		case K_TXN:
			k->cb.txn(k->userdata, -ECANCELED, "etcd: closed", NULL);
			break;
		case K_GRANT:
		case K_KEEPALIVE:
		case K_REVOKE:
			k->cb.lease(k->userdata, -ECANCELED, "etcd: closed", NULL);
			break;
		case K_WATCH:
			k->cb.watch(k->userdata, -ECANCELED, "etcd: closed", NULL);
			break;
		case K_AUTH:
			break;
		}
		call_unref(k);
	}
	client_unref(c);
}

static const struct etcd_ops real_ops = {
	.name = "etcd",
	.kv = real_kv,
	.txn = real_txn,
	.compact = real_compact,
	.lease_grant = real_grant,
	.lease_keepalive = real_keepalive,
	.lease_revoke = real_revoke,
	.watch = real_watch,
	.cancel = real_cancel,
	.pending = real_pending,
	.stats = real_stats,
	.close = real_close,
};

static int dup_opt(const char *s, char **ret)
{
	*ret = NULL;
	if (!s || !*s)
		return 0;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

/* The endpoints of a comma-separated list, each http:// or https://, without a trailing '/'. */
static int parse_endpoints(struct client *c, const char *list, char *err, size_t errlen)
{
	const char *p = list ? list : "";

	while (*p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		char **v, *u;

		while (n && (*p == ' ' || *p == '\t')) {
			p++;
			n--;
		}
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '/'))
			n--;
		if (n) {
			u = strndup(p, n);
			if (!u)
				return -ENOMEM;
			if ((strncmp(u, "http://", 7) != 0 || n == 7) &&
			    (strncmp(u, "https://", 8) != 0 || n == 8)) {
				snprintf(err, errlen,
					 "etcd endpoint '%s' is not an http:// or https:// URL", u);
				free(u);
				return -EINVAL;
			}
			v = realloc(c->endpoints, (c->n_endpoints + 1) * sizeof(*v));
			if (!v) {
				free(u);
				return -ENOMEM;
			}
			c->endpoints = v;
			c->endpoints[c->n_endpoints++] = u;
		}
		p += end ? (size_t)(end - p) + 1 : strlen(p);
	}
	if (c->n_endpoints == 0) {
		snprintf(err, errlen, "no etcd endpoint given");
		return -EINVAL;
	}
	return 0;
}

int etcd_open(const struct etcd_config *conf, struct sd_event *event, struct etcd **ret,
	      char *err, size_t errlen)
{
	struct client *c = calloc(1, sizeof(*c));
	struct etcd *e = NULL;
	int r;

	if (errlen)
		err[0] = 0;
	if (!c)
		return -ENOMEM;
	c->refs = 1;
	c->event = sd_event_ref(event);
	c->timeout_usec = conf->timeout_usec ? conf->timeout_usec : ETCD_DEFAULT_TIMEOUT_USEC;
	c->log = conf->log;
	r = parse_endpoints(c, conf->endpoints, err, errlen);
	if (r == 0 && conf->password && !conf->user) {
		snprintf(err, errlen, "an etcd password without a user");
		r = -EINVAL;
	}
	if (r == 0 && conf->user && conf->password && strstr(conf->endpoints, "http://"))
		drf_log(conf->log, LOG_WARNING, "etcd: the password of user '%s' goes in clear to "
			"the http:// endpoints of '%s' (https:// would carry it encrypted)",
			conf->user, conf->endpoints);
	if (r == 0)
		r = dup_opt(conf->cacert, &c->cacert);
	if (r == 0)
		r = dup_opt(conf->cert, &c->cert);
	if (r == 0)
		r = dup_opt(conf->key, &c->key);
	if (r == 0)
		r = dup_opt(conf->user, &c->user);
	if (r == 0)
		r = dup_opt(conf->password, &c->password);
	if (r < 0)
		goto fail;
	/* curl counts its inits: each handle has one, and cleans it up. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		r = -ENOMEM;
		goto fail;
	}
	c->global = true;
	c->multi = curl_multi_init();
	if (!c->multi) {
		r = -ENOMEM;
		goto fail;
	}
	if (curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket) != CURLM_OK ||
	    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c) != CURLM_OK ||
	    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer) != CURLM_OK ||
	    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c) != CURLM_OK) {
		r = -ENOMEM;
		goto fail;
	}
	r = sd_event_add_time(event, &c->timer, CLOCK_MONOTONIC, 0, DRF_USEC_PER_MSEC, on_timer, c);
	if (r >= 0)
		r = sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
	if (r >= 0)
		r = sd_event_add_defer(event, &c->deliver, on_deliver, c);
	if (r >= 0)
		r = sd_event_source_set_enabled(c->deliver, SD_EVENT_OFF);
	if (r < 0)
		goto fail;
	e = etcd_new(&real_ops, c, event);
	if (!e) {
		r = -ENOMEM;
		goto fail;
	}
	*ret = e;
	return 0;
fail:
	if (r == -ENOMEM && errlen && !err[0])
		snprintf(err, errlen, "etcd client: %s", strerror(-r));
	client_destroy(c);
	return r;
}

int etcd_read_password(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return -errno;
	/* One byte more than fits: a file that fills it is too long, not cut short. */
	n = drf_read_full(fd, buf, len);
	close(fd);
	if (n < 0)
		return (int)n;
	if ((size_t)n == len) {
		explicit_bzero(buf, len);
		return -E2BIG;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return 0;
}
