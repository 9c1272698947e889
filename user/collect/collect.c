/*
 * collect — one record → one profile stack (see collect.h).
 */
#include "collect/collect_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/fcache.h"
#include "collect/merge.h"
#include "collect/native.h"
#include "collect/threads.h"
#include "python/pykernel.h"
#include "symbols/elfsym.h"
#include "symbols/ksyms.h"
#include "util/monotime.h"

static const char *const marker_names[MARK_N] = {"[truncated]", "[native]", "[kernel]", "[unknown]"};

#define READ_REUSE_NS 1000000ull
/* An on-CPU record drained from the sampler's ring later than this is older than the stack a
 * read now finds: its Python frames are left out (python_reads_late), not taken from another
 * instant, and its native frames stand as they are, as a sample's do before its process is
 * known to be Python (not a merge error: nothing was paired). Most are the records drained
 * with the one that attached a launched command, up to a start-up drain period old. Four drain
 * periods of a run that reads stacks at the drain (main.c). A dump's records (no sampler) are
 * of threads it holds still or read in the same pass. */
#define READ_LATE_NS 20000000ull

int collect_open(struct collector **out, const struct collect_opts *o, struct profile *prof)
{
    struct collector *c = calloc(1, sizeof(*c));
    int err;

    *out = NULL;
    if (!c)
        return -ENOMEM;
    c->opts = *o;
    c->prof = prof;
    err = threads_init(&c->threads);
    c->frames = calloc(3 + COLLECT_MAX_DEPTH + COLLECT_MAX_PY + SAMPLE_MAX_STACK_DEPTH, sizeof(*c->frames));
    c->ips = calloc(COLLECT_MAX_DEPTH, sizeof(*c->ips));
    c->native = calloc(COLLECT_MAX_DEPTH, sizeof(*c->native));
    c->merged = calloc(COLLECT_MAX_DEPTH + COLLECT_MAX_PY + 1, sizeof(*c->merged));
    c->py = calloc(COLLECT_MAX_PY, sizeof(*c->py));
    c->raw = calloc(SAMPLE_PY_FRAMES_MAX, sizeof(*c->raw));
    c->kern = calloc(SAMPLE_MAX_STACK_DEPTH, sizeof(*c->kern));
    if (err || !c->frames || !c->ips || !c->native || !c->merged || !c->py || !c->raw || !c->kern ||
        (o->offcpu && offcpu_open(&c->off))) {
        collect_close(c);
        return -ENOMEM;
    }
    err = elfsym_cache_new(&c->elf);
    if (err) {
        collect_close(c);
        return err;
    }
    if (o->kernel || o->offcpu) {
        err = ksyms_open(&c->ksyms);
        if (err) {
            collect_close(c);
            return err;
        }
    }
    *out = c;
    return 0;
}

void collect_close(struct collector *c)
{
    if (!c)
        return;
    pykernel_close(c->pk);
    for (size_t i = 0; i < c->ntargets; i++) {
        if (c->targets[i].py == PY_RETRY)
            collect_python_note(c, &c->targets[i]); /* ended while attaching was still retried */
        proc_close(c->targets[i].proc);
        pystack_close(c->targets[i].ps);
        merge_free(&c->targets[i].merge);
        fcache_free(&c->targets[i].fc);
        scache_free(&c->targets[i].sc);
    }
    fcache_free(&c->kfc);
    elfsym_cache_free(c->elf); /* after the procs: files they held are gone with them */
    free(c->targets);
    free(c->native);
    free(c->merged);
    free(c->py);
    free(c->raw);
    free(c->kern);
    offcpu_close(c->off);
    if (c->ksyms)
        ksyms_close(c->ksyms);
    threads_free(&c->threads);
    free(c->frames);
    free(c->ips);
    free(c);
}

void collect_get_stats(const struct collector *c, struct collect_stats *out)
{
    *out = c->st;
    out->unwind_errors = c->nst.unwind_errors;
    out->unwind_truncated = c->nst.unwind_truncated;
    out->copy_errors = c->nst.copy_errors;
    out->stack_copy_bytes = c->nst.stack_copy_bytes;
    out->unknown_frames += c->nst.unknown_frames;
    out->frame_cache_hits = c->kfc.hits;
    out->frame_cache_misses = c->kfc.misses;
    out->frame_cache_flushes = c->kfc.flushes;
    for (size_t i = 0; i < c->ntargets; i++) {
        const struct collect_target *t = &c->targets[i];
        struct proc_stats ps;

        out->merge_errors += t->merge.merge_errors;
        out->python_attach_pending += t->py == PY_UNTRIED || t->py == PY_RETRY;
        out->frame_cache_hits += t->fc.hits;
        out->frame_cache_misses += t->fc.misses;
        out->frame_cache_flushes += t->fc.flushes;
        out->sample_cache_hits += t->sc.hits;
        out->sample_cache_misses += t->sc.misses;
        if (t->ps) {
            struct pystack_stats pst;
            pystack_get_stats(t->ps, &pst);
            out->python_code_freed += pst.code_freed;
            out->python_code_objects += pst.code_objects;
        }
        if (!t->proc)
            continue;
        proc_get_stats(t->proc, &ps);
        out->proc.refreshes += ps.refreshes;
        out->proc.files_opened += ps.files_opened;
        out->proc.jit_regions += ps.jit_regions;
        out->proc.jit_reloads += ps.jit_reloads;
        out->proc.unwinds += ps.unwinds;
        out->proc.frames += ps.frames;
        out->proc.row_hits += ps.row_hits;
        out->proc.row_misses += ps.row_misses;
        out->proc.fp_steps += ps.fp_steps;
        out->proc.dwarf_steps += ps.dwarf_steps;
        out->proc.memo_hits += ps.memo_hits;
    }
}

static struct threads_filter thread_filter(const struct collector *c)
{
    return (struct threads_filter){.tids = c->opts.tids, .ntids = c->opts.ntids, .name = c->opts.thread_name};
}

/* The thread's root frame; *fresh set when the thread is new, *keep when --tid and
 * --thread-name let it through. `since`: the sample's instant (monotime_ns). */
static int64_t thread_frame(struct collector *c, struct collect_target *tg, uint32_t tid, const char *comm,
                            uint64_t since, bool *fresh, bool *keep)
{
    const struct threads_filter flt = thread_filter(c);
    int64_t f = threads_frame(&c->threads, c->prof, tid, tg ? (uint32_t)tg->pid : 0, comm, tg ? tg->ps : NULL,
                              &flt, since, fresh, keep);

    if (*fresh)
        c->st.threads++;
    return f;
}

uint64_t collect_name_threads(struct collector *c, bool last)
{
    const struct threads_filter flt = thread_filter(c);

    if (!last && (c->threads.name_due == UINT64_MAX || monotime_ns() < c->threads.name_due))
        return c->threads.name_due;
    c->threads.name_due = UINT64_MAX;
    for (size_t i = 0; i < c->ntargets; i++)
        if (c->targets[i].ps)
            threads_name_pending(&c->threads, c->prof, (uint32_t)c->targets[i].pid, c->targets[i].ps, &flt,
                                 last);
    return c->threads.name_due;
}

/* Counts a sample with n Python frames (none: not a Python sample). */
static void count_python(struct collector *c, struct collect_target *t, size_t n)
{
    if (n) {
        t->py_samples++;
        c->st.python_samples++;
        c->st.python_frames += n;
    }
}

/* The Python frames of `tid`, leaf first, into c->py; their number (0: none). A record that
 * carries the chain the kernel captured at the sample instant is symbolised from it (counted in
 * st.python_frames_in_kernel); otherwise the stack is read now (pykernel then teaches the
 * kernel the thread), or a read of the same thread a moment ago is reused, and kept only when
 * an on-CPU record is recent enough for that stack to be its own. (An off-CPU record's thread
 * is waiting: its stack stays as it left it.) */
static size_t python_frames(struct collector *c, struct collect_target *t, uint32_t tid,
                            const struct sample_event *ev, size_t len, unsigned *pflags)
{
    unsigned flags = 0;
    bool in_kernel = false;
    uint64_t now;
    int n;

    c->py_late = false;
    if (!t->ps)
        return 0;
    if (ev && c->pk && pykernel_has_chain(ev)) {
        n = pykernel_frames(c->pk, t->ps, ev, len, c->py, COLLECT_MAX_PY, &flags, &in_kernel);
        if (n > 0 && in_kernel)
            c->st.python_frames_in_kernel += (uint64_t)n;
        c->last_t = NULL; /* c->py no longer holds the last read */
        goto done;
    }
    now = monotime_ns();
    if (c->last_t == t && c->last_tid == tid && now - c->last_ns < READ_REUSE_NS) {
        c->st.python_reads_reused++;
        n = (int)c->last_np;
        flags = c->last_flags;
    } else {
        if (ev && c->pk)
            n = pykernel_frames(c->pk, t->ps, ev, len, c->py, COLLECT_MAX_PY, &flags, &in_kernel);
        else
            n = pystack_read(t->ps, (pid_t)tid, c->py, COLLECT_MAX_PY, &flags);
        c->last_t = t;
        c->last_tid = tid;
        c->last_ns = now;
        c->last_np = n > 0 ? (size_t)n : 0;
        c->last_flags = flags;
    }
    if (n > 0) {
        c->st.python_reads_remote++;
        if (c->sampler && ev && !(ev->flags & SAMPLE_F_OFFCPU) && now > ev->time_ns &&
            now - ev->time_ns > READ_LATE_NS) {
            c->st.python_reads_late++;
            c->py_late = true;
            n = 0;
        }
    }
done:
    *pflags = flags;
    if (n < 0) {
        if (n != -ESRCH)
            c->st.python_read_errors++;
        return 0;
    }
    /* The root side of the Python stack is missing: cut at the depth cap, or the walk stopped
     * early (read budget spent, unreadable or invalid frame, loop). */
    if (n > 0 && (flags & (PYSTACK_TRUNCATED | PYSTACK_BROKEN)))
        c->truncated = true;
    count_python(c, t, (size_t)n);
    return (size_t)n;
}

static int64_t other_frame(struct collector *c, enum marker m)
{
    int64_t f;

    if (c->marker[m])
        return c->marker[m] - 1;
    f = profile_frame(c->prof, FRAME_OTHER, marker_names[m], NULL, 0);
    if (f >= 0)
        c->marker[m] = (uint32_t)f + 1;
    return f;
}

/* Starts c->frames with the thread's frame and, when the root side of the stack is missing
 * (native or Python depth limit, a Python walk that stopped early), [truncated]: the cut stack
 * must not pose as a root of its own. Returns the frames placed, or a negative errno. */
static int stack_begin(struct collector *c, uint32_t thread)
{
    int64_t f;

    c->frames[0] = thread;
    if (!c->truncated)
        return 1;
    if ((f = other_frame(c, MARK_TRUNCATED)) < 0)
        return (int)f;
    c->frames[1] = (uint32_t)f;
    return 2;
}

/* Adds the stack c->frames[0..n) (thread frame first) as one sample of `weight` (0: an off-CPU
 * stack, weighed when its thread comes back). Returns its profile node, or a negative errno. */
static int64_t stack_add(struct collector *c, size_t n, uint64_t weight)
{
    int64_t f;

    c->st.frames += n - 1;
    f = profile_add(c->prof, c->frames, n, weight);
    if (f < 0)
        return f;
    c->st.samples++;
    return f;
}

/* Python frames c->py[0..np) root → leaf at c->frames + n; the new count. */
static size_t put_python(struct collector *c, size_t n, size_t np)
{
    for (size_t i = np; i-- > 0;)
        c->frames[n++] = c->py[i].frame;
    return n;
}

static int64_t state_frame(struct collector *c, enum offcpu_state st)
{
    int64_t f;

    if (c->state_frame[st])
        return c->state_frame[st] - 1;
    f = profile_frame(c->prof, FRAME_OTHER, offcpu_state_frame(st), NULL, 0);
    if (f >= 0)
        c->state_frame[st] = (uint32_t)f + 1;
    return f;
}

/* The kernel frames of a record, leaf first, into c->kern, their number into *nk. 0 or -ENOMEM. */
static int kernel_frames(struct collector *c, const struct sample_event *ev, size_t *nk)
{
    int64_t f;

    *nk = ev->kstack_len / 8;
    if (*nk > SAMPLE_MAX_STACK_DEPTH)
        *nk = SAMPLE_MAX_STACK_DEPTH;
    if (!*nk)
        c->st.kernel_errors++;
    const __u64 *kstack = sample_kstack(ev);
    for (size_t i = 0; i < *nk; i++) {
        f = native_kernel_frame(c->prof, c->ksyms, &c->kfc, kstack[i], i == 0, &c->nst);
        if (f < 0)
            return (int)f;
        c->kern[i] = (uint32_t)f;
    }
    return 0;
}

/* An off-CPU stack's state frame goes right above its leaf-most Python frame (below the native
 * frames that lead to the wait), or above the thread frame when it has none. */
static void insert_state(struct collector *c, size_t *n, uint32_t frame)
{
    size_t at = 1;

    for (size_t i = *n; i-- > 1;)
        if (c->prof->frames[c->frames[i]].kind == FRAME_PYTHON) {
            at = i + 1;
            break;
        }
    memmove(&c->frames[at + 1], &c->frames[at], (*n - at) * sizeof(*c->frames));
    c->frames[at] = frame;
    (*n)++;
}

/* --python-only: a Python target's native frames are not shown, nor those of a target that may
 * still turn out to be Python (a launched command's start-up, before its runtime is found: its
 * samples are "[native]" as a Python target's samples without Python frames are). */
static bool native_hidden(const struct collector *c, const struct collect_target *t)
{
    return c->opts.python_only && t->py != PY_NONE;
}

/* The user-space frames of a record (native c->ips[0..nu), Python c->py[0..np)) root first at
 * c->frames + *n. Returns 1 when every frame was named for good (the sample cache may keep
 * them: each native answer settled — a name, or none in a file mapping, as a stripped binary's
 * address stays —, no merge error, each Python frame final), 0 when not, or a negative errno. */
static int user_frames(struct collector *c, struct collect_target *t, size_t nu, size_t np, unsigned pyflags,
                       bool off, size_t *pn)
{
    uint64_t unsettled = c->nst.unsettled_frames;
    size_t n = *pn;
    bool merr = false;
    int64_t f;
    int m;

    /* An off-CPU stack's native frames name its state even when they are not shown. */
    if (!native_hidden(c, t) || off) {
        for (size_t i = 0; i < nu; i++) {
            f = native_user_frame(c->prof, t->proc, &t->fc, c->ips[i], i == 0, &c->nst);
            if (f < 0)
                return (int)f;
            c->native[i] = (uint32_t)f;
        }
    }
    if (native_hidden(c, t)) {
        n = put_python(c, n, np);
        if (!np) {
            if ((f = other_frame(c, MARK_NATIVE)) < 0)
                return (int)f;
            c->frames[n++] = (uint32_t)f;
        }
    } else if (t->ps && !c->py_late) {
        m = merge_stack(&t->merge, c->native, nu, c->py, np, pyflags, c->merged,
                        COLLECT_MAX_DEPTH + COLLECT_MAX_PY + 1, &merr);
        if (m < 0)
            return m;
        for (size_t i = (size_t)m; i-- > 0;)
            c->frames[n++] = c->merged[i];
    } else {
        for (size_t i = nu; i-- > 0;)
            c->frames[n++] = c->native[i];
    }
    *pn = n;
    return c->nst.unsettled_frames == unsettled && !merr && (!t->ps || (pyflags & PYSTACK_FINAL));
}

/* Sample cache key flags: what besides the addresses and the chain decided the frames. */
#define SK_NATIVE_CUT 1u /* the native unwind stopped at a limit */
#define SK_PY         2u /* the target is Python: its chain is part of the key */
#define SK_PY_CUT     4u /* the kernel's chain was cut at its depth limit */
#define SK_LEAF_FRAME 8u /* the key's leaf is the leaf's frame, not its address */

/* The key's leaf: the leaf's frame once the frame cache has it (an answer it keeps is settled,
 * and the frames built from the record are the same for every address in it), else its address.
 * Returns whether it is the frame. */
static bool key_leaf(const struct collect_target *t, const uint64_t *ips, size_t nu, struct scache_key *k)
{
    uint32_t frame;
    unsigned flags;

    k->flags &= ~SK_LEAF_FRAME;
    k->leaf = nu ? ips[0] : 0;
    if (!nu || !fcache_find(&t->fc, proc_generation(t->proc), ips[0], true, &frame, &flags))
        return false;
    k->leaf = frame;
    k->flags |= SK_LEAF_FRAME;
    return true;
}

/* The sample cache key of a record unwound into c->ips[0..nu), or false when its user frames
 * are not to be remembered: an off-CPU record (its native frames name its state), --python-only,
 * a Python target's record without the chain of its instant (a read at the drain is another
 * instant's) or with a code object new to the kernel (naming it teaches the kernel). */
static bool sample_key(struct collector *c, const struct collect_target *t, const struct sample_event *ev,
                       size_t len, size_t nu, bool off, struct scache_key *k)
{
    bool cut = false;
    int n = 0;

    if (off || !t->proc || native_hidden(c, t))
        return false;
    if (t->ps && (!c->pk || !pykernel_has_chain(ev) || (ev->py_flags & SAMPLE_PY_UNNAMED) ||
                  (n = pykernel_decode(ev, len, c->raw, SAMPLE_PY_FRAMES_MAX, &cut)) < 0))
        return false;
    *k = (struct scache_key){.ips = c->ips + (nu ? 1 : 0),
                             .nips = nu ? nu - 1 : 0,
                             .py = t->ps ? c->raw : NULL,
                             .npy = (size_t)n,
                             .flags = (c->truncated ? SK_NATIVE_CUT : 0) | (t->ps ? SK_PY : 0) |
                                      (cut ? SK_PY_CUT : 0)};
    key_leaf(t, c->ips, nu, k);
    return true;
}

/* A sample cache hit counts what building its frames would have (python_frames, merge_stack). */
static void count_hit(struct collector *c, struct collect_target *t, const struct scache_key *k,
                      const struct scache_val *v)
{
    c->truncated = v->truncated;
    c->py_late = false;
    c->nst.unknown_frames += v->unknown;
    if (!t->ps)
        return;
    c->last_t = NULL; /* as a chain's naming leaves it */
    pykernel_count_cached(c->pk, t->ps, v->py_frames, k->flags & SK_PY_CUT);
    t->merge.merged += v->merged;
    c->st.python_frames_in_kernel += v->py_frames;
    count_python(c, t, v->py_frames);
}

int collect_sample(struct collector *c, const struct sample_event *ev, size_t len)
{
    struct collect_target *t = collect_find_target(c, ev->pid);
    size_t n, nu, nk = 0, np, kskip = 0;
    bool off = (ev->flags & SAMPLE_F_OFFCPU) && c->off;
    enum offcpu_state state = OFFCPU_BLOCKED;
    unsigned pyflags = 0;
    bool fresh, keep, cacheable, hit = false;
    struct scache_key key;
    struct scache_val cv;
    uint64_t hash = 0, gen = 0;
    int64_t f;
    int m;

    if (!t)
        return -ENOMEM;
    if (!t->proc)
        c->st.proc_errors++;
    else
        (void)proc_recheck(t->proc, ev->time_ns); /* reused JIT code; -ENOMEM: the old names stay */
    collect_attach_python(c, t);
    f = thread_frame(c, t, ev->tid, ev->comm, ev->time_ns, &fresh, &keep);
    if (f < 0)
        return (int)f;
    if (!keep)
        return fresh ? 1 : 0;

    c->truncated = false;
    nu = native_unwind(t->proc, c->opts.unwind, ev, len, c->ips, COLLECT_MAX_DEPTH, &c->truncated, &c->nst);
    if (native_hidden(c, t))
        c->truncated = false; /* native frames are not shown */
    /* The stack met before gives its frames at once; else they are built and remembered. */
    if ((cacheable = sample_key(c, t, ev, len, nu, off, &key))) {
        hash = scache_hash(&key);
        gen = proc_generation(t->proc);
        hit = scache_get(&t->sc, gen, &key, hash, &cv);
    }
    if (hit) {
        count_hit(c, t, &key, &cv);
        np = cv.py_frames;
    } else {
        np = python_frames(c, t, ev->tid, ev, len, &pyflags);
    }
    /* --mode gil: a sample the kernel could not check yet has taught it the thread (the read
     * above); it is left out, not guessed. */
    if (c->opts.gil == SAMPLE_GIL_ONLY && !(ev->flags & SAMPLE_F_GIL_HELD)) {
        c->st.gil_unknown++;
        return fresh ? 1 : 0;
    }
    /* top: the share of samples taken holding the GIL, of on-CPU samples the kernel could check
     * (an off-CPU record is not checked: its thread is waiting, not running). */
    if (c->opts.gil == SAMPLE_GIL_MARK && !(ev->flags & (SAMPLE_F_OFFCPU | SAMPLE_F_GIL_UNKNOWN))) {
        c->st.gil_checked++;
        c->st.gil_held += !!(ev->flags & SAMPLE_F_GIL_HELD);
        collect_gil_count(c, ev->tid, ev->flags & SAMPLE_F_GIL_HELD);
    }
    if ((m = stack_begin(c, (uint32_t)f)) < 0)
        return m;
    n = (size_t)m;
    if (hit) {
        memcpy(&c->frames[n], cv.frames, cv.nframes * sizeof(*c->frames));
        n += cv.nframes;
    } else {
        size_t n0 = n;
        uint64_t merged0 = t->merge.merged, unknown0 = c->nst.unknown_frames;

        if ((m = user_frames(c, t, nu, np, pyflags, off, &n)) < 0)
            return m;
        if (m && cacheable) {
            /* a leaf met for the first time has its frame now: the stack is offered under the
             * key its next sample will have */
            if (!(key.flags & SK_LEAF_FRAME) && key_leaf(t, c->ips, nu, &key))
                hash = scache_hash(&key);
            cv = (struct scache_val){.frames = &c->frames[n0],
                                     .nframes = n - n0,
                                     .py_frames = (uint32_t)np,
                                     .unknown = (uint32_t)(c->nst.unknown_frames - unknown0),
                                     .truncated = c->truncated,
                                     .merged = t->merge.merged != merged0};
            (void)scache_put(&t->sc, gen, &key, hash, &cv); /* -ENOMEM: built again next time */
        }
    }

    if ((c->opts.kernel && (ev->flags & SAMPLE_F_IN_KERNEL)) || off) {
        if ((m = kernel_frames(c, ev, &nk)) < 0)
            return m;
    }
    if (off) {
        kskip = offcpu_switch_frames(c->prof, c->kern, nk);
        state =
            offcpu_state(c->prof, c->native, nu, c->kern + kskip, nk - kskip, ev->flags & SAMPLE_F_PREEMPTED);
        if (c->opts.no_idle && state == OFFCPU_IDLE)
            return offcpu_left(c->off, ev->tid, 0, state) ? -ENOMEM : fresh ? 1 : 0;
        if ((f = state_frame(c, state)) < 0)
            return (int)f;
        insert_state(c, &n, (uint32_t)f);
    }
    if (c->opts.kernel)
        for (size_t i = nk; i-- > kskip;)
            c->frames[n++] = c->kern[i];

    if (n == 1) {
        /* No user registers (a thread inside exec, or a kernel thread) and no kernel stack asked
         * for: the sample still counts, under a frame that says where it was. */
        f = other_frame(c, (ev->flags & SAMPLE_F_IN_KERNEL) ? MARK_KERNEL : MARK_UNKNOWN);
        if (f < 0)
            return (int)f;
        c->frames[n++] = (uint32_t)f;
        c->st.unknown_frames++;
    }
    /* An off-CPU stack weighs nothing until its thread comes back (collect_wake). */
    f = stack_add(c, n, off ? 0 : c->opts.sample_weight ? c->opts.sample_weight : 1);
    if (f < 0)
        return (int)f;
    if (off && offcpu_left(c->off, ev->tid, (uint32_t)f, state))
        return -ENOMEM;
    return fresh ? 1 : 0;
}

void collect_wake(struct collector *c, const struct sample_wake *w)
{
    if (c->off)
        offcpu_back(c->off, c->prof, w->tid, w->off_ns);
}

void collect_offcpu_stats(const struct collector *c, struct offcpu_stats *out)
{
    if (c->off)
        offcpu_get_stats(c->off, out);
    else
        memset(out, 0, sizeof(*out));
}

int collect_python_sample(struct collector *c, pid_t pid, pid_t tid, const char *comm)
{
    struct collect_target *t = collect_find_target(c, pid);
    const uint64_t now = monotime_ns(); /* the frames are read from here on */
    unsigned pyflags = 0;
    bool fresh, keep;
    size_t np;
    int64_t f;
    int n;

    if (!t)
        return -ENOMEM;
    collect_attach_python(c, t);
    if (!t->ps)
        return -EAGAIN;
    c->truncated = false;
    np = python_frames(c, t, (uint32_t)tid, NULL, 0, &pyflags);
    if (!np)
        return 0;
    f = thread_frame(c, t, (uint32_t)tid, comm, now, &fresh, &keep);
    if (f < 0)
        return (int)f;
    if (!keep)
        return 0;
    if ((n = stack_begin(c, (uint32_t)f)) < 0)
        return n;
    if ((f = stack_add(c, put_python(c, (size_t)n, np), 1)) < 0)
        return (int)f;
    if (c->opts.gil == SAMPLE_GIL_MARK && t->gil_read) {
        uint64_t tstate;

        if (!pystack_thread_state(t->ps, tid, &tstate, NULL)) {
            bool held = t->gil_holder && tstate == t->gil_holder;

            collect_gil_count(c, (uint32_t)tid, held);
            t->gil_sampled = true;
            t->gil_matched |= held;
        }
    }
    return 1;
}

int collect_python_tick(struct collector *c, pid_t pid)
{
    struct collect_target *t = collect_find_target(c, pid);
    int rc;

    if (!t)
        return -ENOMEM;
    if (!t->ps)
        return -EAGAIN;
    /* Every thread is sampled at a tick and one at most holds the GIL: the process's share is
     * of the ticks that sampled a thread, held when the holder was one of them (a holder with no
     * Python frame, as during start-up, is not seen); the tick before is counted now. */
    if (t->gil_read && t->gil_sampled) {
        c->st.gil_checked++;
        c->st.gil_held += t->gil_matched;
    }
    t->gil_sampled = t->gil_matched = false;
    rc = pystack_gil_holder(t->ps, &t->gil_holder);
    t->gil_read = rc == 0;
    return rc;
}

void collect_python_stats(const struct collector *c, struct stats out)
{
    const struct collect_target *best = NULL;
    struct sampler_stats kc;
    struct collect_stats all;
    const struct collect_stats *s = &all;

    for (size_t i = 0; i < c->ntargets; i++)
        if (c->targets[i].ps && (!best || c->targets[i].py_samples > best->py_samples))
            best = &c->targets[i];
    collect_get_stats(c, &all);
    stats_count(out, "python_targets", s->python_targets);
    stats_count(out, "python_stack_samples", s->python_samples);
    stats_ratio(out, "python_frames_per_sample", (double)s->python_frames, (double)s->python_samples, 1);
    stats_count(out, "python_read_errors", s->python_read_errors);
    stats_count(out, "python_reads_reused", s->python_reads_reused);
    stats_count(out, "python_reads_late", s->python_reads_late);
    stats_count(out, "python_frames_in_kernel", s->python_frames_in_kernel);
    stats_count(out, "merge_errors", s->merge_errors);
    if (c->pk)
        pykernel_stats(c->pk, c->sampler && !sampler_get_stats(c->sampler, &kc) ? &kc : NULL, out);
    if (best) {
        /* Remote calls per profile sample (reused reads count as samples); pystack's own figure,
         * per pystack_read, is its pystack_reads_per_sample. */
        pystack_stats(best->ps, out);
        stats_ratio(out, "reads_per_sample", (double)pystack_remote_stats(best->ps)->calls,
                    (double)best->py_samples, 3);
    }
}
