/*
 * diff — two profiles side by side, stack by stack (a differential flame graph's data): the walk
 * that pairs each stack of one with the same stack of the other, and the folded writer that
 * prints both counts, as flamegraph's difffolded.pl does.
 *
 *   a;b;c 120 80      stack, samples BEFORE, samples AFTER (0 where a profile lacks the stack)
 */
#ifndef PYEBPF_DIFF_H
#define PYEBPF_DIFF_H

#include <stdint.h>
#include <stdio.h>

#include "profile/view.h"

#define DIFF_NONE UINT32_MAX /* the stack is not in that profile */

/* One node of the union of both tries, visited parents first, children in label order. */
struct diff_step {
    uint32_t before, after; /* node in each view, or DIFF_NONE */
    unsigned depth;         /* 1 for a root's child */
    const char *label;      /* the frame's full label */
    uint64_t before_self, after_self;
};

typedef int (*diff_visit_fn)(void *arg, const struct diff_step *s);

/* Walks the union of two views (view_build() output) frame by frame: a frame matches when label
 * and kind are equal. Stops at the first non-zero return of `fn` and returns it; -ENOMEM. */
int diff_walk(const struct profile *before, const struct profile *after, diff_visit_fn fn, void *arg);

/* "stack before after" lines for every stack of either finished profile; each column sums to its
 * profile's total samples. */
int diff_write_folded(const struct profile *before, const struct profile *after, FILE *f);

#endif
