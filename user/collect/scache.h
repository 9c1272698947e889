/*
 * scache — whole samples the collector has built before, for its hot path.
 *
 * A CPU-bound program runs through a few hundred distinct stacks, again and again. Once a record
 * is unwound, what remains (naming each return address, naming each Python frame, merging the
 * two) gives the same frames every time the same stack comes back, provided it was named for
 * good. The collector keeps one cache per target process:
 *
 *     (the leaf, the return addresses after it, Python chain as the kernel captured it, flags)
 *         →  the user-space frames of the sample, root first, and what naming them counted
 *
 * valid for one generation of what the addresses mean (proc_generation), like fcache: another
 * generation empties it. The leaf is its frame once the frame cache holds one for it (collect.c):
 * a thread spinning in a function is sampled at dozens of addresses in it, each its own key
 * otherwise (200 threads at 1 kHz: 6,735 keys for 10,897 samples by address, 2,563 by the leaf's
 * frame). Only stacks whose every frame was named for good go in: every native answer settled
 * (the frame cache keeps it), no merge error, every Python frame from the entry filled for its
 * capture's identity (pycode_final), and only the second time they are built (a slot remembers
 * the hash of the last stack offered to it once): a stack met once costs no allocation. Keys are
 * compared whole, never by their hash alone. Direct-mapped: a stack that hashes to an occupied
 * slot takes it, and the one it replaced is built the long way the next time it comes (slower,
 * never wrong).
 */
#ifndef PYEBPF_SCACHE_H
#define PYEBPF_SCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/pystack_types.h"

#define SCACHE_BITS 12 /* 4096 stacks */

/* What a sample's key holds. */
struct scache_key {
    uint64_t leaf;       /* the leaf's frame, or its address (the caller's flags say which; 0: none) */
    const uint64_t *ips; /* the native return addresses after the leaf, innermost first */
    size_t nips;
    const struct pystack_raw *py; /* the chain as captured, leaf first (NULL: none) */
    size_t npy;
    unsigned flags; /* whatever else decided the frames (the caller's bits) */
};

/* What a sample's key gives: its frames and what building them counted. */
struct scache_val {
    const uint32_t *frames; /* root first */
    size_t nframes;
    uint32_t py_frames; /* Python frames among them */
    uint32_t unknown;   /* native frames among them with no symbol (unknown_frames) */
    bool truncated;     /* the root side is missing: [truncated] goes first */
    bool merged;        /* native and Python frames were merged (merge.h's `merged`) */
};

struct scache_ent;

struct scache {
    struct scache_ent **slots; /* 1 << SCACHE_BITS; NULL until the first scache_put */
    uint64_t *seen;            /* per slot, the hash of the last stack offered once */
    uint64_t gen;
    uint64_t hits, misses, flushes;
};

void scache_free(struct scache *sc);

/* The hash of a key (scache_get and scache_put take it, so that it is computed once). */
uint64_t scache_hash(const struct scache_key *k);

/* What was remembered for key k at generation `gen`: true with *v (its frames valid until the
 * next scache_put or scache_free), or false (a miss). */
bool scache_get(struct scache *sc, uint64_t gen, const struct scache_key *k, uint64_t hash,
                struct scache_val *v);

/* Remembers k → *v (copied) if k was offered before (see above). 0, or -ENOMEM (then it is
 * not remembered). */
int scache_put(struct scache *sc, uint64_t gen, const struct scache_key *k, uint64_t hash,
               const struct scache_val *v);

#endif
