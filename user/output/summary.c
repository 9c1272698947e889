/*
 * summary — the short table printed to stderr when a profile went to a file:
 *
 *   12000 samples, top 10 by self time:
 *     self%  total%  function
 *     41.20   41.20  work (/app/x.py)
 *     ...
 *
 * One row per function: the samples of all lines of a Python function (same name and file) add
 * up, as in py-spy's and perf's tables; SUMMARY_BY_LINE keeps one row per line instead.
 * self: samples whose leaf is the function; total: samples with the function anywhere on the
 * stack, counted once per stack even when it recurses (also from another of its lines).
 */
#include "output/summary.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/view.h"

struct row {
    uint32_t frame; /* the frame that names the row */
    uint64_t self, total;
};

static int by_self(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->self != y->self)
        return x->self < y->self ? 1 : -1;
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    return x->frame < y->frame ? -1 : x->frame > y->frame;
}

/* The row of each frame of `v` into group[0..nframes): by function, a frame with a line goes to
 * the frame of the same kind, name and file without one (interned into `v`, so its label reads
 * "name (file)" and frames compare by index). Returns 0 or -ENOMEM. */
static int group_frames(struct profile *v, enum summary_group by, uint32_t *group)
{
    uint32_t n = v->nframes;
    for (uint32_t i = 0; i < n; i++) {
        struct frame f = v->frames[i]; /* a copy: interning may move the array */
        group[i] = i;
        if (by == SUMMARY_BY_LINE || !f.line)
            continue;
        int64_t g = profile_frame(v, f.kind, f.name, f.file, 0);
        if (g < 0)
            return (int)g;
        group[i] = (uint32_t)g;
    }
    return 0;
}

/* Whether node `n`'s stack lies under the thread frame `thread` (UINT32_MAX: any thread). */
static bool in_thread(const struct profile *v, const uint32_t *path, size_t d, uint32_t thread)
{
    return thread == UINT32_MAX || (d > 0 && v->nodes[path[0]].frame == thread);
}

int summary_table(const struct profile *p, const struct summary_query *q, struct summary_row **out,
                  size_t *nout, uint64_t *samples)
{
    struct profile v;
    int rc = view_build(p, &v);
    if (rc)
        return rc;
    uint32_t nframes = v.nframes; /* those on stacks; grouping may add more */
    struct row *rows = NULL;
    uint32_t *stamp = NULL;
    uint32_t *group = malloc((nframes + 1) * sizeof(*group));
    uint32_t *path = malloc(VIEW_MAX_DEPTH * sizeof(*path));
    uint32_t thread = UINT32_MAX;
    uint64_t all = 0;
    size_t nrows = 0;
    struct summary_row *res = NULL;
    *out = NULL;
    *nout = 0;
    if (!group || !path) {
        rc = -ENOMEM;
        goto out;
    }
    rc = group_frames(&v, q->by, group);
    if (rc)
        goto out;
    if (q->thread) {
        /* The view interns the source's thread frames under the same name. */
        for (uint32_t i = 0; i < v.nframes; i++)
            if (v.frames[i].kind == FRAME_THREAD && !strcmp(v.frames[i].name, q->thread))
                thread = i;
        if (thread == UINT32_MAX)
            goto out; /* no sample of that thread (yet) */
    }
    rows = calloc(v.nframes + 1, sizeof(*rows));
    stamp = calloc(v.nframes + 1, sizeof(*stamp));
    if (!rows || !stamp) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < v.nframes; i++)
        rows[i].frame = i;
    for (uint32_t n = 1; n < v.nnodes; n++) {
        uint64_t self = v.nodes[n].self;
        if (!self)
            continue;
        size_t d = profile_stack(&v, n, path, VIEW_MAX_DEPTH);
        if (!in_thread(&v, path, d, thread))
            continue;
        all += self;
        /* Without native frames the innermost Python frame owns the sample (a stack with no
         * Python frame keeps its native leaf). */
        size_t leaf = d - 1;
        bool python = false;
        for (size_t i = 0; i < d && q->python_only; i++)
            python |= v.frames[v.nodes[path[i]].frame].kind == FRAME_PYTHON;
        if (python)
            while (leaf > 0 && v.frames[v.nodes[path[leaf]].frame].kind != FRAME_PYTHON)
                leaf--;
        rows[group[v.nodes[path[leaf]].frame]].self += self;
        for (size_t i = 0; i <= leaf; i++) {
            const struct frame *fr = &v.frames[v.nodes[path[i]].frame];
            uint32_t g = group[v.nodes[path[i]].frame];
            if (fr->kind == FRAME_THREAD || (python && fr->kind != FRAME_PYTHON))
                continue;
            if (stamp[g] == n) /* recursion: once per stack */
                continue;
            stamp[g] = n;
            rows[g].total += self;
        }
    }
    qsort(rows, v.nframes, sizeof(*rows), by_self);
    while (nrows < v.nframes && (rows[nrows].self || rows[nrows].total))
        nrows++;
    res = calloc(nrows ? nrows : 1, sizeof(*res));
    if (!res) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < nrows; i++) {
        int len = profile_frame_label(&v, rows[i].frame, NULL, 0);
        res[i].label = malloc((size_t)len + 1);
        if (!res[i].label) {
            summary_table_free(res, i);
            res = NULL;
            rc = -ENOMEM;
            goto out;
        }
        profile_frame_label(&v, rows[i].frame, res[i].label, (size_t)len + 1);
        res[i].kind = v.frames[rows[i].frame].kind;
        res[i].self = rows[i].self;
        res[i].total = rows[i].total;
    }
    *out = res;
    *nout = nrows;
out:
    if (samples)
        *samples = all;
    free(rows);
    free(stamp);
    free(group);
    free(path);
    profile_free(&v);
    return rc;
}

void summary_table_free(struct summary_row *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++)
        free(rows[i].label);
    free(rows);
}

int summary_print_by(const struct profile *p, FILE *f, unsigned topn, enum summary_group by)
{
    struct summary_row *rows;
    size_t n;
    uint64_t all;
    int rc = summary_table(p, &(struct summary_query){.by = by}, &rows, &n, &all);
    if (rc)
        return rc;
    fprintf(f, "%llu samples, top %u by self time:\n", (unsigned long long)all, topn);
    fprintf(f, "  %6s  %6s  %s\n", "self%", "total%", "function");
    for (size_t i = 0; i < n && i < topn && all; i++) {
        if (!rows[i].self)
            break;
        fprintf(f, "  %6.2f  %6.2f  %s\n", 100.0 * (double)rows[i].self / (double)all,
                100.0 * (double)rows[i].total / (double)all, rows[i].label);
    }
    summary_table_free(rows, n);
    return 0;
}

int summary_print(const struct profile *p, FILE *f, unsigned topn)
{
    return summary_print_by(p, f, topn, SUMMARY_BY_FUNCTION);
}
