// SPDX-License-Identifier: MIT
#include "lock.h"

#include <errno.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <fcntl.h>
#include <unistd.h>

/* /proc/locks: "1: FLOCK  ADVISORY  WRITE 1234 00:1b:5678 0 EOF" (dev in hex). */
static pid_t lock_holder(int fd)
{
	struct stat st;
	char line[256];
	pid_t pid = 0;
	FILE *f;

	if (fstat(fd, &st) < 0)
		return 0;
	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		unsigned long long ino;
		char type[16];
		int p;

		/* Blocked waiters are listed with "->" and are not holders. */
		if (sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%llu", type, &p, &maj, &min, &ino) != 5)
			continue;
		if (maj == major(st.st_dev) && min == minor(st.st_dev) &&
		    ino == (unsigned long long)st.st_ino) {
			pid = p;
			break;
		}
	}
	fclose(f);
	return pid;
}

int drf_lock_root(int rootfd, pid_t *ret_pid)
{
	if (flock(rootfd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno != EWOULDBLOCK)
		return -errno;
	*ret_pid = lock_holder(rootfd);
	return -EWOULDBLOCK;
}

int drf_lock_device(const char *ifname, pid_t *ret_pid)
{
	char path[256];
	struct stat ns;
	int fd, r;

	if (stat("/proc/self/ns/net", &ns) < 0)
		ns.st_ino = 0;
	mkdir("/run/drfd", 0755);
	snprintf(path, sizeof(path), "/run/drfd/net-%llu-%s.lock", (unsigned long long)ns.st_ino,
		 ifname);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	r = drf_lock_root(fd, ret_pid);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}
