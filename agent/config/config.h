/* SPDX-License-Identifier: MIT */
/*
 * The tenant config: one main INI file plus every *.conf in a tenants directory,
 * parsed with Debian's libinih through a reader of our own, so that what inih
 * would silently split or merge (over-long lines, indented continuation lines,
 * repeated sections) is an error with FILE:LINE instead.
 */
#ifndef DRF_CONFIG_H
#define DRF_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "access.h"
#include "alloc.h"
#include "hdrf.h"
#include "host.h"

#define DRF_TENANT_NAME_MAX 64
#define DRF_CONFIG_MAX_BYTES (4 << 20)
#define DRF_WEIGHT_MAX 10000.0

enum drf_mode {
	DRF_MODE_SHARE, /* guarantees plus borrowing: weights and protections */
	DRF_MODE_LIMIT, /* hard caps at the allocation */
};

/* [agent] metrics-detail: what the metrics-file holds (the socket's metrics are always full). */
enum drf_metrics_detail {
	DRF_METRICS_BASIC, /* per tenant, what a dashboard or an alert needs (metrics.c) */
	DRF_METRICS_FULL,  /* everything: histograms, pressure, limits, demands, counters */
};

/*
 * An address to listen on for TCP: [agent] metrics-listen = ADDR:PORT, where
 * ADDR is an IPv4 address (127.0.0.1:9100), an IPv6 address in brackets
 * ([::1]:9100) or `localhost` (127.0.0.1); PORT is 1 to 65535. No names are
 * resolved: the config means the same whatever DNS says.
 */
struct drf_listen_addr {
	int family;             /* AF_INET or AF_INET6 */
	unsigned char addr[16]; /* network order: 4 bytes for AF_INET */
	uint16_t port;
};

/* Parses s into *ret; 0, or -EINVAL with what is wrong in *why (a constant string). */
int drf_parse_listen(const char *s, struct drf_listen_addr *ret, const char **why);

struct drf_tenant {
	char name[DRF_TENANT_NAME_MAX + 1];
	char *cgroup; /* relative to cgroup-root (with slices, to drf.slice's cgroup) */
	double weight;
	bool task_model;       /* task-* keys (shape of one task) rather than a demand */
	double vec[DRF_NRES];  /* the demand, or one task */
	bool declared[DRF_NRES];
	int vec_line[DRF_NRES]; /* the line of each declared key of vec (0: none, or not a file's) */
	double tasks;          /* task model only: count, or INFINITY for unlimited */
	const char *file;      /* where its section is; points into drf_config.files */
	int line;
	size_t group;          /* `group =`: 1 + index into drf_config.groups; 0: none */
	struct drf_acl access, admins; /* its own; see access.h for what they inherit */
};

/*
 * [group NAME]: an inner node of the tenant tree, shared by hierarchical DRF
 * (agent/core/hdrf.h) among its tenants and groups. Its cgroup is below its
 * parent group's (or cgroup-root), and its members' cgroups below its own.
 */
struct drf_group {
	char name[DRF_TENANT_NAME_MAX + 1];
	char *cgroup;          /* the whole path, relative to cgroup-root as a tenant's */
	double weight;
	size_t parent;         /* 1 + index of its parent group; 0: the root */
	const char *file;
	int line;
	struct drf_acl access, admins; /* given to every tenant below it */
};

/*
 * [fleet] in drfd.conf: this drfd is a node of a fleet coordinated through
 * etcd (agent/fleet): it registers its capacity, may be elected the fleet's
 * planner, and its tenants are the fleet's assignment to it, not sections of
 * its own config.
 */
struct drf_fleet_member {
	bool on;
	char *endpoints;      /* comma-separated http:// or https:// URLs */
	char *prefix;         /* the keys' prefix, "/drfd/" by default; begins and ends with '/' */
	char *node;           /* this node's name; NULL: the host's name */
	uint64_t lease_ttl_us;
	/*
	 * grace: as the planner, how long a node whose registration is gone
	 * (its lease let go: stopped, partitioned, stalled) keeps its share in
	 * the plan before that share is placed elsewhere. Default
	 * DRF_FLEET_GRACE_TTLS lease TTLs; never less than one.
	 */
	uint64_t grace_us;
	char *ca_file, *cert_file, *key_file; /* TLS */
	char *user, *password_file;           /* etcd authentication */
	/*
	 * task-user: fleet tasks (P/tasks/NODE/) run as this local user, never
	 * root, with its uid, gid, groups and home directory ("/" if none) as
	 * the user database had them at load. NULL: the node runs no fleet task.
	 */
	char *task_user;
	uid_t task_uid;
	gid_t task_gid;
	gid_t *task_groups;
	size_t task_ngroups;
	char *task_home;
	/*
	 * planner = no: the node never campaigns for the planner's role (its
	 * etcd user has no planner role: docs/fleet.md, etcd roles); it reads
	 * P/planner and never writes it. Default: it campaigns.
	 */
	bool plain;
	int line;             /* of the section */
};

#define DRF_FLEET_GRACE_TTLS 5

/* [agent] task-output-max: its default (64M), and the most it takes (1T). */
#define DRF_TASK_OUTPUT_MAX_DEFAULT (64ULL << 20)
#define DRF_TASK_OUTPUT_MAX_MAX (1ULL << 40)

struct drf_config {
	char *path;
	char *cgroup_root;
	uint64_t interval_us;
	uint64_t verify_period_us; /* every knob is read back at least once per this */
	bool cgroup_root_auto;   /* `auto`: the daemon resolves it (cgroup_root: the fallback) */
	bool slices;             /* auto under systemd: tenants are slices, cgroups their paths */
	char *state_dir;
	char *status_socket;
	char *status_group;      /* NULL: root only */
	/*
	 * Bytes of each of a task's stdout and stderr kept in its files, past
	 * which the rest is dropped and counted (agent/tasks/taskrun.c); 0: no cap.
	 */
	uint64_t task_output_max;
	bool net_replace_qdisc;  /* replace a foreign root qdisc on net-device */
	char *metrics_file;      /* Prometheus text file written each tick; NULL: none */
	enum drf_metrics_detail metrics_detail; /* of metrics_file and metrics_listen */
	bool metrics_legacy_names;              /* drfd 0.3's metric names too */
	char *metrics_listen;    /* [agent] metrics-listen as written; NULL: no HTTP endpoint */
	struct drf_listen_addr metrics_addr; /* metrics_listen, parsed */
	enum drf_mode mode;
	bool observed;           /* demand = observed: demands follow measured use (online DRF) */
	enum drf_policy policy;
	struct drf_family family; /* fds and gfj's beta and lambda; all 0 for other policies */
	char *tenants_dir; /* resolved against the main file's directory */
	double capacity[DRF_NRES]; /* 0: takes no part */
	double memory_reserve;
	char *io_device;   /* as written: a path or MAJ:MIN; NULL if unset */
	char *net_device;  /* NULL if unset */
	double net_link_rate; /* bits/s the link really carries; 0: the device's speed */
	struct drf_tenant *tenants;
	size_t n_tenants;
	char **files;
	size_t n_files;
	struct drf_fleet_member fleet; /* [fleet] in drfd.conf */
	struct drf_group *groups;      /* [group NAME]; none: flat DRF among the tenants */
	size_t n_groups;
	struct drf_acl access, admins; /* [agent]'s: given to every tenant (access.h) */
};

/*
 * A fleet node's config: drf_config_load() of path, whose [fleet] section is
 * required, with the tenants of the fleet's assignment (the same checks as a
 * config's own tenants, the same slice paths); each tenant's file is `source`
 * (e.g. "fleet assignment of revision 42"). Their cgroup may be NULL (the name).
 */
int drf_config_load_assigned(const char *path, const struct drf_host_ops *host,
			     const struct drf_tenant *tenants, size_t n, const char *source,
			     struct drf_config *ret, char *err, size_t errlen);

/*
 * Demands no capacity can meet, in a loaded config: a task shape bigger than
 * the capacity (not one task fits) or a demand beyond it (only part can be
 * met). They are valid, and planned; each is said to NOTE (its file, the
 * key's line, and what: "tenant 'x': task-cpu 64 is more than ..."). Returns
 * how many.
 */
typedef void drf_config_note_fn(void *ctx, const char *file, int line, const char *what);
size_t drf_config_impossible(const struct drf_config *c, drf_config_note_fn *note, void *ctx);

/*
 * Loads and checks the config. On failure returns a negative errno, writes
 * "FILE:LINE: what is wrong" (or "FILE: ..." when no line applies) into err,
 * and leaves ret untouched. On success ret owns everything; drf_config_free().
 * A file's independent errors are a line each, ten at most; when more were
 * found than err holds or ten, the last line is DRF_CONFIG_MORE_ERRORS.
 */
#define DRF_CONFIG_MORE_ERRORS "(more errors follow; mend these and load it again)"
int drf_config_load(const char *path, const struct drf_host_ops *host, struct drf_config *ret,
		    char *err, size_t errlen);
void drf_config_free(struct drf_config *c);

/*
 * What w may do in tenant t (access.h): root is an admin everywhere; else the
 * strongest role any of t's lists, its groups' and [agent]'s gives. rule gets
 * which list said so ("admins 'carol @ops' of group prod at FILE:LINE"), or,
 * for none, every list there is or that there is none.
 */
enum drf_access_role drf_config_access(const struct drf_config *c, const struct drf_tenant *t,
				       const struct drf_access_who *w, char *rule, size_t len);
/*
 * Every list that gives someone a role in t, "; "-separated into buf, each as
 * drf_config_access() names it; false (and buf says so) when there is none:
 * t is root's alone.
 */
bool drf_config_access_rules(const struct drf_config *c, const struct drf_tenant *t, char *buf,
			     size_t len);

/*
 * The allocation problem the config describes. A bounded tenant's undeclared
 * resources count as a demand for the whole capacity; a task tenant's as 0.
 * ret_demands is allocated (n_tenants entries) and owned by the caller.
 */
int drf_config_problem(const struct drf_config *c, struct drf_problem *ret,
		       struct drf_demand **ret_demands);

/*
 * The tree of the config's groups for hierarchical DRF (hdrf.h), over a
 * problem of drf_config_problem(): ret->base = *problem; the groups and each
 * tenant's parent are allocated (ret_groups: n_groups + 1 entries, ret_parents:
 * n_tenants + 1) and owned by the caller. 0 or -ENOMEM.
 */
int drf_config_hproblem(const struct drf_config *c, const struct drf_problem *problem,
			struct drf_hproblem *ret, struct drf_hgroup **ret_groups,
			size_t **ret_parents);

/*
 * A fleet file (drfctl fleet): [server NAME] sections with a capacity (the
 * resource keys of [capacity], numbers only) and `count = N` for N servers of
 * that shape, named NAME-1 .. NAME-N; [tenant NAME] sections as in drfd.conf;
 * an optional [fleet] with slot-RES keys (the slot of the slots comparison).
 * cfg.capacity is the pool, the sum of every server's capacity, so a bounded
 * tenant's undeclared resource is a demand for the whole pool, as on one host.
 */
#define DRF_FLEET_MAX_SERVERS 1000000
#define DRF_SERVER_NAME_MAX (DRF_TENANT_NAME_MAX + 8)

struct drf_server {
	char name[DRF_TENANT_NAME_MAX + 1];
	double capacity[DRF_NRES]; /* one server's; 0: has none of it */
	size_t count;
	bool counted;              /* `count` was set: its servers are NAME-K */
	const char *file;
	int line;
};

struct drf_fleet {
	struct drf_config cfg; /* the tenants; capacity: the pool */
	struct drf_server *servers;
	size_t n_servers;
	double slot[DRF_NRES]; /* [fleet] slot-RES; 0 where not set */
};

int drf_fleet_load(const char *path, struct drf_fleet *ret, char *err, size_t errlen);
/*
 * The same for a fleet's tenants (drfctl fleet apply): [server] sections are
 * optional (checked when present). Without any, cfg.capacity is 0 and a task
 * tenant's task need only ask for something: each node's capacity is the
 * planner's to check.
 */
int drf_fleet_load_tenants(const char *path, struct drf_fleet *ret, char *err, size_t errlen);
void drf_fleet_free(struct drf_fleet *f);
/* The name of server K (1-based) of a section: NAME, or NAME-K when counted. */
size_t drf_server_name(const struct drf_server *sv, size_t k, char *buf, size_t len);

/* A tenant's or server's name: 1-DRF_TENANT_NAME_MAX of [A-Za-z0-9_.-], not starting with '.'. */
bool drf_name_valid(const char *s);

/* Checks a tenant's cgroup path; returns NULL if fine, or why not. */
const char *drf_cgroup_path_problem(const char *path);

const char *drf_mode_name(enum drf_mode m);

#endif
