/*
 * strpool — FNV-1a hash, linear probing, table kept at most half full.
 */
#include "symbols/strpool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    while (*s)
        h = (h ^ (uint8_t)*s++) * 0x100000001b3ull;
    return h;
}

static int grow(struct strpool *p)
{
    size_t cap = p->cap ? p->cap * 2 : 256;
    char **slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t i = 0; i < p->cap; i++) {
        if (!p->slots[i])
            continue;
        size_t j = hash(p->slots[i]) & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = p->slots[i];
    }
    free(p->slots);
    p->slots = slots;
    p->cap = cap;
    return 0;
}

const char *strpool_intern(struct strpool *p, const char *s)
{
    if ((p->n + 1) * 2 > p->cap && grow(p) < 0)
        return NULL;
    size_t j = hash(s) & (p->cap - 1);
    for (; p->slots[j]; j = (j + 1) & (p->cap - 1))
        if (!strcmp(p->slots[j], s))
            return p->slots[j];
    if (!(p->slots[j] = strdup(s)))
        return NULL;
    p->n++;
    return p->slots[j];
}

void strpool_free(struct strpool *p)
{
    for (size_t i = 0; i < p->cap; i++)
        free(p->slots[i]);
    free(p->slots);
    memset(p, 0, sizeof(*p));
}
