/* SPDX-License-Identifier: MIT */
/*
 * The etcd v3 client of fleet mode: asynchronous calls on an sd-event loop,
 * behind an ops table (struct etcd_ops) with two implementations: the real
 * one here (etcd_open: etcd's JSON gateway over HTTP/1.1, libcurl's multi
 * interface driven by the loop, json-c) and an in-memory fake for tests
 * (tests/lib/fakeetcd.h). Code above talks to a struct etcd and cannot tell
 * the two apart.
 *
 * The calls. Each copies what it is given and returns at once: 0 with a call
 * id in *ret_id (ids are never 0 and never reused by a handle), or a negative
 * errno with no callback to come (-EINVAL for a request etcd would refuse
 * as malformed: an empty key, a TTL <= 0; -ENOMEM; -ESHUTDOWN while the
 * handle closes). The callback runs later, from the loop, never from within
 * the call: (userdata, err, msg, result), err 0 and result set, or err a
 * negative errno, msg a line for people that names the endpoint and what etcd
 * said (never NULL then), and result NULL. A result and its strings live only
 * for the callback: copy what you keep.
 *
 * Errors (etcd_errno() maps gRPC's codes; the gateway sends them as JSON):
 *   -ECONNREFUSED  no endpoint could be reached (every one was tried);
 *                  -EHOSTUNREACH if the last one's name did not resolve
 *   -ETIMEDOUT     no answer within the call's timeout (gRPC DeadlineExceeded);
 *                  the calls that follow go to the next endpoint (a range, a
 *                  keepalive, a grant with id 0 were sent there already,
 *                  within the same timeout: they are safe to send twice)
 *   -EACCES        authentication failed (wrong user or password, or the
 *                  token refused again after one new authentication), or
 *                  permission denied by etcd's roles
 *   -ENOENT        a lease that does not exist (or no longer does)
 *   -ESTALE        a revision that was compacted (a range at it; a watch from
 *                  it, which also says the compact revision)
 *   -ERANGE        a revision in the future
 *   -EINVAL        a request etcd refused (duplicate keys in a txn, ...)
 *   -EAGAIN        etcd cannot serve now (no leader: gRPC Unavailable; a watch
 *                  that every endpoint refused for want of a leader)
 *   -ENOSPC        etcd's space quota is exhausted
 *   -ECONNRESET    a watch's stream broke (or ended) after it was set up, or
 *                  etcd cancelled it as its member lost the leader; a
 *                  connection closed under a call (etcd refusing a client
 *                  certificate closes it after TLS 1.3's handshake)
 *   -EPROTO        a TLS handshake that failed (etcd's certificate not
 *                  trusted), or an answer that is not the gateway's
 *                  (-EOPNOTSUPP for HTTP 404: no gateway there)
 *   -EBADMSG       an answer that does not decode
 *   -ECANCELED     the handle was closed with the call pending
 *   -EIO           any other error of etcd's
 *
 * The requests and answers themselves, and the helpers on their values,
 * are etcdmsg.h's; their JSON, etcdjson.h's.
 */
#ifndef DRF_ETCD_H
#define DRF_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etcdmsg.h"
#include "log.h"

struct sd_event;

typedef void (*etcd_kv_cb)(void *userdata, int err, const char *msg, const struct etcd_resp *r);
typedef void (*etcd_txn_cb)(void *userdata, int err, const char *msg,
			    const struct etcd_txn_resp *r);
typedef void (*etcd_lease_cb)(void *userdata, int err, const char *msg,
			      const struct etcd_lease *l);
/*
 * A watch's callback, per batch with err 0; once with an error at its end,
 * and no more: -ESTALE (resp set, with compact_revision), -ECONNRESET (the
 * stream broke, or its member lost the leader: watch again from the last
 * revision seen + 1), -ETIMEDOUT (no endpoint set it up within the
 * timeout), -EACCES, ...
 */
typedef void (*etcd_watch_cb)(void *userdata, int err, const char *msg,
			      const struct etcd_watch_resp *w);

/* What a handle did, for logs and tests. */
struct etcd_stats {
	uint64_t calls;           /* calls made (each once, whatever their attempts) */
	uint64_t failovers;       /* moves to the next endpoint: one not reached, or not answering */
	uint64_t authentications; /* tokens asked for (the first, and each renewal) */
};

/*
 * The ops table. Each entry but stats and close must be set. The requests
 * reach it checked (etcd.c): keys not empty, a txn within ETCD_TXN_MAX, the
 * type of a single request set by its wrapper. See the calls below for what
 * each does.
 */
struct etcd_ops {
	const char *name;
	int (*kv)(void *ctx, const struct etcd_req *req, etcd_kv_cb cb, void *userdata,
		  uint64_t *ret_id);
	int (*txn)(void *ctx, const struct etcd_txn *t, etcd_txn_cb cb, void *userdata,
		   uint64_t *ret_id);
	int (*compact)(void *ctx, int64_t revision, etcd_kv_cb cb, void *userdata,
		       uint64_t *ret_id);
	int (*lease_grant)(void *ctx, int64_t ttl, int64_t id, etcd_lease_cb cb, void *userdata,
			   uint64_t *ret_id);
	int (*lease_keepalive)(void *ctx, int64_t id, etcd_lease_cb cb, void *userdata,
			       uint64_t *ret_id);
	int (*lease_revoke)(void *ctx, int64_t id, etcd_lease_cb cb, void *userdata,
			    uint64_t *ret_id);
	int (*watch)(void *ctx, const struct etcd_watch_req *w, etcd_watch_cb cb, void *userdata,
		     uint64_t *ret_id);
	int (*cancel)(void *ctx, uint64_t id);
	bool (*pending)(void *ctx, uint64_t id);
	void (*stats)(void *ctx, struct etcd_stats *ret);
	void (*close)(void *ctx);
};

/* A client: its ops and their state, and the loop its callbacks run from. */
struct etcd {
	const struct etcd_ops *ops;
	void *ctx;
	struct sd_event *event;
};

/* The real client's settings. Strings are copied. */
struct etcd_config {
	/* "http://10.0.0.1:2379,https://etcd-2:2379": tried in turn when one cannot be reached */
	const char *endpoints;
	/* TLS (https): the CA to trust (NULL: the system's), a client certificate and its key */
	const char *cacert;
	const char *cert;
	const char *key;
	/* etcd's authentication: a token from user and password, renewed once when refused */
	const char *user;
	const char *password;
	/*
	 * Each call's whole time, every endpoint it tries included (a keepalive's:
	 * a third of its lease's TTL at most, once this client saw the TTL); a
	 * watch's time to be set up. 0: ETCD_DEFAULT_TIMEOUT_USEC
	 */
	uint64_t timeout_usec;
	/* Debug lines (failovers, new tokens); NULL: none. */
	const struct drf_logger *log;
};

#define ETCD_DEFAULT_TIMEOUT_USEC (5 * 1000000ULL)

/*
 * A password file's first line (without its line end) into buf: 0, -E2BIG
 * when the file holds more than len - 1 bytes (a password is not cut short),
 * or the error of opening or reading it. The caller wipes buf after use.
 */
int etcd_read_password(const char *path, char *buf, size_t len);

/*
 * The real client on event: 0 and *ret, or -EINVAL with err saying what is
 * wrong with the config (an endpoint that is not http:// or https://, a
 * password without a user), -ENOMEM. No connection is made before the
 * first call. etcd_close() frees it.
 */
int etcd_open(const struct etcd_config *conf, struct sd_event *event, struct etcd **ret,
	      char *err, size_t errlen);

/* A handle over other ops (the fake's): NULL without memory. */
struct etcd *etcd_new(const struct etcd_ops *ops, void *ctx, struct sd_event *event);

/*
 * Ends every call and watch: their callbacks run (from here) with -ECANCELED,
 * and a call they make fails with -ESHUTDOWN; then frees the handle. NULL is
 * fine. May be called from a callback of the handle's.
 */
void etcd_close(struct etcd *e);

/* The range of req (type set here). */
int etcd_range(struct etcd *e, const struct etcd_req *req, etcd_kv_cb cb, void *userdata,
	       uint64_t *ret_id);
/* req->key = req->value (value_len bytes), attached to req->lease if not 0. */
int etcd_put(struct etcd *e, const struct etcd_req *req, etcd_kv_cb cb, void *userdata,
	     uint64_t *ret_id);
/* Deletes the keys of req's range; resp->count says how many. */
int etcd_delete(struct etcd *e, const struct etcd_req *req, etcd_kv_cb cb, void *userdata,
		uint64_t *ret_id);
int etcd_txn(struct etcd *e, const struct etcd_txn *t, etcd_txn_cb cb, void *userdata,
	     uint64_t *ret_id);
/* Forgets the history before revision: a range or watch from before it is then -ESTALE. */
int etcd_compact(struct etcd *e, int64_t revision, etcd_kv_cb cb, void *userdata,
		 uint64_t *ret_id);

/* A new lease of ttl seconds (etcd may raise it to its minimum); id 0: etcd picks one. */
int etcd_lease_grant(struct etcd *e, int64_t ttl, int64_t id, etcd_lease_cb cb, void *userdata,
		     uint64_t *ret_id);
/*
 * One renewal of lease id: its TTL again from now; -ENOENT when it is gone
 * (expired, revoked). It waits a third of the lease's TTL at most (the TTL
 * its grant or last renewal by this handle said), so that a renewal that is
 * not answered leaves time for another before the lease expires.
 */
int etcd_lease_keepalive(struct etcd *e, int64_t id, etcd_lease_cb cb, void *userdata,
			 uint64_t *ret_id);
/* Revokes lease id: the keys attached to it are deleted (one revision). -ENOENT if none. */
int etcd_lease_revoke(struct etcd *e, int64_t id, etcd_lease_cb cb, void *userdata,
		      uint64_t *ret_id);

/*
 * Watches w's keys until etcd_cancel() or an error (see etcd_watch_cb), on a
 * member that has a leader (etcd's require-leader: it cancels the watch when
 * its member loses the leader).
 */
int etcd_watch(struct etcd *e, const struct etcd_watch_req *w, etcd_watch_cb cb, void *userdata,
	       uint64_t *ret_id);

/*
 * Ends a call or watch: its callback does not run again (a call's effect on
 * etcd may happen all the same). 0, or -ENOENT for an id not pending.
 */
int etcd_cancel(struct etcd *e, uint64_t id);

/* Whether call or watch id has not ended (its callback is still to run). */
bool etcd_pending(struct etcd *e, uint64_t id);

/*
 * For commands: runs the loop until call id has ended (its callback ran) or
 * timeout_usec passed: 0, -ETIMEDOUT (the call is still pending), or an
 * error of sd_event_run (-EBUSY from within a callback of the loop: a
 * callback must not wait). The handle must stay open meanwhile.
 */
int etcd_wait(struct etcd *e, uint64_t id, uint64_t timeout_usec);

void etcd_get_stats(struct etcd *e, struct etcd_stats *ret);

#endif
