// SPDX-License-Identifier: MIT
/*
 * A task's process side: the real spawn ops (clone3 straight into the task's
 * cgroup, then `drfd --task-supervisor DIR` with the task's directory and text
 * on fds 3 and 4), the unit spawn ops for tenants as slices (a transient
 * service started through systemd, the same supervisor handed the same two
 * on its stdout and stdin) and the supervisor, which runs the command with exactly the
 * submitter's credentials, waits for it, and writes DIR/exit. drfd is not
 * needed while a task runs: a restarted drfd finds the supervisor's files.
 */
#include "tasks.h"

#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/sched.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "statedir.h"
#include "unitname.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

static void real_reap(void *ctx, pid_t pid)
{
	(void)ctx;
	waitpid(pid, NULL, WNOHANG);
}

/*
 * The task's text, from drfd's memory, in a pipe for the supervisor: whom it
 * runs as is never read from a file. The whole text fits in the pipe (a submit
 * is at most about 60 kB; the pipe is grown to 1 MiB if need be), so drfd
 * writes it before the supervisor exists and never blocks on it.
 */
static int spec_pipe(const struct drf_task *t)
{
	char *text = drf_tasks_text(t);
	size_t len, off = 0;
	int p[2], r = 0;

	if (!text)
		return -ENOMEM;
	len = strlen(text);
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		free(text);
		return r;
	}
	if (len >= 65536 && fcntl(p[1], F_SETPIPE_SZ, 1 << 20) < 0)
		r = -E2BIG;
	while (r == 0 && off < len) {
		ssize_t w = write(p[1], text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			r = w < 0 && errno != EAGAIN ? -errno : -E2BIG;
		else
			off += (size_t)w;
	}
	free(text);
	close(p[1]);
	/* The supervisor reads to the end in blocking mode (the writer is gone already). */
	if (r == 0 && fcntl(p[0], F_SETFL, 0) < 0)
		r = -errno;
	if (r < 0) {
		close(p[0]);
		return r;
	}
	return p[0];
}

/* Closes every fd from `from` up: close_range, or one by one where it is missing. */
static void close_fds_from(int from)
{
	if (close_range((unsigned)from, ~0U, 0) == 0)
		return;
	for (long fd = from, max = sysconf(_SC_OPEN_MAX); fd < (max > 0 ? max : 1024); fd++)
		close((int)fd);
}

/*
 * clone3 with CLONE_INTO_CGROUP: the child starts in the task's cgroup, so the
 * move cannot fail half-way. In the child, only async-signal-safe calls: drfd
 * has threads. The task's directory and text go to fds 3 and 4, by way of fds
 * above 10 so that neither overwrites the other.
 */
static int real_spawn(void *ctx, const struct cgfs *fs, const char *cg, const struct drf_task *t,
		      const struct drf_knobs *limits, int dirfd, const char *dir, pid_t *ret)
{
	struct clone_args args = { 0 };
	char *argv[] = { "drfd", "--task-supervisor", (char *)dir, NULL };
	sigset_t all;
	long pid;
	int cfd, spec, r;

	(void)ctx;
	(void)limits; /* in the cgroup already: the reconciler wrote them */
	spec = spec_pipe(t);
	if (spec < 0)
		return spec;
	cfd = openat(fs->rootfd, cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (cfd < 0) {
		r = -errno;
		close(spec);
		return r;
	}
	args.flags = CLONE_INTO_CGROUP;
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)cfd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0) {
		int d, s;

		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setsid();
		d = fcntl(dirfd, F_DUPFD_CLOEXEC, 10);
		s = fcntl(spec, F_DUPFD_CLOEXEC, 10);
		if (d < 0 || s < 0 || dup2(d, DRF_SUPER_DIR_FD) < 0 ||
		    dup2(s, DRF_SUPER_SPEC_FD) < 0)
			_exit(127);
		/* Nothing else of drfd's (its socket, cgroup and bpf fds) goes on. */
		close_fds_from(DRF_SUPER_SPEC_FD + 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	r = pid < 0 ? -errno : 0;
	close(cfd);
	close(spec);
	if (r < 0)
		return r;
	*ret = (pid_t)pid;
	return 0;
}

const struct drf_spawn_ops drf_spawn_real_ops = {
	.spawn = real_spawn,
	.reap = real_reap,
};

/* The unit's properties beyond the limits: at most this many of those. */
#define UNIT_PROPS_MAX (CGFS_PROPS_MAX * DRF_NKNOBS)

static struct cgfs_prop *prop(struct cgfs_prop *p, size_t *n, const char *name,
			      enum cgfs_prop_type type, uint64_t u, const char *str)
{
	p[*n] = (struct cgfs_prop){ .name = name, .type = type, .u = u };
	if (str)
		snprintf(p[*n].s, sizeof(p[*n].s), "%s", str);
	return &p[(*n)++];
}

/*
 * Tenants as slices: the task's service, TENANT-SLICE/drf-task-ID.service,
 * started with its limits and the supervisor in one StartTransientUnit (see
 * tasks.h). Waited for until the supervisor runs (Type=exec).
 */
static int unit_spawn(void *ctx, const struct cgfs *fs, const char *cg, const struct drf_task *t,
		      const struct drf_knobs *limits, int dirfd, const char *dir, pid_t *ret)
{
	const struct drf_spawn_units *u = ctx;
	char *argv[] = { "drfd", "--task-supervisor-stdio", (char *)dir, NULL };
	struct cgfs_prop p[10 + UNIT_PROPS_MAX];
	char parent[4096], slice[DRF_UNIT_NAME_MAX + 1], desc[256];
	const char *leaf = strrchr(cg, '/');
	size_t n = 0;
	int spec, r;

	(void)fs;
	/* Never unlimited: a unit is started with the plan's limits or not at all. */
	if (!limits || !leaf || !cgfs_slice_is_task_unit(leaf + 1) ||
	    (size_t)(leaf - cg) >= sizeof(parent) || strlen(u->exe) >= CGFS_PROP_STR_MAX)
		return -EINVAL;
	memcpy(parent, cg, (size_t)(leaf - cg));
	parent[leaf - cg] = '\0';
	r = cgfs_slice_unit(parent, slice, sizeof(slice));
	if (r < 0)
		return r;
	snprintf(desc, sizeof(desc), "drfd task %" PRIu64 " of tenant %s (uid %u)", t->id,
		 t->tenant, (unsigned)t->uid);
	prop(p, &n, "Description", CGFS_PROP_STR, 0, desc);
	prop(p, &n, "Slice", CGFS_PROP_STR, 0, slice);
	/* Started once the supervisor is exec'd: a start that fails says so. */
	prop(p, &n, "Type", CGFS_PROP_STR, 0, "exec");
	prop(p, &n, "ExecStart", CGFS_PROP_EXEC, 0, u->exe)->argv = argv;
	/* A command OOM-killed ends the task, not its supervisor, which records it. */
	prop(p, &n, "OOMPolicy", CGFS_PROP_STR, 0, "continue");
	/* Nothing left behind once it ended, however it ended. */
	prop(p, &n, "CollectMode", CGFS_PROP_STR, 0, "inactive-or-failed");
	for (int k = 0; k < DRF_NKNOBS; k++) {
		int m;

		if (!limits->set[k])
			continue;
		m = cgfs_slice_props(drf_knob_file((enum drf_knob)k, NULL), limits->val[k], p + n,
				     CGFS_PROPS_MAX);
		if (m < 0)
			return m;
		n += (size_t)m;
	}
	spec = spec_pipe(t);
	if (spec < 0)
		return spec;
	/* The supervisor's fds, which systemd duplicates: its text, its directory, the log. */
	prop(p, &n, "StandardInputFileDescriptor", CGFS_PROP_FD, (uint64_t)spec, NULL);
	prop(p, &n, "StandardOutputFileDescriptor", CGFS_PROP_FD, (uint64_t)dirfd, NULL);
	prop(p, &n, "StandardErrorFileDescriptor", CGFS_PROP_FD, (uint64_t)u->errfd, NULL);
	r = u->bus->start(u->bus_ctx, leaf + 1, p, n);
	close(spec);
	if (r < 0)
		return r;
	/* Not drfd's child: systemd's, which reaps it. */
	*ret = 0;
	return 0;
}

static void unit_reap(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
}

const struct drf_spawn_ops drf_spawn_unit_ops = {
	.spawn = unit_spawn,
	.reap = unit_reap,
};

/* ---- the supervisor ---- */

static int real_write(void *ctx, int dirfd, const char *name, const char *text)
{
	(void)ctx;
	return drf_replace_at(dirfd, name, text, strlen(text), DRF_PRIVATE_FILE_MODE);
}

static void real_sleep_ms(void *ctx, unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	(void)ctx;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

const struct drf_super_io drf_super_real_io = {
	.write = real_write,
	.sleep_ms = real_sleep_ms,
};

/*
 * The command's output: created by root in the task's directory, then the
 * submitter's. -1 with errno on failure.
 */
static int open_output(int dirfd, const char *name, uid_t uid, gid_t gid)
{
	int fd = drf_at_open(dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd >= 0 && (fchown(fd, uid, gid) < 0 || fchmod(fd, 0600) < 0)) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	if (fd < 0)
		errno = -fd;
	return fd < 0 ? -1 : fd;
}

/*
 * Exactly the submitter's credentials: its groups (as its connection had them,
 * not its user's from /etc/group: a group it dropped stays dropped), gid, then
 * uid; and a check that root cannot be had back.
 */
static int become(const struct drf_task *t)
{
	if (setgroups(t->ngroups, t->groups) < 0 || setresgid(t->gid, t->gid, t->gid) < 0 ||
	    setresuid(t->uid, t->uid, t->uid) < 0)
		return -errno;
	if (t->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0 || geteuid() == 0 || getuid() == 0))
		return -EPERM;
	if (t->uid != 0 && t->gid != 0 && (setgid(0) == 0 || getegid() == 0))
		return -EPERM;
	return 0;
}

/*
 * The command starts as from a shell: every signal at its default and none
 * blocked. An ignored signal stays ignored through exec, and the supervisor
 * ignores SIGHUP and SIGINT (a terminal's, when run by hand): without this a
 * task could not be stopped with either.
 */
static void default_signals(void)
{
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/*
 * The child: becomes the submitter and runs the command with out and err as
 * its stdout and stderr (the files, or the copier's pipes; -1: not opened, for
 * open_errno); failures go down errfd.
 */
static void run_child(const struct drf_task *t, int out, int err, int open_errno, int errfd)
{
	struct passwd *pw = getpwuid(t->uid);
	char home[4200], user[300], id[64], tenant[128];
	char *envp[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			 home, user, id, tenant, "LANG=C.UTF-8", NULL };
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int e, fd;

	default_signals();
	if (out < 0 || err < 0) {
		errno = open_errno;
		goto fail;
	}
	if (in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	/* The supervisor is shielded from the OOM killer; its command is not. */
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "0", 1) < 0) {
			/* best effort */
		}
		close(fd);
	}
	snprintf(home, sizeof(home), "HOME=%s", pw ? pw->pw_dir : "/");
	snprintf(user, sizeof(user), "USER=%s", pw ? pw->pw_name : "nobody");
	snprintf(id, sizeof(id), "DRF_TASK_ID=%" PRIu64, t->id);
	snprintf(tenant, sizeof(tenant), "DRF_TENANT=%s", t->tenant);
	e = become(t);
	if (e < 0) {
		errno = -e;
		goto fail;
	}
	/* As the submitter, in its cwd or not at all: a task run in "/" is another task. */
	if (chdir(t->cwd) < 0)
		goto fail;
	/* The command gets 0, 1 and 2 only (errfd is close-on-exec already). */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		for (fd = 3; fd < 1024; fd++)
			if (fd != errfd)
				close(fd);
	execvpe(t->argv[0], t->argv, envp);
fail:
	e = errno;
	if (write(errfd, &e, sizeof(e)) < 0) {
		/* the parent sees a missing exit status */
	}
	_exit(127);
}

/* The task's text from drfd, all of it (a pipe or a file), NUL-terminated; NULL on failure. */
static char *read_spec(int fd)
{
	size_t cap = 1 << 20;
	char *buf = malloc(cap + 1);
	ssize_t n = buf ? drf_read_full(fd, buf, cap) : -ENOMEM;

	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/*
 * Writes the exit file until it is written: its status exists nowhere else
 * once the command has been waited for. While it retries, the supervisor stays
 * in the task's cgroup, so drfd sees the task running (holding its share) and
 * records nothing; a directory that is gone is the one failure not retried.
 */
static int record_exit(int dirfd, const char *dir, const char *text,
		       const struct drf_super_io *io)
{
	unsigned ms = 100;

	for (unsigned k = 0;; k++) {
		int r = io->write(io->ctx, dirfd, "exit", text);

		if (r == 0) {
			if (k)
				fprintf(stderr, "drfd task supervisor: wrote '%s/exit' after %u "
						"failed tries\n", dir, k);
			return 0;
		}
		if (r == -ENOENT || r == -ENOTDIR || r == -EBADF || r == -ESTALE) {
			fprintf(stderr, "drfd task supervisor: cannot write '%s/exit': %s; its "
					"directory is gone, the exit status is lost\n", dir,
				strerror(-r));
			return r;
		}
		if (k == 0)
			fprintf(stderr, "drfd task supervisor: cannot write '%s/exit': %s; "
					"retrying until it can (the task shows running until "
					"then)\n", dir, strerror(-r));
		io->sleep_ms(io->ctx, ms);
		ms = ms >= 15000 ? 30000 : ms * 2;
	}
}

int drf_task_supervise(const char *dir)
{
	return drf_task_supervise_fds(DRF_SUPER_DIR_FD, DRF_SUPER_SPEC_FD, dir, &drf_super_real_io,
				      false);
}

static int supervise_unit(const char *dir)
{
	return drf_task_supervise_fds(DRF_SUPER_DIR_FD, DRF_SUPER_SPEC_FD, dir, &drf_super_real_io,
				      true);
}

/* ---- the copier: a capped stdout and stderr ---- */

/* One stream: the command's pipe, its file, and what became of its bytes. */
struct stream {
	int in, out;            /* -1: closed */
	uint64_t kept;          /* bytes in the file */
	uint64_t dropped;       /* bytes read and not in the file */
	bool cut;               /* the file is written no more: the cap, or a failed write */
};

/* n bytes read from the stream's pipe: into its file up to max, the rest dropped. */
static void take(struct stream *st, const char *buf, size_t n, uint64_t max)
{
	size_t room = st->cut ? 0 : max - st->kept < n ? (size_t)(max - st->kept) : n, done = 0;
	int r = room ? drf_write_counted(st->out, buf, room, &done) : 0;

	st->kept += done;
	st->dropped += n - done;
	if (st->cut || (r == 0 && done == n))
		return;
	/* Past the cap, or a write failed: the mark, tried once; nothing more of this file. */
	st->cut = true;
	{
		char mark[96];
		int m = snprintf(mark, sizeof(mark), DRF_TASK_MARK, (unsigned long long)st->kept);

		if (drf_write_counted(st->out, mark, (size_t)m, &done) < 0) {
			/* a full disk: the count says what is missing */
		}
	}
}

/*
 * Reads what the stream's pipe holds now (at most limit bytes: 0, none) or
 * until it would block. Returns false at its end (EOF or an error).
 */
static bool pump(struct stream *st, char *buf, uint64_t max, bool nonblock, size_t limit)
{
	size_t got = 0;

	for (;;) {
		ssize_t n = read(st->in, buf, DRF_TASK_COPY_BUF);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false;
		take(st, buf, (size_t)n, max);
		got += (size_t)n;
		if (!nonblock || (limit && got >= limit))
			return true;
	}
}

/*
 * The copier, forked by the supervisor: as the submitter, copies the two
 * pipes into the files up to max each, until both end, or (stopfd >= 0)
 * until stopfd is closed by the supervisor (the command has exited) and what
 * the pipes held then is read. Reports the bytes dropped of each on repfd.
 */
static void copier(const struct drf_task *t, struct stream st[2], uint64_t max, int stopfd,
		   int repfd)
{
	static char buf[DRF_TASK_COPY_BUF];
	int64_t rep[2];
	bool stop = false;

	/* A file size limit fails a write (EFBIG) rather than kill the copier. */
	signal(SIGXFSZ, SIG_IGN);
	/* Writes as the submitter: its quota, no root's reserved blocks; not ptrace-able. */
	if (become(t) < 0)
		_exit(127);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	while (st[0].in >= 0 || st[1].in >= 0) {
		struct pollfd p[3];
		nfds_t n = 0;

		for (int k = 0; k < 2; k++)
			p[k] = (struct pollfd){ .fd = st[k].in, .events = POLLIN };
		n = 2;
		if (stopfd >= 0 && !stop)
			p[n++] = (struct pollfd){ .fd = stopfd, .events = POLLIN };
		if (poll(p, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n == 3 && p[2].revents) {
			/*
			 * The command has exited: what it wrote is in the pipes (a pipe's
			 * size at most each); a background process writing on is not waited
			 * for. Read without blocking, up to that.
			 */
			stop = true;
			for (int k = 0; k < 2; k++) {
				int sz;

				if (st[k].in < 0)
					continue;
				sz = fcntl(st[k].in, F_GETPIPE_SZ);
				fcntl(st[k].in, F_SETFL, O_NONBLOCK);
				pump(&st[k], buf, max, true, sz > 0 ? (size_t)sz : 1 << 20);
				close(st[k].in);
				st[k].in = -1;
			}
			break;
		}
		for (int k = 0; k < 2; k++) {
			if (st[k].in < 0 || !p[k].revents)
				continue;
			if (!pump(&st[k], buf, max, false, 0)) {
				close(st[k].in);
				st[k].in = -1;
			}
		}
	}
	rep[0] = (int64_t)st[0].dropped;
	rep[1] = (int64_t)st[1].dropped;
	if (write(repfd, rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		_exit(1);
	_exit(0);
}

int drf_task_supervise_stdio(const char *dir)
{
	struct stat st;
	int d = -1, s = -1, null = -1, ok;

	/*
	 * Its directory on stdout, its text on stdin: anything else is not drfd's
	 * doing. Both are moved above 10 first: systemd leaves 3 and 4 free, so
	 * /dev/null, opened next, may well be one of them.
	 */
	ok = fstat(1, &st) == 0 && S_ISDIR(st.st_mode) && fstat(0, &st) == 0 &&
	     S_ISFIFO(st.st_mode) && (d = fcntl(1, F_DUPFD_CLOEXEC, 10)) >= 0 &&
	     (s = fcntl(0, F_DUPFD_CLOEXEC, 10)) >= 0 &&
	     (null = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0 && dup2(null, 0) == 0 &&
	     dup2(null, 1) == 1;
	if (null > 1)
		close(null);
	ok = ok && dup2(d, DRF_SUPER_DIR_FD) == DRF_SUPER_DIR_FD &&
	     dup2(s, DRF_SUPER_SPEC_FD) == DRF_SUPER_SPEC_FD;
	if (d >= 0)
		close(d);
	if (s >= 0)
		close(s);
	if (!ok) {
		fprintf(stderr, "drfd --task-supervisor-stdio: systemd starts it for drfd, with "
				"the task's text on stdin and its directory on stdout\n");
		return 1;
	}
	return supervise_unit(dir);
}

/*
 * The copier's pipes and process (drf_task_supervise_fds), and the fds the
 * command gets as its stdout and stderr.
 */
struct capped {
	int out[2], err[2];     /* each: the command's fd (a pipe's, or the file), the copier's */
	int stop[2], rep[2];    /* the supervisor closes stop[1] to stop it; it reports on rep */
	pid_t pid;
	int64_t dropped[2];     /* -1: unknown */
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/*
 * Opens the output files; with a cap, the pipes between the command and them,
 * and forks the copier. -1 with errno if the files cannot be opened (the task
 * fails, as its command could not run), else 0; a copier that cannot be had
 * (no pipe, no fork) leaves the command the files whole, uncapped.
 */
static int start_output(const struct drf_task *t, int dirfd, bool unit, struct capped *c)
{
	int fo, fe, e;

	*c = (struct capped){ .out = { -1, -1 }, .err = { -1, -1 }, .stop = { -1, -1 },
			      .rep = { -1, -1 }, .dropped = { -1, -1 } };
	fo = open_output(dirfd, "stdout", t->uid, t->gid);
	e = errno;
	fe = fo < 0 ? -1 : open_output(dirfd, "stderr", t->uid, t->gid);
	if (fo < 0 || fe < 0) {
		e = fo < 0 ? e : errno;
		if (fo >= 0)
			close(fo);
		errno = e;
		return -1;
	}
	c->out[0] = fo;
	c->err[0] = fe;
	if (!t->output_max)
		return 0;
	{
		int po[2] = { -1, -1 }, pe[2] = { -1, -1 };

		if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0 ||
		    pipe2(c->rep, O_CLOEXEC) < 0 || (unit && pipe2(c->stop, O_CLOEXEC) < 0)) {
			fprintf(stderr, "drfd task supervisor: task %" PRIu64 ": no pipes for its "
					"output (%s): written uncapped\n", t->id, strerror(errno));
			close_fd(&po[0]);
			close_fd(&po[1]);
			close_fd(&pe[0]);
			close_fd(&pe[1]);
			close_fd(&c->rep[0]);
			close_fd(&c->rep[1]);
			close_fd(&c->stop[0]);
			close_fd(&c->stop[1]);
			return 0;
		}
		c->pid = fork();
		if (c->pid == 0) {
			struct stream st[2] = {
				{ .in = po[0], .out = fo },
				{ .in = pe[0], .out = fe },
			};

			close(po[1]);
			close(pe[1]);
			close(c->rep[0]);
			if (c->stop[1] >= 0)
				close(c->stop[1]);
			/* Nothing of the task's directory, as the submitter. */
			close(dirfd);
			copier(t, st, t->output_max, c->stop[0], c->rep[1]);
		}
		close(po[0]);
		close(pe[0]);
		close_fd(&c->rep[1]);
		close_fd(&c->stop[0]);
		if (c->pid < 0) {
			fprintf(stderr, "drfd task supervisor: task %" PRIu64 ": no copier for its "
					"output (%s): written uncapped\n", t->id, strerror(errno));
			close(po[1]);
			close(pe[1]);
			close_fd(&c->rep[0]);
			close_fd(&c->stop[1]);
			c->pid = 0;
			return 0;
		}
		/* The command's ends of the pipes; the files are the copier's alone. */
		close(fo);
		close(fe);
		c->out[0] = po[1];
		c->err[0] = pe[1];
	}
	return 0;
}

/*
 * Once the command has exited: the copier stopped (as systemd runs it) or not,
 * its report read, itself waited for.
 */
static void end_output(struct capped *c)
{
	int64_t rep[2];
	ssize_t n;

	close_fd(&c->out[0]);
	close_fd(&c->err[0]);
	if (!c->pid)
		return;
	close_fd(&c->stop[1]);
	do
		n = read(c->rep[0], rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(rep) && rep[0] >= 0 && rep[1] >= 0) {
		c->dropped[0] = rep[0];
		c->dropped[1] = rep[1];
	} else {
		fprintf(stderr, "drfd task supervisor: its output's copier ended without saying "
				"what it dropped (killed?)\n");
	}
	close_fd(&c->rep[0]);
	while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
		;
}

int drf_task_supervise_fds(int dirfd, int specfd, const char *dir, const struct drf_super_io *io,
			   bool unit)
{
	struct drf_task t = { 0 };
	struct rusage ru = { 0 };
	struct capped out;
	char buf[1024], *text, *exit_text = NULL;
	int pfd[2], status = 0, e = 0, fd, r, oe;
	pid_t pid;

	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_DFL);
	/* Neither fd goes on to the command. */
	if (fcntl(dirfd, F_SETFD, FD_CLOEXEC) < 0 || fcntl(specfd, F_SETFD, FD_CLOEXEC) < 0) {
		fprintf(stderr, "drfd --task-supervisor: drfd starts it, with fds %d and %d\n",
			DRF_SUPER_DIR_FD, DRF_SUPER_SPEC_FD);
		return 1;
	}
	/* Its directory must be drfd's own (root's, writable by root alone). */
	r = drf_at_owned(dirfd, true);
	text = r == 0 ? read_spec(specfd) : NULL;
	close(specfd);
	if (!text || drf_tasks_parse_file(&t, text) < 0) {
		fprintf(stderr, "drfd task supervisor: '%s': %s\n", dir,
			r < 0 ? "its directory is not drfd's own" : "no task from drfd");
		free(text);
		drf_task_clear(&t);
		return 1;
	}
	free(text);
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "-1000", 5) < 0) {
			/* not root: the supervisor may be OOM-killed; drfd records "lost" */
		}
		close(fd);
	}
	/* First: the copier gets none of the supervisor's fds but its own. */
	oe = start_output(&t, dirfd, unit, &out) < 0 ? errno : 0;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(pfd[0]);
		run_child(&t, out.out[0], out.err[0], oe, pfd[1]);
	}
	close(pfd[1]);
	snprintf(buf, sizeof(buf), "pid %d\n", (int)pid);
	io->write(io->ctx, dirfd, "pid", buf);
	if (read(pfd[0], &e, sizeof(e)) != sizeof(e))
		e = 0;
	close(pfd[0]);
	/* The command's ends of its output: only the command holds them from now. */
	close_fd(&out.out[0]);
	close_fd(&out.err[0]);
	while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	{
		/* Its end (the exit file's), not the copier's: that may read on after it. */
		long long ended = (long long)drf_real_usec(&drf_clock_system);
		int n;

		end_output(&out);
		n = snprintf(buf, sizeof(buf), "exit %d\nsignal %d\nutime_us %lld\nstime_us %lld\n"
			     "maxrss_kb %ld\nended %lld\n",
			     WIFEXITED(status) ? WEXITSTATUS(status) : -1,
			     WIFSIGNALED(status) ? WTERMSIG(status) : -1,
			     (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
			     (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec,
			     ru.ru_maxrss, ended);
		if (out.pid && n > 0 && (size_t)n < sizeof(buf))
			n += snprintf(buf + n, sizeof(buf) - (size_t)n, "output_max %" PRIu64 "\n",
				      t.output_max);
		if (out.dropped[0] >= 0 && n > 0 && (size_t)n < sizeof(buf))
			snprintf(buf + n, sizeof(buf) - (size_t)n, "stdout_dropped %" PRId64 "\n"
				 "stderr_dropped %" PRId64 "\n", out.dropped[0], out.dropped[1]);
	}
	if (e) {
		char *esc, why[PATH_MAX + 512];

		/* The cwd whole (it may be why); the command's name up to 256 bytes. */
		snprintf(why, sizeof(why), "cannot run '%.256s' as uid %u in '%s': %s", t.argv[0],
			 (unsigned)t.uid, t.cwd, strerror(e));
		esc = drf_proto_escape(why);
		/* The error line whole, or none: a cut escape would not parse. */
		if (!esc || asprintf(&exit_text, "%serror %s\n", buf, esc) < 0)
			exit_text = NULL;
		free(esc);
	}
	drf_task_clear(&t);
	r = record_exit(dirfd, dir, exit_text ? exit_text : buf, io);
	free(exit_text);
	return r < 0 ? 1 : 0;
}
