// SPDX-License-Identifier: MIT
/*
 * drfd's state dir: the start-up check of its path, and the helpers that open,
 * create and replace files under it relative to a directory fd; see statedir.h.
 */
#include "statedir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

/* Root's, or drfd's own when it runs as another user (tests, a dry run). */
static bool trusted_owner(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/*
 * Judges one component, opened as fd (O_PATH | O_NOFOLLOW) at comp, the path
 * up to it. last: the state dir itself, whose next component is none of ours,
 * so being sticky does not excuse it.
 */
static int judge(int fd, const char *path, const char *comp, bool last, char *why, size_t len)
{
	struct stat st;
	char target[PATH_MAX];
	ssize_t n;

	if (fstat(fd, &st) < 0) {
		snprintf(why, len, "state-dir '%s': cannot stat '%s': %s", path, comp,
			 strerror(errno));
		return -errno;
	}
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(fd, "", target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		snprintf(why, len, "state-dir '%s': '%s' is a symlink (to '%s'); drfd follows no "
			 "symlink to its state: set state-dir to the real path", path, comp,
			 target);
		return -ELOOP;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, len, "state-dir '%s': '%s' is not a directory", path, comp);
		return -ENOTDIR;
	}
	if (!trusted_owner(st.st_uid)) {
		snprintf(why, len, "state-dir '%s': '%s' is owned by uid %u (mode %04o); drfd "
			 "keeps its tasks and their users' credentials there, so every directory "
			 "on the path must be root's and writable by root alone: chown root:root "
			 "%s && chmod go-w %s", path, comp, (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777), comp, comp);
		return -EPERM;
	}
	/* A sticky directory (/tmp): others cannot touch the root-owned entry below it. */
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && (last || !(st.st_mode & S_ISVTX))) {
		snprintf(why, len, "state-dir '%s': '%s' is writable by %s (mode %04o, owner uid "
			 "%u): whoever can write there could replace drfd's state and its tasks: "
			 "chown root:root %s && chmod go-w %s", path, comp,
			 (st.st_mode & S_IWOTH) ? "others" : "its group",
			 (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, comp, comp);
		return -EPERM;
	}
	return 0;
}

/*
 * Walks path from "/" one component at a time, on fds, judging each. Without
 * ret_fd, a check: 0 at the first missing component. With it, the missing
 * ones are created (if create) and the state dir's O_PATH fd is returned.
 */
static int walk(const char *path, bool create, int *ret_fd, char *why, size_t len)
{
	char comp[PATH_MAX];
	const char *p = path;
	size_t at = 0;
	int fd, r;

	if (path[0] != '/' || strlen(path) >= sizeof(comp)) {
		snprintf(why, len, "state-dir '%s': not an absolute path (or too long)", path);
		return -EINVAL;
	}
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "state-dir '%s': cannot open '/': %s", path, strerror(errno));
		return -errno;
	}
	comp[at++] = '/';
	comp[at] = '\0';
	while (*p == '/')
		p++;
	r = judge(fd, path, "/", *p == '\0', why, len);
	while (r == 0 && *p) {
		size_t n = strcspn(p, "/");
		const char *next = p + n;
		bool created = false;
		char name[NAME_MAX + 1];
		int nfd;

		while (*next == '/')
			next++;
		if (n > NAME_MAX || (n == 2 && p[0] == '.' && p[1] == '.') ||
		    (n == 1 && p[0] == '.')) {
			snprintf(why, len, "state-dir '%s': a bad component", path);
			r = -EINVAL;
			break;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		if (at > 1)
			comp[at++] = '/';
		memcpy(comp + at, name, n + 1);
		at += n;
		nfd = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT && !ret_fd) {
			/* The rest does not exist yet: drfd creates it, root's. */
			close(fd);
			return 0;
		}
		if (nfd < 0 && errno == ENOENT && create) {
			/* Raced by someone (a sticky /tmp): EEXIST, and judged below. */
			if (mkdirat(fd, name, DRF_STATEDIR_MODE) == 0)
				created = true;
			if (created || errno == EEXIST)
				nfd = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		}
		if (nfd < 0) {
			r = -errno;
			snprintf(why, len, "state-dir '%s': cannot %s '%s': %s", path,
				 create ? "create" : "open", comp, strerror(-r));
			break;
		}
		close(fd);
		fd = nfd;
		r = judge(fd, path, comp, *next == '\0', why, len);
		if (r == 0 && created) {
			/* Exactly 0755, whatever the umask. */
			int rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			if (rfd < 0 || fchmod(rfd, DRF_STATEDIR_MODE) < 0) {
				r = -errno;
				snprintf(why, len, "state-dir '%s': cannot set the mode of "
					 "'%s': %s", path, comp, strerror(-r));
			}
			if (rfd >= 0)
				close(rfd);
		}
		p = next;
	}
	if (r < 0 || !ret_fd) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

int drf_statedir_check(const char *path, char *why, size_t len)
{
	return walk(path, false, NULL, why, len);
}

int drf_statedir_open(const char *path, bool create, char *why, size_t len)
{
	int pfd, fd, r;

	r = walk(path, create, &pfd, why, len);
	if (r < 0)
		return r;
	/* The O_PATH fd was judged; a real one of the same directory for *at() and fsync. */
	fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(why, len, "state-dir '%s': cannot open it: %s", path, strerror(-r));
	}
	close(pfd);
	return fd < 0 ? r : fd;
}

int drf_statedir_open_parent(const char *path, bool create, const char **ret_name, char *why,
			     size_t len)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	if (!slash || !slash[1] || (size_t)(slash - path) >= sizeof(dir)) {
		snprintf(why, len, "'%s': not a file's absolute path", path);
		return -EINVAL;
	}
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	*ret_name = slash + 1;
	return drf_statedir_open(dir[0] ? dir : "/", create, why, len);
}

int drf_at_open(int dfd, const char *path, int flags, mode_t mode)
{
	return drf_open_beneath(dfd, path, flags, mode);
}

int drf_at_owned(int fd, bool dir)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
		return dir ? -ENOTDIR : -EINVAL;
	if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return -EPERM;
	return 0;
}

int drf_at_dir(int dfd, const char *path, mode_t mode, bool create)
{
	struct stat st;
	int fd, r;

	fd = drf_at_open(dfd, path, O_RDONLY | O_DIRECTORY, 0);
	if (fd == -ENOENT && create) {
		const char *name;
		int pfd = drf_open_parent_beneath(dfd, path, &name);

		if (pfd < 0)
			return pfd;
		r = mkdirat(pfd, name, mode) < 0 && errno != EEXIST ? -errno : 0;
		close(pfd);
		if (r < 0)
			return r;
		fd = drf_at_open(dfd, path, O_RDONLY | O_DIRECTORY, 0);
	}
	if (fd < 0)
		return fd;
	r = drf_at_owned(fd, true);
	/* Exactly mode: the umask narrows it, and an older drfd made 0755 or 0700. */
	if (r == 0 && fstat(fd, &st) == 0 && (st.st_mode & 07777) != mode && fchmod(fd, mode) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int drf_at_remove(int dfd, const char *path)
{
	const char *name;
	struct dirent *de;
	DIR *d;
	int pfd, fd, r;

	pfd = drf_open_parent_beneath(dfd, path, &name);
	if (pfd < 0)
		return pfd;
	fd = drf_at_open(pfd, name, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0) {
		/* A file, or a symlink: the entry itself goes. */
		r = fd == -ENOENT ? fd : unlinkat(pfd, name, 0) < 0 ? -errno : 0;
		close(pfd);
		return r;
	}
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		close(pfd);
		return r;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	r = unlinkat(pfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
	close(pfd);
	return r;
}

ssize_t drf_at_read(int dfd, const char *path, size_t max, bool owned, char **ret)
{
	struct stat st;
	size_t got = 0;
	char *buf;
	int fd, r = 0;

	fd = drf_at_open(dfd, path, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else if (owned)
		r = drf_at_owned(fd, false);
	/* A file an older drfd made 0644: others read command lines. */
	if (r == 0 && owned && (st.st_mode & 077) && fchmod(fd, st.st_mode & 0700) < 0)
		r = -errno;
	buf = r == 0 ? malloc(max + 1) : NULL;
	if (r == 0 && !buf)
		r = -ENOMEM;
	if (r == 0) {
		ssize_t n = drf_read_full(fd, buf, max);

		if (n < 0)
			r = (int)n;
		else
			got = (size_t)n;
	}
	close(fd);
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[got] = '\0';
	*ret = buf;
	return (ssize_t)got;
}

int drf_statedir_path(const char *state_dir, const char *root, const char *suffix, char *ret,
		      size_t len)
{
	size_t n = (size_t)snprintf(ret, len, "%s/", state_dir), k = strlen(suffix);

	if (n >= len)
		return -ENAMETOOLONG;
	for (const char *p = root[0] == '/' ? root + 1 : root; *p; p++) {
		const char *rep = *p == '/' ? "-" : *p == '-' ? "%2d" : *p == '%' ? "%25" : NULL;
		size_t m = rep ? strlen(rep) : 1;

		if (n + m >= len)
			return -ENAMETOOLONG;
		if (rep)
			memcpy(ret + n, rep, m);
		else
			ret[n] = *p;
		n += m;
	}
	if (n + k + 1 > len)
		return -ENAMETOOLONG;
	memcpy(ret + n, suffix, k + 1);
	return 0;
}
