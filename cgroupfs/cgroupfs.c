// SPDX-License-Identifier: MIT
#include "cgroupfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault.h"
#include "fileio.h"
#include "keyfile.h"
#include "record.h"

static const char *const ctrl_names[CGFS_NCTRL] = { "cpu", "memory", "io", "pids" };

const char *cgfs_ctrl_name(unsigned bit)
{
	for (int i = 0; i < CGFS_NCTRL; i++)
		if (bit == 1u << i)
			return ctrl_names[i];
	return "?";
}

unsigned cgfs_parse_ctrls(const char *s)
{
	unsigned bits = 0;

	while (*s) {
		size_t n;

		while (*s == ' ' || *s == '\n')
			s++;
		n = strcspn(s, " \n");
		for (int i = 0; i < CGFS_NCTRL; i++)
			if (n == strlen(ctrl_names[i]) && strncmp(s, ctrl_names[i], n) == 0)
				bits |= 1u << i;
		s += n;
	}
	return bits;
}

const char *cgfs_path_problem(const char *path)
{
	const char *p = path;

	if (!*path)
		return "is empty";
	if (*path == '/')
		return "is absolute";
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 0)
			return "has an empty component";
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return "contains '.' or '..'";
		p += n;
		if (*p == '/' && *++p == '\0')
			return "has an empty component";
	}
	return NULL;
}

static int open_beneath(int dirfd, const char *path, int flags)
{
	return drf_open_beneath(dirfd, path, flags, 0);
}

/*
 * The whole file open as fd from offset 0 into buf (NUL-terminated). A cgroup
 * file is a seq_file that gives all it has, up to what is asked, in one read:
 * a read that does not fill buf has reached the end, and only one that fills
 * it is followed by more (where drf_read_full() would read again to see 0).
 */
static ssize_t read_whole(int fd, char *buf, size_t len)
{
	size_t got = 0;

	if (len == 0)
		return -EINVAL;
	while (got < len - 1) {
		ssize_t n = pread(fd, buf + got, len - 1 - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
		if (n == 0 || got < len - 1)
			break;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

static ssize_t real_read(void *ctx, int dirfd, const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	(void)ctx;
	if (len == 0)
		return -EINVAL;
	fd = open_beneath(dirfd, path, O_RDONLY);
	if (fd < 0)
		return fd;
	n = read_whole(fd, buf, len);
	close(fd);
	return n;
}

static int real_open(void *ctx, int dirfd, const char *path)
{
	(void)ctx;
	return open_beneath(dirfd, path, O_RDONLY);
}

static ssize_t real_pread(void *ctx, int fd, const char *path, char *buf, size_t len)
{
	(void)ctx;
	(void)path;
	return read_whole(fd, buf, len);
}

static void real_close(void *ctx, int fd)
{
	(void)ctx;
	close(fd);
}

static int real_watch_init(void *ctx)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	(void)ctx;
	return fd < 0 ? -errno : fd;
}

/*
 * inotify_add_watch() takes a path, not a directory fd: the file is opened
 * beneath the root (O_PATH) and watched through /proc/self/fd, so that the
 * watch too stays within the root.
 */
static int real_watch_add(void *ctx, int wfd, int dirfd, const char *path)
{
	char proc[64];
	int fd = open_beneath(dirfd, path, O_PATH), wd;

	(void)ctx;
	if (fd < 0)
		return fd;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(wfd, proc, IN_MODIFY);
	wd = wd < 0 ? -errno : wd;
	close(fd);
	return wd;
}

static void real_watch_rm(void *ctx, int wfd, int wd)
{
	(void)ctx;
	inotify_rm_watch(wfd, wd);
}

static ssize_t real_watch_read(void *ctx, int wfd, int *wds, size_t n)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	size_t got = 0;
	bool lost = false;

	(void)ctx;
	for (;;) {
		ssize_t len = read(wfd, buf, sizeof(buf));

		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0 && errno == EAGAIN)
			break;
		if (len <= 0)
			return len < 0 ? -errno : (ssize_t)got;
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if (ev->mask & IN_Q_OVERFLOW)
				lost = true;
			else if ((ev->mask & IN_MODIFY) && got < n)
				wds[got++] = ev->wd;
			else if (ev->mask & IN_MODIFY)
				lost = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	if (lost && n > 0) {
		wds[0] = -1;
		got = 1;
	}
	return (ssize_t)got;
}

static int real_write(void *ctx, int dirfd, const char *path, const char *val)
{
	size_t n = strlen(val);
	ssize_t w;
	int fd, err = 0;

	(void)ctx;
	fd = open_beneath(dirfd, path, O_WRONLY);
	if (fd < 0)
		return fd;
	/* cgroup files take one value per write(2); no retry loop on short writes. */
	do
		w = write(fd, val, n);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		err = -errno;
	else if ((size_t)w != n)
		err = -EIO;
	if (close(fd) < 0 && err == 0)
		err = -errno;
	return err;
}

/* mkdir (or rmdir) of the last component of path, in its parent opened beneath dirfd. */
static int at_parent(int dirfd, const char *path, bool remove)
{
	const char *name;
	int pfd, r;

	/* mkdirat/unlinkat have no RESOLVE_BENEATH: the parent opened beneath, then the act. */
	pfd = drf_open_parent_beneath(dirfd, path, &name);
	if (pfd < 0)
		return pfd;
	r = (remove ? unlinkat(pfd, name, AT_REMOVEDIR) : mkdirat(pfd, name, 0755)) < 0 ? -errno : 0;
	close(pfd);
	return r;
}

static int real_mkdir(void *ctx, int dirfd, const char *path)
{
	(void)ctx;
	return at_parent(dirfd, path, false);
}

static int real_rmdir(void *ctx, int dirfd, const char *path)
{
	(void)ctx;
	return at_parent(dirfd, path, true);
}

static int real_id(void *ctx, int dirfd, const char *path, uint64_t *ret)
{
	struct stat st;
	int fd, r = 0;

	(void)ctx;
	fd = open_beneath(dirfd, path[0] ? path : ".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else
		*ret = (uint64_t)st.st_ino;
	close(fd);
	return r;
}

/* Whether the entry de of dir is a directory: a child cgroup (a symbolic link is not). */
static bool is_subdir(DIR *dir, const struct dirent *de)
{
	struct stat st;

	if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
		return false;
	if (de->d_type != DT_UNKNOWN)
		return de->d_type == DT_DIR;
	/* A filesystem that does not fill d_type in (cgroupfs does; tmpfs too) */
	return fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode);
}

static int real_children(void *ctx, int dirfd, const char *path,
			 int (*fn)(void *data, const char *name), void *data)
{
	struct dirent *de;
	DIR *dir;
	int fd, r;

	(void)ctx;
	/* Opened beneath the root as every other access; readdir itself follows nothing. */
	fd = open_beneath(dirfd, path[0] ? path : ".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	dir = fdopendir(fd);
	if (!dir) {
		r = -errno;
		close(fd);
		return r;
	}
	for (;;) {
		errno = 0;
		de = readdir(dir);
		if (!de) {
			r = errno ? -errno : 0;
			break;
		}
		if (!is_subdir(dir, de))
			continue;
		r = fn(data, de->d_name);
		if (r)
			break;
	}
	closedir(dir);
	return r;
}

const struct cgfs_ops cgfs_real_ops = {
	.name = "real",
	.read = real_read,
	.write = real_write,
	.mkdir = real_mkdir,
	.rmdir = real_rmdir,
	.id = real_id,
	.open = real_open,
	.pread = real_pread,
	.close = real_close,
	.watch_init = real_watch_init,
	.watch_add = real_watch_add,
	.watch_rm = real_watch_rm,
	.watch_read = real_watch_read,
	.children = real_children,
};

/* A fault injected on op at path: its -errno (-EIO for a short write), else 0. */
static int rec_fault(struct cgfs_recorder *r, unsigned op, const char *path)
{
	int f = drf_fault_inject(&r->fault, op, 0, path);

	return f < 0 && r->fail_short && op == CGFS_OP_WRITE ? -EIO : f;
}

static void rec_line(struct cgfs_recorder *r, const char *what, const char *path, const char *val)
{
	drf_record(r->out, &r->changes, "%s %s/%s%s%s", what, r->root ? r->root : ".", path,
		   val ? " " : "", val ? val : "");
}

static ssize_t rec_read(void *ctx, int dirfd, const char *path, char *buf, size_t len)
{
	struct cgfs_recorder *r = ctx;
	int f = rec_fault(r, CGFS_OP_READ, path);

	if (f < 0)
		return f;
	if (!r->inner)
		return -ENOENT;
	return r->inner->read(r->inner_ctx, dirfd, path, buf, len);
}

static int rec_write(void *ctx, int dirfd, const char *path, const char *val)
{
	struct cgfs_recorder *r = ctx;
	int f = rec_fault(r, CGFS_OP_WRITE, path);

	if (f < 0 && r->fail_short && r->pass_changes && r->inner) {
		char half[256];

		snprintf(half, sizeof(half), "%.*s", (int)(strlen(val) / 2), val);
		rec_line(r, "write", path, half);
		r->inner->write(r->inner_ctx, dirfd, path, half);
	}
	if (f < 0)
		return f;
	rec_line(r, "write", path, val);
	return r->pass_changes && r->inner ? r->inner->write(r->inner_ctx, dirfd, path, val) : 0;
}

static int rec_mkdir(void *ctx, int dirfd, const char *path)
{
	struct cgfs_recorder *r = ctx;
	int f = rec_fault(r, CGFS_OP_MKDIR, path);

	if (f < 0)
		return f;
	rec_line(r, "mkdir", path, NULL);
	return r->pass_changes && r->inner ? r->inner->mkdir(r->inner_ctx, dirfd, path) : 0;
}

static int rec_rmdir(void *ctx, int dirfd, const char *path)
{
	struct cgfs_recorder *r = ctx;
	int f = rec_fault(r, CGFS_OP_RMDIR, path);

	if (f < 0)
		return f;
	rec_line(r, "rmdir", path, NULL);
	return r->pass_changes && r->inner ? r->inner->rmdir(r->inner_ctx, dirfd, path) : 0;
}

static int rec_id(void *ctx, int dirfd, const char *path, uint64_t *ret)
{
	struct cgfs_recorder *r = ctx;
	int f = rec_fault(r, CGFS_OP_ID, path);

	if (f < 0)
		return f;
	if (!r->inner)
		return -ENOENT;
	return r->inner->id(r->inner_ctx, dirfd, path, ret);
}

static int rec_open(void *ctx, int dirfd, const char *path)
{
	struct cgfs_recorder *r = ctx;
	int f = rec_fault(r, CGFS_OP_READ, path);

	if (f < 0)
		return f;
	if (!r->inner)
		return -ENOENT;
	return r->inner->open(r->inner_ctx, dirfd, path);
}

static ssize_t rec_pread(void *ctx, int fd, const char *path, char *buf, size_t len)
{
	struct cgfs_recorder *r = ctx;
	int f = rec_fault(r, CGFS_OP_READ, path);

	if (f < 0)
		return f;
	return r->inner->pread(r->inner_ctx, fd, path, buf, len);
}

static void rec_close(void *ctx, int fd)
{
	struct cgfs_recorder *r = ctx;

	if (r->inner)
		r->inner->close(r->inner_ctx, fd);
}

static int rec_watch_init(void *ctx)
{
	struct cgfs_recorder *r = ctx;
	int f = rec_fault(r, CGFS_OP_WATCH, NULL);

	if (f < 0)
		return f;
	return r->inner ? r->inner->watch_init(r->inner_ctx) : -ENOSYS;
}

static int rec_watch_add(void *ctx, int wfd, int dirfd, const char *path)
{
	struct cgfs_recorder *r = ctx;
	int f = rec_fault(r, CGFS_OP_WATCH, path);

	if (f < 0)
		return f;
	return r->inner->watch_add(r->inner_ctx, wfd, dirfd, path);
}

static void rec_watch_rm(void *ctx, int wfd, int wd)
{
	struct cgfs_recorder *r = ctx;

	r->inner->watch_rm(r->inner_ctx, wfd, wd);
}

static ssize_t rec_watch_read(void *ctx, int wfd, int *wds, size_t n)
{
	struct cgfs_recorder *r = ctx;
	int f = rec_fault(r, CGFS_OP_WATCH, NULL);

	if (f < 0)
		return f;
	return r->inner->watch_read(r->inner_ctx, wfd, wds, n);
}

static int rec_children(void *ctx, int dirfd, const char *path,
			int (*fn)(void *data, const char *name), void *data)
{
	struct cgfs_recorder *r = ctx;
	int f = rec_fault(r, CGFS_OP_CHILDREN, path);

	if (f < 0)
		return f;
	/* Without inner ops nothing exists, as for a read. */
	if (!r->inner)
		return -ENOENT;
	if (!r->inner->children)
		return 0;
	return r->inner->children(r->inner_ctx, dirfd, path, fn, data);
}

/*
 * Held files and watches exist only where the recorder has inner ops: without
 * them open and watch_init fail, so that pread, close and the other watch
 * calls are never reached.
 */
const struct cgfs_ops cgfs_recording_ops = {
	.name = "recording",
	.read = rec_read,
	.write = rec_write,
	.mkdir = rec_mkdir,
	.rmdir = rec_rmdir,
	.id = rec_id,
	.open = rec_open,
	.pread = rec_pread,
	.close = rec_close,
	.watch_init = rec_watch_init,
	.watch_add = rec_watch_add,
	.watch_rm = rec_watch_rm,
	.watch_read = rec_watch_read,
	.children = rec_children,
};

int cgfs_open(struct cgfs *c, const char *root, bool create, const struct cgfs_ops *ops,
	      void *ctx)
{
	bool made = false;
	int fd;

	if (root[0] != '/')
		return -EINVAL;
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		const char *slash = strrchr(root, '/');
		char parent[4096];
		int pfd, r;

		if ((size_t)(slash - root) >= sizeof(parent))
			return -ENAMETOOLONG;
		memcpy(parent, root, (size_t)(slash - root));
		parent[slash - root] = '\0';
		pfd = open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0)
			return -errno;
		r = ops->mkdir(ctx, pfd, slash + 1);
		close(pfd);
		if (r < 0 && r != -EEXIST)
			return r;
		made = r == 0;
		fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	c->root = strdup(root);
	if (!c->root) {
		close(fd);
		return -ENOMEM;
	}
	c->rootfd = fd;
	c->ops = ops;
	c->ctx = ctx;
	c->created = made;
	return 0;
}

int cgfs_open_virtual(struct cgfs *c, const char *root, const struct cgfs_ops *ops, void *ctx)
{
	c->root = strdup(root);
	if (!c->root)
		return -ENOMEM;
	c->rootfd = -1;
	c->ops = ops;
	c->ctx = ctx;
	return 0;
}

void cgfs_close(struct cgfs *c)
{
	if (!c || !c->root)
		return;
	if (c->rootfd >= 0)
		close(c->rootfd);
	free(c->root);
	c->root = NULL;
	c->rootfd = -1;
}

static int join(char *buf, size_t len, const char *cg, const char *file)
{
	int n;

	if (cg[0] && cgfs_path_problem(cg))
		return -EINVAL;
	if (strchr(file, '/') || file[0] == '.')
		return -EINVAL;
	n = cg[0] ? snprintf(buf, len, "%s/%s", cg, file) : snprintf(buf, len, "%s", file);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

ssize_t cgfs_read(const struct cgfs *c, const char *cg, const char *file, char *buf, size_t len)
{
	char path[4096];
	ssize_t n;
	int r = join(path, sizeof(path), cg, file);

	if (r < 0)
		return r;
	n = c->ops->read(c->ctx, c->rootfd, path, buf, len);
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return n;
}

ssize_t cgfs_read_held(const struct cgfs *c, int *fd, const char *cg, const char *file, char *buf,
		       size_t len)
{
	char path[4096];
	ssize_t n;
	int r;

	if (*fd == CGFS_FD_UNHELD)
		return cgfs_read(c, cg, file, buf, len);
	r = join(path, sizeof(path), cg, file);
	if (r < 0)
		return r;
	if (*fd < 0) {
		r = c->ops->open(c->ctx, c->rootfd, path);
		if (r == -EMFILE || r == -ENFILE) {
			*fd = CGFS_FD_UNHELD;
			return cgfs_read(c, cg, file, buf, len);
		}
		if (r < 0)
			return r;
		*fd = r;
	}
	n = c->ops->pread(c->ctx, *fd, path, buf, len);
	if (n < 0) {
		cgfs_release(c, fd);
		return n;
	}
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return n;
}

void cgfs_release(const struct cgfs *c, int *fd)
{
	if (*fd >= 0)
		c->ops->close(c->ctx, *fd);
	*fd = -1;
}

int cgfs_watch_init(const struct cgfs *c)
{
	return c->ops->watch_init(c->ctx);
}

int cgfs_watch(const struct cgfs *c, int wfd, const char *cg, const char *file)
{
	char path[4096];
	int r = join(path, sizeof(path), cg, file);

	return r < 0 ? r : c->ops->watch_add(c->ctx, wfd, c->rootfd, path);
}

void cgfs_unwatch(const struct cgfs *c, int wfd, int wd)
{
	if (wd >= 0)
		c->ops->watch_rm(c->ctx, wfd, wd);
}

ssize_t cgfs_watch_read(const struct cgfs *c, int wfd, int *wds, size_t n)
{
	return c->ops->watch_read(c->ctx, wfd, wds, n);
}

void cgfs_watch_close(const struct cgfs *c, int wfd)
{
	if (wfd >= 0)
		c->ops->close(c->ctx, wfd);
}

int cgfs_write(const struct cgfs *c, const char *cg, const char *file, const char *val)
{
	char path[4096];
	int r = join(path, sizeof(path), cg, file);

	return r < 0 ? r : c->ops->write(c->ctx, c->rootfd, path, val);
}

bool cgfs_async(const struct cgfs *c)
{
	return c->ops->apply != NULL;
}

int cgfs_apply(const struct cgfs *c, const char *cg, bool create, const struct cgfs_change *ch,
	       size_t n, const struct cgfs_done *done)
{
	if (!c->ops->apply)
		return -EOPNOTSUPP;
	/* "": the root itself, whose knobs may be set (it is never made). */
	if (*cg ? cgfs_path_problem(cg) != NULL : create)
		return -EINVAL;
	return c->ops->apply(c->ctx, c->rootfd, cg, create, ch, n, done);
}

/* mkdir of one prefix of cgfs_mkdir_p()'s path, through the ops (fault injection, dry runs). */
static int mkdir_prefix(void *ctx, const char *prefix)
{
	const struct cgfs *c = ctx;
	int r = c->ops->mkdir(c->ctx, c->rootfd, prefix);

	return r == -EEXIST ? 0 : r;
}

int cgfs_mkdir_p(const struct cgfs *c, const char *cg)
{
	if (cgfs_path_problem(cg))
		return -EINVAL;
	return drf_path_prefixes(cg, mkdir_prefix, (void *)c);
}

int cgfs_nprocs(const struct cgfs *c, const char *cg)
{
	char buf[65536];
	ssize_t n = cgfs_read(c, cg, "cgroup.procs", buf, sizeof(buf));
	int lines = 0;

	if (n < 0)
		return (int)n;
	for (ssize_t i = 0; i < n; i++)
		lines += buf[i] == '\n';
	return n > 0 ? lines + 1 : 0;
}

int cgfs_children(const struct cgfs *c, const char *cg, int (*fn)(void *data, const char *name),
		  void *data)
{
	if (cg[0] && cgfs_path_problem(cg))
		return -EINVAL;
	/* A backend that lists no children (yet): its cgroups count as leaves. */
	if (!c->ops->children)
		return 0;
	return c->ops->children(c->ctx, c->rootfd, cg, fn, data);
}

/* The subtree walk's queue: the cgroups found and not yet read, breadth first. */
struct tree_walk {
	char **q;
	size_t n, cap;          /* queued, and room for that many */
	size_t max;             /* cgroups the walk may read, its first included */
	const char *parent;     /* whose children are being listed */
	bool full;              /* max reached: nothing more is listed */
	bool capped;            /* some cgroup was left out: the count is a lower bound */
	int err;                /* -ENOMEM: the walk stops */
};

static int tree_take(void *data, const char *name)
{
	struct tree_walk *w = data;
	char *path;
	int n;

	/* Room for max cgroups in all: the first one is not queued. */
	if (w->n + 1 >= w->max) {
		w->full = w->capped = true;
		return 1;
	}
	n = w->parent[0] ? asprintf(&path, "%s/%s", w->parent, name) : asprintf(&path, "%s", name);
	if (n < 0) {
		w->err = -ENOMEM;
		return 1;
	}
	/* A path too long to be read, or a name that is not a cgroup's: not walked. */
	if (n >= 4096 || cgfs_path_problem(path)) {
		free(path);
		w->capped = true;
		return 0;
	}
	if (w->n == w->cap) {
		size_t nc = w->cap ? w->cap * 2 : 16;
		char **nq = realloc(w->q, nc * sizeof(*nq));

		if (!nq) {
			free(path);
			w->err = -ENOMEM;
			return 1;
		}
		w->q = nq;
		w->cap = nc;
	}
	w->q[w->n++] = path;
	return 0;
}

int cgfs_nprocs_tree(const struct cgfs *c, const char *cg, size_t max,
		     struct cgfs_tree_procs *ret)
{
	struct tree_walk w = { .max = max ? max : 1 };
	int n = cgfs_nprocs(c, cg), r;

	*ret = (struct cgfs_tree_procs){ 0 };
	if (n < 0)
		return n;
	ret->procs = n;
	ret->cgroups = 1;
	/* Breadth first: past the cap, what is left out is the deepest. */
	for (size_t i = 0; !w.err; i++) {
		const char *at = i == 0 ? cg : w.q[i - 1];

		if (i > 0) {
			n = cgfs_nprocs(c, at);
			/* Gone since it was listed, or threaded (its processes are its root's). */
			if (n > 0 && ret->procs <= INT_MAX - n)
				ret->procs += n;
			ret->cgroups++;
		}
		if (!w.full) {
			w.parent = at;
			r = cgfs_children(c, at, tree_take, &w);
			/* A cgroup that cannot be listed may have children: not counted. */
			if (r < 0 && r != -ENOENT)
				w.capped = true;
		}
		if (i >= w.n)
			break;
	}
	for (size_t i = 0; i < w.n; i++)
		free(w.q[i]);
	free(w.q);
	ret->capped = w.capped;
	return w.err;
}

int cgfs_remove(const struct cgfs *c, const char *cg)
{
	uint64_t populated;
	char buf[256];
	ssize_t n = cgfs_read(c, cg, "cgroup.events", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	/* "populated 1": processes here or below; never remove such a cgroup. */
	if (drf_kv_u64(buf, "populated", &populated) == 0 && populated)
		return -EBUSY;
	return c->ops->rmdir(c->ctx, c->rootfd, cg);
}

int cgfs_id(const struct cgfs *c, const char *cg, uint64_t *ret)
{
	const char *why = cg[0] ? cgfs_path_problem(cg) : NULL;

	if (why)
		return -EINVAL;
	return c->ops->id(c->ctx, c->rootfd, cg, ret);
}

static int read_ctrls(const struct cgfs *c, const char *cg, const char *file, unsigned *ret)
{
	char buf[512];
	ssize_t n = cgfs_read(c, cg, file, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	*ret = cgfs_parse_ctrls(buf);
	return 0;
}

int cgfs_controllers(const struct cgfs *c, const char *cg, unsigned *ret)
{
	return read_ctrls(c, cg, "cgroup.controllers", ret);
}

int cgfs_subtree_control(const struct cgfs *c, const char *cg, unsigned *ret)
{
	return read_ctrls(c, cg, "cgroup.subtree_control", ret);
}

int cgfs_set_subtree(const struct cgfs *c, const char *cg, unsigned want, unsigned managed)
{
	char cmd[128] = "";
	unsigned have = 0;
	int r = cgfs_subtree_control(c, cg, &have);

	/*
	 * Unreadable as missing: nothing enabled. Where the cgroup really is missing
	 * the write below fails with ENOENT all the same; a dry run over a tree that
	 * does not exist yet gets the whole "+..." line.
	 */
	if (r < 0 && r != -ENOENT)
		return r;
	for (int i = 0; i < CGFS_NCTRL; i++) {
		unsigned bit = 1u << i;

		if (!(managed & bit) || !(want & bit) == !(have & bit))
			continue;
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%s%c%s", cmd[0] ? " " : "",
			 (want & bit) ? '+' : '-', ctrl_names[i]);
	}
	if (!cmd[0])
		return 0;
	r = cgfs_write(c, cg, "cgroup.subtree_control", cmd);
	return r < 0 ? r : 1;
}
