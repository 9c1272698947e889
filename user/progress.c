/*
 * progress — the live status line on a terminal (see progress.h).
 */
#include "progress.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "capture/sampler.h"
#include "collect/collect.h"

#define NS_PER_S             1000000000ull
#define PROGRESS_INTERVAL_NS (NS_PER_S / PROGRESS_HZ)

void progress_start(struct progress *pg, FILE *f, bool quiet, uint64_t now_ns)
{
    const char *term = getenv("TERM");

    memset(pg, 0, sizeof(*pg));
    pg->f = f;
    pg->t0 = pg->last = now_ns;
    /* A terminal that cannot erase a line would collect one copy per redraw. */
    pg->on = !quiet && isatty(fileno(f)) && !(term && !strcmp(term, "dumb"));
}

static unsigned term_width(FILE *f)
{
    struct winsize ws;

    if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

size_t progress_format(char *buf, size_t size, unsigned width, double elapsed_s, double rate,
                       const struct progress_counts *c)
{
    int n;

    if (!size)
        return 0;
    n = snprintf(buf, size, "pyebpf-sample: %.1fs  %llu samples  %.0f/s  lost %llu  errors %llu", elapsed_s,
                 (unsigned long long)c->samples, rate, (unsigned long long)c->lost,
                 (unsigned long long)c->errors);
    if (n < 0) {
        buf[0] = '\0';
        return 0;
    }
    if ((size_t)n >= size)
        n = (int)size - 1;
    /* The last column stays free: writing there makes some terminals wrap at once. */
    if (width > 1 && (unsigned)n > width - 1)
        n = (int)width - 1;
    buf[n] = '\0';
    return (size_t)n;
}

int progress_update(struct progress *pg, uint64_t now_ns, const struct progress_counts *c)
{
    char line[256];
    uint64_t dt;

    if (!pg->on || (pg->redraws && now_ns - pg->last < PROGRESS_INTERVAL_NS))
        return 0;
    /* The first line waits one interval too, so a short run prints nothing at all. */
    if (!pg->redraws && now_ns - pg->t0 < PROGRESS_INTERVAL_NS)
        return 0;
    /* The oldest point kept: the start, or the redraw one second ago. */
    uint64_t t_old = pg->hist_len < PROGRESS_HZ ? pg->t0 : pg->hist_t[0];
    uint64_t n_old = pg->hist_len < PROGRESS_HZ ? 0 : pg->hist_n[0];
    dt = now_ns - t_old;
    if (dt && c->samples >= n_old)
        pg->rate = (double)(c->samples - n_old) * NS_PER_S / (double)dt;
    if (pg->hist_len == PROGRESS_HZ) {
        memmove(pg->hist_t, pg->hist_t + 1, (PROGRESS_HZ - 1) * sizeof(pg->hist_t[0]));
        memmove(pg->hist_n, pg->hist_n + 1, (PROGRESS_HZ - 1) * sizeof(pg->hist_n[0]));
        pg->hist_len--;
    }
    pg->hist_t[pg->hist_len] = now_ns;
    pg->hist_n[pg->hist_len] = c->samples;
    pg->hist_len++;
    pg->last = now_ns;
    progress_format(line, sizeof(line), term_width(pg->f), (double)(now_ns - pg->t0) / NS_PER_S, pg->rate, c);
    fprintf(pg->f, "\r%s\033[K", line);
    fflush(pg->f);
    pg->shown = true;
    pg->redraws++;
    return 1;
}

int progress_poll(struct progress *pg, uint64_t now_ns, const struct collector *col, struct sampler *s,
                  uint64_t extra_errors)
{
    struct progress_counts c = {0};
    struct collect_stats cs;
    struct sampler_stats sc;

    /* Cheap test first: the counters cost a map lookup per key. */
    if (!pg->on || (now_ns - (pg->redraws ? pg->last : pg->t0)) < PROGRESS_INTERVAL_NS)
        return 0;
    collect_get_stats(col, &cs);
    c.samples = cs.samples;
    c.errors = extra_errors + cs.proc_errors + cs.unwind_errors;
    if (s && !sampler_get_stats(s, &sc))
        c.lost = sc.lost;
    return progress_update(pg, now_ns, &c);
}

void progress_clear(struct progress *pg)
{
    if (!pg->shown)
        return;
    fputs("\r\033[K", pg->f);
    fflush(pg->f);
    pg->shown = false;
}
