/*
 * taskiter — the in-kernel snapshot of `pyebpf-sample dump`: loads bpf/taskdump.bpf.c, runs its
 * task iterator once over one process's threads and keeps what it wrote, a dump_task and a
 * sample record per thread (bpf/taskdump.h), for the caller to feed to the collector.
 *
 * The iterator's whole output is read before taskiter_snapshot returns, so every thread is
 * recorded before the caller stops or reads anything.
 */
#ifndef PYEBPF_TASKITER_H
#define PYEBPF_TASKITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "taskdump.h"

struct taskiter_thread {
    const struct dump_task *task;
    const struct sample_event *ev; /* ev->stack_len bytes of stack after it */
    size_t len;                    /* of *ev, stack included */
};

struct taskiter {
    char *buf; /* the iterator's output */
    size_t len;
    struct taskiter_thread *t;
    size_t n;
    uint64_t load_ns; /* opening and loading the program (verifier included) */
    uint64_t pass_ns; /* the iterator's one pass, first thread to last: the span of the snapshot */
};

/* Runs the iterator over the threads of `tgid`: stack copies of up to `stack_copy` bytes (a
 * multiple of 8, at most SAMPLE_STACK_COPY_DEFAULT), kernel stacks when `kstack`. 0, or a
 * negative errno with the reason in err (-EPERM: no BPF rights; -EOPNOTSUPP: the caller is in a
 * PID namespace other than the initial one; -ESRCH: no thread met). */
int taskiter_snapshot(struct taskiter *ti, pid_t tgid, uint32_t stack_copy, bool kstack, bool verbose,
                      char *err, size_t errlen);
/* The letter /proc/PID/stat shows for a dump_task's state bits (R, S, D, T, t, Z, X, P, I). */
char taskiter_state_letter(uint32_t state);
void taskiter_free(struct taskiter *ti);

#endif
