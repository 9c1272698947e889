/*
 * Fuzz target: the ELF symbol reader (user/symbols/elfsym.c, on libelf) as the collector uses it for
 * each mapped file. Input: the bytes of an ELF file, opened from memory with elfsym_open_image
 * (the vDSO path). Then every PT_LOAD bias, symbol lookups across the file's address range and
 * a few CFI lookups are exercised; returned strings must be readable.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "symbols/elfsym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct elfsym_cache *c;
    if (elfsym_cache_new(&c) != 0)
        return 0;
    void *image = malloc(size ? size : 1);
    if (!image) {
        elfsym_cache_free(c);
        return 0;
    }
    memcpy(image, data, size);
    struct elf_file *f;
    if (elfsym_open_image(c, image, size, "fuzz.elf", &f) != 0) {
        elfsym_cache_free(c);
        return 0;
    }
    sink += strlen(elfsym_name(f));
    size_t idlen;
    const uint8_t *id = elfsym_build_id(f, &idlen);
    for (size_t i = 0; id && i < idlen; i++)
        sink += id[i];
    sink += elfsym_from_debug_file(f);

    /* Addresses spread over the file's mapped range and a little beyond. */
    uint64_t bias;
    for (uint64_t off = 0; off < size + 4096; off += 512)
        if (elfsym_bias(f, 0x7f0000000000ull, off & ~4095ull, &bias) == 0)
            sink += bias;
    size_t n = elfsym_count(f);
    for (uint64_t a = 0; a < size + 0x1000 && a < (1u << 20); a += 61) {
        uint64_t offset;
        const char *name = elfsym_lookup(f, a, &offset);
        if (name)
            sink += strlen(name) + offset;
    }
    uint64_t offset;
    if (elfsym_lookup(f, UINT64_MAX, &offset))
        sink += offset;
    /* Function starts as the CFI knows them: where symbols are, whatever the link address. */
    const struct cfi_read_table *t = elfsym_cfi(f);
    if (t) {
        struct cfi_row row;
        size_t nf = cfi_read_count(t), step = nf > 64 ? nf / 64 : 1;
        for (size_t i = 0; i < nf; i += step) {
            uint64_t pc;
            if (t->index && i < t->nindex) {
                pc = t->index[i].pc;
            } else if (t->hdr_table && i < t->hdr_count) {
                int32_t rel;
                memcpy(&rel, t->hdr_table + 8 * i, 4);
                pc = t->hdr_vaddr + (uint64_t)(int64_t)rel;
            } else {
                break;
            }
            const char *sym = elfsym_lookup(f, pc + 1, &offset);
            if (sym)
                sink += strlen(sym);
            if (cfi_read_row(t, pc + 1, &row) == 0 && !(pc + 1 >= row.pc_start && pc + 1 < row.pc_end))
                __builtin_trap();
        }
    }
    sink += n;
    elfsym_put(f);
    elfsym_cache_free(c);
    return 0;
}
