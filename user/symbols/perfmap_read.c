/*
 * perf map reader. The file is written by the target (or anything else with its PID), so it is
 * read as untrusted text: bounded numbers, no assumptions about line length or the last newline.
 */
#include "symbols/perfmap_read.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/readfile.h"

#define PERFMAP_READ_MAX_FILE (1u << 30)

struct seq_entry {
    struct perfmap_read_entry e;
    size_t seq; /* line order, to let the later of two lines with one start win */
};

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Parses a hex number at *p (< end); false on no digits or more than 64 bits. */
static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    uint64_t v = 0;
    int digits = 0;
    for (; s < end && hexval(*s) >= 0; s++, digits++) {
        if (v >> 60)
            return false;
        v = v << 4 | (uint64_t)hexval(*s);
    }
    if (digits == 0)
        return false;
    *p = s;
    *out = v;
    return true;
}

static const char *skip_blank(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    return s;
}

/* One line without its newline: START SIZE name. */
static bool parse_line(const char *s, const char *end, struct perfmap_read_entry *e)
{
    while (end > s && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    s = skip_blank(s, end);
    const char *t = s;
    if (!parse_hex(&s, end, &e->start) || s == t || s >= end || (*s != ' ' && *s != '\t'))
        return false;
    s = skip_blank(s, end);
    if (!parse_hex(&s, end, &e->size) || s >= end || (*s != ' ' && *s != '\t'))
        return false;
    s = skip_blank(s, end);
    if (s >= end || memchr(s, '\0', (size_t)(end - s)))
        return false;
    e->name = strndup(s, (size_t)(end - s));
    return e->name != NULL;
}

static int cmp_seq(const void *a, const void *b)
{
    const struct seq_entry *x = a, *y = b;
    if (x->e.start != y->e.start)
        return x->e.start < y->e.start ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int perfmap_read_buf(const char *buf, size_t len, struct perfmap_read_table *t)
{
    memset(t, 0, sizeof(*t));
    struct seq_entry *v = NULL;
    size_t n = 0, cap = 0;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le > p && !(le == p + 1 && *p == '\r')) {
            struct perfmap_read_entry e = {0};
            if (!parse_line(p, le, &e)) {
                free(e.name);
                t->junk++;
            } else {
                if (n == cap) {
                    size_t ncap = cap ? cap * 2 : 64;
                    struct seq_entry *nv = realloc(v, ncap * sizeof(*nv));
                    if (!nv) {
                        free(e.name);
                        goto oom;
                    }
                    v = nv;
                    cap = ncap;
                }
                v[n].e = e;
                v[n].seq = n;
                n++;
            }
        }
        p = nl ? nl + 1 : end;
    }
    if (n == 0) {
        free(v);
        return 0;
    }
    qsort(v, n, sizeof(*v), cmp_seq);
    t->v = malloc(n * sizeof(*t->v));
    if (!t->v)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && v[i + 1].e.start == v[i].e.start) {
            free(v[i].e.name); /* republished at the same address: the later line wins */
            continue;
        }
        t->v[t->n++] = v[i].e;
    }
    free(v);
    return 0;
oom:
    for (size_t i = 0; i < n; i++)
        free(v[i].e.name);
    free(v);
    perfmap_read_free(t);
    return -ENOMEM;
}

int perfmap_read_file(const char *path, struct perfmap_read_table *t)
{
    memset(t, 0, sizeof(*t));
    char *buf;
    size_t len;
    int err = readfile(path, PERFMAP_READ_MAX_FILE, 0, &buf, &len);
    if (err)
        return err;
    err = perfmap_read_buf(buf, len, t);
    free(buf);
    return err;
}

void perfmap_read_free(struct perfmap_read_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].name);
    free(t->v);
    memset(t, 0, sizeof(*t));
}

const struct perfmap_read_entry *perfmap_read_find(const struct perfmap_read_table *t, uint64_t addr)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) { /* first entry with start > addr */
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Overlapping entries are rare (a region republished with another size): look back a
     * few entries for one that still covers addr. */
    for (size_t i = lo, k = 0; i-- > 0 && k < 8; k++) {
        const struct perfmap_read_entry *e = &t->v[i];
        if (addr - e->start < e->size)
            return e;
    }
    return NULL;
}
