/*
 * taskiter: one pass of bpf/taskdump.bpf.c over this test's own process, checked against what the
 * process knows of itself: a record for every thread /proc/self/task lists; a thread parked in
 * nanosleep recorded as /proc shows it (state S, not on a CPU, not stopped: its context-switch
 * count is the kernel's), with its stack pointer inside its own stack, a copy that covers its
 * live stack and equals that memory byte for byte (the thread does not run while parked), and a kernel stack
 * whose frames are the nanosleep path when symbolised from /proc/kallsyms. Root only (BPF).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/taskiter.h"
#include "symbols/ksyms.h"

static volatile pid_t sleeper_tid;
static void *stack_base;
static size_t stack_size;

static void *sleeper(void *arg)
{
    pthread_attr_t a;
    pthread_getattr_np(pthread_self(), &a);
    pthread_attr_getstack(&a, &stack_base, &stack_size);
    pthread_attr_destroy(&a);
    sleeper_tid = (pid_t)syscall(SYS_gettid);
    struct timespec ts = {.tv_sec = 600};
    nanosleep(&ts, NULL);
    return NULL;
}

static char proc_state(pid_t tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *close = strrchr(buf, ')');
    return close && close[1] == ' ' ? close[2] : 0;
}

static uint64_t proc_switches(pid_t tid)
{
    char path[64], line[128];
    uint64_t n = 0, v;
    snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "voluntary_ctxt_switches: %lu", &v) == 1 ||
            sscanf(line, "nonvoluntary_ctxt_switches: %lu", &v) == 1)
            n += v;
    fclose(f);
    return n;
}

/* The end of the mapping of ours that holds addr (/proc/self/maps), 0: none. */
static uint64_t mapping_end(uint64_t addr)
{
    FILE *f = fopen("/proc/self/maps", "re");
    char line[512];
    unsigned long lo, hi;
    uint64_t end = 0;
    if (!f)
        return 0;
    while (!end && fgets(line, sizeof(line), f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr >= lo && addr < hi)
            end = hi;
    fclose(f);
    return end;
}

static void test_own_process(void **state)
{
    if (geteuid() != 0) {
        print_message("SKIP: the task iterator needs BPF rights (root)\n");
        skip();
    }
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, sleeper, NULL), 0);
    for (int i = 0; i < 500 && !(sleeper_tid && proc_state(sleeper_tid) == 'S'); i++)
        usleep(10000);
    assert_int_equal(proc_state(sleeper_tid), 'S');
    uint64_t sw_before = proc_switches(sleeper_tid);

    struct taskiter ti;
    char err[256] = "";
    int rc = taskiter_snapshot(&ti, getpid(), SAMPLE_STACK_COPY_DEFAULT, true, false, err, sizeof(err));
    if (rc == -EOPNOTSUPP) {
        print_message("SKIP: %s\n", err);
        skip();
    }
    assert_int_equal(rc, 0);

    /* every thread /proc lists, once */
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    size_t listed = 0;
    assert_non_null(d);
    while ((e = readdir(d))) {
        int tid = atoi(e->d_name), found = 0;
        if (tid <= 0)
            continue;
        listed++;
        for (size_t i = 0; i < ti.n; i++)
            found += ti.t[i].ev->tid == (uint32_t)tid && ti.t[i].ev->pid == (uint32_t)getpid();
        assert_int_equal(found, 1);
    }
    closedir(d);
    assert_int_equal(ti.n, listed);

    const struct taskiter_thread *r = NULL;
    for (size_t i = 0; i < ti.n; i++)
        if (ti.t[i].ev->tid == (uint32_t)sleeper_tid)
            r = &ti.t[i];
    assert_non_null(r);
    assert_int_equal(taskiter_state_letter(r->task->state), proc_state(sleeper_tid));
    assert_false(r->task->flags & (DUMP_TASK_ON_CPU | DUMP_TASK_NO_USER));
    assert_int_equal(r->task->switches, sw_before);
    assert_int_equal(proc_switches(sleeper_tid), sw_before); /* the pass did not wake it */
    assert_false(r->ev->flags & (SAMPLE_F_NO_UREGS | SAMPLE_F_COPY_ERR));

    /* registers and copy: the parked thread's own stack, byte for byte */
    uint64_t lo = (uint64_t)(uintptr_t)stack_base, hi = lo + stack_size;
    assert_true(r->ev->regs.sp >= lo && r->ev->regs.sp < hi);
    assert_int_equal(r->ev->stack_addr, r->ev->regs.sp);
    /* The copy runs past the stack's top into glibc's thread descriptor (same mapping) and, the
     * kernel reading across mappings that touch, maybe beyond: what lies in sp's own mapping is
     * compared. */
    uint64_t map_end = mapping_end(r->ev->regs.sp);
    assert_true(map_end >= hi);
    assert_true(r->ev->stack_len >= SAMPLE_STACK_COPY_MIN);
    assert_int_equal(r->len, sample_event_len(r->ev)); /* copy, then kernel stack */
    uint64_t cmp =
        r->ev->stack_len < map_end - r->ev->stack_addr ? r->ev->stack_len : map_end - r->ev->stack_addr;
    assert_true(cmp >= hi - r->ev->regs.sp); /* the whole live stack at least */
    assert_memory_equal(r->ev->stack, (const void *)(uintptr_t)r->ev->stack_addr, cmp);

    /* kernel stack: the nanosleep path */
    struct ksyms *k = NULL;
    assert_int_equal(ksyms_open(&k), 0);
    assert_true(r->ev->kstack_len >= 8 && (r->ev->flags & SAMPLE_F_IN_KERNEL));
    bool nanosleep_seen = false;
    for (uint32_t i = 0; i < r->ev->kstack_len / 8; i++) {
        const char *name = ksyms_lookup(k, sample_kstack(r->ev)[i] - (i ? 1 : 0), NULL);
        nanosleep_seen |= name && strstr(name, "nanosleep");
    }
    assert_true(nanosleep_seen);
    ksyms_close(k);
    assert_true(taskiter_state_letter(0) == 'R');

    taskiter_free(&ti);
    pthread_cancel(th);
    pthread_join(th, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
