/*
 * summary — the top-N table printed on stderr when a profile went to a file (summary.c), and the
 * table itself, which `top` redraws live. The default has one row per function; the per-line view
 * is an option.
 */
#ifndef PYEBPF_SUMMARY_H
#define PYEBPF_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

enum summary_group {
    SUMMARY_BY_FUNCTION = 0, /* a Python function's lines add up in one row: "f (file.py)" */
    SUMMARY_BY_LINE,         /* one row per Python line, as in folded output: "f (file.py:12)" */
};

struct summary_query {
    enum summary_group by;
    bool python_only;   /* a stack's innermost Python frame owns its sample; no native rows */
    const char *thread; /* only stacks under this thread frame ("thread TID (comm)"); NULL: all */
};

struct summary_row {
    char *label; /* "f (file.py)", "f (file.py:12)" by line, a native symbol, ... */
    enum frame_kind kind;
    uint64_t self, total; /* samples with the row's frame as leaf / anywhere on the stack */
};

/* Every row with samples, by self then total samples (descending); *samples gets the samples
 * the query covers. The profile need not be finished (a live one is read as it is). Returns 0 or
 * -ENOMEM; free the rows with summary_table_free. */
int summary_table(const struct profile *p, const struct summary_query *q, struct summary_row **rows,
                  size_t *n, uint64_t *samples);
void summary_table_free(struct summary_row *rows, size_t n);

/* Top `topn` rows by self samples. Returns 0 or -ENOMEM. */
int summary_print_by(const struct profile *p, FILE *f, unsigned topn, enum summary_group by);

/* The same, one row per function (SUMMARY_BY_FUNCTION). */
int summary_print(const struct profile *p, FILE *f, unsigned topn);

#endif
