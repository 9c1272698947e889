/*
 * replay — collector cost per sample with no kernel in the loop.
 *
 * The program captures its own stack once per (depth, variant): at the bottom of a chain of
 * DEPTH native frames it takes the registers, the frame-pointer chain and a copy of the stack,
 * exactly the fields bpf/sample.bpf.c fills in, into a struct sample_event. It then feeds these
 * records to user/collect (unwind + symbolise + intern + aggregate, the same objects
 * pyebpf-sample links) round-robin, many times, and prints one line per case:
 *
 *   collect depth=D unwind=MODE frames=F samples=N us_per_sample=U first_us=S ratio_vs_d10=R
 *
 *   frames       native frames per stack the collector produced (the capture's own frames
 *                below main included: _start, __libc_start_*, main, the bench driver)
 *   first_us     the first pass over the records (opens this executable and libc: ELF symbols,
 *                CFI tables; paid once per target process)
 *   us_per_sample  CPU time (CLOCK_PROCESS_CPUTIME_ID) of the steady loop / samples
 *   frame_cache_hit_pct  frames answered by the collector's frame cache (address → frame)
 *                without symbolising (the first pass fills it; the steady loop only hits)
 *
 * Under valgrind --tool=callgrind --collect-atstart=no --toggle-collect=replay_loop the
 * instruction count of the steady loop divided by samples is the cost per sample in
 * instructions (bench/run.sh does that).
 *
 * Usage: replay [-n SAMPLES] [-d D1,D2,...] [-u auto|fp|dwarf|all] [-v VARIANTS]
 * x86-64 only (the capture reads registers with inline assembly).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect/collect.h"
#include "profile/profile.h"
#include "sample.h"

#define MAX_VARIANTS 16
#define COPY_MAX     SAMPLE_STACK_COPY_MAX

struct record {
    struct sample_event *ev;
    size_t len;
};

static uint64_t stack_top; /* end of [stack] */
static struct record *capture_out;
static int capture_copy; /* 1: copy the stack (dwarf/auto), 0: fp chain only */

static double cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The end of the mapping holding this thread's stack (not "[stack]": under valgrind that is
 * valgrind's own). */
static int find_stack_top(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    uint64_t here = (uintptr_t)__builtin_frame_address(0);
    char line[512];
    unsigned long lo, hi;

    if (!f)
        return -errno;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= here && here < hi)
            stack_top = hi;
    fclose(f);
    return stack_top ? 0 : -ENOENT;
}

/* Raw stack memory is read across frames and their sanitizer redzones, as the kernel would:
 * word by word, outside AddressSanitizer's view. */
static __attribute__((no_sanitize_address, noinline)) void copy_words(uint64_t *dst, uint64_t src, size_t len)
{
    const volatile uint64_t *s = (const volatile uint64_t *)(uintptr_t)src;

    for (size_t i = 0; i < len / 8; i++)
        dst[i] = s[i];
}

/* Fills capture_out with the state of this thread at this instant, as the BPF program would. */
static __attribute__((no_sanitize_address, noinline)) int capture(void)
{
    uint64_t ip, sp, bp, bx, r12, r13, r14, r15;
    struct sample_event *ev;
    size_t copy = 0;

#if defined(__x86_64__)
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2\n\tmov %%rbx, %3\n\t"
                     "mov %%r12, %4\n\tmov %%r13, %5\n\tmov %%r14, %6\n\tmov %%r15, %7"
                     : "=r"(ip), "=m"(sp), "=m"(bp), "=m"(bx), "=m"(r12), "=m"(r13), "=m"(r14), "=m"(r15));
#else
#error "replay captures x86-64 registers only"
#endif
    if (capture_copy) {
        copy = stack_top - sp;
        if (copy > COPY_MAX)
            copy = COPY_MAX;
        copy &= ~(size_t)7;
    }
    ev = calloc(1, sizeof(*ev) + copy + SAMPLE_STACK_BYTES);
    if (!ev)
        return -ENOMEM;
    ev->pid = (uint32_t)getpid();
    ev->tid = (uint32_t)gettid();
    ev->regs.ip = ip;
    ev->regs.sp = sp;
    ev->regs.bp = bp;
    ev->regs.bx = bx;
    ev->regs.r12 = r12;
    ev->regs.r13 = r13;
    ev->regs.r14 = r14;
    ev->regs.r15 = r15;
    ev->stack_addr = sp;
    ev->stack_len = (uint32_t)copy;
    if (copy)
        copy_words((uint64_t *)ev->stack, sp, copy);
    if (copy == COPY_MAX && stack_top - sp > COPY_MAX)
        ev->flags |= SAMPLE_F_COPY_SHORT;
    else if (copy)
        ev->flags |= SAMPLE_F_COPY_BOUNDED;
    strncpy(ev->comm, "replay", sizeof(ev->comm) - 1);

    /* The chain bpf_get_stack(BPF_F_USER_STACK) walks: ip, then return addresses. */
    __u64 *ustack = sample_ustack(ev);
    size_t n = 0;
    ustack[n++] = ip;
    for (uint64_t fp = bp; n < SAMPLE_MAX_STACK_DEPTH && fp >= sp && fp + 16 <= stack_top && !(fp & 7);) {
        const uint64_t *w = (const uint64_t *)(uintptr_t)fp;

        if (!w[1])
            break;
        ustack[n++] = w[1];
        if (w[0] <= fp)
            break;
        fp = w[0];
    }
    ev->ustack_len = (uint32_t)(n * 8);
    capture_out->ev = ev;
    capture_out->len = sample_event_len(ev);
    return 0;
}

/* Eight distinct functions call each other in turn, so a stack's frames name different symbols
 * and sit at different addresses, as in a real program. The work after each call keeps the
 * compiler from turning calls into jumps. */
static int (*const chain[8])(int, int);

#define LINK(i)                                                                                              \
    static __attribute__((noinline)) int link##i(int depth, int k)                                           \
    {                                                                                                        \
        volatile int pad[(i) + 1];                                                                           \
        int r;                                                                                               \
        pad[0] = depth;                                                                                      \
        r = depth <= 1 ? capture() : chain[(k + 1) & 7](depth - 1, k + 1);                                   \
        return r + pad[0] - depth;                                                                           \
    }
LINK(0)
LINK(1)
LINK(2)
LINK(3)
LINK(4)
LINK(5)
LINK(6)
LINK(7)
static int (*const chain[8])(int, int) = {link0, link1, link2, link3, link4, link5, link6, link7};

/* The first pass (opens ELF files, fills caches): kept out of the steady loop's count. */
static __attribute__((noinline)) int warm_up(struct collector *c, const struct record *recs, int nrec)
{
    for (int i = 0; i < nrec; i++) {
        int err = collect_sample(c, recs[i].ev, recs[i].len);

        if (err < 0)
            return err;
    }
    return 0;
}

/* The steady loop: its own symbol so callgrind can count only it (--toggle-collect). */
static __attribute__((noinline)) int replay_loop(struct collector *c, const struct record *recs, int nrec,
                                                 long samples)
{
    for (long i = 0; i < samples; i++) {
        const struct record *r = &recs[i % nrec];
        int err = collect_sample(c, r->ev, r->len);

        if (err < 0)
            return err;
    }
    return 0;
}

static int run_case(int depth, enum unwind_mode mode, const char *mode_name, int variants, long samples,
                    double *us_d10)
{
    struct record recs[MAX_VARIANTS] = {0};
    struct collect_opts o = {.unwind = mode};
    struct collector *c = NULL;
    struct collect_stats st;
    struct profile prof;
    double t0, t1, t2;
    int err, base;

    /* link* frames make up the depth asked for, on top of the fixed ones. */
    base = 7; /* _start, __libc_start_main, __libc_start_call_main, main, replay_main, run_case, capture */
    capture_copy = mode != UNWIND_FP;
    for (int v = 0; v < variants; v++) {
        capture_out = &recs[v];
        err = chain[v & 7](depth > base ? depth - base : 1, v);
        if (err < 0)
            return err;
    }
    err = profile_init(&prof);
    if (err)
        return err;
    err = collect_open(&c, &o, &prof);
    if (err)
        goto out;
    t0 = cpu_now();
    err = warm_up(c, recs, variants);
    t1 = cpu_now();
    if (!err)
        err = replay_loop(c, recs, variants, samples);
    t2 = cpu_now();
    if (err)
        goto out;
    collect_get_stats(c, &st);
    double us = (t2 - t1) * 1e6 / samples;
    uint64_t lookups = st.frame_cache_hits + st.frame_cache_misses;
    if (depth == 10 && mode == UNWIND_AUTO)
        *us_d10 = us;
    printf("collect depth=%d unwind=%s frames=%.1f samples=%ld us_per_sample=%.3f first_us=%.0f "
           "unwind_errors=%llu distinct_stacks=%u frame_cache_hit_pct=%.1f ratio_vs_d10=%.2f\n",
           depth, mode_name, (double)st.frames / st.samples, samples, us, (t1 - t0) * 1e6 / variants,
           (unsigned long long)st.unwind_errors, prof.nnodes,
           lookups ? 100.0 * st.frame_cache_hits / lookups : 0.0, *us_d10 > 0 ? us / *us_d10 : 0.0);
    fflush(stdout);
out:
    collect_close(c);
    profile_free(&prof);
    for (int v = 0; v < variants; v++)
        free(recs[v].ev);
    return err;
}

static __attribute__((noinline)) int replay_main(int argc, char **argv)
{
    const char *depths = "10,20,50,200", *modes = "auto,fp";
    long samples = 200000;
    int variants = 8, opt, err;
    double us_d10 = 0;

    while ((opt = getopt(argc, argv, "n:d:u:v:")) != -1) {
        switch (opt) {
        case 'n':
            samples = atol(optarg);
            break;
        case 'd':
            depths = optarg;
            break;
        case 'u':
            modes = optarg;
            break;
        case 'v':
            variants = atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: replay [-n SAMPLES] [-d D1,D2,...] [-u auto,fp,dwarf] [-v VARIANTS]\n");
            return 2;
        }
    }
    if (samples < 1 || variants < 1 || variants > MAX_VARIANTS) {
        fprintf(stderr, "replay: -n must be >= 1 and -v 1..%d\n", MAX_VARIANTS);
        return 2;
    }
    err = find_stack_top();
    if (err) {
        fprintf(stderr, "replay: no stack mapping in /proc/self/maps: %s\n", strerror(-err));
        return 1;
    }
    for (const char *d = depths; *d;) {
        int depth = atoi(d);
        char buf[64];

        snprintf(buf, sizeof(buf), "%s", modes);
        for (char *save = NULL, *m = strtok_r(buf, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
            enum unwind_mode mode = !strcmp(m, "fp")      ? UNWIND_FP
                                    : !strcmp(m, "dwarf") ? UNWIND_DWARF
                                                          : UNWIND_AUTO;

            err = run_case(depth, mode, m, variants, samples, &us_d10);
            if (err) {
                fprintf(stderr, "replay: depth %d %s: %s\n", depth, m, strerror(-err));
                return 1;
            }
        }
        d = strchr(d, ',');
        if (!d)
            break;
        d++;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int r = replay_main(argc, argv);

    return r;
}
