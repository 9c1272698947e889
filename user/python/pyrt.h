/*
 * pyrt — finds the Python runtime of a target process and the layout of its structures.
 *
 *   /proc/PID/maps ──▶ the python binary or libpython that defines _PyRuntime (.dynsym; stripped
 *                      builds keep it) or holds a .PyRuntime section
 *                  ──▶ Py_Version (remote read) ──▶ layout:
 *                        3.11, 3.12  built-in offset table, checked against the target
 *                                    (PyCode_Type.tp_basicsize == offsetof co_code_adaptive,
 *                                    tstate->interp == interp)
 *                        3.13        _Py_DebugOffsets at the start of _PyRuntime ("xdebugpy",
 *                                    version, free_threaded, then offsets), checked the same way
 *                        3.14, 3.15  the same, each with its own _Py_DebugOffsets layout
 *                                    (pyrt_debug.c); f_executable is a tagged reference;
 *                                    debug and free-threaded builds described the same way
 *                        later       refused: the _Py_DebugOffsets struct grows per release
 *
 * All offsets are bytes from the start of the object. The structures read remotely:
 *
 *   _PyRuntime ─interpreters_head─▶ PyInterpreterState ─threads_head─▶ PyThreadState ─next─▶ ...
 *   PyThreadState ─(3.11/12: cframe ─▶ _PyCFrame.current_frame | 3.13: current_frame)─▶ frame
 *   _PyInterpreterFrame ─code─▶ PyCodeObject ─qualname/filename─▶ str, ─linetable─▶ bytes
 *                       ─previous─▶ _PyInterpreterFrame ... NULL
 */
#ifndef PYEBPF_PYRT_H
#define PYEBPF_PYRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/remote.h"
#include "python/pyeval.h"

#define PYRT_OWNED_BY_CSTACK 3 /* _PyInterpreterFrame.owner of an eval-loop entry shim (3.12+) */

struct pyrt_layout {
    uint32_t version_hex; /* PY_VERSION_HEX, e.g. 0x030b07f0 */
    unsigned major, minor;
    bool free_threaded;
    /* _PyRuntime */
    uint32_t rt_interpreters_head;
    /* PyInterpreterState */
    uint32_t is_next, is_threads_head;
    /* PyThreadState: ts_cframe is 0 when the top frame sits in the thread state (3.13+) */
    uint32_t ts_next, ts_interp, ts_native_thread_id, ts_cframe, cf_current_frame, ts_current_frame;
    /* PyThreadState.thread_id: the thread's pthread_self(), which glibc keeps at the top of the
     * thread's own stack mapping (0: unknown) */
    uint32_t ts_thread_id;
    uint32_t ts_read_size; /* bytes covering every field above */
    /* PyThreadState.datastack_chunk, followed by datastack_top and datastack_limit (3.11+: the
     * chunk of the data stack that holds the newest frames, its first free word, its end); 0 when
     * unknown. Not covered by ts_read_size: read as a separate 24-byte slice. */
    uint32_t ts_datastack;
    /* _PyInterpreterFrame; f_is_entry is -1 when the version has none (3.12+) */
    uint32_t f_code, f_previous, f_instr, f_owner;
    int32_t f_is_entry;
    uint64_t f_code_mask; /* applied to the f_executable word: 3.14+ tag it in the low 2 bits */
    uint8_t f_owner_max;  /* highest valid owner: 2 (3.11), 3 (3.12, 3.13, 3.15), 4 (3.14) */
    uint32_t f_read_size;
    /* PyCodeObject */
    uint32_t co_firstlineno, co_filename, co_name, co_qualname, co_linetable, co_code_adaptive;
    uint32_t co_hdr_start, co_hdr_size; /* one read covering ob_type and the fields above */
    /* 8: the header starts with the object's reference count (the layouts where it sits right
     * before ob_type), which changes as the object lives: headers compare after it; 0: none. */
    uint32_t co_hdr_rc;
    /* Free-threaded 3.14+: PyCodeObject.co_tlbc, the _PyCodeArray {size; entries[]} of the
     * per-thread copies of the bytecode (entries[0] is co_code_adaptive; a thread that runs the
     * code and is not the first gets a copy specialised for it, and its frames' instruction
     * pointers point into that copy). 0: no such copies (every other build). */
    uint32_t co_tlbc;
    /* The identity block inside that header: co_firstlineno (8-aligned down) up to the end of the
     * last name/line-table pointer, at most PYRT_CODE_ID_MAX bytes (the top ones when longer).
     * No field in it changes while the object lives; its words, folded, tell two code objects
     * at one address apart (pycode, the in-kernel reader). */
    uint32_t co_id_start, co_id_size;
    /* Where PyCodeObject.co_version lies in that block (3.12 to 3.15: 24 bytes after
     * co_firstlineno's start, past it and the five local-variable counts; not described by
     * _Py_DebugOffsets; tests/py/co_version.py finds it from memory): a number from a counter of
     * the interpreter, set once, no other code object's (0 once the counter wrapped): where set,
     * the block alone tells two objects apart (sample.h, sample_py_versioned). 0: none (3.11,
     * versions not checked; the block starts at or before co_firstlineno, never at co_version). */
    uint32_t co_id_version;
    /* The GIL's locked flag (an int) and last holder (a PyThreadState pointer): offsets from the
     * thread's interpreter state (3.12+: its own _gil), or from _PyRuntime when gil_in_runtime
     * (3.11: one GIL in _PyRuntime.ceval). gil_holder 0: unknown. */
    uint32_t gil_locked, gil_holder;
    bool gil_in_runtime;
    /* objects */
    uint32_t ob_type, var_ob_size, bytes_ob_sval;
    /* For local variables (pylocals.h; 3.13+, from _Py_DebugOffsets; 0: unknown):
     * _PyInterpreterFrame.localsplus, PyCodeObject.co_localsplusnames, PyTypeObject.tp_name,
     * PyTupleObject ob_item and ob_size, PyFloatObject.ob_fval, PyLongObject lv_tag and ob_digit. */
    uint32_t f_localsplus, co_localsplusnames, tp_name, tuple_ob_item, tuple_ob_size, float_ob_fval;
    uint32_t long_lv_tag, long_ob_digit;
    uint32_t str_length, str_state, str_ascii_data, str_compact_data;
};

#define PYRT_CODE_ID_MAX 80

struct pyrt {
    pid_t pid;
    char path[4096];           /* the mapped file holding the runtime (python or libpython) */
    bool shared_lib;           /* libpython*.so rather than the executable */
    uint64_t runtime_addr;     /* _PyRuntime */
    uint64_t code_type;        /* &PyCode_Type in the target (0 when unknown) */
    uint64_t jit_descriptor;   /* its __jit_debug_descriptor (3.15 JIT builds; 0: none) */
    char version[32];          /* "3.11.7" */
    struct pyeval_ranges eval; /* where the eval loop's code lies in that file (pyeval.h) */
    struct pyrt_layout L;
};

/* Finds and checks the runtime of `pid`. On failure, returns -errno and writes why (one line,
 * meant for the user) into err: -ENOENT no Python runtime mapped, -ENOTSUP a version or build
 * this reader does not support, -EPROTO a layout check failed. */
int pyrt_attach(struct pyrt *rt, struct remote *r, pid_t pid, char *err, size_t errlen);

/* Checks a _Py_DebugOffsets image (`len` bytes, version taken from the image) and fills the
 * layout from it, derived sizes included; every offset must lie inside the size its struct
 * declares. -EPROTO, -ENOTSUP or -EINVAL (and why, in err) otherwise. */
int pyrt_layout_from_debug_offsets(struct pyrt_layout *L, const void *buf, size_t len, char *err,
                                   size_t errlen);

/* pyrt_debug.c: size of the _Py_DebugOffsets of 3.<minor> (0: layout not known), and the parser:
 * checks cookie, version (against `version_hex` from Py_Version), release level and the layout's
 * fingerprint (and, in a free-threaded build, where co_tlbc is), then fills the offsets of L (not
 * the derived sizes). */
size_t pyrt_debug_offsets_size(unsigned minor);
int pyrt_debug_offsets(struct pyrt_layout *L, const void *buf, size_t len, uint32_t version_hex, char *err,
                       size_t errlen);

/* Address of the first interpreter (the main one); 0 before initialisation. */
int pyrt_first_interp(const struct pyrt *rt, struct remote *r, uint64_t *interp);
/* The thread state that holds the GIL now, 0 when the GIL is free: its locked word and last
 * holder, read in one call (3.11: _PyRuntime's GIL; 3.12+: the first interpreter's own, whose
 * address is read into *interp when 0 and kept by the caller). -ENOTSUP when the layout has no
 * GIL offsets (gil_holder 0), or -errno. */
int pyrt_gil_holder(const struct pyrt *rt, struct remote *r, uint64_t *interp, uint64_t *holder);

#endif
