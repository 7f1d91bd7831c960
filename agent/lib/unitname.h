/* SPDX-License-Identifier: MIT */
/*
 * systemd unit names for drfd's tenants: tenant path a/b is the slice
 * drf-a.slice, and below it drf-a-b.slice (a slice's name spells its
 * ancestry, '-' separating the levels), each part escaped as systemd-escape
 * does. Pure: no I/O.
 */
#ifndef DRF_UNITNAME_H
#define DRF_UNITNAME_H

#include <stddef.h>

/* The slice that holds every tenant's slice. */
#define DRF_SLICE_ROOT "drf.slice"
/* systemd's longest unit name (UNIT_NAME_MAX - 1). */
#define DRF_UNIT_NAME_MAX 255

/*
 * Escapes s as systemd-escape does for a unit name part: ASCII letters,
 * digits, ':', '_' and '.' (but a leading '.') pass; every other byte is
 * written \xHH; '/' too (a path is not a part). Returns the length written,
 * or -ENAMETOOLONG if out (len bytes, NUL included) is too small.
 */
int drf_unit_escape(const char *s, size_t n, char *out, size_t len);

/*
 * The cgroup path, relative to drf.slice's cgroup, of the slice of tenant
 * path `path` ("a/b" -> "drf-a.slice/drf-a-b.slice"). Returns its length, or
 * -ENAMETOOLONG when out is too small or a slice's name would be longer than
 * systemd allows, -EINVAL for an empty path or part.
 */
int drf_slice_path(const char *path, char *out, size_t len);

#endif
