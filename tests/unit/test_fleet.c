// SPDX-License-Identifier: MIT
/*
 * [fleet] The fleet's nodes and planner (agent/fleet/fleet.h) over the fake
 * etcd (tests/lib/fakeetcd.h): up to four nodes, each its own client of one
 * store, on one sd-event loop, with a clock the test moves (leases expire by
 * it). advance() moves it in steps of 100 ms, ticking the store and the nodes
 * that are "alive" (a dead or frozen node is one the test no longer ticks,
 * cut off from etcd by fakeetcd_partition), and runs the loop until idle.
 *
 * The fleet: nodes A (24 cores, 96G), B (32 cores, 48G), C (20 cores, 64G),
 * and D (16 cores, 32G) when a test adds it; the tenants of FITS (35 cores
 * and 80G with t-web's 8 tasks: any two of A, B, C hold them, so that a
 * node's death leaves every task placed) or of FULL (an unlimited tenant
 * besides: the fleet is contended).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "config.h"
#include "etcd.h"
#include "fakeetcd.h"
#include "fleet.h"
#include "fleetplan.h"
#include "testlib.h"

#define TTL 10
/* The planner keeps a silent node's share so long (the default: the nodes set none). */
#define GRACE (DRF_FLEET_GRACE_TTLS * TTL)
#define STEP (100 * DRF_USEC_PER_MSEC)
#define G (1024.0 * 1024 * 1024)
#define PREFIX "/drfd/"
#define NNODES 4

static const char *const names[NNODES] = { "A", "B", "C", "D" };
static const double caps[NNODES][2] = { { 24, 96 * G }, { 32, 48 * G }, { 20, 64 * G },
					{ 16, 32 * G } };

#define TENANTS_FITS                                                                           \
	"[tenant t-batch]\ntask-cpu = 4\ntask-memory = 4G\ntasks = 4\n\n"                      \
	"[tenant t-mem]\ntask-cpu = 1\ntask-memory = 16G\ntasks = 3\ncgroup = mem/work\n\n"    \
	"[tenant t-web]\nweight = 2\ntask-cpu = 2\ntask-memory = 2G\ntasks = %d\n"
#define TENANT_FILL "\n[tenant t-zfill]\ntask-cpu = 1\ntask-memory = 6G\ntasks = unlimited\n"

struct tnode {
	const char *name;
	struct drf_fleet_node *n;
	struct etcd *e;
	bool alive;
	int assignments; /* on_assignment calls */
	bool refuse;     /* the owner refuses each assignment (as drfd a bad one) */
	bool plain;      /* started with [fleet] planner = no */
	struct drf_fleet_assignment last;
	int64_t revs[64]; /* each one's revision (0: withdrawn), the first 64 */
	char state_dir[128];
};

static struct {
	sd_event *ev;
	struct fakeetcd *fake;
	struct drf_fake_clock clk;
	struct drf_clock clock;
	struct etcd *admin; /* the test's own client, as drfctl fleet apply */
	char dir[64];
	struct tnode node[NNODES];
} env;

static void pump(void)
{
	int r;

	while ((r = sd_event_run(env.ev, 0)) > 0)
		;
	assert_int_equal(r, 0);
}

static void on_assignment(void *userdata, const struct drf_fleet_assignment *a)
{
	struct tnode *t = userdata;

	if (t->assignments < 64)
		t->revs[t->assignments] = a->revision;
	t->assignments++;
	drf_fleet_assignment_clear(&t->last);
	assert_int_equal(drf_fleet_assignment_copy(&t->last, a), 0);
	drf_fleet_node_applied(t->n, a->revision, t->refuse ? -EINVAL : 0,
			       t->refuse ? "refused by the test" : NULL);
}

static struct tnode *node_start(int i, bool cut)
{
	struct tnode *t = &env.node[i];
	struct drf_fleet_node_config c = {
		.node = names[i],
		.ttl = TTL,
		.state_dir = t->state_dir,
		.plain = t->plain,
		.clock = &env.clock,
		.on_assignment = on_assignment,
		.userdata = t,
	};
	char err[256];

	c.capacity[DRF_RES_CPU] = caps[i][0];
	c.capacity[DRF_RES_MEMORY] = caps[i][1];
	t->name = names[i];
	assert_int_equal(fakeetcd_connect(env.fake, &t->e), 0);
	if (cut)
		assert_int_equal(fakeetcd_partition(t->e, true), 0);
	assert_int_equal(drf_fleet_node_new(&c, t->e, &t->n, err, sizeof(err)), 0);
	assert_int_equal(drf_fleet_node_start(t->n), 0);
	assert_int_equal(drf_fleet_node_start(t->n), -EALREADY);
	t->alive = true;
	return t;
}

static void node_free(struct tnode *t)
{
	drf_fleet_node_free(t->n);
	t->n = NULL;
	t->e = NULL;
	t->alive = false;
}

/* Moves the clock by usec in steps, ticking the store and the nodes alive. */
static void advance(uint64_t usec)
{
	for (uint64_t done = 0; done < usec; done += STEP) {
		env.clk.mono += STEP;
		env.clk.real += STEP;
		fakeetcd_tick(env.fake);
		for (int i = 0; i < NNODES; i++)
			if (env.node[i].alive)
				drf_fleet_node_tick(env.node[i].n);
		pump();
	}
}

/* Advances until ok() holds, at most max usec: the time it took. */
static uint64_t advance_until(bool (*ok)(void), uint64_t max)
{
	uint64_t t0 = env.clk.mono;

	pump();
	while (!ok()) {
		if (env.clk.mono - t0 > max) {
			print_error("not within %.1f s\n", (double)max / DRF_USEC_PER_SEC);
			fail();
		}
		advance(STEP);
	}
	return env.clk.mono - t0;
}

static struct drf_fleet_status status_of(const struct tnode *t)
{
	struct drf_fleet_status st;

	drf_fleet_node_status(t->n, &st);
	return st;
}

/* The node that plans, among those running (NULL: none); fails on two. */
static struct tnode *planner(void)
{
	struct tnode *p = NULL;

	for (int i = 0; i < NNODES; i++) {
		if (!env.node[i].n || !env.node[i].alive || !status_of(&env.node[i]).planner)
			continue;
		assert_null(p);
		p = &env.node[i];
	}
	return p;
}

/* P/assign/NODE as the store has it: 0, or -ENOENT. */
static int stored(const char *node, struct drf_fleet_assignment *ret)
{
	char key[64];
	const struct etcd_kv *kv;

	snprintf(key, sizeof(key), PREFIX "assign/%s", node);
	kv = fakeetcd_get(env.fake, key);
	if (!kv)
		return -ENOENT;
	assert_int_equal(drf_fleet_assignment_parse(kv->value, kv->value_len, ret, NULL, 0), 0);
	return 0;
}

static int64_t stored_mod(const char *node)
{
	char key[64];
	const struct etcd_kv *kv;

	snprintf(key, sizeof(key), PREFIX "assign/%s", node);
	kv = fakeetcd_get(env.fake, key);
	return kv ? kv->mod_revision : 0;
}

/* Tasks of tenant in a node's stored assignment. */
static double stored_tasks(const char *node, const char *tenant)
{
	struct drf_fleet_assignment a;
	double n = 0;

	if (stored(node, &a) < 0)
		return 0;
	for (size_t i = 0; i < a.n; i++)
		if (strcmp(a.tenants[i].name, tenant) == 0)
			n = a.tenants[i].tasks;
	drf_fleet_assignment_clear(&a);
	return n;
}

static double total_tasks(const char *tenant)
{
	double n = 0;

	for (int i = 0; i < NNODES; i++)
		n += stored_tasks(names[i], tenant);
	return n;
}

/* Writes the tenants (t-web's count) into a file of the test's. */
static void tenants_file(const char *path, int web, bool fill)
{
	char text[1024];
	int n = snprintf(text, sizeof(text), TENANTS_FITS, web);

	snprintf(text + n, sizeof(text) - (size_t)n, "%s", fill ? TENANT_FILL : "");
	assert_int_equal(t_write_file(path, text), 0);
}

struct applied {
	bool done;
	int err;
	struct drf_fleet_apply_result r;
};

static void apply_cb(void *userdata, int err, const char *msg,
		     const struct drf_fleet_apply_result *r)
{
	struct applied *a = userdata;

	(void)msg;
	a->done = true;
	a->err = err;
	if (!err)
		a->r = *r;
}

/* drfctl fleet apply's work: the tenants of the FITS file (t-web's count), and FULL's. */
static struct drf_fleet_apply_result apply(int web, bool fill)
{
	char path[128], err[512];
	struct drf_fleet f;
	struct applied a = { 0 };

	snprintf(path, sizeof(path), "%s/tenants.conf", env.dir);
	tenants_file(path, web, fill);
	assert_int_equal(drf_fleet_load_tenants(path, &f, err, sizeof(err)), 0);
	assert_int_equal(drf_fleet_apply(env.admin, PREFIX, f.cfg.tenants, f.cfg.n_tenants,
					 apply_cb, &a),
			 0);
	pump();
	assert_true(a.done);
	assert_int_equal(a.err, 0);
	drf_fleet_free(&f);
	return a.r;
}

static void put_cb(void *userdata, int err, const char *msg, const struct etcd_resp *r)
{
	int64_t *rev = userdata;

	(void)msg;
	*rev = err ? err : r->revision;
}

/* key = value, by the test's client: the put's revision. */
static int64_t admin_put(const char *key, const char *value)
{
	struct etcd_req q = { .key = key, .value = value, .value_len = strlen(value) };
	int64_t rev = 0;
	uint64_t id;

	assert_int_equal(etcd_put(env.admin, &q, put_cb, &rev, &id), 0);
	pump();
	assert_true(rev > 0);
	return rev;
}

/* Deletes key as an operator would: its revision. */
static int64_t admin_delete(const char *key)
{
	struct etcd_req q = { .key = key };
	int64_t rev = 0;
	uint64_t id;

	assert_int_equal(etcd_delete(env.admin, &q, put_cb, &rev, &id), 0);
	pump();
	assert_true(rev > 0);
	return rev;
}

static int web_count = 8;

/* Every node started has an assignment equal to the store's, and every FITS task is placed. */
static bool settled(void)
{
	for (int i = 0; i < NNODES; i++) {
		struct tnode *t = &env.node[i];
		struct drf_fleet_assignment a;
		const struct drf_fleet_assignment *cur;
		bool same;

		if (!t->n || !t->alive)
			continue;
		cur = drf_fleet_node_assignment(t->n);
		if (!status_of(t).registered || stored(t->name, &a) < 0)
			return false;
		same = cur && cur->revision == a.revision && drf_fleet_assignment_same(cur, &a);
		drf_fleet_assignment_clear(&a);
		if (!same)
			return false;
	}
	return planner() != NULL && total_tasks("t-batch") == 4 && total_tasks("t-mem") == 3 &&
	       total_tasks("t-web") == web_count;
}

/* Nodes A, B, C up, one planner, the FITS tenants placed. */
static void fleet_up(void)
{
	for (int i = 0; i < 3; i++)
		node_start(i, false);
	advance(STEP);
	apply(web_count, false);
	advance_until(settled, 5 * DRF_USEC_PER_SEC);
}

static int setup(void **state)
{
	(void)state;
	memset(&env, 0, sizeof(env));
	web_count = 8;
	assert_int_equal(sd_event_new(&env.ev), 0);
	env.clk.mono = 1000 * DRF_USEC_PER_SEC;
	env.clk.real = 1700000000 * DRF_USEC_PER_SEC;
	env.clock = (struct drf_clock){ .now = drf_fake_clock_now, .ctx = &env.clk };
	env.fake = fakeetcd_new(env.ev, &env.clock);
	assert_non_null(env.fake);
	assert_int_equal(fakeetcd_connect(env.fake, &env.admin), 0);
	snprintf(env.dir, sizeof(env.dir), "/tmp/test_fleet.XXXXXX");
	assert_non_null(mkdtemp(env.dir));
	assert_int_equal(chmod(env.dir, 0755), 0);
	for (int i = 0; i < NNODES; i++) {
		snprintf(env.node[i].state_dir, sizeof(env.node[i].state_dir), "%s/%s", env.dir,
			 names[i]);
		env.node[i].name = names[i];
	}
	return 0;
}

static void rm_rf(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char p[512];

	if (!d) {
		unlink(path);
		return;
	}
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
		rm_rf(p);
	}
	closedir(d);
	rmdir(path);
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < NNODES; i++) {
		drf_fleet_node_free(env.node[i].n);
		drf_fleet_assignment_clear(&env.node[i].last);
	}
	etcd_close(env.admin);
	fakeetcd_free(env.fake);
	pump();
	sd_event_unref(env.ev);
	rm_rf(env.dir);
	memset(&env, 0, sizeof(env));
	return 0;
}

/* One planner, elected once: its key created once, kept by its keepalives, agreed by all. */
static void test_elected_once(void **state)
{
	const struct etcd_kv *kv;
	struct tnode *p = NULL;
	int64_t created;

	(void)state;
	for (int i = 0; i < 3; i++)
		node_start(i, false);
	for (int k = 0; k < 10 && !p; k++) {
		advance(STEP);
		p = planner();
	}
	assert_non_null(p);
	kv = fakeetcd_get(env.fake, PREFIX "planner");
	assert_non_null(kv);
	assert_string_equal(kv->value, p->name);
	created = kv->create_revision;
	/* Three TTLs: keepalives hold it; nobody else takes it. */
	for (int k = 0; k < 3 * TTL * 10; k++) {
		advance(STEP);
		assert_ptr_equal(planner(), p);
	}
	kv = fakeetcd_get(env.fake, PREFIX "planner");
	assert_non_null(kv);
	assert_int_equal(kv->create_revision, created);
	assert_int_equal(kv->version, 1);
	for (int i = 0; i < 3; i++) {
		struct drf_fleet_status st = status_of(&env.node[i]);

		assert_string_equal(st.planner_name, p->name);
		assert_int_equal(st.planner_token, created);
		assert_true(st.registered);
		assert_true(st.reachable);
		assert_true(st.lease != 0);
		/* Each has an assignment (empty: no tenants yet) from the planner. */
		assert_true(st.has_assignment);
		assert_int_equal(env.node[i].last.n, 0);
	}
	assert_true(status_of(p).nodes == 3);
	/* The next thing a tick has to do: a keepalive, within a third of the TTL. */
	for (int i = 0; i < 3; i++) {
		uint64_t next = drf_fleet_node_next_tick(env.node[i].n);

		assert_true(next > env.clk.mono);
		assert_true(next <= env.clk.mono + (uint64_t)TTL * DRF_USEC_PER_SEC / 3);
	}
	assert_non_null(fakeetcd_get(env.fake, PREFIX "nodes/A"));
	assert_int_equal(fakeetcd_get(env.fake, PREFIX "nodes/A")->lease,
			 status_of(&env.node[0]).lease);
}

/* The assignments are drfctl fleet plan --discrete's (Best-Fit) of the same nodes and tenants. */
static void test_best_fit_equal(void **state)
{
	char path[128], err[512], text[2048];
	struct drf_fleet f;
	struct drfh_problem p;
	struct drfh_server_spec *specs;
	struct drf_demand *dem;
	struct drfh_result r;
	int n = 0;

	(void)state;
	for (int i = 0; i < 3; i++)
		node_start(i, false);
	advance(STEP);
	apply(8, true);
	advance(STEP);
	/* The same fleet as a fleet file: servers A, B, C (name order), the tenants by name. */
	for (int i = 0; i < 3; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n,
			      "[server %s]\ncpu = %g\nmemory = %.0f\n\n", names[i], caps[i][0],
			      caps[i][1]);
	n += snprintf(text + n, sizeof(text) - (size_t)n, TENANTS_FITS, 8);
	n += snprintf(text + n, sizeof(text) - (size_t)n, "%s", TENANT_FILL);
	snprintf(path, sizeof(path), "%s/fleet.conf", env.dir);
	assert_int_equal(t_write_file(path, text), 0);
	assert_int_equal(drf_fleet_load(path, &f, err, sizeof(err)), 0);
	assert_int_equal(drf_fleet_problem(&f, &p, &specs, &dem), 0);
	assert_int_equal(drf_fleet_plan(&f, &p, DRF_FLEET_BEST_FIT, &r), 0);
	/* The tenants are sorted by name in the file, as the planner takes them. */
	for (size_t i = 1; i < f.cfg.n_tenants; i++)
		assert_true(strcmp(f.cfg.tenants[i - 1].name, f.cfg.tenants[i].name) < 0);
	for (size_t s = 0; s < 3; s++) {
		struct drf_fleet_assignment a;
		size_t placed = 0;

		assert_int_equal(stored(names[s], &a), 0);
		for (size_t k = 0; k < r.nplaces; k++) {
			const struct drfh_place *pl = &r.places[k];
			const struct drf_tenant *t = &f.cfg.tenants[pl->tenant];
			bool found = false;

			if (pl->where != s)
				continue;
			placed++;
			for (size_t j = 0; j < a.n; j++) {
				if (strcmp(a.tenants[j].name, t->name) != 0)
					continue;
				found = true;
				assert_true(a.tenants[j].tasks == pl->tasks);
				assert_true(a.tenants[j].alloc[DRF_RES_CPU] ==
					    pl->tasks * dem[pl->tenant].shape[DRF_RES_CPU]);
				assert_true(a.tenants[j].alloc[DRF_RES_MEMORY] ==
					    pl->tasks * dem[pl->tenant].shape[DRF_RES_MEMORY]);
				assert_true(a.tenants[j].weight == t->weight);
				assert_string_equal(a.tenants[j].cgroup, t->cgroup);
			}
			assert_true(found);
		}
		assert_int_equal(a.n, placed);
		/* The node has it in force, as the store has it. */
		assert_true(drf_fleet_assignment_same(&env.node[s].last, &a));
		assert_int_equal(env.node[s].last.revision, a.revision);
		drf_fleet_assignment_clear(&a);
	}
	/* The unlimited tenant (the last by name) filled the fleet: the contended case. */
	assert_int_equal(f.cfg.n_tenants, 4);
	assert_true(r.tenants[3].units > 0);
	assert_int_equal(r.tenants[3].limited_by, DRFH_LIMIT_CAPACITY);
	drfh_result_free(&r);
	free(specs);
	free(dem);
	drf_fleet_free(&f);
}

static const char *victim;

static bool victim_replanned(void)
{
	return stored_mod(victim) == 0 && total_tasks("t-batch") == 4 &&
	       total_tasks("t-mem") == 3 && total_tasks("t-web") == 8;
}

/*
 * A node's lease expiring: its share stays planned on it for the grace
 * period; then its tasks go to the others within TTL + grace + 2 s; theirs
 * stay.
 */
static void test_lease_expiry_replans(void **state)
{
	static const char *const tenants[] = { "t-batch", "t-mem", "t-web" };
	double before[NNODES][3];
	struct tnode *v = NULL;
	char key[64];
	uint64_t took;
	double moved = 0;
	int64_t mod;

	(void)state;
	fleet_up();
	for (int i = 0; i < 3 && !v; i++)
		if (!status_of(&env.node[i]).planner && env.node[i].last.n > 0)
			v = &env.node[i];
	assert_non_null(v);
	victim = v->name;
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			before[i][j] = stored_tasks(names[i], tenants[j]);
	/* It dies: no keepalive again. */
	mod = stored_mod(v->name);
	assert_int_equal(fakeetcd_partition(v->e, true), 0);
	v->alive = false;
	/* Its registration gone, its share kept: nothing rewritten, the planner counts it silent. */
	advance((TTL + 2) * DRF_USEC_PER_SEC);
	snprintf(key, sizeof(key), PREFIX "nodes/%s", v->name);
	assert_null(fakeetcd_get(env.fake, key));
	assert_int_equal(stored_mod(v->name), mod);
	assert_int_equal(status_of(planner()).silent_nodes, 1);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			assert_true(stored_tasks(names[i], tenants[j]) == before[i][j]);
	took = (TTL + 2) * DRF_USEC_PER_SEC +
	       advance_until(victim_replanned, (GRACE + 5) * DRF_USEC_PER_SEC);
	assert_le_tol((double)took, (double)(TTL + GRACE + 2) * DRF_USEC_PER_SEC, 0, 0,
		      "from the node's death to its tasks re-planned (usec)");
	assert_true((double)took >= (double)GRACE * DRF_USEC_PER_SEC);
	assert_int_equal(status_of(planner()).silent_nodes, 0);
	for (int i = 0; i < 3; i++) {
		if (&env.node[i] == v)
			continue;
		for (int j = 0; j < 3; j++) {
			/* What was on the survivors stays there. */
			assert_true(stored_tasks(names[i], tenants[j]) >= before[i][j]);
			moved += stored_tasks(names[i], tenants[j]) - before[i][j];
		}
	}
	for (int j = 0; j < 3; j++)
		moved -= before[v - env.node][j];
	assert_true(moved == 0); /* exactly the victim's tasks moved */
	/* The dead node, cut off, still holds its last assignment. */
	assert_true(drf_fleet_node_assignment(v->n)->n > 0);
}

static struct tnode *old_planner;

static bool new_planner(void)
{
	struct tnode *p = planner();

	return p && p != old_planner;
}

static bool old_planner_replanned(void)
{
	return stored_mod(old_planner->name) == 0 && settled();
}

/*
 * The planner dies: another within one TTL. The old one, frozen meanwhile
 * (a SIGSTOP, a pause), comes back believing it plans: its write is fenced.
 */
static void test_planner_death_fenced(void **state)
{
	struct tnode *p, *q;
	struct drf_fleet_status st;
	int64_t rev, mods[NNODES];
	uint64_t took;

	(void)state;
	fleet_up();
	p = old_planner = planner();
	assert_non_null(p);
	assert_int_equal(fakeetcd_partition(p->e, true), 0);
	p->alive = false;
	took = advance_until(new_planner, 2 * TTL * DRF_USEC_PER_SEC);
	assert_le_tol((double)took, (double)TTL * DRF_USEC_PER_SEC + STEP, 0, 0,
		      "from the planner's death to a new planner (usec)");
	q = planner();
	assert_string_equal(fakeetcd_get(env.fake, PREFIX "planner")->value, q->name);
	advance_until(old_planner_replanned, (GRACE + 5) * DRF_USEC_PER_SEC);

	/* The new planner frozen too, and a change it does not see. */
	assert_int_equal(fakeetcd_partition(q->e, true), 0);
	q->alive = false;
	apply(9, false);
	rev = fakeetcd_revision(env.fake);
	for (int i = 0; i < NNODES; i++)
		mods[i] = stored_mod(names[i]);
	/* The old planner resumes, still a planner in its own eyes, and plans the change. */
	assert_int_equal(fakeetcd_partition(p->e, false), 0);
	assert_true(status_of(p).planner);
	assert_int_equal(drf_fleet_node_replan(p->n), 0);
	pump();
	st = status_of(p);
	assert_false(st.planner);
	assert_int_equal(st.fenced, 1);
	assert_string_equal(st.planner_name, q->name);
	assert_int_equal(drf_fleet_node_replan(p->n), -EPERM);
	/* Nothing written: the store is as it was. */
	assert_int_equal(fakeetcd_revision(env.fake), rev);
	for (int i = 0; i < NNODES; i++)
		assert_int_equal(stored_mod(names[i]), mods[i]);
	assert_true(total_tasks("t-web") == 8);

	/* Both back: the new planner plans the change; the old node registers again. */
	assert_int_equal(fakeetcd_partition(q->e, false), 0);
	q->alive = p->alive = true;
	web_count = 9;
	advance_until(settled, 3 * TTL * DRF_USEC_PER_SEC);
	assert_ptr_equal(planner(), q);
	assert_true(status_of(p).registered);
	assert_true(stored_mod(p->name) > rev);
}

/* A node that does not plan and has tasks. */
static int follower(void)
{
	for (int i = 0; i < 3; i++)
		if (!status_of(&env.node[i]).planner && env.node[i].last.n > 0)
			return i;
	fail();
	return -1;
}

/* P/planner deleted by hand: one planner again at once, with a new token all nodes know. */
static void test_planner_key_deleted(void **state)
{
	const struct etcd_kv *kv;
	int64_t old;
	struct tnode *p;

	(void)state;
	fleet_up();
	old = fakeetcd_get(env.fake, PREFIX "planner")->create_revision;
	admin_delete(PREFIX "planner");
	p = planner();
	assert_non_null(p);
	kv = fakeetcd_get(env.fake, PREFIX "planner");
	assert_non_null(kv);
	assert_true(kv->create_revision > old);
	assert_string_equal(kv->value, p->name);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(status_of(&env.node[i]).planner_token, kv->create_revision);
		assert_string_equal(status_of(&env.node[i]).planner_name, p->name);
	}
	/* It plans with the new token: a change is written. */
	apply(9, false);
	web_count = 9;
	advance_until(settled, DRF_USEC_PER_SEC);
	assert_int_equal(status_of(p).fenced, 0);
}

/*
 * A node's key deleted while its lease lives (by hand, or by another drfd of
 * its name whose lease ended): the planner keeps its share for the grace
 * period, then withdraws its assignment; the node keeps what it runs,
 * registers again and gets one back.
 */
static bool b_registered(void)
{
	return fakeetcd_get(env.fake, PREFIX "nodes/B") && settled();
}

static void test_node_key_deleted(void **state)
{
	(void)state;
	fleet_up();
	admin_delete(PREFIX "nodes/B");
	advance(STEP);
	advance_until(b_registered, (GRACE + 3) * DRF_USEC_PER_SEC);
	assert_non_null(fakeetcd_get(env.fake, PREFIX "nodes/B"));
	assert_true(status_of(&env.node[1]).registered);
	assert_true(total_tasks("t-web") == web_count);
}

/* A reload that changes a node's capacity: put again, and planned with. */
static void test_capacity_changed(void **state)
{
	double cap[DRF_NRES] = { 0 };
	struct drf_fleet_nodeinfo info;
	const struct etcd_kv *kv;
	char why[128];
	int64_t before;

	(void)state;
	fleet_up();
	before = fakeetcd_get(env.fake, PREFIX "nodes/A")->mod_revision;
	cap[DRF_RES_CPU] = caps[0][0];
	cap[DRF_RES_MEMORY] = caps[0][1];
	assert_int_equal(drf_fleet_node_set_host(env.node[0].n, cap, NULL, 0), 0);
	pump();
	assert_int_equal(fakeetcd_get(env.fake, PREFIX "nodes/A")->mod_revision, before);
	cap[DRF_RES_CPU] = 2 * caps[0][0];
	assert_int_equal(drf_fleet_node_set_host(env.node[0].n, cap, NULL, 0), 1);
	advance(STEP);
	advance_until(settled, 3 * DRF_USEC_PER_SEC);
	kv = fakeetcd_get(env.fake, PREFIX "nodes/A");
	assert_true(kv->mod_revision > before);
	assert_int_equal(kv->lease, status_of(&env.node[0]).lease);
	assert_int_equal(drf_fleet_node_parse("A", kv->value, kv->value_len, &info, why,
					      sizeof(why)), 0);
	assert_true(info.capacity[DRF_RES_CPU] == 2 * caps[0][0]);
	drf_fleet_nodeinfo_clear(&info);
	assert_true(status_of(planner()).plan_revision >= kv->mod_revision);
}

/* etcd unreachable for a node: it keeps its assignment, and says so. */
static void test_unreachable_keeps(void **state)
{
	struct drf_fleet_assignment kept;
	struct drf_fleet_status st;
	struct tnode *b;
	uint64_t cut_at;
	int calls;

	(void)state;
	fleet_up();
	b = &env.node[follower()];
	assert_int_equal(drf_fleet_assignment_copy(&kept, drf_fleet_node_assignment(b->n)), 0);
	calls = b->assignments;
	assert_true(status_of(b).reachable);
	cut_at = env.clk.real;
	assert_int_equal(fakeetcd_partition(b->e, true), 0);
	/* Long enough for its lease to go and the fleet to re-plan without it. */
	advance((TTL + GRACE + 2) * DRF_USEC_PER_SEC);
	st = status_of(b);
	assert_false(st.reachable);
	assert_true(st.since_usec > cut_at);
	assert_true(st.since_usec <= cut_at + (uint64_t)TTL * DRF_USEC_PER_SEC / 3 + STEP);
	assert_true(st.last_error[0] != '\0');
	assert_true(st.has_assignment);
	assert_int_equal(st.assignment_revision, kept.revision);
	assert_int_equal(b->assignments, calls);
	assert_true(drf_fleet_assignment_same(drf_fleet_node_assignment(b->n), &kept));
	/* The fleet moved on without it. */
	assert_int_equal(stored_mod(b->name), 0);
	/*
	 * Back: reachable, registered again, and the planner's assignment in
	 * force. The planner's withdrawal of the old one (this node was gone
	 * past the grace) is no plan for it: what it ran stayed in force until
	 * the new one came, and nothing empty was handed over on the way.
	 */
	assert_int_equal(fakeetcd_partition(b->e, false), 0);
	advance_until(settled, 2 * TTL * DRF_USEC_PER_SEC);
	assert_true(b->assignments >= calls + 1);
	for (int k = calls; k < b->assignments && k < 64; k++)
		assert_true(b->revs[k] > kept.revision);
	st = status_of(b);
	assert_true(st.reachable);
	assert_true(st.since_usec > cut_at + (uint64_t)TTL * DRF_USEC_PER_SEC);
	assert_true(st.registered);
	drf_fleet_assignment_clear(&kept);
}

/*
 * A node stalled past its lease (SIGSTOP for TTL + 2 s, a loop that did not
 * turn): its lease gone, its share stays planned on it; back, it registers
 * again with a new lease and keeps every task; nothing moved anywhere.
 */
static int64_t takeovers(void)
{
	int64_t n = 0;

	for (int i = 0; i < 3; i++)
		n += (int64_t)status_of(&env.node[i]).takeovers;
	return n;
}

static struct tnode *stalled;
static int64_t stalled_lease;

static bool stalled_back(void)
{
	return status_of(stalled).lease != stalled_lease && settled();
}

static void test_stalled_node_keeps(void **state)
{
	struct drf_fleet_assignment kept;
	struct tnode *b;
	static const char *const three[] = { "t-batch", "t-mem", "t-web" };
	double tasks_before[3][3];
	int64_t lease;
	int calls;

	(void)state;
	fleet_up();
	b = &env.node[follower()];
	assert_int_equal(drf_fleet_assignment_copy(&kept, drf_fleet_node_assignment(b->n)), 0);
	calls = b->assignments;
	lease = status_of(b).lease;
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			tasks_before[i][j] = stored_tasks(names[i], three[j]);
	/* Stopped: neither its keepalives nor its ticks run. */
	assert_int_equal(fakeetcd_partition(b->e, true), 0);
	b->alive = false;
	advance((TTL + 2) * DRF_USEC_PER_SEC);
	{
		char key[64];

		snprintf(key, sizeof(key), PREFIX "nodes/%s", b->name);
		assert_null(fakeetcd_get(env.fake, key));
	}
	assert_int_equal(status_of(planner()).silent_nodes, 1);
	/* A new tenant meanwhile: planned on the others, nothing new on the silent node. */
	admin_put(PREFIX "tenants/t-new", "{\"weight\":1,\"cgroup\":\"t-new\",\"tasks\":"
					  "\"unlimited\",\"task\":{\"cpu\":1,\"memory\":1073741824}}");
	advance(2 * DRF_USEC_PER_SEC);
	assert_true(total_tasks("t-new") > 0);
	assert_true(stored_tasks(b->name, "t-new") == 0);
	for (size_t j = 0; j < kept.n; j++)
		assert_true(stored_tasks(b->name, kept.tenants[j].name) == kept.tenants[j].tasks);
	admin_delete(PREFIX "tenants/t-new");
	assert_int_equal(fakeetcd_partition(b->e, false), 0);
	b->alive = true;
	stalled = b;
	stalled_lease = lease;
	advance_until(stalled_back, 2 * TTL * DRF_USEC_PER_SEC);
	assert_true(status_of(b).lease != lease);
	assert_true(status_of(b).registered);
	assert_int_equal(status_of(planner()).silent_nodes, 0);
	/* Every task where it was; the node was handed nothing smaller meanwhile. */
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			assert_true(stored_tasks(names[i], three[j]) == tasks_before[i][j]);
	for (size_t j = 0; j < kept.n; j++)
		assert_true(stored_tasks(b->name, kept.tenants[j].name) == kept.tenants[j].tasks);
	for (int k = calls; k < b->assignments && k < 64; k++)
		assert_true(b->revs[k] != 0);
	assert_int_equal(drf_fleet_node_assignment(b->n)->n, kept.n);
	assert_true(total_tasks("t-web") == web_count);
	/* A node stalled and back is no vacant planner key: nobody took one over. */
	assert_int_equal(takeovers(), 0);
	drf_fleet_assignment_clear(&kept);
}

/* The planner key is a live node's, with that node's lease. */
static bool planner_live(void)
{
	const struct etcd_kv *kv = fakeetcd_get(env.fake, PREFIX "planner");
	struct tnode *p = planner();

	return kv && p && strcmp(kv->value, p->name) == 0 && kv->lease == status_of(p).lease &&
	       kv->lease != 0;
}

static void lease_cb(void *userdata, int err, const char *msg, const struct etcd_lease *l)
{
	int64_t *id = userdata;

	(void)msg;
	*id = err ? err : l->id;
}

/*
 * The planner key squatted: a value without a lease (etcdctl put), then one
 * under a lease of its own naming no node. Each is seen as vacant, said in
 * the status of a node that cannot take it over, and taken over by those
 * that can: a live planner again, with a new token.
 */
static void test_planner_key_vacant(void **state)
{
	struct etcd_req q = { .key = PREFIX "planner", .value = "ghost", .value_len = 5 };
	struct drf_fleet_status st;
	int64_t old, lease = 0, rev = 0;
	struct tnode *a;
	uint64_t id;

	(void)state;
	fleet_up();
	old = fakeetcd_get(env.fake, PREFIX "planner")->create_revision;
	/* A node cut off just after it saw the squatter: it cannot take over, and says so. */
	a = &env.node[follower()];
	admin_put(PREFIX "planner", "ghost");
	assert_int_equal(fakeetcd_partition(a->e, true), 0);
	advance(STEP);
	st = status_of(a);
	assert_true(st.planner_vacant);
	assert_non_null(strstr(st.planner_vacant_why, "ghost"));
	advance_until(planner_live, 2 * DRF_USEC_PER_SEC);
	assert_true(fakeetcd_get(env.fake, PREFIX "planner")->create_revision > old);
	assert_int_equal(takeovers(), 1);
	assert_int_equal(fakeetcd_partition(a->e, false), 0);
	advance(2 * DRF_USEC_PER_SEC);
	assert_false(status_of(a).planner_vacant);

	/* Under a live lease of its own, naming no node. */
	old = fakeetcd_get(env.fake, PREFIX "planner")->create_revision;
	assert_int_equal(etcd_lease_grant(env.admin, 600, 0, lease_cb, &lease, &id), 0);
	pump();
	assert_true(lease > 0);
	q.lease = lease;
	assert_int_equal(etcd_put(env.admin, &q, put_cb, &rev, &id), 0);
	pump();
	assert_true(rev > 0);
	assert_string_equal(fakeetcd_get(env.fake, PREFIX "planner")->value, "ghost");
	advance_until(planner_live, 2 * DRF_USEC_PER_SEC);
	assert_int_equal(takeovers(), 2);
	/* It plans: a change is written. */
	apply(9, false);
	web_count = 9;
	advance_until(settled, 2 * DRF_USEC_PER_SEC);
}

static bool late_placed(void)
{
	return total_tasks("t-late") == 6;
}

/*
 * A tenant added to a fleet that is already full (t-zfill takes every room
 * left): the planner does not only continue from the placement in force
 * (which left it at 0), it moves toward DRFH from scratch in rounds, each
 * stopping a bounded number of tasks, and t-late gets its 6.
 */
static void test_late_tenant_converges(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++)
		node_start(i, false);
	advance(STEP);
	apply(8, true);
	advance(5 * DRF_USEC_PER_SEC);
	assert_true(total_tasks("t-zfill") > 0);
	admin_put(PREFIX "tenants/t-late", "{\"weight\":1,\"cgroup\":\"t-late\",\"tasks\":6,"
					   "\"task\":{\"cpu\":2,\"memory\":2147483648}}");
	advance_until(late_placed, 10 * TTL * DRF_USEC_PER_SEC);
	/* And it stays: the plan at DRFH moves nothing more. */
	advance(3 * TTL * DRF_USEC_PER_SEC);
	assert_true(total_tasks("t-late") == 6);
	assert_true(total_tasks("t-web") == 8);
}

/* A restart with etcd unreachable: the state dir's assignment in force. */
static void test_restart_unreachable(void **state)
{
	struct drf_fleet_assignment kept, file;
	struct drf_fleet_status st;
	struct tnode *b;
	int i;

	(void)state;
	fleet_up();
	i = follower();
	b = &env.node[i];
	assert_int_equal(drf_fleet_assignment_copy(&kept, drf_fleet_node_assignment(b->n)), 0);
	assert_true(kept.n > 0);
	/* What the state dir holds is what is in force. */
	assert_int_equal(drf_fleet_assignment_load(b->state_dir, b->name, PREFIX, &file), 0);
	assert_true(drf_fleet_assignment_same(&file, &kept));
	assert_int_equal(file.revision, kept.revision);
	drf_fleet_assignment_clear(&file);
	/* Another node's or prefix's file is not taken. */
	assert_int_equal(drf_fleet_assignment_load(b->state_dir, "X", PREFIX, &file), -ESTALE);
	assert_int_equal(drf_fleet_assignment_load(b->state_dir, b->name, "/other/", &file),
			 -ESTALE);

	node_free(b);
	b->assignments = 0;
	drf_fleet_assignment_clear(&b->last);
	node_start(i, true);
	/* In force at once, before etcd answers anything. */
	assert_int_equal(b->assignments, 1);
	assert_true(drf_fleet_assignment_same(&b->last, &kept));
	assert_int_equal(b->last.revision, kept.revision);
	st = status_of(b);
	assert_true(st.has_assignment);
	assert_true(st.assignment_from_file);
	assert_int_equal(st.assignment_revision, kept.revision);
	advance(3 * DRF_USEC_PER_SEC);
	st = status_of(b);
	assert_false(st.reachable);
	assert_true(st.last_error[0] != '\0');
	assert_true(st.assignment_from_file);
	assert_int_equal(b->assignments, 1);
	/* etcd back: it says the same, and the node says so. */
	assert_int_equal(fakeetcd_partition(b->e, false), 0);
	advance_until(settled, TTL * DRF_USEC_PER_SEC);
	st = status_of(b);
	assert_true(st.reachable);
	assert_false(st.assignment_from_file);
	drf_fleet_assignment_clear(&kept);
}

/*
 * An assignment its owner refuses: the one before stays the one in force (and
 * the state dir's), the status says refused and why, and the node offers it
 * again (after 5 s) until the owner takes it, which the state dir then keeps.
 */
static void test_refused_assignment(void **state)
{
	struct drf_fleet_assignment file;
	struct drf_fleet_status st;
	struct tnode *b = NULL;
	int64_t before[NNODES];
	int calls;

	(void)state;
	fleet_up();
	for (int i = 0; i < 3; i++) {
		env.node[i].refuse = true;
		before[i] = status_of(&env.node[i]).applied_revision;
		assert_true(before[i] > 0);
	}
	web_count = 9;
	apply(9, false);
	advance_until(settled, 5 * DRF_USEC_PER_SEC);
	for (int i = 0; i < 3 && !b; i++)
		if (status_of(&env.node[i]).refused)
			b = &env.node[i];
	assert_non_null(b); /* web's ninth task went somewhere */
	st = status_of(b);
	assert_true(st.assignment_revision > st.applied_revision);
	assert_string_equal(st.refused_why, "refused by the test");
	assert_int_equal(drf_fleet_assignment_load(b->state_dir, b->name, PREFIX, &file), 0);
	assert_int_equal(file.revision, st.applied_revision);
	assert_int_equal(st.applied_revision, before[b - env.node]);
	drf_fleet_assignment_clear(&file);
	/* Offered again after 5 s, refused again. */
	calls = b->assignments;
	advance(6 * DRF_USEC_PER_SEC);
	assert_true(b->assignments > calls);
	assert_true(status_of(b).refused);
	/* Taken at the next offer (10 s after that one): in force, and kept. */
	for (int i = 0; i < 3; i++)
		env.node[i].refuse = false;
	advance(11 * DRF_USEC_PER_SEC);
	st = status_of(b);
	assert_false(st.refused);
	assert_int_equal(st.applied_revision, st.assignment_revision);
	assert_int_equal(drf_fleet_assignment_load(b->state_dir, b->name, PREFIX, &file), 0);
	assert_int_equal(file.revision, st.assignment_revision);
	drf_fleet_assignment_clear(&file);
}

/* Every watch behind a compaction: re-read, and the next change still comes. */
static void test_compaction_resync(void **state)
{
	(void)state;
	fleet_up();
	fakeetcd_break_watches(env.fake, -ECONNRESET);
	pump();
	assert_int_equal(fakeetcd_nwatches(env.fake), 0);
	/* A change while nobody watches, then the history before it compacted away. */
	apply(9, false);
	admin_put("/elsewhere", "x"); /* every watch's next revision is now before the compaction */
	assert_int_equal(fakeetcd_compact(env.fake, fakeetcd_revision(env.fake)), 0);
	web_count = 9;
	advance_until(settled, 5 * DRF_USEC_PER_SEC);
	for (int i = 0; i < 3; i++)
		assert_true(status_of(&env.node[i]).resyncs >= 1);
	/* Watching again: the next change arrives without anything broken. */
	assert_true(fakeetcd_nwatches(env.fake) >= 5);
	apply(10, false);
	web_count = 10;
	pump();
	assert_true(settled());
}

/* Only the nodes whose assignment changed are written. */
static void test_only_changed_written(void **state)
{
	char *rec = NULL, *line;
	size_t len = 0, txns = 0, changed = 0;
	int64_t mods[3];
	FILE *out;

	(void)state;
	fleet_up();
	for (int i = 0; i < 3; i++)
		mods[i] = stored_mod(names[i]);
	out = open_memstream(&rec, &len);
	assert_non_null(out);
	env.fake->out = out;
	/* One task more: one node's assignment changes. */
	apply(9, false);
	web_count = 9;
	advance_until(settled, DRF_USEC_PER_SEC);
	/* A node joins with room to spare and nothing left to place: only its own is written. */
	node_start(3, false);
	advance_until(settled, 2 * DRF_USEC_PER_SEC);
	env.fake->out = NULL;
	assert_int_equal(fclose(out), 0);
	for (int i = 0; i < 3; i++)
		changed += stored_mod(names[i]) != mods[i];
	assert_int_equal(changed, 1);
	assert_true(stored_mod("D") > 0);
	assert_int_equal(env.node[3].last.n, 0);
	/* The planner's writes: two txns of one put each (the fenced ones: cmp=2). */
	for (line = strtok(rec, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "txn cmp=2 ", 10) != 0)
			continue;
		assert_string_equal(line, "txn cmp=2 success=1 failure=1");
		txns++;
	}
	assert_int_equal(txns, 2);
	free(rec);
}

/* A tenant's value that does not decode is passed over; the others are planned. */
static void test_invalid_tenant_skipped(void **state)
{
	struct drf_fleet_status st;
	int64_t rev;

	(void)state;
	fleet_up();
	rev = admin_put(PREFIX "tenants/t-bad", "{\"weight\": -1}");
	advance(STEP);
	assert_true(settled());
	st = status_of(planner());
	assert_true(st.plan_revision >= rev);
	assert_int_equal(st.tenants, 3);
	/* apply takes it away, as a tenant not in the file. */
	assert_int_equal(apply(8, false).deleted, 1);
	assert_null(fakeetcd_get(env.fake, PREFIX "tenants/t-bad"));
}

/*
 * Values that decode but that no plan could use are passed over too, and the
 * planner plans the rest, at once: two tenants on one cgroup (the later by name
 * goes), a task too small to count with no count to bound it, a node of a
 * capacity past any config's, a demand no node could hold (it leaves memory
 * out: the whole pool's), an assignment in force with a count past any
 * plan's (1e300 tasks, which shedding one at a time never ended): A's is
 * planned again.
 */
static void test_unplannable_skipped(void **state)
{
	struct drf_fleet_status st;
	int64_t rev;

	(void)state;
	fleet_up();
	admin_put(PREFIX "tenants/zz-a", "{\"weight\": 1, \"cgroup\": \"shared\", \"tasks\": 1, "
					 "\"task\": {\"cpu\": 0.5}}");
	admin_put(PREFIX "tenants/zz-b", "{\"weight\": 1, \"cgroup\": \"shared/inner\", "
					 "\"tasks\": 1, \"task\": {\"cpu\": 0.5}}");
	admin_put(PREFIX "tenants/zz-tiny", "{\"weight\": 1, \"cgroup\": \"tiny\", "
					    "\"tasks\": \"unlimited\", \"task\": {\"cpu\": 1e-11}}");
	admin_put(PREFIX "nodes/huge", "{\"capacity\": {\"cpu\": 2e18, \"memory\": 2e18}}");
	/* memory not listed: the whole pool's, which no node has */
	admin_put(PREFIX "tenants/zz-dem", "{\"weight\": 1, \"cgroup\": \"dem\", "
					   "\"demand\": {\"cpu\": 2}}");
	admin_put(PREFIX "assign/A", "{\"revision\": 1, \"planner\": \"A\", \"tenants\": "
				     "[{\"name\": \"t-web\", \"cgroup\": \"t-web\", \"weight\": 1, "
				     "\"tasks\": 1e300, \"alloc\": {}}]}");
	rev = admin_put(PREFIX "tenants/zz-c", "{\"weight\": 1, \"cgroup\": \"other\", "
						 "\"tasks\": 1, \"task\": {\"cpu\": 0.5}}");
	advance(STEP);
	assert_true(settled());
	st = status_of(planner());
	assert_true(st.plan_revision >= rev);
	/* the three tenants of fleet_up, zz-a and zz-c */
	assert_int_equal(st.tenants, 5);
	assert_int_equal(st.nodes, 3);
	for (int i = 0; i < 3; i++) {
		char key[128];
		const struct etcd_kv *kv;

		snprintf(key, sizeof(key), PREFIX "assign/%s", names[i]);
		kv = fakeetcd_get(env.fake, key);
		assert_non_null(kv);
		assert_null(strstr(kv->value, "zz-b"));
		assert_null(strstr(kv->value, "zz-tiny"));
		assert_null(strstr(kv->value, "zz-dem"));
	}
}

/* Fleet tasks. */

/* The tasks handed to a node's on_task, by the test's nodes (index in env.node). */
static struct {
	int n[NNODES];
	char last_id[NNODES][DRF_TENANT_NAME_MAX + 1];
	enum drf_fleet_task_st last_st[NNODES];
	char last_arg[NNODES][64];
} handed;

static void on_task(void *userdata, const struct drf_fleet_task *t,
		    const struct drf_fleet_task_state *s)
{
	struct tnode *tn = userdata;
	int i = (int)(tn - env.node);

	assert_string_equal(t->node, tn->name);
	handed.n[i]++;
	snprintf(handed.last_id[i], sizeof(handed.last_id[i]), "%s", t->id);
	handed.last_st[i] = s->st;
	snprintf(handed.last_arg[i], sizeof(handed.last_arg[i]), "%s", t->argv[t->argc - 1]);
}

/* Node i with on_task, registered. */
static struct tnode *task_node(int i)
{
	struct tnode *t = &env.node[i];
	struct drf_fleet_node_config c = {
		.node = names[i], .ttl = TTL, .clock = &env.clock, .on_task = on_task,
		.userdata = t,
	};
	char err[256];

	c.capacity[DRF_RES_CPU] = caps[i][0];
	c.capacity[DRF_RES_MEMORY] = caps[i][1];
	t->name = names[i];
	assert_int_equal(fakeetcd_connect(env.fake, &t->e), 0);
	assert_int_equal(drf_fleet_node_new(&c, t->e, &t->n, err, sizeof(err)), 0);
	assert_int_equal(drf_fleet_node_start(t->n), 0);
	t->alive = true;
	advance(STEP);
	return t;
}

struct submitted {
	bool done, placed;
	int err;
	char node[DRF_TENANT_NAME_MAX + 1];
};

static void submitted_cb(void *userdata, int err, const char *msg, bool placed, const char *node,
			 int64_t revision)
{
	struct submitted *s = userdata;

	(void)msg;
	(void)revision;
	s->done = true;
	s->err = err;
	s->placed = placed;
	snprintf(s->node, sizeof(s->node), "%s", node ? node : "");
}

/* drfctl fleet submit's write of task id on node (argument arg): what it answered. */
static struct submitted submit(const char *node, const char *id, const char *arg)
{
	char *argv[] = { "/bin/echo", (char *)arg, NULL };
	struct drf_fleet_task t = { .argv = argv, .argc = 2, .submitted = 1700000000 };
	struct submitted s = { 0 };

	snprintf(t.node, sizeof(t.node), "%s", node);
	snprintf(t.id, sizeof(t.id), "%s", id);
	snprintf(t.tenant, sizeof(t.tenant), "t-web");
	t.vec[DRF_RES_CPU] = 2;
	assert_int_equal(drf_fleet_submit(env.admin, PREFIX, &t, submitted_cb, &s), 0);
	pump();
	assert_true(s.done);
	assert_int_equal(s.err, 0);
	return s;
}

/* One ID is placed once: a retry that would place it elsewhere writes nothing, and says where. */
static void test_task_submit_once(void **state)
{
	struct submitted s;
	int64_t rev;

	(void)state;
	s = submit("A", "job-1", "x");
	assert_true(s.placed);
	assert_string_equal(s.node, "A");
	assert_non_null(fakeetcd_get(env.fake, PREFIX "tasks/A/job-1"));
	assert_string_equal(fakeetcd_get(env.fake, PREFIX "taskids/job-1")->value, "A");
	rev = fakeetcd_revision(env.fake);
	s = submit("B", "job-1", "y");
	assert_false(s.placed);
	assert_string_equal(s.node, "A");
	assert_int_equal(fakeetcd_revision(env.fake), rev);
	assert_null(fakeetcd_get(env.fake, PREFIX "tasks/B/job-1"));
	/* Another ID goes where it is sent. */
	assert_true(submit("B", "job-2", "z").placed);
	assert_non_null(fakeetcd_get(env.fake, PREFIX "tasks/B/job-2"));
}

static bool a_handed_two(void)
{
	return handed.n[0] >= 2;
}

/*
 * A node's tasks: each new one handed over once, only its own; its state
 * written back; read again after a restart or a compaction, only those not
 * in a final state are handed over again (the owner's queue takes the ID as
 * its key); a value that does not parse is refused there.
 */
static void test_task_node(void **state)
{
	const struct etcd_kv *kv;
	struct drf_fleet_task_state st = { .st = DRF_FLEET_TASK_QUEUED, .task = 7, .at = 5 }, got;

	(void)state;
	memset(&handed, 0, sizeof(handed));
	submit("A", "early", "before"); /* before the node starts: found by its first read */
	task_node(0);
	task_node(1);
	assert_int_equal(handed.n[0], 1);
	assert_string_equal(handed.last_id[0], "early");
	assert_int_equal(handed.last_st[0], DRF_FLEET_TASK_NONE);
	submit("A", "job-1", "one");
	submit("B", "job-2", "two");
	advance(STEP);
	assert_int_equal(handed.n[0], 2);
	assert_string_equal(handed.last_id[0], "job-1");
	assert_string_equal(handed.last_arg[0], "one");
	assert_int_equal(handed.n[1], 1);
	assert_string_equal(handed.last_id[1], "job-2");
	/* A rewrite of a task's value (by hand) is not a new task. */
	admin_put(PREFIX "tasks/A/job-1", "{\"tenant\":\"t-web\",\"argv\":[\"/bin/false\"]}");
	advance(STEP);
	assert_int_equal(handed.n[0], 2);
	/* The state, written back; only the newest of those not yet sent. */
	assert_int_equal(drf_fleet_node_task_state(env.node[0].n, "job-1", &st), 0);
	st.st = DRF_FLEET_TASK_RUNNING;
	assert_int_equal(drf_fleet_node_task_state(env.node[0].n, "job-1", &st), 0);
	st.st = DRF_FLEET_TASK_EXITED;
	st.code = 3;
	assert_int_equal(drf_fleet_node_task_state(env.node[0].n, "job-1", &st), 0);
	assert_int_equal(drf_fleet_node_task_state(env.node[0].n, "not a name", &st), -EINVAL);
	advance(STEP);
	assert_int_equal(drf_fleet_node_task_states_pending(env.node[0].n), 0);
	kv = fakeetcd_get(env.fake, PREFIX "taskstate/A/job-1");
	assert_non_null(kv);
	assert_int_equal(drf_fleet_task_state_parse(kv->value, kv->value_len, &got, NULL, 0), 0);
	assert_int_equal(got.st, DRF_FLEET_TASK_EXITED);
	assert_int_equal(got.code, 3);
	assert_int_equal(got.task, 7);
	/* A restart: "early" (no state) is handed over again, job-1 (exited) is not. */
	node_free(&env.node[0]);
	memset(&handed, 0, sizeof(handed));
	task_node(0);
	assert_int_equal(handed.n[0], 1);
	assert_string_equal(handed.last_id[0], "early");
	/* A state that is not final hands it over again, with that state. */
	st.st = DRF_FLEET_TASK_RUNNING;
	assert_int_equal(drf_fleet_node_task_state(env.node[0].n, "early", &st), 0);
	advance(STEP);
	/* Behind a compaction: read again, the same rule. */
	fakeetcd_break_watches(env.fake, -ECONNRESET);
	admin_put("/elsewhere", "x");
	assert_int_equal(fakeetcd_compact(env.fake, fakeetcd_revision(env.fake)), 0);
	advance_until(a_handed_two, 5 * DRF_USEC_PER_SEC);
	assert_string_equal(handed.last_id[0], "early");
	assert_int_equal(handed.last_st[0], DRF_FLEET_TASK_RUNNING);
	assert_true(status_of(&env.node[0]).resyncs >= 1);
	/* A value that does not parse: refused, by the node, in its state. */
	admin_put(PREFIX "tasks/A/broken", "{\"tenant\":\"t-web\",\"argv\":[]}");
	advance(STEP);
	assert_int_equal(handed.n[0], 2);
	kv = fakeetcd_get(env.fake, PREFIX "taskstate/A/broken");
	assert_non_null(kv);
	assert_int_equal(drf_fleet_task_state_parse(kv->value, kv->value_len, &got, NULL, 0), 0);
	assert_int_equal(got.st, DRF_FLEET_TASK_REFUSED);
	assert_non_null(strstr(got.why, "argv"));
}

/* A state write that fails is tried again from the tick, and lands. */
static void test_task_state_retried(void **state)
{
	struct drf_fleet_task_state st = { .st = DRF_FLEET_TASK_FAILED, .why = "killed" };

	(void)state;
	task_node(0);
	env.fake->fault = (struct drf_fault){ .ops = FAKEETCD_OP_PUT, .err = EAGAIN, .path = "/j" };
	env.fake->fault_times = 2;
	assert_int_equal(drf_fleet_node_task_state(env.node[0].n, "j", &st), 0);
	pump();
	assert_int_equal(drf_fleet_node_task_states_pending(env.node[0].n), 1);
	assert_null(fakeetcd_get(env.fake, PREFIX "taskstate/A/j"));
	advance(3 * DRF_USEC_PER_SEC);
	assert_int_equal(drf_fleet_node_task_states_pending(env.node[0].n), 0);
	assert_non_null(fakeetcd_get(env.fake, PREFIX "taskstate/A/j"));
}

/* The task formats: round trips, and what they refuse. */
static void test_task_formats(void **state)
{
	char *argv[] = { "/bin/sh", "-c", "echo \"a b\"\n\t\\", NULL };
	struct drf_fleet_task t = { .node = "n1", .id = "job-1", .tenant = "web", .argv = argv,
				    .argc = 3, .submitted = 1700000000, .by = "alice", .key = "job-1" };
	struct drf_fleet_task u;
	struct drf_fleet_task_state s = { .st = DRF_FLEET_TASK_REFUSED, .why = "no \"user\"",
					  .task = 0, .at = 9 }, v;
	static const char *const bad_tasks[] = {
		"", "[]", "{\"argv\":[\"x\"]}", "{\"tenant\":\"web\"}",
		"{\"tenant\":\"web\",\"argv\":[]}", "{\"tenant\":\".x\",\"argv\":[\"x\"]}",
		"{\"tenant\":\"web\",\"argv\":[1]}", "{\"tenant\":\"web\",\"argv\":\"x\"}",
		"{\"tenant\":\"web\",\"argv\":[\"x\"],\"task\":{\"cpu\":-1}}",
		"{\"tenant\":\"web\",\"argv\":[\"x\"],\"task\":{\"gpu\":1}}",
		"{\"tenant\":\"web\",\"argv\":[\"a\\u0000b\"]}",
		"{\"tenant\":\"web\",\"argv\":[\"x\"],\"submitted\":\"now\"}",
	};
	static const char *const bad_states[] = {
		"{}", "{\"state\":\"done\"}", "{\"state\":1}", "{\"state\":\"exited\",\"code\":256}",
		"{\"state\":\"failed\",\"why\":3}", "not json",
	};
	char *text, err[256];

	(void)state;
	t.vec[DRF_RES_CPU] = 1.5;
	t.vec[DRF_RES_MEMORY] = G;
	assert_int_equal(drf_fleet_task_value(&t, &text), 0);
	assert_null(strchr(text, '\n'));
	assert_int_equal(drf_fleet_task_parse("n1", "job-1", text, strlen(text), &u, err,
					      sizeof(err)), 0);
	assert_string_equal(u.tenant, "web");
	assert_int_equal(u.argc, 3);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(u.argv[i], argv[i]);
	assert_null(u.argv[3]);
	assert_true(u.vec[DRF_RES_CPU] == 1.5 && u.vec[DRF_RES_MEMORY] == G);
	assert_int_equal(u.submitted, 1700000000);
	assert_string_equal(u.by, "alice");
	assert_string_equal(u.key, "job-1");
	drf_fleet_task_clear(&u);
	/* The key's names are checked; the value's own keys a newer drfctl adds are passed over. */
	assert_int_equal(drf_fleet_task_parse("n1", "a/b", text, strlen(text), &u, NULL, 0), -EINVAL);
	free(text);
	text = "{\"tenant\":\"web\",\"argv\":[\"x\"],\"priority\":3}";
	assert_int_equal(drf_fleet_task_parse("n1", "j", text, strlen(text), &u, NULL, 0), 0);
	assert_null(u.by);
	assert_null(u.key);
	drf_fleet_task_clear(&u);
	memset(&u, 0x5a, sizeof(u));
	for (size_t i = 0; i < sizeof(bad_tasks) / sizeof(*bad_tasks); i++) {
		int r = drf_fleet_task_parse("n1", "j", bad_tasks[i], strlen(bad_tasks[i]), &u, err,
					     sizeof(err));

		if (r != -EBADMSG && r != -EINVAL)
			fail_msg("task value %zu: %d", i, r);
		assert_true(err[0] != '\0');
		assert_int_equal(u.argc, 0x5a5a5a5a5a5a5a5aull); /* untouched */
	}
	/* A task of no command, or a tenant not a name, is not written. */
	t.argc = 0;
	assert_int_equal(drf_fleet_task_value(&t, &text), -EINVAL);
	t.argc = 3;
	snprintf(t.tenant, sizeof(t.tenant), "a b");
	assert_int_equal(drf_fleet_task_value(&t, &text), -EINVAL);
	/* States. */
	assert_int_equal(drf_fleet_task_state_value(&s, &text), 0);
	assert_int_equal(drf_fleet_task_state_parse(text, strlen(text), &v, NULL, 0), 0);
	free(text);
	assert_true(drf_fleet_task_state_same(&s, &v));
	assert_int_equal(v.at, 9);
	s = (struct drf_fleet_task_state){ .st = DRF_FLEET_TASK_EXITED, .code = 0, .task = 12 };
	assert_int_equal(drf_fleet_task_state_value(&s, &text), 0);
	assert_string_equal(text, "{\"state\":\"exited\",\"code\":0,\"task\":12,\"at\":0}");
	assert_int_equal(drf_fleet_task_state_parse(text, strlen(text), &v, NULL, 0), 0);
	free(text);
	assert_true(drf_fleet_task_state_same(&s, &v));
	v.code = 1;
	assert_false(drf_fleet_task_state_same(&s, &v));
	s.st = DRF_FLEET_TASK_NONE;
	assert_int_equal(drf_fleet_task_state_value(&s, &text), -EINVAL);
	for (size_t i = 0; i < sizeof(bad_states) / sizeof(*bad_states); i++) {
		int r = drf_fleet_task_state_parse(bad_states[i], strlen(bad_states[i]), &v, err,
						   sizeof(err));

		if (r != -EBADMSG && r != -EINVAL)
			fail_msg("state value %zu: %d", i, r);
	}
	assert_true(drf_fleet_task_st_final(DRF_FLEET_TASK_EXITED));
	assert_true(drf_fleet_task_st_final(DRF_FLEET_TASK_REFUSED));
	assert_false(drf_fleet_task_st_final(DRF_FLEET_TASK_RUNNING));
	assert_false(drf_fleet_task_st_final(DRF_FLEET_TASK_NONE));
}

/* A view by hand: nodes (cpu, memory G), tenants' shapes, assignments' allocs, tasks. */
struct pv {
	struct drf_fleet_view v;
	struct drf_fleet_nodeinfo nodes[4];
	struct drf_fleet_tenant_entry tenants[2];
	struct drf_fleet_assign_entry assigns[4];
	struct drf_fleet_share shares[4][2];
	struct drf_fleet_task_entry tasks[8];
};

/* Node k, and the node of assignment k (pv_alloc's), named from the caller's string:
 * copying one name of *p into another would be a copy within one object, which
 * -Wrestrict (with _FORTIFY_SOURCE, as Debian builds) cannot prove does not overlap. */
static void pv_node(struct pv *p, const char *name, double cpu, double memg)
{
	size_t k = p->v.n_nodes++;
	struct drf_fleet_nodeinfo *n = &p->nodes[k];

	snprintf(n->name, sizeof(n->name), "%s", name);
	snprintf(p->assigns[k].node, sizeof(p->assigns[k].node), "%s", name);
	n->capacity[DRF_RES_CPU] = cpu;
	n->capacity[DRF_RES_MEMORY] = memg * G;
}

/* Tenant t's alloc on node k (its assignment made if need be, named by pv_node). */
static void pv_alloc(struct pv *p, size_t k, const char *t, double cpu, double memg)
{
	struct drf_fleet_assign_entry *a = &p->assigns[k];
	struct drf_fleet_share *s;

	if (p->v.n_assigns <= k)
		p->v.n_assigns = k + 1;
	a->a.tenants = p->shares[k];
	s = &p->shares[k][a->a.n++];
	snprintf(s->name, sizeof(s->name), "%s", t);
	s->alloc[DRF_RES_CPU] = cpu;
	s->alloc[DRF_RES_MEMORY] = memg * G;
}

/* A task of t on node (tasks in node order), in state st. */
static void pv_task(struct pv *p, const char *node, const char *t, double cpu, double memg,
		    enum drf_fleet_task_st st)
{
	struct drf_fleet_task_entry *e = &p->tasks[p->v.n_tasks];

	snprintf(e->t.node, sizeof(e->t.node), "%s", node);
	snprintf(e->t.id, sizeof(e->t.id), "t%zu", p->v.n_tasks++);
	snprintf(e->t.tenant, sizeof(e->t.tenant), "%s", t);
	e->t.vec[DRF_RES_CPU] = cpu;
	e->t.vec[DRF_RES_MEMORY] = memg * G;
	e->s.st = st;
}

static void pv_init(struct pv *p)
{
	memset(p, 0, sizeof(*p));
	p->v.nodes = p->nodes;
	p->v.tenants = p->tenants;
	p->v.assigns = p->assigns;
	p->v.tasks = p->tasks;
	snprintf(p->tenants[0].t.name, sizeof(p->tenants[0].t.name), "web");
	snprintf(p->tenants[1].t.name, sizeof(p->tenants[1].t.name), "zz");
	p->v.n_tenants = 2;
}

/* Where a task of (cpu, memg) of tenant goes: the node's name, "-" waits marked with '+', or the error. */
static const char *place(const struct pv *p, const char *tenant, double cpu, double memg,
			 char *buf, size_t len)
{
	double task[DRF_NRES] = { 0 };
	char err[256] = "";
	size_t k = 99;
	bool waits = false;
	int r;

	task[DRF_RES_CPU] = cpu;
	task[DRF_RES_MEMORY] = memg * G;
	r = drf_fleet_place_task(&p->v, tenant, task, &k, &waits, err, sizeof(err));
	if (r < 0) {
		assert_true(err[0] != '\0');
		assert_int_equal(k, 99); /* untouched */
		snprintf(buf, len, "%s", strerror(-r));
	} else {
		snprintf(buf, len, "%s%s", p->nodes[k].name, waits ? "+" : "");
	}
	return buf;
}

/*
 * Placement, worked by hand. Nodes A (8, 32G) and B (8, 8G), pool (16, 40G);
 * web's task (1, 4G) is (1/16, 1/10) of the pool, as a direction (0.385, 0.615).
 * A's (8, 32G) is (0.5, 0.8), direction (0.385, 0.615): H 0; B's (0.5, 0.2),
 * (0.714, 0.286): H 0.659. So A, while web has room there.
 */
static void test_place_task(void **state)
{
	struct pv p;
	char b[64];

	(void)state;
	pv_init(&p);
	assert_string_equal(place(&p, "web", 1, 4, b, sizeof(b)), strerror(ESRCH));
	pv_node(&p, "A", 8, 32);
	pv_node(&p, "B", 8, 8);
	/* Assigned nowhere. */
	assert_string_equal(place(&p, "web", 1, 4, b, sizeof(b)), strerror(ENOSPC));
	assert_string_equal(place(&p, "nope", 1, 4, b, sizeof(b)), strerror(ENOENT));
	assert_string_equal(place(&p, "web", 0, 0, b, sizeof(b)), strerror(EINVAL));
	pv_alloc(&p, 0, "web", 2, 8);
	pv_alloc(&p, 1, "web", 4, 8);
	pv_alloc(&p, 1, "zz", 4, 0);
	assert_string_equal(place(&p, "web", 1, 4, b, sizeof(b)), "A");
	/* Larger than web's share anywhere. */
	assert_string_equal(place(&p, "web", 5, 1, b, sizeof(b)), strerror(ENOSPC));
	assert_string_equal(place(&p, "web", 3, 9, b, sizeof(b)), strerror(ENOSPC));
	/* Only B's share holds (3, 1G): there, room now. */
	assert_string_equal(place(&p, "web", 3, 1, b, sizeof(b)), "B");
	/* Two tasks of web on A fill its room there (2, 8G): B, though its H is worse. */
	pv_task(&p, "A", "web", 1, 4, DRF_FLEET_TASK_RUNNING);
	pv_task(&p, "A", "web", 1, 4, DRF_FLEET_TASK_NONE);
	assert_string_equal(place(&p, "web", 1, 4, b, sizeof(b)), "B");
	/* B's room taken too (an exited task frees its room; zz's does not take web's). */
	pv_task(&p, "B", "web", 3, 4, DRF_FLEET_TASK_QUEUED);
	pv_task(&p, "B", "web", 1, 4, DRF_FLEET_TASK_EXITED);
	pv_task(&p, "B", "zz", 1, 0, DRF_FLEET_TASK_RUNNING);
	assert_string_equal(place(&p, "web", 1, 4, b, sizeof(b)), "B");
	pv_task(&p, "B", "web", 1, 4, DRF_FLEET_TASK_RUNNING);
	/*
	 * No room now: the least H among the shares that could hold it. A has
	 * (6, 24G) left: (0.375, 0.6), direction (0.385, 0.615), H 0; B (3, 0G
	 * left): (1, 0), H 1.23. A, to wait there.
	 */
	assert_string_equal(place(&p, "web", 1, 4, b, sizeof(b)), "A+");
	/* (3, 1G) fits only B's share: B, waiting. */
	assert_string_equal(place(&p, "web", 3, 1, b, sizeof(b)), "B+");
}

/*
 * Back-pressure on a burst: a node holding DRF_FLEET_NODE_BACKLOG_MAX tasks
 * it has not taken in yet (no state) gets no more; all such: -EBUSY, and a
 * task taken in (queued) frees a place.
 */
static void test_place_backpressure(void **state)
{
	const size_t n = 2 * DRF_FLEET_NODE_BACKLOG_MAX;
	struct drf_fleet_task_entry *tasks = calloc(n, sizeof(*tasks));
	struct pv p;
	char b[64];

	(void)state;
	assert_non_null(tasks);
	pv_init(&p);
	pv_node(&p, "A", 8, 32);
	pv_node(&p, "B", 8, 8);
	pv_alloc(&p, 0, "web", 8, 32);
	pv_alloc(&p, 1, "web", 8, 8);
	for (size_t i = 0; i < n; i++) {
		struct drf_fleet_task_entry *e = &tasks[i];

		snprintf(e->t.node, sizeof(e->t.node), "%s", i < n / 2 ? "A" : "B");
		snprintf(e->t.id, sizeof(e->t.id), "t%05zu", i);
		snprintf(e->t.tenant, sizeof(e->t.tenant), "web");
		e->t.vec[DRF_RES_CPU] = 1e-6;
	}
	p.v.tasks = tasks;
	/* A's backlog at the bound, B's empty: B, though A's H is better. */
	p.v.n_tasks = n / 2;
	assert_string_equal(place(&p, "web", 1, 4, b, sizeof(b)), "B");
	/* One of A's taken in: A again. */
	tasks[0].s.st = DRF_FLEET_TASK_QUEUED;
	assert_string_equal(place(&p, "web", 1, 4, b, sizeof(b)), "A");
	tasks[0].s.st = DRF_FLEET_TASK_NONE;
	/* Both at the bound: busy, nothing placed. */
	p.v.n_tasks = n;
	assert_string_equal(place(&p, "web", 1, 4, b, sizeof(b)), strerror(EBUSY));
	free(tasks);
}

/* Ties of H go to the earlier node; a node without the tenant's share is no candidate. */
static void test_place_task_ties(void **state)
{
	struct pv p;
	char b[64];

	(void)state;
	pv_init(&p);
	pv_node(&p, "A", 8, 8);
	pv_node(&p, "B", 8, 8);
	pv_node(&p, "C", 16, 4);
	pv_alloc(&p, 0, "zz", 8, 8);
	pv_alloc(&p, 1, "web", 4, 4);
	pv_alloc(&p, 2, "web", 4, 4);
	/* web is on B and C: C's shape (16, 4G) is (4, 1G)'s direction, H 0; B's H 0.659. */
	assert_string_equal(place(&p, "web", 4, 1, b, sizeof(b)), "C");
	p.nodes[2].capacity[DRF_RES_CPU] = 8;
	p.nodes[2].capacity[DRF_RES_MEMORY] = 8 * G;
	/* With B and C alike, H ties: the earlier, B. */
	assert_string_equal(place(&p, "web", 4, 1, b, sizeof(b)), "B");
	/* zz is only on A. */
	assert_string_equal(place(&p, "zz", 4, 1, b, sizeof(b)), "A");
}

/* A key or a planner's value with control characters: said escaped, never raw. */
static void test_view_escapes(void **state)
{
	struct etcd_kv tk = { .key = PREFIX "tenants/x\x1b]0;t\x07", .value = "{}" };
	struct etcd_kv pk = { .key = PREFIX "planner", .value = "A\x1b[2J", .create_revision = 3 };
	struct etcd_resp r[4] = { { .type = ETCD_RANGE }, { .type = ETCD_RANGE, .kvs = &tk, .n_kvs = 1 },
				  { .type = ETCD_RANGE }, { .type = ETCD_RANGE, .kvs = &pk, .n_kvs = 1 } };
	struct etcd_txn_resp t = { .revision = 9, .succeeded = true, .resps = r, .n_resps = 4 };
	struct drf_fleet_keys k;
	struct drf_fleet_view v;

	(void)state;
	tk.key_len = strlen(tk.key);
	pk.key_len = strlen(pk.key);
	pk.value_len = strlen(pk.value);
	assert_int_equal(drf_fleet_keys_init(&k, PREFIX), 0);
	assert_int_equal(drf_fleet_view_decode(&k, &t, &v), 0);
	assert_int_equal(v.n_tenants, 0);
	assert_string_equal(v.planner, "");
	assert_int_equal(v.n_invalid, 2);
	assert_null(strchr(v.invalid, '\x1b'));
	assert_non_null(strstr(v.invalid, "\\x1b"));
	drf_fleet_view_clear(&v);
}

/* The formats. */

static void test_formats(void **state)
{
	struct drf_tenant t = { .name = "web", .weight = 2.5, .task_model = true, .tasks = 4 };
	struct drf_tenant u;
	struct drf_fleet_label labels[] = { { .key = "zone", .value = "eu-1" } };
	struct drf_fleet_nodeinfo ni;
	struct drf_fleet_assignment a = { .revision = 42, .planner = "A" }, b;
	struct drf_fleet_share sh = { .name = "web", .cgroup = "w/x", .weight = 2, .tasks = 3,
				      .alloc = { 6, 3 * G } };
	double cap[DRF_NRES] = { 8, 16 * G };
	const char *txt;
	char *v, err[256];

	(void)state;
	t.cgroup = "web";
	t.vec[DRF_RES_CPU] = 2;
	t.declared[DRF_RES_CPU] = true;
	t.vec[DRF_RES_MEMORY] = 2 * G;
	t.declared[DRF_RES_MEMORY] = true;
	assert_int_equal(drf_fleet_tenant_value(&t, &v), 0);
	assert_string_equal(v, "{\"weight\":2.5,\"cgroup\":\"web\",\"tasks\":4,\"task\":{\"cpu\":2,"
			       "\"memory\":2147483648}}");
	assert_int_equal(drf_fleet_tenant_parse("web", v, strlen(v), &u, err, sizeof(err)), 0);
	assert_true(u.task_model && u.tasks == 4 && u.weight == 2.5);
	assert_true(u.declared[DRF_RES_CPU] && u.vec[DRF_RES_MEMORY] == 2 * G);
	assert_false(u.declared[DRF_RES_IO_READ]);
	assert_string_equal(u.cgroup, "web");
	drf_fleet_tenant_clear(&u);
	free(v);
	/* A demand, unlimited tasks, defaults. */
	txt = "{\"demand\":{\"cpu\":1}}";
	assert_int_equal(drf_fleet_tenant_parse("d", txt, strlen(txt), &u, err, sizeof(err)), 0);
	assert_false(u.task_model);
	assert_true(u.weight == 1);
	assert_string_equal(u.cgroup, "d");
	drf_fleet_tenant_clear(&u);
	txt = "{\"tasks\":\"unlimited\",\"task\":{\"cpu\":1}}";
	assert_int_equal(drf_fleet_tenant_parse("d", txt, strlen(txt), &u, err, sizeof(err)), 0);
	assert_true(isinf(u.tasks));
	drf_fleet_tenant_clear(&u);
	/* Refused: each with its error. */
	static const struct {
		const char *text;
		int err;
	} bad[] = {
		{ "{\"weight\":0}", -EINVAL },
		{ "{\"weight\":\"2\"}", -EBADMSG },
		{ "{\"task\":{\"cpu\":1},\"demand\":{\"cpu\":1}}", -EINVAL },
		{ "{\"tasks\":3}", -EINVAL },
		{ "{\"tasks\":1.5,\"task\":{\"cpu\":1}}", -EINVAL },
		{ "{\"task\":{\"gpu\":1}}", -EBADMSG },
		{ "{\"task\":{\"cpu\":0}}", -EINVAL },
		{ "{\"cgroup\":\"../x\"}", -EINVAL },
		{ "{\"colour\":1}", -EBADMSG },
		{ "[1]", -EBADMSG },
		{ "{\"weight\":1", -EBADMSG },
		{ "{} x", -EBADMSG },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(drf_fleet_tenant_parse("x", bad[i].text, strlen(bad[i].text), &u,
							err, sizeof(err)),
				 bad[i].err);
		assert_true(err[0] != 0);
	}
	assert_int_equal(drf_fleet_tenant_parse("../x", "{}", 2, &u, err, sizeof(err)), -EINVAL);

	/* Nodes. */
	assert_int_equal(drf_fleet_node_value(cap, labels, 1, &v), 0);
	assert_string_equal(v, "{\"capacity\":{\"cpu\":8,\"memory\":17179869184},\"labels\":"
			       "{\"zone\":\"eu-1\"}}");
	assert_int_equal(drf_fleet_node_parse("n1", v, strlen(v), &ni, err, sizeof(err)), 0);
	assert_true(ni.capacity[DRF_RES_MEMORY] == 16 * G);
	assert_int_equal(ni.n_labels, 1);
	assert_string_equal(ni.labels[0].value, "eu-1");
	drf_fleet_nodeinfo_clear(&ni);
	free(v);
	txt = "{\"capacity\":{}}";
	assert_int_equal(drf_fleet_node_parse("n1", txt, strlen(txt), &ni, err, sizeof(err)),
			 -EINVAL);
	txt = "{\"capacity\":{\"cpu\":-1}}";
	assert_int_equal(drf_fleet_node_parse("n1", txt, strlen(txt), &ni, err, sizeof(err)),
			 -EINVAL);
	labels[0].key = "bad key";
	assert_int_equal(drf_fleet_node_value(cap, labels, 1, &v), -EINVAL);

	/* Assignments. */
	a.tenants = &sh;
	a.n = 1;
	assert_int_equal(drf_fleet_assignment_value(&a, &v), 0);
	assert_string_equal(v, "{\"revision\":42,\"planner\":\"A\",\"tenants\":[{\"name\":\"web\","
			       "\"cgroup\":\"w/x\",\"weight\":2,\"tasks\":3,\"alloc\":{\"cpu\":6,"
			       "\"memory\":3221225472}}]}");
	assert_int_equal(drf_fleet_assignment_parse(v, strlen(v), &b, err, sizeof(err)), 0);
	assert_true(drf_fleet_assignment_same(&a, &b));
	assert_int_equal(b.revision, 42);
	assert_string_equal(b.planner, "A");
	drf_fleet_assignment_clear(&b);
	free(v);
	txt = "{\"planner\":\"A\",\"tenants\":[]}";
	assert_int_equal(drf_fleet_assignment_parse(txt, strlen(txt), &b, err, sizeof(err)),
			 -EBADMSG);
}

/* The node's config refused where it is wrong. */
static void test_node_config(void **state)
{
	struct drf_fleet_node_config c = { .node = "n" };
	struct drf_fleet_node *n = NULL;
	struct etcd *e;
	char err[256];

	(void)state;
	assert_int_equal(fakeetcd_connect(env.fake, &e), 0);
	c.node = "bad name";
	assert_int_equal(drf_fleet_node_new(&c, e, &n, err, sizeof(err)), -EINVAL);
	c.node = "n";
	c.prefix = "no-slash";
	assert_int_equal(drf_fleet_node_new(&c, e, &n, err, sizeof(err)), -EINVAL);
	c.prefix = "/p/";
	c.ttl = -1;
	assert_int_equal(drf_fleet_node_new(&c, e, &n, err, sizeof(err)), -EINVAL);
	assert_null(n);
	c.ttl = 0;
	assert_int_equal(drf_fleet_node_new(&c, e, &n, err, sizeof(err)), 0);
	assert_null(drf_fleet_node_assignment(n));
	assert_int_equal(drf_fleet_node_replan(n), -EPERM);
	assert_true(drf_fleet_node_next_tick(n) == UINT64_MAX);
	drf_fleet_node_free(n); /* never started: closes its client all the same */
}

/* The tenants (t-name: tasks) of a node's assignment in force. */
static double in_force_tasks(const struct tnode *t)
{
	const struct drf_fleet_assignment *a = drf_fleet_node_assignment(t->n);
	double n = 0;

	for (size_t i = 0; a && i < a->n; i++)
		n += a->tenants[i].tasks;
	return n;
}

/*
 * [fleet] planner = no: A and B never campaign (their etcd users have no
 * planner role); C plans. A and B are plain nodes: registered, told who
 * plans, their assignments in force. C dies: the planner key goes with its
 * lease and nobody takes the role (no campaign at all: P/planner stays
 * absent), while A and B keep their tenants.
 */
static void test_plain_node(void **state)
{
	struct drf_fleet_status st;
	double a_tasks, b_tasks;

	(void)state;
	env.node[0].plain = env.node[1].plain = true;
	fleet_up();
	assert_ptr_equal(planner(), &env.node[2]);
	assert_string_equal(fakeetcd_get(env.fake, PREFIX "planner")->value, "C");
	for (int i = 0; i < 2; i++) {
		st = status_of(&env.node[i]);
		assert_true(st.plain);
		assert_false(st.planner);
		assert_false(st.campaign_refused);
		assert_string_equal(st.planner_name, "C");
		assert_true(st.has_assignment);
	}
	assert_false(status_of(&env.node[2]).plain);
	a_tasks = in_force_tasks(&env.node[0]);
	b_tasks = in_force_tasks(&env.node[1]);
	assert_true(a_tasks + b_tasks > 0);
	/* The planner dies: nobody campaigns; the plain nodes keep what they run. */
	env.node[2].alive = false;
	assert_int_equal(fakeetcd_partition(env.node[2].e, true), 0);
	advance(3 * TTL * DRF_USEC_PER_SEC);
	assert_null(fakeetcd_get(env.fake, PREFIX "planner"));
	assert_null(planner());
	for (int i = 0; i < 2; i++) {
		st = status_of(&env.node[i]);
		assert_true(st.registered);
		assert_string_equal(st.planner_name, "");
		assert_false(st.planner_vacant);
	}
	assert_true(in_force_tasks(&env.node[0]) == a_tasks);
	assert_true(in_force_tasks(&env.node[1]) == b_tasks);
}

/*
 * A node whose campaign etcd refuses (permission denied: its etcd user lacks
 * the planner role) says so in its status, campaigns no more (one refusal,
 * not a retry every few seconds), learns who plans by reading, and keeps its
 * registration and assignment in force: a permission fault never removes a
 * tenant.
 */
static bool a_refused(void)
{
	return status_of(&env.node[0]).campaign_refused;
}

static void test_campaign_refused(void **state)
{
	struct drf_fleet_status st;
	struct tnode *a;
	double tasks;

	(void)state;
	node_start(1, false);
	node_start(2, false);
	advance_until(planner_live, 5 * DRF_USEC_PER_SEC);
	/* From now on the planner key's txns are refused, as etcd's roles would refuse A's. */
	env.fake->fault = (struct drf_fault){ .err = EACCES, .ops = FAKEETCD_OP_TXN,
					      .path = PREFIX "planner" };
	a = node_start(0, false);
	advance_until(a_refused, 5 * DRF_USEC_PER_SEC);
	/* The fleet full (an unlimited tenant): A's share is not empty. */
	apply(web_count, true);
	advance_until(settled, 5 * DRF_USEC_PER_SEC);
	st = status_of(a);
	assert_non_null(strstr(st.campaign_refused_why, "permission denied"));
	assert_false(st.plain);
	assert_false(st.planner);
	assert_true(st.registered);
	assert_true(st.reachable);
	assert_non_null(planner());
	assert_string_equal(st.planner_name, planner()->name);
	assert_int_equal(env.fake->fault.hits, 1);
	tasks = in_force_tasks(a);
	assert_true(tasks > 0);
	/* Long after: no campaign again, the same assignment in force. */
	advance(3 * TTL * DRF_USEC_PER_SEC);
	assert_int_equal(env.fake->fault.hits, 1);
	assert_true(status_of(a).campaign_refused);
	assert_true(in_force_tasks(a) == tasks);
	assert_false(status_of(a).planner);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_elected_once),
		T(test_best_fit_equal),
		T(test_lease_expiry_replans),
		T(test_planner_death_fenced),
		T(test_planner_key_deleted),
		T(test_unreachable_keeps),
		T(test_stalled_node_keeps),
		T(test_late_tenant_converges),
		T(test_planner_key_vacant),
		T(test_restart_unreachable),
		T(test_compaction_resync),
		T(test_only_changed_written),
		T(test_invalid_tenant_skipped),
		T(test_unplannable_skipped),
		T(test_refused_assignment),
		T(test_node_key_deleted),
		T(test_capacity_changed),
		T(test_view_escapes),
		T(test_node_config),
		T(test_task_submit_once),
		T(test_task_node),
		T(test_task_state_retried),
		T(test_plain_node),
		T(test_campaign_refused),
		cmocka_unit_test(test_formats),
		cmocka_unit_test(test_task_formats),
		cmocka_unit_test(test_place_task),
		cmocka_unit_test(test_place_task_ties),
		cmocka_unit_test(test_place_backpressure),
	};

	return cmocka_run_group_tests_name("fleet", tests, NULL, NULL);
}
