/* SPDX-License-Identifier: MIT */
/*
 * Files under a directory fd, as every access of drfd's to cgroupfs and to its
 * state dir is made: never following a symlink, never crossing a mount, never
 * leaving the directory.
 */
#ifndef DRF_FILEIO_H
#define DRF_FILEIO_H

#include <sys/types.h>

/*
 * Opens path (relative) beneath dirfd as every access here does: openat2() with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
 * or component by component with the same rules where the kernel has no openat2.
 * mode is for O_CREAT. The fd or -errno.
 */
int drf_open_beneath(int dirfd, const char *path, int flags, mode_t mode);

#endif
