/*
 * cfi_read — .eh_frame / .debug_frame decoder and CFA rule evaluator (DWARF 4 section 6.4 and
 * the LSB's .eh_frame description). Everything reads through a bounds-checked cursor: a
 * malformed section yields -EINVAL, never a read outside the bytes.
 */
#include "unwind/cfi_read.h"
#include "unwind/dwcur.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* DW_EH_PE_* pointer encodings. */
#define PE_OMIT     0xff
#define PE_INDIRECT 0x80

static uint64_t rd_encoded(struct dwcur *c, uint8_t enc)
{
    if (enc == PE_OMIT)
        return 0;
    uint64_t field = c->base_vaddr + (uint64_t)(c->p - c->base);
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00:
        v = dwcur_u(c, 8);
        break;
    case 0x01:
        v = dwcur_uleb(c);
        break;
    case 0x02:
        v = dwcur_u(c, 2);
        break;
    case 0x03:
        v = dwcur_u(c, 4);
        break;
    case 0x04:
        v = dwcur_u(c, 8);
        break;
    case 0x09:
        v = (uint64_t)dwcur_sleb(c);
        break;
    case 0x0a:
        v = (uint64_t)dwcur_s(c, 2);
        break;
    case 0x0b:
        v = (uint64_t)dwcur_s(c, 4);
        break;
    case 0x0c:
        v = (uint64_t)dwcur_s(c, 8);
        break;
    default:
        c->err = true;
        return 0;
    }
    switch (enc & 0x70) {
    case 0x00:
        break;
    case 0x10:
        v += field;
        break;
    case 0x30:
        v += c->data_vaddr;
        break;
    default:
        c->err = true;
        return 0; /* textrel/funcrel/aligned: not produced on x86-64 */
    }
    return v; /* PE_INDIRECT values are only skipped over (personality), never used */
}

/* -- CIE and FDE headers ------------------------------------------------------------------- */

struct cie {
    uint64_t code_align;
    int64_t data_align;
    unsigned ra_reg;
    uint8_t fde_enc;
    bool aug_z, signal;
    const uint8_t *insn, *insn_end;
};

struct fde {
    uint64_t pc_begin, pc_range;
    const uint8_t *insn, *insn_end;
    struct cie cie;
};

static void cur_at(struct dwcur *c, const struct cfi_read_table *t, uint64_t off)
{
    c->base = t->data;
    c->base_vaddr = t->vaddr;
    c->data_vaddr = 0;
    c->p = t->data + off;
    c->end = t->data + t->size;
    c->err = off > t->size;
}

/* Reads an entry's length and id at off. *id_pos is the position of the id field. */
static int entry_header(const struct cfi_read_table *t, uint64_t off, uint64_t *len_out, uint64_t *id,
                        const uint8_t **id_pos, const uint8_t **end, bool *is64)
{
    struct dwcur c;
    cur_at(&c, t, off);
    uint64_t len = dwcur_u(&c, 4);
    *is64 = false;
    if (len == 0xffffffffu) {
        len = dwcur_u(&c, 8);
        *is64 = true;
    }
    if (c.err || len > (uint64_t)(c.end - c.p))
        return -EINVAL;
    *len_out = len;
    *end = c.p + len;
    *id_pos = c.p;
    if (len == 0)
        return 0;
    size_t idsize = *is64 && t->debug_frame ? 8 : 4;
    if (len < idsize) /* the id must lie inside the entry: later reads start after it */
        return -EINVAL;
    *id = dwcur_u(&c, idsize);
    return c.err ? -EINVAL : 0;
}

static bool is_cie_id(const struct cfi_read_table *t, uint64_t id, bool is64)
{
    if (!t->debug_frame)
        return id == 0;
    return is64 ? id == ~0ull : id == 0xffffffffu;
}

static int parse_cie(const struct cfi_read_table *t, uint64_t off, struct cie *cie)
{
    uint64_t len, id;
    const uint8_t *idp, *end;
    bool is64;
    if (entry_header(t, off, &len, &id, &idp, &end, &is64) || len == 0 || !is_cie_id(t, id, is64))
        return -EINVAL;
    struct dwcur c;
    cur_at(&c, t, (uint64_t)(idp - t->data) + (is64 && t->debug_frame ? 8 : 4));
    c.end = end;
    memset(cie, 0, sizeof(*cie));
    cie->fde_enc = 0x00; /* absptr unless 'R' says otherwise */
    uint8_t version = (uint8_t)dwcur_u(&c, 1);
    const char *aug = (const char *)c.p;
    size_t alen = strnlen(aug, (size_t)(c.end - c.p));
    if (c.err || alen == (size_t)(c.end - c.p))
        return -EINVAL;
    c.p += alen + 1;
    if (version == 4) {
        if (dwcur_u(&c, 1) != 8) /* address size */
            return -EINVAL;
        dwcur_u(&c, 1); /* segment selector size */
    }
    cie->code_align = dwcur_uleb(&c);
    cie->data_align = dwcur_sleb(&c);
    cie->ra_reg = version == 1 ? (unsigned)dwcur_u(&c, 1) : (unsigned)dwcur_uleb(&c);
    const uint8_t *aug_end = NULL;
    for (const char *a = aug; *a && !c.err; a++) {
        switch (*a) {
        case 'z': {
            uint64_t n = dwcur_uleb(&c);
            if (!dwcur_need(&c, n))
                return -EINVAL;
            cie->aug_z = true;
            aug_end = c.p + n;
            break;
        }
        case 'R':
            cie->fde_enc = (uint8_t)dwcur_u(&c, 1);
            break;
        case 'L':
            dwcur_u(&c, 1);
            break; /* LSDA encoding: its pointer sits in the FDE */
        case 'P': {
            uint8_t penc = (uint8_t)dwcur_u(&c, 1);
            rd_encoded(&c, penc & (uint8_t)~PE_INDIRECT);
            break;
        }
        case 'S':
            cie->signal = true;
            break;
        case 'B':
            break; /* aarch64 BTI */
        default:
            /* unknown letter: only safe to skip when 'z' told us the data length */
            if (!aug_end)
                return -EINVAL;
            c.p = aug_end;
            goto done;
        }
    }
done:
    if (aug_end)
        c.p = aug_end;
    if (c.err)
        return -EINVAL;
    cie->insn = c.p;
    cie->insn_end = end;
    return 0;
}

/* Parses the FDE at off. Returns 1 for a CIE or terminator (no FDE there), 0 or -EINVAL. */
static int parse_fde(const struct cfi_read_table *t, uint64_t off, struct fde *f, uint64_t *next)
{
    uint64_t len, id;
    const uint8_t *idp, *end;
    bool is64;
    int err = entry_header(t, off, &len, &id, &idp, &end, &is64);
    if (err)
        return err;
    *next = (uint64_t)(end - t->data);
    if (len == 0 || is_cie_id(t, id, is64))
        return 1;
    uint64_t cie_off;
    if (t->debug_frame) {
        cie_off = id;
    } else {
        uint64_t pos = (uint64_t)(idp - t->data);
        if (id > pos)
            return -EINVAL;
        cie_off = pos - id;
    }
    if (cie_off >= t->size || parse_cie(t, cie_off, &f->cie))
        return -EINVAL;
    struct dwcur c;
    cur_at(&c, t, (uint64_t)(idp - t->data) + (is64 && t->debug_frame ? 8 : 4));
    c.end = end;
    uint8_t enc = t->debug_frame ? 0x00 : f->cie.fde_enc;
    f->pc_begin = rd_encoded(&c, enc);
    f->pc_range = rd_encoded(&c, enc & 0x0f);
    if (f->cie.aug_z) {
        uint64_t n = dwcur_uleb(&c);
        if (dwcur_need(&c, n))
            c.p += n;
    }
    if (c.err)
        return -EINVAL;
    f->insn = c.p;
    f->insn_end = end;
    return 0;
}

/* -- Table setup ---------------------------------------------------------------------------- */

static int cmp_index(const void *a, const void *b)
{
    const struct cfi_index_entry *x = a, *y = b;
    return x->pc < y->pc ? -1 : x->pc > y->pc;
}

static int build_index(struct cfi_read_table *t)
{
    size_t cap = 0;
    uint64_t off = 0;
    while (off + 4 <= t->size) {
        struct fde f;
        uint64_t next;
        int r = parse_fde(t, off, &f, &next);
        if (r < 0)
            return r;
        if (r == 0 && f.pc_range) {
            if (t->nindex == cap) {
                cap = cap ? cap * 2 : 256;
                void *n = realloc(t->index, cap * sizeof(*t->index));
                if (!n)
                    return -ENOMEM;
                t->index = n;
            }
            t->index[t->nindex++] = (struct cfi_index_entry){f.pc_begin, off};
        }
        if (next <= off)
            break;
        off = next;
    }
    if (t->nindex)
        qsort(t->index, t->nindex, sizeof(*t->index), cmp_index);
    return 0;
}

static void use_header(struct cfi_read_table *t, const uint8_t *hdr, size_t size, uint64_t hdr_vaddr)
{
    struct dwcur c = {
        .p = hdr, .end = hdr + size, .base = hdr, .base_vaddr = hdr_vaddr, .data_vaddr = hdr_vaddr};
    uint8_t version = (uint8_t)dwcur_u(&c, 1);
    uint8_t ptr_enc = (uint8_t)dwcur_u(&c, 1), count_enc = (uint8_t)dwcur_u(&c, 1);
    uint8_t table_enc = (uint8_t)dwcur_u(&c, 1);
    uint64_t eh = rd_encoded(&c, ptr_enc);
    uint64_t count = rd_encoded(&c, count_enc);
    /* Only the encoding every toolchain writes; anything else falls back to the own index. */
    if (c.err || version != 1 || table_enc != 0x3b || eh != t->vaddr || count > (uint64_t)(c.end - c.p) / 8)
        return;
    t->hdr_table = c.p;
    t->hdr_count = count;
    t->hdr_vaddr = hdr_vaddr;
}

int cfi_read_init(struct cfi_read_table *t, const uint8_t *data, size_t size, uint64_t vaddr,
                  bool debug_frame, const uint8_t *hdr, size_t hdr_size, uint64_t hdr_vaddr)
{
    memset(t, 0, sizeof(*t));
    t->data = data;
    t->size = size;
    t->vaddr = vaddr;
    t->debug_frame = debug_frame;
    if (hdr && !debug_frame)
        use_header(t, hdr, hdr_size, hdr_vaddr);
    if (t->hdr_table)
        return 0;
    int err = build_index(t);
    if (err)
        cfi_read_free(t);
    return err;
}

void cfi_read_free(struct cfi_read_table *t)
{
    free(t->index);
    memset(t, 0, sizeof(*t));
}

size_t cfi_read_count(const struct cfi_read_table *t)
{
    return t->hdr_table ? t->hdr_count : t->nindex;
}

/* Offset of the FDE whose start is the greatest <= pc, or -ENOENT. */
static int64_t lookup(const struct cfi_read_table *t, uint64_t pc)
{
    size_t lo = 0, hi = cfi_read_count(t);
    if (t->hdr_table) {
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            const uint8_t *e = t->hdr_table + mid * 8;
            int32_t loc;
            memcpy(&loc, e, 4);
            if (t->hdr_vaddr + (uint64_t)(int64_t)loc <= pc)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0)
            return -ENOENT;
        int32_t fde;
        memcpy(&fde, t->hdr_table + (lo - 1) * 8 + 4, 4);
        uint64_t addr = t->hdr_vaddr + (uint64_t)(int64_t)fde;
        if (addr < t->vaddr || addr - t->vaddr >= t->size)
            return -EINVAL;
        return (int64_t)(addr - t->vaddr);
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->index[mid].pc <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? (int64_t)t->index[lo - 1].fde_off : -ENOENT;
}

/* -- Rule evaluation ------------------------------------------------------------------------ */

struct state {
    uint8_t cfa_kind, cfa_reg;
    uint32_t cfa_expr_len;
    int64_t cfa_off;
    const uint8_t *cfa_expr;
    struct cfi_rule reg[CFI_NREGS];
};

#define REMEMBER_DEPTH 8

struct interp {
    const struct cfi_read_table *t;
    const struct cie *cie;
    struct state st, init;
    struct state saved[REMEMBER_DEPTH];
    unsigned nsaved;
    uint64_t loc, pc, next_loc;
    bool stop;
};

static void set_rule(struct interp *in, uint64_t reg, struct cfi_rule r)
{
    if (reg < CFI_NREGS)
        in->st.reg[reg] = r; /* vector registers and others: not needed to unwind */
}

static void advance(struct interp *in, uint64_t delta)
{
    uint64_t n;
    /* Saturate: a hostile delta or code alignment must not wrap the location backwards. */
    if (__builtin_mul_overflow(delta, in->cie->code_align, &n) || __builtin_add_overflow(in->loc, n, &n))
        n = UINT64_MAX;
    if (n > in->pc) {
        in->next_loc = n;
        in->stop = true;
    } else {
        in->loc = n;
    }
}

/* factor * data_align in wrapping arithmetic: hostile factors must not overflow (UB). */
static int64_t scaled(uint64_t factor, int64_t data_align)
{
    return (int64_t)(factor * (uint64_t)data_align);
}

/* Runs one instruction stream (a CIE's initial instructions, then an FDE's) up to the row that
 * holds the address asked for. */
static int run_insns(struct interp *in, const uint8_t *p, const uint8_t *end, bool initial)
{
    struct dwcur c = {.p = p, .end = end, .base = in->t->data, .base_vaddr = in->t->vaddr};
    const int64_t da = in->cie->data_align;
    while (c.p < c.end && !in->stop && !c.err) {
        uint8_t op = *c.p++;
        uint64_t reg, n;
        switch (op >> 6) {
        case 1:
            advance(in, op & 0x3f);
            continue;
        case 2:
            n = dwcur_uleb(&c);
            set_rule(in, op & 0x3f, (struct cfi_rule){CFI_RULE_OFFSET, 0, 0, scaled(n, da), 0});
            continue;
        case 3:
            if ((op & 0x3f) < CFI_NREGS)
                in->st.reg[op & 0x3f] = in->init.reg[op & 0x3f];
            continue;
        }
        switch (op) {
        case 0x00:
            break;   /* nop */
        case 0x01: { /* set_loc */
            uint64_t a = rd_encoded(&c, in->t->debug_frame ? 0 : in->cie->fde_enc);
            if (a > in->pc) {
                in->next_loc = a;
                in->stop = true;
            } else {
                in->loc = a;
            }
            break;
        }
        case 0x02:
            advance(in, dwcur_u(&c, 1));
            break;
        case 0x03:
            advance(in, dwcur_u(&c, 2));
            break;
        case 0x04:
            advance(in, dwcur_u(&c, 4));
            break;
        case 0x05: /* offset_extended */
            reg = dwcur_uleb(&c);
            n = dwcur_uleb(&c);
            set_rule(in, reg, (struct cfi_rule){CFI_RULE_OFFSET, 0, 0, scaled(n, da), 0});
            break;
        case 0x06: /* restore_extended */
            reg = dwcur_uleb(&c);
            if (reg < CFI_NREGS)
                in->st.reg[reg] = in->init.reg[reg];
            break;
        case 0x07:
            set_rule(in, dwcur_uleb(&c), (struct cfi_rule){CFI_RULE_UNDEFINED, 0, 0, 0, 0});
            break;
        case 0x08:
            set_rule(in, dwcur_uleb(&c), (struct cfi_rule){CFI_RULE_SAME, 0, 0, 0, 0});
            break;
        case 0x09: /* register */
            reg = dwcur_uleb(&c);
            n = dwcur_uleb(&c);
            set_rule(in, reg, (struct cfi_rule){CFI_RULE_REGISTER, (uint8_t)n, 0, 0, 0});
            break;
        case 0x0a: /* remember_state */
            if (in->nsaved == REMEMBER_DEPTH)
                return -EINVAL;
            in->saved[in->nsaved++] = in->st;
            break;
        case 0x0b: /* restore_state: the CFA stays (DWARF 5 6.4.2.4 keeps it with the rules) */
            if (in->nsaved == 0)
                return -EINVAL;
            in->st = in->saved[--in->nsaved];
            break;
        case 0x0c: /* def_cfa */
            in->st.cfa_kind = CFI_CFA_REG;
            in->st.cfa_reg = (uint8_t)dwcur_uleb(&c);
            in->st.cfa_off = (int64_t)dwcur_uleb(&c);
            break;
        case 0x0d:
            in->st.cfa_kind = CFI_CFA_REG;
            in->st.cfa_reg = (uint8_t)dwcur_uleb(&c);
            break;
        case 0x0e:
            in->st.cfa_kind = CFI_CFA_REG;
            in->st.cfa_off = (int64_t)dwcur_uleb(&c);
            break;
        case 0x0f: /* def_cfa_expression */
            n = dwcur_uleb(&c);
            if (!dwcur_need(&c, n))
                break;
            in->st.cfa_kind = CFI_CFA_EXPR;
            in->st.cfa_expr = c.p;
            in->st.cfa_expr_len = (uint32_t)n;
            c.p += n;
            break;
        case 0x10:   /* expression */
        case 0x16: { /* val_expression */
            reg = dwcur_uleb(&c);
            n = dwcur_uleb(&c);
            if (!dwcur_need(&c, n))
                break;
            set_rule(
                in, reg,
                (struct cfi_rule){op == 0x10 ? CFI_RULE_EXPR : CFI_RULE_VAL_EXPR, 0, (uint32_t)n, 0, c.p});
            c.p += n;
            break;
        }
        case 0x11: /* offset_extended_sf */
            reg = dwcur_uleb(&c);
            set_rule(in, reg,
                     (struct cfi_rule){CFI_RULE_OFFSET, 0, 0, scaled((uint64_t)dwcur_sleb(&c), da), 0});
            break;
        case 0x12: /* def_cfa_sf */
            in->st.cfa_kind = CFI_CFA_REG;
            in->st.cfa_reg = (uint8_t)dwcur_uleb(&c);
            in->st.cfa_off = scaled((uint64_t)dwcur_sleb(&c), da);
            break;
        case 0x13:
            in->st.cfa_kind = CFI_CFA_REG;
            in->st.cfa_off = scaled((uint64_t)dwcur_sleb(&c), da);
            break;
        case 0x14: /* val_offset */
            reg = dwcur_uleb(&c);
            n = dwcur_uleb(&c);
            set_rule(in, reg, (struct cfi_rule){CFI_RULE_VAL_OFFSET, 0, 0, scaled(n, da), 0});
            break;
        case 0x15: /* val_offset_sf */
            reg = dwcur_uleb(&c);
            set_rule(in, reg,
                     (struct cfi_rule){CFI_RULE_VAL_OFFSET, 0, 0, scaled((uint64_t)dwcur_sleb(&c), da), 0});
            break;
        case 0x2e:
            dwcur_uleb(&c);
            break; /* GNU_args_size: only matters for landing pads */
        case 0x2f: /* GNU_negative_offset_extended */
            reg = dwcur_uleb(&c);
            set_rule(in, reg, (struct cfi_rule){CFI_RULE_OFFSET, 0, 0, scaled(-dwcur_uleb(&c), da), 0});
            break;
        default:
            return -EINVAL;
        }
    }
    if (c.err)
        return -EINVAL;
    if (initial)
        in->init = in->st;
    return 0;
}

int cfi_read_row(const struct cfi_read_table *t, uint64_t pc, struct cfi_row *row)
{
    int64_t off = lookup(t, pc);
    if (off < 0)
        return (int)off;
    struct fde f;
    uint64_t next;
    int r = parse_fde(t, (uint64_t)off, &f, &next);
    if (r)
        return r < 0 ? r : -EINVAL;
    if (pc < f.pc_begin || pc - f.pc_begin >= f.pc_range)
        return -ENOENT;
    struct interp in;
    memset(&in.st, 0, sizeof(in.st));
    memset(&in.init, 0, sizeof(in.init)); /* DW_CFA_restore inside the CIE reads it */
    in.t = t;
    in.cie = &f.cie;
    in.nsaved = 0;
    in.stop = false;
    in.loc = f.pc_begin;
    in.pc = pc;
    /* pc_begin + pc_range may wrap in hostile CFI: saturate; a row never outlives its FDE. */
    uint64_t fde_end;
    if (__builtin_add_overflow(f.pc_begin, f.pc_range, &fde_end))
        fde_end = UINT64_MAX;
    if (pc >= fde_end) /* only the saturated end can hold pc: the last address has no code */
        return -ENOENT;
    in.next_loc = fde_end;
    if ((r = run_insns(&in, f.cie.insn, f.cie.insn_end, true)) < 0)
        return r;
    in.stop = false;
    if ((r = run_insns(&in, f.insn, f.insn_end, false)) < 0)
        return r;
    memset(row, 0, sizeof(*row));
    row->pc_start = in.loc;
    row->pc_end = in.next_loc < fde_end ? in.next_loc : fde_end;
    row->cfa_kind = in.st.cfa_kind;
    row->cfa_reg = in.st.cfa_reg;
    row->cfa_off = in.st.cfa_off;
    row->cfa_expr = in.st.cfa_expr;
    row->cfa_expr_len = in.st.cfa_expr_len;
    row->signal_frame = f.cie.signal;
    memcpy(row->reg, in.st.reg, sizeof(row->reg));
    if (f.cie.ra_reg != CFI_REG_RIP && f.cie.ra_reg < CFI_NREGS)
        row->reg[CFI_REG_RIP] = row->reg[f.cie.ra_reg];
    return 0;
}
