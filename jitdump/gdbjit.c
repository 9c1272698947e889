/*
 * GDB JIT registration with batching.
 *
 * gdb puts a breakpoint on __jit_debug_register_code; each time it fires gdb reads
 * __jit_debug_descriptor.relevant_entry and loads (or drops) one objfile from the image it points
 * to. When gdb attaches it walks the whole list. Its cost grows with the number of objfiles (much
 * faster than linearly: 10,000 one-region images take minutes), hardly with the symbols in each,
 * so regions are packed into few images, log-structured:
 *
 *   level 0: images of 1 region     a publish registers one at once (visible immediately)
 *   level 1: images of 16 regions   16 level-0 images are merged into one
 *   level 2: images of 256 regions  (= batch: the top level, never merged further)
 *
 *   descriptor.first_entry -> [L0 r601] -> [L0 r600] -> [L1 r577..592] -> [L2 r1..256] -> ...
 *
 * A region is thus encoded about once per level (a publish costs a few microseconds whatever
 * the batch size), a gdb running the program loads small objfiles, and one that attaches finds
 * at most ~15 images per lower level plus one per `batch` regions. A merge registers the new
 * image before unregistering the old ones, so a gdb that looks in between sees every region
 * (twice at worst, never zero times). Removing a region rebuilds its image without it.
 *
 * One global mutex guards the descriptor list and every gdbjit's state: the interface is a
 * process-wide singleton anyway.
 */
#include "gdbjit.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "elfimg.h"

enum { GDBJIT_FANOUT = 16, GDBJIT_MAX_LEVELS = 16 };

/* -- The interface gdb knows ---------------------------------------------------------------- */

/* version must be 1 before any code runs: gdb reads it when it attaches. */
__attribute__((weak, used)) struct jit_descriptor __jit_debug_descriptor = {GDBJIT_VERSION, GDBJIT_NOACTION,
                                                                            NULL, NULL};

/* gdb's breakpoint: must keep its name and never be inlined or merged away. */
__attribute__((weak, noinline, used, visibility("default"))) void __jit_debug_register_code(void)
{
    __asm__ volatile("" ::: "memory");
}

static pthread_mutex_t gdbjit_lock = PTHREAD_MUTEX_INITIALIZER;

static void link_entry(struct jit_code_entry *e)
{
    struct jit_descriptor *d = &__jit_debug_descriptor;
    e->prev = NULL;
    e->next = d->first_entry;
    if (e->next)
        e->next->prev = e;
    d->first_entry = e;
    d->relevant_entry = e;
    d->action_flag = GDBJIT_REGISTER;
    __jit_debug_register_code();
    d->action_flag = GDBJIT_NOACTION;
}

static void unlink_entry(struct jit_code_entry *e)
{
    struct jit_descriptor *d = &__jit_debug_descriptor;
    if (e->prev)
        e->prev->next = e->next;
    else
        d->first_entry = e->next;
    if (e->next)
        e->next->prev = e->prev;
    d->relevant_entry = e;
    d->action_flag = GDBJIT_UNREGISTER;
    __jit_debug_register_code();
    d->action_flag = GDBJIT_NOACTION;
}

/* -- Images --------------------------------------------------------------------------------- */

struct image {
    struct image *next, *prev;    /* g->images */
    struct jit_code_entry *entry; /* registered entry (owns its ELF bytes) */
    struct pyjit_region *regs;    /* own copies: names and CFI bytes are ours */
    uint64_t *ids;
    unsigned n;     /* regions (at most the level's capacity; fewer after removals) */
    unsigned level; /* 0: one region, just published; the top level is never merged */
};

/* id -> image, open addressing with linear probing; tombstones keep chains intact. */
struct slot {
    uint64_t id;
    struct image *img; /* NULL: empty; TOMB: removed */
};
static struct image tomb_image;
#define TOMB (&tomb_image)

struct gdbjit {
    enum pyjit_arch arch;
    unsigned batch;
    struct image *images;
    unsigned nimages;
    unsigned nlevels;                  /* levels 0 .. nlevels-1; the last is never merged */
    unsigned cap[GDBJIT_MAX_LEVELS];   /* regions in a full image of each level */
    unsigned count[GDBJIT_MAX_LEVELS]; /* images at each level */
    struct slot *slots;
    size_t nslots, used, live; /* used: live and tombstone slots */
};

static void free_entry(struct jit_code_entry *e)
{
    if (e) {
        free((void *)e->symfile_addr);
        free(e);
    }
}

static void free_region(struct pyjit_region *r)
{
    free((void *)r->name);
    free((void *)r->cfi);
    free((void *)r->filename);
}

/* Builds an entry for regions (which must be valid together). */
static int make_entry(const struct gdbjit *g, const struct pyjit_region *regs, size_t n,
                      struct jit_code_entry **out)
{
    uint8_t *elf;
    size_t len;
    int err = elfimg_build(g->arch, regs, n, &elf, &len);
    if (err)
        return err;
    struct jit_code_entry *e = calloc(1, sizeof(*e));
    if (!e) {
        free(elf);
        return -ENOMEM;
    }
    e->symfile_addr = (const char *)elf;
    e->symfile_size = len;
    *out = e;
    return 0;
}

/* Rebuilds img's ELF from its regions and swaps it into gdb's list. */
static int republish(struct gdbjit *g, struct image *img)
{
    struct jit_code_entry *e;
    int err = make_entry(g, img->regs, img->n, &e);
    if (err)
        return err;
    link_entry(e); /* new first: the regions are never missing from the list */
    if (img->entry) {
        unlink_entry(img->entry);
        free_entry(img->entry);
    }
    img->entry = e;
    return 0;
}

/* An image owning regs/ids (n regions), at `level`, not yet in any list. */
static struct image *alloc_image(unsigned n, unsigned level)
{
    struct image *img = calloc(1, sizeof(*img));
    if (!img)
        return NULL;
    img->regs = calloc(n ? n : 1, sizeof(*img->regs));
    img->ids = calloc(n ? n : 1, sizeof(*img->ids));
    if (!img->regs || !img->ids) {
        free(img->regs);
        free(img->ids);
        free(img);
        return NULL;
    }
    img->n = n;
    img->level = level;
    return img;
}

static void insert_image(struct gdbjit *g, struct image *img)
{
    img->prev = NULL;
    img->next = g->images;
    if (img->next)
        img->next->prev = img;
    g->images = img;
    g->nimages++;
    g->count[img->level]++;
}

/* Takes img out of g's list and gdb's, frees it; frees its regions' copies if `owned`. */
static void drop_image(struct gdbjit *g, struct image *img, bool owned)
{
    if (img->entry) {
        unlink_entry(img->entry);
        free_entry(img->entry);
    }
    if (owned)
        for (unsigned i = 0; i < img->n; i++)
            free_region(&img->regs[i]);
    if (img->prev)
        img->prev->next = img->next;
    else
        g->images = img->next;
    if (img->next)
        img->next->prev = img->prev;
    g->nimages--;
    g->count[img->level]--;
    free(img->regs);
    free(img->ids);
    free(img);
}

/* -- id table ------------------------------------------------------------------------------- */

static size_t hash(uint64_t id)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return (size_t)id;
}

static struct slot *find_slot(const struct gdbjit *g, uint64_t id)
{
    if (!g->nslots)
        return NULL;
    for (size_t i = hash(id) & (g->nslots - 1);; i = (i + 1) & (g->nslots - 1)) {
        struct slot *s = &g->slots[i];
        if (!s->img)
            return NULL;
        if (s->img != TOMB && s->id == id)
            return s;
    }
}

static int grow_slots(struct gdbjit *g)
{
    /* Double only when live entries need it; otherwise rehashing just sweeps the tombstones
     * (publish/retire churn must not grow the table forever). */
    size_t n = !g->nslots ? 64 : g->live * 2 >= g->nslots ? g->nslots * 2 : g->nslots;
    struct slot *s = calloc(n, sizeof(*s));
    if (!s)
        return -ENOMEM;
    size_t used = 0;
    for (size_t i = 0; i < g->nslots; i++) {
        struct slot *o = &g->slots[i];
        if (!o->img || o->img == TOMB)
            continue;
        size_t j = hash(o->id) & (n - 1);
        while (s[j].img)
            j = (j + 1) & (n - 1);
        s[j] = *o;
        used++;
    }
    free(g->slots);
    g->slots = s;
    g->nslots = n;
    g->used = used;
    return 0;
}

/* Inserts id -> img; the caller has checked that id is not present. */
static int put_slot(struct gdbjit *g, uint64_t id, struct image *img)
{
    if ((g->used + 1) * 4 > g->nslots * 3) { /* keep load (with tombstones) under 3/4 */
        int err = grow_slots(g);
        if (err)
            return err;
    }
    size_t i = hash(id) & (g->nslots - 1);
    while (g->slots[i].img && g->slots[i].img != TOMB)
        i = (i + 1) & (g->nslots - 1);
    if (!g->slots[i].img)
        g->used++;
    g->live++;
    g->slots[i] = (struct slot){id, img};
    return 0;
}

static void kill_slot(struct gdbjit *g, struct slot *s)
{
    s->img = TOMB;
    g->live--;
}

/* -- Merging ------------------------------------------------------------------------------ */

struct item {
    struct pyjit_region *r; /* the copy in its old image */
    uint64_t id;
    bool stale; /* overlapped by a newer region: dropped by the merge */
};

static int cmp_item(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    uintptr_t p = (uintptr_t)x->r->code, q = (uintptr_t)y->r->code;
    if (p != q)
        return p < q ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static void free_image_unlisted(struct image *img)
{
    if (img) {
        free_entry(img->entry);
        free(img->regs);
        free(img->ids);
        free(img);
    }
}

/* Merges every image of `level` into images of level + 1: one, unless the regions lie farther
 * apart than an image may span. Where two regions overlap (the JIT reused the memory without
 * retiring the old region) the older id is dropped. On failure nothing changes. */
static int merge_level(struct gdbjit *g, unsigned level)
{
    size_t m = 0, nold = 0, nnew = 0;
    for (struct image *i = g->images; i; i = i->next)
        if (i->level == level)
            m += i->n, nold++;
    if (m == 0)
        return 0;
    struct item *it = calloc(m, sizeof(*it));
    struct image **olds = calloc(nold, sizeof(*olds));
    struct pyjit_region *tmp = calloc(m, sizeof(*tmp));
    size_t *end = calloc(m, sizeof(*end)); /* end (in tmp) of each new image's regions */
    struct image **news = calloc(m, sizeof(*news));
    int err = -ENOMEM;
    if (!it || !olds || !tmp || !end || !news)
        goto out;
    size_t k = 0, n = 0;
    for (struct image *i = g->images; i; i = i->next) {
        if (i->level != level)
            continue;
        olds[k++] = i;
        for (unsigned j = 0; j < i->n; j++)
            it[n++] = (struct item){&i->regs[j], i->ids[j], false};
    }
    qsort(it, m, sizeof(*it), cmp_item);

    /* Mark stale regions, then cut the survivors into spans an image may cover. */
    size_t prev = SIZE_MAX; /* last survivor so far */
    for (size_t i = 0; i < m; i++) {
        if (prev != SIZE_MAX && (uintptr_t)it[i].r->code < (uintptr_t)it[prev].r->code + it[prev].r->size) {
            if (it[i].id < it[prev].id) {
                it[i].stale = true;
                continue;
            }
            it[prev].stale = true;
        }
        prev = i;
    }
    uintptr_t lo = 0;
    size_t first = 0; /* index in tmp of the current new image's first region */
    n = 0;
    for (size_t i = 0; i < m; i++) {
        if (it[i].stale)
            continue;
        uintptr_t a = (uintptr_t)it[i].r->code;
        if (n > first && a + it[i].r->size - lo > ELFIMG_MAX_SPAN)
            end[nnew++] = first = n;
        if (n == first)
            lo = a;
        tmp[n++] = *it[i].r;
    }
    end[nnew++] = n;

    /* Build every new image before touching gdb's list. */
    for (size_t c = 0, from = 0; c < nnew; from = end[c++]) {
        news[c] = alloc_image((unsigned)(end[c] - from), level + 1);
        if (!news[c] || (err = make_entry(g, tmp + from, end[c] - from, &news[c]->entry)) < 0) {
            err = news[c] ? err : -ENOMEM;
            for (size_t d = 0; d <= c; d++)
                free_image_unlisted(news[d]);
            goto out;
        }
    }

    /* Commit: move the region copies over, register the new images, drop the old ones. */
    size_t c = 0, j = 0;
    for (size_t i = 0; i < m; i++) {
        struct slot *s = find_slot(g, it[i].id);
        if (it[i].stale) {
            free_region(it[i].r);
            if (s)
                kill_slot(g, s);
            continue;
        }
        if (j == news[c]->n)
            c++, j = 0;
        news[c]->regs[j] = *it[i].r;
        news[c]->ids[j++] = it[i].id;
        if (s)
            s->img = news[c];
    }
    for (c = 0; c < nnew; c++) {
        insert_image(g, news[c]);
        link_entry(news[c]->entry);
    }
    for (k = 0; k < nold; k++)
        drop_image(g, olds[k], false);
    err = 0;
out:
    free(it);
    free(olds);
    free(tmp);
    free(end);
    free(news);
    return err;
}

/* -- API ------------------------------------------------------------------------------------ */

int gdbjit_open(struct gdbjit **out, enum pyjit_arch arch, unsigned batch)
{
    if (arch != PYJIT_ARCH_X86_64 && arch != PYJIT_ARCH_AARCH64)
        return -EINVAL;
    struct gdbjit *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->arch = arch;
    g->batch = batch ? batch : GDBJIT_DEFAULT_BATCH;
    /* 1, 16, 256, ... up to batch: the top level holds `batch` regions per image. */
    g->cap[0] = 1;
    g->nlevels = 1;
    while (g->cap[g->nlevels - 1] < g->batch && g->nlevels < GDBJIT_MAX_LEVELS) {
        uint64_t next = (uint64_t)g->cap[g->nlevels - 1] * GDBJIT_FANOUT;
        g->cap[g->nlevels] = next < g->batch ? (unsigned)next : g->batch;
        g->nlevels++;
    }
    *out = g;
    return 0;
}

static char *dup_opt(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Copies what the region points to; lines are not kept (gdb gets names and unwinding only). */
static int copy_region(struct pyjit_region *dst, const struct pyjit_region *r)
{
    *dst = *r;
    dst->lines = NULL;
    dst->nlines = 0;
    dst->name = dup_opt(r->name);
    dst->filename = dup_opt(r->filename);
    dst->cfi = NULL;
    if (r->unwind == PYJIT_UNWIND_CFI && r->cfi_size) {
        uint8_t *c = malloc(r->cfi_size);
        if (c) {
            memcpy(c, r->cfi, r->cfi_size);
            dst->cfi = c;
        }
    }
    if ((r->name && !dst->name) || (r->filename && !dst->filename) ||
        (r->unwind == PYJIT_UNWIND_CFI && r->cfi_size && !dst->cfi)) {
        free_region(dst);
        return -ENOMEM;
    }
    return 0;
}

int gdbjit_add(struct gdbjit *g, const struct pyjit_region *r, uint64_t id)
{
    if (!g || !r)
        return -EINVAL;
    struct image *img = alloc_image(1, 0);
    if (!img)
        return -ENOMEM;
    int err = copy_region(&img->regs[0], r);
    if (err) {
        free_image_unlisted(img);
        return err;
    }
    img->ids[0] = id;
    /* Building the one-region image also validates the region before gdb sees anything. */
    if ((err = make_entry(g, img->regs, 1, &img->entry)) < 0) {
        free_region(&img->regs[0]);
        free_image_unlisted(img);
        return err;
    }

    pthread_mutex_lock(&gdbjit_lock);
    if (find_slot(g, id)) {
        err = -EEXIST;
    } else if ((err = put_slot(g, id, img)) == 0) {
        insert_image(g, img);
        link_entry(img->entry);
        img = NULL;
        /* Cascade: a level with a full image's worth of images becomes one image a level up.
         * A failed merge (out of memory) leaves everything registered; the next add retries. */
        for (unsigned l = 0; l + 1 < g->nlevels; l++)
            if (g->count[l] < g->cap[l + 1] / g->cap[l] || merge_level(g, l) < 0)
                break;
    }
    pthread_mutex_unlock(&gdbjit_lock);
    if (img) {
        free_region(&img->regs[0]);
        free_image_unlisted(img);
    }
    return err;
}

int gdbjit_remove(struct gdbjit *g, uint64_t id)
{
    if (!g)
        return -EINVAL;
    pthread_mutex_lock(&gdbjit_lock);
    int err = 0;
    struct slot *s = find_slot(g, id);
    if (!s) {
        err = -ENOENT;
        goto out;
    }
    struct image *img = s->img;
    unsigned i = 0;
    while (i < img->n && img->ids[i] != id)
        i++;
    if (img->n == 1) {
        kill_slot(g, s);
        drop_image(g, img, true);
        goto out;
    }
    struct pyjit_region gone = img->regs[i];
    img->n--;
    img->regs[i] = img->regs[img->n]; /* order does not matter: elfimg sorts */
    img->ids[i] = img->ids[img->n];
    err = republish(g, img);
    if (err) { /* out of memory: keep the region (gdb still has the old image anyway) */
        img->regs[img->n] = img->regs[i];
        img->ids[img->n] = img->ids[i];
        img->regs[i] = gone;
        img->ids[i] = id;
        img->n++;
        goto out;
    }
    kill_slot(g, s);
    free_region(&gone);
out:
    pthread_mutex_unlock(&gdbjit_lock);
    return err;
}

unsigned gdbjit_images(const struct gdbjit *g)
{
    pthread_mutex_lock(&gdbjit_lock);
    unsigned n = g ? g->nimages : 0;
    pthread_mutex_unlock(&gdbjit_lock);
    return n;
}

void gdbjit_close(struct gdbjit *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&gdbjit_lock);
    while (g->images)
        drop_image(g, g->images, true);
    pthread_mutex_unlock(&gdbjit_lock);
    free(g->slots);
    free(g);
}
