// SPDX-License-Identifier: MIT
/* etcd's JSON gateway: bodies and answers (see etcdjson.h). */
#include "etcdjson.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json_util.h>

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *etcd_b64_encode(const void *p, size_t n)
{
	const unsigned char *in = p;
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		size_t left = n - i;

		if (left > 1)
			v |= (uint32_t)in[i + 1] << 8;
		if (left > 2)
			v |= in[i + 2];
		*o++ = b64_chars[(v >> 18) & 63];
		*o++ = b64_chars[(v >> 12) & 63];
		*o++ = left > 1 ? b64_chars[(v >> 6) & 63] : '=';
		*o++ = left > 2 ? b64_chars[v & 63] : '=';
	}
	*o = 0;
	return out;
}

/* The value of a base64 character, either alphabet; -1 for another. */
static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int etcd_b64_decode(const char *s, size_t len, char **ret, size_t *ret_len)
{
	size_t pad = 0, n, out_len;
	uint32_t acc = 0;
	unsigned bits = 0;
	char *out, *o;

	while (pad < 2 && len > pad && s[len - 1 - pad] == '=')
		pad++;
	n = len - pad;
	/* Padding makes whole quads; a quad of one character holds no byte. */
	if ((pad && len % 4 != 0) || n % 4 == 1)
		return -EBADMSG;
	out_len = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
	out = malloc(out_len + 1);
	if (!out)
		return -ENOMEM;
	o = out;
	for (size_t i = 0; i < n; i++) {
		int v = b64_value(s[i]);

		if (v < 0) {
			free(out);
			return -EBADMSG;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			*o++ = (char)((acc >> bits) & 0xff);
		}
	}
	*o = 0;
	*ret = out;
	*ret_len = out_len;
	return 0;
}

int etcd_json_int64(json_object *o, const char *key, int64_t *ret)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    json_object_is_type(v, json_type_null)) {
		*ret = 0;
		return 0;
	}
	if (json_object_is_type(v, json_type_string)) {
		const char *s = json_object_get_string(v);
		char *end;
		long long n;

		errno = 0;
		n = strtoll(s, &end, 10);
		if (!*s || *end || errno || (*s != '-' && (*s < '0' || *s > '9')))
			return -EBADMSG;
		*ret = n;
		return 0;
	}
	if (json_object_is_type(v, json_type_int)) {
		/* json-c keeps a number past INT64_MAX as a uint64; int64 clamps it. */
		if (json_object_get_uint64(v) > (uint64_t)INT64_MAX &&
		    json_object_get_int64(v) >= 0)
			return -EBADMSG;
		*ret = json_object_get_int64(v);
		return 0;
	}
	return -EBADMSG;
}

/* The bytes of base64 under key in o (empty when absent): a new buffer and its length. */
static int get_bytes(json_object *o, const char *key, char **ret, size_t *ret_len)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return etcd_b64_decode("", 0, ret, ret_len);
	if (!json_object_is_type(v, json_type_string))
		return -EBADMSG;
	return etcd_b64_decode(json_object_get_string(v), (size_t)json_object_get_string_len(v),
			       ret, ret_len);
}

static bool get_bool(json_object *o, const char *key)
{
	json_object *v;

	return o && json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

/* The object under key, or NULL. */
static json_object *get_obj(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_object))
		return NULL;
	return v;
}

static json_object *get_array(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_array))
		return NULL;
	return v;
}

static int header_revision(json_object *o, int64_t *ret)
{
	return etcd_json_int64(get_obj(o, "header"), "revision", ret);
}

/* A streamed answer's {"result": ...}, or o itself. */
static json_object *unwrap(json_object *o)
{
	json_object *r = get_obj(o, "result");

	return r ? r : o;
}

const char *etcd_path_of(enum etcd_req_type t)
{
	switch (t) {
	case ETCD_RANGE:
		return "/v3/kv/range";
	case ETCD_PUT:
		return "/v3/kv/put";
	case ETCD_DELETE:
		return "/v3/kv/deleterange";
	}
	return "/v3/kv/range";
}

/*
 * Adders that mark a failure in *r (-ENOMEM), so that a body is built whole
 * or not at all; json-c takes the value, or it is freed here.
 */
static void add(json_object *o, const char *key, json_object *v, int *r)
{
	if (*r < 0 || !o || !v || json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		if (*r == 0)
			*r = -ENOMEM;
	}
}

static void add_int64(json_object *o, const char *key, int64_t n, int *r)
{
	char b[32];

	snprintf(b, sizeof(b), "%" PRId64, n);
	add(o, key, json_object_new_string(b), r);
}

static void add_bytes(json_object *o, const char *key, const void *p, size_t n, int *r)
{
	char *s = etcd_b64_encode(p, n);

	if (!s) {
		if (*r == 0)
			*r = -ENOMEM;
		return;
	}
	add(o, key, json_object_new_string(s), r);
	free(s);
}

static void add_span(json_object *o, const char *key, const char *range_end, bool prefix,
		     bool from_key, int *r)
{
	struct etcd_span sp;
	int k;

	if (*r < 0)
		return;
	k = etcd_span_of(key, range_end, prefix, from_key, &sp);
	if (k < 0) {
		*r = k;
		return;
	}
	add_bytes(o, "key", sp.key, sp.key_len, r);
	if (sp.end)
		add_bytes(o, "range_end", sp.end, sp.end_len, r);
	etcd_span_free(&sp);
}

/* The body of a request (RangeRequest, PutRequest, DeleteRangeRequest) as an object. */
static json_object *req_object(const struct etcd_req *q, int *r)
{
	json_object *o = json_object_new_object();

	if (!o) {
		*r = -ENOMEM;
		return NULL;
	}
	switch (q->type) {
	case ETCD_RANGE:
		add_span(o, q->key, q->range_end, q->prefix, q->from_key, r);
		if (q->revision)
			add_int64(o, "revision", q->revision, r);
		if (q->limit)
			add_int64(o, "limit", q->limit, r);
		if (q->keys_only)
			add(o, "keys_only", json_object_new_boolean(1), r);
		if (q->count_only)
			add(o, "count_only", json_object_new_boolean(1), r);
		break;
	case ETCD_PUT:
		add_span(o, q->key, NULL, false, false, r);
		add_bytes(o, "value", q->value ? q->value : "", q->value ? q->value_len : 0, r);
		if (q->lease)
			add_int64(o, "lease", q->lease, r);
		if (q->prev_kv)
			add(o, "prev_kv", json_object_new_boolean(1), r);
		break;
	case ETCD_DELETE:
		add_span(o, q->key, q->range_end, q->prefix, q->from_key, r);
		if (q->prev_kv)
			add(o, "prev_kv", json_object_new_boolean(1), r);
		break;
	}
	return o;
}

/* o as text into *ret (a new string), o released: 0, or r if it is a failure, or -ENOMEM. */
static int finish(json_object *o, int r, char **ret)
{
	const char *text;

	if (r == 0 && !o)
		r = -ENOMEM;
	if (r == 0) {
		text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							 JSON_C_TO_STRING_NOSLASHESCAPE);
		*ret = text ? strdup(text) : NULL;
		if (!*ret)
			r = -ENOMEM;
	}
	json_object_put(o);
	return r;
}

int etcd_json_kv_req(const struct etcd_req *q, char **ret)
{
	int r = 0;
	json_object *o = req_object(q, &r);

	return finish(o, r, ret);
}

static const char *const cmp_targets[] = { "VERSION", "CREATE", "MOD", "VALUE", "LEASE" };
static const char *const cmp_results[] = { "EQUAL", "GREATER", "LESS", "NOT_EQUAL" };

static json_object *cmp_object(const struct etcd_cmp *c, int *r)
{
	json_object *o = json_object_new_object();

	if (!o) {
		*r = -ENOMEM;
		return NULL;
	}
	if ((unsigned)c->target > ETCD_CMP_LEASE || (unsigned)c->result > ETCD_CMP_NOT_EQUAL) {
		*r = -EINVAL;
		return o;
	}
	add_span(o, c->key, NULL, false, false, r);
	add(o, "target", json_object_new_string(cmp_targets[c->target]), r);
	add(o, "result", json_object_new_string(cmp_results[c->result]), r);
	switch (c->target) {
	case ETCD_CMP_VERSION:
		add_int64(o, "version", c->n, r);
		break;
	case ETCD_CMP_CREATE:
		add_int64(o, "create_revision", c->n, r);
		break;
	case ETCD_CMP_MOD:
		add_int64(o, "mod_revision", c->n, r);
		break;
	case ETCD_CMP_VALUE:
		add_bytes(o, "value", c->value ? c->value : "", c->value ? c->value_len : 0, r);
		break;
	case ETCD_CMP_LEASE:
		add_int64(o, "lease", c->n, r);
		break;
	}
	return o;
}

static void add_ops(json_object *o, const char *key, const struct etcd_req *q, size_t n, int *r)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; arr && *r == 0 && i < n; i++) {
		json_object *op = json_object_new_object();
		const char *name = q[i].type == ETCD_PUT	   ? "request_put"
				   : q[i].type == ETCD_DELETE ? "request_delete_range"
							      : "request_range";

		add(op, name, req_object(&q[i], r), r);
		if (!op || json_object_array_add(arr, op) < 0) {
			json_object_put(op);
			if (*r == 0)
				*r = -ENOMEM;
		}
	}
	add(o, key, arr, r);
}

int etcd_json_txn_req(const struct etcd_txn *t, char **ret)
{
	json_object *o = json_object_new_object(), *cmps = json_object_new_array();
	int r = 0;

	for (size_t i = 0; cmps && r == 0 && i < t->n_cmp; i++) {
		json_object *c = cmp_object(&t->cmp[i], &r);

		if (!c || json_object_array_add(cmps, c) < 0) {
			json_object_put(c);
			if (r == 0)
				r = -ENOMEM;
		}
	}
	add(o, "compare", cmps, &r);
	add_ops(o, "success", t->success, t->n_success, &r);
	add_ops(o, "failure", t->failure, t->n_failure, &r);
	return finish(o, r, ret);
}

int etcd_json_compact_req(int64_t revision, char **ret)
{
	json_object *o = json_object_new_object();
	int r = 0;

	add_int64(o, "revision", revision, &r);
	return finish(o, r, ret);
}

int etcd_json_lease_req(int64_t ttl, int64_t id, char **ret)
{
	json_object *o = json_object_new_object();
	int r = 0;

	if (ttl >= 0)
		add_int64(o, "TTL", ttl, &r);
	add_int64(o, "ID", id, &r);
	return finish(o, r, ret);
}

int etcd_json_watch_req(const struct etcd_watch_req *w, char **ret)
{
	json_object *o = json_object_new_object(), *c = json_object_new_object();
	int r = 0;

	add_span(c, w->key, w->range_end, w->prefix, w->from_key, &r);
	if (w->start_revision)
		add_int64(c, "start_revision", w->start_revision, &r);
	if (w->prev_kv)
		add(c, "prev_kv", json_object_new_boolean(1), &r);
	add(o, "create_request", c, &r);
	return finish(o, r, ret);
}

int etcd_json_auth_req(const char *user, const char *password, char **ret)
{
	json_object *o = json_object_new_object();
	int r = 0;

	add(o, "name", json_object_new_string(user), &r);
	add(o, "password", json_object_new_string(password ? password : ""), &r);
	return finish(o, r, ret);
}

bool etcd_json_error(json_object *o, int *ret_code, const char **ret_msg)
{
	json_object *e, *v;
	const char *msg = NULL;
	int code = 2;

	if (!o || !json_object_object_get_ex(o, "error", &e))
		return false;
	if (json_object_is_type(e, json_type_object)) {
		/* A stream's error: {"error": {"grpc_code": N, "message": TEXT, ...}} */
		if (json_object_object_get_ex(e, "grpc_code", &v))
			code = json_object_get_int(v);
		if (json_object_object_get_ex(e, "message", &v))
			msg = json_object_get_string(v);
	} else if (json_object_is_type(e, json_type_string)) {
		if (json_object_get_string_len(e) == 0)
			return false; /* LeaseGrantResponse's own "error", empty: none */
		msg = json_object_get_string(e);
		if (json_object_object_get_ex(o, "code", &v))
			code = json_object_get_int(v);
		if (json_object_object_get_ex(o, "message", &v) &&
		    json_object_get_string_len(v) > 0)
			msg = json_object_get_string(v);
	} else {
		return false;
	}
	*ret_code = code;
	*ret_msg = msg ? msg : "unknown error";
	return true;
}

static const char *const grpc_names[] = {
	"OK",		    "Canceled",		"Unknown",	    "InvalidArgument",
	"DeadlineExceeded", "NotFound",		"AlreadyExists",    "PermissionDenied",
	"ResourceExhausted", "FailedPrecondition", "Aborted",	    "OutOfRange",
	"Unimplemented",    "Internal",		"Unavailable",	    "DataLoss",
	"Unauthenticated",
};

void etcd_cancel_reason(const char *reason, int *ret_code, const char **ret_desc)
{
	const char *p = strstr(reason, "code = "), *d;

	*ret_code = 2;
	*ret_desc = reason;
	if (!p)
		return;
	p += strlen("code = ");
	d = strstr(p, " desc = ");
	if (!d)
		return;
	for (size_t i = 0; i < sizeof(grpc_names) / sizeof(grpc_names[0]); i++) {
		size_t n = strlen(grpc_names[i]);

		if ((size_t)(d - p) == n && strncmp(p, grpc_names[i], n) == 0) {
			*ret_code = (int)i;
			*ret_desc = d + strlen(" desc = ");
			return;
		}
	}
}

void etcd_kv_clear(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

int etcd_json_kv(json_object *o, struct etcd_kv *ret)
{
	struct etcd_kv kv = { 0 };
	int r;

	if (!json_object_is_type(o, json_type_object))
		return -EBADMSG;
	r = get_bytes(o, "key", &kv.key, &kv.key_len);
	if (r == 0)
		r = get_bytes(o, "value", &kv.value, &kv.value_len);
	if (r == 0)
		r = etcd_json_int64(o, "create_revision", &kv.create_revision);
	if (r == 0)
		r = etcd_json_int64(o, "mod_revision", &kv.mod_revision);
	if (r == 0)
		r = etcd_json_int64(o, "version", &kv.version);
	if (r == 0)
		r = etcd_json_int64(o, "lease", &kv.lease);
	if (r < 0) {
		etcd_kv_clear(&kv);
		return r;
	}
	*ret = kv;
	return 0;
}

/* The pairs of array arr (NULL: none) into *ret, *n. */
static int kv_array(json_object *arr, struct etcd_kv **ret, size_t *n)
{
	size_t len = arr ? json_object_array_length(arr) : 0;
	struct etcd_kv *kvs;

	*ret = NULL;
	*n = 0;
	if (len == 0)
		return 0;
	kvs = calloc(len, sizeof(*kvs));
	if (!kvs)
		return -ENOMEM;
	*ret = kvs;
	for (size_t i = 0; i < len; i++) {
		int r = etcd_json_kv(json_object_array_get_idx(arr, i), &kvs[i]);

		if (r < 0)
			return r;
		(*n)++;
	}
	return 0;
}

void etcd_resp_clear(struct etcd_resp *r)
{
	for (size_t i = 0; i < r->n_kvs; i++)
		etcd_kv_clear(&r->kvs[i]);
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

int etcd_json_kv_resp(json_object *o, enum etcd_req_type t, struct etcd_resp *ret)
{
	struct etcd_resp resp = { .type = t };
	json_object *prev;
	int r;

	if (!json_object_is_type(o, json_type_object))
		return -EBADMSG;
	o = unwrap(o);
	r = header_revision(o, &resp.revision);
	switch (t) {
	case ETCD_RANGE:
		if (r == 0)
			r = etcd_json_int64(o, "count", &resp.count);
		resp.more = get_bool(o, "more");
		if (r == 0)
			r = kv_array(get_array(o, "kvs"), &resp.kvs, &resp.n_kvs);
		break;
	case ETCD_PUT:
		prev = get_obj(o, "prev_kv");
		if (r == 0 && prev) {
			resp.kvs = calloc(1, sizeof(*resp.kvs));
			r = resp.kvs ? etcd_json_kv(prev, resp.kvs) : -ENOMEM;
			if (r == 0)
				resp.n_kvs = 1;
		}
		break;
	case ETCD_DELETE:
		if (r == 0)
			r = etcd_json_int64(o, "deleted", &resp.count);
		if (r == 0)
			r = kv_array(get_array(o, "prev_kvs"), &resp.kvs, &resp.n_kvs);
		break;
	}
	if (r < 0) {
		etcd_resp_clear(&resp);
		return r;
	}
	*ret = resp;
	return 0;
}

void etcd_txn_resp_clear(struct etcd_txn_resp *r)
{
	for (size_t i = 0; i < r->n_resps; i++)
		etcd_resp_clear(&r->resps[i]);
	free(r->resps);
	memset(r, 0, sizeof(*r));
}

int etcd_json_txn_resp(json_object *o, struct etcd_txn_resp *ret)
{
	struct etcd_txn_resp t = { 0 };
	json_object *arr;
	size_t len;
	int r;

	if (!json_object_is_type(o, json_type_object))
		return -EBADMSG;
	r = header_revision(o, &t.revision);
	t.succeeded = get_bool(o, "succeeded");
	arr = get_array(o, "responses");
	len = arr ? json_object_array_length(arr) : 0;
	if (r == 0 && len) {
		t.resps = calloc(len, sizeof(*t.resps));
		if (!t.resps)
			r = -ENOMEM;
	}
	for (size_t i = 0; r == 0 && i < len; i++) {
		json_object *op = json_object_array_get_idx(arr, i), *v;
		enum etcd_req_type type;

		if ((v = get_obj(op, "response_range")))
			type = ETCD_RANGE;
		else if ((v = get_obj(op, "response_put")))
			type = ETCD_PUT;
		else if ((v = get_obj(op, "response_delete_range")))
			type = ETCD_DELETE;
		else {
			r = -EBADMSG;
			break;
		}
		r = etcd_json_kv_resp(v, type, &t.resps[i]);
		if (r == 0) {
			/* The inner headers hold the revision only; it is the txn's. */
			t.resps[i].revision = t.revision;
			t.n_resps++;
		}
	}
	if (r < 0) {
		etcd_txn_resp_clear(&t);
		return r;
	}
	*ret = t;
	return 0;
}

int etcd_json_lease_resp(json_object *o, struct etcd_lease *ret)
{
	struct etcd_lease l = { 0 };
	int r;

	if (!json_object_is_type(o, json_type_object))
		return -EBADMSG;
	o = unwrap(o);
	r = header_revision(o, &l.revision);
	if (r == 0)
		r = etcd_json_int64(o, "ID", &l.id);
	if (r == 0)
		r = etcd_json_int64(o, "TTL", &l.ttl);
	if (r < 0)
		return r;
	*ret = l;
	return 0;
}

int etcd_json_auth_resp(json_object *o, char **ret_token)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, "token", &v) ||
	    !json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
		return -EBADMSG;
	*ret_token = strdup(json_object_get_string(v));
	return *ret_token ? 0 : -ENOMEM;
}

void etcd_watch_resp_clear(struct etcd_watch_resp *w)
{
	for (size_t i = 0; i < w->n_events; i++) {
		etcd_kv_clear(&w->events[i].kv);
		if (w->events[i].prev_kv)
			etcd_kv_clear(w->events[i].prev_kv);
		free(w->events[i].prev_kv);
	}
	free(w->events);
	memset(w, 0, sizeof(*w));
}

void etcd_watch_msg_clear(struct etcd_watch_msg *m)
{
	etcd_watch_resp_clear(&m->resp);
	free(m->msg);
	memset(m, 0, sizeof(*m));
}

static int event_of(json_object *o, struct etcd_event *ev)
{
	json_object *v, *kv = get_obj(o, "kv"), *prev = get_obj(o, "prev_kv");
	int r;

	if (!json_object_is_type(o, json_type_object) || !kv)
		return -EBADMSG;
	ev->type = ETCD_EVENT_PUT;
	if (json_object_object_get_ex(o, "type", &v)) {
		const char *s = json_object_get_string(v);

		if (json_object_is_type(v, json_type_int) ? json_object_get_int(v) == 1
							  : strcmp(s, "DELETE") == 0)
			ev->type = ETCD_EVENT_DELETE;
		else if (json_object_is_type(v, json_type_int) ? json_object_get_int(v) != 0
							       : strcmp(s, "PUT") != 0)
			return -EBADMSG;
	}
	r = etcd_json_kv(kv, &ev->kv);
	if (r < 0 || !prev)
		return r;
	ev->prev_kv = calloc(1, sizeof(*ev->prev_kv));
	if (!ev->prev_kv)
		return -ENOMEM;
	return etcd_json_kv(prev, ev->prev_kv);
}

static int end_with(struct etcd_watch_msg *m, int code, const char *text)
{
	m->kind = ETCD_WATCH_END;
	m->code = code;
	m->err = etcd_errno(code, text);
	m->msg = strdup(text);
	return m->msg ? 0 : -ENOMEM;
}

int etcd_json_watch_msg(json_object *o, struct etcd_watch_msg *ret)
{
	struct etcd_watch_msg m = { .kind = ETCD_WATCH_NOTHING };
	json_object *res, *events;
	const char *text;
	int code, r;
	size_t len;

	if (!o || !json_object_is_type(o, json_type_object))
		return -EBADMSG;
	if (etcd_json_error(o, &code, &text)) {
		r = end_with(&m, code, text);
		goto out;
	}
	res = get_obj(o, "result");
	if (!res)
		return -EBADMSG;
	r = header_revision(res, &m.resp.revision);
	if (r == 0)
		r = etcd_json_int64(res, "compact_revision", &m.resp.compact_revision);
	if (r < 0)
		goto out;
	if (m.resp.compact_revision > 0) {
		char b[128];

		snprintf(b, sizeof(b),
			 "etcdserver: mvcc: required revision has been compacted "
			 "(compact revision %" PRId64 ")",
			 m.resp.compact_revision);
		r = end_with(&m, 11, b);
		m.err = -ESTALE;
		goto out;
	}
	if (get_bool(res, "canceled")) {
		json_object *v;
		const char *reason = NULL, *desc;

		if (json_object_object_get_ex(res, "cancel_reason", &v))
			reason = json_object_get_string(v);
		if (!reason || !*reason) {
			r = end_with(&m, 1, "watch canceled by etcd");
			goto out;
		}
		etcd_cancel_reason(reason, &code, &desc);
		r = end_with(&m, code, desc);
		goto out;
	}
	events = get_array(res, "events");
	len = events ? json_object_array_length(events) : 0;
	if (len == 0)
		goto out;
	m.kind = ETCD_WATCH_EVENTS;
	m.resp.events = calloc(len, sizeof(*m.resp.events));
	if (!m.resp.events) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; r == 0 && i < len; i++) {
		/* Counted first, so that a clear frees what a failed decode half made. */
		m.resp.n_events++;
		r = event_of(json_object_array_get_idx(events, i), &m.resp.events[i]);
	}
out:
	if (r < 0) {
		etcd_watch_msg_clear(&m);
		return r;
	}
	*ret = m;
	return 0;
}

static bool any_text(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\n' && p[i] != '\r' && p[i] != '\t')
			return true;
	return false;
}

int etcd_stream_feed(struct etcd_stream *s, const char *buf, size_t len,
		     int (*fn)(void *ctx, json_object *o), void *ctx)
{
	if (!s->tok) {
		s->tok = json_tokener_new();
		if (!s->tok)
			return -ENOMEM;
	}
	while (len > 0) {
		int n = len > INT_MAX / 2 ? INT_MAX / 2 : (int)len;
		json_object *o = json_tokener_parse_ex(s->tok, buf, n);
		enum json_tokener_error jerr = json_tokener_get_error(s->tok);
		size_t used;
		int r;

		if (jerr == json_tokener_continue) {
			s->partial = s->partial || any_text(buf, (size_t)n);
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (jerr != json_tokener_success)
			return -EBADMSG;
		used = json_tokener_get_parse_end(s->tok);
		json_tokener_reset(s->tok);
		s->partial = false;
		if (!o)
			return -EBADMSG; /* a bare null */
		r = fn(ctx, o);
		if (r < 0)
			return r;
		buf += used;
		len -= used;
	}
	return 0;
}

void etcd_stream_free(struct etcd_stream *s)
{
	if (s->tok)
		json_tokener_free(s->tok);
	s->tok = NULL;
	s->partial = false;
}
