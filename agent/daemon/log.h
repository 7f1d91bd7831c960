/* SPDX-License-Identifier: MIT */
/*
 * drfd's log: one line per event on stderr, prefixed with its syslog priority
 * ("<4>") when stderr is connected to journald (JOURNAL_STREAM names it), so
 * that journalctl -p works; plain "drfd: warning: ..." otherwise. Lines above
 * the configured level are dropped. Writes that fail (a closed pipe) are
 * ignored: the log must never stop the daemon.
 */
#ifndef DRF_LOG_H
#define DRF_LOG_H

#include <syslog.h>

#include "reconcile.h"

/* Decides the format once, from the environment and stderr. */
void drf_log_init(int max_prio);
void drf_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The reconciler's logger writing here. */
extern const struct drf_logger drf_log_reconciler;

#endif
