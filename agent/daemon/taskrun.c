// SPDX-License-Identifier: MIT
/*
 * A task's process side: the real spawn ops (clone3 straight into the task's
 * cgroup, then `drfd --task-supervisor DIR`) and the supervisor, which runs the
 * command as the submitter, waits for it, and writes DIR/exit. drfd is not
 * needed while a task runs: a restarted drfd finds the supervisor's files.
 */
#include "tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/sched.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

static uint64_t real_now(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void real_reap(void *ctx, pid_t pid)
{
	(void)ctx;
	waitpid(pid, NULL, WNOHANG);
}

/*
 * clone3 with CLONE_INTO_CGROUP: the child starts in the task's cgroup, so the
 * move cannot fail half-way. In the child, only async-signal-safe calls: drfd
 * has threads.
 */
static int real_spawn(void *ctx, const struct cgfs *fs, const char *cg, const char *dir,
		      pid_t *ret)
{
	struct clone_args args = { 0 };
	char *argv[] = { "drfd", "--task-supervisor", (char *)dir, NULL };
	sigset_t all;
	long pid;
	int cfd, r;

	(void)ctx;
	cfd = openat(fs->rootfd, cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (cfd < 0)
		return -errno;
	args.flags = CLONE_INTO_CGROUP;
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)cfd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0) {
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setsid();
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	r = pid < 0 ? -errno : 0;
	close(cfd);
	if (r < 0)
		return r;
	*ret = (pid_t)pid;
	return 0;
}

const struct drf_spawn_ops drf_spawn_real_ops = {
	.spawn = real_spawn,
	.reap = real_reap,
	.now = real_now,
};

/* ---- the supervisor ---- */

static int open_output(const char *dir, const char *name, uid_t uid, gid_t gid)
{
	char path[4352];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0 && fchown(fd, uid, gid) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The child: becomes the submitter and runs the command; failures go down errfd. */
static void run_child(const struct drf_task *t, const char *dir, int errfd)
{
	struct passwd *pw = getpwuid(t->uid);
	char home[4200], user[300], id[64], tenant[128];
	char *envp[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			 home, user, id, tenant, "LANG=C.UTF-8", NULL };
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int out = open_output(dir, "stdout", t->uid, t->gid);
	int err = open_output(dir, "stderr", t->uid, t->gid);
	int e, fd;

	if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(err, 2) < 0)
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
	/* Never root for someone who is not: groups, gid, then uid, and check. */
	if ((pw ? initgroups(pw->pw_name, t->gid) : setgroups(0, NULL)) < 0 ||
	    setresgid(t->gid, t->gid, t->gid) < 0 || setresuid(t->uid, t->uid, t->uid) < 0)
		goto fail;
	if (t->uid != 0 && (setuid(0) == 0 || geteuid() == 0)) {
		errno = EPERM;
		goto fail;
	}
	if (chdir(t->cwd) < 0 && chdir("/") < 0)
		goto fail;
	execvpe(t->argv[0], t->argv, envp);
fail:
	e = errno;
	if (write(errfd, &e, sizeof(e)) < 0) {
		/* the parent sees a missing exit status */
	}
	_exit(127);
}

int drf_task_supervise(const char *dir)
{
	struct drf_task t = { 0 };
	struct rusage ru = { 0 };
	char buf[1024], *text;
	int pfd[2], status = 0, e = 0, fd;
	struct timespec ts;
	pid_t pid;
	FILE *f;
	long n;

	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_DFL);
	/* The task file, read as drfd wrote it. */
	snprintf(buf, sizeof(buf), "%s/task", dir);
	f = fopen(buf, "re");
	if (!f)
		return 1;
	text = calloc(1, 1 << 20);
	n = text ? (long)fread(text, 1, (1 << 20) - 1, f) : -1;
	fclose(f);
	if (n <= 0)
		return 1;
	if (drf_tasks_parse_file(&t, text) < 0)
		return 1;
	free(text);
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "-1000", 5) < 0) {
			/* not root: the supervisor may be OOM-killed; drfd records "lost" */
		}
		close(fd);
	}
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(pfd[0]);
		run_child(&t, dir, pfd[1]);
	}
	close(pfd[1]);
	snprintf(buf, sizeof(buf), "pid %d\n", (int)pid);
	drf_tasks_write_atomic(dir, "pid", buf);
	if (read(pfd[0], &e, sizeof(e)) != sizeof(e))
		e = 0;
	close(pfd[0]);
	while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(buf, sizeof(buf), "exit %d\nsignal %d\nutime_us %lld\nstime_us %lld\n"
		     "maxrss_kb %ld\nended %lld\n",
		     WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		     WIFSIGNALED(status) ? WTERMSIG(status) : -1,
		     (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
		     (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec, ru.ru_maxrss,
		     (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
	if (e) {
		char *esc, why[600];

		snprintf(why, sizeof(why), "cannot run '%s' as uid %u in '%s': %s", t.argv[0],
			 (unsigned)t.uid, t.cwd, strerror(e));
		esc = drf_tasks_escape(why);
		if (esc)
			snprintf(buf + n, sizeof(buf) - (size_t)n, "error %s\n", esc);
		free(esc);
	}
	return drf_tasks_write_atomic(dir, "exit", buf) < 0 ? 1 : 0;
}
