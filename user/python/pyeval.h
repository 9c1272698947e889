/*
 * pyeval — where the eval loop's code lies in the interpreter's file.
 *
 * The symbol `_PyEval_EvalFrameDefault` (in .dynsym even in stripped builds) is not always the
 * whole loop: Debian's 3.14 and 3.15 executables keep an 844-byte entry under that name and the
 * 82 KB body in a hot/cold split part with no symbol, which the entry jumps into. The ranges
 * found here (file offsets, as in `module+0xOFF` frame names):
 *
 *   [symbol start, symbol end)  +  each .eh_frame_hdr FDE range of at least 8 KiB that a
 *                                   `jmp rel32` / `jcc rel32` of the symbol's code lands in
 */
#ifndef PYEBPF_PYEVAL_H
#define PYEBPF_PYEVAL_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#define PYEVAL_MAX_RANGES 8

struct pyeval_ranges {
    size_t n;
    uint64_t start[PYEVAL_MAX_RANGES], end[PYEVAL_MAX_RANGES]; /* file offsets */
};

/* Fills r from the interpreter's file, open in e over a mapping of it (its code is read in place),
 * given its _PyEval_EvalFrameDefault (link-time address and size; 0: none, r is empty). pyrt finds
 * the symbol with its own, in the file it already has open for the runtime. */
void pyeval_find(Elf *e, uint64_t sym, uint64_t symsz, struct pyeval_ranges *r);

#endif
