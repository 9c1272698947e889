/*
 * In-memory ELF image for JIT regions, the object gdb reads through its JIT interface.
 *
 *   +0       Elf64_Ehdr        ET_DYN, no program headers
 *   +64      .eh_frame         CIE + one FDE per region + terminator    (sh_addr = EH_BASE)
 *   (8)      .symtab           null symbol + one STT_FUNC per region
 *            .strtab           "\0" + region names
 *            .shstrtab         section names
 *   (8)      section headers   [0] null
 *                              [1..k] .text, SHT_NOBITS, sh_addr = code address, one per run of
 *                                     contiguous regions
 *                              [k+1] .eh_frame [k+2] .symtab [k+3] .strtab [k+4] .shstrtab
 *
 * Why ET_DYN: symbol values are then plain addresses (in ET_REL they are section offsets), which
 * is what readelf, perf and our own reader expect; gdb 13 gives each allocated section of a JIT
 * object the address in its header, so either type loads at the right place (checked by
 * tests/integration/gdb_jit.sh).
 *
 * Why several .text sections: an image's .text must not claim addresses of code it does not
 * describe (other JITs, regions of other images, freed and reused slots), or gdb would name that
 * code after us. Regions that touch (or are separated only by alignment padding below 16 bytes)
 * share one section; any other gap starts a new one.
 *
 * .eh_frame is not SHF_ALLOC: its bytes live only in this image, and an allocated section would
 * claim addresses. Its sh_addr (EH_BASE, the lowest code address) is the base gdb and readelf
 * use for the FDEs' pc-relative addresses.
 */
#include "elfimg.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfi.h"

/* -- Layout --------------------------------------------------------------------------------- */

enum { SEC_FIXED = 5 }; /* null, .eh_frame, .symtab, .strtab, .shstrtab */

static const char SHSTRTAB[] = "\0.text\0.eh_frame\0.symtab\0.strtab\0.shstrtab";
enum { NAME_TEXT = 1, NAME_EH = 7, NAME_SYMTAB = 17, NAME_STRTAB = 25, NAME_SHSTRTAB = 33 };
_Static_assert(sizeof(SHSTRTAB) == 43, "shstrtab offsets");

_Static_assert(sizeof(Elf64_Ehdr) == 64 && sizeof(Elf64_Shdr) == 64 && sizeof(Elf64_Sym) == 24,
               "ELF64 layout");

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static uint64_t addr_of(const struct pyjit_region *r)
{
    return (uint64_t)(uintptr_t)r->code;
}

static int cmp_addr(const void *a, const void *b)
{
    uint64_t x = addr_of(*(const struct pyjit_region *const *)a);
    uint64_t y = addr_of(*(const struct pyjit_region *const *)b);
    return x < y ? -1 : x > y;
}

/* Name of a region without one: "jit_<hex address>" (written into buf). */
static const char *name_of(const struct pyjit_region *r, char buf[32])
{
    if (r->name && r->name[0])
        return r->name;
    snprintf(buf, 32, "jit_%llx", (unsigned long long)addr_of(r));
    return buf;
}

/* Regions at a and b (a before b) share a .text section when nothing fits between them. */
static int same_run(uint64_t a_end, uint64_t b_start)
{
    return b_start == a_end || (b_start - a_end < 16 && b_start % 16 == 0);
}

/* -- Builder -------------------------------------------------------------------------------- */

int elfimg_build(enum pyjit_arch arch, const struct pyjit_region *regions, size_t n, uint8_t **out,
                 size_t *out_len)
{
    if (!regions || n == 0 || !out || !out_len || (arch != PYJIT_ARCH_X86_64 && arch != PYJIT_ARCH_AARCH64))
        return -EINVAL;
    if (n > (SIZE_MAX / sizeof(Elf64_Sym)) / 2)
        return -ENOMEM;

    const struct pyjit_region **sorted = malloc(n * sizeof(*sorted));
    if (!sorted)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        sorted[i] = &regions[i];
    qsort(sorted, n, sizeof(*sorted), cmp_addr);

    int err = 0;
    size_t runs = 0, strtab_size = 1;
    uint64_t lo = addr_of(sorted[0]), prev_end = 0;
    for (size_t i = 0; i < n; i++) {
        const struct pyjit_region *r = sorted[i];
        uint64_t a = addr_of(r);
        char nb[32];
        if (!r->code || r->size == 0 || a + r->size < a)
            err = -EINVAL;
        else if (i > 0 && a < prev_end)
            err = -EINVAL; /* overlaps the previous region */
        else if (a + r->size - lo > ELFIMG_MAX_SPAN)
            err = -ERANGE;
        if (err)
            goto out;
        if (i == 0 || !same_run(prev_end, a))
            runs++;
        prev_end = a + r->size;
        strtab_size += strlen(name_of(r, nb)) + 1;
    }

    /* .eh_frame, loaded (for pc-relative purposes) at EH_BASE = lo */
    struct cfi_buf eh = {0};
    size_t cie = cfi_cie(&eh, arch);
    for (size_t i = 0; i < n && !err; i++)
        err = cfi_fde(&eh, cie, arch, sorted[i], addr_of(sorted[i]), lo);
    cfi_end(&eh);
    if (!err && eh.oom)
        err = -ENOMEM;
    if (err) {
        cfi_buf_free(&eh);
        goto out;
    }

    size_t nsec = SEC_FIXED + runs;
    if (nsec >= SHN_LORESERVE) {
        cfi_buf_free(&eh);
        err = -E2BIG; /* section indices would need ELF extended numbering */
        goto out;
    }
    size_t off_eh = sizeof(Elf64_Ehdr);
    size_t off_sym = align8(off_eh + eh.len);
    size_t off_str = off_sym + (n + 1) * sizeof(Elf64_Sym);
    size_t off_shstr = off_str + strtab_size;
    size_t off_sh = align8(off_shstr + sizeof(SHSTRTAB));
    size_t total = off_sh + nsec * sizeof(Elf64_Shdr);

    uint8_t *img = calloc(1, total);
    if (!img) {
        cfi_buf_free(&eh);
        err = -ENOMEM;
        goto out;
    }

    Elf64_Ehdr *eh_hdr = (Elf64_Ehdr *)img;
    memcpy(eh_hdr->e_ident, ELFMAG, SELFMAG);
    eh_hdr->e_ident[EI_CLASS] = ELFCLASS64;
    eh_hdr->e_ident[EI_DATA] = ELFDATA2LSB;
    eh_hdr->e_ident[EI_VERSION] = EV_CURRENT;
    eh_hdr->e_ident[EI_OSABI] = ELFOSABI_NONE;
    eh_hdr->e_type = ET_DYN;
    eh_hdr->e_machine = (Elf64_Half)arch;
    eh_hdr->e_version = EV_CURRENT;
    eh_hdr->e_shoff = off_sh;
    eh_hdr->e_ehsize = sizeof(Elf64_Ehdr);
    eh_hdr->e_shentsize = sizeof(Elf64_Shdr);
    eh_hdr->e_shnum = (Elf64_Half)nsec;
    eh_hdr->e_shstrndx = (Elf64_Half)(nsec - 1);

    memcpy(img + off_eh, eh.p, eh.len);
    memcpy(img + off_shstr, SHSTRTAB, sizeof(SHSTRTAB));

    /* .text runs and symbols, in address order */
    Elf64_Shdr *sh = (Elf64_Shdr *)(img + off_sh);
    Elf64_Sym *sym = (Elf64_Sym *)(img + off_sym);
    char *strtab = (char *)img + off_str;
    size_t str_pos = 1, sec = 0;
    for (size_t i = 0; i < n; i++) {
        const struct pyjit_region *r = sorted[i];
        uint64_t a = addr_of(r);
        if (i == 0 || !same_run(sh[sec].sh_addr + sh[sec].sh_size, a)) {
            sec++;
            sh[sec] = (Elf64_Shdr){
                .sh_name = NAME_TEXT,
                .sh_type = SHT_NOBITS, /* the code stays where it is */
                .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
                .sh_addr = a,
                .sh_offset = off_eh, /* NOBITS: no bytes in the file */
                .sh_addralign = 1,
            };
        }
        sh[sec].sh_size = a + r->size - sh[sec].sh_addr;
        char nb[32];
        const char *name = name_of(r, nb);
        size_t len = strlen(name) + 1;
        memcpy(strtab + str_pos, name, len);
        sym[i + 1] = (Elf64_Sym){
            .st_name = (Elf64_Word)str_pos,
            .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
            .st_other = STV_DEFAULT,
            .st_shndx = (Elf64_Section)sec,
            .st_value = a,      /* ET_DYN: an address */
            .st_size = r->size, /* lets gdb and perf bound the name */
        };
        str_pos += len;
    }

    size_t s = runs + 1;
    sh[s] = (Elf64_Shdr){.sh_name = NAME_EH,
                         .sh_type = SHT_PROGBITS,
                         .sh_addr = lo, /* pc-relative base of the FDEs */
                         .sh_offset = off_eh,
                         .sh_size = eh.len,
                         .sh_addralign = 8};
    sh[s + 1] = (Elf64_Shdr){.sh_name = NAME_SYMTAB,
                             .sh_type = SHT_SYMTAB,
                             .sh_offset = off_sym,
                             .sh_size = (n + 1) * sizeof(Elf64_Sym),
                             .sh_link = (Elf64_Word)(s + 2), /* its string table */
                             .sh_info = 1,                   /* first non-local symbol */
                             .sh_addralign = 8,
                             .sh_entsize = sizeof(Elf64_Sym)};
    sh[s + 2] = (Elf64_Shdr){.sh_name = NAME_STRTAB,
                             .sh_type = SHT_STRTAB,
                             .sh_offset = off_str,
                             .sh_size = strtab_size,
                             .sh_addralign = 1};
    sh[s + 3] = (Elf64_Shdr){.sh_name = NAME_SHSTRTAB,
                             .sh_type = SHT_STRTAB,
                             .sh_offset = off_shstr,
                             .sh_size = sizeof(SHSTRTAB),
                             .sh_addralign = 1};

    cfi_buf_free(&eh);
    *out = img;
    *out_len = total;
out:
    free(sorted);
    return err;
}
