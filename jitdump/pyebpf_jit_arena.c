/*
 * Trampoline arena: chunks of identical frame-pointer trampolines (see pyebpf_jit_arena.h).
 *
 *   chunk (CHUNK_SIZE bytes, read+execute once filled)
 *   +-----------+------+-----------+------+-----------+------+----
 *   | trampoline| int3 | trampoline| int3 | trampoline| int3 | ...
 *   +-----------+------+-----------+------+-----------+------+----
 *   |<------ stride --->|
 *
 * The stride leaves room after each trampoline for perf's synthesised object (code padded to 8
 * plus the unwinding data) so two of them never overlap.
 */
#include "pyebpf_jit_arena.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CHUNK_SIZE (128u * 1024u)

struct tramp_chunk {
    struct tramp_chunk *next;
    uint8_t *base;
    size_t stride;
    size_t nslots;
    size_t used; /* slots handed out at least once */
    uint64_t *tags;
};

#if defined(__x86_64__)
/* endbr64 (a no-op without CET, required with IBT); push %rbp; mov %rsp,%rbp; call *%rcx
 * (the 4th argument: the evaluator); pop %rbp; ret. */
static const uint8_t tramp_code[] = {
    0xf3, 0x0f, 0x1e, 0xfa, /* endbr64 */
    0x55,                   /* push %rbp */
    0x48, 0x89, 0xe5,       /* mov %rsp,%rbp */
    0xff, 0xd1,             /* call *%rcx */
    0x5d,                   /* pop %rbp */
    0xc3,                   /* ret */
};
const struct tramp_layout tramp_layout = {
    .size = sizeof(tramp_code), .push_end = 5, .setup_end = 8, .pop_end = 11};
static const uint8_t tramp_fill = 0xcc; /* int3 */
#elif defined(__aarch64__)
/* stp x29, x30, [sp, #-16]!; mov x29, sp; blr x3; ldp x29, x30, [sp], #16; ret
 * (little-endian words). */
static const uint8_t tramp_code[] = {
    0xfd, 0x7b, 0xbf, 0xa9, /* stp x29, x30, [sp, #-16]! */
    0xfd, 0x03, 0x00, 0x91, /* mov x29, sp */
    0x60, 0x00, 0x3f, 0xd6, /* blr x3 */
    0xfd, 0x7b, 0xc1, 0xa8, /* ldp x29, x30, [sp], #16 */
    0xc0, 0x03, 0x5f, 0xd6, /* ret */
};
const struct tramp_layout tramp_layout = {
    .size = sizeof(tramp_code), .push_end = 4, .setup_end = 8, .pop_end = 16};
static const uint8_t tramp_fill = 0x00; /* udf #0 when read as words */
#else
#error "pyebpf_jit trampolines exist for x86-64 and aarch64 only"
#endif

void tramp_arena_set_stride(struct tramp_arena *a, size_t stride)
{
    if (stride < tramp_layout.size)
        stride = tramp_layout.size;
    stride = (stride + 15) & ~(size_t)15;
    if (stride > a->stride)
        a->nfree = 0; /* their neighbours are too close for the new sinks: leave them unused */
    a->stride = stride;
}

static int chunk_new(struct tramp_arena *a, struct tramp_chunk **out)
{
    struct tramp_chunk *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->stride = a->stride ? a->stride : 16;
    c->nslots = CHUNK_SIZE / c->stride;
    c->tags = calloc(c->nslots, sizeof(*c->tags));
    void *p = mmap(NULL, CHUNK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!c->tags || p == MAP_FAILED) {
        free(c->tags);
        free(c);
        return -ENOMEM;
    }
    c->base = p;
    memset(c->base, tramp_fill, CHUNK_SIZE);
    for (size_t i = 0; i < c->nslots; i++)
        memcpy(c->base + i * c->stride, tramp_code, sizeof(tramp_code));
    __builtin___clear_cache((char *)c->base, (char *)c->base + CHUNK_SIZE);
    if (mprotect(c->base, CHUNK_SIZE, PROT_READ | PROT_EXEC) != 0) {
        int err = -errno;
        if (err == -EACCES || err == -EPERM)
            a->error = err;
        munmap(c->base, CHUNK_SIZE);
        free(c->tags);
        free(c);
        return err;
    }
    c->next = a->chunks;
    a->chunks = c;
    a->nchunks++;
    *out = c;
    return 0;
}

int tramp_arena_get(struct tramp_arena *a, void **out, int *reused)
{
    if (a->nfree > 0) {
        *out = a->free_slots[--a->nfree];
        *reused = 1;
        return 0;
    }
    if (a->error)
        return a->error;
    struct tramp_chunk *c = a->chunks;
    if (!c || c->used == c->nslots || c->stride != (a->stride ? a->stride : 16)) {
        int err = chunk_new(a, &c);
        if (err)
            return err;
    }
    *out = c->base + c->used * c->stride;
    c->used++;
    *reused = 0;
    return 0;
}

static struct tramp_chunk *chunk_of(const struct tramp_arena *a, const void *slot, size_t *idx)
{
    const uint8_t *p = slot;
    for (struct tramp_chunk *c = a->chunks; c; c = c->next) {
        if (p >= c->base && p < c->base + c->nslots * c->stride) {
            *idx = (size_t)(p - c->base) / c->stride;
            return c;
        }
    }
    return NULL;
}

int tramp_arena_put(struct tramp_arena *a, void *slot)
{
    size_t idx;
    struct tramp_chunk *c = chunk_of(a, slot, &idx);
    if (!c)
        return -EINVAL;
    if (c->stride < a->stride)
        return 0; /* too narrow for the current sinks: stays unused */
    if (a->nfree == a->cap_free) {
        size_t cap = a->cap_free ? 2 * a->cap_free : 64;
        void **n = realloc(a->free_slots, cap * sizeof(*n));
        if (!n)
            return -ENOMEM; /* the slot is simply not reused */
        a->free_slots = n;
        a->cap_free = cap;
    }
    a->free_slots[a->nfree++] = slot;
    return 0;
}

uint64_t *tramp_arena_tag(struct tramp_arena *a, void *slot)
{
    size_t idx;
    struct tramp_chunk *c = chunk_of(a, slot, &idx);
    return c ? &c->tags[idx] : NULL;
}

size_t tramp_arena_mapped(const struct tramp_arena *a)
{
    return a->nchunks * CHUNK_SIZE;
}
