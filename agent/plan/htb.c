// SPDX-License-Identifier: MIT
#include "htb.h"

#include <math.h>
#include <string.h>

#include "hash.h"
#include "knobs.h"

/* A frame on the wire beyond the MTU: the Ethernet header. */
#define FRAME_OVERHEAD 14

/* The 32-bit hash: minors are kept across restarts, so its values never change (test_lib). */
uint16_t drf_htb_minor_hint(const char *name)
{
	return (uint16_t)(DRF_HTB_FIRST_TENANT + drf_hash32_str(name) % DRF_HTB_MAX_TENANTS);
}

static uint64_t bytes_of_bits(double bits)
{
	if (!isfinite(bits) || bits <= 0)
		return 0;
	return (uint64_t)llround(bits / 8);
}

/* burst of a token bucket at rate (bytes/s): s seconds of it, at least 4 frames. */
static uint32_t burst_for(uint64_t rate, double s, uint32_t mtu)
{
	double b = (double)rate * s, least = 4.0 * (mtu + FRAME_OVERHEAD);

	if (b < least)
		b = least;
	return b > 0x7fffffff ? 0x7fffffffu : (uint32_t)llround(b);
}

/* quantum proportional to rate, the largest rate at the kernel's bound, at least a frame. */
static uint32_t quantum_for(uint64_t rate, uint64_t max_rate, uint32_t mtu)
{
	double q = max_rate ? (double)rate / (double)max_rate * DRF_HTB_QUANTUM_MAX : 0;
	uint32_t least = mtu + FRAME_OVERHEAD;

	if (q < least)
		return least;
	return q > DRF_HTB_QUANTUM_MAX ? DRF_HTB_QUANTUM_MAX : (uint32_t)llround(q);
}

static struct drf_tc_class class_of(uint32_t minor, uint32_t parent_minor, uint64_t rate,
				    uint64_t ceil, uint64_t max_rate, uint32_t mtu)
{
	if (ceil < rate)
		ceil = rate;
	return (struct drf_tc_class){
		.classid = DRF_TC_HANDLE(DRF_HTB_MAJOR, minor),
		.parent = parent_minor ? DRF_TC_HANDLE(DRF_HTB_MAJOR, parent_minor)
				       : DRF_TC_HANDLE(DRF_HTB_MAJOR, 0),
		.rate = rate,
		.ceil = ceil,
		.burst = burst_for(rate, DRF_HTB_TIMER_S, mtu),
		.cburst = burst_for(ceil, DRF_HTB_TIMER_S, mtu),
		.quantum = quantum_for(rate, max_rate, mtu),
	};
}

void drf_htb_codel(uint64_t rate, uint32_t *ret_target_us, uint32_t *ret_interval_us)
{
	double t = rate ? 1.5 * 65536.0 / (double)rate * 1e6 : 5000;

	if (t < 5000)
		t = 5000;
	if (t > 1e6)
		t = 1e6;
	*ret_target_us = (uint32_t)llround(t);
	*ret_interval_us = (uint32_t)(4 * t > 100000 ? llround(4 * t) : 100000);
}

uint32_t drf_htb_codel_read_back(uint32_t us)
{
	uint64_t units = (uint64_t)us * 1000 >> 10;

	return (uint32_t)((units << 10) / 1000);
}

void drf_htb_inputs(const struct drf_config *c, const struct drf_problem *p,
		    const struct drf_result *res, size_t i, struct drf_htb_tenant *ret)
{
	*ret = (struct drf_htb_tenant){
		.eg_alloc = res->shares[i].alloc[DRF_RES_NET],
		.in_alloc = res->shares[i].alloc[DRF_RES_NET_IN],
		.eg_needed = p->demands[i].shape[DRF_RES_NET] > 0,
		.in_needed = p->demands[i].shape[DRF_RES_NET_IN] > 0,
		.eg_declared = drf_knobs_declared(c, i, DRF_RES_NET),
		.in_declared = drf_knobs_declared(c, i, DRF_RES_NET_IN),
	};
}

/* The link in bytes/s: its speed, or net-rate where it says none or less. */
static uint64_t link_bytes(const struct drf_htb_plan *p, uint64_t link)
{
	uint64_t net = bytes_of_bits(p->eg_cap), l = link ? bytes_of_bits((double)link) : net;

	return l < net ? net : l;
}

void drf_htb_base(const struct drf_htb_plan *p, uint64_t link, uint32_t mtu,
		  struct drf_tc_class *ret)
{
	uint64_t net = bytes_of_bits(p->eg_cap), l = link_bytes(p, link), rest = l - net;

	if (rest < DRF_HTB_DEFAULT_FLOOR_BPS)
		rest = DRF_HTB_DEFAULT_FLOOR_BPS;
	ret[0] = class_of(DRF_HTB_LINK_MIN, 0, l, l, l, mtu);
	ret[1] = class_of(DRF_HTB_TENANTS_MIN, DRF_HTB_LINK_MIN, net, l, l, mtu);
	ret[2] = class_of(DRF_HTB_DEFAULT_MIN, DRF_HTB_LINK_MIN, rest, l, l, mtu);
}

struct drf_tc_class drf_htb_tenant_class(const struct drf_htb_plan *p, const struct drf_htb_tenant *t,
					 uint16_t minor, double max_eg, uint64_t link, uint32_t mtu)
{
	uint64_t l = link_bytes(p, link), rate = bytes_of_bits(t->eg_alloc), ceil;

	if (rate < DRF_HTB_MIN_RATE_BPS)
		rate = DRF_HTB_MIN_RATE_BPS;
	if (p->limit && t->eg_needed)
		ceil = rate;
	else if (!p->limit && isfinite(t->eg_declared))
		ceil = bytes_of_bits(t->eg_declared);
	else
		ceil = l; /* borrow up to the link; a zero demand is no cap */
	if (ceil > l)
		ceil = l;
	return class_of(minor, DRF_HTB_TENANTS_MIN, rate, ceil, bytes_of_bits(max_eg), mtu);
}

struct drf_policer drf_htb_policer(const struct drf_htb_plan *p, const struct drf_htb_tenant *t,
				   uint32_t mtu)
{
	uint64_t rate = 0;

	/*
	 * A policer cannot lend what a tenant leaves idle, so share mode polices
	 * only at the declared demand; limit mode at the allocation. Either way a
	 * tenant that needs none of it is not policed.
	 */
	if (p->limit && t->in_needed)
		rate = bytes_of_bits(t->in_alloc);
	else if (!p->limit && isfinite(t->in_declared))
		rate = bytes_of_bits(t->in_declared);
	if (rate && rate < DRF_HTB_MIN_RATE_BPS)
		rate = DRF_HTB_MIN_RATE_BPS;
	/*
	 * At least two of the largest packets the receive path can hand over:
	 * GRO merges a flow's segments into skbs of up to 64 KiB, and a bucket
	 * smaller than one would drop each of them.
	 */
	uint64_t burst = rate ? burst_for(rate, DRF_POLICER_BURST_S, mtu) : 0;

	if (rate && burst < DRF_POLICER_MIN_BURST)
		burst = DRF_POLICER_MIN_BURST;
	return (struct drf_policer){ .rate = rate, .burst = burst };
}
