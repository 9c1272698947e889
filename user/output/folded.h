/*
 * folded — "a;b;c N" text, one line per distinct stack: the writer, and the reader that turns such
 * text (ours or any other tool's) back into a profile.
 */
#ifndef PYEBPF_FOLDED_H
#define PYEBPF_FOLDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/view.h"

int folded_write(const struct profile *p, FILE *f);
/* Makes the label `s` one that cannot break the line format, in place: ';' becomes ':', line
 * breaks spaces, an empty label "?" (s has room for 2 bytes). */
void folded_fold(char *s);
/* Writes a label folded_fold made, as the first frame of its line or not: a leading '#' (a
 * comment) of the first is written '?'. */
void folded_put_label(FILE *f, const char *s, bool first);

struct folded_stats {
    uint64_t lines;     /* stacks accepted */
    uint64_t bad_lines; /* skipped: no count, bad count, empty stack */
    uint64_t truncated; /* stacks deeper than FOLDED_MAX_DEPTH (root side kept) */
};

#define FOLDED_MAX_DEPTH VIEW_MAX_DEPTH /* what the reader keeps, the writers can walk */
#define FOLDED_MAX_COUNT (1ULL << 48)   /* larger counts are taken as garbage, so sums never wrap */

/* Parses folded text (`buf` need not be NUL-terminated) into an initialised profile, adding to
 * what it holds; each frame's kind comes from its text (see folded.c). Malformed lines are
 * counted and skipped. Returns 0, or -ENOMEM. Call profile_finish() afterwards. */
int folded_read(struct profile *p, const char *buf, size_t len, struct folded_stats *st);
/* Reads a whole file ("-": stdin) and parses it. */
int folded_read_file(struct profile *p, const char *path, struct folded_stats *st);

#endif
