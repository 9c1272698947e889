/*
 * pyreads — remote reads per sample of the Python frame reader (user/python/pystack), driven like a
 * sampler: threads of the target in turn, one read every INTERVAL µs, and one line of numbers:
 *
 *   samples=N threads=T frames_per_sample=F calls_per_sample=C bytes_per_sample=B
 *   us_per_sample=U steady_pct=S broken_pct=K unreadable_pct=R
 *
 * calls/bytes: process_vm_readv calls and bytes returned per sample (the reader's own
 * counters); steady_pct: samples served by the one predicted read alone; broken_pct: samples
 * whose chain ended early (PYSTACK_BROKEN: a frame that is none, a loop, the budget);
 * unreadable_pct: samples holding a bare "<unreadable>" frame (no code object where a frame
 * pointed: a frame caught half-written, or overwritten after the thread moved on).
 *
 *   -m cached   one reader for the whole run (thread, prediction, code and frame caches warm)
 *   -m cold     a fresh reader for every sample: each read starts with every cache empty (the
 *               baseline "caches off"); attaching to the runtime is not counted
 *
 * Usage: pyreads [-m cached|cold] [-n SAMPLES] [-i USEC] PID
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/remote.h"
#include "profile/profile.h"
#include "python/pystack.h"
#include "util/monotime.h"

#define MAX_TIDS 1024

static double now_us(void)
{
    return (double)monotime_ns() / 1e3;
}

static int list_tids(pid_t pid, pid_t *tids, int max)
{
    char path[64];
    int n = 0;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    d = opendir(path);
    if (!d)
        return -errno;
    for (struct dirent *e; (e = readdir(d)) && n < max;)
        if (e->d_name[0] != '.')
            tids[n++] = atoi(e->d_name);
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    long samples = 10000, interval = 200;
    int opt, cold = 0, ntids, nread = 0;
    uint64_t calls = 0, bytes = 0, frames = 0, steady = 0, broken = 0, unreadable = 0;
    static struct pystack_frame out[1024];
    static pid_t tids[MAX_TIDS];
    struct pystack_opts o = {0};
    struct pystack *ps = NULL;
    struct profile prof;
    char err[512] = "";
    double us = 0;
    pid_t pid;

    while ((opt = getopt(argc, argv, "m:n:i:")) != -1) {
        switch (opt) {
        case 'm':
            cold = !strcmp(optarg, "cold");
            break;
        case 'n':
            samples = atol(optarg);
            break;
        case 'i':
            interval = atol(optarg);
            break;
        default:
            fprintf(stderr, "usage: pyreads [-m cached|cold] [-n SAMPLES] [-i USEC] PID\n");
            return 2;
        }
    }
    if (optind >= argc || samples < 1) {
        fprintf(stderr, "usage: pyreads [-m cached|cold] [-n SAMPLES] [-i USEC] PID\n");
        return 2;
    }
    pid = atoi(argv[optind]);
    ntids = list_tids(pid, tids, MAX_TIDS);
    if (ntids <= 0) {
        fprintf(stderr, "pyreads: no threads in /proc/%d/task\n", (int)pid);
        return 1;
    }
    if (profile_init(&prof))
        return 1;
    for (long i = 0; i < samples * 2 && nread < samples; i++) {
        pid_t tid = tids[i % ntids];
        unsigned flags = 0;
        int n;

        if (!ps && pystack_open(&ps, pid, &prof, &o, err, sizeof(err))) {
            fprintf(stderr, "pyreads: %s\n", err[0] ? err : "cannot attach");
            profile_free(&prof);
            return 1;
        }
        struct remote_stats before = *pystack_remote_stats(ps);
        struct pystack_stats sb, sa;
        pystack_get_stats(ps, &sb);
        double t0 = now_us();
        n = pystack_read(ps, tid, out, sizeof(out) / sizeof(out[0]), &flags);
        double t1 = now_us();
        if (n == -ESRCH) /* not a Python thread (or gone) */
            goto next;
        if (n < 0) {
            fprintf(stderr, "pyreads: thread %d: %s\n", (int)tid, strerror(-n));
            goto next;
        }
        pystack_get_stats(ps, &sa);
        nread++;
        us += t1 - t0;
        frames += (unsigned)n;
        calls += pystack_remote_stats(ps)->calls - before.calls;
        bytes += pystack_remote_stats(ps)->bytes - before.bytes;
        steady += sa.steady_samples - sb.steady_samples;
        broken += (flags & PYSTACK_BROKEN) != 0;
        for (int k = 0; k < n; k++) {
            const struct frame *f = &prof.frames[out[k].frame];
            if (!f->file && !strcmp(f->name, PYSTACK_REFUSED)) {
                unreadable++;
                break;
            }
        }
    next:
        if (cold) {
            pystack_close(ps);
            ps = NULL;
        }
        if (interval)
            usleep((useconds_t)interval);
    }
    pystack_close(ps);
    profile_free(&prof);
    if (!nread) {
        fprintf(stderr, "pyreads: no Python thread could be read\n");
        return 1;
    }
    printf("samples=%d threads=%d frames_per_sample=%.1f calls_per_sample=%.3f bytes_per_sample=%.0f "
           "us_per_sample=%.2f steady_pct=%.1f broken_pct=%.2f unreadable_pct=%.2f\n",
           nread, ntids, (double)frames / nread, (double)calls / nread, (double)bytes / nread, us / nread,
           100.0 * steady / nread, 100.0 * broken / nread, 100.0 * unreadable / nread);
    return 0;
}
