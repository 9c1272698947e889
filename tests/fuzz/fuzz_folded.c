/*
 * Fuzz target: the folded-text reader (user/folded.c) that `pyebpf-sample render` runs on files
 * users hand it, and the writers fed by what it read.
 *
 * Input: folded text (need not be NUL-terminated). Checks:
 *   - read → finish → folded_write gives text T1; reading T1 and writing again gives T1 exactly
 *     (the writer's output is a fixed point of read+write, so a rendered file can be re-read),
 *     with the same total sample count;
 *   - one of the other writers (SVG, speedscope, pprof; chosen by the input's size) runs on the
 *     profile, exercising their escaping of hostile frame names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "output.h"
#include "profile.h"

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
        if (n1 != n2 || memcmp(t1, t2, n1) != 0)
            __builtin_trap(); /* written folded text does not read back as itself */
        if (p1.nnodes && p2.nnodes && p1.nodes[0].total != p2.nodes[0].total)
            __builtin_trap();
    }
    switch (size % 4) {
    case 0:
        svg_write(&p1, devnull, &(struct output_opts){.title = NULL, .icicle = size & 4});
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
