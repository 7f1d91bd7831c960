// SPDX-License-Identifier: MIT
/* Online DRF in the daemon (see online.h). */
#include "online.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demand.h"
#include "log.h"
#include "statedir.h"
#include "vec.h"

void drf_online_init(struct drf_online *o, const char *path, bool dry_run,
		     const struct drf_logger *log)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->path, sizeof(o->path), "%s", path ? path : "");
	o->dry_run = dry_run;
	o->log = log;
}

void drf_online_free(struct drf_online *o)
{
	free(o->eff);
	o->eff = NULL;
	o->cap = 0;
}

/* Tenant i's declared demand of r capped at capacity: the bound of its effective demand. */
static double bound(const struct drf_declared *decl, size_t i, int r)
{
	const struct drf_demand *dm = &decl->demands[i];
	double c = decl->problem.capacity[r];

	if (!(c > 0) || !(dm->shape[r] > 0))
		return 0;
	return fmin(dm->shape[r] * dm->max_units, c);
}

const double (*drf_online_effective(struct drf_online *o, const struct drf_declared *decl,
				    const struct drf_tenant_use *t))[DRF_NRES]
{
	size_t n = decl->cfg.n_tenants;

	if (!decl->cfg.observed)
		return NULL;
	if (DRF_VEC_GROW(o->eff, &o->cap, n + 1) < 0) {
		drf_log(o->log, LOG_ERR, "observed demand: out of memory; the declared demands "
					 "are planned");
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		for (int r = 0; r < DRF_NRES; r++)
			o->eff[i][r] = t && t[i].dem.started ? fmin(t[i].dem.eff[r], bound(decl, i, r))
							     : bound(decl, i, r);
	return (const double(*)[DRF_NRES])o->eff;
}

void drf_online_off(struct drf_online *o, struct drf_usage *u)
{
	/* A later switch back starts from the declared demands, not stale ones. */
	for (size_t i = 0; i < u->n; i++)
		u->t[i].dem.started = false;
	if (!o->dry_run && o->path[0])
		unlink(o->path);
}

bool drf_online_step(struct drf_online *o, struct drf_usage *u, const struct drf_declared *decl,
		     const struct drf_plan *plan)
{
	bool changed = false;

	if (!decl->cfg.observed || u->n != decl->cfg.n_tenants)
		return false;
	o->steps++;
	for (size_t i = 0; i < u->n; i++) {
		struct drf_tenant_use *t = &u->t[i];
		struct drf_dem_input in;
		double before[DRF_NRES];
		bool was;

		for (int r = 0; r < DRF_NRES; r++) {
			in.part[r] = decl->problem.capacity[r] > 0;
			in.bound[r] = bound(decl, i, r);
			in.alloc[r] = plan->result.shares[i].alloc[r];
			in.limit[r] = t->limit[r];
			in.use[r] = t->use_tick[r];
		}
		in.working_set = t->gauge[DRF_GAUGE_MEM_WORKING_SET];
		in.pressured = t->dem_pressured = drf_dem_pressure(t);
		in.capped = drf_dem_capped(t);
		memcpy(before, t->dem.eff, sizeof(before));
		was = t->dem.started;
		if (!drf_dem_update(&t->dem, &in, o->steps))
			continue;
		changed = true;
		for (int r = 0; was && r < DRF_NRES; r++) {
			char q0[32], q1[32], qu[32], qa[32];
			enum drf_unit unit = drf_res_unit(r);

			if (t->dem.eff[r] == before[r])
				continue;
			drf_format_quantity(before[r], unit, q0, sizeof(q0));
			drf_format_quantity(t->dem.eff[r], unit, q1, sizeof(q1));
			if (isnan(in.use[r]))
				snprintf(qu, sizeof(qu), "?");
			else
				drf_format_quantity(in.use[r], unit, qu, sizeof(qu));
			drf_format_quantity(in.alloc[r], unit, qa, sizeof(qa));
			drf_log(o->log, LOG_INFO, "tenant '%s': effective %s demand %s -> %s (%s: used "
						  "%s of %s allocated%s)", decl->cfg.tenants[i].name,
				drf_res_name(r), q0, q1, drf_dem_why_name(t->dem.changed_why[r]), qu,
				qa, in.pressured & (1u << r) ? ", under pressure" : "");
		}
	}
	if (!changed)
		return false;
	o->replans++;
	o->last_replan_step = o->steps;
	return true;
}

void drf_online_save(struct drf_online *o, const struct drf_usage *u,
		     const struct drf_declared *decl)
{
	char why[1024], *text = NULL;
	const char *path = o->path;
	const char *name;
	size_t len = 0;
	FILE *f;
	int dfd, r = 0;

	if (o->dry_run || !decl->cfg.observed || !path[0])
		return;
	f = open_memstream(&text, &len);
	if (!f) {
		r = -ENOMEM;
		goto fail;
	}
	fprintf(f, "# drfd's effective demands (demand = observed), per tenant: %s", "");
	for (int x = 0; x < DRF_NRES; x++)
		fprintf(f, " %s", drf_res_name(x));
	fputs("\n# Written by drfd; do not edit.\ndrfd-demand 1\n", f);
	for (size_t i = 0; i < u->n; i++) {
		const struct drf_dem_state *s = &u->t[i].dem;

		if (!s->started)
			continue;
		fprintf(f, "%s", u->name[i]);
		for (int x = 0; x < DRF_NRES; x++)
			fprintf(f, " %.17g", s->eff[x]);
		fputc('\n', f);
	}
	if (fclose(f) != 0)
		r = -ENOMEM;
	/* Beneath the checked state dir, replaced atomically (synced file and directory). */
	dfd = r < 0 ? r : drf_statedir_open_parent(path, true, &name, why, sizeof(why));
	if (dfd >= 0) {
		r = drf_replace_at(dfd, name, text, len, 0644);
		close(dfd);
	} else {
		r = dfd;
	}
	free(text);
	if (r == 0) {
		o->save_failed = false;
		return;
	}
fail:
	if (!o->save_failed)
		drf_log(o->log, LOG_WARNING, "cannot write '%s': %s; after a restart, the "
					     "effective demands start again from the declared ones",
			path, strerror(-r));
	o->save_failed = true;
}

void drf_online_restore(struct drf_online *o, struct drf_usage *u,
			const struct drf_declared *decl)
{
	char line[1024], name[256], why[1024];
	const char *path = o->path;
	size_t restored = 0, bad = 0;
	const char *file;
	bool header = false;
	int ln = 0, dfd, fd;
	FILE *f;

	if (!decl->cfg.observed || !path[0])
		return;
	dfd = drf_statedir_open_parent(path, false, &file, why, sizeof(why));
	fd = dfd < 0 ? dfd : drf_at_open(dfd, file, O_RDONLY | O_NONBLOCK, 0);
	if (dfd >= 0)
		close(dfd);
	f = fd >= 0 ? fdopen(fd, "re") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		if (fd != -ENOENT)
			drf_log(o->log, LOG_WARNING, "cannot read '%s': %s; the effective demands "
						     "start from the declared ones",
				path, strerror(fd < 0 ? -fd : errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		double v[DRF_NRES];
		size_t i;
		int used = 0;
		char *p;

		ln++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (!header) {
			header = strcmp(line, "drfd-demand 1\n") == 0;
			if (!header)
				break;
			continue;
		}
		if (sscanf(line, "%255s%n", name, &used) != 1)
			goto bad;
		p = line + used;
		for (int x = 0; x < DRF_NRES; x++) {
			char *end;

			v[x] = strtod(p, &end);
			if (end == p || !isfinite(v[x]) || v[x] < 0)
				goto bad;
			p = end;
		}
		for (i = 0; i < u->n; i++)
			if (strcmp(u->name[i], name) == 0)
				break;
		if (i == u->n)
			continue; /* no longer a tenant */
		{
			struct drf_dem_state *s = &u->t[i].dem;

			memset(s, 0, sizeof(*s));
			s->started = true;
			for (int x = 0; x < DRF_NRES; x++) {
				s->eff[x] = fmin(v[x], bound(decl, i, x));
				s->why[x] = s->changed_why[x] = DRF_DEM_WHY_RESTORED;
			}
		}
		restored++;
		continue;
bad:
		if (!bad)
			drf_log(o->log, LOG_WARNING, "%s:%d: not a tenant and %d demands; skipped",
				path, ln, DRF_NRES);
		bad++;
	}
	fclose(f);
	if (!header) {
		drf_log(o->log, LOG_WARNING, "%s: not a drfd-demand 1 file; the effective demands "
					     "start from the declared ones", path);
		return;
	}
	if (restored)
		drf_log(o->log, LOG_NOTICE, "restored the effective demands of %zu tenants from "
					    "'%s'", restored, path);
}
