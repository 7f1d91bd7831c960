// SPDX-License-Identifier: MIT
#include "access.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A whole decimal number below 2^32 - 1 (-1 is no id): 0 with it, or -EINVAL. */
static int parse_id(const char *s, unsigned *ret)
{
	unsigned long long v = 0;

	if (!*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*p - '0');
		if (v >= 0xffffffffULL)
			return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

/* One word: 0 with *e filled, or -EINVAL / -ENOMEM with why in err. */
static int resolve_word(const char *w, const struct drf_host_ops *host,
			struct drf_access_entry *e, char *err, size_t len)
{
	bool group = w[0] == '@';
	const char *name = group ? w + 1 : w;
	int r;

	e->name = strdup(w);
	if (!e->name)
		return -ENOMEM;
	if (strcmp(w, "*") == 0) {
		e->kind = DRF_ACCESS_ANY;
		return 0;
	}
	e->kind = group ? DRF_ACCESS_GROUP : DRF_ACCESS_USER;
	if (parse_id(name, &e->id) == 0)
		return 0;
	if (!*name) {
		snprintf(err, len, "'%s': a group's name or gid after '@'", w);
		return -EINVAL;
	}
	if (group) {
		gid_t gid = 0;

		r = host && host->group ? host->group(host->ctx, name, &gid) : -ENOSYS;
		e->id = (unsigned)gid;
	} else {
		struct drf_host_user u = { 0 };

		r = host && host->user ? host->user(host->ctx, name, &u) : -ENOSYS;
		e->id = (unsigned)u.uid;
		if (r == 0)
			drf_host_user_clear(&u);
	}
	if (r == 0)
		return 0;
	snprintf(err, len, "'%s': %s", w,
		 r == -ENOENT ? (group ? "no such group" : "no such user")
		 : r == -ENOSYS ? "names cannot be looked up here: give the number"
				: strerror(-r));
	return r == -ENOMEM ? r : -EINVAL;
}

int drf_acl_resolve(struct drf_acl *a, const struct drf_host_ops *host, char *err, size_t len)
{
	char *copy, *save = NULL;
	size_t cap = 0;
	int r = 0;

	if (!a->text)
		return 0;
	copy = strdup(a->text);
	if (!copy)
		return -ENOMEM;
	for (char *w = strtok_r(copy, " ,\t", &save); w; w = strtok_r(NULL, " ,\t", &save)) {
		if (a->n == cap) {
			size_t c = cap ? 2 * cap : 4;
			struct drf_access_entry *e = realloc(a->e, c * sizeof(*e));

			if (!e) {
				r = -ENOMEM;
				break;
			}
			a->e = e;
			cap = c;
		}
		memset(&a->e[a->n], 0, sizeof(a->e[a->n]));
		r = resolve_word(w, host, &a->e[a->n], err, len);
		a->n++;
		if (r < 0)
			break;
	}
	if (r == 0 && a->n == 0) {
		snprintf(err, len, "no users or groups: name some, '*' for everyone who can "
			 "reach the socket, or leave the key out");
		r = -EINVAL;
	}
	if (r == -ENOMEM)
		snprintf(err, len, "out of memory");
	free(copy);
	return r;
}

bool drf_acl_matches(const struct drf_acl *a, const struct drf_access_who *w)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct drf_access_entry *e = &a->e[i];

		if (e->kind == DRF_ACCESS_ANY)
			return true;
		if (e->kind == DRF_ACCESS_USER && e->id == (unsigned)w->uid)
			return true;
		if (e->kind != DRF_ACCESS_GROUP)
			continue;
		if (e->id == (unsigned)w->gid)
			return true;
		for (size_t k = 0; k < w->ngroups; k++)
			if (e->id == (unsigned)w->groups[k])
				return true;
	}
	return false;
}

void drf_acl_text(const struct drf_acl *a, char *buf, size_t len)
{
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < a->n && off < len; i++) {
		int n = snprintf(buf + off, len - off, "%s%s", i ? " " : "", a->e[i].name);

		if (n < 0)
			break;
		off += (size_t)n;
	}
}

void drf_acl_free(struct drf_acl *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->e[i].name);
	free(a->e);
	free(a->text);
	memset(a, 0, sizeof(*a));
}
