/*
 * pycode — code object cache and frame symbolisation for pystack (internal to it).
 *
 *   code address ──▶ entry {header bytes, qualname, filename, firstlineno, line table, id}
 *                     state EMPTY → (header read, ob_type is PyCode_Type) → HEADER → FILLED
 *   (entry id, instruction offset) ──▶ profile frame index
 *
 * An entry is trusted for one sample after its header (ob_type .. co_linetable, ~136 bytes) was
 * read again and found byte-identical; a different header means the address now holds another
 * object: the entry is refilled under a new id, so finished frames of the old one never match.
 */
#ifndef PYEBPF_PYCODE_H
#define PYEBPF_PYCODE_H

#include "pystack.h"

struct pycode;

/* trust_ns: an entry validated less than this long ago is used without a header re-read
 * (0: validate in every sample that uses it). */
int pycode_new(struct pycode **out, const struct pyrt *rt, struct remote *r, struct profile *prof,
               struct pystack_stats *st, uint64_t trust_ns);
void pycode_free(struct pycode *c);

/* Starts a sample at `now_ns` (CLOCK_MONOTONIC): validations of earlier samples no longer count
 * (unless within the trust window). */
void pycode_begin(struct pycode *c, uint64_t now_ns);

/* Entries validated up to now_ns are no longer trusted: the next sample re-reads their headers. */
void pycode_distrust(struct pycode *c, uint64_t now_ns);

/* A header of code object `addr` read in this sample elsewhere (the predicted batch). */
void pycode_header(struct pycode *c, uint64_t addr, const uint8_t *hdr);

/* True when `addr` was validated in this sample (or within the trust window). */
bool pycode_checked(const struct pycode *c, uint64_t addr);

/* Symbolises raw frames leaf first (shims dropped, entry flags set); `complete` says the chain
 * reached its root (the root-most frame then ends an eval-loop call). Returns frames written. */
int pycode_symbolize(struct pycode *c, const struct pystack_raw *raw, size_t n, struct pystack_frame *out,
                     size_t max, bool complete);

#endif
