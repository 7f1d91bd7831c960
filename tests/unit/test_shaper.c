// SPDX-License-Identifier: MIT
/*
 * The network shaper (agent/net/shaper.c) and its HTB mapping (htb.c) against
 * a fake kernel: tests/lib/faketc.c behind the recording tc ops, whose lines
 * are the dry run's output and are asserted exactly; the recording BPF ops,
 * which keep the tenant map in memory; and a fake cgroup tree
 * (tests/lib/fakecg.c) that gives the tenants' cgroup ids. Failures are
 * injected with the recorders, on every tc and BPF operation the shaper uses.
 *
 * Each test below that once failed against shaper.c says which defect it
 * guards: a leaf written again with its class, remembered minors taken by
 * newcomers, a failed map read not counted, a leaf's new CoDel settings not
 * retried, drfd's own changes reported as someone else's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#include "cgroupfs.h"
#include "fakedrfd.h"
#include "fakecg.h"
#include "faketc.h"
#include "netbpf.h"
#include "shaper.h"
#include "testlib.h"

#define PIN "/sys/fs/bpf/drfd/test"
#define GBIT 1000000000ull
#define CL(minor) DRF_TC_HANDLE(0xd7f, (minor))
/* Verify every tenant's map entry: the cursor plus this never wraps. */
#define ALL 1000

/*
 * The tenants' class minors: FNV-1a of the name (offset basis 2166136261,
 * prime 16777619, 32 bits), 0x10 + h % 65519, computed apart from htb.c
 * (python3). ang and bxa have the same hint, 0xb1ed; bwkx has 0xb1ee.
 */
#define M_A 0x4f07
#define M_B 0x86c0
#define M_C 0x742d
#define M_D 0x174e
#define M_Z 0x44aa
#define M_ANG 0xb1ed

struct fx {
	char dir[64], root[128];
	struct faketc kt;
	struct drf_tc_recorder rec;
	struct drf_netbpf_recorder *bpf;
	FILE *out; /* both recorders' lines, in order */
	char *buf;
	size_t len, mark;
	struct cgfs fs;
	struct drf_shaper s;
	struct drf_shaper_stats st;
	uint64_t now;
	unsigned warnings, errors_said;
	char kept[8192]; /* lines kept by keep() */
};

static void disarm(struct fx *f);

static void log_fn(void *ctx, int prio, const char *msg)
{
	struct fx *f = ctx;

	(void)msg;
	if (prio == LOG_WARNING)
		f->warnings++;
	else if (prio <= LOG_ERR)
		f->errors_said++;
}

static const char *const cgroups[] = { "a", "b", "team/c", "d", "z", "ang", "bxa", "bwkx" };

static void shaper_open(struct fx *f)
{
	struct drf_logger log = { .fn = log_fn, .ctx = f };

	assert_int_equal(drf_shaper_init(&f->s, FAKETC_IFNAME, &drf_tc_recording_ops, &f->rec,
					 &drf_netbpf_recording_ops, f->bpf, &f->fs, PIN, 1, &log), 0);
}

static struct fx *fx_open(void)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(fakecg_setup(f->dir, sizeof(f->dir), f->root, sizeof(f->root)), 0);
	faketc_init(&f->kt, GBIT);
	f->out = open_memstream(&f->buf, &f->len);
	assert_non_null(f->out);
	fflush(f->out);
	f->rec = (struct drf_tc_recorder){ .inner = &faketc_ops, .inner_ctx = &f->kt,
					   .pass_changes = true, .ifname = FAKETC_IFNAME,
					   .out = f->out };
	f->bpf = calloc(1, sizeof(*f->bpf));
	assert_non_null(f->bpf);
	f->bpf->out = f->out;
	assert_int_equal(cgfs_open(&f->fs, f->root, false, &fakecg_ops, NULL), 0);
	for (size_t i = 0; i < sizeof(cgroups) / sizeof(cgroups[0]); i++)
		assert_int_equal(cgfs_mkdir_p(&f->fs, cgroups[i]), 0);
	shaper_open(f);
	return f;
}

static void fx_close(struct fx *f)
{
	drf_shaper_free(&f->s);
	cgfs_close(&f->fs);
	fclose(f->out);
	free(f->buf);
	free(f->bpf);
	fakecg_teardown(f->dir);
	free(f);
}

static int setup(void **state)
{
	*state = fx_open();
	return 0;
}

static int teardown(void **state)
{
	fx_close(*state);
	return 0;
}

/* Capacities and tenants; see the tests for their allocations. */
#define CAP "net-rate = 100mbit\nnet-ingress-rate = 50mbit\n"
#define FOUR                                                                               \
	"[tenant a]\nnet-rate = 20mbit\nnet-ingress-rate = 10mbit\n"                        \
	"[tenant b]\nweight = 2\n"                                                          \
	"[tenant c]\ncgroup = team/c\nnet-rate = 60mbit\n"                                  \
	"[tenant z]\nnet-rate = 0\nnet-ingress-rate = 1mbit\n"
/* Tenants whose demands all fit: each gets its demand, whoever else is there. */
#define TA "[tenant a]\nnet-rate = 20mbit\nnet-ingress-rate = 10mbit\n"
#define TA30 "[tenant a]\nnet-rate = 30mbit\nnet-ingress-rate = 10mbit\n"
#define TB "[tenant b]\nnet-rate = 40mbit\nnet-ingress-rate = 10mbit\n"
#define TC "[tenant c]\ncgroup = team/c\nnet-rate = 10mbit\nnet-ingress-rate = 5mbit\n"
#define TD "[tenant d]\nnet-rate = 10000008\nnet-ingress-rate = 5mbit\n"

/* Writes the config, loads it and makes it the shaper's plan. */
static void plan(struct fx *f, const char *mode, bool replace, const char *cap, const char *tenants)
{
	char path[256], text[4096], err[1024];
	struct fakeplan e = { 0 };

	snprintf(path, sizeof(path), "%s/drfd.conf", f->dir);
	snprintf(text, sizeof(text), "[agent]\ncgroup-root = %s\nmode = %s\n%s[capacity]\n"
		 "net-device = " FAKETC_IFNAME "\n%s%s", f->root, mode,
		 replace ? "net-replace-qdisc = yes\n" : "", cap, tenants);
	assert_int_equal(t_write_file(path, text), 0);
	if (fakeplan_load(&e, path, NULL, err, sizeof(err)) < 0) {
		print_error("%s\n", err);
		fail();
	}
	assert_int_equal(drf_shaper_set(&f->s, &e.plan), 0);
	fakeplan_free(&e);
}

static void tick(struct fx *f, size_t verify)
{
	f->now += 1000000ull; /* a second, in usec */
	assert_int_equal(drf_shaper_tick(&f->s, f->now, verify, &f->st), 0);
}

/* The lines recorded since mark(). */
static const char *since(struct fx *f)
{
	fflush(f->out);
	return f->buf + f->mark;
}

static void mark(struct fx *f)
{
	fflush(f->out);
	f->mark = f->len;
}

/* A copy of the lines since mark(), which stays as it is while more are recorded. */
static const char *keep(struct fx *f)
{
	snprintf(f->kept, sizeof(f->kept), "%s", since(f));
	return f->kept;
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The cgroup id of cg: the inode of its directory. */
static uint64_t cg(const struct fx *f, const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", f->root, name);
	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_ino;
}

static char want[16384];

static void wantf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void wantf(const char *fmt, ...)
{
	size_t n = strlen(want);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want + n, sizeof(want) - n, fmt, ap);
	va_end(ap);
	n = strlen(want);
	snprintf(want + n, sizeof(want) - n, "\n");
}

static struct drf_shaper_tenant *tenant(struct fx *f, const char *name)
{
	for (size_t i = 0; i < f->s.n; i++)
		if (strcmp(f->s.t[i].name, name) == 0)
			return &f->s.t[i];
	fail_msg("no tenant %s", name);
	return NULL;
}

/* The recorder's map entry of a cgroup id, or NULL. */
static struct drf_net_tenant *map_entry(struct fx *f, uint64_t id)
{
	for (size_t i = 0; i < f->bpf->n; i++)
		if (f->bpf->key[i] == id)
			return &f->bpf->val[i];
	return NULL;
}

static void assert_class(struct fx *f, uint32_t id, uint32_t parent, uint64_t rate, uint64_t ceil,
			 uint32_t burst, uint32_t cburst, uint32_t quantum)
{
	const struct drf_tc_class *c = faketc_class(&f->kt, id);

	if (!c)
		fail_msg("class %x:%x missing", DRF_TC_MAJ(id), DRF_TC_MIN(id));
	assert_int_equal(c->parent, parent);
	assert_int_equal(c->rate, rate);
	assert_int_equal(c->ceil, ceil);
	assert_int_equal(c->burst, burst);
	assert_int_equal(c->cburst, cburst);
	assert_int_equal(c->quantum, quantum);
}

static void assert_leaf(struct fx *f, uint32_t classid)
{
	const struct drf_tc_qdisc *q = faketc_leaf(&f->kt, classid);

	if (!q || strcmp(q->kind, "fq_codel") != 0)
		fail_msg("class %x:%x has no fq_codel", DRF_TC_MAJ(classid), DRF_TC_MIN(classid));
}

/* The leaf's CoDel times as the kernel reads them back (1024 ns units, rounded down). */
static void assert_codel(struct fx *f, uint32_t classid, uint32_t target_us, uint32_t interval_us)
{
	uint32_t t = 0, i = 0;

	assert_int_equal(faketc_codel(&f->kt, classid, &t, &i), 0);
	assert_int_equal(t, target_us);
	assert_int_equal(i, interval_us);
}

static void assert_map(struct fx *f, const char *cgroup, uint32_t classid, uint64_t rate,
		       uint64_t burst)
{
	const struct drf_net_tenant *v = map_entry(f, cg(f, cgroup));

	if (!v)
		fail_msg("no map entry for %s", cgroup);
	assert_int_equal(v->classid, classid);
	assert_int_equal(v->in_rate, rate);
	assert_int_equal(v->in_burst, burst);
}

/* drfd's root qdisc, the three base classes and n tenant classes with their leaves. */
static void assert_tree(struct fx *f, size_t n)
{
	const struct drf_tc_qdisc *root = faketc_root(&f->kt);

	assert_int_equal(root->handle, CL(0));
	assert_string_equal(root->kind, "htb");
	assert_int_equal(f->kt.htb_defcls, 0xffff);
	assert_int_equal(faketc_nclasses(&f->kt), 3 + n);
	assert_int_equal(faketc_nqdiscs(&f->kt), 1 + n);
}

/*
 * The link, from htb.h's rules, with the link at 1 gbit = 125000000 bytes/s,
 * net-rate 100mbit = 12500000 bytes/s, MTU 1500 (least burst 4 * 1514 = 6056,
 * least quantum 1514), bursts 0.01 s (DRF_HTB_TIMER_S) of the rate and of the
 * ceil, quanta rate / link * 200000:
 *   d7f:1    rate = ceil = 125000000, bursts 1250000, quantum 200000
 *   d7f:2    rate 12500000, ceil 125000000, bursts 125000 / 1250000, quantum 20000
 *   d7f:ffff rate 125000000 - 12500000 = 112500000, ceil 125000000,
 *            bursts 1125000 / 1250000, quantum 180000
 */
static void want_base(void)
{
	wantf("tc class set dev veth0 classid d7f:1 parent d7f: rate 125000000 ceil 125000000 "
	      "burst 1250000 cburst 1250000 quantum 200000");
	wantf("tc class set dev veth0 classid d7f:2 parent d7f:1 rate 12500000 ceil 125000000 "
	      "burst 125000 cburst 1250000 quantum 20000");
	wantf("tc class set dev veth0 classid d7f:ffff parent d7f:1 rate 112500000 ceil 125000000 "
	      "burst 1125000 cburst 1250000 quantum 180000");
}

static void assert_base(struct fx *f)
{
	assert_class(f, CL(1), DRF_TC_ROOT, 125000000, 125000000, 1250000, 1250000, 200000);
	assert_class(f, CL(2), CL(1), 12500000, 125000000, 125000, 1250000, 20000);
	assert_class(f, CL(0xffff), CL(1), 112500000, 125000000, 1125000, 1250000, 180000);
}

/*
 * FOUR, from `drfctl plan -c FILE --json` (the same in both modes), bits/s:
 *   a  net-rate 20e6    net-ingress-rate 10e6   (declared 20mbit, 10mbit)
 *   b  net-rate 52e6    net-ingress-rate 26e6   (weight 2, declares nothing)
 *   c  net-rate 15.6e6  net-ingress-rate 13e6   (declared net-rate 60mbit only)
 *   z  net-rate 0       net-ingress-rate 1e6    (declared 0 and 1mbit)
 * In bytes/s: a 2500000 / 1250000, b 6500000 / 3250000, c 1950000 / 1625000,
 * z 0 / 125000. The largest egress allocation is b's, 6500000: quanta are
 * rate / 6500000 * 200000 (a 76923.08 -> 76923, b 200000, c 60000, z 30.8 ->
 * the least, 1514). z's rate is the least, 1000, and as it needs no egress
 * its ceil is the link in both modes (cburst 1250000); its burst, 10, is
 * the least, 6056.
 *
 * limit: ceil = rate for a, b, c; bursts 0.01 s: a 25000, b 65000, c 19500.
 * fq_codel (the same in both modes, from the rate): target 1.5 * 65536 /
 * rate s, within [5 ms, 1 s], interval 4 x target, at least 100 ms:
 * a 39321.6 -> 39322 / 157286 us, b 15123.7 -> 15124 / 100000, c 50412.3 ->
 * 50412 / 201649, z 98 s -> 1000000 / 4000000.
 * Policers at the allocation, bursts 0.25 s of it, at least 4 * 65536 =
 * 262144: a 1250000 / 312500, b 3250000 / 812500, c 1625000 / 406250,
 * z 125000 / 31250 -> 262144.
 */
static void test_limit_exact_classes(void **state)
{
	struct fx *f = *state;

	plan(f, "limit", false, CAP, FOUR);
	tick(f, ALL);
	want[0] = '\0';
	wantf("tc qdisc replace dev veth0 root handle d7f: htb default ffff");
	want_base();
	wantf("tc class set dev veth0 classid d7f:4f07 parent d7f:2 rate 2500000 ceil 2500000 "
	      "burst 25000 cburst 25000 quantum 76923");
	wantf("tc qdisc add dev veth0 parent d7f:4f07 fq_codel target 39322us interval 157286us");
	wantf("tc class set dev veth0 classid d7f:86c0 parent d7f:2 rate 6500000 ceil 6500000 "
	      "burst 65000 cburst 65000 quantum 200000");
	wantf("tc qdisc add dev veth0 parent d7f:86c0 fq_codel target 15124us interval 100000us");
	wantf("tc class set dev veth0 classid d7f:742d parent d7f:2 rate 1950000 ceil 1950000 "
	      "burst 19500 cburst 19500 quantum 60000");
	wantf("tc qdisc add dev veth0 parent d7f:742d fq_codel target 50412us interval 201649us");
	wantf("tc class set dev veth0 classid d7f:44aa parent d7f:2 rate 1000 ceil 125000000 "
	      "burst 6056 cburst 1250000 quantum 1514");
	wantf("tc qdisc add dev veth0 parent d7f:44aa fq_codel target 1000000us interval 4000000us");
	wantf("bpf attach " PIN " level 1");
	wantf("bpf map set %" PRIu64 " class d7f:4f07 in-rate 1250000 in-burst 312500", cg(f, "a"));
	wantf("bpf map set %" PRIu64 " class d7f:86c0 in-rate 3250000 in-burst 812500", cg(f, "b"));
	wantf("bpf map set %" PRIu64 " class d7f:742d in-rate 1625000 in-burst 406250",
	      cg(f, "team/c"));
	wantf("bpf map set %" PRIu64 " class d7f:44aa in-rate 125000 in-burst 262144", cg(f, "z"));
	assert_string_equal(since(f), want);
	assert_int_equal(f->st.errors, 0);
	assert_int_equal(f->st.retrying, 0);
	assert_int_equal(f->st.writes, 1 + 3 + 4 * 2 + 4);
	assert_false(f->s.foreign);

	/* The fake kernel holds it. */
	assert_tree(f, 4);
	assert_base(f);
	assert_class(f, CL(M_A), CL(2), 2500000, 2500000, 25000, 25000, 76923);
	assert_class(f, CL(M_B), CL(2), 6500000, 6500000, 65000, 65000, 200000);
	assert_class(f, CL(M_C), CL(2), 1950000, 1950000, 19500, 19500, 60000);
	assert_class(f, CL(M_Z), CL(2), 1000, 125000000, 6056, 1250000, 1514);
	assert_codel(f, CL(M_A), 39321, 157285);
	assert_codel(f, CL(M_B), 15123, 99999);
	assert_codel(f, CL(M_C), 50411, 201648);
	assert_codel(f, CL(M_Z), 999999, 4000000);
	assert_true(f->bpf->attached);
	assert_int_equal(f->bpf->n, 4);
	assert_map(f, "a", CL(M_A), 1250000, 312500);
	assert_map(f, "b", CL(M_B), 3250000, 812500);
	assert_map(f, "team/c", CL(M_C), 1625000, 406250);
	assert_map(f, "z", CL(M_Z), 125000, 262144);

	/* The second tick: read back, all in place, nothing written. */
	mark(f);
	tick(f, ALL);
	assert_string_equal(since(f), "");
	assert_int_equal(f->st.writes + f->st.errors + f->st.retrying, 0);
}

/*
 * FOUR in share mode: the same allocation, rates, bursts and quanta; ceils
 * at the declared demand, else the link: a 20mbit = 2500000 (cburst 25000),
 * b the link 125000000 (1250000), c 60mbit = 7500000 (75000), z the link.
 * Policers only at a declared ingress demand: a 10mbit = 1250000 / 312500,
 * z 1mbit = 125000 / 262144; b and c declare none: 0 / 0.
 */
static void test_share_exact_classes(void **state)
{
	struct fx *f = *state;

	plan(f, "share", false, CAP, FOUR);
	tick(f, ALL);
	want[0] = '\0';
	wantf("tc qdisc replace dev veth0 root handle d7f: htb default ffff");
	want_base();
	wantf("tc class set dev veth0 classid d7f:4f07 parent d7f:2 rate 2500000 ceil 2500000 "
	      "burst 25000 cburst 25000 quantum 76923");
	wantf("tc qdisc add dev veth0 parent d7f:4f07 fq_codel target 39322us interval 157286us");
	wantf("tc class set dev veth0 classid d7f:86c0 parent d7f:2 rate 6500000 ceil 125000000 "
	      "burst 65000 cburst 1250000 quantum 200000");
	wantf("tc qdisc add dev veth0 parent d7f:86c0 fq_codel target 15124us interval 100000us");
	wantf("tc class set dev veth0 classid d7f:742d parent d7f:2 rate 1950000 ceil 7500000 "
	      "burst 19500 cburst 75000 quantum 60000");
	wantf("tc qdisc add dev veth0 parent d7f:742d fq_codel target 50412us interval 201649us");
	wantf("tc class set dev veth0 classid d7f:44aa parent d7f:2 rate 1000 ceil 125000000 "
	      "burst 6056 cburst 1250000 quantum 1514");
	wantf("tc qdisc add dev veth0 parent d7f:44aa fq_codel target 1000000us interval 4000000us");
	wantf("bpf attach " PIN " level 1");
	wantf("bpf map set %" PRIu64 " class d7f:4f07 in-rate 1250000 in-burst 312500", cg(f, "a"));
	wantf("bpf map set %" PRIu64 " class d7f:86c0 in-rate 0 in-burst 0", cg(f, "b"));
	wantf("bpf map set %" PRIu64 " class d7f:742d in-rate 0 in-burst 0", cg(f, "team/c"));
	wantf("bpf map set %" PRIu64 " class d7f:44aa in-rate 125000 in-burst 262144", cg(f, "z"));
	assert_string_equal(since(f), want);
	assert_int_equal(f->st.errors, 0);
	assert_int_equal(f->st.retrying, 0);

	assert_tree(f, 4);
	assert_base(f);
	assert_class(f, CL(M_A), CL(2), 2500000, 2500000, 25000, 25000, 76923);
	assert_class(f, CL(M_B), CL(2), 6500000, 125000000, 65000, 1250000, 200000);
	assert_class(f, CL(M_C), CL(2), 1950000, 7500000, 19500, 75000, 60000);
	assert_class(f, CL(M_Z), CL(2), 1000, 125000000, 6056, 1250000, 1514);
	assert_map(f, "b", CL(M_B), 0, 0);
	assert_map(f, "team/c", CL(M_C), 0, 0);

	mark(f);
	tick(f, ALL);
	assert_string_equal(since(f), "");
	assert_int_equal(f->st.writes + f->st.errors + f->st.retrying, 0);
}

/* Steady state, as the daemon ticks: one dump of each kind per tick, nothing written. */
static void test_steady_state(void **state)
{
	struct fx *f = *state;

	plan(f, "share", false, CAP, FOUR);
	tick(f, ALL);
	mark(f);
	for (int k = 0; k < 8; k++) {
		unsigned q = f->kt.calls.qdiscs, c = f->kt.calls.classes;

		tick(f, 1);
		assert_int_equal(f->st.writes + f->st.errors + f->st.retrying, 0);
		assert_int_equal(f->kt.calls.qdiscs, q + 1);
		assert_int_equal(f->kt.calls.classes, c + 1);
	}
	assert_string_equal(since(f), "");
	assert_int_equal(f->kt.calls.set_class, 7);
	assert_int_equal(f->kt.calls.add_leaf, 4);
	assert_int_equal(f->kt.calls.del_class, 0);
}

/*
 * Reloads: TA TB TC all get their demands (limit mode: ceil = rate):
 *   a 20mbit = 2500000 bytes/s, b 40mbit = 5000000, c 10mbit = 1250000;
 *   bursts 0.01 s: a 25000, b 50000, c 12500;
 *   quanta rate / 5000000 * 200000: a 100000, c 50000;
 *   ingress 10mbit = 1250000 (burst 0.25 s: 312500), 5mbit = 625000
 *   (156250 -> the least, 262144).
 * d, added: 10000008 bits/s = 1250001 bytes/s, burst 12500.01 -> 12500,
 * quantum 50000.04 -> 50000; ingress 5mbit as c's. Its burst reads back as
 * 12497 (9999 whole microseconds, 156234 ticks, 9998 microseconds), which
 * must still match.
 */
static void test_reload_add_remove(void **state)
{
	struct fx *f = *state;
	const char *kept[] = { "a", "b" };
	uint16_t minor[2];

	plan(f, "limit", false, CAP, TA TB TC);
	tick(f, ALL);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_tree(f, 3);
	assert_class(f, CL(M_A), CL(2), 2500000, 2500000, 25000, 25000, 100000);
	assert_class(f, CL(M_B), CL(2), 5000000, 5000000, 50000, 50000, 200000);
	assert_class(f, CL(M_C), CL(2), 1250000, 1250000, 12500, 12500, 50000);
	for (int k = 0; k < 2; k++)
		minor[k] = tenant(f, kept[k])->minor;

	/* Add d: its class, its leaf, its map entry, nothing else. */
	plan(f, "limit", false, CAP, TA TB TC TD);
	mark(f);
	tick(f, 0);
	want[0] = '\0';
	wantf("tc class set dev veth0 classid d7f:174e parent d7f:2 rate 1250001 ceil 1250001 "
	      "burst 12500 cburst 12500 quantum 50000");
	wantf("tc qdisc add dev veth0 parent d7f:174e fq_codel target 78643us interval 314573us");
	wantf("bpf map set %" PRIu64 " class d7f:174e in-rate 625000 in-burst 262144", cg(f, "d"));
	assert_string_equal(since(f), want);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_int_equal(f->st.writes, 3);
	assert_tree(f, 4);
	assert_leaf(f, CL(M_D));
	/* The rounding the tolerance is for is there, and tolerated. */
	assert_int_equal(faketc_burst_readback(12500, 1250001), 12497);
	mark(f);
	tick(f, ALL);
	assert_string_equal(since(f), "");

	/* Remove c: its class goes (its leaf with it), and its map entry. */
	plan(f, "limit", false, CAP, TA TB TD);
	mark(f);
	tick(f, 0);
	want[0] = '\0';
	wantf("tc class del dev veth0 classid d7f:742d");
	wantf("bpf map del %" PRIu64, cg(f, "team/c"));
	assert_string_equal(since(f), want);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_tree(f, 3);
	assert_null(faketc_class(&f->kt, CL(M_C)));
	assert_null(faketc_leaf(&f->kt, CL(M_C)));
	assert_null(map_entry(f, cg(f, "team/c")));
	assert_int_equal(f->bpf->n, 3);
	mark(f);
	tick(f, ALL);
	assert_string_equal(since(f), "");

	/* The kept tenants kept their classes throughout. */
	for (int k = 0; k < 2; k++)
		assert_int_equal(tenant(f, kept[k])->minor, minor[k]);
	assert_int_equal(minor[0], M_A);
	assert_int_equal(minor[1], M_B);
	assert_int_equal(tenant(f, "d")->minor, M_D);
}

/*
 * Changing a's demand to 30mbit = 3750000 bytes/s (b's 5000000 is still the
 * largest): burst 37500, quantum 3750000 / 5000000 * 200000 = 150000; its
 * fq_codel's target 1.5 * 65536 / 3750000 s = 26214.4 -> 26214 us, interval
 * 4 x 26214.4 = 104858 us (it was 39322 and 157286 at 2500000 bytes/s); its
 * ingress is the same, so its map entry is too.
 */
static void test_reload_change_demand(void **state)
{
	struct fx *f = *state;
	const struct drf_tc_qdisc *leaf;
	uint32_t leaf_handle;
	const char *out;

	plan(f, "limit", false, CAP, TA TB TC);
	tick(f, ALL);
	leaf = faketc_leaf(&f->kt, CL(M_A));
	assert_non_null(leaf);
	leaf_handle = leaf->handle;

	plan(f, "limit", false, CAP, TA30 TB TC);
	mark(f);
	tick(f, 0);
	out = keep(f);
	/* Its class and its leaf's parameters, nothing else. */
	assert_string_equal(out, "tc class set dev veth0 classid d7f:4f07 parent d7f:2 rate 3750000 "
			    "ceil 3750000 burst 37500 cburst 37500 quantum 150000\n"
			    "tc qdisc add dev veth0 parent d7f:4f07 fq_codel target 26214us "
			    "interval 104858us\n");
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_int_equal(f->st.writes, 2);
	assert_class(f, CL(M_A), CL(2), 3750000, 3750000, 37500, 37500, 150000);
	/* Its leaf stayed, the same qdisc, changed in place. */
	leaf = faketc_leaf(&f->kt, CL(M_A));
	assert_non_null(leaf);
	assert_int_equal(leaf->handle, leaf_handle);
	assert_codel(f, CL(M_A), 26213, 104857);
	assert_int_equal(tenant(f, "a")->minor, M_A);
	mark(f);
	tick(f, ALL);
	assert_string_equal(since(f), "");
}

/* Known bug 4: a leaf update that failed is retried. */
static void test_leaf_update_retried(void **state)
{
	struct fx *f = *state;
	uint32_t target = 0, interval = 0;

	plan(f, "limit", false, CAP, TA TB TC);
	tick(f, ALL);
	assert_codel(f, CL(M_A), 39321, 157285);
	/* a: 20mbit -> 30mbit (see test_reload_change_demand); its leaf's update fails. */
	plan(f, "limit", false, CAP, TA30 TB TC);
	f->rec.fault.ops = DRF_TC_OP_ADD_LEAF;
	f->rec.fault.id = CL(M_A);
	f->rec.fault.err = EBUSY;
	tick(f, 0);
	assert_int_equal(f->st.errors, 1);
	assert_int_equal(f->st.retrying, 1);
	assert_class(f, CL(M_A), CL(2), 3750000, 3750000, 37500, 37500, 150000);
	assert_codel(f, CL(M_A), 39321, 157285);
	disarm(f);
	tick(f, 0);
	tick(f, 0);
	assert_int_equal(f->st.errors, 0);
	assert_int_equal(faketc_codel(&f->kt, CL(M_A), &target, &interval), 0);

	assert_int_equal(target, 26213);
	assert_int_equal(interval, 104857);
}

/* Known bug 5: a reload's own change to a class is not someone else's (warnings counted). */
static void test_reload_is_not_drift(void **state)
{
	struct fx *f = *state;
	unsigned before;

	plan(f, "limit", false, CAP, TA TB TC);
	tick(f, ALL);
	assert_int_equal(f->warnings, 0);
	/* Someone else's change: one warning. */
	faketc_class(&f->kt, CL(M_B))->rate = 1;
	tick(f, 1);
	tick(f, 1);
	assert_int_equal(f->warnings, 1);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	/* drfd's own, from a reload. */
	before = f->warnings;
	plan(f, "limit", false, CAP, TA30 TB TC);
	tick(f, 0);
	assert_class(f, CL(M_A), CL(2), 3750000, 3750000, 37500, 37500, 150000);

	assert_int_equal(f->warnings, before);
}

/* Minors through a restart: the state file's minors, given to a new shaper, are kept. */
static void test_minors_survive_restart(void **state)
{
	struct fx *f = *state;
	const char *tenants = "[tenant ang]\nnet-rate = 10mbit\n[tenant bxa]\nnet-rate = 10mbit\n";
	const char *reversed = "[tenant bxa]\nnet-rate = 10mbit\n[tenant ang]\nnet-rate = 10mbit\n";
	uint16_t m_ang, m_bxa;

	plan(f, "share", false, CAP, tenants);
	tick(f, ALL);
	/* Same hint: the first takes it, the second the next one. */
	m_ang = tenant(f, "ang")->minor;
	m_bxa = tenant(f, "bxa")->minor;
	assert_int_equal(m_ang, M_ANG);
	assert_int_equal(m_bxa, M_ANG + 1);
	assert_non_null(faketc_class(&f->kt, CL(M_ANG + 1)));

	/* A reload in another order keeps them. */
	plan(f, "share", false, CAP, reversed);
	mark(f);
	tick(f, 0);
	assert_string_equal(since(f), "");
	assert_int_equal(tenant(f, "ang")->minor, m_ang);
	assert_int_equal(tenant(f, "bxa")->minor, m_bxa);

	/* A restart with the minors from the state file: nothing to do but attach. */
	drf_shaper_free(&f->s);
	shaper_open(f);
	assert_int_equal(drf_shaper_remember(&f->s, "ang", m_ang), 0);
	assert_int_equal(drf_shaper_remember(&f->s, "bxa", m_bxa), 0);
	assert_int_equal(drf_shaper_remember(&f->s, "gone", 0x20), 0);
	assert_int_equal(drf_shaper_remember(&f->s, "bad", 0x5), -EINVAL);
	plan(f, "share", false, CAP, reversed);
	mark(f);
	tick(f, ALL);
	assert_string_equal(since(f), "bpf attach " PIN " level 1\n");
	assert_int_equal(f->st.errors + f->st.retrying + f->st.writes, 0);
	assert_int_equal(tenant(f, "ang")->minor, m_ang);
	assert_int_equal(tenant(f, "bxa")->minor, m_bxa);

	/*
	 * A reload: ang leaves, bwkx comes, listed before bxa, and its hint is
	 * bxa's minor: bxa keeps it, bwkx takes the next free one, 0xb1ef.
	 * Both tenants declare net-rate 10mbit and no ingress demand, so each
	 * has half of net-ingress-rate and of its egress demand: 5mbit =
	 * 625000 bytes/s (burst 6250, quantum 200000), ceil 10mbit = 1250000
	 * (cburst 12500); share mode: no policer.
	 */
	plan(f, "share", false, CAP,
	     "[tenant bwkx]\nnet-rate = 10mbit\n[tenant bxa]\nnet-rate = 10mbit\n");
	mark(f);
	tick(f, 0);
	assert_int_equal(tenant(f, "bxa")->minor, M_ANG + 1);
	assert_int_equal(tenant(f, "bwkx")->minor, M_ANG + 2);
	want[0] = '\0';
	wantf("tc class set dev veth0 classid d7f:b1ef parent d7f:2 rate 625000 ceil 1250000 "
	      "burst 6250 cburst 12500 quantum 200000");
	wantf("tc qdisc add dev veth0 parent d7f:b1ef fq_codel target 157286us interval 629146us");
	wantf("tc class del dev veth0 classid d7f:b1ed");
	wantf("bpf map set %" PRIu64 " class d7f:b1ef in-rate 0 in-burst 0", cg(f, "bwkx"));
	wantf("bpf map del %" PRIu64, cg(f, "ang"));
	assert_string_equal(since(f), want);
	assert_int_equal(f->st.errors + f->st.retrying, 0);

	/* Without the state file's minors, the classes would move (what it is for). */
	drf_shaper_free(&f->s);
	shaper_open(f);
	plan(f, "share", false, CAP, reversed);
	tick(f, ALL);
	assert_int_equal(tenant(f, "bxa")->minor, M_ANG);
	assert_int_equal(tenant(f, "ang")->minor, M_ANG + 1);
}

/*
 * Known bug 2: at a restart a newcomer listed first, whose hint (bwkx: 0xb1ee)
 * is the minor bxa remembers, takes it.
 */
static void test_remembered_minor_not_taken(void **state)
{
	struct fx *f = *state;

	plan(f, "share", false, CAP, "[tenant ang]\nnet-rate = 10mbit\n[tenant bxa]\nnet-rate = 10mbit\n");
	tick(f, ALL);
	assert_int_equal(tenant(f, "bxa")->minor, M_ANG + 1);

	drf_shaper_free(&f->s);
	shaper_open(f);
	assert_int_equal(drf_shaper_remember(&f->s, "ang", M_ANG), 0);
	assert_int_equal(drf_shaper_remember(&f->s, "bxa", M_ANG + 1), 0);
	plan(f, "share", false, CAP,
	     "[tenant bwkx]\nnet-rate = 10mbit\n[tenant bxa]\nnet-rate = 10mbit\n"
	     "[tenant ang]\nnet-rate = 10mbit\n");
	tick(f, ALL);
	tick(f, ALL);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_int_equal(faketc_nclasses(&f->kt), 3 + 3);

	assert_int_equal(tenant(f, "ang")->minor, M_ANG);
	assert_int_equal(tenant(f, "bxa")->minor, M_ANG + 1);
	assert_int_not_equal(tenant(f, "bwkx")->minor, M_ANG + 1);
}

/* A root qdisc drfd did not install: left alone, reported every tick; replaced if allowed. */
static void test_foreign_root(void **state)
{
	struct fx *f = *state;

	faketc_set_root(&f->kt, DRF_TC_HANDLE(1, 0), "prio");
	plan(f, "limit", false, CAP, FOUR);
	for (int k = 0; k < 3; k++) {
		mark(f);
		tick(f, ALL);
		assert_true(f->st.errors > 0);
		assert_true(f->st.retrying > 0);
		assert_true(f->s.foreign);
		assert_int_equal(f->s.foreign_handle, DRF_TC_HANDLE(1, 0));
		assert_string_equal(f->s.foreign_kind, "prio");
		/* No tc change at all; the map entries go in regardless. */
		assert_null(strstr(since(f), "tc "));
		assert_int_equal(faketc_root(&f->kt)->handle, DRF_TC_HANDLE(1, 0));
		assert_string_equal(faketc_root(&f->kt)->kind, "prio");
		assert_int_equal(faketc_nclasses(&f->kt), 0);
		assert_int_equal(faketc_nqdiscs(&f->kt), 1);
	}
	assert_int_equal(f->bpf->n, 4);
	assert_int_equal(f->kt.calls.add_htb + f->kt.calls.set_class + f->kt.calls.add_leaf, 0);

	/* net-replace-qdisc = yes */
	plan(f, "limit", true, CAP, FOUR);
	mark(f);
	tick(f, 0);
	assert_true(starts_with(since(f), "tc qdisc replace dev veth0 root handle d7f: htb default "
				"ffff\n"));
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_false(f->s.foreign);
	assert_tree(f, 4);
	assert_base(f);
	mark(f);
	tick(f, ALL);
	assert_string_equal(since(f), "");

	/* Someone puts theirs back, allowed to be replaced: replaced again. */
	faketc_set_root(&f->kt, DRF_TC_HANDLE(1, 0), "prio");
	tick(f, ALL);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_tree(f, 4);

	/* Not allowed any more, and the foreign qdisc goes away by itself: installed then. */
	plan(f, "limit", false, CAP, FOUR);
	faketc_set_root(&f->kt, DRF_TC_HANDLE(0x20, 0), "htb");
	tick(f, ALL);
	assert_true(f->s.foreign);
	assert_int_equal(faketc_root(&f->kt)->handle, DRF_TC_HANDLE(0x20, 0));
	assert_int_equal(faketc_ops.del_qdisc(&f->kt, FAKETC_IFINDEX, DRF_TC_ROOT,
					      DRF_TC_HANDLE(0x20, 0)), 0);
	tick(f, ALL);
	assert_false(f->s.foreign);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_tree(f, 4);
}

/* What someone else changes in tc comes back the next tick, and only that. */
static void test_drift_tc(void **state)
{
	struct fx *f = *state;
	struct drf_tc_class stray = { .classid = CL(0x5), .parent = CL(2), .rate = 1000,
				      .ceil = 1000, .burst = 6056, .cburst = 6056, .quantum = 1514 };
	const char *out;

	plan(f, "limit", false, CAP, FOUR);
	tick(f, ALL);

	/* A tenant's leaf deleted. */
	assert_int_equal(faketc_ops.del_qdisc(&f->kt, FAKETC_IFINDEX, CL(M_B),
					      faketc_leaf(&f->kt, CL(M_B))->handle), 0);
	mark(f);
	tick(f, 1);
	assert_string_equal(since(f), "tc qdisc add dev veth0 parent d7f:86c0 fq_codel target 15124us "
			    "interval 100000us\n");
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_int_equal(f->st.writes, 1);
	assert_leaf(f, CL(M_B));

	/* A tenant's class deleted, its leaf with it. */
	assert_int_equal(faketc_ops.del_class(&f->kt, FAKETC_IFINDEX, CL(M_C)), 0);
	assert_null(faketc_leaf(&f->kt, CL(M_C)));
	mark(f);
	tick(f, 1);
	assert_string_equal(since(f), "tc class set dev veth0 classid d7f:742d parent d7f:2 rate 1950000 "
			    "ceil 1950000 burst 19500 cburst 19500 quantum 60000\n"
			    "tc qdisc add dev veth0 parent d7f:742d fq_codel target 50412us "
			    "interval 201649us\n");
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_tree(f, 4);

	/* A class no tenant has, made by someone under drfd's qdisc: deleted. */
	assert_int_equal(faketc_ops.set_class(&f->kt, FAKETC_IFINDEX, &stray), 0);
	mark(f);
	tick(f, 1);
	assert_string_equal(since(f), "tc class del dev veth0 classid d7f:5\n");
	assert_null(faketc_class(&f->kt, CL(5)));
	assert_tree(f, 4);

	/* The whole root qdisc deleted: everything back. */
	assert_int_equal(faketc_ops.del_qdisc(&f->kt, FAKETC_IFINDEX, DRF_TC_ROOT, CL(0)), 0);
	assert_int_equal(faketc_nclasses(&f->kt), 0);
	mark(f);
	tick(f, 1);
	assert_true(starts_with(since(f), "tc qdisc replace dev veth0 root handle d7f: htb default "
				"ffff\n"));
	assert_int_equal(f->st.writes, 1 + 3 + 4 * 2);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_tree(f, 4);
	assert_base(f);
	mark(f);
	tick(f, ALL);
	assert_string_equal(since(f), "");

	/* A tenant class's rate changed: restored. */
	faketc_class(&f->kt, CL(M_A))->rate = 1;
	mark(f);
	tick(f, 1);
	out = keep(f);
	assert_true(starts_with(out, "tc class set dev veth0 classid d7f:4f07 parent d7f:2 rate 2500000 "
				"ceil 2500000 burst 25000 cburst 25000 quantum 76923\n"));
	assert_class(f, CL(M_A), CL(2), 2500000, 2500000, 25000, 25000, 76923);
	/* A base class's: restored (no leaf there). */
	faketc_class(&f->kt, CL(2))->ceil = 12500000;
	mark(f);
	tick(f, 1);
	tick(f, 1);
	assert_true(starts_with(since(f), "tc class set dev veth0 classid d7f:2 parent d7f:1 rate "
				"12500000 ceil 125000000 burst 125000 cburst 1250000 quantum 20000\n"));
	assert_base(f);
	/* A burst 10% short, a quantum off: restored. */
	faketc_class(&f->kt, CL(M_B))->burst = 58500;
	faketc_class(&f->kt, CL(M_C))->quantum = 1514;
	tick(f, 1);
	tick(f, 1);
	assert_class(f, CL(M_B), CL(2), 6500000, 6500000, 65000, 65000, 200000);
	assert_class(f, CL(M_C), CL(2), 1950000, 1950000, 19500, 19500, 60000);
	assert_int_equal(f->st.errors + f->st.retrying, 0);


	assert_string_equal(out, "tc class set dev veth0 classid d7f:4f07 parent d7f:2 rate 2500000 "
			    "ceil 2500000 burst 25000 cburst 25000 quantum 76923\n");
	faketc_class(&f->kt, CL(M_A))->ceil = 1;
	tick(f, 1);
	assert_int_equal(f->st.writes, 1);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
}

/* A tenant's leaf replaced by someone with another kind: fq_codel again, the next tick. */
static void test_drift_leaf_kind(void **state)
{
	struct fx *f = *state;

	plan(f, "limit", false, CAP, FOUR);
	tick(f, ALL);
	assert_int_equal(faketc_set_leaf(&f->kt, CL(M_A), "pfifo"), 0);
	mark(f);
	tick(f, 1);
	assert_string_equal(since(f), "tc qdisc add dev veth0 parent d7f:4f07 fq_codel target 39322us "
			    "interval 157286us\n");
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_leaf(f, CL(M_A));
	assert_codel(f, CL(M_A), 39321, 157285);
	assert_leaf(f, CL(M_B));
	mark(f);
	tick(f, ALL);
	assert_string_equal(since(f), "");
}

/* A map entry changed or deleted by someone: restored within a verify round. */
static void test_drift_map(void **state)
{
	struct fx *f = *state;
	struct drf_net_tenant *v;
	size_t round = 4, sets = 0;
	const char *out;

	plan(f, "limit", false, CAP, FOUR);
	tick(f, ALL);
	v = map_entry(f, cg(f, "team/c"));
	assert_non_null(v);
	v->in_rate = 1;
	mark(f);
	for (size_t k = 0; k < round; k++)
		tick(f, 1);
	out = since(f);
	want[0] = '\0';
	wantf("bpf map set %" PRIu64 " class d7f:742d in-rate 1625000 in-burst 406250",
	      cg(f, "team/c"));
	assert_string_equal(out, want);
	assert_map(f, "team/c", CL(M_C), 1625000, 406250);

	/* Deleted: the same. */
	v = map_entry(f, cg(f, "a"));
	*v = f->bpf->val[f->bpf->n - 1];
	f->bpf->key[v - f->bpf->val] = f->bpf->key[f->bpf->n - 1];
	f->bpf->n--;
	assert_null(map_entry(f, cg(f, "a")));
	mark(f);
	for (size_t k = 0; k < round; k++) {
		tick(f, 1);
		sets += f->st.writes;
	}
	assert_int_equal(sets, 1);
	assert_map(f, "a", CL(M_A), 1250000, 312500);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_null(strstr(since(f), "tc "));
}

/* A snapshot of what the fake kernel and the BPF map hold, by tenant name. */
struct snap {
	struct drf_tc_class c[32];
	size_t nc;
	uint32_t root, defcls;
	char root_kind[DRF_TC_KIND_LEN];
	struct {
		uint32_t parent;
		char kind[DRF_TC_KIND_LEN];
	} leaf[32];
	size_t nl;
	struct {
		const char *cgroup;
		struct drf_net_tenant v;
	} map[32];
	size_t nm;
	bool attached;
};

static void snap_take(struct fx *f, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	assert_true(f->kt.nc <= 32 && f->kt.nq <= 33 && f->bpf->n <= 32);
	for (size_t i = 0; i < f->kt.nc; i++) {
		struct drf_tc_class c = f->kt.c[i];
		size_t j = s->nc++;

		/* sorted by classid */
		for (; j > 0 && s->c[j - 1].classid > c.classid; j--)
			s->c[j] = s->c[j - 1];
		s->c[j] = c;
	}
	for (size_t i = 0; i < f->kt.nq; i++) {
		const struct drf_tc_qdisc *q = &f->kt.q[i];
		size_t j;

		if (q->parent == DRF_TC_ROOT) {
			s->root = q->handle;
			snprintf(s->root_kind, sizeof(s->root_kind), "%s", q->kind);
			continue;
		}
		j = s->nl++;
		for (; j > 0 && s->leaf[j - 1].parent > q->parent; j--)
			s->leaf[j] = s->leaf[j - 1];
		s->leaf[j].parent = q->parent;
		snprintf(s->leaf[j].kind, sizeof(s->leaf[j].kind), "%s", q->kind);
	}
	s->defcls = f->kt.htb_defcls;
	/* Keys by cgroup, in the order of cgroups[]: the ids differ between fixtures. */
	for (size_t k = 0; k < sizeof(cgroups) / sizeof(cgroups[0]); k++) {
		const struct drf_net_tenant *v = map_entry(f, cg(f, cgroups[k]));

		if (!v)
			continue;
		s->map[s->nm].cgroup = cgroups[k];
		s->map[s->nm].v = *v;
		s->nm++;
	}
	if (s->nm != f->bpf->n)
		s->nm = SIZE_MAX; /* a key of no cgroup: never equal */
	s->attached = f->bpf->attached;
}

static bool snap_equal(const struct snap *a, const struct snap *b)
{
	if (a->nc != b->nc || a->nl != b->nl || a->nm != b->nm || a->root != b->root ||
	    a->defcls != b->defcls || strcmp(a->root_kind, b->root_kind) != 0 ||
	    a->attached != b->attached)
		return false;
	for (size_t i = 0; i < a->nc; i++) {
		const struct drf_tc_class *x = &a->c[i], *y = &b->c[i];

		if (x->classid != y->classid || x->parent != y->parent || x->rate != y->rate ||
		    x->ceil != y->ceil || x->burst != y->burst || x->cburst != y->cburst ||
		    x->quantum != y->quantum)
			return false;
	}
	for (size_t i = 0; i < a->nl; i++)
		if (a->leaf[i].parent != b->leaf[i].parent ||
		    strcmp(a->leaf[i].kind, b->leaf[i].kind) != 0)
			return false;
	for (size_t i = 0; i < a->nm; i++)
		if (strcmp(a->map[i].cgroup, b->map[i].cgroup) != 0 ||
		    a->map[i].v.classid != b->map[i].v.classid ||
		    a->map[i].v.in_rate != b->map[i].v.in_rate ||
		    a->map[i].v.in_burst != b->map[i].v.in_burst)
			return false;
	return true;
}

struct fault {
	const char *what;
	bool bpf;
	unsigned op;
};

static void arm(struct fx *f, const struct fault *ft, int err)
{
	if (ft->bpf) {
		f->bpf->fault.ops = ft->op;
		f->bpf->fault.err = err;
	} else {
		f->rec.fault.ops = ft->op;
		f->rec.fault.err = err;
	}
}

static void disarm(struct fx *f)
{
	f->bpf->fault.err = 0;
	f->bpf->fault.ops = 0;
	f->bpf->fault.id = 0;
	f->rec.fault.err = 0;
	f->rec.fault.ops = 0;
	f->rec.fault.id = 0;
}

static size_t faults(const struct fx *f)
{
	return f->rec.fault.hits + f->bpf->fault.hits;
}

/* Three ticks with the fault: each it reaches reports errors. Returns how many it reached. */
static size_t ticks_with(struct fx *f, const struct fault *ft, int err, bool counted)
{
	size_t hit = 0;

	for (int k = 0; k < 3; k++) {
		size_t before = faults(f);

		tick(f, 1);
		if (faults(f) == before)
			continue;
		hit++;
		if (counted && f->st.errors == 0)
			fail_msg("%s, %s: fault reached, no error reported", ft->what, strerror(err));
	}
	return hit;
}

/* At most two ticks after the fault clears, the fake kernel holds the golden state. */
static void converges(struct fx *f, const struct snap *golden, const struct fault *ft, int err,
		      const char *phase)
{
	struct snap now;

	for (int k = 0; k < 2; k++) {
		tick(f, 1);
		snap_take(f, &now);
		if (snap_equal(&now, golden) && f->st.retrying == 0 && f->st.errors == 0)
			return;
	}
	fail_msg("%s, %s, %s: not converged two ticks after the fault cleared (%u errors, %u "
		 "retrying, %zu classes, %zu leaves, %zu map entries)", ft->what, strerror(err), phase,
		 f->st.errors, f->st.retrying, now.nc, now.nl, now.nm);
}

#define R1 TA TB TC
#define R2 TA TB TD

/* The fault matrix's fixture of the moment, closed by its teardown if a case fails. */
static struct fx *matrix_fx;

static int matrix_teardown(void **state)
{
	(void)state;
	if (matrix_fx)
		fx_close(matrix_fx);
	matrix_fx = NULL;
	return 0;
}

/* The states without faults: install R1, then reload to R2 (c leaves, d comes). */
static void golden_states(struct snap *g1, struct snap *g2)
{
	struct fx *f = matrix_fx = fx_open();

	plan(f, "limit", false, CAP, R1);
	tick(f, ALL);
	tick(f, ALL);
	snap_take(f, g1);
	plan(f, "limit", false, CAP, R2);
	tick(f, ALL);
	tick(f, ALL);
	snap_take(f, g2);
	assert_int_equal(g1->nc, 6);
	assert_int_equal(g2->nc, 6);
	assert_int_equal(g2->nm, 3);
	fx_close(f);
	matrix_fx = NULL;
}

/*
 * Every tc and BPF operation the shaper uses fails, with each errno, while
 * drfd installs (R1) and while a reload removes one tenant and adds another
 * (R2): each tick the fault reaches reports errors, and at most two ticks
 * after the fault clears the kernel holds what a run without faults has.
 */
static void test_fault_matrix(void **state)
{
	static const struct fault fl[] = {
		{ "tc link", false, DRF_TC_OP_LINK },
		{ "tc qdiscs", false, DRF_TC_OP_QDISCS },
		{ "tc add_htb", false, DRF_TC_OP_ADD_HTB },
		{ "tc set_class", false, DRF_TC_OP_SET_CLASS },
		{ "tc add_leaf", false, DRF_TC_OP_ADD_LEAF },
		{ "tc del_class", false, DRF_TC_OP_DEL_CLASS },
		{ "tc classes", false, DRF_TC_OP_CLASSES },
		{ "bpf attach", true, DRF_NETBPF_OP_ATTACH },
		{ "bpf get", true, DRF_NETBPF_OP_GET },
		{ "bpf set", true, DRF_NETBPF_OP_SET },
		{ "bpf del", true, DRF_NETBPF_OP_DEL },
		{ "bpf keys", true, DRF_NETBPF_OP_KEYS },
	};
	static const int errs[] = { EBUSY, EINVAL, EPERM, ENOMEM };
	struct snap g1, g2;

	(void)state;
	golden_states(&g1, &g2);
	for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
		size_t reached = 0;
		bool counted = true;

		for (size_t j = 0; j < sizeof(errs) / sizeof(errs[0]); j++) {
			struct fx *f = matrix_fx = fx_open();

			arm(f, &fl[i], errs[j]);
			plan(f, "limit", false, CAP, R1);
			reached += ticks_with(f, &fl[i], errs[j], counted);
			disarm(f);
			converges(f, &g1, &fl[i], errs[j], "install");

			arm(f, &fl[i], errs[j]);
			plan(f, "limit", false, CAP, R2);
			reached += ticks_with(f, &fl[i], errs[j], counted);
			disarm(f);
			converges(f, &g2, &fl[i], errs[j], "reload");
			fx_close(f);
			matrix_fx = NULL;
		}
		if (!reached)
			fail_msg("%s: the fault was never reached", fl[i].what);
	}
}

/* A fault on one tenant's class, leaf or map entry: the others go on; it is retried. */
static void test_fault_on_one_tenant(void **state)
{
	struct fx *f = *state;

	plan(f, "limit", false, CAP, R1);
	f->rec.fault.ops = DRF_TC_OP_SET_CLASS;
	f->rec.fault.id = CL(M_B);
	f->rec.fault.err = EBUSY;
	f->bpf->fault.ops = DRF_NETBPF_OP_SET;
	f->bpf->fault.id = cg(f, "team/c");
	f->bpf->fault.err = EPERM;
	tick(f, ALL);
	assert_int_equal(f->st.errors, 2);
	assert_int_equal(f->st.retrying, 2);
	assert_non_null(faketc_class(&f->kt, CL(M_A)));
	assert_leaf(f, CL(M_A));
	assert_non_null(faketc_class(&f->kt, CL(M_C)));
	assert_leaf(f, CL(M_C));
	assert_null(faketc_class(&f->kt, CL(M_B)));
	assert_map(f, "b", CL(M_B), 1250000, 312500);
	assert_null(map_entry(f, cg(f, "team/c")));
	/* Said once, counted every tick. */
	assert_int_equal(f->errors_said, 2);
	tick(f, ALL);
	assert_int_equal(f->st.errors, 2);
	assert_int_equal(f->errors_said, 2);
	disarm(f);
	mark(f);
	tick(f, 0);
	want[0] = '\0';
	wantf("tc class set dev veth0 classid d7f:86c0 parent d7f:2 rate 5000000 ceil 5000000 "
	      "burst 50000 cburst 50000 quantum 200000");
	wantf("tc qdisc add dev veth0 parent d7f:86c0 fq_codel target 19661us interval 100000us");
	wantf("bpf map set %" PRIu64 " class d7f:742d in-rate 625000 in-burst 262144",
	      cg(f, "team/c"));
	assert_string_equal(since(f), want);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_tree(f, 3);

	/* A leaf that cannot be added, and a departed class that cannot be deleted. */
	plan(f, "limit", false, CAP, R2);
	f->rec.fault.ops = DRF_TC_OP_ADD_LEAF | DRF_TC_OP_DEL_CLASS;
	f->rec.fault.err = ENOMEM;
	tick(f, 0);
	assert_int_equal(f->st.errors, 2);
	assert_int_equal(f->st.retrying, 1);
	assert_non_null(faketc_class(&f->kt, CL(M_C)));
	assert_non_null(faketc_class(&f->kt, CL(M_D)));
	assert_null(faketc_leaf(&f->kt, CL(M_D)));
	/* A departed tenant's map entry goes regardless. */
	assert_null(map_entry(f, cg(f, "team/c")));
	disarm(f);
	mark(f);
	tick(f, 0);
	assert_string_equal(since(f), "tc qdisc add dev veth0 parent d7f:174e fq_codel target 78643us "
				      "interval 314573us\n"
				      "tc class del dev veth0 classid d7f:742d\n");
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_tree(f, 3);
}

/* A kernel without fq_codel: one warning, the classes keep HTB's own queue. */
static void test_no_fq_codel(void **state)
{
	struct fx *f = *state;
	const char *out, *p;
	int n = 0;

	f->kt.no_fq_codel = true;
	plan(f, "limit", false, CAP, TA TB TC);
	tick(f, ALL);
	out = since(f);
	for (p = out; (p = strstr(p, "fq_codel")); p++)
		n++;
	assert_int_equal(n, 1); /* tried once */
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_int_equal(f->warnings, 1);
	assert_int_equal(faketc_nclasses(&f->kt), 6);
	assert_int_equal(faketc_nqdiscs(&f->kt), 1);
	assert_int_equal(f->bpf->n, 3);
	for (int k = 0; k < 3; k++) {
		mark(f);
		tick(f, ALL);
		assert_string_equal(since(f), "");
		assert_int_equal(f->st.errors + f->st.retrying, 0);
	}
	/* A new tenant gets its class and no leaf, and no new warning. */
	plan(f, "limit", false, CAP, TA TB TC TD);
	mark(f);
	tick(f, 0);
	assert_null(strstr(since(f), "fq_codel"));
	assert_int_equal(f->st.writes, 2); /* its class and its map entry */
	assert_non_null(faketc_class(&f->kt, CL(M_D)));
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_int_equal(f->warnings, 1);
	assert_int_equal(f->kt.calls.add_leaf, 1);
}

/* drfctl net-reset: drfd's root qdisc and the BPF pins go; a foreign root qdisc stays. */
static void test_reset(void **state)
{
	struct fx *f = *state;

	plan(f, "limit", false, CAP, FOUR);
	tick(f, ALL);
	mark(f);
	assert_int_equal(drf_shaper_reset(&f->s), 0);
	assert_string_equal(since(f), "tc qdisc del dev veth0 root handle d7f:\nbpf reset " PIN "\n");
	assert_int_equal(faketc_root(&f->kt)->handle, 0);
	assert_string_equal(faketc_root(&f->kt)->kind, "noqueue");
	assert_int_equal(faketc_nclasses(&f->kt), 0);
	assert_int_equal(faketc_nqdiscs(&f->kt), 1);
	assert_false(f->bpf->attached);
	assert_int_equal(f->bpf->n, 0);

	/* The next tick (a drfd still running) installs it all again. */
	tick(f, ALL);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_tree(f, 4);

	faketc_set_root(&f->kt, DRF_TC_HANDLE(1, 0), "prio");
	mark(f);
	assert_int_equal(drf_shaper_reset(&f->s), 0);
	assert_string_equal(since(f), "bpf reset " PIN "\n");
	assert_int_equal(faketc_root(&f->kt)->handle, DRF_TC_HANDLE(1, 0));
	assert_int_equal(f->kt.calls.del_qdisc, 1);

	/* A failing tc delete is returned; the BPF reset happens regardless. */
	faketc_set_root(&f->kt, 0, "noqueue");
	tick(f, ALL);
	f->rec.fault.ops = DRF_TC_OP_DEL_QDISC;
	f->rec.fault.err = EBUSY;
	mark(f);
	assert_int_equal(drf_shaper_reset(&f->s), -EBUSY);
	assert_string_equal(since(f), "bpf reset " PIN "\n");
	assert_int_equal(faketc_root(&f->kt)->handle, CL(0));
}

/* Rates from the counters: the class's (HTB) and the programs' (egress, ingress). */
static void test_counter_rates(void **state)
{
	struct fx *f = *state;
	struct drf_shaper_tenant *t;
	size_t k;

	plan(f, "limit", false, CAP, FOUR);
	tick(f, ALL);
	tick(f, ALL);
	/*
	 * Two seconds: 1250000 bytes through a's class (5 mbit/s), 1000000 out (4)
	 * and 500000 in (2) counted by the programs.
	 */
	assert_int_equal(faketc_count(&f->kt, CL(M_A), 1250000, 1000), 0);
	for (k = 0; k < f->bpf->n && f->bpf->key[k] != cg(f, "a"); k++)
		;
	assert_true(k < f->bpf->n);
	f->bpf->cnt[k].eg_bytes += 1000000;
	f->bpf->cnt[k].in_bytes += 500000;
	f->bpf->cnt[k].in_dropped += 3;
	f->now += 1000000ull; /* a second, in usec */
	tick(f, 1);
	t = tenant(f, "a");
	assert_close(t->class_bps, 5e6, 1e-9, "class rate");
	assert_close(t->eg_bps, 4e6, 1e-9, "egress rate");
	assert_close(t->in_bps, 2e6, 1e-9, "ingress rate");
	assert_int_equal(t->seen.bytes, 1250000);
	assert_int_equal(t->seen.packets, 1000);
	assert_int_equal(t->cnt.in_dropped, 3);
	assert_true(tenant(f, "b")->class_bps == 0);
	/* Nothing more: zero. */
	tick(f, 1);
	assert_true(t->class_bps == 0 && t->eg_bps == 0 && t->in_bps == 0);
}

/*
 * A link that reports no speed (veth): net-rate is the link, 12500000 bytes/s.
 *   d7f:1    rate = ceil = 12500000, bursts 125000, quantum 200000
 *   d7f:2    the same (quantum 12500000 / 12500000 * 200000)
 *   d7f:ffff rate: nothing left, the floor 125000; ceil 12500000; burst
 *            1250 -> the least 6056, cburst 125000; quantum 2000
 * z's ceil is the link, 12500000 (cburst 125000). Then the link says 1 gbit:
 * the base classes and z's become those of test_limit_exact_classes.
 */
static void test_link_speed(void **state)
{
	struct fx *f = *state;
	const char *out;

	f->kt.speed = 0;
	plan(f, "limit", false, CAP, FOUR);
	tick(f, ALL);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_class(f, CL(1), DRF_TC_ROOT, 12500000, 12500000, 125000, 125000, 200000);
	assert_class(f, CL(2), CL(1), 12500000, 12500000, 125000, 125000, 200000);
	assert_class(f, CL(0xffff), CL(1), 125000, 12500000, 6056, 125000, 2000);
	assert_class(f, CL(M_Z), CL(2), 1000, 12500000, 6056, 125000, 1514);
	assert_class(f, CL(M_A), CL(2), 2500000, 2500000, 25000, 25000, 76923);

	f->kt.speed = GBIT;
	mark(f);
	tick(f, 1);
	out = keep(f);
	want[0] = '\0';
	want_base();
	wantf("tc class set dev veth0 classid d7f:44aa parent d7f:2 rate 1000 ceil 125000000 "
	      "burst 6056 cburst 1250000 quantum 1514");
	assert_true(starts_with(out, want));
	assert_base(f);
	assert_class(f, CL(M_Z), CL(2), 1000, 125000000, 6056, 1250000, 1514);
	tick(f, 1);
	assert_int_equal(f->st.errors + f->st.retrying, 0);


	assert_string_equal(out, want);
}

/* net-ingress-rate alone: no tc at all; map entries with no class, policers at the allocation. */
static void test_ingress_only(void **state)
{
	struct fx *f = *state;

	plan(f, "limit", false, "net-ingress-rate = 50mbit\n",
	     "[tenant a]\nnet-ingress-rate = 10mbit\n[tenant b]\nnet-ingress-rate = 10mbit\n"
	     "[tenant c]\ncgroup = team/c\nnet-ingress-rate = 5mbit\n");
	tick(f, ALL);
	want[0] = '\0';
	wantf("bpf attach " PIN " level 1");
	wantf("bpf map set %" PRIu64 " class 0:0 in-rate 1250000 in-burst 312500", cg(f, "a"));
	wantf("bpf map set %" PRIu64 " class 0:0 in-rate 1250000 in-burst 312500", cg(f, "b"));
	wantf("bpf map set %" PRIu64 " class 0:0 in-rate 625000 in-burst 262144", cg(f, "team/c"));
	assert_string_equal(since(f), want);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_int_equal(faketc_root(&f->kt)->handle, 0);
	/* One look for a tree a previous run left; no class listed, nothing written. */
	assert_int_equal(f->kt.calls.qdiscs, 1);
	assert_int_equal(f->kt.calls.classes, 0);
	assert_int_equal(f->st.writes, 3);
	f->kt.calls.qdiscs = 0;
	tick(f, ALL);
	assert_int_equal(f->kt.calls.qdiscs, 0);
}

/* A restart whose config dropped net-rate (ingress stays): the last run's tree goes. */
static void test_egress_dropped_restart(void **state)
{
	struct fx *f = *state;

	plan(f, "limit", false, CAP, "[tenant a]\nnet-rate = 10mbit\nnet-ingress-rate = 10mbit\n");
	tick(f, ALL);
	assert_int_equal(faketc_root(&f->kt)->handle, CL(0));
	drf_shaper_free(&f->s);
	shaper_open(f);
	plan(f, "limit", false, "net-ingress-rate = 50mbit\n", "[tenant a]\nnet-ingress-rate = 10mbit\n");
	tick(f, ALL);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_int_equal(faketc_root(&f->kt)->handle, 0);
	assert_int_equal(f->kt.nc, 0);
}

/* A reload that drops net-rate (ingress stays): drfd's HTB tree goes, once. */
static void test_egress_dropped(void **state)
{
	struct fx *f = *state;

	plan(f, "limit", false, CAP, "[tenant a]\nnet-rate = 10mbit\nnet-ingress-rate = 10mbit\n");
	tick(f, ALL);
	assert_int_equal(faketc_root(&f->kt)->handle, CL(0));
	plan(f, "limit", false, "net-ingress-rate = 50mbit\n", "[tenant a]\nnet-ingress-rate = 10mbit\n");
	tick(f, ALL);
	assert_int_equal(f->st.errors + f->st.retrying, 0);
	assert_int_equal(faketc_root(&f->kt)->handle, 0);
	assert_int_equal(f->kt.nc, 0);
	/* Once: the next tick lists no qdisc. */
	f->kt.calls.qdiscs = 0;
	tick(f, ALL);
	assert_int_equal(f->kt.calls.qdiscs, 0);
}

/* A stale entry put straight into the recorder's map, under key id. */
static void plant(struct fx *f, uint64_t id)
{
	assert_true(f->bpf->n < DRF_NETBPF_REC_MAX);
	f->bpf->key[f->bpf->n] = id;
	f->bpf->val[f->bpf->n] = (struct drf_net_tenant){ .classid = CL(0x4242) };
	f->bpf->cnt[f->bpf->n] = (struct drf_net_counters){ 0 };
	f->bpf->n++;
}

#define MANY 40
/* No tenant's cgroup id: no inode of the fake tree is that large. */
#define STALE (UINT64_MAX - 7)

/* MANY tenants t00 .. t39, each 1mbit, in order or reversed. */
static void many_tenants(char *text, size_t len, bool reversed)
{
	size_t n = 0;

	text[0] = '\0';
	for (int k = 0; k < MANY; k++)
		n += (size_t)snprintf(text + n, len - n, "[tenant t%02d]\nnet-rate = 1mbit\n",
				      reversed ? MANY - 1 - k : k);
	assert_true(n < len);
}

/*
 * Tenants whose cgroups are not there yet (cgroup id 0) are in no index by
 * id: a map entry of no tenant is deleted, also one keyed 0, whether the map
 * is listed (after a reload) or its counters read (every tick); a tenant whose
 * cgroup comes gets its entry, and keeps it. With MANY tenants both indexes
 * grow past their first table, and every minor survives a reload in the
 * reverse order and a restart (MANY remembered minors).
 */
static void test_many_tenants_no_cgroup_ids(void **state)
{
	struct fx *f = *state;
	char fwd[2048], rev[2048], name[8];
	uint16_t minor[MANY];

	many_tenants(fwd, sizeof(fwd), false);
	many_tenants(rev, sizeof(rev), true);
	plant(f, 0);
	plant(f, STALE);
	plan(f, "limit", false, CAP, fwd);
	mark(f);
	tick(f, ALL);
	assert_int_equal(f->st.errors, 0);
	assert_non_null(strstr(since(f), "bpf map del 0\n"));
	assert_int_equal(f->bpf->n, 0);
	/* Each tenant's map entry waits for its cgroup. */
	for (int k = 0; k < MANY; k++) {
		snprintf(name, sizeof(name), "t%02d", k);
		assert_int_equal(tenant(f, name)->cgid, 0);
		assert_false(tenant(f, name)->map_ok);
		minor[k] = tenant(f, name)->minor;
	}

	/* Two cgroups come; the counters' pass deletes the stale entries, not theirs. */
	assert_int_equal(cgfs_mkdir_p(&f->fs, "t05"), 0);
	assert_int_equal(cgfs_mkdir_p(&f->fs, "t37"), 0);
	plant(f, 0);
	plant(f, STALE);
	tick(f, ALL);
	assert_int_equal(f->st.errors, 0);
	assert_int_equal(f->bpf->n, 2);
	assert_non_null(map_entry(f, cg(f, "t05")));
	assert_int_equal(map_entry(f, cg(f, "t05"))->classid, CL(tenant(f, "t05")->minor));
	assert_non_null(map_entry(f, cg(f, "t37")));
	assert_int_equal(map_entry(f, cg(f, "t37"))->classid, CL(tenant(f, "t37")->minor));
	assert_null(map_entry(f, 0));
	assert_null(map_entry(f, STALE));
	for (int k = 0; k < MANY; k++) {
		snprintf(name, sizeof(name), "t%02d", k);
		assert_int_equal(tenant(f, name)->map_ok, k == 5 || k == 37);
	}

	/* A reload in the reverse order: the minors by name, the map listed again. */
	plant(f, 0);
	plant(f, STALE);
	plan(f, "limit", false, CAP, rev);
	/* Found by name: what was observed of them is carried over. */
	assert_int_equal(tenant(f, "t05")->cgid, cg(f, "t05"));
	assert_int_equal(tenant(f, "t37")->cgid, cg(f, "t37"));
	mark(f);
	tick(f, ALL);
	assert_int_equal(f->st.errors, 0);
	assert_null(strstr(since(f), "tc class"));
	assert_int_equal(f->bpf->n, 2);
	assert_non_null(map_entry(f, cg(f, "t05")));
	assert_non_null(map_entry(f, cg(f, "t37")));
	for (int k = 0; k < MANY; k++) {
		snprintf(name, sizeof(name), "t%02d", k);
		assert_int_equal(tenant(f, name)->minor, minor[k]);
	}

	/*
	 * A restart with MANY remembered minors, in the reverse order of the
	 * plan's: the classes stay. Then one more remembered after the plan
	 * (the plan dropped the others): taken by the next plan.
	 */
	drf_shaper_free(&f->s);
	shaper_open(f);
	for (int k = MANY - 1; k >= 0; k--) {
		snprintf(name, sizeof(name), "t%02d", k);
		assert_int_equal(drf_shaper_remember(&f->s, name, minor[k]), 0);
	}
	plan(f, "limit", false, CAP, fwd);
	mark(f);
	tick(f, ALL);
	assert_int_equal(f->st.errors, 0);
	assert_int_equal(f->st.writes, 0);
	assert_string_equal(since(f), "bpf attach " PIN " level 1\n");
	for (int k = 0; k < MANY; k++) {
		snprintf(name, sizeof(name), "t%02d", k);
		assert_int_equal(tenant(f, name)->minor, minor[k]);
	}
	assert_int_equal(drf_shaper_remember(&f->s, "new", 0x30), 0);
	plan(f, "limit", false, CAP, "[tenant new]\nnet-rate = 1mbit\n");
	assert_int_equal(tenant(f, "new")->minor, 0x30);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_limit_exact_classes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_share_exact_classes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steady_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_add_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_change_demand, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leaf_update_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload_is_not_drift, setup, teardown),
		cmocka_unit_test_setup_teardown(test_minors_survive_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remembered_minor_not_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drift_tc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drift_leaf_kind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drift_map, setup, teardown),
		cmocka_unit_test_teardown(test_fault_matrix, matrix_teardown),
		cmocka_unit_test_setup_teardown(test_fault_on_one_tenant, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_fq_codel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counter_rates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_speed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_egress_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ingress_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_egress_dropped_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_tenants_no_cgroup_ids, setup, teardown),
	};

	return cmocka_run_group_tests_name("shaper", tests, NULL, NULL);
}
