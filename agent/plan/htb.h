/* SPDX-License-Identifier: MIT */
/*
 * The HTB tree that enforces an allocation's egress shares on net-device, and
 * the ingress policer's parameters: a pure function of the config, the
 * allocation, the link and each tenant's class minor. No I/O.
 *
 *   d7f:      root qdisc, htb, default class d7f:ffff
 *    '- d7f:1       the link: rate = ceil = link
 *        |- d7f:2   the tenants: rate = net-rate, ceil = link
 *        |   '- d7f:M   one per tenant: rate = its allocation; ceil = its declared
 *        |              demand or the link (share: borrowing idle bandwidth is the
 *        |              token bucket's work conservation), = rate (limit)
 *        '- d7f:ffff    traffic of no tenant: rate = what the link has beyond
 *                       net-rate, at least a floor; ceil = the link
 *
 * Each tenant class gets fq_codel as its leaf qdisc. Where the device reports
 * no link speed (veth, most virtual devices), net-rate is taken as the link.
 * burst and cburst cover DRF_HTB_TIMER_S of traffic at the rate (libnl's
 * default is about one MTU, far too small at high rates), at least a few
 * packets; quantum is proportional to the rate, so that borrowed bandwidth is
 * shared in the ratio of the rates, and set explicitly within the kernel's
 * bounds, so it prints no quantum warnings.
 */
#ifndef DRF_HTB_H
#define DRF_HTB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "config.h"

/* tc handles: major:minor in one 32-bit word, as the kernel has them. */
#define DRF_TC_HANDLE(maj, min) ((((uint32_t)(maj)) << 16) | ((uint32_t)(min) & 0xffff))
#define DRF_TC_MAJ(h) ((uint32_t)(h) >> 16)
#define DRF_TC_MIN(h) ((uint32_t)(h) & 0xffff)
#define DRF_TC_ROOT 0xffffffffu

/* An HTB class: what drfd sets, and what the kernel counts. Rates in bytes/s. */
struct drf_tc_class {
	uint32_t classid, parent;
	uint64_t rate, ceil;
	uint32_t burst, cburst; /* bytes */
	uint32_t quantum;       /* bytes */
	/* counters, when read back */
	uint64_t bytes, packets, drops, overlimits;
};

#define DRF_HTB_MAJOR 0xd7f
#define DRF_HTB_LINK_MIN 0x1
#define DRF_HTB_TENANTS_MIN 0x2
#define DRF_HTB_DEFAULT_MIN 0xffff
/* Tenant classes: minors in [FIRST, LAST]. */
#define DRF_HTB_FIRST_TENANT 0x10
#define DRF_HTB_LAST_TENANT 0xfffe
#define DRF_HTB_MAX_TENANTS (DRF_HTB_LAST_TENANT - DRF_HTB_FIRST_TENANT + 1)

/*
 * The scheduling latency the bursts cover: 10 ms, a few timer ticks at any HZ
 * (Debian's is 250); a class whose dequeue comes late still sends at its rate.
 */
#define DRF_HTB_TIMER_S 0.01
/* The kernel's bounds on a computed quantum (sch_htb.c); drfd stays within them. */
#define DRF_HTB_QUANTUM_MAX 200000u
/* The default class's floor: traffic of no tenant is never starved. */
#define DRF_HTB_DEFAULT_FLOOR_BPS 125000u /* 1 mbit/s */
/* The least rate of a tenant class (HTB wants a positive one): 8 kbit/s. */
#define DRF_HTB_MIN_RATE_BPS 1000u

/* The ingress policer of one tenant: bytes/s and bytes; rate 0: not policed. */
struct drf_policer {
	uint64_t rate, burst;
};

/* The ingress policer's burst: DRF_POLICER_BURST_S of traffic, at least two GRO packets. */
#define DRF_POLICER_BURST_S 0.25
#define DRF_POLICER_MIN_BURST (4 * 65536)

/* What the mapping needs of a tenant: its allocations and declared demands, bits/s. */
struct drf_htb_tenant {
	double eg_alloc, in_alloc;
	bool eg_needed, in_needed; /* its demand's shape has some of it */
	double eg_declared, in_declared; /* INFINITY: declared none (or 0) */
};

/* ... and of the plan: the mode and the capacities, bits/s (0: takes no part). */
struct drf_htb_plan {
	bool limit;
	double eg_cap, in_cap;
};

/* The inputs of tenant i of a loaded plan. */
void drf_htb_inputs(const struct drf_config *c, const struct drf_problem *p,
		    const struct drf_result *res, size_t i, struct drf_htb_tenant *ret);

/*
 * CoDel's target for a class's fq_codel: 5 ms, or 1.5 times what a 64 KiB GSO
 * packet takes at the class's rate where that is longer. At low rates CoDel
 * would otherwise see every GSO packet as a standing queue and mark or drop
 * until TCP leaves the class underused. The interval: 100 ms, at least 4 x
 * the target. Both in microseconds; rate in bytes/s.
 */
void drf_htb_codel(uint64_t rate, uint32_t *ret_target_us, uint32_t *ret_interval_us);

/*
 * A CoDel time of us microseconds as the kernel reports it back: fq_codel keeps
 * its times in units of 1024 ns (CODEL_SHIFT), rounded down, so 5000 us reads
 * back as 4999 us.
 */
uint32_t drf_htb_codel_read_back(uint32_t us);

/* The minor of a tenant's class from its name: where the search for a free one starts. */
uint16_t drf_htb_minor_hint(const char *name);

/*
 * The classes d7f:1, d7f:2 and d7f:ffff (ret has 3 entries). link is the
 * device's speed in bits/s (0: unknown), mtu its MTU.
 */
void drf_htb_base(const struct drf_htb_plan *p, uint64_t link, uint32_t mtu,
		  struct drf_tc_class *ret);

/*
 * Tenant i's class, with minor minor; max_eg is the largest egress allocation
 * of all the tenants (quanta are proportional to the rates).
 */
struct drf_tc_class drf_htb_tenant_class(const struct drf_htb_plan *p, const struct drf_htb_tenant *t,
					 uint16_t minor, double max_eg, uint64_t link, uint32_t mtu);

/* Tenant i's ingress policer; rate 0 where it is not policed. */
struct drf_policer drf_htb_policer(const struct drf_htb_plan *p, const struct drf_htb_tenant *t,
				   uint32_t mtu);

#endif
