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
 *   ECN-capable (up to one burst over), and dropped otherwise. The packet has
 *   crossed the link by then: the policer makes senders slow down, it cannot
 *   stop them.
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

enum drf_verdict { DRF_PASS, DRF_MARK, DRF_DROP };

/*
 * The token bucket: a packet within the rate passes. Over it, an ECN-capable
 * packet is marked CE and passes on credit, down to one burst of debt; beyond
 * that, or not ECN-capable, it is dropped. Marking alone would let a flow run
 * far past its rate where round trips are short: a sender halves its window
 * once per round trip, however many packets were marked.
 */
static __always_inline enum drf_verdict police(struct __sk_buff *skb, struct drf_net_tenant *t,
					   __u64 *id, __u32 len)
{
	struct drf_net_bucket *b = bpf_map_lookup_elem(&drf_net_buckets, id);
	__u64 now = bpf_ktime_get_ns(), add;
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
	/* At most one second of refill: no overflow in elapsed * rate below 2^64. */
	add = now - b->last_ns;
	if (add > 1000000000ULL)
		add = 1000000000ULL;
	b->tokens += (__s64)(add * t->in_rate / 1000000000ULL);
	if (b->tokens > burst)
		b->tokens = burst;
	b->last_ns = now;
	if (b->tokens >= (__s64)len) {
		b->tokens -= len;
		v = DRF_PASS;
	} else if (b->tokens - (__s64)len >= -burst) {
		v = DRF_MARK;
		b->tokens -= len; /* taken back if the packet cannot carry a mark */
	}
	bpf_spin_unlock(&b->lock);
	if (v != DRF_MARK)
		return v;
	if (bpf_skb_ecn_set_ce(skb))
		return DRF_MARK;
	bpf_spin_lock(&b->lock);
	b->tokens += len;
	bpf_spin_unlock(&b->lock);
	return DRF_DROP;
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
	if (t->in_rate) {
		enum drf_verdict v = police(skb, t, &id, skb->len);

		if (v == DRF_DROP)
			pass = 0;
		if (c && v == DRF_MARK)
			c->in_marked++;
		if (c && v == DRF_DROP)
			c->in_dropped++;
	}
	if (c && pass) {
		c->in_bytes += skb->len;
		c->in_packets++;
	}
	return pass;
}
