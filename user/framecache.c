/*
 * framecache — address → profile frame index, one generation at a time (see framecache.h).
 */
#include "framecache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NSLOTS (1u << FCACHE_BITS)

static uint32_t slot_of(uint64_t addr, bool leaf)
{
    return (uint32_t)((((addr << 1) | leaf) * 0x9e3779b97f4a7c15ull) >> (64 - FCACHE_BITS));
}

static uint32_t tag_of(bool leaf, unsigned flags)
{
    return 1u | (uint32_t)leaf << 1 | flags << 2;
}

/* Entries of another generation describe mappings or JIT regions that may be gone. */
static void set_gen(struct fcache *fc, uint64_t gen)
{
    if (fc->gen == gen)
        return;
    if (fc->slots) {
        memset(fc->slots, 0, NSLOTS * sizeof(*fc->slots));
        fc->flushes++;
    }
    fc->gen = gen;
}

void fcache_free(struct fcache *fc)
{
    free(fc->slots);
    memset(fc, 0, sizeof(*fc));
}

bool fcache_get(struct fcache *fc, uint64_t gen, uint64_t addr, bool leaf, uint32_t *frame, unsigned *flags)
{
    const struct fcache_slot *s;

    set_gen(fc, gen);
    if (fc->slots) {
        s = &fc->slots[slot_of(addr, leaf)];
        if (s->addr == addr && (s->tag & 3u) == tag_of(leaf, 0)) {
            *frame = s->frame;
            *flags = s->tag >> 2;
            fc->hits++;
            return true;
        }
    }
    fc->misses++;
    return false;
}

int fcache_put(struct fcache *fc, uint64_t gen, uint64_t addr, bool leaf, uint32_t frame, unsigned flags)
{
    struct fcache_slot *s;

    set_gen(fc, gen);
    if (!fc->slots && !(fc->slots = calloc(NSLOTS, sizeof(*fc->slots))))
        return -ENOMEM;
    s = &fc->slots[slot_of(addr, leaf)];
    s->addr = addr;
    s->frame = frame;
    s->tag = tag_of(leaf, flags);
    return 0;
}
