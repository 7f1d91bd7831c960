// SPDX-License-Identifier: MIT
/* The recording tc ops: the dry run's and the tests' view of what drfd changes. */
#include "tc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "record.h"

char *drf_tc_handle_str(uint32_t h, bool qdisc, char *buf, size_t len)
{
	if (h == DRF_TC_ROOT)
		snprintf(buf, len, "root");
	else if (qdisc || DRF_TC_MIN(h) == 0)
		snprintf(buf, len, "%x:", DRF_TC_MAJ(h));
	else
		snprintf(buf, len, "%x:%x", DRF_TC_MAJ(h), DRF_TC_MIN(h));
	return buf;
}

static int rec_link(void *ctx, const char *ifname, struct drf_tc_link *ret)
{
	struct drf_tc_recorder *r = ctx;

	if (drf_fault_inject(&r->fault, DRF_TC_OP_LINK, 0, NULL))
		return -r->fault.err;
	if (!r->inner)
		return -ENODEV;
	return r->inner->link(r->inner_ctx, ifname, ret);
}

static int rec_qdiscs(void *ctx, int ifindex, struct drf_tc_qdisc **ret, size_t *ret_n)
{
	struct drf_tc_recorder *r = ctx;

	if (drf_fault_inject(&r->fault, DRF_TC_OP_QDISCS, 0, NULL))
		return -r->fault.err;
	if (!r->inner) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	return r->inner->qdiscs(r->inner_ctx, ifindex, ret, ret_n);
}

static int rec_add_htb(void *ctx, int ifindex, uint32_t handle, uint32_t defcls, bool replace)
{
	struct drf_tc_recorder *r = ctx;
	char h[16];

	if (drf_fault_inject(&r->fault, DRF_TC_OP_ADD_HTB, handle, NULL))
		return -r->fault.err;
	drf_record(r->out, &r->changes, "tc qdisc %s dev %s root handle %s htb default %x",
		   replace ? "replace" : "add", r->ifname,
		   drf_tc_handle_str(handle, true, h, sizeof(h)), defcls);
	if (r->inner && r->pass_changes)
		return r->inner->add_htb(r->inner_ctx, ifindex, handle, defcls, replace);
	return 0;
}

static int rec_add_leaf(void *ctx, int ifindex, uint32_t parent, uint32_t target_us,
			uint32_t interval_us)
{
	struct drf_tc_recorder *r = ctx;
	char p[16];

	if (drf_fault_inject(&r->fault, DRF_TC_OP_ADD_LEAF, parent, NULL))
		return -r->fault.err;
	drf_record(r->out, &r->changes,
		   "tc qdisc add dev %s parent %s fq_codel target %" PRIu32 "us interval %" PRIu32
		   "us", r->ifname, drf_tc_handle_str(parent, false, p, sizeof(p)), target_us,
		   interval_us);
	if (r->inner && r->pass_changes)
		return r->inner->add_leaf(r->inner_ctx, ifindex, parent, target_us, interval_us);
	return 0;
}

static int rec_del_qdisc(void *ctx, int ifindex, uint32_t parent, uint32_t handle)
{
	struct drf_tc_recorder *r = ctx;
	char p[16], h[16];

	if (drf_fault_inject(&r->fault, DRF_TC_OP_DEL_QDISC, handle, NULL))
		return -r->fault.err;
	drf_record(r->out, &r->changes, "tc qdisc del dev %s %s%s handle %s", r->ifname,
		   parent == DRF_TC_ROOT ? "" : "parent ",
		   drf_tc_handle_str(parent, false, p, sizeof(p)),
		   drf_tc_handle_str(handle, true, h, sizeof(h)));
	if (r->inner && r->pass_changes)
		return r->inner->del_qdisc(r->inner_ctx, ifindex, parent, handle);
	return 0;
}

static int rec_classes(void *ctx, int ifindex, uint32_t qdisc, struct drf_tc_class **ret,
		       size_t *ret_n)
{
	struct drf_tc_recorder *r = ctx;

	if (drf_fault_inject(&r->fault, DRF_TC_OP_CLASSES, 0, NULL))
		return -r->fault.err;
	if (!r->inner) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	return r->inner->classes(r->inner_ctx, ifindex, qdisc, ret, ret_n);
}

static int rec_set_class(void *ctx, int ifindex, const struct drf_tc_class *c)
{
	struct drf_tc_recorder *r = ctx;
	char id[16], p[16];

	if (drf_fault_inject(&r->fault, DRF_TC_OP_SET_CLASS, c->classid, NULL))
		return -r->fault.err;
	drf_record(r->out, &r->changes,
		   "tc class set dev %s classid %s parent %s rate %" PRIu64 " ceil %" PRIu64
		   " burst %" PRIu32 " cburst %" PRIu32 " quantum %" PRIu32, r->ifname,
		   drf_tc_handle_str(c->classid, false, id, sizeof(id)),
		   drf_tc_handle_str(c->parent, false, p, sizeof(p)), c->rate, c->ceil, c->burst,
		   c->cburst, c->quantum);
	if (r->inner && r->pass_changes)
		return r->inner->set_class(r->inner_ctx, ifindex, c);
	return 0;
}

static int rec_del_class(void *ctx, int ifindex, uint32_t classid)
{
	struct drf_tc_recorder *r = ctx;
	char id[16];

	if (drf_fault_inject(&r->fault, DRF_TC_OP_DEL_CLASS, classid, NULL))
		return -r->fault.err;
	drf_record(r->out, &r->changes, "tc class del dev %s classid %s", r->ifname,
		   drf_tc_handle_str(classid, false, id, sizeof(id)));
	if (r->inner && r->pass_changes)
		return r->inner->del_class(r->inner_ctx, ifindex, classid);
	return 0;
}

const struct drf_tc_ops drf_tc_recording_ops = {
	.name = "recording",
	.link = rec_link,
	.qdiscs = rec_qdiscs,
	.add_htb = rec_add_htb,
	.add_leaf = rec_add_leaf,
	.del_qdisc = rec_del_qdisc,
	.classes = rec_classes,
	.set_class = rec_set_class,
	.del_class = rec_del_class,
};
