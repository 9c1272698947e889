/*
 * render — `pyebpf-sample render`: reads folded text (ours, or `perf script` output folded by
 * scripts/pyebpf-fold-perf) and writes it in another format.
 *
 *   pyebpf-sample render app.folded -o app.svg
 *   perf script | scripts/pyebpf-fold-perf | pyebpf-sample render - -o perf.json
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "output/folded.h"
#include "output/output.h"
#include "output/render.h"
#include "output/summary.h"

static void usage(FILE *f)
{
    fputs("usage: pyebpf-sample render IN.folded [-o OUT] [-f FORMAT] [--title T] [--reverse]\n"
          "                            [-F HZ] [-q]\n"
          "  IN.folded        folded stacks (\"a;b;c N\" per line), - for stdin\n"
          "  -o, --output     output file (default: stdout); its extension picks the format:\n"
          "                   .svg flame graph, .json speedscope, .pb.gz pprof, else folded\n"
          "  -f, --format     folded | svg | speedscope | pprof (overrides the extension)\n"
          "      --title      SVG title, speedscope profile name, pprof comment\n"
          "      --reverse    SVG icicle: roots at the top, stacks grow downwards\n"
          "  -F, --frequency  sampling rate the stacks were taken at, in Hz (CPU time in\n"
          "                   speedscope and pprof; default: counts, and 100 Hz for pprof)\n"
          "  -q, --quiet      no summary on stderr\n",
          f);
}

int render_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, 'f'},
        {"title", required_argument, NULL, 't'},
        {"reverse", no_argument, NULL, 'r'},
        {"icicle", no_argument, NULL, 'r'},
        {"frequency", required_argument, NULL, 'F'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *fmtname = NULL;
    struct output_opts opts = {0};
    unsigned long hz = 0;
    bool quiet = false;
    int c;
    optind = 0; /* the caller may have run getopt already */
    while ((c = getopt_long(argc, argv, "o:f:F:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'f':
            fmtname = optarg;
            break;
        case 't':
            opts.title = optarg;
            break;
        case 'r':
            opts.icicle = true;
            break;
        case 'F': {
            char *end;
            errno = 0;
            hz = strtoul(optarg, &end, 10);
            if (errno || *end || hz == 0 || hz > 1000000) {
                fprintf(stderr, "render: bad frequency '%s'\n", optarg);
                return 2;
            }
            break;
        }
        case 'q':
            quiet = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return 2;
    }
    const char *in = argv[optind];
    enum output_format fmt = output_format_from_path(out);
    if (fmtname && output_format_parse(fmtname, &fmt) < 0) {
        fprintf(stderr, "render: unknown format '%s' (folded, svg, speedscope, pprof)\n", fmtname);
        return 2;
    }

    struct profile p;
    if (profile_init(&p) < 0) {
        fputs("render: out of memory\n", stderr);
        return 1;
    }
    struct folded_stats st = {0};
    int rc = folded_read_file(&p, in, &st);
    if (rc < 0) {
        fprintf(stderr, "render: %s: %s\n", in, strerror(-rc));
        profile_free(&p);
        return 1;
    }
    if (st.bad_lines)
        fprintf(stderr, "render: %s: skipped %llu malformed line(s)\n", in, (unsigned long long)st.bad_lines);
    if (st.truncated)
        fprintf(stderr, "render: %s: cut %llu stack(s) deeper than %d frames\n", in,
                (unsigned long long)st.truncated, FOLDED_MAX_DEPTH);
    if (st.lines == 0) {
        fprintf(stderr, "render: %s: no stacks\n", in);
        profile_free(&p);
        return 1;
    }
    /* The title also names the profile in speedscope and pprof. */
    if (opts.title && profile_set_command(&p, opts.title) < 0) {
        fputs("render: out of memory\n", stderr);
        profile_free(&p);
        return 1;
    }
    if (hz) {
        p.meta.frequency = (unsigned)hz;
        p.meta.period_ns = 1000000000ULL / hz;
    }
    profile_finish(&p);
    rc = output_write_opts(&p, fmt, out, &opts);
    if (rc < 0) {
        fprintf(stderr, "render: %s: %s\n", out ? out : "stdout", strerror(-rc));
    } else if (out && strcmp(out, "-") != 0 && !quiet) {
        summary_print(&p, stderr, 10);
        fprintf(stderr, "render: wrote %s (%s)\n", out, output_format_name(fmt));
    }
    profile_free(&p);
    return rc < 0 ? 1 : 0;
}
