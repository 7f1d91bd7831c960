/* SPDX-License-Identifier: MIT */
/*
 * One drfd per cgroup-root, and one per network device: an exclusive POSIX
 * record lock (fcntl(2) F_SETLK) on a file in drfd's run directory, held for
 * the daemon's life and dropped by the kernel when it dies, however it dies.
 *
 * A record lock, not flock(2): a record lock belongs to the process, so the
 * children drfd forks or clones (a task's supervisor, cloned straight into
 * the tenant's cgroup) do not hold it. A flock belongs to the open file, which
 * every child shares until it closes its fds; a child waiting for CPU in a
 * throttled cgroup held the root's lock past drfd's exit, and the next drfd
 * was refused. F_GETLK names the holder, without /proc/locks.
 *
 * Caveat of record locks: closing any fd of the lock file drops the lock.
 * Only these functions open them, once each.
 */
#ifndef DRF_LOCK_H
#define DRF_LOCK_H

#include <sys/types.h>

/* Where the lock files live (the unit's RuntimeDirectory=). */
#define DRF_LOCK_DIR "/run/drfd"

/*
 * Locks the cgroup-root open at rootfd, through the file
 * DIR/root-MAJ:MIN-INO.lock named by the root's device and inode. Returns the
 * open, locked fd (hold it for the lock's life), or -EWOULDBLOCK with
 * *ret_pid the holder's pid (0 if unknown), or another -errno.
 */
int drf_lock_root(int rootfd, const char *dir, pid_t *ret_pid);

/*
 * The network device's lock: two drfds with different roots would delete each
 * other's classes. The file is DIR/net-NETNS-IFNAME.lock. Returns as
 * drf_lock_root().
 */
int drf_lock_device(const char *ifname, const char *dir, pid_t *ret_pid);

#endif
