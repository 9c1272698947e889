/*
 * Fuzz target: validation of CPython 3.13's _Py_DebugOffsets (user/python/pyrt.c), the table a target
 * process hands us about its own struct layouts — i.e. input the target controls.
 *
 * Input: the first bytes of _PyRuntime.
 * When pyrt_layout_from_debug_offsets accepts the table, every offset the frame reader will use
 * must lie inside the bytes it reads for that object (the read sizes derived from the same
 * table), and those sizes must stay small: a table that passes validation must never make the
 * collector index outside its buffers.
 */
#include <string.h>

#include "fuzz.h"
#include "python/pyrt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(uint64_t off, uint64_t width, uint64_t start, uint64_t size)
{
    if (off < start || off - start > size || width > size - (off - start))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pyrt_layout L;
    char err[256];
    memset(&L, 0, sizeof(L));
    err[0] = '\0';
    if (pyrt_layout_from_debug_offsets(&L, data, size, err, sizeof(err)) != 0) {
        if (!memchr(err, '\0', sizeof(err)) || !err[0])
            __builtin_trap(); /* a refusal always says why */
        return 0;
    }
    /* thread state: one read of ts_read_size bytes */
    inside(L.ts_next, 8, 0, L.ts_read_size);
    inside(L.ts_interp, 8, 0, L.ts_read_size);
    inside(L.ts_native_thread_id, 8, 0, L.ts_read_size);
    inside(L.ts_current_frame, 8, 0, L.ts_read_size);
    /* interpreter frame: one read of f_read_size bytes */
    inside(L.f_code, 8, 0, L.f_read_size);
    inside(L.f_previous, 8, 0, L.f_read_size);
    inside(L.f_instr, 8, 0, L.f_read_size);
    inside(L.f_owner, 1, 0, L.f_read_size);
    /* code object: one read of co_hdr_size bytes from co_hdr_start */
    inside(L.ob_type, 8, L.co_hdr_start, L.co_hdr_size);
    inside(L.co_firstlineno, 4, L.co_hdr_start, L.co_hdr_size);
    inside(L.co_filename, 8, L.co_hdr_start, L.co_hdr_size);
    inside(L.co_name, 8, L.co_hdr_start, L.co_hdr_size);
    inside(L.co_qualname, 8, L.co_hdr_start, L.co_hdr_size);
    inside(L.co_linetable, 8, L.co_hdr_start, L.co_hdr_size);
    if (L.co_hdr_size > (1u << 20) || L.ts_read_size > (1u << 20) || L.f_read_size > (1u << 20))
        __builtin_trap();
    return 0;
}
