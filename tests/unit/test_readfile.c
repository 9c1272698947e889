/*
 * readfile: a regular file read whole and NUL-terminated, symlinks followed, and the refusals the
 * jitdump and perf map readers pass on to their callers (not regular, too large, missing).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbols/jitdump_read.h"
#include "symbols/perfmap_read.h"
#include "util/readfile.h"

static char dir[64];

static int setup(void **state)
{
    strcpy(dir, "/tmp/pyebpf-rf.XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void test_whole_file(void **state)
{
    char path[128], link[128];
    snprintf(path, sizeof(path), "%s/f", dir);
    snprintf(link, sizeof(link), "%s/l", dir);
    static const char text[] = "1000 10 a\n\0binary\xff tail";
    write_file(path, text, sizeof(text) - 1);
    char *buf = (char *)1;
    size_t len = 99;
    assert_int_equal(readfile(path, sizeof(text) - 1, 0, &buf, &len), 0);
    assert_int_equal(len, sizeof(text) - 1);
    assert_memory_equal(buf, text, len);
    assert_int_equal(buf[len], '\0');
    free(buf);

    /* a symlink is followed, as both readers always did */
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(readfile(link, 1 << 20, READFILE_KEEP_PARTIAL, &buf, &len), 0);
    assert_int_equal(len, sizeof(text) - 1);
    free(buf);

    /* empty file: an empty, terminated buffer */
    write_file(path, "", 0);
    assert_int_equal(readfile(path, 0, 0, &buf, &len), 0);
    assert_int_equal(len, 0);
    assert_int_equal(buf[0], '\0');
    free(buf);
}

static void test_refusals(void **state)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/big", dir);
    write_file(path, "0123456789", 10);
    char *buf = (char *)1;
    size_t len = 99;
    assert_int_equal(readfile(path, 9, 0, &buf, &len), -EFBIG);
    assert_null(buf);
    assert_int_equal(len, 0);
    assert_int_equal(readfile(dir, 1 << 20, 0, &buf, &len), -EINVAL);
    assert_null(buf);
    assert_int_equal(readfile("/dev/null", 1 << 20, READFILE_KEEP_PARTIAL, &buf, &len), -EINVAL);
    snprintf(path, sizeof(path), "%s/missing", dir);
    assert_int_equal(readfile(path, 1 << 20, 0, &buf, &len), -ENOENT);

    /* what the two readers return for the same refusals */
    struct jitdump_read_dump d;
    struct perfmap_read_table t;
    assert_int_equal(jitdump_read_file("/dev/null", &d), -EINVAL);
    assert_int_equal(d.nregions, 0);
    jitdump_read_free(&d);
    assert_int_equal(perfmap_read_file("/dev/null", &t), -EINVAL);
    assert_int_equal(t.n, 0);
    perfmap_read_free(&t);
    assert_int_equal(jitdump_read_file(dir, &d), -EINVAL);
    jitdump_read_free(&d);
    assert_int_equal(perfmap_read_file(path, &t), -ENOENT);
    perfmap_read_free(&t);
    assert_int_equal(jitdump_read_file(path, &d), -ENOENT);
    jitdump_read_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_whole_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
