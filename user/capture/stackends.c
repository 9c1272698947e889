/*
 * stackends — each thread's stack end, for the sampler (see stackends.h).
 */
#include "capture/stackends.h"

#include <string.h>

/* End of the writable mapping that holds `at` (a new thread's stack pointer, or its
 * pthread_self()). The target's maps are cached and re-read only when `at` falls outside them (a
 * new thread stack is usually a fresh mapping, or a cached one glibc reuses). */
static uint64_t stack_end(struct stackends *se, pid_t pid, uint64_t at)
{
    const struct map_entry *e = NULL;

    if (se->maps_pid == pid)
        e = maps_find(&se->maps, at);
    if (!e) {
        maps_free(&se->maps);
        memset(&se->maps, 0, sizeof(se->maps));
        se->maps_pid = 0;
        se->map_reads++;
        if (maps_read(&se->maps, pid))
            return 0;
        se->maps_pid = pid;
        e = maps_find(&se->maps, at);
    }
    return e && (e->prot & MAPS_W) ? e->end : 0;
}

enum stackends_bound stackends_learn(struct stackends *se, const struct sample_event *ev, bool fresh,
                                     uint32_t stack_size, uint64_t *end)
{
    if (ev->tid == ev->pid || !ev->regs.sp)
        return STACKENDS_NONE; /* the main thread is bounded by mm->start_stack in the kernel */
    if (fresh) {
        /* A new thread: bound its stack copies by the end of its stack mapping from now on,
         * unless the copy already stopped there (the bound was taught with its thread state). */
        *end = stack_end(se, ev->pid, ev->regs.sp);
        if ((ev->flags & SAMPLE_F_COPY_BOUNDED) && ev->stack_addr + ev->stack_len == *end)
            return STACKENDS_NONE;
        return *end ? STACKENDS_NEW : STACKENDS_NONE;
    }
    if ((ev->flags & SAMPLE_F_COPY_BOUNDED) && ev->stack_len < stack_size) {
        /* A bound that stops short of the mapping's end is stale (the tid was reused by a
         * thread on another stack): learn it again. */
        const struct map_entry *e = se->maps_pid == (pid_t)ev->pid ? maps_find(&se->maps, ev->regs.sp) : NULL;
        uint64_t copied_end = ev->stack_addr + ev->stack_len;

        if (e && e->end >= copied_end + 8) {
            *end = e->end;
            return STACKENDS_FIX;
        }
    }
    return STACKENDS_NONE;
}

enum stackends_bound stackends_hint(struct stackends *se, pid_t pid, pid_t tid, uint64_t pthread,
                                    uint64_t *end)
{
    if (tid == pid || !pthread)
        return STACKENDS_NONE;
    *end = stack_end(se, pid, pthread);
    return *end ? STACKENDS_NEW : STACKENDS_NONE;
}

void stackends_set(struct stackends *se, enum stackends_bound b)
{
    if (b == STACKENDS_NEW)
        se->set++;
    else if (b == STACKENDS_FIX)
        se->fixed++;
}

void stackends_free(struct stackends *se)
{
    maps_free(&se->maps);
}
