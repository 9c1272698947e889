/*
 * collect — turns one sampler record into one stack of the profile:
 *
 *   thread TID (NAME) ; native frames root → leaf (fp chain or DWARF unwind of the stack copy,
 *   symbolised through proc) ; kernel frames root → leaf (with --kernel)
 *
 * An off-CPU record (SAMPLE_F_OFFCPU) gets its state frame above its Python frames and waits,
 * in offcpu.c, for the wake record that weighs it.
 *
 * It keeps one proc handle per target process and one thread frame per thread.
 */
#ifndef PYEBPF_COLLECT_H
#define PYEBPF_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <regex.h>

#include "capture/sampler.h"
#include "collect/offcpu.h"
#include "profile/profile.h"
#include "python/pystack.h"
#include "sample.h"
#include "symbols/proc.h"
#include "util/stats.h"

#define COLLECT_MAX_DEPTH 256  /* native frames per sample */
#define COLLECT_MAX_PY    2048 /* Python frames per sample */

struct collect_opts {
    enum unwind_mode unwind;
    bool kernel;        /* add kernel frames */
    bool python;        /* attach to Python targets and merge their frames (pystack_open) */
    bool python_only;   /* Python frames only, no native ones */
    bool show_internal; /* keep interpreter-internal frames in the merge */
    bool verbose;       /* one note per target that is not Python */
    struct pystack_opts py;
    bool offcpu;              /* records may be off-CPU ones (SAMPLE_F_OFFCPU): name their
                                 states, read kernel symbols for that even without `kernel` */
    uint64_t sample_weight;   /* what one on-CPU sample adds to its stack (0: 1); --mode wall:
                                 its period in microseconds, the unit of off-CPU time */
    bool no_idle;             /* drop the stacks of idle threads (--no-idle) */
    enum sample_gil_mode gil; /* MARK: count whether each on-CPU sample was taken while its
                                 thread held the GIL (collect_gil_threads; --no-bpf: the holder
                                 is read once per tick, collect_python_tick); ONLY: keep only
                                 samples flagged SAMPLE_F_GIL_HELD (--mode gil) */
    const uint32_t *tids;     /* keep only these threads (ntids 0: every thread) */
    size_t ntids;
    const regex_t *thread_name; /* keep only threads whose name matches (NULL: every thread) */
};

struct collect_stats {
    uint64_t samples;                 /* records turned into stacks */
    uint64_t unwind_errors;           /* native unwind stopped early (no CFI, stack copy too short, bad) */
    uint64_t unwind_truncated;        /* hit COLLECT_MAX_DEPTH or a full kernel FP chain ([truncated] root) */
    uint64_t kernel_errors;           /* kernel stack missing for a sample in kernel mode */
    uint64_t copy_errors;             /* no stack copy in the record */
    uint64_t frames;                  /* native + kernel frames added */
    uint64_t unknown_frames;          /* frames with no symbol (printed as module+0xoff) */
    uint64_t proc_errors;             /* a record of a process that could not be opened */
    uint64_t threads;                 /* distinct threads seen */
    uint64_t stack_copy_bytes;        /* sum of copied stack bytes */
    uint64_t python_targets;          /* processes attached as Python */
    uint64_t python_samples;          /* samples with Python frames */
    uint64_t python_frames;           /* Python frames added */
    uint64_t python_frames_in_kernel; /* Python frames symbolised from in-kernel chains */
    uint64_t python_code_freed;       /* in-kernel frames whose code object was freed unnamed */
    uint64_t python_code_objects;     /* code objects named so far (their cache entries) */
    uint64_t python_read_errors;      /* pystack_read failed other than -ESRCH */
    uint64_t python_reads_reused;     /* samples that reused the read of the record before */
    uint64_t python_reads_remote;     /* samples whose stack was read at the drain and had frames */
    uint64_t python_reads_late;       /* ... and came too late: Python frames left out */
    uint64_t python_attach_pending;   /* targets that may still become Python (attach retried) */
    uint64_t merge_errors;            /* native eval-loop frames and Python groups disagreed */
    uint64_t frame_cache_hits;        /* native and kernel addresses answered by the frame cache */
    uint64_t frame_cache_misses;      /* ... symbolised and interned */
    uint64_t frame_cache_flushes;     /* caches emptied: the target's mappings or JIT regions changed */
    uint64_t sample_cache_hits;       /* records whose user frames a stack built before gave (scache.h) */
    uint64_t sample_cache_misses;     /* ... built frame by frame (records that could be remembered) */
    struct proc_stats proc;           /* summed over the targets (refreshes, files, CFI row cache, steps) */
    uint64_t gil_unknown;             /* --mode gil: samples left out, the GIL or the thread not known yet */
    uint64_t gil_checked;             /* opts.gil MARK: on-CPU samples that said whether their thread */
    uint64_t gil_held;                /* held the GIL, and those taken while it did (--no-bpf: ticks
                                         that sampled a thread, and those that sampled the holder) */
};

/* What is known of the targets' GIL (opts.gil MARK). */
enum collect_gil_state {
    COLLECT_GIL_UNKNOWN = 0, /* no Python target (yet), no GIL offsets for its version, or no
                                in-kernel Python reader to check samples with */
    COLLECT_GIL_NONE,        /* a free-threaded build: there is no GIL to hold */
    COLLECT_GIL_KNOWN,       /* samples say whether their thread held it */
};

/* One thread's samples that said whether it held the GIL, and those taken while it did. */
struct collect_gil_thread {
    uint32_t tid;
    uint32_t frame; /* its root frame, "thread TID (NAME)" */
    uint64_t checked, held;
};

struct collector;

int collect_open(struct collector **out, const struct collect_opts *o, struct profile *prof);
/* Records of this sampler may carry in-kernel Python chains: use them (pykernel), and hand what
 * pykernel says the kernel should learn (layouts, threads read remotely) to the sampler. Call
 * before the first record. */
int collect_set_sampler(struct collector *c, struct sampler *s);
/* Adds one record. Returns 1 when the record's thread was seen for the first time, 0 otherwise,
 * or a negative errno (-ENOMEM). */
int collect_sample(struct collector *c, const struct sample_event *ev, size_t len);
void collect_get_stats(const struct collector *c, struct collect_stats *out);
/* A thread came back onto a CPU (struct sample_wake): the stack it left with gets the time. */
void collect_wake(struct collector *c, const struct sample_wake *w);
/* Off-CPU counters (zero unless opts.offcpu). */
void collect_offcpu_stats(const struct collector *c, struct offcpu_stats *out);

/* One sample of thread `tid` of process `pid` from its Python frames alone (--no-bpf): thread
 * frame, Python frames root → leaf. Returns 1 when a sample was added, 0 when the thread has no
 * Python frames now (nothing added), -EAGAIN when `pid` is not (yet) attached as Python, or a
 * negative errno. */
int collect_python_sample(struct collector *c, pid_t pid, pid_t tid, const char *comm);

/* --no-bpf with opts.gil MARK: reads which thread of `pid` holds the GIL now, once per tick
 * before its threads are read (one remote call); the samples of the tick are counted against it.
 * 0, -EAGAIN when `pid` is not attached as Python yet, or -errno (the tick's samples are then
 * not counted). */
int collect_python_tick(struct collector *c, pid_t pid);

/* collect/gil.c: what is known of the GIL, and up to `max` threads with checked samples into
 * out (how many returned; the table's order). */
enum collect_gil_state collect_gil_state(const struct collector *c);
size_t collect_gil_threads(const struct collector *c, struct collect_gil_thread *out, size_t max);

/* Tries to attach to `pid` as Python now (also done on its first samples). 0 or -errno. */
int collect_python_attach(struct collector *c, pid_t pid);

/* The Python rows of --stats: python_targets ... merge_errors, pykernel's rows, pystack's rows of
 * the Python target with the most samples and reads_per_sample (its remote calls per profile
 * sample). */
void collect_python_stats(const struct collector *c, struct stats out);
/* The Python names of threads not named yet: the looks that are due (called after each drain:
 * a thread blocked from its first records on has no record to look at it again), or, `last`
 * (before the profile is written), one more look at each. Returns when the next look is due
 * (monotime_ns; UINT64_MAX: none). */
uint64_t collect_name_threads(struct collector *c, bool last);
void collect_close(struct collector *c);

#endif
