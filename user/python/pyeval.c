/*
 * pyeval — eval-loop code ranges of an interpreter file (see pyeval.h).
 */
#include "python/pyeval.h"

#include <gelf.h>
#include <stdbool.h>
#include <string.h>

#define SPLIT_MIN 8192 /* a split-off eval-loop body is large; smaller targets are other code */

struct img {
    Elf *e;
    uint64_t sym, symsz;
    const uint8_t *code; /* the symbol's bytes, in the file's mapping */
    size_t codelen;
    Elf_Data *hdr;
    uint64_t hdr_addr;
};

static void find_sections(struct img *m)
{
    size_t shstr;
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;

    if (elf_getshdrstrndx(m->e, &shstr))
        return;
    while ((scn = elf_nextscn(m->e, scn))) {
        const char *name;

        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
            continue;
        name = elf_strptr(m->e, shstr, sh.sh_name);
        if ((sh.sh_flags & SHF_EXECINSTR) && m->sym >= sh.sh_addr && m->sym < sh.sh_addr + sh.sh_size &&
            !m->code) {
            uint64_t len = sh.sh_addr + sh.sh_size - m->sym, off = sh.sh_offset + (m->sym - sh.sh_addr);
            size_t fsize = 0;
            const uint8_t *file = (const uint8_t *)elf_rawfile(m->e, &fsize);

            if (len > m->symsz)
                len = m->symsz;
            if (file && off <= fsize && len <= fsize - off) {
                m->code = file + off;
                m->codelen = len;
            }
        } else if (name && !strcmp(name, ".eh_frame_hdr")) {
            m->hdr = elf_getdata(scn, NULL);
            m->hdr_addr = sh.sh_addr;
        }
    }
}

static int32_t rd32(const uint8_t *p)
{
    int32_t v;

    memcpy(&v, p, 4);
    return v;
}

/* The FDE range holding `addr` from the .eh_frame_hdr search table (datarel sdata4 pairs, the
 * encoding every toolchain here writes): [its start, the next FDE's start). */
static bool fde_range(const struct img *m, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
    const uint8_t *h;
    size_t size, n, a = 0, b;

    if (!m->hdr || !m->hdr->d_buf)
        return false;
    h = m->hdr->d_buf;
    size = m->hdr->d_size;
    if (size < 12 || h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
        return false;
    n = (uint32_t)rd32(h + 8);
    if (n < 2 || 12 + n * 8 > size)
        return false;
    b = n;
    while (b - a > 1) { /* last entry with start <= addr */
        size_t mid = (a + b) / 2;

        if (m->hdr_addr + (uint64_t)(int64_t)rd32(h + 12 + mid * 8) <= addr)
            a = mid;
        else
            b = mid;
    }
    *lo = m->hdr_addr + (uint64_t)(int64_t)rd32(h + 12 + a * 8);
    if (*lo > addr || a + 1 >= n)
        return false;
    *hi = m->hdr_addr + (uint64_t)(int64_t)rd32(h + 12 + (a + 1) * 8);
    return *hi > addr;
}

/* Link-time address → file offset through the PT_LOAD segment that holds it. */
static bool to_off(Elf *e, uint64_t addr, uint64_t *off)
{
    size_t n;

    if (elf_getphdrnum(e, &n))
        return false;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;

        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && addr >= ph.p_vaddr &&
            addr < ph.p_vaddr + ph.p_memsz) {
            *off = addr - ph.p_vaddr + ph.p_offset;
            return true;
        }
    }
    return false;
}

static void add(struct pyeval_ranges *r, Elf *e, uint64_t lo, uint64_t hi)
{
    uint64_t a, b;

    if (r->n == PYEVAL_MAX_RANGES || !to_off(e, lo, &a) || !to_off(e, hi - 1, &b))
        return;
    for (size_t i = 0; i < r->n; i++)
        if (r->start[i] == a)
            return;
    r->start[r->n] = a;
    r->end[r->n] = b + 1;
    r->n++;
}

void pyeval_find(Elf *e, uint64_t sym, uint64_t symsz, struct pyeval_ranges *r)
{
    struct img m = {.e = e, .sym = sym, .symsz = symsz};

    memset(r, 0, sizeof(*r));
    if (!e || !sym)
        return;
    add(r, e, sym, sym + (symsz ? symsz : 1));
    find_sections(&m);
    if (m.codelen < 6)
        return;
    /* A byte scan, not a disassembly: a stray match must also land in a large FDE range outside
     * the symbol to count. */
    for (uint64_t i = 0; i + 5 <= m.codelen; i++) {
        const uint8_t *code = m.code;
        uint64_t next, target, lo, hi;
        size_t op;

        if (code[i] == 0xe9)
            op = 1;
        else if (i + 6 <= m.codelen && code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80)
            op = 2;
        else
            continue;
        next = m.sym + i + op + 4;
        target = next + (uint64_t)(int64_t)rd32(code + i + op);
        if (target >= m.sym && target < m.sym + m.symsz)
            continue;
        if (fde_range(&m, target, &lo, &hi) && hi - lo >= SPLIT_MIN && lo < target)
            add(r, m.e, lo, hi);
    }
}
