/* SPDX-License-Identifier: MIT */
/*
 * The cgroup v2 layer. Every access is relative to the agent's root (an open
 * directory fd), resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_XDEV) so that nothing outside the root and its mount can be
 * reached, and goes through an ops table:
 * the real one, or a recording one (dry-run, tests) that can also inject
 * failures. Functions return 0 (or a count) or a negative errno; nothing here
 * logs.
 */
#ifndef DRF_CGROUPFS_H
#define DRF_CGROUPFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "fault.h"

/* Controllers drfd may enable, as bits. */
enum cgfs_ctrl {
	CGFS_CPU = 1 << 0,
	CGFS_MEMORY = 1 << 1,
	CGFS_IO = 1 << 2,
	CGFS_PIDS = 1 << 3,
};
#define CGFS_NCTRL 4

const char *cgfs_ctrl_name(unsigned bit);
/* Parses "cpu io memory ..." into bits; names drfd does not use are ignored. */
unsigned cgfs_parse_ctrls(const char *s);

/* A change of one file, in an apply (below). */
struct cgfs_change {
	const char *file;
	const char *val;
};

/*
 * Where an apply's outcome goes: fn(data, cg, err) once, from the event loop
 * (or from within apply itself, for a backend that makes its changes at
 * once), with err 0 or the -errno of the apply (no change after the one that
 * failed was made). fn must not call back into the backend: it notes the
 * outcome for later.
 */
struct cgfs_done {
	void (*fn)(void *data, const char *cg, int err);
	void *data;
};

struct cgfs_ops {
	const char *name;
	/* Reads a whole small file into buf (NUL-terminated); returns its length. */
	ssize_t (*read)(void *ctx, int dirfd, const char *path, char *buf, size_t len);
	/* Writes val in one write(2): 0, or -errno (-EIO on a short write). */
	int (*write)(void *ctx, int dirfd, const char *path, const char *val);
	int (*mkdir)(void *ctx, int dirfd, const char *path);
	int (*rmdir)(void *ctx, int dirfd, const char *path);
	/* The cgroup id of the directory (its inode number on cgroup2). */
	int (*id)(void *ctx, int dirfd, const char *path, uint64_t *ret);
	/*
	 * A file held open to be read each tick (a tenant's counters): open
	 * returns a read-only fd, pread reads the whole file from its start as
	 * read does (path names it, for the recorder), close closes it. On a
	 * cgroup removed since the open, pread fails with -ENODEV.
	 */
	int (*open)(void *ctx, int dirfd, const char *path);
	ssize_t (*pread)(void *ctx, int fd, const char *path, char *buf, size_t len);
	void (*close)(void *ctx, int fd);
	/*
	 * Change notification (inotify) of files that announce their changes
	 * (memory.events: "a value change in this file generates a file
	 * modified event"): watch_init returns an fd that never blocks,
	 * watch_add a watch descriptor for path, watch_rm removes one, and
	 * watch_read stores up to n watch descriptors whose file changed since
	 * the last call (-1 for a lost event: anything may have changed) and
	 * returns how many, 0 when none.
	 */
	int (*watch_init)(void *ctx);
	int (*watch_add)(void *ctx, int wfd, int dirfd, const char *path);
	void (*watch_rm)(void *ctx, int wfd, int wd);
	ssize_t (*watch_read)(void *ctx, int wfd, int *wds, size_t n);
	/*
	 * Optional (NULL: the changes are writes, one at a time): cg made if
	 * create (below a parent that exists or whose apply came before), and
	 * the changes, in order, as one operation that completes later (the
	 * slice ops: one D-Bus call, whose reply the event loop reads). 0: under
	 * way, done->fn follows; -EAGAIN: as many under way as the backend
	 * takes (again after a done); another -errno: nothing was sent.
	 */
	int (*apply)(void *ctx, int dirfd, const char *cg, bool create,
		     const struct cgfs_change *ch, size_t n, const struct cgfs_done *done);
	/*
	 * The child cgroups of the cgroup at path ("" the root): fn(data, NAME)
	 * for each of its subdirectories (symbolic links are not followed), in
	 * the directory's order, until fn returns non-zero, which is returned;
	 * 0 once every child was given, or -errno. Optional: NULL lists none
	 * (cgfs_children()).
	 */
	int (*children)(void *ctx, int dirfd, const char *path,
			int (*fn)(void *data, const char *name), void *data);
};

extern const struct cgfs_ops cgfs_real_ops;

/* Operations, as bits, for the recorder's fault injection. */
enum cgfs_op {
	CGFS_OP_READ = 1 << 0,
	CGFS_OP_WRITE = 1 << 1,
	CGFS_OP_MKDIR = 1 << 2,
	CGFS_OP_RMDIR = 1 << 3,
	CGFS_OP_ID = 1 << 4,
	CGFS_OP_WATCH = 1 << 5,
	CGFS_OP_CHILDREN = 1 << 6,
};

/*
 * Records every change (write, mkdir, rmdir) as a line "write PATH VALUE",
 * "mkdir PATH", "rmdir PATH", with PATH absolute; passes reads, and changes too
 * if pass_changes, to the inner ops. Fault injection (fault.h): the
 * operations in fault.ops (0: all) on paths ending in fault.path (NULL: any)
 * fail with fault.err; with fail_short, such a write first passes half of its
 * value on and then fails with -EIO, as a short write(2) would leave it.
 * fault.hits counts the failures injected, so a test can tell that its fault
 * was reached.
 */
struct cgfs_recorder {
	const struct cgfs_ops *inner;
	void *inner_ctx;
	bool pass_changes;
	const char *root;  /* printed before each relative path */
	FILE *out;         /* where lines go; NULL: only counted */
	size_t changes;    /* lines recorded */
	struct drf_fault fault; /* ops: CGFS_OP_* bits; path: a suffix of the path */
	bool fail_short;
};

extern const struct cgfs_ops cgfs_recording_ops;

struct cgfs {
	int rootfd;
	char *root; /* absolute path of the agent's root */
	const struct cgfs_ops *ops;
	void *ctx;
	bool created; /* cgfs_open made the root: the agent removes it if it cannot start */
};

/*
 * Opens the agent's root at the absolute path root, creating it (one level:
 * its parent must exist) if create is set. Returns -ENOTDIR, -ENOENT, ... or 0.
 */
int cgfs_open(struct cgfs *c, const char *root, bool create, const struct cgfs_ops *ops,
	      void *ctx);
/*
 * A root that does not exist (yet): no fd; for dry runs with a recorder whose
 * inner ops are NULL, so that every read finds nothing and every change is
 * only recorded.
 */
int cgfs_open_virtual(struct cgfs *c, const char *root, const struct cgfs_ops *ops, void *ctx);
void cgfs_close(struct cgfs *c);

/*
 * Reads or writes FILE in the cgroup CG (relative to the root; "" is the root).
 * cgfs_read trims the trailing newline and returns the length.
 */
ssize_t cgfs_read(const struct cgfs *c, const char *cg, const char *file, char *buf, size_t len);
int cgfs_write(const struct cgfs *c, const char *cg, const char *file, const char *val);

/*
 * FILE in CG read through a file held open in *fd (-1: not open yet; opened
 * here and kept): one pread(2) a read where cgfs_read() makes four calls. A
 * failed read closes the file (-1 again: the next read opens it anew), so
 * that a cgroup removed and made again is read afresh; -ENODEV says the
 * cgroup was removed since the open. Where no more files can be open
 * (EMFILE, ENFILE) *fd becomes CGFS_FD_UNHELD and reads go through
 * cgfs_read(). Trims the trailing newline, as cgfs_read().
 */
#define CGFS_FD_UNHELD (-2)
ssize_t cgfs_read_held(const struct cgfs *c, int *fd, const char *cg, const char *file, char *buf,
		       size_t len);
/* Closes a file cgfs_read_held() holds; *fd becomes -1. */
void cgfs_release(const struct cgfs *c, int *fd);

/*
 * Change notification of FILE in CG (see watch_add in struct cgfs_ops):
 * cgfs_watch_init() makes the notification fd (or -errno), cgfs_watch() adds
 * a watch and returns its descriptor, cgfs_unwatch() removes it,
 * cgfs_watch_read() is watch_read, cgfs_watch_close() closes the fd.
 */
int cgfs_watch_init(const struct cgfs *c);
int cgfs_watch(const struct cgfs *c, int wfd, const char *cg, const char *file);
void cgfs_unwatch(const struct cgfs *c, int wfd, int wd);
ssize_t cgfs_watch_read(const struct cgfs *c, int wfd, int *wds, size_t n);
void cgfs_watch_close(const struct cgfs *c, int wfd);

/* Whether c's changes complete later, through cgfs_apply() (see apply in struct cgfs_ops). */
bool cgfs_async(const struct cgfs *c);
/* apply of c's ops: -EOPNOTSUPP for ops that have none. */
int cgfs_apply(const struct cgfs *c, const char *cg, bool create, const struct cgfs_change *ch,
	       size_t n, const struct cgfs_done *done);

/* Creates CG and any missing parents below the root. 0 if it already existed. */
int cgfs_mkdir_p(const struct cgfs *c, const char *cg);

/* Removes CG if it holds no processes (cgroup.events "populated 0"): else -EBUSY. */
int cgfs_remove(const struct cgfs *c, const char *cg);

/* Bits of the controllers listed in CG's cgroup.controllers / cgroup.subtree_control. */
int cgfs_controllers(const struct cgfs *c, const char *cg, unsigned *ret);
int cgfs_subtree_control(const struct cgfs *c, const char *cg, unsigned *ret);

/*
 * Makes CG's cgroup.subtree_control enable exactly `want` of the controllers in
 * `managed` (others are left as they are): one write of "+a -b ...", only if
 * something changes. Returns 1 if it wrote, 0 if nothing to do, or -errno.
 */
int cgfs_set_subtree(const struct cgfs *c, const char *cg, unsigned want, unsigned managed);

/*
 * The cgroup id of CG, as BPF sees it (bpf_skb_ancestor_cgroup_id(),
 * bpf_get_current_cgroup_id()): the inode number of its directory.
 */
int cgfs_id(const struct cgfs *c, const char *cg, uint64_t *ret);

/* Number of processes in CG (lines of cgroup.procs), or -errno. */
int cgfs_nprocs(const struct cgfs *c, const char *cg);

/*
 * fn(data, NAME) for each child cgroup of CG ("" the root), until fn returns
 * non-zero, which is returned; 0 once all were given, or -errno. Ops without
 * a children op list none: 0 at once.
 */
int cgfs_children(const struct cgfs *c, const char *cg, int (*fn)(void *data, const char *name),
		  void *data);

/*
 * Processes of CG's whole subtree. On cgroup v2 a cgroup's cgroup.procs lists
 * only the processes of that cgroup: those of its child cgroups (a service
 * with Slice=, a container, a scope) are in theirs. The walk is bounded: at
 * most max cgroups (CG included) are read, so that a subtree of thousands
 * costs no more than max reads.
 */
#define CGFS_TREE_MAX 1024
struct cgfs_tree_procs {
	int procs;              /* processes in the cgroups walked */
	size_t cgroups;         /* cgroups walked, CG included */
	bool capped;            /* some were not walked (past max, or not listed): procs is a
				 * lower bound */
};
/*
 * Counts into *ret: 0, or -errno when CG's own cgroup.procs cannot be read
 * (-ENOENT: no such cgroup); a cgroup below that vanishes meanwhile is left
 * out. max 0 is taken as 1 (CG alone).
 */
int cgfs_nprocs_tree(const struct cgfs *c, const char *cg, size_t max,
		     struct cgfs_tree_procs *ret);

/* NULL if path is a safe relative cgroup path (no '/', '.', '..', empty parts). */
const char *cgfs_path_problem(const char *path);

#endif
