/*
 * name@plt for PLT stubs, against objdump's <name@plt> labels: every labelled entry of .plt,
 * .plt.sec and .plt.got resolves to the same name (start and last byte), and no unlabelled entry
 * gets an @plt name. Real binaries (Debian's stripped python3.11, libc, pyenv's python3.12, a
 * test program) plus programs compiled here with IBT PLTs (-z ibtplt: .plt.sec), with -z now,
 * with a .plt.got stub (GLOB_DAT), and static (IRELATIVE only, no objdump labels). A second check
 * per binary: each `jmp *slot` objdump decodes there is in a stub named after readelf's relocation
 * of that slot. Entries without a label (PLT0, lazy IBT entries) are "[plt]".
 */
#include <errno.h>
#include <fcntl.h>
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

#include "symbols/elfsym.h"

#define LIBC  "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define PY311 "/usr/bin/python3.11"
#define PY312 "/root/.pyenv/versions/3.12.1/bin/python3.12"

static struct elfsym_cache *cache;
static char tmpdir[64];

struct label {
    uint64_t addr;
    char name[256];
};

struct section {
    uint64_t addr, size, entsize;
};

static bool have(const char *cmd)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "command -v %s >/dev/null 2>&1", cmd);
    return system(buf) == 0;
}

/* .plt, .plt.sec and .plt.got as readelf prints them. */
static size_t plt_sections(const char *path, struct section *s, size_t max)
{
    char cmd[4400], line[512], name[64];
    snprintf(cmd, sizeof(cmd), "readelf -SW '%s' 2>/dev/null", path);
    FILE *fp = popen(cmd, "r");
    assert_non_null(fp);
    size_t n = 0;
    unsigned long long a, o, sz, es;
    while (fgets(line, sizeof(line), fp)) {
        char *p = strchr(line, ']');
        if (p && n < max && sscanf(p + 1, " %63s %*s %llx %llx %llx %llx", name, &a, &o, &sz, &es) == 5 &&
            (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") || !strcmp(name, ".plt.got")))
            s[n++] = (struct section){a, sz, es};
    }
    pclose(fp);
    return n;
}

/* objdump's "<name@plt>:" labels in the PLT sections (not "<name@plt-0x10>", PLT0's). */
static size_t objdump_labels(const char *path, struct label **out)
{
    char cmd[4400], line[1024];
    snprintf(cmd, sizeof(cmd),
             "objdump -d --section=.plt --section=.plt.sec --section=.plt.got '%s' 2>/dev/null", path);
    FILE *fp = popen(cmd, "r");
    assert_non_null(fp);
    size_t n = 0, cap = 0;
    struct label *v = NULL;
    unsigned long long addr;
    char name[256];
    while (fgets(line, sizeof(line), fp)) {
        size_t len;
        if (sscanf(line, "%llx <%255[^>]>:", &addr, name) != 2 || (len = strlen(name)) < 5 ||
            strcmp(name + len - 4, "@plt"))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            v = realloc(v, cap * sizeof(*v));
            assert_non_null(v);
        }
        v[n].addr = addr;
        snprintf(v[n].name, sizeof(v[n].name), "%s", name);
        n++;
    }
    pclose(fp);
    *out = v;
    return n;
}

/* True when `nm -D` lists `name` at addr: the IFUNC symbol an "*ABS*+0xADDR@plt" stub calls. */
static bool nm_lists(const char *path, const char *nm_args, uint64_t addr, const char *name)
{
    char cmd[4400], line[512], nm[256];
    snprintf(cmd, sizeof(cmd), "nm %s --defined-only '%s' 2>/dev/null", nm_args, path);
    FILE *fp = popen(cmd, "r");
    assert_non_null(fp);
    bool found = false;
    unsigned long long a;
    while (!found && fgets(line, sizeof(line), fp)) {
        if (sscanf(line, "%llx %*c %255s", &a, nm) != 2 || a != addr)
            continue;
        char *at = strchr(nm, '@');
        if (at)
            *at = '\0';
        found = !strcmp(nm, name);
    }
    pclose(fp);
    return found;
}

/* readelf's relocation at GOT slot `slot`: the symbol name (version cut off), or for an
 * IRELATIVE one "" and the resolver address in *addend. False when no relocation is there. */
static bool reloc_at(const char *path, uint64_t slot, char *name, size_t size, uint64_t *addend)
{
    char cmd[4400], line[1024], type[64], sym[256];
    snprintf(cmd, sizeof(cmd), "readelf -rW '%s' 2>/dev/null", path);
    FILE *fp = popen(cmd, "r");
    assert_non_null(fp);
    bool found = false;
    unsigned long long off, info, value;
    while (!found && fgets(line, sizeof(line), fp)) {
        if (sscanf(line, "%llx %llx %63s", &off, &info, type) != 3 || off != slot)
            continue;
        if (!strcmp(type, "R_X86_64_IRELATIVE") && sscanf(line, "%*x %*x %*s %llx", &value) == 1) {
            name[0] = '\0';
            *addend = value;
            found = true;
        } else if ((!strcmp(type, "R_X86_64_JUMP_SLOT") || !strcmp(type, "R_X86_64_GLOB_DAT")) &&
                   sscanf(line, "%*x %*x %*s %llx %255s", &value, sym) == 2) {
            char *at = strchr(sym, '@');
            if (at)
                *at = '\0';
            snprintf(name, size, "%s", sym);
            found = true;
        }
    }
    pclose(fp);
    return found;
}

/* Independent of objdump's labels (it gives none in a static executable): every
 * `jmp *disp(%rip)  # SLOT` objdump decodes in the PLT sections is inside a stub we name after
 * readelf's relocation of SLOT (an IRELATIVE one: a symbol nm lists at the resolver). */
static size_t compare_slots(const char *path, const char *nm_args, size_t min_jumps)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct elf_file *f;
    assert_int_equal(elfsym_open(cache, fd, path, "", &f), 0);
    close(fd);
    char cmd[4400], line[1024];
    snprintf(cmd, sizeof(cmd),
             "objdump -d --section=.plt --section=.plt.sec --section=.plt.got '%s' 2>/dev/null", path);
    FILE *fp = popen(cmd, "r");
    assert_non_null(fp);
    size_t checked = 0, unrelocated = 0;
    unsigned long long addr, slot;
    while (fgets(line, sizeof(line), fp)) {
        char *jmp = strstr(line, "jmp    *0x"), *hash = strstr(line, "(%rip)");
        if (!jmp || !hash || sscanf(line, " %llx:", &addr) != 1 || !(hash = strchr(hash, '#')) ||
            sscanf(hash + 1, " %llx", &slot) != 1)
            continue;
        char want[300], base[256];
        uint64_t addend = 0, off;
        if (!reloc_at(path, slot, base, sizeof(base), &addend)) {
            unrelocated++; /* PLT0's jump to the lazy resolver */
            continue;
        }
        const char *got = elfsym_lookup(f, addr, &off);
        size_t len = got ? strlen(got) : 0;
        if (!base[0] && len > 4) {
            snprintf(base, sizeof(base), "%.*s", (int)(len - 4), got);
            if (!nm_lists(path, nm_args, addend, base))
                fail_msg("%s: %#llx: IRELATIVE slot %#llx resolver %#llx, but we say %s", path, addr, slot,
                         (unsigned long long)addend, got);
        }
        snprintf(want, sizeof(want), "%s@plt", base);
        if (!got || strcmp(got, want) || off > 15)
            fail_msg("%s: %#llx: jmp via %#llx (%s), lookup says %s+%llu", path, addr, slot, want,
                     got ? got : "(none)", (unsigned long long)off);
        checked++;
    }
    pclose(fp);
    print_message("# %s: %zu PLT jumps named after their slot's relocation (%zu via no relocation)\n", path,
                  checked, unrelocated);
    assert_true(checked >= min_jumps);
    elfsym_put(f);
    return checked;
}

/* Our name for each objdump label must be objdump's (an IFUNC stub: the symbol at the
 * resolver address objdump prints); entries objdump leaves unlabelled stay without @plt. */
static size_t compare_plt(const char *path, size_t min_labels)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct elf_file *f;
    assert_int_equal(elfsym_open(cache, fd, path, "", &f), 0);
    close(fd);
    struct section sec[8];
    size_t nsec = plt_sections(path, sec, 8);
    struct label *lab;
    size_t nlab = objdump_labels(path, &lab), checked = 0, bare = 0;
    assert_true(nlab >= min_labels);
    for (size_t i = 0; i < nlab; i++) {
        uint64_t es = 0;
        for (size_t k = 0; k < nsec; k++)
            if (lab[i].addr - sec[k].addr < sec[k].size)
                es = sec[k].entsize ? sec[k].entsize : 16;
        if (!es)
            fail_msg("%s: label %s at %#llx outside the PLT sections", path, lab[i].name,
                     (unsigned long long)lab[i].addr);
        uint64_t off, off2;
        const char *got = elfsym_lookup(f, lab[i].addr, &off);
        const char *got2 = elfsym_lookup(f, lab[i].addr + es - 1, &off2);
        char want[300];
        unsigned long long target;
        snprintf(want, sizeof(want), "%s", lab[i].name);
        if (sscanf(lab[i].name, "*ABS*+%llx@plt", &target) == 1 && got && strcmp(got, want)) {
            size_t len = strlen(got);
            snprintf(want, sizeof(want), "%.*s", (int)(len > 4 ? len - 4 : 0), got);
            if (!nm_lists(path, "-D", target, want))
                fail_msg("%s: %#llx: objdump says %s, nm has no %s there", path,
                         (unsigned long long)lab[i].addr, lab[i].name, want);
            snprintf(want, sizeof(want), "%s", got);
        }
        if (!got || off || strcmp(got, want) || !got2 || strcmp(got2, want) || off2 != es - 1)
            fail_msg("%s: %#llx: objdump says %s, lookup says %s+%llu", path, (unsigned long long)lab[i].addr,
                     lab[i].name, got ? got : "(none)", (unsigned long long)off);
        checked++;
    }
    for (size_t k = 0; k < nsec; k++) {
        uint64_t es = sec[k].entsize ? sec[k].entsize : 16;
        for (uint64_t a = sec[k].addr; a + es <= sec[k].addr + sec[k].size; a += es) {
            bool labelled = false;
            for (size_t i = 0; i < nlab && !labelled; i++)
                labelled = lab[i].addr == a;
            if (labelled)
                continue;
            uint64_t off;
            const char *got = elfsym_lookup(f, a, &off);
            if (!got || strcmp(got, "[plt]") || off)
                fail_msg("%s: %#llx: no objdump label, lookup says %s+%llu (want [plt])", path,
                         (unsigned long long)a, got ? got : "(none)", (unsigned long long)off);
            bare++;
        }
    }
    print_message("# %s: %zu objdump <name@plt> labels matched, %zu unlabelled entries without one\n", path,
                  checked, bare);
    free(lab);
    elfsym_put(f);
    return checked;
}

static int setup(void **state)
{
    if (!have("objdump") || !have("readelf") || !have("nm"))
        return 0; /* each test skips */
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_elfsym_plt.XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return elfsym_cache_new(&cache);
}

static int teardown(void **state)
{
    elfsym_cache_free(cache);
    if (tmpdir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        return system(cmd) ? -1 : 0;
    }
    return 0;
}

#define NEED_TOOLS()                                                                                         \
    do {                                                                                                     \
        if (!cache) {                                                                                        \
            print_message("# objdump, readelf or nm missing: no independent PLT decoder\n");                 \
            skip();                                                                                          \
        }                                                                                                    \
    } while (0)

static void test_python311(void **state)
{
    NEED_TOOLS();
    if (access(PY311, R_OK))
        skip();
    compare_plt(PY311, 400); /* stripped: .plt names come from .rela.plt and .dynsym alone */
    compare_slots(PY311, "-D", 400);
}

static void test_libc(void **state)
{
    NEED_TOOLS();
    compare_plt(LIBC, 40); /* IRELATIVE stubs and a .plt.got */
    compare_slots(LIBC, "-D", 40);
}

static void test_python312(void **state)
{
    NEED_TOOLS();
    if (access(PY312, R_OK))
        skip();
    compare_plt(PY312, 2);
    compare_slots(PY312, "-D", 2);
}

static void test_progs(void **state)
{
    NEED_TOOLS();
    const char *b = getenv("BUILD");
    char path[4096];
    snprintf(path, sizeof(path), "%s/progs/callgraph", b ? b : "build");
    if (access(path, R_OK))
        skip();
    compare_plt(path, 3);
    compare_slots(path, "-D", 3);
}

/* Compiles a program calling a few libc functions with the given flags; compares its PLT. */
static void compile_and_compare(const char *tag, const char *flags, size_t min_labels, size_t min_jumps)
{
    static const char src[] = "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
                              "int main(int c, char **v) { char *p = malloc(c + 8); strcpy(p, v[0]);\n"
                              "  printf(\"%ld %zu\\n\", strtol(p, 0, 10), strlen(p)); free(p); return 0; }\n";
    char c_path[128], bin[128], cmd[1024];
    snprintf(c_path, sizeof(c_path), "%s/p.c", tmpdir);
    FILE *fp = fopen(c_path, "w");
    assert_non_null(fp);
    fputs(src, fp);
    fclose(fp);
    snprintf(bin, sizeof(bin), "%s/%s", tmpdir, tag);
    snprintf(cmd, sizeof(cmd), "cc -O1 %s -o '%s' '%s' 2>/dev/null", flags, bin, c_path);
    if (system(cmd)) {
        print_message("# cc %s failed: toolchain cannot build this layout\n", flags);
        skip();
    }
    if (min_labels) /* objdump labels no stub of a static executable */
        compare_plt(bin, min_labels);
    compare_slots(bin, strstr(flags, "-static") ? "" : "-D", min_jumps);
}

static void test_ibt_plt(void **state)
{
    NEED_TOOLS();
    /* .plt (lazy, no GOT jump: unlabelled), .plt.sec (the stubs), .plt.got (__cxa_finalize) */
    compile_and_compare("ibt", "-fcf-protection=full -Wl,-z,ibtplt", 4, 4);
}

static void test_ibt_now(void **state)
{
    NEED_TOOLS();
    compile_and_compare("ibtnow", "-fcf-protection=full -Wl,-z,ibtplt,-z,now", 4, 4);
}

static void test_plain_now(void **state)
{
    NEED_TOOLS();
    compile_and_compare("now", "-fcf-protection=none -Wl,-z,now", 4, 4);
}

/* A static executable: .plt without PLT0, 8-byte stubs, IRELATIVE slots only, and no objdump
 * labels; the jumps and readelf's relocations are the reference. */
static void test_static(void **state)
{
    NEED_TOOLS();
    compile_and_compare("static", "-static", 0, 5);
}

static void test_static_pie(void **state)
{
    NEED_TOOLS();
    compile_and_compare("staticpie", "-static-pie", 0, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python311), cmocka_unit_test(test_libc),    cmocka_unit_test(test_python312),
        cmocka_unit_test(test_progs),     cmocka_unit_test(test_ibt_plt), cmocka_unit_test(test_ibt_now),
        cmocka_unit_test(test_plain_now), cmocka_unit_test(test_static),  cmocka_unit_test(test_static_pie),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
