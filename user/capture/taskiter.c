/*
 * taskiter — one run of bpf/taskdump.bpf.c's task iterator (see taskiter.h).
 *
 *   open the skeleton, set the target and sizes (rodata), load
 *   attach the iterator to the target's threads (link_info.task.pid; the program checks the
 *     tgid as well, for kernels that ignore the field)
 *   bpf_iter_create + read(2) until end of file: the kernel visits each thread once
 *   split the output into its (dump_task, sample_event) pairs
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/taskiter.h"
#include "taskdump.skel.h"
#include "util/errmsg.h"
#include "util/monotime.h"

#define TASKITER_PID_INIT_INO 0xEFFFFFFCu /* the initial PID namespace (include/linux/proc_ns.h) */

static bool taskiter_verbose;

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    if (level == LIBBPF_DEBUG || !taskiter_verbose)
        return 0;
    return vfprintf(stderr, fmt, ap);
}

/* Reads the iterator to its end: each read(2) returns whole records (seq_file never splits one
 * show() between reads). */
static int read_all(int fd, struct taskiter *ti)
{
    size_t cap = 1 << 16;
    if (!(ti->buf = malloc(cap)))
        return -ENOMEM;
    for (;;) {
        if (cap - ti->len < (1 << 15)) {
            char *nb = realloc(ti->buf, cap * 2);
            if (!nb)
                return -ENOMEM;
            ti->buf = nb;
            cap *= 2;
        }
        ssize_t n = read(fd, ti->buf + ti->len, cap - ti->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return 0;
        ti->len += (size_t)n;
    }
}

/* Splits the output into its records; a truncated or foreign record ends the list. */
static int split(struct taskiter *ti)
{
    size_t off = 0, cap = 0;
    while (off + sizeof(struct dump_task) + SAMPLE_HDR_SIZE <= ti->len) {
        const struct dump_task *t = (const void *)(ti->buf + off);
        if (t->magic != DUMP_TASK_MAGIC || t->ev_len < SAMPLE_HDR_SIZE ||
            t->ev_len > ti->len - off - sizeof(*t) ||
            sample_event_len((const void *)(ti->buf + off + sizeof(*t))) > t->ev_len)
            return -EPROTO;
        if (ti->n == cap) {
            cap = cap ? cap * 2 : 64;
            struct taskiter_thread *nt = realloc(ti->t, cap * sizeof(*nt));
            if (!nt)
                return -ENOMEM;
            ti->t = nt;
        }
        ti->t[ti->n++] = (struct taskiter_thread){
            .task = t, .ev = (const void *)(ti->buf + off + sizeof(*t)), .len = t->ev_len};
        off += sizeof(*t) + t->ev_len;
    }
    return off == ti->len ? 0 : -EPROTO;
}

int taskiter_snapshot(struct taskiter *ti, pid_t tgid, uint32_t stack_copy, bool kstack, bool verbose,
                      char *err, size_t errlen)
{
    struct taskdump_bpf *skel = NULL;
    struct bpf_link *link = NULL;
    int fd = -1, rc;

    memset(ti, 0, sizeof(*ti));
    uint64_t t0 = monotime_ns();
    struct stat ns;
    /* The iterator sees the kernel's ids; in a container ours differ and the records could not be
     * matched to the threads /proc names. */
    if (stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino != TASKITER_PID_INIT_INO)
        return errmsg(err, errlen, -EOPNOTSUPP,
                      "in a PID namespace: the task iterator names threads "
                      "by the initial namespace's ids");
    if (stack_copy > SAMPLE_STACK_COPY_DEFAULT || (stack_copy & 7))
        return errmsg(err, errlen, -EINVAL, "stack copy of %u bytes", stack_copy);
    taskiter_verbose = verbose;
    libbpf_set_print(print_libbpf);
    if (!(skel = taskdump_bpf__open()))
        return errmsg(err, errlen, errno ? -errno : -ENOENT, "opening the task iterator: %s",
                      strerror(errno ? errno : ENOENT));
    skel->rodata->cfg_tgid = (uint32_t)tgid;
    skel->rodata->cfg_stack_copy = stack_copy;
    skel->rodata->cfg_kernel_stack = kstack;
    if ((rc = taskdump_bpf__load(skel))) {
        rc = errmsg(err, errlen, rc, "loading the task iterator: %s%s", strerror(-rc),
                    rc == -EPERM ? " (needs CAP_BPF and CAP_PERFMON, or root)" : "");
        goto out;
    }
    ti->load_ns = monotime_ns() - t0;
    union bpf_iter_link_info li = {.task = {.pid = (uint32_t)tgid}};
    LIBBPF_OPTS(bpf_iter_attach_opts, ao, .link_info = &li, .link_info_len = sizeof(li));
    link = bpf_program__attach_iter(skel->progs.dump_task, &ao);
    if (!link) /* kernels before 6.1 take no task filter: the program filters */
        link = bpf_program__attach_iter(skel->progs.dump_task, NULL);
    if (!link) {
        rc = errmsg(err, errlen, -errno, "attaching the task iterator: %s", strerror(errno));
        goto out;
    }
    if ((fd = bpf_iter_create(bpf_link__fd(link))) < 0) {
        rc = errmsg(err, errlen, -errno, "creating the task iterator: %s", strerror(errno));
        goto out;
    }
    t0 = monotime_ns();
    rc = read_all(fd, ti);
    ti->pass_ns = monotime_ns() - t0;
    if (rc || (rc = split(ti)))
        rc = errmsg(err, errlen, rc, "reading the task iterator: %s", strerror(-rc));
    else if (!ti->n)
        rc = errmsg(err, errlen, -ESRCH, "the task iterator met no thread of %d", (int)tgid);
out:
    if (fd >= 0)
        close(fd);
    bpf_link__destroy(link);
    taskdump_bpf__destroy(skel);
    if (rc) {
        uint64_t load = ti->load_ns;
        taskiter_free(ti);
        ti->load_ns = load;
    }
    return rc;
}

char taskiter_state_letter(uint32_t state)
{
    /* The kernel's task_state_to_char: the highest bit of TASK_REPORT (0x7f) set names it;
     * exactly TASK_IDLE (uninterruptible, not counted as load: 0x402) is its own letter. */
    static const char letters[] = "SDTtXZP";
    if (state == 0x0402)
        return 'I';
    for (int i = 6; i >= 0; i--)
        if (state & (1u << i))
            return letters[i];
    return 'R';
}

void taskiter_free(struct taskiter *ti)
{
    free(ti->buf);
    free(ti->t);
    memset(ti, 0, sizeof(*ti));
}
