/*
 * fcache — address → profile frame index, for the collector's hot path.
 *
 * Return addresses repeat from sample to sample; symbolising one (proc) and interning the result
 * (profile_frame: hashing and comparing the symbol and module strings) costs far more than the
 * unwind step that found it. The collector keeps one cache per target process:
 *
 *     (address, leaf or return address)  →  frame index, flags
 *
 * valid for one generation of what the address means (proc_generation: mappings and JIT
 * publications as last read). A lookup with another generation empties the cache first, so an
 * entry never outlives the mappings or JIT regions it was made from. Profile frame indices never
 * change, so the values need no other invalidation. Four-way set-associative: a fifth address
 * in a full bucket pushes out the oldest one, which is then symbolised again (slower, never
 * wrong). The table starts small (a target with --children may be one of thousands of short
 * processes) and doubles, up to 1 << FCACHE_MAX_BITS buckets, once full buckets have pushed out
 * a quarter as many entries as it has slots.
 */
#ifndef PYEBPF_FCACHE_H
#define PYEBPF_FCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FCACHE_WAYS     4  /* slots per bucket: one 64-byte cache line */
#define FCACHE_MIN_BITS 6  /* 64 buckets, 256 slots, 4 KiB */
#define FCACHE_MAX_BITS 12 /* 4096 buckets, 16384 slots, 256 KiB: what busy programs run through */

/* Flags stored with a frame (besides the kind of address). */
#define FCACHE_UNKNOWN 1u /* the frame names no symbol (counted as unknown on every use) */

struct fcache_slot {
    uint64_t addr;
    uint32_t frame;
    uint32_t tag; /* 0: empty; else 1 | leaf << 1 | flags << 2 */
};
_Static_assert(sizeof(struct fcache_slot) * FCACHE_WAYS == 64, "one bucket, one cache line");

struct fcache {
    struct fcache_slot *slots; /* FCACHE_WAYS per bucket; NULL until the first fcache_put */
    uint64_t gen;              /* generation of every entry */
    unsigned bits;             /* 1 << bits buckets (0 before the first fcache_put) */
    uint32_t replaced;         /* live entries pushed out of full buckets since the last growth */
    uint64_t hits, misses, flushes;
};

/* Frees the slots; the struct may be reused (it is then empty, as when zeroed). */
void fcache_free(struct fcache *fc);

/* Empties the cache when `gen` is not its generation (fcache_get and fcache_put call it). */
void fcache_set_gen(struct fcache *fc, uint64_t gen);

/* The bucket of (addr, leaf) among 1 << bits: every bit of the address mixed into the top ones. */
static inline uint32_t fcache_bucket_of(uint64_t addr, bool leaf, unsigned bits)
{
    uint64_t h = ((addr << 1) | leaf) * 0x9e3779b97f4a7c15ull;

    h ^= h >> 32;
    return (uint32_t)((h * 0xd6e8feb86659fd93ull) >> (64 - bits));
}

/* The frame of (addr, leaf) at generation `gen` when the cache holds it, without counting or
 * emptying anything (false for another generation's cache). */
static inline bool fcache_find(const struct fcache *fc, uint64_t gen, uint64_t addr, bool leaf,
                               uint32_t *frame, unsigned *flags)
{
    const struct fcache_slot *s;
    uint32_t want = 1u | (uint32_t)leaf << 1;

    if (fc->gen != gen || !fc->slots)
        return false;
    s = &fc->slots[(size_t)fcache_bucket_of(addr, leaf, fc->bits) * FCACHE_WAYS];
    for (unsigned w = 0; w < FCACHE_WAYS; w++)
        if (s[w].addr == addr && (s[w].tag & 3u) == want) {
            *frame = s[w].frame;
            *flags = s[w].tag >> 2;
            return true;
        }
    return false;
}

/* The frame of (addr, leaf) at generation `gen`: true with *frame and *flags, or false (counted
 * as a miss). A generation other than the cache's empties it first. Inline: it runs once per
 * frame of every sample. */
static inline bool fcache_get(struct fcache *fc, uint64_t gen, uint64_t addr, bool leaf, uint32_t *frame,
                              unsigned *flags)
{
    if (fc->gen != gen)
        fcache_set_gen(fc, gen);
    if (fcache_find(fc, gen, addr, leaf, frame, flags)) {
        fc->hits++;
        return true;
    }
    fc->misses++;
    return false;
}

/* Remembers (addr, leaf) → frame for generation `gen` (emptying the cache when `gen` differs).
 * Returns 0 or -ENOMEM (then nothing is cached; lookups keep missing). */
int fcache_put(struct fcache *fc, uint64_t gen, uint64_t addr, bool leaf, uint32_t frame, unsigned flags);

#endif
