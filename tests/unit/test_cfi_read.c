/*
 * cfi_read against `readelf --debug-dump=frames-interp`: every row of every FDE of libc and of
 * /usr/bin/python3.11 (.eh_frame through .eh_frame_hdr), of a .debug_frame compiled here, and
 * the own index against the header's table. Also: the PLT's CFA expression, hand-written CFI
 * with remember/restore state and an undefined return address, malformed input.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/cfi_read.h"

#define LIBC  "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define PY311 "/usr/bin/python3.11"

/* -- Section bytes via libelf ---------------------------------------------------------------- */

struct sect {
    uint8_t *data;
    size_t size;
    uint64_t addr;
};

static bool load_section(const char *path, const char *name, struct sect *out)
{
    memset(out, 0, sizeof(*out));
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    assert_non_null(e);
    size_t shstrndx;
    assert_int_equal(elf_getshdrstrndx(e, &shstrndx), 0);
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh;
        gelf_getshdr(s, &sh);
        if (strcmp(elf_strptr(e, shstrndx, sh.sh_name), name) || sh.sh_type == SHT_NOBITS)
            continue;
        Elf_Data *d = elf_getdata(s, NULL);
        out->data = malloc(d->d_size ? d->d_size : 1);
        memcpy(out->data, d->d_buf, d->d_size);
        out->size = d->d_size;
        out->addr = sh.sh_addr;
    }
    elf_end(e);
    close(fd);
    return out->data != NULL;
}

/* -- readelf's table ------------------------------------------------------------------------ */

static const char *const REGNAMES[CFI_NREGS] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
                                                "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "ra"};

static int regnum(const char *s)
{
    for (int i = 0; i < CFI_NREGS; i++)
        if (!strcmp(s, REGNAMES[i]))
            return i;
    return -1;
}

/* One readelf cell against our rule. */
static bool rule_matches(const char *cell, const struct cfi_rule *r)
{
    long long v;
    char rn[16];
    if (!strcmp(cell, "u"))
        return r->kind == CFI_RULE_UNSPEC || r->kind == CFI_RULE_UNDEFINED;
    if (!strcmp(cell, "s"))
        return r->kind == CFI_RULE_SAME;
    if (!strcmp(cell, "exp"))
        return r->kind == CFI_RULE_EXPR;
    if (!strcmp(cell, "vexp"))
        return r->kind == CFI_RULE_VAL_EXPR;
    if (sscanf(cell, "c%lld", &v) == 1)
        return r->kind == CFI_RULE_OFFSET && r->off == v;
    if (sscanf(cell, "v%lld", &v) == 1)
        return r->kind == CFI_RULE_VAL_OFFSET && r->off == v;
    /* "r9 (r9)", "r1 (rdx)": in another register */
    const char *paren = strchr(cell, '(');
    if (paren && sscanf(paren + 1, "%15[a-z0-9]", rn) == 1 && regnum(rn) >= 0)
        return r->kind == CFI_RULE_REGISTER && r->reg == regnum(rn);
    return false;
}

static bool cfa_matches(const char *cell, const struct cfi_row *row)
{
    if (!strcmp(cell, "exp"))
        return row->cfa_kind == CFI_CFA_EXPR;
    char rn[16];
    long long off;
    size_t k = strcspn(cell, "+-");
    if (k == 0 || k >= sizeof(rn) || sscanf(cell + k, "%lld", &off) != 1)
        return false;
    memcpy(rn, cell, k);
    rn[k] = '\0';
    return row->cfa_kind == CFI_CFA_REG && row->cfa_reg == regnum(rn) && row->cfa_off == off;
}

struct table_row {
    uint64_t loc;
    char cells[20][16];
};

struct table {
    int cols[20]; /* register of each column after CFA */
    int ncols;
    struct table_row *rows;
    size_t nrows;
};

struct cie_table {
    unsigned long off;
    struct table t;
};

struct stats {
    size_t fdes, rows, probes;
};

/* Checks one FDE's rows (or the CIE's when the FDE adds none) at each row start and at the
 * last byte of each row's range. */
static void check_fde(const struct cfi_read_table *ct, uint64_t lo, uint64_t hi, const struct table *t,
                      const char *what, struct stats *st)
{
    st->fdes++;
    for (size_t i = 0; i < t->nrows; i++) {
        uint64_t start = t->nrows == 1 && t->rows[0].loc == 0 ? lo : t->rows[i].loc;
        uint64_t end = i + 1 < t->nrows ? t->rows[i + 1].loc : hi;
        uint64_t probes[2] = {start, end - 1};
        st->rows++;
        for (int p = 0; p < 2; p++) {
            struct cfi_row row;
            int err = cfi_read_row(ct, probes[p], &row);
            if (err)
                fail_msg("%s: pc %#llx: cfi_read_row %d", what, (unsigned long long)probes[p], err);
            if (!cfa_matches(t->rows[i].cells[0], &row))
                fail_msg("%s: pc %#llx: CFA readelf %s, ours kind %d reg %d off %lld", what,
                         (unsigned long long)probes[p], t->rows[i].cells[0], row.cfa_kind, row.cfa_reg,
                         (long long)row.cfa_off);
            for (int c = 0; c < t->ncols; c++) {
                int reg = t->cols[c];
                if (reg < 0 || reg >= CFI_NREGS)
                    continue;
                if (!rule_matches(t->rows[i].cells[c + 1], &row.reg[reg]))
                    fail_msg("%s: pc %#llx: %s readelf %s, ours kind %d off %lld", what,
                             (unsigned long long)probes[p], REGNAMES[reg], t->rows[i].cells[c + 1],
                             row.reg[reg].kind, (long long)row.reg[reg].off);
            }
            if (p == 0 && (row.pc_start > probes[0] || row.pc_end <= probes[0]))
                fail_msg("%s: pc %#llx outside its row's range", what, (unsigned long long)probes[0]);
            st->probes++;
        }
    }
}

static void parse_header(const char *line, struct table *t)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", line);
    t->ncols = 0;
    char *save, *tok = strtok_r(buf, " \n", &save); /* LOC */
    tok = strtok_r(NULL, " \n", &save);             /* CFA */
    while ((tok = strtok_r(NULL, " \n", &save)) && t->ncols < 19)
        t->cols[t->ncols++] = regnum(tok);
}

static void parse_row(const char *line, struct table *t)
{
    struct table_row r = {0};
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", line);
    char *save, *tok = strtok_r(buf, " \n", &save);
    r.loc = strtoull(tok, NULL, 16);
    for (int c = 0; c <= t->ncols && (tok = strtok_r(NULL, " \n", &save)); c++) {
        snprintf(r.cells[c], sizeof(r.cells[c]), "%s", tok);
        if (*save == '(') { /* "r9 (r9)" is one cell */
            tok = strtok_r(NULL, " \n", &save);
            snprintf(r.cells[c], sizeof(r.cells[c]), "reg %s", tok);
        }
    }
    t->rows = realloc(t->rows, (t->nrows + 1) * sizeof(*t->rows));
    t->rows[t->nrows++] = r;
}

/* Walks readelf's output for `section` of path and checks every FDE. */
static struct stats compare_readelf(const char *path, const char *section, const char *dump,
                                    const struct cfi_read_table *ct)
{
    char cmd[4400], line[512];
    snprintf(cmd, sizeof(cmd), "readelf --debug-dump=%s '%s' 2>/dev/null", dump, path);
    FILE *fp = popen(cmd, "r");
    assert_non_null(fp);
    struct stats st = {0};
    struct cie_table cies[64];
    size_t ncies = 0;
    struct table cur = {0};
    bool in_fde = false, in_cie = false, in_section = false, seen = false;
    unsigned long long lo = 0, hi = 0;
    unsigned long cie_ref = 0;
    char what[128];
#define FLUSH()                                                                                              \
    do {                                                                                                     \
        if (in_fde) {                                                                                        \
            const struct table *tt = &cur;                                                                   \
            for (size_t k = 0; !cur.nrows && k < ncies; k++)                                                 \
                if (cies[k].off == cie_ref)                                                                  \
                    tt = &cies[k].t;                                                                         \
            check_fde(ct, lo, hi, tt, what, &st);                                                            \
            free(cur.rows);                                                                                  \
        } else if (in_cie && ncies < 64) {                                                                   \
            cies[ncies - 1].t = cur;                                                                         \
        } else {                                                                                             \
            free(cur.rows);                                                                                  \
        }                                                                                                    \
        memset(&cur, 0, sizeof(cur));                                                                        \
        in_fde = in_cie = false;                                                                             \
    } while (0)
    while (fgets(line, sizeof(line), fp)) {
        if (!strncmp(line, "Contents of the ", 16)) {
            FLUSH();
            /* the first one only: readelf goes on into the debug file (.gnu_debuglink) */
            in_section =
                !seen && !strncmp(line + 16, section, strlen(section)) && line[16 + strlen(section)] == ' ';
            seen |= in_section;
            continue;
        }
        if (!in_section)
            continue;
        unsigned long off, len, id;
        char kind[8];
        if (sscanf(line, "%lx %lx %lx %7s", &off, &len, &id, kind) == 4 && line[0] != ' ') {
            FLUSH();
            if (!strcmp(kind, "CIE") && ncies < 64) {
                in_cie = true;
                cies[ncies++].off = off;
            } else if (!strcmp(kind, "FDE")) {
                const char *c = strstr(line, "cie="), *p = strstr(line, "pc=");
                if (c && p && sscanf(c, "cie=%lx", &cie_ref) == 1 &&
                    sscanf(p, "pc=%llx..%llx", &lo, &hi) == 2 && hi > lo) {
                    in_fde = true;
                    snprintf(what, sizeof(what), "%s FDE %#lx", path, off);
                }
            }
            continue;
        }
        if (strstr(line, "   LOC ") == line) {
            parse_header(line, &cur);
            continue;
        }
        if ((in_fde || in_cie) && strspn(line, "0123456789abcdef") == 16 && line[16] == ' ')
            parse_row(line, &cur);
    }
    FLUSH();
#undef FLUSH
    for (size_t k = 0; k < ncies; k++)
        free(cies[k].t.rows);
    pclose(fp);
    return st;
}

/* -- Tests --------------------------------------------------------------------------------- */

static void check_file(const char *path, size_t min_fdes)
{
    if (access(path, R_OK))
        skip();
    struct sect eh, hdr;
    assert_true(load_section(path, ".eh_frame", &eh));
    assert_true(load_section(path, ".eh_frame_hdr", &hdr));
    struct cfi_read_table t;
    assert_int_equal(cfi_read_init(&t, eh.data, eh.size, eh.addr, false, hdr.data, hdr.size, hdr.addr), 0);
    assert_non_null(t.hdr_table); /* the binary search table in the file is used */
    struct stats st = compare_readelf(path, ".eh_frame", "frames-interp", &t);
    print_message("# %s: %zu FDEs, %zu rows, %zu lookups agree with readelf\n", path, st.fdes, st.rows,
                  st.probes);
    assert_true(st.fdes >= min_fdes);

    /* The own index finds the same FDEs as the header's table. */
    struct cfi_read_table own;
    assert_int_equal(cfi_read_init(&own, eh.data, eh.size, eh.addr, false, NULL, 0, 0), 0);
    assert_null(own.hdr_table);
    assert_int_equal(cfi_read_count(&own), cfi_read_count(&t));
    struct stats st2 = compare_readelf(path, ".eh_frame", "frames-interp", &own);
    assert_int_equal(st2.probes, st.probes);
    cfi_read_free(&own);
    cfi_read_free(&t);
    free(eh.data);
    free(hdr.data);
}

static void test_libc(void **state)
{
    check_file(LIBC, 1000);
}

static void test_python(void **state)
{
    check_file(PY311, 5000);
}

static int read_none(void *arg, uint64_t addr, uint64_t *val)
{
    return -EFAULT;
}

/* libc's PLT: CFA = rsp + 8 + ((rip & 15) >= 11) * 8 (readelf prints "exp"). */
static void test_plt_expression(void **state)
{
    struct sect eh, hdr, plt;
    assert_true(load_section(LIBC, ".eh_frame", &eh));
    assert_true(load_section(LIBC, ".eh_frame_hdr", &hdr));
    assert_true(load_section(LIBC, ".plt", &plt));
    struct cfi_read_table t;
    assert_int_equal(cfi_read_init(&t, eh.data, eh.size, eh.addr, false, hdr.data, hdr.size, hdr.addr), 0);
    int exprs = 0;
    for (uint64_t pc = plt.addr + 16; pc < plt.addr + plt.size && pc < plt.addr + 256; pc++) {
        struct cfi_row row;
        assert_int_equal(cfi_read_row(&t, pc, &row), 0);
        if (row.cfa_kind != CFI_CFA_EXPR)
            continue;
        uint64_t regs[CFI_NREGS] = {0}, cfa;
        regs[CFI_REG_RSP] = 0x7ffc0000;
        regs[CFI_REG_RIP] = pc;
        uint32_t valid = 1u << CFI_REG_RSP | 1u << CFI_REG_RIP;
        assert_int_equal(
            cfi_read_expr(row.cfa_expr, row.cfa_expr_len, regs, valid, false, 0, read_none, NULL, &cfa), 0);
        assert_int_equal(cfa, 0x7ffc0000 + 8 + ((pc & 15) >= 11) * 8);
        /* without rip the expression cannot be evaluated */
        assert_int_equal(cfi_read_expr(row.cfa_expr, row.cfa_expr_len, regs, 1u << CFI_REG_RSP, false, 0,
                                       read_none, NULL, &cfa),
                         -EINVAL);
        exprs++;
    }
    assert_true(exprs > 16);
    cfi_read_free(&t);
    free(eh.data);
    free(hdr.data);
    free(plt.data);
}

/* .debug_frame (CIE id 0xffffffff, absolute addresses) of an object compiled here. */
static void test_debug_frame(void **state)
{
    char dir[] = "/tmp/pyebpf-cfi.XXXXXX", src[128], obj[128], cmd[512];
    assert_non_null(mkdtemp(dir));
    snprintf(src, sizeof(src), "%s/f.c", dir);
    snprintf(obj, sizeof(obj), "%s/f", dir);
    FILE *fp = fopen(src, "w");
    fputs("#include <stdio.h>\n"
          "int __attribute__((noinline)) g(int *p, int n) { int s = 0; for (int i = 0; i < n; "
          "i++) s += p[i] * printf(\"%d\", i); return s; }\n"
          "int main(int c, char **v) { int a[64] = {c}; return g(a, c) + (v[0][0] == 'x'); "
          "}\n",
          fp);
    fclose(fp);
    snprintf(cmd, sizeof(cmd), "gcc -O2 -g -fno-asynchronous-unwind-tables -fno-omit-frame-pointer -o %s %s",
             obj, src);
    assert_int_equal(system(cmd), 0);
    struct sect df;
    assert_true(load_section(obj, ".debug_frame", &df));
    struct cfi_read_table t;
    assert_int_equal(cfi_read_init(&t, df.data, df.size, 0, true, NULL, 0, 0), 0);
    assert_true(cfi_read_count(&t) >= 2);
    struct stats st = compare_readelf(obj, ".debug_frame", "frames-interp", &t);
    print_message("# .debug_frame: %zu FDEs, %zu rows agree with readelf\n", st.fdes, st.rows);
    assert_true(st.fdes >= 2);
    cfi_read_free(&t);
    free(df.data);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/*
 * Hand-written .eh_frame at address 0x1000, one CIE and one FDE for pc 0x2000..0x2040:
 *   CIE: "zR", code 1, data -8, ra 16, R = pcrel|sdata4; def_cfa rsp+8; offset ra at cfa-8
 *   FDE: advance 1; def_cfa_offset 16; offset rbp cfa-16; advance 3; def_cfa_register rbp;
 *        advance 4; remember_state; def_cfa rsp+8; restore rbp; advance 1; restore_state;
 *        advance 8; undefined ra
 */
static const uint8_t HAND[] = {
    /* CIE */
    0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0,
    /* FDE at 0x18: length, CIE pointer (0x1c - 0 = 0x1c) */
    0x24, 0, 0, 0, 0x1c, 0, 0, 0,
    /* pc_begin pcrel: field at 0x1000+0x20 -> 0x2000 - 0x1020 = 0xfe0 */
    0xe0, 0x0f, 0, 0, 0x40, 0, 0, 0, 0, /* range 0x40, aug len 0 */
    0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6, 0x44, 0x0a, 0x0c, 7, 8, 0xc6, 0x41, 0x0b, 0x48, 0x07, 16, 0, 0, 0,
    0,
    /* terminator */
    0, 0, 0, 0};

static void test_handwritten(void **state)
{
    _Static_assert(sizeof(HAND) == 0x18 + 4 + 0x24 + 4, "layout of the hand-written CFI");
    struct cfi_read_table t;
    assert_int_equal(cfi_read_init(&t, HAND, sizeof(HAND), 0x1000, false, NULL, 0, 0), 0);
    assert_int_equal(cfi_read_count(&t), 1);
    struct cfi_row r;
    assert_int_equal(cfi_read_row(&t, 0x1fff, &r), -ENOENT);
    assert_int_equal(cfi_read_row(&t, 0x2040, &r), -ENOENT);

    assert_int_equal(cfi_read_row(&t, 0x2000, &r), 0);
    assert_int_equal(r.cfa_reg, CFI_REG_RSP);
    assert_int_equal(r.cfa_off, 8);
    assert_int_equal(r.reg[CFI_REG_RIP].kind, CFI_RULE_OFFSET);
    assert_int_equal(r.reg[CFI_REG_RIP].off, -8);
    assert_int_equal(r.reg[CFI_REG_RBP].kind, CFI_RULE_UNSPEC);
    assert_int_equal(r.pc_start, 0x2000);
    assert_int_equal(r.pc_end, 0x2001);

    assert_int_equal(cfi_read_row(&t, 0x2003, &r), 0);
    assert_int_equal(r.cfa_off, 16);
    assert_int_equal(r.reg[CFI_REG_RBP].kind, CFI_RULE_OFFSET);
    assert_int_equal(r.reg[CFI_REG_RBP].off, -16);

    assert_int_equal(cfi_read_row(&t, 0x2004, &r), 0);
    assert_int_equal(r.cfa_reg, CFI_REG_RBP);
    assert_int_equal(r.cfa_off, 16);

    /* after remember; def_cfa rsp+8; restore rbp */
    assert_int_equal(cfi_read_row(&t, 0x2008, &r), 0);
    assert_int_equal(r.cfa_reg, CFI_REG_RSP);
    assert_int_equal(r.cfa_off, 8);
    assert_int_equal(r.reg[CFI_REG_RBP].kind, CFI_RULE_UNSPEC);
    assert_int_equal(r.pc_start, 0x2008);
    assert_int_equal(r.pc_end, 0x2009);

    /* after restore_state: back to rbp+16 with rbp saved */
    assert_int_equal(cfi_read_row(&t, 0x2009, &r), 0);
    assert_int_equal(r.cfa_reg, CFI_REG_RBP);
    assert_int_equal(r.cfa_off, 16);
    assert_int_equal(r.reg[CFI_REG_RBP].kind, CFI_RULE_OFFSET);
    assert_int_equal(r.pc_end, 0x2011);

    /* undefined return address: the outermost frame */
    assert_int_equal(cfi_read_row(&t, 0x203f, &r), 0);
    assert_int_equal(r.reg[CFI_REG_RIP].kind, CFI_RULE_UNDEFINED);
    assert_int_equal(r.pc_start, 0x2011);
    assert_int_equal(r.pc_end, 0x2040);
    cfi_read_free(&t);
}

static void test_malformed(void **state)
{
    /* Every truncation and a sweep of single-byte corruptions: errors, never a bad read. */
    uint8_t buf[sizeof(HAND)];
    struct cfi_read_table t;
    struct cfi_row r;
    int ok = 0;
    for (size_t len = 0; len < sizeof(HAND); len++) {
        uint8_t *p = malloc(len ? len : 1);
        memcpy(p, HAND, len);
        if (cfi_read_init(&t, p, len, 0x1000, false, NULL, 0, 0) == 0) {
            for (uint64_t pc = 0x2000; pc < 0x2040; pc++)
                ok += cfi_read_row(&t, pc, &r) == 0;
            cfi_read_free(&t);
        }
        free(p);
    }
    for (size_t i = 0; i < sizeof(HAND); i++) {
        for (int v = 0; v < 256; v += 7) {
            memcpy(buf, HAND, sizeof(HAND));
            buf[i] = (uint8_t)v;
            if (cfi_read_init(&t, buf, sizeof(buf), 0x1000, false, NULL, 0, 0) == 0) {
                for (uint64_t pc = 0x1ff0; pc < 0x2050; pc += 3)
                    cfi_read_row(&t, pc, &r);
                cfi_read_free(&t);
            }
        }
    }
    /* A header whose table points outside the section is not trusted. */
    uint8_t hdr[20] = {1, 0x1b, 0x03, 0x3b};
    int32_t v = (int32_t)(0x1000 - 0x3004);
    memcpy(hdr + 4, &v, 4);
    uint32_t one = 1;
    memcpy(hdr + 8, &one, 4);
    int32_t loc = 0x2000 - 0x3000, fde = 0x7fffffff;
    memcpy(hdr + 12, &loc, 4);
    memcpy(hdr + 16, &fde, 4);
    assert_int_equal(cfi_read_init(&t, HAND, sizeof(HAND), 0x1000, false, hdr, sizeof(hdr), 0x3000), 0);
    assert_non_null(t.hdr_table);
    assert_int_equal(cfi_read_row(&t, 0x2000, &r), -EINVAL);
    cfi_read_free(&t);
    (void)ok;
}

static void test_expressions(void **state)
{
    uint64_t regs[CFI_NREGS] = {0}, out;
    regs[CFI_REG_RBP] = 100;
    /* breg6 -4; lit5; mul; const1s -3; plus; dup; drop; lit1; shl => ((100-4)*5-3)<<1 */
    static const uint8_t e1[] = {0x76, 0x7c, 0x35, 0x1e, 0x09, 0xfd, 0x22, 0x12, 0x13, 0x31, 0x24};
    assert_int_equal(cfi_read_expr(e1, sizeof(e1), regs, 1u << CFI_REG_RBP, false, 0, read_none, NULL, &out),
                     0);
    assert_int_equal(out, ((100 - 4) * 5 - 3) << 1);
    /* with the CFA pushed first: plus_uconst 16 */
    static const uint8_t e2[] = {0x23, 16};
    assert_int_equal(cfi_read_expr(e2, sizeof(e2), regs, 0, true, 1000, read_none, NULL, &out), 0);
    assert_int_equal(out, 1016);
    /* bra over a skip: lit1; bra +1; lit7(skipped? no: bra jumps over it); lit9 */
    static const uint8_t e3[] = {0x31, 0x28, 1, 0, 0x37, 0x39};
    assert_int_equal(cfi_read_expr(e3, sizeof(e3), regs, 0, false, 0, read_none, NULL, &out), 0);
    assert_int_equal(out, 9);
    /* underflow, unknown op, deref failing, branch out of range */
    static const uint8_t bad1[] = {0x22}, bad2[] = {0xe0}, bad3[] = {0x30, 0x06}, bad4[] = {0x2f, 0x7f, 0};
    assert_int_equal(cfi_read_expr(bad1, 1, regs, 0, false, 0, read_none, NULL, &out), -EINVAL);
    assert_int_equal(cfi_read_expr(bad2, 1, regs, 0, false, 0, read_none, NULL, &out), -EINVAL);
    assert_int_equal(cfi_read_expr(bad3, 2, regs, 0, false, 0, read_none, NULL, &out), -EFAULT);
    assert_int_equal(cfi_read_expr(bad4, 3, regs, 0, false, 0, read_none, NULL, &out), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handwritten), cmocka_unit_test(test_expressions),
        cmocka_unit_test(test_malformed),   cmocka_unit_test(test_plt_expression),
        cmocka_unit_test(test_debug_frame), cmocka_unit_test(test_libc),
        cmocka_unit_test(test_python),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
