/*
 * leaderexit — a process whose main (leader) thread has exited while a worker runs on:
 *
 *   main: starts the worker, prints "READY <pid>", pthread_exit()  → the leader is a zombie,
 *         /proc/PID/maps and /proc/PID/mem are empty; /proc/PID/task/TID/... are not
 *   worker: worker_main → leader_gone_spin (a named, CPU-bound loop) for SECONDS
 *
 * Usage: leaderexit [SECONDS]   (default 10)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;
static double run_seconds = 10.0;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Not a leaf, so that a frame-pointer walk from here sees its caller. */
static __attribute__((noinline)) uint64_t publish(uint64_t x)
{
    sink = x;
    return x + 1;
}

__attribute__((noinline)) uint64_t leader_gone_spin(double end)
{
    uint64_t x = 88172645463325252ull;

    while (now() < end) {
        for (int i = 0; i < 100000; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        x = publish(x);
    }
    return x;
}

static void *worker_main(void *arg)
{
    (void)arg;
    sink = leader_gone_spin(now() + run_seconds);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t;

    if (argc > 1)
        run_seconds = atof(argv[1]);
    if (pthread_create(&t, NULL, worker_main, NULL))
        return 1;
    printf("READY %d\n", (int)getpid());
    fflush(stdout);
    pthread_exit(NULL); /* the worker keeps the process alive */
}
