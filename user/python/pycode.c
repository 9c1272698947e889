/* pycode — validation of code objects against the target, and symbolisation (see pycode.h; the
 * table is pycode_table.c, names fetched in pycode_fetch.c). */
#include "python/pycode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "python/linetable.h"
#include "python/pycode_table.h"
#include "sample.h"

#define FIN_CACHE_MAX (1u << 20)
#define FETCH_MAX     256 /* new code objects fetched per sample */

/* -- Finished frames ----------------------------------------------------------------------------- */

static int fin_lookup(struct pycode *c, uint64_t key, uint32_t *frame)
{
    uint32_t mask = c->fin_cap - 1;
    for (uint32_t i = (uint32_t)pycode_hash64(key) & mask;; i = (i + 1) & mask) {
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
                uint32_t j = (uint32_t)pycode_hash64(c->fin[i].key) & (ncap - 1);
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
    uint32_t i = (uint32_t)pycode_hash64(key) & mask;
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
        pycode_table_reset(c);
    free(c->codes);
    free(c->fin);
    free(c->ents);
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

/* A remote entry not filled yet keeps the qualname words read in the same call as its header
 * and the frames that ran it: the words its fill must find (fetch). */
static void note_qual(struct pycode *c, struct code_entry *e, const uint8_t *qual)
{
    if (!qual || e->ident || e->state != CODE_HEADER)
        return;
    memcpy(e->pqual, qual, PYCODE_QUAL_SIZE);
    e->pqual_sample = c->sample;
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
    /* A remote entry's header must be a live object's (hdr_live); a capture's ident names the
     * object it was at the sample instant, freed since or not (the fill checks the ident). */
    if ((c->rt->code_type && hdr_u64(c, hdr, L->ob_type) != c->rt->code_type) ||
        (!e->ident && !hdr_live(c, hdr))) {
        if (e->ident) { /* what ran is no code object any more */
            pycode_table_freed(c, e);
            return false;
        }
        e->bad = true;
        c->st->bad_code++;
        if (e->state != CODE_EMPTY)
            c->st->code_stale++;
        pycode_table_clear(e);
        return false;
    }
    const bool same = e->state != CODE_EMPTY && hdr_same(c, e->hdr, hdr);
    if (same &&
        (e->state != CODE_FILLED || e->ident || (qual && memcmp(e->qual, qual, PYCODE_QUAL_SIZE) == 0))) {
        note_qual(c, e, qual);
        return true;
    }
    if (e->state != CODE_EMPTY)
        c->st->code_stale++;
    pycode_table_clear(e);
    e->hdr = malloc(L->co_hdr_size);
    if (!e->hdr) {
        e->bad = true;
        return false;
    }
    memcpy(e->hdr, hdr, L->co_hdr_size);
    e->state = CODE_HEADER;
    /* The words were read at this header's qualname only when the header is the one they were
     * asked for (a same-header successor, 3.11). */
    if (same)
        note_qual(c, e, qual);
    return true;
}

void pycode_header(struct pycode *c, uint64_t addr, const uint8_t *hdr, const uint8_t *qual, bool witnessed)
{
    struct code_entry *e = pycode_table_get(c, addr, 0);
    if (!e)
        return;
    /* Unwitnessed, the words still confirm a filled entry (the same bytes name the same
     * object), but no new entry is filled from them: a freed object keeps its header, and its
     * qualname's words are then another str's (3.11: "__builtins__"). */
    if (!witnessed && e->state != CODE_FILLED)
        qual = NULL;
    apply_header(c, e, hdr, qual);
}

uint64_t pycode_qual_addr(const struct pycode *c, uint64_t addr)
{
    const struct code_entry *e = pycode_table_find(c, addr, 0);
    if (!e || e->state == CODE_EMPTY || !e->hdr)
        return 0;
    return hdr_u64(c, e->hdr, c->rt->L.co_qualname) + c->rt->L.str_length;
}

bool pycode_checked(const struct pycode *c, uint64_t addr)
{
    const struct code_entry *e = pycode_table_find(c, addr, 0);
    return e && fresh(c, e);
}

bool pycode_named_now(const struct pycode *c, uint64_t addr)
{
    const struct code_entry *e = pycode_table_find(c, addr, 0);
    return e && e->checked == c->sample &&
           (e->bad || e->state == CODE_FILLED || (e->state == CODE_HEADER && e->pqual_sample == c->sample));
}

/* Reads the headers of entries not validated in this sample, and for a remote entry with a header
 * its qualname's words, in one call. */
static void read_headers(struct pycode *c, struct code_entry **need, size_t nneed)
{
    const struct pyrt_layout *L = &c->rt->L;
    struct remote_seg segs[2 * FETCH_MAX];

    if (!nneed)
        return;
    uint8_t *hdrs = malloc(nneed * (L->co_hdr_size + PYCODE_QUAL_SIZE));
    if (!hdrs)
        return;
    uint8_t(*quals)[PYCODE_QUAL_SIZE] = (void *)(hdrs + nneed * L->co_hdr_size);
    for (size_t i = 0; i < nneed; i++) {
        uint64_t q = need[i]->ident ? 0 : pycode_qual_addr(c, need[i]->addr);
        segs[2 * i] = REMOTE_SEG(need[i]->addr + L->co_hdr_start, hdrs + i * L->co_hdr_size, L->co_hdr_size);
        segs[2 * i + 1] = REMOTE_SEG(q, quals[i], q ? PYCODE_QUAL_SIZE : 0);
    }
    int rc = remote_readv(c->r, segs, 2 * nneed, true);
    for (size_t i = 0; i < nneed; i++) {
        if (rc >= 0 && segs[2 * i].ok) {
            apply_header(c, need[i], hdrs + i * L->co_hdr_size,
                         segs[2 * i + 1].ok && segs[2 * i + 1].len ? quals[i] : NULL);
        } else if (need[i]->ident) { /* read at the sample instant, unmapped since */
            pycode_table_freed(c, need[i]);
        } else {
            need[i]->bad = true;
            c->st->bad_code++;
        }
    }
    free(hdrs);
}

static bool shim(const struct pycode *c, const struct pystack_raw *r)
{
    return c->rt->L.minor >= 12 && r->owner >= PYRT_OWNED_BY_CSTACK;
}

/* c->ents[i]: the entry of frame i, inserted when new (NULL: a shim, or no memory). Inserting
 * may move the table, so all are inserted first and looked up after; consecutive frames of one
 * code object (recursion) are looked up once: one probe of the table per distinct code object
 * and sample, not five per frame. */
static int entries_of(struct pycode *c, const struct pystack_raw *raw, size_t n)
{
    if (n > c->ents_cap) {
        struct code_entry **e = realloc(c->ents, n * sizeof(*e));
        if (!e)
            return -ENOMEM;
        c->ents = e;
        c->ents_cap = n;
    }
    if (c->ncodes + n >= CODE_CACHE_MAX)
        pycode_table_reset(c);
    const struct pystack_raw *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        if (shim(c, &raw[i]) || (prev && raw[i].code == prev->code && raw[i].ident == prev->ident))
            continue;
        pycode_table_get(c, raw[i].code, raw[i].ident);
        prev = &raw[i];
    }
    prev = NULL;
    for (size_t i = 0; i < n; i++) {
        if (shim(c, &raw[i])) {
            c->ents[i] = NULL;
        } else if (prev && raw[i].code == prev->code && raw[i].ident == prev->ident) {
            c->ents[i] = c->ents[prev - raw];
        } else {
            c->ents[i] = pycode_table_find(c, raw[i].code, raw[i].ident);
            prev = &raw[i];
        }
    }
    return 0;
}

/* The entries of the sample (c->ents) not validated in it, at most FETCH_MAX. */
static size_t unchecked(struct pycode *c, size_t n, struct code_entry **need)
{
    size_t nneed = 0;

    for (size_t i = 0; i < n && nneed < FETCH_MAX; i++) {
        struct code_entry *e = c->ents[i];
        if (!e || fresh(c, e))
            continue;
        e->checked = c->sample; /* also dedupes this list */
        need[nneed++] = e;
    }
    return nneed;
}

size_t pycode_prefetch(struct pycode *c, const struct pystack_raw *raw, size_t n)
{
    struct code_entry *need[FETCH_MAX];
    if (entries_of(c, raw, n) != 0)
        return 0;
    size_t nneed = unchecked(c, n, need);
    read_headers(c, need, nneed);
    return nneed;
}

/* Makes every code object of the sample (c->ents) usable: one header read for those not
 * validated yet, then one fetch for the new ones. */
static void resolve(struct pycode *c, size_t n, unsigned how)
{
    struct code_entry *need[FETCH_MAX];
    size_t nneed = unchecked(c, n, need);

    read_headers(c, need, nneed);
    /* Entries whose header is known good but have no names yet. */
    struct code_entry *todo[FETCH_MAX];
    size_t ntodo = 0;
    for (size_t i = 0; i < n && ntodo < FETCH_MAX; i++) {
        struct code_entry *e = c->ents[i];
        if (!e || e->bad || e->gone || e->state != CODE_HEADER || !fresh(c, e) || (i && e == c->ents[i - 1]))
            continue;
        /* A remote header read after the frames, in a call of its own, may be a successor's:
         * named in a later sample, from a batch that reads it with the frames. */
        if (!e->ident && e->pqual_sample != c->sample && !(how & PYCODE_LATE_FILLS)) {
            c->st->code_unverified++;
            continue;
        }
        bool dup = false;
        for (size_t k = 0; k < ntodo && !dup; k++)
            dup = todo[k] == e;
        if (!dup)
            todo[ntodo++] = e;
    }
    if (ntodo)
        pycode_fetch(c, todo, ntodo);
}

/* One pycode_name_captures round: up to FETCH_MAX code objects, two calls to fold their idents
 * (headers, then qualname words) and the fetch's two to fill them; the headers folded are the
 * entries' (read again, 200 threads' codes were a call of 200 segments more). */
static size_t name_round(struct pycode *c, const uint64_t *codes, size_t n, struct pystack_raw *raw,
                         void (*named)(void *arg, uint64_t code, uint64_t ident), void *arg)
{
    const struct pyrt_layout *L = &c->rt->L;
    struct remote_seg segs[FETCH_MAX];
    uint8_t quals[FETCH_MAX][PYCODE_QUAL_SIZE];
    uint8_t *hdrs = malloc(n * L->co_hdr_size);
    size_t k = 0, done = 0;

    if (!hdrs)
        return 0;
    for (size_t i = 0; i < n; i++)
        segs[i] = REMOTE_SEG(codes[i] + L->co_hdr_start, hdrs + i * L->co_hdr_size, L->co_hdr_size);
    if (remote_readv(c->r, segs, n, true) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *h = hdrs + i * L->co_hdr_size;
        /* only what is a code object now (its type known: nothing is guessed without it) */
        bool code = segs[i].ok && c->rt->code_type && hdr_u64(c, h, L->ob_type) == c->rt->code_type;
        uint64_t q = code ? hdr_u64(c, h, L->co_qualname) : 0;
        segs[i] = REMOTE_SEG(q ? q + L->str_length : 0, quals[i], q ? PYCODE_QUAL_SIZE : 0);
    }
    if (remote_readv(c->r, segs, n, true) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if (!segs[i].len || !segs[i].ok)
            continue;
        if (k != i) /* the header goes with its entry: slot k */
            memcpy(hdrs + k * L->co_hdr_size, hdrs + i * L->co_hdr_size, L->co_hdr_size);
        raw[k] = (struct pystack_raw){.code = codes[i],
                                      .ident = pycode_table_ident(c, hdrs + k * L->co_hdr_size, quals[i])};
        k++;
    }
    pycode_begin(c);
    if (!k || entries_of(c, raw, k) != 0)
        goto out;
    for (size_t i = 0; i < k; i++)
        if (c->ents[i] && !fresh(c, c->ents[i]))
            apply_header(c, c->ents[i], hdrs + i * L->co_hdr_size, NULL);
    resolve(c, k, 0);
    for (size_t i = 0; i < k; i++) {
        const struct code_entry *e = c->ents[i];
        if (e && e->state == CODE_FILLED && !e->bad && !e->gone) {
            named(arg, raw[i].code, raw[i].ident);
            done++;
        }
    }
out:
    free(hdrs);
    return done;
}

size_t pycode_name_captures(struct pycode *c, const uint64_t *codes, size_t n,
                            void (*named)(void *arg, uint64_t code, uint64_t ident), void *arg)
{
    struct pystack_raw *raw = calloc(FETCH_MAX, sizeof(*raw));
    size_t done = 0;

    if (!raw)
        return 0;
    for (size_t at = 0; at < n; at += FETCH_MAX)
        done += name_round(c, codes + at, n - at < FETCH_MAX ? n - at : FETCH_MAX, raw, named, arg);
    free(raw);
    return done;
}

#define TLBC_MAX 256 /* per-thread bytecode copies searched (one per thread that ran the code) */

/* Where the bytecode that `instr` points into starts: co_code_adaptive, or in a free-threaded
 * build the thread's own copy of it, found in co_tlbc's entries as the one that holds `instr`
 * (no frame field needed, so a frame captured in the kernel is placed the same way). The copies
 * live as long as the code object. co_code_adaptive when none holds it (line: firstlineno). */
static uint64_t bytecode_start(struct pycode *c, struct code_entry *e, uint64_t code, uint64_t instr)
{
    const struct pyrt_layout *L = &c->rt->L;
    const uint64_t start = code + L->co_code_adaptive;
    if (!L->co_tlbc)
        return start;
    const uint64_t len = 2 * hdr_u64(c, e->hdr, L->var_ob_size); /* ob_size: code units */
    if (instr >= start && instr - start <= len)
        return start;
    /* A thread's frames keep running in its copy: three reads per frame and sample otherwise. */
    if (e->tlbc && instr >= e->tlbc && instr - e->tlbc <= len)
        return e->tlbc;
    uint64_t arr = 0, n = 0, ent[TLBC_MAX];
    if (remote_read(c->r, code + L->co_tlbc, &arr, 8) || !arr || remote_read(c->r, arr, &n, 8) || !n)
        return start;
    n = n < TLBC_MAX ? n : TLBC_MAX;
    if (remote_read(c->r, arr + 8, ent, 8 * n))
        return start;
    for (uint64_t i = 0; i < n; i++)
        if (ent[i] && instr >= ent[i] && instr - ent[i] <= len)
            return e->tlbc = ent[i];
    return start;
}

static uint32_t frame_of(struct pycode *c, struct code_entry *e, const struct pystack_raw *raw)
{
    if (e && e->gone && e->checked == c->sample)
        return (uint32_t)c->freed_frame;
    /* A frame running the entry shim's code but not owned by the C stack is an entry frame
     * caught while being set up, or C-stack bytes read after its eval loop returned: no frame
     * of the stack, and what it links to is no one instant's either. */
    if (!e || e->bad || e->state != CODE_FILLED || !fresh(c, e) || e->cstack_only) {
        c->st->errors++;
        return (uint32_t)c->unknown_frame;
    }
    /* Offset in code units of the instruction running (3.11/3.12: prev_instr, which starts one
     * unit before the code; 3.13: instr_ptr). */
    const uint64_t start = bytecode_start(c, e, raw->code, raw->instr);
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
                     size_t max, unsigned how)
{
    const struct pyrt_layout *L = &c->rt->L;
    size_t k = 0;

    c->final = false;
    if (entries_of(c, raw, n) != 0)
        return -ENOMEM;
    /* Counts hits/misses of the code cache once per frame, before resolve changes states. */
    for (size_t i = 0; i < n; i++) {
        if (shim(c, &raw[i]))
            continue;
        if (!c->ents[i] || c->ents[i]->state != CODE_FILLED)
            c->st->code_misses++;
        else
            c->st->code_hits++;
    }
    resolve(c, n, how);
    c->final = !L->co_tlbc;
    size_t i;
    for (i = 0; i < n && k < max; i++) {
        if (shim(c, &raw[i])) {
            if (k)
                out[k - 1].entry = true;
            continue;
        }
        struct code_entry *e = c->ents[i];
        out[k].frame = frame_of(c, e, &raw[i]);
        out[k].entry = L->minor == 11 && raw[i].is_entry;
        if (!e || !e->ident || e->state != CODE_FILLED || e->bad || e->cstack_only ||
            out[k].frame == (uint32_t)c->unknown_frame || out[k].frame == (uint32_t)c->freed_frame)
            c->final = false;
        k++;
    }
    if (i < n)
        c->final = false; /* cut by max */
    c->root_unread = k && out[k - 1].frame == (uint32_t)c->unknown_frame;
    if ((how & PYCODE_COMPLETE) && k)
        out[k - 1].entry = true;
    c->st->frames += k;
    return (int)k;
}

bool pycode_final(const struct pycode *c)
{
    return c->final;
}

bool pycode_root_unread(const struct pycode *c)
{
    return c->root_unread;
}
