// SPDX-License-Identifier: MIT
/* The network programs' loader (libbpf, skeleton) and its recording stand-in. */
#include "netbpf.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault.h"
#include "fileio.h"
#include "net.skel.h"
#include "pins.h"
#include "record.h"
#include "vec.h"

static int load(struct drf_netbpf *b, const char *pin_dir, uint32_t root_level, const int *devs,
		size_t n_devs)
{
	char path[512];
	struct bpf_map *m;
	int r;

	b->skel = net_bpf__open();
	if (!b->skel)
		return -errno;
	b->skel->rodata->drf_root_level = root_level;
	bpf_object__for_each_map(m, b->skel->obj) {
		if (strncmp(bpf_map__name(m), "drf_net_", 8) != 0)
			continue; /* .rodata and the like are the programs' own */
		r = drf_pin_path(path, sizeof(path), pin_dir, bpf_map__name(m));
		if (r == 0 && !drf_pin_fits(m, path) && unlink(path) < 0)
			r = -errno;
		if (r == 0)
			r = bpf_map__set_pin_path(m, path);
		if (r < 0)
			return r;
	}
	/* Reuses the maps pinned there (with their counters), or creates and pins them. */
	r = net_bpf__load(b->skel);
	/* The devices, before the programs are linked: they act on nothing else. */
	for (size_t i = 0; r == 0 && i < n_devs && i < DRF_NET_MAX_DEVS; i++) {
		__u32 dev = (__u32)devs[i], one = 1;

		if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.devs), &dev, &one, BPF_ANY) < 0)
			r = -errno;
	}
	return r;
}

/* The id of the cgroup a pinned cgroup link is attached to; 0 if severed. */
static uint64_t link_cgroup(struct bpf_link *l)
{
	struct bpf_link_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(bpf_link__fd(l), &info, &len) < 0)
		return 0;
	return info.cgroup.cgroup_id;
}

/*
 * The pinned link at pin_dir/name, switched to prog; or prog attached and
 * pinned there, where no link is pinned or the pinned one holds another
 * cgroup than cgfd's (cgroup-root was recreated: the old link is severed, or
 * holds the old cgroup while it dies).
 */
static int link_prog(struct bpf_program *prog, const char *pin_dir, const char *name, int cgfd,
		     struct bpf_link **ret, bool *adopted)
{
	char path[512];
	struct bpf_link *l = NULL;
	struct stat st;
	int r = drf_pin_path(path, sizeof(path), pin_dir, name);

	if (r < 0)
		return r;
	if (fstat(cgfd, &st) < 0)
		return -errno;
	if (access(path, F_OK) == 0)
		l = bpf_link__open(path);
	if (l && link_cgroup(l) != (uint64_t)st.st_ino) {
		/* Unpinned and with no fd left, it goes, detached from the old cgroup. */
		bpf_link__destroy(l);
		l = NULL;
		if (unlink(path) < 0)
			return -errno;
	}
	if (l) {
		/* Atomic: packets see the old program or the new one, never none. */
		r = bpf_link__update_program(l, prog);
		if (r < 0) {
			bpf_link__destroy(l);
			return r;
		}
		*adopted = true;
		*ret = l;
		return 0;
	}
	l = bpf_program__attach_cgroup(prog, cgfd);
	if (!l)
		return -errno;
	r = bpf_link__pin(l, path);
	if (r < 0) {
		/* Unpinned, the link would go with this process: undo it. */
		bpf_link__destroy(l);
		return r;
	}
	*ret = l;
	return 0;
}

static void real_close(void *ctx)
{
	struct drf_netbpf *b = ctx;

	/* fd links: destroying closes the fds; the pins keep the programs attached. */
	bpf_link__destroy(b->egress);
	bpf_link__destroy(b->ingress);
	net_bpf__destroy(b->skel);
	*b = (struct drf_netbpf){ 0 };
}

static int real_attach(void *ctx, const char *pin_dir, int cgroup_fd, uint32_t root_level,
		       const int *devs, size_t n_devs, bool *ret_adopted)
{
	struct drf_netbpf *b = ctx;
	bool adopted = false;
	int r;

	real_close(b);
	r = drf_mkdir_p_at(AT_FDCWD, pin_dir, 0700);
	if (r < 0)
		return r;
	r = load(b, pin_dir, root_level, devs, n_devs);
	if (r == 0)
		r = link_prog(b->skel->progs.drf_net_egress, pin_dir, "egress_link", cgroup_fd,
			      &b->egress, &adopted);
	if (r == 0)
		r = link_prog(b->skel->progs.drf_net_ingress, pin_dir, "ingress_link", cgroup_fd,
			      &b->ingress, &adopted);
	if (r < 0) {
		real_close(b);
		return r;
	}
	*ret_adopted = adopted;
	return 0;
}

static int tenants_fd(struct drf_netbpf *b)
{
	return b->skel ? bpf_map__fd(b->skel->maps.drf_net_tenants) : -EBADF;
}

static int real_set(void *ctx, uint64_t cgid, const struct drf_net_tenant *v)
{
	int fd = tenants_fd(ctx);

	if (fd < 0)
		return fd;
	return bpf_map_update_elem(fd, &cgid, v, BPF_ANY) < 0 ? -errno : 0;
}

static int real_get(void *ctx, uint64_t cgid, struct drf_net_tenant *ret)
{
	int fd = tenants_fd(ctx);

	if (fd < 0)
		return fd;
	return bpf_map_lookup_elem(fd, &cgid, ret) < 0 ? -errno : 0;
}

static int real_del(void *ctx, uint64_t cgid)
{
	struct drf_netbpf *b = ctx;
	int fd = tenants_fd(b);

	if (fd < 0)
		return fd;
	if (bpf_map_delete_elem(fd, &cgid) < 0 && errno != ENOENT)
		return -errno;
	/* Its counters and bucket go with it: a cgroup id is never reused. */
	bpf_map_delete_elem(bpf_map__fd(b->skel->maps.drf_net_stats), &cgid);
	bpf_map_delete_elem(bpf_map__fd(b->skel->maps.drf_net_buckets), &cgid);
	return 0;
}

static int real_keys(void *ctx, uint64_t **ret, size_t *ret_n)
{
	int fd = tenants_fd(ctx);

	return fd < 0 ? fd : drf_map_keys(fd, ret, ret_n);
}

/* Keys per batch lookup. */
#define BATCH 256

static int real_counters(void *ctx, uint64_t **ret_keys, struct drf_net_counters **ret_vals,
			 size_t *ret_n)
{
	struct drf_netbpf *b = ctx;
	int ncpu = libbpf_num_possible_cpus(), fd, r = 0;
	uint64_t *keys = NULL, batch = 0;
	struct drf_net_counters *per = NULL, *vals = NULL;
	size_t n = 0, kcap = 0, vcap = 0;
	bool first = true, done = false;

	if (!b->skel)
		return -EBADF;
	if (ncpu < 0)
		return ncpu;
	fd = bpf_map__fd(b->skel->maps.drf_net_stats);
	per = malloc((size_t)BATCH * (size_t)ncpu * sizeof(*per));
	if (!per)
		return -ENOMEM;
	while (!done) {
		uint32_t count = BATCH;

		if (DRF_VEC_GROW(keys, &kcap, n + BATCH) < 0 ||
		    DRF_VEC_GROW(vals, &vcap, n + BATCH) < 0) {
			r = -ENOMEM;
			break;
		}
		/* A per-CPU map gives every CPU's value of a key, one after the other. */
		if (bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch, keys + n, per, &count,
					 NULL) < 0) {
			if (errno != ENOENT) {
				r = -errno;
				break;
			}
			done = true; /* ENOENT: that was the last batch */
		}
		first = false;
		for (uint32_t k = 0; k < count; k++) {
			struct drf_net_counters sum = { 0 };

			for (int c = 0; c < ncpu; c++) {
				const struct drf_net_counters *v = &per[(size_t)k * (size_t)ncpu + (size_t)c];

				sum.eg_bytes += v->eg_bytes;
				sum.eg_packets += v->eg_packets;
				sum.in_bytes += v->in_bytes;
				sum.in_packets += v->in_packets;
				sum.in_dropped += v->in_dropped;
				sum.in_marked += v->in_marked;
			}
			vals[n + k] = sum;
		}
		n += count;
	}
	free(per);
	if (r < 0) {
		free(keys);
		free(vals);
		return r;
	}
	*ret_keys = keys;
	*ret_vals = vals;
	*ret_n = n;
	return 0;
}

static int real_reset(void *ctx, const char *pin_dir)
{
	real_close(ctx);
	return drf_pin_clear(pin_dir);
}

int drf_netbpf_probe(void)
{
	struct net_bpf *skel = net_bpf__open();
	struct bpf_map *m;
	int r;

	if (!skel)
		return -errno;
	/* The verifier does not care how big the maps are: one entry each. */
	bpf_object__for_each_map(m, skel->obj)
		if (bpf_map__type(m) == BPF_MAP_TYPE_HASH || bpf_map__type(m) == BPF_MAP_TYPE_PERCPU_HASH)
			bpf_map__set_max_entries(m, 1);
	r = net_bpf__load(skel);
	net_bpf__destroy(skel);
	return r;
}

const struct drf_netbpf_ops drf_netbpf_real_ops = {
	.name = "libbpf",
	.attach = real_attach,
	.set = real_set,
	.get = real_get,
	.del = real_del,
	.keys = real_keys,
	.counters = real_counters,
	.reset = real_reset,
	.close = real_close,
};

/* The recorder. */

static ssize_t rec_find(const struct drf_netbpf_recorder *r, uint64_t cgid)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->key[i] == cgid)
			return (ssize_t)i;
	return -1;
}

static int rec_attach(void *ctx, const char *pin_dir, int cgroup_fd, uint32_t root_level,
		      const int *devs, size_t n_devs, bool *ret_adopted)
{
	struct drf_netbpf_recorder *r = ctx;

	(void)cgroup_fd;
	(void)devs;
	(void)n_devs;
	if (drf_fault_inject(&r->fault, DRF_NETBPF_OP_ATTACH, 0, NULL))
		return -r->fault.err;
	drf_record(r->out, &r->changes, "bpf attach %s level %" PRIu32, pin_dir, root_level);
	*ret_adopted = r->attached;
	r->attached = true;
	return 0;
}

static int rec_set(void *ctx, uint64_t cgid, const struct drf_net_tenant *v)
{
	struct drf_netbpf_recorder *r = ctx;
	ssize_t i = rec_find(r, cgid);

	if (drf_fault_inject(&r->fault, DRF_NETBPF_OP_SET, cgid, NULL))
		return -r->fault.err;
	if (i < 0) {
		if (r->n == DRF_NETBPF_REC_MAX)
			return -E2BIG;
		i = (ssize_t)r->n++;
		r->key[i] = cgid;
		r->cnt[i] = (struct drf_net_counters){ 0 };
	}
	r->val[i] = *v;
	drf_record(r->out, &r->changes,
		   "bpf map set %" PRIu64 " class %x:%x in-rate %llu in-burst %llu", cgid,
		   v->classid >> 16, v->classid & 0xffff, (unsigned long long)v->in_rate,
		   (unsigned long long)v->in_burst);
	return 0;
}

static int rec_get(void *ctx, uint64_t cgid, struct drf_net_tenant *ret)
{
	struct drf_netbpf_recorder *r = ctx;
	ssize_t i = rec_find(r, cgid);

	if (drf_fault_inject(&r->fault, DRF_NETBPF_OP_GET, cgid, NULL))
		return -r->fault.err;
	if (i < 0)
		return -ENOENT;
	*ret = r->val[i];
	return 0;
}

static int rec_del(void *ctx, uint64_t cgid)
{
	struct drf_netbpf_recorder *r = ctx;
	ssize_t i = rec_find(r, cgid);

	if (drf_fault_inject(&r->fault, DRF_NETBPF_OP_DEL, cgid, NULL))
		return -r->fault.err;
	drf_record(r->out, &r->changes, "bpf map del %" PRIu64, cgid);
	if (i >= 0) {
		r->n--;
		r->key[i] = r->key[r->n];
		r->val[i] = r->val[r->n];
		r->cnt[i] = r->cnt[r->n];
	}
	return 0;
}

static int rec_keys(void *ctx, uint64_t **ret, size_t *ret_n)
{
	struct drf_netbpf_recorder *r = ctx;
	uint64_t *v;

	if (drf_fault_inject(&r->fault, DRF_NETBPF_OP_KEYS, 0, NULL))
		return -r->fault.err;
	v = malloc((r->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, r->key, r->n * sizeof(*v));
	*ret = v;
	*ret_n = r->n;
	return 0;
}

static int rec_counters(void *ctx, uint64_t **ret_keys, struct drf_net_counters **ret_vals,
			size_t *ret_n)
{
	struct drf_netbpf_recorder *r = ctx;
	uint64_t *k;
	struct drf_net_counters *v;

	if (drf_fault_inject(&r->fault, DRF_NETBPF_OP_COUNTERS, 0, NULL))
		return -r->fault.err;
	k = malloc((r->n + 1) * sizeof(*k));
	v = malloc((r->n + 1) * sizeof(*v));
	if (!k || !v) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	memcpy(k, r->key, r->n * sizeof(*k));
	memcpy(v, r->cnt, r->n * sizeof(*v));
	*ret_keys = k;
	*ret_vals = v;
	*ret_n = r->n;
	return 0;
}

static int rec_reset(void *ctx, const char *pin_dir)
{
	struct drf_netbpf_recorder *r = ctx;

	if (drf_fault_inject(&r->fault, DRF_NETBPF_OP_RESET, 0, NULL))
		return -r->fault.err;
	drf_record(r->out, &r->changes, "bpf reset %s", pin_dir);
	r->attached = false;
	r->n = 0;
	return 0;
}

static void rec_close(void *ctx)
{
	(void)ctx;
}

const struct drf_netbpf_ops drf_netbpf_recording_ops = {
	.name = "recording",
	.attach = rec_attach,
	.set = rec_set,
	.get = rec_get,
	.del = rec_del,
	.keys = rec_keys,
	.counters = rec_counters,
	.reset = rec_reset,
	.close = rec_close,
};
_Static_assert(DRF_NET_MAX_DEPTH == 8, "agent/config/config.c checks tenant depths against 8");
