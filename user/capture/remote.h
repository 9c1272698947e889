/*
 * remote — the one module that reads the target's memory.
 *
 * Every read is a process_vm_readv call with one iovec per wanted object, of the object's exact
 * size (never a page "just in case"), or a window over memory where the objects wanted are known
 * to lie close together (a thread's data-stack chunk, the thread states). Callers describe what
 * they want as an array of segments; one call fetches them all (split only at the kernel's
 * IOV_MAX):
 *
 *   segs[0] {addr=tstate, len=168}  ─┐
 *   segs[1] {addr=frame0, len=72}    ├─ one process_vm_readv, three iovecs
 *   segs[2] {addr=frame1, len=72}   ─┘
 *
 * The kernel stops a call at the first iovec it cannot read and returns the byte count read so
 * far; remote_readv turns that into a per-segment `ok` flag and, when asked, goes on with the
 * segments after the bad one in a further call; remote_read_upto takes what a window's one call
 * could read. Counters record every call.
 */
#ifndef PYEBPF_REMOTE_H
#define PYEBPF_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct remote_stats {
    uint64_t calls;             /* process_vm_readv calls */
    uint64_t bytes;             /* bytes returned by them */
    uint64_t errors;            /* calls that failed or came back short */
    uint64_t batched_attempts;  /* remote_readv requests with more than one segment */
    uint64_t batched_successes; /* ... whose segments were all read */
    uint64_t segs_requested;    /* segments asked for in batched requests */
    uint64_t segs_read;         /* ... and read completely */
};

struct remote {
    pid_t pid;
    struct remote_stats st;
};

struct remote_seg {
    uint64_t addr;
    void *buf;
    size_t len;
    bool ok; /* set by remote_readv: the whole segment was read */
};

#define REMOTE_SEG(a, b, l) ((struct remote_seg){.addr = (a), .buf = (b), .len = (l)})

void remote_init(struct remote *r, pid_t pid);

/* Reads `len` bytes at `addr` in one call. Returns 0, -EFAULT when short, or -errno (-ESRCH when
 * the process is gone, -EPERM without ptrace rights). */
int remote_read(struct remote *r, uint64_t addr, void *buf, size_t len);

/* Reads what it can of `len` bytes at `addr` in one call: a window whose end may lie past the
 * mapping. Returns the bytes read from addr on (0 when addr itself cannot be read; a short read
 * is no error), or -errno when the process cannot be read at all. */
ssize_t remote_read_upto(struct remote *r, uint64_t addr, void *buf, size_t len);

/* Reads all segments, in as few calls as the kernel allows. With skip_bad, a segment that fails
 * is marked !ok and the rest are read by further calls; without, reading stops at the first bad
 * segment. Returns the number of segments read (ok), or -errno when the process cannot be read at
 * all (-ESRCH, -EPERM). Zero-length segments are ok without a read. */
int remote_readv(struct remote *r, struct remote_seg *segs, size_t n, bool skip_bad);

#endif
