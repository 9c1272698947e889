/* linetable — CPython location table decoder (format in linetable.h). */
#include "python/linetable.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

struct cursor {
    const uint8_t *p, *end;
    bool bad;
};

static uint32_t varint(struct cursor *c)
{
    uint32_t v = 0;
    unsigned shift = 0;

    for (;;) {
        /* A varint never starts a new entry (bit 7): running into one means a broken table. */
        if (c->p >= c->end || (*c->p & 0x80) || shift > 30) {
            c->bad = true;
            return 0;
        }
        uint8_t b = *c->p++;
        v |= (uint32_t)(b & 63) << shift;
        shift += 6;
        if (!(b & 64))
            return v;
    }
}

static int32_t svarint(struct cursor *c)
{
    uint32_t v = varint(c);
    return (v & 1) ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
}

static void skip(struct cursor *c, size_t n)
{
    if ((size_t)(c->end - c->p) < n) {
        c->bad = true;
        c->p = c->end;
        return;
    }
    c->p += n;
}

static int push(struct linetable *lt, uint32_t *cap, uint32_t start, uint32_t units, int32_t line)
{
    if (lt->n && lt->r[lt->n - 1].line == line && lt->r[lt->n - 1].end == start) {
        lt->r[lt->n - 1].end = start + units;
        return 0;
    }
    if (lt->n == *cap) {
        uint32_t ncap = *cap ? *cap * 2 : 16;
        struct linetable_range *nr = realloc(lt->r, ncap * sizeof(*nr));
        if (!nr)
            return -ENOMEM;
        lt->r = nr;
        *cap = ncap;
    }
    lt->r[lt->n++] = (struct linetable_range){start, start + units, line};
    return 0;
}

int linetable_decode(struct linetable *lt, const uint8_t *tab, size_t len, int32_t firstlineno)
{
    struct cursor c = {tab, tab + len, false};
    uint32_t cap = 0, unit = 0;
    int64_t line = firstlineno; /* 64-bit: hostile deltas must not overflow (checked below) */

    *lt = (struct linetable){.firstlineno = firstlineno};
    while (c.p < c.end) {
        uint8_t b = *c.p++;
        if (!(b & 0x80))
            return -EINVAL;
        unsigned code = (b >> 3) & 15, units = (b & 7) + 1;
        int64_t this_line = line;

        if (code <= 9) {
            skip(&c, 1);
        } else if (code <= 12) {
            line += (int64_t)code - 10;
            this_line = line;
            skip(&c, 2);
        } else if (code == 13) {
            line += svarint(&c);
            this_line = line;
        } else if (code == 14) {
            line += svarint(&c);
            this_line = line;
            varint(&c); /* end line delta */
            varint(&c); /* start column + 1 */
            varint(&c); /* end column + 1 */
        } else {
            this_line = -1;
        }
        if (c.bad || line < INT32_MIN || line > INT32_MAX)
            return -EINVAL;
        int err = push(lt, &cap, unit, units, (int32_t)this_line);
        if (err)
            return err;
        unit += units;
    }
    return 0;
}

int32_t linetable_line(const struct linetable *lt, int64_t unit)
{
    if (unit < 0)
        return lt->firstlineno;
    uint32_t lo = 0, hi = lt->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((int64_t)lt->r[mid].end <= unit)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < lt->n && (int64_t)lt->r[lo].start <= unit)
        return lt->r[lo].line;
    return -1;
}

void linetable_free(struct linetable *lt)
{
    free(lt->r);
    *lt = (struct linetable){0};
}
