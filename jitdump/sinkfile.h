/*
 * What the jitdump and perf map sinks share: a file that is opened without following
 * symlinks, written with whole writes under a lock, switched off after its first error with
 * one message, and reopened under the child's PID after fork().
 */
#ifndef PYJIT_SINKFILE_H
#define PYJIT_SINKFILE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct sinkfile {
    pthread_mutex_t lock;
    int fd;
    bool disabled;         /* after a write error or a refused file */
    unsigned fork_gen;     /* sinkfile_fork_gen() when fd was opened */
    const char *what;      /* "jitdump" or "perf map", for messages */
    struct sinkfile *next; /* registry of open sink files (for the fork handlers) */
};

/* Initialises sf (fd -1) and adds it to the registry whose pthread_atfork handlers keep every
 * lock consistent across fork() and count forks. */
void sinkfile_init(struct sinkfile *sf, const char *what);
/* Removes sf from the registry and closes its fd. */
void sinkfile_fini(struct sinkfile *sf);

/* Number of fork() calls this process has gone through as the child. */
unsigned sinkfile_fork_gen(void);
/* True (caller holds sf->lock) when the fd was inherited from the parent. */
static inline bool sinkfile_stale(const struct sinkfile *sf)
{
    return sf->fork_gen != sinkfile_fork_gen();
}

/* Creates path exclusively: O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600 (O_RDWR).
 * Returns the fd or a negative errno. */
int sinkfile_create_excl(const char *path);
/* Opens path for appending, creating it (0600) if missing; an existing file is accepted only
 * if it is a regular file owned by us, with one link and no group/other write permission.
 * Returns the fd or a negative errno (-EPERM for a refused file). */
int sinkfile_open_append(const char *path);

/* Writes len bytes with one write() (more only if the kernel writes short); on failure the
 * sink is switched off with one message on stderr. Caller holds sf->lock. 0 or -errno. */
int sinkfile_write(struct sinkfile *sf, const void *buf, size_t len);

/* Prints one "pyjit: WHAT: ..." message on stderr and switches the sink off. */
void sinkfile_fail(struct sinkfile *sf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
