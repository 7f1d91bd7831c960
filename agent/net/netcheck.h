/* SPDX-License-Identifier: MIT */
/* What drfd checks of the host before it shapes the network. */
#ifndef DRF_NETCHECK_H
#define DRF_NETCHECK_H

#include <stddef.h>

#include "config.h"
#include "tc.h"

/*
 * Whether the kernel has the qdisc sch_KIND (built in, loaded, or a module it
 * can load): 1, 0, or a negative errno where it cannot tell (no module list).
 */
int drf_have_qdisc(const char *kind);

/*
 * What shaping c's network needs of the host, checked through tc before
 * anything is installed: net-device exists, bpffs is mounted, the kernel loads
 * cgroup_skb programs and (for net-rate) has HTB, and no foreign root qdisc is
 * in the way (unless net-replace-qdisc). 0, or -errno with what to do in err.
 */
int drf_check_net(const struct drf_config *c, const struct drf_tc_ops *tc, void *tc_ctx,
		  char *err, size_t len);

#endif
