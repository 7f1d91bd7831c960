/* SPDX-License-Identifier: MIT */
/*
 * drfd's state dir (config key state-dir, /var/lib/drfd by default) and every
 * access under it. drfd keeps there what it trusts after a restart: the
 * cgroups it manages, and the task queue with each task's credentials. So the
 * state dir must be drfd's alone:
 *
 * - every existing component of its path is a directory (not a symlink) owned
 *   by root or drfd's euid and not writable by group or others, except a
 *   sticky directory (like /tmp) whose next component is root's: the rule of
 *   OpenSSH's safe_path(). drfd refuses to start when the path breaks it.
 * - what drfd creates there is root's, with exactly the mode it means whatever
 *   its umask (systemd's UMask=0077 would narrow them): directories 0755 (the
 *   state dir) or 0711 (the task queue: a submitter reaches its own output by
 *   path, nobody lists others'); the state file and the usage history 0644 (read
 *   by `drfctl status` and `drfctl recommend` as any user); task files 0600.
 * - everything under it is opened relative to a state-dir fd with openat2
 *   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS (drf_open_beneath()): a symlink or
 *   ".." planted inside is never followed.
 *
 * Functions return an fd or 0, or -errno: -EPERM for a path that breaks the
 * rule, -ELOOP for a symlink, -ENOTDIR for a non-directory.
 */
#ifndef DRF_STATEDIR_H
#define DRF_STATEDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "fileio.h"

/*
 * The modes drfd gives what it creates, whatever its umask (systemd's is 0077):
 * drf_at_dir() and drf_replace_at() (fileio.h) set them with fchmod, as histfile.c does.
 */
#define DRF_STATEDIR_MODE 0755
#define DRF_PRIVATE_DIR_MODE 0711
#define DRF_PRIVATE_FILE_MODE 0600
/* The state file and the usage history: tenant names and usage, no commands. */
#define DRF_PUBLIC_FILE_MODE 0644

/*
 * The path of a file of drfd's for cgroup-root `root` in state_dir:
 * STATE_DIR/ROOT-ESCAPED and suffix (".state", ".history", ...), the root
 * without its leading '/' and with '/' as '-', '-' and '%' as %2d and %25, so
 * that two roots never share a name. 0 or -ENAMETOOLONG.
 */
int drf_statedir_path(const char *state_dir, const char *root, const char *suffix, char *ret,
		      size_t len);

/*
 * Checks path by the rule above without creating or changing anything: 0 when
 * it holds, also when path (or its tail) does not exist yet (drfd creates it,
 * root's); else -errno with why (the path, what is wrong, the fix) in why.
 */
int drf_statedir_check(const char *path, char *why, size_t len);

/*
 * Opens the state dir path, checking each component on the fd it opened (so
 * nothing can be swapped between the check and the use), and creating the
 * missing ones (0755) if create. An O_DIRECTORY fd, or -errno with why.
 */
int drf_statedir_open(const char *path, bool create, char *why, size_t len);

/*
 * For a file right under the state dir, given by its full path: opens its
 * directory as drf_statedir_open() does and points *ret_name at its name.
 */
int drf_statedir_open_parent(const char *path, bool create, const char **ret_name, char *why,
			     size_t len);

/* Under a directory fd dfd, following no symlink, crossing no mount, never leaving dfd: */

/* open(2) of path; mode for O_CREAT. */
int drf_at_open(int dfd, const char *path, int flags, mode_t mode);

/*
 * A directory of drfd's own at path: created with mode if missing (and if
 * create), else checked (drf_at_owned) and narrowed to mode if it had more.
 * Its O_DIRECTORY fd, or -errno.
 */
int drf_at_dir(int dfd, const char *path, mode_t mode, bool create);

/*
 * 0 if fd is a directory (dir) or regular file owned by drfd's euid and not
 * writable by group or others; -EPERM (someone else's, or writable), -ENOTDIR
 * or -EINVAL (wrong type).
 */
int drf_at_owned(int fd, bool dir);

/* Removes path: a file, or a directory with the files in it (one level). */
int drf_at_remove(int dfd, const char *path);

/*
 * The whole file path (at most max bytes), NUL-terminated, in *ret (free()); a
 * regular file only (a FIFO must not block drfd). With owned, only one that
 * drf_at_owned() accepts (else -EPERM), and one an older drfd left readable by
 * others is narrowed to 0600. Its length, or -errno.
 */
ssize_t drf_at_read(int dfd, const char *path, size_t max, bool owned, char **ret);

#endif
