/*
 * sampler — the user-space half of the BPF sampler: opens the skeleton, sets its configuration,
 * loads it, opens one cpu-clock perf event per online CPU with the program attached, and drains
 * the ring buffer when woken (the ring half full) or on the caller's timer, handing each record
 * to a callback.
 *
 *   sampler_open() → sampler_add_target() ... → sampler_attach()
 *     → (sampler_wait() → sampler_poll()) ... → close
 */
#ifndef PYEBPF_SAMPLER_H
#define PYEBPF_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample.h"

struct sampler_opts {
    unsigned frequency;       /* Hz per CPU */
    uint32_t stack_copy;      /* bytes of user stack copied per sample; 0: none */
    bool kernel_stack;        /* record kernel stacks */
    bool user_fp_stack;       /* record the frame-pointer chain */
    bool children;            /* processes forked by a target become targets */
    bool launch;              /* targets may be added at their exec (sampler_add_pending) */
    uint32_t threads;         /* threads the targets have, when they cannot gain more targets
                                 (no children, no launch); 0: not known */
    bool prog_stats;          /* have the kernel time the program (global while sampling) */
    uint32_t py_frames;       /* Python frames read in the kernel per sample (cap, at most
                                 SAMPLE_PY_FRAMES_MAX); 0: SAMPLE_PY_FRAMES_DEFAULT */
    bool no_py_frames;        /* no in-kernel Python reader */
    size_t ring_size;         /* bytes, 0: chosen from frequency and record size */
    bool offcpu;              /* records of target threads leaving the CPU and coming back
                                 (sched_switch: SAMPLE_F_OFFCPU, then a struct sample_wake) */
    bool no_oncpu;            /* no perf events: off-CPU records only (--mode offcpu) */
    enum sample_gil_mode gil; /* MARK: every sample says whether its thread held the GIL
                                 (SAMPLE_F_GIL_HELD, _UNKNOWN: not known yet; top); ONLY: samples
                                 only of holders and of the not-known-yet (--mode gil) */
    bool verbose;             /* libbpf messages to stderr */
};

/* Called for each record; len is the record's size (header, stack copy, Python frames). A record whose flags
 * have SAMPLE_F_WAKE is a struct sample_wake (len says so too). Returns 1 when a sample record's thread is
 * new to the caller (with a stack copy, the sampler then bounds that thread's copies by the end of its stack
 * mapping: stackends.h), 0 otherwise; a negative value stops a poll. */
typedef int (*sampler_fn)(void *ctx, const struct sample_event *ev, size_t len);

/* What went wrong, for a message that names the cause; see sampler_strerror(). */
enum sampler_stage {
    SAMPLER_STAGE_NONE = 0,
    SAMPLER_STAGE_OPEN,   /* skeleton open (BTF, libbpf) */
    SAMPLER_STAGE_LOAD,   /* bpf(BPF_PROG_LOAD / MAP_CREATE) */
    SAMPLER_STAGE_PERF,   /* perf_event_open */
    SAMPLER_STAGE_ATTACH, /* attach the program to a perf event */
    SAMPLER_STAGE_MAP,    /* map update */
};

struct sampler_stats {
    uint64_t matched;             /* samples of targets seen in the kernel */
    uint64_t lost;                /* dropped: ring buffer full */
    uint64_t copy_err;            /* no stack copy */
    uint64_t copy_retry;          /* copy needed a smaller size */
    uint64_t reused;              /* dropped: the PID named another process than the target */
    uint64_t py_frames;           /* Python frames read in the kernel */
    uint64_t py_stale;            /* thread states found not to belong to their tid (dropped) */
    uint64_t py_broken;           /* in-kernel chains given up (read error, invalid frame) */
    uint64_t py_reads;            /* reads of frame memory by the in-kernel walk (windows, slices) */
    uint64_t py_misses;           /* windows that started below their mapping (read again shorter) */
    uint64_t py_idents;           /* code identities the walk took (frames unlike their callee) */
    uint64_t py_ident_reads;      /* its reads for them (a page, a block or a qualname's words) */
    uint64_t py_quals;            /* identities that folded in their qualname (no co_version) */
    uint64_t py_cframes;          /* _PyCFrame reads (3.11, 3.12) the stack copy did not hold */
    uint64_t stack_ends_set;      /* threads whose stack end was handed to the program */
    uint64_t stack_end_map_reads; /* /proc/PID/maps reads for them */
    uint64_t stack_ends_fixed;    /* stale stack ends learnt again (a reused tid) */
    uint64_t prog_runs;           /* program runs, every tick of every CPU (prog_stats) */
    uint64_t prog_time_ns;        /* their total run time (prog_stats) */
    uint64_t offcpu_switches;     /* target threads seen leaving the CPU (opts.offcpu) */
    uint64_t offcpu_lost;         /* their records or wake records dropped: ring buffer full */
    uint64_t offcpu_unseen;       /* switches back in the program missed (closed at the next out) */
    uint64_t gil_not_held;        /* --mode gil: samples dropped in the kernel, GIL not held */
    uint64_t offcpu_runs;         /* runs of the sched_switch program, every switch (prog_stats) */
    uint64_t offcpu_time_ns;      /* their total run time (prog_stats) */
};

struct sampler;

/* On failure *stage (may be NULL) tells which step failed. */
int sampler_open(struct sampler **out, const struct sampler_opts *o, sampler_fn fn, void *ctx,
                 enum sampler_stage *stage);
int sampler_add_target(struct sampler *s, pid_t tgid);
/* From now on samples of tgid count only while its process has this start time (clock ticks
 * since boot, /proc/PID/stat): a PID reused by another process is not sampled. */
int sampler_set_target_start(struct sampler *s, pid_t tgid, uint64_t start_ticks);
/* Makes tgid a target when it next calls exec (needs opts.launch). */
int sampler_add_pending(struct sampler *s, pid_t tgid);
/* In-kernel Python reader: the layout of process tgid's Python structures, and the thread
 * state of each of its threads (a stale one is dropped by the program itself). With `pthread`
 * (the thread's pthread_self(); 0: unknown) the thread's stack end is taught in the same update,
 * before its first sample (see stackends.h); else the sampler learns it from that sample, as for
 * every thread its callback says is new. */
int sampler_set_py_layout(struct sampler *s, pid_t tgid, const struct sample_pylayout *L);
int sampler_set_py_thread(struct sampler *s, pid_t tgid, pid_t tid, uint64_t tstate, uint64_t pthread);
/* Code object `code` of process tgid, with the identity its chains carry, has been named: its
 * chains no longer wake the consumer (SAMPLE_PY_UNNAMED). */
void sampler_py_named(struct sampler *s, pid_t tgid, uint64_t code, uint64_t ident);
/* The next record the consumer must see soon wakes it at once (once: that record disarms
 * it): a new thread's first, a chain with a code object not named yet, a thread of a Python
 * process with no thread state taught (SAMPLE_F_NEW_THREAD, SAMPLE_PY_UNNAMED,
 * SAMPLE_PY_UNTAUGHT). */
void sampler_arm_wake(struct sampler *s);
/* opts.gil not off: where process tgid's GIL is. */
int sampler_set_py_gil(struct sampler *s, pid_t tgid, const struct sample_pygil *g);
/* What the program does with the GIL holder (opts.gil). */
enum sample_gil_mode sampler_gil_mode(const struct sampler *s);
/* Python frames per sample the program reads at most (0: reader off). */
uint32_t sampler_py_frames(const struct sampler *s);
int sampler_attach(struct sampler *s);
/* Stops sampling (closes the perf events); records already in the ring stay readable, and
 * counters read afterwards are final. */
void sampler_detach(struct sampler *s);
/* Sleeps until the program wakes the consumer (the ring holds half its size), `also_fd` (-1:
 * none; a pidfd, say) becomes readable or `timeout_ns` passes. 1 when the program woke it, 2
 * when also_fd did, 0 on timeout, a negative errno (-EINTR for a signal). */
int sampler_wait(struct sampler *s, uint64_t timeout_ns, int also_fd);
/* Consumes every record now in the ring; returns their number or a negative errno. */
int sampler_poll(struct sampler *s);
int sampler_get_stats(struct sampler *s, struct sampler_stats *out);
unsigned sampler_ncpus(const struct sampler *s);
size_t sampler_ring_size(const struct sampler *s);
/* Stage of the last failure and the errno it had. */
enum sampler_stage sampler_failed_stage(const struct sampler *s);
void sampler_close(struct sampler *s);

/* One line naming the cause of a failure at `stage` with `err` (negative errno) and the rights
 * that fix it. */
const char *sampler_strerror(enum sampler_stage stage, int err, char *buf, size_t size);

#endif
