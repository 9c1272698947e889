/* pydstack — data-stack windows for the frame reader (see pydstack.h). */
#include "python/pydstack.h"

#include <stddef.h>

/* No user-space address reaches this: sums of such addresses and small sizes never wrap. */
#define ADDR_END (1ull << 56)

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

bool pyds_valid(const struct pyds_words *w)
{
    return w->chunk && w->limit < ADDR_END && !(w->chunk & 7) && !(w->top & 7) &&
           w->chunk + PYDS_DATA <= w->top && w->top <= w->limit && w->limit - w->chunk <= PYDS_CHUNK_MAX;
}

void pyds_note(struct pyds_hist *h, const struct pyds_words *w)
{
    if (!w || !pyds_valid(w)) {
        *h = (struct pyds_hist){0};
        return;
    }
    if (w->chunk != h->chunk) {
        h->hw = h->hw_prev = w->top;
        h->count = 0;
    } else {
        h->hw = max_u64(h->hw, w->top);
        /* A high-water mark that never came down would keep reading the deepest stack ever seen;
         * this one forgets tops older than two epochs. */
        if (++h->count >= PYDS_EPOCH) {
            h->hw_prev = h->hw;
            h->hw = w->top;
            h->count = 0;
        }
    }
    h->chunk = w->chunk;
    h->top = w->top;
    h->limit = w->limit;
}

bool pyds_window(const struct pyds_hist *h, uint64_t *lo, uint64_t *hi)
{
    if (!h->chunk)
        return false;
    uint64_t top = max_u64(h->top, max_u64(h->hw, h->hw_prev));
    uint64_t end = top + PYDS_SLACK < h->limit ? top + PYDS_SLACK : h->limit;
    uint64_t start = h->chunk + PYDS_DATA;
    if (end - start > PYDS_WINDOW_MAX)
        start = (end - PYDS_WINDOW_MAX) & ~7ull;
    if (end <= start)
        return false;
    *lo = start;
    *hi = end;
    return true;
}

bool pyds_gap(const struct pyds_words *w, uint64_t addr, uint32_t fsize, uint64_t have_lo, uint64_t have_hi,
              uint64_t *lo, uint64_t *hi)
{
    if (!pyds_valid(w) || !fsize || fsize > PYDS_WINDOW_MAX || addr < w->chunk + PYDS_DATA ||
        addr >= w->limit || w->limit - addr < fsize)
        return false;
    uint64_t end = (addr + fsize + 7) & ~7ull;
    if (end > w->limit)
        end = w->limit;
    uint64_t start = max_u64(w->chunk + PYDS_DATA, end > PYDS_WINDOW_MAX ? end - PYDS_WINDOW_MAX : 0);
    /* What is held reaches down to the chunk's start (or below where this read would begin):
     * read only the part above it, overlapping it by one frame so that no frame straddles the
     * boundary of the two. */
    if (have_hi > have_lo && have_lo <= start && have_hi > start && have_hi < end)
        start = max_u64(start, (have_hi - fsize) & ~7ull);
    *lo = start;
    *hi = end;
    return end > start;
}
