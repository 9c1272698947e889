/*
 * pyebpf-sample — samples a process (or a command it launches) with an eBPF perf_event program
 * and writes a profile: folded stacks, SVG flame graph, speedscope or pprof.
 *
 *   pyebpf-sample [OPTIONS] PID
 *   pyebpf-sample [OPTIONS] -- COMMAND [ARGS...]
 *   pyebpf-sample render IN.folded -o OUT ...
 *   pyebpf-sample diff BEFORE.folded AFTER.folded -o OUT ...
 *   pyebpf-sample dump PID
 *   pyebpf-sample top [OPTIONS] PID | -- COMMAND    (the same lifecycle, drawn live: top.h)
 *
 * main() is the lifecycle, top to bottom, one static function a step: parse options → check the
 * target → open the collector → load the BPF sampler (open_sampler) → (launch the command) →
 * attach (start_bpf; start_nobpf for the --no-bpf timer instead) → release the command → sample:
 * drain the ring (or tick) until the target exits, the duration ends or a signal arrives →
 * report_write (report.c): the profile, the summary, the stats → clean up.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/nobpf.h"
#include "capture/sampler.h"
#include "cli.h"
#include "collect/collect.h"
#include "dump.h"
#include "output/diffcmd.h"
#include "output/output.h"
#include "output/render.h"
#include "profile/profile.h"
#include "progress.h"
#include "report.h"
#include "target.h"
#include "util/monotime.h"
#include "top.h"

#define ALIVE_CHECK_NS  100000000ull
#define TOP_GIL_THREADS 256 /* threads whose GIL share top may name */
/* Sleeps between drains (see next_interval): while stacks are read at the drain, while a run
 * starts, and the longest ones: top's keys, the progress line's 4 Hz, a recording that nobody
 * watches. */
#define PY_DRAIN_NS       5000000ull
#define START_DRAIN_NS    50000000ull
#define TOP_DRAIN_NS      100000000ull
#define PROGRESS_DRAIN_NS 250000000ull
#define IDLE_DRAIN_NS     500000000ull

static volatile sig_atomic_t exiting; /* the signal that ends the run, 0 until one came */

static void on_signal(int sig)
{
    exiting = sig;
}

static int on_event(void *ctx, const struct sample_event *ev, size_t len)
{
    struct run *r = ctx;
    int fresh;

    r->events++;
    if (ev->flags & SAMPLE_F_WAKE) {
        collect_wake(r->collector, (const struct sample_wake *)ev);
        return 0;
    }
    fresh = collect_sample(r->collector, ev, len);
    if (fresh < 0)
        r->collect_errors++;
    return fresh > 0; /* a new thread: the sampler learns where its stack ends */
}

static uint64_t jitter(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Whether /proc start times (clock ticks since boot) match what the BPF program computes from
 * the task's boot-time start: 100 ticks per second, and no boot-time offset (time namespace). */
static bool start_time_checkable(void)
{
    long long secs = 0, nsecs = 0;
    char line[128];
    FILE *f;

    if (sysconf(_SC_CLK_TCK) != 1000000000 / SAMPLE_TICK_NS)
        return false;
    f = fopen("/proc/self/timens_offsets", "re");
    if (!f)
        return true; /* no time namespaces in this kernel */
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "boottime %lld %lld", &secs, &nsecs) == 2)
            break;
    fclose(f);
    return secs == 0 && nsecs == 0;
}

/* -- Lifecycle steps (main() calls them in order; each prints its own error) ------------------ */

/* Options and the output format. Returns 0 to run, 1 when done (--help, --version), -1 on a usage
 * error. */
static int parse_options(int argc, char **argv, struct cli_options *o, enum output_format *fmt)
{
    int err = cli_parse(argc, argv, o);

    if (err)
        return err;
    if (o->format) {
        if (output_format_parse(o->format, fmt)) {
            fprintf(stderr, "pyebpf-sample: bad format '%s' (folded, svg, speedscope, pprof)\n", o->format);
            return -1;
        }
    } else {
        *fmt = output_format_from_path(o->output);
    }
    return 0;
}

/* A PID named on the command line: it exists and we may read it; a thread stands for its process. */
static int check_target(struct run *r)
{
    struct cli_options *o = r->o;
    char state;

    if (target_check(o->pid))
        return -1;
    pid_t tgid = target_tgid(o->pid);

    if (tgid != o->pid) {
        if (!o->quiet)
            fprintf(stderr, "pyebpf-sample: %d is a thread of process %d; sampling the process\n",
                    (int)o->pid, (int)tgid);
        o->pid = tgid;
    }
    target_stat(o->pid, &r->start_time, &state);
    target_watch_open(&r->watch, o->pid, r->start_time);
    return 0;
}

static uint32_t stack_copy_bytes(const struct cli_options *o)
{
    return o->unwind == UNWIND_FP ? 0 : o->stack_size;
}

/* --mode gil keeps only the holder's samples; top's header shows the holder's share, so every
 * on-CPU sample of top says whether its thread held the GIL (the Python reader finds where it
 * is; --mode offcpu has no on-CPU samples). */
static enum sample_gil_mode gil_mode(const struct cli_options *o)
{
    if (o->mode == CLI_MODE_GIL)
        return SAMPLE_GIL_ONLY;
    return o->top && !o->no_python && o->mode != CLI_MODE_OFFCPU ? SAMPLE_GIL_MARK : SAMPLE_GIL_OFF;
}

/* The profile and the collector that fills it; a running Python target is attached as Python
 * before sampling starts (a launched command is attached on its first samples, once it has become
 * the interpreter). */
static int open_collector(struct run *r)
{
    const struct cli_options *o = r->o;
    struct collect_opts co;
    int err = profile_init(&r->prof);

    if (err) {
        fprintf(stderr, "pyebpf-sample: out of memory\n");
        return err;
    }
    r->prof.show_threads = o->threads || o->top; /* top filters by thread */
    co = (struct collect_opts){
        .unwind = o->unwind,
        .kernel = o->kernel,
        .python = !o->no_python,
        .python_only = o->python_only || o->no_bpf,
        .show_internal = o->show_internal,
        .verbose = o->verbose,
        .py = {.max_depth = COLLECT_MAX_PY, .exact_reads = o->exact_reads},
        .offcpu = o->mode == CLI_MODE_WALL || o->mode == CLI_MODE_OFFCPU,
        .gil = gil_mode(o),
        /* wall: a sample stands for its period of CPU, in the microseconds off-CPU time uses */
        .sample_weight = o->mode == CLI_MODE_WALL ? 1000000ull / o->frequency : 1,
        .no_idle = o->no_idle,
        .tids = o->tids,
        .ntids = o->ntids,
        .thread_name = o->has_thread_name ? &o->thread_name : NULL,
    };
    err = collect_open(&r->collector, &co, &r->prof);
    if (err) {
        fprintf(stderr, "pyebpf-sample: cannot start the collector: %s%s\n", strerror(-err),
                o->kernel ? " (reading /proc/kallsyms)" : "");
        return err;
    }
    if (o->pid && !o->no_python)
        collect_python_attach(r->collector, o->pid);
    return 0;
}

/* Loads the BPF program and opens its events (not attached yet). */
static int open_sampler(struct run *r)
{
    const struct cli_options *o = r->o;
    int nthreads = o->pid && !o->command ? target_threads(o->pid) : 0;
    struct sampler_opts so = {
        .frequency = o->frequency,
        .stack_copy = stack_copy_bytes(o),
        .kernel_stack = o->kernel,
        .user_fp_stack = o->unwind == UNWIND_FP, /* auto walks frame pointers in the copy */
        .children = o->children,
        .prog_stats = o->bpf_stats,
        .launch = o->command != NULL,
        .threads = nthreads > 0 ? (uint32_t)nthreads : 0,
        .ring_size = o->ring_size,
        .verbose = o->verbose,
        .offcpu = o->mode == CLI_MODE_WALL || o->mode == CLI_MODE_OFFCPU,
        .no_oncpu = o->mode == CLI_MODE_OFFCPU,
        .gil = gil_mode(o),
    };
    enum sampler_stage stage;
    char msg[512];
    int err = sampler_open(&r->sampler, &so, on_event, r, &stage);

    if (!err && !o->no_python)
        err = collect_set_sampler(r->collector, r->sampler);
    if (err)
        fprintf(stderr, "pyebpf-sample: %s\n", sampler_strerror(stage, err, msg, sizeof(msg)));
    return err;
}

/* Forks the command, held before its exec until release_command(); it becomes the target. */
static int launch_command(struct run *r)
{
    struct cli_options *o = r->o;
    pid_t child = target_launch(o->command, &r->go_fd, &r->err_fd);

    if (child < 0) {
        fprintf(stderr, "pyebpf-sample: cannot start '%s': %s\n", o->command[0], strerror(-child));
        return (int)child;
    }
    r->child = child;
    r->child_running = true;
    o->pid = child;
    /* Only to wake a drain's sleep at its exit (sample); waitpid says it ended. */
    unsigned long long start;
    char state;
    if (!target_stat(child, &start, &state))
        target_watch_open(&r->watch, child, start);
    return 0;
}

/* Makes the target a target of the BPF program and attaches it. A PID named on the command line
 * may be reused by another process once the target exits (noticed here only at the next liveness
 * check): the kernel drops such samples. */
static int start_bpf(struct run *r)
{
    const struct cli_options *o = r->o;
    char msg[512];
    int err = 0;

    if (!o->command && r->start_time && start_time_checkable())
        err = sampler_set_target_start(r->sampler, o->pid, r->start_time);
    if (!err)
        err = o->command ? sampler_add_pending(r->sampler, o->pid) : sampler_add_target(r->sampler, o->pid);
    if (!err)
        err = sampler_attach(r->sampler);
    if (err)
        fprintf(stderr, "pyebpf-sample: %s\n",
                sampler_strerror(sampler_failed_stage(r->sampler), err, msg, sizeof(msg)));
    return err;
}

/* --no-bpf: the user-space timer that reads the target's Python threads into the collector. */
static int nobpf_attach(void *c, pid_t pid)
{
    return collect_python_attach(c, pid);
}

static int nobpf_gil(void *c, pid_t pid)
{
    return collect_python_tick(c, pid);
}

static int nobpf_read(void *c, pid_t pid, pid_t tid, const char *comm)
{
    return collect_python_sample(c, pid, tid, comm);
}

static int start_nobpf(struct run *r)
{
    const struct nobpf_reader rd = {.attach = nobpf_attach,
                                    .tick = gil_mode(r->o) == SAMPLE_GIL_MARK ? nobpf_gil : NULL,
                                    .read = nobpf_read,
                                    .arg = r->collector};
    int err = nobpf_open(&r->nobpf, &rd, r->o->pid, r->o->frequency);

    if (err)
        fprintf(stderr, "pyebpf-sample: %s\n", strerror(-err));
    return err;
}

static void catch_signals(void)
{
    struct sigaction sa = {.sa_handler = on_signal};

    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* Lets the held command exec, now that sampling is set up; fails when the exec did. */
static int release_command(struct run *r)
{
    int e = 0;

    if (write(r->go_fd, "g", 1) != 1) {
        fprintf(stderr, "pyebpf-sample: cannot release the command: %s\n", strerror(errno));
        return -1;
    }
    close(r->go_fd);
    r->go_fd = -1;
    if (read(r->err_fd, &e, sizeof(e)) == sizeof(e)) {
        fprintf(stderr, "pyebpf-sample: cannot run '%s': %s\n", r->o->command[0], strerror(e));
        waitpid(r->child, &r->child_status, 0);
        r->child_running = false;
        return -1;
    }
    return 0;
}

/* `top`: the live view takes the terminal; the messages of a run would only scribble on it. */
static int open_top(struct run *r)
{
    char title[1200];
    int err;

    snprintf(title, sizeof(title), "pyebpf-sample top · PID %d (%s) · %u Hz%s", (int)r->o->pid, r->cmdline,
             r->o->frequency, r->sampler ? "" : " · no BPF");
    err = top_open(&r->top, title, r->o->refresh);
    if (err)
        fprintf(stderr, "pyebpf-sample: %s\n", strerror(-err));
    r->o->quiet = true;
    return err;
}

static void announce(struct run *r)
{
    const struct cli_options *o = r->o;

    target_cmdline(o->pid, o->command, r->cmdline, sizeof(r->cmdline));
    if (!o->quiet && r->sampler && o->mode == CLI_MODE_OFFCPU)
        fprintf(stderr, "pyebpf-sample: recording the off-CPU time of PID %d (%s) on %u CPUs%s\n",
                (int)o->pid, r->cmdline, sampler_ncpus(r->sampler), o->duration ? "" : "; Ctrl-C to stop");
    else if (!o->quiet && r->sampler)
        fprintf(stderr, "pyebpf-sample: sampling PID %d (%s) at %u Hz on %u CPUs%s%s\n", (int)o->pid,
                r->cmdline, o->frequency, sampler_ncpus(r->sampler),
                o->mode == CLI_MODE_WALL ? ", with off-CPU time" : "", o->duration ? "" : "; Ctrl-C to stop");
    else if (!o->quiet)
        fprintf(stderr, "pyebpf-sample: sampling the Python threads of PID %d (%s) at %u Hz, no BPF%s\n",
                (int)o->pid, r->cmdline, o->frequency, o->duration ? "" : "; Ctrl-C to stop");
}

/* Python stacks not captured in the kernel (a thread it does not know yet, a broken chain, no
 * in-kernel reader) are read when records are drained, and a new code object of an in-kernel
 * chain is named then, while it and the target live. So: drain every PY_DRAIN_NS while the last
 * drain read such stacks, met code objects not seen before, or found code objects freed before
 * they could be named (code made and dropped within milliseconds: exec, templates); every
 * START_DRAIN_NS while no record came yet or a target may still become Python (the files and
 * code its first records name are opened and read before it can end); otherwise r->idle_ns. A
 * long sleep is cut short by the program when the ring is half full or a record must be seen
 * soon (a new thread, code not named yet: sampler_arm_wake, at every drain), by the target's
 * exit and by a signal. A wake-up costs the collector ~0.1 ms however few records it drains
 * (its caches have gone cold meanwhile: measured, docs/benchmarks.md), as much as 25 samples. */
static uint64_t next_interval(struct run *r)
{
    struct collect_stats cs;
    bool remote, fresh;
    uint64_t idle = r->idle_ns;

    collect_get_stats(r->collector, &cs);
    if ((!cs.samples || cs.python_attach_pending) && idle > START_DRAIN_NS)
        idle = START_DRAIN_NS;
    if (r->o->no_python)
        return idle;
    remote = cs.python_reads_remote != r->py_remote;
    fresh = cs.python_code_freed != r->py_freed || cs.python_code_objects != r->py_code;
    r->py_remote = cs.python_reads_remote;
    r->py_freed = cs.python_code_freed;
    r->py_code = cs.python_code_objects;
    return remote || fresh ? PY_DRAIN_NS : idle;
}

/* Sleeps until the next drain, a wake-up from the program or the target's exit, or `until` (0:
 * none), and drains the ring. False when polling failed. */
static bool drain_bpf(struct run *r, uint64_t *rng, uint64_t until)
{
    /* Python stacks are read when records are drained: a drain period with jitter (50–150 %)
     * keeps those reads from aliasing with a periodic workload. */
    uint64_t wait = r->interval_ns / 2 + jitter(rng) % r->interval_ns, now = monotime_ns();
    int w;

    if (until && until < now + wait)
        wait = until > now ? until - now : 0;
    if (r->name_due < now + wait) /* a look for a thread's name (collect_name_threads) */
        wait = r->name_due > now ? r->name_due - now : 0;
    w = sampler_wait(r->sampler, wait, r->wake_fd);
    if (w < 0 && w != -EINTR)
        return false;
    if (w == 2)
        r->target_woke = true;
    if (sampler_poll(r->sampler) < 0 && errno != EINTR)
        return false;
    r->interval_ns = next_interval(r);
    sampler_arm_wake(r->sampler);
    return true;
}

/* Samples on the ticks before `until`. False (with a message) when sampling cannot go on. */
static bool tick_nobpf(struct run *r, uint64_t until)
{
    int n = nobpf_tick(r->nobpf, until);

    if (n == -ENOENT) {
        fprintf(stderr,
                "pyebpf-sample: PID %d is not a Python process: --no-bpf samples Python "
                "frames only\n",
                (int)r->o->pid);
        r->nobpf_failed = true;
        return false;
    }
    if (n < 0 && n != -EINTR) {
        fprintf(stderr, "pyebpf-sample: %s\n", strerror(-n));
        r->nobpf_failed = true;
        return false;
    }
    return true;
}

/* `top`: keys and a redraw when due, with the header's counters. True when the user quit. */
static bool poll_top(struct run *r, uint64_t now, uint64_t t0)
{
    static const enum top_gil gil_states[] = {[COLLECT_GIL_UNKNOWN] = TOP_GIL_UNKNOWN,
                                              [COLLECT_GIL_NONE] = TOP_GIL_NONE,
                                              [COLLECT_GIL_KNOWN] = TOP_GIL_KNOWN};
    struct collect_gil_thread gt[TOP_GIL_THREADS];
    struct collect_stats cs;
    struct sampler_stats sc = {0};

    collect_get_stats(r->collector, &cs);
    if (r->sampler)
        sampler_get_stats(r->sampler, &sc);
    struct top_status st = {.samples = cs.samples,
                            .lost = sc.lost,
                            .threads = cs.threads,
                            .rate = now > t0 ? cs.samples / ((now - t0) / 1e9) : 0,
                            .gil = r->o->mode == CLI_MODE_GIL ? TOP_GIL_ONLY : TOP_GIL_UNKNOWN};
    if (gil_mode(r->o) == SAMPLE_GIL_MARK) {
        st.gil = gil_states[collect_gil_state(r->collector)];
        st.ngil_threads = collect_gil_threads(r->collector, gt, TOP_GIL_THREADS);
        st.gil_threads = gt;
        st.gil_checked = cs.gil_checked;
        st.gil_held = cs.gil_held;
        st.gil_ticks = !r->sampler;
    }
    r->top_quit = top_poll(r->top, &r->prof, now, &st);
    return r->top_quit;
}

/* Samples until the target exits, the duration ends, a signal arrives or sampling fails; then
 * stops the sampler and drains what is left. */
static void sample(struct run *r)
{
    const struct cli_options *o = r->o;
    struct progress pg;
    uint64_t t0, t_end = 0, next_check;
    unsigned long long cpu0, cpu1;
    bool cpu_known = !target_cpu_ticks(o->pid, &cpu0);

    r->setup_cpu_us = report_cpu_us();
    t0 = monotime_ns();
    if (o->duration)
        t_end = t0 + (uint64_t)(o->duration * 1e9);
    next_check = t0 + ALIVE_CHECK_NS;
    progress_start(&pg, stderr, o->quiet, t0);
    r->idle_ns = r->top ? TOP_DRAIN_NS : pg.on ? PROGRESS_DRAIN_NS : IDLE_DRAIN_NS;
    r->interval_ns = r->o->no_python ? START_DRAIN_NS : PY_DRAIN_NS;
    r->wake_fd = r->watch.pidfd;
    r->name_due = UINT64_MAX;
    if (r->sampler)
        sampler_arm_wake(r->sampler);
    uint64_t rng = t0 | 1;

    while (!exiting) {
        uint64_t now;

        /* --no-bpf wakes for the next tick, or for the next liveness check / end, whichever is
         * first. */
        if (r->nobpf ? !tick_nobpf(r, t_end && t_end < next_check ? t_end : next_check)
                     : !drain_bpf(r, &rng, t_end))
            break;
        if (r->collector)
            r->name_due = collect_name_threads(r->collector, false);
        now = monotime_ns();
        progress_poll(&pg, now, r->collector, r->sampler, r->collect_errors);
        if (r->top && poll_top(r, now, t0))
            break;
        if (t_end && now >= t_end)
            break;
        if (now < next_check && !r->target_woke)
            continue;
        if (r->target_woke)
            r->wake_fd = -1; /* checked below: a pidfd that stays readable must not spin the loop */
        r->target_woke = false;
        next_check = now + ALIVE_CHECK_NS;
        if (r->child_running) {
            if (waitpid(r->child, &r->child_status, WNOHANG) == r->child) {
                r->child_running = false;
                r->target_gone = true;
                break;
            }
        } else if (!target_watch_alive(&r->watch)) {
            r->target_gone = true;
            break;
        }
    }
    r->duration = (monotime_ns() - t0) / 1e9;
    /* What the sampler was asked for: one sample per 1/F of the target's CPU time (a cpu-clock
     * event), over the same window as the samples. */
    r->target_cpu_s = cpu_known && !target_cpu_ticks(o->pid, &cpu1) && cpu1 >= cpu0
                          ? (double)(cpu1 - cpu0) / (double)sysconf(_SC_CLK_TCK)
                          : -1;

    progress_clear(&pg);

    top_close(r->top); /* the terminal back before any message */
    r->top = NULL;
    r->stop_reason = r->target_gone ? "target_exited"
                     : exiting      ? "signal"
                     : r->top_quit  ? "quit"
                     : t_end        ? "duration"
                                    : "error";

    if (r->sampler) {
        sampler_detach(r->sampler);
        sampler_poll(r->sampler);
        sampler_get_stats(r->sampler, &r->sc);
    }
    if (!o->quiet && r->target_gone)
        fprintf(stderr, "pyebpf-sample: target PID %d exited\n", (int)o->pid);
}

/* Stops a launched command that outlived sampling and frees everything, in reverse order. */
static void cleanup(struct run *r)
{
    if (r->go_fd >= 0)
        close(r->go_fd); /* an unreleased child reads EOF and exits */
    if (r->err_fd >= 0)
        close(r->err_fd);
    if (r->child_running) {
        /* Sampling stopped before the command ended (signal, duration): stop it too, but never
         * hang on a command that ignores SIGTERM. */
        kill(r->child, SIGTERM);
        for (int i = 0; i < 200 && waitpid(r->child, &r->child_status, WNOHANG) == 0; i++)
            usleep(10000);
        if (kill(r->child, 0) == 0 && waitpid(r->child, &r->child_status, WNOHANG) == 0)
            fprintf(stderr, "pyebpf-sample: command PID %d ignored SIGTERM and is still running\n",
                    (int)r->child);
    } else if (r->child && !r->target_gone) {
        waitpid(r->child, &r->child_status, WNOHANG);
    }
    target_watch_close(&r->watch);
    top_close(r->top);
    if (r->sampler)
        sampler_close(r->sampler);
    nobpf_close(r->nobpf);
    collect_close(r->collector);
    profile_free(&r->prof);
    cli_free(r->o);
}

int main(int argc, char **argv)
{
    struct cli_options o = {0};
    struct run r = {.o = &o, .go_fd = -1, .err_fd = -1, .watch = {.pidfd = -1}, .target_cpu_s = -1};
    int err, ret = 1;

    if (argc > 1 && !strcmp(argv[1], "render"))
        return render_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "diff"))
        return diffcmd_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "dump"))
        return dump_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "top")) {
        o.top = true;
        argc--, argv++;
    }
    err = parse_options(argc, argv, &o, &r.fmt);
    if (err)
        return err > 0 ? 0 : 2;
    if (o.pid && check_target(&r))
        return 1;

    /* From here a signal ends the run: with what it has once sampling runs, and with nothing
     * written (status 128 + signal) while BPF is still loading. */
    catch_signals();
    if (open_collector(&r))
        goto out;
    if (!o.no_bpf && open_sampler(&r))
        goto out;
    if (o.command && launch_command(&r))
        goto out;
    if (o.no_bpf ? start_nobpf(&r) : start_bpf(&r))
        goto out;
    if (exiting) {
        /* Nothing was sampled yet: an output that already exists stays as it was. */
        fprintf(stderr, "pyebpf-sample: interrupted before sampling started; nothing written\n");
        ret = 128 + exiting;
        goto out;
    }
    if (o.command && release_command(&r))
        goto out;
    announce(&r);
    if (o.top && open_top(&r))
        goto out;

    sample(&r);

    if (report_write(&r))
        goto out;
    ret = r.nobpf_failed ? 1 : 0;
out:
    cleanup(&r);
    return ret;
}
