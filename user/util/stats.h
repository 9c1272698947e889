/*
 * stats — how a module reports its figures for --stats: one named row at a time, into whatever
 * sink the caller hands it. stats_file() is the one printer (`name: value` lines); a test can
 * hand a sink that keeps the rows instead.
 *
 *   module   void X_stats(const struct X *x, struct stats out)
 *              stats_count(out, "remote_reads", n);
 *              stats_ratio(out, "reads_per_sample", calls, samples, 3);   → "reads_per_sample: 0.004"
 *   caller   X_stats(x, stats_file(stderr));
 *
 * Typed figures for code that computes with them stay in each module's `struct X_stats`
 * (X_get_stats); the rows are how they are named and shown.
 */
#ifndef PYEBPF_STATS_H
#define PYEBPF_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum stat_kind { STAT_COUNT, STAT_REAL, STAT_TEXT };

struct stat_row {
    const char *name;
    enum stat_kind kind;
    int digits;       /* STAT_REAL: decimals shown */
    uint64_t count;   /* STAT_COUNT */
    double real;      /* STAT_REAL */
    const char *text; /* STAT_TEXT */
};

struct stats {
    void (*row)(void *arg, const struct stat_row *r);
    void *arg;
};

void stats_count(struct stats out, const char *name, uint64_t v);
void stats_real(struct stats out, const char *name, double v, int digits);
/* num / den, or 0 when den is 0 (no samples yet). */
void stats_ratio(struct stats out, const char *name, double num, double den, int digits);
void stats_text(struct stats out, const char *name, const char *text);

/* A run of plain counters, in order: a module whose figures are all counts lists them once. */
struct stat_count {
    const char *name;
    uint64_t v;
};
void stats_counts(struct stats out, const struct stat_count *rows, size_t n);
#define STATS_COUNTS(out, ...)                                                                               \
    stats_counts((out), (const struct stat_count[]){__VA_ARGS__},                                            \
                 sizeof((const struct stat_count[]){__VA_ARGS__}) / sizeof(struct stat_count))

/* The sink that writes each row to `f` as one `name: value` line. */
struct stats stats_file(FILE *f);

#endif
