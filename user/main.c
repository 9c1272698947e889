/*
 * pyebpf-sample — samples a process (or a command it launches) with an eBPF perf_event program
 * and writes a profile: folded stacks, SVG flame graph, speedscope or pprof.
 *
 *   pyebpf-sample [OPTIONS] PID
 *   pyebpf-sample [OPTIONS] -- COMMAND [ARGS...]
 *   pyebpf-sample render IN.folded -o OUT ...
 *
 * main() is the lifecycle, top to bottom, one static function a step: parse options → check the
 * target → open the collector → load the BPF sampler (open_sampler) → (launch the command) →
 * attach (start_bpf; start_nobpf for the --no-bpf timer instead) → release the command → sample:
 * drain the ring (or tick) until the target exits, the duration ends or a signal arrives →
 * write_outputs: the profile, the summary, the stats → clean up.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/nobpf.h"
#include "capture/sampler.h"
#include "cli.h"
#include "collect/collect.h"
#include "collect/stackends.h"
#include "output/output.h"
#include "output/render.h"
#include "output/summary.h"
#include "profile/profile.h"
#include "progress.h"
#include "target.h"

#define ALIVE_CHECK_NS 100000000ull
#define PY_DRAIN_NS    5000000ull

struct run {
    struct cli_options *o;
    struct sampler *sampler; /* NULL with --no-bpf */
    struct nobpf *nobpf;     /* --no-bpf only */
    struct collector *collector;
    struct profile prof;
    uint64_t events;
    uint64_t collect_errors;
    const char *stop_reason;    /* target_exited, duration, signal */
    double setup_cpu_us;        /* collector CPU spent before the first sample could arrive */
    struct stackends stackends; /* where new threads' stacks end */

    /* The lifecycle main() walks through. */
    enum output_format fmt;
    unsigned long long start_time; /* of a PID target (clock ticks since boot), 0 unknown */
    pid_t child;                   /* a launched command, 0 none */
    int go_fd, err_fd;             /* releases the held command / reports its exec error */
    int child_status;
    bool child_running;
    bool target_gone;
    bool nobpf_failed;
    char cmdline[1024];
    uint64_t interval_ns; /* between drains of the ring */
    double duration;      /* seconds sampled */
    struct sampler_counters sc;
};

static volatile sig_atomic_t exiting; /* the signal that ends the run, 0 until one came */

static void on_signal(int sig)
{
    exiting = sig;
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int on_event(void *ctx, const struct sample_event *ev, size_t len)
{
    struct run *r = ctx;
    int fresh;

    r->events++;
    fresh = collect_sample(r->collector, ev, len);
    if (fresh < 0) {
        r->collect_errors++;
        return 0;
    }
    if (r->o->unwind != UNWIND_FP)
        stackends_learn(&r->stackends, r->sampler, ev, fresh, r->o->stack_size);
    return 0;
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

static double self_cpu_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static void print_stats(FILE *f, struct run *r)
{
    const struct sampler_counters *sc = &r->sc;
    uint64_t lost = sc->lost, matched = sc->matched;
    double duration = r->duration;
    struct collect_stats cs;
    double cpu_us = self_cpu_us(), loop_us = cpu_us - r->setup_cpu_us;

    collect_stats(r->collector, &cs);
    fprintf(f, "samples: %" PRIu64 "\n", cs.samples);
    fprintf(f, "lost: %" PRIu64 "\n", lost);
    fprintf(f, "lost_pct: %.4f\n", matched ? 100.0 * lost / matched : 0.0);
    fprintf(f, "unwind_errors: %" PRIu64 "\n", cs.unwind_errors);
    fprintf(f, "unwind_truncated: %" PRIu64 "\n", cs.unwind_truncated);
    fprintf(f, "duration_s: %.3f\n", duration);
    fprintf(f, "stopped_by: %s\n", r->stop_reason);
    fprintf(f, "collector_cpu_us_per_sample: %.2f\n", cs.samples ? cpu_us / cs.samples : 0.0);
    fprintf(f, "collector_cpu_us: %.0f\n", cpu_us);
    fprintf(f, "collector_setup_cpu_us: %.0f\n", r->setup_cpu_us);
    fprintf(f, "collector_loop_cpu_us_per_sample: %.2f\n", cs.samples ? loop_us / cs.samples : 0.0);
    fprintf(f, "kernel_matched: %" PRIu64 "\n", matched);
    fprintf(f, "pid_reused_drops: %" PRIu64 "\n", sc->reused);
    if (sc->prog_runs) {
        fprintf(f, "bpf_runs: %" PRIu64 "\n", sc->prog_runs);
        fprintf(f, "bpf_ns_per_run: %.0f\n", (double)sc->prog_time_ns / sc->prog_runs);
        fprintf(f, "bpf_ns_per_sample: %.0f\n", matched ? (double)sc->prog_time_ns / matched : 0.0);
    }
    fprintf(f, "events: %" PRIu64 "\n", r->events);
    fprintf(f, "collect_errors: %" PRIu64 "\n", r->collect_errors);
    fprintf(f, "frequency_hz: %u\n", r->o->frequency);
    if (r->sampler) {
        fprintf(f, "cpus: %u\n", sampler_ncpus(r->sampler));
        fprintf(f, "ring_bytes: %zu\n", sampler_ring_size(r->sampler));
    }
    fprintf(f, "threads: %" PRIu64 "\n", cs.threads);
    fprintf(f, "frames_per_sample: %.1f\n", cs.samples ? (double)cs.frames / cs.samples : 0.0);
    fprintf(f, "unknown_frames: %" PRIu64 "\n", cs.unknown_frames);
    fprintf(f, "frame_cache_hits: %" PRIu64 "\n", cs.frame_cache_hits);
    fprintf(f, "frame_cache_misses: %" PRIu64 "\n", cs.frame_cache_misses);
    fprintf(f, "frame_cache_flushes: %" PRIu64 "\n", cs.frame_cache_flushes);
    fprintf(f, "kernel_stack_errors: %" PRIu64 "\n", cs.kernel_errors);
    fprintf(f, "stack_copy_errors: %" PRIu64 "\n", sc->copy_err);
    fprintf(f, "stack_copy_retries: %" PRIu64 "\n", sc->copy_retry);
    fprintf(f, "stack_copy_avg_bytes: %.0f\n", cs.samples ? (double)cs.stack_copy_bytes / cs.samples : 0.0);
    fprintf(f, "stack_ends_known: %" PRIu64 "\n", r->stackends.set);
    fprintf(f, "stack_end_map_reads: %" PRIu64 "\n", r->stackends.map_reads);
    fprintf(f, "stack_ends_fixed: %" PRIu64 "\n", r->stackends.fixed);
    struct proc_stats ps;

    collect_proc_stats(r->collector, &ps);
    fprintf(f, "map_refreshes: %" PRIu64 "\n", ps.refreshes);
    fprintf(f, "files_opened: %" PRIu64 "\n", ps.files_opened);
    fprintf(f, "jit_regions: %" PRIu64 "\n", ps.jit_regions);
    fprintf(f, "jit_reloads: %" PRIu64 "\n", ps.jit_reloads);
    fprintf(f, "unwind_fp_steps: %" PRIu64 "\n", ps.fp_steps);
    fprintf(f, "unwind_dwarf_steps: %" PRIu64 "\n", ps.dwarf_steps);
    fprintf(f, "cfi_row_cache_hit_pct: %.1f\n",
            ps.row_hits + ps.row_misses ? 100.0 * ps.row_hits / (ps.row_hits + ps.row_misses) : 0.0);
    fprintf(f, "proc_errors: %" PRIu64 "\n", cs.proc_errors);
    fprintf(f, "distinct_stacks: %u\n", r->prof.nnodes);
    fprintf(f, "distinct_frames: %u\n", r->prof.nframes);
    if (r->nobpf) {
        struct nobpf_stats ns;

        nobpf_get_stats(r->nobpf, &ns);
        fprintf(f, "nobpf_ticks: %" PRIu64 "\n", ns.ticks);
        fprintf(f, "nobpf_missed_ticks: %" PRIu64 "\n", ns.missed_ticks);
        fprintf(f, "nobpf_thread_scans: %" PRIu64 "\n", ns.thread_scans);
        fprintf(f, "nobpf_thread_reads: %" PRIu64 "\n", ns.reads);
        fprintf(f, "nobpf_idle_reads: %" PRIu64 "\n", ns.idle_reads);
        fprintf(f, "nobpf_failed_reads: %" PRIu64 "\n", ns.failed_reads);
    }
    collect_print_python_stats(r->collector, f);
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
    return 0;
}

static uint32_t stack_copy_bytes(const struct cli_options *o)
{
    return o->unwind == UNWIND_FP ? 0 : o->stack_size;
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
    r->prof.show_threads = o->threads;
    co = (struct collect_opts){
        .unwind = o->unwind,
        .kernel = o->kernel,
        .python = !o->no_python,
        .python_only = o->python_only || o->no_bpf,
        .show_internal = o->show_internal,
        .verbose = o->verbose,
        .py = {.max_depth = COLLECT_MAX_PY, .exact_reads = o->exact_reads},
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
    struct sampler_opts so = {
        .frequency = o->frequency,
        .stack_copy = stack_copy_bytes(o),
        .kernel_stack = o->kernel,
        .user_fp_stack = o->unwind == UNWIND_FP, /* auto walks frame pointers in the copy */
        .children = o->children,
        .prog_stats = o->stats,
        .launch = o->command != NULL,
        .ring_size = o->ring_size,
        .verbose = o->verbose,
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

static int nobpf_read(void *c, pid_t pid, pid_t tid, const char *comm)
{
    return collect_python_sample(c, pid, tid, comm);
}

static int start_nobpf(struct run *r)
{
    const struct nobpf_reader rd = {.attach = nobpf_attach, .read = nobpf_read, .arg = r->collector};
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

static void announce(struct run *r)
{
    const struct cli_options *o = r->o;

    target_cmdline(o->pid, o->command, r->cmdline, sizeof(r->cmdline));
    if (!o->quiet && r->sampler)
        fprintf(stderr, "pyebpf-sample: sampling PID %d (%s) at %u Hz on %u CPUs%s\n", (int)o->pid,
                r->cmdline, o->frequency, sampler_ncpus(r->sampler), o->duration ? "" : "; Ctrl-C to stop");
    else if (!o->quiet)
        fprintf(stderr, "pyebpf-sample: sampling the Python threads of PID %d (%s) at %u Hz, no BPF%s\n",
                (int)o->pid, r->cmdline, o->frequency, o->duration ? "" : "; Ctrl-C to stop");
}

/* Drain often enough that the ring never holds more than a quarter of its size when every CPU
 * samples the target at full record size. */
static uint64_t drain_interval(const struct run *r)
{
    const struct cli_options *o = r->o;
    double rec = sizeof(struct sample_event) + stack_copy_bytes(o) + 8;
    double per_s = rec * o->frequency * sampler_ncpus(r->sampler);
    uint64_t interval_ns = (uint64_t)(sampler_ring_size(r->sampler) / 4 / per_s * 1e9);

    if (interval_ns > 20000000)
        interval_ns = 20000000;
    /* Python stacks are read at drain time (until captured in the kernel): drain sooner. */
    if (!o->no_python && interval_ns > PY_DRAIN_NS)
        interval_ns = PY_DRAIN_NS;
    if (interval_ns < 1000000)
        interval_ns = 1000000;
    return interval_ns;
}

/* Sleeps until the next drain and drains the ring. False when polling failed. */
static bool drain_bpf(struct run *r, uint64_t *rng)
{
    /* Python stacks are read when records are drained: a drain period with jitter (50–150 %)
     * keeps those reads from aliasing with a periodic workload. */
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(r->interval_ns / 2 + jitter(rng) % r->interval_ns)};

    nanosleep(&ts, NULL);
    return !(sampler_poll(r->sampler) < 0 && errno != EINTR);
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

/* Samples until the target exits, the duration ends, a signal arrives or sampling fails; then
 * stops the sampler and drains what is left. */
static void sample(struct run *r)
{
    const struct cli_options *o = r->o;
    struct progress pg;
    uint64_t t0, t_end = 0, next_check;

    r->interval_ns = r->sampler ? drain_interval(r) : 10000000;
    r->setup_cpu_us = self_cpu_us();
    t0 = now_ns();
    if (o->duration)
        t_end = t0 + (uint64_t)(o->duration * 1e9);
    next_check = t0 + ALIVE_CHECK_NS;
    progress_start(&pg, stderr, o->quiet, t0);
    uint64_t rng = t0 | 1;

    while (!exiting) {
        uint64_t now;

        /* --no-bpf wakes for the next tick, or for the next liveness check / end, whichever is
         * first. */
        if (r->nobpf ? !tick_nobpf(r, t_end && t_end < next_check ? t_end : next_check) : !drain_bpf(r, &rng))
            break;
        now = now_ns();
        progress_poll(&pg, now, r->collector, r->sampler, r->collect_errors);
        if (t_end && now >= t_end)
            break;
        if (now < next_check)
            continue;
        next_check = now + ALIVE_CHECK_NS;
        if (r->child_running) {
            if (waitpid(r->child, &r->child_status, WNOHANG) == r->child) {
                r->child_running = false;
                r->target_gone = true;
                break;
            }
        } else if (!target_alive(o->pid, r->start_time)) {
            r->target_gone = true;
            break;
        }
    }
    r->duration = (now_ns() - t0) / 1e9;

    progress_clear(&pg);

    r->stop_reason = r->target_gone ? "target_exited" : exiting ? "signal" : t_end ? "duration" : "error";

    if (r->sampler) {
        sampler_detach(r->sampler);
        sampler_poll(r->sampler);
        sampler_counters(r->sampler, &r->sc);
    }
    if (!o->quiet && r->target_gone)
        fprintf(stderr, "pyebpf-sample: target PID %d exited\n", (int)o->pid);
}

/* The profile, the summary table (profile in a file) and the statistics (--stats). */
static int write_outputs(struct run *r)
{
    const struct cli_options *o = r->o;
    struct collect_stats cs;
    int err;

    profile_finish(&r->prof);
    r->prof.meta.command = r->cmdline[0] ? strdup(r->cmdline) : NULL;
    r->prof.meta.duration_s = r->duration;
    r->prof.meta.frequency = o->frequency;
    r->prof.meta.period_ns = 1000000000ull / o->frequency;
    collect_stats(r->collector, &cs);
    r->prof.meta.samples = cs.samples;
    err = output_write(&r->prof, r->fmt, o->output);
    if (err) {
        fprintf(stderr, "pyebpf-sample: cannot write %s: %s\n", strcmp(o->output, "-") ? o->output : "stdout",
                strerror(-err));
        return err;
    }
    if (!o->quiet && strcmp(o->output, "-")) {
        fprintf(stderr, "pyebpf-sample: wrote %s (%s), ", o->output, output_format_name(r->fmt));
        summary_print_by(&r->prof, stderr, 10, o->summary_by_line ? SUMMARY_BY_LINE : SUMMARY_BY_FUNCTION);
    }
    if (o->stats)
        print_stats(stderr, r);
    if (!o->quiet && r->prof.meta.samples == 0)
        fprintf(stderr, "pyebpf-sample: no samples (the target used no CPU while sampled)\n");
    return 0;
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
    if (r->sampler)
        sampler_close(r->sampler);
    nobpf_close(r->nobpf);
    collect_close(r->collector);
    stackends_free(&r->stackends);
    profile_free(&r->prof);
}

int main(int argc, char **argv)
{
    struct cli_options o = {0};
    struct run r = {.o = &o, .go_fd = -1, .err_fd = -1};
    int err, ret = 1;

    if (argc > 1 && !strcmp(argv[1], "render"))
        return render_main(argc - 1, argv + 1);
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

    sample(&r);

    if (write_outputs(&r))
        goto out;
    ret = r.nobpf_failed ? 1 : 0;
out:
    cleanup(&r);
    return ret;
}
