/*
 * gil — how many samples were taken while their thread held the GIL (`top`'s header), per
 * thread, in the thread table (threads.h).
 *
 * With BPF the perf_event program answers at the sample instant (bpf/sample.bpf.c gil_held,
 * SAMPLE_GIL_MARK): the thread's state against the lock word and last holder; the process's
 * share is of its on-CPU samples. With --no-bpf the holder is read once per tick for the process
 * (collect_python_tick, one remote call of two words, against at least one per thread for the
 * stacks), and each thread's sample of that tick is compared with it. Every thread is sampled
 * at a tick, running or not, and one at most holds the GIL: there the process's share is of
 * ticks (the GIL held by the thread of one of the tick's samples), and a thread's "held"
 * samples are ticks too, so the threads' shares add up to the process's.
 */
#include "collect/collect_internal.h"

void collect_gil_count(struct collector *c, uint32_t tid, bool held)
{
    struct thread *t = threads_find(&c->threads, tid);

    if (t) {
        t->gil_checked++;
        t->gil_held += held;
    }
}

enum collect_gil_state collect_gil_state(const struct collector *c)
{
    bool none = false;

    if (c->sampler && !c->pk)
        return COLLECT_GIL_UNKNOWN; /* no in-kernel reader: the kernel never learns the threads */
    for (size_t i = 0; i < c->ntargets; i++) {
        const struct pyrt *rt = c->targets[i].ps ? pystack_runtime(c->targets[i].ps) : NULL;

        if (rt && rt->L.free_threaded)
            none = true;
        else if (rt && rt->L.gil_holder)
            return COLLECT_GIL_KNOWN;
    }
    return none ? COLLECT_GIL_NONE : COLLECT_GIL_UNKNOWN;
}

size_t collect_gil_threads(const struct collector *c, struct collect_gil_thread *out, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < c->threads.cap && n < max; i++) {
        const struct thread *t = &c->threads.v[i];

        if (t->tid && t->gil_checked)
            out[n++] = (struct collect_gil_thread){
                .tid = t->tid, .frame = t->frame, .checked = t->gil_checked, .held = t->gil_held};
    }
    return n;
}
