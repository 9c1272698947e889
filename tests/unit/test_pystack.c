/*
 * The remote Python frame reader against real interpreters (needs root or ptrace rights over
 * children): tests/py/nested.py prints the stack a reader must see (its own frames, found with
 * inspect), and each test reads it from outside and compares frame by frame, line by line.
 * The forged-memory test writes fake thread states and frame chains into a scratch buffer of the
 * target and links them into its thread list.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "pytargets.h"
#include "python/pystack.h"
#include "python/pythreads.h"
#include "sample.h"
#include "util/monotime.h"

/* -- Target processes ------------------------------------------------------------------------- */

struct exp_frame {
    char name[128];
    unsigned lo, hi;
};

struct expect {
    pid_t tid;
    struct exp_frame f[1100];
    int n;
};

struct target {
    pid_t pid;
    int fd;
    char buf[1 << 16];
    size_t len;
    struct expect exp[5];
    int nexp;
    struct {
        pid_t tid;
        uint64_t ident;
        char name[48];
    } names[16]; /* "NAME tid ident name" lines (mode names) */
    int nnames;
    uint64_t scratch, scratch_len;
};

static bool read_line(struct target *t, char *line, size_t cap)
{
    for (;;) {
        char *nl = memchr(t->buf, '\n', t->len);
        if (nl) {
            size_t n = (size_t)(nl - t->buf);
            if (n >= cap)
                n = cap - 1;
            memcpy(line, t->buf, n);
            line[n] = 0;
            t->len -= (size_t)(nl - t->buf) + 1;
            memmove(t->buf, nl + 1, t->len);
            return true;
        }
        struct pollfd p = {t->fd, POLLIN, 0};
        if (poll(&p, 1, 30000) <= 0 || t->len == sizeof(t->buf))
            return false;
        ssize_t got = read(t->fd, t->buf + t->len, sizeof(t->buf) - t->len);
        if (got <= 0)
            return false;
        t->len += (size_t)got;
    }
}

static void parse_expect(struct expect *e, char *line)
{
    char *save = NULL, *tok = strtok_r(line, " ", &save);
    tok = strtok_r(NULL, " ", &save);
    e->tid = atoi(tok);
    e->n = 0;
    while ((tok = strtok_r(NULL, " ", &save)) && e->n < 1100) {
        char *colon = strrchr(tok, ':');
        if (!colon)
            fail_msg("bad EXPECT token %s", tok);
        struct exp_frame *f = &e->f[e->n++];
        *colon = 0;
        snprintf(f->name, sizeof(f->name), "%s", tok);
        f->lo = f->hi = (unsigned)atoi(colon + 1);
        char *dash = strchr(colon + 1, '-');
        if (dash)
            f->hi = (unsigned)atoi(dash + 1);
    }
}

/* The workload of the running test; the teardown stops it even when the test failed. */
static struct target *current;

/* Reads the workload's lines up to READY and `nexp` EXPECT lines in all, keeping what they say. */
static void wait_ready(struct target *t, int nexp)
{
    bool ready = false;
    static char line[1 << 16];
    while ((!ready || t->nexp < nexp) && read_line(t, line, sizeof(line))) {
        if (strcmp(line, "READY") == 0)
            ready = true;
        else if (strncmp(line, "EXPECT ", 7) == 0 && t->nexp < 5)
            parse_expect(&t->exp[t->nexp++], line);
        else if (strncmp(line, "NAME ", 5) == 0 && t->nnames < 16) {
            int k = t->nnames++;
            if (sscanf(line + 5, "%d %lu %47s", &t->names[k].tid, &t->names[k].ident, t->names[k].name) != 3)
                fail_msg("bad NAME line %s", line);
        } else if (strncmp(line, "BUFFER ", 7) == 0)
            sscanf(line + 7, "%lu %lu", &t->scratch, &t->scratch_len);
    }
    assert_true(ready);
    assert_int_equal(t->nexp, nexp);
}

/* Starts `py nested.py mode [arg]` and waits for READY and `nexp` EXPECT lines. */
static struct target *spawn(const char *py, const char *mode, const char *arg, int nexp)
{
    int p[2];
    struct target *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    assert_int_equal(pipe(p), 0);
    t->pid = fork();
    assert_true(t->pid >= 0);
    if (t->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(p[1], 1);
        close(p[0]);
        execl(py, py, "tests/py/nested.py", mode, arg, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    t->fd = p[0];
    current = t;
    wait_ready(t, nexp);
    usleep(50000);
    return t;
}

static void stop(struct target *t)
{
    kill(t->pid, SIGKILL);
    waitpid(t->pid, NULL, 0);
    close(t->fd);
    free(t);
    current = NULL;
}

static int teardown(void **state)
{
    (void)state;
    if (current)
        stop(current);
    return 0;
}

static struct pystack *open_reader(pid_t pid, struct profile *prof, uint32_t depth, uint32_t reads)
{
    struct pystack *ps = NULL;
    struct pystack_opts o = {.max_depth = depth, .max_reads = reads};
    char err[512] = "";
    assert_int_equal(profile_init(prof), 0);
    int rc = pystack_open(&ps, pid, prof, &o, err, sizeof(err));
    if (rc)
        print_error("pystack_open: %d %s\n", rc, err);
    assert_int_equal(rc, 0);
    return ps;
}

/* The expected chain must be the root end of the frames read, frame by frame. */
static void match(const struct profile *prof, const struct pystack_frame *fr, int n, const struct expect *e)
{
    int start = n - e->n;
    if (start < 0) {
        print_error("read %d frames, expected at least %d\n", n, e->n);
        fail();
    }
    for (int k = 0; k < e->n; k++) {
        const struct frame *f = &prof->frames[fr[start + k].frame];
        const struct exp_frame *x = &e->f[k];
        if (strcmp(f->name, x->name) != 0 || f->line < x->lo || f->line > x->hi) {
            print_error("frame %d: %s:%u, expected %s:%u-%u\n", start + k, f->name, f->line, x->name, x->lo,
                        x->hi);
            fail();
        }
        assert_non_null(f->file);
    }
    assert_true(fr[n - 1].entry);
}

static bool have(void **state)
{
    const char *py = *state;
    if (access(py, X_OK) == 0)
        return true;
    fprintf(stderr, "# SKIP %s absent (make test-pythons provides build/pythons/bin/*)\n", py);
    skip();
    return false;
}

/* -- Tests ------------------------------------------------------------------------------------- */

static int raw_chain(pid_t pid, struct pystack *ps, pid_t tid, struct pystack_raw *raw, int max);
static uint64_t code_ident(pid_t pid, const struct pyrt *rt, uint64_t code);
static double ms_since(const struct timespec *t0);

/* main → outer → middle → inner, blocked and spinning; one call per steady sample. */
static void chain(void **state)
{
    if (!have(state))
        return;
    static const char *modes[] = {"block", "spin"};
    struct pystack_frame fr[64];
    for (int m = 0; m < 2; m++) {
        struct target *t = spawn(*state, modes[m], NULL, 1);
        struct profile prof;
        struct pystack *ps = open_reader(t->pid, &prof, 0, 0);
        unsigned flags;
        /* Debian's interpreters hold the runtime themselves (static libpython); pyenv's link it. */
        const struct pyrt *rt = pystack_runtime(ps);
        char mm[16];
        snprintf(mm, sizeof(mm), "%u.%u", rt->L.major, rt->L.minor);
        assert_non_null(strstr(*state, mm));
        assert_int_equal(rt->shared_lib,
                         strncmp(*state, "/usr/bin/", 9) != 0 && !strstr(*state, "build/pythons/"));
        assert_non_null(strstr(rt->path, rt->shared_lib ? "libpython" : "/usr/bin/python"));
        for (int i = 0; i < 20; i++) {
            struct remote_stats before = *pystack_remote_stats(ps);
            int n = pystack_read(ps, t->exp[0].tid, fr, 64, &flags);
            assert_true(n > 0);
            match(&prof, fr, n, &t->exp[0]);
            assert_false(flags & (PYSTACK_TRUNCATED | PYSTACK_BROKEN));
            if (i > 0) { /* steady stack: exactly one process_vm_readv */
                assert_int_equal(pystack_remote_stats(ps)->calls - before.calls, 1);
                assert_true(flags & PYSTACK_PREDICTED);
            }
        }
        /* Only the root frame of this single eval-loop call is an entry frame. */
        int n = pystack_read(ps, t->exp[0].tid, fr, 64, &flags);
        for (int i = 0; i < n - 1; i++)
            assert_false(fr[i].entry);
        if (m == 0) {
            /* The in-kernel path: (code, instr, owner) pairs read elsewhere, symbolised here,
             * give the same frames; with the code objects cached it costs one call. */
            struct pystack_raw raw[64];
            struct pystack_frame sym[64];
            int nraw = raw_chain(t->pid, ps, t->exp[0].tid, raw, 64);
            assert_true(nraw >= n);
            struct remote_stats before = *pystack_remote_stats(ps);
            assert_int_equal(pystack_symbolize(ps, raw, (size_t)nraw, false, sym, 64, NULL), n);
            assert_true(pystack_remote_stats(ps)->calls - before.calls <= 1);
            for (int i = 0; i < n; i++) {
                assert_int_equal(sym[i].frame, fr[i].frame);
                assert_int_equal(sym[i].entry, fr[i].entry);
            }
            /* With the idents the kernel captures, symbolising cached code objects reads nothing:
             * the first call fills each (address, ident) entry, the next ones read no memory. */
            for (int i = 0; i < nraw; i++)
                raw[i].ident = code_ident(t->pid, pystack_runtime(ps), raw[i].code);
            assert_int_equal(pystack_symbolize(ps, raw, (size_t)nraw, false, sym, 64, NULL), n);
            before = *pystack_remote_stats(ps);
            for (int k = 0; k < 10; k++) {
                assert_int_equal(pystack_symbolize(ps, raw, (size_t)nraw, false, sym, 64, NULL), n);
                for (int i = 0; i < n; i++)
                    assert_int_equal(sym[i].frame, fr[i].frame);
            }
            assert_int_equal(pystack_remote_stats(ps)->calls, before.calls);
        }
        struct pystack_stats st;
        pystack_get_stats(ps, &st);
        assert_true(st.l1_hits >= 19 && st.code_hits > 0 && st.fin_hits > 0);
        assert_int_equal(st.errors, 0);
        pystack_stats(ps, stats_file(stderr));
        pystack_close(ps);
        profile_free(&prof);
        stop(t);
    }
}

/* Four threads with differently named functions, each read by its tid. */
static void threads(void **state)
{
    if (!have(state))
        return;
    struct target *t = spawn(*state, "threads", NULL, 4);
    struct profile prof;
    struct pystack *ps = open_reader(t->pid, &prof, 0, 0);
    struct pystack_frame fr[64];
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < 4; k++) {
            unsigned flags;
            int n = pystack_read(ps, t->exp[k].tid, fr, 64, &flags);
            assert_true(n >= 2);
            match(&prof, fr, n, &t->exp[k]);
            assert_string_equal(prof.frames[fr[1].frame].name, t->exp[k].f[1].name);
        }
    }
    /* The main thread too, and a tid that is no Python thread. */
    unsigned flags;
    assert_true(pystack_read(ps, t->pid, fr, 64, &flags) > 0);
    assert_int_equal(pystack_read(ps, 1, fr, 64, &flags), -ESRCH);
    pystack_close(ps);
    profile_free(&prof);
    stop(t);
}

/* Recursion 1000 deep: complete under a 2048 cap, truncated and flagged at 512. */
static void deep(void **state)
{
    if (!have(state))
        return;
    struct target *t = spawn(*state, "deep", "1000", 1);
    static struct pystack_frame fr[2048];
    struct profile prof;
    unsigned flags;

    struct pystack *ps = open_reader(t->pid, &prof, 2048, 0);
    int n = pystack_read(ps, t->exp[0].tid, fr, 2048, &flags);
    /* Event.wait and Condition.wait sit above the reported leaf. */
    assert_int_equal(n, t->exp[0].n + 2);
    match(&prof, fr, n, &t->exp[0]);
    assert_false(flags & PYSTACK_TRUNCATED);
    struct remote_stats before = *pystack_remote_stats(ps);
    assert_int_equal(pystack_read(ps, t->exp[0].tid, fr, 2048, &flags), n);
    assert_int_equal(pystack_remote_stats(ps)->calls - before.calls, 1);
    /* Neighbouring frames were read as ranges: far fewer iovecs than frames. */
    uint64_t iovecs = pystack_remote_stats(ps)->segs_requested - before.segs_requested;
    print_message("steady read of %d frames: %lu iovecs\n", n, (unsigned long)iovecs);
    assert_true(iovecs < 100);
    pystack_close(ps);
    profile_free(&prof);

    /* The same with one iovec per frame. */
    struct pystack_opts o = {.max_depth = 2048, .exact_reads = true};
    char err[256];
    static struct pystack_frame fr2[2048];
    assert_int_equal(profile_init(&prof), 0);
    assert_int_equal(pystack_open(&ps, t->pid, &prof, &o, err, sizeof(err)), 0);
    assert_int_equal(pystack_read(ps, t->exp[0].tid, fr2, 2048, &flags), n);
    before = *pystack_remote_stats(ps);
    assert_int_equal(pystack_read(ps, t->exp[0].tid, fr2, 2048, &flags), n);
    assert_int_equal(pystack_remote_stats(ps)->calls - before.calls, 1);
    assert_true(pystack_remote_stats(ps)->segs_requested - before.segs_requested >= (uint64_t)n);
    match(&prof, fr2, n, &t->exp[0]);
    pystack_close(ps);
    profile_free(&prof);

    ps = open_reader(t->pid, &prof, 512, 0);
    n = pystack_read(ps, t->exp[0].tid, fr, 2048, &flags);
    assert_int_equal(n, 512);
    assert_true(flags & PYSTACK_TRUNCATED);
    for (int i = 2; i < n; i++) {
        assert_string_equal(prof.frames[fr[i].frame].name, "recurse");
        assert_false(fr[i].entry); /* the entry frame is beyond the cap */
    }
    assert_int_equal(prof.frames[fr[2].frame].line, t->exp[0].f[0].lo);
    assert_int_equal(prof.frames[fr[3].frame].line, t->exp[0].f[1].lo);
    struct pystack_stats st;
    pystack_get_stats(ps, &st);
    assert_int_equal(st.truncated, 1);
    pystack_close(ps);
    profile_free(&prof);
    stop(t);
}

/* -- Forged memory ---------------------------------------------------------------------------- */

/* The frame chain of `tid` as an in-kernel reader would capture it. */
static int raw_chain(pid_t pid, struct pystack *ps, pid_t tid, struct pystack_raw *raw, int max)
{
    const struct pyrt_layout *L = &pystack_runtime(ps)->L;
    uint64_t ts, f;
    int n = 0;
    assert_int_equal(pystack_thread_state(ps, tid, &ts, NULL), 0);
    if (L->ts_cframe)
        f = rd64(pid, rd64(pid, ts + L->ts_cframe) + L->cf_current_frame);
    else
        f = rd64(pid, ts + L->ts_current_frame);
    for (; f && n < max; n++, f = rd64(pid, f + L->f_previous)) {
        raw[n].code = rd64(pid, f + L->f_code) & L->f_code_mask;
        raw[n].instr = rd64(pid, f + L->f_instr);
        raw[n].owner = rd8(pid, f + L->f_owner);
        raw[n].is_entry = L->f_is_entry >= 0 ? rd8(pid, f + (uint64_t)L->f_is_entry) : 0;
        raw[n].ident = 0;
    }
    return n;
}

/* What the in-kernel reader puts beside a frame: its code object's identity block, folded. */
static uint64_t code_ident(pid_t pid, const struct pyrt *rt, uint64_t code)
{
    uint8_t blk[PYRT_CODE_ID_MAX];
    struct iovec l = {blk, rt->L.co_id_size},
                 r = {(void *)(uintptr_t)(code + rt->L.co_id_start), rt->L.co_id_size};
    assert_true(rt->L.co_id_size >= 8 && rt->L.co_id_size <= PYRT_CODE_ID_MAX);
    assert_int_equal(process_vm_readv(pid, &l, 1, &r, 1, 0), (ssize_t)rt->L.co_id_size);
    uint64_t qual;
    memcpy(&qual, blk + (rt->L.co_qualname - rt->L.co_id_start), 8);
    return sample_py_ident(blk, rt->L.co_id_size, rt->L.co_id_version, rd64(pid, qual + rt->L.str_length),
                           rd64(pid, qual + rt->L.str_length + 8));
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

#define FAKE_TID 0x3ffff000

/* A str object: compact (ASCII when kind == 1 and ascii), `length` characters. */
static void forge_str(pid_t pid, const struct pyrt_layout *L, uint64_t at, uint64_t length, unsigned state,
                      const char *text)
{
    w64(pid, at + L->str_length, length);
    uint32_t st = state;
    wmem(pid, at + L->str_state, &st, 4);
    if (text)
        wmem(pid, at + L->str_ascii_data, text, strlen(text));
}

static void forge_code(pid_t pid, const struct pyrt *rt, uint64_t at, uint64_t qual, uint64_t file,
                       uint64_t table, uint32_t first)
{
    const struct pyrt_layout *L = &rt->L;
    w64(pid, at + L->ob_type - 8, 1); /* a live object's reference count */
    w64(pid, at + L->ob_type, rt->code_type);
    w64(pid, at + L->co_qualname, qual);
    w64(pid, at + L->co_name, qual);
    w64(pid, at + L->co_filename, file);
    w64(pid, at + L->co_linetable, table);
    wmem(pid, at + L->co_firstlineno, &first, 4);
}

static void forge_frame(pid_t pid, const struct pyrt_layout *L, uint64_t at, uint64_t code, uint64_t previous)
{
    w64(pid, at + L->f_code, code);
    w64(pid, at + L->f_previous, previous);
    w64(pid, at + L->f_instr, code + L->co_code_adaptive);
    uint8_t owner = 0;
    wmem(pid, at + L->f_owner, &owner, 1);
}

static void forged(void **state)
{
    if (!have(state))
        return;
    struct target *t = spawn(*state, "forge", NULL, 0);
    assert_true(t->scratch && t->scratch_len >= (1 << 20));
    struct profile prof;
    struct pystack *ps = open_reader(t->pid, &prof, 0, 32);
    const struct pyrt *rt = pystack_runtime(ps);
    const struct pyrt_layout *L = &rt->L;
    const pid_t pid = t->pid;
    const uint64_t B = t->scratch;
    const unsigned ascii = (1u << 2) | (1u << 5) | (1u << 6);
    assert_true(rt->code_type != 0);

    /* Strings, line tables and code objects at B + 4096 .. */
    uint64_t good_str = B + 4096, huge_str = B + 4096 + 256, bad_str = B + 4096 + 512;
    uint64_t empty_bytes = B + 4096 + 768, huge_bytes = B + 4096 + 1024;
    forge_str(pid, L, good_str, 5, ascii, "loopy");
    forge_str(pid, L, huge_str, 1ull << 40, ascii, NULL);
    forge_str(pid, L, bad_str, 3, (3u << 2) | (1u << 5), NULL); /* kind 3 does not exist */
    w64(pid, empty_bytes + L->var_ob_size, 0);
    w64(pid, huge_bytes + L->var_ob_size, 1ull << 40);
    uint64_t code = B + 8192, absurd = B + 8192 + 512, notcode = B + 8192 + 1024;
    forge_code(pid, rt, code, good_str, good_str, empty_bytes, 7);
    forge_code(pid, rt, absurd, huge_str, bad_str, huge_bytes, 9);

    /* Frame chains at B + 16384 ..; chain k's top frame in tops[k]. */
    uint64_t F = B + 16384, tops[6];
    forge_frame(pid, L, F, code, F + 128); /* 0: a loop of two frames */
    forge_frame(pid, L, F + 128, code, F);
    tops[0] = F;
    tops[1] = 0x10;             /* 1: unmapped */
    uint64_t chain = B + 65536; /* 2: 6000 frames, each a separate read */
    for (int i = 0; i < 6000; i++)
        forge_frame(pid, L, chain + (uint64_t)i * 128, code, i == 5999 ? 0 : chain + (uint64_t)(i + 1) * 128);
    tops[2] = chain;
    forge_frame(pid, L, F + 256, absurd, 0); /* 3: absurd code object */
    tops[3] = F + 256;
    forge_frame(pid, L, F + 384, notcode, 0); /* 4: not a code object */
    tops[4] = F + 384;
    forge_frame(pid, L, F + 512, code, 0xfffffffffffffff0ull); /* 5: previous near 2^64 */
    tops[5] = F + 512;

    /* Fake thread states at B + k*512, linked after the last real one. */
    uint64_t interp = rd64(pid, rt->runtime_addr + L->rt_interpreters_head);
    uint64_t last = rd64(pid, interp + L->is_threads_head);
    while (rd64(pid, last + L->ts_next))
        last = rd64(pid, last + L->ts_next);
    for (int k = 0; k < 6; k++) {
        uint64_t ts = B + (uint64_t)k * 512;
        w64(pid, ts + L->ts_next, k == 5 ? 0 : ts + 512);
        w64(pid, ts + L->ts_interp, interp);
        w64(pid, ts + L->ts_native_thread_id, FAKE_TID + (uint64_t)k);
        if (L->ts_cframe) {
            uint64_t cf = B + 3072 + (uint64_t)k * 16;
            w64(pid, ts + L->ts_cframe, cf);
            w64(pid, cf + L->cf_current_frame, tops[k]);
        } else {
            w64(pid, ts + L->ts_current_frame, tops[k]);
        }
    }
    w64(pid, last + L->ts_next, B);

    static struct pystack_frame fr[1024];
    struct pystack_stats st;
    unsigned flags;
    struct timespec t0;
    for (int round = 0; round < 3; round++) {
        clock_gettime(CLOCK_MONOTONIC, &t0);
        /* loop: the frame whose `previous` closes it is no live frame; its callee stays */
        int n = pystack_read(ps, FAKE_TID, fr, 1024, &flags);
        assert_int_equal(n, 1);
        assert_true(flags & PYSTACK_BROKEN);
        assert_string_equal(prof.frames[fr[0].frame].name, "loopy");
        assert_false(fr[0].entry);

        n = pystack_read(ps, FAKE_TID + 1, fr, 1024, &flags); /* unmapped */
        assert_int_equal(n, 0);
        assert_true(flags & PYSTACK_BROKEN);

        n = pystack_read(ps, FAKE_TID + 2, fr, 1024, &flags); /* long chain: budget */
        assert_true(n > 0 && n <= 1024);
        assert_true(flags & (PYSTACK_BROKEN | PYSTACK_TRUNCATED));

        n = pystack_read(ps, FAKE_TID + 3, fr, 1024, &flags); /* absurd sizes */
        assert_int_equal(n, 1);
        assert_true(strlen(prof.frames[fr[0].frame].name) <= 4 * 1024);

        n = pystack_read(ps, FAKE_TID + 4, fr, 1024, &flags); /* not code */
        assert_int_equal(n, 1);
        assert_string_equal(prof.frames[fr[0].frame].name, "<unreadable>");

        n = pystack_read(ps, FAKE_TID + 5, fr, 1024, &flags); /* wrapping address: goes with it */
        assert_int_equal(n, 0);
        assert_true(flags & PYSTACK_BROKEN);
        double ms = ms_since(&t0);
        print_message("forged round %d: %.2f ms\n", round, ms);
        assert_true(ms < 500);
    }
    /* The code object changes under the same address: the cache notices. */
    uint64_t renamed = B + 4096 + 1280;
    forge_str(pid, L, renamed, 7, ascii, "renamed");
    w64(pid, code + L->co_qualname, renamed);
    assert_int_equal(pystack_read(ps, FAKE_TID, fr, 1024, &flags), 1);
    assert_string_equal(prof.frames[fr[0].frame].name, "renamed");
    pystack_get_stats(ps, &st);
    assert_int_equal(st.code_stale, 1);
    assert_true(st.loops >= 3 && st.budget_exhausted >= 1 && st.bad_code >= 3 && st.errors > 6);
    pystack_stats(ps, stats_file(stderr));

    /* The object freed: pymalloc writes its free list's link (an address, or NULL) over the
     * reference count and leaves the header, names and all, which soon point to other objects'
     * strings: a remote read that finds it so names no frame after it. Allocated again (a count
     * of 1): named. */
    const uint64_t links[] = {B + 8192 + 2048, 0};
    for (int i = 0; i < 2; i++) {
        w64(pid, code + L->ob_type - 8, links[i]);
        assert_int_equal(pystack_read(ps, FAKE_TID, fr, 1024, &flags), 1);
        assert_string_equal(prof.frames[fr[0].frame].name, "<unreadable>");
        w64(pid, code + L->ob_type - 8, 1);
        assert_int_equal(pystack_read(ps, FAKE_TID, fr, 1024, &flags), 1);
        assert_string_equal(prof.frames[fr[0].frame].name, "renamed");
    }

    /* A frame captured in the kernel names the object it ran, not the one at its address now:
     * once filled, an (address, ident) entry is read no more; another object at the address (a
     * new qualname) makes the old ident's frame "<freed code>", and the new ident gets the new
     * name. */
    struct pystack_raw kr = {.code = code, .instr = code + L->co_code_adaptive};
    struct pystack_frame kf[2];
    kr.ident = code_ident(pid, rt, code);
    assert_int_equal(pystack_symbolize(ps, &kr, 1, false, kf, 2, NULL), 1);
    assert_string_equal(prof.frames[kf[0].frame].name, "renamed");
    uint64_t calls = pystack_remote_stats(ps)->calls;
    bool final = false;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(pystack_symbolize(ps, &kr, 1, false, kf, 2, &final), 1);
        assert_string_equal(prof.frames[kf[0].frame].name, "renamed");
        assert_true(final); /* named for good: the collector may remember it */
    }
    assert_int_equal(pystack_remote_stats(ps)->calls, calls);
    w64(pid, code + L->co_qualname, good_str);
    w64(pid, code + L->co_linetable, huge_bytes);
    struct pystack_raw knew = kr;
    knew.ident = code_ident(pid, rt, code);
    assert_true(knew.ident != kr.ident);
    assert_int_equal(pystack_symbolize(ps, &knew, 1, false, kf, 2, NULL), 1);
    assert_string_equal(prof.frames[kf[0].frame].name, "loopy");
    kr.code = code;
    struct pystack_raw both[2] = {kr, knew};
    /* Entries are per (address, ident): the old one still names what ran; an ident never seen
     * whose header no longer folds to it is freed code. */
    assert_int_equal(pystack_symbolize(ps, both, 2, false, kf, 2, NULL), 2);
    assert_string_equal(prof.frames[kf[0].frame].name, "renamed");
    assert_string_equal(prof.frames[kf[1].frame].name, "loopy");
    struct pystack_raw ghost = kr;
    ghost.ident ^= 0x5555;
    assert_int_equal(pystack_symbolize(ps, &ghost, 1, false, kf, 2, &final), 1);
    assert_string_equal(prof.frames[kf[0].frame].name, PYSTACK_FREED);
    assert_false(final); /* not remembered: the same chain is not named so for good */
    assert_int_equal(pystack_symbolize(ps, both, 2, false, kf, 1, &final), 1);
    assert_false(final); /* cut by max */
    pystack_get_stats(ps, &st);
    assert_int_equal(st.code_freed, 1);

    /* Free-threaded builds (3.14+): a thread that is not the first to run a code object runs its
     * own copy of the bytecode, listed in co_tlbc's _PyCodeArray {size; entries[]}. The layout is
     * this interpreter's with co_tlbc set where a free-threaded build keeps it (the word before
     * co_code_adaptive); the code object has 2 code units at lines 8 and 10. A frame in the
     * copy gets the line of the same offset in co_code_adaptive; with co_tlbc unset it would not. */
    struct pyrt_layout *FL = (struct pyrt_layout *)L;
    const uint64_t ft_code = B + 8192 + 1536, ft_table = B + 4096 + 1536, arr = B + 12288, copy = B + 12800;
    const uint8_t lt[] = {0x80 | 11 << 3, 0, 0, 0x80 | 12 << 3, 0, 0}; /* line +1, then +2 */
    w64(pid, ft_table + L->var_ob_size, sizeof(lt));
    wmem(pid, ft_table + L->bytes_ob_sval, lt, sizeof(lt));
    forge_code(pid, rt, ft_code, good_str, good_str, ft_table, 7);
    w64(pid, ft_code + L->var_ob_size, 2);
    w64(pid, ft_code + L->co_code_adaptive - 8, arr);
    w64(pid, arr, 2);
    w64(pid, arr + 8, ft_code + L->co_code_adaptive);
    w64(pid, arr + 16, copy);
    FL->co_tlbc = L->co_code_adaptive - 8;
    struct pystack_raw tl[3] = {
        {.code = ft_code, .instr = ft_code + L->co_code_adaptive + 2},
        {.code = ft_code, .instr = copy + 2},
        {.code = ft_code, .instr = copy},
    };
    struct pystack_frame tf[3];
    for (int i = 0; i < 3; i++) {
        tl[i].ident = code_ident(pid, rt, ft_code);
        assert_int_equal(pystack_symbolize(ps, &tl[i], 1, false, &tf[i], 1, NULL), 1);
    }
    assert_string_equal(prof.frames[tf[1].frame].name, "loopy");
    assert_int_equal(tf[1].frame, tf[0].frame);
    assert_true(prof.frames[tf[2].frame].line != prof.frames[tf[1].frame].line);
    FL->co_tlbc = 0; /* the same pointer read as an offset into co_code_adaptive: past its end */
    assert_int_equal(pystack_symbolize(ps, &tl[1], 1, false, &tf[1], 1, NULL), 1);
    assert_true(tf[1].frame != tf[0].frame);

    /* The real thread still reads fine, and the target still runs. */
    w64(pid, last + L->ts_next, 0);
    assert_true(pystack_read(ps, t->pid, fr, 1024, &flags) > 0);
    assert_int_equal(kill(t->pid, 0), 0);
    pystack_close(ps);
    profile_free(&prof);
    stop(t);
}

/* Threads created and destroyed without end while every task of the process is read. */
static void churn(void **state)
{
    if (!have(state))
        return;
    struct target *t = spawn(*state, "churn", NULL, 0);
    struct profile prof;
    struct pystack *ps = open_reader(t->pid, &prof, 0, 0);
    static struct pystack_frame fr[1024];
    unsigned reads = 0, ok = 0, gone = 0, seen_short = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
    while (ms_since(&t0) < 1500) {
        DIR *d = opendir(path);
        assert_non_null(d);
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.')
                continue;
            unsigned flags;
            int n = pystack_read(ps, atoi(e->d_name), fr, 1024, &flags);
            reads++;
            if (n == -ESRCH) {
                gone++;
                continue;
            }
            assert_true(n >= 0);
            ok++;
            for (int i = 0; i < n; i++) {
                const struct frame *f = &prof.frames[fr[i].frame];
                assert_true(f->name[0] != 0);
                seen_short += strstr(f->name, "short_lived") != NULL;
            }
        }
        closedir(d);
    }
    struct pystack_stats st;
    pystack_get_stats(ps, &st);
    print_message("%u reads: %u stacks, %u without thread state, %u in short_lived; errors %lu, "
                  "refreshes %lu (%lu deferred)\n",
                  reads, ok, gone, seen_short, (unsigned long)st.errors, (unsigned long)st.l2_refreshes,
                  (unsigned long)st.l2_refreshes_deferred);
    assert_true(ok > 100 && seen_short > 0);
    assert_true(st.errors * 20 < ok); /* a stale read now and then, not a broken reader */
    assert_int_equal(kill(t->pid, 0), 0);
    pystack_close(ps);
    profile_free(&prof);
    stop(t);
}

/* Names of the threads from names[from..to) of t, read as the collector reads them. */
static void check_names(struct pystack *ps, const struct target *t, int from, int to)
{
    for (int k = from; k < to; k++) {
        char out[48];
        uint64_t ts, ident;
        assert_int_equal(pystack_thread_state(ps, t->names[k].tid, &ts, &ident), 0);
        int rc = pythreads_name(pystack_runtime(ps), t->pid, ts, ident, monotime_ns(), pystack_threads(ps),
                                out, sizeof(out));
        if (rc)
            print_error("thread %d (%s): %d\n", t->names[k].tid, t->names[k].name, rc);
        assert_int_equal(rc, 0);
        assert_string_equal(out, t->names[k].name);
    }
}

struct ids_seen {
    const struct target *t;
    int matched;
};

static int check_thread_id(void *arg, pid_t tid, uint64_t tstate, uint64_t pthread)
{
    struct ids_seen *s = arg;

    for (int k = 0; k < s->t->nnames; k++)
        if (s->t->names[k].tid == tid) {
            assert_int_equal(pthread, s->t->names[k].ident);
            s->matched++;
        }
    return 0;
}

/* Each thread's thread_id as the reader lists it is the threading.get_ident() the thread printed
 * (its pthread_self(): the collector bounds the thread's stack copies with the mapping holding
 * it). */
static void check_thread_ids(struct pystack *ps, const struct target *t)
{
    struct ids_seen s = {t, 0};

    assert_int_equal(pystack_each_thread(ps, check_thread_id, &s), 0);
    assert_int_equal(s.matched, t->nnames);
}

/* threading.Thread names (3.11-3.13; 3.14+ name the OS thread themselves): six threads, then six
 * others that mostly took the ended ones' idents, named right by the same reader (its names from
 * the first pass are not lent to the new threads). */
static void names(void **state)
{
    if (!have(state))
        return;
    struct target *t = spawn(*state, "names", NULL, 0);
    struct profile prof;
    struct pystack *ps = open_reader(t->pid, &prof, 0, 0);
    char out[48];
    uint64_t ts;
    assert_int_equal(t->nnames, 6);
    check_thread_ids(ps, t);
    assert_int_equal(pystack_thread_state(ps, t->names[0].tid, &ts, NULL), 0);
    if (pythreads_name(pystack_runtime(ps), t->pid, ts, 0, monotime_ns(), pystack_threads(ps), out,
                       sizeof(out)) == -ENOTSUP) {
        /* what the reader says of the versions that name their OS threads */
        assert_true(pystack_runtime(ps)->L.minor >= 14 || pystack_runtime(ps)->L.free_threaded);
        pystack_close(ps);
        profile_free(&prof);
        stop(t);
        return;
    }
    check_names(ps, t, 0, 6);
    /* the second six: their READY comes after their NAME lines */
    assert_int_equal(kill(t->pid, SIGUSR1), 0);
    wait_ready(t, 0);
    assert_int_equal(t->nnames, 12);
    int reused = 0;
    for (int k = 6; k < 12; k++)
        for (int j = 0; j < 6; j++)
            reused += t->names[k].ident == t->names[j].ident;
    print_message("%d of 6 new threads have an ended one's ident\n", reused);
    check_names(ps, t, 6, 12);
    pystack_close(ps);
    profile_free(&prof);
    stop(t);
}

/* 3.10 is refused with a message naming the reason. */
static void refuse_old(void **state)
{
    (void)state;
    const char *py = "/root/.pyenv/versions/3.10.13/bin/python3.10";
    if (access(py, X_OK) != 0) {
        skip();
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        execl(py, py, "-c", "import time; time.sleep(30)", (char *)NULL);
        _exit(127);
    }
    usleep(300000);
    struct profile prof;
    struct pystack *ps = NULL;
    char err[512] = "";
    profile_init(&prof);
    assert_int_equal(pystack_open(&ps, pid, &prof, NULL, err, sizeof(err)), -ENOTSUP);
    assert_non_null(strstr(err, "3.11"));
    print_message("%s\n", err);
    profile_free(&prof);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Not a Python process at all. */
static void refuse_nonpython(void **state)
{
    (void)state;
    struct profile prof;
    struct pystack *ps = NULL;
    char err[512] = "";
    profile_init(&prof);
    assert_int_equal(pystack_open(&ps, getpid(), &prof, NULL, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "no Python runtime"));
    profile_free(&prof);
}

int main(void)
{
    static struct CMUnitTest tests[6 * NPY + 2];
    static char names_[6 * NPY][128];
    static const struct {
        const char *what;
        void (*fn)(void **);
    } kinds[] = {
        {"chain main>outer>middle>inner, steady = 1 call", chain},
        {"4 threads", threads},
        {"recursion 1000, cap 512 truncates", deep},
        {"forged memory ends, errors counted", forged},
        {"thread churn", churn},
        {"thread ids and names, idents reused", names},
    };
    size_t n = 0;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        for (size_t i = 0; i < NPY; i++) {
            snprintf(names_[n], sizeof(names_[n]), "%s: %s", kinds[k].what, pythons[i]);
            tests[n] = (struct CMUnitTest){names_[n], kinds[k].fn, NULL, teardown, (void *)pythons[i]};
            n++;
        }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(refuse_old);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(refuse_nonpython);
    return _cmocka_run_group_tests("pystack", tests, n, NULL, NULL);
}
