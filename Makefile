# drfd: Dominant Resource Fairness for one Linux host.
#
#   make                      build drfd and drfctl into .output/
#   make demo                 drfd enforcing the example tenants (in a VM if need be)
#   make check                build and run every test
#   make check-vm             the real-kernel tests, in a QEMU VM
#   make check-net            network shaping with iperf3 between network namespaces
#   make check-all            check with gcc and clang, ASan and UBSan, shellcheck, check-vm
#   make bench                allocation benchmarks (tests/bench/)
#   make fuzz                 the libFuzzer targets (tests/fuzz/), FUZZ_SECONDS each
#   make install PREFIX=/usr/local DESTDIR=   (SYSCONFDIR=/etc)
#   make deb                  the Debian package, in .output/deb/
#   make lintian              the package checked by lintian
#   make SANITIZER=address|undefined|address+undefined check
#
# Each compiler/sanitizer variant builds into its own folder under .output/.

# The first goal of this file is `all`, whatever rules the layers below make.
.DEFAULT_GOAL := all

CC ?= cc
SANITIZER ?=
PREFIX ?= /usr/local
DESTDIR ?=
SBINDIR ?= $(PREFIX)/sbin
LIBEXECDIR ?= $(PREFIX)/libexec
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/drfd
SYSCONFDIR ?= /etc
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# Debian keeps units in /lib/systemd/system; /usr/local/lib/systemd/system is
# on systemd's search path too.
UNITDIR ?= $(if $(filter /usr,$(PREFIX)),/lib/systemd/system,$(PREFIX)/lib/systemd/system)

VARIANT := $(notdir $(CC))$(if $(SANITIZER),-$(SANITIZER))
BUILD ?= .output/$(VARIANT)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wno-format-nonliteral -Wvla
CFLAGS ?= -O2 -g
# The BPF objects and skeletons are the same for every variant.
BPF_OUT := .output/bpf
# The project's own flags go in DRF_CFLAGS, so that `make CFLAGS=...` changes
# optimization and debug flags without dropping what the build needs. The
# include paths are not here: each folder gets its own (the layers below).
VERSION := 0.3.0
# The CPUs a build may use (check-all's builds; the tests run one at a time).
NPROC := $(shell nproc 2>/dev/null || echo 1)
DRF_CFLAGS := -std=c11 -D_GNU_SOURCE -pthread $(WARN) -MMD -MP \
	-DDRF_VERSION='"$(VERSION)"' -DDRF_SYSCONFDIR='"$(SYSCONFDIR)"'
LDFLAGS ?=
LDLIBS := -linih -lcgroup -lsystemd -lbpf -lnl-route-3 -lnl-3 -ljson-c -lcurl -lglpk -lm -pthread
NL_CFLAGS := $(shell pkg-config --cflags libnl-route-3.0)
# drfctl top draws with ncurses (libncurses-dev); only top.c includes it.
NCURSES_CFLAGS := $(shell pkg-config --cflags ncursesw 2>/dev/null)
NCURSES_LIBS := $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw -ltinfo)
# The metrics endpoint (metrics-listen) serves HTTP with libmicrohttpd
# (libmicrohttpd-dev); only agent/daemon/httpd.c includes it, and only what
# links the daemon layer links it (drfd, the tests; not drfctl).
MHD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)
# It gzips its answer for a scraper that asks (zlib, zlib1g-dev).
MHD_LIBS += $(shell pkg-config --libs zlib 2>/dev/null || echo -lz)

ifeq ($(SANITIZER),address)
DRF_CFLAGS += -fsanitize=address -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address
else ifeq ($(SANITIZER),undefined)
DRF_CFLAGS += -fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS += -fsanitize=undefined
else ifeq ($(SANITIZER),address+undefined)
DRF_CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
else ifeq ($(SANITIZER),thread)
DRF_CFLAGS += -fsanitize=thread -fno-omit-frame-pointer
LDFLAGS += -fsanitize=thread
else ifeq ($(SANITIZER),fuzzer)
# libFuzzer's coverage with ASan and UBSan, for the targets in tests/fuzz (make fuzz).
DRF_CFLAGS += -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
else ifneq ($(SANITIZER),)
$(error SANITIZER must be address, undefined, address+undefined, thread or fuzzer, not '$(SANITIZER)')
endif

# The layers. One static library per folder, each compiled with the include
# paths of the folders it may use and nothing else, and linked against only
# those: an include of a higher folder does not compile, and a call into one
# does not link (`make layers` links each library whole against the ones below
# it). From the bottom up:
#   lib       primitives, the logger, JSON, host facts       libc, json-c
#   cgroupfs  cgroup v2 files under one root                 lib
#   bpf       BPF programs, skeleton loaders, pins           lib, libbpf
#   core      pure maths: resources, DRF, DRFH, demand, use  lib, GLPK
#   config    INI + tenants.d -> struct drf_config           core
#   plan      the planner: allocation, knobs, HTB plan       config
#   enforce   the cgroup reconciler, the host checks         plan, cgroupfs
#   net       the network shaper: tc over libnl, BPF         plan, cgroupfs, bpf
#   observe   usage sampling, status, metrics, history       enforce, net
#   tasks     the task queue's store and supervisors         plan, cgroupfs
#   fleet     fleet mode: the etcd v3 client (libcurl), the    plan
#             nodes, the planner and its fence
#   daemon    drfd: the loop, reload, tick, socket, state    everything above
#   cli       drfctl (never the daemon)                      observe, tasks, fleet
# (each folder may also use what the folders it names may use).
LAYERS := lib cgroupfs bpf core config plan enforce net observe tasks fleet daemon cli
dir_lib := agent/lib
dir_cgroupfs := cgroupfs
dir_bpf := bpf
dir_core := agent/core
dir_config := agent/config
dir_plan := agent/plan
dir_enforce := agent/enforce
dir_net := agent/net
dir_observe := agent/observe
dir_tasks := agent/tasks
dir_fleet := agent/fleet
dir_daemon := agent/daemon
dir_cli := agent/cli
uses_lib :=
uses_cgroupfs := lib
uses_bpf := lib
uses_core := lib
uses_config := core lib
uses_plan := config core lib
uses_enforce := plan config core cgroupfs lib
uses_net := plan config core cgroupfs bpf lib
uses_observe := enforce net plan config core cgroupfs bpf lib
uses_tasks := plan config core cgroupfs lib
uses_fleet := plan config core lib
uses_daemon := fleet tasks observe enforce net plan config core cgroupfs bpf lib
uses_cli := fleet tasks observe enforce net plan config core cgroupfs bpf lib
# A layer's sources: its folder's, but for the programs' mains and the BPF side.
srcs_of = $(filter-out %.bpf.c agent/daemon/drfd.c,$(wildcard $(dir_$(1))/*.c))
lib_of = $(if $(call srcs_of,$(1)),$(BUILD)/libdrf-$(1).a)
# Higher first, as the linker wants them.
libs_of = $(foreach l,$(1),$(call lib_of,$(l)))
$(foreach l,$(LAYERS),$(eval $(BUILD)/$(dir_$(l))/%.o: LAYER_INC := \
	$(foreach u,$(l) $(uses_$(l)),-I$(dir_$(u)))))
$(BUILD)/bpf/%.o: LAYER_INC += -I$(BPF_OUT)
$(BUILD)/agent/net/%.o $(BUILD)/agent/observe/%.o $(BUILD)/agent/daemon/%.o \
	$(BUILD)/agent/cli/%.o: LAYER_INC += $(NL_CFLAGS)
$(foreach l,$(filter-out cli,$(LAYERS)),$(eval $(call lib_of,$(l)): \
	$(patsubst %.c,$(BUILD)/%.o,$(call srcs_of,$(l)))))
# Tests and benchmarks see every folder, and the fakes in tests/lib.
ALL_INC := $(foreach l,$(LAYERS),-I$(dir_$(l))) -I$(BPF_OUT) -Itests/lib $(NL_CFLAGS)
$(BUILD)/tests/%.o: LAYER_INC := $(ALL_INC)
DAEMON_LIBS := $(call libs_of,daemon $(uses_daemon))
CLI_LIBS := $(call libs_of,$(uses_cli))
# The primitives that do no I/O (the pure core may use these and no others).
LIB_PURE := text hash vec index keyfile fault

BINS := $(BUILD)/drfctl $(BUILD)/drfd
# Man pages, written in scdoc (deploy/man/), the same for every variant.
MANS := $(patsubst deploy/man/%.scd,.output/man/%,$(wildcard deploy/man/*.scd))
DEB_DIR := .output/deb

UNIT_TESTS := test_units test_alloc test_fairfam test_props test_drfh test_hdrf test_config test_fuzz_config \
	test_cgroupfs \
	test_reload_mem test_shaper test_expo test_metrics test_use \
	test_demand test_history test_taskq test_tasks test_daemon test_httpd test_statedir test_socket \
	test_lib test_slice test_etcd test_fleet
UNIT_BINS := $(UNIT_TESTS:%=$(BUILD)/tests/%)
BENCH_BIN := $(BUILD)/tests/bench_alloc
BENCH_FLEET_BIN := $(BUILD)/tests/bench_fleet
BENCH_HDRF_BIN := $(BUILD)/tests/bench_hdrf
BENCH_TICK_BIN := $(BUILD)/tests/bench_tick
BENCH_PROBE_BIN := $(BUILD)/tests/bench_probe
BENCH_STATUS_BIN := $(BUILD)/tests/bench_status
BENCH_BURST_BIN := $(BUILD)/tests/bench_burst
# Shared by tests and benchmarks: the fake cgroup tree, the fake tc kernel, drfd over them;
# the fake etcd.
TESTLIB_OBJS := $(BUILD)/tests/lib/fakecg.o $(BUILD)/tests/lib/faketc.o \
	$(BUILD)/tests/lib/fakedrfd.o $(BUILD)/tests/lib/fakeetcd.o

.PHONY: all layers demo check check-build check-unit check-cli check-vm check-net check-all \
	check-all-gcc check-all-clang check-build-deb check-tsan valgrind bench clean shellcheck install \
	deb lintian fuzz

all: $(BINS) $(MANS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(DRF_CFLAGS) $(LAYER_INC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# BPF: .bpf.c -> .bpf.o (clang, CO-RE against the pinned bpf/vmlinux.h) -> skeleton.
BPF_ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(shell uname -m)))
BPF_CLANG ?= clang
define BPF_COMPILE
@mkdir -p $(dir $@)
$(BPF_CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Ibpf -Wall -Werror -c $< -o $@
endef
$(BPF_OUT)/%.bpf.o: bpf/%.bpf.c bpf/%.h bpf/vmlinux.h
	$(BPF_COMPILE)
$(BPF_OUT)/%.skel.h: $(BPF_OUT)/%.bpf.o
	bpftool gen skeleton $< name $(subst .,_,$*)_bpf >$@.tmp && mv $@.tmp $@
$(BUILD)/bpf/netbpf.o: $(BPF_OUT)/net.skel.h
$(BUILD)/bpf/probebpf.o: $(BPF_OUT)/probe.skel.h

.output/man/%: deploy/man/%.scd
	@mkdir -p $(dir $@)
	scdoc <$< >$@.tmp && mv $@.tmp $@

# Made afresh, so that an object whose source is gone leaves with it.
$(BUILD)/libdrf-%.a:
	rm -f $@
	$(AR) rcs $@ $^

# Each layer's library linked whole against the layers it may use, and
# nothing else of drfd's: a call into a layer above it is an undefined
# reference here, and the build stops.
$(foreach l,$(LAYERS),$(eval $(BUILD)/layers/$(l): $(call libs_of,$(uses_$(l)))))
$(BUILD)/layers/%: $(BUILD)/libdrf-%.a $(BUILD)/tests/lib/layer_main.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(BUILD)/tests/lib/layer_main.o -Wl,--whole-archive $< \
		-Wl,--no-whole-archive $(call libs_of,$(uses_$*)) $(LDLIBS) \
		$(if $(filter daemon,$*),$(MHD_LIBS))
layers: $(foreach l,$(filter-out cli,$(LAYERS)),$(if $(call lib_of,$(l)),$(BUILD)/layers/$(l)))

DRFCTL_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard agent/cli/*.c))
$(BUILD)/agent/cli/top.o: LAYER_INC += $(NCURSES_CFLAGS)
$(BUILD)/agent/daemon/httpd.o: LAYER_INC += $(MHD_CFLAGS)
# drfctl links no daemon code: what it asks of drfd goes through the socket.
$(BUILD)/drfctl: $(DRFCTL_OBJS) $(CLI_LIBS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(NCURSES_LIBS)

$(BUILD)/drfd: $(BUILD)/agent/daemon/drfd.o $(DAEMON_LIBS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(MHD_LIBS)

# Tests of the pure core link with the core, the pure primitives, GLPK (the
# linear programs of DRFH) and -lm alone: a call to anything that does I/O
# would not link.
CORE_LDLIBS := -lglpk -lm
CORE_TESTS := test_units test_alloc test_fairfam test_taskq test_drfh test_hdrf
PURE_LIB_OBJS := $(patsubst %,$(BUILD)/agent/lib/%.o,$(LIB_PURE))
# The exposition parser of drfctl top is pure too: it links with the pure primitives alone.
$(BUILD)/tests/test_expo: $(BUILD)/tests/unit/test_expo.o $(BUILD)/agent/cli/expo.o \
		$(PURE_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lm -lcmocka

$(CORE_TESTS:%=$(BUILD)/tests/%): $(BUILD)/tests/%: $(BUILD)/tests/unit/%.o \
		$(BUILD)/tests/unit/testlib.o $(BUILD)/libdrf-core.a $(PURE_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CORE_LDLIBS) -lcmocka

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(BUILD)/tests/unit/testlib.o $(TESTLIB_OBJS) \
		$(DAEMON_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(MHD_LIBS) -lcmocka

$(BENCH_TICK_BIN): $(BUILD)/tests/bench/bench_tick.o $(TESTLIB_OBJS) $(DAEMON_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(MHD_LIBS)

$(BENCH_STATUS_BIN): $(BUILD)/tests/bench/bench_status.o $(TESTLIB_OBJS) $(DAEMON_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(MHD_LIBS)

$(BENCH_BURST_BIN): $(BUILD)/tests/bench/bench_burst.o $(TESTLIB_OBJS) $(DAEMON_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(MHD_LIBS)

$(BENCH_PROBE_BIN): $(BUILD)/tests/bench/bench_probe.o $(call libs_of,bpf lib)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/tests/bench/bench_probe.o: $(BPF_OUT)/probe.skel.h $(BPF_OUT)/yardstick.skel.h
# The probes' yardstick: programs that do nothing, on the same tracepoints.
$(BPF_OUT)/yardstick.bpf.o: tests/bench/yardstick.bpf.c bpf/vmlinux.h
	$(BPF_COMPILE)

$(BENCH_BIN): $(BUILD)/tests/bench/bench_alloc.o $(BUILD)/libdrf-core.a $(PURE_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CORE_LDLIBS)

$(BENCH_HDRF_BIN): $(BUILD)/tests/bench/bench_hdrf.o $(BUILD)/libdrf-core.a $(PURE_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CORE_LDLIBS)

$(BENCH_FLEET_BIN): $(BUILD)/tests/bench/bench_fleet.o $(BUILD)/libdrf-core.a $(PURE_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CORE_LDLIBS)

# Coverage-guided fuzzing (libFuzzer, clang), each target for FUZZ_SECONDS from
# its seed corpus in tests/fuzz/corpus/NAME (fuzz_NAME); what it finds is kept in
# .output/fuzz/TARGET/ (the seeds are not changed), a crash fails the run and
# leaves its input there as crash-*.
FUZZ_TARGETS := fuzz_config fuzz_proto
FUZZ_SECONDS ?= 20
FUZZ_BUILD := .output/clang-fuzzer
$(BUILD)/tests/fuzz_%: $(BUILD)/tests/fuzz/fuzz_%.o $(TESTLIB_OBJS) $(DAEMON_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS) $(MHD_LIBS)

fuzz:
	$(MAKE) -j$(NPROC) CC=clang SANITIZER=fuzzer $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/tests/%)
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p .output/fuzz/$$t; \
		case $$t in \
		fuzz_proto) opts="-max_len=70000 -timeout=10" ;; \
		*) opts= ;; \
		esac; \
		echo "== $$t for $(FUZZ_SECONDS) s (clang -fsanitize=fuzzer,address,undefined)"; \
		$(FUZZ_BUILD)/tests/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$opts \
			-artifact_prefix=.output/fuzz/$$t/ .output/fuzz/$$t tests/fuzz/corpus/$${t#fuzz_} \
			2>.output/fuzz/$$t.log || { tail -n 60 .output/fuzz/$$t.log; exit 1; }; \
		grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::new_units_added)' \
			.output/fuzz/$$t.log; \
	done

# The README's first command: drfd enforcing the example tenants (in a VM on
# hosts without cgroup v2).
# The build's commands go to a log: the demo's first screen is the plan.
demo:
	@mkdir -p .output
	@echo "== building drfd and drfctl (the compiler's output: .output/demo-build.log)"
	@$(MAKE) --no-print-directory $(BINS) >.output/demo-build.log 2>&1 || \
		{ tail -n 30 .output/demo-build.log; exit 1; }
	@deploy/demo.sh $(BUILD)

# Built with as many jobs as make was given (`make -j2 check`, as the package
# build's dh_auto_test runs it), the tests then one at a time: some measure time.
check: check-build
	@$(MAKE) --no-print-directory check-unit
	@$(MAKE) --no-print-directory check-cli

# What check runs, built alone: check-all builds it with every CPU first.
check-build: $(BINS) $(UNIT_BINS) layers

# check-build as the Debian package builds it: with dpkg-buildflags' CFLAGS,
# CPPFLAGS and LDFLAGS (-O2, -D_FORTIFY_SOURCE=2, -fstack-protector-strong,
# -Werror=format-security, -z relro -z now), under the DEB_BUILD_MAINT_OPTIONS
# debian/rules exports, and the project's own -Wall -Wextra -Werror; in its own
# folder. Fortification has gcc see what it does not at -O2 alone (-Wrestrict
# on a snprintf's source within its destination's object, in test_fleet once):
# check-all builds it (compiling and linking; its tests are check's), so that
# CI fails where the package's build would fail to compile.
DEB_MAINT_OPTIONS := $(shell sed -n 's/^export DEB_BUILD_MAINT_OPTIONS *= *//p' debian/rules)
check-build-deb:
	@set -e; export DEB_BUILD_MAINT_OPTIONS='$(DEB_MAINT_OPTIONS)'; \
	$(MAKE) check-build CC=gcc BUILD=.output/gcc-debflags \
		CFLAGS="$$(dpkg-buildflags --get CFLAGS)" CPPFLAGS="$$(dpkg-buildflags --get CPPFLAGS)" \
		LDFLAGS="$$(dpkg-buildflags --get LDFLAGS)"

# Under a sanitizer the property tests take 2,000 random instances per policy,
# not 10,000: what a sanitizer finds is in the code every instance runs, and
# the full count runs in the plain build (about 20 s, the convex policies' most).
#
# TESTS=test_alloc (names, space-separated) runs those binaries alone, FILTER
# the tests in them whose names match (cmocka's pattern: * and ?), e.g.
#   make check-unit TESTS=test_tasks FILTER='test_output_*'
# A TESTS name that is no unit test, or a FILTER that matches no test, fails.
TESTS ?=
FILTER ?=
UNIT_RUN := $(if $(TESTS),$(TESTS:%=$(BUILD)/tests/%),$(UNIT_BINS))
check-unit: $(filter $(UNIT_BINS),$(UNIT_RUN))
	@set -e; matched=0; $(if $(filter-out $(UNIT_BINS),$(UNIT_RUN)),\
		echo "check-unit: no unit test named $(notdir $(filter-out $(UNIT_BINS),$(UNIT_RUN))) (known: $(UNIT_TESTS))" >&2; exit 2;) \
	for t in $(UNIT_RUN); do \
		echo "== $$t$(if $(FILTER), (only the tests matching '$(FILTER)'))"; \
		$(if $(FILTER),\
		if ( cd tests/unit && $(if $(SANITIZER),DRF_PROPS_N=2000) DRF_TEST_FILTER='$(FILTER)' \
			../../$$t ) >$$t.run 2>&1; then cat $$t.run; else cat $$t.run; exit 1; fi; \
		grep -q '^\[==========\] 0 test(s) run' $$t.run || matched=1;,\
		( cd tests/unit && $(if $(SANITIZER),DRF_PROPS_N=2000) ../../$$t );) \
	done$(if $(FILTER),; [ "$$matched" = 1 ] || \
		{ echo "check-unit: no test of $(notdir $(UNIT_RUN)) matches '$(FILTER)'" >&2; exit 2; })

# Real-kernel tests in a QEMU VM (tests/vm/run.sh: Debian's kernel under TCG).
# t_systemd installs the Debian package in the VM: it is built first.
VM_TESTS ?=
check-vm: $(BINS) deb
	@echo "== tests/vm/run.sh"
	@tests/vm/run.sh $(BUILD) $(VM_TESTS)

check-cli: $(BINS) layers $(BUILD)/tests/test_etcd
	@echo "== tests/cli/test_plan.sh"
	@DRFCTL=$(abspath $(BUILD)/drfctl) tests/cli/test_plan.sh
	@echo "== tests/cli/test_drfd.sh"
	@DRFD=$(abspath $(BUILD)/drfd) tests/cli/test_drfd.sh
	@echo "== tests/cli/test_drfctl.sh"
	@DRFCTL=$(abspath $(BUILD)/drfctl) DRFD=$(abspath $(BUILD)/drfd) tests/cli/test_drfctl.sh
	@echo "== tests/cli/test_fleet.sh"
	@DRFCTL=$(abspath $(BUILD)/drfctl) tests/cli/test_fleet.sh
	@echo "== tests/cli/test_recommend.sh"
	@DRFCTL=$(abspath $(BUILD)/drfctl) tests/cli/test_recommend.sh
	@echo "== tests/cli/test_completion.sh"
	@DRFCTL=$(abspath $(BUILD)/drfctl) tests/cli/test_completion.sh
	@echo "== tests/cli/test_docs.sh"
	@DRFCTL=$(abspath $(BUILD)/drfctl) tests/cli/test_docs.sh
	@echo "== tests/cli/test_install.sh"
	@BUILD=$(BUILD) MAKE=$(MAKE) tests/cli/test_install.sh
	@echo "== tests/cli/test_layers.sh"
	@BUILD=$(BUILD) MAKE=$(MAKE) CC=$(CC) tests/cli/test_layers.sh
	@echo "== tests/cli/test_metrics.sh"
	@DRFD=$(abspath $(BUILD)/drfd) DRFCTL=$(abspath $(BUILD)/drfctl) tests/cli/test_metrics.sh
	@echo "== tests/cli/test_etcd.sh"
	@TEST_ETCD=$(abspath $(BUILD)/tests/test_etcd) DRFCTL=$(abspath $(BUILD)/drfctl) tests/cli/test_etcd.sh
	@echo "== tests/cli/test_fleet_etcd.sh"
	@DRFCTL=$(abspath $(BUILD)/drfctl) tests/cli/test_fleet_etcd.sh
	@echo "== tests/cli/test_etcd_roles.sh"
	@tests/cli/test_etcd_roles.sh

# Network shaping with real traffic (iperf3) between network namespaces on this
# host's kernel; the VM runs the same script (tests/vm/t_net.sh).
check-net: $(BINS)
	@echo "== tests/net/net.sh"
	@DRFD=$(abspath $(BUILD)/drfd) DRFCTL=$(abspath $(BUILD)/drfctl) tests/net/net.sh 1

# The memory-tightening worker thread under ThreadSanitizer.
check-tsan:
	$(MAKE) -j$(NPROC) CC=clang SANITIZER=thread .output/clang-thread/tests/test_cgroupfs
	@echo "== test_cgroupfs under ThreadSanitizer"
	cd tests/unit && TSAN_OPTIONS=halt_on_error=1 ../../.output/clang-thread/tests/test_cgroupfs

# Leaks and invalid accesses in the reconciler, reloads, the config parser, the etcd client and
# the fleet's nodes over it.
# One target per test, so that `make -j2 valgrind` (as check-all runs it) runs
# them side by side; each one's output is printed whole when it ends.
VALGRIND_TESTS := test_cgroupfs test_reload_mem test_config test_etcd test_fleet
valgrind: $(VALGRIND_TESTS:%=valgrind-%)
valgrind-%: $(BUILD)/tests/%
	@mkdir -p $(BUILD)/valgrind
	@( cd tests/unit && DRF_RELOADS=200 DRF_RSS_CHECK=0 valgrind -q --leak-check=full \
		--errors-for-leak-kinds=definite,indirect --error-exitcode=99 ../../$< ) \
		>$(BUILD)/valgrind/$*.log 2>&1; rc=$$?; \
	echo "== valgrind $< (exit $$rc)"; \
	if [ $$rc -ne 0 ]; then cat $(BUILD)/valgrind/$*.log; exit $$rc; fi; \
	tail -n 2 $(BUILD)/valgrind/$*.log

# Every test: the unit and CLI tests built by gcc, and again by clang with
# AddressSanitizer and UndefinedBehaviorSanitizer; the rest once each. The gcc
# build first, with every CPU; then two queues side by side: gcc's tests, and
# clang's build and tests (many tests wait on timers and sockets, which leaves
# CPU for the other build; the tests within a queue run one at a time;
# -Orecurse prints each step whole, as it ends); then the VM tests, which take
# both CPUs themselves. Each step's start is stamped (STAMP), so that a CI log
# tells where the time went.
STAMP = @date -u +'=== %T $@: $(1)'
check-all:
	$(call STAMP,gcc build)
	$(MAKE) -j$(NPROC) check-build CC=gcc
	$(call STAMP,two queues)
	$(MAKE) -j2 -Orecurse check-all-gcc check-all-clang
	$(call STAMP,vm)
	$(MAKE) check-vm CC=gcc
	$(call STAMP,done)

check-all-gcc:
	$(call STAMP,tests)
	$(MAKE) check CC=gcc
	$(call STAMP,valgrind)
	$(MAKE) valgrind CC=gcc
	$(call STAMP,shellcheck)
	$(MAKE) shellcheck
	$(call STAMP,lintian)
	$(MAKE) lintian
	$(call STAMP,fuzz)
	$(MAKE) fuzz
	$(call STAMP,debian flags)
	$(MAKE) -j$(NPROC) check-build-deb
	$(call STAMP,done)

# clang's queue builds its tree first: the fuzz targets (their own build and
# 40 s) run in gcc's, which is otherwise done two minutes sooner.
check-all-clang:
	$(MAKE) -j$(NPROC) check-build CC=clang SANITIZER=address+undefined
	$(call STAMP,tests)
	$(MAKE) check CC=clang SANITIZER=address+undefined
	$(call STAMP,tsan)
	$(MAKE) check-tsan
	$(call STAMP,done)

shellcheck:
	shellcheck -x $(wildcard deploy/*.sh deploy/examples/*.sh tests/*/*.sh) tests/vm/init .ci/run \
		deploy/systemd/drfd-hold
	shellcheck -s bash deploy/bash-completion/drfctl deploy/bash-completion/drfd

bench: $(BENCH_BIN) $(BENCH_FLEET_BIN) $(BENCH_HDRF_BIN) $(BENCH_TICK_BIN) $(BENCH_PROBE_BIN) \
		$(BENCH_STATUS_BIN) $(BENCH_BURST_BIN)
	@echo "command: make bench ($(BENCH_BIN), CC=$(CC) CFLAGS='$(DRF_CFLAGS) $(CFLAGS)')"
	$(BENCH_BIN)
	@echo "command: make bench ($(BENCH_FLEET_BIN))"
	$(BENCH_FLEET_BIN)
	@echo "command: make bench ($(BENCH_FLEET_BIN) 1 issue29 100 10000 1000: issue 29's fleets; the last, every task its own shape, 1,000 tenants: 10,000 take minutes)"
	$(BENCH_FLEET_BIN) 1 issue29 100 10000 1000
	@echo "command: make bench ($(BENCH_HDRF_BIN))"
	$(BENCH_HDRF_BIN)
	@echo "command: make bench ($(BENCH_TICK_BIN) 1000 declared|observed; tests/bench/tick_syscalls.sh)"
	$(BENCH_TICK_BIN) 1000 declared
	$(BENCH_TICK_BIN) 1000 observed
	tests/bench/tick_syscalls.sh $(BENCH_TICK_BIN) 1000 10
	$(BENCH_TICK_BIN) 1000 reload 101
	$(BENCH_TICK_BIN) 10000 reload 21
	@echo "command: make bench ($(BENCH_TICK_BIN) 1000 loop 11)"
	$(BENCH_TICK_BIN) 1000 loop 11
	@DRFD=$(abspath $(BUILD)/drfd) DRFCTL=$(abspath $(BUILD)/drfctl) tests/bench/net_bench.sh 5 4
	@echo "command: make bench ($(BENCH_STATUS_BIN) 1000)"
	$(BENCH_STATUS_BIN) 1000
	@echo "command: make bench ($(BENCH_BURST_BIN) 10000 3)"
	$(BENCH_BURST_BIN) 10000 3
	@echo "command: make bench (BENCH_PROBE=$(BENCH_PROBE_BIN) tests/bench/probe_bench.sh 7 200000)"
	@BENCH_PROBE=$(abspath $(BENCH_PROBE_BIN)) tests/bench/probe_bench.sh 7 200000

# Per the FHS. Files in SYSCONFDIR are never overwritten: an existing config is
# the administrator's.
install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(SYSCONFDIR)/drfd/tenants.d $(DESTDIR)$(DOCDIR)/examples/tenants.d \
		$(DESTDIR)$(DOCDIR)/examples/ten-tenants $(DESTDIR)$(LIBEXECDIR)/drfd
	install -m 0755 $(BUILD)/drfd $(DESTDIR)$(SBINDIR)/drfd
	install -m 0755 deploy/systemd/drfd-hold $(DESTDIR)$(LIBEXECDIR)/drfd/drfd-hold
	install -m 0755 $(BUILD)/drfctl $(DESTDIR)$(BINDIR)/drfctl
	install -m 0644 $(filter %.5,$(MANS)) $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 $(filter %.8,$(MANS)) $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 deploy/bash-completion/drfctl $(DESTDIR)$(BASHCOMPDIR)/drfctl
	install -m 0644 deploy/bash-completion/drfd $(DESTDIR)$(BASHCOMPDIR)/drfd
	for u in deploy/systemd/*.service; do \
		sed -e 's|/usr/sbin/drfd|$(SBINDIR)/drfd|; s|/usr/libexec/drfd|$(LIBEXECDIR)/drfd|' \
			-e 's|/usr/bin/drfctl|$(BINDIR)/drfctl|' \
			$$u >$(DESTDIR)$(UNITDIR)/$${u##*/} && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$${u##*/} || exit 1; \
	done
	@set -e; for f in drfd.conf tenants.d/example.conf; do \
		dst=$(DESTDIR)$(SYSCONFDIR)/drfd/$$f; \
		if [ -e "$$dst" ]; then echo "install: keeping $$dst, which exists"; \
		else install -m 0644 deploy/etc/$$f "$$dst"; fi; \
	done
	install -m 0644 deploy/examples/drfd.conf deploy/examples/fleet.conf \
		$(DESTDIR)$(DOCDIR)/examples/
	install -m 0755 deploy/examples/etcd-roles.sh $(DESTDIR)$(DOCDIR)/examples/
	install -m 0644 deploy/examples/tenants.d/*.conf $(DESTDIR)$(DOCDIR)/examples/tenants.d/
	install -m 0644 deploy/examples/ten-tenants/drfd.conf $(DESTDIR)$(DOCDIR)/examples/ten-tenants/
	install -d $(DESTDIR)$(DOCDIR)/examples/lottery
	install -m 0644 deploy/examples/lottery/drfd.conf $(DESTDIR)$(DOCDIR)/examples/lottery/
	install -m 0644 docs/security.md $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(DATADIR)/drfd/prometheus
	install -m 0644 deploy/prometheus/drfd-alerts.yml $(DESTDIR)$(DATADIR)/drfd/prometheus/

# The Debian package, built from a copy of the tree so that its outputs stay
# in .output/deb (dpkg-buildpackage writes the .deb beside the source). Its
# tests are the ones `make check-all` runs; the package build skips them.
# Built again only when a file it is made of changed: check-all needs it twice
# (lintian, then the VM's t_systemd).
DEB_FILE := $(DEB_DIR)/drfd_$(VERSION)_$(shell dpkg --print-architecture 2>/dev/null).deb
DEB_INPUTS := Makefile README.md $(shell find agent bpf cgroupfs deploy debian docs -type f 2>/dev/null)
deb: $(DEB_FILE)
$(DEB_FILE): $(DEB_INPUTS)
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/drfd-$(VERSION)
	tar -c --exclude=./.output --exclude=./.git . | tar -x -C $(DEB_DIR)/drfd-$(VERSION)
	cd $(DEB_DIR)/drfd-$(VERSION) && DEB_BUILD_OPTIONS="nocheck parallel=$(NPROC)" DEB_BUILD_PROFILES=nocheck dpkg-buildpackage -b -us -uc \
		>../build.log 2>&1 || { tail -n 40 ../build.log; rm -f $@; exit 1; }
	@ls $(DEB_DIR)/*.deb

# Errors and warnings fail; each override in debian/drfd.lintian-overrides
# says why it is there.
lintian: deb
	lintian --fail-on error,warning --display-info $(DEB_DIR)/drfd_$(VERSION)_*.changes

clean:
	rm -rf .output

-include $(wildcard $(BUILD)/agent/*/*.d $(BUILD)/cgroupfs/*.d $(BUILD)/tests/*/*.d $(BUILD)/bpf/*.d)
