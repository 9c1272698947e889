/*
 * monotime — CLOCK_MONOTONIC in nanoseconds: the clock of the samples' timestamps
 * (bpf_ktime_get_ns), of the timers and of every deadline in the collector.
 */
#ifndef PYEBPF_MONOTIME_H
#define PYEBPF_MONOTIME_H

#include <stdint.h>

uint64_t monotime_ns(void);

#endif
