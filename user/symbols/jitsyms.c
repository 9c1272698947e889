/*
 * jitsyms — JIT regions from the target's jitdump and perf map. A file whose size and mtime did
 * not change is not re-read; a changed one is read again and its old copy freed once the table is
 * rebuilt (the caller then forgets cached rows of the old CFI tables). Names are interned, so
 * those handed out stay valid until jitsyms_free.
 */
#include "symbols/jitsyms.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jitdump_format.h"
#include "symbols/jitdump_read.h"
#include "symbols/perfmap_read.h"
#include "symbols/strpool.h"

struct source {
    char *path;
    off_t size;
    struct timespec mtime;
    unsigned gen; /* 0: loaded explicitly, always in the table */
    bool is_dump;
    bool stale; /* replaced by a newer read of the same file */
    struct jitdump_read_dump dump;
    struct cfi_read_table *tables; /* one per dump region (size 0 when it has no unwinding info) */
    struct perfmap_read_table pm;
};

struct jitsyms {
    struct strpool names;
    bool dirty; /* a file was read since the table was built */
    struct source **src;
    size_t nsrc;
    unsigned gen;
    struct jitsym *v;
    size_t n;
    struct jitsym *extra; /* regions published elsewhere (jitsyms_set_extra) */
    size_t nextra;
    uint64_t names_gen; /* bumped when a rebuild names some address differently */
};

int jitsyms_new(struct jitsyms **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : -ENOMEM;
}

static void source_free(struct source *s)
{
    if (s->is_dump) {
        for (size_t i = 0; s->tables && i < s->dump.nregions; i++)
            if (s->tables[i].data)
                cfi_read_free(&s->tables[i]);
        free(s->tables);
        jitdump_read_free(&s->dump);
    } else {
        perfmap_read_free(&s->pm);
    }
    free(s->path);
    free(s);
}

/* CFI of one region: .eh_frame at code + ALIGN8(size), its header right after (the layout perf
 * gives the synthesised object, and the one the writer encodes for). */
static void region_cfi(struct cfi_read_table *t, const struct jitdump_read_region *r)
{
    if (!r->eh_frame || !r->eh_frame_size)
        return;
    uint64_t eh = r->addr + JITDUMP_ALIGN8(r->size);
    if (cfi_read_init(t, r->eh_frame, r->eh_frame_size, eh, false, r->eh_frame_hdr, r->eh_frame_hdr_size,
                      eh + r->eh_frame_size) < 0)
        memset(t, 0, sizeof(*t));
}

static int source_load(struct source *s)
{
    if (!s->is_dump)
        return perfmap_read_file(s->path, &s->pm);
    int err = jitdump_read_file(s->path, &s->dump);
    /* A dump still being written ends mid-record: the complete records are good. */
    if (err && err != -ENODATA) {
        jitdump_read_free(&s->dump);
        return err;
    }
    s->tables = calloc(s->dump.nregions ? s->dump.nregions : 1, sizeof(*s->tables));
    if (!s->tables) {
        jitdump_read_free(&s->dump);
        return -ENOMEM;
    }
    for (size_t i = 0; i < s->dump.nregions; i++)
        region_cfi(&s->tables[i], &s->dump.regions[i]);
    return 0;
}

struct cand {
    struct jitsym sym;
    unsigned prio; /* dump over perf map */
    size_t seq;
};

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->sym.start != y->sym.start)
        return x->sym.start < y->sym.start ? -1 : 1;
    if (x->prio != y->prio)
        return x->prio < y->prio ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool live(const struct jitsyms *j, const struct source *s)
{
    return !s->stale && (!s->gen || s->gen == j->gen);
}

/* Whether candidate a was published after b: perf map < jitdump < the GDB JIT list, then later in
 * its file (a jitdump's records are in the order the JIT wrote them). */
static bool newer(const struct cand *a, const struct cand *b)
{
    return a->prio != b->prio ? a->prio > b->prio : a->seq > b->seq;
}

/* Whether the new table names any address differently from the current one (names are interned:
 * equal names are equal pointers). */
/* Whether every region of the current table is in v unchanged: then no address that had a name
 * lost or changed it, and v only adds regions where there were none. Addresses in memory that JIT
 * regions may cover are never cached unnamed (proc_sym.c), so additions leave every cache valid. */
static bool keeps_names(const struct jitsyms *j, const struct jitsym *v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < j->n; i++) {
        while (k < n && v[k].start < j->v[i].start)
            k++;
        if (k == n || v[k].start != j->v[i].start || v[k].end != j->v[i].end || v[k].name != j->v[i].name)
            return false;
    }
    return true;
}

/* The table: every region of every live source, sorted by start, without overlaps. Where regions
 * overlap (a JIT reused the memory of retired code) the newer one wins: an older region that
 * starts first ends where the newer one starts, one that starts inside a newer one is dropped
 * (its start cannot move: offsets are counted from it). */
static int rebuild(struct jitsyms *j)
{
    size_t total = 0;
    for (size_t i = 0; i < j->nsrc; i++) {
        const struct source *s = j->src[i];
        if (!live(j, s))
            continue;
        total += s->is_dump ? s->dump.nregions : s->pm.n;
    }
    total += j->nextra;
    struct cand *c = calloc(total ? total : 1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    size_t n = 0, seq = 0;
    for (size_t i = 0; i < j->nsrc; i++) {
        const struct source *s = j->src[i];
        if (!live(j, s))
            continue;
        if (s->is_dump) {
            for (size_t k = 0; k < s->dump.nregions; k++) {
                const struct jitdump_read_region *r = &s->dump.regions[k];
                const struct cfi_read_table *t = s->tables[k].data ? &s->tables[k] : NULL;
                c[n++] = (struct cand){{r->addr, r->addr + r->size, r->name, t, 0}, 1, seq++};
            }
        } else {
            for (size_t k = 0; k < s->pm.n; k++) {
                const struct perfmap_read_entry *e = &s->pm.v[k];
                c[n++] = (struct cand){{e->start, e->start + e->size, e->name, NULL, 0}, 0, seq++};
            }
        }
    }
    for (size_t k = 0; k < j->nextra; k++)
        c[n++] = (struct cand){j->extra[k], 2, seq++};
    qsort(c, n, sizeof(*c), cmp_cand);
    /* In place: c[0..w) is the table so far, sorted and without overlaps, so only its last
     * region can overlap the next candidate (which starts at or after it). */
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i].sym.end <= c[i].sym.start)
            continue;
        if (w && c[w - 1].sym.end > c[i].sym.start) {
            if (!newer(&c[i], &c[w - 1]))
                continue;
            c[w - 1].sym.end = c[i].sym.start;
            if (c[w - 1].sym.end <= c[w - 1].sym.start)
                w--; /* same start: replaced */
        }
        c[w++] = c[i];
    }
    struct jitsym *v = calloc(w ? w : 1, sizeof(*v));
    if (!v) {
        free(c);
        return -ENOMEM;
    }
    for (size_t i = 0; i < w; i++) {
        v[i] = c[i].sym;
        if (!(v[i].name = strpool_intern(&j->names, v[i].name))) {
            free(c);
            free(v);
            return -ENOMEM;
        }
    }
    free(c);
    if (!keeps_names(j, v, w))
        j->names_gen++;
    free(j->v);
    j->v = v;
    j->n = w;
    return 0;
}

/* Adds (or reuses, when unchanged) the source at path for generation gen. The path is a root's
 * `root_len` bytes then an absolute path: with root_fd >= 0 (that root opened) its stat starts
 * there. */
static int add_source(struct jitsyms *j, const char *path, int root_fd, size_t root_len, bool is_dump,
                      unsigned gen)
{
    struct stat st;
    if ((root_fd >= 0 ? fstatat(root_fd, path + root_len + 1, &st, 0) : stat(path, &st)) < 0)
        return -errno;
    for (size_t i = j->nsrc; i-- > 0;) {
        struct source *s = j->src[i];
        if (s->stale || s->is_dump != is_dump || strcmp(s->path, path))
            continue;
        if (s->size == st.st_size && s->mtime.tv_sec == st.st_mtim.tv_sec &&
            s->mtime.tv_nsec == st.st_mtim.tv_nsec) {
            if (s->gen)
                s->gen = gen;
            return 0;
        }
        s->stale = true; /* changed: read again below, the old copy goes after the rebuild */
    }
    void *grown = realloc(j->src, (j->nsrc + 1) * sizeof(*j->src));
    if (!grown)
        return -ENOMEM;
    j->src = grown;
    struct source *s = calloc(1, sizeof(*s));
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return -ENOMEM;
    }
    s->is_dump = is_dump;
    s->size = st.st_size;
    s->mtime = st.st_mtim;
    s->gen = gen;
    int err = source_load(s);
    if (err) {
        free(s->path);
        free(s);
        return err;
    }
    j->src[j->nsrc++] = s;
    j->dirty = true;
    return 0;
}

/* Frees the sources the table no longer uses. */
static void prune(struct jitsyms *j)
{
    size_t w = 0;
    for (size_t i = 0; i < j->nsrc; i++) {
        if (live(j, j->src[i]))
            j->src[w++] = j->src[i];
        else
            source_free(j->src[i]);
    }
    j->nsrc = w;
}

/* Rebuilds the table when a file was read or went away: 1, else 0 (nothing to do), or -ENOMEM. */
static int finish(struct jitsyms *j)
{
    for (size_t i = 0; i < j->nsrc; i++)
        j->dirty |= !live(j, j->src[i]);
    if (!j->dirty)
        return 0;
    int err = rebuild(j);
    if (err)
        return err;
    prune(j);
    j->dirty = false;
    return 1;
}

int jitsyms_load_dump(struct jitsyms *j, const char *path)
{
    int err = add_source(j, path, -1, 0, true, 0);
    return err ? err : finish(j);
}

int jitsyms_load_perfmap(struct jitsyms *j, const char *path)
{
    int err = add_source(j, path, -1, 0, false, 0);
    return err ? err : finish(j);
}

int jitsyms_load(struct jitsyms *j, pid_t pid, const struct maps *maps, const char *root, int root_fd)
{
    char want[32], path[4200];
    snprintf(want, sizeof(want), "jit-%d.dump", (int)pid);
    j->gen++;
    for (size_t i = 0; i < maps->n; i++) {
        const struct map_entry *e = &maps->v[i];
        if (!maps_is_file(e) || strcmp(maps_basename(e->path), want))
            continue;
        if (i && !strcmp(maps->v[i - 1].path, e->path))
            continue;
        snprintf(path, sizeof(path), "%s%s", root, e->path);
        int err = add_source(j, path, root_fd, strlen(root), true, j->gen);
        if (err == -ENOMEM)
            return err;
    }
    snprintf(path, sizeof(path), "%s/tmp/perf-%d.map", root, (int)pid);
    if (add_source(j, path, root_fd, strlen(root), false, j->gen) == -ENOMEM)
        return -ENOMEM;
    return finish(j);
}

int jitsyms_set_extra(struct jitsyms *j, const struct jitsym *v, size_t n)
{
    struct jitsym *copy = NULL;
    if (n && !(copy = malloc(n * sizeof(*copy))))
        return -ENOMEM;
    if (n)
        memcpy(copy, v, n * sizeof(*copy));
    free(j->extra);
    j->extra = copy;
    j->nextra = n;
    j->dirty = true;
    return finish(j);
}

struct jitsym *jitsyms_find(const struct jitsyms *j, uint64_t addr)
{
    size_t lo = 0, hi = j->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (j->v[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo && addr < j->v[lo - 1].end)
        return &j->v[lo - 1];
    return NULL;
}

size_t jitsyms_count(const struct jitsyms *j)
{
    return j->n;
}

size_t jitsyms_sources(const struct jitsyms *j)
{
    return j->nsrc;
}

uint64_t jitsyms_names_gen(const struct jitsyms *j)
{
    return j->names_gen;
}

void jitsyms_free(struct jitsyms *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->nsrc; i++)
        source_free(j->src[i]);
    free(j->src);
    free(j->v);
    free(j->extra);
    strpool_free(&j->names);
    free(j);
}
