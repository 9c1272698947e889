/*
 * view — the profile as the writers see it (profile_finish() called on the source first): hidden
 * frames left out, children in label order, the time one sample stands for, and the deepest stack
 * any writer walks. Writers include this header, never the dispatcher (output.h) that calls them.
 */
#ifndef PYEBPF_VIEW_H
#define PYEBPF_VIEW_H

#include <stdint.h>

#include "profile/profile.h"

/* The deepest stack a writer or the summary walks (frames, root side kept); the folded reader
 * truncates at the same depth, so whatever it reads can be written again. */
#define VIEW_MAX_DEPTH 2048

/* A copy of `src` with the frames writers hide (profile_frame_shown) left out of every stack and
 * stacks that became equal merged; finished. A stack with no shown frame becomes "[unknown]". */
int view_build(const struct profile *src, struct profile *dst);
/* Children of `node` sorted by label; *out is malloc'd (free it). Returns the count or -ENOMEM. */
int64_t view_sorted_children(const struct profile *p, uint32_t node, uint32_t **out);
/* Nanoseconds one sample stands for: meta.period_ns, else 1e9/frequency, else 1e9/100. */
uint64_t view_period_ns(const struct profile *p);

#endif
