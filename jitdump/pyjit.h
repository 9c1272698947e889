/*
 * libpyjit — publish JIT code regions to gdb, perf and eBPF-based profilers.
 *
 * A JIT (CPython trampolines, a copy-and-patch executor, anything that writes machine code at run
 * time) calls pyjit_publish() for each region of code it makes. Every sink switched on learns of it:
 *
 *   PYJIT_SINK_GDB      an in-memory ELF image (NOBITS .text at the code address, .eh_frame,
 *                       .symtab) registered through gdb's JIT interface; regions are packed into
 *                       shared images so gdb stays fast with thousands of them.
 *   PYJIT_SINK_JITDUMP  jit-PID.dump for `perf record -k 1` + `perf inject --jit`, with
 *                       DEBUG_INFO (when lines are given) and UNWINDING_INFO records.
 *   PYJIT_SINK_PERFMAP  /tmp/perf-PID.map lines (names only, no unwinding).
 *
 * Typical use:
 *
 *   struct pyjit *jit;
 *   struct pyjit_options o = { .sinks = PYJIT_SINK_GDB | PYJIT_SINK_JITDUMP };
 *   if (pyjit_open(&jit, &o) == 0) {
 *       struct pyjit_region r = { .code = p, .size = n, .name = "py::f:/x.py",
 *                                 .unwind = PYJIT_UNWIND_TRAMPOLINE, .push_end = 1,
 *                                 .setup_end = 4, .pop_end = n - 1 };
 *       uint64_t id;
 *       pyjit_publish(jit, &r, &id);
 *       ...
 *       pyjit_retire(jit, id);        // before the code is freed
 *       pyjit_close(jit);
 *   }
 *
 * All functions are thread-safe. They return 0 or a negative errno. A sink that fails (disk full,
 * file refused) is switched off with one message on stderr; the host program is never stopped.
 */
#ifndef PYJIT_H
#define PYJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PYJIT_SINK_GDB     (1u << 0)
#define PYJIT_SINK_JITDUMP (1u << 1)
#define PYJIT_SINK_PERFMAP (1u << 2)
#define PYJIT_SINK_ALL     (PYJIT_SINK_GDB | PYJIT_SINK_JITDUMP | PYJIT_SINK_PERFMAP)

/* ELF e_machine values. */
enum pyjit_arch {
    PYJIT_ARCH_X86_64 = 62,
    PYJIT_ARCH_AARCH64 = 183,
};

/* How a debugger or profiler finds the caller of a frame inside the region. */
enum pyjit_unwind {
    /* A frame-pointer trampoline: x86-64 `[endbr64] push %rbp; mov %rsp,%rbp; ... pop %rbp; ret`,
     * aarch64 `stp x29, x30, [sp, #-16]!; mov x29, sp; ... ldp x29, x30, [sp], #16; ret`.
     * push_end/setup_end/pop_end give the offsets just after each of those instructions. */
    PYJIT_UNWIND_TRAMPOLINE = 0,
    /* The whole region runs with the frame pointer set up by its caller's convention:
     * CFA = fp + 16, return address at CFA - 8, saved fp at CFA - 16. */
    PYJIT_UNWIND_FP = 1,
    /* Caller-supplied DW_CFA_* instruction bytes for the region's FDE (the CIE is the
     * architecture's standard one: CFA = sp + 8 on x86-64, sp + 0 on aarch64). */
    PYJIT_UNWIND_CFI = 2,
};

/* One line-table entry: the code at `offset` bytes into the region belongs to `line`. */
struct pyjit_line {
    uint32_t offset;
    uint32_t line;
};

struct pyjit_region {
    const void *code; /* start address of the machine code */
    size_t size;      /* bytes of machine code */
    const char *name; /* symbol name shown by gdb and perf */
    enum pyjit_unwind unwind;
    uint32_t push_end, setup_end, pop_end; /* PYJIT_UNWIND_TRAMPOLINE; pop_end 0: never pops */
    const uint8_t *cfi;                    /* PYJIT_UNWIND_CFI */
    size_t cfi_size;
    const char *filename; /* optional source file for line info */
    const struct pyjit_line *lines;
    size_t nlines;
};

struct pyjit_options {
    unsigned sinks;          /* PYJIT_SINK_* */
    const char *jitdump_dir; /* NULL: $PYEBPF_JITDUMP_DIR, else the current directory */
    const char *perfmap_dir; /* NULL: /tmp (where perf looks) */
    unsigned gdb_batch;      /* regions per shared GDB image; 0: the default */
    enum pyjit_arch arch;    /* 0: the machine this library was built for */
};

struct pyjit;

int pyjit_open(struct pyjit **out, const struct pyjit_options *opt);
/* Publishes a region to every active sink; *id (may be NULL) names it for pyjit_retire. */
int pyjit_publish(struct pyjit *jit, const struct pyjit_region *r, uint64_t *id);
/* The region's code is about to go away: gdb forgets it, jitdump notes nothing (perf keeps
 * history by time). */
int pyjit_retire(struct pyjit *jit, uint64_t id);
/* Pushes out anything buffered (pending GDB images, file buffers). */
int pyjit_flush(struct pyjit *jit);
/* Sinks still switched on (a failing sink switches itself off). */
unsigned pyjit_sinks(const struct pyjit *jit);
/* Bytes a JIT should leave free after `code_size` bytes of code so perf's synthesised objects
 * (code padded to 8 plus the unwinding data) do not overlap the next region. */
size_t pyjit_region_stride(const struct pyjit *jit, size_t code_size);
/* Path of the jitdump file in use, or NULL. */
const char *pyjit_jitdump_path(const struct pyjit *jit);
/* Writes CLOSE records, unregisters every GDB image and frees everything. */
void pyjit_close(struct pyjit *jit);

#ifdef __cplusplus
}
#endif
#endif
