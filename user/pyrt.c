/* pyrt — Python runtime discovery and per-version layout (see pyrt.h). */
#include "pyrt.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* -- Built-in tables (x86-64 and aarch64, default builds; read from each release's headers) --- */

/* Offsets within PyTypeObject, stable since Python 3.0. */
#define TP_NAME      24
#define TP_BASICSIZE 32

static const struct pyrt_layout layout_311 = {
    .rt_interpreters_head = 40,
    .is_next = 0,
    .is_threads_head = 16,
    .ts_next = 8,
    .ts_interp = 16,
    .ts_native_thread_id = 160,
    .ts_cframe = 56,
    .cf_current_frame = 8,
    .f_code = 32,
    .f_previous = 48,
    .f_instr = 56,
    .f_owner = 69,
    .f_is_entry = 68,
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
    .rt_interpreters_head = 40,
    .is_next = 0,
    .is_threads_head = 72,
    .ts_next = 8,
    .ts_interp = 16,
    .ts_native_thread_id = 144,
    .ts_cframe = 56,
    .cf_current_frame = 0,
    .f_code = 0,
    .f_previous = 8,
    .f_instr = 56,
    .f_owner = 70,
    .f_is_entry = -1,
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

/* -- _Py_DebugOffsets of 3.13 -------------------------------------------------------------------
 *
 *   0  cookie "xdebugpy"   8 version (PY_VERSION_HEX)   16 free_threaded
 *  24  runtime_state      {size, finalizing, interpreters_head}
 *  48  interpreter_state  {size, id, next, threads_head, gc, imports_modules, sysdict, builtins,
 *                          ceval_gil, gil_runtime_state, _enabled, _locked, _holder}
 * 152  thread_state       {size, prev, next, interp, current_frame, thread_id, native_thread_id,
 *                          datastack_chunk, status}
 * 224  interpreter_frame  {size, previous, executable, instr_ptr, localsplus, owner}
 * 272  code_object        {size, filename, name, qualname, linetable, firstlineno, argcount,
 *                          localsplusnames, localspluskinds, co_code_adaptive}
 * 352  pyobject {size, ob_type}   368 type_object {size, tp_name, tp_repr, tp_flags}
 * 400  tuple  424 list  448 dict  472 float  488 long
 * 512  bytes_object {size, ob_size, ob_sval}
 * 536  unicode_object {size, state, length, asciiobject_size}
 * 568  gc {size, collecting}                                              584 bytes in all
 */
struct debug_offsets_313 {
    char cookie[8];
    uint64_t version, free_threaded;
    struct {
        uint64_t size, finalizing, interpreters_head;
    } runtime_state;
    struct {
        uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
            gil_runtime_state, gil_enabled, gil_locked, gil_holder;
    } interpreter_state;
    struct {
        uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk,
            status;
    } thread_state;
    struct {
        uint64_t size, previous, executable, instr_ptr, localsplus, owner;
    } interpreter_frame;
    struct {
        uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
            localspluskinds, co_code_adaptive;
    } code_object;
    struct {
        uint64_t size, ob_type;
    } pyobject;
    struct {
        uint64_t size, tp_name, tp_repr, tp_flags;
    } type_object;
    struct {
        uint64_t size, ob_item, ob_size;
    } tuple_object, list_object;
    struct {
        uint64_t size, ma_keys, ma_values;
    } dict_object;
    struct {
        uint64_t size, ob_fval;
    } float_object;
    struct {
        uint64_t size, lv_tag, ob_digit;
    } long_object;
    struct {
        uint64_t size, ob_size, ob_sval;
    } bytes_object;
    struct {
        uint64_t size, state, length, asciiobject_size;
    } unicode_object;
    struct {
        uint64_t size, collecting;
    } gc;
};
_Static_assert(sizeof(struct debug_offsets_313) == 584, "3.13 _Py_DebugOffsets is 584 bytes");

/* -- Helpers ------------------------------------------------------------------------------------ */

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

/* An offset from _Py_DebugOffsets that must point inside a structure of `size` bytes. */
static bool off_ok(uint64_t off, uint64_t width, uint64_t size)
{
    return size <= (1u << 20) && off <= size && width <= size - off; /* no off + width wrap */
}

/* Fills the fields derived from the offsets: how much of each struct one read must cover. */
static void derive_sizes(struct pyrt_layout *L)
{
    L->ts_read_size = max_u32(max_u32(L->ts_next, L->ts_interp), L->ts_native_thread_id) + 8;
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
    L->co_hdr_start = start;
    L->co_hdr_size = end - start;
}

static void derive_sizes(struct pyrt_layout *L);

static int layout_from_debug_offsets(struct pyrt_layout *L, const struct debug_offsets_313 *d, char *err,
                                     size_t errlen)
{
    if (memcmp(d->cookie, "xdebugpy", 8) != 0)
        return fail(err, errlen, -EPROTO, "_PyRuntime does not start with the _Py_DebugOffsets cookie");
    if (d->free_threaded)
        return fail(err, errlen, -ENOTSUP,
                    "free-threaded CPython builds are not supported (tagged frame pointers)");
    const uint64_t ts = d->thread_state.size, fr = d->interpreter_frame.size, co = d->code_object.size,
                   is = d->interpreter_state.size;
    bool ok =
        off_ok(d->runtime_state.interpreters_head, 8, d->runtime_state.size) &&
        off_ok(d->interpreter_state.next, 8, is) && off_ok(d->interpreter_state.threads_head, 8, is) &&
        off_ok(d->thread_state.next, 8, ts) && off_ok(d->thread_state.interp, 8, ts) &&
        off_ok(d->thread_state.current_frame, 8, ts) && off_ok(d->thread_state.native_thread_id, 8, ts) &&
        off_ok(d->interpreter_frame.previous, 8, fr) && off_ok(d->interpreter_frame.executable, 8, fr) &&
        off_ok(d->interpreter_frame.instr_ptr, 8, fr) && off_ok(d->interpreter_frame.owner, 1, fr) &&
        off_ok(d->code_object.filename, 8, co) && off_ok(d->code_object.name, 8, co) &&
        off_ok(d->code_object.qualname, 8, co) && off_ok(d->code_object.linetable, 8, co) &&
        off_ok(d->code_object.firstlineno, 4, co) && off_ok(d->code_object.co_code_adaptive, 0, co + 1) &&
        off_ok(d->pyobject.ob_type, 8, d->pyobject.size) &&
        off_ok(d->bytes_object.ob_size, 8, d->bytes_object.size) &&
        off_ok(d->bytes_object.ob_sval, 0, d->bytes_object.size) &&
        off_ok(d->unicode_object.state, 4, d->unicode_object.size) &&
        off_ok(d->unicode_object.length, 8, d->unicode_object.size) &&
        d->unicode_object.asciiobject_size <= 256;
    if (!ok)
        return fail(err, errlen, -EPROTO, "_Py_DebugOffsets holds offsets outside their structs");
    L->rt_interpreters_head = (uint32_t)d->runtime_state.interpreters_head;
    L->is_next = (uint32_t)d->interpreter_state.next;
    L->is_threads_head = (uint32_t)d->interpreter_state.threads_head;
    L->ts_next = (uint32_t)d->thread_state.next;
    L->ts_interp = (uint32_t)d->thread_state.interp;
    L->ts_native_thread_id = (uint32_t)d->thread_state.native_thread_id;
    L->ts_current_frame = (uint32_t)d->thread_state.current_frame;
    L->ts_cframe = 0;
    L->f_code = (uint32_t)d->interpreter_frame.executable;
    L->f_previous = (uint32_t)d->interpreter_frame.previous;
    L->f_instr = (uint32_t)d->interpreter_frame.instr_ptr;
    L->f_owner = (uint32_t)d->interpreter_frame.owner;
    L->f_is_entry = -1;
    L->co_firstlineno = (uint32_t)d->code_object.firstlineno;
    L->co_filename = (uint32_t)d->code_object.filename;
    L->co_name = (uint32_t)d->code_object.name;
    L->co_qualname = (uint32_t)d->code_object.qualname;
    L->co_linetable = (uint32_t)d->code_object.linetable;
    L->co_code_adaptive = (uint32_t)d->code_object.co_code_adaptive;
    L->ob_type = (uint32_t)d->pyobject.ob_type;
    L->var_ob_size = (uint32_t)d->bytes_object.ob_size;
    L->bytes_ob_sval = (uint32_t)d->bytes_object.ob_sval;
    L->str_state = (uint32_t)d->unicode_object.state;
    L->str_length = (uint32_t)d->unicode_object.length;
    L->str_ascii_data = (uint32_t)d->unicode_object.asciiobject_size;
    /* PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (3.12 and later). */
    L->str_compact_data = L->str_ascii_data + 16;
    return 0;
}

/* -- Finding the runtime in the mapped files --------------------------------------------------- */

struct mapping {
    uint64_t start, end, offset;
};

struct found {
    uint64_t runtime_vaddr, section_vaddr, version_vaddr, codetype_vaddr;
};

/* Looks up the symbols and the .PyRuntime section of one ELF file. */
static int scan_elf(const char *path, struct found *f, Elf **keep, int *fd_out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
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
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(s, &sh))
            continue;
        const char *name = elf_strptr(e, shstrndx, sh.sh_name);
        if (name && strcmp(name, ".PyRuntime") == 0)
            f->section_vaddr = sh.sh_addr;
        if (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB)
            continue;
        Elf_Data *d = elf_getdata(s, NULL);
        if (!d || !sh.sh_entsize)
            continue;
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
        }
    }
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
 * it and the mapping of that file offset. */
static uint64_t to_target(Elf *e, const struct mapping *m, size_t nm, uint64_t vaddr)
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
        for (size_t k = 0; k < nm; k++)
            if (off >= m[k].offset && off < m[k].offset + (m[k].end - m[k].start))
                return m[k].start + (off - m[k].offset);
    }
    return 0;
}

static bool looks_like_python(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "python", 6) == 0 || strncmp(base, "libpython", 9) == 0;
}

/* Tries the mapped files of `pid`, Python-looking names first, then every other file. */
static int find_runtime(struct pyrt *rt, struct found *f, Elf **e, int *fd, struct mapping **maps,
                        size_t *nmaps)
{
    char mpath[64], line[4608];
    snprintf(mpath, sizeof(mpath), "/proc/%d/maps", (int)rt->pid);
    for (int pass = 0; pass < 2; pass++) {
        FILE *fp = fopen(mpath, "re");
        if (!fp)
            return -errno;
        char tried[64][256];
        int ntried = 0;
        while (fgets(line, sizeof(line), fp)) {
            uint64_t s, en, off;
            char perms[8];
            int pos = 0;
            if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &s, &en, perms, &off,
                       &pos) < 4 ||
                !pos)
                continue;
            char *path = line + pos;
            path[strcspn(path, "\n")] = 0;
            if (path[0] != '/' || strstr(path, " (deleted)"))
                continue;
            if ((pass == 0) != looks_like_python(path))
                continue;
            bool seen = false;
            for (int i = 0; i < ntried && !seen; i++)
                seen = strncmp(tried[i], path, sizeof(tried[i])) == 0;
            if (seen || ntried == 64)
                continue;
            snprintf(tried[ntried++], sizeof(tried[0]), "%s", path);
            char full[4200];
            snprintf(full, sizeof(full), "/proc/%d/root%s", (int)rt->pid, path);
            if (scan_elf(full, f, e, fd) != 0)
                continue;
            snprintf(rt->path, sizeof(rt->path), "%s", path);
            /* Every mapping of this file, for address translation. */
            rewind(fp);
            size_t cap = 0;
            while (fgets(line, sizeof(line), fp)) {
                pos = 0;
                if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &s, &en, perms, &off,
                           &pos) < 4 ||
                    !pos)
                    continue;
                path = line + pos;
                path[strcspn(path, "\n")] = 0;
                if (strcmp(path, rt->path) != 0)
                    continue;
                if (*nmaps == cap) {
                    cap = cap ? cap * 2 : 8;
                    struct mapping *nm = realloc(*maps, cap * sizeof(*nm));
                    if (!nm) {
                        fclose(fp);
                        return -ENOMEM;
                    }
                    *maps = nm;
                }
                (*maps)[(*nmaps)++] = (struct mapping){s, en, off};
            }
            fclose(fp);
            return 0;
        }
        fclose(fp);
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
        if (remote_read(r, rt->code_type + TP_BASICSIZE, &basicsize, 8) ||
            remote_read(r, rt->code_type + TP_NAME, &name_ptr, 8) || remote_read(r, name_ptr, name, 5))
            return fail(err, errlen, -EPROTO, "cannot read PyCode_Type of the target");
        if (strcmp(name, "code") != 0 || basicsize != L->co_code_adaptive)
            return fail(err, errlen, -EPROTO,
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
            return fail(err, errlen, -EPROTO,
                        "Python %s: thread state at 0x%" PRIx64 " does not point back to its "
                        "interpreter 0x%" PRIx64 "; layout mismatch, refusing",
                        rt->version, ts, interp);
    }
    return 0;
}

int pyrt_attach(struct pyrt *rt, struct remote *r, pid_t pid, char *err, size_t errlen)
{
    struct found f;
    struct mapping *maps = NULL;
    size_t nmaps = 0;
    Elf *e = NULL;
    int fd = -1, rc;

    memset(rt, 0, sizeof(*rt));
    rt->pid = pid;
    elf_version(EV_CURRENT);
    rc = find_runtime(rt, &f, &e, &fd, &maps, &nmaps);
    if (rc) {
        rc = fail(err, errlen, rc == -ENOENT ? -ENOENT : rc,
                  rc == -ENOENT ? "process %d: no Python runtime (_PyRuntime) in its mapped files"
                                : "process %d: cannot read its mappings",
                  (int)pid);
        goto out;
    }
    const char *base = strrchr(rt->path, '/');
    rt->shared_lib = strstr(base ? base : rt->path, ".so") != NULL;
    rt->runtime_addr = to_target(e, maps, nmaps, f.runtime_vaddr ? f.runtime_vaddr : f.section_vaddr);
    rt->code_type = to_target(e, maps, nmaps, f.codetype_vaddr);
    uint64_t version_addr = to_target(e, maps, nmaps, f.version_vaddr);
    if (!rt->runtime_addr) {
        rc = fail(err, errlen, -ENOENT, "%s: _PyRuntime is not mapped in process %d", rt->path, (int)pid);
        goto out;
    }
    uint32_t hex = 0;
    if (!version_addr) {
        rc = fail(err, errlen, -ENOTSUP,
                  "%s: no Py_Version symbol: Python 3.10 or older, not supported (3.11+ needed)", rt->path);
        goto out;
    }
    if ((rc = remote_read(r, version_addr, &hex, 4)) != 0) {
        rc = fail(err, errlen, rc, "process %d: cannot read Py_Version (%s)", (int)pid, strerror(-rc));
        goto out;
    }
    unsigned major = hex >> 24, minor = (hex >> 16) & 0xff;
    snprintf(rt->version, sizeof(rt->version), "%u.%u.%u", major, minor, (hex >> 8) & 0xff);
    if (major != 3 || minor < 11) {
        rc = fail(err, errlen, -ENOTSUP, "Python %s is not supported (3.11, 3.12, 3.13 are)", rt->version);
        goto out;
    }
    if (minor == 11) {
        rt->L = layout_311;
    } else if (minor == 12) {
        rt->L = layout_312;
    } else {
        struct debug_offsets_313 d;
        if ((rc = remote_read(r, rt->runtime_addr, &d, sizeof(d))) != 0) {
            rc = fail(err, errlen, rc, "process %d: cannot read _Py_DebugOffsets", (int)pid);
            goto out;
        }
        if (memcmp(d.cookie, "xdebugpy", 8) != 0) {
            rc = fail(err, errlen, -EPROTO, "Python %s: _PyRuntime lacks the xdebugpy cookie", rt->version);
            goto out;
        }
        if ((d.version >> 16) != (hex >> 16)) {
            rc = fail(err, errlen, -EPROTO,
                      "Python %s: _Py_DebugOffsets is for version 0x%" PRIx64 ", not 0x%x", rt->version,
                      d.version, hex);
            goto out;
        }
        if (minor > 13) {
            rc = fail(err, errlen, -ENOTSUP,
                      "Python %s: its _Py_DebugOffsets layout (version 0x%" PRIx64
                      ") is newer than this reader knows (3.13); refusing rather than guessing",
                      rt->version, d.version);
            goto out;
        }
        if ((rc = layout_from_debug_offsets(&rt->L, &d, err, errlen)) != 0)
            goto out;
        rt->L.free_threaded = d.free_threaded != 0;
    }
    rt->L.version_hex = hex;
    rt->L.major = major;
    rt->L.minor = minor;
    derive_sizes(&rt->L);
    rc = check_target(rt, r, err, errlen);
out:
    if (e)
        elf_end(e);
    if (fd >= 0)
        close(fd);
    free(maps);
    return rc;
}

int pyrt_layout_from_debug_offsets(struct pyrt_layout *L, const void *buf, size_t len, char *err,
                                   size_t errlen)
{
    struct debug_offsets_313 d;

    if (len < sizeof(d))
        return fail(err, errlen, -EPROTO, "_Py_DebugOffsets: %zu bytes, 3.13 has %zu", len, sizeof(d));
    memcpy(&d, buf, sizeof(d));
    memset(L, 0, sizeof(*L));
    int rc = layout_from_debug_offsets(L, &d, err, errlen);
    if (rc == 0)
        derive_sizes(L);
    return rc;
}

int pyrt_first_interp(const struct pyrt *rt, struct remote *r, uint64_t *interp)
{
    *interp = 0;
    return remote_read(r, rt->runtime_addr + rt->L.rt_interpreters_head, interp, 8);
}
