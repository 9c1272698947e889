/*
 * perf jitdump writer (jit-PID.dump) and perf map writer (perf-PID.map).
 * On-disk layout: jitdump_format.h (shared with the collector's reader in user/).
 */
#ifndef PYJIT_JITDUMP_H
#define PYJIT_JITDUMP_H

#include <stddef.h>
#include <stdint.h>

#include "pyjit.h"

struct jitdump;

/* Creates DIR/jit-PID.dump (O_CREAT|O_EXCL|O_NOFOLLOW, 0600), writes the header and maps the
 * first page PROT_READ|PROT_EXEC so perf records where it is. */
int jitdump_open(struct jitdump **out, const char *dir, enum pyjit_arch arch);
/* DEBUG_INFO (if r has lines), UNWINDING_INFO (from r's unwind description), CODE_LOAD. */
int jitdump_code_load(struct jitdump *jd, const struct pyjit_region *r);
/* Bytes perf's synthesised object for a region of code_size occupies after the code start. */
size_t jitdump_stride(const struct jitdump *jd, size_t code_size);
const char *jitdump_path(const struct jitdump *jd);
/* Writes CODE_CLOSE, unmaps and closes. */
void jitdump_close(struct jitdump *jd);

struct perfmap;
/* Opens DIR/perf-PID.map (O_APPEND|O_NOFOLLOW|O_CLOEXEC, 0600). */
int perfmap_open(struct perfmap **out, const char *dir);
int perfmap_write(struct perfmap *pm, uint64_t addr, uint64_t size, const char *name);
void perfmap_close(struct perfmap *pm);

#endif
