/*
 * pythreads — the threading.Thread name of a Python thread, read from the target's memory, for
 * CPython 3.11–3.13 (3.14 and later set the OS thread name to it themselves):
 *
 *   tstate->thread_id ──────────────────────────────┐ (the key of threading._active)
 *   interp->modules["threading"] → md_dict["_active"][thread_id] → Thread → "_name" → str
 *
 * The dict threading._active is found once per process (sys.modules and the module's dict hold
 * hundreds of keys: 200 threads looked it up in 45 % of the collector's CPU). A pass reads it
 * whole and the names of all its Threads at once, a batched read per step (200 threads named one
 * by one, ~13 reads each, were 17 % of the collector's first second); a thread the pass saw is
 * then named once the dict's keys object and the thread's entry are seen to hold the same Thread
 * still (a thread that ended may have left its ident to a new one): one call reads them for every
 * thread of a sample taken before it (a drain's, a naming round's), and one it did not see (a
 * thread started since) makes a new pass. Dicts are read whole (keys header,
 * entries), str keys compared by content; the Thread's attributes sit in its managed values
 * (3.11, 3.12), its inline values (3.13) or, once materialised, its own dict. Offsets from the
 * DWARF of pyenv's 3.11.7, 3.12.1 and 3.13.0.
 */
#ifndef PYEBPF_PYTHREADS_H
#define PYEBPF_PYTHREADS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/pyrt.h"

/* What a process's thread names were read from, kept between calls (NULL at first). */
struct pythreads;

/* The name of the thread whose PyThreadState is at `tstate` in process `pid`, as ASCII into
 * out[size]. `ident`: the state's thread_id (threading.get_ident()) when the caller has it, 0 to
 * read it. `since`: the instant (monotime_ns) the name must hold at or after: the thread's sample's.
 * *pt: the reader's state for this process, made at the first call (pythreads_free).
 * 0, -ENOTSUP (a version this reader does not cover), -ENOENT (no threading module, or the
 * thread is not in threading._active, or the name is not ASCII or longer than 63 characters or
 * than out), or -errno of a read. */
int pythreads_name(const struct pyrt *rt, pid_t pid, uint64_t tstate, uint64_t ident, uint64_t since,
                   struct pythreads **pt, char *out, size_t size);

void pythreads_free(struct pythreads *pt);

#endif
