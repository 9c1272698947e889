/*
 * proc's state, shared by the files of the module (proc_maps.c, proc_jit.c, proc_sym.c,
 * proc_unwind.c; see proc.h). Nothing outside them includes it.
 */
#ifndef PYEBPF_PROC_INTERNAL_H
#define PYEBPF_PROC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "capture/remote.h"
#include "symbols/elfsym.h"
#include "symbols/gdbjit_read.h"
#include "symbols/jitsyms.h"
#include "util/maps.h"
#include "symbols/proc.h"
#include "symbols/strpool.h"
#include "symbols/tramp.h"
#include "unwind/unwind.h"

enum { MOD_UNLOADED = 0, MOD_OK, MOD_FAILED };

struct mod {
    struct elf_file *file;
    uint64_t bias;
    int state;
};

/* Symbolised addresses, direct-mapped; a refresh or JIT reload bumps `sym_gen`, which empties it. */
#define SYMCACHE_BITS 10
struct symslot {
    uint64_t ip;
    uint64_t gen;
    struct symres r;
};

struct proc {
    pid_t pid;
    char dir[48];             /* /proc/PID, or /proc/PID/task/TID once the leader exited (maps_read_at) */
    char root[64];            /* dir + "/root" */
    int root_fd;              /* root, opened once (O_PATH): the JIT re-checks' stat starts from it */
    struct elfsym_cache *elf; /* the collector's, shared */
    struct maps maps;
    struct mod *mods;         /* parallel to maps.v */
    struct strpool paths;     /* module paths handed out */
    struct elf_file **former; /* files once mapped, one reference each */
    size_t nformer;
    struct jitsyms *jit;
    struct unwind_cache *ucache;
    uint64_t last_refresh_ns, last_jit_ns;
    uint64_t instant_ns;          /* when the addresses looked up were taken (proc_set_instant) */
    uint64_t fruitless_ns;        /* when a re-read for such an address last found nothing new */
    uint64_t jit_due_ns;          /* next timed re-check of the JIT publications; UINT64_MAX: none */
    bool maps_suspect;            /* the re-check at jit_due_ns reads the mappings again (proc_suspect) */
    bool jit_unknown;             /* code met in executable memory nobody published: suspect until
                                     a re-read finds something new */
    uint64_t suspect_wait_ns;     /* after the last read of the mappings, before a suspect re-read */
    uint64_t jit_names_gen;       /* jitsyms_names_gen when sym_gen last followed it */
    const struct map_entry *last; /* the mapping found last: frames cluster in few modules */
    struct proc_stats stats;
    struct symslot syms[1u << SYMCACHE_BITS];
    uint64_t sym_gen; /* starts at 1: zeroed slots never match */
    int mem_fd;       /* /proc/PID/mem, read-only: JIT code shapes, the vDSO */
    struct tramp tramp;
    /* The GDB JIT list (proc_set_gdbjit): regions handed to jitsyms on every read. */
    struct gdbjit_read gdbjit;
    struct remote gdbjit_mem;
};

/* Addresses outside the mappings trigger a re-read at most this often. */
#define REFRESH_MIN_NS 20000000ull

/* The coarse clock of the rate limits (inline: proc_maps.c and proc_jit.c both read it). */
static inline uint64_t proc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A suspect re-read that finds nothing new doubles the wait before the next, up to this: a
 * frame in data (a return address the unwinder made of a data word) stays a frame in data. */
#define SUSPECT_WAIT_MAX_NS 1280000000ull

/* The mappings may be stale (a frame's code in memory they say is not executable, or code in
 * executable memory nobody published): the samples' re-check (proc_recheck) reads them, and the
 * publications, again once suspect_wait_ns has passed since they were last read. */
static inline void proc_suspect(struct proc *p)
{
    p->maps_suspect = true;
    if (p->jit_due_ns > p->last_refresh_ns + p->suspect_wait_ns)
        p->jit_due_ns = p->last_refresh_ns + p->suspect_wait_ns;
}

/* proc_maps.c: the mapping of ip (refreshing once when ip is outside all of them, loading its file on
 * first use), or NULL; *idx is its index in maps.v and mods. */
const struct map_entry *proc_find_map(struct proc *p, uint64_t ip, size_t *idx);

/* proc_jit.c: re-reads the JIT publications (-ENOMEM, else 0), and the region holding ip (which
 * may re-read them first: an address in unnamed executable memory `e` may be code published
 * since the last read). */
int proc_load_jit(struct proc *p);
struct jitsym *proc_find_jit(struct proc *p, uint64_t ip, const struct map_entry *e);

#endif
