// SPDX-License-Identifier: MIT
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static int lock_file(const char *dir, const char *name, pid_t *ret_pid)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char path[512];
	int fd, r;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	r = snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (r < 0 || (size_t)r >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (fcntl(fd, F_SETLK, &fl) == 0)
		return fd;
	r = errno;
	if (r == EAGAIN || r == EACCES) {
		/* Held: by whom (the lock may be gone by now: then 0). */
		fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET };
		*ret_pid = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? fl.l_pid : 0;
		r = EWOULDBLOCK;
	}
	close(fd);
	return -r;
}

int drf_lock_root(int rootfd, const char *dir, pid_t *ret_pid)
{
	struct stat st;
	char name[96];

	if (fstat(rootfd, &st) < 0)
		return -errno;
	snprintf(name, sizeof(name), "root-%u:%u-%llu.lock", major(st.st_dev), minor(st.st_dev),
		 (unsigned long long)st.st_ino);
	return lock_file(dir, name, ret_pid);
}

int drf_lock_device(const char *ifname, const char *dir, pid_t *ret_pid)
{
	struct stat ns;
	char name[96];

	if (stat("/proc/self/ns/net", &ns) < 0)
		ns.st_ino = 0;
	snprintf(name, sizeof(name), "net-%llu-%s.lock", (unsigned long long)ns.st_ino, ifname);
	return lock_file(dir, name, ret_pid);
}
