/*
 * report — what a run of pyebpf-sample leaves: the profile, the summary and the --stats rows
 * (report.c), from the state main.c steps through (struct run). Only main.c and report.c
 * include it.
 */
#ifndef PYEBPF_REPORT_H
#define PYEBPF_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/nobpf.h"
#include "capture/sampler.h"
#include "cli.h"
#include "collect/collect.h"
#include "output/output.h"
#include "profile/profile.h"
#include "target.h"
#include "top.h"

struct run {
    struct cli_options *o;
    struct sampler *sampler; /* NULL with --no-bpf */
    struct nobpf *nobpf;     /* --no-bpf only */
    struct collector *collector;
    struct profile prof;
    uint64_t events;
    uint64_t collect_errors;
    const char *stop_reason; /* target_exited, duration, signal, quit (top) */
    double setup_cpu_us;     /* collector CPU spent before the first sample could arrive */
    struct top *top;         /* `top`: the live view, NULL otherwise */

    /* The lifecycle main() walks through. */
    enum output_format fmt;
    unsigned long long start_time; /* of a PID target (clock ticks since boot), 0 unknown */
    struct target_watch watch;     /* the target's life (a launched command's too) */
    pid_t child;                   /* a launched command, 0 none */
    int go_fd, err_fd;             /* releases the held command / reports its exec error */
    int child_status;
    bool child_running;
    bool target_gone;
    bool target_woke; /* the last sleep ended at wake_fd: check the target now */
    bool top_quit;    /* q in the live view */
    bool nobpf_failed;
    char cmdline[1024];
    uint64_t interval_ns; /* between drains of the ring */
    uint64_t idle_ns;     /* ... when nothing needs them sooner */
    uint64_t name_due;    /* the next look for a thread's Python name (UINT64_MAX: none) */
    int wake_fd;          /* wakes a drain's sleep: the target's pidfd, -1 none */
    uint64_t py_remote;   /* collector's samples with stacks read at the drain, */
    uint64_t py_freed;    /* ... and code objects freed unnamed, at the last drain */
    uint64_t py_code;     /* ... and code objects named, at the last drain */
    double duration;      /* seconds sampled */
    double target_cpu_s;  /* CPU time the target's threads had meanwhile; < 0: unknown */
    struct sampler_stats sc;
};

/* The collector's CPU time so far (user + system), in microseconds. */
double report_cpu_us(void);
/* The profile, the summary table (profile in a file) and the statistics (--stats). 0, or the
 * output's negative errno. */
int report_write(struct run *r);

#endif
