/*
 * Fuzz target: the perf map reader (user/symbols/perfmap_read.c). Input: the text of a perf-PID.map
 * (not NUL-terminated: the reader is given a length). Checks the promises of perfmap_read.h: the
 * table is sorted by start, names are readable strings, and perfmap_read_find returns an entry
 * that covers the address asked for.
 */
#include <string.h>

#include "fuzz.h"
#include "symbols/perfmap_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static void check_find(const struct perfmap_read_table *t, uint64_t addr)
{
    const struct perfmap_read_entry *e = perfmap_read_find(t, addr);
    if (e && !(addr >= e->start && addr - e->start < e->size))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct perfmap_read_table t;
    memset(&t, 0xa5, sizeof(t));
    if (perfmap_read_buf((const char *)data, size, &t) != 0) {
        perfmap_read_free(&t);
        return 0;
    }
    for (size_t i = 0; i < t.n; i++) {
        const struct perfmap_read_entry *e = &t.v[i];
        if (i > 0 && t.v[i - 1].start > e->start)
            __builtin_trap();
        if (e->name)
            sink += strlen(e->name);
        check_find(&t, e->start);
        if (e->size)
            check_find(&t, e->start + e->size - 1);
        check_find(&t, e->start + e->size);
        check_find(&t, e->start - 1);
    }
    check_find(&t, 0);
    check_find(&t, UINT64_MAX);
    perfmap_read_free(&t);
    return 0;
}
