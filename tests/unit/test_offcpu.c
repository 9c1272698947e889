/* Unit tests for user/collect/offcpu.c: the state an off-CPU stack stands for, the scheduler's
 * frames cut from its kernel side, and the time its wake record adds (microseconds, remainders
 * carried per thread, unpaired and replaced records counted). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collect/offcpu.h"

static int setup(void **state)
{
    struct profile *p = malloc(sizeof(*p));
    if (!p || profile_init(p) != 0)
        return -1;
    *state = p;
    return 0;
}

static int teardown(void **state)
{
    profile_free(*state);
    free(*state);
    return 0;
}

static uint32_t fr(struct profile *p, enum frame_kind k, const char *name)
{
    int64_t f = profile_frame(p, k, name, NULL, 0);
    assert_true(f >= 0);
    return (uint32_t)f;
}

static void test_states(void **state)
{
    struct profile *p = *state;
    /* leaf first, as the collector has them */
    uint32_t gil_user[] = {fr(p, FRAME_NATIVE, "__futex_abstimed_wait_common"),
                           fr(p, FRAME_NATIVE, "pthread_cond_timedwait"), fr(p, FRAME_NATIVE, "take_gil"),
                           fr(p, FRAME_NATIVE, "PyEval_RestoreThread"), fr(p, FRAME_NATIVE, "time_sleep")};
    uint32_t futex_k[] = {fr(p, FRAME_KERNEL, "futex_wait_queue"), fr(p, FRAME_KERNEL, "__futex_wait")};
    uint32_t sleep_user[] = {fr(p, FRAME_NATIVE, "clock_nanosleep"), fr(p, FRAME_NATIVE, "time_sleep")};
    uint32_t sleep_k[] = {fr(p, FRAME_KERNEL, "do_nanosleep"), fr(p, FRAME_KERNEL, "hrtimer_nanosleep")};
    uint32_t recv_user[] = {fr(p, FRAME_NATIVE, "__recv"), fr(p, FRAME_NATIVE, "sock_recv")};
    uint32_t recv_k[] = {fr(p, FRAME_KERNEL, "unix_stream_read_generic"),
                         fr(p, FRAME_KERNEL, "sock_recvmsg")};

    assert_int_equal(offcpu_state(p, gil_user, 5, futex_k, 2, false), OFFCPU_GIL);
    assert_int_equal(offcpu_state(p, sleep_user, 2, sleep_k, 2, false), OFFCPU_IDLE);
    /* no kernel stack: the C library's sleep still tells */
    assert_int_equal(offcpu_state(p, sleep_user, 2, NULL, 0, false), OFFCPU_IDLE);
    assert_int_equal(offcpu_state(p, recv_user, 2, recv_k, 2, false), OFFCPU_BLOCKED);
    /* a lock wait that is not the GIL's */
    assert_int_equal(offcpu_state(p, gil_user, 2, futex_k, 2, false), OFFCPU_BLOCKED);
    /* preempted: runnable, whatever it ran */
    assert_int_equal(offcpu_state(p, sleep_user, 2, sleep_k, 2, true), OFFCPU_RUNNABLE);
    assert_string_equal(offcpu_state_frame(OFFCPU_GIL), "[waiting for GIL]");
    assert_string_equal(offcpu_state_frame(OFFCPU_IDLE), "[idle]");
    assert_string_equal(offcpu_state_frame(OFFCPU_BLOCKED), "[blocked]");
    assert_string_equal(offcpu_state_key(OFFCPU_RUNNABLE), "runnable");
}

static void test_switch_frames(void **state)
{
    struct profile *p = *state;
    uint32_t k[] = {fr(p, FRAME_KERNEL, "bpf_get_stack"),
                    fr(p, FRAME_KERNEL, "bpf_prog_1234_offcpu"),
                    fr(p, FRAME_KERNEL, "__bpf_trace_sched_switch"),
                    fr(p, FRAME_KERNEL, "__schedule"),
                    fr(p, FRAME_KERNEL, "schedule"),
                    fr(p, FRAME_KERNEL, "schedule_hrtimeout_range"),
                    fr(p, FRAME_KERNEL, "do_nanosleep"),
                    fr(p, FRAME_KERNEL, "hrtimer_nanosleep")};

    assert_int_equal(offcpu_switch_frames(p, k, 8), 6);     /* do_nanosleep becomes the leaf */
    assert_int_equal(offcpu_switch_frames(p, k + 6, 2), 0); /* no __schedule: nothing to cut */
}

static void test_time(void **state)
{
    struct profile *p = *state;
    uint32_t stack[] = {fr(p, FRAME_THREAD, "thread 7 (x)"), fr(p, FRAME_OTHER, "[idle]")};
    struct offcpu_stats st;
    struct offcpu *o;
    int64_t node = profile_add(p, stack, 2, 0);

    assert_true(node > 0);
    assert_int_equal(offcpu_open(&o), 0);
    /* 3 x 1500 ns: 4 us, not 3 (the remainder carries) */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(offcpu_left(o, 7, (uint32_t)node, OFFCPU_IDLE), 0);
        offcpu_back(o, p, 7, 1500);
    }
    assert_int_equal(p->nodes[node].self, 4);
    /* a wake record with no stack, and a stack that never got one */
    offcpu_back(o, p, 8, 1000);
    assert_int_equal(offcpu_left(o, 7, (uint32_t)node, OFFCPU_IDLE), 0);
    assert_int_equal(offcpu_left(o, 7, (uint32_t)node, OFFCPU_IDLE), 0);
    /* a stack left out (--no-idle): its time counts in the stats only */
    assert_int_equal(offcpu_left(o, 9, 0, OFFCPU_IDLE), 0);
    offcpu_back(o, p, 9, 5000);
    assert_int_equal(p->nodes[node].self, 4);
    /* many threads: the table grows and keeps every one */
    for (uint32_t t = 100; t < 1100; t++)
        assert_int_equal(offcpu_left(o, t, (uint32_t)node, OFFCPU_BLOCKED), 0);
    for (uint32_t t = 100; t < 1100; t++)
        offcpu_back(o, p, t, 1000);
    assert_int_equal(p->nodes[node].self, 1004);
    offcpu_get_stats(o, &st);
    assert_int_equal(st.unpaired, 1);
    assert_int_equal(st.replaced, 1);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(st.back, 1004);
    assert_int_equal(st.ns[OFFCPU_IDLE], 4500 + 5000);
    assert_int_equal(st.ns[OFFCPU_BLOCKED], 1000000);
    offcpu_close(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_states, setup, teardown),
        cmocka_unit_test_setup_teardown(test_switch_frames, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time, setup, teardown),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
