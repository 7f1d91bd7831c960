/* SPDX-License-Identifier: MIT */
/* The real tc ops (drf_tc_nl_ops): their context, a netlink route socket. */
#ifndef DRF_TC_NL_H
#define DRF_TC_NL_H

#include "tc.h"

struct nl_sock;

struct drf_tc_nl {
	struct nl_sock *sk;
};

/* Connects a NETLINK_ROUTE socket; 0 or -errno. */
int drf_tc_nl_open(struct drf_tc_nl *ret);
void drf_tc_nl_close(struct drf_tc_nl *t);

#endif
