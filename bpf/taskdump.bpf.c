// SPDX-License-Identifier: GPL-2.0
/*
 * taskdump.bpf.c — the in-kernel snapshot of `pyebpf-sample dump`: a sleepable task iterator that,
 * run once, visits every thread of the target and writes for each, at that visit, its state and
 * the record the sampler would write for a sample of it (layouts in taskdump.h and sample.h).
 *
 * A thread that is not on a CPU keeps its user registers in the pt_regs its last kernel entry
 * saved (a system call, or the interrupt that preempted it) and its stack does not move until it
 * runs again; so registers, stack copy and kernel stack taken here are one consistent picture of
 * it without stopping it. Sleepable (iter.s): bpf_copy_from_user_task reads another process's
 * memory and may fault pages in.
 *
 * A thread found on a CPU is written with DUMP_TASK_ON_CPU and no registers: what its CPU holds
 * is not in memory. User space stops it, and any other runnable thread (whose Python frames,
 * read after the pass, would be of a later instant than its registers), with ptrace.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "taskdump.h"
#include "uregs.h"

char LICENSE[] SEC("license") = "GPL";

/* Configuration, set by the loader between open and load. */
const volatile __u32 cfg_tgid = 0;                               /* the target (its threads only) */
const volatile __u32 cfg_stack_copy = SAMPLE_STACK_COPY_DEFAULT; /* bytes, at most ..._MAX */
const volatile bool cfg_kernel_stack = true;

/* One record under construction: far beyond the BPF stack. The iterator visits one task at a
 * time and only one dump runs per loaded object, so one slot is enough. */
struct scratch {
    struct dump_task t;
    __u8 ev[SAMPLE_HDR_SIZE + SAMPLE_STACK_COPY_MAX + SAMPLE_STACK_BYTES]; /* sample_event, copy, kstack */
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct scratch);
} scratch SEC(".maps");

/* The top of the task's user stack from sp: the largest power-of-two size that reads (a read
 * that meets an unmapped page past the stack's top fails whole; one into a mapping that touches
 * it reads on, which the unwinder, stopping at the stack's end, never uses), down to the rest of
 * sp's page. */
static __always_inline __u32 copy_stack(struct sample_event *ev, struct task_struct *task)
{
    __u64 sp = ev->regs.sp;
    __u32 len = cfg_stack_copy;

    if (len > SAMPLE_STACK_COPY_MAX)
        len = SAMPLE_STACK_COPY_MAX;
    for (int i = 0; i < 8; i++) {
        if (len < SAMPLE_STACK_COPY_MIN)
            break;
        barrier_var(len);
        if (len <= SAMPLE_STACK_COPY_MAX && bpf_copy_from_user_task(ev->stack, len, (void *)sp, task, 0) == 0)
            return len;
        ev->flags |= SAMPLE_F_COPY_SHORT;
        len >>= 1;
    }
    len = 4096 - (sp & 4095);
    barrier_var(len);
    if (len <= SAMPLE_STACK_COPY_MAX && len <= cfg_stack_copy &&
        bpf_copy_from_user_task(ev->stack, len, (void *)sp, task, 0) == 0)
        return len;
    ev->flags |= SAMPLE_F_COPY_ERR;
    return 0;
}

SEC("iter.s/task")
int dump_task(struct bpf_iter__task *ctx)
{
    struct task_struct *task = ctx->task;
    struct seq_file *seq = ctx->meta->seq;
    __u32 zero = 0;
    struct sample_event *ev;
    struct scratch *s;
    long n;

    if (!task || task->tgid != cfg_tgid)
        return 0;
    s = bpf_map_lookup_elem(&scratch, &zero);
    if (!s)
        return 0;

    s->t.magic = DUMP_TASK_MAGIC;
    s->t.state = task->__state | task->exit_state;
    s->t.flags = task->on_cpu ? DUMP_TASK_ON_CPU : 0;
    s->t.time_ns = bpf_ktime_get_ns();
    s->t.switches = task->nvcsw + task->nivcsw;
    ev = (struct sample_event *)s->ev;
    ev->flags = 0;
    ev->kstack_len = ev->ustack_len = ev->stack_len = 0;
    ev->py_count = ev->py_flags = 0;
    ev->stack_addr = 0;
    __builtin_memset(&ev->regs, 0, sizeof(ev->regs));
    ev->pid = task->tgid;
    ev->tid = task->pid;
    ev->cpu = task->thread_info.cpu;
    ev->time_ns = s->t.time_ns;
    bpf_probe_read_kernel_str(ev->comm, sizeof(ev->comm), task->comm);

    if (!task->mm || (task->flags & 0x00200000 /* PF_KTHREAD */)) {
        s->t.flags |= DUMP_TASK_NO_USER;
        ev->flags |= SAMPLE_F_NO_UREGS;
    } else if (task->on_cpu) {
        ev->flags |= SAMPLE_F_NO_UREGS;
    } else {
        read_user_regs(&ev->regs, (struct pt_regs *)bpf_task_pt_regs(task));
        ev->stack_addr = ev->regs.sp;
        ev->stack_len = copy_stack(ev, task);
    }

    __u32 len = ev->stack_len;
    if (len > SAMPLE_STACK_COPY_MAX)
        len = SAMPLE_STACK_COPY_MAX;
    /* The kernel stack after the copy (sample.h). Only a waiting task's is read: a running one's
     * moves under the walker, and a runnable one's (its preemption) would be of another instant
     * than the ptrace stop user space reads it at. */
    if (cfg_kernel_stack && !task->on_cpu && task->__state != 0 /* TASK_RUNNING */) {
        barrier_var(len);
        n = bpf_get_task_stack(task, ev->stack + len, SAMPLE_STACK_BYTES, 0);
        if (n > 0 && n <= SAMPLE_STACK_BYTES) {
            ev->kstack_len = n;
            ev->flags |= SAMPLE_F_IN_KERNEL;
            len += n;
        } else if (n < 0) {
            ev->flags |= SAMPLE_F_KSTACK_ERR;
        }
    }
    s->t.ev_len = SAMPLE_HDR_SIZE + len;
    barrier_var(len);
    if (len <= SAMPLE_STACK_COPY_MAX + SAMPLE_STACK_BYTES)
        bpf_seq_write(seq, s, sizeof(s->t) + SAMPLE_HDR_SIZE + len);
    return 0;
}
