/*
 * pydstack — where a thread's Python frames will be, from its data stack (internal to pystack).
 *
 * Since 3.11 CPython allocates the frames of Python-to-Python calls in per-thread data-stack
 * chunks that grow upwards; the thread state says which chunk is current and how far it is used:
 *
 *   PyThreadState: ... datastack_chunk  datastack_top  datastack_limit ...   (three words in a row)
 *                          │                 │              │
 *   chunk (mmap'ed, 16 KiB by default)       ▼              ▼
 *   ┌──────────┬──────┬─────────┬─────────┬─────┬────────────────────────┐
 *   │ previous │ size │ top     │ frame … │ …   │ frame (leaf) │  free   │
 *   └──────────┴──────┴─────────┴─────────┴─────┴──────────────┴─────────┘
 *   0          8      16        24 = PYDSTACK_DATA              top        limit = chunk + size
 *
 * Every live frame of the current chunk lies in [chunk + 24, top); generator and coroutine frames
 * live in their generator objects instead, older frames in earlier chunks. So:
 *
 *  - window: the predicted batch reads [chunk + 24, max(recent tops) + PYDSTACK_SLACK) of the chunk
 *    the thread used last time (capped at its limit and at PYDSTACK_WINDOW_MAX bytes): the frames
 *    of a stack that changed since the last sample are then local after the one call, wherever
 *    they were pushed below the recent high-water mark of `top` (plus the slack);
 *  - gap: a frame of the current chunk that was not read anyway is read together with every
 *    frame below it down to what the window already holds (or the chunk's start): one call for
 *    all of them, where following `previous` pointers costs one call per frame.
 *
 * These are only ranges of bytes: frames are still found by following `previous` from the top
 * frame, and checked exactly as frames read one by one. The three words are used only when they
 * are consistent (chunk + 24 <= top <= limit, at most PYDSTACK_CHUNK_MAX apart, 8-aligned) and once
 * their positions were checked against a chunk's own header (size == limit - chunk).
 */
#ifndef PYEBPF_PYDSTACK_H
#define PYEBPF_PYDSTACK_H

#include <stdbool.h>
#include <stdint.h>

#define PYDSTACK_DATA       24u         /* offsetof(_PyStackChunk, data) */
#define PYDSTACK_CHUNK_MAX  (64u << 20) /* a chunk grows with the largest frame; beyond this: garbage */
#define PYDSTACK_SLACK      512u        /* window bytes above the recent high-water mark of top */
#define PYDSTACK_WINDOW_MAX (16u << 10) /* at most this much of a chunk per window or gap read */
#define PYDSTACK_EPOCH      32u         /* samples per high-water epoch */

/* The three words as read from the thread state. */
struct pydstack_words {
    uint64_t chunk, top, limit;
};

/* What the last samples of one thread saw. */
struct pydstack_hist {
    uint64_t chunk, top, limit; /* chunk == 0: nothing to predict from */
    uint64_t hw, hw_prev;       /* highest top of this epoch and of the previous one */
    uint32_t count;             /* samples in this epoch */
};

/* True when the words describe a chunk in use. */
bool pydstack_valid(const struct pydstack_words *w);

/* Records the words of this sample (`w` NULL or invalid: forget the thread's chunk). */
void pydstack_note(struct pydstack_hist *h, const struct pydstack_words *w);

/* The window for the next sample: [*lo, *hi), 8-aligned. False when there is none. */
bool pydstack_window(const struct pydstack_hist *h, uint64_t *lo, uint64_t *hi);

/* The read for a frame at `addr` (`fsize` bytes to read there) that no read of this sample holds,
 * given the words read in this sample and the bytes [have_lo, have_hi) already read (0, 0: none):
 * [*lo, *hi) ends with the frame and reaches down to what is held, or to the chunk's start, at
 * most PYDSTACK_WINDOW_MAX bytes. False when the frame is not in the current chunk. */
bool pydstack_gap(const struct pydstack_words *w, uint64_t addr, uint32_t fsize, uint64_t have_lo,
                  uint64_t have_hi, uint64_t *lo, uint64_t *hi);

#endif
