/*
 * native — the native side of one record: its return addresses (the kernel's frame-pointer
 * chain, or a DWARF unwind of the stack copy through proc) and each address as a profile frame,
 * answered from a frame cache once warm (fcache.h says when an answer may be kept).
 *
 *   record ──native_unwind──▶ ips[], leaf first ──native_user_frame──▶ frame   (per target)
 *   kernel stack ───────────────────────────────native_kernel_frame──▶ frame   (kallsyms)
 */
#ifndef PYEBPF_NATIVE_H
#define PYEBPF_NATIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/fcache.h"
#include "profile/profile.h"
#include "sample.h"
#include "symbols/ksyms.h"
#include "symbols/proc.h"

struct native_stats {
    uint64_t unwind_errors;    /* unwind stopped early (no CFI, stack copy too short, bad frame) */
    uint64_t unwind_truncated; /* hit the depth limit, or a full kernel FP chain */
    uint64_t copy_errors;      /* no stack copy in the record */
    uint64_t stack_copy_bytes; /* sum of copied stack bytes */
    uint64_t unknown_frames;   /* frames with no symbol */
    uint64_t unsettled_frames; /* frames whose answer may still change (the frame cache did not
                                  keep it): a sample holding one is built again next time */
};

/* Native return addresses of `ev` (len bytes), leaf first, into ips (at most max); their number.
 * *truncated set when a depth limit cut the chain. p NULL (process not readable) or mode
 * UNWIND_FP: the kernel's frame-pointer chain. */
size_t native_unwind(struct proc *p, enum unwind_mode mode, const struct sample_event *ev, size_t len,
                     uint64_t *ips, size_t max, bool *truncated, struct native_stats *st);

/* The frame of one user address (a return address unless leaf), interned in prof; p may be NULL
 * ([unknown]). proc re-reads the target's mappings and JIT publications itself (rate-limited)
 * when an address is new. */
int64_t native_user_frame(struct profile *prof, struct proc *p, struct fcache *fc, uint64_t ip, bool leaf,
                          struct native_stats *st);

/* The frame of one kernel address; kallsyms is read once, so an address's frame never changes. */
int64_t native_kernel_frame(struct profile *prof, struct ksyms *ks, struct fcache *kfc, uint64_t addr,
                            bool leaf, struct native_stats *st);

#endif
