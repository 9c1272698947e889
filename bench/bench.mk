# Benchmarks (results and commands: docs/benchmarks.md).
#
#   make bench                 every case; BENCH_QUICK=1 for a short run (times: docs/benchmarks.md)
#   make bench-replay          collector cost per sample only (case 1)
#   make bench-bpfcost         in-target cost per sample only (case 4b: BPF ns/sample, interrupts)
#   make bench-collector       what a profile costs: whole-process collector CPU (case 7)
#   make bench-peers           the same workload under Austin and CPython 3.15's sampler (case 8)
#
# bench/run.sh prints one summary line per case; bench-tramp (jitdump/python.mk) adds the
# trampoline numbers.

BENCH_QUICK ?= 0

# The collector replayed from captured records, linked with the user objects like the unit tests.
# No sibling-call optimisation: the captured chains must keep every frame.
$(BUILD)/bench/replay: bench/replay.c $(USER_LIB_OBJS) $(BUILD)/libpyjit.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fno-optimize-sibling-calls -fno-inline $(LDFLAGS) -o $@ $^ $(USER_LIBS) $(LDLIBS)

# A CPU-bound C target with many distinct stacks (memory case).
$(BUILD)/bench/manystacks: bench/manystacks.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls $(SANFLAGS) -o $@ $< -lpthread

# A thread that times the interrupts it suffers (bpfcost case).
$(BUILD)/bench/gaps: bench/gaps.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -fno-omit-frame-pointer $(SANFLAGS) -o $@ $<

# Two threads in pipe ping-pong at a set rate of context switches (off-CPU case).
$(BUILD)/bench/switches: bench/switches.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -fno-omit-frame-pointer $(SANFLAGS) -o $@ $< -lpthread

BENCH_BINS := $(BUILD)/bench/replay $(BUILD)/bench/manystacks $(BUILD)/bench/gaps $(BUILD)/bench/switches
all: $(BENCH_BINS)

.PHONY: bench-run bench-replay bench-bpfcost bench-collector bench-peers
bench: bench-run
bench-run: $(BENCH_BINS) $(BUILD)/pyebpf-sample $(PROG_BINS)
	BUILD=$(BUILD) BENCH_QUICK=$(BENCH_QUICK) bench/run.sh
bench-replay: $(BUILD)/bench/replay
	BUILD=$(BUILD) BENCH_QUICK=$(BENCH_QUICK) bench/run.sh replay
bench-bpfcost: $(BUILD)/bench/gaps $(BUILD)/pyebpf-sample $(PROG_BINS)
	BUILD=$(BUILD) BENCH_QUICK=$(BENCH_QUICK) bench/run.sh bpfcost
bench-collector: $(BUILD)/pyebpf-sample $(PROG_BINS)
	BUILD=$(BUILD) BENCH_QUICK=$(BENCH_QUICK) bench/run.sh collector
bench-peers: $(BUILD)/pyebpf-sample
	BUILD=$(BUILD) BENCH_QUICK=$(BENCH_QUICK) bench/run.sh peers

# The Python frame reader driven like a sampler (remote reads per sample).
$(BUILD)/bench/pyreads: bench/pyreads.c $(USER_LIB_OBJS) $(BUILD)/libpyjit.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(USER_LIBS) $(LDLIBS)
BENCH_BINS += $(BUILD)/bench/pyreads
all: $(BUILD)/bench/pyreads
bench-run: $(BUILD)/bench/pyreads
