/* SPDX-License-Identifier: MIT */
/* drfctl's side of drfd's status socket (see agent/daemon/listener.c). */
#ifndef DRF_CLIENT_H
#define DRF_CLIENT_H

#include <stddef.h>

/*
 * Sends one request line (without '\n') and reads the answer until drfd
 * closes the connection, for at most timeout_ms. Returns 0 with the answer in
 * *ret (NUL-terminated, free()), -ENOENT or -ECONNREFUSED when no drfd serves
 * the socket, -EBUSY when drfd turned the connection away (over its limits on
 * connections), -ETIMEDOUT, or another -errno.
 */
int drf_client_ask(const char *socket_path, const char *request, int timeout_ms, char **ret,
		   size_t *ret_len);

#endif
