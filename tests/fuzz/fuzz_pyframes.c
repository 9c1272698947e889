/*
 * libFuzzer target for the parsers of the remote Python reader: the location table decoder
 * (first byte: which; then firstlineno from two bytes) and the _Py_DebugOffsets validator.
 *   make fuzz; build/fuzz/fuzz_pyframes -max_total_time=60 [corpus]
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "linetable.h"
#include "pyrt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    if (data[0] & 1) {
        struct linetable lt;
        int32_t first = (int32_t)(data[1] | data[2] << 8);
        if (linetable_decode(&lt, data + 3, size - 3, first) == 0 || lt.n) {
            for (int64_t u = -1; u < 4 * (int64_t)size; u++) {
                int32_t line = linetable_line(&lt, u);
                (void)line;
            }
        }
        linetable_free(&lt);
    } else {
        struct pyrt_layout L;
        char err[256];
        uint8_t img[1024] = {0};
        memcpy(img, "xdebugpy", 8);
        size_t n = size - 1 < sizeof(img) - 8 ? size - 1 : sizeof(img) - 8;
        memcpy(img + 8, data + 1, n);
        if (pyrt_layout_from_debug_offsets(&L, img, sizeof(img), err, sizeof(err)) == 0) {
            /* Whatever passed must be usable without overflow by the reader. */
            if (L.ts_read_size > (1u << 20) || L.f_read_size > (1u << 20) || L.co_hdr_size > (2u << 20) ||
                L.co_hdr_start > L.co_firstlineno || L.co_hdr_start > L.co_qualname ||
                L.co_hdr_start > L.ob_type || L.co_hdr_start + L.co_hdr_size < L.co_linetable + 8)
                __builtin_trap();
        }
    }
    return 0;
}
