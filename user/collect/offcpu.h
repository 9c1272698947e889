/*
 * offcpu — the time a thread spends off the CPU (--mode offcpu, wall): what it waited for, told
 * from the frames it left with, and the stack each thread left with until its wake record says
 * how long it was away.
 *
 *   SAMPLE_F_OFFCPU record ─ collect.c builds the stack, offcpu_state() names the wait,
 *                            offcpu_left() keeps (tid → leaf node)
 *   struct sample_wake     ─ offcpu_back() adds the time off to that node, in microseconds
 *
 * The state becomes a frame above the thread's Python frames: "[waiting for GIL]", "[idle]",
 * "[blocked]", or "[runnable]" for a thread that was preempted (it wanted the CPU).
 */
#ifndef PYEBPF_OFFCPU_H
#define PYEBPF_OFFCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

enum offcpu_state {
    OFFCPU_GIL = 0,  /* CPython's GIL take: its condition-variable wait in the acquire path */
    OFFCPU_IDLE,     /* sleeps and selector waits (nanosleep, select, poll, epoll) */
    OFFCPU_BLOCKED,  /* every other wait: locks, reads, writes, I/O */
    OFFCPU_RUNNABLE, /* preempted: waiting for a CPU, not for an event */
    OFFCPU_NSTATES,
};

/* The frame name of a state ("[idle]"), and its key in --stats ("idle"). */
const char *offcpu_state_frame(enum offcpu_state s);
const char *offcpu_state_key(enum offcpu_state s);

/* The state of a thread that left the CPU with these frames: user[0..nu) and kernel[0..nk)
 * leaf first (profile frame indices), `preempted` from the record. */
enum offcpu_state offcpu_state(const struct profile *p, const uint32_t *user, size_t nu,
                               const uint32_t *kernel, size_t nk, bool preempted);

/* How many leaf-side kernel frames belong to the switch itself (the scheduler and the tracing
 * that recorded it), so the wait (do_nanosleep, futex_wait_queue, ep_poll, ...) becomes the leaf. */
size_t offcpu_switch_frames(const struct profile *p, const uint32_t *kernel, size_t nk);

struct offcpu_stats {
    uint64_t left;               /* off-CPU records turned into stacks */
    uint64_t back;               /* wake records that gave a stack its time */
    uint64_t unpaired;           /* wake records with no stack (its record was lost or filtered) */
    uint64_t replaced;           /* stacks that never got their time (their wake record was lost) */
    uint64_t dropped;            /* stacks left out (--no-idle): time counted in ns[] only */
    uint64_t ns[OFFCPU_NSTATES]; /* time recorded per state */
};

struct offcpu;

int offcpu_open(struct offcpu **out);
void offcpu_close(struct offcpu *o);
/* Thread `tid` left the CPU with the stack ending at profile node `node` (0: a stack not kept,
 * whose time is counted in its state but added to no node). */
int offcpu_left(struct offcpu *o, uint32_t tid, uint32_t node, enum offcpu_state s);
/* Thread `tid` was off for off_ns: its stack gets the time (microseconds; the thread's
 * sub-microsecond remainder carries over to its next wait, so its sum stays exact). */
void offcpu_back(struct offcpu *o, struct profile *p, uint32_t tid, uint64_t off_ns);
void offcpu_get_stats(const struct offcpu *o, struct offcpu_stats *out);

#endif
