// SPDX-License-Identifier: MIT
/*
 * The status socket (agent/daemon/listener.c) on a real unix socket in a
 * temporary directory, served by an sd-event loop that the test runs while its
 * clients act: children that drop to uids 65534..65530 and hold connections
 * (the caps per user and overall; root still served), one that reconnects in a
 * loop over its cap (refusals paced, root served), fds exhausted under a
 * lowered RLIMIT_NOFILE (the listener off and back on, the loop not spinning),
 * requests over the limit (refused whole, nothing queued), idle and slow
 * clients (dropped at their deadlines while a timer keeps its pace), and the
 * socket path (anything but a socket left intact; a stale socket replaced; at
 * exit, a path someone else took over is left alone). The task requests as the
 * connection's peer makes them: what a user other than root sees of others'
 * tasks, a command's newlines escaped in the text, a submit of 5,000 words.
 * The status over drfd on the fake cgroup tree (fakedrfd.h): 1,000 tenants
 * answered whole, a part a turn of the loop; a client that reads slowly gets
 * it all while one that stops is dropped; a reload between two parts ends the
 * answer with an error, not a mix of two plans; one tenant's status; the
 * processes of a tenant's child cgroups counted.
 *
 * Run as root: the children need setresuid (the README's tests run as root).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json_tokener.h>

#include "daemon.h"
#include "featureset.h"
#include "fakecg.h"
#include "fakedrfd.h"
#include "listener.h"
#include "status.h"
#include "taskd.h"
#include "tasks.h"
#include "testlib.h"
#include "text.h"

#define ROOT_ANSWER "/sys/fs/cgroup/test.slice"
#define GROUP "nogroup"
#define GROUP_GID 65534

static char dir[40], sock[100];
static struct drfd d;
/* The daemon whose loop the helpers run: d, or the one over fakedrfd (the status tests). */
static struct drfd *srv = &d;
/* The fake cgroup tree of the tests with a task queue. */
static char cgdir[4096], cgroot[4096];
static struct cgfs fs;
/* The EMFILE test's fillers and the limit before it, put back even if it fails. */
static int fill[256], nfill;
static struct rlimit old_nofile;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int setup(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "/tmp/drf-socket-XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755) < 0)
		return -1;
	snprintf(sock, sizeof(sock), "%s/run/drfd.sock", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* drfd over the fake tree with an event loop (the status tests); fx_on while it runs. */
static struct fakedrfd fx;
static bool fx_on;

/* A test that failed half way leaves its daemon: freed, so that the next one can listen. */
static int test_teardown(void **state)
{
	(void)state;
	if (fx_on)
		fakedrfd_teardown(&fx);
	fx_on = false;
	srv = &d;
	for (; nfill > 0; nfill--)
		close(fill[nfill - 1]);
	if (old_nofile.rlim_cur)
		setrlimit(RLIMIT_NOFILE, &old_nofile);
	if (d.event)
		drfd_free(&d);
	d = (struct drfd){ .listen_fd = -1 };
	if (cgdir[0]) {
		cgfs_close(&fs);
		fakecg_teardown(cgdir);
		cgdir[0] = '\0';
	}
	return 0;
}

/* A daemon with an event loop and nothing else: enough for "root". */
static void daemon_new(void)
{
	d = (struct drfd){ .listen_fd = -1 };
	assert_int_equal(drfd_add_features(&d), 0);
	assert_int_equal(sd_event_new(&d.event), 0);
	d.root = strdup(ROOT_ANSWER);
	assert_non_null(d.root);
}

static void daemon_listen(void)
{
	char why[512] = "";
	int r = drfd_listen(&d, sock, GROUP, why, sizeof(why));

	if (r < 0)
		fail_msg("drfd_listen: %s", why);
}

/* Runs the loop for ms; the number of iterations that dispatched something. */
static unsigned run_for(unsigned ms)
{
	uint64_t end = now_ms() + ms;
	unsigned n = 0;

	for (uint64_t t = now_ms(); t < end; t = now_ms()) {
		int r = sd_event_run(srv->event, (end - t) * 1000);

		assert_true(r >= 0);
		n += r > 0;
	}
	return n;
}

/* Runs the loop until a tenth of a second passes with nothing to do (at most 5 s). */
static void run_quiet(void)
{
	for (int i = 0; i < 50 && run_for(100) > 0; i++)
		;
}

/* Runs the loop until fd is readable (at most timeout_ms); true if it is. */
static bool run_until_readable(int fd, unsigned timeout_ms)
{
	uint64_t end = now_ms() + timeout_ms;

	while (now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 0) == 1)
			return true;
		assert_true(sd_event_run(srv->event, 10000) >= 0);
	}
	return false;
}

/* A connection of this process (root), non-blocking, with the loop running. */
static int client(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	uint64_t end = now_ms() + 2000;

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		/* The backlog is full: drfd drains it as the loop runs. */
		assert_int_equal(errno, EAGAIN);
		assert_true(now_ms() < end);
		run_for(10);
	}
	return fd;
}

/* Sends n bytes on fd, running the loop whenever the socket is full. */
static void client_send(int fd, const char *data, size_t n)
{
	uint64_t end = now_ms() + 5000;

	while (n) {
		ssize_t w = send(fd, data, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EAGAIN) {
			assert_true(now_ms() < end);
			run_for(5);
			continue;
		}
		assert_true(w > 0);
		data += w;
		n -= (size_t)w;
	}
}

/* Reads until drfd closes (at most 5 s), running the loop: the answer, NUL-terminated. */
static char *client_read(int fd, size_t *ret_len)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	uint64_t end = now_ms() + 5000;

	assert_non_null(buf);
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			break;
		assert_int_equal(errno, EAGAIN);
		assert_true(now_ms() < end);
		run_for(5);
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	return buf;
}

/* One request (n bytes as given: the caller adds the newline) and its answer. */
static char *ask_n(const char *req, size_t n)
{
	int fd = client();
	char *a;

	client_send(fd, req, n);
	a = client_read(fd, NULL);
	close(fd);
	return a;
}

static char *ask(const char *req)
{
	return ask_n(req, strlen(req));
}

/*
 * A child holding connections: it drops to uid (group nogroup, which may use
 * the socket), connects n times, says so, and once told, reports how many of
 * them drfd still holds open (the others it closed at once); then waits to be
 * released.
 */
struct holder {
	pid_t pid;
	int cmd, rep;
};

static void holder_main(uid_t uid, int n, int cmd, int rep)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fds[128], open_n = 0;
	char b;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (setgroups(0, NULL) < 0 || setresgid(GROUP_GID, GROUP_GID, GROUP_GID) < 0 ||
	    setresuid(uid, uid, uid) < 0)
		_exit(100);
	for (int i = 0; i < n; i++) {
		fds[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[i] >= 0 && connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			close(fds[i]);
			fds[i] = -1;
		}
	}
	if (write(rep, "c", 1) != 1 || read(cmd, &b, 1) != 1)
		_exit(101);
	for (int i = 0; i < n; i++) {
		struct pollfd p = { .fd = fds[i], .events = POLLIN };

		/* Refused: "busy" and a hang-up wait to be read. Held: nothing yet. */
		if (fds[i] >= 0 && poll(&p, 1, 0) == 0)
			open_n++;
	}
	if (write(rep, &open_n, sizeof(open_n)) != sizeof(open_n) || read(cmd, &b, 1) != 1)
		_exit(102);
	_exit(0);
}

static struct holder holder_start(uid_t uid, int n)
{
	struct holder h;
	int c[2], r[2];

	assert_true(n <= 128);
	assert_int_equal(pipe2(c, O_CLOEXEC), 0);
	assert_int_equal(pipe2(r, O_CLOEXEC), 0);
	h.pid = fork();
	assert_true(h.pid >= 0);
	if (h.pid == 0) {
		close(c[1]);
		close(r[0]);
		holder_main(uid, n, c[0], r[1]);
	}
	close(c[0]);
	close(r[1]);
	h.cmd = c[1];
	h.rep = r[0];
	return h;
}

/* How many connections drfd holds open for h, once it has handled them all. */
static int holder_open(struct holder *h)
{
	int n = -1;
	char b;

	if (!run_until_readable(h->rep, 10000))
		fail_msg("holder %d did not finish connecting", (int)h->pid);
	assert_int_equal(read(h->rep, &b, 1), 1);
	run_quiet();
	assert_int_equal(write(h->cmd, "k", 1), 1);
	assert_int_equal(read(h->rep, &n, sizeof(n)), sizeof(n));
	return n;
}

static void holder_end(struct holder *h)
{
	int st;

	assert_int_equal(write(h->cmd, "x", 1), 1);
	assert_int_equal(waitpid(h->pid, &st, 0), h->pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(h->cmd);
	close(h->rep);
}

static void test_cap_per_uid(void **state)
{
	struct drf_sock_stats st;
	struct holder a, b;
	int na, nb;

	(void)state;
	daemon_new();
	daemon_listen();
	a = holder_start(65534, DRFD_CONN_MAX_UID + 8);
	na = holder_open(&a);
	b = holder_start(65533, DRFD_CONN_MAX_UID + 8);
	nb = holder_open(&b);
	/* Each user up to its cap, whatever the other holds. */
	assert_int_equal(na, DRFD_CONN_MAX_UID);
	assert_int_equal(nb, DRFD_CONN_MAX_UID);
	drfd_sock_stats(&d, &st);
	assert_int_equal(st.conns, 2 * DRFD_CONN_MAX_UID);
	assert_int_equal(st.refused, 16);
	holder_end(&a);
	holder_end(&b);
	drfd_free(&d);
}

static void test_cap_overall_root_served(void **state)
{
	struct drf_sock_stats st;
	struct holder h[5];
	int n[5], root_fds[DRFD_CONN_ROOT], held = 0;
	char *a;

	(void)state;
	daemon_new();
	daemon_listen();
	/* Five users at their cap ask for 80: the socket holds 64 in all. */
	for (int i = 0; i < 5; i++) {
		h[i] = holder_start((uid_t)(65534 - i), DRFD_CONN_MAX_UID);
		n[i] = holder_open(&h[i]);
		held += n[i];
	}
	assert_int_equal(held, DRFD_CONN_MAX);
	assert_int_equal(n[4], 0);
	/* Root gets in: served at the cap, with room for its own. */
	a = ask("root\n");
	assert_string_equal(a, ROOT_ANSWER "\n");
	free(a);
	for (int i = 0; i < DRFD_CONN_ROOT - 1; i++)
		root_fds[i] = client();
	run_quiet();
	a = ask("root\n");
	assert_string_equal(a, ROOT_ANSWER "\n");
	free(a);
	drfd_sock_stats(&d, &st);
	assert_int_equal(st.conns, DRFD_CONN_MAX + DRFD_CONN_ROOT - 1);
	assert_int_equal(st.root_conns, DRFD_CONN_ROOT - 1);
	/* With its own slots full too, root is turned away like anyone: the fds stay bounded. */
	root_fds[DRFD_CONN_ROOT - 1] = client();
	run_quiet();
	a = ask("root\n");
	assert_string_equal(a, "drfd-status 2 error=busy\n");
	free(a);
	drfd_sock_stats(&d, &st);
	assert_int_equal(st.conns, DRFD_CONN_MAX + DRFD_CONN_ROOT);
	for (int i = 0; i < DRFD_CONN_ROOT; i++)
		close(root_fds[i]);
	for (int i = 0; i < 5; i++)
		holder_end(&h[i]);
	drfd_free(&d);
}

/* A child of uid that connects and closes in a loop for ms; the count of connects to rep. */
static pid_t churn_start(uid_t uid, unsigned ms, int rep)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_usec = 200000 };
	pid_t pid = fork();
	uint64_t end;
	int n = 0;

	assert_true(pid >= 0);
	if (pid > 0)
		return pid;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (setgroups(0, NULL) < 0 || setresgid(GROUP_GID, GROUP_GID, GROUP_GID) < 0 ||
	    setresuid(uid, uid, uid) < 0)
		_exit(100);
	for (end = now_ms() + ms; now_ms() < end;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		/* A full backlog makes connect wait: 200 ms at most. */
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		n += connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
	}
	_exit(write(rep, &n, sizeof(n)) == sizeof(n) ? 0 : 101);
}

/*
 * Root asking as drfctl does (a blocking connect, the request, the answer to
 * the end) from a child, while the loop runs here: the answer and how long it
 * took, in ms, to rep.
 */
static pid_t asker_start(int rep)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	char buf[256];
	size_t len = 0;
	ssize_t n;
	uint64_t t0;
	pid_t pid = fork();
	int fd;

	assert_true(pid >= 0);
	if (pid > 0)
		return pid;
	t0 = now_ms();
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || send(fd, "root\n", 5, 0) != 5)
		_exit(100);
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	len = (size_t)snprintf(buf + len + 1, sizeof(buf) - len - 1, "%llu",
			       (unsigned long long)(now_ms() - t0)) + len + 2;
	_exit(write(rep, buf, len) == (ssize_t)len ? 0 : 101);
}

/* A user over its cap reconnecting in a loop: refusals are paced; root is served meanwhile. */
static void test_refusals_paced(void **state)
{
	struct drf_sock_stats st0, st;
	struct holder h;
	char got[256] = "";
	uint64_t t0;
	int p[2], q[2], n = 0, stat;
	pid_t pid, asker;

	(void)state;
	daemon_new();
	daemon_listen();
	h = holder_start(65534, DRFD_CONN_MAX_UID + 1);
	assert_int_equal(holder_open(&h), DRFD_CONN_MAX_UID);
	drfd_sock_stats(&d, &st0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	t0 = now_ms();
	pid = churn_start(65534, 1000, p[1]);
	run_for(500);
	assert_int_equal(pipe2(q, O_CLOEXEC), 0);
	asker = asker_start(q[1]);
	assert_true(run_until_readable(q[0], 5000));
	assert_true(read(q[0], got, sizeof(got) - 1) > 0);
	assert_int_equal(waitpid(asker, &stat, 0), asker);
	assert_true(WIFEXITED(stat) && WEXITSTATUS(stat) == 0);
	if (now_ms() - t0 < 1000)
		run_for(1000 - (unsigned)(now_ms() - t0));
	drfd_sock_stats(&d, &st);
	assert_true(run_until_readable(p[0], 2000));
	assert_int_equal(read(p[0], &n, sizeof(n)), sizeof(n));
	assert_int_equal(waitpid(pid, &stat, 0), pid);
	print_message("1 s of reconnecting: %d connects, %" PRIu64 " refused, %" PRIu64
		      " pauses; root answered in %s ms\n", n, st.refused - st0.refused,
		      st.refuse_pauses - st0.refuse_pauses, got + strlen(got) + 1);
	/*
	 * Root: served. Its connect races the churner's for room in the backlog
	 * as drfd drains it, so it may lose a few pauses' worth: a second at most.
	 */
	assert_string_equal(got, ROOT_ANSWER "\n");
	assert_true(atoi(got + strlen(got) + 1) < 2000);
	/* 20 per 100 ms, with a window's slack either side. */
	assert_true(st.refused - st0.refused >= 20);
	assert_true(st.refused - st0.refused <= 12 * DRFD_REFUSE_MAX);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
	holder_end(&h);
	drfd_free(&d);
}

/* Out of fds: the listener goes off and comes back from a timer; the loop does not spin. */
static void test_emfile_backoff(void **state)
{
	struct drf_sock_stats st;
	struct rlimit low;
	int c, on = -1, top, iter;
	uint64_t t;
	size_t len;
	char *a;

	(void)state;
	daemon_new();
	daemon_listen();
	c = client();
	client_send(c, "root\n", 5);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old_nofile), 0);
	top = fcntl(c, F_DUPFD_CLOEXEC, 0);
	assert_true(top >= 0);
	close(top);
	low = old_nofile;
	low.rlim_cur = (rlim_t)top + 8;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (nfill < 256 && (fill[nfill] = fcntl(c, F_DUPFD_CLOEXEC, 0)) >= 0)
		nfill++;
	assert_int_equal(errno, EMFILE);
	/* The first wakeup fails to accept: the listener is off. */
	assert_true(sd_event_run(d.event, 1000000) > 0);
	assert_true(sd_event_source_get_enabled(d.listen_src, &on) >= 0);
	assert_int_equal(on, SD_EVENT_OFF);
	/* 0.6 s: retries at 100, 200 and 400 ms, not a busy loop. */
	iter = (int)run_for(600);
	print_message("EMFILE: %d loop iterations in 0.6 s\n", iter);
	assert_true(iter <= 8);
	drfd_sock_stats(&d, &st);
	assert_true(st.backoffs >= 3);
	assert_int_equal(st.conns, 0);
	/* fds again: the next retry accepts, and the request is answered. */
	for (; nfill > 0; nfill--)
		close(fill[nfill - 1]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old_nofile), 0);
	a = client_read(c, &len);
	assert_string_equal(a, ROOT_ANSWER "\n");
	free(a);
	close(c);
	assert_true(sd_event_source_get_enabled(d.listen_src, &on) >= 0);
	assert_int_equal(on, SD_EVENT_ON);
	/* And a client now is served at once. */
	t = now_ms();
	a = ask("root\n");
	assert_string_equal(a, ROOT_ANSWER "\n");
	assert_true(now_ms() - t < 500);
	free(a);
	drfd_free(&d);
}

/* The task queue over a fake cgroup tree with a spawn that only records. */
static int fake_spawn(void *ctx, const struct cgfs *cfs, const char *cg, const struct drf_task *t,
		      const struct drf_knobs *limits, int dirfd, const char *tdir, pid_t *ret)
{
	char p[4096];

	(void)ctx;
	(void)t;
	(void)limits;
	(void)dirfd;
	(void)tdir;
	snprintf(p, sizeof(p), "%s/cgroup.events", cg);
	assert_int_equal(fakecg_put(cfs->rootfd, p, "populated 1\n"), 0);
	snprintf(p, sizeof(p), "%s/memory.events", cg);
	assert_int_equal(fakecg_put(cfs->rootfd, p, "oom 0\noom_kill 0\n"), 0);
	*ret = 0;
	return 0;
}

static void fake_reap(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
}

static const struct drf_spawn_ops fake_ops = { fake_spawn, fake_reap };

/* The daemon over the fake tree, started, with its task queue on the fake spawn. */
static struct drfd_env env;
static struct drf_fake_clock fake_now = { .mono = 1000000000, .real = 1700000000000000ull };
static const struct drf_clock fake_clock = { drf_fake_clock_now, &fake_now };

/* With extra (sections) after tenant A, which any user may submit to. */
static void daemon_with_tasks_and(const char *extra)
{
	char conf[4200], sdir[4200], err[1024];
	FILE *f;

	daemon_new();
	assert_int_equal(fakecg_setup(cgdir, sizeof(cgdir), cgroot, sizeof(cgroot)), 0);
	assert_int_equal(cgfs_open(&fs, cgroot, false, &fakecg_ops, NULL), 0);
	snprintf(conf, sizeof(conf), "%s/drfd.conf", cgdir);
	snprintf(sdir, sizeof(sdir), "%s/state", cgdir);
	assert_int_equal(mkdir(sdir, 0755), 0);
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f, "[agent]\ncgroup-root = %s\nstate-dir = %s\n[capacity]\ncpu = 4\n"
		   "memory = 8G\n[tenant A]\ntask-cpu = 0.5\ntask-memory = 64M\n"
		   "tasks = unlimited\naccess = *\n%s", cgroot, sdir, extra);
	assert_int_equal(fclose(f), 0);
	env = (struct drfd_env){ .clock = &fake_clock, .host = &drf_host_real, .fs = &fs,
				 .spawn = &fake_ops };
	d.env = &env;
	d.config_path = "drfd.conf";
	if (drf_declared_load(&d.decl, conf, &drf_host_real, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	assert_int_equal(drfd_start(&d, NULL), 0);
	assert_non_null(d.tasks);
}

static void daemon_with_tasks(void)
{
	daemon_with_tasks_and("");
}

static void daemon_with_tasks_free(void)
{
	drfd_free(&d);
	cgfs_close(&fs);
	fakecg_teardown(cgdir);
	cgdir[0] = '\0';
}

/* "task-submit A /tmp 0 0 0 0 0 0 0 sh -c " and ARG, as drfctl writes it, and "\n". */
static char *submit_line(size_t arg_len, size_t *ret_len)
{
	static const char head[] = "task-submit A /tmp 0 0 0 0 0 0 0 sh -c ";
	size_t n = sizeof(head) - 1 + arg_len;
	char *s = malloc(n + 2);

	assert_non_null(s);
	memcpy(s, head, sizeof(head) - 1);
	memset(s + sizeof(head) - 1, 'x', arg_len);
	s[n] = '\n';
	s[n + 1] = '\0';
	*ret_len = n + 1;
	return s;
}

static void test_request_too_long(void **state)
{
	static const char nul[] = "task-submit A /tmp 0 0 0 0 0 0 0 sh -c true\0 rm -rf /\n";
	static const size_t head_len = sizeof("task-submit A /tmp 0 0 0 0 0 0 0 sh -c ") - 1;
	struct drf_sock_stats st;
	size_t n;
	char *req, *a;

	(void)state;
	daemon_with_tasks();
	daemon_listen();
	/* 70,000 bytes: refused whole, nothing queued. */
	req = submit_line(70000 - head_len, &n);
	a = ask_n(req, n);
	assert_true(strncmp(a, "drfd-task 1 refused\n", 20) == 0);
	assert_non_null(strstr(a, "70000"));
	assert_int_equal(d.tasks->n, 0);
	free(a);
	free(req);
	/* Exactly the limit: taken, its last argument whole. */
	req = submit_line(DRF_REQ_MAX - head_len, &n);
	a = ask_n(req, n);
	assert_true(strncmp(a, "drfd-task 1 ok 1\n", 17) == 0);
	assert_int_equal(d.tasks->n, 1);
	assert_int_equal(d.tasks->t[0].argc, 3);
	assert_int_equal(strlen(d.tasks->t[0].argv[2]), DRF_REQ_MAX - head_len);
	free(a);
	free(req);
	/* One byte over: refused. */
	req = submit_line(DRF_REQ_MAX + 1 - head_len, &n);
	a = ask_n(req, n);
	assert_true(strncmp(a, "drfd-task 1 refused\n", 20) == 0);
	assert_int_equal(d.tasks->n, 1);
	free(a);
	free(req);
	/* A NUL would cut the request as well: refused. */
	a = ask_n(nul, sizeof(nul) - 1);
	assert_true(strncmp(a, "drfd-task 1 refused\n", 20) == 0);
	assert_int_equal(d.tasks->n, 1);
	free(a);
	/* Other requests over the limit get an error line. */
	req = malloc(70002);
	assert_non_null(req);
	memcpy(req, "status ", 7);
	memset(req + 7, 'j', 70000 - 7);
	memcpy(req + 70000, "\n", 2);
	a = ask_n(req, 70001);
	assert_string_equal(a, "drfd-status 2 error=request-too-long\n");
	free(a);
	free(req);
	drfd_sock_stats(&d, &st);
	assert_int_equal(st.too_long, 3);
	/* "\r\n" ends a line too. */
	a = ask("root\r\n");
	assert_string_equal(a, ROOT_ANSWER "\n");
	free(a);
	daemon_with_tasks_free();
}

static int on_pace(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)usec;
	(*(unsigned *)userdata)++;
	sd_event_source_set_time_relative(s, 100000);
	return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* Idle and slow clients are dropped at their deadlines; a 100 ms timer keeps its pace. */
static void test_slow_clients(void **state)
{
	struct drf_sock_stats st;
	sd_event_source *pace = NULL;
	unsigned paced = 0;
	uint64_t t0, closed[3] = { 0, 0, 0 };
	int fd[3];
	char *big;

	(void)state;
	daemon_new();
	/* A 4 MiB answer to "root": more than the socket's buffers hold. */
	big = malloc(4 << 20);
	assert_non_null(big);
	memset(big, 'r', (4 << 20) - 1);
	big[(4 << 20) - 1] = '\0';
	free(d.root);
	d.root = big;
	daemon_listen();
	assert_int_equal(sd_event_add_time_relative(d.event, &pace, CLOCK_MONOTONIC, 100000, 0,
						    on_pace, &paced), 0);
	t0 = now_ms();
	fd[0] = client();                 /* sends nothing */
	fd[1] = client();
	client_send(fd[1], "sta", 3);     /* never ends its line */
	fd[2] = client();
	client_send(fd[2], "root\n", 5);  /* never reads the answer */
	while (now_ms() - t0 < 7000 && !(closed[0] && closed[1] && closed[2])) {
		assert_true(sd_event_run(d.event, 10000) >= 0);
		for (int i = 0; i < 3; i++) {
			struct pollfd p = { .fd = fd[i], .events = POLLIN };

			/* The answer's start waits in fd[2]: its hang-up tells. */
			if (!closed[i] && poll(&p, 1, 0) == 1 &&
			    ((p.revents & POLLHUP) || (i < 2 && (p.revents & POLLIN))))
				closed[i] = now_ms() - t0;
		}
	}
	print_message("dropped after %" PRIu64 " ms (idle), %" PRIu64 " ms (slow request), %"
		      PRIu64 " ms (slow reader); %u timer ticks of 100 ms\n", closed[0], closed[1],
		      closed[2], paced);
	assert_true(closed[0] >= 1900 && closed[0] <= 3000);
	assert_true(closed[1] >= 1900 && closed[1] <= 3000);
	assert_true(closed[2] >= 4900 && closed[2] <= 6500);
	assert_true(paced >= (unsigned)(closed[2] / 100) * 8 / 10);
	drfd_sock_stats(&d, &st);
	assert_int_equal(st.dropped, 3);
	assert_int_equal(st.conns, 0);
	for (int i = 0; i < 3; i++)
		close(fd[i]);
	sd_event_source_disable_unref(pace);
	drfd_free(&d);
}

static void put(const char *path, const char *text)
{
	assert_int_equal(t_write_file(path, text), 0);
}

static void assert_file(const char *path, const char *text)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_string_equal(buf, text);
}

/* Anything but a socket at the path: drfd_listen fails and leaves it as it is. */
static void test_path_not_a_socket(void **state)
{
	char target[160], run[140], why[512];
	struct stat st;

	(void)state;
	snprintf(run, sizeof(run), "%s/run", dir);
	mkdir(run, 0755);
	snprintf(target, sizeof(target), "%s/target", dir);
	daemon_new();
	put(sock, "precious\n");
	assert_true(drfd_listen(&d, sock, GROUP, why, sizeof(why)) < 0);
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_file(sock, "precious\n");
	assert_non_null(strstr(why, sock));
	assert_null(d.socket_path);
	assert_int_equal(unlink(sock), 0);
	/* A symbolic link: neither it nor what it points to. */
	put(target, "mine\n");
	assert_int_equal(symlink(target, sock), 0);
	assert_true(drfd_listen(&d, sock, GROUP, why, sizeof(why)) < 0);
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_file(target, "mine\n");
	assert_int_equal(unlink(sock), 0);
	/* A FIFO, a directory. */
	assert_int_equal(mkfifo(sock, 0600), 0);
	assert_true(drfd_listen(&d, sock, GROUP, why, sizeof(why)) < 0);
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(unlink(sock), 0);
	assert_int_equal(mkdir(sock, 0700), 0);
	assert_true(drfd_listen(&d, sock, GROUP, why, sizeof(why)) < 0);
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(rmdir(sock), 0);
	drfd_free(&d);
}

/* A stale socket is replaced, a live one is not; at exit, only drfd's own socket goes. */
static void test_path_stale_live_and_exit(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct drfd d2 = { .listen_fd = -1 };
	char run[140], why[512];
	struct stat st;
	char *a;
	int s;

	(void)state;
	snprintf(run, sizeof(run), "%s/run", dir);
	mkdir(run, 0755);
	unlink(sock);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	/* Left behind by a drfd that died: bound, nobody listening. */
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(s);
	daemon_new();
	daemon_listen();
	assert_int_equal(lstat(sock, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_int_equal(st.st_gid, GROUP_GID);
	a = ask("root\n");
	assert_string_equal(a, ROOT_ANSWER "\n");
	free(a);
	/* Served: a second daemon is refused and the first goes on. */
	d2.event = d.event;
	assert_int_equal(drfd_listen(&d2, sock, GROUP, why, sizeof(why)), -EADDRINUSE);
	a = ask("root\n");
	assert_string_equal(a, ROOT_ANSWER "\n");
	free(a);
	/* Someone put their own file at the path meanwhile: drfd's exit leaves it. */
	assert_int_equal(unlink(sock), 0);
	put(sock, "someone else's\n");
	drfd_free(&d);
	assert_int_equal(lstat(sock, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_file(sock, "someone else's\n");
	assert_int_equal(unlink(sock), 0);
	/* Its own socket, drfd removes. */
	daemon_new();
	daemon_listen();
	drfd_free(&d);
	assert_int_equal(lstat(sock, &st), -1);
	assert_int_equal(errno, ENOENT);
}

/* The socket's missing directories are made (0755), each level; a file in the way is not. */
static void test_path_directories_made(void **state)
{
	char deep[140], file[140], why[512];
	struct stat st;
	mode_t old;

	(void)state;
	snprintf(deep, sizeof(deep), "%s/a/b/drfd.sock", dir);
	old = umask(022);
	daemon_new();
	assert_int_equal(drfd_listen(&d, deep, GROUP, why, sizeof(why)), 0);
	umask(old);
	assert_int_equal(lstat(deep, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	snprintf(file, sizeof(file), "%s/a", dir);
	assert_int_equal(lstat(file, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0755);
	snprintf(file, sizeof(file), "%s/a/b", dir);
	assert_int_equal(lstat(file, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0755);
	drfd_free(&d);
	/* A file where a directory goes: refused with why, the file as it was. */
	snprintf(file, sizeof(file), "%s/f", dir);
	put(file, "a file\n");
	snprintf(deep, sizeof(deep), "%s/f/x/drfd.sock", dir);
	daemon_new();
	assert_int_equal(drfd_listen(&d, deep, GROUP, why, sizeof(why)), -ENOTDIR);
	assert_non_null(strstr(why, "cannot create the directory"));
	assert_file(file, "a file\n");
	assert_null(d.socket_path);
	drfd_free(&d);
}


/*
 * A task request on a connection whose peer is euid with the groups given (the
 * kernel records the creator's credentials for both ends of a socketpair).
 */
static char *answer_as(uid_t euid, const gid_t *groups, size_t ngroups, const char *req)
{
	gid_t saved[256];
	int n = getgroups(256, saved), sv[2];
	size_t len = 0;
	char *out = NULL;

	assert_true(n >= 0);
	if (groups)
		assert_int_equal(setgroups(ngroups, groups), 0);
	assert_int_equal(seteuid(euid), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(seteuid(0), 0);
	assert_int_equal(setgroups((size_t)n, saved), 0);
	assert_int_equal(drfd_tasks_answer(&d, sv[0], (int)getpid(), req, &out, &len), 1);
	assert_non_null(out);
	assert_int_equal(strlen(out), len);
	close(sv[0]);
	close(sv[1]);
	return out;
}

/* "task-submit A /tmp 0 0 0 0 0 0 0" and each word of argv escaped, as drfctl sends it. */
static char *submit_req(const char *key, const char *const *argv)
{
	char *req = NULL, *e;
	size_t len = 0;
	FILE *f = open_memstream(&req, &len);

	assert_non_null(f);
	if (key)
		fprintf(f, "task-submit-key %s ", key);
	else
		fputs("task-submit ", f);
	fputs("A /tmp 0 0 0 0 0 0 0", f);
	for (; *argv; argv++) {
		e = drf_proto_escape(*argv);
		assert_non_null(e);
		fprintf(f, " %s", e);
		free(e);
	}
	assert_int_equal(fclose(f), 0);
	return req;
}

static void submit_ok(uid_t euid, const gid_t *groups, size_t ngroups, const char *key,
		      const char *const *argv)
{
	char *req = submit_req(key, argv), *a = answer_as(euid, groups, ngroups, req);

	if (strncmp(a, "drfd-task 1 ok ", 15) != 0)
		fail_msg("submit answered: %s", a);
	free(a);
	free(req);
}

/*
 * text as drf_json_print() writes it: one JSON document, strictly parsed (its
 * bytes UTF-8), then a newline and nothing else. Fails the test otherwise.
 */
static json_object *parse_doc(const char *text)
{
	size_t n = strlen(text);
	struct json_tokener *tok = json_tokener_new();
	json_object *o;

	assert_non_null(tok);
	assert_true(n > 0 && text[n - 1] == '\n');
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, text, (int)(n - 1));
	if (json_tokener_get_error(tok) != json_tokener_success)
		fail_msg("not JSON (%s): %s", json_tokener_error_desc(json_tokener_get_error(tok)),
			 text);
	assert_int_equal(json_tokener_get_parse_end(tok), n - 1);
	json_tokener_free(tok);
	assert_non_null(o);
	return o;
}

/* The member key of o, which must be there (it may be null). */
static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(o, key, &v))
		fail_msg("no \"%s\" in %s", key, json_object_to_json_string(o));
	return v;
}

/* The task of id in a listing ("tasks json" after its first line), which must be there. */
static json_object *task_of(json_object *doc, uint64_t id)
{
	json_object *tasks = member(doc, "tasks");

	for (size_t i = 0; i < json_object_array_length(tasks); i++) {
		json_object *t = json_object_array_get_idx(tasks, i);

		if (json_object_get_uint64(member(t, "id")) == id)
			return t;
	}
	fail_msg("no task %" PRIu64 " in the listing", id);
	return NULL;
}

/* Whether a is a JSON array of exactly the n strings of want. */
static bool is_words(json_object *a, const char *const *want, size_t n)
{
	if (!json_object_is_type(a, json_type_array) || json_object_array_length(a) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		json_object *w = json_object_array_get_idx(a, i);

		if (!json_object_is_type(w, json_type_string) ||
		    strcmp(json_object_get_string(w), want[i]) != 0)
			return false;
	}
	return true;
}

/*
 * A user other than root sees another user's task without its command, key,
 * groups and error (which names the cwd); its own whole. Root sees all.
 */
static void test_tasks_view_per_user(void **state)
{
	static const char *const secret[] = { "sh", "-c", "echo SECRET-TOKEN", NULL };
	static const char *const mine[] = { "echo", "MINE-ARG", NULL };
	const gid_t groups[] = { 4242 };
	char *a;

	(void)state;
	daemon_with_tasks();
	submit_ok(0, groups, 1, "key-of-root", secret);
	submit_ok(65534, NULL, 0, NULL, mine);
	assert_int_equal(d.tasks->n, 2);
	d.tasks->t[0].error = strdup("cannot run 'sh' as uid 0 in '/srv/SECRET-CWD': gone");
	assert_non_null(d.tasks->t[0].error);
	for (int json = 0; json < 2; json++) {
		const char *req = json ? "tasks json" : "tasks text";

		a = answer_as(65534, NULL, 0, req);
		assert_true(strncmp(a, "drfd-task 1 ok\n", 15) == 0);
		assert_null(strstr(a, "SECRET"));
		assert_null(strstr(a, "key-of-root"));
		assert_null(strstr(a, "4242"));
		assert_non_null(strstr(a, "MINE-ARG"));
		if (json) {
			json_object *doc = parse_doc(strchr(a, '\n') + 1), *t = task_of(doc, 1), *v;

			assert_string_equal(json_object_get_string(member(t, "tenant")), "A");
			assert_string_equal(json_object_get_string(member(t, "state")), "running");
			assert_true(json_object_is_type(member(t, "uid"), json_type_int));
			assert_int_equal(json_object_get_int64(member(t, "uid")), 0);
			assert_int_equal(json_object_get_int64(member(t, "gid")), 0);
			assert_null(member(t, "groups"));
			assert_null(member(t, "key"));
			assert_null(member(t, "command"));
			assert_null(member(t, "command_cut"));
			assert_null(member(t, "error"));
			v = member(member(t, "vector"), "cpu");
			assert_true(json_object_is_type(v, json_type_double));
			assert_true(json_object_get_double(v) == 0.5);
			/* Its own task, whole. */
			t = task_of(doc, 2);
			assert_true(is_words(member(t, "command"), (const char *const *)mine, 2));
			json_object_put(doc);
		}
		free(a);
		a = answer_as(0, NULL, 0, req);
		assert_non_null(strstr(a, "SECRET-TOKEN"));
		assert_non_null(strstr(a, "SECRET-CWD"));
		assert_non_null(strstr(a, "MINE-ARG"));
		if (json) {
			json_object *doc = parse_doc(strchr(a, '\n') + 1), *t = task_of(doc, 1), *g;

			assert_true(json_object_is_type(member(t, "key"), json_type_string));
			assert_string_equal(json_object_get_string(member(t, "key")),
					    "key-of-root");
			g = member(t, "groups");
			assert_true(json_object_is_type(g, json_type_array));
			assert_int_equal(json_object_array_length(g), 1);
			g = json_object_array_get_idx(g, 0);
			assert_true(json_object_is_type(g, json_type_int));
			assert_int_equal(json_object_get_int64(g), 4242);
			assert_true(is_words(member(t, "command"), (const char *const *)secret, 3));
			assert_string_equal(json_object_get_string(member(t, "error")),
					    d.tasks->t[0].error);
			json_object_put(doc);
		}
		free(a);
	}
	daemon_with_tasks_free();
}

/* Every byte printable or UTF-8 that is not a control character, but the newline at the end. */
static void assert_terminal_safe(const char *text)
{
	const char *end = text + strlen(text) - 1;

	assert_true(*end == '\n');
	for (const char *p = text; p < end;) {
		unsigned int cp;
		size_t n = drf_utf8_next(p, &cp);

		if (n == 0 || drf_is_control(cp))
			fail_msg("byte 0x%02x at %zu is not safe on a terminal", (unsigned char)*p,
				 (size_t)(p - text));
		p += n;
	}
}

/*
 * drfd's task listing in JSON, through the socket: whatever bytes a task's
 * words and error hold, valid JSON safe on a terminal (controls as \uXXXX),
 * which reads back as the same words (a byte that is not UTF-8 as U+FFFD).
 */
static void test_tasks_json_round_trip(void **state)
{
	static const char *const words[] = {
		"printf", "x\n\"y\"\\z", "\033]0;title\007", "c\302\2332J\177",
		"caf\303\251 \342\202\254", "bad\377\300\257", NULL };
	static const char *const back[] = {
		"printf", "x\n\"y\"\\z", "\033]0;title\007", "c\302\2332J\177",
		"caf\303\251 \342\202\254", "bad\357\277\275\357\277\275\357\277\275" };
	json_object *doc, *t;
	char *a, *body;

	(void)state;
	daemon_with_tasks();
	submit_ok(0, NULL, 0, NULL, words);
	d.tasks->t[0].error = strdup("an error\nwith\ttwo lines\033[2J");
	assert_non_null(d.tasks->t[0].error);
	a = answer_as(0, NULL, 0, "tasks json");
	assert_true(strncmp(a, "drfd-task 1 ok\n", 15) == 0);
	body = a + 15;
	assert_terminal_safe(body);
	assert_non_null(strstr(body, "\"\\u001b]0;title\\u0007\""));
	assert_non_null(strstr(body, "\"c\\u009b2J\\u007f\""));
	assert_non_null(strstr(body, "\"bad\\ufffd\\ufffd\\ufffd\""));
	doc = parse_doc(body);
	t = task_of(doc, 1);
	assert_true(is_words(member(t, "command"), back, 6));
	assert_string_equal(json_object_get_string(member(t, "error")),
			    "an error\nwith\ttwo lines\033[2J");
	json_object_put(doc);
	free(a);
	daemon_with_tasks_free();
}

/* A word with a newline cannot draw a row of its own in drfctl tasks: one row a task. */
static void test_tasks_text_escaped(void **state)
{
	static const char *const forge[] = {
		"printf", "x\n2      A            finished  0      0.500    64M      exited 0     "
			  "rm -rf /", "\033]0;title\007", NULL };
	char *a, *line;
	int rows = 0;

	(void)state;
	daemon_with_tasks();
	submit_ok(65534, NULL, 0, NULL, forge);
	d.tasks->t[0].error = strdup("an error\nwith\ttwo lines");
	assert_non_null(d.tasks->t[0].error);
	a = answer_as(0, NULL, 0, "tasks text");
	/* The answer's line, the header, the task's row, its error, the output line. */
	for (line = a; (line = strchr(line, '\n')); line++)
		rows++;
	if (rows != 5)
		fail_msg("%d lines:\n%s", rows, a);
	assert_non_null(strstr(a, " printf x\\x0a2      A"));
	assert_non_null(strstr(a, "\\x1b]0;title\\x07"));
	assert_non_null(strstr(a, "an error\\x0awith\\x09two lines"));
	assert_null(strchr(a, '\033'));
	free(a);
	daemon_with_tasks_free();
}

/* 5,000 words (well within DRF_REQ_MAX): taken whole, not refused as malformed. */
static void test_submit_many_words(void **state)
{
	const char **argv = calloc(5002, sizeof(*argv));

	(void)state;
	assert_non_null(argv);
	argv[0] = "true";
	for (int i = 1; i <= 5000; i++)
		argv[i] = "x";
	daemon_with_tasks();
	submit_ok(0, NULL, 0, NULL, argv);
	assert_int_equal(d.tasks->n, 1);
	assert_int_equal(d.tasks->t[0].argc, 5001);
	assert_string_equal(d.tasks->t[0].argv[5000], "x");
	free(argv);
	daemon_with_tasks_free();
}

/* ---- the status, in parts, over drfd on the fake tree ---- */

/*
 * fakecg's ops, with the listing of child cgroups (the fake tree is a real
 * directory tree), and counting the status's reads: cpu.stat is read once a
 * tenant by the status and by nothing else here (the measurements hold their
 * files open; no tick runs).
 */
static struct cgfs_ops status_ops;
static unsigned long stat_reads;

static ssize_t counting_read(void *ctx, int dirfd, const char *path, char *buf, size_t len)
{
	size_t n = strlen(path);

	if (n >= 9 && strcmp(path + n - 9, "/cpu.stat") == 0)
		stat_reads++;
	return fakecg_ops.read(ctx, dirfd, path, buf, len);
}

/* drfd over the fake tree with n tenants t0..t(n-1), started under its loop, listening. */
static void fx_start(int n)
{
	size_t len = (size_t)n * 64 + 64, off;
	char *conf = malloc(len), why[512] = "";

	assert_non_null(conf);
	off = (size_t)snprintf(conf, len, "[capacity]\ncpu = %d\nmemory = %dG\n", n, n);
	for (int i = 0; i < n; i++)
		off += (size_t)snprintf(conf + off, len - off, "[tenant t%d]\ncpu = 0.5\n"
					"memory = 64M\n", i);
	assert_int_equal(fakedrfd_setup(&fx, NULL, conf), 0);
	free(conf);
	fx_on = true;
	status_ops = fakecg_ops;
	status_ops.read = counting_read;
	fx.rec.inner = &status_ops;
	assert_int_equal(sd_event_new(&fx.d.event), 0);
	assert_int_equal(fakedrfd_start(&fx), 0);
	srv = &fx.d;
	if (drfd_listen(&fx.d, sock, GROUP, why, sizeof(why)) < 0)
		fail_msg("drfd_listen: %s", why);
	/* The start's pass, in the loop's steps. */
	run_quiet();
}

/* What is there to read on fd now, appended to *buf; false once drfd has closed. */
static bool drain(int fd, char **buf, size_t *len, size_t *cap)
{
	for (;;) {
		ssize_t n;

		if (*len + 65536 + 1 > *cap) {
			*cap = (*len + 65536 + 1) * 2;
			*buf = realloc(*buf, *cap);
			assert_non_null(*buf);
		}
		n = read(fd, *buf + *len, 65536);
		if (n > 0) {
			*len += (size_t)n;
			(*buf)[*len] = '\0';
			continue;
		}
		if (n == 0 || errno == ECONNRESET)
			return false;
		assert_int_equal(errno, EAGAIN);
		return true;
	}
}

/*
 * A status answer, whole: "drfd-status 2\n", the body, "drfd-status-end
 * problems=N\n". Returns the body, NUL-terminated in place of the trailer.
 */
static char *status_body(char *a, int *problems)
{
	char *end;

	if (strncmp(a, "drfd-status 2\n", 14) != 0)
		fail_msg("not a status answer: %.200s", a);
	end = strstr(a, "\ndrfd-status-end problems=");
	if (!end)
		fail_msg("no trailer: ...%s", a + (strlen(a) > 200 ? strlen(a) - 200 : 0));
	assert_int_equal(sscanf(end, "\ndrfd-status-end problems=%d\n", problems), 1);
	assert_int_equal(strchr(end + 1, '\n') - a, (ptrdiff_t)strlen(a) - 1);
	end[1] = '\0';
	return a + 14;
}

static int n_tenants(json_object *doc)
{
	return (int)json_object_array_length(member(doc, "tenants"));
}

/*
 * 1,000 tenants: the answer is whole (a trailer, 1,000 tenants in one JSON
 * document), and no turn of the loop rendered more than DRF_STATUS_PART of
 * them: each turn is one sd_event_run() here, and the status's reads of
 * cpu.stat count its tenants.
 */
static void test_status_1000_in_parts(void **state)
{
	size_t len = 0, cap = 0;
	unsigned long most = 0, parts = 0, total = 0;
	uint64_t end;
	char *a = NULL, *body;
	json_object *doc;
	int fd, problems = -1;
	bool open_ = true;

	(void)state;
	fx_start(1000);
	fd = client();
	client_send(fd, "status json\n", 12);
	for (end = now_ms() + 60000; open_;) {
		unsigned long before = stat_reads;

		assert_true(now_ms() < end);
		assert_true(sd_event_run(fx.d.event, 100000) >= 0);
		if (stat_reads > before) {
			parts++;
			most = stat_reads - before > most ? stat_reads - before : most;
			/* The turn is labelled for the loop's figures. */
			assert_string_equal(fx.d.loop.doing, "status");
		}
		total += stat_reads - before;
		open_ = drain(fd, &a, &len, &cap);
	}
	close(fd);
	print_message("1,000 tenants: %zu bytes in %lu parts, at most %lu tenants a turn\n", len,
		      parts, most);
	assert_int_equal(total, 1000);
	assert_true(most <= DRF_STATUS_PART);
	assert_true(parts >= (1000 + DRF_STATUS_PART - 1) / DRF_STATUS_PART);
	body = status_body(a, &problems);
	assert_int_equal(problems, 0);
	doc = parse_doc(body);
	assert_int_equal(n_tenants(doc), 1000);
	assert_string_equal(json_object_get_string(member(json_object_array_get_idx(
		member(doc, "tenants"), 999), "name")), "t999");
	assert_true(json_object_is_type(member(doc, "orphans"), json_type_array));
	json_object_put(doc);
	free(a);
	/* The text, whole as well. */
	a = ask("status text\n");
	body = status_body(a, &problems);
	assert_non_null(strstr(body, "\ntenant t999 (cgroup "));
	free(a);
}

/*
 * A client that reads slowly, a little at a time, takes longer than the send
 * deadline over the whole answer and still gets all of it: the deadline is a
 * part's. One that stops reading is dropped a deadline after.
 */
static void test_status_slow_reader(void **state)
{
	struct drf_sock_stats st0, st;
	size_t len = 0, cap = 1 << 16;
	char *a = malloc(cap), *body;
	uint64_t t0, end;
	json_object *doc;
	int fd, idle, problems = -1;

	(void)state;
	assert_non_null(a);
	/* About 500 kB: 6 s at this pace. */
	fx_start(240);
	drfd_sock_stats(&fx.d, &st0);
	idle = client();
	client_send(idle, "status json\n", 12);
	fd = client();
	client_send(fd, "status json\n", 12);
	t0 = now_ms();
	/* 8 kB every 100 ms: about 80 kB/s. */
	for (end = t0 + 60000;;) {
		ssize_t n;

		assert_true(now_ms() < end);
		run_for(100);
		if (len + 8192 + 1 > cap) {
			cap *= 2;
			a = realloc(a, cap);
			assert_non_null(a);
		}
		n = read(fd, a + len, 8192);
		if (n == 0)
			break;
		if (n < 0) {
			assert_int_equal(errno, EAGAIN);
			continue;
		}
		len += (size_t)n;
	}
	a[len] = '\0';
	close(fd);
	drfd_sock_stats(&fx.d, &st);
	print_message("slow reader: %zu bytes in %llu ms; dropped meanwhile: %llu\n", len,
		      (unsigned long long)(now_ms() - t0),
		      (unsigned long long)(st.dropped - st0.dropped));
	/* Longer than one deadline: the old deadline over the whole answer would have cut it. */
	assert_true(now_ms() - t0 > DRFD_SEND_TIMEOUT_USEC / 1000);
	body = status_body(a, &problems);
	doc = parse_doc(body);
	assert_int_equal(n_tenants(doc), 240);
	json_object_put(doc);
	/* The one that never read: dropped, its answer not whole. */
	assert_int_equal(st.dropped - st0.dropped, 1);
	close(idle);
	free(a);
}

/* A reload between two parts: the answer ends with error=changed, never mixing two plans. */
static void test_status_reload_between_parts(void **state)
{
	size_t len = 0, cap = 0;
	uint64_t end;
	char *a = NULL, *rest, *body;
	json_object *doc;
	int fd, problems;

	(void)state;
	fx_start(200);
	fd = client();
	client_send(fd, "status json\n", 12);
	/* Turn by turn until the first part has come: the others are rendered later. */
	for (end = now_ms() + 5000; len == 0;) {
		assert_true(now_ms() < end);
		assert_true(sd_event_run(fx.d.event, 100000) >= 0);
		assert_true(drain(fd, &a, &len, &cap));
	}
	assert_null(strstr(a, "drfd-status-end"));
	assert_int_equal(drfd_reload(&fx.d), 0);
	rest = client_read(fd, NULL);
	close(fd);
	assert_null(strstr(rest, "drfd-status-end problems="));
	len = strlen(rest);
	assert_true(len >= 31);
	assert_string_equal(rest + len - 31, "\ndrfd-status-end error=changed\n");
	free(rest);
	free(a);
	/* Asked again: whole, of the plan in force. */
	a = ask("status json\n");
	body = status_body(a, &problems);
	doc = parse_doc(body);
	assert_int_equal(n_tenants(doc), 200);
	assert_int_equal(json_object_get_int(member(doc, "reloads")), 1);
	json_object_put(doc);
	free(a);
}

/* "status json NAME": the head and that tenant; an unknown name is refused. */
static void test_status_one_tenant(void **state)
{
	json_object *doc, *t;
	char *a, *body;
	int problems;

	(void)state;
	fx_start(40);
	a = ask("status json t37\n");
	body = status_body(a, &problems);
	assert_int_equal(problems, 0);
	doc = parse_doc(body);
	assert_int_equal(n_tenants(doc), 1);
	t = json_object_array_get_idx(member(doc, "tenants"), 0);
	assert_string_equal(json_object_get_string(member(t, "name")), "t37");
	assert_string_equal(json_object_get_string(member(doc, "source")), "daemon");
	assert_true(json_object_is_type(member(doc, "start_only"), json_type_object));
	assert_false(json_object_object_get_ex(doc, "orphans", NULL));
	json_object_put(doc);
	free(a);
	a = ask("status text t37\n");
	body = status_body(a, &problems);
	assert_non_null(strstr(body, "\ntenant t37 (cgroup "));
	assert_null(strstr(body, "\ntenant t36 "));
	assert_true(strncmp(body, "drfd (pid ", 10) == 0);
	free(a);
	a = ask("status json nosuch\n");
	assert_string_equal(a, "drfd-status 2 error=no-such-tenant\n");
	free(a);
	a = ask("status text t3 t4\n");
	assert_string_equal(a, "drfd-status 2 error=unknown-request\n");
	free(a);
}

/* Make a child cgroup (a directory) at path below the root, holding procs. */
static void child_cgroup(const char *path, const char *procs)
{
	char p[512];

	assert_int_equal(mkdirat(fx.fs.rootfd, path, 0755), 0);
	snprintf(p, sizeof(p), "%s/cgroup.procs", path);
	assert_int_equal(fakecg_put(fx.fs.rootfd, p, procs), 0);
}

/* A tenant's processes are those of its whole subtree (a service, a scope below it). */
static void test_status_processes_in_children(void **state)
{
	json_object *doc, *us;
	char *a, *body;
	int problems;

	(void)state;
	fx_start(3);
	assert_int_equal(fakecg_put(fx.fs.rootfd, "t1/cgroup.procs", "100\n"), 0);
	child_cgroup("t1/web.service", "200\n201\n");
	child_cgroup("t1/web.service/worker", "300\n");
	child_cgroup("t1/run-u7.scope", "400\n");
	child_cgroup("t2/empty.scope", "");
	a = ask("status json t1\n");
	body = status_body(a, &problems);
	doc = parse_doc(body);
	us = member(json_object_array_get_idx(member(doc, "tenants"), 0), "usage");
	assert_int_equal(json_object_get_int(member(us, "processes")), 5);
	assert_false(json_object_get_boolean(member(us, "processes_capped")));
	json_object_put(doc);
	free(a);
	a = ask("status text\n");
	body = status_body(a, &problems);
	assert_non_null(strstr(body, "processes 5\n"));
	free(a);
	a = ask("status json t2\n");
	body = status_body(a, &problems);
	doc = parse_doc(body);
	us = member(json_object_array_get_idx(member(doc, "tenants"), 0), "usage");
	assert_int_equal(json_object_get_int(member(us, "processes")), 0);
	json_object_put(doc);
	free(a);
}

/*
 * Root's own socket (drf_proto_root_socket(): "X.sock" -> "X-root.sock"),
 * 0600 and root's: a user cannot connect; with the status socket full (the
 * users at their caps and root's own slots taken), root is still served
 * there. Removed at exit like the status socket.
 */
static void test_root_socket(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct holder h[5];
	int root_fds[DRFD_CONN_ROOT], fd;
	char why[512] = "", *a, saved[sizeof(sock)];
	struct stat st;

	(void)state;
	daemon_new();
	daemon_listen();
	assert_int_equal(drfd_listen_root(&d, sock, why, sizeof(why)), 0);
	assert_int_equal(drf_proto_root_socket(sock, sa.sun_path, sizeof(sa.sun_path)), 0);
	assert_int_equal(strcmp(sa.sun_path + strlen(sa.sun_path) - 10, "-root.sock"), 0);
	assert_int_equal(lstat(sa.sun_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, 0);
	/* A user: refused by the file's mode. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(seteuid(65534), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), -1);
	assert_int_equal(errno, EACCES);
	assert_int_equal(seteuid(0), 0);
	close(fd);
	/* The status socket full, root's slots too: busy there, served on its own. */
	for (int i = 0; i < 5; i++) {
		h[i] = holder_start((uid_t)(65534 - i), DRFD_CONN_MAX_UID);
		holder_open(&h[i]);
	}
	for (int i = 0; i < DRFD_CONN_ROOT; i++)
		root_fds[i] = client();
	run_quiet();
	a = ask("root\n");
	assert_string_equal(a, "drfd-status 2 error=busy\n");
	free(a);
	memcpy(saved, sock, sizeof(sock));
	snprintf(sock, sizeof(sock), "%s", sa.sun_path);
	a = ask("root\n");
	memcpy(sock, saved, sizeof(sock));
	assert_string_equal(a, ROOT_ANSWER "\n");
	free(a);
	for (int i = 0; i < DRFD_CONN_ROOT; i++)
		close(root_fds[i]);
	for (int i = 0; i < 5; i++)
		holder_end(&h[i]);
	drfd_free(&d);
	assert_int_equal(lstat(sa.sun_path, &st), -1);
	assert_int_equal(errno, ENOENT);
}

/* A whole status request's answer, in a buffer to free. */
static int status_answer(struct drfd *dd, const char *req, char **out, size_t *len)
{
	struct drfd_req r = { .buf = (char *)req, .len = strlen(req), .seen = strlen(req),
			      .done = true };

	return drfd_req_answer(dd, -1, &r, out, len);
}

/* A small file's text, or "" (fails the test) if it cannot be read. */
static int t_read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Tenant B: nobody (65534) a member, group 4242 its admins; C: root's alone. */
static const char *acl_tenants = "[tenant B]\ntask-cpu = 0.5\ntask-memory = 64M\n"
				 "tasks = unlimited\naccess = 65534\nadmins = @4242\n"
				 "[tenant C]\ntask-cpu = 0.5\ntask-memory = 64M\ntasks = unlimited\n";

static void t_append_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* "task-submit TENANT /tmp 0 0 0 0 0 0 0 true" */
static char *submit_to(uid_t euid, const gid_t *groups, size_t ngroups, const char *tenant)
{
	char req[128];

	snprintf(req, sizeof(req), "task-submit %s /tmp 0 0 0 0 0 0 0 true", tenant);
	return answer_as(euid, groups, ngroups, req);
}

static bool answered(char *a, const char *verdict)
{
	char head[64];
	bool ok;

	snprintf(head, sizeof(head), "drfd-task 1 %s", verdict);
	ok = strncmp(a, head, strlen(head)) == 0;
	if (!ok)
		print_message("answered: %s", a);
	free(a);
	return ok;
}

/*
 * Access (access.h): a submit to a tenant whose lists do not name the user is
 * refused, naming who, what and the rule, and queues nothing; a member's
 * submit is queued; root submits anywhere; a cancel of another's task takes
 * an admin of its tenant (a group's member here); listings leave out the
 * tenants the user may not act in.
 */
static void test_access_enforced(void **state)
{
	const gid_t admins[] = { 4242 };
	char *a, conf[4200];
	json_object *doc, *tasks;

	(void)state;
	daemon_with_tasks_and(acl_tenants);
	snprintf(conf, sizeof(conf), "%s/drfd.conf", cgdir);
	/* 65533 is named by nothing of B's: refused, nothing queued, the rule shown. */
	a = submit_to(65533, NULL, 0, "B");
	assert_non_null(strstr(a, "drfd-task 1 refused\n"));
	assert_non_null(strstr(a, "uid 65533"));
	assert_non_null(strstr(a, "tenant 'B'"));
	/* The rule: B's lists, where they are written. */
	assert_non_null(strstr(a, "access '65534' of tenant B at "));
	assert_non_null(strstr(a, conf));
	free(a);
	assert_int_equal(d.tasks->n, 0);
	/* C is root's alone: even its members' group cannot submit. */
	a = submit_to(65534, admins, 1, "C");
	assert_non_null(strstr(a, "drfd-task 1 refused\n"));
	assert_non_null(strstr(a, "root's alone"));
	free(a);
	assert_int_equal(d.tasks->n, 0);
	/* B's member, A's anyone, C's root: queued. */
	assert_true(answered(submit_to(65534, NULL, 0, "B"), "ok 1"));
	assert_true(answered(submit_to(65533, NULL, 0, "A"), "ok 2"));
	assert_true(answered(submit_to(0, NULL, 0, "C"), "ok 3"));
	assert_int_equal(d.tasks->n, 3);
	/* Running (the fake spawn): a cancel kills its cgroup, and marks it. */
	for (int i = 1; i <= 2; i++) {
		char tdir[4400], kill[4450];

		snprintf(tdir, sizeof(tdir), "%s/%s/task-%d", cgroot, i == 1 ? "B" : "A", i);
		assert_true(mkdir(tdir, 0755) == 0 || errno == EEXIST);
		snprintf(kill, sizeof(kill), "%s/cgroup.kill", tdir);
		assert_int_equal(t_write_file(kill, ""), 0);
	}
	assert_int_equal(d.tasks->t[0].state, DRF_TASK_RUNNING);
	/* Another's task: not by a stranger, nor by a member of A; by B's admins' group. */
	assert_true(answered(answer_as(65533, NULL, 0, "task-cancel 1"), "refused"));
	assert_false(d.tasks->t[0].cancel);
	assert_true(answered(answer_as(65532, admins, 1, "task-cancel 2"), "refused"));
	assert_false(d.tasks->t[1].cancel);
	assert_true(answered(answer_as(65532, admins, 1, "task-cancel 1"), "ok"));
	assert_true(d.tasks->t[0].cancel);
	/* Its own, always. */
	assert_true(answered(answer_as(65533, NULL, 0, "task-cancel 2"), "ok"));
	assert_true(d.tasks->t[1].cancel);
	/* 65533 lists A's tasks and no other's; root all of them. */
	a = answer_as(65533, NULL, 0, "tasks json");
	doc = parse_doc(strchr(a, '\n') + 1);
	tasks = member(doc, "tasks");
	assert_int_equal(json_object_array_length(tasks), 1);
	assert_string_equal(json_object_get_string(member(json_object_array_get_idx(tasks, 0),
								"tenant")), "A");
	assert_non_null(member(member(doc, "tenants"), "A"));
	assert_false(json_object_object_get_ex(member(doc, "tenants"), "B", NULL));
	assert_false(json_object_object_get_ex(member(doc, "tenants"), "C", NULL));
	json_object_put(doc);
	free(a);
	a = answer_as(0, NULL, 0, "tasks json");
	doc = parse_doc(strchr(a, '\n') + 1);
	assert_int_equal(json_object_array_length(member(doc, "tasks")), 3);
	json_object_put(doc);
	free(a);
	/* A reload that names 65533 in C's access: in force for the next request. */
	t_append_file(conf, "access = 65533\n");
	d.config_path = conf;
	assert_int_equal(drfd_reload(&d), 0);
	assert_true(answered(submit_to(65533, NULL, 0, "C"), "ok 4"));
	/* One that names a user nobody knows is refused, and the lists in force stay. */
	t_append_file(conf, "[tenant D]\ncpu = 0.1\naccess = no-such-user-xyz\n");
	assert_true(drfd_reload(&d) < 0);
	assert_true(answered(submit_to(65533, NULL, 0, "C"), "ok 5"));
	assert_true(answered(submit_to(65533, NULL, 0, "B"), "refused"));
	daemon_with_tasks_free();
}

/* The status shows each tenant's rule, or that it is root's alone. */
static void test_access_in_status(void **state)
{
	char *a;
	size_t len;
	int problems;
	json_object *doc, *ts;

	(void)state;
	daemon_with_tasks_and(acl_tenants);
	assert_int_equal(status_answer(&d, "status json", &a, &len), 0);
	doc = parse_doc(status_body(a, &problems));
	ts = member(doc, "tenants");
	for (size_t i = 0; i < json_object_array_length(ts); i++) {
		json_object *t = json_object_array_get_idx(ts, i), *acc = NULL;
		const char *name = json_object_get_string(member(t, "name"));

		assert_true(json_object_object_get_ex(t, "access", &acc));
		if (strcmp(name, "C") == 0) {
			assert_null(acc);
			continue;
		}
		assert_true(json_object_is_type(acc, json_type_string));
		if (strcmp(name, "B") == 0) {
			assert_non_null(strstr(json_object_get_string(acc), "admins '@4242' of tenant B"));
			assert_non_null(strstr(json_object_get_string(acc), "access '65534' of tenant B"));
		} else {
			assert_non_null(strstr(json_object_get_string(acc), "access '*' of tenant A"));
		}
	}
	json_object_put(doc);
	free(a);
	daemon_with_tasks_free();
}

/*
 * drfctl exec of a user: drfd moves the asking process (SO_PEERCRED's pid)
 * into the tenant's cgroup.procs if the tenant's access names the user, and
 * only if that process is still of the peer's uid. Here the peer is this test
 * (a socketpair's credentials are its creator's): root's is moved; a stranger
 * is refused and nothing written; a member whose process is not of its uid
 * (this process's real uid is 0) is refused too.
 */
static void test_exec_access(void **state)
{
	char path[4400], buf[64], want[32];

	(void)state;
	daemon_with_tasks_and(acl_tenants);
	snprintf(path, sizeof(path), "%s/B/cgroup.procs", cgroot);
	assert_int_equal(t_write_file(path, ""), 0);
	assert_true(answered(answer_as(65533, NULL, 0, "task-exec B"), "refused"));
	assert_int_equal(t_read_file(path, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_true(answered(answer_as(65534, NULL, 0, "task-exec B"), "refused"));
	assert_int_equal(t_read_file(path, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_true(answered(answer_as(0, NULL, 0, "task-exec nosuch"), "refused"));
	/* Not sent by the process that connected (unknown here): nothing moved. */
	{
		int sv[2];
		size_t len = 0;
		char *out = NULL;

		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		assert_int_equal(drfd_tasks_answer(&d, sv[0], 0, "task-exec B", &out, &len), 1);
		assert_true(answered(out, "refused"));
		close(sv[0]);
		close(sv[1]);
	}
	assert_int_equal(t_read_file(path, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	/* Through the socket: the kernel stamps the request with its sender, this process. */
	{
		char why[512] = "", *a;

		assert_int_equal(drfd_listen(&d, sock, GROUP, why, sizeof(why)), 0);
		a = ask("task-exec B\n");
		assert_true(answered(a, "ok"));
	}
	assert_int_equal(t_read_file(path, buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "%d", (int)getpid());
	assert_string_equal(buf, want);
	daemon_with_tasks_free();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_cap_per_uid, test_teardown),
		cmocka_unit_test_teardown(test_cap_overall_root_served, test_teardown),
		cmocka_unit_test_teardown(test_refusals_paced, test_teardown),
		cmocka_unit_test_teardown(test_emfile_backoff, test_teardown),
		cmocka_unit_test_teardown(test_request_too_long, test_teardown),
		cmocka_unit_test_teardown(test_slow_clients, test_teardown),
		cmocka_unit_test_teardown(test_path_not_a_socket, test_teardown),
		cmocka_unit_test_teardown(test_path_stale_live_and_exit, test_teardown),
		cmocka_unit_test_teardown(test_path_directories_made, test_teardown),
		cmocka_unit_test_teardown(test_tasks_view_per_user, test_teardown),
		cmocka_unit_test_teardown(test_tasks_text_escaped, test_teardown),
		cmocka_unit_test_teardown(test_access_enforced, test_teardown),
		cmocka_unit_test_teardown(test_root_socket, test_teardown),
		cmocka_unit_test_teardown(test_access_in_status, test_teardown),
		cmocka_unit_test_teardown(test_exec_access, test_teardown),
		cmocka_unit_test_teardown(test_tasks_json_round_trip, test_teardown),
		cmocka_unit_test_teardown(test_submit_many_words, test_teardown),
		cmocka_unit_test_teardown(test_status_1000_in_parts, test_teardown),
		cmocka_unit_test_teardown(test_status_slow_reader, test_teardown),
		cmocka_unit_test_teardown(test_status_reload_between_parts, test_teardown),
		cmocka_unit_test_teardown(test_status_one_tenant, test_teardown),
		cmocka_unit_test_teardown(test_status_processes_in_children, test_teardown),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP test_socket, its %zu tests: needs root (its clients drop to "
				"other uids)\n", sizeof(tests) / sizeof(*tests));
		return 0;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
