/*
 * output — writing a finished profile (profile_finish() called) in one of the formats, and
 * reading folded text back into a profile.
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
#include <stdio.h>

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

/* -- The writers (each on a stream; output_write handles files) ------------------------------- */

int folded_write(const struct profile *p, FILE *f);
int svg_write(const struct profile *p, FILE *f, const struct output_opts *opts);
int speedscope_write(const struct profile *p, FILE *f);
int pprof_write(const struct profile *p, FILE *f);

/* Top-N table (function, self %, total %) by self samples. */
int summary_print(const struct profile *p, FILE *f, unsigned topn);

/* -- Reading folded text ------------------------------------------------------------------------ */

struct folded_stats {
    uint64_t lines;     /* stacks accepted */
    uint64_t bad_lines; /* skipped: no count, bad count, empty stack */
    uint64_t truncated; /* stacks deeper than FOLDED_MAX_DEPTH (root side kept) */
};

#define FOLDED_MAX_DEPTH 2048
#define FOLDED_MAX_COUNT (1ULL << 48) /* larger counts are taken as garbage, so sums never wrap */

/* Parses folded text (`buf` need not be NUL-terminated) into an initialised profile, adding to
 * what it holds; each frame's kind comes from its text (see folded.c). Malformed lines are
 * counted and skipped. Returns 0, or -ENOMEM. Call profile_finish() afterwards. */
int folded_read(struct profile *p, const char *buf, size_t len, struct folded_stats *st);
/* Reads a whole file ("-": stdin) and parses it. */
int folded_read_file(struct profile *p, const char *path, struct folded_stats *st);

/* -- Helpers the writers share (output.c) ------------------------------------------------------- */

/* A copy of `src` with the frames writers hide (profile_frame_shown) left out of every stack and
 * stacks that became equal merged; finished. A stack with no shown frame becomes "[unknown]". */
int output_view(const struct profile *src, struct profile *dst);
/* Children of `node` sorted by label; *out is malloc'd (free it). Returns the count or -ENOMEM. */
int64_t output_sorted_children(const struct profile *p, uint32_t node, uint32_t **out);
/* Writes `s` escaped for XML text/attributes, or as a JSON string body; invalid UTF-8 and control
 * characters become '?' so the file always parses. */
void output_xml_escape(FILE *f, const char *s);
/* A malloc'd copy of `s` with each byte that is not part of valid UTF-8 replaced by '?' (protobuf
 * strings must be UTF-8). NULL when out of memory. */
char *output_utf8_dup(const char *s);
void output_json_escape(FILE *f, const char *s);
/* Nanoseconds one sample stands for: meta.period_ns, else 1e9/frequency, else 1e9/100. */
uint64_t output_period_ns(const struct profile *p);

/* `pyebpf-sample render IN.folded -o OUT [-f FORMAT] [--title T] [--reverse] [-F HZ] [-q]` */
int render_main(int argc, char **argv);

#endif
