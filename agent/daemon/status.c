// SPDX-License-Identifier: MIT
/*
 * The status socket. A client connects, sends one request line and reads the
 * answer until the daemon closes the connection:
 *
 *   "status text\n" or "status json\n"  ->  "drfd-status 1 problems=N\n" BODY
 *   "root\n"                             ->  the cgroup-root in force, one line
 *   "metrics\n"                          ->  "drfd-metrics 1\n" and the metrics
 *   "task-..." and "tasks ..."           ->  taskd.c
 *
 * Connections are non-blocking and served from the event loop below the tick's
 * priority, so clients cannot stall the ticks. The limits are in status.h:
 * connections per user and overall (root always gets in), deadlines for the
 * request and the answer, the request's length (a longer one is refused whole),
 * and a back-off when accept runs out of file descriptors. The socket is 0600
 * (root), or 0660 with status-group; drfd replaces only a socket nobody
 * serves, and removes at exit only the socket it bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "json.h"
#include "metrics.h"
#include "log.h"
#include "status.h"
#include "taskd.h"
#include "tasks.h"

/* Connections taken per wakeup of the listener; the loop's other sources run in between. */
#define ACCEPT_BATCH 64
/*
 * Short: while refusals are paced (status.h), a client that connects waits
 * behind at most this many others, so root gets in within a pause or two.
 * Others wait in connect() for room, which costs drfd nothing.
 */
#define LISTEN_BACKLOG 16
/* Below the tick and the signals: when both are ready, those go first. */
#define SOCK_PRIORITY (SD_EVENT_PRIORITY_NORMAL + 10)
/* Refusals over the caps are logged at most this often, counted. */
#define REFUSED_LOG_USEC (10 * 1000000ULL)

struct conn;

struct drfd_listener {
	struct drfd *d;
	int fd;
	sd_event_source *retry;         /* turns the listener back on after a back-off */
	uint64_t backoff_usec;          /* the next back-off */
	bool backing_off;               /* since accept last failed */
	dev_t dev;                      /* the socket file drfd bound */
	ino_t ino;
	struct conn *conns;
	struct drf_sock_stats st;
	uint64_t refused_logged, refused_log_at;
	uint64_t refuse_window_at;      /* CLOCK_MONOTONIC usec */
	unsigned refuse_in_window;
};

struct conn {
	struct drfd_listener *l;
	struct conn *prev, *next;
	int fd;
	uid_t uid;
	sd_event_source *io, *timeout;
	struct drfd_req req;
	char *out;
	size_t out_len, out_off;
};

static void conn_free(struct conn *c)
{
	struct drfd_listener *l = c->l;

	if (c->prev)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	l->st.conns--;
	if (c->uid == 0)
		l->st.root_conns--;
	sd_event_source_disable_unref(c->io);
	sd_event_source_disable_unref(c->timeout);
	close(c->fd);
	drfd_req_free(&c->req);
	free(c->out);
	free(c);
}

enum knob_state { KS_OK, KS_DRIFT, KS_RETRYING, KS_WAITING, KS_UNREAD };

static const char *const ks_names[] = {
	[KS_OK] = "ok",
	[KS_DRIFT] = "drift",
	[KS_RETRYING] = "retrying",
	[KS_WAITING] = "waiting",
	[KS_UNREAD] = "unread",
};

/* The knob's value now, and how it stands against what drfd wants. */
static enum knob_state knob_now(const struct drfd *d, const struct drf_tenant_rt *t,
				enum drf_knob k, char *have, size_t len)
{
	ssize_t n = cgfs_read(d->fs, t->cgroup, drf_knob_file(k, d->rc.io), have, len);

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
	return drf_knob_matches(k, t->want.val[k], have, d->rc.io, d->rc.page_size) ? KS_OK
										      : KS_DRIFT;
}

struct usage {
	double memory, cpu_usec;
	int procs;
};

static void usage_now(const struct drfd *d, const char *cg, struct usage *u)
{
	char buf[1024];
	const char *p;

	u->memory = NAN;
	u->cpu_usec = NAN;
	if (cgfs_read(d->fs, cg, "memory.current", buf, sizeof(buf)) > 0)
		u->memory = strtod(buf, NULL);
	if (cgfs_read(d->fs, cg, "cpu.stat", buf, sizeof(buf)) > 0 &&
	    (p = strstr(buf, "usage_usec ")))
		u->cpu_usec = strtod(p + 11, NULL);
	u->procs = cgfs_nprocs(d->fs, cg);
}

/* "knobs": [...] of one tenant or inner node. */
static void json_knobs(const struct drfd *d, const struct drf_tenant_rt *t, json_object *o,
		       int *problems)
{
	const struct drf_reconciler *rc = &d->rc;
	json_object *knobs = drf_json_set_array(o, "knobs");

	for (int k = 0; k < DRF_NKNOBS; k++) {
		char have[512];
		enum knob_state ks;
		json_object *kn;

		if (!t->want.set[k])
			continue;
		ks = knob_now(d, t, k, have, sizeof(have));
		if (ks != KS_OK)
			(*problems)++;
		kn = drf_json_append_object(knobs);
		drf_json_set_str(kn, "file", drf_knob_file(k, rc->io));
		drf_json_set_str(kn, "desired", t->want.val[k]);
		drf_json_set_str(kn, "actual", have);
		drf_json_set_str(kn, "state", ks_names[ks]);
		drf_json_set_str(kn, "error", t->err[k] ? strerror(t->err[k]) : NULL);
	}
}

/* A tenant's network: what it is allocated, what tc and the map hold, what it used. */
static void json_net_tenant(const struct drfd *d, size_t i, json_object *o, int *problems)
{
	const struct drf_shaper *s = &d->net;
	const struct drf_shaper_tenant *t = &s->t[i];
	const struct drf_share *sh = &d->plan.result.shares[i];
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

		drf_json_set_num(eg, "alloc_bps", sh->alloc[DRF_RES_NET]);
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

		drf_json_set_num(in, "alloc_bps", sh->alloc[DRF_RES_NET_IN]);
		drf_json_set_u64(in, "policer_bps", (uint64_t)t->want_map.in_rate * 8);
		drf_json_set_u64(in, "burst_bytes", t->want_map.in_burst);
		drf_json_set_u64(in, "bytes", t->cnt.in_bytes);
		drf_json_set_u64(in, "packets", t->cnt.in_packets);
		drf_json_set_u64(in, "dropped", t->cnt.in_dropped);
		drf_json_set_u64(in, "marked", t->cnt.in_marked);
		drf_json_set_num(in, "bps", t->in_bps);
	}
}

static void json_net(const struct drfd *d, json_object *o, int *problems)
{
	const struct drf_shaper *s = &d->net;
	json_object *net;
	char h[16];

	if (!d->has_net) {
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
static void json_use(const struct drfd *d, size_t i, json_object *o, int *problems)
{
	const struct drf_usage *u = &d->use;
	const struct drf_tenant_use *t = &u->t[i];
	const double *cap = d->decl.problem.capacity;
	json_object *use = drf_json_set_object(o, "use"), *res, *x;

	drf_json_set_num(use, "window_tick_s",
			 t->prev.t_us ? (double)(t->now.t_us - t->prev.t_us) / 1e6 : NAN);
	drf_json_set_num(use, "window_minute_s", t->window_min_s);
	res = drf_json_set_object(use, "resources");
	for (int r = 0; r < DRF_NRES; r++) {
		if (!(cap[r] > 0))
			continue;
		x = drf_json_set_object(res, drf_res_name(r));
		drf_json_set_num(x, "declared", t->declared[r]);
		drf_json_set_num(x, "allocation", t->alloc[r]);
		drf_json_set_num(x, "limit", t->limit[r]);
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
static void text_use(const struct drfd *d, size_t i, FILE *f, int *problems)
{
	const struct drf_usage *u = &d->use;
	const struct drf_tenant_use *t = &u->t[i];
	const double *cap = d->decl.problem.capacity;
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
static void json_demand(const struct drfd *d, size_t i, json_object *o)
{
	const struct drf_tenant_use *t = &d->use.t[i];
	const struct drf_declared *p = &d->decl;
	const struct drf_plan *e = &d->plan;
	json_object *dem = drf_json_set_object(o, "demand");

	for (int r = 0; r < DRF_NRES; r++) {
		json_object *x;

		if (!(p->problem.capacity[r] > 0))
			continue;
		x = drf_json_set_object(dem, drf_res_name(r));
		drf_json_set_num(x, "declared", p->demands[i].shape[r] > 0
				 ? p->demands[i].shape[r] * p->demands[i].max_units : 0);
		drf_json_set_num(x, "effective",
				 e->problem.demands[i].shape[r] * e->problem.demands[i].max_units);
		drf_json_set_num(x, "declared_allocation", p->result.shares[i].alloc[r]);
		drf_json_set_str(x, "why", drf_dem_why_name(t->dem.changed_why[r]));
		drf_json_set_str(x, "now", drf_dem_why_name(t->dem.why[r]));
		drf_json_set_u64(x, "changed_ticks_ago", d->online.steps - t->dem.changed_tick[r]);
		drf_json_set_bool(x, "pressure", t->dem_pressured & (1u << r));
	}
	drf_json_set_u64(dem, "changes", t->dem.changes);
}

/* The same for people. */
static void text_demand(const struct drfd *d, size_t i, FILE *f)
{
	const struct drf_tenant_use *t = &d->use.t[i];
	const struct drf_declared *p = &d->decl;
	const struct drf_plan *e = &d->plan;
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
static void json_socket(const struct drfd *d, json_object *o)
{
	struct drf_sock_stats st;
	json_object *so = drf_json_set_object(o, "socket");

	drfd_sock_stats(d, &st);
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

/* {RES: number} of the resources with a capacity. */
static void json_res(json_object *o, const char *key, const double *cap, const double *v)
{
	json_object *x = drf_json_set_object(o, key);

	for (int r = 0; r < DRF_NRES; r++)
		if (cap[r] > 0)
			drf_json_set_num(x, drf_res_name(r), v[r]);
}

static void render_json(const struct drfd *d, FILE *f, int *problems)
{
	const struct drf_plan *e = &d->plan;
	const struct drf_reconciler *rc = &d->rc;
	json_object *o = drf_json_object(), *x, *a;
	int r;

	drf_json_set_str(o, "source", "daemon");
	drf_json_set_int(o, "pid", getpid());
	drf_json_set_str(o, "config", d->config_path);
	drf_json_set_str(o, "cgroup_root", d->root);
	drf_json_set_str(o, "policy", drf_policy_name(e->decl->cfg.policy));
	drf_json_set_str(o, "mode", drf_mode_name(e->decl->cfg.mode));
	drf_json_set_str(o, "demand", d->decl.cfg.observed ? "observed" : "declared");
	x = drf_json_set_object(o, "online");
	drf_json_set_bool(x, "active", d->plan.effective);
	drf_json_set_u64(x, "steps", d->online.steps);
	drf_json_set_u64(x, "replans", d->online.replans);
	drf_json_set_num(o, "interval_ms", (double)e->decl->cfg.interval_us / 1000);
	drf_json_set_num(o, "verify_period_ms", (double)e->decl->cfg.verify_period_us / 1000);
	/* unix seconds to the millisecond, as the text has them */
	drf_json_set_fixed(o, "started", (double)d->started / 1e6, 3);
	drf_json_set_fixed(o, "last_tick", (double)d->last_tick / 1e6, 3);
	drf_json_set_u64(o, "ticks", d->ticks);
	drf_json_set_u64(o, "reloads", d->reloads);
	drf_json_set_u64(o, "reloads_refused", d->reloads_refused);
	x = drf_json_set_object(o, "errors");
	drf_json_set_u64(x, "total", rc->total_errors);
	drf_json_set_u64(x, "retrying", d->last.retrying);
	drf_json_set_u64(x, "memory_worker_failures", rc->worker_failures);
	drf_json_set_u64(o, "writes_total", rc->total_writes);
	drf_json_set_u64(o, "foreign_total", rc->total_foreign);
	json_socket(d, o);
	a = drf_json_set_array(o, "root_errors");
	for (int i = 0; i < CGFS_NCTRL; i++) {
		if (!(rc->root_failed & (1u << i)))
			continue;
		(*problems)++;
		x = drf_json_append_object(a);
		drf_json_set_str(x, "controller", cgfs_ctrl_name(1u << i));
		drf_json_set_str(x, "error", strerror(-rc->root_err[i]));
	}
	if (d->state_path[0]) {
		x = drf_json_set_object(o, "state_file");
		drf_json_set_str(x, "path", d->state_path);
		drf_json_set_bool(x, "saved", !d->state_err);
		drf_json_set_str(x, "error", d->state_err ? strerror(-d->state_err) : NULL);
	} else {
		drf_json_set_null(o, "state_file");
	}
	if (d->state_err)
		(*problems)++;
	json_res(o, "capacity", e->problem.capacity, e->problem.capacity);
	x = drf_json_set_object(o, "usage");
	drf_json_set_bool(x, "probes", d->use.probes);
	drf_json_set_bool(x, "probes_adopted", d->use.probes_adopted);
	drf_json_set_str(x, "probes_why", d->use.probes ? NULL : d->use.probes_why);
	drf_json_set_num(x, "jain_allocation", d->use.jain_alloc);
	drf_json_set_num(x, "jain_use", d->use.jain_use);
	a = drf_json_set_array(o, "tenants");
	for (size_t i = 0; i < rc->n; i++) {
		const struct drf_tenant_rt *t = &rc->t[i];
		const struct drf_share *sh = &e->result.shares[i];
		json_object *te = drf_json_append_object(a), *us;
		struct usage u;

		usage_now(d, t->cgroup, &u);
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
		drf_json_set_int(us, "processes", u.procs < 0 ? 0 : u.procs);
		drf_json_set_str(te, "cgroup_error", t->cg_err ? strerror(t->cg_err) : NULL);
		if (t->cg_err)
			(*problems)++;
		json_knobs(d, t, te, problems);
		if (d->has_net && i < d->net.n)
			json_net_tenant(d, i, te, problems);
		if (i < d->use.n && d->use.samples)
			json_use(d, i, te, problems);
		if (d->plan.effective && i < d->use.n)
			json_demand(d, i, te);
	}
	a = drf_json_set_array(o, "inner");
	for (size_t i = rc->n; i < rc->n + rc->n_inner; i++) {
		const struct drf_tenant_rt *t = &rc->t[i];

		x = drf_json_append_object(a);
		drf_json_set_str(x, "cgroup", t->cgroup);
		drf_json_set_str(x, "cgroup_error", t->cg_err ? strerror(t->cg_err) : NULL);
		if (t->cg_err)
			(*problems)++;
		json_knobs(d, t, x, problems);
	}
	json_net(d, o, problems);
	a = drf_json_set_array(o, "orphans");
	for (size_t i = 0; i < rc->n_orphans; i++) {
		int np = cgfs_nprocs(d->fs, rc->orphans[i].cgroup);

		x = drf_json_append_object(a);
		drf_json_set_str(x, "name", rc->orphans[i].name);
		drf_json_set_str(x, "cgroup", rc->orphans[i].cgroup);
		drf_json_set_int(x, "processes", np < 0 ? 0 : np);
	}
	/*
	 * Out of memory, the body is empty: drfctl status --json prints nothing a
	 * parser takes, never a document with parts missing.
	 */
	r = drf_json_print(f, o);
	if (r < 0)
		drf_log(d->log, LOG_ERR, "cannot write the status as JSON: %s", strerror(-r));
	json_object_put(o);
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

static void text_net_tenant(const struct drfd *d, size_t i, FILE *f, int *problems)
{
	const struct drf_shaper *s = &d->net;
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
static void text_knobs(const struct drfd *d, const struct drf_tenant_rt *t, FILE *f, int *problems)
{
	const struct drf_plan *e = &d->plan;
	const struct drf_reconciler *rc = &d->rc;

	for (int k = 0; k < DRF_NKNOBS; k++) {
		char have[512];
		enum knob_state ks;

		if (!t->want.set[k])
			continue;
		ks = knob_now(d, t, k, have, sizeof(have));
		fprintf(f, "  %-14s %-28s ", drf_knob_file(k, rc->io), have);
		switch (ks) {
		case KS_OK:
			fputs("ok\n", f);
			continue;
		case KS_DRIFT:
			fprintf(f, "DRIFT: drfd wants %s; restored within %.0fs\n",
				t->want.val[k], (double)e->decl->cfg.verify_period_us / 1e6);
			break;
		case KS_RETRYING:
			fprintf(f, "RETRYING: writing %s failed: %s\n", t->want.val[k],
				strerror(t->err[k]));
			break;
		case KS_WAITING:
			fprintf(f, "WAITING: memory usage is above %s; memory.high holds it "
				   "until usage drops\n", t->target);
			break;
		case KS_UNREAD:
			fprintf(f, "UNREADABLE: drfd wants %s\n", t->want.val[k]);
			break;
		}
		(*problems)++;
	}
}

static void render_text(const struct drfd *d, FILE *f, int *problems)
{
	const struct drf_plan *e = &d->plan;
	const struct drf_reconciler *rc = &d->rc;
	/* In the same clock and precision as started and last_tick. */
	double now = (double)drf_real_usec(d->env->clock) / 1e6;
	char up[32], ago[32], q[64];

	human_duration(now - (double)d->started / 1e6, up, sizeof(up));
	human_duration(now - (double)d->last_tick / 1e6, ago, sizeof(ago));
	fprintf(f, "drfd (pid %d): %s: policy %s, mode %s, demand %s, root %s\n", (int)getpid(),
		d->config_path, drf_policy_name(e->decl->cfg.policy), drf_mode_name(e->decl->cfg.mode),
		d->decl.cfg.observed ? "observed" : "declared", d->root);
	if (d->plan.effective)
		fprintf(f, "observed demand: %llu steps, the effective plan changed %llu times\n",
			(unsigned long long)d->online.steps, (unsigned long long)d->online.replans);
	fprintf(f, "up %s, %llu ticks, the last %s ago; every knob is read back at least every "
		   "%.0fs\n", up, (unsigned long long)d->ticks, ago,
		(double)e->decl->cfg.verify_period_us / 1e6);
	fprintf(f, "errors: %llu since start, %u writes failing and retried each tick, %llu "
		   "memory-worker failures; reloads: %llu, %llu refused\n",
		(unsigned long long)rc->total_errors, d->last.retrying,
		(unsigned long long)rc->worker_failures, (unsigned long long)d->reloads,
		(unsigned long long)d->reloads_refused);
	for (int i = 0; i < CGFS_NCTRL; i++) {
		bool on = rc->ctrls & (1u << i);

		if (!(rc->root_failed & (1u << i)))
			continue;
		(*problems)++;
		fprintf(f, "ROOT: cannot make %s %s '%s' down: %s; retried each tick\n", d->root,
			on ? "pass" : "stop passing", cgfs_ctrl_name(1u << i),
			strerror(-rc->root_err[i]));
	}
	if (d->state_err) {
		(*problems)++;
		fprintf(f, "STATE UNSAVED: cannot write the state file '%s': %s; retried each tick "
			   "(until it is saved, a restart would not clean up tenants removed "
			   "meanwhile)\n", d->state_path, strerror(-d->state_err));
	}
	if (d->has_net) {
		const struct drf_shaper *s = &d->net;
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
	if (rc->n == 0)
		fprintf(f, "\nno tenants: %s defines none\n", d->config_path);
	for (size_t i = 0; i < rc->n; i++) {
		const struct drf_tenant_rt *t = &rc->t[i];
		const struct drf_share *sh = &e->result.shares[i];
		struct usage u;

		fprintf(f, "\ntenant %s (cgroup %s/%s)\n  allocation:", t->name, d->root, t->cgroup);
		for (int r = 0; r < DRF_NRES; r++) {
			if (!(e->problem.capacity[r] > 0))
				continue;
			drf_format_quantity(sh->alloc[r], drf_res_unit(r), q, sizeof(q));
			fprintf(f, " %s %s", drf_res_name(r), q);
		}
		fprintf(f, "; dominant %s %.3f, limited by %s\n  usage:",
			drf_res_name(sh->dominant_res), sh->dominant_share,
			sh->limited_by == DRF_LIMIT_DEMAND ? "demand" : drf_res_name(sh->limited_by));
		usage_now(d, t->cgroup, &u);
		if (!isnan(u.memory)) {
			drf_format_quantity(u.memory, DRF_UNIT_BYTES, q, sizeof(q));
			fprintf(f, " memory %s", q);
		}
		if (!isnan(u.cpu_usec))
			fprintf(f, " cpu %.1fs", u.cpu_usec / 1e6);
		fprintf(f, " processes %d\n", u.procs < 0 ? 0 : u.procs);
		if (t->cg_err) {
			(*problems)++;
			fprintf(f, "  cgroup cannot be created: %s; retried each tick\n",
				strerror(t->cg_err));
		}
		text_knobs(d, t, f, problems);
		if (d->has_net && i < d->net.n)
			text_net_tenant(d, i, f, problems);
		if (d->plan.effective && i < d->use.n)
			text_demand(d, i, f);
		if (i < d->use.n && d->use.samples)
			text_use(d, i, f, problems);
	}
	for (size_t i = rc->n; i < rc->n + rc->n_inner; i++) {
		const struct drf_tenant_rt *t = &rc->t[i];

		fprintf(f, "\ninner cgroup %s/%s (above tenants: weights from their sum)\n", d->root,
			t->cgroup);
		if (t->cg_err) {
			(*problems)++;
			fprintf(f, "  cgroup cannot be created: %s; retried each tick\n",
				strerror(t->cg_err));
		}
		text_knobs(d, t, f, problems);
	}
	if (rc->n_orphans)
		fputs("\norphans (departed tenants whose cgroups still hold processes; kept with "
		      "their limits and removed once empty):\n", f);
	for (size_t i = 0; i < rc->n_orphans; i++) {
		int np = cgfs_nprocs(d->fs, rc->orphans[i].cgroup);

		fprintf(f, "  %s (cgroup %s/%s): %d processes\n", rc->orphans[i].name, d->root,
			rc->orphans[i].cgroup, np < 0 ? 0 : np);
	}
}

int drfd_status_render(const struct drfd *d, bool json, FILE *out)
{
	int problems = 0;

	if (json)
		render_json(d, out, &problems);
	else
		render_text(d, out, &problems);
	return problems;
}

int drfd_req_feed(struct drfd_req *r, const char *data, size_t n)
{
	const char *nl;
	size_t take, keep;

	if (r->done)
		return 1;
	if (n == 0) {
		r->done = true;
		return 1;
	}
	nl = memchr(data, '\n', n);
	take = nl ? (size_t)(nl - data) : n;
	/* Past the limit only counted, for the refusal: never kept, never run. */
	r->seen = r->seen > SIZE_MAX - take ? SIZE_MAX : r->seen + take;
	keep = DRF_REQ_MAX - r->len < take ? DRF_REQ_MAX - r->len : take;
	if (keep && r->len + keep + 1 > r->cap) {
		size_t nc = r->cap ? r->cap : 256;
		char *nb;

		while (nc < r->len + keep + 1)
			nc *= 2;
		if (nc > DRF_REQ_MAX + 1)
			nc = DRF_REQ_MAX + 1;
		nb = realloc(r->buf, nc);
		if (!nb)
			return -ENOMEM;
		r->buf = nb;
		r->cap = nc;
	}
	if (keep) {
		memcpy(r->buf + r->len, data, keep);
		r->len += keep;
		r->buf[r->len] = '\0';
	}
	r->done = nl != NULL;
	return r->done;
}

void drfd_req_free(struct drfd_req *r)
{
	free(r->buf);
	*r = (struct drfd_req){ 0 };
}

static int reply(char **out, size_t *out_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int reply(char **out, size_t *out_len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(out, fmt, ap);
	va_end(ap);
	if (n < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	*out_len = (size_t)n;
	return 0;
}

/* The answer to one request line (NUL-terminated, without its newline). */
static int dispatch(struct drfd *d, int fd, const char *req, char **out, size_t *out_len)
{
	char *body = NULL;
	size_t blen = 0;
	FILE *f;
	int problems = 0, n;

	n = drfd_tasks_answer(d, fd, req, out, out_len);
	if (n != 0)
		return n < 0 ? n : 0;
	if (strcmp(req, "root") == 0)
		return reply(out, out_len, "%s\n", d->root);
	if (strcmp(req, "metrics") == 0) {
		struct drf_view v;

		f = open_memstream(&body, &blen);
		if (!f)
			return -ENOMEM;
		fputs("drfd-metrics 1\n", f);
		drfd_view(d, &v);
		drf_metrics_render(&v, f);
		if (fclose(f) != 0) {
			free(body);
			return -ENOMEM;
		}
		*out = body;
		*out_len = blen;
		return 0;
	}
	if (strcmp(req, "status text") != 0 && strcmp(req, "status json") != 0)
		return reply(out, out_len, "drfd-status 1 error=unknown-request\n");
	f = open_memstream(&body, &blen);
	if (!f)
		return -ENOMEM;
	problems = drfd_status_render(d, strcmp(req, "status json") == 0, f);
	if (fclose(f) != 0) {
		free(body);
		return -ENOMEM;
	}
	n = reply(out, out_len, "drfd-status 1 problems=%d\n%s", problems, body);
	free(body);
	return n;
}

int drfd_req_answer(struct drfd *d, int fd, const struct drfd_req *r, char **out,
		    size_t *out_len)
{
	const char *line = r->buf ? r->buf : "";
	/* Task requests are answered in their own format, refusals included. */
	bool task = strncmp(line, "task", 4) == 0;
	char *req;
	int n;

	*out = NULL;
	*out_len = 0;
	if (r->seen > DRF_REQ_MAX && task)
		return reply(out, out_len, "drfd-task 1 refused\nrequest too long: %zu bytes, the "
			     "limit is %d\n", r->seen, DRF_REQ_MAX);
	if (r->seen > DRF_REQ_MAX)
		return reply(out, out_len, "drfd-status 1 error=request-too-long\n");
	/* A NUL would end the request early: what follows it would be dropped, not run. */
	if (memchr(line, '\0', r->len) && task)
		return reply(out, out_len, "drfd-task 1 refused\nmalformed request: it holds a "
			     "NUL byte\n");
	if (memchr(line, '\0', r->len))
		return reply(out, out_len, "drfd-status 1 error=malformed-request\n");
	req = strndup(line, r->len);
	if (!req)
		return -ENOMEM;
	/* "\r\n" from a terminal or socat ends the line too. */
	if (r->len && req[r->len - 1] == '\r')
		req[r->len - 1] = '\0';
	n = dispatch(d, fd, req, out, out_len);
	free(req);
	return n;
}

/* Sends what the socket takes now; done or failed: closed. */
static void conn_send(struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (sd_event_source_set_io_events(c->io, EPOLLOUT) < 0)
				break;
			return;
		}
		if (n <= 0)
			break;
		c->out_off += (size_t)n;
	}
	conn_free(c);
}

/* The request is complete: the answer, and the deadline to send it. */
static void conn_answer(struct conn *c)
{
	struct drfd_listener *l = c->l;
	int r = drfd_req_answer(l->d, c->fd, &c->req, &c->out, &c->out_len);

	if (c->req.seen > DRF_REQ_MAX)
		l->st.too_long++;
	drfd_req_free(&c->req);
	if (r < 0 || !c->out ||
	    sd_event_source_set_time_relative(c->timeout, DRFD_SEND_TIMEOUT_USEC) < 0 ||
	    sd_event_source_set_enabled(c->timeout, SD_EVENT_ONESHOT) < 0) {
		conn_free(c);
		return;
	}
	conn_send(c);
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct conn *c = userdata;
	char chunk[8192];
	ssize_t n;
	int r;

	(void)s;
	if (c->out) {
		if (revents & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			conn_send(c);
		return 0;
	}
	if (!(revents & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		return 0;
	/* One read per wakeup: a client that streams cannot keep the loop to itself. */
	n = read(fd, chunk, sizeof(chunk));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	/* A client that hangs up without asking gets nothing. */
	if (n < 0 || (n == 0 && c->req.seen == 0)) {
		conn_free(c);
		return 0;
	}
	r = drfd_req_feed(&c->req, chunk, (size_t)n);
	if (r < 0)
		conn_free(c);
	else if (r > 0)
		conn_answer(c);
	return 0;
}

static int on_conn_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct conn *c = userdata;

	(void)s;
	(void)usec;
	c->l->st.dropped++;
	conn_free(c);
	return 0;
}

/* Under the caps (status.h)? Root may go past the overall one, by its own slots. */
static bool admit(const struct drfd_listener *l, uid_t uid)
{
	unsigned mine = 0;

	if (uid == 0)
		return l->st.conns < DRFD_CONN_MAX + DRFD_CONN_ROOT;
	if (l->st.conns - l->st.root_conns >= DRFD_CONN_MAX)
		return false;
	for (const struct conn *c = l->conns; c; c = c->next)
		mine += c->uid == uid;
	return mine < DRFD_CONN_MAX_UID;
}

/*
 * Closes a connection over a cap. Returns how long accepting should pause,
 * in usec: 0 unless that was too many refusals for now.
 */
static uint64_t refuse(struct drfd_listener *l, int cfd, uid_t uid)
{
	static const char busy[] = "drfd-status 1 error=busy\n";
	uint64_t now = 0;

	/* Best effort: the socket is new, so its buffer has room for one line. */
	if (send(cfd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* closed below either way */
	}
	close(cfd);
	l->st.refused++;
	sd_event_now(l->d->event, CLOCK_MONOTONIC, &now);
	if (!l->refused_log_at || now - l->refused_log_at >= REFUSED_LOG_USEC) {
		drf_log(l->d->log, LOG_WARNING, "status socket: refused %llu connections over the "
						"limits (%d per user, %d in all; root always gets "
						"in), the last of uid %d",
			(unsigned long long)(l->st.refused - l->refused_logged), DRFD_CONN_MAX_UID,
			DRFD_CONN_MAX, (int)uid);
		l->refused_logged = l->st.refused;
		l->refused_log_at = now;
	}
	if (now - l->refuse_window_at >= DRFD_REFUSE_WINDOW_USEC) {
		l->refuse_window_at = now;
		l->refuse_in_window = 0;
	}
	if (++l->refuse_in_window < DRFD_REFUSE_MAX)
		return 0;
	l->st.refuse_pauses++;
	return l->refuse_window_at + DRFD_REFUSE_WINDOW_USEC - now;
}

static void conn_new(struct drfd_listener *l, int cfd, uid_t uid)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c) {
		close(cfd);
		return;
	}
	c->l = l;
	c->fd = cfd;
	c->uid = uid;
	c->next = l->conns;
	if (l->conns)
		l->conns->prev = c;
	l->conns = c;
	l->st.conns++;
	l->st.accepted++;
	if (uid == 0)
		l->st.root_conns++;
	if (sd_event_add_io(l->d->event, &c->io, cfd, EPOLLIN, on_conn_io, c) < 0 ||
	    sd_event_source_set_priority(c->io, SOCK_PRIORITY) < 0 ||
	    sd_event_add_time_relative(l->d->event, &c->timeout, CLOCK_MONOTONIC,
				       DRFD_REQ_TIMEOUT_USEC, 0, on_conn_timeout, c) < 0 ||
	    sd_event_source_set_priority(c->timeout, SOCK_PRIORITY) < 0)
		conn_free(c);
}

/* The listener off for usec; the retry timer turns it back on. */
static void pause_accepting(struct drfd_listener *l, uint64_t usec)
{
	sd_event_source_set_enabled(l->d->listen_src, SD_EVENT_OFF);
	/* The timer was made with the listener: arming it cannot run out of memory. */
	if (sd_event_source_set_time_relative(l->retry, usec) < 0 ||
	    sd_event_source_set_enabled(l->retry, SD_EVENT_ONESHOT) < 0)
		sd_event_source_set_enabled(l->d->listen_src, SD_EVENT_ON);
}

/*
 * accept failed for want of file descriptors (or memory): the pending
 * connection stays in the backlog, so a listener left on would wake the loop at
 * once, again and again. Off for a while instead, twice as long each time.
 */
static void back_off(struct drfd_listener *l, int err)
{
	uint64_t delay = l->backoff_usec;

	l->st.backoffs++;
	if (!l->backing_off)
		drf_log(l->d->log, LOG_WARNING, "status socket: cannot accept a connection: %s; "
						"retrying in %llu ms, then less often (up to once "
						"a second) while it fails",
			strerror(-err), (unsigned long long)(delay / 1000));
	l->backing_off = true;
	l->backoff_usec = delay * 2 > DRFD_BACKOFF_MAX_USEC ? DRFD_BACKOFF_MAX_USEC : delay * 2;
	pause_accepting(l, delay);
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct drfd_listener *l = userdata;

	(void)s;
	(void)usec;
	sd_event_source_set_enabled(l->d->listen_src, SD_EVENT_ON);
	return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct drfd_listener *l = userdata;

	(void)s;
	(void)revents;
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		uid_t uid;

		if (cfd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (cfd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (cfd < 0) {
			/* EMFILE, ENFILE, ENOBUFS, ENOMEM, or one that would repeat as well */
			back_off(l, -errno);
			return 0;
		}
		if (l->backing_off)
			drf_log(l->d->log, LOG_NOTICE, "status socket: accepting connections "
						       "again");
		l->backing_off = false;
		l->backoff_usec = DRFD_BACKOFF_MIN_USEC;
		/* Who connects, now: the caps are per user. Unknown is a user, never root. */
		uid = getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 ? cr.uid : (uid_t)-1;
		if (admit(l, uid)) {
			conn_new(l, cfd, uid);
		} else {
			uint64_t pause = refuse(l, cfd, uid);

			if (pause) {
				pause_accepting(l, pause);
				return 0;
			}
		}
	}
	return 0;
}

static const char *file_kind(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFLNK:
		return "a symbolic link";
	case S_IFIFO:
		return "a FIFO";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	}
	return "not a socket";
}

static int not_a_socket(const char *path, const struct stat *st, char *why, size_t len)
{
	snprintf(why, len, "status-socket '%s' is %s, not a socket: drfd replaces only a socket "
		 "that nobody serves, and leaves this alone; remove it or set another "
		 "status-socket", path, file_kind(st->st_mode));
	return -EEXIST;
}

/*
 * bind found path taken. A socket that nobody serves (its drfd died) is removed,
 * if it is still the one looked at; anything else is left as it is.
 */
static int take_stale(const char *path, const struct sockaddr_un *sa, char *why, size_t len)
{
	struct stat st, again;
	int probe, r;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0; /* gone meanwhile */
		r = -errno;
		snprintf(why, len, "cannot look at status-socket '%s': %s", path, strerror(-r));
		return r;
	}
	if (!S_ISSOCK(st.st_mode))
		return not_a_socket(path, &st, why, len);
	/* Non-blocking: a live drfd with a full backlog says EAGAIN instead of making us wait. */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (probe < 0) {
		r = -errno;
		snprintf(why, len, "cannot create a socket: %s", strerror(-r));
		return r;
	}
	r = connect(probe, (const struct sockaddr *)sa, sizeof(*sa)) == 0 ? 0 : -errno;
	close(probe);
	if (r == 0 || r == -EAGAIN) {
		snprintf(why, len, "status-socket '%s' is served by another drfd; give each drfd "
			 "its own status-socket", path);
		return -EADDRINUSE;
	}
	if (r != -ECONNREFUSED) {
		snprintf(why, len, "cannot tell whether status-socket '%s' is in use: %s; left as "
			 "it is", path, strerror(-r));
		return r;
	}
	if (lstat(path, &again) < 0 || again.st_dev != st.st_dev || again.st_ino != st.st_ino) {
		snprintf(why, len, "status-socket '%s' changed while drfd looked at it; left as "
			 "it is", path);
		return -EAGAIN;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		r = -errno;
		snprintf(why, len, "cannot remove the stale status-socket '%s': %s", path,
			 strerror(-r));
		return r;
	}
	return 0;
}

static int mkdir_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *slash = strrchr(path, '/');

	if (!slash || slash == path)
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(dir, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

/* Is path still the socket l bound? */
static bool still_ours(const struct drfd_listener *l, const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == l->dev &&
	       st.st_ino == l->ino;
}

int drfd_listen(struct drfd *d, const char *path, const char *group, char *why, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct drfd_listener *l;
	struct stat st;
	mode_t mode = 0600;
	gid_t gid = 0;
	int r;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, len, "status-socket '%s' is too long for a socket path", path);
		return -ENAMETOOLONG;
	}
	if (group) {
		struct group *g = getgrnam(group);

		if (!g) {
			snprintf(why, len, "status-group '%s': no such group", group);
			return -ENOENT;
		}
		gid = g->gr_gid;
		mode = 0660;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* Anything but a socket at the path is someone's file: refused, untouched. */
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
		return not_a_socket(path, &st, why, len);
	r = mkdir_parent(path);
	if (r < 0) {
		snprintf(why, len, "cannot create the directory of status-socket '%s': %s", path,
			 strerror(-r));
		return r;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	l->d = d;
	l->backoff_usec = DRFD_BACKOFF_MIN_USEC;
	l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		r = -errno;
		snprintf(why, len, "cannot create a socket: %s", strerror(-r));
		free(l);
		return r;
	}
	if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EADDRINUSE)
			goto fail;
		r = take_stale(path, &sa, why, len);
		if (r < 0) {
			close(l->fd);
			free(l);
			return r;
		}
		if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			goto fail;
	}
	/* What drfd made, so that it removes that and nothing else. */
	if (lstat(path, &st) < 0)
		goto fail;
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	if (chmod(path, mode) < 0 || (group && lchown(path, (uid_t)-1, gid) < 0) ||
	    listen(l->fd, LISTEN_BACKLOG) < 0)
		goto fail_bound;
	r = sd_event_add_io(d->event, &d->listen_src, l->fd, EPOLLIN, on_accept, l);
	if (r >= 0)
		r = sd_event_source_set_priority(d->listen_src, SOCK_PRIORITY);
	if (r >= 0)
		r = sd_event_add_time_relative(d->event, &l->retry, CLOCK_MONOTONIC,
					       DRFD_BACKOFF_MIN_USEC, 0, on_retry, l);
	if (r >= 0)
		r = sd_event_source_set_enabled(l->retry, SD_EVENT_OFF);
	if (r < 0) {
		snprintf(why, len, "cannot watch status-socket '%s': %s", path, strerror(-r));
		d->listen_src = sd_event_source_disable_unref(d->listen_src);
		sd_event_source_disable_unref(l->retry);
		if (still_ours(l, path))
			unlink(path);
		close(l->fd);
		free(l);
		return r;
	}
	d->listener = l;
	d->listen_fd = l->fd;
	d->socket_path = strdup(path);
	return 0;
fail_bound:
	r = -errno;
	if (still_ours(l, path))
		unlink(path);
	errno = -r;
fail:
	r = -errno;
	close(l->fd);
	free(l);
	snprintf(why, len, "cannot serve status-socket '%s': %s", path, strerror(-r));
	return r;
}

void drfd_unlisten(struct drfd *d)
{
	struct drfd_listener *l = d->listener;
	struct stat st;

	d->listen_src = sd_event_source_disable_unref(d->listen_src);
	if (!l)
		return;
	while (l->conns)
		conn_free(l->conns);
	sd_event_source_disable_unref(l->retry);
	close(l->fd);
	d->listen_fd = -1;
	/* Only the socket drfd bound: whatever someone put there since is theirs. */
	if (d->socket_path && still_ours(l, d->socket_path))
		unlink(d->socket_path);
	else if (d->socket_path && lstat(d->socket_path, &st) == 0)
		drf_log(d->log, LOG_NOTICE, "status-socket '%s' is no longer the socket drfd made: "
					    "left in place", d->socket_path);
	free(d->socket_path);
	d->socket_path = NULL;
	free(l);
	d->listener = NULL;
}

void drfd_sock_stats(const struct drfd *d, struct drf_sock_stats *ret)
{
	const struct drfd_listener *l = d->listener;
	int on = SD_EVENT_OFF;

	*ret = (struct drf_sock_stats){ 0 };
	if (!l)
		return;
	*ret = l->st;
	ret->listening = d->listen_src && sd_event_source_get_enabled(d->listen_src, &on) >= 0 &&
			 on != SD_EVENT_OFF;
}
