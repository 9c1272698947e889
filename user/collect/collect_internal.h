/*
 * collect's state, shared by the files of the module (collect.c: one record → one stack;
 * collect_target.c: the targets and their Python side; gil.c: the GIL holder counts; see
 * collect.h). Nothing outside them
 * includes it.
 */
#ifndef PYEBPF_COLLECT_INTERNAL_H
#define PYEBPF_COLLECT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect/collect.h"
#include "collect/fcache.h"
#include "collect/merge.h"
#include "collect/native.h"
#include "collect/scache.h"
#include "collect/threads.h"
#include "python/pykernel.h"

enum py_state { PY_UNTRIED, PY_ATTACHED, PY_RETRY, PY_NONE };

/* What the collector keeps per sampled process (target.h finds and checks the one named). */
struct collect_target {
    pid_t pid;
    struct proc *proc; /* NULL when proc_open failed */
    enum py_state py;
    struct pystack *ps;
    struct merge merge;
    struct fcache fc; /* user address -> frame, valid for one proc_generation */
    struct scache sc; /* raw stack -> the sample's user frames, the same */
    uint64_t py_first_ns, py_next_ns;
    uint64_t py_delay_ns; /* the last wait for a runtime found but not ready (0: none yet) */
    uint64_t py_gen;      /* proc_generation at the last failed attach: a change retries at once */
    uint64_t py_samples;
    uint64_t gil_holder; /* --no-bpf: the thread state holding the GIL at this tick (0: none) */
    bool gil_read;       /* ... read at this tick (collect_python_tick) */
    bool gil_sampled;    /* a thread of this tick was sampled */
    bool gil_matched;    /* ... and one of them was the holder */
    char py_err[256];    /* why the last attach failed */
};

/* Frames that stand for no address; interned once (frame indices never change). */
enum marker { MARK_TRUNCATED, MARK_NATIVE, MARK_KERNEL, MARK_UNKNOWN, MARK_N };

struct collector {
    struct collect_opts opts;
    struct profile *prof;
    struct ksyms *ksyms;
    struct elfsym_cache *elf; /* ELF files of every target, shared (a libc parsed once) */
    struct collect_target *targets;
    size_t ntargets, cap_targets;
    struct threads threads;
    struct collect_stats st;
    struct native_stats nst;
    uint32_t *frames;                     /* scratch: one stack */
    uint64_t *ips;                        /* scratch: native unwind */
    bool truncated;                       /* the last unwind stopped at a depth limit */
    bool py_late;                         /* the last sample's Python frames were left out (late) */
    uint32_t *native;                     /* scratch: native frames, leaf first */
    uint32_t *merged;                     /* scratch: merged user frames, leaf first */
    struct pystack_frame *py;             /* scratch: Python frames, leaf first */
    struct pystack_raw *raw;              /* scratch: a record's chain as captured (sample cache key) */
    struct sampler *sampler;              /* NULL: records carry no in-kernel chains (--no-bpf) */
    struct pykernel *pk;                  /* in-kernel Python chains (NULL: remote reads only) */
    struct fcache kfc;                    /* kernel address -> frame (kallsyms is read once: generation 0) */
    uint32_t marker[MARK_N];              /* frame + 1 of each marker, 0 until interned */
    uint32_t *kern;                       /* scratch: kernel frames, leaf first */
    struct offcpu *off;                   /* off-CPU stacks waiting for their time (opts.offcpu) */
    uint32_t state_frame[OFFCPU_NSTATES]; /* frame + 1 of each state, 0 until interned */
    /* The read now in c->py: records drained together (one ring poll) stand for instants a few
     * milliseconds apart, but the Python stack is read when they are drained, so a second
     * record of the same thread within READ_REUSE_NS gets the same read again. */
    struct collect_target *last_t;
    uint32_t last_tid;
    size_t last_np;
    unsigned last_flags;
    uint64_t last_ns;
};

/* collect_target.c */
struct collect_target *collect_find_target(struct collector *c, pid_t pid);
void collect_attach_python(struct collector *c, struct collect_target *t);
void collect_python_note(const struct collector *c, const struct collect_target *t);

/* gil.c: one sample of thread `tid`, taken while it held the GIL or not (opts.gil MARK; the
 * caller counts the process's share). */
void collect_gil_count(struct collector *c, uint32_t tid, bool held);

#endif
