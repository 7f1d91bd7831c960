// SPDX-License-Identifier: MIT
#include "text.h"

#include <stdio.h>
#include <string.h>

size_t drf_utf8_next(const char *s, unsigned int *ret_cp)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned int c = p[0], cp;
	size_t n;

	if (c < 0x80) {
		*ret_cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong, a surrogate, past U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*ret_cp = cp;
	return n;
}

bool drf_is_control(unsigned int cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

static char *escape(const char *in, char *out, size_t len, bool keep_newline)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t o = 0;

	if (len == 0)
		return out;
	while (*p) {
		unsigned int cp;
		size_t n = drf_utf8_next((const char *)p, &cp);

		if (n && drf_is_control(cp) && !(keep_newline && cp == '\n'))
			n = 0;

		if (n == 0) {
			if (o + 4 >= len)
				break;
			snprintf(out + o, len - o, "\\x%02x", *p);
			o += 4;
			p++;
			continue;
		}
		if (o + n >= len)
			break;
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	out[o] = '\0';
	return out;
}

char *drf_escape_controls(const char *in, char *out, size_t len)
{
	return escape(in, out, len, false);
}

char *drf_escape_text(const char *in, char *out, size_t len)
{
	return escape(in, out, len, true);
}
