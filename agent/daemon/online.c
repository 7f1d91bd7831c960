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

#include "daemon.h"
#include "demand.h"
#include "log.h"
#include "statedir.h"

static int demand_path(const struct drfd *d, char *buf, size_t len);

const struct drf_enforced *drfd_in_force(const struct drfd *d)
{
	return d->online.active ? &d->online.eff : &d->plan;
}

void drfd_online_free(struct drf_online *o)
{
	free(o->eff.demands);
	free(o->eff.knobs);
	drf_inner_free(o->eff.inner, o->eff.n_inner);
	if (o->engine_ready)
		drf_engine_free(&o->engine);
	memset(o, 0, sizeof(*o));
}

/* Tenant i's declared demand of r capped at capacity: the bound of its effective demand. */
static double bound(const struct drfd *d, size_t i, int r)
{
	const struct drf_demand *dm = &d->plan.demands[i];
	double c = d->plan.problem.capacity[r];

	if (!(c > 0) || !(dm->shape[r] > 0))
		return 0;
	return fmin(dm->shape[r] * dm->max_units, c);
}

/* Allocation and knobs for the effective demands in d->use; 0 or -errno (nothing changed). */
static int replan(struct drfd *d)
{
	struct drf_online *o = &d->online;
	const struct drf_config *c = &d->plan.cfg;
	size_t n = c->n_tenants;
	struct drf_inner *inner = NULL;
	size_t n_inner = 0;
	struct drf_result res;
	int r;

	if (d->use.n != n)
		return -ESTALE;
	if (!o->engine_ready) {
		r = drf_engine_init(&o->engine);
		if (r < 0)
			return r;
		o->engine_ready = true;
	}
	if (o->cap < n + 1) {
		struct drf_demand *dm = realloc(o->eff.demands, (n + 1) * sizeof(*dm));
		struct drf_knobs *k;

		if (!dm)
			return -ENOMEM;
		o->eff.demands = dm;
		k = realloc(o->eff.knobs, (n + 1) * sizeof(*k));
		if (!k)
			return -ENOMEM;
		o->eff.knobs = k;
		o->cap = n + 1;
	}
	for (size_t i = 0; i < n; i++) {
		const struct drf_dem_state *s = &d->use.t[i].dem;
		struct drf_demand *dm = &o->eff.demands[i];

		dm->weight = d->plan.demands[i].weight;
		dm->max_units = 1;
		for (int x = 0; x < DRF_NRES; x++)
			dm->shape[x] = s->started ? fmin(s->eff[x], bound(d, i, x)) : bound(d, i, x);
	}
	o->eff.problem = (struct drf_problem){ .n = n, .demands = o->eff.demands };
	memcpy(o->eff.problem.capacity, d->plan.problem.capacity, sizeof(o->eff.problem.capacity));
	r = drf_engine_allocate(&o->engine, &o->eff.problem, c->policy, &res);
	if (r < 0)
		return r;
	r = drf_knobs_compute(c, &o->eff.problem, &res, d->has_io ? &d->io : NULL, o->eff.knobs,
			      &inner, &n_inner);
	if (r < 0)
		return r;
	if (c->mode == DRF_MODE_LIMIT)
		for (size_t i = 0; i < n; i++) {
			struct drf_knobs *k = &o->eff.knobs[i];

			drf_knobs_memory_at_least(k, DRF_KNOB_MEMORY_MAX,
						  d->plan.result.shares[i].alloc[DRF_RES_MEMORY]);
			drf_knobs_memory_at_least(k, DRF_KNOB_MEMORY_HIGH,
						  o->eff.demands[i].shape[DRF_RES_MEMORY]);
		}
	drf_inner_free(o->eff.inner, o->eff.n_inner);
	o->eff.inner = inner;
	o->eff.n_inner = n_inner;
	o->eff.result = res;
	o->eff.cfg = *c;
	o->eff.loaded = false; /* never drf_enforced_free()d: its parts are the plan's or ours */
	return 0;
}

/* Sets the backends to the plan in force. */
static int apply(struct drfd *d)
{
	const struct drf_enforced *e = drfd_in_force(d);
	int r;

	r = drf_reconciler_set(&d->rc, &d->plan.cfg, e->knobs, e->inner, e->n_inner);
	if (r == 0 && d->has_net)
		r = drf_shaper_set(&d->net, e, d->plan.cfg.net_replace_qdisc);
	return r;
}

int drfd_online_plan(struct drfd *d)
{
	struct drf_online *o = &d->online;
	int r;

	if (!d->plan.cfg.observed) {
		char path[4200];

		if (!o->active)
			return 0;
		/* Off: a later switch back starts from the declared demands, not stale ones. */
		for (size_t i = 0; i < d->use.n; i++)
			d->use.t[i].dem.started = false;
		if (!d->dry_run && demand_path(d, path, sizeof(path)) == 0)
			unlink(path);
		o->active = false;
		return apply(d);
	}
	r = replan(d);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "observed demand: cannot re-allocate: %s; the declared "
					 "plan is in force", strerror(-r));
		if (o->active) {
			o->active = false;
			apply(d);
		}
		return r;
	}
	o->active = true;
	r = apply(d);
	if (r < 0) {
		drf_log(d->log, LOG_ERR, "observed demand: cannot set the effective plan: %s; the "
					 "declared plan is in force", strerror(-r));
		o->active = false;
		apply(d);
	}
	return r;
}

bool drfd_online_step(struct drfd *d)
{
	struct drf_online *o = &d->online;
	const struct drf_enforced *e;
	bool changed = false;

	if (!d->plan.cfg.observed || d->use.n != d->plan.cfg.n_tenants)
		return false;
	o->steps++;
	e = drfd_in_force(d);
	for (size_t i = 0; i < d->use.n; i++) {
		struct drf_tenant_use *t = &d->use.t[i];
		struct drf_dem_input in;
		double before[DRF_NRES];
		bool was;

		for (int r = 0; r < DRF_NRES; r++) {
			in.part[r] = d->plan.problem.capacity[r] > 0;
			in.bound[r] = bound(d, i, r);
			in.alloc[r] = e->result.shares[i].alloc[r];
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
			drf_log(d->log, LOG_INFO, "tenant '%s': effective %s demand %s -> %s (%s: "
						  "used %s of %s allocated%s)",
				d->plan.cfg.tenants[i].name, drf_res_name(r), q0, q1,
				drf_dem_why_name(t->dem.changed_why[r]), qu, qa,
				in.pressured & (1u << r) ? ", under pressure" : "");
		}
	}
	if (!changed && o->active)
		return false;
	if (drfd_online_plan(d) < 0)
		return false;
	o->replans++;
	o->last_replan_step = o->steps;
	drfd_online_save(d);
	return true;
}

/* STATE_DIR/ROOT.demand: the state file's path with .demand for .state. */
static int demand_path(const struct drfd *d, char *buf, size_t len)
{
	size_t n = strlen(d->state_path);

	if (!d->state_path[0] || n < 6 || strcmp(d->state_path + n - 6, ".state") != 0 ||
	    n + 2 > len)
		return -ENOENT;
	snprintf(buf, len, "%.*s.demand", (int)(n - 6), d->state_path);
	return 0;
}

void drfd_online_save(struct drfd *d)
{
	char path[4200], why[1024], *text = NULL;
	const char *name;
	size_t len = 0;
	FILE *f;
	int dfd, r = 0;

	if (d->dry_run || !d->plan.cfg.observed || demand_path(d, path, sizeof(path)) < 0)
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
	for (size_t i = 0; i < d->use.n; i++) {
		const struct drf_dem_state *s = &d->use.t[i].dem;

		if (!s->started)
			continue;
		fprintf(f, "%s", d->use.name[i]);
		for (int x = 0; x < DRF_NRES; x++)
			fprintf(f, " %.17g", s->eff[x]);
		fputc('\n', f);
	}
	if (fclose(f) != 0)
		r = -ENOMEM;
	/* Beneath the checked state dir, replaced atomically (synced file and directory). */
	dfd = r < 0 ? r : drf_statedir_open_parent(path, true, &name, why, sizeof(why));
	if (dfd >= 0) {
		r = drf_at_replace(dfd, name, text, len, 0644);
		close(dfd);
	} else {
		r = dfd;
	}
	free(text);
	if (r == 0) {
		d->online.save_failed = false;
		return;
	}
fail:
	if (!d->online.save_failed)
		drf_log(d->log, LOG_WARNING, "cannot write '%s': %s; after a restart, the "
					     "effective demands start again from the declared ones",
			path, strerror(-r));
	d->online.save_failed = true;
}

void drfd_online_restore(struct drfd *d)
{
	char path[4200], line[1024], name[256], why[1024];
	size_t restored = 0, bad = 0;
	const char *file;
	bool header = false;
	int ln = 0, dfd, fd;
	FILE *f;

	if (!d->plan.cfg.observed || demand_path(d, path, sizeof(path)) < 0)
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
			drf_log(d->log, LOG_WARNING, "cannot read '%s': %s; the effective demands "
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
		for (i = 0; i < d->use.n; i++)
			if (strcmp(d->use.name[i], name) == 0)
				break;
		if (i == d->use.n)
			continue; /* no longer a tenant */
		{
			struct drf_dem_state *s = &d->use.t[i].dem;

			memset(s, 0, sizeof(*s));
			s->started = true;
			for (int x = 0; x < DRF_NRES; x++) {
				s->eff[x] = fmin(v[x], bound(d, i, x));
				s->why[x] = s->changed_why[x] = DRF_DEM_WHY_RESTORED;
			}
		}
		restored++;
		continue;
bad:
		if (!bad)
			drf_log(d->log, LOG_WARNING, "%s:%d: not a tenant and %d demands; skipped",
				path, ln, DRF_NRES);
		bad++;
	}
	fclose(f);
	if (!header) {
		drf_log(d->log, LOG_WARNING, "%s: not a drfd-demand 1 file; the effective demands "
					     "start from the declared ones", path);
		return;
	}
	if (restored)
		drf_log(d->log, LOG_NOTICE, "restored the effective demands of %zu tenants from "
					    "'%s'", restored, path);
}
