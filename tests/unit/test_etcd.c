// SPDX-License-Identifier: MIT
/*
 * [fleet] The etcd client (agent/fleet/etcd.h).
 *
 *   test_etcd                       the gateway's JSON (agent/fleet/etcdjson.h),
 *                                   the conformance suite over the fake etcd
 *                                   (tests/lib/fakeetcd.h), the fake's own
 *                                   faults and record, and the real client
 *                                   against a scripted gateway (members that
 *                                   do not answer, or lost their leader)
 *   test_etcd --endpoints URLS ...  the same conformance suite over a real
 *                                   etcd, and the transport's tests (failover,
 *                                   TLS, authentication); tests/cli/test_etcd.sh
 *                                   starts etcd and runs this
 *
 * The conformance suite is written once, against struct etcd: what it
 * asserts of the fake, it asserts of etcd 3.4. Its keys are under a prefix
 * of its own per test (/t/PID-N/), so that runs and tests do not meet, and
 * it asserts revisions relative to those it saw.
 *
 * Options of the real mode: --cacert/--cert/--key (TLS), --user/--password
 * (etcd's authentication; --denied KEY: a key the user may not touch;
 * --token-ttl N: etcd's --auth-token-ttl, to see a token renewed),
 * --lease-expiry (a lease left to expire, which takes its TTL of real time);
 * --no-leader PID: the endpoints are the two members of a cluster, PID the
 * second's etcd, which the test stops (SIGSTOP) and lets go on (SIGCONT).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <json-c/json_tokener.h>
#include <systemd/sd-event.h>

#include "etcd.h"
#include "etcdjson.h"
#include "fakeetcd.h"
#include "testlib.h"

/* The real mode's options. */
static struct {
	const char *endpoints, *cacert, *cert, *key, *user, *password, *denied;
	bool lease_expiry;
	int token_ttl;
	pid_t stop_pid; /* --no-leader PID: the member to stop, so that the first loses its leader */
} opt;

#define REAL (opt.endpoints != NULL)
/* A bound on any one call of a test (a real etcd answers in milliseconds). */
#define WAIT (10 * DRF_USEC_PER_SEC)

static struct {
	sd_event *ev;
	struct etcd *e;
	struct fakeetcd *fake;
	struct drf_fake_clock clk;
	struct drf_clock clock;
	char prefix[64];
} env;

static unsigned test_no;

/* name under the test's prefix (a few at a time: rotating buffers). */
static const char *K(const char *name)
{
	static char buf[8][256];
	static unsigned i;
	char *b = buf[i++ % 8];

	snprintf(b, sizeof(buf[0]), "%s%s", env.prefix, name);
	return b;
}

/* A client as the mode has it: the fake's, or one to the real etcd. */
static int open_client(struct etcd **ret)
{
	struct etcd_config c = {
		.endpoints = opt.endpoints,
		.cacert = opt.cacert,
		.cert = opt.cert,
		.key = opt.key,
		.user = opt.user,
		.password = opt.password,
	};
	char err[256];
	int r;

	if (!REAL)
		return fakeetcd_connect(env.fake, ret);
	r = etcd_open(&c, env.ev, ret, err, sizeof(err));
	if (r < 0)
		print_error("etcd_open: %s\n", err);
	return r;
}

static int setup(void **state)
{
	(void)state;
	memset(&env, 0, sizeof(env));
	snprintf(env.prefix, sizeof(env.prefix), "/t/%d-%u/", (int)getpid(), ++test_no);
	assert_int_equal(sd_event_new(&env.ev), 0);
	env.clk.mono = 1000 * DRF_USEC_PER_SEC;
	env.clk.real = 1700000000 * DRF_USEC_PER_SEC;
	env.clock = (struct drf_clock){ .now = drf_fake_clock_now, .ctx = &env.clk };
	if (!REAL) {
		env.fake = fakeetcd_new(env.ev, &env.clock);
		assert_non_null(env.fake);
	}
	assert_int_equal(open_client(&env.e), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	etcd_close(env.e);
	fakeetcd_free(env.fake);
	sd_event_unref(env.ev);
	memset(&env, 0, sizeof(env));
	return 0;
}

/* The loop for usec, or (the fake) until nothing is left to run. */
static void pump(uint64_t usec)
{
	uint64_t end = drf_mono_usec(&drf_clock_system) + usec;
	int r;

	if (!REAL) {
		while ((r = sd_event_run(env.ev, 0)) > 0)
			;
		assert_int_equal(r, 0);
		return;
	}
	for (;;) {
		uint64_t now = drf_mono_usec(&drf_clock_system);

		if (now >= end)
			return;
		assert_true(sd_event_run(env.ev, end - now) >= 0);
	}
}

/* What a call's callback got: copies, to check after it. */
struct got {
	bool done;
	int calls; /* the callback ran so many times */
	int err;
	char msg[512];
	struct etcd_resp r;
	struct etcd_txn_resp t;
	struct etcd_lease l;
};

static void copy_kv(struct etcd_kv *dst, const struct etcd_kv *src)
{
	*dst = *src;
	dst->key = malloc(src->key_len + 1);
	dst->value = malloc(src->value_len + 1);
	assert_non_null(dst->key);
	assert_non_null(dst->value);
	memcpy(dst->key, src->key, src->key_len + 1);
	memcpy(dst->value, src->value, src->value_len + 1);
}

static void copy_resp(struct etcd_resp *dst, const struct etcd_resp *src)
{
	*dst = *src;
	dst->kvs = calloc(src->n_kvs + 1, sizeof(*dst->kvs));
	assert_non_null(dst->kvs);
	for (size_t i = 0; i < src->n_kvs; i++)
		copy_kv(&dst->kvs[i], &src->kvs[i]);
}

static void got_clear(struct got *g)
{
	etcd_resp_clear(&g->r);
	etcd_txn_resp_clear(&g->t);
	memset(g, 0, sizeof(*g));
}

static void note(struct got *g, int err, const char *msg)
{
	g->done = true;
	g->calls++;
	g->err = err;
	if (err) {
		/* An error always says something, naming the endpoint. */
		assert_non_null(msg);
		assert_true(strlen(msg) > 0);
		snprintf(g->msg, sizeof(g->msg), "%s", msg);
	} else {
		assert_null(msg);
	}
}

static void kv_cb(void *userdata, int err, const char *msg, const struct etcd_resp *r)
{
	struct got *g = userdata;

	note(g, err, msg);
	if (!err) {
		assert_non_null(r);
		copy_resp(&g->r, r);
	} else {
		assert_null(r);
	}
}

static void txn_cb(void *userdata, int err, const char *msg, const struct etcd_txn_resp *t)
{
	struct got *g = userdata;

	note(g, err, msg);
	if (err) {
		assert_null(t);
		return;
	}
	assert_non_null(t);
	g->t = *t;
	g->t.resps = calloc(t->n_resps + 1, sizeof(*t->resps));
	assert_non_null(g->t.resps);
	for (size_t i = 0; i < t->n_resps; i++)
		copy_resp(&g->t.resps[i], &t->resps[i]);
}

static void lease_cb(void *userdata, int err, const char *msg, const struct etcd_lease *l)
{
	struct got *g = userdata;

	note(g, err, msg);
	if (!err)
		g->l = *l;
	else
		assert_null(l);
}

/* Waits for call id, whose callback must not have run within the call. */
static void finish(struct got *g, int r, uint64_t id)
{
	assert_int_equal(r, 0);
	assert_false(g->done);
	assert_true(etcd_pending(env.e, id));
	assert_int_equal(etcd_wait(env.e, id, WAIT), 0);
	assert_true(g->done);
	assert_int_equal(g->calls, 1);
	assert_false(etcd_pending(env.e, id));
}

static int put_full(const char *key, const void *value, size_t len, int64_t lease, bool prev,
		    struct got *g)
{
	struct etcd_req q = { .key = key, .value = value, .value_len = len, .lease = lease,
			      .prev_kv = prev };
	uint64_t id = 0;
	int r;

	got_clear(g);
	r = etcd_put(env.e, &q, kv_cb, g, &id);
	finish(g, r, id);
	return g->err;
}

/* key = value: the put's revision, or fails the test. */
static int64_t put(const char *key, const char *value)
{
	struct got g = { 0 };
	int64_t rev;

	assert_int_equal(put_full(key, value, strlen(value), 0, false, &g), 0);
	rev = g.r.revision;
	assert_true(rev > 0);
	got_clear(&g);
	return rev;
}

static int range(const struct etcd_req *q, struct got *g)
{
	uint64_t id = 0;
	int r;

	got_clear(g);
	r = etcd_range(env.e, q, kv_cb, g, &id);
	finish(g, r, id);
	return g->err;
}

static int get(const char *key, struct got *g)
{
	return range(&(struct etcd_req){ .key = key }, g);
}

static int del(const struct etcd_req *q, struct got *g)
{
	uint64_t id = 0;
	int r;

	got_clear(g);
	r = etcd_delete(env.e, q, kv_cb, g, &id);
	finish(g, r, id);
	return g->err;
}

static int txn(const struct etcd_txn *t, struct got *g)
{
	uint64_t id = 0;
	int r;

	got_clear(g);
	r = etcd_txn(env.e, t, txn_cb, g, &id);
	finish(g, r, id);
	return g->err;
}

static int grant(int64_t ttl, int64_t lease_id, struct got *g)
{
	uint64_t id = 0;
	int r;

	got_clear(g);
	r = etcd_lease_grant(env.e, ttl, lease_id, lease_cb, g, &id);
	finish(g, r, id);
	return g->err;
}

static int keepalive(int64_t lease, struct got *g)
{
	uint64_t id = 0;
	int r;

	got_clear(g);
	r = etcd_lease_keepalive(env.e, lease, lease_cb, g, &id);
	finish(g, r, id);
	return g->err;
}

static int revoke_lease(int64_t lease, struct got *g)
{
	uint64_t id = 0;
	int r;

	got_clear(g);
	r = etcd_lease_revoke(env.e, lease, lease_cb, g, &id);
	finish(g, r, id);
	return g->err;
}

static int compact(int64_t rev, struct got *g)
{
	uint64_t id = 0;
	int r;

	got_clear(g);
	r = etcd_compact(env.e, rev, kv_cb, g, &id);
	finish(g, r, id);
	return g->err;
}

/* The value of the pair key holds now, or NULL. */
static char *value_of(const char *key)
{
	struct got g = { 0 };
	char *v = NULL;

	assert_int_equal(get(key, &g), 0);
	if (g.r.n_kvs) {
		v = strdup(g.r.kvs[0].value);
		assert_non_null(v);
	}
	got_clear(&g);
	return v;
}

/* A watch's events, as they came. */
struct ev {
	enum etcd_event_type type;
	char key[256], value[256], prev[256];
	bool has_prev;
	int64_t create, mod, version, lease;
};

struct watcher {
	uint64_t id;
	struct ev ev[64];
	size_t n;
	unsigned batches;
	int64_t revision;
	bool ended;
	int err;
	int64_t compact;
	char msg[512];
};

static void watch_cb(void *userdata, int err, const char *msg, const struct etcd_watch_resp *w)
{
	struct watcher *x = userdata;

	assert_false(x->ended); /* nothing after the end */
	if (err) {
		assert_non_null(msg);
		x->ended = true;
		x->err = err;
		snprintf(x->msg, sizeof(x->msg), "%s", msg);
		if (err == -ESTALE) {
			assert_non_null(w);
			x->compact = w->compact_revision;
		}
		return;
	}
	assert_non_null(w);
	assert_true(w->n_events > 0);
	x->batches++;
	x->revision = w->revision;
	for (size_t i = 0; i < w->n_events; i++) {
		const struct etcd_event *e = &w->events[i];
		struct ev *v = &x->ev[x->n];

		assert_true(x->n < 64);
		memset(v, 0, sizeof(*v));
		v->type = e->type;
		snprintf(v->key, sizeof(v->key), "%s", e->kv.key);
		snprintf(v->value, sizeof(v->value), "%s", e->kv.value);
		v->create = e->kv.create_revision;
		v->mod = e->kv.mod_revision;
		v->version = e->kv.version;
		v->lease = e->kv.lease;
		if (e->prev_kv) {
			v->has_prev = true;
			snprintf(v->prev, sizeof(v->prev), "%s", e->prev_kv->value);
		}
		/* In revision order. */
		if (x->n)
			assert_true(v->mod >= x->ev[x->n - 1].mod);
		x->n++;
	}
}

static void watch(const struct etcd_watch_req *w, struct watcher *x)
{
	memset(x, 0, sizeof(*x));
	assert_int_equal(etcd_watch(env.e, w, watch_cb, x, &x->id), 0);
	assert_true(etcd_pending(env.e, x->id));
}

/* Runs the loop until x has n events or ended, within usec. */
static void wait_events(struct watcher *x, size_t n, uint64_t usec)
{
	uint64_t end = drf_mono_usec(&drf_clock_system) + usec;

	while (x->n < n && !x->ended) {
		uint64_t now = drf_mono_usec(&drf_clock_system);

		if (now >= end)
			break;
		assert_true(sd_event_run(env.ev, end - now) >= 0);
	}
}

static void wait_end(struct watcher *x, uint64_t usec)
{
	wait_events(x, SIZE_MAX, usec);
	assert_true(x->ended);
	assert_false(etcd_pending(env.e, x->id));
}

/* Conformance: the fake and etcd 3.4 alike. */

static void test_put_range(void **state)
{
	struct got g = { 0 };
	int64_t r1, r2;

	(void)state;
	r1 = put(K("a"), "1");
	assert_int_equal(get(K("a"), &g), 0);
	assert_true(g.r.revision >= r1);
	assert_int_equal(g.r.n_kvs, 1);
	assert_int_equal(g.r.count, 1);
	assert_false(g.r.more);
	assert_string_equal(g.r.kvs[0].key, K("a"));
	assert_int_equal(g.r.kvs[0].key_len, strlen(K("a")));
	assert_string_equal(g.r.kvs[0].value, "1");
	assert_int_equal(g.r.kvs[0].value_len, 1);
	assert_int_equal(g.r.kvs[0].create_revision, r1);
	assert_int_equal(g.r.kvs[0].mod_revision, r1);
	assert_int_equal(g.r.kvs[0].version, 1);
	assert_int_equal(g.r.kvs[0].lease, 0);

	/* A second put: a new revision, the same creation. */
	assert_int_equal(put_full(K("a"), "22", 2, 0, true, &g), 0);
	r2 = g.r.revision;
	assert_true(r2 > r1);
	assert_int_equal(g.r.n_kvs, 1); /* prev_kv */
	assert_string_equal(g.r.kvs[0].value, "1");
	assert_int_equal(g.r.kvs[0].mod_revision, r1);
	assert_int_equal(get(K("a"), &g), 0);
	assert_string_equal(g.r.kvs[0].value, "22");
	assert_int_equal(g.r.kvs[0].create_revision, r1);
	assert_int_equal(g.r.kvs[0].mod_revision, r2);
	assert_int_equal(g.r.kvs[0].version, 2);

	/* A put without prev_kv says nothing of before; a new key has no before. */
	assert_int_equal(put_full(K("b"), "x", 1, 0, true, &g), 0);
	assert_int_equal(g.r.n_kvs, 0);

	/* Values are bytes: a NUL within, and empty. */
	assert_int_equal(put_full(K("bin"), "x\0y", 3, 0, false, &g), 0);
	assert_int_equal(get(K("bin"), &g), 0);
	assert_int_equal(g.r.kvs[0].value_len, 3);
	assert_memory_equal(g.r.kvs[0].value, "x\0y", 3);
	assert_int_equal(put_full(K("empty"), NULL, 0, 0, false, &g), 0);
	assert_int_equal(get(K("empty"), &g), 0);
	assert_int_equal(g.r.n_kvs, 1);
	assert_int_equal(g.r.kvs[0].value_len, 0);

	/* A key not there: nothing, and no error. */
	assert_int_equal(get(K("none"), &g), 0);
	assert_int_equal(g.r.n_kvs, 0);
	assert_int_equal(g.r.count, 0);
	got_clear(&g);
}

static void test_range_options(void **state)
{
	struct got g = { 0 };

	(void)state;
	put(K("p/b"), "B");
	put(K("p/a"), "A");
	put(K("p/c"), "C");
	put(K("q"), "Q");
	put(K("p"), "P");

	/* A prefix: its keys, sorted. */
	assert_int_equal(range(&(struct etcd_req){ .key = K("p/"), .prefix = true }, &g), 0);
	assert_int_equal(g.r.n_kvs, 3);
	assert_int_equal(g.r.count, 3);
	assert_string_equal(g.r.kvs[0].key, K("p/a"));
	assert_string_equal(g.r.kvs[1].key, K("p/b"));
	assert_string_equal(g.r.kvs[2].key, K("p/c"));
	assert_string_equal(g.r.kvs[2].value, "C");

	/* A limit: so many, the count of all, and more. */
	assert_int_equal(range(&(struct etcd_req){ .key = K("p/"), .prefix = true, .limit = 2 },
			       &g),
			 0);
	assert_int_equal(g.r.n_kvs, 2);
	assert_int_equal(g.r.count, 3);
	assert_true(g.r.more);
	assert_string_equal(g.r.kvs[1].key, K("p/b"));

	/* Keys only, count only. */
	assert_int_equal(range(&(struct etcd_req){ .key = K("p/"), .prefix = true,
						   .keys_only = true },
			       &g),
			 0);
	assert_int_equal(g.r.n_kvs, 3);
	assert_int_equal(g.r.kvs[0].value_len, 0);
	assert_true(g.r.kvs[0].mod_revision > 0);
	assert_int_equal(range(&(struct etcd_req){ .key = K("p/"), .prefix = true,
						   .count_only = true },
			       &g),
			 0);
	assert_int_equal(g.r.n_kvs, 0);
	assert_int_equal(g.r.count, 3);

	/* [key, range_end) */
	assert_int_equal(range(&(struct etcd_req){ .key = K("p/a"), .range_end = K("p/c") }, &g),
			 0);
	assert_int_equal(g.r.n_kvs, 2);
	assert_string_equal(g.r.kvs[0].key, K("p/a"));
	assert_string_equal(g.r.kvs[1].key, K("p/b"));

	/*
	 * From a key on: the next keys are this test's (its prefix sorts before
	 * any other's). To the end of all keys: beyond a user's role on a prefix.
	 */
	assert_int_equal(range(&(struct etcd_req){ .key = K("p/b"), .from_key = true, .limit = 3 },
			       &g),
			 opt.user ? -EACCES : 0);
	if (opt.user)
		assert_int_equal(range(&(struct etcd_req){ .key = K("p/b"), .range_end = "/t0",
							   .limit = 3 },
				       &g),
				 0);
	assert_int_equal(g.r.n_kvs, 3);
	assert_true(g.r.count >= 3);
	assert_string_equal(g.r.kvs[0].key, K("p/b"));
	assert_string_equal(g.r.kvs[1].key, K("p/c"));
	assert_string_equal(g.r.kvs[2].key, K("q"));

	/* Every key: an empty key with prefix (beyond a user's role on a prefix: refused). */
	assert_int_equal(range(&(struct etcd_req){ .key = "", .prefix = true, .count_only = true },
			       &g),
			 opt.user ? -EACCES : 0);
	if (!opt.user)
		assert_true(g.r.count >= 5);
	got_clear(&g);
}

static void test_range_revision(void **state)
{
	struct got g = { 0 };
	int64_t r1, r2;

	(void)state;
	r1 = put(K("v"), "one");
	r2 = put(K("v"), "two");
	put(K("w"), "new");
	assert_int_equal(range(&(struct etcd_req){ .key = K("v"), .revision = r1 }, &g), 0);
	assert_int_equal(g.r.n_kvs, 1);
	assert_string_equal(g.r.kvs[0].value, "one");
	assert_int_equal(g.r.kvs[0].version, 1);
	assert_true(g.r.revision > r2); /* the header's: the store's now */
	assert_int_equal(range(&(struct etcd_req){ .key = K("w"), .revision = r2 }, &g), 0);
	assert_int_equal(g.r.n_kvs, 0); /* not yet made then */
	assert_int_equal(range(&(struct etcd_req){ .key = K("v"), .revision = r2 }, &g), 0);
	assert_string_equal(g.r.kvs[0].value, "two");
	assert_int_equal(range(&(struct etcd_req){ .key = K("v"), .revision = r2 + 100000 }, &g),
			 -ERANGE);
	got_clear(&g);
}

static void test_delete(void **state)
{
	struct got g = { 0 };
	int64_t rev;

	(void)state;
	put(K("d/1"), "1");
	put(K("d/2"), "2");
	put(K("d/3"), "3");
	rev = put(K("e"), "e");
	assert_int_equal(del(&(struct etcd_req){ .key = K("d/1"), .prev_kv = true }, &g), 0);
	assert_int_equal(g.r.count, 1);
	assert_int_equal(g.r.n_kvs, 1);
	assert_string_equal(g.r.kvs[0].value, "1");
	assert_int_equal(g.r.revision, rev + 1);
	assert_int_equal(del(&(struct etcd_req){ .key = K("d/"), .prefix = true }, &g), 0);
	assert_int_equal(g.r.count, 2);
	assert_int_equal(g.r.n_kvs, 0); /* no prev_kv asked */
	rev = g.r.revision;
	/* Nothing to delete: no write, the revision stays. */
	assert_int_equal(del(&(struct etcd_req){ .key = K("d/"), .prefix = true }, &g), 0);
	assert_int_equal(g.r.count, 0);
	assert_int_equal(g.r.revision, rev);
	assert_int_equal(del(&(struct etcd_req){ .key = K("nothing") }, &g), 0);
	assert_int_equal(g.r.count, 0);
	assert_int_equal(range(&(struct etcd_req){ .key = K("d/"), .prefix = true }, &g), 0);
	assert_int_equal(g.r.count, 0);
	char *v = value_of(K("e"));

	assert_string_equal(v, "e");
	free(v);
	got_clear(&g);
}

static void test_txn_create_if_absent(void **state)
{
	struct etcd_cmp absent = { .key = K("lock"), .target = ETCD_CMP_CREATE,
				   .result = ETCD_CMP_EQUAL, .n = 0 };
	struct etcd_req put_a = { .type = ETCD_PUT, .key = K("lock"), .value = "a",
				  .value_len = 1 };
	struct etcd_req put_b = { .type = ETCD_PUT, .key = K("lock"), .value = "b",
				  .value_len = 1 };
	struct etcd_req read = { .type = ETCD_RANGE, .key = K("lock") };
	struct got g = { 0 };
	int64_t rev;

	(void)state;
	assert_int_equal(txn(&(struct etcd_txn){ .cmp = &absent, .n_cmp = 1, .success = &put_a,
						 .n_success = 1, .failure = &read, .n_failure = 1 },
			     &g),
			 0);
	assert_true(g.t.succeeded);
	assert_int_equal(g.t.n_resps, 1);
	assert_int_equal(g.t.resps[0].type, ETCD_PUT);
	rev = g.t.revision;
	assert_true(rev > 0);
	/* The second finds it: the failure branch ran, and wrote nothing. */
	assert_int_equal(txn(&(struct etcd_txn){ .cmp = &absent, .n_cmp = 1, .success = &put_b,
						 .n_success = 1, .failure = &read, .n_failure = 1 },
			     &g),
			 0);
	assert_false(g.t.succeeded);
	assert_int_equal(g.t.revision, rev);
	assert_int_equal(g.t.n_resps, 1);
	assert_int_equal(g.t.resps[0].type, ETCD_RANGE);
	assert_int_equal(g.t.resps[0].n_kvs, 1);
	assert_string_equal(g.t.resps[0].kvs[0].value, "a");
	assert_int_equal(g.t.resps[0].kvs[0].create_revision, rev);
	got_clear(&g);
}

/* Whether the txn of the one comparison c holds. */
static bool holds(struct etcd_cmp c)
{
	struct etcd_req read = { .type = ETCD_RANGE, .key = c.key };
	struct got g = { 0 };
	bool ok;

	assert_int_equal(txn(&(struct etcd_txn){ .cmp = &c, .n_cmp = 1, .success = &read,
						 .n_success = 1 },
			     &g),
			 0);
	ok = g.t.succeeded;
	/* The failure branch, empty, ran: no answers. */
	assert_int_equal(g.t.n_resps, ok ? 1 : 0);
	got_clear(&g);
	return ok;
}

static void test_txn_compares(void **state)
{
	const char *k = K("k"), *none = K("none");
	int64_t rev;

	(void)state;
	put(k, "v");
	rev = put(k, "w");
	assert_true(holds((struct etcd_cmp){ .key = k, .target = ETCD_CMP_MOD, .n = rev }));
	assert_false(holds((struct etcd_cmp){ .key = k, .target = ETCD_CMP_MOD, .n = rev - 1 }));
	assert_true(holds((struct etcd_cmp){ .key = k, .target = ETCD_CMP_MOD,
					     .result = ETCD_CMP_NOT_EQUAL, .n = rev - 1 }));
	assert_true(holds((struct etcd_cmp){ .key = k, .target = ETCD_CMP_MOD,
					     .result = ETCD_CMP_LESS, .n = rev + 1 }));
	assert_false(holds((struct etcd_cmp){ .key = k, .target = ETCD_CMP_MOD,
					      .result = ETCD_CMP_GREATER, .n = rev }));
	assert_true(holds((struct etcd_cmp){ .key = k, .target = ETCD_CMP_VERSION, .n = 2 }));
	assert_true(holds((struct etcd_cmp){ .key = k, .target = ETCD_CMP_VERSION,
					     .result = ETCD_CMP_GREATER, .n = 1 }));
	assert_true(holds((struct etcd_cmp){ .key = k, .target = ETCD_CMP_CREATE,
					     .result = ETCD_CMP_LESS, .n = rev }));
	assert_true(holds((struct etcd_cmp){ .key = k, .target = ETCD_CMP_VALUE, .value = "w",
					     .value_len = 1 }));
	assert_false(holds((struct etcd_cmp){ .key = k, .target = ETCD_CMP_VALUE, .value = "v",
					      .value_len = 1 }));
	assert_true(holds((struct etcd_cmp){ .key = k, .target = ETCD_CMP_VALUE,
					     .result = ETCD_CMP_GREATER, .value = "v",
					     .value_len = 1 }));
	assert_true(holds((struct etcd_cmp){ .key = k, .target = ETCD_CMP_LEASE, .n = 0 }));
	/* A key not there: version 0, mod 0; its value compares false, whatever the operator. */
	assert_true(holds((struct etcd_cmp){ .key = none, .target = ETCD_CMP_VERSION, .n = 0 }));
	assert_true(holds((struct etcd_cmp){ .key = none, .target = ETCD_CMP_MOD, .n = 0 }));
	assert_false(holds((struct etcd_cmp){ .key = none, .target = ETCD_CMP_VALUE, .value = "",
					      .value_len = 0 }));
	assert_false(holds((struct etcd_cmp){ .key = none, .target = ETCD_CMP_VALUE,
					      .result = ETCD_CMP_NOT_EQUAL, .value = "x",
					      .value_len = 1 }));
}

static void test_txn_ops(void **state)
{
	struct got g = { 0 };
	int64_t rev;
	struct etcd_cmp all[2];
	struct etcd_req ops[4];

	(void)state;
	put(K("b"), "old-b");
	rev = put(K("c"), "old-c");
	all[0] = (struct etcd_cmp){ .key = K("b"), .target = ETCD_CMP_VERSION, .n = 1 };
	all[1] = (struct etcd_cmp){ .key = K("c"), .target = ETCD_CMP_MOD, .n = rev };
	ops[0] = (struct etcd_req){ .type = ETCD_PUT, .key = K("a"), .value = "A", .value_len = 1 };
	ops[1] = (struct etcd_req){ .type = ETCD_DELETE, .key = K("b"), .prev_kv = true };
	ops[2] = (struct etcd_req){ .type = ETCD_RANGE, .key = K("a") };
	ops[3] = (struct etcd_req){ .type = ETCD_PUT, .key = K("c"), .value = "C", .value_len = 1,
				    .prev_kv = true };
	assert_int_equal(txn(&(struct etcd_txn){ .cmp = all, .n_cmp = 2, .success = ops,
						 .n_success = 4 },
			     &g),
			 0);
	assert_true(g.t.succeeded);
	/* One revision for the txn's writes. */
	assert_int_equal(g.t.revision, rev + 1);
	assert_int_equal(g.t.n_resps, 4);
	assert_int_equal(g.t.resps[0].type, ETCD_PUT);
	assert_int_equal(g.t.resps[1].type, ETCD_DELETE);
	assert_int_equal(g.t.resps[1].count, 1);
	assert_int_equal(g.t.resps[1].n_kvs, 1);
	assert_string_equal(g.t.resps[1].kvs[0].value, "old-b");
	/* A range sees the txn's writes before it. */
	assert_int_equal(g.t.resps[2].type, ETCD_RANGE);
	assert_int_equal(g.t.resps[2].n_kvs, 1);
	assert_string_equal(g.t.resps[2].kvs[0].value, "A");
	assert_int_equal(g.t.resps[2].kvs[0].mod_revision, rev + 1);
	assert_int_equal(g.t.resps[3].n_kvs, 1);
	assert_string_equal(g.t.resps[3].kvs[0].value, "old-c");
	assert_int_equal(get(K("c"), &g), 0);
	assert_int_equal(g.r.kvs[0].mod_revision, rev + 1);
	assert_int_equal(g.r.kvs[0].version, 2);
	assert_int_equal(get(K("b"), &g), 0);
	assert_int_equal(g.r.n_kvs, 0);
	/* A txn without comparisons succeeds. */
	assert_int_equal(txn(&(struct etcd_txn){ .success = &ops[2], .n_success = 1 }, &g), 0);
	assert_true(g.t.succeeded);
	got_clear(&g);
}

static void test_txn_refused(void **state)
{
	struct got g = { 0 };
	struct etcd_req twice[2] = {
		{ .type = ETCD_PUT, .key = K("x"), .value = "1", .value_len = 1 },
		{ .type = ETCD_PUT, .key = K("x"), .value = "2", .value_len = 1 },
	};
	struct etcd_req put_del[2] = {
		{ .type = ETCD_PUT, .key = K("y/1"), .value = "1", .value_len = 1 },
		{ .type = ETCD_DELETE, .key = K("y/"), .prefix = true },
	};
	struct etcd_req bad_lease[2] = {
		{ .type = ETCD_PUT, .key = K("z1"), .value = "1", .value_len = 1 },
		{ .type = ETCD_PUT, .key = K("z2"), .value = "2", .value_len = 1,
		  .lease = 0x1234567890 },
	};
	int64_t rev;

	(void)state;
	rev = put(K("before"), "b");
	assert_int_equal(txn(&(struct etcd_txn){ .success = twice, .n_success = 2 }, &g), -EINVAL);
	assert_int_equal(txn(&(struct etcd_txn){ .success = put_del, .n_success = 2 }, &g),
			 -EINVAL);
	/* The failure branch is checked too, though it would not run. */
	assert_int_equal(txn(&(struct etcd_txn){ .failure = twice, .n_failure = 2 }, &g), -EINVAL);
	/* A lease that does not exist: nothing of the txn is applied. */
	assert_int_equal(txn(&(struct etcd_txn){ .success = bad_lease, .n_success = 2 }, &g),
			 -ENOENT);
	assert_int_equal(get(K("z1"), &g), 0);
	assert_int_equal(g.r.n_kvs, 0);
	assert_int_equal(g.r.revision, rev);
	got_clear(&g);
}

static void test_lease(void **state)
{
	struct got g = { 0 };
	int64_t lease, ttl;

	(void)state;
	assert_int_equal(grant(10, 0, &g), 0);
	lease = g.l.id;
	assert_true(lease > 0);
	assert_int_equal(g.l.ttl, 10);
	assert_int_equal(put_full(K("held"), "h", 1, lease, false, &g), 0);
	assert_int_equal(get(K("held"), &g), 0);
	assert_int_equal(g.r.kvs[0].lease, lease);
	assert_int_equal(keepalive(lease, &g), 0);
	assert_int_equal(g.l.id, lease);
	assert_int_equal(g.l.ttl, 10);
	/* Revoked: its keys go. */
	assert_int_equal(revoke_lease(lease, &g), 0);
	assert_int_equal(g.l.id, lease);
	assert_int_equal(get(K("held"), &g), 0);
	assert_int_equal(g.r.n_kvs, 0);
	assert_int_equal(keepalive(lease, &g), -ENOENT);
	assert_int_equal(revoke_lease(lease, &g), -ENOENT);
	assert_int_equal(put_full(K("late"), "l", 1, lease, false, &g), -ENOENT);
	/* etcd's least TTL. */
	assert_int_equal(grant(1, 0, &g), 0);
	ttl = g.l.ttl;
	assert_int_equal(ttl, FAKEETCD_MIN_TTL);
	assert_int_equal(revoke_lease(g.l.id, &g), 0);
	/* An id of the caller's choosing, once. */
	lease = 0x5eed0000 + (int64_t)getpid() * 64 + test_no;
	assert_int_equal(grant(30, lease, &g), 0);
	assert_int_equal(g.l.id, lease);
	assert_int_equal(grant(30, lease, &g), -EEXIST);
	assert_int_equal(revoke_lease(lease, &g), 0);
	got_clear(&g);
}

static void test_watch_events(void **state)
{
	struct watcher x;
	int64_t r0, r1, r2;
	struct got g = { 0 };

	(void)state;
	r0 = put(K("w/a"), "0");
	watch(&(struct etcd_watch_req){ .key = K("w/"), .prefix = true, .start_revision = r0 + 1,
					.prev_kv = true },
	      &x);
	r1 = put(K("w/a"), "1");
	r2 = put(K("w/b"), "2");
	put(K("x"), "outside");
	assert_int_equal(del(&(struct etcd_req){ .key = K("w/a") }, &g), 0);
	wait_events(&x, 3, WAIT);
	assert_false(x.ended);
	assert_int_equal(x.n, 3);
	assert_int_equal(x.ev[0].type, ETCD_EVENT_PUT);
	assert_string_equal(x.ev[0].key, K("w/a"));
	assert_string_equal(x.ev[0].value, "1");
	assert_int_equal(x.ev[0].mod, r1);
	assert_int_equal(x.ev[0].create, r0);
	assert_int_equal(x.ev[0].version, 2);
	assert_true(x.ev[0].has_prev);
	assert_string_equal(x.ev[0].prev, "0");
	assert_string_equal(x.ev[1].key, K("w/b"));
	assert_int_equal(x.ev[1].mod, r2);
	assert_false(x.ev[1].has_prev);
	assert_int_equal(x.ev[2].type, ETCD_EVENT_DELETE);
	assert_string_equal(x.ev[2].key, K("w/a"));
	assert_string_equal(x.ev[2].value, "");
	assert_int_equal(x.ev[2].mod, g.r.revision);
	assert_int_equal(x.ev[2].version, 0);
	assert_string_equal(x.ev[2].prev, "1");
	assert_true(x.revision >= g.r.revision);
	assert_true(etcd_pending(env.e, x.id));
	assert_int_equal(etcd_cancel(env.e, x.id), 0);
	assert_false(etcd_pending(env.e, x.id));
	got_clear(&g);
}

static void test_watch_replay(void **state)
{
	struct watcher x, now;
	int64_t r1, r2, r3;
	struct got g = { 0 };

	(void)state;
	r1 = put(K("h/1"), "1");
	r2 = put(K("h/2"), "2");
	r3 = put(K("h/1"), "1b");
	assert_int_equal(del(&(struct etcd_req){ .key = K("h/2") }, &g), 0);
	/* From r1: the history, in order, without prev_kv. */
	watch(&(struct etcd_watch_req){ .key = K("h/"), .prefix = true, .start_revision = r1 },
	      &x);
	/* From now on: nothing of before. */
	watch(&(struct etcd_watch_req){ .key = K("h/"), .prefix = true }, &now);
	wait_events(&x, 4, WAIT);
	assert_int_equal(x.n, 4);
	assert_int_equal(x.ev[0].mod, r1);
	assert_int_equal(x.ev[1].mod, r2);
	assert_int_equal(x.ev[2].mod, r3);
	assert_string_equal(x.ev[2].value, "1b");
	assert_int_equal(x.ev[3].type, ETCD_EVENT_DELETE);
	assert_string_equal(x.ev[3].key, K("h/2"));
	assert_false(x.ev[0].has_prev);
	/* A single key, from a revision in the middle. */
	struct watcher one;

	watch(&(struct etcd_watch_req){ .key = K("h/1"), .start_revision = r2 }, &one);
	wait_events(&one, 1, WAIT);
	pump(REAL ? 200 * DRF_USEC_PER_MSEC : 0);
	assert_int_equal(one.n, 1);
	assert_int_equal(one.ev[0].mod, r3);
	assert_int_equal(now.n, 0);
	/* The "now" watch is set up once etcd answered it; then a put reaches both. */
	pump(REAL ? 200 * DRF_USEC_PER_MSEC : 0);
	put(K("h/3"), "3");
	wait_events(&now, 1, WAIT);
	assert_int_equal(now.n, 1);
	assert_string_equal(now.ev[0].key, K("h/3"));
	wait_events(&x, 5, WAIT);
	assert_int_equal(x.n, 5);
	assert_int_equal(etcd_cancel(env.e, x.id), 0);
	assert_int_equal(etcd_cancel(env.e, now.id), 0);
	assert_int_equal(etcd_cancel(env.e, one.id), 0);
	got_clear(&g);
}

static void cancel_in_cb(void *userdata, int err, const char *msg,
			 const struct etcd_watch_resp *w)
{
	struct watcher *x = userdata;

	watch_cb(x, err, msg, w);
	assert_int_equal(etcd_cancel(env.e, x->id), 0);
}

static void test_watch_cancel(void **state)
{
	struct watcher x;
	int64_t rev;

	(void)state;
	rev = put(K("c"), "0");
	watch(&(struct etcd_watch_req){ .key = K("c"), .start_revision = rev + 1 }, &x);
	assert_int_equal(etcd_cancel(env.e, x.id), 0);
	assert_false(etcd_pending(env.e, x.id));
	assert_int_equal(etcd_cancel(env.e, x.id), -ENOENT);
	put(K("c"), "1");
	pump(REAL ? 300 * DRF_USEC_PER_MSEC : 0);
	assert_int_equal(x.n, 0);
	assert_false(x.ended);
	/* One canceled from its own callback gets no more. */
	struct watcher y;

	memset(&y, 0, sizeof(y));
	assert_int_equal(etcd_watch(env.e, &(struct etcd_watch_req){ .key = K("c"),
								      .start_revision = rev },
				    cancel_in_cb, &y, &y.id),
			 0);
	wait_events(&y, 1, WAIT);
	assert_int_equal(y.batches, 1);
	assert_false(etcd_pending(env.e, y.id));
	put(K("c"), "2");
	pump(REAL ? 300 * DRF_USEC_PER_MSEC : 0);
	assert_int_equal(y.batches, 1);
	assert_false(y.ended);
	assert_int_equal(etcd_cancel(env.e, 12345678), -ENOENT);
}

static void test_watch_lease_revoke(void **state)
{
	struct watcher x;
	struct got g = { 0 };
	int64_t lease, rev;

	(void)state;
	assert_int_equal(grant(60, 0, &g), 0);
	lease = g.l.id;
	assert_int_equal(put_full(K("l/1"), "1", 1, lease, false, &g), 0);
	assert_int_equal(put_full(K("l/2"), "2", 1, lease, false, &g), 0);
	rev = g.r.revision;
	put(K("l/3"), "not leased");
	watch(&(struct etcd_watch_req){ .key = K("l/"), .prefix = true, .start_revision = rev + 1,
					.prev_kv = true },
	      &x);
	assert_int_equal(revoke_lease(lease, &g), 0);
	wait_events(&x, 3, WAIT);
	/* l/3's put, then both deletions at one revision. */
	assert_int_equal(x.n, 3);
	assert_int_equal(x.ev[1].type, ETCD_EVENT_DELETE);
	assert_int_equal(x.ev[2].type, ETCD_EVENT_DELETE);
	assert_int_equal(x.ev[1].mod, x.ev[2].mod);
	assert_true(x.ev[1].mod > rev + 1);
	assert_int_equal(x.ev[1].lease, 0);
	assert_string_equal(x.ev[1].prev, "1");
	char *v = value_of(K("l/3"));

	assert_string_equal(v, "not leased");
	free(v);
	assert_int_equal(etcd_cancel(env.e, x.id), 0);
	got_clear(&g);
}

static void test_calls_from_callbacks(void **state);

/* A put whose callback asks for a range: the chain of a caller that reacts. */
struct chain {
	struct got first, second;
	uint64_t second_id;
	const char *key;
};

static void chain_cb(void *userdata, int err, const char *msg, const struct etcd_resp *r)
{
	struct chain *c = userdata;

	kv_cb(&c->first, err, msg, r);
	assert_int_equal(etcd_range(env.e, &(struct etcd_req){ .key = c->key }, kv_cb, &c->second,
				    &c->second_id),
			 0);
	/* Not from within the call, even from a callback. */
	assert_false(c->second.done);
}

static void test_calls_from_callbacks(void **state)
{
	struct chain c = { .key = K("chain") };
	uint64_t id;

	(void)state;
	assert_int_equal(etcd_put(env.e, &(struct etcd_req){ .key = c.key, .value = "v",
							     .value_len = 1 },
				  chain_cb, &c, &id),
			 0);
	assert_int_equal(etcd_wait(env.e, id, WAIT), 0);
	assert_int_equal(c.first.err, 0);
	assert_true(c.second_id != 0);
	assert_int_equal(etcd_wait(env.e, c.second_id, WAIT), 0);
	assert_int_equal(c.second.err, 0);
	assert_int_equal(c.second.r.n_kvs, 1);
	assert_string_equal(c.second.r.kvs[0].value, "v");
	assert_int_equal(c.second.r.kvs[0].mod_revision, c.first.r.revision);
	got_clear(&c.first);
	got_clear(&c.second);
}

static void test_invalid(void **state)
{
	struct got g = { 0 };
	struct etcd_req many[ETCD_TXN_MAX + 1];
	uint64_t id = 0;

	(void)state;
	/* Refused at the call: no callback comes. */
	assert_int_equal(etcd_put(env.e, &(struct etcd_req){ .key = "" }, kv_cb, &g, &id), -EINVAL);
	assert_int_equal(etcd_range(env.e, &(struct etcd_req){ .key = "" }, kv_cb, &g, &id),
			 -EINVAL);
	assert_int_equal(etcd_put(env.e, &(struct etcd_req){ .key = K("p"), .prefix = true }, kv_cb,
				  &g, &id),
			 -EINVAL);
	assert_int_equal(etcd_range(env.e, &(struct etcd_req){ .key = K("a") }, NULL, &g, &id),
			 -EINVAL);
	assert_int_equal(etcd_lease_grant(env.e, 0, 0, lease_cb, &g, &id), -EINVAL);
	assert_int_equal(etcd_lease_keepalive(env.e, 0, lease_cb, &g, &id), -EINVAL);
	assert_int_equal(etcd_lease_revoke(env.e, -1, lease_cb, &g, &id), -EINVAL);
	assert_int_equal(etcd_compact(env.e, 0, kv_cb, &g, &id), -EINVAL);
	assert_int_equal(etcd_watch(env.e, &(struct etcd_watch_req){ .key = "" }, watch_cb, &g,
				    &id),
			 -EINVAL);
	for (size_t i = 0; i < ETCD_TXN_MAX + 1; i++)
		many[i] = (struct etcd_req){ .type = ETCD_RANGE, .key = K("m") };
	assert_int_equal(etcd_txn(env.e, &(struct etcd_txn){ .success = many,
							       .n_success = ETCD_TXN_MAX + 1 },
				  txn_cb, &g, &id),
			 -EINVAL);
	assert_int_equal(id, 0);
	pump(REAL ? 100 * DRF_USEC_PER_MSEC : 0);
	assert_false(g.done);
	/* At the most, it is taken. */
	assert_int_equal(txn(&(struct etcd_txn){ .success = many, .n_success = ETCD_TXN_MAX }, &g),
			 0);
	assert_int_equal(g.t.n_resps, ETCD_TXN_MAX);
	got_clear(&g);
}

static void test_wait_timeout(void **state)
{
	struct watcher x;
	uint64_t t0;

	(void)state;
	watch(&(struct etcd_watch_req){ .key = K("never") }, &x);
	t0 = drf_mono_usec(&drf_clock_system);
	assert_int_equal(etcd_wait(env.e, x.id, 150 * DRF_USEC_PER_MSEC), -ETIMEDOUT);
	assert_true(drf_mono_usec(&drf_clock_system) - t0 >= 150 * DRF_USEC_PER_MSEC);
	assert_true(etcd_pending(env.e, x.id));
	assert_int_equal(etcd_cancel(env.e, x.id), 0);
	/* An id that ended (or never was) is waited for at once. */
	assert_int_equal(etcd_wait(env.e, x.id, WAIT), 0);
}

/* Closing with calls pending: each callback once, -ECANCELED; what it calls then, -ESHUTDOWN. */
struct closing {
	struct etcd *e;
	int err[3];
	int calls;
	int again;
};

static void closing_kv(void *userdata, int err, const char *msg, const struct etcd_resp *r)
{
	struct closing *c = userdata;
	uint64_t id;

	(void)msg;
	(void)r;
	c->err[c->calls++] = err;
	c->again = etcd_range(c->e, &(struct etcd_req){ .key = K("x") }, closing_kv, c, &id);
}

static void closing_watch(void *userdata, int err, const char *msg,
			  const struct etcd_watch_resp *w)
{
	struct closing *c = userdata;

	(void)msg;
	(void)w;
	c->err[c->calls++] = err;
}

static void test_close_pending(void **state)
{
	struct closing c = { 0 };
	uint64_t id;

	(void)state;
	assert_int_equal(open_client(&c.e), 0);
	assert_int_equal(etcd_put(c.e, &(struct etcd_req){ .key = K("x"), .value = "1",
							   .value_len = 1 },
				  closing_kv, &c, &id),
			 0);
	assert_int_equal(etcd_watch(c.e, &(struct etcd_watch_req){ .key = K("x") }, closing_watch,
				    &c, &id),
			 0);
	etcd_close(c.e);
	assert_int_equal(c.calls, 2);
	assert_int_equal(c.err[0], -ECANCELED);
	assert_int_equal(c.err[1], -ECANCELED);
	assert_int_equal(c.again, -ESHUTDOWN);
	pump(REAL ? 100 * DRF_USEC_PER_MSEC : 0);
	assert_int_equal(c.calls, 2);
}

static void test_compaction(void **state)
{
	struct got g = { 0 };
	struct watcher x, y;
	int64_t r1, r3;

	(void)state;
	r1 = put(K("c"), "1");
	put(K("c"), "2");
	r3 = put(K("c"), "3");
	assert_int_equal(compact(r3, &g), 0);
	assert_int_equal(range(&(struct etcd_req){ .key = K("c"), .revision = r1 }, &g), -ESTALE);
	assert_int_equal(range(&(struct etcd_req){ .key = K("c"), .revision = r3 }, &g), 0);
	assert_string_equal(g.r.kvs[0].value, "3");
	/* A watch from before: ended, with the compact revision to re-read from. */
	watch(&(struct etcd_watch_req){ .key = K("c"), .start_revision = r1 }, &x);
	wait_end(&x, WAIT);
	assert_int_equal(x.err, -ESTALE);
	assert_int_equal(x.compact, r3);
	assert_int_equal(x.n, 0);
	/* From the compact revision on, it works. */
	watch(&(struct etcd_watch_req){ .key = K("c"), .start_revision = x.compact }, &y);
	wait_events(&y, 1, WAIT);
	assert_false(y.ended);
	assert_int_equal(y.n, 1);
	assert_string_equal(y.ev[0].value, "3");
	assert_int_equal(etcd_cancel(env.e, y.id), 0);
	/* Compacting again at or before it: -ESTALE. */
	assert_int_equal(compact(r1, &g), -ESTALE);
	got_clear(&g);
}

/*
 * A lease left alone expires: its key deleted, the watcher told. The fake's
 * clock is moved; a real etcd takes its TTL of time (etcd checks leases
 * every 500 ms).
 */
static void test_lease_expiry(void **state)
{
	struct got g = { 0 };
	struct watcher x;
	int64_t lease, rev;
	uint64_t t0;

	(void)state;
	if (REAL && !opt.lease_expiry)
		skip();
	assert_int_equal(grant(2, 0, &g), 0);
	lease = g.l.id;
	assert_int_equal(g.l.ttl, 2);
	assert_int_equal(put_full(K("e/k"), "v", 1, lease, false, &g), 0);
	rev = g.r.revision;
	t0 = drf_mono_usec(&drf_clock_system);
	watch(&(struct etcd_watch_req){ .key = K("e/"), .prefix = true, .start_revision = rev + 1 },
	      &x);
	if (!REAL) {
		/* Within its TTL: still there. */
		env.clk.mono += DRF_USEC_PER_SEC;
		fakeetcd_tick(env.fake);
		pump(0);
		assert_int_equal(x.n, 0);
		assert_non_null(fakeetcd_get(env.fake, K("e/k")));
		/* A keepalive makes it 2 s from now again. */
		assert_int_equal(keepalive(lease, &g), 0);
		assert_int_equal(g.l.ttl, 2);
		env.clk.mono += 1500 * DRF_USEC_PER_MSEC;
		fakeetcd_tick(env.fake);
		pump(0);
		assert_int_equal(x.n, 0);
		env.clk.mono += 600 * DRF_USEC_PER_MSEC;
		fakeetcd_tick(env.fake);
	}
	wait_events(&x, 1, WAIT);
	assert_int_equal(x.n, 1);
	assert_int_equal(x.ev[0].type, ETCD_EVENT_DELETE);
	assert_string_equal(x.ev[0].key, K("e/k"));
	if (REAL)
		assert_true(drf_mono_usec(&drf_clock_system) - t0 >= DRF_USEC_PER_SEC);
	assert_int_equal(get(K("e/k"), &g), 0);
	assert_int_equal(g.r.n_kvs, 0);
	assert_int_equal(keepalive(lease, &g), -ENOENT);
	assert_int_equal(etcd_cancel(env.e, x.id), 0);
	got_clear(&g);
}

/* The fake's own: faults, record, clients. */

static void test_fake_unreachable(void **state)
{
	struct got g = { 0 };
	struct watcher x;

	(void)state;
	put(K("a"), "1");
	env.fake->fault = (struct drf_fault){ .err = ECONNREFUSED };
	assert_int_equal(put_full(K("a"), "2", 1, 0, false, &g), -ECONNREFUSED);
	assert_int_equal(get(K("a"), &g), -ECONNREFUSED);
	assert_int_equal(txn(&(struct etcd_txn){ 0 }, &g), -ECONNREFUSED);
	assert_int_equal(grant(5, 0, &g), -ECONNREFUSED);
	assert_int_equal(compact(1, &g), -ECONNREFUSED);
	watch(&(struct etcd_watch_req){ .key = K("a") }, &x);
	wait_end(&x, WAIT);
	assert_int_equal(x.err, -ECONNREFUSED);
	assert_int_equal(env.fake->fault.hits, 6);
	env.fake->fault.err = ETIMEDOUT;
	assert_int_equal(keepalive(5, &g), -ETIMEDOUT);
	assert_int_equal(revoke_lease(5, &g), -ETIMEDOUT);
	/* Back: nothing was written meanwhile. */
	env.fake->fault.err = 0;
	char *v = value_of(K("a"));

	assert_string_equal(v, "1");
	free(v);
	got_clear(&g);
}

static void test_fake_fail_once(void **state)
{
	struct got g = { 0 };
	struct etcd_req p = { .type = ETCD_PUT, .key = K("t"), .value = "t", .value_len = 1 };
	int64_t rev;

	(void)state;
	rev = put(K("x"), "0");
	env.fake->fault = (struct drf_fault){ .err = EIO, .ops = FAKEETCD_OP_PUT };
	env.fake->fault_times = 1;
	assert_int_equal(put_full(K("x"), "1", 1, 0, false, &g), -EIO);
	assert_int_equal(fakeetcd_revision(env.fake), rev);
	assert_int_equal(put_full(K("x"), "2", 1, 0, false, &g), 0);
	assert_int_equal(fakeetcd_get(env.fake, K("x"))->version, 2);
	/* A txn, once; a range is not a txn. */
	env.fake->fault = (struct drf_fault){ .err = EAGAIN, .ops = FAKEETCD_OP_TXN };
	env.fake->fault_times = 1;
	assert_int_equal(get(K("x"), &g), 0);
	assert_int_equal(txn(&(struct etcd_txn){ .success = &p, .n_success = 1 }, &g), -EAGAIN);
	assert_null(fakeetcd_get(env.fake, K("t")));
	assert_int_equal(txn(&(struct etcd_txn){ .success = &p, .n_success = 1 }, &g), 0);
	assert_non_null(fakeetcd_get(env.fake, K("t")));
	assert_int_equal(env.fake->fault.hits, 1);
	/* On keys ending so only. */
	env.fake->fault = (struct drf_fault){ .err = EACCES, .path = "/secret" };
	env.fake->fault_times = 0;
	assert_int_equal(put_full(K("open"), "o", 1, 0, false, &g), 0);
	assert_int_equal(put_full(K("dir/secret"), "s", 1, 0, false, &g), -EACCES);
	assert_int_equal(get(K("dir/secret"), &g), -EACCES);
	got_clear(&g);
}

/* A broken stream: the caller watches again from its last revision + 1 and misses nothing. */
static void test_fake_broken_watch(void **state)
{
	struct watcher x, y;
	int64_t rev, last;

	(void)state;
	rev = put(K("b/0"), "0");
	watch(&(struct etcd_watch_req){ .key = K("b/"), .prefix = true, .start_revision = rev + 1 },
	      &x);
	put(K("b/1"), "1");
	wait_events(&x, 1, WAIT);
	assert_int_equal(x.n, 1);
	last = x.ev[0].mod;
	fakeetcd_break_watches(env.fake, -ECONNRESET);
	put(K("b/2"), "2");
	wait_end(&x, WAIT);
	assert_int_equal(x.err, -ECONNRESET);
	assert_int_equal(x.n, 1);
	assert_int_equal(fakeetcd_nwatches(env.fake), 0);
	put(K("b/3"), "3");
	watch(&(struct etcd_watch_req){ .key = K("b/"), .prefix = true,
					.start_revision = last + 1 },
	      &y);
	wait_events(&y, 2, WAIT);
	assert_int_equal(y.n, 2);
	assert_string_equal(y.ev[0].key, K("b/2"));
	assert_string_equal(y.ev[1].key, K("b/3"));
	/* A watch refused at its start. */
	env.fake->fault = (struct drf_fault){ .err = ECONNREFUSED, .ops = FAKEETCD_OP_WATCH };
	struct watcher z;

	watch(&(struct etcd_watch_req){ .key = K("b/0") }, &z);
	wait_end(&z, WAIT);
	assert_int_equal(z.err, -ECONNREFUSED);
	assert_false(y.ended);
	assert_int_equal(etcd_cancel(env.e, y.id), 0);
}

/* Two clients, one cut off and back: the other goes on; nothing is lost on its return. */
static void test_fake_partition(void **state)
{
	struct etcd *a = env.e, *b;
	struct watcher x, y;
	struct got g = { 0 };
	int64_t rev;
	uint64_t id;

	(void)state;
	assert_int_equal(fakeetcd_connect(env.fake, &b), 0);
	rev = put(K("n/a"), "a");
	watch(&(struct etcd_watch_req){ .key = K("n/"), .prefix = true, .start_revision = rev + 1 },
	      &x);
	pump(0);
	assert_int_equal(fakeetcd_partition(a, true), 0);
	assert_int_equal(put_full(K("n/a"), "lost", 4, 0, false, &g), -ECONNREFUSED);
	wait_end(&x, WAIT);
	assert_int_equal(x.err, -ECONNRESET);
	/* b writes meanwhile. */
	env.e = b;
	put(K("n/b"), "b");
	env.e = a;
	assert_int_equal(fakeetcd_partition(a, false), 0);
	watch(&(struct etcd_watch_req){ .key = K("n/"), .prefix = true, .start_revision = rev + 1 },
	      &y);
	wait_events(&y, 1, WAIT);
	assert_int_equal(y.n, 1);
	assert_string_equal(y.ev[0].key, K("n/b"));
	/* b's watch sees a's write. */
	struct watcher z;

	env.e = b;
	watch(&(struct etcd_watch_req){ .key = K("n/a") }, &z);
	env.e = a;
	assert_int_equal(etcd_put(a, &(struct etcd_req){ .key = K("n/a"), .value = "again",
							 .value_len = 5 },
				  kv_cb, &g, &id),
			 0);
	assert_int_equal(etcd_wait(a, id, WAIT), 0);
	wait_events(&z, 1, WAIT);
	assert_int_equal(z.n, 1);
	assert_string_equal(z.ev[0].value, "again");
	assert_int_equal(fakeetcd_partition(&(struct etcd){ .ops = NULL }, true), -EINVAL);
	etcd_close(b);
	assert_int_equal(etcd_cancel(a, y.id), 0);
	got_clear(&g);
}

static void test_fake_record(void **state)
{
	char *text = NULL;
	size_t len = 0;
	struct got g = { 0 };
	struct watcher x;
	struct etcd_req q = { .type = ETCD_PUT, .key = "/r/t", .value = "xy", .value_len = 2 };
	FILE *out = open_memstream(&text, &len);

	(void)state;
	assert_non_null(out);
	env.fake->out = out;
	assert_int_equal(put_full("/r/a", "abc", 3, 0, false, &g), 0);
	assert_int_equal(range(&(struct etcd_req){ .key = "/r/", .prefix = true, .limit = 5 }, &g),
			 0);
	assert_int_equal(get("/r/a", &g), 0);
	assert_int_equal(del(&(struct etcd_req){ .key = "/r/a", .range_end = "/r/b" }, &g), 0);
	assert_int_equal(txn(&(struct etcd_txn){ .success = &q, .n_success = 1 }, &g), 0);
	assert_int_equal(grant(7, 0, &g), 0);
	assert_int_equal(keepalive(g.l.id, &g), 0);
	assert_int_equal(revoke_lease(g.l.id, &g), 0);
	watch(&(struct etcd_watch_req){ .key = "/r/", .from_key = true, .start_revision = 3 }, &x);
	assert_int_equal(etcd_cancel(env.e, x.id), 0);
	assert_int_equal(fflush(out), 0);
	assert_string_equal(text, "put /r/a 3 lease=0\n"
				  "range /r/* rev=0 limit=5\n"
				  "range /r/a\n"
				  "delete /r/a../r/b\n"
				  "txn cmp=0 success=1 failure=0\n"
				  "lease-grant 7\n"
				  "lease-keepalive 7587000000000000001\n"
				  "lease-revoke 7587000000000000001\n"
				  "watch /r/.. from=3\n"
				  "cancel 9\n");
	assert_int_equal(env.fake->calls, 10);
	env.fake->out = NULL;
	fclose(out);
	free(text);
	got_clear(&g);
}

/* Leases expire in the order of their time; each takes its keys in one revision. */
static void test_fake_expiry_revisions(void **state)
{
	struct got g = { 0 };
	int64_t short_lease, long_lease, rev;

	(void)state;
	assert_int_equal(grant(5, 0, &g), 0);
	short_lease = g.l.id;
	assert_int_equal(grant(50, 0, &g), 0);
	long_lease = g.l.id;
	assert_int_equal(put_full(K("s1"), "1", 1, short_lease, false, &g), 0);
	assert_int_equal(put_full(K("s2"), "2", 1, short_lease, false, &g), 0);
	assert_int_equal(put_full(K("l1"), "3", 1, long_lease, false, &g), 0);
	rev = fakeetcd_revision(env.fake);
	assert_int_equal(fakeetcd_nleases(env.fake), 2);
	env.clk.mono += 5 * DRF_USEC_PER_SEC;
	/* Any call run after the time passed finds it expired. */
	assert_int_equal(get(K("s1"), &g), 0);
	assert_int_equal(g.r.n_kvs, 0);
	assert_int_equal(fakeetcd_revision(env.fake), rev + 1);
	assert_int_equal(fakeetcd_nkeys(env.fake), 1);
	assert_int_equal(fakeetcd_nleases(env.fake), 1);
	assert_int_equal(keepalive(long_lease, &g), 0);
	/* A lease with no keys expires without a revision. */
	assert_int_equal(revoke_lease(long_lease, &g), 0);
	assert_int_equal(grant(3, 0, &g), 0);
	rev = fakeetcd_revision(env.fake);
	env.clk.mono += 3 * DRF_USEC_PER_SEC;
	fakeetcd_tick(env.fake);
	assert_int_equal(fakeetcd_nleases(env.fake), 0);
	assert_int_equal(fakeetcd_revision(env.fake), rev);
	/* The fake's compaction checks its bounds. */
	assert_int_equal(fakeetcd_compact(env.fake, rev + 1), -ERANGE);
	assert_int_equal(fakeetcd_compact(env.fake, rev), 0);
	assert_int_equal(fakeetcd_compacted(env.fake), rev);
	assert_int_equal(fakeetcd_compact(env.fake, rev), -ESTALE);
	got_clear(&g);
}

/* The gateway's JSON (no etcd, no loop). */

static json_object *parse(const char *text)
{
	json_object *o = json_tokener_parse(text);

	assert_non_null(o);
	return o;
}

static void test_b64(void **state)
{
	static const char *const vec[][2] = {
		{ "", "" },		{ "f", "Zg==" },	 { "fo", "Zm8=" },
		{ "foo", "Zm9v" },	{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" },
	};
	unsigned char all[256];
	char *s, *out;
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		s = etcd_b64_encode(vec[i][0], strlen(vec[i][0]));
		assert_string_equal(s, vec[i][1]);
		assert_int_equal(etcd_b64_decode(s, strlen(s), &out, &n), 0);
		assert_int_equal(n, strlen(vec[i][0]));
		assert_string_equal(out, vec[i][0]);
		free(out);
		free(s);
	}
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)(255 - i);
	for (size_t len = 0; len <= sizeof(all); len += 37) {
		s = etcd_b64_encode(all, len);
		assert_int_equal(etcd_b64_decode(s, strlen(s), &out, &n), 0);
		assert_int_equal(n, len);
		assert_memory_equal(out, all, len);
		free(out);
		free(s);
	}
	/* Protobuf's JSON takes the URL-safe alphabet, and padding left out. */
	assert_int_equal(etcd_b64_decode("-_8", 3, &out, &n), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(out, "\xfb\xff", 2);
	free(out);
	assert_int_equal(etcd_b64_decode("Zm8", 3, &out, &n), 0);
	assert_string_equal(out, "fo");
	free(out);
	assert_int_equal(etcd_b64_decode("Zm9v!", 5, &out, &n), -EBADMSG);
	assert_int_equal(etcd_b64_decode("Z", 1, &out, &n), -EBADMSG);
	assert_int_equal(etcd_b64_decode("Zg=", 3, &out, &n), -EBADMSG);
	assert_int_equal(etcd_b64_decode("Z===", 4, &out, &n), -EBADMSG);
	assert_int_equal(etcd_b64_decode("Zm 9v", 5, &out, &n), -EBADMSG);
}

static void test_int64(void **state)
{
	json_object *o = parse("{\"max\":\"9223372036854775807\",\"neg\":\"-5\",\"num\":12,"
			       "\"word\":\"x\",\"empty\":\"\",\"over\":\"99999999999999999999\","
			       "\"real\":1.5,\"big\":18446744073709551615,\"null\":null,"
			       "\"plus\":\"+3\",\"trail\":\"3 \"}");
	int64_t v = -1;

	(void)state;
	assert_int_equal(etcd_json_int64(o, "max", &v), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(etcd_json_int64(o, "neg", &v), 0);
	assert_int_equal(v, -5);
	assert_int_equal(etcd_json_int64(o, "num", &v), 0);
	assert_int_equal(v, 12);
	assert_int_equal(etcd_json_int64(o, "absent", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(etcd_json_int64(o, "null", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(etcd_json_int64(o, "word", &v), -EBADMSG);
	assert_int_equal(etcd_json_int64(o, "empty", &v), -EBADMSG);
	assert_int_equal(etcd_json_int64(o, "over", &v), -EBADMSG);
	assert_int_equal(etcd_json_int64(o, "real", &v), -EBADMSG);
	assert_int_equal(etcd_json_int64(o, "big", &v), -EBADMSG);
	assert_int_equal(etcd_json_int64(o, "plus", &v), -EBADMSG);
	assert_int_equal(etcd_json_int64(o, "trail", &v), -EBADMSG);
	json_object_put(o);
}

/* The text of key under path ("a.b.0.c") in the JSON body, or NULL. */
static const char *at(json_object *o, const char *path)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = strtok_r(buf, ".", &save); p && o; p = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(p));
		else if (!json_object_object_get_ex(o, p, &o))
			o = NULL;
	}
	return o ? json_object_get_string(o) : NULL;
}

static void test_encode(void **state)
{
	char *body;
	json_object *o;
	struct etcd_cmp cmp = { .key = "foo", .target = ETCD_CMP_MOD,
				.result = ETCD_CMP_NOT_EQUAL, .n = 5 };
	struct etcd_cmp vcmp = { .key = "foo", .target = ETCD_CMP_VALUE, .value = "bar",
				 .value_len = 3 };
	struct etcd_req ops[3] = {
		{ .type = ETCD_PUT, .key = "foo", .value = "bar", .value_len = 3 },
		{ .type = ETCD_DELETE, .key = "d", .prefix = true },
		{ .type = ETCD_RANGE, .key = "r", .count_only = true },
	};

	(void)state;
	assert_int_equal(etcd_json_kv_req(&(struct etcd_req){ .type = ETCD_PUT, .key = "foo",
							      .value = "bar", .value_len = 3,
							      .lease = 7587000000000000001,
							      .prev_kv = true },
					  &body),
			 0);
	o = parse(body);
	assert_string_equal(at(o, "key"), "Zm9v");
	assert_string_equal(at(o, "value"), "YmFy");
	/* int64s as strings, as protobuf's JSON has them: a double would round this one. */
	assert_string_equal(at(o, "lease"), "7587000000000000001");
	assert_true(json_object_is_type(json_object_object_get(o, "lease"), json_type_string));
	assert_string_equal(at(o, "prev_kv"), "true");
	json_object_put(o);
	free(body);

	assert_int_equal(etcd_json_kv_req(&(struct etcd_req){ .type = ETCD_RANGE, .key = "a/",
							      .prefix = true, .revision = 9,
							      .limit = 2 },
					  &body),
			 0);
	o = parse(body);
	assert_string_equal(at(o, "key"), "YS8="); /* "a/" */
	assert_string_equal(at(o, "range_end"), "YTA="); /* "a0" */
	assert_string_equal(at(o, "revision"), "9");
	assert_string_equal(at(o, "limit"), "2");
	assert_null(at(o, "keys_only"));
	json_object_put(o);
	free(body);

	/* Every key; from a key on. */
	assert_int_equal(etcd_json_kv_req(&(struct etcd_req){ .type = ETCD_DELETE, .key = "",
							      .prefix = true },
					  &body),
			 0);
	o = parse(body);
	assert_string_equal(at(o, "key"), "AA==");
	assert_string_equal(at(o, "range_end"), "AA==");
	json_object_put(o);
	free(body);
	assert_int_equal(etcd_json_watch_req(&(struct etcd_watch_req){ .key = "k", .from_key = true,
									 .start_revision = 12,
									 .prev_kv = true },
					     &body),
			 0);
	o = parse(body);
	assert_string_equal(at(o, "create_request.key"), "aw==");
	assert_string_equal(at(o, "create_request.range_end"), "AA==");
	assert_string_equal(at(o, "create_request.start_revision"), "12");
	assert_string_equal(at(o, "create_request.prev_kv"), "true");
	json_object_put(o);
	free(body);

	struct etcd_cmp cmps[2] = { cmp, vcmp };

	assert_int_equal(etcd_json_txn_req(&(struct etcd_txn){ .cmp = cmps,
								 .n_cmp = 2,
								 .success = ops,
								 .n_success = 2,
								 .failure = &ops[2],
								 .n_failure = 1 },
					   &body),
			 0);
	o = parse(body);
	assert_string_equal(at(o, "compare.0.key"), "Zm9v");
	assert_string_equal(at(o, "compare.0.target"), "MOD");
	assert_string_equal(at(o, "compare.0.result"), "NOT_EQUAL");
	assert_string_equal(at(o, "compare.0.mod_revision"), "5");
	assert_string_equal(at(o, "compare.1.target"), "VALUE");
	assert_string_equal(at(o, "compare.1.result"), "EQUAL");
	assert_string_equal(at(o, "compare.1.value"), "YmFy");
	assert_string_equal(at(o, "success.0.request_put.value"), "YmFy");
	assert_string_equal(at(o, "success.1.request_delete_range.range_end"), "ZQ==");
	assert_string_equal(at(o, "failure.0.request_range.count_only"), "true");
	json_object_put(o);
	free(body);

	assert_int_equal(etcd_json_lease_req(10, 0, &body), 0);
	assert_string_equal(body, "{\"TTL\":\"10\",\"ID\":\"0\"}");
	free(body);
	assert_int_equal(etcd_json_lease_req(-1, 42, &body), 0);
	assert_string_equal(body, "{\"ID\":\"42\"}");
	free(body);
	assert_int_equal(etcd_json_auth_req("u", "p\"w", &body), 0);
	assert_string_equal(body, "{\"name\":\"u\",\"password\":\"p\\\"w\"}");
	free(body);
	assert_int_equal(etcd_json_kv_req(&(struct etcd_req){ .type = ETCD_RANGE, .key = "" },
					  &body),
			 -EINVAL);
}

/* Answers as etcd 3.4.23's gateway wrote them. */
#define HDR "\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":" \
	    "\"13668033151171901709\",\"revision\":\"%s\",\"raft_term\":\"2\"}"

static json_object *answer(const char *fmt_, const char *rev)
{
	char text[2048];

	snprintf(text, sizeof(text), fmt_, rev);
	return parse(text);
}

static void test_decode(void **state)
{
	json_object *o;
	struct etcd_resp r;
	struct etcd_txn_resp t;
	struct etcd_lease l;

	(void)state;
	o = answer("{" HDR ",\"kvs\":[{\"key\":\"Zm9v\",\"create_revision\":\"2\",\"mod_revision\":"
		   "\"3\",\"version\":\"2\",\"value\":\"YQ==\",\"lease\":\"7587\"}],\"count\":\"1\"}",
		   "3");
	assert_int_equal(etcd_json_kv_resp(o, ETCD_RANGE, &r), 0);
	assert_int_equal(r.revision, 3);
	assert_int_equal(r.count, 1);
	assert_int_equal(r.n_kvs, 1);
	assert_string_equal(r.kvs[0].key, "foo");
	assert_string_equal(r.kvs[0].value, "a");
	assert_int_equal(r.kvs[0].create_revision, 2);
	assert_int_equal(r.kvs[0].mod_revision, 3);
	assert_int_equal(r.kvs[0].version, 2);
	assert_int_equal(r.kvs[0].lease, 7587);
	etcd_resp_clear(&r);
	etcd_resp_clear(&r);
	json_object_put(o);

	/* Fields at their default are left out: zero, empty. */
	o = answer("{" HDR "}", "9");
	assert_int_equal(etcd_json_kv_resp(o, ETCD_RANGE, &r), 0);
	assert_int_equal(r.revision, 9);
	assert_int_equal(r.count, 0);
	assert_int_equal(r.n_kvs, 0);
	assert_false(r.more);
	etcd_resp_clear(&r);
	json_object_put(o);

	o = answer("{" HDR ",\"prev_kv\":{\"key\":\"Zm9v\",\"create_revision\":\"2\","
		   "\"mod_revision\":\"3\",\"version\":\"2\",\"value\":\"YQ==\"}}",
		   "4");
	assert_int_equal(etcd_json_kv_resp(o, ETCD_PUT, &r), 0);
	assert_int_equal(r.n_kvs, 1);
	assert_string_equal(r.kvs[0].value, "a");
	etcd_resp_clear(&r);
	json_object_put(o);

	o = answer("{" HDR ",\"deleted\":\"1\",\"prev_kvs\":[{\"key\":\"Zm9v\",\"mod_revision\":"
		   "\"4\",\"value\":\"Yg==\"}]}",
		   "5");
	assert_int_equal(etcd_json_kv_resp(o, ETCD_DELETE, &r), 0);
	assert_int_equal(r.count, 1);
	assert_int_equal(r.n_kvs, 1);
	assert_string_equal(r.kvs[0].value, "b");
	assert_int_equal(r.kvs[0].version, 0);
	etcd_resp_clear(&r);
	json_object_put(o);

	o = answer("{" HDR ",\"succeeded\":true,\"responses\":[{\"response_put\":{\"header\":"
		   "{\"revision\":\"3\"}}},{\"response_range\":{\"header\":{\"revision\":\"3\"},"
		   "\"kvs\":[{\"key\":\"Zm9v\",\"create_revision\":\"2\",\"mod_revision\":\"3\","
		   "\"version\":\"2\",\"value\":\"YQ==\"}],\"count\":\"1\"}},"
		   "{\"response_delete_range\":{\"header\":{\"revision\":\"3\"}}}]}",
		   "3");
	assert_int_equal(etcd_json_txn_resp(o, &t), 0);
	assert_true(t.succeeded);
	assert_int_equal(t.revision, 3);
	assert_int_equal(t.n_resps, 3);
	assert_int_equal(t.resps[0].type, ETCD_PUT);
	assert_int_equal(t.resps[1].type, ETCD_RANGE);
	assert_string_equal(t.resps[1].kvs[0].value, "a");
	assert_int_equal(t.resps[2].type, ETCD_DELETE);
	assert_int_equal(t.resps[2].count, 0);
	etcd_txn_resp_clear(&t);
	json_object_put(o);
	/* A failed txn: no "succeeded". */
	o = answer("{" HDR ",\"responses\":[{\"response_range\":{\"header\":{\"revision\":\"3\"}}}]}",
		   "3");
	assert_int_equal(etcd_json_txn_resp(o, &t), 0);
	assert_false(t.succeeded);
	etcd_txn_resp_clear(&t);
	json_object_put(o);
	o = parse("{\"responses\":[{\"response_nested_txn\":{}}]}");
	assert_int_equal(etcd_json_txn_resp(o, &t), -EBADMSG);
	json_object_put(o);

	o = answer("{" HDR ",\"ID\":\"4111120266546039305\",\"TTL\":\"5\"}", "2");
	assert_int_equal(etcd_json_lease_resp(o, &l), 0);
	assert_true(l.id == 4111120266546039305);
	assert_int_equal(l.ttl, 5);
	json_object_put(o);
	/* A keepalive's streamed answer for a lease gone: no TTL. */
	o = answer("{\"result\":{" HDR ",\"ID\":\"5\"}}", "2");
	assert_int_equal(etcd_json_lease_resp(o, &l), 0);
	assert_int_equal(l.id, 5);
	assert_int_equal(l.ttl, 0);
	assert_int_equal(l.revision, 2);
	json_object_put(o);

	/* Not base64, not an int64: refused, not half read. */
	o = parse("{\"kvs\":[{\"key\":\"Zm9v\"},{\"key\":\"***\"}]}");
	assert_int_equal(etcd_json_kv_resp(o, ETCD_RANGE, &r), -EBADMSG);
	assert_int_equal(r.n_kvs, 0);
	json_object_put(o);
	o = parse("{\"count\":\"many\"}");
	assert_int_equal(etcd_json_kv_resp(o, ETCD_RANGE, &r), -EBADMSG);
	json_object_put(o);
}

static void test_gateway_errors(void **state)
{
	static const struct {
		const char *body;
		int code, err;
	} cases[] = {
		{ "{\"error\":\"etcdserver: mvcc: required revision has been compacted\","
		  "\"message\":\"etcdserver: mvcc: required revision has been compacted\",\"code\":11}",
		  11, -ESTALE },
		{ "{\"error\":\"etcdserver: mvcc: required revision is a future revision\","
		  "\"message\":\"etcdserver: mvcc: required revision is a future revision\",\"code\":11}",
		  11, -ERANGE },
		{ "{\"error\":\"etcdserver: permission denied\",\"message\":\"etcdserver: permission "
		  "denied\",\"code\":7}",
		  7, -EACCES },
		{ "{\"error\":\"etcdserver: invalid auth token\",\"message\":\"etcdserver: invalid "
		  "auth token\",\"code\":16}",
		  16, -EACCES },
		{ "{\"error\":\"etcdserver: authentication failed, invalid user ID or password\","
		  "\"message\":\"etcdserver: authentication failed, invalid user ID or password\","
		  "\"code\":3}",
		  3, -EACCES },
		{ "{\"error\":\"etcdserver: user name is empty\",\"code\":3}", 3, -EACCES },
		{ "{\"error\":\"etcdserver: duplicate key given in txn request\",\"message\":"
		  "\"etcdserver: duplicate key given in txn request\",\"code\":3}",
		  3, -EINVAL },
		{ "{\"error\":\"etcdserver: requested lease not found\",\"code\":5}", 5, -ENOENT },
		{ "{\"error\":\"etcdserver: lease already exists\",\"code\":9}", 9, -EEXIST },
		{ "{\"error\":\"etcdserver: authentication is not enabled\",\"code\":9}", 9,
		  -EPERM },
		{ "{\"error\":\"etcdserver: no leader\",\"code\":14}", 14, -EAGAIN },
		{ "{\"error\":\"etcdserver: mvcc: database space exceeded\",\"code\":8}", 8, -ENOSPC },
		{ "{\"error\":\"etcdserver: request timed out\",\"code\":4}", 4, -ETIMEDOUT },
		{ "{\"error\":\"invalid character 'g'\",\"message\":\"invalid character 'g'\","
		  "\"code\":2}",
		  2, -EIO },
		/* A stream's error, in the other form. */
		{ "{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"etcdserver: no "
		  "leader\",\"http_status\":\"Service Unavailable\"}}",
		  14, -EAGAIN },
		{ "{\"error\":\"no code\"}", 2, -EIO },
	};
	json_object *o;
	const char *msg;
	int code;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		o = parse(cases[i].body);
		assert_true(etcd_json_error(o, &code, &msg));
		assert_int_equal(code, cases[i].code);
		assert_non_null(msg);
		assert_int_equal(etcd_errno(code, msg), cases[i].err);
		json_object_put(o);
	}
	/* Not errors: an answer; a lease grant's own empty "error". */
	o = answer("{" HDR "}", "1");
	assert_false(etcd_json_error(o, &code, &msg));
	json_object_put(o);
	o = parse("{\"ID\":\"1\",\"TTL\":\"5\",\"error\":\"\"}");
	assert_false(etcd_json_error(o, &code, &msg));
	json_object_put(o);
	/* A watch canceled by etcd says why in words. */
	etcd_cancel_reason("rpc error: code = PermissionDenied desc = etcdserver: permission denied",
			   &code, &msg);
	assert_int_equal(code, 7);
	assert_string_equal(msg, "etcdserver: permission denied");
	etcd_cancel_reason("rpc error: code = Unauthenticated desc = etcdserver: invalid auth token",
			   &code, &msg);
	assert_int_equal(code, 16);
	etcd_cancel_reason("something else", &code, &msg);
	assert_int_equal(code, 2);
	assert_string_equal(msg, "something else");
}

/* A watch's stream as etcd 3.4.23 sent it: created, two events, the compaction's cancel. */
#define HDR_5 "\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":" \
	      "\"13668033151171901709\",\"revision\":\"5\",\"raft_term\":\"2\"}"
static const char watch_stream[] =
	"{\"result\":{" HDR_5 ",\"created\":true}}\n"
	"{\"result\":{" HDR_5 ",\"events\":[{\"kv\":{\"key\":\"Zm9v\",\"create_revision\":\"2\","
	"\"mod_revision\":\"4\",\"version\":\"3\",\"value\":\"Yg==\"}},{\"type\":\"DELETE\","
	"\"kv\":{\"key\":\"Zm9v\",\"mod_revision\":\"5\"},\"prev_kv\":{\"key\":\"Zm9v\","
	"\"create_revision\":\"2\",\"mod_revision\":\"4\",\"version\":\"3\",\"value\":\"Yg==\"}}]}}\n"
	"{\"result\":{\"header\":{\"revision\":\"5\"},\"canceled\":true,\"compact_revision\":\"4\"}}\n";

/* What a stream decoded to, as text: one line per object. */
struct seen {
	char text[1024];
	size_t len;
	int objects;
};

static int seen_object(void *ctx, json_object *o)
{
	struct seen *s = ctx;
	struct etcd_watch_msg m;
	int r = etcd_json_watch_msg(o, &m);

	json_object_put(o);
	assert_int_equal(r, 0);
	s->objects++;
	s->len += (size_t)snprintf(s->text + s->len, sizeof(s->text) - s->len, "%d:", m.kind);
	for (size_t i = 0; i < m.resp.n_events; i++)
		s->len += (size_t)snprintf(s->text + s->len, sizeof(s->text) - s->len,
					   " %d %s=%s@%" PRId64 "%s%s", m.resp.events[i].type,
					   m.resp.events[i].kv.key, m.resp.events[i].kv.value,
					   m.resp.events[i].kv.mod_revision,
					   m.resp.events[i].prev_kv ? " prev=" : "",
					   m.resp.events[i].prev_kv ? m.resp.events[i].prev_kv->value
								    : "");
	if (m.kind == ETCD_WATCH_END)
		s->len += (size_t)snprintf(s->text + s->len, sizeof(s->text) - s->len,
					   " err=%d compact=%" PRId64, m.err,
					   m.resp.compact_revision);
	s->len += (size_t)snprintf(s->text + s->len, sizeof(s->text) - s->len, "\n");
	etcd_watch_msg_clear(&m);
	return 0;
}

static void test_watch_stream(void **state)
{
	size_t n = strlen(watch_stream);
	struct seen whole = { 0 };
	struct etcd_stream s = { 0 };
	char expect[256];

	(void)state;
	assert_int_equal(etcd_stream_feed(&s, watch_stream, n, seen_object, &whole), 0);
	assert_false(s.partial);
	etcd_stream_free(&s);
	snprintf(expect, sizeof(expect),
		 "%d:\n%d: 0 foo=b@4 1 foo=@5 prev=b\n%d: err=%d compact=4\n",
		 ETCD_WATCH_NOTHING, ETCD_WATCH_EVENTS, ETCD_WATCH_END, -ESTALE);
	assert_string_equal(whole.text, expect);
	assert_int_equal(whole.objects, 3);
	/* Cut at every byte: the same objects, whole. */
	for (size_t cut = 0; cut <= n; cut++) {
		struct seen part = { 0 };

		assert_int_equal(etcd_stream_feed(&s, watch_stream, cut, seen_object, &part), 0);
		assert_int_equal(
			etcd_stream_feed(&s, watch_stream + cut, n - cut, seen_object, &part), 0);
		assert_false(s.partial);
		etcd_stream_free(&s);
		assert_string_equal(part.text, whole.text);
	}
	/* A byte at a time; and in three pieces at seeded random places. */
	struct seen bytes = { 0 };

	for (size_t i = 0; i < n; i++) {
		assert_int_equal(etcd_stream_feed(&s, watch_stream + i, 1, seen_object, &bytes), 0);
		if (i + 1 < n && watch_stream[i] != '\n')
			assert_true(s.partial || bytes.objects > 0);
	}
	etcd_stream_free(&s);
	assert_string_equal(bytes.text, whole.text);
	struct rng rng = { 42 };

	for (int round = 0; round < 200; round++) {
		struct seen part = { 0 };
		size_t a = (size_t)rng_int(&rng, 0, (int)n), b = (size_t)rng_int(&rng, 0, (int)n);

		if (a > b) {
			size_t t = a;

			a = b;
			b = t;
		}
		assert_int_equal(etcd_stream_feed(&s, watch_stream, a, seen_object, &part), 0);
		assert_int_equal(etcd_stream_feed(&s, watch_stream + a, b - a, seen_object, &part),
				 0);
		assert_int_equal(etcd_stream_feed(&s, watch_stream + b, n - b, seen_object, &part),
				 0);
		etcd_stream_free(&s);
		assert_string_equal(part.text, whole.text);
	}
	/* Half an object at the end is partial; text that is not JSON stops the stream. */
	struct seen half = { 0 };

	assert_int_equal(etcd_stream_feed(&s, watch_stream, 40, seen_object, &half), 0);
	assert_true(s.partial);
	assert_int_equal(half.objects, 0);
	etcd_stream_free(&s);
	assert_int_equal(etcd_stream_feed(&s, "{\"result\":{}}\nnot json", 22, seen_object, &half),
			 -EBADMSG);
	assert_int_equal(half.objects, 1);
	etcd_stream_free(&s);
}

static void test_watch_msgs(void **state)
{
	json_object *o;
	struct etcd_watch_msg m;

	(void)state;
	/* Refused by etcd's roles (as 3.4 says it: created and canceled at once). */
	o = parse("{\"result\":{\"header\":{\"revision\":\"5\"},\"watch_id\":\"-1\",\"created\":true,"
		  "\"canceled\":true,\"cancel_reason\":\"rpc error: code = PermissionDenied desc = "
		  "etcdserver: permission denied\"}}");
	assert_int_equal(etcd_json_watch_msg(o, &m), 0);
	assert_int_equal(m.kind, ETCD_WATCH_END);
	assert_int_equal(m.err, -EACCES);
	assert_int_equal(m.code, 7);
	assert_string_equal(m.msg, "etcdserver: permission denied");
	etcd_watch_msg_clear(&m);
	json_object_put(o);
	o = parse("{\"result\":{\"canceled\":true,\"cancel_reason\":\"rpc error: code = "
		  "Unauthenticated desc = etcdserver: invalid auth token\"}}");
	assert_int_equal(etcd_json_watch_msg(o, &m), 0);
	assert_int_equal(m.code, 16);
	assert_int_equal(m.err, -EACCES);
	etcd_watch_msg_clear(&m);
	json_object_put(o);
	o = parse("{\"result\":{\"canceled\":true}}");
	assert_int_equal(etcd_json_watch_msg(o, &m), 0);
	assert_int_equal(m.err, -ECANCELED);
	etcd_watch_msg_clear(&m);
	json_object_put(o);
	/* An error object in the stream ends it too. */
	o = parse("{\"error\":\"etcdserver: no leader\",\"code\":14}");
	assert_int_equal(etcd_json_watch_msg(o, &m), 0);
	assert_int_equal(m.kind, ETCD_WATCH_END);
	assert_int_equal(m.err, -EAGAIN);
	etcd_watch_msg_clear(&m);
	json_object_put(o);
	/* A progress notice: nothing. An event of a type unknown: refused. */
	o = parse("{\"result\":{\"header\":{\"revision\":\"8\"}}}");
	assert_int_equal(etcd_json_watch_msg(o, &m), 0);
	assert_int_equal(m.kind, ETCD_WATCH_NOTHING);
	etcd_watch_msg_clear(&m);
	json_object_put(o);
	o = parse("{\"result\":{\"events\":[{\"type\":\"MOVE\",\"kv\":{\"key\":\"Zm9v\"}}]}}");
	assert_int_equal(etcd_json_watch_msg(o, &m), -EBADMSG);
	json_object_put(o);
	o = parse("{\"something\":1}");
	assert_int_equal(etcd_json_watch_msg(o, &m), -EBADMSG);
	json_object_put(o);
}

static void test_spans(void **state)
{
	struct etcd_span sp;
	char *end;
	size_t n;

	(void)state;
	assert_int_equal(etcd_prefix_end("a/", 2, &end, &n), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(end, "a0", 2);
	free(end);
	assert_int_equal(etcd_prefix_end("a\xff\xff", 3, &end, &n), 0);
	assert_int_equal(n, 1);
	assert_memory_equal(end, "b", 1);
	free(end);
	assert_int_equal(etcd_prefix_end("\xff", 1, &end, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(end[0], 0);
	free(end);

	assert_int_equal(etcd_span_of("k/", NULL, true, false, &sp), 0);
	assert_true(etcd_span_has(&sp, "k/", 2));
	assert_true(etcd_span_has(&sp, "k/z", 3));
	assert_false(etcd_span_has(&sp, "k", 1));
	assert_false(etcd_span_has(&sp, "k0", 2));
	etcd_span_free(&sp);
	assert_int_equal(etcd_span_of("k", NULL, false, false, &sp), 0);
	assert_null(sp.end);
	assert_true(etcd_span_has(&sp, "k", 1));
	assert_false(etcd_span_has(&sp, "k/", 2));
	etcd_span_free(&sp);
	assert_int_equal(etcd_span_of("m", NULL, false, true, &sp), 0);
	assert_true(etcd_span_has(&sp, "zzz", 3));
	assert_false(etcd_span_has(&sp, "a", 1));
	etcd_span_free(&sp);
	assert_int_equal(etcd_span_of("b", "d", false, false, &sp), 0);
	assert_true(etcd_span_has(&sp, "c", 1));
	assert_false(etcd_span_has(&sp, "d", 1));
	etcd_span_free(&sp);
	assert_int_equal(etcd_span_of("", NULL, true, false, &sp), 0);
	assert_true(etcd_span_has(&sp, "anything", 8));
	etcd_span_free(&sp);
	assert_int_equal(etcd_span_of("", NULL, false, false, &sp), -EINVAL);
}

static void test_open_config(void **state)
{
	struct etcd *e = NULL;
	sd_event *ev;
	char err[256];

	(void)state;
	assert_int_equal(sd_event_new(&ev), 0);
	assert_int_equal(etcd_open(&(struct etcd_config){ .endpoints = "ftp://x:1" }, ev, &e, err,
				   sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "ftp://x:1"));
	assert_int_equal(etcd_open(&(struct etcd_config){ .endpoints = " , " }, ev, &e, err,
				   sizeof(err)),
			 -EINVAL);
	assert_int_equal(etcd_open(&(struct etcd_config){ .endpoints = "http://" }, ev, &e, err,
				   sizeof(err)),
			 -EINVAL);
	assert_int_equal(etcd_open(&(struct etcd_config){ .endpoints = "http://a:1",
							  .password = "p" },
				   ev, &e, err, sizeof(err)),
			 -EINVAL);
	assert_null(e);
	/* No connection before a call: opening and closing touch no network. */
	assert_int_equal(etcd_open(&(struct etcd_config){ .endpoints = " http://a:1/ ,https://b:2",
							  .user = "u", .password = "p" },
				   ev, &e, err, sizeof(err)),
			 0);
	assert_non_null(e);
	etcd_close(e);
	sd_event_unref(ev);
}

/* The transport, over a real etcd. */

/* A port of 127.0.0.1 that nothing listens on (free a moment ago). */
static uint16_t closed_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* The first endpoint of the list (for messages that must name it). */
static void first_endpoint(char *buf, size_t len)
{
	snprintf(buf, len, "%s", opt.endpoints);
	buf[strcspn(buf, ",")] = 0;
}

/* The client of env swapped for one with config c. */
static void reopen(const struct etcd_config *c)
{
	char err[256];

	etcd_close(env.e);
	env.e = NULL;
	assert_int_equal(etcd_open(c, env.ev, &env.e, err, sizeof(err)), 0);
}

static struct etcd_config real_config(void)
{
	return (struct etcd_config){
		.endpoints = opt.endpoints,
		.cacert = opt.cacert,
		.cert = opt.cert,
		.key = opt.key,
		.user = opt.user,
		.password = opt.password,
	};
}

static void test_real_unreachable(void **state)
{
	struct etcd_config c = real_config();
	struct got g = { 0 };
	struct watcher x;
	char list[128], one[64];
	uint16_t p1 = closed_port(), p2 = closed_port();

	(void)state;
	snprintf(list, sizeof(list), "http://127.0.0.1:%u,http://127.0.0.1:%u", p1, p2);
	c.endpoints = list;
	c.timeout_usec = 2 * DRF_USEC_PER_SEC;
	reopen(&c);
	assert_int_equal(put_full(K("u"), "u", 1, 0, false, &g), -ECONNREFUSED);
	/* The message names the endpoint tried last. */
	snprintf(one, sizeof(one), "127.0.0.1:%u", p2);
	assert_non_null(strstr(g.msg, one));
	watch(&(struct etcd_watch_req){ .key = K("u") }, &x);
	wait_end(&x, WAIT);
	assert_int_equal(x.err, -ECONNREFUSED);
	got_clear(&g);
}

static void test_real_failover(void **state)
{
	struct etcd_config c = real_config();
	struct etcd_stats st;
	struct got g = { 0 };
	struct watcher x;
	char list[512];
	int64_t rev;

	(void)state;
	snprintf(list, sizeof(list), "http://127.0.0.1:%u,%s", closed_port(), opt.endpoints);
	c.endpoints = list;
	reopen(&c);
	rev = put(K("f"), "1");
	etcd_get_stats(env.e, &st);
	assert_int_equal(st.failovers, 1);
	/* The endpoint that answered stays the current one. */
	assert_int_equal(get(K("f"), &g), 0);
	assert_string_equal(g.r.kvs[0].value, "1");
	watch(&(struct etcd_watch_req){ .key = K("f"), .start_revision = rev }, &x);
	wait_events(&x, 1, WAIT);
	assert_int_equal(x.n, 1);
	etcd_get_stats(env.e, &st);
	assert_int_equal(st.failovers, 1);
	assert_int_equal(st.calls, 3);
	assert_int_equal(etcd_cancel(env.e, x.id), 0);
	got_clear(&g);
}

/*
 * A TCP proxy on 127.0.0.1 in the test's loop, to the first endpoint, that
 * the test can cut: every connection through it closed at once, as a
 * restarted etcd or a lost network would leave them.
 */
struct px_pair {
	int fd[2];                /* the client's side, etcd's */
	sd_event_source *src[2];
};

static struct {
	int lfd;
	uint16_t port;
	sd_event_source *src;
	struct sockaddr_in target;
	struct px_pair pair[32];
	size_t n;
} px;

static void px_close(struct px_pair *p)
{
	for (int i = 0; i < 2; i++) {
		p->src[i] = sd_event_source_disable_unref(p->src[i]);
		if (p->fd[i] >= 0)
			close(p->fd[i]);
		p->fd[i] = -1;
	}
}

static int px_data(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct px_pair *p = userdata;
	int to = p->fd[fd == p->fd[0] ? 1 : 0];
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	(void)s;
	(void)revents;
	if (n <= 0) {
		px_close(p);
		return 0;
	}
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));

		if (w <= 0) {
			px_close(p);
			return 0;
		}
		off += w;
	}
	return 0;
}

static int px_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct px_pair *p = &px.pair[px.n];

	(void)s;
	(void)revents;
	(void)userdata;
	assert_true(px.n < 32);
	p->fd[0] = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(p->fd[0] >= 0);
	p->fd[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(p->fd[1] >= 0);
	assert_int_equal(connect(p->fd[1], (struct sockaddr *)&px.target, sizeof(px.target)), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(
			sd_event_add_io(env.ev, &p->src[i], p->fd[i], EPOLLIN, px_data, p), 0);
	px.n++;
	return 0;
}

/* The proxy to the first endpoint (http:// or https://127.0.0.1:PORT): its own URL into url. */
static void px_start(char *url, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	char ep[128], *colon;

	first_endpoint(ep, sizeof(ep));
	colon = strrchr(ep, ':');
	assert_non_null(colon);
	memset(&px, 0, sizeof(px));
	px.target = (struct sockaddr_in){ .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)atoi(colon + 1)),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	px.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(px.lfd >= 0);
	assert_int_equal(bind(px.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(px.lfd, 16), 0);
	assert_int_equal(getsockname(px.lfd, (struct sockaddr *)&sa, &sl), 0);
	px.port = ntohs(sa.sin_port);
	assert_int_equal(sd_event_add_io(env.ev, &px.src, px.lfd, EPOLLIN, px_accept, NULL), 0);
	*colon = 0;
	snprintf(url, len, "%s:%u", ep, px.port);
}

/* Every connection through the proxy closed; it goes on taking new ones. */
static void px_cut(void)
{
	for (size_t i = 0; i < px.n; i++)
		px_close(&px.pair[i]);
}

static void px_stop(void)
{
	px_cut();
	px.src = sd_event_source_disable_unref(px.src);
	close(px.lfd);
}

/*
 * A watch's stream broken under it: the watch ends with -ECONNRESET, calls
 * go on (on new connections), and a watch again from the last revision seen
 * + 1 misses nothing.
 */
static void test_real_broken_watch(void **state)
{
	struct etcd_config c = real_config();
	struct watcher x, y;
	char url[256];
	int64_t rev, last;

	(void)state;
	px_start(url, sizeof(url));
	c.endpoints = url;
	reopen(&c);
	rev = put(K("b/0"), "0");
	watch(&(struct etcd_watch_req){ .key = K("b/"), .prefix = true, .start_revision = rev + 1 },
	      &x);
	put(K("b/1"), "1");
	wait_events(&x, 1, WAIT);
	assert_int_equal(x.n, 1);
	last = x.ev[0].mod;
	px_cut();
	wait_end(&x, WAIT);
	assert_int_equal(x.err, -ECONNRESET);
	assert_int_equal(x.n, 1);
	put(K("b/2"), "2");
	put(K("b/3"), "3");
	watch(&(struct etcd_watch_req){ .key = K("b/"), .prefix = true,
					.start_revision = last + 1 },
	      &y);
	wait_events(&y, 2, WAIT);
	assert_int_equal(y.n, 2);
	assert_string_equal(y.ev[0].key, K("b/2"));
	assert_string_equal(y.ev[1].key, K("b/3"));
	assert_int_equal(etcd_cancel(env.e, y.id), 0);
	etcd_close(env.e);
	env.e = NULL;
	px_stop();
}

/* etcd with --client-cert-auth: no certificate, or a CA that did not sign etcd's, fail. */
static void test_real_tls_refused(void **state)
{
	struct etcd_config c = real_config();
	struct got g = { 0 };
	char ep[256];

	(void)state;
	first_endpoint(ep, sizeof(ep));
	c.cert = c.key = NULL;
	c.timeout_usec = 3 * DRF_USEC_PER_SEC;
	reopen(&c);
	assert_true(put_full(K("t"), "t", 1, 0, false, &g) < 0);
	assert_non_null(strstr(g.msg, ep));
	c = real_config();
	c.cacert = opt.cert; /* a certificate, not the CA that signed etcd's */
	c.timeout_usec = 3 * DRF_USEC_PER_SEC;
	reopen(&c);
	assert_int_equal(put_full(K("t"), "t", 1, 0, false, &g), -EPROTO);
	assert_non_null(strstr(g.msg, ep));
	got_clear(&g);
}

static void test_real_auth_refused(void **state)
{
	struct etcd_config c = real_config();
	struct got g = { 0 };
	struct watcher x;
	char ep[256];

	(void)state;
	first_endpoint(ep, sizeof(ep));
	/* Outside the user's role. */
	assert_int_equal(put_full(opt.denied, "d", 1, 0, false, &g), -EACCES);
	assert_int_equal(get(opt.denied, &g), -EACCES);
	watch(&(struct etcd_watch_req){ .key = opt.denied }, &x);
	wait_end(&x, WAIT);
	assert_int_equal(x.err, -EACCES);
	/* A wrong password: every call says so, naming the endpoint. */
	c.password = "wrong";
	reopen(&c);
	assert_int_equal(get(K("a"), &g), -EACCES);
	assert_non_null(strstr(g.msg, ep));
	assert_non_null(strstr(g.msg, opt.user));
	watch(&(struct etcd_watch_req){ .key = K("a") }, &x);
	wait_end(&x, WAIT);
	assert_int_equal(x.err, -EACCES);
	/* No user at all, with authentication on. */
	c.user = c.password = NULL;
	reopen(&c);
	assert_int_equal(get(K("a"), &g), -EACCES);
	got_clear(&g);
}

/*
 * A token that etcd let expire (--auth-token-ttl) is renewed, once, and the
 * calls go through: a call and a watch that went with the old one wait for
 * the one new token.
 */
static void test_real_reauth(void **state)
{
	struct etcd_stats st;
	struct watcher x;
	struct got g = { 0 };
	uint64_t id;
	int64_t rev;

	(void)state;
	rev = put(K("r"), "1");
	etcd_get_stats(env.e, &st);
	assert_int_equal(st.authentications, 1);
	/* etcd drops a token idle for its TTL, looking once a second. */
	pump((uint64_t)opt.token_ttl * DRF_USEC_PER_SEC + 1500 * DRF_USEC_PER_MSEC);
	watch(&(struct etcd_watch_req){ .key = K("r"), .start_revision = rev }, &x);
	assert_int_equal(etcd_put(env.e, &(struct etcd_req){ .key = K("r"), .value = "2",
							     .value_len = 1 },
				  kv_cb, &g, &id),
			 0);
	assert_int_equal(etcd_wait(env.e, id, WAIT), 0);
	assert_int_equal(g.err, 0);
	wait_events(&x, 2, WAIT);
	assert_false(x.ended);
	assert_int_equal(x.n, 2);
	assert_string_equal(x.ev[1].value, "2");
	etcd_get_stats(env.e, &st);
	assert_int_equal(st.authentications, 2);
	assert_int_equal(etcd_cancel(env.e, x.id), 0);
	got_clear(&g);
}

/*
 * Members that take a connection and never answer, and a member without a
 * leader: a scripted gateway in the test's loop (no etcd needed), and, with
 * etcd, a silent listener before it in the list.
 */

/* A port of 127.0.0.1 that takes connections (the kernel's backlog) and never answers. */
static int silent_listener(uint16_t *ret_port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 64), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	*ret_port = ntohs(sa.sin_port);
	return fd;
}

/*
 * A scripted gateway: each request it is sent, whole, is kept (gw.log, its
 * path in gw.paths) and answered with the next of gw.answers (raw HTTP), or
 * not at all when there is none.
 */
struct gw_conn {
	int fd;
	sd_event_source *src;
	char buf[8192];
	size_t len;
};

struct gw {
	int lfd;
	uint16_t port;
	sd_event_source *src;
	struct gw_conn conn[16];
	size_t n_conns;
	const char *answers[8];
	size_t n_answers, next_answer;
	unsigned requests;
	char paths[512];  /* the requests' paths, each followed by a space */
	char log[16384];  /* the requests' headers */
};

static struct gw gws[2];

/* The length of a whole request at the start of b, or 0. */
static size_t request_len(const char *b, size_t len)
{
	const char *end = memmem(b, len, "\r\n\r\n", 4), *cl;
	size_t head, body = 0;

	if (!end)
		return 0;
	head = (size_t)(end - b) + 4;
	cl = strcasestr(b, "\r\nContent-Length:");
	if (cl && cl < end)
		body = strtoul(cl + strlen("\r\nContent-Length:"), NULL, 10);
	return len >= head + body ? head + body : 0;
}

static int gw_data(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct gw *g = userdata;
	struct gw_conn *k = NULL;
	ssize_t n;
	size_t rl;

	(void)revents;
	for (size_t i = 0; i < g->n_conns; i++)
		if (g->conn[i].fd == fd)
			k = &g->conn[i];
	assert_non_null(k);
	n = read(fd, k->buf + k->len, sizeof(k->buf) - 1 - k->len);
	if (n <= 0) {
		k->src = sd_event_source_disable_unref(s);
		close(fd);
		k->fd = -1;
		return 0;
	}
	k->len += (size_t)n;
	k->buf[k->len] = 0;
	while ((rl = request_len(k->buf, k->len))) {
		const char *sp = strchr(k->buf, ' ');
		size_t pl = strcspn(sp + 1, " ");
		const char *a;

		g->requests++;
		snprintf(g->paths + strlen(g->paths), sizeof(g->paths) - strlen(g->paths), "%.*s ",
			 (int)pl, sp + 1);
		snprintf(g->log + strlen(g->log), sizeof(g->log) - strlen(g->log), "%.*s", (int)rl,
			 k->buf);
		memmove(k->buf, k->buf + rl, k->len - rl + 1);
		k->len -= rl;
		if (g->next_answer < g->n_answers) {
			a = g->answers[g->next_answer++];
			assert_int_equal(write(fd, a, strlen(a)), (ssize_t)strlen(a));
		}
	}
	return 0;
}

static int gw_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct gw *g = userdata;
	struct gw_conn *k = &g->conn[g->n_conns];

	(void)s;
	(void)revents;
	assert_true(g->n_conns < 16);
	memset(k, 0, sizeof(*k));
	k->fd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	assert_true(k->fd >= 0);
	assert_int_equal(sd_event_add_io(env.ev, &k->src, k->fd, EPOLLIN, gw_data, g), 0);
	g->n_conns++;
	return 0;
}

static void gw_start(struct gw *g)
{
	memset(g, 0, sizeof(*g));
	g->lfd = silent_listener(&g->port);
	assert_int_equal(sd_event_add_io(env.ev, &g->src, g->lfd, EPOLLIN, gw_accept, g), 0);
}

static void gw_stop(struct gw *g)
{
	for (size_t i = 0; i < g->n_conns; i++) {
		sd_event_source_disable_unref(g->conn[i].src);
		if (g->conn[i].fd >= 0)
			close(g->conn[i].fd);
	}
	sd_event_source_disable_unref(g->src);
	close(g->lfd);
}

#define GW_HDR                                                                             \
	"\"header\":{\"cluster_id\":\"1\",\"member_id\":\"2\",\"revision\":\"7\","    \
	"\"raft_term\":\"2\"}"
static char gw_answers[8][512];

/* body as the gateway's answer (Content-Length), in one of gw_answers. */
static const char *gw_unary(unsigned slot, const char *body)
{
	snprintf(gw_answers[slot], sizeof(gw_answers[slot]),
		 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\n\r\n%s",
		 strlen(body), body);
	return gw_answers[slot];
}

/*
 * A stream's objects (a watch's; a keepalive's) as chunks, then its end if
 * end (a watch that goes on has none).
 */
static const char *gw_stream(unsigned slot, const char *o1, const char *o2, bool end)
{
	int n = snprintf(gw_answers[slot], sizeof(gw_answers[slot]),
			 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			 "Transfer-Encoding: chunked\r\n\r\n%zx\r\n%s\n\r\n",
			 strlen(o1) + 1, o1);

	if (o2)
		n += snprintf(gw_answers[slot] + n, sizeof(gw_answers[slot]) - (size_t)n,
			      "%zx\r\n%s\n\r\n", strlen(o2) + 1, o2);
	if (end)
		snprintf(gw_answers[slot] + n, sizeof(gw_answers[slot]) - (size_t)n, "0\r\n\r\n");
	return gw_answers[slot];
}

static const char gw_range[] = "{" GW_HDR ",\"count\":\"0\"}";
static const char gw_put[] = "{" GW_HDR "}";
static const char gw_lease[] = "{" GW_HDR ",\"ID\":\"77\",\"TTL\":\"3\"}";
static const char gw_lease_result[] = "{\"result\":{" GW_HDR ",\"ID\":\"77\",\"TTL\":\"3\"}}";
static const char gw_created[] = "{\"result\":{" GW_HDR ",\"created\":true}}";
static const char gw_no_leader[] = "{\"error\":{\"grpc_code\":14,\"http_code\":503,"
				   "\"message\":\"etcdserver: no leader\","
				   "\"http_status\":\"Service Unavailable\"}}";

static uint64_t mono(void)
{
	return drf_mono_usec(&drf_clock_system);
}

static uint64_t stat_failovers(void)
{
	struct etcd_stats st;

	etcd_get_stats(env.e, &st);
	return st.failovers;
}

/*
 * A member that takes the request and never answers (stopped, overloaded):
 * a write that went there times out, and the calls that follow go to the
 * next endpoint; a read, a watch, a keepalive are sent there within their
 * own time. A keepalive waits a third of its lease's TTL at most.
 */
static void test_gw_silent(void **state)
{
	struct etcd_config c = { .timeout_usec = DRF_USEC_PER_SEC };
	struct got g = { 0 };
	struct watcher x;
	char list[128], one[64];
	uint16_t sp;
	int sfd = silent_listener(&sp);
	uint64_t t0;

	(void)state;
	gw_start(&gws[0]);
	snprintf(list, sizeof(list), "http://127.0.0.1:%u,http://127.0.0.1:%u", sp, gws[0].port);
	snprintf(one, sizeof(one), "127.0.0.1:%u", sp);
	c.endpoints = list;
	reopen(&c);
	/* A put is not sent twice: it times out, and the next call goes on. */
	assert_int_equal(put_full("/g/p", "p", 1, 0, false, &g), -ETIMEDOUT);
	assert_non_null(strstr(g.msg, one));
	assert_int_equal(stat_failovers(), 1);
	gws[0].answers[gws[0].n_answers++] = gw_unary(0, gw_put);
	assert_int_equal(put_full("/g/p", "p", 1, 0, false, &g), 0);
	assert_int_equal(g.r.revision, 7);

	/* A range goes on within its own time: half of it on each endpoint. */
	reopen(&c);
	gws[0].answers[gws[0].n_answers++] = gw_unary(1, gw_range);
	t0 = mono();
	assert_int_equal(get("/g/r", &g), 0);
	assert_true(mono() - t0 < DRF_USEC_PER_SEC);
	assert_int_equal(stat_failovers(), 1);

	/*
	 * The silent member first, then one that refuses (killed): the read's
	 * fate is the silent one's, a time-out (a read waits there for a leader
	 * being elected), not the refusal; a caller may try it again.
	 */
	snprintf(list, sizeof(list), "http://127.0.0.1:%u,http://127.0.0.1:%u", sp, closed_port());
	reopen(&c);
	assert_int_equal(get("/g/r", &g), -ETIMEDOUT);
	assert_non_null(strstr(g.msg, "did not answer in time"));
	assert_int_equal(stat_failovers(), 1);
	snprintf(list, sizeof(list), "http://127.0.0.1:%u,http://127.0.0.1:%u", sp, gws[0].port);

	/* A watch with no answer goes on too, asking for a member with a leader. */
	reopen(&c);
	gws[0].answers[gws[0].n_answers++] = gw_stream(2, gw_created, NULL, false);
	watch(&(struct etcd_watch_req){ .key = "/g/w" }, &x);
	t0 = mono();
	while (!strstr(gws[0].paths, "/v3/watch") && mono() - t0 < WAIT)
		assert_true(sd_event_run(env.ev, WAIT) >= 0);
	assert_non_null(strstr(gws[0].paths, "/v3/watch"));
	assert_non_null(strcasestr(gws[0].log, "\r\nGrpc-Metadata-hasleader: true\r\n"));
	assert_int_equal(stat_failovers(), 1);
	pump(100 * DRF_USEC_PER_MSEC);
	assert_false(x.ended);
	assert_int_equal(etcd_cancel(env.e, x.id), 0);

	/* A keepalive of a lease of 3 s waits 1 s, not the client's 5. */
	snprintf(list, sizeof(list), "http://127.0.0.1:%u", gws[0].port);
	c.timeout_usec = 0;
	reopen(&c);
	gws[0].answers[gws[0].n_answers++] = gw_unary(3, gw_lease);
	assert_int_equal(grant(3, 0, &g), 0);
	assert_int_equal(g.l.ttl, 3);
	t0 = mono();
	assert_int_equal(keepalive(77, &g), -ETIMEDOUT);
	assert_true(mono() - t0 < 1500 * DRF_USEC_PER_MSEC);

	/* Before a member that answers: sent there within the same second. */
	gw_start(&gws[1]);
	snprintf(list, sizeof(list), "http://127.0.0.1:%u,http://127.0.0.1:%u", gws[0].port,
		 gws[1].port);
	c.endpoints = list;
	reopen(&c);
	gws[0].answers[gws[0].n_answers++] = gw_unary(4, gw_lease);
	gws[1].answers[gws[1].n_answers++] = gw_stream(5, gw_lease_result, NULL, true);
	assert_int_equal(grant(3, 0, &g), 0);
	t0 = mono();
	assert_int_equal(keepalive(77, &g), 0);
	assert_int_equal(g.l.ttl, 3);
	assert_true(mono() - t0 < DRF_USEC_PER_SEC);
	assert_int_equal(stat_failovers(), 1);
	assert_non_null(strstr(gws[1].paths, "/v3/lease/keepalive"));

	got_clear(&g);
	etcd_close(env.e);
	env.e = NULL;
	gw_stop(&gws[0]);
	gw_stop(&gws[1]);
	close(sfd);
}

/*
 * A watch on a member that lost its leader: etcd (asked for it) cancels the
 * stream, which ends as a broken one, and the calls that follow go to the
 * next member; a watch refused at once goes to the next member itself.
 */
static void test_gw_no_leader(void **state)
{
	struct etcd_config c = { .timeout_usec = 2 * DRF_USEC_PER_SEC };
	struct got g = { 0 };
	struct watcher x;
	char list[128];

	(void)state;
	gw_start(&gws[0]);
	gw_start(&gws[1]);
	snprintf(list, sizeof(list), "http://127.0.0.1:%u,http://127.0.0.1:%u", gws[0].port,
		 gws[1].port);
	c.endpoints = list;
	reopen(&c);
	gws[0].answers[gws[0].n_answers++] = gw_stream(0, gw_created, gw_no_leader, true);
	watch(&(struct etcd_watch_req){ .key = "/g/w" }, &x);
	wait_end(&x, WAIT);
	assert_int_equal(x.err, -ECONNRESET);
	assert_non_null(strstr(x.msg, "no leader"));
	assert_non_null(strcasestr(gws[0].log, "\r\nGrpc-Metadata-hasleader: true\r\n"));
	assert_int_equal(stat_failovers(), 1);
	gws[1].answers[gws[1].n_answers++] = gw_unary(1, gw_range);
	assert_int_equal(get("/g/r", &g), 0);
	assert_string_equal(gws[1].paths, "/v3/kv/range ");
	/* Refused at once by the second (no created): the first has the leader again. */
	gws[1].answers[gws[1].n_answers++] = gw_stream(2, gw_no_leader, NULL, true);
	gws[0].answers[gws[0].n_answers++] = gw_stream(3, gw_created, NULL, false);
	watch(&(struct etcd_watch_req){ .key = "/g/w" }, &x);
	while (!strstr(gws[0].paths, "/v3/watch /v3/watch") && !x.ended)
		assert_true(sd_event_run(env.ev, WAIT) > 0);
	pump(100 * DRF_USEC_PER_MSEC);
	assert_false(x.ended);
	assert_int_equal(stat_failovers(), 2);
	assert_int_equal(etcd_cancel(env.e, x.id), 0);
	/* Refused by both: -EAGAIN. */
	gws[0].answers[gws[0].n_answers++] = gw_stream(4, gw_no_leader, NULL, true);
	gws[1].answers[gws[1].n_answers++] = gw_stream(5, gw_no_leader, NULL, true);
	watch(&(struct etcd_watch_req){ .key = "/g/w" }, &x);
	wait_end(&x, WAIT);
	assert_int_equal(x.err, -EAGAIN);

	got_clear(&g);
	etcd_close(env.e);
	env.e = NULL;
	gw_stop(&gws[0]);
	gw_stop(&gws[1]);
}

/* The proxy stops relaying and taking connections (they wait in its backlog): a stopped member. */
static void px_freeze(void)
{
	sd_event_source_set_enabled(px.src, SD_EVENT_OFF);
	for (size_t i = 0; i < px.n; i++)
		for (int j = 0; j < 2; j++)
			if (px.pair[i].src[j])
				sd_event_source_set_enabled(px.pair[i].src[j], SD_EVENT_OFF);
}

/*
 * The same with etcd behind a member that takes connections and never
 * answers (plain HTTP whatever the mode, so that the request is sent): a
 * put times out there and the next goes to etcd; a range and a watch go on
 * to etcd within their time; a keepalive through a proxy that stops
 * relaying goes on to etcd within a third of its lease's TTL.
 */
static void test_real_silent(void **state)
{
	struct etcd_config c = real_config();
	struct got g = { 0 };
	struct watcher x;
	char list[512], url[256];
	uint16_t sp;
	int sfd = silent_listener(&sp);
	int64_t rev, lease;
	uint64_t t0;

	(void)state;
	snprintf(list, sizeof(list), "http://127.0.0.1:%u,%s", sp, opt.endpoints);
	c.endpoints = list;
	c.timeout_usec = DRF_USEC_PER_SEC;
	reopen(&c);
	/* With a user, the authenticate goes first, and goes on (a token is safe to ask twice). */
	assert_int_equal(put_full(K("s"), "0", 1, 0, false, &g), opt.user ? 0 : -ETIMEDOUT);
	assert_int_equal(stat_failovers(), 1);
	rev = put(K("s"), "1");
	assert_int_equal(stat_failovers(), 1);

	reopen(&c);
	t0 = mono();
	assert_int_equal(get(K("s"), &g), 0);
	assert_true(mono() - t0 < DRF_USEC_PER_SEC);
	assert_string_equal(g.r.kvs[0].value, "1");
	assert_int_equal(stat_failovers(), 1);

	reopen(&c);
	watch(&(struct etcd_watch_req){ .key = K("s"), .start_revision = rev }, &x);
	wait_events(&x, 1, WAIT);
	assert_int_equal(x.n, 1);
	assert_int_equal(stat_failovers(), 1);
	assert_int_equal(etcd_cancel(env.e, x.id), 0);

	px_start(url, sizeof(url));
	snprintf(list, sizeof(list), "%s,%s", url, opt.endpoints);
	c = real_config();
	c.endpoints = list;
	reopen(&c);
	assert_int_equal(grant(3, 0, &g), 0);
	assert_int_equal(g.l.ttl, 3);
	lease = g.l.id;
	px_freeze();
	t0 = mono();
	assert_int_equal(keepalive(lease, &g), 0);
	assert_true(mono() - t0 < DRF_USEC_PER_SEC);
	assert_int_equal(stat_failovers(), 1);
	assert_int_equal(revoke_lease(lease, &g), 0);

	got_clear(&g);
	etcd_close(env.e);
	env.e = NULL;
	px_stop();
	close(sfd);
}

/*
 * A watch on a member that loses its leader (the other of two stopped):
 * etcd cancels it, as it asked (require-leader), and it ends as a broken
 * stream, rather than stay silent; the calls that follow go to the other
 * member, and a watch again from the last revision seen + 1 misses nothing
 * once the cluster has a leader again.
 */
static void test_real_no_leader(void **state)
{
	struct got g = { 0 };
	struct watcher x, y;
	int64_t rev = 0;
	uint64_t t0;

	(void)state;
	rev = put(K("n"), "0");
	watch(&(struct etcd_watch_req){ .key = K("n"), .start_revision = rev + 1 }, &x);
	pump(200 * DRF_USEC_PER_MSEC);
	assert_false(x.ended);
	assert_int_equal(kill(opt.stop_pid, SIGSTOP), 0);
	wait_end(&x, WAIT);
	assert_int_equal(kill(opt.stop_pid, SIGCONT), 0);
	assert_int_equal(x.err, -ECONNRESET);
	assert_non_null(strstr(x.msg, "no leader"));
	assert_int_equal(stat_failovers(), 1);
	/* The cluster elects a leader again; writes go through once it has. */
	t0 = mono();
	while (put_full(K("n"), "1", 1, 0, false, &g) != 0 && mono() - t0 < WAIT)
		pump(100 * DRF_USEC_PER_MSEC);
	assert_int_equal(g.err, 0);
	watch(&(struct etcd_watch_req){ .key = K("n"), .start_revision = rev + 1 }, &y);
	wait_events(&y, 1, WAIT);
	assert_int_equal(y.n, 1);
	assert_string_equal(y.ev[0].value, "1");
	assert_int_equal(etcd_cancel(env.e, y.id), 0);
	got_clear(&g);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define CONFORMANCE                                                                            \
	T(test_put_range), T(test_range_options), T(test_range_revision), T(test_delete),     \
		T(test_txn_create_if_absent), T(test_txn_compares), T(test_txn_ops),          \
		T(test_txn_refused), T(test_lease), T(test_watch_events), T(test_watch_replay), \
		T(test_watch_cancel), T(test_watch_lease_revoke), T(test_calls_from_callbacks), \
		T(test_invalid), T(test_wait_timeout), T(test_close_pending),                 \
		T(test_lease_expiry), T(test_compaction)

static int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--endpoints URLS [--cacert F --cert F --key F] [--user U --password P"
		" --denied KEY --token-ttl N] [--lease-expiry] [--no-leader PID]]\n",
		argv0);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "endpoints", required_argument, NULL, 'e' },
		{ "cacert", required_argument, NULL, 'C' },
		{ "cert", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ "user", required_argument, NULL, 'u' },
		{ "password", required_argument, NULL, 'p' },
		{ "denied", required_argument, NULL, 'd' },
		{ "token-ttl", required_argument, NULL, 't' },
		{ "lease-expiry", no_argument, NULL, 'l' },
		{ "no-leader", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	const struct CMUnitTest fake[] = {
		CONFORMANCE,
		T(test_fake_unreachable),
		T(test_fake_fail_once),
		T(test_fake_broken_watch),
		T(test_fake_partition),
		T(test_fake_record),
		T(test_fake_expiry_revisions),
		T(test_gw_silent),
		T(test_gw_no_leader),
		cmocka_unit_test(test_b64),
		cmocka_unit_test(test_int64),
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_gateway_errors),
		cmocka_unit_test(test_watch_stream),
		cmocka_unit_test(test_watch_msgs),
		cmocka_unit_test(test_spans),
		cmocka_unit_test(test_open_config),
	};
	const struct CMUnitTest real[] = { CONFORMANCE, T(test_real_unreachable),
					   T(test_real_failover), T(test_real_broken_watch),
					   T(test_real_silent) };
	const struct CMUnitTest tls[] = { T(test_real_tls_refused) };
	const struct CMUnitTest auth[] = { T(test_real_auth_refused) };
	const struct CMUnitTest reauth[] = { T(test_real_reauth) };
	const struct CMUnitTest no_leader[] = { T(test_real_no_leader) };
	int c, failed;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			opt.endpoints = optarg;
			break;
		case 'C':
			opt.cacert = optarg;
			break;
		case 'c':
			opt.cert = optarg;
			break;
		case 'k':
			opt.key = optarg;
			break;
		case 'u':
			opt.user = optarg;
			break;
		case 'p':
			opt.password = optarg;
			break;
		case 'd':
			opt.denied = optarg;
			break;
		case 't':
			opt.token_ttl = atoi(optarg);
			break;
		case 'l':
			opt.lease_expiry = true;
			break;
		case 'n':
			opt.stop_pid = (pid_t)atoi(optarg);
			break;
		default:
			return usage(argv[0]);
		}
	}
	if (optind != argc || (!REAL && (opt.user || opt.cacert)))
		return usage(argv[0]);
	if (!REAL)
		return cmocka_run_group_tests_name("etcd (fake)", fake, NULL, NULL);
	if (opt.stop_pid > 0)
		return cmocka_run_group_tests_name("etcd without a leader", no_leader, NULL, NULL);
	failed = cmocka_run_group_tests_name("etcd (real)", real, NULL, NULL);
	if (opt.cacert)
		failed += cmocka_run_group_tests_name("etcd TLS", tls, NULL, NULL);
	if (opt.user && opt.denied)
		failed += cmocka_run_group_tests_name("etcd authentication", auth, NULL, NULL);
	if (opt.user && opt.token_ttl > 0)
		failed += cmocka_run_group_tests_name("etcd token renewal", reauth, NULL, NULL);
	return failed;
}
