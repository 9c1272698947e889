/*
 * Executable arena of frame-pointer trampolines for the pyebpf_jit extension.
 *
 * Every trampoline is the same few instructions; only the name published for its address
 * differs. So a chunk is filled with copies of the template once, while it is still writable,
 * and then flipped to read+execute for good (W^X: no page is ever writable and executable, and no
 * page is made writable again while a thread may run in it). Handing out a trampoline is then
 * a pointer bump, and a trampoline whose code object died can be handed out again without
 * rewriting a byte, so a thread still returning through it is never disturbed.
 *
 * Not thread-safe: the extension calls it with the GIL held.
 */
#ifndef PYEBPF_JIT_ARENA_H
#define PYEBPF_JIT_ARENA_H

#include <stddef.h>
#include <stdint.h>

/* The template's shape, as libpyjit's PYJIT_UNWIND_TRAMPOLINE wants it described. */
struct tramp_layout {
    uint32_t size;      /* bytes of code */
    uint32_t push_end;  /* offset just after `push %rbp` / `stp x29, x30, ...` */
    uint32_t setup_end; /* offset just after `mov %rsp,%rbp` / `mov x29, sp` */
    uint32_t pop_end;   /* offset just after `pop %rbp` / `ldp x29, x30, ...` */
};

/* A trampoline is called as tramp(tstate, frame, throwflag, evaluator): it calls
 * evaluator(tstate, frame, throwflag) inside its own frame and returns its result. */

struct tramp_chunk;

struct tramp_arena {
    struct tramp_chunk *chunks; /* newest first */
    size_t nchunks;
    void **free_slots; /* slots whose code object died, ready for reuse */
    size_t nfree, cap_free;
    size_t stride; /* spacing of new slots */
    int error;     /* mapping executable memory failed for good (e.g. EACCES under a W^X policy) */
};

extern const struct tramp_layout tramp_layout;

/* Sets the spacing of slots handed out from now on (>= tramp_layout.size, rounded to 16).
 * Freed slots with a smaller spacing are dropped from the free list. */
void tramp_arena_set_stride(struct tramp_arena *a, size_t stride);
/* A ready trampoline in *out; *reused is 1 if it was handed out before. Once the system has
 * refused executable memory (EACCES/EPERM), every later call fails at once with that error. */
int tramp_arena_get(struct tramp_arena *a, void **out, int *reused);
/* The slot's owner is gone; it may be handed out again (the code stays mapped). */
int tramp_arena_put(struct tramp_arena *a, void *slot);
/* Per-slot value kept beside the (read-only) code, e.g. the libpyjit region id. */
uint64_t *tramp_arena_tag(struct tramp_arena *a, void *slot);
/* Bytes mapped for trampolines. */
size_t tramp_arena_mapped(const struct tramp_arena *a);

#endif
