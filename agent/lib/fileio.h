/* SPDX-License-Identifier: MIT */
/*
 * Files under a directory fd, as every access of drfd's to cgroupfs and to its
 * state dir is made: never following a symlink, never crossing a mount, never
 * leaving the directory. And the file primitives every module uses: whole
 * reads and writes, the atomic replace, mkdir -p.
 */
#ifndef DRF_FILEIO_H
#define DRF_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

struct stat;

/*
 * Opens path (relative) beneath dirfd as every access here does: openat2() with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
 * or component by component with the same rules where the kernel has no openat2.
 * mode is for O_CREAT. The fd or -errno.
 */
int drf_open_beneath(int dirfd, const char *path, int flags, mode_t mode);

/*
 * The directory of path beneath dirfd, opened as drf_open_beneath() does (a
 * real O_DIRECTORY fd, for the *at() calls that have no RESOLVE_BENEATH, and
 * fsync), with the last component of path in *ret_name; a path of one
 * component gives a new fd of dirfd itself. The fd, or -errno (-EINVAL for a
 * path that ends in '/').
 */
int drf_open_parent_beneath(int dirfd, const char *path, const char **ret_name);

/* Writes all len bytes of buf to fd (retrying short writes and EINTR): 0 or -errno. */
int drf_write_all(int fd, const void *buf, size_t len);
/* drf_write_all(), and *done the bytes written (all of them on 0; fewer on an error). */
int drf_write_counted(int fd, const void *buf, size_t len, size_t *done);

/*
 * Reads fd into buf until len bytes or the end of the file (retrying short
 * reads and EINTR): how many bytes, or -errno. buf is not NUL-terminated.
 */
ssize_t drf_read_full(int fd, void *buf, size_t len);

/*
 * Replaces path beneath dirfd with len bytes of buf atomically: a temporary
 * file beside it (".NAME.tmp", one a crash left removed first; created with
 * exactly mode, whatever the umask), written whole, fsync'ed, renamed over
 * path, and the directory fsync'ed so that the rename survives a crash. On a
 * failure before the rename the temporary file is removed and path is as it
 * was; a failure of the directory's fsync is reported with path replaced. The
 * temporary name is fixed: one writer of a path at a time (drfd's lock).
 */
int drf_replace_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode);

/*
 * The same for a path of the filesystem (absolute, or relative to the working
 * directory), such as a file in a directory an administrator named: its
 * directory is opened as open(2) resolves it (symlinks followed), the file
 * itself as drf_replace_at() does. ret_st (if not NULL, set on success only):
 * the file written, as fstat(2) had it before the rename, to tell later
 * whether it is still drfd's.
 */
int drf_replace(const char *path, const void *buf, size_t len, mode_t mode, struct stat *ret_st);

/*
 * Calls fn(ctx, prefix) for each leading part of path that ends at a '/' or
 * at its end, shortest first: "a", "a/b", "a/b/c" for "a/b/c", "/a", "/a/b"
 * for "/a/b" (empty components and "/" itself are passed over). Stops at the
 * first fn that returns less than 0, with its value. 0, or -ENAMETOOLONG for a
 * path of PATH_MAX bytes or more.
 */
int drf_path_prefixes(const char *path, int (*fn)(void *ctx, const char *prefix), void *ctx);

/*
 * mkdir -p: creates path (relative to dirfd, or absolute) and each missing
 * directory above it, with mode (less the umask), as mkdirat(2) resolves paths.
 * Those that exist are left as they are. 0 or -errno.
 */
int drf_mkdir_p_at(int dirfd, const char *path, mode_t mode);

#endif
