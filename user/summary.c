/*
 * summary — the short table printed to stderr when a profile went to a file:
 *
 *   12000 samples, top 10 by self time:
 *     self%  total%  function
 *     41.20   41.20  work (/app/x.py:3)
 *     ...
 *
 * self: samples whose leaf is the function; total: samples with the function anywhere on the
 * stack, counted once per stack even when it recurses.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

struct row {
    uint32_t frame;
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

int summary_print(const struct profile *p, FILE *f, unsigned topn)
{
    struct profile v;
    int rc = output_view(p, &v);
    if (rc)
        return rc;
    struct row *rows = calloc(v.nframes + 1, sizeof(*rows));
    uint32_t *stamp = calloc(v.nframes + 1, sizeof(*stamp));
    uint32_t *path = malloc(FOLDED_MAX_DEPTH * sizeof(*path));
    char *label = malloc(4096);
    if (!rows || !stamp || !path || !label) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < v.nframes; i++)
        rows[i].frame = i;
    for (uint32_t n = 1; n < v.nnodes; n++) {
        uint64_t self = v.nodes[n].self;
        if (!self)
            continue;
        rows[v.nodes[n].frame].self += self;
        size_t d = profile_stack(&v, n, path, FOLDED_MAX_DEPTH);
        for (size_t i = 0; i < d; i++) {
            uint32_t fi = v.nodes[path[i]].frame;
            if (stamp[fi] == n) /* recursion: once per stack */
                continue;
            stamp[fi] = n;
            rows[fi].total += self;
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
    free(path);
    free(label);
    profile_free(&v);
    return rc;
}
