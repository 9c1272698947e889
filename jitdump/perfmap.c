/*
 * perf map writer: DIR/perf-PID.map (perf looks in /tmp), one line per region:
 *
 *   START SIZE name\n        START and SIZE in hex without 0x
 *
 * perf reads the file when it resolves samples, so each line goes out with one write() on an
 * O_APPEND descriptor: lines of several writers in one process (another JIT, CPython's own
 * -X perf) never interleave. An existing file is appended to only if it is a regular file that
 * we own (see sinkfile_open_append); a symlink is never followed.
 */
#include "jitdump.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sinkfile.h"

struct perfmap {
    struct sinkfile f;
    char dir[PATH_MAX];
    char path[PATH_MAX];
};

/* Caller holds pm->f.lock. */
static int perfmap_reopen(struct perfmap *pm)
{
    int n = snprintf(pm->path, sizeof(pm->path), "%s/perf-%d.map", pm->dir, (int)getpid());
    if (n < 0 || (size_t)n >= sizeof(pm->path))
        return -ENAMETOOLONG;
    int fd = sinkfile_open_append(pm->path);
    if (fd < 0)
        return fd;
    if (pm->f.fd >= 0)
        close(pm->f.fd);
    pm->f.fd = fd;
    pm->f.fork_gen = sinkfile_fork_gen();
    return 0;
}

int perfmap_open(struct perfmap **out, const char *dir)
{
    *out = NULL;
    struct perfmap *pm = calloc(1, sizeof(*pm));
    if (!pm)
        return -ENOMEM;
    if (!dir || !*dir)
        dir = "/tmp";
    if (strlen(dir) >= sizeof(pm->dir) - 32) {
        free(pm);
        return -ENAMETOOLONG;
    }
    strcpy(pm->dir, dir);
    sinkfile_init(&pm->f, "perf map");
    int err = perfmap_reopen(pm);
    if (err < 0) {
        fprintf(stderr, "pyjit: perf map: cannot use %s: %s\n", pm->path,
                err == -EPERM ? "exists and is not a private file of ours" : strerror(-err));
        sinkfile_fini(&pm->f);
        free(pm);
        return err;
    }
    *out = pm;
    return 0;
}

int perfmap_write(struct perfmap *pm, uint64_t addr, uint64_t size, const char *name)
{
    if (!pm)
        return -EINVAL;
    if (!name)
        name = "";
    size_t nlen = strcspn(name, "\n"); /* a newline would start a bogus line */
    if (nlen > 4096)
        nlen = 4096;
    char stackbuf[256];
    size_t cap = nlen + 2 * 17 + 2;
    char *line = cap <= sizeof(stackbuf) ? stackbuf : malloc(cap);
    if (!line)
        return -ENOMEM;
    int n = snprintf(line, cap, "%" PRIx64 " %" PRIx64 " %.*s\n", addr, size, (int)nlen, name);

    int err = 0;
    pthread_mutex_lock(&pm->f.lock);
    if (pm->f.disabled) {
        err = -EBADF;
    } else if (sinkfile_stale(&pm->f) && (err = perfmap_reopen(pm)) < 0) {
        sinkfile_fail(&pm->f, "cannot open %s after fork: %s", pm->path, strerror(-err));
    } else {
        err = sinkfile_write(&pm->f, line, (size_t)n);
    }
    pthread_mutex_unlock(&pm->f.lock);
    if (line != stackbuf)
        free(line);
    return err;
}

void perfmap_close(struct perfmap *pm)
{
    if (!pm)
        return;
    /* The file stays: perf reads it after the process is gone. */
    sinkfile_fini(&pm->f);
    free(pm);
}
