/*
 * profile — interned frames and a prefix trie of stacks (see profile.h for the picture).
 *
 * Three open-addressing hash tables live in `priv`:
 *   strings  text -> interned copy        (so frames compare names by pointer)
 *   frames   (kind, name, file, line) -> frame index
 *   edges    (parent node, frame) -> child node index
 * plus first-child / next-sibling arrays so writers can walk the trie top-down.
 * Tables store indices + 1 (0 = empty slot) and double when 3/4 full.
 *
 * Samples repeat stacks: a direct-mapped cache from a hash of the whole frame sequence to its leaf
 * node lets profile_add skip the per-frame edge lookups. A hit is checked by walking the leaf's
 * parents against the frames (one load and compare per frame), so a collision only costs a miss.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

struct table {
    uint32_t *slots; /* index + 1, 0 = empty */
    uint32_t cap;    /* power of two */
    uint32_t used;
};

/* One remembered stack: the hash of its frames, its depth and its leaf node. */
struct stack_slot {
    uint64_t hash;
    uint32_t n; /* 0: empty */
    uint32_t node;
};
#define STACK_CACHE_BITS 12

struct priv {
    char **strs; /* interned strings, by string index */
    uint32_t nstrs, strs_cap;
    struct table str_tab, frame_tab, edge_tab;
    uint32_t frames_cap, nodes_cap;
    uint32_t *first_child, *next_sibling; /* per node; 0 = none (the root is nobody's child) */
    struct stack_slot *stacks;            /* 1 << STACK_CACHE_BITS, allocated on first use */
};

#define INDEX_MAX (UINT32_MAX - 2)

/* -- Hashing ------------------------------------------------------------------------------------ */

static uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return mix64(h);
}

static uint64_t hash_frame(const struct frame *f)
{
    uint64_t h = mix64((uint64_t)(uintptr_t)f->name ^ ((uint64_t)f->kind << 56));
    h = mix64(h ^ (uint64_t)(uintptr_t)f->file);
    return mix64(h ^ f->line);
}

static uint64_t hash_edge(uint32_t parent, uint32_t frame)
{
    return mix64(((uint64_t)parent << 32) | frame);
}

/* -- Generic table ------------------------------------------------------------------------------ */

typedef uint64_t (*rehash_fn)(const struct profile *p, uint32_t idx);

static uint64_t rehash_str(const struct profile *p, uint32_t idx)
{
    return hash_str(((struct priv *)p->priv)->strs[idx]);
}
static uint64_t rehash_frame(const struct profile *p, uint32_t idx)
{
    return hash_frame(&p->frames[idx]);
}
static uint64_t rehash_edge(const struct profile *p, uint32_t idx)
{
    return hash_edge(p->nodes[idx].parent, p->nodes[idx].frame);
}

/* Rebuilds the table at twice the size. */
static __attribute__((noinline)) int table_grow(const struct profile *p, struct table *t, rehash_fn rehash)
{
    uint32_t ncap = t->cap ? t->cap * 2 : 64;
    if (ncap < t->cap)
        return -ENOMEM;
    uint32_t *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return -ENOMEM;
    for (uint32_t i = 0; i < t->cap; i++) {
        if (!t->slots[i])
            continue;
        uint32_t j = (uint32_t)rehash(p, t->slots[i] - 1) & (ncap - 1);
        while (ns[j])
            j = (j + 1) & (ncap - 1);
        ns[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = ns;
    t->cap = ncap;
    return 0;
}

/* Makes room for one more entry (grows when 3/4 full); the check is inline, it runs per lookup. */
static inline int table_reserve(const struct profile *p, struct table *t, rehash_fn rehash)
{
    if (t->cap && (uint64_t)(t->used + 1) * 4 <= (uint64_t)t->cap * 3)
        return 0;
    return table_grow(p, t, rehash);
}

static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint64_t ncap = *cap ? (uint64_t)*cap * 2 : 64;
    while (ncap < need)
        ncap *= 2;
    if (ncap > INDEX_MAX + 1ULL)
        ncap = INDEX_MAX + 1ULL;
    if (ncap < need)
        return -ENOMEM;
    void *n = realloc(*arr, ncap * elem);
    if (!n)
        return -ENOMEM;
    *arr = n;
    *cap = (uint32_t)ncap;
    return 0;
}

/* -- Strings ------------------------------------------------------------------------------------ */

static const char *intern(struct profile *p, const char *s)
{
    struct priv *pv = p->priv;
    uint64_t h = hash_str(s);
    if (table_reserve(p, &pv->str_tab, rehash_str) < 0)
        return NULL;
    uint32_t mask = pv->str_tab.cap - 1, j = (uint32_t)h & mask;
    for (; pv->str_tab.slots[j]; j = (j + 1) & mask) {
        const char *c = pv->strs[pv->str_tab.slots[j] - 1];
        if (strcmp(c, s) == 0)
            return c;
    }
    if (pv->nstrs >= INDEX_MAX || grow((void **)&pv->strs, &pv->strs_cap, pv->nstrs + 1, sizeof(char *)))
        return NULL;
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    pv->strs[pv->nstrs++] = copy;
    pv->str_tab.slots[j] = pv->nstrs;
    pv->str_tab.used++;
    return copy;
}

/* -- Public API --------------------------------------------------------------------------------- */

int profile_init(struct profile *p)
{
    memset(p, 0, sizeof(*p));
    struct priv *pv = calloc(1, sizeof(*pv));
    if (!pv)
        return -ENOMEM;
    p->priv = pv;
    /* Root node 0: its own parent; its frame index is never read. */
    if (grow((void **)&p->nodes, &pv->nodes_cap, 1, sizeof(struct node))) {
        profile_free(p);
        return -ENOMEM;
    }
    pv->first_child = calloc(pv->nodes_cap, sizeof(uint32_t));
    pv->next_sibling = calloc(pv->nodes_cap, sizeof(uint32_t));
    if (!pv->first_child || !pv->next_sibling) {
        profile_free(p);
        return -ENOMEM;
    }
    p->nodes[0] = (struct node){.parent = 0, .frame = UINT32_MAX};
    p->nnodes = 1;
    return 0;
}

void profile_free(struct profile *p)
{
    struct priv *pv = p->priv;
    if (pv) {
        for (uint32_t i = 0; i < pv->nstrs; i++)
            free(pv->strs[i]);
        free(pv->strs);
        free(pv->str_tab.slots);
        free(pv->frame_tab.slots);
        free(pv->edge_tab.slots);
        free(pv->first_child);
        free(pv->next_sibling);
        free(pv->stacks);
        free(pv);
    }
    free(p->frames);
    free(p->nodes);
    free(p->meta.command);
    memset(p, 0, sizeof(*p));
}

int profile_set_command(struct profile *p, const char *command)
{
    char *c = command ? strdup(command) : NULL;
    if (command && !c)
        return -ENOMEM;
    free(p->meta.command);
    p->meta.command = c;
    return 0;
}

int64_t profile_frame(struct profile *p, enum frame_kind kind, const char *name, const char *file,
                      uint32_t line)
{
    struct priv *pv = p->priv;
    struct frame f = {.kind = kind, .line = line};
    f.name = intern(p, name ? name : "");
    if (!f.name)
        return -ENOMEM;
    if (file) {
        f.file = intern(p, file);
        if (!f.file)
            return -ENOMEM;
    }
    if (table_reserve(p, &pv->frame_tab, rehash_frame) < 0)
        return -ENOMEM;
    uint32_t mask = pv->frame_tab.cap - 1, j = (uint32_t)hash_frame(&f) & mask;
    for (; pv->frame_tab.slots[j]; j = (j + 1) & mask) {
        const struct frame *c = &p->frames[pv->frame_tab.slots[j] - 1];
        if (c->name == f.name && c->file == f.file && c->line == f.line && c->kind == f.kind)
            return pv->frame_tab.slots[j] - 1;
    }
    if (p->nframes >= INDEX_MAX ||
        grow((void **)&p->frames, &pv->frames_cap, p->nframes + 1, sizeof(struct frame)))
        return -ENOMEM;
    p->frames[p->nframes] = f;
    pv->frame_tab.slots[j] = ++p->nframes;
    pv->frame_tab.used++;
    return p->nframes - 1;
}

/* Puts frame index `idx` (slot value idx + 1) into the frame table. */
static void frame_tab_put(struct profile *p, uint32_t idx)
{
    struct priv *pv = p->priv;
    uint32_t mask = pv->frame_tab.cap - 1, j = (uint32_t)rehash_frame(p, idx) & mask;
    while (pv->frame_tab.slots[j])
        j = (j + 1) & mask;
    pv->frame_tab.slots[j] = idx + 1;
}

int profile_frame_rename(struct profile *p, uint32_t frame, const char *name)
{
    struct priv *pv = p->priv;
    const char *n = intern(p, name);
    if (!n)
        return -ENOMEM;
    if (frame >= p->nframes || !pv->frame_tab.cap)
        return -EINVAL;
    /* Out of the table under the old key (the run after it is put back: open addressing), in
     * under the new one. */
    uint32_t mask = pv->frame_tab.cap - 1, j = (uint32_t)rehash_frame(p, frame) & mask;
    while (pv->frame_tab.slots[j] != frame + 1) {
        if (!pv->frame_tab.slots[j])
            return -EINVAL;
        j = (j + 1) & mask;
    }
    pv->frame_tab.slots[j] = 0;
    for (uint32_t k = (j + 1) & mask; pv->frame_tab.slots[k]; k = (k + 1) & mask) {
        uint32_t v = pv->frame_tab.slots[k];
        pv->frame_tab.slots[k] = 0;
        frame_tab_put(p, v - 1);
    }
    p->frames[frame].name = n;
    frame_tab_put(p, frame);
    return 0;
}

/* The child of `parent` for `frame`, created when missing. */
static int64_t child(struct profile *p, uint32_t parent, uint32_t frame)
{
    struct priv *pv = p->priv;
    if (table_reserve(p, &pv->edge_tab, rehash_edge) < 0)
        return -ENOMEM;
    uint32_t mask = pv->edge_tab.cap - 1, j = (uint32_t)hash_edge(parent, frame) & mask;
    for (; pv->edge_tab.slots[j]; j = (j + 1) & mask) {
        const struct node *c = &p->nodes[pv->edge_tab.slots[j] - 1];
        if (c->parent == parent && c->frame == frame)
            return pv->edge_tab.slots[j] - 1;
    }
    uint32_t n = p->nnodes, cap = pv->nodes_cap;
    if (n >= INDEX_MAX)
        return -ENOMEM;
    if (n + 1 > cap) {
        /* Three arrays share one capacity: grow each from the same old value. */
        uint32_t c1 = cap, c2 = cap, c3 = cap;
        if (grow((void **)&p->nodes, &c1, n + 1, sizeof(struct node)) ||
            grow((void **)&pv->first_child, &c2, n + 1, sizeof(uint32_t)) ||
            grow((void **)&pv->next_sibling, &c3, n + 1, sizeof(uint32_t)))
            return -ENOMEM;
        pv->nodes_cap = c1;
    }
    p->nodes[n] = (struct node){.parent = parent, .frame = frame};
    pv->first_child[n] = 0;
    pv->next_sibling[n] = pv->first_child[parent];
    pv->first_child[parent] = n;
    p->nnodes = n + 1;
    pv->edge_tab.slots[j] = n + 1;
    pv->edge_tab.used++;
    return n;
}

static uint64_t hash_stack(const uint32_t *frames, size_t n)
{
    uint64_t h = n;
    for (size_t i = 0; i < n; i++)
        h = (h ^ frames[i]) * 0x100000001b3ULL;
    return mix64(h);
}

/* Whether `node` ends exactly the path frames[0..n) from the root. */
static bool is_path(const struct profile *p, uint32_t node, const uint32_t *frames, size_t n)
{
    for (size_t i = n; i-- > 0;) {
        if (!node || p->nodes[node].frame != frames[i])
            return false;
        node = p->nodes[node].parent;
    }
    return node == 0;
}

int64_t profile_add(struct profile *p, const uint32_t *frames, size_t n, uint64_t count)
{
    struct priv *pv = p->priv;
    if (n == 0)
        return -EINVAL;
    uint64_t h = hash_stack(frames, n);
    struct stack_slot *s = NULL;
    if (pv->stacks || (pv->stacks = calloc(1u << STACK_CACHE_BITS, sizeof(*pv->stacks))))
        s = &pv->stacks[h >> (64 - STACK_CACHE_BITS)];
    uint32_t node = 0;
    if (s && s->hash == h && s->n == n && is_path(p, s->node, frames, n)) {
        node = s->node; /* the frames are those of existing nodes, hence valid */
    } else {
        for (size_t i = 0; i < n; i++)
            if (frames[i] >= p->nframes)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
            int64_t c = child(p, node, frames[i]);
            if (c < 0)
                return c;
            node = (uint32_t)c;
        }
        if (s && n <= UINT32_MAX)
            *s = (struct stack_slot){.hash = h, .n = (uint32_t)n, .node = node};
    }
    p->nodes[node].self += count;
    p->meta.samples += count;
    return node;
}

void profile_add_count(struct profile *p, uint32_t node, uint64_t count)
{
    if (node >= p->nnodes)
        return;
    p->nodes[node].self += count;
    p->meta.samples += count;
}

void profile_finish(struct profile *p)
{
    for (uint32_t i = 0; i < p->nnodes; i++)
        p->nodes[i].total = p->nodes[i].self;
    /* A child is always created after its parent, so a reverse walk sees children first. */
    for (uint32_t i = p->nnodes; i-- > 1;)
        p->nodes[p->nodes[i].parent].total += p->nodes[i].total;
}

int profile_frame_label(const struct profile *p, uint32_t frame, char *buf, size_t size)
{
    if (frame >= p->nframes)
        return snprintf(buf, size, "%s", "[invalid]");
    const struct frame *f = &p->frames[frame];
    switch (f->kind) {
    case FRAME_PYTHON:
        if (f->file && f->line)
            return snprintf(buf, size, "%s (%s:%u)", f->name, f->file, f->line);
        if (f->file)
            return snprintf(buf, size, "%s (%s)", f->name, f->file);
        return snprintf(buf, size, "%s", f->name);
    case FRAME_KERNEL:
        return snprintf(buf, size, "%s_[k]", f->name);
    default:
        return snprintf(buf, size, "%s", f->name);
    }
}

uint32_t profile_first_child(const struct profile *p, uint32_t node)
{
    return ((const struct priv *)p->priv)->first_child[node];
}

uint32_t profile_next_sibling(const struct profile *p, uint32_t node)
{
    return ((const struct priv *)p->priv)->next_sibling[node];
}

bool profile_frame_shown(const struct profile *p, uint32_t frame)
{
    const struct frame *f = &p->frames[frame];
    if (f->kind != FRAME_THREAD)
        return true;
    return p->show_threads && f->name[0] != '\0';
}

size_t profile_stack(const struct profile *p, uint32_t node, uint32_t *out, size_t max)
{
    size_t depth = 0;
    for (uint32_t n = node; n != 0; n = p->nodes[n].parent)
        depth++;
    size_t skip = depth > max ? depth - max : 0, i = depth - skip;
    /* Keep the root side when the stack is deeper than `out`: drop leaf-most frames. */
    uint32_t n = node;
    for (size_t k = 0; k < skip; k++)
        n = p->nodes[n].parent;
    for (; n != 0; n = p->nodes[n].parent)
        out[--i] = n;
    return depth - skip;
}
