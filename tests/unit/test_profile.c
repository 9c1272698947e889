/* Unit tests for user/profile/profile.c: interning, the stack trie, totals, labels, walking. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile/profile.h"

static int setup(void **state)
{
    struct profile *p = malloc(sizeof(*p));
    if (!p || profile_init(p) != 0)
        return -1;
    *state = p;
    return 0;
}

static int teardown(void **state)
{
    profile_free(*state);
    free(*state);
    return 0;
}

static void test_frames_are_interned(void **state)
{
    struct profile *p = *state;
    int64_t a = profile_frame(p, FRAME_PYTHON, "f", "/x.py", 3);
    int64_t b = profile_frame(p, FRAME_PYTHON, "f", "/x.py", 3);
    int64_t c = profile_frame(p, FRAME_PYTHON, "f", "/x.py", 4);
    int64_t d = profile_frame(p, FRAME_NATIVE, "f", "/x.py", 3);
    int64_t e = profile_frame(p, FRAME_PYTHON, "f", NULL, 3);
    assert_true(a >= 0);
    assert_int_equal(a, b);
    assert_int_not_equal(a, c);
    assert_int_not_equal(a, d);
    assert_int_not_equal(a, e);
    assert_int_equal(p->nframes, 4);
    /* Names are copied, and equal strings share one copy. */
    char buf[8];
    strcpy(buf, "f");
    assert_int_equal(profile_frame(p, FRAME_PYTHON, buf, "/x.py", 3), a);
    assert_ptr_equal(p->frames[a].name, p->frames[c].name);
    assert_ptr_not_equal(p->frames[a].name, buf);
    assert_null(p->frames[e].file);
}

static void test_trie_and_totals(void **state)
{
    struct profile *p = *state;
    uint32_t t = profile_frame(p, FRAME_THREAD, "thread 7 (python3)", NULL, 0);
    uint32_t m = profile_frame(p, FRAME_NATIVE, "main", "/usr/bin/python3", 0);
    uint32_t o = profile_frame(p, FRAME_PYTHON, "outer", "x.py", 10);
    uint32_t i = profile_frame(p, FRAME_PYTHON, "inner", "x.py", 3);
    uint32_t k = profile_frame(p, FRAME_KERNEL, "do_syscall_64", NULL, 0);
    uint32_t s1[] = {t, m, o, i}, s2[] = {t, m, o}, s3[] = {t, m, o, i, k};
    int64_t n1 = profile_add(p, s1, 4, 5);
    int64_t n2 = profile_add(p, s2, 3, 2);
    int64_t n1b = profile_add(p, s1, 4, 1);
    int64_t n3 = profile_add(p, s3, 5, 4);
    assert_true(n1 > 0 && n2 > 0 && n3 > 0);
    assert_int_equal(n1, n1b);
    /* root + t, m, o, i, k */
    assert_int_equal(p->nnodes, 6);
    assert_int_equal(p->meta.samples, 12);
    profile_finish(p);
    assert_int_equal(p->nodes[0].total, 12);
    assert_int_equal(p->nodes[n1].self, 6);
    assert_int_equal(p->nodes[n1].total, 10);
    assert_int_equal(p->nodes[n2].self, 2);
    assert_int_equal(p->nodes[n2].total, 12);
    assert_int_equal(p->nodes[n3].total, 4);
    assert_int_equal(p->nodes[n3].parent, n1);
    /* profile_finish twice gives the same totals. */
    profile_finish(p);
    assert_int_equal(p->nodes[0].total, 12);

    uint32_t path[8];
    size_t d = profile_stack(p, (uint32_t)n3, path, 8);
    assert_int_equal(d, 5);
    assert_int_equal(p->nodes[path[0]].frame, t);
    assert_int_equal(p->nodes[path[4]].frame, k);
    /* Too small: keeps the root side. */
    d = profile_stack(p, (uint32_t)n3, path, 2);
    assert_int_equal(d, 2);
    assert_int_equal(p->nodes[path[0]].frame, t);
    assert_int_equal(p->nodes[path[1]].frame, m);
}

static void test_walk_children(void **state)
{
    struct profile *p = *state;
    uint32_t t = profile_frame(p, FRAME_THREAD, "thread 1 (a)", NULL, 0);
    uint32_t f[10];
    for (int j = 0; j < 10; j++) {
        char name[16];
        snprintf(name, sizeof(name), "f%d", j);
        f[j] = profile_frame(p, FRAME_NATIVE, name, NULL, 0);
        uint32_t st[] = {t, f[j]};
        assert_true(profile_add(p, st, 2, j + 1) > 0);
    }
    uint32_t tn = profile_first_child(p, 0);
    assert_int_not_equal(tn, 0);
    assert_int_equal(profile_next_sibling(p, tn), 0);
    unsigned seen = 0, count = 0;
    for (uint32_t c = profile_first_child(p, tn); c; c = profile_next_sibling(p, c)) {
        assert_int_equal(p->nodes[c].parent, tn);
        seen |= 1u << (p->nodes[c].frame - f[0]);
        count++;
    }
    assert_int_equal(count, 10);
    assert_int_equal(seen, 0x3ff);
}

static void test_labels(void **state)
{
    struct profile *p = *state;
    char buf[64];
    uint32_t py = profile_frame(p, FRAME_PYTHON, "C.run", "/app/x.py", 42);
    uint32_t pyn = profile_frame(p, FRAME_PYTHON, "<module>", "/app/x.py", 0);
    uint32_t k = profile_frame(p, FRAME_KERNEL, "schedule", NULL, 0);
    uint32_t j = profile_frame(p, FRAME_JIT, "py::f:/x.py", NULL, 0);
    uint32_t n = profile_frame(p, FRAME_NATIVE, "PyObject_Call", "/usr/lib/libpython3.11.so", 0);
    assert_int_equal(profile_frame_label(p, py, buf, sizeof(buf)), strlen("C.run (/app/x.py:42)"));
    assert_string_equal(buf, "C.run (/app/x.py:42)");
    profile_frame_label(p, pyn, buf, sizeof(buf));
    assert_string_equal(buf, "<module> (/app/x.py)");
    profile_frame_label(p, k, buf, sizeof(buf));
    assert_string_equal(buf, "schedule_[k]");
    profile_frame_label(p, j, buf, sizeof(buf));
    assert_string_equal(buf, "py::f:/x.py");
    profile_frame_label(p, n, buf, sizeof(buf));
    assert_string_equal(buf, "PyObject_Call");
    /* Truncation reports the length needed, as snprintf. */
    char small[6];
    assert_int_equal(profile_frame_label(p, py, small, sizeof(small)), 20);
    assert_string_equal(small, "C.run");
}

static void test_shown(void **state)
{
    struct profile *p = *state;
    uint32_t t = profile_frame(p, FRAME_THREAD, "thread 1 (a)", NULL, 0);
    uint32_t anon = profile_frame(p, FRAME_THREAD, "", NULL, 0);
    uint32_t n = profile_frame(p, FRAME_NATIVE, "main", NULL, 0);
    assert_false(profile_frame_shown(p, t));
    assert_true(profile_frame_shown(p, n));
    p->show_threads = true;
    assert_true(profile_frame_shown(p, t));
    assert_false(profile_frame_shown(p, anon));
}

static void test_bad_input(void **state)
{
    struct profile *p = *state;
    uint32_t bogus[] = {12345};
    assert_int_equal(profile_add(p, bogus, 1, 1), -EINVAL);
    assert_int_equal(profile_add(p, bogus, 0, 1), -EINVAL);
    assert_int_equal(p->meta.samples, 0);
    assert_int_equal(profile_set_command(p, "python3 x.py"), 0);
    assert_string_equal(p->meta.command, "python3 x.py");
    assert_int_equal(profile_set_command(p, "again"), 0);
    assert_string_equal(p->meta.command, "again");
}

/* Many distinct frames and stacks: tables grow, counts stay exact. */
static void test_many(void **state)
{
    struct profile *p = *state;
    enum { N = 20000 };
    uint32_t t = profile_frame(p, FRAME_THREAD, "thread 1 (a)", NULL, 0);
    uint64_t want = 0;
    for (int j = 0; j < N; j++) {
        char name[32];
        snprintf(name, sizeof(name), "fn_%d", j % 5000);
        int64_t a = profile_frame(p, FRAME_PYTHON, name, "m.py", j % 7);
        snprintf(name, sizeof(name), "leaf_%d", j);
        int64_t b = profile_frame(p, FRAME_NATIVE, name, NULL, 0);
        assert_true(a >= 0 && b >= 0);
        uint32_t st[] = {t, (uint32_t)a, (uint32_t)b};
        assert_true(profile_add(p, st, 3, (uint64_t)j) > 0);
        want += (uint64_t)j;
    }
    profile_finish(p);
    assert_int_equal(p->nodes[0].total, want);
    assert_int_equal(p->meta.samples, want);
    assert_int_equal(p->nframes, 1 + N + (5000 * 7 > N ? N : 5000 * 7));
    /* Re-adding finds the same frames, no growth. */
    uint32_t nf = p->nframes;
    assert_true(profile_frame(p, FRAME_NATIVE, "leaf_0", NULL, 0) >= 0);
    assert_int_equal(p->nframes, nf);
}

/* Stacks that share prefixes, differ in one frame or in depth, more of them than the stack
 * cache has slots, added again and again in a shuffled order: every add lands on the node whose
 * path is exactly its frames, the same node each time. */
static void test_stack_cache_exact(void **state)
{
    struct profile *p = *state;
    enum { NSTACKS = 6000, ADDS = 60000, DEPTH = 24 };
    static uint32_t stacks[NSTACKS][DEPTH];
    static size_t depth[NSTACKS];
    static int64_t node[NSTACKS];
    uint32_t fr[8];
    unsigned seed = 7;
    for (int i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof(name), "f%d", i);
        fr[i] = (uint32_t)profile_frame(p, FRAME_NATIVE, name, NULL, 0);
    }
    for (int k = 0; k < NSTACKS; k++) {
        depth[k] = 1 + (size_t)(rand_r(&seed) % DEPTH);
        for (size_t i = 0; i < depth[k]; i++)
            stacks[k][i] = fr[rand_r(&seed) % 8];
        node[k] = -1;
    }
    for (int a = 0; a < ADDS; a++) {
        int k = rand_r(&seed) % NSTACKS;
        int64_t got = profile_add(p, stacks[k], depth[k], 1);
        assert_true(got > 0);
        if (node[k] >= 0)
            assert_int_equal(got, node[k]);
        node[k] = got;
        uint32_t at = (uint32_t)got;
        for (size_t i = depth[k]; i-- > 0; at = p->nodes[at].parent)
            assert_int_equal(p->nodes[at].frame, stacks[k][i]);
        assert_int_equal(at, 0);
    }
}

/* A thread frame renamed after its first samples: those samples show the new name, the table
 * finds the frame under it (and no longer under the old one), among many neighbours. */
static void test_rename(void **state)
{
    struct profile *p = *state;
    char name[32];
    int64_t fr[300];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "thread %d (python3.11)", i);
        fr[i] = profile_frame(p, FRAME_THREAD, name, NULL, 0);
        assert_true(fr[i] >= 0);
    }
    int64_t leaf = profile_frame(p, FRAME_PYTHON, "nap", "/w.py", 18);
    uint32_t stack[2] = {(uint32_t)fr[7], (uint32_t)leaf};
    assert_true(profile_add(p, stack, 2, 5) >= 0);
    assert_int_equal(profile_frame_rename(p, (uint32_t)fr[7], "thread 7 (sleeper)"), 0);
    assert_string_equal(p->frames[fr[7]].name, "thread 7 (sleeper)");
    assert_int_equal(profile_frame(p, FRAME_THREAD, "thread 7 (sleeper)", NULL, 0), fr[7]);
    assert_true(profile_frame(p, FRAME_THREAD, "thread 7 (python3.11)", NULL, 0) != fr[7]);
    for (int i = 0; i < 300; i++) { /* every neighbour still found */
        snprintf(name, sizeof(name), "thread %d (python3.11)", i);
        if (i != 7)
            assert_int_equal(profile_frame(p, FRAME_THREAD, name, NULL, 0), fr[i]);
    }
    assert_int_equal(profile_frame_rename(p, p->nframes + 5, "x"), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_frames_are_interned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trie_and_totals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_children, setup, teardown),
        cmocka_unit_test_setup_teardown(test_labels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_cache_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
