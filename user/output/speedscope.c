/*
 * speedscope — the speedscope file format (https://www.speedscope.app/file-format-schema.json):
 *
 *   { "$schema": "...file-format-schema.json",
 *     "shared":   { "frames": [ {"name": "work", "file": "/app/x.py", "line": 3}, ... ] },
 *     "profiles": [ { "type": "sampled", "name": "thread 812 (python3)", "unit": "nanoseconds",
 *                     "startValue": 0, "endValue": 123000000,
 *                     "samples": [[0, 4, 7], ...],   frame indices, root first
 *                     "weights": [41000000, ...] }, ... ],
 *     "name": "...", "activeProfileIndex": 0, "exporter": "pyebpf 0.1.0" }
 *
 * One profile per thread (thread frames become profile names, never stack frames); stacks read
 * back from folded text without thread frames form one profile, "all threads". Weights are CPU
 * nanoseconds when the sampling rate is known, plain sample counts (unit "none") otherwise.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/escape.h"
#include "output/speedscope.h"

#ifndef PYEBPF_VERSION
#define PYEBPF_VERSION "dev"
#endif

struct ss_ctx {
    const struct profile *p;
    FILE *f;
    int64_t *index; /* frame -> shared index, -1 for thread frames */
    uint32_t *path;
    uint64_t weight; /* per sample */
    char *label;
    size_t labelsz;
    bool first_item; /* no comma before the next array item */
};

static bool named_thread(const struct profile *p, uint32_t node)
{
    const struct frame *fr = &p->frames[p->nodes[node].frame];
    return fr->kind == FRAME_THREAD && fr->name[0] != '\0';
}

static void put_frame(struct ss_ctx *c, uint32_t fi)
{
    const struct frame *fr = &c->p->frames[fi];
    FILE *f = c->f;
    fputs("{\"name\":\"", f);
    if (fr->kind == FRAME_PYTHON) {
        escape_json(f, fr->name);
    } else {
        profile_frame_label(c->p, fi, c->label, c->labelsz);
        escape_json(f, c->label);
    }
    fputc('"', f);
    if (fr->file) {
        fputs(",\"file\":\"", f);
        escape_json(f, fr->file);
        fputc('"', f);
    }
    if (fr->line)
        fprintf(f, ",\"line\":%u", fr->line);
    fputc('}', f);
}

/* Calls fn on every node with samples in the subtrees of roots[0..n). */
static void for_each_sample(const struct profile *p, const uint32_t *roots, size_t n, uint32_t *stack,
                            void (*fn)(struct ss_ctx *, uint32_t), struct ss_ctx *c)
{
    for (size_t r = 0; r < n; r++) {
        size_t sp = 0;
        stack[sp++] = roots[r];
        while (sp) {
            uint32_t node = stack[--sp];
            if (p->nodes[node].self)
                fn(c, node);
            for (uint32_t k = profile_first_child(p, node); k; k = profile_next_sibling(p, k))
                stack[sp++] = k;
        }
    }
}

static void put_sample(struct ss_ctx *c, uint32_t node)
{
    size_t d = profile_stack(c->p, node, c->path, VIEW_MAX_DEPTH);
    fputs(c->first_item ? "[" : ",[", c->f);
    c->first_item = false;
    bool first = true;
    for (size_t i = 0; i < d; i++) {
        int64_t si = c->index[c->p->nodes[c->path[i]].frame];
        if (si < 0)
            continue;
        fprintf(c->f, first ? "%lld" : ",%lld", (long long)si);
        first = false;
    }
    fputc(']', c->f);
}

static void put_weight(struct ss_ctx *c, uint32_t node)
{
    fprintf(c->f, c->first_item ? "%llu" : ",%llu", (unsigned long long)(c->p->nodes[node].self * c->weight));
    c->first_item = false;
}

static void put_profile(struct ss_ctx *c, const char *name, const uint32_t *roots, size_t n, uint32_t *stack,
                        bool ns, bool first)
{
    uint64_t end = 0;
    for (size_t i = 0; i < n; i++)
        end += c->p->nodes[roots[i]].total * c->weight;
    fprintf(c->f, "%s\n{\"type\":\"sampled\",\"name\":\"", first ? "" : ",");
    escape_json(c->f, name);
    fprintf(c->f, "\",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\n\"samples\":[",
            ns ? "nanoseconds" : "none", (unsigned long long)end);
    c->first_item = true;
    for_each_sample(c->p, roots, n, stack, put_sample, c);
    fputs("],\n\"weights\":[", c->f);
    c->first_item = true;
    for_each_sample(c->p, roots, n, stack, put_weight, c);
    fputs("]}", c->f);
}

int speedscope_write(const struct profile *p, FILE *f)
{
    struct ss_ctx c = {.p = p, .f = f, .labelsz = 4096};
    bool ns = p->meta.period_ns || p->meta.frequency;
    c.weight = ns ? view_period_ns(p) : 1;
    c.index = malloc((p->nframes + 1) * sizeof(*c.index));
    c.path = malloc(VIEW_MAX_DEPTH * sizeof(*c.path));
    c.label = malloc(c.labelsz);
    uint32_t *stack = malloc((p->nnodes + 1) * sizeof(*stack));
    uint32_t *others = malloc((p->nnodes + 1) * sizeof(*others));
    int rc = 0;
    if (!c.index || !c.path || !c.label || !stack || !others) {
        rc = -ENOMEM;
        goto out;
    }
    fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n\"shared\":{\"frames\":[",
          f);
    int64_t next = 0;
    for (uint32_t i = 0; i < p->nframes; i++) {
        if (p->frames[i].kind == FRAME_THREAD) {
            c.index[i] = -1;
            continue;
        }
        if (next)
            fputc(',', f);
        fputc('\n', f);
        put_frame(&c, i);
        c.index[i] = next++;
    }
    fputs("]},\n\"profiles\":[", f);
    /* Named threads: one profile each. Everything else: one "all threads" profile. */
    size_t nothers = 0;
    bool first = true;
    uint32_t *threads;
    int64_t nthreads = view_sorted_children(p, 0, &threads);
    if (nthreads < 0) {
        rc = (int)nthreads;
        goto out;
    }
    for (int64_t i = 0; i < nthreads; i++) {
        uint32_t t = threads[i];
        if (!named_thread(p, t)) {
            if (p->nodes[t].total)
                others[nothers++] = t;
            continue;
        }
        put_profile(&c, p->frames[p->nodes[t].frame].name, &t, 1, stack, ns, first);
        first = false;
    }
    free(threads);
    if (nothers || first)
        put_profile(&c, "all threads", others, nothers, stack, ns, first);
    fputs("],\n\"name\":\"", f);
    if (p->meta.command)
        escape_json(f, p->meta.command);
    else
        fputs("pyebpf profile", f);
    fputs("\",\"activeProfileIndex\":0,\"exporter\":\"pyebpf " PYEBPF_VERSION "\"}\n", f);
    if (ferror(f))
        rc = -EIO;
out:
    free(c.index);
    free(c.path);
    free(c.label);
    free(stack);
    free(others);
    return rc;
}
