/* SPDX-License-Identifier: MIT */
/* What the loaders share: pinning in bpffs, and reading their maps. 0 or -errno. */
#ifndef DRF_PINS_H
#define DRF_PINS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_map;

/* dir/name into buf. */
int drf_pin_path(char *buf, size_t len, const char *dir, const char *name);
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

/*
 * Every key of the map fd (uint64_t keys, a tenant's cgroup id), in *ret
 * (malloc'ed), how many in *ret_n.
 */
int drf_map_keys(int fd, uint64_t **ret, size_t *ret_n);

/* Where bpffs is mounted, and drfd pins its network programs below it. */
#define DRF_BPFFS "/sys/fs/bpf"

/*
 * For the network programs: the level of root (on the cgroup2 mount `mount`)
 * in its hierarchy, and the bpffs directory they are pinned in for that root.
 */
int drf_pin_paths(const char *root, const char *mount, uint32_t *ret_level, char *pin_dir,
		  size_t len);

#endif
