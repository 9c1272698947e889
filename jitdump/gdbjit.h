/*
 * GDB JIT interface: registers in-memory ELF images (elfimg) with any gdb attached now or later.
 *
 * Each added region is registered at once in an image of its own; images are merged in levels
 * (16 one-region images into one of 16, 16 of those into one of 256 = `batch`), registering the
 * merged image before unregistering its parts, so a region is visible from the moment gdbjit_add
 * returns and gdb never holds more than a few dozen images plus one per `batch` regions.
 * Removing a region rebuilds its image without it (or drops the image when it was the last).
 */
#ifndef PYJIT_GDBJIT_H
#define PYJIT_GDBJIT_H

#include <stdint.h>

#include "gdbjit_format.h"
#include "pyjit.h"

#define GDBJIT_DEFAULT_BATCH 256

/* The process-wide symbols gdb looks for (weak: several JITs in one process share them). */
extern struct jit_descriptor __jit_debug_descriptor;
void __jit_debug_register_code(void);

struct gdbjit;

/* batch: regions per top-level image; 0: GDBJIT_DEFAULT_BATCH; 1: one image per region. */
int gdbjit_open(struct gdbjit **out, enum pyjit_arch arch, unsigned batch);
/* Copies r (name, CFI bytes) and makes it visible to gdb under `id` (unique per gdbjit).
 * -EINVAL for a malformed region (nothing registered), -EEXIST for a used id, -ENOMEM.
 * A region overlapping an older one replaces it when their images merge. */
int gdbjit_add(struct gdbjit *g, const struct pyjit_region *r, uint64_t id);
/* Forgets region `id`; -ENOENT if unknown. */
int gdbjit_remove(struct gdbjit *g, uint64_t id);
/* Number of images currently registered by g (for tests and statistics). */
unsigned gdbjit_images(const struct gdbjit *g);
/* Unregisters and frees everything. */
void gdbjit_close(struct gdbjit *g);

#endif
