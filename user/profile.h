/*
 * profile — the aggregated result of a run: interned frames, stacks as a prefix trie, counts.
 *
 * Memory grows with distinct frames and distinct stacks, never with samples. Every stack starts
 * at a thread frame (kind FRAME_THREAD, name "thread TID (comm)"); writers leave it out unless
 * the user asked for threads (profile.show_threads).
 *
 *        root (node 0)
 *          └─ thread 1234 (python3)          FRAME_THREAD
 *               └─ main                      FRAME_NATIVE
 *                    └─ outer (x.py:10)      FRAME_PYTHON
 *                         └─ inner (x.py:3)  FRAME_PYTHON   self += count
 *
 * Writers (folded, svg, speedscope, pprof) read the trie; the folded reader rebuilds one.
 */
#ifndef PYEBPF_PROFILE_H
#define PYEBPF_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum frame_kind {
    FRAME_THREAD = 0, /* root pseudo-frame of one thread */
    FRAME_PYTHON,     /* qualname, file, line */
    FRAME_NATIVE,     /* symbol (module in `file`) */
    FRAME_JIT,        /* a JIT region's name, e.g. py::f:/x.py */
    FRAME_KERNEL,     /* kernel symbol */
    FRAME_OTHER,      /* e.g. [unknown], truncation markers */
};

struct frame {
    const char *name; /* interned, owned by the profile */
    const char *file; /* interned or NULL: source file (Python) or module path (native) */
    uint32_t line;    /* 0: none */
    enum frame_kind kind;
};

struct node {
    uint32_t parent; /* node index; the root is 0 and is its own parent */
    uint32_t frame;  /* frame index */
    uint64_t self;   /* samples whose leaf is this node */
    uint64_t total;  /* self + all descendants; valid after profile_finish() */
};

struct profile_meta {
    char *command;      /* target command line, for titles */
    double duration_s;  /* wall time sampled */
    uint64_t samples;   /* samples aggregated (sum of counts) */
    unsigned frequency; /* Hz asked for; 0 when unknown (e.g. read back from folded text) */
    uint64_t period_ns; /* nanoseconds of CPU one sample stands for (1e9/frequency) */
};

struct profile {
    struct frame *frames;
    uint32_t nframes;
    struct node *nodes; /* nodes[0] is the root */
    uint32_t nnodes;
    struct profile_meta meta;
    bool show_threads; /* writers emit FRAME_THREAD frames */
    void *priv;        /* hash tables, string pool */
};

int profile_init(struct profile *p);
void profile_free(struct profile *p);

/* Interns a frame; name and file are copied. Returns the frame index or -ENOMEM. */
int64_t profile_frame(struct profile *p, enum frame_kind kind, const char *name, const char *file,
                      uint32_t line);

/* Adds `count` samples of the stack frames[0] (root, usually a thread frame) .. frames[n-1]
 * (leaf). Returns the leaf node index or -ENOMEM. */
int64_t profile_add(struct profile *p, const uint32_t *frames, size_t n, uint64_t count);

/* Computes node totals (children before parents). Call once before writing. */
void profile_finish(struct profile *p);

/* The text one frame has in folded output: "qualname (file:line)" for Python, "sym_[k]" for the
 * kernel, the name otherwise. Writes at most `size` bytes (NUL-terminated); returns the length it
 * needed (as snprintf). */
int profile_frame_label(const struct profile *p, uint32_t frame, char *buf, size_t size);

#endif
