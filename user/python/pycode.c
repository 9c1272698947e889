/* pycode — code object cache and symbolisation (see pycode.h). */
#include "python/pycode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "python/linetable.h"
#include "sample.h"

#define NAME_MAX_CHARS 1024       /* longer qualnames and filenames are cut */
#define LINETABLE_MAX  (1u << 20) /* larger tables are refused as absurd */
#define CODE_CACHE_MAX (1u << 18) /* entries before the cache starts over */
#define FIN_CACHE_MAX  (1u << 20)
#define FETCH_MAX      256 /* new code objects fetched per sample */

enum code_state { CODE_EMPTY = 0, CODE_HEADER, CODE_FILLED };

/* An entry is keyed by (address, ident): ident 0 for frames read remotely (the header is read
 * again in every sample that uses it), the capture's ident for in-kernel frames (filled once from
 * a header that folds to it: the same object for as long as it lives, never re-read). */
struct code_entry {
    uint64_t addr;    /* 0: free slot */
    uint64_t ident;   /* 0, or the identity the entry was filled for */
    uint64_t checked; /* sample whose header read validated this entry */
    uint32_t id;      /* key for finished frames; new for every fill */
    enum code_state state;
    bool bad;  /* header unreadable or not a code object in this sample */
    bool gone; /* the header read in this sample folds to another ident: the object captured
                  was freed and the address reused before it could be named */
    uint8_t qual[PYCODE_QUAL_SIZE]; /* its qualname's length and hash words when filled */
    int32_t firstlineno;
    char *qualname, *filename;
    struct linetable lt;
    uint8_t *hdr;
};

struct fin_entry {
    uint64_t key; /* id << 32 | (offset + 1); 0: free */
    uint32_t frame;
};

struct pycode {
    const struct pyrt *rt;
    struct remote *r;
    struct profile *prof;
    struct pystack_stats *st;
    uint64_t sample;
    uint32_t next_id;
    struct code_entry *codes;
    uint32_t ncodes, codes_cap; /* cap: power of two */
    struct fin_entry *fin;
    uint32_t nfin, fin_cap;
    int64_t unknown_frame; /* "<unreadable>" frame, interned once */
    int64_t freed_frame;   /* PYSTACK_FREED */
};

static uint64_t hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* -- Code table ---------------------------------------------------------------------------------- */

static void entry_clear(struct code_entry *e)
{
    free(e->qualname);
    free(e->filename);
    free(e->hdr);
    linetable_free(&e->lt);
    e->qualname = e->filename = NULL;
    e->hdr = NULL;
    e->state = CODE_EMPTY;
}

static uint32_t code_hash(uint64_t addr, uint64_t ident)
{
    return (uint32_t)hash64(addr ^ ident * 0x9e3779b97f4a7c15ULL);
}

static struct code_entry *code_find(const struct pycode *c, uint64_t addr, uint64_t ident)
{
    uint32_t mask = c->codes_cap - 1;
    for (uint32_t i = code_hash(addr, ident) & mask;; i = (i + 1) & mask) {
        if (c->codes[i].addr == addr && c->codes[i].ident == ident)
            return &c->codes[i];
        if (!c->codes[i].addr)
            return NULL;
    }
}

static void codes_reset(struct pycode *c)
{
    for (uint32_t i = 0; i < c->codes_cap; i++)
        if (c->codes[i].addr)
            entry_clear(&c->codes[i]);
    memset(c->codes, 0, c->codes_cap * sizeof(*c->codes));
    c->ncodes = 0;
}

static int codes_grow(struct pycode *c)
{
    uint32_t ncap = c->codes_cap * 2;
    struct code_entry *n = calloc(ncap, sizeof(*n));
    if (!n)
        return -ENOMEM;
    for (uint32_t i = 0; i < c->codes_cap; i++) {
        if (!c->codes[i].addr)
            continue;
        uint32_t j = code_hash(c->codes[i].addr, c->codes[i].ident) & (ncap - 1);
        while (n[j].addr)
            j = (j + 1) & (ncap - 1);
        n[j] = c->codes[i];
    }
    free(c->codes);
    c->codes = n;
    c->codes_cap = ncap;
    return 0;
}

static struct code_entry *code_get(struct pycode *c, uint64_t addr, uint64_t ident)
{
    struct code_entry *e = code_find(c, addr, ident);
    if (e)
        return e;
    if ((c->ncodes + 1) * 2 > c->codes_cap && codes_grow(c) != 0)
        return NULL;
    uint32_t mask = c->codes_cap - 1;
    uint32_t i = code_hash(addr, ident) & mask;
    while (c->codes[i].addr)
        i = (i + 1) & mask;
    c->codes[i] = (struct code_entry){.addr = addr, .ident = ident};
    c->ncodes++;
    c->st->code_objects = c->ncodes;
    return &c->codes[i];
}

/* -- Finished frames ----------------------------------------------------------------------------- */

static int fin_lookup(struct pycode *c, uint64_t key, uint32_t *frame)
{
    uint32_t mask = c->fin_cap - 1;
    for (uint32_t i = (uint32_t)hash64(key) & mask;; i = (i + 1) & mask) {
        if (c->fin[i].key == key) {
            *frame = c->fin[i].frame;
            return 0;
        }
        if (!c->fin[i].key)
            return -ENOENT;
    }
}

static void fin_insert(struct pycode *c, uint64_t key, uint32_t frame)
{
    if ((c->nfin + 1) * 2 > c->fin_cap) {
        uint32_t ncap = c->fin_cap * 2;
        struct fin_entry *n = ncap <= FIN_CACHE_MAX ? calloc(ncap, sizeof(*n)) : NULL;
        if (!n) { /* full or no memory: start over */
            memset(c->fin, 0, c->fin_cap * sizeof(*c->fin));
            c->nfin = 0;
        } else {
            for (uint32_t i = 0; i < c->fin_cap; i++) {
                if (!c->fin[i].key)
                    continue;
                uint32_t j = (uint32_t)hash64(c->fin[i].key) & (ncap - 1);
                while (n[j].key)
                    j = (j + 1) & (ncap - 1);
                n[j] = c->fin[i];
            }
            free(c->fin);
            c->fin = n;
            c->fin_cap = ncap;
        }
    }
    uint32_t mask = c->fin_cap - 1;
    uint32_t i = (uint32_t)hash64(key) & mask;
    while (c->fin[i].key)
        i = (i + 1) & mask;
    c->fin[i] = (struct fin_entry){key, frame};
    c->nfin++;
}

/* -- Lifecycle ----------------------------------------------------------------------------------- */

int pycode_new(struct pycode **out, const struct pyrt *rt, struct remote *r, struct profile *prof,
               struct pystack_stats *st)
{
    struct pycode *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->rt = rt;
    c->r = r;
    c->prof = prof;
    c->st = st;
    c->next_id = 1;
    c->codes_cap = 256;
    c->fin_cap = 1024;
    c->codes = calloc(c->codes_cap, sizeof(*c->codes));
    c->fin = calloc(c->fin_cap, sizeof(*c->fin));
    c->unknown_frame = profile_frame(prof, FRAME_PYTHON, "<unreadable>", NULL, 0);
    c->freed_frame = profile_frame(prof, FRAME_PYTHON, PYSTACK_FREED, PYSTACK_FREED, 0);
    if (!c->codes || !c->fin || c->unknown_frame < 0 || c->freed_frame < 0) {
        pycode_free(c);
        return -ENOMEM;
    }
    *out = c;
    return 0;
}

void pycode_free(struct pycode *c)
{
    if (!c)
        return;
    if (c->codes)
        codes_reset(c);
    free(c->codes);
    free(c->fin);
    free(c);
}

void pycode_begin(struct pycode *c)
{
    c->sample++;
}

/* Usable in this sample: an entry filled for its capture's ident holds that object's names for
 * good; one without (a remote read) only when its header was read again in this sample. */
static bool fresh(const struct pycode *c, const struct code_entry *e)
{
    return e->checked == c->sample || (e->ident && e->state == CODE_FILLED);
}

/* -- Validation ---------------------------------------------------------------------------------- */

static uint64_t hdr_u64(const struct pycode *c, const uint8_t *hdr, uint32_t off)
{
    uint64_t v;
    memcpy(&v, hdr + (off - c->rt->L.co_hdr_start), 8);
    return v;
}

/* The identity of a code object from its header and its qualname's length and hash words (`qs`,
 * read at the str's length): the fold the kernel computes (sample.h). */
static uint64_t code_ident(const struct pycode *c, const uint8_t *hdr, const uint8_t *qs)
{
    const struct pyrt_layout *L = &c->rt->L;
    uint64_t length, hash;
    memcpy(&length, qs, 8);
    memcpy(&hash, qs + 8, 8);
    return sample_py_ident(hdr + (L->co_id_start - L->co_hdr_start), L->co_id_size, length, hash);
}

/* The object an in-kernel frame ran was freed before it could be named (pycode.h). */
static void mark_freed(struct pycode *c, struct code_entry *e)
{
    e->gone = true;
    c->st->code_freed++;
}

/* Applies a freshly read header to the entry, with its qualname's length and hash words read in
 * the same call (`qual`; NULL: not read). A filled entry stays only when both are as they were:
 * on 3.11 a new code object often takes a freed one's address with every pointer of its header
 * the same (the dead function's name freed, the next name given its address), so the header
 * alone cannot tell them apart. Returns true when the entry is usable. */
static bool apply_header(struct pycode *c, struct code_entry *e, const uint8_t *hdr, const uint8_t *qual)
{
    const struct pyrt_layout *L = &c->rt->L;

    e->checked = c->sample;
    e->bad = e->gone = false;
    if (c->rt->code_type && hdr_u64(c, hdr, L->ob_type) != c->rt->code_type) {
        if (e->ident) { /* what ran is no code object any more */
            mark_freed(c, e);
            return false;
        }
        e->bad = true;
        c->st->bad_code++;
        if (e->state != CODE_EMPTY)
            c->st->code_stale++;
        entry_clear(e);
        return false;
    }
    if (e->state != CODE_EMPTY && memcmp(e->hdr, hdr, L->co_hdr_size) == 0 &&
        (e->state != CODE_FILLED || e->ident || (qual && memcmp(e->qual, qual, PYCODE_QUAL_SIZE) == 0)))
        return true;
    if (e->state != CODE_EMPTY)
        c->st->code_stale++;
    entry_clear(e);
    e->hdr = malloc(L->co_hdr_size);
    if (!e->hdr) {
        e->bad = true;
        return false;
    }
    memcpy(e->hdr, hdr, L->co_hdr_size);
    e->state = CODE_HEADER;
    return true;
}

void pycode_header(struct pycode *c, uint64_t addr, const uint8_t *hdr, const uint8_t *qual)
{
    struct code_entry *e = code_get(c, addr, 0);
    if (e)
        apply_header(c, e, hdr, qual);
}

uint64_t pycode_qual_addr(const struct pycode *c, uint64_t addr)
{
    const struct code_entry *e = code_find(c, addr, 0);
    if (!e || e->state != CODE_FILLED)
        return 0;
    return hdr_u64(c, e->hdr, c->rt->L.co_qualname) + c->rt->L.str_length;
}

bool pycode_checked(const struct pycode *c, uint64_t addr)
{
    const struct code_entry *e = code_find(c, addr, 0);
    return e && fresh(c, e);
}

/* -- Fetching names and line tables ------------------------------------------------------------- */

struct strhdr {
    uint8_t raw[24]; /* length .. state */
};

/* Appends the UTF-8 encoding of code point `cp`. */
static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 63));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | ((cp >> 6) & 63));
        o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    if (cp > 0x10ffff)
        cp = 0xfffd;
    o[0] = (char)(0xf0 | cp >> 18);
    o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63));
    o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

struct strplan {
    uint64_t addr, len; /* remote data to read */
    unsigned kind;      /* 1, 2, 4 bytes per character; 0: unusable string */
    uint64_t chars;
};

/* Where a str's characters are, from its header (length, state). */
static struct strplan plan_str(const struct pycode *c, uint64_t obj, const uint8_t *h)
{
    const struct pyrt_layout *L = &c->rt->L;
    struct strplan p = {0};
    int64_t length;
    uint32_t state;

    memcpy(&length, h, 8);
    memcpy(&state, h + (L->str_state - L->str_length), 4);
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (!compact || length < 0 || (kind != 1 && kind != 2 && kind != 4))
        return p;
    p.kind = kind;
    p.chars = (uint64_t)length < NAME_MAX_CHARS ? (uint64_t)length : NAME_MAX_CHARS;
    p.addr = obj + (ascii ? L->str_ascii_data : L->str_compact_data);
    p.len = p.chars * kind;
    return p;
}

static char *decode_str(const struct strplan *p, const uint8_t *data)
{
    char *s = malloc(p->chars * 4 + 1), *o = s;
    if (!s)
        return NULL;
    for (uint64_t i = 0; i < p->chars; i++) {
        uint32_t cp;
        if (p->kind == 1)
            cp = data[i];
        else if (p->kind == 2) {
            uint16_t v;
            memcpy(&v, data + 2 * i, 2);
            cp = v;
        } else
            memcpy(&cp, data + 4 * i, 4);
        /* No real name or path holds a NUL, and a compact str ends with one: a NUL inside
         * the length means the length is forged or the object is not a str. */
        if (!cp) {
            free(s);
            return NULL;
        }
        o += put_utf8(o, cp);
    }
    *o = 0;
    return s;
}

/* Fills entries in CODE_HEADER state: str/bytes headers in one call, their contents in a second. */
static void fetch(struct pycode *c, struct code_entry **todo, size_t n)
{
    const struct pyrt_layout *L = &c->rt->L;
    const uint32_t strhdr = L->str_state + 4 - L->str_length;
    struct remote_seg *segs = calloc(n * 3, sizeof(*segs));
    uint8_t(*hb)[24] = calloc(n * 3, sizeof(*hb));
    struct strplan *plans = calloc(n * 3, sizeof(*plans));
    uint8_t **bufs = calloc(n * 3, sizeof(*bufs));

    if (!segs || !hb || !plans || !bufs)
        goto out;
    for (size_t i = 0; i < n; i++) {
        uint64_t q = hdr_u64(c, todo[i]->hdr, L->co_qualname);
        uint64_t f = hdr_u64(c, todo[i]->hdr, L->co_filename);
        uint64_t t = hdr_u64(c, todo[i]->hdr, L->co_linetable);
        segs[3 * i] = REMOTE_SEG(q + L->str_length, hb[3 * i], strhdr);
        segs[3 * i + 1] = REMOTE_SEG(f + L->str_length, hb[3 * i + 1], strhdr);
        segs[3 * i + 2] = REMOTE_SEG(t + L->var_ob_size, hb[3 * i + 2], 8);
    }
    if (remote_readv(c->r, segs, n * 3, true) < 0)
        goto out;
    /* An entry filled for a capture's ident: only from the object that had it. Another object at
     * the address now (its header or its qualname differs), or none: the frame's code was freed. */
    for (size_t i = 0; i < n; i++) {
        struct code_entry *e = todo[i];
        if (e->ident && (!segs[3 * i].ok || code_ident(c, e->hdr, hb[3 * i]) != e->ident)) {
            mark_freed(c, e);
            segs[3 * i].ok = segs[3 * i + 1].ok = segs[3 * i + 2].ok = false;
        }
    }
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 2; k++) {
            size_t j = 3 * i + k;
            if (segs[j].ok)
                plans[j] = plan_str(c, segs[j].addr - L->str_length, hb[j]);
        }
        size_t j = 3 * i + 2;
        int64_t size;
        memcpy(&size, hb[j], 8);
        if (segs[j].ok && size >= 0 && size <= LINETABLE_MAX) {
            plans[j].kind = 1;
            plans[j].addr = segs[j].addr - L->var_ob_size + L->bytes_ob_sval;
            plans[j].len = plans[j].chars = (uint64_t)size;
        }
    }
    for (size_t j = 0; j < n * 3; j++) {
        bufs[j] = plans[j].kind ? malloc(plans[j].len + 1) : NULL;
        segs[j] = REMOTE_SEG(plans[j].addr, bufs[j], bufs[j] ? plans[j].len : 0);
    }
    if (remote_readv(c->r, segs, n * 3, true) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        struct code_entry *e = todo[i];
        uint32_t fl;
        if (e->gone)
            continue; /* stays a header: read again if the ident comes back */
        memcpy(&fl, e->hdr + (L->co_firstlineno - L->co_hdr_start), 4);
        e->firstlineno = (int32_t)fl;
        e->qualname = bufs[3 * i] && segs[3 * i].ok ? decode_str(&plans[3 * i], bufs[3 * i]) : NULL;
        e->filename =
            bufs[3 * i + 1] && segs[3 * i + 1].ok ? decode_str(&plans[3 * i + 1], bufs[3 * i + 1]) : NULL;
        e->lt = (struct linetable){.firstlineno = e->firstlineno};
        if (bufs[3 * i + 2] && segs[3 * i + 2].ok &&
            linetable_decode(&e->lt, bufs[3 * i + 2], plans[3 * i + 2].len, e->firstlineno) != 0)
            c->st->errors++;
        /* The header was read as a code object, its strings were refused (absurd or freed): the
         * frame is named PYSTACK_REFUSED, with that as its file too when the file is refused, so
         * it never passes for "no code object read" (bare <unreadable>, whose chain the merge
         * and the in-kernel path distrust) and its refusal shows in every mode. */
        if (!e->qualname || !e->filename) {
            c->st->errors++;
            if (!e->qualname)
                e->qualname = strdup(PYSTACK_REFUSED);
            if (!e->filename)
                e->filename = strdup(PYSTACK_REFUSED);
        }
        memcpy(e->qual, hb[3 * i], PYCODE_QUAL_SIZE);
        e->id = c->next_id++;
        e->state = CODE_FILLED;
    }
out:
    if (bufs)
        for (size_t j = 0; j < n * 3; j++)
            free(bufs[j]);
    free(bufs);
    free(plans);
    free(hb);
    free(segs);
}

/* Makes every code object of the sample usable: one header read for those not validated yet,
 * then one fetch for the new ones. */
static void resolve(struct pycode *c, const struct pystack_raw *raw, size_t n)
{
    const struct pyrt_layout *L = &c->rt->L;
    struct code_entry *need[FETCH_MAX];
    size_t nneed = 0;

    /* Insert first, collect pointers after: inserting may move the table. */
    if (c->ncodes + n >= CODE_CACHE_MAX)
        codes_reset(c);
    for (size_t i = 0; i < n; i++)
        if (!(L->minor >= 12 && raw[i].owner >= PYRT_OWNED_BY_CSTACK))
            code_get(c, raw[i].code, raw[i].ident);
    for (size_t i = 0; i < n && nneed < FETCH_MAX; i++) {
        if (L->minor >= 12 && raw[i].owner >= PYRT_OWNED_BY_CSTACK)
            continue;
        struct code_entry *e = code_find(c, raw[i].code, raw[i].ident);
        if (!e || fresh(c, e))
            continue;
        e->checked = c->sample; /* also dedupes this list */
        need[nneed++] = e;
    }
    if (nneed) {
        /* Each header, and for a filled entry its qualname's words, in one call. */
        struct remote_seg segs[2 * FETCH_MAX];
        uint8_t *hdrs = malloc(nneed * (L->co_hdr_size + PYCODE_QUAL_SIZE));
        if (!hdrs)
            return;
        uint8_t(*quals)[PYCODE_QUAL_SIZE] = (void *)(hdrs + nneed * L->co_hdr_size);
        for (size_t i = 0; i < nneed; i++) {
            uint64_t q = need[i]->ident ? 0 : pycode_qual_addr(c, need[i]->addr);
            segs[2 * i] =
                REMOTE_SEG(need[i]->addr + L->co_hdr_start, hdrs + i * L->co_hdr_size, L->co_hdr_size);
            segs[2 * i + 1] = REMOTE_SEG(q, quals[i], q ? PYCODE_QUAL_SIZE : 0);
        }
        int rc = remote_readv(c->r, segs, 2 * nneed, true);
        for (size_t i = 0; i < nneed; i++) {
            if (rc >= 0 && segs[2 * i].ok) {
                apply_header(c, need[i], hdrs + i * L->co_hdr_size,
                             segs[2 * i + 1].ok && segs[2 * i + 1].len ? quals[i] : NULL);
            } else if (need[i]->ident) { /* read at the sample instant, unmapped since */
                mark_freed(c, need[i]);
            } else {
                need[i]->bad = true;
                c->st->bad_code++;
            }
        }
        free(hdrs);
    }
    /* Entries whose header is known good but have no names yet. */
    struct code_entry *todo[FETCH_MAX];
    size_t ntodo = 0;
    for (size_t i = 0; i < n && ntodo < FETCH_MAX; i++) {
        struct code_entry *e = code_find(c, raw[i].code, raw[i].ident);
        if (!e || e->bad || e->gone || e->state != CODE_HEADER || !fresh(c, e))
            continue;
        bool dup = false;
        for (size_t k = 0; k < ntodo && !dup; k++)
            dup = todo[k] == e;
        if (!dup)
            todo[ntodo++] = e;
    }
    if (ntodo)
        fetch(c, todo, ntodo);
}

static uint32_t frame_of(struct pycode *c, const struct pystack_raw *raw)
{
    const struct pyrt_layout *L = &c->rt->L;
    struct code_entry *e = code_find(c, raw->code, raw->ident);

    if (e && e->gone && e->checked == c->sample)
        return (uint32_t)c->freed_frame;
    if (!e || e->bad || e->state != CODE_FILLED || !fresh(c, e)) {
        c->st->errors++;
        return (uint32_t)c->unknown_frame;
    }
    /* Offset in code units of the instruction running (3.11/3.12: prev_instr, which starts one
     * unit before the code; 3.13: instr_ptr). */
    const uint64_t start = raw->code + L->co_code_adaptive;
    int64_t off = -1; /* before the first instruction, or absurd: co_firstlineno */
    if (raw->instr >= start && (raw->instr - start) / 2 < UINT32_MAX - 2)
        off = (int64_t)((raw->instr - start) / 2);
    uint64_t key = (uint64_t)e->id << 32 | (uint64_t)(off + 1);
    uint32_t frame;
    if (fin_lookup(c, key, &frame) == 0) {
        c->st->fin_hits++;
        return frame;
    }
    c->st->fin_misses++;
    int32_t line = linetable_line(&e->lt, off);
    int64_t f = profile_frame(c->prof, FRAME_PYTHON, e->qualname, e->filename, line > 0 ? (uint32_t)line : 0);
    if (f < 0)
        return (uint32_t)c->unknown_frame;
    fin_insert(c, key, (uint32_t)f);
    return (uint32_t)f;
}

int pycode_symbolize(struct pycode *c, const struct pystack_raw *raw, size_t n, struct pystack_frame *out,
                     size_t max, bool complete)
{
    const struct pyrt_layout *L = &c->rt->L;
    size_t k = 0;

    /* Counts hits/misses of the code cache once per frame, before resolve changes states. */
    for (size_t i = 0; i < n; i++) {
        if (L->minor >= 12 && raw[i].owner >= PYRT_OWNED_BY_CSTACK)
            continue;
        const struct code_entry *e = code_find(c, raw[i].code, raw[i].ident);
        if (!e || e->state != CODE_FILLED)
            c->st->code_misses++;
        else
            c->st->code_hits++;
    }
    resolve(c, raw, n);
    for (size_t i = 0; i < n && k < max; i++) {
        if (L->minor >= 12 && raw[i].owner >= PYRT_OWNED_BY_CSTACK) {
            if (k)
                out[k - 1].entry = true;
            continue;
        }
        out[k].frame = frame_of(c, &raw[i]);
        out[k].entry = L->minor == 11 && raw[i].is_entry;
        k++;
    }
    if (complete && k)
        out[k - 1].entry = true;
    c->st->frames += k;
    return (int)k;
}
