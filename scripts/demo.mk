# make demo — sample the bundled CPU-bound Python workload with pyebpf-sample and write a flame
# graph. Needs root (or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE on build/pyebpf-sample).
#
#   make demo                           writes ./demo.svg
#   make demo DEMO_OUT=/tmp/x.svg DEMO_SECONDS=2
DEMO_OUT     ?= demo.svg
DEMO_SECONDS ?= 5
DEMO_HZ      ?= 499
DEMO_PYTHON  ?= $(PYTHON)
DEMO_FLAGS   ?=

demo: $(BUILD)/pyebpf-sample
	$(BUILD)/pyebpf-sample -F $(DEMO_HZ) $(DEMO_FLAGS) -o $(DEMO_OUT) -- \
	  $(DEMO_PYTHON) scripts/demo/workload.py $(DEMO_SECONDS)
	@echo "demo: flame graph written to $(abspath $(DEMO_OUT)) (open it in a web browser)"
