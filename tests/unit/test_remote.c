/*
 * remote: batched reads of a process (here: a forked child holding known bytes), partial
 * success at the first bad iovec, going on past it when asked, empty segments inside a batch,
 * a window read that runs into a hole, and the counters.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/remote.h"

static uint8_t pattern[4096];

struct child {
    pid_t pid;
    uint64_t mapped, unmapped; /* an address with the pattern, one with nothing mapped */
};

static struct child start_child(void)
{
    struct child c;
    for (size_t i = 0; i < sizeof(pattern); i++)
        pattern[i] = (uint8_t)(i * 7 + 3);
    /* Reserve two pages, unmap the second: a hole right behind readable memory. */
    uint8_t *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    munmap(m + 4096, 4096);
    c.mapped = (uint64_t)(uintptr_t)pattern;
    c.unmapped = (uint64_t)(uintptr_t)(m + 4096);
    c.pid = fork();
    if (c.pid == 0) {
        pause();
        _exit(0);
    }
    return c;
}

static void stop_child(struct child *c)
{
    kill(c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
}

static void batch(void **state)
{
    (void)state;
    struct child c = start_child();
    struct remote r;
    uint8_t a[16], b[100], d[8], e[32];
    remote_init(&r, c.pid);

    struct remote_seg segs[4] = {
        REMOTE_SEG(c.mapped, a, sizeof(a)),
        REMOTE_SEG(c.mapped + 1000, b, sizeof(b)),
        REMOTE_SEG(c.unmapped, d, sizeof(d)),
        REMOTE_SEG(c.mapped + 2000, e, sizeof(e)),
    };
    /* Stops at the bad third segment: one call, two segments. */
    assert_int_equal(remote_readv(&r, segs, 4, false), 2);
    assert_true(segs[0].ok && segs[1].ok && !segs[2].ok && !segs[3].ok);
    assert_memory_equal(a, pattern, sizeof(a));
    assert_memory_equal(b, pattern + 1000, sizeof(b));
    assert_int_equal(r.st.calls, 1);
    assert_int_equal(r.st.bytes, sizeof(a) + sizeof(b));
    assert_int_equal(r.st.batched_attempts, 1);
    assert_int_equal(r.st.batched_successes, 0);
    assert_int_equal(r.st.segs_requested, 4);
    assert_int_equal(r.st.segs_read, 2);

    /* Goes on after it: a second call for the fourth. */
    assert_int_equal(remote_readv(&r, segs, 4, true), 3);
    assert_true(segs[3].ok && !segs[2].ok);
    assert_memory_equal(e, pattern + 2000, sizeof(e));
    assert_int_equal(r.st.calls, 3);

    /* All good: one call, counted as a batched success. */
    segs[2] = REMOTE_SEG(c.mapped + 3000, d, sizeof(d));
    assert_int_equal(remote_readv(&r, segs, 4, false), 4);
    assert_int_equal(r.st.calls, 4);
    assert_int_equal(r.st.batched_successes, 1);

    /* A segment straddling the hole is not ok, even though part of it was read. */
    struct remote_seg straddle[2] = {REMOTE_SEG(c.unmapped - 8, e, 16), REMOTE_SEG(c.mapped, a, 4)};
    assert_int_equal(remote_readv(&r, straddle, 2, true), 1);
    assert_false(straddle[0].ok);
    assert_true(straddle[1].ok);

    /* Single reads. */
    assert_int_equal(remote_read(&r, c.mapped + 10, a, 4), 0);
    assert_memory_equal(a, pattern + 10, 4);
    assert_int_equal(remote_read(&r, c.unmapped, a, 4), -EFAULT);
    assert_int_equal(remote_read(&r, c.unmapped - 2, a, 4), -EFAULT);
    stop_child(&c);
    /* The process is gone. */
    assert_int_equal(remote_read(&r, c.mapped, a, 4), -ESRCH);
    assert_int_equal(remote_readv(&r, segs, 4, true), -ESRCH);
}

/* More segments than one call may carry (UIO_MAXIOV): split, all read. */
static void many(void **state)
{
    (void)state;
    struct child c = start_child();
    struct remote r;
    static struct remote_seg segs[3000];
    static uint8_t buf[3000][8];
    remote_init(&r, c.pid);
    for (int i = 0; i < 3000; i++)
        segs[i] = REMOTE_SEG(c.mapped + (uint64_t)(i % 500) * 8, buf[i], 8);
    assert_int_equal(remote_readv(&r, segs, 3000, false), 3000);
    assert_int_equal(r.st.calls, 3);
    for (int i = 0; i < 3000; i++)
        assert_memory_equal(buf[i], pattern + (i % 500) * 8, 8);
    stop_child(&c);
}

/* Empty segments among the others (a header, then a name only some need): still one call for
 * all, and a bad segment after one is found at its own index. */
static void empty_between(void **state)
{
    (void)state;
    struct child c = start_child();
    struct remote r;
    static struct remote_seg segs[600];
    static uint8_t buf[600][8];
    remote_init(&r, c.pid);
    for (int i = 0; i < 600; i++)
        segs[i] = REMOTE_SEG(c.mapped + (uint64_t)i * 4, buf[i], i % 2 ? 0 : 8);
    assert_int_equal(remote_readv(&r, segs, 600, false), 600);
    assert_int_equal(r.st.calls, 1);
    for (int i = 0; i < 600; i += 2)
        assert_memory_equal(buf[i], pattern + i * 4, 8);

    segs[301] = REMOTE_SEG(c.unmapped, buf[301], 8);           /* between two empty ones... */
    assert_int_equal(remote_readv(&r, segs, 600, false), 301); /* ...the first 301 are ok */
    assert_int_equal(r.st.calls, 2);
    assert_true(segs[300].ok && !segs[301].ok && segs[302].ok == false);
    assert_int_equal(remote_readv(&r, segs, 600, true), 599); /* all but it */
    assert_int_equal(r.st.calls, 4);
    assert_true(segs[302].ok && segs[598].ok && !segs[301].ok);
    stop_child(&c);
}

/* A window (the thread list's): what can be read from its start, no error when it runs into a
 * hole or starts in one; an error only when the process is gone. */
static void upto(void **state)
{
    (void)state;
    struct child c = start_child();
    struct remote r;
    static uint8_t buf[4096];
    remote_init(&r, c.pid);

    assert_int_equal(remote_read_upto(&r, c.mapped, buf, 256), 256);
    assert_memory_equal(buf, pattern, 256);
    assert_int_equal(remote_read_upto(&r, c.unmapped - 100, buf, sizeof(buf)), 100);
    assert_int_equal(remote_read_upto(&r, c.unmapped, buf, 16), 0);
    assert_int_equal(r.st.calls, 3);
    assert_int_equal(r.st.bytes, 356);
    assert_int_equal(r.st.errors, 0);
    stop_child(&c);
    assert_int_equal(remote_read_upto(&r, c.mapped, buf, 16), -ESRCH);
    assert_int_equal(r.st.errors, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(batch),
        cmocka_unit_test(many),
        cmocka_unit_test(empty_between),
        cmocka_unit_test(upto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
