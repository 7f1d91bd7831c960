/* SPDX-License-Identifier: MIT */
/*
 * Who may act in a tenant over the status socket: the `access` and `admins`
 * keys of a [tenant], a [group] and [agent]. Each is a list of local users and
 * groups, written "alice 1001 @eng @2000" (a group with '@'), or "*" for every
 * user who can reach the socket. A tenant's lists are its own, its groups' up
 * to the root, and [agent]'s, all of them together (inherited, never taken
 * away below). A member (`access`) may submit to the tenant, `drfctl exec` into
 * it, list its tasks (others' without their command) and cancel its own; an
 * admin (`admins`) may also cancel anyone's task there and see it whole. A
 * tenant nobody is given is root's alone: root may do everything everywhere.
 *
 * Names are looked up when the config is loaded (and reloaded); who asks is
 * the kernel's word on the connection (SO_PEERCRED, SO_PEERGROUPS), never a
 * name looked up at the time of the request.
 */
#ifndef DRF_ACCESS_H
#define DRF_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "host.h"

enum drf_access_kind { DRF_ACCESS_USER, DRF_ACCESS_GROUP, DRF_ACCESS_ANY };

struct drf_access_entry {
	enum drf_access_kind kind;
	unsigned id;    /* uid or gid */
	char *name;     /* as written: "alice", "@eng", "1001", "*" */
};

/* One `access` or `admins` key: set where line is not 0. */
struct drf_acl {
	char *text;     /* the value as written, until resolved; NULL: not set */
	struct drf_access_entry *e;
	size_t n;
	const char *file;
	int line;
};

/* Who asks: the connection's credentials as the kernel recorded them. */
struct drf_access_who {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t ngroups;
};

enum drf_access_role { DRF_ACCESS_NONE, DRF_ACCESS_MEMBER, DRF_ACCESS_ADMIN };

/*
 * Resolves a->text into its entries, by host's user and group lookups (numbers
 * are ids as they are): 0, or -EINVAL with why ("'alise': no such user") in
 * err, or -ENOMEM.
 */
int drf_acl_resolve(struct drf_acl *a, const struct drf_host_ops *host, char *err, size_t len);
bool drf_acl_matches(const struct drf_acl *a, const struct drf_access_who *w);
/* Its entries as written, space-separated, into buf. */
void drf_acl_text(const struct drf_acl *a, char *buf, size_t len);
void drf_acl_free(struct drf_acl *a);

#endif
