// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the status socket's protocol: the input is what a
 * client sends, fed as the connection's reads would deliver it (the first byte
 * picks the size of each read, 1 to 256 bytes) through the request framing
 * (drfd_req_feed) and the dispatch (drfd_req_answer: status, metrics, root,
 * reload, the task requests), against a drfd over the fake cgroup tree with a task queue
 * whose spawn only records. The peer of the socketpair standing for the
 * connection is this process, as SO_PEERCRED tells the task requests.
 *
 * Besides what the sanitizers catch, it checks what the framing promises: a
 * request over DRF_REQ_MAX or holding a NUL byte is refused and changes no
 * task; only an "ok" answer changes the queue; every answer is one of the
 * protocol's, a status whole with its end line. Build and run: make fuzz (see
 * the Makefile).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "featureset.h"
#include "fakecg.h"
#include "log.h"
#include "listener.h"
#include "tasks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Running tasks never end here: the whole daemon is made anew past this many tasks. */
#define MAX_TASKS 64

static struct drfd d;
static struct cgfs fs;
static char dir[4096], root[4096], sdir[4200];
static int pair[2] = { -1, -1 };
static bool ready;

#define check(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "fuzz_proto: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                     \
		}                                                                    \
	} while (0)

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
	fakecg_put(cfs->rootfd, p, "populated 1\n");
	snprintf(p, sizeof(p), "%s/memory.events", cg);
	fakecg_put(cfs->rootfd, p, "oom 0\noom_kill 0\n");
	*ret = 0;
	return 0;
}

static void fake_reap(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
}

static const struct drf_spawn_ops fake_ops = { fake_spawn, fake_reap };
static struct drf_fake_clock fake_now = { .mono = 1000000000, .real = 1700000000000000ull };
static const struct drf_clock fake_clock = { drf_fake_clock_now, &fake_now };
static struct drfd_env env;

static void rm_rf(const char *path)
{
	char cmd[4300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	check(system(cmd) == 0);
}

#define SHM_PREFIX "drf-fuzz-proto-"

/*
 * The state dirs that runs killed before their atexit (a crash, a timeout,
 * SIGKILL) left in /dev/shm: this user's, of pids that are gone. /dev/shm is
 * anyone's, so only a directory of our own is removed, never followed.
 */
static void remove_stale(void)
{
	DIR *dd = opendir("/dev/shm");
	struct dirent *de;

	if (!dd)
		return;
	while ((de = readdir(dd))) {
		char path[300], *end;
		struct stat st;
		long pid;

		if (strncmp(de->d_name, SHM_PREFIX, strlen(SHM_PREFIX)) != 0)
			continue;
		pid = strtol(de->d_name + strlen(SHM_PREFIX), &end, 10);
		if (*end || pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "/dev/shm/%s", de->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
			rm_rf(path);
	}
	closedir(dd);
}

/* A daemon of two tenants (A takes tasks), started, with an empty task queue. */
static void setup(void)
{
	char conf[4200], err[2048];
	struct stat sb;
	FILE *f;

	check(fakecg_setup(dir, sizeof(dir), root, sizeof(root)) == 0);
	check(cgfs_open(&fs, root, false, &fakecg_ops, NULL) == 0);
	/* Task files are written and fsync'ed at each submit: on tmpfs when there is one. */
	if (stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode)) {
		remove_stale();
		snprintf(sdir, sizeof(sdir), "/dev/shm/" SHM_PREFIX "%d", (int)getpid());
	} else
		snprintf(sdir, sizeof(sdir), "%s/state", dir);
	/* A state dir of its own: /dev/shm itself is anyone's (drfd refuses it). */
	check(mkdir(sdir, 0755) == 0 || errno == EEXIST);
	snprintf(conf, sizeof(conf), "%s/drfd.conf", dir);
	f = fopen(conf, "w");
	check(f);
	fprintf(f, "[agent]\ncgroup-root = %s\nstate-dir = %s\n[capacity]\ncpu = 4\n"
		   "memory = 8G\n[tenant A]\ntask-cpu = 0.5\ntask-memory = 64M\n"
		   "tasks = unlimited\n[tenant B]\ncpu = 1\nmemory = 1G\n", root, sdir);
	check(fclose(f) == 0);
	env = (struct drfd_env){ .clock = &fake_clock, .host = &drf_host_real, .fs = &fs,
				 .spawn = &fake_ops };
	d = (struct drfd){ .listen_fd = -1, .config_path = "fuzz.conf", .env = &env };
	check(drfd_add_features(&d) == 0);
	if (drf_declared_load(&d.decl, conf, env.host, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_proto: %s\n", err);
		abort();
	}
	d.root = strdup(root);
	check(d.root);
	check(drfd_start(&d, NULL) == 0);
	check(d.tasks);
	if (pair[0] < 0)
		check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
	ready = true;
}

static void teardown(void)
{
	drfd_free(&d);
	cgfs_close(&fs);
	fakecg_teardown(dir);
	rm_rf(sdir);
	ready = false;
}

/*
 * The task queued is the request's command, every word of it: nothing cut. A
 * keyed submit ("task-submit-key KEY ...") has the key before the same words,
 * and its task holds the key.
 */
static void check_whole(const struct drfd_req *r, uint64_t id)
{
	const struct drf_task *t = NULL;
	char *line = strndup(r->buf, r->len), **w, *key = NULL, *p;
	size_t n = 0, cap = 1, head;
	bool keyed;

	check(line);
	if (r->len && line[r->len - 1] == '\r')
		line[r->len - 1] = '\0';
	for (p = line; *p; p++)
		cap += *p == ' ';
	w = calloc(cap, sizeof(*w));
	check(w);
	keyed = strncmp(line, "task-submit-key ", 16) == 0;
	check(keyed || strncmp(line, "task-submit ", 12) == 0);
	for (p = strtok(line + (keyed ? 16 : 12), " "); p && n < cap; p = strtok(NULL, " "))
		w[n++] = p;
	head = 9;
	if (keyed) {
		check(n >= 1);
		key = w[0];
		check(drf_proto_unescape(key) == 0);
		head++;
	}
	for (size_t i = 0; i < d.tasks->n; i++)
		if (d.tasks->t[i].id == id)
			t = &d.tasks->t[i];
	check(t && n >= head && t->argc == n - head);
	check(key ? t->key && strcmp(t->key, key) == 0 : !t->key);
	for (size_t i = 0; i < t->argc; i++) {
		check(drf_proto_unescape(w[head + i]) == 0);
		check(strcmp(t->argv[i], w[head + i]) == 0);
	}
	free(w);
	free(line);
}

/* libFuzzer exits from anywhere: the temporary directories go with it. */
static void cleanup(void)
{
	if (ready)
		teardown();
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Whether the status answer out ends with its end line: the problems, or an error. */
static bool status_ended(const char *out, size_t len)
{
	const char *last = out + len - 1;

	while (last > out && last[-1] != '\n')
		last--;
	return last > out && (starts(last, "drfd-status-end problems=") ||
			      starts(last, "drfd-status-end error="));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct drfd_req r = { 0 };
	size_t chunk, off = 0, n_before;
	uint64_t next_before;
	char *out = NULL;
	size_t out_len = 0;
	int done = 0;

	if (!ready) {
		/* The daemon logs refusals and the like: not the fuzzer's output (d.log is NULL). */
		setup();
		atexit(cleanup);
	}
	if (size == 0)
		return 0;
	chunk = (size_t)data[0] + 1;
	data++;
	size--;
	while (!done && off < size) {
		size_t n = size - off < chunk ? size - off : chunk;

		done = drfd_req_feed(&r, (const char *)data + off, n);
		check(done >= 0);
		off += n;
	}
	/* The client shuts its side: that ends the line; one that sent nothing gets nothing. */
	if (!done) {
		check(drfd_req_feed(&r, NULL, 0) == 1);
		if (r.seen == 0) {
			drfd_req_free(&r);
			return 0;
		}
	}
	check(r.len <= DRF_REQ_MAX && r.len <= r.seen);
	n_before = d.tasks->n;
	next_before = d.tasks->next_id;
	check(drfd_req_answer(&d, pair[0], &r, &out, &out_len) == 0);
	check(out && out_len > 0 && out_len == strlen(out) && out[out_len - 1] == '\n');
	check(starts(out, "drfd-status 2\n") || starts(out, "drfd-status 2 error=") ||
	      starts(out, "drfd-metrics 1\n") || starts(out, "drfd-task 1 ") ||
	      starts(out, "drfd-reload 1 ") ||
	      (out_len == strlen(d.root) + 1 && strncmp(out, d.root, strlen(d.root)) == 0));
	/* A status is whole or says it is not: its last line is the end line. */
	if (starts(out, "drfd-status 2\n"))
		check(status_ended(out, out_len));
	/* A refusal is its one line. */
	if (starts(out, "drfd-status 2 error="))
		check(memchr(out, '\n', out_len) == out + out_len - 1);
	/* Over the limit, or cut by a NUL: refused whole, nothing queued or cancelled. */
	if (r.seen > DRF_REQ_MAX || (r.len && memchr(r.buf, '\0', r.len))) {
		check(starts(out, "drfd-task 1 refused\n") ||
		      strcmp(out, "drfd-status 2 error=request-too-long\n") == 0 ||
		      strcmp(out, "drfd-status 2 error=malformed-request\n") == 0);
		check(d.tasks->n == n_before && d.tasks->next_id == next_before);
	}
	/* Only a submit answered "ok ID" adds a task, and that one. */
	if (d.tasks->next_id != next_before) {
		char want[64];

		check(d.tasks->next_id == next_before + 1 && d.tasks->n == n_before + 1);
		snprintf(want, sizeof(want), "drfd-task 1 ok %llu\n",
			 (unsigned long long)next_before);
		check(starts(out, want));
		check_whole(&r, next_before);
	}
	free(out);
	drfd_req_free(&r);
	if (d.tasks->n > MAX_TASKS) {
		teardown();
		setup();
	}
	return 0;
}
