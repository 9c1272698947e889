/*
 * pystack_state — pystack's state, under the three files that share it (pystack.c: the chain
 * read, lifecycle and stats, which calls down into pystack_threads.c: the thread directory, and
 * pystack_predict.c: the batch a thread's last sample predicts; see pystack.h). Nothing outside
 * them includes it.
 */
#ifndef PYEBPF_PYSTACK_STATE_H
#define PYEBPF_PYSTACK_STATE_H

#include <stdint.h>
#include <string.h>

#include "capture/remote.h"
#include "python/pycode.h"
#include "python/pydstack.h"
#include "python/pyrt.h"
#include "python/pystack_types.h"

#define MAX_PRED_CODES 128 /* code headers re-read with the prediction */
#define MAX_GAPS       4   /* data-stack gap reads per sample (pydstack.h); then frame by frame */
#define FRAME_BUF      128 /* bytes; f_read_size is ~72 */
/* The run holding the leaf frame also covers up to this many bytes above it, never past the end
 * of the leaf's page: frames pushed since the last sample land there (data stacks grow up). */
#define SPEC_WINDOW      1024
#define NOT_PYTHON_SLOTS 64 /* tids recently found without a thread state */

/* What the thread's previous sample saw: read again first, in one call. */
struct thread_slot {
    pid_t tid;
    uint64_t tstate;
    uint64_t pthread; /* its thread_id (pthread_self()); 0: unknown */
    uint64_t interp;  /* the interpreter whose list held it */
    uint64_t cframe;  /* 3.11/3.12: tstate->cframe */
    uint64_t *frames; /* frame addresses, leaf first, shims included */
    uint32_t nframes;
    uint64_t codes[MAX_PRED_CODES]; /* distinct code objects of those frames */
    uint32_t ncodes;
    struct pydstack_hist ds; /* its data stack: the window of the next batch */
};

struct nonpy {
    pid_t tid;
    uint64_t since_ns;
};

struct pystack {
    uint64_t last_refresh_ns; /* start of the current walk window (refresh_interval_us) */
    unsigned window_walks;    /* walks for unknown tids in it */
    struct nonpy nonpy[NOT_PYTHON_SLOTS];
    unsigned nonpy_next;
    struct pyrt rt;
    struct remote r;
    uint64_t gil_interp;       /* the interpreter whose GIL pystack_gil_holder reads (0: not read yet) */
    struct pythreads *threads; /* pythreads_name's state for this process (NULL: none yet) */
    struct profile *prof;
    struct pycode *code;
    struct pystack_opts o;
    struct pystack_stats st;
    struct {
        pid_t tid;
        uint32_t slot;
        bool valid;
    } l1; /* last thread asked for */
    struct thread_slot *slots;
    uint32_t nslots;
    uint32_t *idx, idx_cap; /* tid hash → slot + 1 */
    bool slots_bound;       /* every slot's thread state names a thread of its own */
    /* per-sample scratch, sized for max_depth */
    struct remote_seg *segs;
    uint8_t *fbuf, *hbuf;
    uint8_t qbuf[MAX_PRED_CODES][PYCODE_QUAL_SIZE]; /* qualname words of the predicted codes */
    uint32_t *fseg;                                 /* predicted frame k → segment holding it */
    uint32_t gap;                                   /* COALESCE_GAP, or 0 with exact_reads */
    size_t frame_seg0, code_seg0;
    /* data stack (pydstack.h): ds_on is 0 until the three thread-state words were checked against
     * a chunk header, then 1 (windows and gap reads on) or -1 (off: exact_reads, no offsets, or
     * the check failed) */
    int ds_on;
    unsigned ds_check_errors; /* chunk headers that could not be read: a few, then off */
    size_t ds_seg, win_seg;   /* segments of the three words and of the window; 0: none */
    size_t ds_end_seg;        /* the three words again, after the frames; 0: none */
    size_t win_end_seg;       /* the window again, after them: the leaf's witness; 0: none */
    size_t ds_fin_seg;        /* the three words last, after the code headers: the fills' witness */
    bool win_failed;          /* the last window read failed: no second copy until one reads */
    struct pydstack_words ds_words, ds_end, ds_fin;
    uint8_t *wbuf, *wbuf_end, *gbuf;
    struct remote_seg gaps[MAX_GAPS];
    unsigned ngaps;
    struct pystack_raw *raw;
    uint64_t *addrs;
    uint64_t *seen;
    uint32_t *seen_stamp, seen_cap, stamp;
};

static inline uint64_t u64_at(const uint8_t *b, uint32_t off)
{
    uint64_t v;
    memcpy(&v, b + off, 8);
    return v;
}

/* pystack_threads.c */
int pystack_refresh_threads(struct pystack *ps);
int pystack_thread_slot(struct pystack *ps, pid_t tid);

/* pystack_predict.c */
size_t pystack_build_batch(struct pystack *ps, const struct thread_slot *s, uint8_t *tsbuf, uint64_t *cf_top);
const uint8_t *pystack_predicted(const struct pystack *ps, const struct thread_slot *s, uint32_t k);
void pystack_save_prediction(struct pystack *ps, struct thread_slot *s, uint64_t cframe, size_t n, bool cut,
                             const struct pydstack_words *dw);

#endif
