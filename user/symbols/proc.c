/*
 * proc — one target process: its mappings, the ELF file behind each executable mapping (loaded
 * on first use, then cached), its JIT regions, and the unwinder's row cache.
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
#include "symbols/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "python/pyrt.h"
#include "symbols/elfsym.h"
#include "symbols/jitsyms.h"
#include "symbols/maps.h"
#include "symbols/pyrt_jit.h"
#include "symbols/strpool.h"
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
    char dir[48];  /* /proc/PID, or /proc/PID/task/TID once the leader exited (maps_read_at) */
    char root[64]; /* dir + "/root" */
    struct maps maps;
    struct mod *mods;         /* parallel to maps.v */
    struct strpool paths;     /* module paths handed out */
    struct elf_file **former; /* files once mapped, one reference each */
    size_t nformer;
    struct jitsyms *jit;
    struct unwind_cache *ucache;
    uint64_t last_refresh_ns, last_jit_ns;
    uint64_t jit_due_ns;          /* next timed re-check of the JIT publications; UINT64_MAX: none */
    uint64_t jit_names_gen;       /* jitsyms_names_gen when sym_gen last followed it */
    const struct map_entry *last; /* the mapping found last: frames cluster in few modules */
    struct proc_stats stats;
    struct symslot syms[1u << SYMCACHE_BITS];
    uint64_t sym_gen;       /* starts at 1: zeroed slots never match */
    bool counted;           /* holds a use of shared_cache */
    int mem_fd;             /* /proc/PID/mem, read-only: JIT code shapes, the vDSO */
    struct cfi_table tramp; /* CFI of the known trampolines (below) */
    bool tramp_ok;
    struct {
        uint64_t ret;
        uint8_t shape;
    } anon[256]; /* return addresses in unpublished code: is the caller a known trampoline? */
    /* CPython 3.15's own JIT executors (GDB JIT list, pyrt_jit.c): state 0 not looked for yet,
     * 1 reading, -1 none (not Python, or no JIT interface); attempts counts failed attaches. */
    struct pyrt_jit pyjit;
    struct remote pyr;
    int8_t pyjit_state;
    uint8_t pyjit_attempts;
};

/* The ELF cache is shared by every proc of the collector (files are keyed by build-id, so a
 * libc mapped by many targets is parsed once). Not thread-safe, like the rest of proc. */
static struct elfsym_cache *shared_cache;
static unsigned shared_users;

/* Addresses outside the mappings trigger a re-read at most this often. */
#define REFRESH_MIN_NS 20000000ull

/* A target that published JIT code in a file (or has CPython's JIT list) has its publications
 * looked at again this often (proc_recheck_jit), or JIT_RECHECK_COST times as long as the last
 * read took when that is longer: at most ~2 % of a CPU however large the files grow. */
#define JIT_RECHECK_NS   200000000ull
#define JIT_RECHECK_COST 50

/* -- Known trampolines without unwinding information ----------------------------------------
 *
 * CPython 3.12 (-X perf) and 3.13 (-X perf_jit) wrap each Python function in a copy of
 *
 *     [f3 0f 1e fa  endbr64]  48 83 ec 08  sub $8,%rsp;  ff d1  call *%rcx;
 *                             48 83 c4 08  add $8,%rsp;  c3    ret
 *
 * 3.12 publishes it only in the perf map (no CFI, no frame pointer), and 3.13's jitdump reaches
 * the file late (CPython buffers it). When a region without CFI holds exactly these bytes, the
 * unwinder uses the CFI below, written for code at address 0 (no endbr) and 0x100 (endbr); the
 * region's start is the bias.
 */
static const uint8_t TRAMP_CODE[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3};
static const uint8_t ENDBR64[] = {0xf3, 0x0f, 0x1e, 0xfa};
#define TRAMP_ENDBR_AT 0x100

enum { SHAPE_UNKNOWN = 0, SHAPE_OTHER, SHAPE_TRAMP, SHAPE_TRAMP_ENDBR };

static const uint8_t TRAMP_EH[] = {
    /* CIE at 0: length 16, id 0, version 1, augmentation "", code align 1, data align -8, ra 16,
     * def_cfa rsp+8, offset rip at cfa-8, nop nop */
    16, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0x78, 16, 0x0c, 7, 8, 0x90, 1, 0, 0,
    /* FDE at 20: length 28, CIE pointer 24, pc 0 range 11 (absptr): advance 4 (after sub);
     * def_cfa_offset 16; advance 6 (after add); def_cfa_offset 8; nop nop */
    28, 0, 0, 0, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11, 0, 0, 0, 0, 0, 0, 0, 0x44, 0x0e, 16, 0x46, 0x0e, 8,
    0, 0,
    /* FDE at 52: the same after endbr64, pc 0x100 range 15 */
    28, 0, 0, 0, 56, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 15, 0, 0, 0, 0, 0, 0, 0, 0x48, 0x0e, 16, 0x46, 0x0e, 8,
    0, 0,
    /* terminator */
    0, 0, 0, 0};
_Static_assert(sizeof(TRAMP_EH) == 20 + 32 + 32 + 4, "trampoline CFI layout");

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The clock of the samples' timestamps (bpf_ktime_get_ns), for the timed JIT re-check. */
static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void mods_put(struct mod *mods, size_t n)
{
    for (size_t i = 0; mods && i < n; i++)
        elfsym_put(mods[i].file);
    free(mods);
}

int proc_open(struct proc **out, pid_t pid)
{
    struct proc *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->pid = pid;
    p->mem_fd = -1; /* opened by proc_refresh, with root: from the directory the maps came from */
    p->tramp_ok = cfi_table_init(&p->tramp, TRAMP_EH, sizeof(TRAMP_EH), 0, false, NULL, 0, 0) == 0;
    int err = 0;
    if (!shared_cache)
        err = elfsym_cache_new(&shared_cache);
    if (!err) {
        shared_users++;
        p->counted = true;
        err = jitsyms_new(&p->jit);
    }
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
    pyrt_jit_free(&p->pyjit);
    if (p->tramp_ok)
        cfi_table_free(&p->tramp);
    if (p->mem_fd >= 0)
        close(p->mem_fd);
    unwind_cache_free(p->ucache);
    if (p->counted && --shared_users == 0) {
        elfsym_cache_free(shared_cache);
        shared_cache = NULL;
    }
    free(p);
}

static bool same_file(const struct map_entry *a, const struct map_entry *b)
{
    return a->inode == b->inode && a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
           a->deleted == b->deleted && !strcmp(a->path, b->path);
}

/* CPython's JIT list, when the target is a Python with one: re-read and handed to jitsyms (the
 * regions' CFI tables move on every read, so they are handed over every time). Returns what
 * jitsyms_set_extra returns, 0 when there is nothing to read. */
static int load_pyjit(struct proc *p)
{
    if (p->pyjit_state < 0)
        return 0;
    if (p->pyjit_state == 0) {
        bool py = false;
        for (size_t i = 0; i < p->maps.n && !py; i++) {
            const char *b = maps_basename(p->maps.v[i].path);
            py = maps_is_file(&p->maps.v[i]) && (!strncmp(b, "python", 6) || !strncmp(b, "libpython", 9));
        }
        if (!py)
            return 0;
        struct pyrt rt;
        char err[256];
        /* any live thread names the address space (the leader may have exited: see use_dir) */
        const char *task = strstr(p->dir, "/task/");
        remote_init(&p->pyr, task ? (pid_t)atoi(task + 6) : p->pid);
        if (pyrt_attach(&rt, &p->pyr, p->pid, err, sizeof(err)) != 0) {
            /* Not initialised yet (launch mode): a few more tries, then give up. */
            if (++p->pyjit_attempts >= 8)
                p->pyjit_state = -1;
            return 0;
        }
        if (!rt.jit_descriptor) {
            p->pyjit_state = -1;
            return 0;
        }
        pyrt_jit_init(&p->pyjit, rt.jit_descriptor);
        p->pyjit_state = 1;
    }
    if (pyrt_jit_read(&p->pyjit, &p->pyr, 1u << 16) < 0)
        return 0;
    struct jitsym *v = calloc(p->pyjit.n ? p->pyjit.n : 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < p->pyjit.n; i++) {
        const struct pyrt_jit_region *g = &p->pyjit.v[i];
        v[i] = (struct jitsym){g->start, g->end, g->name, g->cfi.data ? &g->cfi : NULL, 0};
    }
    int r = jitsyms_set_extra(p->jit, v, p->pyjit.n);
    free(v);
    return r;
}

/* Re-reads the JIT files; tables of replaced files are gone, and with them cached rows. Cached
 * names go (sym_gen) only when some address is named differently now. Schedules the next timed
 * re-check, if the target has anything to re-check. */
static int load_jit(struct proc *p)
{
    uint64_t t0 = mono_ns();
    int r = jitsyms_load(p->jit, p->pid, &p->maps, p->root);
    if (r >= 0) {
        int r2 = load_pyjit(p);
        r = r2 < 0 ? r2 : (r > 0 || r2 > 0);
    }
    if (r > 0) {
        unwind_cache_clear(p->ucache);
        uint64_t g = jitsyms_names_gen(p->jit);
        if (g != p->jit_names_gen) {
            p->jit_names_gen = g;
            p->sym_gen++;
        }
    }
    uint64_t t1 = mono_ns(), every = (t1 - t0) * JIT_RECHECK_COST;
    if (every < JIT_RECHECK_NS)
        every = JIT_RECHECK_NS;
    p->jit_due_ns = jitsyms_sources(p->jit) || p->pyjit_state > 0 ? t1 + every : UINT64_MAX;
    return r == -ENOMEM ? r : 0;
}

/* Out of line: the caller's inline test is the per-sample cost. */
static __attribute__((noinline)) int recheck_jit(struct proc *p)
{
    p->last_jit_ns = now_ns();
    p->stats.jit_reloads++;
    uint64_t gen = p->sym_gen;
    int err = load_jit(p);
    return err < 0 ? err : p->sym_gen != gen;
}

int proc_recheck_jit(struct proc *p, uint64_t now)
{
    if (now < p->jit_due_ns)
        return 0;
    return recheck_jit(p);
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
}

int proc_refresh(struct proc *p)
{
    struct maps m;
    char dir[48];
    int err = maps_read_at(&m, p->pid, dir, sizeof(dir));
    if (err)
        return err;
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
    p->last_refresh_ns = p->last_jit_ns = now_ns();
    p->stats.refreshes++;
    if (p->mods && same_maps(&m, &p->maps)) {
        /* Nothing moved: keep the loaded files and the caches. */
        free(mods);
        maps_free(&m);
        return load_jit(p);
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
    return load_jit(p);
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
    return elfsym_open_image(shared_cache, img, size, "[vdso]", out);
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
            err = elfsym_open(shared_cache, fd, e->path, p->root, &m->file);
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

/* The mapping of ip (refreshing once when ip is outside all of them), or NULL. */
static const struct map_entry *find_map(struct proc *p, uint64_t ip, size_t *idx)
{
    const struct map_entry *e = p->last;
    if (e && ip - e->start < e->end - e->start) {
        *idx = (size_t)(e - p->maps.v);
        return e; /* its module was loaded (or tried) when it became `last` */
    }
    e = maps_find(&p->maps, ip);
    if (!e && now_ns() - p->last_refresh_ns > REFRESH_MIN_NS && proc_refresh(p) == 0)
        e = maps_find(&p->maps, ip);
    if (!e)
        return NULL;
    *idx = (size_t)(e - p->maps.v);
    if (p->mods[*idx].state == MOD_UNLOADED)
        load_mod(p, *idx);
    p->last = e;
    return e;
}

static uint8_t code_shape(struct proc *p, const struct jitsym *js)
{
    uint8_t buf[sizeof(ENDBR64) + sizeof(TRAMP_CODE)];
    uint64_t size = js->end - js->start;
    size_t want = size >= sizeof(buf) ? sizeof(buf) : sizeof(TRAMP_CODE);
    if (p->mem_fd < 0 || size < sizeof(TRAMP_CODE) ||
        pread(p->mem_fd, buf, want, (off_t)js->start) != (ssize_t)want)
        return SHAPE_OTHER;
    if (!memcmp(buf, TRAMP_CODE, sizeof(TRAMP_CODE)))
        return SHAPE_TRAMP;
    if (want == sizeof(buf) && !memcmp(buf, ENDBR64, sizeof(ENDBR64)) &&
        !memcmp(buf + sizeof(ENDBR64), TRAMP_CODE, sizeof(TRAMP_CODE)))
        return SHAPE_TRAMP_ENDBR;
    return SHAPE_OTHER;
}

/* CFI for a JIT region that published none, when its code is a known trampoline. */
static const struct cfi_table *jit_fallback_cfi(struct proc *p, struct jitsym *js, uint64_t *bias)
{
    if (!p->tramp_ok)
        return NULL;
    if (js->shape == SHAPE_UNKNOWN)
        js->shape = code_shape(p, js);
    if (js->shape == SHAPE_TRAMP) {
        *bias = js->start;
        return &p->tramp;
    }
    if (js->shape == SHAPE_TRAMP_ENDBR) {
        *bias = js->start - TRAMP_ENDBR_AT;
        return &p->tramp;
    }
    return NULL;
}

/* A return address in executable memory no region names (3.13's jitdump not flushed yet): if
 * the bytes before it are a known trampoline's `sub; call`, the trampoline's CFI applies. The
 * answer is cached per address, so the bytes are read once. */
static const struct cfi_table *anon_fallback_cfi(struct proc *p, uint64_t ip, uint64_t *bias)
{
    enum { CALL_END = 6 }; /* offset of the return address in TRAMP_CODE */
    if (!p->tramp_ok || p->mem_fd < 0 || ip < 16)
        return NULL;
    size_t slot = (size_t)((ip * 0x9e3779b97f4a7c15ull) >> 56);
    if (p->anon[slot].ret != ip) {
        uint8_t buf[sizeof(ENDBR64) + sizeof(TRAMP_CODE)];
        uint64_t at = ip - CALL_END - sizeof(ENDBR64);
        uint8_t shape = SHAPE_OTHER;
        if (pread(p->mem_fd, buf, sizeof(buf), (off_t)at) == (ssize_t)sizeof(buf)) {
            if (!memcmp(buf + sizeof(ENDBR64), TRAMP_CODE, sizeof(TRAMP_CODE)))
                shape = !memcmp(buf, ENDBR64, sizeof(ENDBR64)) ? SHAPE_TRAMP_ENDBR : SHAPE_TRAMP;
        }
        p->anon[slot].ret = ip;
        p->anon[slot].shape = shape;
    }
    uint64_t start = ip - CALL_END;
    if (p->anon[slot].shape == SHAPE_TRAMP) {
        *bias = start;
        return &p->tramp;
    }
    if (p->anon[slot].shape == SHAPE_TRAMP_ENDBR) {
        *bias = start - TRAMP_ENDBR_AT - sizeof(ENDBR64);
        return &p->tramp;
    }
    return NULL;
}

/* The JIT region holding ip. An address in anonymous (or deleted-file) executable memory that no region names
 * may be code published since the last read: re-read the JIT files (rate-limited; unchanged
 * files cost one stat each). */
static struct jitsym *find_jit(struct proc *p, uint64_t ip, const struct map_entry *e)
{
    struct jitsym *js = jitsyms_find(p->jit, ip);
    if (js || !e || (maps_is_file(e) && !e->deleted) || !(e->prot & MAPS_X))
        return js;
    uint64_t now = now_ns();
    if (now - p->last_jit_ns < REFRESH_MIN_NS)
        return NULL;
    p->last_jit_ns = now;
    p->stats.jit_reloads++;
    if (load_jit(p) < 0)
        return NULL;
    return jitsyms_find(p->jit, ip);
}

/* -- Symbols ------------------------------------------------------------------------------- */

static int symbolize(struct proc *p, uint64_t ip, struct symres *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = FRAME_NATIVE;
    size_t i;
    const struct map_entry *e = find_map(p, ip, &i);
    const struct jitsym *js = find_jit(p, ip, e);
    if (js && (!e || !maps_is_file(e) || e->deleted)) {
        out->name = js->name;
        out->offset = ip - js->start;
        out->kind = FRAME_JIT;
        out->module = "[jit]";
        return 0;
    }
    if (!e)
        return -ENOENT;
    out->module = e->path[0] ? e->path : NULL;
    out->offset = ip - e->start + e->offset;
    const struct mod *m = &p->mods[i];
    if (m->state == MOD_OK) {
        uint64_t off;
        const char *name = elfsym_lookup(m->file, ip - m->bias, &off);
        if (name) {
            out->name = name;
            out->offset = off;
        }
    } else if ((!e->path[0] || e->deleted) && (e->prot & MAPS_X)) {
        /* executable memory JIT regions may cover (anonymous, or a deleted file such as a memfd
         * arena): code nobody named yet, so never cached */
        out->kind = FRAME_JIT;
    }
    return 0;
}

int proc_symbolize(struct proc *p, uint64_t ip, struct symres *out)
{
    struct symslot *s = &p->syms[(ip * 0x9e3779b97f4a7c15ull) >> (64 - SYMCACHE_BITS)];
    if (s->ip == ip && s->gen == p->sym_gen) {
        p->stats.sym_hits++;
        *out = s->r;
        return 0;
    }
    p->stats.sym_misses++;
    int err = symbolize(p, ip, out);
    /* Unnamed code in anonymous memory may be published later: not cached. */
    if (!err && (out->name || out->kind != FRAME_JIT)) {
        s->ip = ip;
        s->gen = p->sym_gen;
        s->r = *out;
    }
    return err;
}

int proc_symbolize_ret(struct proc *p, uint64_t ret, struct symres *out)
{
    int err = proc_symbolize(p, ret - 1, out);
    if (err || out->name)
        return err;
    struct symres at;
    if (proc_symbolize(p, ret, &at) == 0 && at.name && at.offset == 0)
        *out = at;
    return 0;
}

uint64_t proc_generation(const struct proc *p)
{
    return p->sym_gen;
}

int proc_format(const struct symres *r, char *buf, size_t size)
{
    if (r->name)
        return snprintf(buf, size, "%s", r->name);
    if (r->module)
        return snprintf(buf, size, "%s+0x%llx", maps_basename(r->module), (unsigned long long)r->offset);
    return snprintf(buf, size, "[unknown]");
}

/* -- Unwinding ----------------------------------------------------------------------------- */

static int find_cfi(void *arg, uint64_t ip, const struct cfi_table **cfi, uint64_t *bias)
{
    struct proc *p = arg;
    size_t i;
    const struct map_entry *e = find_map(p, ip, &i);
    if (e && p->mods[i].state == MOD_OK && (e->prot & MAPS_X)) {
        *cfi = elfsym_cfi(p->mods[i].file);
        *bias = p->mods[i].bias;
        return 0;
    }
    struct jitsym *js = find_jit(p, ip, e);
    if (js) {
        *cfi = js->cfi;
        *bias = 0;
        if (!js->cfi)
            *cfi = jit_fallback_cfi(p, js, bias);
        return 0;
    }
    if (e && (e->prot & MAPS_X)) {
        *bias = 0;
        *cfi = maps_is_file(e) ? NULL : anon_fallback_cfi(p, ip, bias);
        return 0;
    }
    return -ENOENT;
}

int proc_unwind(struct proc *p, enum unwind_mode mode, const struct unwind_regs *regs, const uint8_t *stack,
                size_t stack_len, uint64_t stack_addr, uint64_t *ips, size_t max, unsigned *stop)
{
    return unwind_stack(p->ucache, find_cfi, p, mode, regs, stack, stack_len, stack_addr, ips, max, stop);
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
    out->jit_regions = jitsyms_count(p->jit);
}
