// SPDX-License-Identifier: MIT
#include "client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "vec.h"

static long long now_ms(void)
{
	return (long long)(drf_mono_usec(&drf_clock_system) / DRF_USEC_PER_MSEC);
}

int drf_client_ask(const char *socket_path, const char *request, int timeout_ms, char **ret,
		   size_t *ret_len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long long deadline = now_ms() + timeout_ms;
	struct timeval tv;
	char *buf = NULL, *line = NULL;
	size_t len = 0, cap = 0;
	int fd, r = 0, n, sent = 0;

	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* connect waits while drfd's backlog is full, send while its buffer is: not forever. */
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = errno == EAGAIN ? -ETIMEDOUT : -errno;
		goto out;
	}
	/* One line, as long as the request (a task-submit carries a command). */
	n = asprintf(&line, "%s\n", request);
	if (n < 0) {
		line = NULL;
		r = -ENOMEM;
		goto out;
	}
	if (send(fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
		r = errno == EAGAIN ? -ETIMEDOUT : -errno;
		/* Closed on us: drfd may have said why before it closed. */
		if (r != -EPIPE && r != -ECONNRESET)
			goto out;
		sent = r;
		r = 0;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t got;

		if (left <= 0) {
			r = -ETIMEDOUT;
			goto out;
		}
		if (poll(&p, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		if (DRF_VEC_GROW(buf, &cap, len + 4096 + 1) < 0) {
			r = -ENOMEM;
			goto out;
		}
		got = read(fd, buf + len, cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		/* drfd closed with some of the request unread (a refusal): the answer came. */
		if (got < 0 && errno == ECONNRESET && len > 0)
			break;
		if (got < 0) {
			r = -errno;
			goto out;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	if (len == 0 && sent) {
		r = sent;
		goto out;
	}
	if (!buf) {
		buf = malloc(1);
		if (!buf) {
			r = -ENOMEM;
			goto out;
		}
	}
	buf[len] = '\0';
	/* Over drfd's limits on connections: no answer to the request. */
	if (strcmp(buf, "drfd-status 1 error=busy\n") == 0) {
		r = -EBUSY;
		goto out;
	}
	*ret = buf;
	*ret_len = len;
	buf = NULL;
out:
	free(line);
	free(buf);
	close(fd);
	return r;
}
