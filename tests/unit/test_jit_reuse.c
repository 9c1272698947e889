/* Unit tests for reused JIT code slots: which publication names an address when several cover it
 * (jitsyms: the newest wins), jitsyms' names generation, and the timed re-check that makes proc
 * (and the collector, per sample) notice that an already named address was published again. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect/collect.h"
#include "pyjit.h"
#include "symbols/jitsyms.h"
#include "symbols/proc.h"

#include "elfcache.h"

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void perfmap_add(const char *path, uint64_t start, uint64_t size, const char *name)
{
    FILE *fp = fopen(path, "a");

    assert_non_null(fp);
    fprintf(fp, "%llx %llx %s\n", (unsigned long long)start, (unsigned long long)size, name);
    assert_int_equal(fclose(fp), 0);
}

static const char *name_at(const struct jitsyms *j, uint64_t addr)
{
    const struct jitsym *s = jitsyms_find(j, addr);

    return s ? s->name : NULL;
}

/* -- newest wins: a jitdump written by libpyjit ---------------------------------------------- */

static uint8_t code[4096] __attribute__((aligned(64)));

/* Publishes [code + off, + size) under name through the jitdump sink. */
static void publish(struct pyjit *jit, size_t off, size_t size, const char *name)
{
    struct pyjit_region r = {.code = code + off, .size = size, .name = name, .unwind = PYJIT_UNWIND_FP};

    assert_int_equal(pyjit_publish(jit, &r, NULL), 0);
}

static void test_dump_later_load_wins(void **state)
{
    char dir[] = "/tmp/test_jit_reuse.XXXXXX";
    struct pyjit_options o = {.sinks = PYJIT_SINK_JITDUMP, .jitdump_dir = dir};
    struct pyjit *jit;
    struct jitsyms *j;
    uint64_t base = (uintptr_t)code;

    (void)state;
    assert_non_null(mkdtemp(dir));
    assert_int_equal(pyjit_open(&jit, &o), 0);
    char *path = strdup(pyjit_jitdump_path(jit));
    assert_non_null(path);

    publish(jit, 0, 0x40, "first_fn");
    publish(jit, 0, 0x40, "second_fn"); /* the slot reused at the same start */
    publish(jit, 0, 0x40, "third_fn");
    publish(jit, 0x100, 0x100, "old_big");
    publish(jit, 0x140, 0x20, "new_small"); /* reuses the middle of old_big */
    publish(jit, 0x300, 0x40, "old_late");
    publish(jit, 0x2f0, 0x20, "new_early"); /* starts before old_late, ends inside it */
    publish(jit, 0x400, 0x20, "old_inner");
    publish(jit, 0x3f0, 0x80, "new_outer"); /* covers old_inner whole */
    assert_int_equal(jitsyms_new(&j), 0);
    assert_int_equal(jitsyms_load_dump(j, path), 1);

    assert_string_equal(name_at(j, base), "third_fn");
    assert_string_equal(name_at(j, base + 0x3f), "third_fn");
    assert_null(name_at(j, base + 0x40));
    /* the older region keeps the part before the newer one; the rest of it is gone */
    assert_string_equal(name_at(j, base + 0x100), "old_big");
    assert_string_equal(name_at(j, base + 0x13f), "old_big");
    assert_string_equal(name_at(j, base + 0x140), "new_small");
    assert_string_equal(name_at(j, base + 0x15f), "new_small");
    assert_null(name_at(j, base + 0x160));
    /* an older region starting inside a newer one is dropped (its offsets start at its start) */
    assert_string_equal(name_at(j, base + 0x2f0), "new_early");
    assert_string_equal(name_at(j, base + 0x30f), "new_early");
    assert_null(name_at(j, base + 0x310));
    assert_string_equal(name_at(j, base + 0x400), "new_outer");
    assert_string_equal(name_at(j, base + 0x46f), "new_outer");
    assert_int_equal(jitsyms_count(j), 5);
    assert_int_equal(jitsyms_sources(j), 1);

    /* the same file again: one stat, no change */
    uint64_t g = jitsyms_names_gen(j);
    assert_int_equal(jitsyms_load_dump(j, path), 0);
    assert_int_equal(jitsyms_names_gen(j), g);
    /* a later record: re-read, the newest name, a new names generation */
    publish(jit, 0, 0x40, "fourth_fn");
    assert_int_equal(jitsyms_load_dump(j, path), 1);
    assert_string_equal(name_at(j, base + 0x10), "fourth_fn");
    assert_true(jitsyms_names_gen(j) != g);

    jitsyms_free(j);
    pyjit_close(jit);
    unlink(path);
    rmdir(dir);
    free(path);
}

/* -- newest wins: perf map lines, and jitdump over perf map ------------------------------------ */

static void test_perfmap_later_line_wins(void **state)
{
    char path[] = "/tmp/test_jit_reuse.map.XXXXXX";
    int fd = mkstemp(path);
    struct jitsyms *j;

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    perfmap_add(path, 0x1000, 0x100, "py::old:/a.py");
    perfmap_add(path, 0x2000, 0x100, "other");
    perfmap_add(path, 0x1000, 0x80, "py::new:/b.py");
    assert_int_equal(jitsyms_new(&j), 0);
    assert_int_equal(jitsyms_load_perfmap(j, path), 1);
    assert_string_equal(name_at(j, 0x1010), "py::new:/b.py");
    assert_null(name_at(j, 0x1090)); /* the newer line's size counts */
    assert_string_equal(name_at(j, 0x2010), "other");

    /* a jitdump region (extra regions here: the highest priority) wins over a perf map line */
    struct jitsym x = {0x2000, 0x2040, "from_list", NULL, 0};
    uint64_t g = jitsyms_names_gen(j);
    assert_int_equal(jitsyms_set_extra(j, &x, 1), 1);
    assert_string_equal(name_at(j, 0x2010), "from_list");
    assert_null(name_at(j, 0x2050));
    assert_true(jitsyms_names_gen(j) != g);
    /* handed over again unchanged (CPython's JIT list is, on every read): CFI tables may have
     * moved, names have not */
    g = jitsyms_names_gen(j);
    char copy[16];
    strcpy(copy, "from_list"); /* another pointer, the same name */
    x.name = copy;
    assert_int_equal(jitsyms_set_extra(j, &x, 1), 1);
    assert_int_equal(jitsyms_names_gen(j), g);
    x.end = 0x2080;
    assert_int_equal(jitsyms_set_extra(j, &x, 1), 1);
    assert_true(jitsyms_names_gen(j) != g);
    /* a region where there was none: every name stays, and so does the generation (caches too) */
    g = jitsyms_names_gen(j);
    perfmap_add(path, 0x9000, 0x100, "added");
    assert_int_equal(jitsyms_load_perfmap(j, path), 1);
    assert_string_equal(name_at(j, 0x9010), "added");
    assert_string_equal(name_at(j, 0x1010), "py::new:/b.py");
    assert_int_equal(jitsyms_names_gen(j), g);
    jitsyms_free(j);
    unlink(path);
}

/* -- the timed re-check -------------------------------------------------------------------------- */

struct fixture {
    char perfmap[64];
    uint8_t *jit; /* one page of anonymous executable memory */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f)
        return -1;
    snprintf(f->perfmap, sizeof(f->perfmap), "/tmp/perf-%d.map", (int)getpid());
    unlink(f->perfmap);
    f->jit = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (f->jit == MAP_FAILED)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    munmap(f->jit, 4096);
    unlink(f->perfmap);
    free(f);
    return 0;
}

#define HOUR_NS 3600000000000ull

static const char *sym(struct proc *p, uint64_t ip)
{
    static struct symres r;

    assert_int_equal(proc_symbolize(p, ip, &r), 0);
    return r.name ? r.name : "(none)";
}

static uint64_t reloads(const struct proc *p)
{
    struct proc_stats st;

    proc_get_stats(p, &st);
    return st.jit_reloads;
}

static void test_recheck_renames_reused_slot(void **state)
{
    struct fixture *f = *state;
    uint64_t slot = (uintptr_t)f->jit + 0x40;
    struct proc *p;

    perfmap_add(f->perfmap, slot, 0x40, "first_fn");
    uint64_t t0 = mono_ns();
    assert_int_equal(proc_open(&p, getpid(), cache), 0);
    assert_string_equal(sym(p, slot + 4), "first_fn");
    uint64_t gen = proc_generation(p);

    /* retired and published again: a named address never makes proc look by itself */
    perfmap_add(f->perfmap, slot, 0x40, "second_fn");
    assert_string_equal(sym(p, slot + 4), "first_fn");
    /* not due: before 200 ms after the last read (which came after t0), or no clock at all */
    assert_int_equal(proc_recheck_jit(p, t0 + 150000000ull), 0);
    assert_int_equal(proc_recheck_jit(p, 0), 0);
    assert_int_equal(reloads(p), 0);
    assert_string_equal(sym(p, slot + 4), "first_fn");

    /* due: re-read, the newest line names the slot, the generation moves (caches flush). An hour
     * on: the next check waits 200 ms, or 50 times as long as the last read took (a second when
     * a loaded machine made that read take 20 ms), so "a second later" is not always due. */
    uint64_t t1 = mono_ns() + HOUR_NS;
    assert_int_equal(proc_recheck_jit(p, t1), 1);
    assert_int_equal(reloads(p), 1);
    assert_true(proc_generation(p) != gen);
    assert_string_equal(sym(p, slot + 4), "second_fn");
    gen = proc_generation(p);

    /* the next one is 200 ms after that read, not sooner */
    assert_int_equal(proc_recheck_jit(p, mono_ns() + 100000000ull), 0);
    assert_int_equal(reloads(p), 1);
    /* due again with nothing changed: one stat, same generation */
    assert_int_equal(proc_recheck_jit(p, t1 + HOUR_NS), 0);
    assert_int_equal(reloads(p), 2);
    assert_int_equal(proc_generation(p), gen);
    proc_close(p);
}

/* A target that published nothing in a file is never re-checked (new code there is unnamed, and
 * an unnamed address makes proc look by itself). */
static void test_no_sources_no_recheck(void **state)
{
    struct fixture *f = *state;
    struct proc *p;

    (void)f;
    assert_int_equal(proc_open(&p, getpid(), cache), 0);
    for (int i = 1; i <= 5; i++)
        assert_int_equal(proc_recheck_jit(p, mono_ns() + (uint64_t)i * HOUR_NS), 0);
    assert_int_equal(reloads(p), 0);
    proc_close(p);
}

/* The collector re-checks per sample, on the sample's timestamp. */
static void test_collector_rechecks_on_sample_time(void **state)
{
    struct fixture *f = *state;
    uint64_t slot = (uintptr_t)f->jit + 0x80;
    struct collect_opts o = {.unwind = UNWIND_FP};
    struct profile prof;
    struct collector *c;
    struct sample_event *ev = calloc(1, sizeof(*ev) + 2 * SAMPLE_STACK_BYTES);
    char lab[256];

    assert_non_null(ev);
    assert_int_equal(profile_init(&prof), 0);
    assert_int_equal(collect_open(&c, &o, &prof), 0);
    perfmap_add(f->perfmap, slot, 0x40, "first_fn");
    ev->pid = (uint32_t)getpid();
    ev->tid = (uint32_t)gettid();
    strcpy(ev->comm, "tester");
    sample_ustack(ev)[0] = ev->regs.ip = slot + 4;
    ev->ustack_len = 8;
    ev->time_ns = mono_ns();
    assert_true(collect_sample(c, ev, sample_event_len(ev)) >= 0);
    perfmap_add(f->perfmap, slot, 0x40, "second_fn");
    ev->time_ns += 100000000ull; /* 100 ms later: not due, the cached name stays */
    assert_true(collect_sample(c, ev, sample_event_len(ev)) >= 0);
    ev->time_ns = mono_ns() + HOUR_NS; /* due however long the first read took */
    assert_true(collect_sample(c, ev, sample_event_len(ev)) >= 0);

    /* thread -> first_fn (2 samples), thread -> second_fn (1 sample) */
    uint64_t first = 0, second = 0;
    for (uint32_t i = 1; i < prof.nnodes; i++) {
        profile_frame_label(&prof, prof.nodes[i].frame, lab, sizeof(lab));
        if (!strcmp(lab, "first_fn"))
            first += prof.nodes[i].self;
        else if (!strcmp(lab, "second_fn"))
            second += prof.nodes[i].self;
    }
    assert_int_equal(first, 2);
    assert_int_equal(second, 1);
    struct collect_stats cs;
    collect_get_stats(c, &cs);
    assert_int_equal(cs.proc.jit_reloads, 1);
    collect_close(c);
    profile_free(&prof);
    free(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dump_later_load_wins),
        cmocka_unit_test(test_perfmap_later_line_wins),
        cmocka_unit_test_setup_teardown(test_recheck_renames_reused_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_sources_no_recheck, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collector_rechecks_on_sample_time, setup, teardown),
    };
    return cmocka_run_group_tests(tests, elfcache_setup, elfcache_teardown);
}
