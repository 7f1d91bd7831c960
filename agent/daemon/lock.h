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

#endif
