/*
 * target — facts about the sampled process from /proc, and launch mode (see target.h).
 */
#include "target.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* /proc/PID/stat from its state on (comm may hold spaces and parentheses), into buf. */
static const char *stat_fields(pid_t pid, char *buf, size_t size)
{
    char path[64];
    ssize_t n;
    char *p;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = 0;
    p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p + 2 : NULL;
}

int target_cpu_ticks(pid_t pid, unsigned long long *ticks)
{
    char buf[1024];
    unsigned long long u, s;
    const char *p = stat_fields(pid, buf, sizeof(buf));

    if (!p || sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &u, &s) != 2)
        return -ESRCH;
    *ticks = u + s;
    return 0;
}

int target_threads(pid_t pid)
{
    char buf[1024];
    int n;
    const char *p = stat_fields(pid, buf, sizeof(buf));

    if (!p || sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %d", &n) != 1)
        return -ESRCH;
    return n;
}

int target_stat(pid_t pid, unsigned long long *start, char *state)
{
    char buf[1024];
    const char *p = stat_fields(pid, buf, sizeof(buf));

    if (!p)
        return -ESRCH;
    if (sscanf(p,
               "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
               "%*d %*d %llu",
               state, start) != 2)
        return -EINVAL;
    return 0;
}

pid_t target_tgid(pid_t pid)
{
    char path[64], line[256];
    pid_t tgid = pid;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return pid;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Tgid: %d", &tgid) == 1)
            break;
    fclose(f);
    return tgid > 0 ? tgid : pid;
}

int target_check(pid_t pid)
{
    char path[64];

    if (kill(pid, 0) && errno == ESRCH) {
        fprintf(stderr, "pyebpf-sample: no process with PID %d\n", (int)pid);
        return -ESRCH;
    }
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        /* Opening passes for anyone; reading is where the ptrace access check applies. */
        char c;
        ssize_t n = read(fd, &c, 1);
        int e = errno;

        close(fd);
        if (n < 0) {
            fd = -1;
            errno = e;
        }
    }
    if (fd < 0) {
        int err = errno;

        if (err == ENOENT) {
            fprintf(stderr, "pyebpf-sample: no process with PID %d\n", (int)pid);
            return -ESRCH;
        }
        fprintf(stderr,
                "pyebpf-sample: no permission to read the memory map of PID %d (%s): "
                "needs the same user or CAP_SYS_PTRACE\n",
                (int)pid, strerror(err));
        return -EPERM;
    }
    return 0;
}

void target_cmdline(pid_t pid, char **argv, char *buf, size_t size)
{
    size_t n = 0;

    buf[0] = 0;
    if (argv) {
        for (; *argv && n + 1 < size; argv++)
            n += snprintf(buf + n, size - n, "%s%s", n ? " " : "", *argv);
        return;
    }
    char path[64];
    FILE *f;
    int c;

    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return;
    while ((c = fgetc(f)) != EOF && n + 1 < size)
        buf[n++] = c ? c : ' ';
    while (n && buf[n - 1] == ' ')
        n--;
    buf[n] = 0;
    fclose(f);
}

pid_t target_launch(char **argv, int *go_fd, int *err_fd)
{
    int go[2], ep[2];
    pid_t pid;

    if (pipe2(go, O_CLOEXEC))
        return -errno;
    if (pipe2(ep, O_CLOEXEC)) {
        int err = -errno;

        close(go[0]);
        close(go[1]);
        return err;
    }
    pid = fork();
    if (pid < 0) {
        int err = -errno;

        close(go[0]);
        close(go[1]);
        close(ep[0]);
        close(ep[1]);
        return err;
    }
    if (pid == 0) {
        char c;
        int e;

        close(go[1]);
        close(ep[0]);
        if (read(go[0], &c, 1) != 1)
            _exit(127); /* the sampler gave up before attaching */
        execvp(argv[0], argv);
        e = errno;
        if (write(ep[1], &e, sizeof(e)) < 0)
            _exit(127);
        _exit(127);
    }
    close(go[0]);
    close(ep[1]);
    *go_fd = go[1];
    *err_fd = ep[0];
    return pid;
}

/* A thread of pid that is not a zombie (the group leader stays a zombie after pthread_exit
 * while the other threads run on). */
static bool any_thread_running(pid_t pid)
{
    char path[64];
    struct dirent *d;
    bool found = false;
    DIR *dir;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    dir = opendir(path);
    if (!dir)
        return false;
    while (!found && (d = readdir(dir))) {
        char p2[128], buf[512], *c, state;
        FILE *f;

        if (d->d_name[0] == '.')
            continue;
        snprintf(p2, sizeof(p2), "/proc/%d/task/%.20s/stat", (int)pid, d->d_name);
        f = fopen(p2, "re");
        if (!f)
            continue;
        if (fgets(buf, sizeof(buf), f) && (c = strrchr(buf, ')')) && sscanf(c + 2, "%c", &state) == 1)
            found = state != 'Z' && state != 'X';
        fclose(f);
    }
    closedir(dir);
    return found;
}

static bool proc_alive(pid_t pid, unsigned long long start)
{
    unsigned long long now_start;
    char state;

    if (target_stat(pid, &now_start, &state) || now_start != start)
        return false; /* gone, or the PID now names another process */
    if (state == 'Z' || state == 'X')
        return any_thread_running(pid);
    return true;
}

void target_watch_open(struct target_watch *w, pid_t pid, unsigned long long start)
{
    *w = (struct target_watch){.pid = pid, .start = start, .pidfd = -1};
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);

    if (fd < 0)
        return;
    /* The PID could have been reused between reading its start time and opening the pidfd. */
    if (!proc_alive(pid, start)) {
        close(fd);
        return;
    }
    w->pidfd = fd;
#endif
}

bool target_watch_alive(const struct target_watch *w)
{
    struct pollfd p = {.fd = w->pidfd, .events = POLLIN};

    if (w->pidfd < 0)
        return proc_alive(w->pid, w->start);
    return poll(&p, 1, 0) == 0;
}

void target_watch_close(struct target_watch *w)
{
    if (w->pidfd >= 0)
        close(w->pidfd);
    w->pidfd = -1;
}
