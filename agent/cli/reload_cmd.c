// SPDX-License-Identifier: MIT
/*
 * drfctl reload: asks the running drfd to reload its config over the status
 * socket ("reload", agent/daemon/listener.c) and waits for the verdict. Exit
 * codes: 0 the new config is in force, 2 refused (a config error, or a change
 * of a key that needs a restart: the reason on stderr), 1 any other failure
 * (no drfd answers, or the asker is not root), 64 usage.
 *
 * And what `drfctl plan` says of a config against the running drfd: which of
 * its start-only keys differ from those in force (startkeys.h), read from the
 * daemon's status.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "client.h"
#include "config.h"
#include "json.h"
#include "startkeys.h"

/* A reload takes about 50 ms at 10,000 tenants; far more than that is a drfd that hangs. */
#define RELOAD_TIMEOUT_MS 60000
#define STATUS_TIMEOUT_MS 10000

int drfctl_reload(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = DRFCTL_DEFAULT_CONFIG, *sockopt = NULL;
	char sock[4096], what[32] = "", *answer = NULL, *body;
	size_t n;
	int opt, r;

	while ((opt = drfctl_getopt(argc, argv, "c:h", opts, "reload")) != -1) {
		if (opt == 'c') {
			config = optarg;
		} else if (opt == 's') {
			sockopt = optarg;
		} else if (opt == 'h') {
			drfctl_help(stdout, "reload");
			return EXIT_SUCCESS;
		} else {
			return DRFCTL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "drfctl reload: unexpected argument '%s'\n", argv[optind]);
		return DRFCTL_EXIT_USAGE;
	}
	drfctl_socket_of(config, sockopt, sock, sizeof(sock));
	r = drf_client_ask(sock, "reload", RELOAD_TIMEOUT_MS, &answer, &n);
	if (r < 0) {
		fprintf(stderr, "drfctl reload: cannot ask drfd at %s: %s%s\n", sock, strerror(-r),
			r == -ENOENT || r == -ECONNREFUSED ? " (is it running? systemctl status drfd)"
			: r == -EACCES ? " (only root may reload drfd)"
			: r == -EBUSY ? " (it holds as many connections as it takes; try again)"
				      : "");
		return EXIT_FAILURE;
	}
	if (sscanf(answer, "drfd-reload 1 %31s", what) != 1) {
		/* A drfd from before `reload` says it does not know the request. */
		answer[strcspn(answer, "\n")] = '\0';
		answer[strnlen(answer, 80)] = '\0';
		fputs("drfctl reload: drfd answered something else: ", stderr);
		drfctl_print_text(stderr, answer);
		fputs(strstr(answer, "unknown-request") ? " (a drfd older than drfctl: send it "
							   "SIGHUP, and read its log)\n" : "\n",
		      stderr);
		free(answer);
		return EXIT_FAILURE;
	}
	body = strchr(answer, '\n');
	body = body ? body + 1 : answer + n;
	if (strcmp(what, "ok") == 0) {
		body[strcspn(body, "\n")] = '\0';
		r = drfctl_print_text(stdout, body);
		if (r == 0 && (fputc('\n', stdout) == EOF || fflush(stdout) != 0))
			r = -EIO;
		free(answer);
		return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
	}
	fprintf(stderr, "drfctl reload: %s: ", strcmp(what, "refused") == 0
		? "refused, the configuration before stays in force" : "not allowed");
	/* the reason: a line, or a config's errors, a line each */
	for (char *l = body, *end; *l; l = end) {
		end = l + strcspn(l, "\n");
		if (*end)
			*end++ = '\0';
		if (l != body)
			fputs("drfctl reload: ", stderr);
		drfctl_print_text(stderr, l);
		fputc('\n', stderr);
	}
	if (!*body)
		fputc('\n', stderr);
	r = strcmp(what, "refused") == 0 ? DRFCTL_EXIT_CONFIG : EXIT_FAILURE;
	free(answer);
	return r;
}

/* o's member key as a string, or NULL (absent, null, or not a string). */
static const char *str_of(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int drfctl_plan_running(const struct drf_config *cfg, struct drfctl_running *ret)
{
	struct drf_start_keys in_force, now;
	json_object *doc, *so = NULL, *v = NULL;
	struct drf_client_status st;
	int r;

	*ret = (struct drfctl_running){ 0 };
	/* A whole status only: one cut short would compare with keys it does not hold. */
	r = drf_client_status(cfg->status_socket, "status json", STATUS_TIMEOUT_MS, &st);
	if (r < 0 && r != -EPROTO)
		return r;
	doc = r == 0 ? json_tokener_parse(st.body) : NULL;
	drf_client_status_free(&st);
	if (!doc)
		return -EPROTO;
	/* A drfd from before the start-only keys were in its status: nothing to compare with. */
	if (!json_object_object_get_ex(doc, "start_only", &so) ||
	    !json_object_is_type(so, json_type_object)) {
		json_object_put(doc);
		return -EPROTONOSUPPORT;
	}
	in_force = (struct drf_start_keys){
		.cgroup_root = str_of(so, "cgroup-root"), .io_device = str_of(so, "io-device"),
		.net_device = str_of(so, "net-device"), .state_dir = str_of(so, "state-dir"),
		.status_socket = str_of(so, "status-socket"),
		.status_group = str_of(so, "status-group"),
	};
	if (json_object_object_get_ex(so, "net-replace-qdisc", &v))
		in_force.net_replace_qdisc = json_object_get_boolean(v);
	if (json_object_object_get_ex(doc, "pid", &v))
		ret->pid = json_object_get_int(v);
	drf_start_keys_of(cfg, &now);
	ret->n = drf_start_keys_diff(&in_force, &now, ret->ch);
	ret->doc = doc;
	return 0;
}

void drfctl_running_free(struct drfctl_running *r)
{
	json_object_put(r->doc);
	*r = (struct drfctl_running){ 0 };
}

int drfctl_plan_print_running(FILE *out, const struct drfctl_running *run)
{
	char what[1024];

	fprintf(out, "\nagainst the running drfd (pid %d):", run->pid);
	if (run->n == 0)
		fputs(" no start-only key differs; a reload can take this config\n", out);
	else
		fputc('\n', out);
	for (size_t i = 0; i < run->n; i++) {
		drf_start_change_text(&run->ch[i], what, sizeof(what));
		fprintf(out, "  %s: %s\n", what, run->ch[i].restart
			? "needs a restart (a reload is refused)"
			: "read only at start: a reload ignores it until a restart");
	}
	return ferror(out) ? -EIO : 0;
}

int drfctl_plan_json_running(json_object *o, const struct drfctl_running *run)
{
	json_object *x = drf_json_set_object(o, "running"), *a;

	if (!x)
		return -ENOMEM;
	drf_json_set_int(x, "pid", run->pid);
	a = drf_json_set_array(x, "start_only_changes");
	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < run->n; i++) {
		json_object *c = drf_json_append_object(a);

		if (!c)
			return -ENOMEM;
		drf_json_set_str(c, "key", run->ch[i].key);
		drf_json_set_str(c, "in_force", run->ch[i].was);
		drf_json_set_str(c, "new", run->ch[i].now);
		drf_json_set_bool(c, "needs_restart", run->ch[i].restart);
	}
	return 0;
}
