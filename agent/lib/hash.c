// SPDX-License-Identifier: MIT
/* FNV-1a (see hash.h). */
#include "hash.h"

#include <string.h>

/* The offset bases (the hash of nothing) and the primes of FNV. */
#define BASIS64 0xcbf29ce484222325ULL
#define PRIME64 0x100000001b3ULL
#define BASIS32 2166136261u
#define PRIME32 16777619u

uint64_t drf_hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = BASIS64;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * PRIME64;
	return h;
}

uint64_t drf_hash_str(const char *s)
{
	return drf_hash_bytes(s, strlen(s));
}

uint32_t drf_hash32_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint32_t h = BASIS32;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * PRIME32;
	return h;
}

uint32_t drf_hash32_str(const char *s)
{
	return drf_hash32_bytes(s, strlen(s));
}
