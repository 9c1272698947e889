/*
 * Reader of perf map files (perf-PID.map): lines `START SIZE name`, START and SIZE in hex
 * (with or without 0x). Lines that do not parse are counted and skipped.
 */
#ifndef PYEBPF_PERFMAP_READ_H
#define PYEBPF_PERFMAP_READ_H

#include <stddef.h>
#include <stdint.h>

struct perfmap_read_entry {
    uint64_t start, size;
    char *name;
};

struct perfmap_read_table {
    struct perfmap_read_entry *v; /* sorted by start; for equal starts the later line wins */
    size_t n;
    size_t junk; /* lines skipped as unparsable */
};

/* Parses len bytes (need not be NUL-terminated; a last line without newline counts). 0 or
 * -ENOMEM; *t must be freed with perfmap_read_free. */
int perfmap_read_buf(const char *buf, size_t len, struct perfmap_read_table *t);
/* Reads and parses a file: 0, -errno of open/read, or -ENOMEM. */
int perfmap_read_file(const char *path, struct perfmap_read_table *t);
void perfmap_read_free(struct perfmap_read_table *t);
/* Entry whose [start, start+size) holds addr, or NULL. O(log n). */
const struct perfmap_read_entry *perfmap_read_find(const struct perfmap_read_table *t, uint64_t addr);

#endif
