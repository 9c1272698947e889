/*
 * progress — the live status line pyebpf-sample keeps on a terminal while it samples:
 *
 *   pyebpf-sample: 12.3s  4821 samples  396/s  lost 0  errors 2
 *
 * One line, rewritten in place ("\r" + text + erase to end of line) at most PROGRESS_HZ times a
 * second, cut to the terminal's width so it never wraps (a wrapped line cannot be rewritten).
 * It is off when the stream is not a terminal (a file, a pipe, a CI log) or with -q, and it is
 * erased before anything else is printed (the summary, messages, a profile written to stdout).
 */
#ifndef PYEBPF_PROGRESS_H
#define PYEBPF_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PROGRESS_HZ 4

struct collector;
struct sampler;

struct progress_counts {
    uint64_t samples; /* stacks aggregated */
    uint64_t lost;    /* records the kernel dropped (ring full) */
    uint64_t errors;  /* records that could not be turned into a stack, unwinds cut short */
};

struct progress {
    FILE *f;
    bool on;
    bool shown;    /* a line is on the terminal now */
    uint64_t t0;   /* ns, CLOCK_MONOTONIC: start of sampling */
    uint64_t last; /* ns of the last redraw */
    /* The last PROGRESS_HZ redraws (time, samples), oldest first once full: the rate shown is
     * over the last second, steadier than over one interval at low frequencies. */
    uint64_t hist_t[PROGRESS_HZ], hist_n[PROGRESS_HZ];
    unsigned hist_len;
    double rate; /* samples/s over the last second (or since the start) */
    unsigned redraws;
};

/* Turns the line on when `f` is a terminal and not `quiet` (also off with TERM=dumb). */
void progress_start(struct progress *pg, FILE *f, bool quiet, uint64_t now_ns);
/* Redraws the line when 1/PROGRESS_HZ s passed since the last redraw. Returns 1 when it drew. */
int progress_update(struct progress *pg, uint64_t now_ns, const struct progress_counts *c);
/* progress_update with the counts read from a running collector and sampler; `extra_errors`
 * adds the caller's own count of rejected records. */
int progress_poll(struct progress *pg, uint64_t now_ns, const struct collector *col, struct sampler *s,
                  uint64_t extra_errors);
/* Erases the line (the cursor goes back to column 0); idempotent. */
void progress_clear(struct progress *pg);

/* The text of the line (no control characters), at most `width` columns (0: no limit).
 * Returns its length. Exposed for tests. */
size_t progress_format(char *buf, size_t size, unsigned width, double elapsed_s, double rate,
                       const struct progress_counts *c);

#endif
