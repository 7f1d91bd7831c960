/* SPDX-License-Identifier: MIT */
/*
 * Usage history and right-sizing advice (`drfctl recommend`). Pure: no I/O.
 *
 * drfd appends, once per step (DRF_HIST_STEP_S), one line per tenant with the
 * tenant's measured use over that step. The file is text, tab-separated:
 *
 *   drfd-history 1 step 60
 *   # time tenant cpu memory io-read-bps io-write-bps net-rate net-ingress-rate
 *   #   memory-peak working-set-peak          (one line in the file)
 *   1763870460 web 0.52 1.3e+09 0 0 8.1e+06 - 1.4e+09 9.8e+08
 *
 * (columns separated by one tab each). time: end of the step, Unix seconds;
 * the six resource columns: the mean of the tick's use over the step in base
 * units (cores, bytes, bytes/s, bits/s), to 4 significant digits (0.05%);
 * memory-peak and working-set-peak: the largest memory.current and working set
 * seen in the step; "-": not measured. Lines starting with '#' are comments.
 * A line that does not end in a newline (drfd stopped in mid-write) is torn and
 * skipped, as is any line that does not parse; the file is still usable.
 */
#ifndef DRF_HISTORY_H
#define DRF_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "res.h"

#define DRF_HIST_VERSION 1
#define DRF_HIST_STEP_S 60
#define DRF_HIST_NAME_MAX 64
/* Values of a record: the DRF_NRES resources, then the two memory peaks. */
enum { DRF_HIST_MEM_PEAK = DRF_NRES, DRF_HIST_WS_PEAK, DRF_HIST_NVAL };
/*
 * The history drfd keeps, its file and the one rotated away together (the
 * daemon's histfile.c). 192 MiB: the newest 96 MiB are always kept, a million
 * lines of up to about 100 bytes (a tenant with every resource measured): a
 * week of 100 tenants.
 */
#define DRF_HIST_CAP_BYTES (192ull << 20)
/* A record line is at most this long (name, 10 columns of %.4g, tabs). */
#define DRF_HIST_LINE_MAX 256
/* Fewer records than this in the window: too little history to advise. */
#define DRF_RECO_MIN_SAMPLES 10
/* The suggestion is p95 times this. */
#define DRF_RECO_HEADROOM 1.2

/* The header of every history file; returns its length. */
int drf_hist_format_header(char *buf, size_t len, unsigned step_s);

/* One step of one tenant, as the daemon accumulates it tick by tick. */
struct drf_hist_acc {
	double sum[DRF_NRES];
	unsigned n[DRF_NRES];
	double mem_peak, ws_peak; /* NAN: none seen */
};

void drf_hist_acc_reset(struct drf_hist_acc *a);
/* Adds one tick: use per resource and memory.current, working set (NAN: unknown). */
void drf_hist_acc_add(struct drf_hist_acc *a, const double use[DRF_NRES], double mem_current,
		      double working_set);
/* True when the step has anything to record. */
bool drf_hist_acc_any(const struct drf_hist_acc *a);

/*
 * The record line (with its newline) of a step ending at t; returns its length,
 * or -EINVAL for a name that is not a tenant name, -ENOSPC if len is too short.
 */
int drf_hist_format_rec(char *buf, size_t len, int64_t t, const char *tenant,
			const struct drf_hist_acc *a);

/* What a history (one or more files, oldest first) holds, per tenant. */
struct drf_hist_series {
	char *name;
	size_t n, cap;
	int64_t *t;
	double (*v)[DRF_HIST_NVAL]; /* NAN: not measured */
};

struct drf_hist {
	unsigned step_s;            /* of the last file fed */
	struct drf_hist_series *s;
	size_t n, cap;
	int64_t t_min, t_max;       /* over every record; t_max < t_min: none */
	size_t records;
	size_t skipped;             /* lines that did not parse (torn ones included) */
	size_t torn;                /* of which: the last line of a file, cut short */
	size_t first_bad_line;      /* line number of the first skipped line (0: none) */
	const char *first_bad_why;
};

void drf_hist_init(struct drf_hist *h);
void drf_hist_free(struct drf_hist *h);

/*
 * Adds the records of one file's contents. A file that is empty adds nothing; one
 * whose first line is not a history header of a known version is refused:
 * -EINVAL (-EPROTO: a newer version), with *ret_why. -ENOMEM leaves h usable.
 * Lines that do not parse are counted in skipped, not fatal.
 */
int drf_hist_feed(struct drf_hist *h, const char *buf, size_t len, const char **ret_why);

/* The series of a tenant, or NULL. */
const struct drf_hist_series *drf_hist_find(const struct drf_hist *h, const char *name);

/*
 * Nearest-rank percentile of sorted x[0..n-1], 0 < p <= 100: the value of rank
 * ceil(p/100 * n) (1-based). NAN for n = 0.
 */
double drf_percentile_nearest_rank(const double *sorted, size_t n, double p);

/* One resource of one tenant over a window. */
struct drf_reco {
	size_t n;                   /* records with a measurement */
	double p50, p95, peak;      /* NAN when n = 0; peak of memory: largest memory-peak */
	double ws_peak;             /* memory only: largest working-set-peak (NAN: none) */
	double declared;            /* INFINITY: unlimited */
	double over;                /* (declared - p95) / declared; NAN if not finite or 0 */
	double suggested;           /* NAN when n = 0 */
};

/*
 * The statistics of resource r of series s over records with t >= from, against
 * what the tenant declares and the capacity.
 */
int drf_reco_compute(const struct drf_hist_series *s, int64_t from, enum drf_res r,
		     double declared, double capacity, struct drf_reco *ret);

/*
 * The suggested demand: p95 * DRF_RECO_HEADROOM (memory: at least the peak
 * working set), rounded up (drf_reco_round), at most capacity. 0 stays 0.
 */
double drf_reco_suggest(enum drf_res r, double p95, double ws_peak, double capacity);

/*
 * Rounds v up to a value that reads well in r's config unit: cpu to 0.1 core;
 * bytes and bits/s to two significant digits of the largest unit below v
 * (1.37G -> 1.4G, 123M -> 130M, 87.3mbit -> 88mbit).
 */
double drf_reco_round(enum drf_res r, double v);

/* Prints a rounded value as the config takes it: "0.4", "1.4G", "130M", "88mbit". */
char *drf_reco_format(enum drf_res r, double v, char *buf, size_t len);

/* Parses a window: N followed by s, m, h or d ("7d", "36h"); seconds. */
int drf_parse_window_s(const char *s, int64_t *ret, const char **ret_why);

#endif
