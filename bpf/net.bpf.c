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
 *   per tenant. Over its rate a packet is ECN-marked (CE) if its flow is
 *   ECN-capable, and dropped otherwise. The packet has crossed the link by
 *   then: the policer makes senders slow down, it cannot stop them.
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

/* The tenant whose cgroup is an ancestor of the packet's socket's; its id in *id. */
static __always_inline struct drf_net_tenant *tenant_of(struct __sk_buff *skb, __u64 *id)
{
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
	skb->priority = t->classid;
	c = counters(&id);
	if (c) {
		c->eg_bytes += skb->len;
		c->eg_packets++;
	}
	return 1;
}

/* Whether the bucket has len bytes of tokens left; takes them if so. */
static __always_inline int take(struct drf_net_tenant *t, __u64 *id, __u32 len)
{
	struct drf_net_bucket *b = bpf_map_lookup_elem(&drf_net_buckets, id);
	__u64 now = bpf_ktime_get_ns(), add;
	int ok;

	if (!b) {
		struct drf_net_bucket fresh = { .tokens = t->in_burst, .last_ns = now };

		bpf_map_update_elem(&drf_net_buckets, id, &fresh, BPF_NOEXIST);
		b = bpf_map_lookup_elem(&drf_net_buckets, id);
		if (!b)
			return 1;
	}
	bpf_spin_lock(&b->lock);
	/* At most one second of refill: no overflow in elapsed * rate below 2^64. */
	add = now - b->last_ns;
	if (add > 1000000000ULL)
		add = 1000000000ULL;
	add = add * t->in_rate / 1000000000ULL;
	b->tokens += add;
	if (b->tokens > t->in_burst)
		b->tokens = t->in_burst;
	b->last_ns = now;
	ok = b->tokens >= len;
	if (ok)
		b->tokens -= len;
	bpf_spin_unlock(&b->lock);
	return ok;
}

SEC("cgroup_skb/ingress")
int drf_net_ingress(struct __sk_buff *skb)
{
	struct drf_net_counters *c;
	struct drf_net_tenant *t;
	__u64 id = 0;
	int pass = 1;

	t = tenant_of(skb, &id);
	if (!t)
		return 1;
	c = counters(&id);
	if (t->in_rate && !take(t, &id, skb->len)) {
		/* Over the rate: CE on an ECN-capable packet (1), else drop. */
		if (bpf_skb_ecn_set_ce(skb)) {
			if (c)
				c->in_marked++;
		} else {
			pass = 0;
			if (c)
				c->in_dropped++;
		}
	}
	if (c && pass) {
		c->in_bytes += skb->len;
		c->in_packets++;
	}
	return pass;
}
