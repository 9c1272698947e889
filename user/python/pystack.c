/* pystack — predicted frame-chain reads, lifecycle, stats (see pystack.h; the thread directory is
 * pystack_threads.c, the predicted batch pystack_predict.c). */
#include "python/pystack.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "python/pycode.h"
#include "python/pydstack.h"
#include "python/pystack_state.h"
#include "python/pythreads.h"

/* No user-space address reaches this (x86-64 and aarch64 use 47 or 48 bits); frame addresses at
 * or above it end a chain before any arithmetic on them can wrap. */
#define USER_ADDR_END (1ull << 56)

/* Frames hold pointers: never below the first page, never misaligned, never in the kernel. */
static bool frame_addr_ok(uint64_t addr)
{
    return addr < USER_ADDR_END && addr >= 4096 && !(addr & 7);
}

/* Predicted frames closer than this in memory are read as one range: frames of one thread sit
 * next to each other in its data stack, a few locals apart, and one iovec costs less than two. */
#define COALESCE_GAP 256
/* A torn read is read again from where the thread is now, up to this many times: on a stack
 * whose leaf returns every few microseconds (stack_truth's churn workload) ~1 batch in 4 is torn,
 * and a new read about as often; with two more reads 2-4 % of its samples stay marked torn, with
 * one 5-7 %. */
#define TORN_RETRIES 2

/* -- Data stack --------------------------------------------------------------------------------- */

/* The positions of datastack_top and datastack_limit are assumed (the words after
 * datastack_chunk): they are trusted once a chunk's own size says limit - chunk. */
static void ds_check(struct pystack *ps, const struct pydstack_words *w)
{
    uint64_t size = 0;
    if (remote_read(&ps->r, w->chunk + 8, &size, 8) == 0)
        ps->ds_on = size == w->limit - w->chunk ? 1 : -1;
    else if (++ps->ds_check_errors >= 3) /* not a chunk after all: no extra call per sample */
        ps->ds_on = -1;
}

/* At attach, with the first thread state of the main interpreter (a thread that has not run
 * Python code yet has no chunk: then the first sample that sees one checks it). */
static void ds_check_first(struct pystack *ps)
{
    const struct pyrt_layout *L = &ps->rt.L;
    uint64_t interp = 0, ts = 0;
    struct pydstack_words w;

    if (ps->ds_on != 0 || pyrt_first_interp(&ps->rt, &ps->r, &interp) != 0 || !interp ||
        remote_read(&ps->r, interp + L->is_threads_head, &ts, 8) != 0 || !ts ||
        remote_read(&ps->r, ts + L->ts_datastack, &w, sizeof(w)) != 0)
        return;
    if (pydstack_valid(&w))
        ds_check(ps, &w);
    else if (w.chunk)
        ps->ds_on = -1; /* a chunk pointer whose neighbours make no sense: not the assumed layout */
}

/* -- Lifecycle ---------------------------------------------------------------------------------- */

int pystack_open(struct pystack **out, pid_t pid, struct profile *prof, const struct pystack_opts *opts,
                 char *err, size_t errlen)
{
    struct pystack *ps = calloc(1, sizeof(*ps));
    int rc;

    if (!ps)
        return -ENOMEM;
    if (opts)
        ps->o = *opts;
    if (!ps->o.max_depth)
        ps->o.max_depth = 1024;
    if (ps->o.max_depth > 65536)
        ps->o.max_depth = 65536;
    /* A cold deep stack costs one call per frame the first time; allow that, not more. */
    if (!ps->o.max_reads)
        ps->o.max_reads = ps->o.max_depth + 16;
    if (!ps->o.refresh_interval_us)
        ps->o.refresh_interval_us = 10000;
    ps->prof = prof;
    remote_init(&ps->r, pid);
    if ((rc = pyrt_attach(&ps->rt, &ps->r, pid, err, errlen)) != 0)
        goto fail;
    if (ps->rt.L.f_read_size > FRAME_BUF || ps->rt.L.ts_read_size > 512 || ps->rt.L.co_hdr_size > 512) {
        rc = -EPROTO;
        snprintf(err, errlen, "Python %s: structures larger than expected", ps->rt.version);
        goto fail;
    }
    uint32_t d = ps->o.max_depth;
    ps->seen_cap = 16;
    while (ps->seen_cap < 2 * d)
        ps->seen_cap *= 2;
    ps->segs = calloc(d + 2 * MAX_PRED_CODES + 6, sizeof(*ps->segs));
    ps->gap = ps->o.exact_reads ? 0 : COALESCE_GAP;
    ps->fbuf = malloc((size_t)d * (FRAME_BUF + ps->gap) + SPEC_WINDOW);
    ps->fseg = calloc(d, sizeof(*ps->fseg));
    ps->hbuf = malloc((size_t)MAX_PRED_CODES * ps->rt.L.co_hdr_size);
    ps->wbuf = malloc(PYDSTACK_WINDOW_MAX);
    ps->wbuf_end = malloc(PYDSTACK_WINDOW_MAX);
    ps->gbuf = malloc((size_t)MAX_GAPS * PYDSTACK_WINDOW_MAX);
    ps->raw = calloc(d, sizeof(*ps->raw));
    ps->addrs = calloc(d, sizeof(*ps->addrs));
    ps->seen = calloc(ps->seen_cap, sizeof(*ps->seen));
    ps->seen_stamp = calloc(ps->seen_cap, sizeof(*ps->seen_stamp));
    rc = -ENOMEM;
    if (!ps->segs || !ps->fbuf || !ps->fseg || !ps->hbuf || !ps->raw || !ps->addrs || !ps->seen ||
        !ps->seen_stamp || !ps->wbuf || !ps->wbuf_end || !ps->gbuf)
        goto fail;
    ps->ds_on = ps->o.exact_reads || !ps->rt.L.ts_datastack ? -1 : 0;
    ds_check_first(ps);
    if ((rc = pycode_new(&ps->code, &ps->rt, &ps->r, prof, &ps->st)) != 0)
        goto fail;
    *out = ps;
    return 0;
fail:
    pystack_close(ps);
    return rc;
}

void pystack_close(struct pystack *ps)
{
    if (!ps)
        return;
    for (uint32_t i = 0; i < ps->nslots; i++)
        free(ps->slots[i].frames);
    free(ps->slots);
    free(ps->idx);
    pycode_free(ps->code);
    pythreads_free(ps->threads);
    free(ps->segs);
    free(ps->fbuf);
    free(ps->fseg);
    free(ps->hbuf);
    free(ps->wbuf);
    free(ps->wbuf_end);
    free(ps->gbuf);
    free(ps->raw);
    free(ps->addrs);
    free(ps->seen);
    free(ps->seen_stamp);
    free(ps);
}

const struct pyrt *pystack_runtime(const struct pystack *ps)
{
    return &ps->rt;
}
pid_t pystack_pid(const struct pystack *ps)
{
    return ps->r.pid;
}

struct pythreads **pystack_threads(struct pystack *ps)
{
    return &ps->threads;
}

const struct remote_stats *pystack_remote_stats(const struct pystack *ps)
{
    return &ps->r.st;
}
void pystack_get_stats(const struct pystack *ps, struct pystack_stats *st)
{
    *st = ps->st;
}

/* -- One sample --------------------------------------------------------------------------------- */

/* Marks `addr` visited in this sample; false when it already was (a loop). */
static bool visit(struct pystack *ps, uint64_t addr)
{
    uint32_t mask = ps->seen_cap - 1;
    for (uint32_t i = (uint32_t)(addr >> 3) * 2654435761u & mask;; i = (i + 1) & mask) {
        if (ps->seen_stamp[i] != ps->stamp) {
            ps->seen_stamp[i] = ps->stamp;
            ps->seen[i] = addr;
            return true;
        }
        if (ps->seen[i] == addr)
            return false;
    }
}

static const uint8_t *seg_at(const struct remote_seg *g, uint64_t addr, uint64_t len)
{
    if (g->ok && g->len >= len && addr >= g->addr && addr - g->addr <= g->len - len)
        return (const uint8_t *)g->buf + (addr - g->addr);
    return NULL;
}

/* A frame not predicted by address may still lie inside a range read in this sample: between
 * predicted neighbours, above the old leaf, in the data-stack window or a gap read. *from: 0 a
 * frame run, 1 the window, 2 a gap read. */
static const uint8_t *in_batch(const struct pystack *ps, uint64_t addr, uint64_t len, int *from)
{
    const uint8_t *p;
    const size_t runs_end = ps->ds_end_seg ? ps->ds_end_seg : ps->code_seg0;
    for (size_t i = ps->frame_seg0; i < runs_end; i++)
        if ((p = seg_at(&ps->segs[i], addr, len)))
            return *from = 0, p;
    if (ps->win_seg && (p = seg_at(&ps->segs[ps->win_seg], addr, len)))
        return *from = 1, p;
    for (unsigned i = 0; i < ps->ngaps; i++)
        if ((p = seg_at(&ps->gaps[i], addr, len)))
            return *from = 2, p;
    return NULL;
}

/* Whether a code object of the chain (shims aside) is not known from this batch alone (one
 * lookup for a run of frames of one code object: recursion). */
static bool unvalidated(const struct pystack *ps, size_t n)
{
    uint64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        if ((ps->rt.L.minor >= 12 && ps->raw[i].owner >= PYRT_OWNED_BY_CSTACK) || ps->raw[i].code == last)
            continue;
        if (!pycode_named_now(ps->code, ps->raw[i].code))
            return true;
        last = ps->raw[i].code;
    }
    return false;
}

/* The top a later read of the words (segment `seg`, into *w) judges the chain by: its top, or the
 * chunk's start when the thread had changed chunks (it had left every frame of this one). Every
 * live frame of the current chunk lies below top, so a frame of the chain whose bytes reach it
 * had been left by then: the thread returned from it, maybe from its callers too, and may have
 * pushed anew in their slots (a caller's slot then holds a newer frame, of the same size or not,
 * while the dead leaf's bytes still name it). 0: not read, or no sense in it. */
static uint64_t later_top(const struct pystack *ps, const struct pydstack_words *dw, size_t seg,
                          const struct pydstack_words *w)
{
    if (!seg || !ps->segs[seg].ok || !pydstack_valid(w))
        return 0;
    return w->chunk == dw->chunk ? w->top : dw->chunk;
}

/* The lowest data-stack top of the frames' reads: the words read right after the thread state
 * (its top frame's address) and once more after the frames. A frame reaching it is of another
 * instant than its callers. 0: nothing to judge by. */
static uint64_t low_top(const struct pystack *ps, const struct pydstack_words *dw)
{
    if (!dw)
        return 0;
    const uint64_t e = later_top(ps, dw, ps->ds_end_seg, &ps->ds_end);
    return e && e < dw->top ? e : dw->top;
}

static bool in_chunk(const struct pydstack_words *dw, uint64_t a)
{
    return a >= dw->chunk && a < dw->limit;
}

/* The leaf-side frames of the chain up to the deepest one whose bytes reach `top` (0: none). */
static size_t left_frames(const struct pystack *ps, const struct pydstack_words *dw, uint64_t top, size_t n)
{
    size_t cut = 0;

    for (size_t k = 0; top && k < n; k++)
        if (in_chunk(dw, ps->addrs[k]) && ps->addrs[k] + ps->rt.L.f_read_size > top)
            cut = k + 1;
    return cut;
}

/* Whether a frame of the chain, read from the window, is another frame in the window's second
 * copy (read after every other frame of the batch): its code or its caller changed, so the
 * thread popped it while the batch was copied and came back to the same depth (`top` alone does
 * not show it). Returns the frames from the leaf to the deepest such one (0: none). */
static size_t replaced(const struct pystack *ps, size_t n)
{
    const struct pyrt_layout *L = &ps->rt.L;
    const struct remote_seg *w = &ps->segs[ps->win_seg], *e = &ps->segs[ps->win_end_seg];
    size_t cut = 0;

    if (!ps->win_seg || !ps->win_end_seg || !w->ok || !e->ok)
        return 0;
    for (size_t k = 0; k < n; k++) {
        const uint64_t a = ps->addrs[k];
        if (a < w->addr || a - w->addr + L->f_read_size > w->len || a - e->addr + L->f_read_size > e->len)
            continue;
        const uint8_t *f0 = (const uint8_t *)w->buf + (a - w->addr),
                      *f1 = (const uint8_t *)e->buf + (a - e->addr);
        if (u64_at(f0, L->f_code) != u64_at(f1, L->f_code) ||
            u64_at(f0, L->f_previous) != u64_at(f1, L->f_previous))
            cut = k + 1;
    }
    return cut;
}

/* How many leaf-side frames of the chain are of no one instant (0: it is of one): those the
 * thread had left at one of the reads of the words (leaf first, they come first) or that the
 * window's second copy shows replaced, and the frames outside the chunk right under them (the
 * entry frame on the C stack of an eval loop that returned with them, a generator's frame):
 * nothing says they were still live. The callers from the next live frame of the chunk on are
 * kept. */
static size_t torn_frames(const struct pystack *ps, const struct pydstack_words *dw, size_t n)
{
    size_t cut = replaced(ps, n), left = dw ? left_frames(ps, dw, low_top(ps, dw), n) : 0;

    if (left > cut)
        cut = left;
    while (cut && dw && cut < n && !in_chunk(dw, ps->addrs[cut]))
        cut++;
    return cut;
}

/* Hands the batch's code headers to pycode, each with the qualname words read with it. A header
 * is witnessed unless a frame running its object had been left when the words were read last,
 * after the headers: the object may have been freed with that frame (words not known: nothing
 * to judge by, witnessed). */
static void apply_headers(struct pystack *ps, const struct thread_slot *s, const struct pydstack_words *dw,
                          size_t n)
{
    const struct pyrt_layout *L = &ps->rt.L;
    const size_t left = dw ? left_frames(ps, dw, later_top(ps, dw, ps->ds_fin_seg, &ps->ds_fin), n) : 0;

    for (uint32_t k = 0; k < s->ncodes; k++) {
        const struct remote_seg *h = &ps->segs[ps->code_seg0 + k],
                                *q = &ps->segs[ps->code_seg0 + s->ncodes + k];
        bool witnessed = true;
        for (size_t i = 0; i < left && witnessed; i++)
            witnessed = ps->raw[i].code != s->codes[k];
        if (h->ok && h->len)
            pycode_header(ps->code, s->codes[k], ps->hbuf + (size_t)k * L->co_hdr_size,
                          q->ok && q->len ? ps->qbuf[k] : NULL, witnessed);
    }
}

/* The gap read for a frame at `addr` in the current chunk (pydstack.h); the frame, or NULL. */
static const uint8_t *gap_read(struct pystack *ps, const struct pydstack_words *w, uint64_t addr)
{
    const uint32_t F = ps->rt.L.f_read_size;
    uint64_t hl = 0, hh = 0, lo, hi;
    int from;

    if (ps->ngaps == MAX_GAPS)
        return NULL;
    if (ps->win_seg && ps->segs[ps->win_seg].ok)
        hl = ps->segs[ps->win_seg].addr, hh = hl + ps->segs[ps->win_seg].len;
    if (!pydstack_gap(w, addr, F, hl, hh, &lo, &hi))
        return NULL;
    struct remote_seg *g = &ps->gaps[ps->ngaps];
    *g = REMOTE_SEG(lo, ps->gbuf + (size_t)ps->ngaps * PYDSTACK_WINDOW_MAX, hi - lo);
    ps->st.ds_gap_reads++;
    if (remote_readv(&ps->r, g, 1, false) != 1) {
        ps->ngaps = MAX_GAPS; /* the chunk went away: no more tries in this sample */
        return NULL;
    }
    ps->ngaps++;
    return in_batch(ps, addr, F, &from);
}

int pystack_read(struct pystack *ps, pid_t tid, struct pystack_frame *out, size_t max, unsigned *flags)
{
    const struct pyrt_layout *L = &ps->rt.L;
    const uint64_t calls0 = ps->r.st.calls;
    uint8_t ts[512], one[FRAME_BUF];
    uint64_t cf_top = 0;
    unsigned fl;
    size_t nseg = 0;
    int si = -1, rc;
    unsigned retries = 0;     /* torn batches read again so far (at most TORN_RETRIES) */
    bool codes_again = false; /* ... and one with code objects the batch did not validate */

    ps->st.samples++;
read:
    /* Each batch is an instant of its own: what an earlier one validated counts no more. */
    pycode_begin(ps->code);
    fl = 0;
    cf_top = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((si = pystack_thread_slot(ps, tid)) < 0)
            return si;
        nseg = pystack_build_batch(ps, &ps->slots[si], ts, &cf_top);
        if ((rc = remote_readv(&ps->r, ps->segs, nseg, true)) < 0)
            return rc;
        /* Still this thread's state: same tid, same interpreter (freed memory rarely keeps both). */
        if (ps->segs[0].ok && (pid_t)u64_at(ts, L->ts_native_thread_id) == tid &&
            u64_at(ts, L->ts_interp) == ps->slots[si].interp)
            break;
        /* The thread state moved or died: the caches are stale for this thread. */
        if (attempt == 1)
            return -ESRCH;
        if ((rc = pystack_refresh_threads(ps)) != 0)
            return rc;
    }
    struct thread_slot *s = &ps->slots[si];
    if (ps->win_seg) /* kept over batches without a window */
        ps->win_failed = !ps->segs[ps->win_seg].ok;
    /* The top frame. */
    uint64_t top, cframe = 0;
    if (L->ts_cframe) {
        cframe = u64_at(ts, L->ts_cframe);
        top = 0;
        if (cframe && cframe == s->cframe && ps->segs[1].ok)
            top = cf_top;
        else if (cframe && remote_read(&ps->r, cframe + L->cf_current_frame, &top, 8) != 0)
            fl |= PYSTACK_BROKEN;
    } else {
        top = u64_at(ts, L->ts_current_frame);
    }
    /* The data stack as of this sample: for gap reads now, and the next sample's window. */
    const struct pydstack_words *dw = NULL;
    if (ps->ds_seg && ps->segs[ps->ds_seg].ok) {
        dw = &ps->ds_words;
        if (ps->ds_on == 0 && pydstack_valid(dw))
            ds_check(ps, dw);
        if (ps->ds_on < 0 || !pydstack_valid(dw))
            dw = NULL;
    }

    /* The chain, from the predicted read where it still matches. */
    size_t n = 0;
    uint32_t j = 0;
    bool bad_link = false; /* the chain ended on a `previous` that no live frame holds */
    size_t popped = 0;     /* leaf-side frames found popped, passed over */
    ps->stamp++;
    for (uint64_t addr = top; addr && !(fl & PYSTACK_BROKEN);) {
        if (n == ps->o.max_depth) {
            fl |= PYSTACK_TRUNCATED;
            break;
        }
        if (!frame_addr_ok(addr)) {
            ps->st.errors++;
            fl |= PYSTACK_BROKEN;
            bad_link = true;
            break;
        }
        /* In one chunk a caller lies below the frame it called: a `previous` that points up was
         * read from bytes the thread wrote after the frame was popped (it moved on between the
         * reads). A frame at or above datastack_top is followed on: its callers may still be of
         * the same instant, which the walk's end judges (torn_frames). */
        if (dw && n && addr >= dw->chunk && addr < dw->limit && ps->addrs[n - 1] >= dw->chunk &&
            ps->addrs[n - 1] < dw->limit && addr >= ps->addrs[n - 1]) {
            ps->st.ds_torn++;
            fl |= PYSTACK_BROKEN;
            bad_link = true;
            break;
        }
        if (!visit(ps, addr)) {
            ps->st.loops++;
            fl |= PYSTACK_BROKEN;
            bad_link = true;
            break;
        }
        const uint8_t *f = NULL;
        int from = 0;
        if (j < s->nframes && s->frames[j] == addr && ps->segs[ps->fseg[j]].ok) {
            from = ps->fseg[j] == ps->win_seg;
            f = pystack_predicted(ps, s, j++);
        } else {
            for (uint32_t k = 0; k < s->nframes && !f; k++)
                if (s->frames[k] == addr && ps->segs[ps->fseg[k]].ok) {
                    from = ps->fseg[k] == ps->win_seg;
                    f = pystack_predicted(ps, s, k);
                    j = k + 1;
                }
            if (!f)
                f = in_batch(ps, addr, L->f_read_size, &from);
        }
        if (f && from < 2) {
            ps->st.pred_hits++;
            ps->st.ds_window_frames += from == 1;
        } else if (f) {
            ps->st.ds_gap_frames++;
        } else {
            ps->st.pred_misses++;
            if (ps->r.st.calls - calls0 >= ps->o.max_reads) {
                ps->st.budget_exhausted++;
                fl |= PYSTACK_BROKEN;
                break;
            }
            /* A frame of the current data-stack chunk: read it with every frame below it that
             * this sample does not hold yet, in one call. */
            if (dw && (f = gap_read(ps, dw, addr))) {
                ps->st.ds_gap_frames++;
                goto have_frame;
            }
            if (ps->r.st.calls - calls0 >= ps->o.max_reads) {
                ps->st.budget_exhausted++;
                fl |= PYSTACK_BROKEN;
                break;
            }
            if (remote_read(&ps->r, addr, one, L->f_read_size) != 0) {
                ps->st.errors++;
                fl |= PYSTACK_BROKEN;
                bad_link = true;
                break;
            }
            f = one;
        }
    have_frame:;
        struct pystack_raw *rw = &ps->raw[n];
        rw->code = u64_at(f, L->f_code) & L->f_code_mask;
        rw->instr = u64_at(f, L->f_instr);
        rw->owner = f[L->f_owner];
        rw->is_entry = L->f_is_entry >= 0 ? f[L->f_is_entry] : 0;
        /* A leaf whose code reference is cleared is a frame the thread had returned from by the
         * time its bytes were read (3.14+ clear f_executable as they pop a frame, before the
         * thread state names the caller), as may be its callers: a torn read (below), whose
         * chain starts at the first frame not popped, still linked from them. */
        if (!n && rw->owner < 3 && !rw->code) {
            popped++;
            ps->st.ds_popped_leaves++;
            addr = u64_at(f, L->f_previous);
            continue;
        }
        /* Owners are 0..2 (3.11), 0..3 (3.12, 3.13, 3.15) or 0..4 (3.14); anything else is not a
         * frame, nor is one whose code object is not 8-aligned (none is). */
        if (rw->owner > L->f_owner_max || (rw->owner < 3 && (!rw->code || (rw->code & 7)))) {
            ps->st.errors++;
            fl |= PYSTACK_BROKEN;
            bad_link = true;
            break;
        }
        ps->addrs[n++] = addr;
        addr = u64_at(f, L->f_previous);
    }
    /* A frame whose `previous` leads nowhere a caller can be (up its chunk, into a loop, to no
     * frame) was not a live frame when its bytes were copied: the thread had popped it and reused
     * the memory, so its code pointer is of another instant too. It goes with the link; the
     * chain is cut below its callee. */
    if (bad_link && n)
        n--;
    /* Torn: the thread had left frames of the chain while the batch was read. Read again from
     * where it is now (the prediction learns it); torn every time, the chain is marked, not
     * trusted. */
    size_t cut = fl & PYSTACK_BROKEN ? 0 : torn_frames(ps, dw, n);
    if (cut || popped) {
        ps->st.ds_torn++;
        if (retries < TORN_RETRIES && ps->r.st.calls - calls0 < ps->o.max_reads) {
            retries++;
            ps->st.ds_torn_retries++;
            pystack_save_prediction(ps, s, cframe, n, true, dw);
            pydstack_note(&s->ds, dw);
            goto read;
        }
        fl |= PYSTACK_BROKEN;
        /* Named, the frames it had left could name a frame after a code object that ran in
         * that slot before or after (1 in ~4,000 samples of a workload that execs new code
         * every few ms): they are left out, the chain is marked. */
        memmove(ps->raw, ps->raw + cut, (n - cut) * sizeof(*ps->raw));
        memmove(ps->addrs, ps->addrs + cut, (n - cut) * sizeof(*ps->addrs));
        n -= cut;
        ps->st.ds_torn_dropped += cut;
    }
    apply_headers(ps, s, dw, n);
    /* New code objects: their headers were not in the batch (their addresses were not known),
     * and a header read after the frames can be another object's (the one that ran freed, its
     * address reused). Read the headers now, then the stack again with them and their qualname
     * words in one call: the names then are those of the objects the frames ran. A broken
     * chain too: the frames up to the break are named. */
    if (!codes_again && unvalidated(ps, n) && ps->r.st.calls - calls0 + 2 <= ps->o.max_reads) {
        codes_again = true;
        ps->st.code_rereads++;
        pystack_save_prediction(ps, s, cframe, n, (fl & PYSTACK_BROKEN) != 0, dw);
        pydstack_note(&s->ds, dw);
        pycode_prefetch(ps->code, ps->raw, n);
        goto read;
    }
    if (ps->r.st.calls - calls0 == 1 && !(fl & PYSTACK_BROKEN) && n == s->nframes && j == n)
        fl |= PYSTACK_PREDICTED;
    if (fl & PYSTACK_BROKEN)
        ps->st.errors++;
    ps->st.truncated += (fl & PYSTACK_TRUNCATED) != 0;
    pystack_save_prediction(ps, s, cframe, n, (fl & PYSTACK_BROKEN) != 0, dw);
    pydstack_note(&s->ds, dw);
    if (flags)
        *flags = fl;
    unsigned how = (fl & (PYSTACK_BROKEN | PYSTACK_TRUNCATED)) ? 0 : PYCODE_COMPLETE;
    if (s->ncodes == MAX_PRED_CODES)
        how |= PYCODE_LATE_FILLS;
    rc = pycode_symbolize(ps->code, ps->raw, n, out, max, how);
    /* A chain read from memory that ends, no caller, on a frame whose code object could not be
     * read may end on a frame the thread had popped, its memory reused: its root is not known
     * (the chain is marked, the collector roots it at [truncated]). */
    if (rc > 0 && (how & PYCODE_COMPLETE) && pycode_root_unread(ps->code)) {
        fl |= PYSTACK_BROKEN;
        ps->st.errors++;
        if (flags)
            *flags = fl;
    }
    if (ps->r.st.calls - calls0 == 1)
        ps->st.steady_samples++;
    return rc;
}

int pystack_symbolize(struct pystack *ps, const struct pystack_raw *raw, size_t n, bool truncated,
                      struct pystack_frame *out, size_t max, bool *final)
{
    int rc;

    ps->st.samples++;
    pycode_begin(ps->code);
    rc = pycode_symbolize(ps->code, raw, n, out, max, truncated ? 0 : PYCODE_COMPLETE);
    if (final)
        *final = rc >= 0 && pycode_final(ps->code);
    return rc;
}

void pystack_count_cached(struct pystack *ps)
{
    ps->st.samples++;
}

/* -- Every thread's code objects, named as the kernel will capture them -------------------------- */

#define RUNNING_DEPTH 64 /* frames followed per thread; deeper ones are named when first captured */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

size_t pystack_name_running(struct pystack *ps, void (*named)(void *arg, uint64_t code, uint64_t ident),
                            void *arg)
{
    const struct pyrt_layout *L = &ps->rt.L;
    const uint32_t n = ps->nslots;
    uint64_t *at = calloc(n ? n : 1, sizeof(*at)), *codes = NULL;
    uint8_t *buf = malloc((size_t)(n ? n : 1) * FRAME_BUF);
    struct remote_seg *segs = calloc(n ? n : 1, sizeof(*segs));
    size_t ncodes = 0, cap = 0, done = 0;

    if (!at || !buf || !segs || L->f_read_size > FRAME_BUF)
        goto out;
    /* Each thread's top frame: the thread state's current frame (3.13+), or its cframe's. */
    for (int step = L->ts_cframe ? 0 : 1; step < 2; step++) {
        for (uint32_t i = 0; i < n; i++) {
            uint64_t a = step == 0      ? ps->slots[i].tstate + L->ts_cframe
                         : L->ts_cframe ? (at[i] ? at[i] + L->cf_current_frame : 0)
                                        : ps->slots[i].tstate + L->ts_current_frame;
            segs[i] = REMOTE_SEG(a, &at[i], a ? 8 : 0);
        }
        if (remote_readv(&ps->r, segs, n, true) < 0)
            goto out;
        for (uint32_t i = 0; i < n; i++)
            if (!segs[i].ok)
                at[i] = 0;
    }
    /* Then one call per depth for every thread's next frame. A frame read while its thread moves
     * may be another instant's: what it names is only ever named by its own header. */
    for (int depth = 0; depth < RUNNING_DEPTH; depth++) {
        size_t live = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (!frame_addr_ok(at[i]))
                at[i] = 0;
            segs[i] = REMOTE_SEG(at[i], buf + (size_t)i * FRAME_BUF, at[i] ? L->f_read_size : 0);
            live += at[i] != 0;
        }
        if (!live || remote_readv(&ps->r, segs, n, true) < 0)
            break;
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *f = buf + (size_t)i * FRAME_BUF;
            if (!at[i] || !segs[i].ok) {
                at[i] = 0;
                continue;
            }
            uint64_t code = u64_at(f, L->f_code) & L->f_code_mask;
            /* as the program does: an ident for frames not owned by the C stack */
            if (f[L->f_owner] < 3 && code && !(code & 7)) {
                if (ncodes == cap) {
                    cap = cap ? cap * 2 : 256;
                    uint64_t *g = realloc(codes, cap * sizeof(*g));
                    if (!g)
                        goto out;
                    codes = g;
                }
                codes[ncodes++] = code;
            }
            at[i] = u64_at(f, L->f_previous);
        }
    }
    if (ncodes)
        qsort(codes, ncodes, sizeof(*codes), cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < ncodes; i++)
        if (!m || codes[i] != codes[m - 1])
            codes[m++] = codes[i];
    done = pycode_name_captures(ps->code, codes, m, named, arg);
out:
    free(at);
    free(buf);
    free(segs);
    free(codes);
    return done;
}

int pystack_thread_state(struct pystack *ps, pid_t tid, uint64_t *tstate, uint64_t *pthread)
{
    int s = pystack_thread_slot(ps, tid);
    if (s < 0)
        return s;
    *tstate = ps->slots[s].tstate;
    if (pthread)
        *pthread = ps->slots[s].pthread;
    return 0;
}

int pystack_gil_holder(struct pystack *ps, uint64_t *tstate)
{
    return pyrt_gil_holder(&ps->rt, &ps->r, &ps->gil_interp, tstate);
}

/* -- Stats -------------------------------------------------------------------------------------- */

static double rate(uint64_t hit, uint64_t miss)
{
    return hit + miss ? (double)hit / (double)(hit + miss) : 0.0;
}

void pystack_stats(const struct pystack *ps, struct stats out)
{
    const struct remote_stats *r = &ps->r.st;
    const struct pystack_stats *s = &ps->st;

    stats_text(out, "python_version", ps->rt.version);
    stats_count(out, "python_samples", s->samples);
    stats_count(out, "python_frames", s->frames);
    stats_count(out, "remote_reads", r->calls);
    stats_count(out, "remote_read_bytes", r->bytes);
    stats_count(out, "remote_read_errors", r->errors);
    stats_ratio(out, "pystack_reads_per_sample", (double)r->calls, (double)s->samples, 3);
    stats_ratio(out, "bytes_per_sample", (double)r->bytes, (double)s->samples, 1);
    stats_count(out, "batched_attempts", r->batched_attempts);
    stats_count(out, "batched_successes", r->batched_successes);
    stats_count(out, "batched_segments_requested", r->segs_requested);
    stats_count(out, "batched_segments_read", r->segs_read);
    stats_count(out, "steady_samples", s->steady_samples);
    stats_real(out, "l1_hit_rate", rate(s->l1_hits, s->l1_misses), 3);
    stats_real(out, "l2_hit_rate", rate(s->l2_hits, s->l2_misses), 3);
    stats_count(out, "l2_refreshes", s->l2_refreshes);
    stats_count(out, "l2_refreshes_deferred", s->l2_refreshes_deferred);
    stats_real(out, "prediction_hit_rate", rate(s->pred_hits, s->pred_misses), 3);
    stats_real(out, "code_hit_rate", rate(s->code_hits, s->code_misses), 3);
    stats_count(out, "code_stale", s->code_stale);
    stats_count(out, "code_freed", s->code_freed);
    stats_count(out, "code_rereads", s->code_rereads);
    stats_count(out, "code_fill_raced", s->code_fill_raced);
    stats_count(out, "code_fill_late", s->code_fill_late);
    stats_count(out, "code_unverified", s->code_unverified);
    stats_count(out, "code_objects", s->code_objects);
    stats_real(out, "frame_hit_rate", rate(s->fin_hits, s->fin_misses), 3);
    stats_count(out, "python_truncated", s->truncated);
    stats_count(out, "python_loops", s->loops);
    stats_count(out, "python_budget_exhausted", s->budget_exhausted);
    stats_count(out, "python_bad_code", s->bad_code);
    stats_count(out, "python_errors", s->errors);
    stats_count(out, "datastack_window_frames", s->ds_window_frames);
    stats_count(out, "datastack_gap_reads", s->ds_gap_reads);
    stats_count(out, "datastack_gap_frames", s->ds_gap_frames);
    stats_count(out, "datastack_torn", s->ds_torn);
    stats_count(out, "datastack_torn_retries", s->ds_torn_retries);
    stats_count(out, "datastack_torn_dropped", s->ds_torn_dropped);
    stats_count(out, "datastack_popped_leaves", s->ds_popped_leaves);
}
