/*
 * pylocals — the local variables of a thread's innermost Python frame, read from the target
 * without running any of its code (pylocals.c). CPython 3.13+, whose _Py_DebugOffsets describe
 * frames' locals, tuples, ints, floats and type names.
 */
#ifndef PYEBPF_PYLOCALS_H
#define PYEBPF_PYLOCALS_H

#include <stddef.h>
#include <sys/types.h>

#include "capture/remote.h"
#include "python/pyrt.h"

#define PYLOCALS_MAX 64 /* locals shown per frame */

struct pylocal {
    char name[64];
    char value[96]; /* repr of a small int, float, str, bool or None; "<TYPE>" otherwise */
};

/* The locals of the innermost Python frame of thread `tid` (name order: co_localsplusnames).
 * Returns how many, -ENOTSUP when the runtime does not describe them (before 3.13), -ESRCH when
 * `tid` has no Python frame, or -errno. Every read is bounded; none follows more than one
 * pointer from a value. */
int pylocals_read(const struct pyrt *rt, struct remote *r, pid_t tid, struct pylocal *out, size_t max);

#endif
