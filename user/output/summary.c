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

int summary_print_by(const struct profile *p, FILE *f, unsigned topn, enum summary_group by)
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
    char *label = malloc(4096);
    if (!group || !path || !label) {
        rc = -ENOMEM;
        goto out;
    }
    rc = group_frames(&v, by, group);
    if (rc)
        goto out;
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
        rows[group[v.nodes[n].frame]].self += self;
        size_t d = profile_stack(&v, n, path, VIEW_MAX_DEPTH);
        for (size_t i = 0; i < d; i++) {
            uint32_t g = group[v.nodes[path[i]].frame];
            if (stamp[g] == n) /* recursion: once per stack */
                continue;
            stamp[g] = n;
            rows[g].total += self;
        }
    }
    qsort(rows, v.nframes, sizeof(*rows), by_self);
    uint64_t all = v.nodes[0].total;
    fprintf(f, "%llu samples, top %u by self time:\n", (unsigned long long)all, topn);
    fprintf(f, "  %6s  %6s  %s\n", "self%", "total%", "function");
    for (uint32_t i = 0; i < v.nframes && i < topn && all; i++) {
        if (!rows[i].self)
            break;
        profile_frame_label(&v, rows[i].frame, label, 4096);
        fprintf(f, "  %6.2f  %6.2f  %s\n", 100.0 * (double)rows[i].self / (double)all,
                100.0 * (double)rows[i].total / (double)all, label);
    }
out:
    free(rows);
    free(stamp);
    free(group);
    free(path);
    free(label);
    profile_free(&v);
    return rc;
}

int summary_print(const struct profile *p, FILE *f, unsigned topn)
{
    return summary_print_by(p, f, topn, SUMMARY_BY_FUNCTION);
}
