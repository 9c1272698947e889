/*
 * view — what every writer walks: the profile with hidden frames left out (thread frames unless
 * show_threads), its children in label order, and the time one sample stands for.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/view.h"

/* -- The view without hidden frames ------------------------------------------------------------- */

int view_build(const struct profile *src, struct profile *dst)
{
    int rc = profile_init(dst);
    if (rc)
        return rc;
    dst->show_threads = src->show_threads;
    int64_t *map = malloc((src->nframes + 1) * sizeof(*map));
    uint32_t *path = malloc(VIEW_MAX_DEPTH * sizeof(*path));
    uint32_t *frames = malloc(VIEW_MAX_DEPTH * sizeof(*frames));
    if (!map || !path || !frames) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < src->nframes; i++)
        map[i] = -1;
    for (uint32_t n = 1; n < src->nnodes; n++) {
        if (!src->nodes[n].self)
            continue;
        size_t depth = profile_stack(src, n, path, VIEW_MAX_DEPTH), k = 0;
        for (size_t i = 0; i < depth; i++) {
            uint32_t fi = src->nodes[path[i]].frame;
            if (!profile_frame_shown(src, fi))
                continue;
            if (map[fi] < 0) {
                const struct frame *f = &src->frames[fi];
                map[fi] = profile_frame(dst, f->kind, f->name, f->file, f->line);
                if (map[fi] < 0) {
                    rc = (int)map[fi];
                    goto out;
                }
            }
            frames[k++] = (uint32_t)map[fi];
        }
        if (k == 0) {
            int64_t u = profile_frame(dst, FRAME_OTHER, "[unknown]", NULL, 0);
            if (u < 0) {
                rc = (int)u;
                goto out;
            }
            frames[k++] = (uint32_t)u;
        }
        int64_t a = profile_add(dst, frames, k, src->nodes[n].self);
        if (a < 0) {
            rc = (int)a;
            goto out;
        }
    }
    dst->meta.duration_s = src->meta.duration_s;
    dst->meta.frequency = src->meta.frequency;
    dst->meta.period_ns = src->meta.period_ns;
    dst->meta.weight = src->meta.weight;
    rc = profile_set_command(dst, src->meta.command);
    profile_finish(dst);
out:
    free(map);
    free(path);
    free(frames);
    if (rc)
        profile_free(dst);
    return rc;
}

/* Full labels compared, however long: a cut label would order frames by index, which differs
 * between a profile and the same profile read back. */
static int cmp_label(const void *a, const void *b, void *arg)
{
    const struct profile *p = arg;
    uint32_t fa = p->nodes[*(const uint32_t *)a].frame, fb = p->nodes[*(const uint32_t *)b].frame;
    char la[256], lb[256];
    int na = profile_frame_label(p, fa, la, sizeof(la));
    int nb = profile_frame_label(p, fb, lb, sizeof(lb));
    int c;
    if (na < (int)sizeof(la) && nb < (int)sizeof(lb)) {
        c = strcmp(la, lb);
    } else {
        char *ha = malloc((size_t)na + 1), *hb = malloc((size_t)nb + 1);
        if (ha && hb) {
            profile_frame_label(p, fa, ha, (size_t)na + 1);
            profile_frame_label(p, fb, hb, (size_t)nb + 1);
            c = strcmp(ha, hb);
        } else {
            c = strcmp(la, lb);
        }
        free(ha);
        free(hb);
    }
    if (c)
        return c;
    /* Equal labels (frames of different kinds): by kind, then index, for a stable order. */
    if (p->frames[fa].kind != p->frames[fb].kind)
        return p->frames[fa].kind < p->frames[fb].kind ? -1 : 1;
    return fa < fb ? -1 : fa > fb;
}

int64_t view_sorted_children(const struct profile *p, uint32_t node, uint32_t **out)
{
    size_t n = 0;
    for (uint32_t c = profile_first_child(p, node); c; c = profile_next_sibling(p, c))
        n++;
    uint32_t *v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    n = 0;
    for (uint32_t c = profile_first_child(p, node); c; c = profile_next_sibling(p, c))
        v[n++] = c;
    qsort_r(v, n, sizeof(*v), cmp_label, (void *)p);
    *out = v;
    return (int64_t)n;
}

uint64_t view_period_ns(const struct profile *p)
{
    if (p->meta.period_ns)
        return p->meta.period_ns;
    if (p->meta.frequency)
        return 1000000000ULL / p->meta.frequency;
    return 10000000ULL;
}
