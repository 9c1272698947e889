/*
 * readfile — see readfile.h.
 */
#include "util/readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int readfile(const char *path, size_t max, unsigned flags, char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int err = 0;
    /* Checked before anything is read: a FIFO would block, a device or a huge file never end. */
    if (fstat(fd, &st) < 0)
        err = -errno;
    else if (!S_ISREG(st.st_mode))
        err = -EINVAL;
    else if ((uint64_t)st.st_size > max)
        err = -EFBIG;
    size_t size = err ? 0 : (size_t)st.st_size, got = 0;
    char *b = err ? NULL : malloc(size + 1);
    if (!err && !b)
        err = -ENOMEM;
    /* The writer may still be appending: take what was there when we looked. */
    while (!err && got < size) {
        ssize_t n = read(fd, b + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && !(flags & READFILE_KEEP_PARTIAL))
            err = -errno;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (err) {
        free(b);
        return err;
    }
    b[got] = '\0';
    *buf = b;
    *len = got;
    return 0;
}
