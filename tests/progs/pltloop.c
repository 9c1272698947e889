/*
 * pltloop — calls a tiny libc function through its PLT stub in a tight loop, so that some of
 * the samples (a tenth on one CPU, under 1 % on another) land in the stub itself (labs@plt)
 * rather than in labs.
 *
 * Usage: pltloop [SECONDS]   (default 2 s)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* labs under another C name: the compiler treats `labs` as a builtin and would inline it;
 * this declaration binds to the same libc symbol, so each call goes through labs@plt. */
extern long plt_labs(long x) __asm__("labs");

static volatile long sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static __attribute__((noinline)) long spin(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += plt_labs(i - n / 2);
    return s;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0, end = now() + seconds;
    while (now() < end)
        sink = spin(1000000);
    printf("%ld\n", (long)sink);
    return 0;
}
