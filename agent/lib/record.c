// SPDX-License-Identifier: MIT
/* A recording fake's line (see record.h). */
#include "record.h"

#include <stdarg.h>

void drf_record(FILE *out, size_t *changes, const char *fmt, ...)
{
	va_list ap;

	(*changes)++;
	if (!out)
		return;
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
}
