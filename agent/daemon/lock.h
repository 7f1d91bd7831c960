/* SPDX-License-Identifier: MIT */
/*
 * One drfd per cgroup-root: an exclusive flock(2) on the root's directory fd,
 * held for the daemon's life and dropped by the kernel when it dies, however
 * it dies. Whoever holds it is found in /proc/locks, so that the refusal can
 * name the pid.
 */
#ifndef DRF_LOCK_H
#define DRF_LOCK_H

#include <sys/types.h>

/*
 * Takes the lock without waiting. Returns 0, or -EWOULDBLOCK with *ret_pid the
 * holder's pid (0 if it cannot be found), or another -errno.
 */
int drf_lock_root(int rootfd, pid_t *ret_pid);

/*
 * One drfd per network device as well: two with different roots would delete
 * each other's classes. The lock is a file under /run/drfd named by the
 * network namespace and the device. Returns the open, locked fd (held for the
 * caller's life), or -EWOULDBLOCK with *ret_pid the holder's, or -errno.
 */
int drf_lock_device(const char *ifname, pid_t *ret_pid);

#endif
