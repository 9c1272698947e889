/* pycode_table — the code table: entries keyed by (address, ident), their states (see
 * pycode_table.h). */
#include "python/pycode_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "python/linetable.h"
#include "sample.h"

void pycode_table_clear(struct code_entry *e)
{
    free(e->qualname);
    free(e->filename);
    free(e->hdr);
    linetable_free(&e->lt);
    e->qualname = e->filename = NULL;
    e->hdr = NULL;
    e->state = CODE_EMPTY;
    e->pqual_sample = 0;
    e->tlbc = 0;
    e->cstack_only = false;
}

static uint32_t code_hash(uint64_t addr, uint64_t ident)
{
    return (uint32_t)pycode_hash64(addr ^ ident * 0x9e3779b97f4a7c15ULL);
}

struct code_entry *pycode_table_find(const struct pycode *c, uint64_t addr, uint64_t ident)
{
    uint32_t mask = c->codes_cap - 1;
    for (uint32_t i = code_hash(addr, ident) & mask;; i = (i + 1) & mask) {
        if (c->codes[i].addr == addr && c->codes[i].ident == ident)
            return &c->codes[i];
        if (!c->codes[i].addr)
            return NULL;
    }
}

void pycode_table_reset(struct pycode *c)
{
    for (uint32_t i = 0; i < c->codes_cap; i++)
        if (c->codes[i].addr)
            pycode_table_clear(&c->codes[i]);
    memset(c->codes, 0, c->codes_cap * sizeof(*c->codes));
    c->ncodes = 0;
}

static int codes_grow(struct pycode *c)
{
    uint32_t ncap = c->codes_cap * 2;
    struct code_entry *n = calloc(ncap, sizeof(*n));
    if (!n)
        return -ENOMEM;
    for (uint32_t i = 0; i < c->codes_cap; i++) {
        if (!c->codes[i].addr)
            continue;
        uint32_t j = code_hash(c->codes[i].addr, c->codes[i].ident) & (ncap - 1);
        while (n[j].addr)
            j = (j + 1) & (ncap - 1);
        n[j] = c->codes[i];
    }
    free(c->codes);
    c->codes = n;
    c->codes_cap = ncap;
    return 0;
}

struct code_entry *pycode_table_get(struct pycode *c, uint64_t addr, uint64_t ident)
{
    struct code_entry *e = pycode_table_find(c, addr, ident);
    if (e)
        return e;
    if ((c->ncodes + 1) * 2 > c->codes_cap && codes_grow(c) != 0)
        return NULL;
    uint32_t mask = c->codes_cap - 1;
    uint32_t i = code_hash(addr, ident) & mask;
    while (c->codes[i].addr)
        i = (i + 1) & mask;
    c->codes[i] = (struct code_entry){.addr = addr, .ident = ident};
    c->ncodes++;
    c->st->code_objects = c->ncodes;
    return &c->codes[i];
}

/* The identity of a code object from its header and its qualname's length and hash words (`qs`,
 * read at the str's length): the fold the kernel computes (sample.h). */
uint64_t pycode_table_ident(const struct pycode *c, const uint8_t *hdr, const uint8_t *qs)
{
    const struct pyrt_layout *L = &c->rt->L;
    uint64_t length, hash;
    memcpy(&length, qs, 8);
    memcpy(&hash, qs + 8, 8);
    return sample_py_ident(hdr + (L->co_id_start - L->co_hdr_start), L->co_id_size, L->co_id_version, length,
                           hash);
}

/* The object an in-kernel frame ran was freed before it could be named (pycode.h). */
void pycode_table_freed(struct pycode *c, struct code_entry *e)
{
    e->gone = true;
    c->st->code_freed++;
}

/* Refuses a fill that raced the target (its object or its strings changed while they were
 * copied): a capture's entry then names its frames PYSTACK_FREED (the object it had is gone), a
 * remote one stays unfilled and is read afresh in a later sample. */
void pycode_table_raced(struct pycode *c, struct code_entry *e)
{
    c->st->code_fill_raced++;
    if (e->ident) {
        pycode_table_freed(c, e);
    } else {
        pycode_table_clear(e);
        e->bad = true; /* unnamed in this sample */
    }
}
