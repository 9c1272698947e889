/*
 * summary — the top-N table printed on stderr when a profile went to a file (summary.c). The
 * default, summary_print (output.h), has one row per function; the per-line view is an option.
 */
#ifndef PYEBPF_SUMMARY_H
#define PYEBPF_SUMMARY_H

#include <stdio.h>

#include "profile/profile.h"

enum summary_group {
    SUMMARY_BY_FUNCTION = 0, /* a Python function's lines add up in one row: "f (file.py)" */
    SUMMARY_BY_LINE,         /* one row per Python line, as in folded output: "f (file.py:12)" */
};

/* Top `topn` rows by self samples. Returns 0 or -ENOMEM. */
int summary_print_by(const struct profile *p, FILE *f, unsigned topn, enum summary_group by);

/* The same, one row per function (SUMMARY_BY_FUNCTION). */
int summary_print(const struct profile *p, FILE *f, unsigned topn);

#endif
