/* SPDX-License-Identifier: MIT */
/*
 * What drfd and drfctl agree on for the status socket's requests: how long a
 * request line may be, and how the words of a task request (and of the task
 * files, which hold the same words) are escaped.
 */
#ifndef DRF_PROTO_H
#define DRF_PROTO_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The longest request line, without its newline. A task-submit carries its
 * command, escaped; a longer line is refused whole, never cut.
 */
#define DRF_REQ_MAX 65536

/* An idempotency key: 1 to this many printable ASCII characters, no space. */
#define DRF_TASK_KEY_MAX 128

/* The escaping of words on the socket and in the task files: %XX for space, %, controls. */
char *drf_proto_escape(const char *s);
/* In place; -EINVAL for a bad escape. */
int drf_proto_unescape(char *s);

/*
 * Root's own socket beside the status socket: "X.sock" -> "X-root.sock", any
 * other path P -> "P-root". 0600, served for root alone, so that no user's
 * connections keep root out. 0, or -ENAMETOOLONG when it does not fit in len.
 */
int drf_proto_root_socket(const char *status_socket, char *buf, size_t len);

/* A key drfd takes: 1 to DRF_TASK_KEY_MAX printable ASCII characters, no space. */
bool drf_proto_key_valid(const char *key);

#endif
