/*
 * dump_print — `pyebpf-sample dump`'s output: each thread's stack as text (one line per frame,
 * kernel frames at the leaf) or JSON (docs/dump.schema.json), walked from the profile the
 * snapshot filled; and the stderr notes on how the snapshot was taken.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_state.h"
#include "output/escape.h"
#include "profile/view.h"

static const char *kind_name(enum frame_kind k)
{
    static const char *names[] = {"thread", "python", "native", "jit", "kernel", "other"};
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "other";
}

/* The frames of one thread's stack that are shown, innermost first; returns how many. */
static size_t thread_frames(const struct dump *d, const struct dump_thread *t, uint32_t *out, size_t max)
{
    const struct profile *p = &d->prof;
    size_t n = 0;
    for (uint32_t node = t->leaf; node && n < max; node = p->nodes[node].parent) {
        uint32_t fr = p->nodes[node].frame;
        if (p->frames[fr].kind == FRAME_THREAD || !profile_frame_shown(p, fr))
            continue;
        /* --python-only --kernel: the Python frames and the kernel's wait below them */
        if (d->python_only && p->frames[fr].kind != FRAME_PYTHON &&
            !(d->kernel && p->frames[fr].kind == FRAME_KERNEL))
            continue;
        out[n++] = fr;
    }
    return n;
}

void dump_print_text(const struct dump *d, FILE *f)
{
    uint32_t *frames = malloc(VIEW_MAX_DEPTH * sizeof(*frames));
    char label[1024];
    if (!frames)
        return;
    fprintf(f, "Process %d: %s\n", (int)d->pid, d->cmdline);
    for (size_t i = 0; i < d->n; i++) {
        const struct dump_thread *t = &d->t[i];
        fprintf(f, "\nThread %d \"%s\" (%s CPU, state %c%s%s)%s\n", (int)t->tid, t->comm,
                t->state == 'R' ? "on" : "off", t->state, t->gil ? ", holds the GIL" : "",
                t->woke ? ", woke during the snapshot: its Python frames may be later than the rest" : "",
                t->leaf ? "" : ": no stack read");
        size_t n = thread_frames(d, t, frames, VIEW_MAX_DEPTH);
        for (size_t k = 0; k < n; k++) {
            uint32_t fr = frames[d->reverse ? k : n - 1 - k];
            const struct frame *x = &d->prof.frames[fr];
            profile_frame_label(&d->prof, fr, label, sizeof(label));
            if (x->kind == FRAME_PYTHON)
                fprintf(f, "    %s\n", label);
            else if (x->kind == FRAME_KERNEL) /* the label's "_[k]" is the folded format's mark */
                fprintf(f, "    %s [kernel]\n", x->name);
            else if (x->kind == FRAME_NATIVE && x->file)
                fprintf(f, "    %s [native: %s]\n", label,
                        strrchr(x->file, '/') ? strrchr(x->file, '/') + 1 : x->file);
            else
                fprintf(f, "    %s [%s]\n", label, kind_name(x->kind));
        }
        if (d->locals && t->nlocals >= 0) {
            fputs("    locals of the innermost Python frame:\n", f);
            for (int k = 0; k < t->nlocals; k++)
                fprintf(f, "        %s = %s\n", t->locals[k].name, t->locals[k].value);
        } else if (d->locals) {
            fprintf(f, "    locals: %s\n",
                    t->nlocals == -ENOTSUP ? "not described by this Python (3.13+ only)"
                    : t->nlocals == -ESRCH ? "no Python frame"
                                           : strerror(-t->nlocals));
        }
    }
    free(frames);
}

static void json_str(FILE *f, const char *key, const char *s)
{
    fprintf(f, "\"%s\": \"", key);
    escape_json(f, s ? s : "");
    fputc('"', f);
}

void dump_print_json(const struct dump *d, FILE *f)
{
    uint32_t *frames = malloc(VIEW_MAX_DEPTH * sizeof(*frames));
    if (!frames)
        return;
    fprintf(f, "{\"pid\": %d, ", (int)d->pid);
    json_str(f, "command", d->cmdline);
    static const char *paths[] = {"kernel", "ptrace", "nonblocking"};
    fprintf(f, ", \"snapshot\": \"%s\", \"stopped\": %s, \"threads\": [", paths[d->path],
            d->nstopped ? "true" : "false");
    for (size_t i = 0; i < d->n; i++) {
        const struct dump_thread *t = &d->t[i];
        fprintf(f, "%s\n  {\"tid\": %d, ", i ? "," : "", (int)t->tid);
        json_str(f, "name", t->comm);
        fprintf(
            f,
            ", \"state\": \"%c\", \"on_cpu\": %s, \"stopped\": %s, \"woke\": %s, \"gil\": %s, \"frames\": [",
            t->state, t->state == 'R' ? "true" : "false", t->stopped ? "true" : "false",
            t->woke ? "true" : "false",
            !d->gil_known ? "null"
            : t->gil      ? "true"
                          : "false");
        size_t n = thread_frames(d, t, frames, VIEW_MAX_DEPTH);
        for (size_t k = 0; k < n; k++) {
            const struct frame *x = &d->prof.frames[frames[d->reverse ? n - 1 - k : k]];
            fprintf(f, "%s\n    {\"kind\": \"%s\", ", k ? "," : "", kind_name(x->kind));
            json_str(f, "name", x->name);
            if (x->file) {
                fputs(", ", f);
                json_str(f, x->kind == FRAME_PYTHON ? "file" : "module", x->file);
            }
            if (x->line)
                fprintf(f, ", \"line\": %u", x->line);
            fputc('}', f);
        }
        fputc(']', f);
        if (d->locals) {
            fputs(", \"locals\": ", f);
            if (t->nlocals < 0)
                fputs("null", f);
            for (int k = 0; k < t->nlocals; k++) {
                fputs(k ? ", {" : "[{", f);
                json_str(f, "name", t->locals[k].name);
                fputs(", ", f);
                json_str(f, "value", t->locals[k].value);
                fputc('}', f);
            }
            if (t->nlocals == 0)
                fputs("[]", f);
            else if (t->nlocals > 0)
                fputc(']', f);
        }
        fputc('}', f);
    }
    fputs("\n]}\n", f);
    free(frames);
}

void dump_print_path(const struct dump *d)
{
    if (d->why_ptrace[0] && (d->kernel || d->verbose))
        fprintf(stderr, "pyebpf-sample dump: no in-kernel snapshot (%s): threads stopped with ptrace\n",
                d->why_ptrace);
    if (d->kernel && d->path == DUMP_PTRACE && d->kstack_err)
        fprintf(stderr,
                "pyebpf-sample dump: --kernel: no kernel frames: /proc/%d/task/TID/stack: %s (reading it "
                "needs CAP_SYS_ADMIN; the in-kernel snapshot, BPF rights)\n",
                (int)d->pid, strerror(-d->kstack_err));
    if (!d->verbose)
        return;
    if (d->path == DUMP_KERNEL)
        fprintf(stderr,
                "pyebpf-sample dump: snapshot: in the kernel (task iterator), %zu threads in one pass of "
                "%.3f ms (load %.1f ms), %zu stopped with ptrace (runnable at the visit), %zu woke before "
                "their Python frames were read, %.2f ms in all\n",
                d->n, (double)d->ti.pass_ns / 1e6, (double)d->ti.load_ns / 1e6, d->nstopped, d->nwoke,
                d->snap_ms);
    else if (d->path == DUMP_PTRACE)
        fprintf(stderr, "pyebpf-sample dump: snapshot: ptrace, %zu threads, %zu stopped, %.2f ms\n", d->n,
                d->nstopped, d->snap_ms);
    else
        fprintf(stderr, "pyebpf-sample dump: snapshot: nonblocking, %zu threads, none stopped, %.2f ms\n",
                d->n, d->snap_ms);
}
