/*
 * offcpu — states of off-CPU stacks and the stacks waiting for their time (see offcpu.h).
 */
#include "collect/offcpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct waiting {
    uint32_t tid; /* 0: empty slot */
    uint32_t node;
    enum offcpu_state state;
    bool open;       /* a stack waits for this thread's wake record */
    uint64_t rem_ns; /* time not yet added (under a microsecond) */
};

struct offcpu {
    struct waiting *w; /* open addressing, power-of-two size; entries stay once made */
    size_t n, cap;
    struct offcpu_stats st;
};

static const char *const state_frames[OFFCPU_NSTATES] = {"[waiting for GIL]", "[idle]", "[blocked]",
                                                         "[runnable]"};
static const char *const state_keys[OFFCPU_NSTATES] = {"gil", "idle", "blocked", "runnable"};

const char *offcpu_state_frame(enum offcpu_state s)
{
    return state_frames[s];
}

const char *offcpu_state_key(enum offcpu_state s)
{
    return state_keys[s];
}

/* CPython functions a thread is inside only while it takes the GIL: take_gil itself, and the
 * exported entry points around it (a stripped interpreter names only those). */
static const char *const gil_take[] = {"take_gil",           "PyEval_RestoreThread", "PyEval_AcquireThread",
                                       "PyEval_AcquireLock", "PyGILState_Ensure",    "_PyThreadState_Attach"};

/* Kernel and C library functions of a sleep or a wait for any of many events. */
static const char *const idle_waits[] = {
    "do_nanosleep",    "hrtimer_nanosleep", "ep_poll",     "do_epoll_wait",
    "do_select",       "core_sys_select",   "do_sys_poll", "do_poll",
    "clock_nanosleep", "__clock_nanosleep", "nanosleep",   "__nanosleep",
    "epoll_wait",      "__select",          "select",      "poll",
    "__poll",          "sys_pause"};

static bool named(const struct profile *p, uint32_t f, const char *const *names, size_t n)
{
    const char *name = p->frames[f].name;

    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, names[i]))
            return true;
    return false;
}

enum offcpu_state offcpu_state(const struct profile *p, const uint32_t *user, size_t nu,
                               const uint32_t *kernel, size_t nk, bool preempted)
{
    if (preempted)
        return OFFCPU_RUNNABLE;
    for (size_t i = 0; i < nu; i++)
        if (named(p, user[i], gil_take, sizeof(gil_take) / sizeof(gil_take[0])))
            return OFFCPU_GIL;
    for (size_t i = 0; i < nk; i++)
        if (named(p, kernel[i], idle_waits, sizeof(idle_waits) / sizeof(idle_waits[0])))
            return OFFCPU_IDLE;
    /* Without a kernel stack, the C library's side of the wait. */
    for (size_t i = 0; i < nu && i < 4; i++)
        if (named(p, user[i], idle_waits, sizeof(idle_waits) / sizeof(idle_waits[0])))
            return OFFCPU_IDLE;
    return OFFCPU_BLOCKED;
}

static bool switch_frame(const char *name)
{
    static const char *const prefixes[] = {
        "bpf_", "__bpf", "__traceiter_", "__schedule", "schedule", "preempt_schedule", "io_schedule"};

    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
            return true;
    return false;
}

size_t offcpu_switch_frames(const struct profile *p, const uint32_t *kernel, size_t nk)
{
    size_t last = 0;

    /* The recording program's own frames lie leaf-side of __schedule; the scheduler's entry
     * points (schedule, schedule_timeout, ...) root-side of it, up to the wait that called them. */
    for (size_t i = 0; i < nk; i++) {
        if (!strcmp(p->frames[kernel[i]].name, "__schedule")) {
            last = i + 1;
            while (last < nk && switch_frame(p->frames[kernel[last]].name))
                last++;
            return last;
        }
    }
    return 0;
}

int offcpu_open(struct offcpu **out)
{
    struct offcpu *o = calloc(1, sizeof(*o));

    *out = NULL;
    if (!o)
        return -ENOMEM;
    o->cap = 256;
    o->w = calloc(o->cap, sizeof(*o->w));
    if (!o->w) {
        free(o);
        return -ENOMEM;
    }
    *out = o;
    return 0;
}

void offcpu_close(struct offcpu *o)
{
    if (!o)
        return;
    free(o->w);
    free(o);
}

static size_t slot(const struct offcpu *o, uint32_t tid)
{
    size_t j;

    for (j = (tid * 2654435761u) & (o->cap - 1); o->w[j].tid && o->w[j].tid != tid;
         j = (j + 1) & (o->cap - 1))
        ;
    return j;
}

static struct waiting *waiting_find(struct offcpu *o, uint32_t tid, bool make)
{
    size_t j;

    if (make && (o->n + 1) * 2 > o->cap) {
        struct waiting *old = o->w;
        size_t ocap = o->cap;

        o->w = calloc(ocap * 2, sizeof(*o->w));
        if (!o->w) {
            o->w = old;
            return NULL;
        }
        o->cap = ocap * 2;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].tid)
                o->w[slot(o, old[i].tid)] = old[i];
        free(old);
    }
    j = slot(o, tid);
    if (!o->w[j].tid) {
        if (!make)
            return NULL;
        o->w[j].tid = tid;
        o->n++;
    }
    return &o->w[j];
}

int offcpu_left(struct offcpu *o, uint32_t tid, uint32_t node, enum offcpu_state s)
{
    struct waiting *w = waiting_find(o, tid, true);

    if (!w)
        return -ENOMEM;
    if (w->open)
        o->st.replaced++;
    w->node = node;
    w->state = s;
    w->open = true;
    o->st.left++;
    if (!node)
        o->st.dropped++;
    return 0;
}

void offcpu_back(struct offcpu *o, struct profile *p, uint32_t tid, uint64_t off_ns)
{
    struct waiting *w = waiting_find(o, tid, false);
    uint64_t t;

    if (!w || !w->open) {
        o->st.unpaired++;
        return;
    }
    w->open = false;
    o->st.back++;
    o->st.ns[w->state] += off_ns;
    if (!w->node)
        return;
    t = w->rem_ns + off_ns;
    w->rem_ns = t % 1000;
    profile_add_count(p, w->node, t / 1000);
}

void offcpu_get_stats(const struct offcpu *o, struct offcpu_stats *out)
{
    *out = o->st;
}
