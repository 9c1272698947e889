/*
 * perf jitdump writer: DIR/jit-PID.dump for `perf record -k 1` + `perf inject --jit`.
 *
 *   $ perf record -k 1 --call-graph dwarf -e cpu-clock ./prog   # prog publishes with jitdump on
 *   $ perf inject --jit -i perf.data -o perf.jit.data
 *   $ perf report -i perf.jit.data                             # JIT names, stacks through them
 *
 * The file is created exclusively (never following a symlink), mode 0600, and its first page is
 * mapped PROT_READ|PROT_EXEC: that mapping is the MMAP record by which perf inject finds it.
 * Each region becomes [DEBUG_INFO] [UNWINDING_INFO] CODE_LOAD, all sized first and written with
 * one write() under the lock; CODE_CLOSE ends the file. Layout: jitdump_format.h. The quirks of
 * perf 6.1 this works around are in docs/jitdump.md.
 */
#include "jitdump.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cfi.h"
#include "jitdump_format.h"
#include "sinkfile.h"

struct jitdump {
    struct sinkfile f;
    enum pyjit_arch arch;
    void *map;
    size_t map_len;
    uint64_t next_index;
    size_t std_mapped; /* mapped_size of a trampoline or frame-pointer region */
    char dir[PATH_MAX];
    char path[PATH_MAX];
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Creates this process's file, writes the header and maps it. Caller holds jd->f.lock (or
 * owns jd alone). On failure nothing is left open. */
static int jitdump_start(struct jitdump *jd)
{
    int n = snprintf(jd->path, sizeof(jd->path), "%s/jit-%d.dump", jd->dir, (int)getpid());
    if (n < 0 || (size_t)n >= sizeof(jd->path))
        return -ENAMETOOLONG;
    int fd = sinkfile_create_excl(jd->path);
    if (fd < 0) {
        if (fd == -EEXIST || fd == -ELOOP)
            fprintf(stderr, "pyjit: jitdump: %s already exists (file or symlink); not touching it\n",
                    jd->path);
        else
            fprintf(stderr, "pyjit: jitdump: cannot create %s: %s\n", jd->path, strerror(-fd));
        return fd;
    }
    jd->f.fd = fd;
    jd->f.fork_gen = sinkfile_fork_gen();

    struct jitdump_file_header h = {
        .magic = JITDUMP_MAGIC,
        .version = JITDUMP_VERSION,
        .total_size = sizeof(h),
        .elf_mach = jd->arch,
        .pid = (uint32_t)getpid(),
        .timestamp = now_ns(),
    };
    int err = sinkfile_write(&jd->f, &h, sizeof(h));
    if (err == 0) {
        long pg = sysconf(_SC_PAGESIZE);
        jd->map_len = pg > 0 ? (size_t)pg : 4096;
        /* perf inject recognises the dump by this executable mapping of jit-PID.dump. */
        jd->map = mmap(NULL, jd->map_len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
        if (jd->map == MAP_FAILED) {
            err = -errno;
            jd->map = NULL;
            fprintf(stderr, "pyjit: jitdump: cannot map %s: %s\n", jd->path, strerror(-err));
        }
    }
    if (err < 0) {
        close(fd);
        unlink(jd->path);
        jd->f.fd = -1;
    }
    return err;
}

static void jitdump_stop(struct jitdump *jd)
{
    if (jd->map)
        munmap(jd->map, jd->map_len);
    jd->map = NULL;
    if (jd->f.fd >= 0)
        close(jd->f.fd);
    jd->f.fd = -1;
}

/* The .eh_frame (CIE, FDE, terminator) into b and the .eh_frame_hdr that follows it into hdr,
 * for the region's code at code_addr whose data perf places at code_addr + ALIGN8(code_size). */
static int build_unwind(struct cfi_buf *b, uint8_t hdr[CFI_EH_FRAME_HDR_SIZE], enum pyjit_arch arch,
                        const struct pyjit_region *r, uint64_t code_addr, uint64_t padded)
{
    uint64_t eh_addr = code_addr + padded;
    size_t cie = cfi_cie(b, arch);
    size_t fde = b->len;
    int err = cfi_fde(b, cie, arch, r, code_addr, eh_addr);
    if (err < 0)
        return err;
    cfi_end(b);
    if (b->oom)
        return -ENOMEM;
    cfi_eh_frame_hdr(hdr, eh_addr + b->len, eh_addr, code_addr, eh_addr + fde);
    return 0;
}

static size_t standard_mapped_size(enum pyjit_arch arch)
{
    /* Worst case of the fixed-size descriptions: a long trampoline whose pop is far away. */
    static const uint8_t code[1];
    size_t worst = 0;
    for (int kind = PYJIT_UNWIND_TRAMPOLINE; kind <= PYJIT_UNWIND_FP; kind++) {
        struct pyjit_region r = {.code = code,
                                 .size = 1u << 20,
                                 .name = "",
                                 .unwind = kind,
                                 .push_end = 4,
                                 .setup_end = 8,
                                 .pop_end = (1u << 20) - 4};
        struct cfi_buf b = {0};
        uint8_t hdr[CFI_EH_FRAME_HDR_SIZE];
        if (build_unwind(&b, hdr, arch, &r, 0x10000000, r.size) == 0 && b.len + sizeof(hdr) > worst)
            worst = b.len + sizeof(hdr);
        cfi_buf_free(&b);
    }
    return JITDUMP_ALIGN8(worst);
}

int jitdump_open(struct jitdump **out, const char *dir, enum pyjit_arch arch)
{
    *out = NULL;
    if (arch != PYJIT_ARCH_X86_64 && arch != PYJIT_ARCH_AARCH64)
        return -EINVAL;
    if (!dir || !*dir)
        dir = getenv("PYEBPF_JITDUMP_DIR");
    if (!dir || !*dir)
        dir = ".";
    struct jitdump *jd = calloc(1, sizeof(*jd));
    if (!jd)
        return -ENOMEM;
    if (strlen(dir) >= sizeof(jd->dir) - 32) {
        free(jd);
        return -ENAMETOOLONG;
    }
    strcpy(jd->dir, dir);
    jd->arch = arch;
    jd->std_mapped = standard_mapped_size(arch);
    sinkfile_init(&jd->f, "jitdump");
    int err = jitdump_start(jd);
    if (err < 0) {
        sinkfile_fini(&jd->f);
        free(jd);
        return err;
    }
    *out = jd;
    return 0;
}

size_t jitdump_stride(const struct jitdump *jd, size_t code_size)
{
    return JITDUMP_ALIGN8(code_size) + (jd ? jd->std_mapped : 0);
}

const char *jitdump_path(const struct jitdump *jd)
{
    return jd ? jd->path : NULL;
}

static void put_prefix(uint8_t *p, uint32_t id, size_t size, uint64_t ts)
{
    struct jitdump_record_prefix pre = {.id = id, .total_size = (uint32_t)size, .timestamp = ts};
    memcpy(p, &pre, sizeof(pre));
}

/* DEBUG_INFO: one entry per line-table row, each naming the file (perf 6.1 does not read the
 * shorthand), then a sentinel at the end of the code because perf ends the sequence at the
 * last entry instead of at the end of the code. */
static uint8_t *put_debug_info(uint8_t *p, const struct pyjit_region *r, uint64_t code_addr, const char *file,
                               size_t flen, uint64_t ts, size_t size)
{
    put_prefix(p, JITDUMP_CODE_DEBUG_INFO, size, ts);
    struct jitdump_debug_info d = {.code_addr = code_addr, .nr_entry = r->nlines + 1};
    memcpy(p + sizeof(d.p), (uint8_t *)&d + sizeof(d.p), sizeof(d) - sizeof(d.p));
    p += sizeof(d);
    for (size_t i = 0; i <= r->nlines; i++) {
        const struct pyjit_line *l = &r->lines[i < r->nlines ? i : r->nlines - 1];
        struct jitdump_debug_entry e = {
            .addr = code_addr + (i < r->nlines ? l->offset : r->size),
            .lineno = (int32_t)l->line,
        };
        memcpy(p, &e, sizeof(e));
        memcpy(p + sizeof(e), file, flen + 1);
        p += sizeof(e) + flen + 1;
    }
    return p;
}

int jitdump_code_load(struct jitdump *jd, const struct pyjit_region *r)
{
    if (!jd || !r || !r->code || r->size == 0 || r->size > UINT32_MAX / 2)
        return -EINVAL;
    const char *name = r->name ? r->name : "";
    size_t nlen = strlen(name);
    uint64_t code_addr = (uintptr_t)r->code;
    /* Code padded to 8: the unwinding data then sits at the same distance from the code in
     * the synthesised ELF whether perf puts .text at file offset 0x40 or 0x80. */
    size_t padded = JITDUMP_ALIGN8(r->size);

    bool lines = r->lines && r->nlines > 0;
    const char *file = r->filename ? r->filename : name;
    size_t flen = strlen(file);
    size_t dbg_size = 0;
    if (lines) {
        /* Rows in code order inside the code: perf turns them into one line sequence. */
        for (size_t i = 0; i < r->nlines; i++)
            if (r->lines[i].offset >= r->size || (i && r->lines[i].offset < r->lines[i - 1].offset))
                return -EINVAL;
        size_t per = sizeof(struct jitdump_debug_entry) + flen + 1;
        if (flen > UINT32_MAX / 4 || r->nlines + 1 > (UINT32_MAX - sizeof(struct jitdump_debug_info)) / per)
            return -E2BIG;
        dbg_size = sizeof(struct jitdump_debug_info) + (r->nlines + 1) * per;
    }

    struct cfi_buf cfi = {0};
    uint8_t hdr[CFI_EH_FRAME_HDR_SIZE];
    int err = build_unwind(&cfi, hdr, jd->arch, r, code_addr, padded);
    if (err < 0) {
        cfi_buf_free(&cfi);
        return err;
    }
    size_t unw_bytes = cfi.len + sizeof(hdr);
    size_t unw_size = sizeof(struct jitdump_unwinding_info) + unw_bytes;
    size_t load_size = sizeof(struct jitdump_code_load) + nlen + 1 + padded;
    if (nlen > UINT32_MAX / 4 || load_size > UINT32_MAX || unw_size > UINT32_MAX) {
        cfi_buf_free(&cfi);
        return -E2BIG;
    }
    size_t total = dbg_size + unw_size + load_size;
    uint8_t *buf = malloc(total);
    if (!buf) {
        cfi_buf_free(&cfi);
        return -ENOMEM;
    }

    pthread_mutex_lock(&jd->f.lock);
    if (jd->f.disabled) {
        err = -EBADF;
        goto out;
    }
    if (sinkfile_stale(&jd->f)) {
        /* First write in a forked child: leave the parent's file alone, start our own. */
        jitdump_stop(jd);
        if ((err = jitdump_start(jd)) < 0) {
            sinkfile_fail(&jd->f, "no file for the child process");
            goto out;
        }
    }
    uint64_t ts = now_ns();
    uint8_t *p = buf;
    if (lines)
        p = put_debug_info(p, r, code_addr, file, flen, ts, dbg_size);

    put_prefix(p, JITDUMP_CODE_UNWINDING_INFO, unw_size, ts);
    struct jitdump_unwinding_info u = {
        .unwinding_size = unw_bytes,
        .eh_frame_hdr_size = sizeof(hdr),
        .mapped_size = JITDUMP_ALIGN8(unw_bytes),
    };
    memcpy(p + sizeof(u.p), (uint8_t *)&u + sizeof(u.p), sizeof(u) - sizeof(u.p));
    memcpy(p + sizeof(u), cfi.p, cfi.len);
    memcpy(p + sizeof(u) + cfi.len, hdr, sizeof(hdr));
    p += unw_size;

    put_prefix(p, JITDUMP_CODE_LOAD, load_size, ts);
    struct jitdump_code_load l = {
        .pid = (uint32_t)getpid(),
        .tid = (uint32_t)gettid(),
        .vma = code_addr,
        .code_addr = code_addr,
        .code_size = padded,
        .code_index = jd->next_index++,
    };
    memcpy(p + sizeof(l.p), (uint8_t *)&l + sizeof(l.p), sizeof(l) - sizeof(l.p));
    p += sizeof(l);
    memcpy(p, name, nlen + 1);
    p += nlen + 1;
    memcpy(p, r->code, r->size);
    /* Padding reads as traps (x86 int3) or zero words (aarch64 udf), never as code. */
    memset(p + r->size, jd->arch == PYJIT_ARCH_X86_64 ? 0xcc : 0, padded - r->size);

    err = sinkfile_write(&jd->f, buf, total);
out:
    pthread_mutex_unlock(&jd->f.lock);
    free(buf);
    cfi_buf_free(&cfi);
    return err;
}

void jitdump_close(struct jitdump *jd)
{
    if (!jd)
        return;
    pthread_mutex_lock(&jd->f.lock);
    /* A child that never wrote has only the parent's fd: it must not close the parent's file. */
    if (!jd->f.disabled && !sinkfile_stale(&jd->f)) {
        uint8_t rec[sizeof(struct jitdump_record_prefix)];
        put_prefix(rec, JITDUMP_CODE_CLOSE, sizeof(rec), now_ns());
        sinkfile_write(&jd->f, rec, sizeof(rec));
    }
    jitdump_stop(jd);
    pthread_mutex_unlock(&jd->f.lock);
    sinkfile_fini(&jd->f);
    free(jd);
}
