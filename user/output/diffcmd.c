/*
 * diffcmd — `pyebpf-sample diff`: reads two folded profiles and writes how the second differs
 * from the first.
 *
 *   pyebpf-sample diff before.folded after.folded -o diff.svg     widths from AFTER, red grew,
 *                                                                  blue shrank
 *   pyebpf-sample diff before.folded after.folded -f folded        "stack before after" lines
 *
 * The comparison is by share of each profile's samples (--normalize, the default), so two runs
 * of different lengths compare; --no-normalize compares sample counts.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "output/diffcmd.h"
#include "output/folded.h"
#include "output/output.h"

static void usage(FILE *f)
{
    fputs("usage: pyebpf-sample diff BEFORE.folded AFTER.folded [-o OUT] [-f FORMAT]\n"
          "                          [--normalize | --no-normalize] [--title T] [--reverse] [-q]\n"
          "  BEFORE, AFTER    folded stacks (\"a;b;c N\" per line), - for stdin (one of them)\n"
          "  -o, --output     output file (default: stdout); .svg writes a flame graph\n"
          "  -f, --format     svg: differential flame graph, widths from AFTER, red grew,\n"
          "                   blue shrank, hover shows both shares and the delta;\n"
          "                   folded: \"stack before after\" lines (both raw sample counts)\n"
          "      --normalize  compare each frame's share of its profile's samples (default)\n"
          "      --no-normalize  compare sample counts\n"
          "      --title      SVG title (default: \"Differential flame graph: BEFORE -> AFTER\")\n"
          "      --reverse    SVG icicle: roots at the top\n"
          "  -q, --quiet      no message on stderr\n",
          f);
}

/* Reads one folded file into a finished profile; 0, or 1 with a message. */
static int load(const char *path, struct profile *p)
{
    struct folded_stats st = {0};
    if (profile_init(p) < 0) {
        fputs("diff: out of memory\n", stderr);
        return 1;
    }
    int rc = folded_read_file(p, path, &st);
    if (rc < 0) {
        fprintf(stderr, "diff: %s: %s\n", path, strerror(-rc));
        return 1;
    }
    if (st.bad_lines)
        fprintf(stderr, "diff: %s: skipped %llu malformed line(s)\n", path, (unsigned long long)st.bad_lines);
    if (st.lines == 0) {
        fprintf(stderr, "diff: %s: no stacks\n", path);
        return 1;
    }
    profile_finish(p);
    return 0;
}

int diffcmd_main(int argc, char **argv)
{
    enum { OPT_NORMALIZE = 256, OPT_NO_NORMALIZE, OPT_TITLE, OPT_REVERSE };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, 'f'},
        {"normalize", no_argument, NULL, OPT_NORMALIZE},
        {"no-normalize", no_argument, NULL, OPT_NO_NORMALIZE},
        {"title", required_argument, NULL, OPT_TITLE},
        {"reverse", no_argument, NULL, OPT_REVERSE},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *fmtname = NULL;
    struct output_opts opts = {.normalize = true};
    bool quiet = false;
    int c;
    optind = 0; /* the caller may have run getopt already */
    while ((c = getopt_long(argc, argv, "o:f:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'f':
            fmtname = optarg;
            break;
        case OPT_NORMALIZE:
            opts.normalize = true;
            break;
        case OPT_NO_NORMALIZE:
            opts.normalize = false;
            break;
        case OPT_TITLE:
            opts.title = optarg;
            break;
        case OPT_REVERSE:
            opts.icicle = true;
            break;
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
    if (optind != argc - 2) {
        usage(stderr);
        return 2;
    }
    const char *bpath = argv[optind], *apath = argv[optind + 1];
    enum output_format fmt = output_format_from_path(out);
    if (fmtname && output_format_parse(fmtname, &fmt) < 0)
        fmt = OUTPUT_PPROF; /* refused below */
    if (fmt != OUTPUT_SVG && fmt != OUTPUT_FOLDED) {
        fprintf(stderr, "diff: format '%s': a diff is written as svg or folded\n",
                fmtname ? fmtname : output_format_name(fmt));
        return 2;
    }
    if (!strcmp(bpath, "-") && !strcmp(apath, "-")) {
        fputs("diff: only one of BEFORE and AFTER can be stdin\n", stderr);
        return 2;
    }

    struct profile before = {0}, after = {0};
    char title[1024];
    int rc = load(bpath, &before);
    if (!rc)
        rc = load(apath, &after);
    if (!rc && !opts.title) {
        snprintf(title, sizeof(title), "Differential flame graph: %s -> %s", bpath, apath);
        opts.title = title;
    }
    if (!rc) {
        opts.before = &before;
        int err = output_write_opts(&after, fmt, out, &opts);
        if (err < 0) {
            fprintf(stderr, "diff: %s: %s\n", out ? out : "stdout", strerror(-err));
            rc = 1;
        } else if (out && strcmp(out, "-") != 0 && !quiet) {
            fprintf(stderr, "diff: wrote %s (%s): before %llu samples, after %llu samples\n", out,
                    output_format_name(fmt), (unsigned long long)before.nodes[0].total,
                    (unsigned long long)after.nodes[0].total);
        }
    }
    profile_free(&before);
    profile_free(&after);
    return rc;
}
