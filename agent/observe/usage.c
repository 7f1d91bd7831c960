// SPDX-License-Identifier: MIT
/* The daemon's measurements (see usage.h). */
#include "usage.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "keyfile.h"
#include "knobs.h"
#include "log.h"

_Static_assert(DRF_HIST_BUCKETS == DRF_PROBE_HIST, "use.h and probe.h disagree on histograms");

void drf_usage_init(struct drf_usage *u, const struct cgfs *fs, const struct drf_logger *log)
{
	memset(u, 0, sizeof(*u));
	u->fs = fs;
	u->log = log;
	u->max_held = SIZE_MAX;
}

static void files_init(struct drf_usage_files *f)
{
	for (int k = 0; k < DRF_NUF; k++)
		f->fd[k] = -1;
	f->wd = -1;
	f->known = false;
	for (int k = 0; k < 3; k++)
		f->events[k] = NAN;
}

/* Closes a tenant's files and removes its watch: its cgroup is read afresh. */
static void files_release(struct drf_usage *u, struct drf_usage_files *f)
{
	for (int k = 0; k < DRF_NUF; k++) {
		u->held -= f->fd[k] >= 0;
		cgfs_release(u->fs, &f->fd[k]);
	}
	if (u->watching)
		cgfs_unwatch(u->fs, u->wfd, f->wd);
	files_init(f);
}

static void sample_end(struct drf_usage *u);

void drf_usage_free(struct drf_usage *u)
{
	sample_end(u);
	for (size_t i = 0; u->files && i < u->n; i++)
		files_release(u, &u->files[i]);
	if (u->watching)
		cgfs_watch_close(u->fs, u->wfd);
	u->watching = u->watch_tried = false;
	free(u->files);
	u->files = NULL;
	for (size_t i = 0; i < u->n; i++) {
		free(u->name[i]);
		free(u->cgroup[i]);
	}
	free(u->name);
	free(u->cgroup);
	u->cgroup = NULL;
	free(u->t);
	free(u->cgid);
	free(u->in_map);
	if (u->probe && u->probe->close)
		u->probe->close(u->probe_ctx);
	u->name = NULL;
	u->t = NULL;
	u->t_cap = 0;
	u->cgid = NULL;
	u->in_map = NULL;
	u->n = 0;
}

static void tenant_use_init(struct drf_tenant_use *t)
{
	memset(t, 0, sizeof(*t));
	for (int c = 0; c < DRF_NCTR; c++)
		t->now.c[c] = t->rate_tick[c] = t->rate_min[c] = NAN;
	for (int r = 0; r < DRF_NRES; r++)
		t->use_tick[r] = t->use_min[r] = t->gap[r] = NAN;
	for (int p = 0; p < DRF_NPRESSURE; p++)
		t->pressure[p] = NAN;
	for (int g = 0; g < DRF_NGAUGE; g++)
		t->gauge[g] = NAN;
	t->dominant_use = NAN;
	t->dominant_alloc_res = t->dominant_use_res = -1;
}

/* The names of u's tenants, for drf_index. */
static const void *name_key(const void *ctx, size_t i, size_t *ret_len)
{
	const struct drf_usage *u = ctx;

	*ret_len = strlen(u->name[i]);
	return u->name[i];
}

/* Frees a staging; the files it carried over are u's still (only a commit moves them). */
void drf_usage_unstage(struct drf_usage_tenants *st)
{
	for (size_t i = 0; st->name && st->cgroup && i < st->n; i++) {
		free(st->name[i]);
		free(st->cgroup[i]);
	}
	free(st->name);
	free(st->cgroup);
	if (!st->t_reused)
		free(st->t);
	free(st->cgid);
	free(st->in_map);
	free(st->files);
	free(st->from);
	memset(st, 0, sizeof(*st));
}

int drf_usage_stage(const struct drf_usage *u, const struct drf_config *c,
		     struct drf_usage_tenants *ret)
{
	size_t n = c->n_tenants;
	struct drf_usage_tenants st = { .n = n };
	struct drf_index ix;

	drf_index_init(&ix, name_key, u);
	st.name = calloc(n + 1, sizeof(*st.name));
	st.cgroup = calloc(n + 1, sizeof(*st.cgroup));
	st.cgid = calloc(n + 1, sizeof(*st.cgid));
	st.in_map = calloc(n + 1, sizeof(*st.in_map));
	st.files = calloc(n + 1, sizeof(*st.files));
	st.from = calloc(n + 1, sizeof(*st.from));
	if (!st.name || !st.cgroup || !st.cgid || !st.in_map || !st.files || !st.from ||
	    drf_index_build(&ix, u->n) < 0)
		goto nomem;
	/*
	 * Histories stay where they are when the tenants in force keep their
	 * places (the usual reload: a demand changed, tenants added at the end):
	 * a history is some 6 KB, 60 MB to copy at 10,000 tenants.
	 */
	st.t_reused = n <= u->t_cap;
	for (size_t i = 0; i < n; i++) {
		const struct drf_tenant *ct = &c->tenants[i];
		ssize_t j = drf_index_find_str(&ix, ct->name);

		st.name[i] = strdup(ct->name);
		st.cgroup[i] = strdup(ct->cgroup);
		if (!st.name[i] || !st.cgroup[i])
			goto nomem;
		/* Its history and files, if it was there before in the same cgroup. */
		if (j >= 0 && strcmp(u->cgroup[j], ct->cgroup) == 0) {
			st.cgid[i] = u->cgid[j];
			st.in_map[i] = u->in_map[j];
			st.files[i] = u->files[j];
			st.from[i] = (size_t)j;
		} else {
			files_init(&st.files[i]);
			st.from[i] = SIZE_MAX;
		}
		if (st.from[i] != (i < u->n ? i : SIZE_MAX))
			st.t_reused = false;
	}
	if (st.t_reused) {
		/* Past u->n: not u's (the room the array has), the new tenants' from now. */
		st.t = u->t;
		for (size_t i = u->n; i < n; i++)
			tenant_use_init(&st.t[i]);
	} else {
		st.t_cap = n + n / 8 + 16;
		st.t = calloc(st.t_cap, sizeof(*st.t));
		if (!st.t)
			goto nomem;
		for (size_t i = 0; i < n; i++)
			if (st.from[i] != SIZE_MAX)
				st.t[i] = u->t[st.from[i]];
			else
				tenant_use_init(&st.t[i]);
	}
	drf_index_free(&ix);
	*ret = st;
	return 0;
nomem:
	drf_index_free(&ix);
	drf_usage_unstage(&st);
	return -ENOMEM;
}

void drf_usage_commit(struct drf_usage *u, struct drf_usage_tenants *st)
{
	bool *kept;

	/* A sample in progress counts by the tenants of before: it ends here. */
	sample_end(u);
	kept = calloc(u->n + 1, sizeof(*kept));
	struct drf_usage_tenants old = {
		.n = u->n, .t = u->t, .name = u->name, .cgroup = u->cgroup, .cgid = u->cgid,
		.in_map = u->in_map, .files = u->files,
	};

	/*
	 * The files of tenants that leave (or move) are closed. Without memory
	 * for the bookkeeping, all are (the kept ones open again at the next
	 * sample): never an fd lost.
	 */
	for (size_t i = 0; kept && i < st->n; i++)
		if (st->from[i] != SIZE_MAX)
			kept[st->from[i]] = true;
	for (size_t j = 0; j < u->n; j++)
		if (!kept || !kept[j])
			files_release(u, &u->files[j]);
	for (size_t i = 0; !kept && i < st->n; i++)
		files_init(&st->files[i]);
	free(kept);
	if (st->t_reused)
		old.t = NULL;
	else
		u->t_cap = st->t_cap;
	drf_usage_unstage(&old);
	u->t = st->t;
	u->name = st->name;
	u->cgroup = st->cgroup;
	u->cgid = st->cgid;
	u->in_map = st->in_map;
	u->files = st->files;
	u->n = st->n;
	free(st->from);
	memset(st, 0, sizeof(*st));
	/* A departed tenant's entries, or a moved one's old cgroup's. */
	u->map_dirty = true;
	u->gen++;
}

void drf_usage_start_probes(struct drf_usage *u, const struct drf_probe_ops *ops, void *ctx,
			    const char *pin_dir, uint32_t root_level, uint32_t gen)
{
	bool adopted = false;
	int r;

	u->probe = ops;
	u->probe_ctx = ctx;
	u->root_level = root_level;
	r = cgfs_id(u->fs, "", &u->root_id);
	if (r < 0) {
		snprintf(u->probes_why, sizeof(u->probes_why), "cannot read cgroup-root's id: %s",
			 strerror(-r));
		return;
	}
	r = ops->attach(ctx, pin_dir, &adopted);
	if (r < 0) {
		snprintf(u->probes_why, sizeof(u->probes_why),
			 "the usage probes did not load or attach (%s): CPU use comes from cpu.stat "
			 "and IO from io.stat, with no run-queue wait and no IO latency", strerror(-r));
		drf_log(u->log, LOG_WARNING, "%s", u->probes_why);
		return;
	}
	u->probes = true;
	u->probes_adopted = adopted;
	/*
	 * Adopted programs hold tasks' tenants cached under the last drfd's
	 * generations: start from one they have not seen (the clock, in ms).
	 */
	u->gen = gen;
	u->map_dirty = true;
	drf_log(u->log, LOG_INFO, "usage probes %s (%s)",
		adopted ? "adopted from the last run" : "attached", pin_dir);
}

/* Keeps the probes' cgroup-root and io-device current. */
static void probes_configure(struct drf_usage *u, const struct drf_usage_in *in)
{
	struct drf_probe_cfg cfg = { .root_level = (__u32)u->root_level };
	int r;

	if (cgfs_id(u->fs, "", &u->root_id) == 0)
		cfg.root_id = u->root_id;
	if (in->io)
		cfg.io_dev = (in->io->major << 20) | (in->io->minor & 0xfffff);
	cfg.gen = u->gen;
	if (memcmp(&cfg, &u->cfg, sizeof(cfg)) == 0)
		return;
	r = u->probe->configure(u->probe_ctx, &cfg);
	if (r < 0) {
		drf_log(u->log, LOG_WARNING, "cannot configure the usage probes: %s", strerror(-r));
		return;
	}
	u->cfg = cfg;
}

/* Entries of departed tenants (or of a moved one's old cgroup) go, once every id is known. */
static void probes_sweep(struct drf_usage *u)
{
	uint64_t *keys = NULL;
	size_t n = 0;

	if (!u->map_dirty)
		return;
	for (size_t i = 0; i < u->n; i++)
		if (!u->cgid[i])
			return;
	if (u->probe->keys(u->probe_ctx, &keys, &n) < 0)
		return; /* tried again next tick */
	for (size_t k = 0; k < n; k++) {
		bool wanted = false;

		for (size_t i = 0; i < u->n && !wanted; i++)
			wanted = u->cgid[i] == keys[k];
		if (!wanted && u->probe->del(u->probe_ctx, keys[k]) == 0)
			u->gen++;
	}
	free(keys);
	u->map_dirty = false;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static const char *const uf_name[DRF_NUF] = {
	[DRF_UF_CPU_STAT] = "cpu.stat",
	[DRF_UF_MEM_CURRENT] = "memory.current",
	[DRF_UF_MEM_STAT] = "memory.stat",
	[DRF_UF_MEM_EVENTS] = "memory.events",
	[DRF_UF_CPU_PRESSURE] = "cpu.pressure",
	[DRF_UF_MEM_PRESSURE] = "memory.pressure",
	[DRF_UF_IO_PRESSURE] = "io.pressure",
	[DRF_UF_IO_STAT] = "io.stat",
};

/*
 * Tenant i's file k, read through its held fd. -ENODEV: the cgroup was
 * removed since the file was opened: every file of it is closed, and its id
 * read again at the next sample (the cgroup may be another by then).
 */
static ssize_t read_file(struct drf_usage *u, size_t i, const char *cg, enum drf_usage_file k,
			 char *buf, size_t len)
{
	struct drf_usage_files *f = &u->files[i];
	bool held = f->fd[k] >= 0;
	ssize_t n;

	if (f->fd[k] == -1 && u->held >= u->max_held) {
		n = cgfs_read(u->fs, cg, uf_name[k], buf, len); /* no more fds to spare */
	} else {
		n = cgfs_read_held(u->fs, &f->fd[k], cg, uf_name[k], buf, len);
		u->held += (f->fd[k] >= 0) - held;
	}
	if (n == -ENODEV)
		files_release(u, f);
	if (n < 0)
		buf[0] = '\0';
	return n;
}

/* A *.pressure file's "some" and "full" totals (usec). */
static void pressure(struct drf_usage *u, size_t i, const char *cg, enum drf_usage_file k,
		     double *some, double *full)
{
	const char *v;
	char buf[512];
	size_t len;

	*some = *full = NAN;
	if (u->psi_missing || read_file(u, i, cg, k, buf, sizeof(buf)) < 0)
		return;
	if ((v = drf_kv_find(buf, "some", &len)))
		*some = drf_kv_field_double(v, len, "total");
	if ((v = drf_kv_find(buf, "full", &len)))
		*full = drf_kv_field_double(v, len, "total");
}

/* io.stat: the io-device's line (every device's, summed, without one). */
static void io_stat(struct drf_usage *u, size_t i, const struct drf_io_target *io, const char *cg,
		    struct drf_sample *s)
{
	static const enum drf_ctr ctr[] = { DRF_CTR_IO_RBYTES, DRF_CTR_IO_WBYTES, DRF_CTR_IO_RIOS,
					    DRF_CTR_IO_WIOS };
	double v[4];
	const struct drf_kv_want want[] = { { "rbytes", &v[0] }, { "wbytes", &v[1] },
					    { "rios", &v[2] }, { "wios", &v[3] } };
	char buf[16384];
	const char *pos = buf, *line;
	size_t len;

	if (read_file(u, i, cg, DRF_UF_IO_STAT, buf, sizeof(buf)) < 0)
		return;
	for (size_t k = 0; k < 4; k++)
		s->c[ctr[k]] = 0;
	while ((line = drf_kv_next_line(&pos, &len))) {
		unsigned maj, min;

		if (sscanf(line, "%u:%u", &maj, &min) != 2)
			continue;
		if (io && (maj != io->major || min != io->minor))
			continue;
		drf_kv_scan_fields(line, len, want, 4);
		for (size_t k = 0; k < 4; k++)
			if (!isnan(v[k]))
				s->c[ctr[k]] += v[k];
	}
}

/*
 * Which tenants' memory.events changed since the last sample, by inotify: wds
 * (sorted) and how many; SIZE_MAX: any may have (no watches, an event lost).
 */
static size_t events_changed(struct drf_usage *u, int *wds, size_t n)
{
	ssize_t got;

	if (!u->watch_tried) {
		u->wfd = cgfs_watch_init(u->fs);
		u->watching = u->wfd >= 0;
		u->watch_tried = true;
	}
	if (!u->watching)
		return SIZE_MAX;
	got = cgfs_watch_read(u->fs, u->wfd, wds, n);
	if (got < 0 || (got > 0 && wds[0] == -1))
		return SIZE_MAX;
	qsort(wds, (size_t)got, sizeof(*wds), cmp_int);
	return (size_t)got;
}

/* What the plan in force enforces on tenant i as hard limits: its knobs and the shaper. */
static void limits(const struct drf_usage_in *in, size_t i, double *limit)
{
	memcpy(limit, in->plan->limit[i], sizeof(in->plan->limit[i]));
	if (in->net && i < in->net->n) {
		const struct drf_shaper_tenant *t = &in->net->t[i];

		if (in->net->egress && t->want.ceil)
			limit[DRF_RES_NET] = (double)t->want.ceil * 8;
		if (in->net->ingress && t->want_map.in_rate)
			limit[DRF_RES_NET_IN] = (double)t->want_map.in_rate * 8;
	}
}

/* A probe map entry: its key and where its values are. */
struct keyed {
	uint64_t key;
	size_t j;
};

static int cmp_key(const void *a, const void *b)
{
	uint64_t x = ((const struct keyed *)a)->key, y = ((const struct keyed *)b)->key;

	return x < y ? -1 : x > y;
}

/*
 * Tenant i's cgroup id, when its files are not (all) held: a cgroup removed
 * and made again (by drfd or anyone) is another cgroup, with new counters
 * and new probe entries. With cpu.stat held, a removal fails its next read
 * (ENODEV), which brings this back.
 */
static void identify(struct drf_usage *u, size_t i, const char *cg)
{
	struct drf_usage_files *f = &u->files[i];
	uint64_t id;

	if (f->known)
		return;
	if (cgfs_id(u->fs, cg, &id) < 0)
		id = 0;
	if (id != u->cgid[i]) {
		if (u->cgid[i]) {
			tenant_use_init(&u->t[i]);
			u->map_dirty = true; /* the old id's entries go */
		}
		u->cgid[i] = id;
		u->in_map[i] = false; /* added (again) below: -EEXIST is fine */
		/* Files held on the cgroup before are another cgroup's. */
		for (int k = 0; k < DRF_NUF; k++) {
			u->held -= f->fd[k] >= 0;
			cgfs_release(u->fs, &f->fd[k]);
		}
	}
	/* A watch on memory.events: read when it changes, not each tick. */
	if (id && f->wd < 0 && u->watching) {
		int wd = cgfs_watch(u->fs, u->wfd, cg, "memory.events");

		f->wd = wd >= 0 ? wd : -1;
	}
}

/* memory.events' counters: read when its watch fired (or without one), else as last read. */
static void mem_events(struct drf_usage *u, size_t i, const char *cg, const int *wds,
		       size_t n_wds, struct drf_sample *s)
{
	struct drf_usage_files *f = &u->files[i];
	bool read = n_wds == SIZE_MAX || f->wd < 0 || isnan(f->events[0]) ||
		    (n_wds && bsearch(&f->wd, wds, n_wds, sizeof(*wds), cmp_int));
	char buf[512];

	if (read) {
		const struct drf_kv_want want[] = { { "high", &f->events[0] },
						    { "max", &f->events[1] },
						    { "oom_kill", &f->events[2] } };

		if (read_file(u, i, cg, DRF_UF_MEM_EVENTS, buf, sizeof(buf)) > 0)
			drf_kv_scan(buf, want, 3);
		else
			f->events[0] = f->events[1] = f->events[2] = NAN;
	}
	s->c[DRF_CTR_MEM_EVENTS_HIGH] = f->events[0];
	s->c[DRF_CTR_MEM_EVENTS_MAX] = f->events[1];
	s->c[DRF_CTR_MEM_EVENTS_OOM_KILL] = f->events[2];
}

/* One tenant's sample. */
static void sample_tenant(struct drf_usage *u, const struct drf_usage_in *in, size_t i,
			  const struct keyed *keys, const struct drf_probe_cpu *pcpu,
			  const struct drf_probe_io *pio, size_t n_keys, const int *wds,
			  size_t n_wds)
{
	struct drf_tenant_use *t = &u->t[i];
	const char *cg = in->cfg->tenants[i].cgroup;
	struct drf_sample s = { .t_us = in->now_us };
	double anon, file, inactive;
	const struct drf_kv_want cpu[] = { { "usage_usec", &s.c[DRF_CTR_CPU_USEC] },
					   { "throttled_usec", &s.c[DRF_CTR_CPU_THROTTLED_USEC] },
					   { "nr_throttled", &s.c[DRF_CTR_CPU_NR_THROTTLED] } };
	const struct drf_kv_want mem[] = { { "anon", &anon }, { "file", &file },
					   { "inactive_file", &inactive } };
	char buf[16384];
	ssize_t got;

	for (int c = 0; c < DRF_NCTR; c++)
		s.c[c] = NAN;
	t->gauge[DRF_GAUGE_MEM_CURRENT] = NAN;
	t->gauge[DRF_GAUGE_MEM_WORKING_SET] = NAN;
	identify(u, i, cg);
	/*
	 * No id: its cgroup is not there (yet: a slice under way), and none of
	 * its files would open. Measured again at the next tick.
	 */
	if (!u->cgid[i])
		goto absent;
	got = read_file(u, i, cg, DRF_UF_CPU_STAT, buf, sizeof(buf));
	if (got == -ENODEV) {
		/* Removed since the last tick, perhaps made again: which cgroup is it now? */
		identify(u, i, cg);
		got = read_file(u, i, cg, DRF_UF_CPU_STAT, buf, sizeof(buf));
	}
	if (got >= 0)
		drf_kv_scan(buf, cpu, 3);
	if (read_file(u, i, cg, DRF_UF_MEM_CURRENT, buf, sizeof(buf)) > 0)
		t->gauge[DRF_GAUGE_MEM_CURRENT] = strtod(buf, NULL);
	if (read_file(u, i, cg, DRF_UF_MEM_STAT, buf, sizeof(buf)) > 0) {
		drf_kv_scan(buf, mem, 3);
		t->gauge[DRF_GAUGE_MEM_WORKING_SET] = anon + file - inactive;
	}
	mem_events(u, i, cg, wds, n_wds, &s);
	if (in->cfg->capacity[DRF_RES_IO_READ] > 0 || in->cfg->capacity[DRF_RES_IO_WRITE] > 0)
		io_stat(u, i, in->io, cg, &s);
	if (in->pressure) {
		pressure(u, i, cg, DRF_UF_CPU_PRESSURE, &s.c[DRF_CTR_PSI_CPU_SOME_USEC],
			 &s.c[DRF_CTR_PSI_CPU_FULL_USEC]);
		pressure(u, i, cg, DRF_UF_MEM_PRESSURE, &s.c[DRF_CTR_PSI_MEMORY_SOME_USEC],
			 &s.c[DRF_CTR_PSI_MEMORY_FULL_USEC]);
		pressure(u, i, cg, DRF_UF_IO_PRESSURE, &s.c[DRF_CTR_PSI_IO_SOME_USEC],
			 &s.c[DRF_CTR_PSI_IO_FULL_USEC]);
	}
	if (in->pressure && i == 0 && isnan(s.c[DRF_CTR_PSI_CPU_SOME_USEC]) &&
	    isnan(s.c[DRF_CTR_PSI_MEMORY_SOME_USEC]) && !isnan(s.c[DRF_CTR_CPU_USEC]) &&
	    !u->psi_missing) {
		/* The cgroup is there but has no pressure files: a kernel without PSI. */
		u->psi_missing = true;
		drf_log(u->log, LOG_NOTICE, "no pressure files (*.pressure) in '%s': this kernel "
					    "has no PSI (psi=1 on its command line enables it)",
			cg);
	}
	/* Its id is its cgroup's for as long as cpu.stat stays open (ENODEV closes it). */
	u->files[i].known = u->cgid[i] && u->files[i].fd[DRF_UF_CPU_STAT] >= 0;
absent:
	if (u->probes && u->cgid[i] && u->in_map[i]) {
		struct keyed want = { .key = u->cgid[i] };
		const struct keyed *k = n_keys ? bsearch(&want, keys, n_keys, sizeof(*keys), cmp_key)
					       : NULL;

		if (k) {
			size_t j = k->j;

			s.c[DRF_CTR_ONCPU_NS] = (double)pcpu[j].oncpu_ns;
			s.c[DRF_CTR_RUNQ_NS] = (double)pcpu[j].runq_ns;
			s.c[DRF_CTR_RUNQ_COUNT] = (double)pcpu[j].runq_count;
			s.c[DRF_CTR_PROBE_RBYTES] = (double)pio[j].rbytes;
			s.c[DRF_CTR_PROBE_WBYTES] = (double)pio[j].wbytes;
			s.c[DRF_CTR_PROBE_RREQS] = (double)pio[j].rreqs;
			s.c[DRF_CTR_PROBE_WREQS] = (double)pio[j].wreqs;
			s.c[DRF_CTR_PROBE_LAT_NS] = (double)pio[j].lat_ns;
			s.c[DRF_CTR_PROBE_DONE] = (double)pio[j].done;
			memcpy(t->runq_hist, pcpu[j].runq_hist, sizeof(t->runq_hist));
			memcpy(t->io_lat_hist, pio[j].lat_hist, sizeof(t->io_lat_hist));
		} else {
			u->in_map[i] = false; /* gone (reset from outside): added again below */
		}
	}
	/* Its entries, counting from now on: read from the next tick. */
	if (u->probes && u->cgid[i] && !u->in_map[i]) {
		int r = u->probe->add(u->probe_ctx, u->cgid[i]);

		u->in_map[i] = r == 0 || r == -EEXIST;
		if (r == 0)
			u->gen++; /* tasks already in its cgroup had it cached as no tenant's */
	}
	if (in->net && i < in->net->n && in->net->t[i].cgid) {
		const struct drf_net_counters *n = &in->net->t[i].cnt;

		s.c[DRF_CTR_NET_TX_BYTES] = (double)n->eg_bytes;
		s.c[DRF_CTR_NET_TX_PACKETS] = (double)n->eg_packets;
		s.c[DRF_CTR_NET_RX_BYTES] = (double)n->in_bytes;
		s.c[DRF_CTR_NET_RX_PACKETS] = (double)n->in_packets;
		s.c[DRF_CTR_NET_RX_DROPPED] = (double)n->in_dropped;
		s.c[DRF_CTR_NET_RX_MARKED] = (double)n->in_marked;
	}
	for (int r = 0; r < DRF_NRES; r++) {
		t->declared[r] = drf_knobs_declared(in->cfg, i, r);
		t->alloc[r] = in->plan->result.shares[i].alloc[r];
	}
	t->weight = in->cfg->tenants[i].weight;
	limits(in, i, t->limit);
	drf_use_push(t, &s, u->probes);
	drf_use_assess(t, in->cfg->capacity);
}

/* The sample in progress dropped (its shared reads freed). */
static void sample_end(struct drf_usage *u)
{
	free(u->order);
	free(u->keys);
	free(u->pcpu);
	free(u->pio);
	u->order = NULL;
	u->keys = NULL;
	u->pcpu = NULL;
	u->pio = NULL;
	u->n_keys = 0;
	u->sampling = false;
}

void drf_usage_sample_begin(struct drf_usage *u, const struct drf_usage_in *in)
{
	struct keyed *order = NULL;

	sample_end(u);
	if (u->n != in->cfg->n_tenants) {
		struct drf_usage_tenants st;

		if (drf_usage_stage(u, in->cfg, &st) < 0)
			return;
		drf_usage_commit(u, &st);
	}
	if (u->probes) {
		if (u->probe->read(u->probe_ctx, &u->keys, &u->pcpu, &u->pio, &u->n_keys) < 0) {
			u->keys = NULL;
			u->n_keys = 0;
		}
		/* Sorted by key for the tenants' lookups. */
		order = malloc((u->n_keys + 1) * sizeof(*order));
		if (!order)
			u->n_keys = 0;
		for (size_t j = 0; j < u->n_keys; j++)
			order[j] = (struct keyed){ .key = u->keys[j], .j = j };
		if (u->n_keys)
			qsort(order, u->n_keys, sizeof(*order), cmp_key);
	}
	u->order = order;
	u->n_wds = events_changed(u, u->wds, sizeof(u->wds) / sizeof(u->wds[0]));
	u->pos = 0;
	u->sampling = true;
}

int drf_usage_sample_step(struct drf_usage *u, const struct drf_usage_in *in, size_t n)
{
	size_t m = 0;
	double *x;

	if (!u->sampling)
		return 0;
	for (size_t end = n > u->n - u->pos ? u->n : u->pos + n; u->pos < end; u->pos++)
		sample_tenant(u, in, u->pos, u->order, u->pcpu, u->pio, u->n_keys, u->wds,
			      u->n_wds);
	if (u->pos < u->n)
		return 1;
	/* After the tenants' entries changed: a new generation expires the tasks' caches. */
	if (u->probes) {
		probes_sweep(u);
		probes_configure(u, in);
	}
	sample_end(u);
	u->at_us = in->now_us;
	u->samples++;
	/* Jain's index over weighted dominant shares, of allocation and of use. */
	x = calloc(u->n + 1, sizeof(*x));
	if (!x)
		return 0;
	for (size_t i = 0; i < u->n; i++)
		x[i] = u->t[i].dominant_alloc / u->t[i].weight;
	u->jain_alloc = drf_jain_index(x, u->n);
	for (size_t i = 0; i < u->n; i++)
		if (!isnan(u->t[i].dominant_use))
			x[m++] = u->t[i].dominant_use / u->t[i].weight;
	u->jain_use = drf_jain_index(x, m);
	free(x);
	/* Weights without BFQ or io.cost: io is shared by io.max caps only. */
	u->no_effect = 0;
	if (in->io && in->io->weights == DRF_IO_WEIGHTS_NONE && in->cfg->mode == DRF_MODE_SHARE &&
	    (in->cfg->capacity[DRF_RES_IO_READ] > 0 || in->cfg->capacity[DRF_RES_IO_WRITE] > 0)) {
		for (int r = DRF_RES_IO_READ; r <= DRF_RES_IO_WRITE; r++) {
			u->no_effect |= 1u << r;
			snprintf(u->no_effect_why[r], sizeof(u->no_effect_why[r]),
				 "io weights have no effect on %u:%u (neither BFQ nor io.cost): "
				 "io is shared by io.max caps at the allocation instead",
				 in->io->major, in->io->minor);
		}
	}
	return 0;
}

void drf_usage_sample(struct drf_usage *u, const struct drf_usage_in *in)
{
	drf_usage_sample_begin(u, in);
	while (drf_usage_sample_step(u, in, SIZE_MAX) > 0)
		;
}
