/*
 * collect_target — the collector's targets: found or added per PID, attached as Python (retried
 * while one may still be starting), and the sampler taught by pykernel (see collect.h).
 */
#include "collect/collect_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/pyrt.h"
#include "util/monotime.h"

/* A target that is not Python yet may be a launched command before its exec, or an
 * interpreter still starting: attaching is retried for PY_WINDOW_NS, and at once when its
 * mappings changed (the exec, libpython loaded). Without a runtime in its mappings it is looked
 * at again every PY_RETRY_NS (looking scans each mapped file's symbols); a runtime found but not
 * ready yet (its code type not readable: 1 launch in 8) first PY_RETRY_FIRST_NS later, then
 * twice as long each time up to PY_RETRY_NS: it is usually ready milliseconds later, and a fixed
 * 250 ms left the threads it started meanwhile without Python frames until then (a thread's
 * first blocking call, a second-long sleep, weighed that long without its line). */
#define PY_RETRY_FIRST_NS 2000000ull
#define PY_RETRY_NS       250000000ull
#define PY_WINDOW_NS      3000000000ull

void collect_python_note(const struct collector *c, const struct collect_target *t)
{
    if (c->opts.verbose && c->opts.python)
        fprintf(stderr, "pyebpf-sample: PID %d: no Python frames (%s); native frames only\n", (int)t->pid,
                t->py_err);
}

/* Native frames only (--no-python): the runtime is still looked up, once, for the GDB JIT list
 * CPython keeps (3.15's JIT executors get their names); then the target counts as not Python. */
static int runtime_attach(struct collect_target *t, char *err, size_t errlen)
{
    struct remote r;
    struct pyrt rt;
    int rc;

    remote_init(&r, t->pid);
    rc = pyrt_attach(&rt, &r, t->pid, err, errlen);
    if (!rc) {
        if (t->proc)
            (void)proc_set_gdbjit(t->proc, rt.jit_descriptor); /* -ENOMEM: unnamed, as before */
        t->py = PY_NONE;
    }
    return rc;
}

/* Attaches `t` as Python when it is one; retried while the target may still be starting. The
 * runtime found is attached once: its GDB JIT descriptor goes to proc from there. */
void collect_attach_python(struct collector *c, struct collect_target *t)
{
    char err[256];
    uint64_t now;
    int r;

    if (t->py == PY_ATTACHED || t->py == PY_NONE)
        return;
    now = monotime_ns();
    if (t->py == PY_UNTRIED)
        t->py_first_ns = now;
    else if (now < t->py_next_ns && (!t->proc || proc_generation(t->proc) == t->py_gen))
        return;
    if (!c->opts.python) {
        r = runtime_attach(t, err, sizeof(err));
        if (!r)
            return;
    } else {
        r = pystack_open(&t->ps, t->pid, c->prof, &c->opts.py, err, sizeof(err));
    }
    if (!r) {
        const struct pyrt *rt = pystack_runtime(t->ps);
        r = merge_init(&t->merge, c->prof, rt->path, &rt->eval, c->opts.show_internal);
    }
    if (!r) {
        if (t->proc)
            (void)proc_set_gdbjit(t->proc, pystack_runtime(t->ps)->jit_descriptor);
        t->py = PY_ATTACHED;
        c->st.python_targets++;
        c->threads.name_due = 0; /* the threads seen so far: their names are looked for now */
        pykernel_teach_threads(c->pk, t->ps);
        if (c->opts.verbose)
            fprintf(stderr, "pyebpf-sample: PID %d is Python %s (%s): Python frames merged\n", (int)t->pid,
                    pystack_runtime(t->ps)->version, pystack_runtime(t->ps)->path);
        return;
    }
    pystack_close(t->ps);
    t->ps = NULL;
    snprintf(t->py_err, sizeof(t->py_err), "%s", err[0] ? err : strerror(-r));
    if (now - t->py_first_ns < PY_WINDOW_NS && r != -ESRCH) {
        if (r == -ENOENT) {
            t->py_delay_ns = 0;
            t->py_next_ns = now + PY_RETRY_NS;
        } else {
            t->py_delay_ns = t->py_delay_ns ? t->py_delay_ns * 2 : PY_RETRY_FIRST_NS;
            if (t->py_delay_ns > PY_RETRY_NS)
                t->py_delay_ns = PY_RETRY_NS;
            t->py_next_ns = now + t->py_delay_ns;
        }
        t->py = PY_RETRY;
        t->py_gen = t->proc ? proc_generation(t->proc) : 0;
        return;
    }
    t->py = PY_NONE;
    collect_python_note(c, t);
}

struct collect_target *collect_find_target(struct collector *c, pid_t pid)
{
    struct collect_target *t;

    for (size_t i = 0; i < c->ntargets; i++)
        if (c->targets[i].pid == pid)
            return &c->targets[i];
    if (c->ntargets == c->cap_targets) {
        size_t cap = c->cap_targets ? c->cap_targets * 2 : 4;
        struct collect_target *n = realloc(c->targets, cap * sizeof(*n));

        if (!n)
            return NULL;
        c->targets = n;
        c->cap_targets = cap;
    }
    t = &c->targets[c->ntargets++];
    memset(t, 0, sizeof(*t));
    t->pid = pid;
    if (proc_open(&t->proc, pid, c->elf) < 0)
        t->proc = NULL;
    return t;
}

/* pykernel's lessons, handed to the sampler's maps. */
static int teach_layout(void *s, pid_t pid, const struct sample_pylayout *L)
{
    return sampler_set_py_layout(s, pid, L);
}

static int teach_gil(void *s, pid_t pid, const struct sample_pygil *g)
{
    return sampler_set_py_gil(s, pid, g);
}

static int teach_thread(void *s, pid_t pid, pid_t tid, uint64_t tstate, uint64_t pthread)
{
    return sampler_set_py_thread(s, pid, tid, tstate, pthread);
}

static void teach_named(void *s, pid_t pid, uint64_t code, uint64_t ident)
{
    sampler_py_named(s, pid, code, ident);
}

int collect_set_sampler(struct collector *c, struct sampler *s)
{
    const struct pykernel_teacher teacher = {.layout = teach_layout,
                                             .tstate = teach_thread,
                                             .gil = s && sampler_gil_mode(s) != SAMPLE_GIL_OFF ? teach_gil
                                                                                               : NULL,
                                             .named = teach_named,
                                             .arg = s};

    int rc;

    pykernel_close(c->pk);
    c->pk = NULL;
    c->sampler = s;
    if (!s || (rc = pykernel_open(&c->pk, sampler_py_frames(s) ? &teacher : NULL)) != 0)
        return s ? rc : 0;
    /* targets attached before the sampler existed (a PID named on the command line) */
    for (size_t i = 0; i < c->ntargets; i++)
        if (c->targets[i].py == PY_ATTACHED && c->targets[i].ps)
            pykernel_teach_threads(c->pk, c->targets[i].ps);
    return 0;
}

int collect_python_attach(struct collector *c, pid_t pid)
{
    struct collect_target *t = collect_find_target(c, pid);

    if (!t)
        return -ENOMEM;
    collect_attach_python(c, t);
    return t->py == PY_ATTACHED ? 0 : t->py == PY_NONE ? -ENOENT : -EAGAIN;
}
