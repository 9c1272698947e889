/*
 * native — a record's native frames (see native.h).
 */
#include "collect/native.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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
int64_t native_user_frame(struct profile *prof, struct proc *p, struct fcache *fc, uint64_t ip, bool leaf,
                          struct native_stats *st)
{
    struct symres r = {0};
    char buf[512];
    int err = -ENOENT;
    unsigned flags = 0;
    uint32_t frame;
    int64_t f;

    if (p && fcache_get(fc, proc_generation(p), ip, leaf, &frame, &flags)) {
        if (flags & FCACHE_UNKNOWN)
            st->unknown_frames++;
        return frame;
    }
    if (p)
        err = leaf ? proc_symbolize(p, ip, &r) : proc_symbolize_ret(p, ip, &r);
    if (err == 0 && r.name) {
        f = profile_frame(prof, r.kind == FRAME_JIT ? FRAME_JIT : FRAME_NATIVE, r.name, r.module, 0);
    } else {
        st->unknown_frames++;
        flags = FCACHE_UNKNOWN;
        if (err == 0 && r.module) {
            proc_format(&r, buf, sizeof(buf));
            f = profile_frame(prof, FRAME_NATIVE, buf, r.module, 0);
        } else {
            f = profile_frame(prof, FRAME_OTHER, "[unknown]", NULL, 0);
        }
    }
    /* The generation read after the lookup: a re-read the lookup made is already in it. */
    if (f >= 0 && p && stable_answer(err, &r, ip, leaf))
        fcache_put(fc, proc_generation(p), ip, leaf, (uint32_t)f, flags); /* -ENOMEM: uncached */
    else
        st->unsettled_frames++;
    return f;
}

int64_t native_kernel_frame(struct profile *prof, struct ksyms *ks, struct fcache *kfc, uint64_t addr,
                            bool leaf, struct native_stats *st)
{
    uint64_t off = 0;
    const char *name;
    char buf[32];
    unsigned flags = 0;
    uint32_t frame;
    int64_t f;

    if (fcache_get(kfc, 0, addr, leaf, &frame, &flags)) {
        if (flags & FCACHE_UNKNOWN)
            st->unknown_frames++;
        return frame;
    }
    name = ksyms_lookup(ks, leaf ? addr : addr - 1, &off);
    if (name) {
        f = profile_frame(prof, FRAME_KERNEL, name, NULL, 0);
    } else {
        st->unknown_frames++;
        flags = FCACHE_UNKNOWN;
        snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
        f = profile_frame(prof, FRAME_KERNEL, buf, NULL, 0);
    }
    if (f >= 0)
        fcache_put(kfc, 0, addr, leaf, (uint32_t)f, flags);
    return f;
}

size_t native_unwind(struct proc *p, enum unwind_mode mode, const struct sample_event *ev, size_t len,
                     uint64_t *ips, size_t max, bool *truncated, struct native_stats *st)
{
    size_t n = 0;

    if (ev->flags & SAMPLE_F_NO_UREGS)
        return 0;
    if (p)
        proc_set_instant(p, ev->time_ns); /* for the unwinding and naming of its frames */
    if (mode == UNWIND_FP || !p) {
        n = ev->ustack_len / 8;
        if (n > SAMPLE_MAX_STACK_DEPTH)
            n = SAMPLE_MAX_STACK_DEPTH;
        memcpy(ips, sample_ustack(ev), n * 8);
        /* A chain that fills the kernel's buffer was cut there (or is exactly that deep). */
        if (n == SAMPLE_MAX_STACK_DEPTH) {
            st->unwind_truncated++;
            *truncated = true;
        }
        if (!n && ev->regs.ip) {
            ips[0] = ev->regs.ip;
            n = 1;
        }
        if (ev->flags & SAMPLE_F_USTACK_ERR)
            st->unwind_errors++;
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
        st->copy_errors++;
    st->stack_copy_bytes += copy;
    r = proc_unwind(p, mode, &regs, ev->stack, copy, ev->stack_addr, ips, max, &stop);
    if (r <= 0) {
        st->unwind_errors++;
        ips[0] = ev->regs.ip;
        return ev->regs.ip ? 1 : 0;
    }
    if (stop & (UNWIND_STOP_NO_CFI | UNWIND_STOP_STACK | UNWIND_STOP_BAD))
        st->unwind_errors++;
    if (stop & UNWIND_STOP_MAXDEPTH) {
        st->unwind_truncated++;
        *truncated = true;
    }
    return r;
}
