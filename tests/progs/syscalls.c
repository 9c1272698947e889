/*
 * syscalls — a workload that spends most of its time in the kernel: small writes to /dev/null,
 * getpid through syscall(2), and reads of /dev/zero (the kernel clears the buffer).
 *
 * Usage: syscalls [SECONDS]   (default 3)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char buf[65536];

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void do_writes(int fd)
{
    for (int i = 0; i < 1000; i++)
        if (write(fd, buf, 1) != 1)
            abort();
}

__attribute__((noinline)) void do_getpid(void)
{
    for (int i = 0; i < 1000; i++)
        syscall(SYS_getpid);
}

__attribute__((noinline)) void do_reads(int fd)
{
    for (int i = 0; i < 20; i++)
        if (read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
            abort();
}

int main(int argc, char **argv)
{
    double end = now() + (argc > 1 ? atof(argv[1]) : 3.0);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);

    if (null < 0 || zero < 0) {
        perror("syscalls: open");
        return 1;
    }
    while (now() < end) {
        do_writes(null);
        do_getpid();
        do_reads(zero);
    }
    return 0;
}
