/*
 * readfile — the whole of a regular file in one buffer, for the readers of files a target writes
 * (jitdump, perf map): the file may be hostile (a FIFO, a device, huge) or still growing.
 */
#ifndef PYEBPF_READFILE_H
#define PYEBPF_READFILE_H

#include <stddef.h>

/* A read error ends the file where reading stopped (what came before it is kept), instead of
 * failing: for a file whose complete part is worth having. */
#define READFILE_KEEP_PARTIAL 1u

/* Opens `path` (following symlinks) and reads it whole into a malloc'd buffer (*buf, *len bytes,
 * plus a NUL after them). A file that grows while read is cut at the size fstat saw. Returns 0,
 * or -errno of open/fstat/read, -EINVAL when it is not a regular file, -EFBIG when it is larger
 * than `max` bytes, -ENOMEM. *buf is NULL on error; free it otherwise. */
int readfile(const char *path, size_t max, unsigned flags, char **buf, size_t *len);

#endif
