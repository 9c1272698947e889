/*
 * maps — a parsed /proc/PID/maps: one entry per line, sorted by start (the kernel's order), found
 * by binary search.
 *
 *   7fbf7f041000-7fbf7f197000 r-xp 00026000 fe:00 332835   /usr/lib/x86_64-linux-gnu/libc.so.6
 *   start        end          prot offset   dev   inode    path (may end in " (deleted)")
 */
#ifndef PYEBPF_MAPS_H
#define PYEBPF_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MAPS_R      1u
#define MAPS_W      2u
#define MAPS_X      4u
#define MAPS_SHARED 8u

struct map_entry {
    uint64_t start, end; /* [start, end) */
    uint64_t offset;     /* file offset of start */
    uint64_t inode;
    uint32_t dev_major, dev_minor;
    unsigned prot;    /* MAPS_* bits */
    const char *path; /* "" for anonymous; "[vdso]", "[stack]"...; " (deleted)" stripped */
    bool deleted;     /* the file was unlinked or replaced after it was mapped */
};

struct maps {
    struct map_entry *v;
    size_t n;
    char *text; /* the file's bytes; paths point into it */
};

/* Parses maps text (modified in place and owned by m afterwards; it must be malloc'ed). */
int maps_parse(struct maps *m, char *text);
/* Reads and parses /proc/PID/maps; when that is empty (the leader thread exited: a zombie's maps,
 * mem and root are empty while the other threads run on in the same address space), the maps of a
 * live thread, /proc/PID/task/TID/maps. */
int maps_read(struct maps *m, pid_t pid);
/* maps_read that also says which /proc directory it read ("/proc/PID" or "/proc/PID/task/TID"):
 * the one to take mem and root from as well. */
int maps_read_at(struct maps *m, pid_t pid, char *dir, size_t size);
/* The /proc directory of a thread of pid that is not a zombie: "/proc/PID" while the leader runs.
 * 0, or -ESRCH when every thread has exited. */
int maps_live_dir(pid_t pid, char *dir, size_t size);
/* The entry containing addr, or NULL. O(log n). */
const struct map_entry *maps_find(const struct maps *m, uint64_t addr);
/* Path's last component (the whole path when it has no '/'). */
const char *maps_basename(const char *path);
/* True for paths that name a file (not "", "[heap]", "[vdso]"...). */
bool maps_is_file(const struct map_entry *e);
/* True for the code the kernel maps into every process ("[vdso]", "[vsyscall]", "[uprobes]"):
 * executable memory no file backs that is never a JIT's. */
bool maps_is_kernel_code(const struct map_entry *e);
void maps_free(struct maps *m);

#endif
