/*
 * ksyms — kernel symbols from /proc/kallsyms, sorted by address for binary search.
 */
#ifndef PYEBPF_KSYMS_H
#define PYEBPF_KSYMS_H

#include <stdint.h>

struct ksyms;
int ksyms_open(struct ksyms **out);
/* The text symbol at or below `addr` (*offset, when not NULL: addr - its start); NULL below the
 * first one. */
const char *ksyms_lookup(const struct ksyms *k, uint64_t addr, uint64_t *offset);
/* The address of the text symbol named `name` (the lowest, when several share it), for readers
 * of symbolic stacks (/proc/PID/task/TID/stack prints names, never addresses). 0 or -ENOENT. */
int ksyms_addr(const struct ksyms *k, const char *name, uint64_t *addr);
void ksyms_close(struct ksyms *k);

#endif
