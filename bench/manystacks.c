/*
 * manystacks — a CPU-bound target whose samples land on many distinct stacks: each thread walks
 * pseudo-random call paths through 16 functions, 4 to 14 levels deep (16^4 .. 16^14 possible
 * paths), spinning a little at each level. For the collector's memory benchmark.
 *
 * Usage: manystacks [SECONDS [THREADS]]   (default 10 s, 2 threads)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;
static double run_seconds = 10;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void (*const fns[16])(uint64_t *, int);

/* Spins, then calls a random function one level down while depth remains. */
#define FN(i)                                                                                                \
    static __attribute__((noinline)) void fn##i(uint64_t *s, int depth)                                      \
    {                                                                                                        \
        for (int k = 0; k < 2000; k++)                                                                       \
            sink += next(s);                                                                                 \
        if (depth > 0)                                                                                       \
            fns[next(s) & 15](s, depth - 1);                                                                 \
        sink++;                                                                                              \
    }
// clang-format off
FN(0) FN(1) FN(2) FN(3) FN(4) FN(5) FN(6) FN(7)
FN(8) FN(9) FN(10) FN(11) FN(12) FN(13) FN(14) FN(15)

static void (*const fns[16])(uint64_t *, int) = {fn0, fn1, fn2,  fn3,  fn4,  fn5,  fn6,  fn7,
                                                 fn8, fn9, fn10, fn11, fn12, fn13, fn14, fn15};
// clang-format on

static void *worker(void *arg)
{
    uint64_t s = 0x9e3779b97f4a7c15ull ^ (uintptr_t)arg;
    double end = now() + run_seconds;

    while (now() < end)
        fns[next(&s) & 15](&s, 3 + (int)(next(&s) % 11));
    return NULL;
}

int main(int argc, char **argv)
{
    int nthreads = argc > 2 ? atoi(argv[2]) : 2;
    pthread_t t[64];

    if (argc > 1)
        run_seconds = atof(argv[1]);
    if (nthreads < 1 || nthreads > 64)
        nthreads = 2;
    for (int i = 1; i < nthreads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    worker(NULL);
    for (int i = 1; i < nthreads; i++)
        pthread_join(t[i], NULL);
    printf("%llu\n", (unsigned long long)sink);
    return 0;
}
