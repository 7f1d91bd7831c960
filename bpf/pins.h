/* SPDX-License-Identifier: MIT */
/* What the loaders share about pinning in bpffs. 0 or -errno. */
#ifndef DRF_PINS_H
#define DRF_PINS_H

#include <stdbool.h>
#include <stddef.h>

struct bpf_map;

/* dir/name into buf. */
int drf_pin_path(char *buf, size_t len, const char *dir, const char *name);
/* mkdir -p on bpffs. */
int drf_pin_mkdir(const char *dir);
/*
 * Whether the map pinned at path has m's layout (type, key and value sizes,
 * entries, flags); true if nothing is pinned there.
 */
bool drf_pin_fits(const struct bpf_map *m, const char *path);
/*
 * Unpins everything in dir and removes it: a pinned link with no fd left is
 * destroyed, and detached, when unpinned. 0 if dir does not exist.
 */
int drf_pin_clear(const char *dir);

#endif
