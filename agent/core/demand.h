/* SPDX-License-Identifier: MIT */
/*
 * Observed demand (online DRF): each tick, a tenant's effective demand per
 * resource follows what it measurably uses and whether it is held back,
 * bounded above by what it declared. The daemon re-runs DRF on the effective
 * demands and the knobs follow. Pure: no I/O, ticks passed in.
 *
 * Per resource r, with B the declared demand capped at capacity (the bound),
 * E the effective demand, U the use over the last tick, L the level the tenant
 * can reach without borrowing (its allocation, or its hard limit if lower):
 *   - held and under pressure (U >= 90% of L or held back by its hard limit,
 *     and cpu.max throttling, run-queue wait or cpu PSI; memory PSI or
 *     memory.events max; IO PSI in a direction it uses, or IO at io.max;
 *     egress at its ceiling or at its HTB rate; ingress dropped by the
 *     policer): E doubles (at least U plus headroom), up to B. For memory U is
 *     the working set (page cache is not demand), when known.
 *     No hold time: a tenant that is held back gets its share back fast.
 *   - use above E plus the dead band (borrowing in share mode): E rises to U
 *     plus headroom, up to B.
 *   - not under pressure, and use plus headroom below E minus the dead band,
 *     for DRF_DEM_HOLD ticks in a row, and DRF_DEM_HOLD ticks since E last changed: E falls to U plus
 *     headroom (cpu, io, network) at once; memory falls by at most a quarter per
 *     step (senpai-like: gradual memory.high steps), never below the working
 *     set plus headroom. Never below the floor B / DRF_DEM_FLOOR_DIV.
 *   - a level that proved too small (the E the last pressure rise left) is not
 *     fallen below again for DRF_DEM_LEARN_TICKS ticks while the tenant uses
 *     at least half of it: no flapping between a fall and a rise; an idle
 *     tenant falls as usual.
 * Return from idle: from the floor, each tick under pressure doubles E, so E is
 * back at B after log2(DRF_DEM_FLOOR_DIV) = 4 rises, the first one on the first
 * tick that measured the tenant busy. See docs/online-drf.md for the bounds.
 */
#ifndef DRF_DEMAND_H
#define DRF_DEMAND_H

#include <stdbool.h>
#include <stdint.h>

#include "res.h"

struct drf_tenant_use;

#define DRF_DEM_HEADROOM 0.25       /* effective demand = use x (1 + headroom) */
#define DRF_DEM_BAND 0.2            /* dead band, relative to E */
#define DRF_DEM_HELD 0.9            /* use at this fraction of its level: held */
#define DRF_DEM_FLOOR_DIV 16.0      /* an idle tenant keeps B / 16 */
#define DRF_DEM_HOLD 2              /* ticks below the band before a fall, and between changes */
#define DRF_DEM_MEM_STEP 0.25       /* memory falls by at most this fraction per step */
#define DRF_DEM_LEARN_TICKS 60      /* a level that proved too small is kept this long */
/* Pressure thresholds, as fractions of the tick. */
#define DRF_DEM_CPU_THROTTLED 0.02  /* periods throttled per period */
#define DRF_DEM_RUNQ 0.05           /* run-queue wait, s/s */
#define DRF_DEM_CPU_PSI 0.05
#define DRF_DEM_MEM_PSI 0.01
#define DRF_DEM_IO_PSI 0.05

/* Why the effective demand is what it is. */
enum drf_dem_why {
	DRF_DEM_WHY_DECLARED,   /* not measured yet: the declared demand */
	DRF_DEM_WHY_STEADY,     /* use within the dead band */
	DRF_DEM_WHY_PRESSURE,   /* rose: held at its level and under pressure */
	DRF_DEM_WHY_GREW,       /* rose: use above the effective demand */
	DRF_DEM_WHY_FELL,       /* fell towards use plus headroom */
	DRF_DEM_WHY_RECLAIM,    /* memory: stepping down towards the working set */
	DRF_DEM_WHY_WAITING,    /* use is lower, but not for long enough yet */
	DRF_DEM_WHY_LEARNED,    /* kept at a level that proved too small lately */
	DRF_DEM_WHY_AT_BOUND,   /* wants more, but at its declared demand */
	DRF_DEM_WHY_UNKNOWN,    /* use not measured this tick: kept */
	DRF_DEM_WHY_RESTORED,   /* taken back from before a restart */
	DRF_DEM_NWHY,
};

/* One tenant's observed-demand state, kept across ticks (and reloads, by name). */
struct drf_dem_state {
	bool started;
	double eff[DRF_NRES];        /* effective demand; meaningful once started */
	double learned[DRF_NRES];    /* a level that proved too small; 0: none */
	uint64_t learned_tick[DRF_NRES];
	unsigned below[DRF_NRES];    /* ticks in a row below the band */
	uint64_t changed_tick[DRF_NRES];
	int why[DRF_NRES];           /* enum drf_dem_why: this tick's verdict */
	int changed_why[DRF_NRES];   /* enum drf_dem_why: the reason of the last change */
	uint64_t changes;            /* times any entry of eff changed */
};

/* What a tick measured of one tenant, in resource units. */
struct drf_dem_input {
	double bound[DRF_NRES];      /* declared demand capped at capacity; 0: needs none */
	bool part[DRF_NRES];         /* the resource takes part (capacity > 0) */
	double alloc[DRF_NRES];      /* allocation in force */
	double limit[DRF_NRES];      /* hard limit in force; INFINITY: none */
	double use[DRF_NRES];        /* over the last tick; NAN: unknown */
	unsigned pressured;          /* bits (1 << r): a pressure signal fired */
	unsigned capped;             /* bits (1 << r): its hard limit held it back (throttled, reclaimed) */
	double working_set;          /* bytes; NAN: unknown */
};

/*
 * The pressure bits of a tenant from its last tick's measurements (use.h):
 * cpu throttling, run-queue wait or cpu PSI; memory.events high or max rising,
 * or memory PSI; IO PSI; network drops by the policer.
 */
unsigned drf_dem_pressure(const struct drf_tenant_use *u);

/*
 * The bits of the resources on which the tenant's hard limit held it back in
 * the last tick: cpu.max throttling; memory.events high or max rising; IO or
 * network at their limit. Held back, it counts as held at its level whatever
 * its use (a busy host can leave it below its quota).
 */
unsigned drf_dem_capped(const struct drf_tenant_use *u);

/*
 * One tick at tick number `tick` (counting up): updates s from in. Returns true
 * if any effective demand changed. A tenant not started takes its bounds.
 */
bool drf_dem_update(struct drf_dem_state *s, const struct drf_dem_input *in, uint64_t tick);

/* "declared", "steady", "pressure", ... */
const char *drf_dem_why_name(int why);

#endif
