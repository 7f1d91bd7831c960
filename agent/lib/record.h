/* SPDX-License-Identifier: MIT */
/*
 * The recording fakes (the cgroupfs, tc, BPF and probe recorders: the dry
 * run's and the tests' view of what drfd changes) print each change as one
 * line; this is that line.
 */
#ifndef DRF_RECORD_H
#define DRF_RECORD_H

#include <stddef.h>
#include <stdio.h>

/* Counts a change in *changes and prints it to out (NULL: only counted), with a newline. */
void drf_record(FILE *out, size_t *changes, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
