/* pystack_threads — the thread directory: tid → thread state, L1 then L2 then a walk of every
 * interpreter's thread list (see pystack.h, pystack_state.h). */
#include "python/pystack_state.h"
#include "util/monotime.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#define MAX_INTERPS   64
#define MAX_THREADS   8192
#define WINDOW_WALKS  4
#define NOT_PYTHON_NS 200000000ull /* a thread runs before CPython binds its state to it */
#define TS_WINDOW     16384        /* bytes of thread states one read of the list takes */

/* -- Small helpers ----------------------------------------------------------------------------- */

static uint32_t tid_hash(pid_t tid, uint32_t cap)
{
    return ((uint32_t)tid * 2654435761u) & (cap - 1);
}

static int slot_find(const struct pystack *ps, pid_t tid)
{
    if (!ps->idx_cap)
        return -1;
    for (uint32_t i = tid_hash(tid, ps->idx_cap);; i = (i + 1) & (ps->idx_cap - 1)) {
        if (!ps->idx[i])
            return -1;
        if (ps->slots[ps->idx[i] - 1].tid == tid)
            return (int)ps->idx[i] - 1;
    }
}

/* -- L2: thread states from interp->threads ---------------------------------------------------- */

static bool not_python(const struct pystack *ps, pid_t tid, uint64_t now)
{
    for (unsigned i = 0; i < NOT_PYTHON_SLOTS; i++)
        if (ps->nonpy[i].tid == tid && now - ps->nonpy[i].since_ns < NOT_PYTHON_NS)
            return true;
    return false;
}

/* The thread states a walk reads, through one window of the target's memory. CPython allocates
 * thread states one after another (1,280 bytes apart on 3.12, 1,664-1,984 on 3.15) and lists
 * them newest first, so the next state mostly lies just below the last: a read takes the
 * TS_WINDOW bytes that end with the state wanted (or begin with it, where the list went up or
 * the bytes below cannot be read). A 200-thread list took 200 calls (2.0-2.6 ms of an attach's
 * CPU); it takes ~20 on 3.12, ~40 on 3.15. Windows of 8-16 KiB read it fastest. */
struct ts_window {
    uint8_t *buf;
    uint64_t lo;
    size_t len;
};

static const uint8_t *ts_at(struct pystack *ps, struct ts_window *w, uint64_t t, uint64_t prev)
{
    const size_t sz = ps->rt.L.ts_read_size;
    ssize_t got;

    if (t >= w->lo && t - w->lo < w->len && w->len - (t - w->lo) >= sz)
        return w->buf + (t - w->lo);
    w->lo = t;
    w->len = 0;
    if ((!prev || t < prev) && t > TS_WINDOW - sz) {
        got = remote_read_upto(&ps->r, t + sz - TS_WINDOW, w->buf, TS_WINDOW);
        if (got == TS_WINDOW) {
            w->lo = t + sz - TS_WINDOW;
            w->len = TS_WINDOW;
            return w->buf + (t - w->lo);
        }
    }
    got = remote_read_upto(&ps->r, t, w->buf, TS_WINDOW);
    if (got < (ssize_t)sz)
        return NULL;
    w->len = (size_t)got;
    return w->buf;
}

/* Re-reads every interpreter's thread list and rebuilds the tid table; predictions of threads
 * whose thread state did not move are kept. */
int pystack_refresh_threads(struct pystack *ps)
{
    const struct pyrt_layout *L = &ps->rt.L;
    struct thread_slot *nslots = NULL;
    uint32_t n = 0, cap = 0;
    uint8_t buf[TS_WINDOW];
    struct ts_window w = {.buf = buf};
    uint64_t interp;
    int rc;

    ps->st.l2_refreshes++;
    ps->l1.valid = false;
    if ((rc = pyrt_first_interp(&ps->rt, &ps->r, &interp)) != 0)
        return rc;
    for (int ni = 0; interp && ni < MAX_INTERPS; ni++) {
        uint64_t head = 0, next = 0;
        struct remote_seg s[2] = {REMOTE_SEG(interp + L->is_threads_head, &head, 8),
                                  REMOTE_SEG(interp + L->is_next, &next, 8)};
        if (remote_readv(&ps->r, s, 2, false) != 2)
            break;
        const uint8_t *ts;
        for (uint64_t t = head, prev = 0; t && n < MAX_THREADS; prev = t, t = u64_at(ts, L->ts_next)) {
            if (!(ts = ts_at(ps, &w, t, prev))) {
                ps->st.errors++;
                break;
            }
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                struct thread_slot *g = realloc(nslots, cap * sizeof(*g));
                if (!g) {
                    free(nslots);
                    return -ENOMEM;
                }
                nslots = g;
            }
            nslots[n++] = (struct thread_slot){.tid = (pid_t)u64_at(ts, L->ts_native_thread_id),
                                               .tstate = t,
                                               .pthread = L->ts_thread_id ? u64_at(ts, L->ts_thread_id) : 0,
                                               .interp = interp};
        }
        interp = next;
    }
    /* Carry predictions over; free the rest. */
    for (uint32_t i = 0; i < ps->nslots; i++) {
        struct thread_slot *old = &ps->slots[i];
        for (uint32_t k = 0; k < n && old->frames; k++) {
            if (nslots[k].tid == old->tid && nslots[k].tstate == old->tstate && !nslots[k].frames) {
                nslots[k] = *old;
                old->frames = NULL;
            }
        }
        free(old->frames);
    }
    free(ps->slots);
    ps->slots = nslots;
    ps->nslots = n;
    uint32_t icap = 16;
    while (icap < 2 * n)
        icap *= 2;
    uint32_t *idx = calloc(icap, sizeof(*idx));
    if (!idx)
        return -ENOMEM;
    ps->slots_bound = n > 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = tid_hash(nslots[k].tid, icap);
        while (idx[i]) {
            if (nslots[idx[i] - 1].tid == nslots[k].tid)
                ps->slots_bound = false; /* two states name one thread: one is not bound yet */
            i = (i + 1) & (icap - 1);
        }
        idx[i] = k + 1;
        if (!nslots[k].tid)
            ps->slots_bound = false;
    }
    free(ps->idx);
    ps->idx = idx;
    ps->idx_cap = icap;
    return 0;
}

/* L1, then L2, then a refresh. Returns the slot index or -ESRCH. */
int pystack_thread_slot(struct pystack *ps, pid_t tid)
{
    if (ps->l1.valid && ps->l1.tid == tid) {
        ps->st.l1_hits++;
        return (int)ps->l1.slot;
    }
    ps->st.l1_misses++;
    int s = slot_find(ps, tid);
    if (s >= 0) {
        ps->st.l2_hits++;
    } else {
        ps->st.l2_misses++;
        /* A tid without a thread state (a C thread) would otherwise walk the list every time:
         * at most WINDOW_WALKS walks per refresh_interval_us (threads started together are
         * each found at once: their first stacks, a sleeper's first second, need their frames),
         * and a tid a walk did not find is not looked for again during NOT_PYTHON_NS. */
        uint64_t now = monotime_ns();
        if (!ps->last_refresh_ns || now - ps->last_refresh_ns >= (uint64_t)ps->o.refresh_interval_us * 1000) {
            ps->last_refresh_ns = now;
            ps->window_walks = 0;
        }
        if (ps->window_walks >= WINDOW_WALKS || not_python(ps, tid, now)) {
            ps->st.l2_refreshes_deferred++;
            return -ESRCH;
        }
        ps->window_walks++;
        int rc = pystack_refresh_threads(ps);
        if (rc)
            return rc;
        s = slot_find(ps, tid);
        if (s < 0) {
            /* Taken for a C thread only when the interpreter has thread states, each naming a
             * thread of its own. Before that any tid may be the next state's: a process met as
             * it starts (its runtime there, its main thread's state not yet, or not bound yet:
             * 3.12+ binds it after making it), and a thread just started, whose state still
             * names its creator (3.11) or none; NOT_PYTHON_NS would take their first frames
             * (a launched command's main thread; a thread's first sleep, a second long). */
            if (ps->slots_bound)
                ps->nonpy[ps->nonpy_next++ % NOT_PYTHON_SLOTS] = (struct nonpy){tid, now};
            return -ESRCH;
        }
    }
    ps->l1.tid = tid;
    ps->l1.slot = (uint32_t)s;
    ps->l1.valid = true;
    return s;
}

int pystack_each_thread(struct pystack *ps,
                        int (*fn)(void *arg, pid_t tid, uint64_t tstate, uint64_t pthread), void *arg)
{
    int rc = pystack_refresh_threads(ps);

    for (uint32_t i = 0; !rc && i < ps->nslots; i++)
        rc = fn(arg, ps->slots[i].tid, ps->slots[i].tstate, ps->slots[i].pthread);
    return rc;
}
