/*
 * uregs — the user registers a record carries (struct sample_regs, sample.h) from the pt_regs the
 * kernel saved at the task's last entry from user mode; shared by the sampler's programs and the
 * dump's task iterator, so both records unwind the same way. BPF programs only (vmlinux.h first).
 */
#ifndef PYEBPF_UREGS_H
#define PYEBPF_UREGS_H

static __always_inline void read_user_regs(struct sample_regs *out, struct pt_regs *r)
{
#if defined(__TARGET_ARCH_x86)
    out->ip = r->ip;
    out->sp = r->sp;
    out->bp = r->bp;
    out->bx = r->bx;
    out->r12 = r->r12;
    out->r13 = r->r13;
    out->r14 = r->r14;
    out->r15 = r->r15;
    out->lr = 0;
#elif defined(__TARGET_ARCH_arm64)
    out->ip = r->pc;
    out->sp = r->sp;
    out->bp = r->regs[29];
    out->bx = r->regs[19];
    out->r12 = r->regs[20];
    out->r13 = r->regs[21];
    out->r14 = r->regs[22];
    out->r15 = r->regs[23];
    out->lr = r->regs[30];
#endif
}

#endif
