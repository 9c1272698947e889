/*
 * Files of the perf sinks: safe creation, whole writes, one message on failure, fork safety.
 *
 * Fork: a child inherits the parent's fd, so its records would land in jit-<parent>.dump
 * under the wrong PID. The atfork child handler only bumps a counter; each sink compares it
 * with the value it saw when it opened its file and reopens under the new PID on its next
 * write. The prepare/parent/child handlers also take every sink's lock around fork(), so a
 * child never starts with a lock held by a thread that does not exist in it.
 */
#include "sinkfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sinkfile *registry;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static volatile unsigned fork_gen;

static void before_fork(void)
{
    pthread_mutex_lock(&registry_lock);
    for (struct sinkfile *s = registry; s; s = s->next)
        pthread_mutex_lock(&s->lock);
}

static void after_fork_parent(void)
{
    for (struct sinkfile *s = registry; s; s = s->next)
        pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(&registry_lock);
}

static void after_fork_child(void)
{
    fork_gen++;
    after_fork_parent();
}

static void install_atfork(void)
{
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

unsigned sinkfile_fork_gen(void)
{
    return fork_gen;
}

void sinkfile_init(struct sinkfile *sf, const char *what)
{
    pthread_once(&atfork_once, install_atfork);
    memset(sf, 0, sizeof(*sf));
    pthread_mutex_init(&sf->lock, NULL);
    sf->fd = -1;
    sf->what = what;
    sf->fork_gen = fork_gen;
    pthread_mutex_lock(&registry_lock);
    sf->next = registry;
    registry = sf;
    pthread_mutex_unlock(&registry_lock);
}

void sinkfile_fini(struct sinkfile *sf)
{
    pthread_mutex_lock(&registry_lock);
    for (struct sinkfile **pp = &registry; *pp; pp = &(*pp)->next) {
        if (*pp == sf) {
            *pp = sf->next;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    if (sf->fd >= 0)
        close(sf->fd);
    sf->fd = -1;
    pthread_mutex_destroy(&sf->lock);
}

int sinkfile_create_excl(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    return fd >= 0 ? fd : -errno;
}

int sinkfile_open_append(const char *path)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    /* An existing file is ours to extend only if nobody else can have planted or shared it:
     * perf itself refuses a map file that is not owned by the user reading it. */
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1 ||
        (st.st_mode & (S_IWGRP | S_IWOTH))) {
        close(fd);
        return -EPERM;
    }
    return fd;
}

void sinkfile_fail(struct sinkfile *sf, const char *fmt, ...)
{
    if (sf->disabled)
        return;
    sf->disabled = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "pyjit: %s: %s; %s output switched off\n", sf->what, msg, sf->what);
}

int sinkfile_write(struct sinkfile *sf, const void *buf, size_t len)
{
    const char *p = buf;
    if (sf->disabled || sf->fd < 0)
        return -EBADF;
    while (len > 0) {
        ssize_t n = write(sf->fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = n < 0 ? -errno : -EIO;
            sinkfile_fail(sf, "write failed: %s", strerror(-err));
            return err;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
