// SPDX-License-Identifier: MIT
/*
 * drfd's answers as drfctl shows them, for every command that asks: the
 * status socket's path, a task request and its verdict (submit, cancel,
 * exec), and drfd's text printed with its control characters escaped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "config.h"
#include "host.h"
#include "text.h"

#define TASK_TIMEOUT_MS 10000

int drfctl_print_text(FILE *out, const char *text)
{
	size_t n = DRF_ESCAPED_SIZE(strlen(text));
	char *e = malloc(n);
	int r;

	if (!e)
		return -ENOMEM;
	r = fputs(drf_escape_text(text, e, n), out) < 0 ? -EIO : 0;
	free(e);
	return r;
}

void drfctl_socket_of(const char *config, const char *sock, char *ret, size_t len)
{
	struct drf_config cfg;
	char err[2048];

	if (sock) {
		snprintf(ret, len, "%s", sock);
		return;
	}
	snprintf(ret, len, "%s", DRFCTL_DEFAULT_SOCKET);
	if (drf_config_load(config, &drf_host_real, &cfg, err, sizeof(err)) == 0) {
		snprintf(ret, len, "%s", cfg.status_socket);
		drf_config_free(&cfg);
	}
}

int drfctl_task_ask(const char *cmd, const char *sock, const char *req, FILE *out, char *id,
		    size_t idlen)
{
	char *answer = NULL, *body, what[32] = "";
	size_t n;
	int r = drf_client_ask(sock, req, TASK_TIMEOUT_MS, &answer, &n);

	if (r < 0) {
		fprintf(stderr, "drfctl %s: cannot ask drfd at %s: %s%s\n", cmd, sock, strerror(-r),
			r == -ENOENT || r == -ECONNREFUSED ? " (is it running?)"
			: r == -EACCES ? " (root, or a member of the config's status-group)"
			: r == -EBUSY ? " (it holds as many connections as it takes; try again)"
				      : "");
		free(answer);
		return EXIT_FAILURE;
	}
	if (sscanf(answer, "drfd-task 1 %31s", what) != 1) {
		answer[strcspn(answer, "\n")] = '\0';
		answer[strnlen(answer, 80)] = '\0';
		fprintf(stderr, "drfctl %s: drfd answered something else: ", cmd);
		drfctl_print_text(stderr, answer);
		fputc('\n', stderr);
		free(answer);
		return EXIT_FAILURE;
	}
	body = strchr(answer, '\n');
	body = body ? body + 1 : answer + n;
	if (strcmp(what, "ok") != 0) {
		body[strcspn(body, "\n")] = '\0';
		fprintf(stderr, "drfctl %s: %s", cmd, strcmp(what, "refused") == 0 ? "refused: " : "");
		drfctl_print_text(stderr, body);
		fputc('\n', stderr);
		free(answer);
		return strcmp(what, "refused") == 0 ? DRFCTL_EXIT_CONFIG : EXIT_FAILURE;
	}
	if (id && sscanf(answer, "drfd-task 1 ok %31s", what) == 1)
		snprintf(id, idlen, "%s", what);
	r = out ? drfctl_print_text(out, body) : 0;
	free(answer);
	return r == 0 && fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
