// SPDX-License-Identifier: MIT
/*
 * A burst of fleet tasks on one node, under drfd's own code: the node
 * (agent/fleet over a fake etcd, tests/lib/fakeetcd.h) and its task queue
 * (agent/tasks, in a temporary directory: each submit writes and syncs its
 * files) with a spawn whose tasks never end. N tasks are put in etcd at once
 * for the node; then the loop runs, a turn at a time, as drfd's does (the
 * node's watch answers, and the fleet timer: the node's tick and a step of
 * its tasks), until every task is handed over and the local queue is full
 * (DRF_TASKS_MAX_UID of the task-user's) or holds them all.
 *
 *   bench_burst N [ROUNDS]
 *
 * Printed: the longest turn (median and max over the rounds) and what it
 * served, the turns, the tasks handed over and queued; and, as the
 * yardstick, DRFD_FLEET_QUEUE_STEP_MAX submits straight to the queue (the
 * bounded step's own work) measured in the same rounds. No target asserted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-event.h>

#include "benchlib.h"
#include "fakecg.h"
#include "fakedrfd.h"
#include "fakeetcd.h"
#include "fleet.h"
#include "fleetd.h"
#include "tasks.h"

#define NODE_CONF                                                                              \
	"[capacity]\ncpu = 4\nmemory = 4G\n[fleet]\nendpoints = http://127.0.0.1:1\nnode = n1\n" \
	"task-user = nobody\n"
#define WEB "{\"weight\":1,\"tasks\":\"unlimited\",\"task\":{\"cpu\":1,\"memory\":268435456}}"
#define TASK "{\"tenant\":\"web\",\"argv\":[\"/bin/true\"],\"task\":{\"cpu\":1}}"

static void put_cb(void *userdata, int err, const char *msg, const struct etcd_resp *r)
{
	(void)msg;
	(void)r;
	*(int *)userdata = err ? err : 1;
}

struct run {
	double longest_us, yard_us;
	const char *longest_what;
	unsigned turns;
	size_t handed, queued;
};

static void turn_done(struct run *ret, double us, const char *what)
{
	ret->turns++;
	if (us > ret->longest_us) {
		ret->longest_us = us;
		ret->longest_what = what;
	}
}

/* Each event source served, timed: the watch's answers, the calls' replies. */
static int serve(sd_event *ev, struct run *ret)
{
	for (;;) {
		double t0 = bench_now_us();
		int r = sd_event_run(ev, 0);

		if (r <= 0)
			return r;
		turn_done(ret, bench_now_us() - t0, "etcd");
	}
}

static int burst(int n, struct run *ret)
{
	struct fakedrfd f;
	struct fakeetcd *fake = NULL;
	struct etcd *admin = NULL;
	sd_event *ev = NULL;
	char key[64], err[512];
	int r, done;
	uint64_t id;

	*ret = (struct run){ .longest_what = "none" };
	r = fakedrfd_setup(&f, "mode = limit\n", NODE_CONF);
	if (r < 0)
		return r;
	r = sd_event_new(&ev);
	fake = r < 0 ? NULL : fakeetcd_new(ev, &f.clock);
	if (!fake || fakeetcd_connect(fake, &admin) < 0) {
		r = -ENOMEM;
		goto out;
	}
	f.env.spawn = &fakedrfd_running_ops;
	f.env.etcd_open = fakedrfd_etcd_open;
	f.env.etcd_ctx = fake;
	r = fakedrfd_start(&f);
	if (r == 0) {
		f.d.event = sd_event_ref(ev);
		f.d.fleet_mode = true;
		r = drfd_fleet_open(&f.d, err, sizeof(err));
	}
	if (r == 0)
		r = drfd_fleet_start(&f.d);
	if (r < 0)
		goto out;
	done = 0;
	r = etcd_put(admin, &(struct etcd_req){ .key = "/drfd/tenants/web", .value = WEB,
						 .value_len = strlen(WEB) },
		     put_cb, &done, &id);
	/* The node plans itself (the only one), and puts web in force. */
	for (int k = 0; r == 0 && k < 25; k++) {
		fakedrfd_advance(&f, 200 * 1000);
		fakeetcd_tick(fake);
		drf_fleet_node_tick(f.d.fleet);
		serve(ev, &(struct run){ 0 });
		drfd_fleet_tasks_step(&f.d);
		serve(ev, &(struct run){ 0 });
	}
	if (r == 0 && f.d.decl.cfg.n_tenants != 1)
		r = -EPROTO;
	/* The burst: n tasks for the node, put at once (the etcd side is not timed). */
	for (int i = 0; r == 0 && i < n; i++) {
		snprintf(key, sizeof(key), "/drfd/tasks/n1/b-%06d", i);
		done = 0;
		r = etcd_put(admin, &(struct etcd_req){ .key = key, .value = TASK,
							 .value_len = strlen(TASK) },
			     put_cb, &done, &id);
		if (r == 0 && i % 256 == 255)
			r = serve(ev, ret) < 0 ? -EIO : 0;
	}
	for (int k = 0; r == 0 && k < 100000; k++) {
		double t0;
		size_t want = (size_t)n < DRF_TASKS_MAX_UID ? (size_t)n : DRF_TASKS_MAX_UID;

		r = serve(ev, ret) < 0 ? -EIO : 0;
		if (f.d.fleet_tasks_n == (size_t)n && f.d.tasks->n >= want && !f.d.fleet_more)
			break;
		/* The fleet timer's turn: 5 ms after a step with more to queue, else 200 ms. */
		fakedrfd_advance(&f, f.d.fleet_more ? 5 * 1000 : 200 * 1000);
		fakeetcd_tick(fake);
		t0 = bench_now_us();
		drf_fleet_node_tick(f.d.fleet);
		drfd_fleet_tasks_step(&f.d);
		turn_done(ret, bench_now_us() - t0, "fleet step");
	}
	ret->handed = f.d.fleet_tasks_n;
	ret->queued = f.d.tasks->n;
	/* The yardstick: a step's worth of submits straight to the queue. */
	if (r == 0) {
		double t0 = bench_now_us();

		for (int i = 0; i < DRFD_FLEET_QUEUE_STEP_MAX && r == 0; i++) {
			struct drf_task_req req = { 0 };
			char *argv[] = { "/bin/true", NULL };
			uint64_t tid;

			snprintf(req.tenant, sizeof(req.tenant), "web");
			req.vec[DRF_RES_CPU] = 1;
			req.given[DRF_RES_CPU] = true;
			req.uid = 0;
			req.cwd = "/";
			req.argv = argv;
			req.argc = 1;
			r = drf_tasks_submit(f.d.tasks, &f.d.decl.cfg, f.d.decl.problem.capacity, &req,
					     &tid, err, sizeof(err));
		}
		ret->yard_us = bench_now_us() - t0;
		if (r != 0)
			fprintf(stderr, "bench_burst: yardstick submit: %s\n", err);
	}
out:
	if (f.d.fleet)
		drfd_fleet_free(&f.d);
	etcd_close(admin);
	if (fake)
		fakeetcd_free(fake);
	if (ev) {
		serve(ev, &(struct run){ 0 });
		sd_event_unref(ev);
	}
	fakedrfd_teardown(&f);
	return r;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000, rounds = argc > 2 ? atoi(argv[2]) : 3;
	double *longest = calloc((size_t)rounds + 1, sizeof(double));
	double *yard = calloc((size_t)rounds + 1, sizeof(double));
	double max = 0;
	const char *max_what = "none";
	struct run run = { 0 };

	if (!longest || !yard || n <= 0 || rounds <= 0)
		return 1;
	for (int i = 0; i < rounds; i++) {
		int r = burst(n, &run);

		if (r < 0) {
			fprintf(stderr, "bench_burst: %s\n", strerror(-r));
			return 1;
		}
		if (run.handed != (size_t)n) {
			fprintf(stderr, "bench_burst: %zu of %d tasks handed over\n", run.handed, n);
			return 1;
		}
		longest[i] = run.longest_us;
		yard[i] = run.yard_us;
		if (run.longest_us > max) {
			max = run.longest_us;
			max_what = run.longest_what;
		}
	}
	printf("a burst of %d fleet tasks for one node, %d rounds (medians; target: no turn over "
	       "100 ms):\n"
	       "  the longest turn %.1f ms (max %.1f, serving: %s), %u turns; %zu handed over, %zu "
	       "queued locally (task-user's cap %d: the rest wait, none refused)\n"
	       "  yardstick: %d submits straight to the queue (one step's own work) %.1f ms; "
	       "longest turn / yardstick %.2f\n",
	       n, rounds, bench_median(longest, rounds) / 1000, max / 1000, max_what, run.turns,
	       run.handed, run.queued, DRF_TASKS_MAX_UID, DRFD_FLEET_QUEUE_STEP_MAX,
	       bench_median(yard, rounds) / 1000,
	       bench_median(longest, rounds) / bench_median(yard, rounds));
	free(longest);
	free(yard);
	return 0;
}
