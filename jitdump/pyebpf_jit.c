/*
 * pyebpf_jit._native — per-function frame-pointer trampolines for CPython 3.11–3.15.
 *
 * With the module on, gdb and perf see Python functions on the native stack:
 *
 *   (gdb) bt
 *   #0  0x... in __GI___clock_nanosleep (...)
 *   #5  0x... in _PyEval_EvalFrameDefault ()
 *   #6  0x7f... in py::level3:/tmp/app.py ()
 *   #7  0x... in pyebpf_eval (...)
 *   #8  0x... in _PyFunction_Vectorcall ()
 *   ...
 *
 * How: a PEP 523 frame-evaluation hook (pyebpf_eval) runs every Python frame through a small
 * trampoline of its own code object (push rbp; mov rbp,rsp; call evaluator; pop rbp; ret). The
 * trampoline is made the first time the code object runs, cached in the code object's co_extra
 * slot, and published through libpyjit (GDB JIT interface, perf jitdump, perf map) under the name
 * py::<qualname>:<filename>, with the function's first line as its line info. When the code
 * object dies its region is retired and the slot handed out again later (the bytes never change,
 * see pyebpf_jit_arena.h).
 *
 * Cost per call: one co_extra lookup and one extra call/return. Cost per new code object: one
 * libpyjit publish (see docs/python-jit.md for measurements).
 *
 * Threads: with the GIL, all state here is touched with the GIL held; libpyjit is thread-safe by
 * itself. In a free-threaded build (3.14t, 3.15t) several threads run frames at once: making a
 * trampoline, retiring one and the counters are under one PyMutex (st_lock; it detaches the
 * thread state while it waits, so a stop-the-world pause never waits on a thread blocked here),
 * and the slot is checked again under it, so concurrent first calls of one code object publish
 * one trampoline. co_extra is read through the API there (the direct read assumes no other thread
 * reallocates the array), and the module says it does not need the GIL.
 *
 * Layout checks before the hook goes in (enable()): the code object is found where FRAME_CODE
 * says in the frame of a probe function (frame_layout_ok), and co_extra reads back as written
 * (extra_layout_ok). With the interpreter's internal headers at hand, pyebpf_jit_layout.c also
 * checks FRAME_CODE against them at build time.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pyebpf_jit_arena.h"
#include "pyebpf_jit_frame.h"
#include "pyjit.h"

/* The frame layouts and evaluator API below are those of 3.11–3.15; other versions are refused
 * here and, with a clear message, by the package's __init__.py before it loads this module. */
#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x03100000
#error "pyebpf_jit supports CPython 3.11 to 3.15"
#endif
#if defined(Py_GIL_DISABLED) && PY_VERSION_HEX < 0x030E0000
#error "pyebpf_jit supports free-threaded builds from 3.14 on"
#endif

#ifdef Py_GIL_DISABLED
static PyMutex st_lock;
#define ST_LOCK()    PyMutex_Lock(&st_lock)
#define ST_UNLOCK()  PyMutex_Unlock(&st_lock)
#define DIRECT_EXTRA 0 /* another thread's code_set_extra may reallocate co_extra meanwhile */
#else
#define ST_LOCK()    ((void)0)
#define ST_UNLOCK()  ((void)0)
#define DIRECT_EXTRA 1
#endif

/* 3.12 renamed the co_extra API to PyUnstable_* and deprecated the old names. */
#if PY_VERSION_HEX >= 0x030C0000
#define code_get_extra      PyUnstable_Code_GetExtra
#define code_set_extra      PyUnstable_Code_SetExtra
#define request_extra_index PyUnstable_Eval_RequestCodeExtraIndex
#else
#define code_get_extra      _PyCode_GetExtra
#define code_set_extra      _PyCode_SetExtra
#define request_extra_index _PyEval_RequestCodeExtraIndex
#endif

/* co_extra points at { Py_ssize_t size; void *extras[size]; } (CPython's private
 * _PyCodeObjectExtra, unchanged since 3.6). Reading it directly saves a call through the PLT on
 * every Python call; enable() checks the layout against the API first (extra_layout_ok). */
struct code_extra_view {
    Py_ssize_t size;
    void *extras[];
};

typedef PyObject *(*tramp_call)(PyThreadState *, struct _PyInterpreterFrame *, int, _PyFrameEvalFunction);

/* co_extra value of a code object we could not give a trampoline (run it without one). */
static char no_trampoline;
#define NO_TRAMPOLINE ((void *)&no_trampoline)

static struct {
    struct pyjit *jit;
    unsigned sinks;
    int opened; /* sinks chosen (and jit opened when sinks != 0) */
    struct tramp_arena arena;
    Py_ssize_t extra_index;
    PyInterpreterState *interp;
    _PyFrameEvalFunction prev; /* the evaluator before enable() */
    _PyFrameEvalFunction eval; /* what trampolines call */
    int enabled;
    int finalizing;
    int fast_extra; /* the co_extra layout matched: read it directly */
    int frame_ok;   /* frame_layout_ok() passed */
    uint64_t made, reused, failed, retired, publish_ns;
} st = {.extra_index = -1};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* -- Names ------------------------------------------------------------------------------- */

static const char *utf8_or(PyObject *s, const char *fallback)
{
    if (!s || !PyUnicode_Check(s))
        return fallback;
    const char *u = PyUnicode_AsUTF8(s);
    if (!u) {
        PyErr_Clear(); /* e.g. lone surrogates in a file name */
        return fallback;
    }
    return u;
}

/* The caller's exception (a generator being thrown into has one set) must survive name
 * building, which may raise and clear its own. */
#if PY_VERSION_HEX >= 0x030C0000
#define SAVE_EXC(x)    PyObject *x = PyErr_GetRaisedException()
#define RESTORE_EXC(x) PyErr_SetRaisedException(x)
#else
#define SAVE_EXC(x)                                                                                          \
    PyObject *x##_t, *x##_v, *x##_tb;                                                                        \
    PyErr_Fetch(&x##_t, &x##_v, &x##_tb)
#define RESTORE_EXC(x) PyErr_Restore(x##_t, x##_v, x##_tb)
#endif

/* -- Making and retiring trampolines ------------------------------------------------------ */

static inline void *trampoline_of(PyObject *code);

/* Called with st_lock held (free-threaded builds); returns with it still held. */
static void *tramp_make_locked(PyCodeObject *co, const char *qualname, const char *filename)
{
    uint64_t t0 = now_ns();
    void *slot;
    int reused;
    int err = tramp_arena_get(&st.arena, &slot, &reused);
    if (err) {
        static int said;
        if (!said++)
            fprintf(stderr,
                    "pyebpf_jit: no executable memory for trampolines (%s); functions without "
                    "one run as usual\n",
                    strerror(-err));
        goto fail;
    }

    SAVE_EXC(exc);
    char name[1024];
    snprintf(name, sizeof(name), "py::%s:%s", qualname, filename);

    uint64_t id = 0;
    if (st.jit) {
        struct pyjit_line line = {.offset = 0, .line = (uint32_t)co->co_firstlineno};
        struct pyjit_region r = {
            .code = slot,
            .size = tramp_layout.size,
            .name = name,
            .unwind = PYJIT_UNWIND_TRAMPOLINE,
            .push_end = tramp_layout.push_end,
            .setup_end = tramp_layout.setup_end,
            .pop_end = tramp_layout.pop_end,
            .filename = filename,
            .lines = &line,
            .nlines = 1,
        };
        /* A sink that fails switches itself off inside libpyjit; the trampoline still works. */
        (void)pyjit_publish(st.jit, &r, &id);
    }
    int set = code_set_extra((PyObject *)co, st.extra_index, slot);
    if (set != 0)
        PyErr_Clear();
    RESTORE_EXC(exc);
    if (set != 0) {
        if (st.jit && id)
            pyjit_retire(st.jit, id);
        tramp_arena_put(&st.arena, slot);
        goto fail;
    }
    uint64_t *tag = tramp_arena_tag(&st.arena, slot);
    if (tag)
        *tag = id;
    if (reused)
        st.reused++;
    st.made++;
    st.publish_ns += now_ns() - t0;
    return slot;

fail:
    st.failed++;
    SAVE_EXC(exc2);
    if (code_set_extra((PyObject *)co, st.extra_index, NO_TRAMPOLINE) != 0)
        PyErr_Clear();
    RESTORE_EXC(exc2);
    return NO_TRAMPOLINE;
}

/* The names are built before the lock is taken (they may allocate); the slot is checked again
 * under it: another thread may have made this code object's trampoline meanwhile. The slot is
 * empty here, so code_set_extra calls no free function (code_extra_free takes the lock too). */
static void *tramp_make(PyCodeObject *co)
{
    SAVE_EXC(exc);
    const char *qualname = utf8_or(co->co_qualname, "?");
    const char *filename = utf8_or(co->co_filename, "?");
    RESTORE_EXC(exc);
    ST_LOCK();
    void *t = trampoline_of((PyObject *)co);
    if (!t)
        t = tramp_make_locked(co, qualname, filename);
    ST_UNLOCK();
    return t;
}

/* co_extra free function: the code object is being deallocated (GIL held). A frame of it may
 * still be returning through the trampoline, which is fine: the bytes stay as they are. */
static void code_extra_free(void *p)
{
    if (!p || p == NO_TRAMPOLINE)
        return;
    ST_LOCK();
    uint64_t *tag = tramp_arena_tag(&st.arena, p);
    if (tag) {
        if (st.jit && *tag && !st.finalizing)
            pyjit_retire(st.jit, *tag);
        *tag = 0;
        st.retired++;
        if (!st.finalizing)
            tramp_arena_put(&st.arena, p);
    }
    ST_UNLOCK();
}

/* -- The frame-evaluation hook ------------------------------------------------------------ */

static inline void *trampoline_of(PyObject *code)
{
    void *t = NULL;
    if (st.fast_extra) {
        const struct code_extra_view *e = ((PyCodeObject *)code)->co_extra;
        if (e && st.extra_index < e->size)
            t = e->extras[st.extra_index];
    } else {
        (void)code_get_extra(code, st.extra_index, &t); /* cannot fail for a code object */
    }
    return t;
}

static PyObject *pyebpf_eval(PyThreadState *ts, struct _PyInterpreterFrame *f, int throwflag)
{
    PyObject *code = frame_code(f);
    if (PyCode_Check(code)) {
        void *t = trampoline_of(code);
        if (!t)
            t = tramp_make((PyCodeObject *)code);
        if (t != NO_TRAMPOLINE)
            return ((tramp_call)t)(ts, f, throwflag, st.eval);
    }
    return st.eval(ts, f, throwflag);
}

/* -- Python API --------------------------------------------------------------------------- */

/* Does the co_extra layout match code_extra_view? Set a marker through the API on a fresh code
 * object and read it back directly. */
static int extra_layout_ok(void)
{
    PyCodeObject *co = PyCode_NewEmpty("pyebpf_jit", "probe", 1);
    if (!co) {
        PyErr_Clear();
        return 0;
    }
    int ok = 0;
    if (code_set_extra((PyObject *)co, st.extra_index, NO_TRAMPOLINE) == 0) {
        const struct code_extra_view *e = co->co_extra;
        ok = e && st.extra_index < e->size && e->extras[st.extra_index] == NO_TRAMPOLINE;
        (void)code_set_extra((PyObject *)co, st.extra_index, NULL);
    }
    PyErr_Clear();
    Py_DECREF(co);
    return ok;
}

/* The frame probe: which code object the first frame run on the probing thread holds. */
static struct {
    PyThreadState *ts;
    PyObject *want;
    _PyFrameEvalFunction next;
    int calls;
    PyObject *seen;
} probe;

static PyObject *probe_eval(PyThreadState *ts, struct _PyInterpreterFrame *f, int throwflag)
{
    if (ts == probe.ts && probe.calls++ == 0)
        probe.seen = frame_code(f);
    return probe.next(ts, f, throwflag);
}

/* Does frame_code() find the code object in this interpreter's frames? A fresh function is
 * called once under probe_eval. The first frame evaluated on this thread after the hook goes in
 * is that function's (it is called right away); frames of other threads that may run meanwhile
 * pass through untouched. Returns 0 or -1 with RuntimeError set. */
static int frame_layout_ok(PyInterpreterState *interp, _PyFrameEvalFunction prev)
{
    static const char src[] = "def probe():\n    return 1\n";
    PyObject *globals = PyDict_New();
    if (!globals || PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) != 0) {
        Py_XDECREF(globals);
        return -1;
    }
    PyObject *code = Py_CompileString(src, "<pyebpf_jit probe>", Py_file_input);
    PyObject *mod = code ? PyEval_EvalCode(code, globals, globals) : NULL;
    PyObject *fn = mod ? PyDict_GetItemString(globals, "probe") : NULL; /* borrowed */
    Py_XDECREF(code);
    Py_XDECREF(mod);
    if (!fn || !PyFunction_Check(fn)) {
        Py_DECREF(globals);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "pyebpf_jit: the frame probe could not be built");
        return -1;
    }
    probe.ts = PyThreadState_Get();
    probe.want = PyFunction_GetCode(fn);
    probe.next = prev ? prev : _PyEval_EvalFrameDefault;
    probe.calls = 0;
    probe.seen = NULL;
    _PyInterpreterState_SetEvalFrameFunc(interp, probe_eval);
    PyObject *r = PyObject_CallNoArgs(fn);
    _PyInterpreterState_SetEvalFrameFunc(interp, probe.next);
    int ok = r && PyLong_Check(r) && PyLong_AsLong(r) == 1 && probe.calls > 0 && probe.seen == probe.want;
    Py_XDECREF(r);
    PyErr_Clear();
    PyDict_Clear(globals); /* the function refers back to its globals: break the cycle */
    Py_DECREF(globals);
    if (!ok) {
        PyErr_Format(PyExc_RuntimeError,
                     "pyebpf_jit: this interpreter's frames do not hold their code object where this "
                     "build looks for it (offset %d, tag mask %d; evaluator called %d times, found %p, "
                     "want %p); not installing the hook",
                     FRAME_CODE_OFFSET, (int)FRAME_CODE_TAG_BITS, probe.calls, (void *)probe.seen,
                     (void *)probe.want);
        return -1;
    }
    return 0;
}

static int open_sinks(unsigned sinks, const char *jitdump_dir, const char *perfmap_dir)
{
    if (sinks) {
        struct pyjit_options o = {.sinks = sinks, .jitdump_dir = jitdump_dir, .perfmap_dir = perfmap_dir};
        int err = pyjit_open(&st.jit, &o);
        if (err) {
            errno = -err;
            PyErr_SetFromErrnoWithFilename(PyExc_OSError, "pyjit_open");
            return -1;
        }
        tramp_arena_set_stride(&st.arena, pyjit_region_stride(st.jit, tramp_layout.size));
    } else {
        tramp_arena_set_stride(&st.arena, tramp_layout.size);
    }
    st.sinks = sinks;
    st.opened = 1;
    return 0;
}

static PyObject *py_enable(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"gdb", "jitdump", "perfmap", "jitdump_dir", "perfmap_dir", NULL};
    int gdb = 1, jitdump = 1, perfmap = 0;
    const char *jitdump_dir = NULL, *perfmap_dir = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pppzz", kwlist, &gdb, &jitdump, &perfmap, &jitdump_dir,
                                     &perfmap_dir))
        return NULL;
    unsigned sinks =
        (gdb ? PYJIT_SINK_GDB : 0) | (jitdump ? PYJIT_SINK_JITDUMP : 0) | (perfmap ? PYJIT_SINK_PERFMAP : 0);
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (st.interp && st.interp != interp) {
        PyErr_SetString(PyExc_RuntimeError, "pyebpf_jit is bound to the interpreter that enabled it first");
        return NULL;
    }
    if (st.opened && sinks != st.sinks) {
        PyErr_Format(PyExc_ValueError,
                     "pyebpf_jit: sinks are fixed once chosen in a process (gdb=%d jitdump=%d "
                     "perfmap=%d)",
                     !!(st.sinks & PYJIT_SINK_GDB), !!(st.sinks & PYJIT_SINK_JITDUMP),
                     !!(st.sinks & PYJIT_SINK_PERFMAP));
        return NULL;
    }
    if (st.enabled)
        Py_RETURN_NONE;
    if (st.extra_index < 0) {
        st.extra_index = request_extra_index(code_extra_free);
        if (st.extra_index < 0) {
            PyErr_SetString(PyExc_RuntimeError, "pyebpf_jit: no free co_extra index");
            return NULL;
        }
        st.fast_extra = DIRECT_EXTRA && extra_layout_ok();
    }
    _PyFrameEvalFunction prev = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (!st.frame_ok) {
        if (frame_layout_ok(interp, prev) != 0)
            return NULL;
        st.frame_ok = 1;
    }
    if (!st.opened && open_sinks(sinks, jitdump_dir, perfmap_dir) != 0)
        return NULL;
    st.prev = prev;
    st.eval = prev ? prev : _PyEval_EvalFrameDefault;
    st.interp = interp;
    _PyInterpreterState_SetEvalFrameFunc(interp, pyebpf_eval);
    st.enabled = 1;
    Py_RETURN_NONE;
}

static PyObject *py_disable(PyObject *self, PyObject *unused)
{
    if (!st.enabled)
        Py_RETURN_NONE;
    if (_PyInterpreterState_GetEvalFrameFunc(st.interp) != pyebpf_eval) {
        PyErr_SetString(PyExc_RuntimeError, "pyebpf_jit: another frame evaluator was installed after ours; "
                                            "not replacing it");
        return NULL;
    }
    _PyInterpreterState_SetEvalFrameFunc(st.interp, st.prev ? st.prev : _PyEval_EvalFrameDefault);
    st.enabled = 0;
    if (st.jit)
        pyjit_flush(st.jit);
    Py_RETURN_NONE;
}

static PyObject *py_is_enabled(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(st.enabled && st.interp &&
                           _PyInterpreterState_GetEvalFrameFunc(st.interp) == pyebpf_eval);
}

static PyObject *py_flush(PyObject *self, PyObject *unused)
{
    if (st.jit)
        pyjit_flush(st.jit);
    Py_RETURN_NONE;
}

/* Called from atexit: push buffered data out, and stop retiring regions one by one while the
 * interpreter tears down every code object (the process is about to end). */
static PyObject *py_shutdown(PyObject *self, PyObject *unused)
{
    if (st.jit)
        pyjit_flush(st.jit);
    st.finalizing = 1;
    Py_RETURN_NONE;
}

static PyObject *py_stats(PyObject *self, PyObject *unused)
{
    const char *path = st.jit ? pyjit_jitdump_path(st.jit) : NULL;
    unsigned live = st.jit ? pyjit_sinks(st.jit) : 0;
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:d,s:n,s:n,s:I,s:I,s:s,s:i,s:i}", "trampolines",
                         (unsigned long long)st.made, "reused", (unsigned long long)st.reused, "failed",
                         (unsigned long long)st.failed, "retired", (unsigned long long)st.retired,
                         "publish_us", st.made ? (double)st.publish_ns / 1e3 / (double)st.made : 0.0,
                         "mapped_bytes", (Py_ssize_t)tramp_arena_mapped(&st.arena), "stride",
                         (Py_ssize_t)st.arena.stride, "sinks", st.sinks, "live_sinks", live, "jitdump_path",
                         path, "fast_extra", st.fast_extra, "frame_checked", st.frame_ok);
}

static PyMethodDef methods[] = {
    {"enable", (PyCFunction)(void (*)(void))py_enable, METH_VARARGS | METH_KEYWORDS,
     "enable(gdb=True, jitdump=True, perfmap=False, jitdump_dir=None, perfmap_dir=None)"},
    {"disable", py_disable, METH_NOARGS, "Restore the previous frame evaluator."},
    {"is_enabled", py_is_enabled, METH_NOARGS, "True while the hook is installed."},
    {"flush", py_flush, METH_NOARGS, "Push buffered registrations out to the sinks."},
    {"_shutdown", py_shutdown, METH_NOARGS, "Interpreter exit (registered with atexit)."},
    {"stats", py_stats, METH_NOARGS, "Counters: trampolines made, reused, retired, ..."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_native",
    "Per-function trampolines for gdb and perf.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
#ifdef Py_GIL_DISABLED
    /* Importing the module must not turn the GIL back on: its state is under st_lock. */
    if (PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED) != 0) {
        Py_DECREF(m);
        return NULL;
    }
#endif
    if (PyModule_AddIntConstant(m, "TRAMPOLINE_SIZE", tramp_layout.size) != 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
