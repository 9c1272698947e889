/*
 * summary: one row per function by default (the lines of a Python function add up), self and
 * total right when a function recurses through two of its lines, the per-line view as before,
 * threads and top-N cut-off.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "output/summary.h"

/*   100 samples:
 *     main;word_counts:25                 30
 *     main;word_counts:26                 20
 *     main;word_counts:26;helper:40       10
 *     main;fib:3;fib:5;fib:3              25   (recursion through two lines of fib)
 *     main;fib:5                           5
 *     main;do_syscall_64_[k]               8
 *     main                                 2
 * each under a thread frame (two threads). */
static int setup(void **state)
{
    struct profile *p = calloc(1, sizeof(*p));
    if (!p || profile_init(p))
        return -1;
    uint32_t t1 = profile_frame(p, FRAME_THREAD, "thread 7 (python3)", NULL, 0);
    uint32_t t2 = profile_frame(p, FRAME_THREAD, "thread 8 (python3)", NULL, 0);
    uint32_t m = profile_frame(p, FRAME_NATIVE, "main", "/usr/bin/python3", 0);
    uint32_t w25 = profile_frame(p, FRAME_PYTHON, "word_counts", "/app/w.py", 25);
    uint32_t w26 = profile_frame(p, FRAME_PYTHON, "word_counts", "/app/w.py", 26);
    uint32_t h = profile_frame(p, FRAME_PYTHON, "helper", "/app/w.py", 40);
    uint32_t f3 = profile_frame(p, FRAME_PYTHON, "fib", "/app/w.py", 3);
    uint32_t f5 = profile_frame(p, FRAME_PYTHON, "fib", "/app/w.py", 5);
    uint32_t k = profile_frame(p, FRAME_KERNEL, "do_syscall_64", NULL, 0);
    const uint32_t s1[] = {t1, m, w25}, s2[] = {t2, m, w26}, s3[] = {t1, m, w26, h},
                   s4[] = {t2, m, f3, f5, f3}, s5[] = {t1, m, f5}, s6[] = {t2, m, k}, s7[] = {t1, m};
    profile_add(p, s1, 3, 30);
    profile_add(p, s2, 3, 20);
    profile_add(p, s3, 4, 10);
    profile_add(p, s4, 5, 25);
    profile_add(p, s5, 3, 5);
    profile_add(p, s6, 3, 8);
    profile_add(p, s7, 2, 2);
    profile_finish(p);
    *state = p;
    return 0;
}

static int teardown(void **state)
{
    profile_free(*state);
    free(*state);
    return 0;
}

static char *table(const struct profile *p, unsigned topn, enum summary_group by)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(summary_print_by(p, f, topn, by), 0);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void test_by_function(void **state)
{
    char *s = table(*state, 10, SUMMARY_BY_FUNCTION);
    /* word_counts: 30 + 20 + 10 leaf samples at two lines are one row of 50 %, on 60 % of stacks;
     * fib: 25 + 5, and its 25 recursive stacks count once in total (30 %, not 55 %) */
    assert_string_equal(s, "100 samples, top 10 by self time:\n"
                           "   self%  total%  function\n"
                           "   50.00   60.00  word_counts (/app/w.py)\n"
                           "   30.00   30.00  fib (/app/w.py)\n"
                           "   10.00   10.00  helper (/app/w.py)\n"
                           "    8.00    8.00  do_syscall_64_[k]\n"
                           "    2.00  100.00  main\n");
    free(s);
    /* the default of summary_print */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(summary_print(*state, f, 2), 0);
    fclose(f);
    assert_string_equal(buf, "100 samples, top 2 by self time:\n"
                             "   self%  total%  function\n"
                             "   50.00   60.00  word_counts (/app/w.py)\n"
                             "   30.00   30.00  fib (/app/w.py)\n");
    free(buf);
}

static void test_by_line(void **state)
{
    char *s = table(*state, 10, SUMMARY_BY_LINE);
    /* fib:3 is twice on the 25 recursive stacks: once in its total */
    assert_string_equal(s, "100 samples, top 10 by self time:\n"
                           "   self%  total%  function\n"
                           "   30.00   30.00  word_counts (/app/w.py:25)\n"
                           "   25.00   25.00  fib (/app/w.py:3)\n"
                           "   20.00   30.00  word_counts (/app/w.py:26)\n"
                           "   10.00   10.00  helper (/app/w.py:40)\n"
                           "    8.00    8.00  do_syscall_64_[k]\n"
                           "    5.00   30.00  fib (/app/w.py:5)\n"
                           "    2.00  100.00  main\n");
    free(s);
}

/* With --threads the thread frames are rows too (never a leaf: total only, so not listed). */
static void test_threads_and_cutoff(void **state)
{
    struct profile *p = *state;
    p->show_threads = true;
    char *s = table(p, 3, SUMMARY_BY_FUNCTION);
    assert_string_equal(s, "100 samples, top 3 by self time:\n"
                           "   self%  total%  function\n"
                           "   50.00   60.00  word_counts (/app/w.py)\n"
                           "   30.00   30.00  fib (/app/w.py)\n"
                           "   10.00   10.00  helper (/app/w.py)\n");
    free(s);
    p->show_threads = false;
}

/* A Python frame whose line is unknown is the same function as its lines. */
static void test_unknown_line(void **state)
{
    struct profile p;
    assert_int_equal(profile_init(&p), 0);
    uint32_t a = profile_frame(&p, FRAME_PYTHON, "f", "/x.py", 0);
    uint32_t b = profile_frame(&p, FRAME_PYTHON, "f", "/x.py", 9);
    uint32_t c = profile_frame(&p, FRAME_PYTHON, "f", "/y.py", 9); /* another file: another function */
    uint32_t d = profile_frame(&p, FRAME_JIT, "py::f:/x.py", NULL, 0);
    profile_add(&p, &a, 1, 3);
    profile_add(&p, &b, 1, 2);
    profile_add(&p, &c, 1, 4);
    uint32_t s[] = {b, d, a};
    profile_add(&p, s, 3, 1);
    profile_finish(&p);
    char *t = table(&p, 10, SUMMARY_BY_FUNCTION);
    assert_string_equal(t, "10 samples, top 10 by self time:\n"
                           "   self%  total%  function\n"
                           "   60.00   60.00  f (/x.py)\n"
                           "   40.00   40.00  f (/y.py)\n");
    free(t);
    profile_free(&p);

    /* nothing sampled: the header only */
    struct profile e;
    assert_int_equal(profile_init(&e), 0);
    profile_finish(&e);
    t = table(&e, 10, SUMMARY_BY_FUNCTION);
    assert_string_equal(t, "0 samples, top 10 by self time:\n"
                           "   self%  total%  function\n");
    free(t);
    profile_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_function),
        cmocka_unit_test(test_by_line),
        cmocka_unit_test(test_threads_and_cutoff),
        cmocka_unit_test(test_unknown_line),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
