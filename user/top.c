/*
 * top — `pyebpf-sample top`: the profile being collected, redrawn on the terminal every -r
 * seconds as a table of functions, like py-spy top.
 *
 *   pyebpf-sample top · PID 4242 (python3 app.py) · 99 Hz                        (reverse video)
 *   samples 4851 · 98 samples/s · lost 0 · threads 3
 *   GIL: held in 97 % of samples since start (96 % last interval) · by thread 4242 (MainThread) 95 %, ...
 *   since start · sort: own · python only · all threads
 *     own%  total%    own  total  function
 *    60.20   60.20     59     59  hot (/app/app.py)
 *    ...
 *   o/t sort own/total  i interval/cumulative  n native  f thread  p pause  q quit
 *
 * The table is summary_table() over the live profile (the collector's, fed by the same sampler
 * and merge as every run); "last interval" is the difference to the table of the previous
 * refresh, matched by label. main.c calls top_poll() after each drain.
 *
 * The GIL line: of the samples that said whether their thread held the GIL (top_status), the
 * share taken while it did, since start and over the last interval, and the threads that held
 * it in most samples over the span the table shows (with a thread filter: that thread's share
 * of its own samples). The interval is again the difference to the previous refresh, by tid.
 *
 * A hand-written ANSI renderer rather than ncurses: one screen of text redrawn once a second
 * needs only the alternate screen, cursor home, erase-to-end and reverse video, every terminal
 * emulator in use speaks those, and the terminal state to restore is one termios struct and two
 * escape sequences, restored in one place (top_close), also after Ctrl-C (SIGINT ends the run
 * like any other signal: ISIG stays on). No new build or run-time dependency.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "output/summary.h"
#include "top.h"

#define TOP_MAX_THREADS 64

struct top {
    int fd; /* the terminal */
    struct termios saved;
    bool raw;
    double refresh_s;
    uint64_t next_ns;
    bool sort_total, interval, native, paused, quit;
    bool rebase; /* the query changed: the previous table is no interval baseline */
    int thread;  /* -1: all, else index into threads[] */
    char *threads[TOP_MAX_THREADS];
    int nthreads;
    struct summary_row *prev; /* the cumulative table of the previous refresh, by label */
    size_t nprev;
    uint64_t prev_all;
    struct collect_gil_thread *gprev; /* the GIL counts of the previous refresh, per thread */
    size_t ngprev;
    uint64_t gprev_checked, gprev_held;
    char title[512];
};

static uint64_t s_to_ns(double s)
{
    return (uint64_t)(s * 1e9);
}

int top_open(struct top **out, const char *title, double refresh_s)
{
    struct top *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->fd = STDIN_FILENO;
    t->refresh_s = refresh_s > 0 ? refresh_s : 1.0;
    t->thread = -1;
    snprintf(t->title, sizeof(t->title), "%s", title);
    if (isatty(t->fd) && tcgetattr(t->fd, &t->saved) == 0) {
        struct termios raw = t->saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO); /* keys one by one, unechoed; ISIG stays */
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        t->raw = tcsetattr(t->fd, TCSANOW, &raw) == 0;
    }
    fputs("\033[?1049h\033[?25l", stdout); /* alternate screen, cursor hidden */
    fflush(stdout);
    *out = t;
    return 0;
}

void top_close(struct top *t)
{
    if (!t)
        return;
    fputs("\033[?25h\033[?1049l", stdout); /* cursor back, main screen back */
    fflush(stdout);
    if (t->raw)
        tcsetattr(t->fd, TCSANOW, &t->saved);
    summary_table_free(t->prev, t->nprev);
    free(t->gprev);
    for (int i = 0; i < t->nthreads; i++)
        free(t->threads[i]);
    free(t);
}

static int by_label(const void *a, const void *b)
{
    return strcmp(((const struct summary_row *)a)->label, ((const struct summary_row *)b)->label);
}

/* The threads seen so far (root frames of the profile), for the thread filter: one entry per
 * thread id, under its frame's current name (a thread is named by its comm until its Python name
 * is read, and the collector then renames its frame), so that f never stops at a name that no
 * frame carries any more. */
static void learn_threads(struct top *t, const struct profile *p)
{
    for (uint32_t i = 0; i < p->nframes; i++) {
        const char *name = p->frames[i].name;
        unsigned tid, known_tid;
        int k;

        if (p->frames[i].kind != FRAME_THREAD || sscanf(name, "thread %u", &tid) != 1)
            continue;
        for (k = 0; k < t->nthreads; k++)
            if (sscanf(t->threads[k], "thread %u", &known_tid) == 1 && known_tid == tid)
                break;
        if (k < t->nthreads && !strcmp(t->threads[k], name))
            continue;
        if (k == t->nthreads && k == TOP_MAX_THREADS)
            continue;
        char *copy = strdup(name);
        if (!copy)
            continue;
        if (k < t->nthreads)
            free(t->threads[k]);
        else
            t->nthreads++;
        t->threads[k] = copy;
    }
}

static void keys(struct top *t)
{
    char buf[16];
    struct pollfd pfd = {.fd = t->fd, .events = POLLIN};
    while (poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN)) {
        ssize_t n = read(t->fd, buf, sizeof(buf));
        if (n <= 0)
            return;
        for (ssize_t i = 0; i < n; i++) {
            switch (buf[i]) {
            case 'q':
            case 'Q':
                t->quit = true;
                break;
            case 'o':
                t->sort_total = false;
                break;
            case 't':
                t->sort_total = true;
                break;
            case 'i':
                t->interval = !t->interval;
                break;
            case 'n':
                t->native = !t->native;
                t->rebase = true;
                break;
            case 'f':
                t->thread = t->thread + 1 < t->nthreads ? t->thread + 1 : -1;
                t->rebase = true;
                break;
            case 'p':
            case ' ':
                t->paused = !t->paused;
                break;
            default:
                continue;
            }
            t->next_ns = 0; /* show the change at once */
        }
    }
}

static int by_total(const void *a, const void *b)
{
    const struct summary_row *x = a, *y = b;
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    return x->self < y->self ? 1 : x->self > y->self ? -1 : 0;
}

static int by_self(const void *a, const void *b)
{
    const struct summary_row *x = a, *y = b;
    if (x->self != y->self)
        return x->self < y->self ? 1 : -1;
    return x->total < y->total ? 1 : x->total > y->total ? -1 : 0;
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* "97 %", or "-- %" when there was no sample to count. */
static void share(char *out, size_t n, uint64_t part, uint64_t whole)
{
    if (whole)
        snprintf(out, n, "%.0f %%", pct(part, whole));
    else
        snprintf(out, n, "-- %%");
}

/* A thread's GIL counts at the previous refresh (zero when it had none then). */
static struct collect_gil_thread gil_before(const struct top *t, uint32_t tid)
{
    for (size_t i = 0; i < t->ngprev; i++)
        if (t->gprev[i].tid == tid)
            return t->gprev[i];
    return (struct collect_gil_thread){.tid = tid};
}

/* The header's GIL line (see the top of the file). */
static void gil_line(const struct top *t, const struct profile *p, const struct top_status *st, char *buf,
                     size_t len)
{
    uint64_t ic = st->gil_checked - t->gprev_checked, ih = st->gil_held - t->gprev_held;
    const char *since = t->interval ? "last interval" : "since start";
    const char *other = t->interval ? "since start" : "last interval";
    char all[16], last[16];
    int at;

    switch (st->gil) {
    case TOP_GIL_UNKNOWN:
        snprintf(buf, len, "GIL: unknown");
        return;
    case TOP_GIL_NONE:
        snprintf(buf, len, "GIL: none (free-threaded build)");
        return;
    case TOP_GIL_ONLY:
        snprintf(buf, len, "GIL: only samples of its holder are kept (--mode gil)");
        return;
    case TOP_GIL_KNOWN:
        break;
    }
    /* The filter is by frame name, which a thread's Python name can change after the filter
     * learnt it: matched by the tid the name starts with. */
    unsigned tid;
    if (t->thread >= 0 && sscanf(t->threads[t->thread], "thread %u", &tid) == 1) {
        for (size_t i = 0; i < st->ngil_threads; i++) {
            const struct collect_gil_thread *g = &st->gil_threads[i], old = gil_before(t, g->tid);

            if (g->tid != tid)
                continue;
            share(all, sizeof(all), g->held, g->checked);
            share(last, sizeof(last), g->held - old.held, g->checked - old.checked);
            snprintf(buf, len, "GIL: held in %s of this thread's samples %s (%s %s)",
                     t->interval ? last : all, since, t->interval ? all : last, other);
            return;
        }
        snprintf(buf, len, "GIL: no sample of this thread checked yet");
        return;
    }
    if (!st->gil_checked) {
        snprintf(buf, len, "GIL: no sample checked yet");
        return;
    }
    share(all, sizeof(all), st->gil_held, st->gil_checked);
    share(last, sizeof(last), ih, ic);
    at = snprintf(buf, len, "GIL: held %s %s of %s %s (%s %s)", st->gil_ticks ? "at" : "in",
                  t->interval ? last : all, st->gil_ticks ? "ticks" : "samples", since,
                  t->interval ? all : last, other);
    /* The two threads that held it in most samples of the span. */
    uint64_t whole = t->interval ? ic : st->gil_checked;
    size_t best[2] = {SIZE_MAX, SIZE_MAX};
    uint64_t most[2] = {0, 0};
    for (size_t i = 0; i < st->ngil_threads; i++) {
        uint64_t h = st->gil_threads[i].held - (t->interval ? gil_before(t, st->gil_threads[i].tid).held : 0);

        if (h > most[0]) {
            best[1] = best[0], most[1] = most[0];
            best[0] = i, most[0] = h;
        } else if (h > most[1]) {
            best[1] = i, most[1] = h;
        }
    }
    for (int k = 0; k < 2 && best[k] != SIZE_MAX && at > 0 && (size_t)at < len; k++) {
        uint32_t f = st->gil_threads[best[k]].frame;

        at += snprintf(buf + at, len - (size_t)at, "%s%s %.0f %%", k ? ", " : " · by ",
                       f < p->nframes ? p->frames[f].name : "?", pct(most[k], whole));
    }
}

/* Bytes of the longest prefix of UTF-8 `s` that takes at most `cols` columns (one per
 * character: the line's "·" is two bytes), never cutting a character. */
static int fit(const char *s, int cols)
{
    int i = 0;

    for (int c = 0; s[i]; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80 && c++ == cols)
            break;
    return i;
}

/* This refresh's GIL counts become the next one's baseline. */
static void gil_keep(struct top *t, const struct top_status *st)
{
    struct collect_gil_thread *n = realloc(t->gprev, (st->ngil_threads ? st->ngil_threads : 1) * sizeof(*n));

    t->gprev_checked = st->gil_checked;
    t->gprev_held = st->gil_held;
    if (!n) {
        t->ngprev = 0; /* no baseline per thread: its interval is its whole run */
        return;
    }
    if (st->ngil_threads) /* gil_threads is NULL without a GIL */
        memcpy(n, st->gil_threads, st->ngil_threads * sizeof(*n));
    t->gprev = n;
    t->ngprev = st->ngil_threads;
}

static void draw(struct top *t, const struct summary_row *rows, size_t n, uint64_t samples,
                 const struct profile *p, const struct top_status *st)
{
    char gil[512];

    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
    int width = ws.ws_col > 20 ? ws.ws_col : 80, height = ws.ws_row > 6 ? ws.ws_row : 24;
    FILE *f = stdout;
    fputs("\033[H", f);
    fprintf(f, "\033[7m%-*.*s\033[0m\033[K\r\n", width, width, t->title);
    fprintf(f, "samples %llu · %.0f samples/s · lost %llu · threads %llu\033[K\r\n",
            (unsigned long long)st->samples, st->rate, (unsigned long long)st->lost,
            (unsigned long long)st->threads);
    gil_line(t, p, st, gil, sizeof(gil));
    fprintf(f, "%.*s\033[K\r\n", fit(gil, width), gil);
    fprintf(f, "%s · sort: %s · %s · %s%s\033[K\r\n", t->interval ? "last interval" : "since start",
            t->sort_total ? "total" : "own", t->native ? "native frames shown" : "python only",
            t->thread >= 0 ? t->threads[t->thread] : "all threads", t->paused ? " · PAUSED" : "");
    fprintf(f, "\033[1m%7s %7s %8s %8s  %s\033[0m\033[K\r\n", "own%", "total%", "own", "total", "function");
    int lines = height - 7;
    for (size_t i = 0; i < n && (int)i < lines; i++) {
        double own = samples ? 100.0 * (double)rows[i].self / (double)samples : 0;
        double tot = samples ? 100.0 * (double)rows[i].total / (double)samples : 0;
        int room = width - 36 > 10 ? width - 36 : 10;
        fprintf(f, "%7.2f %7.2f %8llu %8llu  %.*s\033[K\r\n", own, tot, (unsigned long long)rows[i].self,
                (unsigned long long)rows[i].total, room, rows[i].label);
    }
    fputs("\033[J", f);
    fprintf(f, "\033[%d;1H\033[7m%-*.*s\033[0m", height, width, width,
            "o/t sort own/total  i interval/cumulative  n native  f thread  p pause  q quit");
    fflush(f);
}

/* One refresh: the cumulative table, the interval table against the previous one, drawn. */
static int refresh(struct top *t, const struct profile *p, const struct top_status *st)
{
    struct summary_query q = {.by = SUMMARY_BY_FUNCTION,
                              .python_only = !t->native,
                              .thread = t->thread >= 0 ? t->threads[t->thread] : NULL};
    struct summary_row *cum;
    size_t n;
    uint64_t all;
    int rc = summary_table(p, &q, &cum, &n, &all);
    if (rc)
        return rc;
    if (t->rebase) {
        summary_table_free(t->prev, t->nprev);
        t->prev = NULL;
        t->nprev = 0;
        t->prev_all = 0;
        t->rebase = false;
    }
    if (n > 1) /* cum is NULL when the filtered thread has no sample (yet) */
        qsort(cum, n, sizeof(*cum), by_label);
    struct summary_row *shown = malloc((n ? n : 1) * sizeof(*shown));
    if (!shown) {
        summary_table_free(cum, n);
        return -ENOMEM;
    }
    uint64_t samples = all;
    for (size_t i = 0; i < n; i++) {
        shown[i] = cum[i];
        if (!t->interval)
            continue;
        struct summary_row *old =
            t->prev ? bsearch(&cum[i], t->prev, t->nprev, sizeof(*cum), by_label) : NULL;
        if (old) {
            shown[i].self -= old->self <= shown[i].self ? old->self : shown[i].self;
            shown[i].total -= old->total <= shown[i].total ? old->total : shown[i].total;
        }
    }
    if (t->interval)
        samples = all >= t->prev_all ? all - t->prev_all : 0;
    size_t keep = 0;
    for (size_t i = 0; i < n; i++)
        if (shown[i].self || shown[i].total)
            shown[keep++] = shown[i];
    qsort(shown, keep, sizeof(*shown), t->sort_total ? by_total : by_self);
    draw(t, shown, keep, samples, p, st);
    gil_keep(t, st);
    free(shown);
    summary_table_free(t->prev, t->nprev);
    t->prev = cum;
    t->nprev = n;
    t->prev_all = all;
    return 0;
}

bool top_poll(struct top *t, const struct profile *p, uint64_t now_ns, const struct top_status *st)
{
    keys(t);
    if (t->quit)
        return true;
    if (now_ns < t->next_ns || (t->paused && t->next_ns))
        return false;
    if (!t->paused || !t->prev) {
        learn_threads(t, p);
        refresh(t, p, st);
    }
    t->next_ns = now_ns + s_to_ns(t->refresh_s);
    return false;
}
