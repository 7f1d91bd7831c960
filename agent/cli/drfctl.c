// SPDX-License-Identifier: MIT
/*
 * drfctl: the user's window on drfd.
 *   drfctl plan -c FILE [--policy drf|asset|per-resource] [--discrete] [--json] [--compare]
 *   drfctl status -c FILE
 *   drfctl exec -c FILE TENANT -- CMD [ARG...]
 *
 * Exit status: 0 success, 1 runtime failure, 2 config error, 3 (status) some
 * knob differs from the plan, 64 usage error; exec: 127 if CMD cannot run.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "cgroupfs.h"
#include "config.h"
#include "hostcheck.h"
#include "desired.h"
#include "knobs.h"
#include "plan.h"

#define EXIT_CONFIG 2
#define EXIT_DRIFT 3
#define EXIT_USAGE 64
#define DEFAULT_CONFIG "/etc/drfd/drfd.conf"

static void usage(FILE *out)
{
	fputs("usage: drfctl plan [-c FILE] [--policy drf|asset|per-resource] [--discrete]\n"
	      "                   [--json | --compare]\n"
	      "       drfctl status [-c FILE]\n"
	      "       drfctl exec [-c FILE] TENANT -- CMD [ARG...]\n"
	      "\n"
	      "  plan     show what each tenant gets under a policy, offline (no cgroups touched)\n"
	      "  status   each tenant's allocation beside the knob values in cgroupfs and its\n"
	      "           usage; flags every knob that differs from the plan\n"
	      "  exec     run CMD inside TENANT's cgroup\n"
	      "\n"
	      "  -c, --config FILE   main config file (default " DEFAULT_CONFIG ")\n"
	      "  --policy P          override the config's policy\n"
	      "  --discrete          whole tasks only (task tenants), DRF's Algorithm 1\n"
	      "  --json              machine-readable output\n"
	      "  --compare           the three policies side by side\n"
	      "\n"
	      "exit status: 0 ok, 1 failure, 2 config error, 3 knobs differ from the plan (status),\n"
	      "             64 usage error, 127 CMD cannot run (exec)\n",
	      out);
}

static int cmd_plan(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "policy", required_argument, NULL, 'p' },
		{ "discrete", no_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "compare", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DEFAULT_CONFIG;
	bool json = false, discrete = false, compare = false;
	int policy = -1, opt, err, ret = EXIT_FAILURE;
	struct drf_config cfg;
	struct drf_problem problem;
	struct drf_demand *demands = NULL;
	struct drf_result result = { 0 };
	struct drf_plan plan;
	char errbuf[1024];

	while ((opt = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'p':
			policy = drf_policy_from_name(optarg);
			if (policy < 0) {
				fprintf(stderr, "drfctl plan: unknown policy '%s' (drf, asset, "
						"per-resource)\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'd':
			discrete = true;
			break;
		case 'j':
			json = true;
			break;
		case 'C':
			compare = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "drfctl plan: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (compare && (json || discrete || policy >= 0)) {
		fputs("drfctl plan: --compare shows every divisible policy; it does not combine "
		      "with --json, --discrete or --policy\n", stderr);
		return EXIT_USAGE;
	}
	if (discrete && policy >= 0 && policy != DRF_POLICY_DRF) {
		fputs("drfctl plan: --discrete is DRF's Algorithm 1; it needs --policy drf\n", stderr);
		return EXIT_USAGE;
	}

	err = drf_config_load(path, &drf_host_real, &cfg, errbuf, sizeof(errbuf));
	if (err < 0) {
		fprintf(stderr, "drfctl: %s\n", errbuf);
		return EXIT_CONFIG;
	}
	if (discrete) {
		for (size_t i = 0; i < cfg.n_tenants; i++) {
			if (cfg.tenants[i].task_model)
				continue;
			fprintf(stderr, "drfctl: %s:%d: tenant '%s' has a demand, not tasks; "
					"--discrete needs every tenant in the task model "
					"(task-* keys)\n",
				cfg.tenants[i].file, cfg.tenants[i].line, cfg.tenants[i].name);
			ret = EXIT_CONFIG;
			goto out_config;
		}
	}
	if (policy < 0)
		policy = discrete ? DRF_POLICY_DRF : (int)cfg.policy;
	err = drf_config_problem(&cfg, &problem, &demands);
	if (err < 0) {
		fprintf(stderr, "drfctl: cannot build the allocation problem: %s\n", strerror(-err));
		goto out_config;
	}
	if (compare) {
		err = drf_plan_print_compare(stdout, &cfg, &problem);
		if (err < 0) {
			fprintf(stderr, "drfctl: cannot compare policies: %s\n", strerror(-err));
			goto out_demands;
		}
		ret = EXIT_SUCCESS;
		goto out_demands;
	}
	err = discrete ? drf_allocate_discrete(&problem, &result)
		       : drf_allocate(&problem, policy, &result);
	if (err == -E2BIG) {
		fprintf(stderr, "drfctl: the discrete plan would place more than %.0f tasks; "
				"use the divisible plan (without --discrete)\n",
			DRF_DISCRETE_MAX_TASKS);
		goto out_demands;
	}
	if (err < 0) {
		fprintf(stderr, "drfctl: allocation failed: %s\n", strerror(-err));
		goto out_demands;
	}
	plan = (struct drf_plan){ .cfg = &cfg, .problem = &problem, .result = &result,
				  .policy = policy, .discrete = discrete };
	if (json)
		drf_plan_print_json(stdout, &plan);
	else
		drf_plan_print_table(stdout, &plan);
	ret = fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	drf_result_free(&result);
out_demands:
	free(demands);
out_config:
	drf_config_free(&cfg);
	return ret;
}

/* -c FILE, the only option of status and exec; returns the index after options. */
static int config_opt(int argc, char **argv, const char **path)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	/* "+": stop at the first non-option, so that exec's CMD keeps its options. */
	while ((opt = getopt_long(argc, argv, "+c:h", opts, NULL)) != -1) {
		if (opt == 'c') {
			*path = optarg;
		} else if (opt == 'h') {
			usage(stdout);
			exit(EXIT_SUCCESS);
		} else {
			usage(stderr);
			return -1;
		}
	}
	return optind;
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

static int cmd_status(int argc, char **argv)
{
	const char *path = DEFAULT_CONFIG;
	struct drf_io_target io = { 0 };
	struct drf_enforced e;
	struct cgfs fs;
	char err[2048], mount[4096] = "";
	int r, drift = 0;

	r = config_opt(argc, argv, &path);
	if (r < 0)
		return EXIT_USAGE;
	if (r < argc) {
		fprintf(stderr, "drfctl status: unexpected argument '%s'\n", argv[r]);
		return EXIT_USAGE;
	}
	r = drf_enforced_load(&e, path, NULL, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "drfctl: %s\n", err);
		/* drf_enforced_load: -EIO, -ENOMEM after the config loaded; else the config */
		return r == -EIO || r == -ENOMEM ? EXIT_FAILURE : EXIT_CONFIG;
	}
	drf_cgroup2_mount_of(e.cfg.cgroup_root, mount, sizeof(mount));
	if (drf_knobs_controllers(&e.cfg) & CGFS_IO) {
		if (drf_check_io_device(&e.cfg, mount[0] ? mount : NULL, &io, err, sizeof(err))) {
			fprintf(stderr, "drfctl: %s\n", err);
			drf_enforced_free(&e);
			return EXIT_FAILURE;
		}
		drf_knobs_compute(&e.cfg, &e.problem, &e.result, &io, e.knobs);
	}
	r = cgfs_open(&fs, e.cfg.cgroup_root, false, &cgfs_real_ops, NULL);
	if (r < 0) {
		fprintf(stderr, "drfctl: cannot open cgroup-root '%s': %s (is drfd running on this "
				"host?)\n", e.cfg.cgroup_root, strerror(-r));
		drf_enforced_free(&e);
		return EXIT_FAILURE;
	}
	printf("%s: policy %s, mode %s, root %s\n", path, drf_policy_name(e.cfg.policy),
	       drf_mode_name(e.cfg.mode), e.cfg.cgroup_root);
	for (size_t i = 0; i < e.cfg.n_tenants; i++) {
		const struct drf_tenant *t = &e.cfg.tenants[i];
		const struct drf_share *sh = &e.result.shares[i];
		const struct drf_knobs *k = &e.knobs[i];
		char q[64], buf[512], hv[128], hw[128];

		printf("\ntenant %s (cgroup %s/%s)\n  allocation:", t->name, e.cfg.cgroup_root,
		       t->cgroup);
		for (int res = 0; res < DRF_NRES; res++) {
			if (!(e.problem.capacity[res] > 0))
				continue;
			drf_format_quantity(sh->alloc[res], drf_res_unit(res), q, sizeof(q));
			printf(" %s %s", drf_res_name(res), q);
		}
		printf("\n  usage:");
		if (cgfs_read(&fs, t->cgroup, "memory.current", buf, sizeof(buf)) > 0) {
			drf_format_quantity(strtod(buf, NULL), DRF_UNIT_BYTES, q, sizeof(q));
			printf(" memory %s", q);
		}
		if (cgfs_read(&fs, t->cgroup, "cpu.stat", buf, sizeof(buf)) > 0) {
			const char *u = strstr(buf, "usage_usec ");

			if (u)
				printf(" cpu %.1fs", strtod(u + 11, NULL) / 1e6);
		}
		if (cgfs_read(&fs, t->cgroup, "cgroup.procs", buf, sizeof(buf)) >= 0)
			printf(" processes %d", buf[0] ? cgfs_nprocs(&fs, t->cgroup) : 0);
		printf("\n");
		for (int j = 0; j < DRF_NKNOBS; j++) {
			const char *file = drf_knob_file(j, &io);
			ssize_t n;

			if (!k->set[j])
				continue;
			n = cgfs_read(&fs, t->cgroup, file, buf, sizeof(buf));
			human(j, k->val[j], hw, sizeof(hw));
			if (n < 0) {
				printf("  %-14s %-28s MISSING (%s)\n", file, "-", strerror((int)-n));
				drift++;
				continue;
			}
			human(j, buf, hv, sizeof(hv));
			if (drf_knob_matches(j, k->val[j], buf, &io, (unsigned long)sysconf(_SC_PAGESIZE))) {
				printf("  %-14s %-28s ok\n", file, hv);
			} else {
				printf("  %-14s %-28s MISMATCH: the plan says %s\n", file, hv, hw);
				drift++;
			}
		}
	}
	if (drift)
		printf("\n%d knob%s differ%s from the plan\n", drift, drift == 1 ? "" : "s",
		       drift == 1 ? "s" : "");
	cgfs_close(&fs);
	drf_enforced_free(&e);
	return drift ? EXIT_DRIFT : EXIT_SUCCESS;
}

static int cmd_exec(int argc, char **argv)
{
	const char *path = DEFAULT_CONFIG, *name;
	const struct drf_tenant *t = NULL;
	struct drf_config cfg;
	struct cgfs fs;
	char err[2048], pid[32];
	int r, i;

	i = config_opt(argc, argv, &path);
	if (i < 0)
		return EXIT_USAGE;
	if (i >= argc) {
		fputs("drfctl exec: which tenant? usage: drfctl exec [-c FILE] TENANT -- CMD\n", stderr);
		return EXIT_USAGE;
	}
	name = argv[i++];
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc) {
		fputs("drfctl exec: no command; usage: drfctl exec [-c FILE] TENANT -- CMD\n", stderr);
		return EXIT_USAGE;
	}
	r = drf_config_load(path, &drf_host_real, &cfg, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "drfctl: %s\n", err);
		return EXIT_CONFIG;
	}
	for (size_t j = 0; j < cfg.n_tenants && !t; j++)
		if (strcmp(cfg.tenants[j].name, name) == 0)
			t = &cfg.tenants[j];
	if (!t) {
		fprintf(stderr, "drfctl: no tenant '%s' in %s\n", name, path);
		drf_config_free(&cfg);
		return EXIT_CONFIG;
	}
	r = cgfs_open(&fs, cfg.cgroup_root, false, &cgfs_real_ops, NULL);
	if (r == 0) {
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		r = cgfs_write(&fs, t->cgroup, "cgroup.procs", pid);
		if (r < 0)
			fprintf(stderr, "drfctl: cannot move into '%s/%s': %s (has drfd created it?)\n",
				cfg.cgroup_root, t->cgroup, strerror(-r));
		cgfs_close(&fs);
	} else {
		fprintf(stderr, "drfctl: cannot open cgroup-root '%s': %s\n", cfg.cgroup_root,
			strerror(-r));
	}
	drf_config_free(&cfg);
	if (r < 0)
		return EXIT_FAILURE;
	execvp(argv[i], argv + i);
	fprintf(stderr, "drfctl: cannot run '%s': %s\n", argv[i], strerror(errno));
	return 127;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return EXIT_SUCCESS;
	}
	if (strcmp(argv[1], "plan") == 0)
		return cmd_plan(argc - 1, argv + 1);
	if (strcmp(argv[1], "status") == 0)
		return cmd_status(argc - 1, argv + 1);
	if (strcmp(argv[1], "exec") == 0)
		return cmd_exec(argc - 1, argv + 1);
	fprintf(stderr, "drfctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
