/*
 * nobpf — `--no-bpf`: Python frames sampled from user space on a timer, for machines where BPF
 * and perf events are not allowed (ptrace rights over the target are enough).
 *
 *   every 1/F s (CLOCK_MONOTONIC, absolute deadlines, missed ticks skipped and counted):
 *     top: the GIL's holder (one remote call)
 *     every thread of the target:  pystack_read (one batched process_vm_readv on a steady
 *                                  stack) → thread frame ; Python frames root → leaf
 *   every 100 ms: re-list /proc/PID/task (new threads, their comm); a thread whose read fails
 *                 is dropped until the next listing
 *
 * Samples are wall-clock: every Python thread is sampled at each tick, running or not (no
 * kernel tells which thread is on a CPU), and there are no native frames (no registers, no
 * stack copy). A thread with no Python frame at a tick adds nothing.
 */
#ifndef PYEBPF_NOBPF_H
#define PYEBPF_NOBPF_H

#include <stdint.h>
#include <sys/types.h>

#include "util/stats.h"

struct nobpf;

/* What each tick drives (the collector's collect_python_attach and collect_python_sample):
 *   attach  tried before the tick's reads: 0 attached, -EAGAIN not yet (the tick reads nothing),
 *           another negative errno is what nobpf_tick returns;
 *   tick    (NULL: none) once per tick after attach, before the reads: what the whole process is
 *           doing now (top: which thread holds the GIL); its result is ignored;
 *   read    one thread now: 1 a sample was added, 0 no Python frame, -ENOMEM is what nobpf_tick
 *           returns, any other error drops the thread until the next listing. */
struct nobpf_reader {
    int (*attach)(void *arg, pid_t pid);
    int (*tick)(void *arg, pid_t pid);
    int (*read)(void *arg, pid_t pid, pid_t tid, const char *comm);
    void *arg;
};

/* `rd` is copied. */
int nobpf_open(struct nobpf **out, const struct nobpf_reader *rd, pid_t pid, unsigned hz);
/* Sleeps until the next deadline (or `until_ns` on CLOCK_MONOTONIC, if sooner and non-zero),
 * then samples every thread if the deadline passed. Returns the number of samples added, -EINTR
 * when a signal cut the sleep, -ENOENT when the target is not Python, or another -errno. */
int nobpf_tick(struct nobpf *nb, uint64_t until_ns);
/* The rows for --stats: nobpf_ticks, nobpf_missed_ticks, nobpf_thread_scans, nobpf_thread_reads,
 * nobpf_idle_reads, nobpf_failed_reads. */
void nobpf_stats(const struct nobpf *nb, struct stats out);
void nobpf_close(struct nobpf *nb);

#endif
