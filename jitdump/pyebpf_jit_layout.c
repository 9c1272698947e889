/*
 * Build-time check of pyebpf_jit_frame.h against the interpreter's own internal headers (when
 * its -dev package installs them: pyenv, Debian's libpython3.X-dev). Emits no code.
 */
#define Py_BUILD_CORE 1
#include <Python.h>

#include <stddef.h>

#include "pyebpf_jit_frame.h"

#if defined(__has_include) && !defined(PYEBPF_JIT_FRAME_CODE_OFFSET)
#if __has_include("internal/pycore_frame.h")
#include "internal/pycore_frame.h"
#if PY_VERSION_HEX >= 0x030E0000 /* the struct moved out of pycore_frame.h */
#include "internal/pycore_interpframe_structs.h"
#include "internal/pycore_stackref.h"
#endif

#if PY_VERSION_HEX < 0x030D0000
_Static_assert(offsetof(struct _PyInterpreterFrame, f_code) == FRAME_CODE_OFFSET,
               "pyebpf_jit_frame.h: f_code moved");
_Static_assert(FRAME_CODE_TAG_BITS == 0, "pyebpf_jit_frame.h: f_code is a plain pointer");
#else
_Static_assert(offsetof(struct _PyInterpreterFrame, f_executable) == FRAME_CODE_OFFSET,
               "pyebpf_jit_frame.h: f_executable moved");
_Static_assert(sizeof(((struct _PyInterpreterFrame *)0)->f_executable) == sizeof(uintptr_t),
               "pyebpf_jit_frame.h: f_executable is one word");
#endif

#if PY_VERSION_HEX >= 0x030E0000
/* Free-threaded 3.14 tags one bit (Py_TAG_DEFERRED): clearing two clears it as well. */
_Static_assert((Py_TAG_BITS & ~FRAME_CODE_TAG_BITS) == 0, "pyebpf_jit_frame.h: _PyStackRef tag bits changed");
#endif
#endif
#endif

/* ISO C wants at least one declaration in a translation unit. */
typedef int pyebpf_jit_layout_checked;
