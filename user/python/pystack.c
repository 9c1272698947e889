/* pystack — thread states, predicted frame-chain reads, stats (see pystack.h). */
#include "python/pystack.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "python/pycode.h"
#include "python/pydstack.h"

#define MAX_INTERPS    64
#define MAX_THREADS    8192
#define MAX_PRED_CODES 64 /* code headers re-read with the prediction */
#define RECENT_CODES   24 /* ... of which codes no longer on the stack */
/* No user-space address reaches this (x86-64 and aarch64 use 47 or 48 bits); frame addresses at
 * or above it end a chain before any arithmetic on them can wrap. */
#define USER_ADDR_END (1ull << 56)
#define FRAME_BUF     128 /* bytes; f_read_size is ~72 */
/* Predicted frames closer than this in memory are read as one range: frames of one thread sit
 * next to each other in its data stack, a few locals apart, and one iovec costs less than two. */
#define COALESCE_GAP 256
/* The run holding the leaf frame also covers up to this many bytes above it, never past the end
 * of the leaf's page: frames pushed since the last sample land there (data stacks grow up). */
#define SPEC_WINDOW      1024
#define MAX_GAPS         4  /* data-stack gap reads per sample (pydstack.h); then frame by frame */
#define NOT_PYTHON_SLOTS 64 /* tids recently found without a thread state */
#define NOT_PYTHON_NS    1000000000ull

/* What the thread's previous sample saw: read again first, in one call. */
struct thread_slot {
    pid_t tid;
    uint64_t tstate;
    uint64_t interp;  /* the interpreter whose list held it */
    uint64_t cframe;  /* 3.11/3.12: tstate->cframe */
    uint64_t *frames; /* frame addresses, leaf first, shims included */
    uint32_t nframes;
    uint64_t codes[MAX_PRED_CODES]; /* distinct code objects of those frames */
    uint32_t ncodes;
    struct pyds_hist ds; /* its data stack: the window of the next batch */
};

struct nonpy {
    pid_t tid;
    uint64_t since_ns;
};

struct pystack {
    uint64_t last_refresh_ns;
    struct nonpy nonpy[NOT_PYTHON_SLOTS];
    unsigned nonpy_next;
    struct pyrt rt;
    struct remote r;
    struct profile *prof;
    struct pycode *code;
    struct pystack_opts o;
    struct pystack_stats st;
    struct {
        pid_t tid;
        uint32_t slot;
        bool valid;
    } l1; /* last thread asked for */
    struct thread_slot *slots;
    uint32_t nslots;
    uint32_t *idx, idx_cap; /* tid hash → slot + 1 */
    /* per-sample scratch, sized for max_depth */
    struct remote_seg *segs;
    uint8_t *fbuf, *hbuf;
    uint8_t qbuf[MAX_PRED_CODES][PYCODE_QUAL_SIZE]; /* qualname words of the predicted codes */
    uint32_t *fseg;                                 /* predicted frame k → segment holding it */
    uint32_t gap;                                   /* COALESCE_GAP, or 0 with exact_reads */
    size_t frame_seg0, code_seg0;
    /* data stack (pydstack.h): ds_on is 0 until the three thread-state words were checked against
     * a chunk header, then 1 (windows and gap reads on) or -1 (off: exact_reads, no offsets, or
     * the check failed) */
    int ds_on;
    unsigned ds_check_errors; /* chunk headers that could not be read: a few, then off */
    size_t ds_seg, win_seg;   /* segments of the three words and of the window; 0: none */
    size_t ds_end_seg;        /* the three words again, last in the batch; 0: none */
    struct pyds_words ds_words, ds_end;
    uint8_t *wbuf, *gbuf;
    struct remote_seg gaps[MAX_GAPS];
    unsigned ngaps;
    struct pystack_raw *raw;
    uint64_t *addrs;
    uint64_t *seen;
    uint32_t *seen_stamp, seen_cap, stamp;
};

/* -- Small helpers ----------------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t u64_at(const uint8_t *b, uint32_t off)
{
    uint64_t v;
    memcpy(&v, b + off, 8);
    return v;
}

static uint32_t tid_hash(pid_t tid, uint32_t cap)
{
    return ((uint32_t)tid * 2654435761u) & (cap - 1);
}

static int slot_find(const struct pystack *ps, pid_t tid)
{
    if (!ps->idx_cap)
        return -1;
    for (uint32_t i = tid_hash(tid, ps->idx_cap);; i = (i + 1) & (ps->idx_cap - 1)) {
        if (!ps->idx[i])
            return -1;
        if (ps->slots[ps->idx[i] - 1].tid == tid)
            return (int)ps->idx[i] - 1;
    }
}

/* -- L2: thread states from interp->threads ---------------------------------------------------- */

static bool not_python(const struct pystack *ps, pid_t tid, uint64_t now)
{
    for (unsigned i = 0; i < NOT_PYTHON_SLOTS; i++)
        if (ps->nonpy[i].tid == tid && now - ps->nonpy[i].since_ns < NOT_PYTHON_NS)
            return true;
    return false;
}

/* Re-reads every interpreter's thread list and rebuilds the tid table; predictions of threads
 * whose thread state did not move are kept. */
static int refresh_threads(struct pystack *ps)
{
    const struct pyrt_layout *L = &ps->rt.L;
    struct thread_slot *nslots = NULL;
    uint32_t n = 0, cap = 0;
    uint8_t ts[512];
    uint64_t interp;
    int rc;

    ps->st.l2_refreshes++;
    ps->last_refresh_ns = now_ns();
    ps->l1.valid = false;
    if ((rc = pyrt_first_interp(&ps->rt, &ps->r, &interp)) != 0)
        return rc;
    for (int ni = 0; interp && ni < MAX_INTERPS; ni++) {
        uint64_t head = 0, next = 0;
        struct remote_seg s[2] = {REMOTE_SEG(interp + L->is_threads_head, &head, 8),
                                  REMOTE_SEG(interp + L->is_next, &next, 8)};
        if (remote_readv(&ps->r, s, 2, false) != 2)
            break;
        for (uint64_t t = head; t && n < MAX_THREADS; t = u64_at(ts, L->ts_next)) {
            if (remote_read(&ps->r, t, ts, L->ts_read_size) != 0) {
                ps->st.errors++;
                break;
            }
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                struct thread_slot *g = realloc(nslots, cap * sizeof(*g));
                if (!g) {
                    free(nslots);
                    return -ENOMEM;
                }
                nslots = g;
            }
            nslots[n++] = (struct thread_slot){
                .tid = (pid_t)u64_at(ts, L->ts_native_thread_id), .tstate = t, .interp = interp};
        }
        interp = next;
    }
    /* Carry predictions over; free the rest. */
    for (uint32_t i = 0; i < ps->nslots; i++) {
        struct thread_slot *old = &ps->slots[i];
        for (uint32_t k = 0; k < n && old->frames; k++) {
            if (nslots[k].tid == old->tid && nslots[k].tstate == old->tstate && !nslots[k].frames) {
                nslots[k] = *old;
                old->frames = NULL;
            }
        }
        free(old->frames);
    }
    free(ps->slots);
    ps->slots = nslots;
    ps->nslots = n;
    uint32_t icap = 16;
    while (icap < 2 * n)
        icap *= 2;
    uint32_t *idx = calloc(icap, sizeof(*idx));
    if (!idx)
        return -ENOMEM;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = tid_hash(nslots[k].tid, icap);
        while (idx[i])
            i = (i + 1) & (icap - 1);
        idx[i] = k + 1;
    }
    free(ps->idx);
    ps->idx = idx;
    ps->idx_cap = icap;
    return 0;
}

/* L1, then L2, then a refresh. Returns the slot index or -ESRCH. */
static int thread_slot(struct pystack *ps, pid_t tid)
{
    if (ps->l1.valid && ps->l1.tid == tid) {
        ps->st.l1_hits++;
        return (int)ps->l1.slot;
    }
    ps->st.l1_misses++;
    int s = slot_find(ps, tid);
    if (s >= 0) {
        ps->st.l2_hits++;
    } else {
        ps->st.l2_misses++;
        /* A tid without a thread state (a C thread) would otherwise walk the list every time:
         * walks are spaced by refresh_interval_us, and a tid a walk did not find is not looked
         * for again during NOT_PYTHON_NS. */
        uint64_t now = now_ns();
        if ((ps->last_refresh_ns && now - ps->last_refresh_ns < (uint64_t)ps->o.refresh_interval_us * 1000) ||
            not_python(ps, tid, now)) {
            ps->st.l2_refreshes_deferred++;
            return -ESRCH;
        }
        int rc = refresh_threads(ps);
        if (rc)
            return rc;
        s = slot_find(ps, tid);
        if (s < 0) {
            ps->nonpy[ps->nonpy_next++ % NOT_PYTHON_SLOTS] = (struct nonpy){tid, now};
            return -ESRCH;
        }
    }
    ps->l1.tid = tid;
    ps->l1.slot = (uint32_t)s;
    ps->l1.valid = true;
    return s;
}

int pystack_thread_state(struct pystack *ps, pid_t tid, uint64_t *tstate)
{
    int s = thread_slot(ps, tid);
    if (s < 0)
        return s;
    *tstate = ps->slots[s].tstate;
    return 0;
}

/* -- Data stack --------------------------------------------------------------------------------- */

/* The positions of datastack_top and datastack_limit are assumed (the words after
 * datastack_chunk): they are trusted once a chunk's own size says limit - chunk. */
static void ds_check(struct pystack *ps, const struct pyds_words *w)
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
    struct pyds_words w;

    if (ps->ds_on != 0 || pyrt_first_interp(&ps->rt, &ps->r, &interp) != 0 || !interp ||
        remote_read(&ps->r, interp + L->is_threads_head, &ts, 8) != 0 || !ts ||
        remote_read(&ps->r, ts + L->ts_datastack, &w, sizeof(w)) != 0)
        return;
    if (pyds_valid(&w))
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
    ps->segs = calloc(d + 2 * MAX_PRED_CODES + 5, sizeof(*ps->segs));
    ps->gap = ps->o.exact_reads ? 0 : COALESCE_GAP;
    ps->fbuf = malloc((size_t)d * (FRAME_BUF + ps->gap) + SPEC_WINDOW);
    ps->fseg = calloc(d, sizeof(*ps->fseg));
    ps->hbuf = malloc((size_t)MAX_PRED_CODES * ps->rt.L.co_hdr_size);
    ps->wbuf = malloc(PYDS_WINDOW_MAX);
    ps->gbuf = malloc((size_t)MAX_GAPS * PYDS_WINDOW_MAX);
    ps->raw = calloc(d, sizeof(*ps->raw));
    ps->addrs = calloc(d, sizeof(*ps->addrs));
    ps->seen = calloc(ps->seen_cap, sizeof(*ps->seen));
    ps->seen_stamp = calloc(ps->seen_cap, sizeof(*ps->seen_stamp));
    rc = -ENOMEM;
    if (!ps->segs || !ps->fbuf || !ps->fseg || !ps->hbuf || !ps->raw || !ps->addrs || !ps->seen ||
        !ps->seen_stamp || !ps->wbuf || !ps->gbuf)
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
    free(ps->segs);
    free(ps->fbuf);
    free(ps->fseg);
    free(ps->hbuf);
    free(ps->wbuf);
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

/* The predicted batch: thread state, cframe, data-stack words and window, frames outside the
 * window, code headers. Returns segments used. */
static size_t build_batch(struct pystack *ps, const struct thread_slot *s, uint8_t *tsbuf, uint64_t *cf_top)
{
    const struct pyrt_layout *L = &ps->rt.L;
    const uint64_t F = L->f_read_size;
    uint64_t wlo = 0, whi = 0;
    const bool win = ps->ds_on > 0 && pyds_window(&s->ds, &wlo, &whi);
    size_t n = 0;

    ps->segs[n++] = REMOTE_SEG(s->tstate, tsbuf, L->ts_read_size);
    if (L->ts_cframe)
        ps->segs[n++] = REMOTE_SEG(s->cframe + L->cf_current_frame, cf_top, s->cframe ? 8 : 0);
    ps->ds_seg = ps->win_seg = 0;
    ps->ngaps = 0;
    if (ps->ds_on >= 0) {
        ps->ds_seg = n;
        ps->segs[n++] = REMOTE_SEG(s->tstate + L->ts_datastack, &ps->ds_words, sizeof(ps->ds_words));
    }
    /* The window right after the top frame's address: the less time between the two reads, the
     * less often the thread has moved on meanwhile (popped frames that the window then shows
     * overwritten by newer ones). */
    if (win) {
        ps->win_seg = n;
        ps->segs[n++] = REMOTE_SEG(wlo, ps->wbuf, whi - wlo);
    }
    ps->frame_seg0 = n;
    /* Frames outside the window: one segment per run of neighbours (each run at most (F + gap)
     * bytes per frame, so the buffer of max_depth * (FRAME_BUF + gap) bytes always suffices). */
    size_t off = 0, run = 0, in_run = 0;
    uint64_t lo = 0, hi = 0;
    for (uint32_t k = 0; k <= s->nframes; k++) {
        uint64_t a = k < s->nframes ? s->frames[k] : 0;
        if (k < s->nframes && win && a >= wlo && a < whi && whi - a >= F) {
            ps->fseg[k] = (uint32_t)ps->win_seg;
            continue;
        }
        if (k < s->nframes && in_run) {
            uint64_t nlo = a < lo ? a : lo, nhi = a + F > hi ? a + F : hi;
            bool near = (a + F + ps->gap >= lo && a <= hi + ps->gap);
            if (near && nhi - nlo <= (in_run + 1) * (F + ps->gap)) {
                lo = nlo, hi = nhi;
                in_run++;
                ps->fseg[k] = (uint32_t)run;
                continue;
            }
        }
        if (in_run) { /* close the run; the leaf's runs on towards its page end */
            if (ps->fseg[0] == run && ps->gap) {
                uint64_t page_end = ((hi - 1) | 4095) + 1;
                hi += page_end - hi < SPEC_WINDOW ? page_end - hi : SPEC_WINDOW;
            }
            ps->segs[run] = REMOTE_SEG(lo, ps->fbuf + off, hi - lo);
            off += hi - lo;
            in_run = 0;
        }
        if (k == s->nframes)
            break;
        run = n++;
        lo = a, hi = a + F, in_run = 1;
        ps->fseg[k] = (uint32_t)run;
    }
    /* The data-stack words once more, right after the frames: iovecs are copied in order, so a
     * frame of the current chunk at or above this top had been popped by the time its bytes were
     * read, or just after (torn_leaf). */
    ps->ds_end_seg = 0;
    if (ps->ds_seg) {
        ps->ds_end_seg = n;
        ps->segs[n++] = REMOTE_SEG(s->tstate + L->ts_datastack, &ps->ds_end, sizeof(ps->ds_end));
    }
    ps->code_seg0 = n;
    /* Code headers, except those trusted without a re-read (zero-length: no iovec), then the
     * qualname words of each (pycode_header). */
    for (uint32_t k = 0; k < s->ncodes; k++)
        ps->segs[n++] = REMOTE_SEG(s->codes[k] + L->co_hdr_start, ps->hbuf + (size_t)k * L->co_hdr_size,
                                   pycode_checked(ps->code, s->codes[k]) ? 0 : L->co_hdr_size);
    for (uint32_t k = 0; k < s->ncodes; k++) {
        uint64_t q = ps->segs[ps->code_seg0 + k].len ? pycode_qual_addr(ps->code, s->codes[k]) : 0;
        ps->segs[n++] = REMOTE_SEG(q, ps->qbuf[k], q ? PYCODE_QUAL_SIZE : 0);
    }
    return n;
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

/* Where predicted frame k landed in the batch's buffers. */
static const uint8_t *predicted(const struct pystack *ps, const struct thread_slot *s, uint32_t k)
{
    const struct remote_seg *g = &ps->segs[ps->fseg[k]];
    return (const uint8_t *)g->buf + (s->frames[k] - g->addr);
}

static void add_code(struct thread_slot *s, uint64_t code)
{
    for (uint32_t k = 0; k < s->ncodes; k++)
        if (s->codes[k] == code)
            return;
    s->codes[s->ncodes++] = code;
}

static void save_prediction(struct pystack *ps, struct thread_slot *s, uint64_t cframe, size_t n, bool cut,
                            const struct pyds_words *dw)
{
    const struct pyrt_layout *L = &ps->rt.L;

    if (!s->frames && !(s->frames = malloc(ps->o.max_depth * sizeof(*s->frames)))) {
        s->nframes = s->ncodes = 0;
        return;
    }
    /* A chain cut short (torn, unreadable) says nothing of the frames beyond the cut: the old
     * ones outside the current chunk (the window covers it) stay predicted, such as the shim and
     * base frames at the root (3.12+), older chunks, generators. */
    size_t nf = n;
    for (uint32_t k = 0; cut && k < s->nframes && nf < ps->o.max_depth; k++) {
        uint64_t a = s->frames[k];
        bool have = dw && a >= dw->chunk && a < dw->limit;
        for (size_t q = 0; q < nf && !have; q++)
            have = ps->addrs[q] == a;
        if (!have)
            ps->addrs[nf++] = a;
    }
    memcpy(s->frames, ps->addrs, nf * sizeof(*s->frames));
    s->nframes = (uint32_t)nf;
    s->cframe = cframe;
    /* Code objects to re-validate with the next prediction: those of this stack, then up to
     * RECENT_CODES of earlier stacks (leaves come and go; their headers then ride along). An
     * address whose header did not read as a code object in this batch is dropped (a frame caught
     * half-written held it), and addresses no batch has validated yet go last: one that fails to
     * read then costs no further call for the others. */
    uint64_t old[MAX_PRED_CODES], cur[MAX_PRED_CODES];
    bool bad[MAX_PRED_CODES];
    uint32_t nold = s->ncodes, ncur = 0;
    for (uint32_t k = 0; k < nold; k++) {
        const struct remote_seg *g = &ps->segs[ps->code_seg0 + k];
        old[k] = s->codes[k];
        bad[k] = g->len && (!g->ok || (ps->rt.code_type &&
                                       u64_at(g->buf, L->ob_type - L->co_hdr_start) != ps->rt.code_type));
    }
    s->ncodes = 0;
    for (size_t i = 0; i < n && s->ncodes < MAX_PRED_CODES; i++) {
        if (L->minor >= 12 && ps->raw[i].owner >= PYRT_OWNED_BY_CSTACK)
            continue;
        add_code(s, ps->raw[i].code);
    }
    ncur = s->ncodes;
    memcpy(cur, s->codes, ncur * sizeof(*cur));
    /* Each list holds an address once: match them once, then order by the flags. */
    int cur_old[MAX_PRED_CODES];
    bool old_in_cur[MAX_PRED_CODES] = {false};
    for (uint32_t k = 0; k < ncur; k++) {
        cur_old[k] = -1;
        for (uint32_t q = 0; q < nold; q++) {
            if (old[q] == cur[k]) {
                cur_old[k] = (int)q;
                old_in_cur[q] = true;
                break;
            }
        }
    }
    s->ncodes = 0;
    for (uint32_t k = 0; k < ncur; k++) /* this stack's, validated */
        if (cur_old[k] >= 0 && !bad[cur_old[k]])
            s->codes[s->ncodes++] = cur[k];
    uint32_t limit = s->ncodes + RECENT_CODES < MAX_PRED_CODES ? s->ncodes + RECENT_CODES : MAX_PRED_CODES;
    for (uint32_t k = 0; k < nold && s->ncodes < limit; k++) /* earlier stacks', validated */
        if (!old_in_cur[k] && !bad[k])
            s->codes[s->ncodes++] = old[k];
    for (uint32_t k = 0; k < ncur && s->ncodes < MAX_PRED_CODES; k++) /* this stack's, new */
        if (cur_old[k] < 0)
            s->codes[s->ncodes++] = cur[k];
}

/* Whether the stack moved while the batch was copied (the data-stack top read after the frames
 * is not the one read before them) and the chain holds a frame of the current chunk that was no
 * longer live by then (at or above the later top): the thread returned from it, maybe from its
 * callers too, and pushed anew, so its bytes and the frames they lead to may be of two instants.
 * A leaf above a top that did not move is a frame being popped, its bytes still its own. */
static bool torn_leaf(const struct pystack *ps, const struct pyds_words *dw, size_t n)
{
    const struct remote_seg *g = &ps->segs[ps->ds_end_seg];
    const struct pyds_words *e = &ps->ds_end;

    if (!dw || !ps->ds_end_seg || !g->ok || !pyds_valid(e) || e->chunk != dw->chunk || e->top == dw->top)
        return false;
    for (size_t k = 0; k < n; k++) {
        uint64_t a = ps->addrs[k];
        if (a >= e->chunk && a < e->limit && a + ps->rt.L.f_read_size > e->top)
            return true;
    }
    return false;
}

/* The gap read for a frame at `addr` in the current chunk (pydstack.h); the frame, or NULL. */
static const uint8_t *gap_read(struct pystack *ps, const struct pyds_words *w, uint64_t addr)
{
    const uint32_t F = ps->rt.L.f_read_size;
    uint64_t hl = 0, hh = 0, lo, hi;
    int from;

    if (ps->ngaps == MAX_GAPS)
        return NULL;
    if (ps->win_seg && ps->segs[ps->win_seg].ok)
        hl = ps->segs[ps->win_seg].addr, hh = hl + ps->segs[ps->win_seg].len;
    if (!pyds_gap(w, addr, F, hl, hh, &lo, &hi))
        return NULL;
    struct remote_seg *g = &ps->gaps[ps->ngaps];
    *g = REMOTE_SEG(lo, ps->gbuf + (size_t)ps->ngaps * PYDS_WINDOW_MAX, hi - lo);
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
    bool again = false; /* a torn read is read once more */

    ps->st.samples++;
    pycode_begin(ps->code);
read:
    fl = 0;
    cf_top = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((si = thread_slot(ps, tid)) < 0)
            return si;
        nseg = build_batch(ps, &ps->slots[si], ts, &cf_top);
        if ((rc = remote_readv(&ps->r, ps->segs, nseg, true)) < 0)
            return rc;
        /* Still this thread's state: same tid, same interpreter (freed memory rarely keeps both). */
        if (ps->segs[0].ok && (pid_t)u64_at(ts, L->ts_native_thread_id) == tid &&
            u64_at(ts, L->ts_interp) == ps->slots[si].interp)
            break;
        /* The thread state moved or died: the caches are stale for this thread. */
        if (attempt == 1)
            return -ESRCH;
        if ((rc = refresh_threads(ps)) != 0)
            return rc;
    }
    struct thread_slot *s = &ps->slots[si];
    for (uint32_t k = 0; k < s->ncodes; k++)
        if (ps->segs[ps->code_seg0 + k].ok && ps->segs[ps->code_seg0 + k].len)
            pycode_header(ps->code, s->codes[k], ps->hbuf + (size_t)k * L->co_hdr_size,
                          ps->segs[ps->code_seg0 + s->ncodes + k].ok &&
                                  ps->segs[ps->code_seg0 + s->ncodes + k].len
                              ? ps->qbuf[k]
                              : NULL);

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
    const struct pyds_words *dw = NULL;
    if (ps->ds_seg && ps->segs[ps->ds_seg].ok) {
        dw = &ps->ds_words;
        if (ps->ds_on == 0 && pyds_valid(dw))
            ds_check(ps, dw);
        if (ps->ds_on < 0 || !pyds_valid(dw))
            dw = NULL;
    }

    /* The chain, from the predicted read where it still matches. */
    size_t n = 0;
    uint32_t j = 0;
    ps->stamp++;
    for (uint64_t addr = top; addr && !(fl & PYSTACK_BROKEN);) {
        if (n == ps->o.max_depth) {
            fl |= PYSTACK_TRUNCATED;
            ps->st.truncated++;
            break;
        }
        /* Frames hold pointers: never below the first page, never misaligned. */
        if (addr >= USER_ADDR_END || addr < 4096 || (addr & 7)) {
            ps->st.errors++;
            fl |= PYSTACK_BROKEN;
            break;
        }
        /* In one chunk a caller lies below the frame it called: a `previous` that points up was
         * read from bytes the thread wrote after the frame was popped (it moved on between the
         * reads). A top frame at or above datastack_top is not refused: popped after its address
         * was read, its bytes are either still its own (a stack of that instant) or those of a
         * newer frame, which the checks below and the code object's header judge. */
        if (dw && n && addr >= dw->chunk && addr < dw->limit && ps->addrs[n - 1] >= dw->chunk &&
            ps->addrs[n - 1] < dw->limit && addr >= ps->addrs[n - 1]) {
            ps->st.ds_torn++;
            fl |= PYSTACK_BROKEN;
            break;
        }
        if (!visit(ps, addr)) {
            ps->st.loops++;
            fl |= PYSTACK_BROKEN;
            break;
        }
        const uint8_t *f = NULL;
        int from = 0;
        if (j < s->nframes && s->frames[j] == addr && ps->segs[ps->fseg[j]].ok) {
            from = ps->fseg[j] == ps->win_seg;
            f = predicted(ps, s, j++);
        } else {
            for (uint32_t k = 0; k < s->nframes && !f; k++)
                if (s->frames[k] == addr && ps->segs[ps->fseg[k]].ok) {
                    from = ps->fseg[k] == ps->win_seg;
                    f = predicted(ps, s, k);
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
        /* Owners are 0..2 (3.11), 0..3 (3.12, 3.13, 3.15) or 0..4 (3.14); anything else is not a
         * frame, nor is one whose code object is not 8-aligned (none is). */
        if (rw->owner > L->f_owner_max || (rw->owner < 3 && (!rw->code || (rw->code & 7)))) {
            ps->st.errors++;
            fl |= PYSTACK_BROKEN;
            break;
        }
        ps->addrs[n++] = addr;
        addr = u64_at(f, L->f_previous);
    }
    /* Torn: the leaf had returned by the time the batch ended. Read once more from where the
     * thread is now (the prediction learns it); torn twice, the chain is marked, not trusted. */
    if (!(fl & PYSTACK_BROKEN) && torn_leaf(ps, dw, n)) {
        ps->st.ds_torn++;
        if (!again && ps->r.st.calls - calls0 < ps->o.max_reads) {
            again = true;
            ps->st.ds_torn_retries++;
            save_prediction(ps, s, cframe, n, true, dw);
            pyds_note(&s->ds, dw);
            goto read;
        }
        fl |= PYSTACK_BROKEN;
    }
    if (ps->r.st.calls - calls0 == 1 && !(fl & PYSTACK_BROKEN) && n == s->nframes && j == n)
        fl |= PYSTACK_PREDICTED;
    if (fl & PYSTACK_BROKEN)
        ps->st.errors++;
    save_prediction(ps, s, cframe, n, (fl & PYSTACK_BROKEN) != 0, dw);
    pyds_note(&s->ds, dw);
    if (flags)
        *flags = fl;
    rc = pycode_symbolize(ps->code, ps->raw, n, out, max, !(fl & (PYSTACK_BROKEN | PYSTACK_TRUNCATED)));
    if (ps->r.st.calls - calls0 == 1)
        ps->st.steady_samples++;
    return rc;
}

int pystack_symbolize(struct pystack *ps, const struct pystack_raw *raw, size_t n, bool truncated,
                      struct pystack_frame *out, size_t max)
{
    ps->st.samples++;
    pycode_begin(ps->code);
    return pycode_symbolize(ps->code, raw, n, out, max, !truncated);
}

/* -- Stats -------------------------------------------------------------------------------------- */

static double rate(uint64_t hit, uint64_t miss)
{
    return hit + miss ? (double)hit / (double)(hit + miss) : 0.0;
}

void pystack_print_stats(const struct pystack *ps, FILE *f)
{
    const struct remote_stats *r = &ps->r.st;
    const struct pystack_stats *s = &ps->st;

    fprintf(f, "python_version: %s\n", ps->rt.version);
    fprintf(f, "python_samples: %" PRIu64 "\n", s->samples);
    fprintf(f, "python_frames: %" PRIu64 "\n", s->frames);
    fprintf(f, "remote_reads: %" PRIu64 "\n", r->calls);
    fprintf(f, "remote_read_bytes: %" PRIu64 "\n", r->bytes);
    fprintf(f, "remote_read_errors: %" PRIu64 "\n", r->errors);
    fprintf(f, "reads_per_sample: %.3f\n", s->samples ? (double)r->calls / (double)s->samples : 0.0);
    fprintf(f, "bytes_per_sample: %.1f\n", s->samples ? (double)r->bytes / (double)s->samples : 0.0);
    fprintf(f, "batched_attempts: %" PRIu64 "\n", r->batched_attempts);
    fprintf(f, "batched_successes: %" PRIu64 "\n", r->batched_successes);
    fprintf(f, "batched_segments_requested: %" PRIu64 "\n", r->segs_requested);
    fprintf(f, "batched_segments_read: %" PRIu64 "\n", r->segs_read);
    fprintf(f, "steady_samples: %" PRIu64 "\n", s->steady_samples);
    fprintf(f, "l1_hit_rate: %.3f\n", rate(s->l1_hits, s->l1_misses));
    fprintf(f, "l2_hit_rate: %.3f\n", rate(s->l2_hits, s->l2_misses));
    fprintf(f, "l2_refreshes: %" PRIu64 "\n", s->l2_refreshes);
    fprintf(f, "l2_refreshes_deferred: %" PRIu64 "\n", s->l2_refreshes_deferred);
    fprintf(f, "prediction_hit_rate: %.3f\n", rate(s->pred_hits, s->pred_misses));
    fprintf(f, "code_hit_rate: %.3f\n", rate(s->code_hits, s->code_misses));
    fprintf(f, "code_stale: %" PRIu64 "\n", s->code_stale);
    fprintf(f, "code_freed: %" PRIu64 "\n", s->code_freed);
    fprintf(f, "code_objects: %" PRIu64 "\n", s->code_objects);
    fprintf(f, "frame_hit_rate: %.3f\n", rate(s->fin_hits, s->fin_misses));
    fprintf(f, "python_truncated: %" PRIu64 "\n", s->truncated);
    fprintf(f, "python_loops: %" PRIu64 "\n", s->loops);
    fprintf(f, "python_budget_exhausted: %" PRIu64 "\n", s->budget_exhausted);
    fprintf(f, "python_bad_code: %" PRIu64 "\n", s->bad_code);
    fprintf(f, "python_errors: %" PRIu64 "\n", s->errors);
    fprintf(f, "datastack_window_frames: %" PRIu64 "\n", s->ds_window_frames);
    fprintf(f, "datastack_gap_reads: %" PRIu64 "\n", s->ds_gap_reads);
    fprintf(f, "datastack_gap_frames: %" PRIu64 "\n", s->ds_gap_frames);
    fprintf(f, "datastack_torn: %" PRIu64 "\n", s->ds_torn);
    fprintf(f, "datastack_torn_retries: %" PRIu64 "\n", s->ds_torn_retries);
}
