/*
 * top — `pyebpf-sample top [OPTIONS] PID` (or `-- COMMAND`): the live view of a sampling run, a
 * table of functions redrawn on the terminal (top.c). main.c runs the usual lifecycle and calls
 * top_poll() after each drain.
 */
#ifndef PYEBPF_TOP_H
#define PYEBPF_TOP_H

#include <stdbool.h>
#include <stdint.h>

#include "collect/collect.h"
#include "profile/profile.h"

struct top;

/* What the header can say of the GIL. */
enum top_gil {
    TOP_GIL_UNKNOWN = 0, /* not Python (yet), no GIL offsets for its version, or not checked */
    TOP_GIL_NONE,        /* a free-threaded build: no GIL */
    TOP_GIL_ONLY,        /* --mode gil: only samples of its holder are kept */
    TOP_GIL_KNOWN,       /* samples say whether their thread held it */
};

/* What the header shows besides the table. */
struct top_status {
    uint64_t samples, lost, threads;
    double rate; /* samples per second since start */
    enum top_gil gil;
    uint64_t gil_checked, gil_held; /* every thread's, since start (TOP_GIL_KNOWN) */
    bool gil_ticks;                 /* --no-bpf: those two count ticks (every thread sampled at each) */
    const struct collect_gil_thread *gil_threads; /* per thread (maybe not every thread) */
    size_t ngil_threads;
};

/* Takes over the terminal (alternate screen, keys unechoed); `title` heads the screen. */
int top_open(struct top **out, const char *title, double refresh_s);
/* Reads keys and redraws when the refresh interval has passed. True when the user quit (q). */
bool top_poll(struct top *t, const struct profile *p, uint64_t now_ns, const struct top_status *st);
/* Gives the terminal back as it was. NULL is a no-op. */
void top_close(struct top *t);

#endif
