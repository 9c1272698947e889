/*
 * framecache — address → profile frame index, for the collector's hot path.
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
 * change, so the values need no other invalidation. Direct-mapped: a collision replaces the older
 * entry, and the address is symbolised again (slower, never wrong). The table starts small (a
 * target with --children may be one of thousands of short processes) and doubles, up to
 * 1 << FCACHE_MAX_BITS slots, once collisions have replaced a quarter as many entries as it
 * has slots.
 */
#ifndef PYEBPF_FRAMECACHE_H
#define PYEBPF_FRAMECACHE_H

#include <stdbool.h>
#include <stdint.h>

#define FCACHE_MIN_BITS 8  /* 256 slots, 4 KiB */
#define FCACHE_MAX_BITS 14 /* 16384 slots, 256 KiB: the return addresses busy programs run through */

/* Flags stored with a frame (besides the kind of address). */
#define FCACHE_UNKNOWN 1u /* the frame names no symbol (counted as unknown on every use) */

struct fcache_slot {
    uint64_t addr;
    uint32_t frame;
    uint32_t tag; /* 0: empty; else 1 | leaf << 1 | flags << 2 */
};

struct fcache {
    struct fcache_slot *slots; /* NULL until the first fcache_put */
    uint64_t gen;              /* generation of every entry */
    unsigned bits;             /* 1 << bits slots (0 before the first fcache_put) */
    uint32_t replaced;         /* live entries replaced by collisions since the last growth */
    uint64_t hits, misses, flushes;
};

/* Frees the slots; the struct may be reused (it is then empty, as when zeroed). */
void fcache_free(struct fcache *fc);

/* Empties the cache when `gen` is not its generation (fcache_get and fcache_put call it). */
void fcache_set_gen(struct fcache *fc, uint64_t gen);

/* The slot of (addr, leaf) in a table of 1 << bits: every bit of the address mixed into the top
 * ones, so two addresses that collide in one size are unlikely to collide in the next. */
static inline uint32_t fcache_slot_of(uint64_t addr, bool leaf, unsigned bits)
{
    uint64_t h = ((addr << 1) | leaf) * 0x9e3779b97f4a7c15ull;

    h ^= h >> 32;
    return (uint32_t)((h * 0xd6e8feb86659fd93ull) >> (64 - bits));
}

/* The frame of (addr, leaf) at generation `gen`: true with *frame and *flags, or false (counted
 * as a miss). A generation other than the cache's empties it first. Inline: it runs once per
 * frame of every sample. */
static inline bool fcache_get(struct fcache *fc, uint64_t gen, uint64_t addr, bool leaf, uint32_t *frame,
                              unsigned *flags)
{
    const struct fcache_slot *s;

    if (fc->gen != gen)
        fcache_set_gen(fc, gen);
    if (fc->slots) {
        s = &fc->slots[fcache_slot_of(addr, leaf, fc->bits)];
        if (s->addr == addr && (s->tag & 3u) == (1u | (uint32_t)leaf << 1)) {
            *frame = s->frame;
            *flags = s->tag >> 2;
            fc->hits++;
            return true;
        }
    }
    fc->misses++;
    return false;
}

/* Remembers (addr, leaf) → frame for generation `gen` (emptying the cache when `gen` differs).
 * Returns 0 or -ENOMEM (then nothing is cached; lookups keep missing). */
int fcache_put(struct fcache *fc, uint64_t gen, uint64_t addr, bool leaf, uint32_t frame, unsigned flags);

#endif
