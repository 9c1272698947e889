/* Unit tests for user/collect/collect.c: records made by hand, of this very process, turned into profile
 * stacks (thread root, symbolised native frames root → leaf, kernel frames, unknown addresses), and
 * the GIL counts of user/collect/gil.c. */
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

#include "collect/collect.h"

__attribute__((noinline)) int test_leaf_fn(int x)
{
    return x * 3 + 1;
}

__attribute__((noinline)) int test_mid_fn(int x)
{
    return test_leaf_fn(x) + 2;
}

struct fixture {
    struct profile prof;
    struct collector *c;
    struct sample_event *ev;
};

static int setup_opts(void **state, const struct collect_opts *po)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct collect_opts o = *po;

    if (!f || profile_init(&f->prof))
        return -1;
    if (collect_open(&f->c, &o, &f->prof))
        return -1;
    f->ev = calloc(1, sizeof(*f->ev) + 64 + 2 * SAMPLE_STACK_BYTES);
    if (!f->ev)
        return -1;
    f->ev->pid = getpid();
    f->ev->tid = gettid();
    strcpy(f->ev->comm, "tester");
    *state = f;
    return 0;
}

static int setup_fp(void **state)
{
    return setup_opts(state, &(struct collect_opts){.unwind = UNWIND_FP});
}

static int setup_kernel(void **state)
{
    return setup_opts(state, &(struct collect_opts){.unwind = UNWIND_FP, .kernel = true});
}

static int setup_gil_mark(void **state)
{
    return setup_opts(state, &(struct collect_opts){.unwind = UNWIND_FP, .gil = SAMPLE_GIL_MARK});
}

static int setup_gil_only(void **state)
{
    return setup_opts(state, &(struct collect_opts){.unwind = UNWIND_FP, .gil = SAMPLE_GIL_ONLY});
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    collect_close(f->c);
    profile_free(&f->prof);
    free(f->ev);
    free(f);
    return 0;
}

/* Labels of the stack that ends at node `leaf`, root first, joined by ';'. */
static void stack_text(const struct profile *p, uint32_t leaf, char *buf, size_t size)
{
    uint32_t chain[64];
    size_t n = 0, len = 0;

    for (uint32_t i = leaf; i && n < 64; i = p->nodes[i].parent)
        chain[n++] = i;
    buf[0] = 0;
    while (n-- > 0) {
        char lab[256];

        profile_frame_label(p, p->nodes[chain[n]].frame, lab, sizeof(lab));
        len += snprintf(buf + len, size - len, "%s%s", len ? ";" : "", lab);
    }
}

/* The one node with self samples (the tests add one stack at a time). */
static uint32_t last_leaf(const struct profile *p)
{
    uint32_t leaf = 0;

    for (uint32_t i = 1; i < p->nnodes; i++)
        if (p->nodes[i].self)
            leaf = i;
    return leaf;
}

static void test_fp_stack_is_symbolised_root_first(void **state)
{
    struct fixture *f = *state;
    struct collect_stats st;
    char text[1024], want[256];

    /* ustack as the kernel gives it: the leaf ip, then return addresses. */
    sample_ustack(f->ev)[0] = (uintptr_t)&test_leaf_fn + 1;
    sample_ustack(f->ev)[1] = (uintptr_t)&test_mid_fn + 5; /* return address: symbolised at -1 */
    f->ev->ustack_len = 16;
    f->ev->regs.ip = sample_ustack(f->ev)[0];
    assert_int_equal(collect_sample(f->c, f->ev, sample_event_len(f->ev)), 1); /* a new thread */
    assert_int_equal(collect_sample(f->c, f->ev, sample_event_len(f->ev)), 0); /* known now */
    stack_text(&f->prof, last_leaf(&f->prof), text, sizeof(text));
    snprintf(want, sizeof(want), "thread %u (tester);test_mid_fn;test_leaf_fn", f->ev->tid);
    assert_string_equal(text, want);
    assert_int_equal(f->prof.nodes[last_leaf(&f->prof)].self, 2);
    collect_get_stats(f->c, &st);
    assert_int_equal(st.samples, 2);
    assert_int_equal(st.threads, 1);
    assert_int_equal(st.unknown_frames, 0);
    assert_int_equal(st.frames, 4);
}

static void test_unknown_address_is_kept(void **state)
{
    struct fixture *f = *state;
    struct collect_stats st;
    char text[1024], want[256];

    sample_ustack(f->ev)[0] = 0x10; /* in no mapping */
    f->ev->ustack_len = 8;
    assert_int_equal(collect_sample(f->c, f->ev, sample_event_len(f->ev)), 1);
    stack_text(&f->prof, last_leaf(&f->prof), text, sizeof(text));
    snprintf(want, sizeof(want), "thread %u (tester);[unknown]", f->ev->tid);
    assert_string_equal(text, want);
    collect_get_stats(f->c, &st);
    assert_int_equal(st.unknown_frames, 1);
}

static void test_sample_without_frames_still_counts(void **state)
{
    struct fixture *f = *state;
    char text[1024], want[256];

    f->ev->flags = SAMPLE_F_IN_KERNEL; /* inside exec: no user registers yet, no --kernel */
    assert_int_equal(collect_sample(f->c, f->ev, sample_event_len(f->ev)), 1);
    stack_text(&f->prof, last_leaf(&f->prof), text, sizeof(text));
    snprintf(want, sizeof(want), "thread %u (tester);[kernel]", f->ev->tid);
    assert_string_equal(text, want);
}

static void test_comm_change_gives_new_thread_frame(void **state)
{
    struct fixture *f = *state;
    char text[1024], want[256];

    sample_ustack(f->ev)[0] = (uintptr_t)&test_leaf_fn + 1;
    f->ev->ustack_len = 8;
    assert_int_equal(collect_sample(f->c, f->ev, sample_event_len(f->ev)), 1);
    strcpy(f->ev->comm, "renamed");
    assert_int_equal(collect_sample(f->c, f->ev, sample_event_len(f->ev)), 0); /* same thread */
    stack_text(&f->prof, last_leaf(&f->prof), text, sizeof(text));
    snprintf(want, sizeof(want), "thread %u (renamed);test_leaf_fn", f->ev->tid);
    assert_string_equal(text, want);
}

static void test_many_threads(void **state)
{
    struct fixture *f = *state;
    struct collect_stats st;

    sample_ustack(f->ev)[0] = (uintptr_t)&test_leaf_fn + 1;
    f->ev->ustack_len = 8;
    for (uint32_t t = 1; t <= 2000; t++) {
        f->ev->tid = t;
        assert_int_equal(collect_sample(f->c, f->ev, sample_event_len(f->ev)), 1);
    }
    for (uint32_t t = 1; t <= 2000; t++) {
        f->ev->tid = t;
        assert_int_equal(collect_sample(f->c, f->ev, sample_event_len(f->ev)), 0);
    }
    collect_get_stats(f->c, &st);
    assert_int_equal(st.threads, 2000);
    assert_int_equal(st.samples, 4000);
}

/* An address of a named kernel function, from /proc/kallsyms (0 when addresses are hidden). */
static uint64_t kernel_symbol(const char *name)
{
    FILE *f = fopen("/proc/kallsyms", "re");
    char line[512], sym[256], type;
    unsigned long long addr;
    uint64_t found = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "%llx %c %255s", &addr, &type, sym) == 3 && !strcmp(sym, name)) {
            found = addr;
            break;
        }
    fclose(f);
    return found;
}

static void test_kernel_frames_follow_user_frames(void **state)
{
    struct fixture *f = *state;
    uint64_t entry = kernel_symbol("do_syscall_64"), leaf = kernel_symbol("ksys_write");
    char text[1024], want[256];

    if (!entry || !leaf)
        skip();
    f->ev->flags = SAMPLE_F_IN_KERNEL;
    sample_kstack(f->ev)[0] = leaf + 4;  /* where the tick landed */
    sample_kstack(f->ev)[1] = entry + 9; /* a return address */
    f->ev->kstack_len = 16;
    sample_ustack(f->ev)[0] = (uintptr_t)&test_leaf_fn + 1; /* after the kernel stack */
    f->ev->ustack_len = 8;
    assert_int_equal(collect_sample(f->c, f->ev, sample_event_len(f->ev)), 1);
    stack_text(&f->prof, last_leaf(&f->prof), text, sizeof(text));
    snprintf(want, sizeof(want), "thread %u (tester);test_leaf_fn;do_syscall_64_[k];ksys_write_[k]",
             f->ev->tid);
    assert_string_equal(text, want);

    /* a sample in user mode has no kernel frames even when kstack holds something */
    f->ev->flags = 0;
    collect_sample(f->c, f->ev, sample_event_len(f->ev));
    snprintf(want, sizeof(want), "thread %u (tester);test_leaf_fn", f->ev->tid);
    for (uint32_t i = 1; i < f->prof.nnodes; i++) {
        stack_text(&f->prof, i, text, sizeof(text));
        if (!strcmp(text, want)) {
            assert_int_equal(f->prof.nodes[i].self, 1);
            return;
        }
    }
    fail_msg("no stack %s", want);
}

/* One record of thread `tid` with GIL flags `flags`. */
static void gil_sample(struct fixture *f, uint32_t tid, uint32_t flags)
{
    f->ev->tid = tid;
    f->ev->flags = flags;
    sample_ustack(f->ev)[0] = (uintptr_t)&test_leaf_fn + 1;
    f->ev->ustack_len = 8;
    assert_true(collect_sample(f->c, f->ev, sample_event_len(f->ev)) >= 0);
}

/* The row of thread `tid` among collect_gil_threads' (fails when it has none). */
static struct collect_gil_thread gil_row(struct fixture *f, uint32_t tid)
{
    struct collect_gil_thread rows[8];
    size_t n = collect_gil_threads(f->c, rows, 8);

    for (size_t i = 0; i < n; i++)
        if (rows[i].tid == tid)
            return rows[i];
    fail_msg("no GIL row for thread %u", tid);
    return rows[0];
}

/* top: every sample is kept and counted by what the kernel said of its thread and the GIL. */
static void test_gil_mark_counts_every_sample(void **state)
{
    struct fixture *f = *state;
    struct collect_stats st;
    char name[64];

    for (int i = 0; i < 3; i++)
        gil_sample(f, 101, SAMPLE_F_GIL_HELD);
    gil_sample(f, 101, 0);                    /* checked, not held */
    gil_sample(f, 101, SAMPLE_F_GIL_UNKNOWN); /* not checked: not in the share */
    gil_sample(f, 102, 0);
    gil_sample(f, 102, 0);
    gil_sample(f, 103, SAMPLE_F_GIL_UNKNOWN); /* a thread never checked has no row */
    collect_get_stats(f->c, &st);
    assert_int_equal(st.samples, 8);
    assert_int_equal(st.gil_checked, 6);
    assert_int_equal(st.gil_held, 3);

    struct collect_gil_thread a = gil_row(f, 101), b = gil_row(f, 102), rows[8];
    assert_int_equal(a.checked, 4);
    assert_int_equal(a.held, 3);
    assert_int_equal(b.checked, 2);
    assert_int_equal(b.held, 0);
    assert_int_equal(collect_gil_threads(f->c, rows, 8), 2);
    profile_frame_label(&f->prof, a.frame, name, sizeof(name));
    assert_string_equal(name, "thread 101 (tester)");
    /* this process is not attached as Python: nothing says where its GIL is */
    assert_int_equal(collect_gil_state(f->c), COLLECT_GIL_UNKNOWN);
}

/* --mode gil: only the holder's samples make stacks; the share is not counted. */
static void test_gil_only_keeps_holders(void **state)
{
    struct fixture *f = *state;
    struct collect_stats st;
    struct collect_gil_thread rows[8];

    gil_sample(f, 101, SAMPLE_F_GIL_HELD);
    gil_sample(f, 101, SAMPLE_F_GIL_UNKNOWN);
    collect_get_stats(f->c, &st);
    assert_int_equal(st.samples, 1);
    assert_int_equal(st.gil_unknown, 1);
    assert_int_equal(st.gil_checked, 0);
    assert_int_equal(collect_gil_threads(f->c, rows, 8), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fp_stack_is_symbolised_root_first, setup_fp, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_address_is_kept, setup_fp, teardown),
        cmocka_unit_test_setup_teardown(test_sample_without_frames_still_counts, setup_fp, teardown),
        cmocka_unit_test_setup_teardown(test_comm_change_gives_new_thread_frame, setup_fp, teardown),
        cmocka_unit_test_setup_teardown(test_many_threads, setup_fp, teardown),
        cmocka_unit_test_setup_teardown(test_kernel_frames_follow_user_frames, setup_kernel, teardown),
        cmocka_unit_test_setup_teardown(test_gil_mark_counts_every_sample, setup_gil_mark, teardown),
        cmocka_unit_test_setup_teardown(test_gil_only_keeps_holders, setup_gil_only, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
