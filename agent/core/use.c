// SPDX-License-Identifier: MIT
/* Usage against allocation (see use.h). */
#include "use.h"

#include <math.h>
#include <string.h>

static const char *const ctr_names[DRF_NCTR] = {
	[DRF_CTR_CPU_USEC] = "cpu_usage_usec",
	[DRF_CTR_CPU_THROTTLED_USEC] = "cpu_throttled_usec",
	[DRF_CTR_CPU_NR_THROTTLED] = "cpu_nr_throttled",
	[DRF_CTR_ONCPU_NS] = "oncpu_ns",
	[DRF_CTR_RUNQ_NS] = "runq_wait_ns",
	[DRF_CTR_RUNQ_COUNT] = "runq_waits",
	[DRF_CTR_IO_RBYTES] = "io_stat_rbytes",
	[DRF_CTR_IO_WBYTES] = "io_stat_wbytes",
	[DRF_CTR_IO_RIOS] = "io_stat_rios",
	[DRF_CTR_IO_WIOS] = "io_stat_wios",
	[DRF_CTR_PROBE_RBYTES] = "io_rbytes",
	[DRF_CTR_PROBE_WBYTES] = "io_wbytes",
	[DRF_CTR_PROBE_RREQS] = "io_rreqs",
	[DRF_CTR_PROBE_WREQS] = "io_wreqs",
	[DRF_CTR_PROBE_LAT_NS] = "io_latency_ns",
	[DRF_CTR_PROBE_DONE] = "io_completed",
	[DRF_CTR_NET_TX_BYTES] = "net_tx_bytes",
	[DRF_CTR_NET_TX_PACKETS] = "net_tx_packets",
	[DRF_CTR_NET_RX_BYTES] = "net_rx_bytes",
	[DRF_CTR_NET_RX_PACKETS] = "net_rx_packets",
	[DRF_CTR_NET_RX_DROPPED] = "net_rx_dropped",
	[DRF_CTR_NET_RX_MARKED] = "net_rx_marked",
	[DRF_CTR_MEM_EVENTS_HIGH] = "memory_events_high",
	[DRF_CTR_MEM_EVENTS_MAX] = "memory_events_max",
	[DRF_CTR_MEM_EVENTS_OOM_KILL] = "memory_events_oom_kill",
	[DRF_CTR_PSI_CPU_SOME_USEC] = "psi_cpu_some_usec",
	[DRF_CTR_PSI_CPU_FULL_USEC] = "psi_cpu_full_usec",
	[DRF_CTR_PSI_MEMORY_SOME_USEC] = "psi_memory_some_usec",
	[DRF_CTR_PSI_MEMORY_FULL_USEC] = "psi_memory_full_usec",
	[DRF_CTR_PSI_IO_SOME_USEC] = "psi_io_some_usec",
	[DRF_CTR_PSI_IO_FULL_USEC] = "psi_io_full_usec",
};

static const char *const pressure_names[DRF_NPRESSURE] = {
	[DRF_PRESSURE_RUNQ] = "runq_wait",
	[DRF_PRESSURE_CPU_THROTTLED] = "cpu_throttled",
	[DRF_PRESSURE_CPU_SOME] = "cpu_some",
	[DRF_PRESSURE_MEMORY_SOME] = "memory_some",
	[DRF_PRESSURE_MEMORY_FULL] = "memory_full",
	[DRF_PRESSURE_IO_SOME] = "io_some",
	[DRF_PRESSURE_IO_FULL] = "io_full",
};

const char *drf_ctr_name(enum drf_ctr c)
{
	return (unsigned)c < DRF_NCTR ? ctr_names[c] : "?";
}

const char *drf_pressure_name(enum drf_pressure p)
{
	return (unsigned)p < DRF_NPRESSURE ? pressure_names[p] : "?";
}

unsigned drf_hist_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b = 0;

	while (us && b < DRF_HIST_BUCKETS - 1) {
		us >>= 1;
		b++;
	}
	return b;
}

double drf_hist_upper_s(unsigned b)
{
	if (b >= DRF_HIST_BUCKETS - 1)
		return INFINITY;
	return ldexp(1.0, (int)b) * 1e-6;
}

double drf_jain_index(const double *x, size_t n)
{
	double s = 0, s2 = 0;

	for (size_t i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	if (n == 0 || !(s2 > 0))
		return NAN;
	return s * s / ((double)n * s2);
}

/* Per second between two samples; NAN if either is unknown or the counter went back. */
static double rate(const struct drf_sample *a, const struct drf_sample *b, enum drf_ctr c)
{
	double dt = (double)(b->t_us - a->t_us) / 1e6;

	if (!a->t_us || !(dt > 0) || isnan(a->c[c]) || isnan(b->c[c]) || b->c[c] < a->c[c])
		return NAN;
	return (b->c[c] - a->c[c]) / dt;
}

/* Whether any known counter went backwards: the cgroup was recreated. */
static bool went_back(const struct drf_sample *a, const struct drf_sample *b)
{
	for (int c = 0; c < DRF_NCTR; c++)
		if (!isnan(a->c[c]) && !isnan(b->c[c]) && b->c[c] < a->c[c])
			return true;
	return false;
}

static double first_known(double a, double b)
{
	return isnan(a) ? b : a;
}

static void resources(const double *rt, const double *gauge, bool probes, double *use)
{
	double cpu_probe = rt[DRF_CTR_ONCPU_NS] / 1e9, cpu_cg = rt[DRF_CTR_CPU_USEC] / 1e6;
	double rd_probe = rt[DRF_CTR_PROBE_RBYTES], wr_probe = rt[DRF_CTR_PROBE_WBYTES];

	/*
	 * The kernel's own accounts first: cpu.stat counts what sched_stat_runtime
	 * misses (RT and deadline tasks on kernels before 6.8), io.stat what a
	 * request-level probe cannot see (bio-based devices). The probes stand in
	 * where a file is missing, and are cross-checked against the files.
	 */
	use[DRF_RES_CPU] = probes ? first_known(cpu_cg, cpu_probe) : cpu_cg;
	use[DRF_RES_MEMORY] = gauge[DRF_GAUGE_MEM_CURRENT];
	use[DRF_RES_IO_READ] = probes ? first_known(rt[DRF_CTR_IO_RBYTES], rd_probe)
				      : rt[DRF_CTR_IO_RBYTES];
	use[DRF_RES_IO_WRITE] = probes ? first_known(rt[DRF_CTR_IO_WBYTES], wr_probe)
				       : rt[DRF_CTR_IO_WBYTES];
	use[DRF_RES_NET] = rt[DRF_CTR_NET_TX_BYTES] * 8;
	use[DRF_RES_NET_IN] = rt[DRF_CTR_NET_RX_BYTES] * 8;
}

void drf_use_push(struct drf_tenant_use *u, const struct drf_sample *s, bool probes)
{

	if (u->now.t_us && (s->t_us <= u->now.t_us || went_back(&u->now, s))) {
		/* A clock that did not move, or a recreated cgroup: start over. */
		u->ring_n = 0;
		u->now.t_us = 0;
	}
	u->prev = u->now;
	u->now = *s;
	/* The minute's ring: a sample at least DRF_USE_STEP_US after the newest. */
	if (!u->ring_n || s->t_us - u->ring[u->ring_head].t_us >= DRF_USE_STEP_US) {
		u->ring_head = u->ring_n ? (u->ring_head + 1) % DRF_USE_RING : 0;
		u->ring[u->ring_head] = *s;
		if (u->ring_n < DRF_USE_RING)
			u->ring_n++;
	}
	/*
	 * Per counter, from the oldest ring sample within the window that knows it
	 * (a probe's entry may be younger than the cgroup files), else from the
	 * previous tick.
	 */
	u->window_min_s = 0;
	for (int c = 0; c < DRF_NCTR; c++) {
		const struct drf_sample *oldest = NULL;

		for (size_t k = u->ring_n; k-- > 0;) {
			const struct drf_sample *r =
				&u->ring[(u->ring_head + DRF_USE_RING - k) % DRF_USE_RING];

			if (r->t_us < s->t_us && s->t_us - r->t_us <= DRF_USE_WINDOW_US + DRF_USE_STEP_US &&
			    !isnan(r->c[c])) {
				oldest = r;
				break;
			}
		}
		if (!oldest && u->prev.t_us)
			oldest = &u->prev;
		u->rate_tick[c] = rate(&u->prev, s, c);
		u->rate_min[c] = oldest ? rate(oldest, s, c) : NAN;
		if (oldest && !isnan(u->rate_min[c]) &&
		    (double)(s->t_us - oldest->t_us) / 1e6 > u->window_min_s)
			u->window_min_s = (double)(s->t_us - oldest->t_us) / 1e6;
	}
	resources(u->rate_tick, u->gauge, probes, u->use_tick);
	resources(u->rate_min, u->gauge, probes, u->use_min);
	u->pressure[DRF_PRESSURE_RUNQ] = u->rate_tick[DRF_CTR_RUNQ_NS] / 1e9;
	/* cpu.max's period is 100 ms unless set otherwise: throttled periods per period. */
	u->pressure[DRF_PRESSURE_CPU_THROTTLED] = u->rate_tick[DRF_CTR_CPU_NR_THROTTLED] / 10;
	if (u->pressure[DRF_PRESSURE_CPU_THROTTLED] > 1)
		u->pressure[DRF_PRESSURE_CPU_THROTTLED] = 1;
	u->pressure[DRF_PRESSURE_CPU_SOME] = u->rate_tick[DRF_CTR_PSI_CPU_SOME_USEC] / 1e6;
	u->pressure[DRF_PRESSURE_MEMORY_SOME] = u->rate_tick[DRF_CTR_PSI_MEMORY_SOME_USEC] / 1e6;
	u->pressure[DRF_PRESSURE_MEMORY_FULL] = u->rate_tick[DRF_CTR_PSI_MEMORY_FULL_USEC] / 1e6;
	u->pressure[DRF_PRESSURE_IO_SOME] = u->rate_tick[DRF_CTR_PSI_IO_SOME_USEC] / 1e6;
	u->pressure[DRF_PRESSURE_IO_FULL] = u->rate_tick[DRF_CTR_PSI_IO_FULL_USEC] / 1e6;
}

/* How far above its limit use may go before it counts as not holding. */
static const double tolerance[DRF_NRES] = {
	[DRF_RES_CPU] = 0.05,     [DRF_RES_MEMORY] = 0,      [DRF_RES_IO_READ] = 0.10,
	[DRF_RES_IO_WRITE] = 0.10, [DRF_RES_NET] = 0.10,      [DRF_RES_NET_IN] = 0.10,
};

void drf_use_assess(struct drf_tenant_use *u, const double capacity[DRF_NRES])
{
	u->dominant_alloc = u->dominant_use = 0;
	u->dominant_alloc_res = u->dominant_use_res = -1;
	u->not_holding = 0;
	for (int r = 0; r < DRF_NRES; r++) {
		double use = u->use_min[r];

		u->gap[r] = u->alloc[r] - u->use_tick[r];
		if (!(capacity[r] > 0))
			continue;
		if (u->alloc[r] / capacity[r] > u->dominant_alloc || u->dominant_alloc_res < 0) {
			u->dominant_alloc = u->alloc[r] / capacity[r];
			u->dominant_alloc_res = r;
		}
		if (!isnan(u->use_tick[r]) &&
		    (u->use_tick[r] / capacity[r] > u->dominant_use || u->dominant_use_res < 0)) {
			u->dominant_use = u->use_tick[r] / capacity[r];
			u->dominant_use_res = r;
		}
		if (r == DRF_RES_MEMORY) {
			/* memory.max is a hard wall: over it by more than a page is a failure. */
			if (isfinite(u->limit[r]) && u->gauge[DRF_GAUGE_MEM_CURRENT] > u->limit[r] + 4096)
				u->not_holding |= 1u << r;
			continue;
		}
		/* A burst over a tick or two is no proof: only seconds of use above the limit. */
		if (u->window_min_s < DRF_USE_VERDICT_S)
			continue;
		/*
		 * Over the minute and over the last tick: a limit just lowered (observed
		 * demand) is not failing because the minute still holds use from before.
		 */
		if (isfinite(u->limit[r]) && !isnan(use) && use > u->limit[r] * (1 + tolerance[r]) &&
		    !(u->use_tick[r] <= u->limit[r] * (1 + tolerance[r])))
			u->not_holding |= 1u << r;
	}
	if (u->dominant_use_res < 0)
		u->dominant_use = NAN;
}
