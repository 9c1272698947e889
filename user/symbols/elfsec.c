/*
 * elfsec — sections and the build-id of an ELF file (see elfsec.h).
 */
#include "symbols/elfsec.h"

#include <string.h>

Elf_Scn *elfsec_find(Elf *e, const char *want, GElf_Shdr *sh)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(e, &shstrndx) < 0)
        return NULL;
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        if (!gelf_getshdr(s, sh))
            continue;
        const char *n = elf_strptr(e, shstrndx, sh->sh_name);
        if (n && !strcmp(n, want))
            return s;
    }
    return NULL;
}

Elf_Data *elfsec_data(Elf_Scn *s, GElf_Shdr *sh)
{
    if (sh->sh_type == SHT_NOBITS)
        return NULL;
    if ((sh->sh_flags & SHF_COMPRESSED) && elf_compress(s, 0, 0) < 0)
        return NULL;
    return elf_getdata(s, NULL);
}

size_t elfsec_build_id(Elf *e, uint8_t *out, size_t max)
{
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_NOTE)
            continue;
        Elf_Data *d = elf_getdata(s, NULL);
        if (!d)
            continue;
        GElf_Nhdr nh;
        size_t off = 0, name_off, desc_off, next;
        while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
                !memcmp((char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz <= max) {
                memcpy(out, (char *)d->d_buf + desc_off, nh.n_descsz);
                return nh.n_descsz;
            }
            off = next;
        }
    }
    return 0;
}
