/*
 * cfi_expr — DWARF expression evaluator (DWARF 5 section 2.5) for CFA and register rules: the
 * operations compilers emit in CFI (PLT entries, signal trampolines, stack realignment). Memory
 * reads go through the caller's callback (the unwinder reads its stack copy only).
 */
#include <errno.h>
#include <string.h>

#include "unwind/cfi_read.h"
#include "unwind/dwcur.h"

#define EXPR_STACK   64
#define EXPR_MAX_OPS 1000 /* skip/bra can loop: bound the work one expression may do */

int cfi_read_expr(const uint8_t *expr, size_t len, const uint64_t regs[CFI_NREGS], uint32_t valid,
                  bool push_initial, uint64_t initial, cfi_read_mem_fn read, void *arg, uint64_t *out)
{
    uint64_t st[EXPR_STACK];
    int sp = 0;
    struct dwcur c = {.p = expr, .end = expr + len, .base = expr};
#define PUSH(v)                                                                                              \
    do {                                                                                                     \
        if (sp == EXPR_STACK)                                                                                \
            return -EINVAL;                                                                                  \
        uint64_t v_ = (v);                                                                                   \
        st[sp] = v_;                                                                                         \
        sp++;                                                                                                \
    } while (0)
#define NEED(n)                                                                                              \
    do {                                                                                                     \
        if (sp < (n))                                                                                        \
            return -EINVAL;                                                                                  \
    } while (0)
    if (push_initial)
        PUSH(initial);
    unsigned ops = 0;
    while (c.p < c.end) {
        if (++ops > EXPR_MAX_OPS)
            return -EINVAL;
        uint8_t op = *c.p++;
        uint64_t a, b, reg;
        int err;
        if (op >= 0x30 && op <= 0x4f) {
            PUSH((uint64_t)(op - 0x30));
            continue;
        }
        if (op >= 0x70 && op <= 0x8f) {
            reg = op - 0x70;
            int64_t off = dwcur_sleb(&c);
            if (reg >= CFI_NREGS || !(valid & (1u << reg)))
                return -EINVAL;
            PUSH(regs[reg] + (uint64_t)off);
            continue;
        }
        switch (op) {
        case 0x03:
            PUSH(dwcur_u(&c, 8));
            break;
        case 0x06: /* deref */
        case 0x94: /* deref_size */
            NEED(1);
            a = op == 0x94 ? dwcur_u(&c, 1) : 8;
            if ((err = read(arg, st[sp - 1], &b)) < 0)
                return err;
            if (a < 8)
                b &= (1ull << (8 * a)) - 1;
            st[sp - 1] = b;
            break;
        case 0x08:
            PUSH(dwcur_u(&c, 1));
            break;
        case 0x09:
            PUSH((uint64_t)dwcur_s(&c, 1));
            break;
        case 0x0a:
            PUSH(dwcur_u(&c, 2));
            break;
        case 0x0b:
            PUSH((uint64_t)dwcur_s(&c, 2));
            break;
        case 0x0c:
            PUSH(dwcur_u(&c, 4));
            break;
        case 0x0d:
            PUSH((uint64_t)dwcur_s(&c, 4));
            break;
        case 0x0e:
            PUSH(dwcur_u(&c, 8));
            break;
        case 0x0f:
            PUSH((uint64_t)dwcur_s(&c, 8));
            break;
        case 0x10:
            PUSH(dwcur_uleb(&c));
            break;
        case 0x11:
            PUSH((uint64_t)dwcur_sleb(&c));
            break;
        case 0x12:
            NEED(1);
            PUSH(st[sp - 1]);
            break;
        case 0x13:
            NEED(1);
            sp--;
            break;
        case 0x14:
            NEED(2);
            PUSH(st[sp - 2]);
            break;
        case 0x15: /* pick */
            a = dwcur_u(&c, 1);
            if (a >= (uint64_t)sp)
                return -EINVAL;
            PUSH(st[sp - 1 - (int)a]);
            break;
        case 0x16:
            NEED(2);
            a = st[sp - 1];
            st[sp - 1] = st[sp - 2];
            st[sp - 2] = a;
            break;
        case 0x17: /* rot */
            NEED(3);
            a = st[sp - 1];
            st[sp - 1] = st[sp - 2];
            st[sp - 2] = st[sp - 3];
            st[sp - 3] = a;
            break;
        case 0x19:
            NEED(1);
            st[sp - 1] = (int64_t)st[sp - 1] < 0 ? -st[sp - 1] : st[sp - 1];
            break;
        case 0x1f:
            NEED(1);
            st[sp - 1] = -st[sp - 1];
            break;
        case 0x20:
            NEED(1);
            st[sp - 1] = ~st[sp - 1];
            break;
        case 0x23:
            NEED(1);
            st[sp - 1] += dwcur_uleb(&c);
            break;
        case 0x1a:
        case 0x1b:
        case 0x1c:
        case 0x1d:
        case 0x1e:
        case 0x21:
        case 0x22:
        case 0x24:
        case 0x25:
        case 0x26:
        case 0x27:
        case 0x29:
        case 0x2a:
        case 0x2b:
        case 0x2c:
        case 0x2d:
        case 0x2e:
            NEED(2);
            b = st[--sp];
            a = st[sp - 1];
            switch (op) {
            case 0x1a:
                a &= b;
                break;
            case 0x1b:
                if (!b)
                    return -EINVAL;
                a = (uint64_t)((int64_t)a / (int64_t)b);
                break;
            case 0x1c:
                a -= b;
                break;
            case 0x1d:
                if (!b)
                    return -EINVAL;
                a %= b;
                break;
            case 0x1e:
                a *= b;
                break;
            case 0x21:
                a |= b;
                break;
            case 0x22:
                a += b;
                break;
            case 0x24:
                a = b < 64 ? a << b : 0;
                break;
            case 0x25:
                a = b < 64 ? a >> b : 0;
                break;
            case 0x26:
                a = (uint64_t)((int64_t)a >> (b < 63 ? b : 63));
                break;
            case 0x27:
                a ^= b;
                break;
            case 0x29:
                a = a == b;
                break;
            case 0x2a:
                a = (int64_t)a >= (int64_t)b;
                break;
            case 0x2b:
                a = (int64_t)a > (int64_t)b;
                break;
            case 0x2c:
                a = (int64_t)a <= (int64_t)b;
                break;
            case 0x2d:
                a = (int64_t)a < (int64_t)b;
                break;
            case 0x2e:
                a = a != b;
                break;
            }
            st[sp - 1] = a;
            break;
        case 0x28:   /* bra */
        case 0x2f: { /* skip */
            int64_t d = dwcur_s(&c, 2);
            if (op == 0x28) {
                NEED(1);
                if (!st[--sp])
                    break;
            }
            if (d < -(c.p - expr) || d > c.end - c.p)
                return -EINVAL;
            c.p += d;
            break;
        }
        case 0x92: /* bregx */
            reg = dwcur_uleb(&c);
            a = (uint64_t)dwcur_sleb(&c);
            if (reg >= CFI_NREGS || !(valid & (1u << reg)))
                return -EINVAL;
            PUSH(regs[reg] + a);
            break;
        case 0x96:
            break; /* nop */
        default:
            return -EINVAL;
        }
        if (c.err)
            return -EINVAL;
    }
#undef PUSH
#undef NEED
    if (c.err || sp == 0)
        return -EINVAL;
    *out = st[sp - 1];
    return 0;
}
