// SPDX-License-Identifier: MIT
/* The tenants as systemd slices (see slice.h). */
#include "slice.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "unitname.h"

/* A decimal u64, all of s; or "max" as infinity if max_ok. */
static int parse_u64(const char *s, size_t n, bool max_ok, uint64_t *ret)
{
	uint64_t v = 0;

	if (max_ok && n == 3 && memcmp(s, "max", 3) == 0) {
		*ret = CGFS_PROP_INFINITY;
		return 0;
	}
	if (n == 0 || n > 20)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*ret = v;
	return 0;
}

static struct cgfs_prop *add(struct cgfs_prop *p, size_t *n, size_t max, const char *name,
			     enum cgfs_prop_type type, uint64_t u)
{
	if (*n >= max)
		return NULL;
	p[*n] = (struct cgfs_prop){ .name = name, .type = type, .u = u };
	return &p[(*n)++];
}

uint64_t cgfs_bfq_to_io_weight(uint64_t b)
{
	/*
	 * systemd maps IOWeight w to BFQ's weight as 1..100 -> 1..100 and
	 * 100..10000 -> 100..1000, the latter as 100 + (w - 100) * 900 / 9900:
	 * w = 100 + (b - 100) * 11 gives b back exactly.
	 */
	if (b <= 100)
		return b < 1 ? 1 : b;
	if (b > 1000)
		b = 1000;
	return 100 + (b - 100) * 11;
}

/* "default N" or "MAJ:MIN N": IOWeight or IODeviceWeight. */
static int io_weight(const char *val, bool bfq, struct cgfs_prop *p, size_t *n, size_t max)
{
	size_t sp = strcspn(val, " ");
	uint64_t w;
	struct cgfs_prop *q;

	/* A device's own weight taken back: systemd's list of them emptied. */
	if (sp > 0 && sp <= 32 && memchr(val, ':', sp) && strcmp(val + sp, " default") == 0)
		return add(p, n, max, "IODeviceWeight", CGFS_PROP_DEV_NONE, 0) ? 0 : -E2BIG;
	if (!val[sp] || parse_u64(val + sp + 1, strcspn(val + sp + 1, "\n"), false, &w) < 0 ||
	    w < 1 || w > (bfq ? 1000 : 10000))
		return -EINVAL;
	if (bfq)
		w = cgfs_bfq_to_io_weight(w);
	if (sp == 7 && memcmp(val, "default", 7) == 0)
		return add(p, n, max, "IOWeight", CGFS_PROP_U64, w) ? 0 : -E2BIG;
	q = add(p, n, max, "IODeviceWeight", CGFS_PROP_DEV_U64, w);
	if (!q)
		return -E2BIG;
	if (sp > 32 || !memchr(val, ':', sp))
		return -EINVAL;
	snprintf(q->s, sizeof(q->s), "/dev/block/%.*s", (int)sp, val);
	return 0;
}

/* "MAJ:MIN rbps=R wbps=W riops=I wiops=J": a limit per key given. */
static int io_max(const char *val, struct cgfs_prop *p, size_t *n, size_t max)
{
	static const struct {
		const char *key, *prop;
	} keys[] = {
		{ "rbps", "IOReadBandwidthMax" },
		{ "wbps", "IOWriteBandwidthMax" },
		{ "riops", "IOReadIOPSMax" },
		{ "wiops", "IOWriteIOPSMax" },
	};
	size_t dev = strcspn(val, " ");
	const char *s = val + dev;

	if (dev == 0 || dev > 32 || !memchr(val, ':', dev) || strchr(val, '\n'))
		return -EINVAL;
	while (*s == ' ') {
		size_t kl, vl, k;
		uint64_t v;
		struct cgfs_prop *q;

		s++;
		kl = strcspn(s, "= ");
		if (s[kl] != '=')
			return -EINVAL;
		vl = strcspn(s + kl + 1, " ");
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (strlen(keys[k].key) == kl && memcmp(s, keys[k].key, kl) == 0)
				break;
		if (k == sizeof(keys) / sizeof(keys[0]) || parse_u64(s + kl + 1, vl, true, &v) < 0)
			return -EINVAL;
		q = add(p, n, max, keys[k].prop, CGFS_PROP_DEV_U64, v);
		if (!q)
			return -E2BIG;
		snprintf(q->s, sizeof(q->s), "/dev/block/%.*s", (int)dev, val);
		s += kl + 1 + vl;
	}
	return *s ? -EINVAL : 0;
}

/* "+cpu -io ...": the units' accounting of those controllers on or off. */
static int subtree(const char *val, struct cgfs_prop *p, size_t *n, size_t max)
{
	static const char *const acct[CGFS_NCTRL] = { "CPUAccounting", "MemoryAccounting",
						       "IOAccounting", "TasksAccounting" };
	const char *s = val;

	while (*s) {
		size_t l = strcspn(s, " ");
		bool on = *s == '+';
		int i;

		if (l < 2 || (*s != '+' && *s != '-'))
			return -EINVAL;
		for (i = 0; i < CGFS_NCTRL; i++)
			if (strlen(cgfs_ctrl_name(1u << i)) == l - 1 &&
			    memcmp(s + 1, cgfs_ctrl_name(1u << i), l - 1) == 0)
				break;
		if (i == CGFS_NCTRL)
			return -EOPNOTSUPP;
		if (!add(p, n, max, acct[i], CGFS_PROP_BOOL, on))
			return -E2BIG;
		s += l;
		while (*s == ' ')
			s++;
	}
	return 0;
}

int cgfs_slice_props(const char *file, const char *val, struct cgfs_prop *p, size_t max)
{
	static const struct {
		const char *file, *prop;
	} memory[] = {
		{ "memory.low", "MemoryLow" },
		{ "memory.high", "MemoryHigh" },
		{ "memory.max", "MemoryMax" },
		{ "memory.swap.max", "MemorySwapMax" },
	};
	size_t n = 0;
	uint64_t v, period;
	int r;

	if (strcmp(file, "cpu.weight") == 0) {
		if (parse_u64(val, strlen(val), false, &v) < 0 || v < 1 || v > 10000)
			return -EINVAL;
		add(p, &n, max, "CPUWeight", CGFS_PROP_U64, v);
		return (int)n;
	}
	if (strcmp(file, "cpu.max") == 0) {
		size_t q = strcspn(val, " ");

		if (!val[q] || parse_u64(val, q, true, &v) < 0 ||
		    parse_u64(val + q + 1, strlen(val + q + 1), false, &period) < 0 ||
		    period < 1000 || period > 1000000 || v == 0)
			return -EINVAL;
		/* Rounded up, so that systemd's per_sec * period / 1 s is the quota again. */
		if (v != CGFS_PROP_INFINITY)
			v = v > UINT64_MAX / 1000000 ? CGFS_PROP_INFINITY
						    : (v * 1000000 + period - 1) / period;
		if (max < 2)
			return -E2BIG;
		add(p, &n, max, "CPUQuotaPerSecUSec", CGFS_PROP_U64, v);
		add(p, &n, max, "CPUQuotaPeriodUSec", CGFS_PROP_U64, period);
		return (int)n;
	}
	for (size_t i = 0; i < sizeof(memory) / sizeof(memory[0]); i++) {
		if (strcmp(file, memory[i].file) != 0)
			continue;
		if (parse_u64(val, strlen(val), true, &v) < 0)
			return -EINVAL;
		add(p, &n, max, memory[i].prop, CGFS_PROP_U64, v);
		return (int)n;
	}
	if (strcmp(file, "io.weight") == 0 || strcmp(file, "io.bfq.weight") == 0)
		r = io_weight(val, strcmp(file, "io.bfq.weight") == 0, p, &n, max);
	else if (strcmp(file, "io.max") == 0)
		r = io_max(val, p, &n, max);
	else if (strcmp(file, "cgroup.subtree_control") == 0)
		r = subtree(val, p, &n, max);
	else
		return -EOPNOTSUPP;
	return r < 0 ? r : (int)n;
}

void cgfs_prop_format(const struct cgfs_prop *p, char *buf, size_t len)
{
	char v[32];

	if (p->u == CGFS_PROP_INFINITY)
		snprintf(v, sizeof(v), "infinity");
	else
		snprintf(v, sizeof(v), "%" PRIu64, p->u);
	switch (p->type) {
	case CGFS_PROP_BOOL:
		snprintf(buf, len, "%s=%s", p->name, p->u ? "yes" : "no");
		break;
	case CGFS_PROP_STR:
		snprintf(buf, len, "%s=%s", p->name, p->s);
		break;
	case CGFS_PROP_DEV_U64:
		snprintf(buf, len, "%s=%s %s", p->name, p->s, v);
		break;
	case CGFS_PROP_DEV_NONE:
		snprintf(buf, len, "%s=", p->name);
		break;
	case CGFS_PROP_EXEC: {
		size_t o = (size_t)snprintf(buf, len, "%s=%s", p->name, p->s);

		for (size_t i = 1; p->argv && p->argv[0] && p->argv[i] && o < len; i++)
			o += (size_t)snprintf(buf + o, len - o, " %s", p->argv[i]);
		break;
	}
	default:
		snprintf(buf, len, "%s=%s", p->name, v);
		break;
	}
}

/* "drf-a-b.slice" names "drf-a.slice" as its parent slice; "drf-a.slice", drf.slice. */
static bool parent_is(const char *unit, const char *parent, size_t plen)
{
	size_t base = plen - strlen(".slice");

	if (plen == strlen(DRF_SLICE_ROOT) && memcmp(parent, DRF_SLICE_ROOT, plen) == 0)
		return strncmp(unit, "drf-", 4) == 0 && !strchr(unit + 4, '-');
	return strncmp(unit, parent, base) == 0 && unit[base] == '-' &&
	       !strchr(unit + base + 1, '-');
}

bool cgfs_slice_is_task_unit(const char *unit)
{
	static const char pre[] = "drf-task-", suf[] = ".service";
	size_t n = strlen(unit), d = n - (sizeof(pre) - 1) - (sizeof(suf) - 1);

	if (n <= sizeof(pre) - 1 + sizeof(suf) - 1 || n > 64 ||
	    strncmp(unit, pre, sizeof(pre) - 1) != 0 || strcmp(unit + n - (sizeof(suf) - 1), suf) != 0)
		return false;
	for (size_t i = 0; i < d; i++)
		if (unit[sizeof(pre) - 1 + i] < '0' || unit[sizeof(pre) - 1 + i] > '9')
			return false;
	return true;
}

int cgfs_slice_unit(const char *cg, char *unit, size_t len)
{
	const char *parent = DRF_SLICE_ROOT, *s = cg;
	size_t plen = strlen(DRF_SLICE_ROOT);

	if (!*cg) {
		if (plen >= len)
			return -ENAMETOOLONG;
		memcpy(unit, DRF_SLICE_ROOT, plen + 1);
		return 0;
	}
	/*
	 * Each level a slice whose name says its parent is the level above; the
	 * last may be a task's service below a tenant's slice.
	 */
	for (;;) {
		size_t l = strcspn(s, "/");

		if (!s[l] && s != cg && l < len && l <= DRF_UNIT_NAME_MAX) {
			memcpy(unit, s, l);
			unit[l] = '\0';
			if (cgfs_slice_is_task_unit(unit))
				return 0;
		}
		if (l <= strlen(".slice") || l > DRF_UNIT_NAME_MAX ||
		    memcmp(s + l - strlen(".slice"), ".slice", strlen(".slice")) != 0)
			return -EPERM;
		if (l >= len)
			return -ENAMETOOLONG;
		memcpy(unit, s, l);
		unit[l] = '\0';
		if (!parent_is(unit, parent, plen))
			return -EPERM;
		if (!s[l])
			return 0;
		parent = s;
		plen = l;
		s += l + 1;
	}
}

static int split(const char *path, char *cg, size_t len, const char **file)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(cg, path, n);
	cg[n] = '\0';
	*file = slash ? slash + 1 : path;
	return 0;
}

static ssize_t slice_read(void *ctx, int dirfd, const char *path, char *buf, size_t len)
{
	struct cgfs_slice *s = ctx;

	return s->fs->read(s->fs_ctx, dirfd, path, buf, len);
}

/* A process moved into a tenant: a transient scope in its slice. */
static int move_pid(struct cgfs_slice *s, const char *unit, const char *val)
{
	struct cgfs_prop p[3] = {
		{ .name = "PIDs", .type = CGFS_PROP_PID },
		{ .name = "Slice", .type = CGFS_PROP_STR },
		{ .name = "Description", .type = CGFS_PROP_STR },
	};
	char scope[64];
	uint64_t pid;

	if (parse_u64(val, strcspn(val, "\n"), false, &pid) < 0 || pid == 0 || pid > INT32_MAX)
		return -EINVAL;
	p[0].u = pid;
	snprintf(p[1].s, sizeof(p[1].s), "%s", unit);
	snprintf(p[2].s, sizeof(p[2].s), "drfctl exec in %s", unit);
	snprintf(scope, sizeof(scope), "drf-exec-%" PRIu64 ".scope", pid);
	return s->bus->start(s->bus_ctx, scope, p, 3);
}

static int slice_write(void *ctx, int dirfd, const char *path, const char *val)
{
	struct cgfs_slice *s = ctx;
	struct cgfs_prop p[CGFS_PROPS_MAX];
	char cg[4096], unit[DRF_UNIT_NAME_MAX + 1];
	const char *file;
	int n;

	(void)dirfd;
	if (split(path, cg, sizeof(cg), &file) < 0 || cgfs_slice_unit(cg, unit, sizeof(unit)) < 0)
		return -EPERM;
	/* A task's service: its processes all killed, as cgroup.kill does; none moved in. */
	if (cgfs_slice_is_task_unit(unit) && strcmp(file, "cgroup.kill") == 0)
		return strcmp(val, "1") == 0 ? s->bus->kill(s->bus_ctx, unit, SIGKILL) : -EINVAL;
	if (strcmp(file, "cgroup.procs") == 0)
		return cgfs_slice_is_task_unit(unit) ? -EPERM : move_pid(s, unit, val);
	n = cgfs_slice_props(file, val, p, CGFS_PROPS_MAX);
	if (n < 0)
		return n;
	return s->bus->set(s->bus_ctx, unit, p, (size_t)n);
}

static int slice_mkdir(void *ctx, int dirfd, const char *path)
{
	struct cgfs_slice *s = ctx;
	struct cgfs_prop d = { .name = "Description", .type = CGFS_PROP_STR };
	char unit[DRF_UNIT_NAME_MAX + 1];

	(void)dirfd;
	/* A task's service is started with its command, by the task queue's spawn. */
	if (!*path || cgfs_slice_unit(path, unit, sizeof(unit)) < 0 ||
	    cgfs_slice_is_task_unit(unit))
		return -EPERM;
	snprintf(d.s, sizeof(d.s), "drfd tenant %s", path);
	return s->bus->start(s->bus_ctx, unit, &d, 1);
}

static int slice_rmdir(void *ctx, int dirfd, const char *path)
{
	struct cgfs_slice *s = ctx;
	char unit[DRF_UNIT_NAME_MAX + 1];
	int r;

	(void)dirfd;
	if (!*path || cgfs_slice_unit(path, unit, sizeof(unit)) < 0)
		return -EPERM;
	/* A unit in it (a service between restarts, a socket) would be stopped with it. */
	r = s->bus->busy(s->bus_ctx, unit);
	if (r != 0)
		return r > 0 ? -EBUSY : r;
	return s->bus->stop(s->bus_ctx, unit);
}

/* An apply under way: its outcome goes to done, for its cgroup. */
struct slice_apply {
	struct cgfs_done done;
	char cg[];
};

static void slice_applied(void *data, int err)
{
	struct slice_apply *a = data;

	a->done.fn(a->done.data, a->cg, err);
	free(a);
}

static int slice_apply(void *ctx, int dirfd, const char *cg, bool create,
		       const struct cgfs_change *ch, size_t n, const struct cgfs_done *done)
{
	struct cgfs_slice *s = ctx;
	char unit[DRF_UNIT_NAME_MAX + 1];
	size_t np = 0, cap = n * CGFS_PROPS_MAX + 1, len = strlen(cg);
	struct cgfs_prop *p;
	struct slice_apply *a;
	int r = 0;

	(void)dirfd;
	/* The root, drf.slice, is set (its MemoryLow), never made here. */
	if ((create && !*cg) || cgfs_slice_unit(cg, unit, sizeof(unit)) < 0 ||
	    (create && cgfs_slice_is_task_unit(unit)))
		return -EPERM;
	p = calloc(cap, sizeof(*p));
	a = malloc(sizeof(*a) + len + 1);
	if (!p || !a) {
		free(p);
		free(a);
		return -ENOMEM;
	}
	if (create) {
		p[np] = (struct cgfs_prop){ .name = "Description", .type = CGFS_PROP_STR };
		snprintf(p[np++].s, sizeof(p[0].s), "drfd tenant %s", cg);
	}
	for (size_t i = 0; i < n && r >= 0; i++) {
		r = cgfs_slice_props(ch[i].file, ch[i].val, p + np, cap - np);
		if (r >= 0)
			np += (size_t)r;
	}
	if (r < 0) {
		free(p);
		free(a);
		return r;
	}
	a->done = *done;
	memcpy(a->cg, cg, len + 1);
	if (s->bus->submit) {
		r = s->bus->submit(s->bus_ctx, create, unit, p, np, slice_applied, a);
		if (r < 0)
			free(a);
		free(p);
		return r;
	}
	/* A bus that answers at once: a slice loaded already is started, then given p. */
	r = create ? s->bus->start(s->bus_ctx, unit, p, np) : s->bus->set(s->bus_ctx, unit, p, np);
	if (r == -EEXIST)
		r = s->bus->set(s->bus_ctx, unit, p, np);
	free(p);
	slice_applied(a, r);
	return 0;
}

static int slice_id(void *ctx, int dirfd, const char *path, uint64_t *ret)
{
	struct cgfs_slice *s = ctx;

	return s->fs->id(s->fs_ctx, dirfd, path, ret);
}

static int slice_open(void *ctx, int dirfd, const char *path)
{
	struct cgfs_slice *s = ctx;

	return s->fs->open(s->fs_ctx, dirfd, path);
}

static ssize_t slice_pread(void *ctx, int fd, const char *path, char *buf, size_t len)
{
	struct cgfs_slice *s = ctx;

	return s->fs->pread(s->fs_ctx, fd, path, buf, len);
}

static void slice_close(void *ctx, int fd)
{
	struct cgfs_slice *s = ctx;

	s->fs->close(s->fs_ctx, fd);
}

static int slice_watch_init(void *ctx)
{
	struct cgfs_slice *s = ctx;

	return s->fs->watch_init(s->fs_ctx);
}

static int slice_watch_add(void *ctx, int wfd, int dirfd, const char *path)
{
	struct cgfs_slice *s = ctx;

	return s->fs->watch_add(s->fs_ctx, wfd, dirfd, path);
}

static void slice_watch_rm(void *ctx, int wfd, int wd)
{
	struct cgfs_slice *s = ctx;

	s->fs->watch_rm(s->fs_ctx, wfd, wd);
}

static ssize_t slice_watch_read(void *ctx, int wfd, int *wds, size_t n)
{
	struct cgfs_slice *s = ctx;

	return s->fs->watch_read(s->fs_ctx, wfd, wds, n);
}

static int slice_children(void *ctx, int dirfd, const char *path,
			  int (*fn)(void *data, const char *name), void *data)
{
	struct cgfs_slice *s = ctx;

	return s->fs->children ? s->fs->children(s->fs_ctx, dirfd, path, fn, data) : 0;
}

const struct cgfs_ops cgfs_slice_ops = {
	.name = "systemd",
	.read = slice_read,
	.write = slice_write,
	.mkdir = slice_mkdir,
	.rmdir = slice_rmdir,
	.id = slice_id,
	.open = slice_open,
	.pread = slice_pread,
	.close = slice_close,
	.watch_init = slice_watch_init,
	.watch_add = slice_watch_add,
	.watch_rm = slice_watch_rm,
	.watch_read = slice_watch_read,
	.apply = slice_apply,
	.children = slice_children,
};

static void rec_call(struct cgfs_bus_recorder *r, const char *what, const char *unit,
		     const struct cgfs_prop *p, size_t n)
{
	char line[2048], one[CGFS_PROP_STR_MAX + 64];
	size_t o;

	o = (size_t)snprintf(line, sizeof(line), "systemd %s %s", what, unit);
	for (size_t i = 0; i < n && o < sizeof(line); i++) {
		cgfs_prop_format(&p[i], one, sizeof(one));
		o += (size_t)snprintf(line + o, sizeof(line) - o, " %s", one);
	}
	drf_record(r->out, &r->calls, "%s", line);
}

static int rec_start(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n)
{
	struct cgfs_bus_recorder *r = ctx;
	int f = drf_fault_inject(&r->fault, CGFS_BUS_START, 0, unit);

	if (f < 0)
		return f;
	rec_call(r, "start", unit, p, n);
	return r->inner ? r->inner->start(r->inner_ctx, unit, p, n) : 0;
}

static int rec_set(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n)
{
	struct cgfs_bus_recorder *r = ctx;
	int f = drf_fault_inject(&r->fault, CGFS_BUS_SET, 0, unit);

	if (f < 0)
		return f;
	rec_call(r, "set", unit, p, n);
	return r->inner ? r->inner->set(r->inner_ctx, unit, p, n) : 0;
}

static int rec_stop(void *ctx, const char *unit)
{
	struct cgfs_bus_recorder *r = ctx;
	int f = drf_fault_inject(&r->fault, CGFS_BUS_STOP, 0, unit);

	if (f < 0)
		return f;
	rec_call(r, "stop", unit, NULL, 0);
	return r->inner ? r->inner->stop(r->inner_ctx, unit) : 0;
}

static int rec_busy(void *ctx, const char *unit)
{
	struct cgfs_bus_recorder *r = ctx;
	int f = drf_fault_inject(&r->fault, CGFS_BUS_BUSY, 0, unit);

	if (f < 0)
		return f;
	return r->inner ? r->inner->busy(r->inner_ctx, unit) : 0;
}

static int rec_kill(void *ctx, const char *unit, int sig)
{
	struct cgfs_bus_recorder *r = ctx;
	int f = drf_fault_inject(&r->fault, CGFS_BUS_KILL, 0, unit);

	if (f < 0)
		return f;
	drf_record(r->out, &r->calls, "systemd kill %s %d", unit, sig);
	return r->inner ? r->inner->kill(r->inner_ctx, unit, sig) : 0;
}

static int rec_submit(void *ctx, bool start, const char *unit, const struct cgfs_prop *p,
		      size_t n, void (*fn)(void *data, int err), void *data)
{
	struct cgfs_bus_recorder *r = ctx;
	int f = drf_fault_inject(&r->fault, start ? CGFS_BUS_START : CGFS_BUS_SET, 0, unit);

	/* A fault is the call's answer, as the real bus gives it. */
	if (f < 0) {
		fn(data, f);
		return 0;
	}
	rec_call(r, start ? "start" : "set", unit, p, n);
	if (r->inner && r->inner->submit)
		return r->inner->submit(r->inner_ctx, start, unit, p, n, fn, data);
	f = 0;
	if (r->inner)
		f = start ? r->inner->start(r->inner_ctx, unit, p, n)
			  : r->inner->set(r->inner_ctx, unit, p, n);
	/* A slice loaded already was started: its properties set now. */
	if (f == -EEXIST && start)
		f = r->inner->set(r->inner_ctx, unit, p, n);
	fn(data, f);
	return 0;
}

const struct cgfs_bus_ops cgfs_bus_recording_ops = {
	.name = "recording",
	.start = rec_start,
	.set = rec_set,
	.stop = rec_stop,
	.busy = rec_busy,
	.kill = rec_kill,
	.submit = rec_submit,
};
