/*
 * elfsym_plt — the stubs of an x86-64 file's procedure linkage table and the functions they call.
 *
 * PLT stubs have no symbols; like objdump and perf we call them "name@plt". Each stub of
 * .plt, .plt.sec or .plt.got jumps through one GOT slot, and the dynamic relocation of that slot
 * (JUMP_SLOT in .rela.plt, GLOB_DAT in .rela.dyn for .plt.got) names the function. Matching by
 * slot address needs no assumption about the order of entries. Entries that jump through no
 * known slot (PLT0, the lazy half of an IBT .plt) are returned bare, so that they are not taken
 * for part of the symbol before them (often _init):
 *
 *   .plt      (lazy)    ff 25 disp32 | 68 idx | e9 rel32            → jump via slot
 *   .plt      (IBT)     f3 0f 1e fa | 68 idx | f2 e9 rel32 | pad    → no slot: bare
 *   .plt.sec  (IBT)     f3 0f 1e fa | [f2] ff 25 disp32 | pad
 *   .plt.got            [f3 0f 1e fa] | ff 25 disp32 | pad          (8 or 16 bytes)
 *   .plt      (static)  ff 25 disp32 | 66 90                        (8 bytes, IRELATIVE slots)
 *
 *   slot = address after the jmp + disp32
 *
 * An IRELATIVE slot (a call to the file's own IFUNC) carries the resolver's address as addend;
 * the stub takes the name of the symbol there, else objdump's "*ABS*+0xADDR".
 */
#include "symbols/elfsym_plt.h"
#include "symbols/elfsec.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct slot {
    uint64_t got;
    const char *name; /* NULL: IRELATIVE, named after addend */
    uint64_t addend;
};

static int cmp_slot(const void *a, const void *b)
{
    const struct slot *x = a, *y = b;
    return x->got < y->got ? -1 : x->got > y->got;
}

/* How many relocations at the start of the table at `addr` are RELATIVE: the dynamic section
 * says it (DT_RELACOUNT) for the table it points at (DT_RELA). 0 when it does not. */
static size_t relative_count(Elf *e, uint64_t addr)
{
    uint64_t rela = 0, count = 0;

    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh;
        Elf_Data *d;
        if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_DYNAMIC || !(d = elf_getdata(s, NULL)) || !d->d_buf)
            continue;
        const Elf64_Dyn *dyn = d->d_buf;
        for (size_t i = 0; i < d->d_size / sizeof(*dyn) && dyn[i].d_tag != DT_NULL; i++) {
            if (dyn[i].d_tag == DT_RELA)
                rela = dyn[i].d_un.d_ptr;
            else if (dyn[i].d_tag == DT_RELACOUNT)
                count = dyn[i].d_un.d_val;
        }
        break;
    }
    return rela == addr ? (size_t)count : 0;
}

/* GOT slots named by the dynamic relocations against .dynsym (and IRELATIVE ones). The
 * RELATIVE relocations a linker puts first are skipped unread: a shared library has tens of
 * thousands of them (libpython: 900 KiB), and none names a function. */
static int read_slots(Elf *e, struct slot **out, size_t *nout)
{
    struct slot *v = NULL;
    size_t n = 0;
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh, lsh;
        Elf_Scn *ls;
        if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_RELA || sh.sh_entsize != sizeof(Elf64_Rela))
            continue;
        /* a static executable's IRELATIVE relocations have no symbol table */
        bool dynsym = sh.sh_link && (ls = elf_getscn(e, sh.sh_link)) && gelf_getshdr(ls, &lsh) &&
                      lsh.sh_type == SHT_DYNSYM;
        Elf_Data *d = elf_getdata(s, NULL), *sd = dynsym ? elf_getdata(ls, NULL) : NULL;
        size_t cnt = d ? d->d_size / sizeof(Elf64_Rela) : 0, first = relative_count(e, sh.sh_addr);
        if (first >= cnt)
            continue;
        if (!d || !cnt || cnt > SIZE_MAX / sizeof(*v) - n)
            continue;
        struct slot *nv = realloc(v, (n + cnt - first) * sizeof(*v));
        if (!nv) {
            free(v);
            return -ENOMEM;
        }
        v = nv;
        /* read in place (a 64-bit file in memory): gelf_getrela per entry cost more */
        const Elf64_Rela *rel = d->d_buf;
        const Elf64_Sym *syms = sd && sd->d_buf ? sd->d_buf : NULL;
        size_t nsyms = syms ? sd->d_size / sizeof(Elf64_Sym) : 0;
        for (size_t i = first; rel && i < cnt; i++) {
            unsigned long type = ELF64_R_TYPE(rel[i].r_info), idx = ELF64_R_SYM(rel[i].r_info);
            if (type == R_X86_64_IRELATIVE) {
                v[n++] = (struct slot){rel[i].r_offset, NULL, (uint64_t)rel[i].r_addend};
                continue;
            }
            if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !idx || idx >= nsyms)
                continue;
            const char *name = elf_strptr(e, lsh.sh_link, syms[idx].st_name);
            if (name && *name)
                v[n++] = (struct slot){rel[i].r_offset, name, 0};
        }
    }
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_slot);
    *out = v;
    *nout = n;
    return 0;
}

static const struct slot *find_slot(const struct slot *v, size_t n, uint64_t got)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].got < got)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo].got == got ? &v[lo] : NULL;
}

/* The GOT slot an entry jumps through, or 0 when it does not start with such a jump. */
static uint64_t entry_slot(const uint8_t *p, size_t size, uint64_t addr)
{
    static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
    size_t i = 0;
    if (size >= 4 && !memcmp(p, endbr64, 4))
        i = 4;
    if (i < size && p[i] == 0xf2) /* bnd prefix (MPX-era binaries) */
        i++;
    if (i + 6 > size || p[i] != 0xff || p[i + 1] != 0x25)
        return 0;
    int32_t disp;
    memcpy(&disp, p + i + 2, 4);
    return addr + i + 6 + (uint64_t)(int64_t)disp;
}

/* sh_entsize is 16, or 8 for a .plt.got without IBT; a static executable's .plt has none and
 * 8-byte entries (jmp *slot; xchg %ax,%ax). 0: not a layout we know. */
static uint64_t entry_size(const GElf_Shdr *sh, bool pltgot, const uint8_t *p, size_t size)
{
    if (sh->sh_entsize)
        return sh->sh_entsize == 8 || sh->sh_entsize == 16 ? sh->sh_entsize : 0;
    if (pltgot || (size >= 8 && p[0] == 0xff && p[1] == 0x25 && p[6] == 0x66 && p[7] == 0x90))
        return 8;
    return 16;
}

static const char *const plt_secs[] = {".plt", ".plt.sec", ".plt.got"};

static int scan_plt(Elf *e, const struct slot *slots, size_t nslots, struct elfsym_plt_entry **v, size_t *n,
                    size_t *cap)
{
    for (size_t k = 0; k < sizeof(plt_secs) / sizeof(plt_secs[0]); k++) {
        GElf_Shdr sh;
        Elf_Scn *s = elfsec_find(e, plt_secs[k], &sh);
        Elf_Data *d = s && sh.sh_type == SHT_PROGBITS ? elf_getdata(s, NULL) : NULL;
        if (!d || !d->d_buf)
            continue;
        size_t size = d->d_size < sh.sh_size ? d->d_size : (size_t)sh.sh_size;
        uint64_t es = entry_size(&sh, k == 2, d->d_buf, size);
        if (!es)
            continue;
        for (size_t off = 0; off + es <= size; off += es) {
            uint64_t got = entry_slot((const uint8_t *)d->d_buf + off, es, sh.sh_addr + off);
            const struct slot *sl = got ? find_slot(slots, nslots, got) : NULL;
            if (*n == *cap) {
                size_t c = *cap ? *cap * 2 : 64;
                void *nv = realloc(*v, c * sizeof(**v));
                if (!nv)
                    return -ENOMEM;
                *v = nv;
                *cap = c;
            }
            (*v)[(*n)++] = sl ? (struct elfsym_plt_entry){sh.sh_addr + off, es, sl->name, sl->addend, false}
                              : (struct elfsym_plt_entry){sh.sh_addr + off, es, NULL, 0, true};
        }
    }
    return 0;
}

int elfsym_plt_read(Elf *e, struct elfsym_plt_entry **out, size_t *nout)
{
    GElf_Ehdr eh;
    struct slot *slots;
    size_t nslots, cap = 0;
    *out = NULL;
    *nout = 0;
    if (!gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64)
        return 0;
    int err = read_slots(e, &slots, &nslots);
    if (err)
        return err;
    if ((err = scan_plt(e, slots, nslots, out, nout, &cap))) {
        free(*out);
        *out = NULL;
        *nout = 0;
    }
    free(slots);
    return err;
}

bool elfsym_plt_span(Elf *e, uint64_t *lo, uint64_t *hi)
{
    GElf_Ehdr eh;
    uint64_t a = UINT64_MAX, b = 0;
    bool x86 = gelf_getehdr(e, &eh) && eh.e_machine == EM_X86_64;

    for (size_t k = 0; x86 && k < sizeof(plt_secs) / sizeof(plt_secs[0]); k++) {
        GElf_Shdr sh;
        if (!elfsec_find(e, plt_secs[k], &sh) || sh.sh_type != SHT_PROGBITS || !sh.sh_size)
            continue;
        a = sh.sh_addr < a ? sh.sh_addr : a;
        b = sh.sh_addr + sh.sh_size > b ? sh.sh_addr + sh.sh_size : b;
    }
    *lo = a < b ? a : 0; /* none: the empty span [0, 0) */
    *hi = a < b ? b : 0;
    return a < b;
}
