// SPDX-License-Identifier: MIT
#include "histfile.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "statedir.h"
#include "vec.h"

/*
 * The history is read by `drfctl recommend` as any user: 0644 exactly, also
 * under the unit's UMask=0077, and for a file an older drfd made 0600 that way.
 */
static int make_readable(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if ((st.st_mode & 07777) != DRF_PUBLIC_FILE_MODE && fchmod(fd, DRF_PUBLIC_FILE_MODE) < 0)
		return -errno;
	return 0;
}

/* The last component of a path (the file's name in the state dir). */
static const char *base(const char *path)
{
	return strrchr(path, '/') + 1;
}

/* Opens a new, empty path with the header. */
static int start_file(struct drf_history_file *f)
{
	char head[512];
	int n = drf_hist_format_header(head, sizeof(head), f->step_s), r;

	if (n < 0)
		return n;
	f->fd = drf_at_open(f->dfd, base(f->path), O_WRONLY | O_APPEND | O_CREAT | O_TRUNC,
			    DRF_PUBLIC_FILE_MODE);
	if (f->fd < 0) {
		r = f->fd;
		f->fd = -1;
		return r;
	}
	r = make_readable(f->fd);
	if (r == 0)
		r = drf_write_all(f->fd, head, (size_t)n);
	if (r < 0) {
		drf_history_close(f);
		return r;
	}
	f->size = (uint64_t)n;
	return 0;
}

static int rotate(struct drf_history_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (renameat(f->dfd, base(f->path), f->dfd, base(f->old)) < 0 && errno != ENOENT)
		return -errno;
	return start_file(f);
}

int drf_history_open(struct drf_history_file *f, const char *path, unsigned step_s,
		     uint64_t cap)
{
	char head[512], first[512], why[1024];
	const char *slash = strrchr(path, '/'), *name;
	struct stat st;
	ssize_t k;
	int n;

	f->fd = -1;
	f->dfd = -1;
	f->cap = cap;
	f->step_s = step_s;
	if (strlen(path) >= sizeof(f->path) || !slash)
		return -ENAMETOOLONG;
	if (path != f->path)
		snprintf(f->path, sizeof(f->path), "%s", path);
	snprintf(f->old, sizeof(f->old), "%s.1", f->path);
	f->dfd = drf_statedir_open_parent(f->path, true, &name, why, sizeof(why));
	if (f->dfd < 0) {
		n = f->dfd;
		f->dfd = -1;
		return n;
	}
	f->fd = drf_at_open(f->dfd, name, O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK,
			    DRF_PUBLIC_FILE_MODE);
	if (f->fd < 0) {
		n = f->fd;
		drf_history_close(f);
		return n;
	}
	if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		drf_history_close(f);
		return -EINVAL;
	}
	n = make_readable(f->fd);
	if (n < 0) {
		drf_history_close(f);
		return n;
	}
	if (st.st_size == 0) {
		close(f->fd);
		f->fd = -1;
		return start_file(f);
	}
	/* Ours, with this step? Else start afresh, the old one kept as path.1. */
	n = drf_hist_format_header(head, sizeof(head), step_s);
	k = pread(f->fd, first, sizeof(first), 0);
	if (n < 0 || k < 0) {
		drf_history_close(f);
		return n < 0 ? n : -errno;
	}
	{
		const char *nl = memchr(head, '\n', (size_t)n);
		size_t hl = (size_t)(nl - head) + 1;

		if ((size_t)k < hl || memcmp(first, head, hl) != 0)
			return rotate(f);
	}
	f->size = (uint64_t)st.st_size;
	/* A line torn by a crash: end it, so that the next record starts a line of its own. */
	if (pread(f->fd, first, 1, st.st_size - 1) == 1 && first[0] != '\n') {
		int r = drf_write_all(f->fd, "\n", 1);

		if (r < 0) {
			drf_history_close(f);
			return r;
		}
		f->size++;
	}
	return 0;
}

int drf_history_append(struct drf_history_file *f, const char *buf, size_t len)
{
	int r;

	if (f->fd < 0)
		return -EBADF;
	if (f->size + len > f->cap / 2) {
		r = rotate(f);
		if (r < 0)
			return r;
	}
	r = drf_write_all(f->fd, buf, len);
	if (r < 0)
		return r;
	f->size += len;
	return 0;
}

void drf_history_close(struct drf_history_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (f->dfd >= 0)
		close(f->dfd);
	f->dfd = -1;
}

static struct drf_hist_acc *acc_of(struct drf_history *h, size_t hint, const char *name)
{
	size_t i = hint;

	if (i >= h->n || strcmp(h->name[i], name) != 0)
		for (i = 0; i < h->n && strcmp(h->name[i], name) != 0; i++)
			;
	if (i < h->n)
		return &h->acc[i];
	if (strlen(name) > DRF_HIST_NAME_MAX)
		return NULL;
	/* Each array its own capacity: one may have grown when the other could not. */
	if (DRF_VEC_GROW(h->name, &h->name_cap, h->n + 1) < 0 ||
	    DRF_VEC_GROW(h->acc, &h->acc_cap, h->n + 1) < 0)
		return NULL;
	snprintf(h->name[h->n], sizeof(h->name[0]), "%s", name);
	drf_hist_acc_reset(&h->acc[h->n]);
	return &h->acc[h->n++];
}

static void fail(struct drf_history *h, int r, const char *what)
{
	if (!h->failing)
		drf_log(h->log, LOG_WARNING, "usage history '%s': cannot %s: %s; `drfctl "
					     "recommend` will miss these minutes (retrying each "
					     "step)", h->f.path, what, strerror(-r));
	h->failing = true;
	drf_history_close(&h->f);
	h->open = false;
}

/* Appends the records of the step that ended, one write. */
static void flush(struct drf_history *h)
{
	size_t len = 0;
	char *buf;
	int r;

	if (h->n == 0)
		return;
	buf = malloc(h->n * DRF_HIST_LINE_MAX);
	if (!buf) {
		fail(h, -ENOMEM, "format the records");
		return;
	}
	for (size_t i = 0; i < h->n; i++) {
		if (!drf_hist_acc_any(&h->acc[i]))
			continue;
		r = drf_hist_format_rec(buf + len, DRF_HIST_LINE_MAX,
					(h->step + 1) * (int64_t)h->f.step_s, h->name[i], &h->acc[i]);
		if (r > 0)
			len += (size_t)r;
	}
	if (!h->open) {
		r = drf_history_open(&h->f, h->f.path, h->f.step_s, h->f.cap);
		if (r < 0) {
			fail(h, r, "open it");
			free(buf);
			return;
		}
		h->open = true;
	}
	r = len ? drf_history_append(&h->f, buf, len) : 0;
	free(buf);
	if (r < 0) {
		fail(h, r, "append to it");
		return;
	}
	if (h->failing)
		drf_log(h->log, LOG_INFO, "usage history '%s': writing again", h->f.path);
	h->failing = false;
}

void drf_history_init(struct drf_history *h, const char *path, const struct drf_logger *log)
{
	memset(h, 0, sizeof(*h));
	h->log = log;
	h->f.fd = -1;
	h->f.dfd = -1;
	h->f.step_s = DRF_HIST_STEP_S;
	h->f.cap = DRF_HIST_CAP_BYTES;
	h->step = -1;
	h->on = path && path[0] && strlen(path) < sizeof(h->f.path);
	if (h->on)
		snprintf(h->f.path, sizeof(h->f.path), "%s", path);
}

void drf_history_tick(struct drf_history *h, const struct drf_usage *u, uint64_t now_us)
{
	int64_t now_s = (int64_t)(now_us / DRF_USEC_PER_SEC), step;

	if (!h->on || now_s <= 0)
		return;
	step = now_s / (int64_t)h->f.step_s;
	if (step != h->step) {
		if (h->step >= 0)
			flush(h);
		h->n = 0;
		h->step = step;
	}
	for (size_t i = 0; i < u->n; i++) {
		const struct drf_tenant_use *t = &u->t[i];
		struct drf_hist_acc *a = acc_of(h, i, u->name[i]);

		if (a)
			drf_hist_acc_add(a, t->use_tick, t->gauge[DRF_GAUGE_MEM_CURRENT],
					 t->gauge[DRF_GAUGE_MEM_WORKING_SET]);
	}
}

void drf_history_free(struct drf_history *h)
{
	drf_history_close(&h->f);
	free(h->name);
	free(h->acc);
	h->name = NULL;
	h->acc = NULL;
	h->n = h->name_cap = h->acc_cap = 0;
	h->on = false;
}
