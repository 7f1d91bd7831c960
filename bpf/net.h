/* SPDX-License-Identifier: MIT */
/*
 * Types shared by the network programs (net.bpf.c) and drfd: the maps' keys
 * and values. Only __u32/__u64 and fixed arrays.
 *
 * Every map is keyed by the tenant's cgroup id (the inode number of its
 * cgroup directory, as bpf_skb_ancestor_cgroup_id() returns it).
 */
#ifndef DRF_BPF_NET_H
#define DRF_BPF_NET_H

#ifndef __VMLINUX_H__
#include <linux/bpf.h> /* struct bpf_spin_lock */
#include <linux/types.h>
#endif

/* Tenants a map holds; the HTB minors give at most this many classes anyway. */
#define DRF_NET_MAX_TENANTS 65536
/* How deep below cgroup-root a tenant's cgroup may be for the programs to find it. */
#define DRF_NET_MAX_DEPTH 8

/* drf_net_tenants: what drfd wants for a tenant. */
struct drf_net_tenant {
	__u32 classid;   /* the HTB class egress packets go to (skb->priority) */
	__u32 pad;
	__u64 in_rate;   /* ingress policer: bytes/s; 0: not policed */
	__u64 in_burst;  /* bytes */
};

/* drf_net_stats (per CPU): what the programs counted for a tenant. */
struct drf_net_counters {
	__u64 eg_bytes, eg_packets;
	__u64 in_bytes, in_packets;
	__u64 in_dropped, in_marked; /* over the policer's rate: dropped, or ECN-marked */
};

/* drf_net_buckets: the ingress policer's token bucket of a tenant. */
struct drf_net_bucket {
	struct bpf_spin_lock lock;
	__u32 frac;    /* what the last refill did not make a whole byte of, in 1e-9 bytes */
	__s64 tokens;  /* bytes, 0 to the burst */
	__u64 last_ns; /* when tokens were last added */
};

/*
 * drf_net_devs: the devices whose packets the programs act on, by ifindex:
 * net-device, the devices it is a port of (a bridge, a bond), and those on top
 * of it (VLANs): a socket's packets leave and arrive through the one that
 * holds the address.
 */
#define DRF_NET_MAX_DEVS 16

#endif
