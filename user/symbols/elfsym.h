/*
 * elfsym — what the collector needs from one ELF file: function symbols (.symtab, else
 * .dynsym, or a separate debug file's .symtab found by build-id / .gnu_debuglink), the PT_LOAD
 * segments (to turn a runtime address into a link-time one), and its CFI table.
 *
 * Files are cached by build-id (by device, inode, size and mtime when they have none) and
 * shared between processes and mappings; each holder takes a reference.
 *
 *   runtime ip ──(- bias)──▶ link-time vaddr ──binary search──▶ symbol, CFI row
 *   bias = map.start - map.offset + load.p_offset - load.p_vaddr   (load: PT_LOAD holding map.offset)
 */
#ifndef PYEBPF_ELFSYM_H
#define PYEBPF_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/cfi_read.h"

struct elf_file;
struct elfsym_cache;

int elfsym_cache_new(struct elfsym_cache **out);
/* Frees the cache; files still referenced stay alive until their last elfsym_put. */
void elfsym_cache_free(struct elfsym_cache *c);

/* Gets the file open on fd (the caller keeps fd; the bytes are mapped privately, read-only use).
 * `name` is the path to show; `root` the prefix under which debug files are looked for
 * ("/proc/PID/root" or "" ). Returns 0 (with a reference) or negative errno. */
int elfsym_open(struct elfsym_cache *c, int fd, const char *name, const char *root, struct elf_file **out);
/* Same for an ELF image already in memory (the vDSO); takes ownership of the malloc'ed image. */
int elfsym_open_image(struct elfsym_cache *c, void *image, size_t size, const char *name,
                      struct elf_file **out);
void elfsym_get(struct elf_file *f);
void elfsym_put(struct elf_file *f);

/* Bias for a mapping of f at map_start with file offset map_offset. -ENOENT when no PT_LOAD
 * holds that offset. */
int elfsym_bias(const struct elf_file *f, uint64_t map_start, uint64_t map_offset, uint64_t *bias);

/* The function symbol containing link-time address vaddr, or NULL; *offset = vaddr - start.
 * Not const: the PLT stubs' "name@plt" symbols are made at the first lookup among them. */
const char *elfsym_lookup(struct elf_file *f, uint64_t vaddr, uint64_t *offset);

/* The CFI table (.eh_frame, else .debug_frame), or NULL when the file has none. */
const struct cfi_read_table *elfsym_cfi(const struct elf_file *f);

const char *elfsym_name(const struct elf_file *f);
/* Symbols known so far (the PLT stubs' are made at the first lookup among them). */
size_t elfsym_count(const struct elf_file *f);
/* Build-id bytes (NULL and 0 when none). */
const uint8_t *elfsym_build_id(const struct elf_file *f, size_t *len);
/* True when the symbols came from a separate debug file. */
bool elfsym_from_debug_file(const struct elf_file *f);

#endif
