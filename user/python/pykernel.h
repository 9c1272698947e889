/*
 * pykernel — the user-space side of the in-kernel Python reader (bpf/sample.bpf.c, py_capture).
 *
 *   attach:  pyrt layout ──pykernel_layout──▶ struct sample_pylayout ──▶ map py_layouts[tgid]
 *   sample:  record with a chain (SAMPLE_PY_CAPTURED) ──▶ raw frames ──▶ pystack_symbolize
 *                                                         (code objects only, cached)
 *            record without one (thread unknown to the kernel, stale, broken)
 *                ──▶ pystack_read (batched remote reads), then the thread's state from
 *                    pystack's tables is taught (map threads[tid].tstate), so the next samples of the
 *                    thread come with their chain
 *
 * A chain with a code object the kernel has not been told is named (SAMPLE_PY_UNNAMED) has each
 * of its code objects told once named, so only new code wakes the collector (sample.h).
 *
 * pykernel decodes and decides what the kernel should learn; it writes no map itself: each lesson
 * goes through the teacher it was opened with (the collector hands them to the sampler). A thread
 * is taught once; the program clears a thread state that no longer names its tid (the
 * thread ended), and the next fallback teaches it again.
 */
#ifndef PYEBPF_PYKERNEL_H
#define PYEBPF_PYKERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/sampler.h"
#include "python/pyrt.h"
#include "python/pystack.h"
#include "sample.h"
#include "util/stats.h"

struct pykernel;

/* Converts a runtime layout into the program's; -ENOTSUP when a slice would exceed
 * SAMPLE_PY_SLICE_MAX or an 8-byte field is not 8-byte aligned in its slice. */
int pykernel_layout(const struct pyrt_layout *in, struct sample_pylayout *out);

/* The chain a record carries, leaf first, as pystack_symbolize input. Returns the number of
 * frames (up to max; *truncated also set when max cut it), -ENOENT when the record has no chain
 * (check ev->py_flags for why), -EINVAL when it does not fit in len. */
int pykernel_decode(const struct sample_event *ev, size_t len, struct pystack_raw *out, size_t max,
                    bool *truncated);

/* Whether record ev carries a usable chain (pykernel_decode would not return -ENOENT). */
static inline bool pykernel_has_chain(const struct sample_event *ev)
{
    return (ev->py_flags & SAMPLE_PY_CAPTURED) && !(ev->py_flags & (SAMPLE_PY_STALE | SAMPLE_PY_BROKEN));
}

/* Where the lessons go: a process's layout (map py_layouts), then each thread's state (map
 * threads). 0, or a negative errno when it was not taught (a refused layout is not offered
 * again). */
struct pykernel_teacher {
    int (*layout)(void *arg, pid_t pid, const struct sample_pylayout *L);
    /* `pthread`: the thread's pthread_self() when known (0: not), a hint to its stack's end */
    int (*tstate)(void *arg, pid_t pid, pid_t tid, uint64_t tstate, uint64_t pthread);
    int (*gil)(void *arg, pid_t pid, const struct sample_pygil *g); /* --mode gil; NULL otherwise */
    /* A code object of a chain the kernel flagged SAMPLE_PY_UNNAMED has been named. */
    void (*named)(void *arg, pid_t pid, uint64_t code, uint64_t ident);
    void *arg;
};

/* `t` (copied) may be NULL: the kernel reads no Python frames, nothing is taught. */
int pykernel_open(struct pykernel **out, const struct pykernel_teacher *t);
void pykernel_close(struct pykernel *pk);

/* The Python frames of record ev (process ev->pid, read through ps), leaf first, like
 * pystack_read: the kernel's chain when the record has one, else a remote read (and the thread
 * is taught to the kernel). *in_kernel (may be NULL) says which. A chain is named later than it
 * ran, from the code objects' identities of the sample instant: one freed meanwhile is named
 * PYSTACK_FREED, never read again from the stack as it is now. */
int pykernel_frames(struct pykernel *pk, struct pystack *ps, const struct sample_event *ev, size_t len,
                    struct pystack_frame *out, size_t max, unsigned *flags, bool *in_kernel);

/* Counts a record whose chain was not named here but by a caller that remembered how the same
 * chain was named (pykernel_frames with PYSTACK_FINAL), as pykernel_frames counts it here and
 * in ps: `frames` Python frames in the kernel, `truncated` as pykernel_decode said. */
void pykernel_count_cached(struct pykernel *pk, struct pystack *ps, size_t frames, bool truncated);

/* The process's layout and every thread it has now into the kernel, so that their first samples
 * carry their chain (a thread taught only at its first fallback read has those first samples
 * paired with a read made later, at the drain) and, with each thread's pthread_self() as the
 * hint to its stack's end, stack copies bounded by that end (not copies halved until they fit,
 * each try a faulting read in the target). Threads started later are taught at their first
 * sample. A no-op when nothing is taught (pk NULL, or opened without a teacher). */
void pykernel_teach_threads(struct pykernel *pk, struct pystack *ps);

/* The rows for --stats (python_frames_in_kernel is the collector's): python_samples_in_kernel,
 * python_kernel_fallbacks, python_threads_in_kernel, python_kernel_stale, python_kernel_broken,
 * python_kernel_truncated, and with the program's counters `kc` (may be NULL)
 * python_kernel_reads (user memory reads of the walk), python_kernel_reads_per_sample,
 * python_kernel_window_misses, python_kernel_idents_per_sample (code identities taken),
 * python_kernel_ident_reads_per_sample (reads of code-object memory for them),
 * python_kernel_qualname_reads_per_sample, python_kernel_cframe_reads_per_sample. */
void pykernel_stats(const struct pykernel *pk, const struct sampler_stats *kc, struct stats out);

#endif
