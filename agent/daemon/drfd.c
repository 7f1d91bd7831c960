// SPDX-License-Identifier: MIT
/*
 * drfd: computes the DRF allocation of the config's tenants and makes cgroup v2
 * enforce it.
 *
 *   drfd -c FILE [--dry-run] [--once] [--foreground]
 *
 * Checks the host first and exits with a code per problem (hostcheck.h). Then
 * reconciles every `interval`, with signals taken from a signalfd and the period
 * from a timerfd: SIGHUP reloads the config (a bad one is refused and the last
 * good one stays), SIGTERM/SIGINT exit leaving every limit in place.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "config.h"
#include "hostcheck.h"
#include "desired.h"
#include "knobs.h"
#include "plan.h"
#include "reconcile.h"

#define DEFAULT_CONFIG "/etc/drfd/drfd.conf"

struct opts {
	const char *config;
	bool dry_run, once, foreground;
};

/* One line per tenant: what it gets. */
static void log_plan(const struct drf_enforced *s)
{
	for (size_t i = 0; i < s->cfg.n_tenants; i++) {
		const struct drf_share *sh = &s->result.shares[i];
		char line[512] = "", q[32];

		for (int r = 0; r < DRF_NRES; r++) {
			if (!(s->problem.capacity[r] > 0))
				continue;
			drf_format_quantity(sh->alloc[r], drf_res_unit(r), q, sizeof(q));
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s=%s",
				 drf_res_name(r), q);
		}
		fprintf(stderr, "drfd: plan: tenant '%s':%s dominant %s %.3f, limited by %s\n",
			s->cfg.tenants[i].name, line, drf_res_name(sh->dominant_res),
			sh->dominant_share,
			sh->limited_by == DRF_LIMIT_DEMAND ? "demand" : drf_res_name(sh->limited_by));
	}
}

/* Never silent about what is not enforced. */
static void log_caveats(const struct drf_enforced *s, const struct drf_io_target *io)
{
	const struct drf_config *c = &s->cfg;

	if (c->capacity[DRF_RES_NET] > 0)
		fprintf(stderr, "drfd: warning: net-rate is allocated but not enforced: this drfd "
				"does not program tc yet; no tenant's network rate is limited\n");
	if (io && (drf_knobs_controllers(c) & CGFS_IO) && c->mode == DRF_MODE_SHARE &&
	    io->weights == DRF_IO_WEIGHTS_NONE)
		fprintf(stderr, "drfd: io: device %u:%u has neither BFQ nor io.cost enabled, so "
				"io weights would have no effect; share mode sets io.max at each "
				"tenant's io allocation instead\n", io->major, io->minor);
	for (size_t i = 0; i < c->n_tenants; i++) {
		unsigned u = drf_knobs_uncapped(c, &s->problem, i, io);

		for (int r = 0; r < DRF_NRES; r++)
			if (u & (1u << r))
				fprintf(stderr, "drfd: tenant '%s' needs no %s, so it is left uncapped "
						"on it rather than capped at zero, which would stop it\n",
					c->tenants[i].name, drf_res_name(r));
	}
}

static int run_pass(struct drf_reconciler *rc, const struct drf_enforced *s, bool quiet_ok)
{
	struct drf_reconcile_stats st;
	int r = drf_reconcile(rc, &s->cfg, s->knobs, &st);

	if (r < 0)
		return r;
	if (!quiet_ok || st.writes || st.created || st.errors || st.foreign)
		fprintf(stderr, "drfd: reconciled %zu tenants: %u written, %u created, %u changed "
				"by others, %u waiting for memory to drop, %u errors\n",
			s->cfg.n_tenants, st.writes, st.created, st.foreign, st.pending, st.errors);
	return st.errors ? -EIO : 0;
}

static int arm_timer(int tfd, double ms)
{
	struct itimerspec its = { 0 };

	its.it_value.tv_sec = (time_t)(ms / 1000);
	its.it_value.tv_nsec = (long)((ms - (double)its.it_value.tv_sec * 1000) * 1e6);
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	its.it_interval = its.it_value;
	return timerfd_settime(tfd, 0, &its, NULL) < 0 ? -errno : 0;
}

static void usage(FILE *out)
{
	fputs("usage: drfd [-c FILE] [--dry-run] [--once] [--foreground]\n"
	      "\n"
	      "  -c, --config FILE   main config file (default " DEFAULT_CONFIG ")\n"
	      "  --dry-run           print the cgroup writes it would make, change nothing\n"
	      "  --once              reconcile once and exit\n"
	      "  --foreground        stay in the foreground (the default under systemd)\n"
	      "\n"
	      "signals: SIGHUP reloads the config; SIGTERM and SIGINT exit, leaving limits in place\n"
	      "exit status: 0 ok, 1 failure, 2 config error, 3 no usable cgroup v2,\n"
	      "             4 io device missing, 5 cgroup-root unusable, 64 usage error\n",
	      out);
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "once", no_argument, NULL, '1' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .config = DEFAULT_CONFIG };
	while ((c = getopt_long(argc, argv, "c:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case 'n':
			o->dry_run = true;
			break;
		case '1':
			o->once = true;
			break;
		case 'f':
			o->foreground = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "drfd: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* Reload on SIGHUP: a bad config is refused and the one in force stays. */
static void reload(struct drf_enforced *s, struct drf_reconciler *rc, const char *path,
		   const struct drf_io_target *io)
{
	struct drf_enforced n;
	char err[1024];
	int r;

	sd_notify(0, "RELOADING=1");
	r = drf_enforced_load(&n, path, io, err, sizeof(err));
	if (r == 0 && strcmp(n.cfg.cgroup_root, s->cfg.cgroup_root) != 0) {
		snprintf(err, sizeof(err), "%s: cgroup-root changed from '%s' to '%s'; that needs a "
			 "restart", path, s->cfg.cgroup_root, n.cfg.cgroup_root);
		drf_enforced_free(&n);
		r = -EINVAL;
	}
	/* A reload may add a resource whose controller the host does not pass down. */
	if (r == 0 && drf_check_cgroup(&n.cfg, err, sizeof(err)) != DRF_EXIT_OK) {
		drf_enforced_free(&n);
		r = -EINVAL;
	}
	if (r == 0 && (drf_knobs_controllers(&n.cfg) & CGFS_IO) &&
	    (!s->cfg.io_device || !n.cfg.io_device || strcmp(n.cfg.io_device, s->cfg.io_device))) {
		snprintf(err, sizeof(err), "%s: io-device changed; that needs a restart", path);
		drf_enforced_free(&n);
		r = -EINVAL;
	}
	if (r < 0) {
		fprintf(stderr, "drfd: reload refused, keeping the configuration in force: %s\n",
			err);
		sd_notify(0, "READY=1\nSTATUS=reload refused; previous configuration in force");
		return;
	}
	fprintf(stderr, "drfd: reloaded %s: %zu tenants\n", path, n.cfg.n_tenants);
	log_plan(&n);
	log_caveats(&n, io);
	drf_reconcile_removed(rc, &s->cfg, &n.cfg);
	drf_enforced_free(s);
	*s = n;
	run_pass(rc, s, false);
	sd_notify(0, "READY=1\nSTATUS=enforcing");
}

static int loop(struct drf_enforced *s, struct drf_reconciler *rc, const char *path,
		const struct drf_io_target *io, const sigset_t *mask)
{
	int sfd = signalfd(-1, mask, SFD_CLOEXEC), tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	int ret = DRF_EXIT_OK;

	if (sfd < 0 || tfd < 0 || arm_timer(tfd, s->cfg.interval_ms) < 0) {
		fprintf(stderr, "drfd: cannot set up signalfd/timerfd: %s\n", strerror(errno));
		ret = DRF_EXIT_FAILURE;
		goto out;
	}
	for (;;) {
		struct pollfd p[2] = { { .fd = sfd, .events = POLLIN }, { .fd = tfd, .events = POLLIN } };

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "drfd: poll: %s\n", strerror(errno));
			ret = DRF_EXIT_FAILURE;
			break;
		}
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) != sizeof(si))
				continue;
			if (si.ssi_signo == SIGHUP) {
				double old = s->cfg.interval_ms;

				reload(s, rc, path, io);
				if (s->cfg.interval_ms != old)
					arm_timer(tfd, s->cfg.interval_ms);
				continue;
			}
			fprintf(stderr, "drfd: %s: exiting; the limits stay in place\n",
				strsignal((int)si.ssi_signo));
			sd_notify(0, "STOPPING=1");
			break;
		}
		if (p[1].revents & POLLIN) {
			unsigned long long ticks;

			if (read(tfd, &ticks, sizeof(ticks)) != sizeof(ticks))
				continue;
			run_pass(rc, s, true);
		}
	}
out:
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	return ret;
}

/*
 * Forks. The child returns -1 with *ret_ready_fd to write one byte to once it
 * is enforcing; the parent waits for that byte (exit 0) or for the child to die
 * (its exit status), and returns that, printing the child's pid on success.
 */
static int daemonize(int *ret_ready_fd)
{
	int p[2], status;
	pid_t pid;
	char b;

	if (pipe2(p, O_CLOEXEC) < 0)
		return DRF_EXIT_FAILURE;
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "drfd: fork: %s\n", strerror(errno));
		return DRF_EXIT_FAILURE;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		close(p[0]);
		setsid();
		/* stdin and stdout are the caller's, e.g. a pipe it reads the pid from;
		 * stderr stays: it is the log. */
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			close(null);
		}
		*ret_ready_fd = p[1];
		return -1;
	}
	close(p[1]);
	if (read(p[0], &b, 1) == 1) {
		printf("%d\n", (int)pid);
		return DRF_EXIT_OK;
	}
	if (waitpid(pid, &status, 0) == pid && WIFEXITED(status))
		return WEXITSTATUS(status);
	return DRF_EXIT_FAILURE;
}

int main(int argc, char **argv)
{
	struct drf_enforced s = { 0 };
	struct drf_io_target io = { 0 }, *iop = NULL;
	struct cgfs_recorder rec = { 0 };
	struct drf_reconciler rc;
	struct cgfs fs = { .rootfd = -1 };
	char err[2048], mount[4096] = "";
	struct opts o;
	sigset_t mask;
	int r, ret, ready_fd = -1;

	setvbuf(stderr, NULL, _IOLBF, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse_args(argc, argv, &o) < 0)
		return DRF_EXIT_USAGE;
	/* Signals are blocked from the start and taken from the signalfd in the loop. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);

	/* The config is loaded before the host check only to know what to check. */
	r = drf_enforced_load(&s, o.config, NULL, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "drfd: %s\n", err);
		return DRF_EXIT_CONFIG;
	}
	ret = drf_check_cgroup(&s.cfg, err, sizeof(err));
	if (ret != DRF_EXIT_OK && !o.dry_run) {
		fprintf(stderr, "drfd: cannot enforce on this host: %s\n", err);
		goto out_state;
	}
	if (ret != DRF_EXIT_OK)
		fprintf(stderr, "drfd: note: this host could not enforce: %s\n"
				"drfd: dry run: showing the writes for an empty tree\n", err);
	drf_cgroup2_mount_of(s.cfg.cgroup_root, mount, sizeof(mount));
	ret = drf_check_io_device(&s.cfg, mount[0] ? mount : NULL, &io, err, sizeof(err));
	if (ret != DRF_EXIT_OK) {
		fprintf(stderr, "drfd: %s\n", err);
		goto out_state;
	}
	if (drf_knobs_controllers(&s.cfg) & CGFS_IO) {
		/* The io knobs depend on the device's scheduler, known only now. */
		iop = &io;
		drf_knobs_compute(&s.cfg, &s.problem, &s.result, iop, s.knobs);
	}

	if (o.dry_run) {
		rec = (struct cgfs_recorder){ .inner = &cgfs_real_ops, .pass_changes = false,
					      .root = s.cfg.cgroup_root, .out = stdout };
		r = cgfs_open(&fs, s.cfg.cgroup_root, false, &cgfs_recording_ops, &rec);
		if (r == -ENOENT) {
			printf("mkdir %s\n", s.cfg.cgroup_root);
			rec.inner = NULL;
			r = cgfs_open_virtual(&fs, s.cfg.cgroup_root, &cgfs_recording_ops, &rec);
		}
	} else {
		r = cgfs_open(&fs, s.cfg.cgroup_root, true, &cgfs_real_ops, NULL);
	}
	if (r < 0) {
		fprintf(stderr, "drfd: cannot open or create cgroup-root '%s': %s\n", s.cfg.cgroup_root,
			strerror(-r));
		ret = DRF_EXIT_ROOT;
		goto out_state;
	}
	if (!o.dry_run) {
		int n = cgfs_nprocs(&fs, "");

		if (n != 0) {
			if (n > 0)
				fprintf(stderr, "drfd: cgroup-root '%s' holds %d processes; cgroup v2 "
						"lets no cgroup with processes pass controllers to children: "
						"move them into a tenant or elsewhere\n", s.cfg.cgroup_root, n);
			else
				fprintf(stderr, "drfd: cannot read '%s/cgroup.procs': %s\n",
					s.cfg.cgroup_root, strerror(-n));
			ret = DRF_EXIT_ROOT;
			goto out_fs;
		}
		if (access(s.cfg.cgroup_root, W_OK) < 0) {
			fprintf(stderr, "drfd: cgroup-root '%s' is not writable: %s\n",
				s.cfg.cgroup_root, strerror(errno));
			ret = DRF_EXIT_ROOT;
			goto out_fs;
		}
	}
	/*
	 * Detach before any thread exists; the parent waits for the child's first
	 * pass and exits with its verdict, so "drfd -c FILE && ..." sees limits in place.
	 */
	if (!o.dry_run && !o.once && !o.foreground && !getenv("NOTIFY_SOCKET")) {
		ret = daemonize(&ready_fd);
		if (ret >= 0)
			goto out_fs; /* the parent */
		ret = DRF_EXIT_OK;
	}
	r = drf_reconciler_init(&rc, &fs, iop, o.dry_run ? NULL : stderr, !o.dry_run && !o.once);
	if (r < 0) {
		fprintf(stderr, "drfd: cannot start: %s\n", strerror(-r));
		ret = DRF_EXIT_FAILURE;
		goto out_fs;
	}
	fprintf(stderr, "drfd: %s: %zu tenants, policy %s, mode %s, root %s%s\n", o.config,
		s.cfg.n_tenants, drf_policy_name(s.cfg.policy), drf_mode_name(s.cfg.mode),
		s.cfg.cgroup_root, o.dry_run ? " (dry run)" : "");
	log_plan(&s);
	log_caveats(&s, iop);
	r = run_pass(&rc, &s, false);
	if (o.dry_run || o.once) {
		drf_reconciler_drain(&rc);
		ret = r < 0 ? DRF_EXIT_FAILURE : DRF_EXIT_OK;
		goto out_rc;
	}
	sd_notify(0, "READY=1\nSTATUS=enforcing");
	if (ready_fd >= 0) {
		char ok = 0;

		if (write(ready_fd, &ok, 1) != 1)
			fprintf(stderr, "drfd: cannot tell the parent it is ready: %s\n",
				strerror(errno));
		close(ready_fd);
	}
	ret = loop(&s, &rc, o.config, iop, &mask);
out_rc:
	drf_reconciler_free(&rc);
out_fs:
	cgfs_close(&fs);
out_state:
	drf_enforced_free(&s);
	return ret;
}
