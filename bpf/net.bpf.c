// SPDX-License-Identifier: MIT
/*
 * drfd's network programs, attached once at cgroup-root (BPF_F_ALLOW_MULTI)
 * and finding a packet's tenant from its socket's cgroup ancestry, so that
 * tenants added, removed or moved only change map entries:
 *
 * - egress (cgroup_skb/egress): sets skb->priority to the tenant's HTB class,
 *   which sch_htb takes as the class before any filter (htb_classify()), and
 *   counts bytes and packets;
 * - ingress (cgroup_skb/ingress): counts, and polices with a token bucket
 *   per tenant: above its rate, ECN-capable packets are marked (CE) once half
 *   the burst is gone, and what does not fit in the bucket is dropped. The
 *   packet has crossed the link by then: the policer makes senders slow down,
 *   it cannot stop them.
 *
 * Traffic of no tenant is neither classified nor counted: it goes to HTB's
 * default class.
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

#include "net.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* The level of cgroup-root in the cgroup2 hierarchy (0: the hierarchy's root). */
const volatile __u32 drf_root_level = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DRF_NET_MAX_TENANTS);
	__type(key, __u64);
	__type(value, struct drf_net_tenant);
} drf_net_tenants SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, DRF_NET_MAX_TENANTS);
	__type(key, __u64);
	__type(value, struct drf_net_counters);
} drf_net_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DRF_NET_MAX_TENANTS);
	__type(key, __u64);
	__type(value, struct drf_net_bucket);
} drf_net_buckets SEC(".maps");

/* The program's own (not pinned): drfd fills it before the program is linked. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DRF_NET_MAX_DEVS);
	__type(key, __u32);
	__type(value, __u32);
} devs SEC(".maps");

/*
 * The tenant whose cgroup is an ancestor of the packet's socket's, for a packet
 * through net-device; its id in *id.
 */
static __always_inline struct drf_net_tenant *tenant_of(struct __sk_buff *skb, __u64 *id)
{
	__u32 ifindex = skb->ifindex;

	/* Only net-device's packets: not loopback's, not another device's. */
	if (!bpf_map_lookup_elem(&devs, &ifindex))
		return 0;
	for (__u32 d = 1; d <= DRF_NET_MAX_DEPTH; d++) {
		struct drf_net_tenant *t;
		__u64 cg = bpf_skb_ancestor_cgroup_id(skb, (int)(drf_root_level + d));

		if (!cg)
			return 0;
		t = bpf_map_lookup_elem(&drf_net_tenants, &cg);
		if (t) {
			*id = cg;
			return t;
		}
	}
	return 0;
}

#define ETH_HLEN 14

/*
 * The size of the network and transport headers at the packet's start: what
 * each segment of a GSO packet repeats on the wire. IPv4 and IPv6 (without
 * extension headers), TCP and UDP; 0 if it cannot tell.
 */
static __always_inline __u32 l3l4_hdr(struct __sk_buff *skb)
{
	__u8 b = 0, proto = 0, off = 0;
	__u32 l3;

	if (bpf_skb_load_bytes(skb, 0, &b, 1) < 0)
		return 0;
	if ((b >> 4) == 4) {
		l3 = (b & 0xf) * 4;
		if (bpf_skb_load_bytes(skb, 9, &proto, 1) < 0)
			return 0;
	} else if ((b >> 4) == 6) {
		l3 = 40;
		if (bpf_skb_load_bytes(skb, 6, &proto, 1) < 0)
			return 0;
	} else {
		return 0;
	}
	if (proto == 17)
		return l3 + 8;
	if (proto != 6 || bpf_skb_load_bytes(skb, l3 + 12, &off, 1) < 0)
		return l3;
	return l3 + (off >> 4) * 4;
}

/*
 * The bytes of the packet on the wire, as HTB counts them (qdisc_pkt_len_init()):
 * an Ethernet header per segment, and a GSO packet's headers once per segment.
 * Counters and the policer use it, so that rates agree with the classes'.
 */
static __always_inline __u64 wire_len(struct __sk_buff *skb)
{
	__u32 segs = skb->gso_segs > 1 ? skb->gso_segs : 1;
	__u64 len = (__u64)skb->len + (__u64)ETH_HLEN * segs;

	if (segs > 1)
		len += (__u64)l3l4_hdr(skb) * (segs - 1);
	return len;
}

static __always_inline struct drf_net_counters *counters(__u64 *id)
{
	struct drf_net_counters *c = bpf_map_lookup_elem(&drf_net_stats, id);

	if (c)
		return c;
	{
		struct drf_net_counters zero = {};

		bpf_map_update_elem(&drf_net_stats, id, &zero, BPF_NOEXIST);
	}
	return bpf_map_lookup_elem(&drf_net_stats, id);
}

SEC("cgroup_skb/egress")
int drf_net_egress(struct __sk_buff *skb)
{
	struct drf_net_counters *c;
	struct drf_net_tenant *t;
	__u64 id = 0;

	t = tenant_of(skb, &id);
	if (!t)
		return 1;
	/* No class (egress not shaped): the socket's own SO_PRIORITY stays. */
	if (t->classid)
		skb->priority = t->classid;
	c = counters(&id);
	if (c) {
		c->eg_bytes += wire_len(skb);
		c->eg_packets++;
	}
	return 1;
}

enum drf_verdict { DRF_PASS, DRF_MARK, DRF_DROP };

/*
 * The token bucket, refilled at the tenant's rate up to its burst. A tenant
 * above its rate long enough to drain half the burst gets its ECN-capable
 * packets marked CE, an early signal to slow down; once the bucket is empty,
 * what does not fit is dropped, ECN-capable or not. Marks alone cannot hold a
 * rate: a window-based sender reacts once per round trip, and on a short path
 * even its smallest window is faster than the rate.
 */
static __always_inline enum drf_verdict police(struct __sk_buff *skb, struct drf_net_tenant *t,
					       __u64 *id, __u32 len)
{
	struct drf_net_bucket *b = bpf_map_lookup_elem(&drf_net_buckets, id);
	__u64 now = bpf_ktime_get_ns(), add, elapsed, rate = t->in_rate;
	enum drf_verdict v = DRF_DROP;
	__s64 burst = (__s64)t->in_burst;

	if (!b) {
		struct drf_net_bucket fresh = { .tokens = burst, .last_ns = now };

		bpf_map_update_elem(&drf_net_buckets, id, &fresh, BPF_NOEXIST);
		b = bpf_map_lookup_elem(&drf_net_buckets, id);
		if (!b)
			return DRF_PASS;
	}
	bpf_spin_lock(&b->lock);
	/*
	 * Refill for the time since the last one. now was read before the lock:
	 * another CPU may have stored a later time already, which is no time at
	 * all.
	 */
	elapsed = now - b->last_ns;
	if ((__s64)elapsed > 1000000000LL) {
		/* Idle for over a second: a second's worth, as far as the burst allows. */
		b->tokens += rate > (__u64)burst ? burst : (__s64)rate;
		b->frac = 0;
		b->last_ns = now;
	} else if ((__s64)elapsed > 0) {
		/*
		 * elapsed * rate / 1e9 bytes, exactly: the fraction of a byte
		 * carries over in frac. No product here exceeds 2^64: elapsed and
		 * the remainder are below 1e9, and elapsed * (rate / 1e9) is
		 * below rate.
		 */
		__u64 x = elapsed * (rate % 1000000000ULL) + b->frac;

		add = elapsed * (rate / 1000000000ULL) + x / 1000000000ULL;
		b->frac = (__u32)(x % 1000000000ULL);
		b->tokens += (__s64)add;
		b->last_ns = now;
	}
	if (b->tokens > burst)
		b->tokens = burst;
	if (b->tokens >= (__s64)len) {
		b->tokens -= len;
		v = b->tokens < (burst >> 1) ? DRF_MARK : DRF_PASS;
	}
	bpf_spin_unlock(&b->lock);
	/* A mark where the packet can carry one (ECT); it passes either way. */
	if (v == DRF_MARK && !bpf_skb_ecn_set_ce(skb))
		v = DRF_PASS;
	return v;
}

SEC("cgroup_skb/ingress")
int drf_net_ingress(struct __sk_buff *skb)
{
	struct drf_net_counters *c;
	struct drf_net_tenant *t;
	__u64 id = 0, len;
	int pass = 1;

	t = tenant_of(skb, &id);
	if (!t)
		return 1;
	c = counters(&id);
	len = wire_len(skb);
	if (t->in_rate) {
		enum drf_verdict v = police(skb, t, &id, (__u32)len);

		if (v == DRF_DROP)
			pass = 0;
		if (c && v == DRF_MARK)
			c->in_marked++;
		if (c && v == DRF_DROP)
			c->in_dropped++;
	}
	if (c && pass) {
		c->in_bytes += len;
		c->in_packets++;
	}
	return pass;
}
