// SPDX-License-Identifier: MIT
/*
 * drfctl top: a live view of drfd, one row per tenant, like systemd-cgtop.
 * Each refresh asks the status socket for `metrics` (Prometheus text, parsed
 * by expo.c), builds a frame of the tenants' shares and use against
 * allocation, and shows it with ncurses, or as plain text frames with -b.
 */
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "client.h"
#include "config.h"
#include "expo.h"
#include "res.h"
#include "use.h"
#include "vec.h"

#define ASK_TIMEOUT_MS 10000
#define MIN_DELAY_MS 100.0
#define MAX_DELAY_MS 3600000.0

/* The metrics' resource label values, in the order of enum drf_res. */
static const char *const res_label[DRF_NRES] = {
	"cpu", "memory", "io-read", "io-write", "net-egress", "net-ingress",
};

/* Column headings, with the unit the cells are in. */
static const char *const res_heading[DRF_NRES] = {
	"CPU cores", "MEMORY B", "IO-READ B/s", "IO-WRITE B/s", "NET-EGRESS bit/s",
	"NET-INGRESS bit/s",
};

struct top_tenant {
	char *name;
	double weight;
	double dom_alloc, dom_use;       /* dominant shares; NAN: not known */
	double alloc[DRF_NRES], use[DRF_NRES]; /* base units of the metrics (bytes/s for network) */
	double eff[DRF_NRES], decl[DRF_NRES];  /* effective and declared demand; NAN: unknown */
	unsigned not_holding;            /* bits (1 << r) */
	double runq;                     /* run-queue wait, seconds per second */
};

struct top_frame {
	double up, last_tick, probes, jain_alloc, jain_use;
	double capacity[DRF_NRES];       /* NAN: takes no part */
	struct top_tenant *t;
	size_t n, cap, hint;             /* hint: the tenant found last */
};

enum top_sort {
	SORT_DOMINANT,   /* dominant share of use, then of allocation */
	SORT_ALLOC,      /* dominant share of allocation, then of use */
	SORT_CPU,
	SORT_MEMORY,
	SORT_IO,         /* read and write */
	SORT_NET,        /* egress and ingress */
	SORT_NAME,
	SORT_N,
};

static const struct {
	int key;
	const char *name, *what;
} sorts[SORT_N] = {
	[SORT_DOMINANT] = { 'd', "dominant", "dominant share of use" },
	[SORT_ALLOC] = { 'a', "allocation", "dominant share of allocation" },
	[SORT_CPU] = { 'c', "cpu", "cpu use" },
	[SORT_MEMORY] = { 'm', "memory", "memory use" },
	[SORT_IO] = { 'i', "io", "io use (read + write)" },
	[SORT_NET] = { 'n', "network", "network use (egress + ingress)" },
	[SORT_NAME] = { 't', "name", "tenant name" },
};

struct top_view {
	enum top_sort sort;
	bool reverse, help;
};

/* A line of the screen; the kind says how curses shows it. */
enum line_kind { LINE_TITLE, LINE_INFO, LINE_HEADING, LINE_ROW, LINE_ALERT, LINE_ERROR };

struct screen {
	struct {
		enum line_kind kind;
		char *text;
	} *l;
	size_t n, cap;
	bool oom;
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

/* Catches sig, unless it is ignored (a background job of a shell without job control). */
static void catch_stop(int sig)
{
	struct sigaction sa = { .sa_handler = on_stop }, old;

	if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
		return;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static double now_realtime(void)
{
	return (double)drf_real_usec(&drf_clock_system) / 1e6;
}

static double now_ms(void)
{
	return (double)drf_mono_usec(&drf_clock_system) / 1e3;
}

static void frame_free(struct top_frame *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->t[i].name);
	free(f->t);
	*f = (struct top_frame){ 0 };
}

static void frame_init(struct top_frame *f)
{
	*f = (struct top_frame){ .up = NAN, .last_tick = NAN, .probes = NAN, .jain_alloc = NAN,
				 .jain_use = NAN };
	for (int r = 0; r < DRF_NRES; r++)
		f->capacity[r] = NAN;
}

static int res_of(const struct expo_sample *s)
{
	const char *v = expo_label(s, "resource");

	for (int r = 0; v && r < DRF_NRES; r++)
		if (strcmp(v, res_label[r]) == 0)
			return r;
	return -1;
}

/* The tenant named name, added at the end when new; NULL when out of memory. */
static struct top_tenant *tenant_of(struct top_frame *f, const char *name)
{
	struct top_tenant *t;

	/* The metrics go family by family, each over the tenants in the same order. */
	for (size_t k = 0; k < 2 && f->n; k++) {
		size_t i = (f->hint + k) % f->n;

		if (strcmp(f->t[i].name, name) == 0) {
			f->hint = i;
			return &f->t[i];
		}
	}
	for (size_t i = 0; i < f->n; i++) {
		if (strcmp(f->t[i].name, name) == 0) {
			f->hint = i;
			return &f->t[i];
		}
	}
	if (DRF_VEC_GROW(f->t, &f->cap, f->n + 1) < 0)
		return NULL;
	t = &f->t[f->n];
	*t = (struct top_tenant){ .weight = NAN, .dom_alloc = NAN, .dom_use = NAN, .runq = NAN };
	for (int r = 0; r < DRF_NRES; r++)
		t->alloc[r] = t->use[r] = t->eff[r] = t->decl[r] = NAN;
	t->name = strdup(name);
	if (!t->name)
		return NULL;
	f->hint = f->n++;
	return t;
}

/*
 * Whether name is of base's families, one per unit (drfd_allocation_cores,
 * _bytes, _bytes_per_second), or drfd 0.3's one of mixed units (base itself).
 */
static bool family_of(const char *name, const char *base)
{
	size_t n = strlen(base);

	if (strncmp(name, base, n) != 0)
		return false;
	name += n;
	return !*name || strcmp(name, "_cores") == 0 || strcmp(name, "_bytes") == 0 ||
	       strcmp(name, "_bytes_per_second") == 0;
}

/* One sample of a tenant into the frame. */
static int take_tenant_sample(struct top_frame *f, const struct expo_sample *s, const char *name)
{
	const char *of = expo_label(s, "of"), *window = expo_label(s, "window");
	struct top_tenant *t = tenant_of(f, name);
	int r = res_of(s);

	if (!t)
		return -ENOMEM;
	if (strcmp(s->name, "drfd_tenant_weight") == 0) {
		t->weight = s->value;
	} else if (strcmp(s->name, "drfd_dominant_share_ratio") == 0 && of) {
		if (strcmp(of, "allocation") == 0)
			t->dom_alloc = s->value;
		else if (strcmp(of, "use") == 0)
			t->dom_use = s->value;
	} else if (family_of(s->name, "drfd_allocation") && r >= 0) {
		t->alloc[r] = s->value;
	} else if (family_of(s->name, "drfd_effective_demand") && r >= 0) {
		t->eff[r] = s->value;
	} else if (family_of(s->name, "drfd_declared_demand") && r >= 0) {
		t->decl[r] = s->value;
	} else if (family_of(s->name, "drfd_use") && r >= 0 && window &&
		   strcmp(window, "tick") == 0) {
		t->use[r] = s->value;
	} else if (strcmp(s->name, "drfd_enforcement_not_holding") == 0 && r >= 0) {
		if (s->value == 1)
			t->not_holding |= 1u << r;
	} else if (strcmp(s->name, "drfd_pressure_ratio") == 0) {
		const char *sig = expo_label(s, "signal");

		if (sig && strcmp(sig, drf_pressure_name(DRF_PRESSURE_RUNQ)) == 0)
			t->runq = s->value;
	}
	return 0;
}

/* The frame of an exposition; other metrics and labels are passed over. */
static int frame_build(struct top_frame *f, const struct expo *e)
{
	frame_init(f);
	for (size_t i = 0; i < e->n; i++) {
		const struct expo_sample *s = &e->samples[i];
		const char *tenant = expo_label(s, "tenant");
		const char *of = expo_label(s, "of");
		int r;

		if (tenant) {
			r = take_tenant_sample(f, s, tenant);
			if (r < 0) {
				frame_free(f);
				return r;
			}
		} else if (strcmp(s->name, "drfd_up") == 0) {
			f->up = s->value;
		} else if (strcmp(s->name, "drfd_last_tick_timestamp_seconds") == 0) {
			f->last_tick = s->value;
		} else if (strcmp(s->name, "drfd_probes_up") == 0) {
			f->probes = s->value;
		} else if (strcmp(s->name, "drfd_jain_index") == 0 && of) {
			if (strcmp(of, "allocation") == 0)
				f->jain_alloc = s->value;
			else if (strcmp(of, "use") == 0)
				f->jain_use = s->value;
		} else if (family_of(s->name, "drfd_capacity") && (r = res_of(s)) >= 0) {
			f->capacity[r] = s->value;
		}
	}
	return 0;
}

/*
 * Asks drfd at sock for its metrics and builds the frame. Returns 0, or
 * -errno with what went wrong in why.
 */
static int fetch(const char *sock, struct top_frame *f, char *why, size_t len)
{
	static const char magic[] = "drfd-metrics 1\n";
	const char *what = NULL;
	char *answer = NULL;
	struct expo e;
	size_t n, line = 0;
	int r;

	r = drf_client_ask(sock, "metrics", ASK_TIMEOUT_MS, &answer, &n);
	if (r == -ENOENT || r == -ECONNREFUSED) {
		snprintf(why, len, "no drfd answers on %s (is it running? systemctl status drfd)",
			 sock);
		return r;
	}
	if (r < 0) {
		snprintf(why, len, "cannot ask drfd at %s: %s%s", sock, strerror(-r),
			 r == -EACCES ? " (root, or a member of the config's status-group)" : "");
		return r;
	}
	if (n < sizeof(magic) - 1 || memcmp(answer, magic, sizeof(magic) - 1) != 0) {
		size_t first = strcspn(answer, "\n");

		snprintf(why, len, "drfd at %s does not serve metrics; it answered: %.*s", sock,
			 (int)(first < 80 ? first : 80), answer);
		free(answer);
		return -EPROTO;
	}
	r = expo_parse(answer + sizeof(magic) - 1, n - (sizeof(magic) - 1), &e, &line, &what);
	free(answer);
	if (r < 0) {
		snprintf(why, len, "drfd's metrics, line %zu: %s", line + 1,
			 what ? what : strerror(-r));
		return r;
	}
	r = frame_build(f, &e);
	expo_free(&e);
	if (r < 0)
		snprintf(why, len, "%s", strerror(-r));
	return r;
}

/* Sorting. NAN sorts last either way; ties go by name. */
static double io_sum(double a, double b)
{
	if (isnan(a) && isnan(b))
		return NAN;
	return (isnan(a) ? 0 : a) + (isnan(b) ? 0 : b);
}

static void sort_values(const struct top_tenant *t, enum top_sort by, double v[2])
{
	v[1] = NAN;
	switch (by) {
	case SORT_DOMINANT:
		v[0] = t->dom_use;
		v[1] = t->dom_alloc;
		break;
	case SORT_ALLOC:
		v[0] = t->dom_alloc;
		v[1] = t->dom_use;
		break;
	case SORT_CPU:
		v[0] = t->use[DRF_RES_CPU];
		break;
	case SORT_MEMORY:
		v[0] = t->use[DRF_RES_MEMORY];
		break;
	case SORT_IO:
		v[0] = io_sum(t->use[DRF_RES_IO_READ], t->use[DRF_RES_IO_WRITE]);
		break;
	case SORT_NET:
		v[0] = io_sum(t->use[DRF_RES_NET], t->use[DRF_RES_NET_IN]);
		break;
	default:
		v[0] = NAN;
		break;
	}
}

static int compare_tenants(const void *pa, const void *pb, void *ctx)
{
	const struct top_tenant *a = pa, *b = pb;
	const struct top_view *view = ctx;
	int dir = view->reverse ? -1 : 1;
	double va[2], vb[2];

	if (view->sort == SORT_NAME)
		return dir * strcmp(a->name, b->name);
	sort_values(a, view->sort, va);
	sort_values(b, view->sort, vb);
	for (int k = 0; k < 2; k++) {
		if (isnan(va[k]) != isnan(vb[k]))
			return isnan(va[k]) ? 1 : -1;
		if (isnan(va[k]) || va[k] == vb[k])
			continue;
		return dir * (va[k] > vb[k] ? -1 : 1); /* largest first */
	}
	return strcmp(a->name, b->name);
}

/* Human units: 3 significant digits, a whole number as it is. */
static void scaled(double v, double base, const char *const *suffix, char *buf, size_t len)
{
	size_t k = 0;

	if (isnan(v)) {
		snprintf(buf, len, "-");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, "inf");
		return;
	}
	while (base > 1 && fabs(v) >= base && suffix[k + 1]) {
		v /= base;
		k++;
	}
	if (v == floor(v))
		snprintf(buf, len, "%.0f%s", v, suffix[k]);
	else if (fabs(v) < 10)
		snprintf(buf, len, "%.2f%s", v, suffix[k]);
	else if (fabs(v) < 100)
		snprintf(buf, len, "%.1f%s", v, suffix[k]);
	else
		snprintf(buf, len, "%.0f%s", v, suffix[k]);
}

/* A value of resource r (metrics' units) as the column shows it. */
static void quantity(int r, double v, char *buf, size_t len)
{
	static const char *const bytes[] = { "", "K", "M", "G", "T", "P", NULL };
	static const char *const bits[] = { "", "k", "M", "G", "T", NULL };
	static const char *const plain[] = { "", NULL };

	if (r == DRF_RES_CPU)
		scaled(v, 0, plain, buf, len);
	else if (r == DRF_RES_NET || r == DRF_RES_NET_IN)
		scaled(v * 8, 1000, bits, buf, len);
	else
		scaled(v, 1024, bytes, buf, len);
}

static void ratio(double v, char *buf, size_t len)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.3f", v);
}

static void screen_add(struct screen *s, enum line_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void screen_add(struct screen *s, enum line_kind kind, const char *fmt, ...)
{
	va_list ap;
	char *text;
	int n;

	if (s->oom)
		return;
	if (DRF_VEC_GROW(s->l, &s->cap, s->n + 1) < 0) {
		s->oom = true;
		return;
	}
	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0) {
		s->oom = true;
		return;
	}
	s->l[s->n].kind = kind;
	s->l[s->n++].text = text;
}

static void screen_clear(struct screen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->l[i].text);
	s->n = 0;
	s->oom = false;
}

#define NCOLS (4 + DRF_NRES + 1)
#define CELL 80

static bool is_res_col(int c)
{
	return c >= 4 && c < 4 + DRF_NRES;
}

/* The text of column c of tenant t, or of the heading when t is NULL. */
static void cell(const struct top_frame *f, const struct top_tenant *t, int c, char *buf,
		 size_t len)
{
	static const char *const fixed[] = { "TENANT", "WEIGHT", "DOM-ALLOC", "DOM-USE" };
	char u[24], a[24];

	if (!t) {
		snprintf(buf, len, "%s", c < 4 ? fixed[c] : c == NCOLS - 1 ? "RUNQ"
						     : res_heading[c - 4]);
	} else if (c == 0) {
		snprintf(buf, len, "%s", t->name);
	} else if (c == 1) {
		if (isnan(t->weight))
			snprintf(buf, len, "-");
		else
			snprintf(buf, len, "%g", t->weight);
	} else if (c == 2) {
		ratio(t->dom_alloc, buf, len);
	} else if (c == 3) {
		ratio(t->dom_use, buf, len);
	} else if (c == NCOLS - 1) {
		if (isnan(t->runq))
			snprintf(buf, len, "-");
		else
			snprintf(buf, len, "%.2f", t->runq);
	} else {
		int r = c - 4;

		quantity(r, t->use[r], u, sizeof(u));
		quantity(r, t->alloc[r], a, sizeof(a));
		/* Observed demand below the declared: the effective demand, after a '~'. */
		if (!isnan(t->eff[r]) && !isnan(t->decl[r]) && t->eff[r] > 0 &&
		    t->eff[r] < fmin(t->decl[r], f->capacity[r])) {
			char e[24];

			quantity(r, t->eff[r], e, sizeof(e));
			snprintf(buf, len, "%s/%s~%s", u, a, e);
		} else {
			snprintf(buf, len, "%s/%s", u, a);
		}
	}
}

/*
 * The lines of a frame: a header, then one row per tenant. f's tenants are
 * sorted in place. error: the last refresh's failure, shown above the table.
 */
static void render(struct screen *s, struct top_frame *f, const struct top_view *view,
		   double delay_ms, const char *error, bool interactive)
{
	char host[256] = "", age[64], ja[32], ju[32], (*cells)[NCOLS][CELL], *row;
	size_t width[NCOLS] = { 0 }, holding = 0, rowlen = 0;
	bool shown[NCOLS];

	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "?");
	if (isnan(f->last_tick) || f->last_tick <= 0)
		snprintf(age, sizeof(age), "no tick yet");
	else
		snprintf(age, sizeof(age), "last tick %.1fs ago",
			 fmax(now_realtime() - f->last_tick, 0));
	for (size_t i = 0; i < f->n; i++)
		holding += f->t[i].not_holding != 0;
	ratio(f->jain_alloc, ja, sizeof(ja));
	ratio(f->jain_use, ju, sizeof(ju));
	qsort_r(f->t, f->n, sizeof(*f->t), compare_tenants, (void *)view);

	screen_add(s, LINE_TITLE, "drfd on %s: %zu tenant%s, %s, probes %s, refresh %gs", host,
		   f->n, f->n == 1 ? "" : "s", age,
		   isnan(f->probes) ? "unknown" : f->probes == 1 ? "up" : "down", delay_ms / 1000);
	screen_add(s, holding ? LINE_ALERT : LINE_INFO,
		   "Jain's index: allocation %s, use %s; %zu tenant%s not holding; sort: %s%s%s",
		   ja, ju, holding, holding == 1 ? "" : "s", sorts[view->sort].what,
		   view->reverse ? ", reversed" : "", interactive && !view->help ? "; h: keys" : "");
	screen_add(s, LINE_INFO, "cells: use/allocation over the last tick; B: bytes, K M G = "
		   "1024; bit/s: k M G = 1000; ~: effective demand, where observed demand is below "
		   "the declared; !: not holding (use above the limit); RUNQ: cpu wait, s/s");
	if (interactive && view->help)
		screen_add(s, LINE_INFO, "keys: d dominant share of use, a of allocation, c cpu, "
			   "m memory, i io, n network, t name, r reverse, h help, q quit");
	if (error)
		screen_add(s, LINE_ERROR, "%s", error);
	/* A blank line would split a batch frame: frames are separated by one. */
	if (interactive)
		screen_add(s, LINE_INFO, "%s", "");

	/* The cells first (row 0: the heading), then each column as wide as its widest. */
	cells = calloc(f->n + 1, sizeof(*cells));
	if (!cells) {
		s->oom = true;
		return;
	}
	for (int c = 0; c < NCOLS; c++)
		shown[c] = !is_res_col(c) || !isnan(f->capacity[c - 4]);
	for (size_t i = 0; i <= f->n; i++) {
		for (int c = 0; c < NCOLS; c++) {
			if (!shown[c])
				continue;
			cell(f, i ? &f->t[i - 1] : NULL, c, cells[i][c], CELL);
			if (strlen(cells[i][c]) > width[c])
				width[c] = strlen(cells[i][c]);
		}
	}
	/* Two blanks between columns; a resource cell's mark ('!' or a blank) ends it. */
	for (int c = 0; c < NCOLS; c++)
		if (shown[c])
			rowlen += width[c] + 3;
	row = malloc(rowlen + 1);
	if (!row) {
		free(cells);
		s->oom = true;
		return;
	}
	for (size_t i = 0; i <= f->n; i++) {
		const struct top_tenant *t = i ? &f->t[i - 1] : NULL;
		size_t at = 0;

		for (int c = 0; c < NCOLS; c++) {
			bool bang = t && is_res_col(c) && (t->not_holding & (1u << (c - 4)));
			int n;

			if (!shown[c])
				continue;
			/* The name left, the figures right. */
			if (c == 0)
				n = snprintf(row + at, rowlen + 1 - at, "%-*s", (int)width[c],
					     cells[i][c]);
			else
				n = snprintf(row + at, rowlen + 1 - at, "  %*s%s", (int)width[c],
					     cells[i][c], bang ? "!" : is_res_col(c) ? " " : "");
			at = n < 0 ? at : at + (size_t)n > rowlen ? rowlen : at + (size_t)n;
		}
		while (at > 0 && row[at - 1] == ' ')
			row[--at] = '\0';
		screen_add(s, !t ? LINE_HEADING : t->not_holding ? LINE_ALERT : LINE_ROW, "%s", row);
	}
	if (f->n == 0)
		screen_add(s, LINE_INFO, "(no tenant in drfd's metrics)");
	free(row);
	free(cells);
}

static int print_batch(const struct screen *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (puts(s->l[i].text) == EOF)
			return -EIO;
	return fflush(stdout) == 0 ? 0 : -errno;
}

static void draw(const struct screen *s)
{
	int rows = LINES, cols = COLS;

	erase();
	for (size_t i = 0; i < s->n && (int)i < rows; i++) {
		attr_t a = A_NORMAL;

		switch (s->l[i].kind) {
		case LINE_TITLE:
			a = A_BOLD;
			break;
		case LINE_HEADING:
			a = A_REVERSE;
			break;
		case LINE_ALERT:
		case LINE_ERROR:
			a = A_BOLD | (has_colors() ? COLOR_PAIR(1) : A_UNDERLINE);
			break;
		default:
			break;
		}
		attrset(a);
		mvaddnstr((int)i, 0, s->l[i].text, cols);
	}
	attrset(A_NORMAL);
	move(rows > 0 ? rows - 1 : 0, 0);
	refresh();
}

/* The view's answer to a key: 1 redraw, 0 nothing, -1 quit. */
static int on_key(struct top_view *view, int ch)
{
	if (ch == 'q' || ch == 'Q')
		return -1;
	if (ch == 'r') {
		view->reverse = !view->reverse;
		return 1;
	}
	if (ch == 'h' || ch == '?') {
		view->help = !view->help;
		return 1;
	}
	if (ch == KEY_RESIZE || ch == 12 /* ^L */)
		return 1;
	for (int k = 0; k < SORT_N; k++) {
		if (ch == sorts[k].key) {
			view->sort = k;
			view->reverse = false;
			return 1;
		}
	}
	return 0;
}

/* Plain text frames, each after a blank line but the first. */
static int run_batch(const char *sock, double delay_ms, long frames, struct top_view *view,
		     struct top_frame *f)
{
	struct screen s = { 0 };
	char why[512];
	int r = 0;

	for (long i = 0; !stop_signal; i++) {
		double deadline = now_ms() + delay_ms;

		screen_clear(&s);
		render(&s, f, view, delay_ms, NULL, false);
		if (s.oom) {
			fputs("drfctl top: out of memory\n", stderr);
			r = -ENOMEM;
			break;
		}
		if (i > 0 && putchar('\n') == EOF) {
			r = -EIO;
			break;
		}
		r = print_batch(&s);
		if (r < 0)
			break;
		if (frames > 0 && i + 1 >= frames)
			break;
		for (double left; !stop_signal && (left = deadline - now_ms()) > 0;) {
			struct timespec ts = { .tv_sec = (time_t)(left / 1000),
					       .tv_nsec = (long)(fmod(left, 1000) * 1e6) };

			nanosleep(&ts, NULL);
		}
		if (stop_signal)
			break;
		frame_free(f);
		r = fetch(sock, f, why, sizeof(why));
		if (r < 0) {
			fprintf(stderr, "drfctl: %s\n", why);
			break;
		}
	}
	screen_clear(&s);
	free(s.l);
	return r;
}

static int run_curses(const char *sock, double delay_ms, long frames, struct top_view *view,
		      struct top_frame *f)
{
	struct screen s = { 0 };
	char why[512], error[600] = "";
	SCREEN *term;
	int r = 0;

	term = newterm(NULL, stdout, stdin);
	if (!term) {
		fprintf(stderr, "drfctl top: cannot drive this terminal (TERM=%s); -b prints "
				"plain text\n", getenv("TERM") ? getenv("TERM") : "unset");
		return -ENOTTY;
	}
	set_term(term);
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	if (has_colors()) {
		start_color();
		use_default_colors();
		init_pair(1, COLOR_RED, -1);
	}
	for (long i = 0; !stop_signal;) {
		double deadline = now_ms() + delay_ms;
		bool quit = false;

		screen_clear(&s);
		render(&s, f, view, delay_ms, error[0] ? error : NULL, true);
		if (s.oom) {
			r = -ENOMEM;
			break;
		}
		draw(&s);
		i++;
		/* Keys until the next refresh; a key that changes the view redraws at once. */
		for (double left; !stop_signal && (left = deadline - now_ms()) > 0;) {
			int ch, k;

			timeout(left < 1 ? 1 : (int)left);
			ch = getch();
			if (ch == ERR)
				continue;
			k = on_key(view, ch);
			if (k < 0) {
				quit = true;
				break;
			}
			if (k > 0) {
				screen_clear(&s);
				render(&s, f, view, delay_ms, error[0] ? error : NULL, true);
				draw(&s);
			}
		}
		if (quit || (frames > 0 && i >= frames))
			break;
		/* A refresh that fails keeps the last frame, says why, and tries again. */
		{
			struct top_frame next;

			if (fetch(sock, &next, why, sizeof(why)) == 0) {
				frame_free(f);
				*f = next;
				error[0] = '\0';
			} else {
				time_t t = time(NULL);
				struct tm tm;
				char hms[16] = "?";

				if (localtime_r(&t, &tm))
					strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
				snprintf(error, sizeof(error), "%s: %s; showing the last answer, "
					 "retrying", hms, why);
			}
		}
	}
	endwin();
	delscreen(term);
	screen_clear(&s);
	free(s.l);
	if (r == -ENOMEM)
		fputs("drfctl top: out of memory\n", stderr);
	return r;
}

int drfctl_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "delay", required_argument, NULL, 'd' },
		{ "batch", no_argument, NULL, 'b' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "sort", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DRFCTL_DEFAULT_CONFIG, *sock = NULL, *why = NULL;
	char err[2048], sockbuf[256], fail[512];
	struct top_view view = { .sort = SORT_DOMINANT };
	struct top_frame f;
	double delay_ms = -1;
	bool batch = false;
	long frames = 0;
	char *end;
	int opt, r;

	while ((opt = drfctl_getopt(argc, argv, "c:d:bn:h", opts, "top")) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		case 'd':
			if (drf_parse_duration_ms(optarg, &delay_ms, &why) < 0 ||
			    delay_ms < MIN_DELAY_MS || delay_ms > MAX_DELAY_MS) {
				fprintf(stderr, "drfctl top: -d '%s': %s\n", optarg,
					why ? why : "out of range [0.1s, 3600s]");
				return DRFCTL_EXIT_USAGE;
			}
			break;
		case 'b':
			batch = true;
			break;
		case 'n':
			errno = 0;
			frames = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || frames < 1) {
				fprintf(stderr, "drfctl top: -n '%s': not a count of 1 or more\n",
					optarg);
				return DRFCTL_EXIT_USAGE;
			}
			break;
		case 'S':
			view.sort = SORT_N;
			for (int k = 0; k < SORT_N; k++)
				if (strcmp(optarg, sorts[k].name) == 0)
					view.sort = k;
			if (view.sort == SORT_N) {
				fprintf(stderr, "drfctl top: unknown sort '%s' (dominant, allocation, "
						"cpu, memory, io, network, name)\n", optarg);
				return DRFCTL_EXIT_USAGE;
			}
			break;
		case 'h':
			drfctl_help(stdout, "top");
			return EXIT_SUCCESS;
		default:
			return DRFCTL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "drfctl top: unexpected argument '%s'\n", argv[optind]);
		return DRFCTL_EXIT_USAGE;
	}
	/* The socket and the tick interval of the config; one that cannot be read gives the defaults. */
	if (!sock || delay_ms < 0) {
		struct drf_config cfg;

		if (drf_config_load(path, &drf_host_real, &cfg, err, sizeof(err)) == 0) {
			if (!sock) {
				snprintf(sockbuf, sizeof(sockbuf), "%s", cfg.status_socket);
				sock = sockbuf;
			}
			if (delay_ms < 0)
				delay_ms = (double)cfg.interval_us / 1000;
			drf_config_free(&cfg);
		}
		if (!sock)
			sock = DRFCTL_DEFAULT_SOCKET;
		if (delay_ms < 0)
			delay_ms = 1000;
		if (delay_ms < MIN_DELAY_MS)
			delay_ms = MIN_DELAY_MS;
	}
	/* Like systemd-cgtop: not a terminal, plain text. */
	if (!isatty(STDOUT_FILENO))
		batch = true;
	/*
	 * SIGINT, SIGTERM and SIGHUP end the view between refreshes, and curses
	 * restores the terminal: ncurses leaves alone handlers that are not
	 * SIG_DFL, so these are set before it starts. No SA_RESTART: a sleep or
	 * a wait for a key returns early.
	 */
	catch_stop(SIGINT);
	catch_stop(SIGTERM);
	catch_stop(SIGHUP);

	r = fetch(sock, &f, fail, sizeof(fail));
	if (r < 0) {
		fprintf(stderr, "drfctl: %s\n", fail);
		return EXIT_FAILURE;
	}
	r = batch ? run_batch(sock, delay_ms, frames, &view, &f)
		  : run_curses(sock, delay_ms, frames, &view, &f);
	frame_free(&f);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
