/*
 * Unit tests for user/util/maps.c when the target's leader thread has exited (pthread_exit) while
 * another thread runs on: /proc/PID/maps is empty then, and maps_read takes a live thread's
 * /proc/PID/task/TID/maps (proc.c takes mem and root from the same directory).
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
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/maps.h"

static void *sleeper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static char state_of(pid_t pid)
{
    char path[64], buf[512], *c;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return 0;
    c = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
    fclose(f);
    return c ? c[2] : 0;
}

/* A child whose leader has exited and whose one other thread sleeps; 0 on failure. */
static pid_t leaderless_child(void)
{
    pid_t pid = fork();

    if (pid == 0) {
        pthread_t t;

        if (pthread_create(&t, NULL, sleeper, NULL))
            _exit(1);
        pthread_exit(NULL);
    }
    for (int i = 0; pid > 0 && i < 500 && state_of(pid) != 'Z'; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    return pid > 0 && state_of(pid) == 'Z' ? pid : 0;
}

static void test_live_leader(void **state)
{
    char dir[64], want[64];
    struct maps m;

    (void)state;
    assert_int_equal(maps_live_dir(getpid(), dir, sizeof(dir)), 0);
    snprintf(want, sizeof(want), "/proc/%d", (int)getpid());
    assert_string_equal(dir, want);
    assert_int_equal(maps_read_at(&m, getpid(), dir, sizeof(dir)), 0);
    assert_string_equal(dir, want);
    assert_true(m.n > 0);
    maps_free(&m);
}

static void test_leader_exited(void **state)
{
    char dir[64], prefix[64], path[96];
    const struct map_entry *e;
    struct maps m;
    pid_t pid = leaderless_child();
    FILE *f;
    int c;

    (void)state;
    assert_true(pid > 0);
    /* the leader's own maps are empty */
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    f = fopen(path, "re");
    assert_non_null(f);
    c = fgetc(f);
    fclose(f);
    assert_int_equal(c, EOF);

    snprintf(prefix, sizeof(prefix), "/proc/%d/task/", (int)pid);
    assert_int_equal(maps_live_dir(pid, dir, sizeof(dir)), 0);
    assert_memory_equal(dir, prefix, strlen(prefix));
    assert_int_not_equal(atoi(dir + strlen(prefix)), (int)pid);

    assert_int_equal(maps_read_at(&m, pid, dir, sizeof(dir)), 0);
    assert_memory_equal(dir, prefix, strlen(prefix));
    assert_true(m.n > 0);
    /* the child's code is this program's: the mapping of this function is there */
    e = maps_find(&m, (uint64_t)(uintptr_t)&test_leader_exited);
    assert_non_null(e);
    assert_true(maps_is_file(e) && (e->prot & MAPS_X));
    maps_free(&m);
    assert_int_equal(maps_read(&m, pid), 0);
    assert_true(m.n > 0);
    maps_free(&m);

    /* every thread gone: no live directory; the maps are empty (or the process is reaped) */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(maps_live_dir(pid, dir, sizeof(dir)), -ESRCH);
    snprintf(prefix, sizeof(prefix), "/proc/%d", (int)pid);
    assert_string_equal(dir, prefix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live_leader),
        cmocka_unit_test(test_leader_exited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
