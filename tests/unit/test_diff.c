/* Unit tests for user/output/diff.c: the union walk of two profiles (stacks in one only, frames of
 * equal name but different kind, children met in label order) and the folded diff's lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "output/diff.h"
#include "output/folded.h"

static void load(struct profile *p, const char *text)
{
    struct folded_stats st = {0};
    assert_int_equal(profile_init(p), 0);
    assert_int_equal(folded_read(p, text, strlen(text), &st), 0);
    profile_finish(p);
}

static char *diff_text(const char *before, const char *after)
{
    struct profile b, a;
    char *buf = NULL;
    size_t len = 0;
    load(&b, before);
    load(&a, after);
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(diff_write_folded(&b, &a, f), 0);
    fclose(f);
    profile_free(&b);
    profile_free(&a);
    return buf;
}

static void test_folded_union(void **state)
{
    (void)state;
    char *t = diff_text("main;a 80\nmain;b 20\nmain;c 10\nmain;a;x 3\n",
                        "main;a 20\nmain;b 80\nmain;d 5\nother 1\n");
    assert_string_equal(t, "main;a 80 20\n"
                           "main;a;x 3 0\n"
                           "main;b 20 80\n"
                           "main;c 10 0\n"
                           "main;d 0 5\n"
                           "other 0 1\n");
    free(t);
}

static void test_kind_matters(void **state)
{
    (void)state;
    /* "read" (native) and "read_[k]" (kernel, label "read_[k]") are different frames; a Python
     * frame's line is part of its label. */
    char *t = diff_text("main;read 4\nmain;f (x.py:3) 2\n", "main;read_[k] 4\nmain;f (x.py:4) 2\n");
    assert_string_equal(t, "main;f (x.py:3) 2 0\n"
                           "main;f (x.py:4) 0 2\n"
                           "main;read 4 0\n"
                           "main;read_[k] 0 4\n");
    free(t);
}

struct seen {
    unsigned n;
    uint64_t before_self, after_self;
};

static int count(void *arg, const struct diff_step *s)
{
    struct seen *c = arg;
    c->n++;
    c->before_self += s->before_self;
    c->after_self += s->after_self;
    return 0;
}

static void test_walk_totals(void **state)
{
    (void)state;
    struct profile b, a, bv, av;
    load(&b, "m;a;b 5\nm;a 2\nm;z 1\n");
    load(&a, "m;a;b 7\nm;y 4\n");
    assert_int_equal(view_build(&b, &bv), 0);
    assert_int_equal(view_build(&a, &av), 0);
    struct seen c = {0};
    assert_int_equal(diff_walk(&bv, &av, count, &c), 0);
    assert_int_equal(c.n, 5); /* m, a, b, y, z */
    assert_int_equal(c.before_self, 8);
    assert_int_equal(c.after_self, 11);
    profile_free(&bv);
    profile_free(&av);
    profile_free(&b);
    profile_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_folded_union),
        cmocka_unit_test(test_kind_matters),
        cmocka_unit_test(test_walk_totals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
