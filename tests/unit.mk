# Unit tests (tests/unit/test_<module>.c, cmocka). Each test links only the objects it names:
# test_<name>_OBJS lists the modules under test and the ones they call (source paths without .c),
# so a test's dependencies are visible here, and a module that starts calling another stage
# shows up as an undefined symbol until its tests say so. A test without a list is an error.
# The tests that run real interpreters read the one list of them, tests/pythons, through the
# generated $(BUILD)/tests/gen/pythons.h (tests/unit/pytargets.h includes it).

# The collector's whole per-sample pipeline, shared by the tests of collect/ and what drives it.
UNIT_COLLECT := user/collect/offcpu user/capture/remote user/capture/sampler user/capture/sampler_err user/capture/kbtf user/collect/collect user/collect/collect_target user/collect/gil \
                user/collect/fcache user/collect/merge user/collect/scache user/profile/profile \
                user/python/linetable user/python/pycode user/python/pycode_fetch user/python/pycode_table user/python/pydstack user/python/pyeval \
                user/python/pykernel user/python/pyrt user/python/pyrt_debug user/python/pystack user/python/pystack_predict user/python/pystack_threads user/python/pythreads \
                user/symbols/elfsym user/symbols/elfsym_plt user/symbols/jitdump_read \
                user/symbols/jitsyms user/symbols/ksyms user/util/maps \
                user/symbols/perfmap_read user/symbols/proc_maps user/symbols/proc_jit user/symbols/proc_sym user/symbols/proc_unwind user/symbols/tramp user/symbols/elfsec user/symbols/gdbjit_read \
                user/symbols/strpool user/unwind/cfi_expr user/unwind/cfi_read user/unwind/unwind \
                user/util/readfile \
    user/capture/stackends user/collect/native user/collect/threads user/util/errmsg user/util/monotime user/util/stats

test_cfi_OBJS := jitdump/cfi
test_cfi_read_OBJS := user/unwind/cfi_expr user/unwind/cfi_read
test_cli_OBJS := user/cli
test_collect_OBJS := $(UNIT_COLLECT)
test_collect_cache_OBJS := $(UNIT_COLLECT)
test_elfimg_OBJS := jitdump/cfi jitdump/elfimg
test_dump_kstack_OBJS := user/dump_kstack user/symbols/ksyms
test_elfsym_OBJS := user/capture/remote user/python/pyeval user/python/pyrt user/python/pyrt_debug \
                    user/symbols/elfsym user/symbols/elfsym_plt user/symbols/jitdump_read \
                    user/symbols/jitsyms user/symbols/ksyms user/util/maps \
                    user/symbols/perfmap_read user/symbols/proc_maps user/symbols/proc_jit user/symbols/proc_sym user/symbols/proc_unwind user/symbols/tramp user/symbols/elfsec user/symbols/gdbjit_read \
                    user/symbols/strpool user/unwind/cfi_expr user/unwind/cfi_read \
                    user/unwind/unwind user/util/readfile \
    user/util/errmsg \
    user/util/monotime
test_elfsym_plt_OBJS := user/symbols/elfsym user/symbols/elfsym_plt user/unwind/cfi_read \
    user/symbols/elfsec
test_folded_OBJS := user/output/folded user/profile/profile user/profile/view
test_gdbjit_OBJS := jitdump/cfi jitdump/elfimg jitdump/gdbjit jitdump/jitdump jitdump/perfmap \
                    jitdump/pyjit jitdump/sinkfile
test_jit_reuse_OBJS := $(UNIT_COLLECT) jitdump/cfi jitdump/elfimg jitdump/gdbjit jitdump/jitdump \
                       jitdump/perfmap jitdump/pyjit jitdump/sinkfile
test_jitdump_OBJS := jitdump/cfi jitdump/jitdump jitdump/sinkfile user/symbols/jitdump_read \
                     user/util/readfile
test_kbtf_OBJS := user/capture/kbtf
test_linetable_OBJS := user/python/linetable
test_maps_OBJS := user/util/maps
test_maps_leader_OBJS := user/util/maps
test_merge_OBJS := user/collect/merge user/profile/profile
test_output_OBJS := user/output/escape user/output/folded user/output/output user/output/pprof \
                    user/output/render user/output/speedscope user/output/summary user/output/svg \
                    user/output/svg_js user/profile/profile user/profile/view \
    user/output/diff
test_perfmap_OBJS := jitdump/perfmap jitdump/sinkfile user/symbols/perfmap_read user/util/readfile
test_profile_OBJS := user/profile/profile
test_progress_OBJS := $(UNIT_COLLECT) user/progress
test_pykernel_OBJS := user/capture/remote user/capture/sampler user/capture/sampler_err user/capture/kbtf user/profile/profile \
                      user/python/linetable user/python/pycode user/python/pycode_fetch user/python/pycode_table user/python/pydstack \
                      user/python/pykernel user/python/pyeval user/python/pyrt user/python/pyrt_debug \
                      user/python/pystack user/python/pystack_predict user/python/pystack_threads user/python/pythreads user/util/maps \
    user/capture/stackends user/util/errmsg user/util/stats \
    user/util/monotime
test_pyrt_debug_OBJS := user/python/pyrt_debug \
    user/util/errmsg
test_gdbjit_read_OBJS := user/capture/remote user/python/pyeval user/python/pyrt user/python/pyrt_debug \
                      user/symbols/jitdump_read user/symbols/jitsyms user/util/maps \
                      user/symbols/perfmap_read user/symbols/gdbjit_read user/symbols/strpool \
                      user/unwind/cfi_read user/util/readfile \
    user/symbols/elfsym user/symbols/elfsec user/symbols/proc_jit user/symbols/proc_maps user/symbols/proc_sym user/symbols/proc_unwind user/symbols/tramp user/util/errmsg \
    user/symbols/elfsym_plt user/unwind/unwind user/unwind/cfi_expr \
    user/util/monotime
test_pystack_OBJS := user/capture/remote user/profile/profile user/python/linetable \
                     user/python/pycode user/python/pycode_fetch user/python/pycode_table user/python/pydstack user/python/pyeval user/python/pyrt \
                     user/python/pyrt_debug user/python/pystack user/python/pystack_predict user/python/pystack_threads user/python/pythreads user/util/maps \
    user/util/errmsg user/util/stats \
    user/util/monotime
test_pystack_ds_OBJS := user/capture/remote user/profile/profile user/python/linetable \
                        user/python/pycode user/python/pycode_fetch user/python/pycode_table user/python/pydstack user/python/pyeval user/python/pyrt \
                        user/python/pyrt_debug user/python/pystack user/python/pystack_predict user/python/pystack_threads user/python/pythreads user/util/maps \
    user/util/errmsg user/util/stats \
    user/util/monotime
test_readfile_OBJS := user/symbols/jitdump_read user/symbols/perfmap_read user/util/readfile
test_remote_OBJS := user/capture/remote
test_taskiter_OBJS := user/capture/taskiter user/symbols/ksyms user/util/errmsg user/util/monotime
test_sampler_OBJS := user/capture/sampler user/capture/sampler_err user/capture/kbtf \
    user/capture/stackends \
    user/util/maps
test_stats_OBJS := user/util/stats \
    user/python/pykernel \
    user/python/pystack user/python/pystack_predict user/python/pystack_threads user/python/pythreads user/capture/remote user/python/pyeval user/python/pyrt user/python/pyrt_debug user/python/pycode user/python/pycode_fetch user/python/pycode_table user/python/pydstack user/python/linetable user/profile/profile user/util/maps user/util/errmsg user/util/monotime user/capture/stackends
test_diff_OBJS := user/output/diff user/output/escape user/output/folded user/output/svg_js user/profile/profile user/profile/view user/util/readfile
test_offcpu_OBJS := user/collect/offcpu user/profile/profile
test_summary_OBJS := user/output/summary user/profile/profile user/profile/view
test_unwind_OBJS := jitdump/cfi jitdump/jitdump jitdump/sinkfile user/capture/remote \
                    user/python/pyeval user/python/pyrt user/python/pyrt_debug user/symbols/elfsym \
                    user/symbols/elfsym_plt user/symbols/jitdump_read user/symbols/jitsyms \
                    user/util/maps user/symbols/perfmap_read user/symbols/proc_maps user/symbols/proc_jit user/symbols/proc_sym user/symbols/proc_unwind user/symbols/tramp user/symbols/elfsec \
                    user/symbols/gdbjit_read user/symbols/strpool user/unwind/cfi_expr \
                    user/unwind/cfi_read user/unwind/unwind user/util/readfile \
    user/util/errmsg \
    user/util/monotime
test_unwind_epilogue_OBJS := user/unwind/cfi_expr user/unwind/cfi_read user/unwind/unwind

UNIT_GEN := $(BUILD)/tests/gen/pythons.h
unit_objs = $(if $(value $(1)_OBJS),$(patsubst %,$(BUILD)/obj/%.o,$(sort $($(1)_OBJS))),\
  $(error tests/unit.mk: tests/unit/$(1).c has no $(1)_OBJS))

# One "path", line per interpreter of tests/pythons; variants (VAR=VALUE lines) run the same binary
# and are left out, as are the build flavours (FLAVOUR:LABEL lines: their own integration tests).
$(UNIT_GEN): tests/pythons tests/unit.mk
	@mkdir -p $(@D)
	{ echo '/* Generated from tests/pythons by tests/unit.mk: the interpreters, one per line. */'; \
	  sed -n '/^[^#]/{/=/!{/^[^ ]*:/!s/^\([^ ]*\) \([^ ]*\).*/"\2", \/* \1 *\//p}}' $<; } > $@.tmp && mv $@.tmp $@

# test_kbtf's reference offsets: the compiler's offsetof over the vmlinux.h bpftool wrote from
# the running kernel's BTF (tests/unit/koff_ref.c), a decoder independent of kbtf.
$(BUILD)/tests/gen/koff_ref.h: tests/unit/koff_ref.c $(BUILD)/bpf/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) -w -I$(BUILD)/bpf $< -o $(BUILD)/tests/gen/koff_ref && $(BUILD)/tests/gen/koff_ref > $@.tmp && mv $@.tmp $@
$(BUILD)/tests/test_kbtf: $(BUILD)/tests/gen/koff_ref.h

define UNIT_RULE
$(BUILD)/tests/$(1): tests/unit/$(1).c $(call unit_objs,$(1)) $(wildcard tests/unit/*.h) $(UNIT_GEN)
	@mkdir -p $$(@D)
	$$(CC) $$(CPPFLAGS) -I$(BUILD)/tests/gen $$(CFLAGS) $$(LDFLAGS) -o $$@ $$(filter %.c %.o,$$^) \
	  -lcmocka $$(USER_LIBS) $$(LDLIBS)
endef
$(foreach t,$(UNIT_BINS:$(BUILD)/tests/%=%),$(eval $(call UNIT_RULE,$(t))))
