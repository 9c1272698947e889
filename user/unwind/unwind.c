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
 *
 * The walk after the leaf's step, when made of compact rows only, is remembered (the memo
 * below): what it read (the registers it used, the stack words whose values it used) and what it
 * found. A later sample at the same return address and the same distance from the copy's end
 * whose registers and words are the same would walk the same way; it gets the result after as
 * many compares, loads whose addresses are all known at once instead of each waiting for the word
 * before (a thread in a steady loop is sampled at the same stack again and again, at many ips of
 * its leaf).
 *
 * Such a walk is the same walk at any stack address: it adds offsets to stack addresses and
 * loads words at them, and checks only how those addresses lie to one another and to the copy.
 * So the values it used as addresses are remembered and compared relative to the stack pointer,
 * return addresses as they are, and a memo serves every thread whose stack holds the same frames
 * at the same distance from its end (threads started the same way: glibc lays out each stack's
 * top alike). A walk that used an address outside the copy is remembered for its stack pointer
 * only.
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

/* A row of some CFI at one pc. Rows live in `rows` in the order they were first needed, so that
 * a target's few hundred pcs touch a few dozen pages of it: first touches of fresh pages (a page
 * fault each, 5-10 µs on a virtual machine) were the table's largest cost when rows sat in their
 * hash buckets, a page apart. */
struct slot {
    const struct cfi_read_table *t; /* NULL: forgotten (unwind_cache_clear) */
    int16_t status;                 /* 0 row valid, -ENOENT no FDE, -EINVAL bad CFI */
    bool fast, ra_undefined, signal;
    uint8_t cfa_reg, nrules;
    int32_t cfa_off;
    struct fast_rule rules[8];
    struct cfi_row row; /* everything, for the rows the fast form cannot hold */
};

#define MEMO_BITS  11  /* remembered walks per process: threads x their distinct stacks */
#define MEMO_WORDS 48  /* stack words whose values a remembered walk used (~2 a frame) */
#define MEMO_IPS   64  /* frames it may have found */
#define REC_WORDS  160 /* stack words a recorded walk may read (with the saved registers) */

/* What the rest of a walk read and found, from the state after the leaf's step. It is remembered
 * only when each step used a compact row of some CFI (what find() answered cannot change while
 * `epoch` stays), so that the inputs below are all it depended on. */
struct memo {
    uint64_t epoch; /* the cache's epoch when it was stored; 0: empty */
    uint64_t ip, sp;
    uint64_t depth; /* the copy's end (the thread's stack end, or the copy limit) - sp */
    int64_t lo;     /* the lowest address read - sp (INT64_MAX: none): a copy starting above it differs */
    bool fixed;     /* used an address outside the copy: valid at this sp only */
    uint32_t max;
    uint32_t used;  /* registers of the state read (BIT(reg)), all as addresses: - sp */
    uint32_t valid; /* the state's valid registers */
    uint8_t mode, nwords, nips;
    bool exact;
    unsigned stop;
    uint64_t steps;
    uint64_t rel; /* words used as addresses (BIT64(i)): wval[i] holds value - sp */
    uint64_t reg[CFI_NREGS];
    int32_t woff[MEMO_WORDS]; /* addresses, from sp */
    uint64_t wval[MEMO_WORDS];
    uint64_t ips[MEMO_IPS];
};

/* A walk being recorded: `init` holds the registers that still have their sampled value, src[r]
 * the word register r was loaded from (-1: computed from the CFA, or sampled). A word counts
 * only once its value is used (a return address, a CFA register, a stack pointer): the saved
 * registers nothing reads again hold a thread's changing locals. */
struct rec {
    bool bad;   /* not to be remembered */
    bool fixed; /* used an address outside the copy */
    uint8_t nwords;
    uint32_t used, init;
    uint64_t steps;
    uint64_t lo; /* the lowest address read */
    int8_t src[CFI_NREGS];
    bool need[REC_WORDS];
    bool addr[REC_WORDS]; /* its value used as an address, not as a return address */
    uint64_t waddr[REC_WORDS];
    uint64_t wval[REC_WORDS];
};

/* A hash bucket: which row holds its pc (direct-mapped: a new pc takes the bucket's row over). */
struct bucket {
    uint64_t pc;
    uint32_t row; /* 1 + index in rows; 0: empty */
};

struct unwind_cache {
    struct bucket *b;  /* 1 << bits */
    struct slot *rows; /* as many, filled in order; pages never reached are never touched */
    uint32_t nrows;
    uint64_t mask;
    uint64_t epoch;  /* starts at 1 */
    struct memo *mv; /* 1 << MEMO_BITS, allocated at the first walk */
    struct unwind_stats st;
};

int unwind_cache_new(struct unwind_cache **out, unsigned bits)
{
    struct unwind_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    if (bits < 4 || bits > 20)
        bits = 12;
    c->b = calloc(1ull << bits, sizeof(*c->b));
    c->rows = calloc(1ull << bits, sizeof(*c->rows));
    if (!c->b || !c->rows) {
        free(c->b);
        free(c->rows);
        free(c);
        return -ENOMEM;
    }
    c->mask = (1ull << bits) - 1;
    c->epoch = 1;
    *out = c;
    return 0;
}

void unwind_cache_clear(struct unwind_cache *c)
{
    for (uint32_t i = 0; i < c->nrows; i++)
        c->rows[i].t = NULL;
    c->epoch++;
}

void unwind_cache_forget(struct unwind_cache *c)
{
    c->epoch++;
}

void unwind_cache_free(struct unwind_cache *c)
{
    if (!c)
        return;
    free(c->b);
    free(c->rows);
    free(c->mv);
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
    struct bucket *b = &c->b[(h >> 40) & c->mask];
    if (b->row && b->pc == pc && c->rows[b->row - 1].t == t) {
        c->st.row_hits++;
        return &c->rows[b->row - 1];
    }
    c->st.row_misses++;
    if (!b->row)
        b->row = ++c->nrows; /* at most one per bucket: never past the end */
    struct slot *s = &c->rows[b->row - 1];
    b->pc = pc;
    s->t = t;
    s->status = (int16_t)cfi_read_row(t, pc, &s->row);
    if (!s->status)
        compact(s);
    return s;
}

struct copy {
    const uint8_t *p;
    size_t len;
    uint64_t addr;
    struct rec *rec; /* NULL: not recorded */
};

static int read_word(void *arg, uint64_t addr, uint64_t *val)
{
    const struct copy *cp = arg;
    if (cp->rec) {
        if (addr < cp->rec->lo)
            cp->rec->lo = addr;
        if (addr < cp->addr)
            cp->rec->bad = true; /* failed for the copy's start, which another sample moves */
    }
    if (addr < cp->addr || addr - cp->addr > cp->len || cp->len - (addr - cp->addr) < 8)
        return -EFAULT;
    memcpy(val, cp->p + (addr - cp->addr), 8);
    return 0;
}

/* The walk reads register reg, whose value is v: the result depends on it. Every register read
 * is an address (a CFA's base, a stack pointer) but the return address. */
static void rec_use(const struct copy *cp, unsigned reg, uint64_t v)
{
    struct rec *r = cp->rec;
    if (!r || reg >= CFI_NREGS)
        return;
    bool addr = reg != CFI_REG_RIP;
    if (addr && (v < cp->addr || v - cp->addr > cp->len))
        r->fixed = true;
    if (r->init & (1u << reg)) {
        r->used |= 1u << reg; /* only CFA bases: addresses */
    } else if (r->src[reg] >= 0) {
        r->need[r->src[reg]] = true;
        r->addr[r->src[reg]] = addr;
    }
}

/* Register reg loaded from the copy at addr. */
static void rec_load(const struct copy *cp, unsigned reg, uint64_t addr, uint64_t v)
{
    struct rec *r = cp->rec;
    if (!r)
        return;
    if (r->nwords == REC_WORDS) {
        r->bad = true;
        return;
    }
    r->init &= ~(1u << reg);
    r->src[reg] = (int8_t)r->nwords;
    r->need[r->nwords] = false;
    r->waddr[r->nwords] = addr;
    r->wval[r->nwords++] = v;
    if (reg == CFI_REG_RIP || reg == CFI_REG_RSP)
        rec_use(cp, reg, v); /* a frame of the result; the check that the stack grows */
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
    struct rec *rec = cp->rec;
    rec_use(cp, sl->cfa_reg, s->r[sl->cfa_reg]);
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
    if (rec) {
        rec->init &= KEEP; /* the others are set below from the CFA, or left invalid */
        rec->src[CFI_REG_RSP] = rec->src[CFI_REG_RIP] = -1;
    }
    for (unsigned i = 0; i < sl->nrules; i++) {
        const struct fast_rule *fr = &sl->rules[i];
        uint64_t v;
        if (rec && fr->kind == CFI_RULE_REGISTER)
            rec->bad = true; /* a value moved to another register: not tracked */
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
            s->r[fr->reg] = v;
            s->valid |= BIT(fr->reg);
            rec_load(cp, fr->reg, cfa + (uint64_t)(int64_t)fr->off, v);
            continue;
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
        if (rec) {
            rec->init &= ~BIT(fr->reg);
            rec->src[fr->reg] = -1;
        }
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

static struct memo *memo_slot(struct unwind_cache *c, uint64_t ip, uint64_t depth)
{
    if (!c->mv && !(c->mv = calloc(1u << MEMO_BITS, sizeof(*c->mv))))
        return NULL;
    uint64_t h = (ip ^ (depth * 0xff51afd7ed558ccdull)) * 0x9e3779b97f4a7c15ull;
    return &c->mv[h >> (64 - MEMO_BITS)];
}

/* The remembered rest of a walk when m was stored from this state with these inputs, else -1. */
static int memo_get(struct unwind_cache *c, const struct memo *m, const struct state *s, bool exact,
                    const struct copy *cp, enum unwind_mode mode, size_t max, uint64_t *ips, unsigned *stop)
{
    uint64_t sp = s->r[CFI_REG_RSP];
    if (m->epoch != c->epoch || m->ip != s->r[CFI_REG_RIP] || m->depth != cp->addr + cp->len - sp ||
        (m->fixed && m->sp != sp) || (int64_t)(cp->addr - sp) > m->lo || m->max != max || m->mode != mode ||
        m->exact != exact || m->valid != s->valid)
        return -1;
    for (unsigned r = 0; r < CFI_NREGS; r++)
        if ((m->used & BIT(r)) && m->reg[r] != s->r[r] - sp)
            return -1;
    uint64_t diff = 0;
    for (unsigned i = 0; i < m->nwords; i++) {
        uint64_t v;
        /* in the copy: it starts at or below every address read, and ends as far from sp */
        memcpy(&v, cp->p + (sp + (uint64_t)(int64_t)m->woff[i] - cp->addr), 8);
        diff |= (v - (m->rel >> i & 1 ? sp : 0)) ^ m->wval[i];
    }
    if (diff)
        return -1;
    memcpy(ips, m->ips, m->nips * sizeof(*ips));
    *stop |= m->stop;
    c->st.memo_hits++;
    c->st.dwarf_steps += m->steps;
    return m->nips;
}

/* Stores a walk recorded from state s0, begun in `epoch` (a JIT re-read during the walk has
 * ended that epoch: the entry is stale at once). */
static void memo_put(uint64_t epoch, struct memo *m, const struct rec *rec, const struct state *s0,
                     bool exact, const struct copy *cp, enum unwind_mode mode, size_t max,
                     const uint64_t *ips, size_t n, unsigned stop)
{
    unsigned need = 0;

    if (rec->bad || n > MEMO_IPS || max > UINT32_MAX)
        return;
    for (unsigned i = 0; i < rec->nwords; i++) {
        if (rec->need[i] && !fits32((int64_t)(rec->waddr[i] - s0->r[CFI_REG_RSP])))
            return;
        need += rec->need[i];
    }
    if (need > MEMO_WORDS)
        return;
    uint64_t sp = s0->r[CFI_REG_RSP];
    m->epoch = epoch;
    m->ip = s0->r[CFI_REG_RIP];
    m->sp = sp;
    m->depth = cp->addr + cp->len - sp;
    m->lo = rec->lo == UINT64_MAX ? INT64_MAX : (int64_t)(rec->lo - sp);
    m->fixed = rec->fixed;
    m->max = (uint32_t)max;
    m->mode = (uint8_t)mode;
    m->exact = exact;
    m->valid = s0->valid;
    m->used = rec->used;
    for (unsigned r = 0; r < CFI_NREGS; r++)
        m->reg[r] = (rec->used & BIT(r)) ? s0->r[r] - sp : 0;
    m->nwords = 0;
    m->rel = 0;
    for (unsigned i = 0; i < rec->nwords; i++) {
        if (!rec->need[i])
            continue;
        m->rel |= (uint64_t)rec->addr[i] << m->nwords;
        m->woff[m->nwords] = (int32_t)(rec->waddr[i] - sp);
        m->wval[m->nwords++] = rec->wval[i] - (rec->addr[i] ? sp : 0);
    }
    m->nips = (uint8_t)n;
    memcpy(m->ips, ips, n * sizeof(*ips));
    m->stop = stop;
    m->steps = rec->steps;
}

/* Steps from s until the walk ends or `steps` steps are made, frames into ips[*n..max). Returns
 * whether the walk can go on. */
static bool walk(struct unwind_cache *c, unwind_find_fn find, void *arg, enum unwind_mode mode,
                 struct state *s, struct copy *cp, bool *exact, uint64_t *ips, size_t *n, size_t max,
                 size_t steps, unsigned *stop)
{
    struct rec *rec = cp->rec;
    for (; steps; steps--) {
        uint64_t ip = s->r[CFI_REG_RIP];
        if (*n == max) {
            *stop |= UNWIND_STOP_MAXDEPTH;
            return false;
        }
        const struct cfi_read_table *t = NULL;
        uint64_t bias = 0;
        if (find(arg, ip, &t, &bias) < 0) {
            if (*n == 0)
                ips[(*n)++] = ip; /* the sampled ip itself is a fact; a return address is not */
            *stop |= UNWIND_STOP_BAD;
            if (rec)
                rec->bad = true; /* find() may answer otherwise after a re-read of the mappings */
            return false;
        }
        ips[(*n)++] = ip;
        enum step r;
        const struct slot *row = NULL;
        if (mode != UNWIND_FP && t) {
            row = row_for(c, t, (*exact ? ip : ip - 1) - bias);
            if (row->status)
                row = NULL;
        }
        *exact = row && row->signal;
        if (rec) {
            if (!row || !row->fast)
                rec->bad = true; /* its inputs are not recorded */
            rec->steps += row != NULL;
        }
        if (row) {
            c->st.dwarf_steps++;
            r = row->fast ? fast_step(row, s, cp, stop) : dwarf_step(&row->row, s, cp, stop);
        } else if (mode == UNWIND_DWARF) {
            *stop |= UNWIND_STOP_NO_CFI;
            return false;
        } else {
            c->st.fp_steps++;
            r = fp_step(s, cp, stop);
        }
        if (r != STEP_OK)
            return false;
    }
    return true;
}

int unwind_stack(struct unwind_cache *c, unwind_find_fn find, void *arg, enum unwind_mode mode,
                 const struct unwind_regs *regs, const uint8_t *stack, size_t stack_len, uint64_t stack_addr,
                 uint64_t *ips, size_t max, unsigned *stop)
{
    struct copy cp = {stack, stack ? stack_len : 0, stack_addr, NULL};
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
    /* The leaf's step first: samples of one loop land on many ips of it, and its callers are
     * the same walk from the same return address and stack pointer. */
    if (walk(c, find, arg, mode, &s, &cp, &exact, ips, &n, max, 1, stop)) {
        struct memo *m =
            mode != UNWIND_FP ? memo_slot(c, s.r[CFI_REG_RIP], cp.addr + cp.len - s.r[CFI_REG_RSP]) : NULL;
        int r = m ? memo_get(c, m, &s, exact, &cp, mode, max - n, ips + n, stop) : -1;
        if (r >= 0) {
            n += (size_t)r;
        } else if (m) {
            struct rec rec; /* its arrays are written before they are read */
            struct state s0 = s;
            bool exact0 = exact;
            uint64_t epoch = c->epoch;
            size_t n0 = n;
            rec.bad = false;
            rec.fixed = false;
            rec.nwords = 0;
            rec.used = 0;
            rec.init = s.valid;
            rec.steps = 0;
            rec.lo = UINT64_MAX;
            memset(rec.src, -1, sizeof(rec.src));
            cp.rec = &rec;
            unsigned stop1 = 0;
            walk(c, find, arg, mode, &s, &cp, &exact, ips, &n, max, SIZE_MAX, &stop1);
            *stop |= stop1;
            memo_put(epoch, m, &rec, &s0, exact0, &cp, mode, max - n0, ips + n0, n - n0, stop1);
        } else {
            walk(c, find, arg, mode, &s, &cp, &exact, ips, &n, max, SIZE_MAX, stop);
        }
    }
    c->st.frames += n;
    return (int)n;
}
