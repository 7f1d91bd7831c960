/* SPDX-License-Identifier: MIT */
/*
 * Fleet mode: drfd nodes sharing a fleet's tenants by DRFH (agent/core/drfh.h),
 * coordinated through etcd (etcd.h). Every key is under a prefix P
 * ("/drfd/" by default):
 *
 *   P/nodes/NODE    {"capacity": {RES: n}, "labels": {KEY: "VALUE"}}, put by
 *                   the node with its lease (TTL 10 s unless configured) and
 *                   kept alive by it: when the node dies, etcd deletes it.
 *   P/tenants/NAME  one tenant, with the keys of a fleet file's [tenant NAME]:
 *                   {"weight": w, "cgroup": PATH, "tasks": n | "unlimited",
 *                   "task": {RES: n}} (the task model) or {"weight": w,
 *                   "cgroup": PATH, "demand": {RES: n}} (a bounded demand; a
 *                   resource it does not list is a demand for the whole pool).
 *                   Put by `drfctl fleet apply` (drf_fleet_apply).
 *   P/planner       the planner's node name, with its lease, created by a txn
 *                   that holds only if the key does not exist
 *                   (create_revision == 0). Its create_revision is the
 *                   planner's fencing token. Read and watched by every node;
 *                   written (the campaign, the delete of a vacant key) only
 *                   by a node that campaigns (not plain: [fleet] planner = no).
 *   P/assign/NODE   {"revision": R, "planner": NAME, "capacity": {RES: n},
 *                   "tenants": [{"name",
 *                   "cgroup", "weight", "tasks", "alloc": {RES: n}}]}: NODE's
 *                   share of the fleet's plan made from the nodes and tenants
 *                   at etcd revision R, written by the planner only in a txn
 *                   that compares P/planner's create_revision to its token
 *                   and P/planner's value to its name: a planner that lost
 *                   the role cannot write, and steps down when its txn fails.
 *   P/tasks/NODE/ID {"tenant": NAME, "argv": [WORD, ...], "task": {RES: n},
 *                   "submitted": unix seconds, "by": WHO, "key": KEY}: one
 *                   task for NODE's task queue (tasks.h), put by `drfctl
 *                   fleet submit` (drf_fleet_submit) together with
 *                   P/taskids/ID, in a txn that holds only if P/taskids/ID
 *                   does not exist (create_revision == 0): an ID is placed
 *                   once in the whole fleet, so that a retry with the same
 *                   --key (ID = the key) never runs twice, even where it
 *                   would place the task elsewhere. "by" (the etcd user, or
 *                   the local user who ran drfctl) is for people only; "key"
 *                   is absent without --key. Never rewritten: the task's
 *                   state is a key of its own.
 *   P/taskids/ID    NODE: where task ID was placed (the txn's guard).
 *   P/taskstate/NODE/ID  {"state": "queued" | "running" | "exited" |
 *                   "failed" | "refused", "code": N (exited: the exit code),
 *                   "why": TEXT (failed, refused), "task": the local task id
 *                   (0: none), "at": unix seconds}, put by NODE when the
 *                   state changes (only then). exited, failed and refused
 *                   are final: a node that reads its tasks again (a restart,
 *                   a compaction) hands over only those not final. Whoever
 *                   may write P/tasks/ in etcd may run commands on the nodes
 *                   as their [fleet] task-user: give that right (etcd's roles)
 *                   as one gives a login there.
 *
 * Who writes what (the least-privilege etcd roles of docs/fleet.md, made by
 * deploy/examples/etcd-roles.sh): node NODE writes only P/nodes/NODE and
 * P/taskstate/NODE/, and reads P/nodes/, P/planner, P/assign/NODE and
 * P/tasks/NODE/; a node that may plan also writes P/planner and P/assign/
 * and reads P/tenants/; drfctl fleet submit writes P/tasks/ and P/taskids/,
 * drfctl fleet apply P/tenants/, and both read the whole prefix, as drfctl
 * fleet status does.
 *
 * Resources are named as in drfd.conf (cpu, memory, io-read-bps, ...), in
 * drfd's units (cores, bytes, bytes/s, bits/s). Values are one line of JSON.
 *
 * The node (struct drf_fleet_node) is one drfd's part: it registers its host
 * and keeps its lease alive, campaigns for the planner's role (every node
 * whose etcd user may write P/planner may hold it), watches its own
 * assignment, hands each new one to its owner and persists it in the state
 * dir, so that a restart with etcd unreachable still has the last good one.
 * A plain node (c->plain, or refused the role by etcd's permissions) only
 * reads who plans. The planner watches P/nodes/ and P/tenants/ and, on each
 * change, reads both at one revision, places the tenants' tasks by DRFH
 * Best-Fit toward DRFH from scratch in rounds from the assignments in force
 * (drf_fleet_compute_more: a round stops a bounded number of tasks) and
 * writes the nodes whose assignment changed, deleting those of nodes silent
 * past the grace (keep_silent in fleet.c).
 *
 * Nothing blocks: every step is an etcd call whose callback comes from the
 * sd-event loop, and what waits for time (keepalives, retries after errors,
 * backed off up to a third of the TTL) waits for drf_fleet_node_tick(), with
 * the clock the node was given.
 */
#ifndef DRF_FLEET_H
#define DRF_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "clock.h"
#include "config.h"
#include "etcd.h"
#include "log.h"
#include "res.h"

#define DRF_FLEET_DEFAULT_PREFIX "/drfd/"
#define DRF_FLEET_DEFAULT_TTL 10
/* The file in the state dir that keeps the last good assignment. */
#define DRF_FLEET_ASSIGNMENT_FILE "fleet-assignment.json"
/* A prefix: '/' first and last, at most so many bytes. */
#define DRF_FLEET_PREFIX_MAX 200
/* A label: a key of 1-63 of [A-Za-z0-9_./-], a value of at most 255 bytes, no control character. */
#define DRF_FLEET_LABEL_KEY_MAX 63
#define DRF_FLEET_LABEL_VALUE_MAX 255
#define DRF_FLEET_LABELS_MAX 64

struct drf_fleet_label {
	char *key;
	char *value;
};

/* A node as registered (P/nodes/NODE). */
struct drf_fleet_nodeinfo {
	char name[DRF_TENANT_NAME_MAX + 1];
	double capacity[DRF_NRES]; /* 0: has none */
	struct drf_fleet_label *labels;
	size_t n_labels;
	int64_t lease;        /* of its key */
	int64_t mod_revision; /* of its key */
};

/* One tenant's part of a node's assignment. */
struct drf_fleet_share {
	char name[DRF_TENANT_NAME_MAX + 1];
	char *cgroup;
	double weight;
	double tasks;           /* whole tasks placed on the node (a demand tenant: 0 or 1) */
	double alloc[DRF_NRES]; /* tasks times the task's shape */
};

/* A node's assignment (P/assign/NODE). */
struct drf_fleet_assignment {
	int64_t revision; /* of the nodes and tenants it was planned from; 0: withdrawn */
	char planner[DRF_TENANT_NAME_MAX + 1];
	/*
	 * The node's capacity the plan was made for (0s: not said, a value of an
	 * older drfd): a later planner keeps a silent node's share in place for
	 * the grace period with it, the node's registration being gone.
	 */
	double capacity[DRF_NRES];
	struct drf_fleet_share *tenants; /* by name */
	size_t n;
};

/*
 * The value formats. Each *_value returns one line of JSON in a new string
 * (*ret): 0, -ENOMEM, or -EINVAL (a label the format refuses). Each *_parse
 * reads len bytes of text: 0 and *ret (the caller's to clear), or -EBADMSG
 * (not JSON, or not the format: why in err), -EINVAL (a name or value out
 * of range: why in err), -ENOMEM; ret is untouched on failure.
 */
int drf_fleet_node_value(const double capacity[DRF_NRES], const struct drf_fleet_label *labels,
			 size_t n_labels, char **ret);
int drf_fleet_node_parse(const char *name, const char *text, size_t len,
			 struct drf_fleet_nodeinfo *ret, char *err, size_t errlen);
void drf_fleet_nodeinfo_clear(struct drf_fleet_nodeinfo *n);

/* A tenant of a config (its file and line aside). */
int drf_fleet_tenant_value(const struct drf_tenant *t, char **ret);
/* ret->cgroup is allocated (the name when the value has none); drf_fleet_tenant_clear(). */
int drf_fleet_tenant_parse(const char *name, const char *text, size_t len, struct drf_tenant *ret,
			   char *err, size_t errlen);
void drf_fleet_tenant_clear(struct drf_tenant *t);

int drf_fleet_assignment_value(const struct drf_fleet_assignment *a, char **ret);
int drf_fleet_assignment_parse(const char *text, size_t len, struct drf_fleet_assignment *ret,
			       char *err, size_t errlen);
/* Frees what a holds and zeroes it; NULL is fine. */
void drf_fleet_assignment_clear(struct drf_fleet_assignment *a);
int drf_fleet_assignment_copy(struct drf_fleet_assignment *dst,
			      const struct drf_fleet_assignment *src);
/* Whether a and b give the same tenants the same (their revision and planner aside). */
bool drf_fleet_assignment_same(const struct drf_fleet_assignment *a,
			       const struct drf_fleet_assignment *b);

/*
 * The assignment file of the state dir: {"node": NODE, "prefix": P,
 * "assignment": {...}}, replaced atomically (fileio.h). Load: 0 and *ret,
 * -ENOENT when there is none, -ESTALE when it is another node's or
 * prefix's, -EBADMSG when it does not parse, or an error of the state dir.
 */
int drf_fleet_assignment_save(const char *state_dir, const char *node, const char *prefix,
			      const struct drf_fleet_assignment *a);
int drf_fleet_assignment_load(const char *state_dir, const char *node, const char *prefix,
			      struct drf_fleet_assignment *ret);

/* The keys of a prefix. */
struct drf_fleet_keys {
	char prefix[DRF_FLEET_PREFIX_MAX + 1];
	char nodes[DRF_FLEET_PREFIX_MAX + 16];   /* P/nodes/ */
	char tenants[DRF_FLEET_PREFIX_MAX + 16]; /* P/tenants/ */
	char assign[DRF_FLEET_PREFIX_MAX + 16];  /* P/assign/ */
	char planner[DRF_FLEET_PREFIX_MAX + 16]; /* P/planner */
	char tasks[DRF_FLEET_PREFIX_MAX + 16];   /* P/tasks/ */
	char taskids[DRF_FLEET_PREFIX_MAX + 16]; /* P/taskids/ */
	char taskstate[DRF_FLEET_PREFIX_MAX + 16]; /* P/taskstate/ */
};
/* 0, or -EINVAL for a prefix that is empty, too long, or not '/' first and last. */
int drf_fleet_keys_init(struct drf_fleet_keys *k, const char *prefix);
/* dir (k->nodes, k->tenants, k->assign) followed by name, into buf: 0 or -ENAMETOOLONG. */
int drf_fleet_key(char *buf, size_t len, const char *dir, const char *name);

/*
 * Fleet tasks (P/tasks/NODE/ID, P/taskstate/NODE/ID). An ID is a name
 * (drf_name_valid): the --key given, or one made of the time and random bits.
 */
#define DRF_FLEET_TASK_ARGS_MAX 4096
#define DRF_FLEET_TASK_WHY_MAX 512

struct drf_fleet_task {
	char node[DRF_TENANT_NAME_MAX + 1];
	char id[DRF_TENANT_NAME_MAX + 1];
	char tenant[DRF_TENANT_NAME_MAX + 1];
	char **argv;             /* argc words and NULL */
	size_t argc;
	double vec[DRF_NRES];    /* the task's; a resource not listed is 0 */
	int64_t submitted;       /* unix seconds */
	char *by;                /* NULL: not said */
	char *key;               /* NULL: none */
};

enum drf_fleet_task_st {
	DRF_FLEET_TASK_NONE,     /* no state written yet */
	DRF_FLEET_TASK_QUEUED,
	DRF_FLEET_TASK_RUNNING,
	DRF_FLEET_TASK_EXITED,   /* final: code */
	DRF_FLEET_TASK_FAILED,   /* final: why (killed, out of memory, lost, could not start) */
	DRF_FLEET_TASK_REFUSED,  /* final: why (the node would not run it) */
};

struct drf_fleet_task_state {
	enum drf_fleet_task_st st;
	int code;
	char why[DRF_FLEET_TASK_WHY_MAX];
	uint64_t task;           /* the node's local task id; 0: none */
	int64_t at;              /* unix seconds */
};

/* "queued", ..., "none"; and whether st is final (exited, failed, refused). */
const char *drf_fleet_task_st_name(enum drf_fleet_task_st st);
bool drf_fleet_task_st_final(enum drf_fleet_task_st st);

/*
 * The values, as the other formats (above): t->node and t->id come from the
 * key, not the value; parse takes them as given (checked: names). A task
 * without a command, a word with a NUL or over DRF_FLEET_TASK_ARGS_MAX
 * words, a tenant that is not a name, a quantity < 0: -EINVAL or -EBADMSG.
 */
int drf_fleet_task_value(const struct drf_fleet_task *t, char **ret);
int drf_fleet_task_parse(const char *node, const char *id, const char *text, size_t len,
			 struct drf_fleet_task *ret, char *err, size_t errlen);
void drf_fleet_task_clear(struct drf_fleet_task *t);
int drf_fleet_task_state_value(const struct drf_fleet_task_state *s, char **ret);
int drf_fleet_task_state_parse(const char *text, size_t len, struct drf_fleet_task_state *ret,
			       char *err, size_t errlen);
/* Whether a and b say the same (their time aside): a node writes only changes. */
bool drf_fleet_task_state_same(const struct drf_fleet_task_state *a,
			       const struct drf_fleet_task_state *b);

/*
 * The fleet as etcd has it, read at one revision (one txn of ranges), each
 * list by name. Values that do not decode are left out, counted in
 * n_invalid, the first named with why in invalid.
 */
struct drf_fleet_tenant_entry {
	struct drf_tenant t;
	int64_t mod_revision;
};

struct drf_fleet_assign_entry {
	char node[DRF_TENANT_NAME_MAX + 1];
	struct drf_fleet_assignment a;
	int64_t mod_revision;
};

/* A fleet task and its state (st NONE when the node wrote none yet). */
struct drf_fleet_task_entry {
	struct drf_fleet_task t;
	struct drf_fleet_task_state s;
	int64_t mod_revision;
};

struct drf_fleet_view {
	int64_t revision;
	struct drf_fleet_nodeinfo *nodes;
	size_t n_nodes;
	struct drf_fleet_tenant_entry *tenants;
	size_t n_tenants;
	struct drf_fleet_assign_entry *assigns;
	size_t n_assigns;
	char planner[DRF_TENANT_NAME_MAX + 1]; /* "" when there is none */
	int64_t planner_revision;              /* its create_revision, the token; 0: none */
	int64_t planner_lease;
	struct drf_fleet_task_entry *tasks; /* by node, then id (drf_fleet_read_tasks only) */
	size_t n_tasks;
	size_t n_invalid;
	char invalid[256];
};

typedef void (*drf_fleet_view_cb)(void *userdata, int err, const char *msg,
				  struct drf_fleet_view *v);

/*
 * Reads the fleet under prefix: the call's id in *ret_id (for etcd_wait), and
 * cb from the loop with the view or an error of etcd's (msg) or of decoding
 * (-ENOMEM). The view is cleared after the callback, which may take it whole
 * (copy the struct, zero it). Do not etcd_cancel() the call; closing the
 * handle ends it with -ECANCELED.
 */
int drf_fleet_read(struct etcd *e, const char *prefix, drf_fleet_view_cb cb, void *userdata,
		   uint64_t *ret_id);
/*
 * The same with the fleet's tasks and their states (v->tasks), for drfctl:
 * the planner's reads leave them out (they grow with every task submitted).
 */
int drf_fleet_read_tasks(struct etcd *e, const char *prefix, drf_fleet_view_cb cb,
			 void *userdata, uint64_t *ret_id);
/* The view of a txn_resp of the read's ranges (nodes, tenants, assign, planner, tasks, taskstate). */
int drf_fleet_view_decode(const struct drf_fleet_keys *k, const struct etcd_txn_resp *t,
			  struct drf_fleet_view *ret);
void drf_fleet_view_clear(struct drf_fleet_view *v);
/* The index of name in the view's nodes (tenants, assigns), or -1. */
ssize_t drf_fleet_view_node(const struct drf_fleet_view *v, const char *name);
ssize_t drf_fleet_view_assign(const struct drf_fleet_view *v, const char *node);

/*
 * The plan of a view: each of its nodes' assignment (ret: v->n_nodes, in
 * its order; revision v->revision, planner as given), by DRFH Best-Fit over
 * the nodes in name order, each its own server, and the tenants in name
 * order, continued from the view's assignments. A node without capacity, a
 * task tenant whose task needs nothing the pool has, get nothing. Pure.
 * 0, -ENOMEM, or DRFH's error.
 */
int drf_fleet_compute(const struct drf_fleet_view *v, const char *planner,
		      struct drf_fleet_assignment **ret);
/*
 * The same, a round of it: *ret_more says the round is short of DRFH from
 * scratch (a late tenant, a displaced one: at most a quarter of the tasks
 * are stopped a round), and the planner plans again from what it wrote.
 */
int drf_fleet_compute_more(const struct drf_fleet_view *v, const char *planner,
			   struct drf_fleet_assignment **ret, bool *ret_more);
void drf_fleet_assignments_free(struct drf_fleet_assignment *a, size_t n);

/*
 * Where a fleet task of tenant (vector task) goes, by DRFH Best-Fit (drfh.h)
 * over the view. A node is a candidate if it is alive and its assignment in
 * force gives the tenant an allocation; the tenant's room there is that
 * allocation minus the vectors of its fleet tasks on the node not yet ended
 * (no state, queued, running). Among the candidates where the task fits the
 * room now, the least H(task, c) = || D/|D|_1 - c/|c|_1 ||_1, D the task and
 * c the node's capacity less the vectors of every tenant's fleet tasks on it
 * not yet ended, both as fractions of the pool (the nodes alive); ties by
 * node name. None with room now: the same among those whose allocation could
 * ever hold the task (its local queue waits for room), with *ret_waits set.
 * 0 and the node's index in v->nodes in *ret, or with why in err: -ENOENT
 * (no such tenant), -EINVAL (a task of nothing), -ESRCH (no node alive),
 * -ENOSPC (the tenant is assigned nowhere, or its task is larger than its
 * allocation on every node), -EBUSY (back-pressure: each node that could
 * take it holds DRF_FLEET_NODE_BACKLOG_MAX tasks or more that it has not
 * taken in yet, no state written; a retry later finds room). Pure.
 */
#define DRF_FLEET_NODE_BACKLOG_MAX 1024
int drf_fleet_place_task(const struct drf_fleet_view *v, const char *tenant,
			 const double task[DRF_NRES], size_t *ret, bool *ret_waits, char *err,
			 size_t errlen);

/*
 * drfctl fleet submit's write: P/tasks/NODE/ID = t's value and P/taskids/ID
 * = NODE, only if P/taskids/ID does not exist. cb from the loop: err 0 and
 * placed true, or placed false with the node that has ID already in node
 * (a retry: nothing written); or an error of etcd's. Do not etcd_cancel().
 */
typedef void (*drf_fleet_submit_cb)(void *userdata, int err, const char *msg, bool placed,
				    const char *node, int64_t revision);
int drf_fleet_submit(struct etcd *e, const char *prefix, const struct drf_fleet_task *t,
		     drf_fleet_submit_cb cb, void *userdata);

/*
 * drfctl fleet apply: P/tenants/ made to hold exactly tenants t (n of them):
 * those new or changed put, those not in t deleted, in one txn that compares
 * each key it touches with what was read (a write in between: read and try
 * again, a few times). At most ETCD_TXN_MAX changes (etcd's --max-txn-ops):
 * -E2BIG. cb from the loop, with what was done. Do not etcd_cancel().
 */
struct drf_fleet_apply_result {
	int64_t revision;
	size_t put, deleted, unchanged;
};
typedef void (*drf_fleet_apply_cb)(void *userdata, int err, const char *msg,
				   const struct drf_fleet_apply_result *r);
int drf_fleet_apply(struct etcd *e, const char *prefix, const struct drf_tenant *t, size_t n,
		    drf_fleet_apply_cb cb, void *userdata);

/* The node. */
struct drf_fleet_node_config {
	const char *node;         /* its name, as drf_name_valid() */
	const char *prefix;       /* NULL: DRF_FLEET_DEFAULT_PREFIX */
	int64_t ttl;              /* its lease's, in seconds; 0: DRF_FLEET_DEFAULT_TTL */
	/*
	 * As the planner: how long (seconds) a node whose registration is gone
	 * keeps its share planned on it, before it is placed elsewhere; 0:
	 * DRF_FLEET_GRACE_TTLS TTLs.
	 */
	int64_t grace;
	double capacity[DRF_NRES];
	const struct drf_fleet_label *labels;
	size_t n_labels;
	const char *state_dir;    /* where the assignment is kept; NULL: nowhere */
	/*
	 * The node never campaigns for the planner's role ([fleet] planner = no:
	 * its etcd user has no planner role): it reads and watches P/planner
	 * and never writes it, nor deletes a vacant one. A node that campaigns
	 * and is refused by etcd's permissions ("permission denied") says so
	 * once and goes on so too, until it restarts.
	 */
	bool plain;
	const struct drf_clock *clock; /* NULL: the system's */
	const struct drf_logger *log;  /* NULL: none */
	/*
	 * A new assignment to put in force (etcd's, or at start the state dir's),
	 * from the loop (or from drf_fleet_node_start); again after a refusal.
	 * The owner answers with drf_fleet_node_applied(), then or later. a lives
	 * for the call only. NULL: each is taken as in force.
	 */
	void (*on_assignment)(void *userdata, const struct drf_fleet_assignment *a);
	/*
	 * A fleet task for this node (P/tasks/NODE/ID) not in a final state:
	 * new (a watch event of its creation), or found when the node reads its
	 * tasks (at start, after a compaction), with its state (st NONE: none).
	 * The same task may come again after such a read: the owner's queue
	 * takes its ID as an idempotency key. NULL: the node reads no tasks.
	 */
	void (*on_task)(void *userdata, const struct drf_fleet_task *t,
			const struct drf_fleet_task_state *s);
	void *userdata;
};

struct drf_fleet_node;

/*
 * A node over client e, which it takes (and closes in drf_fleet_node_free)
 * on success only: 0, -EINVAL with why in err (a name, prefix, TTL, label
 * refused), -ENOMEM. Nothing is asked of etcd before drf_fleet_node_start().
 */
int drf_fleet_node_new(const struct drf_fleet_node_config *c, struct etcd *e,
		       struct drf_fleet_node **ret, char *err, size_t errlen);

/*
 * Starts: the state dir's assignment, if any, is put in force (on_assignment
 * runs from here), and the node asks for its lease, reads and watches its
 * assignment. 0, or -EALREADY.
 */
int drf_fleet_node_start(struct drf_fleet_node *n);

/* What waits for time: keepalives, retries. Call it at least every second. */
void drf_fleet_node_tick(struct drf_fleet_node *n);

/* When the next tick has something to do (the clock's monotonic usec); UINT64_MAX: nothing. */
uint64_t drf_fleet_node_next_tick(const struct drf_fleet_node *n);

/*
 * As the planner, plans again now (a reload; tests); -EPERM when not the
 * planner as far as the node knows. The write still goes through the fence.
 */
int drf_fleet_node_replan(struct drf_fleet_node *n);

/*
 * Puts task id's state (P/taskstate/NODE/ID), from the loop; a newer state
 * of the same task replaces one not yet written; a write that fails is tried
 * again from the tick. 0, -EINVAL (id not a name), -ENOMEM.
 */
int drf_fleet_node_task_state(struct drf_fleet_node *n, const char *id,
			      const struct drf_fleet_task_state *s);
/* State writes not yet done (tests). */
size_t drf_fleet_node_task_states_pending(const struct drf_fleet_node *n);

/* The assignment in force, or NULL. */
const struct drf_fleet_assignment *drf_fleet_node_assignment(const struct drf_fleet_node *n);

struct drf_fleet_status {
	bool reachable;                 /* etcd's last answer came (or a call could not reach it) */
	uint64_t since_usec;            /* realtime usec: reachable's last change, or the start */
	char last_error[256];           /* the last error's text; "" none */
	bool registered;                /* P/nodes/NODE put with the lease in force */
	int64_t lease;                  /* 0: none */
	bool planner;                   /* this node plans */
	char planner_name[DRF_TENANT_NAME_MAX + 1]; /* "" none known */
	int64_t planner_token;          /* P/planner's create_revision, as last seen */
	bool has_assignment;
	int64_t assignment_revision;    /* etcd's latest for this node (or the state dir's) */
	bool assignment_from_file;      /* the state dir's, not yet confirmed by etcd */
	int64_t applied_revision;       /* the one the owner has in force; 0: none */
	bool refused;                   /* the owner refused assignment_revision (retried) */
	char refused_why[256];
	/* As the planner: its last plan. */
	int64_t plan_revision;
	size_t nodes, tenants;
	uint64_t plans;                 /* plans made (written or found unchanged) */
	uint64_t keys_written;          /* assignments put or deleted */
	uint64_t fenced;                /* writes refused by the fence (then stepped down) */
	uint64_t resyncs;               /* watches re-read after a compaction */
	/* P/planner names no live node (a value without a lease, a node not registered). */
	bool planner_vacant;
	char planner_vacant_why[200];
	uint64_t takeovers;             /* vacant planner keys this node deleted */
	size_t silent_nodes;            /* as the planner: nodes kept in their grace */
	bool plain;                     /* it does not campaign ([fleet] planner = no) */
	bool campaign_refused;          /* etcd refused its campaign (permission denied) */
	char campaign_refused_why[200]; /* etcd's message */
};

void drf_fleet_node_status(const struct drf_fleet_node *n, struct drf_fleet_status *ret);

/*
 * The owner's verdict on the assignment of revision (on_assignment's): 0 when
 * it is in force (then, and only then, it is kept in the state dir), or err
 * and why (NULL: err's text) when it was refused: the status says so, and the
 * node offers it again after 5 s, then 10, 20, 40, then every minute, until a
 * verdict of 0 or a newer assignment. A verdict on one already replaced is
 * ignored.
 */
void drf_fleet_node_applied(struct drf_fleet_node *n, int64_t revision, int err, const char *why);

/*
 * The host's capacity (and labels) changed, a reload's: P/nodes/NODE is put
 * again under the lease in force, and the planner re-plans. 1 when it changed,
 * 0 when it is the same, -EINVAL (too many labels, or one refused), -ENOMEM.
 */
int drf_fleet_node_set_host(struct drf_fleet_node *n, const double capacity[DRF_NRES],
			    const struct drf_fleet_label *labels, size_t n_labels);

/* Closes the client (its calls end, with -ECANCELED) and frees the node. NULL is fine. */
void drf_fleet_node_free(struct drf_fleet_node *n);

#endif
