/* SPDX-License-Identifier: MIT */
/*
 * etcd's JSON gateway, encoded and decoded (json-c): the bodies etcd.c posts
 * and what comes back. The gateway speaks protobuf's JSON mapping with the
 * .proto's own field names: bytes (keys, values) in base64, int64s as
 * strings ("revision": "12"), fields at their default (0, false, empty)
 * left out, so a missing field reads as zero. An error is
 * {"error": TEXT, "code": GRPC_CODE, "message": TEXT}; a streamed answer (the
 * watch, a lease's keepalive) is a run of {"result": {...}} objects, one a
 * line, and an error in a stream may also come as {"error": {"grpc_code": N,
 * "message": TEXT, ...}}. Pure: no I/O.
 */
#ifndef DRF_ETCDJSON_H
#define DRF_ETCDJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json_object.h>
#include <json-c/json_tokener.h>

#include "etcdmsg.h"

/* Base64 (RFC 4648, with padding) of n bytes: a new string, NULL without memory. */
char *etcd_b64_encode(const void *p, size_t n);
/*
 * The bytes of base64 text s (len bytes; standard or URL-safe alphabet,
 * padding optional, as protobuf's JSON accepts) into a new buffer followed by
 * a NUL: 0, -EBADMSG for text that is not base64, -ENOMEM.
 */
int etcd_b64_decode(const char *s, size_t len, char **ret, size_t *ret_len);

/* The int64 under key in o: a string of digits or a JSON integer; 0 when absent. -EBADMSG else. */
int etcd_json_int64(json_object *o, const char *key, int64_t *ret);

/* The gateway's path of a request's type ("/v3/kv/range", ...). */
const char *etcd_path_of(enum etcd_req_type t);

/* Request bodies, as new strings in *ret: 0 or -ENOMEM (-EINVAL for an empty key alone). */
int etcd_json_kv_req(const struct etcd_req *r, char **ret);
int etcd_json_txn_req(const struct etcd_txn *t, char **ret);
int etcd_json_compact_req(int64_t revision, char **ret);
/* {"TTL": ttl, "ID": id}; a ttl < 0 is left out (keepalive, revoke) */
int etcd_json_lease_req(int64_t ttl, int64_t id, char **ret);
int etcd_json_watch_req(const struct etcd_watch_req *w, char **ret);
int etcd_json_auth_req(const char *user, const char *password, char **ret);

/*
 * Whether o is the gateway's error (either form above): its gRPC code
 * (2, Unknown, if it has none) and message (borrowed from o) in *ret_code
 * and *ret_msg.
 */
bool etcd_json_error(json_object *o, int *ret_code, const char **ret_msg);

/*
 * The gRPC code of a status name as a watch's cancel_reason gives it ("rpc
 * error: code = PermissionDenied desc = etcdserver: permission denied"), and
 * where its message starts, into *ret_code and *ret_desc; 2 (Unknown) and
 * the whole text for one in another form.
 */
void etcd_cancel_reason(const char *reason, int *ret_code, const char **ret_desc);

/*
 * Responses into results whose memory is theirs: freed by the matching
 * clear (which leaves the result zeroed; clearing twice is fine). 0, or
 * -EBADMSG for a body that is not such a response, -ENOMEM. A streamed
 * answer's {"result": ...} is looked into.
 */
int etcd_json_kv_resp(json_object *o, enum etcd_req_type t, struct etcd_resp *ret);
void etcd_resp_clear(struct etcd_resp *r);
int etcd_json_txn_resp(json_object *o, struct etcd_txn_resp *ret);
void etcd_txn_resp_clear(struct etcd_txn_resp *r);
int etcd_json_lease_resp(json_object *o, struct etcd_lease *ret);
/* An authenticate's token, a new string. */
int etcd_json_auth_resp(json_object *o, char **ret_token);
/* One key-value pair (an element of "kvs", an event's "kv"). */
int etcd_json_kv(json_object *o, struct etcd_kv *ret);
void etcd_kv_clear(struct etcd_kv *kv);

/* What one object of a watch's stream says. */
enum etcd_watch_kind {
	ETCD_WATCH_NOTHING, /* created, or a progress notice without events */
	ETCD_WATCH_EVENTS,  /* resp holds a batch */
	ETCD_WATCH_END,     /* the watch ended: err, code and msg say why */
};

struct etcd_watch_msg {
	enum etcd_watch_kind kind;
	struct etcd_watch_resp resp; /* EVENTS; END with -ESTALE: compact_revision */
	int err;                     /* END: a negative errno */
	int code;                    /* END: the gRPC code (16: the token was refused) */
	char *msg;                   /* END: etcd's text, a new string */
};

int etcd_json_watch_msg(json_object *o, struct etcd_watch_msg *ret);
void etcd_watch_msg_clear(struct etcd_watch_msg *m);
void etcd_watch_resp_clear(struct etcd_watch_resp *w);

/*
 * A stream of JSON objects one after another (what separates them, if
 * anything, is whitespace), cut anywhere by the transport: fed as bytes
 * come, each whole object goes to fn, which takes it (json_object_put is
 * its to call). A zeroed struct is a stream not yet begun.
 */
struct etcd_stream {
	json_tokener *tok;
	bool partial; /* part of an object was fed and not ended */
};

/* 0, -EBADMSG (text that is not JSON: the stream cannot go on), -ENOMEM, or fn's error. */
int etcd_stream_feed(struct etcd_stream *s, const char *buf, size_t len,
		     int (*fn)(void *ctx, json_object *o), void *ctx);
void etcd_stream_free(struct etcd_stream *s);

#endif
