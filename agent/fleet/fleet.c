// SPDX-License-Identifier: MIT
/*
 * A drfd node of the fleet (see fleet.h): its lease and registration, the
 * planner's election and fence, the planner's watches and plans, and the
 * node's own assignment. Each part is a small state machine driven by the
 * callbacks of its etcd calls and by the tick; what fails is retried from
 * the tick after a backoff (250 ms doubling, at most a third of the TTL, so
 * that a keepalive is retried before the lease runs out).
 */
#include "fleet.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BACKOFF_MIN_USEC (250 * DRF_USEC_PER_MSEC)
/* The longest: P/taskstate/NODE/ID. */
#define KEY_MAX (DRF_FLEET_PREFIX_MAX + 2 * DRF_TENANT_NAME_MAX + 24)

struct backoff {
	unsigned failures;
	uint64_t at; /* not before (monotonic usec) */
};

struct fwatch;
/* A batch of events (the watch's position already moved past them). */
typedef void (*fwatch_events_fn)(struct fwatch *w, const struct etcd_watch_resp *r);
/* Read again, then fwatch_begin() from the read's revision + 1. */
typedef void (*fwatch_resync_fn)(struct fwatch *w);

/*
 * A watch kept up: broken, it starts again from the last revision seen + 1
 * (after a backoff); behind the compaction (-ESTALE), it re-reads (resync).
 */
struct fwatch {
	struct drf_fleet_node *n;
	const char *what; /* for messages */
	char key[KEY_MAX];
	bool prefix;
	bool want;        /* it should run */
	uint64_t id;      /* its etcd id while it runs, else 0 */
	int64_t from;     /* the revision to go on from; 0: re-read first */
	struct backoff bo;
	fwatch_events_fn events;
	fwatch_resync_fn resync;
};

struct pending_write {
	char *key;
	char *value; /* NULL: delete */
};

/*
 * As the planner: a node whose registration is gone while its assignment
 * stays. Its share stays planned on it, with this capacity, for the grace
 * period from since; after that it is planned elsewhere.
 */
struct silent_node {
	char name[DRF_TENANT_NAME_MAX + 1];
	double capacity[DRF_NRES]; /* all 0: not known (an older planner's value) */
	uint64_t since;            /* monotonic usec: first seen silent */
	bool past;                 /* its grace is over (said once) */
};

/* As the planner: a registered node's capacity, for when it falls silent. */
struct known_node {
	char name[DRF_TENANT_NAME_MAX + 1];
	double capacity[DRF_NRES];
};

/* A task's state to put (P/taskstate/NODE/ID). */
struct state_write {
	char id[DRF_TENANT_NAME_MAX + 1];
	char *value;
};

struct drf_fleet_node {
	char name[DRF_TENANT_NAME_MAX + 1];
	struct drf_fleet_keys k;
	char node_key[KEY_MAX];
	char assign_key[KEY_MAX];
	int64_t ttl;
	uint64_t grace;          /* usec: a silent node's share stays planned on it so long */
	char *node_value;
	char *state_dir;
	const struct drf_clock *clock;
	const struct drf_logger *log;
	void (*on_assignment)(void *userdata, const struct drf_fleet_assignment *a);
	void (*on_task)(void *userdata, const struct drf_fleet_task *t,
			const struct drf_fleet_task_state *s);
	void *userdata;
	struct etcd *e;
	bool started, closing;

	/* The lease and the registration. */
	int64_t lease, lease_ttl;
	bool lease_busy;
	uint64_t lease_sent;     /* when the grant or keepalive under way was sent */
	uint64_t lease_until;    /* the lease is alive at least until then */
	uint64_t next_keepalive;
	struct backoff lease_bo;
	bool registered, register_busy;
	int64_t register_lease;
	uint64_t value_gen, register_gen; /* node_value's changes; the one being put */
	struct backoff register_bo;

	/*
	 * The election. need_campaign: to campaign, or (a node that does not
	 * campaign) to read P/planner, and to watch it from there.
	 */
	bool plain;              /* [fleet] planner = no: never campaigns */
	bool campaign_refused;   /* etcd refused the campaign: permission denied (said once) */
	char campaign_refused_why[200];
	bool need_campaign, campaign_busy;
	int64_t campaign_lease;
	struct backoff campaign_bo;
	bool is_planner;
	int64_t token;
	char planner[DRF_TENANT_NAME_MAX + 1];
	int64_t planner_token;
	int64_t planner_lease, planner_mod; /* of P/planner as last seen */
	struct fwatch planner_w;
	/* Whether P/planner names a live node: a key nobody holds is taken over, never left. */
	bool pcheck_busy;
	int64_t pcheck_mod;      /* P/planner's mod revision when the check under way was sent */
	uint64_t pcheck_at;      /* the next look (monotonic usec) */
	bool planner_vacant;
	char vacant_why[200];
	uint64_t takeovers;

	/* Planning, while the planner. */
	struct fwatch nodes_w, tenants_w;
	uint64_t term;           /* bumped at each change of role */
	uint64_t plan_term;      /* the term of the plan under way */
	bool plan_busy, plan_dirty;
	bool plan_more;          /* the plan under way is a round short of DRFH: another follows */
	struct backoff plan_bo;
	int64_t plan_rev;        /* the revision of the last plan written */
	int64_t plan_read_rev;   /* of the last read */
	size_t seen_nodes, seen_tenants;
	char last_invalid[256];
	struct silent_node *silent;
	size_t nsilent, silent_kept;
	uint64_t silent_due;     /* the first grace to end (monotonic usec); UINT64_MAX: none */
	struct known_node *known;
	size_t nknown;
	struct pending_write *pw;
	size_t npw, pw_done, pw_chunk;
	uint64_t plans, keys_written, fenced, resyncs;

	/* The assignment. */
	struct drf_fleet_assignment cur;
	bool have_cur, cur_from_file;
	/* The owner's verdict on cur (drf_fleet_node_applied): in force, or refused and retried. */
	int64_t applied_rev;         /* of the last one in force; 0: none */
	bool cur_refused;
	char refused_why[256];
	struct backoff refused_bo;
	bool assign_read_busy;
	struct fwatch assign_w;

	/* The node's fleet tasks (on_task) and the states it writes back. */
	char tasks_key[KEY_MAX];     /* P/tasks/NODE/ */
	char taskstate_key[KEY_MAX]; /* P/taskstate/NODE/ */
	bool tasks_read_busy;
	struct fwatch tasks_w;
	struct state_write *sw;      /* in order; sw[0] is the one under way when sw_busy */
	size_t nsw, sw_cap;
	bool sw_busy;
	struct backoff sw_bo;

	/* For the status. */
	bool reachable;
	uint64_t since;
	char last_error[256];
};

static uint64_t now(const struct drf_fleet_node *n)
{
	return drf_mono_usec(n->clock);
}

static uint64_t ttl_usec(const struct drf_fleet_node *n)
{
	return (uint64_t)(n->lease_ttl > 0 ? n->lease_ttl : n->ttl) * DRF_USEC_PER_SEC;
}

static void bo_fail(const struct drf_fleet_node *n, struct backoff *b)
{
	uint64_t max = (uint64_t)n->ttl * DRF_USEC_PER_SEC / 3, d;

	if (max < DRF_USEC_PER_SEC)
		max = DRF_USEC_PER_SEC;
	d = BACKOFF_MIN_USEC << (b->failures < 12 ? b->failures : 12);
	b->at = now(n) + (d < max ? d : max);
	if (b->failures < 64)
		b->failures++;
}

static void bo_ok(struct backoff *b)
{
	b->failures = 0;
	b->at = 0;
}

static bool bo_due(const struct drf_fleet_node *n, const struct backoff *b)
{
	return now(n) >= b->at;
}

/* Errors that say etcd could not be reached (or could not serve), rather than refused. */
static bool unreachable(int err)
{
	switch (-err) {
	case ECONNREFUSED:
	case EHOSTUNREACH:
	case ETIMEDOUT:
	case EAGAIN:
	case ECONNRESET:
	case EPROTO:
	case EOPNOTSUPP:
		return true;
	default:
		return false;
	}
}

static void note_ok(struct drf_fleet_node *n)
{
	if (n->reachable)
		return;
	n->reachable = true;
	n->since = drf_real_usec(n->clock);
	drf_log(n->log, LOG_INFO, "fleet: etcd is reachable");
}

static void note_err(struct drf_fleet_node *n, int err, const char *msg, const char *what)
{
	char text[sizeof(n->last_error)];
	bool same;

	if (err == -ECANCELED)
		return;
	snprintf(text, sizeof(text), "%s: %s", what, msg ? msg : strerror(-err));
	same = strcmp(text, n->last_error) == 0;
	memcpy(n->last_error, text, sizeof(text));
	if (unreachable(err) && n->reachable) {
		n->reachable = false;
		n->since = drf_real_usec(n->clock);
		drf_log(n->log, LOG_WARNING, "fleet: etcd is unreachable (%s); the assignment in "
			"force stays", text);
		return;
	}
	/* Each failure once: its repetitions (retries) at debug. */
	drf_log(n->log, same || unreachable(err) ? LOG_DEBUG : LOG_WARNING, "fleet: %s", text);
}

static void lease_kick(struct drf_fleet_node *n);
static void silent_free(struct drf_fleet_node *n);
static void register_kick(struct drf_fleet_node *n);
static void campaign_kick(struct drf_fleet_node *n);
static void plan_kick(struct drf_fleet_node *n);
static void plan_request(struct drf_fleet_node *n);

/* Whether the node campaigns for the planner's role (else it only reads P/planner). */
static bool campaigns(const struct drf_fleet_node *n)
{
	return !n->plain && !n->campaign_refused;
}

/* Watches. */

static void fwatch_kick(struct fwatch *w);

static void fwatch_cb(void *userdata, int err, const char *msg, const struct etcd_watch_resp *r)
{
	struct fwatch *w = userdata;
	struct drf_fleet_node *n = w->n;

	if (n->closing)
		return;
	if (err) {
		w->id = 0;
		if (err == -ECANCELED)
			return;
		if (err == -ESTALE) {
			/* Behind the compaction: what it missed is gone; read again. */
			note_ok(n);
			n->resyncs++;
			drf_log(n->log, LOG_INFO, "fleet: the watch of %s fell behind etcd's "
				"compaction (revision %" PRId64 "): reading it again", w->key,
				r ? r->compact_revision : 0);
			w->from = 0;
			bo_ok(&w->bo);
			fwatch_kick(w);
			return;
		}
		note_err(n, err, msg, w->what);
		bo_fail(n, &w->bo);
		return;
	}
	note_ok(n);
	bo_ok(&w->bo);
	for (size_t i = 0; i < r->n_events; i++)
		if (r->events[i].kv.mod_revision >= w->from)
			w->from = r->events[i].kv.mod_revision + 1;
	w->events(w, r);
}

/* Watches from revision from (unless it runs already). */
static void fwatch_begin(struct fwatch *w, int64_t from)
{
	struct drf_fleet_node *n = w->n;
	int r;

	if (!w->want || w->id || n->closing)
		return;
	w->from = from;
	r = etcd_watch(n->e, &(struct etcd_watch_req){ .key = w->key, .prefix = w->prefix,
						       .start_revision = from },
		       fwatch_cb, w, &w->id);
	if (r < 0) {
		w->id = 0;
		note_err(n, r, NULL, w->what);
		bo_fail(n, &w->bo);
	}
}

static void fwatch_kick(struct fwatch *w)
{
	if (!w->want || w->id || w->n->closing || !bo_due(w->n, &w->bo))
		return;
	if (w->from == 0)
		w->resync(w);
	else
		fwatch_begin(w, w->from);
}

static void fwatch_stop(struct fwatch *w)
{
	w->want = false;
	if (w->id)
		etcd_cancel(w->n->e, w->id);
	w->id = 0;
	w->from = 0;
	bo_ok(&w->bo);
}

/* The assignment. */

static void assign_set(struct drf_fleet_node *n, struct drf_fleet_assignment *a)
{
	drf_fleet_assignment_clear(&n->cur);
	n->cur = *a;
	memset(a, 0, sizeof(*a));
	n->have_cur = true;
	n->cur_from_file = false;
	n->cur_refused = false;
	bo_ok(&n->refused_bo);
	drf_log(n->log, LOG_INFO, "fleet: assignment of revision %" PRId64 ": %zu tenants",
		n->cur.revision, n->cur.n);
	/* Saved in the state dir once the owner has it in force (drf_fleet_node_applied). */
	if (n->on_assignment)
		n->on_assignment(n->userdata, &n->cur);
	else
		drf_fleet_node_applied(n, n->cur.revision, 0, NULL);
}

void drf_fleet_node_applied(struct drf_fleet_node *n, int64_t revision, int err, const char *why)
{
	int r;

	/* A verdict on one that a newer assignment has replaced since. */
	if (!n->have_cur || revision != n->cur.revision)
		return;
	if (err) {
		n->cur_refused = true;
		snprintf(n->refused_why, sizeof(n->refused_why), "%s", why ? why : strerror(-err));
		/* Again in 5 s, then 10, 20, 40, at most a minute: what refused it may be mended. */
		n->refused_bo.at = now(n) + (5 * DRF_USEC_PER_SEC << (n->refused_bo.failures < 4
									? n->refused_bo.failures
									: 4));
		if (n->refused_bo.at > now(n) + 60 * DRF_USEC_PER_SEC)
			n->refused_bo.at = now(n) + 60 * DRF_USEC_PER_SEC;
		if (n->refused_bo.failures < 64)
			n->refused_bo.failures++;
		return;
	}
	n->cur_refused = false;
	n->refused_why[0] = '\0';
	bo_ok(&n->refused_bo);
	n->applied_rev = revision;
	/* The state dir keeps only what was in force: a restart starts from it. */
	if (n->state_dir && !n->cur_from_file) {
		r = drf_fleet_assignment_save(n->state_dir, n->name, n->k.prefix, &n->cur);
		if (r < 0) {
			snprintf(n->last_error, sizeof(n->last_error), "cannot save the assignment "
				 "in '%s': %s", n->state_dir, strerror(-r));
			drf_log(n->log, LOG_WARNING, "fleet: %s", n->last_error);
		}
	}
}

/* P/assign/NODE as etcd has it: value (len bytes), or none (gone). */
static void assign_apply(struct drf_fleet_node *n, const char *value, size_t len, bool gone)
{
	struct drf_fleet_assignment a = { 0 };
	char why[200];
	int r;

	if (gone) {
		/*
		 * The planner withdrew it: this node was gone from P/nodes/ past the
		 * planner's grace (stopped, cut off, its lease let go), or the key
		 * was deleted by hand. That is no plan for this node: what it runs
		 * stays in force, and it registers again (its lease may still be
		 * alive: the key deleted by hand, or by another drfd of the same
		 * name whose lease ended), so that the planner plans it anew. Only
		 * an assignment it receives changes its tenants.
		 */
		if (!n->have_cur)
			return; /* none yet: nothing was withdrawn */
		drf_log(n->log, LOG_WARNING, "fleet: the planner withdrew %s's assignment; revision "
			"%" PRId64 " stays in force until it plans this node again", n->name,
			n->cur.revision);
		if (n->registered && !n->register_busy) {
			n->registered = false;
			register_kick(n);
		}
		return;
	} else {
		r = drf_fleet_assignment_parse(value, len, &a, why, sizeof(why));
		if (r < 0) {
			/* Not applied: the last good one stays. */
			snprintf(n->last_error, sizeof(n->last_error), "%.120s: %.120s", n->assign_key,
				 r == -ENOMEM ? "out of memory" : why);
			drf_log(n->log, LOG_WARNING, "fleet: %s; the assignment in force stays",
				n->last_error);
			return;
		}
	}
	if (n->have_cur && n->cur.revision == a.revision &&
	    strcmp(n->cur.planner, a.planner) == 0 && drf_fleet_assignment_same(&n->cur, &a)) {
		n->cur_from_file = false; /* etcd says the same */
		drf_fleet_assignment_clear(&a);
		return;
	}
	assign_set(n, &a);
}

static void assign_range_cb(void *userdata, int err, const char *msg, const struct etcd_resp *r)
{
	struct drf_fleet_node *n = userdata;

	if (n->closing)
		return;
	n->assign_read_busy = false;
	if (err) {
		note_err(n, err, msg, n->assign_key);
		bo_fail(n, &n->assign_w.bo);
		return;
	}
	note_ok(n);
	if (r->n_kvs)
		assign_apply(n, r->kvs[0].value, r->kvs[0].value_len, false);
	else
		assign_apply(n, NULL, 0, true);
	fwatch_begin(&n->assign_w, r->revision + 1);
}

static void assign_resync(struct fwatch *w)
{
	struct drf_fleet_node *n = w->n;
	uint64_t id;
	int r;

	if (n->assign_read_busy)
		return;
	r = etcd_range(n->e, &(struct etcd_req){ .key = n->assign_key }, assign_range_cb, n, &id);
	if (r < 0) {
		note_err(n, r, NULL, n->assign_key);
		bo_fail(n, &w->bo);
		return;
	}
	n->assign_read_busy = true;
}

static void assign_events(struct fwatch *w, const struct etcd_watch_resp *r)
{
	for (size_t i = 0; i < r->n_events; i++) {
		const struct etcd_event *ev = &r->events[i];

		assign_apply(w->n, ev->kv.value, ev->kv.value_len, ev->type == ETCD_EVENT_DELETE);
	}
}

/* The node's fleet tasks. */

/* A task's key and value as etcd has it: handed over if it parses, else refused there. */
static void task_seen(struct drf_fleet_node *n, const struct etcd_kv *kv,
		      const struct drf_fleet_task_state *s)
{
	struct drf_fleet_task t;
	const char *id = kv->key + strlen(n->tasks_key);
	char why[256];
	int r;

	if (strlen(kv->key) != kv->key_len || !drf_name_valid(id)) {
		drf_log(n->log, LOG_WARNING, "fleet: %.200s: not a task's key (P/tasks/NODE/ID): "
			"passed over", kv->key);
		return;
	}
	r = drf_fleet_task_parse(n->name, id, kv->value, kv->value_len, &t, why, sizeof(why));
	if (r == -ENOMEM) {
		drf_log(n->log, LOG_ERR, "fleet: out of memory for task %s", id);
		return;
	}
	if (r < 0) {
		struct drf_fleet_task_state st = { .st = DRF_FLEET_TASK_REFUSED,
						   .at = (int64_t)(drf_real_usec(n->clock) /
								   DRF_USEC_PER_SEC) };

		snprintf(st.why, sizeof(st.why), "its value does not parse: %s", why);
		drf_log(n->log, LOG_WARNING, "fleet: %.200s: %s: refused", kv->key, st.why);
		drf_fleet_node_task_state(n, id, &st);
		return;
	}
	n->on_task(n->userdata, &t, s);
	drf_fleet_task_clear(&t);
}

/* The state of kv's task among the states read (sorted by key, as etcd answers), or NULL. */
static const struct etcd_kv *state_of(const struct drf_fleet_node *n, const struct etcd_kv *kv,
				      const struct etcd_resp *states)
{
	const char *id = kv->key + strlen(n->tasks_key);
	size_t plen = strlen(n->taskstate_key);

	for (size_t i = 0; i < states->n_kvs; i++)
		if (strncmp(states->kvs[i].key, n->taskstate_key, plen) == 0 &&
		    strcmp(states->kvs[i].key + plen, id) == 0)
			return &states->kvs[i];
	return NULL;
}

static void tasks_read_cb(void *userdata, int err, const char *msg,
			  const struct etcd_txn_resp *t)
{
	struct drf_fleet_node *n = userdata;

	if (n->closing)
		return;
	n->tasks_read_busy = false;
	if (err || t->n_resps != 2) {
		note_err(n, err ? err : -EBADMSG, msg, n->tasks_key);
		bo_fail(n, &n->tasks_w.bo);
		return;
	}
	note_ok(n);
	for (size_t i = 0; i < t->resps[0].n_kvs; i++) {
		const struct etcd_kv *kv = &t->resps[0].kvs[i], *skv;
		struct drf_fleet_task_state st = { 0 };

		skv = state_of(n, kv, &t->resps[1]);
		/* A state that does not parse says nothing: the task is handed over again. */
		if (skv && drf_fleet_task_state_parse(skv->value, skv->value_len, &st, NULL, 0) < 0)
			memset(&st, 0, sizeof(st));
		if (drf_fleet_task_st_final(st.st))
			continue;
		task_seen(n, kv, &st);
		if (n->closing)
			return;
	}
	fwatch_begin(&n->tasks_w, t->revision + 1);
}

static void tasks_resync(struct fwatch *w)
{
	struct drf_fleet_node *n = w->n;
	struct etcd_req q[2] = {
		{ .type = ETCD_RANGE, .key = n->tasks_key, .prefix = true },
		{ .type = ETCD_RANGE, .key = n->taskstate_key, .prefix = true },
	};
	uint64_t id;
	int r;

	if (n->tasks_read_busy)
		return;
	r = etcd_txn(n->e, &(struct etcd_txn){ .success = q, .n_success = 2 }, tasks_read_cb, n,
		     &id);
	if (r < 0) {
		note_err(n, r, NULL, n->tasks_key);
		bo_fail(n, &w->bo);
		return;
	}
	n->tasks_read_busy = true;
}

static void tasks_events(struct fwatch *w, const struct etcd_watch_resp *r)
{
	static const struct drf_fleet_task_state none = { 0 };

	for (size_t i = 0; i < r->n_events && !w->n->closing; i++) {
		const struct etcd_event *ev = &r->events[i];

		/* A task is created once; a rewrite (by hand) or a delete cancels nothing. */
		if (ev->type == ETCD_EVENT_PUT && ev->kv.version == 1)
			task_seen(w->n, &ev->kv, &none);
	}
}

static void state_kick(struct drf_fleet_node *n);

static void state_cb(void *userdata, int err, const char *msg, const struct etcd_resp *r)
{
	struct drf_fleet_node *n = userdata;

	(void)r;
	if (n->closing)
		return;
	n->sw_busy = false;
	if (err) {
		note_err(n, err, msg, n->taskstate_key);
		bo_fail(n, &n->sw_bo);
		return;
	}
	note_ok(n);
	bo_ok(&n->sw_bo);
	free(n->sw[0].value);
	memmove(n->sw, n->sw + 1, (n->nsw - 1) * sizeof(*n->sw));
	n->nsw--;
	state_kick(n);
}

static void state_kick(struct drf_fleet_node *n)
{
	char key[KEY_MAX];
	uint64_t id;
	int r;

	if (!n->nsw || n->sw_busy || n->closing || !n->started || !bo_due(n, &n->sw_bo))
		return;
	if (drf_fleet_key(key, sizeof(key), n->taskstate_key, n->sw[0].id) < 0)
		return;
	r = etcd_put(n->e, &(struct etcd_req){ .key = key, .value = n->sw[0].value,
					       .value_len = strlen(n->sw[0].value) },
		     state_cb, n, &id);
	if (r < 0) {
		note_err(n, r, NULL, key);
		bo_fail(n, &n->sw_bo);
		return;
	}
	n->sw_busy = true;
}

int drf_fleet_node_task_state(struct drf_fleet_node *n, const char *id,
			      const struct drf_fleet_task_state *s)
{
	char *value;
	int r;

	if (!drf_name_valid(id))
		return -EINVAL;
	r = drf_fleet_task_state_value(s, &value);
	if (r < 0)
		return r;
	/* One not yet sent is replaced: only the newest state matters. */
	for (size_t i = n->sw_busy ? 1 : 0; i < n->nsw; i++) {
		if (strcmp(n->sw[i].id, id) == 0) {
			free(n->sw[i].value);
			n->sw[i].value = value;
			return 0;
		}
	}
	if (n->nsw == n->sw_cap) {
		size_t c = n->sw_cap ? 2 * n->sw_cap : 8;
		struct state_write *sw = realloc(n->sw, c * sizeof(*sw));

		if (!sw) {
			free(value);
			return -ENOMEM;
		}
		n->sw = sw;
		n->sw_cap = c;
	}
	snprintf(n->sw[n->nsw].id, sizeof(n->sw[n->nsw].id), "%s", id);
	n->sw[n->nsw++].value = value;
	state_kick(n);
	return 0;
}

size_t drf_fleet_node_task_states_pending(const struct drf_fleet_node *n)
{
	return n->nsw;
}

/* The election. */

/* P/planner as read or watched: its value (len bytes), token, lease and last change. */
static void planner_seen(struct drf_fleet_node *n, const char *name, size_t len, int64_t token,
			 int64_t lease, int64_t mod)
{
	if (len > DRF_TENANT_NAME_MAX)
		len = DRF_TENANT_NAME_MAX;
	memcpy(n->planner, name, len);
	n->planner[len] = '\0';
	n->planner_token = token;
	n->planner_lease = lease;
	n->planner_mod = mod;
	/* Another's: whether it is alive is looked at from the tick, now. */
	n->planner_vacant = false;
	n->vacant_why[0] = '\0';
	n->pcheck_at = now(n);
}

static void planner_kv_seen(struct drf_fleet_node *n, const struct etcd_kv *kv)
{
	planner_seen(n, kv->value, kv->value_len, kv->create_revision, kv->lease,
		     kv->mod_revision);
}

/*
 * A planner key nobody holds: a value without a lease (put by hand), or one
 * whose node has no registration under that lease. Nobody would campaign
 * while it stands, and nobody would plan: said loudly (status, metric), and
 * deleted if it is still the one seen, so that the nodes campaign again.
 */
static void takeover_cb(void *userdata, int err, const char *msg, const struct etcd_txn_resp *t)
{
	struct drf_fleet_node *n = userdata;

	if (n->closing)
		return;
	n->pcheck_busy = false;
	n->pcheck_at = now(n) + ttl_usec(n) / 3;
	if (err) {
		note_err(n, err, msg, n->k.planner);
		return;
	}
	note_ok(n);
	if (t->succeeded) {
		n->takeovers++;
		drf_log(n->log, LOG_WARNING, "fleet: %s deleted the planner key %s (%s); the "
			"nodes campaign again", n->name, n->k.planner, n->vacant_why);
	}
	/* Changed meanwhile: the watch says to what. */
}

static void planner_vacant(struct drf_fleet_node *n, int level, const char *why)
{
	struct etcd_cmp same = { .key = n->k.planner, .target = ETCD_CMP_MOD,
				 .result = ETCD_CMP_EQUAL, .n = n->planner_mod };
	struct etcd_req del = { .type = ETCD_DELETE, .key = n->k.planner };
	uint64_t id;
	int r;

	if (!n->planner_vacant || strcmp(n->vacant_why, why) != 0)
		drf_log(n->log, level, "fleet: the planner key %s is vacant: %s; %s", n->k.planner,
			why, campaigns(n) ? "taking it over" : "this node does not campaign: another "
			"node with the planner role takes it over");
	n->planner_vacant = true;
	snprintf(n->vacant_why, sizeof(n->vacant_why), "%s", why);
	/* A node that may not campaign may not write P/planner either: it says so, and looks again. */
	if (!campaigns(n)) {
		n->pcheck_at = now(n) + ttl_usec(n) / 3;
		return;
	}
	r = etcd_txn(n->e, &(struct etcd_txn){ .cmp = &same, .n_cmp = 1, .success = &del,
						.n_success = 1 },
		     takeover_cb, n, &id);
	if (r < 0) {
		note_err(n, r, NULL, n->k.planner);
		n->pcheck_at = now(n) + ttl_usec(n) / 3;
		return;
	}
	n->pcheck_busy = true;
}

static void pcheck_cb(void *userdata, int err, const char *msg, const struct etcd_resp *r)
{
	struct drf_fleet_node *n = userdata;
	char why[200];

	if (n->closing)
		return;
	n->pcheck_busy = false;
	if (err) {
		note_err(n, err, msg, n->k.planner);
		n->pcheck_at = now(n) + ttl_usec(n) / 3;
		return;
	}
	note_ok(n);
	if (n->is_planner || !n->planner[0])
		return;
	/* P/planner changed while the check was under way: its answer is of another. */
	if (n->planner_mod != n->pcheck_mod) {
		n->pcheck_at = now(n);
		return;
	}
	if (r->n_kvs == 1 && r->kvs[0].lease == n->planner_lease) {
		n->planner_vacant = false;
		n->vacant_why[0] = '\0';
		n->pcheck_at = now(n) + ttl_usec(n);
		return;
	}
	if (r->n_kvs == 1)
		snprintf(why, sizeof(why), "it names '%.64s', registered again under another lease "
			 "(restarted?) than the key's %" PRId64, n->planner, n->planner_lease);
	else
		snprintf(why, sizeof(why), "it names '%.64s', which has no registration under the "
			 "key's lease %" PRId64, n->planner, n->planner_lease);
	/* A planner's drfd restarted is routine; a name nobody registered is not. */
	planner_vacant(n, r->n_kvs == 1 ? LOG_WARNING : LOG_ERR, why);
}

static void pcheck_kick(struct drf_fleet_node *n)
{
	char key[KEY_MAX];
	uint64_t id;
	int r;

	if (!n->started || n->closing || n->pcheck_busy || n->is_planner || !n->planner[0] ||
	    now(n) < n->pcheck_at)
		return;
	if (n->planner_lease == 0) {
		char why[200];

		snprintf(why, sizeof(why), "it holds '%.64s' without a lease (put by hand?)",
			 n->planner);
		planner_vacant(n, LOG_ERR, why);
		return;
	}
	if (drf_fleet_key(key, sizeof(key), n->k.nodes, n->planner) < 0) {
		n->pcheck_at = UINT64_MAX;
		planner_vacant(n, LOG_ERR, "it names no node a key could have");
		return;
	}
	r = etcd_range(n->e, &(struct etcd_req){ .key = key }, pcheck_cb, n, &id);
	if (r < 0) {
		note_err(n, r, NULL, key);
		n->pcheck_at = now(n) + ttl_usec(n) / 3;
		return;
	}
	n->pcheck_busy = true;
	n->pcheck_mod = n->planner_mod;
}

static void become_planner(struct drf_fleet_node *n, int64_t token)
{
	if (n->is_planner && n->token == token)
		return;
	n->is_planner = true;
	n->token = token;
	n->term++;
	drf_log(n->log, LOG_INFO, "fleet: %s is the fleet's planner (token %" PRId64 ")", n->name,
		token);
	n->nodes_w.want = n->tenants_w.want = true;
	n->nodes_w.from = n->tenants_w.from = 0;
	bo_ok(&n->plan_bo);
	plan_request(n);
}

static void step_down(struct drf_fleet_node *n, const char *why)
{
	if (!n->is_planner)
		return;
	drf_log(n->log, LOG_WARNING, "fleet: %s is no longer the planner: %s", n->name, why);
	n->is_planner = false;
	n->token = 0;
	n->term++;
	fwatch_stop(&n->nodes_w);
	fwatch_stop(&n->tenants_w);
	n->plan_dirty = false;
	n->seen_nodes = n->seen_tenants = 0;
	/* Another planner starts the silent nodes' grace again from when it sees them. */
	silent_free(n);
}

static void lease_lost(struct drf_fleet_node *n)
{
	drf_log(n->log, LOG_WARNING, "fleet: lease %" PRId64 " of %s is gone: registering again",
		n->lease, n->name);
	n->lease = 0;
	n->lease_ttl = 0;
	n->registered = false;
	step_down(n, "its lease is gone");
	n->need_campaign = true;
	bo_ok(&n->lease_bo);
}

static void campaign_cb(void *userdata, int err, const char *msg, const struct etcd_txn_resp *t)
{
	struct drf_fleet_node *n = userdata;

	if (n->closing)
		return;
	n->campaign_busy = false;
	if (err == -ENOENT) {
		/* The put's lease is gone. */
		note_ok(n);
		if (n->campaign_lease == n->lease) {
			lease_lost(n);
			lease_kick(n);
		} else {
			campaign_kick(n);
		}
		return;
	}
	if (err == -EACCES && msg && strstr(msg, "permission denied")) {
		/*
		 * Its etcd user has no planner role: a plain node from now on (until
		 * drfd restarts), said once. Its lease, registration, assignment and
		 * tenants are untouched.
		 */
		note_ok(n);
		n->campaign_refused = true;
		snprintf(n->campaign_refused_why, sizeof(n->campaign_refused_why), "%s", msg);
		drf_log(n->log, LOG_ERR, "fleet: etcd refused %s the planner's role (%s on %s): its "
			"etcd user lacks the planner role; it goes on as a plain node, its tenants "
			"as assigned (set [fleet] planner = no where that is meant)", n->name, msg,
			n->k.planner);
		bo_ok(&n->campaign_bo);
		campaign_kick(n); /* now reads P/planner */
		return;
	}
	if (err) {
		note_err(n, err, msg, n->k.planner);
		bo_fail(n, &n->campaign_bo);
		return;
	}
	note_ok(n);
	bo_ok(&n->campaign_bo);
	n->need_campaign = false;
	if (t->succeeded) {
		planner_seen(n, n->name, strlen(n->name), t->revision, n->campaign_lease,
			     t->revision);
		become_planner(n, t->revision);
	} else if (t->n_resps == 1 && t->resps[0].n_kvs == 1) {
		const struct etcd_kv *kv = &t->resps[0].kvs[0];

		planner_kv_seen(n, kv);
		/* Ours, with the lease in force: the role is still ours (after a step down). */
		if (n->lease && kv->lease == n->lease && strcmp(kv->value, n->name) == 0)
			become_planner(n, kv->create_revision);
		else
			step_down(n, "another node holds the role");
	} else {
		n->need_campaign = true; /* gone between the comparison and the read: again */
	}
	fwatch_begin(&n->planner_w, t->revision + 1);
	campaign_kick(n);
}

/* A node that does not campaign: P/planner read (who plans), then watched from there. */
static void planner_read_cb(void *userdata, int err, const char *msg, const struct etcd_resp *r)
{
	struct drf_fleet_node *n = userdata;

	if (n->closing)
		return;
	n->campaign_busy = false;
	if (err) {
		note_err(n, err, msg, n->k.planner);
		bo_fail(n, &n->campaign_bo);
		return;
	}
	note_ok(n);
	bo_ok(&n->campaign_bo);
	n->need_campaign = false;
	if (r->n_kvs == 1)
		planner_kv_seen(n, &r->kvs[0]);
	else
		planner_seen(n, "", 0, 0, 0, 0);
	fwatch_begin(&n->planner_w, r->revision + 1);
}

static void planner_read(struct drf_fleet_node *n)
{
	uint64_t id;
	int r;

	r = etcd_range(n->e, &(struct etcd_req){ .key = n->k.planner }, planner_read_cb, n, &id);
	if (r < 0) {
		note_err(n, r, NULL, n->k.planner);
		bo_fail(n, &n->campaign_bo);
		return;
	}
	n->campaign_busy = true;
}

static void campaign_kick(struct drf_fleet_node *n)
{
	struct etcd_cmp absent = { .key = n->k.planner, .target = ETCD_CMP_CREATE,
				   .result = ETCD_CMP_EQUAL, .n = 0 };
	struct etcd_req put = { .type = ETCD_PUT, .key = n->k.planner, .value = n->name,
				.value_len = strlen(n->name), .lease = n->lease };
	struct etcd_req read = { .type = ETCD_RANGE, .key = n->k.planner };
	uint64_t id;
	int r;

	if (!n->need_campaign || n->campaign_busy || n->closing || !n->started ||
	    !bo_due(n, &n->campaign_bo))
		return;
	if (!campaigns(n)) {
		planner_read(n);
		return;
	}
	if (!n->lease || !n->registered)
		return;
	/* Created only if absent: its create_revision is the new planner's token. */
	r = etcd_txn(n->e, &(struct etcd_txn){ .cmp = &absent, .n_cmp = 1, .success = &put,
						.n_success = 1, .failure = &read, .n_failure = 1 },
		     campaign_cb, n, &id);
	if (r < 0) {
		note_err(n, r, NULL, n->k.planner);
		bo_fail(n, &n->campaign_bo);
		return;
	}
	n->campaign_busy = true;
	n->campaign_lease = n->lease;
}

static void planner_events(struct fwatch *w, const struct etcd_watch_resp *r)
{
	struct drf_fleet_node *n = w->n;

	for (size_t i = 0; i < r->n_events; i++) {
		const struct etcd_kv *kv = &r->events[i].kv;

		if (r->events[i].type == ETCD_EVENT_PUT) {
			planner_kv_seen(n, kv);
			if (n->is_planner && kv->create_revision != n->token)
				step_down(n, "another node took the role");
			continue;
		}
		/* Its lease expired (or it was revoked, or deleted by hand): campaign. */
		planner_seen(n, "", 0, 0, 0, 0);
		step_down(n, "the planner's key was deleted");
		n->need_campaign = campaigns(n);
		bo_ok(&n->campaign_bo);
	}
	campaign_kick(n);
}

static void planner_resync(struct fwatch *w)
{
	/* A campaign reads the key (its failure branch) and watches again from there. */
	w->n->need_campaign = true;
	campaign_kick(w->n);
}

/* The lease and the registration. */

static void lease_renewed(struct drf_fleet_node *n)
{
	n->lease_until = n->lease_sent + ttl_usec(n);
	n->next_keepalive = n->lease_sent + ttl_usec(n) / 3;
}

static void grant_cb(void *userdata, int err, const char *msg, const struct etcd_lease *l)
{
	struct drf_fleet_node *n = userdata;

	if (n->closing)
		return;
	n->lease_busy = false;
	if (err) {
		note_err(n, err, msg, "lease grant");
		bo_fail(n, &n->lease_bo);
		return;
	}
	note_ok(n);
	bo_ok(&n->lease_bo);
	n->lease = l->id;
	n->lease_ttl = l->ttl;
	lease_renewed(n);
	n->registered = false;
	bo_ok(&n->register_bo);
	register_kick(n);
}

static void keepalive_cb(void *userdata, int err, const char *msg, const struct etcd_lease *l)
{
	struct drf_fleet_node *n = userdata;

	if (n->closing)
		return;
	n->lease_busy = false;
	if (err == -ENOENT) {
		note_ok(n);
		lease_lost(n);
		lease_kick(n);
		return;
	}
	if (err) {
		note_err(n, err, msg, "lease keepalive");
		bo_fail(n, &n->lease_bo);
		n->next_keepalive = n->lease_bo.at;
		return;
	}
	note_ok(n);
	bo_ok(&n->lease_bo);
	if (l->ttl > 0)
		n->lease_ttl = l->ttl;
	lease_renewed(n);
	register_kick(n);
	campaign_kick(n);
}

static void lease_kick(struct drf_fleet_node *n)
{
	uint64_t t = now(n), id;
	int r;

	if (n->lease_busy || n->closing || !n->started)
		return;
	if (n->lease == 0) {
		if (!bo_due(n, &n->lease_bo))
			return;
		r = etcd_lease_grant(n->e, n->ttl, 0, grant_cb, n, &id);
	} else if (t >= n->next_keepalive) {
		r = etcd_lease_keepalive(n->e, n->lease, keepalive_cb, n, &id);
	} else {
		return;
	}
	if (r < 0) {
		note_err(n, r, NULL, "lease");
		bo_fail(n, &n->lease_bo);
		if (n->lease)
			n->next_keepalive = n->lease_bo.at;
		return;
	}
	n->lease_busy = true;
	n->lease_sent = t;
}

static void register_cb(void *userdata, int err, const char *msg, const struct etcd_resp *r)
{
	struct drf_fleet_node *n = userdata;

	(void)r;
	if (n->closing)
		return;
	n->register_busy = false;
	if (err == -ENOENT) {
		note_ok(n);
		if (n->register_lease == n->lease) {
			lease_lost(n);
			lease_kick(n);
		}
		return;
	}
	if (err) {
		note_err(n, err, msg, n->node_key);
		bo_fail(n, &n->register_bo);
		return;
	}
	note_ok(n);
	bo_ok(&n->register_bo);
	if (n->register_lease != n->lease || n->register_gen != n->value_gen) {
		register_kick(n); /* a new lease or value meanwhile: register with it */
		return;
	}
	if (!n->registered)
		drf_log(n->log, LOG_INFO, "fleet: %s registered (lease %" PRId64 ", TTL %" PRId64
			" s)", n->name, n->lease, n->lease_ttl);
	n->registered = true;
	campaign_kick(n);
}

int drf_fleet_node_set_host(struct drf_fleet_node *n, const double capacity[DRF_NRES],
			    const struct drf_fleet_label *labels, size_t n_labels)
{
	char *v = NULL;
	int r;

	if (n_labels > DRF_FLEET_LABELS_MAX)
		return -EINVAL;
	r = drf_fleet_node_value(capacity, labels, n_labels, &v);
	if (r < 0)
		return r;
	if (strcmp(v, n->node_value) == 0) {
		free(v);
		return 0;
	}
	free(n->node_value);
	n->node_value = v;
	n->value_gen++;
	drf_log(n->log, LOG_INFO, "fleet: %s's capacity changed: registering it again", n->name);
	/* Put again under the lease in force; one under way is followed by another. */
	n->registered = false;
	bo_ok(&n->register_bo);
	register_kick(n);
	return 1;
}

static void register_kick(struct drf_fleet_node *n)
{
	uint64_t id;
	int r;

	if (!n->lease || n->registered || n->register_busy || n->closing ||
	    !bo_due(n, &n->register_bo))
		return;
	r = etcd_put(n->e, &(struct etcd_req){ .key = n->node_key, .value = n->node_value,
					       .value_len = strlen(n->node_value),
					       .lease = n->lease },
		     register_cb, n, &id);
	if (r < 0) {
		note_err(n, r, NULL, n->node_key);
		bo_fail(n, &n->register_bo);
		return;
	}
	n->register_busy = true;
	n->register_lease = n->lease;
	n->register_gen = n->value_gen;
}

/* Planning. */

static void pw_free(struct drf_fleet_node *n)
{
	for (size_t i = 0; i < n->npw; i++) {
		free(n->pw[i].key);
		free(n->pw[i].value);
	}
	free(n->pw);
	n->pw = NULL;
	n->npw = n->pw_done = n->pw_chunk = 0;
}

/* The plan under way ended, done or not: the next one, if wanted. */
static void plan_end(struct drf_fleet_node *n)
{
	pw_free(n);
	n->plan_busy = false;
	plan_kick(n);
}

static void plan_failed(struct drf_fleet_node *n, int err, const char *msg, const char *what)
{
	note_err(n, err, msg, what);
	bo_fail(n, &n->plan_bo);
	n->plan_dirty = true;
	plan_end(n);
}

/*
 * A plan's etcd call answered: whether the plan goes on. Not when the node is
 * closing, when its term changed meanwhile (the plan ends), or on an error
 * (the plan fails, saying what it was doing).
 */
static bool plan_answered(struct drf_fleet_node *n, int err, const char *msg, const char *doing)
{
	if (n->closing)
		return false;
	if (n->plan_term != n->term) {
		plan_end(n);
		return false;
	}
	if (err) {
		plan_failed(n, err, msg, doing);
		return false;
	}
	note_ok(n);
	return true;
}

static void plan_write(struct drf_fleet_node *n);

/*
 * A round of the plan written (drf_fleet_compute_more: at most a quarter of
 * the tasks stopped a round) while it is short of DRFH: the next round a
 * third of a TTL later, so that the nodes put each in force before the next
 * moves more (the churn is bounded in time too, not only per round).
 */
static void plan_next_round(struct drf_fleet_node *n)
{
	if (!n->plan_more)
		return;
	n->plan_more = false;
	n->plan_dirty = true;
	n->plan_bo.at = now(n) + ttl_usec(n) / 3;
	drf_log(n->log, LOG_INFO, "fleet: a round toward the fair placement written; the next in "
		"%.1f s", (double)ttl_usec(n) / 3 / DRF_USEC_PER_SEC);
}

static void plan_write_cb(void *userdata, int err, const char *msg, const struct etcd_txn_resp *t)
{
	struct drf_fleet_node *n = userdata;

	if (!plan_answered(n, err, msg, "writing the assignments"))
		return;
	if (!t->succeeded) {
		/* The fence: P/planner is not (or no longer) ours. */
		n->fenced++;
		if (t->n_resps == 1 && t->resps[0].n_kvs == 1)
			planner_kv_seen(n, &t->resps[0].kvs[0]);
		else
			planner_seen(n, "", 0, 0, 0, 0);
		step_down(n, "the fence refused its write (P/planner is not its own)");
		n->need_campaign = n->planner[0] == '\0';
		plan_end(n);
		campaign_kick(n);
		return;
	}
	n->keys_written += n->pw_chunk;
	n->pw_done += n->pw_chunk;
	if (n->pw_done < n->npw) {
		plan_write(n);
		return;
	}
	n->plans++;
	n->plan_rev = n->plan_read_rev;
	bo_ok(&n->plan_bo);
	plan_next_round(n);
	plan_end(n);
}

static void plan_write(struct drf_fleet_node *n)
{
	struct etcd_cmp fence[2] = {
		{ .key = n->k.planner, .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL,
		  .n = n->token },
		{ .key = n->k.planner, .target = ETCD_CMP_VALUE, .result = ETCD_CMP_EQUAL,
		  .value = n->name, .value_len = strlen(n->name) },
	};
	struct etcd_req ops[ETCD_TXN_MAX], read = { .type = ETCD_RANGE, .key = n->k.planner };
	size_t chunk = n->npw - n->pw_done;
	uint64_t id;
	int r;

	if (chunk > ETCD_TXN_MAX)
		chunk = ETCD_TXN_MAX;
	for (size_t i = 0; i < chunk; i++) {
		const struct pending_write *p = &n->pw[n->pw_done + i];

		ops[i] = p->value ? (struct etcd_req){ .type = ETCD_PUT, .key = p->key,
						       .value = p->value,
						       .value_len = strlen(p->value) }
				  : (struct etcd_req){ .type = ETCD_DELETE, .key = p->key };
	}
	n->pw_chunk = chunk;
	r = etcd_txn(n->e, &(struct etcd_txn){ .cmp = fence, .n_cmp = 2, .success = ops,
						.n_success = chunk, .failure = &read,
						.n_failure = 1 },
		     plan_write_cb, n, &id);
	if (r < 0)
		plan_failed(n, r, NULL, "writing the assignments");
}

static int pw_add(struct drf_fleet_node *n, size_t *cap, const char *node, char *value)
{
	char key[KEY_MAX];

	if (n->npw == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		struct pending_write *v = realloc(n->pw, c * sizeof(*v));

		if (!v)
			return -ENOMEM;
		n->pw = v;
		*cap = c;
	}
	if (drf_fleet_key(key, sizeof(key), n->k.assign, node) < 0)
		return -ENAMETOOLONG;
	n->pw[n->npw].key = strdup(key);
	if (!n->pw[n->npw].key)
		return -ENOMEM;
	n->pw[n->npw++].value = value;
	return 0;
}

static struct silent_node *silent_find(const struct drf_fleet_node *n, const char *name)
{
	for (size_t i = 0; i < n->nsilent; i++)
		if (strcmp(n->silent[i].name, name) == 0)
			return &n->silent[i];
	return NULL;
}

static bool silent_in_grace(const struct drf_fleet_node *n, const struct silent_node *x)
{
	return now(n) - x->since < n->grace;
}

static void silent_free(struct drf_fleet_node *n)
{
	free(n->silent);
	free(n->known);
	n->silent = NULL;
	n->known = NULL;
	n->nsilent = n->nknown = n->silent_kept = 0;
	n->silent_due = UINT64_MAX;
}

static bool has_capacity(const double c[DRF_NRES])
{
	for (int r = 0; r < DRF_NRES; r++)
		if (c[r] > 0)
			return true;
	return false;
}

static int cmp_nodeinfo(const void *a, const void *b)
{
	return strcmp(((const struct drf_fleet_nodeinfo *)a)->name,
		      ((const struct drf_fleet_nodeinfo *)b)->name);
}

/*
 * Before planning a read: the nodes whose registration is gone while their
 * assignment stays are silent (stopped, cut off from etcd, stalled past
 * their lease). Each keeps its share for the grace period from when this
 * planner first saw it silent: it joins the view with its capacity (as last
 * registered, or as its assignment says), so that the plan, continued from
 * the placement in force, leaves its tasks where they are. Past the grace it
 * is left out, and its share is planned elsewhere (its key deleted). The
 * registered nodes' capacities are remembered for when they fall silent.
 */
static int keep_silent(struct drf_fleet_node *n, struct drf_fleet_view *v)
{
	struct silent_node *sl = calloc(v->n_assigns + 1, sizeof(*sl));
	struct known_node *kn = calloc(v->n_nodes + 1, sizeof(*kn));
	struct drf_fleet_nodeinfo *nodes;
	size_t ns = 0, keep = 0;
	uint64_t t = now(n);

	if (!sl || !kn) {
		free(sl);
		free(kn);
		return -ENOMEM;
	}
	for (size_t a = 0; a < v->n_assigns; a++) {
		const struct drf_fleet_assign_entry *e = &v->assigns[a];
		const struct silent_node *old;
		struct silent_node *x;

		if (drf_fleet_view_node(v, e->node) >= 0)
			continue;
		old = silent_find(n, e->node);
		x = &sl[ns++];
		if (old) {
			*x = *old;
		} else {
			snprintf(x->name, sizeof(x->name), "%s", e->node);
			x->since = t;
			for (size_t k = 0; k < n->nknown; k++)
				if (strcmp(n->known[k].name, e->node) == 0)
					memcpy(x->capacity, n->known[k].capacity,
					       sizeof(x->capacity));
			if (!has_capacity(x->capacity))
				memcpy(x->capacity, e->a.capacity, sizeof(x->capacity));
			drf_log(n->log, LOG_WARNING, "fleet: node %s's registration is gone; its "
				"share stays planned on it for %.0f s (grace)%s", x->name,
				(double)n->grace / DRF_USEC_PER_SEC, has_capacity(x->capacity) ? ""
				: ", its assignment untouched (its capacity is not known)");
		}
		if (silent_in_grace(n, x)) {
			keep += has_capacity(x->capacity);
		} else if (!x->past) {
			x->past = true;
			drf_log(n->log, LOG_WARNING, "fleet: node %s silent for %.0f s, its "
				"grace: its share is planned elsewhere", x->name,
				(double)(t - x->since) / DRF_USEC_PER_SEC);
		}
	}
	for (size_t k = 0; k < v->n_nodes; k++) {
		snprintf(kn[k].name, sizeof(kn[k].name), "%s", v->nodes[k].name);
		memcpy(kn[k].capacity, v->nodes[k].capacity, sizeof(kn[k].capacity));
	}
	free(n->silent);
	free(n->known);
	n->silent = sl;
	n->nsilent = ns;
	n->known = kn;
	n->nknown = v->n_nodes;
	n->silent_kept = 0;
	n->silent_due = UINT64_MAX;
	for (size_t i = 0; i < ns; i++)
		if (silent_in_grace(n, &sl[i])) {
			n->silent_kept++;
			if (sl[i].since + n->grace < n->silent_due)
				n->silent_due = sl[i].since + n->grace;
		}
	if (!keep)
		return 0;
	nodes = realloc(v->nodes, (v->n_nodes + keep) * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	v->nodes = nodes;
	for (size_t i = 0; i < ns; i++) {
		ssize_t a = drf_fleet_view_assign(v, sl[i].name);
		double used[DRF_NRES] = { 0 };
		struct drf_fleet_nodeinfo *nd;

		if (!silent_in_grace(n, &sl[i]) || !has_capacity(sl[i].capacity) || a < 0)
			continue;
		/*
		 * Only the room its tasks take (a hair more, for rounding): they stay
		 * where they are (pinned: drf_fleet_compute), and nothing new goes to
		 * a node that could not run it.
		 */
		for (size_t j = 0; j < v->assigns[a].a.n; j++)
			for (int r = 0; r < DRF_NRES; r++)
				used[r] += v->assigns[a].a.tenants[j].alloc[r];
		if (!has_capacity(used))
			continue; /* nothing there: its (empty) key is kept, nothing planned on it */
		nd = &v->nodes[v->n_nodes++];
		memset(nd, 0, sizeof(*nd));
		snprintf(nd->name, sizeof(nd->name), "%s", sl[i].name);
		for (int r = 0; r < DRF_NRES; r++)
			nd->capacity[r] = used[r] > sl[i].capacity[r] ? used[r]
								      : used[r] * (1 + 1e-9);
	}
	qsort(v->nodes, v->n_nodes, sizeof(*v->nodes), cmp_nodeinfo);
	return 0;
}

/* The writes that take etcd's assignments to the plan's: changed nodes put, nodes gone deleted. */
static int plan_diff(struct drf_fleet_node *n, const struct drf_fleet_view *v,
		     struct drf_fleet_assignment *as)
{
	size_t cap = 0;
	int r = 0;

	for (size_t k = 0; k < v->n_nodes && r == 0; k++) {
		ssize_t a = drf_fleet_view_assign(v, v->nodes[k].name);
		char *value;

		if (a >= 0 && drf_fleet_assignment_same(&v->assigns[a].a, &as[k]))
			continue;
		r = drf_fleet_assignment_value(&as[k], &value);
		if (r == 0) {
			r = pw_add(n, &cap, v->nodes[k].name, value);
			if (r < 0)
				free(value);
		}
	}
	for (size_t a = 0; a < v->n_assigns && r == 0; a++) {
		const struct silent_node *x = silent_find(n, v->assigns[a].node);

		/* A silent node in its grace keeps its key (one of unknown capacity, untouched). */
		if (drf_fleet_view_node(v, v->assigns[a].node) < 0 &&
		    !(x && silent_in_grace(n, x)))
			r = pw_add(n, &cap, v->assigns[a].node, NULL);
	}
	return r;
}

static void plan_read_cb(void *userdata, int err, const char *msg, struct drf_fleet_view *v)
{
	struct drf_fleet_node *n = userdata;
	struct fwatch *ws[2] = { &n->nodes_w, &n->tenants_w };
	struct drf_fleet_assignment *as = NULL;
	int r;

	if (!plan_answered(n, err, msg, "reading the fleet"))
		return;
	n->plan_read_rev = v->revision;
	n->seen_nodes = v->n_nodes;
	n->seen_tenants = v->n_tenants;
	if (v->n_invalid && strcmp(v->invalid, n->last_invalid) != 0)
		drf_log(n->log, LOG_WARNING, "fleet: %zu values passed over: %s", v->n_invalid,
			v->invalid);
	snprintf(n->last_invalid, sizeof(n->last_invalid), "%s", v->n_invalid ? v->invalid : "");
	/* What changes after this read, the watches tell (they start, or start again, here). */
	for (int i = 0; i < 2; i++)
		fwatch_begin(ws[i], v->revision + 1);
	r = keep_silent(n, v);
	n->plan_more = false;
	if (r == 0)
		r = drf_fleet_compute_more(v, n->name, &as, &n->plan_more);
	/* A silent node's assignment says the capacity it registered, not the room its tasks take. */
	for (size_t k = 0; r == 0 && k < v->n_nodes; k++) {
		ssize_t a = v->nodes[k].mod_revision ? -1 : drf_fleet_view_assign(v, v->nodes[k].name);

		if (a >= 0)
			memcpy(as[k].capacity, v->assigns[a].a.capacity, sizeof(as[k].capacity));
	}
	if (r == 0) {
		r = plan_diff(n, v, as);
		drf_fleet_assignments_free(as, v->n_nodes);
	}
	if (r < 0) {
		plan_failed(n, r, NULL, "planning");
		return;
	}
	if (n->npw == 0) {
		n->plans++;
		n->plan_rev = v->revision;
		bo_ok(&n->plan_bo);
		plan_next_round(n);
		plan_end(n);
		return;
	}
	plan_write(n);
}

static void plan_kick(struct drf_fleet_node *n)
{
	uint64_t id;
	int r;

	if (!n->is_planner || !n->plan_dirty || n->plan_busy || n->closing ||
	    !bo_due(n, &n->plan_bo))
		return;
	n->plan_dirty = false;
	n->plan_busy = true;
	n->plan_term = n->term;
	r = drf_fleet_read(n->e, n->k.prefix, plan_read_cb, n, &id);
	if (r < 0)
		plan_failed(n, r, NULL, "reading the fleet");
}

static void plan_request(struct drf_fleet_node *n)
{
	if (!n->is_planner)
		return;
	n->plan_dirty = true;
	plan_kick(n);
}

static void fleet_events(struct fwatch *w, const struct etcd_watch_resp *r)
{
	struct drf_fleet_node *n = w->n;

	/* What the last read saw is planned already. */
	for (size_t i = 0; i < r->n_events; i++)
		if (r->events[i].kv.mod_revision > n->plan_read_rev) {
			plan_request(n);
			return;
		}
}

static void fleet_resync(struct fwatch *w)
{
	/* The next read starts it again, from its revision + 1. */
	plan_request(w->n);
}

/* The node. */

static void watch_init(struct drf_fleet_node *n, struct fwatch *w, const char *what,
		       const char *key, bool prefix, fwatch_events_fn events,
		       fwatch_resync_fn resync)
{
	w->n = n;
	w->what = what;
	snprintf(w->key, sizeof(w->key), "%s", key);
	w->prefix = prefix;
	w->events = events;
	w->resync = resync;
}

int drf_fleet_node_new(const struct drf_fleet_node_config *c, struct etcd *e,
		       struct drf_fleet_node **ret, char *err, size_t errlen)
{
	struct drf_fleet_node *n;
	const char *prefix = c->prefix ? c->prefix : DRF_FLEET_DEFAULT_PREFIX;
	int r;

	if (!c->node || !drf_name_valid(c->node)) {
		snprintf(err, errlen, "node name '%s' is not 1-%d characters of [A-Za-z0-9_.-] not "
			 "starting with '.'", c->node ? c->node : "", DRF_TENANT_NAME_MAX);
		return -EINVAL;
	}
	if (c->ttl < 0 || c->ttl > 86400) {
		snprintf(err, errlen, "lease TTL %" PRId64 " s: out of range [1, 86400]", c->ttl);
		return -EINVAL;
	}
	if (c->n_labels > DRF_FLEET_LABELS_MAX) {
		snprintf(err, errlen, "%zu labels: at most %d", c->n_labels, DRF_FLEET_LABELS_MAX);
		return -EINVAL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = drf_fleet_keys_init(&n->k, prefix);
	if (r < 0) {
		snprintf(err, errlen, "key prefix '%.*s': expected 1-%d bytes beginning and ending "
			 "with '/'", DRF_FLEET_PREFIX_MAX, prefix, DRF_FLEET_PREFIX_MAX);
		free(n);
		return r;
	}
	snprintf(n->name, sizeof(n->name), "%s", c->node);
	drf_fleet_key(n->node_key, sizeof(n->node_key), n->k.nodes, n->name);
	drf_fleet_key(n->assign_key, sizeof(n->assign_key), n->k.assign, n->name);
	n->ttl = c->ttl ? c->ttl : DRF_FLEET_DEFAULT_TTL;
	n->grace = (c->grace ? (uint64_t)c->grace : DRF_FLEET_GRACE_TTLS * (uint64_t)n->ttl) *
		   DRF_USEC_PER_SEC;
	n->silent_due = UINT64_MAX;
	n->clock = c->clock ? c->clock : &drf_clock_system;
	n->log = c->log;
	n->on_assignment = c->on_assignment;
	n->on_task = c->on_task;
	n->plain = c->plain;
	n->userdata = c->userdata;
	snprintf(n->tasks_key, sizeof(n->tasks_key), "%s%s/", n->k.tasks, n->name);
	snprintf(n->taskstate_key, sizeof(n->taskstate_key), "%s%s/", n->k.taskstate, n->name);
	r = drf_fleet_node_value(c->capacity, c->labels, c->n_labels, &n->node_value);
	if (r == 0 && c->state_dir) {
		n->state_dir = strdup(c->state_dir);
		r = n->state_dir ? 0 : -ENOMEM;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s", r == -EINVAL ? "a label is refused: keys of 1-63 of "
			 "[A-Za-z0-9_./-], values of at most 255 bytes without control characters"
							 : "out of memory");
		free(n->node_value);
		free(n->state_dir);
		free(n);
		return r;
	}
	watch_init(n, &n->assign_w, "watching the assignment", n->assign_key, false, assign_events,
		   assign_resync);
	watch_init(n, &n->tasks_w, "watching the node's tasks", n->tasks_key, true, tasks_events,
		   tasks_resync);
	watch_init(n, &n->planner_w, "watching the planner", n->k.planner, false, planner_events,
		   planner_resync);
	watch_init(n, &n->nodes_w, "watching the nodes", n->k.nodes, true, fleet_events,
		   fleet_resync);
	watch_init(n, &n->tenants_w, "watching the tenants", n->k.tenants, true, fleet_events,
		   fleet_resync);
	n->e = e;
	*ret = n;
	return 0;
}

int drf_fleet_node_start(struct drf_fleet_node *n)
{
	struct drf_fleet_assignment a = { 0 };
	int r;

	if (n->started)
		return -EALREADY;
	n->started = true;
	n->since = drf_real_usec(n->clock);
	if (n->state_dir) {
		/* The last good one, until etcd says otherwise (it may not be reachable). */
		r = drf_fleet_assignment_load(n->state_dir, n->name, n->k.prefix, &a);
		if (r == 0) {
			n->cur = a;
			n->have_cur = true;
			n->cur_from_file = true;
			drf_log(n->log, LOG_INFO, "fleet: assignment of revision %" PRId64 " from "
				"the state dir in force: %zu tenants", a.revision, a.n);
			if (n->on_assignment)
				n->on_assignment(n->userdata, &n->cur);
		} else if (r != -ENOENT) {
			drf_log(n->log, LOG_WARNING, "fleet: cannot load '%s/%s': %s", n->state_dir,
				DRF_FLEET_ASSIGNMENT_FILE,
				r == -ESTALE	 ? "another node's or prefix's"
				: r == -EBADMSG ? "it does not parse"
						 : strerror(-r));
		}
	}
	n->assign_w.want = true;
	n->planner_w.want = true;
	n->tasks_w.want = n->on_task != NULL;
	lease_kick(n);
	fwatch_kick(&n->assign_w);
	fwatch_kick(&n->tasks_w);
	state_kick(n);
	return 0;
}

void drf_fleet_node_tick(struct drf_fleet_node *n)
{
	if (!n->started || n->closing)
		return;
	/*
	 * No keepalive answered for a TTL: etcd may have let the lease go and
	 * given the role to another. Stop planning; a campaign finds out.
	 */
	if (n->is_planner && now(n) >= n->lease_until) {
		step_down(n, "its lease may have expired (no keepalive answered)");
		n->need_campaign = true;
	}
	/* A silent node's grace ended: its share is planned elsewhere. */
	if (n->is_planner && n->nsilent && now(n) >= n->silent_due) {
		n->silent_due = UINT64_MAX;
		plan_request(n);
	}
	lease_kick(n);
	register_kick(n);
	campaign_kick(n);
	pcheck_kick(n);
	fwatch_kick(&n->assign_w);
	fwatch_kick(&n->planner_w);
	fwatch_kick(&n->nodes_w);
	fwatch_kick(&n->tenants_w);
	fwatch_kick(&n->tasks_w);
	state_kick(n);
	plan_kick(n);
	/* A refused assignment is offered again (a cgroup write failed, or the config was bad). */
	if (n->cur_refused && bo_due(n, &n->refused_bo) && n->on_assignment) {
		n->cur_refused = false;
		n->on_assignment(n->userdata, &n->cur);
	}
}

static void at_most(uint64_t *m, uint64_t t)
{
	if (t < *m)
		*m = t;
}

static void watch_next(const struct fwatch *w, uint64_t *m)
{
	if (w->want && !w->id)
		at_most(m, w->bo.at);
}

uint64_t drf_fleet_node_next_tick(const struct drf_fleet_node *n)
{
	uint64_t m = UINT64_MAX;

	if (!n->started || n->closing)
		return m;
	if (n->lease && !n->lease_busy)
		at_most(&m, n->next_keepalive);
	if (n->lease && n->is_planner)
		at_most(&m, n->lease_until);
	if (!n->lease && !n->lease_busy)
		at_most(&m, n->lease_bo.at);
	if (n->lease && !n->registered && !n->register_busy)
		at_most(&m, n->register_bo.at);
	if (n->need_campaign && !n->campaign_busy && ((n->lease && n->registered) || !campaigns(n)))
		at_most(&m, n->campaign_bo.at);
	if (!n->is_planner && n->planner[0] && !n->pcheck_busy)
		at_most(&m, n->pcheck_at);
	if (n->is_planner && n->nsilent)
		at_most(&m, n->silent_due);
	watch_next(&n->assign_w, &m);
	watch_next(&n->planner_w, &m);
	watch_next(&n->nodes_w, &m);
	watch_next(&n->tenants_w, &m);
	watch_next(&n->tasks_w, &m);
	if (n->nsw && !n->sw_busy)
		at_most(&m, n->sw_bo.at);
	if (n->is_planner && n->plan_dirty && !n->plan_busy)
		at_most(&m, n->plan_bo.at);
	if (n->cur_refused)
		at_most(&m, n->refused_bo.at);
	return m;
}

int drf_fleet_node_replan(struct drf_fleet_node *n)
{
	if (!n->is_planner)
		return -EPERM;
	bo_ok(&n->plan_bo);
	plan_request(n);
	return 0;
}

const struct drf_fleet_assignment *drf_fleet_node_assignment(const struct drf_fleet_node *n)
{
	return n->have_cur ? &n->cur : NULL;
}

void drf_fleet_node_status(const struct drf_fleet_node *n, struct drf_fleet_status *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->reachable = n->reachable;
	ret->since_usec = n->since;
	snprintf(ret->last_error, sizeof(ret->last_error), "%s", n->last_error);
	ret->registered = n->registered;
	ret->lease = n->lease;
	ret->planner = n->is_planner;
	snprintf(ret->planner_name, sizeof(ret->planner_name), "%s", n->planner);
	ret->planner_token = n->is_planner ? n->token : n->planner_token;
	ret->has_assignment = n->have_cur;
	ret->assignment_revision = n->have_cur ? n->cur.revision : 0;
	ret->applied_revision = n->applied_rev;
	ret->refused = n->have_cur && n->cur_refused;
	snprintf(ret->refused_why, sizeof(ret->refused_why), "%s", ret->refused ? n->refused_why : "");
	ret->assignment_from_file = n->have_cur && n->cur_from_file;
	if (n->is_planner) {
		ret->plan_revision = n->plan_rev;
		ret->nodes = n->seen_nodes;
		ret->tenants = n->seen_tenants;
	}
	ret->plans = n->plans;
	ret->keys_written = n->keys_written;
	ret->fenced = n->fenced;
	ret->resyncs = n->resyncs;
	ret->planner_vacant = n->planner_vacant;
	snprintf(ret->planner_vacant_why, sizeof(ret->planner_vacant_why), "%s", n->vacant_why);
	ret->takeovers = n->takeovers;
	ret->silent_nodes = n->is_planner ? n->silent_kept : 0;
	ret->plain = n->plain;
	ret->campaign_refused = n->campaign_refused;
	snprintf(ret->campaign_refused_why, sizeof(ret->campaign_refused_why), "%s",
		 n->campaign_refused_why);
}

void drf_fleet_node_free(struct drf_fleet_node *n)
{
	if (!n)
		return;
	/* The calls under way end here, with -ECANCELED: their callbacks see closing. */
	n->closing = true;
	etcd_close(n->e);
	pw_free(n);
	silent_free(n);
	for (size_t i = 0; i < n->nsw; i++)
		free(n->sw[i].value);
	free(n->sw);
	drf_fleet_assignment_clear(&n->cur);
	free(n->node_value);
	free(n->state_dir);
	free(n);
}
