// SPDX-License-Identifier: MIT
/* Pinning in bpffs (see pins.h). */
#include "pins.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vec.h"

int drf_pin_path(char *buf, size_t len, const char *dir, const char *name)
{
	return (size_t)snprintf(buf, len, "%s/%s", dir, name) < len ? 0 : -ENAMETOOLONG;
}

bool drf_pin_fits(const struct bpf_map *m, const char *path)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(path);
	bool fits;

	if (fd < 0)
		return true; /* nothing there: created and pinned at load */
	fits = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.type == bpf_map__type(m) &&
	       info.key_size == bpf_map__key_size(m) && info.value_size == bpf_map__value_size(m) &&
	       info.max_entries == bpf_map__max_entries(m) && info.map_flags == bpf_map__map_flags(m);
	close(fd);
	return fits;
}

int drf_pin_clear(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int r = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		char path[512];

		if (de->d_name[0] == '.' || drf_pin_path(path, sizeof(path), dir, de->d_name) < 0)
			continue;
		if (unlink(path) < 0 && r == 0)
			r = -errno;
	}
	closedir(d);
	if (rmdir(dir) < 0 && r == 0 && errno != ENOENT)
		r = -errno;
	return r;
}

int drf_map_keys(int fd, uint64_t **ret, size_t *ret_n)
{
	uint64_t *v = NULL, key, *prev = NULL;
	size_t n = 0, cap = 0;

	while (bpf_map_get_next_key(fd, prev, &key) == 0) {
		if (DRF_VEC_GROW(v, &cap, n + 1) < 0) {
			free(v);
			return -ENOMEM;
		}
		v[n++] = key;
		prev = &v[n - 1];
	}
	if (errno != ENOENT) {
		int r = -errno;

		free(v);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int drf_pin_paths(const char *root, const char *mount, uint32_t *ret_level, char *pin_dir,
		  size_t len)
{
	size_t m = strlen(mount), n = 0;
	const char *rel;

	if (strcmp(mount, "/") == 0)
		m = 0;
	if (strncmp(root, mount, m) != 0)
		return -EINVAL;
	rel = root + m;
	/* The level: the components of the root below the hierarchy's root. */
	*ret_level = 0;
	for (const char *p = rel; *p; p++)
		if (*p == '/' && p[1] && p[1] != '/')
			(*ret_level)++;
	/*
	 * One directory of bpffs per root, named as the state file is: '/' as
	 * '-'; and '.' as %2e, since bpffs refuses names with a dot (EPERM: the
	 * kernel keeps them for its own files).
	 */
	n = (size_t)snprintf(pin_dir, len, "%s/", DRF_BPFFS "/drfd");
	for (const char *p = root + 1; *p && n + 4 < len; p++) {
		if (*p == '/')
			pin_dir[n++] = '-';
		else if (*p == '-' || *p == '%' || *p == '.')
			n += (size_t)snprintf(pin_dir + n, len - n, "%%%02x", (unsigned char)*p);
		else
			pin_dir[n++] = *p;
	}
	if (n + 4 >= len)
		return -ENAMETOOLONG;
	pin_dir[n] = '\0';
	return 0;
}
