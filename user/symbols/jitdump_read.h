/*
 * Defensive reader of perf jitdump files (jit-PID.dump), for naming JIT addresses and finding
 * their .eh_frame. It trusts nothing in the input: every length is checked against the
 * buffer, unknown records are skipped, and a truncated file yields every complete record
 * before the damage plus an error code. Layout: jitdump/jitdump_format.h.
 */
#ifndef PYEBPF_JITDUMP_READ_H
#define PYEBPF_JITDUMP_READ_H

#include <stddef.h>
#include <stdint.h>

struct jitdump_read_line {
    uint64_t addr; /* absolute */
    int32_t line;
    int32_t discrim;
    char *file;
};

struct jitdump_read_region {
    uint64_t addr; /* code_addr */
    uint64_t size; /* code_size */
    uint64_t index;
    uint64_t timestamp;
    uint32_t pid, tid;
    char *name;
    /* From the UNWINDING_INFO record before this load (NULL/0 if none): .eh_frame bytes
     * (meant to be loaded at addr + ALIGN8(size)) and the .eh_frame_hdr after them. */
    uint8_t *eh_frame;
    size_t eh_frame_size;
    uint8_t *eh_frame_hdr;
    size_t eh_frame_hdr_size;
    uint64_t mapped_size;
    /* From the DEBUG_INFO record before this load. */
    struct jitdump_read_line *lines;
    size_t nlines;
};

struct jitdump_read_dump {
    uint32_t version, elf_mach, pid;
    uint64_t timestamp, flags;
    struct jitdump_read_region *regions; /* in file order */
    size_t nregions;
    size_t nmoves;   /* CODE_MOVE records seen (not applied) */
    size_t nunknown; /* records of unknown id skipped */
    int closed;      /* a CODE_CLOSE was seen */
    size_t consumed; /* bytes of the input that parsed as whole records */
};

/* Parses len bytes. Returns 0, or a negative error with *d holding what was complete before it:
 *   -ENODATA          truncated (input ends inside the header or a record)
 *   -EBADMSG          a record's sizes contradict each other or the input
 *   -EPROTONOSUPPORT  written with the other byte order (byte-swapped magic)
 *   -EINVAL           not a jitdump file (magic), or unknown version / header size
 *   -ENOMEM
 * *d must be freed with jitdump_read_free in every case. */
int jitdump_read_parse(const void *buf, size_t len, struct jitdump_read_dump *d);
/* Reads the whole file and parses it (same returns, plus open/read errors). */
int jitdump_read_file(const char *path, struct jitdump_read_dump *d);
void jitdump_read_free(struct jitdump_read_dump *d);
/* One line describing an error code of jitdump_read_parse. */
const char *jitdump_read_strerror(int err);

/* The region covering addr; the most recently loaded wins where regions were reused. NULL if
 * none. Linear in the number of regions. */
const struct jitdump_read_region *jitdump_read_find(const struct jitdump_read_dump *d, uint64_t addr);

#endif
