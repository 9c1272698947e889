/*
 * collect — one record → one profile stack (see collect.h).
 */
#include "collect/collect.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collect/framecache.h"
#include "collect/merge.h"
#include "python/pykernel.h"
#include "symbols/ksyms.h"

/* A target that is not Python yet may be a launched command before its exec, or an
 * interpreter still starting: attaching is retried this often, for this long. */
#define PY_RETRY_NS  250000000ull
#define PY_WINDOW_NS 3000000000ull

enum py_state { PY_UNTRIED, PY_ATTACHED, PY_RETRY, PY_NONE };

struct target {
    pid_t pid;
    struct proc *proc; /* NULL when proc_open failed */
    enum py_state py;
    struct pystack *ps;
    struct merge merge;
    struct fcache fc; /* user address -> frame, valid for one proc_generation */
    uint64_t py_first_ns, py_next_ns;
    uint64_t py_samples;
    char py_err[256]; /* why the last attach failed */
};

struct thread {
    uint32_t tid; /* 0: empty slot */
    uint32_t frame;
    char comm[SAMPLE_COMM_LEN];
};

/* Frames that stand for no address; interned once (frame indices never change). */
enum marker { MARK_TRUNCATED, MARK_NATIVE, MARK_KERNEL, MARK_UNKNOWN, MARK_N };
static const char *const marker_names[MARK_N] = {"[truncated]", "[native]", "[kernel]", "[unknown]"};

struct collector {
    struct collect_opts opts;
    struct profile *prof;
    struct ksyms *ksyms;
    struct target *targets;
    size_t ntargets, cap_targets;
    struct thread *threads; /* open addressing, power-of-two size */
    size_t nthreads, cap_threads;
    struct collect_stats st;
    uint32_t *frames;         /* scratch: one stack */
    uint64_t *ips;            /* scratch: native unwind */
    bool truncated;           /* the last unwind stopped at a depth limit */
    uint32_t *native;         /* scratch: native frames, leaf first */
    uint32_t *merged;         /* scratch: merged user frames, leaf first */
    struct pystack_frame *py; /* scratch: Python frames, leaf first */
    struct pykernel *pk;      /* in-kernel Python chains (NULL: remote reads only) */
    struct fcache kfc;        /* kernel address -> frame (kallsyms is read once: generation 0) */
    uint32_t marker[MARK_N];  /* frame + 1 of each marker, 0 until interned */
    /* The read now in c->py: records drained together (one ring poll) stand for instants a few
     * milliseconds apart, but the Python stack is read when they are drained, so a second
     * record of the same thread within READ_REUSE_NS gets the same read again. */
    struct target *last_t;
    uint32_t last_tid;
    size_t last_np;
    unsigned last_flags;
    uint64_t last_ns;
};

#define READ_REUSE_NS 1000000ull

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void python_note(const struct collector *c, const struct target *t)
{
    if (c->opts.verbose)
        fprintf(stderr, "pyebpf-sample: PID %d: no Python frames (%s); native frames only\n", (int)t->pid,
                t->py_err);
}

int collect_open(struct collector **out, const struct collect_opts *o, struct profile *prof)
{
    struct collector *c = calloc(1, sizeof(*c));
    int err;

    *out = NULL;
    if (!c)
        return -ENOMEM;
    c->opts = *o;
    c->prof = prof;
    c->cap_threads = 256;
    c->threads = calloc(c->cap_threads, sizeof(*c->threads));
    c->frames = calloc(3 + COLLECT_MAX_DEPTH + COLLECT_MAX_PY + SAMPLE_MAX_STACK_DEPTH, sizeof(*c->frames));
    c->ips = calloc(COLLECT_MAX_DEPTH, sizeof(*c->ips));
    c->native = calloc(COLLECT_MAX_DEPTH, sizeof(*c->native));
    c->merged = calloc(COLLECT_MAX_DEPTH + COLLECT_MAX_PY + 1, sizeof(*c->merged));
    c->py = calloc(COLLECT_MAX_PY, sizeof(*c->py));
    if (!c->threads || !c->frames || !c->ips || !c->native || !c->merged || !c->py) {
        collect_close(c);
        return -ENOMEM;
    }
    if (o->kernel) {
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
            python_note(c, &c->targets[i]); /* ended while attaching was still retried */
        proc_close(c->targets[i].proc);
        pystack_close(c->targets[i].ps);
        merge_free(&c->targets[i].merge);
        fcache_free(&c->targets[i].fc);
    }
    fcache_free(&c->kfc);
    free(c->targets);
    free(c->native);
    free(c->merged);
    free(c->py);
    if (c->ksyms)
        ksyms_close(c->ksyms);
    free(c->threads);
    free(c->frames);
    free(c->ips);
    free(c);
}

void collect_stats(const struct collector *c, struct collect_stats *out)
{
    *out = c->st;
    out->frame_cache_hits = c->kfc.hits;
    out->frame_cache_misses = c->kfc.misses;
    out->frame_cache_flushes = c->kfc.flushes;
    for (size_t i = 0; i < c->ntargets; i++) {
        out->merge_errors += c->targets[i].merge.merge_errors;
        out->frame_cache_hits += c->targets[i].fc.hits;
        out->frame_cache_misses += c->targets[i].fc.misses;
        out->frame_cache_flushes += c->targets[i].fc.flushes;
    }
}

/* Attaches `t` as Python when it is one; retried while the target may still be starting. */
static void python_attach(struct collector *c, struct target *t)
{
    char err[256];
    uint64_t now;
    int r;

    if (!c->opts.python || t->py == PY_ATTACHED || t->py == PY_NONE)
        return;
    now = mono_ns();
    if (t->py == PY_UNTRIED)
        t->py_first_ns = now;
    else if (now < t->py_next_ns)
        return;
    r = pystack_open(&t->ps, t->pid, c->prof, &c->opts.py, err, sizeof(err));
    if (!r)
        r = merge_init(&t->merge, c->prof, pystack_runtime(t->ps)->path, c->opts.show_internal);
    if (!r) {
        t->py = PY_ATTACHED;
        c->st.python_targets++;
        if (c->opts.verbose)
            fprintf(stderr, "pyebpf-sample: PID %d is Python %s (%s): Python frames merged\n", (int)t->pid,
                    pystack_runtime(t->ps)->version, pystack_runtime(t->ps)->path);
        return;
    }
    pystack_close(t->ps);
    t->ps = NULL;
    snprintf(t->py_err, sizeof(t->py_err), "%s", err[0] ? err : strerror(-r));
    if (now - t->py_first_ns < PY_WINDOW_NS && r != -ESRCH) {
        t->py = PY_RETRY;
        t->py_next_ns = now + PY_RETRY_NS;
        return;
    }
    t->py = PY_NONE;
    python_note(c, t);
}

void collect_proc_stats(const struct collector *c, struct proc_stats *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < c->ntargets; i++) {
        struct proc_stats ps;

        if (!c->targets[i].proc)
            continue;
        proc_get_stats(c->targets[i].proc, &ps);
        out->refreshes += ps.refreshes;
        out->files_opened += ps.files_opened;
        out->jit_regions += ps.jit_regions;
        out->jit_reloads += ps.jit_reloads;
        out->unwinds += ps.unwinds;
        out->frames += ps.frames;
        out->row_hits += ps.row_hits;
        out->row_misses += ps.row_misses;
        out->fp_steps += ps.fp_steps;
        out->dwarf_steps += ps.dwarf_steps;
    }
}

static struct target *target_get(struct collector *c, pid_t pid)
{
    struct target *t;

    for (size_t i = 0; i < c->ntargets; i++)
        if (c->targets[i].pid == pid)
            return &c->targets[i];
    if (c->ntargets == c->cap_targets) {
        size_t cap = c->cap_targets ? c->cap_targets * 2 : 4;
        struct target *n = realloc(c->targets, cap * sizeof(*n));

        if (!n)
            return NULL;
        c->targets = n;
        c->cap_targets = cap;
    }
    t = &c->targets[c->ntargets++];
    memset(t, 0, sizeof(*t));
    t->pid = pid;
    if (proc_open(&t->proc, pid) < 0)
        t->proc = NULL;
    return t;
}

static uint32_t hash_tid(uint32_t tid)
{
    return tid * 2654435761u;
}

static int threads_grow(struct collector *c)
{
    size_t cap = c->cap_threads * 2;
    struct thread *n = calloc(cap, sizeof(*n));

    if (!n)
        return -ENOMEM;
    for (size_t i = 0; i < c->cap_threads; i++) {
        struct thread *o = &c->threads[i];
        size_t j;

        if (!o->tid)
            continue;
        for (j = hash_tid(o->tid) & (cap - 1); n[j].tid; j = (j + 1) & (cap - 1))
            ;
        n[j] = *o;
    }
    free(c->threads);
    c->threads = n;
    c->cap_threads = cap;
    return 0;
}

/* The thread's root frame; *fresh set when the thread is new. A changed comm (prctl, exec)
 * gets a new frame. */
static int64_t thread_frame(struct collector *c, uint32_t tid, const char *comm, bool *fresh)
{
    char name[64];
    struct thread *t;
    size_t j;
    int64_t f;

    *fresh = false;
    if ((c->nthreads + 1) * 2 > c->cap_threads && threads_grow(c))
        return -ENOMEM;
    for (j = hash_tid(tid) & (c->cap_threads - 1); c->threads[j].tid; j = (j + 1) & (c->cap_threads - 1)) {
        t = &c->threads[j];
        if (t->tid == tid) {
            if (!strncmp(t->comm, comm, SAMPLE_COMM_LEN))
                return t->frame;
            break;
        }
    }
    t = &c->threads[j];
    if (!t->tid) {
        *fresh = true;
        c->nthreads++;
        c->st.threads++;
    }
    snprintf(name, sizeof(name), "thread %u (%.*s)", tid, SAMPLE_COMM_LEN, comm);
    f = profile_frame(c->prof, FRAME_THREAD, name, NULL, 0);
    if (f < 0)
        return f;
    t->tid = tid;
    t->frame = (uint32_t)f;
    memcpy(t->comm, comm, SAMPLE_COMM_LEN);
    return f;
}

/* Whether proc's answer for this address stays the same while proc_generation does, and asking
 * again would do nothing else: proc itself caches it (a name, or anything but unnamed JIT code:
 * code in anonymous memory that may be published later, which proc looks up again, re-reading the
 * JIT files). An unnamed address is kept only in a file mapping, where no re-read is triggered;
 * for a return address proc also looks at ret itself (a signal trampoline starts there), so the
 * answer is kept only when that lookup is in the same page as ret - 1 (hence the same mapping),
 * and not when it named ret's own function (offset 0: ret - 1 had no name, and may be JIT code
 * published later). */
static bool stable_answer(int err, const struct symres *r, uint64_t ip, bool leaf)
{
    if (err)
        return false;
    if (r->name)
        return leaf || r->offset != 0;
    return r->kind == FRAME_NATIVE && r->module && r->module[0] == '/' && (leaf || (ip & 0xfff));
}

/* Interns the frame for one user address (a return address unless leaf). proc re-reads the
 * target's mappings and JIT publications itself (rate-limited) when an address is new. A warm
 * address is answered from the target's frame cache, without symbolising or interning. */
static int64_t user_frame(struct collector *c, struct target *t, uint64_t ip, bool leaf)
{
    struct symres r = {0};
    char buf[512];
    int err = -ENOENT;
    unsigned flags = 0;
    uint32_t frame;
    int64_t f;

    if (t->proc && fcache_get(&t->fc, proc_generation(t->proc), ip, leaf, &frame, &flags)) {
        if (flags & FCACHE_UNKNOWN)
            c->st.unknown_frames++;
        return frame;
    }
    if (t->proc)
        err = leaf ? proc_symbolize(t->proc, ip, &r) : proc_symbolize_ret(t->proc, ip, &r);
    if (err == 0 && r.name) {
        f = profile_frame(c->prof, r.kind == FRAME_JIT ? FRAME_JIT : FRAME_NATIVE, r.name, r.module, 0);
    } else {
        c->st.unknown_frames++;
        flags = FCACHE_UNKNOWN;
        if (err == 0 && r.module) {
            proc_format(&r, buf, sizeof(buf));
            f = profile_frame(c->prof, FRAME_NATIVE, buf, r.module, 0);
        } else {
            f = profile_frame(c->prof, FRAME_OTHER, "[unknown]", NULL, 0);
        }
    }
    /* The generation read after the lookup: a re-read the lookup made is already in it. */
    if (f >= 0 && t->proc && stable_answer(err, &r, ip, leaf))
        fcache_put(&t->fc, proc_generation(t->proc), ip, leaf, (uint32_t)f, flags); /* -ENOMEM: uncached */
    return f;
}

/* kallsyms is read once, so an address's frame never changes. */
static int64_t kernel_frame(struct collector *c, uint64_t addr, bool leaf)
{
    uint64_t off = 0;
    const char *name;
    char buf[32];
    unsigned flags = 0;
    uint32_t frame;
    int64_t f;

    if (fcache_get(&c->kfc, 0, addr, leaf, &frame, &flags)) {
        if (flags & FCACHE_UNKNOWN)
            c->st.unknown_frames++;
        return frame;
    }
    name = ksyms_lookup(c->ksyms, leaf ? addr : addr - 1, &off);
    if (name) {
        f = profile_frame(c->prof, FRAME_KERNEL, name, NULL, 0);
    } else {
        c->st.unknown_frames++;
        flags = FCACHE_UNKNOWN;
        snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
        f = profile_frame(c->prof, FRAME_KERNEL, buf, NULL, 0);
    }
    if (f >= 0)
        fcache_put(&c->kfc, 0, addr, leaf, (uint32_t)f, flags);
    return f;
}

/* Native return addresses, leaf first, into c->ips; returns their number. */
static size_t unwind(struct collector *c, struct target *t, const struct sample_event *ev, size_t len)
{
    size_t n = 0;

    if (ev->flags & SAMPLE_F_NO_UREGS)
        return 0;
    if (c->opts.unwind == UNWIND_FP || !t->proc) {
        n = ev->ustack_len / 8;
        if (n > SAMPLE_MAX_STACK_DEPTH)
            n = SAMPLE_MAX_STACK_DEPTH;
        memcpy(c->ips, ev->ustack, n * 8);
        /* A chain that fills the kernel's buffer was cut there (or is exactly that deep). */
        if (n == SAMPLE_MAX_STACK_DEPTH) {
            c->st.unwind_truncated++;
            c->truncated = true;
        }
        if (!n && ev->regs.ip) {
            c->ips[0] = ev->regs.ip;
            n = 1;
        }
        if (ev->flags & SAMPLE_F_USTACK_ERR)
            c->st.unwind_errors++;
        return n;
    }

    struct unwind_regs regs = {
        .ip = ev->regs.ip,
        .sp = ev->regs.sp,
        .bp = ev->regs.bp,
        .bx = ev->regs.bx,
        .r12 = ev->regs.r12,
        .r13 = ev->regs.r13,
        .r14 = ev->regs.r14,
        .r15 = ev->regs.r15,
        .lr = ev->regs.lr,
    };
    size_t copy = ev->stack_len;
    unsigned stop = 0;
    int r;

    if (copy > len - sizeof(*ev))
        copy = len - sizeof(*ev);
    if (ev->flags & SAMPLE_F_COPY_ERR)
        c->st.copy_errors++;
    c->st.stack_copy_bytes += copy;
    r = proc_unwind(t->proc, c->opts.unwind, &regs, ev->stack, copy, ev->stack_addr, c->ips,
                    COLLECT_MAX_DEPTH, &stop);
    if (r <= 0) {
        c->st.unwind_errors++;
        c->ips[0] = ev->regs.ip;
        return ev->regs.ip ? 1 : 0;
    }
    if (stop & (UNWIND_STOP_NO_CFI | UNWIND_STOP_STACK | UNWIND_STOP_BAD))
        c->st.unwind_errors++;
    if (stop & UNWIND_STOP_MAXDEPTH) {
        c->st.unwind_truncated++;
        c->truncated = true;
    }
    return r;
}

int collect_set_sampler(struct collector *c, struct sampler *s)
{
    pykernel_close(c->pk);
    c->pk = NULL;
    return s ? pykernel_open(&c->pk, s) : 0;
}

/* The Python frames of `tid`, leaf first, into c->py; their number (0: none). A record that
 * carries the chain the kernel captured at the sample instant is symbolised from it (counted in
 * st.python_frames_in_kernel); otherwise the stack is read now (pykernel then teaches the
 * kernel the thread), or a read of the same thread a moment ago is reused. */
static size_t python_frames(struct collector *c, struct target *t, uint32_t tid,
                            const struct sample_event *ev, size_t len, unsigned *pflags)
{
    unsigned flags = 0;
    bool in_kernel = false;
    uint64_t now;
    int n;

    if (!t->ps)
        return 0;
    if (ev && c->pk && pykernel_has_chain(ev)) {
        n = pykernel_frames(c->pk, t->ps, ev, len, c->py, COLLECT_MAX_PY, &flags, &in_kernel);
        if (n > 0 && in_kernel)
            c->st.python_frames_in_kernel += (uint64_t)n;
        c->last_t = NULL; /* c->py no longer holds the last read */
        goto done;
    }
    now = mono_ns();
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
    if (n > 0) {
        t->py_samples++;
        c->st.python_samples++;
        c->st.python_frames += (uint64_t)n;
    }
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

int collect_sample(struct collector *c, const struct sample_event *ev, size_t len)
{
    struct target *t = target_get(c, ev->pid);
    size_t n = 0, nu, nk, np, nm;
    unsigned pyflags = 0;
    bool fresh, merr;
    int64_t f;
    int m;

    if (!t)
        return -ENOMEM;
    if (!t->proc)
        c->st.proc_errors++;
    else
        (void)proc_recheck_jit(t->proc, ev->time_ns); /* reused JIT code; -ENOMEM: the old names stay */
    python_attach(c, t);
    f = thread_frame(c, ev->tid, ev->comm, &fresh);
    if (f < 0)
        return (int)f;
    c->frames[n++] = (uint32_t)f;

    c->truncated = false;
    nu = unwind(c, t, ev, len);
    if (t->ps && c->opts.python_only)
        c->truncated = false; /* native frames are not shown */
    np = python_frames(c, t, ev->tid, ev, len, &pyflags);
    if (c->truncated) {
        /* The root side of the stack is missing (native or Python depth limit): say so,
         * rather than let the cut stack pose as a root of its own. */
        f = other_frame(c, MARK_TRUNCATED);
        if (f < 0)
            return (int)f;
        c->frames[n++] = (uint32_t)f;
    }
    if (t->ps && c->opts.python_only) {
        for (size_t i = np; i-- > 0;)
            c->frames[n++] = c->py[i].frame;
        if (!np) {
            if ((f = other_frame(c, MARK_NATIVE)) < 0)
                return (int)f;
            c->frames[n++] = (uint32_t)f;
        }
    } else {
        for (size_t i = 0; i < nu; i++) {
            f = user_frame(c, t, c->ips[i], i == 0);
            if (f < 0)
                return (int)f;
            c->native[i] = (uint32_t)f;
        }
        if (t->ps) {
            m = merge_stack(&t->merge, c->native, nu, c->py, np, pyflags, c->merged,
                            COLLECT_MAX_DEPTH + COLLECT_MAX_PY + 1, &merr);
            if (m < 0)
                return m;
            nm = (size_t)m;
            for (size_t i = nm; i-- > 0;)
                c->frames[n++] = c->merged[i];
        } else {
            for (size_t i = nu; i-- > 0;)
                c->frames[n++] = c->native[i];
        }
    }

    if (c->opts.kernel && (ev->flags & SAMPLE_F_IN_KERNEL)) {
        nk = ev->kstack_len / 8;
        if (nk > SAMPLE_MAX_STACK_DEPTH)
            nk = SAMPLE_MAX_STACK_DEPTH;
        if (!nk)
            c->st.kernel_errors++;
        for (size_t i = nk; i-- > 0;) {
            f = kernel_frame(c, ev->kstack[i], i == 0);
            if (f < 0)
                return (int)f;
            c->frames[n++] = (uint32_t)f;
        }
    }

    if (n == 1) {
        /* No user registers (a thread inside exec, or a kernel thread) and no kernel stack asked
         * for: the sample still counts, under a frame that says where it was. */
        f = other_frame(c, (ev->flags & SAMPLE_F_IN_KERNEL) ? MARK_KERNEL : MARK_UNKNOWN);
        if (f < 0)
            return (int)f;
        c->frames[n++] = (uint32_t)f;
        c->st.unknown_frames++;
    }
    c->st.frames += n - 1;
    f = profile_add(c->prof, c->frames, n, 1);
    if (f < 0)
        return (int)f;
    c->st.samples++;
    return fresh ? 1 : 0;
}

int collect_python_attach(struct collector *c, pid_t pid)
{
    struct target *t = target_get(c, pid);

    if (!t)
        return -ENOMEM;
    python_attach(c, t);
    return t->py == PY_ATTACHED ? 0 : t->py == PY_NONE ? -ENOENT : -EAGAIN;
}

int collect_python_sample(struct collector *c, pid_t pid, pid_t tid, const char *comm)
{
    struct target *t = target_get(c, pid);
    size_t n = 0, np;
    unsigned pyflags = 0;
    bool fresh;
    int64_t f;

    if (!t)
        return -ENOMEM;
    python_attach(c, t);
    if (!t->ps)
        return -EAGAIN;
    c->truncated = false;
    np = python_frames(c, t, (uint32_t)tid, NULL, 0, &pyflags);
    if (!np)
        return 0;
    f = thread_frame(c, (uint32_t)tid, comm, &fresh);
    if (f < 0)
        return (int)f;
    c->frames[n++] = (uint32_t)f;
    if (c->truncated) {
        if ((f = other_frame(c, MARK_TRUNCATED)) < 0)
            return (int)f;
        c->frames[n++] = (uint32_t)f;
    }
    for (size_t i = np; i-- > 0;)
        c->frames[n++] = c->py[i].frame;
    c->st.frames += n - 1;
    f = profile_add(c->prof, c->frames, n, 1);
    if (f < 0)
        return (int)f;
    c->st.samples++;
    return 1;
}

void collect_print_python_stats(const struct collector *c, FILE *f)
{
    const struct target *best = NULL;
    struct collect_stats cs;

    for (size_t i = 0; i < c->ntargets; i++)
        if (c->targets[i].ps && (!best || c->targets[i].py_samples > best->py_samples))
            best = &c->targets[i];
    collect_stats(c, &cs);
    fprintf(f, "python_targets: %" PRIu64 "\n", cs.python_targets);
    fprintf(f, "python_stack_samples: %" PRIu64 "\n", cs.python_samples);
    fprintf(f, "python_frames_per_sample: %.1f\n",
            cs.python_samples ? (double)cs.python_frames / (double)cs.python_samples : 0.0);
    fprintf(f, "python_read_errors: %" PRIu64 "\n", cs.python_read_errors);
    fprintf(f, "python_reads_reused: %" PRIu64 "\n", cs.python_reads_reused);
    fprintf(f, "python_frames_in_kernel: %" PRIu64 "\n", cs.python_frames_in_kernel);
    fprintf(f, "merge_errors: %" PRIu64 "\n", cs.merge_errors);
    if (c->pk)
        pykernel_print_stats(c->pk, f);
    if (best) {
        const struct remote_stats *rs = pystack_remote_stats(best->ps);

        char *text = NULL, *line, *save = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);

        /* reads_per_sample is per profile sample here (reused reads count as samples);
         * pystack's own figure, per pystack_read, keeps another name. */
        if (m) {
            pystack_print_stats(best->ps, m);
            fclose(m);
            for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                fprintf(f, "%s%s\n", strncmp(line, "reads_per_sample:", 17) ? "" : "pystack_", line);
            free(text);
        }
        fprintf(f, "reads_per_sample: %.3f\n",
                best->py_samples ? (double)rs->calls / (double)best->py_samples : 0.0);
    }
}
