/* SPDX-License-Identifier: MIT */
/*
 * From an allocation to cgroup v2 knob values, and back: the mapping of issue 3.
 * Pure: no I/O. Values are the strings written to (and read back from) the files.
 *
 * share mode (work-conserving: guarantees plus borrowing)
 *   cpu.weight    proportional to the cpu allocation, the largest at 10000
 *   cpu.max       "max 100000"
 *   memory.low    the memory allocation; memory.high "max"
 *   memory.max    the declared memory demand, or "max"
 *   io weight     proportional to the io allocation (io.weight with io.cost,
 *                 io.bfq.weight with BFQ); io.max at the declared io demand.
 *                 Without either, io.max at the io allocation instead.
 * limit mode (hard caps)
 *   cpu.max       allocation x period; cpu.weight 100
 *   memory.high = memory.max = the memory allocation; memory.low 0
 *   io.max        rbps/wbps = the io allocation
 * Wherever a hard cap at the allocation is written (limit mode; io in share mode
 * without weights), a tenant that needs none of that resource (shape 0) is left
 * uncapped on it: a zero cap would stop it. Share mode's caps at the declared
 * demand treat a declared 0 the same way, so zero means the same in both modes:
 * no guarantee and no cap. drf_knobs_uncapped() names such cases so the agent
 * can say so. A cpu.max quota above the kernel's largest is written as "max".
 */
#ifndef DRF_KNOBS_H
#define DRF_KNOBS_H

#include <stdbool.h>
#include <stddef.h>

#include "alloc.h"
#include "config.h"

enum drf_knob {
	DRF_KNOB_CPU_WEIGHT,
	DRF_KNOB_CPU_MAX,
	DRF_KNOB_MEMORY_LOW,
	DRF_KNOB_MEMORY_HIGH,
	DRF_KNOB_MEMORY_MAX,
	DRF_KNOB_IO_WEIGHT,     /* io.weight (io.cost) or io.bfq.weight (BFQ) */
	DRF_KNOB_IO_MAX,
	DRF_KNOB_MEMORY_SWAP_MAX, /* tasks only: "0", so that a task over its memory is OOM-killed */
	DRF_NKNOBS,
};

#define DRF_CPU_PERIOD_US 100000
/* The kernel's largest cpu.max quota: max_cfs_runtime, (1 << 44) - 1 us (BW_SHIFT 20). */
#define DRF_CPU_MAX_QUOTA_US 17592186044415.0
#define DRF_KNOB_LEN 128

enum drf_io_weights {
	DRF_IO_WEIGHTS_NONE, /* neither BFQ nor io.cost: io.max only */
	DRF_IO_WEIGHTS_BFQ,  /* io.bfq.weight, 1..1000 */
	DRF_IO_WEIGHTS_COST, /* io.weight, 1..10000 */
};

struct drf_io_target {
	unsigned major, minor;
	enum drf_io_weights weights;
};

struct drf_knobs {
	bool set[DRF_NKNOBS];
	char val[DRF_NKNOBS][DRF_KNOB_LEN];
};

/* The file a knob lives in (io weight depends on the scheduler). */
const char *drf_knob_file(enum drf_knob k, const struct drf_io_target *io);

/*
 * cgroup v2 controllers, as bits: the same bits as cgroupfs's enum cgfs_ctrl
 * (the reconciler, which sees both, checks that they agree).
 */
enum drf_ctrl {
	DRF_CTRL_CPU = 1 << 0,
	DRF_CTRL_MEMORY = 1 << 1,
	DRF_CTRL_IO = 1 << 2,
};

/* Controllers the config needs: cpu, memory, io per capacity. */
unsigned drf_knobs_controllers(const struct drf_config *c);

/*
 * A cgroup that is no tenant's own and its knob values: an inner node of
 * nested tenant paths (the node "team" of a tenant with `cgroup = team/web`:
 * cgroup v2 divides among siblings only, so drfd sets its weights from the
 * allocation of all the tenants below it, its memory.low to their sum, and no
 * caps), or a task's cgroup under its tenant's (limits at its vector).
 */
struct drf_cg_knobs {
	char *cgroup;
	struct drf_knobs knobs;
};

void drf_cg_knobs_free(struct drf_cg_knobs *in, size_t n);

/*
 * Knob values for every tenant (ret has c->n_tenants entries) and, if
 * ret_inner is not NULL, for the inner nodes of nested tenant paths, parents
 * before children (*ret_inner is NULL and *ret_n_inner 0 for a flat config).
 * Weights are proportional among siblings: for a flat config, among all the
 * tenants. io may be NULL when the config has no io capacity. Returns 0 or
 * -ENOMEM.
 */
int drf_knobs_compute(const struct drf_config *c, const struct drf_problem *p,
		      const struct drf_result *r, const struct drf_io_target *io,
		      struct drf_knobs *ret, struct drf_cg_knobs **ret_inner, size_t *ret_n_inner);

/*
 * The knobs of drfd's root cgroup, from its tenants' (t, n of them): its
 * memory.low the sum of theirs, so that their protection holds from the root
 * down (a cgroup's effective memory.low is bounded by its parent's); nothing
 * else (the root's share of the host beside its siblings is the host's
 * owner's to set). Nothing without the memory controller.
 */
void drf_knobs_root(const struct drf_config *c, const struct drf_knobs *t, size_t n,
		    struct drf_knobs *ret);

/*
 * The knobs of a task's cgroup: hard limits at the task's vector, as limit
 * mode writes them for a tenant (cpu.max at vec x period, memory.max and
 * memory.swap.max 0, io.max at its read and write rates), for each resource
 * the vector holds; io only with an io target.
 */
void drf_knobs_task(const double vec[DRF_NRES], const struct drf_io_target *io,
		    struct drf_knobs *ret);

/*
 * What knobs k enforce as hard limits, per resource in its unit (cores, bytes,
 * bytes/s): cpu.max's quota / period, memory.max, io.max's rbps and wbps;
 * INFINITY where nothing caps (and for the network, which is not a cgroup
 * knob's).
 */
void drf_knobs_limits(const struct drf_knobs *k, double ret[DRF_NRES]);

/*
 * Whether the kernel's value `have` (as read, newline trimmed) is `want`,
 * allowing for the kernel's rounding: memory values round down to pages (and
 * two within a page of each other are the same limit), io.max
 * prints riops/wiops and every device, io weights print a "default" line.
 * page_size is the host's (memory limits round down to it).
 */
bool drf_knob_matches(enum drf_knob k, const char *want, const char *have,
		      const struct drf_io_target *io, unsigned long page_size);

/*
 * val as the kernel will hold it once written (memory values rounded down to
 * pages; others as they are), into out: what a write of val leaves in the
 * file, against which the next value wanted is compared, so that a value that
 * moves within a page costs no write.
 */
void drf_knob_kernel_form(enum drf_knob k, const char *val, unsigned long page_size, char *out,
			  size_t len);

/*
 * Raises memory.max (which = DRF_KNOB_MEMORY_MAX) or memory.high
 * (DRF_KNOB_MEMORY_HIGH, never above memory.max) in k to at least `bytes`, if
 * it is a number. With observed demand in limit mode, memory.max stays at
 * least the declared plan's allocation, so a tenant growing back into its
 * share is reclaimed and pushed to rise, never OOM-killed below it; and
 * memory.high is at least the effective demand, so a tenant whose allocation
 * is scaled down by another resource is not reclaimed below what it uses.
 */
void drf_knobs_memory_at_least(struct drf_knobs *k, enum drf_knob which, double bytes);

/*
 * Tenant i's declared total demand of resource r, as a cap: a bounded demand,
 * or tasks x task; INFINITY if it declared none, or 0 (it needs none of r: a
 * zero cap would stop it rather than express that).
 */
double drf_knobs_declared(const struct drf_config *c, size_t i, int r);

/*
 * Bits (1 << resource) of the resources on which tenant i would get a hard cap
 * at its allocation (limit mode; io in share mode without io weights), or at a
 * declared demand of 0 (share mode), but is left uncapped because it needs none
 * of them: a zero cap would stop it.
 */
unsigned drf_knobs_uncapped(const struct drf_config *c, const struct drf_problem *p, size_t i,
			    const struct drf_io_target *io);

#endif
