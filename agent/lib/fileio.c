// SPDX-License-Identifier: MIT
/* Files opened and replaced beneath a directory fd (see fileio.h). */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The mount an fd is on: "mnt_id:" of /proc/self/fdinfo (Linux 3.15); -1 if unknown. */
static long long mount_id(int fd)
{
	char path[64], line[128];
	long long id = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "mnt_id: %lld", &id) == 1)
			break;
	fclose(f);
	return id;
}

/*
 * Without openat2 (kernels before 5.6, and valgrind, which does not know the
 * call): the same rules by hand. Each component is opened on its own with
 * O_NOFOLLOW, so no symlink is followed anywhere on the path, and must be on
 * dirfd's mount, so no mount point is crossed (a bind mount of the same
 * filesystem keeps st_dev: the mount id tells). ".." and absolute paths never
 * get here: callers check their paths, and ".." is refused below too.
 */
static int open_beneath_walk(int dirfd, const char *path, int flags, mode_t mode)
{
	long long root = mount_id(dirfd);
	const char *p = path;
	int cur = dirfd, fd = -1;

	for (;;) {
		size_t n = strcspn(p, "/");
		char comp[NAME_MAX + 1];
		bool last = p[n] == '\0';

		if (n == 0 || n > NAME_MAX) {
			fd = -(n ? ENAMETOOLONG : EINVAL);
			break;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		/* Callers other than cgroupfs's own do not check their paths for "..". */
		if (strcmp(comp, "..") == 0) {
			fd = -EXDEV;
			break;
		}
		fd = openat(cur, comp,
			    last ? flags | O_CLOEXEC | O_NOFOLLOW
				 : O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW,
			    mode);
		if (fd < 0) {
			fd = -(errno == ELOOP ? ENOTDIR : errno);
			break;
		}
		if (mount_id(fd) != root) {
			close(fd);
			fd = -EXDEV;
			break;
		}
		if (cur != dirfd)
			close(cur);
		cur = -1;
		if (last)
			return fd;
		cur = fd;
		p += n + 1;
	}
	if (cur != dirfd && cur >= 0)
		close(cur);
	return fd;
}

/*
 * openat2() with RESOLVE_BENEATH refuses any path that would leave dirfd ("..",
 * absolute paths, symlinks out), and RESOLVE_NO_XDEV any that crosses a mount
 * point, such as a directory bind-mounted over a tenant's cgroup: the kernel
 * enforces "nothing outside the root's cgroup2 mount".
 */
int drf_open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   RESOLVE_NO_XDEV,
	};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	if (fd < 0 && errno == ENOSYS)
		return open_beneath_walk(dirfd, path, flags, how.mode);
	return fd < 0 ? -errno : (int)fd;
}

int drf_open_parent_beneath(int dirfd, const char *path, const char **ret_name)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	int fd;

	if (!slash) {
		fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		*ret_name = path;
		return fd;
	}
	if (!slash[1])
		return -EINVAL;
	if ((size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	fd = drf_open_beneath(dirfd, dir, O_RDONLY | O_DIRECTORY, 0);
	if (fd >= 0)
		*ret_name = slash + 1;
	return fd;
}

int drf_write_counted(int fd, const void *buf, size_t len, size_t *done)
{
	const char *p = buf;

	*done = 0;
	while (*done < len) {
		ssize_t w = write(fd, p + *done, len - *done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		*done += (size_t)w;
	}
	return 0;
}

int drf_write_all(int fd, const void *buf, size_t len)
{
	size_t done;

	return drf_write_counted(fd, buf, len, &done);
}

ssize_t drf_read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* drf_replace_at() in the directory pfd (a real fd) of name, one component. */
static int replace_in(int pfd, const char *name, const void *buf, size_t len, mode_t mode,
		      struct stat *ret_st)
{
	char tmp[NAME_MAX + 1];
	struct stat st;
	int fd, r;

	if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	/* A temporary file left by a crash (or planted): removed, never written through. */
	unlinkat(pfd, tmp, 0);
	fd = drf_open_beneath(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL, mode);
	if (fd < 0)
		return fd;
	/* Exactly mode: the umask narrowed it (a 0644 state file read by any user). */
	r = fchmod(fd, mode) < 0 ? -errno : 0;
	if (r == 0)
		r = drf_write_all(fd, buf, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && ret_st && fstat(fd, &st) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(pfd, tmp, pfd, name) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(pfd, tmp, 0);
		return r;
	}
	if (fsync(pfd) < 0)
		return -errno;
	if (ret_st)
		*ret_st = st;
	return 0;
}

int drf_replace_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode)
{
	const char *name;
	int pfd = drf_open_parent_beneath(dirfd, path, &name), r;

	if (pfd < 0)
		return pfd;
	r = replace_in(pfd, name, buf, len, mode, NULL);
	close(pfd);
	return r;
}

int drf_replace(const char *path, const void *buf, size_t len, mode_t mode, struct stat *ret_st)
{
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	char dir[PATH_MAX];
	int pfd, r;

	if (!name[0])
		return -EINVAL;
	if (slash && (size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	pfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	r = replace_in(pfd, name, buf, len, mode, ret_st);
	close(pfd);
	return r;
}

int drf_path_prefixes(const char *path, int (*fn)(void *ctx, const char *prefix), void *ctx)
{
	char p[PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		int r;

		/* The end of a component: not of "/" itself, nor of an empty one. */
		if ((p[i] != '/' && p[i] != '\0') || p[i - 1] == '/')
			continue;
		p[i] = '\0';
		r = fn(ctx, p);
		if (r < 0)
			return r;
		p[i] = path[i];
	}
	return 0;
}

struct mkdir_p {
	int dirfd;
	mode_t mode;
};

static int mkdir_one(void *ctx, const char *prefix)
{
	const struct mkdir_p *m = ctx;

	return mkdirat(m->dirfd, prefix, m->mode) < 0 && errno != EEXIST ? -errno : 0;
}

int drf_mkdir_p_at(int dirfd, const char *path, mode_t mode)
{
	struct mkdir_p m = { .dirfd = dirfd, .mode = mode };

	return drf_path_prefixes(path, mkdir_one, &m);
}
