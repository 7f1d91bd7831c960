/* SPDX-License-Identifier: MIT */
/*
 * Usage against allocation. Each tick the daemon samples every tenant's
 * counters and gauges (cgroup files, the BPF probes, the network programs);
 * from the samples this computes the measured use of each resource over the
 * last tick and over the last minute, and sets it against the allocation and
 * the limit the knobs enforce. Pure: no I/O, times passed in.
 *
 * Units, as everywhere in drfd: cpu in cores, memory in bytes, io in bytes/s,
 * network in bits/s. NAN means "not known" (no probe, no such file, not yet
 * two samples); INFINITY means "no limit".
 */
#ifndef DRF_USE_H
#define DRF_USE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "demand.h"
#include "res.h"

/* Cumulative counters (never decrease while the cgroup lives). */
enum drf_ctr {
	DRF_CTR_CPU_USEC,            /* cpu.stat usage_usec */
	DRF_CTR_CPU_THROTTLED_USEC,  /* cpu.stat throttled_usec */
	DRF_CTR_CPU_NR_THROTTLED,    /* cpu.stat nr_throttled */
	DRF_CTR_ONCPU_NS,            /* probe: on-CPU time */
	DRF_CTR_RUNQ_NS,             /* probe: time runnable but waiting for a CPU */
	DRF_CTR_RUNQ_COUNT,          /* probe: waits (each switch-in after a wakeup or preemption) */
	DRF_CTR_IO_RBYTES,           /* io.stat, io-device (every device without one) */
	DRF_CTR_IO_WBYTES,
	DRF_CTR_IO_RIOS,
	DRF_CTR_IO_WIOS,
	DRF_CTR_PROBE_RBYTES,        /* probe: bytes of requests issued to the device */
	DRF_CTR_PROBE_WBYTES,
	DRF_CTR_PROBE_RREQS,         /* probe: requests issued */
	DRF_CTR_PROBE_WREQS,
	DRF_CTR_PROBE_LAT_NS,        /* probe: issue-to-completion time of completed requests */
	DRF_CTR_PROBE_DONE,          /* probe: requests completed */
	DRF_CTR_NET_TX_BYTES,        /* network programs, net-device */
	DRF_CTR_NET_TX_PACKETS,
	DRF_CTR_NET_RX_BYTES,
	DRF_CTR_NET_RX_PACKETS,
	DRF_CTR_NET_RX_DROPPED,      /* ingress policer */
	DRF_CTR_NET_RX_MARKED,
	DRF_CTR_MEM_EVENTS_HIGH,     /* memory.events */
	DRF_CTR_MEM_EVENTS_MAX,
	DRF_CTR_MEM_EVENTS_OOM_KILL,
	DRF_CTR_PSI_CPU_SOME_USEC,   /* cpu.pressure, memory.pressure, io.pressure totals */
	DRF_CTR_PSI_CPU_FULL_USEC,
	DRF_CTR_PSI_MEMORY_SOME_USEC,
	DRF_CTR_PSI_MEMORY_FULL_USEC,
	DRF_CTR_PSI_IO_SOME_USEC,
	DRF_CTR_PSI_IO_FULL_USEC,
	DRF_NCTR,
};

enum drf_gauge {
	DRF_GAUGE_MEM_CURRENT,       /* memory.current */
	DRF_GAUGE_MEM_WORKING_SET,   /* memory.stat: anon + file - inactive_file */
	DRF_NGAUGE,
};

/* log2 histograms: bucket b counts waits of [2^(b-1), 2^b) microseconds (b 0: under 1 us). */
#define DRF_HIST_BUCKETS 24

/* Pressure signals, as fractions of the interval (0..1) spent stalled. */
enum drf_pressure {
	DRF_PRESSURE_RUNQ,           /* probe: run-queue wait per second (can exceed 1: many threads) */
	DRF_PRESSURE_CPU_THROTTLED,  /* cpu.max throttling: periods throttled per period elapsed */
	DRF_PRESSURE_CPU_SOME,       /* PSI */
	DRF_PRESSURE_MEMORY_SOME,
	DRF_PRESSURE_MEMORY_FULL,
	DRF_PRESSURE_IO_SOME,
	DRF_PRESSURE_IO_FULL,
	DRF_NPRESSURE,
};

/* One tenant's counters at one instant. */
struct drf_sample {
	uint64_t t_us;               /* CLOCK_MONOTONIC, usec; 0: no sample */
	double c[DRF_NCTR];          /* NAN: not known */
};

/* The minute: samples kept at least DRF_USE_STEP_US apart. */
#define DRF_USE_RING 14
#define DRF_USE_STEP_US 5000000ull
#define DRF_USE_WINDOW_US 60000000ull

struct drf_tenant_use {
	/* Inputs, set by the daemon each tick. */
	double declared[DRF_NRES];   /* the declared demand as a cap; INFINITY: none declared */
	double alloc[DRF_NRES];      /* the allocation in force */
	double limit[DRF_NRES];      /* what the knobs enforce as a hard limit; INFINITY: none */
	double weight;
	double gauge[DRF_NGAUGE];
	uint64_t runq_hist[DRF_HIST_BUCKETS];   /* cumulative, probe */
	uint64_t io_lat_hist[DRF_HIST_BUCKETS]; /* request latency, cumulative, probe */

	/* History (drf_use_push). */
	struct drf_sample now, prev;
	struct drf_sample ring[DRF_USE_RING];
	size_t ring_n, ring_head;    /* ring_head: the newest */

	/* Derived (drf_use_push, drf_use_assess). */
	double rate_tick[DRF_NCTR];  /* per second, over the last tick; NAN: unknown */
	double rate_min[DRF_NCTR];   /* per second, over up to the last minute */
	double window_min_s;         /* the longest such window of a known counter, s (0: none) */
	double use_tick[DRF_NRES];   /* measured use, resource units */
	double use_min[DRF_NRES];
	double gap[DRF_NRES];        /* alloc - use_tick: room left (negative: over) */
	double pressure[DRF_NPRESSURE]; /* over the last tick; NAN: unknown */
	double dominant_alloc, dominant_use;   /* shares of capacity */
	int dominant_alloc_res, dominant_use_res; /* -1: none */
	unsigned not_holding;        /* bits (1 << r): use above what the limit allows */

	/* Observed demand (demand.h), when [agent] demand = observed. */
	struct drf_dem_state dem;
	unsigned dem_pressured;      /* the pressure bits of the last update */
};

/*
 * Records the sample s (counters at s->t_us) as the tenant's newest and
 * computes the rates over the last tick and the last minute, and use per
 * resource. A counter that went backwards (the cgroup was recreated) restarts
 * the history. Use comes from cpu.stat and io.stat; with probes, the probes'
 * on-CPU time and IO bytes stand in where those are not known.
 */
void drf_use_push(struct drf_tenant_use *u, const struct drf_sample *s, bool probes);

/* The shortest window over which use above a limit counts as not holding. */
#define DRF_USE_VERDICT_S 5.0

/*
 * Dominant shares of allocation and use over the capacities (0: the resource
 * takes no part), the gap, and the not-holding flags: use over the last
 * minute (once it spans DRF_USE_VERDICT_S) above its limit by more than the
 * tolerance (cpu 5%, io and network 10%); memory: current above memory.max by
 * more than a page, at once.
 */
void drf_use_assess(struct drf_tenant_use *u, const double capacity[DRF_NRES]);

/* Jain's fairness index of x[0..n-1] (1: all equal; 1/n: one has all); NAN for n = 0 or all 0. */
double drf_jain_index(const double *x, size_t n);

/* The bucket of a wait of ns nanoseconds. */
unsigned drf_hist_bucket(uint64_t ns);
/* The upper bound of bucket b in seconds (INFINITY for the last). */
double drf_hist_upper_s(unsigned b);

/* Names for JSON and metrics: "cpu_usage_usec", ..., "runq", "cpu_some", ... */
const char *drf_ctr_name(enum drf_ctr c);
const char *drf_pressure_name(enum drf_pressure p);

#endif
