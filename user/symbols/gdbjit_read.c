/* gdbjit_read — CPython's JIT executors from the target's GDB JIT list (see gdbjit_read.h). */
#include "symbols/gdbjit_read.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdbjit_format.h"

/* CPython's images are a few KiB; anything larger is not one of them. */
#define MAX_IMAGE (1u << 20)

/* A pointer field of the target's structs: an address in the target, never followed here. */
static uint64_t target_addr(const void *p)
{
    return (uintptr_t)p;
}

void gdbjit_read_init(struct gdbjit_read *j, uint64_t descriptor)
{
    memset(j, 0, sizeof(*j));
    j->descriptor = descriptor;
}

static void region_free(struct gdbjit_read_region *g)
{
    if (g->cfi.data)
        cfi_read_free(&g->cfi);
    free(g->eh_frame);
    memset(g, 0, sizeof(*g));
}

void gdbjit_read_free(struct gdbjit_read *j)
{
    for (size_t i = 0; i < j->n; i++)
        region_free(&j->v[i]);
    free(j->v);
    j->v = NULL;
    j->n = 0;
}

/* -- The in-memory ELF --------------------------------------------------------------------------- */

static const Elf64_Shdr *shdr(const uint8_t *img, size_t size, const Elf64_Ehdr *eh, unsigned i)
{
    uint64_t at = eh->e_shoff + (uint64_t)i * eh->e_shentsize;
    if (i >= eh->e_shnum || eh->e_shentsize < sizeof(Elf64_Shdr) || at + sizeof(Elf64_Shdr) > size)
        return NULL;
    return (const Elf64_Shdr *)(img + at);
}

static bool in_image(const Elf64_Shdr *s, size_t size)
{
    return s->sh_type == SHT_NOBITS || (s->sh_offset <= size && s->sh_size <= size - s->sh_offset);
}

/* Fills start/end/name/eh_frame of g from the image; -EINVAL when it is not what CPython writes. */
static int parse_image(struct gdbjit_read_region *g, const uint8_t *img, size_t size)
{
    Elf64_Ehdr eh;
    if (size < sizeof(eh))
        return -EINVAL;
    memcpy(&eh, img, sizeof(eh));
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 || (eh.e_shoff & 7))
        return -EINVAL;
    const Elf64_Shdr *strs = shdr(img, size, &eh, eh.e_shstrndx);
    if (!strs || !in_image(strs, size))
        return -EINVAL;
    const Elf64_Shdr *text = NULL, *ehf = NULL, *sym = NULL;
    for (unsigned i = 1; i < eh.e_shnum; i++) {
        const Elf64_Shdr *s = shdr(img, size, &eh, i);
        if (!s || !in_image(s, size) || s->sh_name >= strs->sh_size)
            return -EINVAL;
        const char *nm = (const char *)img + strs->sh_offset + s->sh_name;
        size_t room = strs->sh_size - s->sh_name;
        if (strnlen(nm, room) == room)
            return -EINVAL;
        if (!strcmp(nm, ".text"))
            text = s;
        else if (!strcmp(nm, ".eh_frame"))
            ehf = s;
        else if (s->sh_type == SHT_SYMTAB)
            sym = s;
    }
    if (!text || !text->sh_addr || !text->sh_size)
        return -EINVAL;
    g->start = text->sh_addr;
    g->end = text->sh_addr + text->sh_size;
    snprintf(g->name, sizeof(g->name), "py::jit");
    /* The first FUNC symbol names the region. */
    const Elf64_Shdr *str = sym ? shdr(img, size, &eh, sym->sh_link) : NULL;
    if (sym && str && in_image(str, size) && sym->sh_entsize == sizeof(Elf64_Sym)) {
        for (size_t k = 0; k < sym->sh_size / sizeof(Elf64_Sym); k++) {
            Elf64_Sym s;
            memcpy(&s, img + sym->sh_offset + k * sizeof(s), sizeof(s));
            if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_name >= str->sh_size)
                continue;
            const char *nm = (const char *)img + str->sh_offset + s.st_name;
            size_t room = str->sh_size - s.st_name;
            snprintf(g->name, sizeof(g->name), "%.*s", (int)strnlen(nm, room), nm);
            break;
        }
    }
    if (ehf && ehf->sh_type != SHT_NOBITS && ehf->sh_size) {
        if (!(g->eh_frame = malloc(ehf->sh_size)))
            return -ENOMEM;
        memcpy(g->eh_frame, img + ehf->sh_offset, ehf->sh_size);
        g->eh_frame_size = ehf->sh_size;
        g->eh_frame_addr = ehf->sh_addr;
        if (cfi_read_init(&g->cfi, g->eh_frame, g->eh_frame_size, g->eh_frame_addr, false, NULL, 0, 0) < 0)
            memset(&g->cfi, 0, sizeof(g->cfi));
    }
    return 0;
}

/* -- Walking the list ---------------------------------------------------------------------------- */

static int cmp_region(const void *a, const void *b)
{
    const struct gdbjit_read_region *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* A region of the previous list for the same image, moved out of it (or NULL). */
static bool reuse(struct gdbjit_read *j, uint64_t image, uint64_t size, struct gdbjit_read_region *out)
{
    for (size_t i = 0; i < j->n; i++)
        if (j->v[i].image == image && j->v[i].image_size == size && j->v[i].start) {
            *out = j->v[i];
            memset(&j->v[i], 0, sizeof(j->v[i]));
            return true;
        }
    return false;
}

/* Doubles the room of a region array; the new half zeroed (region_free works on it). */
static int grow(struct gdbjit_read_region **v, size_t *cap)
{
    struct gdbjit_read_region *nv = realloc(*v, 2 * *cap * sizeof(*nv));
    if (!nv)
        return -ENOMEM;
    memset(nv + *cap, 0, *cap * sizeof(*nv));
    *v = nv;
    *cap *= 2;
    return 0;
}

int gdbjit_read_list(struct gdbjit_read *j, struct remote *r, size_t max_entries)
{
    if (!j->descriptor)
        return 0;
    const uint64_t calls0 = r->st.calls, reused0 = j->st.images_reused;
    struct jit_descriptor d;
    j->changed = true;
    int rc = remote_read(r, j->descriptor, &d, sizeof(d));
    j->st.reads++;
    if (rc)
        return rc;
    if (d.version != GDBJIT_VERSION)
        return -EPROTO;

    size_t cap = 16, n = 0;
    struct gdbjit_read_region *v = calloc(cap, sizeof(*v));
    uint8_t *img = malloc(MAX_IMAGE);
    if (!v || !img) {
        free(v);
        free(img);
        return -ENOMEM;
    }
    /* Entry k and the image of entry k-1 in one call; `pend` is that image's entry. */
    struct jit_code_entry e, pend = {0};
    bool have_pend = false;
    uint64_t next = target_addr(d.first_entry);
    size_t seen = 0;
    rc = 0;
    while (next || have_pend) {
        struct remote_seg segs[2];
        size_t ns = 0;
        int ie = -1, ii = -1;
        if (next && seen < max_entries) {
            ie = (int)ns;
            segs[ns++] = REMOTE_SEG(next, &e, sizeof(e));
        }
        if (have_pend) {
            ii = (int)ns;
            segs[ns++] = REMOTE_SEG(target_addr(pend.symfile_addr), img, pend.symfile_size);
        }
        if (!ns)
            break;
        int got = remote_readv(r, segs, ns, true);
        if (got < 0) {
            rc = got;
            break;
        }
        if (have_pend) {
            if (n == cap && (rc = grow(&v, &cap)) < 0)
                break;
            struct gdbjit_read_region *g = &v[n];
            if (segs[ii].ok && parse_image(g, img, pend.symfile_size) == 0) {
                g->image = target_addr(pend.symfile_addr);
                g->image_size = pend.symfile_size;
                n++;
                j->st.images_read++;
            } else {
                region_free(g);
                j->st.bad_images++;
            }
            have_pend = false;
        }
        if (ie < 0)
            break;
        if (!segs[ie].ok) {
            rc = -EFAULT;
            break;
        }
        seen++;
        next = target_addr(e.next);
        if (!e.symfile_addr || !e.symfile_size || e.symfile_size > MAX_IMAGE)
            continue;
        /* Known image: no read. */
        if (n == cap && (rc = grow(&v, &cap)) < 0)
            break;
        if (reuse(j, target_addr(e.symfile_addr), e.symfile_size, &v[n])) {
            n++;
            j->st.images_reused++;
            continue;
        }
        pend = e;
        have_pend = true;
    }
    free(img);
    j->st.calls += r->st.calls - calls0;
    qsort(v, n, sizeof(*v), cmp_region);
    /* Every region found again and none new (each known one is taken once): the same list.
     * Its regions go back where they were, so the CFI tables and names handed out stay valid
     * and keep their addresses (the unwinder's cached rows are keyed by table). */
    if (!rc && n == j->n && j->st.images_reused - reused0 == n) {
        if (n)
            memcpy(j->v, v, n * sizeof(*v));
        free(v);
        j->changed = false;
        return (int)n;
    }
    gdbjit_read_free(j);
    if (rc) {
        for (size_t i = 0; i < n; i++)
            region_free(&v[i]);
        free(v);
        return rc;
    }
    j->v = v;
    j->n = n;
    return (int)n;
}
