// SPDX-License-Identifier: MIT
/* The keys drfd reads only at start, and what a reload does when one changed (startkeys.h). */
#include "startkeys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knobs.h"

void drf_start_keys_of(const struct drf_config *c, struct drf_start_keys *ret)
{
	bool net = c->capacity[DRF_RES_NET] > 0 || c->capacity[DRF_RES_NET_IN] > 0;

	*ret = (struct drf_start_keys){
		.cgroup_root = c->cgroup_root_auto ? "auto" : c->cgroup_root,
		.io_device = (drf_knobs_controllers(c) & DRF_CTRL_IO) ? c->io_device : NULL,
		.net_device = net ? c->net_device : NULL,
		.state_dir = c->state_dir,
		.status_socket = c->status_socket,
		.status_group = c->status_group,
		.net_replace_qdisc = c->net_replace_qdisc,
	};
}

static int dup_str(const char *s, const char **ret)
{
	char *p;

	*ret = NULL;
	if (!s)
		return 0;
	p = strdup(s);
	if (!p)
		return -ENOMEM;
	*ret = p;
	return 0;
}

int drf_start_keys_dup(const struct drf_start_keys *k, struct drf_start_keys *ret)
{
	struct drf_start_keys n = { .net_replace_qdisc = k->net_replace_qdisc };

	if (dup_str(k->cgroup_root, &n.cgroup_root) < 0 || dup_str(k->io_device, &n.io_device) < 0 ||
	    dup_str(k->net_device, &n.net_device) < 0 || dup_str(k->state_dir, &n.state_dir) < 0 ||
	    dup_str(k->status_socket, &n.status_socket) < 0 ||
	    dup_str(k->status_group, &n.status_group) < 0) {
		drf_start_keys_free(&n);
		*ret = (struct drf_start_keys){ 0 };
		return -ENOMEM;
	}
	*ret = n;
	return 0;
}

void drf_start_keys_free(struct drf_start_keys *k)
{
	free((char *)k->cgroup_root);
	free((char *)k->io_device);
	free((char *)k->net_device);
	free((char *)k->state_dir);
	free((char *)k->status_socket);
	free((char *)k->status_group);
	*k = (struct drf_start_keys){ 0 };
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

size_t drf_start_keys_diff(const struct drf_start_keys *old, const struct drf_start_keys *n,
			   struct drf_start_change *ret)
{
	size_t k = 0;

#define CHANGE(name, a, b, r) \
	(ret[k++] = (struct drf_start_change){ .key = (name), .was = (a), .now = (b), .restart = (r) })
	if (!same(old->cgroup_root, n->cgroup_root))
		CHANGE("cgroup-root", old->cgroup_root, n->cgroup_root, true);
	/* Dropping the io knobs is a reload; setting them on another device is not. */
	if (n->io_device && !same(old->io_device, n->io_device))
		CHANGE("io-device", old->io_device, n->io_device, true);
	if (!same(old->net_device, n->net_device))
		CHANGE("net-device", old->net_device, n->net_device, true);
	if (!same(old->state_dir, n->state_dir))
		CHANGE("state-dir", old->state_dir, n->state_dir, true);
	if (!same(old->status_socket, n->status_socket))
		CHANGE("status-socket", old->status_socket, n->status_socket, true);
	if (!same(old->status_group, n->status_group))
		CHANGE("status-group", old->status_group, n->status_group, true);
	if (old->net_replace_qdisc != n->net_replace_qdisc)
		CHANGE("net-replace-qdisc", old->net_replace_qdisc ? "yes" : "no",
		       n->net_replace_qdisc ? "yes" : "no", false);
#undef CHANGE
	return k;
}

void drf_start_change_text(const struct drf_start_change *c, char *buf, size_t len)
{
	bool net = strcmp(c->key, "net-device") == 0;

	if (net && !c->was)
		snprintf(buf, len, "network capacities added (net-device '%s')", c->now);
	else if (net && !c->now)
		snprintf(buf, len, "network capacities removed (net-device '%s')", c->was);
	else if (!c->was)
		snprintf(buf, len, "%s added ('%s')", c->key, c->now);
	else if (!c->now)
		snprintf(buf, len, "%s removed (was '%s')", c->key, c->was);
	else
		snprintf(buf, len, "%s changed from '%s' to '%s'", c->key, c->was, c->now);
}
