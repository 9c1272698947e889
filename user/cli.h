/*
 * cli — the command line of pyebpf-sample: options, their defaults and checks, the help text.
 */
#ifndef PYEBPF_CLI_H
#define PYEBPF_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <regex.h>
#include <stdio.h>
#include <sys/types.h>

#include "unwind/unwind.h"

#define CLI_DEFAULT_FREQUENCY 99 /* Hz; off the common 100 Hz timers so samples do not lock step */
#define CLI_MAX_FREQUENCY     100000
#define CLI_MAX_TIDS          64 /* threads --tid names at most */

/* What a profile measures (--mode). */
enum cli_mode {
    CLI_MODE_CPU = 0, /* on-CPU samples (cpu-clock), counted in samples */
    CLI_MODE_WALL,    /* on-CPU samples and off-CPU time, in microseconds */
    CLI_MODE_OFFCPU,  /* off-CPU time alone, in microseconds */
    CLI_MODE_GIL,     /* on-CPU samples of the thread holding the GIL only */
};

struct cli_options {
    unsigned frequency;
    double duration;
    const char *output;
    const char *format;
    bool kernel;
    enum unwind_mode unwind;
    uint32_t stack_size;
    bool threads;
    bool children;
    bool stats;
    bool bpf_stats; /* --bpf-stats: the kernel times the program (implies stats) */
    bool quiet;
    bool verbose;
    bool no_bpf;          /* timer-driven Python sampling from user space, no BPF, no perf events */
    bool python_only;     /* Python frames only */
    bool show_internal;   /* keep interpreter-internal frames when merging */
    bool no_python;       /* native frames only, even for a Python target */
    bool exact_reads;     /* pystack: one exact read per predicted frame (no ranges, no page tail) */
    bool summary_by_line; /* the summary table: a row per Python line, not per function */
    size_t ring_size;
    bool top;       /* `top`: the live view instead of a profile at the end (top.h) */
    double refresh; /* top: seconds between redraws */
    enum cli_mode mode;
    bool no_idle;                /* drop the stacks of idle threads */
    uint32_t tids[CLI_MAX_TIDS]; /* --tid: keep only these threads (ntids 0: all) */
    size_t ntids;
    bool has_thread_name; /* --thread-name: thread_name holds the compiled REGEX */
    regex_t thread_name;
    pid_t pid;
    char **command;
};

/* Fills `o` from argv. Returns 0 to run, 1 when done (--help, --version printed), -1 on a usage
 * error (one message printed on stderr). */
int cli_parse(int argc, char **argv, struct cli_options *o);
void cli_usage(FILE *f);
/* The name of a mode ("cpu", "wall", "offcpu", "gil"). */
const char *cli_mode_name(enum cli_mode m);
/* Frees what cli_parse allocated (the --thread-name regex). */
void cli_free(struct cli_options *o);

#endif
