/*
 * elfsym_plt — PLT stubs (x86-64 .plt, .plt.sec, .plt.got) and the functions they jump to, found
 * through the GOT slot each stub jumps through and that slot's dynamic relocation. Used by elfsym
 * to give the stubs "name@plt" symbols.
 */
#ifndef PYEBPF_ELFSYM_PLT_H
#define PYEBPF_ELFSYM_PLT_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elfsym_plt_entry {
    uint64_t addr, size; /* link-time address of the stub, its size */
    const char *name;    /* called function (in e's .dynstr); NULL for an IRELATIVE slot: */
    uint64_t resolver;   /* then the address of the IFUNC resolver the slot is resolved by */
    bool bare;           /* jumps through no known slot: PLT0, a lazy IBT entry (name NULL) */
};

/* The stubs of e (none for other machines), in a malloc'ed array. 0 or -ENOMEM. */
int elfsym_plt_read(Elf *e, struct elfsym_plt_entry **out, size_t *n);
/* The link-time addresses [*lo, *hi) the stub sections span; false, and an empty span [0, 0),
 * when e has none (or is not x86-64): elfsym_plt_read would find no stub. */
bool elfsym_plt_span(Elf *e, uint64_t *lo, uint64_t *hi);

#endif
