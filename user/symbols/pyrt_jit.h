/*
 * pyrt_jit — the machine code CPython's own JIT (3.15, PYTHON_JIT=1) registered with the GDB JIT
 * interface, read from outside the process.
 *
 * CPython keeps a GDB-style descriptor (`__jit_debug_descriptor`, found by pyrt_attach) heading a
 * doubly linked list of entries; each entry points at a small in-memory ELF (ET_DYN) holding the
 * executor's code address in .text, one FUNC symbol (`py::jit:executor`) and an .eh_frame:
 *
 *   __jit_debug_descriptor {u32 version, u32 action, u64 relevant, u64 first}
 *        └─first─▶ entry {next, prev, symfile_addr, symfile_size} ─next─▶ entry ─▶ ... 0
 *                          └─▶ "\x7fELF" .text(sh_addr = code) .eh_frame .symtab
 *
 * The list is read level by level: each process_vm_readv fetches the next entry and the image of
 * the previous one together, so n entries cost n + 1 calls. Images already known (same address
 * and size) are not read again.
 */
#ifndef PYEBPF_PYRT_JIT_H
#define PYEBPF_PYRT_JIT_H

#include <stddef.h>
#include <stdint.h>

#include "capture/remote.h"
#include "unwind/cfi_read.h"

/* The GDB JIT interface's structs, as the target holds them (x86-64/aarch64, LP64). */
struct pyrt_jit_descriptor {
    uint32_t version; /* 1 */
    uint32_t action_flag;
    uint64_t relevant_entry, first_entry;
};
_Static_assert(sizeof(struct pyrt_jit_descriptor) == 24, "jit_descriptor is 24 bytes");

struct pyrt_jit_entry {
    uint64_t next, prev, symfile_addr, symfile_size;
};
_Static_assert(sizeof(struct pyrt_jit_entry) == 32, "jit_code_entry is 32 bytes");

struct pyrt_jit_region {
    uint64_t start, end;        /* the executor's code */
    char name[64];              /* the FUNC symbol of the image ("py::jit:executor") */
    uint64_t image, image_size; /* where the ELF lies in the target (cache key) */
    uint8_t *eh_frame;          /* copy of the image's .eh_frame ... */
    size_t eh_frame_size;
    uint64_t eh_frame_addr; /* ... and the address it describes itself at */
    struct cfi_table cfi;   /* over eh_frame; .data NULL when it could not be parsed */
};

struct pyrt_jit_stats {
    uint64_t reads;         /* list walks */
    uint64_t calls;         /* process_vm_readv calls they made */
    uint64_t images_read;   /* ELF images fetched */
    uint64_t images_reused; /* ... found unchanged in the previous list */
    uint64_t bad_images;    /* not an ELF with .text and a symbol */
};

struct pyrt_jit {
    uint64_t descriptor;
    struct pyrt_jit_region *v; /* sorted by start */
    size_t n;
    struct pyrt_jit_stats st;
};

/* descriptor: pyrt's rt.jit_descriptor (0: the interpreter has no JIT interface). */
void pyrt_jit_init(struct pyrt_jit *j, uint64_t descriptor);
/* Re-reads the list. Returns the number of regions, or -errno (-ESRCH: the process is gone). Up
 * to max_entries entries are followed (a list that changes under the reader may loop). */
int pyrt_jit_read(struct pyrt_jit *j, struct remote *r, size_t max_entries);
/* The region holding addr, or NULL. */
const struct pyrt_jit_region *pyrt_jit_find(const struct pyrt_jit *j, uint64_t addr);
void pyrt_jit_free(struct pyrt_jit *j);

#endif
