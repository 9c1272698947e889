/*
 * jitsyms — the JIT regions a target published: its jit-PID.dump (found through the target's
 * own mapping of it, as perf does) with the .eh_frame of each region from UNWINDING_INFO, and
 * /tmp/perf-PID.map (names only). Regions are sorted by start and never overlap: where two
 * publications cover the same address (a JIT retired code and reused its memory), the newer one
 * wins — the later record of a jitdump, the later line of a perf map at the same start — and a
 * jitdump region wins over a perf map line. An older region that starts before a newer one ends
 * where that one starts; an older one that starts inside a newer one is dropped.
 */
#ifndef PYEBPF_JITSYMS_H
#define PYEBPF_JITSYMS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/maps.h"
#include "unwind/cfi_read.h"

struct jitsym {
    uint64_t start, end;
    const char *name;
    const struct cfi_read_table *cfi; /* runtime addresses (bias 0); NULL when none */
    uint8_t shape;                    /* for the caller: enum tramp_shape (TRAMP_UNSEEN: not looked at) */
};

struct jitsyms;

int jitsyms_new(struct jitsyms **out);
/* (Re)reads the target's publications. `maps` is the target's current mappings (to find the
 * dump file); `root` is "/proc/PID/root" or "" (paths are opened under it), `root_fd` that root
 * opened (O_PATH), where each file's stat starts, or -1 (the path is looked up). Names handed out stay
 * valid until jitsyms_free; CFI tables of files that changed or went away are freed. Returns 1 when
 * the table changed (forget anything keyed by regions or their CFI tables), 0 when every file was
 * unchanged (one stat each; also when the target published nothing), or -ENOMEM. */
int jitsyms_load(struct jitsyms *j, pid_t pid, const struct maps *maps, const char *root, int root_fd);
/* Adds one jitdump file or perf map explicitly (tests, offline use); same returns. */
int jitsyms_load_dump(struct jitsyms *j, const char *path);
int jitsyms_load_perfmap(struct jitsyms *j, const char *path);
/* Regions published by other means (CPython's GDB JIT list, read by gdbjit_read), taking part in
 * the table with the highest priority: the array is copied (names are interned), the CFI tables
 * pointed to must stay valid until the next call or jitsyms_free. n = 0 removes them. Same
 * returns as jitsyms_load. */
int jitsyms_set_extra(struct jitsyms *j, const struct jitsym *v, size_t n);
/* The region holding addr, or NULL. O(log n). */
struct jitsym *jitsyms_find(const struct jitsyms *j, uint64_t addr);
size_t jitsyms_count(const struct jitsyms *j);
/* Files read (jitdump, perf map): 0 while the target has published nothing in a file. */
size_t jitsyms_sources(const struct jitsyms *j);
/* Changes whenever a load or jitsyms_set_extra leaves some address named differently (a region
 * added, gone, moved or renamed). A change the return values report without this one only moved
 * CFI tables: names handed out stay right. */
uint64_t jitsyms_names_gen(const struct jitsyms *j);
void jitsyms_free(struct jitsyms *j);

#endif
