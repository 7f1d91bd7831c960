// SPDX-License-Identifier: MIT
/*
 * The daemon's reload and tick, as drfd runs them, over the fake cgroup tree,
 * the fake tc kernel and the BPF recorders (tests/lib/fakedrfd.h):
 *
 * - a reload builds the plan once, from the new config and the measurements:
 *   with observed demand, the effective demands carried over by name (a
 *   reload that planned the declared demands would move an idle tenant's
 *   knobs back); and hands it to the cgroups and the network, each once;
 * - a refused reload (a config that does not load, one that needs a restart,
 *   one the shaper cannot take) writes nothing anywhere and keeps the plan;
 * - a tick with nothing changed writes nothing: no cgroup file, no tc call
 *   that changes, no BPF map entry, no new plan;
 * - what drfd keeps for its next start: a save of the state file that fails
 *   (the path blocked by a directory, as a full disk or a read-only file
 *   system would make it fail) is shown in status and metrics and retried
 *   each tick until it succeeds; a reload that added a tenant while it failed
 *   is in the file once it is saved.
 *
 * And the log escapes control characters, and JSON strings hold none; JSON numbers
 * are the shortest text that reads back the same; a JSON document is printed
 * whole or not at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json_tokener.h>

#include "daemon.h"
#include "fakecg.h"
#include "fakedrfd.h"
#include "fakeetcd.h"
#include "fleet.h"
#include "fleetd.h"
#include "json.h"
#include "listener.h"
#include "log.h"
#include "metrics.h"
#include "statedir.h"
#include "statefile.h"
#include "status.h"
#include "tasks.h"
#include "testlib.h"
#include "text.h"

/* ASan reserves terabytes of address space: RLIMIT_AS cannot stand for a full memory there. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static struct fakedrfd fx;
#define d (fx.d)

#define TWO_CPU "[capacity]\ncpu = 2\nmemory = 2G\n"

static int setup(void **state)
{
	(void)state;
	assert_int_equal(fakedrfd_setup(&fx, NULL, TWO_CPU "[tenant a]\ncpu = 1\nmemory = 1G\n"),
			 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fakedrfd_teardown(&fx);
	return 0;
}

/* The whole of a small file, or "" (static buffer). */
static const char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = '\0';
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

/*
 * text as drf_json_print() writes it: one JSON document, strictly parsed (its
 * bytes UTF-8), then a newline and nothing else. Fails the test otherwise.
 */
static json_object *parse_doc(const char *text)
{
	size_t n = strlen(text);
	struct json_tokener *tok = json_tokener_new();
	json_object *o;

	assert_non_null(tok);
	assert_true(n > 0 && text[n - 1] == '\n');
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, text, (int)(n - 1));
	if (json_tokener_get_error(tok) != json_tokener_success)
		fail_msg("not JSON (%s): %s", json_tokener_error_desc(json_tokener_get_error(tok)),
			 text);
	assert_int_equal(json_tokener_get_parse_end(tok), n - 1);
	json_tokener_free(tok);
	assert_non_null(o);
	return o;
}

/* The member key of o, which must be there (it may be null). */
static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(o, key, &v))
		fail_msg("no \"%s\" in %s", key, json_object_to_json_string(o));
	return v;
}

/* Every byte printable or UTF-8 that is not a control character, but the newline at the end. */
static void assert_terminal_safe(const char *text)
{
	const char *end = text + strlen(text) - 1;

	assert_true(*end == '\n');
	for (const char *p = text; p < end;) {
		unsigned int cp;
		size_t n = drf_utf8_next(p, &cp);

		if (n == 0 || drf_is_control(cp))
			fail_msg("byte 0x%02x at %zu is not safe on a terminal", (unsigned char)*p,
				 (size_t)(p - text));
		p += n;
	}
}

/* The status (JSON) and its problem count. */
static int status_json(char **ret)
{
	struct drf_view v;
	size_t len = 0;
	FILE *f = open_memstream(ret, &len);
	int problems;

	assert_non_null(f);
	drfd_view(&d, &v);
	assert_int_equal(drf_status_render(&v, true, f, &problems), 0);
	assert_int_equal(fclose(f), 0);
	return problems;
}

static bool metrics_have(const char *line)
{
	struct drf_view v;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool have;

	assert_non_null(f);
	drfd_view(&d, &v);
	assert_int_equal(drf_metrics_render(&v, DRF_METRICS_FULL, f), 0);
	assert_int_equal(fclose(f), 0);
	have = strstr(buf, line) != NULL;
	free(buf);
	return have;
}

/* Blocks the state file: a directory (not empty) where it goes, so the rename fails. */
static void block(bool on)
{
	char p[4352];

	snprintf(p, sizeof(p), "%s/x", d.state_path);
	if (on) {
		assert_true(unlink(d.state_path) == 0 || errno == ENOENT);
		assert_int_equal(mkdir(d.state_path, 0755), 0);
		assert_int_equal(t_write_file(p, "x"), 0);
	} else {
		assert_int_equal(unlink(p), 0);
		assert_int_equal(rmdir(d.state_path), 0);
	}
}

static void test_state_save_retried(void **state)
{
	char *js = NULL;
	json_object *doc, *sf;
	struct stat st;

	(void)state;
	/* The first save fails: said in status (a problem) and in metrics. */
	assert_int_equal(drf_statedir_path(fx.statedir, fx.root, ".state", d.state_path,
					   sizeof(d.state_path)), 0);
	block(true);
	d.state_path[0] = '\0'; /* drfd_start works the path out itself */
	assert_int_equal(fakedrfd_start(&fx), 0);
	assert_true(d.state_path[0] != '\0');
	assert_int_not_equal(d.state_err, 0);
	assert_true(status_json(&js) >= 1);
	assert_terminal_safe(js);
	doc = parse_doc(js);
	sf = member(doc, "state_file");
	assert_string_equal(json_object_get_string(member(sf, "path")), d.state_path);
	assert_true(json_object_is_type(member(sf, "saved"), json_type_boolean));
	assert_false(json_object_get_boolean(member(sf, "saved")));
	assert_true(json_object_is_type(member(sf, "error"), json_type_string));
	assert_string_equal(json_object_get_string(member(sf, "error")), strerror(-d.state_err));
	json_object_put(doc);
	free(js);
	assert_true(metrics_have("\ndrfd_state_saved 0\n"));
	/* Still failing: still said. */
	drfd_tick(&d, 0);
	assert_int_not_equal(d.state_err, 0);
	/* Space again: the next tick saves it, with nothing else changed. */
	block(false);
	drfd_tick(&d, 0);
	assert_int_equal(d.state_err, 0);
	assert_int_equal(stat(d.state_path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_non_null(strstr(slurp(d.state_path), "\ntenant a a\n"));
	assert_int_equal(status_json(&js), 0);
	doc = parse_doc(js);
	sf = member(doc, "state_file");
	assert_string_equal(json_object_get_string(member(sf, "path")), d.state_path);
	assert_true(json_object_is_type(member(sf, "saved"), json_type_boolean));
	assert_true(json_object_get_boolean(member(sf, "saved")));
	assert_null(member(sf, "error"));
	/* No task queue here (no spawn): none in the status, no family of it in the metrics. */
	assert_null(d.tasks);
	assert_null(member(doc, "tasks"));
	json_object_put(doc);
	free(js);
	assert_true(metrics_have("\ndrfd_state_saved 1\n"));
	assert_false(metrics_have("drfd_task_output_truncated_total"));

	/*
	 * A reload adds tenant b while the disk is full: the save fails, and the
	 * ticks after it (which change nothing) retry it until b is in the file.
	 */
	block(true);
	assert_int_equal(fakedrfd_write(&fx, NULL, TWO_CPU "[tenant a]\ncpu = 1\nmemory = 1G\n"
							 "[tenant b]\ncpu = 1\nmemory = 1G\n"), 0);
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_not_equal(d.state_err, 0);
	drfd_tick(&d, 0);
	drfd_tick(&d, 0);
	assert_int_not_equal(d.state_err, 0);
	block(false);
	drfd_tick(&d, 0);
	assert_int_equal(d.state_err, 0);
	assert_non_null(strstr(slurp(d.state_path), "\ntenant b b\n"));
	/* The ticks counted are drfd_tick()s: the one at start and these 5 (a reload makes none). */
	assert_int_equal(d.ticks, 6);
	status_json(&js);
	doc = parse_doc(js);
	assert_true(json_object_is_type(member(doc, "ticks"), json_type_int));
	assert_int_equal(json_object_get_int64(member(doc, "ticks")), 6);
	json_object_put(doc);
	free(js);
	assert_true(metrics_have("\ndrfd_ticks_total 6\n"));
}

/* ---- reload and tick over the fakes, with observed demand and the network ---- */

#define OBSERVED "mode = limit\ndemand = observed\n"
#define NET_CAP "[capacity]\ncpu = 2\nmemory = 3G\nnet-device = " FAKETC_IFNAME "\n" \
		"net-rate = 90mbit\n"
#define ABC(cw) "[tenant a]\ncpu = 2\nmemory = 512M\nnet-rate = 30mbit\n"                \
		"[tenant b]\ncpu = 2\nmemory = 512M\nnet-rate = 30mbit\n"                   \
		"[tenant c]\nweight = " cw "\ncpu = 2\nmemory = 512M\nnet-rate = 30mbit\n"

static double usec[3];

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

/* A second of use: a and b busy (all of their cpu.max), c idle; then drfd's tick. */
static void busy_tick(void)
{
	static const char *const names[] = { "a", "b", "c" };

	for (int i = 0; i < 3; i++) {
		char buf[256];

		if (i < 2)
			usec[i] += cpu_max(names[i]) * 1e6;
		snprintf(buf, sizeof(buf), "usage_usec %.0f\nnr_throttled %d\nthrottled_usec 0\n",
			 usec[i], i < 2 ? (int)d.ticks * 10 : 0);
		assert_int_equal(fakedrfd_put(&fx, names[i], "cpu.stat", buf), 0);
		assert_int_equal(fakedrfd_put(&fx, names[i], "memory.current", "104857600\n"), 0);
		assert_int_equal(fakedrfd_put(&fx, names[i], "memory.stat",
					      "anon 104857600\nfile 0\ninactive_file 0\n"), 0);
	}
	fakedrfd_advance(&fx, DRF_USEC_PER_SEC);
	drfd_tick(&d, SIZE_MAX);
}

static int setup_observed(void **state)
{
	(void)state;
	memset(usec, 0, sizeof(usec));
	assert_int_equal(fakedrfd_setup(&fx, OBSERVED, NET_CAP ABC("1")), 0);
	assert_int_equal(fakedrfd_net(&fx, 0), 0);
	assert_int_equal(fakedrfd_start(&fx), 0);
	/* c idle: its effective cpu falls, and a and b take its share. */
	for (int k = 0; k < 6; k++)
		busy_tick();
	assert_true(d.plan.effective);
	assert_true(cpu_max("c") < 0.2);
	assert_true(cpu_max("a") > 0.9);
	return 0;
}

/* Tenant i's usage in the status (JSON): its member `key`, a number or null. */
static json_object *status_usage(size_t i, const char *key, json_object **ret_doc)
{
	char *js = NULL;
	json_object *te;

	status_json(&js);
	*ret_doc = parse_doc(js);
	free(js);
	te = json_object_array_get_idx(member(*ret_doc, "tenants"), i);
	assert_non_null(te);
	return member(member(te, "usage"), key);
}

/*
 * The status's cpu usage is cpu.stat's usage_usec, the key whole (not the tail
 * of a longer one); no usage_usec, or one that is no number, is null.
 */
static void test_status_cpu_usage(void **state)
{
	json_object *doc, *u;

	(void)state;
	u = status_usage(0, "cpu_usec", &doc);
	assert_true(json_object_is_type(u, json_type_double) ||
		    json_object_is_type(u, json_type_int));
	assert_true(json_object_get_double(u) == usec[0]);
	json_object_put(doc);
	assert_int_equal(fakedrfd_put(&fx, "a", "cpu.stat",
				      "throttled_usage_usec 5\nusage_usec 77\n"), 0);
	u = status_usage(0, "cpu_usec", &doc);
	assert_true(json_object_get_double(u) == 77);
	json_object_put(doc);
	assert_int_equal(fakedrfd_put(&fx, "a", "cpu.stat", "usage_usec 12abc\n"), 0);
	assert_null(status_usage(0, "cpu_usec", &doc));
	json_object_put(doc);
	assert_int_equal(fakedrfd_put(&fx, "a", "cpu.stat", "user_usec 12\n"), 0);
	assert_null(status_usage(0, "cpu_usec", &doc));
	json_object_put(doc);
}

/* The HTB class of tenant i as the fake kernel holds it. */
static const struct drf_tc_class *class_of(size_t i)
{
	return faketc_class(&fx.tc, d.net.t[i].want.classid);
}

/* Each tenant's class holds its egress allocation in the plan in force (limit mode: rate = ceil). */
static void classes_follow_plan(void)
{
	for (size_t i = 0; i < d.decl.cfg.n_tenants; i++) {
		double want = d.plan.result.shares[i].alloc[DRF_RES_NET] / 8;
		const struct drf_tc_class *c = class_of(i);

		assert_non_null(c);
		if (!(fabs((double)c->rate - want) <= fmax(DRF_HTB_MIN_RATE_BPS, want * 1e-6)))
			fail_msg("tenant %zu: class rate %llu bytes/s, the plan's %.0f", i,
				 (unsigned long long)c->rate, want);
	}
}

/*
 * A reload plans the new config with the effective demands of its tenants (by
 * name), once, and each backend takes that plan: c stays at its effective cpu
 * (the declared plan would give it 2/3 again), and a weight change reaches the
 * classes of the network.
 */
static void test_reload_replans_observed(void **state)
{
	double c_before = cpu_max("c"), a_before = cpu_max("a");
	uint64_t plans = d.plans, c_rate = class_of(2)->rate;

	(void)state;
	assert_int_equal(fakedrfd_write(&fx, OBSERVED, NET_CAP ABC("2")), 0);
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_equal(d.reloads, 1);
	assert_true(d.plan.effective);
	/* One plan put in force (the reload's); its tick changed no effective demand. */
	assert_int_equal(d.plans, plans + 1);
	/* The cgroups: the effective plan, not the declared one. */
	assert_true(fabs(cpu_max("c") - c_before) < 1e-3);
	assert_true(fabs(cpu_max("a") - a_before) < 1e-3);
	assert_true(fabs(cpu_max("c") - 2.0 / 3) > 0.3);
	/* The network, from the same plan. */
	classes_follow_plan();
	(void)c_rate;
	/* And the knobs as the plan in force has them, read back from the tree. */
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(fakedrfd_get(&fx, d.decl.cfg.tenants[i].cgroup, "cpu.max"),
				    d.plan.knobs[i].val[DRF_KNOB_CPU_MAX]);
}

#define SHARE_NET "[capacity]\ncpu = 2\nmemory = 3G\nnet-device = " FAKETC_IFNAME "\n" \
		  "net-rate = 90mbit\n[tenant a]\n" LITTLE "net-rate = 60mbit\n[tenant b]\n" LITTLE \
		  "net-rate = 60mbit\n"
#define LITTLE "cpu = 0.01\nmemory = 1M\n"

/* The network takes the reload's plan: c's doubled weight doubles its class's rate. */
static void test_reload_hands_plan_to_network(void **state)
{
	uint64_t plans;

	(void)state;
	assert_int_equal(fakedrfd_setup(&fx, "mode = limit\n",
					SHARE_NET "[tenant c]\n" LITTLE "net-rate = 60mbit\n"), 0);
	assert_int_equal(fakedrfd_net(&fx, 0), 0);
	assert_int_equal(fakedrfd_start(&fx), 0);
	classes_follow_plan();
	assert_true(fabs((double)class_of(2)->rate * 8 - 30e6) < 1e4);
	plans = d.plans;
	assert_int_equal(fakedrfd_write(&fx, "mode = limit\n",
					SHARE_NET "[tenant c]\nweight = 2\n" LITTLE
						  "net-rate = 60mbit\n"), 0);
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_equal(d.plans, plans + 1);
	classes_follow_plan();
	assert_true(fabs((double)class_of(2)->rate * 8 - 45e6) < 1e4);
	assert_true(fabs((double)class_of(0)->rate * 8 - 22.5e6) < 1e4);
}

/* What a refused reload must not have changed. */
struct snapshot {
	size_t changes, bpf_changes;
	unsigned set_class, del_class, add_htb, add_leaf, del_qdisc;
	uint64_t plans, reloads, refused;
	size_t tenants;
};

static void snap(struct snapshot *s)
{
	*s = (struct snapshot){
		.changes = fx.rec.changes, .bpf_changes = fx.bpf.changes,
		.set_class = fx.tc.calls.set_class, .del_class = fx.tc.calls.del_class,
		.add_htb = fx.tc.calls.add_htb, .add_leaf = fx.tc.calls.add_leaf,
		.del_qdisc = fx.tc.calls.del_qdisc, .plans = d.plans, .reloads = d.reloads,
		.refused = d.reloads_refused, .tenants = d.decl.cfg.n_tenants,
	};
}

static void unchanged_but_refused(const struct snapshot *s)
{
	assert_int_equal(fx.rec.changes, s->changes);
	assert_int_equal(fx.bpf.changes, s->bpf_changes);
	assert_int_equal(fx.tc.calls.set_class, s->set_class);
	assert_int_equal(fx.tc.calls.del_class, s->del_class);
	assert_int_equal(fx.tc.calls.add_htb, s->add_htb);
	assert_int_equal(fx.tc.calls.add_leaf, s->add_leaf);
	assert_int_equal(fx.tc.calls.del_qdisc, s->del_qdisc);
	assert_int_equal(d.plans, s->plans);
	assert_int_equal(d.reloads, s->reloads);
	assert_int_equal(d.reloads_refused, s->refused + 1);
	assert_int_equal(d.decl.cfg.n_tenants, s->tenants);
	assert_true(d.reload_error[0] != '\0');
}

/* A host that does not pass the io controller down. */
static int no_io(const struct drf_config *c, const char *root, char *err, size_t len)
{
	(void)root;
	if (!(drf_knobs_controllers(c) & DRF_CTRL_IO))
		return 0;
	snprintf(err, len, "no io controller here");
	return -ENOTSUP;
}

/* A refused reload changes nothing, anywhere: the plan in force stays in force. */
/* A fleet node: its tenants are the fleet's assignment; a bad one is refused whole. */
#define FLEET_CONF "[capacity]\ncpu = 4\nmemory = 4G\n[fleet]\nendpoints = http://127.0.0.1:1\n"

static void test_fleet_assignment(void **state)
{
	struct drf_tenant a[2] = { { .name = "web", .weight = 2 }, { .name = "db", .weight = 1 } };
	char maxw[64], maxd[64];

	(void)state;
	assert_int_equal(fakedrfd_setup(&fx, "mode = limit\n", FLEET_CONF), 0);
	d.fleet_mode = d.decl.cfg.fleet.on;
	assert_true(d.fleet_mode);
	assert_int_equal(fakedrfd_start(&fx), 0);
	assert_int_equal(d.decl.cfg.n_tenants, 0);
	a[0].vec[DRF_RES_CPU] = 1.5;
	a[0].vec[DRF_RES_MEMORY] = 1 << 30;
	a[1].vec[DRF_RES_CPU] = 2;
	a[1].vec[DRF_RES_MEMORY] = 2.0 * (1 << 30);
	for (int k = 0; k < 2; k++)
		a[k].declared[DRF_RES_CPU] = a[k].declared[DRF_RES_MEMORY] = true;
	assert_int_equal(drfd_assign(&d, a, 2, "fleet assignment of revision 5"), 0);
	assert_int_equal(d.decl.cfg.n_tenants, 2);
	/* Each gets what the fleet gave it here: it fits, so DRF on the node gives it all. */
	assert_true(fabs(d.decl.result.shares[0].alloc[DRF_RES_CPU] - 1.5) < 1e-9);
	assert_true(fabs(d.decl.result.shares[1].alloc[DRF_RES_MEMORY] - 2.0 * (1 << 30)) < 1);
	assert_string_equal(fakedrfd_get(&fx, "web", "memory.max"), "1073741824");
	snprintf(maxw, sizeof(maxw), "%s", fakedrfd_get(&fx, "web", "cpu.max"));
	snprintf(maxd, sizeof(maxd), "%s", fakedrfd_get(&fx, "db", "cpu.max"));
	assert_string_equal(maxw, "150000 100000");
	/* An assignment whose cgroups overlap: refused, the one in force stays. */
	a[1].cgroup = "web/inner";
	assert_int_equal(drfd_assign(&d, a, 2, "fleet assignment of revision 6"), -EINVAL);
	assert_non_null(strstr(d.reload_error, "revision 6"));
	assert_int_equal(d.decl.cfg.n_tenants, 2);
	assert_string_equal(d.decl.cfg.tenants[1].cgroup, "db");
	assert_string_equal(fakedrfd_get(&fx, "db", "cpu.max"), maxd);
	a[1].cgroup = NULL;
	/* A reload keeps the assignment in force. */
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_equal(d.decl.cfg.n_tenants, 2);
	assert_string_equal(d.assigned_source, "fleet assignment of revision 5");
	/* Without [fleet] the config needs a restart: refused. */
	assert_int_equal(fakedrfd_write(&fx, "mode = limit\n", "[capacity]\ncpu = 4\n"), 0);
	assert_int_equal(drfd_reload(&d), -EINVAL);
	assert_int_equal(d.decl.cfg.n_tenants, 2);
	assert_false(d.reload_ok);
	/* Another etcd is a restart too: the client is set up at start. */
	assert_int_equal(fakedrfd_write(&fx, "mode = limit\n",
					"[capacity]\ncpu = 4\nmemory = 4G\n[fleet]\n"
					"endpoints = http://127.0.0.1:2\n"), 0);
	assert_int_equal(drfd_reload(&d), -EINVAL);
	assert_non_null(strstr(d.reload_error, "[fleet] endpoints"));
	assert_int_equal(d.decl.cfg.n_tenants, 2);
	assert_false(d.reload_ok);
	/* The next assignment drops db: its cgroup goes (it holds no process). */
	assert_int_equal(fakedrfd_write(&fx, "mode = limit\n", FLEET_CONF), 0);
	assert_int_equal(drfd_assign(&d, a, 1, "fleet assignment of revision 7"), 0);
	assert_int_equal(d.decl.cfg.n_tenants, 1);
	assert_string_equal(fakedrfd_get(&fx, "db", "cpu.max"), "");
}


/*
 * Fleet tasks on a node: its etcd the fake one (env.etcd_open), its task
 * queue on a spawn whose tasks never end. A task placed on the node runs as
 * [fleet] task-user (nobody: no home, so "/"), under the key fleet:ID; its
 * state goes back to etcd; a restart that reads it again queues nothing new;
 * a node without task-user refuses the task in etcd and queues nothing.
 */
static struct {
	sd_event *ev;
	struct fakeetcd *fake;
	struct etcd *admin;
} fl;

static void fl_pump(void)
{
	while (sd_event_run(fl.ev, 0) > 0)
		;
}

/* The node started on fx (after fakedrfd_start or _restart), as drfd.c starts it. */
static void fl_node_start(void)
{
	char err[512];

	d.event = sd_event_ref(fl.ev);
	d.fleet_mode = true;
	assert_int_equal(drfd_fleet_open(&d, err, sizeof(err)), 0);
	assert_int_equal(drfd_fleet_start(&d), 0);
	/*
	 * fl_steps() ticks the node and its tasks on the fake clock; the
	 * timer, on the real one, would add steps of its own on a slow run.
	 */
	assert_int_equal(sd_event_source_set_enabled(d.fleet_timer, SD_EVENT_OFF), 0);
}

/* Ticks of the node and its tasks, 200 ms apart, with the loop run between. */
static void fl_steps(int n)
{
	for (int i = 0; i < n; i++) {
		fakedrfd_advance(&fx, 200 * 1000);
		fakeetcd_tick(fl.fake);
		drf_fleet_node_tick(d.fleet);
		fl_pump();
		drfd_fleet_tasks_step(&d);
		fl_pump();
	}
}

static void fl_put_cb(void *userdata, int err, const char *msg, const struct etcd_resp *r)
{
	(void)msg;
	(void)r;
	*(int *)userdata = err ? err : 1;
}

static void fl_put(const char *key, const char *value)
{
	int done = 0;
	uint64_t id;

	assert_int_equal(etcd_put(fl.admin, &(struct etcd_req){ .key = key, .value = value,
								 .value_len = strlen(value) },
				  fl_put_cb, &done, &id), 0);
	fl_pump();
	assert_int_equal(done, 1);
}

/* P/taskstate/n1/ID as the store has it (st NONE: none). */
static struct drf_fleet_task_state fl_state(const char *id)
{
	struct drf_fleet_task_state st = { 0 };
	char key[128];
	const struct etcd_kv *kv;

	snprintf(key, sizeof(key), "/drfd/taskstate/n1/%s", id);
	kv = fakeetcd_get(fl.fake, key);
	if (kv)
		assert_int_equal(drf_fleet_task_state_parse(kv->value, kv->value_len, &st, NULL, 0),
				 0);
	return st;
}

#define FLEET_NODE_CONF                                                                        \
	"[capacity]\ncpu = 4\nmemory = 4G\n[fleet]\nendpoints = http://127.0.0.1:1\nnode = n1\n"
#define FLEET_TASK "{\"tenant\":\"web\",\"argv\":[\"/bin/true\"],\"task\":{\"cpu\":1}}"

/* A fleet node over the fake etcd, started: tasks run (and never end) if it has a task-user. */
static void fl_setup(bool task_user)
{
	memset(&fl, 0, sizeof(fl));
	assert_int_equal(fakedrfd_setup(&fx, "mode = limit\n",
					task_user ? FLEET_NODE_CONF "task-user = nobody\n"
						  : FLEET_NODE_CONF),
			 0);
	assert_int_equal(sd_event_new(&fl.ev), 0);
	fl.fake = fakeetcd_new(fl.ev, &fx.clock);
	assert_non_null(fl.fake);
	assert_int_equal(fakeetcd_connect(fl.fake, &fl.admin), 0);
	if (task_user)
		fx.env.spawn = &fakedrfd_running_ops;
	fx.env.etcd_open = fakedrfd_etcd_open;
	fx.env.etcd_ctx = fl.fake;
	assert_int_equal(fakedrfd_start(&fx), 0);
	fl_node_start();
}

static void test_fleet_tasks(void **state)
{
	const struct drf_task *t;
	struct drf_fleet_task_state st;

	(void)state;
	fl_setup(true);
	assert_non_null(d.tasks);
	/* The node plans (it is the only one): web's two tasks are its. */
	fl_put("/drfd/tenants/web", "{\"weight\":1,\"tasks\":2,\"task\":{\"cpu\":1,"
				    "\"memory\":268435456}}");
	fl_steps(5);
	assert_int_equal(d.decl.cfg.n_tenants, 1);
	fl_put("/drfd/tasks/n1/job-1", FLEET_TASK);
	fl_steps(10);
	/* Queued as task-user, never as whoever wrote etcd; running (it never ends here). */
	assert_int_equal(d.tasks->n, 1);
	t = &d.tasks->t[0];
	assert_string_equal(t->tenant, "web");
	assert_int_equal(t->uid, 65534);
	assert_string_equal(t->key, "fleet:job-1");
	assert_string_equal(t->cwd, "/");
	assert_string_equal(t->argv[0], "/bin/true");
	assert_true(t->vec[DRF_RES_CPU] == 1);
	st = fl_state("job-1");
	assert_int_equal(st.st, DRF_FLEET_TASK_RUNNING);
	assert_int_equal(st.task, t->id);
	/* Started with the config's output cap (task-output-max, its default here). */
	assert_int_equal(t->output_max, DRF_TASK_OUTPUT_MAX_DEFAULT);
	/* The queue's figures in the status and the metrics: tasks with output dropped. */
	{
		json_object *doc, *tk;
		char *js;

		d.tasks->truncated_total = 2;
		status_json(&js);
		doc = parse_doc(js);
		tk = member(doc, "tasks");
		assert_int_equal(json_object_get_int64(member(tk, "output_truncated_total")), 2);
		assert_int_equal(json_object_get_int64(member(tk, "output_max")),
				 (int64_t)DRF_TASK_OUTPUT_MAX_DEFAULT);
		assert_int_equal(json_object_get_int64(member(tk, "started_total")), 1);
		json_object_put(doc);
		free(js);
		assert_true(metrics_have("\ndrfd_task_output_truncated_total 2\n"));
		d.tasks->truncated_total = 0;
	}
	/* A restart reads it again (not final): the key finds its task, nothing new queued. */
	assert_int_equal(fakedrfd_restart(&fx), 0);
	fl_node_start();
	fl_steps(10);
	assert_int_equal(d.tasks->n, 1);
	assert_int_equal(fl_state("job-1").st, DRF_FLEET_TASK_RUNNING);
	/* Without task-user: the next task refused in etcd, nothing queued. */
	assert_int_equal(fakedrfd_write(&fx, "mode = limit\n", FLEET_NODE_CONF), 0);
	assert_int_equal(fakedrfd_restart(&fx), 0);
	fl_node_start();
	fl_put("/drfd/tasks/n1/job-2", FLEET_TASK);
	fl_steps(10);
	assert_int_equal(d.tasks->n, 1);
	st = fl_state("job-2");
	assert_int_equal(st.st, DRF_FLEET_TASK_REFUSED);
	assert_non_null(strstr(st.why, "task-user is not set"));
	/* A task of a tenant the node is not assigned: refused by the queue, with why. */
	assert_int_equal(fakedrfd_write(&fx, "mode = limit\n",
					FLEET_NODE_CONF "task-user = nobody\n"), 0);
	assert_int_equal(fakedrfd_restart(&fx), 0);
	fl_node_start();
	fl_put("/drfd/tasks/n1/job-3", "{\"tenant\":\"db\",\"argv\":[\"x\"],\"task\":{\"cpu\":1}}");
	/* ...after a while: an assignment that brings the tenant may be on its way. */
	fl_steps(10);
	assert_int_equal(fl_state("job-3").st, DRF_FLEET_TASK_NONE);
	fl_steps(50);
	assert_int_equal(d.tasks->n, 1);
	st = fl_state("job-3");
	assert_int_equal(st.st, DRF_FLEET_TASK_REFUSED);
	assert_non_null(strstr(st.why, "db"));
	drfd_fleet_free(&d);
	etcd_close(fl.admin);
	fakeetcd_free(fl.fake);
	fl_pump();
	sd_event_unref(fl.ev);
}

/*
 * A burst of 600 fleet tasks for one node: queued a bounded number a step,
 * up to the local queue's cap on task-user's tasks (DRF_TASKS_MAX_UID); the
 * rest wait, handed over, for room: none is refused or failed for the cap.
 */
static void test_fleet_burst(void **state)
{
	char key[64];
	size_t before;
	int refused = 0, none = 0;

	(void)state;
	fl_setup(true);
	fl_put("/drfd/tenants/web", "{\"weight\":1,\"tasks\":\"unlimited\",\"task\":{\"cpu\":1,"
				    "\"memory\":268435456}}");
	fl_steps(5);
	assert_int_equal(d.decl.cfg.n_tenants, 1);
	for (int i = 0; i < 600; i++) {
		snprintf(key, sizeof(key), "/drfd/tasks/n1/b-%03d", i);
		fl_put(key, FLEET_TASK);
	}
	/* Each step queues a bounded number. */
	for (int k = 0; k < 40; k++) {
		before = d.tasks->n;
		fl_steps(1);
		assert_true(d.tasks->n - before <= DRFD_FLEET_QUEUE_STEP_MAX);
	}
	assert_int_equal(d.tasks->n, DRF_TASKS_MAX_UID);
	assert_false(d.fleet_more);
	for (int i = 0; i < 600; i++) {
		struct drf_fleet_task_state st;

		snprintf(key, sizeof(key), "b-%03d", i);
		st = fl_state(key);
		refused += st.st == DRF_FLEET_TASK_REFUSED || st.st == DRF_FLEET_TASK_FAILED;
		none += st.st == DRF_FLEET_TASK_NONE;
	}
	assert_int_equal(refused, 0);
	/* Handed over and waiting: no state written for them yet. */
	assert_int_equal(none, 600 - DRF_TASKS_MAX_UID);
	assert_int_equal(d.fleet_tasks_n, 600);
	drfd_fleet_free(&d);
	etcd_close(fl.admin);
	fakeetcd_free(fl.fake);
	fl_pump();
	sd_event_unref(fl.ev);
}

/*
 * A fleet node's restart: the state dir's assignment is its tenants from the
 * first pass (drfd_fleet_preload), not gone until the node hands it over (an
 * empty tenant's cgroup was removed, then made again).
 */
static void test_fleet_restart_preloaded(void **state)
{
	char knob[64];

	(void)state;
	fl_setup(false);
	fl_put("/drfd/tenants/web", "{\"weight\":1,\"tasks\":2,\"task\":{\"cpu\":1,"
				    "\"memory\":268435456}}");
	fl_steps(5);
	assert_int_equal(d.decl.cfg.n_tenants, 1);
	snprintf(knob, sizeof(knob), "%s", fakedrfd_get(&fx, "web", "cpu.max"));
	assert_string_equal(knob, "200000 100000");
	/* Restarted: web (no process in it) is there from the first pass, its knobs kept. */
	assert_int_equal(fakedrfd_reset(&fx), 0);
	d.event = sd_event_ref(fl.ev);
	d.fleet_mode = true;
	{
		char err[512];

		assert_int_equal(drfd_fleet_open(&d, err, sizeof(err)), 0);
	}
	assert_int_equal(drfd_fleet_preload(&d), 0);
	assert_int_equal(d.decl.cfg.n_tenants, 1);
	assert_int_equal(fakedrfd_start(&fx), 0);
	assert_string_equal(fakedrfd_get(&fx, "web", "cpu.max"), knob);
	assert_int_equal(drfd_fleet_start(&d), 0);
	fl_steps(5);
	assert_int_equal(d.decl.cfg.n_tenants, 1);
	assert_string_equal(fakedrfd_get(&fx, "web", "cpu.max"), knob);
	drfd_fleet_free(&d);
	etcd_close(fl.admin);
	fakeetcd_free(fl.fake);
	fl_pump();
	sd_event_unref(fl.ev);
}

/*
 * Groups through reloads: a flat config, then the same tenants in a group
 * (H-DRF's example, GPUs played by memory): the group's cgroup appears with
 * its knobs and the plan has its allocation; then a config whose groups form
 * a cycle is refused and changes nothing.
 */
#define HDRF_CAP "[capacity]\ncpu = 10\nmemory = 10G\n"
#define HDRF_N1 "[tenant n1]\ntask-memory = 1G\n"

static void test_reload_groups(void **state)
{
	struct snapshot s;

	(void)state;
	assert_int_equal(fakedrfd_setup(&fx, NULL, HDRF_CAP HDRF_N1
				      "[tenant n21]\ntask-cpu = 1\n[tenant n22]\ntask-memory = 1G\n"),
			 0);
	assert_int_equal(fakedrfd_start(&fx), 0);
	assert_null(d.plan.groups);
	assert_string_equal(fakedrfd_get(&fx, "n21", "cpu.weight"), "10000");
	assert_int_equal(fakedrfd_write(&fx, NULL, HDRF_CAP HDRF_N1 "[group n2]\n"
				      "[tenant n21]\ngroup = n2\ntask-cpu = 1\n"
				      "[tenant n22]\ngroup = n2\ntask-memory = 1G\n"),
			 0);
	assert_int_equal(drfd_reload(&d), 0);
	assert_non_null(d.plan.groups);
	assert_true(fabs(d.plan.groups[0].alloc[DRF_RES_CPU] - 10) < 1e-9);
	assert_string_equal(fakedrfd_get(&fx, "n2", "cpu.weight"), "10000");
	assert_string_equal(fakedrfd_get(&fx, "n2", "memory.low"), "5368709120");
	assert_string_equal(fakedrfd_get(&fx, "n2/n21", "cpu.weight"), "10000");
	assert_string_equal(fakedrfd_get(&fx, "n2/n22", "memory.low"), "5368709120");
	/* A cycle: refused with its line, the plan in force stays. */
	snap(&s);
	assert_int_equal(fakedrfd_write(&fx, NULL, HDRF_CAP HDRF_N1 "[group n2]\ngroup = n3\n"
				      "[group n3]\ngroup = n2\n"
				      "[tenant n21]\ngroup = n2\ntask-cpu = 1\n"),
			 0);
	assert_int_equal(drfd_reload(&d), -EINVAL);
	unchanged_but_refused(&s);
	assert_non_null(strstr(d.reload_error, "makes a cycle"));
	assert_int_equal(d.decl.cfg.n_groups, 1);
	assert_string_equal(fakedrfd_get(&fx, "n2", "cpu.weight"), "10000");
}

/*
 * A reload may switch the policy to fds (with beta) and back; one with a lambda
 * drf_family_check() refuses is refused whole, and the policy in force stays.
 */
static void test_reload_switches_policy(void **state)
{
	struct snapshot s;
	uint64_t plans = d.plans;
	char *js;

	(void)state;
	assert_int_equal(fakedrfd_write(&fx, OBSERVED "policy = fds\nbeta = 3\n", NET_CAP ABC("1")),
			 0);
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_equal(d.decl.cfg.policy, DRF_POLICY_FDS);
	assert_true(d.decl.problem.family.beta == 3 && d.decl.problem.family.lambda == -2.0 / 3);
	assert_int_equal(d.plans, plans + 1);
	drfd_tick(&d, 0);
	assert_false(d.replan);
	/* The status says the parameters in force. */
	status_json(&js);
	assert_non_null(strstr(js, "\"policy\":\"fds\",\"beta\":3,\"lambda\":-0.6666666666666"));
	free(js);
	snap(&s);
	assert_int_equal(fakedrfd_write(&fx, OBSERVED "policy = fds\nbeta = 3\nlambda = 0\n",
				       NET_CAP ABC("1")), 0);
	assert_int_equal(drfd_reload(&d), -EINVAL);
	unchanged_but_refused(&s);
	assert_int_equal(d.decl.cfg.policy, DRF_POLICY_FDS);
	assert_int_equal(fakedrfd_write(&fx, OBSERVED "policy = ceei\n", NET_CAP ABC("1")), 0);
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_equal(d.decl.cfg.policy, DRF_POLICY_CEEI);
	status_json(&js);
	assert_non_null(strstr(js, "\"policy\":\"ceei\""));
	assert_null(strstr(js, "\"beta\""));
	free(js);
	assert_int_equal(fakedrfd_write(&fx, OBSERVED, NET_CAP ABC("1")), 0);
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_equal(d.decl.cfg.policy, DRF_POLICY_DRF);
}

static void test_reload_refused_changes_nothing(void **state)
{
	size_t n = DRF_HTB_MAX_TENANTS + 1, len = strlen(NET_CAP) + n * 40;
	char *many = malloc(len), *p = many;
	struct snapshot s;
	double a = cpu_max("a");
	FILE *f;

	(void)state;
	assert_non_null(many);
	/* A config that does not load. */
	snap(&s);
	assert_int_equal(fakedrfd_write(&fx, OBSERVED, NET_CAP ABC("1") "[tenant d]\ncpu = x\n"),
			 0);
	assert_int_equal(drfd_reload(&d), -EINVAL);
	unchanged_but_refused(&s);
	/* One that needs a restart: the network's device. */
	snap(&s);
	assert_int_equal(fakedrfd_write(&fx, OBSERVED, "[capacity]\ncpu = 2\nmemory = 3G\n"
				       "net-device = lo\nnet-rate = 90mbit\n" ABC("1")), 0);
	assert_int_equal(drfd_reload(&d), -EINVAL);
	unchanged_but_refused(&s);
	/* One whose resource the host does not pass down to the root. */
	snap(&s);
	fx.env.check_cgroup = no_io;
	assert_int_equal(fakedrfd_write(&fx, OBSERVED, NET_CAP "io-device = 8:0\n"
				       "io-read-bps = 100M\n" ABC("1")), 0);
	assert_int_equal(drfd_reload(&d), -EINVAL);
	unchanged_but_refused(&s);
	/* One that cannot be planned: more tenants than HTB has classes. */
	snap(&s);
	p += sprintf(p, "%s", NET_CAP);
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "[tenant t%zu]\ncpu = 0.00001\n", i);
	f = fopen(fx.conf, "w");
	assert_non_null(f);
	fprintf(f, "[agent]\ncgroup-root = %s\nstate-dir = %s\n%s%s", fx.root, fx.statedir,
		OBSERVED, many);
	assert_int_equal(fclose(f), 0);
	free(many);
	assert_int_equal(drfd_reload(&d), -ENOSPC);
	unchanged_but_refused(&s);
	/* Still the plan of before, whole: a and its knobs. */
	assert_true(fabs(cpu_max("a") - a) < 1e-3);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(fakedrfd_get(&fx, d.decl.cfg.tenants[i].cgroup, "cpu.max"),
				    d.plan.knobs[i].val[DRF_KNOB_CPU_MAX]);
}

/*
 * A tick with nothing changed writes nothing: the measurements are as before,
 * no effective demand moves, the knobs and classes hold.
 */
static void test_tick_unchanged_writes_nothing(void **state)
{
	struct snapshot s;

	(void)state;
	/* Settled: a few more ticks of the same use. */
	for (int k = 0; k < 40; k++)
		busy_tick();
	snap(&s);
	for (int k = 0; k < 5; k++) {
		busy_tick();
		assert_int_equal(fx.rec.changes, s.changes);
		assert_int_equal(fx.bpf.changes, s.bpf_changes);
		assert_int_equal(fx.tc.calls.set_class, s.set_class);
		assert_int_equal(fx.tc.calls.del_class, s.del_class);
		assert_int_equal(fx.tc.calls.add_leaf, s.add_leaf);
		assert_int_equal(d.plans, s.plans);
	}
	/* And one that changes: c busy again is planned and written in the same tick. */
	usec[2] = usec[0];
	for (int k = 0; k < 4 && cpu_max("c") < 0.5; k++) {
		usec[2] += 1e6;
		busy_tick();
	}
	assert_true(d.plans > s.plans);
	assert_true(fx.rec.changes > s.changes);
}

/*
 * The pressure files are read where something needs them: observed demand,
 * a metrics-file, or a status or metrics asked for in the last DRFD_ASKED_US;
 * with declared demand and neither, not at all (the fault on them is never
 * reached).
 */
static void test_pressure_read_when_asked(void **state)
{
	const struct drf_tenant_use *t;
	char psi[160];

	(void)state;
	assert_int_equal(fakedrfd_start(&fx), 0);
	fx.rec.fault = (struct drf_fault){ .err = EIO, .ops = CGFS_OP_READ, .path = ".pressure" };
	for (int k = 0; k < 3; k++) {
		fakedrfd_advance(&fx, DRF_USEC_PER_SEC);
		drfd_tick(&d, 0);
	}
	assert_int_equal(fx.rec.fault.hits, 0);
	fx.rec.fault = (struct drf_fault){ 0 };
	drfd_asked(&d);
	for (int k = 1; k <= 2; k++) {
		snprintf(psi, sizeof(psi), "some avg10=0 avg60=0 avg300=0 total=%d\n"
					   "full avg10=0 avg60=0 avg300=0 total=0\n", k * 250000);
		assert_int_equal(fakedrfd_put(&fx, "a", "cpu.pressure", psi), 0);
		fakedrfd_advance(&fx, DRF_USEC_PER_SEC);
		drfd_tick(&d, 0);
	}
	t = &d.use.t[0];
	assert_true(fabs(t->pressure[DRF_PRESSURE_CPU_SOME] - 0.25) < 1e-9);
	/* Long after: no longer read. */
	fakedrfd_advance(&fx, DRFD_ASKED_US);
	fx.rec.fault = (struct drf_fault){ .err = EIO, .ops = CGFS_OP_READ, .path = ".pressure" };
	drfd_tick(&d, 0);
	assert_int_equal(fx.rec.fault.hits, 0);
	assert_true(isnan(t->pressure[DRF_PRESSURE_CPU_SOME]));
}

/* A dry run writes no metrics-file, as it writes nothing else; a drfd that runs writes it. */
static void test_dry_run_writes_no_metrics(void **state)
{
	char path[200], agent[300], err[512];

	(void)state;
	snprintf(path, sizeof(path), "%s/drfd.prom", fx.dir);
	snprintf(agent, sizeof(agent), "metrics-file = %s\n", path);
	assert_int_equal(fakedrfd_write(&fx, agent, TWO_CPU "[tenant a]\ncpu = 1\n"), 0);
	drf_declared_free(&d.decl);
	assert_int_equal(drf_declared_load(&d.decl, fx.conf, fx.env.host, err, sizeof(err)), 0);
	fx.env.dry_run = true;
	fx.rec.pass_changes = false;
	assert_int_equal(fakedrfd_start(&fx), 0);
	drfd_tick(&d, 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(errno, ENOENT);
	fx.env.dry_run = false;
	fx.rec.pass_changes = true;
	assert_int_equal(fakedrfd_restart(&fx), 0);
	assert_int_equal(access(path, F_OK), 0);
}

/* Whether text has a line that starts with prefix. */
static bool has_line(const char *text, const char *prefix)
{
	const char *p = text;

	while (strncmp(p, prefix, strlen(prefix)) != 0) {
		p = strchr(p, '\n');
		if (!p)
			return false;
		p++;
	}
	return true;
}

/* The metrics-file as drfd wrote it last, in a buffer to free. */
static char *read_metrics(const char *path)
{
	char *buf = NULL;
	size_t len = 0, n;
	FILE *m = open_memstream(&buf, &len), *f = fopen(path, "r");
	char chunk[4096];

	assert_non_null(m);
	assert_non_null(f);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	assert_int_equal(fclose(m), 0);
	assert_true(strncmp(buf, DRFD_METRICS_MARK, strlen(DRFD_METRICS_MARK)) == 0);
	return buf;
}

/*
 * metrics-detail: the metrics-file has basic's families by default, a reload
 * to full brings the others at its own tick (no restart), and one back to
 * basic takes them away; the socket's metrics are full all along.
 */
static void test_reload_metrics_detail(void **state)
{
	char path[200], agent[300], err[512], *m, *out = NULL;
	struct drfd_req req = { 0 };
	size_t len = 0;
	int sv[2];

	(void)state;
	snprintf(path, sizeof(path), "%s/drfd.prom", fx.dir);
	snprintf(agent, sizeof(agent), "metrics-file = %s\n", path);
	assert_int_equal(fakedrfd_write(&fx, agent, TWO_CPU "[tenant a]\ncpu = 1\n"), 0);
	drf_declared_free(&d.decl);
	assert_int_equal(drf_declared_load(&d.decl, fx.conf, fx.env.host, err, sizeof(err)), 0);
	assert_int_equal(d.decl.cfg.metrics_detail, DRF_METRICS_BASIC);
	assert_int_equal(fakedrfd_start(&fx), 0);
	drfd_tick(&d, 0);
	m = read_metrics(path);
	assert_true(has_line(m, "drfd_allocation_cores{tenant=\"a\",resource=\"cpu\"} 1\n"));
	assert_true(has_line(m, "# TYPE drfd_enforcement_not_holding_resources gauge\n"));
	assert_false(has_line(m, "# TYPE drfd_declared_demand_cores "));
	assert_false(has_line(m, "drfd_declared_demand_cores{"));
	assert_false(has_line(m, "# TYPE drfd_limit_cores "));
	free(m);

	/* the socket answers full while the file is basic */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(drfd_req_feed(&req, "metrics\n", 8), 1);
	assert_int_equal(drfd_req_answer(&d, sv[0], &req, &out, &len), 0);
	close(sv[0]);
	close(sv[1]);
	drfd_req_free(&req);
	assert_non_null(out);
	assert_true(strncmp(out, "drfd-metrics 1\n", 15) == 0);
	assert_true(has_line(out, "drfd_declared_demand_cores{tenant=\"a\",resource=\"cpu\"} 1\n"));
	assert_true(has_line(out, "# TYPE drfd_limit_cores gauge\n"));
	assert_true(has_line(out, "drfd_allocation_cores{tenant=\"a\",resource=\"cpu\"} 1\n"));
	free(out);

	/* a reload to full: the next tick writes the file in full */
	snprintf(agent, sizeof(agent), "metrics-file = %s\nmetrics-detail = full\n", path);
	assert_int_equal(fakedrfd_write(&fx, agent, TWO_CPU "[tenant a]\ncpu = 1\n"), 0);
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_equal(d.reloads, 1);
	drfd_tick(&d, 0);
	m = read_metrics(path);
	assert_true(has_line(m, "drfd_declared_demand_cores{tenant=\"a\",resource=\"cpu\"} 1\n"));
	assert_true(has_line(m, "# TYPE drfd_limit_cores gauge\n"));
	assert_true(has_line(m, "drfd_allocation_cores{tenant=\"a\",resource=\"cpu\"} 1\n"));
	free(m);

	/* and back */
	snprintf(agent, sizeof(agent), "metrics-file = %s\nmetrics-detail = basic\n", path);
	assert_int_equal(fakedrfd_write(&fx, agent, TWO_CPU "[tenant a]\ncpu = 1\n"), 0);
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_equal(d.reloads, 2);
	drfd_tick(&d, 0);
	m = read_metrics(path);
	assert_false(has_line(m, "drfd_declared_demand_cores{"));
	assert_true(has_line(m, "drfd_allocation_cores{tenant=\"a\",resource=\"cpu\"} 1\n"));
	free(m);
}

/* ---- the last reload's verdict, start-only keys, a reload asked over the socket ---- */

/* What the daemon logged, line by line, with the priorities. */
#define LOG_KEEP 256
static struct {
	int prio[LOG_KEEP];
	char msg[LOG_KEEP][512];
	size_t n, total;
} logged;

static void record_log(void *ctx, int prio, const char *msg)
{
	(void)ctx;
	if (logged.n < LOG_KEEP) {
		logged.prio[logged.n] = prio;
		snprintf(logged.msg[logged.n], sizeof(logged.msg[0]), "%s", msg);
		logged.n++;
	}
	logged.total++;
}

static const struct drf_logger recording_log = { .fn = record_log };

/* Lines logged at prio or more severe since the last call; printed, for a failing test. */
static size_t logged_at_least(int prio)
{
	size_t k = 0;

	for (size_t i = 0; i < logged.n; i++)
		if (logged.prio[i] <= prio) {
			print_message("logged <%d> %s\n", logged.prio[i], logged.msg[i]);
			k++;
		}
	k += logged.total - logged.n; /* past the buffer: counted as if severe */
	memset(&logged, 0, sizeof(logged));
	return k;
}

/* The value of metric line "NAME " (no labels) in the full metrics, or NAN if absent. */
static double metric(const char *name)
{
	struct drf_view v;
	char *buf = NULL, key[128];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *p;
	double x = NAN;

	assert_non_null(f);
	drfd_view(&d, &v);
	assert_int_equal(drf_metrics_render(&v, DRF_METRICS_FULL, f), 0);
	assert_int_equal(fclose(f), 0);
	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(buf, key);
	if (p)
		x = strtod(p + strlen(key), NULL);
	free(buf);
	return x;
}

/* The status's "last_reload", parsed; *ret_doc to put. */
static json_object *last_reload(json_object **ret_doc)
{
	char *js = NULL;

	status_json(&js);
	*ret_doc = parse_doc(js);
	free(js);
	return member(*ret_doc, "last_reload");
}

/* The status text, in a buffer to free. */
static char *status_text(void)
{
	struct drf_view v;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int problems;

	assert_non_null(f);
	drfd_view(&d, &v);
	assert_int_equal(drf_status_render(&v, false, f, &problems), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

#define START_S 1700000000.0

/*
 * The last reload's verdict, its time and reason, in the status (JSON and
 * text) and the metrics: none before the first (the start counts as a
 * success), refused with its reason, then in force again.
 */
static void test_reload_verdict_kept(void **state)
{
	json_object *doc, *lr;
	char *text;

	(void)state;
	assert_int_equal(fakedrfd_start(&fx), 0);
	lr = last_reload(&doc);
	assert_true(json_object_is_type(lr, json_type_null));
	json_object_put(doc);
	assert_true(metric("drfd_config_last_reload_successful") == 1);
	assert_true(metric("drfd_config_last_reload_success_timestamp_seconds") == START_S);

	/* Refused: an io-device added needs a restart. */
	fakedrfd_advance(&fx, 10 * DRF_USEC_PER_SEC);
	assert_int_equal(fakedrfd_write(&fx, NULL, TWO_CPU "io-device = 8:0\nio-read-bps = 100M\n"
							 "[tenant a]\ncpu = 1\nmemory = 1G\n"), 0);
	assert_int_equal(drfd_reload(&d), -EINVAL);
	assert_non_null(strstr(d.reload_error, "io-device added ('8:0')"));
	assert_non_null(strstr(d.reload_error, "needs a restart"));
	lr = last_reload(&doc);
	assert_false(json_object_get_boolean(member(lr, "successful")));
	assert_true(json_object_get_double(member(lr, "time")) == START_S + 10);
	assert_string_equal(json_object_get_string(member(lr, "reason")), d.reload_error);
	json_object_put(doc);
	text = status_text();
	assert_non_null(strstr(text, "REFUSED"));
	assert_non_null(strstr(text, d.reload_error));
	free(text);
	assert_true(metric("drfd_config_last_reload_successful") == 0);
	assert_true(metric("drfd_config_last_reload_success_timestamp_seconds") == START_S);

	/* In force: successful, no reason, its time the success's. */
	fakedrfd_advance(&fx, 5 * DRF_USEC_PER_SEC);
	assert_int_equal(fakedrfd_write(&fx, NULL, TWO_CPU "[tenant a]\ncpu = 1\nmemory = 1G\n"
							 "[tenant b]\ncpu = 1\n"), 0);
	assert_int_equal(drfd_reload(&d), 0);
	lr = last_reload(&doc);
	assert_true(json_object_get_boolean(member(lr, "successful")));
	assert_true(json_object_get_double(member(lr, "time")) == START_S + 15);
	assert_null(member(lr, "reason"));
	json_object_put(doc);
	text = status_text();
	assert_null(strstr(text, "REFUSED"));
	free(text);
	assert_true(metric("drfd_config_last_reload_successful") == 1);
	assert_true(metric("drfd_config_last_reload_success_timestamp_seconds") == START_S + 15);
}

/*
 * A refused reload's errors go to the log a record each, every one saying
 * what it is: a journal's record is one line (two errors in one record came
 * out as one line, the newline escaped).
 */
static void test_reload_errors_logged_apart(void **state)
{
	size_t refusals = 0;

	(void)state;
	fx.env.log = &recording_log;
	assert_int_equal(fakedrfd_start(&fx), 0);
	memset(&logged, 0, sizeof(logged));
	assert_int_equal(fakedrfd_write(&fx, NULL, TWO_CPU "[tenant a]\ncpu = x\nmemory = 8GB\n"), 0);
	assert_int_equal(drfd_reload(&d), -EINVAL);
	assert_non_null(strchr(d.reload_error, '\n')); /* two errors, a line each */
	for (size_t i = 0; i < logged.n; i++) {
		if (logged.prio[i] != LOG_ERR)
			continue;
		assert_null(strchr(logged.msg[i], '\n'));
		if (strncmp(logged.msg[i], "reload refused, keeping the configuration in force: ",
			    52) == 0)
			refusals++;
	}
	assert_int_equal(refusals, 2);
}

/* The fakes' config with [agent] cgroup-root and state-dir as given. */
static void write_with(const char *root, const char *statedir, const char *agent)
{
	FILE *f = fopen(fx.conf, "w");

	assert_non_null(f);
	fprintf(f, "[agent]\ncgroup-root = %s\nstate-dir = %s\n%s" TWO_CPU
		   "[tenant a]\ncpu = 1\nmemory = 1G\n[tenant b]\ncpu = 1\n", root, statedir, agent);
	assert_int_equal(fclose(f), 0);
}

/*
 * Every start-only key a reload cannot take is refused, naming the key, its
 * value in force and the new one, and changes nothing; net-replace-qdisc is
 * taken with the rest and said at warning as ignored until a restart.
 */
static void test_reload_start_only_keys(void **state)
{
	static const struct {
		const char *agent, *want;
	} cases[] = {
		{ "status-socket = /run/other/drfd.sock\n",
		  "status-socket changed from '/run/drfd/drfd.sock' to '/run/other/drfd.sock'" },
		{ "status-group = adm\n", "status-group added ('adm')" },
		{ "status-socket = /run/x.sock\nstatus-group = adm\n",
		  "status-socket changed from '/run/drfd/drfd.sock' to '/run/x.sock'; "
		  "status-group added ('adm'); those need a restart" },
	};
	char other[300];
	struct snapshot s;

	(void)state;
	fx.env.log = &recording_log;
	assert_int_equal(fakedrfd_start(&fx), 0);
	memset(&logged, 0, sizeof(logged));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snap(&s);
		write_with(fx.root, fx.statedir, cases[i].agent);
		assert_int_equal(drfd_reload(&d), -EINVAL);
		unchanged_but_refused(&s);
		if (!strstr(d.reload_error, cases[i].want))
			fail_msg("case %zu: %s", i, d.reload_error);
	}
	snap(&s);
	snprintf(other, sizeof(other), "%s/other", fx.dir);
	write_with(fx.root, other, "");
	assert_int_equal(drfd_reload(&d), -EINVAL);
	unchanged_but_refused(&s);
	assert_non_null(strstr(d.reload_error, "state-dir changed from '"));
	snap(&s);
	write_with(other, fx.statedir, "");
	assert_int_equal(drfd_reload(&d), -EINVAL);
	unchanged_but_refused(&s);
	assert_non_null(strstr(d.reload_error, "cgroup-root changed from '"));
	snap(&s);
	write_with("auto", fx.statedir, "");
	assert_int_equal(drfd_reload(&d), -EINVAL);
	unchanged_but_refused(&s);
	assert_non_null(strstr(d.reload_error, "' to 'auto'; that needs a restart"));
	/* Ignored, said once a reload, and the rest of the config is in force. */
	memset(&logged, 0, sizeof(logged));
	write_with(fx.root, fx.statedir, "net-replace-qdisc = yes\n");
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_equal(d.decl.cfg.n_tenants, 2);
	assert_true(d.reload_ok);
	{
		size_t warned = 0;

		for (size_t i = 0; i < logged.n; i++)
			warned += logged.prio[i] == LOG_WARNING &&
				  strstr(logged.msg[i], "net-replace-qdisc changed from 'no' to "
							"'yes'") != NULL;
		assert_int_equal(warned, 1);
	}
	/* The keys in force are still the start's: the same reload again says it again. */
	assert_false(d.start.net_replace_qdisc);
}

/* A "reload" request on a connection whose peer is euid; the answer (to free). */
static char *reload_as(uid_t euid)
{
	struct drfd_req req = { 0 };
	char *out = NULL;
	size_t len = 0;
	int sv[2];

	assert_int_equal(seteuid(euid), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(seteuid(0), 0);
	assert_int_equal(drfd_req_feed(&req, "reload\n", 7), 1);
	assert_int_equal(drfd_req_answer(&d, sv[0], &req, &out, &len), 0);
	drfd_req_free(&req);
	close(sv[0]);
	close(sv[1]);
	assert_non_null(out);
	assert_int_equal(strlen(out), len);
	return out;
}

/*
 * "reload" over the socket: root's reload runs and the answer is its verdict,
 * with the refusal's reason; anyone else is denied and nothing is reloaded.
 */
static void test_reload_over_socket(void **state)
{
	char *a, want[1200];

	(void)state;
	t_needs_root("it connects as uid 65534 and as root");
	assert_int_equal(fakedrfd_start(&fx), 0);
	assert_int_equal(fakedrfd_write(&fx, NULL, TWO_CPU "[tenant a]\ncpu = 1\n[tenant b]\n"
							 "cpu = 1\n"), 0);
	/* Not root: denied, not reloaded. */
	a = reload_as(65534);
	assert_true(strncmp(a, "drfd-reload 1 denied\n", 21) == 0);
	free(a);
	assert_int_equal(d.reloads + d.reloads_refused, 0);
	assert_int_equal(d.decl.cfg.n_tenants, 1);
	/* Root: in force. */
	a = reload_as(0);
	assert_true(strncmp(a, "drfd-reload 1 ok\n", 17) == 0);
	free(a);
	assert_int_equal(d.reloads, 1);
	assert_int_equal(d.decl.cfg.n_tenants, 2);
	/* Refused: the reason is the answer's second line. */
	assert_int_equal(fakedrfd_write(&fx, NULL, TWO_CPU "[tenant a]\ncpu = x\n"), 0);
	a = reload_as(0);
	snprintf(want, sizeof(want), "drfd-reload 1 refused\n%s\n", d.reload_error);
	assert_int_equal(d.reloads_refused, 1);
	assert_true(d.reload_error[0] != '\0');
	assert_string_equal(a, want);
	free(a);
	assert_int_equal(d.decl.cfg.n_tenants, 2);
}

/* Ticks with nothing changed log nothing at info or above; the recording logger catches all. */
static void quiet_ticks(void (*tick)(void))
{
	for (int k = 0; k < 40; k++)
		tick();
	memset(&logged, 0, sizeof(logged));
	for (int k = 0; k < 10; k++)
		tick();
	assert_int_equal(logged_at_least(LOG_INFO), 0);
}

static void declared_tick(void)
{
	fakedrfd_advance(&fx, DRF_USEC_PER_SEC);
	drfd_tick(&d, SIZE_MAX);
}

/*
 * An unchanged tick logs nothing at info or above (issue 18): with declared
 * demand, and with observed demand, the network shaped and the usage probes'
 * recorder, whose ticks read every file and map and change no effective demand.
 */
static void test_unchanged_ticks_quiet(void **state)
{
	(void)state;
	fx.env.log = &recording_log;
	assert_int_equal(fakedrfd_start(&fx), 0);
	/* The start said what it did: the test's logger hears the daemon. */
	assert_true(logged.total > 0);
	quiet_ticks(declared_tick);
	fakedrfd_teardown(&fx);

	memset(usec, 0, sizeof(usec));
	assert_int_equal(fakedrfd_setup(&fx, OBSERVED, NET_CAP ABC("1")), 0);
	fx.env.log = &recording_log;
	assert_int_equal(fakedrfd_net(&fx, 0), 0);
	d.net.log = recording_log;
	assert_int_equal(fakedrfd_start(&fx), 0);
	quiet_ticks(busy_tick);
	/* And one that changes is said: c busy again. */
	usec[2] = usec[0];
	for (int k = 0; k < 4 && cpu_max("c") < 0.5; k++) {
		usec[2] += 1e6;
		busy_tick();
	}
	assert_true(logged_at_least(LOG_INFO) > 0);
}

/*
 * What drfd logs carries names from configs and requests (a task's command is
 * logged at submit): no control character reaches the terminal or journal.
 */
static void test_log_escapes(void **state)
{
	char path[128], buf[512];
	int saved = dup(STDERR_FILENO), fd;
	struct drf_stderr_sink sink;
	struct drf_logger log;
	ssize_t n;

	(void)state;
	snprintf(path, sizeof(path), "%s/log", fx.dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	log = drf_log_stderr(&sink, LOG_INFO);
	drf_log(&log, LOG_ERR, "task queued: %s", "x\x1b]0;owned\x07\ny\xc2\x9b" "2J");
	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	/* one line, its only control the newline that ends it */
	assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);
	for (ssize_t i = 0; i < n - 1; i++)
		assert_true((unsigned char)buf[i] >= 0x20 && buf[i] != 0x7f &&
			    (unsigned char)buf[i] != 0x9b);
	assert_non_null(strstr(buf, "x\\x1b]0;owned\\x07\\x0ay\\xc2\\x9b2J"));
}

/* A document as drf_json_print() writes it, in a buffer to free; its return in *ret. */
static char *print_doc(json_object *o, int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*ret = drf_json_print(f, o);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/*
 * JSON strings: valid, and safe on a terminal whatever bytes a task's words
 * hold: every control character (C0, DEL, C1) as \uXXXX, a byte that is not
 * UTF-8 as \ufffd; the rest of UTF-8 as it is. Read back, a string is the
 * same characters, with U+FFFD for each byte that was not UTF-8.
 */
static void test_json_str(void **state)
{
	static const char plain[] = "q\"b\\ caf\xc3\xa9 \xe2\x82\xac /";
	static const char ctl[] = "\x1b]0;x\x07 \x7f \xc2\x9b" "2J \x9b \xff\xc0\xaf \n\t";
	static const char ctl_back[] = "\x1b]0;x\x07 \x7f \xc2\x9b" "2J \xef\xbf\xbd "
				       "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \n\t";
	json_object *o = drf_json_object(), *a, *back;
	char *text;
	int r;

	(void)state;
	assert_int_equal(drf_json_set_str(o, "plain", plain), 0);
	a = drf_json_set_array(o, "words");
	assert_int_equal(drf_json_append_str(a, ctl), 0);
	assert_int_equal(drf_json_append_str(a, ""), 0);
	assert_int_equal(drf_json_append_str(a, NULL), 0);
	assert_int_equal(drf_json_set_str(o, "none", NULL), 0);
	text = print_doc(o, &r);
	assert_int_equal(r, 0);
	assert_string_equal(text, "{\"plain\":\"q\\\"b\\\\ caf\xc3\xa9 \xe2\x82\xac /\","
				  "\"words\":[\"\\u001b]0;x\\u0007 \\u007f \\u009b2J \\ufffd "
				  "\\ufffd\\ufffd\\ufffd \\u000a\\u0009\",\"\",null],"
				  "\"none\":null}\n");
	assert_terminal_safe(text);
	back = parse_doc(text);
	assert_string_equal(json_object_get_string(member(back, "plain")), plain);
	a = member(back, "words");
	assert_int_equal(json_object_array_length(a), 3);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(a, 0)), ctl_back);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(a, 1)), "");
	assert_null(json_object_array_get_idx(a, 2));
	assert_null(member(back, "none"));
	json_object_put(back);
	json_object_put(o);
	free(text);
}

/*
 * Keys are json-c's to write: one it would write as drfd would (C0 escaped,
 * UTF-8 as it is) is taken; one with DEL, C1 or bytes that are not UTF-8 is
 * refused, and the document with it is not printed.
 */
static void test_json_keys(void **state)
{
	json_object *o = drf_json_object(), *back;
	char *text;
	int r;

	(void)state;
	assert_int_equal(drf_json_set_u64(o, "caf\xc3\xa9", 1), 0);
	assert_int_equal(drf_json_set_u64(o, "a\nb\x1b", 2), 0);
	text = print_doc(o, &r);
	assert_int_equal(r, 0);
	assert_string_equal(text, "{\"caf\xc3\xa9\":1,\"a\\nb\\u001b\":2}\n");
	assert_terminal_safe(text);
	back = parse_doc(text);
	assert_int_equal(json_object_get_int64(member(back, "a\nb\x1b")), 2);
	json_object_put(back);
	free(text);

	static const char *const bad[] = { "a\x7f", "\xc2\x9b", "\xff", "\xc0\xaf" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object *p = drf_json_object(), *x = drf_json_set_object(p, "x");

		assert_int_equal(drf_json_set_str(x, bad[i], "v"), -EINVAL);
		assert_int_equal(drf_json_set_u64(p, "after", 1), 0);
		text = print_doc(p, &r);
		assert_int_equal(r, -EINVAL);
		assert_string_equal(text, "");
		free(text);
		json_object_put(p);
	}
	json_object_put(o);
}

/*
 * Numbers: the shortest text that reads back as the same double, integers
 * without a point, null when not finite; fixed decimals where asked; 64-bit
 * integers exact.
 */
static void test_json_numbers(void **state)
{
	static const struct {
		double v;
		const char *text;
	} nums[] = {
		{ 0, "0" }, { 5, "5" }, { -3, "-3" }, { 0.1, "0.1" },
		{ 1.0 / 3, "0.3333333333333333" },
		{ 2.5e-7, "2.5e-07" }, { 1e21, "1e+21" }, { 19327352832.0, "19327352832" },
		{ 0.6666666666666666, "0.6666666666666666" }, { -0.0, "-0" },
		{ 1.7976931348623157e308, "1.7976931348623157e+308" }, { 5e-324, "5e-324" },
		{ NAN, "null" }, { INFINITY, "null" }, { -INFINITY, "null" },
	};
	json_object *o = drf_json_object(), *a = drf_json_set_array(o, "n"), *back, *v;
	char *text, want[1024] = "{\"n\":[", b[64];
	int r;

	(void)state;
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		json_object *x = drf_json_append_object(a);

		assert_int_equal(drf_json_set_num(x, "v", nums[i].v), 0);
		snprintf(b, sizeof(b), "%s{\"v\":%s}", i ? "," : "", nums[i].text);
		strcat(want, b);
	}
	strcat(want, "],\"ms\":1700000000.123,\"ms0\":12.000,\"nan\":null,"
		     "\"u\":18446744073709551615,\"i\":-9223372036854775808,\"t\":true,"
		     "\"f\":false,\"z\":null,\"h\":[0,42]}\n");
	assert_int_equal(drf_json_set_fixed(o, "ms", 1700000000.1234567, 3), 0);
	assert_int_equal(drf_json_set_fixed(o, "ms0", 12, 3), 0);
	assert_int_equal(drf_json_set_fixed(o, "nan", NAN, 3), 0);
	assert_int_equal(drf_json_set_u64(o, "u", UINT64_MAX), 0);
	assert_int_equal(drf_json_set_int(o, "i", INT64_MIN), 0);
	assert_int_equal(drf_json_set_bool(o, "t", true), 0);
	assert_int_equal(drf_json_set_bool(o, "f", false), 0);
	assert_int_equal(drf_json_set_null(o, "z"), 0);
	v = drf_json_set_array(o, "h");
	assert_int_equal(drf_json_append_u64(v, 0), 0);
	assert_int_equal(drf_json_append_u64(v, 42), 0);
	text = print_doc(o, &r);
	assert_int_equal(r, 0);
	assert_string_equal(text, want);
	/* Read back: the same doubles, bit for bit (-0 included), and the same integers. */
	back = parse_doc(text);
	a = member(back, "n");
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		double got;

		v = member(json_object_array_get_idx(a, i), "v");
		if (!isfinite(nums[i].v)) {
			assert_null(v);
			continue;
		}
		assert_true(json_object_is_type(v, json_type_double) ||
			    json_object_is_type(v, json_type_int));
		got = json_object_get_double(v);
		if (json_object_is_type(v, json_type_double))
			assert_memory_equal(&got, &nums[i].v, sizeof(got));
		else
			assert_true(got == nums[i].v);
	}
	assert_true(json_object_get_uint64(member(back, "u")) == UINT64_MAX);
	assert_true(json_object_get_int64(member(back, "i")) == INT64_MIN);
	json_object_put(back);
	json_object_put(o);
	free(text);
}

/*
 * Out of memory a document is not printed, rather than printed with parts
 * missing or as null: a container that could not be made takes nothing, a
 * part that could not be added marks its container, drf_json_print() then
 * returns -ENOMEM and writes nothing.
 */
static void test_json_whole_or_nothing(void **state)
{
	json_object *o = drf_json_object(), *x;
	char *text;
	int r;

	(void)state;
	/* A NULL container: the fill does nothing and says so. */
	assert_int_equal(drf_json_set_str(NULL, "k", "v"), -ENOMEM);
	assert_int_equal(drf_json_set_num(NULL, "k", 1), -ENOMEM);
	assert_int_equal(drf_json_append_u64(NULL, 1), -ENOMEM);
	assert_null(drf_json_set_object(NULL, "k"));
	assert_null(drf_json_append_object(NULL));
	text = print_doc(NULL, &r);
	assert_int_equal(r, -ENOMEM);
	assert_string_equal(text, "");
	free(text);
	/* Only objects and arrays are documents. */
	x = drf_json_set_array(o, "a");
	assert_int_equal(drf_json_append_u64(x, 1), 0);
	text = print_doc(x, &r);
	assert_int_equal(r, 0);
	assert_string_equal(text, "[1]\n");
	free(text);
	json_object_put(o);
}

#ifndef UNDER_ASAN
/* Fills arr with 64 KiB strings until an append fails: the return of that append. */
static int fill_until_full(json_object *arr, const char *word)
{
	for (int i = 0; i < 1 << 20; i++) {
		int r = drf_json_append_str(arr, word);

		if (r < 0)
			return r;
	}
	return 0;
}

#define KEY_LEN (20 << 20)

/* The child: what it found, as an exit code (0: as it should be). */
static int oom_child(int fd)
{
	static char word[64 * 1024];
	struct rlimit rl;
	unsigned long vm_kib = 0;
	json_object *o = drf_json_object(), *a = drf_json_set_array(o, "words"), *big;
	char line[256], *long_key;
	FILE *st = fopen("/proc/self/status", "r"), *out = fdopen(fd, "w");
	int r;

	if (!st || !out || !o)
		return 10;
	memset(word, 'w', sizeof(word) - 1);
	/*
	 * A document built whole before the limit: one member whose key is 20
	 * MiB. json-c writes keys itself without checking that each append
	 * found room: if its buffer could not grow for the key, the "\":1}" after
	 * it would still fit, and {"":1} would be printed.
	 */
	big = drf_json_object();
	long_key = malloc(KEY_LEN + 1);
	if (!big || !long_key)
		return 11;
	memset(long_key, 'k', KEY_LEN);
	long_key[KEY_LEN] = '\0';
	if (drf_json_set_u64(big, long_key, 1) < 0)
		return 11;
	free(long_key);
	while (fgets(line, sizeof(line), st))
		sscanf(line, "VmSize: %lu kB", &vm_kib);
	fclose(st);
	/* Then 16 MiB of room: short of what its text takes. */
	rl.rlim_cur = rl.rlim_max = (vm_kib + 16 * 1024) * 1024;
	if (vm_kib == 0 || setrlimit(RLIMIT_AS, &rl) < 0)
		return 12;
	r = drf_json_print(out, big);
	if (r != -ENOMEM)
		return r == 0 ? 13 : 17;
	/* A document that runs out while it is built. */
	if (fill_until_full(a, word) != -ENOMEM)
		return 14;
	/* The setters go on without crashing; with room again, it is still refused whole. */
	drf_json_set_str(o, "after", "x");
	json_object_put(big);
	r = drf_json_print(out, o);
	if (r != -ENOMEM)
		return r == 0 ? 15 : 18;
	if (fflush(out) != 0 || ftell(out) != 0)
		return 16;
	return 0;
}
#endif

/* The same with memory really running out (RLIMIT_AS, in a child; not under ASan). */
static void test_json_out_of_memory(void **state)
{
#ifdef UNDER_ASAN
	(void)state;
	skip();
#else
	char path[128];
	int fd, status;
	pid_t pid;

	(void)state;
	snprintf(path, sizeof(path), "%s/oom.json", fx.dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(oom_child(fd));
	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the child: %s %d (see oom_child)", WIFEXITED(status) ? "exit" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	assert_string_equal(slurp(path), "");
#endif
}

/* The status shows each group's allocation, in JSON and in text. */
static void test_status_groups(void **state)
{
	json_object *doc, *g;
	char *js = NULL, *text;

	(void)state;
	assert_int_equal(fakedrfd_setup(&fx, NULL, HDRF_CAP HDRF_N1 "[group n2]\nweight = 2\n"
				      "[tenant n21]\ngroup = n2\ntask-cpu = 1\n"),
			 0);
	assert_int_equal(fakedrfd_start(&fx), 0);
	status_json(&js);
	doc = parse_doc(js);
	free(js);
	g = json_object_array_get_idx(member(doc, "groups"), 0);
	assert_non_null(g);
	assert_string_equal(json_object_get_string(member(g, "name")), "n2");
	assert_string_equal(json_object_get_string(member(g, "cgroup")), "n2");
	assert_true(json_object_is_type(member(g, "group"), json_type_null));
	assert_true(json_object_get_double(member(g, "weight")) == 2);
	assert_true(fabs(json_object_get_double(member(member(g, "alloc"), "cpu")) - 10) < 1e-9);
	assert_true(fabs(json_object_get_double(member(g, "dominant_share")) - 1) < 1e-9);
	assert_string_equal(json_object_get_string(member(g, "limited_by")), "cpu");
	json_object_put(doc);
	text = status_text();
	assert_non_null(strstr(text, "\ngroup n2 (cgroup "));
	assert_non_null(strstr(text, "/n2, weight 2, in the root)\n  allocation: cpu 10 memory 0; "
				     "dominant cpu 1.000, limited by cpu\n"));
	free(text);
}

/* The root's parent protects nothing (memory.low and memory.min 0); above it, the root cgroup. */
static int parent_unprotected(void *ctx, const char *path, unsigned long long *low,
			      unsigned long long *min)
{
	const char *root = ctx;
	size_t n = strrchr(root, '/') ? (size_t)(strrchr(root, '/') - root) : 0;

	if (strlen(path) != n || strncmp(path, root, n) != 0)
		return -ENOENT;
	*low = *min = 0;
	return 0;
}

/* The root's parent cannot be read. */
static int parent_unreadable(void *ctx, const char *path, unsigned long long *low,
			     unsigned long long *min)
{
	(void)ctx;
	(void)path;
	(void)low;
	(void)min;
	return -EACCES;
}

/*
 * An ancestor of the root, not drfd's, that protects less than the root:
 * status says per tenant with memory.low that its protection does not hold,
 * naming it, and counts a problem; a tenant without protection is not named.
 */
static void test_status_protection_capped(void **state)
{
	struct drf_host_ops h;
	json_object *doc, *pr, *ts;
	char *js = NULL, *text;

	(void)state;
	assert_int_equal(fakedrfd_setup(&fx, NULL, HDRF_CAP HDRF_N1 "[tenant cpu-only]\ntask-cpu = 1\n"),
			 0);
	assert_int_equal(fakedrfd_start(&fx), 0);
	assert_int_equal(status_json(&js), 0);
	free(js);
	h = *fx.env.host;
	h.cgroup_protection = parent_unprotected;
	h.ctx = d.root;
	fx.env.host = &h;
	assert_true(status_json(&js) > 0);
	doc = parse_doc(js);
	free(js);
	ts = member(doc, "tenants");
	pr = member(json_object_array_get_idx(ts, 0), "memory_protection");
	assert_false(json_object_get_boolean(member(pr, "holds")));
	assert_int_equal(strncmp(json_object_get_string(member(pr, "capped_by")), d.root,
				 strlen(json_object_get_string(member(pr, "capped_by")))), 0);
	assert_true(json_object_get_double(member(pr, "ancestor_low")) == 0);
	assert_false(json_object_object_get_ex(json_object_array_get_idx(ts, 1), "memory_protection",
						NULL));
	json_object_put(doc);
	text = status_text();
	assert_non_null(strstr(text, "memory protection DOES NOT HOLD: ancestor "));
	free(text);
	/* An ancestor that cannot be read: the root's entry says which, and why. */
	h.cgroup_protection = parent_unreadable;
	assert_int_equal(status_json(&js), 0);
	doc = parse_doc(js);
	free(js);
	pr = NULL;
	ts = member(doc, "inner");
	for (size_t i = 0; i < json_object_array_length(ts); i++)
		if (json_object_get_boolean(member(json_object_array_get_idx(ts, i), "root")))
			pr = member(json_object_array_get_idx(ts, i), "protection_check_error");
	assert_non_null(pr);
	assert_string_equal(json_object_get_string(member(pr, "error")), strerror(EACCES));
	assert_int_equal(strncmp(json_object_get_string(member(pr, "path")), d.root,
				 strlen(json_object_get_string(member(pr, "path")))), 0);
	json_object_put(doc);
	fx.env.host = &drf_host_real;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_state_save_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_protection_capped, NULL, teardown),
		cmocka_unit_test_setup_teardown(test_reload_replans_observed, setup_observed,
						teardown),
		cmocka_unit_test_setup_teardown(test_reload_hands_plan_to_network, NULL, teardown),
		cmocka_unit_test_setup_teardown(test_fleet_assignment, NULL, teardown),
		cmocka_unit_test_setup_teardown(test_fleet_tasks, NULL, teardown),
		cmocka_unit_test_setup_teardown(test_fleet_burst, NULL, teardown),
		cmocka_unit_test_setup_teardown(test_fleet_restart_preloaded, NULL, teardown),
		cmocka_unit_test_setup_teardown(test_reload_groups, NULL, teardown),
		cmocka_unit_test_setup_teardown(test_status_groups, NULL, teardown),
		cmocka_unit_test_setup_teardown(test_status_cpu_usage, setup_observed, teardown),
		cmocka_unit_test_setup_teardown(test_reload_switches_policy, setup_observed, teardown),
		cmocka_unit_test_setup_teardown(test_reload_refused_changes_nothing, setup_observed,
						teardown),
		cmocka_unit_test_setup_teardown(test_tick_unchanged_writes_nothing, setup_observed,
						teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_writes_no_metrics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pressure_read_when_asked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_metrics_detail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_escapes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_errors_logged_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_verdict_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_start_only_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_over_socket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unchanged_ticks_quiet, setup, teardown),
		cmocka_unit_test(test_json_str),
		cmocka_unit_test(test_json_keys),
		cmocka_unit_test(test_json_numbers),
		cmocka_unit_test(test_json_whole_or_nothing),
		cmocka_unit_test_setup_teardown(test_json_out_of_memory, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
