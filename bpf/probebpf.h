/* SPDX-License-Identifier: MIT */
/*
 * The loader of the usage probes (probe.bpf.c) and drfd's handle on their
 * maps, behind an ops table: the real one (libbpf, the skeleton) and a
 * recording one that prints each change (dry run, tests), keeps the maps in
 * memory and injects failures. Functions return 0 or a negative errno;
 * nothing here logs.
 *
 * Links and maps are pinned under a directory of bpffs per cgroup-root, so
 * that a restarted drfd keeps counting with no gap: when the pinned maps are
 * of this version (drf_probe_cfg.abi) and the links are pinned, it adopts
 * them as they are (tracing links cannot swap programs); otherwise it loads,
 * attaches and pins anew.
 */
#ifndef DRF_PROBEBPF_H
#define DRF_PROBEBPF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fault.h"
#include "probe.h"

struct drf_probe_ops {
	const char *name;
	/* Loads (or adopts) and attaches the probes, pinned in pin_dir. */
	int (*attach)(void *ctx, const char *pin_dir, bool *ret_adopted);
	int (*configure)(void *ctx, const struct drf_probe_cfg *cfg);
	/* A zeroed entry for the tenant of cgroup id cgid in each counter map; -EEXIST if there is one. */
	int (*add)(void *ctx, uint64_t cgid);
	int (*del)(void *ctx, uint64_t cgid);
	/* The keys of every entry; *ret is malloc'ed. */
	int (*keys)(void *ctx, uint64_t **ret, size_t *ret_n);
	/*
	 * Every tenant's counters, the CPU map's summed over the CPUs, in one pass
	 * over each map (batch lookups): arrays malloc'ed, n entries, by key.
	 */
	int (*read)(void *ctx, uint64_t **ret_keys, struct drf_probe_cpu **ret_cpu,
		    struct drf_probe_io **ret_io, size_t *ret_n);
	/* Detaches the probes and removes the pins under pin_dir. */
	int (*reset)(void *ctx, const char *pin_dir);
	void (*close)(void *ctx);
};

struct probe_bpf;
struct drf_probebpf {
	struct probe_bpf *skel;
	bool fds_open;          /* the three fds below are ours (-1 or open) */
	bool ready;             /* attached: the fds are the maps' */
	int cfg_fd, cpu_fd, io_fd;
	int ncpu;
};
extern const struct drf_probe_ops drf_probe_real_ops;

enum drf_probe_op {
	DRF_PROBE_OP_ATTACH = 1 << 0,
	DRF_PROBE_OP_CONFIGURE = 1 << 1,
	DRF_PROBE_OP_ADD = 1 << 2,
	DRF_PROBE_OP_DEL = 1 << 3,
	DRF_PROBE_OP_KEYS = 1 << 4,
	DRF_PROBE_OP_READ = 1 << 5,
	DRF_PROBE_OP_RESET = 1 << 6,
};

/*
 * Records every change as one line ("probe attach PIN_DIR", "probe configure
 * root-level L root-id I io-dev D gen G", "probe add CGID", "probe del CGID",
 * "probe reset PIN_DIR") and keeps the counter maps in memory, so that reads
 * see what was written and what a test put in cpu[] and io[]. Fault injection
 * (fault.h): the operations in fault.ops (0: all) fail with fault.err, on key
 * fault.id only if not 0.
 */
#define DRF_PROBE_REC_MAX 1024
struct drf_probe_recorder {
	FILE *out;
	size_t changes;
	bool attached;
	struct drf_probe_cfg cfg;
	size_t n;
	uint64_t key[DRF_PROBE_REC_MAX];
	struct drf_probe_cpu cpu[DRF_PROBE_REC_MAX];
	struct drf_probe_io io[DRF_PROBE_REC_MAX];
	struct drf_fault fault; /* ops: DRF_PROBE_OP_* bits; id: a key */
};
extern const struct drf_probe_ops drf_probe_recording_ops;

#endif
