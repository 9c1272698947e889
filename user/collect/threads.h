/*
 * threads — the root frame of each sampled thread, "thread TID (NAME)", found by tid in an
 * open-addressing table (power-of-two size, at most half full). NAME is the threading.Thread
 * name when it could be read (3.11-3.13: python/pythreads.h; 3.14+ name the OS thread
 * themselves), else the OS name (comm). A thread whose comm changed (prctl, exec) gets a new
 * frame; one whose Python name is read after its first samples has its frame renamed, so those
 * samples carry the name too (a blocked thread may have only a few). A missing name is looked for
 * at the thread's records and, for 3 s from its first look, whenever its next look is due
 * (threads_name_pending, after the drains): a thread blocked from its first records on has no
 * record once its name is readable. --tid and --thread-name decide which
 * threads are kept, by tid and by that NAME.
 */
#ifndef PYEBPF_THREADS_H
#define PYEBPF_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <regex.h>

#include "profile/profile.h"
#include "python/pystack.h"
#include "sample.h"

struct thread {
    uint32_t tid; /* 0: empty slot */
    uint32_t pid; /* its process (0: not known) */
    uint32_t frame;
    bool keep;             /* --tid and --thread-name let it through */
    bool pyname_done;      /* its Python name is no longer looked for */
    uint64_t pyname_first; /* when it was first looked for (monotime_ns) */
    uint64_t pyname_next;  /* no look before this time */
    uint64_t pyname_gap;   /* ... after the next miss: doubles from PYNAME_GAP */
    char comm[SAMPLE_COMM_LEN];
    char pyname[48];      /* its threading.Thread name, "" until read */
    uint64_t gil_checked; /* samples that said whether it held the GIL (collect/gil.c) */
    uint64_t gil_held;    /* ... and were taken while it held it */
};

/* Which threads are kept: tids (ntids 0: all) and a name REGEX (NULL: all). */
struct threads_filter {
    const uint32_t *tids;
    size_t ntids;
    const regex_t *name;
};

struct threads {
    struct thread *v;
    size_t n, cap;
    uint64_t name_due; /* the next look for a Python name still missing (UINT64_MAX: none) */
};

int threads_init(struct threads *th);
/* The thread's root frame in `prof`, or a negative errno; *fresh set when the tid is new, *keep
 * when `flt` keeps it. `ps` (NULL: not Python) reads its Python name, as it is at `since` or
 * later (the sample's instant, monotime_ns); pid is its process. */
int64_t threads_frame(struct threads *th, struct profile *prof, uint32_t tid, uint32_t pid, const char *comm,
                      struct pystack *ps, const struct threads_filter *flt, uint64_t since, bool *fresh,
                      bool *keep);
/* Looks again for the Python names of pid's threads not named yet (through `ps`) whose next look
 * is due, or for all of them when `last`; the frames of those found are renamed and `flt` decides
 * again whether they are kept. A thread is otherwise looked at on its records: one blocked from
 * its first records on may have none after its name became readable. */
void threads_name_pending(struct threads *th, struct profile *prof, uint32_t pid, struct pystack *ps,
                          const struct threads_filter *flt, bool last);
/* The thread `tid` already has a frame for, or NULL. */
struct thread *threads_find(struct threads *th, uint32_t tid);
void threads_free(struct threads *th);

#endif
