/*
 * scache — whole samples, keyed by their raw stacks (see scache.h).
 */
#include "collect/scache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One remembered sample: the key's words, then the frames. */
struct scache_ent {
    uint64_t hash, leaf;
    uint32_t nips, npy, flags, nframes, py_frames, unknown;
    bool truncated, merged;
    uint64_t words[]; /* nips addresses, npy × (code, instr, ident, owner | is_entry << 8), then
                       * the frames as uint32_t */
};

#define PY_WORDS 4

static size_t nslots(void)
{
    return (size_t)1 << SCACHE_BITS;
}

static void empty(struct scache *sc)
{
    if (!sc->slots)
        return;
    for (size_t i = 0; i < nslots(); i++) {
        free(sc->slots[i]);
        sc->slots[i] = NULL;
    }
}

void scache_free(struct scache *sc)
{
    empty(sc);
    free(sc->slots);
    free(sc->seen);
    sc->slots = NULL;
    sc->seen = NULL;
}

static void set_gen(struct scache *sc, uint64_t gen)
{
    if (sc->gen == gen)
        return;
    if (sc->slots)
        sc->flushes++;
    empty(sc);
    sc->gen = gen;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v * 0x9e3779b97f4a7c15ull;
    h = (h << 27 | h >> 37) * 0xd6e8feb86659fd93ull;
    return h;
}

static uint64_t py_tag(const struct pystack_raw *r)
{
    return (uint64_t)r->owner | (uint64_t)r->is_entry << 8;
}

/* One step of a lane: a multiply and a rotation. Four lanes run side by side and are mixed
 * fully at the end: one chain of mix over every word cost ~0.3 µs a sample, most of it each
 * word waiting on the previous word's multiplies. */
static uint64_t lane(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0x9e3779b97f4a7c15ull;
    return h << 31 | h >> 33;
}

uint64_t scache_hash(const struct scache_key *k)
{
    uint64_t a = k->nips << 32 | k->npy, b = k->flags, c = lane(0x243f6a8885a308d3ull, k->leaf),
             d = 0x13198a2e03707344ull;
    size_t i = 0;

    for (; i + 4 <= k->nips; i += 4) {
        a = lane(a, k->ips[i]);
        b = lane(b, k->ips[i + 1]);
        c = lane(c, k->ips[i + 2]);
        d = lane(d, k->ips[i + 3]);
    }
    for (; i < k->nips; i++)
        a = lane(a, k->ips[i]);
    for (i = 0; i < k->npy; i++) {
        b = lane(b, k->py[i].code);
        c = lane(c, k->py[i].instr ^ py_tag(&k->py[i]) << 56);
        d = lane(d, k->py[i].ident);
    }
    uint64_t h = mix(mix(mix(a, b), c), d);
    return h ^ h >> 29;
}

static bool same(const struct scache_ent *e, const struct scache_key *k, uint64_t hash)
{
    const uint64_t *w = e->words + e->nips;

    if (e->hash != hash || e->leaf != k->leaf || e->nips != k->nips || e->npy != k->npy ||
        e->flags != k->flags || memcmp(e->words, k->ips, k->nips * sizeof(*k->ips)))
        return false;
    for (size_t i = 0; i < k->npy; i++, w += PY_WORDS)
        if (w[0] != k->py[i].code || w[1] != k->py[i].instr || w[2] != k->py[i].ident ||
            w[3] != py_tag(&k->py[i]))
            return false;
    return true;
}

bool scache_get(struct scache *sc, uint64_t gen, const struct scache_key *k, uint64_t hash,
                struct scache_val *v)
{
    const struct scache_ent *e;

    set_gen(sc, gen);
    e = sc->slots ? sc->slots[hash & (nslots() - 1)] : NULL;
    if (!e || !same(e, k, hash)) {
        sc->misses++;
        return false;
    }
    sc->hits++;
    v->frames = (const uint32_t *)(e->words + e->nips + (size_t)e->npy * PY_WORDS);
    v->nframes = e->nframes;
    v->py_frames = e->py_frames;
    v->unknown = e->unknown;
    v->truncated = e->truncated;
    v->merged = e->merged;
    return true;
}

int scache_put(struct scache *sc, uint64_t gen, const struct scache_key *k, uint64_t hash,
               const struct scache_val *v)
{
    const size_t n = v->nframes;
    size_t words = k->nips + k->npy * PY_WORDS;
    struct scache_ent *e, **slot;

    set_gen(sc, gen);
    if (!sc->slots && (!(sc->slots = calloc(nslots(), sizeof(*sc->slots))) ||
                       !(sc->seen = calloc(nslots(), sizeof(*sc->seen))))) {
        free(sc->slots);
        sc->slots = NULL;
        return -ENOMEM;
    }
    /* A stack is kept the second time it is built: many are met once (200 threads, each at its
     * own line), and keeping each cost an allocation, fresh pages and an eviction. */
    if (sc->seen[hash & (nslots() - 1)] != hash) {
        sc->seen[hash & (nslots() - 1)] = hash;
        return 0;
    }
    if (n > UINT32_MAX || !(e = malloc(sizeof(*e) + words * sizeof(uint64_t) + n * sizeof(uint32_t))))
        return -ENOMEM;
    *e = (struct scache_ent){.hash = hash,
                             .leaf = k->leaf,
                             .nips = (uint32_t)k->nips,
                             .npy = (uint32_t)k->npy,
                             .flags = k->flags,
                             .nframes = (uint32_t)n,
                             .py_frames = v->py_frames,
                             .unknown = v->unknown,
                             .truncated = v->truncated,
                             .merged = v->merged};
    memcpy(e->words, k->ips, k->nips * sizeof(*k->ips));
    for (size_t i = 0; i < k->npy; i++) {
        uint64_t *w = e->words + k->nips + i * PY_WORDS;
        w[0] = k->py[i].code;
        w[1] = k->py[i].instr;
        w[2] = k->py[i].ident;
        w[3] = py_tag(&k->py[i]);
    }
    memcpy(e->words + words, v->frames, n * sizeof(uint32_t));
    slot = &sc->slots[hash & (nslots() - 1)];
    free(*slot);
    *slot = e;
    return 0;
}
