/*
 * svg — an interactive flame graph in one self-contained SVG file (no external scripts, fonts or
 * styles; opens offline in any browser).
 *
 *   ┌──────────────────────────────────────────────────────────────────────────┐
 *   │ Reset zoom          pyebpf: python3 app.py              [search box   ]  │ title
 *   │             12000 samples · 10.0 s · 1200 samples/s · 99 Hz  Matched: 4% │ subtitle
 *   │      ┌──────┐                                                            │
 *   │      │inner │ ┌────────┐                                                 │ frames: one <g class="f">
 *   │ ┌────┴──────┴─┴────────┴───────┐ ┌───────────┐                           │ per node, widths by total
 *   │ │outer (x.py:10)               │ │ main      │                           │ samples; data-x/-w/-d hold
 *   │ ├──────────────────────────────┴─┴───────────┴───────────────────────────┤ sample offset, width, depth
 *   │ │all                                                                     │ for the script
 *   │ Function: outer (x.py:10) — 5400 samples (45.00%)       ■Python ■native … │ details + legend
 *   └──────────────────────────────────────────────────────────────────────────┘
 *
 * Colours by kind: Python green, native red, JIT blue, kernel yellow, other grey; the shade within a
 * kind comes from a hash of the name, so one function keeps its colour across graphs.
 * With opts->icicle the root is at the top and stacks grow downwards.
 *
 * A differential graph (opts->before) keeps the widths of the profile written (AFTER) and colours
 * each frame by the change of its share against the same stack in BEFORE (counts with
 * normalize off): red grew, blue shrank, the deeper the colour the larger the change against the
 * largest one; a frame's tooltip and the details line give both shares and the delta.
 *
 * The graph opens on the flames: it is as tall as the deepest frame that holds at least
 * SVG_DEEP_PCT % of the samples, and frames deeper than that are drawn hidden (display:none). A
 * few deep start-up or import stacks would otherwise make the page many screens tall with the
 * root and the wide frames below the fold. Zooming applies the same rule to the zoomed frame's
 * samples (svg_js.c), so every deep tower is one or two clicks away, and the script resizes the
 * graph to what it shows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/diff.h"
#include "output/escape.h"
#include "output/svg.h"

#define SVG_WIDTH    1200.0
#define SVG_XPAD     10.0
#define SVG_FH       16  /* frame height */
#define SVG_TOP      70  /* title, subtitle, search */
#define SVG_BOTTOM   50  /* details line, legend */
#define SVG_CHARW    7.3 /* average glyph width of 12px monospace */
#define SVG_MINW     0.1 /* frames narrower than this (px) are left out */
#define SVG_DEEP_PCT 1   /* frames deeper than the deepest one with this share wait for a zoom */

struct svg_ctx {
    const struct profile *v;
    FILE *f;
    double scale;      /* px per sample */
    unsigned maxdepth; /* deepest row shown: the depth of the deepest frame of SVG_DEEP_PCT % */
    bool icicle;
    bool deep; /* some frames lie below maxdepth (hidden until a zoom) */
    uint64_t omitted;
    /* Differential graph: each node's samples in BEFORE (0 where BEFORE lacks the stack). */
    uint64_t *before;
    const struct profile *before_view; /* while pairing */
    uint64_t before_total;
    bool normalize;
    double maxdelta; /* the largest |delta| of any node, for the colour scale */
    char *label;
    size_t labelsz;
};

/* What a count is: a sample, or a microsecond of wall or off-CPU time. */
static const char *unit(const struct profile *v)
{
    return v->meta.weight ? "µs" : "samples";
}

/* The depth of the deepest node holding at least SVG_DEEP_PCT % of the samples, or -ENOMEM;
 * c->deep says whether any node lies deeper. */
static int64_t shown_depth(struct svg_ctx *c, const struct profile *v)
{
    /* Node indices grow from parents to children, so one pass finds each depth. */
    unsigned *d = calloc(v->nnodes, sizeof(*d)), m = 0, all = 0;
    if (!d)
        return -ENOMEM;
    for (uint32_t i = 1; i < v->nnodes; i++) {
        d[i] = d[v->nodes[i].parent] + 1;
        if (d[i] > m && v->nodes[i].total * 100 >= v->nodes[0].total * SVG_DEEP_PCT)
            m = d[i];
        if (d[i] > all)
            all = d[i];
    }
    c->deep = all > m;
    free(d);
    return m;
}

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void colour(enum frame_kind kind, const char *name, int rgb[3])
{
    double v = (name_hash(name) % 1000) / 1000.0;
    switch (kind) {
    case FRAME_PYTHON:
        rgb[0] = 60 + (int)(v * 60), rgb[1] = 170 + (int)(v * 50), rgb[2] = 80 + (int)(v * 40);
        break;
    case FRAME_NATIVE:
        rgb[0] = 210 + (int)(v * 40), rgb[1] = 80 + (int)(v * 70), rgb[2] = 60 + (int)(v * 30);
        break;
    case FRAME_JIT:
        rgb[0] = 70 + (int)(v * 50), rgb[1] = 150 + (int)(v * 50), rgb[2] = 215 + (int)(v * 35);
        break;
    case FRAME_KERNEL:
        rgb[0] = 215 + (int)(v * 35), rgb[1] = 185 + (int)(v * 45), rgb[2] = 50 + (int)(v * 30);
        break;
    default:
        rgb[0] = rgb[1] = rgb[2] = 190 + (int)(v * 30);
    }
}

/* The change of a node: its share after less its share before (normalize), or the samples. */
static double delta(const struct svg_ctx *c, uint32_t node)
{
    double a = (double)c->v->nodes[node].total, b = (double)c->before[node];
    if (!c->normalize)
        return a - b;
    double at = (double)c->v->nodes[0].total, bt = (double)c->before_total;
    return (at ? a / at : 0) - (bt ? b / bt : 0);
}

/* Red grew, blue shrank, white unchanged; intensity by the change against the largest one. */
static void diff_colour(const struct svg_ctx *c, uint32_t node, int rgb[3])
{
    double d = delta(c, node), k = c->maxdelta > 0 ? (d < 0 ? -d : d) / c->maxdelta : 0;
    int fade = 235 - (int)(k * 200);
    if (d > 0)
        rgb[0] = 250, rgb[1] = rgb[2] = fade;
    else if (d < 0)
        rgb[0] = rgb[1] = fade, rgb[2] = 250;
    else
        rgb[0] = rgb[1] = rgb[2] = 235;
}

/* The tooltip's second line, which the script also shows in the details line. */
static void frame_stats(FILE *f, const struct svg_ctx *c, uint32_t node)
{
    const struct profile *v = c->v;
    uint64_t n = v->nodes[node].total, root = v->nodes[0].total;
    double pct = root ? 100.0 * (double)n / (double)root : 0;
    if (!c->before) {
        fprintf(f, "%llu %s (%.2f%%)", (unsigned long long)n, unit(v), pct);
        return;
    }
    uint64_t b = c->before[node];
    double bpct = c->before_total ? 100.0 * (double)b / (double)c->before_total : 0;
    fprintf(f, "before %llu %s (%.2f%%), after %llu %s (%.2f%%), ", (unsigned long long)b, unit(v), bpct,
            (unsigned long long)n, unit(v), pct);
    if (c->normalize)
        fprintf(f, "delta %+.2f pp", pct - bpct);
    else
        fprintf(f, "delta %+lld %s", (long long)n - (long long)b, unit(v));
}

static const char *kind_tag(enum frame_kind k)
{
    static const char *tags[] = {"t", "py", "n", "jit", "k", "o"};
    return (unsigned)k < sizeof(tags) / sizeof(tags[0]) ? tags[k] : "o";
}

static double frame_y(const struct svg_ctx *c, unsigned depth)
{
    if (c->icicle)
        return SVG_TOP + (double)depth * SVG_FH;
    return SVG_TOP + ((double)c->maxdepth - depth) * SVG_FH;
}

/* The label cut to fit `w` px ("" when nothing fits), escaped. */
static void fitted_text(FILE *f, const char *label, double w)
{
    int fit = (int)((w - 6) / SVG_CHARW);
    size_t n = strlen(label);
    if (fit < 3)
        return;
    if (n <= (size_t)fit) {
        escape_xml(f, label);
        return;
    }
    char cut[512];
    size_t keep = (size_t)fit - 2 < sizeof(cut) - 3 ? (size_t)fit - 2 : sizeof(cut) - 3;
    /* Do not split a UTF-8 sequence. */
    while (keep > 0 && ((unsigned char)label[keep] & 0xc0) == 0x80)
        keep--;
    memcpy(cut, label, keep);
    memcpy(cut + keep, "..", 3);
    escape_xml(f, cut);
}

static int emit(struct svg_ctx *c, uint32_t node, uint64_t x, unsigned depth)
{
    const struct profile *v = c->v;
    const struct node *nd = &v->nodes[node];
    double w = (double)nd->total * c->scale;
    if (w < SVG_MINW) {
        c->omitted++;
        return 0;
    }
    const char *label = "all";
    enum frame_kind kind = FRAME_OTHER;
    if (node) {
        profile_frame_label(v, nd->frame, c->label, c->labelsz);
        label = c->label;
        kind = v->frames[nd->frame].kind;
    }
    int rgb[3];
    if (c->before)
        diff_colour(c, node, rgb);
    else
        colour(kind, node ? v->frames[nd->frame].name : "all", rgb);
    double px = SVG_XPAD + (double)x * c->scale, py = frame_y(c, depth);
    FILE *f = c->f;
    fprintf(f, "<g class=\"f\" data-x=\"%llu\" data-w=\"%llu\" data-d=\"%u\" data-k=\"%s\"",
            (unsigned long long)x, (unsigned long long)nd->total, depth, kind_tag(kind));
    if (c->before)
        fprintf(f, " data-b=\"%llu\"", (unsigned long long)c->before[node]);
    fprintf(f, "%s><title>", depth > c->maxdepth ? " style=\"display:none\"" : "");
    escape_xml(f, label);
    fputc('\n', f);
    frame_stats(f, c, node);
    fputs("</title>", f);
    fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"rgb(%d,%d,%d)\"/>", px, py, w,
            SVG_FH - 1, rgb[0], rgb[1], rgb[2]);
    fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">", px + 3, py + SVG_FH - 4.5);
    fitted_text(f, label, w);
    fputs("</text></g>\n", f);

    uint32_t *kids;
    int64_t n = view_sorted_children(v, node, &kids);
    if (n < 0)
        return (int)n;
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i++) {
        rc = emit(c, kids[i], x, depth + 1);
        x += v->nodes[kids[i]].total;
    }
    free(kids);
    return rc;
}

extern const char svg_script[]; /* svg_js.c */

static void header(struct svg_ctx *c, const struct svg_opts *opts, double height)
{
    const struct profile *v = c->v;
    FILE *f = c->f;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
            "xmlns=\"http://www.w3.org/2000/svg\" id=\"flamegraph\" data-total=\"%llu\" "
            "data-depth=\"%u\" data-deep-pct=\"%d\" data-icicle=\"%d\" data-unit=\"%s\">\n",
            SVG_WIDTH, height, SVG_WIDTH, height, (unsigned long long)v->nodes[0].total, c->maxdepth,
            SVG_DEEP_PCT, c->icicle ? 1 : 0, unit(v));
    fputs("<style>\n"
          "text { font-family: ui-monospace, 'DejaVu Sans Mono', monospace; font-size: 12px; fill: #000; }\n"
          "g.f text { pointer-events: none; }\n"
          "g.f rect { stroke: #fff; stroke-width: 0.5; cursor: pointer; }\n"
          "g.f:hover rect { stroke: #000; stroke-width: 1; }\n"
          "g.f.anc rect { opacity: 0.55; }\n"
          "g.f.match rect { fill: rgb(230,0,230); }\n"
          "#title { font-size: 17px; text-anchor: middle; }\n"
          "#subtitle { fill: #555; text-anchor: middle; }\n"
          "#reset { fill: #0645ad; cursor: pointer; }\n"
          "#matched { text-anchor: end; }\n"
          "</style>\n",
          f);
    fprintf(f, "<rect id=\"bg\" x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#f8f8f2\"/>\n",
            SVG_WIDTH, height);
    fprintf(f, "<text id=\"title\" x=\"%.0f\" y=\"24\">", SVG_WIDTH / 2);
    if (opts && opts->title)
        escape_xml(f, opts->title);
    else if (v->meta.command) {
        fputs("pyebpf: ", f);
        escape_xml(f, v->meta.command);
    } else
        fputs("Flame graph", f);
    fputs("</text>\n", f);
    fprintf(f, "<text id=\"subtitle\" x=\"%.0f\" y=\"44\">%llu %s", SVG_WIDTH / 2,
            (unsigned long long)v->nodes[0].total, unit(v));
    if (v->meta.weight)
        fprintf(f, " of %s time", v->meta.weight);
    if (v->meta.duration_s > 0 && !v->meta.weight)
        fprintf(f, " · %.1f s · %.0f samples/s", v->meta.duration_s,
                (double)v->nodes[0].total / v->meta.duration_s);
    else if (v->meta.duration_s > 0)
        fprintf(f, " · %.1f s", v->meta.duration_s);
    if (v->meta.frequency)
        fprintf(f, " · %u Hz", v->meta.frequency);
    if (c->icicle)
        fputs(" · icicle", f);
    if (c->before)
        fprintf(f, " · before: %llu samples · %s · red grew, blue shrank",
                (unsigned long long)c->before_total, c->normalize ? "shares compared" : "counts compared");
    if (c->deep)
        fprintf(f, " · deeper stacks of less than %d%% appear on zoom", SVG_DEEP_PCT);
    fputs("</text>\n", f);
    fprintf(f, "<text id=\"reset\" x=\"%.0f\" y=\"24\" visibility=\"hidden\">Reset zoom</text>\n", SVG_XPAD);
    fprintf(f,
            "<foreignObject x=\"%.0f\" y=\"8\" width=\"260\" height=\"26\">"
            "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\" "
            "placeholder=\"Search (regex)\" style=\"width:250px;font:12px monospace\"/>"
            "</foreignObject>\n",
            SVG_WIDTH - SVG_XPAD - 260);
    fprintf(f, "<text id=\"matched\" x=\"%.0f\" y=\"44\"></text>\n", SVG_WIDTH - SVG_XPAD);
}

static void footer(struct svg_ctx *c, double height)
{
    FILE *f = c->f;
    /* The footer hangs from the bottom edge, so the script moves it with one transform. */
    fprintf(f, "<g id=\"foot\" transform=\"translate(0,%.0f)\">\n", height);
    fprintf(f, "<text id=\"details\" x=\"%.0f\" y=\"-30\"> </text>\n", SVG_XPAD);
    static const struct {
        enum frame_kind k;
        const char *name;
    } legend[] = {{FRAME_PYTHON, "Python"},
                  {FRAME_NATIVE, "native"},
                  {FRAME_JIT, "JIT"},
                  {FRAME_KERNEL, "kernel"},
                  {FRAME_OTHER, "other"}};
    double x = SVG_WIDTH - SVG_XPAD - 5 * 90;
    if (c->before)
        fprintf(
            f,
            "<rect class=\"legend\" x=\"%.0f\" y=\"-18\" width=\"12\" height=\"12\" fill=\"rgb(250,35,35)\"/>"
            "<text x=\"%.0f\" y=\"-8\">grew</text>\n"
            "<rect class=\"legend\" x=\"%.0f\" y=\"-18\" width=\"12\" height=\"12\" fill=\"rgb(35,35,250)\"/>"
            "<text x=\"%.0f\" y=\"-8\">shrank</text>\n",
            x + 270, x + 286, x + 360, x + 376);
    for (size_t i = 0; i < 5 && !c->before; i++, x += 90) {
        int rgb[3];
        colour(legend[i].k, "", rgb);
        fprintf(f,
                "<rect class=\"legend\" x=\"%.0f\" y=\"-18\" width=\"12\" height=\"12\" "
                "fill=\"rgb(%d,%d,%d)\"/><text x=\"%.0f\" y=\"-8\">%s</text>\n",
                x, rgb[0], rgb[1], rgb[2], x + 16, legend[i].name);
    }
    fputs("</g>\n", f);
    if (c->omitted)
        fprintf(f, "<!-- %llu frames narrower than %.1f px left out -->\n", (unsigned long long)c->omitted,
                SVG_MINW);
    fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n", svg_script);
}

/* -- Differential graph ------------------------------------------------------------------------- */

static int before_step(void *arg, const struct diff_step *s)
{
    struct svg_ctx *c = arg;
    if (s->after == DIFF_NONE)
        return 0;
    if (s->before != DIFF_NONE)
        c->before[s->after] = c->before_view->nodes[s->before].total;
    double d = delta(c, s->after);
    if (d < 0)
        d = -d;
    if (d > c->maxdelta)
        c->maxdelta = d;
    return 0;
}

/* Each node's samples in BEFORE, and the largest change, for the colours. */
static int pair_before(struct svg_ctx *c, const struct profile *before)
{
    struct profile bv;
    int rc = view_build(before, &bv);
    if (rc)
        return rc;
    c->before = calloc(c->v->nnodes, sizeof(*c->before));
    if (!c->before) {
        profile_free(&bv);
        return -ENOMEM;
    }
    c->before_view = &bv;
    c->before_total = bv.nodes[0].total;
    c->before[0] = c->before_total;
    rc = diff_walk(&bv, c->v, before_step, c);
    double d = delta(c, 0);
    if (d < 0)
        d = -d;
    if (d > c->maxdelta)
        c->maxdelta = d;
    c->before_view = NULL;
    profile_free(&bv);
    return rc;
}

int svg_write(const struct profile *p, FILE *f, const struct svg_opts *opts)
{
    struct profile v;
    int rc = view_build(p, &v);
    if (rc)
        return rc;
    struct svg_ctx c = {.v = &v,
                        .f = f,
                        .icicle = opts && opts->icicle,
                        .normalize = opts && opts->normalize,
                        .labelsz = 4096};
    c.label = malloc(c.labelsz);
    int64_t depth = c.label ? shown_depth(&c, &v) : -ENOMEM;
    if (depth < 0) {
        rc = (int)depth;
        goto out;
    }
    if (opts && opts->before && (rc = pair_before(&c, opts->before)) != 0)
        goto out;
    c.maxdepth = (unsigned)depth;
    uint64_t total = v.nodes[0].total;
    c.scale = total ? (SVG_WIDTH - 2 * SVG_XPAD) / (double)total : 0;
    double height = SVG_TOP + (double)(c.maxdepth + 1) * SVG_FH + SVG_BOTTOM;
    header(&c, opts, height);
    fputs("<g id=\"frames\">\n", f);
    if (total)
        rc = emit(&c, 0, 0, 0);
    fputs("</g>\n", f);
    footer(&c, height);
out:
    free(c.before);
    free(c.label);
    profile_free(&v);
    if (rc == 0 && ferror(f))
        rc = -EIO;
    return rc;
}
