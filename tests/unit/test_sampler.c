/* Unit tests for user/capture/sampler.c: argument checks, failure messages, and
 * (as root) the real BPF program sampling this test process: ids, registers, stacks, copy. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
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

#include "capture/sampler.h"

static int never(void *ctx, const struct sample_event *ev, size_t len)
{
    return 0;
}

static void test_open_rejects_bad_options(void **state)
{
    struct sampler_opts o = {.frequency = 99, .stack_copy = 12}; /* not a multiple of 8 */
    struct sampler *s = (void *)1;

    assert_int_equal(sampler_open(&s, &o, never, NULL, NULL), -EINVAL);
    assert_null(s);
    o.stack_copy = SAMPLE_STACK_COPY_MAX + 8;
    assert_int_equal(sampler_open(&s, &o, never, NULL, NULL), -EINVAL);
    o.stack_copy = 4096;
    o.frequency = 0;
    assert_int_equal(sampler_open(&s, &o, never, NULL, NULL), -EINVAL);
}

static void test_messages_name_the_cause(void **state)
{
    char buf[512];

    sampler_strerror(SAMPLER_STAGE_LOAD, -ENOSYS, buf, sizeof(buf));
    assert_non_null(strstr(buf, "no BPF support"));
    assert_non_null(strstr(buf, "--no-bpf"));
    sampler_strerror(SAMPLER_STAGE_PERF, -EINVAL, buf, sizeof(buf));
    assert_non_null(strstr(buf, "perf_event_max_sample_rate"));
    sampler_strerror(SAMPLER_STAGE_OPEN, -ENOENT, buf, sizeof(buf));
    assert_non_null(strstr(buf, "BTF"));
    /* one line each */
    assert_null(strchr(buf, '\n'));
}

struct seen {
    unsigned n, mine, with_copy, with_fp, exact, in_kernel, kernel_and_fp;
};

static int count_event(void *ctx, const struct sample_event *ev, size_t len)
{
    struct seen *s = ctx;

    s->n++;
    if (ev->pid == (uint32_t)getpid() && ev->tid == (uint32_t)syscall(SYS_gettid) &&
        !strncmp(ev->comm, "test_sampler", 12) && ev->regs.ip && ev->regs.sp)
        s->mine++;
    if (ev->stack_len >= 512 && ev->stack_addr == ev->regs.sp && ev->stack_len <= len - sizeof(*ev))
        s->with_copy++;
    if (ev->ustack_len >= 16 && sample_ustack(ev)[0] == ev->regs.ip)
        s->with_fp++;
    /* the record ends where its lengths say: the stacks after the copy, at their own lengths */
    if (len == sample_event_len(ev))
        s->exact++;
    if (ev->flags & SAMPLE_F_IN_KERNEL) {
        s->in_kernel++;
        /* the kernel stack first, then the user chain, still starting at the user ip */
        if (ev->kstack_len >= 8 && ev->ustack_len >= 16 && sample_ustack(ev)[0] == ev->regs.ip)
            s->kernel_and_fp++;
    }
    return 0;
}

static void burn(double seconds)
{
    struct timespec a, b;
    volatile uint64_t x = 1;

    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005ull + 1;
        for (int i = 0; i < 2000; i++) /* some samples in the kernel */
            syscall(SYS_getppid);
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}

static void test_samples_this_process(void **state)
{
    struct sampler_opts o = {
        .frequency = 997, .stack_copy = 4096, .kernel_stack = true, .user_fp_stack = true};
    struct sampler_stats c;
    struct seen seen = {0};
    struct sampler *s;
    enum sampler_stage stage;
    int err;

    if (geteuid() != 0)
        skip();
    err = sampler_open(&s, &o, count_event, &seen, &stage);
    assert_int_equal(err, 0);
    assert_int_equal(sampler_add_target(s, getpid()), 0);
    assert_int_equal(sampler_attach(s), 0);
    assert_true(sampler_ncpus(s) >= 1);
    for (int i = 0; i < 20; i++) {
        burn(0.05);
        assert_true(sampler_poll(s) >= 0);
    }
    assert_int_equal(sampler_get_stats(s, &c), 0);
    /* Every sample counted so far is in the ring (the program counts and submits in one run);
     * samples taken while the counters were read may follow them. */
    assert_true(sampler_poll(s) >= 0);
    sampler_close(s);
    /* ~1000 samples at full CPU; a loaded machine gives fewer */
    assert_true(seen.n >= 20);
    assert_int_equal(seen.mine, seen.n);
    assert_true(seen.n + c.lost >= c.matched);
    assert_true(seen.n + c.lost <= c.matched + 5);
    assert_int_equal(c.lost, 0);
    assert_true(seen.with_copy >= seen.n * 9 / 10);
    assert_true(seen.with_fp >= seen.n * 9 / 10);
    assert_int_equal(seen.exact, seen.n);
    if (seen.in_kernel)
        assert_true(seen.kernel_and_fp >= seen.in_kernel * 9 / 10);
}

/* A thread taught with its pthread_self() (as a Python thread state's thread_id teaches it): its
 * stack end is known before its first sample, so every copy of its stack stops there, the top
 * of the thread's stack block as glibc reports it (pthread_getattr_np), and none is a halved
 * retry. */
struct worker {
    atomic_int tid;
    atomic_bool stop;
    uint64_t end;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    pthread_attr_t a;
    void *addr;
    size_t size;
    volatile uint64_t x = 1;

    if (!pthread_getattr_np(pthread_self(), &a)) {
        if (!pthread_attr_getstack(&a, &addr, &size))
            w->end = (uint64_t)(uintptr_t)addr + size;
        pthread_attr_destroy(&a);
    }
    atomic_store(&w->tid, (int)syscall(SYS_gettid));
    while (!atomic_load(&w->stop))
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005ull + 1;
    return NULL;
}

struct bounded {
    pid_t tid;
    uint64_t end;
    unsigned n, at_end, short_copies;
};

static int count_bounded(void *ctx, const struct sample_event *ev, size_t len)
{
    struct bounded *b = ctx;

    if ((pid_t)ev->tid != b->tid)
        return 0;
    b->n++;
    b->at_end += (ev->flags & SAMPLE_F_COPY_BOUNDED) && ev->stack_addr + ev->stack_len == b->end;
    b->short_copies += !!(ev->flags & SAMPLE_F_COPY_SHORT);
    return 0;
}

static void test_taught_stack_end(void **state)
{
    struct sampler_opts o = {.frequency = 997, .stack_copy = SAMPLE_STACK_COPY_MAX};
    struct worker w = {0};
    struct bounded b = {0};
    struct sampler *s;
    pthread_t t;

    if (geteuid() != 0)
        skip();
    assert_int_equal(pthread_create(&t, NULL, work, &w), 0);
    while (!atomic_load(&w.tid))
        sched_yield();
    assert_true(w.end != 0);
    b.tid = atomic_load(&w.tid);
    b.end = w.end;
    assert_int_equal(sampler_open(&s, &o, count_bounded, &b, NULL), 0);
    assert_int_equal(sampler_add_target(s, getpid()), 0);
    assert_int_equal(sampler_set_py_thread(s, getpid(), b.tid, 0, (uint64_t)(uintptr_t)t), 0);
    assert_int_equal(sampler_attach(s), 0);
    /* until the worker has been sampled a few times (a loaded machine takes longer) */
    for (int i = 0; i < 400 && b.n < 20; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        assert_true(sampler_poll(s) >= 0);
    }
    sampler_close(s);
    atomic_store(&w.stop, true);
    pthread_join(t, NULL);
    assert_true(b.n >= 1);
    assert_int_equal(b.at_end, b.n);
    assert_int_equal(b.short_copies, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_rejects_bad_options),
        cmocka_unit_test(test_messages_name_the_cause),
        cmocka_unit_test(test_samples_this_process),
        cmocka_unit_test(test_taught_stack_end),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
