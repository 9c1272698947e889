/*
 * tramp — CPython's perf trampolines, which publish no unwinding information: found by their
 * bytes, unwound with CFI written for them here.
 *
 * CPython 3.12 (-X perf) and 3.13 (-X perf_jit) wrap each Python function in a copy of
 *
 *     [f3 0f 1e fa  endbr64]  48 83 ec 08  sub $8,%rsp;  ff d1  call *%rcx;
 *                             48 83 c4 08  add $8,%rsp;  c3    ret
 *
 * 3.12 publishes it only in the perf map (no CFI, no frame pointer), and 3.13's jitdump reaches
 * the file late (CPython buffers it). Two ways in: a JIT region without CFI that holds exactly
 * these bytes, or a return address in executable memory no region names whose preceding bytes
 * are the trampoline's `sub; call`. Code is read from the target's /proc/PID/mem (mem_fd; -1:
 * nothing is recognised).
 */
#ifndef PYEBPF_TRAMP_H
#define PYEBPF_TRAMP_H

#include <stdbool.h>
#include <stdint.h>

#include "unwind/cfi_read.h"

/* What a region's code is, cached by the caller (jitsym.shape): TRAMP_UNSEEN until looked at. */
enum tramp_shape { TRAMP_UNSEEN = 0, TRAMP_OTHER, TRAMP_PLAIN, TRAMP_ENDBR };

#define TRAMP_EH_SIZE 88

struct tramp {
    uint8_t eh[TRAMP_EH_SIZE]; /* .eh_frame of both shapes (tramp.c) */
    struct cfi_read_table cfi; /* over eh */
    bool ok;
    struct {
        uint64_t ret;
        uint8_t shape;
    } anon[256]; /* return addresses in unnamed code: is the caller a trampoline? */
};

void tramp_init(struct tramp *t);
void tramp_free(struct tramp *t);

/* CFI for the JIT region [start, end) that published none, when its code is a trampoline (*shape
 * caches the answer, TRAMP_UNSEEN the first time); *bias is the table's bias. NULL otherwise. */
const struct cfi_read_table *tramp_region_cfi(struct tramp *t, int mem_fd, uint64_t start, uint64_t end,
                                              uint8_t *shape, uint64_t *bias);

/* CFI for the code holding return address `ret`, in executable memory no region names: a
 * trampoline's when the bytes before ret are its `sub; call` (cached per address, so they are
 * read once). NULL otherwise. */
const struct cfi_read_table *tramp_ret_cfi(struct tramp *t, int mem_fd, uint64_t ret, uint64_t *bias);

#endif
