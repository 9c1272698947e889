/*
 * stackends — where each thread's stack ends, learnt from the samples, so that the in-kernel copy
 * of a thread's stack top stops at the end of its stack mapping (the sampler puts each bound into
 * the program's map).
 *
 *   a Python thread when it is taught (not the main one: the kernel bounds it by
 *     mm->start_stack) → the end of the writable mapping holding its pthread_self(): glibc keeps
 *     a thread's descriptor at the top of the mapping that holds its stack
 *   a new thread → the end of the writable mapping holding its stack pointer, from the target's
 *     cached /proc/PID/maps (re-read only when the address falls outside them), unless its first
 *     copy already stopped there
 *   a copy bounded short of that mapping's end (the tid was reused by a thread on another
 *     stack) → the bound learnt again
 */
#ifndef PYEBPF_STACKENDS_H
#define PYEBPF_STACKENDS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample.h"
#include "util/maps.h"

struct stackends {
    struct maps maps; /* of maps_pid */
    pid_t maps_pid;
    uint64_t set;       /* bounds given for new threads */
    uint64_t fixed;     /* stale bounds learnt again */
    uint64_t map_reads; /* /proc/PID/maps reads */
};

enum stackends_bound { STACKENDS_NONE, STACKENDS_NEW, STACKENDS_FIX };

/* Zero-initialise a struct stackends before the first call. `fresh`: the record's thread is new
 * to the collector; `stack_size`: the copy size asked for. Returns what ev->tid's bound should
 * become (*end), or STACKENDS_NONE; stackends_set counts one that was put into the kernel. */
enum stackends_bound stackends_learn(struct stackends *se, const struct sample_event *ev, bool fresh,
                                     uint32_t stack_size, uint64_t *end);
/* The bound of thread tid of process pid from its pthread_self() (0: none known). */
enum stackends_bound stackends_hint(struct stackends *se, pid_t pid, pid_t tid, uint64_t pthread,
                                    uint64_t *end);
void stackends_set(struct stackends *se, enum stackends_bound b);
void stackends_free(struct stackends *se);

#endif
