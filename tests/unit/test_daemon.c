// SPDX-License-Identifier: MIT
/*
 * The daemon's tick over the fake cgroup tree: what drfd keeps for its next
 * start. A save of the state file that fails (the path blocked by a directory,
 * as a full disk or a read-only file system would make it fail) is shown in
 * status and metrics and retried each tick until it succeeds; a reload that
 * added a tenant while it failed is in the file once it is saved. And the
 * log escapes control characters, and JSON strings hold none.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "fakecg.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "statedir.h"
#include "statefile.h"
#include "testlib.h"

static char dir[64], root[128], conf[256], statedir[256];
static struct cgfs fs;
static struct drfd d;

static void write_conf(const char *tenants)
{
	FILE *f = fopen(conf, "w");

	assert_non_null(f);
	fprintf(f, "[agent]\ncgroup-root = %s\nstate-dir = %s\n[capacity]\ncpu = 2\n"
		   "memory = 2G\n%s", root, statedir, tenants);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	char err[512];

	(void)state;
	assert_int_equal(fakecg_setup(dir, sizeof(dir), root, sizeof(root)), 0);
	snprintf(conf, sizeof(conf), "%s/drfd.conf", dir);
	snprintf(statedir, sizeof(statedir), "%s/state", dir);
	assert_int_equal(mkdir(statedir, 0755), 0);
	write_conf("[tenant a]\ncpu = 1\nmemory = 1G\n");
	assert_int_equal(cgfs_open(&fs, root, false, &fakecg_ops, NULL), 0);
	memset(&d, 0, sizeof(d));
	d.fs = &fs;
	d.config_path = conf;
	d.listen_fd = -1;
	d.root = strdup(root);
	assert_non_null(d.root);
	assert_int_equal(drf_enforced_load(&d.plan, conf, NULL, err, sizeof(err)), 0);
	assert_int_equal(drfd_usage_plan(&d), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	drfd_free(&d);
	cgfs_close(&fs);
	fakecg_teardown(dir);
	return 0;
}

/* The whole of a small file, or "" (static buffer). */
static const char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = '\0';
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

/* The status (JSON) and its problem count. */
static int status_json(char **ret)
{
	size_t len = 0;
	FILE *f = open_memstream(ret, &len);
	int problems;

	assert_non_null(f);
	problems = drfd_status_render(&d, true, f);
	assert_int_equal(fclose(f), 0);
	return problems;
}

static bool metrics_have(const char *line)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool have;

	assert_non_null(f);
	assert_int_equal(drfd_metrics_render(&d, f), 0);
	assert_int_equal(fclose(f), 0);
	have = strstr(buf, line) != NULL;
	free(buf);
	return have;
}

/* Blocks the state file: a directory (not empty) where it goes, so the rename fails. */
static void block(bool on)
{
	char p[4352];

	snprintf(p, sizeof(p), "%s/x", d.state_path);
	if (on) {
		assert_true(unlink(d.state_path) == 0 || errno == ENOENT);
		assert_int_equal(mkdir(d.state_path, 0755), 0);
		assert_int_equal(t_write_file(p, "x"), 0);
	} else {
		assert_int_equal(unlink(p), 0);
		assert_int_equal(rmdir(d.state_path), 0);
	}
}

static void test_state_save_retried(void **state)
{
	char *js = NULL, err[512];
	struct drf_enforced n = { 0 };
	struct stat st;

	(void)state;
	/* The first save fails: said in status (a problem) and in metrics. */
	assert_int_equal(drf_statedir_path(statedir, root, ".state", d.state_path,
					   sizeof(d.state_path)), 0);
	block(true);
	d.state_path[0] = '\0'; /* drfd_start works the path out itself */
	assert_int_equal(drfd_start(&d, NULL), 0);
	assert_true(d.state_path[0] != '\0');
	assert_int_not_equal(d.state_err, 0);
	assert_true(status_json(&js) >= 1);
	assert_non_null(strstr(js, "\"state_file\": {\"path\": "));
	assert_non_null(strstr(js, "\"saved\": false, \"error\": \""));
	free(js);
	assert_true(metrics_have("\ndrfd_state_saved 0\n"));
	/* Still failing: still said. */
	drfd_tick(&d, 0);
	assert_int_not_equal(d.state_err, 0);
	/* Space again: the next tick saves it, with nothing else changed. */
	block(false);
	drfd_tick(&d, 0);
	assert_int_equal(d.state_err, 0);
	assert_int_equal(stat(d.state_path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_non_null(strstr(slurp(d.state_path), "\ntenant a a\n"));
	assert_int_equal(status_json(&js), 0);
	assert_non_null(strstr(js, "\"saved\": true, \"error\": null"));
	free(js);
	assert_true(metrics_have("\ndrfd_state_saved 1\n"));

	/*
	 * A reload adds tenant b while the disk is full: the save fails, and the
	 * ticks after it (which change nothing) retry it until b is in the file.
	 */
	block(true);
	write_conf("[tenant a]\ncpu = 1\nmemory = 1G\n[tenant b]\ncpu = 1\nmemory = 1G\n");
	assert_int_equal(drf_enforced_load(&n, conf, NULL, err, sizeof(err)), 0);
	assert_int_equal(drf_reconciler_set(&d.rc, &n.cfg, n.knobs, n.inner, n.n_inner), 0);
	drf_enforced_free(&d.plan);
	d.plan = n;
	assert_int_equal(drfd_usage_plan(&d), 0);
	drfd_tick(&d, 0);
	assert_int_not_equal(d.state_err, 0);
	drfd_tick(&d, 0);
	drfd_tick(&d, 0);
	assert_int_not_equal(d.state_err, 0);
	block(false);
	drfd_tick(&d, 0);
	assert_int_equal(d.state_err, 0);
	assert_non_null(strstr(slurp(d.state_path), "\ntenant b b\n"));
	/* The ticks counted are drfd_tick()s: the one at start and these 6. */
	assert_int_equal(d.ticks, 7);
	status_json(&js);
	assert_non_null(strstr(js, "\"ticks\": 7,"));
	free(js);
	assert_true(metrics_have("\ndrfd_ticks_total 7\n"));
}

/*
 * What drfd logs carries names from configs and requests (a task's command is
 * logged at submit): no control character reaches the terminal or journal.
 */
static void test_log_escapes(void **state)
{
	char path[128], buf[512];
	int saved = dup(STDERR_FILENO), fd;
	struct drf_stderr_sink sink;
	struct drf_logger log;
	ssize_t n;

	(void)state;
	snprintf(path, sizeof(path), "%s/log", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	log = drf_log_stderr(&sink, LOG_INFO);
	drf_log(&log, LOG_ERR, "task queued: %s", "x\x1b]0;owned\x07\ny\xc2\x9b" "2J");
	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	/* one line, its only control the newline that ends it */
	assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);
	for (ssize_t i = 0; i < n - 1; i++)
		assert_true((unsigned char)buf[i] >= 0x20 && buf[i] != 0x7f &&
			    (unsigned char)buf[i] != 0x9b);
	assert_non_null(strstr(buf, "x\\x1b]0;owned\\x07\\x0ay\\xc2\\x9b2J"));
}

/* JSON strings: valid, and safe on a terminal whatever bytes a task's words hold. */
static void test_json_str(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	drf_json_str(f, "q\"b\\ caf\xc3\xa9 \xe2\x82\xac");
	fputc(' ', f);
	drf_json_str(f, "\x1b]0;x\x07 \x7f \xc2\x9b" "2J \x9b \xff\xc0\xaf");
	assert_int_equal(fclose(f), 0);
	assert_string_equal(buf, "\"q\\\"b\\\\ caf\xc3\xa9 \xe2\x82\xac\" "
				 "\"\\u001b]0;x\\u0007 \\u007f \\u009b2J \\ufffd \\ufffd\\ufffd\\ufffd\"");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_state_save_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_escapes, setup, teardown),
		cmocka_unit_test(test_json_str),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
