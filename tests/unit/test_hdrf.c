// SPDX-License-Identifier: MIT
/*
 * Hierarchical DRF (agent/core/hdrf.c): hand-worked trees, the paper's
 * counterexample (Bhattacharya et al., SoCC 2013) with the naive nested DRF
 * written here (a group's share over every resource, used up or not), a churn
 * of whole tasks that shows the naive one starving a leaf that H-DRF keeps at
 * its share, then on seeded random trees: one level equals drf_allocate(),
 * the hierarchical share guarantee at every node, feasibility, shape, caps
 * and Pareto efficiency. HDRF_SEED=N replays from another base seed,
 * HDRF_N=K changes the instance count (default 10000).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdrf.h"
#include "testlib.h"

static uint64_t base_seed = 20261127;
static unsigned long n_instances = 10000;

#define REL 1e-9
#define MAXG 8
#define MAXL 48

enum { CPU = DRF_RES_CPU, GPU = DRF_RES_MEMORY }; /* the paper's GPUs played by memory */

static struct drf_demand task(double cpu, double gpu, double weight)
{
	struct drf_demand d = { .weight = weight, .max_units = INFINITY };

	d.shape[CPU] = cpu;
	d.shape[GPU] = gpu;
	return d;
}

/*
 * The paper's counterexample: 10 CPUs, 10 GPUs; n1 wants GPUs only; the group
 * n2 holds n2,1 (CPUs only) and n2,2 (GPUs only). Leaves 0, 1, 2: n1, n2,1, n2,2.
 */
static const struct drf_hgroup cx_groups[] = { { .weight = 1, .parent = DRF_HROOT } };
static const size_t cx_parent[] = { DRF_HROOT, 0, 0 };

static struct drf_hproblem counterexample(struct drf_demand *d)
{
	struct drf_hproblem hp = { .n_groups = 1, .groups = cx_groups, .leaf_parent = cx_parent };

	d[0] = task(0, 1, 1);
	d[1] = task(1, 0, 1);
	d[2] = task(0, 1, 1);
	hp.base.capacity[CPU] = 10;
	hp.base.capacity[GPU] = 10;
	hp.base.n = 3;
	hp.base.demands = d;
	return hp;
}

static void test_counterexample(void **state)
{
	struct drf_demand d[3];
	struct drf_hproblem hp = counterexample(d);
	struct drf_hresult res;

	(void)state;
	assert_int_equal(drf_hdrf_allocate(&hp, &res), 0);
	/* GPUs run out at level 1/2: n1 and n2,2 hold 5 each; n2,1 then takes every CPU. */
	assert_close(res.leaves.shares[0].alloc[GPU], 5, REL, "n1 GPUs");
	assert_close(res.leaves.shares[1].alloc[CPU], 10, REL, "n2,1 CPUs");
	assert_close(res.leaves.shares[2].alloc[GPU], 5, REL, "n2,2 GPUs");
	assert_close(res.leaves.shares[0].alloc[CPU] + res.leaves.shares[2].alloc[CPU] +
			     res.leaves.shares[1].alloc[GPU], 0, REL, "nobody holds what it does not need");
	assert_close(res.groups[0].alloc[CPU], 10, REL, "n2 CPUs");
	assert_close(res.groups[0].alloc[GPU], 5, REL, "n2 GPUs");
	assert_close(res.groups[0].dominant_share, 1, REL, "n2 dominant share over both");
	assert_int_equal(res.leaves.shares[0].limited_by, GPU);
	assert_int_equal(res.leaves.shares[1].limited_by, CPU);
	drf_hresult_free(&res);
	/* Whole tasks from nothing: the same 5, 10, 5. */
	assert_int_equal(drf_hdrf_allocate_discrete(&hp, &res), 0);
	assert_close(res.leaves.shares[0].units, 5, 0, "n1 tasks");
	assert_close(res.leaves.shares[1].units, 10, 0, "n2,1 tasks");
	assert_close(res.leaves.shares[2].units, 5, 0, "n2,2 tasks");
	drf_hresult_free(&res);
}

/*
 * A group behind its sibling once a resource runs out. 10 CPUs, 10 GPUs;
 * root: n1 (GPUs, weight 1), n3 (CPUs, weight 1), group n2 (weight 1) of
 * n2,1 (CPUs, weight 3) and n2,2 (GPUs, weight 1). By hand: at root level t,
 * n1 holds t of the GPUs, n3 t of the CPUs; inside n2 at level l, n2,1 holds
 * 3l of the CPUs and n2,2 l of the GPUs, so n2's share is 3l = t. CPUs: t + t
 * = 1 at t = 1/2 (n3 5, n2,1 5 CPUs; n2,2 5/3 GPUs, n1 5 GPUs). Counted over
 * GPUs only, n2 is at 1/6, below n1's 1/2, so n2,2 alone takes the 10/3 GPUs
 * left and ends at 5. (Counting n2's CPUs too, n2 would tie with n1 at 1/2,
 * but GPUs for n2,2 would not raise that share, so progressive filling would
 * still give them to n2: naive nested DRF differs only once tasks finish and
 * are placed again, the churn below.)
 */
static void test_group_catches_up(void **state)
{
	static const struct drf_hgroup gr[] = { { .weight = 1, .parent = DRF_HROOT } };
	static const size_t par[] = { DRF_HROOT, 0, 0, DRF_HROOT };
	struct drf_demand d[4] = { task(0, 1, 1), task(1, 0, 3), task(0, 1, 1), task(1, 0, 1) };
	struct drf_hproblem hp = { .base = { .n = 4, .demands = d }, .n_groups = 1, .groups = gr,
				   .leaf_parent = par };
	struct drf_hresult res;

	(void)state;
	hp.base.capacity[CPU] = 10;
	hp.base.capacity[GPU] = 10;
	assert_int_equal(drf_hdrf_allocate(&hp, &res), 0);
	assert_close(res.leaves.shares[0].alloc[GPU], 5, REL, "n1 GPUs");
	assert_close(res.leaves.shares[1].alloc[CPU], 5, REL, "n2,1 CPUs");
	assert_close(res.leaves.shares[2].alloc[GPU], 5, REL, "n2,2 GPUs");
	assert_close(res.leaves.shares[3].alloc[CPU], 5, REL, "n3 CPUs");
	drf_hresult_free(&res);
}

/*
 * Two levels with weights and a bounded demand. 12 CPUs, 12 GPUs; root: group
 * A (weight 2) of a1 (tasks of 1 CPU) and a2 (tasks of 1 GPU); leaf b (weight
 * 1, tasks of 1 CPU + 1 GPU); group C (weight 1) of c1, a bounded demand of
 * 1 CPU and 3 GPUs. By hand, at root level t: A's share 2t, so a1 holds 2t of
 * the CPUs and a2 2t of the GPUs; b holds t of both; c1 t of the GPUs (t/3 of
 * the CPUs) until its demand is met at t = 1/4. GPUs: 2t + t + t = 1, also at
 * t = 1/4 (CPUs: 2t + t + t/3 = 5/6 of them). So at t = 1/4: a1 6 CPUs, a2 6
 * GPUs, b 3 and 3, c1 1 and 3 (met). Only a1 can still grow; it takes the
 * 2 CPUs left: 8.
 */
static void test_two_levels_by_hand(void **state)
{
	static const struct drf_hgroup gr[] = { { .weight = 2, .parent = DRF_HROOT },
						 { .weight = 1, .parent = DRF_HROOT } };
	static const size_t par[] = { 0, 0, DRF_HROOT, 1 };
	struct drf_demand d[4] = { task(1, 0, 1), task(0, 1, 1), task(1, 1, 1), task(1, 3, 5) };
	struct drf_hproblem hp = { .base = { .n = 4, .demands = d }, .n_groups = 2, .groups = gr,
				   .leaf_parent = par };
	struct drf_hresult res;

	(void)state;
	d[3].max_units = 1;
	hp.base.capacity[CPU] = 12;
	hp.base.capacity[GPU] = 12;
	assert_int_equal(drf_hdrf_allocate(&hp, &res), 0);
	assert_close(res.leaves.shares[0].alloc[CPU], 8, REL, "a1 CPUs");
	assert_close(res.leaves.shares[1].alloc[GPU], 6, REL, "a2 GPUs");
	assert_close(res.leaves.shares[2].alloc[CPU], 3, REL, "b CPUs");
	assert_close(res.leaves.shares[3].units, 1, REL, "c1 met");
	assert_int_equal(res.leaves.shares[3].limited_by, DRF_LIMIT_DEMAND);
	drf_hresult_free(&res);
}

/*
 * Naive nested DRF, for the churn below: from the root down, the unblocked
 * child with the lowest weighted dominant share over every resource.
 */
static long naive_pick(const struct drf_hproblem *hp, const double *units)
{
	const struct drf_problem *p = &hp->base;
	double used[DRF_NRES] = { 0 }, gsum[MAXG][DRF_NRES] = { { 0 } };
	bool fits[MAXL], gfits[MAXG] = { false };
	size_t at = DRF_HROOT;

	for (size_t i = 0; i < p->n; i++)
		for (int r = 0; r < DRF_NRES; r++) {
			used[r] += units[i] * p->demands[i].shape[r];
			for (size_t g = hp->leaf_parent[i]; g != DRF_HROOT; g = hp->groups[g].parent)
				gsum[g][r] += units[i] * p->demands[i].shape[r];
		}
	for (size_t i = 0; i < p->n; i++) {
		fits[i] = units[i] + 1 <= p->demands[i].max_units;
		for (int r = 0; r < DRF_NRES; r++)
			if (p->capacity[r] > 0 && p->demands[i].shape[r] > p->capacity[r] - used[r] + 1e-9)
				fits[i] = false;
		for (size_t g = hp->leaf_parent[i]; fits[i] && g != DRF_HROOT; g = hp->groups[g].parent)
			gfits[g] = true;
	}
	for (;;) {
		double best = INFINITY;
		long leaf = -1;
		size_t grp = DRF_HROOT;

		for (size_t g = 0; g < hp->n_groups; g++) {
			double ds = 0;

			if (hp->groups[g].parent != at || !gfits[g])
				continue;
			for (int r = 0; r < DRF_NRES; r++)
				if (p->capacity[r] > 0)
					ds = fmax(ds, gsum[g][r] / p->capacity[r]);
			if (ds / hp->groups[g].weight < best) {
				best = ds / hp->groups[g].weight;
				grp = g;
			}
		}
		for (size_t i = 0; i < p->n; i++) {
			double ds = 0;

			if (hp->leaf_parent[i] != at || !fits[i])
				continue;
			for (int r = 0; r < DRF_NRES; r++)
				if (p->capacity[r] > 0)
					ds = fmax(ds, units[i] * p->demands[i].shape[r] / p->capacity[r]);
			if (ds / p->demands[i].weight < best) {
				best = ds / p->demands[i].weight;
				leaf = (long)i;
				grp = DRF_HROOT;
			}
		}
		if (grp != DRF_HROOT) {
			at = grp;
			continue;
		}
		return leaf >= 0 ? leaf : -ENOSPC;
	}
}

typedef long (*pick_fn)(const struct drf_hproblem *, const double *);

/*
 * Whole tasks of the counterexample, placed from nothing by `pick`, then 2000
 * times: one running task, drawn at random, finishes and pick re-places what
 * fits. Whether n2,2 always kept its hierarchical share guarantee: n2 is owed
 * half of the GPUs' root (1/2) and n2,2 half of n2's, 1/4: 2.5 GPUs, so at
 * least 2 whole tasks at every moment.
 */
static bool churn_keeps_guarantee(pick_fn pick)
{
	struct drf_demand d[3];
	struct drf_hproblem hp = counterexample(d);
	struct rng g = { base_seed };
	double units[3] = { 0 };
	double fewest = INFINITY;
	long i;

	while ((i = pick(&hp, units)) >= 0)
		units[i] += 1;
	assert_int_equal(i, -ENOSPC);
	for (int step = 0; step < 2000; step++) {
		double total = units[0] + units[1] + units[2];
		double k = floor(rng_unit(&g) * total);
		int who = k < units[0] ? 0 : k < units[0] + units[1] ? 1 : 2;

		units[who] -= 1;
		while ((i = pick(&hp, units)) >= 0)
			units[i] += 1;
		assert_int_equal(i, -ENOSPC);
		fewest = fmin(fewest, units[2]);
	}
	return fewest >= 2;
}

static void test_churn_naive_starves_hdrf_does_not(void **state)
{
	(void)state;
	/* The same check, two policies: it must fail for the naive one. */
	assert_false(churn_keeps_guarantee(naive_pick));
	assert_true(churn_keeps_guarantee(drf_hdrf_pick));
}

/* A random tree: up to MAXG groups (a group's parent comes before it), leaves anywhere. */
struct tinst {
	struct drf_hproblem hp;
	struct drf_demand d[MAXL];
	struct drf_hgroup gr[MAXG];
	size_t par[MAXL];
	uint64_t seed;
};

static void gen_tree(struct tinst *in, uint64_t seed, bool unlimited_only)
{
	static const double lo[DRF_NRES] = { 0.5, 1048576.0, 1e3, 1e3, 1e5, 1e5 };
	static const double hi[DRF_NRES] = { 512, 35184372088832.0, 1e10, 1e10, 1e11, 1e11 };
	struct rng g = { seed };
	int m = rng_int(&g, 1, DRF_NRES), chosen = 0;
	size_t ng = (size_t)rng_int(&g, 0, MAXG), n = (size_t)rng_int(&g, 1, MAXL);
	bool equal = rng_unit(&g) < 0.3;

	memset(in, 0, sizeof(*in));
	in->seed = seed;
	while (chosen < m) {
		int r = rng_int(&g, 0, DRF_NRES - 1);

		if (in->hp.base.capacity[r] > 0)
			continue;
		in->hp.base.capacity[r] = rng_log(&g, lo[r], hi[r]);
		chosen++;
	}
	for (size_t k = 0; k < ng; k++) {
		int p = rng_int(&g, -1, (int)k - 1);

		in->gr[k].weight = equal ? 1 : rng_log(&g, 0.01, 100);
		in->gr[k].parent = p < 0 ? DRF_HROOT : (size_t)p;
	}
	for (size_t i = 0; i < n; i++) {
		struct drf_demand *d = &in->d[i];
		double kind = unlimited_only ? 1 : rng_unit(&g);
		int p = rng_int(&g, -1, (int)ng - 1);
		bool any = false;

		in->par[i] = p < 0 ? DRF_HROOT : (size_t)p;
		d->weight = equal ? 1 : rng_log(&g, 0.01, 100);
		for (int r = 0; r < DRF_NRES; r++) {
			double c = in->hp.base.capacity[r], z = rng_unit(&g);

			if (c == 0)
				d->shape[r] = rng_unit(&g) < 0.5 ? rng_log(&g, 1, 1e9) : 0;
			else if (kind < 0.3)
				d->shape[r] = z < 0.2 ? 0 : c * rng_log(&g, 1e-4, 2);
			else
				d->shape[r] = z < 0.3 ? 0 : c * rng_log(&g, 1e-6, 0.3);
			any = any || (c > 0 && d->shape[r] > 0);
		}
		if (!any)
			for (int r = 0; r < DRF_NRES; r++)
				if (in->hp.base.capacity[r] > 0)
					d->shape[r] = in->hp.base.capacity[r] * 1e-3;
		d->max_units = kind < 0.3 ? 1 : kind < 0.6 ? floor(rng_log(&g, 1, 3000)) : INFINITY;
	}
	in->hp.base.n = n;
	in->hp.base.demands = in->d;
	in->hp.n_groups = ng;
	in->hp.groups = in->gr;
	in->hp.leaf_parent = in->par;
}

static void fail_seed(const struct tinst *in, const char *what)
{
	print_error("instance seed %llu: %s\n", (unsigned long long)in->seed, what);
	fail();
}

/* Feasible, Leontief (alloc = units x shape), capped, Pareto-efficient. */
static void check_valid(const struct tinst *in, const struct drf_hresult *res)
{
	const struct drf_problem *p = &in->hp.base;
	double used[DRF_NRES] = { 0 };

	for (size_t i = 0; i < p->n; i++) {
		const struct drf_share *s = &res->leaves.shares[i];

		if (!(s->units >= 0) || s->units > p->demands[i].max_units * (1 + REL))
			fail_seed(in, "units outside [0, max_units]");
		for (int r = 0; r < DRF_NRES; r++) {
			double want = p->capacity[r] > 0 ? s->units * p->demands[i].shape[r] : 0;

			if (fabs(s->alloc[r] - want) > REL * fmax(want, 1e-300))
				fail_seed(in, "allocation not units x shape");
			used[r] += s->alloc[r];
		}
	}
	for (int r = 0; r < DRF_NRES; r++)
		if (used[r] > p->capacity[r] * (1 + REL))
			fail_seed(in, "infeasible");
	for (size_t i = 0; i < p->n; i++) {
		const struct drf_demand *d = &p->demands[i];
		bool stopped = res->leaves.shares[i].units >= d->max_units * (1 - REL);

		for (int r = 0; r < DRF_NRES && !stopped; r++)
			stopped = p->capacity[r] > 0 && d->shape[r] > 0 &&
				  used[r] >= p->capacity[r] * (1 - REL);
		if (!stopped)
			fail_seed(in, "a leaf below its cap needs no used-up resource (not Pareto)");
	}
}

static void test_one_level_is_drf(void **state)
{
	static struct tinst in;

	(void)state;
	for (unsigned long k = 0; k < n_instances; k++) {
		struct drf_result flat;
		struct drf_hresult h;
		/* All at the root, or all in one group: both are flat weighted DRF. */
		bool one_group = k % 2;

		gen_tree(&in, base_seed + k, false);
		in.hp.n_groups = one_group;
		in.gr[0] = (struct drf_hgroup){ .weight = 3.5, .parent = DRF_HROOT };
		for (size_t i = 0; i < in.hp.base.n; i++)
			in.par[i] = one_group ? 0 : DRF_HROOT;
		assert_int_equal(drf_allocate(&in.hp.base, DRF_POLICY_DRF, &flat), 0);
		assert_int_equal(drf_hdrf_allocate(&in.hp, &h), 0);
		for (size_t i = 0; i < in.hp.base.n; i++)
			for (int r = 0; r < DRF_NRES; r++) {
				double c = in.hp.base.capacity[r];

				if (c > 0 && fabs(flat.shares[i].alloc[r] - h.leaves.shares[i].alloc[r]) >
						     REL * c)
					fail_seed(&in, "one level differs from drf_allocate()");
			}
		check_valid(&in, &h);
		drf_result_free(&flat);
		drf_hresult_free(&h);
	}
}

/*
 * The hierarchical share guarantee: with every leaf unlimited (so every node
 * demands), a node owed g of its parent's guarantee G, g = G x w / (sum of the
 * weights of its siblings with leaves), holds a dominant share of at least g;
 * the root is owed everything.
 */
static void test_share_guarantee(void **state)
{
	static struct tinst in;

	(void)state;
	for (unsigned long k = 0; k < n_instances; k++) {
		struct drf_hresult h;
		double owed[MAXG], wsum[MAXG + 1];
		bool has[MAXG] = { false };
		size_t ng;

		gen_tree(&in, base_seed + 7919 * k, true);
		ng = in.hp.n_groups;
		assert_int_equal(drf_hdrf_allocate(&in.hp, &h), 0);
		check_valid(&in, &h);
		for (size_t i = 0; i < in.hp.base.n; i++)
			for (size_t g = in.par[i]; g != DRF_HROOT; g = in.gr[g].parent)
				has[g] = true;
		/* wsum[g + 1]: the weights of g's children with leaves; wsum[0] the root's. */
		memset(wsum, 0, sizeof(wsum));
		for (size_t g = 0; g < ng; g++)
			if (has[g])
				wsum[in.gr[g].parent == DRF_HROOT ? 0 : in.gr[g].parent + 1] +=
					in.gr[g].weight;
		for (size_t i = 0; i < in.hp.base.n; i++)
			wsum[in.par[i] == DRF_HROOT ? 0 : in.par[i] + 1] += in.d[i].weight;
		/* Parents come before children. */
		for (size_t g = 0; g < ng; g++) {
			size_t p = in.gr[g].parent;
			double above = p == DRF_HROOT ? 1 : owed[p];

			owed[g] = has[g] ? above * in.gr[g].weight / wsum[p == DRF_HROOT ? 0 : p + 1]
					 : 0;
			if (h.groups[g].dominant_share < owed[g] * (1 - REL))
				fail_seed(&in, "a group below its hierarchical share guarantee");
		}
		for (size_t i = 0; i < in.hp.base.n; i++) {
			size_t p = in.par[i];
			double above = p == DRF_HROOT ? 1 : owed[p];
			double o = above * in.d[i].weight / wsum[p == DRF_HROOT ? 0 : p + 1];

			if (h.leaves.shares[i].dominant_share < o * (1 - REL))
				fail_seed(&in, "a leaf below its hierarchical share guarantee");
		}
		drf_hresult_free(&h);
	}
}

/* Random trees with bounded and capped leaves: feasible, shaped, capped, Pareto. */
static void test_random_trees_valid(void **state)
{
	static struct tinst in;

	(void)state;
	for (unsigned long k = 0; k < n_instances; k++) {
		struct drf_hresult h;

		gen_tree(&in, base_seed + 104729 * k, false);
		assert_int_equal(drf_hdrf_allocate(&in.hp, &h), 0);
		check_valid(&in, &h);
		drf_hresult_free(&h);
	}
}

/*
 * The divisible filling against whole tasks, on random trees whose leaves all
 * have unlimited tasks of at most 1/1000 of any resource: drf_hdrf_pick(),
 * which only ever descends to the lowest child, is a second, simpler road to
 * the same allocation, so each leaf's dominant share must agree to within a
 * few tasks (the crumbs at the end; 2% of the host here).
 */
static void test_whole_tasks_converge(void **state)
{
	static struct tinst in;
	unsigned long n = n_instances / 50 + 1;

	(void)state;
	for (unsigned long k = 0; k < n; k++) {
		struct drf_hresult h, w;

		gen_tree(&in, base_seed + 31337 * k, true);
		if (in.hp.base.n > 12)
			in.hp.base.n = 12;
		for (size_t i = 0; i < in.hp.base.n; i++)
			for (int r = 0; r < DRF_NRES; r++) {
				double c = in.hp.base.capacity[r];

				if (c > 0 && in.d[i].shape[r] > 0)
					in.d[i].shape[r] = c * (0.0002 + 0.0008 * in.d[i].shape[r] / c / 0.3);
			}
		assert_int_equal(drf_hdrf_allocate(&in.hp, &h), 0);
		assert_int_equal(drf_hdrf_allocate_discrete(&in.hp, &w), 0);
		for (size_t i = 0; i < in.hp.base.n; i++)
			if (fabs(h.leaves.shares[i].dominant_share - w.leaves.shares[i].dominant_share) >
			    0.02) {
				print_error("leaf %zu: divisible %.6f, whole tasks %.6f\n", i,
					    h.leaves.shares[i].dominant_share,
					    w.leaves.shares[i].dominant_share);
				fail_seed(&in, "whole tasks far from the divisible answer");
			}
		drf_hresult_free(&h);
		drf_hresult_free(&w);
	}
}

/*
 * A group whose only leaf needs nothing (a bounded demand of 0): met at once,
 * the group holds nothing, and its dominant resource is still a resource.
 */
static void test_group_with_nothing(void **state)
{
	static const struct drf_hgroup gr[] = { { .weight = 1, .parent = DRF_HROOT } };
	static const size_t par[] = { 0, DRF_HROOT };
	struct drf_demand d[2] = { task(0, 0, 1), task(1, 0, 1) };
	struct drf_hproblem hp = { .base = { .n = 2, .demands = d }, .n_groups = 1, .groups = gr,
				   .leaf_parent = par };
	struct drf_hresult res;

	(void)state;
	d[0].max_units = 1;
	hp.base.capacity[CPU] = 4;
	assert_int_equal(drf_hdrf_allocate(&hp, &res), 0);
	assert_close(res.leaves.shares[0].units, 1, 0, "met");
	assert_int_equal(res.leaves.shares[0].limited_by, DRF_LIMIT_DEMAND);
	assert_close(res.groups[0].dominant_share, 0, 0, "group holds nothing");
	assert_int_equal(res.groups[0].dominant_res, CPU);
	assert_int_equal(res.groups[0].limited_by, DRF_LIMIT_DEMAND);
	assert_close(res.leaves.shares[1].alloc[CPU], 4, REL, "the other takes every core");
	drf_hresult_free(&res);
}

static void test_refuses_malformed(void **state)
{
	struct drf_demand d[3];
	struct drf_hproblem hp = counterexample(d);
	struct drf_hgroup cyc[2] = { { .weight = 1, .parent = 1 }, { .weight = 1, .parent = 0 } };
	size_t par[3] = { 0, 1, DRF_HROOT };
	struct drf_hresult res = { 0 };

	(void)state;
	hp.groups = cyc;
	hp.n_groups = 2;
	hp.leaf_parent = par;
	assert_int_equal(drf_hdrf_allocate(&hp, &res), -EINVAL);
	assert_int_equal(drf_hdrf_pick(&hp, (double[3]){ 0 }), -EINVAL);
	cyc[0].parent = DRF_HROOT;
	cyc[1].parent = 7; /* out of range */
	assert_int_equal(drf_hdrf_allocate(&hp, &res), -EINVAL);
	cyc[1].parent = 0;
	cyc[1].weight = 0;
	assert_int_equal(drf_hdrf_allocate(&hp, &res), -EINVAL);
	assert_null(res.groups);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counterexample),
		cmocka_unit_test(test_group_catches_up),
		cmocka_unit_test(test_two_levels_by_hand),
		cmocka_unit_test(test_churn_naive_starves_hdrf_does_not),
		cmocka_unit_test(test_one_level_is_drf),
		cmocka_unit_test(test_share_guarantee),
		cmocka_unit_test(test_random_trees_valid),
		cmocka_unit_test(test_whole_tasks_converge),
		cmocka_unit_test(test_group_with_nothing),
		cmocka_unit_test(test_refuses_malformed),
	};
	const char *s = getenv("HDRF_SEED"), *n = getenv("HDRF_N");

	if (s)
		base_seed = strtoull(s, NULL, 10);
	if (n)
		n_instances = strtoul(n, NULL, 10);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
