/* pycode_fetch — a code object's names and line table, fetched from the target in two calls and
 * witnessed against a race (see pycode.h, pycode_table.h). */
#include "python/pycode_table.h"

#include <stdlib.h>
#include <string.h>

#define NAME_MAX_CHARS 1024       /* longer qualnames and filenames are cut */
#define LINETABLE_MAX  (1u << 20) /* larger tables are refused as absurd */

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

/* Fills entries in CODE_HEADER state: str/bytes headers in one call, their contents in a second.
 * The strings are another object's when the code object died between the calls (a new one can
 * take its address, on 3.11 with the same header and a new name at the old name's address), so
 * every fill is witnessed: the qualname's length and hash words in the first call must be those
 * read with the frames (a remote entry: with its header in the batch that read the frames; a
 * capture's: the fold of its ident), and the second call reads them and the header once more
 * after the contents. Equal words around the text: the text is that name's. */
void pycode_fetch(struct pycode *c, struct code_entry **todo, size_t n)
{
    const struct pyrt_layout *L = &c->rt->L;
    const uint32_t strhdr = L->str_state + 4 - L->str_length;
    enum { Q, F, T, WQ, WH, PER }; /* per entry: qualname, filename, line table, witnesses */
    struct remote_seg *segs = calloc(n * PER, sizeof(*segs));
    uint8_t(*hb)[24] = calloc(n * PER, sizeof(*hb));
    struct strplan *plans = calloc(n * PER, sizeof(*plans));
    uint8_t **bufs = calloc(n * PER, sizeof(*bufs));
    uint8_t *wh = malloc(n * L->co_hdr_size);

    if (!segs || !hb || !plans || !bufs || !wh)
        goto out;
    for (size_t i = 0; i < n; i++) {
        uint64_t q = hdr_u64(c, todo[i]->hdr, L->co_qualname);
        uint64_t f = hdr_u64(c, todo[i]->hdr, L->co_filename);
        uint64_t t = hdr_u64(c, todo[i]->hdr, L->co_linetable);
        segs[PER * i + Q] = REMOTE_SEG(q + L->str_length, hb[PER * i + Q], strhdr);
        segs[PER * i + F] = REMOTE_SEG(f + L->str_length, hb[PER * i + F], strhdr);
        segs[PER * i + T] = REMOTE_SEG(t + L->var_ob_size, hb[PER * i + T], 8);
    }
    if (remote_readv(c->r, segs, n * PER, true) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        struct code_entry *e = todo[i];
        const struct remote_seg *g = &segs[PER * i + Q];
        bool raced;
        if (e->ident) {
            raced = !g->ok || pycode_table_ident(c, e->hdr, hb[PER * i + Q]) != e->ident;
        } else if (e->pqual_sample == c->sample) {
            raced = !g->ok || memcmp(hb[PER * i + Q], e->pqual, PYCODE_QUAL_SIZE) != 0;
        } else { /* its header was read after the frames, in a call of its own */
            c->st->code_fill_late++;
            raced = false;
        }
        if (raced) {
            pycode_table_raced(c, e);
            segs[PER * i + Q].ok = segs[PER * i + F].ok = segs[PER * i + T].ok = false;
        }
    }
    for (size_t i = 0; i < n; i++) {
        for (int k = Q; k <= F; k++) {
            size_t j = PER * i + k;
            if (segs[j].ok)
                plans[j] = plan_str(c, segs[j].addr - L->str_length, hb[j]);
        }
        size_t j = PER * i + T;
        int64_t size;
        memcpy(&size, hb[j], 8);
        if (segs[j].ok && size >= 0 && size <= LINETABLE_MAX) {
            plans[j].kind = 1;
            plans[j].addr = segs[j].addr - L->var_ob_size + L->bytes_ob_sval;
            plans[j].len = plans[j].chars = (uint64_t)size;
        }
    }
    for (size_t i = 0; i < n; i++) {
        for (int k = Q; k <= T; k++) {
            size_t j = PER * i + k;
            bufs[j] = plans[j].kind ? malloc(plans[j].len + 1) : NULL;
            segs[j] = REMOTE_SEG(plans[j].addr, bufs[j], bufs[j] ? plans[j].len : 0);
        }
        /* The witnesses, after the contents (iovecs are copied in order). */
        bool live = !todo[i]->gone && todo[i]->state == CODE_HEADER;
        uint64_t q = live ? hdr_u64(c, todo[i]->hdr, L->co_qualname) + L->str_length : 0;
        segs[PER * i + WQ] = REMOTE_SEG(q, hb[PER * i + WQ], live ? PYCODE_QUAL_SIZE : 0);
        segs[PER * i + WH] =
            REMOTE_SEG(todo[i]->addr + L->co_hdr_start, wh + i * L->co_hdr_size, live ? L->co_hdr_size : 0);
    }
    if (remote_readv(c->r, segs, n * PER, true) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        struct code_entry *e = todo[i];
        uint32_t fl;
        if (e->gone || e->state != CODE_HEADER)
            continue; /* stays a header: read again if the ident comes back */
        if (!segs[PER * i + WQ].ok || !segs[PER * i + WH].ok ||
            memcmp(hb[PER * i + WQ], hb[PER * i + Q], PYCODE_QUAL_SIZE) != 0 ||
            (!e->ident &&
             (!hdr_same(c, wh + i * L->co_hdr_size, e->hdr) || !hdr_live(c, wh + i * L->co_hdr_size)))) {
            pycode_table_raced(c, e);
            continue;
        }
        memcpy(&fl, e->hdr + (L->co_firstlineno - L->co_hdr_start), 4);
        e->firstlineno = (int32_t)fl;
        e->qualname = bufs[PER * i + Q] && segs[PER * i + Q].ok
                          ? decode_str(&plans[PER * i + Q], bufs[PER * i + Q])
                          : NULL;
        e->filename = bufs[PER * i + F] && segs[PER * i + F].ok
                          ? decode_str(&plans[PER * i + F], bufs[PER * i + F])
                          : NULL;
        e->lt = (struct linetable){.firstlineno = e->firstlineno};
        if (bufs[PER * i + T] && segs[PER * i + T].ok &&
            linetable_decode(&e->lt, bufs[PER * i + T], plans[PER * i + T].len, e->firstlineno) != 0)
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
        e->cstack_only = L->minor >= 12 && e->qualname && e->filename &&
                         !strcmp(e->qualname, "<interpreter trampoline>") && !strcmp(e->filename, "<shim>");
        memcpy(e->qual, hb[PER * i + Q], PYCODE_QUAL_SIZE);
        e->id = c->next_id++;
        e->state = CODE_FILLED;
    }
out:
    if (bufs)
        for (size_t j = 0; j < n * PER; j++)
            free(bufs[j]);
    free(bufs);
    free(plans);
    free(hb);
    free(segs);
    free(wh);
}
