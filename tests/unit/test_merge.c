/* Unit tests for user/collect/merge.c: the merge rule on hand-made stacks (leaf first). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "collect/merge.h"

#define LIB "/usr/lib/libpython3.12.so.1.0"

struct fx {
    struct profile p;
    struct merge m;
};

static uint32_t nat(struct profile *p, const char *name, const char *mod)
{
    int64_t f = profile_frame(p, FRAME_NATIVE, name, mod, 0);

    assert_true(f >= 0);
    return (uint32_t)f;
}

static struct pystack_frame py(struct profile *p, const char *name, int line, bool entry)
{
    int64_t f = profile_frame(p, FRAME_PYTHON, name, "/x.py", (uint32_t)line);

    assert_true(f >= 0);
    return (struct pystack_frame){.frame = (uint32_t)f, .entry = entry};
}

/* The merged stack as folded text, root first. */
static void text(struct profile *p, const uint32_t *out, int n, char *buf, size_t size)
{
    size_t len = 0;

    buf[0] = 0;
    for (int i = n; i-- > 0;) {
        char lab[256];

        profile_frame_label(p, out[i], lab, sizeof(lab));
        len += (size_t)snprintf(buf + len, size - len, "%s%s", lab, i ? ";" : "");
    }
}

/* Scenarios over one native stack, leaf first:
 *   compare_cb ← eval ← _PyFunction_Vectorcall ← ffi_closure ← qsort ← ffi_call ←
 *   _PyObject_MakeTpCall ← eval ← py::main trampoline ← PyEval_EvalCode ← __libc_start_main
 * leaf_at: index of the first native frame kept (2 = the sample was taken in ffi_closure, before
 * the callback's eval-loop call); with_compare: whether the Python read holds compare. */
static void run(bool show_internal, size_t leaf_at, bool with_compare, bool unreadable, const char *want,
                bool want_error)
{
    struct profile p;
    struct merge m;
    uint32_t native[16], out[64];
    struct pystack_frame pf[8];
    char buf[1024];
    size_t nn = 0, np = 0;
    bool err;
    int n;

    assert_int_equal(profile_init(&p), 0);
    assert_int_equal(merge_init(&m, &p, LIB, NULL, show_internal), 0);
    native[nn++] = nat(&p, "compare_cb", "/x/ext.so");
    native[nn++] = nat(&p, "_PyEval_EvalFrameDefault", LIB);
    native[nn++] = nat(&p, "_PyFunction_Vectorcall", LIB);
    native[nn++] = nat(&p, "ffi_closure", "/usr/lib/libffi.so.8");
    native[nn++] = nat(&p, "qsort", "/usr/lib/libc.so.6");
    native[nn++] = nat(&p, "ffi_call", "/usr/lib/libffi.so.8");
    native[nn++] = nat(&p, "_PyObject_MakeTpCall", LIB);
    native[nn++] = nat(&p, "_PyEval_EvalFrameDefault", LIB);
    native[nn++] = (uint32_t)profile_frame(&p, FRAME_JIT, "py::main:/x.py", NULL, 0);
    native[nn++] = nat(&p, "PyEval_EvalCode", LIB);
    native[nn++] = nat(&p, "__libc_start_main", "/usr/lib/libc.so.6");
    if (with_compare)
        pf[np++] = py(&p, "compare", 3, true);
    if (unreadable)
        pf[np++] =
            (struct pystack_frame){(uint32_t)profile_frame(&p, FRAME_PYTHON, "<unreadable>", NULL, 0), false};
    pf[np++] = py(&p, "caller", 7, false);
    pf[np++] = py(&p, "main", 9, true);
    n = merge_stack(&m, native + leaf_at, nn - leaf_at, pf, np, 0, out, 64, &err);
    assert_true(n > 0);
    text(&p, out, n, buf, sizeof(buf));
    assert_string_equal(buf, want);
    assert_int_equal(err, want_error);
    assert_int_equal(m.merge_errors, want_error ? 1 : 0);
    merge_free(&m);
    profile_free(&p);
}

static void test_merge_default(void **st)
{
    (void)st;
    run(false, 0, true, false,
        "main (/x.py:9);caller (/x.py:7);ffi_call;qsort;ffi_closure;compare (/x.py:3);compare_cb", false);
    /* sampled in ffi_closure, read in ffi_closure */
    run(false, 3, false, false, "main (/x.py:9);caller (/x.py:7);ffi_call;qsort;ffi_closure", false);
}

static void test_merge_show_internal(void **st)
{
    (void)st;
    run(true, 0, true, false,
        "__libc_start_main;PyEval_EvalCode;_PyEval_EvalFrameDefault;main (/x.py:9);caller (/x.py:7);"
        "_PyObject_MakeTpCall;ffi_call;qsort;ffi_closure;_PyFunction_Vectorcall;_PyEval_EvalFrameDefault;"
        "compare (/x.py:3);compare_cb",
        false);
}

static void test_merge_mismatch(void **st)
{
    (void)st;
    /* Sampled in ffi_closure (one eval-loop frame), read inside compare (two groups): compare is
     * left out, the leaf says so. */
    run(false, 3, true, false, "main (/x.py:9);caller (/x.py:7);ffi_call;qsort;ffi_closure;[merge error]",
        true);
    /* Sampled inside compare (two eval-loop frames), read after it returned (one group). */
    run(false, 0, false, false,
        "main (/x.py:9);caller (/x.py:7);ffi_call;qsort;ffi_closure;[merge error];compare_cb", true);
    /* A frame being set up could not be read: the grouping is not trusted. */
    run(false, 0, true, true, "[merge error];ffi_call;qsort;ffi_closure;[merge error];compare_cb", true);
}

static void test_merge_no_python(void **st)
{
    struct profile p;
    struct merge m;
    uint32_t native[2], out[4];
    bool err;

    (void)st;
    assert_int_equal(profile_init(&p), 0);
    assert_int_equal(merge_init(&m, &p, LIB, NULL, false), 0);
    native[0] = nat(&p, "PyObject_Malloc", LIB);
    native[1] = nat(&p, "main", "/usr/bin/x");
    assert_int_equal(merge_stack(&m, native, 2, NULL, 0, 0, out, 4, &err), 2);
    assert_false(err);
    assert_int_equal(out[0], native[0]);
    assert_int_equal(merge_classify(&m, native[0]), MERGE_C_INTERNAL);
    assert_int_equal(merge_classify(&m, native[1]), MERGE_C_OTHER);
    /* eval-loop frames but no Python frames: a mismatch, counted */
    native[0] = nat(&p, "_PyEval_EvalFrameDefault", LIB);
    assert_int_equal(merge_classify(&m, native[0]), MERGE_C_EVAL);
    /* the eval-loop frame becomes the marker; root-ward of it is start-up, hidden */
    assert_int_equal(merge_stack(&m, native, 2, NULL, 0, 0, out, 4, &err), 1);
    assert_true(err);
    assert_int_equal(out[0], (uint32_t)m.error_frame);
    assert_int_equal(m.merge_errors, 1);
    merge_free(&m);
    profile_free(&p);
}

static void test_merge_truncated(void **st)
{
    struct profile p;
    struct merge m;
    uint32_t native[3], out[8];
    struct pystack_frame pf[2];
    bool err;

    (void)st;
    assert_int_equal(profile_init(&p), 0);
    assert_int_equal(merge_init(&m, &p, LIB, NULL, false), 0);
    native[0] = nat(&p, "_PyEval_EvalFrameDefault", LIB);
    native[1] = nat(&p, "Py_RunMain", LIB);
    native[2] = nat(&p, "_start", "/usr/bin/python3");
    pf[0] = py(&p, "rec", 2, false);
    pf[1] = py(&p, "rec", 2, false); /* depth cap: the root-most group is open */
    assert_int_equal(merge_stack(&m, native, 3, pf, 2, 0, out, 8, &err), 2);
    assert_false(err);
    assert_int_equal(out[0], pf[0].frame);
    /* a partial read that does not match: not paired from the root (it has none) */
    native[1] = nat(&p, "_PyEval_EvalFrameDefault", LIB);
    native[2] = native[1];
    pf[0].entry = true;
    assert_int_equal(merge_stack(&m, native, 3, pf, 2, 0, out, 8, &err), 3);
    assert_true(err);
    for (int i = 0; i < 3; i++)
        assert_int_equal(out[i], (uint32_t)m.error_frame);
    /* a chain that ended early (broken) is never paired, even when the counts agree */
    pf[0].entry = false;
    assert_int_equal(merge_stack(&m, native, 2, pf, 2, PYSTACK_BROKEN, out, 8, &err), 2);
    assert_true(err);
    assert_int_equal(out[0], (uint32_t)m.error_frame);
    merge_free(&m);
    profile_free(&p);
}

/* -- Leaf shims --------------------------------------------------------------------------
 *
 * A chain whose leaf-most frame is an eval-loop entry shim
 * (PYSTACK_LEAF_SHIM, set by the in-kernel path). CPython 3.12+ links one shim frame per
 * eval-loop call; when the call's entry frame returns, the shim is the leaf of the chain until the
 * loop unlinks it on its way out (`_PyEval_FrameClearAndPop` of the entry frame runs then). The
 * innermost eval-loop frame of the native stack is that call and has no Python frame: an empty
 * group, not a mismatch. In CPython 3.15's ctypes qsort workload it was 30 of 72 merge errors.
 */

/* Native, leaf first, from index leaf_at:
 *   _PyEval_FrameClearAndPop ← eval ← _PyFunction_Vectorcall ← ffi_closure ← qsort ← ffi_call ←
 *   _PyObject_MakeTpCall ← eval ← PyEval_EvalCode ← __libc_start_main
 * Python: [compare (entry)] caller main (entry). */
static void run_shim(bool show_internal, size_t leaf_at, bool with_compare, unsigned flags, const char *want,
                     bool want_error)
{
    struct profile p;
    struct merge m;
    uint32_t native[16], out[64];
    struct pystack_frame pf[8];
    char buf[1024];
    size_t nn = 0, np = 0;
    bool err;
    int n;

    assert_int_equal(profile_init(&p), 0);
    assert_int_equal(merge_init(&m, &p, LIB, NULL, show_internal), 0);
    native[nn++] = nat(&p, "_PyEval_FrameClearAndPop", LIB);
    native[nn++] = nat(&p, "_PyEval_EvalFrameDefault", LIB);
    native[nn++] = nat(&p, "_PyFunction_Vectorcall", LIB);
    native[nn++] = nat(&p, "ffi_closure", "/usr/lib/libffi.so.8");
    native[nn++] = nat(&p, "qsort", "/usr/lib/libc.so.6");
    native[nn++] = nat(&p, "ffi_call", "/usr/lib/libffi.so.8");
    native[nn++] = nat(&p, "_PyObject_MakeTpCall", LIB);
    native[nn++] = nat(&p, "_PyEval_EvalFrameDefault", LIB);
    native[nn++] = nat(&p, "PyEval_EvalCode", LIB);
    native[nn++] = nat(&p, "__libc_start_main", "/usr/lib/libc.so.6");
    if (with_compare)
        pf[np++] = py(&p, "compare", 3, true);
    pf[np++] = py(&p, "caller", 7, false);
    pf[np++] = py(&p, "main", 9, true);
    n = merge_stack(&m, native + leaf_at, nn - leaf_at, pf, np, flags, out, 64, &err);
    assert_true(n > 0);
    text(&p, out, n, buf, sizeof(buf));
    assert_string_equal(buf, want);
    assert_int_equal(err, want_error);
    assert_int_equal(m.merge_errors, want_error ? 1 : 0);
    assert_int_equal(m.merged, want_error ? 0 : 1);
    merge_free(&m);
    profile_free(&p);
}

static void test_leaf_shim_pairs_empty(void **st)
{
    (void)st;
    /* The callback's eval-loop call on its way out: no Python frame of its own. */
    run_shim(false, 0, false, PYSTACK_LEAF_SHIM, "main (/x.py:9);caller (/x.py:7);ffi_call;qsort;ffi_closure",
             false);
    run_shim(
        true, 0, false, PYSTACK_LEAF_SHIM,
        "__libc_start_main;PyEval_EvalCode;_PyEval_EvalFrameDefault;main (/x.py:9);caller (/x.py:7);"
        "_PyObject_MakeTpCall;ffi_call;qsort;ffi_closure;_PyFunction_Vectorcall;_PyEval_EvalFrameDefault;"
        "_PyEval_FrameClearAndPop",
        false);
    /* Without the shim seen, the same stacks stay a mismatch (a read of another instant). */
    run_shim(false, 0, false, 0, "main (/x.py:9);caller (/x.py:7);ffi_call;qsort;ffi_closure;[merge error]",
             true);
}

static void test_leaf_shim_mismatch(void **st)
{
    (void)st;
    /* A leaf shim but no eval-loop frame for it (sampled in ffi_closure): the empty group is the
     * leaf-most surplus, left out; the leaf says so. */
    run_shim(false, 3, false, PYSTACK_LEAF_SHIM,
             "main (/x.py:9);caller (/x.py:7);ffi_call;qsort;ffi_closure;[merge error]", true);
    /* A leaf shim and compare's group as well: three groups for two eval-loop frames, paired from
     * the root; the empty group is the leaf-most surplus. */
    run_shim(false, 0, true, PYSTACK_LEAF_SHIM,
             "main (/x.py:9);caller (/x.py:7);ffi_call;qsort;ffi_closure;compare (/x.py:3);[merge error]",
             true);
    /* A broken chain is never paired, shim or not. */
    run_shim(false, 0, false, PYSTACK_LEAF_SHIM | PYSTACK_BROKEN,
             "[merge error];ffi_call;qsort;ffi_closure;[merge error]", true);
}

/* The flag does not change a read that already pairs: compare's group is the leaf's. */
static void test_no_shim_unchanged(void **st)
{
    (void)st;
    run_shim(false, 0, true, 0,
             "main (/x.py:9);caller (/x.py:7);ffi_call;qsort;ffi_closure;compare (/x.py:3)", false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_default),      cmocka_unit_test(test_merge_show_internal),
        cmocka_unit_test(test_merge_mismatch),     cmocka_unit_test(test_merge_no_python),
        cmocka_unit_test(test_merge_truncated),    cmocka_unit_test(test_leaf_shim_pairs_empty),
        cmocka_unit_test(test_leaf_shim_mismatch), cmocka_unit_test(test_no_shim_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
