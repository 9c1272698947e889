/*
 * dump_state — the state `pyebpf-sample dump` shares between its files: dump.c takes the
 * snapshot, dump_print.c prints it (text, JSON, how it was taken).
 */
#ifndef PYEBPF_DUMP_STATE_H
#define PYEBPF_DUMP_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "capture/taskiter.h"
#include "profile/profile.h"
#include "python/pylocals.h"
#include "python/pyrt.h"

struct collector;

#define DUMP_MAX_THREADS 4096
#define DUMP_STACK_COPY  SAMPLE_STACK_COPY_DEFAULT

struct dump_thread {
    pid_t tid;
    char state; /* /proc state letter before the stop */
    char comm[SAMPLE_COMM_LEN];
    bool stopped;
    bool woke; /* BPF snapshot: ran between the iterator's visit and its Python frames' read */
    const struct taskiter_thread *rec; /* its in-kernel record (BPF snapshot), NULL: none */
    uint64_t *kstack;                  /* --kernel without BPF: from /proc, before the stop */
    size_t nk;
    bool gil;               /* holds the GIL (when gil_known) */
    struct pylocal *locals; /* --locals: the innermost Python frame's */
    int nlocals;            /* or -errno (-ENOTSUP before 3.13, -ESRCH no Python frame) */
    uint32_t leaf;          /* profile node of its stack, 0: none */
};

enum dump_path {
    DUMP_KERNEL,      /* the task iterator's records (BPF) */
    DUMP_PTRACE,      /* every thread stopped (--no-bpf, or BPF not allowed) */
    DUMP_NONBLOCKING, /* nothing stopped, Python frames only */
};

struct dump {
    pid_t pid;
    bool json, reverse, nonblocking, python_only, locals, kernel, no_bpf, verbose;
    enum dump_path path;
    struct taskiter ti;
    char why_ptrace[256]; /* why the BPF snapshot could not be taken */
    int kstack_err;       /* --kernel on the ptrace path: the first /proc stack read's error */
    size_t nstopped;
    size_t nwoke;
    double snap_ms; /* from the snapshot's start to the last thread read */
    struct pyrt rt;
    bool have_rt; /* the Python runtime was found (for the GIL and --locals) */
    struct dump_thread *t;
    size_t n;
    struct profile prof;
    struct collector *c;
    bool gil_known; /* the GIL's place is known (pyrt.h) and it was read */
    char cmdline[1024];
};

/* The snapshot, innermost frame last (--reverse: first), like a Python traceback. */
void dump_print_text(const struct dump *d, FILE *f);
/* The snapshot as one JSON document (docs/dump.schema.json). */
void dump_print_json(const struct dump *d, FILE *f);
/* What the user should know about how the snapshot was taken (stderr): always why --kernel has
 * no kernel frames; with --verbose, the path, the threads stopped and the time. */
void dump_print_path(const struct dump *d);

#endif
