/*
 * svg — the interactive flame graph: one self-contained SVG with its script (svg_js.c) embedded;
 * also the differential graph of two profiles (the pairing of their stacks: diff.h).
 */
#ifndef PYEBPF_SVG_H
#define PYEBPF_SVG_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/view.h"

struct svg_opts {
    const char *title; /* NULL: "pyebpf: <command>" or "Flame graph" */
    bool icicle;       /* roots at the top, stacks grow downwards */
    /* A differential graph: widths from the profile written, colours by the change against
     * `before` (red grew, blue shrank); `normalize` compares shares of each total, else counts. */
    const struct profile *before;
    bool normalize;
};

/* `opts` may be NULL (the defaults). */
int svg_write(const struct profile *p, FILE *f, const struct svg_opts *opts);

#endif
