/*
 * errmsg — a failure's message into the caller's buffer (see errmsg.h).
 */
#include "util/errmsg.h"

#include <stdarg.h>
#include <stdio.h>

int errmsg(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}
