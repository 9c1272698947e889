/*
 * ELF image builder: images are written to a temp file and read back by readelf (header,
 * sections, symbols) and by readelf/llvm-dwarfdump for the .eh_frame they carry.
 */
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

#include "elfimg.h"

/* Fake code addresses: the builder never reads the code. */
#define CODE(a) ((const void *)(uintptr_t)(a))

static char *run(const char *fmt, ...)
{
    char cmd[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 20, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    int c, prev = 0;
    while ((c = fgetc(p)) != EOF && len + 1 < cap) {
        if ((c == ' ' || c == '\t') && (prev == ' ' || prev == '\t'))
            continue; /* squeeze blanks: column widths differ between binutils versions */
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

static size_t count(const char *out, const char *needle)
{
    size_t n = 0;
    for (const char *p = out; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Builds an image and writes it to a temp file whose name is returned in path. */
static void build_file(char path[64], enum pyjit_arch arch, const struct pyjit_region *r, size_t n)
{
    uint8_t *img;
    size_t len;
    assert_int_equal(elfimg_build(arch, r, n, &img, &len), 0);
    strcpy(path, "/tmp/test_elfimg.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, img, len), (ssize_t)len);
    close(fd);
    free(img);
}

static void test_one_region(void **state)
{
    struct pyjit_region r = {.code = CODE(0x7f1234560000),
                             .size = 12,
                             .name = "jit_a",
                             .unwind = PYJIT_UNWIND_TRAMPOLINE,
                             .push_end = 5,
                             .setup_end = 8,
                             .pop_end = 11};
    char path[64];
    build_file(path, PYJIT_ARCH_X86_64, &r, 1);
    char *t = run("readelf -W -h -S -s %s 2>&1", path);
    expect(t, "Type: DYN");
    expect(t, "Machine: Advanced Micro Devices X86-64");
    expect(t, "[ 1] .text NOBITS 00007f1234560000");
    expect(t, " 00000c 00 AX 0 0 1");
    expect(t, "] .eh_frame PROGBITS 00007f1234560000");
    expect(t, "] .symtab SYMTAB");
    expect(t, "] .strtab STRTAB");
    expect(t, "] .shstrtab STRTAB");
    expect(t, "1: 00007f1234560000 12 FUNC GLOBAL DEFAULT 1 jit_a");
    if (strstr(t, "Warning") || strstr(t, "Error"))
        fail_msg("readelf complains:\n%s", t);
    free(t);
    t = run("readelf --debug-dump=frames-interp %s", path);
    expect(t, "pc=00007f1234560000..00007f123456000c");
    expect(t, "00007f1234560008 rbp+16 c-16 c-8");
    free(t);
    unlink(path);
}

static void test_many_regions_and_runs(void **state)
{
    /* Three touching regions (one .text run), one after a 16-byte-alignment gap (same run),
     * one far away with a gap code could live in (own run), given out of order. */
    struct pyjit_region all[6] = {
        {.code = CODE(0x7f0000001020), .size = 0x10, .name = "c", .unwind = PYJIT_UNWIND_FP},
        {.code = CODE(0x7f0000001000), .size = 0x10, .name = "a", .unwind = PYJIT_UNWIND_FP},
        {.code = CODE(0x7f0000001010), .size = 0x10, .name = "b", .unwind = PYJIT_UNWIND_FP},
        {.code = CODE(0x7f0000101000), .size = 0x40, .name = NULL, .unwind = PYJIT_UNWIND_FP},
        {.code = CODE(0x7f0000001030), .size = 0x8, .name = "d", .unwind = PYJIT_UNWIND_FP},
        {.code = CODE(0x7f0000001040), .size = 0x4, .name = "e", .unwind = PYJIT_UNWIND_FP},
    };
    char path[64];
    build_file(path, PYJIT_ARCH_X86_64, all, 6);
    char *t = run("readelf -W -S -s %s", path);
    expect(t, "[ 1] .text NOBITS 00007f0000001000 000040 000044 00 AX");
    expect(t, "[ 2] .text NOBITS 00007f0000101000 000040 000040 00 AX");
    expect(t, "00007f0000001000 16 FUNC GLOBAL DEFAULT 1 a");
    expect(t, "00007f0000001010 16 FUNC GLOBAL DEFAULT 1 b");
    expect(t, "00007f0000001020 16 FUNC GLOBAL DEFAULT 1 c");
    expect(t, "00007f0000001030 8 FUNC GLOBAL DEFAULT 1 d");
    expect(t, "00007f0000001040 4 FUNC GLOBAL DEFAULT 1 e");
    expect(t, "00007f0000101000 64 FUNC GLOBAL DEFAULT 2 jit_7f0000101000");
    free(t);
    t = run("llvm-dwarfdump --eh-frame %s", path);
    assert_int_equal(count(t, " FDE "), 6);
    expect(t, "pc=7f0000101000...7f0000101040");
    expect(t, "pc=7f0000001040...7f0000001044");
    free(t);
    unlink(path);
}

static void test_aarch64_image(void **state)
{
    struct pyjit_region r = {.code = CODE(0xffff80001000),
                             .size = 20,
                             .name = "tramp",
                             .unwind = PYJIT_UNWIND_TRAMPOLINE,
                             .push_end = 4,
                             .setup_end = 8,
                             .pop_end = 16};
    char path[64];
    build_file(path, PYJIT_ARCH_AARCH64, &r, 1);
    char *t = run("readelf -W -h -s %s", path);
    expect(t, "Machine: AArch64");
    expect(t, "0000ffff80001000 20 FUNC GLOBAL DEFAULT 1 tramp");
    free(t);
    t = run("readelf --debug-dump=frames-interp %s", path);
    expect(t, "0000ffff80001008 x29+16 c-16 c-8");
    free(t);
    unlink(path);
}

static void test_batch_of_1000(void **state)
{
    enum { N = 1000 };
    struct pyjit_region *r = calloc(N, sizeof(*r));
    char(*names)[16] = calloc(N, 16);
    assert_non_null(r);
    assert_non_null(names);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], 16, "f%d", i);
        r[i] = (struct pyjit_region){.code = CODE(0x7f0000000000 + 0x40ull * i),
                                     .size = 12,
                                     .name = names[i],
                                     .unwind = PYJIT_UNWIND_TRAMPOLINE,
                                     .push_end = 5,
                                     .setup_end = 8,
                                     .pop_end = 11};
    }
    char path[64];
    build_file(path, PYJIT_ARCH_X86_64, r, N);
    char *t = run("readelf -W -s %s", path);
    assert_int_equal(count(t, " FUNC GLOBAL "), N);
    expect(t, "00007f000000f9c0 12 FUNC GLOBAL DEFAULT 1000 f999");
    free(t);
    unlink(path);
    free(r);
    free(names);
}

static void test_rejects(void **state)
{
    uint8_t *img = NULL;
    size_t len = 0;
    struct pyjit_region ok = {.code = CODE(0x7f0000001000), .size = 16, .unwind = PYJIT_UNWIND_FP};
    struct pyjit_region two[2] = {ok, ok};
    assert_int_equal(elfimg_build(PYJIT_ARCH_X86_64, two, 2, &img, &len), -EINVAL); /* overlap */
    two[1].code = CODE(0x7f0000001008);
    assert_int_equal(elfimg_build(PYJIT_ARCH_X86_64, two, 2, &img, &len), -EINVAL);
    two[1].code = CODE(0x7f0000001000 + (2ull << 30));
    assert_int_equal(elfimg_build(PYJIT_ARCH_X86_64, two, 2, &img, &len), -ERANGE);
    assert_int_equal(elfimg_build(PYJIT_ARCH_X86_64, &ok, 0, &img, &len), -EINVAL);
    assert_int_equal(elfimg_build((enum pyjit_arch)1, &ok, 1, &img, &len), -EINVAL);
    struct pyjit_region bad = ok;
    bad.size = 0;
    assert_int_equal(elfimg_build(PYJIT_ARCH_X86_64, &bad, 1, &img, &len), -EINVAL);
    bad = ok;
    bad.code = NULL;
    assert_int_equal(elfimg_build(PYJIT_ARCH_X86_64, &bad, 1, &img, &len), -EINVAL);
    bad = ok;
    bad.unwind = PYJIT_UNWIND_TRAMPOLINE; /* push_end 0 */
    assert_int_equal(elfimg_build(PYJIT_ARCH_X86_64, &bad, 1, &img, &len), -EINVAL);
    assert_null(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_region),    cmocka_unit_test(test_many_regions_and_runs),
        cmocka_unit_test(test_aarch64_image), cmocka_unit_test(test_batch_of_1000),
        cmocka_unit_test(test_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
