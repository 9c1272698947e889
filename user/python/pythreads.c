/*
 * pythreads — threading.Thread names from the target's memory (see pythreads.h).
 */
#include "python/pythreads.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "capture/remote.h"
#include "util/monotime.h"

#define MAX_ENTRIES 8192 /* entries of a dict read at most (sys.modules has a few hundred) */
#define MAX_NAME    64

/* Offsets per minor version (x86-64 and aarch64 default builds); PyThreadState.thread_id
 * (threading.get_ident()) is the runtime layout's ts_thread_id. */
struct thr_offsets {
    uint32_t is_modules;     /* PyInterpreterState: sys.modules (modules; imports.modules 3.12+) */
    uint32_t ht_cached_keys; /* PyHeapTypeObject: the shared keys of its instances' values */
};

static const struct thr_offsets offs[3] = {
    {888, 872},  /* 3.11 */
    {944, 880},  /* 3.12 */
    {7656, 880}, /* 3.13 */
};

/* Stable from 3.11 to 3.13. */
#define OB_TYPE        8
#define TP_BASICSIZE   32
#define TP_FLAGS       168
#define MD_DICT        16 /* PyModuleObject */
#define MA_KEYS        32 /* PyDictObject */
#define MA_VALUES      40
#define DK_LOG2_SIZE   8 /* PyDictKeysObject */
#define DK_LOG2_INDEX  9
#define DK_KIND        10
#define DK_NENTRIES    24
#define DK_INDICES     32
#define DK_GENERAL     0
#define MANAGED_DICT   (1ul << 4) /* Py_TPFLAGS_MANAGED_DICT */
#define INLINE_VALUES  (1ul << 2) /* Py_TPFLAGS_INLINE_VALUES (3.13) */
#define VALUES_HDR_313 8          /* _PyDictValues: capacity, size, embedded, valid, pad */

struct ctx {
    struct remote r;
    const struct pyrt_layout *L;
    unsigned minor;
};

static int rd64(struct ctx *c, uint64_t addr, uint64_t *v)
{
    return remote_read(&c->r, addr, v, 8);
}

/* The ASCII text of str `obj` into out (NUL-terminated); -ENOENT when it is not compact ASCII
 * or longer than size - 1, or (want_len >= 0) not want_len characters long. */
static int str_text_len(struct ctx *c, uint64_t obj, char *out, size_t size, int64_t want_len)
{
    const struct pyrt_layout *L = c->L;
    uint8_t h[32];
    uint32_t span = L->str_state + 4 - L->str_length, state;
    int64_t len;
    int rc;

    if (span > sizeof(h) || (rc = remote_read(&c->r, obj + L->str_length, h, span)))
        return -ENOENT;
    memcpy(&len, h, 8);
    memcpy(&state, h + (L->str_state - L->str_length), 4);
    if (!((state >> 5) & 1) || !((state >> 6) & 1) || len < 0 || (size_t)len >= size ||
        (want_len >= 0 && len != want_len))
        return -ENOENT;
    if ((rc = remote_read(&c->r, obj + L->str_ascii_data, out, (size_t)len)))
        return rc;
    out[len] = 0;
    return 0;
}

static int str_text(struct ctx *c, uint64_t obj, char *out, size_t size)
{
    return str_text_len(c, obj, out, size, -1);
}

/* The entries of the keys object at `keys`: *kind, *n, their address (*at, when given) and a
 * malloc'd copy (16 or 24 bytes each). */
static int keys_entries(struct ctx *c, uint64_t keys, uint8_t *kind, size_t *n, uint64_t *at, uint8_t **out)
{
    uint8_t h[DK_INDICES];
    int64_t nent;
    size_t esz;
    int rc;

    if ((rc = remote_read(&c->r, keys, h, sizeof(h))))
        return rc;
    memcpy(&nent, h + DK_NENTRIES, 8);
    *kind = h[DK_KIND];
    esz = *kind == DK_GENERAL ? 24 : 16;
    if (nent < 0 || nent > MAX_ENTRIES || h[DK_LOG2_INDEX] > 20 || h[DK_LOG2_SIZE] > 20)
        return -EPROTO;
    *n = (size_t)nent;
    if (at)
        *at = keys + DK_INDICES + (1ull << h[DK_LOG2_INDEX]);
    *out = malloc(*n * esz + 1);
    if (!*out)
        return -ENOMEM;
    rc = *n ? remote_read(&c->r, keys + DK_INDICES + (1ull << h[DK_LOG2_INDEX]), *out, *n * esz) : 0;
    if (rc) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

static uint64_t ent_u64(const uint8_t *e, size_t at)
{
    uint64_t v;

    memcpy(&v, e + at, 8);
    return v;
}

/* Index of the first of the n str keys at `key` (a pointer every `stride` bytes) that is `want`
 * (-ENOENT): every key's length, state and first characters are read in one batched call, not
 * one key after another (sys.modules holds hundreds; a name looked for misses in all of them). */
static int keys_match(struct ctx *c, const uint8_t *key, size_t n, size_t stride, const char *want)
{
    const struct pyrt_layout *L = c->L;
    const size_t wl = strlen(want), span = L->str_ascii_data + wl - L->str_length;
    int found = -ENOENT;

    if (L->str_state + 4 > L->str_ascii_data || wl >= MAX_NAME)
        return -ENOENT;
    struct remote_seg *segs = malloc(n * sizeof(*segs));
    uint8_t *buf = malloc(n * span + 1);
    if (!segs || !buf) {
        free(segs);
        free(buf);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        segs[i] = REMOTE_SEG(ent_u64(key + i * stride, 0) ? ent_u64(key + i * stride, 0) + L->str_length : 0,
                             buf + i * span, ent_u64(key + i * stride, 0) ? span : 0);
    if (remote_readv(&c->r, segs, n, true) >= 0) {
        for (size_t i = 0; i < n && found < 0; i++) {
            const uint8_t *h = buf + i * span;
            int64_t len;
            uint32_t state;
            if (!segs[i].len || !segs[i].ok)
                continue;
            memcpy(&len, h, 8);
            memcpy(&state, h + (L->str_state - L->str_length), 4);
            /* compact ASCII (the str's state bits), as long as `want` and spelt the same */
            if (((state >> 5) & 1) && ((state >> 6) & 1) && len == (int64_t)wl &&
                !memcmp(h + (L->str_ascii_data - L->str_length), want, wl))
                found = (int)i;
        }
    }
    free(segs);
    free(buf);
    return found;
}

/* Index of the str key `want` in the keys object (-ENOENT); *value: the entry's value. */
static int keys_find(struct ctx *c, uint64_t keys, const char *want, uint64_t *value)
{
    uint8_t kind, *e = NULL;
    size_t n, esz, koff, voff;
    int rc = keys_entries(c, keys, &kind, &n, NULL, &e), found = -ENOENT;

    if (rc)
        return rc;
    esz = kind == DK_GENERAL ? 24 : 16;
    koff = kind == DK_GENERAL ? 8 : 0;
    voff = kind == DK_GENERAL ? 16 : 8;
    if (n)
        found = keys_match(c, e + koff, n, esz, want);
    if (found >= 0)
        *value = ent_u64(e + (size_t)found * esz, voff);
    free(e);
    return found;
}

/* dict[key] for a str key. */
static int dict_get(struct ctx *c, uint64_t dict, const char *key, uint64_t *value)
{
    uint64_t keys, values;
    int i, rc;

    if ((rc = rd64(c, dict + MA_KEYS, &keys)) || (rc = rd64(c, dict + MA_VALUES, &values)))
        return rc;
    if ((i = keys_find(c, keys, key, value)) < 0)
        return i;
    if (!values)
        return *value ? 0 : -ENOENT;
    /* a split table: the values live apart, in key order */
    return rd64(c, values + (c->minor >= 13 ? VALUES_HDR_313 : 0) + 8 * (uint64_t)i, value)
               ?: (*value ? 0 : -ENOENT);
}

/* The attribute `name` of an instance of a class defined in Python (its managed or inline values,
 * else its dict). */
static int attr_get(struct ctx *c, uint64_t obj, const char *name, uint64_t *value)
{
    uint64_t type, flags, keys, values = 0, dict = 0, basic;
    int i, rc;

    if ((rc = rd64(c, obj + OB_TYPE, &type)) || (rc = rd64(c, type + TP_FLAGS, &flags)))
        return rc;
    if (c->minor >= 13 && (flags & INLINE_VALUES)) {
        uint8_t hdr[VALUES_HDR_313];

        if ((rc = rd64(c, type + TP_BASICSIZE, &basic)) ||
            (rc = remote_read(&c->r, obj + basic, hdr, sizeof(hdr))))
            return rc;
        if (hdr[3]) /* valid: no dict was made of them */
            values = obj + basic + VALUES_HDR_313;
        else if ((rc = rd64(c, obj - 24, &dict)))
            return rc;
    } else if (flags & MANAGED_DICT) {
        uint64_t w;

        if ((rc = rd64(c, obj - (c->minor == 11 ? 32 : 24), &w)))
            return rc;
        if (c->minor == 11 && w)
            values = w;
        else if (c->minor == 12 && (w & 1))
            values = w + 1; /* stored as values - 1: the low bit tells values from a dict */
        else if (c->minor == 11 && (rc = rd64(c, obj - 24, &dict)))
            return rc;
        else if (c->minor == 12)
            dict = w;
    } else {
        return -ENOENT;
    }
    if (dict)
        return dict_get(c, dict, name, value);
    if (!values)
        return -ENOENT;
    if ((rc = rd64(c, type + offs[c->minor - 11].ht_cached_keys, &keys)))
        return rc;
    uint64_t unused;

    if ((i = keys_find(c, keys, name, &unused)) < 0)
        return i;
    return rd64(c, values + 8 * (uint64_t)i, value) ?: (*value ? 0 : -ENOENT);
}

/* interp->modules["threading"].__dict__["_active"] into *active. */
static int find_active(struct ctx *c, uint64_t tstate, const struct thr_offsets *o, uint64_t *active)
{
    uint64_t interp, modules, mod, mdict;
    int rc;

    if ((rc = rd64(c, tstate + c->L->ts_interp, &interp)) || (rc = rd64(c, interp + o->is_modules, &modules)))
        return rc;
    if (!modules || (rc = dict_get(c, modules, "threading", &mod)) || (rc = rd64(c, mod + MD_DICT, &mdict)) ||
        (rc = dict_get(c, mdict, "_active", active)))
        return rc < 0 ? rc : -ENOENT;
    return 0;
}

/* One thread of threading._active as the last pass over the dict found it. */
struct pt_thread {
    uint64_t ident;  /* its key: threading.get_ident() (the entry's stored hash) */
    uint64_t thread; /* its value: the Thread */
    uint64_t index;  /* the entry's index in the keys object */
    int rc;          /* 0: name is the Thread's name; else why it has none */
    char name[MAX_NAME];
};

struct pythreads {
    uint64_t active;  /* threading._active (0: not found yet) */
    uint64_t keys;    /* its keys object at the last pass */
    uint64_t entries; /* the address of that object's entries */
    size_t n;
    struct pt_thread *t;
    /* The dict as last read: its keys object and entries [0, nseen), read at seen_ns or later
     * (the pass's own reading, or a check's). */
    uint64_t seen_keys, seen_ns;
    uint8_t *seen;
    size_t nseen;
};

void pythreads_free(struct pythreads *pt)
{
    if (pt) {
        free(pt->t);
        free(pt->seen);
    }
    free(pt);
}

/* What the Thread objects of one type need for their _name: where their values are and the
 * name's index in them (the type's shared keys). */
struct pt_type {
    uint64_t type;
    int rc;         /* 0, or the batch cannot read this type's instances (attr_get does) */
    uint64_t word;  /* offset from the object of the word that gives its values */
    uint64_t index; /* _name's index among the values */
};

static void type_of(struct ctx *c, uint64_t type, struct pt_type *ty)
{
    uint64_t flags, basic, keys, unused;
    int i;

    ty->type = type;
    ty->rc = -ENOENT;
    if (rd64(c, type + TP_FLAGS, &flags) || rd64(c, type + TP_BASICSIZE, &basic) ||
        rd64(c, type + offs[c->minor - 11].ht_cached_keys, &keys) || !keys)
        return;
    if (c->minor >= 13 && (flags & INLINE_VALUES))
        ty->word = basic; /* the values' header: its `valid` byte says they are in use */
    else if (c->minor < 13 && (flags & MANAGED_DICT))
        ty->word = (uint64_t)(c->minor == 11 ? -32 : -24);
    else
        return;
    if ((i = keys_find(c, keys, "_name", &unused)) < 0)
        return;
    ty->index = (uint64_t)i;
    ty->rc = 0;
}

/*
 * The names of the n Threads in t, each step one batched read for all of them: their types; the
 * word that leads to their values (3.11: the values pointer, 3.12: values - 1 tagged, 3.13: the
 * inline values' header); the _name value; the str's header and text. A Thread whose values are
 * elsewhere (a dict was made of them, a type without shared keys, a str longer than the read) is
 * read alone by attr_get and str_text. 200 threads named one by one, ~13 reads each, were 17 % of
 * the collector's first second.
 */
static void names_batch(struct ctx *c, struct pt_thread *t, size_t n)
{
    const struct pyrt_layout *L = c->L;
    const size_t span = L->str_ascii_data - L->str_length + MAX_NAME;
    struct remote_seg *seg = calloc(n, sizeof(*seg));
    uint64_t *w = calloc(n, sizeof(*w)), *val = calloc(n, sizeof(*val));
    uint8_t *txt = malloc(n * span + 1);
    struct pt_type ty[8];
    size_t nty = 0;
    int *which = calloc(n, sizeof(*which));

    for (size_t i = 0; i < n; i++)
        t[i].rc = 1; /* not read yet */
    if (!seg || !w || !val || !txt || !which || L->str_state + 4 > L->str_ascii_data)
        goto alone;
    /* types */
    for (size_t i = 0; i < n; i++)
        seg[i] = REMOTE_SEG(t[i].thread + OB_TYPE, &w[i], 8);
    if (remote_readv(&c->r, seg, n, true) < 0)
        goto alone;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;

        which[i] = -1;
        if (!seg[i].ok)
            continue;
        while (k < nty && ty[k].type != w[i])
            k++;
        if (k == nty && nty < sizeof(ty) / sizeof(ty[0]))
            type_of(c, w[i], &ty[nty++]);
        if (k < nty && !ty[k].rc)
            which[i] = (int)k;
    }
    /* the word to the values */
    for (size_t i = 0; i < n; i++)
        seg[i] =
            which[i] < 0 ? REMOTE_SEG(0, &w[i], 0) : REMOTE_SEG(t[i].thread + ty[which[i]].word, &w[i], 8);
    if (remote_readv(&c->r, seg, n, true) < 0)
        goto alone;
    for (size_t i = 0; i < n; i++) {
        uint64_t values = 0;

        if (which[i] < 0 || !seg[i].ok)
            which[i] = -1;
        else if (c->minor >= 13)
            values = ((const uint8_t *)&w[i])[3] ? t[i].thread + ty[which[i]].word + VALUES_HDR_313 : 0;
        else if (c->minor == 12)
            values = (w[i] & 1) ? w[i] + 1 : 0;
        else
            values = w[i];
        if (!values)
            which[i] = -1;
        seg[i] = which[i] < 0 ? REMOTE_SEG(0, &val[i], 0)
                              : REMOTE_SEG(values + 8 * ty[which[i]].index, &val[i], 8);
    }
    /* the _name values */
    if (remote_readv(&c->r, seg, n, true) < 0)
        goto alone;
    for (size_t i = 0; i < n; i++) {
        if (which[i] >= 0 && (!seg[i].ok || !val[i]))
            which[i] = -1;
        seg[i] = which[i] < 0 ? REMOTE_SEG(0, txt + i * span, 0)
                              : REMOTE_SEG(val[i] + L->str_length, txt + i * span, span);
    }
    /* the strs: header and text in one read (a read that runs off a mapping: str_text) */
    if (remote_readv(&c->r, seg, n, true) < 0)
        goto alone;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *h = txt + i * span;
        int64_t len;
        uint32_t state;

        if (which[i] < 0 || !seg[i].ok)
            continue;
        memcpy(&len, h, 8);
        memcpy(&state, h + (L->str_state - L->str_length), 4);
        if (!((state >> 5) & 1) || !((state >> 6) & 1) || len < 0 || len >= MAX_NAME) {
            t[i].rc = -ENOENT; /* not compact ASCII, or too long: as str_text says */
            continue;
        }
        memcpy(t[i].name, h + (L->str_ascii_data - L->str_length), (size_t)len);
        t[i].name[len] = 0;
        t[i].rc = 0;
    }
alone:
    for (size_t i = 0; i < n; i++) {
        uint64_t name;

        if (t[i].rc != 1)
            continue;
        t[i].rc = attr_get(c, t[i].thread, "_name", &name);
        if (!t[i].rc)
            t[i].rc = str_text(c, name, t[i].name, sizeof(t[i].name));
        else if (t[i].rc > 0)
            t[i].rc = -ENOENT;
    }
    free(seg);
    free(w);
    free(val);
    free(txt);
    free(which);
}

/* Reads threading._active whole, and the name of every Thread in it (names_batch). */
static int pass(struct ctx *c, struct pythreads *pt, uint64_t tstate, const struct thr_offsets *o)
{
    uint64_t kv[2], at, now = monotime_ns();
    uint8_t kind, *e = NULL;
    size_t n, m = 0;
    int rc;

    pt->n = 0;
    pt->keys = 0;
    free(pt->seen);
    pt->seen = NULL;
    /* the dict found before, or found again (a program may have replaced it) */
    for (int again = 0; again < 2; again++) {
        if (!pt->active && (rc = find_active(c, tstate, o, &pt->active))) {
            pt->active = 0;
            return rc;
        }
        if (!(rc = remote_read(&c->r, pt->active + MA_KEYS, kv, sizeof(kv))) && !kv[1] &&
            !(rc = keys_entries(c, kv[0], &kind, &n, &at, &e)) && kind == DK_GENERAL)
            break;
        free(e);
        e = NULL;
        pt->active = 0;
    }
    if (!e)
        return rc ? rc : -ENOENT;
    struct pt_thread *t = realloc(pt->t, (n + 1) * sizeof(*t));
    if (!t) {
        free(e);
        return -ENOMEM;
    }
    pt->t = t;
    for (size_t i = 0; i < n; i++)
        if (ent_u64(e + i * 24, 8) && ent_u64(e + i * 24, 16))
            t[m++] = (struct pt_thread){
                .ident = ent_u64(e + i * 24, 0), .thread = ent_u64(e + i * 24, 16), .index = i};
    names_batch(c, t, m);
    pt->n = m;
    pt->keys = pt->seen_keys = kv[0];
    pt->entries = at;
    pt->seen = e;
    pt->nseen = n;
    pt->seen_ns = now;
    return 0;
}

/* The thread of `ident` as the last pass found it, when its entry still holds the same Thread
 * (a thread that ended may have left its ident to a new one); NULL when not. "Still" is as of
 * `since` or later: the dict's keys object and entries are read again, all in one call, only when
 * the last reading is older (the threads of one drain, 200 started together, were a call each). */
static const struct pt_thread *still(struct ctx *c, struct pythreads *pt, uint64_t ident, uint64_t since)
{
    const struct pt_thread *t = NULL;

    for (size_t i = 0; i < pt->n && !t; i++)
        if (pt->t[i].ident == ident)
            t = &pt->t[i];
    if (!t)
        return NULL;
    if (!pt->seen || pt->seen_ns < since) {
        size_t n = pt->t[pt->n - 1].index + 1; /* the pass lists them in entry order */
        uint64_t now = monotime_ns();
        uint8_t *e = malloc(n * 24);
        struct remote_seg seg[2] = {REMOTE_SEG(pt->active + MA_KEYS, &pt->seen_keys, 8),
                                    REMOTE_SEG(pt->entries, e, n * 24)};

        free(pt->seen);
        pt->seen = NULL;
        if (!e || remote_readv(&c->r, seg, 2, false) != 2) {
            free(e);
            return NULL;
        }
        pt->seen = e;
        pt->nseen = n;
        pt->seen_ns = now;
    }
    const uint8_t *ent = pt->seen + 24 * t->index;
    if (pt->seen_keys != pt->keys || t->index >= pt->nseen || ent_u64(ent, 0) != ident || !ent_u64(ent, 8) ||
        ent_u64(ent, 16) != t->thread)
        return NULL;
    return t;
}

int pythreads_name(const struct pyrt *rt, pid_t pid, uint64_t tstate, uint64_t ident, uint64_t since,
                   struct pythreads **ptp, char *out, size_t size)
{
    struct ctx c = {.L = &rt->L, .minor = rt->L.minor};
    const struct pt_thread *t;
    uint64_t tid = ident;
    int rc;

    if (rt->L.major != 3 || c.minor < 11 || c.minor > 13 || rt->L.free_threaded || !rt->L.ts_thread_id)
        return -ENOTSUP;
    if (!*ptp && !(*ptp = calloc(1, sizeof(**ptp))))
        return -ENOMEM;
    remote_init(&c.r, pid);
    const struct thr_offsets *o = &offs[c.minor - 11];

    if (!tid && (rc = rd64(&c, tstate + rt->L.ts_thread_id, &tid)))
        return rc;
    /* A thread the last pass did not see (started since) or whose entry changed: a new pass. */
    if (!(t = still(&c, *ptp, tid, since))) {
        if ((rc = pass(&c, *ptp, tstate, o)))
            return rc;
        for (size_t i = 0; i < (*ptp)->n && !t; i++)
            if ((*ptp)->t[i].ident == tid)
                t = &(*ptp)->t[i];
        if (!t)
            return -ENOENT;
    }
    if (t->rc)
        return t->rc;
    if (strlen(t->name) >= size)
        return -ENOENT;
    memcpy(out, t->name, strlen(t->name) + 1);
    return 0;
}
