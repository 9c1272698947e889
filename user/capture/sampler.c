/*
 * sampler — loads bpf/sample.bpf.c through its skeleton, opens the per-CPU perf events and
 * drains the ring buffer. Lifecycle in sampler.h.
 */
#include "capture/sampler.h"

#include <errno.h>
#include <linux/capability.h>
#include <stddef.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/kbtf.h"
#include "capture/stackends.h"
#include "sample.skel.h"

#define RING_MIN          (4u << 20)
#define PROC_PID_INIT_INO 0xEFFFFFFCu /* the initial PID namespace (include/linux/proc_ns.h) */
#define RING_MAX          (128u << 20)

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

/* Enough ring for 1/16 s of every CPU sampling a target at full record size (records are
 * reserved at that size): three of the main loop's longest drain intervals (20 ms). No more: the
 * kernel zeroes the ring when the map is created and the collector maps it page by page, about
 * 0.35 ms of setup CPU per MiB (1 kHz on 2 CPUs: 8 MiB; at 1/4 s it was 32 MiB, 11 ms). */
static size_t choose_ring_size(const struct sampler_opts *o, unsigned ncpus)
{
    size_t rec = (sizeof(struct sample_event) + o->stack_copy +
                  (size_t)o->py_frames * sizeof(struct sample_pyframe) + 8 + 7) &
                 ~(size_t)7;
    size_t want = (size_t)o->frequency * ncpus * rec / 16;

    /* Context switches come at no fixed rate (tens of thousands a second are common), and each
     * record is reserved at its largest size: off-CPU records get the largest ring. */
    if (o->offcpu)
        want = RING_MAX;
    if (want < RING_MIN)
        want = RING_MIN;
    if (want > RING_MAX)
        want = RING_MAX;
    return pow2_at_least(want);
}

/* The kernel's struct offsets the programs read (struct sample_koff), from its BTF: one walk of
 * the mapped file, in place of libbpf's CO-RE (which reads and indexes all of it). -ENOENT
 * without BTF, -EPROTO when it lacks a field (named with -v). */
static int kernel_offsets(struct sample_koff *o, bool verbose)
{
    static const struct {
        const char *type, *member;
        size_t at;
        uint32_t size; /* 0: not checked (a flexible array) */
    } f[] = {
        {"task_struct", "mm", offsetof(struct sample_koff, task_mm), 8},
        {"task_struct", "group_leader", offsetof(struct sample_koff, task_group_leader), 8},
        {"task_struct", "start_boottime", offsetof(struct sample_koff, task_start_boottime), 8},
        {"task_struct", "pid", offsetof(struct sample_koff, task_pid), 4},
        {"task_struct", "tgid", offsetof(struct sample_koff, task_tgid), 4},
        {"task_struct", "thread_pid", offsetof(struct sample_koff, task_thread_pid), 8},
        {"task_struct", "se.sum_exec_runtime", offsetof(struct sample_koff, task_sum_exec), 8},
        {"task_struct", "se.prev_sum_exec_runtime", offsetof(struct sample_koff, task_prev_sum_exec), 8},
        {"mm_struct", "start_stack", offsetof(struct sample_koff, mm_start_stack), 8},
        {"pid", "level", offsetof(struct sample_koff, pid_level), 4},
        {"pid", "numbers", offsetof(struct sample_koff, pid_numbers), 0},
        {"upid", "nr", offsetof(struct sample_koff, upid_nr), 4},
    };
    struct kbtf k;
    uint32_t off, size;
    int rc = kbtf_open(&k, NULL);

    if (rc)
        return rc == -EINVAL ? -EPROTO : rc;
    for (size_t i = 0; !rc && i < sizeof(f) / sizeof(f[0]); i++) {
        if (kbtf_member(&k, f[i].type, f[i].member, &off, &size) || (f[i].size && size != f[i].size)) {
            if (verbose)
                fprintf(stderr, "pyebpf-sample: the kernel's BTF has no %s.%s of %u bytes\n", f[i].type,
                        f[i].member, f[i].size);
            rc = -EPROTO;
        } else {
            memcpy((char *)o + f[i].at, &off, sizeof(off));
        }
    }
    if (!rc && kbtf_size(&k, "upid", &o->upid_size))
        rc = -EPROTO;
    kbtf_close(&k);
    return rc;
}

static int on_record(void *ctx, void *data, size_t len)
{
    struct sampler *s = ctx;

    uint64_t end = 0;
    enum stackends_bound b;
    int r;

    if (len >= sizeof(struct sample_wake) && (((const struct sample_wake *)data)->flags & SAMPLE_F_WAKE))
        return s->fn(s->ctx, data, len) < 0 ? -1 : 0;
    if (len < sizeof(struct sample_event))
        return 0;
    r = s->fn(s->ctx, data, len);
    if (r < 0)
        return r;
    if (s->opts.stack_copy) {
        b = stackends_learn(&s->ends, data, r > 0, s->opts.stack_copy, &end);
        if (b != STACKENDS_NONE && !sampler_set_stack_end(s, ((const struct sample_event *)data)->tid, end))
            stackends_set(&s->ends, b);
    }
    return 0;
}

int sampler_open(struct sampler **out, const struct sampler_opts *o, sampler_fn fn, void *ctx,
                 enum sampler_stage *stage)
{
    struct sampler *s;
    int err, ncpu;

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
    err = kernel_offsets((struct sample_koff *)&s->skel->rodata->cfg_koff, o->verbose);
    if (err)
        goto fail;
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
    err = bpf_map__set_max_entries(s->skel->maps.events, s->ring_size);
    /* An LRU map's entries are allocated at creation, ~1.5 ms for SAMPLE_MAX_THREADS of them:
     * only the off-CPU program uses this one. */
    if (!err && !o->offcpu)
        err = bpf_map__set_max_entries(s->skel->maps.offcpu_since, 1);
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

int sampler_set_stack_end(struct sampler *s, pid_t tid, uint64_t end)
{
    __u32 key = tid;
    __u64 val = end;

    if (bpf_map__update_elem(s->skel->maps.stack_ends, &key, sizeof(key), &val, sizeof(val), BPF_ANY))
        return -errno;
    return 0;
}

int sampler_set_py_layout(struct sampler *s, pid_t tgid, const struct sample_pylayout *L)
{
    __u32 key = tgid;

    if (bpf_map__update_elem(s->skel->maps.py_layouts, &key, sizeof(key), L, sizeof(*L), BPF_ANY))
        return -errno;
    return 0;
}

int sampler_set_py_thread(struct sampler *s, pid_t tid, uint64_t tstate)
{
    __u32 key = tid;
    __u64 val = tstate;

    if (bpf_map__update_elem(s->skel->maps.py_threads, &key, sizeof(key), &val, sizeof(val), BPF_ANY))
        return -errno;
    return 0;
}

int sampler_set_py_gil(struct sampler *s, pid_t tgid, const struct sample_pygil *g)
{
    __u32 k = (__u32)tgid;

    return bpf_map__update_elem(s->skel->maps.py_gil, &k, sizeof(k), g, sizeof(*g), BPF_ANY) ? -errno : 0;
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
    out->py_idents = sums[SAMPLE_CNT_PY_IDENTS];
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

/* Whether the effective set holds capability `cap` (false when unknown). */
static bool has_cap(int cap)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2] = {{0}};

    if (syscall(SYS_capget, &h, d))
        return false;
    return d[cap / 32].effective & (1u << (cap % 32));
}

/* "CAP_BPF and CAP_PERFMON", naming only those missing; empty when none is. */
static const char *missing_caps(void)
{
    bool admin = has_cap(CAP_SYS_ADMIN);
    bool bpf = admin || has_cap(CAP_BPF);
    bool perfmon = admin || has_cap(CAP_PERFMON);

    if (!bpf && !perfmon)
        return "CAP_BPF and CAP_PERFMON";
    if (!bpf)
        return "CAP_BPF";
    if (!perfmon)
        return "CAP_PERFMON";
    return "";
}

const char *sampler_strerror(enum sampler_stage stage, int err, char *buf, size_t size)
{
    const char *alt = "; without BPF rights, --no-bpf samples Python frames with ptrace rights only";
    const char *missing = missing_caps();

    if ((err == -EPERM || err == -EACCES) && *missing &&
        (stage == SAMPLER_STAGE_LOAD || stage == SAMPLER_STAGE_PERF || stage == SAMPLER_STAGE_ATTACH ||
         stage == SAMPLER_STAGE_OPEN)) {
        snprintf(buf, size,
                 "no permission to use BPF (%s): missing capability %s (run as root, "
                 "or grant CAP_BPF and CAP_PERFMON)%s",
                 strerror(-err), missing, alt);
        return buf;
    }
    switch (stage) {
    case SAMPLER_STAGE_OPEN:
        if (err == -EPROTO)
            snprintf(buf, size,
                     "cannot open the BPF program: the kernel's BTF (/sys/kernel/btf/vmlinux) does not "
                     "describe a field it reads (-v names it)%s",
                     alt);
        else if (err == -ENOENT || err == -ESRCH)
            snprintf(buf, size,
                     "cannot open the BPF program: the kernel has no BTF "
                     "(/sys/kernel/btf/vmlinux) or BPF support%s",
                     alt);
        else
            snprintf(buf, size, "cannot open the BPF program: %s", strerror(-err));
        break;
    case SAMPLER_STAGE_LOAD:
        if (access("/sys/kernel/btf/vmlinux", R_OK))
            snprintf(buf, size,
                     "cannot load the BPF program: the kernel has no BTF (/sys/kernel/btf/vmlinux, "
                     "CONFIG_DEBUG_INFO_BTF) to relocate it against (%s)%s",
                     strerror(-err), alt);
        else if (err == -ENOSYS)
            snprintf(buf, size, "this kernel has no BPF support (bpf() not implemented)%s", alt);
        else if (err == -EPERM)
            snprintf(buf, size,
                     "BPF is not allowed here (%s), although the capabilities are "
                     "held: a security module or kernel.unprivileged_bpf_disabled/lockdown "
                     "refuses it%s",
                     strerror(-err), alt);
        else {
            struct utsname u;

            if (uname(&u))
                strcpy(u.release, "?");
            snprintf(buf, size,
                     "the kernel (%s) refused the BPF program: %s; it needs Linux 5.15 or later "
                     "with BTF (run with -v for the verifier log)",
                     u.release, strerror(-err));
        }
        break;
    case SAMPLER_STAGE_PERF:
        if (err == -EPERM || err == -EACCES)
            snprintf(buf, size,
                     "not allowed to open CPU-wide perf events (%s): needs CAP_PERFMON "
                     "or kernel.perf_event_paranoid <= -1%s",
                     strerror(-err), alt);
        else if (err == -ENOENT || err == -ENOSYS || err == -EOPNOTSUPP)
            snprintf(buf, size, "this kernel has no perf events for cpu-clock sampling: %s", strerror(-err));
        else if (err == -EINVAL)
            snprintf(buf, size,
                     "perf_event_open refused the frequency (see "
                     "/proc/sys/kernel/perf_event_max_sample_rate): %s",
                     strerror(-err));
        else
            snprintf(buf, size, "perf_event_open failed: %s", strerror(-err));
        break;
    case SAMPLER_STAGE_ATTACH:
        snprintf(buf, size, "cannot attach the BPF program to a perf event: %s", strerror(-err));
        break;
    case SAMPLER_STAGE_MAP:
        snprintf(buf, size, "cannot update a BPF map: %s", strerror(-err));
        break;
    default:
        snprintf(buf, size, "%s", strerror(-err));
    }
    return buf;
}
