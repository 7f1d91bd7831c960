// SPDX-License-Identifier: MIT
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/*
 * Locks DIR/NAME: the open, locked fd, or -EWOULDBLOCK with the holder's pid
 * (0 when it cannot be told), or -errno. The lock is the file's that the path
 * names once it is held: a file unlinked or replaced meanwhile (its lock of no
 * use to anyone) is opened again, a few times at most.
 */
static int lock_file(const char *dir, const char *name, pid_t *ret_pid)
{
	char path[512];
	int r;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	r = snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (r < 0 || (size_t)r >= sizeof(path))
		return -ENAMETOOLONG;
	for (int tries = 0; tries < 4; tries++) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		struct stat held, named;
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

		if (fd < 0)
			return -errno;
		if (fcntl(fd, F_SETLK, &fl) == 0) {
			if (fstat(fd, &held) == 0 && stat(path, &named) == 0 &&
			    held.st_dev == named.st_dev && held.st_ino == named.st_ino)
				return fd;
			close(fd); /* not the file the path names now: again */
			continue;
		}
		r = errno;
		if (r == EAGAIN || r == EACCES) {
			/* Held: by whom; if by nobody by now, it was let go: again. */
			fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET };
			if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type == F_UNLCK) {
				close(fd);
				continue;
			}
			*ret_pid = fl.l_type != F_UNLCK ? fl.l_pid : 0;
			r = EWOULDBLOCK;
		}
		close(fd);
		return -r;
	}
	*ret_pid = 0;
	return -EWOULDBLOCK;
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
