/*
 * pyrt_debug — _Py_DebugOffsets, the description of itself CPython 3.13 and later puts at the start
 * of _PyRuntime (in the .PyRuntime section of the python binary or libpython).
 *
 * The struct is a sequence of u64: a cookie, the version, the free-threaded flag, then one group
 * per CPython struct, each starting (mostly) with that struct's size followed by field offsets.
 * Groups and fields are only ever added, but in the middle, so every minor version has its own
 * layout and a reader must know which one it is looking at:
 *
 *           3.13 (584 bytes)           3.14 (760 bytes)            3.15 (888 bytes)
 *      0    cookie "xdebugpy"          same                        same
 *      8    version (PY_VERSION_HEX)   same                        same
 *     16    free_threaded              same                        same
 *     24    runtime_state      3       runtime_state      3        runtime_state       3
 *     48    interpreter_state 13       interpreter_state 16 (+threads_main, code_object_generation,
 *                                                               tlbc_generation)      16
 *    152/176 thread_state      9       thread_state       9        thread_state       16 (+base_frame,
 *                                                                  last_profiled_frame(_seq), holds_gil,
 *                                                                  gil_requested, current_exception,
 *                                                                  exc_state) + err_stackitem 1
 *    224/248/312 interpreter_frame 6   interpreter_frame  8 (+stackpointer, tlbc_index)  8
 *    272/312/376 code_object  10       code_object       11 (+co_tlbc)                  11
 *          pyobject 2, type_object 4   same                        type_object 6 (+tp_basicsize,
 *                                                                  tp_dictoffset), heap_type_object 2
 *          tuple 3, list 3             + set_object 4              same
 *          dict 3, float 2, long 3,    same                        unicode 5 (+compactunicodeobject_size)
 *          bytes 3, unicode 4, gc 2    + gen_object 4, llist_node  gc 5 (+frame, generation_stats_size,
 *                                      2, debugger_support 6       generation_stats)
 *
 * (numbers: u64 fields per group). The free-threaded flag only changes values, not the layout:
 * its builds describe their own object header (ob_type at 24, not 8) and code_object.co_tlbc,
 * which is 0 in the other builds. Checked against the .PyRuntime data of Debian's 3.14.10 and
 * 3.15.2 and pyenv's 3.13.0. A pre-release is refused: its layout may differ from the final one
 * (3.15.0b4 inserted a field into thread_state), and a wrong layout would read plausible garbage.
 */
#include "python/pyrt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/errmsg.h"

/* -- The three layouts ------------------------------------------------------------------------- */

#define G(name, ...)                                                                                         \
    struct {                                                                                                 \
        uint64_t __VA_ARGS__;                                                                                \
    } name

struct debug_offsets_313 {
    char cookie[8];
    uint64_t version, free_threaded;
    G(runtime_state, size, finalizing, interpreters_head);
    G(interpreter_state, size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
      gil_runtime_state, gil_enabled, gil_locked, gil_holder);
    G(thread_state, size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk,
      status);
    G(interpreter_frame, size, previous, executable, instr_ptr, localsplus, owner);
    G(code_object, size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
      localspluskinds, co_code_adaptive);
    G(pyobject, size, ob_type);
    G(type_object, size, tp_name, tp_repr, tp_flags);
    G(tuple_object, size, ob_item, ob_size);
    G(list_object, size, ob_item, ob_size);
    G(dict_object, size, ma_keys, ma_values);
    G(float_object, size, ob_fval);
    G(long_object, size, lv_tag, ob_digit);
    G(bytes_object, size, ob_size, ob_sval);
    G(unicode_object, size, state, length, asciiobject_size);
    G(gc, size, collecting);
};
_Static_assert(sizeof(struct debug_offsets_313) == 584, "3.13 _Py_DebugOffsets is 584 bytes");

struct debug_offsets_314 {
    char cookie[8];
    uint64_t version, free_threaded;
    G(runtime_state, size, finalizing, interpreters_head);
    G(interpreter_state, size, id, next, threads_head, threads_main, gc, imports_modules, sysdict, builtins,
      ceval_gil, gil_runtime_state, gil_enabled, gil_locked, gil_holder, code_object_generation,
      tlbc_generation);
    G(thread_state, size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk,
      status);
    G(interpreter_frame, size, previous, executable, instr_ptr, localsplus, owner, stackpointer, tlbc_index);
    G(code_object, size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
      localspluskinds, co_code_adaptive, co_tlbc);
    G(pyobject, size, ob_type);
    G(type_object, size, tp_name, tp_repr, tp_flags);
    G(tuple_object, size, ob_item, ob_size);
    G(list_object, size, ob_item, ob_size);
    G(set_object, size, used, table, mask);
    G(dict_object, size, ma_keys, ma_values);
    G(float_object, size, ob_fval);
    G(long_object, size, lv_tag, ob_digit);
    G(bytes_object, size, ob_size, ob_sval);
    G(unicode_object, size, state, length, asciiobject_size);
    G(gc, size, collecting);
    G(gen_object, size, gi_name, gi_iframe, gi_frame_state);
    G(llist_node, next, prev);
    G(debugger_support, eval_breaker, remote_debugger_support, remote_debugging_enabled,
      debugger_pending_call, debugger_script_path, debugger_script_path_size);
};
_Static_assert(sizeof(struct debug_offsets_314) == 760, "3.14 _Py_DebugOffsets is 760 bytes");

struct debug_offsets_315 {
    char cookie[8];
    uint64_t version, free_threaded;
    G(runtime_state, size, finalizing, interpreters_head);
    G(interpreter_state, size, id, next, threads_head, threads_main, gc, imports_modules, sysdict, builtins,
      ceval_gil, gil_runtime_state, gil_enabled, gil_locked, gil_holder, code_object_generation,
      tlbc_generation);
    G(thread_state, size, prev, next, interp, current_frame, base_frame, last_profiled_frame,
      last_profiled_frame_seq, thread_id, native_thread_id, datastack_chunk, status, holds_gil, gil_requested,
      current_exception, exc_state);
    G(err_stackitem, exc_value);
    G(interpreter_frame, size, previous, executable, instr_ptr, localsplus, owner, stackpointer, tlbc_index);
    G(code_object, size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
      localspluskinds, co_code_adaptive, co_tlbc);
    G(pyobject, size, ob_type);
    G(type_object, size, tp_name, tp_repr, tp_flags, tp_basicsize, tp_dictoffset);
    G(heap_type_object, size, ht_cached_keys);
    G(tuple_object, size, ob_item, ob_size);
    G(list_object, size, ob_item, ob_size);
    G(set_object, size, used, table, mask);
    G(dict_object, size, ma_keys, ma_values);
    G(float_object, size, ob_fval);
    G(long_object, size, lv_tag, ob_digit);
    G(bytes_object, size, ob_size, ob_sval);
    G(unicode_object, size, state, length, asciiobject_size, compactunicodeobject_size);
    G(gc, size, collecting, frame, generation_stats_size, generation_stats);
    G(gen_object, size, gi_name, gi_iframe, gi_frame_state);
    G(llist_node, next, prev);
    G(debugger_support, eval_breaker, remote_debugger_support, remote_debugging_enabled,
      debugger_pending_call, debugger_script_path, debugger_script_path_size);
};
_Static_assert(sizeof(struct debug_offsets_315) == 888, "3.15 _Py_DebugOffsets is 888 bytes");

#undef G

/* -- Where each used field sits, per layout ----------------------------------------------------- */

enum {
    RT_SIZE,
    RT_HEAD,
    IS_SIZE,
    IS_NEXT,
    IS_THREADS,
    IS_GIL_LOCKED,
    IS_GIL_HOLDER,
    TS_SIZE,
    TS_NEXT,
    TS_INTERP,
    TS_FRAME,
    TS_NATIVE_TID,
    TS_THREAD_ID,
    TS_DATASTACK,
    FR_SIZE,
    FR_PREVIOUS,
    FR_EXECUTABLE,
    FR_INSTR,
    FR_OWNER,
    CO_SIZE,
    CO_FILENAME,
    CO_NAME,
    CO_QUALNAME,
    CO_LINETABLE,
    CO_FIRSTLINENO,
    CO_ADAPTIVE,
    FR_LOCALSPLUS,
    CO_LOCALSPLUSNAMES,
    TP_NAME,
    TU_ITEM,
    TU_SIZE,
    FL_FVAL,
    LO_TAG,
    LO_DIGIT,
    OB_SIZE,
    OB_TYPE,
    BY_SIZE,
    BY_OB_SIZE,
    BY_SVAL,
    UN_SIZE,
    UN_STATE,
    UN_LENGTH,
    UN_ASCII_SIZE,
    N_USED
};

#define USED(S)                                                                                              \
    {                                                                                                        \
        [RT_SIZE] = offsetof(S, runtime_state.size),                                                         \
        [RT_HEAD] = offsetof(S, runtime_state.interpreters_head),                                            \
        [IS_SIZE] = offsetof(S, interpreter_state.size), [IS_NEXT] = offsetof(S, interpreter_state.next),    \
        [IS_THREADS] = offsetof(S, interpreter_state.threads_head),                                          \
        [IS_GIL_LOCKED] = offsetof(S, interpreter_state.gil_locked),                                         \
        [IS_GIL_HOLDER] = offsetof(S, interpreter_state.gil_holder),                                         \
        [TS_SIZE] = offsetof(S, thread_state.size), [TS_NEXT] = offsetof(S, thread_state.next),              \
        [TS_INTERP] = offsetof(S, thread_state.interp),                                                      \
        [TS_FRAME] = offsetof(S, thread_state.current_frame),                                                \
        [TS_NATIVE_TID] = offsetof(S, thread_state.native_thread_id),                                        \
        [TS_THREAD_ID] = offsetof(S, thread_state.thread_id),                                                \
        [TS_DATASTACK] = offsetof(S, thread_state.datastack_chunk),                                          \
        [FR_SIZE] = offsetof(S, interpreter_frame.size),                                                     \
        [FR_PREVIOUS] = offsetof(S, interpreter_frame.previous),                                             \
        [FR_EXECUTABLE] = offsetof(S, interpreter_frame.executable),                                         \
        [FR_INSTR] = offsetof(S, interpreter_frame.instr_ptr),                                               \
        [FR_OWNER] = offsetof(S, interpreter_frame.owner), [CO_SIZE] = offsetof(S, code_object.size),        \
        [CO_FILENAME] = offsetof(S, code_object.filename), [CO_NAME] = offsetof(S, code_object.name),        \
        [CO_QUALNAME] = offsetof(S, code_object.qualname),                                                   \
        [CO_LINETABLE] = offsetof(S, code_object.linetable),                                                 \
        [CO_FIRSTLINENO] = offsetof(S, code_object.firstlineno),                                             \
        [CO_ADAPTIVE] = offsetof(S, code_object.co_code_adaptive), [OB_SIZE] = offsetof(S, pyobject.size),   \
        [FR_LOCALSPLUS] = offsetof(S, interpreter_frame.localsplus),                                         \
        [CO_LOCALSPLUSNAMES] = offsetof(S, code_object.localsplusnames),                                     \
        [TP_NAME] = offsetof(S, type_object.tp_name), [TU_ITEM] = offsetof(S, tuple_object.ob_item),         \
        [TU_SIZE] = offsetof(S, tuple_object.ob_size), [FL_FVAL] = offsetof(S, float_object.ob_fval),        \
        [LO_TAG] = offsetof(S, long_object.lv_tag), [LO_DIGIT] = offsetof(S, long_object.ob_digit),          \
        [OB_TYPE] = offsetof(S, pyobject.ob_type), [BY_SIZE] = offsetof(S, bytes_object.size),               \
        [BY_OB_SIZE] = offsetof(S, bytes_object.ob_size), [BY_SVAL] = offsetof(S, bytes_object.ob_sval),     \
        [UN_SIZE] = offsetof(S, unicode_object.size), [UN_STATE] = offsetof(S, unicode_object.state),        \
        [UN_LENGTH] = offsetof(S, unicode_object.length),                                                    \
        [UN_ASCII_SIZE] = offsetof(S, unicode_object.asciiobject_size),                                      \
    }

/* Groups whose first u64 is the struct's size: the next `checked` fields are offsets inside it.
 * Reading a layout at the wrong positions breaks this pattern almost everywhere, so it is a
 * fingerprint of the layout as well as a sanity check of the target. */
struct group {
    uint16_t at, checked;
};
#define GRP(S, m, n)                                                                                         \
    {                                                                                                        \
        offsetof(S, m), n                                                                                    \
    }

static const struct group groups_313[] = {
    GRP(struct debug_offsets_313, runtime_state, 2),
    GRP(struct debug_offsets_313, interpreter_state, 12),
    GRP(struct debug_offsets_313, thread_state, 8),
    GRP(struct debug_offsets_313, interpreter_frame, 5),
    GRP(struct debug_offsets_313, code_object, 9),
    GRP(struct debug_offsets_313, pyobject, 1),
    GRP(struct debug_offsets_313, type_object, 3),
    GRP(struct debug_offsets_313, tuple_object, 2),
    GRP(struct debug_offsets_313, list_object, 2),
    GRP(struct debug_offsets_313, dict_object, 2),
    GRP(struct debug_offsets_313, float_object, 1),
    GRP(struct debug_offsets_313, long_object, 2),
    GRP(struct debug_offsets_313, bytes_object, 2),
    GRP(struct debug_offsets_313, unicode_object, 3),
    GRP(struct debug_offsets_313, gc, 1),
};
static const struct group groups_314[] = {
    GRP(struct debug_offsets_314, runtime_state, 2),  GRP(struct debug_offsets_314, interpreter_state, 15),
    GRP(struct debug_offsets_314, thread_state, 8),   GRP(struct debug_offsets_314, interpreter_frame, 7),
    GRP(struct debug_offsets_314, code_object, 10),   GRP(struct debug_offsets_314, pyobject, 1),
    GRP(struct debug_offsets_314, type_object, 3),    GRP(struct debug_offsets_314, tuple_object, 2),
    GRP(struct debug_offsets_314, list_object, 2),    GRP(struct debug_offsets_314, set_object, 3),
    GRP(struct debug_offsets_314, dict_object, 2),    GRP(struct debug_offsets_314, float_object, 1),
    GRP(struct debug_offsets_314, long_object, 2),    GRP(struct debug_offsets_314, bytes_object, 2),
    GRP(struct debug_offsets_314, unicode_object, 3), GRP(struct debug_offsets_314, gc, 1),
    GRP(struct debug_offsets_314, gen_object, 3),
};
/* 3.15: gc.generation_stats_size is the size of what generation_stats points to, not an offset. */
static const struct group groups_315[] = {
    GRP(struct debug_offsets_315, runtime_state, 2),
    GRP(struct debug_offsets_315, interpreter_state, 15),
    GRP(struct debug_offsets_315, thread_state, 15),
    GRP(struct debug_offsets_315, interpreter_frame, 7),
    GRP(struct debug_offsets_315, code_object, 10),
    GRP(struct debug_offsets_315, pyobject, 1),
    GRP(struct debug_offsets_315, type_object, 5),
    GRP(struct debug_offsets_315, heap_type_object, 1),
    GRP(struct debug_offsets_315, tuple_object, 2),
    GRP(struct debug_offsets_315, list_object, 2),
    GRP(struct debug_offsets_315, set_object, 3),
    GRP(struct debug_offsets_315, dict_object, 2),
    GRP(struct debug_offsets_315, float_object, 1),
    GRP(struct debug_offsets_315, long_object, 2),
    GRP(struct debug_offsets_315, bytes_object, 2),
    GRP(struct debug_offsets_315, unicode_object, 4),
    GRP(struct debug_offsets_315, gc, 2),
    GRP(struct debug_offsets_315, gen_object, 3),
};
#undef GRP

struct known {
    unsigned minor;
    size_t size;
    uint16_t used[N_USED];
    const struct group *groups;
    size_t ngroups;
    uint16_t co_tlbc;     /* where code_object.co_tlbc is described (0: not in this layout) */
    uint64_t f_code_mask; /* f_executable is a tagged _PyStackRef from 3.14 on (Py_TAG_BITS = 3;
                           * free-threaded builds tag 1 bit, which the same mask clears) */
    uint8_t f_owner_max;  /* 3.14 added FRAME_OWNED_BY_INTERPRETER (3) before CSTACK (4); 3.15
                           * dropped CSTACK again */
};

static const struct known known[] = {
    {13, sizeof(struct debug_offsets_313), USED(struct debug_offsets_313), groups_313,
     sizeof(groups_313) / sizeof(groups_313[0]), 0, ~(uint64_t)0, 3},
    {14, sizeof(struct debug_offsets_314), USED(struct debug_offsets_314), groups_314,
     sizeof(groups_314) / sizeof(groups_314[0]), offsetof(struct debug_offsets_314, code_object.co_tlbc),
     ~(uint64_t)3, 4},
    {15, sizeof(struct debug_offsets_315), USED(struct debug_offsets_315), groups_315,
     sizeof(groups_315) / sizeof(groups_315[0]), offsetof(struct debug_offsets_315, code_object.co_tlbc),
     ~(uint64_t)3, 3},
};
#define NKNOWN (sizeof(known) / sizeof(known[0]))

/* -- Parsing ------------------------------------------------------------------------------------ */

static uint64_t u64(const uint8_t *b, size_t at)
{
    uint64_t v;
    memcpy(&v, b + at, 8);
    return v;
}

static const struct known *find_known(unsigned minor)
{
    for (size_t i = 0; i < NKNOWN; i++)
        if (known[i].minor == minor)
            return &known[i];
    return NULL;
}

size_t pyrt_debug_offsets_size(unsigned minor)
{
    const struct known *k = find_known(minor);
    return k ? k->size : 0;
}

/* An offset that must lie inside a struct of `size` bytes (with `width` bytes to read there). */
static bool inside(uint64_t off, uint64_t width, uint64_t size)
{
    return size <= (1u << 20) && off <= size && width <= size - off; /* no off + width wrap */
}

static const char *level_name(unsigned level)
{
    return level == 0xa ? "alpha" : level == 0xb ? "beta" : level == 0xc ? "release candidate" : "unknown";
}

int pyrt_debug_offsets(struct pyrt_layout *L, const void *buf, size_t len, uint32_t version_hex, char *err,
                       size_t errlen)
{
    const uint8_t *b = buf;
    const unsigned minor = (version_hex >> 16) & 0xff;

    if (len < 24 || memcmp(b, "xdebugpy", 8) != 0)
        return errmsg(err, errlen, -EPROTO, "_PyRuntime does not start with the _Py_DebugOffsets cookie");
    const uint64_t dver = u64(b, 8), ft = u64(b, 16);
    if ((dver >> 16) != (version_hex >> 16))
        return errmsg(err, errlen, -EPROTO,
                      "_Py_DebugOffsets describes version 0x%08" PRIx64 ", Py_Version says 0x%08x", dver,
                      version_hex);
    const struct known *k = find_known(minor);
    if (!k)
        return errmsg(err, errlen, -ENOTSUP,
                      "Python 3.%u: its _Py_DebugOffsets layout is not known to this reader (3.13, 3.14 and "
                      "3.15 are); refusing rather than guessing",
                      minor);
    if ((dver & 0xf0) != 0xf0)
        return errmsg(err, errlen, -ENOTSUP,
                      "Python 3.%u.%u %s %u: pre-release _Py_DebugOffsets layouts differ from the final "
                      "release's; only final releases are supported",
                      minor, (unsigned)(dver >> 8) & 0xff, level_name((dver >> 4) & 0xf),
                      (unsigned)dver & 0xf);
    if (len < k->size)
        return errmsg(err, errlen, -EINVAL, "short _Py_DebugOffsets read (%zu of %zu bytes)", len, k->size);
    for (size_t g = 0; g < k->ngroups; g++) {
        const uint64_t size = u64(b, k->groups[g].at);
        for (unsigned i = 1; i <= k->groups[g].checked; i++)
            if (!inside(u64(b, k->groups[g].at + 8 * i), 1, size))
                return errmsg(err, errlen, -EPROTO,
                              "Python 3.%u: _Py_DebugOffsets does not have the expected 3.%u layout (group "
                              "at byte %u, field %u: %" PRIu64 " outside %" PRIu64 " bytes)",
                              minor, minor, k->groups[g].at, i, u64(b, k->groups[g].at + 8 * i), size);
    }

    uint64_t v[N_USED];
    for (int i = 0; i < N_USED; i++)
        v[i] = u64(b, k->used[i]);
    bool ok = inside(v[RT_HEAD], 8, v[RT_SIZE]) && inside(v[IS_NEXT], 8, v[IS_SIZE]) &&
              inside(v[IS_THREADS], 8, v[IS_SIZE]) && inside(v[TS_NEXT], 8, v[TS_SIZE]) &&
              inside(v[TS_INTERP], 8, v[TS_SIZE]) && inside(v[TS_FRAME], 8, v[TS_SIZE]) &&
              inside(v[TS_NATIVE_TID], 8, v[TS_SIZE]) && inside(v[FR_PREVIOUS], 8, v[FR_SIZE]) &&
              inside(v[FR_EXECUTABLE], 8, v[FR_SIZE]) && inside(v[FR_INSTR], 8, v[FR_SIZE]) &&
              inside(v[FR_OWNER], 1, v[FR_SIZE]) && inside(v[CO_FILENAME], 8, v[CO_SIZE]) &&
              inside(v[CO_NAME], 8, v[CO_SIZE]) && inside(v[CO_QUALNAME], 8, v[CO_SIZE]) &&
              inside(v[CO_LINETABLE], 8, v[CO_SIZE]) && inside(v[CO_FIRSTLINENO], 4, v[CO_SIZE]) &&
              inside(v[CO_ADAPTIVE], 0, v[CO_SIZE]) && inside(v[OB_TYPE], 8, v[OB_SIZE]) &&
              inside(v[BY_OB_SIZE], 8, v[BY_SIZE]) && inside(v[BY_SVAL], 0, v[BY_SIZE]) &&
              inside(v[UN_STATE], 4, v[UN_SIZE]) && inside(v[UN_LENGTH], 8, v[UN_SIZE]) &&
              v[UN_ASCII_SIZE] <= 256;
    if (!ok)
        return errmsg(err, errlen, -EPROTO, "_Py_DebugOffsets holds offsets outside their structs");

    L->rt_interpreters_head = (uint32_t)v[RT_HEAD];
    L->is_next = (uint32_t)v[IS_NEXT];
    L->is_threads_head = (uint32_t)v[IS_THREADS];
    /* interp-relative (&interp->_gil.locked): the main interpreter's own GIL */
    if (inside(v[IS_GIL_LOCKED], 4, v[IS_SIZE]) && inside(v[IS_GIL_HOLDER], 8, v[IS_SIZE])) {
        L->gil_locked = (uint32_t)v[IS_GIL_LOCKED];
        L->gil_holder = (uint32_t)v[IS_GIL_HOLDER];
    }
    L->gil_in_runtime = false;
    L->ts_next = (uint32_t)v[TS_NEXT];
    L->ts_interp = (uint32_t)v[TS_INTERP];
    L->ts_native_thread_id = (uint32_t)v[TS_NATIVE_TID];
    L->ts_thread_id = inside(v[TS_THREAD_ID], 8, v[TS_SIZE]) ? (uint32_t)v[TS_THREAD_ID] : 0;
    L->ts_current_frame = (uint32_t)v[TS_FRAME];
    L->ts_cframe = 0;
    /* datastack_top and datastack_limit follow datastack_chunk in every release (3.11 to 3.15) but
     * are not described; pystack checks the three against the chunk's own header before use. */
    L->ts_datastack = inside(v[TS_DATASTACK], 24, v[TS_SIZE]) ? (uint32_t)v[TS_DATASTACK] : 0;
    L->f_code = (uint32_t)v[FR_EXECUTABLE];
    L->f_previous = (uint32_t)v[FR_PREVIOUS];
    L->f_instr = (uint32_t)v[FR_INSTR];
    L->f_owner = (uint32_t)v[FR_OWNER];
    L->f_is_entry = -1;
    L->f_code_mask = k->f_code_mask;
    L->f_owner_max = k->f_owner_max;
    L->co_firstlineno = (uint32_t)v[CO_FIRSTLINENO];
    L->co_filename = (uint32_t)v[CO_FILENAME];
    L->co_name = (uint32_t)v[CO_NAME];
    L->co_qualname = (uint32_t)v[CO_QUALNAME];
    L->co_linetable = (uint32_t)v[CO_LINETABLE];
    L->co_code_adaptive = (uint32_t)v[CO_ADAPTIVE];
    /* What a reader of local variables needs (pylocals.c); all 0 unless every one is plausible. */
    if (v[FR_LOCALSPLUS] >= 8 && v[FR_LOCALSPLUS] < 4096 && inside(v[CO_LOCALSPLUSNAMES], 8, v[CO_SIZE]) &&
        v[TP_NAME] < 4096 && v[TU_ITEM] < 4096 && v[TU_SIZE] < 4096 && v[FL_FVAL] < 4096 &&
        v[LO_TAG] < 4096 && v[LO_DIGIT] < 4096) {
        L->f_localsplus = (uint32_t)v[FR_LOCALSPLUS];
        L->co_localsplusnames = (uint32_t)v[CO_LOCALSPLUSNAMES];
        L->tp_name = (uint32_t)v[TP_NAME];
        L->tuple_ob_item = (uint32_t)v[TU_ITEM];
        L->tuple_ob_size = (uint32_t)v[TU_SIZE];
        L->float_ob_fval = (uint32_t)v[FL_FVAL];
        L->long_lv_tag = (uint32_t)v[LO_TAG];
        L->long_ob_digit = (uint32_t)v[LO_DIGIT];
    }
    L->ob_type = (uint32_t)v[OB_TYPE];
    L->var_ob_size = (uint32_t)v[BY_OB_SIZE];
    L->bytes_ob_sval = (uint32_t)v[BY_SVAL];
    L->str_state = (uint32_t)v[UN_STATE];
    L->str_length = (uint32_t)v[UN_LENGTH];
    L->str_ascii_data = (uint32_t)v[UN_ASCII_SIZE];
    /* PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (3.12 and later; 3.15 says so). */
    L->str_compact_data = L->str_ascii_data + 16;
    if (minor >= 15) {
        const uint64_t cs =
            u64(b, offsetof(struct debug_offsets_315, unicode_object.compactunicodeobject_size));
        if (cs != L->str_compact_data)
            return errmsg(err, errlen, -EPROTO,
                          "Python 3.%u: compact unicode header is %" PRIu64 " bytes, not %u", minor, cs,
                          L->str_compact_data);
    }
    /* Free-threaded builds: the object header, thread states and frames are described like any
     * others (their offsets differ, not their meaning); what is new is co_tlbc, the per-thread
     * copies of the bytecode (3.14+; 3.13t has none), which pycode searches for an instruction
     * pointer outside co_code_adaptive. */
    L->free_threaded = ft != 0;
    L->co_tlbc = 0;
    if (ft && k->co_tlbc) {
        const uint64_t t = u64(b, k->co_tlbc);
        if (t <= v[OB_TYPE] || !inside(t, 8, v[CO_ADAPTIVE]))
            return errmsg(err, errlen, -EPROTO,
                          "Python 3.%u free-threaded build: _Py_DebugOffsets places co_tlbc at %" PRIu64
                          ", not between the object header and the bytecode (at %" PRIu64 ")",
                          minor, t, v[CO_ADAPTIVE]);
        L->co_tlbc = (uint32_t)t;
    }
    return 0;
}
