/* Unit tests for user/progress.c: the line's text and width, the redraw rate (at most
 * PROGRESS_HZ a second, nothing for a run shorter than one interval), the rate shown, erasing,
 * and staying off when the stream is not a terminal or with quiet. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "progress.h"

#define MS 1000000ull

struct cap {
    char *buf;
    size_t len;
    FILE *f;
};

static int cap_open(void **state)
{
    struct cap *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->f = open_memstream(&c->buf, &c->len);
    assert_non_null(c->f);
    *state = c;
    return 0;
}

static int cap_close(void **state)
{
    struct cap *c = *state;
    fclose(c->f);
    free(c->buf);
    free(c);
    return 0;
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void test_format(void **state)
{
    struct progress_counts c = {.samples = 4821, .lost = 7, .errors = 2};
    char buf[256];
    size_t n = progress_format(buf, sizeof(buf), 0, 12.34, 396.4, &c);

    assert_string_equal(buf, "pyebpf-sample: 12.3s  4821 samples  396/s  lost 7  errors 2");
    assert_int_equal(n, strlen(buf));
    /* cut to the width minus one column, never wrapping */
    n = progress_format(buf, sizeof(buf), 20, 12.34, 396.4, &c);
    assert_int_equal(n, 19);
    assert_string_equal(buf, "pyebpf-sample: 12.3");
    /* and to the buffer */
    n = progress_format(buf, 10, 0, 1, 1, &c);
    assert_int_equal(n, 9);
    assert_int_equal(strlen(buf), 9);
}

static void test_off_when_not_a_terminal(void **state)
{
    struct cap *c = *state;
    struct progress pg;
    struct progress_counts n = {.samples = 10};

    progress_start(&pg, c->f, false, 0);
    assert_false(pg.on); /* a memory stream is no terminal */
    assert_int_equal(progress_update(&pg, 5000 * MS, &n), 0);
    progress_clear(&pg);
    fflush(c->f);
    assert_int_equal(c->len, 0);
}

static void test_redraw_rate_and_clear(void **state)
{
    struct cap *c = *state;
    struct progress pg;
    struct progress_counts n = {0};
    uint64_t t0 = 1000 * MS;

    progress_start(&pg, c->f, false, t0);
    pg.on = true; /* as on a terminal */
    n.samples = 5;
    assert_int_equal(progress_update(&pg, t0 + 100 * MS, &n), 0); /* shorter than one interval */
    n.samples = 100;
    assert_int_equal(progress_update(&pg, t0 + 250 * MS, &n), 1);
    assert_int_equal(progress_update(&pg, t0 + 300 * MS, &n), 0); /* 50 ms later: too soon */
    assert_int_equal(progress_update(&pg, t0 + 499 * MS, &n), 0);
    n.samples = 200;
    assert_int_equal(progress_update(&pg, t0 + 500 * MS, &n), 1);
    assert_true(pg.rate > 399.9 && pg.rate < 400.1); /* 100 samples in 250 ms */
    fflush(c->f);
    assert_int_equal(count(c->buf, "\r"), 2);
    assert_int_equal(count(c->buf, "\033[K"), 2);
    assert_non_null(strstr(c->buf, "\rpyebpf-sample: 0.2s  100 samples  400/s  lost 0  errors 0\033[K"));
    assert_non_null(strstr(c->buf, "\rpyebpf-sample: 0.5s  200 samples  400/s  lost 0  errors 0\033[K"));
    assert_null(strchr(c->buf, '\n')); /* one line, rewritten */

    progress_clear(&pg);
    progress_clear(&pg); /* idempotent */
    fflush(c->f);
    assert_int_equal(count(c->buf, "\r\033[K"), 1);
    assert_true(c->len >= 4 && !memcmp(c->buf + c->len - 4, "\r\033[K", 4));
}

/* The rate is over the last second (PROGRESS_HZ redraws), not over the last interval alone. */
static void test_rate_over_last_second(void **state)
{
    struct cap *c = *state;
    struct progress pg;
    struct progress_counts n = {0};

    progress_start(&pg, c->f, false, 0);
    pg.on = true;
    for (unsigned i = 1; i <= 4; i++) {
        n.samples = 100 * i;
        assert_int_equal(progress_update(&pg, i * 250 * MS, &n), 1);
        assert_true(pg.rate > 399.9 && pg.rate < 400.1);
    }
    n.samples = 1400; /* a burst of 1000 in the last 250 ms */
    assert_int_equal(progress_update(&pg, 1250 * MS, &n), 1);
    assert_true(pg.rate > 1299.9 && pg.rate < 1300.1); /* (1400 - 100) over 250..1250 ms */
    n.samples = 1500;
    assert_int_equal(progress_update(&pg, 1500 * MS, &n), 1);
    assert_true(pg.rate > 1299.9 && pg.rate < 1300.1); /* (1500 - 200) over 500..1500 ms */
}

static void test_quiet_and_short_runs_print_nothing(void **state)
{
    struct cap *c = *state;
    struct progress pg;
    struct progress_counts n = {.samples = 1};

    progress_start(&pg, c->f, true, 0);
    assert_false(pg.on);
    progress_start(&pg, c->f, false, 0);
    pg.on = true;
    assert_int_equal(progress_update(&pg, 200 * MS, &n), 0);
    progress_clear(&pg); /* nothing shown: nothing to erase */
    fflush(c->f);
    assert_int_equal(c->len, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test_setup_teardown(test_off_when_not_a_terminal, cap_open, cap_close),
        cmocka_unit_test_setup_teardown(test_redraw_rate_and_clear, cap_open, cap_close),
        cmocka_unit_test_setup_teardown(test_rate_over_last_second, cap_open, cap_close),
        cmocka_unit_test_setup_teardown(test_quiet_and_short_runs_print_nothing, cap_open, cap_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
