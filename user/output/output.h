/*
 * output — the dispatcher: writing a finished profile (profile_finish() called) to a path in one
 * of the formats. Each writer has its own header and includes only the view (profile/view.h).
 *
 *   folded      a;b;c N                      text, one line per distinct stack (folded.c)
 *   svg         interactive flame graph      self-contained SVG + embedded JS (svg.c)
 *   speedscope  speedscope file format       JSON, "sampled" profile per thread (speedscope.c)
 *   pprof       profile.proto, gzipped       Pyroscope / Parca / go tool pprof (pprof.c)
 *
 * Files are replaced atomically: the writer fills a fresh temporary file in the destination's
 * directory (created O_EXCL|O_NOFOLLOW) and renames it over the path, so a reader never sees half
 * a file and a symlink planted at the path is replaced, never followed. "-" (or /dev/stdout) is
 * stdout; a FIFO or character device named directly (/dev/null, a pipe) is written in place;
 * a directory or block device is refused.
 */
#ifndef PYEBPF_OUTPUT_H
#define PYEBPF_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

enum output_format {
    OUTPUT_FOLDED = 0,
    OUTPUT_SVG,
    OUTPUT_SPEEDSCOPE,
    OUTPUT_PPROF,
};

struct output_opts {
    const char *title; /* SVG title; NULL: "pyebpf: <command>" or "Flame graph" */
    bool icicle;       /* SVG: roots at the top, stacks grow downwards */
    /* A diff against `before` (diff.h): folded writes "stack before after" lines, svg a
     * differential flame graph (`normalize`: shares compared, else counts); other formats
     * refuse it (-EINVAL). */
    const struct profile *before;
    bool normalize;
};

/* "folded", "svg", "speedscope" (or "json"), "pprof" (or "pb"). Returns 0 or -EINVAL. */
int output_format_parse(const char *name, enum output_format *fmt);
const char *output_format_name(enum output_format fmt);
/* From the path's extension: .svg, .json, .pb.gz/.pb/.pprof; anything else (and "-") is folded. */
enum output_format output_format_from_path(const char *path);

/* Writes `p` to `path` ("-": stdout) atomically. Returns 0 or a negative errno. */
int output_write(const struct profile *p, enum output_format fmt, const char *path);
int output_write_opts(const struct profile *p, enum output_format fmt, const char *path,
                      const struct output_opts *opts);

/* Opens a fresh temporary file next to `path` (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0644 & ~umask);
 * its name goes to tmp[size]. Returns the fd or a negative errno. Exposed for tests. */
int output_tmpfile(const char *path, char *tmp, size_t size);

#endif
