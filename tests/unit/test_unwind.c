/*
 * unwind: the test captures its own registers and a copy of its stack at a known depth, then
 * unwinds the copy and names the frames.
 *
 *   chain_a -> chain_b -> chain_c (no frame pointers)  DWARF and auto find all three; FP cannot
 *   fp_a -> fp_b -> fp_c (frame pointers)               FP mode finds them
 *   qsort -> compare                                    through libc's CFI
 *   trampoline in anonymous memory -> capture           through the .eh_frame of a jitdump
 *   a live /usr/bin/python3.11                          stopped with ptrace, its stack copied
 *   two threads on stacks laid out alike                 the second walk is the first's, remembered
 *
 * and measures µs per unwind of a 20-frame stack against libdw's unwinder on the same copy.
 */
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "jitdump.h"
#include "symbols/jitsyms.h"
#include "util/maps.h"
#include "symbols/proc.h"

#include "elfcache.h"

#define STACK_MAX (512 * 1024)

struct snap {
    struct unwind_regs regs;
    uint8_t *stack;
    size_t len;
    uint64_t addr;
};

static __thread uint64_t stack_end; /* end of the [stack] mapping, or of the thread's stack */

/* Copies words of other frames, redzones included: not instrumented. */
static __attribute__((noinline, no_sanitize_address)) void copy_words(uint8_t *dst, const uint8_t *src,
                                                                      size_t len)
{
    for (size_t i = 0; i < len; i++)
        ((volatile uint8_t *)dst)[i] = src[i];
}

static __attribute__((noinline)) void take(struct snap *s, const uint64_t *r)
{
    memset(&s->regs, 0, sizeof(s->regs));
    s->regs.ip = r[0];
    s->regs.sp = r[1];
    s->regs.bp = r[2];
    s->regs.bx = r[3];
    s->regs.r12 = r[4];
    s->regs.r13 = r[5];
    s->regs.r14 = r[6];
    s->regs.r15 = r[7];
    s->addr = r[1];
    s->len = stack_end - r[1];
    if (s->len > STACK_MAX)
        s->len = STACK_MAX;
    /* Only memory above the captured rsp is copied; this call's own frame lies below it. */
    copy_words(s->stack, (const uint8_t *)(uintptr_t)r[1], s->len);
}

/* Registers as they are at this point of the enclosing function, then a copy of the stack. */
#define CAPTURE(s)                                                                                           \
    do {                                                                                                     \
        uint64_t r_[8];                                                                                      \
        asm volatile("lea 0(%%rip), %%rax\n\t"                                                               \
                     "mov %%rax, 0(%0)\n\t"                                                                  \
                     "mov %%rsp, 8(%0)\n\t"                                                                  \
                     "mov %%rbp, 16(%0)\n\t"                                                                 \
                     "mov %%rbx, 24(%0)\n\t"                                                                 \
                     "mov %%r12, 32(%0)\n\t"                                                                 \
                     "mov %%r13, 40(%0)\n\t"                                                                 \
                     "mov %%r14, 48(%0)\n\t"                                                                 \
                     "mov %%r15, 56(%0)\n\t"                                                                 \
                     :                                                                                       \
                     : "r"(r_)                                                                               \
                     : "rax", "memory");                                                                     \
        take((s), r_);                                                                                       \
    } while (0)

#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))
#define FP   __attribute__((noinline, optimize("no-omit-frame-pointer")))

/* Each caller does work after the call, so no call becomes a jump. */
static NOFP int chain_c(struct snap *s, int d)
{
    CAPTURE(s);
    asm volatile("" : "+r"(d));
    return d + 1;
}
static NOFP int chain_b(struct snap *s, int d)
{
    int r = chain_c(s, d + 1);
    asm volatile("" : "+r"(r));
    return r * 2;
}
static NOFP int chain_a(struct snap *s, int d)
{
    int r = chain_b(s, d + 1);
    asm volatile("" : "+r"(r));
    return r * 3;
}
static FP int fp_c(struct snap *s, int d)
{
    CAPTURE(s);
    asm volatile("" : "+r"(d));
    return d + 1;
}
static FP int fp_b(struct snap *s, int d)
{
    int r = fp_c(s, d + 1);
    asm volatile("" : "+r"(r));
    return r * 2;
}
static FP int fp_a(struct snap *s, int d)
{
    int r = fp_b(s, d + 1);
    asm volatile("" : "+r"(r));
    return r * 3;
}
static NOFP int deep(struct snap *s, int n)
{
    if (n == 0) {
        CAPTURE(s);
        return 0;
    }
    int r = deep(s, n - 1);
    asm volatile("" : "+r"(r));
    return r + n;
}

static struct snap *snap_new(void)
{
    struct snap *s = calloc(1, sizeof(*s));
    s->stack = malloc(STACK_MAX);
    return s;
}

static void snap_free(struct snap *s)
{
    free(s->stack);
    free(s);
}

/* Frame names, callers as return addresses; compiler suffixes (".constprop.0") cut off. */
static int names(struct proc *p, const uint64_t *ips, int n, char (*out)[128])
{
    for (int i = 0; i < n; i++) {
        struct symres r;
        if (i)
            proc_symbolize_ret(p, ips[i], &r);
        else
            proc_symbolize(p, ips[i], &r);
        proc_format(&r, out[i], sizeof(out[i]));
        if (r.name && r.kind == FRAME_NATIVE)
            out[i][strcspn(out[i], ".")] = '\0';
    }
    return n;
}

static void dump(char (*nm)[128], int n, unsigned stop)
{
    for (int i = 0; i < n; i++)
        print_message("#   %2d %s\n", i, nm[i]);
    print_message("#   stop %#x\n", stop);
}

static int find_name(char (*nm)[128], int n, const char *want)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(nm[i], want))
            return i;
    return -1;
}

static void expect_chain(struct proc *p, struct snap *s, enum unwind_mode mode, const char *const *want,
                         int nwant, const char *self, bool to_main)
{
    uint64_t ips[128];
    char nm[128][128];
    unsigned stop;
    int n = proc_unwind(p, mode, &s->regs, s->stack, s->len, s->addr, ips, 128, &stop);
    assert_true(n > 0);
    names(p, ips, n, nm);
    bool ok = n >= nwant + 1;
    for (int i = 0; ok && i < nwant; i++)
        ok = !strcmp(nm[i], want[i]);
    ok = ok && !strcmp(nm[nwant], self);
    if (to_main)
        ok = ok && find_name(nm, n, "main") > nwant && stop == 0;
    if (!ok) {
        dump(nm, n, stop);
        fail_msg("mode %d: unexpected chain", mode);
    }
}

static struct proc *self_proc(void)
{
    struct proc *p;
    assert_int_equal(proc_open(&p, getpid(), cache), 0);
    return p;
}

static void test_dwarf_no_frame_pointers(void **state)
{
    struct snap *s = snap_new();
    chain_a(s, 0);
    struct proc *p = self_proc();
    static const char *const want[] = {"chain_c", "chain_b", "chain_a"};
    expect_chain(p, s, UNWIND_DWARF, want, 3, "test_dwarf_no_frame_pointers", true);
    expect_chain(p, s, UNWIND_AUTO, want, 3, "test_dwarf_no_frame_pointers", true);

    /* Frame pointers alone cannot find chain_b / chain_a (rbp is not a frame pointer there). */
    uint64_t ips[64];
    char nm[64][128];
    unsigned stop;
    int n = proc_unwind(p, UNWIND_FP, &s->regs, s->stack, s->len, s->addr, ips, 64, &stop);
    names(p, ips, n, nm);
    assert_true(n < 2 || strcmp(nm[1], "chain_b"));

    /* Statistics: the second identical unwind hits the row cache only. */
    struct proc_stats a, b;
    proc_get_stats(p, &a);
    n = proc_unwind(p, UNWIND_DWARF, &s->regs, s->stack, s->len, s->addr, ips, 64, &stop);
    proc_get_stats(p, &b);
    assert_int_equal(b.row_misses, a.row_misses);
    assert_int_equal(b.row_hits - a.row_hits, (uint64_t)n - 1 + (stop == 0));
    proc_close(p);
    snap_free(s);
}

static void test_frame_pointers(void **state)
{
    struct snap *s = snap_new();
    fp_a(s, 0);
    struct proc *p = self_proc();
    static const char *const want[] = {"fp_c", "fp_b", "fp_a"};
    expect_chain(p, s, UNWIND_FP, want, 3, "test_frame_pointers", false);
    expect_chain(p, s, UNWIND_DWARF, want, 3, "test_frame_pointers", true);
    proc_close(p);
    snap_free(s);
}

static struct snap *cmp_snap;
static int cmp_calls;

static NOFP int compare(const void *a, const void *b)
{
    if (cmp_calls++ == 0)
        CAPTURE(cmp_snap);
    return *(const int *)a - *(const int *)b;
}

static void test_through_libc(void **state)
{
    cmp_snap = snap_new();
    cmp_calls = 0;
    int v[64];
    for (int i = 0; i < 64; i++)
        v[i] = (i * 37) % 64;
    /* libc's own qsort (a sanitizer intercepts the plain call) */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(libc);
    void (*libc_qsort)(void *, size_t, size_t, int (*)(const void *, const void *)) =
        (void (*)(void *, size_t, size_t, int (*)(const void *, const void *)))dlsym(libc, "qsort");
    assert_non_null(libc_qsort);
    libc_qsort(v, 64, sizeof(int), compare);
    asm volatile("" ::: "memory");
    struct proc *p = self_proc();
    uint64_t ips[64];
    char nm[64][128];
    unsigned stop;
    int n = proc_unwind(p, UNWIND_DWARF, &cmp_snap->regs, cmp_snap->stack, cmp_snap->len, cmp_snap->addr, ips,
                        64, &stop);
    names(p, ips, n, nm);
    int q = find_name(nm, n, "qsort_r") >= 0 ? find_name(nm, n, "qsort_r") : find_name(nm, n, "qsort");
    int self = find_name(nm, n, "test_through_libc");
    if (strcmp(nm[0], "compare") || q < 1 || self != q + 1 || find_name(nm, n, "main") < 0 || stop) {
        dump(nm, n, stop);
        fail_msg("no clean chain through qsort");
    }
    proc_close(p);
    snap_free(cmp_snap);
}

static void test_stops(void **state)
{
    struct snap *s = snap_new();
    chain_a(s, 0);
    struct proc *p = self_proc();
    uint64_t ips[64];
    unsigned stop;
    /* a copy too short for the chain */
    int n = proc_unwind(p, UNWIND_DWARF, &s->regs, s->stack, 64, s->addr, ips, 64, &stop);
    assert_true(n >= 1 && n < 6);
    assert_true(stop & UNWIND_STOP_STACK);
    /* depth limit */
    n = proc_unwind(p, UNWIND_DWARF, &s->regs, s->stack, s->len, s->addr, ips, 2, &stop);
    assert_int_equal(n, 2);
    assert_true(stop & UNWIND_STOP_MAXDEPTH);
    /* an ip in no mapping: that ip is reported, nothing else */
    struct unwind_regs bad = s->regs;
    bad.ip = 16;
    n = proc_unwind(p, UNWIND_AUTO, &bad, s->stack, s->len, s->addr, ips, 64, &stop);
    assert_int_equal(n, 1);
    assert_int_equal(ips[0], 16);
    assert_true(stop & UNWIND_STOP_BAD);
    /* no stack copy at all */
    n = proc_unwind(p, UNWIND_DWARF, &s->regs, NULL, 0, s->addr, ips, 64, &stop);
    assert_int_equal(n, 1);
    assert_true(stop & UNWIND_STOP_STACK);
    proc_close(p);
    snap_free(s);
}

/* -- One remembered walk for every thread at the same frames ---------------------------------- */

#define THREAD_STACK (256 * 1024)

struct twin {
    void *stack; /* THREAD_STACK bytes, given to the thread: both stacks are laid out alike */
    struct snap *chain, *fp;
};

static void *twin_main(void *arg)
{
    struct twin *t = arg;
    stack_end = (uint64_t)(uintptr_t)t->stack + THREAD_STACK;
    chain_a(t->chain, 0);
    fp_a(t->fp, 0);
    return NULL;
}

static void twin_run(struct twin *t)
{
    pthread_attr_t at;
    pthread_t th;
    t->stack = aligned_alloc(65536, THREAD_STACK);
    t->chain = snap_new();
    t->fp = snap_new();
    assert_non_null(t->stack);
    assert_int_equal(pthread_attr_init(&at), 0);
    assert_int_equal(pthread_attr_setstack(&at, t->stack, THREAD_STACK), 0);
    assert_int_equal(pthread_create(&th, &at, twin_main, t), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    pthread_attr_destroy(&at);
}

static void twin_free(struct twin *t)
{
    snap_free(t->chain);
    snap_free(t->fp);
    free(t->stack);
}

struct walked {
    uint64_t ips[64];
    int n;
    unsigned stop;
    uint64_t memo_hits; /* of this walk: 0 or 1 */
};

static struct walked walk_of(struct proc *p, enum unwind_mode mode, const struct snap *s)
{
    struct walked w;
    struct proc_stats a, b;
    proc_get_stats(p, &a);
    w.n = proc_unwind(p, mode, &s->regs, s->stack, s->len, s->addr, w.ips, 64, &w.stop);
    proc_get_stats(p, &b);
    w.memo_hits = b.memo_hits - a.memo_hits;
    return w;
}

static void expect_same(const struct walked *a, const struct walked *b)
{
    assert_int_equal(a->n, b->n);
    assert_memory_equal(a->ips, b->ips, (size_t)a->n * sizeof(a->ips[0]));
    assert_int_equal(a->stop, b->stop);
}

/* Thread A's walk is remembered; thread B, at the same frames of a stack laid out alike but at
 * other addresses, gets it without walking: the saved frame pointers (values used as addresses)
 * compare relative to the stack pointer, return addresses as they are. A copy whose saved
 * frame pointer was moved, or that holds A's frame pointers at B's addresses, walks anew and
 * finds what an unwinder that remembers nothing finds. */
static void test_memo_threads(void **state)
{
    struct twin a, b;
    twin_run(&a);
    twin_run(&b);
    assert_true(a.chain->addr != b.chain->addr);
    struct proc *p = self_proc();
    static const char *const want[] = {"chain_c", "chain_b", "chain_a", "twin_main"};
    static const char *const want_fp[] = {"fp_c", "fp_b", "fp_a", "twin_main"};
    struct {
        enum unwind_mode mode;
        struct snap *sa, *sb;
        const char *const *want;
    } cases[] = {{UNWIND_AUTO, a.chain, b.chain, want}, {UNWIND_DWARF, a.fp, b.fp, want_fp}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct walked wa = walk_of(p, cases[i].mode, cases[i].sa);
        struct walked wb = walk_of(p, cases[i].mode, cases[i].sb);
        char nm[64][128];
        names(p, wb.ips, wb.n, nm);
        for (int k = 0; k < 4; k++)
            if (wb.n <= k || strcmp(nm[k], cases[i].want[k])) {
                dump(nm, wb.n, wb.stop);
                fail_msg("case %zu: thread B's chain", i);
            }
        assert_int_equal(wa.stop, 0);
        assert_int_equal(wb.memo_hits, 1);
        expect_same(&wa, &wb);
    }

    struct proc *fresh = self_proc(); /* remembers nothing */
    /* B's copy with fp_b's saved frame pointer (the word at its rbp) moved up a word */
    struct snap *moved = snap_new();
    uint64_t bp_b, w;
    memcpy(moved->stack, b.fp->stack, b.fp->len);
    moved->regs = b.fp->regs;
    moved->len = b.fp->len;
    moved->addr = b.fp->addr;
    memcpy(&bp_b, b.fp->stack + (b.fp->regs.bp - b.fp->addr), 8); /* fp_c's frame: saved rbp of fp_b */
    memcpy(&w, moved->stack + (bp_b - moved->addr), 8);
    w += 8;
    memcpy(moved->stack + (bp_b - moved->addr), &w, 8);
    struct walked wm = walk_of(p, UNWIND_DWARF, moved);
    assert_int_equal(wm.memo_hits, 0);
    struct walked wf = walk_of(fresh, UNWIND_DWARF, moved);
    expect_same(&wf, &wm);
    /* A's bytes at B's addresses: the frame pointers saved in them point into A's stack */
    assert_int_equal(a.fp->len, b.fp->len);
    memcpy(moved->stack, a.fp->stack, a.fp->len);
    struct walked wx = walk_of(p, UNWIND_DWARF, moved);
    assert_int_equal(wx.memo_hits, 0);
    struct walked wxf = walk_of(fresh, UNWIND_DWARF, moved);
    expect_same(&wxf, &wx);
    snap_free(moved);
    proc_close(fresh);
    proc_close(p);
    twin_free(&a);
    twin_free(&b);
}

/* -- JIT: a frame-pointer trampoline in anonymous memory, described only by a jitdump --------- */

typedef void (*tramp_fn)(struct snap *s, void (*target)(struct snap *));

static NOFP void jit_target(struct snap *s)
{
    CAPTURE(s);
}

static NOFP void call_tramp(tramp_fn t, struct snap *s)
{
    t(s, jit_target);
    asm volatile("" ::: "memory");
}

static void test_jit_region(void **state)
{
    /* push %rbp; mov %rsp,%rbp; call *%rsi; pop %rbp; ret */
    static const uint8_t code[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd6, 0x5d, 0xc3};
    uint8_t *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(mem != MAP_FAILED);
    memcpy(mem, code, sizeof(code));
    assert_int_equal(mprotect(mem, 4096, PROT_READ | PROT_EXEC), 0);
    char dir[] = "/tmp/pyebpf-jit.XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct jitdump *jd;
    assert_int_equal(jitdump_open(&jd, dir, PYJIT_ARCH_X86_64), 0);
    struct pyjit_region r = {.code = mem,
                             .size = sizeof(code),
                             .name = "py::jitted:/x.py",
                             .unwind = PYJIT_UNWIND_TRAMPOLINE,
                             .push_end = 1,
                             .setup_end = 4,
                             .pop_end = 7};
    assert_int_equal(jitdump_code_load(jd, &r), 0);

    struct snap *s = snap_new();
    call_tramp((tramp_fn)(void *)mem, s);
    struct proc *p = self_proc(); /* finds the dump through our own mapping of it */
    uint64_t ips[64];
    char nm[64][128];
    unsigned stop;
    int n = proc_unwind(p, UNWIND_DWARF, &s->regs, s->stack, s->len, s->addr, ips, 64, &stop);
    names(p, ips, n, nm);
    struct symres sr;
    assert_true(n >= 4);
    assert_int_equal(proc_symbolize(p, ips[1] - 1, &sr), 0);
    if (strcmp(nm[0], "jit_target") || strcmp(nm[1], "py::jitted:/x.py") || sr.kind != FRAME_JIT ||
        strcmp(nm[2], "call_tramp") || strcmp(nm[3], "test_jit_region") || stop) {
        dump(nm, n, stop);
        fail_msg("no clean chain through the JIT region");
    }
    proc_close(p);
    jitdump_close(jd);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    munmap(mem, 4096);
    snap_free(s);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The same trampoline known only from /tmp/perf-PID.map: names, no CFI. Auto mode crosses it with
 * its frame pointer; DWARF mode stops there. */
static void test_jit_perf_map_only(void **state)
{
    static const uint8_t code[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd6, 0x5d, 0xc3};
    uint8_t *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(mem != MAP_FAILED);
    memcpy(mem, code, sizeof(code));
    assert_int_equal(mprotect(mem, 4096, PROT_READ | PROT_EXEC), 0);
    char path[64];
    snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "%llx %zx py::mapped_only:/y.py\n", (unsigned long long)(uintptr_t)mem, sizeof(code));
    fclose(fp);

    struct snap *s = snap_new();
    call_tramp((tramp_fn)(void *)mem, s);
    struct proc *p = self_proc();
    uint64_t ips[64];
    char nm[64][128];
    unsigned stop;
    int n = proc_unwind(p, UNWIND_AUTO, &s->regs, s->stack, s->len, s->addr, ips, 64, &stop);
    names(p, ips, n, nm);
    if (n < 4 || strcmp(nm[0], "jit_target") || strcmp(nm[1], "py::mapped_only:/y.py") ||
        strcmp(nm[2], "call_tramp") || strcmp(nm[3], "test_jit_perf_map_only") || stop) {
        dump(nm, n, stop);
        fail_msg("auto mode did not cross the perf-map region");
    }
    n = proc_unwind(p, UNWIND_DWARF, &s->regs, s->stack, s->len, s->addr, ips, 64, &stop);
    assert_int_equal(n, 2);
    assert_true(stop & UNWIND_STOP_NO_CFI);
    proc_close(p);
    unlink(path);
    munmap(mem, 4096);
    snap_free(s);
}

/* jitsyms on its own: a perf map rewritten and a jitdump replaced; old names stay valid, the new
 * content wins, dropped files are reported. */
static void test_jitsyms_reload(void **state)
{
    char dir[] = "/tmp/pyebpf-jitsyms.XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/perf-1.map", dir);
    FILE *fp = fopen(path, "w");
    fprintf(fp, "1000 100 first\n2000 10 second\n");
    fclose(fp);
    struct jitsyms *j;
    assert_int_equal(jitsyms_new(&j), 0);
    assert_int_equal(jitsyms_load_perfmap(j, path), 1);
    assert_int_equal(jitsyms_count(j), 2);
    const char *first = jitsyms_find(j, 0x1080)->name;
    assert_string_equal(first, "first");
    assert_null(jitsyms_find(j, 0x1100));
    assert_null(jitsyms_find(j, 0xfff));
    /* rewritten: another size, so it reads as changed */
    usleep(10 * 1000);
    fp = fopen(path, "w");
    fprintf(fp, "1000 200 first_again\n3000 10 third\nnot a line\n");
    fclose(fp);
    assert_int_equal(jitsyms_load_perfmap(j, path), 1); /* re-read, the old copy dropped */
    assert_int_equal(jitsyms_count(j), 2);
    assert_string_equal(jitsyms_find(j, 0x1180)->name, "first_again");
    assert_null(jitsyms_find(j, 0x2000));
    assert_string_equal(first, "first"); /* still valid */
    /* unchanged: nothing re-read or dropped */
    assert_int_equal(jitsyms_load_perfmap(j, path), 0);
    jitsyms_free(j);
    unlink(path);
    rmdir(dir);
}

/* -- Through a signal handler: glibc's __restore_rt has CFI made of expressions ------------- */

static struct snap *sig_snap;

static NOFP void on_signal(int sig)
{
    CAPTURE(sig_snap);
}

static NOFP int sig_b(int d)
{
    raise(SIGUSR1);
    asm volatile("" : "+r"(d));
    return d + 1;
}

static NOFP int sig_a(int d)
{
    int r = sig_b(d + 1);
    asm volatile("" : "+r"(r));
    return r * 2;
}

static void test_signal_frame(void **state)
{
    sig_snap = snap_new();
    struct sigaction sa = {.sa_handler = on_signal}, old;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    sig_a(0);
    sigaction(SIGUSR1, &old, NULL);
    struct proc *p = self_proc();
    uint64_t ips[64];
    char nm[64][128];
    unsigned stop;
    int n = proc_unwind(p, UNWIND_DWARF, &sig_snap->regs, sig_snap->stack, sig_snap->len, sig_snap->addr, ips,
                        64, &stop);
    names(p, ips, n, nm);
    int rt = find_name(nm, n, "__restore_rt"), b = find_name(nm, n, "sig_b");
    if (strcmp(nm[0], "on_signal") || rt != 1 || b <= rt || find_name(nm, n, "sig_a") != b + 1 ||
        find_name(nm, n, "test_signal_frame") != b + 2 || stop) {
        dump(nm, n, stop);
        fail_msg("no clean chain through the signal frame");
    }
    proc_close(p);
    snap_free(sig_snap);
}

/* -- A live python3.11 (stripped, no frame pointers), stopped with ptrace ------------------- */

#define PY311 "/usr/bin/python3.11"

static int stack_copy_of(pid_t pid, uint64_t sp, uint8_t *buf, size_t *len)
{
    struct maps m;
    int err = maps_read(&m, pid);
    if (err)
        return err;
    const struct map_entry *e = maps_find(&m, sp);
    if (!e) {
        maps_free(&m);
        return -ENOENT;
    }
    size_t n = e->end - sp;
    if (n > STACK_MAX)
        n = STACK_MAX;
    maps_free(&m);
    struct iovec local = {buf, n}, remote = {(void *)(uintptr_t)sp, n};
    ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got < 0)
        return -errno;
    *len = (size_t)got;
    return 0;
}

enum expect {
    EXPECT_FULL,     /* eval loop ... Py_BytesMain ... __libc_start_main, clean end */
    EXPECT_FULL_JIT, /* the same with a named py:: frame on the way */
};

/* Starts exe with argv, samples it `rounds` times with ptrace and unwinds each copy in `mode`;
 * most samples must meet `expect`. */
static void live_python(const char *exe, char *const argv[], enum unwind_mode mode, enum expect expect)
{
    if (access(exe, X_OK))
        skip();
    pid_t pid = fork();
    if (pid == 0) {
        execv(exe, argv);
        _exit(127);
    }
    assert_true(pid > 0);
    usleep(400 * 1000);
    struct proc *p;
    uint64_t t0 = mono_ns();
    assert_int_equal(proc_open(&p, pid, cache), 0);
    uint64_t t_open = mono_ns() - t0, t_first = 0;
    int good = 0, rounds = 5;
    for (int round = 0; round < rounds; round++) {
        assert_int_equal(ptrace(PTRACE_SEIZE, pid, 0, 0), 0);
        assert_int_equal(ptrace(PTRACE_INTERRUPT, pid, 0, 0), 0);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        struct user_regs_struct ur;
        assert_int_equal(ptrace(PTRACE_GETREGS, pid, 0, &ur), 0);
        struct snap *s = snap_new();
        s->regs = (struct unwind_regs){.ip = ur.rip,
                                       .sp = ur.rsp,
                                       .bp = ur.rbp,
                                       .bx = ur.rbx,
                                       .r12 = ur.r12,
                                       .r13 = ur.r13,
                                       .r14 = ur.r14,
                                       .r15 = ur.r15};
        s->addr = ur.rsp;
        assert_int_equal(stack_copy_of(pid, ur.rsp, s->stack, &s->len), 0);
        assert_int_equal(ptrace(PTRACE_DETACH, pid, 0, 0), 0);
        uint64_t ips[256];
        char nm[256][128];
        unsigned stop;
        t0 = mono_ns();
        int n = proc_unwind(p, mode, &s->regs, s->stack, s->len, s->addr, ips, 256, &stop);
        names(p, ips, n, nm);
        if (round == 0)
            t_first = mono_ns() - t0;
        int evals = 0, jit = 0;
        for (int i = 0; i < n; i++) {
            struct symres r;
            evals += !strcmp(nm[i], "_PyEval_EvalFrameDefault");
            jit += i && proc_symbolize_ret(p, ips[i], &r) == 0 && r.kind == FRAME_JIT && r.name &&
                   !strncmp(r.name, "py::", 4);
        }
        bool ok = evals >= 1;
        ok = ok && find_name(nm, n, "Py_BytesMain") > 0 && find_name(nm, n, "__libc_start_main") > 0 &&
             stop == 0 && (expect == EXPECT_FULL || jit > 0);
        if (!ok && round == rounds - 1)
            dump(nm, n, stop);
        if (round == 0)
            print_message("# %s: %d frames, %d eval-loop, %d JIT, stop %#x; proc_open %.2f ms, "
                          "first unwind + symbolise (loads the files) %.2f ms\n",
                          exe, n, evals, jit, stop, t_open / 1e6, t_first / 1e6);
        good += ok;
        snap_free(s);
        usleep(20 * 1000);
    }
    proc_close(p);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    char path[64];
    snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
    unlink(path);
    snprintf(path, sizeof(path), "/tmp/jit-%d.dump", (int)pid);
    unlink(path);
    /* A sample may land in a spot no unwinder gets through (e.g. a syscall's entry); most must
     * be clean. */
    assert_true(good >= rounds - 1);
}

#define WORKLOAD                                                                                             \
    "def f(n):\n"                                                                                            \
    "    return f(n - 1) if n else sum(i * i for i in range(10 ** 10))\n"                                    \
    "f(10)\n"

/* Debian's stripped, non-PIE python3.11 without frame pointers: DWARF only. */
static void test_live_python(void **state)
{
    char *argv[] = {PY311, "-c", WORKLOAD, NULL};
    live_python(PY311, argv, UNWIND_DWARF, EXPECT_FULL);
}

/* 3.12 -X perf: trampolines (`sub $8,%rsp; call *%rcx`) named in /tmp/perf-PID.map, without
 * CFI or a frame pointer: recognised by their bytes (proc.c), crossed with their known CFI. */
static void test_live_python312_perf_map(void **state)
{
    char exe[] = "/root/.pyenv/versions/3.12.1/bin/python3.12";
    char *argv[] = {exe, "-X", "perf", "-c", WORKLOAD, NULL};
    live_python(exe, argv, UNWIND_DWARF, EXPECT_FULL_JIT);
}

/* 3.13 -X perf_jit: trampolines (`sub $8,%rsp; call *%rcx`) described only by the jitdump's
 * unwinding info. CPython buffers the dump, so the workload first runs its hot code briefly,
 * then makes enough other trampolines to push those records into the file, then runs hot. */
static void test_live_python313_jitdump(void **state)
{
    char exe[] = "/root/.pyenv/versions/3.13.0/bin/python3.13";
    char *argv[] = {exe,
                    "-X",
                    "perf_jit",
                    "-c",
                    "def f(n):\n"
                    "    return f(n - 1) if n else sum(i * i for i in range(k))\n"
                    "k = 10\n"
                    "f(10)\n"
                    "for j in range(400):\n"
                    "    exec(f'def g{j}(): pass\\ng{j}()')\n"
                    "k = 10 ** 10\n"
                    "f(10)\n",
                    NULL};
    live_python(exe, argv, UNWIND_DWARF, EXPECT_FULL_JIT);
}

/* 3.13 -X perf_jit where the running code's records are still in CPython's buffer: the
 * trampolines are unnamed, and recognised by their bytes, so DWARF still reaches main. */
static void test_live_python313_unflushed(void **state)
{
    char exe[] = "/root/.pyenv/versions/3.13.0/bin/python3.13";
    char *argv[] = {exe, "-X", "perf_jit", "-c", WORKLOAD, NULL};
    live_python(exe, argv, UNWIND_DWARF, EXPECT_FULL);
}

/* -- Cost: own unwinder vs libdw on the same copy -------------------------------------------- */

#define BENCH_ITERS 20000

static __attribute__((noinline)) int bench_own_loop(struct proc *p, struct snap *s, int iters, size_t max)
{
    uint64_t ips[64];
    unsigned stop;
    int n = 0;
    for (int i = 0; i < iters; i++)
        n = proc_unwind(p, UNWIND_DWARF, &s->regs, s->stack, s->len, s->addr, ips, max, &stop);
    return n;
}

struct dw_arg {
    struct snap *s;
    pid_t tid;
    int frames;
    size_t max;
};

static pid_t dw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    if (*thread_argp)
        return 0;
    *thread_argp = arg;
    return ((struct dw_arg *)arg)->tid;
}

static bool dw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    const struct snap *s = ((struct dw_arg *)arg)->s;
    if (addr < s->addr || addr + 8 > s->addr + s->len)
        return false;
    memcpy(result, s->stack + (addr - s->addr), 8);
    return true;
}

static bool dw_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
    const struct unwind_regs *r = &((struct dw_arg *)arg)->s->regs;
    Dwarf_Word bx = r->bx, bp_sp[2] = {r->bp, r->sp}, hi[4] = {r->r12, r->r13, r->r14, r->r15};
    return dwfl_thread_state_registers(thread, 3, 1, &bx) &&
           dwfl_thread_state_registers(thread, 6, 2, bp_sp) &&
           dwfl_thread_state_registers(thread, 12, 4, hi) &&
           (dwfl_thread_state_register_pc(thread, r->ip), true);
}

static int dw_frame(Dwfl_Frame *state, void *arg)
{
    struct dw_arg *a = arg;
    Dwarf_Addr pc;
    if (!dwfl_frame_pc(state, &pc, NULL))
        return DWARF_CB_ABORT;
    return (size_t)++a->frames >= a->max ? DWARF_CB_ABORT : DWARF_CB_OK;
}

static __attribute__((noinline)) int bench_libdw_loop(Dwfl *dwfl, struct dw_arg *a, int iters)
{
    for (int i = 0; i < iters; i++) {
        a->frames = 0;
        dwfl_getthread_frames(dwfl, a->tid, dw_frame, a);
    }
    return a->frames;
}

static void test_bench(void **state)
{
    struct snap *s = snap_new();
    deep(s, 18);
    struct proc *p = self_proc();
    const size_t max = 20;
    int n = bench_own_loop(p, s, 1, max); /* warm-up: files loaded, rows cached */
    assert_int_equal(n, 20);
    int iters = getenv("BENCH_ITERS") ? atoi(getenv("BENCH_ITERS")) : BENCH_ITERS;
    uint64_t t0 = mono_ns();
    bench_own_loop(p, s, iters, max);
    double own = (double)(mono_ns() - t0) / iters / 1000.0;

    static const Dwfl_Callbacks cb = {.find_elf = dwfl_linux_proc_find_elf,
                                      .find_debuginfo = dwfl_standard_find_debuginfo};
    static const Dwfl_Thread_Callbacks tcb = {.next_thread = dw_next_thread,
                                              .memory_read = dw_memory_read,
                                              .set_initial_registers = dw_set_initial_registers};
    Dwfl *dwfl = dwfl_begin(&cb);
    assert_non_null(dwfl);
    assert_int_equal(dwfl_linux_proc_report(dwfl, getpid()), 0);
    assert_int_equal(dwfl_report_end(dwfl, NULL, NULL), 0);
    struct dw_arg a = {.s = s, .tid = getpid(), .max = max};
    assert_true(dwfl_attach_state(dwfl, NULL, getpid(), &tcb, &a));
    int dn = bench_libdw_loop(dwfl, &a, 1);
    t0 = mono_ns();
    bench_libdw_loop(dwfl, &a, iters);
    double dw = (double)(mono_ns() - t0) / iters / 1000.0;
    print_message("# unwind of %d frames from a stack copy: own %.3f us, libdw %.3f us (%d "
                  "frames), ratio %.1fx\n",
                  n, own, dw, dn, dw / own);
    assert_int_equal(dn, n);
    dwfl_end(dwfl);
    proc_close(p);
    snap_free(s);
}

int main(void)
{
    /* The mapping holding our stack (not always named [stack], e.g. under valgrind). */
    struct maps m;
    int here;
    if (maps_read(&m, getpid()) == 0) {
        const struct map_entry *e = maps_find(&m, (uint64_t)(uintptr_t)&here);
        stack_end = e ? e->end : 0;
        maps_free(&m);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dwarf_no_frame_pointers),
        cmocka_unit_test(test_frame_pointers),
        cmocka_unit_test(test_through_libc),
        cmocka_unit_test(test_stops),
        cmocka_unit_test(test_memo_threads),
        cmocka_unit_test(test_jit_region),
        cmocka_unit_test(test_jit_perf_map_only),
        cmocka_unit_test(test_jitsyms_reload),
        cmocka_unit_test(test_signal_frame),
        cmocka_unit_test(test_live_python),
        cmocka_unit_test(test_live_python312_perf_map),
        cmocka_unit_test(test_live_python313_jitdump),
        cmocka_unit_test(test_live_python313_unflushed),
        cmocka_unit_test(test_bench),
    };
    if (getenv("UNWIND_TEST_FILTER"))
        cmocka_set_test_filter(getenv("UNWIND_TEST_FILTER"));
    return cmocka_run_group_tests(tests, elfcache_setup, elfcache_teardown);
}
