/*
 * target — the process pyebpf-sample samples: checks that it exists and may be read, its
 * thread group, start time and state (to notice its exit or a reused PID), its command line,
 * and launch mode (fork, hold until the sampler is attached, exec).
 */
#ifndef PYEBPF_TARGET_H
#define PYEBPF_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* 0, or prints one line naming why PID cannot be sampled (absent, no permission) and returns
 * -ESRCH or -EPERM. */
int target_check(pid_t pid);
/* The process (tgid) a thread id belongs to, from /proc/PID/status; pid itself when unknown. */
pid_t target_tgid(pid_t pid);
/* The number of threads of a process, from /proc/PID/stat; -ESRCH. */
int target_threads(pid_t pid);
/* Start time (clock ticks since boot) and state letter of a process, from /proc/PID/stat. */
int target_stat(pid_t pid, unsigned long long *start, char *state);
/* The CPU time all threads of a process have had (utime + stime, clock ticks; the kernel scales
 * the group's total to the exact run time), from /proc/PID/stat. 0, or -ESRCH. */
int target_cpu_ticks(pid_t pid, unsigned long long *ticks);
/* A PID target's life, watched through a pidfd where the kernel has them (readable once the
 * process's last thread has exited: one poll per check, and a reused PID cannot fool it), else
 * through /proc/PID/stat at each check (its start time tells a reused PID). */
struct target_watch {
    pid_t pid;
    unsigned long long start; /* clock ticks since boot */
    int pidfd;                /* -1: /proc */
};
/* Starts watching the process that has start time `start` now. */
void target_watch_open(struct target_watch *w, pid_t pid, unsigned long long start);
/* Whether it still runs: false once it exited, is a zombie with no live thread, or its PID names
 * another process. */
bool target_watch_alive(const struct target_watch *w);
void target_watch_close(struct target_watch *w);
/* The command line: argv joined, or /proc/PID/cmdline when argv is NULL ("" if unreadable). */
void target_cmdline(pid_t pid, char **argv, char *buf, size_t size);
/* Forks argv held on a pipe: writing a byte to *go_fd releases it into exec; *err_fd then
 * yields an errno if exec failed (EOF once exec succeeded). Returns the pid or -errno. */
pid_t target_launch(char **argv, int *go_fd, int *err_fd);

#endif
