/*
 * kbtf — the kernel's own BTF (/sys/kernel/btf/vmlinux), read for the few struct offsets the BPF
 * programs take as constants (sampler.c, struct sample_koff).
 *
 *   /sys/kernel/btf/vmlinux ──mmap (6.16+; else one read)──▶ header, types, strings
 *   kbtf_member(k, "task_struct", "se.sum_exec_runtime") ──▶ byte offset, size
 *
 * Why not libbpf's CO-RE: libbpf 1.1 reads the whole 5.5 MB file a page per `read` and indexes
 * all of it before relocating anything, ~50 ms of CPU per start on a 6.18 kernel; the programs
 * need a dozen offsets, which a walk of the mapped file finds in a few ms.
 */
#ifndef PYEBPF_KBTF_H
#define PYEBPF_KBTF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample.h"

struct kbtf {
    const uint8_t *data; /* the file */
    size_t size;
    int mapped;           /* data is a mapping (else malloc'd) */
    const uint8_t *types; /* type section */
    uint32_t types_len;
    const char *strs; /* string section */
    uint32_t strs_len;
    uint32_t *off;        /* type id → offset in types (id 0: void), built as lookups walk */
    uint32_t ntypes, cap; /* ids 1..ntypes walked so far */
    uint32_t pos;         /* where the walk goes on */
    bool bad;             /* the walk met a malformed record */
};

/* path NULL: /sys/kernel/btf/vmlinux. 0, or a negative errno (-EINVAL: not BTF as this reader
 * knows it). Type records are walked only as far as lookups need. */
int kbtf_open(struct kbtf *k, const char *path);
void kbtf_close(struct kbtf *k);

/* The byte offset and size of `member` in struct (or union) `type`: a path of member names
 * joined by '.', each looked up through anonymous structs and unions as C does. -ENOENT when
 * the type or a member is missing, -EINVAL for a bitfield or a malformed record met on the way. */
int kbtf_member(struct kbtf *k, const char *type, const char *member, uint32_t *off, uint32_t *size);

/* The size of struct (or union) `type`, or -ENOENT. */
int kbtf_size(struct kbtf *k, const char *type, uint32_t *size);

/* Every offset of struct sample_koff from the running kernel's BTF. 0; -ENOENT (or another
 * errno) when the file cannot be read; -EPROTO when it is not BTF or lacks a field, named in
 * `missing`. */
int kbtf_sample_offsets(struct sample_koff *o, char *missing, size_t len);

#endif
