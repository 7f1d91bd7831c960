// SPDX-License-Identifier: MIT
/* What shaping the network needs of the host (see netcheck.h). */
#include "netcheck.h"

#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "htb.h"
#include "netbpf.h"
#include "pins.h"

int drf_have_qdisc(const char *kind)
{
	char path[256], line[512], ko[64];
	struct utsname u;
	int found = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/sch_%s", kind);
	if (access(path, F_OK) == 0)
		return 1;
	if (uname(&u) < 0)
		return -errno;
	snprintf(ko, sizeof(ko), "/sch_%s.ko", kind);
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "/lib/modules/%s/%s", u.release,
			 k ? "modules.builtin" : "modules.dep");
		f = fopen(path, "re");
		if (!f)
			continue;
		if (found < 0)
			found = 0;
		while (fgets(line, sizeof(line), f))
			if (strstr(line, ko))
				found = 1;
		fclose(f);
		if (found == 1)
			return 1;
	}
	return found;
}

int drf_check_net(const struct drf_config *c, const struct drf_tc_ops *tc, void *tc_ctx,
		  char *err, size_t len)
{
	struct drf_tc_qdisc *q = NULL;
	struct drf_tc_link l;
	struct statfs sf;
	size_t nq = 0;
	int r;

	r = tc->link(tc_ctx, c->net_device, &l);
	if (r < 0) {
		snprintf(err, len, "net-device '%s': %s; set net-device to an interface of this "
				   "host (ip link shows them)",
			 c->net_device, r == -ENODEV ? "no such network interface" : strerror(-r));
		return r;
	}
	if (statfs(DRF_BPFFS, &sf) < 0 || sf.f_type != BPF_FS_MAGIC) {
		snprintf(err, len, "no bpf filesystem at %s, where drfd pins its network programs "
				   "so that they outlive its restarts: mount it (mount -t bpf bpf "
				   "%s; systemd does this at boot)", DRF_BPFFS, DRF_BPFFS);
		return -ENOENT;
	}
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_CGROUP_SKB, NULL) != 1) {
		snprintf(err, len, "this kernel cannot load cgroup_skb programs "
				   "(CONFIG_CGROUP_BPF and CONFIG_BPF_SYSCALL, and CAP_BPF with "
				   "CAP_NET_ADMIN, are needed), with which drfd classifies and "
				   "polices each tenant's traffic");
		return -EOPNOTSUPP;
	}
	/* The programs themselves: their helpers, maps and links need a 5.8 or newer kernel. */
	r = drf_netbpf_probe();
	if (r < 0) {
		snprintf(err, len, "this kernel refuses drfd's network programs (%s): they need "
			 "Linux 5.8 or newer with BTF, and CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON",
			 strerror(-r));
		return -EOPNOTSUPP;
	}
	if (c->capacity[DRF_RES_NET] > 0) {
		if (drf_have_qdisc("htb") == 0) {
			snprintf(err, len, "this kernel has no HTB qdisc (sch_htb, "
					   "CONFIG_NET_SCH_HTB), with which drfd shapes egress on "
					   "'%s'", c->net_device);
			return -EOPNOTSUPP;
		}
		r = tc->qdiscs(tc_ctx, l.ifindex, &q, &nq);
		if (r < 0) {
			snprintf(err, len, "cannot list the qdiscs of '%s': %s", c->net_device,
				 strerror(-r));
			return r;
		}
		for (size_t i = 0; i < nq; i++) {
			char h[16];

			if (q[i].parent != DRF_TC_ROOT || q[i].handle == 0 || c->net_replace_qdisc ||
			    (q[i].handle == DRF_TC_HANDLE(DRF_HTB_MAJOR, 0) &&
			     strcmp(q[i].kind, "htb") == 0))
				continue;
			snprintf(err, len, "'%s' has a root qdisc that drfd did not install (%s "
					   "%s): drfd does not replace it unless told to. Remove "
					   "it (tc qdisc del dev %s root), or set "
					   "net-replace-qdisc = yes in [agent]",
				 c->net_device, q[i].kind,
				 drf_tc_handle_str(q[i].handle, true, h, sizeof(h)), c->net_device);
			free(q);
			return -EEXIST;
		}
		free(q);
	}
	return 0;
}
