/*
 * pystack — the Python frames of one thread of a target process, read remotely and symbolised.
 *
 * One sample of thread TID:
 *
 *   L1 {tid → slot} ─miss─▶ L2 table tid → slot {thread state, prediction}
 *                              └─miss─▶ walk interp->threads (native_thread_id == tid), refill
 *
 *   one batched process_vm_readv:
 *     [thread state] [predicted _PyCFrame] [data-stack words] [data-stack window]
 *     [predicted frames outside the window ...] [code hdr] ...
 *      └ the prediction is the thread's previous sample: its chain, its _PyCFrame, and its data
 *        stack (pydstack.h): the window is the used part of the chunk it was in, up to the recent
 *        high-water mark of datastack_top + 512 bytes, so the frames of a stack that changed since
 *        are local after this one call wherever they were pushed. Predicted frames elsewhere
 *        (generators, older chunks) that are neighbours in memory are read as one range, the
 *        leaf's range running on to the end of its page (exact_reads: one exact iovec per frame,
 *        no window). A frame of the current chunk found in none of the ranges is read with every
 *        frame below it in one more call (gap read); any other one by one (each frame's
 *        `previous` is only known once it is read), then the walk rejoins the prediction. A caller
 *        above the frame it called in the current chunk was read from bytes written after the
 *        thread moved on: the chain ends there (PYSTACK_BROKEN, datastack_torn).
 *
 *   code object cache: address → {qualname, filename, firstlineno, decoded line table}, each
 *     entry validated once per sample by re-reading its header (ob_type, firstlineno, name,
 *     qualname, filename, linetable pointers) — inside the same batched call for the code
 *     objects of the predicted stack and up to 24 recently seen ones (minus those that did not
 *     read as code objects).
 *     Misses are fetched for all new code objects of a sample together, in three calls
 *     (headers; str/bytes headers; their contents).
 *   (code, instruction offset) → finished frame (profile frame index) cache.
 *
 * A per-sample budget (depth cap, loop detection, at most max_reads calls) ends forged or
 * looping chains; errors are counted, never fatal. One struct pystack serves one collector
 * thread (no locking inside).
 */
#ifndef PYEBPF_PYSTACK_H
#define PYEBPF_PYSTACK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "python/pyrt.h"
#include "python/pystack_types.h"
#include "util/stats.h"

struct pystack;

/* pystack_read *flags */
#define PYSTACK_TRUNCATED 0x1u /* depth cap reached; the root side is missing */
#define PYSTACK_BROKEN    0x2u /* chain ended early: unreadable or invalid frame, loop, budget */
#define PYSTACK_PREDICTED 0x4u /* the whole chain came from the one predicted read */
/* The chain's leaf-most frame is an eval-loop entry shim (owner >= PYRT_OWNED_BY_CSTACK: 3 on
 * 3.12/3.13, 4 on 3.14+; set by the in-kernel path): the innermost eval-loop call has no Python
 * frame of its own at that instant (its entry frame has returned and the loop is on its way out).
 * The shim is left out like every other. */
#define PYSTACK_LEAF_SHIM 0x8u
/* Every frame was named for good from its capture (pystack_symbolize's *final). */
#define PYSTACK_FINAL 0x10u

/* Attaches to the Python runtime of `pid` (pyrt_attach) and interns frames into `prof`. On
 * failure, *err says why in one line. */
int pystack_open(struct pystack **out, pid_t pid, struct profile *prof, const struct pystack_opts *opts,
                 char *err, size_t errlen);
void pystack_close(struct pystack *ps);

/* Reads the Python stack of thread `tid` now: up to `max` frames, leaf first, into out. Returns
 * the number of frames (0: no Python code running), -ESRCH when `tid` has no Python thread state,
 * or another -errno when the target cannot be read. */
int pystack_read(struct pystack *ps, pid_t tid, struct pystack_frame *out, size_t max, unsigned *flags);

/* Symbolises frames captured elsewhere (in-kernel): only code objects are read (batched,
 * cached). Shim frames (owner == 3) are dropped; `truncated` says the capture stopped before the
 * root. Returns the number of frames written; *final (may be NULL) says whether the same raw
 * chain names the same frames in any later sample (pycode_final). */
int pystack_symbolize(struct pystack *ps, const struct pystack_raw *raw, size_t n, bool truncated,
                      struct pystack_frame *out, size_t max, bool *final);
/* Counts a sample whose chain the caller named from its own cache of final answers, as
 * pystack_symbolize would have (python_samples). */
void pystack_count_cached(struct pystack *ps);

/* The thread state of `tid` (for the in-kernel reader), from the caches, and (pthread: may be
 * NULL) its thread_id, pthread_self() (0: unknown). */
int pystack_thread_state(struct pystack *ps, pid_t tid, uint64_t *tstate, uint64_t *pthread);
/* Calls fn for every thread that has a Python thread state now (one walk of every interpreter's
 * thread list), with its thread_id (pthread_self(); 0: unknown); stops at the first non-zero
 * return and returns it. */
int pystack_each_thread(struct pystack *ps,
                        int (*fn)(void *arg, pid_t tid, uint64_t tstate, uint64_t pthread), void *arg);
/* The code objects on the stacks of the threads the last pystack_each_thread listed (each chain
 * followed up to 64 frames), named as the kernel will capture them (pycode_name_captures):
 * named() gets each (code address, ident). Returns how many. */
size_t pystack_name_running(struct pystack *ps, void (*named)(void *arg, uint64_t code, uint64_t ident),
                            void *arg);
/* The thread state that holds the GIL now (0: none), one remote call (pyrt_gil_holder). */
int pystack_gil_holder(struct pystack *ps, uint64_t *tstate);

const struct pyrt *pystack_runtime(const struct pystack *ps);
/* The process it reads. */
pid_t pystack_pid(const struct pystack *ps);
/* Where pythreads_name keeps its state for this process (freed with the reader). */
struct pythreads **pystack_threads(struct pystack *ps);
const struct remote_stats *pystack_remote_stats(const struct pystack *ps);
void pystack_get_stats(const struct pystack *ps, struct pystack_stats *st);

/* The rows for --stats (util/stats.h): python_version, python_samples, python_frames,
 * remote_reads, remote_read_bytes, pystack_reads_per_sample (remote calls per pystack_read),
 * bytes_per_sample, batched_attempts, batched_successes, batched_segments_requested, batched_segments_read,
 * <cache>_hit_rate for l1, l2, prediction, code, frame; code_objects; errors; datastack_window_frames,
 * datastack_gap_reads, datastack_gap_frames, datastack_torn, datastack_torn_retries,
 * datastack_torn_dropped. */
void pystack_stats(const struct pystack *ps, struct stats out);

#endif
