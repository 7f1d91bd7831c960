// SPDX-License-Identifier: MIT
/*
 * drfctl recommend: each tenant's declared demand against its measured use
 * (p50, p95, peak) over a window of drfd's usage history, the over-provisioning
 * that implies, and a tenants.d section with suggested demands. Offline: reads
 * the config and the history file (agent/core/history.h), nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "history.h"
#include "json.h"
#include "planview.h"
#include "statedir.h"

/* A history file larger than this is not one drfd wrote (it keeps 2 x cap / 2). */
#define READ_MAX (4 * DRF_HIST_CAP_BYTES)

/* Reads path whole; -ENOENT if there is none. */
static int read_whole(const char *path, char **ret, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), r = 0;
	struct stat st;
	ssize_t n;
	char *buf;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else if ((uint64_t)st.st_size > READ_MAX)
		r = -EFBIG;
	if (r < 0) {
		close(fd);
		return r;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = drf_read_full(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n < 0) {
		free(buf);
		return (int)n;
	}
	*ret = buf;
	*ret_len = (size_t)n;
	return 0;
}

/* Feeds one file; 1 if it is not there, 0 done, or -1 with the error printed. */
static int feed_file(struct drf_hist *h, const char *path)
{
	const char *why = NULL;
	size_t len = 0, skipped = h->skipped;
	char *buf = NULL;
	int r = read_whole(path, &buf, &len);

	if (r == -ENOENT)
		return 1;
	if (r < 0) {
		fprintf(stderr, "drfctl: %s: cannot read the usage history: %s\n", path,
			r == -EINVAL ? "not a regular file" : strerror(-r));
		return -1;
	}
	h->first_bad_line = 0;
	r = drf_hist_feed(h, buf, len, &why);
	free(buf);
	if (r < 0) {
		fprintf(stderr, "drfctl: %s:1: %s\n", path, why);
		return -1;
	}
	if (h->skipped > skipped)
		fprintf(stderr, "drfctl: warning: %s:%zu: %s; skipped %zu line(s) of this file "
				"that do not parse\n",
			path, h->first_bad_line, h->first_bad_why, h->skipped - skipped);
	return 0;
}

struct tenant_reco {
	const struct drf_tenant *t;
	const struct drf_hist_series *s;
	size_t samples;
	bool advice;               /* enough samples */
	struct drf_reco res[DRF_NRES];
	double tasks;              /* task model: suggested count (NAN: none) */
};

static double declared_of(const struct drf_config *c, const struct drf_tenant *t, int r)
{
	if (t->task_model)
		return t->vec[r] * t->tasks; /* INFINITY for unlimited (0 * inf: see below) */
	return t->declared[r] ? t->vec[r] : c->capacity[r];
}

static int compute(const struct drf_config *c, const struct drf_hist *h, int64_t from,
		   const struct drf_tenant *t, struct tenant_reco *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->t = t;
	ret->s = drf_hist_find(h, t->name);
	ret->tasks = NAN;
	for (size_t i = 0; ret->s && i < ret->s->n; i++)
		ret->samples += ret->s->t[i] >= from;
	ret->advice = ret->samples >= DRF_RECO_MIN_SAMPLES;
	for (int r = 0; r < DRF_NRES; r++) {
		double decl = declared_of(c, t, r);

		if (c->capacity[r] <= 0)
			continue;
		if (isnan(decl)) /* a task of 0 times unlimited tasks: needs none */
			decl = 0;
		if (ret->s) {
			if (drf_reco_compute(ret->s, from, r, decl, c->capacity[r], &ret->res[r]) < 0)
				return -ENOMEM;
		} else {
			ret->res[r] = (struct drf_reco){ .p50 = NAN, .p95 = NAN, .peak = NAN,
							 .ws_peak = NAN, .declared = decl,
							 .over = NAN, .suggested = NAN };
		}
		if (!ret->advice)
			ret->res[r].suggested = NAN;
		if (t->task_model && ret->advice && t->vec[r] > 0 && ret->res[r].n) {
			double k = ceil(ret->res[r].suggested / t->vec[r] - 1e-9);

			if (isnan(ret->tasks) || k > ret->tasks)
				ret->tasks = k;
		}
	}
	if (t->task_model && ret->advice && !isnan(ret->tasks) && ret->tasks < 1)
		ret->tasks = 1;
	return 0;
}

static void fmt_q(int r, double v, char *buf, size_t len)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else
		drf_format_quantity(v, drf_res_unit(r), buf, len);
}

/* The tenants.d section: the tenant as it is, its demands replaced by the suggestions. */
static void print_snippet(FILE *out, const struct drf_config *c, const struct tenant_reco *tr)
{
	const struct drf_tenant *t = tr->t;
	char b[64];

	fprintf(out, "[tenant %s]\n", t->name);
	if (t->weight != 1)
		fprintf(out, "weight = %s\n", drf_format_double(t->weight, b, sizeof(b)));
	if (t->cgroup && strcmp(t->cgroup, t->name) != 0)
		fprintf(out, "cgroup = %s\n", t->cgroup);
	for (int r = 0; r < DRF_NRES; r++) {
		const struct drf_reco *x = &tr->res[r];

		if (t->task_model) {
			if (t->declared[r])
				fprintf(out, "task-%s = %s\n", drf_res_name(r),
					drf_reco_format(r, t->vec[r], b, sizeof(b)));
			continue;
		}
		if (c->capacity[r] <= 0)
			continue;
		if (!isnan(x->suggested))
			fprintf(out, "%s = %s\n", drf_res_name(r),
				drf_reco_format(r, x->suggested, b, sizeof(b)));
		else if (t->declared[r]) /* not measured: as declared */
			fprintf(out, "%s = %s\n", drf_res_name(r),
				drf_reco_format(r, t->vec[r], b, sizeof(b)));
	}
	if (t->task_model) {
		if (!isnan(tr->tasks))
			fprintf(out, "tasks = %.0f\n", tr->tasks);
		else if (isinf(t->tasks))
			fputs("tasks = unlimited\n", out);
		else
			fprintf(out, "tasks = %.0f\n", t->tasks);
	}
}

static void print_text(FILE *out, const struct drf_config *c, const struct tenant_reco *tr)
{
	const char *hdr[] = { "resource", "declared", "p50", "p95", "peak", "over", "suggested" };
	char cells[DRF_NRES + 1][7][32];
	size_t w[7] = { 0 }, rows = 1;

	fprintf(out, "tenant %s (%s:%d): ", tr->t->name, tr->t->file, tr->t->line);
	if (!tr->s || tr->samples == 0) {
		fputs("no history in the window\n\n", out);
		return;
	}
	fprintf(out, "%zu samples%s\n", tr->samples,
		tr->advice ? "" : ", too few for advice (fewer than 10)");
	for (int i = 0; i < 7; i++)
		snprintf(cells[0][i], sizeof(cells[0][i]), "%s", hdr[i]);
	for (int r = 0; r < DRF_NRES; r++) {
		const struct drf_reco *x = &tr->res[r];
		char(*row)[32] = cells[rows];

		if (c->capacity[r] <= 0)
			continue;
		snprintf(row[0], 32, "%s", drf_res_name(r));
		fmt_q(r, x->declared, row[1], 32);
		if (!tr->t->task_model && !tr->t->declared[r])
			snprintf(row[1] + strlen(row[1]), 32 - strlen(row[1]), "*");
		fmt_q(r, x->p50, row[2], 32);
		fmt_q(r, x->p95, row[3], 32);
		fmt_q(r, x->peak, row[4], 32);
		if (isnan(x->over))
			snprintf(row[5], 32, "-");
		else
			snprintf(row[5], 32, "%.0f%%", x->over * 100);
		if (isnan(x->suggested))
			snprintf(row[6], 32, "-");
		else
			drf_reco_format(r, x->suggested, row[6], 32);
		rows++;
	}
	for (size_t i = 0; i < rows; i++)
		for (int j = 0; j < 7; j++)
			if (strlen(cells[i][j]) > w[j])
				w[j] = strlen(cells[i][j]);
	for (size_t i = 0; i < rows; i++) {
		fputs("  ", out);
		for (int j = 0; j < 7; j++)
			fprintf(out, j ? "  %*s" : "%-*s", (int)w[j], cells[i][j]);
		fputc('\n', out);
	}
	if (tr->advice) {
		fputc('\n', out);
		print_snippet(out, c, tr);
	}
	fputc('\n', out);
}

/* One tenant's figures in tenants; -ENOMEM when its snippet cannot be made. */
static int json_tenant(json_object *tenants, const struct drf_config *c,
		       const struct tenant_reco *tr)
{
	json_object *o = drf_json_append_object(tenants), *res;

	drf_json_set_str(o, "name", tr->t->name);
	drf_json_set_str(o, "model", tr->t->task_model ? "tasks" : "demand");
	drf_json_set_u64(o, "samples", tr->samples);
	drf_json_set_bool(o, "advice", tr->advice);
	res = drf_json_set_object(o, "resources");
	for (int r = 0; r < DRF_NRES; r++) {
		const struct drf_reco *x = &tr->res[r];
		json_object *ro;

		if (c->capacity[r] <= 0)
			continue;
		ro = drf_json_set_object(res, drf_res_name(r));
		drf_json_set_num(ro, "declared", x->declared);
		drf_json_set_bool(ro, "declared_explicitly",
				  tr->t->task_model || tr->t->declared[r]);
		drf_json_set_u64(ro, "samples", x->n);
		drf_json_set_num(ro, "p50", x->p50);
		drf_json_set_num(ro, "p95", x->p95);
		drf_json_set_num(ro, "peak", x->peak);
		drf_json_set_num(ro, "over", x->over);
		drf_json_set_num(ro, "suggested", x->suggested);
	}
	drf_json_set_num(o, "tasks", tr->tasks);
	if (tr->advice) {
		char *s = NULL;
		size_t n = 0;
		FILE *m = open_memstream(&s, &n);

		if (m) {
			print_snippet(m, c, tr);
			if (fclose(m) != 0) {
				free(s);
				s = NULL;
			}
		}
		if (!s)
			return -ENOMEM;
		drf_json_set_str(o, "snippet", s);
		free(s);
	} else {
		drf_json_set_null(o, "snippet");
	}
	return 0;
}

/* "7d up to the newest record": the largest unit that divides the window. */
static void fmt_window(int64_t w, char *buf, size_t len)
{
	static const struct {
		int64_t s;
		char unit;
	} units[] = { { 86400, 'd' }, { 3600, 'h' }, { 60, 'm' }, { 1, 's' } };

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (w % units[i].s)
			continue;
		snprintf(buf, len, "%lld%c up to the newest record", (long long)(w / units[i].s),
			 units[i].unit);
		return;
	}
}

static void fmt_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm))
		snprintf(buf, len, "%lld", (long long)t);
}

int drfctl_recommend(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "window", required_argument, NULL, 'w' },
		{ "history", required_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DRFCTL_DEFAULT_CONFIG, *hist_path = NULL, *why, *only = NULL;
	char errbuf[1024], hp[4096], old[4104], root[4096], t0[40], t1[40], wbuf[64];
	int64_t window = 7 * 86400, from;
	struct tenant_reco *tr = NULL;
	json_object *doc = NULL, *tenants, *extras = NULL;
	bool json = false, all = false;
	int opt, ret = EXIT_FAILURE, a, b, r = 0;
	struct drf_config cfg;
	struct drf_hist h;
	size_t nt = 0, extra = 0;

	while ((opt = drfctl_getopt(argc, argv, "c:h", opts, "recommend")) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'w':
			if (strcmp(optarg, "all") == 0) {
				all = true;
			} else if (drf_parse_window_s(optarg, &window, &why) < 0) {
				fprintf(stderr, "drfctl recommend: --window '%s': %s\n", optarg, why);
				return DRFCTL_EXIT_USAGE;
			}
			break;
		case 'H':
			hist_path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			drfctl_help(stdout, "recommend");
			return EXIT_SUCCESS;
		default:
			return DRFCTL_EXIT_USAGE;
		}
	}
	if (optind < argc)
		only = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "drfctl recommend: unexpected argument '%s'\n", argv[optind]);
		return DRFCTL_EXIT_USAGE;
	}
	if (drf_config_load(path, &drf_host_real, &cfg, errbuf, sizeof(errbuf)) < 0) {
		drfctl_config_failed(path, errbuf);
		return DRFCTL_EXIT_CONFIG;
	}
	if (only) {
		size_t i = 0;

		while (i < cfg.n_tenants && strcmp(cfg.tenants[i].name, only) != 0)
			i++;
		if (i == cfg.n_tenants) {
			fprintf(stderr, "drfctl: no tenant '%s' in %s and its tenants directory\n",
				only, path);
			drf_config_free(&cfg);
			return DRFCTL_EXIT_CONFIG;
		}
	}
	if (hist_path) {
		snprintf(hp, sizeof(hp), "%s", hist_path);
	} else {
		drfctl_cli_root(&cfg, cfg.status_socket, root, sizeof(root));
		if (drf_statedir_path(cfg.state_dir, root, ".history", hp, sizeof(hp)) < 0) {
			fprintf(stderr, "drfctl: state-dir '%s': path too long\n", cfg.state_dir);
			drf_config_free(&cfg);
			return EXIT_FAILURE;
		}
	}
	if ((size_t)snprintf(old, sizeof(old), "%s.1", hp) >= sizeof(old)) {
		fprintf(stderr, "drfctl: %s: path too long\n", hp);
		drf_config_free(&cfg);
		return EXIT_FAILURE;
	}
	drf_hist_init(&h);
	a = feed_file(&h, old);
	b = a < 0 ? -1 : feed_file(&h, hp);
	if (a < 0 || b < 0)
		goto out;
	if (a == 1 && b == 1) {
		fprintf(stderr, "drfctl: no usage history: %s does not exist. drfd records each "
				"tenant's use there once a minute (state-dir of %s); it has not run "
				"with this state-dir and cgroup-root, or not for a minute yet\n",
			hp, path);
		goto out;
	}
	from = all || h.t_max == INT64_MIN ? INT64_MIN : h.t_max - window + 1;
	tr = calloc(cfg.n_tenants ? cfg.n_tenants : 1, sizeof(*tr));
	if (!tr) {
		fputs("drfctl: out of memory\n", stderr);
		goto out;
	}
	for (size_t i = 0; i < cfg.n_tenants; i++) {
		if (only && strcmp(cfg.tenants[i].name, only) != 0)
			continue;
		if (compute(&cfg, &h, from, &cfg.tenants[i], &tr[nt++]) < 0) {
			fputs("drfctl: out of memory\n", stderr);
			goto out;
		}
	}
	if (h.records) {
		fmt_time(from == INT64_MIN ? h.t_min : (from > h.t_min ? from : h.t_min), t0,
			 sizeof(t0));
		fmt_time(h.t_max, t1, sizeof(t1));
	} else {
		snprintf(t0, sizeof(t0), "-");
		snprintf(t1, sizeof(t1), "-");
	}
	if (json) {
		doc = drf_json_object();
		drf_json_set_str(doc, "history", hp);
		drf_json_set_u64(doc, "step_s", h.step_s);
		if (all)
			drf_json_set_null(doc, "window_s");
		else
			drf_json_set_int(doc, "window_s", window);
		drf_json_set_num(doc, "from", h.records ? (double)(from == INT64_MIN ||
								   from < h.t_min ? h.t_min : from)
							: NAN);
		drf_json_set_num(doc, "to", h.records ? (double)h.t_max : NAN);
		drf_json_set_u64(doc, "records", h.records);
		drf_json_set_u64(doc, "skipped_lines", h.skipped);
		drf_json_set_u64(doc, "torn_lines", h.torn);
		tenants = drf_json_set_array(doc, "tenants");
		for (size_t i = 0; i < nt; i++) {
			if (json_tenant(tenants, &cfg, &tr[i]) < 0) {
				fputs("drfctl: out of memory\n", stderr);
				goto out;
			}
		}
		extras = drf_json_set_array(doc, "not_in_config");
	} else {
		printf("history: %s, %zu records, %s to %s\n", hp, h.records, t0, t1);
		if (all)
			snprintf(wbuf, sizeof(wbuf), "the whole history");
		else
			fmt_window(window, wbuf, sizeof(wbuf));
		printf("window: %s; percentiles are nearest-rank over %u-second means; over: "
		       "the share\nof the declared demand above p95; suggested: p95 x %.1f rounded "
		       "up (memory: at least the\npeak working set), at most the capacity; * "
		       "undeclared: the demand is the whole capacity\n\n",
		       wbuf, h.step_s, DRF_RECO_HEADROOM);
		for (size_t i = 0; i < nt; i++)
			print_text(stdout, &cfg, &tr[i]);
	}
	/* Tenants the history knows but the config does not (not with a TENANT). */
	for (size_t i = 0; !only && i < h.n; i++) {
		bool known = false;
		size_t n = 0;

		for (size_t j = 0; j < cfg.n_tenants && !known; j++)
			known = strcmp(cfg.tenants[j].name, h.s[i].name) == 0;
		if (known)
			continue;
		for (size_t k = 0; k < h.s[i].n; k++)
			n += h.s[i].t[k] >= from;
		if (n == 0)
			continue;
		if (json) {
			json_object *x = drf_json_append_object(extras);

			drf_json_set_str(x, "name", h.s[i].name);
			drf_json_set_u64(x, "samples", n);
		} else {
			printf("%s%s (%zu samples)", extra ? ", " : "in the history, not in the config: ",
			       h.s[i].name, n);
		}
		extra++;
	}
	if (json)
		r = drf_json_print(stdout, doc);
	else if (extra)
		fputc('\n', stdout);
	if (r == 0 && fflush(stdout) != 0)
		r = -errno;
	if (r < 0) {
		fprintf(stderr, "drfctl: cannot print: %s\n", strerror(-r));
		goto out;
	}
	ret = EXIT_SUCCESS;
out:
	json_object_put(doc);
	free(tr);
	drf_hist_free(&h);
	drf_config_free(&cfg);
	return ret;
}
