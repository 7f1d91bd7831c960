/* SPDX-License-Identifier: MIT */
/*
 * The one way drfd logs: a logger handed to whoever logs (the daemon's modules
 * keep the one main() made; tests hand in one that records). A line is
 * formatted here and given to the logger's sink with its syslog priority.
 *
 * The sink of the daemon is stderr: one line per event, prefixed with its
 * priority ("<4>") when stderr is connected to journald (JOURNAL_STREAM names
 * it), so that journalctl -p works; plain "drfd: warning: ..." otherwise.
 * Lines above its level are dropped, control characters in a line are escaped
 * (a name from a config or a request may hold an ESC), and writes that fail (a
 * closed pipe) are ignored: the log must never stop the daemon.
 */
#ifndef DRF_LOG_H
#define DRF_LOG_H

#include <stdbool.h>
#include <syslog.h>

struct drf_logger {
	void (*fn)(void *ctx, int prio, const char *msg);
	void *ctx;
};

/* Formats one line and hands it to l; a NULL l (or sink) drops it. */
void drf_log(const struct drf_logger *l, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * text (a config's errors, a line each) as one record a line, each after
 * prefix: a journal's record is one line, and a line that ran on with "\n"
 * escaped reads as one long error.
 */
void drf_log_lines(const struct drf_logger *l, int prio, const char *prefix, const char *text);

/* The stderr sink's state: where its lines go and up to which priority. */
struct drf_stderr_sink {
	bool journal;
	int max_prio;
};

/*
 * A logger on stderr at priorities up to max_prio; the format (journald's or
 * plain) is decided once, from the environment and stderr. sink is the
 * logger's state and must outlive it.
 */
struct drf_logger drf_log_stderr(struct drf_stderr_sink *sink, int max_prio);

#endif
