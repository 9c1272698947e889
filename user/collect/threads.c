/*
 * threads — each sampled thread's root frame (see threads.h).
 */
#include "collect/threads.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/pythreads.h"
#include "util/monotime.h"

#define PYNAME_WINDOW  3000000000ull /* ns after a thread is first seen: its name is looked for */
#define PYNAME_GAP     5000000ull    /* ns to the second look (a new thread registers itself soon), */
#define PYNAME_GAP_MAX 500000000ull  /* doubling up to this: a look walks sys.modules remotely */

int threads_init(struct threads *th)
{
    th->n = 0;
    th->cap = 256;
    th->name_due = UINT64_MAX;
    th->v = calloc(th->cap, sizeof(*th->v));
    return th->v ? 0 : -ENOMEM;
}

void threads_free(struct threads *th)
{
    free(th->v);
    th->v = NULL;
}

static uint32_t hash_tid(uint32_t tid)
{
    return tid * 2654435761u;
}

static int threads_grow(struct threads *th)
{
    size_t cap = th->cap * 2;
    struct thread *n = calloc(cap, sizeof(*n));

    if (!n)
        return -ENOMEM;
    for (size_t i = 0; i < th->cap; i++) {
        struct thread *o = &th->v[i];
        size_t j;

        if (!o->tid)
            continue;
        for (j = hash_tid(o->tid) & (cap - 1); n[j].tid; j = (j + 1) & (cap - 1))
            ;
        n[j] = *o;
    }
    free(th->v);
    th->v = n;
    th->cap = cap;
    return 0;
}

/* Whether `flt` keeps thread `tid` named `name`. */
static bool threads_kept(const struct threads_filter *flt, uint32_t tid, const char *name)
{
    bool listed = !flt->ntids;

    for (size_t i = 0; i < flt->ntids && !listed; i++)
        listed = flt->tids[i] == tid;
    return listed && (!flt->name || !regexec(flt->name, name, 0, NULL, 0));
}

/* Reads the threading.Thread name of `t` into t->pyname, a few times until it is there (a new
 * thread registers in threading._active as it starts), as it is at `since` or later (its sample's
 * instant). True when it was read just now. */
static bool read_pyname(struct pystack *ps, struct thread *t, uint64_t since)
{
    uint64_t tstate, ident, now;
    char name[sizeof(t->pyname)];
    int rc;

    if (!ps || t->pyname[0] || t->pyname_done)
        return false;
    now = monotime_ns();
    if (!t->pyname_first)
        t->pyname_first = now;
    if (now < t->pyname_next)
        return false;
    /* A thread runs (and switches) before CPython has bound its thread state to it: the first
     * looks may find no state; they go on for a while rather than for a number of tries. */
    t->pyname_done = now - t->pyname_first > PYNAME_WINDOW;
    t->pyname_gap = !t->pyname_gap                       ? PYNAME_GAP
                    : t->pyname_gap * 2 > PYNAME_GAP_MAX ? PYNAME_GAP_MAX
                                                         : t->pyname_gap * 2;
    t->pyname_next = now + t->pyname_gap;
    if (pystack_thread_state(ps, (pid_t)t->tid, &tstate, &ident))
        return false;
    rc = pythreads_name(pystack_runtime(ps), pystack_pid(ps), tstate, ident, since, pystack_threads(ps), name,
                        sizeof(name));
    if (rc == -ENOTSUP)
        t->pyname_done = true; /* 3.14+ name the OS thread themselves */
    if (rc)
        return false;
    memcpy(t->pyname, name, sizeof(name));
    return true;
}

struct thread *threads_find(struct threads *th, uint32_t tid)
{
    for (size_t j = hash_tid(tid) & (th->cap - 1); th->v[j].tid; j = (j + 1) & (th->cap - 1))
        if (th->v[j].tid == tid)
            return &th->v[j];
    return NULL;
}

/* The frame of t's earlier samples takes the Python name just read. */
static int rename_frame(struct profile *prof, const struct thread *t)
{
    char name[96];

    snprintf(name, sizeof(name), "thread %u (%s)", t->tid, t->pyname);
    return profile_frame_rename(prof, t->frame, name);
}

/* Keeps th->name_due no later than t's next look while t's name is still looked for (t of a
 * Python process). */
static void note_pending(struct threads *th, const struct thread *t)
{
    if (!t->pyname[0] && !t->pyname_done && t->pyname_next < th->name_due)
        th->name_due = t->pyname_next;
}

void threads_name_pending(struct threads *th, struct profile *prof, uint32_t pid, struct pystack *ps,
                          const struct threads_filter *flt, bool last)
{
    const uint64_t now = monotime_ns();

    for (size_t j = 0; j < th->cap; j++) {
        struct thread *t = &th->v[j];

        if (!t->tid || t->pid != pid || t->pyname[0] || t->pyname_done)
            continue;
        if (last)
            t->pyname_next = 0;
        if (read_pyname(ps, t, now) && !rename_frame(prof, t)) /* -ENOMEM: its name stays the kernel's */
            t->keep = threads_kept(flt, t->tid, t->pyname);
        note_pending(th, t);
    }
}

int64_t threads_frame(struct threads *th, struct profile *prof, uint32_t tid, uint32_t pid, const char *comm,
                      struct pystack *ps, const struct threads_filter *flt, uint64_t since, bool *fresh,
                      bool *keep)
{
    char name[96], label[64];
    struct thread *t;
    size_t j;
    int64_t f;

    *fresh = false;
    if ((th->n + 1) * 2 > th->cap && threads_grow(th))
        return -ENOMEM;
    for (j = hash_tid(tid) & (th->cap - 1); th->v[j].tid; j = (j + 1) & (th->cap - 1)) {
        t = &th->v[j];
        if (t->tid == tid) {
            if (strncmp(t->comm, comm, SAMPLE_COMM_LEN))
                break;
            /* The Python name read only now: the frame of its earlier samples takes it too. */
            if (read_pyname(ps, t, since)) {
                if (rename_frame(prof, t))
                    break;
                t->keep = threads_kept(flt, tid, t->pyname);
            }
            if (ps)
                note_pending(th, t);
            *keep = t->keep;
            return t->frame;
        }
    }
    t = &th->v[j];
    if (!t->tid) {
        *fresh = true;
        th->n++;
        memset(t, 0, sizeof(*t));
        t->tid = tid;
        t->pid = pid;
        read_pyname(ps, t, since);
        if (ps)
            note_pending(th, t);
    }
    if (t->pyname[0])
        snprintf(label, sizeof(label), "%s", t->pyname);
    else
        snprintf(label, sizeof(label), "%.*s", SAMPLE_COMM_LEN, comm);
    snprintf(name, sizeof(name), "thread %u (%s)", tid, label);
    f = profile_frame(prof, FRAME_THREAD, name, NULL, 0);
    if (f < 0)
        return f;
    t->frame = (uint32_t)f;
    memcpy(t->comm, comm, SAMPLE_COMM_LEN);
    t->keep = *keep = threads_kept(flt, tid, label);
    return f;
}
