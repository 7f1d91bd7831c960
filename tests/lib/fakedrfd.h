/* SPDX-License-Identifier: MIT */
/*
 * drfd over fakes, for tests and benchmarks: the daemon (agent/daemon) with an
 * environment of recording ops: the fake cgroup tree (fakecg.h) under the
 * cgroupfs recorder, which counts every change; the fake tc kernel
 * (faketc.h); the BPF recorders for the network programs and the usage
 * probes; a fake clock the test moves; no tasks unless the test gives spawn
 * ops. drfd_start(), drfd_reload() and drfd_tick() then run as in the daemon,
 * and a test asserts what they wrote.
 */
#ifndef DRF_FAKEDRFD_H
#define DRF_FAKEDRFD_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon.h"
#include "faketc.h"

struct fakedrfd {
	char dir[64], root[128], conf[256], statedir[256];
	struct cgfs fs;
	struct cgfs_recorder rec;       /* rec.changes: writes, mkdirs and rmdirs so far */
	struct drf_fake_clock now;
	struct drf_clock clock;
	struct faketc tc;
	struct drf_netbpf_recorder bpf;
	struct drf_probe_recorder probes;
	struct drfd_env env;
	struct drfd d;
	bool started;
};

/*
 * A fresh fake tree and state dir, and main's config: "[agent]" with
 * cgroup-root and state-dir set to the fakes', then text (more keys of
 * [agent], [capacity], tenants). The declared plan is loaded; nothing runs.
 * 0 or -errno.
 */
int fakedrfd_setup(struct fakedrfd *f, const char *agent, const char *text);
/* Writes the config again (for a reload). */
int fakedrfd_write(struct fakedrfd *f, const char *agent, const char *text);
/* Network shaped on the fake veth0 (the config names it): the shaper over faketc. */
int fakedrfd_net(struct fakedrfd *f, uint64_t link_bits);
/* drfd_start(); 0 or -errno. */
int fakedrfd_start(struct fakedrfd *f);
/*
 * A restart: the daemon stops (freed, its limits and state files left in
 * place) and a new one starts on the same tree, state dir and config, its
 * network too if the first one shaped it. 0 or -errno.
 */
int fakedrfd_restart(struct fakedrfd *f);
/* The same, up to the start: the new daemon loaded, not started (fakedrfd_start()). */
int fakedrfd_reset(struct fakedrfd *f);
/* The clock moves by usec; the next tick sees it. */
void fakedrfd_advance(struct fakedrfd *f, uint64_t usec);
/* A cgroup file of the fake tree, as the kernel would show it (cpu.stat, ...). */
int fakedrfd_put(struct fakedrfd *f, const char *cg, const char *file, const char *val);
/* The value of a knob file as read back ("" if it cannot be read). */
const char *fakedrfd_get(struct fakedrfd *f, const char *cg, const char *file);
void fakedrfd_teardown(struct fakedrfd *f);

/*
 * For tests of one part of the daemon (usage, metrics, the socket) over a
 * drfd they fill in by hand: the environment (fs, the system's clock and
 * host, nothing else), and the plan in force of d->decl (declared demands,
 * no tasks), as drfd_start() would put it in force. 0 or -errno.
 */
/*
 * A fleet node's env.etcd_open onto the fake etcd (ctx: its struct fakeetcd),
 * and env.spawn ops whose tasks run and never end (their cgroup populated):
 * a node that takes fleet tasks, over fakes.
 */
int fakedrfd_etcd_open(void *ctx, const struct etcd_config *c, struct sd_event *event,
		       struct etcd **ret, char *err, size_t len);
extern const struct drf_spawn_ops fakedrfd_running_ops;

void fakedrfd_bare(struct drfd *d, struct drfd_env *env, struct cgfs *fs);
int fakedrfd_plan(struct drfd *d);

/*
 * A config's plan in force as the daemon would build it (declared demands, no
 * tasks), for tests of one backend: load, then hand plan to the reconciler or
 * the shaper. io: the io target (NULL: none). 0 or -errno with why in err.
 */
struct fakeplan {
	struct drf_declared decl;
	struct drf_plan plan;
	struct drf_engine eng;
};
int fakeplan_load(struct fakeplan *p, const char *path, const struct drf_io_target *io, char *err,
		  size_t len);
/* The plan again for io, e.g. once the device's scheduler is known. */
int fakeplan_map(struct fakeplan *p, const struct drf_io_target *io);
void fakeplan_free(struct fakeplan *p);

#endif
