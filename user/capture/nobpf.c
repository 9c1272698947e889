/*
 * nobpf — timer-driven user-space Python sampling (see nobpf.h).
 */
#include "capture/nobpf.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/monotime.h"

#define RESCAN_NS 100000000ull

struct nobpf_stats {
    uint64_t ticks;        /* timer expiries handled */
    uint64_t missed_ticks; /* deadlines already past when reached (collector too slow) */
    uint64_t thread_scans; /* /proc/PID/task listings */
    uint64_t reads;        /* thread reads (collect_python_sample calls) */
    uint64_t idle_reads;   /* reads with no Python frame */
    uint64_t failed_reads; /* reads that failed (thread gone, not a Python thread) */
};

struct nthread {
    pid_t tid;
    bool dead; /* its last read failed: skipped until the next listing */
    char comm[16];
};

struct nobpf {
    struct nobpf_reader rd;
    pid_t pid;
    uint64_t period_ns, next_ns, rescan_ns;
    struct nthread *th;
    size_t nth, cap;
    struct nobpf_stats st;
};

int nobpf_open(struct nobpf **out, const struct nobpf_reader *rd, pid_t pid, unsigned hz)
{
    struct nobpf *nb = calloc(1, sizeof(*nb));

    *out = NULL;
    if (!nb)
        return -ENOMEM;
    nb->rd = *rd;
    nb->pid = pid;
    nb->period_ns = 1000000000ull / (hz ? hz : 1);
    nb->next_ns = monotime_ns();
    *out = nb;
    return 0;
}

void nobpf_close(struct nobpf *nb)
{
    if (!nb)
        return;
    free(nb->th);
    free(nb);
}

void nobpf_stats(const struct nobpf *nb, struct stats out)
{
    STATS_COUNTS(out, {"nobpf_ticks", nb->st.ticks}, {"nobpf_missed_ticks", nb->st.missed_ticks},
                 {"nobpf_thread_scans", nb->st.thread_scans}, {"nobpf_thread_reads", nb->st.reads},
                 {"nobpf_idle_reads", nb->st.idle_reads}, {"nobpf_failed_reads", nb->st.failed_reads});
}

static void read_comm(pid_t pid, pid_t tid, char *comm)
{
    char path[64];
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
    comm[0] = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    n = read(fd, comm, 15);
    close(fd);
    if (n <= 0)
        n = 0;
    comm[n] = 0;
    if (n && comm[n - 1] == '\n')
        comm[n - 1] = 0;
}

/* Re-lists the target's threads; known threads keep their comm. */
static int rescan(struct nobpf *nb)
{
    struct nthread *old = nb->th, *nw;
    size_t nold = nb->nth, n = 0, cap = nold + 16;
    char path[64];
    struct dirent *d;
    DIR *dir;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)nb->pid);
    dir = opendir(path);
    if (!dir)
        return -errno;
    nw = calloc(cap, sizeof(*nw));
    if (!nw) {
        closedir(dir);
        return -ENOMEM;
    }
    while ((d = readdir(dir))) {
        pid_t tid = (pid_t)atoi(d->d_name);
        size_t i;

        if (tid <= 0)
            continue;
        if (n == cap) {
            struct nthread *g = realloc(nw, 2 * cap * sizeof(*nw));

            if (!g)
                break;
            nw = g;
            cap *= 2;
        }
        for (i = 0; i < nold && old[i].tid != tid; i++)
            ;
        if (i < nold) {
            nw[n] = old[i];
            nw[n].dead = false;
        } else {
            nw[n].tid = tid;
            nw[n].dead = false;
            read_comm(nb->pid, tid, nw[n].comm);
        }
        n++;
    }
    closedir(dir);
    free(old);
    nb->th = nw;
    nb->nth = n;
    nb->cap = cap;
    nb->st.thread_scans++;
    return 0;
}

int nobpf_tick(struct nobpf *nb, uint64_t until_ns)
{
    uint64_t wake = nb->next_ns, now;
    struct timespec ts;
    int added = 0, r;

    if (until_ns && until_ns < wake)
        wake = until_ns;
    ts.tv_sec = (time_t)(wake / 1000000000ull);
    ts.tv_nsec = (long)(wake % 1000000000ull);
    r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    if (r == EINTR)
        return -EINTR;
    now = monotime_ns();
    if (now < nb->next_ns)
        return 0; /* woke for until_ns */
    nb->st.ticks++;
    nb->next_ns += nb->period_ns;
    if (nb->next_ns <= now) {
        /* Too slow for the frequency: skip to the next deadline in the future. */
        uint64_t behind = (now - nb->next_ns) / nb->period_ns + 1;

        nb->st.missed_ticks += behind;
        nb->next_ns += behind * nb->period_ns;
    }
    r = nb->rd.attach(nb->rd.arg, nb->pid);
    if (r == -EAGAIN)
        return 0; /* still starting */
    if (r)
        return r;
    if (now >= nb->rescan_ns || !nb->nth) {
        r = rescan(nb);
        if (r == -ENOENT || r == -ESRCH)
            return 0; /* the target is gone: the caller's liveness check ends the run */
        if (r)
            return r;
        nb->rescan_ns = now + RESCAN_NS;
    }
    if (nb->rd.tick)
        (void)nb->rd.tick(nb->rd.arg, nb->pid); /* a failure only leaves the tick's GIL unknown */
    for (size_t i = 0; i < nb->nth; i++) {
        struct nthread *t = &nb->th[i];

        if (t->dead)
            continue;
        nb->st.reads++;
        r = nb->rd.read(nb->rd.arg, nb->pid, t->tid, t->comm);
        if (r == 1) {
            added++;
        } else if (r == 0) {
            nb->st.idle_reads++;
        } else if (r == -ENOMEM) {
            return r;
        } else {
            nb->st.failed_reads++;
            t->dead = true;
        }
    }
    return added;
}
