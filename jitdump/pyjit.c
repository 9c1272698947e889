/*
 * libpyjit's public API: hands each published region to every sink that is switched on.
 *
 *   pyjit_publish ──► validate (CFI encodes?) ──► gdbjit_add       (PYJIT_SINK_GDB)
 *                                            ├──► jitdump_code_load (PYJIT_SINK_JITDUMP)
 *                                            └──► perfmap_write     (PYJIT_SINK_PERFMAP)
 *
 * A region the CFI encoder refuses is refused by every sink (-EINVAL, nothing written). Any
 * other failure of a sink switches that sink off for good, with one message on stderr (the file
 * sinks print their own for file errors), and the call still succeeds when another sink took
 * the region: the host program keeps running whatever happens to its observers.
 */
#include "pyjit.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfi.h"
#include "gdbjit.h"
#include "jitdump.h"

#if defined(__x86_64__)
#define PYJIT_HOST_ARCH PYJIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PYJIT_HOST_ARCH PYJIT_ARCH_AARCH64
#else
#define PYJIT_HOST_ARCH 0
#endif

struct pyjit {
    pthread_mutex_t lock; /* serialises publish/retire/close; sinks lock their own state too */
    unsigned sinks;       /* PYJIT_SINK_* still on; read without the lock by pyjit_sinks */
    enum pyjit_arch arch;
    uint64_t next_id;
    struct gdbjit *gdb;
    struct jitdump *jd;
    struct perfmap *pm;
};

static const char *sink_name(unsigned sink)
{
    switch (sink) {
    case PYJIT_SINK_GDB:
        return "gdb";
    case PYJIT_SINK_JITDUMP:
        return "jitdump";
    default:
        return "perf map";
    }
}

/* Errors the file sinks have already explained on stderr when they return them. */
static int reported_by_sink(unsigned sink, int err)
{
    if (sink == PYJIT_SINK_GDB)
        return 0;
    return err != -ENOMEM && err != -ENAMETOOLONG && err != -EINVAL && err != -E2BIG;
}

/* Caller holds jit->lock (or owns jit alone). */
static void sink_off(struct pyjit *jit, unsigned sink, int err)
{
    if (!(jit->sinks & sink))
        return;
    __atomic_and_fetch(&jit->sinks, ~sink, __ATOMIC_RELAXED);
    if (!reported_by_sink(sink, err))
        fprintf(stderr, "pyjit: %s: %s; %s output switched off\n", sink_name(sink), strerror(-err),
                sink_name(sink));
}

int pyjit_open(struct pyjit **out, const struct pyjit_options *opt)
{
    static const struct pyjit_options defaults = {.sinks = PYJIT_SINK_GDB};
    if (!out)
        return -EINVAL;
    *out = NULL;
    if (!opt)
        opt = &defaults;
    if (opt->sinks & ~PYJIT_SINK_ALL)
        return -EINVAL;
    enum pyjit_arch arch = opt->arch ? opt->arch : (enum pyjit_arch)PYJIT_HOST_ARCH;
    if (arch != PYJIT_ARCH_X86_64 && arch != PYJIT_ARCH_AARCH64)
        return -EINVAL;

    struct pyjit *jit = calloc(1, sizeof(*jit));
    if (!jit)
        return -ENOMEM;
    pthread_mutex_init(&jit->lock, NULL);
    jit->arch = arch;
    jit->next_id = 1;
    jit->sinks = opt->sinks;

    int err;
    if ((jit->sinks & PYJIT_SINK_GDB) && (err = gdbjit_open(&jit->gdb, arch, opt->gdb_batch)) < 0)
        sink_off(jit, PYJIT_SINK_GDB, err);
    if (jit->sinks & PYJIT_SINK_JITDUMP) {
        /* The option, else $PYEBPF_JITDUMP_DIR, else the current directory: perf inject looks
         * wherever the MMAP record says, and the user who runs perf picks the place. */
        const char *dir = opt->jitdump_dir;
        if (!dir || !*dir)
            dir = getenv("PYEBPF_JITDUMP_DIR");
        if (!dir || !*dir)
            dir = ".";
        if ((err = jitdump_open(&jit->jd, dir, arch)) < 0)
            sink_off(jit, PYJIT_SINK_JITDUMP, err);
    }
    if (jit->sinks & PYJIT_SINK_PERFMAP) {
        const char *dir = opt->perfmap_dir && *opt->perfmap_dir ? opt->perfmap_dir : "/tmp";
        if ((err = perfmap_open(&jit->pm, dir)) < 0)
            sink_off(jit, PYJIT_SINK_PERFMAP, err);
    }
    *out = jit;
    return 0;
}

/* Whether the CFI encoder accepts r: the one check all sinks share. */
static int check_region(enum pyjit_arch arch, const struct pyjit_region *r)
{
    if (!r || !r->code || r->size == 0)
        return -EINVAL;
    struct cfi_buf b = {0};
    size_t cie = cfi_cie(&b, arch);
    uint64_t pc = (uint64_t)(uintptr_t)r->code;
    int err = cfi_fde(&b, cie, arch, r, pc, pc);
    cfi_buf_free(&b);
    return err;
}

int pyjit_publish(struct pyjit *jit, const struct pyjit_region *r, uint64_t *id)
{
    if (!jit)
        return -EINVAL;
    int err = check_region(jit->arch, r);
    if (err)
        return err;

    pthread_mutex_lock(&jit->lock);
    uint64_t my_id = jit->next_id++;
    int first_err = 0;
    if (jit->sinks & PYJIT_SINK_GDB) {
        err = gdbjit_add(jit->gdb, r, my_id);
        if (err == -EINVAL || err == -ERANGE)
            first_err = err; /* this region only (e.g. it overlaps one already published) */
        else if (err)
            sink_off(jit, PYJIT_SINK_GDB, err);
    }
    if (jit->sinks & PYJIT_SINK_JITDUMP) {
        err = jitdump_code_load(jit->jd, r);
        if (err == -EINVAL || err == -E2BIG)
            first_err = first_err ? first_err : err;
        else if (err)
            sink_off(jit, PYJIT_SINK_JITDUMP, err);
    }
    if (jit->sinks & PYJIT_SINK_PERFMAP) {
        err = perfmap_write(jit->pm, (uint64_t)(uintptr_t)r->code, r->size, r->name);
        if (err == -EINVAL)
            first_err = first_err ? first_err : err;
        else if (err)
            sink_off(jit, PYJIT_SINK_PERFMAP, err);
    }
    pthread_mutex_unlock(&jit->lock);
    if (id)
        *id = my_id;
    return first_err;
}

int pyjit_retire(struct pyjit *jit, uint64_t id)
{
    if (!jit)
        return -EINVAL;
    pthread_mutex_lock(&jit->lock);
    int err = 0;
    if (id == 0 || id >= jit->next_id)
        err = -ENOENT;
    else if (jit->sinks & PYJIT_SINK_GDB)
        err = gdbjit_remove(jit->gdb, id);
    /* jitdump and perf map keep history: perf matches samples to loads by time. */
    pthread_mutex_unlock(&jit->lock);
    return err;
}

int pyjit_flush(struct pyjit *jit)
{
    /* Nothing is held back: GDB images are registered and file records written by the call that
     * makes them, so a debugger or profiler that looks at any moment sees every region. */
    return jit ? 0 : -EINVAL;
}

unsigned pyjit_sinks(const struct pyjit *jit)
{
    return jit ? __atomic_load_n(&jit->sinks, __ATOMIC_RELAXED) : 0;
}

size_t pyjit_region_stride(const struct pyjit *jit, size_t code_size)
{
    if (jit && (pyjit_sinks(jit) & PYJIT_SINK_JITDUMP))
        return jitdump_stride(jit->jd, code_size);
    return (code_size + 15) & ~(size_t)15;
}

const char *pyjit_jitdump_path(const struct pyjit *jit)
{
    return jit && (pyjit_sinks(jit) & PYJIT_SINK_JITDUMP) ? jitdump_path(jit->jd) : NULL;
}

void pyjit_close(struct pyjit *jit)
{
    if (!jit)
        return;
    pthread_mutex_lock(&jit->lock);
    gdbjit_close(jit->gdb);
    jitdump_close(jit->jd);
    perfmap_close(jit->pm);
    pthread_mutex_unlock(&jit->lock);
    pthread_mutex_destroy(&jit->lock);
    free(jit);
}
