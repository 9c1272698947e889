/*
 * collect — turns one sampler record into one stack of the profile:
 *
 *   thread TID (comm) ; native frames root → leaf (fp chain or DWARF unwind of the stack copy,
 *   symbolised through proc) ; kernel frames root → leaf (with --kernel)
 *
 * It keeps one proc handle per target process and one thread frame per thread.
 */
#ifndef PYEBPF_COLLECT_H
#define PYEBPF_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc.h"
#include "profile.h"
#include "sample.h"

#define COLLECT_MAX_DEPTH 256 /* native frames per sample */

struct collect_opts {
    enum unwind_mode unwind;
    bool kernel; /* add kernel frames */
};

struct collect_stats {
    uint64_t samples;          /* records turned into stacks */
    uint64_t unwind_errors;    /* native unwind stopped early (no CFI, stack copy too short, bad) */
    uint64_t unwind_truncated; /* hit COLLECT_MAX_DEPTH or a full kernel FP chain ([truncated] root) */
    uint64_t kernel_errors;    /* kernel stack missing for a sample in kernel mode */
    uint64_t copy_errors;      /* no stack copy in the record */
    uint64_t frames;           /* native + kernel frames added */
    uint64_t unknown_frames;   /* frames with no symbol (printed as module+0xoff) */
    uint64_t proc_errors;      /* a record of a process that could not be opened */
    uint64_t threads;          /* distinct threads seen */
    uint64_t stack_copy_bytes; /* sum of copied stack bytes */
};

struct collector;

/* Sum over the targets' proc handles (refreshes, files opened, CFI row cache, steps). */
void collect_proc_stats(const struct collector *c, struct proc_stats *out);

int collect_open(struct collector **out, const struct collect_opts *o, struct profile *prof);
/* Adds one record. Returns 1 when the record's thread was seen for the first time, 0 otherwise,
 * or a negative errno (-ENOMEM). */
int collect_sample(struct collector *c, const struct sample_event *ev, size_t len);
void collect_stats(const struct collector *c, struct collect_stats *out);
void collect_close(struct collector *c);

#endif
