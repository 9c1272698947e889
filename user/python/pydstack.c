/* pydstack — data-stack windows for the frame reader (see pydstack.h). */
#include "python/pydstack.h"

#include <stddef.h>

/* No user-space address reaches this: sums of such addresses and small sizes never wrap. */
#define ADDR_END (1ull << 56)

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

bool pydstack_valid(const struct pydstack_words *w)
{
    return w->chunk && w->limit < ADDR_END && !(w->chunk & 7) && !(w->top & 7) &&
           w->chunk + PYDSTACK_DATA <= w->top && w->top <= w->limit &&
           w->limit - w->chunk <= PYDSTACK_CHUNK_MAX;
}

void pydstack_note(struct pydstack_hist *h, const struct pydstack_words *w)
{
    if (!w || !pydstack_valid(w)) {
        *h = (struct pydstack_hist){0};
        return;
    }
    if (w->chunk != h->chunk) {
        h->hw = h->hw_prev = w->top;
        h->count = 0;
    } else {
        h->hw = max_u64(h->hw, w->top);
        /* A high-water mark that never came down would keep reading the deepest stack ever seen;
         * this one forgets tops older than two epochs. */
        if (++h->count >= PYDSTACK_EPOCH) {
            h->hw_prev = h->hw;
            h->hw = w->top;
            h->count = 0;
        }
    }
    h->chunk = w->chunk;
    h->top = w->top;
    h->limit = w->limit;
}

bool pydstack_window(const struct pydstack_hist *h, uint64_t *lo, uint64_t *hi)
{
    if (!h->chunk)
        return false;
    uint64_t top = max_u64(h->top, max_u64(h->hw, h->hw_prev));
    uint64_t end = top + PYDSTACK_SLACK < h->limit ? top + PYDSTACK_SLACK : h->limit;
    uint64_t start = h->chunk + PYDSTACK_DATA;
    if (end - start > PYDSTACK_WINDOW_MAX)
        start = (end - PYDSTACK_WINDOW_MAX) & ~7ull;
    if (end <= start)
        return false;
    *lo = start;
    *hi = end;
    return true;
}

bool pydstack_gap(const struct pydstack_words *w, uint64_t addr, uint32_t fsize, uint64_t have_lo,
                  uint64_t have_hi, uint64_t *lo, uint64_t *hi)
{
    if (!pydstack_valid(w) || !fsize || fsize > PYDSTACK_WINDOW_MAX || addr < w->chunk + PYDSTACK_DATA ||
        addr >= w->limit || w->limit - addr < fsize)
        return false;
    uint64_t end = (addr + fsize + 7) & ~7ull;
    if (end > w->limit)
        end = w->limit;
    uint64_t start =
        max_u64(w->chunk + PYDSTACK_DATA, end > PYDSTACK_WINDOW_MAX ? end - PYDSTACK_WINDOW_MAX : 0);
    /* What is held reaches down to the chunk's start (or below where this read would begin):
     * read only the part above it, overlapping it by one frame so that no frame straddles the
     * boundary of the two. */
    if (have_hi > have_lo && have_lo <= start && have_hi > start && have_hi < end)
        start = max_u64(start, (have_hi - fsize) & ~7ull);
    *lo = start;
    *hi = end;
    return end > start;
}
