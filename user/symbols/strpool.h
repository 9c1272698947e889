/*
 * strpool — interned strings: one copy of each distinct string, valid until strpool_free. Lets
 * the collector hand out names that outlive the tables they came from, with memory that grows
 * with distinct names only.
 */
#ifndef PYEBPF_STRPOOL_H
#define PYEBPF_STRPOOL_H

#include <stddef.h>

struct strpool {
    char **slots; /* open addressing, NULL = empty */
    size_t n, cap;
};

/* The pooled copy of s (s itself is not kept), or NULL when out of memory. */
const char *strpool_intern(struct strpool *p, const char *s);
void strpool_free(struct strpool *p);

#endif
