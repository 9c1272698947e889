/* Unit tests for user/cli.c: defaults, PID and launch forms, option values, usage errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"
#include "sample.h"

/* argv lives here, not in the caller's scope: options keep pointers into it. */
static char *args[32];

static int parse_list(struct cli_options *o, char **list)
{
    int n = 0;

    args[n++] = "pyebpf-sample";
    while (*list && n < 31)
        args[n++] = *list++;
    args[n] = NULL;
    memset(o, 0, sizeof(*o));
    return cli_parse(n, args, o);
}

#define PARSE(o, ...) parse_list(&(o), (char *[]){__VA_ARGS__, NULL})

static void test_defaults_with_pid(void **state)
{
    struct cli_options o;

    assert_int_equal(PARSE(o, "1234"), 0);
    assert_int_equal(o.pid, 1234);
    assert_null(o.command);
    assert_int_equal(o.frequency, CLI_DEFAULT_FREQUENCY);
    assert_int_equal(o.stack_size, SAMPLE_STACK_COPY_DEFAULT);
    assert_int_equal(o.unwind, UNWIND_AUTO);
    assert_string_equal(o.output, "-");
    assert_null(o.format);
    assert_false(o.kernel || o.threads || o.stats || o.children);
    assert_true(o.duration == 0);
}

static void test_launch_form_keeps_command_options(void **state)
{
    struct cli_options o;

    assert_int_equal(PARSE(o, "-F", "999", "--kernel", "--", "ls", "-l", "-F"), 0);
    assert_int_equal(o.pid, 0);
    assert_non_null(o.command);
    assert_string_equal(o.command[0], "ls");
    assert_string_equal(o.command[1], "-l");
    assert_string_equal(o.command[2], "-F"); /* the command's, not ours */
    assert_null(o.command[3]);
    assert_int_equal(o.frequency, 999);
    assert_true(o.kernel);
}

static void test_option_values(void **state)
{
    struct cli_options o;

    assert_int_equal(PARSE(o, "-d", "2.5", "-o", "x.svg", "-f", "svg", "--unwind", "fp", "--stack-size",
                           "8192", "--threads", "--stats", "--children", "-q", "--ring-size", "65536", "42"),
                     0);
    assert_true(o.duration == 2.5);
    assert_string_equal(o.output, "x.svg");
    assert_string_equal(o.format, "svg");
    assert_int_equal(o.unwind, UNWIND_FP);
    assert_int_equal(o.stack_size, 8192);
    assert_true(o.threads && o.stats && o.children && o.quiet);
    assert_int_equal(o.ring_size, 65536);
    assert_int_equal(o.pid, 42);
    assert_int_equal(PARSE(o, "--unwind", "dwarf", "1"), 0);
    assert_int_equal(o.unwind, UNWIND_DWARF);
}

static void test_usage_errors(void **state)
{
    struct cli_options o;

    assert_int_equal(PARSE(o, "-F", "0", "1"), -1);
    assert_int_equal(PARSE(o, "-F", "100001", "1"), -1);
    assert_int_equal(PARSE(o, "-F", "-5", "1"), -1);
    assert_int_equal(PARSE(o, "-d", "0", "1"), -1);
    assert_int_equal(PARSE(o, "-d", "abc", "1"), -1);
    assert_int_equal(PARSE(o, "--unwind", "lbr", "1"), -1);
    assert_int_equal(PARSE(o, "--stack-size", "100", "1"), -1);    /* below the minimum */
    assert_int_equal(PARSE(o, "--stack-size", "1001", "1"), -1);   /* not a multiple of 8 */
    assert_int_equal(PARSE(o, "--stack-size", "131072", "1"), -1); /* above the maximum */
    assert_int_equal(PARSE(o, "notapid"), -1);
    assert_int_equal(PARSE(o, "0"), -1);
    assert_int_equal(PARSE(o, "1", "2"), -1);
    assert_int_equal(PARSE(o, "--"), -1);
    assert_int_equal(PARSE(o, "--bogus", "1"), -1);
}

static void test_help_and_version_end_the_run(void **state)
{
    struct cli_options o;
    FILE *saved = stdout;

    stdout = fopen("/dev/null", "w");
    assert_int_equal(PARSE(o, "--help"), 1);
    assert_int_equal(PARSE(o, "-V"), 1);
    fclose(stdout);
    stdout = saved;
}

static void test_modes_and_thread_filters(void **state)
{
    struct cli_options o;

    assert_int_equal(PARSE(o, "1"), 0);
    assert_int_equal(o.mode, CLI_MODE_CPU);
    assert_false(o.no_idle);
    assert_int_equal(o.ntids, 0);
    assert_false(o.has_thread_name);
    assert_int_equal(
        PARSE(o, "--mode", "wall", "--no-idle", "--tid", "12,34", "--thread-name", "^pool-[0-9]+$", "1"), 0);
    assert_int_equal(o.mode, CLI_MODE_WALL);
    assert_true(o.no_idle);
    assert_int_equal(o.ntids, 2);
    assert_int_equal(o.tids[0], 12);
    assert_int_equal(o.tids[1], 34);
    assert_true(o.has_thread_name);
    assert_int_equal(regexec(&o.thread_name, "pool-3", 0, NULL, 0), 0);
    assert_int_not_equal(regexec(&o.thread_name, "MainThread", 0, NULL, 0), 0);
    cli_free(&o);
    assert_int_equal(PARSE(o, "--mode", "offcpu", "--no-idle", "--idle", "1"), 0);
    assert_int_equal(o.mode, CLI_MODE_OFFCPU);
    assert_false(o.no_idle);
    assert_string_equal(cli_mode_name(o.mode), "offcpu");
    assert_int_equal(PARSE(o, "--mode", "gil", "1"), 0);
    assert_int_equal(o.mode, CLI_MODE_GIL);
    assert_int_equal(PARSE(o, "--mode", "gil", "--no-python", "1"), -1);
    /* usage errors */
    assert_int_equal(PARSE(o, "--mode", "gpu", "1"), -1);
    assert_int_equal(PARSE(o, "--tid", "12,", "1"), -1);
    assert_int_equal(PARSE(o, "--tid", "0", "1"), -1);
    assert_int_equal(PARSE(o, "--tid", "x", "1"), -1);
    assert_int_equal(PARSE(o, "--thread-name", "(", "1"), -1);
    assert_int_equal(PARSE(o, "--mode", "wall", "--no-bpf", "1"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_with_pid),
        cmocka_unit_test(test_launch_form_keeps_command_options),
        cmocka_unit_test(test_option_values),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_help_and_version_end_the_run),
        cmocka_unit_test(test_modes_and_thread_filters),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
