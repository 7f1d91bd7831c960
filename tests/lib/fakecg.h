/* SPDX-License-Identifier: MIT */
/*
 * A fake cgroup tree in a mkdtemp() directory, for tests and benchmarks: an ops
 * table over the real one that behaves like the kernel where drfd depends on it.
 * mkdir creates the interface files, cgroup.subtree_control applies "+x -y",
 * memory limits round down to 4K pages, io.max shows riops/wiops, and rmdir
 * removes the interface files with the directory (a file held open then reads
 * -ENODEV, as on cgroupfs).
 */
#ifndef DRF_FAKECG_H
#define DRF_FAKECG_H

#include <stddef.h>

#include "cgroupfs.h"

#define FAKECG_PAGE 4096UL

/* The fake's ops; valid after fakecg_setup(). */
extern struct cgfs_ops fakecg_ops;

/*
 * Where tests make their temporary trees: /dev/shm (a tmpfs) where there is
 * one, else /tmp. They make and remove thousands of small files, which on a
 * disk's journal cost seconds a run (test_reload_mem: 77 s against 10 s).
 */
const char *fakecg_tmpdir(void);

/*
 * Makes a fresh temporary directory (dir, in fakecg_tmpdir()) holding an empty
 * cgroup "drf.slice" (root, the agent's root). Returns 0 or -errno.
 */
int fakecg_setup(char *dir, size_t dirlen, char *root, size_t rootlen);
/* Removes the temporary directory and everything in it. */
int fakecg_teardown(const char *dir);

/*
 * Removes the cgroup at path as someone else would (rmdir(2)): its files go
 * with it, and a file of it that drfd holds open reads -ENODEV.
 */
int fakecg_remove(int dirfd, const char *path);

/* Writes a file as the kernel would show it, bypassing the fake's rules. */
int fakecg_put(int dirfd, const char *path, const char *val);

#endif
