/* SPDX-License-Identifier: MIT */
/*
 * Fault injection, one rule for every recording fake (the cgroupfs, tc, BPF
 * and probe recorders embed a struct drf_fault): a test sets err, and the
 * operations it names fail with it, on the id or path it names. Pure: no I/O.
 */
#ifndef DRF_FAULT_H
#define DRF_FAULT_H

#include <stddef.h>
#include <stdint.h>

struct drf_fault {
	int err;          /* the errno injected failures return; 0: none (the fault cleared) */
	unsigned ops;     /* the operations that fail, as the recorder's bits; 0: all */
	uint64_t id;      /* only on this id (a key, a class id) if not 0 */
	const char *path; /* only on paths ending in this, if not NULL */
	size_t hits;      /* failures injected, so that a test can tell its fault was reached */
};

/*
 * Whether the operation op (one bit) on id (0: none) or path (NULL: none)
 * fails by f: -f->err, counted in f->hits; else 0. An id or path the fault
 * names matches only an operation on that id or path.
 */
int drf_fault_inject(struct drf_fault *f, unsigned op, uint64_t id, const char *path);

#endif
