/*
 * monotime — the collector's one clock read (see monotime.h).
 */
#include "util/monotime.h"

#include <time.h>

uint64_t monotime_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
