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
 * And the log escapes control characters, and JSON strings hold none.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "fakedrfd.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "statedir.h"
#include "statefile.h"
#include "testlib.h"

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

/* The status (JSON) and its problem count. */
static int status_json(char **ret)
{
	size_t len = 0;
	FILE *f = open_memstream(ret, &len);
	int problems;

	assert_non_null(f);
	problems = drfd_status_render(&d, true, f);
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
	assert_int_equal(drf_metrics_render(&v, f), 0);
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
	assert_non_null(strstr(js, "\"state_file\": {\"path\": "));
	assert_non_null(strstr(js, "\"saved\": false, \"error\": \""));
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
	assert_non_null(strstr(js, "\"saved\": true, \"error\": null"));
	free(js);
	assert_true(metrics_have("\ndrfd_state_saved 1\n"));

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
	/* The ticks counted are drfd_tick()s: the one at start, the reload's and these 5. */
	assert_int_equal(d.ticks, 7);
	status_json(&js);
	assert_non_null(strstr(js, "\"ticks\": 7,"));
	free(js);
	assert_true(metrics_have("\ndrfd_ticks_total 7\n"));
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

/* JSON strings: valid, and safe on a terminal whatever bytes a task's words hold. */
static void test_json_str(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	drf_json_str(f, "q\"b\\ caf\xc3\xa9 \xe2\x82\xac");
	fputc(' ', f);
	drf_json_str(f, "\x1b]0;x\x07 \x7f \xc2\x9b" "2J \x9b \xff\xc0\xaf");
	assert_int_equal(fclose(f), 0);
	assert_string_equal(buf, "\"q\\\"b\\\\ caf\xc3\xa9 \xe2\x82\xac\" "
				 "\"\\u001b]0;x\\u0007 \\u007f \\u009b2J \\ufffd \\ufffd\\ufffd\\ufffd\"");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_state_save_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_replans_observed, setup_observed,
						teardown),
		cmocka_unit_test_setup_teardown(test_reload_hands_plan_to_network, NULL, teardown),
		cmocka_unit_test_setup_teardown(test_reload_refused_changes_nothing, setup_observed,
						teardown),
		cmocka_unit_test_setup_teardown(test_tick_unchanged_writes_nothing, setup_observed,
						teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_writes_no_metrics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_escapes, setup, teardown),
		cmocka_unit_test(test_json_str),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
