// SPDX-License-Identifier: MIT
/*
 * drfctl status and drfctl exec. status asks the running drfd over its socket;
 * when none answers, it reads cgroupfs against the plan computed from the
 * config, and says so.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "cli.h"
#include "client.h"
#include "config.h"
#include "fairfam.h"
#include "hostcheck.h"
#include "knobs.h"
#include "planner.h"
#include "slice.h"
#include "status.h"
#include "json.h"
#include "text.h"

#define ASK_TIMEOUT_MS 10000

/*
 * The cgroup-root as drfd sees it: asked of the daemon when it runs; else
 * the config's, where `auto` means the tenants unit's cgroup if systemd has
 * one, or the default.
 */
void drfctl_cli_root(const struct drf_config *c, const char *sock, char *ret, size_t len)
{
	const char *how;
	char *answer = NULL;
	size_t n;

	if (drf_client_ask(sock, "root", ASK_TIMEOUT_MS, &answer, &n) == 0 && n > 1 &&
	    answer[0] == '/') {
		answer[strcspn(answer, "\n")] = '\0';
		snprintf(ret, len, "%s", answer);
		free(answer);
		return;
	}
	free(answer);
	if (!c->cgroup_root_auto || drf_resolve_auto_root(c, ret, len, &how) < 0)
		snprintf(ret, len, "%s", c->cgroup_root);
}

static bool has_tenant(const struct drf_config *c, const char *name)
{
	for (size_t i = 0; i < c->n_tenants; i++)
		if (strcmp(c->tenants[i].name, name) == 0)
			return true;
	return false;
}

static void human(enum drf_knob k, const char *val, char *buf, size_t len)
{
	double v;
	char *end;

	/* memory values in bytes print as 12G; everything else as the kernel shows it */
	if (k >= DRF_KNOB_MEMORY_LOW && k <= DRF_KNOB_MEMORY_MAX && strcmp(val, "max") != 0) {
		v = strtod(val, &end);
		if (!*end) {
			drf_format_quantity(v, DRF_UNIT_BYTES, buf, len);
			return;
		}
	}
	snprintf(buf, len, "%s", val);
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
}

/* No daemon: cgroupfs against the plan computed from the config; one tenant's if tenant. */
static int fallback(const char *path, const char *sock, bool json, const char *tenant)
{
	struct drf_io_target io = { 0 };
	unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE);
	struct drf_declared decl;
	struct drf_plan_input in = { .decl = &decl };
	struct drf_engine eng;
	struct drf_plan e;
	struct cgfs fs;
	json_object *doc = NULL, *tenants = NULL;
	char err[2048], mount[4096] = "", root[4096], lab[96];
	int r, drift = 0;

	r = drf_declared_load(&decl, path, &drf_host_real, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "drfctl: %s\n", err);
		return r == -ENOMEM ? EXIT_FAILURE : DRFCTL_EXIT_CONFIG;
	}
	if (tenant && !has_tenant(&decl.cfg, tenant)) {
		fprintf(stderr, "drfctl: no tenant '%s' in %s\n", tenant, path);
		drf_declared_free(&decl);
		return EXIT_FAILURE;
	}
	drfctl_cli_root(&decl.cfg, sock, root, sizeof(root));
	drf_cgroup2_mount_of(root, mount, sizeof(mount));
	if (drf_knobs_controllers(&decl.cfg) & DRF_CTRL_IO) {
		if (drf_check_io_device(&decl.cfg, mount[0] ? mount : NULL, &io, err, sizeof(err)) < 0) {
			fprintf(stderr, "drfctl: %s\n", err);
			drf_declared_free(&decl);
			return EXIT_FAILURE;
		}
		in.io = &io;
	}
	/* The plan drfd puts in force for the declared demands. */
	r = drf_engine_init(&eng);
	if (r == 0) {
		r = drf_plan_build(&in, &eng, &e);
		drf_engine_free(&eng);
	}
	if (r < 0) {
		fprintf(stderr, "drfctl: cannot plan: %s\n", strerror(-r));
		drf_declared_free(&decl);
		return EXIT_FAILURE;
	}
	r = cgfs_open(&fs, root, false, &cgfs_real_ops, NULL);
	if (r < 0) {
		if (drf_check_cgroup(&decl.cfg, root, err, sizeof(err)) == -EMEDIUMTYPE)
			fprintf(stderr, "drfctl: drfd cannot enforce on this host: %s\n", err);
		else
			fprintf(stderr, "drfctl: cannot open cgroup-root '%s': %s (has drfd run on "
					"this host?)\n", root, strerror(-r));
		drf_plan_free(&e);
		drf_declared_free(&decl);
		return EXIT_FAILURE;
	}
	if (json) {
		doc = drf_json_object();
		drf_json_set_str(doc, "source", "cgroupfs");
		drf_json_set_str(doc, "config", path);
		drf_json_set_str(doc, "cgroup_root", root);
		drf_json_set_str(doc, "policy", drf_policy_name(decl.cfg.policy));
		drf_status_family_json(doc, &decl.cfg);
		drf_json_set_str(doc, "mode", drf_mode_name(decl.cfg.mode));
		tenants = drf_json_set_array(doc, "tenants");
	} else {
		printf("source: cgroupfs; no drfd answers on %s, so this is cgroupfs against the "
		       "plan computed from the config\n%s: policy %s, mode %s, root %s\n", sock, path,
		       drf_policy_label(decl.cfg.policy, &decl.cfg.family, lab, sizeof(lab)),
		       drf_mode_name(decl.cfg.mode), root);
	}
	for (size_t i = 0; i < decl.cfg.n_tenants; i++) {
		const struct drf_tenant *t = &decl.cfg.tenants[i];
		const struct drf_share *sh = &e.result.shares[i];
		const struct drf_knobs *k = &e.knobs[i];
		char q[64], buf[512], hv[128], hw[128];
		struct cgfs_tree_procs procs;
		json_object *knobs = NULL;

		if (tenant && strcmp(t->name, tenant) != 0)
			continue;
		if (json) {
			json_object *to = drf_json_append_object(tenants);

			drf_json_set_str(to, "name", t->name);
			drf_json_set_str(to, "cgroup", t->cgroup);
			knobs = drf_json_set_array(to, "knobs");
		} else {
			printf("\ntenant %s (cgroup %s/%s)\n  allocation:", t->name, root, t->cgroup);
			for (int res = 0; res < DRF_NRES; res++) {
				if (!(e.problem.capacity[res] > 0))
					continue;
				drf_format_quantity(sh->alloc[res], drf_res_unit(res), q, sizeof(q));
				printf(" %s %s", drf_res_name(res), q);
			}
			/* Its whole subtree: services, scopes and containers in child cgroups. */
			if (cgfs_nprocs_tree(&fs, t->cgroup, CGFS_TREE_MAX, &procs) < 0)
				procs = (struct cgfs_tree_procs){ 0 };
			printf("\n  processes %d%s\n", procs.procs, procs.capped ? "+" : "");
		}
		for (int j = 0; j < DRF_NKNOBS; j++) {
			const char *file = drf_knob_file(j, &io);
			ssize_t n;
			const char *state;

			if (!k->set[j])
				continue;
			n = cgfs_read(&fs, t->cgroup, file, buf, sizeof(buf));
			if (n < 0)
				snprintf(buf, sizeof(buf), "(%s)", strerror((int)-n));
			state = n < 0 ? "missing"
			      : drf_knob_matches(j, k->val[j], buf, &io, page) ? "ok" : "mismatch";
			drift += strcmp(state, "ok") != 0;
			if (json) {
				json_object *kn = drf_json_append_object(knobs);

				drf_json_set_str(kn, "file", file);
				drf_json_set_str(kn, "desired", k->val[j]);
				drf_json_set_str(kn, "actual", buf);
				drf_json_set_str(kn, "state", state);
				continue;
			}
			human(j, k->val[j], hw, sizeof(hw));
			human(j, buf, hv, sizeof(hv));
			if (strcmp(state, "ok") == 0)
				printf("  %-14s %-28s ok\n", file, hv);
			else
				printf("  %-14s %-28s %s: the plan says %s\n", file, hv,
				       n < 0 ? "MISSING" : "MISMATCH", hw);
		}
	}
	if (json)
		r = drf_json_print(stdout, doc);
	else if (drift)
		printf("\n%d knob%s differ%s from the plan\n", drift, drift == 1 ? "" : "s",
		       drift == 1 ? "s" : "");
	json_object_put(doc);
	if (r < 0)
		fprintf(stderr, "drfctl: cannot print the status: %s\n", strerror(-r));
	cgfs_close(&fs);
	drf_plan_free(&e);
	drf_declared_free(&decl);
	if (r < 0 || fflush(stdout) != 0)
		return EXIT_FAILURE;
	return drift ? DRFCTL_EXIT_DRIFT : EXIT_SUCCESS;
}

/* "drfd at SOCK" on stderr, the path escaped (it is the user's, or a config's). */
static void said_by(const char *sock)
{
	fputs("drfctl: drfd at ", stderr);
	drfctl_print_text(stderr, sock);
}

/* A status answer that is not a status to show: what it is, on stderr. Returns the exit code. */
static int not_shown(const char *sock, const char *tenant, const struct drf_client_status *st)
{
	switch (st->fail) {
	case DRF_STATUS_WHOLE:
		break;
	case DRF_STATUS_CUT:
		said_by(sock);
		fprintf(stderr, " closed the connection before the end of its status (%zu bytes "
				"came, no end line): nothing is shown\n", st->len);
		return EXIT_FAILURE;
	case DRF_STATUS_REFUSED:
		if (tenant && strcmp(st->reason, "no-such-tenant") == 0) {
			fprintf(stderr, "drfctl: no tenant '%s' in drfd's plan\n", tenant);
			return EXIT_FAILURE;
		}
		said_by(sock);
		fputs(" refused the request: ", stderr);
		drfctl_print_text(stderr, st->reason);
		fputc('\n', stderr);
		return EXIT_FAILURE;
	case DRF_STATUS_FAILED:
		said_by(sock);
		if (strcmp(st->reason, "changed") == 0) {
			fprintf(stderr, ": the plan in force changed while drfd sent its "
					"status, %u times in a row: nothing is shown; try again\n",
				st->asked);
		} else {
			fputs(" could not finish its status (", stderr);
			drfctl_print_text(stderr, st->reason);
			fputs("): nothing is shown\n", stderr);
		}
		return EXIT_FAILURE;
	case DRF_STATUS_ALIEN:
		st->answer[strcspn(st->answer, "\n")] = '\0';
		st->answer[strnlen(st->answer, 80)] = '\0';
		said_by(sock);
		fputs(" answered something else: ", stderr);
		drfctl_print_text(stderr, st->answer);
		fputs(strncmp(st->answer, "drfd-status 1 ", 14) == 0
		      ? " (a drfd older than drfctl: restart it)\n" : "\n", stderr);
		return EXIT_FAILURE;
	}
	return EXIT_FAILURE;
}

int drfctl_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "socket", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DRFCTL_DEFAULT_CONFIG, *sock = NULL, *tenant = NULL;
	char err[2048], sockbuf[128], req[128];
	struct drf_client_status st;
	struct drf_config cfg;
	bool json = false;
	int opt, r;

	while ((opt = drfctl_getopt(argc, argv, "c:h", opts, "status")) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 's':
			sock = optarg;
			break;
		case 'h':
			drfctl_help(stdout, "status");
			return EXIT_SUCCESS;
		default:
			return DRFCTL_EXIT_USAGE;
		}
	}
	if (optind < argc)
		tenant = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "drfctl status: unexpected argument '%s'\n", argv[optind]);
		return DRFCTL_EXIT_USAGE;
	}
	/* The name goes on the request line: one a config could hold, nothing else. */
	if (tenant && !drf_name_valid(tenant)) {
		fputs("drfctl status: '", stderr);
		drfctl_print_text(stderr, tenant);
		fprintf(stderr, "' is not a tenant name (up to %d letters, digits, '_', '.' and "
				"'-', not starting with '.')\n", DRF_TENANT_NAME_MAX);
		return DRFCTL_EXIT_USAGE;
	}
	if (!sock) {
		/* The socket the config names; a config we cannot read is said below. */
		sock = DRFCTL_DEFAULT_SOCKET;
		if (drf_config_load(path, &drf_host_real, &cfg, err, sizeof(err)) == 0) {
			snprintf(sockbuf, sizeof(sockbuf), "%s", cfg.status_socket);
			sock = sockbuf;
			drf_config_free(&cfg);
		}
	}
	snprintf(req, sizeof(req), "status %s%s%s", json ? "json" : "text", tenant ? " " : "",
		 tenant ? tenant : "");
	r = drf_client_status(sock, req, ASK_TIMEOUT_MS, &st);
	if (r == -ENOENT || r == -ECONNREFUSED) {
		fprintf(stderr, "drfctl: no drfd answers on %s (is it running? systemctl status "
				"drfd); showing cgroupfs against the plan from %s\n", sock, path);
		return fallback(path, sock, json, tenant);
	}
	if (r < 0 && r != -EPROTO) {
		fprintf(stderr, "drfctl: cannot ask drfd at %s: %s%s\n", sock, strerror(-r),
			r == -EACCES ? " (root, or a member of the config's status-group)"
			: r == -EBUSY ? " (it holds as many connections as it takes; try again)"
				      : "");
		return EXIT_FAILURE;
	}
	/* Only a whole status is shown: a part of one would pass for all of it. */
	if (r < 0) {
		r = not_shown(sock, tenant, &st);
		drf_client_status_free(&st);
		return r;
	}
	r = drfctl_print_text(stdout, st.body);
	if (r == 0 && fflush(stdout) != 0)
		r = -EIO;
	r = r < 0 ? EXIT_FAILURE : st.problems ? DRFCTL_EXIT_DRIFT : EXIT_SUCCESS;
	drf_client_status_free(&st);
	return r;
}

int drfctl_exec(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DRFCTL_DEFAULT_CONFIG, *name;
	const struct drf_tenant *t = NULL;
	struct cgfs_slice sl = { .fs = &cgfs_real_ops, .bus = &cgfs_bus_real_ops };
	struct drf_config cfg;
	struct cgfs fs;
	char err[2048], pid[32], root[4096];
	int r, opt, i;

	/* "+": stop at the first non-option, so that CMD keeps its options. */
	while ((opt = drfctl_getopt(argc, argv, "+c:h", opts, "exec")) != -1) {
		if (opt == 'c') {
			path = optarg;
		} else if (opt == 'h') {
			drfctl_help(stdout, "exec");
			return EXIT_SUCCESS;
		} else {
			return DRFCTL_EXIT_USAGE;
		}
	}
	i = optind;
	if (i >= argc) {
		fputs("drfctl exec: which tenant? usage: drfctl exec [-c FILE] TENANT -- CMD\n", stderr);
		return DRFCTL_EXIT_USAGE;
	}
	name = argv[i++];
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc) {
		fputs("drfctl exec: no command; usage: drfctl exec [-c FILE] TENANT -- CMD\n", stderr);
		return DRFCTL_EXIT_USAGE;
	}
	r = drf_config_load(path, &drf_host_real, &cfg, err, sizeof(err));
	if (r < 0) {
		drfctl_config_failed(path, err);
		return DRFCTL_EXIT_CONFIG;
	}
	for (size_t j = 0; j < cfg.n_tenants && !t; j++)
		if (strcmp(cfg.tenants[j].name, name) == 0)
			t = &cfg.tenants[j];
	if (!t) {
		fprintf(stderr, "drfctl: no tenant '%s' in %s\n", name, path);
		drf_config_free(&cfg);
		return DRFCTL_EXIT_CONFIG;
	}
	/* A user cannot write cgroup.procs: drfd moves it, if the tenant's access names it. */
	if (geteuid() != 0) {
		char req[DRF_TENANT_NAME_MAX + 16];

		snprintf(req, sizeof(req), "task-exec %s", t->name);
		r = drfctl_task_ask("exec", cfg.status_socket, req, NULL, NULL, 0);
		drf_config_free(&cfg);
		if (r != EXIT_SUCCESS)
			return r;
		execvp(argv[i], argv + i);
		fprintf(stderr, "drfctl: cannot run '%s': %s\n", argv[i], strerror(errno));
		return DRFCTL_EXIT_NOEXEC;
	}
	drfctl_cli_root(&cfg, cfg.status_socket, root, sizeof(root));
	/* With slices, a transient scope in the tenant's slice, started by systemd. */
	if (cfg.slices && (r = cgfs_bus_open(&sl.bus_ctx)) < 0)
		fprintf(stderr, "drfctl: cannot reach systemd over D-Bus: %s\n", strerror(-r));
	else if (cfg.slices)
		r = cgfs_open(&fs, root, false, &cgfs_slice_ops, &sl);
	else
		r = cgfs_open(&fs, root, false, &cgfs_real_ops, NULL);
	if (r == 0) {
		char type[32];

		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		/* Not made yet: systemd would make the slice itself, without the tenant's limits. */
		r = (int)cgfs_read(&fs, t->cgroup, "cgroup.type", type, sizeof(type));
		if (r >= 0)
			r = cgfs_write(&fs, t->cgroup, "cgroup.procs", pid);
		if (r < 0 && cfg.slices)
			fprintf(stderr, "drfctl: systemd cannot start a scope in '%s/%s': %s%s\n",
				root, t->cgroup, strerror(-r), r == -EACCES || r == -EPERM
				? " (run it as root, or use systemd-run --slice, which asks polkit)"
				: " (has drfd created the slice?)");
		else if (r < 0)
			fprintf(stderr, "drfctl: cannot move into '%s/%s': %s (has drfd created it?)\n",
				root, t->cgroup, strerror(-r));
		cgfs_close(&fs);
	} else if (!cfg.slices || sl.bus_ctx) {
		fprintf(stderr, "drfctl: cannot open cgroup-root '%s': %s\n", root, strerror(-r));
	}
	cgfs_bus_close(sl.bus_ctx);
	drf_config_free(&cfg);
	if (r < 0)
		return EXIT_FAILURE;
	execvp(argv[i], argv + i);
	fprintf(stderr, "drfctl: cannot run '%s': %s\n", argv[i], strerror(errno));
	return DRFCTL_EXIT_NOEXEC;
}
