/*
 * Fuzz target: the .eh_frame / .debug_frame decoder (user/unwind/cfi_read.c) that the unwinder runs on
 * every mapped module and on JIT code's registered CFI.
 *
 * Input layout (all little-endian):
 *
 *   0      1          9        17          25         29               29+H
 *   +------+----------+--------+-----------+----------+----------------+-----------------+
 *   | flag | vaddr    | pc     | hdr_vaddr | hdr_size | .eh_frame_hdr  | section bytes   |
 *   | u8   | u64      | u64    | u64       | u32 = H' | H=min(H',rest) | (to the end)    |
 *   +------+----------+--------+-----------+----------+----------------+-----------------+
 *   flag bit 0: the section is .debug_frame; bit 1: pass the header (else NULL).
 *
 * After cfi_read_init the target looks up `pc` and the start (and a few bytes in) of up to 64
 * FDEs the table knows, and evaluates every DWARF expression a found row holds with a read
 * callback that fails for some addresses. It checks that a found row covers the pc asked for,
 * holds only known rule kinds, and that expression pointers stay inside the section.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "unwind/cfi_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ctx {
    const uint8_t *sec;
    size_t sec_size;
    unsigned reads;
};

static int fake_read(void *arg, uint64_t addr, uint64_t *val)
{
    struct ctx *c = arg;
    if (++c->reads > 1000 || (addr & 7) == 7)
        return -14; /* -EFAULT: the unwinder's reads can fail at any point */
    *val = addr * 0x9e3779b97f4a7c15ull;
    return 0;
}

static void check_expr(const struct ctx *c, const uint8_t *p, uint32_t len)
{
    if (!len)
        return;
    if (!p || p < c->sec || p + len > c->sec + c->sec_size)
        __builtin_trap();
}

static void eval_row(struct ctx *c, const struct cfi_row *row)
{
    uint64_t regs[CFI_NREGS], out;
    for (int i = 0; i < CFI_NREGS; i++)
        regs[i] = 0x7ffc00000000ull + 8u * (unsigned)i;
    if (row->cfa_kind == CFI_CFA_EXPR) {
        check_expr(c, row->cfa_expr, row->cfa_expr_len);
        cfi_read_expr(row->cfa_expr, row->cfa_expr_len, regs, 0x1ffff, false, 0, fake_read, c, &out);
    }
    if (row->cfa_kind > CFI_CFA_EXPR)
        __builtin_trap();
    for (int i = 0; i < CFI_NREGS; i++) {
        const struct cfi_rule *r = &row->reg[i];
        if (r->kind > CFI_RULE_VAL_EXPR)
            __builtin_trap(); /* a rule nobody wrote: uninitialised state */
        if (r->kind == CFI_RULE_EXPR || r->kind == CFI_RULE_VAL_EXPR) {
            check_expr(c, r->expr, r->expr_len);
            /* only some registers known, to reach the unknown-register paths */
            cfi_read_expr(r->expr, r->expr_len, regs, 0x00c8, true, regs[CFI_REG_RSP], fake_read, c, &out);
        }
    }
}

static void look(struct ctx *c, const struct cfi_read_table *t, uint64_t pc)
{
    struct cfi_row row;
    if (cfi_read_row(t, pc, &row) != 0)
        return;
    if (!(pc >= row.pc_start && pc < row.pc_end))
        __builtin_trap();
    eval_row(c, &row);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = {data, size};
    uint8_t flag = fuzz_u8(&in);
    uint64_t vaddr = fuzz_u64(&in), pc = fuzz_u64(&in), hdr_vaddr = fuzz_u64(&in);
    size_t hdr_size = fuzz_u32(&in);
    if (hdr_size > in.size)
        hdr_size = in.size;
    /* separate exact-size copies so ASan sees any read past either buffer */
    uint8_t *hdr = malloc(hdr_size ? hdr_size : 1);
    uint8_t *sec = malloc(in.size - hdr_size ? in.size - hdr_size : 1);
    if (!hdr || !sec)
        goto out;
    memcpy(hdr, in.data, hdr_size);
    size_t sec_size = in.size - hdr_size;
    memcpy(sec, in.data + hdr_size, sec_size);

    struct cfi_read_table t;
    if (cfi_read_init(&t, sec, sec_size, vaddr, flag & 1, (flag & 2) ? hdr : NULL, (flag & 2) ? hdr_size : 0,
                      hdr_vaddr) != 0)
        goto out;
    struct ctx c = {sec, sec_size, 0};
    look(&c, &t, pc);
    size_t n = cfi_read_count(&t);
    size_t step = n > 64 ? n / 64 : 1;
    for (size_t i = 0; i < n; i += step) {
        uint64_t start;
        if (t.index && i < t.nindex) {
            start = t.index[i].pc;
        } else if (t.hdr_table && i < t.hdr_count) {
            int32_t rel;
            memcpy(&rel, t.hdr_table + 8 * i, 4);
            start = t.hdr_vaddr + (uint64_t)(int64_t)rel;
        } else {
            break;
        }
        look(&c, &t, start);
        look(&c, &t, start + 5);
    }
    cfi_read_free(&t);
out:
    free(hdr);
    free(sec);
    return 0;
}
