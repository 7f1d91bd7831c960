/* SPDX-License-Identifier: MIT */
/* The status of the running daemon, as `drfctl status` shows it. */
#ifndef DRF_STATUS_H
#define DRF_STATUS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "json.h"
#include "view.h"

/*
 * Renders v's status: text for people, or JSON. 0 with the count of problems
 * in *ret_problems, or -errno (out of memory, out's error) with nothing or
 * part of it written. All the parts below at once.
 */
int drf_status_render(const struct drf_view *v, bool json, FILE *out, int *ret_problems);

/*
 * The status in parts, so that drfd's socket sends one part while its event
 * loop serves everything else (listener.c), and holds one part in memory,
 * never the whole document: the head (the daemon, the plan, the host: what
 * comes before the tenants), then the tenants, then what follows them (inner
 * nodes, groups, the network, orphans). A part holds at most DRF_STATUS_PART
 * nodes (tenants, inner nodes, groups, orphans), and fewer once the subtrees
 * it counted processes in read DRF_STATUS_PART_CGROUPS cgroups (but one node
 * a part at least). Each tenant costs about ten cgroup files read and 2 kB of
 * JSON: 32 of them are about 5 ms of one turn of the loop and 70 kB, which a
 * Unix socket's buffer (about 200 kB) takes in one send; 1,000 tenants are 32
 * parts (tests/bench/bench_status.c). Fewer a part would cost more turns and
 * sends for the same status; more would make the turn longer for nothing.
 *
 * The parts concatenated are the document drf_status_render() writes: the
 * JSON one line and a newline, member for member in the same order. With a
 * tenant's name, the head and that tenant only (JSON: the head's members,
 * "tenants" holding the one, and "net", which the text's head shows).
 */
#define DRF_STATUS_PART 32
#define DRF_STATUS_PART_CGROUPS 1024

struct drf_status_cursor {
	bool json;
	bool one;                       /* one tenant's status: name's */
	char name[DRF_TENANT_NAME_MAX + 1];
	bool no_name;                   /* the name given cannot be a tenant's */
	size_t one_at;                  /* its index, found by the head */
	int step;                       /* the stage in progress (status.c) */
	size_t pos;                     /* its next node */
	bool opened;                    /* its opening is written */
	bool started;                   /* the head is written */
	int problems;                   /* counted so far */
	/* What the head saw: a part that finds otherwise would mix two plans. */
	const void *nodes;
	size_t n, n_inner, n_groups, n_orphans;
	struct drf_json_stream js;
	/* The last part's: nodes rendered, cgroups its process counts read. */
	unsigned part_nodes;
	size_t part_cgroups;
};

/* A cursor at the head of the status: JSON or text; tenant NULL: all of it. */
void drf_status_begin(struct drf_status_cursor *c, bool json, const char *tenant);

/*
 * Renders the next part of v's status to out. Returns 1 when more parts
 * follow, 0 when that was the last (c->problems is the whole status's count),
 * or -errno with part of it written: -ENOENT from the first part when the
 * tenant named is not in v's plan (nothing written), -ESTALE when v's plan is
 * not the one the head showed (its nodes or orphans changed), -ENOMEM, -EIO.
 * v is the daemon's view as of each part (drfd_view()); the caller tells a
 * new plan by the daemon's counters, this by what the view holds.
 */
int drf_status_next(struct drf_status_cursor *c, const struct drf_view *v, FILE *out);

/* The index of tenant name in v's plan, or -1. */
ssize_t drf_status_find(const struct drf_view *v, const char *name);

struct json_object;
/* "beta" and "lambda" in o when cfg's policy is fds or gfj (the defaults filled in). */
void drf_status_family_json(struct json_object *o, const struct drf_config *cfg);

#endif
