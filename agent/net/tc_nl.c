// SPDX-License-Identifier: MIT
/*
 * The real tc ops: libnl-route-3 over a netlink socket of its own. libnl
 * returns its own error codes (-NLE_*); they are turned back into errno
 * values here, at the boundary.
 */
#include "tc_nl.h"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/pkt_sched.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/class.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/fq_codel.h>
#include <netlink/route/qdisc/htb.h>
#include <netlink/route/tc.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vec.h"

static int to_errno(int nle)
{
	switch (nle < 0 ? -nle : nle) {
	case NLE_SUCCESS:
		return 0;
	case NLE_INTR:
		return -EINTR;
	case NLE_AGAIN:
		return -EAGAIN;
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_EXIST:
		return -EEXIST;
	case NLE_INVAL:
	case NLE_MISSING_ATTR:
		return -EINVAL;
	case NLE_RANGE:
		return -ERANGE;
	case NLE_MSGSIZE:
		return -EMSGSIZE;
	case NLE_OPNOTSUPP:
	case NLE_AF_NOSUPPORT:
	case NLE_MSGTYPE_NOSUPPORT:
		return -EOPNOTSUPP;
	case NLE_OBJ_NOTFOUND:
		return -ENOENT;
	case NLE_BUSY:
		return -EBUSY;
	case NLE_NOACCESS:
		return -EACCES;
	case NLE_PERM:
		return -EPERM;
	case NLE_NODEV:
		return -ENODEV;
	default:
		return -EIO;
	}
}

int drf_tc_nl_open(struct drf_tc_nl *ret)
{
	struct nl_sock *sk = nl_socket_alloc();
	int r;

	if (!sk)
		return -ENOMEM;
	r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0) {
		nl_socket_free(sk);
		return to_errno(r);
	}
	/* The loop must not block on netlink: the kernel answers at once anyway. */
	ret->sk = sk;
	return 0;
}

void drf_tc_nl_close(struct drf_tc_nl *t)
{
	if (t->sk)
		nl_socket_free(t->sk);
	t->sk = NULL;
}

static bool has(const struct drf_tc_link *l, int ifindex)
{
	for (size_t i = 0; i < l->n_related; i++)
		if (l->related[i] == ifindex)
			return true;
	return false;
}

static void add(struct drf_tc_link *l, int ifindex)
{
	if (ifindex > 0 && !has(l, ifindex) && l->n_related < DRF_TC_MAX_RELATED)
		l->related[l->n_related++] = ifindex;
}

/*
 * The device, the masters above it (a bridge, a bond: up to four levels), and
 * every device whose lower device is one of those (VLANs, macvlans).
 */
static int related(struct nl_sock *sk, struct rtnl_link *dev, struct drf_tc_link *ret)
{
	struct nl_cache *cache = NULL;
	struct rtnl_link *l = dev;
	int r = rtnl_link_alloc_cache(sk, AF_UNSPEC, &cache);

	if (r < 0)
		return to_errno(r);
	ret->n_related = 0;
	add(ret, rtnl_link_get_ifindex(dev));
	for (int depth = 0; depth < 4 && l && rtnl_link_get_master(l) > 0; depth++) {
		add(ret, rtnl_link_get_master(l));
		l = rtnl_link_get(cache, rtnl_link_get_master(l));
		if (l)
			rtnl_link_put(l); /* the cache keeps it */
	}
	for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		struct rtnl_link *x = (struct rtnl_link *)o;

		if (rtnl_link_get_link(x) > 0 && rtnl_link_get_link(x) != rtnl_link_get_ifindex(x) &&
		    has(ret, rtnl_link_get_link(x)))
			add(ret, rtnl_link_get_ifindex(x));
	}
	nl_cache_free(cache);
	return 0;
}

static int nl_link(void *ctx, const char *ifname, struct drf_tc_link *ret)
{
	struct drf_tc_nl *t = ctx;
	struct rtnl_link *l = NULL;
	double speed = 0;
	int r = rtnl_link_get_kernel(t->sk, 0, ifname, &l);

	if (r < 0)
		return r == -NLE_OBJ_NOTFOUND || r == -NLE_NODEV ? -ENODEV : to_errno(r);
	ret->ifindex = rtnl_link_get_ifindex(l);
	ret->mtu = rtnl_link_get_mtu(l);
	/* bits/s; 0 where the device reports none */
	ret->speed = drf_host_real.link_speed(drf_host_real.ctx, ifname, &speed) == 0 ? (uint64_t)speed
										   : 0;
	r = related(t->sk, l, ret);
	rtnl_link_put(l);
	return r;
}

static int nl_qdiscs(void *ctx, int ifindex, struct drf_tc_qdisc **ret, size_t *ret_n)
{
	struct drf_tc_nl *t = ctx;
	struct nl_cache *cache = NULL;
	struct drf_tc_qdisc *v = NULL;
	size_t n = 0, cap = 0;
	int r = rtnl_qdisc_alloc_cache(t->sk, &cache);

	if (r < 0)
		return to_errno(r);
	for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		struct rtnl_tc *tc = (struct rtnl_tc *)o;
		const char *kind = rtnl_tc_get_kind(tc);

		if (rtnl_tc_get_ifindex(tc) != ifindex)
			continue;
		if (DRF_VEC_GROW(v, &cap, n + 1) < 0) {
			free(v);
			nl_cache_free(cache);
			return -ENOMEM;
		}
		v[n] = (struct drf_tc_qdisc){ .handle = rtnl_tc_get_handle(tc),
					      .parent = rtnl_tc_get_parent(tc) };
		snprintf(v[n].kind, sizeof(v[n].kind), "%s", kind ? kind : "");
		if (kind && strcmp(kind, "fq_codel") == 0) {
			v[n].target_us = rtnl_qdisc_fq_codel_get_target((struct rtnl_qdisc *)o);
			v[n].interval_us = rtnl_qdisc_fq_codel_get_interval((struct rtnl_qdisc *)o);
		}
		n++;
	}
	nl_cache_free(cache);
	*ret = v;
	*ret_n = n;
	return 0;
}

static int nl_add_htb(void *ctx, int ifindex, uint32_t handle, uint32_t defcls, bool replace)
{
	struct drf_tc_nl *t = ctx;
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	int r;

	if (!q)
		return -ENOMEM;
	rtnl_tc_set_ifindex(TC_CAST(q), ifindex);
	rtnl_tc_set_parent(TC_CAST(q), TC_H_ROOT);
	rtnl_tc_set_handle(TC_CAST(q), handle);
	r = rtnl_tc_set_kind(TC_CAST(q), "htb");
	if (r == 0)
		r = rtnl_htb_set_defcls(q, defcls);
	if (r == 0)
		r = rtnl_qdisc_add(t->sk, q, NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL));
	rtnl_qdisc_put(q);
	return to_errno(r);
}

static int nl_add_leaf(void *ctx, int ifindex, uint32_t parent, uint32_t target_us,
		       uint32_t interval_us)
{
	struct drf_tc_nl *t = ctx;
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	int r;

	if (!q)
		return -ENOMEM;
	rtnl_tc_set_ifindex(TC_CAST(q), ifindex);
	rtnl_tc_set_parent(TC_CAST(q), parent);
	rtnl_tc_set_handle(TC_CAST(q), 0); /* the kernel picks one */
	r = rtnl_tc_set_kind(TC_CAST(q), "fq_codel");
	if (r == 0)
		r = rtnl_qdisc_fq_codel_set_target(q, target_us);
	if (r == 0)
		r = rtnl_qdisc_fq_codel_set_interval(q, interval_us);
	/* In place of whatever leaf the class has: HTB's default, or another. */
	if (r == 0)
		r = rtnl_qdisc_add(t->sk, q, NLM_F_CREATE | NLM_F_REPLACE);
	rtnl_qdisc_put(q);
	return to_errno(r);
}

static int nl_del_qdisc(void *ctx, int ifindex, uint32_t parent, uint32_t handle)
{
	struct drf_tc_nl *t = ctx;
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	int r;

	if (!q)
		return -ENOMEM;
	rtnl_tc_set_ifindex(TC_CAST(q), ifindex);
	rtnl_tc_set_parent(TC_CAST(q), parent);
	rtnl_tc_set_handle(TC_CAST(q), handle);
	r = rtnl_qdisc_delete(t->sk, q);
	rtnl_qdisc_put(q);
	return to_errno(r);
}

static int nl_classes(void *ctx, int ifindex, uint32_t qdisc, struct drf_tc_class **ret,
		      size_t *ret_n)
{
	struct drf_tc_nl *t = ctx;
	struct nl_cache *cache = NULL;
	struct drf_tc_class *v = NULL;
	size_t n = 0, cap = 0;
	int r = rtnl_class_alloc_cache(t->sk, ifindex, &cache);

	if (r < 0)
		return to_errno(r);
	for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		struct rtnl_class *c = (struct rtnl_class *)o;
		struct rtnl_tc *tc = TC_CAST(c);
		const char *kind = rtnl_tc_get_kind(tc);
		uint64_t rate = 0, ceil = 0;

		if (DRF_TC_MAJ(rtnl_tc_get_handle(tc)) != DRF_TC_MAJ(qdisc) || !kind ||
		    strcmp(kind, "htb") != 0)
			continue;
		if (DRF_VEC_GROW(v, &cap, n + 1) < 0) {
			free(v);
			nl_cache_free(cache);
			return -ENOMEM;
		}
		rtnl_htb_get_rate64(c, &rate);
		rtnl_htb_get_ceil64(c, &ceil);
		v[n] = (struct drf_tc_class){
			.classid = rtnl_tc_get_handle(tc),
			.parent = rtnl_tc_get_parent(tc),
			.rate = rate,
			.ceil = ceil,
			.burst = rtnl_htb_get_rbuffer(c),
			.cburst = rtnl_htb_get_cbuffer(c),
			.quantum = rtnl_htb_get_quantum(c),
			.bytes = rtnl_tc_get_stat(tc, RTNL_TC_BYTES),
			.packets = rtnl_tc_get_stat(tc, RTNL_TC_PACKETS),
			.drops = rtnl_tc_get_stat(tc, RTNL_TC_DROPS),
			.overlimits = rtnl_tc_get_stat(tc, RTNL_TC_OVERLIMITS),
		};
		n++;
	}
	nl_cache_free(cache);
	*ret = v;
	*ret_n = n;
	return 0;
}

static int nl_set_class(void *ctx, int ifindex, const struct drf_tc_class *c)
{
	struct drf_tc_nl *t = ctx;
	struct rtnl_class *cl = rtnl_class_alloc();
	int r;

	if (!cl)
		return -ENOMEM;
	rtnl_tc_set_ifindex(TC_CAST(cl), ifindex);
	rtnl_tc_set_parent(TC_CAST(cl), c->parent);
	rtnl_tc_set_handle(TC_CAST(cl), c->classid);
	r = rtnl_tc_set_kind(TC_CAST(cl), "htb");
	/* The 64-bit setters: rates past 4 GB/s go as TCA_HTB_RATE64/CEIL64. */
	if (r == 0)
		r = rtnl_htb_set_rate64(cl, c->rate);
	if (r == 0)
		r = rtnl_htb_set_ceil64(cl, c->ceil);
	if (r == 0)
		r = rtnl_htb_set_rbuffer(cl, c->burst);
	if (r == 0)
		r = rtnl_htb_set_cbuffer(cl, c->cburst);
	if (r == 0)
		r = rtnl_htb_set_quantum(cl, c->quantum);
	if (r == 0)
		r = rtnl_class_add(t->sk, cl, NLM_F_CREATE);
	rtnl_class_put(cl);
	return to_errno(r);
}

static int nl_del_class(void *ctx, int ifindex, uint32_t classid)
{
	struct drf_tc_nl *t = ctx;
	struct rtnl_class *cl = rtnl_class_alloc();
	int r;

	if (!cl)
		return -ENOMEM;
	rtnl_tc_set_ifindex(TC_CAST(cl), ifindex);
	rtnl_tc_set_handle(TC_CAST(cl), classid);
	r = rtnl_class_delete(t->sk, cl);
	rtnl_class_put(cl);
	return to_errno(r);
}

const struct drf_tc_ops drf_tc_nl_ops = {
	.name = "libnl",
	.link = nl_link,
	.qdiscs = nl_qdiscs,
	.add_htb = nl_add_htb,
	.add_leaf = nl_add_leaf,
	.del_qdisc = nl_del_qdisc,
	.classes = nl_classes,
	.set_class = nl_set_class,
	.del_class = nl_del_class,
};
