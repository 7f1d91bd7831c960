# drfd: Dominant Resource Fairness for one Linux host.
#
#   make                      build drfd and drfctl into .output/
#   make demo                 drfd enforcing the example tenants (in a VM if need be)
#   make check                build and run every test
#   make check-vm             the real-kernel tests, in a QEMU VM
#   make check-all            check with gcc and clang, ASan and UBSan, shellcheck, check-vm
#   make bench                allocation benchmarks (tests/bench/)
#   make install PREFIX=/usr/local DESTDIR=
#   make SANITIZER=address|undefined check
#
# Each compiler/sanitizer variant builds into its own folder under .output/.

CC ?= cc
SANITIZER ?=
PREFIX ?= /usr/local
DESTDIR ?=

VARIANT := $(notdir $(CC))$(if $(SANITIZER),-$(SANITIZER))
BUILD ?= .output/$(VARIANT)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wno-format-nonliteral -Wvla
CFLAGS ?= -O2 -g
INCLUDES := -Iagent/core -Iagent/config -Iagent/daemon -Iagent/cli -Icgroupfs
# The project's own flags go in DRF_CFLAGS, so that `make CFLAGS=...` changes
# optimization and debug flags without dropping what the build needs.
VERSION := 0.3.0
DRF_CFLAGS := -std=c11 -D_GNU_SOURCE -pthread $(WARN) $(INCLUDES) -Itests/lib -MMD -MP \
	-DDRF_VERSION='"$(VERSION)"'
LDFLAGS ?=
LDLIBS := -linih -lcgroup -lsystemd -lm -pthread

ifeq ($(SANITIZER),address)
DRF_CFLAGS += -fsanitize=address -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address
else ifeq ($(SANITIZER),undefined)
DRF_CFLAGS += -fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS += -fsanitize=undefined
else ifeq ($(SANITIZER),thread)
DRF_CFLAGS += -fsanitize=thread -fno-omit-frame-pointer
LDFLAGS += -fsanitize=thread
else ifneq ($(SANITIZER),)
$(error SANITIZER must be address, undefined or thread, not '$(SANITIZER)')
endif

# The pure core (units, allocation, knob mapping): no I/O, linked with -lm only.
CORE_SRCS := agent/core/res.c agent/core/alloc.c agent/core/knobs.c
CORE_LIB := $(BUILD)/libdrfcore.a
# Everything else the two programs share.
LIB_SRCS := agent/config/config.c agent/config/desired.c agent/cli/plan.c \
	agent/daemon/reconcile.c agent/daemon/hostcheck.c agent/daemon/daemon.c \
	agent/daemon/status.c agent/daemon/lock.c agent/daemon/statefile.c agent/daemon/log.c \
	cgroupfs/cgroupfs.c
LIB := $(BUILD)/libdrf.a

BINS := $(BUILD)/drfctl $(BUILD)/drfd

UNIT_TESTS := test_units test_alloc test_props test_config test_fuzz_config test_cgroupfs \
	test_reload_mem
UNIT_BINS := $(UNIT_TESTS:%=$(BUILD)/tests/%)
BENCH_BIN := $(BUILD)/tests/bench_alloc
BENCH_TICK_BIN := $(BUILD)/tests/bench_tick
# Shared by tests and benchmarks: the fake cgroup tree.
TESTLIB_OBJS := $(BUILD)/tests/lib/fakecg.o

.PHONY: all demo check check-unit check-cli check-vm check-all check-tsan valgrind bench clean \
	shellcheck

all: $(BINS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(DRF_CFLAGS) $(CFLAGS) -c -o $@ $<

$(CORE_LIB): $(CORE_SRCS:%.c=$(BUILD)/%.o)
	$(AR) rcs $@ $^

$(LIB): $(LIB_SRCS:%.c=$(BUILD)/%.o)
	$(AR) rcs $@ $^

DRFCTL_SRCS := agent/cli/drfctl.c agent/cli/help.c agent/cli/status_cmd.c agent/cli/client.c
$(BUILD)/drfctl: $(DRFCTL_SRCS:%.c=$(BUILD)/%.o) $(LIB) $(CORE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/drfd: $(BUILD)/agent/daemon/drfd.o $(LIB) $(CORE_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Tests of the pure core link with -lm alone: that is what keeps it pure.
CORE_TESTS := test_units test_alloc test_props
$(CORE_TESTS:%=$(BUILD)/tests/%): $(BUILD)/tests/%: $(BUILD)/tests/unit/%.o \
		$(BUILD)/tests/unit/testlib.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lm -lcmocka

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(BUILD)/tests/unit/testlib.o $(TESTLIB_OBJS) \
		$(LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

$(BENCH_TICK_BIN): $(BUILD)/tests/bench/bench_tick.o $(TESTLIB_OBJS) $(LIB) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BENCH_BIN): $(BUILD)/tests/bench/bench_alloc.o $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lm

# The README's first command: drfd enforcing the example tenants (in a VM on
# hosts without cgroup v2).
demo: $(BINS)
	@deploy/demo.sh $(BUILD)

check: check-unit check-cli

check-unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do \
		echo "== $$t"; \
		( cd tests/unit && ../../$$t ); \
	done

# Real-kernel tests in a QEMU VM (tests/vm/run.sh: Debian's kernel under TCG).
check-vm: $(BINS)
	@echo "== tests/vm/run.sh"
	@tests/vm/run.sh $(BUILD)

check-cli: $(BINS)
	@echo "== tests/cli/test_plan.sh"
	@DRFCTL=$(abspath $(BUILD)/drfctl) tests/cli/test_plan.sh
	@echo "== tests/cli/test_drfd.sh"
	@DRFD=$(abspath $(BUILD)/drfd) tests/cli/test_drfd.sh
	@echo "== tests/cli/test_drfctl.sh"
	@DRFCTL=$(abspath $(BUILD)/drfctl) DRFD=$(abspath $(BUILD)/drfd) tests/cli/test_drfctl.sh

# The memory-tightening worker thread under ThreadSanitizer.
check-tsan:
	$(MAKE) CC=clang SANITIZER=thread .output/clang-thread/tests/test_cgroupfs
	@echo "== test_cgroupfs under ThreadSanitizer"
	cd tests/unit && TSAN_OPTIONS=halt_on_error=1 ../../.output/clang-thread/tests/test_cgroupfs

# Leaks and invalid accesses in the reconciler, reloads and the config parser.
valgrind: $(BUILD)/tests/test_cgroupfs $(BUILD)/tests/test_reload_mem $(BUILD)/tests/test_config
	@set -e; for t in $^; do \
		echo "== valgrind $$t"; \
		( cd tests/unit && DRF_RELOADS=200 DRF_RSS_CHECK=0 valgrind -q --leak-check=full \
			--errors-for-leak-kinds=definite,indirect --error-exitcode=99 ../../$$t ); \
	done

check-all:
	$(MAKE) check CC=gcc
	$(MAKE) check CC=clang
	$(MAKE) check CC=gcc SANITIZER=address
	$(MAKE) check CC=clang SANITIZER=undefined
	$(MAKE) check-tsan
	$(MAKE) valgrind CC=gcc
	$(MAKE) shellcheck
	$(MAKE) check-vm CC=gcc

shellcheck:
	shellcheck -x $(wildcard deploy/*.sh tests/*/*.sh) tests/vm/init .ci/run

bench: $(BENCH_BIN) $(BENCH_TICK_BIN)
	@echo "command: make bench ($(BENCH_BIN), CC=$(CC) CFLAGS='$(DRF_CFLAGS) $(CFLAGS)')"
	$(BENCH_BIN)
	@echo "command: make bench ($(BENCH_TICK_BIN) 1000; tests/bench/tick_syscalls.sh)"
	$(BENCH_TICK_BIN) 1000
	tests/bench/tick_syscalls.sh $(BENCH_TICK_BIN) 1000 20
	$(BENCH_TICK_BIN) 1000 reload 101
	$(BENCH_TICK_BIN) 10000 reload 21

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/drfd/examples/tenants.d
	install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 deploy/examples/drfd.conf $(DESTDIR)$(PREFIX)/share/drfd/examples/
	install -m 0644 deploy/examples/tenants.d/*.conf \
		$(DESTDIR)$(PREFIX)/share/drfd/examples/tenants.d/

clean:
	rm -rf .output

-include $(wildcard $(BUILD)/agent/*/*.d $(BUILD)/cgroupfs/*.d $(BUILD)/tests/*/*.d)
