/*
 * proc — what the collector knows about one target process for native frames: its mappings
 * (/proc/PID/maps, refreshed when an address falls outside them), the ELF files behind them
 * (symbols and CFI from the collector's ELF cache, shared between processes), the JIT regions it
 * published (jitdump / perf map / the GDB JIT list), and a DWARF unwinder over a copy of the user
 * stack. One module in four files, one section of this header each:
 *
 *   proc_maps.c    the process: mappings and the ELF file behind each
 *   proc_jit.c     its JIT publications, re-read when due
 *   proc_sym.c     address -> name, with its own cache
 *   proc_unwind.c  the unwinder's CFI lookups (trampolines without CFI: tramp.c)
 *
 * Knows nothing of Python: where the target keeps a GDB JIT descriptor (CPython's, which the
 * collector finds when it attaches to the interpreter), the collector says so (proc_set_gdbjit).
 */
#ifndef PYEBPF_PROC_H
#define PYEBPF_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "unwind/unwind.h"

struct symres {
    const char *name;     /* symbol, or NULL when unknown */
    const char *module;   /* mapped file path (basename shown for unknowns), or NULL */
    uint64_t offset;      /* ip - symbol start, or file offset when the symbol is unknown */
    enum frame_kind kind; /* FRAME_NATIVE or FRAME_JIT */
};

struct proc;
struct elfsym_cache;

/* -- The process (proc_maps.c) ----------------------------------------------------------------- */

/* `elf`: the collector's ELF cache (elfsym_cache_new), shared by every proc it opens and freed by
 * the collector after them (files a proc still holds outlive it). */
int proc_open(struct proc **out, pid_t pid, struct elfsym_cache *elf);
void proc_close(struct proc *p);

/* Re-reads /proc/PID/maps and the target's JIT publications (jitdump, perf map, GDB JIT list).
 * -ESRCH, the mappings kept, once the process has exited (it has none left). */
int proc_refresh(struct proc *p);

/* The instant (CLOCK_MONOTONIC) the stack unwound and named next was taken at. An address outside
 * every mapping re-reads them at once when they were read before that instant (a library loaded
 * just before the sample holds it), not only once per rate limit. */
void proc_set_instant(struct proc *p, uint64_t at_ns);

struct proc_stats {
    uint64_t refreshes, files_opened, jit_regions, jit_reloads; /* reloads: unnamed JIT code, timed */
    uint64_t unwinds, frames, row_hits, row_misses, fp_steps, dwarf_steps, memo_hits;
    uint64_t sym_hits, sym_misses; /* proc_symbolize's cache */
};
void proc_get_stats(const struct proc *p, struct proc_stats *out);

/* -- JIT publications (proc_jit.c) ------------------------------------------------------------- */

/* The address of the target's GDB JIT descriptor (`__jit_debug_descriptor`; the collector has it
 * from the Python runtime it attached to), or 0 for none. The list it heads is read now and with
 * every re-read of the JIT publications; its regions win over the jitdump and perf map. Returns 1
 * when names changed, 0 when not, -ENOMEM. */
int proc_set_gdbjit(struct proc *p, uint64_t descriptor);

/* The timed re-check of the target's JIT publications, for the per-sample path: a JIT may retire
 * code and publish other code at the same address, and an address that already has a name never
 * makes proc look again by itself. Once the target has published in a file (jitdump, perf map) or
 * has a GDB JIT list, they are read again when `now` (CLOCK_MONOTONIC ns; a sample's timestamp
 * will do) is JIT_RECHECK_NS (200 ms) past the last read, or longer after a slow read
 * (proc_jit.c); unchanged files cost one stat each, and a change bumps proc_generation only when some
 * address is named differently. Not due: one comparison, no system call. Returns 1 when names
 * changed, 0 when nothing was due or changed, -ENOMEM. Counted in proc_stats.jit_reloads. */
int proc_recheck_jit(struct proc *p, uint64_t now);
/* The samples' re-check: proc_recheck_jit, or first the mappings read again when a frame named
 * since the last read lay in a mapping that is not executable (then due one rate limit after
 * that read: code mapped over a mapping that has gone). Same returns. */
int proc_recheck(struct proc *p, uint64_t now);

/* -- Symbols (proc_sym.c) ---------------------------------------------------------------------- */

/* Symbolises one user address. Strings stay valid until proc_close. Returns 0, or -ENOENT
 * when the address is in no mapping (out->module NULL). */
int proc_symbolize(struct proc *p, uint64_t ip, struct symres *out);
/* Same for a return address (ips[i], i > 0, from proc_unwind): looks up ret - 1, since the call
 * may be the last instruction of its function, except where ret starts a function that ret - 1
 * is not in (a signal trampoline such as __restore_rt, which handlers "return" to). */
int proc_symbolize_ret(struct proc *p, uint64_t ret, struct symres *out);

/* The text of a result: the symbol, else "module+0xOFF" (basename, file offset), else
 * "[unknown]" — an address never vanishes. Returns what snprintf returns. */
int proc_format(const struct symres *r, char *buf, size_t size);

/* Changes whenever the result of proc_symbolize* for some address may have changed (mappings
 * re-read and different, JIT publications re-read and different). Results proc caches itself
 * (a name, or anything but unnamed JIT code) stay right while it stays the same. */
uint64_t proc_generation(const struct proc *p);

/* -- Unwinding (proc_unwind.c) ----------------------------------------------------------------- */

/* Unwinds from `regs` using the stack copy `stack` (stack_len bytes starting at address
 * stack_addr, normally regs->sp). Writes return addresses leaf first (ips[0] = regs->ip) and
 * returns their number; *stop gets UNWIND_STOP_* bits. mode UNWIND_AUTO uses DWARF where a
 * module has CFI and frame pointers elsewhere. */
int proc_unwind(struct proc *p, enum unwind_mode mode, const struct unwind_regs *regs, const uint8_t *stack,
                size_t stack_len, uint64_t stack_addr, uint64_t *ips, size_t max, unsigned *stop);

#endif
