/*
 * pykernel — feeds the in-kernel Python reader and turns its chains into frames (pykernel.h).
 */
#include "python/pykernel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/monotime.h"

#define MAX_RAW 1024 /* frames decoded per record (SAMPLE_PY_FRAMES_MAX) */

struct pykernel_stats {
    uint64_t samples_in_kernel; /* records whose Python frames came from the kernel */
    uint64_t frames_in_kernel;  /* frames delivered by the kernel (python_frames_in_kernel) */
    uint64_t fallbacks;         /* records read remotely instead */
    uint64_t threads_taught;    /* thread states put into the kernel's map */
    uint64_t codes_named_early; /* code objects on the stacks at attach, named before any capture */
    uint64_t stale;             /* records whose thread state no longer named the thread */
    uint64_t broken;            /* records whose chain the kernel gave up */
    uint64_t truncated;         /* kernel chains cut at the frame cap */
};

/* A process whose layout the kernel has, or that cannot have one (refused: never retried). */
struct pk_proc {
    pid_t pid;
    bool refused;
};

/* A thread taught, and when (monotime_ns): a record of it taken later that still says the kernel
 * does not know it means the kernel's entry was dropped (an LRU map), and it is taught again. */
struct pk_tid {
    uint32_t tid;
    bool none; /* taught SAMPLE_PY_NO_TSTATE */
    uint64_t ns;
};

struct pykernel {
    struct pykernel_teacher teach; /* .layout NULL: nothing is taught */
    struct pk_proc *procs;
    size_t nprocs, cap_procs;
    struct pk_tid *tids; /* open addressing set of taught tids (tid 0: empty), power-of-two size */
    size_t ntids, cap_tids;
    struct pystack_raw *raw;
    struct pykernel_stats st;
};

_Static_assert(MAX_RAW >= SAMPLE_PY_FRAMES_MAX, "a record's chain fits the decode buffer");

/* -- Layout --------------------------------------------------------------------------------- */

struct span {
    uint32_t lo, hi;
};

static void span_add(struct span *sp, uint32_t off, uint32_t size)
{
    if (off < sp->lo)
        sp->lo = off;
    if (off + size > sp->hi)
        sp->hi = off + size;
}

/* Offset of an 8-byte field inside a slice starting at lo: must be 8-aligned there. */
static int rel8(uint32_t off, uint32_t lo, uint16_t *out)
{
    if ((off - lo) & 7 || off - lo > SAMPLE_PY_SLICE_MAX - 8)
        return -ENOTSUP;
    *out = (uint16_t)(off - lo);
    return 0;
}

int pykernel_layout(const struct pyrt_layout *in, struct sample_pylayout *out)
{
    struct span ts = {UINT32_MAX, 0}, fr = {UINT32_MAX, 0};
    int rc = 0;

    memset(out, 0, sizeof(*out));
    span_add(&ts, in->ts_native_thread_id, 8);
    span_add(&ts, in->ts_cframe ? in->ts_cframe : in->ts_current_frame, 8);
    ts.lo &= ~7u;
    span_add(&fr, in->f_code, 8);
    span_add(&fr, in->f_previous, 8);
    span_add(&fr, in->f_instr, 8);
    span_add(&fr, in->f_owner, 1);
    if (in->f_is_entry >= 0)
        span_add(&fr, (uint32_t)in->f_is_entry, 1);
    fr.lo &= ~7u;
    if (ts.hi - ts.lo > SAMPLE_PY_SLICE_MAX || fr.hi - fr.lo > SAMPLE_PY_SLICE_MAX ||
        in->cf_current_frame > 0xfff0)
        return -ENOTSUP;
    out->ts_lo = (uint16_t)ts.lo;
    out->ts_len = (uint16_t)(ts.hi - ts.lo);
    out->f_lo = (uint16_t)fr.lo;
    out->f_len = (uint16_t)(fr.hi - fr.lo);
    rc |= rel8(in->ts_native_thread_id, ts.lo, &out->ts_native_thread_id);
    if (in->ts_cframe) {
        rc |= rel8(in->ts_cframe, ts.lo, &out->ts_cframe);
        out->cf_current_frame = (uint16_t)in->cf_current_frame;
        out->ts_current_frame = SAMPLE_PY_NONE;
    } else {
        out->ts_cframe = SAMPLE_PY_NONE;
        rc |= rel8(in->ts_current_frame, ts.lo, &out->ts_current_frame);
    }
    rc |= rel8(in->f_code, fr.lo, &out->f_code);
    rc |= rel8(in->f_previous, fr.lo, &out->f_previous);
    rc |= rel8(in->f_instr, fr.lo, &out->f_instr);
    out->f_owner = (uint16_t)(in->f_owner - fr.lo);
    out->f_is_entry = in->f_is_entry >= 0 ? (uint16_t)((uint32_t)in->f_is_entry - fr.lo) : SAMPLE_PY_NONE;
    /* Owners: 0..2 (3.11), 0..3 (3.12, 3.13, 3.15), 0..4 (3.14); the record's tag holds up
     * to SAMPLE_PY_OWNER_MAX, and an entry flag only beside owners 0..2 (sample.h). */
    out->max_owner = in->f_owner_max;
    if (in->f_owner_max > SAMPLE_PY_OWNER_MAX || (in->f_is_entry >= 0 && in->f_owner_max > 2))
        rc = -1;
    /* f_executable's tag (3.14+: the low 2 bits) must leave the 8-byte alignment checked. */
    out->code_tag = (uint8_t)(~in->f_code_mask & SAMPLE_PY_TAG_MASK);
    if (~in->f_code_mask & ~SAMPLE_PY_TAG_MASK)
        rc = -1;
    /* The code identity block: whole words, at most what the program folds. */
    out->co_id_lo = (uint16_t)in->co_id_start;
    out->co_id_len = (uint16_t)in->co_id_size;
    out->co_id_qualname = (uint16_t)(in->co_qualname - in->co_id_start);
    out->str_length = (uint16_t)in->str_length;
    out->co_id_version = (uint16_t)in->co_id_version;
    if (in->co_id_version % 4 || in->co_id_version + 4 > in->co_id_size)
        rc = -1;
    if (in->co_id_size < 8 || in->co_id_size > SAMPLE_PY_ID_MAX || in->co_id_size % 8 ||
        in->co_id_start > 0xfff0 || in->co_id_start % 8 || in->co_qualname < in->co_id_start ||
        in->co_qualname + 8 > in->co_id_start + in->co_id_size || in->co_qualname % 8 ||
        in->str_length > 0xfff0 || in->str_length % 8)
        rc = -1;
    return rc ? -ENOTSUP : 0;
}

/* -- Records -------------------------------------------------------------------------------- */

int pykernel_decode(const struct sample_event *ev, size_t len, struct pystack_raw *out, size_t max,
                    bool *truncated)
{
    size_t off = offsetof(struct sample_event, stack) + (size_t)ev->stack_len;
    size_t n = ev->py_count;
    const uint8_t *p;

    if (!pykernel_has_chain(ev))
        return -ENOENT;
    if (len < off || (len - off) / sizeof(struct sample_pyframe) < n)
        return -EINVAL;
    *truncated = (ev->py_flags & SAMPLE_PY_TRUNCATED) != 0;
    if (n > max) {
        n = max;
        *truncated = true;
    }
    p = (const uint8_t *)ev + off;
    for (size_t i = 0; i < n; i++) {
        struct sample_pyframe f;
        uint8_t tag;

        memcpy(&f, p + i * sizeof(f), sizeof(f)); /* 8-aligned, but the record is bytes */
        tag = (uint8_t)(f.code & SAMPLE_PY_TAG_MASK);
        out[i].code = f.code & SAMPLE_PY_CODE_MASK;
        out[i].instr = f.instr;
        out[i].ident = f.ident;
        out[i].is_entry = tag >= SAMPLE_PY_TAG_ENTRY;
        out[i].owner = (uint8_t)(tag >= SAMPLE_PY_TAG_ENTRY ? tag - SAMPLE_PY_TAG_ENTRY : tag);
    }
    return (int)n;
}

/* -- Lifecycle ------------------------------------------------------------------------------ */

int pykernel_open(struct pykernel **out, const struct pykernel_teacher *t)
{
    struct pykernel *pk = calloc(1, sizeof(*pk));

    *out = NULL;
    if (!pk)
        return -ENOMEM;
    if (t)
        pk->teach = *t;
    pk->cap_tids = 64;
    pk->tids = calloc(pk->cap_tids, sizeof(*pk->tids));
    pk->raw = calloc(MAX_RAW, sizeof(*pk->raw));
    if (!pk->tids || !pk->raw) {
        pykernel_close(pk);
        return -ENOMEM;
    }
    *out = pk;
    return 0;
}

void pykernel_close(struct pykernel *pk)
{
    if (!pk)
        return;
    free(pk->procs);
    free(pk->tids);
    free(pk->raw);
    free(pk);
}

void pykernel_stats(const struct pykernel *pk, const struct sampler_stats *kc, struct stats out)
{
    const struct pykernel_stats *st = &pk->st;

    STATS_COUNTS(out, {"python_samples_in_kernel", st->samples_in_kernel},
                 {"python_kernel_fallbacks", st->fallbacks}, {"python_threads_in_kernel", st->threads_taught},
                 {"python_codes_named_at_attach", st->codes_named_early}, {"python_kernel_stale", st->stale},
                 {"python_kernel_broken", st->broken}, {"python_kernel_truncated", st->truncated});
    if (kc) {
        stats_count(out, "python_kernel_reads", kc->py_reads);
        stats_ratio(out, "python_kernel_reads_per_sample", (double)kc->py_reads,
                    (double)st->samples_in_kernel, 2);
        stats_count(out, "python_kernel_window_misses", kc->py_misses);
        stats_ratio(out, "python_kernel_idents_per_sample", (double)kc->py_idents,
                    (double)st->samples_in_kernel, 2);
        stats_ratio(out, "python_kernel_ident_reads_per_sample", (double)kc->py_ident_reads,
                    (double)st->samples_in_kernel, 2);
        stats_ratio(out, "python_kernel_qualname_reads_per_sample", (double)kc->py_quals,
                    (double)st->samples_in_kernel, 2);
        stats_ratio(out, "python_kernel_cframe_reads_per_sample", (double)kc->py_cframes,
                    (double)st->samples_in_kernel, 2);
    }
}

/* -- Teaching the kernel -------------------------------------------------------------------- */

static size_t tid_slot(const struct pykernel *pk, uint32_t tid)
{
    size_t j = (tid * 2654435761u) & (pk->cap_tids - 1);

    while (pk->tids[j].tid && pk->tids[j].tid != tid)
        j = (j + 1) & (pk->cap_tids - 1);
    return j;
}

static int tids_grow(struct pykernel *pk)
{
    struct pk_tid *old = pk->tids;
    size_t ocap = pk->cap_tids;

    pk->tids = calloc(ocap * 2, sizeof(*pk->tids));
    if (!pk->tids) {
        pk->tids = old;
        return -ENOMEM;
    }
    pk->cap_tids = ocap * 2;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].tid)
            pk->tids[tid_slot(pk, old[i].tid)] = old[i];
    free(old);
    return 0;
}

/* The process's layout into the kernel, once. False when the kernel cannot read it. */
static bool proc_ready(struct pykernel *pk, struct pystack *ps, pid_t pid)
{
    struct sample_pylayout L;
    struct pk_proc *p;

    for (size_t i = 0; i < pk->nprocs; i++)
        if (pk->procs[i].pid == pid)
            return !pk->procs[i].refused;
    if (pk->nprocs == pk->cap_procs) {
        size_t cap = pk->cap_procs ? pk->cap_procs * 2 : 4;
        struct pk_proc *n = realloc(pk->procs, cap * sizeof(*n));

        if (!n)
            return false;
        pk->procs = n;
        pk->cap_procs = cap;
    }
    p = &pk->procs[pk->nprocs++];
    p->pid = pid;
    p->refused =
        pykernel_layout(&pystack_runtime(ps)->L, &L) != 0 || pk->teach.layout(pk->teach.arg, pid, &L) != 0;
    if (!p->refused && pk->teach.gil) {
        /* --mode gil: where the GIL is; without it every sample of the process stays "unknown"
         * and is left out. */
        const struct pyrt *rt = pystack_runtime(ps);
        struct sample_pygil g = {.runtime = rt->runtime_addr,
                                 .locked = rt->L.gil_locked,
                                 .holder = rt->L.gil_holder,
                                 .ts_interp = (__u16)rt->L.ts_interp,
                                 .in_runtime = rt->L.gil_in_runtime};

        if (rt->L.gil_holder && rt->L.ts_interp < 0xffff)
            (void)pk->teach.gil(pk->teach.arg, pid, &g);
    }
    return !p->refused;
}

/* tid's thread state (SAMPLE_PY_NO_TSTATE: none) into the kernel; `again` when the kernel
 * dropped its entry or the thread has a state since. */
static void learn(struct pykernel *pk, pid_t pid, uint32_t tid, uint64_t tstate, uint64_t pthread, bool again)
{
    size_t j = tid_slot(pk, tid);

    if (pk->tids[j].tid && !again && pk->tids[j].none == (tstate == SAMPLE_PY_NO_TSTATE))
        return;
    if (pk->teach.tstate(pk->teach.arg, pid, (pid_t)tid, tstate, pthread))
        return;
    if (tstate != SAMPLE_PY_NO_TSTATE)
        pk->st.threads_taught++;
    pk->tids[j].ns = monotime_ns();
    pk->tids[j].none = tstate == SAMPLE_PY_NO_TSTATE;
    if (!pk->tids[j].tid) {
        pk->tids[j].tid = tid;
        if (++pk->ntids * 2 > pk->cap_tids)
            tids_grow(pk);
    }
}

/* After a remote read of tid: its thread state into the kernel, unless it is there already (a
 * record drained with others taken before the thread was taught says nothing). A thread with
 * no thread state gets SAMPLE_PY_NO_TSTATE: its records stop waking the collector and are still
 * read here, which teaches it once it has one. */
static void teach(struct pykernel *pk, struct pystack *ps, const struct sample_event *ev)
{
    const struct pk_tid *k;
    uint64_t tstate;
    bool again;

    if (!pk->teach.layout || !proc_ready(pk, ps, ev->pid))
        return;
    k = &pk->tids[tid_slot(pk, ev->tid)];
    again = (ev->py_flags & SAMPLE_PY_STALE) || ((ev->py_flags & SAMPLE_PY_UNTAUGHT) && ev->time_ns > k->ns);
    if (k->tid && !k->none && !again)
        return; /* known: no lookup */
    if (!pystack_thread_state(ps, ev->tid, &tstate, NULL))
        learn(pk, (pid_t)ev->pid, ev->tid, tstate, 0, again);
    else if (ev->py_flags & SAMPLE_PY_UNTAUGHT)
        learn(pk, (pid_t)ev->pid, ev->tid, SAMPLE_PY_NO_TSTATE, 0, again);
}

struct learn_all {
    struct pykernel *pk;
    pid_t pid;
};

static int learn_one(void *arg, pid_t tid, uint64_t tstate, uint64_t pthread)
{
    const struct learn_all *a = arg;

    learn(a->pk, a->pid, (uint32_t)tid, tstate, pthread, false);
    return 0;
}

void pykernel_count_cached(struct pykernel *pk, struct pystack *ps, size_t frames, bool truncated)
{
    pystack_count_cached(ps);
    pk->st.samples_in_kernel++;
    pk->st.frames_in_kernel += frames;
    pk->st.truncated += truncated;
}

static void named_one(void *arg, uint64_t code, uint64_t ident)
{
    const struct learn_all *a = arg;

    a->pk->teach.named(a->pk->teach.arg, a->pid, code, ident);
}

void pykernel_teach_threads(struct pykernel *pk, struct pystack *ps)
{
    struct learn_all a = {pk, pystack_pid(ps)};

    if (!pk || !pk->teach.layout || !proc_ready(pk, ps, a.pid))
        return;
    /* a thread not listed is taught at its first sample */
    if (pystack_each_thread(ps, learn_one, &a) == 0 && pk->teach.named)
        pk->st.codes_named_early += pystack_name_running(ps, named_one, &a);
}

/* Whether the captured chain starts (leaf side) with an eval-loop entry shim: the merge pairs the
 * innermost eval-loop frame with no Python frame then (symbolizing drops the shim). */
static bool leaf_shim(struct pystack *ps, const struct pystack_raw *raw, size_t n)
{
    return n && pystack_runtime(ps)->L.minor >= 12 && raw[0].owner >= PYRT_OWNED_BY_CSTACK;
}

int pykernel_frames(struct pykernel *pk, struct pystack *ps, const struct sample_event *ev, size_t len,
                    struct pystack_frame *out, size_t max, unsigned *flags, bool *in_kernel)
{
    bool truncated = false;
    int n;

    if (in_kernel)
        *in_kernel = false;
    n = pykernel_decode(ev, len, pk->raw, MAX_RAW, &truncated);
    if (n >= 0) {
        bool shim = leaf_shim(ps, pk->raw, (size_t)n);
        size_t raw = (size_t)n;

        /* Named from entries of the objects that ran (pycode.h): a frame that cannot be named
         * shows so; a remote read now would only put another instant's chain in its place. */
        bool final = false;
        n = pystack_symbolize(ps, pk->raw, raw, truncated, out, max, &final);
        /* The kernel met a code object not named before: each of the chain's is now (or was
         * freed first), and its chains stop waking the collector. */
        if ((ev->py_flags & SAMPLE_PY_UNNAMED) && pk->teach.named)
            for (size_t i = 0; i < raw; i++)
                if (pk->raw[i].ident)
                    pk->teach.named(pk->teach.arg, ev->pid, pk->raw[i].code, pk->raw[i].ident);
        pk->st.samples_in_kernel++;
        pk->st.frames_in_kernel += n > 0 ? (uint64_t)n : 0;
        if (truncated)
            pk->st.truncated++;
        if (flags)
            *flags = (truncated ? PYSTACK_TRUNCATED : 0) | (shim ? PYSTACK_LEAF_SHIM : 0) |
                     (final ? PYSTACK_FINAL : 0);
        if (in_kernel)
            *in_kernel = true;
        return n;
    }
    pk->st.fallbacks++;
    if (ev->py_flags & SAMPLE_PY_STALE)
        pk->st.stale++;
    if (ev->py_flags & SAMPLE_PY_BROKEN)
        pk->st.broken++;
    n = pystack_read(ps, ev->tid, out, max, flags);
    if (n >= 0)
        teach(pk, ps, ev);
    return n;
}
