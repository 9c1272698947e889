/*
 * unwind — one step per frame:
 *
 *   DWARF   row = CFI row at (ip - bias), looked up at ip-1 for return addresses (a call can be
 *           the last instruction of a function)
 *           CFA = reg + off | expression;  ra, rbp, rbx, r12-r15 by their rules;  sp' = CFA
 *   FP      ra = [bp + 8], bp' = [bp], sp' = bp + 16
 *
 * Stack words come only from the copy; a word outside it ends the walk with UNWIND_STOP_STACK.
 * The walk ends normally at an undefined return address (CFI of _start / clone) or ra == 0.
 */
#include "unwind/unwind.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The common row in a compact form the hot path reads from one or two cache lines: CFA =
 * register + offset, and only offset / val_offset / register / undefined rules. */
struct fast_rule {
    uint8_t reg, kind, src; /* src: CFI_RULE_REGISTER's register */
    int32_t off;
};

struct slot {
    const struct cfi_read_table *t; /* NULL: empty slot */
    uint64_t pc;
    int16_t status; /* 0 row valid, -ENOENT no FDE, -EINVAL bad CFI */
    bool fast, ra_undefined, signal;
    uint8_t cfa_reg, nrules;
    int32_t cfa_off;
    struct fast_rule rules[8];
    struct cfi_row row; /* everything, for the rows the fast form cannot hold */
};

struct unwind_cache {
    struct slot *v;
    uint64_t mask;
    struct unwind_stats st;
};

int unwind_cache_new(struct unwind_cache **out, unsigned bits)
{
    struct unwind_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    if (bits < 4 || bits > 20)
        bits = 12;
    c->v = calloc(1ull << bits, sizeof(*c->v));
    if (!c->v) {
        free(c);
        return -ENOMEM;
    }
    c->mask = (1ull << bits) - 1;
    *out = c;
    return 0;
}

void unwind_cache_clear(struct unwind_cache *c)
{
    for (uint64_t i = 0; i <= c->mask; i++)
        c->v[i].t = NULL;
}

void unwind_cache_free(struct unwind_cache *c)
{
    if (!c)
        return;
    free(c->v);
    free(c);
}

const struct unwind_stats *unwind_cache_stats(const struct unwind_cache *c)
{
    return &c->st;
}

static bool fits32(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

static void compact(struct slot *s)
{
    static const uint8_t tracked[] = {CFI_REG_RBX, CFI_REG_RBP, CFI_REG_R12, CFI_REG_R13,
                                      CFI_REG_R14, CFI_REG_R15, CFI_REG_RIP, CFI_REG_RSP};
    const struct cfi_row *r = &s->row;
    s->fast = false;
    s->signal = r->signal_frame;
    s->ra_undefined = r->reg[CFI_REG_RIP].kind == CFI_RULE_UNDEFINED;
    if (r->cfa_kind != CFI_CFA_REG || r->cfa_reg >= CFI_NREGS || !fits32(r->cfa_off))
        return;
    uint8_t ra = r->reg[CFI_REG_RIP].kind;
    if (ra == CFI_RULE_UNSPEC || ra == CFI_RULE_SAME)
        return; /* the slow path reports it */
    s->cfa_reg = r->cfa_reg;
    s->cfa_off = (int32_t)r->cfa_off;
    s->nrules = 0;
    for (size_t i = 0; i < sizeof(tracked); i++) {
        const struct cfi_rule *rule = &r->reg[tracked[i]];
        switch (rule->kind) {
        case CFI_RULE_UNSPEC:
        case CFI_RULE_SAME:
            continue;
        case CFI_RULE_UNDEFINED:
        case CFI_RULE_OFFSET:
        case CFI_RULE_VAL_OFFSET:
        case CFI_RULE_REGISTER:
            if (!fits32(rule->off) || rule->reg >= CFI_NREGS)
                return;
            s->rules[s->nrules++] = (struct fast_rule){tracked[i], rule->kind, rule->reg, (int32_t)rule->off};
            continue;
        default:
            return;
        }
    }
    s->fast = true;
}

static const struct slot *row_for(struct unwind_cache *c, const struct cfi_read_table *t, uint64_t pc)
{
    uint64_t h = (pc ^ (uint64_t)(uintptr_t)t) * 0x9e3779b97f4a7c15ull;
    struct slot *s = &c->v[(h >> 40) & c->mask];
    if (s->t == t && s->pc == pc) {
        c->st.row_hits++;
        return s;
    }
    c->st.row_misses++;
    s->t = t;
    s->pc = pc;
    s->status = (int16_t)cfi_read_row(t, pc, &s->row);
    if (!s->status)
        compact(s);
    return s;
}

struct copy {
    const uint8_t *p;
    size_t len;
    uint64_t addr;
};

static int read_word(void *arg, uint64_t addr, uint64_t *val)
{
    const struct copy *cp = arg;
    if (addr < cp->addr || addr - cp->addr > cp->len || cp->len - (addr - cp->addr) < 8)
        return -EFAULT;
    memcpy(val, cp->p + (addr - cp->addr), 8);
    return 0;
}

struct state {
    uint64_t r[CFI_NREGS];
    uint32_t valid;
};

#define BIT(r) (1u << (r))
/* RSP last: without a rule it is the CFA (set before the loop). */
static const uint8_t callee_saved[] = {CFI_REG_RBX, CFI_REG_RBP, CFI_REG_R12, CFI_REG_R13,
                                       CFI_REG_R14, CFI_REG_R15, CFI_REG_RIP, CFI_REG_RSP};

enum step { STEP_OK, STEP_END, STEP_STOP };

/* A callee-saved register whose save slot lies below the frame's stack pointer has been restored
 * already: a function frees its frame only after reloading those registers, and its CFI keeps
 * the slot until the return (GCC's epilogue `mov -0x18(%rbp),%rbx; leave; ret` says "rbx at
 * CFA-40, rbp at CFA-16" up to the ret). The slot is outside the copy (it starts at the sampled
 * sp), and the register holds the caller's value. */
static bool below_sp(const struct state *s, unsigned reg, uint64_t addr)
{
    return reg != CFI_REG_RIP && reg != CFI_REG_RSP && addr < s->r[CFI_REG_RSP] && (s->valid & BIT(reg));
}

static enum step dwarf_step(const struct cfi_row *row, struct state *s, struct copy *cp, unsigned *stop)
{
    uint64_t cfa;
    if (row->cfa_kind == CFI_CFA_REG) {
        if (row->cfa_reg >= CFI_NREGS || !(s->valid & BIT(row->cfa_reg))) {
            *stop |= UNWIND_STOP_BAD;
            return STEP_STOP;
        }
        cfa = s->r[row->cfa_reg] + (uint64_t)row->cfa_off;
    } else {
        int err =
            cfi_read_expr(row->cfa_expr, row->cfa_expr_len, s->r, s->valid, false, 0, read_word, cp, &cfa);
        if (err) {
            *stop |= err == -EFAULT ? UNWIND_STOP_STACK : UNWIND_STOP_BAD;
            return STEP_STOP;
        }
    }
    const struct cfi_rule *ra = &row->reg[CFI_REG_RIP];
    if (ra->kind == CFI_RULE_UNDEFINED)
        return STEP_END;
    struct state n; /* registers outside n.valid are never read: no need to clear them */
    n.valid = BIT(CFI_REG_RSP);
    n.r[CFI_REG_RSP] = cfa;
    for (size_t i = 0; i < sizeof(callee_saved); i++) {
        unsigned reg = callee_saved[i];
        const struct cfi_rule *rule = &row->reg[reg];
        uint64_t v = 0, addr;
        int err = 0;
        switch (rule->kind) {
        case CFI_RULE_UNSPEC:
        case CFI_RULE_SAME:
            if (reg == CFI_REG_RSP)
                continue;
            if (reg == CFI_REG_RIP) {
                *stop |= UNWIND_STOP_BAD;
                return STEP_STOP;
            }
            if (!(s->valid & BIT(reg)))
                continue;
            v = s->r[reg];
            break;
        case CFI_RULE_UNDEFINED:
            continue;
        case CFI_RULE_OFFSET:
            addr = cfa + (uint64_t)rule->off;
            if (below_sp(s, reg, addr)) {
                v = s->r[reg];
                break;
            }
            err = read_word(cp, addr, &v);
            break;
        case CFI_RULE_VAL_OFFSET:
            v = cfa + (uint64_t)rule->off;
            break;
        case CFI_RULE_REGISTER:
            if (rule->reg >= CFI_NREGS || !(s->valid & BIT(rule->reg)))
                continue;
            v = s->r[rule->reg];
            break;
        case CFI_RULE_EXPR:
            err = cfi_read_expr(rule->expr, rule->expr_len, s->r, s->valid, true, cfa, read_word, cp, &addr);
            if (!err)
                err = read_word(cp, addr, &v);
            break;
        case CFI_RULE_VAL_EXPR:
            err = cfi_read_expr(rule->expr, rule->expr_len, s->r, s->valid, true, cfa, read_word, cp, &v);
            break;
        }
        if (err) {
            if (reg != CFI_REG_RIP && reg != CFI_REG_RSP)
                continue; /* an unknown callee-saved register only hurts if used later */
            *stop |= err == -EFAULT ? UNWIND_STOP_STACK : UNWIND_STOP_BAD;
            return STEP_STOP;
        }
        n.r[reg] = v;
        n.valid |= BIT(reg);
    }
    if (n.r[CFI_REG_RSP] <= s->r[CFI_REG_RSP]) {
        *stop |= UNWIND_STOP_BAD;
        return STEP_STOP;
    }
    *s = n;
    return n.r[CFI_REG_RIP] ? STEP_OK : STEP_END;
}

#define KEEP                                                                                                 \
    (BIT(CFI_REG_RBX) | BIT(CFI_REG_RBP) | BIT(CFI_REG_R12) | BIT(CFI_REG_R13) | BIT(CFI_REG_R14) |          \
     BIT(CFI_REG_R15))

static enum step fast_step(const struct slot *sl, struct state *s, struct copy *cp, unsigned *stop)
{
    if (!(s->valid & BIT(sl->cfa_reg))) {
        *stop |= UNWIND_STOP_BAD;
        return STEP_STOP;
    }
    if (sl->ra_undefined)
        return STEP_END;
    uint64_t cfa = s->r[sl->cfa_reg] + (uint64_t)(int64_t)sl->cfa_off, old_sp = s->r[CFI_REG_RSP];
    uint64_t saved[CFI_NREGS]; /* REGISTER rules read the values before this step */
    uint32_t old_valid = s->valid;
    bool need_old = false;
    for (unsigned i = 0; i < sl->nrules; i++)
        need_old |= sl->rules[i].kind == CFI_RULE_REGISTER;
    if (need_old)
        memcpy(saved, s->r, sizeof(saved));
    s->valid = (s->valid & KEEP) | BIT(CFI_REG_RSP);
    s->r[CFI_REG_RSP] = cfa;
    for (unsigned i = 0; i < sl->nrules; i++) {
        const struct fast_rule *fr = &sl->rules[i];
        uint64_t v;
        switch (fr->kind) {
        case CFI_RULE_OFFSET:
            if (fr->reg != CFI_REG_RIP && cfa + (uint64_t)(int64_t)fr->off < old_sp) {
                /* restored already (see below_sp); the register still holds its value */
                if (old_valid & BIT(fr->reg))
                    s->valid |= BIT(fr->reg);
                continue;
            }
            if (read_word(cp, cfa + (uint64_t)(int64_t)fr->off, &v)) {
                if (fr->reg == CFI_REG_RIP || fr->reg == CFI_REG_RSP) {
                    *stop |= UNWIND_STOP_STACK;
                    return STEP_STOP;
                }
                s->valid &= ~BIT(fr->reg);
                continue;
            }
            break;
        case CFI_RULE_VAL_OFFSET:
            v = cfa + (uint64_t)(int64_t)fr->off;
            break;
        case CFI_RULE_REGISTER:
            if (!(old_valid & BIT(fr->src))) {
                s->valid &= ~BIT(fr->reg);
                continue;
            }
            v = saved[fr->src];
            break;
        default: /* undefined */
            s->valid &= ~BIT(fr->reg);
            continue;
        }
        s->r[fr->reg] = v;
        s->valid |= BIT(fr->reg);
    }
    if (!(s->valid & BIT(CFI_REG_RIP))) {
        *stop |= UNWIND_STOP_BAD;
        return STEP_STOP;
    }
    if (s->r[CFI_REG_RSP] <= old_sp) {
        *stop |= UNWIND_STOP_BAD;
        return STEP_STOP;
    }
    return s->r[CFI_REG_RIP] ? STEP_OK : STEP_END;
}

static enum step fp_step(struct state *s, struct copy *cp, unsigned *stop)
{
    uint64_t bp = s->r[CFI_REG_RBP], nbp, ra;
    if (!(s->valid & BIT(CFI_REG_RBP)) || bp < s->r[CFI_REG_RSP] || bp & 7) {
        *stop |= UNWIND_STOP_BAD;
        return STEP_STOP;
    }
    if (read_word(cp, bp, &nbp) || read_word(cp, bp + 8, &ra)) {
        *stop |= UNWIND_STOP_STACK;
        return STEP_STOP;
    }
    s->r[CFI_REG_RSP] = bp + 16;
    s->r[CFI_REG_RBP] = nbp;
    s->r[CFI_REG_RIP] = ra;
    s->valid = BIT(CFI_REG_RSP) | BIT(CFI_REG_RBP) | BIT(CFI_REG_RIP);
    return ra ? STEP_OK : STEP_END;
}

int unwind_stack(struct unwind_cache *c, unwind_find_fn find, void *arg, enum unwind_mode mode,
                 const struct unwind_regs *regs, const uint8_t *stack, size_t stack_len, uint64_t stack_addr,
                 uint64_t *ips, size_t max, unsigned *stop)
{
    struct copy cp = {stack, stack ? stack_len : 0, stack_addr};
    struct state s = {.valid = BIT(CFI_REG_RIP) | BIT(CFI_REG_RSP) | BIT(CFI_REG_RBP) | BIT(CFI_REG_RBX) |
                               BIT(CFI_REG_R12) | BIT(CFI_REG_R13) | BIT(CFI_REG_R14) | BIT(CFI_REG_R15)};
    s.r[CFI_REG_RIP] = regs->ip;
    s.r[CFI_REG_RSP] = regs->sp;
    s.r[CFI_REG_RBP] = regs->bp;
    s.r[CFI_REG_RBX] = regs->bx;
    s.r[CFI_REG_R12] = regs->r12;
    s.r[CFI_REG_R13] = regs->r13;
    s.r[CFI_REG_R14] = regs->r14;
    s.r[CFI_REG_R15] = regs->r15;
    *stop = 0;
    size_t n = 0;
    bool exact = true; /* the sampled ip, or the ip a signal frame saved */
    c->st.unwinds++;
    for (;;) {
        uint64_t ip = s.r[CFI_REG_RIP];
        if (n == max) {
            *stop |= UNWIND_STOP_MAXDEPTH;
            break;
        }
        const struct cfi_read_table *t = NULL;
        uint64_t bias = 0;
        if (find(arg, ip, &t, &bias) < 0) {
            if (n == 0)
                ips[n++] = ip; /* the sampled ip itself is a fact; a return address is not */
            *stop |= UNWIND_STOP_BAD;
            break;
        }
        ips[n++] = ip;
        enum step r;
        const struct slot *row = NULL;
        if (mode != UNWIND_FP && t) {
            row = row_for(c, t, (exact ? ip : ip - 1) - bias);
            if (row->status)
                row = NULL;
        }
        exact = row && row->signal;
        if (row) {
            c->st.dwarf_steps++;
            r = row->fast ? fast_step(row, &s, &cp, stop) : dwarf_step(&row->row, &s, &cp, stop);
        } else if (mode == UNWIND_DWARF) {
            *stop |= UNWIND_STOP_NO_CFI;
            break;
        } else {
            c->st.fp_steps++;
            r = fp_step(&s, &cp, stop);
        }
        if (r != STEP_OK)
            break;
    }
    c->st.frames += n;
    return (int)n;
}
