// SPDX-License-Identifier: MIT
/* An etcd in memory (see fakeetcd.h). */
#include "fakeetcd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-event.h>

#include "record.h"

#define MSG_FUTURE "etcdserver: mvcc: required revision is a future revision"
#define MSG_COMPACTED "etcdserver: mvcc: required revision has been compacted"
#define MSG_NO_LEASE "etcdserver: requested lease not found"
#define MSG_LEASE_EXISTS "etcdserver: lease already exists"
#define MSG_DUPLICATE "etcdserver: duplicate key given in txn request"
#define ENDPOINT "fake://etcd"

/* Pairs sorted by key. */
struct kvset {
	struct etcd_kv *v;
	size_t n, cap;
};

/* One event of the history: what a revision did to a key. */
struct fev {
	int64_t rev;
	enum etcd_event_type type;
	struct etcd_kv kv; /* PUT: the pair; DELETE: key and mod_revision */
	bool has_prev;
	struct etcd_kv prev;
};

struct flease {
	int64_t id, ttl;
	uint64_t expiry; /* usec, the clock's monotonic time */
};

struct fconn {
	struct fakeetcd_store *s;
	struct fconn *next;
	uint64_t next_id;
	bool cut, closing;
	struct etcd_stats stats;
};

enum fkind { F_KV, F_TXN, F_COMPACT, F_GRANT, F_KEEPALIVE, F_REVOKE, F_WATCH };

/* A call, queued until the loop runs it. */
struct fop {
	struct fop *next;
	struct fconn *conn;
	uint64_t id;
	enum fkind kind;
	struct etcd_req req;  /* F_KV (its strings the op's) */
	struct etcd_req *ops; /* F_TXN: success then failure */
	size_t n_success, n_failure;
	struct etcd_cmp *cmp;
	size_t n_cmp;
	int64_t a, b; /* compact: revision; grant: ttl, id; keepalive, revoke: id */
	struct fwatch *w; /* F_WATCH: the watch it creates */
	union {
		etcd_kv_cb kv;
		etcd_txn_cb txn;
		etcd_lease_cb lease;
	} cb;
	void *userdata;
};

struct fwatch {
	struct fwatch *next;
	struct fconn *conn;
	uint64_t id;
	struct etcd_span span;
	bool prev_kv;
	int64_t start;
	bool served; /* the loop served it once: a start before the compaction was seen */
	int64_t next_rev; /* the first revision it has not reported */
	int end_err;      /* to end with this error (a broken stream) */
	etcd_watch_cb cb;
	void *userdata;
};

struct fakeetcd_store {
	struct fakeetcd *pub;
	bool freed;              /* fakeetcd_free() was called */
	unsigned conns;
	struct fconn *conn_list;
	sd_event *event;
	sd_event_source *run;
	const struct drf_clock *clock;
	int64_t revision, compact;
	struct kvset kvs;
	struct fev *log;
	size_t n_log, cap_log;
	struct flease *leases;
	size_t n_leases, cap_leases;
	int64_t next_lease;
	struct fop *queue, *queue_tail;
	struct fwatch *watches;
	bool running; /* on_run() is under way: the store is freed at its end */
};

static int on_run(sd_event_source *src, void *userdata);

static void schedule(struct fakeetcd_store *s)
{
	if (s->run)
		sd_event_source_set_enabled(s->run, SD_EVENT_ONESHOT);
}

/* Pairs and sets. */

static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c ? c : an < bn ? -1 : an > bn;
}

static char *memdup0(const void *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		if (n)
			memcpy(s, p, n);
		s[n] = 0;
	}
	return s;
}

static void kv_clear(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

static int kv_copy(struct etcd_kv *dst, const struct etcd_kv *src, bool with_value)
{
	*dst = *src;
	dst->key = memdup0(src->key, src->key_len);
	dst->value = memdup0(with_value ? src->value : "", with_value ? src->value_len : 0);
	if (!with_value)
		dst->value_len = 0;
	if (!dst->key || !dst->value) {
		kv_clear(dst);
		return -ENOMEM;
	}
	return 0;
}

/* The index of key in set, or where it would go (*found false). */
static size_t kvset_find(const struct kvset *set, const char *key, size_t len, bool *found)
{
	size_t lo = 0, hi = set->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = bytes_cmp(set->v[mid].key, set->v[mid].key_len, key, len);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static struct etcd_kv *kvset_get(const struct kvset *set, const char *key, size_t len)
{
	bool found;
	size_t i = kvset_find(set, key, len, &found);

	return found ? &set->v[i] : NULL;
}

/* kv (copied) in the set, in place of the pair of its key. */
static int kvset_put(struct kvset *set, const struct etcd_kv *kv)
{
	bool found;
	size_t i = kvset_find(set, kv->key, kv->key_len, &found);
	struct etcd_kv copy;

	if (kv_copy(&copy, kv, true) < 0)
		return -ENOMEM;
	if (found) {
		kv_clear(&set->v[i]);
		set->v[i] = copy;
		return 0;
	}
	if (set->n == set->cap) {
		size_t cap = set->cap ? 2 * set->cap : 16;
		struct etcd_kv *v = realloc(set->v, cap * sizeof(*v));

		if (!v) {
			kv_clear(&copy);
			return -ENOMEM;
		}
		set->v = v;
		set->cap = cap;
	}
	memmove(&set->v[i + 1], &set->v[i], (set->n - i) * sizeof(*set->v));
	set->v[i] = copy;
	set->n++;
	return 0;
}

static void kvset_del(struct kvset *set, const char *key, size_t len)
{
	bool found;
	size_t i = kvset_find(set, key, len, &found);

	if (!found)
		return;
	kv_clear(&set->v[i]);
	memmove(&set->v[i], &set->v[i + 1], (set->n - i - 1) * sizeof(*set->v));
	set->n--;
}

static void kvset_free(struct kvset *set)
{
	for (size_t i = 0; i < set->n; i++)
		kv_clear(&set->v[i]);
	free(set->v);
	memset(set, 0, sizeof(*set));
}

/* The store as of revision rev, from the history. */
static int kvset_at(const struct fakeetcd_store *s, int64_t rev, struct kvset *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < s->n_log && s->log[i].rev <= rev; i++) {
		const struct fev *ev = &s->log[i];

		if (ev->type == ETCD_EVENT_PUT) {
			if (kvset_put(ret, &ev->kv) < 0) {
				kvset_free(ret);
				return -ENOMEM;
			}
		} else {
			kvset_del(ret, ev->kv.key, ev->kv.key_len);
		}
	}
	return 0;
}

/* History. */

static int log_event(struct fakeetcd_store *s, int64_t rev, enum etcd_event_type type,
		     const struct etcd_kv *kv, const struct etcd_kv *prev)
{
	struct fev ev = { .rev = rev, .type = type };

	if (s->n_log == s->cap_log) {
		size_t cap = s->cap_log ? 2 * s->cap_log : 64;
		struct fev *l = realloc(s->log, cap * sizeof(*l));

		if (!l)
			return -ENOMEM;
		s->log = l;
		s->cap_log = cap;
	}
	if (kv_copy(&ev.kv, kv, type == ETCD_EVENT_PUT) < 0)
		return -ENOMEM;
	if (prev) {
		if (kv_copy(&ev.prev, prev, true) < 0) {
			kv_clear(&ev.kv);
			return -ENOMEM;
		}
		ev.has_prev = true;
	}
	s->log[s->n_log++] = ev;
	return 0;
}

/* Writes, at revision rev (the store's next; it moves once the request or txn is done). */

static int write_put(struct fakeetcd_store *s, int64_t rev, const struct etcd_req *q,
		     struct etcd_resp *resp)
{
	size_t len = strlen(q->key);
	const struct etcd_kv *old = kvset_get(&s->kvs, q->key, len);
	struct etcd_kv kv = {
		.key = (char *)q->key,
		.key_len = len,
		.value = (char *)(q->value ? q->value : ""),
		.value_len = q->value ? q->value_len : 0,
		.create_revision = old ? old->create_revision : rev,
		.mod_revision = rev,
		.version = old ? old->version + 1 : 1,
		.lease = q->lease,
	};
	int r;

	if (q->prev_kv && old) {
		resp->kvs = calloc(1, sizeof(*resp->kvs));
		if (!resp->kvs || kv_copy(resp->kvs, old, true) < 0)
			return -ENOMEM;
		resp->n_kvs = 1;
	}
	r = log_event(s, rev, ETCD_EVENT_PUT, &kv, old);
	if (r == 0)
		r = kvset_put(&s->kvs, &kv);
	return r;
}

/* Deletes the pairs in span: how many, with their copies in resp if prev. */
static int write_delete(struct fakeetcd_store *s, int64_t rev, const struct etcd_span *sp,
			bool prev, struct etcd_resp *resp)
{
	size_t i = 0;

	while (i < s->kvs.n) {
		struct etcd_kv *kv = &s->kvs.v[i];
		struct etcd_kv gone = { .key = kv->key, .key_len = kv->key_len,
					.mod_revision = rev };
		int r;

		if (!etcd_span_has(sp, kv->key, kv->key_len)) {
			i++;
			continue;
		}
		if (prev) {
			struct etcd_kv *v = realloc(resp->kvs, (resp->n_kvs + 1) * sizeof(*v));

			if (!v)
				return -ENOMEM;
			resp->kvs = v;
			if (kv_copy(&resp->kvs[resp->n_kvs], kv, true) < 0)
				return -ENOMEM;
			resp->n_kvs++;
		}
		r = log_event(s, rev, ETCD_EVENT_DELETE, &gone, kv);
		if (r < 0)
			return r;
		resp->count++;
		kv_clear(kv);
		memmove(kv, kv + 1, (s->kvs.n - i - 1) * sizeof(*kv));
		s->kvs.n--;
	}
	return 0;
}

static int read_range(struct fakeetcd_store *s, const struct etcd_req *q, struct etcd_resp *resp,
		      const char **msg)
{
	struct etcd_span sp;
	struct kvset past = { 0 };
	const struct kvset *set = &s->kvs;
	int r;

	if (q->revision > s->revision) {
		*msg = MSG_FUTURE;
		return -ERANGE;
	}
	if (q->revision > 0 && q->revision < s->compact) {
		*msg = MSG_COMPACTED;
		return -ESTALE;
	}
	r = etcd_span_of(q->key, q->range_end, q->prefix, q->from_key, &sp);
	if (r < 0)
		return r;
	if (q->revision > 0 && q->revision < s->revision) {
		r = kvset_at(s, q->revision, &past);
		set = &past;
	}
	for (size_t i = 0; r == 0 && i < set->n; i++) {
		const struct etcd_kv *kv = &set->v[i];

		if (!etcd_span_has(&sp, kv->key, kv->key_len))
			continue;
		resp->count++;
		if (q->count_only || (q->limit && (int64_t)resp->n_kvs >= q->limit))
			continue;
		struct etcd_kv *v = realloc(resp->kvs, (resp->n_kvs + 1) * sizeof(*v));

		if (!v) {
			r = -ENOMEM;
			break;
		}
		resp->kvs = v;
		r = kv_copy(&resp->kvs[resp->n_kvs], kv, !q->keys_only);
		if (r == 0)
			resp->n_kvs++;
	}
	resp->more = q->limit && resp->count > q->limit;
	kvset_free(&past);
	etcd_span_free(&sp);
	return r;
}

static struct flease *find_lease(struct fakeetcd_store *s, int64_t id)
{
	for (size_t i = 0; i < s->n_leases; i++)
		if (s->leases[i].id == id)
			return &s->leases[i];
	return NULL;
}

/* Lease id goes, and its keys with it, in one revision. */
static void drop_lease(struct fakeetcd_store *s, int64_t id)
{
	struct flease *l = find_lease(s, id);
	int64_t rev = s->revision + 1;
	bool wrote = false;

	if (!l)
		return;
	*l = s->leases[--s->n_leases];
	for (size_t i = 0; i < s->kvs.n;) {
		struct etcd_kv *kv = &s->kvs.v[i];
		struct etcd_kv gone = { .key = kv->key, .key_len = kv->key_len,
					.mod_revision = rev };

		if (kv->lease != id) {
			i++;
			continue;
		}
		log_event(s, rev, ETCD_EVENT_DELETE, &gone, kv);
		kv_clear(kv);
		memmove(kv, kv + 1, (s->kvs.n - i - 1) * sizeof(*kv));
		s->kvs.n--;
		wrote = true;
	}
	if (wrote)
		s->revision = rev;
}

static void expire(struct fakeetcd_store *s)
{
	uint64_t now = drf_mono_usec(s->clock);

	for (size_t i = 0; i < s->n_leases;) {
		if (s->leases[i].expiry <= now) {
			drop_lease(s, s->leases[i].id); /* moves the last lease into i */
			continue;
		}
		i++;
	}
}

/* A request's or txn's checks: keys put twice, or put and deleted, in one list. */
static bool duplicates(const struct etcd_req *q, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (q[i].type != ETCD_PUT)
			continue;
		for (size_t j = 0; j < n; j++) {
			struct etcd_span sp;
			bool hit;

			if (j == i || q[j].type == ETCD_RANGE)
				continue;
			if (q[j].type == ETCD_PUT) {
				if (strcmp(q[i].key, q[j].key) == 0)
					return true;
				continue;
			}
			if (etcd_span_of(q[j].key, q[j].range_end, q[j].prefix, q[j].from_key,
					 &sp) < 0)
				continue;
			hit = etcd_span_has(&sp, q[i].key, strlen(q[i].key));
			etcd_span_free(&sp);
			if (hit)
				return true;
		}
	}
	return false;
}

static bool cmp_holds(struct fakeetcd_store *s, const struct etcd_cmp *c)
{
	const struct etcd_kv *kv = kvset_get(&s->kvs, c->key, strlen(c->key));
	int64_t have = 0;
	int d;

	if (c->target == ETCD_CMP_VALUE) {
		if (!kv)
			return false; /* etcd: a missing key's value compares false */
		d = bytes_cmp(kv->value, kv->value_len, c->value ? c->value : "",
			      c->value ? c->value_len : 0);
	} else {
		if (kv)
			have = c->target == ETCD_CMP_VERSION ? kv->version
			       : c->target == ETCD_CMP_CREATE ? kv->create_revision
			       : c->target == ETCD_CMP_MOD    ? kv->mod_revision
							      : kv->lease;
		d = have < c->n ? -1 : have > c->n;
	}
	switch (c->result) {
	case ETCD_CMP_EQUAL:
		return d == 0;
	case ETCD_CMP_NOT_EQUAL:
		return d != 0;
	case ETCD_CMP_GREATER:
		return d > 0;
	case ETCD_CMP_LESS:
		return d < 0;
	}
	return false;
}

/*
 * Runs the requests q[0..n) as one txn would (after its comparisons): all
 * or nothing, the revision moved once if any wrote. resps: n results.
 */
static int apply(struct fakeetcd_store *s, const struct etcd_req *q, size_t n,
		 struct etcd_resp *resps, const char **msg)
{
	int64_t rev = s->revision + 1;
	bool wrote = false;
	int r = 0;

	if (duplicates(q, n)) {
		*msg = MSG_DUPLICATE;
		return -EINVAL;
	}
	/* What fails a txn is found before it changes anything. */
	for (size_t i = 0; i < n; i++) {
		if (q[i].type == ETCD_PUT && q[i].lease && !find_lease(s, q[i].lease)) {
			*msg = MSG_NO_LEASE;
			return -ENOENT;
		}
		if (q[i].type == ETCD_RANGE && q[i].revision > s->revision) {
			*msg = MSG_FUTURE;
			return -ERANGE;
		}
		if (q[i].type == ETCD_RANGE && q[i].revision > 0 && q[i].revision < s->compact) {
			*msg = MSG_COMPACTED;
			return -ESTALE;
		}
	}
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct etcd_span sp;

		resps[i].type = q[i].type;
		switch (q[i].type) {
		case ETCD_RANGE:
			r = read_range(s, &q[i], &resps[i], msg);
			break;
		case ETCD_PUT:
			r = write_put(s, rev, &q[i], &resps[i]);
			wrote = true;
			break;
		case ETCD_DELETE:
			r = etcd_span_of(q[i].key, q[i].range_end, q[i].prefix, q[i].from_key, &sp);
			if (r == 0)
				r = write_delete(s, rev, &sp, q[i].prev_kv, &resps[i]);
			etcd_span_free(&sp);
			wrote = wrote || resps[i].count > 0;
			break;
		}
	}
	if (wrote)
		s->revision = rev;
	for (size_t i = 0; i < n; i++)
		resps[i].revision = s->revision;
	return r;
}

/* Copies of requests. */

static void req_clear(struct etcd_req *q)
{
	free((char *)q->key);
	free((char *)q->range_end);
	free((void *)q->value);
	memset(q, 0, sizeof(*q));
}

static int req_copy(struct etcd_req *dst, const struct etcd_req *src)
{
	*dst = *src;
	dst->key = memdup0(src->key, strlen(src->key));
	dst->range_end = src->range_end ? memdup0(src->range_end, strlen(src->range_end)) : NULL;
	dst->value = memdup0(src->value ? src->value : "", src->value ? src->value_len : 0);
	if (!dst->key || (src->range_end && !dst->range_end) || !dst->value) {
		req_clear(dst);
		return -ENOMEM;
	}
	return 0;
}

static void fop_free(struct fop *op)
{
	req_clear(&op->req);
	for (size_t i = 0; i < op->n_success + op->n_failure; i++)
		req_clear(&op->ops[i]);
	free(op->ops);
	for (size_t i = 0; i < op->n_cmp; i++) {
		free((char *)op->cmp[i].key);
		free((void *)op->cmp[i].value);
	}
	free(op->cmp);
	if (op->w) {
		etcd_span_free(&op->w->span);
		free(op->w);
	}
	free(op);
}

/* The record's form of a range: KEY, KEY* (prefix), KEY.. (to the end), KEY..END. */
static void range_text(const char *key, const char *range_end, bool prefix, bool from_key,
		       char *buf, size_t len)
{
	if (prefix)
		snprintf(buf, len, "%s*", key);
	else if (from_key)
		snprintf(buf, len, "%s..", key);
	else if (range_end && *range_end)
		snprintf(buf, len, "%s..%s", key, range_end);
	else
		snprintf(buf, len, "%s", key);
}

/* The ops: each call queued, run by on_run(). */

static struct fop *new_op(struct fconn *c, enum fkind kind, void *userdata)
{
	struct fop *op = calloc(1, sizeof(*op));

	if (op) {
		op->conn = c;
		op->kind = kind;
		op->userdata = userdata;
	}
	return op;
}

static int queue(struct fconn *c, struct fop *op, uint64_t *ret_id)
{
	struct fakeetcd_store *s = c->s;

	if (c->closing) {
		fop_free(op);
		return -ESHUTDOWN;
	}
	op->id = ++c->next_id;
	if (s->queue_tail)
		s->queue_tail->next = op;
	else
		s->queue = op;
	s->queue_tail = op;
	c->stats.calls++;
	*ret_id = op->id;
	schedule(s);
	return 0;
}

static int fake_kv(void *ctx, const struct etcd_req *req, etcd_kv_cb cb, void *userdata,
		   uint64_t *ret_id)
{
	struct fconn *c = ctx;
	struct fop *op = new_op(c, F_KV, userdata);
	char range[512];

	if (!op)
		return -ENOMEM;
	op->cb.kv = cb;
	if (req_copy(&op->req, req) < 0) {
		free(op);
		return -ENOMEM;
	}
	range_text(req->key, req->range_end, req->prefix, req->from_key, range, sizeof(range));
	if (req->type == ETCD_RANGE && (req->revision || req->limit))
		drf_record(c->s->pub->out, &c->s->pub->calls,
			   "range %s rev=%" PRId64 " limit=%" PRId64, range, req->revision,
			   req->limit);
	else if (req->type == ETCD_RANGE)
		drf_record(c->s->pub->out, &c->s->pub->calls, "range %s", range);
	else if (req->type == ETCD_PUT)
		drf_record(c->s->pub->out, &c->s->pub->calls, "put %s %zu lease=%" PRId64, req->key,
			   req->value_len, req->lease);
	else
		drf_record(c->s->pub->out, &c->s->pub->calls, "delete %s", range);
	return queue(c, op, ret_id);
}

static int fake_txn(void *ctx, const struct etcd_txn *t, etcd_txn_cb cb, void *userdata,
		    uint64_t *ret_id)
{
	struct fconn *c = ctx;
	struct fop *op = new_op(c, F_TXN, userdata);
	size_t n = t->n_success + t->n_failure;
	int r = 0;

	if (!op)
		return -ENOMEM;
	op->cb.txn = cb;
	op->ops = calloc(n ? n : 1, sizeof(*op->ops));
	op->cmp = calloc(t->n_cmp ? t->n_cmp : 1, sizeof(*op->cmp));
	if (!op->ops || !op->cmp)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++) {
		r = req_copy(&op->ops[i], i < t->n_success ? &t->success[i]
							  : &t->failure[i - t->n_success]);
		if (r == 0)
			i < t->n_success ? op->n_success++ : op->n_failure++;
	}
	for (size_t i = 0; r == 0 && i < t->n_cmp; i++) {
		struct etcd_cmp *cmp = &op->cmp[i];

		*cmp = t->cmp[i];
		cmp->key = memdup0(t->cmp[i].key, strlen(t->cmp[i].key));
		cmp->value = memdup0(t->cmp[i].value ? t->cmp[i].value : "",
				     t->cmp[i].value ? t->cmp[i].value_len : 0);
		op->n_cmp++;
		if (!cmp->key || !cmp->value)
			r = -ENOMEM;
	}
	if (r < 0) {
		fop_free(op);
		return r;
	}
	drf_record(c->s->pub->out, &c->s->pub->calls, "txn cmp=%zu success=%zu failure=%zu",
		   t->n_cmp, t->n_success, t->n_failure);
	return queue(c, op, ret_id);
}

static int fake_compact(void *ctx, int64_t revision, etcd_kv_cb cb, void *userdata,
			uint64_t *ret_id)
{
	struct fconn *c = ctx;
	struct fop *op = new_op(c, F_COMPACT, userdata);

	if (!op)
		return -ENOMEM;
	op->cb.kv = cb;
	op->a = revision;
	drf_record(c->s->pub->out, &c->s->pub->calls, "compact %" PRId64, revision);
	return queue(c, op, ret_id);
}

static int lease_op(struct fconn *c, enum fkind kind, int64_t a, int64_t b, etcd_lease_cb cb,
		    void *userdata, uint64_t *ret_id)
{
	struct fop *op = new_op(c, kind, userdata);

	if (!op)
		return -ENOMEM;
	op->cb.lease = cb;
	op->a = a;
	op->b = b;
	if (kind == F_GRANT)
		drf_record(c->s->pub->out, &c->s->pub->calls, "lease-grant %" PRId64, a);
	else
		drf_record(c->s->pub->out, &c->s->pub->calls, "lease-%s %" PRId64,
			   kind == F_KEEPALIVE ? "keepalive" : "revoke", a);
	return queue(c, op, ret_id);
}

static int fake_grant(void *ctx, int64_t ttl, int64_t id, etcd_lease_cb cb, void *userdata,
		      uint64_t *ret_id)
{
	return lease_op(ctx, F_GRANT, ttl, id, cb, userdata, ret_id);
}

static int fake_keepalive(void *ctx, int64_t id, etcd_lease_cb cb, void *userdata,
			  uint64_t *ret_id)
{
	return lease_op(ctx, F_KEEPALIVE, id, 0, cb, userdata, ret_id);
}

static int fake_revoke(void *ctx, int64_t id, etcd_lease_cb cb, void *userdata,
		       uint64_t *ret_id)
{
	return lease_op(ctx, F_REVOKE, id, 0, cb, userdata, ret_id);
}

static int fake_watch(void *ctx, const struct etcd_watch_req *w, etcd_watch_cb cb,
		      void *userdata, uint64_t *ret_id)
{
	struct fconn *c = ctx;
	struct fop *op = new_op(c, F_WATCH, userdata);
	char range[512];
	int r;

	if (!op)
		return -ENOMEM;
	op->w = calloc(1, sizeof(*op->w));
	if (!op->w) {
		free(op);
		return -ENOMEM;
	}
	r = etcd_span_of(w->key, w->range_end, w->prefix, w->from_key, &op->w->span);
	if (r < 0) {
		fop_free(op);
		return r;
	}
	op->w->conn = c;
	op->w->prev_kv = w->prev_kv;
	op->w->start = w->start_revision;
	op->w->cb = cb;
	op->w->userdata = userdata;
	range_text(w->key, w->range_end, w->prefix, w->from_key, range, sizeof(range));
	drf_record(c->s->pub->out, &c->s->pub->calls, "watch %s from=%" PRId64, range,
		   w->start_revision);
	r = queue(c, op, ret_id);
	if (r == 0)
		op->w->id = op->id;
	return r;
}

static struct fop *unqueue(struct fakeetcd_store *s, struct fconn *c, uint64_t id)
{
	struct fop **p = &s->queue, *prev = NULL;

	while (*p && !((*p)->conn == c && (id == 0 || (*p)->id == id))) {
		prev = *p;
		p = &(*p)->next;
	}
	if (!*p)
		return NULL;
	struct fop *op = *p;

	*p = op->next;
	if (s->queue_tail == op)
		s->queue_tail = prev;
	op->next = NULL;
	return op;
}

static struct fwatch *unwatch(struct fakeetcd_store *s, struct fconn *c, uint64_t id)
{
	struct fwatch **p = &s->watches;

	while (*p && !((*p)->conn == c && (id == 0 || (*p)->id == id)))
		p = &(*p)->next;
	if (!*p)
		return NULL;
	struct fwatch *w = *p;

	*p = w->next;
	w->next = NULL;
	return w;
}

static void watch_free(struct fwatch *w)
{
	etcd_span_free(&w->span);
	free(w);
}

static int fake_cancel(void *ctx, uint64_t id)
{
	struct fconn *c = ctx;
	struct fop *op = unqueue(c->s, c, id);
	struct fwatch *w;

	drf_record(c->s->pub->out, &c->s->pub->calls, "cancel %" PRIu64, id);
	if (op) {
		fop_free(op);
		return 0;
	}
	w = unwatch(c->s, c, id);
	if (!w)
		return -ENOENT;
	watch_free(w);
	return 0;
}

static bool fake_pending(void *ctx, uint64_t id)
{
	struct fconn *c = ctx;

	for (struct fop *op = c->s->queue; op; op = op->next)
		if (op->conn == c && op->id == id)
			return true;
	for (struct fwatch *w = c->s->watches; w; w = w->next)
		if (w->conn == c && w->id == id)
			return true;
	return false;
}

static void fake_stats(void *ctx, struct etcd_stats *ret)
{
	const struct fconn *c = ctx;

	*ret = c->stats;
}

static void store_free(struct fakeetcd_store *s)
{
	kvset_free(&s->kvs);
	for (size_t i = 0; i < s->n_log; i++) {
		kv_clear(&s->log[i].kv);
		kv_clear(&s->log[i].prev);
	}
	free(s->log);
	free(s->leases);
	sd_event_source_disable_unref(s->run);
	sd_event_unref(s->event);
	free(s->pub);
	free(s);
}

static void fake_close(void *ctx)
{
	struct fconn *c = ctx;
	struct fakeetcd_store *s = c->s;
	struct fop *op;
	struct fwatch *w;

	c->closing = true;
	/* Each callback once, with -ECANCELED, as the real client does. */
	while ((op = unqueue(s, c, 0))) {
		switch (op->kind) {
		case F_KV:
		case F_COMPACT:
			op->cb.kv(op->userdata, -ECANCELED, "etcd: closed", NULL);
			break;
		case F_TXN:
			op->cb.txn(op->userdata, -ECANCELED, "etcd: closed", NULL);
			break;
		case F_GRANT:
		case F_KEEPALIVE:
		case F_REVOKE:
			op->cb.lease(op->userdata, -ECANCELED, "etcd: closed", NULL);
			break;
		case F_WATCH:
			op->w->cb(op->w->userdata, -ECANCELED, "etcd: closed", NULL);
			break;
		}
		fop_free(op);
	}
	while ((w = unwatch(s, c, 0))) {
		w->cb(w->userdata, -ECANCELED, "etcd: closed", NULL);
		watch_free(w);
	}
	for (struct fconn **p = &s->conn_list; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	free(c);
	if (--s->conns == 0 && s->freed && !s->running)
		store_free(s);
}

const struct etcd_ops fakeetcd_ops = {
	.name = "fake etcd",
	.kv = fake_kv,
	.txn = fake_txn,
	.compact = fake_compact,
	.lease_grant = fake_grant,
	.lease_keepalive = fake_keepalive,
	.lease_revoke = fake_revoke,
	.watch = fake_watch,
	.cancel = fake_cancel,
	.pending = fake_pending,
	.stats = fake_stats,
	.close = fake_close,
};

/* Running the calls. */

static unsigned op_bit(const struct fop *op)
{
	switch (op->kind) {
	case F_KV:
		return op->req.type == ETCD_PUT	     ? FAKEETCD_OP_PUT
		       : op->req.type == ETCD_DELETE ? FAKEETCD_OP_DELETE
						     : FAKEETCD_OP_RANGE;
	case F_TXN:
		return FAKEETCD_OP_TXN;
	case F_COMPACT:
		return FAKEETCD_OP_COMPACT;
	case F_GRANT:
		return FAKEETCD_OP_GRANT;
	case F_KEEPALIVE:
		return FAKEETCD_OP_KEEPALIVE;
	case F_REVOKE:
		return FAKEETCD_OP_REVOKE;
	case F_WATCH:
		return FAKEETCD_OP_WATCH;
	}
	return 0;
}

/* The injected failure of op (0: none), counted down. */
static int injected(struct fakeetcd_store *s, const struct fop *op)
{
	struct fakeetcd *f = s->pub;
	const char *key = NULL;
	int r;

	if (op->conn->cut)
		return -ECONNREFUSED;
	/* A txn's key: its first request's, or its first comparison's. */
	if (op->kind == F_KV)
		key = op->req.key;
	else if (op->kind == F_TXN && op->n_success + op->n_failure)
		key = op->ops[0].key;
	else if (op->kind == F_TXN && op->n_cmp)
		key = op->cmp[0].key;
	r = drf_fault_inject(&f->fault, op_bit(op), 0, key);
	if (r && f->fault_times && --f->fault_times == 0)
		f->fault.err = 0;
	return r;
}

static void run_kv(struct fakeetcd_store *s, struct fop *op, int err, const char *msg)
{
	struct etcd_resp resp = { .type = op->kind == F_COMPACT ? ETCD_PUT : op->req.type };

	if (!err && op->kind == F_COMPACT) {
		err = fakeetcd_compact(s->pub, op->a);
		msg = err == -ESTALE ? MSG_COMPACTED : MSG_FUTURE;
		resp.revision = s->revision;
	} else if (!err) {
		err = apply(s, &op->req, 1, &resp, &msg);
	}
	if (err) {
		char *m = NULL;

		if (asprintf(&m, "%s: %s", ENDPOINT, msg ? msg : strerror(-err)) < 0)
			m = NULL;
		op->cb.kv(op->userdata, err, m ? m : ENDPOINT, NULL);
		free(m);
	} else {
		op->cb.kv(op->userdata, 0, NULL, &resp);
	}
	for (size_t i = 0; i < resp.n_kvs; i++)
		kv_clear(&resp.kvs[i]);
	free(resp.kvs);
}

static void run_txn(struct fakeetcd_store *s, struct fop *op, int err, const char *msg)
{
	struct etcd_txn_resp t = { 0 };
	const struct etcd_req *q;
	size_t n = 0;

	if (!err && (duplicates(op->ops, op->n_success) ||
		     duplicates(op->ops + op->n_success, op->n_failure))) {
		err = -EINVAL;
		msg = MSG_DUPLICATE;
	}
	if (!err) {
		t.succeeded = true;
		for (size_t i = 0; i < op->n_cmp; i++)
			t.succeeded = t.succeeded && cmp_holds(s, &op->cmp[i]);
		q = t.succeeded ? op->ops : op->ops + op->n_success;
		n = t.succeeded ? op->n_success : op->n_failure;
		t.resps = calloc(n ? n : 1, sizeof(*t.resps));
		if (!t.resps)
			err = -ENOMEM;
		else
			err = apply(s, q, n, t.resps, &msg);
		t.n_resps = n;
		t.revision = s->revision;
	}
	if (err) {
		char *m = NULL;

		if (asprintf(&m, "%s: %s", ENDPOINT, msg ? msg : strerror(-err)) < 0)
			m = NULL;
		op->cb.txn(op->userdata, err, m ? m : ENDPOINT, NULL);
		free(m);
	} else {
		op->cb.txn(op->userdata, 0, NULL, &t);
	}
	for (size_t i = 0; i < t.n_resps; i++) {
		for (size_t j = 0; j < t.resps[i].n_kvs; j++)
			kv_clear(&t.resps[i].kvs[j]);
		free(t.resps[i].kvs);
	}
	free(t.resps);
}

static void run_lease(struct fakeetcd_store *s, struct fop *op, int err, const char *msg)
{
	struct etcd_lease l = { .id = op->a };
	struct flease *fl;

	if (err)
		goto out;
	switch (op->kind) {
	case F_GRANT:
		if (op->b && find_lease(s, op->b)) {
			err = -EEXIST;
			msg = MSG_LEASE_EXISTS;
			goto out;
		}
		if (s->n_leases == s->cap_leases) {
			size_t cap = s->cap_leases ? 2 * s->cap_leases : 8;
			struct flease *v = realloc(s->leases, cap * sizeof(*v));

			if (!v) {
				err = -ENOMEM;
				goto out;
			}
			s->leases = v;
			s->cap_leases = cap;
		}
		fl = &s->leases[s->n_leases++];
		fl->id = op->b ? op->b : s->next_lease++;
		fl->ttl = op->a < FAKEETCD_MIN_TTL ? FAKEETCD_MIN_TTL : op->a;
		fl->expiry = drf_mono_usec(s->clock) + (uint64_t)fl->ttl * DRF_USEC_PER_SEC;
		l.id = fl->id;
		l.ttl = fl->ttl;
		break;
	case F_KEEPALIVE:
		fl = find_lease(s, op->a);
		if (!fl) {
			err = -ENOENT;
			msg = MSG_NO_LEASE;
			goto out;
		}
		fl->expiry = drf_mono_usec(s->clock) + (uint64_t)fl->ttl * DRF_USEC_PER_SEC;
		l.ttl = fl->ttl;
		break;
	default:
		if (!find_lease(s, op->a)) {
			err = -ENOENT;
			msg = MSG_NO_LEASE;
			goto out;
		}
		drop_lease(s, op->a);
		break;
	}
out:
	l.revision = s->revision;
	if (err) {
		char *m = NULL;

		if (asprintf(&m, "%s: %s", ENDPOINT, msg ? msg : strerror(-err)) < 0)
			m = NULL;
		op->cb.lease(op->userdata, err, m ? m : ENDPOINT, NULL);
		free(m);
	} else {
		op->cb.lease(op->userdata, 0, NULL, &l);
	}
}

/* A watch's create: from its start, or from the next revision. */
static void run_watch(struct fakeetcd_store *s, struct fop *op, int err)
{
	struct fwatch *w = op->w, **p;

	if (err) {
		char *m = NULL;

		if (asprintf(&m, "%s: %s", ENDPOINT, strerror(-err)) < 0)
			m = NULL;
		w->cb(w->userdata, err, m ? m : ENDPOINT, NULL);
		free(m);
		return;
	}
	op->w = NULL;
	w->next_rev = w->start ? w->start : s->revision + 1;
	/* At the end of the list: watches are served in the order they were made. */
	for (p = &s->watches; *p; p = &(*p)->next)
		;
	*p = w;
}

static void run_op(struct fakeetcd_store *s, struct fop *op)
{
	int err = injected(s, op);
	const char *msg = err ? (op->conn->cut ? "unreachable (partitioned)" : "injected fault")
			      : NULL;
	char b[128];

	/* A permission refused reads as etcd's own (PermissionDenied). */
	if (err == -EACCES && !op->conn->cut)
		msg = "injected fault: etcdserver: permission denied";
	else if (err) {
		snprintf(b, sizeof(b), "%s: %s", msg, strerror(-err));
		msg = b;
	}
	switch (op->kind) {
	case F_KV:
	case F_COMPACT:
		run_kv(s, op, err, msg);
		break;
	case F_TXN:
		run_txn(s, op, err, msg);
		break;
	case F_GRANT:
	case F_KEEPALIVE:
	case F_REVOKE:
		run_lease(s, op, err, msg);
		break;
	case F_WATCH:
		run_watch(s, op, err);
		break;
	}
}

static void events_clear(struct etcd_watch_resp *w)
{
	for (size_t i = 0; i < w->n_events; i++) {
		kv_clear(&w->events[i].kv);
		if (w->events[i].prev_kv)
			kv_clear(w->events[i].prev_kv);
		free(w->events[i].prev_kv);
	}
	free(w->events);
	memset(w, 0, sizeof(*w));
}

/* The events w has not reported, into resp (copies). */
static int collect(struct fakeetcd_store *s, struct fwatch *w, struct etcd_watch_resp *resp)
{
	size_t i = s->n_log;

	while (i > 0 && s->log[i - 1].rev >= w->next_rev)
		i--;
	for (; i < s->n_log; i++) {
		const struct fev *ev = &s->log[i];
		struct etcd_event *e;

		if (!etcd_span_has(&w->span, ev->kv.key, ev->kv.key_len))
			continue;
		e = realloc(resp->events, (resp->n_events + 1) * sizeof(*e));
		if (!e)
			return -ENOMEM;
		resp->events = e;
		e = &e[resp->n_events];
		memset(e, 0, sizeof(*e));
		e->type = ev->type;
		if (kv_copy(&e->kv, &ev->kv, ev->type == ETCD_EVENT_PUT) < 0)
			return -ENOMEM;
		resp->n_events++;
		if (w->prev_kv && ev->has_prev) {
			e->prev_kv = calloc(1, sizeof(*e->prev_kv));
			if (!e->prev_kv || kv_copy(e->prev_kv, &ev->prev, true) < 0)
				return -ENOMEM;
		}
	}
	resp->revision = s->revision;
	return 0;
}

/* What watch id (of conn c) has to say: its events, or its end. */
static void serve_watch(struct fakeetcd_store *s, struct fconn *c, uint64_t id)
{
	struct fwatch *w = NULL;
	struct etcd_watch_resp resp = { 0 };
	int err;

	for (w = s->watches; w && !(w->conn == c && w->id == id); w = w->next)
		;
	if (!w)
		return;
	err = w->end_err ? w->end_err : c->cut ? -ECONNRESET : 0;
	if (!err && !w->served && w->start && w->start < s->compact) {
		resp.compact_revision = s->compact;
		resp.revision = s->revision;
		unwatch(s, c, id);
		w->cb(w->userdata, -ESTALE,
		      ENDPOINT ": " MSG_COMPACTED, &resp);
		watch_free(w);
		return;
	}
	if (err) {
		unwatch(s, c, id);
		w->cb(w->userdata, err, ENDPOINT ": the watch's stream broke", NULL);
		watch_free(w);
		return;
	}
	w->served = true;
	err = collect(s, w, &resp);
	w->next_rev = s->revision + 1;
	if (err == 0 && resp.n_events == 0)
		return;
	if (err) {
		unwatch(s, c, id);
		w->cb(w->userdata, err, ENDPOINT ": out of memory", NULL);
		watch_free(w);
	} else {
		w->cb(w->userdata, 0, NULL, &resp);
	}
	events_clear(&resp);
}

static bool watch_has_news(const struct fakeetcd_store *s, const struct fwatch *w)
{
	if (w->end_err || w->conn->cut || (!w->served && w->start && w->start < s->compact))
		return true;
	return s->n_log && s->log[s->n_log - 1].rev >= w->next_rev;
}

static int on_run(sd_event_source *src, void *userdata)
{
	struct fakeetcd_store *s = userdata;
	size_t n = 0, nw = 0;
	struct {
		struct fconn *c;
		uint64_t id;
	} *ids = NULL;

	(void)src;
	s->running = true;
	expire(s);
	/* The calls queued by now, in order; those they make go to the next pass. */
	for (struct fop *op = s->queue; op; op = op->next)
		n++;
	for (size_t i = 0; i < n && s->queue; i++) {
		struct fop *op = s->queue;

		s->queue = op->next;
		if (!s->queue)
			s->queue_tail = NULL;
		op->next = NULL;
		run_op(s, op);
		fop_free(op);
	}
	/* Then the watches; a callback may cancel any of them, or close a client. */
	for (struct fwatch *w = s->watches; w; w = w->next)
		nw++;
	ids = calloc(nw ? nw : 1, sizeof(*ids));
	if (ids) {
		size_t i = 0;

		for (struct fwatch *w = s->watches; w; w = w->next, i++) {
			ids[i].c = w->conn;
			ids[i].id = w->id;
		}
		for (i = 0; i < nw; i++) {
			bool alive = false;

			/* The client of an id may be gone (closed by a callback). */
			for (struct fconn *c = s->conn_list; c; c = c->next)
				alive = alive || c == ids[i].c;
			if (alive)
				serve_watch(s, ids[i].c, ids[i].id);
		}
		free(ids);
	}
	s->running = false;
	if (s->freed && s->conns == 0) {
		store_free(s);
		return 0;
	}
	if (s->queue)
		schedule(s);
	for (struct fwatch *w = s->watches; w; w = w->next)
		if (watch_has_news(s, w))
			schedule(s);
	return 0;
}

/* The store. */

struct fakeetcd *fakeetcd_new(struct sd_event *event, const struct drf_clock *clock)
{
	struct fakeetcd *f = calloc(1, sizeof(*f));
	struct fakeetcd_store *s = calloc(1, sizeof(*s));

	if (!f || !s)
		goto fail;
	f->s = s;
	s->pub = f;
	s->event = sd_event_ref(event);
	s->clock = clock;
	s->revision = 1; /* etcd's, empty */
	s->next_lease = 7587000000000000001; /* the size of etcd's ids, for the JSON of int64s */
	if (sd_event_add_defer(event, &s->run, on_run, s) < 0 ||
	    sd_event_source_set_enabled(s->run, SD_EVENT_OFF) < 0)
		goto fail;
	return f;
fail:
	if (s) {
		sd_event_source_disable_unref(s->run);
		sd_event_unref(s->event);
	}
	free(s);
	free(f);
	return NULL;
}

void fakeetcd_free(struct fakeetcd *f)
{
	struct fakeetcd_store *s;

	if (!f)
		return;
	s = f->s;
	s->freed = true;
	/* Queued calls and watches of clients still open go with them. */
	if (s->conns == 0)
		store_free(s);
}

int fakeetcd_connect(struct fakeetcd *f, struct etcd **ret)
{
	struct fconn *c = calloc(1, sizeof(*c));
	struct etcd *e;

	if (!c)
		return -ENOMEM;
	c->s = f->s;
	e = etcd_new(&fakeetcd_ops, c, f->s->event);
	if (!e) {
		free(c);
		return -ENOMEM;
	}
	c->next = f->s->conn_list;
	f->s->conn_list = c;
	f->s->conns++;
	*ret = e;
	return 0;
}

int64_t fakeetcd_revision(const struct fakeetcd *f)
{
	return f->s->revision;
}

int64_t fakeetcd_compacted(const struct fakeetcd *f)
{
	return f->s->compact;
}

const struct etcd_kv *fakeetcd_get(const struct fakeetcd *f, const char *key)
{
	return kvset_get(&f->s->kvs, key, strlen(key));
}

size_t fakeetcd_nkeys(const struct fakeetcd *f)
{
	return f->s->kvs.n;
}

size_t fakeetcd_nleases(const struct fakeetcd *f)
{
	return f->s->n_leases;
}

size_t fakeetcd_nwatches(const struct fakeetcd *f)
{
	size_t n = 0;

	for (struct fwatch *w = f->s->watches; w; w = w->next)
		n++;
	return n;
}

int fakeetcd_compact(struct fakeetcd *f, int64_t revision)
{
	struct fakeetcd_store *s = f->s;

	if (revision <= s->compact)
		return -ESTALE;
	if (revision > s->revision)
		return -ERANGE;
	s->compact = revision;
	return 0;
}

void fakeetcd_tick(struct fakeetcd *f)
{
	expire(f->s);
	schedule(f->s);
}

void fakeetcd_break_watches(struct fakeetcd *f, int err)
{
	for (struct fwatch *w = f->s->watches; w; w = w->next)
		w->end_err = err ? err : -ECONNRESET;
	schedule(f->s);
}

int fakeetcd_partition(struct etcd *e, bool cut)
{
	struct fconn *c;

	if (!e || e->ops != &fakeetcd_ops)
		return -EINVAL;
	c = e->ctx;
	c->cut = cut;
	schedule(c->s);
	return 0;
}
