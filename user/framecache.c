/*
 * framecache — address → profile frame index, one generation at a time (see framecache.h).
 */
#include "framecache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Entries of another generation describe mappings or JIT regions that may be gone. */
void fcache_set_gen(struct fcache *fc, uint64_t gen)
{
    if (fc->gen == gen)
        return;
    if (fc->slots) {
        memset(fc->slots, 0, ((size_t)1 << fc->bits) * sizeof(*fc->slots));
        fc->flushes++;
    }
    fc->gen = gen;
}

void fcache_free(struct fcache *fc)
{
    free(fc->slots);
    memset(fc, 0, sizeof(*fc));
}

/* Doubles the table, keeping its entries (those that collide in the new one: the later wins). */
static int grow(struct fcache *fc, unsigned bits)
{
    struct fcache_slot *n = calloc((size_t)1 << bits, sizeof(*n));

    if (!n)
        return -ENOMEM;
    for (size_t i = 0; fc->slots && i < ((size_t)1 << fc->bits); i++) {
        const struct fcache_slot *o = &fc->slots[i];

        if (o->tag)
            n[fcache_slot_of(o->addr, (o->tag >> 1) & 1u, bits)] = *o;
    }
    free(fc->slots);
    fc->slots = n;
    fc->bits = bits;
    fc->replaced = 0;
    return 0;
}

int fcache_put(struct fcache *fc, uint64_t gen, uint64_t addr, bool leaf, uint32_t frame, unsigned flags)
{
    struct fcache_slot *s;
    uint32_t tag = 1u | (uint32_t)leaf << 1 | flags << 2;

    fcache_set_gen(fc, gen);
    if (!fc->slots && grow(fc, FCACHE_MIN_BITS))
        return -ENOMEM;
    s = &fc->slots[fcache_slot_of(addr, leaf, fc->bits)];
    if (s->tag && (s->addr != addr || (s->tag & 3u) != (tag & 3u)) &&
        ++fc->replaced >= (1u << fc->bits) / 4 && fc->bits < FCACHE_MAX_BITS) {
        if (grow(fc, fc->bits + 1) == 0)
            s = &fc->slots[fcache_slot_of(addr, leaf, fc->bits)];
        fc->replaced = 0; /* out of memory: keep the table, try again later */
    }
    s->addr = addr;
    s->frame = frame;
    s->tag = tag;
    return 0;
}
