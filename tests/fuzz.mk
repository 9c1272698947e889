# ---- fuzzing (libFuzzer) ------------------------------------------------------
#
#   make fuzz                 build every target, run each FUZZ_SECONDS (default 30) on its corpus
#   make fuzz-smoke           the same, FUZZ_SMOKE_SECONDS (default 20) each, for CI
#   FUZZ_SECONDS=600 make fuzz             the long run
#   make fuzz FUZZ_TARGETS="jitdump_read elfsym"  only some targets
#   make fuzz-build           build only
#
# One target per parser: tests/fuzz/fuzz_NAME.c defines LLVMFuzzerTestOneInput and is linked with
# the parser sources listed in FUZZ_SRCS_NAME, all built by clang with
# -fsanitize=fuzzer,address,undefined into build/fuzz/ (independent of SANITIZE). A target whose
# parser source is not in the tree yet is left out with a message. Seed corpora: small committed
# inputs (tests/fuzz/seeds/NAME/, including every input that once crashed) plus inputs made at fuzz
# time from real files by tests/fuzz/gen_seeds.sh (build/fuzz/seeds/NAME/). New inputs libFuzzer
# finds go to build/fuzz/corpus/NAME/, crashes to build/fuzz/crash/NAME-*, logs to build/fuzz/NAME.log.

FUZZ_CC            ?= $(CLANG)
FUZZ_SECONDS       ?= 30
FUZZ_SMOKE_SECONDS ?= 20
FUZZ_JOBS          ?= 2
FUZZ_DIR           := build/fuzz
FUZZ_CFLAGS        := -std=gnu11 -g -O1 -Wall -Wextra -Wno-unused-parameter -fno-omit-frame-pointer -D_GNU_SOURCE -DPYEBPF_FUZZ \
                      -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
                      -Ijitdump -Iuser -Ibpf
FUZZ_LIBS          := -ldw -lelf -lz -lm -lpthread -ldl

# Parser sources each target links (the first one decides whether the target exists).
FUZZ_SRCS_jitdump_read := user/symbols/jitdump_read.c user/util/readfile.c
FUZZ_SRCS_perfmap_read := user/symbols/perfmap_read.c user/util/readfile.c
FUZZ_SRCS_elfsym   := user/symbols/elfsym.c user/symbols/elfsym_plt.c user/symbols/elfsec.c user/unwind/cfi_read.c \
                      user/unwind/cfi_expr.c
FUZZ_SRCS_cfi_read := user/unwind/cfi_read.c user/unwind/cfi_expr.c
FUZZ_SRCS_linetable := user/python/linetable.c
FUZZ_SRCS_pyrt     := user/python/pyrt.c user/python/pyrt_debug.c user/python/pyeval.c user/util/errmsg.c user/util/maps.c user/capture/remote.c
FUZZ_SRCS_folded   := user/output/folded.c user/profile/profile.c user/profile/view.c user/output/escape.c \
                      user/output/output.c user/output/svg.c user/output/svg_js.c user/output/speedscope.c \
                      user/output/pprof.c user/output/summary.c user/output/diff.c

# Targets are the tests/fuzz/fuzz_NAME.c that have a FUZZ_SRCS_NAME here (others, e.g. a module's
# own target built by its fragment, are left to that fragment).
FUZZ_ALL       := $(foreach t,$(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c)),$(if $(FUZZ_SRCS_$(t)),$(t)))
FUZZ_HAVE      := $(foreach t,$(FUZZ_ALL),$(if $(wildcard $(firstword $(FUZZ_SRCS_$(t)))),$(t)))
FUZZ_MISSING   := $(filter-out $(FUZZ_HAVE),$(FUZZ_ALL))
FUZZ_TARGETS   ?= $(FUZZ_HAVE)
FUZZ_BINS      := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)

.PHONY: fuzz fuzz-build fuzz-seeds fuzz-smoke fuzz-replay fuzz-list fuzz-missing
FUZZ_HDRS := tests/fuzz/fuzz.h $(wildcard user/*.h user/*/*.h jitdump/*.h)

# Standalone replay driver (no libFuzzer runtime needed): runs files through a target built by
# $(CC) with ASan+UBSan; tests/integration/fuzz_smoke.sh uses it to replay the committed seeds.
define FUZZ_RULES
$(FUZZ_DIR)/fuzz_$(1): tests/fuzz/fuzz_$(1).c $(FUZZ_SRCS_$(1)) $(FUZZ_HDRS)
	@mkdir -p $$(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $$@ $$< $(FUZZ_SRCS_$(1)) $(FUZZ_LIBS)
$(FUZZ_DIR)/replay_$(1): tests/fuzz/fuzz_$(1).c tests/fuzz/replay.c $(FUZZ_SRCS_$(1)) $(FUZZ_HDRS)
	@mkdir -p $$(@D)
	$(CC) -std=gnu11 -g -O1 -D_GNU_SOURCE -DPYEBPF_FUZZ -Ijitdump -Iuser -Ibpf \
	  -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	  -o $$@ tests/fuzz/replay.c $$< $(FUZZ_SRCS_$(1)) $(FUZZ_LIBS)
endef
$(foreach t,$(FUZZ_HAVE),$(eval $(call FUZZ_RULES,$(t))))

fuzz-replay: $(FUZZ_TARGETS:%=$(FUZZ_DIR)/replay_%)

fuzz-build: $(FUZZ_BINS)
	@$(if $(FUZZ_MISSING),echo "fuzz: not built (parser not in the tree yet): $(FUZZ_MISSING)")

# jitprog (when its source is in the tree) makes real jitdump and perf map seeds.
fuzz-seeds: fuzz-build $(filter %/progs/jitprog,$(PROG_BINS))
	@BUILD=$(BUILD) tests/fuzz/gen_seeds.sh $(FUZZ_DIR)/seeds $(FUZZ_TARGETS)

fuzz: fuzz-seeds
	@tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_TARGETS)

fuzz-smoke: fuzz-seeds
	@tests/fuzz/run.sh $(FUZZ_SMOKE_SECONDS) $(FUZZ_JOBS) $(FUZZ_TARGETS)

# For scripts: the targets whose parser is in the tree, and those still missing.
fuzz-list:
	@echo $(FUZZ_HAVE)
fuzz-missing:
	@echo $(FUZZ_MISSING)
