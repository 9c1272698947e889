// SPDX-License-Identifier: GPL-2.0
/*
 * sample.bpf.c — the in-kernel half of pyebpf-sample.
 *
 * One perf_event program, opened by user space on every online CPU (software cpu-clock at the
 * requested frequency). For a sample of a target process it records, into one ring-buffer
 * record (layout in sample.h): ids, time, the kernel stack, the user registers, the user
 * frame-pointer chain and a copy of the top of the user stack for DWARF unwinding. Samples of
 * other processes cost one hash lookup.
 *
 * For a thread whose Python thread state user space has put into "threads", it also reads
 * the thread's chain of Python frames at the sample instant (py_walk below), so user space only
 * has to name the code objects.
 *
 * Records are submitted without waking the consumer (a wake-up per sample costs about as much
 * as the sample itself) until the ring holds cfg_wake_bytes: then each record wakes it, so user
 * space sleeps long (a timer bounds only the latency) and is woken before the ring fills. A
 * full ring drops the record and counts it in a per-CPU counter, so loss is exact.
 */
/* No CO-RE: vmlinux.h gives the UAPI types (pt_regs, the perf_event context) and helper
 * prototypes; the kernel's own structs are read at offsets the loader found in the running
 * kernel's BTF (cfg_koff), so libbpf never has to load that BTF. */
#define BPF_NO_PRESERVE_ACCESS_INDEX
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "sample.h"
#include "uregs.h"

char LICENSE[] SEC("license") = "GPL";

/* Configuration, set by the loader between open and load; the verifier prunes what is off. */
const volatile __u32 cfg_stack_copy = SAMPLE_STACK_COPY_DEFAULT; /* bytes, 0: no copy */
const volatile bool cfg_kernel_stack = false;
const volatile bool cfg_user_fp_stack = true;
/* The loader's PID namespace when it is not the initial one (0: initial): targets are named by
 * their PIDs there, so ids are translated before the filter. */
const volatile __u64 cfg_pidns_dev = 0;
const volatile __u64 cfg_pidns_ino = 0;
/* Python frames read per sample at most (0: no Python reader). */
const volatile __u32 cfg_py_frames = 0;
/* The running kernel's struct offsets (sample.h). */
const volatile struct sample_koff cfg_koff = {};
/* Bytes in the ring from which a record wakes the consumer (0: every record does). */
const volatile __u64 cfg_wake_bytes = 0;
/* Programs loaded that build records, 1 or SAMPLE_REC_LEVELS: the record buffers per CPU. */
const volatile __u32 cfg_rec_levels = SAMPLE_REC_LEVELS;

/* A kernel word at `base + off` (0 when it cannot be read). */
static __always_inline __u64 kread64(const void *base, __u32 off)
{
    __u64 v = 0;

    bpf_probe_read_kernel(&v, sizeof(v), (const char *)base + off);
    return v;
}

static __always_inline __u32 kread32(const void *base, __u32 off)
{
    __u32 v = 0;

    bpf_probe_read_kernel(&v, sizeof(v), (const char *)base + off);
    return v;
}

/* Processes to sample (tgid -> unused). Launch mode and child tracking add entries. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, SAMPLE_MAX_TARGETS);
    __type(key, __u32);
    __type(value, __u8);
} targets SEC(".maps");

/* Start time of a target named by PID (tgid -> clock ticks since boot, as /proc/PID/stat field
 * 22 has it): a sample of a process whose start differs is another process that got the PID
 * after the target exited, and is dropped. Targets without an entry are not checked (launch
 * mode: the collector's own child cannot be reused before it is reaped). */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, SAMPLE_MAX_TARGETS);
    __type(key, __u32);
    __type(value, __u64);
} target_start SEC(".maps");

/* Launch mode: the forked command (tgid -> unused) becomes a target when it calls exec, so no
 * sample shows the collector's own code running in the child before exec. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, __u32);
    __type(value, __u8);
} pending SEC(".maps");

/* What user space learnt of each thread (tid -> struct sample_thread, sample.h) the first time
 * it met it: where its stack ends (bounds the copy so it never crosses the end of the mapping: a
 * read that crosses it fails whole) and its Python thread state (the reader checks it against the
 * sampled tid and clears a stale one). One map for both: one lookup per sample, one LRU to
 * preallocate at start. LRU: threads come and go. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, SAMPLE_MAX_THREADS);
    __type(key, __u32);
    __type(value, struct sample_thread);
} threads SEC(".maps");

/* The layout of each Python process's structures (tgid -> struct sample_pylayout). */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, SAMPLE_MAX_TARGETS);
    __type(key, __u32);
    __type(value, struct sample_pylayout);
} py_layouts SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, SAMPLE_CNT_NR);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");

/* Size set by the loader (power of two, multiple of the page size). */
struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 8 << 20);
} events SEC(".maps");

/*
 * Records are built here and copied into the ring at the size they came to (bpf_ringbuf_output):
 * a reservation's size is fixed when it is made, so each one took the largest record (~42 KiB
 * at the default sizes) where a Python thread's record is ~4 KiB; the ring was ten times as
 * large as what it held, and the collector read cold memory. A buffer per program per CPU: the
 * sampler runs from the perf interrupt, which may come while the off-CPU program on the same
 * CPU is building a record (neither nests in itself: the kernel skips a perf-event program while
 * another runs on the CPU, and sched_switch does not recur).
 */
#define REC_OFFCPU 0
#define REC_SAMPLE 1
#define REC_PY_MAX (SAMPLE_PY_FRAMES_MAX * sizeof(struct sample_pyframe))
#define REC_MAX    (SAMPLE_HDR_SIZE + SAMPLE_STACK_COPY_MAX + REC_PY_MAX + 2 * SAMPLE_STACK_BYTES)

/* The buffer index of a program's level: its own when both record, else the one there is. */
static __always_inline __u32 rec_level(__u32 level)
{
    return cfg_rec_levels > 1 ? level : 0;
}

struct rec_buf {
    __u8 b[REC_MAX];
};

/* cfg_rec_levels per possible CPU, the CPU's at cpu * cfg_rec_levels + rec_level(level): the loader
 * sets max_entries. An array's entries are made (and zeroed) when it is created: a level no program
 * loaded uses was 0.7 ms of setup at 2 CPUs. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, SAMPLE_REC_LEVELS);
    __type(key, __u32);
    __type(value, struct rec_buf);
} rec_bufs SEC(".maps");

/* Set by user space (sample.h, SAMPLE_PY_NAMED_BITS): the code objects it has named, and
 * whether the next record it must see soon should wake it (cleared by the record that does). */
__u64 py_named[SAMPLE_PY_NAMED_BITS / 64];
__u32 wake_armed;

/* The submit flag of a record: a wake-up once the ring holds cfg_wake_bytes, or for the first
 * record since user space armed the wake-up that it must see while it is recent: a chain naming
 * code not named yet (a code object can be freed, and the process end, before a timer's drain
 * would name it), a Python thread it must read and teach (a stack read later is another
 * instant's), a new thread (whose stack end it learns from the record). */
static __always_inline __u64 wake_flag(__u32 flags, __u32 py_flags)
{
    if (((flags & SAMPLE_F_NEW_THREAD) || (py_flags & (SAMPLE_PY_UNNAMED | SAMPLE_PY_UNTAUGHT))) &&
        wake_armed) {
        wake_armed = 0;
        return BPF_RB_FORCE_WAKEUP;
    }
    return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= cfg_wake_bytes ? BPF_RB_FORCE_WAKEUP
                                                                           : BPF_RB_NO_WAKEUP;
}

/* A global function, like submit(): checked once, where inlined at its two dozen call sites it
 * was checked in every state each site was reached in (with submit, 5,386 -> 3,267 instructions
 * processed; the calls cost nothing measurable in bpf_ns_per_sample). */
__noinline int count_n(__u32 which, __u64 n)
{
    __u64 *v = bpf_map_lookup_elem(&counters, &which);

    if (v)
        *v += n;
    return 0;
}

static __always_inline void count(__u32 which)
{
    count_n(which, 1);
}

/* Kernel addresses are the top half of the address space on x86-64 and arm64. (The context
 * only allows 8-byte loads of the registers, so cs/pstate are not read.) */
static __always_inline bool in_kernel_mode(struct bpf_perf_event_data *ctx)
{
    return (long)PT_REGS_IP(&ctx->regs) < 0;
}

/*
 * Copies up to `size` bytes of user stack from sp into dst. The length is bounded by the
 * thread's stack end when known (per-thread map, or mm->start_stack for the main thread);
 * otherwise the largest power-of-two size that reads succeeds, down to the rest of sp's page.
 */
static __always_inline __u32 copy_stack(struct sample_event *ev, struct task_struct *task,
                                        const struct sample_thread *th, __u32 tid, __u32 tgid, __u32 size)
{
    __u64 sp = ev->regs.sp, end = 0, len = size;

    if (th && th->stack_end)
        end = th->stack_end;
    else if (tid == tgid)
        end = kread64((void *)kread64(task, cfg_koff.task_mm), cfg_koff.mm_start_stack);
    if (end > sp && end - sp < len) {
        len = end - sp;
        ev->flags |= SAMPLE_F_COPY_BOUNDED;
    }
    len &= ~7ULL;
    if (len > size)
        len = size;
    barrier_var(len);
    if (len <= SAMPLE_STACK_COPY_MAX && bpf_probe_read_user(ev->stack, len, (void *)sp) == 0)
        return len;

    count(SAMPLE_CNT_COPY_RETRY);
    ev->flags |= SAMPLE_F_COPY_SHORT;
    for (int i = 0; i < 8; i++) {
        len >>= 1;
        if (len < SAMPLE_STACK_COPY_MIN)
            break;
        barrier_var(len);
        if (len <= SAMPLE_STACK_COPY_MAX && len <= size &&
            bpf_probe_read_user(ev->stack, len, (void *)sp) == 0)
            return len;
    }
    /* The page holding sp is mapped whenever sp is valid. */
    len = 4096 - (sp & 4095);
    if (len > size)
        len = size;
    barrier_var(len);
    if (len <= SAMPLE_STACK_COPY_MAX && len <= size && bpf_probe_read_user(ev->stack, len, (void *)sp) == 0)
        return len;
    ev->flags |= SAMPLE_F_COPY_ERR;
    count(SAMPLE_CNT_COPY_ERR);
    return 0;
}

/* -- Python frames ------------------------------------------------------------------------- */

#define PY_WINDOW 4096 /* bytes of a thread's frames read at once (a power of two) */
/* Code-object memory read at once: a page, which reads whole when a block in it does. The code
 * objects of a module may lie side by side (made one after another at import, of one size
 * class), and so may their names: one read then serves the identity blocks or qualnames of
 * several frames. But a read costs ~0.15 µs plus its bytes when they are cold (two pages ~1 µs
 * more than two blocks on a stack of one code object): a page is read only once a sample has
 * met a second object in it. PY_CODE_WINS are kept, half for code objects and half for names (a
 * name's must not evict the one of the code object that names it), one per page-number residue
 * in each. */
#define PY_CODE_WIN  4096
#define PY_CODE_WINS 8
#define PY_NO_WIN    (~0ull) /* a slot that holds nothing (0 is a page: the first) */
#define PY_WIN_SEEN  1ull    /* on a page address: the slot holds one range of that page */
/* The slots as one array: py_mem's offsets are into it. */
#define PY_CODE_MEM (PY_CODE_WINS * PY_CODE_WIN)

/*
 * The walk's state, in the per-CPU scratch map with the slice being read and the chain so far
 * (too large for the 512-byte BPF stack; the chain is copied into the record in one piece at the
 * end). In map memory, not on the stack, so that the verifier knows none of its values: every
 * py_step call starts from the same state, and the callback is verified in one pass instead of
 * once per combination of flags, counts and window bounds it could reach.
 */
struct py_walk {
    __u64 addr;  /* next frame to read; 0: the chain ended */
    __u64 wbase; /* address of win[0]; 0: nothing in win */
    __u64 wend;  /* end of what win holds */
    __u64 mark;  /* frame address saved at each power-of-two step: seeing it again is a loop */
    __u64 floor; /* no window starts below this page when the frame is above it (sample_thread) */
    __u64 last_code, last_ident;             /* the previous frame's code object and its ident */
    __u64 cwin[PY_CODE_WINS];                /* what py_code_wins holds this sample (py_mem) */
    __u32 reads, idents, ident_reads, quals; /* counts of the walk (counters, added at its end) */
    __u32 n;                                 /* frames in fr */
    __u32 flags;
    __u32 tgid;
    struct sample_pylayout L;
    __u8 slice[SAMPLE_PY_SLICE_MAX];
    __u8 win[PY_WINDOW];
    struct sample_pyframe fr[SAMPLE_PY_FRAMES_MAX];
};

/* One per program that records (REC_OFFCPU, REC_SAMPLE at rec_level(): see rec_bufs). */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, SAMPLE_REC_LEVELS);
    __type(key, __u32);
    __type(value, struct py_walk);
} py_scratch SEC(".maps");

/* Pages of code-object and name memory per program that records (py_walk.cwin says which): a
 * map of their own, as a per-CPU value is at most 32 KiB and the walk's is near that. Looked up
 * with the walk's state, once a walk (struct py_ctx). */
struct py_code_wins {
    __u8 b[PY_CODE_WINS][PY_CODE_WIN];
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, SAMPLE_REC_LEVELS);
    __type(key, __u32);
    __type(value, struct py_code_wins);
} py_code_wins SEC(".maps");

/* What each step of the walk works in (bpf_loop takes it on the stack): both looked up once. */
struct py_ctx {
    struct py_walk *w;
    struct py_code_wins *cw;
};

/* 8-byte field at `off` of the slice (offsets come from a map: masked into the slice). */
static __always_inline __u64 slice_u64(const struct py_walk *w, __u32 off)
{
    return *(const __u64 *)&w->slice[off & (SAMPLE_PY_SLICE_MAX - 8) & ~7u];
}

/* Fields of the frame whose slice starts at win[at]. */
static __always_inline __u64 win_u64(const struct py_walk *w, __u32 at, __u32 off)
{
    return *(const __u64 *)&w->win[(at + off) & (PY_WINDOW - 8)];
}

static __always_inline __u8 win_u8(const struct py_walk *w, __u32 at, __u32 off)
{
    return w->win[(at + off) & (PY_WINDOW - 1)];
}

/* The slot of py_code_wins for address `a` in half `half` (0: code objects, 1: names). */
static __always_inline __u32 py_mem_slot(__u64 a, __u32 half)
{
    return (half * (PY_CODE_WINS / 2) + ((a / PY_CODE_WIN) & (PY_CODE_WINS / 2 - 1))) & (PY_CODE_WINS - 1);
}

/*
 * Where the bytes [a, a + len) of the target's memory, as read this sample, lie in py_code_wins:
 * their offset in its slots taken as one array, or -1 when they cannot be read. Their slot
 * (py_mem_slot) holds a page of its page-number residue, read at most once a sample, or the range
 * the sample met first in that page (read alone to the slot's start, as is a range across a
 * page's end). A global function: checked once, where inlined at its two calls each of its
 * outcomes was a state of its own for the rest of py_ident (docs/architecture.md).
 */
__noinline long py_mem(struct py_walk *w, struct py_code_wins *cw, __u64 a, __u64 len, __u32 half)
{
    __u64 base = a & ~(PY_CODE_WIN - 1ull);
    __u32 slot = py_mem_slot(a, half);
    bool inside = a + len <= base + PY_CODE_WIN;

    if (!w || !cw || len > SAMPLE_PY_ID_MAX)
        return -1;
    if (inside && w->cwin[slot] == base)
        return (long)slot * PY_CODE_WIN + (long)(a - base);
    w->ident_reads++;
    if (inside && w->cwin[slot] == (base | PY_WIN_SEEN)) {
        w->cwin[slot] = PY_NO_WIN;
        if (bpf_probe_read_user(cw->b[slot], PY_CODE_WIN, (void *)base))
            return -1;
        w->cwin[slot] = base;
        return (long)slot * PY_CODE_WIN + (long)(a - base);
    }
    w->cwin[slot] = inside ? base | PY_WIN_SEEN : PY_NO_WIN;
    return bpf_probe_read_user(cw->b[slot], len, (void *)a) ? -1 : (long)slot * PY_CODE_WIN;
}

/*
 * The identity of code object `code` at this instant into w->last_ident: its identity block
 * (sample.h) folded word by word. The address alone says nothing once user space names the
 * frame: by then the object may be freed and the address another code object's. A frame that
 * runs the same code as its callee (recursion) reuses the callee's: both are alive now. The
 * qualname's words only where the block has no co_version set (sample_py_versioned). Each read
 * of user memory is a helper call, ~0.14 µs in the target (a kernel read ~0.03): block and
 * qualname come out of the pages this sample read (py_mem) where it met others in them.
 */
__noinline int py_ident(struct py_walk *w, struct py_code_wins *cw, __u64 code)
{
    __u32 len, ver, n;
    __u64 h = 0, word, qual[2];
    __u8 *m;
    long at, qat;

    if (!w || !cw) /* a global function's pointers may be NULL for the verifier */
        return -1;
    if (code == w->last_code)
        return 0;
    len = w->L.co_id_len;
    if (len < 8 || len > SAMPLE_PY_ID_MAX)
        return -1;
    w->idents++;
    at = py_mem(w, cw, code + w->L.co_id_lo, len, 0);
    if (at < 0)
        return -1;
    m = cw->b[0];
    /* Folded in place, zero past the block's length as sample_py_ident does: the block is
     * 8-aligned (code objects and co_id_lo are: py_step, pykernel_layout). A loop the verifier
     * walks once per state that reaches it: unrolled, it was checked anew in each. */
    n = len / 8;
#pragma clang loop unroll(disable)
    for (__s32 i = 0; i < SAMPLE_PY_ID_MAX / 8; i++) {
        word = *(const __u64 *)&m[(at + i * 8) & (PY_CODE_MEM - 8)];
        /* all ones while i < n: no branch, so no state for the verifier to fork */
        h = sample_py_mix(h, word & (__u64)((__s64)(i - (__s32)n) >> 63));
    }
    ver = w->L.co_id_version;
    qual[0] = qual[1] = 0;
    if (!ver || !*(const __u32 *)&m[(at + ver) & (PY_CODE_MEM - 4)]) {
        w->quals++;
        /* the str's length and hash words (8-aligned: pykernel_layout) */
        word = *(const __u64 *)&m[(at + w->L.co_id_qualname) & (PY_CODE_MEM - 8)];
        qat = py_mem(w, cw, word + w->L.str_length, sizeof(qual), 1);
        if (qat < 0)
            return -1;
        qual[0] = *(const __u64 *)&m[qat & (PY_CODE_MEM - 8)];
        qual[1] = *(const __u64 *)&m[(qat + 8) & (PY_CODE_MEM - 8)];
    }
    h = sample_py_mix(sample_py_mix(h, qual[0]), qual[1]);
    w->last_code = code;
    w->last_ident = sample_py_ident_end(h);
    h = sample_py_named_bit(w->tgid, code, w->last_ident);
    if (!(py_named[(h / 64) & (SAMPLE_PY_NAMED_BITS / 64 - 1)] & (1ull << (h & 63))))
        w->flags |= SAMPLE_PY_UNNAMED;
    return 0;
}

/*
 * One frame per call (bpf_loop): find its slice, keep (code, instr, owner + entry as the
 * record's 3-bit tag, sample.h), go to previous.
 * 3.11+ push frames on a per-thread data stack that grows upwards, so a caller usually lies just
 * below its callee: one read of the PY_WINDOW bytes that end at a frame's slice serves the next
 * frames too. When that read fails (the window would start below the mapping), only the slice
 * is read.
 */
static long py_step(__u64 i, struct py_ctx *c)
{
    struct py_walk *w = c->w;
    __u32 len = w->L.f_len, at;
    __u64 code, instr, a, tag;
    __u8 owner, entry = 0;

    if (!w->addr)
        return 1;
    if (w->n >= cfg_py_frames || w->n >= SAMPLE_PY_FRAMES_MAX) {
        w->flags |= SAMPLE_PY_TRUNCATED;
        return 1;
    }
    if (len > SAMPLE_PY_SLICE_MAX) {
        w->flags |= SAMPLE_PY_BROKEN;
        return 1;
    }
    a = w->addr + w->L.f_lo;
    if (!w->wbase || a < w->wbase || a + len > w->wend) {
        __u64 wlen;

        w->wend = (a + len + 7) & ~7ull;
        w->wbase = w->wend - PY_WINDOW;
        /* Not from below the page where this thread's mapping was found to start. */
        if (w->floor && a >= w->floor && w->wbase < w->floor)
            w->wbase = w->floor;
        wlen = w->wend - w->wbase;
        barrier_var(wlen);
        w->reads++;
        if (wlen > PY_WINDOW || bpf_probe_read_user(w->win, wlen, (void *)w->wbase)) {
            /* The window started below the mapping (a data-stack chunk starts on a page):
             * read from the frame's page on, so the rest of the page still serves, and start
             * the thread's windows there from now on (a failed read costs a fault). */
            wlen = a + len - (a & ~4095ull);
            count(SAMPLE_CNT_PY_MISSES);
            w->reads++;
            w->wbase = a & ~4095ull;
            w->wend = a + len;
            barrier_var(wlen);
            if (wlen > PY_WINDOW || bpf_probe_read_user(w->win, wlen, (void *)w->wbase)) {
                w->wbase = 0;
                w->reads++;
                if (bpf_probe_read_user(w->win, len, (void *)a)) {
                    w->flags |= SAMPLE_PY_BROKEN;
                    return 1;
                }
            } else {
                w->floor = w->wbase;
            }
        }
    }
    at = w->wbase ? (__u32)(a - w->wbase) : 0;
    /* 3.14+ keep f_executable as a tagged stack reference: clear the tag first. */
    code = win_u64(w, at, w->L.f_code) & ~(__u64)(w->L.code_tag & SAMPLE_PY_TAG_MASK);
    instr = win_u64(w, at, w->L.f_instr);
    owner = win_u8(w, at, w->L.f_owner);
    if (w->L.f_is_entry != SAMPLE_PY_NONE)
        entry = win_u8(w, at, w->L.f_is_entry) ? 1 : 0;
    /* Not a frame: an owner out of range, a missing or misaligned code object (a shim, owner 3
     * or 4, may have none). An entry flag is only kept for owners 0..2 (3.11). */
    if (owner > w->L.max_owner || owner > SAMPLE_PY_OWNER_MAX || (code & 7) || (owner < 3 && !code) ||
        (entry && owner > 2)) {
        w->flags |= SAMPLE_PY_BROKEN;
        return 1;
    }
    tag = entry ? SAMPLE_PY_TAG_ENTRY + owner : owner;
    if (owner < 3 && py_ident(w, c->cw, code)) {
        w->flags |= SAMPLE_PY_BROKEN;
        return 1;
    }
    w->fr[w->n & (SAMPLE_PY_FRAMES_MAX - 1)].code = code | tag;
    w->fr[w->n & (SAMPLE_PY_FRAMES_MAX - 1)].instr = instr;
    w->fr[w->n & (SAMPLE_PY_FRAMES_MAX - 1)].ident = owner < 3 ? w->last_ident : 0;
    w->n++;
    w->addr = win_u64(w, at, w->L.f_previous);
    /* A chain that loops (forged or torn memory) would fill the cap with copies of itself:
     * Brent's cycle check, one compare per frame, finds a loop within about twice its
     * distance from the leaf; user space then reads the chain itself and counts the loop. */
    if (w->addr && w->addr == w->mark) {
        w->flags |= SAMPLE_PY_BROKEN;
        return 1;
    }
    if (!(w->n & (w->n - 1)))
        w->mark = w->addr;
    return 0;
}

/*
 * The Python frames of thread `tid` of `tgid`, leaf first, appended to the record at
 * ev->stack + ev->stack_len (ev has room for cfg_py_frames). Nothing when the thread is
 * unknown (SAMPLE_PY_UNTAUGHT in a Python process) or has no thread state; SAMPLE_PY_STALE
 * when its thread state now belongs to another thread or none.
 */
static __always_inline void py_capture(struct sample_event *ev, struct sample_thread *th, __u32 tgid,
                                       __u32 tid, __u32 size, __u32 level)
{
    struct sample_pylayout *L;
    struct py_code_wins *cw;
    struct py_walk *w;
    __u64 ts, top;
    __u64 off, nb;
    __u32 len;

    if (!th || !th->tstate) {
        /* A thread of a Python process that user space has not looked at yet: this record,
         * read there, teaches it; it wakes user space (wake_flag) so that the read is of now. */
        if (bpf_map_lookup_elem(&py_layouts, &tgid))
            ev->py_flags = SAMPLE_PY_UNTAUGHT;
        return;
    }
    if (th->tstate == SAMPLE_PY_NO_TSTATE)
        return;
    ts = th->tstate;
    L = bpf_map_lookup_elem(&py_layouts, &tgid);
    level = rec_level(level);
    w = bpf_map_lookup_elem(&py_scratch, &level);
    cw = bpf_map_lookup_elem(&py_code_wins, &level);
    if (!L || !w || !cw)
        return;
    w->L = *L;
    len = w->L.ts_len;
    if (len > SAMPLE_PY_SLICE_MAX || bpf_probe_read_user(w->slice, len, (void *)(ts + w->L.ts_lo)))
        goto stale;
    /* A thread that ended leaves its tid in the map and its memory to be reused: the thread
     * state must still name this thread. */
    if ((__u32)slice_u64(w, w->L.ts_native_thread_id) != tid)
        goto stale;
    if (w->L.ts_cframe != SAMPLE_PY_NONE) {
        /* 3.11 and 3.12 keep the current frame in a _PyCFrame of the evaluation loop's C frame:
         * on the thread's stack, most often in the part this record copied an instant ago. */
        __u64 cframe = slice_u64(w, w->L.ts_cframe);
        __u64 at = cframe + w->L.cf_current_frame - ev->stack_addr;

        top = 0;
        if (cframe && ev->stack_len >= 8 && at <= ev->stack_len - 8) {
            if (bpf_probe_read_kernel(&top, 8, ev->stack + at))
                goto broken;
        } else if (cframe) {
            count(SAMPLE_CNT_PY_CFRAMES);
            if (bpf_probe_read_user(&top, 8, (void *)(cframe + w->L.cf_current_frame)))
                goto broken;
        }
    } else {
        top = slice_u64(w, w->L.ts_current_frame);
    }

    w->addr = top;
    w->wbase = w->wend = w->mark = 0;
    w->floor = th->py_floor;
    w->last_code = w->last_ident = 0;
    __builtin_memset(w->cwin, 0xff, sizeof(w->cwin)); /* PY_NO_WIN */
    w->reads = w->idents = w->ident_reads = w->quals = 0;
    w->n = 0;
    w->flags = 0;
    w->tgid = tgid;
    struct py_ctx c = {.w = w, .cw = cw};

    bpf_loop(cfg_py_frames + 1, py_step, &c, 0);
    /* Counted once a walk: a counter is a call, and a walk makes a read or identity a frame. */
    count_n(SAMPLE_CNT_PY_READS, w->reads);
    if (w->idents) {
        count_n(SAMPLE_CNT_PY_IDENTS, w->idents);
        count_n(SAMPLE_CNT_PY_IDENT_READS, w->ident_reads);
    }
    if (w->quals)
        count_n(SAMPLE_CNT_PY_QUALS, w->quals);
    if (w->floor != th->py_floor)
        th->py_floor = w->floor;
    /* A half chain would be attributed wrongly: user space reads this one itself. */
    if (w->flags & SAMPLE_PY_BROKEN)
        goto broken;
    ev->py_flags = SAMPLE_PY_CAPTURED | (w->flags & (SAMPLE_PY_TRUNCATED | SAMPLE_PY_UNNAMED));
    if (!w->n)
        return;
    nb = w->n * sizeof(struct sample_pyframe);
    if (nb > cfg_py_frames * sizeof(struct sample_pyframe))
        nb = cfg_py_frames * sizeof(struct sample_pyframe);
    if (nb > REC_PY_MAX)
        nb = REC_PY_MAX;
    off = ev->stack_len;
    if (off > size)
        off = size;
    barrier_var(off);
    barrier_var(nb);
    if (off > SAMPLE_STACK_COPY_MAX || nb > REC_PY_MAX || bpf_probe_read_kernel(ev->stack + off, nb, w->fr))
        goto broken;
    ev->py_count = nb / sizeof(struct sample_pyframe);
    count_n(SAMPLE_CNT_PY_FRAMES, ev->py_count);
    return;
broken:
    ev->py_flags = SAMPLE_PY_BROKEN;
    count(SAMPLE_CNT_PY_BROKEN);
    return;
stale:
    ev->py_flags = SAMPLE_PY_STALE | SAMPLE_PY_UNTAUGHT;
    count(SAMPLE_CNT_PY_STALE);
    th->tstate = 0; /* its stack end stays: the tid is still this thread's */
}

/* Whether the current task belongs to a target; its ids (in the loader's PID namespace) into
 * *tgid and *tid. */
static __always_inline bool current_target(__u32 *tgid, __u32 *tid)
{
    __u64 id = bpf_get_current_pid_tgid();

    *tgid = id >> 32;
    *tid = (__u32)id;
    if (cfg_pidns_ino) {
        struct bpf_pidns_info ns;

        /* fails for tasks outside the namespace: they cannot be targets */
        if (bpf_get_ns_current_pid_tgid(cfg_pidns_dev, cfg_pidns_ino, &ns, sizeof(ns)))
            return false;
        *tgid = ns.tgid;
        *tid = ns.pid;
    }
    if (!bpf_map_lookup_elem(&targets, tgid))
        return false;
    __u64 *start = bpf_map_lookup_elem(&target_start, tgid);

    if (start) {
        struct task_struct *cur = bpf_get_current_task_btf();
        __u64 leader = kread64(cur, cfg_koff.task_group_leader);
        __u64 ticks = kread64((void *)leader, cfg_koff.task_start_boottime) / SAMPLE_TICK_NS;

        if (ticks != *start) {
            count(SAMPLE_CNT_REUSED);
            return false;
        }
    }
    return true;
}

/*
 * The kernel stack (when `kstack`) and the user frame-pointer chain (when `ustack`), at the end
 * of the record: after the copy and the Python frames, at the lengths they came to.
 */
static __always_inline void record_stacks(struct sample_event *ev, void *ctx, bool kstack, bool ustack)
{
    __u64 off = ev->stack_len + ev->py_count * sizeof(struct sample_pyframe);
    long n;

    if (kstack) {
        barrier_var(off);
        if (off > SAMPLE_STACK_COPY_MAX + REC_PY_MAX)
            return;
        n = bpf_get_stack(ctx, ev->stack + off, SAMPLE_STACK_BYTES, 0);
        if (n >= 0 && n <= SAMPLE_STACK_BYTES) {
            ev->kstack_len = n;
            off += n;
        } else {
            ev->flags |= SAMPLE_F_KSTACK_ERR;
        }
    }
    if (ustack) {
        barrier_var(off);
        if (off > SAMPLE_STACK_COPY_MAX + REC_PY_MAX + SAMPLE_STACK_BYTES)
            return;
        n = bpf_get_stack(ctx, ev->stack + off, SAMPLE_STACK_BYTES, BPF_F_USER_STACK);
        if (n >= 0)
            ev->ustack_len = n;
        else
            ev->flags |= SAMPLE_F_USTACK_ERR;
    }
}

/*
 * The record of `level` on this CPU (rec_bufs), as far as it was filled, into the ring. 0, or -1
 * when the ring was full. A global function: the verifier checks it once, on its own, where
 * inlined it was checked again for every state the program reached it in (a quarter of the
 * instructions it processed).
 */
__noinline int submit(__u32 level)
{
    __u32 key = bpf_get_smp_processor_id() * cfg_rec_levels + rec_level(level);
    struct sample_event *ev = bpf_map_lookup_elem(&rec_bufs, &key);

    if (!ev)
        return -1;
    __u64 len = ev->stack_len, py = ev->py_count * sizeof(struct sample_pyframe);
    __u64 st = ev->kstack_len + (__u64)ev->ustack_len;

    if (len > SAMPLE_STACK_COPY_MAX)
        len = SAMPLE_STACK_COPY_MAX;
    if (py > REC_PY_MAX)
        py = REC_PY_MAX;
    if (st > 2 * SAMPLE_STACK_BYTES)
        st = 2 * SAMPLE_STACK_BYTES;
    len += sizeof(*ev) + py + st;
    barrier_var(len);
    if (len > REC_MAX || bpf_ringbuf_output(&events, ev, len, wake_flag(ev->flags, ev->py_flags))) {
        count(SAMPLE_CNT_LOST);
        return -1;
    }
    return 0;
}

/*
 * One record of the current task, built in ev and copied into the ring: ids, time, the user
 * registers, the stack copy, the Python chain, then the kernel stack (when `kstack`) and the
 * frame-pointer chain. `ctx` is the calling program's context (for bpf_get_stack), `flags` the
 * record's first flags. Shared by the sampler and the off-CPU program, so both see a thread the
 * same way. Returns 0, or -1 when the ring was full.
 */
static __always_inline int record_in(struct sample_event *ev, __u32 level, void *ctx, __u32 tgid, __u32 tid,
                                     __u32 flags, bool kstack)
{
    __u32 size = cfg_stack_copy, pyframes = cfg_py_frames;
    struct sample_thread *th;
    struct task_struct *task;

    if (size > SAMPLE_STACK_COPY_MAX)
        size = SAMPLE_STACK_COPY_MAX;
    if (pyframes > SAMPLE_PY_FRAMES_MAX)
        pyframes = SAMPLE_PY_FRAMES_MAX;

    ev->pid = tgid;
    ev->tid = tid;
    ev->cpu = bpf_get_smp_processor_id();
    ev->flags = flags;
    ev->time_ns = bpf_ktime_get_ns();
    ev->py_count = 0;
    ev->py_flags = 0;
    ev->kstack_len = 0;
    ev->ustack_len = 0;
    ev->stack_len = 0;
    ev->stack_addr = 0;
    bpf_get_current_comm(ev->comm, sizeof(ev->comm));

    task = bpf_get_current_task_btf();
    /* A probe read, not a load through the trusted pointer: the verifier checks such a load by
     * searching the kernel's BTF for the type by name: a quarter of the program's load time. */
    if (!kread64(task, cfg_koff.task_mm)) {
        ev->flags |= SAMPLE_F_NO_UREGS;
        __builtin_memset(&ev->regs, 0, sizeof(ev->regs));
        record_stacks(ev, ctx, kstack, false);
        return submit(level);
    }
    /* ctx->regs are the kernel's registers when the sample landed in the kernel; the user
     * registers are the ones saved at kernel entry. */
    read_user_regs(&ev->regs, (struct pt_regs *)bpf_task_pt_regs(task));

    th = bpf_map_lookup_elem(&threads, &tid);
    if (!th) {
        /* Until user space has seen this record, the thread's copies are not bounded by its
         * stack end (halving, see copy_stack): the entry makes this one record wake it. */
        struct sample_thread none = {};

        bpf_map_update_elem(&threads, &tid, &none, BPF_NOEXIST);
        ev->flags |= SAMPLE_F_NEW_THREAD;
    }
    if (size) {
        ev->stack_addr = ev->regs.sp;
        ev->stack_len = copy_stack(ev, task, th, tid, tgid, size);
    }
    if (pyframes)
        py_capture(ev, th, tgid, tid, size, level);
    record_stacks(ev, ctx, kstack, cfg_user_fp_stack);
    return submit(level);
}

/* `level`: the calling program's buffers, REC_OFFCPU or REC_SAMPLE. */
static __always_inline int record(void *ctx, __u32 tgid, __u32 tid, __u32 flags, bool kstack, __u32 level)
{
    __u32 key = bpf_get_smp_processor_id() * cfg_rec_levels + rec_level(level);
    struct sample_event *ev = bpf_map_lookup_elem(&rec_bufs, &key);

    if (!ev) {
        count(SAMPLE_CNT_LOST);
        return -1;
    }
    return record_in(ev, level, ctx, tgid, tid, flags, kstack);
}

/* -- GIL holder (--mode gil, top) ------------------------------------------------------------ */

/* Whether samples say if their thread held the GIL (MARK: top's share) or only the holder's
 * samples are kept (ONLY: --mode gil). */
const volatile __u32 cfg_gil = SAMPLE_GIL_OFF;

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, SAMPLE_MAX_TARGETS);
    __type(key, __u32);
    __type(value, struct sample_pygil);
} py_gil SEC(".maps");

/* 1 when thread `tid` holds its interpreter's GIL now, 0 when it does not, -1 when its thread
 * state or its process's GIL is not known yet (user space then learns them from the record). */
static __always_inline int gil_held(__u32 tgid, __u32 tid)
{
    struct sample_pygil *g = bpf_map_lookup_elem(&py_gil, &tgid);
    struct sample_thread *th = bpf_map_lookup_elem(&threads, &tid);
    __u64 base, holder = 0, ts;
    int locked = 0;

    if (!g || !th || !th->tstate)
        return -1;
    ts = th->tstate;
    base = g->runtime;
    if (!g->in_runtime && bpf_probe_read_user(&base, 8, (void *)(ts + g->ts_interp)))
        return -1;
    if (bpf_probe_read_user(&locked, 4, (void *)(base + g->locked)) ||
        bpf_probe_read_user(&holder, 8, (void *)(base + g->holder)))
        return -1;
    return locked && holder == ts;
}

SEC("perf_event")
int sample(struct bpf_perf_event_data *ctx)
{
    __u32 tgid, tid, flags = 0;
    bool in_kernel;

    if (!current_target(&tgid, &tid))
        return 0;
    count(SAMPLE_CNT_MATCHED);
    if (cfg_gil != SAMPLE_GIL_OFF) {
        int held = gil_held(tgid, tid);

        if (!held && cfg_gil == SAMPLE_GIL_ONLY) {
            count(SAMPLE_CNT_GIL_NOT_HELD);
            return 0;
        }
        flags = held > 0 ? SAMPLE_F_GIL_HELD : held < 0 ? SAMPLE_F_GIL_UNKNOWN : 0;
    }
    in_kernel = in_kernel_mode(ctx);
    record(ctx, tgid, tid, flags | (in_kernel ? SAMPLE_F_IN_KERNEL : 0), cfg_kernel_stack && in_kernel,
           REC_SAMPLE);
    return 0;
}

/* -- Off-CPU --------------------------------------------------------------------------------- */

/* A target thread off the CPU since (kernel tid -> when and who, in the loader's ids): put in
 * when it leaves the CPU and its record was written, taken out when it comes back. LRU: a
 * thread that exits off the CPU never comes back. */
struct offcpu_out {
    __u64 since_ns;
    __u32 pid, tid;
    __u32 flags; /* SAMPLE_F_PREEMPTED: it left runnable */
    __u32 pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, SAMPLE_MAX_THREADS);
    __type(key, __u32);
    __type(value, struct offcpu_out);
} offcpu_since SEC(".maps");

/* Thread `o` is back on a CPU since `back` (ns): the wake record with the time it was off. */
static __always_inline void offcpu_wake(const struct offcpu_out *o, __u64 back, __u64 now)
{
    struct sample_wake *w = bpf_ringbuf_reserve(&events, sizeof(*w), 0);

    if (!w) {
        count(SAMPLE_CNT_OFFCPU_LOST);
        return;
    }
    w->pid = o->pid;
    w->tid = o->tid;
    w->cpu = bpf_get_smp_processor_id();
    w->flags = SAMPLE_F_WAKE | o->flags;
    w->time_ns = now;
    w->off_ns = back > o->since_ns ? back - o->since_ns : 0;
    bpf_ringbuf_submit(w, wake_flag(0, 0));
}

/*
 * --mode offcpu and wall: at every context switch, a target thread leaving the CPU gets the
 * record a sample would give it (kernel stack always: it names the wait), flagged
 * SAMPLE_F_OFFCPU; a thread coming back gets a small struct sample_wake with the time it was
 * off. The program runs on the CPU of the switch, as `prev`, so the capture reads prev's own
 * registers and memory. Loaded and attached only in those modes. A raw tracepoint (its
 * arguments are the tracepoint's prototype, as words): attached by name, with neither tracefs
 * nor the kernel's BTF.
 */
SEC("raw_tp/sched_switch")
int BPF_PROG(offcpu, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    __u32 ktid = kread32(next, cfg_koff.task_pid), tgid, tid, flags;
    __u64 now = bpf_ktime_get_ns(), ran;
    struct offcpu_out *o = bpf_map_lookup_elem(&offcpu_since, &ktid), out = {};

    if (o) {
        offcpu_wake(o, now, now);
        bpf_map_delete_elem(&offcpu_since, &ktid);
    }
    if (!current_target(&tgid, &tid))
        return 0;
    count(SAMPLE_CNT_OFFCPU_SWITCHES);
    ktid = (__u32)bpf_get_current_pid_tgid(); /* prev is the current task */
    o = bpf_map_lookup_elem(&offcpu_since, &ktid);
    if (o) {
        /* Leaving the CPU while still off it: the program did not run for its way back in
         * (on 6.18 a few switches in 4,000 pass by it). It came back when this stint on the
         * CPU began: its run time since it was last picked (scheduler clock, a duration) ago. */
        count(SAMPLE_CNT_OFFCPU_UNSEEN);
        ran = kread64(prev, cfg_koff.task_sum_exec) - kread64(prev, cfg_koff.task_prev_sum_exec);
        offcpu_wake(o, ran < now ? now - ran : 0, now);
    }
    flags = SAMPLE_F_IN_KERNEL | SAMPLE_F_OFFCPU;
    /* Preempted, or woken before it could sleep: it is waiting for a CPU, not for an event. */
    if (preempt || !(prev_state & 0xff))
        flags |= SAMPLE_F_PREEMPTED;
    if (record(ctx, tgid, tid, flags, true, REC_OFFCPU)) {
        count(SAMPLE_CNT_OFFCPU_LOST);
        if (o)
            bpf_map_delete_elem(&offcpu_since, &ktid);
        return 0;
    }
    out.since_ns = bpf_ktime_get_ns();
    out.pid = tgid;
    out.tid = tid;
    out.flags = flags & SAMPLE_F_PREEMPTED;
    bpf_map_update_elem(&offcpu_since, &ktid, &out, BPF_ANY);
    return 0;
}

/* --children: a process forked by a target becomes a target (threads share the tgid already).
 * Loaded and attached only when asked for. */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(follow_fork, struct task_struct *parent, struct task_struct *child)
{
    __u32 ptgid = kread32(parent, cfg_koff.task_tgid), ctgid = kread32(child, cfg_koff.task_tgid);
    __u8 one = 1;

    if (ptgid == ctgid)
        return 0;
    if (cfg_pidns_ino) {
        /* The parent runs the fork: its ids come from the helper; the child, a new process and
         * its own group leader, is numbered at the same namespace level. */
        struct bpf_pidns_info ns;
        __u64 cpid = kread64(child, cfg_koff.task_thread_pid);
        __u32 level, nr;

        if (bpf_get_ns_current_pid_tgid(cfg_pidns_dev, cfg_pidns_ino, &ns, sizeof(ns)))
            return 0;
        level = kread32((void *)kread64(parent, cfg_koff.task_thread_pid), cfg_koff.pid_level);
        if (level > 32 || bpf_probe_read_kernel(&nr, sizeof(nr),
                                                (void *)(cpid + cfg_koff.pid_numbers +
                                                         level * cfg_koff.upid_size + cfg_koff.upid_nr)))
            return 0;
        ptgid = ns.tgid;
        ctgid = nr;
    }
    if (!bpf_map_lookup_elem(&targets, &ptgid))
        return 0;
    bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
    return 0;
}

/* Launch mode: a pending process becomes a target at its exec. Loaded only in launch mode. */
SEC("raw_tp/sched_process_exec")
int BPF_PROG(start_on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    __u8 one = 1;

    if (cfg_pidns_ino) {
        struct bpf_pidns_info ns;

        if (bpf_get_ns_current_pid_tgid(cfg_pidns_dev, cfg_pidns_ino, &ns, sizeof(ns)))
            return 0;
        tgid = ns.tgid;
    }
    if (!bpf_map_lookup_elem(&pending, &tgid))
        return 0;
    bpf_map_update_elem(&targets, &tgid, &one, BPF_ANY);
    bpf_map_delete_elem(&pending, &tgid);
    return 0;
}
