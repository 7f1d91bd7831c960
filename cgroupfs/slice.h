/* SPDX-License-Identifier: MIT */
/*
 * The tenants as systemd slices: cgroupfs ops whose changes go through
 * systemd's D-Bus API, so that systemd stays the one writer of the tree it
 * owns (systemd.resource-control(5)), and whose reads are the cgroup files.
 *
 * The root is drf.slice's cgroup; a tenant's cgroup is its slice's
 * (unitname.h). A change of a cgroup file becomes runtime properties of the
 * cgroup's unit (cgfs_slice_props), a cgroup made or removed becomes a
 * transient slice started or stopped (only once no process and no active unit
 * is in it: stopping a slice stops its units), and a process moved into a tenant goes
 * into a transient scope in its slice (a slice holds no process of its own).
 * A task's cgroup is a transient service in its tenant's slice, which the
 * task queue starts (tasks.h): here its knobs are set as the service's
 * properties, its cgroup.kill is KillUnit, and it is never made by a mkdir.
 * systemd writes the cgroup files from those properties; the reconciler reads
 * them back as it does any cgroup's, and puts a value someone changed back
 * through systemd.
 *
 * The bus itself is an ops table: the real one (sdbus.c, sd-bus on systemd's
 * own socket) or a recording one for dry runs and tests, which can inject
 * failures.
 */
#ifndef DRF_SLICE_H
#define DRF_SLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cgroupfs.h"
#include "fault.h"

/* A unit property as systemd's D-Bus API types it. */
enum cgfs_prop_type {
	CGFS_PROP_U64,     /* t */
	CGFS_PROP_BOOL,    /* b */
	CGFS_PROP_STR,     /* s */
	CGFS_PROP_DEV_U64, /* a(st): one (device path, value) */
	CGFS_PROP_DEV_NONE, /* a(st): empty, which resets the list */
	CGFS_PROP_PID,     /* au: one pid */
	CGFS_PROP_FD,      /* h: the fd u, which systemd duplicates (a service's stdio) */
	CGFS_PROP_EXEC,    /* a(sasb): one command, s its path, argv its words; failure not ignored */
};

#define CGFS_PROP_STR_MAX 288
#define CGFS_PROPS_MAX 8
/* systemd's "infinity" of a limit (CGROUP_LIMIT_MAX, USEC_INFINITY). */
#define CGFS_PROP_INFINITY UINT64_MAX

struct cgfs_prop {
	const char *name;
	enum cgfs_prop_type type;
	uint64_t u;                  /* U64, BOOL, DEV_U64, PID */
	char s[CGFS_PROP_STR_MAX];   /* STR; DEV_U64's device path; EXEC's path */
	char *const *argv;           /* EXEC: its words, NULL-terminated (not copied) */
};

struct cgfs_bus_ops {
	const char *name;
	/*
	 * StartTransientUnit(unit, "fail", props) and waits for its job: 0, or
	 * -EEXIST if the unit was loaded already (a slice is started then,
	 * without props; any other unit is left as it is), or -errno.
	 */
	int (*start)(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n);
	/* SetUnitProperties(unit, runtime = true, props). */
	int (*set)(void *ctx, const char *unit, const struct cgfs_prop *p, size_t n);
	/* StopUnit(unit, "fail") and waits for its job. */
	int (*stop)(void *ctx, const char *unit);
	/*
	 * How many units in slice `unit` (its SliceOf) are active or on their
	 * way (not inactive, not failed), drfd's own slices not counted: 0 when
	 * the slice is not loaded. Stopping a slice stops every unit in it.
	 */
	int (*busy)(void *ctx, const char *unit);
	/* KillUnit(unit, "all", sig): every process of the unit gets sig (no job). */
	int (*kill)(void *ctx, const char *unit, int sig);
	/*
	 * Optional: start (as start above, but a slice loaded already gets the
	 * properties p too, then is started) or set, without waiting for the
	 * answer: fn(data, err) follows once systemd answered (a start: once its
	 * job is done), from the event loop the bus reads on (cgfs_bus_attach),
	 * or from within submit for a bus that answers at once. Many may be under
	 * way: 0, sent; -EAGAIN, as many under way as the bus takes (fn not
	 * called); another -errno, nothing sent (fn not called).
	 */
	int (*submit)(void *ctx, bool start, const char *unit, const struct cgfs_prop *p, size_t n,
		      void (*fn)(void *data, int err), void *data);
};

/* Submits under way at most, on the real bus. */
#define CGFS_BUS_INFLIGHT_MAX 128

/* The bus operations, as bits, for the recorder's fault injection. */
enum cgfs_bus_op {
	CGFS_BUS_START = 1 << 0,
	CGFS_BUS_SET = 1 << 1,
	CGFS_BUS_STOP = 1 << 2,
	CGFS_BUS_BUSY = 1 << 3,
	CGFS_BUS_KILL = 1 << 4,
};

/*
 * Records each call as a line "systemd start UNIT P=V ...", "systemd set UNIT
 * P=V ...", "systemd stop UNIT", "systemd kill UNIT SIG" and passes it to inner
 * if pass (tests); inner
 * NULL: every start finds no unit loaded. fault (fault.h): the operations in
 * fault.ops on units ending in fault.path fail with fault.err. A submit is
 * recorded as the start or set it is, passed to inner's submit, or made with
 * inner's start or set and answered at once (a fault too, as its outcome).
 */
struct cgfs_bus_recorder {
	const struct cgfs_bus_ops *inner;
	void *inner_ctx;
	FILE *out;        /* NULL: only counted */
	size_t calls;
	struct drf_fault fault;
};

extern const struct cgfs_bus_ops cgfs_bus_recording_ops;

/*
 * A connection to systemd's own socket (the manager's private bus, as
 * systemctl uses it as root), else to the system bus: 0 or -errno. It serves
 * cgfs_bus_real_ops with ctx *ret, and connects again in a child after
 * fork() or when systemd closed it (daemon-reexec); cgfs_bus_close() closes it.
 */
extern const struct cgfs_bus_ops cgfs_bus_real_ops;
int cgfs_bus_open(void **ret);
void cgfs_bus_close(void *bus);
/*
 * Reads the connection from the event loop between calls, from now on (and
 * after each reconnection): systemd sends every unit's signals on its private
 * socket, which would pile up unread. 0 or -errno.
 */
struct sd_event;
int cgfs_bus_attach(void *bus, struct sd_event *event);

/*
 * The slice ops' apply (struct cgfs_ops): a cgroup's changes as one call, the
 * properties of every file together: a transient slice started with them
 * (create), or SetUnitProperties. With a bus that has no submit, the call is
 * made and answered at once.
 */

/*
 * FILE = VAL of a unit's cgroup as properties (into p, at most max): the
 * number of them, -EINVAL for a value that does not parse, -EOPNOTSUPP for
 * a file that no property sets. cpu.weight (CPUWeight), cpu.max
 * (CPUQuotaPerSecUSec, CPUQuotaPeriodUSec; systemd writes the quota back as
 * per-second x period / 1 s, so the per-second value is rounded up),
 * memory.low/high/max/swap.max (MemoryLow/High/Max/SwapMax), io.weight
 * (IOWeight or IODeviceWeight; "MAJ:MIN default" resets IODeviceWeight to
 * none), io.bfq.weight (the same, as the IOWeight
 * that systemd maps to that BFQ weight), io.max (IO{Read,Write}{Bandwidth,
 * IOPS}Max for /dev/block/MAJ:MIN), cgroup.subtree_control ("+cpu -io":
 * CPUAccounting=yes, IOAccounting=no; what a slice passes down is systemd's
 * to decide from its members' properties).
 */
int cgfs_slice_props(const char *file, const char *val, struct cgfs_prop *p, size_t max);

/* The IOWeight (1..10000) that systemd writes as BFQ weight b (1..1000). */
uint64_t cgfs_bfq_to_io_weight(uint64_t b);

/* A property as "Name=value" (infinity as "infinity"), for records and logs. */
void cgfs_prop_format(const struct cgfs_prop *p, char *buf, size_t len);

/* The slice ops' state: reads from the files, changes through the bus. */
struct cgfs_slice {
	const struct cgfs_ops *fs;   /* the files: cgfs_real_ops, or a recorder's */
	void *fs_ctx;
	const struct cgfs_bus_ops *bus;
	void *bus_ctx;
};

extern const struct cgfs_ops cgfs_slice_ops;

/*
 * The unit whose cgroup is CG below drf.slice's ("" is drf.slice): a slice
 * of drfd's, or the service of a task, drf-task-ID.service, right below a
 * tenant's slice (tasks.h). 0, or -EPERM for one not drfd's.
 */
int cgfs_slice_unit(const char *cg, char *unit, size_t len);

/* Whether unit is a task's service (drf-task-ID.service, ID a decimal number). */
bool cgfs_slice_is_task_unit(const char *unit);

#endif
