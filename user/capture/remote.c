/* remote — batched process_vm_readv of the target (see remote.h). */
#include "capture/remote.h"

#include <errno.h>
#include <limits.h>
#include <sys/uio.h>

/* The kernel refuses more iovecs than UIO_MAXIOV (1024) in one call. */
#define REMOTE_MAX_IOV 1024

void remote_init(struct remote *r, pid_t pid)
{
    r->pid = pid;
    r->st = (struct remote_stats){0};
}

/* One call over the n iovecs; returns bytes read or -errno (with hole_ok, 0 for -EFAULT: a
 * window that starts where nothing is mapped reads nothing, and is no error). */
static ssize_t readv_call(struct remote *r, const struct iovec *local, const struct iovec *remote, size_t n,
                          bool hole_ok)
{
    r->st.calls++;
    ssize_t got = process_vm_readv(r->pid, local, n, remote, n, 0);
    if (got < 0) {
        if (hole_ok && errno == EFAULT)
            return 0;
        r->st.errors++;
        return -errno;
    }
    r->st.bytes += (uint64_t)got;
    return got;
}

int remote_read(struct remote *r, uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};

    if (len == 0)
        return 0;
    ssize_t got = readv_call(r, &local, &remote, 1, false);
    if (got < 0)
        return (int)got;
    if ((size_t)got != len) {
        r->st.errors++;
        return -EFAULT;
    }
    return 0;
}

ssize_t remote_read_upto(struct remote *r, uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};

    return readv_call(r, &local, &remote, 1, true);
}

int remote_readv(struct remote *r, struct remote_seg *segs, size_t n, bool skip_bad)
{
    struct iovec local[REMOTE_MAX_IOV], remote[REMOTE_MAX_IOV];
    uint32_t at[REMOTE_MAX_IOV]; /* the segment of each iovec */
    size_t i = 0, stop = n, want_segs = 0, got_segs = 0, nread = 0;

    for (size_t k = 0; k < n; k++) {
        segs[k].ok = segs[k].len == 0;
        want_segs += segs[k].len != 0;
    }
    while (i < n) {
        /* Zero-length segments are no iovecs: legal, but they would make a short count
         * ambiguous, and splitting the call at them made one call per segment of a list
         * that alternates. */
        size_t m = 0, j = i;
        for (; j < n && m < REMOTE_MAX_IOV; j++) {
            if (!segs[j].len)
                continue;
            local[m] = (struct iovec){segs[j].buf, segs[j].len};
            remote[m] = (struct iovec){(void *)(uintptr_t)segs[j].addr, segs[j].len};
            at[m++] = (uint32_t)j;
        }
        if (!m)
            break;
        ssize_t got = readv_call(r, local, remote, m, false);
        if (got == -ESRCH || got == -EPERM || got == -ENOMEM || got == -EINVAL)
            return (int)got;
        size_t done = 0, left = got < 0 ? 0 : (size_t)got;
        for (; done < m && segs[at[done]].len <= left; done++) { /* the ones read completely */
            left -= segs[at[done]].len;
            segs[at[done]].ok = true;
        }
        got_segs += done;
        if (done == m) {
            i = j;
            continue;
        }
        if (got >= 0)
            r->st.errors++;
        if (!skip_bad) {
            stop = at[done];
            break;
        }
        i = at[done] + 1; /* the kernel stopped at that one */
    }
    for (size_t k = 0; k < stop; k++)
        nread += segs[k].ok;
    /* Batched: more than one iovec wanted (zero-length segments are no iovecs). */
    if (want_segs > 1) {
        r->st.batched_attempts++;
        r->st.segs_requested += want_segs;
        r->st.segs_read += got_segs;
        if (got_segs == want_segs)
            r->st.batched_successes++;
    }
    return (int)nread;
}
