// SPDX-License-Identifier: MIT
/* JSON output of drfd and drfctl (see json.h). */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "text.h"

char *drf_format_double(double v, char *buf, size_t len)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return buf;
}

/*
 * Valid JSON that is safe on a terminal: every control character (C0, DEL,
 * C1) as \\uXXXX, and a byte that is not UTF-8 (a task's words may be any
 * bytes) as U+FFFD, the replacement character.
 */
void drf_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	while (*s) {
		unsigned int cp;
		size_t n = drf_utf8_next(s, &cp);

		if (n == 0) {
			fputs("\\ufffd", f);
			s++;
			continue;
		}
		if (cp == '"' || cp == '\\')
			fprintf(f, "\\%c", (char)cp);
		else if (drf_is_control(cp))
			fprintf(f, "\\u%04x", cp);
		else
			fwrite(s, 1, n, f);
		s += n;
	}
	fputc('"', f);
}

void drf_json_num(FILE *f, double v)
{
	char b[32];

	if (isfinite(v))
		fputs(drf_format_double(v, b, sizeof(b)), f);
	else
		fputs("null", f);
}
