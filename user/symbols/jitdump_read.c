/*
 * jitdump reader. The input may be truncated (the writer is still running, or died), corrupt
 * or hostile: each size is checked against the bytes left before anything is read or
 * allocated, so the memory used is bounded by a small multiple of the input size.
 */
#include "symbols/jitdump_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jitdump_format.h"
#include "util/readfile.h"

/* A file larger than this is not a jitdump we are willing to hold in memory. */
#define JITREAD_MAX_FILE (1ull << 31)

struct pending {
    struct jitdump_read_line *lines;
    size_t nlines;
    uint8_t *unw;
    size_t unw_size, hdr_size;
    uint64_t mapped;
};

static void free_lines(struct jitdump_read_line *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i].file);
    free(l);
}

static void pending_clear_lines(struct pending *pd)
{
    free_lines(pd->lines, pd->nlines);
    pd->lines = NULL;
    pd->nlines = 0;
}

static void pending_clear_unw(struct pending *pd)
{
    free(pd->unw);
    pd->unw = NULL;
    pd->unw_size = pd->hdr_size = 0;
    pd->mapped = 0;
}

static int parse_debug_info(const uint8_t *rec, size_t rsize, struct pending *pd)
{
    struct jitdump_debug_info di;
    if (rsize < sizeof(di))
        return -EBADMSG;
    memcpy(&di, rec, sizeof(di));
    /* Each entry needs at least its fixed part and a NUL: refuse counts the record cannot
     * hold before allocating anything for them. */
    size_t room = rsize - sizeof(di);
    if (di.nr_entry > room / (sizeof(struct jitdump_debug_entry) + 1))
        return -EBADMSG;
    struct jitdump_read_line *lines = calloc(di.nr_entry ? di.nr_entry : 1, sizeof(*lines));
    if (!lines)
        return -ENOMEM;
    size_t off = sizeof(di);
    for (uint64_t i = 0; i < di.nr_entry; i++) {
        struct jitdump_debug_entry e;
        if (rsize - off < sizeof(e) + 1)
            goto bad;
        memcpy(&e, rec + off, sizeof(e));
        off += sizeof(e);
        const uint8_t *nul = memchr(rec + off, 0, rsize - off);
        if (!nul)
            goto bad;
        size_t flen = (size_t)(nul - (rec + off));
        lines[i].addr = e.addr;
        lines[i].line = e.lineno;
        lines[i].discrim = e.discrim;
        lines[i].file = strndup((const char *)rec + off, flen);
        if (!lines[i].file) {
            free_lines(lines, di.nr_entry);
            return -ENOMEM;
        }
        off += flen + 1;
    }
    pending_clear_lines(pd);
    pd->lines = lines;
    pd->nlines = di.nr_entry;
    return 0;
bad:
    free_lines(lines, di.nr_entry);
    return -EBADMSG;
}

static int parse_unwinding(const uint8_t *rec, size_t rsize, struct pending *pd)
{
    struct jitdump_unwinding_info u;
    if (rsize < sizeof(u))
        return -EBADMSG;
    memcpy(&u, rec, sizeof(u));
    if (u.unwinding_size > rsize - sizeof(u) || u.eh_frame_hdr_size > u.unwinding_size)
        return -EBADMSG;
    uint8_t *bytes = malloc(u.unwinding_size ? u.unwinding_size : 1);
    if (!bytes)
        return -ENOMEM;
    memcpy(bytes, rec + sizeof(u), u.unwinding_size);
    pending_clear_unw(pd);
    pd->unw = bytes;
    pd->unw_size = u.unwinding_size;
    pd->hdr_size = u.eh_frame_hdr_size;
    pd->mapped = u.mapped_size;
    return 0;
}

static int parse_code_load(const uint8_t *rec, size_t rsize, struct pending *pd, struct jitdump_read_dump *d,
                           size_t *cap)
{
    struct jitdump_code_load l;
    if (rsize < sizeof(l) + 1)
        return -EBADMSG;
    memcpy(&l, rec, sizeof(l));
    const uint8_t *name = rec + sizeof(l);
    const uint8_t *nul = memchr(name, 0, rsize - sizeof(l));
    if (!nul)
        return -EBADMSG;
    size_t nlen = (size_t)(nul - name);
    /* perf takes the code from the end of the record: it must not overlap the name. */
    if (l.code_size > rsize - sizeof(l) - nlen - 1)
        return -EBADMSG;
    if (d->nregions == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        struct jitdump_read_region *v = realloc(d->regions, ncap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        d->regions = v;
        *cap = ncap;
    }
    struct jitdump_read_region *r = &d->regions[d->nregions];
    memset(r, 0, sizeof(*r));
    r->name = strndup((const char *)name, nlen);
    if (!r->name)
        return -ENOMEM;
    r->addr = l.code_addr;
    r->size = l.code_size;
    r->index = l.code_index;
    r->timestamp = l.p.timestamp;
    r->pid = l.pid;
    r->tid = l.tid;
    /* DEBUG_INFO and UNWINDING_INFO describe the next load only. */
    r->lines = pd->lines;
    r->nlines = pd->nlines;
    pd->lines = NULL;
    pd->nlines = 0;
    if (pd->unw) {
        r->eh_frame = pd->unw;
        r->eh_frame_size = pd->unw_size - pd->hdr_size;
        r->eh_frame_hdr = pd->hdr_size ? pd->unw + r->eh_frame_size : NULL;
        r->eh_frame_hdr_size = pd->hdr_size;
        r->mapped_size = pd->mapped;
        pd->unw = NULL;
        pending_clear_unw(pd);
    }
    d->nregions++;
    return 0;
}

int jitdump_read_parse(const void *buf, size_t len, struct jitdump_read_dump *d)
{
    const uint8_t *p = buf;
    memset(d, 0, sizeof(*d));
    struct jitdump_file_header h;
    uint32_t magic;
    if (len < sizeof(magic))
        return -ENODATA;
    memcpy(&magic, p, sizeof(magic));
    if (magic == JITDUMP_MAGIC_SWAPPED)
        return -EPROTONOSUPPORT;
    if (magic != JITDUMP_MAGIC)
        return -EINVAL;
    if (len < sizeof(h))
        return -ENODATA;
    memcpy(&h, p, sizeof(h));
    if (h.version != JITDUMP_VERSION || h.total_size < sizeof(h))
        return -EINVAL;
    if (h.total_size > len)
        return -ENODATA;
    d->version = h.version;
    d->elf_mach = h.elf_mach;
    d->pid = h.pid;
    d->timestamp = h.timestamp;
    d->flags = h.flags;

    struct pending pd = {0};
    size_t cap = 0, off = h.total_size;
    int err = 0;
    d->consumed = off;
    while (off < len && err == 0) {
        struct jitdump_record_prefix pre;
        if (len - off < sizeof(pre)) {
            err = -ENODATA;
            break;
        }
        memcpy(&pre, p + off, sizeof(pre));
        if (pre.total_size < sizeof(pre)) {
            err = -EBADMSG;
            break;
        }
        if (pre.total_size > len - off) {
            err = -ENODATA;
            break;
        }
        const uint8_t *rec = p + off;
        size_t rsize = pre.total_size;
        switch (pre.id) {
        case JITDUMP_CODE_LOAD:
            err = parse_code_load(rec, rsize, &pd, d, &cap);
            break;
        case JITDUMP_CODE_MOVE:
            if (rsize < sizeof(struct jitdump_code_move))
                err = -EBADMSG;
            else
                d->nmoves++;
            break;
        case JITDUMP_CODE_DEBUG_INFO:
            err = parse_debug_info(rec, rsize, &pd);
            break;
        case JITDUMP_CODE_CLOSE:
            d->closed = 1;
            break;
        case JITDUMP_CODE_UNWINDING_INFO:
            err = parse_unwinding(rec, rsize, &pd);
            break;
        default:
            d->nunknown++;
            break;
        }
        if (err == 0) {
            off += rsize;
            d->consumed = off;
        }
    }
    pending_clear_lines(&pd);
    pending_clear_unw(&pd);
    return err;
}

int jitdump_read_file(const char *path, struct jitdump_read_dump *d)
{
    memset(d, 0, sizeof(*d));
    char *buf;
    size_t len;
    /* The writer may still be appending (or the file be damaged): parse what could be read. */
    int err = readfile(path, JITREAD_MAX_FILE, READFILE_KEEP_PARTIAL, &buf, &len);
    if (err)
        return err;
    err = jitdump_read_parse(buf, len, d);
    free(buf);
    return err;
}

void jitdump_read_free(struct jitdump_read_dump *d)
{
    for (size_t i = 0; i < d->nregions; i++) {
        struct jitdump_read_region *r = &d->regions[i];
        free(r->name);
        free(r->eh_frame);
        free_lines(r->lines, r->nlines);
    }
    free(d->regions);
    memset(d, 0, sizeof(*d));
}

const char *jitdump_read_strerror(int err)
{
    switch (err) {
    case 0:
        return "ok";
    case -ENODATA:
        return "truncated jitdump (ends inside a header or record)";
    case -EBADMSG:
        return "corrupt jitdump record (sizes do not fit)";
    case -EPROTONOSUPPORT:
        return "jitdump written with the other byte order (byte-swapped magic)";
    case -EINVAL:
        return "not a jitdump file (bad magic, version or header size)";
    default:
        return strerror(err < 0 ? -err : err);
    }
}

const struct jitdump_read_region *jitdump_read_find(const struct jitdump_read_dump *d, uint64_t addr)
{
    for (size_t i = d->nregions; i-- > 0;) {
        const struct jitdump_read_region *r = &d->regions[i];
        if (addr >= r->addr && addr - r->addr < r->size)
            return r;
    }
    return NULL;
}
