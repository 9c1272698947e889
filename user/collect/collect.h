/*
 * collect — turns one sampler record into one stack of the profile:
 *
 *   thread TID (comm) ; native frames root → leaf (fp chain or DWARF unwind of the stack copy,
 *   symbolised through proc) ; kernel frames root → leaf (with --kernel)
 *
 * It keeps one proc handle per target process and one thread frame per thread.
 */
#ifndef PYEBPF_COLLECT_H
#define PYEBPF_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "profile/profile.h"
#include "python/pystack.h"
#include "sample.h"
#include "symbols/proc.h"

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
    uint64_t python_read_errors;      /* pystack_read failed other than -ESRCH */
    uint64_t python_reads_reused;     /* samples that reused the read of the record before */
    uint64_t merge_errors;            /* native eval-loop frames and Python groups disagreed */
    uint64_t frame_cache_hits;        /* native and kernel addresses answered by the frame cache */
    uint64_t frame_cache_misses;      /* ... symbolised and interned */
    uint64_t frame_cache_flushes;     /* caches emptied: the target's mappings or JIT regions changed */
};

struct collector;

/* Sum over the targets' proc handles (refreshes, files opened, CFI row cache, steps). */
void collect_proc_stats(const struct collector *c, struct proc_stats *out);

int collect_open(struct collector **out, const struct collect_opts *o, struct profile *prof);
/* Records of this sampler may carry in-kernel Python chains: use them (pykernel), and teach
 * the sampler the threads read remotely. Call before the first record. */
struct sampler;
int collect_set_sampler(struct collector *c, struct sampler *s);
/* Adds one record. Returns 1 when the record's thread was seen for the first time, 0 otherwise,
 * or a negative errno (-ENOMEM). */
int collect_sample(struct collector *c, const struct sample_event *ev, size_t len);
void collect_stats(const struct collector *c, struct collect_stats *out);

/* One sample of thread `tid` of process `pid` from its Python frames alone (--no-bpf): thread
 * frame, Python frames root → leaf. Returns 1 when a sample was added, 0 when the thread has no
 * Python frames now (nothing added), -EAGAIN when `pid` is not (yet) attached as Python, or a
 * negative errno. */
int collect_python_sample(struct collector *c, pid_t pid, pid_t tid, const char *comm);

/* Tries to attach to `pid` as Python now (also done on its first samples). 0 or -errno. */
int collect_python_attach(struct collector *c, pid_t pid);

/* pystack_print_stats of the Python target with the most samples, then merge_errors and
 * python_frames_in_kernel. */
void collect_print_python_stats(const struct collector *c, FILE *f);
void collect_close(struct collector *c);

#endif
