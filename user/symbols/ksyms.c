/*
 * ksyms — kernel symbols from /proc/kallsyms, sorted by address for binary search. Only text
 * symbols (t/T/w/W) are kept; all names live in one string pool.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/ksyms.h"

struct ksym {
    uint64_t addr;
    size_t name; /* offset in pool */
};

struct ksyms {
    struct ksym *v;
    size_t n, cap;
    char *pool;
    size_t pool_len, pool_cap;
};

static int cmp_ksym(const void *a, const void *b)
{
    const struct ksym *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int add(struct ksyms *k, uint64_t addr, const char *name, size_t len)
{
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 65536;
        void *v = realloc(k->v, cap * sizeof(*k->v));
        if (!v)
            return -ENOMEM;
        k->v = v;
        k->cap = cap;
    }
    if (k->pool_len + len + 1 > k->pool_cap) {
        size_t cap = k->pool_cap ? k->pool_cap * 2 : 1 << 20;
        while (cap < k->pool_len + len + 1)
            cap *= 2;
        char *p = realloc(k->pool, cap);
        if (!p)
            return -ENOMEM;
        k->pool = p;
        k->pool_cap = cap;
    }
    memcpy(k->pool + k->pool_len, name, len);
    k->pool[k->pool_len + len] = '\0';
    k->v[k->n++] = (struct ksym){addr, k->pool_len};
    k->pool_len += len + 1;
    return 0;
}

int ksyms_open(struct ksyms **out)
{
    FILE *fp = fopen("/proc/kallsyms", "re");
    if (!fp)
        return -errno;
    struct ksyms *k = calloc(1, sizeof(*k));
    int err = k ? 0 : -ENOMEM;
    char line[512];
    while (!err && fgets(line, sizeof(line), fp)) {
        char *end;
        uint64_t addr = strtoull(line, &end, 16);
        if (end[0] != ' ' || !end[1] || end[2] != ' ')
            continue;
        char type = end[1];
        if (type != 't' && type != 'T' && type != 'w' && type != 'W')
            continue;
        char *name = end + 3;
        size_t len = strcspn(name, " \t\n");
        if (addr)
            err = add(k, addr, name, len);
    }
    fclose(fp);
    if (!err && k->n == 0)
        err = -EPERM; /* kptr_restrict hides the addresses */
    if (err) {
        ksyms_close(k);
        return err;
    }
    qsort(k->v, k->n, sizeof(*k->v), cmp_ksym);
    *out = k;
    return 0;
}

const char *ksyms_lookup(const struct ksyms *k, uint64_t addr, uint64_t *offset)
{
    size_t lo = 0, hi = k->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->v[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return NULL;
    if (offset)
        *offset = addr - k->v[lo - 1].addr;
    return k->pool + k->v[lo - 1].name;
}

int ksyms_addr(const struct ksyms *k, const char *name, uint64_t *addr)
{
    /* A linear pass: the table is sorted by address, and a stack asks a few dozen names. */
    for (size_t i = 0; i < k->n; i++)
        if (!strcmp(k->pool + k->v[i].name, name)) {
            *addr = k->v[i].addr;
            return 0;
        }
    return -ENOENT;
}

void ksyms_close(struct ksyms *k)
{
    if (!k)
        return;
    free(k->v);
    free(k->pool);
    free(k);
}
