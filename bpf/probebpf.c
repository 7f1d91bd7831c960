// SPDX-License-Identifier: MIT
/* The usage probes' loader (libbpf, skeleton) and its recording stand-in. */
#include "probebpf.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "fileio.h"
#include "hash.h"
#include "pins.h"
#include "probe.skel.h"
#include "record.h"
#include "vec.h"

/* The programs and the names their links are pinned under. */
#define NPROGS 6
static const char *const link_names[NPROGS] = {
	"switch_link", "tick_link", "migrate_link", "free_link", "rq_issue_link",
	"rq_complete_link",
};

/* FNV-1a (32 bits: kept in the pinned config) of the programs' object, as built into this drfd. */
static uint32_t code_hash(void)
{
	size_t n = 0;
	const void *p = probe_bpf__elf_bytes(&n);

	return drf_hash32_bytes(p, n);
}

static struct bpf_program *prog_of(struct probe_bpf *s, int i)
{
	struct bpf_program *p[NPROGS] = {
		s->progs.drf_switch, s->progs.drf_tick, s->progs.drf_migrate, s->progs.drf_free,
		s->progs.drf_rq_issue, s->progs.drf_rq_complete,
	};

	return p[i];
}

static void real_close(void *ctx)
{
	struct drf_probebpf *b = ctx;

	/* The pins keep the links, and so the programs, in place. */
	if (b->fds_open) {
		if (b->cfg_fd >= 0)
			close(b->cfg_fd);
		if (b->cpu_fd >= 0)
			close(b->cpu_fd);
		if (b->io_fd >= 0)
			close(b->io_fd);
	}
	probe_bpf__destroy(b->skel);
	*b = (struct drf_probebpf){ 0 };
}

static int open_pinned(const char *pin_dir, const char *name)
{
	char path[512];
	int r = drf_pin_path(path, sizeof(path), pin_dir, name);

	if (r < 0)
		return r;
	r = bpf_obj_get(path);
	return r < 0 ? -errno : r;
}

/*
 * Adopts what a drfd of this version pinned: its maps (layout and ABI) and
 * every link. -ENOENT if anything is missing or of another version.
 */
static int adopt(struct drf_probebpf *b, const char *pin_dir)
{
	struct probe_bpf *s = probe_bpf__open();
	struct drf_probe_cfg cfg;
	char path[512];
	__u32 zero = 0;
	int r = 0;

	if (!s)
		return -errno;
	/* The layout this drfd would create, checked against the pins. */
	if (drf_pin_path(path, sizeof(path), pin_dir, "drf_probe_cfg") < 0 || access(path, F_OK) < 0 ||
	    !drf_pin_fits(s->maps.drf_probe_cfg, path))
		r = -ENOENT;
	if (r == 0 && (drf_pin_path(path, sizeof(path), pin_dir, "drf_probe_cpu") < 0 ||
		       access(path, F_OK) < 0 || !drf_pin_fits(s->maps.drf_probe_cpu, path)))
		r = -ENOENT;
	if (r == 0 && (drf_pin_path(path, sizeof(path), pin_dir, "drf_probe_io") < 0 ||
		       access(path, F_OK) < 0 || !drf_pin_fits(s->maps.drf_probe_io, path)))
		r = -ENOENT;
	probe_bpf__destroy(s);
	for (int i = 0; r == 0 && i < NPROGS; i++)
		if (drf_pin_path(path, sizeof(path), pin_dir, link_names[i]) < 0 ||
		    access(path, F_OK) < 0)
			r = -ENOENT;
	if (r < 0)
		return r;
	b->fds_open = true;
	b->cfg_fd = open_pinned(pin_dir, "drf_probe_cfg");
	b->cpu_fd = open_pinned(pin_dir, "drf_probe_cpu");
	b->io_fd = open_pinned(pin_dir, "drf_probe_io");
	if (b->cfg_fd < 0 || b->cpu_fd < 0 || b->io_fd < 0 ||
	    bpf_map_lookup_elem(b->cfg_fd, &zero, &cfg) < 0 || cfg.abi != DRF_PROBE_ABI ||
	    cfg.code != code_hash()) {
		real_close(b);
		return -ENOENT;
	}
	return 0;
}

/* Loads the programs afresh, attaches them and pins maps and links in pin_dir. */
static int load(struct drf_probebpf *b, const char *pin_dir)
{
	struct drf_probe_cfg cfg = { .abi = DRF_PROBE_ABI, .code = code_hash() };
	char path[512];
	__u32 zero = 0;
	int r;

	b->skel = probe_bpf__open();
	if (!b->skel)
		return -errno;
	r = drf_pin_path(path, sizeof(path), pin_dir, "drf_probe_cfg");
	if (r == 0)
		r = bpf_map__set_pin_path(b->skel->maps.drf_probe_cfg, path);
	if (r == 0)
		r = drf_pin_path(path, sizeof(path), pin_dir, "drf_probe_cpu");
	if (r == 0)
		r = bpf_map__set_pin_path(b->skel->maps.drf_probe_cpu, path);
	if (r == 0)
		r = drf_pin_path(path, sizeof(path), pin_dir, "drf_probe_io");
	if (r == 0)
		r = bpf_map__set_pin_path(b->skel->maps.drf_probe_io, path);
	if (r == 0)
		r = probe_bpf__load(b->skel);
	/* The version first: counting starts once drfd configures a root. */
	if (r == 0 && bpf_map_update_elem(bpf_map__fd(b->skel->maps.drf_probe_cfg), &zero, &cfg,
					  BPF_ANY) < 0)
		r = -errno;
	for (int i = 0; r == 0 && i < NPROGS; i++) {
		struct bpf_link *l = bpf_program__attach(prog_of(b->skel, i));

		if (!l) {
			r = -errno;
			break;
		}
		r = drf_pin_path(path, sizeof(path), pin_dir, link_names[i]);
		if (r == 0)
			r = bpf_link__pin(l, path);
		/* Pinned, the link stays when its fd goes; unpinned, it goes with it. */
		bpf_link__destroy(l);
	}
	if (r == 0) {
		b->fds_open = true;
		/* Close-on-exec, as every bpf fd: a task's command must not hold the maps. */
		b->cfg_fd = fcntl(bpf_map__fd(b->skel->maps.drf_probe_cfg), F_DUPFD_CLOEXEC, 0);
		b->cpu_fd = fcntl(bpf_map__fd(b->skel->maps.drf_probe_cpu), F_DUPFD_CLOEXEC, 0);
		b->io_fd = fcntl(bpf_map__fd(b->skel->maps.drf_probe_io), F_DUPFD_CLOEXEC, 0);
		if (b->cfg_fd < 0 || b->cpu_fd < 0 || b->io_fd < 0)
			r = -errno;
	}
	return r;
}

static int real_attach(void *ctx, const char *pin_dir, bool *ret_adopted)
{
	struct drf_probebpf *b = ctx;
	int r, ncpu = libbpf_num_possible_cpus();

	real_close(b);
	if (ncpu < 0)
		return ncpu;
	if (adopt(b, pin_dir) == 0) {
		b->ncpu = ncpu;
		b->ready = true;
		*ret_adopted = true;
		return 0;
	}
	/* Another version's, or a partial set: replaced (its counts go). */
	r = drf_pin_clear(pin_dir);
	if (r == 0)
		r = drf_mkdir_p_at(AT_FDCWD, pin_dir, 0700);
	if (r == 0)
		r = load(b, pin_dir);
	if (r < 0) {
		real_close(b);
		drf_pin_clear(pin_dir);
		return r;
	}
	b->ncpu = ncpu;
	b->ready = true;
	*ret_adopted = false;
	return 0;
}

static int real_configure(void *ctx, const struct drf_probe_cfg *cfg)
{
	struct drf_probebpf *b = ctx;
	struct drf_probe_cfg c = *cfg;
	__u32 zero = 0;

	if (!b->ready)
		return -EBADF;
	c.abi = DRF_PROBE_ABI;
	c.code = code_hash();
	return bpf_map_update_elem(b->cfg_fd, &zero, &c, BPF_ANY) < 0 ? -errno : 0;
}

static int real_add(void *ctx, uint64_t cgid)
{
	struct drf_probebpf *b = ctx;
	struct drf_probe_cpu *zeros;
	struct drf_probe_io io = { 0 };
	int r = 0, e = 0;

	if (!b->ready)
		return -EBADF;
	zeros = calloc((size_t)b->ncpu, sizeof(*zeros));
	if (!zeros)
		return -ENOMEM;
	if (bpf_map_update_elem(b->cpu_fd, &cgid, zeros, BPF_NOEXIST) < 0) {
		r = -errno;
		e += r == -EEXIST;
	}
	free(zeros);
	if ((r == 0 || r == -EEXIST) && bpf_map_update_elem(b->io_fd, &cgid, &io, BPF_NOEXIST) < 0) {
		r = -errno;
		e += r == -EEXIST;
	}
	if (r == -EEXIST && e < 2)
		r = 0; /* one of them was missing, and is there now */
	return r;
}

static int real_del(void *ctx, uint64_t cgid)
{
	struct drf_probebpf *b = ctx;
	int r = 0;

	if (!b->ready)
		return -EBADF;
	if (bpf_map_delete_elem(b->cpu_fd, &cgid) < 0 && errno != ENOENT)
		r = -errno;
	if (bpf_map_delete_elem(b->io_fd, &cgid) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

static int real_keys(void *ctx, uint64_t **ret, size_t *ret_n)
{
	struct drf_probebpf *b = ctx;

	return b->ready ? drf_map_keys(b->cpu_fd, ret, ret_n) : -EBADF;
}

/* Keys per batch lookup. */
#define BATCH 256

/*
 * Every entry of map fd, in batches: keys and values (vsize bytes each, times
 * per for a per-CPU map) appended to growing arrays.
 */
static int read_all(int fd, size_t vsize, int per, uint64_t **ret_keys, void **ret_vals,
		    size_t *ret_n)
{
	uint64_t *keys = NULL, batch = 0;
	char *vals = NULL;
	size_t n = 0, kcap = 0, vcap = 0, one = vsize * (size_t)per;
	bool first = true, done = false;
	int r = 0;

	while (!done) {
		uint32_t count = BATCH;

		if (DRF_VEC_GROW(keys, &kcap, n + BATCH) < 0 ||
		    drf_vec_grow(&vals, &vcap, n + BATCH, one) < 0) {
			r = -ENOMEM;
			break;
		}
		if (bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch, keys + n, vals + n * one,
					 &count, NULL) < 0) {
			if (errno != ENOENT) {
				r = -errno;
				break;
			}
			done = true; /* ENOENT: that was the last batch */
		}
		first = false;
		n += count;
	}
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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct io_entry {
	uint64_t key;
	struct drf_probe_io v;
};

static int cmp_io(const void *a, const void *b)
{
	return cmp_u64(&((const struct io_entry *)a)->key, &((const struct io_entry *)b)->key);
}

static int real_read(void *ctx, uint64_t **ret_keys, struct drf_probe_cpu **ret_cpu,
		     struct drf_probe_io **ret_io, size_t *ret_n)
{
	struct drf_probebpf *b = ctx;
	uint64_t *keys = NULL, *io_keys = NULL;
	void *per = NULL, *io_vals = NULL;
	struct drf_probe_cpu *cpu = NULL;
	struct drf_probe_io *io = NULL;
	struct io_entry *ent = NULL;
	size_t n = 0, n_io = 0;
	int r;

	if (!b->ready)
		return -EBADF;
	r = read_all(b->cpu_fd, sizeof(struct drf_probe_cpu), b->ncpu, &keys, &per, &n);
	if (r == 0)
		r = read_all(b->io_fd, sizeof(struct drf_probe_io), 1, &io_keys, &io_vals, &n_io);
	if (r == 0) {
		cpu = calloc(n + 1, sizeof(*cpu));
		io = calloc(n + 1, sizeof(*io));
		ent = malloc((n_io + 1) * sizeof(*ent));
		if (!cpu || !io || !ent)
			r = -ENOMEM;
	}
	if (r == 0) {
		for (size_t i = 0; i < n_io; i++) {
			ent[i].key = io_keys[i];
			ent[i].v = ((struct drf_probe_io *)io_vals)[i];
		}
		qsort(ent, n_io, sizeof(*ent), cmp_io);
		for (size_t i = 0; i < n; i++) {
			const struct drf_probe_cpu *v = (const struct drf_probe_cpu *)per + i * (size_t)b->ncpu;
			struct io_entry want = { .key = keys[i] }, *e;

			/* A per-CPU map gives every CPU's value of a key, one after the other. */
			for (int c = 0; c < b->ncpu; c++) {
				cpu[i].oncpu_ns += v[c].oncpu_ns;
				cpu[i].runq_ns += v[c].runq_ns;
				cpu[i].runq_count += v[c].runq_count;
				for (int h = 0; h < DRF_PROBE_HIST; h++)
					cpu[i].runq_hist[h] += v[c].runq_hist[h];
			}
			e = bsearch(&want, ent, n_io, sizeof(*ent), cmp_io);
			if (e)
				io[i] = e->v;
		}
	}
	free(per);
	free(io_keys);
	free(io_vals);
	free(ent);
	if (r < 0) {
		free(keys);
		free(cpu);
		free(io);
		return r;
	}
	*ret_keys = keys;
	*ret_cpu = cpu;
	*ret_io = io;
	*ret_n = n;
	return 0;
}

static int real_reset(void *ctx, const char *pin_dir)
{
	real_close(ctx);
	return drf_pin_clear(pin_dir);
}

const struct drf_probe_ops drf_probe_real_ops = {
	.name = "libbpf",
	.attach = real_attach,
	.configure = real_configure,
	.add = real_add,
	.del = real_del,
	.keys = real_keys,
	.read = real_read,
	.reset = real_reset,
	.close = real_close,
};

/* The recorder. */

static ssize_t rec_find(const struct drf_probe_recorder *r, uint64_t cgid)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->key[i] == cgid)
			return (ssize_t)i;
	return -1;
}

static int rec_attach(void *ctx, const char *pin_dir, bool *ret_adopted)
{
	struct drf_probe_recorder *r = ctx;

	if (drf_fault_inject(&r->fault, DRF_PROBE_OP_ATTACH, 0, NULL))
		return -r->fault.err;
	drf_record(r->out, &r->changes, "probe attach %s", pin_dir);
	*ret_adopted = r->attached;
	r->attached = true;
	return 0;
}

static int rec_configure(void *ctx, const struct drf_probe_cfg *cfg)
{
	struct drf_probe_recorder *r = ctx;

	if (drf_fault_inject(&r->fault, DRF_PROBE_OP_CONFIGURE, 0, NULL))
		return -r->fault.err;
	if (memcmp(&r->cfg, cfg, sizeof(*cfg)) == 0)
		return 0;
	r->cfg = *cfg;
	drf_record(r->out, &r->changes,
		   "probe configure root-level %" PRIu32 " root-id %llu io-dev %u:%u gen %" PRIu32,
		   cfg->root_level, (unsigned long long)cfg->root_id, cfg->io_dev >> 20,
		   cfg->io_dev & 0xfffff, cfg->gen);
	return 0;
}

static int rec_add(void *ctx, uint64_t cgid)
{
	struct drf_probe_recorder *r = ctx;

	if (drf_fault_inject(&r->fault, DRF_PROBE_OP_ADD, cgid, NULL))
		return -r->fault.err;
	if (rec_find(r, cgid) >= 0)
		return -EEXIST;
	if (r->n == DRF_PROBE_REC_MAX)
		return -E2BIG;
	r->key[r->n] = cgid;
	r->cpu[r->n] = (struct drf_probe_cpu){ 0 };
	r->io[r->n] = (struct drf_probe_io){ 0 };
	r->n++;
	drf_record(r->out, &r->changes, "probe add %" PRIu64, cgid);
	return 0;
}

static int rec_del(void *ctx, uint64_t cgid)
{
	struct drf_probe_recorder *r = ctx;
	ssize_t i = rec_find(r, cgid);

	if (drf_fault_inject(&r->fault, DRF_PROBE_OP_DEL, cgid, NULL))
		return -r->fault.err;
	drf_record(r->out, &r->changes, "probe del %" PRIu64, cgid);
	if (i >= 0) {
		r->n--;
		r->key[i] = r->key[r->n];
		r->cpu[i] = r->cpu[r->n];
		r->io[i] = r->io[r->n];
	}
	return 0;
}

static int rec_keys(void *ctx, uint64_t **ret, size_t *ret_n)
{
	struct drf_probe_recorder *r = ctx;
	uint64_t *v;

	if (drf_fault_inject(&r->fault, DRF_PROBE_OP_KEYS, 0, NULL))
		return -r->fault.err;
	v = malloc((r->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, r->key, r->n * sizeof(*v));
	*ret = v;
	*ret_n = r->n;
	return 0;
}

static int rec_read(void *ctx, uint64_t **ret_keys, struct drf_probe_cpu **ret_cpu,
		    struct drf_probe_io **ret_io, size_t *ret_n)
{
	struct drf_probe_recorder *r = ctx;
	uint64_t *k;
	struct drf_probe_cpu *c;
	struct drf_probe_io *io;

	if (drf_fault_inject(&r->fault, DRF_PROBE_OP_READ, 0, NULL))
		return -r->fault.err;
	k = malloc((r->n + 1) * sizeof(*k));
	c = malloc((r->n + 1) * sizeof(*c));
	io = malloc((r->n + 1) * sizeof(*io));
	if (!k || !c || !io) {
		free(k);
		free(c);
		free(io);
		return -ENOMEM;
	}
	memcpy(k, r->key, r->n * sizeof(*k));
	memcpy(c, r->cpu, r->n * sizeof(*c));
	memcpy(io, r->io, r->n * sizeof(*io));
	*ret_keys = k;
	*ret_cpu = c;
	*ret_io = io;
	*ret_n = r->n;
	return 0;
}

static int rec_reset(void *ctx, const char *pin_dir)
{
	struct drf_probe_recorder *r = ctx;

	if (drf_fault_inject(&r->fault, DRF_PROBE_OP_RESET, 0, NULL))
		return -r->fault.err;
	drf_record(r->out, &r->changes, "probe reset %s", pin_dir);
	r->attached = false;
	r->n = 0;
	return 0;
}

static void rec_close(void *ctx)
{
	(void)ctx;
}

const struct drf_probe_ops drf_probe_recording_ops = {
	.name = "recording",
	.attach = rec_attach,
	.configure = rec_configure,
	.add = rec_add,
	.del = rec_del,
	.keys = rec_keys,
	.read = rec_read,
	.reset = rec_reset,
	.close = rec_close,
};
