/*
 * merge — one sample's native frames and Python frames into one stack (leaf first).
 *
 *   native, leaf → root:   compare_cb  _PyEval_EvalFrameDefault  _PyFunction_Vectorcall  ffi_closure
 *                           qsort  ffi_call  PyCFuncPtr_call  _PyObject_MakeTpCall
 *                           _PyEval_EvalFrameDefault  py::main:/x.py  PyEval_EvalCode  Py_RunMain  _start
 *   python, leaf → root:   compare (E)  caller  main (E)            (E: entry flag)
 *
 *   merged, leaf → root:   compare_cb  compare  ffi_closure  qsort  ffi_call  PyCFuncPtr_call
 *                           caller  main
 *
 * The rule (docs/python-frames.md, "Merging with native frames"):
 *  - each eval-loop frame (`_PyEval_EvalFrameDefault`, or a `module+0xOFF` frame inside the
 *    loop's split-off body, see pyeval.h) is replaced by the Python frames of one eval-loop
 *    call: the next Python frames up to and including the first with the entry flag;
 *  - frames in the interpreter's own module (the python executable or libpython that holds
 *    _PyRuntime) are internal and hidden, unless show_internal;
 *  - `py::` JIT frames (pyebpf_jit trampolines) are dropped: each stands for the entry frame of
 *    the eval-loop call it starts, which is already there;
 *  - frames root-ward of the outermost eval-loop frame (process or thread start-up) are hidden
 *    unless show_internal;
 *  - extension, libc, JIT (non-py::) frames stay.
 * Mismatch — the number of eval-loop frames and of Python groups differ (a truncated read's
 * open root-most group counts), or the Python read holds an unreadable frame (its grouping is
 * not trusted: it counts as no Python frames): merge_errors counts it, nothing is glued by
 * guesswork; a partial read (its root-most group open) that does not match is not trusted
 * either. Frames and groups are paired from the root (the part of a stack that lasts longest
 * between the sample and the read); each leaf-most surplus eval-loop frame becomes a
 * "[merge error]" frame, leaf-most surplus Python groups are left out and "[merge error]" is
 * added as the leaf. No Python frames and no eval-loop frame: the native frames as they are.
 */
#ifndef PYEBPF_MERGE_H
#define PYEBPF_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "python/pyeval.h"
#include "python/pystack.h"

struct merge {
    struct profile *prof;
    char interp[256]; /* basename of the interpreter's module, "" when unknown */
    bool show_internal;
    uint8_t *cls; /* per profile frame index: MERGE_C_* + 1, 0 = not classified yet */
    uint32_t ncls;
    int64_t error_frame; /* "[merge error]", interned on first use */
    uint64_t merge_errors;
    uint64_t merged;           /* samples merged without error */
    struct pyeval_ranges eval; /* eval-loop code without a symbol (split parts), file offsets */
};

enum merge_class {
    MERGE_C_OTHER = 0,  /* kept */
    MERGE_C_EVAL,       /* _PyEval_EvalFrameDefault */
    MERGE_C_INTERNAL,   /* interpreter module */
    MERGE_C_TRAMPOLINE, /* py:: JIT frame */
    MERGE_C_EXECUTOR,   /* py::jit:executor (CPython's JIT): an eval-loop frame of its own unless
                           the frame root-ward of it is the eval loop that runs it */
    MERGE_C_UNREAD,     /* a Python frame whose code object was not read, or a shim's: its read
                           cannot be grouped (it may hide an entry flag) */
};

/* interp_path: the interpreter's module path (pyrt path), or NULL; eval: where its eval loop's
 * code lies (the runtime's, pyrt.h), or NULL. */
int merge_init(struct merge *m, struct profile *prof, const char *interp_path,
               const struct pyeval_ranges *eval, bool show_internal);
void merge_free(struct merge *m);

enum merge_class merge_classify(struct merge *m, uint32_t frame);

/* native[0..nn) and py[0..np) leaf first, pyflags the PYSTACK_* flags of the read (a BROKEN
 * read is never paired); writes at most `max` frames leaf first into out.
 * Returns their number, or -ENOMEM. *error set when the sample was a mismatch. */
int merge_stack(struct merge *m, const uint32_t *native, size_t nn, const struct pystack_frame *py, size_t np,
                unsigned pyflags, uint32_t *out, size_t max, bool *error);

#endif
