/*
 * taskdump.h — the one header shared by bpf/taskdump.bpf.c and user/capture/taskiter.c: what the task
 * iterator writes for each thread of the target when `pyebpf-sample dump` runs it once.
 *
 * The iterator's output (read(2) on the iterator's fd) is a run of
 *
 *   struct dump_task   the thread's scheduler state at the iterator's visit
 *   struct sample_event + ev_len - SAMPLE_HDR_SIZE bytes   the record the sampler would
 *                      write for it (sample.h): user registers, stack copy, kernel stack
 *
 * one pair per thread, in the kernel's thread order. ustack and the Python chain are never
 * filled (the kernel walks another task's user frame-pointer chain for no one; Python frames
 * are read by user space).
 */
#ifndef PYEBPF_TASKDUMP_H
#define PYEBPF_TASKDUMP_H

#include "sample.h"

#define DUMP_TASK_MAGIC 0x6b736174u /* "task": a reader checks it to stay in step */

/* flags */
#define DUMP_TASK_ON_CPU                                                                                     \
    (1u << 0)                       /* running on a CPU at the visit: its saved user registers               \
                                       are stale, the record holds no registers nor copy */
#define DUMP_TASK_NO_USER (1u << 1) /* no user memory (a kernel thread, or exiting) */

struct dump_task {
    __u32 magic;
    __u32 ev_len;   /* bytes of the sample_event that follows, its stack copy included */
    __u32 state;    /* task->__state | task->exit_state (the bits /proc's state letter comes from) */
    __u32 flags;    /* DUMP_TASK_* */
    __u64 time_ns;  /* CLOCK_MONOTONIC of the visit */
    __u64 switches; /* context switches so far (nvcsw + nivcsw): a later count that differs
                       says the thread ran since the visit */
};

_Static_assert(sizeof(struct dump_task) == 32, "dump_task layout");

#endif
