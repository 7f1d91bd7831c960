// SPDX-License-Identifier: MIT
#include "hostcheck.h"

#include <errno.h>
#include <limits.h>
#include <libcgroup.h>
#include <linux/magic.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "knobs.h"
#include "unitname.h"

int drf_cgroup2_mount_of(const char *path, char *ret, size_t len)
{
	FILE *f = setmntent("/proc/self/mounts", "re");
	struct mntent *m;
	size_t best = 0;
	int r = -ENOENT;

	if (!f)
		return -errno;
	while ((m = getmntent(f))) {
		size_t n = strlen(m->mnt_dir);

		if (strcmp(m->mnt_type, "cgroup2") != 0)
			continue;
		if (strncmp(path, m->mnt_dir, n) != 0 || (path[n] != '/' && path[n] != '\0' && n > 1))
			continue;
		if (n >= best) {
			best = n;
			snprintf(ret, len, "%s", m->mnt_dir);
			r = 0;
		}
	}
	endmntent(f);
	return r;
}

/* The first cgroup2 mount of any path, for messages. */
static int any_cgroup2_mount(char *ret, size_t len)
{
	FILE *f = setmntent("/proc/self/mounts", "re");
	struct mntent *m;
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (r < 0 && (m = getmntent(f)))
		if (strcmp(m->mnt_type, "cgroup2") == 0) {
			snprintf(ret, len, "%s", m->mnt_dir);
			r = 0;
		}
	endmntent(f);
	return r;
}

/* Names of the controllers in bits, "cpu, memory". */
static void ctrl_list(unsigned bits, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < CGFS_NCTRL; i++)
		if (bits & (1u << i))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "",
				 cgfs_ctrl_name(1u << i));
}

/*
 * Where libcgroup finds each of the controllers bound to a cgroup v1 hierarchy:
 * on a hybrid host that is why cgroup2 cannot offer them.
 */
static void v1_bindings(unsigned bits, char *buf, size_t len)
{
	static const char *const v1name[CGFS_NCTRL] = { "cpu", "memory", "blkio", "pids" };

	buf[0] = '\0';
	if (cgroup_init() != 0)
		return;
	for (int i = 0; i < CGFS_NCTRL; i++) {
		struct statfs sf;
		char *mp = NULL;

		if (!(bits & (1u << i)))
			continue;
		if (cgroup_get_subsys_mount_point(v1name[i], &mp) != 0 || !mp)
			continue;
		if (statfs(mp, &sf) == 0 && sf.f_type == CGROUP_SUPER_MAGIC)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s at %s",
				 buf[0] ? ", " : "", v1name[i], mp);
		free(mp);
	}
}

static void parent_dir(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash || slash == path)
		snprintf(buf, len, "/");
	else
		snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

static unsigned read_ctrl_file(const char *dir, const char *file, int *ret_err)
{
	char path[4096], buf[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "re");
	if (!f) {
		*ret_err = -errno;
		return 0;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	*ret_err = 0;
	return cgfs_parse_ctrls(buf);
}

int drf_check_cgroup(const struct drf_config *c, const char *root, char *err, size_t len)
{
	unsigned need = drf_knobs_controllers(c), have, offered;
	char parent[4096], mount[4096], names[128], v1[512];
	struct statfs sf;
	struct stat st;
	int e;

	/* Slices: systemd passes down what its units' properties need, if the kernel offers it. */
	if (c->slices) {
		if (any_cgroup2_mount(mount, sizeof(mount)) < 0) {
			snprintf(err, len, "systemd is the init system, but cgroup2 is not mounted; "
				 "drfd needs cgroup v2: boot with systemd.unified_cgroup_hierarchy=1");
			return -EMEDIUMTYPE;
		}
		offered = read_ctrl_file(mount, "cgroup.controllers", &e);
		if (e < 0) {
			snprintf(err, len, "cannot read '%s/cgroup.controllers': %s", mount,
				 strerror(-e));
			return e;
		}
		if ((offered & need) == need)
			return 0;
		ctrl_list(need & ~offered, names, sizeof(names));
		v1_bindings(need & ~offered, v1, sizeof(v1));
		snprintf(err, len, "cgroup v2 at '%s' does not offer %s%s%s%s; drfd needs them to "
			 "enforce the config's capacities: boot with "
			 "systemd.unified_cgroup_hierarchy=1, or remove those resources from "
			 "[capacity]", mount, names, v1[0] ? " (bound to cgroup v1: " : "", v1,
			 v1[0] ? ")" : "");
		return -ENOTSUP;
	}
	parent_dir(root, parent, sizeof(parent));
	if (statfs(parent, &sf) < 0) {
		int e0 = -errno;

		snprintf(err, len, "cannot examine '%s', the parent of cgroup-root: %s", parent,
			 strerror(-e0));
		return e0;
	}
	if (sf.f_type != CGROUP2_SUPER_MAGIC) {
		ctrl_list(need, names, sizeof(names));
		v1_bindings(need, v1, sizeof(v1));
		if (any_cgroup2_mount(mount, sizeof(mount)) < 0)
			snprintf(mount, sizeof(mount), "nowhere");
		snprintf(err, len,
			 "'%s' (the parent of cgroup-root '%s') is not on a cgroup v2 mount; "
			 "cgroup2 is mounted %s%s%s%s. drfd needs cgroup v2 with %s: boot with "
			 "systemd.unified_cgroup_hierarchy=1 (cgroup v2 only), or point cgroup-root "
			 "into a cgroup2 mount that offers them",
			 parent, root, strcmp(mount, "nowhere") ? "at " : "", mount,
			 v1[0] ? ", and the controllers are bound to cgroup v1: " : "", v1, names);
		return -EMEDIUMTYPE;
	}
	/* Something else mounted at the root itself: not a cgroup at all. */
	if (stat(root, &st) == 0 && statfs(root, &sf) == 0 &&
	    sf.f_type != CGROUP2_SUPER_MAGIC) {
		snprintf(err, len, "cgroup-root '%s' exists but is not a cgroup: another filesystem "
			 "is mounted there; drfd writes only to cgroup v2", root);
		return -ENOTDIR;
	}
	/* The root's parent must pass the controllers down to the root. */
	if (stat(root, &st) == 0)
		have = read_ctrl_file(root, "cgroup.controllers", &e);
	else
		have = read_ctrl_file(parent, "cgroup.subtree_control", &e);
	if (e < 0) {
		snprintf(err, len, "cannot read the controllers of '%s': %s", parent, strerror(-e));
		return e;
	}
	if ((have & need) == need)
		return 0;
	offered = read_ctrl_file(parent, "cgroup.controllers", &e);
	ctrl_list(need & ~have, names, sizeof(names));
	if ((offered & need) == need) {
		char plus[128] = "";

		for (int i = 0; i < CGFS_NCTRL; i++)
			if (need & ~have & (1u << i))
				snprintf(plus + strlen(plus), sizeof(plus) - strlen(plus), "%s+%s",
					 plus[0] ? " " : "", cgfs_ctrl_name(1u << i));
		snprintf(err, len,
			 "'%s' does not pass %s down to cgroup-root '%s'; drfd writes only inside "
			 "its root, so enable them first: echo '%s' > %s/cgroup.subtree_control",
			 parent, names, root, plus, parent);
		return -ENOTSUP;
	}
	v1_bindings(need & ~offered, v1, sizeof(v1));
	snprintf(err, len,
		 "cgroup v2 at '%s' does not offer %s%s%s; drfd needs them to enforce the config's "
		 "capacities: boot with systemd.unified_cgroup_hierarchy=1, or remove those "
		 "resources from [capacity]",
		 parent, names, v1[0] ? " (bound to cgroup v1: " : "", v1[0] ? v1 : "");
	if (v1[0])
		strncat(err, ")", len - strlen(err) - 1);
	return -ENOTSUP;
}

int drf_check_io_device(const struct drf_config *c, const char *cgroup_mount,
			struct drf_io_target *ret, char *err, size_t len)
{
	struct drf_io_target io = { 0 };
	char path[512], buf[512];
	struct stat st;
	FILE *f;

	if (!(drf_knobs_controllers(c) & DRF_CTRL_IO)) {
		memset(ret, 0, sizeof(*ret));
		return 0;
	}
	if (c->io_device[0] == '/') {
		if (stat(c->io_device, &st) < 0) {
			int e0 = -errno;

			snprintf(err, len, "io-device '%s': %s", c->io_device, strerror(-e0));
			return e0 == -ENOENT ? -ENODEV : e0;
		}
		if (!S_ISBLK(st.st_mode)) {
			snprintf(err, len, "io-device '%s' is not a block device", c->io_device);
			return -ENOTBLK;
		}
		io.major = major(st.st_rdev);
		io.minor = minor(st.st_rdev);
	} else if (sscanf(c->io_device, "%u:%u", &io.major, &io.minor) != 2) {
		snprintf(err, len, "io-device '%s' is neither a path nor MAJ:MIN", c->io_device);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", io.major, io.minor);
	if (stat(path, &st) < 0) {
		snprintf(err, len, "io-device '%s': no block device %u:%u (%s: %s)", c->io_device,
			 io.major, io.minor, path, strerror(errno));
		return -ENODEV;
	}
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/partition", io.major, io.minor);
	if (stat(path, &st) == 0) {
		snprintf(err, len, "io-device '%s' (%u:%u) is a partition; io.max and io weights "
			 "apply to whole disks: name the disk", c->io_device, io.major, io.minor);
		return -ENOTBLK;
	}
	/* BFQ honours io.bfq.weight; blk-iocost, when enabled, honours io.weight. */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/scheduler", io.major, io.minor);
	f = fopen(path, "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f) && strstr(buf, "[bfq]"))
			io.weights = DRF_IO_WEIGHTS_BFQ;
		fclose(f);
	}
	if (io.weights == DRF_IO_WEIGHTS_NONE && cgroup_mount) {
		char dev[32];

		snprintf(path, sizeof(path), "%s/io.cost.qos", cgroup_mount);
		snprintf(dev, sizeof(dev), "%u:%u enable=1", io.major, io.minor);
		f = fopen(path, "re");
		while (f && fgets(buf, sizeof(buf), f))
			if (strncmp(buf, dev, strlen(dev)) == 0)
				io.weights = DRF_IO_WEIGHTS_COST;
		if (f)
			fclose(f);
	}
	*ret = io;
	return 0;
}

int drf_check_cgroup2_fd(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return -errno;
	return sf.f_type == CGROUP2_SUPER_MAGIC ? 0 : -EMEDIUMTYPE;
}

int drf_resolve_auto_root(const struct drf_config *c, char *ret, size_t len, const char **ret_how)
{
	char mount[4096];
	int n;

	if (!c->slices) {
		*ret_how = "systemd is not the init system: the default root";
		if (strlen(c->cgroup_root) >= len)
			return -ENAMETOOLONG;
		snprintf(ret, len, "%s", c->cgroup_root);
		return 0;
	}
	*ret_how = "systemd is the init system, but no cgroup v2 mount was found";
	if (any_cgroup2_mount(mount, sizeof(mount)) < 0)
		return -ENOENT;
	n = snprintf(ret, len, "%s/" DRF_SLICE_ROOT, strcmp(mount, "/") ? mount : "");
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	*ret_how = "systemd is the init system: the tenants are slices in " DRF_SLICE_ROOT;
	return 0;
}

void drf_protection_cap(const struct drf_host_ops *host, const char *root, unsigned long long need,
			struct drf_prot_cap *ret)
{
	char path[sizeof(ret->ancestor)];
	unsigned long long least = ULLONG_MAX;
	char *slash;

	memset(ret, 0, sizeof(*ret));
	ret->need = need;
	if (!host || !host->cgroup_protection || need == 0 ||
	    (size_t)snprintf(path, sizeof(path), "%s", root) >= sizeof(path))
		return;
	/* Parent by parent: the root cgroup has no memory.low (-ENOENT), where it ends. */
	while ((slash = strrchr(path, '/')) && slash != path) {
		unsigned long long low, min, prot;
		int r;

		*slash = '\0';
		r = host->cgroup_protection(host->ctx, path, &low, &min);
		if (r == -ENOENT)
			break;
		if (r < 0) {
			ret->err = r;
			snprintf(ret->err_path, sizeof(ret->err_path), "%s", path);
			break;
		}
		prot = low > min ? low : min;
		if (prot < need && prot <= least) {
			least = prot;
			ret->capped = true;
			ret->low = low;
			ret->min = min;
			snprintf(ret->ancestor, sizeof(ret->ancestor), "%s", path);
		}
	}
}
