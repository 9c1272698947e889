/*
 * pycode_table — pycode's state and its code table, under the two files that use them
 * (pycode_fetch.c: names and line tables fetched from the target into entries; pycode.c, above
 * it: validation against the target and symbolisation; see pycode.h). Nothing outside them
 * includes it. Calls run down that order only: pycode.c → pycode_fetch.c → pycode_table.c.
 */
#ifndef PYEBPF_PYCODE_TABLE_H
#define PYEBPF_PYCODE_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "capture/remote.h"
#include "python/linetable.h"
#include "profile/profile.h"
#include "python/pyrt.h"
#include "python/pystack_types.h"

enum code_state { CODE_EMPTY = 0, CODE_HEADER, CODE_FILLED };

/* An entry is keyed by (address, ident): ident 0 for frames read remotely (the header is read
 * again in every sample that uses it), the capture's ident for in-kernel frames (filled once from
 * a header that folds to it: the same object for as long as it lives, never re-read). */
struct code_entry {
    uint64_t addr;    /* 0: free slot */
    uint64_t ident;   /* 0, or the identity the entry was filled for */
    uint64_t checked; /* sample whose header read validated this entry */
    uint32_t id;      /* key for finished frames; new for every fill */
    uint64_t tlbc;    /* free-threaded: the per-thread bytecode copy last found to hold a frame's
                         instruction (0: none yet), tried before co_tlbc is read again */
    enum code_state state;
    bool bad;         /* header unreadable or not a code object in this sample */
    bool gone;        /* the header read in this sample folds to another ident: the object captured
                         was freed and the address reused before it could be named */
    bool cstack_only; /* the eval loop's own shim code (3.12: "<interpreter trampoline>", file
                         "<shim>"), which only an entry frame owned by the C stack runs */
    uint8_t qual[PYCODE_QUAL_SIZE];  /* its qualname's length and hash words when filled */
    uint8_t pqual[PYCODE_QUAL_SIZE]; /* before it is filled: those words, read with the header ... */
    uint64_t pqual_sample;           /* ... in the batch of this sample (0: not read) */
    int32_t firstlineno;
    char *qualname, *filename;
    struct linetable lt;
    uint8_t *hdr;
};

struct fin_entry {
    uint64_t key; /* id << 32 | (offset + 1); 0: free */
    uint32_t frame;
};

struct pycode {
    const struct pyrt *rt;
    struct remote *r;
    struct profile *prof;
    struct pystack_stats *st;
    uint64_t sample;
    uint32_t next_id;
    struct code_entry *codes;
    uint32_t ncodes, codes_cap; /* cap: power of two */
    struct fin_entry *fin;
    uint32_t nfin, fin_cap;
    struct code_entry **ents; /* per sample: frame i's entry (pycode.c) */
    size_t ents_cap;
    int64_t unknown_frame; /* "<unreadable>" frame, interned once */
    int64_t freed_frame;   /* PYSTACK_FREED */
    bool final;            /* the last pycode_symbolize named every frame for good (pycode.h) */
    bool root_unread;      /* ... its root-most frame was "<unreadable>" */
};

static inline uint64_t hdr_u64(const struct pycode *c, const uint8_t *hdr, uint32_t off)
{
    uint64_t v;
    memcpy(&v, hdr + (off - c->rt->L.co_hdr_start), 8);
    return v;
}

/* Two headers of one object, its reference count aside. */
static inline bool hdr_same(const struct pycode *c, const uint8_t *a, const uint8_t *b)
{
    const uint32_t rc = c->rt->L.co_hdr_rc;
    return memcmp(a + rc, b + rc, c->rt->L.co_hdr_size - rc) == 0;
}

/* The header is of an allocated object, as far as its reference count tells. pymalloc frees a
 * block by writing its free list's link (an address, or NULL at the list's end) over the first
 * word and leaves the rest, ob_type included: a freed code object keeps its header, and the
 * strings it points to are soon other objects' (3.11: "__builtins__"). A live count is not 0
 * (its low 32 bits) and leaves bits 32-47 clear (3.11-3.13: its high half; 3.14+: ob_overflow,
 * used past 2^32 references), where an address of the heap or of an arena has them set. */
static inline bool hdr_live(const struct pycode *c, const uint8_t *hdr)
{
    uint64_t rc;
    if (!c->rt->L.co_hdr_rc)
        return true;
    memcpy(&rc, hdr, 8);
    return (uint32_t)rc != 0 && !(rc >> 32 & 0xffff);
}

#define CODE_CACHE_MAX (1u << 18) /* entries before the table starts over */

static inline uint64_t pycode_hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* pycode_table.c */
struct code_entry *pycode_table_find(const struct pycode *c, uint64_t addr, uint64_t ident);
/* The entry of (addr, ident), inserted empty when new (NULL: no memory). May move the table. */
struct code_entry *pycode_table_get(struct pycode *c, uint64_t addr, uint64_t ident);
void pycode_table_clear(struct code_entry *e);
void pycode_table_reset(struct pycode *c);
uint64_t pycode_table_ident(const struct pycode *c, const uint8_t *hdr, const uint8_t *qs);
void pycode_table_freed(struct pycode *c, struct code_entry *e);
void pycode_table_raced(struct pycode *c, struct code_entry *e);

/* pycode_fetch.c */
void pycode_fetch(struct pycode *c, struct code_entry **todo, size_t n);

#endif
