/* SPDX-License-Identifier: MIT */
/*
 * The loader of the network programs (net.bpf.c) and drfd's handle on their
 * maps, behind an ops table: the real one (libbpf, the skeleton) and a
 * recording one that prints each change (dry run, tests), keeps the map in
 * memory and injects failures. Functions return 0 or a negative errno;
 * nothing here logs.
 *
 * Programs, links and maps are pinned under a directory of bpffs per
 * cgroup-root, so that a restarted drfd keeps classifying and counting with no
 * gap: it reuses the pinned maps and swaps its new programs into the pinned
 * links (bpf_link_update), attaching only where no link is pinned.
 */
#ifndef DRF_NETBPF_H
#define DRF_NETBPF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fault.h"
#include "net.h"

struct drf_netbpf_ops {
	const char *name;
	/*
	 * Loads the programs for the devices devs (net-device and the devices
	 * its packets pass through, struct drf_tc_link), reusing the maps pinned in
	 * pin_dir (those of another layout are replaced), and makes them the ones
	 * attached at the cgroup cgroup_fd (level root_level in its hierarchy):
	 * through the pinned links, or attaching and pinning new ones where none
	 * is pinned or the pinned one no longer holds that cgroup (it was
	 * recreated). *ret_adopted says whether pinned links were taken over.
	 */
	int (*attach)(void *ctx, const char *pin_dir, int cgroup_fd, uint32_t root_level,
		      const int *devs, size_t n_devs, bool *ret_adopted);
	int (*set)(void *ctx, uint64_t cgid, const struct drf_net_tenant *v);
	/* -ENOENT if there is no entry. */
	int (*get)(void *ctx, uint64_t cgid, struct drf_net_tenant *ret);
	int (*del)(void *ctx, uint64_t cgid);
	/* The keys of every tenant entry; *ret is malloc'ed. */
	int (*keys)(void *ctx, uint64_t **ret, size_t *ret_n);
	/*
	 * Every tenant's counters, summed over the CPUs, in one pass over the map
	 * (batch lookups): keys and values are malloc'ed, n entries.
	 */
	int (*counters)(void *ctx, uint64_t **ret_keys, struct drf_net_counters **ret_vals,
			size_t *ret_n);
	/* Detaches the programs and removes the pins under pin_dir (drfctl net-reset). */
	int (*reset)(void *ctx, const char *pin_dir);
	void (*close)(void *ctx);
};

/* The real ops; ctx is a struct drf_netbpf (zeroed before attach). */
struct net_bpf;
struct bpf_link;
struct drf_netbpf {
	struct net_bpf *skel;
	struct bpf_link *egress, *ingress;
};
extern const struct drf_netbpf_ops drf_netbpf_real_ops;

/*
 * Whether this kernel loads the programs at all (their helpers, maps and
 * types): loads them, unpinned and unattached, and unloads them. 0 or -errno.
 */
int drf_netbpf_probe(void);

/* Operations, as bits, for the recorder's fault injection. */
enum drf_netbpf_op {
	DRF_NETBPF_OP_ATTACH = 1 << 0,
	DRF_NETBPF_OP_SET = 1 << 1,
	DRF_NETBPF_OP_GET = 1 << 2,
	DRF_NETBPF_OP_DEL = 1 << 3,
	DRF_NETBPF_OP_KEYS = 1 << 4,
	DRF_NETBPF_OP_COUNTERS = 1 << 5,
	DRF_NETBPF_OP_RESET = 1 << 6,
};

/*
 * Records every change as one line ("bpf attach PIN_DIR level N", "bpf map set
 * CGID class C in-rate R in-burst B", "bpf map del CGID", "bpf reset
 * PIN_DIR") and keeps the tenant map in memory (up to DRF_NETBPF_REC_MAX
 * entries), so that reads see what was written; counters are zero unless a
 * test sets them. Fault injection (fault.h): the operations in
 * fault.ops (0: all) fail with fault.err, on key fault.id only if not 0.
 */
#define DRF_NETBPF_REC_MAX 1024
struct drf_netbpf_recorder {
	FILE *out;
	size_t changes;
	bool attached;
	size_t n;
	uint64_t key[DRF_NETBPF_REC_MAX];
	struct drf_net_tenant val[DRF_NETBPF_REC_MAX];
	struct drf_net_counters cnt[DRF_NETBPF_REC_MAX];
	struct drf_fault fault; /* ops: DRF_NETBPF_OP_* bits; id: a key */
};
extern const struct drf_netbpf_ops drf_netbpf_recording_ops;

#endif
