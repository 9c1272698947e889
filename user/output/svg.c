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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/escape.h"
#include "output/svg.h"

#define SVG_WIDTH  1200.0
#define SVG_XPAD   10.0
#define SVG_FH     16  /* frame height */
#define SVG_TOP    70  /* title, subtitle, search */
#define SVG_BOTTOM 50  /* details line, legend */
#define SVG_CHARW  7.3 /* average glyph width of 12px monospace */
#define SVG_MINW   0.1 /* frames narrower than this (px) are left out */

struct svg_ctx {
    const struct profile *v;
    FILE *f;
    double scale; /* px per sample */
    unsigned maxdepth;
    bool icicle;
    uint64_t omitted;
    char *label;
    size_t labelsz;
};

/* The deepest node's depth, or -ENOMEM. */
static int64_t max_depth(const struct profile *v)
{
    /* Node indices grow from parents to children, so one pass finds each depth. */
    unsigned *d = calloc(v->nnodes, sizeof(*d)), m = 0;
    if (!d)
        return -ENOMEM;
    for (uint32_t i = 1; i < v->nnodes; i++) {
        d[i] = d[v->nodes[i].parent] + 1;
        if (d[i] > m)
            m = d[i];
    }
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

static const char *kind_tag(enum frame_kind k)
{
    static const char *tags[] = {"t", "py", "n", "jit", "k", "o"};
    return (unsigned)k < sizeof(tags) / sizeof(tags[0]) ? tags[k] : "o";
}

static double frame_y(const struct svg_ctx *c, unsigned depth)
{
    if (c->icicle)
        return SVG_TOP + (double)depth * SVG_FH;
    return SVG_TOP + (double)(c->maxdepth - depth) * SVG_FH;
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
    colour(kind, node ? v->frames[nd->frame].name : "all", rgb);
    double px = SVG_XPAD + (double)x * c->scale, py = frame_y(c, depth);
    double pct = v->nodes[0].total ? 100.0 * (double)nd->total / (double)v->nodes[0].total : 0;
    FILE *f = c->f;
    fprintf(f, "<g class=\"f\" data-x=\"%llu\" data-w=\"%llu\" data-d=\"%u\" data-k=\"%s\"><title>",
            (unsigned long long)x, (unsigned long long)nd->total, depth, kind_tag(kind));
    escape_xml(f, label);
    fprintf(f, "\n%llu samples (%.2f%%)</title>", (unsigned long long)nd->total, pct);
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
            "data-depth=\"%u\" data-icicle=\"%d\">\n",
            SVG_WIDTH, height, SVG_WIDTH, height, (unsigned long long)v->nodes[0].total, c->maxdepth,
            c->icicle ? 1 : 0);
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
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#f8f8f2\"/>\n", SVG_WIDTH,
            height);
    fprintf(f, "<text id=\"title\" x=\"%.0f\" y=\"24\">", SVG_WIDTH / 2);
    if (opts && opts->title)
        escape_xml(f, opts->title);
    else if (v->meta.command) {
        fputs("pyebpf: ", f);
        escape_xml(f, v->meta.command);
    } else
        fputs("Flame graph", f);
    fputs("</text>\n", f);
    fprintf(f, "<text id=\"subtitle\" x=\"%.0f\" y=\"44\">%llu samples", SVG_WIDTH / 2,
            (unsigned long long)v->nodes[0].total);
    if (v->meta.duration_s > 0)
        fprintf(f, " · %.1f s · %.0f samples/s", v->meta.duration_s,
                (double)v->nodes[0].total / v->meta.duration_s);
    if (v->meta.frequency)
        fprintf(f, " · %u Hz", v->meta.frequency);
    if (c->icicle)
        fputs(" · icicle", f);
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
    fprintf(f, "<text id=\"details\" x=\"%.0f\" y=\"%.0f\"> </text>\n", SVG_XPAD, height - 30);
    static const struct {
        enum frame_kind k;
        const char *name;
    } legend[] = {{FRAME_PYTHON, "Python"},
                  {FRAME_NATIVE, "native"},
                  {FRAME_JIT, "JIT"},
                  {FRAME_KERNEL, "kernel"},
                  {FRAME_OTHER, "other"}};
    double x = SVG_WIDTH - SVG_XPAD - 5 * 90;
    for (size_t i = 0; i < 5; i++, x += 90) {
        int rgb[3];
        colour(legend[i].k, "", rgb);
        fprintf(f,
                "<rect class=\"legend\" x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" "
                "fill=\"rgb(%d,%d,%d)\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                x, height - 18, rgb[0], rgb[1], rgb[2], x + 16, height - 8, legend[i].name);
    }
    if (c->omitted)
        fprintf(f, "<!-- %llu frames narrower than %.1f px left out -->\n", (unsigned long long)c->omitted,
                SVG_MINW);
    fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n", svg_script);
}

int svg_write(const struct profile *p, FILE *f, const struct svg_opts *opts)
{
    struct profile v;
    int rc = view_build(p, &v);
    if (rc)
        return rc;
    struct svg_ctx c = {.v = &v, .f = f, .icicle = opts && opts->icicle, .labelsz = 4096};
    c.label = malloc(c.labelsz);
    if (!c.label) {
        profile_free(&v);
        return -ENOMEM;
    }
    int64_t depth = max_depth(&v);
    if (depth < 0) {
        free(c.label);
        profile_free(&v);
        return (int)depth;
    }
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
    free(c.label);
    profile_free(&v);
    if (rc == 0 && ferror(f))
        rc = -EIO;
    return rc;
}
