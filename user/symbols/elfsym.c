/*
 * elfsym — ELF symbol tables, load segments and CFI of one file, via libelf over a private
 * read-only mapping of the file (symbol names point into it: no copies).
 */
#include "symbols/elfsym.h"
#include "symbols/elfsec.h"
#include "symbols/elfsym_plt.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUILD_ID_MAX 64

/* 24 bytes: a large library's table is thousands of them, and each page of it first touched
 * costs a page fault (~10 µs on a VM) when the file is loaded. */
struct sym {
    uint64_t addr;
    uint32_t size; /* a function's size fits; a larger one is cut (a lookup past it finds none) */
    uint32_t rank; /* at one address the global name wins over weak, weak over local, local over
                    * a synthesized name@plt */
    const char *name;
};

static uint32_t sym_size(uint64_t size)
{
    return size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
}

struct load {
    uint64_t vaddr, offset, filesz, memsz;
    bool exec;
};

struct image {
    void *bytes;
    size_t size;
    bool mapped; /* munmap, else free */
    Elf *elf;
};

struct elf_file {
    struct elfsym_cache *cache; /* NULL once the cache is gone */
    unsigned refs;
    char *name;
    uint8_t build_id[BUILD_ID_MAX];
    size_t build_id_len;
    dev_t dev;
    ino_t ino;
    off_t fsize;
    struct timespec mtime;
    struct load *loads;
    size_t nloads;
    struct sym *syms;
    size_t nsyms;
    /* The PLT stubs' symbols, sorted, in a table of their own: made at the first lookup inside
     * the PLT sections' span, they no longer grow (and copy) the file's table. A large library's
     * (libpython's 1,400) cost a tenth of its loading; a Python thread's leaf is often one
     * (__tls_get_addr@plt), so most runs still make them, later and smaller. */
    struct sym *plt;
    size_t nplt;
    char *plt_names; /* their "name@plt" strings, one block */
    uint64_t plt_lo, plt_hi;
    bool plt_pending;
    bool from_debug;
    bool has_cfi;
    struct cfi_read_table cfi;
    struct image main, debug;
};

struct elfsym_cache {
    struct elf_file **v;
    size_t n, cap;
};

int elfsym_cache_new(struct elfsym_cache **out)
{
    if (elf_version(EV_CURRENT) == EV_NONE)
        return -ENOSYS;
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : -ENOMEM;
}

void elfsym_cache_free(struct elfsym_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        c->v[i]->cache = NULL;
    free(c->v);
    free(c);
}

static void image_free(struct image *im)
{
    if (im->elf)
        elf_end(im->elf);
    if (im->mapped)
        munmap(im->bytes, im->size);
    else
        free(im->bytes);
    memset(im, 0, sizeof(*im));
}

static int image_map(struct image *im, int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (st.st_size < (off_t)sizeof(Elf64_Ehdr))
        return -ENOEXEC;
    /* Private and writable so libelf may fix things up in place; the file is never written. */
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return -errno;
    im->bytes = p;
    im->size = (size_t)st.st_size;
    im->mapped = true;
    im->elf = elf_memory(p, im->size);
    if (!im->elf || elf_kind(im->elf) != ELF_K_ELF || gelf_getclass(im->elf) != ELFCLASS64) {
        image_free(im);
        return -ENOEXEC;
    }
    return 0;
}

/* -- Symbols ------------------------------------------------------------------------------- */

/* The function symbols of the tables of `type`, appended to f->syms. The table is read in
 * place (a 64-bit file in memory: libelf hands back its Elf64_Sym array) and names are taken
 * from the string table directly, checked once to end in a NUL: a non-stripped libpython has
 * 17,000 symbols, and per-symbol gelf_getsym and elf_strptr were a tenth of the collector's
 * setup. */
static int add_symbols(struct elf_file *f, Elf *e, Elf64_Word type)
{
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh, strsh;
        if (!gelf_getshdr(s, &sh) || sh.sh_type != type || sh.sh_entsize != sizeof(Elf64_Sym))
            continue;
        Elf_Data *d = elf_getdata(s, NULL);
        Elf_Scn *strs = elf_getscn(e, sh.sh_link);
        Elf_Data *sd = strs && gelf_getshdr(strs, &strsh) ? elf_getdata(strs, NULL) : NULL;
        size_t n = d && d->d_buf ? d->d_size / sizeof(Elf64_Sym) : 0;
        /* n == 0 would make realloc free f->syms and return NULL (a double free later) */
        if (!n || !sd || !sd->d_buf || !sd->d_size || ((const char *)sd->d_buf)[sd->d_size - 1])
            continue;
        if (n > SIZE_MAX / sizeof(struct sym) - f->nsyms)
            return -ENOMEM;
        struct sym *v = realloc(f->syms, (f->nsyms + n) * sizeof(*v));
        if (!v)
            return -ENOMEM;
        f->syms = v;
        const Elf64_Sym *tab = d->d_buf;
        const char *names = sd->d_buf;
        for (size_t i = 0; i < n; i++) {
            const Elf64_Sym *sym = &tab[i];
            int t = ELF64_ST_TYPE(sym->st_info);
            if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym->st_shndx == SHN_UNDEF || !sym->st_value ||
                !sym->st_name || sym->st_name >= sd->d_size || !names[sym->st_name])
                continue;
            int b = ELF64_ST_BIND(sym->st_info);
            unsigned rank = b == STB_GLOBAL ? 0 : b == STB_WEAK ? 1 : 2;
            f->syms[f->nsyms++] = (struct sym){.addr = sym->st_value,
                                               .size = sym_size(sym->st_size),
                                               .rank = rank,
                                               .name = names + sym->st_name};
        }
    }
    return 0;
}

static int cmp_sym(const void *a, const void *b)
{
    const struct sym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->name, y->name); /* deterministic among aliases */
}

/* Sorts v[0..n) as cmp_sym orders it, in place: a radix sort on the highest byte of the address
 * that differs (a library's addresses differ in three or four), each bucket then sorted the same
 * way, runs of at most 32 by insertion. qsort was the largest part of loading a file's symbols
 * (libc's 3,762: ~1.4 ms of a 2.8 ms load). A radix sort through a copy was ~0.3 ms, but the
 * copy's pages were fresh, and a page's first touch is a fault (5-10 µs on a virtual machine):
 * in place, opening libpython3.12 and libc in a new process takes 5.3 ms and 190 faults
 * instead of 6.2 ms and 280 (medians of 25). */
static void sort_syms(struct sym *v, size_t n)
{
    if (n <= 32) {
        for (size_t i = 1; i < n; i++)
            for (size_t k = i; k > 0 && cmp_sym(&v[k - 1], &v[k]) > 0; k--) {
                struct sym t = v[k];
                v[k] = v[k - 1];
                v[k - 1] = t;
            }
        return;
    }
    /* declared here: zeroing the counts (2 KiB) for each small bucket was an eighth of the sort */
    size_t count[256] = {0}, next[256];
    uint64_t differ = 0;
    for (size_t i = 1; i < n; i++)
        differ |= v[i].addr ^ v[0].addr;
    if (!differ) { /* more than 32 names at one address */
        qsort(v, n, sizeof(*v), cmp_sym);
        return;
    }
    int shift = (63 - __builtin_clzll(differ)) & ~7; /* the highest byte that differs */
    for (size_t i = 0; i < n; i++)
        count[(v[i].addr >> shift) & 0xff]++;
    for (size_t b = 0, at = 0; b < 256; b++) {
        next[b] = at;
        at += count[b];
    }
    /* each bucket b fills from next[b]: an element out of place is swapped into its own bucket */
    for (size_t b = 0, end = 0; b < 256; b++) {
        end += count[b];
        while (next[b] < end) {
            struct sym x = v[next[b]];
            size_t xb;
            while ((xb = (x.addr >> shift) & 0xff) != b) {
                struct sym t = v[next[xb]];
                v[next[xb]++] = x;
                x = t;
            }
            v[next[b]++] = x;
        }
    }
    for (size_t b = 0, at = 0; b < 256; at += count[b], b++)
        if (count[b] > 1)
            sort_syms(v + at, count[b]);
}

/* Keeps the best-ranked name at each address, with the largest size seen there. */
static void dedup_symbols(struct elf_file *f)
{
    size_t w = 0;
    for (size_t i = 0; i < f->nsyms; i++) {
        if (w && f->syms[w - 1].addr == f->syms[i].addr) {
            if (f->syms[i].size > f->syms[w - 1].size)
                f->syms[w - 1].size = f->syms[i].size;
            continue;
        }
        f->syms[w++] = f->syms[i];
    }
    f->nsyms = w;
}

static void sort_symbols(struct elf_file *f)
{
    if (f->nsyms > 1) /* syms is NULL for a file without symbols */
        sort_syms(f->syms, f->nsyms);
    dedup_symbols(f);
}

static bool has_section_type(Elf *e, Elf64_Word type)
{
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh;
        if (gelf_getshdr(s, &sh) && sh.sh_type == type && sh.sh_size)
            return true;
    }
    return false;
}

static const char *table_lookup(const struct elf_file *f, const struct sym *v, size_t n, uint64_t vaddr,
                                uint64_t *offset);

/* The name of the file's own symbol starting at addr (an IRELATIVE stub's resolver; a symbol at a
 * stub's address), or NULL. */
static const char *symbol_at(const struct elf_file *f, uint64_t addr)
{
    uint64_t off;
    const char *name = table_lookup(f, f->syms, f->nsyms, addr, &off);
    return name && !off ? name : NULL;
}

/* Makes the "name@plt" symbols of the PLT stubs (f->plt), ranked below any real symbol at the
 * same address (elfsym_lookup; an IFUNC stub takes the name of its resolver). An IFUNC stub
 * without a symbol there is "*ABS*+0xADDR@plt", as objdump prints it; PLT0 and other stubs
 * calling nothing known are "[plt]". */
static int add_plt_symbols(struct elf_file *f)
{
    struct elfsym_plt_entry *v;
    size_t n, bytes = 0;
    int err = elfsym_plt_read(f->main.elf, &v, &n);
    if (err || !n)
        return err;
    char abs[32];
    for (size_t i = 0; i < n; i++) {
        if (v[i].bare)
            continue;
        const char *nm = v[i].name ? v[i].name : (v[i].name = symbol_at(f, v[i].resolver));
        bytes += (nm ? strlen(nm) : (size_t)snprintf(abs, sizeof(abs), "*ABS*+%#" PRIx64, v[i].resolver)) + 5;
    }
    struct sym *add = malloc(n * sizeof(*add));
    if (!add || !(f->plt_names = malloc(bytes ? bytes : 1))) {
        free(add);
        free(v);
        return -ENOMEM;
    }
    char *w = f->plt_names;
    for (size_t i = 0; i < n; i++) {
        if (v[i].bare) {
            add[i] = (struct sym){.addr = v[i].addr, .size = sym_size(v[i].size), .rank = 3, .name = "[plt]"};
            continue;
        }
        int len = v[i].name ? snprintf(w, bytes, "%s@plt", v[i].name)
                            : snprintf(w, bytes, "*ABS*+%#" PRIx64 "@plt", v[i].resolver);
        add[i] = (struct sym){.addr = v[i].addr, .size = sym_size(v[i].size), .rank = 3, .name = w};
        w += len + 1;
        bytes -= (size_t)len + 1;
    }
    free(v);
    qsort(add, n, sizeof(*add), cmp_sym);
    f->plt = add;
    f->nplt = n;
    return 0;
}

/* -- Separate debug files ------------------------------------------------------------------ */

static int try_debug(struct elf_file *f, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct image im = {0};
    int err = image_map(&im, fd);
    close(fd);
    if (err)
        return err;
    uint8_t id[BUILD_ID_MAX];
    size_t n = elfsec_build_id(im.elf, id, sizeof(id));
    if (f->build_id_len && n && (n != f->build_id_len || memcmp(id, f->build_id, n))) {
        image_free(&im);
        return -ESTALE;
    }
    if (!has_section_type(im.elf, SHT_SYMTAB)) {
        image_free(&im);
        return -ENOENT;
    }
    f->debug = im;
    return 0;
}

/* Looks for the debug file by build-id, then by .gnu_debuglink next to the file and under
 * ROOT/usr/lib/debug. `path` is the file's path in the target's namespace. */
static void find_debug(struct elf_file *f, const char *root, const char *path)
{
    char buf[4096];
    if (f->build_id_len >= 2) {
        int n = snprintf(buf, sizeof(buf), "%s/usr/lib/debug/.build-id/%02x/", root, f->build_id[0]);
        for (size_t i = 1; i < f->build_id_len && n < (int)sizeof(buf) - 8; i++)
            n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%02x", f->build_id[i]);
        snprintf(buf + n, sizeof(buf) - (size_t)n, ".debug");
        if (!try_debug(f, buf))
            return;
    }
    GElf_Shdr sh;
    Elf_Scn *s = elfsec_find(f->main.elf, ".gnu_debuglink", &sh);
    Elf_Data *d = s ? elfsec_data(s, &sh) : NULL;
    if (!d || !d->d_size || !path || path[0] != '/')
        return;
    const char *link = d->d_buf;
    if (!memchr(link, '\0', d->d_size))
        return;
    const char *slash = strrchr(path, '/');
    int dirlen = (int)(slash - path);
    static const char *const fmts[] = {"%s/usr/lib/debug%.*s/%s", "%s%.*s/.debug/%s"};
    for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
        snprintf(buf, sizeof(buf), fmts[i], root, dirlen, path, link);
        if (!try_debug(f, buf))
            return;
    }
}

/* -- Loading -------------------------------------------------------------------------------- */

static int read_loads(struct elf_file *f)
{
    size_t n;
    if (elf_getphdrnum(f->main.elf, &n) < 0)
        return -ENOEXEC;
    f->loads = calloc(n ? n : 1, sizeof(*f->loads));
    if (!f->loads)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(f->main.elf, (int)i, &ph) && ph.p_type == PT_LOAD)
            f->loads[f->nloads++] =
                (struct load){ph.p_vaddr, ph.p_offset, ph.p_filesz, ph.p_memsz, (ph.p_flags & PF_X) != 0};
    }
    return 0;
}

static void read_cfi(struct elf_file *f)
{
    GElf_Shdr sh, hsh;
    Elf_Scn *s = elfsec_find(f->main.elf, ".eh_frame", &sh);
    Elf_Data *d = s ? elfsec_data(s, &sh) : NULL;
    if (d && d->d_size) {
        Elf_Scn *hs = elfsec_find(f->main.elf, ".eh_frame_hdr", &hsh);
        Elf_Data *hd = hs ? elfsec_data(hs, &hsh) : NULL;
        if (!cfi_read_init(&f->cfi, d->d_buf, d->d_size, sh.sh_addr, false, hd ? hd->d_buf : NULL,
                           hd ? hd->d_size : 0, hd ? hsh.sh_addr : 0)) {
            f->has_cfi = true;
            return;
        }
    }
    Elf *srcs[2] = {f->main.elf, f->debug.elf};
    for (int i = 0; i < 2; i++) {
        if (!srcs[i] || !(s = elfsec_find(srcs[i], ".debug_frame", &sh)))
            continue;
        d = elfsec_data(s, &sh);
        if (d && d->d_size && !cfi_read_init(&f->cfi, d->d_buf, d->d_size, 0, true, NULL, 0, 0)) {
            f->has_cfi = true;
            return;
        }
    }
}

static int load(struct elf_file *f, const char *root)
{
    int err = read_loads(f);
    if (err)
        return err;
    /* A file's own .symtab holds its .dynsym's functions too (the linker writes every symbol
     * there): reading both only doubled the table to sort. A debug file's .symtab is another
     * link's view; .dynsym stays next to it. */
    bool own = has_section_type(f->main.elf, SHT_SYMTAB);
    if (!own)
        find_debug(f, root ? root : "", f->name);
    Elf *symsrc = f->debug.elf ? f->debug.elf : f->main.elf;
    f->from_debug = f->debug.elf != NULL;
    if ((err = add_symbols(f, symsrc, SHT_SYMTAB)) ||
        (!own && (err = add_symbols(f, f->main.elf, SHT_DYNSYM))))
        return err;
    sort_symbols(f);
    f->plt_pending = elfsym_plt_span(f->main.elf, &f->plt_lo, &f->plt_hi);
    read_cfi(f);
    return 0;
}

static void file_free(struct elf_file *f)
{
    if (f->has_cfi)
        cfi_read_free(&f->cfi);
    image_free(&f->debug);
    image_free(&f->main);
    free(f->syms);
    free(f->plt);
    free(f->plt_names);
    free(f->loads);
    free(f->name);
    free(f);
}

static int cache_add(struct elfsym_cache *c, struct elf_file *f)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 32;
        void *v = realloc(c->v, cap * sizeof(*c->v));
        if (!v)
            return -ENOMEM;
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = f;
    f->cache = c;
    return 0;
}

static struct elf_file *cache_find(struct elfsym_cache *c, const struct elf_file *key)
{
    for (size_t i = 0; i < c->n; i++) {
        struct elf_file *f = c->v[i];
        if (key->build_id_len
                ? f->build_id_len == key->build_id_len &&
                      !memcmp(f->build_id, key->build_id, key->build_id_len)
                : !f->build_id_len && f->dev == key->dev && f->ino == key->ino && f->fsize == key->fsize &&
                      f->mtime.tv_sec == key->mtime.tv_sec && f->mtime.tv_nsec == key->mtime.tv_nsec)
            return f;
    }
    return NULL;
}

/* Finishes opening f (main image set): cache hit returns the cached file instead. */
static int finish_open(struct elfsym_cache *c, struct elf_file *f, const char *name, const char *root,
                       struct elf_file **out)
{
    f->refs = 1;
    f->build_id_len = elfsec_build_id(f->main.elf, f->build_id, sizeof(f->build_id));
    struct elf_file *hit = cache_find(c, f);
    if (hit) {
        file_free(f);
        elfsym_get(hit);
        *out = hit;
        return 0;
    }
    int err = -ENOMEM;
    if (!(f->name = strdup(name)) || (err = load(f, root)) || (err = cache_add(c, f))) {
        file_free(f);
        return err;
    }
    *out = f;
    return 0;
}

int elfsym_open(struct elfsym_cache *c, int fd, const char *name, const char *root, struct elf_file **out)
{
    struct elf_file *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    struct stat st;
    int err = fstat(fd, &st) < 0 ? -errno : image_map(&f->main, fd);
    if (err) {
        free(f);
        return err;
    }
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->fsize = st.st_size;
    f->mtime = st.st_mtim;
    return finish_open(c, f, name, root, out);
}

int elfsym_open_image(struct elfsym_cache *c, void *image, size_t size, const char *name,
                      struct elf_file **out)
{
    struct elf_file *f = calloc(1, sizeof(*f));
    if (!f) {
        free(image);
        return -ENOMEM;
    }
    f->main = (struct image){image, size, false, elf_memory(image, size)};
    if (!f->main.elf || elf_kind(f->main.elf) != ELF_K_ELF || gelf_getclass(f->main.elf) != ELFCLASS64) {
        file_free(f);
        return -ENOEXEC;
    }
    f->ino = (ino_t)-1; /* images without a build-id never match a file */
    return finish_open(c, f, name, NULL, out);
}

void elfsym_get(struct elf_file *f)
{
    f->refs++;
}

void elfsym_put(struct elf_file *f)
{
    if (!f || --f->refs)
        return;
    struct elfsym_cache *c = f->cache;
    for (size_t i = 0; c && i < c->n; i++)
        if (c->v[i] == f) {
            c->v[i] = c->v[--c->n];
            break;
        }
    file_free(f);
}

/* -- Queries ------------------------------------------------------------------------------- */

int elfsym_bias(const struct elf_file *f, uint64_t map_start, uint64_t map_offset, uint64_t *bias)
{
    for (size_t i = 0; i < f->nloads; i++) {
        const struct load *l = &f->loads[i];
        /* Mappings start at the page holding p_offset, so compare page-aligned. */
        uint64_t lo = l->offset & ~0xfffull;
        if (map_offset >= lo && map_offset < l->offset + (l->filesz ? l->filesz : 1)) {
            *bias = map_start - map_offset + l->offset - l->vaddr;
            return 0;
        }
    }
    return -ENOENT;
}

/* A symbol without size covers up to the next symbol, within one executable segment. */
static bool same_exec_segment(const struct elf_file *f, uint64_t a, uint64_t b)
{
    for (size_t i = 0; i < f->nloads; i++) {
        const struct load *l = &f->loads[i];
        if (l->exec && a - l->vaddr < l->memsz)
            return b - l->vaddr < l->memsz;
    }
    return false;
}

/* The symbol of v[0..n) (sorted) containing vaddr. */
static const char *table_lookup(const struct elf_file *f, const struct sym *v, size_t n, uint64_t vaddr,
                                uint64_t *offset)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].addr <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* The nearest start may be a small symbol that ended; a few steps back find an enclosing
     * one (nested symbols are rare and shallow). */
    for (size_t i = lo, steps = 0; i > 0 && steps < 4; i--, steps++) {
        const struct sym *s = &v[i - 1];
        bool inside = s->size ? vaddr - s->addr < s->size
                              : i == lo && steps == 0 && same_exec_segment(f, s->addr, vaddr);
        if (inside) {
            *offset = vaddr - s->addr;
            return s->name;
        }
    }
    return NULL;
}

const char *elfsym_lookup(struct elf_file *f, uint64_t vaddr, uint64_t *offset)
{
    if (vaddr - f->plt_lo < f->plt_hi - f->plt_lo) {
        if (f->plt_pending) {
            f->plt_pending = false;
            add_plt_symbols(f); /* optional: without memory for them the file keeps its own symbols */
        }
        /* A stub's symbol; a real one starting at its address wins (as in the file's table, where
         * the stubs' sizeless neighbours must not cover them either: PLT0 and bare stubs have
         * symbols of their own). */
        const char *stub = table_lookup(f, f->plt, f->nplt, vaddr, offset);
        if (stub) {
            const char *real = symbol_at(f, vaddr - *offset);
            return real ? real : stub;
        }
    }
    return table_lookup(f, f->syms, f->nsyms, vaddr, offset);
}

const struct cfi_read_table *elfsym_cfi(const struct elf_file *f)
{
    return f->has_cfi ? &f->cfi : NULL;
}

const char *elfsym_name(const struct elf_file *f)
{
    return f->name;
}

size_t elfsym_count(const struct elf_file *f)
{
    return f->nsyms + f->nplt;
}

const uint8_t *elfsym_build_id(const struct elf_file *f, size_t *len)
{
    *len = f->build_id_len;
    return f->build_id_len ? f->build_id : NULL;
}

bool elfsym_from_debug_file(const struct elf_file *f)
{
    return f->from_debug;
}
