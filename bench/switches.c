/*
 * switches — a target that leaves the CPU at a set rate (the off-CPU benchmark, docs/benchmarks.md
 * case 8): two threads play ping-pong over a pair of pipes, so each round puts each thread to
 * sleep once (two context switches out of target threads per round).
 *
 *   switches RATE SECONDS   RATE switches a second (0: as fast as they go), for SECONDS
 *
 * Paced runs wait for an absolute deadline every 100 rounds. Prints "rounds N switches N
 * seconds S ns_per_round R" at the end: with RATE 0, the round time is what an observer adds to.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *echo(void *arg)
{
    char c;

    (void)arg;
    while (read(ping[0], &c, 1) == 1 && c)
        if (write(pong[1], &c, 1) != 1)
            break;
    return NULL;
}

int main(int argc, char **argv)
{
    double rate = argc > 1 ? atof(argv[1]) : 0, secs = argc > 2 ? atof(argv[2]) : 2;
    uint64_t t0, end, rounds = 0;
    pthread_t t;
    char c = 1;

    if (pipe(ping) || pipe(pong) || pthread_create(&t, NULL, echo, NULL))
        return 1;
    t0 = now_ns();
    end = t0 + (uint64_t)(secs * 1e9);
    for (uint64_t now = t0; now < end; rounds++) {
        if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
            return 1;
        if (rounds % 100 == 99) {
            now = now_ns();
            if (rate > 0) {
                /* two switches a round: round r is due at t0 + r * 2 / rate */
                uint64_t due = t0 + (uint64_t)((rounds + 1) * 2e9 / rate);
                struct timespec ts = {.tv_sec = due / 1000000000ull, .tv_nsec = due % 1000000000ull};

                if (due > now)
                    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
            }
        }
    }
    double took = (now_ns() - t0) / 1e9;
    c = 0;
    if (write(ping[1], &c, 1) == 1)
        pthread_join(t, NULL);
    printf("rounds %llu switches %llu seconds %.3f ns_per_round %.0f\n", (unsigned long long)rounds,
           (unsigned long long)rounds * 2, took, took * 1e9 / (double)rounds);
    return 0;
}
