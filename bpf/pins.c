// SPDX-License-Identifier: MIT
/* Pinning in bpffs (see pins.h). */
#include "pins.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int drf_pin_path(char *buf, size_t len, const char *dir, const char *name)
{
	return (size_t)snprintf(buf, len, "%s/%s", dir, name) < len ? 0 : -ENAMETOOLONG;
}

int drf_pin_mkdir(const char *dir)
{
	char p[512];
	size_t n = strlen(dir);

	if (n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return -errno;
		p[i] = i < n ? '/' : '\0';
	}
	return 0;
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
