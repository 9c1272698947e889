/*
 * profile — the aggregated result of a run: interned frames, stacks as a prefix trie, counts.
 *
 * Memory grows with distinct frames and distinct stacks, never with samples. Every stack starts
 * at a thread frame (kind FRAME_THREAD, name "thread TID (NAME)"); writers leave it out unless
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
    const char *weight; /* NULL: counts are samples of CPU time; "wall" or "offcpu": counts are
                           microseconds of that time (period_ns 1000); a static string */
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
/* Frees everything, including meta.command (set it with profile_set_command or strdup). */
void profile_free(struct profile *p);

/* Copies `command` into meta.command (NULL clears it). */
int profile_set_command(struct profile *p, const char *command);

/* Interns a frame; name and file are copied. Returns the frame index or -ENOMEM. */
/* Renames frame `frame` (a thread whose name was learnt after its first samples): every stack
 * that holds it shows the new name. 0, -EINVAL or -ENOMEM. */
int profile_frame_rename(struct profile *p, uint32_t frame, const char *name);
int64_t profile_frame(struct profile *p, enum frame_kind kind, const char *name, const char *file,
                      uint32_t line);

/* Adds `count` samples of the stack frames[0] (root, usually a thread frame) .. frames[n-1]
 * (leaf). Returns the leaf node index or -ENOMEM. */
int64_t profile_add(struct profile *p, const uint32_t *frames, size_t n, uint64_t count);

/* Adds `count` more to the stack ending at `node` (an index profile_add returned). */
void profile_add_count(struct profile *p, uint32_t node, uint64_t count);

/* Computes node totals (children before parents). Call once before writing. */
void profile_finish(struct profile *p);

/* The text one frame has in folded output: "qualname (file:line)" for Python, "sym_[k]" for the
 * kernel, the name otherwise. Writes at most `size` bytes (NUL-terminated); returns the length it
 * needed (as snprintf). */
int profile_frame_label(const struct profile *p, uint32_t frame, char *buf, size_t size);

/* -- Walking the trie (for writers) --------------------------------------------------------- */

/* First child of `node`, then the next sibling of a child; 0 when there is none (the root is
 * nobody's child). Children come in no particular order. */
uint32_t profile_first_child(const struct profile *p, uint32_t node);
uint32_t profile_next_sibling(const struct profile *p, uint32_t node);

/* Whether writers emit this frame: everything except thread frames, which appear only with
 * show_threads and a non-empty name (the folded reader files thread-less stacks under an unnamed
 * thread frame). */
bool profile_frame_shown(const struct profile *p, uint32_t frame);

/* The node path root-most first (the root itself excluded) ending at `node`, into out[0..max);
 * returns how many were stored. A path deeper than `max` loses its leaf-most part. */
size_t profile_stack(const struct profile *p, uint32_t node, uint32_t *out, size_t max);

#endif
