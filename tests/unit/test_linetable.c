/*
 * The location table decoder against CPython itself: each available interpreter (tests/pythons,
 * through pytargets.h) dumps the tables of ~1000 real code objects with its own co_lines() and
 * co_positions() answers (tests/py/dump_linetables.py); every code unit's line must agree.
 */
#include <errno.h>
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

#include "python/linetable.h"
#include "pytargets.h"

static size_t unhex(const char *h, uint8_t *out, size_t cap)
{
    size_t n = 0;
    if (strcmp(h, "-") == 0)
        return 0;
    for (; h[0] && h[1] && n < cap; h += 2) {
        unsigned v;
        if (sscanf(h, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
    }
    return n;
}

static void check_python(void **state)
{
    const char *py = *state;
    char out[] = "/tmp/pyebpf-lt.XXXXXX", cmd[1024];

    if (access(py, X_OK) != 0) {
        skip();
        return;
    }
    int fd = mkstemp(out);
    assert_true(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof(cmd), "%s tests/py/dump_linetables.py %s", py, out);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(out, "r");
    assert_non_null(f);

    size_t cap = 1 << 22;
    char *line = malloc(cap);
    uint8_t *tab = malloc(cap / 2);
    struct linetable lt = {0};
    unsigned codes = 0, units_checked = 0, positions_checked = 0, mismatches = 0;
    bool have = false;
    while (fgets(line, (int)cap, f)) {
        if (line[0] == 'C') {
            int first, units;
            char *hex = malloc(strlen(line));
            assert_int_equal(sscanf(line, "C %d %s %d", &first, hex, &units), 3);
            size_t n = unhex(hex, tab, cap / 2);
            free(hex);
            linetable_free(&lt);
            assert_int_equal(linetable_decode(&lt, tab, n, first), 0);
            /* PyCode_Addr2Line gives co_firstlineno for offsets before the code. */
            assert_int_equal(linetable_line(&lt, -1), first);
            have = true;
            codes++;
        } else if (line[0] == 'L' && have) {
            unsigned s, e;
            int want;
            assert_int_equal(sscanf(line, "L %u %u %d", &s, &e, &want), 3);
            for (unsigned u = s; u < e; u++, units_checked++) {
                int32_t got = linetable_line(&lt, u);
                if (got != want && mismatches++ < 5)
                    print_error("%s: unit %u: line %d, co_lines says %d\n", py, u, got, want);
            }
        } else if (line[0] == 'P' && have) {
            char *p = line + 1, *end;
            for (unsigned u = 0;; u++, positions_checked++) {
                long want = strtol(p, &end, 10);
                if (end == p)
                    break;
                p = end;
                int32_t got = linetable_line(&lt, u);
                if (got != want && mismatches++ < 5)
                    print_error("%s: unit %u: line %d, co_positions says %ld\n", py, u, got, want);
            }
        }
    }
    linetable_free(&lt);
    fclose(f);
    unlink(out);
    free(line);
    free(tab);
    print_message("%s: %u code objects, %u units (co_lines), %u units (co_positions)\n", py, codes,
                  units_checked, positions_checked);
    assert_int_equal(mismatches, 0);
    assert_true(codes > 100 && units_checked > 10000 && positions_checked > 10000);
}

/* Hand-made tables: every entry form, and malformed input. */
static void forms(void **state)
{
    (void)state;
    struct linetable lt;
    const uint8_t tab[] = {
        0x80 | (0 << 3) | 1,  5,                   /* short form, 2 units, same line (10) */
        0x80 | (11 << 3) | 0, 2,    6,             /* one-line form, 1 unit, line 11 */
        0x80 | (13 << 3) | 2, 3,                   /* no columns, 3 units, line += -1 -> 10 */
        0x80 | (14 << 3) | 0, 0x48, 0x01, 1, 2, 3, /* long form: line += 4 (svarint 8 over 2 bytes) */
        0x80 | (15 << 3) | 1,                      /* no location, 2 units */
    };
    assert_int_equal(linetable_decode(&lt, tab, sizeof(tab), 10), 0);
    assert_int_equal(linetable_line(&lt, 0), 10);
    assert_int_equal(linetable_line(&lt, 1), 10);
    assert_int_equal(linetable_line(&lt, 2), 11);
    assert_int_equal(linetable_line(&lt, 3), 10);
    assert_int_equal(linetable_line(&lt, 5), 10);
    /* 0x48 0x01: 8 | (1 << 6) = 72 -> +36 */
    assert_int_equal(linetable_line(&lt, 6), 46);
    assert_int_equal(linetable_line(&lt, 7), -1);
    assert_int_equal(linetable_line(&lt, 8), -1);
    assert_int_equal(linetable_line(&lt, 9), -1);
    assert_int_equal(linetable_line(&lt, 1000), -1);
    linetable_free(&lt);

    const uint8_t truncated[] = {0x80 | (14 << 3), 0x48};
    assert_int_equal(linetable_decode(&lt, truncated, sizeof(truncated), 1), -EINVAL);
    linetable_free(&lt);
    const uint8_t no_start[] = {0x05};
    assert_int_equal(linetable_decode(&lt, no_start, sizeof(no_start), 1), -EINVAL);
    linetable_free(&lt);
    assert_int_equal(linetable_decode(&lt, NULL, 0, 7), 0);
    assert_int_equal(linetable_line(&lt, 0), -1);
    assert_int_equal(linetable_line(&lt, -1), 7);
    linetable_free(&lt);
}

/* Random bytes: the decoder ends, never reads past the table (ASan checks the latter). */
static void garbage(void **state)
{
    (void)state;
    srand(1);
    for (int i = 0; i < 20000; i++) {
        size_t n = (size_t)(rand() % 64);
        uint8_t *b = malloc(n + 1);
        for (size_t k = 0; k < n; k++)
            b[k] = (uint8_t)rand();
        struct linetable lt;
        int rc = linetable_decode(&lt, b, n, rand() % 1000);
        assert_true(rc == 0 || rc == -EINVAL);
        for (int u = -1; u < 600; u += 7)
            (void)linetable_line(&lt, u);
        linetable_free(&lt);
        free(b);
    }
}

int main(void)
{
    struct CMUnitTest tests[NPY + 2];
    size_t n = 0;
    static char names[NPY][96];
    for (size_t i = 0; i < NPY; i++) {
        snprintf(names[i], sizeof(names[i]), "linetable matches co_lines/co_positions: %s", pythons[i]);
        tests[n++] = (struct CMUnitTest){names[i], check_python, NULL, NULL, (void *)pythons[i]};
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(forms);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(garbage);
    return _cmocka_run_group_tests("linetable", tests, n, NULL, NULL);
}
