/*
 * framecache — address → profile frame index, one generation at a time (see framecache.h).
 */
#include "framecache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NSLOTS (1u << FCACHE_BITS)

/* Entries of another generation describe mappings or JIT regions that may be gone. */
void fcache_set_gen(struct fcache *fc, uint64_t gen)
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

int fcache_put(struct fcache *fc, uint64_t gen, uint64_t addr, bool leaf, uint32_t frame, unsigned flags)
{
    struct fcache_slot *s;

    fcache_set_gen(fc, gen);
    if (!fc->slots && !(fc->slots = calloc(NSLOTS, sizeof(*fc->slots))))
        return -ENOMEM;
    s = &fc->slots[fcache_slot_of(addr, leaf)];
    s->addr = addr;
    s->frame = frame;
    s->tag = 1u | (uint32_t)leaf << 1 | flags << 2;
    return 0;
}
