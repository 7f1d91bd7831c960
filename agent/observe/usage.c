// SPDX-License-Identifier: MIT
/* The daemon's measurements (see usage.h). */
#include "usage.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "knobs.h"
#include "log.h"

_Static_assert(DRF_HIST_BUCKETS == DRF_PROBE_HIST, "use.h and probe.h disagree on histograms");

void drf_usage_init(struct drf_usage *u, const struct cgfs *fs, const struct drf_logger *log)
{
	memset(u, 0, sizeof(*u));
	u->fs = fs;
	u->log = log;
}

void drf_usage_free(struct drf_usage *u)
{
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

/* An open-addressing index of (name, cgroup) -> position in u's tenants. */
static uint64_t hash2(const char *a, const char *b)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (; *a; a++)
		h = (h ^ (unsigned char)*a) * 0x100000001b3ULL;
	h = (h ^ '/') * 0x100000001b3ULL;
	for (; *b; b++)
		h = (h ^ (unsigned char)*b) * 0x100000001b3ULL;
	return h;
}

void drf_usage_unstage(struct drf_usage_tenants *st)
{
	for (size_t i = 0; st->name && st->cgroup && i < st->n; i++) {
		free(st->name[i]);
		free(st->cgroup[i]);
	}
	free(st->name);
	free(st->cgroup);
	free(st->t);
	free(st->cgid);
	free(st->in_map);
	memset(st, 0, sizeof(*st));
}

int drf_usage_stage(const struct drf_usage *u, const struct drf_config *c,
		     struct drf_usage_tenants *ret)
{
	size_t n = c->n_tenants, cap = 16, *slot = NULL;
	struct drf_usage_tenants st = { .n = n };

	st.t = calloc(n + 1, sizeof(*st.t));
	st.name = calloc(n + 1, sizeof(*st.name));
	st.cgroup = calloc(n + 1, sizeof(*st.cgroup));
	st.cgid = calloc(n + 1, sizeof(*st.cgid));
	st.in_map = calloc(n + 1, sizeof(*st.in_map));
	while (cap < 2 * u->n)
		cap *= 2;
	slot = calloc(cap, sizeof(*slot));
	if (!st.t || !st.name || !st.cgroup || !st.cgid || !st.in_map || !slot)
		goto nomem;
	for (size_t j = 0; j < u->n; j++) {
		size_t h = (size_t)hash2(u->name[j], u->cgroup[j]) & (cap - 1);

		while (slot[h])
			h = (h + 1) & (cap - 1);
		slot[h] = j + 1;
	}
	for (size_t i = 0; i < n; i++) {
		const struct drf_tenant *ct = &c->tenants[i];
		size_t h = (size_t)hash2(ct->name, ct->cgroup) & (cap - 1), j = 0;

		st.name[i] = strdup(ct->name);
		st.cgroup[i] = strdup(ct->cgroup);
		if (!st.name[i] || !st.cgroup[i])
			goto nomem;
		/* Its history, if it was there before in the same cgroup. */
		for (; slot[h]; h = (h + 1) & (cap - 1)) {
			j = slot[h];
			if (strcmp(u->name[j - 1], ct->name) == 0 &&
			    strcmp(u->cgroup[j - 1], ct->cgroup) == 0)
				break;
			j = 0;
		}
		if (j) {
			st.t[i] = u->t[j - 1];
			st.cgid[i] = u->cgid[j - 1];
			st.in_map[i] = u->in_map[j - 1];
		} else {
			tenant_use_init(&st.t[i]);
		}
	}
	free(slot);
	*ret = st;
	return 0;
nomem:
	free(slot);
	drf_usage_unstage(&st);
	return -ENOMEM;
}

void drf_usage_commit(struct drf_usage *u, struct drf_usage_tenants *st)
{
	struct drf_usage_tenants old = {
		.n = u->n, .t = u->t, .name = u->name, .cgroup = u->cgroup, .cgid = u->cgid,
		.in_map = u->in_map,
	};

	drf_usage_unstage(&old);
	u->t = st->t;
	u->name = st->name;
	u->cgroup = st->cgroup;
	u->cgid = st->cgid;
	u->in_map = st->in_map;
	u->n = st->n;
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

/* The value after "key " in a flat-keyed file (cpu.stat, memory.stat, memory.events). */
static double flat_key(const char *buf, const char *key)
{
	size_t len = strlen(key);

	for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, len) == 0 && p[len] == ' ')
			return strtod(p + len + 1, NULL);
	return NAN;
}

static ssize_t read_file(const struct drf_usage *u, const char *cg, const char *file, char *buf, size_t len)
{
	ssize_t n = cgfs_read(u->fs, cg, file, buf, len);

	if (n < 0)
		buf[0] = '\0';
	return n;
}

/* A *.pressure file's "some" and "full" totals (usec). */
static void pressure(const struct drf_usage *u, const char *cg, const char *file, double *some, double *full)
{
	char buf[512];
	const char *p;

	*some = *full = NAN;
	if (u->psi_missing || read_file(u, cg, file, buf, sizeof(buf)) < 0) {
		return;
	}
	if ((p = strstr(buf, "some ")) && (p = strstr(p, "total=")))
		*some = strtod(p + 6, NULL);
	if ((p = strstr(buf, "full ")) && (p = strstr(p, "total=")))
		*full = strtod(p + 6, NULL);
}

/* io.stat: the io-device's line (every device's, summed, without one). */
static void io_stat(const struct drf_usage *u, const struct drf_io_target *io, const char *cg,
		    struct drf_sample *s)
{
	char buf[16384];
	static const struct {
		const char *key;
		enum drf_ctr c;
	} keys[] = { { "rbytes=", DRF_CTR_IO_RBYTES }, { "wbytes=", DRF_CTR_IO_WBYTES },
		     { "rios=", DRF_CTR_IO_RIOS }, { "wios=", DRF_CTR_IO_WIOS } };

	if (read_file(u, cg, "io.stat", buf, sizeof(buf)) < 0)
		return;
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		s->c[keys[k].c] = 0;
	for (char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		unsigned maj, min;

		if (sscanf(line, "%u:%u", &maj, &min) != 2)
			continue;
		if (io && (maj != io->major || min != io->minor))
			continue;
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			const char *eol = strchr(line, '\n'), *p = strstr(line, keys[k].key);

			if (p && (!eol || p < eol))
				s->c[keys[k].c] += strtod(p + strlen(keys[k].key), NULL);
		}
	}
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

/* One tenant's sample. */
static void sample_tenant(struct drf_usage *u, const struct drf_usage_in *in, size_t i,
			  const struct keyed *keys,
			  const struct drf_probe_cpu *pcpu, const struct drf_probe_io *pio,
			  size_t n_keys)
{
	struct drf_tenant_use *t = &u->t[i];
	const char *cg = in->cfg->tenants[i].cgroup;
	struct drf_sample s = { .t_us = in->now_us };
	char buf[16384];
	uint64_t id;

	for (int c = 0; c < DRF_NCTR; c++)
		s.c[c] = NAN;
	/*
	 * Its cgroup's id, each tick: a cgroup removed and made again (by drfd or
	 * anyone) is another cgroup, with new counters and new probe entries.
	 */
	if (cgfs_id(u->fs, cg, &id) < 0)
		id = 0;
	if (id != u->cgid[i]) {
		if (u->cgid[i]) {
			tenant_use_init(t);
			u->map_dirty = true; /* the old id's entries go */
		}
		u->cgid[i] = id;
		u->in_map[i] = false; /* added (again) below: -EEXIST is fine */
	}
	if (read_file(u, cg, "cpu.stat", buf, sizeof(buf)) >= 0) {
		s.c[DRF_CTR_CPU_USEC] = flat_key(buf, "usage_usec");
		s.c[DRF_CTR_CPU_THROTTLED_USEC] = flat_key(buf, "throttled_usec");
		s.c[DRF_CTR_CPU_NR_THROTTLED] = flat_key(buf, "nr_throttled");
	}
	t->gauge[DRF_GAUGE_MEM_CURRENT] = NAN;
	t->gauge[DRF_GAUGE_MEM_WORKING_SET] = NAN;
	if (read_file(u, cg, "memory.current", buf, sizeof(buf)) > 0)
		t->gauge[DRF_GAUGE_MEM_CURRENT] = strtod(buf, NULL);
	if (read_file(u, cg, "memory.stat", buf, sizeof(buf)) > 0)
		t->gauge[DRF_GAUGE_MEM_WORKING_SET] = flat_key(buf, "anon") + flat_key(buf, "file") -
						       flat_key(buf, "inactive_file");
	if (read_file(u, cg, "memory.events", buf, sizeof(buf)) > 0) {
		s.c[DRF_CTR_MEM_EVENTS_HIGH] = flat_key(buf, "high");
		s.c[DRF_CTR_MEM_EVENTS_MAX] = flat_key(buf, "max");
		s.c[DRF_CTR_MEM_EVENTS_OOM_KILL] = flat_key(buf, "oom_kill");
	}
	if (in->cfg->capacity[DRF_RES_IO_READ] > 0 || in->cfg->capacity[DRF_RES_IO_WRITE] > 0)
		io_stat(u, in->io, cg, &s);
	pressure(u, cg, "cpu.pressure", &s.c[DRF_CTR_PSI_CPU_SOME_USEC], &s.c[DRF_CTR_PSI_CPU_FULL_USEC]);
	pressure(u, cg, "memory.pressure", &s.c[DRF_CTR_PSI_MEMORY_SOME_USEC],
		 &s.c[DRF_CTR_PSI_MEMORY_FULL_USEC]);
	pressure(u, cg, "io.pressure", &s.c[DRF_CTR_PSI_IO_SOME_USEC], &s.c[DRF_CTR_PSI_IO_FULL_USEC]);
	if (i == 0 && isnan(s.c[DRF_CTR_PSI_CPU_SOME_USEC]) && isnan(s.c[DRF_CTR_PSI_MEMORY_SOME_USEC]) &&
	    !isnan(s.c[DRF_CTR_CPU_USEC]) && !u->psi_missing) {
		/* The cgroup is there but has no pressure files: a kernel without PSI. */
		u->psi_missing = true;
		drf_log(u->log, LOG_NOTICE, "no pressure files (*.pressure) in '%s': this kernel "
					    "has no PSI (psi=1 on its command line enables it)",
			cg);
	}
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

void drf_usage_sample(struct drf_usage *u, const struct drf_usage_in *in)
{
	uint64_t *keys = NULL;
	struct drf_probe_cpu *pcpu = NULL;
	struct drf_probe_io *pio = NULL;
	struct keyed *order = NULL;
	size_t n_keys = 0, m = 0;
	double *x;

	if (u->n != in->cfg->n_tenants) {
		struct drf_usage_tenants st;

		if (drf_usage_stage(u, in->cfg, &st) < 0)
			return;
		drf_usage_commit(u, &st);
	}
	if (u->probes) {
		if (u->probe->read(u->probe_ctx, &keys, &pcpu, &pio, &n_keys) < 0) {
			keys = NULL;
			n_keys = 0;
		}
		/* Sorted by key for the tenants' lookups. */
		order = malloc((n_keys + 1) * sizeof(*order));
		if (!order)
			n_keys = 0;
		for (size_t j = 0; j < n_keys; j++)
			order[j] = (struct keyed){ .key = keys[j], .j = j };
		if (n_keys)
			qsort(order, n_keys, sizeof(*order), cmp_key);
	}
	for (size_t i = 0; i < u->n; i++)
		sample_tenant(u, in, i, order, pcpu, pio, n_keys);
	free(order);
	free(keys);
	/* After the tenants' entries changed: a new generation expires the tasks' caches. */
	if (u->probes) {
		probes_sweep(u);
		probes_configure(u, in);
	}
	free(pcpu);
	free(pio);
	u->at_us = in->now_us;
	u->samples++;
	/* Jain's index over weighted dominant shares, of allocation and of use. */
	x = calloc(u->n + 1, sizeof(*x));
	if (!x)
		return;
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
}
