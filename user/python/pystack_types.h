/*
 * pystack_types — the records of a Python stack that pystack (pystack.h) and its code cache
 * (pycode.h) share, and their files' shared state (pystack_state.h, pycode_table.h) with them:
 * the reader's options, a symbolised frame, a frame captured in the kernel, the names given to
 * frames that cannot be named, the qualname words read with a code header, and the counters both
 * keep.
 */
#ifndef PYEBPF_PYSTACK_TYPES_H
#define PYEBPF_PYSTACK_TYPES_H

#include <stdbool.h>
#include <stdint.h>

/* One Python frame of a sample, leaf first. */
/* pystack_open's options (pystack.h). */
struct pystack_opts {
    uint32_t max_depth;           /* Python frames per sample, shims included; 0: 1024 */
    uint32_t max_reads;           /* process_vm_readv calls per sample; 0: max_depth + 16 (a cold
                                     stack costs one call per frame not predicted) */
    uint32_t refresh_interval_us; /* least time between two walks of the thread list caused
                                     by unknown tids; 0: 10000 */
    bool exact_reads;             /* one iovec per predicted frame, even for neighbours in memory */
};

#define PYCODE_QUAL_SIZE 16 /* a qualname's length and hash words, read at the str's length */

struct pystack_frame {
    uint32_t frame; /* profile frame index: FRAME_PYTHON, "qualname", file, line */
    bool entry;     /* the root-most frame of one _PyEval_EvalFrameDefault call: the merge gives
                       each eval-loop native frame the frames up to and including the next one
                       with entry set (3.11: is_entry; 3.12+: followed by an owner==3 shim, which
                       is itself left out). The root-most frame of a complete stack is one. */
};

/* Name, and file when that is refused too, of a frame whose code object was read as one but whose
 * strings were refused (a forged length, a NUL inside it, a freed str): a result of reading the
 * object, not a frame caught while being set up (that one is named "<unreadable>" with no file). */
#define PYSTACK_REFUSED "<unreadable>"
/* Name and file of an in-kernel frame whose code object was freed, and its address given to
 * another code object, between the sample and its naming: the name it ran under is gone. */
#define PYSTACK_FREED "<freed code>"

/* A frame as captured elsewhere (in-kernel), leaf first. */
struct pystack_raw {
    uint64_t code;    /* PyCodeObject address (f_code / f_executable) */
    uint64_t instr;   /* prev_instr (3.11/3.12) or instr_ptr (3.13) */
    uint8_t owner;    /* _PyInterpreterFrame.owner */
    uint8_t is_entry; /* 3.11 only */
    uint64_t ident;   /* the code object's identity at the capture instant (pyrt layout's
                         co_id block folded as sample_py_ident does); 0: unknown, the header
                         read at symbolisation is trusted */
};

struct pystack_stats {
    uint64_t samples; /* pystack_read + pystack_symbolize calls */
    uint64_t frames;  /* Python frames returned */
    uint64_t l1_hits, l1_misses;
    uint64_t l2_hits, l2_misses, l2_refreshes, l2_refreshes_deferred;
    uint64_t pred_hits, pred_misses;             /* frames found in / missing from the predicted read */
    uint64_t steady_samples;                     /* samples served by the predicted read alone */
    uint64_t code_hits, code_misses, code_stale; /* stale: header changed, entry replaced */
    uint64_t code_freed;                         /* in-kernel frames named PYSTACK_FREED */
    uint64_t code_rereads;         /* batches read again so that new code objects' headers and qualname
                                      words come with the frames */
    uint64_t code_fill_raced;      /* fills refused: the object or its strings changed meanwhile */
    uint64_t code_fill_late;       /* remote fills whose header was read after the frames, alone */
    uint64_t code_unverified;      /* remote frames left unnamed for that reason (named later) */
    uint64_t code_objects;         /* entries in the code cache */
    uint64_t fin_hits, fin_misses; /* (code, offset) → frame cache */
    uint64_t truncated, errors, loops, budget_exhausted, bad_code;
    uint64_t ds_window_frames;            /* frames served by the data-stack window of the batch */
    uint64_t ds_gap_reads, ds_gap_frames; /* data-stack gap reads, and the frames they served */
    uint64_t ds_torn;          /* chains ended at a frame of the current chunk that was no longer live, or
                                  holding frames the thread had left while the batch was read */
    uint64_t ds_torn_retries;  /* torn batches read again */
    uint64_t ds_torn_dropped;  /* leaf-side frames of chains torn at every read, left out */
    uint64_t ds_popped_leaves; /* leaf-side frames found popped (code cleared), passed over */
};

#endif
