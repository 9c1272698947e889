/*
 * In-memory ELF image describing JIT regions to a debugger: NOBITS .text at the code's own
 * address (the code is not copied), .eh_frame, .symtab with one STT_FUNC per region.
 */
#ifndef PYJIT_ELFIMG_H
#define PYJIT_ELFIMG_H

#include <stddef.h>
#include <stdint.h>

#include "pyjit.h"

/* All regions of one image must lie within this distance of each other (the .eh_frame uses
 * 32-bit pc-relative addresses). */
#define ELFIMG_MAX_SPAN (1ull << 30)

/* Builds an ELF64 ET_DYN image for n >= 1 regions (any order, non-overlapping, each with a
 * valid unwind description). *out is malloc'd; free() it. Returns 0, -EINVAL (bad or
 * overlapping region, arch unknown), -ERANGE (regions farther apart than ELFIMG_MAX_SPAN), -E2BIG
 * (more than ~65000 separate runs of code) or -ENOMEM. */
int elfimg_build(enum pyjit_arch arch, const struct pyjit_region *regions, size_t n, uint8_t **out,
                 size_t *out_len);

#endif
