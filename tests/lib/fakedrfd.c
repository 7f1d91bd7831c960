// SPDX-License-Identifier: MIT
#include "fakedrfd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fakecg.h"
#include "fakeetcd.h"
#include "featureset.h"
#include "pins.h"

/* The fakes' host: whatever the config declares is passed down. */
static int check_cgroup_ok(const struct drf_config *c, const char *root, char *err, size_t len)
{
	(void)c;
	(void)root;
	(void)err;
	(void)len;
	return 0;
}

int fakedrfd_write(struct fakedrfd *f, const char *agent, const char *text)
{
	FILE *fp = fopen(f->conf, "w");

	if (!fp)
		return -errno;
	fprintf(fp, "[agent]\ncgroup-root = %s\nstate-dir = %s\n%s%s", f->root, f->statedir,
		agent ? agent : "", text);
	return fclose(fp) == 0 ? 0 : -errno;
}

int fakedrfd_setup(struct fakedrfd *f, const char *agent, const char *text)
{
	char err[1024];
	int r;

	memset(f, 0, sizeof(*f));
	r = fakecg_setup(f->dir, sizeof(f->dir), f->root, sizeof(f->root));
	if (r < 0)
		return r;
	snprintf(f->conf, sizeof(f->conf), "%s/drfd.conf", f->dir);
	snprintf(f->statedir, sizeof(f->statedir), "%s/state", f->dir);
	if (mkdir(f->statedir, 0755) < 0)
		return -errno;
	r = fakedrfd_write(f, agent, text);
	if (r < 0)
		return r;
	f->rec = (struct cgfs_recorder){ .inner = &fakecg_ops, .pass_changes = true };
	r = cgfs_open(&f->fs, f->root, false, &cgfs_recording_ops, &f->rec);
	if (r < 0)
		return r;
	f->rec.root = f->fs.root;
	f->now = (struct drf_fake_clock){ .mono = 1000 * DRF_USEC_PER_SEC,
					  .real = 1700000000 * DRF_USEC_PER_SEC };
	f->clock = (struct drf_clock){ .now = drf_fake_clock_now, .ctx = &f->now };
	f->env = (struct drfd_env){
		.log = NULL, .clock = &f->clock, .host = &drf_host_real,
		.check_cgroup = check_cgroup_ok, .fs = &f->fs,
		.tc = &faketc_ops, .tc_ctx = &f->tc,
		.netbpf = &drf_netbpf_recording_ops, .netbpf_ctx = &f->bpf,
		.held_files = SIZE_MAX,
	};
	faketc_init(&f->tc, 0);
	f->d.env = &f->env;
	f->d.config_path = f->conf;
	f->d.listen_fd = -1;
	if (drfd_add_features(&f->d) < 0)
		return -E2BIG;
	f->d.root = strdup(f->root);
	if (!f->d.root)
		return -ENOMEM;
	return drf_declared_load(&f->d.decl, f->conf, f->env.host, err, sizeof(err));
}

int fakedrfd_net(struct fakedrfd *f, uint64_t link_bits)
{
	faketc_init(&f->tc, link_bits);
	f->d.has_net = true;
	return drf_shaper_init(&f->d.net, FAKETC_IFNAME, f->env.tc, f->env.tc_ctx, f->env.netbpf,
			       f->env.netbpf_ctx, &f->fs, DRF_BPFFS "/drfd/test", 1, NULL);
}

int fakedrfd_start(struct fakedrfd *f)
{
	int r = drfd_start(&f->d, NULL);

	f->started = r == 0;
	return r;
}

int fakedrfd_restart(struct fakedrfd *f)
{
	int r = fakedrfd_reset(f);

	return r < 0 ? r : fakedrfd_start(f);
}

int fakedrfd_reset(struct fakedrfd *f)
{
	bool net = f->d.has_net;
	char err[1024];
	int r;

	drfd_free(&f->d);
	memset(&f->d, 0, sizeof(f->d));
	f->started = false;
	f->d.env = &f->env;
	f->d.config_path = f->conf;
	f->d.listen_fd = -1;
	if (drfd_add_features(&f->d) < 0)
		return -E2BIG;
	f->d.root = strdup(f->root);
	if (!f->d.root)
		return -ENOMEM;
	r = drf_declared_load(&f->d.decl, f->conf, f->env.host, err, sizeof(err));
	if (r == 0 && net) {
		f->d.has_net = true;
		r = drf_shaper_init(&f->d.net, FAKETC_IFNAME, f->env.tc, f->env.tc_ctx,
				    f->env.netbpf, f->env.netbpf_ctx, &f->fs, DRF_BPFFS "/drfd/test", 1,
				    NULL);
	}
	return r;
}

void fakedrfd_advance(struct fakedrfd *f, uint64_t usec)
{
	f->now.mono += usec;
	f->now.real += usec;
}

int fakedrfd_put(struct fakedrfd *f, const char *cg, const char *file, const char *val)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s", cg, file);
	return fakecg_put(f->fs.rootfd, p, val);
}

const char *fakedrfd_get(struct fakedrfd *f, const char *cg, const char *file)
{
	static char buf[4096];

	if (cgfs_read(&f->fs, cg, file, buf, sizeof(buf)) < 0)
		buf[0] = '\0';
	return buf;
}

void fakedrfd_teardown(struct fakedrfd *f)
{
	drfd_free(&f->d);
	cgfs_close(&f->fs);
	fakecg_teardown(f->dir);
}

int fakeplan_map(struct fakeplan *p, const struct drf_io_target *io)
{
	struct drf_plan_input in = { .decl = &p->decl, .io = io };
	struct drf_plan n;
	int r = drf_plan_build(&in, &p->eng, &n);

	if (r < 0)
		return r;
	drf_plan_free(&p->plan);
	p->plan = n;
	return 0;
}

int fakeplan_load(struct fakeplan *p, const char *path, const struct drf_io_target *io, char *err,
		  size_t len)
{
	int r;

	memset(p, 0, sizeof(*p));
	r = drf_declared_load(&p->decl, path, &drf_host_real, err, len);
	if (r < 0)
		return r;
	r = drf_engine_init(&p->eng);
	if (r == 0)
		r = fakeplan_map(p, io);
	if (r < 0) {
		snprintf(err, len, "%s: cannot plan: %s", path, strerror(-r));
		fakeplan_free(p);
	}
	return r;
}

void fakeplan_free(struct fakeplan *p)
{
	drf_plan_free(&p->plan);
	drf_engine_free(&p->eng);
	drf_declared_free(&p->decl);
}

void fakedrfd_bare(struct drfd *d, struct drfd_env *env, struct cgfs *fs)
{
	*env = (struct drfd_env){ .clock = &drf_clock_system, .host = &drf_host_real, .fs = fs };
	d->env = env;
	d->fs = fs;
}

int fakedrfd_plan(struct drfd *d)
{
	struct drf_plan_input in = { .decl = &d->decl, .io = d->has_io ? &d->io : NULL };
	struct drf_plan p;
	int r = d->engine.buf || d->engine.shares ? 0 : drf_engine_init(&d->engine);

	if (r == 0)
		r = drf_plan_build(&in, &d->engine, &p);
	if (r < 0)
		return r;
	drf_plan_free(&d->plan);
	d->plan = p;
	return 0;
}

int fakedrfd_etcd_open(void *ctx, const struct etcd_config *c, struct sd_event *event,
		       struct etcd **ret, char *err, size_t len)
{
	(void)c;
	(void)event;
	(void)err;
	(void)len;
	return fakeetcd_connect(ctx, ret);
}

static int running_spawn(void *ctx, const struct cgfs *cfs, const char *cg,
			 const struct drf_task *t, const struct drf_knobs *limits, int dirfd,
			 const char *tdir, pid_t *ret)
{
	char p[4096];

	(void)ctx;
	(void)t;
	(void)limits;
	(void)dirfd;
	(void)tdir;
	snprintf(p, sizeof(p), "%s/cgroup.events", cg);
	*ret = 0;
	return fakecg_put(cfs->rootfd, p, "populated 1\n");
}

static void running_reap(void *ctx, pid_t pid)
{
	(void)ctx;
	(void)pid;
}

const struct drf_spawn_ops fakedrfd_running_ops = { running_spawn, running_reap };
