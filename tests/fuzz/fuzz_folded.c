/*
 * Fuzz target: the folded-text reader (user/output/folded.c) that `pyebpf-sample render` runs on files
 * users hand it, and the writers fed by what it read.
 *
 * Input: folded text (need not be NUL-terminated). Checks:
 *   - read → finish → folded_write gives text T1; reading T1 and writing again gives the same
 *     lines as T1 (in any order) and the same total sample count: the writer's output is a
 *     fixed point of read+write, so a rendered file can be re-read;
 *   - one of the other writers (SVG, speedscope, pprof; chosen by the input's size) runs on the
 *     profile, exercising their escaping of hostile frame names.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "output/folded.h"
#include "output/pprof.h"
#include "output/speedscope.h"
#include "output/summary.h"
#include "output/svg.h"
#include "profile/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

/* Reads buf into a fresh profile and writes it as folded text into *out (malloc'd). */
static int read_write(const char *buf, size_t len, struct profile *p, char **out, size_t *outlen)
{
    if (profile_init(p) != 0)
        return -1;
    if (folded_read(p, buf, len, NULL) != 0)
        return -1;
    profile_finish(p);
    FILE *f = open_memstream(out, outlen);
    if (!f)
        return -1;
    int rc = folded_write(p, f);
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Splits a NUL-free text into its sorted lines (in place). */
static char **sorted_lines(char *t, size_t n, size_t *count)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += t[i] == '\n';
    char **v = malloc((k + 1) * sizeof(*v));
    if (!v)
        return NULL;
    k = 0;
    for (char *l = t; l < t + n;) {
        char *nl = memchr(l, '\n', (size_t)(t + n - l));
        if (nl)
            *nl = '\0';
        v[k++] = l;
        l = nl ? nl + 1 : t + n;
    }
    qsort(v, k, sizeof(*v), cmp_line);
    *count = k;
    return v;
}

/* Same lines, in any order: writers order siblings by frame label, and the written text of a
 * label may sort differently (e.g. an empty label is written as '?'). */
static bool same_lines(char *a, size_t na, char *b, size_t nb)
{
    if (na != nb || memchr(a, '\0', na) || memchr(b, '\0', nb))
        return na == nb && memcmp(a, b, na) == 0;
    size_t ka, kb;
    char **va = sorted_lines(a, na, &ka), **vb = sorted_lines(b, nb, &kb);
    bool same = va && vb && ka == kb;
    for (size_t i = 0; same && i < ka; i++)
        same = strcmp(va[i], vb[i]) == 0;
    free(va);
    free(vb);
    return same || !va || !vb;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!devnull && !(devnull = fopen("/dev/null", "w")))
        return 0;
    struct profile p1, p2;
    char *t1 = NULL, *t2 = NULL;
    size_t n1 = 0, n2 = 0;
    if (read_write((const char *)data, size, &p1, &t1, &n1) != 0) {
        profile_free(&p1);
        free(t1);
        return 0;
    }
    if (read_write(t1, n1, &p2, &t2, &n2) == 0) {
        if (!same_lines(t1, n1, t2, n2))
            __builtin_trap(); /* written folded text does not read back as itself */
        if (p1.nnodes && p2.nnodes && p1.nodes[0].total != p2.nodes[0].total)
            __builtin_trap();
    }
    switch (size % 4) {
    case 0:
        svg_write(&p1, devnull, &(struct svg_opts){.title = NULL, .icicle = size & 4});
        break;
    case 1:
        speedscope_write(&p1, devnull);
        break;
    case 2:
        if (size < 4096) /* gzip is slow; keep executions fast */
            pprof_write(&p1, devnull);
        break;
    default:
        summary_print(&p1, devnull, 10);
        break;
    }
    profile_free(&p1);
    profile_free(&p2);
    free(t1);
    free(t2);
    return 0;
}
