/* SPDX-License-Identifier: MIT */
/*
 * The etcd v3 API's messages as fleet mode speaks them: keys and their
 * ranges, requests and answers of KV, Txn, Lease and Watch, and the helpers
 * on their values (a prefix's range end, a range's bytes, a gRPC status's
 * errno). The client (etcd.h) sends them, the gateway's JSON (etcdjson.h)
 * encodes and decodes them, the fake etcd (tests/lib/fakeetcd.h) answers
 * them; this knows none of those.
 *
 * Keys and range ends are C strings (etcd's keys are bytes; drfd's are
 * text); values are bytes with a length. Numbers are etcd's int64s.
 */
#ifndef DRF_ETCDMSG_H
#define DRF_ETCDMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A key-value pair as etcd keeps it. key and value are followed by a NUL (not counted). */
struct etcd_kv {
	char *key;
	size_t key_len;
	char *value;
	size_t value_len;
	int64_t create_revision; /* the revision that created the key (0: none, a DELETE event) */
	int64_t mod_revision;    /* the revision of its last change */
	int64_t version;         /* changes since it was created, 1 at creation */
	int64_t lease;           /* the lease it is attached to, 0: none */
};

enum etcd_req_type {
	ETCD_RANGE,
	ETCD_PUT,
	ETCD_DELETE,
};

/*
 * A request on keys: alone (etcd_range, etcd_put, etcd_delete) or within a
 * txn. The keys it concerns: key alone (range_end NULL, prefix and from_key
 * false); [key, range_end); with prefix, every key that begins with key; with
 * from_key, every key >= key. With an empty key, prefix and from_key mean
 * every key.
 */
struct etcd_req {
	enum etcd_req_type type; /* set by etcd_range/put/delete; a txn's op says it */
	const char *key;
	const char *range_end;
	bool prefix;
	bool from_key;
	/* put (key alone) */
	const void *value;
	size_t value_len;
	int64_t lease; /* 0: none */
	/* put, delete: the pairs as they were before, in the answer */
	bool prev_kv;
	/* range */
	int64_t revision; /* the store as of then; 0: now */
	int64_t limit;    /* at most so many pairs; 0: all */
	bool keys_only;   /* no values */
	bool count_only;  /* no pairs, only the count */
};

struct etcd_resp {
	enum etcd_req_type type;
	int64_t revision;     /* the store's revision when etcd answered (its header's) */
	struct etcd_kv *kvs;  /* range: the pairs, by key; put, delete with prev_kv: before */
	size_t n_kvs;
	int64_t count;        /* range: pairs in the range (past limit too); delete: deleted */
	bool more;            /* range: more pairs past limit */
};

/* A txn's comparison: KEY's TARGET RESULT the operand (n, or value for ETCD_CMP_VALUE). */
enum etcd_cmp_target {
	ETCD_CMP_VERSION = 0,
	ETCD_CMP_CREATE = 1,
	ETCD_CMP_MOD = 2,
	ETCD_CMP_VALUE = 3,
	ETCD_CMP_LEASE = 4,
};

/* etcd's numbering (Compare.CompareResult). */
enum etcd_cmp_result {
	ETCD_CMP_EQUAL = 0,
	ETCD_CMP_GREATER = 1,
	ETCD_CMP_LESS = 2,
	ETCD_CMP_NOT_EQUAL = 3,
};

/*
 * A key that does not exist has version, create and mod revision and lease
 * 0; a comparison of its value is false whatever the operator (etcd's rule).
 */
struct etcd_cmp {
	const char *key;
	enum etcd_cmp_target target;
	enum etcd_cmp_result result;
	int64_t n;
	const void *value;
	size_t value_len;
};

/*
 * If every comparison holds, the success requests run, else the failure
 * ones, all at one revision (a txn that writes moves the revision by one).
 * A key put twice, or put and deleted, in one list is -EINVAL; a list holds
 * at most ETCD_TXN_MAX requests (etcd's default --max-txn-ops).
 */
#define ETCD_TXN_MAX 128
struct etcd_txn {
	const struct etcd_cmp *cmp;
	size_t n_cmp;
	const struct etcd_req *success;
	size_t n_success;
	const struct etcd_req *failure;
	size_t n_failure;
};

struct etcd_txn_resp {
	int64_t revision;
	bool succeeded;
	struct etcd_resp *resps; /* one per request of the branch that ran, in its order */
	size_t n_resps;
};

struct etcd_lease {
	int64_t revision;
	int64_t id;
	int64_t ttl; /* grant, keepalive: the lease's TTL in seconds (from now) */
};

enum etcd_event_type {
	ETCD_EVENT_PUT = 0,
	ETCD_EVENT_DELETE = 1,
};

struct etcd_event {
	enum etcd_event_type type;
	/* PUT: the pair as written; DELETE: key and mod_revision (the deletion's) only */
	struct etcd_kv kv;
	struct etcd_kv *prev_kv; /* with prev_kv: the pair before (NULL if none) */
};

/* The keys a watch sees: as in struct etcd_req. */
struct etcd_watch_req {
	const char *key;
	const char *range_end;
	bool prefix;
	bool from_key;
	int64_t start_revision; /* the first revision to report; 0: from now on */
	bool prev_kv;
};

/*
 * One batch of events, in revision order (those of one revision in the order
 * of its requests); a revision's events may be split across batches. With
 * err -ESTALE, compact_revision is etcd's compact revision: the start was
 * older. Re-read (range) and watch again from the read's revision + 1.
 */
struct etcd_watch_resp {
	int64_t revision;
	int64_t compact_revision;
	struct etcd_event *events;
	size_t n_events;
};

/* Whether a request's range is its key alone: no range end, no prefix, not from_key. */
bool etcd_single_key(const char *range_end, bool prefix, bool from_key);

/*
 * The end of the range of keys beginning with key (etcd's prefix end: its
 * last byte below 0xff incremented, what follows dropped), into a new buffer
 * of *ret_len bytes (and a NUL); "\0" (all keys from key) when there is no
 * such byte. 0 or -ENOMEM.
 */
int etcd_prefix_end(const char *key, size_t key_len, char **ret, size_t *ret_len);

/*
 * The bytes of a request's range as etcd wants them: key (ret_key, its
 * length) and range end (NULL for key alone), both new buffers; an empty
 * key with prefix or from_key is "\0" (every key). -EINVAL for an empty
 * key alone, -ENOMEM.
 */
struct etcd_span {
	char *key;
	size_t key_len;
	char *end; /* NULL: key alone; "\0" (end_len 1): every key >= key */
	size_t end_len;
};
int etcd_span_of(const char *key, const char *range_end, bool prefix, bool from_key,
		 struct etcd_span *ret);
void etcd_span_free(struct etcd_span *s);
/* Whether the key of key_len bytes is in s. */
bool etcd_span_has(const struct etcd_span *s, const char *key, size_t key_len);

/* The errno of a gRPC status (code, and message for the cases that share one). */
int etcd_errno(int grpc_code, const char *message);

#endif
