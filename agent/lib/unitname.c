// SPDX-License-Identifier: MIT
/* systemd unit names for tenants (see unitname.h). */
#include "unitname.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static bool passes(unsigned char c, bool first)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c == ':' || c == '_' || (c == '.' && !first);
}

int drf_unit_escape(const char *s, size_t n, char *out, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (passes(c, i == 0)) {
			if (o + 1 >= len)
				return -ENAMETOOLONG;
			out[o++] = (char)c;
			continue;
		}
		if (o + 4 >= len)
			return -ENAMETOOLONG;
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 15];
	}
	if (o >= len)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return (int)o;
}

int drf_slice_path(const char *path, char *out, size_t len)
{
	/* The slice's name without ".slice": "drf-a-b", grown one part a level. */
	char name[DRF_UNIT_NAME_MAX + 1] = "drf";
	size_t nlen = 3, o = 0;
	const char *p = path;

	if (!*p)
		return -EINVAL;
	for (;;) {
		size_t part = strcspn(p, "/");
		int e;

		if (part == 0)
			return -EINVAL;
		if (nlen + 1 >= sizeof(name))
			return -ENAMETOOLONG;
		name[nlen++] = '-';
		e = drf_unit_escape(p, part, name + nlen, sizeof(name) - nlen);
		if (e < 0)
			return e;
		nlen += (size_t)e;
		if (nlen + strlen(".slice") > DRF_UNIT_NAME_MAX)
			return -ENAMETOOLONG;
		/* "/" between levels, the level's name, ".slice", and the NUL. */
		if (o + (o ? 1 : 0) + nlen + strlen(".slice") + 1 > len)
			return -ENAMETOOLONG;
		if (o)
			out[o++] = '/';
		memcpy(out + o, name, nlen);
		o += nlen;
		memcpy(out + o, ".slice", strlen(".slice") + 1);
		o += strlen(".slice");
		p += part;
		if (!*p)
			return (int)o;
		p++;
		if (!*p)
			return -EINVAL;
	}
}
