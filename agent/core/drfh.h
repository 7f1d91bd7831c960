/* SPDX-License-Identifier: MIT */
/*
 * DRFH: dominant resource fairness over a fleet of heterogeneous servers
 * (Wang, Li, Liang, "Multi-Resource Fair Allocation in Heterogeneous Cloud
 * Computing Systems", IEEE TPDS 2015). Pure: no I/O, no globals; the divisible
 * form solves linear programs with GLPK, quietly.
 *
 * A tenant's demand is the one-host demand of alloc.h: the shape of one task
 * (or a bounded demand, max_units 1) and a count. Its dominant share is taken
 * against the pool, the sum of every server's capacity, and its global dominant
 * share G_i is the sum over servers of its dominant share of the pool there:
 * units_i * max_r shape_ir / pool_r. DRFH is the weighted max-min of G_i / w_i
 * subject to every server's capacity, each tenant's units capped by max_units.
 *
 * Servers come as specs in config order, each spec `count` identical servers;
 * server indexes run over them in that order (spec 0's servers first).
 */
#ifndef DRF_DRFH_H
#define DRF_DRFH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "res.h"

struct drfh_server_spec {
	double capacity[DRF_NRES]; /* one server's; >= 0 */
	size_t count;              /* >= 1 */
};

struct drfh_problem {
	size_t nspecs;
	const struct drfh_server_spec *specs;
	size_t n;
	const struct drf_demand *demands;
};

/*
 * Identical servers, as one: the divisible form works on these (an allocation
 * on a group of k servers splits into k equal ones, each feasible).
 */
struct drfh_group {
	double capacity[DRF_NRES]; /* one server's */
	size_t count;
	size_t first;              /* index of its first server */
};

struct drfh_tenant {
	double gds;            /* global dominant share, unweighted */
	double units;          /* tasks (fractional in the divisible form), or the met fraction */
	double alloc[DRF_NRES];
	int dominant_res;      /* against the pool; -1 if the tenant needs nothing */
	int limited_by;        /* DRF_LIMIT_DEMAND, or DRFH_LIMIT_CAPACITY */
};

/* The tenant stopped short of its demand: the servers are full for it (or it fits nowhere). */
#define DRFH_LIMIT_CAPACITY (-2)

/* Tasks of one tenant on one server (the discrete forms), or on one group. */
struct drfh_place {
	uint32_t tenant;
	uint32_t where; /* server index (discrete), group index (divisible) */
	double tasks;
};

struct drfh_result {
	double pool[DRF_NRES];
	size_t n;
	struct drfh_tenant *tenants;
	size_t ngroups;
	struct drfh_group *groups;
	size_t nservers;
	/* sorted by tenant, then where; only entries with tasks > 0 */
	size_t nplaces;
	struct drfh_place *places;
	bool by_group;            /* places[].where is a group (divisible), else a server */
	double utilization[DRF_NRES]; /* allocated / pool */
	uint64_t rounds;          /* divisible: LPs solved; discrete: tasks placed */
	/*
	 * Best-Fit and First-Fit: the work done, in inner steps (a tenant's
	 * turn, a server given tasks, a class of servers read in a count's
	 * search), however many tasks they place: for tests and benchmarks.
	 */
	uint64_t work;
};

/*
 * The divisible DRFH by progressive filling: each round maximizes the level t
 * with G_i >= w_i t for the tenants still growing (LPs warm-started from the
 * last), then freezes those whose level row has a nonzero dual in the optimum:
 * by complementary slackness every optimum holds them at w_i t, so none of them
 * can grow without t falling. The tenants that reach their task counts before
 * the servers stop t freeze at their counts in the same round, found by a
 * search over how many of them to pin (drfh.c has the proof), so a round costs
 * a few LPs however many counts it passes. At least one freezes each round.
 * The LPs have a row per task direction (tenants whose tasks point the same
 * way are one) and bring in their columns by pricing, so their size follows
 * the task shapes and the server shapes, not the tenants.
 * Returns 0, -EINVAL for a malformed problem (as drf_allocate), -EDOM if the
 * solver fails, -ENOMEM.
 */
int drfh_allocate(const struct drfh_problem *p, struct drfh_result *ret);

enum drfh_fit {
	DRFH_BEST_FIT,  /* min || D_i/|D_i|_1 - c_l/|c_l|_1 ||_1 over servers where the task fits */
	DRFH_FIRST_FIT, /* the first server in order where it fits */
};

/*
 * Whole tasks: the tenant with the lowest weighted global dominant share (ties:
 * the earlier tenant) places its next task on a server chosen by fit (ties: the
 * earlier server); a tenant whose task fits nowhere stops, as does one with all
 * its tasks placed. -E2BIG past DRF_DISCRETE_MAX_TASKS tasks.
 *
 * Counts, not tasks: a tenant's turn places at once the run of tasks it would
 * place one at a time before another tenant's turn (its share reaching the
 * next lowest's, or its count), and a run goes to the servers by arithmetic:
 * how many tasks fit on a server is a division, and Best-Fit's H on a server
 * after l tasks of a tenant alone is H_0 R / (R - l U) (R the server's
 * remaining capacity, U the task, both summed over the pool's fractions), so
 * the run's tasks on each server are those below one threshold of H, found by
 * bisection over the classes of servers. The servers nearest the threshold
 * take their last task of the run one at a time, by the search itself, so
 * ties go as before. The work is then O(turns x classes x log), not O(tasks).
 *
 * Where it differs from one task at a time: (1) a run's remaining capacity is
 * c - k s, rounded once, not k times (the same for tasks and capacities in
 * binary fractions); (2) H values within H_EPS (1e-12) of each other but on
 * different servers are taken by H in a run's bulk, by server order one at a
 * time; (3) tenants whose shares rise together take turns of one task each,
 * so past DRFH_EXACT_TURNS turns a turn places at least 1/DRFH_RUN_FRACTION of
 * the tasks the tenant holds (each tenant then takes O(DRFH_RUN_FRACTION x
 * log tasks) turns): a tenant's weighted share then passes the next one's by
 * at most 1/DRFH_RUN_FRACTION of its own (plus one task), and a tenant that
 * stops for room may stop short of another's share by as much. Below
 * DRFH_EXACT_TURNS turns (every test fleet) the tasks per tenant and server
 * are those of one task at a time.
 */
#define DRFH_EXACT_TURNS 65536
#define DRFH_RUN_FRACTION 256
int drfh_place(const struct drfh_problem *p, enum drfh_fit fit, struct drfh_result *ret);

/*
 * The same, continued from the placement in force (prev: whole tasks, servers
 * indexed in p, sorted by tenant then server), so that a change moves few tasks:
 * what prev placed stays where the server still holds it (a server over its
 * capacity sheds the last tenants' tasks first; a tenant over its count loses
 * the tasks on its last servers), and the greedy goes on from there. The
 * result's rounds are the tasks placed anew. -EINVAL for a prev out of range.
 * It never moves a task: a tenant that comes to a full fleet gets nothing
 * (drfh_converge() does).
 */
int drfh_place_from(const struct drfh_problem *p, enum drfh_fit fit, const struct drfh_place *prev,
		    size_t nprev, struct drfh_result *ret);

/*
 * The placement a fleet's plan converges to from the one in force (prev, any
 * order; pinned: per server, whether its tasks in prev stay, NULL none): the
 * fair counts from scratch (Best-Fit, from the pinned servers' tasks alone),
 * then what stays of prev (each tenant's tasks up to its fair count, the
 * pinned servers' first, then in prev's order), and Best-Fit from there. A
 * tenant over its fair count gives the rest up; one under it (new, or
 * displaced once) gets the room: a placement Best-Fit would leave as it is
 * stays, and any other is led to the counts from scratch. -EINVAL for a prev
 * out of range.
 */
int drfh_place_toward(const struct drfh_problem *p, const struct drfh_place *prev, size_t nprev,
		      const bool *pinned, struct drfh_result *ret);

/*
 * One planning round from the placement in force (prev: whole tasks, servers
 * indexed in p, any order) toward target (a whole-task result of p, by
 * server), removing at most max_moves tasks (<= 0: max(DRFH_CONVERGE_MIN,
 * a DRFH_CONVERGE_PART-th of the larger of the two placements' tasks)):
 *  - on each server a tenant keeps min(prev, target) of its tasks: what
 *    both have stays where it is;
 *  - tasks over the target are removed (by tenant, then server), as far as
 *    the budget goes: the churn, tasks stopped where they run;
 *  - tasks under the target are added where the target has them, on each
 *    server with nothing over the target left on it (so that it holds no
 *    more than the target: within its capacity); starting a task where room
 *    is free moves nothing, and the budget does not bound it.
 * prev is first cut to what can exist (a tenant's count, a server's room for
 * that tenant alone): a count from outside may be anything.
 * The round's placement in ret (places by tenant then server; rounds: the
 * tasks removed, also in *ret_moves), and in *ret_more whether it is short of
 * the target (another round is needed). Each round removes min(budget, what
 * is over): from any prev
 * the target is reached in at most max(1, ceil(over / budget)) rounds (over:
 * the tasks of prev past the target; a server's additions come in the round
 * of its last removal), DRFH_CONVERGE_PART with the default budget. A prev
 * equal to the target moves nothing.
 * -EINVAL for a prev out of range or a target not of p.
 */
#define DRFH_CONVERGE_MIN 16
#define DRFH_CONVERGE_PART 4
int drfh_converge(const struct drfh_problem *p, const struct drfh_place *prev, size_t nprev,
		  const struct drfh_result *target, double max_moves, struct drfh_result *ret,
		  double *ret_moves, bool *ret_more);

/*
 * The comparisons the seed makes, on the same fleet and whole tasks:
 *  - per-server DRF: each server in order shares itself by discrete DRF among
 *    the tenants' tasks not yet placed (dominant shares against that server);
 *  - slots: every server cut into slots of `slot` (its count the least over
 *    resources of capacity / slot), a task taking the slots its largest
 *    resource needs; tenants take turns by weighted slots held, each task on
 *    the first server with the slots free.
 */
int drfh_per_server_drf(const struct drfh_problem *p, struct drfh_result *ret);
int drfh_slots(const struct drfh_problem *p, const double slot[DRF_NRES], struct drfh_result *ret);

void drfh_result_free(struct drfh_result *r);

/*
 * The most a server may have of each resource, as sane hardware goes: a
 * capacity past it is a mistake or a lie (a node that registers 1e15 cores
 * makes every task a speck of the pool), and a fleet leaves such a node out of
 * its plan (fleetview.c) with the reason. Node registrations (fleetjson.c)
 * may refuse them with drfh_capacity_check() too.
 *   cpu          65,536 cores
 *   memory       2^52 bytes (4 PiB)
 *   io-read-bps, io-write-bps   1e13 bytes/s (10 TB/s)
 *   net-rate, net-ingress-rate  1e13 bits/s (10 Tbit/s)
 */
#define DRFH_CAP_CPU_MAX 65536.0
#define DRFH_CAP_MEMORY_MAX 4503599627370496.0 /* 2^52 */
#define DRFH_CAP_IO_MAX 1e13
#define DRFH_CAP_NET_MAX 1e13

/* The bound of resource r (DRFH_CAP_*_MAX). */
double drfh_capacity_max(int r);

/*
 * 0 if every entry of cap is within its bound (and >= 0, finite); -ERANGE
 * with the first resource past it in *ret_res (may be NULL) otherwise.
 */
int drfh_capacity_check(const double cap[DRF_NRES], int *ret_res);

/* The pool: sum of every server's capacity. */
void drfh_pool(const struct drfh_problem *p, double pool[DRF_NRES]);

/* Jain's index over G_i / w_i of the tenants that need something. */
double drfh_jain(const struct drfh_problem *p, const struct drfh_result *r);

#endif
