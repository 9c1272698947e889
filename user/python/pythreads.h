/*
 * pythreads — the threading.Thread name of a Python thread, read from the target's memory, for
 * CPython 3.11–3.13 (3.14 and later set the OS thread name to it themselves):
 *
 *   tstate->thread_id ──────────────────────────────┐ (the key of threading._active)
 *   interp->modules["threading"] → md_dict["_active"][thread_id] → Thread → "_name" → str
 *
 * The dict threading._active is found once per process (sys.modules and the module's dict hold
 * hundreds of keys: 200 threads looked it up in 45 % of the collector's CPU); the caller keeps
 * its address. Dicts are read whole (keys header, entries), str keys compared by content; the Thread's
 * attributes sit in its managed values (3.11, 3.12), its inline values (3.13) or, once
 * materialised, its own dict. Offsets from the DWARF of pyenv's 3.11.7, 3.12.1 and 3.13.0.
 */
#ifndef PYEBPF_PYTHREADS_H
#define PYEBPF_PYTHREADS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/pyrt.h"

/* The name of the thread whose PyThreadState is at `tstate` in process `pid`, as ASCII into
 * out[size]. *active: the address of threading._active found before (0: not yet), set when it
 * is found; a thread missing from it has it looked up again. 0, -ENOTSUP (a version this reader
 * does not cover), -ENOENT (no threading module, or the thread is not in threading._active, or
 * the name is not ASCII), or -errno of a read. */
int pythreads_name(const struct pyrt *rt, pid_t pid, uint64_t tstate, uint64_t *active, char *out,
                   size_t size);

#endif
