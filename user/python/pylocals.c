/*
 * pylocals — a frame's local variables, read like everything else from the target: names from
 * the code object's co_localsplusnames tuple, values from the frame's localsplus array.
 *
 *   interp->threads → thread state with native_thread_id == tid → current_frame
 *     → skip entry shims (owner >= PYRT_OWNED_BY_CSTACK) → the innermost Python frame
 *   code = f_executable (tag bits cleared); names = code->co_localsplusnames (a tuple of str)
 *   value i = frame->localsplus[i] (a stack reference on 3.14+: tag bits cleared), NULL: unbound
 *
 * A value's repr is made here from its type name and bytes, never by calling into the target:
 * int (up to two 30-bit digits), bool, float, ASCII str up to 80 characters, None; any other
 * object is shown as <TYPE>.
 */
#include "python/pylocals.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_THREADS 4096 /* thread states walked at most */
#define MAX_STR     80

static int rd64(struct remote *r, uint64_t addr, uint64_t *v)
{
    return addr < 4096 ? -EFAULT : remote_read(r, addr, v, sizeof(*v));
}

/* A compact str's text (ASCII only; anything else is NULL). */
static int read_str(const struct pyrt_layout *L, struct remote *r, uint64_t obj, char *buf, size_t size)
{
    uint64_t len = 0;
    uint32_t state = 0;
    if (rd64(r, obj + L->str_length, &len) || remote_read(r, obj + L->str_state, &state, sizeof(state)))
        return -EFAULT;
    unsigned compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (!compact || !ascii || len >= size)
        return -EINVAL;
    if (len && remote_read(r, obj + L->str_ascii_data, buf, len))
        return -EFAULT;
    buf[len] = 0;
    return 0;
}

static void repr(const struct pyrt_layout *L, struct remote *r, uint64_t obj, char *out, size_t size)
{
    uint64_t type, tpname;
    char tn[32] = "", s[MAX_STR + 1];
    if (!obj) {
        snprintf(out, size, "<unbound>");
        return;
    }
    if (rd64(r, obj + L->ob_type, &type) || rd64(r, type + L->tp_name, &tpname) ||
        remote_read(r, tpname, tn, sizeof(tn) - 1)) {
        snprintf(out, size, "<unreadable>");
        return;
    }
    tn[sizeof(tn) - 1] = 0;
    if (!strcmp(tn, "NoneType")) {
        snprintf(out, size, "None");
    } else if (!strcmp(tn, "int") || !strcmp(tn, "bool")) {
        /* lv_tag: digit count << 3 | sign (0 positive, 1 zero, 2 negative); 30-bit digits. */
        uint64_t tag;
        uint32_t d[2] = {0, 0};
        if (rd64(r, obj + L->long_lv_tag, &tag) || (tag >> 3) > 2 ||
            ((tag >> 3) && remote_read(r, obj + L->long_ob_digit, d, 4 * (tag >> 3)))) {
            snprintf(out, size, "<%s>", tn);
            return;
        }
        uint64_t v = (uint64_t)d[0] | (uint64_t)d[1] << 30;
        long long sv = (tag & 3) == 2 ? -(long long)v : (tag & 3) == 1 ? 0 : (long long)v;
        if (!strcmp(tn, "bool"))
            snprintf(out, size, "%s", sv ? "True" : "False");
        else
            snprintf(out, size, "%lld", sv);
    } else if (!strcmp(tn, "float")) {
        double x;
        if (remote_read(r, obj + L->float_ob_fval, &x, sizeof(x)))
            snprintf(out, size, "<float>");
        else
            snprintf(out, size, "%.17g", x);
    } else if (!strcmp(tn, "str") && read_str(L, r, obj, s, sizeof(s)) == 0) {
        snprintf(out, size, "'%s'", s);
    } else {
        snprintf(out, size, "<%s>", tn);
    }
}

/* The innermost Python frame of thread `tid`, or 0. */
static uint64_t innermost(const struct pyrt *rt, struct remote *r, pid_t tid)
{
    const struct pyrt_layout *L = &rt->L;
    uint64_t interp, ts, ntid, frame = 0;
    if (pyrt_first_interp(rt, r, &interp) || rd64(r, interp + L->is_threads_head, &ts))
        return 0;
    for (int i = 0; ts && i < MAX_THREADS; i++) {
        if (rd64(r, ts + L->ts_native_thread_id, &ntid))
            return 0;
        if (ntid == (uint64_t)tid)
            break;
        if (rd64(r, ts + L->ts_next, &ts))
            return 0;
    }
    if (!ts || rd64(r, ts + L->ts_current_frame, &frame))
        return 0;
    for (int i = 0; frame && i < 64; i++) {
        uint8_t owner = 0;
        if (remote_read(r, frame + L->f_owner, &owner, 1))
            return 0;
        if (owner < PYRT_OWNED_BY_CSTACK)
            return frame;
        if (rd64(r, frame + L->f_previous, &frame))
            return 0;
    }
    return 0;
}

int pylocals_read(const struct pyrt *rt, struct remote *r, pid_t tid, struct pylocal *out, size_t max)
{
    const struct pyrt_layout *L = &rt->L;
    uint64_t code, names, n;
    if (!L->f_localsplus || !L->co_localsplusnames)
        return -ENOTSUP;
    uint64_t frame = innermost(rt, r, tid);
    if (!frame)
        return -ESRCH;
    if (rd64(r, frame + L->f_code, &code))
        return -EFAULT;
    code &= L->f_code_mask;
    if (rd64(r, code + L->co_localsplusnames, &names) || rd64(r, names + L->tuple_ob_size, &n))
        return -EFAULT;
    if (n > max)
        n = max;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t np, v;
        struct pylocal *p = &out[i];
        if (rd64(r, names + L->tuple_ob_item + 8 * i, &np) || read_str(L, r, np, p->name, sizeof(p->name)))
            snprintf(p->name, sizeof(p->name), "?");
        if (remote_read(r, frame + L->f_localsplus + 8 * i, &v, sizeof(v)))
            v = 0;
        repr(L, r, v & L->f_code_mask, p->value, sizeof(p->value));
    }
    return (int)n;
}
