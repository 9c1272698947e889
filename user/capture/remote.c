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

/* One call over segs[0..n); returns bytes read or -errno. */
static ssize_t readv_call(struct remote *r, struct remote_seg *segs, size_t n)
{
    struct iovec local[REMOTE_MAX_IOV], remote[REMOTE_MAX_IOV];

    for (size_t i = 0; i < n; i++) {
        local[i].iov_base = segs[i].buf;
        local[i].iov_len = segs[i].len;
        remote[i].iov_base = (void *)(uintptr_t)segs[i].addr;
        remote[i].iov_len = segs[i].len;
    }
    r->st.calls++;
    ssize_t got = process_vm_readv(r->pid, local, n, remote, n, 0);
    if (got < 0) {
        r->st.errors++;
        return -errno;
    }
    r->st.bytes += (uint64_t)got;
    return got;
}

int remote_read(struct remote *r, uint64_t addr, void *buf, size_t len)
{
    struct remote_seg s = {.addr = addr, .buf = buf, .len = len};

    if (len == 0)
        return 0;
    ssize_t got = readv_call(r, &s, 1);
    if (got < 0)
        return (int)got;
    if ((size_t)got != len) {
        r->st.errors++;
        return -EFAULT;
    }
    return 0;
}

/* Marks the segments a call of `got` bytes covered completely; returns how many. */
static size_t mark_read(struct remote_seg *segs, size_t n, size_t got)
{
    size_t i = 0;

    for (; i < n && segs[i].len <= got; i++) {
        got -= segs[i].len;
        segs[i].ok = true;
    }
    return i;
}

int remote_readv(struct remote *r, struct remote_seg *segs, size_t n, bool skip_bad)
{
    size_t nread = 0, i = 0, want_segs = 0, got_segs = 0;

    for (size_t k = 0; k < n; k++) {
        segs[k].ok = segs[k].len == 0;
        want_segs += segs[k].len != 0;
    }
    while (i < n) {
        /* Zero-length iovecs are legal but make the short-count arithmetic ambiguous: skip. */
        while (i < n && segs[i].len == 0)
            nread++, i++;
        size_t j = i;
        while (j < n && j - i < REMOTE_MAX_IOV && segs[j].len != 0)
            j++;
        if (j == i)
            break;
        size_t want = 0;
        for (size_t k = i; k < j; k++)
            want += segs[k].len;
        ssize_t got = readv_call(r, segs + i, j - i);
        if (got == -ESRCH || got == -EPERM || got == -ENOMEM || got == -EINVAL)
            return (int)got;
        size_t done = got < 0 ? 0 : mark_read(segs + i, j - i, (size_t)got);
        nread += done;
        got_segs += done;
        if (got >= 0 && (size_t)got == want) {
            i = j;
            continue;
        }
        if (got >= 0)
            r->st.errors++;
        if (!skip_bad)
            break;
        i += done + 1; /* segs[i + done] is the bad one */
    }
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
