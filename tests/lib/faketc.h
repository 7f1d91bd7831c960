/* SPDX-License-Identifier: MIT */
/*
 * A fake kernel for the tc ops (agent/net/tc.h), in memory, for tests: one
 * device (veth0, ifindex 7, MTU 1500, a link speed of the test's choosing),
 * its qdiscs and the classes of its HTB qdisc. It behaves like the kernel (and
 * libnl) where drfd depends on it:
 *
 *   - the device starts with the kernel's default root qdisc (handle 0:,
 *     kind "noqueue"), which an added root qdisc replaces as if it were not
 *     there; any other root qdisc needs replace, else -EEXIST; replacing a
 *     root qdisc of another handle or kind destroys it with its classes and
 *     leaf qdiscs, replacing htb by htb of the same handle only changes it;
 *   - deleting the root qdisc removes its classes and leaves and puts the
 *     default root qdisc back; deleting a leaf qdisc leaves the class;
 *   - a class's parent must exist (the HTB qdisc maj:0, which makes a root
 *     class that reads back with parent DRF_TC_ROOT, or one of its classes),
 *     else -ENOENT (the kernel would quietly make a root class); a class
 *     with children cannot be deleted (-EBUSY); deleting a class deletes its
 *     leaf qdisc; giving a leaf class a child destroys the leaf's qdisc;
 *     changing an existing class keeps its parent; a zero rate or ceil is
 *     -EINVAL;
 *   - a leaf qdisc (fq_codel, with CoDel's target and interval) is added as
 *     tc_nl.c adds it, NLM_F_CREATE | NLM_F_REPLACE with handle 0: under a
 *     class with no leaf it is created with a handle of the kernel's choosing
 *     (8001:, 8002:, ...); a class's fq_codel is changed in place (same
 *     handle, new parameters); a leaf of another kind is replaced (new
 *     handle). The class must exist (-ENOENT) and be a leaf (-EINVAL); with
 *     no_fq_codel the kind does not exist: -ENOENT;
 *   - classes read back as libnl gives them: burst and cburst through
 *     microseconds and the kernel's 64 ns ticks and back, truncated at each
 *     step as libnl does (so a burst may read back a few bytes short); the
 *     quantum of the inner classes maj:1 and maj:2 reads back as 200000
 *     whatever was set (as the kernel showed in drfd's VM tests); counters
 *     are what the test put there (faketc_count).
 *
 * Every call on another device (ifname, ifindex) fails with -ENODEV.
 */
#ifndef DRF_FAKETC_H
#define DRF_FAKETC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tc.h"

#define FAKETC_IFNAME "veth0"
#define FAKETC_IFINDEX 7
#define FAKETC_MTU 1500
/* Qdiscs, and classes, the fake holds at most; more: -ENOSPC. */
#define FAKETC_MAX 512
/* What classes maj:1 and maj:2 read back as their quantum. */
#define FAKETC_INNER_QUANTUM 200000u

struct faketc {
	char ifname[16];
	int ifindex;
	uint32_t mtu;
	uint64_t speed;          /* bits/s, as the link reports it; 0: none */
	bool no_fq_codel;        /* the kernel has no sch_fq_codel */
	char default_kind[DRF_TC_KIND_LEN]; /* the default root qdisc's kind */
	struct drf_tc_qdisc q[FAKETC_MAX];
	/* CoDel's parameters of q[i], if it is an fq_codel: microseconds */
	uint32_t target_us[FAKETC_MAX], interval_us[FAKETC_MAX];
	size_t nq;
	uint32_t htb_defcls;     /* the root htb's default class (a minor) */
	/* As the kernel holds them: the values set; parent DRF_TC_ROOT for a root class. */
	struct drf_tc_class c[FAKETC_MAX];
	size_t nc;
	uint32_t next_auto;      /* the major of the next handle the kernel picks */
	/* Calls per operation, failed ones included. */
	struct {
		unsigned link, qdiscs, add_htb, add_leaf, del_qdisc, classes, set_class, del_class;
	} calls;
};

extern const struct drf_tc_ops faketc_ops;

/* veth0 with its default root qdisc only; speed in bits/s (0: the link says none). */
void faketc_init(struct faketc *k, uint64_t speed);

/* The class classid as the kernel holds it (not as read back), or NULL. */
struct drf_tc_class *faketc_class(struct faketc *k, uint32_t classid);
size_t faketc_nclasses(const struct faketc *k);
/* The root qdisc (there is always one). */
const struct drf_tc_qdisc *faketc_root(const struct faketc *k);
/* The qdisc whose parent is the class classid, or NULL. */
const struct drf_tc_qdisc *faketc_leaf(const struct faketc *k, uint32_t classid);
/* CoDel's target and interval of the class's fq_codel: 0, or -ENOENT if it has none. */
int faketc_codel(const struct faketc *k, uint32_t classid, uint32_t *ret_target_us,
		 uint32_t *ret_interval_us);
size_t faketc_nqdiscs(const struct faketc *k);

/* Someone else's root qdisc in place of whatever was there, with none of its classes. */
void faketc_set_root(struct faketc *k, uint32_t handle, const char *kind);
/* Someone else's leaf qdisc of another kind in place of the class's leaf; 0 or -ENOENT. */
int faketc_set_leaf(struct faketc *k, uint32_t classid, const char *kind);

/* Traffic through a class: its counters grow. 0, or -ENOENT. */
int faketc_count(struct faketc *k, uint32_t classid, uint64_t bytes, uint64_t packets);

/* What a burst of bytes at rate (bytes/s) reads back as, through libnl and the kernel. */
uint32_t faketc_burst_readback(uint32_t bytes, uint64_t rate);

#endif
