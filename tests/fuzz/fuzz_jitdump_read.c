/*
 * Fuzz target: the jitdump reader (user/symbols/jitdump_read.c). Input: the bytes of a jit-PID.dump file.
 * Beyond "no crash", checks what callers rely on: the parse never claims more bytes than it was
 * given, every string and blob it returns is readable to its stated length, and jitdump_read_find
 * returns a region that covers the address asked for.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "symbols/jitdump_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void touch(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += b[i];
    sink += s;
}

static void check_find(const struct jitdump_read_dump *d, uint64_t addr)
{
    const struct jitdump_read_region *r = jitdump_read_find(d, addr);
    if (r && !(addr >= r->addr && addr - r->addr < r->size))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jitdump_read_dump d;
    memset(&d, 0xa5, sizeof(d)); /* the reader must initialise it whatever happens */
    int rc = jitdump_read_parse(data, size, &d);
    if (!jitdump_read_strerror(rc))
        __builtin_trap();
    if (d.consumed > size)
        __builtin_trap();
    for (size_t i = 0; i < d.nregions; i++) {
        const struct jitdump_read_region *r = &d.regions[i];
        if (r->name)
            touch(r->name, strlen(r->name) + 1);
        touch(r->eh_frame, r->eh_frame ? r->eh_frame_size : 0);
        touch(r->eh_frame_hdr, r->eh_frame_hdr ? r->eh_frame_hdr_size : 0);
        for (size_t j = 0; j < r->nlines; j++)
            if (r->lines[j].file)
                touch(r->lines[j].file, strlen(r->lines[j].file) + 1);
        check_find(&d, r->addr);
        if (r->size)
            check_find(&d, r->addr + r->size - 1);
        check_find(&d, r->addr + r->size);
    }
    check_find(&d, 0);
    check_find(&d, UINT64_MAX);
    jitdump_read_free(&d);
    return 0;
}
