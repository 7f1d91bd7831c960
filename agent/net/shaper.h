/* SPDX-License-Identifier: MIT */
/*
 * The network backend of the reconciler: desired state -> observed state ->
 * diff, for the HTB tree on net-device (htb.h) and the entries of the BPF
 * programs' tenant map (netbpf.h). Each tick:
 *
 *   1. the root qdisc: drfd's own (htb d7f:) is adopted as it is; the kernel's
 *      default (handle 0:) is replaced by it; any other is foreign, left alone
 *      and reported unless the config allows replacing it;
 *   2. the classes, read back in one dump: a missing or changed one is written,
 *      one drfd no longer wants is deleted; a tenant class gets fq_codel;
 *   3. the BPF map: each tenant's entry (its class, its ingress policer) by its
 *      cgroup id; entries of cgroups no tenant has are deleted;
 *   4. the counters: per tenant the class's and the programs' bytes and
 *      packets, drops and ECN marks, and the rates since the last tick.
 *
 * Every failed call is counted, said once, and retried by the next tick. A
 * tenant's class minor is stable across reloads and, through the state file,
 * restarts (drf_shaper_remember).
 */
#ifndef DRF_SHAPER_H
#define DRF_SHAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroupfs.h"
#include "htb.h"
#include "log.h"
#include "netbpf.h"
#include "planner.h"
#include "tc.h"

struct drf_shaper_tenant {
	char *name, *cgroup;
	uint16_t minor;
	struct drf_htb_tenant in;          /* what the mapping needs of it */
	struct drf_tc_class want;          /* its HTB class (egress) */
	struct drf_net_tenant want_map;    /* its BPF map entry */
	/* observed */
	bool class_ok, leaf_ok, map_ok;
	uint64_t cgid;                     /* 0: its cgroup was not found yet */
	struct drf_tc_class seen;          /* as read back, with the kernel's counters */
	struct drf_tc_class wrote;         /* as drfd last wrote it, or found it matching */
	bool seen_valid;
	struct drf_net_counters cnt;       /* the programs' counters */
	/* rates over the last interval, bits/s */
	double eg_bps, in_bps, class_bps;
	int err_class, err_leaf, err_map;  /* the last failure's errno; 0 */
};

struct drf_shaper {
	const struct drf_tc_ops *tc;
	void *tc_ctx;
	const struct drf_netbpf_ops *bpf;
	void *bpf_ctx;
	const struct cgfs *fs;
	struct drf_logger log;
	bool replace_foreign;           /* [agent] net-replace-qdisc = yes */
	bool leaf_fq_codel;             /* tenant classes get fq_codel (the kernel has it) */
	bool fq_codel_known;            /* the host check found sch_fq_codel: ENOENT is no proof */
	char *ifname;
	struct drf_tc_link link;
	bool link_ok;
	bool egress, ingress;           /* net-rate, net-ingress-rate have capacities */
	char pin_dir[256];
	uint32_t root_level;
	bool attached;                  /* the BPF programs are attached */
	bool qdisc_ok;                  /* drfd's root qdisc is in place */
	bool drop_qdisc;                /* net-rate left the config: remove drfd's qdisc */
	bool planned;                   /* drf_shaper_set succeeded once */
	bool foreign;                   /* a foreign root qdisc is in the way */
	char foreign_kind[DRF_TC_KIND_LEN];
	uint32_t foreign_handle;
	int err_link, err_qdisc, err_bpf, err_dump;
	struct drf_htb_plan plan;
	uint64_t link_rate;             /* net-link-rate, bits/s; 0: the device's speed */
	double max_eg;                  /* the largest egress allocation, bits/s */
	struct drf_tc_class base[3];    /* d7f:1, d7f:2, d7f:ffff */
	struct drf_tc_class base_wrote[3];
	struct drf_shaper_tenant *t;
	size_t n;
	/* remembered minors (state file), name -> minor */
	char **mem_name;
	uint16_t *mem_minor;
	size_t n_mem, mem_name_cap, mem_minor_cap;
	bool map_dirty;                 /* stale map entries may exist: list the keys */
	size_t cursor;                  /* next tenant whose map entry is read back */
	uint32_t *by_minor, *leaf_of;   /* a tick's indexes by class minor (65536 each) */
	uint8_t wanted[65536 / 8];      /* bits: the minors of the plan's tenants */
	uint64_t last_us;               /* CLOCK_MONOTONIC of the last counters */
	uint64_t total_writes, total_errors;
};

struct drf_shaper_stats {
	unsigned writes;   /* classes, qdiscs and map entries written or deleted */
	unsigned errors;   /* failed calls this tick (each said once) */
	unsigned retrying; /* things still to do */
};

/*
 * Sets up the shaper for net-device ifname on cgroup-root fs: tc and bpf are
 * the ops (real, or recording for a dry run and tests). pin_dir is where the
 * BPF objects are pinned, root_level the level of cgroup-root in its
 * hierarchy. Nothing is touched before the first tick.
 */
int drf_shaper_init(struct drf_shaper *s, const char *ifname, const struct drf_tc_ops *tc,
		    void *tc_ctx, const struct drf_netbpf_ops *bpf, void *bpf_ctx,
		    const struct cgfs *fs, const char *pin_dir, uint32_t root_level,
		    const struct drf_logger *log);
void drf_shaper_free(struct drf_shaper *s);

/* A minor the tenant had before (the state file): kept if still free. */
int drf_shaper_remember(struct drf_shaper *s, const char *name, uint16_t minor);

/*
 * Makes the network of plan p the desired state: classes and policers from
 * its allocation; minors carried over by tenant name. 0, -ENOSPC (more
 * tenants than class minors) or -ENOMEM; on failure the previous plan stays.
 */
int drf_shaper_set(struct drf_shaper *s, const struct drf_plan *p);

/*
 * One tick; now_us is CLOCK_MONOTONIC, for the rates. The classes are read
 * back every tick (one dump, which also gives their counters); of the map
 * entries, `verify` tenants' (round robin) and those not known to hold.
 */
int drf_shaper_tick(struct drf_shaper *s, uint64_t now_us, size_t verify,
		    struct drf_shaper_stats *ret);

/*
 * Removes what drfd created on the device and in bpffs: its root qdisc (only
 * if it is drfd's) with every class, and the pinned programs and maps.
 */
int drf_shaper_reset(struct drf_shaper *s);

/* Only the pinned programs and maps of this root (another drfd shapes the device now). */
int drf_shaper_unpin(struct drf_shaper *s);

#endif
