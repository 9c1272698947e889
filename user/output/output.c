/*
 * output — format names, the choice of writer, and atomic file replacement.
 *
 *   path                         how it is written
 *   "-", /dev/stdout, /dev/stderr   the process's stream
 *   /dev/fd/N, /proc/self/fd/N      the process's open descriptor N (e.g. bash's >(gzip > x))
 *   missing, regular file, symlink  temporary file in the same directory, then rename() over path
 *   FIFO, socket, char device       in place (opened O_NOFOLLOW, checked again after opening)
 *   directory, block device         refused (-EISDIR, -EINVAL)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/diff.h"
#include "output/folded.h"
#include "output/output.h"
#include "output/pprof.h"
#include "output/speedscope.h"
#include "output/svg.h"

/* -- Formats ------------------------------------------------------------------------------------ */

static const struct {
    const char *name;
    enum output_format fmt;
} format_names[] = {
    {"folded", OUTPUT_FOLDED},   {"svg", OUTPUT_SVG},     {"speedscope", OUTPUT_SPEEDSCOPE},
    {"json", OUTPUT_SPEEDSCOPE}, {"pprof", OUTPUT_PPROF}, {"pb", OUTPUT_PPROF},
};

int output_format_parse(const char *name, enum output_format *fmt)
{
    for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++) {
        if (strcasecmp(name, format_names[i].name) == 0) {
            *fmt = format_names[i].fmt;
            return 0;
        }
    }
    return -EINVAL;
}

const char *output_format_name(enum output_format fmt)
{
    switch (fmt) {
    case OUTPUT_FOLDED:
        return "folded";
    case OUTPUT_SVG:
        return "svg";
    case OUTPUT_SPEEDSCOPE:
        return "speedscope";
    case OUTPUT_PPROF:
        return "pprof";
    }
    return "?";
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

enum output_format output_format_from_path(const char *path)
{
    if (!path)
        return OUTPUT_FOLDED;
    if (ends_with(path, ".svg"))
        return OUTPUT_SVG;
    if (ends_with(path, ".json") || ends_with(path, ".speedscope"))
        return OUTPUT_SPEEDSCOPE;
    if (ends_with(path, ".pb.gz") || ends_with(path, ".pb") || ends_with(path, ".pprof"))
        return OUTPUT_PPROF;
    return OUTPUT_FOLDED;
}

/* -- Atomic replacement ------------------------------------------------------------------------- */

int output_tmpfile(const char *path, char *tmp, size_t size)
{
    size_t len = strlen(path);
    if (len == 0)
        return -EINVAL;
    if (path[len - 1] == '/')
        return -EISDIR;
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) + 1 : 0; /* keeps the '/' */
    const char *base = slash ? slash + 1 : path;
    for (int attempt = 0; attempt < 100; attempt++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
            r = ((uint64_t)getpid() << 32) ^ (uint64_t)attempt ^ (uint64_t)(uintptr_t)&r;
        int n = snprintf(tmp, size, "%.*s.%s.%016llx.tmp", dirlen, path, base, (unsigned long long)r);
        if (n < 0 || (size_t)n >= size)
            return -ENAMETOOLONG;
        /* O_EXCL: never reuse or truncate an existing file; O_NOFOLLOW: never a planted link. */
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

static int write_stream(const struct profile *p, enum output_format fmt, FILE *f,
                        const struct output_opts *opts)
{
    const struct profile *before = opts ? opts->before : NULL;
    switch (fmt) {
    case OUTPUT_FOLDED:
        return before ? diff_write_folded(before, p, f) : folded_write(p, f);
    case OUTPUT_SVG:
        return svg_write(p, f,
                         &(struct svg_opts){.title = opts ? opts->title : NULL,
                                            .icicle = opts && opts->icicle,
                                            .before = before,
                                            .normalize = opts && opts->normalize});
    case OUTPUT_SPEEDSCOPE:
        return before ? -EINVAL : speedscope_write(p, f);
    case OUTPUT_PPROF:
        return before ? -EINVAL : pprof_write(p, f);
    }
    return -EINVAL;
}

static int write_to(const struct profile *p, enum output_format fmt, FILE *f, const struct output_opts *opts)
{
    int rc = write_stream(p, fmt, f, opts);
    if (fflush(f) != 0 && rc == 0)
        rc = -errno;
    if (ferror(f) && rc == 0)
        rc = -EIO;
    return rc;
}

/* Writes the profile through `fd`, which it takes over (closed on return); `sync` flushes it to
 * disk before closing (a temporary file about to be renamed into place). */
static int write_through(const struct profile *p, enum output_format fmt, int fd, bool sync,
                         const struct output_opts *opts)
{
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    int rc = write_to(p, fmt, f, opts);
    if (rc == 0 && sync && fsync(fileno(f)) != 0)
        rc = -errno;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    return rc;
}

/* A FIFO, socket or character device the user named (a pipe, /dev/null, a terminal): written in
 * place, since renaming over it would put a regular file in its place. Opened without following
 * a symlink and checked again after opening, so nothing can be swapped in between. Returns 1
 * when `path` is not such a file (the caller replaces it atomically), 0 or a negative errno. */
static int write_special(const struct profile *p, enum output_format fmt, const char *path,
                         const struct output_opts *opts)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 1 : -errno;
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    if (S_ISBLK(st.st_mode))
        return -EINVAL; /* a disk is never an output */
    if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISSOCK(st.st_mode))
        return 1; /* regular file or symlink: replaced, never followed */
    int fd = open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode))) {
        close(fd);
        return -EAGAIN; /* it changed under us */
    }
    return write_through(p, fmt, fd, false, opts);
}

/* The descriptor a /dev/fd/N or /proc/self/fd/N path names, or -1. Those paths are symlinks by
 * nature (to pipe:[...] and the like) and live where no temporary file can be made, so they are
 * written through the descriptor the process already holds. */
static int self_fd(const char *path)
{
    const char *num = NULL;
    if (strncmp(path, "/dev/fd/", 8) == 0)
        num = path + 8;
    else if (strncmp(path, "/proc/self/fd/", 14) == 0)
        num = path + 14;
    if (!num || *num < '0' || *num > '9')
        return -1;
    char *end;
    long n = strtol(num, &end, 10);
    return *end || n > 65535 ? -1 : (int)n;
}

static int write_fd(const struct profile *p, enum output_format fmt, int fd, const struct output_opts *opts)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    if (S_ISBLK(st.st_mode))
        return -EINVAL;
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (copy < 0)
        return -errno;
    return write_through(p, fmt, copy, false, opts);
}

int output_write_opts(const struct profile *p, enum output_format fmt, const char *path,
                      const struct output_opts *opts)
{
    static const struct output_opts defaults;
    if (!opts)
        opts = &defaults;
    if (!path || strcmp(path, "-") == 0 || strcmp(path, "/dev/stdout") == 0)
        return write_to(p, fmt, stdout, opts);
    if (strcmp(path, "/dev/stderr") == 0)
        return write_to(p, fmt, stderr, opts);
    if (self_fd(path) >= 0)
        return write_fd(p, fmt, self_fd(path), opts);
    int rc = write_special(p, fmt, path, opts);
    if (rc <= 0)
        return rc;
    char tmp[4096];
    int fd = output_tmpfile(path, tmp, sizeof(tmp));
    if (fd < 0)
        return fd;
    rc = write_through(p, fmt, fd, true, opts);
    /* rename() replaces a symlink at `path` itself; it never writes through it. */
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

int output_write(const struct profile *p, enum output_format fmt, const char *path)
{
    return output_write_opts(p, fmt, path, NULL);
}
