// SPDX-License-Identifier: MIT
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text.h"

static bool journal;
static int max_level = LOG_INFO;

void drf_log_init(int max_prio)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	max_level = max_prio;
	/* JOURNAL_STREAM is "DEV:INO" of the stream journald handed us. */
	journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
		  (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
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

/* Control characters escaped: a name from a config or a request may hold an ESC. */
static void emit(int prio, const char *raw)
{
	char msg[4 * 2048 + 1];

	if (prio > max_level)
		return;
	drf_escape_controls(raw, msg, sizeof(msg));
	if (journal)
		fprintf(stderr, "<%d>%s%s\n", prio, label(prio), msg);
	else
		fprintf(stderr, "drfd: %s%s\n", label(prio), msg);
}

void drf_log(int prio, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	emit(prio, msg);
}

static void from_reconciler(void *ctx, int prio, const char *msg)
{
	(void)ctx;
	emit(prio, msg);
}

const struct drf_logger drf_log_reconciler = { .fn = from_reconciler, .ctx = NULL };
