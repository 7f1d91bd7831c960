// SPDX-License-Identifier: MIT
/*
 * drfd's state dir (agent/lib/statedir.c) over a temp tree: the start-up
 * check (owner, group/other-writable, sticky ancestors, symlinks, nothing
 * created), the opening that creates what is missing with exact modes, and the
 * helpers under a directory fd (no symlink followed, no "..", atomic replace,
 * foreign files refused). Runs as root: it chowns and chmods.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "statedir.h"
#include "testlib.h"

struct tree {
	char top[64];
};

static void path_of(const struct tree *t, const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", t->top, rel);
}

static void mk(const struct tree *t, const char *rel, mode_t mode, uid_t uid)
{
	char p[512];

	path_of(t, rel, p, sizeof(p));
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chmod(p, mode), 0);
	assert_int_equal(chown(p, uid, 0), 0);
}

static mode_t mode_of(const struct tree *t, const char *rel)
{
	char p[512];
	struct stat st;

	path_of(t, rel, p, sizeof(p));
	if (lstat(p, &st) < 0)
		return (mode_t)-1;
	return st.st_mode & 07777;
}

static int check(const struct tree *t, const char *rel, char *why, size_t len)
{
	char p[512];

	path_of(t, rel, p, sizeof(p));
	why[0] = '\0';
	return drf_statedir_check(p, why, len);
}

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	snprintf(t->top, sizeof(t->top), "/tmp/drf-statedir-XXXXXX");
	assert_non_null(mkdtemp(t->top));
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->top);
	assert_int_equal(system(cmd), 0);
	free(t);
	return 0;
}

static void test_safe_tree_passes(void **state)
{
	struct tree *t = *state;
	char why[1024];

	mk(t, "a", 0755, 0);
	mk(t, "a/b", 0700, 0);
	assert_int_equal(check(t, "a/b", why, sizeof(why)), 0);
	/* Missing components are fine: drfd creates them, root's. Nothing is created. */
	assert_int_equal(check(t, "a/b/c/d", why, sizeof(why)), 0);
	assert_int_equal(mode_of(t, "a/b/c"), (mode_t)-1);
}

static void test_writable_state_dir_refused(void **state)
{
	struct tree *t = *state;
	char why[1024], p[512];

	mk(t, "s", 0777, 0);
	assert_int_equal(check(t, "s", why, sizeof(why)), -EPERM);
	path_of(t, "s", p, sizeof(p));
	assert_non_null(strstr(why, p));
	assert_non_null(strstr(why, "chmod go-w"));
	/* Group-writable too, and sticky does not excuse the state dir itself. */
	assert_int_equal(chmod(p, 0775), 0);
	assert_int_equal(check(t, "s", why, sizeof(why)), -EPERM);
	assert_int_equal(chmod(p, 01777), 0);
	assert_int_equal(check(t, "s", why, sizeof(why)), -EPERM);
	/* Opening refuses it too, and changes nothing. */
	assert_int_equal(drf_statedir_open(p, true, why, sizeof(why)), -EPERM);
	assert_int_equal(mode_of(t, "s"), 01777);
}

static void test_foreign_owner_refused(void **state)
{
	struct tree *t = *state;
	char why[1024];

	mk(t, "u", 0755, 1000);
	assert_int_equal(check(t, "u", why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "uid 1000"));
	assert_non_null(strstr(why, "chown root:root"));
	/* An ancestor owned by someone else: the same. */
	mk(t, "u/state", 0755, 0);
	assert_int_equal(check(t, "u/state", why, sizeof(why)), -EPERM);
	/* And one not existing below it: still refused (its owner could make it). */
	assert_int_equal(check(t, "u/none", why, sizeof(why)), -EPERM);
}

static void test_ancestors(void **state)
{
	struct tree *t = *state;
	char why[1024], p[512];
	int fd;

	/* An other-writable ancestor that is not sticky: anyone could rename state away. */
	mk(t, "w", 0777, 0);
	mk(t, "w/state", 0755, 0);
	assert_int_equal(check(t, "w/state", why, sizeof(why)), -EPERM);
	/* Sticky (like /tmp) with a root-owned next component: fine. */
	path_of(t, "w", p, sizeof(p));
	assert_int_equal(chmod(p, 01777), 0);
	assert_int_equal(check(t, "w/state", why, sizeof(why)), 0);
	/* Sticky, but the next component is someone else's: refused. */
	mk(t, "w/theirs", 0755, 1000);
	mk(t, "w/theirs/state", 0755, 0);
	assert_int_equal(check(t, "w/theirs/state", why, sizeof(why)), -EPERM);
	/* Sticky with the next component missing: drfd creates it, root's and 0755. */
	path_of(t, "w/new/state", p, sizeof(p));
	assert_int_equal(check(t, "w/new/state", why, sizeof(why)), 0);
	fd = drf_statedir_open(p, true, why, sizeof(why));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mode_of(t, "w/new"), 0755);
	assert_int_equal(mode_of(t, "w/new/state"), 0755);
}

static void test_symlink_refused(void **state)
{
	struct tree *t = *state;
	char why[1024], p[512], target[512];

	mk(t, "real", 0755, 0);
	path_of(t, "real", target, sizeof(target));
	path_of(t, "link", p, sizeof(p));
	assert_int_equal(symlink(target, p), 0);
	assert_int_equal(check(t, "link", why, sizeof(why)), -ELOOP);
	assert_non_null(strstr(why, "symlink"));
	mk(t, "real/state", 0755, 0);
	assert_int_equal(check(t, "link/state", why, sizeof(why)), -ELOOP);
	path_of(t, "link/state", p, sizeof(p));
	assert_int_equal(drf_statedir_open(p, false, why, sizeof(why)), -ELOOP);
	/* A file where a directory should be. */
	path_of(t, "file", p, sizeof(p));
	assert_int_equal(t_write_file(p, "x"), 0);
	assert_int_equal(check(t, "file", why, sizeof(why)), -ENOTDIR);
}

static void test_open_creates_exact_modes(void **state)
{
	struct tree *t = *state;
	char why[1024], p[512];
	mode_t old = umask(077);
	int fd, sub;

	path_of(t, "x/y/state", p, sizeof(p));
	fd = drf_statedir_open(p, true, why, sizeof(why));
	umask(old);
	assert_true(fd >= 0);
	assert_int_equal(mode_of(t, "x"), 0755);
	assert_int_equal(mode_of(t, "x/y/state"), 0755);
	/* A private directory beneath: exactly 0711 whatever the umask; an older 0755 narrowed. */
	old = umask(077);
	sub = drf_at_dir(fd, "q.tasks", DRF_PRIVATE_DIR_MODE, true);
	umask(old);
	assert_true(sub >= 0);
	close(sub);
	assert_int_equal(mode_of(t, "x/y/state/q.tasks"), 0711);
	path_of(t, "x/y/state/q.tasks", p, sizeof(p));
	assert_int_equal(chmod(p, 0755), 0);
	sub = drf_at_dir(fd, "q.tasks", DRF_PRIVATE_DIR_MODE, false);
	assert_true(sub >= 0);
	close(sub);
	assert_int_equal(mode_of(t, "x/y/state/q.tasks"), 0711);
	/* Someone else's, or writable by others: refused. */
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(drf_at_dir(fd, "q.tasks", DRF_PRIVATE_DIR_MODE, false), -EPERM);
	assert_int_equal(chmod(p, 0711), 0);
	assert_int_equal(chown(p, 1000, 1000), 0);
	assert_int_equal(drf_at_dir(fd, "q.tasks", DRF_PRIVATE_DIR_MODE, false), -EPERM);
	/* A file replaced in it: exactly its mode too (the state file is read by any user). */
	old = umask(077);
	assert_int_equal(drf_replace_at(fd, "r.state", "s\n", 2, DRF_PUBLIC_FILE_MODE), 0);
	assert_int_equal(drf_replace_at(fd, "q.tasks.x", "s\n", 2, DRF_PRIVATE_FILE_MODE), 0);
	umask(old);
	assert_int_equal(mode_of(t, "x/y/state/r.state"), 0644);
	assert_int_equal(mode_of(t, "x/y/state/q.tasks.x"), 0600);
	close(fd);
}

static void test_beneath_helpers(void **state)
{
	struct tree *t = *state;
	char why[1024], p[512], outside[512], *text = NULL;
	struct stat st;
	int fd;

	mk(t, "s", 0755, 0);
	path_of(t, "s", p, sizeof(p));
	fd = drf_statedir_open(p, false, why, sizeof(why));
	assert_true(fd >= 0);
	/* Atomic replace: 0600 exactly, no temporary file left. */
	assert_int_equal(drf_replace_at(fd, "f", "one\n", 4, 0600), 0);
	assert_int_equal(mode_of(t, "s/f"), 0600);
	assert_int_equal(mode_of(t, "s/.f.tmp"), (mode_t)-1);
	assert_int_equal(drf_at_read(fd, "f", 100, true, &text), 4);
	assert_string_equal(text, "one\n");
	free(text);
	/* A symlink planted where a file goes is replaced, never written through. */
	path_of(t, "outside", outside, sizeof(outside));
	assert_int_equal(t_write_file(outside, "keep"), 0);
	path_of(t, "s/g", p, sizeof(p));
	assert_int_equal(symlink(outside, p), 0);
	assert_int_equal(drf_at_open(fd, "g", O_RDONLY, 0), -ELOOP);
	assert_true(drf_at_read(fd, "g", 100, false, &text) < 0);
	assert_int_equal(drf_replace_at(fd, "g", "two\n", 4, 0600), 0);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(drf_at_read(AT_FDCWD, outside, 100, false, &text), -EXDEV);
	text = NULL;
	{
		FILE *o = fopen(outside, "r");
		char b[16] = "";

		assert_non_null(o);
		assert_non_null(fgets(b, sizeof(b), o));
		fclose(o);
		assert_string_equal(b, "keep");
	}
	/* ".." never leaves the directory. */
	assert_true(drf_at_open(fd, "../outside", O_RDONLY, 0) < 0);
	/* A file of someone else's is not read as drfd's own; one left 0644 is narrowed. */
	path_of(t, "s/f", p, sizeof(p));
	assert_int_equal(chown(p, 1000, 1000), 0);
	assert_int_equal(drf_at_read(fd, "f", 100, true, &text), -EPERM);
	assert_int_equal(chown(p, 0, 0), 0);
	assert_int_equal(chmod(p, 0644), 0);
	assert_int_equal(drf_at_read(fd, "f", 100, true, &text), 4);
	free(text);
	assert_int_equal(mode_of(t, "s/f"), 0600);
	assert_int_equal(chmod(p, 0666), 0);
	assert_int_equal(drf_at_read(fd, "f", 100, true, &text), -EPERM);
	/* Removing a directory with its files, and a symlink as itself. */
	{
		int d = drf_at_dir(fd, "d", 0711, true);

		assert_true(d >= 0);
		close(d);
	}
	assert_int_equal(drf_replace_at(fd, "d/x", "x", 1, 0600), 0);
	assert_int_equal(drf_at_remove(fd, "d"), 0);
	assert_int_equal(mode_of(t, "s/d"), (mode_t)-1);
	assert_int_equal(drf_at_remove(fd, "g"), 0);
	assert_int_equal(mode_of(t, "s/g"), (mode_t)-1);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_safe_tree_passes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writable_state_dir_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_owner_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ancestors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_creates_exact_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_beneath_helpers, setup, teardown),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP test_statedir, its %zu tests: needs root (it chowns files)\n",
			sizeof(tests) / sizeof(*tests));
		return 0;
	}
	return cmocka_run_group_tests_name("statedir", tests, NULL, NULL);
}
