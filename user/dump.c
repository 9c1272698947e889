/*
 * dump — `pyebpf-sample dump PID`: one snapshot of every thread of a process, printed like a
 * backtrace (or as JSON), through the same collector a sampling run uses.
 *
 * With BPF (the default), the snapshot is taken in the kernel (capture/taskiter.c):
 *
 *   run bpf/taskdump.bpf.c's task iterator once: per thread its state, kernel stack, user
 *     registers (saved at its last kernel entry) and a copy of its stack top, as the sampler's
 *     record; a thread that waits is not stopped, its picture does not move while it waits
 *   a thread the iterator found runnable (on a CPU its registers are in that CPU; preempted,
 *     its Python frames would move before they are read): stopped with ptrace, read as below
 *   each waiting thread's record → collect_sample (unwind, Python frames read from memory,
 *     merge, kernel frames); then its context-switch count against the iterator's: one that
 *     ran meanwhile is marked "woke"
 *
 * With --no-bpf (or when BPF is not allowed):
 *
 *   list /proc/PID/task, note each thread's state (R: on CPU; S, D, ...: off CPU)
 *   --kernel: each waiting thread's /proc/PID/task/TID/stack, before any stop (a stopped
 *     thread's kernel stack shows the ptrace stop, not what it waited for)
 *   stop every thread (PTRACE_SEIZE + PTRACE_INTERRUPT)      ─┐ the snapshot: nothing runs
 *   per thread: registers (PTRACE_GETREGS) + a copy of the    │ between the first thread's
 *     stack top → a sample record as the BPF program writes   │ stop and the last one's read
 *     it → collect_sample (unwind, Python frames, merge)     ─┘
 *
 * then, either way: the GIL holder (the lock word and last holder: pyrt.h), resume every stopped
 * thread (PTRACE_DETACH), walk the profile: one stack per thread under its "thread TID (comm)".
 *
 * Feeding records to collect_sample keeps one pipeline: the unwinder, the Python reader, the
 * merge and the kernel frames are the ones every profile goes through. --nonblocking stops
 * nothing and reads the Python frames alone (collect_python_sample, as --no-bpf does), so the
 * stacks may tear against a running target but it never pauses.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/remote.h"
#include "capture/taskiter.h"
#include "collect/collect.h"
#include "dump.h"
#include "dump_state.h"
#include "dump_kstack.h"
#include "profile/view.h"
#include "python/pylocals.h"
#include "python/pyrt.h"
#include "symbols/ksyms.h"
#include "target.h"
#include "util/monotime.h"

static void usage(FILE *f)
{
    fputs("usage: pyebpf-sample dump PID [--kernel] [--reverse] [--json] [--locals] [--python-only]\n"
          "                         [--no-bpf | --nonblocking] [--verbose]\n"
          "  prints every thread of PID once: thread id and name, on or off CPU, and its stack,\n"
          "  Python frames (qualname (file:line)) merged with native ones, innermost last;\n"
          "  with BPF the snapshot is taken in the kernel (one pass of a task iterator): waiting\n"
          "  threads are not stopped; runnable ones are stopped with ptrace for their user part\n"
          "      --kernel       the kernel frames each waiting thread is in, at the leaf (names\n"
          "                     from /proc/kallsyms); without BPF read from\n"
          "                     /proc/PID/task/TID/stack (root) before the ptrace stop\n"
          "      --reverse      innermost frame first\n"
          "      --json         one JSON document (schema: docs/dump.schema.json)\n"
          "      --python-only  Python frames only (and kernel ones with --kernel)\n"
          "      --locals       the innermost Python frame's local variables: names, and the\n"
          "                     repr of small ints, floats, str, bool and None read from the\n"
          "                     target's memory (no target code runs; CPython 3.13+)\n"
          "      --no-bpf       no in-kernel snapshot: stop every thread with ptrace, read it,\n"
          "                     resume it (also taken, with a note, when BPF is not allowed)\n"
          "      --nonblocking  do not stop the threads (ptrace); read the Python frames of the\n"
          "                     running process (they may tear), no native or kernel frames\n"
          "  -v, --verbose      say on stderr how the snapshot was taken (path, threads stopped,\n"
          "                     time)\n",
          f);
}

static int read_threads(struct dump *d)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)d->pid);
    DIR *dir = opendir(path);
    if (!dir)
        return -errno;
    d->t = calloc(DUMP_MAX_THREADS, sizeof(*d->t));
    if (!d->t) {
        closedir(dir);
        return -ENOMEM;
    }
    struct dirent *e;
    while ((e = readdir(dir)) && d->n < DUMP_MAX_THREADS) {
        int tid = atoi(e->d_name);
        if (tid <= 0)
            continue;
        struct dump_thread *t = &d->t[d->n];
        char buf[512];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)d->pid, tid);
        FILE *f = fopen(path, "re");
        if (!f)
            continue; /* gone since the listing */
        size_t len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[len] = 0;
        /* "tid (comm) S ...": the comm may hold spaces and parentheses; the last ')' ends it. */
        char *open = strchr(buf, '('), *close = strrchr(buf, ')');
        if (!open || !close || close < open || close[1] != ' ')
            continue;
        size_t cl = (size_t)(close - open - 1) < sizeof(t->comm) - 1 ? (size_t)(close - open - 1)
                                                                     : sizeof(t->comm) - 1;
        memcpy(t->comm, open + 1, cl);
        t->state = close[2];
        t->tid = tid;
        d->n++;
    }
    closedir(dir);
    return d->n ? 0 : -ESRCH;
}

/* The BPF path's threads: the iterator's, with the state each had at its visit. */
static int threads_from_kernel(struct dump *d)
{
    if (!(d->t = calloc(d->ti.n, sizeof(*d->t))))
        return -ENOMEM;
    for (size_t i = 0; i < d->ti.n && d->n < DUMP_MAX_THREADS; i++) {
        const struct taskiter_thread *r = &d->ti.t[i];
        struct dump_thread *t = &d->t[d->n++];
        t->tid = (pid_t)r->ev->tid;
        t->state = taskiter_state_letter(r->task->state);
        memcpy(t->comm, r->ev->comm, sizeof(t->comm));
        t->comm[sizeof(t->comm) - 1] = '\0';
        t->rec = r;
    }
    return d->n ? 0 : -ESRCH;
}

/* --kernel on the ptrace path: every thread's kernel stack from /proc, before any is stopped. */
static void read_kstacks(struct dump *d)
{
    struct ksyms *k = NULL;
    if ((d->kstack_err = ksyms_open(&k)))
        return;
    for (size_t i = 0; i < d->n; i++) {
        struct dump_thread *t = &d->t[i];
        /* A runnable thread waits for nothing; what /proc shows of it (a preemption, a stack
         * moving under the reader) would be of another instant than its stop, as on the BPF
         * path. */
        if (t->state == 'R')
            continue;
        if (!(t->kstack = calloc(SAMPLE_MAX_STACK_DEPTH, sizeof(*t->kstack)))) {
            d->kstack_err = -ENOMEM;
            break;
        }
        int err = dump_kstack_read(k, d->pid, t->tid, t->kstack, SAMPLE_MAX_STACK_DEPTH, &t->nk);
        if (err && err != -ENOENT && !d->kstack_err)
            d->kstack_err = err;
    }
    ksyms_close(k);
}

/* Stops one thread in a ptrace stop; resumed by PTRACE_DETACH. */
static int stop_thread(struct dump_thread *t)
{
    int st;
    if (ptrace(PTRACE_SEIZE, t->tid, NULL, NULL) != 0)
        return -errno;
    if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) != 0 || waitpid(t->tid, &st, __WALL) != t->tid) {
        int err = -errno;
        ptrace(PTRACE_DETACH, t->tid, NULL, NULL);
        return err;
    }
    t->stopped = true;
    return 0;
}

/* The record the BPF program would write for a sample of this stopped thread: user registers and
 * the top of its stack (the largest size that reads, as the program's fallbacks do). */
static int read_thread(struct dump *d, struct dump_thread *t, struct sample_event *ev, struct remote *r)
{
#if defined(__x86_64__)
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, t->tid, NULL, &regs) != 0)
        return -errno;
    memset(ev, 0, sizeof(*ev));
    ev->regs = (struct sample_regs){.ip = regs.rip,
                                    .sp = regs.rsp,
                                    .bp = regs.rbp,
                                    .bx = regs.rbx,
                                    .r12 = regs.r12,
                                    .r13 = regs.r13,
                                    .r14 = regs.r14,
                                    .r15 = regs.r15};
#else
    (void)r;
    memset(ev, 0, sizeof(*ev));
    ev->flags = SAMPLE_F_NO_UREGS;
#endif
    ev->pid = (uint32_t)d->pid;
    ev->tid = (uint32_t)t->tid;
    ev->time_ns = monotime_ns();
    memcpy(ev->comm, t->comm, sizeof(ev->comm));
#if defined(__x86_64__)
    ev->stack_addr = ev->regs.sp;
    for (uint32_t len = DUMP_STACK_COPY; len >= SAMPLE_STACK_COPY_MIN; len /= 2) {
        if (remote_read(r, ev->stack_addr, ev->stack, len) == 0) {
            ev->stack_len = len;
            break;
        }
    }
    if (!ev->stack_len)
        ev->flags |= SAMPLE_F_COPY_ERR;
#endif
    /* --no-bpf --kernel: read before the stop (a stopped thread's shows the ptrace stop); after
     * the copy, where the record keeps it (sample.h) */
    if (t->nk) {
        memcpy(sample_kstack(ev), t->kstack, t->nk * sizeof(*t->kstack));
        ev->kstack_len = (uint32_t)(t->nk * sizeof(*t->kstack));
        ev->flags |= SAMPLE_F_IN_KERNEL;
    }
    return collect_sample(d->c, ev, sample_event_len(ev));
}

/* Which thread holds the GIL: the lock word and the thread state that took it last (the main
 * interpreter's own GIL, or _PyRuntime's on 3.11: pyrt.h), mapped to its thread id. */
static void read_gil(struct dump *d, struct remote *r)
{
    uint64_t interp = 0, holder, tid = 0;
    if (!d->have_rt || pyrt_gil_holder(&d->rt, r, &interp, &holder))
        return;
    d->gil_known = true;
    if (!holder || remote_read(r, holder + d->rt.L.ts_native_thread_id, &tid, sizeof(tid)))
        return;
    for (size_t i = 0; i < d->n; i++)
        d->t[i].gil = (uint64_t)d->t[i].tid == tid;
}

/* --locals: each thread's innermost Python frame's local variables. */
static void read_locals(struct dump *d, struct remote *r)
{
    for (size_t i = 0; i < d->n; i++) {
        struct dump_thread *t = &d->t[i];
        t->nlocals = -ENOMEM;
        if (!d->have_rt) {
            t->nlocals = -ENOENT;
            continue;
        }
        if (!(t->locals = calloc(PYLOCALS_MAX, sizeof(*t->locals))))
            continue;
        t->nlocals = pylocals_read(&d->rt, r, t->tid, t->locals, PYLOCALS_MAX);
    }
}

/* Whether the snapshot stops this thread: every one on the ptrace path; on the BPF path only one
 * the iterator found runnable: on a CPU its user registers were not in memory to read, and
 * either way its Python frames (read after the pass) would be of a later instant than its
 * registers. A waiting thread's picture does not move until it wakes. */
static bool needs_stop(const struct dump *d, const struct dump_thread *t)
{
    if (d->path == DUMP_PTRACE)
        return true;
    return d->path == DUMP_KERNEL && !(t->rec->task->flags & DUMP_TASK_NO_USER) &&
           ((t->rec->task->flags & DUMP_TASK_ON_CPU) || t->state == 'R');
}

/* The BPF path's check that a thread read from its record waited all along: its context-switch
 * count (/proc status) is still the one the iterator saw. */
static void check_woken(struct dump *d)
{
    char path[64], line[128];
    for (size_t i = 0; i < d->n; i++) {
        struct dump_thread *t = &d->t[i];
        if (!t->rec || t->stopped || (t->rec->task->flags & DUMP_TASK_NO_USER))
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)d->pid, (int)t->tid);
        FILE *f = fopen(path, "re");
        uint64_t n = 0, v;
        if (!f)
            continue;
        while (fgets(line, sizeof(line), f))
            if (sscanf(line, "voluntary_ctxt_switches: %" SCNu64, &v) == 1 ||
                sscanf(line, "nonvoluntary_ctxt_switches: %" SCNu64, &v) == 1)
                n += v;
        fclose(f);
        if (n != t->rec->task->switches) {
            t->woke = true;
            d->nwoke++;
        }
    }
}

/* Takes the snapshot: the in-kernel records fed to the collector, or every thread stopped, read,
 * resumed (see the top of the file). */
static int snapshot(struct dump *d, uint64_t t0)
{
    struct sample_event *ev = malloc(sizeof(*ev) + DUMP_STACK_COPY + SAMPLE_STACK_BYTES);
    struct remote r;
    if (!ev)
        return -ENOMEM;
    remote_init(&r, d->pid);
    if (d->path == DUMP_PTRACE && d->kernel)
        read_kstacks(d);
    collect_python_attach(d->c, d->pid);
    for (size_t i = 0; i < d->n; i++)
        if (needs_stop(d, &d->t[i]) && stop_thread(&d->t[i]) == 0)
            d->nstopped++; /* a thread that exited meanwhile is left out below */
    int rc = 0;
    for (size_t i = 0; i < d->n && rc >= 0; i++) {
        struct dump_thread *t = &d->t[i];
        if (d->path == DUMP_NONBLOCKING)
            rc = collect_python_sample(d->c, d->pid, t->tid, t->comm);
        else if (t->stopped)
            rc = read_thread(d, t, ev, &r);
        else if (d->path == DUMP_KERNEL)
            rc = collect_sample(d->c, t->rec->ev, t->rec->len);
        if (rc == -EAGAIN)
            rc = 0;
    }
    if (d->path == DUMP_KERNEL)
        check_woken(d);
    d->snap_ms = (double)(monotime_ns() - t0) / 1e6;
    char err[256];
    d->have_rt = pyrt_attach(&d->rt, &r, d->pid, err, sizeof(err)) == 0;
    read_gil(d, &r);
    if (d->locals)
        read_locals(d, &r);
    for (size_t i = 0; i < d->n; i++)
        if (d->t[i].stopped)
            ptrace(PTRACE_DETACH, d->t[i].tid, NULL, NULL);
    free(ev);
    return rc < 0 ? rc : 0;
}

/* The in-kernel snapshot unless --no-bpf or --nonblocking; when BPF is not allowed, the ptrace
 * path, with the reason kept for dump_print_path. */
static int choose_path(struct dump *d)
{
    d->path = d->nonblocking ? DUMP_NONBLOCKING : d->no_bpf ? DUMP_PTRACE : DUMP_KERNEL;
    if (d->path != DUMP_KERNEL)
        return 0;
    int rc = taskiter_snapshot(&d->ti, d->pid, DUMP_STACK_COPY, d->kernel, d->verbose, d->why_ptrace,
                               sizeof(d->why_ptrace));
    if (rc == -ENOMEM)
        return rc;
    if (rc)
        d->path = DUMP_PTRACE;
    return 0;
}

/* Each thread's stack: the leaf node under its thread frame ("thread TID (comm)"). */
static void find_stacks(struct dump *d)
{
    const struct profile *p = &d->prof;
    for (uint32_t n = 1; n < p->nnodes; n++) {
        if (!p->nodes[n].self)
            continue;
        uint32_t root = n;
        while (p->nodes[root].parent != 0)
            root = p->nodes[root].parent;
        const struct frame *f = &p->frames[p->nodes[root].frame];
        int tid;
        if (f->kind != FRAME_THREAD || sscanf(f->name, "thread %d", &tid) != 1)
            continue;
        for (size_t i = 0; i < d->n; i++)
            if (d->t[i].tid == tid)
                d->t[i].leaf = n;
    }
}

int dump_main(int argc, char **argv)
{
    enum {
        OPT_REVERSE = 256,
        OPT_JSON,
        OPT_NONBLOCKING,
        OPT_PYTHON_ONLY,
        OPT_LOCALS,
        OPT_KERNEL,
        OPT_NO_BPF
    };
    static const struct option longopts[] = {
        {"kernel", no_argument, NULL, OPT_KERNEL},
        {"no-bpf", no_argument, NULL, OPT_NO_BPF},
        {"verbose", no_argument, NULL, 'v'},
        {"reverse", no_argument, NULL, OPT_REVERSE},
        {"json", no_argument, NULL, OPT_JSON},
        {"nonblocking", no_argument, NULL, OPT_NONBLOCKING},
        {"python-only", no_argument, NULL, OPT_PYTHON_ONLY},
        {"locals", no_argument, NULL, OPT_LOCALS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct dump d = {0};
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "hv", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_KERNEL:
            d.kernel = true;
            break;
        case OPT_NO_BPF:
            d.no_bpf = true;
            break;
        case 'v':
            d.verbose = true;
            break;
        case OPT_REVERSE:
            d.reverse = true;
            break;
        case OPT_JSON:
            d.json = true;
            break;
        case OPT_NONBLOCKING:
            d.nonblocking = true;
            break;
        case OPT_PYTHON_ONLY:
            d.python_only = true;
            break;
        case OPT_LOCALS:
            d.locals = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    char *end;
    long pid = optind == argc - 1 ? strtol(argv[optind], &end, 10) : 0;
    if (pid <= 0 || *end) {
        usage(stderr);
        return 2;
    }
    if (d.nonblocking && d.kernel) {
        fputs("pyebpf-sample dump: --kernel needs a snapshot; --nonblocking reads Python frames only\n",
              stderr);
        return 2;
    }
    if (target_check((pid_t)pid))
        return 1;
    d.pid = target_tgid((pid_t)pid);
    target_cmdline(d.pid, NULL, d.cmdline, sizeof(d.cmdline));

    int rc = profile_init(&d.prof);
    struct collect_opts co = {
        .unwind = UNWIND_AUTO,
        .kernel = d.kernel,
        .python = true,
        .python_only = d.nonblocking,
        .py = {.max_depth = COLLECT_MAX_PY},
    };
    d.prof.show_threads = true;
    if (!rc)
        rc = collect_open(&d.c, &co, &d.prof);
    uint64_t t0 = monotime_ns();
    if (!rc)
        rc = choose_path(&d);
    if (!rc)
        rc = d.path == DUMP_KERNEL ? threads_from_kernel(&d) : read_threads(&d);
    if (!rc)
        rc = snapshot(&d, t0);
    if (rc) {
        fprintf(stderr, "pyebpf-sample dump: PID %ld: %s\n", pid, strerror(-rc));
    } else {
        dump_print_path(&d);
        find_stacks(&d);
        if (d.json)
            dump_print_json(&d, stdout);
        else
            dump_print_text(&d, stdout);
    }
    collect_close(d.c);
    profile_free(&d.prof);
    for (size_t i = 0; d.t && i < d.n; i++) {
        free(d.t[i].locals);
        free(d.t[i].kstack);
    }
    free(d.t);
    taskiter_free(&d.ti);
    return rc ? 1 : 0;
}
