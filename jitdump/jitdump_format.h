/*
 * perf jitdump file format (jit-PID.dump), as read by `perf inject --jit`.
 *
 * Shared by the writer (jitdump/jitdump.c) and the collector's reader (user/symbols/jitdump_read.c): the
 * format is this header. All fields are little-endian on the machines we support (the writer
 * uses host order; a reader meeting the byte-swapped magic rejects the file), packed, with
 * timestamps in CLOCK_MONOTONIC nanoseconds (perf record -k 1).
 *
 *   file:  [file header][record][record]...[CODE_CLOSE]
 *
 * Every record starts with the same prefix; total_size covers the prefix and everything after
 * it, so a reader skips records it does not know. For each region the writer emits, in order:
 *
 *   [DEBUG_INFO]      optional: line table of the next CODE_LOAD
 *   [UNWINDING_INFO]  optional: .eh_frame + .eh_frame_hdr of the next CODE_LOAD
 *   [CODE_LOAD]       name and code bytes
 */
#ifndef PYJIT_JITDUMP_FORMAT_H
#define PYJIT_JITDUMP_FORMAT_H

#include <stdint.h>

#define JITDUMP_MAGIC         0x4A695444u /* "JiTD" read as a little-endian u32 */
#define JITDUMP_MAGIC_SWAPPED 0x4454694Au /* written by a machine of the other byte order */
#define JITDUMP_VERSION       1u

/* File header flags (perf: JITDUMP_FLAGS_ARCH_TIMESTAMP would mean TSC timestamps). */
#define JITDUMP_FLAGS_ARCH_TIMESTAMP (1ull << 0)

enum jitdump_record_id {
    JITDUMP_CODE_LOAD = 0,
    JITDUMP_CODE_MOVE = 1,
    JITDUMP_CODE_DEBUG_INFO = 2,
    JITDUMP_CODE_CLOSE = 3,
    JITDUMP_CODE_UNWINDING_INFO = 4,
    JITDUMP_CODE_MAX,
};

/*
 * File header, 40 bytes:
 *
 *   0      4        8           12         16     20     24          32      40
 *   +------+--------+-----------+----------+------+------+-----------+-------+
 *   |magic |version |total_size |elf_mach  |pad1  |pid   |timestamp  |flags  |
 *   +------+--------+-----------+----------+------+------+-----------+-------+
 *
 * total_size is the size of this header (records follow at that offset).
 */
struct jitdump_file_header {
    uint32_t magic;
    uint32_t version;
    uint32_t total_size;
    uint32_t elf_mach;
    uint32_t pad1;
    uint32_t pid;
    uint64_t timestamp;
    uint64_t flags;
} __attribute__((packed));
_Static_assert(sizeof(struct jitdump_file_header) == 40, "jitdump file header is 40 bytes");

/*
 * Record prefix, 16 bytes:
 *
 *   0     4           8           16
 *   +-----+-----------+-----------+
 *   |id   |total_size |timestamp  |
 *   +-----+-----------+-----------+
 */
struct jitdump_record_prefix {
    uint32_t id;
    uint32_t total_size;
    uint64_t timestamp;
} __attribute__((packed));
_Static_assert(sizeof(struct jitdump_record_prefix) == 16, "jitdump record prefix is 16 bytes");

/*
 * CODE_LOAD, 56 bytes, then the name (NUL-terminated), then code_size bytes of code and
 * nothing else: perf finds the code at record + total_size - code_size.
 *
 *   0        16    20    24    32         40         48          56
 *   +--------+-----+-----+-----+----------+----------+-----------+------//------+----//----+
 *   |prefix  |pid  |tid  |vma  |code_addr |code_size |code_index |name ... \0   | code     |
 *   +--------+-----+-----+-----+----------+----------+-----------+------//------+----//----+
 *
 * code_index must be unique in a file: perf names its synthesised object jitted-PID-INDEX.so.
 */
struct jitdump_code_load {
    struct jitdump_record_prefix p;
    uint32_t pid;
    uint32_t tid;
    uint64_t vma;
    uint64_t code_addr;
    uint64_t code_size;
    uint64_t code_index;
} __attribute__((packed));
_Static_assert(sizeof(struct jitdump_code_load) == 56, "CODE_LOAD fixed part is 56 bytes");

/*
 * CODE_MOVE, 64 bytes (never written by libpyjit; readers skip it):
 *
 *   0        16    20    24    32             40             48         56          64
 *   +--------+-----+-----+-----+--------------+--------------+----------+-----------+
 *   |prefix  |pid  |tid  |vma  |old_code_addr |new_code_addr |code_size |code_index |
 *   +--------+-----+-----+-----+--------------+--------------+----------+-----------+
 */
struct jitdump_code_move {
    struct jitdump_record_prefix p;
    uint32_t pid;
    uint32_t tid;
    uint64_t vma;
    uint64_t old_code_addr;
    uint64_t new_code_addr;
    uint64_t code_size;
    uint64_t code_index;
} __attribute__((packed));
_Static_assert(sizeof(struct jitdump_code_move) == 64, "CODE_MOVE is 64 bytes");

/*
 * CODE_DEBUG_INFO, 32 bytes, then nr_entry entries of 16 bytes + a NUL-terminated file name:
 *
 *   0        16         24         32
 *   +--------+----------+----------+-------//-------+-------//-------+
 *   |prefix  |code_addr |nr_entry  | entry 0        | entry 1  ...   |
 *   +--------+----------+----------+-------//-------+-------//-------+
 *
 *   entry:  0      8        12        16
 *           +------+--------+---------+-----//-----+
 *           |addr  |lineno  |discrim  |name ... \0 |
 *           +------+--------+---------+-----//-----+
 *
 * addr is absolute. perf 6.1 reads the last entry as the end of the line sequence, and does
 * not understand the "\xff\0" same-name shorthand of the specification: see docs/jitdump.md.
 */
struct jitdump_debug_entry {
    uint64_t addr;
    int32_t lineno;
    int32_t discrim;
} __attribute__((packed));
_Static_assert(sizeof(struct jitdump_debug_entry) == 16, "debug entry fixed part is 16 bytes");

struct jitdump_debug_info {
    struct jitdump_record_prefix p;
    uint64_t code_addr;
    uint64_t nr_entry;
} __attribute__((packed));
_Static_assert(sizeof(struct jitdump_debug_info) == 32, "DEBUG_INFO fixed part is 32 bytes");

/*
 * CODE_UNWINDING_INFO, 40 bytes, then unwinding_size bytes: the .eh_frame section first and
 * the .eh_frame_hdr (eh_frame_hdr_size bytes) last. perf maps mapped_size bytes after the code
 * (padded to 8) for the synthesised object; it ignores the record when mapped_size is 0.
 *
 *   0        16               24                  32            40
 *   +--------+----------------+-------------------+-------------+----//----+---//---+
 *   |prefix  |unwinding_size  |eh_frame_hdr_size  |mapped_size  |.eh_frame |hdr     |
 *   +--------+----------------+-------------------+-------------+----//----+---//---+
 */
struct jitdump_unwinding_info {
    struct jitdump_record_prefix p;
    uint64_t unwinding_size;
    uint64_t eh_frame_hdr_size;
    uint64_t mapped_size;
} __attribute__((packed));
_Static_assert(sizeof(struct jitdump_unwinding_info) == 40, "UNWINDING_INFO fixed part is 40 bytes");

/* CODE_CLOSE is a bare prefix. */

#define JITDUMP_ALIGN8(x) (((x) + 7u) & ~(uint64_t)7u)

#endif
