// SPDX-License-Identifier: MIT
#include "etcdmsg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool etcd_single_key(const char *range_end, bool prefix, bool from_key)
{
	return !prefix && !from_key && (!range_end || !*range_end);
}

int etcd_prefix_end(const char *key, size_t key_len, char **ret, size_t *ret_len)
{
	char *end = malloc(key_len + 1);

	if (!end)
		return -ENOMEM;
	memcpy(end, key, key_len);
	for (size_t i = key_len; i > 0; i--) {
		if ((unsigned char)end[i - 1] < 0xff) {
			end[i - 1]++;
			end[i] = 0;
			*ret = end;
			*ret_len = i;
			return 0;
		}
	}
	/* Every byte 0xff (or none): no key is past them all; "\0" is etcd's "to the end". */
	end[0] = 0;
	*ret = end;
	*ret_len = 1;
	return 0;
}

static char *memdup0(const char *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, p, n);
		s[n] = 0;
	}
	return s;
}

void etcd_span_free(struct etcd_span *s)
{
	free(s->key);
	free(s->end);
	memset(s, 0, sizeof(*s));
}

int etcd_span_of(const char *key, const char *range_end, bool prefix, bool from_key,
		 struct etcd_span *ret)
{
	struct etcd_span s = { 0 };
	size_t n = key ? strlen(key) : 0;
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	if (!key || (n == 0 && etcd_single_key(range_end, prefix, from_key)))
		return -EINVAL;
	if (n == 0) {
		/* etcd's "every key": key "\0", range end "\0" */
		s.key = memdup0("", 1);
		s.key_len = 1;
		s.end = memdup0("", 1);
		s.end_len = 1;
	} else {
		s.key = memdup0(key, n);
		s.key_len = n;
		if (prefix) {
			r = etcd_prefix_end(key, n, &s.end, &s.end_len);
		} else if (from_key) {
			s.end = memdup0("", 1);
			s.end_len = 1;
		} else if (range_end && *range_end) {
			s.end_len = strlen(range_end);
			s.end = memdup0(range_end, s.end_len);
		}
	}
	if (r == 0 && (!s.key || (s.end_len && !s.end)))
		r = -ENOMEM;
	if (r < 0) {
		etcd_span_free(&s);
		return r;
	}
	*ret = s;
	return 0;
}

/* memcmp of two byte strings, the shorter first when one begins the other. */
static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c ? c : an < bn ? -1 : an > bn;
}

bool etcd_span_has(const struct etcd_span *s, const char *key, size_t key_len)
{
	if (!s->end)
		return bytes_cmp(key, key_len, s->key, s->key_len) == 0;
	if (bytes_cmp(key, key_len, s->key, s->key_len) < 0)
		return false;
	if (s->end_len == 1 && s->end[0] == 0)
		return true;
	return bytes_cmp(key, key_len, s->end, s->end_len) < 0;
}

int etcd_errno(int code, const char *message)
{
	const char *m = message ? message : "";

	switch (code) {
	case 0:
		return 0;
	case 1: /* Canceled */
		return -ECANCELED;
	case 3: /* InvalidArgument: also etcd's "authentication failed" and "user name is empty" */
		if (strstr(m, "authentication failed") || strstr(m, "user name is empty") ||
		    strstr(m, "invalid auth token"))
			return -EACCES;
		return -EINVAL;
	case 4: /* DeadlineExceeded */
		return -ETIMEDOUT;
	case 5: /* NotFound: "requested lease not found" */
		return -ENOENT;
	case 6: /* AlreadyExists */
		return -EEXIST;
	case 7:  /* PermissionDenied */
	case 16: /* Unauthenticated: "invalid auth token" */
		return -EACCES;
	case 8: /* ResourceExhausted: "database space exceeded", "too many requests" */
		return -ENOSPC;
	case 9: /* FailedPrecondition: "lease already exists", "auth not enabled", ... */
		return strstr(m, "already exists") ? -EEXIST : -EPERM;
	case 10: /* Aborted */
	case 14: /* Unavailable: "no leader", "not capable" */
		return -EAGAIN;
	case 11: /* OutOfRange */
		return strstr(m, "compacted") ? -ESTALE : -ERANGE;
	case 12: /* Unimplemented */
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}
