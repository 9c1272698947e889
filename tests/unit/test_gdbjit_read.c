/*
 * CPython 3.15's JIT executors read from outside (user/symbols/gdbjit_read.c): a PYTHON_JIT=1 hot loop on
 * Debian's 3.15 (build/pythons, `make test-pythons`); the regions must be executable anonymous
 * memory of the target, carry the name CPython registered and CFI that finds the frame through
 * rbp, agree with what readelf decodes from the image, be re-read without
 * fetching known images again, and be found through jitsyms once handed to it; proc names them
 * once the collector hands it the descriptor (proc_set_gdbjit), and not before.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "python/pyrt.h"
#include "symbols/elfsym.h"
#include "symbols/gdbjit_read.h"
#include "symbols/jitsyms.h"
#include "symbols/proc.h"

#define PY315 "build/pythons/bin/python3.15"

static pid_t child = -1;

static int teardown(void **state)
{
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    child = -1;
    return 0;
}

static pid_t spawn_hot(void)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        setenv("PYTHON_JIT", "1", 1);
        execl(PY315, PY315, "tests/py/jit_hot.py", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char buf[64] = "";
    FILE *f = fdopen(fd[0], "r");
    if (!f || !fgets(buf, sizeof(buf), f) || strncmp(buf, "READY jit=True", 14) != 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        pid = -1;
    }
    if (f)
        fclose(f);
    return pid;
}

/* Is [start, end) inside one anonymous executable mapping of pid? */
static bool in_anon_exec(pid_t pid, uint64_t start, uint64_t end)
{
    char path[64], line[512];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    bool ok = false;
    while (f && fgets(line, sizeof(line), f)) {
        uint64_t s, e;
        char perms[8];
        int pos = 0;
        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %*s %*s %*s %n", &s, &e, perms, &pos) < 3)
            continue;
        bool anon = pos == 0 || line[pos] == '\n' || line[pos] == 0;
        if (start >= s && end <= e && perms[2] == 'x' && anon)
            ok = true;
    }
    if (f)
        fclose(f);
    return ok;
}

/* A PYTHON_JIT=1 hot loop, started and attached (its runtime in *rt, read through *r); skips
 * without Debian's 3.15. */
static pid_t start_hot(struct remote *r, struct pyrt *rt)
{
    if (access(PY315, X_OK) != 0) {
        fprintf(stderr, "# SKIP %s absent (make test-pythons provides it)\n", PY315);
        skip();
    }
    pid_t pid = child = spawn_hot();
    assert_true(pid > 0);
    char err[256] = "";
    remote_init(r, pid);
    int rc = pyrt_attach(rt, r, pid, err, sizeof(err));
    if (rc)
        fprintf(stderr, "# %s\n", err);
    assert_int_equal(rc, 0);
    assert_true(rt->jit_descriptor != 0);
    return pid;
}

static void executors(void **state)
{
    struct remote r;
    struct pyrt rt;
    pid_t pid = start_hot(&r, &rt);

    struct gdbjit_read j;
    gdbjit_read_init(&j, rt.jit_descriptor);
    uint64_t calls0 = r.st.calls;
    int n = gdbjit_read_list(&j, &r, 100000);
    assert_true(n >= 1);
    /* n + 1 calls at most for n entries: each call carries an entry and the previous image. */
    assert_true(r.st.calls - calls0 <= (uint64_t)n + 2);
    fprintf(stderr, "# %d executors, %" PRIu64 " calls, %" PRIu64 " images read\n", n, r.st.calls - calls0,
            j.st.images_read);
    for (int i = 0; i < n; i++) {
        const struct gdbjit_read_region *g = &j.v[i];
        assert_string_equal(g->name, "py::jit:executor");
        assert_true(g->end > g->start);
        assert_true(in_anon_exec(pid, g->start, g->end));
        /* CPython's CIE: CFA = rbp + 16 from the first instruction on. */
        struct cfi_row row;
        assert_non_null(g->cfi.data);
        assert_int_equal(cfi_read_row(&g->cfi, g->start, &row), 0);
        assert_int_equal(row.cfa_reg, 6);
        assert_int_equal(row.cfa_off, 16);
    }

    /* readelf decodes the first image on its own: same symbol at the same address. */
    {
        uint8_t *img = malloc(j.v[0].image_size);
        assert_non_null(img);
        assert_int_equal(remote_read(&r, j.v[0].image, img, j.v[0].image_size), 0);
        char path[] = "/tmp/pyebpf-jitimg.XXXXXX", cmd[256], out[512] = "";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, img, j.v[0].image_size), (ssize_t)j.v[0].image_size);
        close(fd);
        free(img);
        snprintf(cmd, sizeof(cmd), "readelf -sW %s | awk '$4 == \"FUNC\" {print $2, $8}'", path);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        if (!fgets(out, sizeof(out), p))
            out[0] = 0;
        pclose(p);
        unlink(path);
        char want[128];
        snprintf(want, sizeof(want), "%016" PRIx64 " py::jit:executor\n", j.v[0].start);
        fprintf(stderr, "# readelf: %s", out);
        assert_string_equal(out, want);
    }

    /* Again: known images are not fetched a second time. */
    uint64_t read0 = j.st.images_read;
    int n2 = gdbjit_read_list(&j, &r, 100000);
    assert_true(n2 >= 1);
    assert_true(j.st.images_reused >= (uint64_t)n2 - (j.st.images_read - read0));
    assert_true(j.st.images_read - read0 < (uint64_t)n2);

    /* Stopped, the target's list cannot change: read twice, the second read finds the same list
     * and leaves every region where it was (the CFI tables handed out keep their addresses, so
     * the unwinder's cached rows stay). */
    int status;
    assert_int_equal(kill(pid, SIGSTOP), 0);
    assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
    assert_true(gdbjit_read_list(&j, &r, 100000) >= 1);
    const struct gdbjit_read_region *v0 = j.v;
    const uint64_t start0 = j.v[0].start;
    const size_t n0 = j.n;
    assert_int_equal(gdbjit_read_list(&j, &r, 100000), (int)n0);
    assert_false(j.changed);
    assert_ptr_equal(j.v, v0);
    assert_int_equal(j.v[0].start, start0);
    assert_int_equal(kill(pid, SIGCONT), 0);
    n2 = (int)j.n;

    /* Handed to jitsyms, the regions name addresses for the native unwinder. */
    struct jitsyms *js;
    assert_int_equal(jitsyms_new(&js), 0);
    struct jitsym *v = calloc((size_t)n2, sizeof(*v));
    for (int i = 0; i < n2; i++)
        v[i] =
            (struct jitsym){j.v[i].start, j.v[i].end, j.v[i].name, j.v[i].cfi.data ? &j.v[i].cfi : NULL, 0};
    assert_int_equal(jitsyms_set_extra(js, v, (size_t)n2), 1);
    free(v);
    struct jitsym *hit = jitsyms_find(js, j.v[0].start + 1);
    assert_non_null(hit);
    assert_string_equal(hit->name, "py::jit:executor");
    assert_ptr_equal(hit->cfi, &j.v[0].cfi);
    for (int i = 0; i < n2; i++) {
        const struct gdbjit_read_region *g = &j.v[i];
        assert_true(jitsyms_find(js, g->start) && jitsyms_find(js, g->start)->start == g->start);
        assert_true(jitsyms_find(js, g->end - 1) && jitsyms_find(js, g->end - 1)->end == g->end);
    }
    assert_int_equal(jitsyms_set_extra(js, NULL, 0), 1);
    assert_null(jitsyms_find(js, j.v[0].start + 1));
    jitsyms_free(js);

    gdbjit_read_free(&j);
}

/* proc knows nothing of Python: the descriptor the collector found names the executors, and
 * until it is given they are unnamed JIT code. */
static void proc_given_descriptor(void **state)
{
    struct remote r;
    struct pyrt rt;
    pid_t pid = start_hot(&r, &rt);
    struct gdbjit_read j;
    gdbjit_read_init(&j, rt.jit_descriptor);
    assert_true(gdbjit_read_list(&j, &r, 100000) >= 1);

    struct elfsym_cache *elf;
    struct proc *p;
    struct symres sr;
    assert_int_equal(elfsym_cache_new(&elf), 0);
    assert_int_equal(proc_open(&p, pid, elf), 0);
    assert_int_equal(proc_symbolize(p, j.v[0].start + 1, &sr), 0);
    assert_true(sr.kind == FRAME_JIT && !sr.name);
    /* 0: regions were only added, and unnamed JIT code was never cached (no name changed) */
    assert_true(proc_set_gdbjit(p, rt.jit_descriptor) >= 0);
    assert_int_equal(proc_symbolize(p, j.v[0].start + 1, &sr), 0);
    assert_true(sr.kind == FRAME_JIT);
    assert_non_null(sr.name);
    assert_string_equal(sr.name, "py::jit:executor");
    assert_int_equal(sr.offset, 1);
    assert_int_equal(proc_set_gdbjit(p, rt.jit_descriptor), 0); /* the same: nothing to do */
    proc_close(p);
    elfsym_cache_free(elf);
    gdbjit_read_free(&j);
}

/* No JIT interface (3.14): nothing to read, no error. */
static void no_descriptor(void **state)
{
    struct gdbjit_read j;
    struct remote r;
    remote_init(&r, getpid());
    gdbjit_read_init(&j, 0);
    assert_int_equal(gdbjit_read_list(&j, &r, 10), 0);
    assert_int_equal(j.n, 0);
    gdbjit_read_free(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(executors, teardown),
        cmocka_unit_test_teardown(proc_given_descriptor, teardown),
        cmocka_unit_test(no_descriptor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
