/* Unit tests for user/python/pykernel.c and the Python reader of bpf/sample.bpf.c: layouts of 3.11 to
 * 3.15 converted for the program, records decoded (every owner / entry tag), and (as root) the
 * real program reading synthetic frame chains built in this process: exact frames, the cap and
 * its flag, a looping chain, an invalid frame, 3.14's tagged code words and owners 3 and 4, and a
 * thread state that names another thread.
 *
 * The thread state the program reads is never rewritten while it is sampled: each chain is built
 * in the buffer not in use and then published with one map update. A sample that met a
 * half-written thread state would find it naming no thread and drop the thread as stale, and
 * every later record would come back unknown. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/sampler.h"
#include "python/pykernel.h"

/* Offsets of the x86-64 default builds (docs/python-frames.md). */
static struct pyrt_layout layout_311(void)
{
    return (struct pyrt_layout){.major = 3,
                                .minor = 11,
                                .ts_native_thread_id = 160,
                                .ts_cframe = 56,
                                .cf_current_frame = 8,
                                .f_code = 32,
                                .f_previous = 48,
                                .f_instr = 56,
                                .f_owner = 69,
                                .f_is_entry = 68,
                                .f_code_mask = ~(uint64_t)0,
                                .f_owner_max = 2,
                                .co_id_start = 72,
                                .co_id_size = 72,
                                .co_qualname = 128,
                                .str_length = 16};
}

static struct pyrt_layout layout_312(void)
{
    return (struct pyrt_layout){.major = 3,
                                .minor = 12,
                                .ts_native_thread_id = 144,
                                .ts_cframe = 56,
                                .cf_current_frame = 0,
                                .f_code = 0,
                                .f_previous = 8,
                                .f_instr = 56,
                                .f_owner = 70,
                                .f_is_entry = -1,
                                .f_code_mask = ~(uint64_t)0,
                                .f_owner_max = 3,
                                .co_id_start = 64,
                                .co_id_size = 80,
                                .co_qualname = 128,
                                .str_length = 16};
}

static struct pyrt_layout layout_313(void)
{
    return (struct pyrt_layout){.major = 3,
                                .minor = 13,
                                .ts_native_thread_id = 160,
                                .ts_current_frame = 72,
                                .f_code = 0,
                                .f_previous = 8,
                                .f_instr = 56,
                                .f_owner = 70,
                                .f_is_entry = -1,
                                .f_code_mask = ~(uint64_t)0,
                                .f_owner_max = 3,
                                .co_id_start = 64,
                                .co_id_size = 80,
                                .co_qualname = 128,
                                .str_length = 16};
}

/* 3.14: f_executable is a tagged stack reference (low 2 bits), owners 0..4 (4: C stack). */
static struct pyrt_layout layout_314(void)
{
    struct pyrt_layout L = layout_313();

    L.minor = 14;
    L.f_code_mask = ~(uint64_t)3;
    L.f_owner_max = 4;
    return L;
}

static void test_layouts(void **state)
{
    struct pyrt_layout in = layout_311();
    struct sample_pylayout L;

    assert_int_equal(pykernel_layout(&in, &L), 0);
    assert_int_equal(L.ts_lo, 56);
    assert_int_equal(L.ts_len, 112);
    assert_int_equal(L.ts_cframe, 0);
    assert_int_equal(L.ts_native_thread_id, 104);
    assert_int_equal(L.cf_current_frame, 8);
    assert_int_equal(L.ts_current_frame, SAMPLE_PY_NONE);
    assert_int_equal(L.f_lo, 32);
    assert_int_equal(L.f_len, 38);
    assert_int_equal(L.f_code, 0);
    assert_int_equal(L.f_previous, 16);
    assert_int_equal(L.f_instr, 24);
    assert_int_equal(L.f_is_entry, 36);
    assert_int_equal(L.f_owner, 37);
    assert_int_equal(L.max_owner, 2);
    assert_int_equal(L.code_tag, 0);
    assert_int_equal(L.co_id_lo, 72);
    assert_int_equal(L.co_id_len, 72);
    assert_int_equal(L.co_id_version, 0);

    in = layout_312();
    assert_int_equal(pykernel_layout(&in, &L), 0);
    assert_int_equal(L.ts_lo, 56);
    assert_int_equal(L.ts_len, 96);
    assert_int_equal(L.ts_native_thread_id, 88);
    assert_int_equal(L.f_lo, 0);
    assert_int_equal(L.f_len, 71);
    assert_int_equal(L.f_owner, 70);
    assert_int_equal(L.f_is_entry, SAMPLE_PY_NONE);
    assert_int_equal(L.max_owner, 3);

    in = layout_313();
    assert_int_equal(pykernel_layout(&in, &L), 0);
    assert_int_equal(L.ts_cframe, SAMPLE_PY_NONE);
    assert_int_equal(L.ts_lo, 72);
    assert_int_equal(L.ts_current_frame, 0);
    assert_int_equal(L.ts_native_thread_id, 88);
    assert_int_equal(L.max_owner, 3);
    assert_int_equal(L.code_tag, 0);

    in = layout_314();
    assert_int_equal(pykernel_layout(&in, &L), 0);
    assert_int_equal(L.max_owner, 4);
    assert_int_equal(L.code_tag, 3);
    in.f_owner_max = 3; /* 3.15: the C-stack owner is gone again */
    assert_int_equal(pykernel_layout(&in, &L), 0);
    assert_int_equal(L.max_owner, 3);
    assert_int_equal(L.code_tag, 3);
    /* A tag wider than the three free bits, or owners the record's tag cannot hold, or an
     * entry flag beside owners above 2: refused rather than mis-decoded. */
    in = layout_314();
    in.f_code_mask = ~(uint64_t)15;
    assert_int_equal(pykernel_layout(&in, &L), -ENOTSUP);
    in = layout_314();
    in.f_owner_max = SAMPLE_PY_OWNER_MAX + 1;
    assert_int_equal(pykernel_layout(&in, &L), -ENOTSUP);
    in = layout_311();
    in.f_owner_max = 3;
    assert_int_equal(pykernel_layout(&in, &L), -ENOTSUP);

    in = layout_313();
    /* A thread state whose fields lie too far apart for one slice is refused. */
    in.ts_native_thread_id = 400;
    assert_int_equal(pykernel_layout(&in, &L), -ENOTSUP);
    /* So is a pointer field that is not 8-aligned in its slice. */
    in = layout_313();
    in.f_previous = 12;
    assert_int_equal(pykernel_layout(&in, &L), -ENOTSUP);
    /* A code identity block the program does not fold whole: refused. */
    in = layout_313();
    in.co_id_size = SAMPLE_PY_ID_MAX + 8;
    assert_int_equal(pykernel_layout(&in, &L), -ENOTSUP);
    in.co_id_size = 12;
    assert_int_equal(pykernel_layout(&in, &L), -ENOTSUP);
    /* A co_version word outside the block, or not 4-aligned: refused. */
    in = layout_313();
    in.co_id_version = in.co_id_size;
    assert_int_equal(pykernel_layout(&in, &L), -ENOTSUP);
    in.co_id_version = 2;
    assert_int_equal(pykernel_layout(&in, &L), -ENOTSUP);
}

/* A record with `n` frames after a stack copy of `copy` bytes. */
static struct sample_event *record(size_t copy, size_t n, uint16_t flags, size_t *len)
{
    struct sample_event *ev;

    *len = offsetof(struct sample_event, stack) + copy + n * sizeof(struct sample_pyframe);
    ev = calloc(1, *len);
    assert_non_null(ev);
    ev->stack_len = (uint32_t)copy;
    ev->py_count = (uint16_t)n;
    ev->py_flags = flags;
    memset(ev->stack, 0xab, copy);
    for (size_t i = 0; i < n; i++) {
        struct sample_pyframe f = {.code = (0x7f0000001000ull + 0x100 * i) | (i % 8),
                                   .instr = 0x7f0000002000ull + 2 * i,
                                   .ident = 0x1d0000 + i};
        memcpy(ev->stack + copy + i * sizeof(f), &f, sizeof(f));
    }
    return ev;
}

static void test_decode(void **state)
{
    struct pystack_raw raw[8];
    bool trunc = true;
    size_t len;
    struct sample_event *ev = record(64, 8, SAMPLE_PY_CAPTURED, &len);
    /* Every tag: owners 0..4 (3.12-3.15), then 3.11 entry frames of owners 0..2. */
    static const uint8_t owner[8] = {0, 1, 2, 3, 4, 0, 1, 2}, entry[8] = {0, 0, 0, 0, 0, 1, 1, 1};

    assert_int_equal(pykernel_decode(ev, len, raw, 8, &trunc), 8);
    assert_false(trunc);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(raw[i].code, 0x7f0000001000ull + 0x100 * i);
        assert_int_equal(raw[i].instr, 0x7f0000002000ull + 2 * i);
        assert_int_equal(raw[i].owner, owner[i]);
        assert_int_equal(raw[i].is_entry, entry[i]);
        assert_int_equal(raw[i].ident, 0x1d0000 + i);
    }
    /* Fewer slots than frames: cut, and said so. */
    assert_int_equal(pykernel_decode(ev, len, raw, 3, &trunc), 3);
    assert_true(trunc);
    /* A chain longer than the record is refused. */
    assert_int_equal(pykernel_decode(ev, len - 1, raw, 8, &trunc), -EINVAL);
    ev->py_flags |= SAMPLE_PY_TRUNCATED;
    assert_int_equal(pykernel_decode(ev, len, raw, 8, &trunc), 8);
    assert_true(trunc);
    /* Records without a usable chain. */
    ev->py_flags = 0;
    assert_int_equal(pykernel_decode(ev, len, raw, 8, &trunc), -ENOENT);
    ev->py_flags = SAMPLE_PY_CAPTURED | SAMPLE_PY_STALE;
    assert_int_equal(pykernel_decode(ev, len, raw, 8, &trunc), -ENOENT);
    ev->py_flags = SAMPLE_PY_BROKEN;
    assert_int_equal(pykernel_decode(ev, len, raw, 8, &trunc), -ENOENT);
    free(ev);
    /* An empty chain is a chain: no Python code was running. */
    ev = record(0, 0, SAMPLE_PY_CAPTURED, &len);
    assert_int_equal(pykernel_decode(ev, len, raw, 8, &trunc), 0);
    free(ev);
}

/* -- The program on synthetic chains (root) ---------------------------------------------------- */

#define NFRAMES  1100
#define FRAME_SZ 80 /* 3.12 _PyInterpreterFrame up to owner, rounded */

#define CODE_STEP 0x40 /* code objects overlap: only their identity blocks are read */

struct fake {
    uint8_t ts[256];
    uint64_t cframe[2];
    uint8_t frames[NFRAMES][FRAME_SZ];
    _Alignas(64) uint8_t codes[NFRAMES * CODE_STEP + 256];
    uint64_t qual[4]; /* the str every code object names as its qualname: refcnt type length hash */
};

struct seen {
    int phase;            /* records are counted only while set */
    unsigned min_records; /* a phase samples until it has seen this many records */
    pid_t tid;
    unsigned n, captured, truncated, stale, broken, unknown, exact;
    unsigned min_count, max_count;
    const struct fake *f;
    unsigned want;                   /* frames of an exact chain */
    uint64_t code_tag;               /* bits the program clears from the code word */
    uint16_t id_lo, id_len, id_qual; /* the layout's code identity block, its qualname word */
    uint16_t id_ver;                 /* and its co_version word (0: none) */
};

static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* Frame i: code at codes + 0x40 i (aligned; every byte of it distinct), instr, owner 0 except a
 * final shim (owner 3, no code) when `shim`; previous is frame i + 1, or none after `n`. */
static void build(struct fake *f, unsigned n, bool shim, pid_t tid)
{
    memset(f, 0, sizeof(*f));
    for (size_t i = 0; i < sizeof(f->codes); i++)
        f->codes[i] = (uint8_t)(i * 131 + (i >> 8));
    /* Every code object's qualname pointer (offset 128, a multiple of CODE_STEP) names one str. */
    for (size_t i = 0; i + 8 <= sizeof(f->codes); i += CODE_STEP)
        put64(f->codes + i, (uint64_t)(uintptr_t)f->qual);
    f->qual[2] = 9;
    f->qual[3] = 0x1234567890abcdefull;
    put64(f->ts + 56, (uint64_t)(uintptr_t)f->cframe);
    put64(f->ts + 144, (uint64_t)tid);
    f->cframe[0] = n ? (uint64_t)(uintptr_t)f->frames[0] : 0;
    for (unsigned i = 0; i < n; i++) {
        uint8_t *fr = f->frames[i];
        bool last = i + 1 == n;

        put64(fr + 0, last && shim ? 0 : (uint64_t)(uintptr_t)(f->codes + CODE_STEP * i));
        put64(fr + 8, last ? 0 : (uint64_t)(uintptr_t)f->frames[i + 1]);
        put64(fr + 56, 0x5b0000000000ull + 2ull * i);
        fr[70] = last && shim ? 3 : 0;
    }
}

static int on_record(void *ctx, const struct sample_event *ev, size_t len)
{
    struct seen *s = ctx;
    struct pystack_raw raw[SAMPLE_PY_FRAMES_MAX];
    bool trunc;
    int n;

    if (!s->phase || ev->tid != (uint32_t)s->tid)
        return 0;
    s->n++;
    if (ev->py_flags & SAMPLE_PY_STALE)
        s->stale++;
    if (ev->py_flags & SAMPLE_PY_BROKEN)
        s->broken++;
    if (ev->py_flags == SAMPLE_PY_UNTAUGHT) /* no chain: a thread of a Python process not taught */
        s->unknown++;
    if (!(ev->py_flags & SAMPLE_PY_CAPTURED))
        return 0;
    s->captured++;
    if (ev->py_flags & SAMPLE_PY_TRUNCATED)
        s->truncated++;
    if (ev->py_count < s->min_count)
        s->min_count = ev->py_count;
    if (ev->py_count > s->max_count)
        s->max_count = ev->py_count;
    n = pykernel_decode(ev, len, raw, SAMPLE_PY_FRAMES_MAX, &trunc);
    if (n < 0 || (unsigned)n != s->want)
        return 0;
    for (int i = 0; i < n; i++) {
        uint64_t code, instr;

        memcpy(&code, s->f->frames[i] + 0, 8);
        memcpy(&instr, s->f->frames[i] + 56, 8);
        if (raw[i].code != (code & ~s->code_tag) || raw[i].instr != instr ||
            raw[i].owner != s->f->frames[i][70])
            return 0;
        /* The identity the kernel folded is the one user space folds from the same bytes. */
        uint64_t want = 0;
        if (raw[i].owner < 3) {
            const uint8_t *blk = (const uint8_t *)(uintptr_t)raw[i].code + s->id_lo;
            uint64_t q, ql = 0, qh = 0;
            if (!sample_py_versioned(blk, s->id_ver)) {
                memcpy(&q, blk + s->id_qual, 8);
                const uint64_t *str = (const uint64_t *)(uintptr_t)q;
                ql = str[2];
                qh = str[3];
            }
            want = sample_py_ident(blk, s->id_len, s->id_ver, ql, qh);
        }
        if (raw[i].ident != want)
            return 0;
    }
    s->exact++;
    return 0;
}

static double seconds(clockid_t clock)
{
    struct timespec t;

    clock_gettime(clock, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Runs on the CPU for `cpu` seconds of this thread's own time: the cpu-clock event samples a
 * thread only while it runs, so on a loaded machine wall time says nothing of the samples. */
static void burn(double cpu)
{
    volatile uint64_t x = 1;
    double end = seconds(CLOCK_THREAD_CPUTIME_ID) + cpu;

    do {
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005ull + 1;
    } while (seconds(CLOCK_THREAD_CPUTIME_ID) < end);
}

#define PHASE_RECORDS  200  /* records a phase waits for (about 0.2 s of CPU at 997 Hz) */
#define PHASE_DEADLINE 60.0 /* wall seconds before a phase that has not got them fails */

/* Samples this thread with the chain as it is now until s->min_records of its records came;
 * counts into a fresh s. */
static void run_phase(struct sampler *smp, struct seen *s, unsigned want)
{
    double deadline = seconds(CLOCK_MONOTONIC) + PHASE_DEADLINE;

    assert_true(sampler_poll(smp) >= 0); /* records of the set-up, not counted */
    s->n = s->captured = s->truncated = s->stale = s->broken = s->unknown = s->exact = 0;
    s->min_count = UINT32_MAX;
    s->max_count = 0;
    s->want = want;
    s->phase = 1;
    while (s->n < s->min_records && seconds(CLOCK_MONOTONIC) < deadline) {
        burn(0.02);
        assert_true(sampler_poll(smp) >= 0);
    }
    s->phase = 0;
    print_message(
        "# records %u: captured %u truncated %u stale %u broken %u unknown %u exact %u, frames %u-%u\n", s->n,
        s->captured, s->truncated, s->stale, s->broken, s->unknown, s->exact,
        s->min_count == UINT32_MAX ? 0 : s->min_count, s->max_count);
    if (s->n < s->min_records)
        fail_msg("%u records of this thread in %.0f s, %u wanted", s->n, PHASE_DEADLINE, s->min_records);
}

/* The chain buffer not in use, to build the next chain in. */
static struct fake *spare(struct fake *bufs[2], const struct seen *s)
{
    return s->f == bufs[0] ? bufs[1] : bufs[0];
}

/* Makes `f` the thread state the program reads for this thread, in one map update. */
static void publish(struct sampler *smp, struct seen *s, struct fake *f)
{
    assert_int_equal(sampler_set_py_thread(smp, getpid(), s->tid, (uint64_t)(uintptr_t)f->ts, 0), 0);
    s->f = f;
}

static void test_program_reads_chains(void **state)
{
    struct sampler_opts o = {.frequency = 997, .stack_copy = 512};
    struct pyrt_layout in = layout_312();
    struct sample_pylayout L;
    struct sampler_stats c;
    struct seen s = {.min_records = PHASE_RECORDS};
    struct sampler *smp;
    struct fake *bufs[2], *f;
    uint64_t stale_before, idents_before, ident_reads_before;

    if (geteuid() != 0)
        skip();
    bufs[0] = calloc(1, sizeof(*bufs[0]));
    bufs[1] = calloc(1, sizeof(*bufs[1]));
    assert_non_null(bufs[0]);
    assert_non_null(bufs[1]);
    s.tid = (pid_t)syscall(SYS_gettid);
    assert_int_equal(sampler_open(&smp, &o, on_record, &s, NULL), 0);
    assert_int_equal(sampler_py_frames(smp), SAMPLE_PY_FRAMES_DEFAULT);
    assert_int_equal(pykernel_layout(&in, &L), 0);
    s.id_lo = L.co_id_lo;
    s.id_len = L.co_id_len;
    s.id_qual = L.co_id_qualname;
    s.id_ver = L.co_id_version;
    assert_int_equal(sampler_set_py_layout(smp, getpid(), &L), 0);
    assert_int_equal(sampler_add_target(smp, getpid()), 0);
    assert_int_equal(sampler_attach(smp), 0);

    /* Unknown thread: no chain, no flags. */
    run_phase(smp, &s, 0);
    assert_int_equal(s.unknown, s.n);

    /* Five frames ending in a C-stack shim: every record carries exactly them. */
    f = spare(bufs, &s);
    build(f, 5, true, s.tid);
    publish(smp, &s, f);
    run_phase(smp, &s, 5);
    assert_int_equal(s.captured, s.n);
    assert_int_equal(s.exact, s.n);
    assert_int_equal(s.truncated, 0);

    /* 1000 frames: all of them (the cap is 1024). Their code objects lie 64 to a page, some
     * blocks across a page's end: a page is read whole once a sample (after its first block
     * alone), a block across its end alone. */
    f = spare(bufs, &s);
    build(f, 1000, false, s.tid);
    publish(smp, &s, f);
    assert_int_equal(sampler_get_stats(smp, &c), 0);
    idents_before = c.py_idents;
    ident_reads_before = c.py_ident_reads;
    run_phase(smp, &s, 1000);
    assert_int_equal(s.exact, s.n);
    assert_int_equal(s.truncated, 0);
    assert_int_equal(sampler_get_stats(smp, &c), 0);
    print_message("# code identities %" PRIu64 ", code memory reads %" PRIu64 "\n",
                  c.py_idents - idents_before, c.py_ident_reads - ident_reads_before);
    assert_true(c.py_idents - idents_before >= 1000ull * s.n);
    assert_true((c.py_ident_reads - ident_reads_before) * 16 < c.py_idents - idents_before);

    /* 1100 frames: cut at the cap, flagged. */
    f = spare(bufs, &s);
    build(f, NFRAMES, false, s.tid);
    publish(smp, &s, f);
    run_phase(smp, &s, SAMPLE_PY_FRAMES_DEFAULT);
    assert_int_equal(s.captured, s.n);
    assert_int_equal(s.truncated, s.n);
    assert_int_equal(s.min_count, SAMPLE_PY_FRAMES_DEFAULT);
    assert_int_equal(s.exact, s.n);

    /* A chain that loops back: the kernel's cycle check gives it up (user space then reads
     * it itself and counts the loop), never a cap's worth of copies. */
    f = spare(bufs, &s);
    build(f, 3, false, s.tid);
    put64(f->frames[2] + 8, (uint64_t)(uintptr_t)f->frames[1]);
    publish(smp, &s, f);
    run_phase(smp, &s, 0);
    assert_int_equal(s.broken, s.n);
    assert_int_equal(s.captured, 0);

    /* Recursion: frames that run one code object share its identity (read once). */
    f = spare(bufs, &s);
    build(f, 5, false, s.tid);
    for (unsigned i = 1; i < 4; i++)
        memcpy(f->frames[i], f->frames[0], 8);
    publish(smp, &s, f);
    run_phase(smp, &s, 5);
    assert_int_equal(s.exact, s.n);

    /* A code object whose identity block cannot be read is not a frame of this instant. */
    f = spare(bufs, &s);
    build(f, 4, false, s.tid);
    put64(f->frames[1] + 0, 0x5a0000001000ull);
    publish(smp, &s, f);
    run_phase(smp, &s, 0);
    assert_int_equal(s.broken, s.n);
    assert_int_equal(s.captured, 0);

    /* An owner no version has: the chain is given up, not half-delivered. */
    f = spare(bufs, &s);
    build(f, 4, false, s.tid);
    f->frames[2][70] = 7;
    publish(smp, &s, f);
    run_phase(smp, &s, 0);
    assert_int_equal(s.broken, s.n);
    assert_int_equal(s.captured, 0);

    /* 3.14: a tagged f_executable is not a misaligned one once the tag is cleared, and the
     * interpreter (3) and C-stack (4) owners are frames. */
    in = layout_312(); /* the fake's thread state is 3.12's; its frames carry 3.14's rules */
    in.f_code_mask = layout_314().f_code_mask;
    in.f_owner_max = layout_314().f_owner_max;
    assert_int_equal(pykernel_layout(&in, &L), 0);
    assert_int_equal(sampler_set_py_layout(smp, getpid(), &L), 0);
    f = spare(bufs, &s);
    build(f, 6, true, s.tid);
    for (unsigned i = 0; i < 5; i++)
        f->frames[i][0] |= (uint8_t)(i % 4); /* stack-reference tag bits */
    f->frames[1][70] = 3;
    f->frames[5][70] = 4;
    publish(smp, &s, f);
    s.code_tag = 3;
    run_phase(smp, &s, 6);
    assert_int_equal(s.captured, s.n);
    assert_int_equal(s.exact, s.n);
    s.code_tag = 0;
    /* Under the untagged 0..3-owner rules the same chain is given up: not frames there. */
    in = layout_312();
    assert_int_equal(pykernel_layout(&in, &L), 0);
    assert_int_equal(sampler_set_py_layout(smp, getpid(), &L), 0);
    run_phase(smp, &s, 0);
    assert_int_equal(s.broken, s.n);
    assert_int_equal(s.captured, 0);

    /* 3.12+: a code object whose co_version is set is told apart by its block alone; its
     * qualname is not read (here: not readable). One whose co_version is 0 (the counter
     * wrapped) still needs its qualname: that chain is given up. */
    in = layout_312();
    in.co_id_version = 28;
    assert_int_equal(pykernel_layout(&in, &L), 0);
    assert_int_equal(L.co_id_version, 28);
    assert_int_equal(sampler_set_py_layout(smp, getpid(), &L), 0);
    s.id_ver = L.co_id_version;
    f = spare(bufs, &s);
    build(f, 6, false, s.tid);
    for (size_t i = 0; i + 8 <= sizeof(f->codes); i += CODE_STEP)
        put64(f->codes + i, 0x10);
    for (unsigned i = 0; i < 6; i++)
        memset(f->codes + CODE_STEP * i + 92, 0x5a, 4);
    publish(smp, &s, f);
    run_phase(smp, &s, 6);
    assert_int_equal(s.captured, s.n);
    assert_int_equal(s.exact, s.n);
    f = spare(bufs, &s);
    build(f, 6, false, s.tid);
    for (size_t i = 0; i + 8 <= sizeof(f->codes); i += CODE_STEP)
        put64(f->codes + i, 0x10);
    for (unsigned i = 0; i < 6; i++)
        memset(f->codes + CODE_STEP * i + 92, i == 3 ? 0 : 0x5a, 4);
    publish(smp, &s, f);
    run_phase(smp, &s, 0);
    assert_int_equal(s.broken, s.n);
    assert_int_equal(s.captured, 0);
    in = layout_312();
    assert_int_equal(pykernel_layout(&in, &L), 0);
    assert_int_equal(sampler_set_py_layout(smp, getpid(), &L), 0);
    s.id_ver = L.co_id_version;

    /* The thread state names another thread: stale once, then the entry is gone. The stale
     * record may come before the phase counts records, so the counter tells "once". */
    assert_int_equal(sampler_get_stats(smp, &c), 0);
    stale_before = c.py_stale;
    f = spare(bufs, &s);
    build(f, 4, false, s.tid + 1);
    publish(smp, &s, f);
    run_phase(smp, &s, 0);
    assert_int_equal(s.stale + s.unknown, s.n);
    assert_int_equal(s.captured, 0);
    assert_true(s.stale <= 1);
    run_phase(smp, &s, 0);
    assert_int_equal(s.unknown, s.n);
    assert_int_equal(sampler_get_stats(smp, &c), 0);
    assert_int_equal(c.py_stale - stale_before, 1);

    assert_int_equal(sampler_get_stats(smp, &c), 0);
    assert_true(c.py_frames > 0);
    assert_true(c.py_stale >= 1);
    assert_true(c.py_broken >= 1);
    /* The fake's _PyCFrame is not on this thread's stack: read on its own each time. */
    assert_true(c.py_cframes > 0);
    sampler_close(smp);
    free(bufs[0]);
    free(bufs[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_program_reads_chains),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
