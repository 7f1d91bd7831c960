/* SPDX-License-Identifier: MIT */
/*
 * Facts about the host that drfd reads rather than is told: its CPUs, its
 * memory, a link's speed. An ops table, so that tests and the config's `auto`
 * capacities can be given any host.
 */
#ifndef DRF_HOST_H
#define DRF_HOST_H

#include <stddef.h>
#include <sys/types.h>

/* A local user, as the user database has it (getpwnam, getgrouplist). */
struct drf_host_user {
	uid_t uid;
	gid_t gid;
	gid_t *groups;   /* supplementary, its primary group among them as getgrouplist() says */
	size_t ngroups;
	char *home;      /* "" when it has none (or it is not a directory) */
};
void drf_host_user_clear(struct drf_host_user *u);

/* What `auto` capacities read from the host; injectable for tests. */
struct drf_host_ops {
	int (*online_cpus)(void *ctx, double *ret);
	int (*mem_total)(void *ctx, double *ret_bytes);
	int (*link_speed)(void *ctx, const char *dev, double *ret_bits);
	void *ctx;
	/*
	 * 1 if systemd is the init system (sd_booted()), 0 if not: `cgroup-root =
	 * auto` then puts the tenants in systemd slices. NULL: not systemd.
	 */
	int (*systemd)(void *ctx);
	/*
	 * The user called name: 0 and *ret (drf_host_user_clear()), -ENOENT if
	 * there is none, or another -errno. NULL: users cannot be looked up.
	 */
	int (*user)(void *ctx, const char *name, struct drf_host_user *ret);
	/* The group called name: 0 and *ret, -ENOENT if there is none, or -errno. NULL: not looked up. */
	int (*group)(void *ctx, const char *name, gid_t *ret);
	/*
	 * The memory protection the cgroup at path (an absolute directory) has
	 * set, memory.low's and memory.min's bytes ("max": UINT64_MAX): 0, or
	 * -ENOENT where it has no such files (the root cgroup), or -errno. NULL:
	 * not looked at.
	 */
	int (*cgroup_protection)(void *ctx, const char *path, unsigned long long *ret_low,
				 unsigned long long *ret_min);
};

/*
 * The running host: sysconf(), /proc/meminfo, ethtool on a socket for the link
 * speed, sd_booted() for systemd.
 */
extern const struct drf_host_ops drf_host_real;
/* The user database's answer (getpwnam_r, getgrouplist), as drf_host_real's user. */
int drf_host_cgroup_protection_real(void *ctx, const char *path, unsigned long long *ret_low,
				    unsigned long long *ret_min);
int drf_host_user_real(void *ctx, const char *name, struct drf_host_user *ret);
/* The group database's answer (getgrnam_r), as drf_host_real's group. */
int drf_host_group_real(void *ctx, const char *name, gid_t *ret);

#endif
