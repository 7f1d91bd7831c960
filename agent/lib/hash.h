/* SPDX-License-Identifier: MIT */
/*
 * FNV-1a, the one hash of drfd's: of names for the hash indexes (index.h), of
 * a tenant's name for its HTB class minor (htb.c), of the probes' object for
 * the pins' code check (probebpf.c). The 32-bit values are kept where they
 * outlive drfd (class minors across restarts, the code hash in a pinned map):
 * they must never change. Pure: no I/O.
 */
#ifndef DRF_HASH_H
#define DRF_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a of n bytes at p, and of the string s (without its NUL). */
uint64_t drf_hash_bytes(const void *p, size_t n);
uint64_t drf_hash_str(const char *s);

/* The same, 32 bits: for the values that are kept. */
uint32_t drf_hash32_bytes(const void *p, size_t n);
uint32_t drf_hash32_str(const char *s);

#endif
