/*
 * Where a CPython frame keeps its code object, for pyebpf_jit.c's frame-evaluation hook.
 *
 * _PyInterpreterFrame (Include/internal/pycore_frame.h; from 3.14
 * pycore_interpframe_structs.h):
 *
 *   3.11        f_func, f_globals, f_builtins, f_locals, f_code   PyObject *      at 32
 *   3.12        f_code, previous, ...                             PyObject *      at 0
 *   3.13        f_executable, previous, ...                       PyObject *      at 0
 *   3.14, 3.15  f_executable, previous, f_funcobj, ...            _PyStackRef     at 0
 *
 *   _PyStackRef (pycore_stackref.h, builds with the GIL), one word:
 *   63                                                    2   1   0
 *   +----------------------------------------------------+---+---+
 *   |            object address (8-byte aligned)         |tag    |   Py_TAG_BITS = 3
 *   +----------------------------------------------------+---+---+
 *   tag 0: the reference owns a count; tag 1 (Py_TAG_REFCNT): it does not (immortal objects,
 *   NULL); tag 3: a tagged int (never a code object). Free-threaded 3.14 tags only bit 0
 *   (Py_TAG_DEFERRED, Py_TAG_BITS = 1); 3.15t as the GIL builds. Clearing both bits serves all.
 *
 * Code objects are normally held with tag 0, but the tag is cleared whatever it is. For every
 * frame the evaluator is asked to run this is a code object (pyebpf_jit.c checks PyCode_Check
 * anyway). enable() checks the layout on a live frame (frame_layout_ok); pyebpf_jit_layout.c
 * checks it against the interpreter's internal headers at build time when they are installed.
 *
 * Include after Python.h.
 */
#ifndef PYEBPF_JIT_FRAME_H
#define PYEBPF_JIT_FRAME_H

#include <stdint.h>
#include <string.h>

#if defined(PYEBPF_JIT_FRAME_CODE_OFFSET) /* tests: a build that looks in the wrong place */
#define FRAME_CODE_OFFSET   PYEBPF_JIT_FRAME_CODE_OFFSET
#define FRAME_CODE_TAG_BITS ((uintptr_t)PYEBPF_JIT_FRAME_CODE_TAG_BITS)
#elif PY_VERSION_HEX < 0x030C0000
#define FRAME_CODE_OFFSET   32
#define FRAME_CODE_TAG_BITS ((uintptr_t)0)
#elif PY_VERSION_HEX < 0x030E0000
#define FRAME_CODE_OFFSET   0
#define FRAME_CODE_TAG_BITS ((uintptr_t)0)
#else
#define FRAME_CODE_OFFSET   0
#define FRAME_CODE_TAG_BITS ((uintptr_t)3)
#endif

struct _PyInterpreterFrame;

static inline PyObject *frame_code(const struct _PyInterpreterFrame *f)
{
    uintptr_t word;
    memcpy(&word, (const char *)f + FRAME_CODE_OFFSET, sizeof(word));
    return (PyObject *)(word & ~FRAME_CODE_TAG_BITS);
}

#endif
