// SPDX-License-Identifier: MIT
/* The hash index (see index.h). */
#include "index.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

#define INDEX_MIN 16

void drf_index_init(struct drf_index *ix, drf_index_key_fn key, const void *ctx)
{
	*ix = (struct drf_index){ .key = key, .ctx = ctx };
}

/* The slot of key in slot[cap]: where it is, or the empty one that ends its run. */
static size_t probe(const struct drf_index *ix, const size_t *slot, size_t cap, const void *key,
		    size_t len)
{
	size_t mask = cap - 1, h = (size_t)drf_hash_bytes(key, len) & mask;

	while (slot[h]) {
		size_t klen;
		const void *k = ix->key(ix->ctx, slot[h] - 1, &klen);

		if (klen == len && memcmp(k, key, len) == 0)
			break;
		h = (h + 1) & mask;
	}
	return h;
}

/* The first free slot of element i's run in slot[cap] (keys not compared). */
static size_t free_slot(const struct drf_index *ix, const size_t *slot, size_t cap, size_t i)
{
	size_t len, mask = cap - 1;
	const void *k = ix->key(ix->ctx, i, &len);
	size_t h = (size_t)drf_hash_bytes(k, len) & mask;

	while (slot[h])
		h = (h + 1) & mask;
	return h;
}

/* A table for n elements, at most half full: its capacity, or 0 when too many. */
static size_t cap_for(size_t n)
{
	size_t cap = INDEX_MIN;

	while (cap / 2 <= n) {
		if (cap > SIZE_MAX / sizeof(size_t) / 2)
			return 0;
		cap *= 2;
	}
	return cap;
}

/*
 * A new table of cap slots holding what ix holds (keep) or elements 0 .. n-1;
 * the old one freed. 0 or -ENOMEM, ix as it was.
 */
static int retable(struct drf_index *ix, size_t cap, bool keep, size_t n)
{
	size_t *slot;

	if (!cap)
		return -ENOMEM;
	slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	if (keep) {
		/* What is indexed need not be 0 .. n-1 (drf_index_add() of any i). */
		for (size_t s = 0; s < ix->cap; s++)
			if (ix->slot[s])
				slot[free_slot(ix, slot, cap, ix->slot[s] - 1)] = ix->slot[s];
	} else {
		for (size_t i = 0; i < n; i++)
			slot[free_slot(ix, slot, cap, i)] = i + 1;
		ix->n = n;
	}
	free(ix->slot);
	ix->slot = slot;
	ix->cap = cap;
	return 0;
}

int drf_index_build(struct drf_index *ix, size_t n)
{
	return retable(ix, cap_for(n), false, n);
}

int drf_index_add(struct drf_index *ix, size_t i, size_t *ret_dup)
{
	size_t len;
	const void *k = ix->key(ix->ctx, i, &len);
	ssize_t dup = drf_index_find(ix, k, len);
	int r;

	if (dup >= 0) {
		if (ret_dup)
			*ret_dup = (size_t)dup;
		return -EEXIST;
	}
	if (2 * (ix->n + 1) >= ix->cap) {
		r = retable(ix, cap_for(ix->n + 1), true, 0);
		if (r < 0)
			return r;
	}
	ix->slot[free_slot(ix, ix->slot, ix->cap, i)] = i + 1;
	ix->n++;
	return 0;
}

ssize_t drf_index_find(const struct drf_index *ix, const void *key, size_t len)
{
	size_t h;

	if (!ix->cap)
		return -1;
	h = probe(ix, ix->slot, ix->cap, key, len);
	return ix->slot[h] ? (ssize_t)(ix->slot[h] - 1) : -1;
}

ssize_t drf_index_find_str(const struct drf_index *ix, const char *key)
{
	return drf_index_find(ix, key, strlen(key));
}

void drf_index_free(struct drf_index *ix)
{
	free(ix->slot);
	ix->slot = NULL;
	ix->cap = 0;
	ix->n = 0;
}
