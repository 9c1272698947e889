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
 *   112     4     stack_len (bytes)       2     py_count    2  py_flags
 *   120     16    comm
 *   136     1016  kstack[127] kernel return addresses, leaf first
 *   1152    1016  ustack[127] user frame-pointer chain from bpf_get_stack, leaf first
 *   2168    ...   stack[stack_len]: copy of user memory [stack_addr, stack_addr + stack_len)
 *
 * The record is reserved at its largest size (header + configured copy size); user space reads
 * only the lengths given. py_count/py_flags are reserved for the Python frame chain that a later
 * version captures in the kernel: those frames will sit between ustack and stack, and
 * SAMPLE_HDR_SIZE will grow; readers use offsetof(struct sample_event, stack) and never a
 * literal.
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
#define SAMPLE_COMM_LEN           16
#define SAMPLE_MAX_TARGETS        1024  /* processes sampled at once */
#define SAMPLE_MAX_THREADS        65536 /* per-thread stack ends known */
#define SAMPLE_TICK_NS            10000000 /* USER_HZ 100: /proc/PID/stat start time unit */

/* flags */
#define SAMPLE_F_IN_KERNEL    (1u << 0) /* the sample landed in kernel mode */
#define SAMPLE_F_KSTACK_ERR   (1u << 1) /* bpf_get_stack (kernel) failed */
#define SAMPLE_F_USTACK_ERR   (1u << 2) /* bpf_get_stack (user) failed */
#define SAMPLE_F_COPY_ERR     (1u << 3) /* no stack copy could be read */
#define SAMPLE_F_COPY_SHORT   (1u << 4) /* copy is shorter than asked (fallback size) */
#define SAMPLE_F_COPY_BOUNDED (1u << 5) /* copy bounded by a known stack end */
#define SAMPLE_F_NO_UREGS     (1u << 6) /* kernel thread or no user registers */

/* Per-CPU counters (array map "counters", index = enum value). */
enum sample_counter {
    SAMPLE_CNT_MATCHED = 0, /* samples of a target thread seen by the program */
    SAMPLE_CNT_LOST,        /* ring buffer full: record dropped */
    SAMPLE_CNT_COPY_ERR,    /* stack copy failed at every size */
    SAMPLE_CNT_COPY_RETRY,  /* a copy needed a smaller size */
    SAMPLE_CNT_REUSED,      /* a target's PID named another process (start time differs) */
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
    __u16 py_count; /* reserved: Python frames captured in the kernel (0 for now) */
    __u16 py_flags; /* reserved */
    char comm[SAMPLE_COMM_LEN];
    __u64 kstack[SAMPLE_MAX_STACK_DEPTH];
    __u64 ustack[SAMPLE_MAX_STACK_DEPTH];
    __u8 stack[];
};

#define SAMPLE_HDR_SIZE 2168
_Static_assert(sizeof(struct sample_regs) == 72, "sample_regs layout");
_Static_assert(sizeof(struct sample_event) == SAMPLE_HDR_SIZE, "sample_event layout");

#endif
