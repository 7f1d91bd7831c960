// SPDX-License-Identifier: MIT
#include "client.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "proto.h"
#include "vec.h"

static long long now_ms(void)
{
	return (long long)(drf_mono_usec(&drf_clock_system) / DRF_USEC_PER_MSEC);
}

/* A connection to sa: its fd, or -errno (-ETIMEDOUT: drfd's backlog stayed full). */
static int connect_to(const struct sockaddr_un *sa, int timeout_ms)
{
	struct timeval tv;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return -errno;
	/* connect waits while drfd's backlog is full, send while its buffer is: not forever. */
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
		return fd;
	r = errno == EAGAIN ? -ETIMEDOUT : -errno;
	close(fd);
	return r;
}

int drf_client_ask(const char *socket_path, const char *request, int timeout_ms, char **ret,
		   size_t *ret_len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long long deadline = now_ms() + timeout_ms;
	char *buf = NULL, *line = NULL;
	size_t len = 0, cap = 0;
	int fd, r = 0, n, sent = 0;

	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	/* Root asks on its own socket, which no user's connections fill; else (an older drfd) here. */
	fd = -1;
	if (geteuid() == 0 &&
	    drf_proto_root_socket(socket_path, sa.sun_path, sizeof(sa.sun_path)) == 0)
		fd = connect_to(&sa, timeout_ms);
	if (fd < 0) {
		memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
		fd = connect_to(&sa, timeout_ms);
	}
	if (fd < 0)
		return fd;
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
		/* An answer that comes in parts (a status) has timeout_ms for each, not in all. */
		deadline = now_ms() + timeout_ms;
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
	/* Over drfd's limits on connections: no answer to the request (an older drfd's too). */
	if (strcmp(buf, "drfd-status 2 error=busy\n") == 0 ||
	    strcmp(buf, "drfd-status 1 error=busy\n") == 0) {
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

/* Whether the n bytes at s begin with prefix. */
static bool starts(const char *s, size_t n, const char *prefix)
{
	return n >= strlen(prefix) && memcmp(s, prefix, strlen(prefix)) == 0;
}

/* "REASON\n" at s (n bytes, the newline last) into reason. */
static void reason_of(const char *s, size_t n, char *reason, size_t len)
{
	size_t k = n > 0 ? n - 1 : 0;

	snprintf(reason, len, "%.*s", (int)(k < len ? k : len - 1), s);
}

int drf_client_status_parse(char *answer, size_t len, struct drf_client_status *ret)
{
	static const char head[] = "drfd-status 2\n", refused[] = "drfd-status 2 error=";
	static const char whole[] = "drfd-status-end problems=";
	static const char failed[] = "drfd-status-end error=";
	const char *last;
	char *end;
	long problems;
	size_t at;

	ret->answer = answer;
	ret->len = len;
	ret->body = NULL;
	ret->body_len = 0;
	ret->problems = 0;
	ret->reason[0] = '\0';
	if (starts(answer, len, refused) && answer[len - 1] == '\n' &&
	    !memchr(answer, '\n', len - 1)) {
		reason_of(answer + sizeof(refused) - 1, len - (sizeof(refused) - 1), ret->reason,
			  sizeof(ret->reason));
		ret->fail = DRF_STATUS_REFUSED;
		return -EPROTO;
	}
	/* The trailer is the last line, after the first: an answer cut short has none. */
	ret->fail = DRF_STATUS_CUT;
	/* Closed before the first line was whole (or at once): cut short as well. */
	if (len < sizeof(head) - 1 && memcmp(answer, head, len) == 0)
		return -EPROTO;
	if (!starts(answer, len, head)) {
		ret->fail = DRF_STATUS_ALIEN;
		return -EPROTO;
	}
	if (answer[len - 1] != '\n' || len < sizeof(head))
		return -EPROTO;
	for (at = len - 1; at > sizeof(head) - 1 && answer[at - 1] != '\n'; at--)
		;
	last = answer + at;
	if (starts(last, len - at, failed)) {
		reason_of(last + sizeof(failed) - 1, len - at - (sizeof(failed) - 1), ret->reason,
			  sizeof(ret->reason));
		ret->fail = DRF_STATUS_FAILED;
		return -EPROTO;
	}
	if (!starts(last, len - at, whole))
		return -EPROTO;
	errno = 0;
	problems = strtol(last + sizeof(whole) - 1, &end, 10);
	if (errno || end != answer + len - 1 || end == last + sizeof(whole) - 1 || problems < 0 ||
	    problems > INT_MAX)
		return -EPROTO;
	ret->fail = DRF_STATUS_WHOLE;
	ret->problems = (int)problems;
	ret->body = answer + sizeof(head) - 1;
	ret->body_len = (size_t)(last - ret->body);
	/* Printed as text: the trailer's line goes, the body keeps its own newline. */
	answer[at] = '\0';
	return 0;
}

int drf_client_status(const char *socket_path, const char *request, int timeout_ms,
		      struct drf_client_status *ret)
{
	int r;

	*ret = (struct drf_client_status){ 0 };
	for (ret->asked = 1;; ret->asked++) {
		char *answer = NULL;
		size_t len = 0;

		free(ret->answer);
		ret->answer = NULL;
		r = drf_client_ask(socket_path, request, timeout_ms, &answer, &len);
		if (r < 0)
			return r;
		r = drf_client_status_parse(answer, len, ret);
		/* Two plans would have been mixed: a new answer shows the one in force now. */
		if (r == 0 || ret->fail != DRF_STATUS_FAILED ||
		    strcmp(ret->reason, "changed") != 0 || ret->asked > DRF_CLIENT_STATUS_RETRIES)
			return r;
	}
}

void drf_client_status_free(struct drf_client_status *s)
{
	free(s->answer);
	*s = (struct drf_client_status){ 0 };
}
