/*
 * Fuzz target: the CPython location-table decoder (user/python/linetable.c). The table bytes come
 * from the target's memory (co_linetable of a code object), so they are hostile input.
 *
 * Input: i32 co_firstlineno, u32 a code unit to look up, then the table bytes.
 * Checks: decoded ranges are sorted, non-empty and non-overlapping (the binary search relies on
 * it); linetable_line agrees with a linear scan over the ranges for the unit asked for and for
 * every range's first and last unit; a unit before 0 gives co_firstlineno.
 */
#include <string.h>

#include "fuzz.h"
#include "python/linetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int32_t scan(const struct linetable *lt, int64_t unit)
{
    for (uint32_t i = 0; i < lt->n; i++)
        if (unit >= lt->r[i].start && unit < lt->r[i].end)
            return lt->r[i].line;
    return -1;
}

static void check_unit(const struct linetable *lt, int64_t unit)
{
    if (linetable_line(lt, unit) != scan(lt, unit))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = {data, size};
    int32_t first = (int32_t)fuzz_u32(&in);
    uint32_t unit = fuzz_u32(&in);
    struct linetable lt;
    memset(&lt, 0, sizeof(lt));
    int rc = linetable_decode(&lt, in.data, in.size, first);
    if (rc != 0 && rc != -22 /* -EINVAL keeps what decoded */) {
        linetable_free(&lt);
        return 0;
    }
    for (uint32_t i = 0; i < lt.n; i++) {
        if (lt.r[i].start >= lt.r[i].end)
            __builtin_trap();
        if (i > 0 && lt.r[i - 1].end > lt.r[i].start)
            __builtin_trap();
        check_unit(&lt, lt.r[i].start);
        check_unit(&lt, lt.r[i].end - 1);
    }
    check_unit(&lt, unit);
    if (linetable_line(&lt, -1) != first)
        __builtin_trap();
    linetable_free(&lt);
    return 0;
}
