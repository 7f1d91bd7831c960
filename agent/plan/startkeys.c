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
	if (!c->fleet.on)
		return;
	ret->fleet = "yes";
	ret->fleet_endpoints = c->fleet.endpoints;
	ret->fleet_prefix = c->fleet.prefix;
	ret->fleet_node = c->fleet.node;
	ret->fleet_ca_file = c->fleet.ca_file;
	ret->fleet_cert_file = c->fleet.cert_file;
	ret->fleet_key_file = c->fleet.key_file;
	ret->fleet_user = c->fleet.user;
	ret->fleet_password_file = c->fleet.password_file;
	ret->fleet_planner = c->fleet.plain ? "no" : "yes";
	snprintf(ret->fleet_lease_ttl, sizeof(ret->fleet_lease_ttl), "%llus",
		 (unsigned long long)(c->fleet.lease_ttl_us / 1000000));
	snprintf(ret->fleet_grace, sizeof(ret->fleet_grace), "%llus",
		 (unsigned long long)(c->fleet.grace_us / 1000000));
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

	memcpy(n.fleet_lease_ttl, k->fleet_lease_ttl, sizeof(n.fleet_lease_ttl));
	memcpy(n.fleet_grace, k->fleet_grace, sizeof(n.fleet_grace));
	if (dup_str(k->cgroup_root, &n.cgroup_root) < 0 || dup_str(k->io_device, &n.io_device) < 0 ||
	    dup_str(k->net_device, &n.net_device) < 0 || dup_str(k->state_dir, &n.state_dir) < 0 ||
	    dup_str(k->status_socket, &n.status_socket) < 0 ||
	    dup_str(k->status_group, &n.status_group) < 0 || dup_str(k->fleet, &n.fleet) < 0 ||
	    dup_str(k->fleet_endpoints, &n.fleet_endpoints) < 0 ||
	    dup_str(k->fleet_prefix, &n.fleet_prefix) < 0 ||
	    dup_str(k->fleet_node, &n.fleet_node) < 0 ||
	    dup_str(k->fleet_ca_file, &n.fleet_ca_file) < 0 ||
	    dup_str(k->fleet_cert_file, &n.fleet_cert_file) < 0 ||
	    dup_str(k->fleet_key_file, &n.fleet_key_file) < 0 ||
	    dup_str(k->fleet_user, &n.fleet_user) < 0 ||
	    dup_str(k->fleet_password_file, &n.fleet_password_file) < 0 ||
	    dup_str(k->fleet_planner, &n.fleet_planner) < 0) {
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
	free((char *)k->fleet);
	free((char *)k->fleet_endpoints);
	free((char *)k->fleet_prefix);
	free((char *)k->fleet_node);
	free((char *)k->fleet_ca_file);
	free((char *)k->fleet_cert_file);
	free((char *)k->fleet_key_file);
	free((char *)k->fleet_user);
	free((char *)k->fleet_password_file);
	free((char *)k->fleet_planner);
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
	if (!same(old->fleet, n->fleet)) {
		/* The section itself: its keys come and go with it. */
		CHANGE("[fleet]", old->fleet, n->fleet, true);
		return k;
	}
	if (!n->fleet)
		return k;
#define FLEET(name, field) \
	if (!same(old->field, n->field)) \
		CHANGE(name, old->field, n->field, true)
	FLEET("[fleet] endpoints", fleet_endpoints);
	FLEET("[fleet] prefix", fleet_prefix);
	FLEET("[fleet] node", fleet_node);
	if (strcmp(old->fleet_lease_ttl, n->fleet_lease_ttl) != 0)
		CHANGE("[fleet] lease-ttl", old->fleet_lease_ttl, n->fleet_lease_ttl, true);
	if (strcmp(old->fleet_grace, n->fleet_grace) != 0)
		CHANGE("[fleet] grace", old->fleet_grace, n->fleet_grace, true);
	FLEET("[fleet] ca-file", fleet_ca_file);
	FLEET("[fleet] cert-file", fleet_cert_file);
	FLEET("[fleet] key-file", fleet_key_file);
	FLEET("[fleet] user", fleet_user);
	FLEET("[fleet] password-file", fleet_password_file);
	FLEET("[fleet] planner", fleet_planner);
#undef FLEET
#undef CHANGE
	return k;
}

void drf_start_change_text(const struct drf_start_change *c, char *buf, size_t len)
{
	bool net = strcmp(c->key, "net-device") == 0;
	bool fleet = strcmp(c->key, "[fleet]") == 0;

	if (fleet)
		snprintf(buf, len, "%s", c->now ? "[fleet] added (this drfd would become a fleet node)"
					       : "[fleet] removed (this drfd would leave its fleet)");
	else if (net && !c->was)
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
