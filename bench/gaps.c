/*
 * gaps — what each interrupt takes from a CPU-bound thread, seen from the thread itself.
 *
 *   gaps [SECONDS]    (default 3)
 *
 * The thread reads CLOCK_MONOTONIC (vDSO, ~20-40 ns apart) in a tight loop for SECONDS of its
 * own CPU time and counts every step longer than GAP_MIN_NS: an interrupt (scheduler tick,
 * perf sample) or a preemption. Steps of GAP_MIN_NS up to GAP_MAX_NS are interrupts; longer
 * ones (another task ran) are left out. Prints one line of key=value fields:
 *
 *   cpu_s    CPU time the loop ran
 *   gaps     interrupt-sized steps; gaps_per_cpu_s the same per second of CPU
 *   gap_median_ns, gap_mean_ns   their size
 *   gap_total_pct  their sum, in % of cpu_s; gap_ns_per_cpu_s the same in ns per second of CPU
 *
 * Under a sampler at F Hz, gaps_per_cpu_s grows by about F and the median step is the time
 * one sample takes from the target (interrupt entry and exit, the perf event, the BPF
 * program); the loop's working set is tiny, so cache and TLB refills afterwards are not in it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define GAP_MIN_NS 400
#define GAP_MAX_NS 100000
#define BIN_NS     50 /* histogram resolution */
#define NBINS      (GAP_MAX_NS / BIN_NS)

static uint64_t ns_of(clockid_t c)
{
    struct timespec ts;

    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    static uint32_t hist[NBINS];
    double secs = argc > 1 ? atof(argv[1]) : 3.0;
    uint64_t cpu0 = ns_of(CLOCK_THREAD_CPUTIME_ID), cpu_end = cpu0 + (uint64_t)(secs * 1e9);
    uint64_t prev = ns_of(CLOCK_MONOTONIC), n = 0, total = 0, cpu = cpu0;
    unsigned long iter = 0;

    while (cpu < cpu_end) {
        uint64_t t = ns_of(CLOCK_MONOTONIC), d = t - prev;

        prev = t;
        if (d >= GAP_MIN_NS && d < GAP_MAX_NS) {
            hist[d / BIN_NS]++;
            n++;
            total += d;
        }
        if (!(++iter & 1023)) {
            cpu = ns_of(CLOCK_THREAD_CPUTIME_ID);
            prev = ns_of(CLOCK_MONOTONIC); /* the CPU-time read is not an interrupt */
        }
    }
    uint64_t half = (n + 1) / 2, seen = 0;
    unsigned med = 0;

    for (unsigned b = 0; b < NBINS && seen < half; b++) {
        seen += hist[b];
        med = b;
    }
    double cpu_s = (cpu - cpu0) / 1e9;

    printf("cpu_s=%.3f gaps=%llu gaps_per_cpu_s=%.0f gap_median_ns=%u gap_mean_ns=%.0f gap_total_pct=%.3f "
           "gap_ns_per_cpu_s=%.0f\n",
           cpu_s, (unsigned long long)n, n / cpu_s, med * BIN_NS + BIN_NS / 2, n ? (double)total / n : 0.0,
           100.0 * total / 1e9 / cpu_s, total / cpu_s);
    return 0;
}
