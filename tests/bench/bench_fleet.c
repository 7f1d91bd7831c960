// SPDX-License-Identifier: MIT
/*
 * DRFH at fleet scale: the seed's Google cluster (12,583 servers in ten shapes,
 * the largest 64 cores and 256 GiB) and the same mix at 100,000 servers, with
 * 1,000 tenants from a seeded generator: tasks of 1-8 cores at 0.5-16 GiB per
 * core, weights 1-8, a task count each (some unlimited). For each fleet: the
 * divisible DRFH without weights or counts and with both, Best-Fit, First-Fit,
 * and per-server DRF beside them on the same fleet (the yardstick); each run in
 * its own child process, so that its peak RSS is its own. Then one server is
 * taken away and the plan made again: how long, and how many servers' tasks
 * changed (the etcd writes of that re-plan). Usage: bench_fleet [ROUNDS [KIND
 * [SIZES]]]; bench_fleet 1 issue29: issue 29's fleets (below).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"
#include "drfh.h"

#define GIB (1024.0 * 1024 * 1024)

static uint64_t rng_state;

static double unit(void)
{
	return bench_unit(&rng_state);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The seed's table: servers, CPU and memory normalized to the largest. */
static const struct {
	int count;
	double cpu, mem;
} google[10] = {
	{ 6732, 0.50, 0.50 }, { 3863, 0.50, 0.25 }, { 1001, 0.50, 0.75 }, { 795, 1.00, 1.00 },
	{ 126, 0.25, 0.25 },  { 52, 0.50, 0.12 },   { 5, 0.50, 0.03 },    { 5, 0.50, 0.97 },
	{ 3, 1.00, 0.50 },    { 1, 0.50, 0.06 },
};

static void fleet(size_t total, struct drfh_server_spec specs[10])
{
	size_t sum = 0;

	for (int k = 0; k < 10; k++) {
		memset(&specs[k], 0, sizeof(specs[k]));
		specs[k].capacity[DRF_RES_CPU] = 64 * google[k].cpu;
		specs[k].capacity[DRF_RES_MEMORY] = 256 * GIB * google[k].mem;
		specs[k].count = (size_t)google[k].count * total / 12583;
		if (specs[k].count == 0)
			specs[k].count = 1;
		sum += specs[k].count;
	}
	specs[0].count += total - sum; /* rounding goes to the commonest shape */
}

static void tenants(struct drf_demand *d, size_t n, bool weighted)
{
	rng_state = 20261126;
	for (size_t i = 0; i < n; i++) {
		double cores = 1 + floor(unit() * 8), per = 0.5 + unit() * 15.5;
		double w = 1 + floor(unit() * 8), count = 20 + floor(unit() * 380);
		bool unlimited = unit() < 0.1;

		memset(&d[i], 0, sizeof(d[i]));
		d[i].shape[DRF_RES_CPU] = cores;
		d[i].shape[DRF_RES_MEMORY] = cores * per * GIB;
		d[i].weight = weighted ? w : 1;
		d[i].max_units = weighted && !unlimited ? count : INFINITY;
	}
}

enum kind { K_DIV, K_BEST, K_FIRST, K_PERSERVER, K_N };
static const char *const kind_name[K_N] = { "divisible", "best-fit", "first-fit",
					    "per-server-drf" };

static int run(enum kind k, const struct drfh_problem *p, struct drfh_result *r)
{
	switch (k) {
	case K_DIV:
		return drfh_allocate(p, r);
	case K_BEST:
		return drfh_place(p, DRFH_BEST_FIT, r);
	case K_FIRST:
		return drfh_place(p, DRFH_FIRST_FIT, r);
	default:
		return drfh_per_server_drf(p, r);
	}
}

/* Servers whose tasks differ between two whole-task results: the writes of a re-plan. */
static size_t changed_servers(const struct drfh_result *a, const struct drfh_result *b,
			      size_t removed)
{
	/* per server, a hash of (tenant, tasks) pairs; a removed server shifts indexes after it */
	size_t ns = a->nservers, changed = 0;
	uint64_t *ha = calloc(ns, sizeof(*ha)), *hb = calloc(ns, sizeof(*hb));

	for (size_t k = 0; k < a->nplaces; k++)
		ha[a->places[k].where] += (a->places[k].tenant + 1) * 0x9e3779b97f4a7c15ULL *
					  (uint64_t)a->places[k].tasks;
	for (size_t k = 0; k < b->nplaces; k++) {
		size_t w = b->places[k].where;

		w += w >= removed; /* b's server w is a's server w (+1 past the removed one) */
		hb[w] += (b->places[k].tenant + 1) * 0x9e3779b97f4a7c15ULL *
			 (uint64_t)b->places[k].tasks;
	}
	for (size_t l = 0; l < ns; l++)
		changed += l != removed && ha[l] != hb[l];
	free(ha);
	free(hb);
	return changed;
}

static double jmin_of(const struct drfh_problem *p, const struct drfh_result *r)
{
	double j = INFINITY;

	for (size_t i = 0; i < r->n; i++)
		j = fmin(j, r->tenants[i].gds / p->demands[i].weight);
	return j;
}

/*
 * Issue 29's fleets. (1) Three nodes, two tenants of cpu and memory, and an
 * unlimited tenant of net-rate whose task is ~1e-8 of the pool (2.6 bit/s of
 * 250 Mbit/s): Best-Fit's time and work, beside the same fleet with tasks
 * 1e6 times larger (the yardstick: what a plan costs when tasks are few);
 * and a fourth node that says it has 1e15 bytes, refused by the bounds.
 * (2) `drfctl fleet plan` of 100 servers (each its own shape) and 10,000
 * tenants (tasks of 128 shapes), divisible: its time and LPs, beside the same
 * fleet with every tenant unlimited and of weight 1 (the yardstick: the LPs of
 * one freeze); then 1,000 tenants whose tasks all differ in shape (the LP has a
 * row per shape: its worst case). Usage: bench_fleet 1 issue29 [SERVERS
 * [TENANTS [TENANTS-OF-OWN-SHAPES]]].
 */
static void issue29_tiny(void)
{
	static const double cap[4][3] = {
		{ 8, 16, 100e6 }, { 16, 32, 100e6 }, { 4, 8, 50e6 }, { 8, 16, 1e15 } };
	struct drfh_server_spec sv[4];
	struct drf_demand d[3];
	struct drfh_problem p = { .nspecs = 3, .specs = sv, .n = 3, .demands = d };
	const char *rname = "?";
	int bad = -1;

	memset(sv, 0, sizeof(sv));
	memset(d, 0, sizeof(d));
	for (int s = 0; s < 4; s++) {
		sv[s].count = 1;
		sv[s].capacity[DRF_RES_CPU] = cap[s][0];
		sv[s].capacity[DRF_RES_MEMORY] = cap[s][1] * GIB;
		sv[s].capacity[DRF_RES_NET] = cap[s][2];
	}
	d[0].weight = d[1].weight = d[2].weight = 1;
	d[0].max_units = 6;
	d[0].shape[DRF_RES_CPU] = 1;
	d[0].shape[DRF_RES_MEMORY] = GIB;
	d[1].max_units = d[2].max_units = INFINITY;
	d[1].shape[DRF_RES_CPU] = 2;
	d[1].shape[DRF_RES_MEMORY] = 2 * GIB;
	if (drfh_capacity_check(sv[3].capacity, &bad) < 0)
		rname = bad == DRF_RES_NET ? "net-rate" : "another resource";
	printf("issue 29, a fleet of 3 nodes (cpu 8/16/4, memory 16/32/8G, net-rate "
	       "100/100/50 Mbit/s) and a 4th that says net-rate 1e15: refused (%s past %g), "
	       "left out\n", rname, bad >= 0 ? drfh_capacity_max(bad) : 0);
	for (int k = 0; k < 2; k++) {
		double task = k ? 2.6e6 : 2.6, best = INFINITY;
		struct drfh_result r;
		uint64_t work = 0, tasks = 0;

		d[2].shape[DRF_RES_NET] = task;
		for (int rep = 0; rep < 5; rep++) {
			double t0 = now_s(), t1;

			if (drfh_place(&p, DRFH_BEST_FIT, &r) < 0) {
				printf("  best-fit: error\n");
				exit(1);
			}
			t1 = now_s();
			best = fmin(best, t1 - t0);
			work = r.work;
			tasks = r.rounds;
			drfh_result_free(&r);
		}
		printf("  best-fit, unlimited tenant of %-9g bit/s tasks: %8.6f s (best of 5), "
		       "%llu tasks for %llu steps of work%s\n", task, best,
		       (unsigned long long)tasks, (unsigned long long)work,
		       k ? "  (yardstick: tasks 1e6 times larger)" : "");
	}
}

/* mode 0: the fleet; 1: its yardstick; 2: every task a shape of its own (no two alike). */
static void issue29_divisible(int mode, size_t ns, size_t n)
{
	bool yardstick = mode == 1;
	struct drfh_server_spec *sv = calloc(ns, sizeof(*sv));
	struct drf_demand *d = calloc(n, sizeof(*d));
	struct drfh_problem p = { .nspecs = ns, .specs = sv, .n = n, .demands = d };
	struct drfh_result r;
	double t0, t1;

	rng_state = 29;
	for (size_t s = 0; s < ns; s++) {
		sv[s].count = 1;
		sv[s].capacity[DRF_RES_CPU] = 16 + floor(unit() * 49);
		sv[s].capacity[DRF_RES_MEMORY] = (64 + floor(unit() * 193)) * GIB;
	}
	for (size_t i = 0; i < n; i++) {
		d[i].shape[DRF_RES_CPU] = 1 + floor(unit() * 8);
		d[i].shape[DRF_RES_MEMORY] = (1 + floor(unit() * 16)) * GIB;
		if (mode == 2) {
			d[i].shape[DRF_RES_CPU] = 1 + unit() * 7;
			d[i].shape[DRF_RES_MEMORY] = (1 + unit() * 15) * GIB;
		}
		d[i].weight = 1 + floor(unit() * 8);
		d[i].max_units = unit() < 0.2 ? INFINITY : 1 + floor(unit() * 50);
		if (yardstick) {
			d[i].weight = 1;
			d[i].max_units = INFINITY;
		}
	}
	t0 = now_s();
	if (drfh_allocate(&p, &r) < 0) {
		printf("  divisible: error\n");
		exit(1);
	}
	t1 = now_s();
	printf("  divisible DRFH, %zu servers (%zu groups) x %zu tenants%s: %7.3f s, %llu LPs, "
	       "cpu %5.1f%% memory %5.1f%%, least G/w %.3g\n", ns, r.ngroups, n,
	       yardstick   ? " (yardstick: all unlimited, weight 1)"
	       : mode == 2 ? ", every task its own shape, weights 1-8, counts 1-50 (20% unlimited)"
			   : ", weights 1-8, counts 1-50 (20% unlimited)",
	       t1 - t0, (unsigned long long)r.rounds, 100 * r.utilization[DRF_RES_CPU],
	       100 * r.utilization[DRF_RES_MEMORY], jmin_of(&p, &r));
	drfh_result_free(&r);
	free(sv);
	free(d);
}

/* One measurement in a child: prints a line; the parent reads the child's peak RSS. */
static void measure(size_t nservers, bool weighted, enum kind k, bool replan)
{
	struct drfh_server_spec specs[10];
	struct drf_demand *d = calloc(1000, sizeof(*d));
	struct drfh_problem p = { .nspecs = 10, .specs = specs, .n = 1000, .demands = d };
	struct drfh_result r, r2;
	double t0, t1, placed = 0, jmin = INFINITY;
	int err;

	fleet(nservers, specs);
	tenants(d, 1000, weighted);
	t0 = now_s();
	err = run(k, &p, &r);
	t1 = now_s();
	if (err < 0) {
		printf("  %-15s error %d\n", kind_name[k], err);
		exit(1);
	}
	for (size_t i = 0; i < r.n; i++) {
		placed += r.tenants[i].units;
		jmin = fmin(jmin, r.tenants[i].gds / d[i].weight);
	}
	if (!replan) {
		printf("  %-15s %9.3f s  %7llu %-6s  tasks %9.0f  cpu %5.1f%%  mem %5.1f%%  "
		       "least G/w %.5f  Jain %.4f",
		       kind_name[k], t1 - t0, (unsigned long long)r.rounds,
		       k == K_DIV ? "LPs" : "placed", placed, 100 * r.utilization[DRF_RES_CPU],
		       100 * r.utilization[DRF_RES_MEMORY], jmin, drfh_jain(&p, &r));
	} else {
		/* The first server of the commonest shape leaves: the fleet's plan again. */
		struct drfh_place *prev = malloc((r.nplaces + 1) * sizeof(*prev));
		size_t nprev = 0;

		for (size_t j = 0; j < r.nplaces && k != K_DIV; j++)
			if (r.places[j].where != 0) {
				prev[nprev] = r.places[j];
				prev[nprev++].where--;
			}
		specs[0].count--;
		t0 = now_s();
		err = k == K_BEST    ? drfh_place_from(&p, DRFH_BEST_FIT, prev, nprev, &r2)
		      : k == K_FIRST ? drfh_place_from(&p, DRFH_FIRST_FIT, prev, nprev, &r2)
				     : run(k, &p, &r2);
		t1 = now_s();
		free(prev);
		if (err < 0)
			exit(1);
		printf("  %-15s %9.3f s  re-plan after one server left%s", kind_name[k], t1 - t0,
		       k == K_BEST || k == K_FIRST ? " (from the plan in force)" : " (afresh)");
		if (k != K_DIV)
			printf(": %zu of %zu servers' tasks changed (etcd writes)",
			       changed_servers(&r, &r2, 0), r.nservers - 1);
		else
			printf(": groups' totals only (%zu groups)", r2.ngroups);
		drfh_result_free(&r2);
	}
	fflush(stdout);
	drfh_result_free(&r);
	free(d);
	exit(0);
}

static void child(size_t nservers, bool weighted, enum kind k, bool replan)
{
	struct rusage ru;
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();

	if (pid == 0)
		measure(nservers, weighted, k, replan);
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		printf("  %s: the child failed\n", kind_name[k]);
		exit(1);
	}
	printf("  peak RSS %6.1f MiB\n", (double)ru.ru_maxrss / 1024);
}

int main(int argc, char **argv)
{
	static const size_t sizes[2] = { 12583, 100000 };
	int rounds = argc > 1 ? atoi(argv[1]) : 1;
	const char *only = argc > 2 ? argv[2] : NULL; /* a kind's name: that one alone */
	size_t smax = argc > 3 ? (size_t)atoi(argv[3]) : 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (only && strcmp(only, "issue29") == 0) {
		size_t ns = argc > 3 ? (size_t)atoi(argv[3]) : 100;
		size_t nt = argc > 4 ? (size_t)atoi(argv[4]) : 10000;
		size_t nd = argc > 5 ? (size_t)atoi(argv[5]) : nt / 10;

		issue29_tiny();
		issue29_divisible(0, ns, nt);
		issue29_divisible(1, ns, nt);
		issue29_divisible(2, ns, nd);
		return 0;
	}
	printf("DRFH, 1000 tenants (tasks 1-8 cores, 0.5-16 GiB per core), the seed's ten server "
	       "shapes (largest 64 cores, 256 GiB); one core, each run in its own process\n");
	for (int round = 0; round < rounds; round++)
		for (size_t s = 0; s < smax; s++)
			for (int w = 0; w < 2; w++) {
				printf("%zu servers, %s:\n", sizes[s],
				       w ? "weights 1-8, task counts 20-399 (10% unlimited)"
					 : "equal weights, unlimited tasks");
				for (int k = 0; k < K_N; k++)
					if (!only || strcmp(only, kind_name[k]) == 0)
						child(sizes[s], w, (enum kind)k, false);
				if (w)
					for (int k = 0; k < K_N; k++)
						if (!only || strcmp(only, kind_name[k]) == 0)
							child(sizes[s], w, (enum kind)k, true);
			}
	return 0;
}
