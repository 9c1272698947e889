/*
 * errmsg — says what failed in one place: a function that takes a caller's message buffer
 * (char *err, size_t errlen) fills it and returns its negative errno in one statement,
 *
 *   return errmsg(err, errlen, -ENOTSUP, "Python %u.%u: no layout", major, minor);
 */
#ifndef PYEBPF_ERRMSG_H
#define PYEBPF_ERRMSG_H

#include <stddef.h>

/* Formats the message into err (when err and errlen are non-zero) and returns rc. */
int errmsg(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
