/*
 * Unwinding from a sample taken in a function's epilogue, after `leave` and before `ret`: GCC's
 * CFI still says "rbp at CFA-16, rbx at CFA-24" there, slots below the sampled sp (outside the
 * stack copy) whose values the registers already hold. CPython 3.15's `x += i` loop is sampled
 * at such a `ret` (PyNumber_InPlaceAdd's helper, _Py_Dealloc) in ~2 % of its samples; the walk
 * used to stop in the caller (rbp unknown), leaving a stack without its eval-loop frames.
 * The same frames show that a remembered walk (the unwinder's memo, from the state after the
 * leaf's step) answers only a sample whose registers and stack words it read are the same.
 *
 * Hand-written .eh_frame at link address 0x1000 (bias 0):
 *   CIE   "zR", code 1, data -8, ra 16, R = pcrel|sdata4; def_cfa rsp+8; offset ra at cfa-8
 *   FDE   epi       0x2000..0x2040  push rbp; mov rsp,rbp; push rbx; ...; leave (0x2014); ret (0x2018)
 *           adv 1: cfa_offset 16, rbp at cfa-16; adv 3: cfa_register rbp; adv 4: rbx at cfa-24;
 *           adv 16 (0x2018): def_cfa rsp+8   (rbp and rbx rules left as they were)
 *   FDE   epi_slow  0x2100..0x2140  the same, with r13 = val_expression(rsp): a row the
 *                                   unwinder's compact form cannot hold (its general path)
 *   FDE   caller    0x3000..0x3040  push rbp; mov rsp,rbp: cfa rbp+16, rbp at cfa-16
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "unwind/cfi_read.h"
#include "unwind/unwind.h"

static const uint8_t EH[] = {
    /* 0x00 CIE */
    0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0,
    /* 0x18 FDE epi: length 0x1c, CIE pointer 0x1c, pc 0x2000 - 0x1020, range 0x40, aug 0 */
    0x1c, 0, 0, 0, 0x1c, 0, 0, 0, 0xe0, 0x0f, 0, 0, 0x40, 0, 0, 0, 0, 0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6,
    0x44, 0x83, 3, 0x50, 0x0c, 7, 8,
    /* 0x38 FDE epi_slow: length 0x24, CIE pointer 0x3c, pc 0x2100 - 0x1040, range 0x40, aug 0 */
    0x24, 0, 0, 0, 0x3c, 0, 0, 0, 0xc0, 0x10, 0, 0, 0x40, 0, 0, 0, 0, 0x16, 13, 2, 0x77,
    0, /* val_expression r13: breg7 0 */
    0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6, 0x44, 0x83, 3, 0x50, 0x0c, 7, 8, 0, 0, 0,
    /* 0x60 FDE caller: length 0x18, CIE pointer 0x64, pc 0x3000 - 0x1068, range 0x40, aug 0 */
    0x18, 0, 0, 0, 0x64, 0, 0, 0, 0x98, 0x1f, 0, 0, 0x40, 0, 0, 0, 0, 0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6,
    0, 0, 0,
    /* 0x7c terminator */
    0, 0, 0, 0};

static struct cfi_read_table table;

static int find(void *arg, uint64_t ip, const struct cfi_read_table **cfi, uint64_t *bias)
{
    (void)arg;
    if (ip < 0x2000 || ip >= 0x3040)
        return -ENOENT;
    *cfi = &table;
    *bias = 0;
    return 0;
}

/* The stack copy starts at the sampled sp 0x7000:
 *   0x7000  0x3020   return address into caller (epi's own frame is gone: rbp, rbx popped)
 *   0x7040  0x7080   caller's saved rbp          (the live rbp is 0x7040 again)
 *   0x7048  0x3030   return address into caller (its caller, the same function)
 *   0x7080  0        saved rbp of the outermost frame
 *   0x7088  0        return address 0: the end of the walk */
static uint64_t stack[32];

static void fill_stack(void)
{
    memset(stack, 0, sizeof(stack));
    stack[0] = 0x3020;
    stack[0x40 / 8] = 0x7080;
    stack[0x48 / 8] = 0x3030;
}

static void walk(uint64_t ip, enum unwind_mode mode)
{
    struct unwind_cache *c;
    struct unwind_regs regs = {.ip = ip, .sp = 0x7000, .bp = 0x7040, .bx = 0x1234};
    uint64_t ips[8];
    unsigned stop = ~0u;
    int n;

    fill_stack();
    assert_int_equal(unwind_cache_new(&c, 8), 0);
    n = unwind_stack(c, find, NULL, mode, &regs, (const uint8_t *)stack, sizeof(stack), 0x7000, ips, 8,
                     &stop);
    assert_int_equal(n, 3);
    assert_int_equal(ips[0], ip);
    assert_int_equal(ips[1], 0x3020);
    assert_int_equal(ips[2], 0x3030);
    assert_int_equal(stop, 0);
    unwind_cache_free(c);
}

static void test_table(void **state)
{
    struct cfi_row r;

    (void)state;
    assert_int_equal(cfi_read_count(&table), 3);
    /* the row at the ret: CFA back on rsp, rbp and rbx still "saved" below it */
    assert_int_equal(cfi_read_row(&table, 0x2018, &r), 0);
    assert_int_equal(r.cfa_reg, CFI_REG_RSP);
    assert_int_equal(r.cfa_off, 8);
    assert_int_equal(r.reg[CFI_REG_RBP].kind, CFI_RULE_OFFSET);
    assert_int_equal(r.reg[CFI_REG_RBP].off, -16);
    assert_int_equal(r.reg[CFI_REG_RBX].kind, CFI_RULE_OFFSET);
    assert_int_equal(r.reg[CFI_REG_RBX].off, -24);
    assert_int_equal(cfi_read_row(&table, 0x2118, &r), 0);
    assert_int_equal(r.reg[CFI_REG_R13].kind, CFI_RULE_VAL_EXPR);
    assert_int_equal(cfi_read_row(&table, 0x3020 - 1, &r), 0);
    assert_int_equal(r.cfa_reg, CFI_REG_RBP);
}

/* Compact rows (the hot path) and the general path both take rbp from the register. */
static void test_at_ret_fast(void **state)
{
    (void)state;
    walk(0x2018, UNWIND_DWARF);
    walk(0x2018, UNWIND_AUTO);
}

static void test_at_ret_general(void **state)
{
    (void)state;
    walk(0x2118, UNWIND_DWARF);
}

/* Before the epilogue the slots are inside the copy and are read from it as always. */
static void test_body_reads_stack(void **state)
{
    struct unwind_cache *c;
    /* in epi's body at 0x2010: sp 0x6ff0 (rbx pushed), rbp 0x6ff8 (epi's frame) */
    struct unwind_regs regs = {.ip = 0x2010, .sp = 0x6ff0, .bp = 0x6ff8, .bx = 0x5555};
    uint64_t ips[8], buf[34];
    unsigned stop = ~0u;
    int n;

    (void)state;
    fill_stack();
    buf[0] = 0x1234; /* 0x6ff0: saved rbx */
    buf[1] = 0x7040; /* 0x6ff8: saved rbp (the caller's) */
    memcpy(buf + 2, stack, sizeof(stack));
    assert_int_equal(unwind_cache_new(&c, 8), 0);
    n = unwind_stack(c, find, NULL, UNWIND_DWARF, &regs, (const uint8_t *)buf, sizeof(buf), 0x6ff0, ips, 8,
                     &stop);
    assert_int_equal(n, 3);
    assert_int_equal(ips[1], 0x3020);
    assert_int_equal(ips[2], 0x3030);
    assert_int_equal(stop, 0);
    /* the same sample with a stale register and the slot gone from the copy: not guessed */
    regs.bp = 0x6ff8;
    n = unwind_stack(c, find, NULL, UNWIND_DWARF, &regs, (const uint8_t *)(buf + 2), sizeof(stack), 0x7000,
                     ips, 8, &stop);
    assert_true(n < 3);
    assert_int_not_equal(stop, 0);
    unwind_cache_free(c);
}

/* epi's body sampled with the frames above: the walk of the callers is remembered and answers
 * the same sample again, or one whose differences it did not read; a word it read, changed, is a
 * new walk. */
static int body_walk(struct unwind_cache *c, uint64_t *buf, size_t words, uint64_t addr, uint64_t *ips)
{
    struct unwind_regs regs = {.ip = 0x2010, .sp = 0x6ff0, .bp = 0x6ff8, .bx = 0x5555};
    unsigned stop = ~0u;
    int n = unwind_stack(c, find, NULL, UNWIND_DWARF, &regs, (const uint8_t *)buf, words * 8, addr, ips, 8,
                         &stop);
    assert_int_equal(stop, 0);
    return n;
}

static void test_memo(void **state)
{
    struct unwind_cache *c;
    uint64_t ips[8], buf[36], *at = buf + 2; /* buf[2] is 0x6ff0 */
    const struct unwind_stats *st;

    (void)state;
    fill_stack();
    memset(buf, 0, sizeof(buf));
    at[0] = 0x1234; /* 0x6ff0: saved rbx */
    at[1] = 0x7040; /* 0x6ff8: saved rbp */
    memcpy(at + 2, stack, sizeof(stack));
    assert_int_equal(unwind_cache_new(&c, 8), 0);
    st = unwind_cache_stats(c);
    assert_int_equal(body_walk(c, at, 34, 0x6ff0, ips), 3);
    assert_int_equal(st->memo_hits, 0);
    assert_int_equal(body_walk(c, at, 34, 0x6ff0, ips), 3);
    assert_int_equal(st->memo_hits, 1);
    assert_int_equal(ips[1], 0x3020);
    assert_int_equal(ips[2], 0x3030);
    /* rbx: restored by the leaf's step, read by nothing after it */
    at[0] = 0x9999;
    assert_int_equal(body_walk(c, at, 34, 0x6ff0, ips), 3);
    assert_int_equal(st->memo_hits, 2);
    /* a copy that starts lower and ends where it did reads the same words */
    assert_int_equal(body_walk(c, buf, 36, 0x6fe0, ips), 3);
    assert_int_equal(st->memo_hits, 3);
    /* the caller's return address */
    at[2 + 0x48 / 8] = 0x3031;
    assert_int_equal(body_walk(c, at, 34, 0x6ff0, ips), 3);
    assert_int_equal(st->memo_hits, 3);
    assert_int_equal(ips[2], 0x3031);
    /* the caller's saved rbp, its caller's CFA: read again from elsewhere */
    at[2 + 0x40 / 8] = 0x7060;
    assert_int_equal(body_walk(c, at, 34, 0x6ff0, ips), 3);
    assert_int_equal(st->memo_hits, 3);
    assert_int_equal(body_walk(c, at, 34, 0x6ff0, ips), 3);
    assert_int_equal(st->memo_hits, 4);
    /* the process's mappings re-read: remembered walks go */
    unwind_cache_forget(c);
    assert_int_equal(body_walk(c, at, 34, 0x6ff0, ips), 3);
    assert_int_equal(st->memo_hits, 4);
    unwind_cache_free(c);
}

static int setup(void **state)
{
    (void)state;
    return cfi_read_init(&table, EH, sizeof(EH), 0x1000, false, NULL, 0, 0);
}

static int teardown(void **state)
{
    (void)state;
    cfi_read_free(&table);
    return 0;
}

int main(void)
{
    _Static_assert(sizeof(EH) == 0x80, "layout of the hand-written CFI");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),          cmocka_unit_test(test_at_ret_fast),
        cmocka_unit_test(test_at_ret_general), cmocka_unit_test(test_body_reads_stack),
        cmocka_unit_test(test_memo),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
