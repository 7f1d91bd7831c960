// SPDX-License-Identifier: MIT
/*
 * Observed demand: the pure rules (agent/core/demand.c) and the daemon's online
 * DRF step (agent/daemon/online.c) over a fake cgroup tree: an idle tenant's
 * share goes to the busy ones within the documented ticks and comes back
 * within the documented bound, and a steady load does not make knobs flap.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "demand.h"
#include "fakedrfd.h"
#include "statedir.h"
#include "testlib.h"
#include "use.h"

#define SEC 1000000ull
#define G (1024.0 * 1024 * 1024)

/* One tenant, cpu bound 2 of capacity 4, memory bound 8G. */
static struct drf_dem_input input(void)
{
	struct drf_dem_input in = { .working_set = NAN };

	for (int r = 0; r < DRF_NRES; r++) {
		in.limit[r] = INFINITY;
		in.use[r] = NAN;
	}
	in.part[DRF_RES_CPU] = in.part[DRF_RES_MEMORY] = true;
	in.bound[DRF_RES_CPU] = 2;
	in.bound[DRF_RES_MEMORY] = 8 * G;
	in.alloc[DRF_RES_CPU] = 2;
	in.alloc[DRF_RES_MEMORY] = 8 * G;
	return in;
}

static void test_starts_declared(void **state)
{
	struct drf_dem_state s = { 0 };
	struct drf_dem_input in = input();

	(void)state;
	assert_true(drf_dem_update(&s, &in, 1));
	assert_true(s.eff[DRF_RES_CPU] == 2);
	assert_true(s.eff[DRF_RES_MEMORY] == 8 * G);
	assert_true(s.eff[DRF_RES_IO_READ] == 0);
	assert_int_equal(s.why[DRF_RES_CPU], DRF_DEM_WHY_DECLARED);
	/* Use unknown: kept. */
	assert_false(drf_dem_update(&s, &in, 2));
	assert_int_equal(s.why[DRF_RES_CPU], DRF_DEM_WHY_UNKNOWN);
	assert_true(s.eff[DRF_RES_CPU] == 2);
}

/* Idle: after DRF_DEM_HOLD ticks below the band, cpu falls to the floor at once. */
static void test_idle_falls_after_hold(void **state)
{
	struct drf_dem_state s = { 0 };
	struct drf_dem_input in = input();
	uint64_t t = 1;

	(void)state;
	drf_dem_update(&s, &in, t++);
	in.use[DRF_RES_CPU] = 0;
	for (int k = 1; k < DRF_DEM_HOLD; k++) {
		assert_false(drf_dem_update(&s, &in, t++));
		assert_int_equal(s.why[DRF_RES_CPU], DRF_DEM_WHY_WAITING);
	}
	assert_true(drf_dem_update(&s, &in, t++));
	assert_int_equal(s.why[DRF_RES_CPU], DRF_DEM_WHY_FELL);
	assert_true(fabs(s.eff[DRF_RES_CPU] - 2 / DRF_DEM_FLOOR_DIV) < 1e-12);
	/* Memory's use is unknown here: kept. */
	assert_true(s.eff[DRF_RES_MEMORY] == 8 * G);
	/* Stays there. */
	for (int k = 0; k < 10; k++)
		assert_false(drf_dem_update(&s, &in, t++));
}

/* A burst of one tick below the band is no reason to fall. */
static void test_one_quiet_tick_is_not_idle(void **state)
{
	struct drf_dem_state s = { 0 };
	struct drf_dem_input in = input();
	uint64_t t = 1;

	(void)state;
	drf_dem_update(&s, &in, t++);
	for (int k = 0; k < 20; k++) {
		in.use[DRF_RES_CPU] = k % 2 ? 0 : 1.9;
		assert_false(drf_dem_update(&s, &in, t++));
	}
	assert_true(s.eff[DRF_RES_CPU] == 2);
}

/*
 * Back from idle: held at its level (cpu.max at the allocation) and throttled,
 * the demand doubles each tick: from the floor B/16 to B in 4 ticks.
 */
static void test_return_from_idle_bound(void **state)
{
	struct drf_dem_state s = { 0 };
	struct drf_dem_input in = input();
	uint64_t t = 1;
	int ticks = 0;

	(void)state;
	drf_dem_update(&s, &in, t++);
	in.use[DRF_RES_CPU] = 0;
	for (int k = 0; k < 5; k++)
		drf_dem_update(&s, &in, t++);
	assert_true(s.eff[DRF_RES_CPU] < 0.2);
	while (s.eff[DRF_RES_CPU] < 2 && ticks < 100) {
		/* It gets what it asks (the host is free) and uses all of it, throttled. */
		in.alloc[DRF_RES_CPU] = in.limit[DRF_RES_CPU] = s.eff[DRF_RES_CPU];
		in.use[DRF_RES_CPU] = s.eff[DRF_RES_CPU];
		in.pressured = 1u << DRF_RES_CPU;
		assert_true(drf_dem_update(&s, &in, t++));
		assert_int_equal(s.why[DRF_RES_CPU], DRF_DEM_WHY_PRESSURE);
		ticks++;
	}
	assert_int_equal(ticks, 4);
	assert_true(s.eff[DRF_RES_CPU] == 2);
	/* At its bound it stays, and says so. */
	assert_false(drf_dem_update(&s, &in, t++));
	assert_int_equal(s.why[DRF_RES_CPU], DRF_DEM_WHY_AT_BOUND);
}

/* Pressure without being held (it uses little of its level) is not demand. */
static void test_pressure_needs_held(void **state)
{
	struct drf_dem_state s = { 0 };
	struct drf_dem_input in = input();
	uint64_t t = 1;

	(void)state;
	drf_dem_update(&s, &in, t++);
	in.use[DRF_RES_CPU] = 0;
	for (int k = 0; k < 3; k++)
		drf_dem_update(&s, &in, t++);
	in.alloc[DRF_RES_CPU] = in.limit[DRF_RES_CPU] = 1; /* more than it wants */
	in.use[DRF_RES_CPU] = 0.1;
	in.pressured = 1u << DRF_RES_CPU;
	assert_false(drf_dem_update(&s, &in, t++));
	assert_true(s.eff[DRF_RES_CPU] == 0.125);
}

/*
 * On a busy host a tenant may get less than its quota without being throttled,
 * and wait on the run queue: under pressure, that is no sign of less demand
 * (the VM test found the demand flapping without this rule).
 */
static void test_busy_host_no_fall(void **state)
{
	struct drf_dem_state s = { 0 };
	struct drf_dem_input in = input();
	uint64_t t = 1;

	(void)state;
	drf_dem_update(&s, &in, t++);
	in.alloc[DRF_RES_CPU] = in.limit[DRF_RES_CPU] = 2.0 / 3;
	in.use[DRF_RES_CPU] = 0.5;
	in.pressured = 1u << DRF_RES_CPU;
	for (int k = 0; k < 20; k++)
		assert_false(drf_dem_update(&s, &in, t++));
	assert_true(s.eff[DRF_RES_CPU] == 2);
	/* Throttled (held back by cpu.max) even below 90% of it: held, and at its bound. */
	in.capped = 1u << DRF_RES_CPU;
	assert_false(drf_dem_update(&s, &in, t++));
	assert_int_equal(s.why[DRF_RES_CPU], DRF_DEM_WHY_AT_BOUND);
}

/* Share mode: borrowing above the effective demand raises it to use plus headroom. */
static void test_grew(void **state)
{
	struct drf_dem_state s = { 0 };
	struct drf_dem_input in = input();
	uint64_t t = 1;

	(void)state;
	drf_dem_update(&s, &in, t++);
	in.use[DRF_RES_CPU] = 0;
	for (int k = 0; k < 3; k++)
		drf_dem_update(&s, &in, t++);
	in.use[DRF_RES_CPU] = 0.8;
	assert_true(drf_dem_update(&s, &in, t++));
	assert_int_equal(s.why[DRF_RES_CPU], DRF_DEM_WHY_GREW);
	assert_true(fabs(s.eff[DRF_RES_CPU] - 1.0) < 1e-12);
	/* Never above the bound. */
	in.use[DRF_RES_CPU] = 3;
	drf_dem_update(&s, &in, t++);
	assert_true(s.eff[DRF_RES_CPU] == 2);
}

/*
 * A steady load with +-10% noise: after it settles, the effective demand does
 * not change, tick after tick.
 */
static void test_steady_load_no_flapping(void **state)
{
	struct drf_dem_state s = { 0 };
	struct drf_dem_input in = input();
	uint64_t t = 1, before;
	unsigned seed = 7;

	(void)state;
	drf_dem_update(&s, &in, t++);
	for (int k = 0; k < 20; k++) {
		in.use[DRF_RES_CPU] = 0.5 * (0.9 + 0.2 * (rand_r(&seed) / (double)RAND_MAX));
		in.alloc[DRF_RES_CPU] = s.eff[DRF_RES_CPU];
		drf_dem_update(&s, &in, t++);
	}
	before = s.changes;
	for (int k = 0; k < 600; k++) {
		in.use[DRF_RES_CPU] = 0.5 * (0.9 + 0.2 * (rand_r(&seed) / (double)RAND_MAX));
		in.alloc[DRF_RES_CPU] = s.eff[DRF_RES_CPU];
		drf_dem_update(&s, &in, t++);
	}
	assert_true(s.changes - before <= 1);
	/* Settled at or above the top of the noise. */
	assert_true(s.eff[DRF_RES_CPU] >= 0.55);
	assert_true(s.eff[DRF_RES_CPU] <= 0.55 * (1 + DRF_DEM_HEADROOM) * (1 + DRF_DEM_BAND));
}

/*
 * Memory shrinks in steps of at most a quarter, down to the working set plus
 * headroom, not to memory.current (page cache is not demand); stalls (PSI)
 * double it, and the level that proved too small is not fallen below again
 * for a while, while the tenant uses at least half of it.
 */
static void test_memory_senpai(void **state)
{
	struct drf_dem_state s = { 0 };
	struct drf_dem_input in = input();
	double prev, floor = 1 * G * (1 + DRF_DEM_HEADROOM);
	uint64_t t = 1;
	int steps = 0;

	(void)state;
	drf_dem_update(&s, &in, t++);
	in.use[DRF_RES_MEMORY] = 3 * G; /* memory.current: 2G of it page cache */
	in.working_set = 1 * G;
	prev = s.eff[DRF_RES_MEMORY];
	for (int k = 0; k < 60; k++) {
		if (drf_dem_update(&s, &in, t++)) {
			assert_true(s.eff[DRF_RES_MEMORY] >= prev * (1 - DRF_DEM_MEM_STEP) - 1);
			assert_int_equal(s.changed_why[DRF_RES_MEMORY], DRF_DEM_WHY_RECLAIM);
			steps++;
		}
		assert_true(s.eff[DRF_RES_MEMORY] >= floor - 1);
		prev = s.eff[DRF_RES_MEMORY];
	}
	/* Down to the working set plus headroom, within the dead band. */
	assert_true(s.eff[DRF_RES_MEMORY] * (1 - DRF_DEM_BAND) <= floor);
	assert_true(s.eff[DRF_RES_MEMORY] < 3 * G);
	floor = s.eff[DRF_RES_MEMORY];
	assert_true(steps >= 5);
	/* Reclaimed at memory.high with no stall: page cache dropped, no rise. */
	in.alloc[DRF_RES_MEMORY] = s.eff[DRF_RES_MEMORY];
	in.capped = 1u << DRF_RES_MEMORY;
	assert_false(drf_dem_update(&s, &in, t++));
	/* Held there and stalling (PSI): doubles. */
	in.pressured = 1u << DRF_RES_MEMORY;
	assert_true(drf_dem_update(&s, &in, t++));
	assert_true(fabs(s.eff[DRF_RES_MEMORY] - 2 * floor) < 1);
	/* Quiet again at 0.8G: it does not go back below 1.25 x the level that was too small. */
	in.pressured = in.capped = 0;
	in.working_set = 0.8 * G;
	for (int k = 0; k < 20; k++)
		drf_dem_update(&s, &in, t++);
	assert_true(s.eff[DRF_RES_MEMORY] >= floor * (1 + DRF_DEM_HEADROOM) - 1);
	/* Until the lesson expires. */
	for (int k = 0; k < DRF_DEM_LEARN_TICKS + 30; k++)
		drf_dem_update(&s, &in, t++);
	assert_true(s.eff[DRF_RES_MEMORY] < floor);
}

/* A level learned before the tenant went idle does not keep its share from the others. */
static void test_learned_level_idle_falls(void **state)
{
	struct drf_dem_state s = { 0 };
	struct drf_dem_input in = input();
	uint64_t t = 1;
	int k;

	(void)state;
	drf_dem_update(&s, &in, t++);
	in.use[DRF_RES_CPU] = 0;
	for (k = 0; k < 3; k++)
		drf_dem_update(&s, &in, t++);
	/* Back: throttled from the floor to its bound. */
	in.pressured = in.capped = 1u << DRF_RES_CPU;
	while (s.eff[DRF_RES_CPU] < 2) {
		in.alloc[DRF_RES_CPU] = in.limit[DRF_RES_CPU] = in.use[DRF_RES_CPU] = s.eff[DRF_RES_CPU];
		drf_dem_update(&s, &in, t++);
	}
	/* Idle again at once: down to the floor within the hold, lesson or not. */
	in.pressured = in.capped = 0;
	in.use[DRF_RES_CPU] = 0;
	for (k = 0; k < 5 && s.eff[DRF_RES_CPU] > 0.125; k++)
		drf_dem_update(&s, &in, t++);
	assert_true(s.eff[DRF_RES_CPU] == 0.125);
	assert_true(k <= DRF_DEM_HOLD);
}

static void test_pressure_bits(void **state)
{
	struct drf_tenant_use u;

	(void)state;
	memset(&u, 0, sizeof(u));
	for (int p = 0; p < DRF_NPRESSURE; p++)
		u.pressure[p] = NAN;
	for (int c = 0; c < DRF_NCTR; c++)
		u.rate_tick[c] = NAN;
	for (int r = 0; r < DRF_NRES; r++) {
		u.limit[r] = INFINITY;
		u.use_tick[r] = NAN;
	}
	assert_int_equal(drf_dem_pressure(&u), 0);
	assert_int_equal(drf_dem_capped(&u), 0);
	u.pressure[DRF_PRESSURE_CPU_THROTTLED] = 0.5;
	assert_int_equal(drf_dem_pressure(&u), 1u << DRF_RES_CPU);
	assert_int_equal(drf_dem_capped(&u), 1u << DRF_RES_CPU);
	u.pressure[DRF_PRESSURE_CPU_THROTTLED] = 0;
	u.pressure[DRF_PRESSURE_RUNQ] = 0.3;
	assert_int_equal(drf_dem_pressure(&u), 1u << DRF_RES_CPU);
	assert_int_equal(drf_dem_capped(&u), 0); /* waiting, not capped */
	u.pressure[DRF_PRESSURE_RUNQ] = 0;
	/* memory.high reclaim: capped, but no pressure without a stall or memory.max. */
	u.rate_tick[DRF_CTR_MEM_EVENTS_HIGH] = 3;
	assert_int_equal(drf_dem_pressure(&u), 0);
	assert_int_equal(drf_dem_capped(&u), 1u << DRF_RES_MEMORY);
	u.pressure[DRF_PRESSURE_MEMORY_SOME] = 0.02;
	assert_int_equal(drf_dem_pressure(&u), 1u << DRF_RES_MEMORY);
	u.pressure[DRF_PRESSURE_MEMORY_SOME] = 0;
	u.rate_tick[DRF_CTR_MEM_EVENTS_HIGH] = 0;
	u.rate_tick[DRF_CTR_MEM_EVENTS_MAX] = 1;
	assert_int_equal(drf_dem_pressure(&u), 1u << DRF_RES_MEMORY);
	u.rate_tick[DRF_CTR_MEM_EVENTS_MAX] = 0;
	/* IO at io.max; IO PSI counts for a direction in use only. */
	u.limit[DRF_RES_IO_WRITE] = 1000;
	u.use_tick[DRF_RES_IO_WRITE] = 950;
	assert_int_equal(drf_dem_pressure(&u), 1u << DRF_RES_IO_WRITE);
	assert_int_equal(drf_dem_capped(&u), 1u << DRF_RES_IO_WRITE);
	u.use_tick[DRF_RES_IO_WRITE] = 0;
	u.use_tick[DRF_RES_IO_READ] = 5e6;
	u.pressure[DRF_PRESSURE_IO_SOME] = 0.3;
	assert_int_equal(drf_dem_pressure(&u), 1u << DRF_RES_IO_READ);
	u.pressure[DRF_PRESSURE_IO_SOME] = 0;
	u.use_tick[DRF_RES_IO_READ] = 0;
	/* Egress at its HTB rate (share mode: the link is full), or at its ceiling. */
	u.alloc[DRF_RES_NET] = 1e8;
	u.use_tick[DRF_RES_NET] = 0.95e8;
	assert_int_equal(drf_dem_pressure(&u), 1u << DRF_RES_NET);
	assert_int_equal(drf_dem_capped(&u), 1u << DRF_RES_NET);
	u.use_tick[DRF_RES_NET] = 0.5e8;
	assert_int_equal(drf_dem_pressure(&u), 0);
	/* Ingress: the policer's drops are pressure and a cap, whatever the rate. */
	u.rate_tick[DRF_CTR_NET_RX_DROPPED] = 10;
	u.limit[DRF_RES_NET_IN] = 1e8;
	u.use_tick[DRF_RES_NET_IN] = 0.6e8;
	assert_int_equal(drf_dem_pressure(&u), 1u << DRF_RES_NET_IN);
	assert_int_equal(drf_dem_capped(&u), 1u << DRF_RES_NET_IN);
}

/* The daemon: three tenants in limit mode over a fake cgroup tree. */
static struct fakedrfd fx;
static double usec[3], throttled[3];

#define LIMIT_OBSERVED "mode = limit\ndemand = observed\n"
#define THREE "[capacity]\ncpu = 2\nmemory = 3G\n[tenant a]\ncpu = 2\nmemory = 512M\n" \
	      "[tenant b]\ncpu = 2\nmemory = 512M\n[tenant c]\ncpu = 2\nmemory = 512M\n"

static int setup_daemon(void **state)
{
	(void)state;
	assert_int_equal(fakedrfd_setup(&fx, LIMIT_OBSERVED, THREE), 0);
	assert_int_equal(fakedrfd_start(&fx), 0);
	memset(usec, 0, sizeof(usec));
	memset(throttled, 0, sizeof(throttled));
	return 0;
}

static int setup_declared(void **state)
{
	(void)state;
	assert_int_equal(fakedrfd_setup(&fx, "mode = limit\n", THREE), 0);
	assert_int_equal(fakedrfd_start(&fx), 0);
	memset(usec, 0, sizeof(usec));
	memset(throttled, 0, sizeof(throttled));
	return 0;
}

static int teardown_daemon(void **state)
{
	(void)state;
	fakedrfd_teardown(&fx);
	return 0;
}

/* The cpu.max quota drfd wrote for a tenant, in cores. */
static double cpu_max(const char *cg)
{
	const char *v = fakedrfd_get(&fx, cg, "cpu.max");
	double q = 0, per = 0;

	if (strncmp(v, "max", 3) == 0)
		return INFINITY;
	assert_int_equal(sscanf(v, "%lf %lf", &q, &per), 2);
	return q / per;
}

/*
 * One tick of one second: each tenant busy (using all of its cpu.max,
 * throttled) or idle over the second before it; then drfd's tick: the writes,
 * the sample, the online step and the writes of a changed plan.
 */
static void tick(const bool busy[3])
{
	static const char *const names[] = { "a", "b", "c" };

	for (int i = 0; i < 3; i++) {
		char buf[256];
		double lim = cpu_max(names[i]);

		if (busy[i])
			usec[i] += (isinf(lim) ? 2 : lim) * 1e6;
		if (busy[i])
			throttled[i] += 10; /* a counter: never goes back */
		snprintf(buf, sizeof(buf), "usage_usec %.0f\nnr_throttled %.0f\nthrottled_usec 0\n",
			 usec[i], throttled[i]);
		assert_int_equal(fakedrfd_put(&fx, names[i], "cpu.stat", buf), 0);
		assert_int_equal(fakedrfd_put(&fx, names[i], "memory.current", "104857600\n"), 0);
		assert_int_equal(fakedrfd_put(&fx, names[i], "memory.stat",
					      "anon 104857600\nfile 0\ninactive_file 0\n"), 0);
	}
	fakedrfd_advance(&fx, DRF_USEC_PER_SEC);
	drfd_tick(&fx.d, SIZE_MAX);
}

static void test_daemon_idle_and_back(void **state)
{
	const bool all[3] = { true, true, true }, c_idle[3] = { true, true, false };
	double fair = 2.0 / 3, grown = (2 - 2 / DRF_DEM_FLOOR_DIV) / 2;
	uint64_t t = 0, went_idle, back;
	unsigned long long replans;

	(void)state;
	/* Memory settles first (each uses 100M of its 512M). */
	for (int k = 0; k < 40; k++, t++)
		tick(all);
	assert_true(fx.d.plan.effective);
	/* All busy: the declared plan, 2/3 core each. */
	for (int i = 0; i < 3; i++)
		assert_true(fabs(cpu_max((const char *[]){ "a", "b", "c" }[i]) - fair) < 1e-3);
	/* Steady: no change of plan while nothing changes. */
	replans = (unsigned long long)fx.d.online.replans;
	for (int k = 0; k < 60; k++, t++)
		tick(all);
	assert_int_equal(fx.d.online.replans, replans);
	/* c goes idle: within 3 ticks a and b get its share, less c's floor. */
	went_idle = t;
	while (fabs(cpu_max("a") - grown) > 1e-3 && t - went_idle < 20) {
		tick(c_idle);
		t++;
	}
	/* A whole idle tick, then the fall at the second (the hold). */
	assert_true(t - went_idle <= 2);
	assert_true(fabs(cpu_max("b") - grown) < 1e-3);
	assert_true(fabs(cpu_max("c") - 2 / DRF_DEM_FLOOR_DIV) < 1e-3);
	/* The bottleneck's utilization: a + b of 2 cores. */
	assert_true((cpu_max("a") + cpu_max("b")) / 2 > 0.9);
	/* c is back: its declared share within the documented bound (5 ticks). */
	back = t;
	while (fabs(cpu_max("c") - fair) > 1e-3 && t - back < 30) {
		tick(all);
		t++;
	}
	/* 0.125 -> 0.25 -> 0.5 -> 1: three doublings to its 2/3 (four to its bound). */
	assert_true(t - back <= 3);
	assert_true(fabs(cpu_max("a") - fair) < 1e-3);
	/* Memory: each uses 100M of its 512M: the effective demand fell, gradually. */
	assert_true(fx.d.use.t[0].dem.eff[DRF_RES_MEMORY] < 512.0 * 1024 * 1024 / 2);
	assert_true(fx.d.use.t[0].dem.eff[DRF_RES_MEMORY] >= 100.0 * 1024 * 1024 * 1.25 - 1);
}

static void write_demand(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/*
 * A restart takes the effective demands back (clamped to the declared ones), and
 * puts the effective plan in force before the first write.
 */
static void test_daemon_restart_restores(void **state)
{
	const bool c_idle[3] = { true, true, false };
	char path[512], line[512];
	size_t writes;
	FILE *f;

	(void)state;
	for (int k = 0; k < 6; k++)
		tick(c_idle);
	assert_true(fabs(fx.d.use.t[2].dem.eff[DRF_RES_CPU] - 0.125) < 1e-12);
	/* Written at the change: C's line has its cpu at 0.125. */
	assert_int_equal(drf_statedir_path(fx.statedir, fx.root, ".demand", path, sizeof(path)), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) && strncmp(line, "c ", 2) != 0)
		;
	fclose(f);
	assert_true(strncmp(line, "c 0.125 ", 8) == 0);
	/* A new drfd: the demands read back, the plan in force at once: no knob moves. */
	writes = fx.rec.changes;
	assert_int_equal(fakedrfd_restart(&fx), 0);
	assert_true(fx.d.use.t[2].dem.started);
	assert_int_equal(fx.d.use.t[2].dem.changed_why[DRF_RES_CPU], DRF_DEM_WHY_RESTORED);
	assert_true(fabs(fx.d.plan.result.shares[0].alloc[DRF_RES_CPU] - 0.9375) < 1e-9);
	assert_true(fabs(cpu_max("c") - 0.125) < 1e-3);
	assert_int_equal(fx.rec.changes, writes);
	/* A damaged file: the declared demands. */
	write_demand(path, "drfd-demand 1\nc 0.125 nonsense\n");
	assert_int_equal(fakedrfd_restart(&fx), 0);
	assert_int_not_equal(fx.d.use.t[2].dem.changed_why[DRF_RES_CPU], DRF_DEM_WHY_RESTORED);
	assert_true(fx.d.use.t[2].dem.eff[DRF_RES_CPU] == 2);
	assert_true(fabs(cpu_max("c") - 2.0 / 3) < 1e-3);
	write_demand(path, "something else\nc 0.125 0 0 0 0 0\n");
	assert_int_equal(fakedrfd_restart(&fx), 0);
	assert_int_not_equal(fx.d.use.t[2].dem.changed_why[DRF_RES_CPU], DRF_DEM_WHY_RESTORED);
	assert_true(fx.d.use.t[2].dem.eff[DRF_RES_CPU] == 2);
	/* Above the declared demand (the config changed meanwhile): clamped. */
	write_demand(path, "drfd-demand 1\nc 7 99999999999 0 0 0 0\n");
	assert_int_equal(fakedrfd_restart(&fx), 0);
	assert_true(fx.d.use.t[2].dem.eff[DRF_RES_CPU] == 2);
	assert_true(fx.d.use.t[2].dem.eff[DRF_RES_MEMORY] == 512.0 * 1024 * 1024);
}

/* Observed demand switched off and on again (reloads): no stale effective demands. */
static void test_daemon_off_and_on(void **state)
{
	const bool c_idle[3] = { true, true, false };

	(void)state;
	for (int k = 0; k < 6; k++)
		tick(c_idle);
	assert_true(fabs(cpu_max("c") - 0.125) < 1e-3);
	assert_int_equal(fakedrfd_write(&fx, "mode = limit\n", THREE), 0);
	assert_int_equal(drfd_reload(&fx.d), 0);
	assert_false(fx.d.plan.effective);
	assert_true(fabs(cpu_max("c") - 2.0 / 3) < 1e-3);
	assert_false(fx.d.use.t[2].dem.started);
	assert_int_equal(fakedrfd_write(&fx, LIMIT_OBSERVED, THREE), 0);
	assert_int_equal(drfd_reload(&fx.d), 0);
	assert_true(fx.d.plan.effective);
	/* Back on: from the declared demands, then the rules again. */
	assert_true(fabs(cpu_max("c") - 2.0 / 3) < 1e-3);
	for (int k = 0; k < 3; k++)
		tick(c_idle);
	assert_true(fabs(cpu_max("c") - 0.125) < 1e-3);
}

/* demand = declared: the daemon never leaves the declared plan. */
static void test_daemon_declared(void **state)
{
	const bool c_idle[3] = { true, true, false };

	(void)state;
	for (int k = 0; k < 10; k++)
		tick(c_idle);
	assert_false(fx.d.plan.effective);
	assert_true(fabs(cpu_max("a") - 2.0 / 3) < 1e-3);
	assert_true(fabs(cpu_max("c") - 2.0 / 3) < 1e-3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starts_declared),
		cmocka_unit_test(test_idle_falls_after_hold),
		cmocka_unit_test(test_one_quiet_tick_is_not_idle),
		cmocka_unit_test(test_return_from_idle_bound),
		cmocka_unit_test(test_pressure_needs_held),
		cmocka_unit_test(test_busy_host_no_fall),
		cmocka_unit_test(test_grew),
		cmocka_unit_test(test_steady_load_no_flapping),
		cmocka_unit_test(test_memory_senpai),
		cmocka_unit_test(test_learned_level_idle_falls),
		cmocka_unit_test(test_pressure_bits),
		cmocka_unit_test_setup_teardown(test_daemon_idle_and_back, setup_daemon,
						teardown_daemon),
		cmocka_unit_test_setup_teardown(test_daemon_restart_restores, setup_daemon,
						teardown_daemon),
		cmocka_unit_test_setup_teardown(test_daemon_off_and_on, setup_daemon, teardown_daemon),
		cmocka_unit_test_setup_teardown(test_daemon_declared, setup_declared,
						teardown_daemon),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
