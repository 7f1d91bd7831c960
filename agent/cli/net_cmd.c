// SPDX-License-Identifier: MIT
/*
 * drfctl net-reset: removes what drfd installed for the network, and only
 * that: its root qdisc on net-device (htb d7f:, with its classes) and its
 * pinned programs and maps. Refused while a drfd runs: it would install them
 * again at its next tick.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroupfs.h"
#include "cli.h"
#include "client.h"
#include "config.h"
#include "hostcheck.h"
#include "netbpf.h"
#include "pins.h"
#include "shaper.h"
#include "tc_nl.h"

int drfctl_net_reset(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DRFCTL_DEFAULT_CONFIG, *device = NULL;
	struct drf_netbpf bpf = { 0 };
	struct drf_shaper s;
	struct drf_tc_nl nl;
	struct drf_config cfg;
	struct cgfs fs = { .rootfd = -1, .root = NULL };
	char err[2048], root[4096], mount[4096] = "", pin[256], *answer = NULL;
	uint32_t level;
	size_t n;
	int r, opt;

	while ((opt = drfctl_getopt(argc, argv, "c:h", opts, "net-reset")) != -1) {
		if (opt == 'c') {
			path = optarg;
		} else if (opt == 'd') {
			device = optarg;
		} else if (opt == 'h') {
			drfctl_help(stdout, "net-reset");
			return EXIT_SUCCESS;
		} else {
			return DRFCTL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "drfctl net-reset: unexpected argument '%s'\n", argv[optind]);
		return DRFCTL_EXIT_USAGE;
	}
	r = drf_config_load(path, &drf_host_real, &cfg, err, sizeof(err));
	if (r < 0) {
		drfctl_config_failed(path, err);
		return r == -ENOMEM ? EXIT_FAILURE : DRFCTL_EXIT_CONFIG;
	}
	/* --device: one the config no longer names (drfd removes those itself at start). */
	if (!device)
		device = cfg.net_device;
	if (!device) {
		fprintf(stderr, "drfctl net-reset: %s sets no net-device: name the device with "
				"--device\n", path);
		drf_config_free(&cfg);
		return DRFCTL_EXIT_CONFIG;
	}
	if (drf_client_ask(cfg.status_socket, "root", 2000, &answer, &n) == 0) {
		free(answer);
		fprintf(stderr, "drfctl net-reset: drfd is running (it answers on %s) and would "
				"install its qdisc and programs again at its next tick: stop it first\n",
			cfg.status_socket);
		drf_config_free(&cfg);
		return EXIT_FAILURE;
	}
	drfctl_cli_root(&cfg, cfg.status_socket, root, sizeof(root));
	drf_cgroup2_mount_of(root, mount, sizeof(mount));
	r = drf_pin_paths(root, mount[0] ? mount : "/sys/fs/cgroup", &level, pin, sizeof(pin));
	if (r == 0)
		r = drf_tc_nl_open(&nl);
	if (r < 0) {
		fprintf(stderr, "drfctl net-reset: %s\n", strerror(-r));
		drf_config_free(&cfg);
		return EXIT_FAILURE;
	}
	fs.root = root;
	r = drf_shaper_init(&s, device, &drf_tc_nl_ops, &nl, &drf_netbpf_real_ops, &bpf, &fs,
			    pin, level, NULL);
	if (r == 0)
		r = drf_shaper_reset(&s);
	if (r < 0)
		fprintf(stderr, "drfctl net-reset: %s: %s\n", device, strerror(-r));
	else
		printf("removed drfd's qdisc from %s (if it had one) and its programs pinned in %s\n",
		       device, pin);
	drf_shaper_free(&s);
	drf_tc_nl_close(&nl);
	drf_config_free(&cfg);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
