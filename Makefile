# pyebpf — one entry point. Outputs go under build/ (build/san/ with SANITIZE=1).
#
#   make setup      install the Debian packages the project needs, then build
#   make            build libpyjit, pyebpf-sample, the Python module, tests
#   make libpyjit   libpyjit alone (a C compiler is enough: no clang, bpftool or BTF)
#   make test       run every unit and integration test; last line "N passed, N failed"
#   make demo       sample a bundled Python workload, write demo.svg
#   make bench      benchmarks (results: docs/benchmarks.md)
#   make fuzz       libFuzzer targets
#   make install    PREFIX=/usr/local
#
# Each module directory may add rules in a fragment (jitdump/*.mk, user/*.mk,
# tests/*.mk, ...); this file holds what they share.

PREFIX    ?= /usr/local
SANITIZE  ?= 0
CC        ?= cc
CLANG     ?= clang
BPFTOOL   ?= bpftool
PYTHON    ?= python3
ARCH      := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
VERSION   := 0.1.0

ifeq ($(SANITIZE),1)
BUILD     := build/san
SANFLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=undefined
else
BUILD     := build
SANFLAGS  :=
endif

WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CFLAGS    ?= -O2 -g
CFLAGS    += -std=gnu11 $(WARN) -fPIC -fno-omit-frame-pointer -D_GNU_SOURCE \
             -DPYEBPF_VERSION='"$(VERSION)"' $(SANFLAGS)
CPPFLAGS  += -Ijitdump -Iuser -Ibpf -I$(BUILD)/bpf
LDFLAGS   += $(SANFLAGS)
LDLIBS    += -lpthread -ldl
USER_LIBS := -lbpf -ldw -lelf -lz -lm
# pyebpf-sample takes libbpf, libelf and zlib in whole (libbpf-tools and bpftool link libbpf so
# too): the dynamic loader mapping and relocating three libraries was ~2 ms of every run's CPU,
# a tenth of a short one's (docs/benchmarks.md).
SAMPLE_LIBS := -Wl,-Bstatic -lbpf -lelf -lz -Wl,-Bdynamic -lm

DEBIAN_PACKAGES := build-essential make pkg-config clang llvm lld libbpf-dev bpftool \
  libelf-dev libdw-dev elfutils zlib1g-dev libcmocka-dev libclang-rt-14-dev linux-perf gdb \
  binutils python3-dev valgrind clang-format util-linux procps bc chromium protobuf-compiler \
  dpkg-dev libffi-dev

.PHONY: all setup test check demo bench fuzz install clean format format-check
all:

# ---- libpyjit -----------------------------------------------------------------
PYJIT_SRCS := $(filter-out jitdump/pyebpf_jit%.c,$(wildcard jitdump/*.c))
PYJIT_OBJS := $(PYJIT_SRCS:%.c=$(BUILD)/obj/%.o)

# libpyjit needs only a C compiler: its objects do not wait on the BPF skeletons (user/ objects do,
# below), so `make libpyjit` works without clang, bpftool or kernel BTF.
$(BUILD)/obj/jitdump/%.o: jitdump/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libpyjit.a: $(PYJIT_OBJS)
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^
$(BUILD)/libpyjit.so: $(PYJIT_OBJS)
	$(CC) -shared -Wl,-soname,libpyjit.so.0 $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(BUILD)/pyjit.pc: jitdump/pyjit.pc.in
	@mkdir -p $(@D)
	sed 's|@PREFIX@|$(PREFIX)|;s|@VERSION@|$(VERSION)|' $< > $@
.PHONY: libpyjit
libpyjit: $(BUILD)/libpyjit.a $(BUILD)/libpyjit.so $(BUILD)/pyjit.pc
all: libpyjit

# ---- BPF objects and skeletons ------------------------------------------------
BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_SKELS := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/bpf/%.skel.h)

$(BUILD)/bpf/vmlinux.h:
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@
$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(BUILD)/bpf/vmlinux.h
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD)/bpf -Ibpf -c $< -o $@
$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@
$(BUILD)/bpf/.skels: $(BPF_SKELS)
	@mkdir -p $(@D); touch $@

# ---- pyebpf-sample ------------------------------------------------------------
USER_SRCS := $(wildcard user/*.c user/*/*.c)
USER_OBJS := $(USER_SRCS:%.c=$(BUILD)/obj/%.o)
USER_LIB_OBJS := $(filter-out $(BUILD)/obj/user/main.o,$(USER_OBJS))

$(BUILD)/obj/user/%.o: user/%.c | $(BUILD)/bpf/.skels
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

ifneq ($(wildcard user/main.c),)
$(BUILD)/pyebpf-sample: $(USER_OBJS) $(BUILD)/libpyjit.a
	$(CC) $(LDFLAGS) -o $@ $^ $(SAMPLE_LIBS) $(LDLIBS)
all: $(BUILD)/pyebpf-sample
endif

# ---- tests --------------------------------------------------------------------
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
PROG_SRCS  := $(wildcard tests/progs/*.c)
PROG_BINS  := $(PROG_SRCS:tests/progs/%.c=$(BUILD)/progs/%) \
              $(PROG_SRCS:tests/progs/%.c=$(BUILD)/progs/%-nofp)

# Each unit test's link line (the objects it tests, by name) is in tests/unit.mk.

# Test workloads: once with frame pointers, once without (-nofp), both linked with libpyjit.
$(BUILD)/progs/%: tests/progs/%.c $(BUILD)/libpyjit.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 -O1 -g -fno-omit-frame-pointer -fno-inline -D_GNU_SOURCE $(SANFLAGS) -o $@ $^ $(LDLIBS) -lm
$(BUILD)/progs/%-nofp: tests/progs/%.c $(BUILD)/libpyjit.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 -O1 -g -fomit-frame-pointer -fno-inline -D_GNU_SOURCE $(SANFLAGS) -o $@ $^ $(LDLIBS) -lm

all: $(UNIT_BINS) $(PROG_BINS)

test: all
	@if [ "$(BUILD)" != build ] && [ -d build/pythons ]; then ln -sfn ../pythons $(BUILD)/pythons; fi
	@BUILD=$(BUILD) SANITIZE=$(SANITIZE) tests/run $(TESTS)
check: test

# ---- fragments ----------------------------------------------------------------
include $(sort $(wildcard jitdump/*.mk user/*.mk bpf/*.mk tests/*.mk scripts/*.mk bench/*.mk))

# ---- setup, install, housekeeping ---------------------------------------------
setup:
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEBIAN_PACKAGES) && \
	  { command -v npm > /dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; }; \
	else \
	  echo "make setup: not root, skipping apt-get (need: $(DEBIAN_PACKAGES))"; fi
	$(MAKE) all
	$(MAKE) js-deps
	$(MAKE) test-pythons

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(BUILD)/libpyjit.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libpyjit.so $(DESTDIR)$(PREFIX)/lib/libpyjit.so.0
	ln -sf libpyjit.so.0 $(DESTDIR)$(PREFIX)/lib/libpyjit.so
	install -m 644 jitdump/pyjit.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/pyjit.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	if [ -f $(BUILD)/pyebpf-sample ]; then install -m 755 $(BUILD)/pyebpf-sample $(DESTDIR)$(PREFIX)/bin/; fi

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	@clang-format --dry-run --Werror $(FORMAT_FILES) && echo "format-check: ok"

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
