/*
 * fcache — address → profile frame index, one generation at a time (see fcache.h).
 */
#include "collect/fcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t nslots(unsigned bits)
{
    return ((size_t)1 << bits) * FCACHE_WAYS;
}

/* Entries of another generation describe mappings or JIT regions that may be gone. */
void fcache_set_gen(struct fcache *fc, uint64_t gen)
{
    if (fc->gen == gen)
        return;
    if (fc->slots) {
        memset(fc->slots, 0, nslots(fc->bits) * sizeof(*fc->slots));
        fc->flushes++;
    }
    fc->gen = gen;
}

void fcache_free(struct fcache *fc)
{
    free(fc->slots);
    memset(fc, 0, sizeof(*fc));
}

/* Stores an entry in its bucket, whose ways run from the newest entry to the oldest: over the
 * same key, else in front, pushing the others back into a free way or out of the last one
 * (returns true then). */
static bool insert(struct fcache_slot *bucket, const struct fcache_slot *e)
{
    unsigned k = 0;

    for (unsigned w = 0; w < FCACHE_WAYS; w++)
        if (bucket[w].tag && bucket[w].addr == e->addr && (bucket[w].tag & 3u) == (e->tag & 3u)) {
            bucket[w] = *e;
            return false;
        }
    while (k < FCACHE_WAYS - 1 && bucket[k].tag)
        k++;
    bool full = bucket[k].tag != 0;
    memmove(&bucket[1], &bucket[0], k * sizeof(*bucket));
    bucket[0] = *e;
    return full;
}

/* Doubles the buckets (or makes the first ones), keeping the entries. */
static int fcache_grow(struct fcache *fc, unsigned bits)
{
    struct fcache_slot *n = aligned_alloc(64, nslots(bits) * sizeof(*n));

    if (!n)
        return -ENOMEM;
    memset(n, 0, nslots(bits) * sizeof(*n));
    for (size_t i = 0; fc->slots && i < nslots(fc->bits); i++) {
        const struct fcache_slot *o = &fc->slots[i];

        if (o->tag)
            insert(&n[(size_t)fcache_bucket_of(o->addr, (o->tag >> 1) & 1u, bits) * FCACHE_WAYS], o);
    }
    free(fc->slots);
    fc->slots = n;
    fc->bits = bits;
    fc->replaced = 0;
    return 0;
}

int fcache_put(struct fcache *fc, uint64_t gen, uint64_t addr, bool leaf, uint32_t frame, unsigned flags)
{
    const struct fcache_slot e = {.addr = addr, .frame = frame, .tag = 1u | (uint32_t)leaf << 1 | flags << 2};

    fcache_set_gen(fc, gen);
    if (!fc->slots && fcache_grow(fc, FCACHE_MIN_BITS))
        return -ENOMEM;
    if (insert(&fc->slots[(size_t)fcache_bucket_of(addr, leaf, fc->bits) * FCACHE_WAYS], &e) &&
        ++fc->replaced >= nslots(fc->bits) / 4 && fc->bits < FCACHE_MAX_BITS && fcache_grow(fc, fc->bits + 1))
        fc->replaced = 0; /* out of memory: keep the table, try again later */
    return 0;
}
