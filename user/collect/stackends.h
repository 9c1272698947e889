/*
 * stackends — where each thread's stack ends, learnt from the samples and handed to the sampler,
 * so that the in-kernel copy of a thread's stack top stops at the end of its stack mapping.
 *
 *   a new thread (not the main one: the kernel bounds it by mm->start_stack) → the end of the
 *     writable mapping holding its stack pointer, from the target's cached /proc/PID/maps
 *     (re-read only when sp falls outside them) → sampler_set_stack_end
 *   a copy bounded short of that mapping's end (the tid was reused by a thread on another
 *     stack) → the bound learnt again
 */
#ifndef PYEBPF_STACKENDS_H
#define PYEBPF_STACKENDS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/sampler.h"
#include "symbols/maps.h"

struct stackends {
    struct maps maps; /* of maps_pid */
    pid_t maps_pid;
    uint64_t set;       /* bounds given for new threads */
    uint64_t fixed;     /* stale bounds learnt again */
    uint64_t map_reads; /* /proc/PID/maps reads */
};

/* Zero-initialise a struct stackends before the first call. `fresh`: collect_sample found a new
 * thread in `ev`; `stack_size`: the copy size asked for. */
void stackends_learn(struct stackends *se, struct sampler *s, const struct sample_event *ev, bool fresh,
                     uint32_t stack_size);
void stackends_free(struct stackends *se);

#endif
