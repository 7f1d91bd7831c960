// SPDX-License-Identifier: MIT
/*
 * Prometheus metrics (see metrics.h), in the text exposition format 0.0.4:
 * every family has its # HELP and # TYPE lines and its samples together, in
 * base units, one a family and named at its end (_cores or _seconds, _bytes,
 * _bytes_per_second: the network's bits are divided by 8). A value that is
 * not known (NAN) has no sample line; no limit is +Inf. The figures are those
 * of the status, from the daemon's measurements (agent/core/use.h) and the
 * plan in force, as the view has them. The daemon's families are always
 * there; of the per-tenant ones, metrics-detail = basic has those of
 * basic_families (see there), full all of them. A family left out, or with
 * no sample (nothing measured, a resource that takes no part), has no
 * # HELP or # TYPE either (struct out). metrics-legacy-names adds drfd 0.3's
 * names (render_legacy).
 *
 * The file for node-exporter's textfile collector is replaced atomically: a
 * temporary file in the same directory (".NAME.XXXXXX", which the collector
 * skips: it reads only *.prom), written, fsync'ed and renamed over NAME.
 * drfd replaces or removes only a file it wrote: the one it renamed there
 * (its device and inode), or a regular file that starts with DRFD_METRICS_MARK, left
 * by an earlier drfd. Anything else at the path (a file of someone else's, a
 * directory, a symlink) is left alone, and said.
 */
#include "metrics.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* The resource label: the network's resources are named by direction. */
static const char *const res_label[DRF_NRES] = {
	[DRF_RES_CPU] = "cpu",
	[DRF_RES_MEMORY] = "memory",
	[DRF_RES_IO_READ] = "io-read",
	[DRF_RES_IO_WRITE] = "io-write",
	[DRF_RES_NET] = "net-egress",
	[DRF_RES_NET_IN] = "net-ingress",
};

/*
 * One unit per family, its suffix in the name (Prometheus's naming): a family
 * of quantities is one per unit, drfd_allocation_cores, _bytes and
 * _bytes_per_second, each with the resource label of its resources. The
 * units in the order their families are written; res_unit indexes it.
 */
static const char *const units[] = { "cores", "bytes", "bytes_per_second" };
#define NUNITS (sizeof(units) / sizeof(units[0]))
static const unsigned char res_unit[DRF_NRES] = {
	[DRF_RES_CPU] = 0,
	[DRF_RES_MEMORY] = 1,
	[DRF_RES_IO_READ] = 2,
	[DRF_RES_IO_WRITE] = 2,
	[DRF_RES_NET] = 2,
	[DRF_RES_NET_IN] = 2,
};

/*
 * A quantity of resource r in its base unit: bytes per second for the
 * network. Bytes and bytes per second are whole: the kernel counts whole
 * bytes and its knobs take whole bytes, and the fraction of a share
 * (21474836.479999997 bytes) or of a minute's mean (15950900.476171484) is
 * eight digits of nothing in every line. Cores keep every digit.
 */
static double base(int r, double v)
{
	if (r == DRF_RES_CPU)
		return v;
	return nearbyint(r == DRF_RES_NET || r == DRF_RES_NET_IN ? v / 8 : v);
}

/*
 * A sample value: +Inf, -Inf, a whole number's digits, or the shortest %.*g
 * that reads back exactly, the text of drf_format_double() (json.h) in at
 * most three tries: a number that 15 digits or fewer hold comes out of %.15g
 * with its fewest digits, so only %.16g and %.17g are left to try
 * (4.545454545454545e-05, where %.17g alone wrote 4.5454545454545452e-05).
 * len: at least 32.
 */
static const char *fmt_num(double v, char *buf, size_t len)
{
	if (isinf(v)) {
		snprintf(buf, len, "%s", v > 0 ? "+Inf" : "-Inf");
		return buf;
	}
	/* Counters and buckets, most of the text: whole, and faster by hand. */
	if (v == trunc(v) && fabs(v) < 1e15) {
		uint64_t x = (uint64_t)fabs(v);
		char digits[24], *p = buf;
		size_t n = 0;

		do {
			digits[n++] = (char)('0' + x % 10);
			x /= 10;
		} while (x);
		if (v < 0)
			*p++ = '-';
		while (n)
			*p++ = digits[--n];
		*p = '\0';
		return buf;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return buf;
}

/*
 * Where the text goes, and the family whose # HELP and # TYPE wait for its
 * first sample: a family with no sample (no tenant, nothing measured) has no
 * lines at all, as the format wants.
 */
struct out {
	FILE *f;
	const char *name, *type, *help;
	char sname[96];         /* a name made up for the family (a unit's suffix) */
};

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	o->name = name;
	o->type = type;
	o->help = help;
}

/* The family of name + "_" + suffix: its name kept in o. */
static const char *family_unit(struct out *o, const char *name, const char *suffix,
			       const char *type, const char *help)
{
	snprintf(o->sname, sizeof(o->sname), "%s_%s", name, suffix);
	family(o, o->sname, type, help);
	return o->sname;
}

/* A sample line, built in memory and written in one go (a tick writes many). */
struct line {
	FILE *f;
	size_t n;
	char b[512];
};

/* Appends s, escaped as a label value when esc (\\, \" and \n). */
static void put(struct line *l, const char *s, bool esc)
{
	for (; *s; s++) {
		/* Room for an escaped character; a longer line goes out in parts. */
		if (l->n + 2 > sizeof(l->b)) {
			fwrite(l->b, 1, l->n, l->f);
			l->n = 0;
		}
		if (esc && (*s == '\\' || *s == '"')) {
			l->b[l->n++] = '\\';
			l->b[l->n++] = *s;
		} else if (esc && *s == '\n') {
			l->b[l->n++] = '\\';
			l->b[l->n++] = 'n';
		} else {
			l->b[l->n++] = *s;
		}
	}
}

/*
 * One sample line, name{key="value",...} v; the labels are key, value pairs
 * ending with NULL. Nothing for NAN: the value is not known.
 */
static void __attribute__((sentinel)) sample(struct out *o, const char *name, double v, ...)
{
	struct line l = { .f = o->f };
	const char *key;
	bool first = true;
	char num[40];
	va_list ap;

	if (isnan(v))
		return;
	if (o->name) {
		fprintf(o->f, "# HELP %s %s\n# TYPE %s %s\n", o->name, o->help, o->name, o->type);
		o->name = NULL;
	}
	put(&l, name, false);
	va_start(ap, v);
	while ((key = va_arg(ap, const char *))) {
		put(&l, first ? "{" : ",", false);
		put(&l, key, false);
		put(&l, "=\"", false);
		put(&l, va_arg(ap, const char *), true);
		put(&l, "\"", false);
		first = false;
	}
	va_end(ap);
	put(&l, first ? " " : "} ", false);
	put(&l, fmt_num(v, num, sizeof(num)), false);
	put(&l, "\n", false);
	fwrite(l.b, 1, l.n, o->f);
}

/* The measurements of tenant i, or NULL before there are any. */
static const struct drf_tenant_use *tenant_use(const struct drf_view *v, size_t i)
{
	return v->use->t && i < v->use->n ? &v->use->t[i] : NULL;
}

static bool takes_part(const struct drf_view *v, int r)
{
	return v->decl->problem.capacity[r] > 0;
}

/* The resources that take part, as bits (1 << r). */
static unsigned taking_part(const struct drf_view *v)
{
	unsigned bits = 0;

	for (int r = 0; r < DRF_NRES; r++)
		if (takes_part(v, r))
			bits |= 1u << r;
	return bits;
}

static void render_daemon(const struct drf_view *v, struct out *f)
{
	family(f, "drfd_up", "gauge", "Whether drfd runs (1).");
	sample(f, "drfd_up", 1, NULL);
	family(f, "drfd_last_tick_timestamp_seconds", "gauge",
	       "When drfd last sampled and enforced, in seconds since the epoch.");
	sample(f, "drfd_last_tick_timestamp_seconds",
	       v->last_tick ? (double)v->last_tick / 1e6 : NAN, NULL);
	family(f, "drfd_ticks_total", "counter", "Ticks (sample, allocate, enforce) since start.");
	sample(f, "drfd_ticks_total", (double)v->ticks, NULL);
	family(f, "drfd_loop_turn_max_seconds", "gauge",
	       "The longest turn of drfd's event loop (one event source served: a tick, a step of "
	       "enforcement, an answer) in the last minute; the watchdog and the sockets wait for "
	       "a turn in progress.");
	sample(f, "drfd_loop_turn_max_seconds", (double)v->loop.max_us / 1e6, NULL);
	if (v->http.on) {
		const struct drf_http_stats *h = &v->http;

		family(f, "drfd_http_responses_total", "counter",
		       "Answers of the HTTP metrics endpoint since start, by status code.");
		sample(f, "drfd_http_responses_total", (double)h->ok, "code", "200", NULL);
		sample(f, "drfd_http_responses_total", (double)h->not_found, "code", "404", NULL);
		sample(f, "drfd_http_responses_total", (double)h->not_allowed, "code", "405", NULL);
		sample(f, "drfd_http_responses_total", (double)h->unavailable, "code", "503", NULL);
		family(f, "drfd_http_connections_shut_total", "counter",
		       "Connections of the HTTP metrics endpoint its limits shut since start: at a "
		       "deadline (a slow request or reader), or to make room for a new one.");
		sample(f, "drfd_http_connections_shut_total", (double)h->past_deadline, "reason",
		       "deadline", NULL);
		sample(f, "drfd_http_connections_shut_total", (double)h->evicted, "reason",
		       "evicted", NULL);
	}
	family(f, "drfd_loop_turns_total", "counter", "Turns of drfd's event loop since start.");
	sample(f, "drfd_loop_turns_total", (double)v->loop.turns, NULL);
	family(f, "drfd_loop_slow_turns_total", "counter",
	       "Turns of drfd's event loop over 0.1 s since start.");
	sample(f, "drfd_loop_slow_turns_total", (double)v->loop.slow, NULL);
	/* Named as Prometheus names its own: alert on successful == 0. */
	family(f, "drfd_config_last_reload_successful", "gauge",
	       "Whether the last reload put its config in force (1), or was refused (0) and the "
	       "config before it stays in force; 1 from the start until a reload.");
	sample(f, "drfd_config_last_reload_successful", v->reload_ok ? 1 : 0, NULL);
	family(f, "drfd_config_last_reload_success_timestamp_seconds", "gauge",
	       "When a config was last put in force (the last successful reload, or the start), "
	       "in seconds since the epoch.");
	sample(f, "drfd_config_last_reload_success_timestamp_seconds",
	       v->reload_ok_at ? (double)v->reload_ok_at / 1e6 : NAN, NULL);
	if (v->tasks.on) {
		family(f, "drfd_task_output_truncated_total", "counter",
		       "Tasks whose end drfd recorded since start with stdout or stderr cut at "
		       "task-output-max (bytes dropped).");
		sample(f, "drfd_task_output_truncated_total", (double)v->tasks.truncated_total,
		       NULL);
	}
	if (v->fleet.on) {
		family(f, "drfd_fleet_etcd_reachable", "gauge",
		       "A fleet node: whether etcd answers (1), or not (0: the last assignment stays "
		       "in force).");
		sample(f, "drfd_fleet_etcd_reachable", v->fleet.reachable ? 1 : 0, NULL);
		family(f, "drfd_fleet_planner", "gauge",
		       "A fleet node: whether this node is the fleet's elected planner.");
		sample(f, "drfd_fleet_planner", v->fleet.planner ? 1 : 0, NULL);
		family(f, "drfd_fleet_assignment_revision", "gauge",
		       "A fleet node: the etcd revision its assignment in force was planned from; "
		       "NaN before the first.");
		sample(f, "drfd_fleet_assignment_revision",
		       v->fleet.in_force_revision ? (double)v->fleet.in_force_revision : NAN, NULL);
		family(f, "drfd_fleet_assignment_refused", "gauge",
		       "A fleet node: whether it refused its latest assignment (1: the one before "
		       "stays in force, and the node offers it again).");
		sample(f, "drfd_fleet_assignment_refused", v->fleet.refused ? 1 : 0, NULL);
		family(f, "drfd_fleet_planner_vacant", "gauge",
		       "A fleet node: whether the planner key names no live node (1: nobody plans "
		       "the fleet; the node deletes the key so that the nodes campaign again).");
		sample(f, "drfd_fleet_planner_vacant", v->fleet.planner_vacant ? 1 : 0, NULL);
		family(f, "drfd_fleet_silent_nodes", "gauge",
		       "The fleet's planner: nodes whose registration is gone, their share kept "
		       "planned on them for the [fleet] grace period.");
		sample(f, "drfd_fleet_silent_nodes", (double)v->fleet.silent_nodes, NULL);
	}
	family(f, "drfd_probes_up", "gauge",
	       "Whether the eBPF probes (run-queue wait, on-CPU time, IO requests) are attached "
	       "and counting (1) or not (0).");
	sample(f, "drfd_probes_up", v->use->probes ? 1 : 0, NULL);
	family(f, "drfd_write_errors_total", "counter",
	       "Failed cgroup knob writes since start (each is retried every tick).");
	sample(f, "drfd_write_errors_total", (double)v->rc->total_errors, NULL);
	family(f, "drfd_writes_retrying", "gauge", "Knob writes failing and retried each tick.");
	sample(f, "drfd_writes_retrying", (double)v->last->retrying, NULL);
	if (v->state_path[0]) {
		family(f, "drfd_state_saved", "gauge",
		       "Whether the state file (the cgroups drfd made, for its next start) holds "
		       "the tenants in force (1), or its last save failed and is retried each tick "
		       "(0).");
		sample(f, "drfd_state_saved", v->state_err ? 0 : 1, NULL);
	}
	family(f, "drfd_jain_index", "gauge",
	       "Jain's fairness index over the tenants' weighted dominant shares, of the "
	       "allocation and of the use (1: all equal; 1/n: one tenant has everything).");
	sample(f, "drfd_jain_index", v->use->jain_alloc, "of", "allocation", NULL);
	sample(f, "drfd_jain_index", v->use->jain_use, "of", "use", NULL);
	family(f, "drfd_effective_plan_changes_total", "counter",
	       "Times the allocation in force changed because an effective demand did (demand = "
	       "observed).");
	sample(f, "drfd_effective_plan_changes_total", (double)v->online->replans, NULL);
	for (size_t u = 0; u < NUNITS; u++) {
		const char *name = family_unit(f, "drfd_capacity", units[u], "gauge",
					       "The capacity drfd shares; resources that take no "
					       "part are left out.");

		for (int r = 0; r < DRF_NRES; r++)
			if (takes_part(v, r) && res_unit[r] == u)
				sample(f, name, base(r, v->decl->problem.capacity[r]), "resource",
				       res_label[r], NULL);
	}
	family(f, "drfd_knob_no_effect", "gauge",
	       "1 when the resource's knobs have no effect on this host (drfctl status says why).");
	for (int r = 0; r < DRF_NRES; r++)
		if (takes_part(v, r))
			sample(f, "drfd_knob_no_effect", v->use->no_effect & (1u << r) ? 1 : 0,
			       "resource", res_label[r], NULL);
}

/*
 * The per-tenant families of metrics-detail = basic, the metrics-file's
 * default. With six resources full has 100 lines a tenant, and 52 more with
 * the probes (two histograms): megabytes each tick at 1,000 tenants, for a
 * textfile collector that Prometheus scrapes every 15 s and keeps for weeks.
 * Basic has what a dashboard shows and an alert fires on: 2 lines a tenant
 * and resource and 4 more. At six resources that is about 1,105 bytes a tenant
 * named t0 to t999 (the plan's allocations, use that is no round number:
 * test_basic_size in test_metrics.c), and 16 more for each character of a
 * longer name. The dominant shares are left to full: PromQL derives them
 * from basic's allocation, use and capacity.
 * - drfd_allocation_<unit>: what DRF gives the tenant, per resource.
 * - drfd_use_<unit>, window 1m only: what it uses, against that. A scrape every 15
 *   to 60 s would catch one tick of many (noise); the minute is what a scrape
 *   interval spans.
 * - drfd_tenant_weight, one series: weighted DRF evens out share / weight.
 * - drfd_enforcement_not_holding_resources: the alert, one series a tenant
 *   (full says which resources, in drfd_enforcement_not_holding).
 * - drfd_cpu_usage_seconds_total: the kernel's counter, whose rate() is exact
 *   over any range, missed scrapes or not.
 * - drfd_memory_current_bytes: memory now, the peaks the minute's mean hides
 *   (the OOM killer acts on those).
 * Left to full: the demands (the config's, or the cause of an allocation
 * that is there already), the limits (what the knobs make of the
 * allocation), the tick's use, the gap and the ratios (derived: alloc - use,
 * x / drfd_capacity), which resource is not holding, and the diagnosis: the
 * probes' histograms and counters, pressure, memory events, io and network
 * counters. drfctl top asks the socket, whose metrics are always full.
 */
static const char *const basic_families[] = {
	"drfd_allocation",
	"drfd_use",
	"drfd_tenant_weight",
	"drfd_enforcement_not_holding_resources",
	"drfd_cpu_usage_seconds_total",
	"drfd_memory_current_bytes",
};

/* Whether a per-tenant family is rendered at this detail. */
static bool shown(const char *name, enum drf_metrics_detail detail)
{
	if (detail == DRF_METRICS_FULL)
		return true;
	for (size_t k = 0; k < sizeof(basic_families) / sizeof(basic_families[0]); k++)
		if (strcmp(name, basic_families[k]) == 0)
			return true;
	return false;
}

/* The families per tenant and resource. */
enum tr {
	TR_DECLARED,
	TR_EFFECTIVE,
	TR_ALLOC,
	TR_LIMIT,
	TR_USE,         /* two windows */
	TR_GAP,
	TR_NOT_HOLDING,
	TR_ALLOC_RATIO,
	TR_USE_RATIO,
};

/*
 * A family with a unit is written once per unit (name_cores, name_bytes,
 * name_bytes_per_second); a ratio or a flag, one family for all resources.
 */
static const struct {
	const char *name, *help;
	enum tr what;
	bool unit;
} tr_families[] = {
	{ "drfd_declared_demand", "The demand the tenant declared; +Inf: none declared.",
	  TR_DECLARED, true },
	{ "drfd_effective_demand", "The demand the allocation in force was computed from: with "
	  "demand = observed, the one that follows measured use (at most the declared demand, "
	  "capped at capacity); else the declared one.", TR_EFFECTIVE, true },
	{ "drfd_allocation", "The tenant's allocation in force.", TR_ALLOC, true },
	{ "drfd_limit", "The hard limit drfd's knobs enforce; +Inf: no hard limit.", TR_LIMIT,
	  true },
	{ "drfd_use", "Measured use over the last tick (window tick, with metrics-detail = "
	  "full) and over up to the last minute (window 1m).", TR_USE, true },
	{ "drfd_use_gap", "Allocation minus use over the last tick (negative: using more than "
	  "allocated).", TR_GAP, true },
	{ "drfd_enforcement_not_holding", "1 when the tenant's use is above what its limit allows "
	  "(the limit does not hold), else 0.", TR_NOT_HOLDING, false },
	{ "drfd_allocation_ratio", "The tenant's allocation as a fraction of the capacity.",
	  TR_ALLOC_RATIO, false },
	{ "drfd_use_ratio", "The tenant's use over the last tick as a fraction of the capacity.",
	  TR_USE_RATIO, false },
};
#define NTR (sizeof(tr_families) / sizeof(tr_families[0]))

static double tr_value(const struct drf_tenant_use *u, int r, double cap, enum tr what,
		       bool eff_active)
{
	switch (what) {
	case TR_EFFECTIVE:
		return base(r, u->dem.started && eff_active ? u->dem.eff[r] : u->declared[r]);
	case TR_DECLARED:
		return base(r, u->declared[r]);
	case TR_ALLOC:
		return base(r, u->alloc[r]);
	case TR_LIMIT:
		return base(r, u->limit[r]);
	case TR_USE:
		return base(r, u->use_tick[r]);
	case TR_GAP:
		return base(r, u->gap[r]);
	case TR_NOT_HOLDING:
		return u->not_holding & (1u << r) ? 1 : 0;
	case TR_ALLOC_RATIO:
		return u->alloc[r] / cap;
	case TR_USE_RATIO:
		return u->use_tick[r] / cap;
	}
	return NAN;
}

/*
 * The samples of family k, named name, of the resources in unit u (all of
 * them: u NUNITS).
 */
static void tr_samples(const struct drf_view *v, bool tick, size_t k, const char *name,
		       size_t u, struct out *f)
{
	const struct drf_config *c = &v->decl->cfg;

	for (size_t i = 0; i < c->n_tenants; i++) {
		const struct drf_tenant_use *tu = tenant_use(v, i);
		const char *t = c->tenants[i].name;

		for (int r = 0; tu && r < DRF_NRES; r++) {
			double cap = v->decl->problem.capacity[r];

			if (!takes_part(v, r) || (u < NUNITS && res_unit[r] != u))
				continue;
			if (tr_families[k].what != TR_USE) {
				sample(f, name, tr_value(tu, r, cap, tr_families[k].what,
							 v->plan->effective),
				       "tenant", t, "resource", res_label[r], NULL);
				continue;
			}
			if (tick)
				sample(f, name, base(r, tu->use_tick[r]), "tenant", t, "resource",
				       res_label[r], "window", "tick", NULL);
			sample(f, name, base(r, tu->use_min[r]), "tenant", t, "resource",
			       res_label[r], "window", "1m", NULL);
		}
	}
}

static void render_tenant_resources(const struct drf_view *v, enum drf_metrics_detail detail,
				    struct out *f)
{
	bool tick = detail == DRF_METRICS_FULL; /* drfd_use over the tick too */

	for (size_t k = 0; k < NTR; k++) {
		const char *name = tr_families[k].name;

		if (!shown(name, detail))
			continue;
		if (!tr_families[k].unit) {
			family(f, name, "gauge", tr_families[k].help);
			tr_samples(v, tick, k, name, NUNITS, f);
			continue;
		}
		for (size_t u = 0; u < NUNITS; u++)
			tr_samples(v, tick, k, family_unit(f, name, units[u], "gauge",
							   tr_families[k].help),
				   u, f);
	}
}

/* Where a per-tenant series takes its value from. */
enum src {
	S_WEIGHT,
	S_DOMINANT_ALLOC,
	S_DOMINANT_USE,
	S_NOT_HOLDING,  /* how many resources */
	S_CTR,          /* now.c[idx] / div */
	S_GAUGE,        /* gauge[idx] */
	S_HIST_RUNQ,    /* a histogram family of its own */
	S_HIST_IO,
	S_PRESSURE,     /* every signal */
};

/*
 * The per-tenant families, in the order they are written. The rows of one
 * family are consecutive; its first row has the type and help. A row's extra
 * labels (k1=v1, k2=v2) come after tenant.
 */
static const struct row {
	const char *name, *type, *help;
	enum src src;
	int idx;
	double div;     /* the value in the base unit is the figure divided by this */
	const char *k1, *v1, *k2, *v2;
} rows[] = {
	{ "drfd_tenant_weight", "gauge", "The tenant's weight.", S_WEIGHT, 0, 1, NULL, NULL,
	  NULL, NULL },
	{ "drfd_dominant_share_ratio", "gauge", "The tenant's dominant share: its largest share "
	  "of any resource's capacity, of its allocation and of its use over the last tick.",
	  S_DOMINANT_ALLOC, 0, 1, "of", "allocation", NULL, NULL },
	{ "drfd_dominant_share_ratio", NULL, NULL, S_DOMINANT_USE, 0, 1, "of", "use", NULL, NULL },
	{ "drfd_enforcement_not_holding_resources", "gauge", "How many of the tenant's resources "
	  "it uses above what their limits allow (the limits do not hold): 0 when all hold.",
	  S_NOT_HOLDING, 0, 1, NULL, NULL, NULL, NULL },
	{ "drfd_cpu_usage_seconds_total", "counter", "CPU time the tenant's cgroup used "
	  "(cpu.stat usage_usec).", S_CTR, DRF_CTR_CPU_USEC, 1e6, NULL, NULL, NULL, NULL },
	{ "drfd_cpu_oncpu_seconds_total", "counter", "On-CPU time of the tenant's threads, "
	  "counted by the probe.", S_CTR, DRF_CTR_ONCPU_NS, 1e9, NULL, NULL, NULL, NULL },
	{ "drfd_cpu_throttled_seconds_total", "counter", "Time the tenant's cgroup was throttled "
	  "by cpu.max (cpu.stat throttled_usec).", S_CTR, DRF_CTR_CPU_THROTTLED_USEC, 1e6, NULL,
	  NULL, NULL, NULL },
	{ "drfd_cpu_runqueue_wait_seconds", "histogram", "Run-queue waits of the tenant's "
	  "threads (from wakeup or preemption to running), counted by the probe.", S_HIST_RUNQ,
	  DRF_CTR_RUNQ_NS, 1e9, NULL, NULL, NULL, NULL },
	{ "drfd_memory_current_bytes", "gauge", "Memory the tenant's cgroup uses "
	  "(memory.current).", S_GAUGE, DRF_GAUGE_MEM_CURRENT, 1, NULL, NULL, NULL, NULL },
	{ "drfd_memory_working_set_bytes", "gauge", "The tenant's working set: anon + file - "
	  "inactive_file of memory.stat.", S_GAUGE, DRF_GAUGE_MEM_WORKING_SET, 1, NULL, NULL,
	  NULL, NULL },
	{ "drfd_memory_events_total", "counter", "memory.events of the tenant's cgroup: times "
	  "over memory.high, at memory.max, and OOM kills.", S_CTR, DRF_CTR_MEM_EVENTS_HIGH, 1,
	  "event", "high", NULL, NULL },
	{ "drfd_memory_events_total", NULL, NULL, S_CTR, DRF_CTR_MEM_EVENTS_MAX, 1, "event",
	  "max", NULL, NULL },
	{ "drfd_memory_events_total", NULL, NULL, S_CTR, DRF_CTR_MEM_EVENTS_OOM_KILL, 1, "event",
	  "oom_kill", NULL, NULL },
	{ "drfd_io_read_bytes_total", "counter", "Bytes the tenant read from io-device, as the "
	  "probe counted requests issued and as io.stat has them.", S_CTR, DRF_CTR_PROBE_RBYTES,
	  1, "source", "probe", NULL, NULL },
	{ "drfd_io_read_bytes_total", NULL, NULL, S_CTR, DRF_CTR_IO_RBYTES, 1, "source",
	  "io.stat", NULL, NULL },
	{ "drfd_io_written_bytes_total", "counter", "Bytes the tenant wrote to io-device, as the "
	  "probe counted requests issued and as io.stat has them.", S_CTR, DRF_CTR_PROBE_WBYTES,
	  1, "source", "probe", NULL, NULL },
	{ "drfd_io_written_bytes_total", NULL, NULL, S_CTR, DRF_CTR_IO_WBYTES, 1, "source",
	  "io.stat", NULL, NULL },
	{ "drfd_io_reads_total", "counter", "Read requests of the tenant to io-device (probe: "
	  "requests issued; io.stat: rios).", S_CTR, DRF_CTR_PROBE_RREQS, 1, "source", "probe",
	  NULL, NULL },
	{ "drfd_io_reads_total", NULL, NULL, S_CTR, DRF_CTR_IO_RIOS, 1, "source", "io.stat", NULL,
	  NULL },
	{ "drfd_io_writes_total", "counter", "Write requests of the tenant to io-device (probe: "
	  "requests issued; io.stat: wios).", S_CTR, DRF_CTR_PROBE_WREQS, 1, "source", "probe",
	  NULL, NULL },
	{ "drfd_io_writes_total", NULL, NULL, S_CTR, DRF_CTR_IO_WIOS, 1, "source", "io.stat",
	  NULL, NULL },
	{ "drfd_io_request_seconds", "histogram", "Issue-to-completion time of the tenant's IO "
	  "requests, counted by the probe.", S_HIST_IO, DRF_CTR_PROBE_LAT_NS, 1e9, NULL, NULL,
	  NULL, NULL },
	{ "drfd_network_transmit_bytes_total", "counter", "Bytes the tenant sent on net-device.",
	  S_CTR, DRF_CTR_NET_TX_BYTES, 1, NULL, NULL, NULL, NULL },
	{ "drfd_network_transmit_packets_total", "counter", "Packets the tenant sent on "
	  "net-device.", S_CTR, DRF_CTR_NET_TX_PACKETS, 1, NULL, NULL, NULL, NULL },
	{ "drfd_network_receive_bytes_total", "counter", "Bytes the tenant received on "
	  "net-device.", S_CTR, DRF_CTR_NET_RX_BYTES, 1, NULL, NULL, NULL, NULL },
	{ "drfd_network_receive_packets_total", "counter", "Packets the tenant received on "
	  "net-device.", S_CTR, DRF_CTR_NET_RX_PACKETS, 1, NULL, NULL, NULL, NULL },
	{ "drfd_network_receive_dropped_total", "counter", "Packets to the tenant the ingress "
	  "policer dropped.", S_CTR, DRF_CTR_NET_RX_DROPPED, 1, NULL, NULL, NULL, NULL },
	{ "drfd_network_receive_marked_total", "counter", "Packets to the tenant the ingress "
	  "policer marked with ECN instead of dropping them.", S_CTR, DRF_CTR_NET_RX_MARKED, 1,
	  NULL, NULL, NULL, NULL },
	{ "drfd_pressure_ratio", "gauge", "Pressure on the tenant over the last tick, as the "
	  "fraction of the tick stalled: run-queue wait (per second: can exceed 1 with many "
	  "threads), cpu.max throttling, and PSI's some and full.", S_PRESSURE, 0, 1, NULL,
	  NULL, NULL, NULL },
	{ "drfd_pressure_stalled_seconds_total", "counter", "PSI totals of the tenant's cgroup: "
	  "time some or all of its tasks stalled on the resource.", S_CTR,
	  DRF_CTR_PSI_CPU_SOME_USEC, 1e6, "controller", "cpu", "kind", "some" },
	{ "drfd_pressure_stalled_seconds_total", NULL, NULL, S_CTR, DRF_CTR_PSI_CPU_FULL_USEC,
	  1e6, "controller", "cpu", "kind", "full" },
	{ "drfd_pressure_stalled_seconds_total", NULL, NULL, S_CTR, DRF_CTR_PSI_MEMORY_SOME_USEC,
	  1e6, "controller", "memory", "kind", "some" },
	{ "drfd_pressure_stalled_seconds_total", NULL, NULL, S_CTR, DRF_CTR_PSI_MEMORY_FULL_USEC,
	  1e6, "controller", "memory", "kind", "full" },
	{ "drfd_pressure_stalled_seconds_total", NULL, NULL, S_CTR, DRF_CTR_PSI_IO_SOME_USEC,
	  1e6, "controller", "io", "kind", "some" },
	{ "drfd_pressure_stalled_seconds_total", NULL, NULL, S_CTR, DRF_CTR_PSI_IO_FULL_USEC,
	  1e6, "controller", "io", "kind", "full" },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* The le labels of the log2 buckets (drf_hist_upper_s), formatted once per render. */
struct le_labels {
	char s[DRF_HIST_BUCKETS][32];
};

/*
 * A histogram: cumulative _bucket lines up to le="+Inf", _sum (sum, seconds)
 * and _count, which the format wants equal to the +Inf bucket and so is the
 * buckets' total. Nothing while sum is not known (no probe).
 */
static void histogram(struct out *f, const char *name, const char *tenant, const uint64_t *h,
		      double sum, const struct le_labels *le)
{
	char bucket[64], total[64], count[64];
	uint64_t acc = 0;

	if (isnan(sum))
		return;
	snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	snprintf(total, sizeof(total), "%s_sum", name);
	snprintf(count, sizeof(count), "%s_count", name);
	for (unsigned b = 0; b < DRF_HIST_BUCKETS; b++) {
		acc += h[b];
		sample(f, bucket, (double)acc, "tenant", tenant, "le", le->s[b], NULL);
	}
	if (!isinf(drf_hist_upper_s(DRF_HIST_BUCKETS - 1)))
		sample(f, bucket, (double)acc, "tenant", tenant, "le", "+Inf", NULL);
	sample(f, total, sum, "tenant", tenant, NULL);
	sample(f, count, (double)acc, "tenant", tenant, NULL);
}

static void row_sample(const struct drf_view *v, struct out *f, const struct row *w, size_t i,
		       const struct le_labels *le)
{
	const struct drf_tenant_use *u = tenant_use(v, i);
	const char *t = v->decl->cfg.tenants[i].name;
	double x = NAN;

	switch (w->src) {
	case S_WEIGHT:
		x = v->decl->cfg.tenants[i].weight;
		break;
	case S_DOMINANT_ALLOC:
		x = u ? u->dominant_alloc : NAN;
		break;
	case S_DOMINANT_USE:
		x = u ? u->dominant_use : NAN;
		break;
	case S_NOT_HOLDING:
		x = u ? __builtin_popcount(u->not_holding & taking_part(v)) : NAN;
		break;
	case S_CTR:
		x = u ? u->now.c[w->idx] / w->div : NAN;
		break;
	case S_GAUGE:
		x = u ? u->gauge[w->idx] / w->div : NAN;
		break;
	case S_HIST_RUNQ:
	case S_HIST_IO:
		if (u)
			histogram(f, w->name, t, w->src == S_HIST_RUNQ ? u->runq_hist
								       : u->io_lat_hist,
				  u->now.c[w->idx] / w->div, le);
		return;
	case S_PRESSURE:
		for (int p = 0; u && p < DRF_NPRESSURE; p++)
			sample(f, w->name, u->pressure[p], "tenant", t, "signal",
			       drf_pressure_name(p), NULL);
		return;
	}
	/* drfd 0.3 named the controller resource: both, while its names are asked for. */
	if (w->k2 && v->decl->cfg.metrics_legacy_names && strcmp(w->k1, "controller") == 0)
		sample(f, w->name, x, "tenant", t, w->k1, w->v1, "resource", w->v1, w->k2, w->v2,
		       NULL);
	else if (w->k2)
		sample(f, w->name, x, "tenant", t, w->k1, w->v1, w->k2, w->v2, NULL);
	else if (w->k1)
		sample(f, w->name, x, "tenant", t, w->k1, w->v1, NULL);
	else
		sample(f, w->name, x, "tenant", t, NULL);
}

/*
 * The resources a row's family is about (bits 1 << r), when it has samples
 * only where one of them takes part: io-device's counters and histogram
 * without an io capacity, net-device's without a network one, are zeros that
 * say nothing. 0: always there.
 */
static unsigned row_needs(const struct row *w)
{
	unsigned io = 1u << DRF_RES_IO_READ | 1u << DRF_RES_IO_WRITE;

	if (w->src == S_HIST_IO)
		return io;
	if (w->src != S_CTR)
		return 0;
	if (w->idx >= DRF_CTR_IO_RBYTES && w->idx <= DRF_CTR_PROBE_DONE)
		return io;
	if (w->idx == DRF_CTR_NET_TX_BYTES || w->idx == DRF_CTR_NET_TX_PACKETS)
		return 1u << DRF_RES_NET;
	if (w->idx >= DRF_CTR_NET_RX_BYTES && w->idx <= DRF_CTR_NET_RX_MARKED)
		return 1u << DRF_RES_NET_IN;
	return 0;
}

static void render_tenants(const struct drf_view *v, enum drf_metrics_detail detail, struct out *f)
{
	size_t n = v->decl->cfg.n_tenants;
	struct le_labels le;

	for (unsigned b = 0; b < DRF_HIST_BUCKETS; b++)
		fmt_num(drf_hist_upper_s(b), le.s[b], sizeof(le.s[b]));

	for (size_t a = 0, b; a < NROWS; a = b) {
		for (b = a + 1; b < NROWS && strcmp(rows[b].name, rows[a].name) == 0; b++)
			;
		if (!shown(rows[a].name, detail) ||
		    (row_needs(&rows[a]) && !(row_needs(&rows[a]) & taking_part(v))))
			continue;
		family(f, rows[a].name, rows[a].type, rows[a].help);
		for (size_t i = 0; i < n; i++)
			for (size_t k = a; k < b; k++)
				row_sample(v, f, &rows[k], i, &le);
	}
}

/*
 * drfd 0.3's names, beside the new ones, with metrics-legacy-names = yes: its
 * families of mixed units (drfd_allocation{resource=...} in cores, bytes and
 * bytes per second) and the run-queue counter, whose name collides with the
 * histogram's in OpenMetrics (its _sum is the same figure). The pressure
 * family has the resource label beside controller (row_sample). Gone in the
 * release after 0.4.
 */
static void render_legacy(const struct drf_view *v, enum drf_metrics_detail detail,
			  struct out *f)
{
	bool tick = detail == DRF_METRICS_FULL;
	const struct drf_config *c = &v->decl->cfg;

	family(f, "drfd_capacity", "gauge", "Deprecated (drfd_capacity_<unit>): the capacity, "
	       "in the resource's base unit.");
	for (int r = 0; r < DRF_NRES; r++)
		if (takes_part(v, r))
			sample(f, "drfd_capacity", base(r, v->decl->problem.capacity[r]), "resource",
			       res_label[r], NULL);
	for (size_t k = 0; k < NTR; k++) {
		if (!tr_families[k].unit || !shown(tr_families[k].name, detail))
			continue;
		family(f, tr_families[k].name, "gauge", "Deprecated (this name with the unit's "
		       "suffix): the same in the resource's base unit.");
		tr_samples(v, tick, k, tr_families[k].name, NUNITS, f);
	}
	if (detail != DRF_METRICS_FULL)
		return;
	family(f, "drfd_cpu_runqueue_wait_seconds_total", "counter", "Deprecated "
	       "(drfd_cpu_runqueue_wait_seconds_sum): time runnable but waiting for a CPU.");
	for (size_t i = 0; i < c->n_tenants; i++) {
		const struct drf_tenant_use *u = tenant_use(v, i);

		if (u)
			sample(f, "drfd_cpu_runqueue_wait_seconds_total",
			       u->now.c[DRF_CTR_RUNQ_NS] / 1e9, "tenant", c->tenants[i].name, NULL);
	}
}

int drf_metrics_render(const struct drf_view *v, enum drf_metrics_detail detail, FILE *out)
{
	struct out o = { .f = out };

	render_daemon(v, &o);
	render_tenant_resources(v, detail, &o);
	render_tenants(v, detail, &o);
	if (v->decl->cfg.metrics_legacy_names)
		render_legacy(v, detail, &o);
	return ferror(out) ? -EIO : 0;
}

/*
 * Replaces path with DRFD_METRICS_MARK and buf: a temporary file beside it, written,
 * fsync'ed, made 0644 and renamed over it, its identity in *ret; on failure the
 * temporary file is removed and why says what failed.
 *
 * Not drf_replace() (fileio.h), on purpose: it fsyncs the directory after the
 * rename, a journal commit more each tick for a file that is rewritten the
 * next tick and removed when drfd stops (a crash leaves the old file or the
 * new one, whole, either way); its temporary file has a fixed name that it
 * removes whoever wrote it, where drfd removes only files it wrote; and its
 * -errno does not say which step failed, which the log does here.
 */
static int replace_file(const char *path, const char *buf, size_t len, struct stat *ret,
			char *why, size_t wlen)
{
	const char *slash = strrchr(path, '/');
	const char *step = "cannot create a temporary file in its directory";
	char tmp[PATH_MAX];
	int fd, r;

	r = snprintf(tmp, sizeof(tmp), "%.*s/.%s.XXXXXX", (int)(slash - path), path, slash + 1);
	if (r < 0 || (size_t)r >= sizeof(tmp)) {
		snprintf(why, wlen, "the path is too long");
		return -ENAMETOOLONG;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		goto fail_nofile;
	step = "cannot make the temporary file 0644";
	if (fchmod(fd, 0644) < 0)
		goto fail;
	step = "cannot write the temporary file";
	for (int part = 0; part < 2; part++) {
		const char *p = part ? buf : DRFD_METRICS_MARK;
		size_t n = part ? len : strlen(DRFD_METRICS_MARK), off = 0;

		while (off < n) {
			ssize_t w = write(fd, p + off, n - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				goto fail;
			off += (size_t)w;
		}
	}
	step = "cannot fsync the temporary file";
	if (fsync(fd) < 0 || fstat(fd, ret) < 0)
		goto fail;
	step = "cannot close the temporary file";
	r = close(fd);
	fd = -1;
	if (r < 0)
		goto fail;
	step = "cannot rename the temporary file over it";
	if (rename(tmp, path) < 0)
		goto fail;
	return 0;
fail:
	r = -errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	snprintf(why, wlen, "%s: %s", step, strerror(-r));
	return r;
fail_nofile:
	r = -errno;
	snprintf(why, wlen, "%s: %s", step, strerror(-r));
	return r;
}

/* How the file of a drfd from before DRFD_METRICS_MARK starts: its first family. */
#define OLD_FIRST_LINE "# HELP drfd_up Whether drfd runs (1).\n"

/*
 * Whether the regular file at dirfd/name (path when dirfd is AT_FDCWD) was
 * written by a drfd: it starts with DRFD_METRICS_MARK (or, left by a drfd of
 * before the mark, with OLD_FIRST_LINE), or, for a temporary file of a drfd
 * killed before it wrote anything, is empty and drfd's own. Anything but a
 * regular file is not opened at all (a FIFO, a device).
 */
static bool written_by_drfd(int dirfd, const char *name, bool empty_ok)
{
	char head[sizeof(DRFD_METRICS_MARK)];
	struct stat st;
	bool ours = false;
	ssize_t n;
	int fd;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return false;
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		n = read(fd, head, sizeof(head) - 1);
		ours = (n >= (ssize_t)strlen(DRFD_METRICS_MARK) &&
			memcmp(head, DRFD_METRICS_MARK, strlen(DRFD_METRICS_MARK)) == 0) ||
		       (n >= (ssize_t)strlen(OLD_FIRST_LINE) &&
			memcmp(head, OLD_FIRST_LINE, strlen(OLD_FIRST_LINE)) == 0) ||
		       (empty_ok && n == 0 && st.st_uid == geteuid());
	}
	close(fd);
	return ours;
}

/*
 * Removes the temporary files a drfd killed while writing left beside path
 * (".NAME.XXXXXX" that drfd wrote); once per path, before its first write.
 */
static void remove_stale_temps(const struct drf_logger *log, const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX], prefix[NAME_MAX + 3];
	size_t n;
	struct dirent *e;
	DIR *dp;
	int fd;

	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	n = (size_t)snprintf(prefix, sizeof(prefix), ".%s.", slash + 1);
	if (n >= sizeof(prefix))
		return;
	dp = opendir(dir);
	if (!dp)
		return;
	fd = dirfd(dp);
	while ((e = readdir(dp)))
		if (strncmp(e->d_name, prefix, n) == 0 && strlen(e->d_name) == n + 6 &&
		    written_by_drfd(fd, e->d_name, true) && unlinkat(fd, e->d_name, 0) == 0)
			drf_log(log, LOG_NOTICE, "removed '%s/%s', left by a drfd stopped while "
						 "writing metrics-file", dir, e->d_name);
	closedir(dp);
}

/*
 * Whether path may be replaced: nothing is there, or the file drfd renamed
 * there last, or one an earlier drfd wrote. Else why not, in why.
 */
static bool may_replace(const struct drf_metrics_file *m, const char *path, char *why,
			size_t len)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT;
	if (strcmp(path, m->last_written) == 0 && st.st_dev == m->written_dev &&
	    st.st_ino == m->written_ino)
		return true;
	if (S_ISREG(st.st_mode) && written_by_drfd(AT_FDCWD, path, false))
		return true;
	snprintf(why, len, "it is %s that drfd did not write; drfd leaves it alone (remove it, or "
		 "set metrics-file to a path of drfd's own)", S_ISREG(st.st_mode) ? "a file"
		 : S_ISDIR(st.st_mode) ? "a directory" : S_ISLNK(st.st_mode) ? "a symlink"
		 : "not a regular file");
	return false;
}

/* Removes the file drfd wrote last, if it is still that one. */
static void remove_written(struct drf_metrics_file *m, const char *how)
{
	struct stat st;

	if (!m->last_written[0])
		return;
	if (lstat(m->last_written, &st) < 0) {
		/* gone already */
	} else if (st.st_dev != m->written_dev || st.st_ino != m->written_ino) {
		drf_log(m->log, LOG_NOTICE, "metrics-file '%s' was replaced by a file drfd did not "
					    "write: left alone", m->last_written);
	} else if (unlink(m->last_written) < 0 && errno != ENOENT) {
		drf_log(m->log, LOG_WARNING, "cannot remove %smetrics-file '%s': %s",
			how, m->last_written, strerror(errno));
	} else if (how[0]) {
		drf_log(m->log, LOG_NOTICE, "removed the former metrics-file '%s'", m->last_written);
	}
	m->last_written[0] = '\0';
}

void drf_metrics_file_init(struct drf_metrics_file *m, const struct drf_logger *log)
{
	memset(m, 0, sizeof(*m));
	m->log = log;
}

int drf_metrics_render_text(const struct drf_view *v, enum drf_metrics_detail detail,
			    char **ret, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int r;

	if (!f)
		return -errno;
	r = drf_metrics_render(v, detail, f);
	if (fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

int drf_metrics_write_text(struct drf_metrics_file *m, const char *path, const char *text,
			   size_t len, int render_err)
{
	char why[256], msg[sizeof(m->last_failure)];
	struct stat st;
	int r;

	/* A reload moved or dropped the file: the old one would go on saying drfd_up 1. */
	if (m->last_written[0] && (!path || strcmp(path, m->last_written) != 0))
		remove_written(m, "the former ");
	if (!path)
		return 0;
	if (!m->last_written[0] && !m->last_failure[0])
		remove_stale_temps(m->log, path);
	if (!may_replace(m, path, why, sizeof(why))) {
		r = -EEXIST;
		goto fail;
	}
	if (render_err < 0) {
		r = render_err;
		snprintf(why, sizeof(why), "cannot render the metrics: %s", strerror(-r));
		goto fail;
	}
	r = replace_file(path, text, len, &st, why, sizeof(why));
	if (r < 0)
		goto fail;
	if (m->last_failure[0])
		drf_log(m->log, LOG_NOTICE, "metrics-file '%s' is written again", path);
	m->last_failure[0] = '\0';
	snprintf(m->last_written, sizeof(m->last_written), "%s", path);
	m->written_dev = st.st_dev;
	m->written_ino = st.st_ino;
	return 0;
fail:
	/* Said once per distinct failure, not every tick. */
	snprintf(msg, sizeof(msg), "%s: %s", path, why);
	if (strcmp(msg, m->last_failure) != 0) {
		/*
		 * Read-only where the directory is not: drfd.service's sandbox, whose
		 * ReadWritePaths= leave out a directory made after drfd started.
		 */
		drf_log(m->log, LOG_ERR, "cannot write metrics-file '%s': %s; drfd goes on and "
					 "retries each tick%s", path, why,
			r == -EROFS ? " (a read-only file system in drfd's own view: under "
				      "drfd.service, a directory made after drfd started, or one "
				      "outside its ReadWritePaths=, needs systemctl restart drfd or "
				      "a drop-in)" : "");
		snprintf(m->last_failure, sizeof(m->last_failure), "%s", msg);
	}
	return r;
}

int drf_metrics_write(struct drf_metrics_file *m, const char *path,
		      enum drf_metrics_detail detail, const struct drf_view *v)
{
	char *buf = NULL;
	size_t len = 0;
	int r = path ? drf_metrics_render_text(v, detail, &buf, &len) : 0;

	r = drf_metrics_write_text(m, path, buf, len, r);
	free(buf);
	return r;
}

void drf_metrics_stop(struct drf_metrics_file *m)
{
	/* A file left behind would say drfd_up 1 with no drfd: its absence says it. */
	remove_written(m, "");
}
