// SPDX-License-Identifier: MIT
/* The host's facts, read from the running system (see host.h). */
#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

static int real_online_cpus(void *ctx, double *ret)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	(void)ctx;
	if (n <= 0)
		return -errno ? -errno : -EINVAL;
	*ret = (double)n;
	return 0;
}

static int real_mem_total(void *ctx, double *ret)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	int r = -ENOENT;

	(void)ctx;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;

		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
			*ret = (double)kb * 1024;
			r = 0;
			break;
		}
	}
	fclose(f);
	return r;
}

static int real_link_speed(void *ctx, const char *dev, double *ret)
{
	struct ethtool_cmd ecmd = { .cmd = ETHTOOL_GSET };
	struct ifreq ifr = { 0 };
	uint32_t mbit;
	int fd, r = 0;

	(void)ctx;
	if (strlen(dev) >= sizeof(ifr.ifr_name))
		return -ENAMETOOLONG;
	/*
	 * Through ethtool on a socket, not /sys/class/net: that shows the
	 * devices of the network namespace sysfs was mounted in, not ours.
	 */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	ifr.ifr_data = (char *)&ecmd;
	if (ioctl(fd, SIOCETHTOOL, &ifr) < 0) {
		r = errno == EOPNOTSUPP ? -EINVAL : -errno;
	} else {
		mbit = ethtool_cmd_speed(&ecmd);
		/* SPEED_UNKNOWN (-1), e.g. link down; veth says 10000 */
		if (mbit == 0 || mbit == (uint32_t)SPEED_UNKNOWN)
			r = -EINVAL;
		else
			*ret = (double)mbit * 1e6;
	}
	close(fd);
	return r;
}

static int real_systemd(void *ctx)
{
	(void)ctx;
	return sd_booted() > 0;
}

void drf_host_user_clear(struct drf_host_user *u)
{
	if (!u)
		return;
	free(u->groups);
	free(u->home);
	memset(u, 0, sizeof(*u));
}

int drf_host_user_real(void *ctx, const char *name, struct drf_host_user *ret)
{
	struct drf_host_user u = { 0 };
	struct passwd pw, *res = NULL;
	struct stat st;
	long sz = sysconf(_SC_GETPW_R_SIZE_MAX);
	size_t len = sz > 0 ? (size_t)sz : 16384;
	char *buf = malloc(len);
	int n = 64, r;

	(void)ctx;
	if (!buf)
		return -ENOMEM;
	errno = 0;
	r = getpwnam_r(name, &pw, buf, len, &res);
	if (r != 0 || !res) {
		free(buf);
		return r == 0 || r == ENOENT || r == ESRCH ? -ENOENT : -r;
	}
	u.uid = pw.pw_uid;
	u.gid = pw.pw_gid;
	/* A home that is not a directory (nobody's /nonexistent) is none. */
	u.home = strdup(pw.pw_dir && stat(pw.pw_dir, &st) == 0 && S_ISDIR(st.st_mode) ? pw.pw_dir
										     : "");
	for (;;) {
		int want = n;

		free(u.groups);
		u.groups = calloc((size_t)n, sizeof(*u.groups));
		if (!u.groups || !u.home)
			break;
		if (getgrouplist(name, pw.pw_gid, u.groups, &want) >= 0) {
			u.ngroups = (size_t)want;
			free(buf);
			*ret = u;
			return 0;
		}
		/* Too small: want says how many it holds (at most NGROUPS_MAX in the kernel). */
		if (want <= n || want > 65536)
			break;
		n = want;
	}
	free(buf);
	drf_host_user_clear(&u);
	return -ENOMEM;
}

/* A memory protection file's value: bytes, "max" as ULLONG_MAX. */
static int protection_file(const char *dir, const char *file, unsigned long long *ret)
{
	char path[4096], buf[64], *end;
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (strncmp(buf, "max", 3) == 0) {
		*ret = ULLONG_MAX;
		return 0;
	}
	errno = 0;
	*ret = strtoull(buf, &end, 10);
	return errno || end == buf ? -EINVAL : 0;
}

int drf_host_cgroup_protection_real(void *ctx, const char *path, unsigned long long *ret_low,
				    unsigned long long *ret_min)
{
	int r;

	(void)ctx;
	r = protection_file(path, "memory.low", ret_low);
	return r < 0 ? r : protection_file(path, "memory.min", ret_min);
}

int drf_host_group_real(void *ctx, const char *name, gid_t *ret)
{
	struct group gr, *res = NULL;
	long sz = sysconf(_SC_GETGR_R_SIZE_MAX);
	size_t len = sz > 0 ? (size_t)sz : 16384;
	int r;

	(void)ctx;
	for (;;) {
		char *buf = malloc(len);

		if (!buf)
			return -ENOMEM;
		r = getgrnam_r(name, &gr, buf, len, &res);
		if (r == 0 && res)
			*ret = gr.gr_gid;
		free(buf);
		/* A group with many members outgrows the buffer. */
		if (r != ERANGE || len >= (1u << 24))
			break;
		len *= 2;
	}
	if (r == 0 && res)
		return 0;
	return r == 0 || r == ENOENT || r == ESRCH ? -ENOENT : -r;
}

const struct drf_host_ops drf_host_real = {
	.online_cpus = real_online_cpus,
	.mem_total = real_mem_total,
	.link_speed = real_link_speed,
	.ctx = NULL,
	.systemd = real_systemd,
	.user = drf_host_user_real,
	.group = drf_host_group_real,
	.cgroup_protection = drf_host_cgroup_protection_real,
};
