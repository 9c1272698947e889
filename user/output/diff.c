/*
 * diff — the union of two profiles' tries, walked once for both the folded diff and the
 * differential SVG (svg.c colours each frame of AFTER by the change of its share against the same
 * frame in BEFORE).
 *
 * Children of a node come in label order in both views (view_sorted_children), so the children of
 * a matched pair are paired by one merge of two sorted lists, never by a search.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/diff.h"
#include "output/folded.h"

struct side {
    const struct profile *v;
    uint32_t *kids;
    int64_t n, i;
};

/* The frame's full label, malloc'd; NULL when out of memory. */
static char *label_dup(const struct profile *v, uint32_t node)
{
    uint32_t fr = v->nodes[node].frame;
    int n = profile_frame_label(v, fr, NULL, 0);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s)
        profile_frame_label(v, fr, s, (size_t)n + 1);
    return s;
}

/* The order view_sorted_children gives: label, then kind. */
static int cmp_pair(const struct profile *a, uint32_t na, const char *la, const struct profile *b,
                    uint32_t nb, const char *lb)
{
    int c = strcmp(la, lb);
    if (c)
        return c;
    enum frame_kind ka = a->frames[a->nodes[na].frame].kind, kb = b->frames[b->nodes[nb].frame].kind;
    return ka < kb ? -1 : ka > kb;
}

static int open_side(struct side *s, uint32_t node)
{
    s->kids = NULL;
    s->n = s->i = 0;
    if (node == DIFF_NONE)
        return 0;
    s->n = view_sorted_children(s->v, node, &s->kids);
    return s->n < 0 ? (int)s->n : 0;
}

static int walk(const struct profile *bv, const struct profile *av, uint32_t bn, uint32_t an, unsigned depth,
                diff_visit_fn fn, void *arg)
{
    if (depth > VIEW_MAX_DEPTH)
        return 0;
    struct side b = {.v = bv}, a = {.v = av};
    int rc = open_side(&b, bn);
    if (!rc)
        rc = open_side(&a, an);
    while (!rc && (b.i < b.n || a.i < a.n)) {
        uint32_t bk = b.i < b.n ? b.kids[b.i] : DIFF_NONE, ak = a.i < a.n ? a.kids[a.i] : DIFF_NONE;
        char *bl = bk != DIFF_NONE ? label_dup(bv, bk) : NULL,
             *al = ak != DIFF_NONE ? label_dup(av, ak) : NULL;
        if ((bk != DIFF_NONE && !bl) || (ak != DIFF_NONE && !al)) {
            rc = -ENOMEM;
        } else {
            int c = bk == DIFF_NONE ? 1 : ak == DIFF_NONE ? -1 : cmp_pair(bv, bk, bl, av, ak, al);
            struct diff_step s = {.before = c <= 0 ? bk : DIFF_NONE,
                                  .after = c >= 0 ? ak : DIFF_NONE,
                                  .depth = depth,
                                  .label = c <= 0 ? bl : al};
            s.before_self = s.before != DIFF_NONE ? bv->nodes[s.before].self : 0;
            s.after_self = s.after != DIFF_NONE ? av->nodes[s.after].self : 0;
            rc = fn(arg, &s);
            if (!rc)
                rc = walk(bv, av, s.before, s.after, depth + 1, fn, arg);
            b.i += c <= 0;
            a.i += c >= 0;
        }
        free(bl);
        free(al);
    }
    free(b.kids);
    free(a.kids);
    return rc;
}

int diff_walk(const struct profile *before, const struct profile *after, diff_visit_fn fn, void *arg)
{
    return walk(before, after, 0, 0, 1, fn, arg);
}

/* -- Folded diff -------------------------------------------------------------------------------- */

struct folded_ctx {
    FILE *f;
    char **path; /* labels from the root, by depth */
};

static int folded_step(void *arg, const struct diff_step *s)
{
    struct folded_ctx *c = arg;
    char *copy = malloc(strlen(s->label) + 2);
    if (!copy)
        return -ENOMEM;
    folded_fold(strcpy(copy, s->label));
    free(c->path[s->depth]);
    c->path[s->depth] = copy;
    if (!s->before_self && !s->after_self)
        return 0;
    for (unsigned i = 1; i <= s->depth; i++) {
        if (i > 1)
            fputc(';', c->f);
        folded_put_label(c->f, c->path[i], i == 1);
    }
    fprintf(c->f, " %llu %llu\n", (unsigned long long)s->before_self, (unsigned long long)s->after_self);
    return 0;
}

int diff_write_folded(const struct profile *before, const struct profile *after, FILE *f)
{
    struct profile bv, av;
    int rc = view_build(before, &bv);
    if (rc)
        return rc;
    rc = view_build(after, &av);
    if (rc) {
        profile_free(&bv);
        return rc;
    }
    struct folded_ctx c = {.f = f, .path = calloc(VIEW_MAX_DEPTH + 2, sizeof(char *))};
    rc = c.path ? diff_walk(&bv, &av, folded_step, &c) : -ENOMEM;
    if (c.path)
        for (size_t i = 0; i < VIEW_MAX_DEPTH + 2; i++)
            free(c.path[i]);
    free(c.path);
    profile_free(&av);
    profile_free(&bv);
    if (rc == 0 && ferror(f))
        rc = -EIO;
    return rc;
}
