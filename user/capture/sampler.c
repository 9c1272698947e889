/*
 * sampler — loads bpf/sample.bpf.c through its skeleton, opens the per-CPU perf events and
 * drains the ring buffer. Lifecycle in sampler.h.
 */
#include "capture/sampler.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/kbtf.h"
#include "capture/stackends.h"
#include "sample.skel.h"

#define RING_MIN          (4u << 20)
#define PROC_PID_INIT_INO 0xEFFFFFFCu /* the initial PID namespace (include/linux/proc_ns.h) */
#define RING_MAX          (128u << 20)
#define RING_OFFCPU       (32u << 20)

struct sampler {
    struct sample_bpf *skel;
    struct ring_buffer *rb;
    int *perf_fds;
    struct bpf_link **links;
    struct bpf_link *fork_link;
    struct bpf_link *exec_link;
    struct bpf_link *offcpu_link;
    int stats_fd;
    unsigned nlinks;
    unsigned ncpus_possible;
    unsigned ncpus_online;
    size_t ring_size;
    struct sampler_opts opts;
    sampler_fn fn;
    void *ctx;
    enum sampler_stage failed;
    struct stackends ends; /* where new threads' stacks end (stack copies only) */
};

static bool libbpf_verbose;

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    if (!libbpf_verbose || level == LIBBPF_DEBUG)
        return 0;
    return vfprintf(stderr, fmt, ap);
}

static size_t pow2_at_least(size_t v)
{
    size_t p = 1;

    while (p < v)
        p <<= 1;
    return p;
}

/* Enough ring for 1/16 s of every CPU sampling a target whose records are of a common size; the
 * program wakes the collector at half of it, so 1/32 s is left for the collector to get a CPU.
 * Records hold what was read (bpf_ringbuf_output): a Python thread's is ~2 KiB (3.12's eval
 * loop 20 Python frames deep: a 1.5 KiB stack copy and 0.5 KiB of frames after the 136-byte
 * header); the common size allows 4 KiB of stack and 64 frames, and RING_MIN holds 97 records
 * of the largest size (16 KiB copy, 1,024 frames: the defaults). No more: the kernel zeroes the
 * ring when the map is created and the collector maps it, about 0.35 ms of setup CPU per MiB
 * (1 kHz on 2 CPUs: 4 MiB, 10 kHz: 8 MiB; with a 2 KiB header, 4 and 16 MiB; when records took
 * their largest size, 8 and 64 MiB). */
static size_t choose_ring_size(const struct sampler_opts *o, unsigned ncpus)
{
    size_t stack = o->stack_copy < 4096 ? o->stack_copy : 4096;
    size_t frames = o->py_frames < 64 ? o->py_frames : 64;
    size_t rec =
        (sizeof(struct sample_event) + stack + frames * sizeof(struct sample_pyframe) + 8 + 7) & ~(size_t)7;
    size_t want = (size_t)o->frequency * ncpus * rec / 16;

    /* Context switches come at no fixed rate (tens of thousands a second are common): off-CPU
     * records get a large ring (as many records as 128 MiB held when each took its largest size). */
    if (o->offcpu)
        want = RING_OFFCPU;
    if (want < RING_MIN)
        want = RING_MIN;
    if (want > RING_MAX)
        want = RING_MAX;
    return pow2_at_least(want);
}

/* The fields given of a thread's entry; the others as they were (the program may clear a stale thread state
 * in between: written back, it is found stale and cleared again). Before the program is attached
 * the threads taught at the start are each written once, and nothing else writes: no lookup (one
 * bpf call less per thread; 200 threads' were 200 failed lookups). */
static int set_thread(struct sampler *s, pid_t tid, const uint64_t *end, const uint64_t *tstate)
{
    __u32 key = tid;
    struct sample_thread v = {0};

    if (!s->links || bpf_map__lookup_elem(s->skel->maps.threads, &key, sizeof(key), &v, sizeof(v), 0))
        v = (struct sample_thread){0};
    if (end)
        v.stack_end = *end;
    if (tstate)
        v.tstate = *tstate;
    if (bpf_map__update_elem(s->skel->maps.threads, &key, sizeof(key), &v, sizeof(v), BPF_ANY))
        return -errno;
    return 0;
}

/* Lines of the next record fetched ahead, at most (4 KiB: a Python record's header, stack copy
 * and chain are ~2.4 KiB at 20 frames deep). */
#define PREFETCH_LINES 64

/* Starts loading the record after this one while this one is processed. The collector reads a
 * record moments after the kernel wrote it on the target's CPU, and the unwinder's memo and the
 * chain's decoding each waited on those lines: ~80 % of unwind_stack's own time was one load of
 * the stack copy. The next record begins where this one ends, rounded up to 8 (libbpf's ring: an
 * 8-byte header before each record; the data pages are mapped twice, so a record that wraps
 * reads on); one target's records are alike in size, so this one's length says how far to go.
 * A prefetch never faults: past what the kernel has written it only loads a line for nothing. */
static void prefetch_next(const void *data, size_t len)
{
    const char *next = (const char *)data + ((len + 7) & ~(size_t)7);
    size_t lines = (len + 8) / 64 + 2;

    if (lines > PREFETCH_LINES)
        lines = PREFETCH_LINES;
    for (size_t i = 0; i < lines; i++)
        __builtin_prefetch(next + 64 * i);
}

static int on_record(void *ctx, void *data, size_t len)
{
    struct sampler *s = ctx;

    uint64_t end = 0;
    enum stackends_bound b;
    int r;

    prefetch_next(data, len);
    if (len >= sizeof(struct sample_wake) && (((const struct sample_wake *)data)->flags & SAMPLE_F_WAKE))
        return s->fn(s->ctx, data, len) < 0 ? -1 : 0;
    /* a record shorter than its lengths say is not looked into */
    if (len < sizeof(struct sample_event) || len < sample_event_len(data))
        return 0;
    r = s->fn(s->ctx, data, len);
    if (r < 0)
        return r;
    if (s->opts.stack_copy) {
        b = stackends_learn(&s->ends, data, r > 0, s->opts.stack_copy, &end);
        if (b != STACKENDS_NONE && !set_thread(s, ((const struct sample_event *)data)->tid, &end, NULL))
            stackends_set(&s->ends, b);
    }
    return 0;
}

int sampler_open(struct sampler **out, const struct sampler_opts *o, sampler_fn fn, void *ctx,
                 enum sampler_stage *stage)
{
    struct sampler *s;
    int err, ncpu;
    unsigned levels;

    *out = NULL;
    if (stage)
        *stage = SAMPLER_STAGE_OPEN;
    if (o->stack_copy > SAMPLE_STACK_COPY_MAX || (o->stack_copy & 7) || !o->frequency)
        return -EINVAL;
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->opts = *o;
    if (s->opts.no_py_frames)
        s->opts.py_frames = 0;
    else if (!s->opts.py_frames)
        s->opts.py_frames = SAMPLE_PY_FRAMES_DEFAULT;
    else if (s->opts.py_frames > SAMPLE_PY_FRAMES_MAX)
        s->opts.py_frames = SAMPLE_PY_FRAMES_MAX;
    s->stats_fd = -1;
    s->fn = fn;
    s->ctx = ctx;
    libbpf_verbose = o->verbose;
    libbpf_set_print(print_libbpf);

    ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0) {
        err = ncpu ? ncpu : -ENODEV;
        goto fail;
    }
    s->ncpus_possible = ncpu;

    s->skel = sample_bpf__open();
    if (!s->skel) {
        err = -errno ? -errno : -ENOENT;
        goto fail;
    }
    s->skel->rodata->cfg_stack_copy = o->stack_copy;
    s->skel->rodata->cfg_kernel_stack = o->kernel_stack;
    s->skel->rodata->cfg_user_fp_stack = o->user_fp_stack;
    s->skel->rodata->cfg_py_frames = s->opts.py_frames;
    s->skel->rodata->cfg_gil = o->gil;
    {
        char field[96];

        err = kbtf_sample_offsets((struct sample_koff *)&s->skel->rodata->cfg_koff, field, sizeof(field));
        if (err == -EPROTO && o->verbose)
            fprintf(stderr, "pyebpf-sample: the kernel's BTF has no %s\n", field);
        if (err)
            goto fail;
    }
    {
        /* In a PID namespace other than the initial one (a container), the program translates
         * the kernel's ids into ours. */
        struct stat ns;

        if (stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino != PROC_PID_INIT_INO) {
            s->skel->rodata->cfg_pidns_dev = ns.st_dev;
            s->skel->rodata->cfg_pidns_ino = ns.st_ino;
        }
    }
    bpf_program__set_autoload(s->skel->progs.follow_fork, o->children);
    bpf_program__set_autoload(s->skel->progs.start_on_exec, o->launch);
    bpf_program__set_autoload(s->skel->progs.offcpu, o->offcpu);
    bpf_program__set_autoload(s->skel->progs.sample, !o->no_oncpu);
    s->ring_size = o->ring_size ? pow2_at_least(o->ring_size) : choose_ring_size(&s->opts, ncpu);
    /* Woken at half: the other half holds what comes in while the collector gets a CPU. */
    s->skel->rodata->cfg_wake_bytes = s->ring_size / 2;
    err = bpf_map__set_max_entries(s->skel->maps.events, s->ring_size);
    /* the record buffers: one per CPU for each program loaded that records (a level per program) */
    levels = o->offcpu && !o->no_oncpu ? SAMPLE_REC_LEVELS : 1;
    s->skel->rodata->cfg_rec_levels = levels;
    if (!err)
        err = bpf_map__set_max_entries(s->skel->maps.rec_bufs, levels * (unsigned)ncpu);
    if (!err)
        err = bpf_map__set_max_entries(s->skel->maps.py_scratch, levels);
    /* An LRU map's entries are allocated at creation, ~1.5 ms for SAMPLE_MAX_THREADS of them:
     * only the off-CPU program uses this one. */
    if (!err && !o->offcpu)
        err = bpf_map__set_max_entries(s->skel->maps.offcpu_since, 1);
    /* So is the thread map's, ~1.2 ms of setup: sized for the targets' threads when they are
     * known, eight times over. A thread pushed out comes back as a new one (taught again). The
     * kernel keeps up to 128 free entries per CPU for its own use, so never fewer than 256 a CPU. */
    if (!err && o->threads && !o->children && !o->launch) {
        size_t want = (size_t)o->threads * 8, floor = (size_t)256 * (unsigned)ncpu;
        want = pow2_at_least(want > floor ? want : floor);
        if (want < SAMPLE_MAX_THREADS)
            err = bpf_map__set_max_entries(s->skel->maps.threads, (uint32_t)want);
    }
    /* The per-process maps are preallocated too (~0.2 ms each for SAMPLE_MAX_TARGETS): without
     * --children the one process named or launched is the only target. */
    if (!o->children) {
        struct bpf_map *per_target[] = {s->skel->maps.targets, s->skel->maps.target_start,
                                        s->skel->maps.py_layouts, s->skel->maps.py_gil};

        for (size_t i = 0; !err && i < sizeof(per_target) / sizeof(per_target[0]); i++)
            err = bpf_map__set_max_entries(per_target[i], 1);
    }
    if (err)
        goto fail;

    if (stage)
        *stage = SAMPLER_STAGE_LOAD;
    err = sample_bpf__load(s->skel);
    if (err)
        goto fail;
    s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_record, s, NULL);
    if (!s->rb) {
        err = -errno ? -errno : -ENOMEM;
        goto fail;
    }
    /* Run-time statistics stay on while this fd is open (and for every program on the system,
     * which is why they are opt-in); a failure only costs the two stats keys. */
    if (o->prog_stats)
        s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (stage)
        *stage = SAMPLER_STAGE_NONE;
    *out = s;
    return 0;
fail:
    sampler_close(s);
    return err < 0 ? err : -EINVAL;
}

int sampler_add_target(struct sampler *s, pid_t tgid)
{
    __u32 key = tgid;
    __u8 one = 1;

    if (bpf_map__update_elem(s->skel->maps.targets, &key, sizeof(key), &one, sizeof(one), BPF_ANY)) {
        s->failed = SAMPLER_STAGE_MAP;
        return -errno;
    }
    return 0;
}

int sampler_set_target_start(struct sampler *s, pid_t tgid, uint64_t start_ticks)
{
    __u32 key = tgid;
    __u64 v = start_ticks;

    if (bpf_map__update_elem(s->skel->maps.target_start, &key, sizeof(key), &v, sizeof(v), BPF_ANY)) {
        s->failed = SAMPLER_STAGE_MAP;
        return -errno;
    }
    return 0;
}

int sampler_add_pending(struct sampler *s, pid_t tgid)
{
    __u32 key = tgid;
    __u8 one = 1;

    if (!s->opts.launch)
        return -EINVAL;
    if (bpf_map__update_elem(s->skel->maps.pending, &key, sizeof(key), &one, sizeof(one), BPF_ANY)) {
        s->failed = SAMPLER_STAGE_MAP;
        return -errno;
    }
    return 0;
}

int sampler_set_py_layout(struct sampler *s, pid_t tgid, const struct sample_pylayout *L)
{
    __u32 key = tgid;

    if (bpf_map__update_elem(s->skel->maps.py_layouts, &key, sizeof(key), L, sizeof(*L), BPF_ANY))
        return -errno;
    return 0;
}

int sampler_set_py_thread(struct sampler *s, pid_t tgid, pid_t tid, uint64_t tstate, uint64_t pthread)
{
    uint64_t end = 0;
    enum stackends_bound b =
        s->opts.stack_copy ? stackends_hint(&s->ends, tgid, tid, pthread, &end) : STACKENDS_NONE;
    int rc = set_thread(s, tid, b != STACKENDS_NONE ? &end : NULL, &tstate);

    if (!rc)
        stackends_set(&s->ends, b);
    return rc;
}

int sampler_set_py_gil(struct sampler *s, pid_t tgid, const struct sample_pygil *g)
{
    __u32 k = (__u32)tgid;

    return bpf_map__update_elem(s->skel->maps.py_gil, &k, sizeof(k), g, sizeof(*g), BPF_ANY) ? -errno : 0;
}

void sampler_py_named(struct sampler *s, pid_t tgid, uint64_t code, uint64_t ident)
{
    uint32_t bit = sample_py_named_bit((__u32)tgid, code, ident);

    /* The program's global data, mapped: a store, no system call. */
    if (s->skel->bss)
        s->skel->bss->py_named[bit / 64] |= 1ull << (bit & 63);
}

void sampler_arm_wake(struct sampler *s)
{
    if (s->skel->bss && !s->skel->bss->wake_armed)
        s->skel->bss->wake_armed = 1;
}

enum sample_gil_mode sampler_gil_mode(const struct sampler *s)
{
    return s->opts.gil;
}

uint32_t sampler_py_frames(const struct sampler *s)
{
    return s->opts.py_frames;
}

/* Online CPUs from /sys/devices/system/cpu/online ("0-3,5"); falls back to all possible. */
static int online_cpus(bool *online, unsigned n)
{
    FILE *f = fopen("/sys/devices/system/cpu/online", "re");
    unsigned a, b;
    int c, found = 0;

    if (!f) {
        for (unsigned i = 0; i < n; i++)
            online[i] = true;
        return n;
    }
    while (fscanf(f, "%u", &a) == 1) {
        b = a;
        c = fgetc(f);
        if (c == '-') {
            if (fscanf(f, "%u", &b) != 1)
                break;
            c = fgetc(f);
        }
        for (unsigned i = a; i <= b && i < n; i++) {
            online[i] = true;
            found++;
        }
        if (c != ',')
            break;
    }
    fclose(f);
    return found;
}

int sampler_attach(struct sampler *s)
{
    unsigned n = s->ncpus_possible;
    bool *online = calloc(n, sizeof(*online));
    int err = 0;

    s->perf_fds = calloc(n, sizeof(*s->perf_fds));
    s->links = calloc(n, sizeof(*s->links));
    if (!online || !s->perf_fds || !s->links) {
        free(online);
        return -ENOMEM;
    }
    for (unsigned i = 0; i < n; i++)
        s->perf_fds[i] = -1;
    online_cpus(online, n);

    if (s->opts.launch) {
        s->exec_link = bpf_program__attach(s->skel->progs.start_on_exec);
        if (!s->exec_link) {
            free(online);
            s->failed = SAMPLER_STAGE_ATTACH;
            return -errno;
        }
    }
    if (s->opts.children) {
        s->fork_link = bpf_program__attach(s->skel->progs.follow_fork);
        if (!s->fork_link) {
            free(online);
            s->failed = SAMPLER_STAGE_ATTACH;
            return -errno;
        }
    }
    if (s->opts.offcpu) {
        s->offcpu_link = bpf_program__attach(s->skel->progs.offcpu);
        if (!s->offcpu_link) {
            free(online);
            s->failed = SAMPLER_STAGE_ATTACH;
            return -errno;
        }
    }
    for (unsigned cpu = 0; cpu < n; cpu++) {
        struct perf_event_attr attr = {
            .type = PERF_TYPE_SOFTWARE,
            .config = PERF_COUNT_SW_CPU_CLOCK,
            .size = sizeof(attr),
            .freq = 1,
            .sample_freq = s->opts.frequency,
        };
        int fd;

        if (!online[cpu])
            continue;
        if (s->opts.no_oncpu) {
            s->ncpus_online++;
            continue;
        }
        fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            if (errno == ENODEV) /* went offline meanwhile */
                continue;
            err = -errno;
            s->failed = SAMPLER_STAGE_PERF;
            break;
        }
        s->perf_fds[cpu] = fd;
        s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.sample, fd);
        if (!s->links[cpu]) {
            err = -errno;
            s->failed = SAMPLER_STAGE_ATTACH;
            break;
        }
        s->ncpus_online++;
    }
    free(online);
    if (!err && !s->ncpus_online)
        err = -ENODEV;
    return err;
}

int sampler_wait(struct sampler *s, uint64_t timeout_ns, int also_fd)
{
    struct pollfd p[2] = {{.fd = ring_buffer__epoll_fd(s->rb), .events = POLLIN},
                          {.fd = also_fd, .events = POLLIN}};
    struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000u),
                          .tv_nsec = (long)(timeout_ns % 1000000000u)};
    int n = ppoll(p, also_fd >= 0 ? 2 : 1, &ts, NULL);

    if (n < 0)
        return -errno;
    return n == 0 ? 0 : also_fd >= 0 && p[1].revents ? 2 : 1;
}

int sampler_poll(struct sampler *s)
{
    return ring_buffer__consume(s->rb);
}

int sampler_get_stats(struct sampler *s, struct sampler_stats *out)
{
    uint64_t sums[SAMPLE_CNT_NR] = {0};
    uint64_t *vals = calloc(s->ncpus_possible, sizeof(*vals));

    if (!vals)
        return -ENOMEM;
    for (__u32 k = 0; k < SAMPLE_CNT_NR; k++) {
        if (bpf_map__lookup_elem(s->skel->maps.counters, &k, sizeof(k), vals,
                                 sizeof(*vals) * s->ncpus_possible, 0))
            continue;
        for (unsigned c = 0; c < s->ncpus_possible; c++)
            sums[k] += vals[c];
    }
    free(vals);
    out->matched = sums[SAMPLE_CNT_MATCHED];
    out->lost = sums[SAMPLE_CNT_LOST];
    out->copy_err = sums[SAMPLE_CNT_COPY_ERR];
    out->copy_retry = sums[SAMPLE_CNT_COPY_RETRY];
    out->reused = sums[SAMPLE_CNT_REUSED];
    out->py_frames = sums[SAMPLE_CNT_PY_FRAMES];
    out->py_stale = sums[SAMPLE_CNT_PY_STALE];
    out->py_broken = sums[SAMPLE_CNT_PY_BROKEN];
    out->py_reads = sums[SAMPLE_CNT_PY_READS];
    out->py_misses = sums[SAMPLE_CNT_PY_MISSES];
    out->py_ident_reads = sums[SAMPLE_CNT_PY_IDENT_READS];
    out->py_quals = sums[SAMPLE_CNT_PY_QUALS];
    out->py_idents = sums[SAMPLE_CNT_PY_IDENTS];
    out->py_cframes = sums[SAMPLE_CNT_PY_CFRAMES];
    out->stack_ends_set = s->ends.set;
    out->stack_end_map_reads = s->ends.map_reads;
    out->stack_ends_fixed = s->ends.fixed;
    out->offcpu_switches = sums[SAMPLE_CNT_OFFCPU_SWITCHES];
    out->offcpu_lost = sums[SAMPLE_CNT_OFFCPU_LOST];
    out->offcpu_unseen = sums[SAMPLE_CNT_OFFCPU_UNSEEN];
    out->gil_not_held = sums[SAMPLE_CNT_GIL_NOT_HELD];
    out->prog_runs = out->prog_time_ns = 0;
    out->offcpu_runs = out->offcpu_time_ns = 0;
    if (s->stats_fd >= 0) {
        struct bpf_prog_info info = {0};
        __u32 len = sizeof(info);

        if (!s->opts.no_oncpu &&
            !bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.sample), &info, &len)) {
            out->prog_runs = info.run_cnt;
            out->prog_time_ns = info.run_time_ns;
        }
        memset(&info, 0, sizeof(info));
        len = sizeof(info);
        if (s->opts.offcpu && !bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.offcpu), &info, &len)) {
            out->offcpu_runs = info.run_cnt;
            out->offcpu_time_ns = info.run_time_ns;
        }
    }
    return 0;
}

unsigned sampler_ncpus(const struct sampler *s)
{
    return s->ncpus_online;
}

size_t sampler_ring_size(const struct sampler *s)
{
    return s->ring_size;
}

enum sampler_stage sampler_failed_stage(const struct sampler *s)
{
    return s->failed;
}

void sampler_detach(struct sampler *s)
{
    bpf_link__destroy(s->fork_link);
    s->fork_link = NULL;
    bpf_link__destroy(s->exec_link);
    s->exec_link = NULL;
    bpf_link__destroy(s->offcpu_link);
    s->offcpu_link = NULL;
    if (s->links)
        for (unsigned i = 0; i < s->ncpus_possible; i++) {
            bpf_link__destroy(s->links[i]);
            s->links[i] = NULL;
        }
    if (s->perf_fds)
        for (unsigned i = 0; i < s->ncpus_possible; i++)
            if (s->perf_fds[i] >= 0) {
                close(s->perf_fds[i]);
                s->perf_fds[i] = -1;
            }
}

void sampler_close(struct sampler *s)
{
    if (!s)
        return;
    sampler_detach(s);
    if (s->stats_fd >= 0)
        close(s->stats_fd);
    free(s->links);
    free(s->perf_fds);
    ring_buffer__free(s->rb);
    sample_bpf__destroy(s->skel);
    stackends_free(&s->ends);
    free(s);
}
