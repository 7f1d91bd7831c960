// SPDX-License-Identifier: MIT
/* The status socket's words (see proto.h). */
#include "proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *drf_proto_escape(const char *s)
{
	size_t n = 0;
	char *out, *o;

	for (const char *p = s; *p; p++)
		n += ((unsigned char)*p <= ' ' || *p == '%' || *p == 0x7f) ? 3 : 1;
	out = malloc(n + 3);
	if (!out)
		return NULL;
	o = out;
	if (!*s) {
		/* The empty word: "%" alone would be a bad escape, so "%00"-free "%-". */
		strcpy(out, "%-");
		return out;
	}
	for (const char *p = s; *p; p++) {
		unsigned char ch = (unsigned char)*p;

		if (ch <= ' ' || ch == '%' || ch == 0x7f)
			o += sprintf(o, "%%%02X", ch);
		else
			*o++ = (char)ch;
	}
	*o = '\0';
	return out;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

int drf_proto_unescape(char *s)
{
	char *o = s;

	if (strcmp(s, "%-") == 0) {
		*s = '\0';
		return 0;
	}
	for (char *p = s; *p; p++) {
		int hi, lo;

		if (*p != '%') {
			*o++ = *p;
			continue;
		}
		hi = hexval(p[1]);
		lo = hi < 0 ? -1 : hexval(p[2]);
		if (lo < 0 || (hi == 0 && lo == 0))
			return -EINVAL;
		*o++ = (char)(hi * 16 + lo);
		p += 2;
	}
	*o = '\0';
	return 0;
}

bool drf_proto_key_valid(const char *key)
{
	size_t n = strlen(key);

	if (n == 0 || n > DRF_TASK_KEY_MAX)
		return false;
	for (const char *p = key; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return false;
	return true;
}

int drf_proto_root_socket(const char *status_socket, char *buf, size_t len)
{
	size_t n = strlen(status_socket);
	int w;

	if (n > 5 && strcmp(status_socket + n - 5, ".sock") == 0)
		w = snprintf(buf, len, "%.*s-root.sock", (int)(n - 5), status_socket);
	else
		w = snprintf(buf, len, "%s-root", status_socket);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}
