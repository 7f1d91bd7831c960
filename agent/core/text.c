// SPDX-License-Identifier: MIT
#include "text.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * The length of the UTF-8 character at p (2 to 4), or 0 when it is not one
 * (overlong, a surrogate, past U+10FFFF, cut short) or is a C1 control.
 */
static size_t utf8_len(const unsigned char *p)
{
	unsigned int c = p[0], cp;
	size_t n;

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
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
		return 0;
	return n;
}

static char *escape(const char *in, char *out, size_t len, bool keep_newline)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t o = 0;

	if (len == 0)
		return out;
	while (*p) {
		size_t n = (*p >= 0x20 && *p < 0x7f) || (keep_newline && *p == '\n') ? 1
			   : *p >= 0x80 ? utf8_len(p) : 0;

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
