/*
 * GDB JIT registration with batching.
 *
 * gdb puts a breakpoint on __jit_debug_register_code; each time it fires gdb reads
 * __jit_debug_descriptor.relevant_entry and loads (or drops) one objfile from the image it points
 * to. When gdb attaches it walks the whole list. Its cost grows with the number of objfiles, not
 * with the number of symbols in each, so thousands of regions are packed into a few images:
 *
 *   descriptor.first_entry -> [image: regions 513..600, open] -> [image: 257..512, sealed] -> ...
 *
 * Only the newest image is rebuilt on publish; sealed images change only when one of their
 * regions is removed. A swap registers the new image before unregistering the old one, so a gdb
 * that attaches in between sees every region (twice at worst, never zero times).
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

_Static_assert(sizeof(struct jit_code_entry) == 32, "jit_code_entry layout");
_Static_assert(sizeof(struct jit_descriptor) == 24, "jit_descriptor layout");

enum { JIT_NOACTION = 0, JIT_REGISTER_FN = 1, JIT_UNREGISTER_FN = 2 };

/* -- The interface gdb knows ---------------------------------------------------------------- */

/* version must be 1 before any code runs: gdb reads it when it attaches. */
__attribute__((weak, used)) struct jit_descriptor __jit_debug_descriptor = {1, JIT_NOACTION, NULL, NULL};

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
    d->action_flag = JIT_REGISTER_FN;
    __jit_debug_register_code();
    d->action_flag = JIT_NOACTION;
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
    d->action_flag = JIT_UNREGISTER_FN;
    __jit_debug_register_code();
    d->action_flag = JIT_NOACTION;
}

/* -- Images --------------------------------------------------------------------------------- */

struct image {
    struct image *next, *prev;    /* g->images, newest first */
    struct jit_code_entry *entry; /* registered entry (owns its ELF bytes), or NULL */
    struct pyjit_region *regs;    /* own copies: names and CFI bytes are ours */
    uint64_t *ids;
    unsigned n, cap;
    uint64_t lo, hi; /* lowest start and highest end of regions ever placed here */
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
    struct image *images; /* newest (the open one, unless full) first */
    unsigned nimages;
    struct slot *slots;
    size_t nslots, used; /* used counts live and tombstone slots */
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

/* Builds img's ELF from its regions and swaps it into gdb's list (or drops it if empty). */
static int republish(struct gdbjit *g, struct image *img)
{
    struct jit_code_entry *old = img->entry, *e = NULL;
    if (img->n) {
        uint8_t *elf;
        size_t len;
        int err = elfimg_build(g->arch, img->regs, img->n, &elf, &len);
        if (err)
            return err;
        e = calloc(1, sizeof(*e));
        if (!e) {
            free(elf);
            return -ENOMEM;
        }
        e->symfile_addr = (const char *)elf;
        e->symfile_size = len;
        link_entry(e); /* new first: the regions are never missing from the list */
    }
    if (old) {
        unlink_entry(old);
        free_entry(old);
    }
    img->entry = e;
    return 0;
}

static struct image *new_image(struct gdbjit *g)
{
    struct image *img = calloc(1, sizeof(*img));
    if (!img)
        return NULL;
    img->next = g->images;
    if (img->next)
        img->next->prev = img;
    g->images = img;
    g->nimages++;
    return img;
}

static void drop_image(struct gdbjit *g, struct image *img)
{
    if (img->entry) {
        unlink_entry(img->entry);
        free_entry(img->entry);
    }
    for (unsigned i = 0; i < img->n; i++)
        free_region(&img->regs[i]);
    if (img->prev)
        img->prev->next = img->next;
    else
        g->images = img->next;
    if (img->next)
        img->next->prev = img->prev;
    g->nimages--;
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
    size_t n = g->nslots ? g->nslots * 2 : 64;
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
    g->slots[i] = (struct slot){id, img};
    return 0;
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

/* Whether region [a, a+size) may join img without stretching its span past what .eh_frame's
 * 32-bit offsets reach. */
static bool fits(const struct image *img, uint64_t a, uint64_t size)
{
    uint64_t lo = a < img->lo ? a : img->lo, hi = a + size > img->hi ? a + size : img->hi;
    return hi - lo <= ELFIMG_MAX_SPAN;
}

int gdbjit_add(struct gdbjit *g, const struct pyjit_region *r, uint64_t id)
{
    if (!g || !r || !r->code || !r->size)
        return -EINVAL;
    /* Validate alone first, so a bad region never spoils an image shared with good ones. */
    uint8_t *probe;
    size_t probe_len;
    int err = elfimg_build(g->arch, r, 1, &probe, &probe_len);
    if (err)
        return err;
    free(probe);

    uint64_t a = (uint64_t)(uintptr_t)r->code;
    pthread_mutex_lock(&gdbjit_lock);
    struct image *img = g->images;
    if (find_slot(g, id)) {
        err = -EEXIST;
        goto out;
    }
    if (!img || img->n >= g->batch || !fits(img, a, r->size)) {
        img = new_image(g);
        if (!img) {
            err = -ENOMEM;
            goto out;
        }
        img->lo = a;
        img->hi = a + r->size;
    }
    if (img->n == img->cap) {
        unsigned cap = img->cap ? img->cap * 2 : 8;
        if (cap > g->batch)
            cap = g->batch;
        struct pyjit_region *regs = realloc(img->regs, cap * sizeof(*regs));
        if (regs)
            img->regs = regs;
        uint64_t *ids = regs ? realloc(img->ids, cap * sizeof(*ids)) : NULL;
        if (!ids) {
            err = -ENOMEM;
            goto undo_new;
        }
        img->ids = ids;
        img->cap = cap;
    }
    err = copy_region(&img->regs[img->n], r);
    if (err)
        goto undo_new;
    img->ids[img->n] = id;
    img->n++;
    err = put_slot(g, id, img);
    if (!err)
        err = republish(g, img); /* fails only for overlap with a region already here, or OOM */
    if (err) {
        struct slot *s = find_slot(g, id);
        if (s)
            s->img = TOMB;
        img->n--;
        free_region(&img->regs[img->n]);
        goto undo_new;
    }
    if (a < img->lo)
        img->lo = a;
    if (a + r->size > img->hi)
        img->hi = a + r->size;
    goto out;
undo_new:
    if (img->n == 0 && !img->entry)
        drop_image(g, img);
out:
    pthread_mutex_unlock(&gdbjit_lock);
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
    s->img = TOMB;
    unsigned i = 0;
    while (i < img->n && img->ids[i] != id)
        i++;
    free_region(&img->regs[i]);
    img->n--;
    img->regs[i] = img->regs[img->n]; /* order does not matter: elfimg sorts */
    img->ids[i] = img->ids[img->n];
    if (img->n == 0)
        drop_image(g, img);
    else
        err = republish(g, img); /* on failure the old image (with the region) stays: harmless */
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
        drop_image(g, g->images);
    pthread_mutex_unlock(&gdbjit_lock);
    free(g->slots);
    free(g);
}
