// SPDX-License-Identifier: MIT
#include "log.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text.h"

void drf_log(const struct drf_logger *l, int prio, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	if (!l || !l->fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	l->fn(l->ctx, prio, msg);
}

void drf_log_lines(const struct drf_logger *l, int prio, const char *prefix, const char *text)
{
	do {
		size_t n = strcspn(text, "\n");

		if (n > INT_MAX)
			n = INT_MAX;
		drf_log(l, prio, "%s%.*s", prefix, (int)n, text);
		text += n;
	} while (*text && *++text);
}

static const char *label(int prio)
{
	switch (prio) {
	case LOG_EMERG:
	case LOG_ALERT:
	case LOG_CRIT:
	case LOG_ERR:
		return "error: ";
	case LOG_WARNING:
		return "warning: ";
	default:
		return "";
	}
}

static void to_stderr(void *ctx, int prio, const char *raw)
{
	const struct drf_stderr_sink *s = ctx;
	char msg[4 * 2048 + 1];

	if (prio > s->max_prio)
		return;
	drf_escape_controls(raw, msg, sizeof(msg));
	if (s->journal)
		fprintf(stderr, "<%d>%s%s\n", prio, label(prio), msg);
	else
		fprintf(stderr, "drfd: %s%s\n", label(prio), msg);
}

struct drf_logger drf_log_stderr(struct drf_stderr_sink *sink, int max_prio)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	sink->max_prio = max_prio;
	/* JOURNAL_STREAM is "DEV:INO" of the stream journald handed us. */
	sink->journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
			fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
			(unsigned long long)st.st_ino == ino;
	return (struct drf_logger){ .fn = to_stderr, .ctx = sink };
}
