/* Unit tests for user/util/stats.c: the printer writes each kind of row exactly as --stats always
 * printed it (`name: value`, counts in decimal, reals with their digits, a ratio of nothing as 0),
 * rows reach any sink in order, and STATS_COUNTS hands a run of counters over one by one. Also
 * pykernel_stats through a sink that keeps the rows: its key names, in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "python/pykernel.h"
#include "util/stats.h"

static char *printed(void (*emit)(struct stats out))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    emit(stats_file(f));
    fclose(f);
    return buf;
}

static void emit_kinds(struct stats out)
{
    stats_count(out, "samples", 18446744073709551615ull);
    stats_real(out, "duration_s", 1.0005, 3);
    stats_real(out, "collector_cpu_us", 1234.5, 0);
    stats_ratio(out, "lost_pct", 100.0 * 1, 3, 4);
    stats_ratio(out, "frames_per_sample", 7, 0, 1);
    stats_text(out, "stopped_by", "duration");
    stats_text(out, "python_version", NULL);
}

static void test_printer(void **state)
{
    char *s = printed(emit_kinds);

    /* %.3f of 1.0005 and %.0f of 1234.5 round as printf does (to even / binary value). */
    char want[256];
    snprintf(want, sizeof(want),
             "samples: 18446744073709551615\nduration_s: %.3f\ncollector_cpu_us: %.0f\n"
             "lost_pct: 33.3333\nframes_per_sample: 0.0\nstopped_by: duration\npython_version: \n",
             1.0005, 1234.5);
    assert_string_equal(s, want);
    free(s);
}

/* A sink that keeps the rows' names, comma-separated. */
struct names {
    char buf[4096];
    size_t n;
};

static void keep_name(void *arg, const struct stat_row *r)
{
    struct names *k = arg;

    k->n += (size_t)snprintf(k->buf + k->n, sizeof(k->buf) - k->n, "%s%s", k->n ? "," : "", r->name);
}

static void test_counts_table(void **state)
{
    struct names k = {0};
    struct stats out = {.row = keep_name, .arg = &k};

    STATS_COUNTS(out, {"a", 1}, {"b", 2}, {"c", 3});
    assert_string_equal(k.buf, "a,b,c");
}

static void emit_counts(struct stats out)
{
    STATS_COUNTS(out, {"x", 0}, {"y", 42});
}

static void test_counts_printed(void **state)
{
    char *s = printed(emit_counts);

    assert_string_equal(s, "x: 0\ny: 42\n");
    free(s);
}

static void test_pykernel_rows(void **state)
{
    struct pykernel *pk;
    struct sampler_stats kc = {.py_reads = 10, .py_ident_reads = 4};
    struct names k = {0};

    assert_int_equal(pykernel_open(&pk, NULL), 0);
    pykernel_stats(pk, NULL, (struct stats){.row = keep_name, .arg = &k});
    assert_string_equal(k.buf, "python_samples_in_kernel,python_kernel_fallbacks,python_threads_in_kernel,"
                               "python_codes_named_at_attach,python_kernel_stale,python_kernel_broken,"
                               "python_kernel_truncated");
    k = (struct names){0};
    pykernel_stats(pk, &kc, (struct stats){.row = keep_name, .arg = &k});
    assert_non_null(strstr(k.buf,
                           "python_kernel_truncated,python_kernel_reads,python_kernel_reads_per_sample,"
                           "python_kernel_window_misses,python_kernel_idents_per_sample,"
                           "python_kernel_ident_reads_per_sample,python_kernel_qualname_reads_per_sample,"
                           "python_kernel_cframe_reads_per_sample"));
    pykernel_close(pk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_printer),
        cmocka_unit_test(test_counts_table),
        cmocka_unit_test(test_counts_printed),
        cmocka_unit_test(test_pykernel_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
