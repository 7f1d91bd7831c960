/* SPDX-License-Identifier: MIT */
/*
 * Facts about the host that drfd reads rather than is told: its CPUs, its
 * memory, a link's speed. An ops table, so that tests and the config's `auto`
 * capacities can be given any host.
 */
#ifndef DRF_HOST_H
#define DRF_HOST_H

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
};

/*
 * The running host: sysconf(), /proc/meminfo, ethtool on a socket for the link
 * speed, sd_booted() for systemd.
 */
extern const struct drf_host_ops drf_host_real;

#endif
