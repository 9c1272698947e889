/*
 * dwcur — a bounds-checked reader of DWARF bytes (fixed-size little-endian values, LEB128),
 * shared by the CFI decoder and the expression evaluator. A read past the end sets `err` and
 * yields 0; callers check `err` once after a group of reads.
 */
#ifndef PYEBPF_DWCUR_H
#define PYEBPF_DWCUR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dwcur {
    const uint8_t *p, *end;
    const uint8_t *base; /* data[0] */
    uint64_t base_vaddr; /* its link-time address, for pcrel */
    uint64_t data_vaddr; /* for datarel (the .eh_frame_hdr start) */
    bool err;
};

static inline bool dwcur_need(struct dwcur *c, size_t n)
{
    if (c->err || (size_t)(c->end - c->p) < n) {
        c->err = true;
        return false;
    }
    return true;
}

static inline uint64_t dwcur_u(struct dwcur *c, size_t n)
{
    if (!dwcur_need(c, n))
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    c->p += n;
    return v;
}

static inline int64_t dwcur_s(struct dwcur *c, size_t n)
{
    uint64_t v = dwcur_u(c, n);
    if (n < 8 && (v >> (8 * n - 1)) & 1)
        v |= ~0ull << (8 * n);
    return (int64_t)v;
}

static inline uint64_t dwcur_uleb(struct dwcur *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (;;) {
        if (!dwcur_need(c, 1))
            return 0;
        uint8_t b = *c->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            return v;
    }
}

static inline int64_t dwcur_sleb(struct dwcur *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        if (!dwcur_need(c, 1))
            return 0;
        b = *c->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= ~0ull << shift;
    return (int64_t)v;
}

#endif
