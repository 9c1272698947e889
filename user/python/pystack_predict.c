/* pystack_predict — the batch a thread's previous sample predicts, and the prediction saved
 * from this one (see pystack.h, pystack_state.h). */
#include "python/pystack_state.h"

#include <stdlib.h>
#include <string.h>

#define RECENT_CODES 24 /* of the MAX_PRED_CODES, codes no longer on the stack */

/* The predicted batch: thread state, cframe, data-stack words and window, frames outside the
 * window, code headers. Returns segments used. */
size_t pystack_build_batch(struct pystack *ps, const struct thread_slot *s, uint8_t *tsbuf, uint64_t *cf_top)
{
    const struct pyrt_layout *L = &ps->rt.L;
    const uint64_t F = L->f_read_size;
    uint64_t wlo = 0, whi = 0;
    const bool win = ps->ds_on > 0 && pydstack_window(&s->ds, &wlo, &whi);
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
     * read, or just after (torn_frames). */
    ps->ds_end_seg = ps->win_end_seg = 0;
    if (ps->ds_seg) {
        ps->ds_end_seg = n;
        ps->segs[n++] = REMOTE_SEG(s->tstate + L->ts_datastack, &ps->ds_end, sizeof(ps->ds_end));
    }
    /* ... and the window once more: the frames it held must still be there (torn_frames). Not
     * after a window that failed: each bad segment costs a call of its own. */
    if (win && ps->ds_end_seg && !ps->win_failed) {
        ps->win_end_seg = n;
        ps->segs[n++] = REMOTE_SEG(wlo, ps->wbuf_end, whi - wlo);
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
    /* The words last: a frame still live here was live while its code object's header and
     * qualname words were read (it holds the object), so they may fill a new entry (pycode_header:
     * witnessed). Not the frames' witness: a longer span would tear more chains for nothing. */
    ps->ds_fin_seg = 0;
    if (ps->ds_seg) {
        ps->ds_fin_seg = n;
        ps->segs[n++] = REMOTE_SEG(s->tstate + L->ts_datastack, &ps->ds_fin, sizeof(ps->ds_fin));
    }
    return n;
}

/* Where predicted frame k landed in the batch's buffers. */
const uint8_t *pystack_predicted(const struct pystack *ps, const struct thread_slot *s, uint32_t k)
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

void pystack_save_prediction(struct pystack *ps, struct thread_slot *s, uint64_t cframe, size_t n, bool cut,
                             const struct pydstack_words *dw)
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
