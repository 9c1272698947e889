/*
 * callgraph — a CPU-bound workload with a known call graph, for checking sampled stacks:
 *
 *   main → a → b → c    2/3 of the time (c does 2k units of work per round)
 *   main → a → d        1/3 of the time (d does k units)
 *
 * k is drawn anew each round (1..8): with a fixed k a round lasts ~1 ms, as long as a sampling
 * period at 1 kHz, and the two lock in phase (runs at 999 Hz found 58.8-70.3 % in c for 66.6 %).
 *
 * Usage: callgraph [SECONDS [THREADS]]   (default 3 s, 1 thread; each thread runs the graph)
 * At exit it prints the CPU time spent in c's and d's work ("callgraph: cpu_ns c=N d=N" on stderr):
 * the split that the same loop gives on an idle machine is 2:1, and what a sampler must find is
 * the split this run had.
 * Built twice by the Makefile: with frame pointers (callgraph) and without (callgraph-nofp).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define UNIT 200000 /* iterations of the work loop in one unit (~0.2-0.5 ms) */

static volatile uint64_t sink;
static uint64_t cpu_ns_c, cpu_ns_d; /* CPU time in c's and d's work, all threads */

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static double run_seconds = 3.0;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Keeps c and d from being leaf functions: the compiler gives leaves no frame even with
 * -fno-omit-frame-pointer, and a frame-pointer walk from a frameless leaf skips its caller. */
static __attribute__((noinline)) uint64_t publish(uint64_t x)
{
    sink = x;
    return x + 1;
}

/* The same loop in c and d, so that time follows the unit count. */
#define WORK(x, units)                                                                                       \
    for (long i = 0; i < (long)(units)*UNIT; i++) {                                                          \
        x ^= x << 13;                                                                                        \
        x ^= x >> 7;                                                                                         \
        x ^= x << 17;                                                                                        \
    }

__attribute__((noinline)) uint64_t c(uint64_t x, unsigned k)
{
    uint64_t t0 = thread_cpu_ns();
    WORK(x, 2 * k);
    __atomic_fetch_add(&cpu_ns_c, thread_cpu_ns() - t0, __ATOMIC_RELAXED);
    return publish(x);
}

__attribute__((noinline)) uint64_t d(uint64_t x, unsigned k)
{
    uint64_t t0 = thread_cpu_ns();
    WORK(x, k);
    __atomic_fetch_add(&cpu_ns_d, thread_cpu_ns() - t0, __ATOMIC_RELAXED);
    return publish(x);
}

__attribute__((noinline)) uint64_t b(uint64_t x, unsigned k)
{
    x = c(x, k);
    sink = x;
    return x + 1;
}

__attribute__((noinline)) uint64_t a(uint64_t x)
{
    unsigned k = 1 + (unsigned)(x >> 61); /* x: the work's xorshift state, as good as random */

    x = b(x, k);
    x = d(x, k);
    sink = x;
    return x + 1;
}

/* Extra threads (THREADS > 1) run worker → a → ...; the main thread calls a from main. */
static void *worker(void *arg)
{
    double end = now() + run_seconds;
    uint64_t x = 88172645463325252ull + (uintptr_t)arg;

    while (now() < end)
        x = a(x);
    sink = x;
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    uint64_t x = 88172645463325252ull;
    pthread_t tids[64];
    double end;

    if (argc > 1)
        run_seconds = atof(argv[1]);
    if (threads < 1 || threads > 64) {
        fprintf(stderr, "callgraph: THREADS must be 1..64\n");
        return 2;
    }
    for (int i = 1; i < threads; i++)
        pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)i);
    end = now() + run_seconds;
    while (now() < end)
        x = a(x);
    sink = x;
    for (int i = 1; i < threads; i++)
        pthread_join(tids[i], NULL);
    fprintf(stderr, "callgraph: cpu_ns c=%llu d=%llu\n", (unsigned long long)cpu_ns_c,
            (unsigned long long)cpu_ns_d);
    return 0;
}
