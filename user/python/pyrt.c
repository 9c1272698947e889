/* pyrt — Python runtime discovery and per-version layout (see pyrt.h). */
#include "python/pyrt.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/errmsg.h"
#include "util/maps.h"

/* -- Built-in tables (x86-64 and aarch64, default builds; read from each release's headers) --- */

/* PyTypeObject: a PyVarObject (its ob_size at var_ob_size), then tp_name, tp_basicsize. The
 * header is 16 bytes in default and debug builds, 32 in free-threaded ones (ob_tid, flags, local
 * and shared reference counts before ob_type). */
#define TP_NAME(L)      ((L)->var_ob_size + 8)
#define TP_BASICSIZE(L) ((L)->var_ob_size + 16)

/* GIL offsets read from each release's DWARF (pyenv 3.11.7, 3.12.1): &_PyRuntime.ceval.gil.locked
 * and .last_holder (3.11), &interp->_gil.locked and .last_holder (3.12). */
static const struct pyrt_layout layout_311 = {
    .gil_locked = 376,
    .gil_holder = 368,
    .gil_in_runtime = true,
    .rt_interpreters_head = 40,
    .is_next = 0,
    .is_threads_head = 16,
    .ts_next = 8,
    .ts_interp = 16,
    .ts_thread_id = 152,
    .ts_native_thread_id = 160,
    .ts_cframe = 56,
    .cf_current_frame = 8,
    .ts_datastack = 296,
    .f_code = 32,
    .f_previous = 48,
    .f_instr = 56,
    .f_owner = 69,
    .f_is_entry = 68,
    .f_code_mask = ~(uint64_t)0,
    .f_owner_max = 2,
    .co_firstlineno = 72,
    .co_filename = 112,
    .co_name = 120,
    .co_qualname = 128,
    .co_linetable = 136,
    .co_code_adaptive = 184,
    .ob_type = 8,
    .var_ob_size = 16,
    .bytes_ob_sval = 32,
    .str_length = 16,
    .str_state = 32,
    .str_ascii_data = 48,
    .str_compact_data = 72,
};

static const struct pyrt_layout layout_312 = {
    .gil_locked = 1056,
    .gil_holder = 1048,
    .rt_interpreters_head = 40,
    .is_next = 0,
    .is_threads_head = 72,
    .ts_next = 8,
    .ts_interp = 16,
    .ts_thread_id = 136,
    .ts_native_thread_id = 144,
    .ts_cframe = 56,
    .cf_current_frame = 0,
    .ts_datastack = 232,
    .f_code = 0,
    .f_previous = 8,
    .f_instr = 56,
    .f_owner = 70,
    .f_is_entry = -1,
    .f_code_mask = ~(uint64_t)0,
    .f_owner_max = 3,
    .co_firstlineno = 68,
    .co_filename = 112,
    .co_name = 120,
    .co_qualname = 128,
    .co_linetable = 136,
    .co_code_adaptive = 192,
    .ob_type = 8,
    .var_ob_size = 16,
    .bytes_ob_sval = 32,
    .str_length = 16,
    .str_state = 32,
    .str_ascii_data = 40,
    .str_compact_data = 56,
};

/* -- Helpers ------------------------------------------------------------------------------------ */

static uint32_t max_u32(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

/* Fills the fields derived from the offsets: how much of each struct one read must cover. */
static void derive_sizes(struct pyrt_layout *L)
{
    L->ts_read_size = max_u32(max_u32(L->ts_next, L->ts_interp), L->ts_native_thread_id) + 8;
    L->ts_read_size = max_u32(L->ts_read_size, L->ts_thread_id + 8);
    L->ts_read_size = max_u32(L->ts_read_size, (L->ts_cframe ? L->ts_cframe : L->ts_current_frame) + 8);
    L->f_read_size = max_u32(max_u32(L->f_code, L->f_previous), L->f_instr) + 8;
    L->f_read_size = max_u32(L->f_read_size, L->f_owner + 1);
    if (L->f_is_entry >= 0)
        L->f_read_size = max_u32(L->f_read_size, (uint32_t)L->f_is_entry + 1);
    /* One header read covers ob_type and the code fields, whatever their order. */
    uint32_t end = L->co_firstlineno + 4, start = L->co_firstlineno;
    const uint32_t ptrs[] = {L->ob_type, L->co_filename, L->co_name, L->co_qualname, L->co_linetable};
    for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++) {
        end = max_u32(end, ptrs[i] + 8);
        start = ptrs[i] < start ? ptrs[i] : start;
    }
    /* The reference count too, where it is the word before ob_type (not in free-threaded builds):
     * whether the object is still allocated (pycode_table.h, hdr_live). */
    L->co_hdr_rc = L->ob_type == 8 ? 8 : 0;
    if (L->co_hdr_rc && L->ob_type - 8 < start)
        start = L->ob_type - 8;
    L->co_hdr_start = start;
    L->co_hdr_size = end - start;
    uint32_t id_lo = L->co_firstlineno & ~7u, id_hi = 0;
    for (size_t i = 1; i < sizeof(ptrs) / sizeof(ptrs[0]); i++) {
        id_hi = max_u32(id_hi, ptrs[i] + 8);
        id_lo = ptrs[i] < id_lo ? ptrs[i] & ~7u : id_lo;
    }
    if (id_hi - id_lo > PYRT_CODE_ID_MAX)
        id_lo = id_hi - PYRT_CODE_ID_MAX;
    L->co_id_start = id_lo < start ? start : id_lo;
    L->co_id_size = id_hi - L->co_id_start;
    L->co_id_version = 0;
    if (L->major == 3 && L->minor >= 12 && L->minor <= 15) {
        uint32_t v = L->co_firstlineno + 24;
        if (v > L->co_id_start && v + 4 <= L->co_id_start + L->co_id_size && v % 4 == 0)
            L->co_id_version = v - L->co_id_start;
    }
}

static void derive_sizes(struct pyrt_layout *L);

/* -- Finding the runtime in the mapped files --------------------------------------------------- */

struct found {
    uint64_t runtime_vaddr, section_vaddr, version_vaddr, codetype_vaddr, jitdesc_vaddr;
    uint64_t eval_vaddr, eval_size;
};

/* Takes the wanted symbols from one symbol table. */
static void scan_symbols(Elf *e, Elf_Scn *s, struct found *f)
{
    GElf_Shdr sh;
    Elf_Data *d;

    if (!s || !gelf_getshdr(s, &sh) || !sh.sh_entsize || !(d = elf_getdata(s, NULL)))
        return;
    for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
            continue;
        const char *sn = elf_strptr(e, sh.sh_link, sym.st_name);
        if (!sn || (sn[0] != '_' && sn[0] != 'P'))
            continue;
        if (strcmp(sn, "_PyRuntime") == 0)
            f->runtime_vaddr = sym.st_value;
        else if (strcmp(sn, "Py_Version") == 0)
            f->version_vaddr = sym.st_value;
        else if (strcmp(sn, "PyCode_Type") == 0)
            f->codetype_vaddr = sym.st_value;
        else if (strcmp(sn, "__jit_debug_descriptor") == 0)
            f->jitdesc_vaddr = sym.st_value;
        else if (strcmp(sn, "_PyEval_EvalFrameDefault") == 0 && GELF_ST_TYPE(sym.st_info) == STT_FUNC) {
            f->eval_vaddr = sym.st_value;
            f->eval_size = sym.st_size;
        }
    }
}

/* Looks up the symbols and the .PyRuntime section of one ELF file. The dynamic symbols come
 * first: CPython exports what is wanted, and they are a tenth of the full table, which a
 * non-stripped libpython has in megabytes (read whole, it was a tenth of the collector's
 * setup); the full table is read only when an export is missing. */
static int scan_elf(const char *path, struct found *f, Elf **keep, int *fd_out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL); /* the tables read in place, not copied */
    if (!e || elf_kind(e) != ELF_K_ELF) {
        if (e)
            elf_end(e);
        close(fd);
        return -ENOEXEC;
    }
    size_t shstrndx;
    if (elf_getshdrstrndx(e, &shstrndx) != 0)
        shstrndx = 0;
    *f = (struct found){0};
    Elf_Scn *dynsym = NULL, *symtab = NULL;
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(s, &sh))
            continue;
        const char *name = elf_strptr(e, shstrndx, sh.sh_name);
        if (name && strcmp(name, ".PyRuntime") == 0)
            f->section_vaddr = sh.sh_addr;
        if (sh.sh_type == SHT_DYNSYM && !dynsym)
            dynsym = s;
        else if (sh.sh_type == SHT_SYMTAB && !symtab)
            symtab = s;
    }
    scan_symbols(e, dynsym, f);
    if (!f->runtime_vaddr || !f->version_vaddr || !f->codetype_vaddr || !f->eval_vaddr)
        scan_symbols(e, symtab, f);
    if (!f->runtime_vaddr && !f->section_vaddr) {
        elf_end(e);
        close(fd);
        return -ENOENT;
    }
    *keep = e;
    *fd_out = fd;
    return 0;
}

/* Translates a link-time address of the file into the target's address via the segment holding
 * it and the mapping (of the runtime's file) that holds that file offset. */
static uint64_t to_target(Elf *e, const struct maps *m, const char *path, uint64_t vaddr)
{
    size_t nph;
    if (!vaddr || elf_getphdrnum(e, &nph) != 0)
        return 0;
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if (vaddr < ph.p_vaddr || vaddr >= ph.p_vaddr + ph.p_filesz)
            continue;
        uint64_t off = vaddr - ph.p_vaddr + ph.p_offset;
        for (size_t k = 0; k < m->n; k++) {
            const struct map_entry *me = &m->v[k];
            if (!me->deleted && strcmp(me->path, path) == 0 && off >= me->offset &&
                off < me->offset + (me->end - me->start))
                return me->start + (off - me->offset);
        }
    }
    return 0;
}

static bool looks_like_python(const char *path)
{
    const char *base = maps_basename(path);
    return strncmp(base, "python", 6) == 0 || strncmp(base, "libpython", 9) == 0;
}

/* Tries the mapped files of the target, Python-looking names first, then every other file (at
 * most 64 files per pass). */
static int find_runtime(struct pyrt *rt, const struct maps *m, struct found *f, Elf **e, int *fd)
{
    for (int pass = 0; pass < 2; pass++) {
        int tried = 0;
        for (size_t i = 0; i < m->n && tried < 64; i++) {
            const struct map_entry *me = &m->v[i];
            if (!maps_is_file(me) || me->deleted || me->path[0] != '/' ||
                (pass == 0) != looks_like_python(me->path))
                continue;
            bool seen = false;
            for (size_t k = 0; k < i && !seen; k++)
                seen = strcmp(m->v[k].path, me->path) == 0;
            if (seen)
                continue;
            tried++;
            char full[4200];
            snprintf(full, sizeof(full), "/proc/%d/root%s", (int)rt->pid, me->path);
            if (scan_elf(full, f, e, fd) != 0)
                continue;
            snprintf(rt->path, sizeof(rt->path), "%s", me->path);
            return 0;
        }
    }
    return -ENOENT;
}

/* -- Attach ------------------------------------------------------------------------------------- */

static int check_target(struct pyrt *rt, struct remote *r, char *err, size_t errlen)
{
    const struct pyrt_layout *L = &rt->L;

    if (rt->code_type) {
        uint64_t basicsize = 0, name_ptr = 0;
        char name[8] = {0};
        if (remote_read(r, rt->code_type + TP_BASICSIZE(L), &basicsize, 8) ||
            remote_read(r, rt->code_type + TP_NAME(L), &name_ptr, 8) || remote_read(r, name_ptr, name, 5))
            return errmsg(err, errlen, -EPROTO, "cannot read PyCode_Type of the target");
        if (strcmp(name, "code") != 0 || basicsize != L->co_code_adaptive)
            return errmsg(err, errlen, -EPROTO,
                          "Python %s: PyCode_Type says code objects hold %" PRIu64
                          " bytes before their bytecode, the layout table says %u; refusing "
                          "(unusual build?)",
                          rt->version, basicsize, L->co_code_adaptive);
    }
    /* The first thread state must point back at its interpreter. */
    uint64_t interp = 0, ts = 0, back = 0;
    if (pyrt_first_interp(rt, r, &interp) == 0 && interp &&
        remote_read(r, interp + L->is_threads_head, &ts, 8) == 0 && ts) {
        if (remote_read(r, ts + L->ts_interp, &back, 8) != 0 || back != interp)
            return errmsg(err, errlen, -EPROTO,
                          "Python %s: thread state at 0x%" PRIx64 " does not point back to its "
                          "interpreter 0x%" PRIx64 "; layout mismatch, refusing",
                          rt->version, ts, interp);
    }
    return 0;
}

int pyrt_attach(struct pyrt *rt, struct remote *r, pid_t pid, char *err, size_t errlen)
{
    struct found f = {0};
    struct maps maps = {0};
    Elf *e = NULL;
    int fd = -1, rc;

    memset(rt, 0, sizeof(*rt));
    rt->pid = pid;
    elf_version(EV_CURRENT);
    rc = maps_read(&maps, pid);
    if (rc == 0)
        rc = find_runtime(rt, &maps, &f, &e, &fd);
    if (rc) {
        rc = errmsg(err, errlen, rc == -ENOENT ? -ENOENT : rc,
                    rc == -ENOENT ? "process %d: no Python runtime (_PyRuntime) in its mapped files"
                                  : "process %d: cannot read its mappings",
                    (int)pid);
        goto out;
    }
    const char *base = strrchr(rt->path, '/');
    rt->shared_lib = strstr(base ? base : rt->path, ".so") != NULL;
    rt->runtime_addr = to_target(e, &maps, rt->path, f.runtime_vaddr ? f.runtime_vaddr : f.section_vaddr);
    rt->code_type = to_target(e, &maps, rt->path, f.codetype_vaddr);
    rt->jit_descriptor = to_target(e, &maps, rt->path, f.jitdesc_vaddr);
    uint64_t version_addr = to_target(e, &maps, rt->path, f.version_vaddr);
    if (!rt->runtime_addr) {
        rc = errmsg(err, errlen, -ENOENT, "%s: _PyRuntime is not mapped in process %d", rt->path, (int)pid);
        goto out;
    }
    uint32_t hex = 0;
    if (!version_addr) {
        rc = errmsg(err, errlen, -ENOTSUP,
                    "%s: no Py_Version symbol: Python 3.10 or older, not supported (3.11+ needed)", rt->path);
        goto out;
    }
    if ((rc = remote_read(r, version_addr, &hex, 4)) != 0) {
        rc = errmsg(err, errlen, rc, "process %d: cannot read Py_Version (%s)", (int)pid, strerror(-rc));
        goto out;
    }
    unsigned major = hex >> 24, minor = (hex >> 16) & 0xff;
    snprintf(rt->version, sizeof(rt->version), "%u.%u.%u", major, minor, (hex >> 8) & 0xff);
    if (major != 3 || minor < 11) {
        rc = errmsg(err, errlen, -ENOTSUP, "Python %s is not supported (3.11 to 3.15 are)", rt->version);
        goto out;
    }
    if (minor == 11) {
        rt->L = layout_311;
    } else if (minor == 12) {
        rt->L = layout_312;
    } else {
        /* 3.13+: the runtime describes itself; the description's own layout is per version. */
        uint8_t d[1024];
        size_t need = pyrt_debug_offsets_size(minor);
        if (!need || need > sizeof(d))
            need = 24; /* cookie, version, flag: enough for the reason of the refusal */
        if ((rc = remote_read(r, rt->runtime_addr, d, need)) != 0) {
            rc = errmsg(err, errlen, rc, "process %d: cannot read _Py_DebugOffsets", (int)pid);
            goto out;
        }
        char why[200];
        if ((rc = pyrt_debug_offsets(&rt->L, d, need, hex, why, sizeof(why))) != 0) {
            rc = errmsg(err, errlen, rc, "Python %s (%s): %s", rt->version, rt->path, why);
            goto out;
        }
    }
    rt->L.version_hex = hex;
    rt->L.major = major;
    rt->L.minor = minor;
    derive_sizes(&rt->L);
    rc = check_target(rt, r, err, errlen);
    if (!rc) /* in the file open now (not by its path: the target's root may not be ours) */
        pyeval_find(e, f.eval_vaddr, f.eval_size, &rt->eval);
out:
    if (e)
        elf_end(e);
    if (fd >= 0)
        close(fd);
    maps_free(&maps);
    return rc;
}

int pyrt_layout_from_debug_offsets(struct pyrt_layout *L, const void *buf, size_t len, char *err,
                                   size_t errlen)
{
    uint64_t v;

    if (len < 16)
        return errmsg(err, errlen, -EPROTO, "_Py_DebugOffsets: %zu bytes", len);
    memcpy(&v, (const uint8_t *)buf + 8, 8);
    memset(L, 0, sizeof(*L));
    int rc = pyrt_debug_offsets(L, buf, len, (uint32_t)v, err, errlen);
    if (rc == 0) {
        L->version_hex = (uint32_t)v;
        L->major = (unsigned)(v >> 24) & 0xff;
        L->minor = (unsigned)(v >> 16) & 0xff;
        derive_sizes(L);
    }
    return rc;
}

int pyrt_first_interp(const struct pyrt *rt, struct remote *r, uint64_t *interp)
{
    *interp = 0;
    return remote_read(r, rt->runtime_addr + rt->L.rt_interpreters_head, interp, 8);
}

int pyrt_gil_holder(const struct pyrt *rt, struct remote *r, uint64_t *interp, uint64_t *holder)
{
    const struct pyrt_layout *L = &rt->L;
    uint64_t base = rt->runtime_addr, last = 0;
    int32_t locked = 0;

    *holder = 0;
    if (!L->gil_holder)
        return -ENOTSUP;
    if (!L->gil_in_runtime) {
        int rc = *interp ? 0 : pyrt_first_interp(rt, r, interp);

        if (rc)
            return rc;
        if (!*interp)
            return -ENOENT;
        base = *interp;
    }
    struct remote_seg segs[2] = {REMOTE_SEG(base + L->gil_locked, &locked, sizeof(locked)),
                                 REMOTE_SEG(base + L->gil_holder, &last, sizeof(last))};
    int n = remote_readv(r, segs, 2, false);

    if (n < 0)
        return n;
    if (n != 2)
        return -EFAULT;
    *holder = locked ? last : 0;
    return 0;
}
