/* report — the profile, the summary and the --stats rows of a run (see report.h). */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "output/summary.h"

double report_cpu_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/* The --stats rows, in the order docs/pyebpf-sample.md lists them. */
static void print_stats(struct stats out, struct run *r)
{
    const struct sampler_stats *sc = &r->sc;
    const double cpu_us = report_cpu_us(), loop_us = cpu_us - r->setup_cpu_us;
    struct collect_stats cs;

    collect_get_stats(r->collector, &cs);
    stats_count(out, "samples", cs.samples);
    stats_count(out, "lost", sc->lost);
    stats_ratio(out, "lost_pct", 100.0 * (double)sc->lost, (double)sc->matched, 4);
    stats_count(out, "unwind_errors", cs.unwind_errors);
    stats_count(out, "unwind_truncated", cs.unwind_truncated);
    stats_real(out, "duration_s", r->duration, 3);
    stats_text(out, "stopped_by", r->stop_reason);
    if (r->target_cpu_s >= 0)
        stats_real(out, "target_cpu_s", r->target_cpu_s, 2);
    stats_ratio(out, "collector_cpu_us_per_sample", cpu_us, (double)cs.samples, 2);
    stats_real(out, "collector_cpu_us", cpu_us, 0);
    stats_real(out, "collector_setup_cpu_us", r->setup_cpu_us, 0);
    stats_ratio(out, "collector_loop_cpu_us_per_sample", loop_us, (double)cs.samples, 2);
    stats_count(out, "kernel_matched", sc->matched);
    stats_count(out, "pid_reused_drops", sc->reused);
    if (sc->prog_runs) {
        stats_count(out, "bpf_runs", sc->prog_runs);
        stats_ratio(out, "bpf_ns_per_run", (double)sc->prog_time_ns, (double)sc->prog_runs, 0);
        stats_ratio(out, "bpf_ns_per_sample", (double)sc->prog_time_ns, (double)sc->matched, 0);
    }
    stats_count(out, "events", r->events);
    stats_count(out, "collect_errors", r->collect_errors);
    stats_count(out, "frequency_hz", r->o->frequency);
    if (r->sampler) {
        stats_count(out, "cpus", sampler_ncpus(r->sampler));
        stats_count(out, "ring_bytes", sampler_ring_size(r->sampler));
    }
    stats_count(out, "threads", cs.threads);
    stats_ratio(out, "frames_per_sample", (double)cs.frames, (double)cs.samples, 1);
    stats_count(out, "unknown_frames", cs.unknown_frames);
    stats_count(out, "frame_cache_hits", cs.frame_cache_hits);
    stats_count(out, "frame_cache_misses", cs.frame_cache_misses);
    stats_count(out, "frame_cache_flushes", cs.frame_cache_flushes);
    stats_count(out, "sample_cache_hits", cs.sample_cache_hits);
    stats_count(out, "sample_cache_misses", cs.sample_cache_misses);
    stats_count(out, "kernel_stack_errors", cs.kernel_errors);
    stats_count(out, "stack_copy_errors", sc->copy_err);
    stats_count(out, "stack_copy_retries", sc->copy_retry);
    stats_ratio(out, "stack_copy_avg_bytes", (double)cs.stack_copy_bytes, (double)cs.samples, 0);
    stats_count(out, "stack_ends_known", sc->stack_ends_set);
    stats_count(out, "stack_end_map_reads", sc->stack_end_map_reads);
    stats_count(out, "stack_ends_fixed", sc->stack_ends_fixed);
    stats_count(out, "map_refreshes", cs.proc.refreshes);
    stats_count(out, "files_opened", cs.proc.files_opened);
    stats_count(out, "jit_regions", cs.proc.jit_regions);
    stats_count(out, "jit_reloads", cs.proc.jit_reloads);
    stats_count(out, "unwind_fp_steps", cs.proc.fp_steps);
    stats_count(out, "unwind_dwarf_steps", cs.proc.dwarf_steps);
    stats_ratio(out, "cfi_row_cache_hit_pct", 100.0 * (double)cs.proc.row_hits,
                (double)(cs.proc.row_hits + cs.proc.row_misses), 1);
    stats_ratio(out, "unwind_memo_hit_pct", 100.0 * (double)cs.proc.memo_hits, (double)cs.proc.unwinds, 1);
    stats_count(out, "proc_errors", cs.proc_errors);
    stats_count(out, "distinct_stacks", r->prof.nnodes);
    stats_count(out, "distinct_frames", r->prof.nframes);
    if (r->o->mode == CLI_MODE_GIL) {
        stats_count(out, "gil_not_held_drops", sc->gil_not_held);
        stats_count(out, "gil_unknown_drops", cs.gil_unknown);
    } else if (r->o->top && !r->o->no_python && r->o->mode != CLI_MODE_OFFCPU) {
        stats_count(out, "gil_checked", cs.gil_checked);
        stats_count(out, "gil_held", cs.gil_held);
    }
    if (r->o->mode == CLI_MODE_WALL || r->o->mode == CLI_MODE_OFFCPU) {
        struct offcpu_stats os;
        char key[64];

        collect_offcpu_stats(r->collector, &os);
        stats_count(out, "offcpu_switches", sc->offcpu_switches);
        stats_count(out, "offcpu_lost", sc->offcpu_lost);
        stats_count(out, "offcpu_unseen_switch_ins", sc->offcpu_unseen);
        stats_count(out, "offcpu_stacks", os.left);
        stats_count(out, "offcpu_wakes", os.back);
        stats_count(out, "offcpu_unpaired_wakes", os.unpaired);
        stats_count(out, "offcpu_unweighed_stacks", os.replaced);
        stats_count(out, "offcpu_dropped_idle", os.dropped);
        for (int s = 0; s < OFFCPU_NSTATES; s++) {
            snprintf(key, sizeof(key), "offcpu_ns_%s", offcpu_state_key(s));
            stats_count(out, key, os.ns[s]);
        }
        if (sc->offcpu_runs) {
            stats_count(out, "offcpu_bpf_runs", sc->offcpu_runs);
            stats_ratio(out, "offcpu_bpf_ns_per_run", (double)sc->offcpu_time_ns, (double)sc->offcpu_runs, 0);
            stats_ratio(out, "offcpu_bpf_ns_per_switch", (double)sc->offcpu_time_ns,
                        (double)sc->offcpu_switches, 0);
        }
        stats_ratio(out, "collector_cpu_us_per_switch", loop_us, (double)sc->offcpu_switches, 2);
    }
    if (r->nobpf)
        nobpf_stats(r->nobpf, out);
    collect_python_stats(r->collector, out);
}

int report_write(struct run *r)
{
    const struct cli_options *o = r->o;
    struct collect_stats cs;
    int err;

    if (o->top && !strcmp(o->output, "-"))
        return 0; /* top without -o: the view was the output */
    if (r->collector)
        collect_name_threads(r->collector, true);
    profile_finish(&r->prof);
    r->prof.meta.command = r->cmdline[0] ? strdup(r->cmdline) : NULL;
    r->prof.meta.duration_s = r->duration;
    r->prof.meta.frequency = o->mode == CLI_MODE_OFFCPU ? 0 : o->frequency;
    r->prof.meta.period_ns = 1000000000ull / o->frequency;
    if (o->mode == CLI_MODE_WALL || o->mode == CLI_MODE_OFFCPU) {
        /* Counts are microseconds of wall or off-CPU time. */
        r->prof.meta.weight = cli_mode_name(o->mode);
        r->prof.meta.period_ns = 1000;
    }
    collect_get_stats(r->collector, &cs);
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
        print_stats(stats_file(stderr), r);
    if (!o->quiet && r->prof.meta.samples == 0)
        fprintf(stderr, "pyebpf-sample: no samples (the target %s while sampled)\n",
                o->mode == CLI_MODE_CPU   ? "used no CPU"
                : o->mode == CLI_MODE_GIL ? "never held the GIL on a CPU"
                                          : "never left the CPU");
    return 0;
}
