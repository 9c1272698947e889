/*
 * perf map writer and reader: line format, appending to our own file, refusing symlinks and
 * files that are not private to us, fork (the child writes perf-<child>.map), threads (whole
 * lines only), and a reader that tolerates junk and sorts.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "jitdump.h"
#include "symbols/perfmap_read.h"

static char dir[64];

static int setup(void **state)
{
    strcpy(dir, "/tmp/pyebpf-pm.XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void map_path(char *out, size_t n, pid_t pid)
{
    snprintf(out, n, "%s/perf-%d.map", dir, (int)pid);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t cap = 1 << 16, n = 0, got;
    char *b = malloc(cap + 1);
    while ((got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            b = realloc(b, (cap *= 2) + 1);
    }
    fclose(f);
    b[n] = 0;
    return b;
}

static void test_lines(void **state)
{
    struct perfmap *pm;
    assert_int_equal(perfmap_open(&pm, dir), 0);
    assert_int_equal(perfmap_write(pm, 0x7f0000001000, 0x30, "py::f:/a b.py"), 0);
    assert_int_equal(perfmap_write(pm, 0x1000, 0x8, "two\nlines"), 0); /* cut at the newline */
    perfmap_close(pm);
    char path[128];
    map_path(path, sizeof(path), getpid());
    char *text = slurp(path);
    assert_string_equal(text, "7f0000001000 30 py::f:/a b.py\n1000 8 two\n");
    free(text);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    /* Reopening appends to our own file (several JITs in one process share it). */
    assert_int_equal(perfmap_open(&pm, dir), 0);
    assert_int_equal(perfmap_write(pm, 0x2000, 0x10, "third"), 0);
    perfmap_close(pm);
    struct perfmap_read_table t;
    assert_int_equal(perfmap_read_file(path, &t), 0);
    assert_int_equal(t.n, 3);
    assert_int_equal(t.junk, 0);
    assert_int_equal(t.v[0].start, 0x1000);
    assert_string_equal(t.v[2].name, "py::f:/a b.py");
    assert_string_equal(perfmap_read_find(&t, 0x200f)->name, "third");
    assert_null(perfmap_read_find(&t, 0x2010));
    assert_string_equal(perfmap_read_find(&t, 0x7f000000102f)->name, "py::f:/a b.py");
    perfmap_read_free(&t);
}

static void test_refusals(void **state)
{
    char path[128], victim[128];
    map_path(path, sizeof(path), getpid());
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    struct perfmap *pm = (void *)1;

    /* symlink, dangling or not: never followed */
    assert_int_equal(symlink(victim, path), 0);
    assert_int_equal(perfmap_open(&pm, dir), -ELOOP);
    assert_null(pm);
    assert_int_equal(access(victim, F_OK), -1);
    unlink(path);

    /* a file others may write, a hard-linked file, a file of another user */
    FILE *f = fopen(path, "w");
    fclose(f);
    chmod(path, 0666);
    assert_int_equal(perfmap_open(&pm, dir), -EPERM);
    chmod(path, 0600);
    assert_int_equal(link(path, victim), 0);
    assert_int_equal(perfmap_open(&pm, dir), -EPERM);
    unlink(victim);
    if (geteuid() == 0) {
        assert_int_equal(chown(path, 65534, 65534), 0);
        assert_int_equal(perfmap_open(&pm, dir), -EPERM);
    }
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 0);
}

static void test_fork(void **state)
{
    struct perfmap *pm;
    assert_int_equal(perfmap_open(&pm, dir), 0);
    assert_int_equal(perfmap_write(pm, 0x1000, 1, "parent"), 0);
    pid_t kid = fork();
    if (kid == 0) {
        int e = perfmap_write(pm, 0x2000, 1, "child");
        perfmap_close(pm);
        _exit(e == 0 ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(kid, &status, 0), kid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(perfmap_write(pm, 0x3000, 1, "parent2"), 0);
    perfmap_close(pm);
    char path[128];
    map_path(path, sizeof(path), getpid());
    char *text = slurp(path);
    assert_string_equal(text, "1000 1 parent\n3000 1 parent2\n");
    free(text);
    map_path(path, sizeof(path), kid);
    text = slurp(path);
    assert_string_equal(text, "2000 1 child\n");
    free(text);
}

static void *writer(void *p)
{
    struct perfmap *pm = p;
    char name[300];
    memset(name, 'n', sizeof(name) - 1); /* longer than the writer's stack buffer */
    name[sizeof(name) - 1] = 0;
    for (int i = 0; i < 500; i++)
        if (perfmap_write(pm, 0x10000 + (uint64_t)i * 16, 16, (i & 1) ? name : "short") != 0)
            return (void *)1;
    return NULL;
}

static void test_threads_whole_lines(void **state)
{
    struct perfmap *pm;
    assert_int_equal(perfmap_open(&pm, dir), 0);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, writer, pm);
    for (int i = 0; i < 4; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        assert_null(ret);
    }
    perfmap_close(pm);
    char path[128];
    map_path(path, sizeof(path), getpid());
    struct perfmap_read_table t;
    assert_int_equal(perfmap_read_file(path, &t), 0);
    assert_int_equal(t.junk, 0);
    assert_int_equal(t.n, 500); /* 2000 lines, 4 per address: the latest wins */
    for (size_t i = 0; i < t.n; i++)
        assert_true(strcmp(t.v[i].name, "short") == 0 || strlen(t.v[i].name) == 299);
    perfmap_read_free(&t);
}

static void test_reader_junk_and_order(void **state)
{
    static const char text[] = "3000 10 c\n"
                               "garbage line\n"
                               "\n"
                               "0x1000 0x20 a with spaces\r\n"
                               "2000 zz bad size\n"
                               "12345678901234567 1 too many digits\n"
                               "2000 8\n"
                               "2000 8 b-old\n"
                               "2000 8 b\n"
                               "\t4000\t4\ttabs\n"
                               "5000 4 last-without-newline";
    struct perfmap_read_table t;
    assert_int_equal(perfmap_read_buf(text, sizeof(text) - 1, &t), 0);
    assert_int_equal(t.junk, 4);
    assert_int_equal(t.n, 5);
    const char *want[] = {"a with spaces", "b", "c", "tabs", "last-without-newline"};
    uint64_t starts[] = {0x1000, 0x2000, 0x3000, 0x4000, 0x5000};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(t.v[i].start, starts[i]);
        assert_string_equal(t.v[i].name, want[i]);
    }
    assert_null(perfmap_read_find(&t, 0xfff));
    assert_string_equal(perfmap_read_find(&t, 0x101f)->name, "a with spaces");
    assert_null(perfmap_read_find(&t, 0x1020));
    assert_string_equal(perfmap_read_find(&t, 0x5003)->name, "last-without-newline");
    assert_null(perfmap_read_find(&t, UINT64_MAX));
    perfmap_read_free(&t);

    /* every prefix of the text parses without reading past it */
    for (size_t k = 0; k < sizeof(text) - 1; k++) {
        char *c = malloc(k ? k : 1);
        memcpy(c, text, k);
        assert_int_equal(perfmap_read_buf(c, k, &t), 0);
        assert_true(t.n <= 5);
        perfmap_read_free(&t);
        free(c);
    }
    assert_int_equal(perfmap_read_file("/nonexistent/perf-1.map", &t), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fork, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_whole_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reader_junk_and_order, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
