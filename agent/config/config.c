// SPDX-License-Identifier: MIT
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "clock.h"
#include "fairfam.h"
#include "fileio.h"
#include "index.h"
#include "text.h"
#include "unitname.h"
#include "vec.h"

#define DEFAULT_CGROUP_ROOT "/sys/fs/cgroup/drf.slice"
#define DEFAULT_TENANTS_DIR "tenants.d"
#define DEFAULT_STATE_DIR "/var/lib/drfd"
#define DEFAULT_STATUS_SOCKET "/run/drfd/drfd.sock"
#define IFNAME_MAX 15 /* IFNAMSIZ - 1 */

enum section {
	SEC_NONE,
	SEC_AGENT,
	SEC_CAPACITY,
	SEC_TENANT,
	SEC_SERVER, /* a fleet file's [server NAME] */
	SEC_FLEET,  /* a fleet file's [fleet] */
	SEC_GROUP,  /* [group NAME] */
};

/* A server's keys: the resources, then count. */
#define SK_COUNT DRF_NRES
#define SK_N (DRF_NRES + 1)

enum agent_key { AK_CGROUP_ROOT, AK_INTERVAL, AK_MODE, AK_POLICY, AK_TENANTS_DIR, AK_STATE_DIR,
		 AK_STATUS_SOCKET, AK_STATUS_GROUP, AK_VERIFY_PERIOD, AK_NET_REPLACE, AK_METRICS_FILE,
		 AK_DEMAND, AK_METRICS_DETAIL, AK_METRICS_LISTEN, AK_BETA, AK_LAMBDA, AK_ACCESS,
		 AK_ADMINS, AK_TASK_OUTPUT_MAX, AK_METRICS_LEGACY, AK_N };
static const char *const agent_keys[AK_N] = {
	"cgroup-root", "interval", "mode", "policy", "tenants-dir", "state-dir", "status-socket",
	"status-group", "verify-period", "net-replace-qdisc", "metrics-file", "demand",
	"metrics-detail", "metrics-listen", "beta", "lambda", "access", "admins",
	"task-output-max", "metrics-legacy-names",
};

enum cap_key {
	CK_CPU, CK_MEMORY, CK_MEMORY_RESERVE, CK_IO_DEVICE, CK_IO_READ, CK_IO_WRITE,
	CK_NET_DEVICE, CK_NET_RATE, CK_NET_IN, CK_NET_LINK, CK_N
};
static const char *const cap_keys[CK_N] = {
	"cpu", "memory", "memory-reserve", "io-device", "io-read-bps", "io-write-bps",
	"net-device", "net-rate", "net-ingress-rate", "net-link-rate",
};

/* How deep the network programs look for a tenant: DRF_NET_MAX_DEPTH in bpf/net.h. */
#define NET_MAX_DEPTH 8

/* Tenant keys: weight, cgroup, tasks, then the DRF_NRES demand and task keys, then group. */
enum tenant_key { TK_WEIGHT, TK_CGROUP, TK_TASKS, TK_DEMAND0, TK_TASK0 = TK_DEMAND0 + DRF_NRES,
		  TK_GROUP = TK_TASK0 + DRF_NRES, TK_ACCESS, TK_ADMINS, TK_N };

/* A group's keys. */
enum group_key { GK_WEIGHT, GK_CGROUP, GK_GROUP, GK_ACCESS, GK_ADMINS, GK_N };
static const char *const group_keys[GK_N] = { "weight", "cgroup", "group", "access", "admins" };

/* Parse state: one per config; the file fields change as files are read. */
struct parser {
	struct drf_config *cfg;
	char *err;
	size_t errlen;
	bool failed;
	/*
	 * A file's independent errors are all said (up to CONFIG_ERRORS, a line
	 * each, in the order of the file): a key's error does not stop the
	 * reading, one after which the next lines mean nothing does (stop: a
	 * section header, a line the reader refuses).
	 */
	int n_err;
	bool stop;
	bool full;      /* the error text is full: said so, the rest left out */
	/* the file being read */
	const char *file;
	bool main_file;
	const char *buf;
	size_t len, pos;
	int line;
	enum section sec;
	size_t tenant;           /* index into cfg->tenants while sec == SEC_TENANT */
	/* where each key was first set, for duplicate-key errors; 0 = not yet */
	int agent_line[AK_N], cap_line[CK_N];
	const char *cap_file;
	int agent_sec_line, cap_sec_line;
	int *tenant_lines;       /* TK_N per tenant */
	size_t tenants_cap, lines_cap, files_cap;
	struct drf_index names;  /* tenant name -> index into cfg->tenants */
	bool auto_cpu, auto_memory, auto_net, auto_net_in;
	/* a fleet file (drf_fleet_load) */
	struct drf_fleet *fleet;
	size_t servers_cap, slines_cap;
	int *server_lines;       /* SK_N per server */
	int fleet_line[DRF_NRES];
	int fleet_sec_line;
	int member_line[12];     /* drfd.conf's [fleet] keys */
	/* drf_fleet_load_tenants: no [server] needed; with none, no pool to check tenants against */
	bool servers_optional;
	/* [group NAME]: `group =` names until resolved, where each key was set */
	size_t group;            /* index into cfg->groups while sec == SEC_GROUP */
	char **tenant_group;     /* per tenant: its `group =`, or NULL */
	char **group_parent;     /* per group: its `group =`, or NULL */
	int *group_lines;        /* GK_N per group */
	size_t tgroup_cap, gparent_cap, glines_cap, groups_cap;
	struct drf_index gnames; /* group name -> index into cfg->groups */
};

#define CONFIG_ERRORS 10 /* a file's errors said at most */
/* After the errors that fit: the file has more (a line of its own). */
#define MORE_ERRORS "\n" DRF_CONFIG_MORE_ERRORS

/*
 * The error, FILE:LINE first, with control characters escaped: a name or a
 * value may hold an ESC, and the error goes to a terminal or the journal.
 */
static void __attribute__((format(printf, 3, 4)))
fail_at(struct parser *ps, int line, const char *fmt, ...)
{
	char raw[4096];
	size_t off = 0;
	va_list ap;

	if (ps->full)
		return;
	if (ps->n_err >= CONFIG_ERRORS) {
		size_t used = strlen(ps->err);

		/* an eleventh: said to be there */
		if (used + sizeof(MORE_ERRORS) <= ps->errlen)
			memcpy(ps->err + used, MORE_ERRORS, sizeof(MORE_ERRORS));
		ps->n_err++;
		ps->full = ps->stop = true;
		return;
	}
	ps->failed = true;
	if (line > 0)
		off = (size_t)snprintf(raw, sizeof(raw), "%s:%d: ", ps->file, line);
	else
		off = (size_t)snprintf(raw, sizeof(raw), "%s: ", ps->file);
	if (off < sizeof(raw)) {
		va_start(ap, fmt);
		vsnprintf(raw + off, sizeof(raw) - off, fmt, ap);
		va_end(ap);
	}
	/* after the errors before it, a line each; a line that does not fit
	 * whole is left out, and ends the list (the first is cut if it must) */
	if (!ps->n_err) {
		/* room kept after it for the line that says more were left out */
		size_t room = ps->errlen > 2 * sizeof(MORE_ERRORS) ?
				      ps->errlen - sizeof(MORE_ERRORS) + 1 : ps->errlen;

		drf_escape_controls(raw, ps->err, room);
	} else {
		char one[DRF_ESCAPED_SIZE(sizeof(raw))];
		size_t len, used = strlen(ps->err);

		drf_escape_controls(raw, one, sizeof(one));
		len = strlen(one);
		/* room kept for the line that says some were left out */
		if (used + 1 + len + sizeof(MORE_ERRORS) > ps->errlen) {
			if (used + sizeof(MORE_ERRORS) <= ps->errlen)
				memcpy(ps->err + used, MORE_ERRORS, sizeof(MORE_ERRORS));
			ps->n_err++; /* said or not, an error: its key is not taken */
			ps->full = ps->stop = true;
			return;
		}
		ps->err[used] = '\n';
		memcpy(ps->err + used + 1, one, len + 1);
	}
	++ps->n_err;
}

#define fail(ps, ...) fail_at(ps, (ps)->line, __VA_ARGS__)

static int lookup(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

bool drf_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > DRF_TENANT_NAME_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
			return false;
	return true;
}

/* Prefixes of cgroup v2 interface files (cgroup-v2.rst): "cpu.max", "memory.low"... */
static const char *const control_prefixes[] = {
	"cgroup", "cpu", "cpuset", "io", "memory", "pids", "rdma", "hugetlb", "misc", "irq", NULL,
};

const char *drf_cgroup_path_problem(const char *path)
{
	const char *p = path;

	if (path[0] == '\0')
		return "is empty";
	if (path[0] == '/')
		return "is absolute (it must be relative to cgroup-root)";
	if (strlen(path) >= PATH_MAX / 2)
		return "is too long";
	while (*p) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == 0)
			return "has an empty component ('//' or a trailing '/')";
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return "contains '.' or '..'";
		if (p[0] == '.')
			return "has a component starting with '.'";
		for (size_t i = 0; i < n; i++)
			if (!isalnum((unsigned char)p[i]) && !strchr("_.-:@", p[i]))
				return "has a character other than letters, digits and _.-:@";
		for (const char *const *cp = control_prefixes; *cp; cp++) {
			size_t k = strlen(*cp);

			if (n > k && strncmp(p, *cp, k) == 0 && p[k] == '.')
				return "names a cgroup control file (a component like 'cpu.max')";
		}
		p += n;
		if (*p == '/')
			p++;
		if (*p == '\0' && p[-1] == '/')
			return "has an empty component ('//' or a trailing '/')";
	}
	return NULL;
}

/* Normalized absolute path: no '.', '..' or empty components. */
static bool valid_abs_path(const char *s)
{
	const char *p = s;

	if (s[0] != '/' || strlen(s) >= PATH_MAX)
		return false;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		if (p[0] == '.' && (p[1] == '/' || p[1] == '\0'))
			return false;
		if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || p[2] == '\0'))
			return false;
		while (*p && *p != '/')
			p++;
	}
	return true;
}

/* rel if it is absolute, else rel in the directory of the file base. */
static char *path_beside(const char *base, const char *rel)
{
	const char *slash = strrchr(base, '/');
	char *p;

	if (rel[0] == '/')
		return strdup(rel);
	if (!slash)
		return asprintf(&p, "./%s", rel) < 0 ? NULL : p;
	return asprintf(&p, "%.*s/%s", slash == base ? 0 : (int)(slash - base), base, rel) < 0
		       ? NULL
		       : p;
}

static char *xstrdup_or_fail(struct parser *ps, const char *s)
{
	char *d = strdup(s);

	if (!d)
		fail(ps, "out of memory");
	return d;
}

static void set_string(struct parser *ps, char **slot, const char *value)
{
	char *d = xstrdup_or_fail(ps, value);

	if (!d)
		return;
	free(*slot);
	*slot = d;
}

static bool parse_num(struct parser *ps, const char *key, const char *value, enum drf_unit unit,
		      double *ret)
{
	const char *why = "invalid";
	int r = drf_parse_quantity(value, unit, ret, &why);
	char hint[96];

	if (r == 0)
		return true;
	/* inih ends a value at " ;" but not at "#": the rest reads as a unit. */
	if (strchr(value, '#'))
		fail(ps, "%s = '%s': '#' starts a comment only at the start of a line; after a "
			 "value, write ' ;'", key, value);
	else if (r == -ENOENT && unit == DRF_UNIT_CORES && strcmp(key, "cpu") != 0 &&
		 strcmp(key, "task-cpu") != 0)
		fail(ps, "%s = '%s': %s takes a plain number, with no unit and no %%", key, value,
		     key);
	else if (r == -ENOENT && drf_quantity_hint(value, unit, hint, sizeof(hint)))
		fail(ps, "%s = '%s': %s; %s", key, value, why, hint);
	else
		fail(ps, "%s = '%s': %s", key, value, why);
	return false;
}

int drf_parse_listen(const char *s, struct drf_listen_addr *ret, const char **why)
{
	const char *colon, *host_end;
	char host[INET6_ADDRSTRLEN], *end;
	struct drf_listen_addr a = { 0 };
	unsigned long port;

	if (s[0] == '[') {
		host_end = strchr(s, ']');
		if (!host_end) {
			*why = "an IPv6 address is written in brackets: [ADDR]:PORT";
			return -EINVAL;
		}
		colon = host_end + 1;
		s++;
		a.family = AF_INET6;
	} else {
		colon = strrchr(s, ':');
		host_end = colon;
		a.family = AF_INET;
		if (colon && memchr(s, ':', (size_t)(colon - s))) {
			*why = "an IPv6 address is written in brackets: [ADDR]:PORT";
			return -EINVAL;
		}
	}
	if (!colon || *colon != ':' || !colon[1]) {
		*why = "expected ADDR:PORT (127.0.0.1:9100, [::1]:9100 or localhost:9100)";
		return -EINVAL;
	}
	if ((size_t)(host_end - s) >= sizeof(host) || host_end == s) {
		*why = "not an IP address (IPv4, [IPv6] or localhost: drfd resolves no names)";
		return -EINVAL;
	}
	memcpy(host, s, (size_t)(host_end - s));
	host[host_end - s] = '\0';
	if (a.family == AF_INET && strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(a.family, host, a.addr) != 1) {
		*why = "not an IP address (IPv4, [IPv6] or localhost: drfd resolves no names)";
		return -EINVAL;
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!isdigit((unsigned char)colon[1]) || *end || errno || port < 1 || port > 65535) {
		*why = "the port must be a number from 1 to 65535";
		return -EINVAL;
	}
	a.port = (uint16_t)port;
	*ret = a;
	return 0;
}

/*
 * A plain decimal number, optionally negative: digits with an optional
 * fraction, nothing else (no exponent, hex, inf or nan, as drf_parse_quantity()).
 */
static int parse_real(const char *s, double *ret)
{
	const char *q = s + (*s == '-');
	char *end;
	double v;

	if (!isdigit((unsigned char)*q))
		return -EINVAL;
	while (isdigit((unsigned char)*q))
		q++;
	if (*q == '.') {
		q++;
		if (!isdigit((unsigned char)*q))
			return -EINVAL;
		while (isdigit((unsigned char)*q))
			q++;
	}
	if (*q)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || !isfinite(v))
		return -ERANGE;
	*ret = v;
	return 0;
}

/*
 * beta and lambda: only with the policies they belong to, lambda by default on
 * the alpha-fair line, and the pair one that drf_family_check() accepts.
 */
static int check_family(struct parser *ps)
{
	struct drf_config *c = ps->cfg;
	int lb = ps->agent_line[AK_BETA], ll = ps->agent_line[AK_LAMBDA];
	bool fam = c->policy == DRF_POLICY_FDS || c->policy == DRF_POLICY_GFJ;
	const char *why;

	if (!fam && (lb || ll)) {
		fail_at(ps, lb ? lb : ll, "%s applies to policy fds and gfj only; policy is '%s'",
			lb ? "beta" : "lambda", drf_policy_name(c->policy));
		return -EINVAL;
	}
	if (!fam) {
		c->family = (struct drf_family){ 0 };
		return 0;
	}
	if (!lb)
		c->family.beta = DRF_FAMILY_BETA_DEFAULT;
	if (!ll)
		c->family.lambda = drf_family_alpha_lambda(c->family.beta);
	if (drf_family_check(c->family.beta, c->family.lambda, &why) < 0) {
		if (ll)
			fail_at(ps, ll, "lambda = %g with beta = %g: %s", c->family.lambda,
				c->family.beta, why);
		else
			fail_at(ps, lb, "beta = %g: %s", c->family.beta, why);
		return -EINVAL;
	}
	return 0;
}

/* `access` or `admins`: kept as written, resolved once every file is read (resolve_access). */
static void acl_key(struct parser *ps, struct drf_acl *a, const char *value)
{
	set_string(ps, &a->text, value);
	a->file = ps->file;
	a->line = ps->line;
}

/*
 * A key of two words (mode = share | limit, yes | no, ...): 0 for the first,
 * 1 for the second; else the error, FILE:LINE, and -1.
 */
static int two_words(struct parser *ps, const char *key, const char *value, const char *first,
		     const char *second)
{
	if (strcmp(value, first) == 0)
		return 0;
	if (strcmp(value, second) == 0)
		return 1;
	fail(ps, "%s = '%s': expected '%s' or '%s'", key, value, first, second);
	return -1;
}

static void agent_key(struct parser *ps, int k, const char *value)
{
	struct drf_config *c = ps->cfg;
	const char *why = "invalid";
	double ms;
	int v;

	switch (k) {
	case AK_CGROUP_ROOT:
		if (strcmp(value, "auto") == 0) {
			c->cgroup_root_auto = true;
			return;
		}
		if (!valid_abs_path(value)) {
			fail(ps, "cgroup-root = '%s': must be an absolute path without '.' or '..'",
			     value);
			return;
		}
		{
			const char *last = strrchr(value, '/') + 1;

			if (strcmp(value, "/") == 0 || (last[0] && drf_cgroup_path_problem(last) &&
							 strstr(drf_cgroup_path_problem(last), "control"))) {
				fail(ps, "cgroup-root = '%s': %s", value, strcmp(value, "/") == 0
					? "the root of the filesystem cannot be drfd's cgroup"
					: "its last component names a cgroup control file, not a cgroup");
				return;
			}
		}
		c->cgroup_root_auto = false;
		set_string(ps, &c->cgroup_root, value);
		return;
	case AK_STATE_DIR:
		if (!valid_abs_path(value)) {
			fail(ps, "state-dir = '%s': must be an absolute path without '.' or '..'", value);
			return;
		}
		set_string(ps, &c->state_dir, value);
		return;
	case AK_STATUS_SOCKET:
		if (!valid_abs_path(value) || strlen(value) > 107) {
			fail(ps, "status-socket = '%s': must be an absolute path of at most 107 bytes "
				 "(a socket's sun_path)", value);
			return;
		}
		set_string(ps, &c->status_socket, value);
		return;
	case AK_TASK_OUTPUT_MAX: {
		double b;

		if (strcmp(value, "unlimited") == 0) {
			c->task_output_max = 0;
			return;
		}
		if (!parse_num(ps, "task-output-max", value, DRF_UNIT_BYTES, &b))
			return;
		if (b < 1 || b != floor(b) || b > (double)DRF_TASK_OUTPUT_MAX_MAX) {
			fail(ps, "task-output-max = '%s': expected a whole number of bytes from 1 to "
				 "1T, or 'unlimited' (0 would keep no output)", value);
			return;
		}
		c->task_output_max = (uint64_t)b;
		return;
	}
	case AK_METRICS_FILE:
		if (!valid_abs_path(value) || value[strlen(value) - 1] == '/') {
			fail(ps, "metrics-file = '%s': must be the absolute path of a file, without '.' "
				 "or '..'", value);
			return;
		}
		set_string(ps, &c->metrics_file, value);
		return;
	case AK_STATUS_GROUP: {
		size_t n = strlen(value);
		bool ok = n > 0 && n <= 32 && (isalpha((unsigned char)value[0]) || value[0] == '_');

		for (size_t i = 1; ok && i < n; i++)
			ok = isalnum((unsigned char)value[i]) || strchr("_.-", value[i]);
		if (!ok) {
			fail(ps, "status-group = '%s': not a group name ([A-Za-z_][A-Za-z0-9_.-]*, at "
				 "most 32 characters)", value);
			return;
		}
		set_string(ps, &c->status_group, value);
		return;
	}
	case AK_VERIFY_PERIOD:
		if (drf_parse_duration_ms(value, &ms, &why) < 0) {
			fail(ps, "verify-period = '%s': %s", value, why);
			return;
		}
		if (ms < 1000 || ms > 3600 * 1000) {
			fail(ps, "verify-period = '%s': must be between 1s and 3600s", value);
			return;
		}
		c->verify_period_us = (uint64_t)llround(ms * 1000);
		return;
	case AK_INTERVAL:
		if (drf_parse_duration_ms(value, &ms, &why) < 0) {
			fail(ps, "interval = '%s': %s", value, why);
			return;
		}
		if (ms < 10 || ms > 3600 * 1000) {
			fail(ps, "interval = '%s': must be between 10ms and 3600s", value);
			return;
		}
		c->interval_us = (uint64_t)llround(ms * 1000);
		return;
	case AK_MODE:
		v = two_words(ps, "mode", value, "share", "limit");
		if (v >= 0)
			c->mode = v ? DRF_MODE_LIMIT : DRF_MODE_SHARE;
		return;
	case AK_POLICY:
		v = drf_policy_from_name(value);
		if (v < 0)
			fail(ps, "policy = '%s': expected 'drf', 'asset', 'per-resource', 'fds', "
				 "'gfj' or 'ceei'", value);
		else
			c->policy = v;
		return;
	case AK_ACCESS:
	case AK_ADMINS:
		acl_key(ps, k == AK_ACCESS ? &c->access : &c->admins, value);
		return;
	case AK_BETA:
	case AK_LAMBDA:
		if (parse_real(value, k == AK_BETA ? &c->family.beta : &c->family.lambda) < 0)
			fail(ps, "%s = '%s': expected a decimal number%s", agent_keys[k], value,
			     k == AK_LAMBDA ? " (a leading '-' is allowed)" : "");
		return;
	case AK_TENANTS_DIR: {
		char *p = path_beside(c->path, value);

		if (!p) {
			fail(ps, "out of memory");
			return;
		}
		free(c->tenants_dir);
		c->tenants_dir = p;
		return;
	}
	case AK_DEMAND:
		v = two_words(ps, "demand", value, "declared", "observed");
		if (v >= 0)
			c->observed = v;
		return;
	case AK_METRICS_DETAIL:
		v = two_words(ps, "metrics-detail", value, "basic", "full");
		if (v >= 0)
			c->metrics_detail = v ? DRF_METRICS_FULL : DRF_METRICS_BASIC;
		return;
	case AK_METRICS_LISTEN:
		if (drf_parse_listen(value, &c->metrics_addr, &why) < 0) {
			fail(ps, "metrics-listen = '%s': %s", value, why);
			return;
		}
		set_string(ps, &c->metrics_listen, value);
		return;
	case AK_NET_REPLACE:
	case AK_METRICS_LEGACY:
		v = two_words(ps, agent_keys[k], value, "yes", "no");
		if (v >= 0)
			*(k == AK_NET_REPLACE ? &c->net_replace_qdisc : &c->metrics_legacy_names) = !v;
		return;
	}
}

static bool is_auto(const char *value)
{
	return strcmp(value, "auto") == 0;
}

static bool valid_io_device(const char *s)
{
	const char *colon;

	if (s[0] == '/')
		return valid_abs_path(s);
	colon = strchr(s, ':');
	if (!colon || colon == s || colon[1] == '\0')
		return false;
	for (const char *p = s; *p; p++)
		if (p != colon && !isdigit((unsigned char)*p))
			return false;
	return strlen(s) <= 21;
}

static bool valid_ifname(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > IFNAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/' || s[i] == ':' || isspace((unsigned char)s[i]))
			return false;
	return true;
}

static void capacity_key(struct parser *ps, int k, const char *value)
{
	struct drf_config *c = ps->cfg;
	static const int res_of[CK_N] = {
		[CK_CPU] = DRF_RES_CPU, [CK_MEMORY] = DRF_RES_MEMORY,
		[CK_IO_READ] = DRF_RES_IO_READ, [CK_IO_WRITE] = DRF_RES_IO_WRITE,
		[CK_NET_RATE] = DRF_RES_NET, [CK_NET_IN] = DRF_RES_NET_IN, [CK_MEMORY_RESERVE] = -1,
		[CK_IO_DEVICE] = -1, [CK_NET_DEVICE] = -1, [CK_NET_LINK] = -1,
	};
	int r = res_of[k];
	double v;

	switch (k) {
	case CK_IO_DEVICE:
		if (!valid_io_device(value))
			fail(ps, "io-device = '%s': expected a block device path or MAJ:MIN", value);
		else
			set_string(ps, &c->io_device, value);
		return;
	case CK_NET_DEVICE:
		if (!valid_ifname(value))
			fail(ps, "net-device = '%s': not a network interface name", value);
		else
			set_string(ps, &c->net_device, value);
		return;
	case CK_MEMORY_RESERVE:
		if (parse_num(ps, "memory-reserve", value, DRF_UNIT_BYTES, &v))
			c->memory_reserve = v;
		return;
	case CK_NET_LINK:
		if (!parse_num(ps, "net-link-rate", value, DRF_UNIT_BITS, &v))
			return;
		if (v <= 0)
			fail(ps, "net-link-rate = '%s': must be positive (leave it out to use the "
				 "device's speed)", value);
		else
			c->net_link_rate = v;
		return;
	}
	if (is_auto(value) && (k == CK_CPU || k == CK_MEMORY || k == CK_NET_RATE || k == CK_NET_IN)) {
		if (k == CK_CPU)
			ps->auto_cpu = true;
		else if (k == CK_MEMORY)
			ps->auto_memory = true;
		else if (k == CK_NET_RATE)
			ps->auto_net = true;
		else
			ps->auto_net_in = true;
		return;
	}
	if (!parse_num(ps, cap_keys[k], value, drf_res_unit(r), &v))
		return;
	if (v <= 0) {
		fail(ps, "%s = '%s': a capacity must be positive (leave the key out to "
			 "keep %s out of the allocation)", cap_keys[k], value, drf_res_name(r));
		return;
	}
	c->capacity[r] = v;
}

static int tenant_key_index(const char *name)
{
	int r;

	if (strcmp(name, "weight") == 0)
		return TK_WEIGHT;
	if (strcmp(name, "cgroup") == 0)
		return TK_CGROUP;
	if (strcmp(name, "tasks") == 0)
		return TK_TASKS;
	if (strcmp(name, "group") == 0)
		return TK_GROUP;
	if (strcmp(name, "access") == 0)
		return TK_ACCESS;
	if (strcmp(name, "admins") == 0)
		return TK_ADMINS;
	r = drf_res_from_name(name);
	if (r >= 0)
		return TK_DEMAND0 + r;
	if (strncmp(name, "task-", 5) == 0) {
		r = drf_res_from_name(name + 5);
		if (r >= 0)
			return TK_TASK0 + r;
	}
	return -1;
}

static const char *tenant_key_name(int k, char *buf, size_t len)
{
	if (k == TK_WEIGHT)
		return "weight";
	if (k == TK_CGROUP)
		return "cgroup";
	if (k == TK_TASKS)
		return "tasks";
	if (k == TK_GROUP)
		return "group";
	if (k == TK_ACCESS)
		return "access";
	if (k == TK_ADMINS)
		return "admins";
	if (k < TK_TASK0)
		return drf_res_name(k - TK_DEMAND0);
	snprintf(buf, len, "task-%s", drf_res_name(k - TK_TASK0));
	return buf;
}

static bool is_task_key(int k)
{
	return k == TK_TASKS || (k >= TK_TASK0 && k < TK_TASK0 + DRF_NRES);
}

static bool is_demand_key(int k)
{
	return k >= TK_DEMAND0 && k < TK_TASK0;
}

static void tenant_key(struct parser *ps, int k, const char *value)
{
	struct drf_tenant *t = &ps->cfg->tenants[ps->tenant];
	int *lines = &ps->tenant_lines[ps->tenant * TK_N];
	char nb[32], ob[32];
	double v;

	/* A tenant is described either by a demand or by a task shape, never both. */
	for (int o = 0; o < TK_N; o++) {
		if (!lines[o] || !((is_task_key(k) && is_demand_key(o)) ||
				   (is_demand_key(k) && is_task_key(o))))
			continue;
		fail(ps, "tenant '%s': '%s' mixes a demand with a task shape ('%s' at line %d); "
			 "use either demand keys (cpu, memory, ...) or task-* keys with tasks",
		     t->name, tenant_key_name(k, nb, sizeof(nb)),
		     tenant_key_name(o, ob, sizeof(ob)), lines[o]);
		return;
	}
	if (k == TK_WEIGHT) {
		if (!parse_num(ps, "weight", value, DRF_UNIT_CORES, &v))
			return;
		if (!(v > 0 && v <= DRF_WEIGHT_MAX)) {
			fail(ps, "weight = '%s': out of range (0, %g]", value, DRF_WEIGHT_MAX);
			return;
		}
		t->weight = v;
	} else if (k == TK_CGROUP) {
		const char *why = drf_cgroup_path_problem(value);

		if (why) {
			fail(ps, "cgroup = '%s': the path %s", value, why);
			return;
		}
		set_string(ps, &t->cgroup, value);
	} else if (k == TK_GROUP) {
		set_string(ps, &ps->tenant_group[ps->tenant], value);
	} else if (k == TK_ACCESS || k == TK_ADMINS) {
		acl_key(ps, k == TK_ACCESS ? &t->access : &t->admins, value);
	} else if (k == TK_TASKS) {
		t->task_model = true;
		if (strcmp(value, "unlimited") == 0) {
			t->tasks = INFINITY;
		} else {
			if (!parse_num(ps, "tasks", value, DRF_UNIT_CORES, &v))
				return;
			if (v < 1 || v != floor(v) || v > 1e15) {
				fail(ps, "tasks = '%s': expected a whole number >= 1 or 'unlimited'",
				     value);
				return;
			}
			t->tasks = v;
		}
	} else {
		bool task = k >= TK_TASK0;
		int r = task ? k - TK_TASK0 : k - TK_DEMAND0;

		if (!parse_num(ps, tenant_key_name(k, nb, sizeof(nb)), value, drf_res_unit(r), &v))
			return;
		t->task_model = task;
		t->vec[r] = v;
		t->declared[r] = true;
		t->vec_line[r] = ps->line;
	}
}

size_t drf_config_impossible(const struct drf_config *c, drf_config_note_fn *note, void *ctx)
{
	char what[256], v[32], cap[32];
	size_t n = 0;

	for (size_t i = 0; i < c->n_tenants; i++) {
		const struct drf_tenant *t = &c->tenants[i];

		for (int r = 0; r < DRF_NRES; r++) {
			double k = c->capacity[r];

			if (!t->declared[r] || !(k > 0) || !(t->vec[r] > k))
				continue;
			drf_format_quantity(t->vec[r], drf_res_unit(r), v, sizeof(v));
			drf_format_quantity(k, drf_res_unit(r), cap, sizeof(cap));
			if (t->task_model)
				snprintf(what, sizeof(what), "tenant '%s': task-%s = %s is more than the "
					 "capacity's %s (%s): not one task fits", t->name,
					 drf_res_name(r), v, drf_res_name(r), cap);
			else
				snprintf(what, sizeof(what), "tenant '%s': %s = %s is more than the "
					 "capacity's %s (%s): at most %.1f%% of its demand can be met",
					 t->name, drf_res_name(r), v, drf_res_name(r), cap,
					 100 * k / t->vec[r]);
			note(ctx, t->file, t->vec_line[r] ? t->vec_line[r] : t->line, what);
			n++;
		}
	}
	return n;
}

static void duplicate_key(struct parser *ps, int *first_line, const char *key)
{
	if (*first_line)
		fail(ps, "'%s' is set twice in this section (first at line %d)", key, *first_line);
	else
		*first_line = ps->line;
}

static void server_key(struct parser *ps, const char *name, const char *value)
{
	int before;
	struct drf_server *sv = &ps->fleet->servers[ps->fleet->n_servers - 1];
	int *lines = &ps->server_lines[(ps->fleet->n_servers - 1) * SK_N];
	int k = strcmp(name, "count") == 0 ? SK_COUNT : drf_res_from_name(name);
	double v;

	if (k < 0) {
		fail(ps, "unknown key '%s' in [server %s] (known: cpu, memory, io-read-bps, "
			 "io-write-bps, net-rate, net-ingress-rate, count)", name, sv->name);
		return;
	}
	before = ps->n_err;
	duplicate_key(ps, &lines[k], name);
	if (ps->n_err == before && value[0] == '\0')
		fail(ps, "'%s' has an empty value", name);
	if (ps->n_err != before)
		return;
	if (k == SK_COUNT) {
		if (!parse_num(ps, "count", value, DRF_UNIT_CORES, &v))
			return;
		if (v < 1 || v != floor(v) || v > DRF_FLEET_MAX_SERVERS) {
			fail(ps, "count = '%s': expected a whole number from 1 to %d", value,
			     DRF_FLEET_MAX_SERVERS);
			return;
		}
		sv->count = (size_t)v;
		sv->counted = true;
		return;
	}
	if (!parse_num(ps, name, value, drf_res_unit(k), &v))
		return;
	sv->capacity[k] = v;
}

static void fleet_key(struct parser *ps, const char *name, const char *value)
{
	int before;
	int r = strncmp(name, "slot-", 5) == 0 ? drf_res_from_name(name + 5) : -1;
	double v;

	if (r < 0) {
		fail(ps, "unknown key '%s' in [fleet] (known: slot-cpu, slot-memory, "
			 "slot-io-read-bps, slot-io-write-bps, slot-net-rate, slot-net-ingress-rate)",
		     name);
		return;
	}
	before = ps->n_err;
	duplicate_key(ps, &ps->fleet_line[r], name);
	if (ps->n_err == before && value[0] == '\0')
		fail(ps, "'%s' has an empty value", name);
	if (ps->n_err != before || !parse_num(ps, name, value, drf_res_unit(r), &v))
		return;
	if (!(v > 0)) {
		fail(ps, "%s = '%s': a slot must hold some of it", name, value);
		return;
	}
	ps->fleet->slot[r] = v;
}

static const char *const member_keys[12] = {
	"endpoints", "prefix", "node", "lease-ttl", "ca-file", "cert-file", "key-file", "user",
	"password-file", "task-user", "grace", "planner",
};

static bool valid_endpoints(const char *s)
{
	for (;;) {
		const char *end = strchr(s, ',');
		size_t n = end ? (size_t)(end - s) : strlen(s);

		if (!((n > 7 && strncmp(s, "http://", 7) == 0) ||
		      (n > 8 && strncmp(s, "https://", 8) == 0)))
			return false;
		for (size_t k = 0; k < n; k++)
			if (isspace((unsigned char)s[k]) || !isprint((unsigned char)s[k]))
				return false;
		if (!end)
			return true;
		s = end + 1;
	}
}

/* drfd.conf's [fleet]: how this node joins its fleet. */
static void member_key(struct parser *ps, const char *name, const char *value)
{
	int before;
	struct drf_fleet_member *m = &ps->cfg->fleet;
	int k = lookup(member_keys, 12, name);
	double ms;
	const char *why;

	if (k < 0) {
		fail(ps, "unknown key '%s' in [fleet] (known: endpoints, prefix, node, lease-ttl, "
			 "grace, ca-file, cert-file, key-file, user, password-file, task-user, planner)",
		     name);
		return;
	}
	before = ps->n_err;
	duplicate_key(ps, &ps->member_line[k], name);
	if (ps->n_err == before && value[0] == '\0')
		fail(ps, "'%s' has an empty value", name);
	if (ps->n_err != before)
		return;
	switch (k) {
	case 0:
		if (!valid_endpoints(value)) {
			fail(ps, "endpoints = '%s': expected http:// or https:// URLs, separated by "
				 "commas", value);
			return;
		}
		set_string(ps, &m->endpoints, value);
		return;
	case 1: {
		size_t n = strlen(value);

		if (value[0] != '/' || value[n - 1] != '/' || n > 128) {
			fail(ps, "prefix = '%s': expected a key prefix that begins and ends with "
				 "'/', at most 128 bytes", value);
			return;
		}
		set_string(ps, &m->prefix, value);
		return;
	}
	case 2:
		if (!drf_name_valid(value)) {
			fail(ps, "node = '%s': not 1-%d characters of [A-Za-z0-9_.-] not starting "
				 "with '.'", value, DRF_TENANT_NAME_MAX);
			return;
		}
		set_string(ps, &m->node, value);
		return;
	case 3:
		if (drf_parse_duration_ms(value, &ms, &why) < 0) {
			fail(ps, "lease-ttl = '%s': %s", value, why);
			return;
		}
		if (ms < 2000 || ms > 3600000 || ms != floor(ms / 1000) * 1000) {
			fail(ps, "lease-ttl = '%s': expected whole seconds from 2s (etcd's least) to "
				 "1h", value);
			return;
		}
		m->lease_ttl_us = (uint64_t)ms * DRF_USEC_PER_MSEC;
		return;
	case 10:
		if (drf_parse_duration_ms(value, &ms, &why) < 0) {
			fail(ps, "grace = '%s': %s", value, why);
			return;
		}
		if (ms < 1000 || ms > 7 * 86400000.0 || ms != floor(ms / 1000) * 1000) {
			fail(ps, "grace = '%s': expected whole seconds from 1s to 7d", value);
			return;
		}
		m->grace_us = (uint64_t)ms * DRF_USEC_PER_MSEC;
		return;
	case 11: {
		int v = two_words(ps, "planner", value, "yes", "no");

		if (v >= 0)
			m->plain = v;
		return;
	}
	case 9:
		/* Resolved once the file is read (fleet_member), with the host's user database. */
		set_string(ps, &m->task_user, value);
		return;
	case 7:
		for (const char *q = value; *q; q++)
			if (!isgraph((unsigned char)*q) || *q == ':') {
				fail(ps, "user = '%s': an etcd user name has no spaces, control "
					 "characters or ':'", value);
				return;
			}
		set_string(ps, &m->user, value);
		return;
	default:
		if (!valid_abs_path(value)) {
			fail(ps, "%s = '%s': expected an absolute path", name, value);
			return;
		}
		set_string(ps, k == 4 ? &m->ca_file : k == 5 ? &m->cert_file : k == 6 ? &m->key_file
				 : &m->password_file, value);
		return;
	}
}

static void group_key(struct parser *ps, int k, const char *value)
{
	struct drf_group *g = &ps->cfg->groups[ps->group];
	double v;

	if (k == GK_WEIGHT) {
		if (!parse_num(ps, "weight", value, DRF_UNIT_CORES, &v))
			return;
		if (!(v > 0 && v <= DRF_WEIGHT_MAX)) {
			fail(ps, "weight = '%s': out of range (0, %g]", value, DRF_WEIGHT_MAX);
			return;
		}
		g->weight = v;
	} else if (k == GK_CGROUP) {
		const char *why = drf_cgroup_path_problem(value);

		if (why) {
			fail(ps, "cgroup = '%s': the path %s", value, why);
			return;
		}
		set_string(ps, &g->cgroup, value);
	} else if (k == GK_ACCESS || k == GK_ADMINS) {
		acl_key(ps, k == GK_ACCESS ? &g->access : &g->admins, value);
	} else {
		set_string(ps, &ps->group_parent[ps->group], value);
	}
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parser *ps = user;
	char nb[32];
	int k;

	int before = ps->n_err; /* this key's own errors: those after it */

	(void)section; /* the reader tracks sections itself, including empty ones */
	if (ps->stop)
		return 0;
	switch (ps->sec) {
	case SEC_NONE:
		fail(ps, "'%s' is outside any section", name);
		return ps->stop ? 0 : 1;
	case SEC_AGENT:
		k = lookup(agent_keys, AK_N, name);
		if (k < 0) {
			fail(ps, "unknown key '%s' in [agent] (known: cgroup-root, interval, mode, "
				 "policy, tenants-dir, state-dir, status-socket, status-group, "
				 "verify-period, net-replace-qdisc, metrics-file, metrics-detail, "
				 "metrics-listen, metrics-legacy-names, demand, beta, lambda, access, "
				 "admins, task-output-max)", name);
			return ps->stop ? 0 : 1;
		}
		duplicate_key(ps, &ps->agent_line[k], name);
		if (value[0] == '\0')
			fail(ps, "'%s' has an empty value", name);
		if (ps->n_err == before)
			agent_key(ps, k, value);
		break;
	case SEC_CAPACITY:
		k = lookup(cap_keys, CK_N, name);
		if (k < 0) {
			fail(ps, "unknown key '%s' in [capacity] (known: cpu, memory, "
				 "memory-reserve, io-device, io-read-bps, io-write-bps, net-device, "
				 "net-rate, net-ingress-rate, net-link-rate)", name);
			return ps->stop ? 0 : 1;
		}
		duplicate_key(ps, &ps->cap_line[k], name);
		if (value[0] == '\0')
			fail(ps, "'%s' has an empty value", name);
		if (ps->n_err == before)
			capacity_key(ps, k, value);
		break;
	case SEC_SERVER:
		server_key(ps, name, value);
		break;
	case SEC_FLEET:
		if (ps->fleet)
			fleet_key(ps, name, value);
		else
			member_key(ps, name, value);
		break;
	case SEC_TENANT:
		k = tenant_key_index(name);
		if (k < 0) {
			fail(ps, "unknown key '%s' in [tenant %s] (known: weight, cgroup, cpu, memory, "
				 "io-read-bps, io-write-bps, net-rate, net-ingress-rate, task-cpu, "
				 "task-memory, task-io-read-bps, task-io-write-bps, task-net-rate, "
				 "task-net-ingress-rate, tasks, group, access, admins)",
			     name, ps->cfg->tenants[ps->tenant].name);
			return ps->stop ? 0 : 1;
		}
		duplicate_key(ps, &ps->tenant_lines[ps->tenant * TK_N + k],
			      tenant_key_name(k, nb, sizeof(nb)));
		if (value[0] == '\0')
			fail(ps, "'%s' has an empty value", name);
		if (ps->n_err == before)
			tenant_key(ps, k, value);
		break;
	case SEC_GROUP:
		k = lookup(group_keys, GK_N, name);
		if (k < 0) {
			fail(ps, "unknown key '%s' in [group %s] (known: weight, cgroup, group, access, "
				 "admins)", name,
			     ps->cfg->groups[ps->group].name);
			return ps->stop ? 0 : 1;
		}
		duplicate_key(ps, &ps->group_lines[ps->group * GK_N + k], name);
		if (value[0] == '\0')
			fail(ps, "'%s' has an empty value", name);
		if (ps->n_err == before)
			group_key(ps, k, value);
		break;
	}
	return ps->stop ? 0 : 1;
}

/* The key of the index of tenant names: loading n tenants is O(n), not O(n^2). */
static const void *tenant_name(const void *ctx, size_t i, size_t *ret_len)
{
	const struct drf_config *c = ctx;

	*ret_len = strlen(c->tenants[i].name);
	return c->tenants[i].name;
}

static void add_tenant(struct parser *ps, const char *name)
{
	struct drf_config *c = ps->cfg;
	struct drf_tenant *t;
	size_t dup;
	int r;

	if (DRF_VEC_GROW(c->tenants, &ps->tenants_cap, c->n_tenants + 1) < 0 ||
	    drf_vec_grow(&ps->tenant_lines, &ps->lines_cap, c->n_tenants + 1,
			 TK_N * sizeof(*ps->tenant_lines)) < 0 ||
	    DRF_VEC_GROW(ps->tenant_group, &ps->tgroup_cap, c->n_tenants + 1) < 0) {
		fail(ps, "out of memory");
		return;
	}
	/* Made in the free slot, counted once the index takes it. */
	t = &c->tenants[c->n_tenants];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	r = drf_index_add(&ps->names, c->n_tenants, &dup);
	if (r == -EEXIST) {
		fail(ps, "duplicate tenant '%s' (first defined at %s:%d)", name, c->tenants[dup].file,
		     c->tenants[dup].line);
		return;
	}
	if (r < 0) {
		fail(ps, "out of memory");
		return;
	}
	memset(&ps->tenant_lines[c->n_tenants * TK_N], 0, TK_N * sizeof(int));
	ps->tenant_group[c->n_tenants] = NULL;
	t->weight = 1;
	t->tasks = INFINITY;
	t->file = ps->file;
	t->line = ps->line;
	ps->tenant = c->n_tenants++;
}

static void add_server(struct parser *ps, const char *name)
{
	struct drf_fleet *f = ps->fleet;
	struct drf_server *sv;

	if (DRF_VEC_GROW(f->servers, &ps->servers_cap, f->n_servers + 1) < 0 ||
	    drf_vec_grow(&ps->server_lines, &ps->slines_cap, f->n_servers + 1,
			 SK_N * sizeof(*ps->server_lines)) < 0) {
		fail(ps, "out of memory");
		return;
	}
	sv = &f->servers[f->n_servers];
	memset(sv, 0, sizeof(*sv));
	snprintf(sv->name, sizeof(sv->name), "%s", name);
	sv->count = 1;
	sv->file = ps->file;
	sv->line = ps->line;
	memset(&ps->server_lines[f->n_servers * SK_N], 0, SK_N * sizeof(int));
	f->n_servers++;
	ps->sec = SEC_SERVER;
}

/* The key of the index of group names. */
static const void *group_name(const void *ctx, size_t i, size_t *ret_len)
{
	const struct drf_config *c = ctx;

	*ret_len = strlen(c->groups[i].name);
	return c->groups[i].name;
}

static void add_group(struct parser *ps, const char *name)
{
	struct drf_config *c = ps->cfg;
	struct drf_group *g;
	size_t dup;
	int r;

	if (DRF_VEC_GROW(c->groups, &ps->groups_cap, c->n_groups + 1) < 0 ||
	    drf_vec_grow(&ps->group_lines, &ps->glines_cap, c->n_groups + 1,
			 GK_N * sizeof(*ps->group_lines)) < 0 ||
	    DRF_VEC_GROW(ps->group_parent, &ps->gparent_cap, c->n_groups + 1) < 0) {
		fail(ps, "out of memory");
		return;
	}
	g = &c->groups[c->n_groups];
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "%s", name);
	r = drf_index_add(&ps->gnames, c->n_groups, &dup);
	if (r == -EEXIST) {
		fail(ps, "duplicate group '%s' (first defined at %s:%d)", name, c->groups[dup].file,
		     c->groups[dup].line);
		return;
	}
	if (r < 0) {
		fail(ps, "out of memory");
		return;
	}
	memset(&ps->group_lines[c->n_groups * GK_N], 0, GK_N * sizeof(int));
	ps->group_parent[c->n_groups] = NULL;
	g->weight = 1;
	g->file = ps->file;
	g->line = ps->line;
	ps->group = c->n_groups++;
	ps->sec = SEC_GROUP;
}

/* "[WORD NAME]": NAME, or NULL if the section is not WORD's. */
static const char *section_arg(const char *section, const char *word)
{
	size_t n = strlen(word);

	if (strncmp(section, word, n) != 0 || (section[n] != ' ' && section[n] != '\t'))
		return NULL;
	section += n;
	while (*section == ' ' || *section == '\t')
		section++;
	return section;
}

static void enter_section(struct parser *ps, const char *name)
{
	if (ps->fleet) {
		const char *n = section_arg(name, "server");

		if (n) {
			if (!drf_name_valid(n)) {
				fail(ps, "server name '%s' is not 1-%d characters of [A-Za-z0-9_.-] "
					 "not starting with '.'", n, DRF_TENANT_NAME_MAX);
				return;
			}
			add_server(ps, n);
			return;
		}
		if (strcmp(name, "fleet") == 0) {
			if (ps->fleet_sec_line) {
				fail(ps, "section [fleet] appears twice (first at line %d)",
				     ps->fleet_sec_line);
				return;
			}
			ps->fleet_sec_line = ps->line;
			ps->sec = SEC_FLEET;
			return;
		}
		if (!section_arg(name, "tenant")) {
			fail(ps, "unknown section [%s] in a fleet file (expected [fleet], "
				 "[server NAME] or [tenant NAME]; a host's [agent] and [capacity] "
				 "belong in its drfd.conf)", name);
			return;
		}
	}
	if (strcmp(name, "fleet") == 0) {
		if (!ps->main_file) {
			fail(ps, "[fleet] belongs in the main config file, not in a tenants file");
			return;
		}
		if (ps->fleet_sec_line) {
			fail(ps, "section [fleet] appears twice (first at line %d)", ps->fleet_sec_line);
			return;
		}
		ps->fleet_sec_line = ps->line;
		ps->cfg->fleet.on = true;
		ps->cfg->fleet.line = ps->line;
		ps->sec = SEC_FLEET;
		return;
	}
	if (strcmp(name, "agent") == 0 || strcmp(name, "capacity") == 0) {
		bool agent = name[0] == 'a';
		int *seen = agent ? &ps->agent_sec_line : &ps->cap_sec_line;

		if (!ps->main_file) {
			fail(ps, "[%s] belongs in the main config file, not in a tenants file", name);
			return;
		}
		if (*seen) {
			fail(ps, "section [%s] appears twice (first at line %d)", name, *seen);
			return;
		}
		*seen = ps->line;
		ps->sec = agent ? SEC_AGENT : SEC_CAPACITY;
		return;
	}
	if (strncmp(name, "tenant", 6) == 0 && (name[6] == ' ' || name[6] == '\t')) {
		const char *n = name + 6;

		while (*n == ' ' || *n == '\t')
			n++;
		if (!drf_name_valid(n)) {
			fail(ps, "tenant name '%s' is not 1-%d characters of [A-Za-z0-9_.-] "
				 "not starting with '.'", n, DRF_TENANT_NAME_MAX);
			return;
		}
		add_tenant(ps, n);
		ps->sec = SEC_TENANT;
		return;
	}
	if (section_arg(name, "group")) {
		const char *n = section_arg(name, "group");

		if (!drf_name_valid(n)) {
			fail(ps, "group name '%s' is not 1-%d characters of [A-Za-z0-9_.-] "
				 "not starting with '.'", n, DRF_TENANT_NAME_MAX);
			return;
		}
		add_group(ps, n);
		return;
	}
	fail(ps, "unknown section [%s] (expected [agent], [capacity], [fleet], [tenant NAME] "
		 "or [group NAME])", name);
}

/*
 * The reader inih calls for each line, like fgets(). It hands over whole lines
 * only: inih would cut a line longer than its buffer and read the rest as a
 * line of its own, so that is an error here. It also does what the handler
 * cannot: it sees section headers (empty sections are never reported to the
 * handler), and it refuses indented lines, which inih takes as continuations of
 * the previous value.
 */
/* An error after which the file's next lines mean nothing: its reading ends. */
static char *stop(struct parser *ps)
{
	ps->stop = true;
	return NULL;
}

static char *reader(char *str, int num, void *stream)
{
	struct parser *ps = stream;
	const char *start, *nl, *p;
	size_t n, content;
	int before;

	if (ps->stop || ps->pos >= ps->len)
		return NULL;
	start = ps->buf + ps->pos;
	nl = memchr(start, '\n', ps->len - ps->pos);
	n = nl ? (size_t)(nl - start) + 1 : ps->len - ps->pos;
	ps->pos += n;
	ps->line++;
	content = nl ? n - 1 : n;
	if (content > 0 && start[content - 1] == '\r')
		content--;
	if (memchr(start, '\0', n)) {
		fail(ps, "contains a NUL byte");
		return stop(ps);
	}
	if (num < 3 || (nl ? n - 1 : n) > (size_t)num - 2) {
		fail(ps, "line is longer than %d characters", num - 2);
		return stop(ps);
	}
	memcpy(str, start, n);
	str[n] = '\0';

	p = str;
	if (ps->line == 1 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
	    (unsigned char)p[2] == 0xBF)
		p += 3;
	if (*p == ' ' || *p == '\t') {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p && *p != '\n' && *p != '\r' && *p != ';' && *p != '#') {
			fail(ps, "indented line: inih would read it as a continuation of the "
				 "previous value; remove the leading whitespace");
			return stop(ps);
		}
		return str;
	}
	if (*p == '[') {
		const char *close = strchr(p, ']');
		char name[128];
		size_t len;

		if (!close) {
			fail(ps, "section header without ']'");
			return stop(ps);
		}
		for (const char *q = close + 1; *q && *q != ';' && *q != '#'; q++) {
			if (!isspace((unsigned char)*q)) {
				fail(ps, "text after the section header's ']'");
				return stop(ps);
			}
		}
		len = (size_t)(close - p - 1);
		if (len >= sizeof(name)) {
			fail(ps, "section name is too long");
			return stop(ps);
		}
		memcpy(name, p + 1, len);
		name[len] = '\0';
		before = ps->n_err;
		enter_section(ps, name);
		if (ps->n_err != before)
			return stop(ps);
		return str;
	}
	/* inih's own error, said here in the order of the file: a line that is
	 * not a comment and has no '=' or ':' */
	if (*p && *p != '\n' && *p != '\r' && *p != ';' && *p != '#' && !strpbrk(p, "=:"))
		fail(ps, "expected 'key = value', '[section]' or a comment");
	return str;
}

static int read_file(struct parser *ps, const char *path, char **ret_buf, size_t *ret_len)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd, err;

	/*
	 * O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer,
	 * forever; only a regular file is read, and that is checked below.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		err = -errno;
		fail_at(ps, 0, "cannot open: %s", strerror(-err));
		return err;
	}
	if (fstat(fd, &st) < 0) {
		err = -errno;
		fail_at(ps, 0, "cannot stat: %s", strerror(-err));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		fail_at(ps, 0, "not a regular file");
		goto out_close;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		err = -errno;
		fail_at(ps, 0, "cannot read: %s", strerror(-err));
		goto out_close;
	}
	if (st.st_size > DRF_CONFIG_MAX_BYTES) {
		err = -EFBIG;
		fail_at(ps, 0, "larger than %d bytes", DRF_CONFIG_MAX_BYTES);
		goto out_close;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		err = -ENOMEM;
		fail_at(ps, 0, "out of memory");
		goto out_close;
	}
	n = drf_read_full(fd, buf, (size_t)st.st_size);
	if (n < 0) {
		err = (int)n;
		fail_at(ps, 0, "cannot read: %s", strerror(-err));
		goto out_free;
	}
	len = (size_t)n;
	*ret_buf = buf;
	*ret_len = len;
	close(fd);
	return 0;
out_free:
	free(buf);
out_close:
	close(fd);
	return err;
}

static int parse_file(struct parser *ps, const char *path, bool main_file)
{
	struct drf_config *c = ps->cfg;
	char *name, *buf = NULL;
	size_t len = 0;
	int r;

	name = strdup(path);
	if (!name || DRF_VEC_GROW(c->files, &ps->files_cap, c->n_files + 1) < 0) {
		free(name);
		snprintf(ps->err, ps->errlen, "%s: out of memory", path);
		ps->failed = true;
		return -ENOMEM;
	}
	c->files[c->n_files++] = name;
	ps->file = name;
	ps->main_file = main_file;
	ps->line = 0;
	ps->sec = SEC_NONE;
	r = read_file(ps, path, &buf, &len);
	if (r < 0)
		return r;
	ps->buf = buf;
	ps->len = len;
	ps->pos = 0;
	r = ini_parse_stream(reader, ps, handler, ps);
	/*
	 * inih reports its own syntax errors (a line with no '=' or ':') only as
	 * the number of the first bad line, after going on to the end; ours stop
	 * it at once. Whichever came first is the one to report.
	 */
	if (r > 0 && !ps->failed)
		fail_at(ps, r, "expected 'key = value', '[section]' or a comment");
	free(buf);
	ps->buf = NULL;
	return ps->failed ? -EINVAL : 0;
}

static int conf_filter(const struct dirent *de)
{
	size_t n = strlen(de->d_name);

	return de->d_name[0] != '.' && n > 5 && strcmp(de->d_name + n - 5, ".conf") == 0;
}

static int parse_tenants_dir(struct parser *ps, bool explicit)
{
	struct drf_config *c = ps->cfg;
	struct dirent **list = NULL;
	int n, r = 0;

	n = scandir(c->tenants_dir, &list, conf_filter, alphasort);
	if (n < 0) {
		int err = -errno;

		if (err == -ENOENT && !explicit)
			return 0; /* the default tenants.d is optional */
		ps->file = c->path;
		fail_at(ps, ps->agent_line[AK_TENANTS_DIR], "tenants-dir '%s': %s", c->tenants_dir,
			strerror(-err));
		return err;
	}
	for (int i = 0; i < n; i++) {
		char *path;

		if (r == 0) {
			if (asprintf(&path, "%s/%s", c->tenants_dir, list[i]->d_name) < 0) {
				r = -ENOMEM;
			} else {
				r = parse_file(ps, path, false);
				free(path);
			}
		}
		free(list[i]);
	}
	free(list);
	return r;
}

/* Where a tenant key was set, or its section if it was not. */
static int tenant_line(const struct parser *ps, size_t i, int k)
{
	int l = ps->tenant_lines[i * TK_N + k];

	return l ? l : ps->cfg->tenants[i].line;
}

/* Where a tenant's cgroup path comes from: its cgroup key, else its group key. */
static int path_line(const struct parser *ps, size_t i)
{
	int l = ps->tenant_lines[i * TK_N + TK_CGROUP];

	return l ? l : tenant_line(ps, i, TK_GROUP);
}

static int cmp_cgroup(const void *a, const void *b)
{
	const char *x = (*(const struct drf_tenant *const *)a)->cgroup;
	const char *y = (*(const struct drf_tenant *const *)b)->cgroup;

	/* '/' sorts first, so that a path's descendants come right after it. */
	for (;; x++, y++) {
		unsigned char cx = *x == '/' ? 1 : (unsigned char)*x;
		unsigned char cy = *y == '/' ? 1 : (unsigned char)*y;

		if (cx != cy || !cx)
			return cx - cy;
	}
}

static bool is_under(const char *parent, const char *child)
{
	size_t n = strlen(parent);

	return strncmp(parent, child, n) == 0 && (child[n] == '\0' || child[n] == '/');
}

static int check_tenants(struct parser *ps)
{
	struct drf_config *c = ps->cfg;
	struct drf_tenant **sorted;
	/* A fleet's tenants without its servers: each node's capacity is checked by the planner. */
	bool no_pool = ps->fleet && ps->servers_optional && ps->fleet->n_servers == 0;

	for (size_t i = 0; i < c->n_tenants; i++) {
		struct drf_tenant *t = &c->tenants[i];
		bool any = false;

		ps->file = t->file;
		if (!t->cgroup) {
			const char *why = drf_cgroup_path_problem(t->name);

			if (why) {
				fail_at(ps, t->line, "tenant '%s': its name, used as its cgroup, %s; "
						     "set 'cgroup' to another path", t->name, why);
				return -EINVAL;
			}
			t->cgroup = strdup(t->name);
			if (!t->cgroup) {
				fail_at(ps, t->line, "out of memory");
				return -ENOMEM;
			}
		}
		if (!t->task_model)
			continue;
		for (int r = 0; r < DRF_NRES; r++)
			any = any || (t->declared[r] && t->vec[r] > 0 &&
				      (c->capacity[r] > 0 || no_pool));
		if (!any) {
			int l = tenant_line(ps, i, TK_TASKS);

			fail_at(ps, l, "tenant '%s': its task needs none of the resources with a "
				       "capacity; give at least one task-* key a positive value",
				t->name);
			return -EINVAL;
		}
	}
	/*
	 * The network programs look for a packet's tenant among its cgroup's
	 * ancestors at most DRF_NET_MAX_DEPTH (bpf/net.h) levels below the root.
	 */
	if (c->capacity[DRF_RES_NET] > 0 || c->capacity[DRF_RES_NET_IN] > 0)
		for (size_t i = 0; i < c->n_tenants; i++) {
			const struct drf_tenant *t = &c->tenants[i];
			int depth = 1;

			for (const char *q = t->cgroup; *q; q++)
				depth += *q == '/';
			if (depth <= NET_MAX_DEPTH)
				continue;
			ps->file = t->file;
			fail_at(ps, tenant_line(ps, i, TK_CGROUP), "tenant '%s': cgroup '%s' is %d "
				"levels below cgroup-root; with a network capacity, at most %d",
				t->name, t->cgroup, depth, NET_MAX_DEPTH);
			return -EINVAL;
		}
	if (c->n_tenants < 2)
		return 0;
	sorted = malloc(c->n_tenants * sizeof(*sorted));
	if (!sorted) {
		fail_at(ps, 0, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n_tenants; i++)
		sorted[i] = &c->tenants[i];
	qsort(sorted, c->n_tenants, sizeof(*sorted), cmp_cgroup);
	for (size_t i = 1; i < c->n_tenants; i++) {
		const struct drf_tenant *a = sorted[i - 1], *b = sorted[i];

		if (!is_under(a->cgroup, b->cgroup))
			continue;
		ps->file = b->file;
		fail_at(ps, path_line(ps, (size_t)(b - c->tenants)),
			"tenant '%s': cgroup '%s' %s cgroup '%s' of tenant '%s' (%s:%d); "
			"tenant cgroups must not overlap", b->name, b->cgroup,
			strcmp(a->cgroup, b->cgroup) == 0 ? "is the same as" : "is inside",
			a->cgroup, a->name, a->file, a->line);
		free(sorted);
		return -EINVAL;
	}
	free(sorted);
	return 0;
}

/* The group of `group = name` at file:line, as 1 + its index; 0 after failing. */
static size_t group_ref(struct parser *ps, const char *what, const char *name, const char *file,
			int line)
{
	ssize_t k = drf_index_find_str(&ps->gnames, name);

	if (k >= 0)
		return (size_t)k + 1;
	ps->file = file;
	fail_at(ps, line, "%s: group = '%s': there is no [group %s]", what, name, name);
	return 0;
}

/* a/b, or what the allocation failed with. */
static char *join_path(struct parser *ps, const char *a, const char *b)
{
	char *p;

	if (asprintf(&p, "%s/%s", a, b) < 0) {
		fail_at(ps, 0, "out of memory");
		return NULL;
	}
	return p;
}

/*
 * [group NAME] sections: each `group =` names a group; no cycles, no group
 * without a tenant below it, no group with a tenant's name; groups only with
 * policy = drf. Then the cgroup paths: a group's below its parent's, a
 * member's below its group's.
 */
static int resolve_groups(struct parser *ps)
{
	struct drf_config *c = ps->cfg;
	size_t ng = c->n_groups;
	bool *used;
	char what[DRF_TENANT_NAME_MAX + 16];

	for (size_t i = 0; ng == 0 && i < c->n_tenants; i++) {
		snprintf(what, sizeof(what), "tenant '%s'", c->tenants[i].name);
		if (ps->tenant_group[i])
			return group_ref(ps, what, ps->tenant_group[i], c->tenants[i].file,
					 tenant_line(ps, i, TK_GROUP)) ? 0 : -EINVAL;
	}
	if (ng == 0)
		return 0;
	ps->file = c->groups[0].file;
	if (c->policy != DRF_POLICY_DRF) {
		fail_at(ps, c->groups[0].line, "group '%s': groups are shared by hierarchical DRF, "
			"which needs policy = drf (policy is '%s')", c->groups[0].name,
			drf_policy_name(c->policy));
		return -EINVAL;
	}
	for (size_t k = 0; k < ng; k++) {
		struct drf_group *g = &c->groups[k];
		ssize_t t = drf_index_find_str(&ps->names, g->name);

		if (t >= 0) {
			ps->file = g->file;
			fail_at(ps, g->line, "group '%s' has the name of tenant '%s' (%s:%d); a group and "
				"a tenant cannot share a name", g->name, g->name, c->tenants[t].file,
				c->tenants[t].line);
			return -EINVAL;
		}
		if (ps->group_parent[k]) {
			snprintf(what, sizeof(what), "group '%s'", g->name);
			g->parent = group_ref(ps, what, ps->group_parent[k], g->file,
					      ps->group_lines[k * GK_N + GK_GROUP]);
			if (!g->parent)
				return -EINVAL;
		}
	}
	/* A chain of parents longer than the number of groups goes round a cycle. */
	for (size_t k = 0; k < ng; k++) {
		size_t at = k + 1, steps = 0;

		while (at && steps <= ng) {
			at = c->groups[at - 1].parent;
			steps++;
		}
		if (at) {
			const struct drf_group *g = &c->groups[k];

			ps->file = g->file;
			fail_at(ps, ps->group_lines[k * GK_N + GK_GROUP], "group '%s': group = '%s' "
				"makes a cycle (a group inside itself)", g->name, ps->group_parent[k]);
			return -EINVAL;
		}
	}
	used = calloc(ng, sizeof(*used));
	if (!used) {
		fail_at(ps, 0, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n_tenants; i++) {
		struct drf_tenant *t = &c->tenants[i];

		if (!ps->tenant_group[i])
			continue;
		snprintf(what, sizeof(what), "tenant '%s'", t->name);
		t->group = group_ref(ps, what, ps->tenant_group[i], t->file,
				     tenant_line(ps, i, TK_GROUP));
		if (!t->group) {
			free(used);
			return -EINVAL;
		}
		for (size_t at = t->group; at && !used[at - 1]; at = c->groups[at - 1].parent)
			used[at - 1] = true;
	}
	for (size_t k = 0; k < ng; k++) {
		if (used[k])
			continue;
		ps->file = c->groups[k].file;
		fail_at(ps, c->groups[k].line, "group '%s' has no tenants (none names it, or a "
			"group inside it, in group =)", c->groups[k].name);
		free(used);
		return -EINVAL;
	}
	/* Whole paths, parents first (used[] now says: path made), in at most ng passes. */
	memset(used, 0, ng * sizeof(*used));
	for (size_t done = 0, pass = 0; done < ng && pass < ng; pass++)
		for (size_t k = 0; k < ng; k++) {
			struct drf_group *g = &c->groups[k];
			char *path;

			if (used[k] || (g->parent && !used[g->parent - 1]))
				continue;
			path = g->parent ? join_path(ps, c->groups[g->parent - 1].cgroup,
						     g->cgroup ? g->cgroup : g->name)
					 : strdup(g->cgroup ? g->cgroup : g->name);
			if (!path) {
				fail_at(ps, 0, "out of memory");
				free(used);
				return -ENOMEM;
			}
			free(g->cgroup);
			g->cgroup = path;
			used[k] = true;
			done++;
		}
	free(used);
	for (size_t i = 0; i < c->n_tenants; i++) {
		struct drf_tenant *t = &c->tenants[i];
		const char *why;
		char *path;

		if (!t->group)
			continue;
		path = join_path(ps, c->groups[t->group - 1].cgroup, t->cgroup ? t->cgroup : t->name);
		if (!path)
			return -ENOMEM;
		why = drf_cgroup_path_problem(path);
		if (why) {
			ps->file = t->file;
			fail_at(ps, tenant_line(ps, i, TK_GROUP), "tenant '%s': its cgroup in group "
				"'%s', '%s', %s", t->name, c->groups[t->group - 1].name, path, why);
			free(path);
			return -EINVAL;
		}
		free(t->cgroup);
		t->cgroup = path;
	}
	return 0;
}

static int resolve_capacity(struct parser *ps, const struct drf_host_ops *host)
{
	struct drf_config *c = ps->cfg;
	double v;
	int r;

	ps->file = c->path;
	if (ps->auto_cpu) {
		r = host->online_cpus(host->ctx, &v);
		if (r < 0 || !(v > 0)) {
			fail_at(ps, ps->cap_line[CK_CPU], "cpu = auto: cannot count online CPUs: %s",
				strerror(r < 0 ? -r : EINVAL));
			return r < 0 ? r : -EINVAL;
		}
		c->capacity[DRF_RES_CPU] = v;
	}
	if (ps->auto_memory) {
		r = host->mem_total(host->ctx, &v);
		if (r < 0) {
			fail_at(ps, ps->cap_line[CK_MEMORY],
				"memory = auto: cannot read MemTotal from /proc/meminfo: %s",
				strerror(-r));
			return r;
		}
		if (v - c->memory_reserve <= 0) {
			fail_at(ps, ps->cap_line[CK_MEMORY_RESERVE],
				"memory-reserve (%.0f bytes) leaves nothing of MemTotal (%.0f bytes)",
				c->memory_reserve, v);
			return -EINVAL;
		}
		c->capacity[DRF_RES_MEMORY] = v - c->memory_reserve;
	}
	for (int n = 0; n < 2; n++) {
		int key = n ? CK_NET_IN : CK_NET_RATE, res = n ? DRF_RES_NET_IN : DRF_RES_NET;

		if (!(n ? ps->auto_net_in : ps->auto_net))
			continue;
		if (!c->net_device) {
			fail_at(ps, ps->cap_line[key], "%s = auto needs net-device", cap_keys[key]);
			return -EINVAL;
		}
		r = host->link_speed(host->ctx, c->net_device, &v);
		if (r < 0 || !(v > 0)) {
			fail_at(ps, ps->cap_line[key],
				"%s = auto: cannot read the link speed of '%s' (ethtool): %s; "
				"set %s explicitly", cap_keys[key], c->net_device,
				r == -ENODEV ? "no such network interface"
					     : strerror(r < 0 ? -r : EINVAL), cap_keys[key]);
			return r < 0 ? r : -EINVAL;
		}
		c->capacity[res] = v;
	}
	/* Enforcing IO or network limits needs to know which device to limit. */
	if ((c->capacity[DRF_RES_IO_READ] > 0 || c->capacity[DRF_RES_IO_WRITE] > 0) &&
	    !c->io_device) {
		int l = ps->cap_line[CK_IO_READ] ? ps->cap_line[CK_IO_READ] : ps->cap_line[CK_IO_WRITE];

		fail_at(ps, l, "an io capacity needs io-device (the block device to limit)");
		return -EINVAL;
	}
	if (c->capacity[DRF_RES_NET] > 0 && !c->net_device) {
		fail_at(ps, ps->cap_line[CK_NET_RATE],
			"net-rate needs net-device (the interface to shape)");
		return -EINVAL;
	}
	if (c->net_link_rate > 0 && c->capacity[DRF_RES_NET] > c->net_link_rate) {
		fail_at(ps, ps->cap_line[CK_NET_RATE], "net-rate (%.0f bits/s) is more than "
			"net-link-rate (%.0f bits/s): the tenants cannot share more than the link has",
			c->capacity[DRF_RES_NET], c->net_link_rate);
		return -EINVAL;
	}
	if (c->capacity[DRF_RES_NET_IN] > 0 && !c->net_device) {
		fail_at(ps, ps->cap_line[CK_NET_IN],
			"net-ingress-rate needs net-device (the interface whose traffic it polices)");
		return -EINVAL;
	}
	for (r = 0; r < DRF_NRES; r++)
		if (c->capacity[r] > 0)
			return 0;
	fail_at(ps, ps->cap_sec_line, "no resource has a capacity: set at least one of cpu, "
				      "memory, io-read-bps, io-write-bps, net-rate, net-ingress-rate in "
				      "[capacity]");
	return -EINVAL;
}

/*
 * Under systemd, `cgroup-root = auto` makes each tenant a slice (unitname.h):
 * its cgroup becomes the slice's path below drf.slice. The paths were checked
 * as written; nesting carries over, one slice a level.
 */
static int slice_paths(struct parser *ps)
{
	struct drf_config *c = ps->cfg;

	for (size_t i = 0; i < c->n_tenants; i++) {
		struct drf_tenant *t = &c->tenants[i];
		char path[4096], *dup;
		int n = drf_slice_path(t->cgroup, path, sizeof(path));

		if (n < 0) {
			ps->file = t->file;
			fail_at(ps, tenant_line(ps, i, TK_CGROUP), "tenant '%s': cgroup '%s' makes a "
				"systemd slice name longer than systemd allows (%d bytes, escaped)",
				t->name, t->cgroup, DRF_UNIT_NAME_MAX);
			return -EINVAL;
		}
		dup = strdup(path);
		if (!dup) {
			fail_at(ps, 0, "out of memory");
			return -ENOMEM;
		}
		free(t->cgroup);
		t->cgroup = dup;
	}
	c->slices = true;
	return 0;
}

/* The parse state's own memory (what the config does not keep). */
static void parser_free(struct parser *ps)
{
	size_t nt = ps->cfg ? ps->cfg->n_tenants : 0, ng = ps->cfg ? ps->cfg->n_groups : 0;

	for (size_t i = 0; ps->tenant_group && i < nt; i++)
		free(ps->tenant_group[i]);
	for (size_t i = 0; ps->group_parent && i < ng; i++)
		free(ps->group_parent[i]);
	free(ps->tenant_group);
	free(ps->group_parent);
	free(ps->group_lines);
	drf_index_free(&ps->gnames);
	free(ps->tenant_lines);
	free(ps->server_lines);
	drf_index_free(&ps->names);
}

/* Every `access` and `admins` key, resolved into users and groups now. */
static int resolve_access(struct parser *ps, const struct drf_host_ops *host)
{
	struct drf_config *c = ps->cfg;
	size_t n = 2 + 2 * c->n_groups + 2 * c->n_tenants;
	char why[512];

	for (size_t i = 0; i < n; i++) {
		struct drf_acl *a;
		const char *key = i % 2 ? "admins" : "access";
		int r;

		if (i < 2)
			a = i ? &c->admins : &c->access;
		else if (i < 2 + 2 * c->n_groups)
			a = i % 2 ? &c->groups[(i - 2) / 2].admins : &c->groups[(i - 2) / 2].access;
		else
			a = i % 2 ? &c->tenants[(i - 2 - 2 * c->n_groups) / 2].admins
				  : &c->tenants[(i - 2 - 2 * c->n_groups) / 2].access;
		r = drf_acl_resolve(a, host, why, sizeof(why));
		if (r < 0) {
			ps->file = a->file;
			fail_at(ps, a->line, "%s = '%s': %s", key, a->text, why);
			return r;
		}
	}
	return 0;
}

static void free_access(struct drf_config *c)
{
	drf_acl_free(&c->access);
	drf_acl_free(&c->admins);
	for (size_t k = 0; c->groups && k < c->n_groups; k++) {
		drf_acl_free(&c->groups[k].access);
		drf_acl_free(&c->groups[k].admins);
	}
	for (size_t i = 0; c->tenants && i < c->n_tenants; i++) {
		drf_acl_free(&c->tenants[i].access);
		drf_acl_free(&c->tenants[i].admins);
	}
}

/*
 * drfd.conf's [fleet]: its defaults and rules; a fleet node's tenants are the
 * fleet's, so the config has none of its own. Then the assignment's tenants.
 */
/* [fleet] task-user: the user fleet tasks run as, looked up now; never root. */
static int task_user(struct parser *ps, const struct drf_host_ops *host)
{
	struct drf_fleet_member *m = &ps->cfg->fleet;
	struct drf_host_user u = { 0 };
	int line = ps->member_line[9], r;

	if (!m->task_user)
		return 0;
	r = host && host->user ? host->user(host->ctx, m->task_user, &u) : -ENOSYS;
	if (r < 0) {
		fail_at(ps, line, "task-user = '%s': %s", m->task_user,
			r == -ENOENT ? "no such user" : r == -ENOSYS ? "users cannot be looked up here"
								      : strerror(-r));
		return r == -ENOMEM ? r : -EINVAL;
	}
	if (u.uid == 0) {
		fail_at(ps, line, "task-user = '%s': uid 0; fleet tasks never run as root (whoever "
			"may write the fleet's tasks in etcd would be root here): name a user of "
			"their own", m->task_user);
		drf_host_user_clear(&u);
		return -EINVAL;
	}
	m->task_uid = u.uid;
	m->task_gid = u.gid;
	m->task_groups = u.groups;
	m->task_ngroups = u.ngroups;
	/* A task runs in its user's home, or "/" when it has none (tasks.h wants an absolute path). */
	if (u.home && u.home[0] == '/') {
		m->task_home = u.home;
	} else {
		free(u.home);
		m->task_home = strdup("/");
	}
	if (!m->task_home) {
		fail_at(ps, 0, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int fleet_member(struct parser *ps, const struct drf_tenant *assigned, size_t n,
			const char *source, const struct drf_host_ops *host)
{
	struct drf_config *c = ps->cfg;
	struct drf_fleet_member *m = &c->fleet;
	char *name;

	ps->file = c->path;
	if (!m->on) {
		if (assigned) {
			fail_at(ps, 0, "has no [fleet] section: it is not a fleet node");
			return -EINVAL;
		}
		return 0;
	}
	if (!m->endpoints) {
		fail_at(ps, m->line, "[fleet] needs endpoints (the etcd cluster's client URLs)");
		return -EINVAL;
	}
	if (!m->cert_file != !m->key_file) {
		fail_at(ps, m->line, "[fleet] has %s without %s: a client certificate needs both",
			m->cert_file ? "cert-file" : "key-file", m->cert_file ? "key-file" : "cert-file");
		return -EINVAL;
	}
	if (!m->user != !m->password_file) {
		fail_at(ps, m->line, "[fleet] has %s without %s", m->user ? "user" : "password-file",
			m->user ? "password-file" : "user");
		return -EINVAL;
	}
	if (!m->prefix) {
		m->prefix = strdup("/drfd/");
		if (!m->prefix) {
			fail_at(ps, 0, "out of memory");
			return -ENOMEM;
		}
	}
	if (!m->lease_ttl_us)
		m->lease_ttl_us = 10 * DRF_USEC_PER_SEC;
	if (!m->grace_us)
		m->grace_us = DRF_FLEET_GRACE_TTLS * m->lease_ttl_us;
	if (m->grace_us < m->lease_ttl_us) {
		fail_at(ps, m->line, "[fleet] grace (%.0f s) is shorter than lease-ttl (%.0f s): a "
			"node would lose its tenants before etcd even lets its lease go",
			(double)m->grace_us / DRF_USEC_PER_SEC,
			(double)m->lease_ttl_us / DRF_USEC_PER_SEC);
		return -EINVAL;
	}
	if (task_user(ps, host) < 0)
		return -EINVAL;
	if (c->n_tenants > 0) {
		ps->file = c->tenants[0].file;
		fail_at(ps, c->tenants[0].line, "tenant '%s': a fleet node's tenants come from the "
			"fleet (drfctl fleet apply), not from its config; remove its [tenant] sections "
			"or the [fleet] section", c->tenants[0].name);
		return -EINVAL;
	}
	if (!assigned)
		return 0;
	name = strdup(source);
	if (!name || DRF_VEC_GROW(c->files, &ps->files_cap, c->n_files + 1) < 0) {
		free(name);
		fail_at(ps, 0, "out of memory");
		return -ENOMEM;
	}
	c->files[c->n_files++] = name;
	ps->file = name;
	ps->line = 0;
	for (size_t i = 0; i < n && !ps->failed; i++) {
		const struct drf_tenant *a = &assigned[i];
		struct drf_tenant *t;

		if (!drf_name_valid(a->name)) {
			fail_at(ps, 0, "tenant name '%s' is not 1-%d characters of [A-Za-z0-9_.-] not "
				"starting with '.'", a->name, DRF_TENANT_NAME_MAX);
			break;
		}
		add_tenant(ps, a->name);
		if (ps->failed)
			break;
		t = &c->tenants[c->n_tenants - 1];
		if (a->cgroup) {
			const char *why = drf_cgroup_path_problem(a->cgroup);

			if (why) {
				fail_at(ps, 0, "tenant '%s': cgroup = '%s': the path %s", a->name,
					a->cgroup, why);
				break;
			}
			set_string(ps, &t->cgroup, a->cgroup);
		}
		if (!(a->weight > 0 && a->weight <= DRF_WEIGHT_MAX)) {
			fail_at(ps, 0, "tenant '%s': weight %g out of range (0, %g]", a->name, a->weight,
				DRF_WEIGHT_MAX);
			break;
		}
		t->weight = a->weight;
		t->task_model = a->task_model;
		t->tasks = a->task_model ? a->tasks : INFINITY;
		for (int r = 0; r < DRF_NRES; r++) {
			if (a->declared[r] && !(a->vec[r] >= 0 && isfinite(a->vec[r]))) {
				fail_at(ps, 0, "tenant '%s': %s %g is not a quantity", a->name,
					drf_res_name(r), a->vec[r]);
				break;
			}
			t->vec[r] = a->vec[r];
			t->declared[r] = a->declared[r];
		}
	}
	return ps->failed ? -EINVAL : 0;
}

int drf_config_load(const char *path, const struct drf_host_ops *host, struct drf_config *ret,
		    char *err, size_t errlen)
{
	return drf_config_load_assigned(path, host, NULL, 0, NULL, ret, err, errlen);
}

int drf_config_load_assigned(const char *path, const struct drf_host_ops *host,
			     const struct drf_tenant *assigned, size_t n_assigned,
			     const char *source, struct drf_config *ret, char *err, size_t errlen)
{
	struct drf_config *c = calloc(1, sizeof(*c));
	struct parser ps = { .cfg = c, .err = err, .errlen = errlen, .file = path };
	int r = -ENOMEM;

	if (errlen)
		err[0] = '\0';
	if (!c)
		goto out_oom;
	drf_index_init(&ps.names, tenant_name, c);
	drf_index_init(&ps.gnames, group_name, c);
	c->path = strdup(path);
	c->cgroup_root = strdup(DEFAULT_CGROUP_ROOT);
	if (!c->path || !c->cgroup_root)
		goto out_oom;
	c->interval_us = 1 * DRF_USEC_PER_SEC;
	c->verify_period_us = 30 * DRF_USEC_PER_SEC;
	c->cgroup_root_auto = true;
	c->state_dir = strdup(DEFAULT_STATE_DIR);
	c->status_socket = strdup(DEFAULT_STATUS_SOCKET);
	if (!c->state_dir || !c->status_socket)
		goto out_oom;
	c->mode = DRF_MODE_SHARE;
	c->policy = DRF_POLICY_DRF;
	c->metrics_detail = DRF_METRICS_BASIC;
	c->task_output_max = DRF_TASK_OUTPUT_MAX_DEFAULT;

	r = parse_file(&ps, path, true);
	if (r < 0)
		goto out_free;
	if (!c->tenants_dir) {
		c->tenants_dir = path_beside(path, DEFAULT_TENANTS_DIR);
		if (!c->tenants_dir) {
			r = -ENOMEM;
			goto out_oom;
		}
	}
	/* Each knob is read back at least once a verify-period: a tick at the least. */
	if (!ps.agent_line[AK_VERIFY_PERIOD] && c->verify_period_us < c->interval_us) {
		c->verify_period_us = c->interval_us;
	} else if (c->verify_period_us < c->interval_us) {
		fail_at(&ps, ps.agent_line[AK_VERIFY_PERIOD], "verify-period (%gs) is shorter than "
			"interval (%gs); it must be at least one interval",
			(double)c->verify_period_us / DRF_USEC_PER_SEC,
			(double)c->interval_us / DRF_USEC_PER_SEC);
		r = -EINVAL;
		goto out_free;
	}
	r = check_family(&ps);
	if (r < 0)
		goto out_free;
	r = parse_tenants_dir(&ps, ps.agent_line[AK_TENANTS_DIR] > 0);
	if (r < 0)
		goto out_free;
	r = fleet_member(&ps, assigned, n_assigned, source ? source : "the fleet's assignment",
			 host);
	if (r < 0)
		goto out_free;
	r = resolve_capacity(&ps, host);
	if (r < 0)
		goto out_free;
	r = resolve_groups(&ps);
	if (r < 0)
		goto out_free;
	r = resolve_access(&ps, host);
	if (r < 0)
		goto out_free;
	/* No tenants is a valid config: drfd idles until a reload brings some. */
	r = check_tenants(&ps);
	if (r < 0)
		goto out_free;
	if (c->cgroup_root_auto && host && host->systemd && host->systemd(host->ctx) > 0) {
		r = slice_paths(&ps);
		if (r < 0)
			goto out_free;
	}
	parser_free(&ps);
	*ret = *c;
	free(c);
	return 0;
out_oom:
	if (!ps.failed)
		snprintf(err, errlen, "%s: out of memory", path);
out_free:
	parser_free(&ps);
	drf_config_free(c);
	free(c);
	return r;
}

void drf_config_free(struct drf_config *c)
{
	if (!c)
		return;
	free_access(c);
	for (size_t i = 0; i < c->n_tenants; i++)
		free(c->tenants[i].cgroup);
	free(c->tenants);
	for (size_t k = 0; k < c->n_groups; k++)
		free(c->groups[k].cgroup);
	free(c->groups);
	for (size_t i = 0; i < c->n_files; i++)
		free(c->files[i]);
	free(c->files);
	free(c->path);
	free(c->cgroup_root);
	free(c->tenants_dir);
	free(c->state_dir);
	free(c->status_socket);
	free(c->status_group);
	free(c->metrics_file);
	free(c->metrics_listen);
	free(c->io_device);
	free(c->net_device);
	free(c->fleet.endpoints);
	free(c->fleet.prefix);
	free(c->fleet.node);
	free(c->fleet.ca_file);
	free(c->fleet.cert_file);
	free(c->fleet.key_file);
	free(c->fleet.user);
	free(c->fleet.password_file);
	free(c->fleet.task_user);
	free(c->fleet.task_groups);
	free(c->fleet.task_home);
	memset(c, 0, sizeof(*c));
}

int drf_config_problem(const struct drf_config *c, struct drf_problem *ret,
		       struct drf_demand **ret_demands)
{
	struct drf_demand *d = calloc(c->n_tenants + 1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < c->n_tenants; i++) {
		const struct drf_tenant *t = &c->tenants[i];

		d[i].weight = t->weight;
		d[i].max_units = t->task_model ? t->tasks : 1;
		for (int r = 0; r < DRF_NRES; r++) {
			if (t->declared[r])
				d[i].shape[r] = t->vec[r];
			else
				d[i].shape[r] = t->task_model ? 0 : c->capacity[r];
		}
	}
	memcpy(ret->capacity, c->capacity, sizeof(ret->capacity));
	ret->n = c->n_tenants;
	ret->demands = d;
	ret->family = c->family;
	*ret_demands = d;
	return 0;
}

int drf_config_hproblem(const struct drf_config *c, const struct drf_problem *problem,
			struct drf_hproblem *ret, struct drf_hgroup **ret_groups,
			size_t **ret_parents)
{
	struct drf_hgroup *g = calloc(c->n_groups + 1, sizeof(*g));
	size_t *par = calloc(c->n_tenants + 1, sizeof(*par));

	if (!g || !par) {
		free(g);
		free(par);
		return -ENOMEM;
	}
	for (size_t k = 0; k < c->n_groups; k++) {
		g[k].weight = c->groups[k].weight;
		g[k].parent = c->groups[k].parent ? c->groups[k].parent - 1 : DRF_HROOT;
	}
	for (size_t i = 0; i < c->n_tenants; i++)
		par[i] = c->tenants[i].group ? c->tenants[i].group - 1 : DRF_HROOT;
	*ret = (struct drf_hproblem){ .base = *problem, .n_groups = c->n_groups, .groups = g,
				      .leaf_parent = par };
	*ret_groups = g;
	*ret_parents = par;
	return 0;
}

static const void *server_name(const void *ctx, size_t i, size_t *ret_len)
{
	const struct drf_fleet *f = ctx;

	*ret_len = strlen(f->servers[i].name);
	return f->servers[i].name;
}

/*
 * Every server's name is its own: [server NAME] sections differ, and no
 * NAME-K that a count makes is the name of another section.
 */
static int check_servers(struct parser *ps)
{
	struct drf_fleet *f = ps->fleet;
	struct drf_index ix;
	size_t total = 0;
	int r = 0;

	drf_index_init(&ix, server_name, f);
	for (size_t s = 0; s < f->n_servers && r == 0; s++) {
		size_t dup;

		r = drf_index_add(&ix, s, &dup);
		ps->file = f->servers[s].file;
		if (r == -EEXIST)
			fail_at(ps, f->servers[s].line, "duplicate server '%s' (first defined at "
				"line %d)", f->servers[s].name, f->servers[dup].line);
		else if (r < 0)
			fail_at(ps, 0, "out of memory");
	}
	for (size_t s = 0; s < f->n_servers && r == 0; s++) {
		const struct drf_server *sv = &f->servers[s];
		bool any = false;

		ps->file = sv->file;
		for (int k = 0; k < DRF_NRES; k++)
			any = any || sv->capacity[k] > 0;
		if (!any) {
			fail_at(ps, sv->line, "server '%s' has no capacity: give it at least one of "
				"cpu, memory, io-read-bps, io-write-bps, net-rate, net-ingress-rate",
				sv->name);
			r = -EINVAL;
			break;
		}
		total += sv->count;
		if (total > DRF_FLEET_MAX_SERVERS) {
			fail_at(ps, sv->line, "more than %d servers in the fleet",
				DRF_FLEET_MAX_SERVERS);
			r = -EINVAL;
			break;
		}
		for (size_t k = 1; sv->counted && k <= sv->count; k++) {
			char nm[DRF_SERVER_NAME_MAX + 1];
			ssize_t other;

			drf_server_name(sv, k, nm, sizeof(nm));
			other = drf_index_find_str(&ix, nm);
			if (other >= 0) {
				fail_at(ps, sv->line, "server '%s' (count %zu) makes '%s', the name of "
					"the server at line %d", sv->name, sv->count, nm,
					f->servers[other].line);
				r = -EINVAL;
				break;
			}
		}
	}
	drf_index_free(&ix);
	if (r == 0 && f->n_servers == 0 && !ps->servers_optional) {
		ps->file = f->cfg.path;
		fail_at(ps, 0, "no servers: a fleet file needs at least one [server NAME]");
		r = -EINVAL;
	}
	return r;
}

size_t drf_server_name(const struct drf_server *sv, size_t k, char *buf, size_t len)
{
	int n = sv->counted ? snprintf(buf, len, "%s-%zu", sv->name, k)
			    : snprintf(buf, len, "%s", sv->name);

	return n < 0 ? 0 : (size_t)n;
}

static int fleet_load(const char *path, bool servers_optional, struct drf_fleet *ret, char *err,
		      size_t errlen)
{
	struct drf_fleet *f = calloc(1, sizeof(*f));
	struct drf_config *c = f ? &f->cfg : NULL;
	struct parser ps = { .cfg = c, .err = err, .errlen = errlen, .file = path, .fleet = f,
			     .servers_optional = servers_optional };
	int r = -ENOMEM;

	if (errlen)
		err[0] = '\0';
	if (!f)
		goto out_oom;
	drf_index_init(&ps.names, tenant_name, c);
	drf_index_init(&ps.gnames, group_name, c);
	c->path = strdup(path);
	if (!c->path)
		goto out_oom;
	c->policy = DRF_POLICY_DRF;
	r = parse_file(&ps, path, true);
	if (r < 0)
		goto out_free;
	r = check_servers(&ps);
	if (r < 0)
		goto out_free;
	/* DRFH shares a fleet's tenants flat: no groups (a [group] is an unknown section). */
	for (size_t i = 0; i < c->n_tenants; i++) {
		if (!ps.tenant_group[i])
			continue;
		ps.file = c->tenants[i].file;
		fail_at(&ps, tenant_line(&ps, i, TK_GROUP), "tenant '%s': group = belongs in a host's "
			"drfd.conf; a fleet's tenants are shared flat, by DRFH", c->tenants[i].name);
		r = -EINVAL;
		goto out_free;
	}
	for (size_t s = 0; s < f->n_servers; s++)
		for (int k = 0; k < DRF_NRES; k++)
			c->capacity[k] += f->servers[s].capacity[k] * (double)f->servers[s].count;
	r = check_tenants(&ps);
	if (r < 0)
		goto out_free;
	parser_free(&ps);
	*ret = *f;
	free(f);
	return 0;
out_oom:
	if (!ps.failed)
		snprintf(err, errlen, "%s: out of memory", path);
out_free:
	parser_free(&ps);
	drf_fleet_free(f);
	free(f);
	return r;
}

int drf_fleet_load(const char *path, struct drf_fleet *ret, char *err, size_t errlen)
{
	return fleet_load(path, false, ret, err, errlen);
}

int drf_fleet_load_tenants(const char *path, struct drf_fleet *ret, char *err, size_t errlen)
{
	return fleet_load(path, true, ret, err, errlen);
}

void drf_fleet_free(struct drf_fleet *f)
{
	if (!f)
		return;
	drf_config_free(&f->cfg);
	free(f->servers);
	memset(f, 0, sizeof(*f));
}

const char *drf_mode_name(enum drf_mode m)
{
	return m == DRF_MODE_LIMIT ? "limit" : "share";
}

/* One list in the walk of drf_config_access(): what it is called in a rule. */
static void acl_rule(const struct drf_acl *a, const char *key, const char *where, char *buf,
		     size_t len)
{
	char text[1024];

	drf_acl_text(a, text, sizeof(text));
	snprintf(buf, len, "%s '%s' of %s at %s:%d", key, text, where, a->file ? a->file : "?",
		 a->line);
}

/*
 * Level k of t's lists: 0 the tenant, then its groups up to the root, then
 * [agent]. false past the last; where names it.
 */
static bool acl_level(const struct drf_config *c, const struct drf_tenant *t, size_t k,
		      const struct drf_acl **access, const struct drf_acl **admins, char *where,
		      size_t len)
{
	size_t g = t->group, depth = 0;

	if (k == 0) {
		*access = &t->access;
		*admins = &t->admins;
		snprintf(where, len, "tenant %s", t->name);
		return true;
	}
	/* resolve_groups() refused cycles: a group chain is at most n_groups long. */
	for (size_t x = g; x && depth <= c->n_groups; x = c->groups[x - 1].parent)
		depth++;
	if (k > depth + 1)
		return false;
	if (k == depth + 1) {
		*access = &c->access;
		*admins = &c->admins;
		snprintf(where, len, "[agent]");
		return true;
	}
	for (size_t i = 1; i < k; i++)
		g = c->groups[g - 1].parent;
	*access = &c->groups[g - 1].access;
	*admins = &c->groups[g - 1].admins;
	snprintf(where, len, "group %s", c->groups[g - 1].name);
	return true;
}

bool drf_config_access_rules(const struct drf_config *c, const struct drf_tenant *t, char *buf,
			     size_t len)
{
	const struct drf_acl *access, *admins;
	char where[DRF_TENANT_NAME_MAX + 16];
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (size_t k = 0; acl_level(c, t, k, &access, &admins, where, sizeof(where)); k++) {
		for (int j = 0; j < 2; j++) {
			const struct drf_acl *a = j ? access : admins;
			char one[1200];

			if (!a->n)
				continue;
			acl_rule(a, j ? "access" : "admins", where, one, sizeof(one));
			if (off < len)
				off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "; " : "",
							one);
			else
				off++;
		}
	}
	if (!off)
		snprintf(buf, len, "no access or admins is set for tenant %s, its groups or "
			 "[agent]: it is root's alone", t->name);
	return off > 0;
}

enum drf_access_role drf_config_access(const struct drf_config *c, const struct drf_tenant *t,
				       const struct drf_access_who *w, char *rule, size_t len)
{
	const struct drf_acl *access, *admins, *by = NULL;
	enum drf_access_role role = DRF_ACCESS_NONE;
	bool by_admins = false;
	char where[DRF_TENANT_NAME_MAX + 16], by_where[sizeof(where)];

	if (len)
		rule[0] = '\0';
	if (w->uid == 0) {
		snprintf(rule, len, "root");
		return DRF_ACCESS_ADMIN;
	}
	for (size_t k = 0; acl_level(c, t, k, &access, &admins, where, sizeof(where)); k++) {
		if (drf_acl_matches(admins, w)) {
			role = DRF_ACCESS_ADMIN;
			by = admins;
			by_admins = true;
			snprintf(by_where, sizeof(by_where), "%s", where);
			break;
		}
		if (role == DRF_ACCESS_NONE && drf_acl_matches(access, w)) {
			role = DRF_ACCESS_MEMBER;
			by = access;
			snprintf(by_where, sizeof(by_where), "%s", where);
		}
	}
	if (by && len)
		acl_rule(by, by_admins ? "admins" : "access", by_where, rule, len);
	if (by)
		return role;
	/* None: every list there is, so that the refusal shows the whole rule. */
	if (len)
		drf_config_access_rules(c, t, rule, len);
	return DRF_ACCESS_NONE;
}
