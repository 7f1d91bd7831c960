/* SPDX-License-Identifier: MIT */
/* drfctl's side of drfd's status socket (see agent/daemon/listener.c). */
#ifndef DRF_CLIENT_H
#define DRF_CLIENT_H

#include <stddef.h>

/*
 * Sends one request line (without '\n') and reads the answer until drfd
 * closes the connection, waiting at most timeout_ms for each part of it (a
 * status comes a part at a time: a slow host's takes long, a silent one
 * times out). Returns 0 with the answer in
 * *ret (NUL-terminated, free()), -ENOENT or -ECONNREFUSED when no drfd serves
 * the socket, -EBUSY when drfd turned the connection away (over its limits on
 * connections), -ETIMEDOUT, or another -errno.
 */
int drf_client_ask(const char *socket_path, const char *request, int timeout_ms, char **ret,
		   size_t *ret_len);

/*
 * A status answer of drfd (listener.c): "drfd-status 2\n", the body, then the
 * trailer "drfd-status-end problems=N\n". Anything else is not a status to
 * show: drfctl says what it got and prints nothing of it.
 */
enum drf_status_fail {
	DRF_STATUS_WHOLE,       /* the whole status: body, problems */
	DRF_STATUS_CUT,         /* no trailer: the connection closed before the end (len bytes) */
	DRF_STATUS_REFUSED,     /* "drfd-status 2 error=REASON", no body (no-such-tenant, ...) */
	DRF_STATUS_FAILED,      /* the trailer "drfd-status-end error=REASON": no status */
	DRF_STATUS_ALIEN,       /* not a status answer of this version (an older drfd's) */
};

struct drf_client_status {
	char *answer;           /* the whole answer, NUL-terminated (free) */
	size_t len;             /* its bytes, as they came */
	enum drf_status_fail fail;
	char reason[64];        /* drfd's REASON, for REFUSED and FAILED */
	const char *body;       /* WHOLE: within answer, NUL-terminated where the trailer was */
	size_t body_len;
	int problems;           /* WHOLE: the trailer's count */
	unsigned asked;         /* answers asked for, the retries included */
};

/*
 * Checks answer (len bytes, NUL-terminated, taken into ret: free it with
 * drf_client_status_free()): 0 for a whole status, else -EPROTO with what it
 * is in ret->fail.
 */
int drf_client_status_parse(char *answer, size_t len, struct drf_client_status *ret);

/*
 * Asks for a status (request: "status json", "status text NAME", ...) and
 * checks the answer; one that ends "error=changed" (the plan changed while it
 * was sent) is asked for again, up to DRF_CLIENT_STATUS_RETRIES times. 0 for a
 * whole status, -EPROTO with ret->fail, or drf_client_ask()'s -errno.
 */
#define DRF_CLIENT_STATUS_RETRIES 3
int drf_client_status(const char *socket_path, const char *request, int timeout_ms,
		      struct drf_client_status *ret);
void drf_client_status_free(struct drf_client_status *s);

#endif
