/*
 * sample.h — the one header shared by bpf/sample.bpf.c and user/: the record one sample puts
 * into the ring buffer, its limits, and the names of the configuration the loader sets.
 *
 * One record (little-endian, native layout; fields in the order of the struct):
 *
 *   offset  size
 *   0       4     pid (tgid)              4     tid
 *   8       4     cpu                     4     flags (SAMPLE_F_*)
 *   16      8     time_ns (CLOCK_MONOTONIC, bpf_ktime_get_ns)
 *   24      72    regs: user ip sp bp bx r12 r13 r14 r15 lr at the sample instant
 *   96      8     stack_addr (user sp the copy starts at)
 *   104     4     kstack_len (bytes)      4     ustack_len (bytes)
 *   112     4     stack_len (bytes)       2     py_count    2  py_flags (SAMPLE_PY_*)
 *   120     16    comm
 *   136     ...   stack[stack_len]: copy of user memory [stack_addr, stack_addr + stack_len)
 *   then          py[py_count]: Python frames read in the kernel, leaf first
 *   then          kstack[kstack_len / 8]: kernel return addresses, leaf first
 *   then          ustack[ustack_len / 8]: user frame-pointer chain from bpf_get_stack, leaf first
 *
 * stack_len is a multiple of 8 and a frame is 24 bytes, so every part is 8-byte aligned. The
 * stacks come last, at the length they came to: a record without them (the default unwinder reads
 * the copy; kernel stacks only when asked for) carries none of their 2 KiB of room.
 *
 * One Python frame (struct sample_pyframe, 24 bytes):
 *
 *   0   8   code | tag: PyCodeObject address (8-byte aligned once 3.14+'s stack-reference tag
 *           bits are cleared, so its low three bits are free) with a 3-bit tag:
 *             tag 0..4  _PyInterpreterFrame.owner (3.14 uses 0..4, 3.12/3.13/3.15 0..3)
 *             tag 5..7  a 3.11 frame with is_entry set, owner = tag - 5 (3.11 owners are 0..2)
 *   8   8   instr: prev_instr (3.11, 3.12) or instr_ptr (3.13+)
 *   16  8   ident: sample_py_ident() of the code object's identity block (co_firstlineno ..
 *           co_linetable: the counts, the name, qualname, filename and line table pointers) as
 *           it was at the sample instant; 0 for a shim (no code object). User space names the
 *           frame only from a cache entry whose header folds to the same value: an address
 *           freed and reused by another code object since the sample never lends its name.
 *
 * The record is built in a per-CPU buffer of the largest size (header + configured copy size +
 * configured Python frames + both stacks) and copied into the ring at the size it came to; user
 * space reads only the lengths given, through sample_kstack() and sample_ustack(), after checking
 * sample_event_len() against the record's size.
 */
#ifndef PYEBPF_SAMPLE_H
#define PYEBPF_SAMPLE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define SAMPLE_MAX_STACK_DEPTH    127   /* kernel default of perf_event_max_stack */
#define SAMPLE_STACK_COPY_DEFAULT 16384 /* bytes of user stack copied per sample */
#define SAMPLE_STACK_COPY_MAX     65536 /* upper bound of --stack-size */
#define SAMPLE_STACK_COPY_MIN     512   /* smallest fallback size tried */
/* Room of a record's kernel stack, and of its frame-pointer chain. */
#define SAMPLE_STACK_BYTES (SAMPLE_MAX_STACK_DEPTH * 8)
#define SAMPLE_COMM_LEN    16
#define SAMPLE_REC_LEVELS  2    /* record buffers per CPU: the sampler's and the off-CPU program's */
#define SAMPLE_MAX_TARGETS 1024 /* processes sampled at once */
/* Threads whose stack end and thread state the kernel keeps. The two LRU maps are preallocated
 * at load (2.4 ms of CPU each at 65536 entries, 0.3 ms at 8192); past that many threads the
 * least recently sampled ones are forgotten: their stack copies fall back to smaller sizes (user
 * space learns a stack end once per thread) and their Python chains are read remotely until
 * user space tells the kernel the thread state again. */
#define SAMPLE_MAX_THREADS       8192
#define SAMPLE_TICK_NS           10000000 /* USER_HZ 100: /proc/PID/stat start time unit */
#define SAMPLE_PY_FRAMES_DEFAULT 1024     /* Python frames read in the kernel per sample */
#define SAMPLE_PY_FRAMES_MAX                                                                                 \
    1024                           /* upper bound of that cap (a power of two; the                           \
                                      per-CPU scratch must stay under 32 KiB) */
#define SAMPLE_PY_SLICE_MAX 128    /* bytes of a frame / thread state read at once */
#define SAMPLE_PY_ID_MAX    80     /* bytes of a code object's identity block (10 words) */
#define SAMPLE_PY_NONE      0xffff /* a layout offset the version does not have */

/* flags */
#define SAMPLE_F_IN_KERNEL    (1u << 0)  /* the sample landed in kernel mode */
#define SAMPLE_F_KSTACK_ERR   (1u << 1)  /* bpf_get_stack (kernel) failed */
#define SAMPLE_F_USTACK_ERR   (1u << 2)  /* bpf_get_stack (user) failed */
#define SAMPLE_F_COPY_ERR     (1u << 3)  /* no stack copy could be read */
#define SAMPLE_F_COPY_SHORT   (1u << 4)  /* copy is shorter than asked (fallback size) */
#define SAMPLE_F_COPY_BOUNDED (1u << 5)  /* copy bounded by a known stack end */
#define SAMPLE_F_NO_UREGS     (1u << 6)  /* kernel thread or no user registers */
#define SAMPLE_F_OFFCPU       (1u << 7)  /* taken as the thread left the CPU (sched_switch) */
#define SAMPLE_F_PREEMPTED    (1u << 8)  /* ... and it left runnable (preempted, not waiting) */
#define SAMPLE_F_WAKE         (1u << 9)  /* a struct sample_wake, not a sample_event */
#define SAMPLE_F_GIL_HELD     (1u << 10) /* GIL checked: the thread held the GIL at the sample */
#define SAMPLE_F_GIL_UNKNOWN  (1u << 11) /* GIL checked: its thread state or GIL not known yet */
/* The thread's first record (the program added it to "threads"): user space learns its stack end
 * from it. */
#define SAMPLE_F_NEW_THREAD (1u << 12)
/* With the GIL checked (cfg_gil), an on-CPU sample with neither of the two flags was taken while
 * its thread did not hold the GIL. */

/* py_flags: what the in-kernel Python reader found (0: the thread is not known to it) */
#define SAMPLE_PY_CAPTURED  (1u << 0) /* py[] is the thread's whole chain (maybe empty) */
#define SAMPLE_PY_TRUNCATED (1u << 1) /* the frame cap was reached: the root side is missing */
#define SAMPLE_PY_STALE     (1u << 2) /* the thread state is not this thread's (thread gone) */
#define SAMPLE_PY_BROKEN    (1u << 3) /* a read failed or a frame was invalid: chain dropped */
#define SAMPLE_PY_UNNAMED   (1u << 4) /* a frame's code object is not in py_named (below) */
/* A thread of a Python process with no thread state in the map (or a stale one): user space
 * reads it. */
#define SAMPLE_PY_UNTAUGHT (1u << 5)
/* A thread state user space found none for (a native thread, a Python thread not started
 * yet): its records are read in user space without waking it (SAMPLE_PY_UNTAUGHT). */
#define SAMPLE_PY_NO_TSTATE 1ull

/* The code objects user space has named, as bits of a one-hash filter in the program's global
 * data (py_named, mapped by user space): a chain with a code object whose bit is clear may
 * need naming while the target still lives, and wakes the consumer when it asked for that
 * (wake_armed). A bit another object set only delays that naming to the next drain. */
#define SAMPLE_PY_NAMED_BITS (1u << 20)

/* Per-CPU counters (array map "counters", index = enum value). */
enum sample_counter {
    SAMPLE_CNT_MATCHED = 0,     /* samples of a target thread seen by the program */
    SAMPLE_CNT_LOST,            /* ring buffer full: record dropped */
    SAMPLE_CNT_COPY_ERR,        /* stack copy failed at every size */
    SAMPLE_CNT_COPY_RETRY,      /* a copy needed a smaller size */
    SAMPLE_CNT_REUSED,          /* a target's PID named another process (start time differs) */
    SAMPLE_CNT_PY_FRAMES,       /* Python frames read in the kernel */
    SAMPLE_CNT_PY_STALE,        /* thread states that no longer matched their tid */
    SAMPLE_CNT_PY_BROKEN,       /* chains given up (read error, invalid frame) */
    SAMPLE_CNT_PY_READS,        /* reads of frame memory (a window or one frame's slice) */
    SAMPLE_CNT_PY_MISSES,       /* window reads that failed (the window crossed a mapping's start) */
    SAMPLE_CNT_PY_IDENTS,       /* code identities taken (a frame's code unlike its callee's) */
    SAMPLE_CNT_PY_IDENT_READS,  /* reads for them: a page, or one range (code objects, qualnames) */
    SAMPLE_CNT_PY_QUALS,        /* qualnames' length and hash folded in (no co_version set) */
    SAMPLE_CNT_OFFCPU_SWITCHES, /* target threads seen leaving the CPU (--mode offcpu, wall) */
    SAMPLE_CNT_OFFCPU_LOST,     /* their records or wake records the full ring dropped */
    SAMPLE_CNT_GIL_NOT_HELD,    /* --mode gil: samples dropped, the thread did not hold the GIL */
    SAMPLE_CNT_OFFCPU_UNSEEN,   /* switches back in the off-CPU program did not see (closed late) */
    SAMPLE_CNT_PY_CFRAMES,      /* reads of a _PyCFrame (3.11, 3.12) outside the stack copy */
    SAMPLE_CNT_NR,
};

struct sample_regs {
    __u64 ip, sp, bp;
    __u64 bx, r12, r13, r14, r15; /* x86-64 callee-saved; aarch64: x19..x23 */
    __u64 lr;                     /* aarch64 x30; 0 on x86-64 */
};

struct sample_event {
    __u32 pid;
    __u32 tid;
    __u32 cpu;
    __u32 flags;
    __u64 time_ns;
    struct sample_regs regs;
    __u64 stack_addr;
    __u32 kstack_len;
    __u32 ustack_len;
    __u32 stack_len;
    __u16 py_count; /* Python frames after the stack copy */
    __u16 py_flags; /* SAMPLE_PY_* */
    char comm[SAMPLE_COMM_LEN];
    __u8 stack[]; /* the copy, then py, kstack, ustack (see above) */
};

struct sample_pyframe {
    __u64 code; /* code address | tag (see the diagram above) */
    __u64 instr;
    __u64 ident; /* sample_py_ident of the code object at the sample instant; 0: none */
};

/* The fold both sides compute over a code object's identity block (8-byte words, in order): a
 * multiply-xorshift per word, so that words moved or swapped change the result. Never 0. */
static inline __attribute__((always_inline)) __u64 sample_py_mix(__u64 h, __u64 w)
{
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static inline __attribute__((always_inline)) __u64 sample_py_ident_end(__u64 h)
{
    return h ? h : 1;
}

/* The py_named bit of code object `code` with identity `ident` in process `tgid`. */
static inline __attribute__((always_inline)) __u32 sample_py_named_bit(__u32 tgid, __u64 code, __u64 ident)
{
    return (__u32)sample_py_mix(sample_py_mix(tgid, code), ident) & (SAMPLE_PY_NAMED_BITS - 1);
}

#ifndef __VMLINUX_H__
#include <string.h>

/* Whether a code object's block (a copy, at least ver_at + 4 bytes) has its co_version set
 * (ver_at: 0 when the layout has none). CPython 3.12+ numbers each code object from
 * a counter of the interpreter that stops at 0 once it wraps: a number set is no other code
 * object's, so the block alone tells two objects at one address apart and the qualname is not
 * read (each read is a helper call, ~0.15 µs in the target). */
static inline __attribute__((always_inline)) int sample_py_versioned(const void *block, __u32 ver_at)
{
    __u32 v;

    if (!ver_at)
        return 0;
    __builtin_memcpy(&v, (const __u8 *)block + ver_at, 4);
    return v != 0;
}

/* User space's side of the fold, over a copy of the block (len: a multiple of 8, at most
 * SAMPLE_PY_ID_MAX; folded zero-padded to SAMPLE_PY_ID_MAX, as the program does) and the
 * qualname's length and hash words, which count as 0 when the block has its co_version at
 * ver_at (sample_py_versioned). */
static inline __u64 sample_py_ident(const void *block, __u32 len, __u32 ver_at, __u64 qual_length,
                                    __u64 qual_hash)
{
    __u64 h = 0, w;

    if (sample_py_versioned(block, ver_at))
        qual_length = qual_hash = 0;

    for (__u32 i = 0; i + 8 <= SAMPLE_PY_ID_MAX; i += 8) {
        w = 0;
        if (i + 8 <= len)
            memcpy(&w, (const __u8 *)block + i, 8);
        h = sample_py_mix(h, w);
    }
    h = sample_py_mix(h, qual_length);
    return sample_py_ident_end(sample_py_mix(h, qual_hash));
}

/* The bytes a record's lengths say it holds; a reader checks them against the record's size
 * before it looks past the header. */
static inline size_t sample_event_len(const struct sample_event *ev)
{
    return sizeof(*ev) + (size_t)ev->stack_len + (size_t)ev->py_count * sizeof(struct sample_pyframe) +
           (size_t)ev->kstack_len + (size_t)ev->ustack_len;
}

/* The kernel stack, after the copy and the Python frames (a writer sets those lengths first). */
static inline __u64 *sample_kstack(const struct sample_event *ev)
{
    return (__u64 *)(ev->stack + ev->stack_len + (size_t)ev->py_count * sizeof(struct sample_pyframe));
}

/* The user frame-pointer chain, after the kernel stack. */
static inline __u64 *sample_ustack(const struct sample_event *ev)
{
    return sample_kstack(ev) + ev->kstack_len / 8;
}
#endif

#define SAMPLE_PY_TAG_MASK  7ull
#define SAMPLE_PY_CODE_MASK (~7ull)
#define SAMPLE_PY_OWNER_MAX 4 /* highest owner any version uses (3.14: the C-stack shim) */
#define SAMPLE_PY_TAG_ENTRY 5 /* tags from here on: 3.11 entry frame, owner = tag - 5 */

/*
 * Where the reader finds a process's Python state (map "py_layouts", tgid -> this); filled by
 * user space from the runtime it attached to. One read per object: a slice of it.
 *
 *   thread state slice [ts_lo, ts_lo + ts_len) of the object holds native_thread_id and
 *     cframe (3.11, 3.12: then one 8-byte read of cframe + cf_current_frame) or current_frame
 *     (3.13 and later: ts_cframe == SAMPLE_PY_NONE)
 *   frame slice [f_lo, f_lo + f_len) holds code, previous, instr, owner and is_entry; the
 *     code word is and-ed with ~code_tag before it is checked (8-byte aligned, non-zero below
 *     owner 3)
 *   code identity block [co_id_lo, co_id_lo + co_id_len) of each frame's code object: folded
 *     word by word (sample_py_mix) into the frame's ident, then the length and hash words of its
 *     co_qualname str (pointers alone repeat: 3.11 frees a dead function's name and gives the
 *     next one the same address; an interned name's hash is its content), unless the block's
 *     co_version (at co_id_version) is set: no other code object of the interpreter had that
 *     number, so the block alone tells them apart (sample_py_versioned)
 *
 * Field offsets are bytes from the start of their slice (cf_current_frame: of the _PyCFrame);
 * slices are at most SAMPLE_PY_SLICE_MAX bytes and 8-byte fields lie 8-byte aligned in them.
 */
struct sample_pylayout {
    __u16 ts_lo, ts_len;
    __u16 ts_native_thread_id, ts_cframe, cf_current_frame, ts_current_frame;
    __u16 f_lo, f_len;
    __u16 f_code, f_previous, f_instr, f_owner;
    __u16 f_is_entry;     /* SAMPLE_PY_NONE: none (3.12+) */
    __u8 max_owner;       /* owners above this are not frames: 2 (3.11), 3 (3.12, 3.13, 3.15),
                             4 (3.14); never above SAMPLE_PY_OWNER_MAX */
    __u8 code_tag;        /* low bits of the code word to clear first: 0, or 3 for 3.14+'s tagged
                             _PyStackRef f_executable; never above 7 */
    __u16 co_id_lo;       /* identity block of a code object: [co_id_lo, co_id_lo + co_id_len), */
    __u16 co_id_len;      /* 8-aligned, 8 to SAMPLE_PY_ID_MAX bytes */
    __u16 co_id_qualname; /* co_qualname's offset in that block (8-aligned) */
    __u16 str_length;     /* offset of a str's length; its hash is the next word */
    __u16 co_id_version;  /* co_version's offset in the block (4-aligned); 0: none (never the
                             block's start, which co_firstlineno is in) */
};

/* What the perf_event program does with the GIL holder (rodata cfg_gil). */
enum sample_gil_mode {
    SAMPLE_GIL_OFF = 0, /* not checked: no GIL flag on any record */
    SAMPLE_GIL_MARK,    /* every sample flagged SAMPLE_F_GIL_HELD, _UNKNOWN or neither (top) */
    SAMPLE_GIL_ONLY,    /* samples of non-holders dropped in the kernel (--mode gil) */
};

/*
 * Where a Python process's GIL is (map "py_gil", tgid -> this; cfg_gil not off): its locked flag
 * (int) and last holder (PyThreadState *) at base + locked, base + holder, where base is runtime
 * (_PyRuntime, 3.11) when in_runtime, else the sampled thread's interpreter state, read from its
 * thread state at ts_interp (3.12+: each interpreter has its own GIL).
 */
struct sample_pygil {
    __u64 runtime;
    __u32 locked, holder;
    __u16 ts_interp;
    __u8 in_runtime;
    __u8 pad[5];
};

/*
 * The record of a target thread coming back onto a CPU (flags has SAMPLE_F_WAKE): the time it
 * was off since the SAMPLE_F_OFFCPU record it left with, which is the last record of that
 * thread before this one. Its first 24 bytes are laid out as a sample_event's, so a reader looks
 * at flags first.
 *
 *   0   4  pid     4  tid       8   4  cpu     12  4  flags (SAMPLE_F_WAKE | SAMPLE_F_PREEMPTED)
 *   16  8  time_ns (switch-in)  24  8  off_ns (switch-in minus switch-out)
 */
struct sample_wake {
    __u32 pid;
    __u32 tid;
    __u32 cpu;
    __u32 flags;
    __u64 time_ns;
    __u64 off_ns;
};

/* What user space taught the program of one thread (map `threads`, tid -> this); 0: not known. */
struct sample_thread {
    __u64 stack_end; /* highest readable address of its stack */
    __u64 tstate;    /* its PyThreadState */
    __u64 py_floor;  /* the kernel's: the page its frame windows start at the lowest (a window
                        from below it was refused: a data-stack chunk's mapping starts there) */
};

/*
 * The kernel's own struct offsets the programs read (bytes), found by the loader in the running
 * kernel's BTF (user/capture/kbtf.h) and set as constants before the load, in place of CO-RE
 * relocations: libbpf would read and index the whole BTF for them at every start. The programs
 * read these fields with bpf_probe_read_kernel only; nothing in them depends on the layout of
 * the kernel they were compiled against.
 */
struct sample_koff {
    __u32 task_mm;             /* task_struct.mm */
    __u32 task_group_leader;   /* task_struct.group_leader */
    __u32 task_start_boottime; /* task_struct.start_boottime (u64 ns) */
    __u32 task_pid;            /* task_struct.pid (pid_t) */
    __u32 task_tgid;           /* task_struct.tgid (pid_t) */
    __u32 task_thread_pid;     /* task_struct.thread_pid */
    __u32 task_sum_exec;       /* task_struct.se.sum_exec_runtime (u64 ns) */
    __u32 task_prev_sum_exec;  /* task_struct.se.prev_sum_exec_runtime (u64 ns) */
    __u32 mm_start_stack;      /* mm_struct.start_stack */
    __u32 pid_level;           /* struct pid.level (unsigned int) */
    __u32 pid_numbers;         /* struct pid.numbers[] (struct upid) */
    __u32 upid_size;           /* sizeof(struct upid) */
    __u32 upid_nr;             /* struct upid.nr (int) */
};

#define SAMPLE_HDR_SIZE 136
_Static_assert(sizeof(struct sample_pyframe) == 24, "sample_pyframe layout");
_Static_assert(sizeof(struct sample_pylayout) == 38, "sample_pylayout layout");
_Static_assert(SAMPLE_PY_ID_MAX % 8 == 0 && SAMPLE_PY_ID_MAX <= SAMPLE_PY_SLICE_MAX,
               "identity block fits the slice");
_Static_assert(SAMPLE_PY_OWNER_MAX < SAMPLE_PY_TAG_ENTRY && SAMPLE_PY_TAG_ENTRY + 2 <= SAMPLE_PY_TAG_MASK,
               "every owner and every 3.11 entry frame has its own tag");
_Static_assert(sizeof(struct sample_pygil) == 24, "sample_pygil layout");
_Static_assert(sizeof(struct sample_wake) == 32, "sample_wake layout");
_Static_assert(sizeof(struct sample_regs) == 72, "sample_regs layout");
_Static_assert(sizeof(struct sample_event) == SAMPLE_HDR_SIZE, "sample_event layout");

#endif
