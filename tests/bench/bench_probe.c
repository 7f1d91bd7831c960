// SPDX-License-Identifier: MIT
/*
 * Holds drfd's usage probes attached for tests/bench/probe_bench.sh: loads and
 * attaches them (pinned in PIN_DIR), points them at the cgroup-root ROOT of
 * level LEVEL with one tenant TENANT (a cgroup directory below it), prints
 * "ready", and waits for standard input to close. Then it prints each
 * program's BPF run-time statistics (kernel.bpf_stats_enabled must be 1) and
 * the tenant's counters, and detaches the probes. With --empty, the same for
 * the yardstick (yardstick.bpf.c: programs that do nothing, on the probes'
 * hot tracepoints) instead of the probes; the other arguments are not used.
 *   bench_probe [--empty] PIN_DIR ROOT LEVEL TENANT
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "probe.skel.h"
#include "probebpf.h"
#include "yardstick.skel.h"

static int ino(const char *path, uint64_t *ret)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	*ret = (uint64_t)st.st_ino;
	return 0;
}

/* Waits for standard input to close. */
static void hold(void)
{
	int c;

	puts("ready");
	fflush(stdout);
	while ((c = getchar()) != EOF)
		;
}

/* Each program's BPF run-time statistics. */
static void print_stats(struct bpf_object *obj)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);

		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0)
			printf("prog %s run_cnt %llu run_time_ns %llu\n", bpf_program__name(prog),
			       (unsigned long long)info.run_cnt, (unsigned long long)info.run_time_ns);
	}
}

static int yardstick(void)
{
	struct yardstick_bpf *s = yardstick_bpf__open_and_load();
	int r = s ? yardstick_bpf__attach(s) : -errno;

	if (!s || r < 0) {
		fprintf(stderr, "bench_probe: cannot attach the yardstick: %s\n", strerror(-r));
		yardstick_bpf__destroy(s);
		return 1;
	}
	hold();
	print_stats(s->obj);
	yardstick_bpf__destroy(s);
	return 0;
}

int main(int argc, char **argv)
{
	struct drf_probebpf b = { 0 };
	struct drf_probe_cfg cfg = { 0 };
	uint64_t tenant, root_id, *keys = NULL;
	struct drf_probe_cpu *cpu = NULL;
	struct drf_probe_io *io = NULL;
	size_t n = 0;
	bool adopted;
	int r;

	if (argc == 6 && strcmp(argv[1], "--empty") == 0)
		return yardstick();
	if (argc != 5) {
		fputs("usage: bench_probe [--empty] PIN_DIR ROOT LEVEL TENANT\n", stderr);
		return 64;
	}
	cfg.root_level = (uint32_t)atoi(argv[3]);
	if (ino(argv[2], &root_id) < 0 || ino(argv[4], &tenant) < 0) {
		perror("stat");
		return 1;
	}
	cfg.root_id = root_id;
	r = drf_probe_real_ops.attach(&b, argv[1], &adopted);
	if (r == 0)
		r = drf_probe_real_ops.configure(&b, &cfg);
	if (r == 0)
		r = drf_probe_real_ops.add(&b, tenant);
	if (r < 0 || adopted) {
		fprintf(stderr, "bench_probe: cannot attach the probes: %s\n",
			adopted ? "pins of another run are in the way" : strerror(-r));
		drf_probe_real_ops.reset(&b, argv[1]);
		return 1;
	}
	hold();
	print_stats(b.skel->obj);
	if (drf_probe_real_ops.read(&b, &keys, &cpu, &io, &n) == 0 && n == 1)
		printf("tenant oncpu_ns %llu runq_count %llu\n", (unsigned long long)cpu[0].oncpu_ns,
		       (unsigned long long)cpu[0].runq_count);
	free(keys);
	free(cpu);
	free(io);
	r = drf_probe_real_ops.reset(&b, argv[1]);
	return r < 0 ? 1 : 0;
}
