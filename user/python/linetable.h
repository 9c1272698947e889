/*
 * linetable — CPython 3.11+ location table (co_linetable) → line numbers.
 *
 * The table is a sequence of entries, each covering 1..8 code units (2 bytes each):
 *
 *   first byte  1 ccc c lll     c = code (0..15), l = units - 1
 *               │ └──┴─ code
 *               └ start of an entry
 *   code 0..9   short form: line unchanged, 1 column byte follows
 *   code 10..12 one-line form: line += code - 10, 2 column bytes follow
 *   code 13     no columns: line += svarint
 *   code 14     long form: line += svarint, end line, start column, end column (varints)
 *   code 15     no location (line -1, like co_lines() giving None)
 *
 *   varint: 6-bit groups, least significant first, 0x40 = more follows
 *   svarint: v >> 1, negated when v & 1
 *
 * Lines start at co_firstlineno. The decoder turns a table into sorted ranges once (the code
 * object cache keeps them) and answers address → line by binary search.
 */
#ifndef PYEBPF_LINETABLE_H
#define PYEBPF_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

struct linetable_range {
    uint32_t start; /* first code unit */
    uint32_t end;   /* one past the last code unit */
    int32_t line;   /* -1: no location */
};

struct linetable {
    struct linetable_range *r;
    uint32_t n;
    int32_t firstlineno;
};

/* Decodes `len` bytes of a location table. Adjacent entries with the same line are merged.
 * Returns 0, -EINVAL for a malformed table (the ranges decoded up to the fault are kept), or
 * -ENOMEM. */
int linetable_decode(struct linetable *lt, const uint8_t *tab, size_t len, int32_t firstlineno);

/* Line of code unit `unit` (instruction offset / 2), as PyCode_Addr2Line: a negative unit gives
 * co_firstlineno; a unit past the table or in a no-location entry gives -1. */
int32_t linetable_line(const struct linetable *lt, int64_t unit);

void linetable_free(struct linetable *lt);

#endif
