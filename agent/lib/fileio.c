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
