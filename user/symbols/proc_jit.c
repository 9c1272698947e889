/*
 * proc_jit — the JIT regions a target published (see proc.h): its jitdump and perf map (read by
 * jitsyms) and the GDB JIT list the collector pointed proc at (read by gdbjit_read, handed to
 * jitsyms), re-read when an address falls in unnamed executable memory and on a timer.
 */
#include "symbols/proc_internal.h"
#include "util/monotime.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A target that published JIT code in a file (or has a GDB JIT list) has its publications
 * looked at again this often (proc_recheck_jit), or JIT_RECHECK_COST times as long as the last
 * read took when that is longer: at most ~2 % of a CPU however large the files grow. */
#define JIT_RECHECK_NS   200000000ull
#define JIT_RECHECK_COST 50

/* Entries of a GDB JIT list followed at most (a list that changes under the reader may loop). */
#define GDBJIT_MAX_ENTRIES (1u << 16)

/* The GDB JIT list, re-read and handed to jitsyms when it changed (its regions' CFI tables then
 * moved; after a failed read, what is left: the list as before, or nothing). Returns what
 * jitsyms_set_extra returns, 0 when there is no list or it is as it was (a 3.15 target with its
 * JIT off: an empty list every 200 ms, which cleared every cached CFI row each time). */
static int load_gdbjit(struct proc *p)
{
    if (!p->gdbjit.descriptor)
        return 0;
    (void)gdbjit_read_list(&p->gdbjit, &p->gdbjit_mem, GDBJIT_MAX_ENTRIES);
    if (!p->gdbjit.changed)
        return 0;
    struct jitsym *v = calloc(p->gdbjit.n ? p->gdbjit.n : 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < p->gdbjit.n; i++) {
        const struct gdbjit_read_region *g = &p->gdbjit.v[i];
        v[i] = (struct jitsym){g->start, g->end, g->name, g->cfi.data ? &g->cfi : NULL, TRAMP_UNSEEN};
    }
    int r = jitsyms_set_extra(p->jit, v, p->gdbjit.n);
    free(v);
    return r;
}

/* Re-reads the JIT publications; tables of replaced files are gone, and with them cached rows.
 * Cached names go (sym_gen) only when some address is named differently now. Schedules the next
 * timed re-check, if the target has anything to re-check. Code nobody published keeps the
 * mappings suspect until a re-read finds something new: its jitdump may be mapped since they
 * were read (a target met before it opened its jitdump), and the unwinder keeps the guess it
 * cached for that code, so it would not ask again. */
int proc_load_jit(struct proc *p)
{
    uint64_t t0 = monotime_ns();
    int r = jitsyms_load(p->jit, p->pid, &p->maps, p->root, p->root_fd);
    if (r >= 0) {
        int r2 = load_gdbjit(p);
        r = r2 < 0 ? r2 : (r > 0 || r2 > 0);
    }
    if (r > 0) {
        p->jit_unknown = false;
        unwind_cache_clear(p->ucache);
        uint64_t g = jitsyms_names_gen(p->jit);
        if (g != p->jit_names_gen) {
            p->jit_names_gen = g;
            p->sym_gen++;
        }
    }
    uint64_t t1 = monotime_ns(), every = (t1 - t0) * JIT_RECHECK_COST;
    if (every < JIT_RECHECK_NS)
        every = JIT_RECHECK_NS;
    p->jit_due_ns = jitsyms_sources(p->jit) || p->gdbjit.descriptor ? t1 + every : UINT64_MAX;
    if (p->jit_unknown)
        proc_suspect(p);
    return r == -ENOMEM ? r : 0;
}

/* Reads the JIT publications again: 1 when some address is named differently now. */
static int load_names(struct proc *p)
{
    uint64_t gen = p->sym_gen;
    int err = proc_load_jit(p);
    return err < 0 ? err : p->sym_gen != gen;
}

/* A re-read the samples asked for (timed, or unnamed code met), counted. Out of line: the
 * callers' inline tests are the per-sample cost. */
static __attribute__((noinline)) int reload(struct proc *p)
{
    p->last_jit_ns = proc_now_ns();
    p->stats.jit_reloads++;
    return load_names(p);
}

int proc_set_gdbjit(struct proc *p, uint64_t descriptor)
{
    if (descriptor == p->gdbjit.descriptor)
        return 0;
    if (p->gdbjit.n) { /* the regions handed to jitsyms go now */
        int r = jitsyms_set_extra(p->jit, NULL, 0);
        unwind_cache_clear(p->ucache);
        if (r < 0)
            return r;
    }
    gdbjit_read_free(&p->gdbjit);
    gdbjit_read_init(&p->gdbjit, descriptor);
    /* any live thread names the address space (the leader may have exited: see use_dir) */
    const char *task = strstr(p->dir, "/task/");
    remote_init(&p->gdbjit_mem, task ? (pid_t)atoi(task + 6) : p->pid);
    return load_names(p);
}

int proc_recheck_jit(struct proc *p, uint64_t now)
{
    if (now < p->jit_due_ns)
        return 0;
    return reload(p);
}

struct jitsym *proc_find_jit(struct proc *p, uint64_t ip, const struct map_entry *e)
{
    struct jitsym *js = jitsyms_find(p->jit, ip);
    /* The kernel's own code (the vdso) is executable memory no file backs, but never a JIT's: a
     * thread waiting with a timeout (CPython's GIL) samples in it, and each new frame there would
     * read the mappings and the publications again (proc_suspect). */
    if (js || !e || (maps_is_file(e) && !e->deleted) || !(e->prot & MAPS_X) || maps_is_kernel_code(e))
        return js;
    if (proc_now_ns() - p->last_jit_ns >= REFRESH_MIN_NS && reload(p) == 0)
        js = jitsyms_find(p->jit, ip);
    if (!js) {
        p->jit_unknown = true;
        proc_suspect(p);
    }
    return js;
}
