/*
 * CFI encoder: .eh_frame bytes (CIE + FDEs) for JIT regions, and the 20-byte .eh_frame_hdr
 * that perf's jitdump UNWINDING_INFO wants.
 *
 * Addresses in FDEs are DW_EH_PE_pcrel|sdata4 (CIE augmentation "zR", R = 0x1b), so the bytes
 * are valid wherever they are loaded as long as the caller says where (`buf_addr`: the address
 * the first byte of the buffer will have). Independent decoders: readelf --debug-dump=frames,
 * llvm-dwarfdump --eh-frame.
 */
#ifndef PYJIT_CFI_H
#define PYJIT_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pyjit.h"

/* A growable byte buffer; `oom` latches the first allocation failure. */
struct cfi_buf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
};

void cfi_buf_free(struct cfi_buf *b);

/* Appends the architecture's CIE; returns its offset in b. */
size_t cfi_cie(struct cfi_buf *b, enum pyjit_arch arch);

/* Appends one FDE for region r whose code starts at `pc`, pointing to the CIE at `cie_off`.
 * `buf_addr` is the load address of b->p[0]. Returns 0 or -EINVAL (bad region) / -ENOMEM. */
int cfi_fde(struct cfi_buf *b, size_t cie_off, enum pyjit_arch arch, const struct pyjit_region *r,
            uint64_t pc, uint64_t buf_addr);

/* Appends the zero terminator. */
void cfi_end(struct cfi_buf *b);

/* .eh_frame_hdr with one table entry (version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4,
 * table datarel|sdata4), for a header loaded at hdr_addr. */
#define CFI_EH_FRAME_HDR_SIZE 20
void cfi_eh_frame_hdr(uint8_t out[CFI_EH_FRAME_HDR_SIZE], uint64_t hdr_addr, uint64_t eh_frame_addr,
                      uint64_t pc, uint64_t fde_addr);

#endif
