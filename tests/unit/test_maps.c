/*
 * maps: the parser on crafted lines (deleted files, pseudo-paths, spaces in paths, anonymous
 * mappings) and on the test's own /proc/self/maps, checked against dladdr and the stack.
 */
#include <dlfcn.h>
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

#include "util/maps.h"

static const char SAMPLE[] =
    "55d0c0a00000-55d0c0a02000 r--p 00000000 fe:00 247134                     /usr/bin/cat\n"
    "55d0c0a02000-55d0c0a07000 r-xp 00002000 fe:00 247134                     /usr/bin/cat\n"
    "55d0c1a00000-55d0c1a21000 rw-p 00000000 00:00 0                          [heap]\n"
    "7f0000000000-7f0000001000 rwxp 00000000 00:00 0 \n"
    "7f0000010000-7f0000020000 r-xp 00001000 08:01 99                         /tmp/lib x.so (deleted)\n"
    "7f0000020000-7f0000021000 r--s 00000000 00:05 7                          /dev/shm/a\n"
    "7ffd5a1d2000-7ffd5a1f3000 rw-p 00000000 00:00 0                          [stack]\n"
    "7ffd5a1fb000-7ffd5a1fd000 r-xp 00000000 00:00 0                          [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static void test_parse_sample(void **state)
{
    struct maps m;
    assert_int_equal(maps_parse(&m, strdup(SAMPLE)), 0);
    assert_int_equal(m.n, 9);
    assert_int_equal(m.v[1].start, 0x55d0c0a02000ull);
    assert_int_equal(m.v[1].end, 0x55d0c0a07000ull);
    assert_int_equal(m.v[1].offset, 0x2000);
    assert_int_equal(m.v[1].prot, MAPS_R | MAPS_X);
    assert_int_equal(m.v[1].dev_major, 0xfe);
    assert_int_equal(m.v[1].inode, 247134);
    assert_string_equal(m.v[1].path, "/usr/bin/cat");
    assert_true(maps_is_file(&m.v[1]));
    assert_false(maps_is_file(&m.v[2]));
    assert_string_equal(m.v[3].path, "");
    assert_int_equal(m.v[3].prot, MAPS_R | MAPS_W | MAPS_X);
    assert_string_equal(m.v[4].path, "/tmp/lib x.so");
    assert_true(m.v[4].deleted);
    assert_false(m.v[1].deleted);
    assert_int_equal(m.v[5].prot, MAPS_R | MAPS_SHARED);
    assert_string_equal(m.v[7].path, "[vdso]");
    assert_int_equal(m.v[8].start, 0xffffffffff600000ull);
    assert_string_equal(maps_basename(m.v[4].path), "lib x.so");
    assert_string_equal(maps_basename("[vdso]"), "[vdso]");

    assert_ptr_equal(maps_find(&m, 0x55d0c0a02000ull), &m.v[1]);
    assert_ptr_equal(maps_find(&m, 0x55d0c0a06fffull), &m.v[1]);
    assert_ptr_equal(maps_find(&m, 0x55d0c0a07000ull), NULL);
    assert_ptr_equal(maps_find(&m, 0x55d0c09fffffull), NULL);
    assert_ptr_equal(maps_find(&m, 0x7ffd5a1fc123ull), &m.v[7]);
    assert_ptr_equal(maps_find(&m, 0xffffffffff600fffull), &m.v[8]);
    assert_ptr_equal(maps_find(&m, 0), NULL);
    maps_free(&m);
}

static void test_parse_bad(void **state)
{
    struct maps m;
    assert_int_equal(maps_parse(&m, strdup("55d0c0a00000 r--p 0 0:0 0\n")), -EINVAL);
    assert_int_equal(maps_parse(&m, strdup("2000-1000 r--p 00000000 00:00 0\n")), -EINVAL);
    assert_int_equal(maps_parse(&m, strdup("1000-2000 rq-p 00000000 00:00 0\n")), -EINVAL);
    assert_int_equal(maps_parse(&m, strdup("")), 0);
    assert_int_equal(m.n, 0);
    assert_null(maps_find(&m, 1));
    maps_free(&m);
    /* no trailing newline */
    assert_int_equal(maps_parse(&m, strdup("1000-2000 r-xp 00000000 00:00 0 /a")), 0);
    assert_int_equal(m.n, 1);
    assert_string_equal(m.v[0].path, "/a");
    maps_free(&m);
}

static void test_self(void **state)
{
    struct maps m;
    assert_int_equal(maps_read(&m, getpid()), 0);
    assert_true(m.n > 5);
    for (size_t i = 1; i < m.n; i++)
        assert_true(m.v[i - 1].end <= m.v[i].start);

    /* Our own code: the mapping dladdr names, executable. */
    Dl_info info;
    assert_true(dladdr((void *)test_self, &info) != 0);
    const struct map_entry *e = maps_find(&m, (uint64_t)(uintptr_t)test_self);
    assert_non_null(e);
    assert_true(e->prot & MAPS_X);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    assert_string_equal(e->path, exe);

    /* libc's printf */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(libc);
    e = maps_find(&m, (uint64_t)(uintptr_t)dlsym(libc, "printf"));
    assert_non_null(e);
    assert_non_null(strstr(e->path, "libc.so"));

    /* (a local's address may be on a sanitizer's fake stack; the frame address is not) */
    e = maps_find(&m, (uint64_t)(uintptr_t)__builtin_frame_address(0));
    assert_non_null(e);
    assert_string_equal(e->path, "[stack]");
    maps_free(&m);
}

static void test_no_such_pid(void **state)
{
    struct maps m;
    assert_int_equal(maps_read(&m, 0x7ffffff0), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_sample),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_self),
        cmocka_unit_test(test_no_such_pid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
