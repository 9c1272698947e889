/*
 * GDB JIT registration (batching, swap order, removal) and the libpyjit dispatcher.
 *
 * This file defines its own __jit_debug_register_code: the library's is weak, so ours is the
 * one the descriptor protocol calls. At each call it checks what a debugger stopped there would
 * see: the list is well linked and every region published so far is named by some image.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "gdbjit.h"
#include "pyjit.h"

/* -- A debugger's view ---------------------------------------------------------------------- */

static unsigned calls, registers, unregisters;
static const char *must_see[2048]; /* names that must be visible at every call */
static size_t nmust;

/* Whether any registered image has a symbol `name`; counts images in *nimg. */
static int visible(const char *name, size_t *nimg)
{
    int found = 0;
    size_t n = 0;
    for (struct jit_code_entry *e = __jit_debug_descriptor.first_entry; e; e = e->next, n++) {
        assert_true(!e->next || e->next->prev == e);
        const uint8_t *img = (const uint8_t *)e->symfile_addr;
        const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
        assert_memory_equal(eh->e_ident, ELFMAG, SELFMAG);
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
        for (unsigned s = 0; s < eh->e_shnum && name && !found; s++) {
            if (sh[s].sh_type != SHT_SYMTAB)
                continue;
            const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[s].sh_offset);
            const char *str = (const char *)img + sh[sh[s].sh_link].sh_offset;
            for (size_t i = 1; i < sh[s].sh_size / sizeof(*sym) && !found; i++)
                found = !strcmp(str + sym[i].st_name, name);
        }
    }
    if (nimg)
        *nimg = n;
    return found;
}

void __jit_debug_register_code(void)
{
    calls++;
    struct jit_descriptor *d = &__jit_debug_descriptor;
    assert_int_equal(d->version, 1);
    if (d->action_flag == 1)
        registers++;
    else if (d->action_flag == 2)
        unregisters++;
    else
        fail_msg("action_flag %u", d->action_flag);
    for (size_t i = 0; i < nmust; i++)
        if (!visible(must_see[i], NULL))
            fail_msg("%s not visible at call %u", must_see[i], calls);
}

static size_t images(void)
{
    size_t n;
    visible(NULL, &n);
    return n;
}

/* -- Helpers -------------------------------------------------------------------------------- */

static uint8_t code[1 << 16] __attribute__((aligned(64))); /* addresses only; never run */
static char names[2048][16];

static struct pyjit_region region(size_t i)
{
    snprintf(names[i], sizeof(names[i]), "r%zu", i);
    return (struct pyjit_region){.code = code + 32 * i,
                                 .size = 18,
                                 .name = names[i],
                                 .unwind = PYJIT_UNWIND_TRAMPOLINE,
                                 .push_end = 1,
                                 .setup_end = 4,
                                 .pop_end = 17};
}

static int reset(void **state)
{
    calls = registers = unregisters = 0;
    nmust = 0;
    return 0;
}

/* -- gdbjit --------------------------------------------------------------------------------- */

static void test_descriptor_initial(void **state)
{
    assert_int_equal(__jit_debug_descriptor.version, 1);
    assert_null(__jit_debug_descriptor.first_entry);
}

static void test_batching(void **state)
{
    struct gdbjit *g;
    assert_int_equal(gdbjit_open(&g, PYJIT_ARCH_X86_64, 8), 0);
    for (size_t i = 0; i < 20; i++) {
        struct pyjit_region r = region(i);
        assert_int_equal(gdbjit_add(g, &r, 100 + i), 0);
        must_see[nmust++] = names[i]; /* from now on, at every call */
        assert_true(visible(names[i], NULL));
    }
    /* batch 8: levels of 1 and 8 regions; 20 = 2 merged images of 8 + 4 single ones */
    assert_int_equal(gdbjit_images(g), 6);
    assert_int_equal(images(), 6);
    /* each add registers its image; each merge registers one and unregisters 8 */
    assert_int_equal(registers, 20 + 2);
    assert_int_equal(unregisters, 2 * 8);

    /* Removing from a sealed image rebuilds it; the name is gone, the others stay. */
    nmust = 0;
    assert_int_equal(gdbjit_remove(g, 100 + 3), 0);
    assert_false(visible("r3", NULL));
    assert_true(visible("r2", NULL) && visible("r4", NULL));
    assert_int_equal(gdbjit_remove(g, 100 + 3), -ENOENT);
    assert_int_equal(images(), 6);
    /* Removing the only region of an image drops the image. */
    for (size_t i = 16; i < 20; i++)
        assert_int_equal(gdbjit_remove(g, 100 + i), 0);
    assert_int_equal(images(), 2);
    assert_int_equal(gdbjit_images(g), 2);
    struct pyjit_region r = region(30);
    unsigned before = registers;
    assert_int_equal(gdbjit_add(g, &r, 130), 0);
    assert_int_equal(registers, before + 1);
    assert_true(visible("r30", NULL));
    gdbjit_close(g);
    assert_null(__jit_debug_descriptor.first_entry);
    assert_int_equal(registers, unregisters);
}

static void test_rejects(void **state)
{
    struct gdbjit *g;
    assert_int_equal(gdbjit_open(&g, PYJIT_ARCH_X86_64, 0), 0);
    struct pyjit_region r = region(0);
    assert_int_equal(gdbjit_add(g, &r, 1), 0);
    unsigned before = calls;
    assert_int_equal(gdbjit_add(g, &r, 1), -EEXIST);
    struct pyjit_region bad = region(1);
    bad.setup_end = 0;
    assert_int_equal(gdbjit_add(g, &bad, 3), -EINVAL);
    bad = region(1);
    bad.size = 0;
    assert_int_equal(gdbjit_add(g, &bad, 3), -EINVAL);
    assert_int_equal(calls, before); /* gdb never saw any of these */
    assert_int_equal(gdbjit_open(&g, (enum pyjit_arch)0, 0), -EINVAL);
    assert_int_equal(gdbjit_remove(NULL, 1), -EINVAL);
    gdbjit_close(g);
}

static void test_levels(void **state)
{
    enum { N = 600 };
    struct gdbjit *g;
    assert_int_equal(gdbjit_open(&g, PYJIT_ARCH_X86_64, 256), 0);
    for (size_t i = 0; i < N; i++) {
        struct pyjit_region r = region(i);
        assert_int_equal(gdbjit_add(g, &r, i + 1), 0);
    }
    /* 600 = 2 x 256 + 5 x 16 + 8 x 1; 37 merges 1 -> 16, 2 merges 16 -> 256 */
    assert_int_equal(images(), 2 + 5 + 8);
    assert_int_equal(registers, N + 37 + 2);
    assert_int_equal(unregisters, 37 * 16 + 2 * 16);
    for (size_t i = 0; i < N; i++)
        if (!visible(names[i], NULL))
            fail_msg("%s lost", names[i]);
    gdbjit_close(g);
    assert_int_equal(registers, unregisters);
}

static void test_overlap_newest_wins(void **state)
{
    struct gdbjit *g;
    assert_int_equal(gdbjit_open(&g, PYJIT_ARCH_X86_64, 2), 0);
    struct pyjit_region old = region(0), reused = region(0);
    reused.name = "reused";
    assert_int_equal(gdbjit_add(g, &old, 1), 0);
    assert_int_equal(gdbjit_add(g, &reused, 2), 0); /* memory reused without a retire */
    assert_int_equal(images(), 1);                  /* merged; the stale name is gone */
    assert_true(visible("reused", NULL));
    assert_false(visible("r0", NULL));
    assert_int_equal(gdbjit_remove(g, 1), -ENOENT);
    assert_int_equal(gdbjit_remove(g, 2), 0);
    assert_int_equal(images(), 0);
    gdbjit_close(g);
}

static void test_one_image_per_region(void **state)
{
    struct gdbjit *g;
    assert_int_equal(gdbjit_open(&g, PYJIT_ARCH_X86_64, 1), 0);
    for (size_t i = 0; i < 40; i++) {
        struct pyjit_region r = region(i);
        assert_int_equal(gdbjit_add(g, &r, i + 1), 0);
    }
    assert_int_equal(images(), 40);
    assert_int_equal(unregisters, 0);
    gdbjit_close(g);
}

static void test_far_region_new_image(void **state)
{
    struct gdbjit *g;
    assert_int_equal(gdbjit_open(&g, PYJIT_ARCH_X86_64, 3), 0);
    struct pyjit_region a = region(0), b = region(1), c = region(2);
    b.code = (const void *)((uintptr_t)code + (3ull << 30)); /* beyond .eh_frame's reach */
    assert_int_equal(gdbjit_add(g, &a, 1), 0);
    assert_int_equal(gdbjit_add(g, &b, 2), 0);
    assert_int_equal(gdbjit_add(g, &c, 3), 0);
    assert_int_equal(gdbjit_images(g), 2); /* the merge splits by distance: {a, c}, {b} */
    assert_true(visible("r0", NULL) && visible("r1", NULL) && visible("r2", NULL));
    gdbjit_close(g);
}

/* The image handed to gdb, decoded by readelf. */
static void test_image_readelf(void **state)
{
    struct gdbjit *g;
    assert_int_equal(gdbjit_open(&g, PYJIT_ARCH_X86_64, 3), 0);
    for (size_t i = 0; i < 3; i++) {
        struct pyjit_region r = region(i);
        assert_int_equal(gdbjit_add(g, &r, i + 1), 0);
    }
    struct jit_code_entry *e = __jit_debug_descriptor.first_entry;
    assert_non_null(e);
    assert_null(e->next); /* one merged image */
    char path[] = "/tmp/test_gdbjit.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, e->symfile_addr, e->symfile_size), (ssize_t)e->symfile_size);
    close(fd);
    char cmd[128], line[512];
    snprintf(cmd, sizeof(cmd), "readelf -W -s %s | grep -c ' FUNC .*GLOBAL .* r[012]$'", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(fgets(line, sizeof(line), p));
    pclose(p);
    assert_int_equal(atoi(line), 3);
    unlink(path);
    gdbjit_close(g);
}

static void test_churn(void **state)
{
    /* Publish/retire cycles: nothing accumulates (ASan checks the memory). */
    struct gdbjit *g;
    assert_int_equal(gdbjit_open(&g, PYJIT_ARCH_X86_64, 16), 0);
    for (uint64_t i = 1; i <= 5000; i++) {
        struct pyjit_region r = region(i % 64);
        assert_int_equal(gdbjit_add(g, &r, i), 0);
        if (i > 8)
            assert_int_equal(gdbjit_remove(g, i - 8), 0);
    }
    assert_int_equal(images(), gdbjit_images(g));
    assert_true(gdbjit_images(g) <= 8);
    for (uint64_t i = 4993; i <= 5000; i++)
        assert_int_equal(gdbjit_remove(g, i), 0);
    assert_int_equal(images(), 0);
    gdbjit_close(g);
}

/* -- pyjit dispatcher ----------------------------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void test_pyjit_all_sinks(void **state)
{
    char dir[] = "/tmp/test_pyjit.XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct pyjit_options o = {
        .sinks = PYJIT_SINK_ALL, .jitdump_dir = dir, .perfmap_dir = dir, .gdb_batch = 4};
    struct pyjit *jit;
    assert_int_equal(pyjit_open(&jit, &o), 0);
    assert_int_equal(pyjit_sinks(jit), PYJIT_SINK_ALL);
    char want[256];
    snprintf(want, sizeof(want), "%s/jit-%d.dump", dir, (int)getpid());
    assert_string_equal(pyjit_jitdump_path(jit), want);
    assert_true(pyjit_region_stride(jit, 18) >= 24); /* code padded to 8 + unwinding data */

    uint64_t ids[6];
    for (size_t i = 0; i < 6; i++) {
        struct pyjit_region r = region(i);
        assert_int_equal(pyjit_publish(jit, &r, &ids[i]), 0);
    }
    assert_int_equal(images(), 3); /* batch 4: one merged image of 4, two single ones */
    struct pyjit_region bad = region(7);
    bad.pop_end = 2;
    uint64_t bad_id = 0;
    assert_int_equal(pyjit_publish(jit, &bad, &bad_id), -EINVAL);
    assert_int_equal(pyjit_sinks(jit), PYJIT_SINK_ALL); /* a bad region is not a sink failure */
    assert_int_equal(pyjit_retire(jit, ids[0]), 0);
    assert_int_equal(pyjit_retire(jit, ids[0]), -ENOENT);
    assert_int_equal(pyjit_retire(jit, 999), -ENOENT);
    assert_false(visible("r0", NULL));
    assert_int_equal(pyjit_flush(jit), 0);
    pyjit_close(jit);
    assert_null(__jit_debug_descriptor.first_entry);

    char map[256];
    snprintf(map, sizeof(map), "%s/perf-%d.map", dir, (int)getpid());
    char *m = slurp(map);
    snprintf(want, sizeof(want), "%lx 12 r5\n", (unsigned long)(uintptr_t)(code + 32 * 5));
    assert_non_null(strstr(m, want));
    assert_null(strstr(m, " r7\n"));
    struct stat st;
    snprintf(want, sizeof(want), "%s/jit-%d.dump", dir, (int)getpid());
    assert_int_equal(stat(want, &st), 0);
    assert_true(st.st_size > 6 * 64);
    unlink(want);
    unlink(map);
    rmdir(dir);
}

static void test_pyjit_failing_sink(void **state)
{
    /* A perf map directory that does not exist: the sink goes off, the others work on. */
    struct pyjit_options o = {.sinks = PYJIT_SINK_GDB | PYJIT_SINK_PERFMAP,
                              .perfmap_dir = "/nonexistent/pyjit-test"};
    struct pyjit *jit;
    assert_int_equal(pyjit_open(&jit, &o), 0);
    assert_int_equal(pyjit_sinks(jit), PYJIT_SINK_GDB);
    assert_int_equal(pyjit_region_stride(jit, 18), 32); /* no jitdump: rounded to 16 */
    assert_null(pyjit_jitdump_path(jit));
    struct pyjit_region r = region(0);
    assert_int_equal(pyjit_publish(jit, &r, NULL), 0);
    assert_true(visible("r0", NULL));
    pyjit_close(jit);

    /* $PYEBPF_JITDUMP_DIR is used when the option is not given. */
    char dir[] = "/tmp/test_pyjit.XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("PYEBPF_JITDUMP_DIR", dir, 1);
    o = (struct pyjit_options){.sinks = PYJIT_SINK_JITDUMP};
    assert_int_equal(pyjit_open(&jit, &o), 0);
    char want[256];
    snprintf(want, sizeof(want), "%s/jit-%d.dump", dir, (int)getpid());
    assert_string_equal(pyjit_jitdump_path(jit), want);
    pyjit_close(jit);
    unsetenv("PYEBPF_JITDUMP_DIR");
    unlink(want);
    rmdir(dir);

    assert_int_equal(pyjit_open(&jit, &(struct pyjit_options){.sinks = 1u << 7}), -EINVAL);
    assert_int_equal(pyjit_publish(NULL, &r, NULL), -EINVAL);
}

struct worker {
    struct pyjit *jit;
    size_t first;
    uint64_t ids[250];
};

static void *publish_many(void *arg)
{
    struct worker *w = arg;
    for (size_t i = 0; i < 250; i++) {
        struct pyjit_region r = region(w->first + i);
        if (pyjit_publish(w->jit, &r, &w->ids[i]))
            return (void *)1;
        if (i % 2 && pyjit_retire(w->jit, w->ids[i - 1]))
            return (void *)1;
    }
    return NULL;
}

static void test_pyjit_threads(void **state)
{
    struct pyjit *jit;
    assert_int_equal(pyjit_open(&jit, &(struct pyjit_options){.sinks = PYJIT_SINK_GDB}), 0);
    struct worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.jit = jit, .first = 250u * i};
        assert_int_equal(pthread_create(&t[i], NULL, publish_many, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        void *ret;
        pthread_join(t[i], &ret);
        assert_null(ret);
    }
    for (size_t i = 0; i < 1000; i++)
        if (visible(names[i], NULL) != (int)(i % 2))
            fail_msg("%s: visible %d", names[i], visible(names[i], NULL));
    pyjit_close(jit);
    assert_null(__jit_debug_descriptor.first_entry);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_descriptor_initial, reset),
        cmocka_unit_test_setup(test_batching, reset),
        cmocka_unit_test_setup(test_rejects, reset),
        cmocka_unit_test_setup(test_levels, reset),
        cmocka_unit_test_setup(test_overlap_newest_wins, reset),
        cmocka_unit_test_setup(test_one_image_per_region, reset),
        cmocka_unit_test_setup(test_far_region_new_image, reset),
        cmocka_unit_test_setup(test_image_readelf, reset),
        cmocka_unit_test_setup(test_churn, reset),
        cmocka_unit_test_setup(test_pyjit_all_sinks, reset),
        cmocka_unit_test_setup(test_pyjit_threads, reset),
        cmocka_unit_test_setup(test_pyjit_failing_sink, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
