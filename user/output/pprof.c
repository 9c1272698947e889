/*
 * pprof — profile.proto (github.com/google/pprof/blob/main/proto/profile.proto), gzipped, written
 * by a small protobuf encoder. The subset we write:
 *
 *   Profile   1 sample_type: ValueType*   ("samples","count"), ("cpu","nanoseconds"); a wall or
 *                                         off-CPU profile: ("wall"|"offcpu","nanoseconds") alone
 *             2 sample: Sample*           one per distinct stack and thread
 *             3 mapping: Mapping          one, "pyebpf", has_functions/filenames/line_numbers
 *             4 location: Location*       one per frame (id = frame index + 1, mapping 1)
 *             5 function: Function*       one per (name, file)
 *             6 string_table: string*     [0] is ""
 *            10 duration_nanos  11 period_type: ValueType  12 period  13 comment: the command
 *   ValueType 1 type  2 unit              (string table indices)
 *   Sample    1 location_id: packed uint64, leaf first   2 value: packed int64   3 label: Label*
 *   Label     1 key  2 str                ("thread", "thread 812 (python3)"), ("thread_name",
 *                                         "python3": the NAME in the parentheses)
 *   Mapping   1 id  5 filename  7 has_functions  8 has_filenames  9 has_line_numbers
 *   Location  1 id  2 mapping_id  4 line: Line*     Line 1 function_id  2 line
 *   Function  1 id  2 name  3 system_name  4 filename
 *
 * Wire format: each field is key = (field << 3 | wire type) as a varint, then a varint (type 0) or
 * a varint length and that many bytes (type 2: strings, nested messages, packed arrays).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "output/escape.h"
#include "output/pprof.h"

/* -- Encoder ------------------------------------------------------------------------------------ */

struct pb {
    uint8_t *b;
    size_t n, cap;
    bool oom;
};

static void pb_put(struct pb *e, const void *d, size_t n)
{
    if (e->oom || n == 0) /* an empty nested message has no buffer yet */
        return;
    if (e->n + n > e->cap) {
        size_t cap = e->cap ? e->cap : 256;
        while (cap < e->n + n)
            cap *= 2;
        uint8_t *nb = realloc(e->b, cap);
        if (!nb) {
            e->oom = true;
            return;
        }
        e->b = nb;
        e->cap = cap;
    }
    memcpy(e->b + e->n, d, n);
    e->n += n;
}

static void pb_varint(struct pb *e, uint64_t v)
{
    uint8_t buf[10];
    size_t n = 0;
    do {
        buf[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            buf[n] |= 0x80;
        n++;
    } while (v);
    pb_put(e, buf, n);
}

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

static void pb_key(struct pb *e, unsigned field, unsigned wire)
{
    pb_varint(e, (uint64_t)field << 3 | wire);
}

/* A varint field; zero is the default and is left out, as proto3 does. */
static void pb_uint(struct pb *e, unsigned field, uint64_t v)
{
    if (!v)
        return;
    pb_key(e, field, WIRE_VARINT);
    pb_varint(e, v);
}

static void pb_bytes(struct pb *e, unsigned field, const void *d, size_t n)
{
    pb_key(e, field, WIRE_LEN);
    pb_varint(e, n);
    pb_put(e, d, n);
}

/* Appends `sub` as a nested message and empties it for reuse. */
static void pb_msg(struct pb *e, unsigned field, struct pb *sub)
{
    pb_bytes(e, field, sub->b, sub->n);
    e->oom |= sub->oom;
    sub->n = 0;
}

/* -- String table and functions ----------------------------------------------------------------- */

struct strtab {
    char **s;
    uint32_t n, cap;
    uint32_t *slots; /* index + 1 */
    uint32_t nslots;
};

static uint32_t str_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static uint32_t str_index_clean(struct strtab *t, const char *s);

/* Index of `s` in the table, added when new; UINT32_MAX when out of memory. Strings are stored
 * as valid UTF-8 (decoders reject anything else in a proto3 string). */
static uint32_t str_index(struct strtab *t, const char *s)
{
    char *clean = escape_utf8_dup(s);
    if (!clean)
        return UINT32_MAX;
    uint32_t i = str_index_clean(t, clean);
    free(clean);
    return i;
}

static uint32_t str_index_clean(struct strtab *t, const char *s)
{
    if ((t->n + 1) * 2 > t->nslots) {
        uint32_t ns = t->nslots ? t->nslots * 2 : 256;
        uint32_t *sl = calloc(ns, sizeof(*sl));
        if (!sl)
            return UINT32_MAX;
        for (uint32_t i = 0; i < t->n; i++) {
            uint32_t j = str_hash(t->s[i]) & (ns - 1);
            while (sl[j])
                j = (j + 1) & (ns - 1);
            sl[j] = i + 1;
        }
        free(t->slots);
        t->slots = sl;
        t->nslots = ns;
    }
    uint32_t j = str_hash(s) & (t->nslots - 1);
    for (; t->slots[j]; j = (j + 1) & (t->nslots - 1))
        if (strcmp(t->s[t->slots[j] - 1], s) == 0)
            return t->slots[j] - 1;
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 256;
        char **ns = realloc(t->s, cap * sizeof(*ns));
        if (!ns)
            return UINT32_MAX;
        t->s = ns;
        t->cap = cap;
    }
    char *copy = strdup(s);
    if (!copy)
        return UINT32_MAX;
    t->s[t->n] = copy;
    t->slots[j] = ++t->n;
    return t->n - 1;
}

static void strtab_free(struct strtab *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    free(t->slots);
}

/* -- Profile ------------------------------------------------------------------------------------ */

struct pp_ctx {
    const struct profile *p;
    struct strtab st;
    uint64_t *fn_key; /* function id - 1 -> (name << 32 | file) */
    uint32_t nfn;
    uint32_t *loc_fn; /* frame -> function id (0: thread frame, no location) */
    struct pb out, sub, sub2;
};

/* Function id for (name, file) in an open table `tab` of ids, created when new. */
static uint32_t function_id(struct pp_ctx *c, uint32_t name, uint32_t file, uint64_t *tab, uint32_t tabsz)
{
    uint64_t key = (uint64_t)name << 32 | file;
    uint32_t j = (uint32_t)((key * 0x9e3779b97f4a7c15ULL) >> 40) & (tabsz - 1);
    for (; tab[j]; j = (j + 1) & (tabsz - 1))
        if (c->fn_key[tab[j] - 1] == key)
            return (uint32_t)tab[j];
    c->fn_key[c->nfn++] = key;
    tab[j] = c->nfn;
    return c->nfn;
}

static int build_functions(struct pp_ctx *c, char *label, size_t labelsz)
{
    const struct profile *p = c->p;
    uint32_t tabsz = 64;
    while (tabsz < p->nframes * 2u + 2)
        tabsz *= 2;
    uint64_t *tab = calloc(tabsz, sizeof(*tab));
    if (!tab)
        return -ENOMEM;
    for (uint32_t i = 0; i < p->nframes; i++) {
        const struct frame *fr = &p->frames[i];
        c->loc_fn[i] = 0;
        if (fr->kind == FRAME_THREAD)
            continue;
        if (fr->kind == FRAME_PYTHON)
            snprintf(label, labelsz, "%s", fr->name);
        else
            profile_frame_label(p, i, label, labelsz);
        uint32_t name = str_index(&c->st, label);
        uint32_t file = str_index(&c->st, fr->file ? fr->file : (fr->kind == FRAME_KERNEL ? "[kernel]" : ""));
        if (name == UINT32_MAX || file == UINT32_MAX) {
            free(tab);
            return -ENOMEM;
        }
        c->loc_fn[i] = function_id(c, name, file, tab, tabsz);
    }
    free(tab);
    return 0;
}

/* str_index that marks the output failed when out of memory. */
static uint32_t sidx(struct pp_ctx *c, const char *s)
{
    uint32_t i = str_index(&c->st, s);
    if (i == UINT32_MAX)
        c->out.oom = true;
    return i;
}

/* The index of the first n bytes of s. */
static uint32_t sidxn(struct pp_ctx *c, const char *s, size_t n)
{
    char buf[256];

    snprintf(buf, sizeof(buf), "%.*s", (int)(n < sizeof(buf) ? n : sizeof(buf) - 1), s);
    return sidx(c, buf);
}

static void put_value_type(struct pp_ctx *c, unsigned field, const char *type, const char *unit)
{
    pb_uint(&c->sub, 1, sidx(c, type));
    pb_uint(&c->sub, 2, sidx(c, unit));
    pb_msg(&c->out, field, &c->sub);
}

static int put_samples(struct pp_ctx *c, uint64_t period)
{
    const struct profile *p = c->p;
    uint32_t *path = malloc(VIEW_MAX_DEPTH * sizeof(*path));
    if (!path)
        return -ENOMEM;
    uint32_t thread_key = sidx(c, "thread"), name_key = sidx(c, "thread_name");
    for (uint32_t n = 1; n < p->nnodes; n++) {
        uint64_t self = p->nodes[n].self;
        if (!self)
            continue;
        size_t d = profile_stack(p, n, path, VIEW_MAX_DEPTH);
        const char *thread = NULL;
        for (size_t i = d; i-- > 0;) { /* leaf first */
            uint32_t fi = p->nodes[path[i]].frame;
            if (p->frames[fi].kind == FRAME_THREAD) {
                thread = p->frames[fi].name;
                continue;
            }
            pb_varint(&c->sub2, (uint64_t)fi + 1);
        }
        pb_msg(&c->sub, 1, &c->sub2);
        if (!p->meta.weight)
            pb_varint(&c->sub2, self);
        pb_varint(&c->sub2, self * period);
        pb_msg(&c->sub, 2, &c->sub2);
        if (thread && thread[0]) {
            const char *open = strchr(thread, '('), *close = strrchr(thread, ')');

            pb_uint(&c->sub2, 1, thread_key);
            pb_uint(&c->sub2, 2, sidx(c, thread));
            pb_msg(&c->sub, 3, &c->sub2);
            if (open && close > open + 1) {
                pb_uint(&c->sub2, 1, name_key);
                pb_uint(&c->sub2, 2, sidxn(c, open + 1, (size_t)(close - open - 1)));
                pb_msg(&c->sub, 3, &c->sub2);
            }
        }
        pb_msg(&c->out, 2, &c->sub);
    }
    free(path);
    return 0;
}

static int gzip_to(FILE *f, const uint8_t *data, size_t n)
{
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    uint8_t buf[65536];
    z.next_in = (uint8_t *)data;
    int rc = 0, zr;
    do {
        /* avail_in is 32-bit: feed large buffers in pieces. */
        if (z.avail_in == 0 && n) {
            z.avail_in = n > (1u << 30) ? (1u << 30) : (uInt)n;
            n -= z.avail_in;
        }
        z.next_out = buf;
        z.avail_out = sizeof(buf);
        zr = deflate(&z, n ? Z_NO_FLUSH : Z_FINISH);
        if (zr == Z_STREAM_ERROR) {
            rc = -EIO;
            break;
        }
        if (fwrite(buf, 1, sizeof(buf) - z.avail_out, f) != sizeof(buf) - z.avail_out) {
            rc = -EIO;
            break;
        }
    } while (zr != Z_STREAM_END);
    deflateEnd(&z);
    return rc;
}

int pprof_write(const struct profile *p, FILE *f)
{
    struct pp_ctx c = {.p = p};
    char *label = malloc(4096);
    c.fn_key = malloc((p->nframes + 1) * sizeof(*c.fn_key));
    c.loc_fn = malloc((p->nframes + 1) * sizeof(*c.loc_fn));
    int rc = -ENOMEM;
    if (!label || !c.fn_key || !c.loc_fn || str_index(&c.st, "") != 0)
        goto out;
    uint64_t period = view_period_ns(p);
    if (!p->meta.weight)
        put_value_type(&c, 1, "samples", "count");
    put_value_type(&c, 1, p->meta.weight ? p->meta.weight : "cpu", "nanoseconds");
    rc = build_functions(&c, label, 4096);
    if (rc == 0)
        rc = put_samples(&c, period);
    if (rc)
        goto out;
    /* One mapping that says every location is already symbolised, so pprof tools do not try to
     * resolve addresses (there are none: a location is a frame, not an instruction). */
    pb_uint(&c.sub, 1, 1);
    pb_uint(&c.sub, 5, sidx(&c, "pyebpf"));
    pb_uint(&c.sub, 7, 1);
    pb_uint(&c.sub, 8, 1);
    pb_uint(&c.sub, 9, 1);
    pb_msg(&c.out, 3, &c.sub);
    for (uint32_t i = 0; i < p->nframes; i++) {
        if (!c.loc_fn[i])
            continue;
        pb_uint(&c.sub, 1, (uint64_t)i + 1);
        pb_uint(&c.sub, 2, 1);
        pb_uint(&c.sub2, 1, c.loc_fn[i]);
        pb_uint(&c.sub2, 2, p->frames[i].line);
        pb_msg(&c.sub, 4, &c.sub2);
        pb_msg(&c.out, 4, &c.sub);
    }
    for (uint32_t i = 0; i < c.nfn; i++) {
        pb_uint(&c.sub, 1, (uint64_t)i + 1);
        pb_uint(&c.sub, 2, c.fn_key[i] >> 32);
        pb_uint(&c.sub, 3, c.fn_key[i] >> 32);
        pb_uint(&c.sub, 4, c.fn_key[i] & 0xffffffffu);
        pb_msg(&c.out, 5, &c.sub);
    }
    if (p->meta.duration_s > 0)
        pb_uint(&c.out, 10, (uint64_t)(p->meta.duration_s * 1e9));
    put_value_type(&c, 11, p->meta.weight ? p->meta.weight : "cpu", "nanoseconds");
    pb_uint(&c.out, 12, period);
    if (p->meta.command)
        pb_uint(&c.out, 13, sidx(&c, p->meta.command));
    /* The string table goes last: every index above is known by now. */
    for (uint32_t i = 0; i < c.st.n; i++)
        pb_bytes(&c.out, 6, c.st.s[i], strlen(c.st.s[i]));
    if (c.out.oom || c.sub.oom || c.sub2.oom || c.st.n == 0) {
        rc = -ENOMEM;
        goto out;
    }
    rc = gzip_to(f, c.out.b, c.out.n);
out:
    free(label);
    free(c.fn_key);
    free(c.loc_fn);
    free(c.out.b);
    free(c.sub.b);
    free(c.sub2.b);
    strtab_free(&c.st);
    return rc;
}
