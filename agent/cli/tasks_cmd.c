// SPDX-License-Identifier: MIT
/*
 * drfctl submit, tasks and cancel: the task queue of the running drfd, over its
 * status socket (agent/daemon/taskd.c has the requests). Exit codes: 0 ok,
 * 1 failure (no drfd, or it could not), 2 refused (unknown tenant, a task the
 * node cannot hold, not yours, a request over drfd's limit), 64 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "client.h"
#include "config.h"
#include "res.h"
#include "proto.h"
#include "vec.h"

static int add_word(char **buf, size_t *len, size_t *cap, const char *w)
{
	char *e = drf_proto_escape(w);
	size_t n;

	if (!e)
		return -ENOMEM;
	n = strlen(e);
	if (DRF_VEC_GROW(*buf, cap, *len + n + 2) < 0) {
		free(e);
		return -ENOMEM;
	}
	if (*len)
		(*buf)[(*len)++] = ' ';
	memcpy(*buf + *len, e, n + 1);
	*len += n;
	free(e);
	return 0;
}

static const struct option submit_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "socket", required_argument, NULL, 's' },
	{ "cpu", required_argument, NULL, DRF_RES_CPU + 1000 },
	{ "memory", required_argument, NULL, DRF_RES_MEMORY + 1000 },
	{ "io-read-bps", required_argument, NULL, DRF_RES_IO_READ + 1000 },
	{ "io-write-bps", required_argument, NULL, DRF_RES_IO_WRITE + 1000 },
	{ "net-rate", required_argument, NULL, DRF_RES_NET + 1000 },
	{ "key", required_argument, NULL, 'k' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct submit_args {
	const char *config, *sock, *key;
	double vec[DRF_NRES];
	unsigned given;
};

/* Options up to the first word; -1 to go on, else the exit code. */
static int submit_options(int argc, char **argv, struct submit_args *a)
{
	int opt;

	while ((opt = drfctl_getopt(argc, argv, "+c:h", submit_opts, "submit")) != -1) {
		const char *why = NULL;
		int res = opt - 1000;

		if (opt == 'c') {
			a->config = optarg;
		} else if (opt == 's') {
			a->sock = optarg;
		} else if (opt == 'k') {
			if (!drf_proto_key_valid(optarg)) {
				fprintf(stderr, "drfctl submit: --key '%s': 1 to %d printable "
					"characters, no space\n", optarg, DRF_TASK_KEY_MAX);
				return DRFCTL_EXIT_USAGE;
			}
			a->key = optarg;
		} else if (opt == 'h') {
			drfctl_help(stdout, "submit");
			return EXIT_SUCCESS;
		} else if (res >= 0 && res < DRF_NRES) {
			if (drf_parse_quantity(optarg, drf_res_unit(res), &a->vec[res], &why) < 0) {
				const char *name = "";

				for (const struct option *o = submit_opts; o->name; o++)
					if (o->val == opt)
						name = o->name;
				fprintf(stderr, "drfctl submit: --%s '%s': %s\n", name, optarg, why);
				return DRFCTL_EXIT_USAGE;
			}
			a->given |= 1u << res;
		} else {
			return DRFCTL_EXIT_USAGE;
		}
	}
	return -1;
}

int drfctl_submit(int argc, char **argv)
{
	struct submit_args a = { .config = DRFCTL_DEFAULT_CONFIG };
	char sock[4096], cwd[PATH_MAX], num[64], id[32] = "?", *req = NULL;
	const char *tenant;
	size_t len = 0, cap = 0;
	int i, r;

	/* Options before TENANT, then after it, up to "--" or CMD. */
	r = submit_options(argc, argv, &a);
	if (r >= 0)
		return r;
	if (optind >= argc) {
		fputs("drfctl submit: which tenant? usage: drfctl submit TENANT [--cpu N] "
		      "[--memory SIZE] ... -- CMD [ARG...]\n", stderr);
		return DRFCTL_EXIT_USAGE;
	}
	tenant = argv[optind];
	optind++;
	r = submit_options(argc, argv, &a);
	if (r >= 0)
		return r;
	i = optind;
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc) {
		fputs("drfctl submit: no command; usage: drfctl submit TENANT [options] -- "
		      "CMD [ARG...]\n", stderr);
		return DRFCTL_EXIT_USAGE;
	}
	/* The task runs where this runs, or not at all: never in "/" instead. */
	if (!getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "drfctl submit: cannot tell the working directory: %s; the task "
			"would run there (cd to a directory that exists, shorter than %d bytes)\n",
			strerror(errno), PATH_MAX);
		return EXIT_FAILURE;
	}
	/* With a key, a request a drfd without keys refuses, rather than run twice. */
	r = add_word(&req, &len, &cap, a.key ? "task-submit-key" : "task-submit");
	if (r == 0 && a.key)
		r = add_word(&req, &len, &cap, a.key);
	if (r == 0)
		r = add_word(&req, &len, &cap, tenant);
	if (r == 0)
		r = add_word(&req, &len, &cap, cwd);
	snprintf(num, sizeof(num), "%x", a.given);
	if (r == 0)
		r = add_word(&req, &len, &cap, num);
	for (int k = 0; k < DRF_NRES && r == 0; k++) {
		snprintf(num, sizeof(num), "%.17g", a.vec[k]);
		r = add_word(&req, &len, &cap, num);
	}
	for (; i < argc && r == 0; i++)
		r = add_word(&req, &len, &cap, argv[i]);
	if (r < 0) {
		fprintf(stderr, "drfctl submit: %s\n", strerror(-r));
		free(req);
		return EXIT_FAILURE;
	}
	/* drfd refuses a longer request whole: said here, without asking. */
	if (len > DRF_REQ_MAX) {
		fprintf(stderr, "drfctl submit: refused: the request would be %zu bytes, and drfd "
			"takes at most %d (the command and its arguments, escaped, with the "
			"working directory); pass long arguments in a file\n", len, DRF_REQ_MAX);
		free(req);
		return DRFCTL_EXIT_CONFIG;
	}
	drfctl_socket_of(a.config, a.sock, sock, sizeof(sock));
	r = drfctl_task_ask("submit", sock, req, NULL, id, sizeof(id));
	free(req);
	if (r == EXIT_SUCCESS)
		printf("%s\n", id);
	return r;
}

int drfctl_tasks(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = DRFCTL_DEFAULT_CONFIG, *sockopt = NULL;
	char sock[4096];
	bool json = false;
	int opt;

	while ((opt = drfctl_getopt(argc, argv, "c:h", opts, "tasks")) != -1) {
		if (opt == 'c') {
			config = optarg;
		} else if (opt == 's') {
			sockopt = optarg;
		} else if (opt == 'j') {
			json = true;
		} else if (opt == 'h') {
			drfctl_help(stdout, "tasks");
			return EXIT_SUCCESS;
		} else {
			return DRFCTL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "drfctl tasks: unexpected argument '%s'\n", argv[optind]);
		return DRFCTL_EXIT_USAGE;
	}
	drfctl_socket_of(config, sockopt, sock, sizeof(sock));
	return drfctl_task_ask("tasks", sock, json ? "tasks json" : "tasks text", stdout, NULL, 0);
}

int drfctl_cancel(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = DRFCTL_DEFAULT_CONFIG, *sockopt = NULL;
	char sock[4096], req[64], *end;
	unsigned long long id;
	int opt;

	while ((opt = drfctl_getopt(argc, argv, "c:h", opts, "cancel")) != -1) {
		if (opt == 'c') {
			config = optarg;
		} else if (opt == 's') {
			sockopt = optarg;
		} else if (opt == 'h') {
			drfctl_help(stdout, "cancel");
			return EXIT_SUCCESS;
		} else {
			return DRFCTL_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fputs("drfctl cancel: one task id; usage: drfctl cancel ID\n", stderr);
		return DRFCTL_EXIT_USAGE;
	}
	errno = 0;
	id = strtoull(argv[optind], &end, 10);
	if (errno || *end || end == argv[optind] || argv[optind][0] == '-' || id == 0) {
		fprintf(stderr, "drfctl cancel: '%s' is no task id (a number from drfctl tasks)\n",
			argv[optind]);
		return DRFCTL_EXIT_USAGE;
	}
	snprintf(req, sizeof(req), "task-cancel %llu", id);
	drfctl_socket_of(config, sockopt, sock, sizeof(sock));
	return drfctl_task_ask("cancel", sock, req, NULL, NULL, 0);
}
