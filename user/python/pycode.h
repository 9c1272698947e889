/*
 * pycode — code object cache and frame symbolisation for pystack (internal to it).
 *
 *   (code address, ident) ──▶ entry {header bytes, qualname, filename, firstlineno, line table, id}
 *                     state EMPTY → (header read, ob_type is PyCode_Type) → HEADER → FILLED
 *   (entry id, instruction offset) ──▶ profile frame index
 *
 * A frame captured in the kernel carries its code object's ident (bpf/sample.h: the identity
 * block folded at the sample instant): its entry is filled once from a header read that folds to
 * the same value, and is that object's for good; a header that folds to another value means the
 * object was freed and the address reused before it was named: the frame is PYSTACK_FREED, never
 * the new object's name. A frame read remotely (ident 0) is trusted for one sample after its
 * header (ob_type .. co_linetable, ~136 bytes) was read again and found byte-identical; a
 * different header means the address now holds another object: the entry is refilled under a
 * new id, so finished frames of the old one never match.
 */
#ifndef PYEBPF_PYCODE_H
#define PYEBPF_PYCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "python/pyrt.h"
#include "python/pystack_types.h"

struct pycode;

int pycode_new(struct pycode **out, const struct pyrt *rt, struct remote *r, struct profile *prof,
               struct pystack_stats *st);
void pycode_free(struct pycode *c);

/* Starts a sample: header validations of earlier samples no longer count. */
void pycode_begin(struct pycode *c);

/* A header of code object `addr` read in this sample elsewhere (the predicted batch), with the
 * PYCODE_QUAL_SIZE bytes read at pycode_qual_addr in the same call (NULL: not read). `witnessed`:
 * every frame of the chain that runs it was still live after they were read (so they are the
 * object's, not a freed one's); only then may they fill a new entry. */
void pycode_header(struct pycode *c, uint64_t addr, const uint8_t *hdr, const uint8_t *qual, bool witnessed);

/* Where the qualname words of the entry for `addr` are to be read (its header is known); 0: none. */
uint64_t pycode_qual_addr(const struct pycode *c, uint64_t addr);

/* True when `addr` (a remote read's code object) was validated in this sample. */
bool pycode_checked(const struct pycode *c, uint64_t addr);

/* True when this sample's batch read enough of `addr` to name it as it was then: a filled entry's
 * header and qualname words, or a new one's header and the qualname words it points at (or found
 * it is no code object). */
bool pycode_named_now(const struct pycode *c, uint64_t addr);

/* Reads, in one call, the headers of the code objects of `raw` not validated in this sample (a
 * chain read before their addresses were known), so that the next batch can read them and their
 * qualname words with the frames. Returns how many it read. */
size_t pycode_prefetch(struct pycode *c, const struct pystack_raw *raw, size_t n);

/* How pycode_symbolize names a chain: */
#define PYCODE_COMPLETE 1u /* it reached its root (the root-most frame ends an eval-loop call) */
#define PYCODE_LATE_FILLS                                                                                    \
    2u /* remote entries may be filled from a header read after the frames                                   \
          (the batch could not hold every code object's) */

/* Symbolises raw frames leaf first (shims dropped, entry flags set). Returns frames written. */
int pycode_symbolize(struct pycode *c, const struct pystack_raw *raw, size_t n, struct pystack_frame *out,
                     size_t max, unsigned how);

/* Names code objects `codes[0..n)` (distinct addresses, read from chains in user space) as the
 * kernel will capture them: each one's ident folded from its header and qualname words read now,
 * as the program folds them at a sample, then its entry filled under that ident the way a
 * capture's is (its header read again must fold to it). named() gets each (address, ident)
 * filled; one that is no code object, or changed between the reads, is left out. Returns how
 * many were named. */
size_t pycode_name_captures(struct pycode *c, const uint64_t *codes, size_t n,
                            void (*named)(void *arg, uint64_t code, uint64_t ident), void *arg);

/* Whether the last pycode_symbolize named every frame for good: each from the entry filled for
 * its capture's identity, none cut by `max`, none unreadable or freed, no per-thread bytecode
 * copy to look up (free-threaded builds). Then the same raw chain names the same frames in any
 * later sample, and a caller may remember the result (the collector's sample cache). */
bool pycode_final(const struct pycode *c);
/* Whether the root-most frame the last pycode_symbolize named is "<unreadable>": a chain that
 * ends there (no caller) may end on bytes of no one instant, not at the thread's root. */
bool pycode_root_unread(const struct pycode *c);

#endif
