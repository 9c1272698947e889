/*
 * elfsec — an ELF file's sections by name, their bytes (decompressed where SHF_COMPRESSED), and
 * its GNU build-id note: the libelf steps elfsym and elfsym_plt both take.
 */
#ifndef PYEBPF_ELFSEC_H
#define PYEBPF_ELFSEC_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/* The first section named `want` (*sh filled), or NULL. */
Elf_Scn *elfsec_find(Elf *e, const char *want, GElf_Shdr *sh);
/* The section's bytes, or NULL (SHT_NOBITS, or not readable). */
Elf_Data *elfsec_data(Elf_Scn *s, GElf_Shdr *sh);
/* The NT_GNU_BUILD_ID note's bytes into out (at most max); returns their number, 0 for none. */
size_t elfsec_build_id(Elf *e, uint8_t *out, size_t max);

#endif
