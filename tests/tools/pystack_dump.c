/*
 * pystack-dump — prints the Python stacks of a process with the remote reader, and measures it.
 *
 *   pystack-dump [-d DEPTH] [-n COUNT] [-i USEC] [-t TID] [-s] [-q] [-x] PID
 *
 * Each stack is printed leaf first, one frame a line: "  qualname file:line [entry]". Without
 * -t every thread of PID is read. -n reads each stack COUNT times (-i apart) and prints the last;
 * -x reads each predicted frame with its own iovec (no coalescing of neighbours).
 * -s adds the reader's statistics, then the cost of the first (cold) read of each thread and of
 * the later (warm) reads: calls, bytes and microseconds per read, and how many warm reads found
 * the stack changed (needed more than the one predicted call) and what those cost.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "profile/profile.h"
#include "python/pystack.h"
#include "util/monotime.h"

static double now_us(void)
{
    return (double)monotime_ns() / 1e3;
}

static void print_stack(const struct profile *p, pid_t tid, const struct pystack_frame *f, int n,
                        unsigned flags)
{
    printf("thread %d frames %d%s%s%s\n", (int)tid, n, flags & PYSTACK_TRUNCATED ? " truncated" : "",
           flags & PYSTACK_BROKEN ? " broken" : "", flags & PYSTACK_PREDICTED ? " predicted" : "");
    for (int i = 0; i < n; i++) {
        const struct frame *fr = &p->frames[f[i].frame];
        printf("  %s %s:%u%s\n", fr->name, fr->file ? fr->file : "?", fr->line, f[i].entry ? " entry" : "");
    }
}

int main(int argc, char **argv)
{
    unsigned depth = 0, count = 1, interval = 0;
    int opt, quiet = 0, stats = 0, only_tid = 0, exact = 0;

    while ((opt = getopt(argc, argv, "d:n:i:t:sqx")) != -1) {
        switch (opt) {
        case 'd':
            depth = (unsigned)atoi(optarg);
            break;
        case 'n':
            count = (unsigned)atoi(optarg);
            break;
        case 'i':
            interval = (unsigned)atoi(optarg);
            break;
        case 't':
            only_tid = atoi(optarg);
            break;
        case 's':
            stats = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'x':
            exact = 1;
            break;
        default:
            fprintf(stderr, "usage: %s [-d DEPTH] [-n COUNT] [-i USEC] [-t TID] [-s] [-q] [-x] PID\n",
                    argv[0]);
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "pystack-dump: PID missing\n");
        return 2;
    }
    pid_t pid = atoi(argv[optind]);
    struct profile prof;
    struct pystack *ps;
    struct pystack_opts o = {.max_depth = depth, .exact_reads = exact};
    char err[512] = "";
    if (profile_init(&prof) != 0)
        return 1;
    int rc = pystack_open(&ps, pid, &prof, &o, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "pystack-dump: %s\n", err[0] ? err : strerror(-rc));
        profile_free(&prof);
        return 1;
    }
    const struct pyrt *rt = pystack_runtime(ps);
    printf("python %s %s%s\n", rt->version, rt->path, rt->shared_lib ? " (shared)" : " (static)");

    pid_t tids[1024];
    int ntids = 0;
    if (only_tid) {
        tids[ntids++] = only_tid;
    } else {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        DIR *d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d)) && ntids < 1024;)
            if (e->d_name[0] != '.')
                tids[ntids++] = atoi(e->d_name);
        if (d)
            closedir(d);
    }
    size_t max = depth ? depth : 1024;
    struct pystack_frame *frames = calloc(max, sizeof(*frames));
    double us = 0, cold_us = 0, warm_us = 0;
    unsigned reads = 0, cold = 0, warm = 0, changed = 0;
    uint64_t cold_calls = 0, cold_bytes = 0, warm_calls = 0, warm_bytes = 0, changed_calls = 0;
    for (int t = 0; t < ntids && frames; t++) {
        int n = 0;
        unsigned flags = 0;
        for (unsigned k = 0; k < count; k++) {
            const struct remote_stats before = *pystack_remote_stats(ps);
            double t0 = now_us();
            n = pystack_read(ps, tids[t], frames, max, &flags);
            double dt = now_us() - t0;
            uint64_t calls = pystack_remote_stats(ps)->calls - before.calls;
            uint64_t bytes = pystack_remote_stats(ps)->bytes - before.bytes;
            us += dt;
            reads++;
            if (n < 0)
                break;
            if (k == 0) {
                cold++, cold_us += dt, cold_calls += calls, cold_bytes += bytes;
            } else {
                warm++, warm_us += dt, warm_calls += calls, warm_bytes += bytes;
                if (calls > 1)
                    changed++, changed_calls += calls;
            }
            if (interval)
                usleep(interval);
        }
        if (n == -ESRCH)
            continue;
        if (n < 0) {
            fprintf(stderr, "pystack-dump: thread %d: %s\n", (int)tids[t], strerror(-n));
            continue;
        }
        if (!quiet)
            print_stack(&prof, tids[t], frames, n, flags);
    }
    if (stats) {
        pystack_stats(ps, stats_file(stdout));
        printf("us_per_read: %.2f\n", reads ? us / reads : 0.0);
        printf("cold_reads: %u\ncold_calls_per_read: %.2f\ncold_bytes_per_read: %.0f\n"
               "cold_us_per_read: %.2f\n",
               cold, cold ? (double)cold_calls / cold : 0.0, cold ? (double)cold_bytes / cold : 0.0,
               cold ? cold_us / cold : 0.0);
        printf("warm_reads: %u\nwarm_calls_per_read: %.3f\nwarm_bytes_per_read: %.0f\n"
               "warm_us_per_read: %.2f\n",
               warm, warm ? (double)warm_calls / warm : 0.0, warm ? (double)warm_bytes / warm : 0.0,
               warm ? warm_us / warm : 0.0);
        printf("warm_changed_reads: %u\nchanged_calls_per_read: %.2f\n", changed,
               changed ? (double)changed_calls / changed : 0.0);
    }
    free(frames);
    pystack_close(ps);
    profile_free(&prof);
    return 0;
}
