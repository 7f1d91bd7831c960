/* SPDX-License-Identifier: MIT */
/*
 * Traffic control, as drfd uses it: one device's root qdisc, the classes of an
 * HTB qdisc, and a leaf qdisc under a class. Every call goes through an ops
 * table: the real one (libnl-route-3, tc_nl.c) or a recording one that prints
 * each change (dry run, tests), passes reads (and, if asked, changes) to inner
 * ops, and injects failures. Functions return 0 or a negative errno; nothing
 * here logs.
 */
#ifndef DRF_TC_H
#define DRF_TC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fault.h"
#include "htb.h"

#define DRF_TC_KIND_LEN 16

struct drf_tc_qdisc {
	uint32_t handle, parent; /* parent DRF_TC_ROOT for the root qdisc */
	char kind[DRF_TC_KIND_LEN];
	uint32_t target_us, interval_us; /* an fq_codel's CoDel parameters; 0 for others */
};

#define DRF_TC_MAX_RELATED 16

struct drf_tc_link {
	int ifindex;
	uint32_t mtu;
	uint64_t speed; /* bits/s; 0 if the device does not say */
	/*
	 * The devices a local socket's packets pass through on their way to or
	 * from this one (ifindex first): the bridge or bond it is a port of, and
	 * the devices on top of those (VLANs, macvlans): the one that holds the
	 * address is what a socket's packet names.
	 */
	int related[DRF_TC_MAX_RELATED];
	size_t n_related;
};

struct drf_tc_ops {
	const char *name;
	int (*link)(void *ctx, const char *ifname, struct drf_tc_link *ret);
	/* Every qdisc of the device; *ret is malloc'ed. */
	int (*qdiscs)(void *ctx, int ifindex, struct drf_tc_qdisc **ret, size_t *ret_n);
	/* The root qdisc htb handle:, default class handle:defcls (a minor); replace: in
	 * place of another. */
	int (*add_htb)(void *ctx, int ifindex, uint32_t handle, uint32_t defcls, bool replace);
	/*
	 * fq_codel under class parent, its handle chosen by the kernel, with
	 * CoDel's target and interval in microseconds.
	 */
	int (*add_leaf)(void *ctx, int ifindex, uint32_t parent, uint32_t target_us,
			uint32_t interval_us);
	int (*del_qdisc)(void *ctx, int ifindex, uint32_t parent, uint32_t handle);
	/* Every class of the qdisc with this handle; *ret is malloc'ed. */
	int (*classes)(void *ctx, int ifindex, uint32_t qdisc, struct drf_tc_class **ret,
		       size_t *ret_n);
	/* Creates the class, or changes it if it exists. */
	int (*set_class)(void *ctx, int ifindex, const struct drf_tc_class *c);
	int (*del_class)(void *ctx, int ifindex, uint32_t classid);
};

/* The real ops (tc_nl.h): libnl-route-3; ctx is a struct drf_tc_nl. */
extern const struct drf_tc_ops drf_tc_nl_ops;

/* Operations, as bits, for the recorder's fault injection. */
enum drf_tc_op {
	DRF_TC_OP_LINK = 1 << 0,
	DRF_TC_OP_QDISCS = 1 << 1,
	DRF_TC_OP_ADD_HTB = 1 << 2,
	DRF_TC_OP_ADD_LEAF = 1 << 3,
	DRF_TC_OP_DEL_QDISC = 1 << 4,
	DRF_TC_OP_CLASSES = 1 << 5,
	DRF_TC_OP_SET_CLASS = 1 << 6,
	DRF_TC_OP_DEL_CLASS = 1 << 7,
};

/*
 * Records every change as one line: "tc qdisc add dev IF root handle H: htb
 * default D", "tc class set dev IF classid C parent P rate R ceil C burst B
 * cburst B quantum Q" (rates in bytes/s), "tc qdisc add dev IF parent C
 * fq_codel target Tus interval Ius", "tc qdisc del ...", "tc class del ...". Reads go to inner (none:
 * nothing exists); changes too if pass_changes. Fault injection
 * (fault.h): the operations in fault.ops (0: all) fail with fault.err, on
 * class id fault.id only if it is not 0; fault.hits counts those injected.
 */
struct drf_tc_recorder {
	const struct drf_tc_ops *inner;
	void *inner_ctx;
	bool pass_changes;
	const char *ifname; /* printed as the device */
	FILE *out;          /* NULL: only counted */
	size_t changes;
	struct drf_fault fault; /* ops: DRF_TC_OP_* bits; id: a class id */
};

extern const struct drf_tc_ops drf_tc_recording_ops;

/* A qdisc handle or class id as tc(8) prints it: "d7f:" or "d7f:1a". */
char *drf_tc_handle_str(uint32_t h, bool qdisc, char *buf, size_t len);

#endif
