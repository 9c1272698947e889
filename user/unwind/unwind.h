/*
 * unwind — native unwinder over a copy of the user stack: DWARF CFI rows (cached per return
 * address) where a module has them, frame pointers elsewhere. No syscalls and no allocation per
 * call; the caller supplies a `find` callback that maps an address to its module's CFI.
 */
#ifndef PYEBPF_UNWIND_H
#define PYEBPF_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/cfi_read.h"

/* User registers at the sample (x86-64 names; aarch64 maps x29 to bp, x30 to lr). */
struct unwind_regs {
    uint64_t ip, sp, bp;
    uint64_t bx, r12, r13, r14, r15; /* callee-saved, for CFI that restores them */
    uint64_t lr;                     /* aarch64 only */
};

enum unwind_mode { UNWIND_AUTO = 0, UNWIND_FP, UNWIND_DWARF };

/* Why an unwind stopped early (bit set in *stop). */
#define UNWIND_STOP_NO_CFI   (1u << 0) /* no CFI covers an address */
#define UNWIND_STOP_STACK    (1u << 1) /* needed a stack word beyond the copy */
#define UNWIND_STOP_BAD      (1u << 2) /* CFA did not grow, or unmapped return address */
#define UNWIND_STOP_MAXDEPTH (1u << 3)

/* Module of ip: 0 with *cfi (NULL when the module has no CFI) and *bias (runtime - link-time
 * address), or -ENOENT when ip is in no executable mapping. */
typedef int (*unwind_find_fn)(void *arg, uint64_t ip, const struct cfi_read_table **cfi, uint64_t *bias);

struct unwind_stats {
    uint64_t unwinds, frames;
    uint64_t row_hits, row_misses; /* CFI row cache */
    uint64_t fp_steps, dwarf_steps;
    uint64_t memo_hits; /* walks answered from a remembered one */
};

struct unwind_cache;
/* A direct-mapped cache of 2^bits decoded rows keyed by (table, link-time pc). Tables must
 * stay alive (and unique) as long as the cache is used, or call unwind_cache_clear. */
int unwind_cache_new(struct unwind_cache **out, unsigned bits);
void unwind_cache_clear(struct unwind_cache *c);
/* Forgets remembered walks (rows stay): find() may answer otherwise for some address now. */
void unwind_cache_forget(struct unwind_cache *c);
void unwind_cache_free(struct unwind_cache *c);
const struct unwind_stats *unwind_cache_stats(const struct unwind_cache *c);

/* Same contract as proc_unwind (symbols/proc.h). */
int unwind_stack(struct unwind_cache *c, unwind_find_fn find, void *arg, enum unwind_mode mode,
                 const struct unwind_regs *regs, const uint8_t *stack, size_t stack_len, uint64_t stack_addr,
                 uint64_t *ips, size_t max, unsigned *stop);

#endif
