/*
 * merge — native + Python frames of one sample (see merge.h).
 */
#include "collect/merge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *path_base(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

int merge_init(struct merge *m, struct profile *prof, const char *interp_path,
               const struct pyeval_ranges *eval, bool show_internal)
{
    memset(m, 0, sizeof(*m));
    m->prof = prof;
    m->show_internal = show_internal;
    m->error_frame = -1;
    if (interp_path) {
        strncpy(m->interp, path_base(interp_path), sizeof(m->interp) - 1);
        /* "/usr/bin/python3.11 (deleted)" style suffixes never reach here: pyrt opens the file. */
    }
    if (eval)
        m->eval = *eval; /* none found: the symbol name alone */
    m->ncls = 1024;
    m->cls = calloc(m->ncls, 1);
    return m->cls ? 0 : -ENOMEM;
}

void merge_free(struct merge *m)
{
    free(m->cls);
    m->cls = NULL;
    m->ncls = 0;
}

/* Whether an unnamed interpreter frame "interp+0xOFF" lies in the eval loop's code. */
static bool in_eval(const struct merge *m, const char *name)
{
    size_t len = strlen(m->interp);
    unsigned long long off;
    char *end;

    if (!m->eval.n || strncmp(name, m->interp, len) || strncmp(name + len, "+0x", 3))
        return false;
    off = strtoull(name + len + 3, &end, 16);
    if (*end)
        return false;
    for (size_t i = 0; i < m->eval.n; i++)
        if (off >= m->eval.start[i] && off < m->eval.end[i])
            return true;
    return false;
}

static enum merge_class classify(const struct merge *m, const struct frame *f)
{
    /* no code object read (pycode: or none of a live frame) */
    if (f->kind == FRAME_PYTHON)
        return !f->file ? MERGE_C_UNREAD : MERGE_C_OTHER;
    if (f->kind == FRAME_JIT) {
        if (!strncmp(f->name, "py::jit:", 8))
            return MERGE_C_EXECUTOR;
        return strncmp(f->name, "py::", 4) ? MERGE_C_OTHER : MERGE_C_TRAMPOLINE;
    }
    if (f->kind != FRAME_NATIVE)
        return MERGE_C_OTHER;
    if (!strcmp(f->name, "_PyEval_EvalFrameDefault"))
        return MERGE_C_EVAL;
    if (m->interp[0] && f->file && !strcmp(path_base(f->file), m->interp))
        return in_eval(m, f->name) ? MERGE_C_EVAL : MERGE_C_INTERNAL;
    return MERGE_C_OTHER;
}

enum merge_class merge_classify(struct merge *m, uint32_t frame)
{
    if (frame >= m->ncls) {
        uint32_t n = m->ncls;
        uint8_t *c;

        while (n <= frame)
            n *= 2;
        c = realloc(m->cls, n);
        if (!c)
            return classify(m, &m->prof->frames[frame]);
        memset(c + m->ncls, 0, n - m->ncls);
        m->cls = c;
        m->ncls = n;
    }
    if (!m->cls[frame])
        m->cls[frame] = (uint8_t)(classify(m, &m->prof->frames[frame]) + 1);
    return (enum merge_class)(m->cls[frame] - 1);
}

/* The class of native[i] in this stack: a JIT executor run by the eval-loop frame right
 * root-ward of it is part of that eval-loop run (hidden like an internal frame); otherwise it is
 * an eval-loop frame itself. */
static enum merge_class class_at(struct merge *m, const uint32_t *native, size_t nn, size_t i)
{
    enum merge_class c = merge_classify(m, native[i]);

    if (c != MERGE_C_EXECUTOR)
        return c;
    return i + 1 < nn && merge_classify(m, native[i + 1]) == MERGE_C_EVAL ? MERGE_C_INTERNAL : MERGE_C_EVAL;
}

/* Whether a native frame of class c is shown. */
static bool keep(const struct merge *m, enum merge_class c)
{
    switch (c) {
    case MERGE_C_OTHER:
        return true;
    case MERGE_C_INTERNAL:
        return m->show_internal;
    default:
        return false;
    }
}

#define PUT(x)                                                                                               \
    do {                                                                                                     \
        if (n < max)                                                                                         \
            out[n++] = (x);                                                                                  \
    } while (0)

/* Whether a Python read can be grouped: a frame whose code object could not be read (a frame
 * caught while being set up) may hide an entry flag. */
static bool py_trusted(struct merge *m, const struct pystack_frame *py, size_t np)
{
    for (size_t i = 0; i < np; i++)
        if (merge_classify(m, py[i].frame) == MERGE_C_UNREAD)
            return false;
    return true;
}

int merge_stack(struct merge *m, const uint32_t *native, size_t nn, const struct pystack_frame *py, size_t np,
                unsigned pyflags, uint32_t *out, size_t max, bool *error)
{
    size_t n = 0, evals = 0, groups = 0, outer = 0, i, p = 0, skip_evals = 0, skip_groups = 0, j = 0;
    bool empty = false; /* the leaf-most group holds no Python frame (a leaf shim) */

    *error = false;
    for (i = 0; i < nn; i++)
        if (class_at(m, native, nn, i) == MERGE_C_EVAL) {
            outer = i;
            evals++;
        }
    if (!np && !evals) {
        /* Not in Python code (a C thread, start-up, shutdown): the native stack as it is. */
        for (i = 0; i < nn; i++)
            PUT(native[i]);
        return (int)n;
    }
    if ((pyflags & PYSTACK_BROKEN) || !py_trusted(m, py, np))
        np = 0; /* a chain that ended early may carry an entry flag where none belongs */
    else if ((pyflags & PYSTACK_LEAF_SHIM) && np)
        empty = true; /* read at the sample instant: the innermost eval-loop call, on its way out */
    groups = empty;
    for (i = 0; i < np; i++)
        if (py[i].entry)
            groups++;
    if (np && !py[np - 1].entry)
        groups++; /* truncated or broken: the root-most call is open */

    if (evals != groups && np && !py[np - 1].entry) {
        /* A partial read (truncated or broken chain) has no root to pair from: untrusted. */
        np = 0;
        groups = 0;
        empty = false;
    }
    if (evals != groups) {
        /* Pair from the root, where stacks last longest: the leaf-most surplus eval-loop frames
         * become markers, the leaf-most surplus Python groups are dropped (marker as leaf). */
        *error = true;
        m->merge_errors++;
        if (m->error_frame < 0)
            m->error_frame = profile_frame(m->prof, FRAME_OTHER, "[merge error]", NULL, 0);
        if (m->error_frame < 0)
            return (int)m->error_frame;
        if (evals > groups) {
            skip_evals = evals - groups;
        } else {
            skip_groups = groups - evals;
            PUT((uint32_t)m->error_frame);
            if (empty) {
                empty = false;
                skip_groups--;
            }
            for (; p < np && skip_groups; p++)
                if (py[p].entry)
                    skip_groups--;
        }
    } else {
        m->merged++;
    }
    for (i = 0; i < nn; i++) {
        enum merge_class c = class_at(m, native, nn, i);

        if (c == MERGE_C_EVAL) {
            if (j++ < skip_evals) {
                PUT((uint32_t)m->error_frame);
            } else if (empty) {
                empty = false; /* its Python frames are gone: it adds none */
            } else {
                for (; p < np; p++) {
                    PUT(py[p].frame);
                    if (py[p].entry) {
                        p++;
                        break;
                    }
                }
            }
            if (m->show_internal)
                PUT(native[i]); /* the caller of its Python frames */
            continue;
        }
        if (i > outer && !m->show_internal)
            break;
        if (keep(m, c))
            PUT(native[i]);
    }
    return (int)n;
}
