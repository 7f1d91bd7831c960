/* SPDX-License-Identifier: MIT */
/*
 * The measurements: each tick, every tenant's counters and gauges are read
 * (cpu.stat, memory.current, memory.stat; memory.events when inotify says it
 * changed; io.stat where io is shared; the *.pressure files when asked: the
 * probes' maps and the network programs' counters, one batch read per map)
 * and set against the plan in force (agent/core/use.h). The files stay open
 * from tick to tick, one pread(2) a file; a cgroup removed (and perhaps made
 * again) is noticed by the read failing with ENODEV, and its id read again.
 * Status, metrics, the history, observed demand and `drfctl top` take them.
 */
#ifndef DRF_USAGE_H
#define DRF_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroupfs.h"
#include "config.h"
#include "log.h"
#include "planner.h"
#include "probebpf.h"
#include "shaper.h"
#include "use.h"

/* The files a tenant's sample reads, held open from tick to tick (cgfs_read_held()). */
enum drf_usage_file {
	DRF_UF_CPU_STAT,
	DRF_UF_MEM_CURRENT,
	DRF_UF_MEM_STAT,
	DRF_UF_MEM_EVENTS,
	DRF_UF_CPU_PRESSURE,
	DRF_UF_MEM_PRESSURE,
	DRF_UF_IO_PRESSURE,
	DRF_UF_IO_STAT,
	DRF_NUF
};

struct drf_usage_files {
	int fd[DRF_NUF];        /* -1: not open; CGFS_FD_UNHELD: read by path */
	int wd;                 /* memory.events' watch; -1: none (read each tick) */
	bool known;             /* cgid is its cgroup's: cpu.stat held open since it was read */
	double events[3];       /* memory.events' high, max, oom_kill as last read */
};

struct drf_usage {
	const struct cgfs *fs;
	const struct drf_logger *log;
	size_t n;                       /* tenants, in the order of the plan in force */
	struct drf_tenant_use *t;       /* n entries (room for t_cap) */
	size_t t_cap;
	char **name;                    /* n: whose history t[i] is */
	char **cgroup;                  /* n: and in which cgroup (relative to the root) */
	uint64_t *cgid;                 /* n: its cgroup id; 0: not known yet */
	bool *in_map;                   /* n: it has entries in the probes' maps */
	struct drf_usage_files *files;  /* n: its files held open */
	size_t held, max_held;          /* files held open; at most (more are read by path) */
	int wfd;                        /* memory.events' watches, when watching */
	bool watch_tried, watching;     /* inotify tried; and working */
	bool map_dirty;                 /* entries of departed tenants may be left */
	size_t root_level;
	uint64_t root_id;
	struct drf_probe_cfg cfg;       /* as last written to the probes */
	uint32_t gen;                   /* the tenant set's generation (drf_probe_cfg.gen) */
	double jain_alloc, jain_use;    /* Jain's index over weighted dominant shares */
	uint64_t at_us;                 /* the last sample, CLOCK_MONOTONIC; 0: none yet */
	uint64_t samples;               /* ticks sampled */
	/* The probes (bpf/probe.bpf.c). */
	const struct drf_probe_ops *probe;
	void *probe_ctx;
	bool probes;                    /* attached and counting */
	bool probes_adopted;            /* taken over from the last drfd, counts and all */
	char probes_why[192];           /* why not, when !probes */
	/* Bits (1 << r): a knob of resource r has no effect on this host, and why. */
	unsigned no_effect;
	char no_effect_why[DRF_NRES][160];
	bool psi_missing;               /* no *.pressure files (kernel without PSI) */
	/* The sample in progress (drf_usage_sample_begin, drf_usage_sample_step). */
	bool sampling;
	size_t pos;                     /* the next tenant */
	uint64_t *keys;                 /* the probes' map, as read at its beginning */
	struct drf_probe_cpu *pcpu;
	struct drf_probe_io *pio;
	void *order;                    /* keys sorted, for the tenants' lookups */
	size_t n_keys;
	int wds[1024];                  /* memory.events that changed (watch descriptors) */
	size_t n_wds;
};

/* Measures the cgroups of fs; log: what it says (no PSI, probes off). */
void drf_usage_init(struct drf_usage *u, const struct cgfs *fs, const struct drf_logger *log);

/*
 * Attaches the probes (ops: real, or recording for a dry run), keeping their
 * pinned maps and links when pin_dir holds them; a failure leaves the probes
 * off with the reason in probes_why, and the measurements from cgroup files.
 * gen: the first generation of the tenants' entries (one the probes of an
 * earlier drfd cannot have seen, e.g. the clock in ms).
 */
void drf_usage_start_probes(struct drf_usage *u, const struct drf_probe_ops *ops, void *ctx,
			    const char *pin_dir, uint32_t root_level, uint32_t gen);

/* Per-tenant state for a config's tenants. */
struct drf_usage_tenants {
	size_t n;
	struct drf_tenant_use *t;
	char **name, **cgroup;
	uint64_t *cgid;
	bool *in_map;
	struct drf_usage_files *files;
	size_t *from;   /* n: its position in u, or SIZE_MAX: new */
	bool t_reused;  /* t is u's own (the tenants keep their places): not copied */
	size_t t_cap;   /* else: t's room */
};

/*
 * Per-tenant state for the tenants of c, each one's history carried over from
 * u by name and cgroup (a reload): staged (0 or -ENOMEM, u unchanged), then
 * committed into u, or dropped.
 */
int drf_usage_stage(const struct drf_usage *u, const struct drf_config *c,
		    struct drf_usage_tenants *ret);
void drf_usage_commit(struct drf_usage *u, struct drf_usage_tenants *st);
void drf_usage_unstage(struct drf_usage_tenants *st);

/* What a sample is set against. */
struct drf_usage_in {
	const struct drf_config *cfg;           /* the tenants, capacities, mode */
	const struct drf_plan *plan;            /* the allocation and limits in force */
	const struct drf_io_target *io;         /* NULL: no io device */
	const struct drf_shaper *net;           /* NULL: the network is not shaped */
	uint64_t now_us;                        /* CLOCK_MONOTONIC */
	bool pressure;                          /* read the *.pressure files (PSI) */
};

/* One sample of every tenant of in->cfg (state made for its tenants first if need be). */
void drf_usage_sample(struct drf_usage *u, const struct drf_usage_in *in);

/*
 * The same sample in steps, so that an event loop serves its other sources
 * between two (1,000 tenants' files are a second's reading under emulation):
 * begin reads what the sample shares (the probes' map, memory.events' watches),
 * each step samples at most n tenants more at in->now_us (a tenant's rates are
 * between its own samples), and returns 1 while tenants are left, 0 once the
 * sample is whole (the indexes over all tenants computed). A new set of
 * tenants (drf_usage_commit) ends a sample in progress: the step returns 0.
 */
void drf_usage_sample_begin(struct drf_usage *u, const struct drf_usage_in *in);
int drf_usage_sample_step(struct drf_usage *u, const struct drf_usage_in *in, size_t n);

void drf_usage_free(struct drf_usage *u);

#endif
