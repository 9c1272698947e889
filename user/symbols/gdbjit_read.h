/*
 * gdbjit_read — reader of the GDB JIT interface (jitdump/gdbjit_format.h) of another process:
 * the machine code CPython's own JIT (3.15, PYTHON_JIT=1) registered there, read from outside.
 *
 * The target keeps a descriptor (`__jit_debug_descriptor`; for CPython, pyrt_attach finds it)
 * heading a doubly linked list of entries; each entry points at a small in-memory ELF (ET_DYN)
 * holding the code address in .text, one FUNC symbol (CPython: `py::jit:executor`) and an
 * .eh_frame:
 *
 *   __jit_debug_descriptor ─first─▶ jit_code_entry ─next─▶ jit_code_entry ─▶ ... NULL
 *                                        └─▶ "\x7fELF" .text(sh_addr = code) .eh_frame .symtab
 *
 * The list is read level by level: each process_vm_readv fetches the next entry and the image of
 * the previous one together, so n entries cost n + 1 calls. Images already known (same address
 * and size) are not read again.
 */
#ifndef PYEBPF_GDBJIT_READ_H
#define PYEBPF_GDBJIT_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/remote.h"
#include "unwind/cfi_read.h"

struct gdbjit_read_region {
    uint64_t start, end;        /* the executor's code */
    char name[64];              /* the FUNC symbol of the image ("py::jit:executor") */
    uint64_t image, image_size; /* where the ELF lies in the target (cache key) */
    uint8_t *eh_frame;          /* copy of the image's .eh_frame ... */
    size_t eh_frame_size;
    uint64_t eh_frame_addr;    /* ... and the address it describes itself at */
    struct cfi_read_table cfi; /* over eh_frame; .data NULL when it could not be parsed */
};

struct gdbjit_read_stats {
    uint64_t reads;         /* list walks */
    uint64_t calls;         /* process_vm_readv calls they made */
    uint64_t images_read;   /* ELF images fetched */
    uint64_t images_reused; /* ... found unchanged in the previous list */
    uint64_t bad_images;    /* not an ELF with .text and a symbol */
};

struct gdbjit_read {
    uint64_t descriptor;
    struct gdbjit_read_region *v; /* sorted by start */
    size_t n;
    bool changed; /* the last read changed the list (false: v and every region kept in place) */
    struct gdbjit_read_stats st;
};

/* descriptor: the target's __jit_debug_descriptor (0: none; every read finds no region). */
void gdbjit_read_init(struct gdbjit_read *j, uint64_t descriptor);
/* Re-reads the list. Returns the number of regions, or -errno (-ESRCH: the process is gone). Up
 * to max_entries entries are followed (a list that changes under the reader may loop). */
int gdbjit_read_list(struct gdbjit_read *j, struct remote *r, size_t max_entries);
void gdbjit_read_free(struct gdbjit_read *j);

#endif
