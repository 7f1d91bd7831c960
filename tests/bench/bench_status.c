// SPDX-License-Identifier: MIT
/*
 * drfd's status at N tenants over the fake cgroup tree in tmpfs (every file
 * the kernel shows a tenant, one service with a process below each tenant, a
 * tick taken so that each tenant has its use): rendered whole
 * (drf_status_render(), as drfctl's fallback and the tests have it) against
 * in parts (drf_status_next() into a buffer of its own a part, as the status
 * socket renders them, one a turn of the event loop), JSON and text.
 *
 *   bench_status [N] [ROUNDS]
 *
 * Printed: the median time of a whole render and the bytes; for the parts,
 * how many, the median of their total time, and the longest part and largest
 * part's bytes (the most a turn of the loop does, and the most memory a
 * status holds beside the connection); the process's peak RSS after each.
 * Medians of interleaved rounds; nothing is asserted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "benchlib.h"
#include "fakecg.h"
#include "fakedrfd.h"
#include "status.h"

static long peak_rss_kb(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* The resident set now (drfd keeps what it freed: drfd_tune_process()'s trim threshold). */
static long rss_kb(void)
{
	long pages = -1, resident = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	if (f)
		fclose(f);
	return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The kernel's files of tenant cg that the status reads, and a service with a process below. */
static int tenant_files(struct fakedrfd *f, const char *cg, int i)
{
	char path[512], pid[32];

	snprintf(pid, sizeof(pid), "%d\n", 1000 + i);
	snprintf(path, sizeof(path), "%s/web.service", cg);
	if (fakedrfd_put(f, cg, "cpu.stat", "usage_usec 1000\nuser_usec 600\n"
			 "system_usec 400\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n") < 0 ||
	    fakedrfd_put(f, cg, "memory.current", "1048576\n") < 0 ||
	    fakedrfd_put(f, cg, "cgroup.procs", pid) < 0 ||
	    mkdirat(f->fs.rootfd, path, 0755) < 0)
		return -1;
	return fakedrfd_put(f, path, "cgroup.procs", pid);
}

/* N tenants, started, their files in place, a tick later. */
static int setup(struct fakedrfd *f, struct cgfs_ops *ops, int n)
{
	size_t len = (size_t)n * 96 + 128, off, held = drfd_tune_process();
	char *t = malloc(len);
	int r;

	if (!t)
		return -1;
	off = (size_t)snprintf(t, len, "[capacity]\ncpu = 100000\nmemory = 100T\n");
	for (int i = 0; i < n; i++)
		off += (size_t)snprintf(t + off, len - off, "[tenant t%d]\nweight = %d\ncpu = %d\n"
					"memory = %dG\n", i, 1 + i % 5, 1 + i % 7, 1 + i % 13);
	r = fakedrfd_setup(f, "mode = limit\n", t);
	free(t);
	if (r < 0)
		return r;
	/* As drfd: malloc's thresholds, and the counter files held open. */
	f->env.held_files = held;
	*ops = fakecg_ops;
	f->rec.inner = ops;
	r = fakedrfd_start(f);
	for (int i = 0; r == 0 && i < n; i++)
		r = tenant_files(f, f->d.decl.cfg.tenants[i].cgroup, i);
	if (r == 0) {
		fakedrfd_advance(f, f->d.decl.cfg.interval_us);
		drfd_tick(&f->d, f->d.verify);
	}
	return r;
}

/* One whole render; its bytes in *bytes. Returns its time, in ms. */
static double whole(struct fakedrfd *f, bool json, size_t *bytes)
{
	struct drf_view v;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	double t0;
	int problems;

	if (!out)
		exit(1);
	t0 = bench_now_us();
	drfd_view(&f->d, &v);
	if (drf_status_render(&v, json, out, &problems) < 0 || fclose(out) != 0)
		exit(1);
	t0 = bench_now_us() - t0;
	*bytes = len;
	free(buf);
	return t0 / 1000;
}

struct parts {
	int n;
	double total_ms, longest_ms;
	size_t bytes, largest;
	unsigned most_nodes;
};

/* The same in parts, each into a buffer of its own as the socket renders it. */
static void in_parts(struct fakedrfd *f, bool json, struct parts *p)
{
	struct drf_status_cursor c;
	int r;

	*p = (struct parts){ 0 };
	drf_status_begin(&c, json, NULL);
	do {
		struct drf_view v;
		char *buf = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&buf, &len);
		double t0;

		if (!out)
			exit(1);
		t0 = bench_now_us();
		drfd_view(&f->d, &v);
		r = drf_status_next(&c, &v, out);
		if (r < 0 || fclose(out) != 0)
			exit(1);
		t0 = (bench_now_us() - t0) / 1000;
		p->n++;
		p->total_ms += t0;
		p->longest_ms = t0 > p->longest_ms ? t0 : p->longest_ms;
		p->bytes += len;
		p->largest = len > p->largest ? len : p->largest;
		p->most_nodes = c.part_nodes > p->most_nodes ? c.part_nodes : p->most_nodes;
		free(buf);
	} while (r > 0);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000, rounds = argc > 2 ? atoi(argv[2]) : 11;
	double *w = calloc((size_t)rounds, sizeof(*w)), *pt = calloc((size_t)rounds, sizeof(*pt));
	double *pl = calloc((size_t)rounds, sizeof(*pl));
	struct fakedrfd f;
	struct cgfs_ops ops;

	if (n < 1 || rounds < 1 || !w || !pt || !pl) {
		fprintf(stderr, "usage: bench_status [N] [ROUNDS]\n");
		return 64;
	}
	if (setup(&f, &ops, n) < 0) {
		fprintf(stderr, "bench_status: setup failed\n");
		return 1;
	}
	printf("drfd's status at %d tenants over the fake tree (one service below each), "
	       "%d rounds; after the setup: RSS %ld kB, peak %ld kB\n", n, rounds, rss_kb(),
	       peak_rss_kb());
	for (int json = 1; json >= 0; json--) {
		struct parts p = { 0 };
		size_t bytes = 0, largest = 0;
		double longest = 0;
		unsigned most = 0;

		/* The parts first: the RSS after them is theirs, before a whole one grows it. */
		for (int i = 0; i < rounds; i++) {
			in_parts(&f, json, &p);
			pt[i] = p.total_ms;
			pl[i] = p.longest_ms;
			largest = p.largest > largest ? p.largest : largest;
			most = p.most_nodes > most ? p.most_nodes : most;
			longest = p.longest_ms > longest ? p.longest_ms : longest;
		}
		printf("%s in %d parts: %.1f ms in all, the longest part %.2f ms (median; %.2f at "
		       "most), the largest %zu bytes, at most %u nodes a part (DRF_STATUS_PART "
		       "%d); RSS %ld kB\n", json ? "json" : "text", p.n, bench_median(pt, rounds),
		       bench_median(pl, rounds), longest, largest, most, DRF_STATUS_PART, rss_kb());
		for (int i = 0; i < rounds; i++)
			w[i] = whole(&f, json, &bytes);
		printf("%s whole: %.1f ms, %zu bytes; RSS %ld kB\n", json ? "json" : "text",
		       bench_median(w, rounds), bytes, rss_kb());
		if (p.bytes != bytes)
			printf("  the parts' bytes (%zu) differ from the whole's\n", p.bytes);
	}
	printf("peak RSS at the end %ld kB\n", peak_rss_kb());
	fakedrfd_teardown(&f);
	free(w);
	free(pt);
	free(pl);
	return 0;
}
