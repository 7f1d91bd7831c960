// SPDX-License-Identifier: MIT
#include "history.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

static const char *const peak_names[] = { "memory-peak", "working-set-peak" };

int drf_hist_format_header(char *buf, size_t len, unsigned step_s)
{
	size_t n = (size_t)snprintf(buf, len, "drfd-history\t%d\tstep\t%u\n# time\ttenant",
				    DRF_HIST_VERSION, step_s);

	for (int r = 0; r < DRF_NRES && n < len; r++)
		n += (size_t)snprintf(buf + n, len - n, "\t%s", drf_res_name(r));
	for (size_t i = 0; i < 2 && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "\t%s", peak_names[i]);
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, "\n");
	return n < len ? (int)n : -ENOSPC;
}

void drf_hist_acc_reset(struct drf_hist_acc *a)
{
	memset(a, 0, sizeof(*a));
	a->mem_peak = NAN;
	a->ws_peak = NAN;
}

static void max_into(double *m, double v)
{
	if (isfinite(v) && v >= 0 && (isnan(*m) || v > *m))
		*m = v;
}

void drf_hist_acc_add(struct drf_hist_acc *a, const double use[DRF_NRES], double mem_current,
		      double working_set)
{
	for (int r = 0; r < DRF_NRES; r++) {
		if (!isfinite(use[r]) || use[r] < 0)
			continue;
		a->sum[r] += use[r];
		a->n[r]++;
	}
	max_into(&a->mem_peak, mem_current);
	max_into(&a->ws_peak, working_set);
}

bool drf_hist_acc_any(const struct drf_hist_acc *a)
{
	for (int r = 0; r < DRF_NRES; r++)
		if (a->n[r])
			return true;
	return !isnan(a->mem_peak) || !isnan(a->ws_peak);
}

static bool valid_name(const char *s, size_t n)
{
	if (n == 0 || n > DRF_HIST_NAME_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

static int put_val(char *buf, size_t len, size_t *n, double v)
{
	size_t k;

	if (*n >= len)
		return -ENOSPC;
	k = isnan(v) ? (size_t)snprintf(buf + *n, len - *n, "\t-")
		     : (size_t)snprintf(buf + *n, len - *n, "\t%.4g", v);
	*n += k;
	return *n < len ? 0 : -ENOSPC;
}

int drf_hist_format_rec(char *buf, size_t len, int64_t t, const char *tenant,
			const struct drf_hist_acc *a)
{
	size_t n;

	if (!valid_name(tenant, strlen(tenant)))
		return -EINVAL;
	n = (size_t)snprintf(buf, len, "%lld\t%s", (long long)t, tenant);
	if (n >= len)
		return -ENOSPC;
	for (int r = 0; r < DRF_NRES; r++)
		if (put_val(buf, len, &n, a->n[r] ? a->sum[r] / a->n[r] : NAN) < 0)
			return -ENOSPC;
	if (put_val(buf, len, &n, a->mem_peak) < 0 || put_val(buf, len, &n, a->ws_peak) < 0 ||
	    n + 1 >= len)
		return -ENOSPC;
	buf[n++] = '\n';
	buf[n] = '\0';
	return (int)n;
}

void drf_hist_init(struct drf_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->t_min = INT64_MAX;
	h->t_max = INT64_MIN;
}

void drf_hist_free(struct drf_hist *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->s[i].name);
		free(h->s[i].t);
		free(h->s[i].v);
	}
	free(h->s);
	drf_hist_init(h);
}

const struct drf_hist_series *drf_hist_find(const struct drf_hist *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->s[i].name, name) == 0)
			return &h->s[i];
	return NULL;
}

/* The series of name (len n), added if new; NULL without memory. */
static struct drf_hist_series *series_of(struct drf_hist *h, const char *name, size_t n)
{
	struct drf_hist_series *s;

	for (size_t i = 0; i < h->n; i++)
		if (strncmp(h->s[i].name, name, n) == 0 && h->s[i].name[n] == '\0')
			return &h->s[i];
	if (DRF_VEC_GROW(h->s, &h->cap, h->n + 1) < 0)
		return NULL;
	s = &h->s[h->n];
	memset(s, 0, sizeof(*s));
	s->name = strndup(name, n);
	if (!s->name)
		return NULL;
	h->n++;
	return s;
}

static int series_push(struct drf_hist_series *s, int64_t t, const double v[DRF_HIST_NVAL])
{
	if (s->n == s->cap) {
		/* Two arrays of one capacity: it counts once both have grown. */
		size_t tcap = s->cap, vcap = s->cap;

		if (DRF_VEC_GROW(s->t, &tcap, s->n + 1) < 0 ||
		    DRF_VEC_GROW(s->v, &vcap, s->n + 1) < 0)
			return -ENOMEM;
		s->cap = tcap;
	}
	s->t[s->n] = t;
	memcpy(s->v[s->n], v, sizeof(s->v[0]));
	s->n++;
	return 0;
}

/* A value column: "-" or a plain non-negative decimal (%g's exponent allowed). */
static int parse_val(const char *p, const char *end, double *ret)
{
	char tmp[48], *e;
	size_t n = (size_t)(end - p);

	if (n == 1 && p[0] == '-') {
		*ret = NAN;
		return 0;
	}
	if (n == 0 || n >= sizeof(tmp) || !((p[0] >= '0' && p[0] <= '9') || p[0] == '.'))
		return -EINVAL;
	memcpy(tmp, p, n);
	tmp[n] = '\0';
	errno = 0;
	*ret = strtod(tmp, &e);
	if (*e || errno || !isfinite(*ret))
		return -EINVAL;
	return 0;
}

/* Parses a record line (without its newline); NULL or why not. */
static const char *parse_rec(struct drf_hist *h, const char *p, const char *end)
{
	const char *col[2 + DRF_HIST_NVAL + 1], *q = p;
	double v[DRF_HIST_NVAL];
	struct drf_hist_series *s;
	size_t ncol = 0;
	long long t = 0;

	while (ncol < sizeof(col) / sizeof(col[0])) {
		col[ncol++] = q;
		q = memchr(q, '\t', (size_t)(end - q));
		if (!q)
			break;
		q++;
	}
	if (q || ncol != 2 + DRF_HIST_NVAL)
		return "not 10 tab-separated columns";
	for (const char *c = col[0]; c < col[1] - 1; c++) {
		if (*c < '0' || *c > '9' || t > (INT64_MAX - 9) / 10)
			return "the time is not a number of seconds";
		t = t * 10 + (*c - '0');
	}
	if (col[1] - 1 == col[0])
		return "the time is not a number of seconds";
	if (!valid_name(col[1], (size_t)(col[2] - 1 - col[1])))
		return "not a tenant name";
	for (size_t i = 0; i < DRF_HIST_NVAL; i++) {
		const char *ce = i + 1 < DRF_HIST_NVAL ? col[3 + i] - 1 : end;

		if (parse_val(col[2 + i], ce, &v[i]) < 0)
			return "a value is neither a non-negative number nor '-'";
	}
	s = series_of(h, col[1], (size_t)(col[2] - 1 - col[1]));
	if (!s || series_push(s, (int64_t)t, v) < 0)
		return NULL; /* reported as -ENOMEM by the caller: see h->cap check */
	if ((int64_t)t < h->t_min)
		h->t_min = (int64_t)t;
	if ((int64_t)t > h->t_max)
		h->t_max = (int64_t)t;
	h->records++;
	return NULL;
}

static void skip(struct drf_hist *h, size_t line, const char *why)
{
	if (!h->first_bad_line) {
		h->first_bad_line = line;
		h->first_bad_why = why;
	}
	h->skipped++;
}

int drf_hist_feed(struct drf_hist *h, const char *buf, size_t len, const char **ret_why)
{
	const char *p = buf, *end = buf + len, *nl, *why;
	unsigned version, step;
	char head[64];
	size_t line = 1, before;
	int k = 0;

	if (len == 0)
		return 0;
	nl = memchr(p, '\n', len);
	if (!nl || (size_t)(nl - p) >= sizeof(head)) {
		*ret_why = "not a drfd history file (no 'drfd-history' header line)";
		return -EINVAL;
	}
	memcpy(head, p, (size_t)(nl - p));
	head[nl - p] = '\0';
	if (sscanf(head, "drfd-history\t%u\tstep\t%u%n", &version, &step, &k) != 2 ||
	    head[k] != '\0' || step == 0) {
		*ret_why = "not a drfd history file (no 'drfd-history' header line)";
		return -EINVAL;
	}
	if (version != DRF_HIST_VERSION) {
		*ret_why = "a history version this drfctl does not know (a newer drfd's?)";
		return -EPROTO;
	}
	h->step_s = step;
	for (p = nl + 1; p < end; p = nl + 1) {
		line++;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			skip(h, line, "the last line is cut short (torn write)");
			h->torn++;
			break;
		}
		if (p == nl || p[0] == '#')
			continue;
		before = h->records;
		why = parse_rec(h, p, nl);
		if (why) {
			skip(h, line, why);
			continue;
		}
		if (h->records == before) {
			*ret_why = "out of memory";
			return -ENOMEM;
		}
	}
	return 0;
}

double drf_percentile_nearest_rank(const double *sorted, size_t n, double p)
{
	double rank;
	size_t k;

	if (n == 0 || !(p > 0) || p > 100)
		return NAN;
	rank = ceil(p / 100.0 * (double)n - 1e-9);
	k = rank < 1 ? 1 : (size_t)rank;
	return sorted[(k > n ? n : k) - 1];
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int drf_reco_compute(const struct drf_hist_series *s, int64_t from, enum drf_res r,
		     double declared, double capacity, struct drf_reco *ret)
{
	double *x = malloc((s->n ? s->n : 1) * sizeof(*x));
	size_t n = 0;

	if (!x)
		return -ENOMEM;
	*ret = (struct drf_reco){ .p50 = NAN, .p95 = NAN, .peak = NAN, .ws_peak = NAN,
				  .declared = declared, .over = NAN, .suggested = NAN };
	for (size_t i = 0; i < s->n; i++) {
		if (s->t[i] < from)
			continue;
		if (!isnan(s->v[i][r]))
			x[n++] = s->v[i][r];
		if (r == DRF_RES_MEMORY) {
			max_into(&ret->peak, s->v[i][DRF_HIST_MEM_PEAK]);
			max_into(&ret->ws_peak, s->v[i][DRF_HIST_WS_PEAK]);
		}
	}
	ret->n = n;
	if (n) {
		qsort(x, n, sizeof(*x), cmp_double);
		ret->p50 = drf_percentile_nearest_rank(x, n, 50);
		ret->p95 = drf_percentile_nearest_rank(x, n, 95);
		/* memory: the peak within a step if known, else the largest mean */
		max_into(&ret->peak, x[n - 1]);
		ret->suggested = drf_reco_suggest(r, ret->p95, ret->ws_peak, capacity);
		if (isfinite(declared) && declared > 0)
			ret->over = (declared - ret->p95) / declared;
	}
	free(x);
	return 0;
}

double drf_reco_round(enum drf_res r, double v)
{
	double mult = 1, base, scaled, step;

	if (!(v > 0))
		return 0;
	if (r == DRF_RES_CPU)
		return ceil(v * 10 - 1e-9) / 10;
	base = drf_res_unit(r) == DRF_UNIT_BYTES ? 1024 : 1000;
	for (int i = 0; i < 4 && v >= mult * base; i++)
		mult *= base;
	scaled = v / mult;
	step = scaled < 10 ? 0.1 : scaled < 100 ? 1 : 10;
	/* whole multiples of the step, against floating-point noise (1.4 * 10 = 14.000..02) */
	return ceil(scaled / step - 1e-9) * step * mult;
}

double drf_reco_suggest(enum drf_res r, double p95, double ws_peak, double capacity)
{
	double s = p95 * DRF_RECO_HEADROOM;

	if (r == DRF_RES_MEMORY && isfinite(ws_peak) && ws_peak > s)
		s = ws_peak;
	s = drf_reco_round(r, s);
	if (capacity > 0 && s > capacity)
		s = capacity;
	return s;
}

char *drf_reco_format(enum drf_res r, double v, char *buf, size_t len)
{
	static const char *const bytes[] = { "", "K", "M", "G", "T" };
	static const char *const bits[] = { "", "kbit", "mbit", "gbit", "tbit" };
	bool is_bytes = drf_res_unit(r) == DRF_UNIT_BYTES;
	double mult = 1, base = is_bytes ? 1024 : 1000;
	int i = 0;

	if (r == DRF_RES_CPU || !(v > 0)) {
		snprintf(buf, len, "%.6g", v > 0 ? v : 0);
		return buf;
	}
	/* no "tbit": drf_parse_quantity takes up to gbit */
	for (; i < (is_bytes ? 4 : 3) && v >= mult * base; i++)
		mult *= base;
	snprintf(buf, len, "%.6g%s", v / mult, is_bytes ? bytes[i] : bits[i]);
	return buf;
}

int drf_parse_window_s(const char *s, int64_t *ret, const char **ret_why)
{
	static const struct {
		char unit;
		int64_t mult;
	} units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
	int64_t v = 0;
	size_t i = 0;

	for (; s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > 1000000000) {
			*ret_why = "too long";
			return -ERANGE;
		}
		v = v * 10 + (s[i] - '0');
	}
	if (i == 0 || !s[i] || s[i + 1]) {
		*ret_why = "not a window (expected a whole number and s, m, h or d: 7d, 36h)";
		return -EINVAL;
	}
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		if (s[i] != units[u].unit)
			continue;
		if (v == 0) {
			*ret_why = "an empty window";
			return -ERANGE;
		}
		*ret = v * units[u].mult;
		return 0;
	}
	*ret_why = "unknown unit (windows take s, m, h or d)";
	return -EINVAL;
}
