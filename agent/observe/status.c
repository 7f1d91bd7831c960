// SPDX-License-Identifier: MIT
/*
 * The status (see status.h): for people, one paragraph per tenant with every
 * knob read back live; for programs, one JSON document with the same and the
 * measurements. Problems counted: a knob that differs from the plan or whose
 * write fails, a cgroup that cannot be made, a limit that does not hold, the
 * state file unsaved, the network's qdisc or programs failing.
 *
 * Rendered in parts (drf_status_next()): each node (a tenant, an inner node,
 * a group, an orphan) is its own paragraph, or its own JSON object written and
 * freed at once (json.h's stream), so that a part costs its nodes' reads and
 * text, whatever the number of tenants.
 */
#include "status.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fairfam.h"
#include "json.h"
#include "keyfile.h"

enum knob_state { KS_OK, KS_DRIFT, KS_RETRYING, KS_WAITING, KS_UNREAD };

void drf_status_family_json(json_object *o, const struct drf_config *cfg)
{
	double beta, lambda;

	if (cfg->policy != DRF_POLICY_FDS && cfg->policy != DRF_POLICY_GFJ)
		return;
	drf_family_resolve(&cfg->family, &beta, &lambda);
	drf_json_set_num(o, "beta", beta);
	drf_json_set_num(o, "lambda", lambda);
}

static const char *const ks_names[] = {
	[KS_OK] = "ok",
	[KS_DRIFT] = "drift",
	[KS_RETRYING] = "retrying",
	[KS_WAITING] = "waiting",
	[KS_UNREAD] = "unread",
};

/* The knob's value now, and how it stands against what drfd wants. */
static enum knob_state knob_now(const struct drf_view *v, const struct drf_tenant_rt *t,
				enum drf_knob k, char *have, size_t len)
{
	ssize_t n = cgfs_read(v->fs, t->cgroup, drf_knob_file(k, v->rc->io), have, len);

	for (char *p = have; n >= 0 && *p; p++)
		if (*p == '\n')
			*p = ' ';
	if (t->failed & (1u << k))
		return KS_RETRYING;
	if ((k == DRF_KNOB_MEMORY_MAX || k == DRF_KNOB_MEMORY_HIGH) && t->tightening)
		return KS_WAITING;
	if (n < 0) {
		snprintf(have, len, "(%s)", strerror((int)-n));
		return KS_UNREAD;
	}
	return drf_knob_matches(k, t->want->val[k], have, v->rc->io, v->rc->page_size) ? KS_OK
										      : KS_DRIFT;
}

struct usage {
	double memory, cpu_usec;
	struct cgfs_tree_procs procs;
};

/* The processes of cg's whole subtree (0 when it cannot be read), bounded; *walked counts. */
static void procs_now(const struct drf_view *v, const char *cg, struct cgfs_tree_procs *p,
		      size_t *walked)
{
	if (cgfs_nprocs_tree(v->fs, cg, CGFS_TREE_MAX, p) < 0)
		*p = (struct cgfs_tree_procs){ .cgroups = 1 };
	*walked += p->cgroups;
}

static void usage_now(const struct drf_view *v, const char *cg, struct usage *u, size_t *walked)
{
	char buf[1024];

	u->memory = NAN;
	u->cpu_usec = NAN;
	if (cgfs_read(v->fs, cg, "memory.current", buf, sizeof(buf)) > 0)
		u->memory = strtod(buf, NULL);
	if (cgfs_read(v->fs, cg, "cpu.stat", buf, sizeof(buf)) > 0)
		u->cpu_usec = drf_kv_double(buf, "usage_usec");
	procs_now(v, cg, &u->procs, walked);
}

/* "knobs": [...] of one tenant or inner node. */
static void json_knobs(const struct drf_view *v, const struct drf_tenant_rt *t, json_object *o,
		       int *problems)
{
	const struct drf_reconciler *rc = v->rc;
	json_object *knobs = drf_json_set_array(o, "knobs");

	for (int k = 0; k < DRF_NKNOBS; k++) {
		char have[512];
		enum knob_state ks;
		json_object *kn;

		if (!t->want->set[k])
			continue;
		ks = knob_now(v, t, k, have, sizeof(have));
		if (ks != KS_OK)
			(*problems)++;
		kn = drf_json_append_object(knobs);
		drf_json_set_str(kn, "file", drf_knob_file(k, rc->io));
		drf_json_set_str(kn, "desired", t->want->val[k]);
		drf_json_set_str(kn, "actual", have);
		drf_json_set_str(kn, "state", ks_names[ks]);
		drf_json_set_str(kn, "error", t->err[k] ? strerror(t->err[k]) : NULL);
	}
}

/* A tenant's network: what it is allocated, what tc and the map hold, what it used. */
static void json_net_tenant(const struct drf_view *v, size_t i, json_object *o, int *problems)
{
	const struct drf_shaper *s = v->net;
	const struct drf_shaper_tenant *t = &s->t[i];
	const struct drf_share *sh = &v->plan->result.shares[i];
	bool eg_ok = !s->egress || (t->class_ok && t->leaf_ok && s->qdisc_ok);
	json_object *net = drf_json_set_object(o, "net");
	char id[16];

	drf_json_set_str(net, "class", drf_tc_handle_str(t->want.classid, false, id, sizeof(id)));
	drf_json_set_u64(net, "cgroup_id", t->cgid);
	drf_json_set_str(net, "state", eg_ok && t->map_ok ? "ok" : "retrying");
	drf_json_set_str(net, "error", t->err_class || t->err_leaf || t->err_map
		? strerror(t->err_class ? t->err_class : t->err_leaf ? t->err_leaf : t->err_map)
		: NULL);
	if (!eg_ok || !t->map_ok)
		(*problems)++;
	if (s->egress) {
		json_object *eg = drf_json_set_object(net, "egress");

		drf_json_set_num(eg, "alloc_bps", drf_res_shown(DRF_RES_NET, sh->alloc[DRF_RES_NET]));
		drf_json_set_u64(eg, "rate_bps", (uint64_t)t->want.rate * 8);
		drf_json_set_u64(eg, "ceil_bps", (uint64_t)t->want.ceil * 8);
		drf_json_set_u64(eg, "burst_bytes", t->want.burst);
		drf_json_set_u64(eg, "cburst_bytes", t->want.cburst);
		if (t->seen_valid) {
			json_object *in = drf_json_set_object(eg, "installed");

			drf_json_set_u64(in, "rate_bps", (uint64_t)t->seen.rate * 8);
			drf_json_set_u64(in, "ceil_bps", (uint64_t)t->seen.ceil * 8);
			drf_json_set_u64(in, "burst_bytes", t->seen.burst);
			drf_json_set_u64(in, "cburst_bytes", t->seen.cburst);
			drf_json_set_u64(in, "quantum", t->seen.quantum);
		} else {
			drf_json_set_null(eg, "installed");
		}
		drf_json_set_u64(eg, "class_bytes", t->seen.bytes);
		drf_json_set_u64(eg, "class_packets", t->seen.packets);
		drf_json_set_u64(eg, "class_drops", t->seen.drops);
		drf_json_set_u64(eg, "class_overlimits", t->seen.overlimits);
		drf_json_set_num(eg, "class_bps", t->class_bps);
		drf_json_set_u64(eg, "bytes", t->cnt.eg_bytes);
		drf_json_set_u64(eg, "packets", t->cnt.eg_packets);
		drf_json_set_num(eg, "bps", t->eg_bps);
	}
	if (s->ingress) {
		json_object *in = drf_json_set_object(net, "ingress");

		drf_json_set_num(in, "alloc_bps", drf_res_shown(DRF_RES_NET_IN,
								sh->alloc[DRF_RES_NET_IN]));
		drf_json_set_u64(in, "policer_bps", (uint64_t)t->want_map.in_rate * 8);
		drf_json_set_u64(in, "burst_bytes", t->want_map.in_burst);
		drf_json_set_u64(in, "bytes", t->cnt.in_bytes);
		drf_json_set_u64(in, "packets", t->cnt.in_packets);
		drf_json_set_u64(in, "dropped", t->cnt.in_dropped);
		drf_json_set_u64(in, "marked", t->cnt.in_marked);
		drf_json_set_num(in, "bps", t->in_bps);
	}
}

static void json_net(const struct drf_view *v, json_object *o, int *problems)
{
	const struct drf_shaper *s = v->net;
	json_object *net;
	char h[16];

	if (!v->net) {
		drf_json_set_null(o, "net");
		return;
	}
	net = drf_json_set_object(o, "net");
	drf_json_set_str(net, "device", s->ifname);
	drf_json_set_int(net, "ifindex", s->link.ifindex);
	/* the link as HTB's tree has it: net-link-rate, the speed, or net-rate */
	drf_json_set_u64(net, "link_bps", s->egress ? (uint64_t)s->base[0].rate * 8
					  : s->link_rate ? (uint64_t)s->link_rate
							 : (uint64_t)s->link.speed);
	drf_json_set_u64(net, "mtu", s->link.mtu);
	drf_json_set_bool(net, "egress", s->egress);
	drf_json_set_bool(net, "ingress", s->ingress);
	drf_json_set_str(net, "qdisc", !s->egress ? "none" : s->qdisc_ok ? "ok"
					: s->foreign ? "foreign" : "failing");
	if (s->foreign) {
		char what[64];

		snprintf(what, sizeof(what), "%s %s", s->foreign_kind,
			 drf_tc_handle_str(s->foreign_handle, true, h, sizeof(h)));
		drf_json_set_str(net, "foreign_qdisc", what);
	} else {
		drf_json_set_null(net, "foreign_qdisc");
	}
	drf_json_set_bool(net, "fq_codel", s->leaf_fq_codel);
	drf_json_set_str(net, "programs", s->attached ? "attached" : "failing");
	drf_json_set_str(net, "pin_dir", s->pin_dir);
	drf_json_set_u64(net, "writes_total", s->total_writes);
	drf_json_set_u64(net, "errors_total", s->total_errors);
	if (!s->link_ok || (s->egress && !s->qdisc_ok) || !s->attached)
		(*problems)++;
}

/* Usage against allocation of tenant i (the daemon's last sample), JSON. */
static void json_use(const struct drf_view *v, size_t i, json_object *o, int *problems)
{
	const struct drf_usage *u = v->use;
	const struct drf_tenant_use *t = &u->t[i];
	const double *cap = v->decl->problem.capacity;
	json_object *use = drf_json_set_object(o, "use"), *res, *x;

	drf_json_set_num(use, "window_tick_s",
			 t->prev.t_us ? (double)(t->now.t_us - t->prev.t_us) / 1e6 : NAN);
	drf_json_set_num(use, "window_minute_s", t->window_min_s);
	res = drf_json_set_object(use, "resources");
	for (int r = 0; r < DRF_NRES; r++) {
		if (!(cap[r] > 0))
			continue;
		x = drf_json_set_object(res, drf_res_name(r));
		drf_json_set_num(x, "declared", drf_res_shown(r, t->declared[r]));
		drf_json_set_num(x, "allocation", drf_res_shown(r, t->alloc[r]));
		drf_json_set_num(x, "limit", drf_res_shown(r, t->limit[r]));
		drf_json_set_num(x, "use_tick", t->use_tick[r]);
		drf_json_set_num(x, "use_minute", t->use_min[r]);
		drf_json_set_num(x, "gap", t->gap[r]);
		drf_json_set_bool(x, "not_holding", t->not_holding & (1u << r));
		drf_json_set_str(x, "no_effect",
				 u->no_effect & (1u << r) ? u->no_effect_why[r] : NULL);
		if (t->not_holding & (1u << r))
			(*problems)++;
	}
	drf_json_set_num(use, "dominant_allocation", t->dominant_alloc);
	drf_json_set_num(use, "dominant_use", t->dominant_use);
	drf_json_set_str(use, "dominant_use_resource",
			 t->dominant_use_res >= 0 ? drf_res_name(t->dominant_use_res) : NULL);
	x = drf_json_set_object(use, "memory");
	drf_json_set_num(x, "current", t->gauge[DRF_GAUGE_MEM_CURRENT]);
	drf_json_set_num(x, "working_set", t->gauge[DRF_GAUGE_MEM_WORKING_SET]);
	x = drf_json_set_object(use, "pressure");
	for (int p = 0; p < DRF_NPRESSURE; p++)
		drf_json_set_num(x, drf_pressure_name(p), t->pressure[p]);
	x = drf_json_set_object(use, "counters");
	for (int c = 0; c < DRF_NCTR; c++)
		drf_json_set_num(x, drf_ctr_name(c), t->now.c[c]);
	x = drf_json_set_array(use, "runq_wait_hist");
	for (int b = 0; b < DRF_HIST_BUCKETS; b++)
		drf_json_append_u64(x, t->runq_hist[b]);
	x = drf_json_set_array(use, "io_latency_hist");
	for (int b = 0; b < DRF_HIST_BUCKETS; b++)
		drf_json_append_u64(x, t->io_lat_hist[b]);
}

/* The same for people: one line per resource with a capacity. */
static void text_use(const struct drf_view *v, size_t i, FILE *f, int *problems)
{
	const struct drf_usage *u = v->use;
	const struct drf_tenant_use *t = &u->t[i];
	const double *cap = v->decl->problem.capacity;
	char a[32], b[32], c[32], l[32];

	fprintf(f, "  use against allocation (last tick / last %.0f s):\n", t->window_min_s);
	for (int r = 0; r < DRF_NRES; r++) {
		if (!(cap[r] > 0))
			continue;
		drf_format_quantity(t->use_tick[r], drf_res_unit(r), a, sizeof(a));
		drf_format_quantity(t->use_min[r], drf_res_unit(r), b, sizeof(b));
		drf_format_quantity(t->alloc[r], drf_res_unit(r), c, sizeof(c));
		drf_format_quantity(t->limit[r], drf_res_unit(r), l, sizeof(l));
		fprintf(f, "    %-16s %s / %s of %s allocated, limit %s%s\n", drf_res_name(r),
			isnan(t->use_tick[r]) ? "?" : a, isnan(t->use_min[r]) ? "?" : b, c, l,
			t->not_holding & (1u << r) ? "  NOT HOLDING: use above the limit" : "");
		if (t->not_holding & (1u << r))
			(*problems)++;
		if (u->no_effect & (1u << r))
			fprintf(f, "    %-16s note: %s\n", "", u->no_effect_why[r]);
	}
	fprintf(f, "    dominant share: allocation %.3f, use %.3f", t->dominant_alloc,
		isnan(t->dominant_use) ? 0 : t->dominant_use);
	if (!isnan(t->pressure[DRF_PRESSURE_RUNQ]))
		fprintf(f, "; run-queue wait %.3f s/s", t->pressure[DRF_PRESSURE_RUNQ]);
	if (!isnan(t->pressure[DRF_PRESSURE_CPU_SOME]))
		fprintf(f, "; pressure cpu %.1f%% memory %.1f%% io %.1f%%",
			100 * t->pressure[DRF_PRESSURE_CPU_SOME],
			100 * t->pressure[DRF_PRESSURE_MEMORY_SOME], 100 * t->pressure[DRF_PRESSURE_IO_SOME]);
	fputc('\n', f);
}

/* Observed demand of tenant i: declared against effective, and why. */
static void json_demand(const struct drf_view *v, size_t i, json_object *o)
{
	const struct drf_tenant_use *t = &v->use->t[i];
	const struct drf_declared *p = v->decl;
	const struct drf_plan *e = v->plan;
	json_object *dem = drf_json_set_object(o, "demand");

	for (int r = 0; r < DRF_NRES; r++) {
		json_object *x;

		if (!(p->problem.capacity[r] > 0))
			continue;
		x = drf_json_set_object(dem, drf_res_name(r));
		drf_json_set_num(x, "declared", drf_res_shown(r, p->demands[i].shape[r] > 0
				 ? p->demands[i].shape[r] * p->demands[i].max_units : 0));
		drf_json_set_num(x, "effective", drf_res_shown(r,
				 e->problem.demands[i].shape[r] * e->problem.demands[i].max_units));
		drf_json_set_num(x, "declared_allocation",
				 drf_res_shown(r, p->result.shares[i].alloc[r]));
		drf_json_set_str(x, "why", drf_dem_why_name(t->dem.changed_why[r]));
		drf_json_set_str(x, "now", drf_dem_why_name(t->dem.why[r]));
		drf_json_set_u64(x, "changed_ticks_ago", v->online->steps - t->dem.changed_tick[r]);
		drf_json_set_bool(x, "pressure", t->dem_pressured & (1u << r));
	}
	drf_json_set_u64(dem, "changes", t->dem.changes);
}

/* The same for people. */
static void text_demand(const struct drf_view *v, size_t i, FILE *f)
{
	const struct drf_tenant_use *t = &v->use->t[i];
	const struct drf_declared *p = v->decl;
	const struct drf_plan *e = v->plan;
	char a[32], b[32];

	fprintf(f, "  demand (observed; %llu changes):", (unsigned long long)t->dem.changes);
	for (int r = 0; r < DRF_NRES; r++) {
		if (!(p->problem.capacity[r] > 0))
			continue;
		drf_format_quantity(p->demands[i].shape[r] > 0 ? p->demands[i].shape[r] *
								 p->demands[i].max_units : 0,
				    drf_res_unit(r), a, sizeof(a));
		drf_format_quantity(e->problem.demands[i].shape[r] * e->problem.demands[i].max_units,
				    drf_res_unit(r), b, sizeof(b));
		fprintf(f, " %s %s of %s (%s)", drf_res_name(r), b, a,
			drf_dem_why_name(t->dem.changed_why[r]));
	}
	fputc('\n', f);
}

/* The status socket's connections and what its limits turned away. */
static void json_socket(const struct drf_view *v, json_object *o)
{
	const struct drf_sock_stats st = v->sock;
	json_object *so = drf_json_set_object(o, "socket");

	drf_json_set_u64(so, "connections", st.conns);
	drf_json_set_u64(so, "root_connections", st.root_conns);
	drf_json_set_u64(so, "accepted_total", st.accepted);
	drf_json_set_u64(so, "refused_total", st.refused);
	drf_json_set_u64(so, "dropped_total", st.dropped);
	drf_json_set_u64(so, "refusal_pauses_total", st.refuse_pauses);
	drf_json_set_u64(so, "too_long_total", st.too_long);
	drf_json_set_u64(so, "accept_backoffs_total", st.backoffs);
	drf_json_set_bool(so, "accepting", st.listening);
}

/* The HTTP endpoint's answers and the connections its limits shut; null without one. */
static void json_http(const struct drf_view *v, json_object *o)
{
	const struct drf_http_stats *h = &v->http;
	json_object *x;

	if (!h->on) {
		drf_json_set_null(o, "http");
		return;
	}
	x = drf_json_set_object(o, "http");
	drf_json_set_u64(x, "connections", h->conns);
	drf_json_set_u64(x, "ok_total", h->ok);
	drf_json_set_u64(x, "not_found_total", h->not_found);
	drf_json_set_u64(x, "not_allowed_total", h->not_allowed);
	drf_json_set_u64(x, "unavailable_total", h->unavailable);
	drf_json_set_u64(x, "past_deadline_total", h->past_deadline);
	drf_json_set_u64(x, "evicted_total", h->evicted);
}

/* The event loop's turns: the longest of the last minute, and since start. */
static void json_loop(const struct drf_view *v, json_object *o)
{
	const struct drf_loop_stats *l = &v->loop;
	json_object *x = drf_json_set_object(o, "loop");

	drf_json_set_u64(x, "turns_total", l->turns);
	drf_json_set_u64(x, "slow_turns_total", l->slow);
	drf_json_set_fixed(x, "slow_turn_ms", (double)DRF_LOOP_SLOW_US / 1000, 0);
	drf_json_set_fixed(x, "longest_turn_ms", (double)l->max_us / 1000, 3);
	drf_json_set_str(x, "longest_turn_served", l->max_what);
	drf_json_set_fixed(x, "longest_turn_since_start_ms", (double)l->max_ever_us / 1000, 3);
	drf_json_set_str(x, "longest_turn_since_start_served", l->max_ever_what);
}

/* The task queue's figures: null when drfd runs none. */
static void json_tasks(const struct drf_view *v, json_object *o)
{
	const struct drf_view_tasks *t = &v->tasks;
	json_object *x;

	if (!t->on) {
		drf_json_set_null(o, "tasks");
		return;
	}
	x = drf_json_set_object(o, "tasks");
	drf_json_set_u64(x, "started_total", t->started_total);
	drf_json_set_u64(x, "finished_total", t->finished_total);
	drf_json_set_u64(x, "output_truncated_total", t->truncated_total);
	if (t->output_max)
		drf_json_set_u64(x, "output_max", t->output_max);
	else
		drf_json_set_null(x, "output_max");
}

/* A fleet node's fleet: null when drfd is not one. */
static void json_fleet(const struct drf_view *v, json_object *o, int *problems)
{
	const struct drf_view_fleet *fl = &v->fleet;
	json_object *x;

	if (!fl->on) {
		drf_json_set_null(o, "fleet");
		return;
	}
	x = drf_json_set_object(o, "fleet");
	drf_json_set_str(x, "node", fl->node);
	drf_json_set_bool(x, "etcd_reachable", fl->reachable);
	drf_json_set_fixed(x, "since", (double)fl->since / 1e6, 3);
	drf_json_set_str(x, "last_error", fl->last_error && fl->last_error[0] ? fl->last_error
									       : NULL);
	drf_json_set_bool(x, "registered", fl->registered);
	drf_json_set_bool(x, "planner", fl->planner);
	drf_json_set_str(x, "planner_name", fl->planner_name && fl->planner_name[0]
						    ? fl->planner_name : NULL);
	if (fl->has_assignment) {
		drf_json_set_int(x, "assignment_revision", fl->assignment_revision);
		drf_json_set_bool(x, "assignment_from_state_dir", fl->from_file);
	} else {
		drf_json_set_null(x, "assignment_revision");
		drf_json_set_bool(x, "assignment_from_state_dir", false);
	}
	if (fl->in_force_revision)
		drf_json_set_int(x, "in_force_revision", fl->in_force_revision);
	else
		drf_json_set_null(x, "in_force_revision");
	if (fl->refused) {
		json_object *rf = drf_json_set_object(x, "refused");

		drf_json_set_int(rf, "revision", fl->assignment_revision);
		drf_json_set_str(rf, "why", fl->refused_why);
	} else {
		drf_json_set_null(x, "refused");
	}
	if (fl->planner) {
		drf_json_set_u64(x, "plan_nodes", fl->nodes);
		drf_json_set_u64(x, "plan_tenants", fl->tenants);
	}
	drf_json_set_u64(x, "plans_total", fl->plans);
	drf_json_set_u64(x, "keys_written_total", fl->keys_written);
	drf_json_set_u64(x, "fenced_total", fl->fenced);
	drf_json_set_u64(x, "resyncs_total", fl->resyncs);
	drf_json_set_str(x, "planner_vacant", fl->planner_vacant ? fl->planner_vacant_why : NULL);
	/* Whether it campaigns: "yes", "no" ([fleet] planner = no), "refused" (by etcd). */
	drf_json_set_str(x, "campaigns", fl->plain ? "no" : fl->campaign_refused ? "refused" : "yes");
	drf_json_set_str(x, "campaign_refused", fl->campaign_refused && fl->campaign_refused_why
							? fl->campaign_refused_why : NULL);
	/* As the text counts them. */
	if (!fl->reachable || fl->refused || fl->planner_vacant || fl->campaign_refused)
		(*problems)++;
	drf_json_set_u64(x, "planner_takeovers_total", fl->takeovers);
	if (fl->planner)
		drf_json_set_u64(x, "silent_nodes", fl->silent_nodes);
}

/*
 * The last reload's verdict (null before the first), and the start-only keys
 * in force, as written (`drfctl plan` compares a config with them).
 */
static void json_reload(const struct drf_view *v, json_object *o)
{
	const struct drf_start_keys *k = v->start;
	json_object *x;

	if (v->reload_at) {
		x = drf_json_set_object(o, "last_reload");
		drf_json_set_bool(x, "successful", v->reload_ok);
		drf_json_set_fixed(x, "time", (double)v->reload_at / 1e6, 3);
		drf_json_set_str(x, "reason", !v->reload_ok && v->reload_error ? v->reload_error
									       : NULL);
	} else {
		drf_json_set_null(o, "last_reload");
	}
	if (!k) {
		drf_json_set_null(o, "start_only");
		return;
	}
	x = drf_json_set_object(o, "start_only");
	drf_json_set_str(x, "cgroup-root", k->cgroup_root);
	drf_json_set_str(x, "io-device", k->io_device);
	drf_json_set_str(x, "net-device", k->net_device);
	drf_json_set_str(x, "state-dir", k->state_dir);
	drf_json_set_str(x, "status-socket", k->status_socket);
	drf_json_set_str(x, "status-group", k->status_group);
	drf_json_set_bool(x, "net-replace-qdisc", k->net_replace_qdisc);
}

/* {RES: number} of the resources with a capacity. */
static void json_res(json_object *o, const char *key, const double *cap, const double *v)
{
	json_object *x = drf_json_set_object(o, key);

	for (int r = 0; r < DRF_NRES; r++)
		if (cap[r] > 0)
			drf_json_set_num(x, drf_res_name(r), drf_res_shown(r, v[r]));
}

/* Hierarchical DRF's group g: its allocation (its tenants' sum) and dominant share. */
static json_object *json_group(const struct drf_plan *e, size_t g)
{
	const struct drf_config *c = &e->decl->cfg;
	const struct drf_group *gr = &c->groups[g];
	const struct drf_share *sh = &e->groups[g];
	json_object *x = drf_json_object();

	drf_json_set_str(x, "name", gr->name);
	drf_json_set_str(x, "group", gr->parent ? c->groups[gr->parent - 1].name : NULL);
	drf_json_set_str(x, "cgroup", gr->cgroup);
	drf_json_set_num(x, "weight", gr->weight);
	json_res(x, "alloc", e->problem.capacity, sh->alloc);
	drf_json_set_str(x, "dominant_resource", drf_res_name(sh->dominant_res));
	drf_json_set_num(x, "dominant_share", sh->dominant_share);
	drf_json_set_str(x, "limited_by", sh->limited_by == DRF_LIMIT_DEMAND
			 ? "demand" : drf_res_name(sh->limited_by));
	return x;
}

/* Everything before "tenants": the daemon, the plan's settings, the host. */
static json_object *json_head(const struct drf_view *v, int *problems)
{
	const struct drf_plan *e = v->plan;
	const struct drf_reconciler *rc = v->rc;
	json_object *o = drf_json_object(), *x, *a;

	drf_json_set_str(o, "source", "daemon");
	drf_json_set_int(o, "pid", v->pid);
	drf_json_set_str(o, "config", v->config_path);
	drf_json_set_str(o, "cgroup_root", v->root);
	drf_json_set_str(o, "policy", drf_policy_name(e->decl->cfg.policy));
	drf_status_family_json(o, &e->decl->cfg);
	drf_json_set_str(o, "mode", drf_mode_name(e->decl->cfg.mode));
	drf_json_set_str(o, "demand", v->decl->cfg.observed ? "observed" : "declared");
	x = drf_json_set_object(o, "online");
	drf_json_set_bool(x, "active", v->plan->effective);
	drf_json_set_u64(x, "steps", v->online->steps);
	drf_json_set_u64(x, "replans", v->online->replans);
	drf_json_set_num(o, "interval_ms", (double)e->decl->cfg.interval_us / 1000);
	drf_json_set_num(o, "verify_period_ms", (double)e->decl->cfg.verify_period_us / 1000);
	/* unix seconds to the millisecond, as the text has them */
	drf_json_set_fixed(o, "started", (double)v->started / 1e6, 3);
	drf_json_set_fixed(o, "last_tick", (double)v->last_tick / 1e6, 3);
	drf_json_set_u64(o, "ticks", v->ticks);
	drf_json_set_u64(o, "reloads", v->reloads);
	drf_json_set_u64(o, "reloads_refused", v->reloads_refused);
	json_reload(v, o);
	json_fleet(v, o, problems);
	x = drf_json_set_object(o, "errors");
	drf_json_set_u64(x, "total", rc->total_errors);
	drf_json_set_u64(x, "retrying", v->last->retrying);
	drf_json_set_u64(x, "memory_worker_failures", rc->worker_failures);
	drf_json_set_u64(o, "writes_total", rc->total_writes);
	/* Under systemd: the D-Bus calls the writes took (a tenant's changes are one call). */
	drf_json_set_u64(o, "applies_total", rc->total_applies);
	drf_json_set_u64(o, "foreign_total", rc->total_foreign);
	json_socket(v, o);
	json_http(v, o);
	json_loop(v, o);
	json_tasks(v, o);
	a = drf_json_set_array(o, "root_errors");
	for (int i = 0; i < CGFS_NCTRL; i++) {
		if (!(rc->root_failed & (1u << i)))
			continue;
		(*problems)++;
		x = drf_json_append_object(a);
		drf_json_set_str(x, "controller", cgfs_ctrl_name(1u << i));
		drf_json_set_str(x, "error", strerror(-rc->root_err[i]));
	}
	if (v->state_path[0]) {
		x = drf_json_set_object(o, "state_file");
		drf_json_set_str(x, "path", v->state_path);
		drf_json_set_bool(x, "saved", !v->state_err);
		drf_json_set_str(x, "error", v->state_err ? strerror(-v->state_err) : NULL);
	} else {
		drf_json_set_null(o, "state_file");
	}
	if (v->state_err)
		(*problems)++;
	json_res(o, "capacity", e->problem.capacity, e->problem.capacity);
	x = drf_json_set_object(o, "usage");
	drf_json_set_bool(x, "probes", v->use->probes);
	drf_json_set_bool(x, "probes_adopted", v->use->probes_adopted);
	drf_json_set_str(x, "probes_why", v->use->probes ? NULL : v->use->probes_why);
	drf_json_set_num(x, "jain_allocation", v->use->jain_alloc);
	drf_json_set_num(x, "jain_use", v->use->jain_use);
	return o;
}

/*
 * Whether tenant t's memory protection is bounded by an ancestor of the root
 * drfd does not own (view.h's prot): what it protects, above nothing.
 */
static bool prot_capped(const struct drf_view *v, const struct drf_tenant_rt *t)
{
	return v->prot.capped && t->want && t->want->set[DRF_KNOB_MEMORY_LOW] &&
	       strtoull(t->want->val[DRF_KNOB_MEMORY_LOW], NULL, 10) > 0;
}

/* "/sys/fs/cgroup/x has memory.low 0 and memory.min 0, below the 96M drfd's root protects" */
static void prot_why(const struct drf_view *v, char *buf, size_t len)
{
	char low[32], min[32], need[32];

	drf_format_quantity((double)v->prot.low, DRF_UNIT_BYTES, low, sizeof(low));
	drf_format_quantity((double)v->prot.min, DRF_UNIT_BYTES, min, sizeof(min));
	drf_format_quantity((double)v->prot.need, DRF_UNIT_BYTES, need, sizeof(need));
	snprintf(buf, len, "ancestor %s has memory.low %s and memory.min %s, below the %s "
		 "drfd's root protects: the kernel bounds a cgroup's protection by its parent's",
		 v->prot.ancestor, low, min, need);
}

/* Tenant i, an element of "tenants". */
static json_object *json_tenant(const struct drf_view *v, size_t i, int *problems,
				size_t *walked)
{
	const struct drf_plan *e = v->plan;
	const struct drf_tenant_rt *t = &v->rc->t[i];
	const struct drf_share *sh = &e->result.shares[i];
	json_object *te = drf_json_object(), *us;
	struct usage u;

	usage_now(v, t->cgroup, &u, walked);
	drf_json_set_str(te, "name", t->name);
	drf_json_set_str(te, "cgroup", t->cgroup);
	drf_json_set_num(te, "weight", e->decl->cfg.tenants[i].weight);
	json_res(te, "alloc", e->problem.capacity, sh->alloc);
	drf_json_set_str(te, "dominant_resource", drf_res_name(sh->dominant_res));
	drf_json_set_num(te, "dominant_share", sh->dominant_share);
	drf_json_set_str(te, "limited_by", sh->limited_by == DRF_LIMIT_DEMAND
			 ? "demand" : drf_res_name(sh->limited_by));
	us = drf_json_set_object(te, "usage");
	drf_json_set_num(us, "memory_bytes", u.memory);
	drf_json_set_num(us, "cpu_usec", u.cpu_usec);
	drf_json_set_int(us, "processes", u.procs.procs);
	drf_json_set_bool(us, "processes_capped", u.procs.capped);
	drf_json_set_str(te, "cgroup_error", t->cg_err ? strerror(t->cg_err) : NULL);
	if (t->cg_err)
		(*problems)++;
	json_knobs(v, t, te, problems);
	{
		char rules[4096];
		bool any = drf_config_access_rules(&e->decl->cfg, &e->decl->cfg.tenants[i], rules,
						   sizeof(rules));

		/* Who may submit, exec and cancel here (access.h); none: root alone. */
		drf_json_set_str(te, "access", any ? rules : NULL);
	}
	if (prot_capped(v, t)) {
		json_object *pr = drf_json_set_object(te, "memory_protection");
		char why[1024];

		prot_why(v, why, sizeof(why));
		drf_json_set_bool(pr, "holds", false);
		drf_json_set_str(pr, "capped_by", v->prot.ancestor);
		drf_json_set_num(pr, "ancestor_low", (double)v->prot.low);
		drf_json_set_num(pr, "ancestor_min", (double)v->prot.min);
		drf_json_set_str(pr, "why", why);
		(*problems)++;
	}
	if (v->net && i < v->net->n)
		json_net_tenant(v, i, te, problems);
	if (i < v->use->n && v->use->samples)
		json_use(v, i, te, problems);
	if (v->plan->effective && i < v->use->n)
		json_demand(v, i, te);
	return te;
}

/* Inner node i (at rc->n and above), an element of "inner". */
static json_object *json_inner(const struct drf_view *v, size_t i, int *problems)
{
	const struct drf_tenant_rt *t = &v->rc->t[i];
	json_object *x = drf_json_object();

	drf_json_set_str(x, "cgroup", t->cgroup);
	drf_json_set_bool(x, "root", t->kind == DRF_NODE_ROOT);
	/* The root's ancestors' protection could not be read: whether it holds is not known. */
	if (t->kind == DRF_NODE_ROOT && v->prot.err) {
		json_object *pe = drf_json_set_object(x, "protection_check_error");

		drf_json_set_str(pe, "path", v->prot.err_path);
		drf_json_set_str(pe, "error", strerror(-v->prot.err));
	}
	drf_json_set_str(x, "cgroup_error", t->cg_err ? strerror(t->cg_err) : NULL);
	if (t->cg_err)
		(*problems)++;
	json_knobs(v, t, x, problems);
	return x;
}

/* Orphan i, an element of "orphans". */
static json_object *json_orphan(const struct drf_view *v, size_t i, size_t *walked)
{
	const struct drf_orphan *o = &v->rc->orphans[i];
	json_object *x = drf_json_object();
	struct cgfs_tree_procs p;

	procs_now(v, o->cgroup, &p, walked);
	drf_json_set_str(x, "name", o->name);
	drf_json_set_str(x, "cgroup", o->cgroup);
	drf_json_set_int(x, "processes", p.procs);
	drf_json_set_bool(x, "processes_capped", p.capped);
	return x;
}

static void human_duration(double s, char *buf, size_t len)
{
	if (s < 120)
		snprintf(buf, len, "%.1fs", s);
	else if (s < 7200)
		snprintf(buf, len, "%.0fm%02.0fs", floor(s / 60), fmod(s, 60));
	else
		snprintf(buf, len, "%.0fh%02.0fm", floor(s / 3600), fmod(floor(s / 60), 60));
}

static void text_net_tenant(const struct drf_view *v, size_t i, FILE *f, int *problems)
{
	const struct drf_shaper *s = v->net;
	const struct drf_shaper_tenant *t = &s->t[i];
	char q1[32], q2[32], q3[32], id[16];

	if (s->egress) {
		bool ok = t->class_ok && t->leaf_ok && s->qdisc_ok;

		drf_format_quantity((double)t->want.rate * 8, DRF_UNIT_BITS, q1, sizeof(q1));
		drf_format_quantity((double)t->want.ceil * 8, DRF_UNIT_BITS, q2, sizeof(q2));
		drf_format_quantity(t->eg_bps, DRF_UNIT_BITS, q3, sizeof(q3));
		fprintf(f, "  net egress     class %s rate %s ceil %s; sent %llu bytes, %llu packets, "
			   "%s/s over the last tick; %llu dropped: %s\n",
			drf_tc_handle_str(t->want.classid, false, id, sizeof(id)), q1, q2,
			(unsigned long long)t->cnt.eg_bytes, (unsigned long long)t->cnt.eg_packets, q3,
			(unsigned long long)t->seen.drops,
			ok ? "ok" : t->err_class || t->err_leaf ? strerror(t->err_class ? t->err_class
									  : t->err_leaf)
								: "RETRYING");
		if (!ok)
			(*problems)++;
	}
	if (s->ingress) {
		drf_format_quantity((double)t->want_map.in_rate * 8, DRF_UNIT_BITS, q1, sizeof(q1));
		drf_format_quantity(t->in_bps, DRF_UNIT_BITS, q3, sizeof(q3));
		fprintf(f, "  net ingress    policer %s; received %llu bytes, %llu packets, %s/s; "
			   "%llu dropped, %llu ECN-marked: %s\n",
			t->want_map.in_rate ? q1 : "none", (unsigned long long)t->cnt.in_bytes,
			(unsigned long long)t->cnt.in_packets, q3, (unsigned long long)t->cnt.in_dropped,
			(unsigned long long)t->cnt.in_marked, t->map_ok ? "ok" : "RETRYING");
	}
	if (!t->map_ok)
		(*problems)++;
}

/* One line per knob of a tenant or inner node: its value and how it stands. */
static void text_knobs(const struct drf_view *v, const struct drf_tenant_rt *t, FILE *f, int *problems)
{
	const struct drf_plan *e = v->plan;
	const struct drf_reconciler *rc = v->rc;

	for (int k = 0; k < DRF_NKNOBS; k++) {
		char have[512];
		enum knob_state ks;

		if (!t->want->set[k])
			continue;
		ks = knob_now(v, t, k, have, sizeof(have));
		fprintf(f, "  %-14s %-28s ", drf_knob_file(k, rc->io), have);
		switch (ks) {
		case KS_OK:
			fputs("ok\n", f);
			continue;
		case KS_DRIFT:
			fprintf(f, "DRIFT: drfd wants %s; restored within %.0fs\n",
				t->want->val[k], (double)e->decl->cfg.verify_period_us / 1e6);
			break;
		case KS_RETRYING:
			fprintf(f, "RETRYING: writing %s failed: %s\n", t->want->val[k],
				strerror(t->err[k]));
			break;
		case KS_WAITING:
			fprintf(f, "WAITING: memory usage is above %s; memory.high holds it "
				   "until usage drops\n", t->target);
			break;
		case KS_UNREAD:
			fprintf(f, "UNREADABLE: drfd wants %s\n", t->want->val[k]);
			break;
		}
		(*problems)++;
	}
}

/* Everything before the tenants: the daemon, its errors, the network. */
static void text_head(const struct drf_view *v, FILE *f, int *problems)
{
	const struct drf_plan *e = v->plan;
	const struct drf_reconciler *rc = v->rc;
	/* In the same clock and precision as started and last_tick. */
	double now = (double)v->now / 1e6;
	char up[32], ago[32], lab[96];

	human_duration(now - (double)v->started / 1e6, up, sizeof(up));
	human_duration(now - (double)v->last_tick / 1e6, ago, sizeof(ago));
	fprintf(f, "drfd (pid %d): %s: policy %s, mode %s, demand %s, root %s\n", v->pid,
		v->config_path, drf_policy_label(e->decl->cfg.policy, &e->decl->cfg.family, lab,
						 sizeof(lab)), drf_mode_name(e->decl->cfg.mode),
		v->decl->cfg.observed ? "observed" : "declared", v->root);
	if (v->plan->effective)
		fprintf(f, "observed demand: %llu steps, the effective plan changed %llu times\n",
			(unsigned long long)v->online->steps, (unsigned long long)v->online->replans);
	fprintf(f, "up %s, %llu ticks, the last %s ago; every knob is read back at least every "
		   "%.0fs\n", up, (unsigned long long)v->ticks, ago,
		(double)e->decl->cfg.verify_period_us / 1e6);
	fprintf(f, "errors: %llu since start, %u writes failing and retried each tick, %llu "
		   "memory-worker failures; reloads: %llu, %llu refused\n",
		(unsigned long long)rc->total_errors, v->last->retrying,
		(unsigned long long)rc->worker_failures, (unsigned long long)v->reloads,
		(unsigned long long)v->reloads_refused);
	fprintf(f, "event loop: the longest turn of the last minute %.1f ms (%s), since start "
		   "%.1f ms (%s); %llu of %llu turns over %.0f ms\n", (double)v->loop.max_us / 1000,
		v->loop.max_what ? v->loop.max_what : "none yet", (double)v->loop.max_ever_us / 1000,
		v->loop.max_ever_what ? v->loop.max_ever_what : "none yet",
		(unsigned long long)v->loop.slow, (unsigned long long)v->loop.turns,
		(double)DRF_LOOP_SLOW_US / 1000);
	if (v->tasks.on) {
		char cap[32] = "unlimited";

		if (v->tasks.output_max)
			drf_format_quantity((double)v->tasks.output_max, DRF_UNIT_BYTES, cap,
					    sizeof(cap));
		fprintf(f, "tasks: %llu started, %llu finished since start, %llu of them with "
			   "output truncated (task-output-max %s)\n",
			(unsigned long long)v->tasks.started_total,
			(unsigned long long)v->tasks.finished_total,
			(unsigned long long)v->tasks.truncated_total, cap);
	}
	if (v->fleet.on) {
		const struct drf_view_fleet *fl = &v->fleet;

		human_duration(now - (double)fl->since / 1e6, ago, sizeof(ago));
		fprintf(f, "fleet: node %s; etcd %s for %s%s%s; planner %s%s; ", fl->node,
			fl->reachable ? "reachable" : "UNREACHABLE", ago,
			!fl->reachable && fl->last_error && fl->last_error[0] ? ": " : "",
			!fl->reachable && fl->last_error ? fl->last_error : "",
			fl->planner_name && fl->planner_name[0] ? fl->planner_name : "none known",
			fl->planner ? " (this node)" : "");
		if (fl->in_force_revision)
			fprintf(f, "assignment of revision %lld in force%s",
				(long long)fl->in_force_revision,
				fl->from_file ? " (from the state dir: etcd has not confirmed it)" : "");
		else
			fprintf(f, "no assignment in force yet");
		if (fl->refused)
			fprintf(f, "; revision %lld REFUSED (offered again): %s",
				(long long)fl->assignment_revision, fl->refused_why);
		if (fl->planner && fl->silent_nodes)
			fprintf(f, "; %zu silent node%s kept in their grace", fl->silent_nodes,
				fl->silent_nodes == 1 ? "" : "s");
		if (fl->plain)
			fprintf(f, "; it does not campaign for the planner's role ([fleet] planner "
				   "= no)");
		fputc('\n', f);
		if (fl->campaign_refused)
			fprintf(f, "fleet: PLANNER ROLE REFUSED by etcd (its etcd user lacks the "
				   "planner role; it goes on as a plain node, its tenants as assigned; "
				   "set [fleet] planner = no where that is meant): %s\n",
				fl->campaign_refused_why ? fl->campaign_refused_why : "");
		if (fl->planner_vacant)
			fprintf(f, "fleet: PLANNER KEY VACANT (nobody plans; being taken over): %s\n",
				fl->planner_vacant_why);
		if (!fl->reachable || fl->refused || fl->planner_vacant || fl->campaign_refused)
			(*problems)++;
	}
	if (v->reload_at && !v->reload_ok) {
		human_duration(now - (double)v->reload_at / 1e6, ago, sizeof(ago));
		fprintf(f, "the last reload, %s ago, was REFUSED (the configuration before it "
			   "stays in force): %s\n", ago, v->reload_error ? v->reload_error : "");
	}
	for (int i = 0; i < CGFS_NCTRL; i++) {
		bool on = rc->ctrls & (1u << i);

		if (!(rc->root_failed & (1u << i)))
			continue;
		(*problems)++;
		fprintf(f, "ROOT: cannot make %s %s '%s' down: %s; retried each tick\n", v->root,
			on ? "pass" : "stop passing", cgfs_ctrl_name(1u << i),
			strerror(-rc->root_err[i]));
	}
	if (v->state_err) {
		(*problems)++;
		fprintf(f, "STATE UNSAVED: cannot write the state file '%s': %s; retried each tick "
			   "(until it is saved, a restart would not clean up tenants removed "
			   "meanwhile)\n", v->state_path, strerror(-v->state_err));
	}
	if (v->net) {
		const struct drf_shaper *s = v->net;
		char l[32], h[16];

		uint64_t link = s->link_rate ? s->link_rate : s->link.speed;

		drf_format_quantity((double)link, DRF_UNIT_BITS, l, sizeof(l));
		fprintf(f, "network: %s (link %s), egress %s, programs %s (pinned in %s)\n", s->ifname,
			link ? l : "speed unknown",
			!s->egress ? "not shaped" : s->qdisc_ok ? "shaped by htb d7f:" : "NOT SHAPED",
			s->attached ? "attached" : "FAILING", s->pin_dir);
		if (s->foreign)
			fprintf(f, "FOREIGN QDISC: %s has root qdisc %s %s, which drfd did not install; "
				   "it shapes no egress until that is removed (or net-replace-qdisc = "
				   "yes)\n", s->ifname, s->foreign_kind,
				drf_tc_handle_str(s->foreign_handle, true, h, sizeof(h)));
		if (!s->link_ok || (s->egress && !s->qdisc_ok) || !s->attached)
			(*problems)++;
	}
}

/* Tenant i's paragraph. */
static void text_tenant(const struct drf_view *v, size_t i, FILE *f, int *problems,
			size_t *walked)
{
	const struct drf_plan *e = v->plan;
	const struct drf_tenant_rt *t = &v->rc->t[i];
	const struct drf_share *sh = &e->result.shares[i];
	struct usage u;
	char q[64];

	fprintf(f, "\ntenant %s (cgroup %s/%s)\n  allocation:", t->name, v->root, t->cgroup);
	for (int r = 0; r < DRF_NRES; r++) {
		if (!(e->problem.capacity[r] > 0))
			continue;
		drf_format_quantity(sh->alloc[r], drf_res_unit(r), q, sizeof(q));
		fprintf(f, " %s %s", drf_res_name(r), q);
	}
	fprintf(f, "; dominant %s %.3f, limited by %s\n  usage:",
		drf_res_name(sh->dominant_res), sh->dominant_share,
		sh->limited_by == DRF_LIMIT_DEMAND ? "demand" : drf_res_name(sh->limited_by));
	usage_now(v, t->cgroup, &u, walked);
	if (!isnan(u.memory)) {
		drf_format_quantity(u.memory, DRF_UNIT_BYTES, q, sizeof(q));
		fprintf(f, " memory %s", q);
	}
	if (!isnan(u.cpu_usec))
		fprintf(f, " cpu %.1fs", u.cpu_usec / 1e6);
	/* "1024+": the subtree was larger than the walk's bound, the count a lower bound */
	fprintf(f, " processes %d%s\n", u.procs.procs, u.procs.capped ? "+" : "");
	if (t->cg_err) {
		(*problems)++;
		fprintf(f, "  cgroup cannot be created: %s; retried each tick\n",
			strerror(t->cg_err));
	}
	text_knobs(v, t, f, problems);
	{
		char rules[4096];

		if (drf_config_access_rules(&e->decl->cfg, &e->decl->cfg.tenants[i], rules,
					    sizeof(rules)))
			fprintf(f, "  access: %s\n", rules);
		else
			fputs("  access: root alone (no access or admins set for it, its groups "
			      "or [agent])\n", f);
	}
	if (prot_capped(v, t)) {
		char why[1024];

		prot_why(v, why, sizeof(why));
		fprintf(f, "  memory protection DOES NOT HOLD: %s\n", why);
		(*problems)++;
	}
	if (v->net && i < v->net->n)
		text_net_tenant(v, i, f, problems);
	if (v->plan->effective && i < v->use->n)
		text_demand(v, i, f);
	if (i < v->use->n && v->use->samples)
		text_use(v, i, f, problems);
}

/* Group g's paragraph. */
static void text_group(const struct drf_view *v, size_t g, FILE *f)
{
	const struct drf_plan *e = v->plan;
	const struct drf_group *gr = &e->decl->cfg.groups[g];
	const struct drf_share *sh = &e->groups[g];
	char q[64];

	fprintf(f, "\ngroup %s (cgroup %s/%s, weight %g, in %s)\n  allocation:", gr->name,
		v->root, gr->cgroup, gr->weight,
		gr->parent ? e->decl->cfg.groups[gr->parent - 1].name : "the root");
	for (int r = 0; r < DRF_NRES; r++) {
		if (!(e->problem.capacity[r] > 0))
			continue;
		drf_format_quantity(sh->alloc[r], drf_res_unit(r), q, sizeof(q));
		fprintf(f, " %s %s", drf_res_name(r), q);
	}
	fprintf(f, "; dominant %s %.3f, limited by %s\n", drf_res_name(sh->dominant_res),
		sh->dominant_share,
		sh->limited_by == DRF_LIMIT_DEMAND ? "demand" : drf_res_name(sh->limited_by));
}

/* Inner node i's paragraph (at rc->n and above). */
static void text_inner(const struct drf_view *v, size_t i, FILE *f, int *problems)
{
	const struct drf_tenant_rt *t = &v->rc->t[i];

	if (t->kind == DRF_NODE_ROOT) {
		fprintf(f, "\nroot cgroup %s (its memory.low: the tenants' sum)\n", v->root);
		if (v->prot.err)
			fprintf(f, "  its ancestors' memory protection not checked: cannot read "
				   "%s: %s\n", v->prot.err_path, strerror(-v->prot.err));
	} else
		fprintf(f, "\ninner cgroup %s/%s (above tenants: weights from their sum)\n",
			v->root, t->cgroup);
	if (t->cg_err) {
		(*problems)++;
		fprintf(f, "  cgroup cannot be created: %s; retried each tick\n",
			strerror(t->cg_err));
	}
	text_knobs(v, t, f, problems);
}

static void text_orphan(const struct drf_view *v, size_t i, FILE *f, size_t *walked)
{
	const struct drf_orphan *o = &v->rc->orphans[i];
	struct cgfs_tree_procs p;

	procs_now(v, o->cgroup, &p, walked);
	fprintf(f, "  %s (cgroup %s/%s): %d%s processes\n", o->name, v->root, o->cgroup, p.procs,
		p.capped ? "+" : "");
}

/*
 * The parts: stages in the document's order, each of nodes or a piece of its
 * own. The JSON has the network after the groups, the text in its head.
 */
enum stage { S_HEAD, S_TENANTS, S_INNER, S_GROUPS, S_NET, S_ORPHANS, S_END, S_DONE };

static const enum stage order_json[] = { S_HEAD, S_TENANTS, S_INNER, S_GROUPS, S_NET, S_ORPHANS,
					 S_END, S_DONE };
static const enum stage order_text[] = { S_HEAD, S_TENANTS, S_GROUPS, S_INNER, S_ORPHANS, S_END,
					 S_DONE };
static const enum stage order_json_one[] = { S_HEAD, S_TENANTS, S_NET, S_END, S_DONE };
static const enum stage order_text_one[] = { S_HEAD, S_TENANTS, S_END, S_DONE };

static const enum stage *order_of(const struct drf_status_cursor *c)
{
	if (c->one)
		return c->json ? order_json_one : order_text_one;
	return c->json ? order_json : order_text;
}

/* Whether stage s is made of nodes, which a part holds DRF_STATUS_PART of at most. */
static bool of_nodes(enum stage s)
{
	return s == S_TENANTS || s == S_INNER || s == S_GROUPS || s == S_ORPHANS;
}

/* The nodes of stage s in v (one piece for the others). */
static size_t items(const struct drf_status_cursor *c, const struct drf_view *v, enum stage s)
{
	switch (s) {
	case S_TENANTS:
		return c->one ? 1 : v->rc->n;
	case S_INNER:
		return v->rc->n_inner;
	case S_GROUPS:
		return v->plan->groups ? v->plan->decl->cfg.n_groups : 0;
	case S_ORPHANS:
		return v->rc->n_orphans;
	default:
		return 1;
	}
}

ssize_t drf_status_find(const struct drf_view *v, const char *name)
{
	const struct drf_reconciler *rc = v->rc;
	/* A tenant's cgroup is most often its name: the reconciler's index, without a scan. */
	ssize_t i = drf_reconciler_find(rc, name);

	if (i >= 0 && (size_t)i < rc->n && strcmp(rc->t[i].name, name) == 0)
		return i;
	/* A cgroup of its own (cgroup =, groups, slices): a string compare a tenant, no I/O. */
	for (size_t k = 0; k < rc->n; k++)
		if (strcmp(rc->t[k].name, name) == 0)
			return (ssize_t)k;
	return -1;
}

void drf_status_begin(struct drf_status_cursor *c, bool json, const char *tenant)
{
	*c = (struct drf_status_cursor){ .json = json, .one = tenant != NULL };
	if (tenant && strlen(tenant) < sizeof(c->name))
		memcpy(c->name, tenant, strlen(tenant) + 1);
	else if (tenant)
		c->no_name = true;
}

/* Whether v still shows what the head showed: the same plan's nodes. */
static bool same_view(const struct drf_status_cursor *c, const struct drf_view *v)
{
	const struct drf_reconciler *rc = v->rc;

	return c->nodes == (const void *)rc->t && c->n == rc->n && c->n_inner == rc->n_inner &&
	       c->n_groups == items(c, v, S_GROUPS) &&
	       (order_of(c)[c->step] != S_ORPHANS || !c->opened || c->n_orphans == rc->n_orphans);
}

/* What a stage writes before its nodes. */
static int open_stage(struct drf_status_cursor *c, const struct drf_view *v, enum stage s, FILE *f)
{
	const char *key = s == S_TENANTS ? "tenants" : s == S_INNER ? "inner"
			: s == S_GROUPS ? "groups" : s == S_ORPHANS ? "orphans" : NULL;

	if (s == S_ORPHANS)
		c->n_orphans = v->rc->n_orphans;
	if (c->json)
		/* "groups" only when the config has [group] sections, as before */
		return key && (s != S_GROUPS || v->plan->groups)
			? drf_json_stream_array(&c->js, f, key) : 0;
	if (s == S_TENANTS && !c->one && v->rc->n == 0)
		fprintf(f, "\nno tenants: %s defines none\n", v->config_path);
	if (s == S_ORPHANS && v->rc->n_orphans)
		fputs("\norphans (departed tenants whose cgroups still hold processes; kept with "
		      "their limits and removed once empty):\n", f);
	return 0;
}

/* What a stage writes after its nodes. */
static int close_stage(struct drf_status_cursor *c, const struct drf_view *v, enum stage s,
		       FILE *f)
{
	if (!c->json || !of_nodes(s) || (s == S_GROUPS && !v->plan->groups))
		return 0;
	return drf_json_stream_array_end(&c->js, f);
}

/* An object of the JSON, written and freed. */
static int put_element(struct drf_status_cursor *c, FILE *f, json_object *o)
{
	int r = drf_json_stream_element(&c->js, f, o);

	json_object_put(o);
	return r;
}

static int put_members(struct drf_status_cursor *c, FILE *f, json_object *o)
{
	int r = drf_json_stream_members(&c->js, f, o);

	json_object_put(o);
	return r;
}

/* Node (or piece) pos of stage s. */
static int render(struct drf_status_cursor *c, const struct drf_view *v, enum stage s, size_t pos,
		  FILE *f, size_t *walked)
{
	const struct drf_reconciler *rc = v->rc;
	json_object *o;

	switch (s) {
	case S_HEAD:
		if (c->one) {
			ssize_t i = c->no_name ? -1 : drf_status_find(v, c->name);

			if (i < 0)
				return -ENOENT;
			c->one_at = (size_t)i;
		}
		c->nodes = rc->t;
		c->n = rc->n;
		c->n_inner = rc->n_inner;
		c->n_groups = items(c, v, S_GROUPS);
		if (!c->json) {
			text_head(v, f, &c->problems);
			return 0;
		}
		return put_members(c, f, json_head(v, &c->problems));
	case S_TENANTS:
		pos = c->one ? c->one_at : pos;
		if (!c->json) {
			text_tenant(v, pos, f, &c->problems, walked);
			return 0;
		}
		return put_element(c, f, json_tenant(v, pos, &c->problems, walked));
	case S_INNER:
		if (!c->json) {
			text_inner(v, rc->n + pos, f, &c->problems);
			return 0;
		}
		return put_element(c, f, json_inner(v, rc->n + pos, &c->problems));
	case S_GROUPS:
		if (!c->json) {
			text_group(v, pos, f);
			return 0;
		}
		return put_element(c, f, json_group(v->plan, pos));
	case S_NET:
		o = drf_json_object();
		json_net(v, o, &c->problems);
		return put_members(c, f, o);
	case S_ORPHANS:
		if (!c->json) {
			text_orphan(v, pos, f, walked);
			return 0;
		}
		return put_element(c, f, json_orphan(v, pos, walked));
	case S_END:
		return c->json ? drf_json_stream_end(&c->js, f) : 0;
	case S_DONE:
		break;
	}
	return 0;
}

int drf_status_next(struct drf_status_cursor *c, const struct drf_view *v, FILE *out)
{
	const enum stage *order = order_of(c);
	unsigned nodes = 0;
	size_t walked = 0;
	int r;

	if (c->started && !same_view(c, v))
		return -ESTALE;
	while (order[c->step] != S_DONE) {
		enum stage s = order[c->step];

		if (!c->opened) {
			r = open_stage(c, v, s, out);
			if (r < 0)
				return r;
			c->opened = true;
		}
		for (; c->pos < items(c, v, s); c->pos++) {
			/* This part is full: the node goes in the next (one a part at least). */
			if (of_nodes(s) && (nodes >= DRF_STATUS_PART ||
					    walked >= DRF_STATUS_PART_CGROUPS))
				goto more;
			r = render(c, v, s, c->pos, out, &walked);
			if (r < 0)
				return r;
			nodes += of_nodes(s);
			c->started = true;
		}
		r = close_stage(c, v, s, out);
		if (r < 0)
			return r;
		c->step++;
		c->pos = 0;
		c->opened = false;
	}
more:
	c->part_nodes = nodes;
	c->part_cgroups = walked;
	if (ferror(out))
		return -EIO;
	return order[c->step] != S_DONE;
}

int drf_status_render(const struct drf_view *v, bool json, FILE *out, int *ret_problems)
{
	struct drf_status_cursor c;
	int r;

	drf_status_begin(&c, json, NULL);
	while ((r = drf_status_next(&c, v, out)) > 0)
		;
	if (r == 0)
		*ret_problems = c.problems;
	return r;
}
