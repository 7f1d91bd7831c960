// SPDX-License-Identifier: MIT
/*
 * drfd: computes the DRF allocation of the config's tenants and makes cgroup v2
 * enforce it. main() only: the checks and their exit codes, daemonizing, and
 * handing over to the daemon (daemon.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "config.h"
#include "daemon.h"
#include "featureset.h"
#include "fleetd.h"
#include "clock.h"
#include "hostcheck.h"
#include "httpd.h"
#include "knobs.h"
#include "lock.h"
#include "log.h"
#include "netbpf.h"
#include "netcheck.h"
#include "pins.h"
#include "probebpf.h"
#include "shaper.h"
#include "slice.h"
#include "statedir.h"
#include "tasks.h"
#include "tc_nl.h"
#include "unitname.h"

#ifndef DRF_VERSION
#define DRF_VERSION "0.3.0"
#endif
#ifndef DRF_SYSCONFDIR
#define DRF_SYSCONFDIR "/etc"
#endif
#define DEFAULT_CONFIG DRF_SYSCONFDIR "/drfd/drfd.conf"

/* drfd's exit codes, one per kind of problem (drfd(8)). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,
	EXIT_CONFIG = 2,  /* the config cannot be read, or is invalid */
	EXIT_CGROUP = 3,  /* no usable cgroup v2 (v1/hybrid host, missing controllers) */
	EXIT_DEVICE = 4,  /* io-device missing or a partition */
	EXIT_ROOT = 5,    /* cgroup-root cannot be created, written, holds processes, not cgroup2 */
	EXIT_LOCKED = 6,  /* another drfd holds this cgroup-root or its status socket */
	EXIT_NET = 7,     /* the network cannot be shaped: device, bpffs, cgroup_skb, HTB, a foreign qdisc */
	EXIT_STATEDIR = 8, /* state-dir is not root's alone (owner, mode, a symlink): statedir.h */
	EXIT_LISTEN = 9,  /* metrics-listen: its address cannot be listened on (in use, not here) */
	EXIT_USAGE = 64,
};

struct opts {
	const char *config;
	bool dry_run, once, foreground;
};

static void usage(FILE *out)
{
	fputs("usage: drfd [-c FILE] [--dry-run] [--once] [--foreground]\n"
	      "       drfd --version | --help\n"
	      "\n"
	      "  -c, --config FILE   main config file (default " DEFAULT_CONFIG ")\n"
	      "  --dry-run           print the cgroup writes it would make, change nothing\n"
	      "  --once              reconcile once and exit\n"
	      "  --foreground        stay in the foreground (the default under systemd)\n"
	      "\n"
	      "signals: SIGHUP reloads the config; SIGTERM and SIGINT exit, leaving limits in place\n"
	      "exit status: 0 ok, 1 failure, 2 config error, 3 no usable cgroup v2,\n"
	      "             4 io device missing, 5 cgroup-root unusable,\n"
	      "             6 another drfd holds the cgroup-root, 7 the network cannot be\n"
	      "             shaped as configured, 8 state-dir unsafe, 9 metrics-listen\n"
	      "             cannot listen, 64 usage error\n"
	      "see drfd(8) and drfd.conf(5)\n",
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
		{ "version", no_argument, NULL, 'V' },
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
			return 1;
		case 'V':
			printf("drfd %s\n", DRF_VERSION);
			return 1;
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

/*
 * Forks. The child returns -1 with *ret_ready_fd to write one byte to once it
 * is enforcing; the parent waits for that byte (exit 0) or for the child to die
 * (its exit status), and returns that, printing the child's pid on success.
 */
static int daemonize(const struct drf_logger *log, int *ret_ready_fd)
{
	int p[2], status;
	pid_t pid;
	char b;

	if (pipe2(p, O_CLOEXEC) < 0)
		return EXIT_FAIL;
	pid = fork();
	if (pid < 0) {
		drf_log(log, LOG_ERR, "cannot fork: %s", strerror(errno));
		return EXIT_FAIL;
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
		/* A caller that closed stdout still gets the verdict: the exit code. */
		printf("%d\n", (int)pid);
		fflush(stdout);
		if (b == 0)
			return EXIT_OK;
		drf_log(log, LOG_ERR, "drfd (pid %d) is running, but its first pass could not put "
				      "every limit in place; it retries each tick (see its log and "
				      "drfctl status)", (int)pid);
		return EXIT_FAIL;
	}
	if (waitpid(pid, &status, 0) == pid && WIFEXITED(status))
		return WEXITSTATUS(status);
	return EXIT_FAIL;
}

/* The slices' ops (slice.h): reads from the files, changes through systemd. */
struct slices {
	struct cgfs_slice ops;
	void *bus;
	struct cgfs_bus_recorder bus_rec;
};

/*
 * Under systemd: drf.slice started (or found), and its cgroup opened with the
 * slice ops; a dry run records the calls it would make. An exit code.
 */
static int open_slices(struct drfd *d, struct cgfs *fs, struct cgfs_recorder *rec,
		       struct slices *sl)
{
	struct cgfs_prop desc = { .name = "Description", .type = CGFS_PROP_STR,
				  .s = "drfd tenants (drfd(8))" };
	int r;

	sl->ops = (struct cgfs_slice){ .fs = &cgfs_real_ops };
	if (d->dry_run) {
		sl->bus_rec = (struct cgfs_bus_recorder){ .out = stdout };
		sl->ops.bus = &cgfs_bus_recording_ops;
		sl->ops.bus_ctx = &sl->bus_rec;
		r = cgfs_open(fs, d->root, false, &cgfs_slice_ops, &sl->ops);
		if (r == -ENOENT) {
			/* No drf.slice yet: the calls for an empty tree. */
			sl->bus_rec.inner = NULL;
			cgfs_bus_recording_ops.start(&sl->bus_rec, DRF_SLICE_ROOT, &desc, 1);
			*rec = (struct cgfs_recorder){ .inner = NULL, .root = d->root };
			sl->ops.fs = &cgfs_recording_ops;
			sl->ops.fs_ctx = rec;
			r = cgfs_open_virtual(fs, d->root, &cgfs_slice_ops, &sl->ops);
		}
		if (r < 0) {
			drf_log(d->log, LOG_ERR, "cannot open '%s': %s", d->root, strerror(-r));
			return EXIT_ROOT;
		}
		return EXIT_OK;
	}
	r = cgfs_bus_open(&sl->bus);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "cgroup-root = auto: systemd is the init system, but drfd "
					 "cannot reach it over D-Bus (/run/systemd/private, or the "
					 "system bus): %s; set cgroup-root to a path to manage "
					 "cgroupfs without systemd", strerror(-r));
		return EXIT_ROOT;
	}
	sl->ops.bus = &cgfs_bus_real_ops;
	sl->ops.bus_ctx = sl->bus;
	r = cgfs_bus_real_ops.start(sl->bus, DRF_SLICE_ROOT, &desc, 1);
	if (r < 0 && r != -EEXIST) {
		drf_log(d->log, LOG_ERR, "cannot start %s through systemd: %s", DRF_SLICE_ROOT,
			strerror(-r));
		return EXIT_ROOT;
	}
	r = cgfs_open(fs, d->root, false, &cgfs_slice_ops, &sl->ops);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "cannot open '%s', the cgroup of %s: %s", d->root,
			DRF_SLICE_ROOT, strerror(-r));
		return EXIT_ROOT;
	}
	r = drf_check_cgroup2_fd(fs->rootfd);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "'%s' is not on a cgroup2 filesystem (%s)", d->root,
			strerror(-r));
		return EXIT_ROOT;
	}
	return EXIT_OK;
}

/* Opens (creating) the root and checks it; an exit code. */
static int open_root(struct drfd *d, struct cgfs *fs, struct cgfs_recorder *rec,
		     struct slices *sl)
{
	int r, n;

	if (d->decl.cfg.slices)
		return open_slices(d, fs, rec, sl);
	if (d->dry_run) {
		*rec = (struct cgfs_recorder){ .inner = &cgfs_real_ops, .pass_changes = false,
					       .root = d->root, .out = stdout };
		r = cgfs_open(fs, d->root, false, &cgfs_recording_ops, rec);
		if (r == -ENOENT) {
			printf("mkdir %s\n", d->root);
			rec->inner = NULL;
			r = cgfs_open_virtual(fs, d->root, &cgfs_recording_ops, rec);
		}
		if (r < 0) {
			drf_log(d->log, LOG_ERR, "cannot open cgroup-root '%s': %s",
				d->root, strerror(-r));
			return EXIT_ROOT;
		}
		return EXIT_OK;
	}
	r = cgfs_open(fs, d->root, true, &cgfs_real_ops, NULL);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "cannot open or create cgroup-root '%s': %s",
			d->root, strerror(-r));
		return EXIT_ROOT;
	}
	/* Nothing but cgroupfs: a directory mounted over the root is not followed. */
	r = drf_check_cgroup2_fd(fs->rootfd);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "cgroup-root '%s' is not on a cgroup2 filesystem (%s): "
					 "another filesystem is mounted there; drfd writes only to "
					 "cgroup v2", d->root, strerror(-r));
		return EXIT_ROOT;
	}
	n = cgfs_nprocs(fs, "");
	if (n > 0) {
		drf_log(d->log, LOG_ERR, "cgroup-root '%s' holds %d processes; cgroup v2 lets no "
					 "cgroup with processes pass controllers to children: move "
					 "them into a tenant or elsewhere", d->root, n);
		return EXIT_ROOT;
	}
	if (n < 0) {
		drf_log(d->log, LOG_ERR, "cannot read '%s/cgroup.procs': %s",
			d->root, strerror(-n));
		return EXIT_ROOT;
	}
	if (access(d->root, W_OK) < 0) {
		drf_log(d->log, LOG_ERR, "cgroup-root '%s' is not writable: %s",
			d->root, strerror(errno));
		return EXIT_ROOT;
	}
	return EXIT_OK;
}

/* The ops of the environment and their state: the real system, or recording for a dry run. */
struct system {
	int root_lock_fd;               /* the cgroup-root's lock, held for drfd's life */
	int lock_fd;                    /* the net device's lock, held for drfd's life */
	bool nl_open;
	struct drf_tc_nl nl;
	struct drf_netbpf bpf;
	struct drf_tc_recorder tc_rec;
	struct drf_netbpf_recorder *bpf_rec;
	struct drf_probebpf probes;
};

/*
 * The network's ops: netlink and the BPF loader, or their recorders for a dry
 * run (passing reads to netlink where it opens). Without netlink a drfd that
 * shapes nothing still runs: it only cannot clean up a device it shaped before.
 */
static int setup_net_ops(struct drfd *d, struct drfd_env *env, struct system *sys)
{
	const struct drf_config *c = &d->decl.cfg;
	int nl = drf_tc_nl_open(&sys->nl);

	sys->nl_open = nl == 0;
	if (!d->dry_run) {
		env->tc = nl == 0 ? &drf_tc_nl_ops : NULL;
		env->tc_ctx = &sys->nl;
		env->netbpf = &drf_netbpf_real_ops;
		env->netbpf_ctx = &sys->bpf;
		return nl;
	}
	sys->tc_rec = (struct drf_tc_recorder){ .inner = nl == 0 ? &drf_tc_nl_ops : NULL,
						.inner_ctx = &sys->nl, .ifname = c->net_device,
						.out = stdout };
	sys->bpf_rec = calloc(1, sizeof(*sys->bpf_rec));
	if (!sys->bpf_rec)
		return -ENOMEM;
	sys->bpf_rec->out = stdout;
	env->tc = &drf_tc_recording_ops;
	env->tc_ctx = &sys->tc_rec;
	env->netbpf = &drf_netbpf_recording_ops;
	env->netbpf_ctx = sys->bpf_rec;
	return 0;
}

/*
 * Sets up d->net when the config shares the network: checks the host first
 * (nothing is installed before every check passed). An exit code.
 */
static int setup_net(struct drfd *d, const struct drfd_env *env, const char *mount)
{
	const struct drf_config *c = &d->decl.cfg;
	char err[2048], pin[256];
	uint32_t level = 0;
	int r;

	if (!(c->capacity[DRF_RES_NET] > 0) && !(c->capacity[DRF_RES_NET_IN] > 0))
		return EXIT_OK;
	if (!env->tc) {
		drf_log(d->log, LOG_ERR, "cannot open a netlink socket, with which drfd shapes "
					 "'%s'", c->net_device);
		return EXIT_NET;
	}
	r = drf_check_net(c, env->tc, env->tc_ctx, err, sizeof(err));
	if (r < 0 && !d->dry_run) {
		drf_log(d->log, LOG_ERR, "cannot shape the network: %s", err);
		return EXIT_NET;
	}
	if (r < 0)
		drf_log(d->log, LOG_NOTICE, "this host could not shape the network: %s; dry run: "
					    "showing what drfd would install", err);
	r = drf_pin_paths(d->root, mount[0] ? mount : "/sys/fs/cgroup", &level, pin, sizeof(pin));
	if (r == 0)
		r = drf_shaper_init(&d->net, c->net_device, env->tc, env->tc_ctx, env->netbpf,
				    env->netbpf_ctx, env->fs, pin, level, d->log);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "cannot set up the network shaper: %s", strerror(-r));
		return EXIT_FAIL;
	}
	/* fq_codel under each tenant class, where the kernel has it. */
	d->net.fq_codel_known = drf_have_qdisc("fq_codel") == 1;
	if (c->capacity[DRF_RES_NET] > 0 && drf_have_qdisc("fq_codel") == 0) {
		d->net.leaf_fq_codel = false;
		drf_log(d->log, LOG_WARNING, "this kernel has no fq_codel qdisc (sch_fq_codel): "
					     "tenant classes keep HTB's default FIFO queue");
	}
	d->has_net = true;
	return EXIT_OK;
}

/*
 * Attaches the usage probes, pinned per cgroup-root under bpffs's
 * drfd-probes/ (named as the network's pins under drfd/). Without them drfd
 * measures from cgroup files alone, and says so.
 */
static void start_probes(struct drfd *d, struct drfd_env *env, const char *mount, char *ppin,
			 size_t len)
{
	char pin[256];
	uint32_t level = 0;
	int r = drf_pin_paths(d->root, mount[0] ? mount : "/sys/fs/cgroup", &level, pin, sizeof(pin));

	if (r == 0 && (size_t)snprintf(ppin, len, "%s/drfd-probes/%s", DRF_BPFFS,
				       pin + strlen(DRF_BPFFS "/drfd/")) >= len)
		r = -ENAMETOOLONG;
	if (r < 0) {
		snprintf(ppin, len, "no pin directory for '%s': %s", d->root, strerror(-r));
		drf_log(d->log, LOG_WARNING, "usage probes off: %s", ppin);
		env->probes_why = ppin;
		return;
	}
	env->probe = &drf_probe_real_ops;
	env->probe_pin_dir = ppin;
	env->root_level = level;
}

/*
 * A start that failed leaves nothing of drfd's behind: the cgroup-root this
 * drfd made is removed (rmdir removes only an empty cgroup). Not one another
 * drfd holds: its lock says so.
 */
static void undo_root(const struct drf_logger *log, struct cgfs *fs)
{
	if (!fs->created || fs->rootfd < 0)
		return;
	fs->created = false;
	if (rmdir(fs->root) < 0)
		drf_log(log, LOG_WARNING, "cannot remove cgroup-root '%s', which drfd made before "
					  "it failed to start: %s", fs->root, strerror(errno));
	else
		drf_log(log, LOG_NOTICE, "removed cgroup-root '%s', which drfd made before it "
					 "failed to start", fs->root);
}

static void system_free(struct system *sys)
{
	if (sys->lock_fd >= 0)
		close(sys->lock_fd);
	if (sys->root_lock_fd >= 0)
		close(sys->root_lock_fd);
	if (sys->nl_open)
		drf_tc_nl_close(&sys->nl);
	free(sys->bpf_rec);
}

/*
 * The first pass has ended: READY=1, and the parent (without --foreground)
 * is told its verdict: limits in place, or not (the network's failures count
 * as much as the cgroups').
 */
static void first_pass_done(struct drfd *d, void *data)
{
	int *ready_fd = data;
	unsigned errors = d->last.errors + (d->has_net ? d->net_last.errors : 0);

	if (errors)
		drf_log(d->log, LOG_WARNING, "the first pass had %u errors; drfd goes on and "
					     "retries them each tick (drfctl status lists them)",
			errors);
	sd_notifyf(0, "READY=1\nSTATUS=%s", d->status_text[0] ? d->status_text : "enforcing");
	if (*ready_fd >= 0) {
		char verdict = errors ? 1 : 0;

		if (write(*ready_fd, &verdict, 1) != 1)
			drf_log(d->log, LOG_WARNING, "cannot tell the parent it is ready: %s",
				strerror(errno));
		close(*ready_fd);
		*ready_fd = -1;
	}
}

int main(int argc, char **argv)
{
	struct system sys = { .root_lock_fd = -1, .lock_fd = -1 };
	struct drfd d = { .listen_fd = -1 };
	struct drfd_env env = {
		.clock = &drf_clock_system, .host = &drf_host_real, .check_cgroup = drf_check_cgroup,
	};
	struct drf_stderr_sink stderr_sink;
	struct drf_logger stderr_log;
	struct cgfs_recorder rec = { 0 };
	struct slices sl = { 0 };
	struct drf_spawn_units units = { .errfd = STDERR_FILENO };
	char exe[PATH_MAX];
	struct drf_reconcile_stats st;
	struct cgfs fs = { .rootfd = -1 };
	char err[2048], mount[4096] = "", root[4096], probe_pin[300];
	const char *how = "";
	struct opts o;
	sigset_t mask;
	int r, ret, ready_fd = -1;

	/* A task's supervisor (tasks.h): drfd starts it into the task's cgroup. */
	if (argc == 3 && strcmp(argv[1], "--task-supervisor") == 0)
		return drf_task_supervise(argv[2]);
	/* The same as systemd starts it in a task's service (tenants as slices). */
	if (argc == 3 && strcmp(argv[1], "--task-supervisor-stdio") == 0)
		return drf_task_supervise_stdio(argv[2]);
	/* A closed stderr or stdout must not kill the daemon: writes just fail. */
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stderr, NULL, _IOLBF, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	stderr_log = drf_log_stderr(&stderr_sink, LOG_INFO);
	env.log = d.log = &stderr_log;
	d.env = &env;
	drfd_add_features(&d); /* the fleet, the task queue, the sockets (featureset.c) */
	r = parse_args(argc, argv, &o);
	if (r != 0)
		return r < 0 ? EXIT_USAGE : EXIT_OK;
	d.config_path = o.config;
	d.dry_run = env.dry_run = o.dry_run;
	/* Signals are blocked from the start and taken by the event loop. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);

	/* The config is loaded before the host check only to know what to check. */
	r = drf_declared_load(&d.decl, o.config, env.host, err, sizeof(err));
	if (r < 0) {
		drf_log_lines(d.log, LOG_ERR, "", err);
		return r == -ENOMEM ? EXIT_FAIL : EXIT_CONFIG;
	}
	/* A fleet node starts with no tenants: they come with the fleet's assignment. */
	d.fleet_mode = d.decl.cfg.fleet.on;
	/* Before anything is created or read there: tasks run as whom its files say. */
	if (d.decl.cfg.state_dir &&
	    drf_statedir_check(d.decl.cfg.state_dir, err, sizeof(err)) < 0) {
		drf_log(d.log, LOG_ERR, "%s", err);
		ret = EXIT_STATEDIR;
		goto out;
	}
	if (d.decl.cfg.cgroup_root_auto) {
		r = drf_resolve_auto_root(&d.decl.cfg, root, sizeof(root), &how);
		if (r < 0) {
			drf_log(d.log, LOG_ERR, "cgroup-root = auto: %s",
				r == -ENOENT ? how : strerror(-r));
			ret = EXIT_ROOT;
			goto out;
		}
	} else {
		snprintf(root, sizeof(root), "%s", d.decl.cfg.cgroup_root);
	}
	d.root = strdup(root);
	if (!d.root) {
		ret = EXIT_FAIL;
		goto out;
	}
	r = drf_check_cgroup(&d.decl.cfg, d.root, err, sizeof(err));
	if (r < 0 && !o.dry_run) {
		drf_log(d.log, LOG_ERR, "cannot enforce on this host: %s", err);
		ret = r == -ENOTDIR ? EXIT_ROOT : EXIT_CGROUP;
		goto out;
	}
	if (r < 0)
		drf_log(d.log, LOG_NOTICE, "this host could not enforce: %s; dry run: showing the "
					   "writes for an empty tree", err);
	drf_cgroup2_mount_of(d.root, mount, sizeof(mount));
	r = drf_check_io_device(&d.decl.cfg, mount[0] ? mount : NULL, &d.io, err, sizeof(err));
	if (r < 0) {
		drf_log(d.log, LOG_ERR, "%s", err);
		ret = EXIT_DEVICE;
		goto out;
	}
	/* The io knobs depend on the device's scheduler, known only now. */
	d.has_io = drf_knobs_controllers(&d.decl.cfg) & DRF_CTRL_IO;
	ret = open_root(&d, &fs, &rec, &sl);
	if (ret != EXIT_OK)
		goto out_fs;
	env.fs = d.fs = &fs;
	if (setup_net_ops(&d, &env, &sys) == -ENOMEM) {
		ret = EXIT_FAIL;
		goto out_fs;
	}
	ret = setup_net(&d, &env, mount);
	if (ret != EXIT_OK)
		goto out_fs;
	/*
	 * Detach before any thread exists; the parent waits for the child's first
	 * tick and exits with its verdict, so "drfd -c FILE && ..." sees limits in place.
	 */
	if (!o.dry_run && !o.once && !o.foreground && !getenv("NOTIFY_SOCKET")) {
		ret = daemonize(d.log, &ready_fd);
		if (ret >= 0) {
			fs.created = false; /* the child's to undo, if it fails */
			goto out_fs; /* the parent */
		}
	}
	if (!o.dry_run) {
		pid_t holder = 0;

		r = sys.root_lock_fd = drf_lock_root(fs.rootfd, DRF_LOCK_DIR, &holder);
		if (r == -EWOULDBLOCK) {
			fs.created = false; /* the root is the other drfd's */
			if (holder > 0)
				drf_log(d.log, LOG_ERR, "another drfd (pid %d) is enforcing "
							"cgroup-root '%s'; one drfd per root",
					(int)holder, d.root);
			else
				drf_log(d.log, LOG_ERR, "another drfd is enforcing cgroup-root "
							"'%s'; one drfd per root", d.root);
			ret = EXIT_LOCKED;
			goto out_fs;
		}
		if (r < 0) {
			drf_log(d.log, LOG_ERR, "cannot lock cgroup-root '%s' under %s: %s",
				d.root, DRF_LOCK_DIR, strerror(-r));
			ret = EXIT_ROOT;
			goto out_fs;
		}
		/* And one per network device: in the daemon, so the lock names its pid. */
		if (d.has_net) {
			sys.lock_fd = drf_lock_device(d.net.ifname, DRF_LOCK_DIR, &holder);
			if (sys.lock_fd == -EWOULDBLOCK) {
				if (holder > 0)
					drf_log(d.log, LOG_ERR, "another drfd (pid %d) shapes '%s'; "
								"one drfd per device",
						(int)holder, d.net.ifname);
				else
					drf_log(d.log, LOG_ERR, "another drfd shapes '%s'; one drfd "
								"per device", d.net.ifname);
				ret = EXIT_LOCKED;
				goto out_fs;
			}
			if (sys.lock_fd < 0) {
				drf_log(d.log, LOG_ERR, "cannot lock '%s' under " DRF_LOCK_DIR ": %s",
					d.net.ifname, strerror(-sys.lock_fd));
				ret = EXIT_FAIL;
				goto out_fs;
			}
		}
	}
	r = sd_event_new(&d.event);
	if (r < 0) {
		drf_log(d.log, LOG_ERR, "cannot create the event loop: %s", strerror(-r));
		ret = EXIT_FAIL;
		goto out_fs;
	}
	/* systemd's messages read as they come, by this process (the daemon's, after a fork). */
	r = cgfs_bus_attach(sl.bus, d.event);
	if (r < 0) {
		drf_log(d.log, LOG_ERR, "cannot reach systemd over D-Bus: %s", strerror(-r));
		ret = EXIT_ROOT;
		goto out_d;
	}
	if (!o.dry_run && !o.once) {
		r = drfd_listen(&d, d.decl.cfg.status_socket, d.decl.cfg.status_group, err,
				sizeof(err));
		if (r == -EADDRINUSE) {
			drf_log(d.log, LOG_ERR, "%s", err);
			ret = EXIT_LOCKED;
			goto out_d;
		}
		if (r < 0)
			drf_log(d.log, LOG_ERR, "%s; drfctl status will fall back to reading "
						"cgroupfs", err);
		else if (drfd_listen_root(&d, d.decl.cfg.status_socket, err, sizeof(err)) < 0)
			drf_log(d.log, LOG_ERR, "%s; root is served on the status socket alone, "
						"where others' connections can keep it waiting", err);
		/* A fleet node's etcd client and node: nothing is asked of etcd yet. */
		r = drfd_fleet_open(&d, err, sizeof(err));
		if (r < 0) {
			drf_log(d.log, LOG_ERR, "%s; drfd does not start", err);
			ret = r == -ENOMEM ? EXIT_FAIL : EXIT_CONFIG;
			goto out_d;
		}
		if (drfd_fleet_preload(&d) < 0) {
			drf_log(d.log, LOG_ERR, "out of memory; drfd does not start");
			ret = EXIT_FAIL;
			goto out_d;
		}
		/* The metrics endpoint, before anything is written: an address that cannot be
		 * listened on is the operator's to mend, and drfd does not start. */
		env.http = &drfd_http_real_ops;
		r = drfd_http_listen(&d, err, sizeof(err));
		if (r < 0) {
			drf_log(d.log, LOG_ERR, "%s; drfd does not start", err);
			ret = EXIT_LISTEN;
			goto out_d;
		}
	}
	drf_log(d.log, LOG_NOTICE, "%s: %zu tenants, policy %s, mode %s, root %s%s%s%s%s",
		o.config, d.decl.cfg.n_tenants, drf_policy_name(d.decl.cfg.policy),
		drf_mode_name(d.decl.cfg.mode), d.root,
		d.decl.cfg.cgroup_root_auto ? " (auto: " : "",
		d.decl.cfg.cgroup_root_auto ? how : "", d.decl.cfg.cgroup_root_auto ? ")" : "",
		o.dry_run ? " (dry run)" : "");
	drfd_log_impossible(&d);
	/* The usage probes, and the task queue, for the daemon only: a dry run or one pass
	 * measures nothing and runs no task. */
	if (!o.dry_run && !o.once) {
		env.spawn = &drf_spawn_real_ops;
		/* On slices, a task's supervisor is a service's, started through systemd. */
		if (d.decl.cfg.slices) {
			ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

			exe[n > 0 ? n : 0] = '\0';
			units.bus = sl.ops.bus;
			units.bus_ctx = sl.ops.bus_ctx;
			units.exe = exe;
			env.spawn = &drf_spawn_unit_ops;
			env.spawn_ctx = &units;
		}
		env.probe_ctx = &sys.probes;
		start_probes(&d, &env, mount, probe_pin, sizeof(probe_pin));
	}
	env.held_files = drfd_tune_process();
	r = drfd_start(&d, &st);
	if (r < 0) {
		drf_log(d.log, LOG_ERR, "cannot start: %s", strerror(-r));
		ret = EXIT_FAIL;
		goto out_d;
	}
	/* Started: what drfd made stays, with its limits, whatever follows. */
	fs.created = false;
	drfd_log_plan(d.log, &d.plan, d.has_io ? &d.io : NULL);
	if (o.dry_run || o.once) {
		drfd_finish_pass(&d);
		st = d.last;
		drf_reconciler_drain(&d.rc);
		/* A dry run works on any host: the network's failures count for --once. */
		ret = st.errors || d.rc.worker_failures ||
				      (o.once && !o.dry_run && d.has_net && d.net_last.errors)
			      ? EXIT_FAIL
			      : EXIT_OK;
		goto out_d;
	}
	/* A fleet node's last good assignment (the state dir's), then etcd's. */
	r = drfd_fleet_start(&d);
	if (r < 0) {
		drf_log(d.log, LOG_ERR, "fleet: cannot start the node: %s", strerror(-r));
		ret = EXIT_FAIL;
		goto out_d;
	}
	/* Ready once the first pass has ended, its steps taken by the loop (watchdog served). */
	r = drfd_when_settled(&d, first_pass_done, &ready_fd);
	if (r < 0) {
		drf_log(d.log, LOG_ERR, "cannot start: %s", strerror(-r));
		ret = EXIT_FAIL;
		goto out_d;
	}
	ret = drfd_run(&d);
out_d:
	drfd_free(&d);
	undo_root(d.log, &fs);
	cgfs_close(&fs);
	cgfs_bus_close(sl.bus);
	system_free(&sys);
	return ret;
out_fs:
	if (d.has_net)
		drf_shaper_free(&d.net);
	undo_root(d.log, &fs);
	cgfs_close(&fs);
	cgfs_bus_close(sl.bus);
	system_free(&sys);
out:
	drf_declared_free(&d.decl);
	free(d.root);
	return ret;
}
