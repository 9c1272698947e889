/*
 * proc_maps — one target process: its mappings and the ELF file behind each executable mapping
 * (loaded on first use from the collector's cache, then kept); see proc.h for the other files.
 *
 * Files are opened as the target sees them: /proc/PID/root/PATH (mount namespaces), or
 * /proc/PID/map_files/START-END when the file was deleted or replaced after it was mapped.
 * The vDSO is read from the target's memory (/proc/PID/mem); when that is refused, the
 * collector's own vDSO is used: same kernel, same image.
 *
 * Strings handed out stay valid until proc_close with memory bounded by what is distinct: module
 * paths are interned, JIT names are interned by jitsyms, and files that leave the mappings stay
 * referenced (their symbol names point into them) in a list of former files.
 */
#include "symbols/proc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

static void mods_put(struct mod *mods, size_t n)
{
    for (size_t i = 0; mods && i < n; i++)
        elfsym_put(mods[i].file);
    free(mods);
}

int proc_open(struct proc **out, pid_t pid, struct elfsym_cache *elf)
{
    struct proc *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->pid = pid;
    p->elf = elf;
    p->mem_fd = -1; /* opened by proc_refresh, with root: from the directory the maps came from */
    p->root_fd = -1;
    p->suspect_wait_ns = REFRESH_MIN_NS;
    tramp_init(&p->tramp);
    int err = jitsyms_new(&p->jit);
    if (!err)
        err = unwind_cache_new(&p->ucache, 12);
    if (!err)
        err = proc_refresh(p);
    if (err) {
        proc_close(p);
        return err;
    }
    *out = p;
    return 0;
}

void proc_close(struct proc *p)
{
    if (!p)
        return;
    mods_put(p->mods, p->maps.n);
    maps_free(&p->maps);
    for (size_t i = 0; i < p->nformer; i++)
        elfsym_put(p->former[i]);
    free(p->former);
    strpool_free(&p->paths);
    jitsyms_free(p->jit);
    gdbjit_read_free(&p->gdbjit);
    tramp_free(&p->tramp);
    if (p->mem_fd >= 0)
        close(p->mem_fd);
    if (p->root_fd >= 0)
        close(p->root_fd);
    unwind_cache_free(p->ucache);
    free(p);
}

static bool same_file(const struct map_entry *a, const struct map_entry *b)
{
    return a->inode == b->inode && a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
           a->deleted == b->deleted && !strcmp(a->path, b->path);
}

static bool same_maps(const struct maps *a, const struct maps *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        const struct map_entry *x = &a->v[i], *y = &b->v[i];
        /* paths are interned: equal strings are equal pointers */
        if (x->start != y->start || x->end != y->end || x->offset != y->offset || x->inode != y->inode ||
            x->prot != y->prot || x->deleted != y->deleted || x->path != y->path)
            return false;
    }
    return true;
}

/* Keeps the reference a dropped mapping held, once per file. */
static void keep_former(struct proc *p, struct elf_file *f)
{
    for (size_t i = 0; i < p->nformer; i++)
        if (p->former[i] == f) {
            elfsym_put(f);
            return;
        }
    void *v = realloc(p->former, (p->nformer + 1) * sizeof(*p->former));
    if (!v) {
        /* out of memory: keep the reference without remembering it (a leak, not a dangle) */
        return;
    }
    p->former = v;
    p->former[p->nformer++] = f;
}

/* Root and mem from dir: /proc/PID, or a live thread's directory once the leader exited (its
 * root and mem are gone with its mm and fs; the process's address space lives on). */
static void use_dir(struct proc *p, const char *dir)
{
    char mem[64];

    if (p->dir[0] && !strcmp(p->dir, dir))
        return;
    snprintf(p->dir, sizeof(p->dir), "%s", dir);
    snprintf(p->root, sizeof(p->root), "%s/root", dir);
    snprintf(mem, sizeof(mem), "%s/mem", dir);
    if (p->mem_fd >= 0)
        close(p->mem_fd);
    p->mem_fd = open(mem, O_RDONLY | O_CLOEXEC); /* may be refused: JIT shapes and vDSO fall back */
    /* A path under /proc/PID/root is resolved through the link each time, and that lookup checks
     * our access to the target again: 40 µs for a stat after a quiet 300 ms, 7 µs from this fd
     * (-1: the re-checks stat the path). */
    if (p->root_fd >= 0)
        close(p->root_fd);
    p->root_fd = open(p->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int proc_refresh(struct proc *p)
{
    struct maps m;
    char dir[48];
    int err = maps_read_at(&m, p->pid, dir, sizeof(dir));
    if (err)
        return err;
    if (!m.n && p->maps.n) {
        /* The process exited (a zombie has no mappings): the records drained after its exit
         * are named from the mappings it had, not from none, and nothing is re-checked. */
        maps_free(&m);
        p->last_refresh_ns = proc_now_ns();
        p->maps_suspect = false;
        p->jit_due_ns = UINT64_MAX;
        return -ESRCH;
    }
    use_dir(p, dir);
    struct mod *mods = calloc(m.n ? m.n : 1, sizeof(*mods));
    if (!mods) {
        maps_free(&m);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m.n; i++) {
        const char *s = strpool_intern(&p->paths, m.v[i].path);
        if (!s) {
            free(mods);
            maps_free(&m);
            return -ENOMEM;
        }
        m.v[i].path = s;
    }
    p->last_refresh_ns = p->last_jit_ns = proc_now_ns();
    p->maps_suspect = false;
    p->stats.refreshes++;
    if (p->mods && same_maps(&m, &p->maps)) {
        /* Nothing moved: keep the loaded files and the caches. */
        free(mods);
        maps_free(&m);
        return proc_load_jit(p);
    }
    /* Carry loaded files over to mappings that did not change (both lists are sorted). */
    for (size_t i = 0, j = 0; i < m.n && j < p->maps.n;) {
        const struct map_entry *a = &m.v[i], *b = &p->maps.v[j];
        if (a->start < b->start) {
            i++;
        } else if (a->start > b->start) {
            j++;
        } else {
            if (a->end == b->end && a->offset == b->offset && same_file(a, b) &&
                p->mods[j].state != MOD_UNLOADED) {
                mods[i] = p->mods[j];
                if (mods[i].file)
                    elfsym_get(mods[i].file);
            }
            i++;
            j++;
        }
    }
    for (size_t j = 0; j < p->maps.n; j++)
        if (p->mods[j].file)
            keep_former(p, p->mods[j].file);
    free(p->mods);
    maps_free(&p->maps);
    p->maps = m;
    p->mods = mods;
    p->last = NULL;
    p->sym_gen++;
    unwind_cache_forget(p->ucache); /* remembered walks hold find_cfi's answers of the old mappings */
    return proc_load_jit(p);
}

/* -- Loading a mapping's file -------------------------------------------------------------- */

static int open_mapped(struct proc *p, const struct map_entry *e)
{
    char path[4200];
    int fd = -1;
    if (!e->deleted) {
        snprintf(path, sizeof(path), "%s%s", p->root, e->path);
        fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) {
        /* The inode the target really mapped, even when the path now names another file. */
        snprintf(path, sizeof(path), "%s/map_files/%llx-%llx", p->dir, (unsigned long long)e->start,
                 (unsigned long long)e->end);
        fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    return fd < 0 ? -errno : fd;
}

static int load_vdso(struct proc *p, const struct map_entry *e, struct elf_file **out)
{
    size_t size = (size_t)(e->end - e->start);
    if (size > (64u << 20))
        return -EFBIG;
    void *img = malloc(size);
    if (!img)
        return -ENOMEM;
    ssize_t got = p->mem_fd < 0 ? -1 : pread(p->mem_fd, img, size, (off_t)e->start);
    if (got != (ssize_t)size) {
        const void *own = (const void *)getauxval(AT_SYSINFO_EHDR);
        if (!own) {
            free(img);
            return -ENOENT;
        }
        memcpy(img, own, size);
    }
    return elfsym_open_image(p->elf, img, size, "[vdso]", out);
}

static void load_mod(struct proc *p, size_t i)
{
    const struct map_entry *e = &p->maps.v[i];
    struct mod *m = &p->mods[i];
    m->state = MOD_FAILED;
    int err;
    if (!strcmp(e->path, "[vdso]")) {
        err = load_vdso(p, e, &m->file);
    } else if (maps_is_file(e)) {
        /* Another mapping of the same file already loaded it. */
        for (size_t k = 0; k < p->maps.n; k++) {
            if (k != i && p->mods[k].file && same_file(&p->maps.v[k], e)) {
                m->file = p->mods[k].file;
                elfsym_get(m->file);
                break;
            }
        }
        if (!m->file) {
            int fd = open_mapped(p, e);
            if (fd < 0)
                return;
            err = elfsym_open(p->elf, fd, e->path, p->root, &m->file);
            close(fd);
            p->stats.files_opened++;
        } else {
            err = 0;
        }
    } else {
        return;
    }
    if (err || elfsym_bias(m->file, e->start, e->offset, &m->bias)) {
        elfsym_put(m->file);
        m->file = NULL;
        return;
    }
    m->state = MOD_OK;
}

int proc_recheck(struct proc *p, uint64_t now)
{
    if (now < p->jit_due_ns)
        return 0;
    if (p->maps_suspect) { /* proc_suspect */
        uint64_t gen = p->sym_gen;
        int err = proc_refresh(p);
        if (p->sym_gen != gen)
            p->suspect_wait_ns = REFRESH_MIN_NS;
        else if (p->suspect_wait_ns < SUSPECT_WAIT_MAX_NS)
            p->suspect_wait_ns *= 2;
        return err == -ENOMEM ? err : p->sym_gen != gen;
    }
    return proc_recheck_jit(p, now);
}

void proc_set_instant(struct proc *p, uint64_t at_ns)
{
    p->instant_ns = at_ns;
}

/* Whether an address outside every mapping reads them again: once per rate limit, and at once
 * when they were read before the instant the address was taken (a module imported just before
 * a thread blocked: its one off-CPU record would lose its frames). A re-read of the second kind
 * that finds nothing new (a word the unwinder made of data) holds the next for a rate limit. */
static bool reread_for(struct proc *p)
{
    uint64_t now = proc_now_ns(), gen = p->sym_gen;
    bool due = now - p->last_refresh_ns > REFRESH_MIN_NS;

    if (!due && (p->last_refresh_ns >= p->instant_ns || now - p->fruitless_ns <= REFRESH_MIN_NS))
        return false;
    int err = proc_refresh(p);
    if (err || (!due && p->sym_gen == gen))
        p->fruitless_ns = now; /* a read that fails (not only one that finds nothing) waits too */
    return !err;
}

const struct map_entry *proc_find_map(struct proc *p, uint64_t ip, size_t *idx)
{
    const struct map_entry *e = p->last;
    if (e && ip - e->start < e->end - e->start) {
        *idx = (size_t)(e - p->maps.v);
        return e; /* its module was loaded (or tried) when it became `last` */
    }
    e = maps_find(&p->maps, ip);
    if (!e && reread_for(p))
        e = maps_find(&p->maps, ip);
    if (!e)
        return NULL;
    *idx = (size_t)(e - p->maps.v);
    if (p->mods[*idx].state == MOD_UNLOADED)
        load_mod(p, *idx);
    p->last = e;
    return e;
}

void proc_get_stats(const struct proc *p, struct proc_stats *out)
{
    *out = p->stats;
    const struct unwind_stats *u = unwind_cache_stats(p->ucache);
    out->unwinds = u->unwinds;
    out->frames = u->frames;
    out->row_hits = u->row_hits;
    out->row_misses = u->row_misses;
    out->fp_steps = u->fp_steps;
    out->dwarf_steps = u->dwarf_steps;
    out->memo_hits = u->memo_hits;
    out->jit_regions = jitsyms_count(p->jit);
}
