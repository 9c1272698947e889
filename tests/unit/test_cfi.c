/*
 * CFI encoder: the bytes are wrapped in a minimal relocatable ELF and decoded by two independent
 * decoders, `readelf --debug-dump=frames-interp` (the CFA table at each location) and
 * `llvm-dwarfdump --eh-frame` (the instructions), for x86-64 and aarch64.
 */
#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cfi.h"

#define PC      0x7f0000020000ull
#define EH_ADDR (PC - 0x10000) /* pc-relative: the buffer must live within 2 GiB of the code */

/* Writes an ELF64 ET_REL holding only .eh_frame (at `eh_addr`) and .shstrtab. */
static void write_elf(const char *path, uint16_t mach, const uint8_t *eh, size_t n, uint64_t eh_addr)
{
    static const char shstr[] = "\0.eh_frame\0.shstrtab";
    Elf64_Ehdr eh_hdr = {0};
    memcpy(eh_hdr.e_ident, ELFMAG, SELFMAG);
    eh_hdr.e_ident[EI_CLASS] = ELFCLASS64;
    eh_hdr.e_ident[EI_DATA] = ELFDATA2LSB;
    eh_hdr.e_ident[EI_VERSION] = EV_CURRENT;
    eh_hdr.e_type = ET_REL;
    eh_hdr.e_machine = mach;
    eh_hdr.e_version = EV_CURRENT;
    eh_hdr.e_ehsize = sizeof(Elf64_Ehdr);
    eh_hdr.e_shentsize = sizeof(Elf64_Shdr);
    eh_hdr.e_shnum = 3;
    eh_hdr.e_shstrndx = 2;
    size_t off_eh = sizeof(Elf64_Ehdr), off_str = off_eh + n;
    eh_hdr.e_shoff = (off_str + sizeof(shstr) + 7) & ~7ul;
    Elf64_Shdr sh[3] = {{0}};
    sh[1] = (Elf64_Shdr){.sh_name = 1,
                         .sh_type = SHT_PROGBITS,
                         .sh_flags = SHF_ALLOC,
                         .sh_addr = eh_addr,
                         .sh_offset = off_eh,
                         .sh_size = n,
                         .sh_addralign = 8};
    sh[2] = (Elf64_Shdr){.sh_name = 11,
                         .sh_type = SHT_STRTAB,
                         .sh_offset = off_str,
                         .sh_size = sizeof(shstr),
                         .sh_addralign = 1};
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    static const uint8_t zero[8];
    fwrite(&eh_hdr, sizeof(eh_hdr), 1, f);
    fwrite(eh, 1, n, f);
    fwrite(shstr, 1, sizeof(shstr), f);
    fwrite(zero, 1, eh_hdr.e_shoff - (off_str + sizeof(shstr)), f);
    fwrite(sh, sizeof(sh), 1, f);
    assert_int_equal(fclose(f), 0);
}

/* Runs a shell command and returns its output with runs of blanks squeezed to one space. */
static char *run(const char *fmt, ...)
{
    char cmd[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    int c, prev = 0;
    while ((c = fgetc(p)) != EOF && len + 1 < cap) {
        if ((c == ' ' || c == '\t') && (prev == ' ' || prev == '\t'))
            continue;
        out[len++] = (char)c;
        prev = c;
    }
    out[len] = 0;
    assert_int_equal(pclose(p), 0);
    return out;
}

static void expect(const char *out, const char *needle)
{
    if (!strstr(out, needle))
        fail_msg("missing \"%s\" in:\n%s", needle, out);
}

struct built {
    char path[64];
    struct cfi_buf b;
};

/* CIE + one FDE per region, code of region i at PC + 0x100*i; written to a temp ELF. */
static void build(struct built *o, enum pyjit_arch arch, const struct pyjit_region *rs, int n)
{
    memset(o, 0, sizeof(*o));
    size_t cie = cfi_cie(&o->b, arch);
    assert_int_equal(cie, 0);
    for (int i = 0; i < n; i++)
        assert_int_equal(cfi_fde(&o->b, cie, arch, &rs[i], PC + 0x100u * i, EH_ADDR), 0);
    cfi_end(&o->b);
    assert_false(o->b.oom);
    assert_int_equal((o->b.len - 4) % 8, 0);
    strcpy(o->path, "/tmp/test_cfi.XXXXXX");
    int fd = mkstemp(o->path);
    assert_true(fd >= 0);
    close(fd);
    write_elf(o->path, (uint16_t)arch, o->b.p, o->b.len, EH_ADDR);
}

static void done(struct built *o)
{
    unlink(o->path);
    cfi_buf_free(&o->b);
}

static void test_x86_64_trampoline(void **state)
{
    /* endbr64 (4); push %rbp (1); mov %rsp,%rbp (3); call *%rdi (2); pop %rbp (1); ret (1) */
    struct pyjit_region r = {
        .size = 12, .unwind = PYJIT_UNWIND_TRAMPOLINE, .push_end = 5, .setup_end = 8, .pop_end = 11};
    struct built o;
    build(&o, PYJIT_ARCH_X86_64, &r, 1);

    char *t = run("readelf --debug-dump=frames-interp %s", o.path);
    expect(t, "pc=00007f0000020000..00007f000002000c");
    expect(t, "00007f0000020000 rsp+8 u c-8");
    expect(t, "00007f0000020005 rsp+16 c-16 c-8");
    expect(t, "00007f0000020008 rbp+16 c-16 c-8");
    expect(t, "00007f000002000b rsp+8 u c-8");
    free(t);

    t = run("readelf --debug-dump=frames %s", o.path);
    expect(t, "Code alignment factor: 1");
    expect(t, "Data alignment factor: -8");
    expect(t, "Return address column: 16");
    expect(t, "Augmentation data: 1b");
    expect(t, "DW_CFA_def_cfa_register: r6 (rbp)");
    free(t);

    t = run("llvm-dwarfdump --eh-frame %s", o.path);
    expect(t, "Augmentation: \"zR\"");
    expect(t, "Code alignment factor: 1");
    expect(t, "Data alignment factor: -8");
    expect(t, "Return address column: 16");
    expect(t, "FDE cie=00000000 pc=7f0000020000...7f000002000c");
    expect(t, "DW_CFA_advance_loc: 5");
    expect(t, "DW_CFA_def_cfa_offset: +16");
    expect(t, "DW_CFA_offset: RBP -16");
    expect(t, "DW_CFA_advance_loc: 3");
    expect(t, "DW_CFA_def_cfa_register: RBP");
    expect(t, "DW_CFA_def_cfa: RSP +8");
    expect(t, "DW_CFA_restore: RBP");
    free(t);
    done(&o);
}

static void test_x86_64_fp_and_many(void **state)
{
    /* A whole-region FP rule, a trampoline that never pops, and caller CFI bytes. */
    static const uint8_t cfi[] = {0x41, 0x0e, 0x10, 0x86, 0x02}; /* adv 1; cfa_off 16; rbp c-16 */
    struct pyjit_region r[3] = {
        {.size = 0x40, .unwind = PYJIT_UNWIND_FP},
        {.size = 0x20, .unwind = PYJIT_UNWIND_TRAMPOLINE, .push_end = 1, .setup_end = 4},
        {.size = 0x10, .unwind = PYJIT_UNWIND_CFI, .cfi = cfi, .cfi_size = sizeof(cfi)},
    };
    struct built o;
    build(&o, PYJIT_ARCH_X86_64, r, 3);
    char *t = run("readelf --debug-dump=frames-interp %s", o.path);
    expect(t, "pc=00007f0000020000..00007f0000020040");
    expect(t, "00007f0000020000 rbp+16 c-16 c-8");
    expect(t, "pc=00007f0000020100..00007f0000020120");
    expect(t, "00007f0000020101 rsp+16 c-16 c-8");
    expect(t, "00007f0000020104 rbp+16 c-16 c-8");
    expect(t, "pc=00007f0000020200..00007f0000020210");
    expect(t, "00007f0000020200 rsp+8 u c-8");
    expect(t, "00007f0000020201 rsp+16 c-16 c-8");
    free(t);
    t = run("llvm-dwarfdump --eh-frame %s", o.path);
    expect(t, "pc=7f0000020000...7f0000020040");
    expect(t, "pc=7f0000020100...7f0000020120");
    expect(t, "pc=7f0000020200...7f0000020210");
    expect(t, "DW_CFA_def_cfa: RBP +16");
    free(t);
    done(&o);
}

static void test_aarch64(void **state)
{
    /* stp x29,x30,[sp,#-16]!; mov x29,sp; blr x0; ldp x29,x30,[sp],#16; ret */
    struct pyjit_region r[2] = {
        {.size = 20, .unwind = PYJIT_UNWIND_TRAMPOLINE, .push_end = 4, .setup_end = 8, .pop_end = 16},
        {.size = 64, .unwind = PYJIT_UNWIND_FP},
    };
    struct built o;
    build(&o, PYJIT_ARCH_AARCH64, r, 2);
    char *t = run("readelf --debug-dump=frames-interp %s", o.path);
    expect(t, "pc=00007f0000020000..00007f0000020014");
    expect(t, "00007f0000020000 sp+0 u u");
    expect(t, "00007f0000020004 sp+16 c-16 c-8");
    expect(t, "00007f0000020008 x29+16 c-16 c-8");
    expect(t, "00007f0000020010 sp+0 u u");
    expect(t, "pc=00007f0000020100..00007f0000020140");
    expect(t, "00007f0000020100 x29+16 c-16 c-8");
    free(t);
    t = run("readelf --debug-dump=frames %s", o.path);
    expect(t, "Code alignment factor: 4");
    expect(t, "Data alignment factor: -8");
    expect(t, "Return address column: 30");
    free(t);
    t = run("llvm-dwarfdump --eh-frame %s", o.path);
    expect(t, "Code alignment factor: 4");
    expect(t, "Return address column: 30");
    expect(t, "pc=7f0000020000...7f0000020014");
    expect(t, "DW_CFA_advance_loc: 4"); /* one instruction, in code-alignment units of 4 */
    expect(t, "DW_CFA_def_cfa_register: W29");
    free(t);
    done(&o);
}

static void test_long_advance(void **state)
{
    /* Offsets past 63 / 255 need advance_loc1 / advance_loc2. */
    struct pyjit_region r = {.size = 0x20000,
                             .unwind = PYJIT_UNWIND_TRAMPOLINE,
                             .push_end = 0x50,
                             .setup_end = 0x300,
                             .pop_end = 0x1fff0};
    struct built o;
    build(&o, PYJIT_ARCH_X86_64, &r, 1);
    char *t = run("readelf --debug-dump=frames-interp %s", o.path);
    expect(t, "00007f0000020050 rsp+16 c-16 c-8");
    expect(t, "00007f0000020300 rbp+16 c-16 c-8");
    expect(t, "00007f000003fff0 rsp+8 u c-8");
    free(t);
    done(&o);
}

static void test_rejects_malformed(void **state)
{
    struct cfi_buf b = {0};
    size_t cie = cfi_cie(&b, PYJIT_ARCH_X86_64);
    size_t len = b.len;
    struct pyjit_region bad[] = {
        {.size = 0, .unwind = PYJIT_UNWIND_FP},
        {.size = 8, .unwind = (enum pyjit_unwind)7},
        {.size = 8, .unwind = PYJIT_UNWIND_TRAMPOLINE, .push_end = 0, .setup_end = 4},
        {.size = 8, .unwind = PYJIT_UNWIND_TRAMPOLINE, .push_end = 4, .setup_end = 4},
        {.size = 8, .unwind = PYJIT_UNWIND_TRAMPOLINE, .push_end = 1, .setup_end = 9},
        {.size = 8, .unwind = PYJIT_UNWIND_TRAMPOLINE, .push_end = 1, .setup_end = 4, .pop_end = 3},
        {.size = 8, .unwind = PYJIT_UNWIND_TRAMPOLINE, .push_end = 1, .setup_end = 4, .pop_end = 9},
        {.size = 8, .unwind = PYJIT_UNWIND_CFI, .cfi = NULL, .cfi_size = 3},
        {.size = 8, .unwind = PYJIT_UNWIND_CFI, .cfi = (const uint8_t[]){0x0c, 0x07}, .cfi_size = 2},
        {.size = 8, .unwind = PYJIT_UNWIND_CFI, .cfi = (const uint8_t[]){0x3f}, .cfi_size = 1},
        {.size = 8, .unwind = PYJIT_UNWIND_CFI, .cfi = (const uint8_t[]){0x01, 0, 0, 0, 0}, .cfi_size = 5},
        {.size = 8, .unwind = PYJIT_UNWIND_CFI, .cfi = (const uint8_t[]){0x0f, 0x05, 0x01}, .cfi_size = 3},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (cfi_fde(&b, cie, PYJIT_ARCH_X86_64, &bad[i], PC, PC) != -EINVAL)
            fail_msg("bad region %zu accepted", i);
        assert_int_equal(b.len, len); /* nothing appended */
    }
    struct pyjit_region ok = {.size = 8, .unwind = PYJIT_UNWIND_FP};
    assert_int_equal(cfi_fde(&b, cie, PYJIT_ARCH_X86_64, NULL, PC, PC), -EINVAL);
    /* sdata4 cannot reach code more than 2 GiB away from the buffer */
    assert_int_equal(cfi_fde(&b, cie, PYJIT_ARCH_X86_64, &ok, PC, 0x10000), -EINVAL);
    assert_int_equal(cfi_fde(&b, cie, (enum pyjit_arch)3, &ok, PC, PC), -EINVAL);
    /* aarch64 offsets must be whole instructions */
    struct pyjit_region odd = {.size = 16, .unwind = PYJIT_UNWIND_TRAMPOLINE, .push_end = 2, .setup_end = 8};
    assert_int_equal(cfi_fde(&b, cie, PYJIT_ARCH_AARCH64, &odd, PC, PC), -EINVAL);
    assert_int_equal(cfi_fde(&b, cie, PYJIT_ARCH_X86_64, &ok, PC, PC), 0);
    cfi_buf_free(&b);
}

static void test_eh_frame_hdr(void **state)
{
    uint8_t h[CFI_EH_FRAME_HDR_SIZE];
    cfi_eh_frame_hdr(h, 0x1100, 0x1000, 0x800, 0x1018);
    static const uint8_t want[CFI_EH_FRAME_HDR_SIZE] = {
        1,    0x1b, 0x03, 0x3b, /* version, encodings */
        0xfc, 0xfe, 0xff, 0xff, /* 0x1000 - 0x1104 = -0x104 */
        1,    0,    0,    0,    /* one FDE */
        0x00, 0xf7, 0xff, 0xff, /* 0x800 - 0x1100 = -0x900 */
        0x18, 0xff, 0xff, 0xff, /* 0x1018 - 0x1100 = -0xe8 */
    };
    assert_memory_equal(h, want, sizeof(want));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_x86_64_trampoline), cmocka_unit_test(test_x86_64_fp_and_many),
        cmocka_unit_test(test_aarch64),           cmocka_unit_test(test_long_advance),
        cmocka_unit_test(test_rejects_malformed), cmocka_unit_test(test_eh_frame_hdr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
