/* SPDX-License-Identifier: MIT */
/*
 * A hash index over an array the caller keeps: key -> the element's position.
 * Open addressing with linear probing, the table at most half full, so that a
 * lookup is O(1) and indexing n elements O(n). The index holds positions only;
 * it reads a key through the caller's key function, so the array stays the
 * caller's (it may grow: give a ctx that reaches the array, not the array).
 * Keys are bytes (a string without its NUL, a slice of a path, a uint64_t).
 * Pure: no I/O.
 */
#ifndef DRF_INDEX_H
#define DRF_INDEX_H

#include <stddef.h>
#include <sys/types.h>

/* The key of element i, its length in *ret_len; ctx is the index's. */
typedef const void *(*drf_index_key_fn)(const void *ctx, size_t i, size_t *ret_len);

struct drf_index {
	size_t *slot;         /* 0: empty; else 1 + the element's position */
	size_t cap;           /* a power of two, more than twice n; 0: nothing allocated */
	size_t n;             /* elements indexed */
	drf_index_key_fn key;
	const void *ctx;
};

/* An empty index whose keys key() gives; nothing allocated (drf_index_free() is optional). */
void drf_index_init(struct drf_index *ix, drf_index_key_fn key, const void *ctx);

/*
 * Indexes elements 0 .. n-1 afresh, in place of what ix held. With equal keys,
 * drf_index_find() gives the first. 0, or -ENOMEM with ix as it was.
 */
int drf_index_build(struct drf_index *ix, size_t n);

/*
 * Adds element i, unless one with the same key is there: then -EEXIST and its
 * position in *ret_dup (if not NULL), i not added. 0, -EEXIST or -ENOMEM.
 */
int drf_index_add(struct drf_index *ix, size_t i, size_t *ret_dup);

/* The position of the element whose key is the len bytes at key; -1 if none. */
ssize_t drf_index_find(const struct drf_index *ix, const void *key, size_t len);

/* The same for a string key (without its NUL). */
ssize_t drf_index_find_str(const struct drf_index *ix, const char *key);

/* Frees the table; ix is then empty (still with its key function). */
void drf_index_free(struct drf_index *ix);

#endif
