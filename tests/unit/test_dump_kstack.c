/*
 * dump_kstack and ksyms_addr: a symbolic kernel stack back into addresses. Checked against the
 * kernel's own files: each name ksyms_addr finds is at the address /proc/kallsyms lists for it
 * (read here by a reader of its own), and a sleeping child's /proc/PID/stack, turned into
 * addresses, names the same functions at the same offsets when symbolised again.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dump_kstack.h"
#include "symbols/ksyms.h"

static struct ksyms *open_or_skip(void)
{
    struct ksyms *k = NULL;
    int err = ksyms_open(&k);
    if (err == -EPERM || err == -EACCES) {
        print_message("SKIP: /proc/kallsyms hides its addresses (kptr_restrict; not root)\n");
        skip();
    }
    assert_int_equal(err, 0);
    return k;
}

/* Names that /proc/kallsyms lists once, as text: their listed address is the one answer. */
static void test_addr_is_kallsyms_own(void **state)
{
    struct ksyms *k = open_or_skip();
    const char *want[] = {"do_nanosleep", "hrtimer_nanosleep", "do_syscall_64", "vfs_read", "schedule"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        FILE *f = fopen("/proc/kallsyms", "re");
        char line[512], name[256], type;
        unsigned long long a, listed = 0;
        int n = 0;
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && !strcmp(name, want[i]) &&
                (type == 't' || type == 'T')) {
                listed = a;
                n++;
            }
        fclose(f);
        if (n != 1)
            continue; /* not in this kernel, or listed twice (an alias elsewhere) */
        uint64_t got = 0, off = 1;
        assert_int_equal(ksyms_addr(k, want[i], &got), 0);
        assert_int_equal(got, listed);
        const char *back = ksyms_lookup(k, got, &off);
        assert_non_null(back);
        assert_int_equal(off, 0);
    }
    uint64_t x;
    assert_int_equal(ksyms_addr(k, "pyebpf_no_such_symbol", &x), -ENOENT);
    ksyms_close(k);
}

static char proc_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *close = strrchr(buf, ')');
    return close && close[1] == ' ' ? close[2] : 0;
}

static void test_sleeping_child(void **state)
{
    struct ksyms *k = open_or_skip();
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct timespec ts = {.tv_sec = 60};
        nanosleep(&ts, NULL);
        _exit(0);
    }
    for (int i = 0; i < 500 && proc_state(child) != 'S'; i++)
        usleep(10000);
    assert_int_equal(proc_state(child), 'S');

    uint64_t addrs[128];
    size_t n = 0;
    int err = dump_kstack_read(k, child, child, addrs, 128, &n);
    /* The file as the kernel prints it, read a second time: the child is still asleep. */
    char path[64], line[512];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/stack", (int)child, (int)child);
    FILE *f = fopen(path, "re");
    if (err == -EPERM || err == -EACCES) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        if (f)
            fclose(f);
        ksyms_close(k);
        print_message("SKIP: /proc/PID/stack needs CAP_SYS_ADMIN\n");
        skip();
    }
    assert_int_equal(err, 0);
    assert_non_null(f);
    size_t i = 0;
    bool nanosleep_seen = false;
    while (fgets(line, sizeof(line), f)) {
        char name[256];
        unsigned long long off;
        assert_int_equal(sscanf(line, "[<%*[0-9a-f]>] %255[^+]+0x%llx", name, &off), 2);
        uint64_t got_off;
        assert_true(i < n);
        const char *got = ksyms_lookup(k, addrs[i], &got_off);
        assert_non_null(got);
        assert_string_equal(got, name);
        assert_int_equal(got_off, off);
        nanosleep_seen |= strstr(name, "nanosleep") != NULL;
        i++;
    }
    fclose(f);
    assert_int_equal(i, n);
    assert_true(n > 0 && nanosleep_seen);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ksyms_close(k);
}

static void test_gone_thread(void **state)
{
    struct ksyms *k = open_or_skip();
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    uint64_t a[4];
    size_t n = 7;
    assert_int_equal(dump_kstack_read(k, child, child, a, 4, &n), -ENOENT);
    assert_int_equal(n, 0);
    ksyms_close(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addr_is_kallsyms_own),
        cmocka_unit_test(test_sleeping_child),
        cmocka_unit_test(test_gone_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
