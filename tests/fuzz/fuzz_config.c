// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the config reader (make fuzz). The input is a main config
 * file; bytes after the first NUL, if any, are a file of its tenants.d. What
 * must hold for every input:
 * - a refusal says where: the message starts with the file's path, and holds
 *   no control character (it goes to a terminal or the journal);
 * - a config that loads gives a problem the allocation engine accepts, and an
 *   allocation within the capacities.
 * The host is a fixed fake (8 cpus, 16G, eth0 at 10 gbit), so `auto` is
 * deterministic. Seeds: tests/fuzz/corpus/config/.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "config.h"
#include "fakecg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], path[128], tpath[160];

static int cpus(void *ctx, double *ret)
{
	(void)ctx;
	*ret = 8;
	return 0;
}

static int mem(void *ctx, double *ret)
{
	(void)ctx;
	*ret = 16.0 * 1024 * 1024 * 1024;
	return 0;
}

static int speed(void *ctx, const char *dev, double *ret)
{
	(void)ctx;
	if (strcmp(dev, "eth0") != 0)
		return -ENOENT;
	*ret = 10e9;
	return 0;
}

static const struct drf_host_ops host = {
	.online_cpus = cpus,
	.mem_total = mem,
	.link_speed = speed,
};

static void write_bytes(const char *p, const uint8_t *buf, size_t n)
{
	FILE *f = fopen(p, "wb");

	if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0)
		abort();
}

static void setup(void)
{
	char tdir[128];

	snprintf(dir, sizeof(dir), "%s/drf-fuzz-config-XXXXXX", fakecg_tmpdir());
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/drfd.conf", dir);
	snprintf(tdir, sizeof(tdir), "%s/tenants.d", dir);
	snprintf(tpath, sizeof(tpath), "%s/t.conf", tdir);
	if (mkdir(tdir, 0755) < 0)
		abort();
}

/* The error: a line each (a file's errors are all said), each naming the file
 * first (but a last DRF_CONFIG_MORE_ERRORS), none empty, and no other control byte. */
static void check_error(const char *err)
{
	const unsigned char *p = (const unsigned char *)err;

	do {
		/* the last line may say that more were left out */
		if (p > (const unsigned char *)err && strcmp((const char *)p, DRF_CONFIG_MORE_ERRORS) == 0)
			return;
		if (strncmp((const char *)p, dir, strlen(dir)) != 0) {
			fprintf(stderr, "an error line does not start with the file: %s\n", err);
			abort();
		}
		for (; *p && *p != '\n'; p++)
			if (*p < 0x20 || *p == 0x7f) {
				fprintf(stderr, "control byte 0x%02x in the error: %s\n", *p, err);
				abort();
			}
	} while (*p && *++p);
	if (p > (const unsigned char *)err && p[-1] == '\n') {
		fprintf(stderr, "the error ends in an empty line: %s\n", err);
		abort();
	}
}

static void check_config(const struct drf_config *c)
{
	struct drf_problem p;
	struct drf_demand *d;
	struct drf_result res;

	if (drf_config_problem(c, &p, &d) < 0 || drf_allocate(&p, c->policy, &res) < 0)
		abort();
	for (int r = 0; r < DRF_NRES; r++) {
		double sum = 0;

		for (size_t i = 0; i < res.n; i++) {
			double a = res.shares[i].alloc[r];

			if (!(a >= 0) || isinf(a))
				abort();
			sum += a;
		}
		/* Within the capacity, but for the rounding of a sum. */
		if (p.capacity[r] > 0 && sum > p.capacity[r] * (1 + 1e-9) + 1e-9)
			abort();
	}
	drf_result_free(&res);
	free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t main_len = nul ? (size_t)(nul - data) : size;
	struct drf_config c;
	char err[1024];

	if (!dir[0])
		setup();
	write_bytes(path, data, main_len);
	if (nul)
		write_bytes(tpath, nul + 1, size - main_len - 1);
	else
		unlink(tpath);
	/* The same bytes as a fleet file (drfctl fleet): an error, or servers whose sum is the pool. */
	{
		struct drf_fleet f;

		if (drf_fleet_load(path, &f, err, sizeof(err)) < 0) {
			check_error(err);
		} else {
			double pool[DRF_NRES] = { 0 };

			if (f.n_servers == 0)
				abort();
			for (size_t s = 0; s < f.n_servers; s++) {
				if (f.servers[s].count < 1)
					abort();
				for (int r = 0; r < DRF_NRES; r++)
					pool[r] += f.servers[s].capacity[r] * (double)f.servers[s].count;
			}
			for (int r = 0; r < DRF_NRES; r++)
				if (pool[r] != f.cfg.capacity[r])
					abort();
			drf_fleet_free(&f);
		}
	}
	if (drf_config_load(path, &host, &c, err, sizeof(err)) < 0) {
		check_error(err);
		return 0;
	}
	check_config(&c);
	drf_config_free(&c);
	return 0;
}
