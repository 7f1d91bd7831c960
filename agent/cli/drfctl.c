// SPDX-License-Identifier: MIT
/*
 * drfctl: the user's window on drfd: plan (here), status and exec (status_cmd.c),
 * reload (reload_cmd.c), top (top.c), help (help.c). The exit codes are in cli.h and drfctl(8).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "cgroupfs.h"
#include "cli.h"
#include "config.h"
#include "fairfam.h"
#include "hostcheck.h"
#include "knobs.h"
#include "json.h"
#include "planview.h"

#ifndef DRF_VERSION
#define DRF_VERSION "0.3.0"
#endif
#define EXIT_CONFIG DRFCTL_EXIT_CONFIG
#define EXIT_USAGE DRFCTL_EXIT_USAGE
#define DEFAULT_CONFIG DRFCTL_DEFAULT_CONFIG

/* beta or lambda: a plain decimal, optionally negative (as drfd.conf takes them). */
static int parse_family_number(const char *s, double *ret)
{
	const char *q = s + (*s == '-');
	char *end;
	double v;

	if (!isdigit((unsigned char)*q))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno || !isfinite(v) || strpbrk(s, "eExXnNiI"))
		return -EINVAL;
	*ret = v;
	return 0;
}

/* drf_config_impossible's notes: warnings on stderr, errors with --strict. */
static void impossible_note(void *ctx, const char *file, int line, const char *what)
{
	fprintf(stderr, "drfctl: %s: %s:%d: %s\n", *(bool *)ctx ? "error" : "warning", file, line,
		what);
}

static int cmd_plan(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "strict", no_argument, NULL, 'X' },
		{ "policy", required_argument, NULL, 'p' },
		{ "discrete", no_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "compare", no_argument, NULL, 'C' },
		{ "tradeoff", no_argument, NULL, 'T' },
		{ "svg", required_argument, NULL, 'S' },
		{ "beta", required_argument, NULL, 'B' },
		{ "lambda", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DEFAULT_CONFIG;
	bool json = false, discrete = false, compare = false, has_beta = false, has_lambda = false;
	bool tradeoff = false, strict = false;
	const char *svg = NULL;
	double beta = 0, lambda = 0;
	const char *why;
	int policy = -1, opt, err, ret = EXIT_FAILURE;
	struct drf_config cfg;
	struct drf_problem problem;
	struct drf_demand *demands = NULL;
	struct drf_result result = { 0 };
	struct drf_plan plan;
	struct drfctl_running running = { 0 };
	struct drf_hproblem hp;
	struct drf_hresult hres = { 0 };
	struct drf_hgroup *hgroups = NULL;
	size_t *hparents = NULL;
	char errbuf[1024];

	while ((opt = drfctl_getopt(argc, argv, "c:h", opts, "plan")) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'p':
			policy = drf_policy_from_name(optarg);
			if (policy < 0) {
				fprintf(stderr, "drfctl plan: unknown policy '%s' (drf, asset, "
						"per-resource, fds, gfj, ceei)\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'd':
			discrete = true;
			break;
		case 'X':
			strict = true;
			break;
		case 'j':
			json = true;
			break;
		case 'C':
			compare = true;
			break;
		case 'T':
			tradeoff = true;
			break;
		case 'S':
			svg = optarg;
			break;
		case 'B':
		case 'L':
			if (parse_family_number(optarg, opt == 'B' ? &beta : &lambda) < 0) {
				fprintf(stderr, "drfctl plan: --%s '%s': expected a decimal number\n",
					opt == 'B' ? "beta" : "lambda", optarg);
				return EXIT_USAGE;
			}
			if (opt == 'B')
				has_beta = true;
			else
				has_lambda = true;
			break;
		case 'h':
			drfctl_help(stdout, "plan");
			return EXIT_SUCCESS;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "drfctl plan: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (policy >= 0 && (has_beta || has_lambda) && policy != DRF_POLICY_FDS &&
	    policy != DRF_POLICY_GFJ) {
		fprintf(stderr, "drfctl plan: --beta and --lambda apply to --policy fds and gfj, "
				"not %s\n", drf_policy_name(policy));
		return EXIT_USAGE;
	}
	if (has_beta || has_lambda) {
		if (!has_beta)
			beta = DRF_FAMILY_BETA_DEFAULT;
		if (!has_lambda)
			lambda = drf_family_alpha_lambda(beta);
		if (drf_family_check(beta, lambda, &why) < 0) {
			fprintf(stderr, "drfctl plan: --beta %g --lambda %g: %s\n", beta, lambda, why);
			return EXIT_USAGE;
		}
	}
	if (tradeoff && (discrete || compare || has_beta || has_lambda ||
			 (policy >= 0 && policy != DRF_POLICY_FDS && policy != DRF_POLICY_GFJ))) {
		fputs("drfctl plan: --tradeoff sweeps beta for fds and gfj; it takes --policy fds or "
		      "gfj and no --discrete, --compare, --beta or --lambda\n", stderr);
		return EXIT_USAGE;
	}
	if (svg && !tradeoff) {
		fputs("drfctl plan: --svg FILE draws the trade-off: it needs --tradeoff\n", stderr);
		return EXIT_USAGE;
	}
	if (compare && (discrete || policy >= 0)) {
		fputs("drfctl plan: --compare shows every divisible policy; it does not combine "
		      "with --discrete or --policy\n", stderr);
		return EXIT_USAGE;
	}
	if (discrete && policy >= 0 && policy != DRF_POLICY_DRF) {
		fputs("drfctl plan: --discrete is DRF's Algorithm 1; it needs --policy drf\n", stderr);
		return EXIT_USAGE;
	}

	err = drf_config_load(path, &drf_host_real, &cfg, errbuf, sizeof(errbuf));
	if (err < 0) {
		drfctl_config_failed(path, errbuf);
		return EXIT_CONFIG;
	}
	if (drf_config_impossible(&cfg, impossible_note, &strict) > 0 && strict) {
		drf_config_free(&cfg);
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
	if (tradeoff && cfg.n_groups > 0) {
		fprintf(stderr, "drfctl plan: %s has [group] sections, shared by hierarchical DRF; "
				"--tradeoff sweeps only flat policies\n", path);
		ret = EXIT_USAGE;
		goto out_config;
	}
	if (tradeoff) {
		struct drf_tradeoff sweep = { 0 };

		err = drf_config_problem(&cfg, &problem, &demands);
		if (err == 0)
			err = drf_tradeoff_sweep(&problem, policy, &sweep);
		if (err == 0)
			err = json ? drf_plan_print_tradeoff_json(stdout, &cfg, &sweep) :
				     drf_plan_print_tradeoff(stdout, &cfg, &sweep);
		if (err == 0 && fflush(stdout) != 0)
			err = -errno;
		if (err < 0)
			fprintf(stderr, "drfctl: cannot show the trade-off: %s\n", strerror(-err));
		if (err == 0 && svg) {
			err = drf_plan_plot_tradeoff(svg, &cfg, &sweep, errbuf, sizeof(errbuf));
			if (err < 0)
				fprintf(stderr, "drfctl plan: --svg %s: %s\n", svg, errbuf);
			else if (!json)
				printf("\nwrote the picture to %s\n", svg);
			else
				fprintf(stderr, "drfctl plan: wrote the picture to %s\n", svg);
		}
		ret = err < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
		drf_tradeoff_free(&sweep);
		free(demands);
		goto out_config;
	}
	if (policy < 0)
		policy = discrete ? DRF_POLICY_DRF : (int)cfg.policy;
	/* Groups are hierarchical DRF's: the flat policies would ignore them. */
	if (cfg.n_groups > 0 && (compare || policy != DRF_POLICY_DRF)) {
		fprintf(stderr, "drfctl plan: %s has [group] sections, shared by hierarchical DRF; "
				"%s\n", path, compare ? "--compare shows only flat policies"
						      : "--policy must be drf");
		ret = EXIT_USAGE;
		goto out_config;
	}
	if ((has_beta || has_lambda) && !compare && policy != DRF_POLICY_FDS &&
	    policy != DRF_POLICY_GFJ) {
		fprintf(stderr, "drfctl plan: --beta and --lambda apply to policy fds and gfj; "
				"%s's policy is %s (add --policy fds or gfj)\n", path,
			drf_policy_name(policy));
		ret = EXIT_USAGE;
		goto out_config;
	}
	err = drf_config_problem(&cfg, &problem, &demands);
	if (err < 0) {
		fprintf(stderr, "drfctl: cannot build the allocation problem: %s\n", strerror(-err));
		goto out_config;
	}
	/* The command line's beta and lambda over the config's. */
	if (has_beta || has_lambda)
		problem.family = (struct drf_family){ beta, lambda };
	if (compare) {
		err = drf_plan_print_compare(stdout, &cfg, &problem, json);
		if (err < 0) {
			fprintf(stderr, "drfctl: cannot compare policies: %s\n", strerror(-err));
			goto out_demands;
		}
		ret = EXIT_SUCCESS;
		goto out_demands;
	}
	if (cfg.n_groups > 0) {
		err = drf_config_hproblem(&cfg, &problem, &hp, &hgroups, &hparents);
		if (err == 0)
			err = discrete ? drf_hdrf_allocate_discrete(&hp, &hres)
				       : drf_hdrf_allocate(&hp, &hres);
		if (err == 0) {
			result = hres.leaves;
			hres.leaves = (struct drf_result){ 0 };
		}
	} else {
		err = discrete ? drf_allocate_discrete(&problem, &result)
			       : drf_allocate(&problem, policy, &result);
	}
	if (err == -E2BIG) {
		fprintf(stderr, "drfctl: the discrete plan would place more than %.0f tasks; "
				"use the divisible plan (without --discrete)\n",
			DRF_DISCRETE_MAX_TASKS);
		goto out_demands;
	}
	if (err == -ERANGE) {
		fprintf(stderr, "drfctl: the %s solver gave up on this config (lambda far off "
				"(1 - beta) / beta can be beyond it; see drfd.conf(5))\n",
			drf_policy_name(policy));
		goto out_demands;
	}
	if (err < 0) {
		fprintf(stderr, "drfctl: allocation failed: %s\n", strerror(-err));
		goto out_demands;
	}
	plan = (struct drf_plan){ .cfg = &cfg, .problem = &problem, .result = &result,
				  .policy = policy, .discrete = discrete, .groups = hres.groups };
	/*
	 * A drfd runs on this config's socket: which of the config's changes a
	 * reload cannot take. None runs: the plan alone, as ever.
	 */
	err = drfctl_plan_running(&cfg, &running);
	if (err == 0)
		plan.running = &running;
	else if (err != -ENOENT && err != -ECONNREFUSED)
		fprintf(stderr, "drfctl plan: cannot compare with the running drfd at %s: %s%s; "
				"which changes need a restart is not shown\n", cfg.status_socket,
			strerror(-err), err == -EACCES ? " (root, or a member of the config's "
							 "status-group)" : "");
	err = json ? drf_plan_print_json(stdout, &plan) : drf_plan_print_table(stdout, &plan);
	if (err == 0 && !json && plan.running)
		err = drfctl_plan_print_running(stdout, plan.running);
	drfctl_running_free(&running);
	if (err == 0 && fflush(stdout) != 0)
		err = -errno;
	if (err < 0)
		fprintf(stderr, "drfctl: cannot print the plan: %s\n", strerror(-err));
	ret = err < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
	drf_result_free(&result);
out_demands:
	drf_hresult_free(&hres);
	free(hgroups);
	free(hparents);
	free(demands);
out_config:
	drf_config_free(&cfg);
	return ret;
}

/*
 * -c FILE (--config FILE, --config=FILE, -cFILE) before the command is the
 * command's: moved after the command's name, where its options are read.
 * 0, or -1 with the error said.
 */
static int global_options(int argc, char **argv)
{
	int i = 1, k;

	while (i < argc && argv[i][0] == '-' && strcmp(argv[i], "-h") != 0 &&
	       strcmp(argv[i], "--help") != 0 && strcmp(argv[i], "--version") != 0) {
		if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "drfctl: option '%s' needs a value (drfctl help)\n",
					argv[i]);
				return -1;
			}
			i += 2;
		} else if (strncmp(argv[i], "--config=", 9) == 0 ||
			   (argv[i][1] == 'c' && argv[i][2])) {
			i++;
		} else {
			fprintf(stderr, "drfctl: unknown option '%s' before the command; before it, "
					"only -c FILE (drfctl help)\n", argv[i]);
			return -1;
		}
	}
	if (i == 1)
		return 0;
	if (i >= argc) {
		fputs("drfctl: which command? (drfctl help lists them)\n", stderr);
		return -1;
	}
	/*
	 * rotate argv[1..i] right by one: the command first, then the options;
	 * fleet's go after its subcommand (drfctl -c F fleet plan: fleet plan -c F)
	 */
	{
		int words = strcmp(argv[i], "fleet") == 0 && i + 1 < argc && argv[i + 1][0] != '-' ? 2 : 1;

		if (strcmp(argv[i], "help") == 0) {
			fputs("drfctl: help takes no -c (drfctl help [COMMAND])\n", stderr);
			return -1;
		}
		for (int w = 0; w < words; w++) {
			char *cmd = argv[i + w];

			for (k = i + w; k > 1 + w; k--)
				argv[k] = argv[k - 1];
			argv[1 + w] = cmd;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *near;

	/* A reader that goes away (drfctl status | head) ends the output, not drfctl. */
	signal(SIGPIPE, SIG_IGN);
	if (global_options(argc, argv) < 0)
		return DRFCTL_EXIT_USAGE;
	if (argc < 2) {
		drfctl_help(stderr, NULL);
		return DRFCTL_EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
		return drfctl_help(stdout, NULL) < 0 ? DRFCTL_EXIT_USAGE : EXIT_SUCCESS;
	if (strcmp(argv[1], "--version") == 0) {
		printf("drfctl %s\n", DRF_VERSION);
		return EXIT_SUCCESS;
	}
	if (strcmp(argv[1], "help") == 0) {
		if (argc > 3) {
			fprintf(stderr, "drfctl help: one command at most\n");
			return DRFCTL_EXIT_USAGE;
		}
		return drfctl_help(stdout, argc > 2 ? argv[2] : NULL) < 0 ? DRFCTL_EXIT_USAGE
									   : EXIT_SUCCESS;
	}
	if (strcmp(argv[1], "plan") == 0)
		return cmd_plan(argc - 1, argv + 1);
	if (strcmp(argv[1], "status") == 0)
		return drfctl_status(argc - 1, argv + 1);
	if (strcmp(argv[1], "exec") == 0)
		return drfctl_exec(argc - 1, argv + 1);
	if (strcmp(argv[1], "net-reset") == 0)
		return drfctl_net_reset(argc - 1, argv + 1);
	if (strcmp(argv[1], "top") == 0)
		return drfctl_top(argc - 1, argv + 1);
	if (strcmp(argv[1], "recommend") == 0)
		return drfctl_recommend(argc - 1, argv + 1);
	if (strcmp(argv[1], "submit") == 0)
		return drfctl_submit(argc - 1, argv + 1);
	if (strcmp(argv[1], "tasks") == 0)
		return drfctl_tasks(argc - 1, argv + 1);
	if (strcmp(argv[1], "cancel") == 0)
		return drfctl_cancel(argc - 1, argv + 1);
	if (strcmp(argv[1], "fleet") == 0)
		return drfctl_fleet(argc - 1, argv + 1);
	if (strcmp(argv[1], "reload") == 0)
		return drfctl_reload(argc - 1, argv + 1);
	near = drfctl_nearest_command(argv[1]);
	if (near)
		fprintf(stderr, "drfctl: unknown command '%s'; did you mean '%s'? (drfctl help)\n",
			argv[1], near);
	else
		fprintf(stderr, "drfctl: unknown command '%s' (drfctl help lists them)\n", argv[1]);
	return DRFCTL_EXIT_USAGE;
}
