// SPDX-License-Identifier: MIT
#include "fakecg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fakecg_put(int dirfd, const char *path, const char *val)
{
	int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -EIO;
}

static const char *const cg_files[][2] = {
	{ "cgroup.type", "domain\n" },       { "cgroup.procs", "" },
	{ "cgroup.events", "populated 0\n" }, { "cgroup.subtree_control", "\n" },
	{ "cgroup.controllers", "cpu io memory pids\n" },
	{ "cpu.weight", "100\n" },           { "cpu.max", "max 100000\n" },
	{ "memory.low", "0\n" },             { "memory.high", "max\n" },
	{ "memory.max", "max\n" },           { "memory.current", "0\n" },
	{ "memory.swap.max", "max\n" },
	{ "io.max", "" },                    { "cpu.stat", "usage_usec 0\n" },
	{ "io.weight", "default 100\n" },    { "io.bfq.weight", "default 100\n" },
	{ "io.stat", "" },
	{ "memory.stat", "anon 0\nfile 0\nkernel 0\nshmem 0\ninactive_file 0\n" },
	{ "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n" },
	{ "cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
			  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" },
	{ "memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
			     "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" },
	{ "io.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
			 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" },
};

static int fake_mkdir(void *ctx, int dirfd, const char *path)
{
	char p[4096];
	int r = cgfs_real_ops.mkdir(ctx, dirfd, path);

	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(cg_files) / sizeof(cg_files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", path, cg_files[i][0]);
		fakecg_put(dirfd, p, cg_files[i][1]);
	}
	return 0;
}

static int subtree_write(int dirfd, const char *path, const char *val)
{
	char cur[512], out[512] = "";
	unsigned have = 0;
	ssize_t n = cgfs_real_ops.read(NULL, dirfd, path, cur, sizeof(cur));
	const char *p = val;

	if (n < 0)
		return (int)n;
	have = cgfs_parse_ctrls(cur);
	while (*p) {
		char name[16];
		int len = 0;
		char op = *p++;

		while (*p && *p != ' ' && len < 15)
			name[len++] = *p++;
		name[len] = '\0';
		while (*p == ' ')
			p++;
		if (op == '+')
			have |= cgfs_parse_ctrls(name);
		else if (op == '-')
			have &= ~cgfs_parse_ctrls(name);
		else
			return -EINVAL;
	}
	for (int i = 0; i < CGFS_NCTRL; i++)
		if (have & (1u << i))
			snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s",
				 out[0] ? " " : "", cgfs_ctrl_name(1u << i));
	strcat(out, "\n");
	return fakecg_put(dirfd, path, out);
}

/*
 * io.weight and io.bfq.weight: "default N" sets the first line, "MAJ:MIN N" a
 * device's own line, "MAJ:MIN default" removes it (blk-iocost, bfq-cgroup).
 */
static int weight_write(int dirfd, const char *path, const char *val)
{
	char cur[1024], out[1024] = "", dev[32];
	ssize_t n = cgfs_real_ops.read(NULL, dirfd, path, cur, sizeof(cur));
	const char *sp = strchr(val, ' ');

	if (n < 0)
		return (int)n;
	if (strncmp(val, "default ", 8) == 0) {
		snprintf(out, sizeof(out), "%s\n", val);
		for (const char *l = strchr(cur, '\n'); l && l[1]; l = strchr(l + 1, '\n'))
			snprintf(out + strlen(out), sizeof(out) - strlen(out), "%.*s\n",
				 (int)strcspn(l + 1, "\n"), l + 1);
		return fakecg_put(dirfd, path, out);
	}
	if (!sp || (size_t)(sp - val) >= sizeof(dev) - 1)
		return -EINVAL;
	snprintf(dev, sizeof(dev), "%.*s ", (int)(sp - val), val);
	for (const char *l = cur; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t len = strcspn(l, "\n");

		if (strncmp(l, dev, strlen(dev)) != 0)
			snprintf(out + strlen(out), sizeof(out) - strlen(out), "%.*s\n", (int)len, l);
	}
	if (strcmp(sp + 1, "default") != 0)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s\n", val);
	return fakecg_put(dirfd, path, out);
}

static int fake_write(void *ctx, int dirfd, const char *path, const char *val)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char out[512];
	int fd;

	(void)ctx;
	/* Like cgroupfs: only existing interface files can be written. */
	fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	close(fd);
	if (strcmp(base, "cgroup.subtree_control") == 0)
		return subtree_write(dirfd, path, val);
	if (strncmp(base, "memory.", 7) == 0 && strcmp(val, "max") != 0) {
		/* the kernel keeps memory limits in pages */
		snprintf(out, sizeof(out), "%llu\n",
			 strtoull(val, NULL, 10) / FAKECG_PAGE * FAKECG_PAGE);
		return fakecg_put(dirfd, path, out);
	}
	if (strcmp(base, "io.weight") == 0 || strcmp(base, "io.bfq.weight") == 0)
		return weight_write(dirfd, path, val);
	if (strcmp(base, "io.max") == 0 && !strstr(val, "riops=")) {
		snprintf(out, sizeof(out), "%s riops=max wiops=max\n", val);
		return fakecg_put(dirfd, path, out);
	}
	snprintf(out, sizeof(out), "%s\n", val);
	return fakecg_put(dirfd, path, out);
}

/* cgroupfs removes a cgroup's interface files with it; a plain directory does not. */
/* Whether the cgroup at path has child cgroups (subdirectories). */
static bool has_children(int dirfd, const char *path)
{
	int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (fd < 0)
		return false;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	while (!found && (de = readdir(d)))
		found = de->d_type == DT_DIR && strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return found;
}

/*
 * What a removed cgroup's files hold in the fake: a file still open reads it
 * (an unlinked file keeps its content) where the kernel fails with ENODEV.
 */
static const char removed_mark[] = "\x7f" "fakecg: removed\n";

/* Removes every file of the cgroup at path, as the kernel does with the cgroup. */
static void remove_files(int at, const char *path)
{
	int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (de->d_type == DT_REG) {
			fakecg_put(fd, de->d_name, removed_mark);
			unlinkat(fd, de->d_name, 0);
		}
	closedir(d);
}

static int fake_rmdir(void *ctx, int dirfd, const char *path)
{
	/* The kernel refuses to remove a cgroup with children, touching nothing. */
	if (has_children(dirfd, path))
		return -EBUSY;
	remove_files(dirfd, path);
	return cgfs_real_ops.rmdir(ctx, dirfd, path);
}

int fakecg_remove(int dirfd, const char *path)
{
	return fake_rmdir(NULL, dirfd, path);
}

static ssize_t fake_read(void *ctx, int dirfd, const char *path, char *buf, size_t len)
{
	return cgfs_real_ops.read(ctx, dirfd, path, buf, len);
}

static ssize_t fake_pread(void *ctx, int fd, const char *path, char *buf, size_t len)
{
	ssize_t n = cgfs_real_ops.pread(ctx, fd, path, buf, len);

	return n >= 0 && strcmp(buf, removed_mark) == 0 ? -ENODEV : n;
}

/* Held files and watches: the real calls, on the tmpfs files (inotify works there too). */
static int fake_open(void *ctx, int dirfd, const char *path)
{
	return cgfs_real_ops.open(ctx, dirfd, path);
}

static void fake_close(void *ctx, int fd)
{
	cgfs_real_ops.close(ctx, fd);
}

static int fake_watch_init(void *ctx)
{
	return cgfs_real_ops.watch_init(ctx);
}

static int fake_watch_add(void *ctx, int wfd, int dirfd, const char *path)
{
	return cgfs_real_ops.watch_add(ctx, wfd, dirfd, path);
}

static void fake_watch_rm(void *ctx, int wfd, int wd)
{
	cgfs_real_ops.watch_rm(ctx, wfd, wd);
}

static ssize_t fake_watch_read(void *ctx, int wfd, int *wds, size_t n)
{
	return cgfs_real_ops.watch_read(ctx, wfd, wds, n);
}

static int fake_id(void *ctx, int dirfd, const char *path, uint64_t *ret)
{
	return cgfs_real_ops.id(ctx, dirfd, path, ret);
}

static int fake_children(void *ctx, int dirfd, const char *path,
			 int (*fn)(void *data, const char *name), void *data)
{
	return cgfs_real_ops.children(ctx, dirfd, path, fn, data);
}

struct cgfs_ops fakecg_ops = {
	.name = "fake",
	.read = fake_read,
	.write = fake_write,
	.mkdir = fake_mkdir,
	.rmdir = fake_rmdir,
	.id = fake_id,
	.children = fake_children,
	.open = fake_open,
	.pread = fake_pread,
	.close = fake_close,
	.watch_init = fake_watch_init,
	.watch_add = fake_watch_add,
	.watch_rm = fake_watch_rm,
	.watch_read = fake_watch_read,
};

const char *fakecg_tmpdir(void)
{
	struct stat st;

	return stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
}

int fakecg_setup(char *dir, size_t dirlen, char *root, size_t rootlen)
{
	int fd, r;

	snprintf(dir, dirlen, "%s/drf-cgfs-XXXXXX", fakecg_tmpdir());
	if (!mkdtemp(dir) || !dir[0])
		return -errno;
	snprintf(root, rootlen, "%s/drf.slice", dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = fake_mkdir(NULL, fd, "drf.slice");
	close(fd);
	return r;
}

int fakecg_teardown(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -EIO;
}
