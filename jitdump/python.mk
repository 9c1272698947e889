# The pyebpf_jit CPython extension, built for every interpreter in PYTHONS.
#
#   build/python<MAJOR.MINOR>/pyebpf_jit/{__init__,__main__}.py
#   build/python<MAJOR.MINOR>/pyebpf_jit/_native<EXT_SUFFIX>   (libpyjit linked in statically)
#
# Put build/python<MAJOR.MINOR> on PYTHONPATH, or `make install-python` (part of `make install`)
# to copy the package and pyebpf_jit.pth (honours PYEBPF_JIT=gdb,jitdump,perfmap) into each
# interpreter's site-packages. PYTHONS is python3 and every interpreter of tests/pythons present
# here. Interpreters sharing a MAJOR.MINOR (Debian's /usr/bin/python3.11 and pyenv's 3.11.7, or a
# release and a debug build) share one build: the first in PYTHONS compiles it, the ABI is the same.
# 3.11-3.15 with the GIL and the free-threaded 3.14t/3.15t are built (MAJOR.MINOR is then
# "3.14t": build/python3.14t, extension suffix .cpython-314t-...); others are listed by
# `make python-info` as skipped.
#
# 3.14 and 3.15 come from build/pythons (scripts/test-pythons, `make test-pythons`): Debian
# unstable's interpreters behind a loader wrapper, with their headers unpacked beside them. Their
# sysconfig already names the include directory inside build/pythons/root; its parent is added
# too, for the multiarch <x86_64-linux-gnu/python3.X/pyconfig.h> that Python.h includes. They are
# test interpreters: `make install-python` leaves them out.

# tests/pythons is the list of interpreters (the tests read it too); its variants (VAR=VALUE
# lines) are the same binaries, built once.
PY_LIST := $(shell sed -n '/^[^\#]/{/=/!s/^[^ ]* \([^ ]*\).*/\1/p}' tests/pythons)
PY_CANDIDATES := $(wildcard $(filter-out build/pythons/%,$(PY_LIST)))
PY_TEST_PYTHONS := $(wildcard $(filter build/pythons/%,$(PY_LIST)))
PYTHONS ?= python3 $(PY_CANDIDATES) $(PY_TEST_PYTHONS)

# "MAJOR.MINOR INCLUDE EXT_SUFFIX PLATLIB GIL_DISABLED" or nothing when the interpreter is unusable.
PY_QUERY := import sys, sysconfig as s; p = s.get_paths(); \
  ft = int(bool(s.get_config_var("Py_GIL_DISABLED"))); \
  print("%d.%d%s" % (sys.version_info[:2] + ("t" * ft,)), p["include"], s.get_config_var("EXT_SUFFIX"), \
  p["platlib"], ft)
py_info = $(shell $(1) -c '$(PY_QUERY)' 2>/dev/null)
PY_SUPPORTED := 3.11 3.12 3.13 3.14 3.15 3.14t 3.15t

# name -> info, computed once per interpreter
$(foreach p,$(PYTHONS),$(eval PYINFO_$(subst /,_,$(p)) := $(call py_info,$(p))))
pyinfo = $(PYINFO_$(subst /,_,$(1)))
py_ver = $(word 1,$(call pyinfo,$(1)))
py_usable = $(and $(filter $(PY_SUPPORTED),$(call py_ver,$(1))),$(wildcard $(word 2,$(call pyinfo,$(1)))/Python.h))

PY_USABLE := $(foreach p,$(PYTHONS),$(if $(call py_usable,$(p)),$(p)))
# first interpreter of each MAJOR.MINOR builds it
PY_BUILDERS :=
PY_SEEN :=
$(foreach p,$(PY_USABLE),$(if $(filter $(call py_ver,$(p)),$(PY_SEEN)),,\
  $(eval PY_BUILDERS += $(p))$(eval PY_SEEN += $(call py_ver,$(p)))))

PYJIT_EXT_SRCS := jitdump/pyebpf_jit.c $(filter-out jitdump/pyebpf_jit.c,$(wildcard jitdump/pyebpf_jit_*.c))
PYJIT_EXT_HDRS := $(wildcard jitdump/pyebpf_jit*.h) jitdump/pyjit.h
PYJIT_PKG_SRCS := $(wildcard jitdump/pyebpf_jit/*.py)
PYJIT_EXT_MAP  := $(BUILD)/pyebpf_jit.map

# Export only the module's entry point and the two symbols gdb looks up by name; everything
# else from libpyjit stays local so two copies in one process cannot clash.
$(PYJIT_EXT_MAP): jitdump/python.mk
	@mkdir -p $(@D)
	printf '{\n  global: PyInit__native; __jit_debug_register_code; __jit_debug_descriptor;\n  local: *;\n};\n' > $@

# -I for the parent of an include dir outside the system's /usr/include (multiarch pyconfig.h)
py_parent_inc = $(if $(filter /usr/include/%,$(1)),,$(if $(wildcard $(1)/../*/python*/pyconfig.h),-I$(abspath $(1)/..)))

# $(1) interpreter, $(2) MAJOR.MINOR, $(3) include dir, $(4) EXT_SUFFIX
define PY_EXT_RULES
PYJIT_EXT_$(2) := $(BUILD)/python$(2)/pyebpf_jit/_native$(4)
PYJIT_PKG_$(2) := $(PYJIT_PKG_SRCS:jitdump/pyebpf_jit/%=$(BUILD)/python$(2)/pyebpf_jit/%)
$$(PYJIT_EXT_$(2)): $(PYJIT_EXT_SRCS) $(PYJIT_EXT_HDRS) $(BUILD)/libpyjit.a $(PYJIT_EXT_MAP)
	@mkdir -p $$(@D)
	$$(CC) $$(CPPFLAGS) -I$(3) $(call py_parent_inc,$(3)) $$(CFLAGS) -fvisibility=hidden -shared $$(LDFLAGS) \
	  -Wl,--version-script=$(PYJIT_EXT_MAP) -Wl,-z,noexecstack -o $$@ \
	  $(PYJIT_EXT_SRCS) $(BUILD)/libpyjit.a -lpthread
	@if nm -u $$@ | grep -q ' pyjit_'; then echo "$$@: libpyjit symbols missing:"; \
	  nm -u $$@ | grep ' pyjit_'; rm -f $$@; exit 1; fi
$(BUILD)/python$(2)/pyebpf_jit/%.py: jitdump/pyebpf_jit/%.py
	@mkdir -p $$(@D)
	cp $$< $$@
python-ext: $$(PYJIT_EXT_$(2)) $$(PYJIT_PKG_$(2))
endef

$(foreach p,$(PY_BUILDERS),$(eval $(call PY_EXT_RULES,$(p),$(call py_ver,$(p)),$(word 2,$(call pyinfo,$(p))),$(word 3,$(call pyinfo,$(p))))))

.PHONY: python-ext python-info install-python
python-ext:
# An ASan/UBSan-instrumented extension cannot be loaded by a normal interpreter: SANITIZE builds
# leave it out (the integration tests then skip).
ifneq ($(SANITIZE),1)
all: python-ext
endif

python-info:
	@$(foreach p,$(PYTHONS),echo "$(p): $(or $(call pyinfo,$(p)),unusable)$(if $(call py_usable,$(p)),, (skipped: needs 3.11-3.15, or 3.14t/3.15t, and Python.h))";)
	@echo "built by: $(PY_BUILDERS)"

# Installs into each interpreter's own site-packages (platlib), as pip would, and
# scripts/pyebpf-perf into PREFIX/bin.
install-python: python-ext
	@$(foreach p,$(filter-out $(PY_TEST_PYTHONS),$(PY_USABLE)),\
	  d='$(DESTDIR)$(word 4,$(call pyinfo,$(p)))'; \
	  echo "install pyebpf_jit for $(p) -> $$d"; \
	  install -d "$$d/pyebpf_jit" && \
	  install -m 644 $(BUILD)/python$(call py_ver,$(p))/pyebpf_jit/*.py "$$d/pyebpf_jit/" && \
	  install -m 755 $(BUILD)/python$(call py_ver,$(p))/pyebpf_jit/_native*.so "$$d/pyebpf_jit/" && \
	  install -m 644 jitdump/pyebpf_jit.pth "$$d/pyebpf_jit.pth" || exit 1;)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 scripts/pyebpf-perf $(DESTDIR)$(PREFIX)/bin/
install: install-python

# Trampoline overhead benchmark (results and commands: docs/python-jit.md).
.PHONY: bench-tramp
bench: bench-tramp
bench-tramp: python-ext
	$(PYTHON) bench/tramp.py --build $(BUILD)
