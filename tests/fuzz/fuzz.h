/*
 * Helpers shared by the fuzz targets: split one fuzzer input into parameters and a payload.
 *
 *   struct fuzz_in in = { data, size };
 *   uint32_t n = fuzz_u32(&in);   // 0 when the input has run out
 *   ... in.data / in.size: the rest
 */
#ifndef PYEBPF_FUZZ_H
#define PYEBPF_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct fuzz_in {
    const uint8_t *data;
    size_t size;
};

static inline uint64_t fuzz_take(struct fuzz_in *in, size_t n)
{
    uint64_t v = 0;
    if (n > in->size)
        n = in->size;
    memcpy(&v, in->data, n); /* little-endian hosts only, like the formats we read */
    in->data += n;
    in->size -= n;
    return v;
}

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
    return (uint8_t)fuzz_take(in, 1);
}
static inline uint16_t fuzz_u16(struct fuzz_in *in)
{
    return (uint16_t)fuzz_take(in, 2);
}
static inline uint32_t fuzz_u32(struct fuzz_in *in)
{
    return (uint32_t)fuzz_take(in, 4);
}
static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
    return fuzz_take(in, 8);
}

#endif
