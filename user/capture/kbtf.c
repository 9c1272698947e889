/* kbtf — struct offsets from the kernel's BTF (see kbtf.h). Format: the kernel's
 * Documentation/bpf/btf.rst (header, then type records, then a string section). */
#include "capture/kbtf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BTF_MAGIC 0xeB9F

enum {
    K_INT = 1,
    K_PTR,
    K_ARRAY,
    K_STRUCT,
    K_UNION,
    K_ENUM,
    K_FWD,
    K_TYPEDEF,
    K_VOLATILE,
    K_CONST,
    K_RESTRICT,
    K_FUNC,
    K_FUNC_PROTO,
    K_VAR,
    K_DATASEC,
    K_FLOAT,
    K_DECL_TAG,
    K_TYPE_TAG,
    K_ENUM64,
};

struct hdr {
    uint16_t magic;
    uint8_t version, flags;
    uint32_t hdr_len, type_off, type_len, str_off, str_len;
};

struct type {
    uint32_t name_off, info, size_or_type;
};

struct member {
    uint32_t name_off, type, offset;
};

static unsigned kind(const struct type *t)
{
    return (t->info >> 24) & 0x1f;
}

static unsigned vlen(const struct type *t)
{
    return t->info & 0xffff;
}

/* Bytes that follow a type record of this kind, or -1 for a kind this reader does not know. */
static long extra(const struct type *t)
{
    switch (kind(t)) {
    case K_INT:
    case K_VAR:
    case K_DECL_TAG:
        return 4;
    case K_PTR:
    case K_FWD:
    case K_TYPEDEF:
    case K_VOLATILE:
    case K_CONST:
    case K_RESTRICT:
    case K_FUNC:
    case K_FLOAT:
    case K_TYPE_TAG:
        return 0;
    case K_ARRAY:
        return 12;
    case K_STRUCT:
    case K_UNION:
    case K_DATASEC:
    case K_ENUM64:
        return 12L * vlen(t);
    case K_ENUM:
    case K_FUNC_PROTO:
        return 8L * vlen(t);
    default:
        return -1;
    }
}

/* Walks the type records on to `id` (the index is built as far as a lookup needs: the few structs
 * the programs read are among the first thousand of ~130,000). NULL past the end, or when a record
 * is malformed (k->bad). */
static const struct type *type_at(struct kbtf *k, uint32_t id)
{
    while (id > k->ntypes && !k->bad && k->pos < k->types_len) {
        const struct type *t = (const struct type *)(k->types + k->pos);
        long n = k->pos + sizeof(*t) <= k->types_len ? extra(t) : -1;

        if (n < 0 || k->pos + sizeof(*t) + (uint64_t)n > k->types_len) {
            k->bad = true;
            break;
        }
        if (k->ntypes + 1 >= k->cap) {
            uint32_t cap = k->cap ? k->cap * 2 : 4096, *g = realloc(k->off, cap * sizeof(*g));

            if (!g) {
                k->bad = true;
                break;
            }
            k->off = g;
            k->cap = cap;
        }
        k->off[++k->ntypes] = k->pos;
        k->pos += (uint32_t)(sizeof(*t) + n);
    }
    return id && id <= k->ntypes ? (const struct type *)(k->types + k->off[id]) : NULL;
}

static const char *name_of(struct kbtf *k, const struct type *t)
{
    return t->name_off < k->strs_len ? k->strs + t->name_off : "";
}

/* Through typedefs and qualifiers. */
static const struct type *resolve(struct kbtf *k, uint32_t id)
{
    const struct type *t = type_at(k, id);

    for (int i = 0; t && i < 32; i++) {
        unsigned kd = kind(t);

        if (kd != K_TYPEDEF && kd != K_VOLATILE && kd != K_CONST && kd != K_RESTRICT && kd != K_TYPE_TAG)
            return t;
        t = type_at(k, t->size_or_type);
    }
    return NULL;
}

static int size_of(struct kbtf *k, uint32_t id, uint32_t *size)
{
    const struct type *t = resolve(k, id);
    uint32_t elem;

    if (!t)
        return -EINVAL;
    switch (kind(t)) {
    case K_INT:
    case K_ENUM:
    case K_ENUM64:
    case K_STRUCT:
    case K_UNION:
    case K_FLOAT:
        *size = t->size_or_type;
        return 0;
    case K_PTR:
        *size = sizeof(void *); /* the kernel's word: this reader runs on the kernel's ABI */
        return 0;
    case K_ARRAY: {
        const uint32_t *a = (const uint32_t *)(t + 1); /* type, index type, elements */

        if (size_of(k, a[0], &elem))
            return -EINVAL;
        *size = elem * a[2];
        return 0;
    }
    default:
        return -EINVAL;
    }
}

static int parse(struct kbtf *k)
{
    struct hdr h;

    if (k->size < sizeof(h))
        return -EINVAL;
    memcpy(&h, k->data, sizeof(h));
    if (h.magic != BTF_MAGIC || h.hdr_len < sizeof(h) || h.hdr_len > k->size ||
        (uint64_t)h.type_off + h.type_len > k->size - h.hdr_len ||
        (uint64_t)h.str_off + h.str_len > k->size - h.hdr_len || !h.str_len)
        return -EINVAL;
    k->types = k->data + h.hdr_len + h.type_off;
    k->types_len = h.type_len;
    k->strs = (const char *)k->data + h.hdr_len + h.str_off;
    k->strs_len = h.str_len;
    if (k->strs[k->strs_len - 1] || (h.type_off & 3))
        return -EINVAL;
    return 0;
}

int kbtf_open(struct kbtf *k, const char *path)
{
    struct stat st;
    int fd, rc;

    memset(k, 0, sizeof(*k));
    fd = open(path ? path : "/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) || st.st_size <= 0) {
        rc = -EINVAL;
        goto out;
    }
    k->size = (size_t)st.st_size;
    k->data = mmap(NULL, k->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (k->data != MAP_FAILED) {
        k->mapped = 1;
    } else {
        /* Before 6.16 the file cannot be mapped: one buffer, read a page at a time. */
        uint8_t *buf = malloc(k->size);
        size_t got = 0;
        ssize_t r = 0;

        k->data = buf;
        while (buf && got < k->size && (r = read(fd, buf + got, k->size - got)) > 0)
            got += (size_t)r;
        if (!buf || r < 0 || got != k->size) {
            rc = !buf ? -ENOMEM : r < 0 ? -errno : -EIO;
            goto out;
        }
    }
    rc = parse(k);
out:
    close(fd);
    if (rc)
        kbtf_close(k);
    return rc;
}

void kbtf_close(struct kbtf *k)
{
    if (k->data && k->mapped)
        munmap((void *)k->data, k->size);
    else
        free((void *)k->data);
    free(k->off);
    memset(k, 0, sizeof(*k));
}

/* Member `name` (len bytes) of struct or union t, found through anonymous members: *off its
 * byte offset from t, *type its type id. */
static int find_member(struct kbtf *k, const struct type *t, const char *name, size_t len, uint32_t *off,
                       uint32_t *type)
{
    const struct member *m = (const struct member *)(t + 1);
    bool bitfields = t->info >> 31;

    for (unsigned i = 0; i < vlen(t); i++) {
        uint32_t bits = bitfields ? m[i].offset & 0xffffff : m[i].offset;
        uint32_t bitsize = bitfields ? m[i].offset >> 24 : 0;

        if (m[i].name_off) {
            const char *s = m[i].name_off < k->strs_len ? k->strs + m[i].name_off : "";

            if (strncmp(s, name, len) || s[len])
                continue;
            if (bitsize || (bits & 7))
                return -EINVAL;
            *off = bits / 8;
            *type = m[i].type;
            return 0;
        }
        const struct type *inner = resolve(k, m[i].type);

        if (inner && (kind(inner) == K_STRUCT || kind(inner) == K_UNION) &&
            find_member(k, inner, name, len, off, type) == 0) {
            *off += bits / 8;
            return 0;
        }
    }
    return -ENOENT;
}

/* A path in the struct t: its offset and size. */
static int member_path(struct kbtf *k, const struct type *t, const char *path, uint32_t *off, uint32_t *size)
{
    uint32_t at = 0, o, id = 0;

    for (const char *p = path;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        int rc;

        if (!t || (kind(t) != K_STRUCT && kind(t) != K_UNION))
            return -ENOENT;
        if ((rc = find_member(k, t, p, len, &o, &id)) != 0)
            return rc;
        at += o;
        if (!dot)
            break;
        p = dot + 1;
        t = resolve(k, id);
    }
    *off = at;
    return size_of(k, id, size) ? -EINVAL : 0;
}

int kbtf_member(struct kbtf *k, const char *type, const char *member, uint32_t *off, uint32_t *size)
{
    int rc = -ENOENT;

    /* A name may have more than one record (a forward declaration, a duplicate the kernel's
     * deduplication left): the first struct that has the member. */
    const struct type *t;

    for (uint32_t id = 1; (t = type_at(k, id)); id++)
        if ((kind(t) == K_STRUCT || kind(t) == K_UNION) && !strcmp(name_of(k, t), type) &&
            (rc = member_path(k, t, member, off, size)) == 0)
            return 0;
    return k->bad ? -EINVAL : rc;
}

int kbtf_size(struct kbtf *k, const char *type, uint32_t *size)
{
    const struct type *t;

    for (uint32_t id = 1; (t = type_at(k, id)); id++)
        if ((kind(t) == K_STRUCT || kind(t) == K_UNION) && vlen(t) && !strcmp(name_of(k, t), type)) {
            *size = t->size_or_type;
            return 0;
        }
    return k->bad ? -EINVAL : -ENOENT;
}

int kbtf_sample_offsets(struct sample_koff *o, char *missing, size_t len)
{
    static const struct {
        const char *type, *member;
        size_t at;
        uint32_t size; /* 0: not checked (a flexible array) */
    } f[] = {
        {"task_struct", "mm", offsetof(struct sample_koff, task_mm), 8},
        {"task_struct", "group_leader", offsetof(struct sample_koff, task_group_leader), 8},
        {"task_struct", "start_boottime", offsetof(struct sample_koff, task_start_boottime), 8},
        {"task_struct", "pid", offsetof(struct sample_koff, task_pid), 4},
        {"task_struct", "tgid", offsetof(struct sample_koff, task_tgid), 4},
        {"task_struct", "thread_pid", offsetof(struct sample_koff, task_thread_pid), 8},
        {"task_struct", "se.sum_exec_runtime", offsetof(struct sample_koff, task_sum_exec), 8},
        {"task_struct", "se.prev_sum_exec_runtime", offsetof(struct sample_koff, task_prev_sum_exec), 8},
        {"mm_struct", "start_stack", offsetof(struct sample_koff, mm_start_stack), 8},
        {"pid", "level", offsetof(struct sample_koff, pid_level), 4},
        {"pid", "numbers", offsetof(struct sample_koff, pid_numbers), 0},
        {"upid", "nr", offsetof(struct sample_koff, upid_nr), 4},
    };
    struct kbtf k;
    uint32_t off, size;
    int rc = kbtf_open(&k, NULL);

    if (rc)
        return rc == -EINVAL ? -EPROTO : rc;
    for (size_t i = 0; !rc && i < sizeof(f) / sizeof(f[0]); i++) {
        if (kbtf_member(&k, f[i].type, f[i].member, &off, &size) || (f[i].size && size != f[i].size)) {
            snprintf(missing, len, "%s.%s of %u bytes", f[i].type, f[i].member, f[i].size);
            rc = -EPROTO;
        } else {
            memcpy((char *)o + f[i].at, &off, sizeof(off));
        }
    }
    if (!rc && kbtf_size(&k, "upid", &o->upid_size)) {
        snprintf(missing, len, "struct upid");
        rc = -EPROTO;
    }
    kbtf_close(&k);
    return rc;
}
