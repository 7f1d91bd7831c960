// SPDX-License-Identifier: MIT
/* Observed demand (see demand.h). */
#include "demand.h"

#include <math.h>

#include "use.h"

static const char *const why_names[DRF_DEM_NWHY] = {
	[DRF_DEM_WHY_DECLARED] = "declared",
	[DRF_DEM_WHY_STEADY] = "steady",
	[DRF_DEM_WHY_PRESSURE] = "pressure",
	[DRF_DEM_WHY_GREW] = "grew",
	[DRF_DEM_WHY_FELL] = "fell",
	[DRF_DEM_WHY_RECLAIM] = "reclaim",
	[DRF_DEM_WHY_WAITING] = "waiting",
	[DRF_DEM_WHY_LEARNED] = "learned",
	[DRF_DEM_WHY_AT_BOUND] = "at-declared",
	[DRF_DEM_WHY_UNKNOWN] = "unknown",
	[DRF_DEM_WHY_RESTORED] = "restored",
};

const char *drf_dem_why_name(int why)
{
	return why >= 0 && why < DRF_DEM_NWHY ? why_names[why] : "?";
}

static bool above(double x, double threshold)
{
	return !isnan(x) && x >= threshold;
}

/* Use at (or above) its hard limit: for io and network, that is the pressure. */
static bool at_limit(const struct drf_tenant_use *u, int r)
{
	return isfinite(u->limit[r]) && above(u->use_tick[r], DRF_DEM_HELD * u->limit[r]);
}

/* Use at (or above) 90% of its allocation: egress held at its HTB rate (share mode). */
static bool at_alloc(const struct drf_tenant_use *u, int r)
{
	return u->alloc[r] > 0 && above(u->use_tick[r], DRF_DEM_HELD * u->alloc[r]);
}

unsigned drf_dem_pressure(const struct drf_tenant_use *u)
{
	const double *p = u->pressure, *rt = u->rate_tick;
	unsigned bits = 0;

	if (above(p[DRF_PRESSURE_CPU_THROTTLED], DRF_DEM_CPU_THROTTLED) ||
	    above(p[DRF_PRESSURE_RUNQ], DRF_DEM_RUNQ) || above(p[DRF_PRESSURE_CPU_SOME], DRF_DEM_CPU_PSI))
		bits |= 1u << DRF_RES_CPU;
	/*
	 * Memory as senpai sees it: stalls (PSI), or hitting memory.max. Reclaim at
	 * memory.high alone (page cache dropped) is no pressure.
	 */
	if (rt[DRF_CTR_MEM_EVENTS_MAX] > 0 || above(p[DRF_PRESSURE_MEMORY_SOME], DRF_DEM_MEM_PSI))
		bits |= 1u << DRF_RES_MEMORY;
	/* IO PSI is one signal for both directions: it counts for a direction in use. */
	for (int r = DRF_RES_IO_READ; r <= DRF_RES_IO_WRITE; r++)
		if ((above(p[DRF_PRESSURE_IO_SOME], DRF_DEM_IO_PSI) && u->use_tick[r] > 0) ||
		    at_limit(u, r))
			bits |= 1u << r;
	/* Egress held at its ceiling, or at its HTB rate (the link is full: it would borrow). */
	if (at_limit(u, DRF_RES_NET) || at_alloc(u, DRF_RES_NET))
		bits |= 1u << DRF_RES_NET;
	if (rt[DRF_CTR_NET_RX_DROPPED] > 0 || at_limit(u, DRF_RES_NET_IN))
		bits |= 1u << DRF_RES_NET_IN;
	return bits;
}

unsigned drf_dem_capped(const struct drf_tenant_use *u)
{
	unsigned bits = 0;

	if (above(u->pressure[DRF_PRESSURE_CPU_THROTTLED], DRF_DEM_CPU_THROTTLED))
		bits |= 1u << DRF_RES_CPU;
	if (u->rate_tick[DRF_CTR_MEM_EVENTS_HIGH] > 0 || u->rate_tick[DRF_CTR_MEM_EVENTS_MAX] > 0)
		bits |= 1u << DRF_RES_MEMORY;
	for (int r = DRF_RES_IO_READ; r < DRF_NRES; r++)
		if (at_limit(u, r))
			bits |= 1u << r;
	if (at_alloc(u, DRF_RES_NET))
		bits |= 1u << DRF_RES_NET;
	/* The policer dropped its packets: held back, whatever TCP made of its rate. */
	if (u->rate_tick[DRF_CTR_NET_RX_DROPPED] > 0)
		bits |= 1u << DRF_RES_NET_IN;
	return bits;
}

static double clamp(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

/* One resource; returns the new effective demand and sets *why. */
static double step(struct drf_dem_state *s, const struct drf_dem_input *in, int r, uint64_t tick,
		   int *why)
{
	double b = in->bound[r], e = s->eff[r], u = in->use[r];
	double floor = b / DRF_DEM_FLOOR_DIV, level, want, target;

	if (!(b > 0))
		return *why = DRF_DEM_WHY_DECLARED, 0;
	/* Memory: the working set, not memory.current (page cache is not demand). */
	if (r == DRF_RES_MEMORY && !isnan(in->working_set))
		u = in->working_set;
	if (isnan(u))
		return *why = DRF_DEM_WHY_UNKNOWN, e;
	/* A learned level expires. */
	if (s->learned[r] > 0 && tick - s->learned_tick[r] >= DRF_DEM_LEARN_TICKS)
		s->learned[r] = 0;
	want = u * (1 + DRF_DEM_HEADROOM);
	level = fmin(in->alloc[r], in->limit[r]);
	if (!(level > 0))
		level = e;
	/* Held at its level and under pressure: it wants more, multiplicatively. */
	if ((in->pressured & (1u << r)) &&
	    ((in->capped & (1u << r)) || u >= DRF_DEM_HELD * level)) {
		s->below[r] = 0;
		if (e >= b)
			return *why = DRF_DEM_WHY_AT_BOUND, b;
		s->learned[r] = e;
		s->learned_tick[r] = tick;
		*why = DRF_DEM_WHY_PRESSURE;
		return clamp(fmax(2 * e, want), floor, b);
	}
	/* Borrowing above its effective demand. */
	if (want > e * (1 + DRF_DEM_BAND)) {
		s->below[r] = 0;
		if (e >= b)
			return *why = DRF_DEM_WHY_AT_BOUND, b;
		*why = DRF_DEM_WHY_GREW;
		return clamp(want, floor, b);
	}
	target = clamp(want, floor, b);
	/* Below its level but under pressure (a busy host): not a sign of less demand. */
	if (!(target < e * (1 - DRF_DEM_BAND)) || (in->pressured & (1u << r))) {
		s->below[r] = 0;
		*why = DRF_DEM_WHY_STEADY;
		return e;
	}
	/*
	 * A level that proved too small holds while the tenant uses at least half
	 * of it; below that it went (nearly) idle, and falls as any other.
	 */
	if (s->learned[r] > 0 && u < s->learned[r] / 2)
		s->learned[r] = 0;
	if (s->learned[r] > 0 && e <= s->learned[r] * (1 + DRF_DEM_HEADROOM)) {
		s->below[r] = 0;
		*why = DRF_DEM_WHY_LEARNED;
		return e;
	}
	if (++s->below[r] < DRF_DEM_HOLD || tick - s->changed_tick[r] < DRF_DEM_HOLD) {
		*why = DRF_DEM_WHY_WAITING;
		return e;
	}
	if (s->learned[r] > 0)
		target = fmax(target, s->learned[r] * (1 + DRF_DEM_HEADROOM));
	if (r == DRF_RES_MEMORY) {
		*why = DRF_DEM_WHY_RECLAIM;
		return fmax(target, e * (1 - DRF_DEM_MEM_STEP));
	}
	*why = DRF_DEM_WHY_FELL;
	return target;
}

bool drf_dem_update(struct drf_dem_state *s, const struct drf_dem_input *in, uint64_t tick)
{
	bool changed = false;

	if (!s->started) {
		for (int r = 0; r < DRF_NRES; r++) {
			s->eff[r] = in->part[r] ? in->bound[r] : 0;
			s->why[r] = s->changed_why[r] = DRF_DEM_WHY_DECLARED;
			s->changed_tick[r] = tick;
			s->below[r] = 0;
			s->learned[r] = 0;
		}
		s->started = true;
		return true;
	}
	for (int r = 0; r < DRF_NRES; r++) {
		double e;
		int why;

		if (!in->part[r]) {
			s->eff[r] = 0;
			continue;
		}
		/* The bound moved (a reload): the demand stays within it. */
		if (s->eff[r] > in->bound[r] || (in->bound[r] > 0 && !(s->eff[r] > 0))) {
			s->eff[r] = in->bound[r];
			s->changed_why[r] = DRF_DEM_WHY_DECLARED;
			s->changed_tick[r] = tick;
			changed = true;
		} else if (s->eff[r] < in->bound[r] / DRF_DEM_FLOOR_DIV) {
			/* The declared demand rose: never below its floor. */
			s->eff[r] = in->bound[r] / DRF_DEM_FLOOR_DIV;
			s->changed_why[r] = DRF_DEM_WHY_DECLARED;
			s->changed_tick[r] = tick;
			changed = true;
		}
		e = step(s, in, r, tick, &why);
		s->why[r] = why;
		if (e != s->eff[r]) {
			s->changed_why[r] = why;
			s->eff[r] = e;
			s->changed_tick[r] = tick;
			s->below[r] = 0;
			changed = true;
		}
	}
	if (changed)
		s->changes++;
	return changed;
}
