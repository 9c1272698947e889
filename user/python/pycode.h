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

#define PYCODE_QUAL_SIZE 16 /* a qualname's length and hash words, read at the str's length */

/* A header of code object `addr` read in this sample elsewhere (the predicted batch), with the
 * PYCODE_QUAL_SIZE bytes read at pycode_qual_addr in the same call (NULL: not read). */
void pycode_header(struct pycode *c, uint64_t addr, const uint8_t *hdr, const uint8_t *qual);

/* Where the qualname words of the filled entry for `addr` are to be read; 0: none. */
uint64_t pycode_qual_addr(const struct pycode *c, uint64_t addr);

/* True when `addr` (a remote read's code object) was validated in this sample. */
bool pycode_checked(const struct pycode *c, uint64_t addr);

/* Symbolises raw frames leaf first (shims dropped, entry flags set); `complete` says the chain
 * reached its root (the root-most frame then ends an eval-loop call). Returns frames written. */
int pycode_symbolize(struct pycode *c, const struct pystack_raw *raw, size_t n, struct pystack_frame *out,
                     size_t max, bool complete);

#endif
