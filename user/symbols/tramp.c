/*
 * tramp — CPython's perf trampolines (see tramp.h): their bytes, and CFI for them.
 */
#include "symbols/tramp.h"

#include <dwarf.h>
#include <string.h>
#include <unistd.h>

static const uint8_t TRAMP_CODE[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3};
static const uint8_t ENDBR64[] = {0xf3, 0x0f, 0x1e, 0xfa};

enum {
    SUB_END = 4,      /* after `sub $8,%rsp`: CFA = rsp + 16 */
    CALL_END = 6,     /* the return address the call pushes */
    ADD_END = 10,     /* after `add $8,%rsp`: CFA = rsp + 8 again */
    ENDBR_AT = 0x100, /* the table's code address for the endbr64 shape ... */
    PLAIN_AT = 0,     /* ... and for the plain one; a region's start is the bias */
    DWARF_RA = 16,    /* x86-64 return address column */
    DWARF_RSP = 7,
};

/* -- The .eh_frame, written through emitters so it reads like the format --------------------- *
 *
 *   CIE   length, id 0, version 1, augmentation "", code align 1, data align -8, ra 16,
 *         def_cfa rsp+8, rip at cfa-8
 *   FDE   length, CIE pointer, pc, range (absolute pointers: augmentation ""), rows:
 *         [start] CFA rsp+8 | [+SUB_END] CFA rsp+16 | [+ADD_END] CFA rsp+8
 *   FDE   the same for the endbr64 shape, 4 bytes later
 *   0     terminator
 *
 * `readelf --debug-dump=frames` decodes the bytes when written to a file as .eh_frame.
 */
struct emit {
    uint8_t *b;
    size_t n, cap;
};

static void db(struct emit *e, uint8_t v)
{
    if (e->n < e->cap)
        e->b[e->n] = v;
    e->n++;
}

static void du32(struct emit *e, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        db(e, (uint8_t)(v >> (8 * i)));
}

static void du64(struct emit *e, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        db(e, (uint8_t)(v >> (8 * i)));
}

/* An entry's length field, patched by entry_end once its size is known. */
static size_t entry_begin(struct emit *e)
{
    size_t at = e->n;
    du32(e, 0);
    return at;
}

static void entry_end(struct emit *e, size_t at)
{
    while ((e->n - at) % 4)
        db(e, DW_CFA_nop);
    uint32_t len = (uint32_t)(e->n - at - 4);
    for (int i = 0; i < 4 && at + i < e->cap; i++)
        e->b[at + i] = (uint8_t)(len >> (8 * i));
}

static void cie(struct emit *e)
{
    size_t at = entry_begin(e);
    du32(e, 0);      /* CIE id */
    db(e, 1);        /* version */
    db(e, 0);        /* augmentation "" */
    db(e, 1);        /* code alignment (uleb) */
    db(e, 0x78);     /* data alignment -8 (sleb) */
    db(e, DWARF_RA); /* return address register */
    db(e, DW_CFA_def_cfa), db(e, DWARF_RSP), db(e, 8);
    db(e, DW_CFA_offset | DWARF_RA), db(e, 1); /* rip at cfa - 8 */
    entry_end(e, at);
}

static void fde(struct emit *e, size_t cie_at, uint64_t pc, uint64_t endbr)
{
    size_t at = entry_begin(e);
    du32(e, (uint32_t)(e->n - cie_at)); /* CIE pointer: from this field back to the CIE */
    du64(e, pc);
    du64(e, endbr + sizeof(TRAMP_CODE));
    db(e, DW_CFA_advance_loc | (uint8_t)(endbr + SUB_END));
    db(e, DW_CFA_def_cfa_offset), db(e, 16);
    db(e, DW_CFA_advance_loc | (ADD_END - SUB_END));
    db(e, DW_CFA_def_cfa_offset), db(e, 8);
    entry_end(e, at);
}

void tramp_init(struct tramp *t)
{
    memset(t, 0, sizeof(*t));
    struct emit e = {t->eh, 0, sizeof(t->eh)};
    cie(&e);
    fde(&e, 0, PLAIN_AT, 0);
    fde(&e, 0, ENDBR_AT, sizeof(ENDBR64));
    du32(&e, 0);
    t->ok = e.n == sizeof(t->eh) && cfi_read_init(&t->cfi, t->eh, e.n, 0, false, NULL, 0, 0) == 0;
}

void tramp_free(struct tramp *t)
{
    if (t->ok)
        cfi_read_free(&t->cfi);
    t->ok = false;
}

/* -- Recognising the code ------------------------------------------------------------------- */

static const struct cfi_read_table *cfi_for(struct tramp *t, uint8_t shape, uint64_t start, uint64_t *bias)
{
    if (shape == TRAMP_PLAIN) {
        *bias = start - PLAIN_AT;
        return &t->cfi;
    }
    if (shape == TRAMP_ENDBR) {
        *bias = start - ENDBR_AT;
        return &t->cfi;
    }
    return NULL;
}

static uint8_t region_shape(int mem_fd, uint64_t start, uint64_t end)
{
    uint8_t buf[sizeof(ENDBR64) + sizeof(TRAMP_CODE)];
    uint64_t size = end - start;
    size_t want = size >= sizeof(buf) ? sizeof(buf) : sizeof(TRAMP_CODE);
    if (mem_fd < 0 || size < sizeof(TRAMP_CODE) || pread(mem_fd, buf, want, (off_t)start) != (ssize_t)want)
        return TRAMP_OTHER;
    if (!memcmp(buf, TRAMP_CODE, sizeof(TRAMP_CODE)))
        return TRAMP_PLAIN;
    if (want == sizeof(buf) && !memcmp(buf, ENDBR64, sizeof(ENDBR64)) &&
        !memcmp(buf + sizeof(ENDBR64), TRAMP_CODE, sizeof(TRAMP_CODE)))
        return TRAMP_ENDBR;
    return TRAMP_OTHER;
}

const struct cfi_read_table *tramp_region_cfi(struct tramp *t, int mem_fd, uint64_t start, uint64_t end,
                                              uint8_t *shape, uint64_t *bias)
{
    if (!t->ok)
        return NULL;
    if (*shape == TRAMP_UNSEEN)
        *shape = region_shape(mem_fd, start, end);
    return cfi_for(t, *shape, start, bias);
}

const struct cfi_read_table *tramp_ret_cfi(struct tramp *t, int mem_fd, uint64_t ret, uint64_t *bias)
{
    if (!t->ok || mem_fd < 0 || ret < 16)
        return NULL;
    size_t slot = (size_t)((ret * 0x9e3779b97f4a7c15ull) >> 56);
    if (t->anon[slot].ret != ret) {
        uint8_t buf[sizeof(ENDBR64) + sizeof(TRAMP_CODE)];
        uint64_t at = ret - CALL_END - sizeof(ENDBR64);
        uint8_t shape = TRAMP_OTHER;
        if (pread(mem_fd, buf, sizeof(buf), (off_t)at) == (ssize_t)sizeof(buf) &&
            !memcmp(buf + sizeof(ENDBR64), TRAMP_CODE, sizeof(TRAMP_CODE)))
            shape = !memcmp(buf, ENDBR64, sizeof(ENDBR64)) ? TRAMP_ENDBR : TRAMP_PLAIN;
        t->anon[slot].ret = ret;
        t->anon[slot].shape = shape;
    }
    /* the region starts at the sub (plain), or 4 bytes earlier at the endbr64 */
    uint64_t start = ret - CALL_END - (t->anon[slot].shape == TRAMP_ENDBR ? sizeof(ENDBR64) : 0);
    return cfi_for(t, t->anon[slot].shape, start, bias);
}
