// SPDX-License-Identifier: MIT
/* A fake kernel for the tc ops: one device, its qdiscs and HTB classes (faketc.h). */
#include "faketc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define MAJ_ONLY(h) ((h) & 0xffff0000u)

void faketc_init(struct faketc *k, uint64_t speed)
{
	*k = (struct faketc){ .ifindex = FAKETC_IFINDEX, .mtu = FAKETC_MTU, .speed = speed,
			      .next_auto = 0x8001 };
	snprintf(k->ifname, sizeof(k->ifname), "%s", FAKETC_IFNAME);
	snprintf(k->default_kind, sizeof(k->default_kind), "noqueue");
	k->q[k->nq++] = (struct drf_tc_qdisc){ .handle = 0, .parent = DRF_TC_ROOT, .kind = "noqueue" };
}

static ssize_t find_class(const struct faketc *k, uint32_t classid)
{
	for (size_t i = 0; i < k->nc; i++)
		if (k->c[i].classid == classid)
			return (ssize_t)i;
	return -1;
}

static ssize_t find_root(const struct faketc *k)
{
	for (size_t i = 0; i < k->nq; i++)
		if (k->q[i].parent == DRF_TC_ROOT)
			return (ssize_t)i;
	return -1;
}

static ssize_t find_leaf(const struct faketc *k, uint32_t classid)
{
	for (size_t i = 0; i < k->nq; i++)
		if (k->q[i].parent == classid)
			return (ssize_t)i;
	return -1;
}

struct drf_tc_class *faketc_class(struct faketc *k, uint32_t classid)
{
	ssize_t i = find_class(k, classid);

	return i < 0 ? NULL : &k->c[i];
}

size_t faketc_nclasses(const struct faketc *k)
{
	return k->nc;
}

const struct drf_tc_qdisc *faketc_root(const struct faketc *k)
{
	ssize_t i = find_root(k);

	return i < 0 ? NULL : &k->q[i];
}

const struct drf_tc_qdisc *faketc_leaf(const struct faketc *k, uint32_t classid)
{
	ssize_t i = find_leaf(k, classid);

	return i < 0 ? NULL : &k->q[i];
}

size_t faketc_nqdiscs(const struct faketc *k)
{
	return k->nq;
}

int faketc_codel(const struct faketc *k, uint32_t classid, uint32_t *ret_target_us,
		 uint32_t *ret_interval_us)
{
	ssize_t i = find_leaf(k, classid);

	if (i < 0 || strcmp(k->q[i].kind, "fq_codel") != 0)
		return -ENOENT;
	*ret_target_us = k->target_us[i];
	*ret_interval_us = k->interval_us[i];
	return 0;
}

static void del_qdisc_at(struct faketc *k, size_t i)
{
	k->nq--;
	k->q[i] = k->q[k->nq];
	k->target_us[i] = k->target_us[k->nq];
	k->interval_us[i] = k->interval_us[k->nq];
}

static void del_class_at(struct faketc *k, size_t i)
{
	k->c[i] = k->c[--k->nc];
}

/* Everything on the device goes: qdiscs and classes. */
static void clear(struct faketc *k)
{
	k->nq = 0;
	k->nc = 0;
	k->htb_defcls = 0;
}

void faketc_set_root(struct faketc *k, uint32_t handle, const char *kind)
{
	clear(k);
	k->q[k->nq] = (struct drf_tc_qdisc){ .handle = handle, .parent = DRF_TC_ROOT };
	snprintf(k->q[k->nq].kind, sizeof(k->q[k->nq].kind), "%s", kind);
	k->nq++;
}

int faketc_set_leaf(struct faketc *k, uint32_t classid, const char *kind)
{
	ssize_t i = find_leaf(k, classid);

	if (find_class(k, classid) < 0)
		return -ENOENT;
	if (i < 0) {
		if (k->nq == FAKETC_MAX)
			return -ENOSPC;
		i = (ssize_t)k->nq++;
	}
	k->q[i] = (struct drf_tc_qdisc){ .handle = DRF_TC_HANDLE(k->next_auto++, 0), .parent = classid };
	snprintf(k->q[i].kind, sizeof(k->q[i].kind), "%s", kind);
	k->target_us[i] = k->interval_us[i] = 0;
	return 0;
}

int faketc_count(struct faketc *k, uint32_t classid, uint64_t bytes, uint64_t packets)
{
	struct drf_tc_class *c = faketc_class(k, classid);

	if (!c)
		return -ENOENT;
	c->bytes += bytes;
	c->packets += packets;
	return 0;
}

/*
 * libnl sends a burst as the time it lasts at the rate, in the kernel's
 * ticks: rtnl_tc_calc_txtime() (microseconds, truncated to an integer) and
 * nl_us2ticks() (15.625 ticks of 64 ns per microsecond, truncated); it reads
 * it back with nl_ticks2us() and rtnl_tc_calc_bufsize(), truncating again.
 */
/* v truncated to a u32, saturating as the kernel's 32-bit fields do. */
static uint32_t u32_of(double v)
{
	return v >= 4294967295.0 ? UINT32_MAX : v <= 0 ? 0 : (uint32_t)v;
}

uint32_t faketc_burst_readback(uint32_t bytes, uint64_t rate)
{
	const double ticks_per_us = 1000.0 / 64;
	uint32_t us, ticks;

	if (!rate)
		return bytes;
	us = u32_of((double)bytes / (double)rate * 1e6);
	ticks = u32_of((double)us * ticks_per_us);
	us = u32_of((double)ticks / ticks_per_us);
	return u32_of((double)us * (double)rate / 1e6);
}

static bool ours(const struct faketc *k, int ifindex)
{
	return ifindex == k->ifindex;
}

static int fake_link(void *ctx, const char *ifname, struct drf_tc_link *ret)
{
	struct faketc *k = ctx;

	k->calls.link++;
	if (strcmp(ifname, k->ifname) != 0)
		return -ENODEV;
	*ret = (struct drf_tc_link){ .ifindex = k->ifindex, .mtu = k->mtu, .speed = k->speed,
				     .related = { k->ifindex }, .n_related = 1 };
	return 0;
}

static int fake_qdiscs(void *ctx, int ifindex, struct drf_tc_qdisc **ret, size_t *ret_n)
{
	struct faketc *k = ctx;
	struct drf_tc_qdisc *v;

	k->calls.qdiscs++;
	if (!ours(k, ifindex))
		return -ENODEV;
	v = malloc((k->nq + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, k->q, k->nq * sizeof(*v));
	for (size_t i = 0; i < k->nq; i++) {
		v[i].target_us = k->target_us[i];
		v[i].interval_us = k->interval_us[i];
	}
	*ret = v;
	*ret_n = k->nq;
	return 0;
}

static int fake_add_htb(void *ctx, int ifindex, uint32_t handle, uint32_t defcls, bool replace)
{
	struct faketc *k = ctx;
	ssize_t r;

	k->calls.add_htb++;
	if (!ours(k, ifindex))
		return -ENODEV;
	if (!handle || DRF_TC_MIN(handle) || handle == DRF_TC_ROOT)
		return -EINVAL;
	r = find_root(k);
	if (r >= 0 && k->q[r].handle == handle && strcmp(k->q[r].kind, "htb") == 0) {
		/* The same qdisc: NLM_F_EXCL refuses, NLM_F_REPLACE changes it in place. */
		if (!replace)
			return -EEXIST;
		k->htb_defcls = defcls;
		return 0;
	}
	/* The kernel's default root qdisc (handle 0:) is ignored; any other needs replace. */
	if (r >= 0 && k->q[r].handle != 0 && !replace)
		return -EEXIST;
	for (size_t i = 0; i < k->nq; i++)
		if (k->q[i].handle == handle)
			return -EEXIST; /* a leaf qdisc has that handle */
	clear(k);
	k->q[k->nq++] = (struct drf_tc_qdisc){ .handle = handle, .parent = DRF_TC_ROOT, .kind = "htb" };
	k->htb_defcls = defcls;
	return 0;
}

/* The htb qdisc classes of major maj belong to; NULL if there is none. */
static const struct drf_tc_qdisc *htb_of(const struct faketc *k, uint32_t maj)
{
	for (size_t i = 0; i < k->nq; i++)
		if (k->q[i].handle == DRF_TC_HANDLE(maj, 0) && strcmp(k->q[i].kind, "htb") == 0)
			return &k->q[i];
	return NULL;
}

static bool has_children(const struct faketc *k, uint32_t classid)
{
	for (size_t i = 0; i < k->nc; i++)
		if (k->c[i].parent == classid)
			return true;
	return false;
}

/*
 * fq_codel_change() keeps a time as (us * NSEC_PER_USEC) >> CODEL_SHIFT (10),
 * and fq_codel_dump() reports it back as codel_time_to_us(): what it reads.
 */
static uint32_t kernel_codel_us(uint32_t us)
{
	uint64_t t = (uint64_t)us * 1000 >> 10;

	return (uint32_t)((t << 10) / 1000);
}

static int fake_add_leaf(void *ctx, int ifindex, uint32_t parent, uint32_t target_us,
			 uint32_t interval_us)
{
	struct faketc *k = ctx;
	ssize_t q;

	k->calls.add_leaf++;
	if (!ours(k, ifindex))
		return -ENODEV;
	/* No such kind: the kernel's module request fails, and so does the add. */
	if (k->no_fq_codel)
		return -ENOENT;
	if (!htb_of(k, DRF_TC_MAJ(parent)) || find_class(k, parent) < 0)
		return -ENOENT;
	if (has_children(k, parent))
		return -EINVAL; /* htb_graft: an inner class has no qdisc */
	if (!target_us || !interval_us)
		return -EINVAL;
	target_us = kernel_codel_us(target_us);
	interval_us = kernel_codel_us(interval_us);
	q = find_leaf(k, parent);
	if (q >= 0 && strcmp(k->q[q].kind, "fq_codel") == 0) {
		/* NLM_F_REPLACE, the same kind: changed in place. */
		k->target_us[q] = target_us;
		k->interval_us[q] = interval_us;
		return 0;
	}
	if (q < 0) {
		if (k->nq == FAKETC_MAX)
			return -ENOSPC;
		q = (ssize_t)k->nq++;
	}
	/* Created, or grafted in place of a leaf of another kind. */
	k->q[q] = (struct drf_tc_qdisc){ .handle = DRF_TC_HANDLE(k->next_auto++, 0), .parent = parent,
					 .kind = "fq_codel" };
	k->target_us[q] = target_us;
	k->interval_us[q] = interval_us;
	return 0;
}

static int fake_del_qdisc(void *ctx, int ifindex, uint32_t parent, uint32_t handle)
{
	struct faketc *k = ctx;
	ssize_t i;

	k->calls.del_qdisc++;
	if (!ours(k, ifindex))
		return -ENODEV;
	if (parent == DRF_TC_ROOT) {
		i = find_root(k);
		if (i < 0 || k->q[i].handle == 0)
			return -ENOENT; /* the default root qdisc cannot be deleted */
		if (handle && k->q[i].handle != handle)
			return -EINVAL;
		/* With its classes and leaves; the default root qdisc comes back. */
		clear(k);
		k->q[k->nq] = (struct drf_tc_qdisc){ .handle = 0, .parent = DRF_TC_ROOT };
		snprintf(k->q[k->nq].kind, sizeof(k->q[k->nq].kind), "%s", k->default_kind);
		k->nq++;
		return 0;
	}
	i = find_leaf(k, parent);
	if (i < 0)
		return -ENOENT;
	if (handle && k->q[i].handle != handle)
		return -EINVAL;
	del_qdisc_at(k, (size_t)i);
	return 0;
}

static int fake_classes(void *ctx, int ifindex, uint32_t qdisc, struct drf_tc_class **ret,
			size_t *ret_n)
{
	struct faketc *k = ctx;
	struct drf_tc_class *v;
	size_t n = 0;

	k->calls.classes++;
	if (!ours(k, ifindex))
		return -ENODEV;
	v = malloc((k->nc + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < k->nc; i++) {
		const struct drf_tc_class *c = &k->c[i];

		if (DRF_TC_MAJ(c->classid) != DRF_TC_MAJ(qdisc))
			continue;
		v[n] = *c;
		v[n].burst = faketc_burst_readback(c->burst, c->rate);
		v[n].cburst = faketc_burst_readback(c->cburst, c->ceil);
		if (DRF_TC_MIN(c->classid) == 1 || DRF_TC_MIN(c->classid) == 2)
			v[n].quantum = FAKETC_INNER_QUANTUM;
		n++;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static int fake_set_class(void *ctx, int ifindex, const struct drf_tc_class *c)
{
	struct faketc *k = ctx;
	struct drf_tc_class *have;
	uint32_t parent;
	ssize_t i;

	k->calls.set_class++;
	if (!ours(k, ifindex))
		return -ENODEV;
	if (!DRF_TC_MIN(c->classid))
		return -EINVAL;
	if (c->parent != DRF_TC_ROOT && MAJ_ONLY(c->parent) != MAJ_ONLY(c->classid))
		return -EINVAL;
	if (!htb_of(k, DRF_TC_MAJ(c->classid)))
		return -ENOENT;
	if (!c->rate || !c->ceil)
		return -EINVAL;
	have = faketc_class(k, c->classid);
	if (have) {
		/* A change: the parent stays, the counters too. */
		have->rate = c->rate;
		have->ceil = c->ceil;
		have->burst = c->burst;
		have->cburst = c->cburst;
		have->quantum = c->quantum;
		return 0;
	}
	if (c->parent == DRF_TC_ROOT || DRF_TC_MIN(c->parent) == 0) {
		parent = DRF_TC_ROOT; /* a root class of the qdisc */
	} else {
		if (find_class(k, c->parent) < 0)
			return -ENOENT;
		parent = c->parent;
		/* A leaf becoming an inner class loses its qdisc. */
		i = find_leaf(k, parent);
		if (i >= 0)
			del_qdisc_at(k, (size_t)i);
	}
	if (k->nc == FAKETC_MAX)
		return -ENOSPC;
	k->c[k->nc] = (struct drf_tc_class){ .classid = c->classid, .parent = parent, .rate = c->rate,
					     .ceil = c->ceil, .burst = c->burst, .cburst = c->cburst,
					     .quantum = c->quantum };
	k->nc++;
	return 0;
}

static int fake_del_class(void *ctx, int ifindex, uint32_t classid)
{
	struct faketc *k = ctx;
	ssize_t i, q;

	k->calls.del_class++;
	if (!ours(k, ifindex))
		return -ENODEV;
	i = find_class(k, classid);
	if (i < 0)
		return -ENOENT;
	if (has_children(k, classid))
		return -EBUSY;
	q = find_leaf(k, classid);
	if (q >= 0)
		del_qdisc_at(k, (size_t)q);
	del_class_at(k, (size_t)i);
	return 0;
}

const struct drf_tc_ops faketc_ops = {
	.name = "fake",
	.link = fake_link,
	.qdiscs = fake_qdiscs,
	.add_htb = fake_add_htb,
	.add_leaf = fake_add_leaf,
	.del_qdisc = fake_del_qdisc,
	.classes = fake_classes,
	.set_class = fake_set_class,
	.del_class = fake_del_class,
};
