/* SPDX-License-Identifier: MIT */
/*
 * The DRF task queue on the node: `drfctl submit` queues a command with a
 * resource vector for a tenant; each tick starts queued tasks in DRF order
 * (agent/core/taskq.h), each in its own cgroup TENANT-CGROUP/task-ID with
 * limits equal to its vector, and records how each ended.
 *
 * Persistence: one directory per task under STATE-DIR/ROOT-ESCAPED.tasks/ (0711,
 * like each task's directory: a submitter reaches its own output by path, and
 * nobody lists the others'), every file root's and 0600 but the output:
 *   ID/task      written at submit (atomically: the directory is renamed in),
 *                with the submitter's uid, gid and supplementary groups as the
 *                kernel gave them for its connection (SO_PEERCRED, SO_PEERGROUPS;
 *                a task file written before groups were recorded has no groups
 *                line: it runs with no supplementary group)
 *   ID/started   written by drfd once the supervisor runs
 *   ID/pid       written by the supervisor when it has started the command
 *   ID/exit      written by the supervisor when the command has ended
 *   ID/cancel    a cancel asked for while it ran (best effort: the kill and the
 *                `cancelled` at its end do not wait for it)
 *   ID/result    written by drfd when the task's cgroup is empty, or when it is
 *                cancelled while queued (which waits for it): final
 *   ID/stdout, ID/stderr   the command's output, owned by the submitter; with a
 *                cap (task-output-max, as in force when the task started), each
 *                holds at most its first CAP bytes, then the mark (DRF_TASK_MARK)
 *                once the command wrote more; the bytes dropped are in
 *                ID/exit and ID/result (stdout_dropped, stderr_dropped)
 * Every file is replaced atomically (write, fsync, rename, fsync the directory),
 * and opened beneath the state dir's fd, following no symlink (statedir.h). A
 * restarted drfd rebuilds the queue from these, in the state dir it checked at
 * start: running tasks are found by their cgroup and re-adopted, never killed;
 * a task directory or file that is not drfd's own is left alone.
 *
 * The supervisor (`drfd --task-supervisor DIR`, in taskrun.c) is started
 * straight into the task's cgroup (clone3 CLONE_INTO_CGROUP) with two fds from
 * drfd: the task's directory (DRF_SUPER_DIR_FD) and the task's text from drfd's
 * memory (DRF_SUPER_SPEC_FD, a pipe), so that it never takes whom to run as from
 * a file. It sets exactly the submitter's groups, gid and uid, runs the command,
 * waits for it and writes ID/exit, retrying while it cannot (a full disk: the
 * cgroup stays populated, so the task stays running, until it is written); drfd
 * notices that the cgroup is empty, reads it, and frees the task's resources.
 * On systemd slices the cgroup is a transient service's instead, started with
 * the same supervisor, fds and limits through systemd (drf_spawn_unit_ops).
 *
 * Idempotent submit: a task may carry a key chosen by the client; a submit with
 * the key of a task the same uid submitted that drfd still knows (queued,
 * running, or among the kept finished ones) queues nothing and answers that
 * task's id, so that a client whose reply was lost can retry.
 *
 * The task runs in the cwd it was submitted from (absolute, shorter than
 * PATH_MAX, kept whole), as its submitter; if that is gone or barred to it, the
 * task fails with why rather than run anywhere else.
 */
#ifndef DRF_TASKS_H
#define DRF_TASKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cgroupfs.h"
#include "config.h"
#include "clock.h"
#include "knobs.h"
#include "log.h"
#include "planner.h"
#include "proto.h"
#include "slice.h"

/*
 * Finished tasks kept per uid (their directories, output included, and their
 * keys); each uid's older ones are removed. Per uid, so that no user's submits
 * push another's results (and keys: a keyed retry would run twice) out.
 */
#define DRF_TASKS_HISTORY 200
/*
 * And of all uids together (a user's subordinate uids are several uids): past
 * it, the uids holding the most keep fewer, the newest of each, down to a level
 * that all of them fit in.
 */
#define DRF_TASKS_HISTORY_ALL 4096
/*
 * Bytes of a task's command that `drfctl tasks` shows (the words that fit
 * whole; the JSON says "command_cut"): a listing is rendered whole on drfd's
 * event loop, and a request may be 64 KiB.
 */
#define DRF_TASKS_SHOWN_MAX 1024
/*
 * Tasks not yet finished (queued or running) that drfd takes: of one uid, and
 * of all uids together; a submit over either is refused (DRF_TASKS_REFUSED),
 * queuing nothing. Each such task holds its request (up to DRF_REQ_MAX, 64 KiB)
 * in drfd's memory and a task file on root's disk, is reloaded after a restart,
 * and is scanned at every pick; a vector as small as --cpu 1e-12 fits the
 * capacity a trillion times over, so the vector bounds nothing. 256 is far more
 * than one user's work waiting on one node, and costs at most 16 MiB; 4096, the
 * cap of 16 such users, at most 256 MiB, and keeps a tick's picks cheap. Root
 * is held to the overall cap only (the operator, who may queue a large batch).
 */
#define DRF_TASKS_MAX_UID 256
#define DRF_TASKS_MAX 4096
/* Supplementary groups (the kernel's NGROUPS_MAX). */
#define DRF_TASK_GROUPS_MAX 65536
/* The supervisor's fds from drfd: the task's directory, and the task's text. */
#define DRF_SUPER_DIR_FD 3
#define DRF_SUPER_SPEC_FD 4

enum drf_task_state {
	DRF_TASK_QUEUED,
	DRF_TASK_STARTING,       /* picked: in the plan, its cgroup being made with its limits */
	DRF_TASK_RUNNING,
	DRF_TASK_DONE,
};

struct drf_task {
	uint64_t id;
	char tenant[DRF_TENANT_NAME_MAX + 1];
	char *cgroup;            /* its own: TENANT-CGROUP/task-ID */
	double vec[DRF_NRES];
	uid_t uid;
	gid_t gid;
	gid_t *groups;           /* supplementary, exactly the submitter's */
	size_t ngroups;
	char *key;               /* the client's idempotency key, or NULL */
	char *cwd;
	char **argv;             /* argc entries and NULL */
	size_t argc;
	uint64_t submitted, started, ended; /* CLOCK_REALTIME usec; 0: not yet */
	enum drf_task_state state;
	bool cancel;             /* asked for while running (kept here if its file cannot be) */
	bool readopted;          /* running when drfd started */
	/*
	 * Kept past the history limits while set (drf_tasks_hold): a fleet
	 * task whose end the fleet has not been told yet. Not saved.
	 */
	bool held;
	pid_t pid;               /* the supervisor, when drfd's own child (to reap); else 0 */
	/* done: */
	char result[16];         /* exited, killed, oom-killed, cancelled, failed, lost */
	int exit_code, signal;   /* -1 when none */
	double cpu_usec, memory_peak, oom_kills, utime_us, stime_us, maxrss_kb;
	char *error;             /* failed, lost: why */
	/*
	 * The cap on each of its stdout and stderr in bytes (0: none), set when it
	 * starts and handed to the supervisor in its text; and the bytes of each
	 * that are not in its file, as the supervisor counted them (-1: unknown:
	 * no cap, or no exit file).
	 */
	uint64_t output_max;
	int64_t dropped[2];
};

/*
 * The line the supervisor appends to a stdout or stderr file it stops writing:
 * printf'd with the bytes the file holds before it (the cap, or fewer when a
 * write failed). It comes on top of the cap.
 */
#define DRF_TASK_MARK "\n[drfd: output truncated at %llu bytes]\n"
/* The stream's bytes the supervisor's copier reads at a time. */
#define DRF_TASK_COPY_BUF 65536

/* The side effects beyond cgroupfs: processes. */
struct drf_spawn_ops {
	/*
	 * Starts the supervisor of task t, inside the cgroup cg (relative to fs's
	 * root), handing it dirfd (its directory, shown as dir) and t's text. 0 with
	 * its pid (0: not drfd's child, nothing to reap), or -errno. limits: the
	 * knob values the plan wants of cg (NULL: none known), for a spawn that
	 * makes cg itself and must make it with them.
	 */
	int (*spawn)(void *ctx, const struct cgfs *fs, const char *cg, const struct drf_task *t,
		     const struct drf_knobs *limits, int dirfd, const char *dir, pid_t *ret);
	/* Collects a supervisor drfd started if it has exited (never blocks). */
	void (*reap)(void *ctx, pid_t pid);
};

/* clone3 into the cgroup that the reconciler made (cgroupfs). */
extern const struct drf_spawn_ops drf_spawn_real_ops;

/*
 * Tenants as slices (cgroupfs/slice.h): the task's cgroup is that of a
 * transient service, TENANT-SLICE/drf-task-ID.service, which this spawn
 * starts through systemd with the task's limits as its properties (the
 * command never runs unlimited), OOMPolicy=continue, CollectMode=inactive-or-
 * failed (nothing left once it ended), and `drfd --task-supervisor-stdio DIR`
 * as its command, handed the task's text as its stdin and the task's
 * directory as its stdout (StandardInput/OutputFileDescriptor): the
 * supervisor runs as root outside drfd's sandbox, sets the submitter's
 * credentials as with clone3, and outlives drfd's restarts (the service is
 * not in drfd.service's cgroup). Its stderr is errfd (drfd's: the journal).
 */
struct drf_spawn_units {
	const struct cgfs_bus_ops *bus;
	void *bus_ctx;
	const char *exe;         /* the supervisor's binary: drfd's own */
	int errfd;
};
extern const struct drf_spawn_ops drf_spawn_unit_ops;

struct drf_tasks {
	const struct drf_logger *log;
	char dir[4096];          /* for people: where the output is */
	int dfd;                 /* the same, opened beneath the checked state dir */
	const struct cgfs *fs;
	const struct drf_spawn_ops *ops;
	void *ctx;
	const struct drf_clock *clock;
	struct drf_task *t;      /* by id */
	size_t n, cap;
	uint64_t generation;     /* the set of starting and running tasks changed */
	struct drf_plan_task *plan; /* what drf_tasks_plan() hands out */
	size_t plan_cap;
	uint64_t next_id;
	size_t history, history_all;
	uint64_t started_total, finished_total;
	/* Of the ends recorded since start, those with output dropped (dropped[] > 0). */
	uint64_t truncated_total;
	/* The cap a task started now gets (drfd.conf's task-output-max; 0: none). */
	uint64_t output_max;
	/*
	 * Tenants as slices: a task submitted now runs in TENANT-SLICE/drf-task-
	 * ID.service (drf_spawn_unit_ops), else in TENANT-CGROUP/task-ID.
	 */
	bool units;
	/* The last pick stopped at DRF_TASKS_PICK_STEP, the last launch at its time: more to do. */
	bool pick_more, launch_more;
};

/* What `drfctl submit` asks for; the daemon adds who asked (SO_PEERCRED). */
struct drf_task_req {
	char tenant[DRF_TENANT_NAME_MAX + 1];
	double vec[DRF_NRES];
	bool given[DRF_NRES];    /* on the command line; else the tenant's task-* value */
	uid_t uid;
	gid_t gid;
	const gid_t *groups;     /* SO_PEERGROUPS */
	size_t ngroups;
	const char *key;         /* NULL: none */
	const char *cwd;
	char **argv;
	size_t argc;
};

/* Outcomes of a refused request, for drfctl's exit code. */
enum {
	DRF_TASKS_REFUSED = 1,   /* bad input: unknown tenant, too large, ... */
	DRF_TASKS_FAILED = 2,    /* could not do it */
	DRF_TASKS_KNOWN = 3,     /* ok: the key's task is known; its id returned, nothing queued */
};

/*
 * Opens (creating) the queue directory dir, STATE-DIR/NAME, and loads it: tasks
 * with a result are finished, with `started` (or a populated cgroup) running,
 * re-adopted; the others queued. The state dir is checked as at drfd's start
 * (statedir.h): -EPERM, -ELOOP if it is not drfd's alone. 0 or -errno with why
 * in err.
 */
int drf_tasks_init(struct drf_tasks *q, const char *dir, const struct cgfs *fs,
		   const struct drf_spawn_ops *ops, void *ctx, const struct drf_clock *clock,
		   const struct drf_logger *log, char *err, size_t len);
void drf_tasks_free(struct drf_tasks *q);

/*
 * Queues a task. Returns 0 with its id, DRF_TASKS_KNOWN with the id of the task
 * the same uid submitted with the same key, or DRF_TASKS_REFUSED /
 * DRF_TASKS_FAILED with why in err; a refused or failed submit changes nothing.
 * Refused besides a bad vector or tenant: a cwd that is not absolute or is
 * PATH_MAX long or more, and a submit over DRF_TASKS_MAX_UID or DRF_TASKS_MAX.
 */
int drf_tasks_submit(struct drf_tasks *q, const struct drf_config *c,
		     const double capacity[DRF_NRES], const struct drf_task_req *req,
		     uint64_t *ret_id, char *err, size_t len);

/*
 * Whether a submit by uid would be under DRF_TASKS_MAX and DRF_TASKS_MAX_UID
 * now: a caller with tasks of its own to hand over (a fleet node's) waits
 * for room rather than have them refused.
 */
bool drf_tasks_room(const struct drf_tasks *q, uid_t uid);

/* Task id, or NULL (the tasks are kept in id order: O(log n)). */
const struct drf_task *drf_tasks_find(const struct drf_tasks *q, uint64_t id);

/* Sets or clears task id's held mark (struct drf_task): 0, or -ENOENT. */
int drf_tasks_hold(struct drf_tasks *q, uint64_t id, bool held);

/*
 * Cancels a queued or running task (root, or the uid that submitted it). A
 * running one is killed (cgroup.kill) and recorded `cancelled` when it ends,
 * also when its `cancel` file cannot be written (a full disk: the file only
 * carries the cancel across a restart). A queued one is cancelled only once its
 * `result` file is written, else it stays queued (DRF_TASKS_FAILED): a restarted
 * drfd would find it queued, and run it.
 */
int drf_tasks_cancel(struct drf_tasks *q, uint64_t id, uid_t who, char *err, size_t len);

/*
 * A task starts in three steps around the plan (planner.h): drf_tasks_pick()
 * takes queued tasks in DRF order while one fits and makes them `starting`;
 * drf_tasks_plan() hands the planner every starting and running task, whose
 * cgroup the plan then holds with limits at its vector; once the backends
 * made that true, drf_tasks_launch() starts each starting task's supervisor in
 * its cgroup, or fails it with why. drf_tasks_reap() first records the end of
 * every running task whose cgroup is empty; its cgroup leaves with the next
 * plan. generation changes whenever the starting and running tasks do.
 */
/*
 * A pass picks at most DRF_TASKS_PICK_STEP tasks, and a launch starts tasks
 * for at most DRF_TASKS_LAUNCH_USEC (at least one): the rest at the next
 * pass, so that a burst of tasks never holds drfd's loop.
 */
#define DRF_TASKS_PICK_STEP 16
#define DRF_TASKS_LAUNCH_USEC (20 * 1000ULL)
unsigned drf_tasks_reap(struct drf_tasks *q);
unsigned drf_tasks_pick(struct drf_tasks *q, const struct drf_config *c,
			const double capacity[DRF_NRES]);
/* The starting and running tasks, for the planner; valid until the next call. 0 or -ENOMEM. */
int drf_tasks_plan(struct drf_tasks *q, const struct drf_plan_task **ret, size_t *ret_n);
/*
 * Starts the starting tasks whose cgroup ready() says holds their limits, or
 * is to be made with them by the spawn (1, and the limits in *limits), fails
 * those it says cannot (< 0, why in its buffer), and leaves the others (0).
 * Returns the number started.
 */
unsigned drf_tasks_launch(struct drf_tasks *q,
			  int (*ready)(void *ctx, const char *cg, const struct drf_knobs **limits,
				       char *why, size_t len),
			  void *ctx);

/*
 * The queue for people (text) or programs (JSON), as viewer may see it (its
 * uid and groups, access.h): root sees every task whole; another user sees its
 * own tasks whole, the tasks of tenants it is an admin of whole, and of the
 * other tasks of tenants it is a member of all but what their submitter typed
 * or where: the command, the key, the supplementary groups and the error text
 * (which names the cwd) are left out (null in JSON, "-" in text). The id,
 * tenant, uid, gid, state, vector, times and result stay: they are what the
 * DRF order is made of. Tasks of other tenants are not listed, nor are those
 * tenants' counts. The text has every control character (newline included) of
 * a command's word or an error escaped (\xHH), so that no word can draw a row
 * of its own.
 */
void drf_tasks_render(const struct drf_tasks *q, const struct drf_config *c, bool json,
		      const struct drf_access_who *viewer, FILE *f);

/* STATE-PATH without ".state", plus ".tasks". */
int drf_tasks_dir(const char *state_path, char *ret, size_t len);

/*
 * Parses a task file (its id from its "id" line); -EINVAL if it does not parse:
 * a uid or gid that is not a plain number below (uid_t)-1, a cwd that is not
 * absolute or is PATH_MAX long or more, no command.
 */
int drf_tasks_parse_file(struct drf_task *t, char *text);
/* The task file's text (free()), which is also what the supervisor is handed. */
char *drf_tasks_text(const struct drf_task *t);
void drf_task_clear(struct drf_task *t);

/*
 * Who is at the other end of the unix socket fd, as the kernel recorded it
 * when it connected: uid and gid (SO_PEERCRED) and the supplementary groups
 * (SO_PEERGROUPS, in *groups, free()). 0 or -errno.
 */
int drf_peer_creds(int fd, uid_t *uid, gid_t *gid, gid_t **groups, size_t *ngroups);

/* The supervisor's writes of its pid and exit files, and its waits: real, or a test's. */
struct drf_super_io {
	int (*write)(void *ctx, int dirfd, const char *name, const char *text);
	void (*sleep_ms)(void *ctx, unsigned ms);
	void *ctx;
};
extern const struct drf_super_io drf_super_real_io;

/*
 * `drfd --task-supervisor DIR`: runs the task drfd handed over on fds
 * DRF_SUPER_DIR_FD and DRF_SUPER_SPEC_FD, waits for it, writes DIR/exit.
 */
int drf_task_supervise(const char *dir);
/*
 * `drfd --task-supervisor-stdio DIR`, as systemd starts it for
 * drf_spawn_unit_ops: the same with the task's text on stdin and its
 * directory on stdout, which are moved to those fds and replaced by
 * /dev/null.
 */
int drf_task_supervise_stdio(const char *dir);
/*
 * The same on given fds and io: the exit file is retried with back-off (0.1 s
 * doubling to 30 s) until written, as long as the directory exists. Returns
 * the supervisor's exit code (0: the exit file is written).
 *
 * With an output cap (the text's output-max), the command's stdout and stderr
 * are pipes, read by a copier process the supervisor forks, which runs with
 * the submitter's credentials (as the command would write them) and writes
 * each file up to the cap, then the mark, then reads and drops the rest,
 * counting it; so the command never blocks on a full pipe. A write that
 * fails (a full disk) ends that file's writing the same way (the mark tried
 * once): the task neither fails nor waits for it. The copier reads until no
 * process holds the pipes (a background process of the command's keeps them:
 * its output is kept, and the cgroup stays populated by it as before); with
 * unit, as systemd runs it (the service ends when the supervisor exits), only
 * until the command has exited and what it left in the pipes is read.
 */
int drf_task_supervise_fds(int dirfd, int specfd, const char *dir, const struct drf_super_io *io,
			   bool unit);

#endif
