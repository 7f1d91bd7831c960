// SPDX-License-Identifier: MIT
#include "statefile.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "statedir.h"
#include "vec.h"

void drf_state_free(struct drf_state_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(e[i].name);
		free(e[i].cgroup);
	}
	free(e);
}

/* A class minor as "netclass" lines have it: hex, 1 to 4 digits. */
static bool valid_minor(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return n >= 1 && n <= 4 && s[n] == '\0';
}

int drf_state_load(const char *path, const char *root, struct drf_state_entry **ret,
		   size_t *ret_n, size_t *ret_skipped)
{
	struct drf_state_entry *e = NULL;
	size_t n = 0, cap = 0, skipped = 0;
	char line[8192], word[16], name[256], cg[4096], why[1024];
	const char *file;
	int dfd, fd, r = 0;
	bool ours = false;
	struct stat st;
	FILE *f;

	/* Beneath the checked state dir: a symlink planted there is not followed. */
	dfd = drf_statedir_open_parent(path, false, &file, why, sizeof(why));
	if (dfd < 0)
		return dfd;
	fd = drf_at_open(dfd, file, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	close(dfd);
	if (fd < 0)
		return fd;
	/* Only a regular file: a FIFO there must not block the daemon. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (strncmp(line, "root ", 5) == 0) {
			line[strcspn(line, "\n")] = '\0';
			ours = strcmp(line + 5, root) == 0;
			continue;
		}
		if (sscanf(line, "%15s %255s %4095s", word, name, cg) != 3 || !ours ||
		    (strcmp(word, "tenant") != 0 && strcmp(word, "orphan") != 0 &&
		     strcmp(word, "netclass") != 0 && strcmp(word, "netdev") != 0) ||
		    (strcmp(word, "netclass") == 0 ? !valid_minor(cg)
		     : strcmp(word, "netdev") == 0 ? strcmp(cg, "-") != 0 || strlen(name) >= 16
						   : cgfs_path_problem(cg) != NULL)) {
			if (strncmp(line, "drfd-state ", 11) != 0)
				skipped++;
			continue;
		}
		if (DRF_VEC_GROW(e, &cap, n + 1) < 0) {
			r = -ENOMEM;
			break;
		}
		e[n].net_minor = 0;
		e[n].netdev = strcmp(word, "netdev") == 0;
		if (strcmp(word, "netclass") == 0) {
			e[n].net_minor = (unsigned)strtoul(cg, NULL, 16);
			snprintf(cg, sizeof(cg), "-");
		}
		e[n].name = strdup(name);
		e[n].cgroup = strdup(cg);
		if (!e[n].name || !e[n].cgroup) {
			free(e[n].name);
			free(e[n].cgroup);
			r = -ENOMEM;
			break;
		}
		n++;
	}
	fclose(f);
	if (r < 0) {
		drf_state_free(e, n);
		return r;
	}
	*ret = e;
	*ret_n = n;
	*ret_skipped = skipped;
	return 0;
}

int drf_state_save(const char *path, const char *root, const struct drf_reconciler *rc,
		   const struct drf_shaper *net)
{
	char *text = NULL, why[1024];
	const char *file;
	size_t len = 0;
	int dfd, r;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return -ENOMEM;
	fprintf(f, "# drfd state: the tenant cgroups drfd manages under its cgroup-root.\n"
		   "# Written by drfd; do not edit.\ndrfd-state 1\nroot %s\n", root);
	for (size_t i = 0; i < rc->n; i++)
		fprintf(f, "tenant %s %s\n", rc->t[i].name, rc->t[i].cgroup);
	for (size_t i = 0; i < rc->n_orphans; i++)
		fprintf(f, "orphan %s %s\n", rc->orphans[i].name, rc->orphans[i].cgroup);
	if (net)
		fprintf(f, "netdev %s -\n", net->ifname);
	for (size_t i = 0; net && i < net->n; i++)
		fprintf(f, "netclass %s %x\n", net->t[i].name, net->t[i].minor);
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	/* state-dir created (root's, 0755) and checked on the fds used; then the atomic replace. */
	dfd = drf_statedir_open_parent(path, true, &file, why, sizeof(why));
	r = dfd < 0 ? dfd : drf_replace_at(dfd, file, text, len, 0644);
	if (dfd >= 0)
		close(dfd);
	free(text);
	return r;
}
