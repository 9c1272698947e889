/*
 * GDB JIT interface layouts (gdb manual, "JIT Compilation Interface"; gdb/jit.c), as a process
 * holds them in its memory.
 *
 * Shared by the writer (jitdump/gdbjit.c, which registers images in its own process) and the
 * collector's reader (user/symbols/gdbjit_read.c, which walks another process's list): the format
 * is this header. Pointers are the target's addresses; the reader, running on the same machine
 * type (LP64), reads the structs as they are and never follows a pointer in its own memory.
 *
 *   __jit_debug_descriptor {version, action_flag, relevant_entry, first_entry}
 *        └─first─▶ jit_code_entry {next, prev, symfile_addr, symfile_size} ─next─▶ ... NULL
 *                                              └─▶ in-memory ELF image (symfile_size bytes)
 *
 *   jit_code_entry (32 bytes)               jit_descriptor (24 bytes)
 *   +0  next          entry *               +0   version         u32 (1)
 *   +8  prev          entry *               +4   action_flag     u32 (0 none, 1 reg, 2 unreg)
 *   +16 symfile_addr  const char *          +8   relevant_entry  entry *
 *   +24 symfile_size  u64                   +16  first_entry     entry *
 */
#ifndef PYJIT_GDBJIT_FORMAT_H
#define PYJIT_GDBJIT_FORMAT_H

#include <stdint.h>

#define GDBJIT_VERSION 1u

enum gdbjit_action { GDBJIT_NOACTION = 0, GDBJIT_REGISTER = 1, GDBJIT_UNREGISTER = 2 };

struct jit_code_entry {
    struct jit_code_entry *next, *prev;
    const char *symfile_addr;
    uint64_t symfile_size;
};

struct jit_descriptor {
    uint32_t version;
    uint32_t action_flag;
    struct jit_code_entry *relevant_entry;
    struct jit_code_entry *first_entry;
};

_Static_assert(sizeof(struct jit_code_entry) == 32, "jit_code_entry layout");
_Static_assert(sizeof(struct jit_descriptor) == 24, "jit_descriptor layout");

#endif
